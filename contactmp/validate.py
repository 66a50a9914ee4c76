"""Input validation of the problem data every reader and solver shares: LCP(q, M) and fc3d(W, q, mu).

Pure checks (shapes, finiteness, signs), raising :class:`~contactmp.errors.InputError` naming the
field; they live in the core so that :mod:`contactmp.io` can check what it reads without
importing a solver. ``contactmp.solvers.lcp.problem.validate_lcp`` and
``contactmp.solvers.fc3d.problem.validate_fc3d`` are the same functions.
"""
from __future__ import annotations

from typing import Any

import numba
import numpy as np

from contactmp.errors import InputError

__all__ = ["validate_lcp", "validate_fc3d", "validate_start", "float_vector"]


def validate_lcp(M: Any, q: Any) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(M, q)`` as contiguous float64 arrays, or raise :class:`InputError` naming the field.

    ``M`` must be a finite square ``n x n`` matrix and ``q`` a finite vector of length ``n``.
    """
    if (
        type(M) is np.ndarray and type(q) is np.ndarray and M.dtype == np.float64 and q.dtype == np.float64
        and M.ndim == 2 and q.ndim == 1 and M.shape[0] == M.shape[1] == q.shape[0] > 0
        and M.flags.c_contiguous and q.flags.c_contiguous
    ):
        bad = _first_nonfinite(M, q)
        if bad == 1:
            raise InputError("M", "contains NaN or inf")
        if bad == 2:
            raise InputError("q", "contains NaN or inf")
        return M, q
    try:
        M = np.ascontiguousarray(M, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError("M", f"cannot be read as a float matrix ({exc})") from None
    try:
        q = np.ascontiguousarray(q, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError("q", f"cannot be read as a float vector ({exc})") from None
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise InputError("M", f"must be a square 2-D matrix, got shape {M.shape}")
    if q.ndim == 2 and 1 in q.shape:
        q = q.ravel()
    if q.ndim != 1:
        raise InputError("q", f"must be a 1-D vector, got shape {q.shape}")
    if q.shape[0] != M.shape[0]:
        raise InputError("q", f"has length {q.shape[0]} but M is {M.shape[0]} x {M.shape[1]}")
    if M.shape[0] == 0:
        raise InputError("M", "is empty (n = 0)")
    if not np.isfinite(M).all():
        raise InputError("M", "contains NaN or inf")
    if not np.isfinite(q).all():
        raise InputError("q", "contains NaN or inf")
    return M, q


@numba.njit(cache=True)
def _first_nonfinite(M: np.ndarray, q: np.ndarray) -> int:
    """0 if every entry is finite, 1 if M has a NaN/inf, 2 if q has one (one pass, no temporaries)."""
    n = q.shape[0]
    for i in range(n):
        for j in range(n):
            if not np.isfinite(M[i, j]):
                return 1
    for i in range(n):
        if not np.isfinite(q[i]):
            return 2
    return 0


def validate_fc3d(W: Any, q: Any, mu: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(W, q, mu)`` as float64 arrays or raise :class:`InputError` naming the field.

    ``W`` is ``3 nc x 3 nc``, ``q`` has ``3 nc`` entries and ``mu`` has ``nc`` (a scalar is
    broadcast), all finite, ``mu >= 0``.
    """
    try:
        W = np.ascontiguousarray(W, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError("W", f"cannot be read as a float matrix ({exc})") from None
    q = _fc3d_q(q)  # read before W's shape is judged, as always: a bad q is named first
    q, mu_arr = fc3d_q_mu(q, mu, fc3d_size(W))
    bad = first_bad_entry(W, q, mu_arr)
    if bad == 1:
        raise InputError("W", "contains NaN or inf")
    if bad == 2:
        raise InputError("q", "contains NaN or inf")
    if bad == 3:
        raise InputError("mu", "friction coefficients must be finite and >= 0")
    return W, q, mu_arr


def fc3d_size(W: Any) -> int:
    """``m = 3 nc`` of an fc3d matrix ``W`` (dense or scipy.sparse: anything with ``ndim`` and
    ``shape``), or :class:`InputError` naming ``W`` when it is not square with a positive multiple
    of 3 rows."""
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise InputError("W", f"must be a square matrix, got shape {W.shape}")
    m = W.shape[0]
    if m == 0 or m % 3:
        raise InputError("W", f"must be 3 nc x 3 nc (nc >= 1 contacts), got {m} x {m}")
    return m


def _fc3d_q(q: Any) -> np.ndarray:
    """``q`` as a float64 vector, or :class:`InputError` naming ``q``."""
    try:
        return np.ascontiguousarray(q, dtype=np.float64).ravel()
    except (TypeError, ValueError) as exc:
        raise InputError("q", f"cannot be read as a float vector ({exc})") from None


def fc3d_q_mu(q: Any, mu: Any, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``q`` (``m = 3 nc`` entries) and ``mu`` (``nc``, a scalar broadcast) of an fc3d problem as
    float64 vectors, or :class:`InputError` naming the field (finiteness is the caller's check)."""
    q = _fc3d_q(q)
    if q.shape[0] != m:
        raise InputError("q", f"has length {q.shape[0]} but W is {m} x {m}")
    nc = m // 3
    try:
        mu_arr = np.asarray(mu, dtype=np.float64)
        mu_arr = np.ascontiguousarray(np.broadcast_to(mu_arr, (nc,)) if mu_arr.ndim == 0 else mu_arr.ravel())
    except (TypeError, ValueError) as exc:
        raise InputError("mu", f"cannot be read as friction coefficients ({exc})") from None
    if mu_arr.shape[0] != nc:
        raise InputError("mu", f"has {mu_arr.shape[0]} entries but W has {nc} contacts")
    return q, mu_arr


@numba.njit(cache=True)
def first_bad_entry(W: np.ndarray, q: np.ndarray, mu: np.ndarray) -> int:
    """0 when W and q are finite and mu finite and >= 0; else 1 (W), 2 (q) or 3 (mu)."""
    for i in range(W.shape[0]):
        for k in range(W.shape[1]):
            if not np.isfinite(W[i, k]):
                return 1
    for i in range(q.shape[0]):
        if not np.isfinite(q[i]):
            return 2
    for j in range(mu.shape[0]):
        if not (np.isfinite(mu[j]) and mu[j] >= 0.0):
            return 3
    return 0


def validate_start(x0: Any, n: int, field: str) -> np.ndarray:
    """A solver's starting point ``x0`` as a fresh float64 vector of length ``n`` (zeros when
    ``None``), or :class:`InputError` naming ``field`` (unreadable, wrong length, NaN or inf)."""
    if x0 is None:
        return np.zeros(n)
    try:
        x = np.array(x0, dtype=np.float64).ravel()
    except (TypeError, ValueError) as exc:
        raise InputError(field, f"cannot be read as a float vector ({exc})") from None
    if x.shape != (n,):
        raise InputError(field, f"has length {x.size} but the problem has n = {n} unknowns")
    if not np.isfinite(x).all():
        raise InputError(field, "contains NaN or inf")
    return x


def float_vector(v: Any, n: int, fieldname: str, *, allow_inf: bool = False,
                 nonnegative: bool = False) -> np.ndarray:
    """``v`` (a number, an ``n``-vector or an ``n x 1`` / ``1 x n`` matrix) as a fresh float vector of
    length ``n``, or :class:`InputError` naming ``fieldname`` (unreadable, a bool, wrong shape, NaN,
    inf unless ``allow_inf``, a negative entry if ``nonnegative``)."""
    if isinstance(v, bool):
        raise InputError(fieldname, f"must be a number or {n} numbers, got {v!r}")
    try:
        arr = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(fieldname, f"cannot be read as float numbers ({exc})") from None
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    elif arr.ndim != 1 or arr.shape[0] != n:
        raise InputError(fieldname, f"must be a scalar or a vector of length {n}, got shape {arr.shape}")
    else:
        arr = arr.copy()
    if np.isnan(arr).any():
        raise InputError(fieldname, "contains NaN")
    if not allow_inf and not np.isfinite(arr).all():
        raise InputError(fieldname, "contains inf")
    if nonnegative and (arr < 0).any():
        raise InputError(fieldname, f"must be >= 0, got {v!r}")
    return arr
