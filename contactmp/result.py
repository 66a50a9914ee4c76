"""The outcome of a solve: a status that means the same for every solver, and verified residuals."""
from __future__ import annotations

import contextlib
import enum
import gc
import math
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Any, Iterator, overload

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
    #: a time step whose program was solved (verified residual) but whose physics verdict failed: a
    #: body inside the ground, force at a distance, energy from nowhere
    #: (:func:`contactmp.transcriptions.physics_check.judge_step`; ``extras["physics"]`` says which)
    UNPHYSICAL = "unphysical"

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
        None for the result of a time-stepping step (``TimeStepping.step``/``simulate``: the step's
        Program is cached and reused with the next state, so it would not describe this step;
        ``TimeStepping.step_program(q, v, u, t)`` builds it) and for solvers given matrices.
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


class BatchResult(Sequence[Result]):
    """The answers of a batch of equal-size problems: arrays over the batch, and one :class:`Result`
    per problem, built when it is first read (``batch[b]``, iteration).

    The arrays are what a batch of thousands of tiny problems is read through; building a Result
    per problem in Python costs a few microseconds each, more than the compiled solve of a small
    problem, so none is built unless asked for. ``batch[b]`` equals what the unbatched solve returns
    for problem ``b`` (every field), and is the same object on every read.

    Attributes
    ----------
    solver : str
        What solved the batch (``"lemke"``; ``"auto"`` for fc3d: the default chain, whose quick
        NSGS pass runs batched); ``batch[b].solver`` names the solver that answered problem ``b``.
    x : numpy.ndarray
        ``(B, n)``: row ``b`` equals ``batch[b].x``.
    residual : numpy.ndarray
        ``(B,)``: each problem's independently checked residual (``batch[b].residual``).
    iterations : numpy.ndarray
        ``(B,)`` integers (``batch[b].iterations``).
    success : numpy.ndarray
        ``(B,)`` booleans: ``batch[b].status is Status.SOLVED``, set only after the residual check.
    time_s : float
        Wall-clock time of the whole batch (validation, solves, checks and fallbacks).
    """

    def __init__(self, solver: str, x: np.ndarray, residual: np.ndarray, iterations: np.ndarray,
                 success: np.ndarray, make: Callable[[list[int]], list[Result]], alone: dict[int, Result],
                 time_s: float) -> None:
        """``make(bs)`` builds the Results of the problems ``bs`` the batch solved (a list: reading
        the whole batch builds them in one pass); ``alone`` holds the Results of the problems solved
        on their own (their rows of the arrays are overwritten from them)."""
        self.solver, self.x, self.residual, self.iterations, self.success = solver, x, residual, iterations, success
        self.time_s = time_s
        self._make = make
        self._results: list[Result | None] = [None] * x.shape[0]
        for b, r in alone.items():
            self._results[b] = r
            x[b] = r.x
            residual[b], iterations[b], success[b] = r.residual, r.iterations, r.success

    def __len__(self) -> int:
        return len(self._results)

    @overload
    def __getitem__(self, b: int) -> Result: ...

    @overload
    def __getitem__(self, b: slice) -> list[Result]: ...

    def __getitem__(self, b: int | slice) -> Result | list[Result]:
        if isinstance(b, slice):
            return [self[i] for i in range(*b.indices(len(self)))]
        r = self._results[b]
        if r is None:
            b = range(len(self))[b]
            r = self._results[b] = self._make([b])[0]
        return r

    def __iter__(self) -> Iterator[Result]:
        missing = [b for b, r in enumerate(self._results) if r is None]
        if missing:  # every Result not read yet, in one pass
            with gc_paused():
                for b, r in zip(missing, self._make(missing)):
                    self._results[b] = r
        return iter(self._results[:])  # type: ignore[arg-type]

    @property
    def statuses(self) -> list[Status]:
        """Every problem's status (``batch[b].status``)."""
        return [Status.SOLVED if ok else self[b].status for b, ok in enumerate(self.success.tolist())]

    def __repr__(self) -> str:
        return (f"BatchResult(solver={self.solver!r}, problems={len(self)}, solved={int(self.success.sum())}, "
                f"time_s={self.time_s:.3g})")
