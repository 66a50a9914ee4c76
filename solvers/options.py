"""What every solver of every problem class shares: the typed options' base
(:class:`SolverOptions`, strict keys with a 'did you mean' hint), the checks of option values, and
the rule that the independent check, not the solver's claim, decides a result's status
(:func:`judge_claim`)."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from contactmp.errors import OptionError, did_you_mean
from contactmp.progress import check_time_limit
from contactmp.result import Status


def judge_claim(
    claimed: Status, passed: bool, message: str, why_failed: str, residual: float
) -> tuple[Status, str]:
    """The status the independent check allows: a claimed ``SOLVED`` that failed the check becomes
    ``NOT_SOLVED`` (``why_failed`` is appended to the message); any other claim whose iterate passed
    becomes ``SOLVED`` (the check, not the claim, decides)."""
    if claimed is Status.SOLVED and not passed:
        note = f"solver claimed a solution but {why_failed}"
        return Status.NOT_SOLVED, (message + "; " if message else "") + note
    if claimed is not Status.SOLVED and passed:
        return Status.SOLVED, (message + "; " if message else "") + f"iterate verified (residual {residual:.3e})"
    return claimed, message


@dataclass
class SolverOptions:
    """Base of every solver's typed options. Unknown keys are rejected with a 'did you mean' hint.

    Every solver takes ``tol`` and ``time_limit``: wall-clock seconds for the whole solve (``None``
    or ``inf``: no limit; checked by :func:`contactmp.progress.check_time_limit`). When the limit
    is reached the solver returns the iterate with the smallest independent residual it saw at
    its checkpoints, with status ``time_limit`` (``solved`` only if that iterate passes the check).
    """

    tol: float = 1e-8
    time_limit: float | None = None

    @classmethod
    def build(cls, options: "SolverOptions | None" = None, **overrides: Any) -> "SolverOptions":
        """Return options of this class from an instance and/or keyword overrides (strict keys)."""
        names = [f.name for f in fields(cls)]
        for key in overrides:
            if key not in names:
                hint = did_you_mean(key, names)
                raise OptionError(
                    f"unknown option '{key}' for {cls.__name__} (known: {', '.join(names)}){hint}"
                )
        if options is None:
            options = cls()
        elif not isinstance(options, cls):
            raise OptionError(f"options must be {cls.__name__}, got {type(options).__name__}")
        values = {f.name: getattr(options, f.name) for f in fields(cls)}
        values.update(overrides)
        out = cls(**values)
        out.check()
        return out

    def check(self) -> None:
        """Reject ill-typed values (subclasses extend this)."""
        check_real("tol", self.tol, 0.0)
        check_time_limit(self.time_limit)


def check_int(name: str, v: Any, low: int = 1, *, none_ok: bool = False) -> None:
    """Reject option ``name`` unless ``v`` is an int (not a bool) ``>= low`` (or None if ``none_ok``)."""
    if none_ok and v is None:
        return
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise OptionError(f"{name} must be an int >= {low}{' or None' if none_ok else ''}, got {v!r}")


def check_real(name: str, v: Any, lo: float = -np.inf, hi: float = np.inf, *, lo_open: bool = True,
               hi_open: bool = True, none_ok: bool = False) -> None:
    """Reject option ``name`` unless ``v`` is a finite real number (not a bool) in the interval from
    ``lo`` to ``hi`` (open or closed at each end), or None if ``none_ok``."""
    if none_ok and v is None:
        return
    ok = not isinstance(v, bool) and isinstance(v, (int, float)) and -np.inf < v < np.inf
    if not ok or (v <= lo if lo_open else v < lo) or (v >= hi if hi_open else v > hi):
        interval = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        raise OptionError(f"{name} must be a finite number in {interval}{' or None' if none_ok else ''}, got {v!r}")


def check_bool(name: str, v: Any) -> None:
    """Reject option ``name`` unless ``v`` is True or False."""
    if not isinstance(v, (bool, np.bool_)):
        raise OptionError(f"{name} must be True or False, got {v!r}")
