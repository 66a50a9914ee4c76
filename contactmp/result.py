"""The outcome of a solve: a status that means the same for every solver, and verified residuals."""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


def jsonable(v: Any) -> Any:
    """``v`` with numpy types, enums and paths turned into JSON types; non-finite floats as strings."""
    if isinstance(v, dict):
        return {str(k): jsonable(e) for k, e in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(e) for e in v]
    if isinstance(v, np.ndarray):
        return jsonable(v.tolist())
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return f if math.isfinite(f) else str(f)
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, enum.Enum):
        return v.value
    return v


class Status(str, enum.Enum):
    """What happened in a solve. ``SOLVED`` is only set after an independent residual check."""

    SOLVED = "solved"
    MAX_ITER = "max_iter"
    RAY_TERMINATION = "ray_termination"
    INFEASIBLE = "infeasible"
    TIME_LIMIT = "time_limit"
    NUMERICAL_ERROR = "numerical_error"
    NOT_SOLVED = "not_solved"  # the backend stopped without a claim we could verify

    def __str__(self) -> str:
        return self.value


@dataclass
class Result:
    """A solver's answer.

    Attributes
    ----------
    status : Status
        ``SOLVED`` only if ``residual <= tol`` was checked here, independently of the solver.
    x : numpy.ndarray
        The solution vector (for an LCP, ``z``; ``w = M z + q`` is in ``extras["w"]``).
    solver : str
        Registry name of the solver that produced ``x``.
    residual : float
        The independent residual (LCP: ``||min(z, M z + q)||_inf``).
    tol : float
        The tolerance ``residual`` was judged against.
    iterations : int
        Pivots (Lemke), Newton or interior-point iterations, sweeps (PGS), summed over restarts.
    time_s : float
        Wall-clock time of the solve, validation and residual check included.
    message : str
        Human-readable explanation, including any backend status kept verbatim.
    extras : dict
        Solver-specific data (``starts`` for Lemke, ``backend_status`` for IPOPT, ...).
    """

    status: Status
    x: np.ndarray
    solver: str
    residual: float = float("inf")
    tol: float = 1e-8
    iterations: int = 0
    time_s: float = 0.0
    message: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        """True exactly when ``status`` is ``SOLVED``."""
        return self.status is Status.SOLVED

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``x`` as a list; non-finite floats as strings)."""

        return {
            "status": self.status.value,
            "solver": self.solver,
            "residual": jsonable(self.residual),
            "tol": self.tol,
            "iterations": int(self.iterations),
            "time_s": float(self.time_s),
            "message": self.message,
            "x": jsonable(np.asarray(self.x, dtype=float)),
            "extras": jsonable(self.extras),
        }
