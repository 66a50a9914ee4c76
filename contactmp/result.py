"""The outcome of a solve: a status that means the same for every solver, and verified residuals."""
from __future__ import annotations

import contextlib
import enum
import gc
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

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


_set = object.__setattr__


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cycle collector paused while a batch builds its Results (thousands of small acyclic
    objects: the collector's passes over them would cost more than the work, and made the time per
    problem of a batch jump between 3 and 35 us). Restored on exit, also on an exception."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@dataclass(frozen=True, init=False, eq=False)
class Result:
    """The answer of every solve in contactmp (LCP, fc3d, MCP, QP, NLP/MPCC, one contact step).

    Frozen: derive a changed copy with :meth:`replace`. ``extras`` is the one open dict (its
    contents may be filled by the solver that made the result).

    Attributes
    ----------
    status : Status
        ``SOLVED`` only if ``residual <= tol`` was checked here, independently of the solver.
    x : numpy.ndarray
        The solution vector (for an LCP, ``z``; ``w = M z + q`` is in ``extras["w"]``; for a
        Program, its variable vector: read a handle with :meth:`value`).
    solver : str
        Registry name of the solver that produced ``x`` (``backend/strategy`` for a Program).
    residual : float
        The independent residual judged against ``tol`` (LCP: ``||min(z, M z + q)||_inf``).
    tol : float
        The tolerance ``residual`` was judged against.
    iterations : int
        Pivots (Lemke), Newton or interior-point iterations, sweeps (PGS), summed over restarts.
    time_s : float
        Wall-clock time of the solve, validation and residual check included.
    message : str
        Human-readable explanation, including any backend status kept verbatim.
    residuals : dict
        Every independently checked residual by name (a Program: ``bound``, ``constraint``,
        ``comp_min``, ``comp_prod``, ...); ``residual`` is the one the verdict used.
    objective : float
        The objective value at ``x`` (NaN when the problem has none).
    extras : dict
        Solver-specific data (``starts`` for Lemke, ``backend_status`` for IPOPT, ...).
    program : the solved :class:`~contactmp.program.Program`, if any (not compared, not printed).
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
    residuals: dict[str, float] = field(default_factory=dict)
    objective: float = float("nan")
    program: Any = field(default=None, repr=False)

    def __init__(self, status: Status, x: np.ndarray, solver: str, residual: float = float("inf"),
                 tol: float = 1e-8, iterations: int = 0, time_s: float = 0.0, message: str = "",
                 extras: dict[str, Any] | None = None, residuals: dict[str, float] | None = None,
                 objective: float = float("nan"), program: Any = None) -> None:
        # item stores into the instance dict instead of twelve object.__setattr__ calls (what the
        # generated frozen __init__ does): a Result is made on every solve, and a 2x2 LCP takes about
        # 3 us in all (measured: 1.4 us here against 2.2 us for one object.__setattr__ of a new dict)
        d = self.__dict__
        d["status"] = status
        d["x"] = x
        d["solver"] = solver
        d["residual"] = residual
        d["tol"] = tol
        d["iterations"] = iterations
        d["time_s"] = time_s
        d["message"] = message
        d["residuals"] = {} if residuals is None else residuals
        d["objective"] = objective
        d["extras"] = {} if extras is None else extras
        d["program"] = program

    @property
    def success(self) -> bool:
        """True exactly when ``status`` is ``SOLVED``."""
        return self.status is Status.SOLVED

    @property
    def backend_status(self) -> str:
        """The backend's own final status text, verbatim (``extras["backend_status"]``; "" if none)."""
        return str(self.extras.get("backend_status", ""))

    def replace(self, **changes: Any) -> "Result":
        """A copy with ``changes`` applied (as ``dataclasses.replace``, in one dict copy: solvers call
        it on their hot path)."""
        d = self.__dict__.copy()
        d.update(changes)
        if len(d) != len(self.__dict__):
            raise TypeError(f"Result has no field(s) {sorted(changes.keys() - self.__dict__.keys())}")
        new = object.__new__(Result)
        _set(new, "__dict__", d)
        return new

    def value(self, handle: Any) -> np.ndarray:
        """The values of the Program variables ``handle`` in ``x`` (a result of a Program solve)."""
        if self.program is None:
            from contactmp.errors import InputError

            raise InputError("handle", "this result carries no program")
        return self.program.value(handle, self.x)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``x`` as a list; non-finite floats as strings; no program)."""
        return {
            "status": self.status.value,
            "solver": self.solver,
            "residual": jsonable(self.residual),
            "tol": self.tol,
            "iterations": int(self.iterations),
            "time_s": float(self.time_s),
            "message": self.message,
            "residuals": jsonable(self.residuals),
            "objective": jsonable(self.objective),
            "x": jsonable(np.asarray(self.x, dtype=float)),
            "extras": jsonable(self.extras),
        }
