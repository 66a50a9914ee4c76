"""The outcome of a solve: a status that means the same for every solver, and verified residuals."""
from __future__ import annotations

import contextlib
import enum
import gc
import math
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from itertools import repeat
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


#: a pending Result of a batch is built with the next ``FILL_CHUNK - 1`` pending ones of its batch
#: (reading a whole batch in order costs what building every Result in one pass does)
FILL_CHUNK = 64


def _built(bs: list[int]) -> list[Result]:
    raise AssertionError(f"the Results {bs} of this batch are built already")


class _Batch:
    """What the pending Results of one batch are built from (:func:`lazy_results`)."""

    __slots__ = ("make", "rows", "pending")

    def __init__(self, make: Callable[[list[int]], list[Result]], rows: list[Result]) -> None:
        self.make = make
        self.rows = rows                                     # the batch's own list: the user's may change
        self.pending = {id(r): b for b, r in enumerate(rows)}  # pending object -> its problem

    def fill(self, b: int) -> None:
        """Build the Results of problem ``b`` and of the pending problems after it (up to
        ``FILL_CHUNK`` in all) and turn their pending objects into them, in place."""
        bs = [i for i in range(b, min(b + FILL_CHUNK, len(self.rows))) if id(self.rows[i]) in self.pending]
        with gc_paused():
            for i, made in zip(bs, self.make(bs)):
                obj = self.rows[i]
                del self.pending[id(obj)]
                _set(obj, "__dict__", made.__dict__)
                _set(obj, "__class__", Result)
        if not self.pending:  # every Result built: the batch's data is no longer needed
            self.make, self.rows = _built, []


class _PendingResult(Result):
    """A :class:`Result` of a batch not built yet: the first attribute read builds it (and the next
    pending ones of its batch), after which the object is a plain :class:`Result` (its class
    too). Each batch has its own subclass, whose ``_batch`` says what to build from."""

    _batch: _Batch

    def __getattribute__(self, name: str) -> Any:
        batch = type(self)._batch
        b = batch.pending.get(id(self))
        if b is not None:
            batch.fill(b)
        return object.__getattribute__(self, name)

    def __repr__(self) -> str:
        return Result.__repr__(self)  # reads the fields: builds the Result first

    def __reduce_ex__(self, protocol: Any) -> Any:  # copy, deepcopy: of the built Result
        self.status  # noqa: B018 - builds it (its class is Result from here on)
        return self.__reduce_ex__(protocol)


def lazy_results(make: Callable[[list[int]], list[Result]], n: int, alone: dict[int, Result]) -> list[Result]:
    """The ``n`` Results of a batch as a plain list, built when first read: ``make(bs)`` builds the
    Results of the problems ``bs`` (in one pass: a batch read in order builds ``FILL_CHUNK`` at a
    time), ``alone`` holds the Results already made (problems solved on their own).

    A compiled batch solves a tiny problem in less time than Python takes to build its Result
    (about 2 us: a dozen fields, two dicts); an entry of this list is an object with no fields
    until one is read, and is then that Result in place (``isinstance(r, Result)`` always;
    ``type(r) is Result`` once read). Every field equals what the unbatched solve returns."""
    pending_cls = type("Result", (_PendingResult,), {"_batch": None, "__module__": __name__,
                                                     "__qualname__": "Result"})
    with gc_paused():
        rows: list[Result] = list(map(object.__new__, repeat(pending_cls, n)))
        for b, r in alone.items():
            rows[b] = r
        batch = _Batch(make, rows[:])
        for r in alone.values():
            del batch.pending[id(r)]
    pending_cls._batch = batch
    return rows
