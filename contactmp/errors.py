"""Exceptions raised on malformed input.

Solvers never raise on non-convergence (that is a :class:`~contactmp.result.Status`); they raise
these, with a message naming the bad field, when the input itself is wrong.
"""
from __future__ import annotations

from typing import Any, Iterable


class ContactMPError(Exception):
    """Base class of every exception contactmp raises on purpose."""


class InputError(ContactMPError, ValueError):
    """Malformed input: wrong shape, NaN/inf, negative friction, a mass matrix that is not SPD, ...

    ``field`` names the offending argument (for example ``"M"``, ``"q"``, ``"mu"``).
    """

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class OptionError(ContactMPError, KeyError):
    """An unknown or ill-typed solver option (strict, with a 'did you mean' hint)."""

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.message


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """The hint of every unknown-name error: ``"; did you mean 'x'?"`` with the closest name of
    ``known`` (difflib's ratio >= 0.6), or ``""`` when none is close."""
    import difflib

    close = difflib.get_close_matches(str(name), list(known), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


class UnsupportedProgramError(ContactMPError):
    """No solver can take this program; the message says why."""


def check_number(field: str, value: object, *, positive: bool = False, nonnegative: bool = False,
                 allow_inf: bool = False) -> float:
    """``float(value)``, or :class:`InputError` naming ``field`` when it is not a number, is NaN, is
    infinite (unless ``allow_inf``), or is not ``> 0`` (``positive``) / ``>= 0`` (``nonnegative``)."""
    import math

    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(field, f"must be a number, got {value!r}") from None
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        raise InputError(field, f"must be finite{' or inf' if allow_inf else ''}, got {value!r}")
    if positive and x <= 0:
        raise InputError(field, f"must be > 0, got {value!r}")
    if nonnegative and x < 0:
        raise InputError(field, f"must be >= 0, got {value!r}")
    return x


#: relative symmetry tolerance of every mass-matrix check: ``max|M - M^T| <= SPD_SYMMETRY_RTOL max|M|``
#: (assembled mass matrices are symmetric to a few ulps of their largest entry; 1e-10 leaves room
#: for products like ``R^T I R`` while catching a transposed or mistyped entry)
SPD_SYMMETRY_RTOL = 1e-10


def check_step(h: object, field: str = "h") -> object:
    """A step length: a positive finite number (returned as float), or a CasADi SX/MX scalar -- a
    symbolic step, which a step's sensitivity by ``h`` builds (checked where it is evaluated).
    :class:`InputError` naming ``field`` otherwise."""
    import math

    import casadi as ca

    if isinstance(h, (ca.SX, ca.MX)):
        if h.numel() != 1:
            raise InputError(field, f"a symbolic step must be a scalar, got shape {h.shape}")
        return h
    if not (isinstance(h, (int, float)) and not isinstance(h, bool) and math.isfinite(h) and h > 0):
        raise InputError(field, f"must be a positive finite step, got {h!r}")
    return float(h)


def check_spd(M: Any, field: str = "M", what: str = "mass matrix") -> Any:  # -> ndarray | None
    """Check that the numeric matrix ``M`` is finite, symmetric (relative to its largest entry, see
    :data:`SPD_SYMMETRY_RTOL`) and positive definite; return its Cholesky factor ``L`` of
    ``(M + M^T) / 2`` (``L L^T``). Anything else raises :class:`InputError` naming ``field``.
    For a CasADi expression nothing is checked here (it is checked where it is evaluated) and
    None is returned. The one mass-matrix
    check of contactmp: every model, formulation and solver calls it."""
    import numpy as np

    if not isinstance(M, np.ndarray):
        return None
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise InputError(field, f"{what} must be a non-empty square matrix, got shape {M.shape}")
    if not np.isfinite(M).all():
        raise InputError(field, f"{what} contains NaN or inf")
    if np.abs(M - M.T).max() > SPD_SYMMETRY_RTOL * np.abs(M).max():
        raise InputError(field, f"{what} is not symmetric")
    try:
        return np.linalg.cholesky(0.5 * (M + M.T))
    except np.linalg.LinAlgError:
        lo = float(np.linalg.eigvalsh(0.5 * (M + M.T)).min())
        raise InputError(field, f"{what} is not positive definite (smallest eigenvalue {lo:.3g})") from None
