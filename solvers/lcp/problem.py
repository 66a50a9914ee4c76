"""The linear complementarity problem LCP(q, M) and what every LCP solver shares.

LCP(q, M): find z >= 0 with w = M z + q >= 0 and z^T w = 0 (Cottle, Pang and Stone; the paper's
LCP(r, M) with r = q). The independent check of any answer is ``||min(z, M z + q)||_inf``.
"""
from __future__ import annotations

import time
from typing import Any

import numba
import numpy as np

from contactmp.result import Result, Status
from contactmp.solvers.options import judge_claim
from contactmp.validate import validate_lcp  # noqa: F401 (re-exported: the solvers import it from here)


@numba.njit(cache=True)
def residual_kernel(M: np.ndarray, q: np.ndarray, z: np.ndarray) -> float:
    """Compiled ``||min(z, M z + q)||_inf`` for use inside other numba loops (NaN gives inf)."""
    n = q.shape[0]
    res = 0.0
    for i in range(n):
        s = q[i]
        for j in range(n):
            s += M[i, j] * z[j]
        v = abs(min(z[i], s))
        if not v <= res:  # also catches NaN
            res = v if v == v else np.inf
    return res


@numba.njit(cache=True)
def w_and_residual_kernel(M: np.ndarray, q: np.ndarray, z: np.ndarray, w: np.ndarray) -> float:
    """w <- M z + q; return ||min(z, w)||_inf (inf if z or w is not finite). One pass, no allocation."""
    n = q.shape[0]
    res = 0.0
    for i in range(n):
        if not np.isfinite(z[i]):
            return np.inf
    for i in range(n):
        s = q[i]
        for j in range(n):
            s += M[i, j] * z[j]
        w[i] = s
        if not np.isfinite(s):
            return np.inf
        m = abs(min(z[i], s))
        if m > res:
            res = m
    return res


def lcp_residual(M: np.ndarray, q: np.ndarray, z: np.ndarray) -> float:
    """The natural-map residual ``||min(z, M z + q)||_inf`` (0 exactly at a solution)."""
    z = np.ascontiguousarray(z, dtype=np.float64)
    if z.shape != q.shape:
        return float("inf")
    M = np.ascontiguousarray(M, dtype=np.float64)
    q = np.ascontiguousarray(q, dtype=np.float64)
    return float(w_and_residual_kernel(M, q, z, np.empty_like(q)))


def rounding_floor(M: np.ndarray, q: np.ndarray, z: np.ndarray, tol: float) -> float:
    """The smallest residual the check can certify at ``z``: ``max_i eps (|M| |z| + |q|)_i``, the
    rounding of one addition at the magnitude of the terms of ``w_i = (M z)_i + q_i`` (the sum's
    error can reach ``n`` times that; this is its least value). Below it a residual says nothing:
    an interior-point iterate that diverged along a ray to ``|z| ~ 4e16`` had a computed residual of
    0 and a true one of 3 (``tests/solvers/lcp/test_lcp_property.py``). 0 when the cheap bound
    ``eps (max|M| ||z||_1 + max|q|)`` is already below ``tol / 16`` (every problem of normal size)."""
    if not np.isfinite(z).all():
        return float("inf")
    eps = np.finfo(np.float64).eps
    cheap = eps * (float(np.max(np.abs(M), initial=0.0)) * float(np.abs(z).sum()) + float(np.max(np.abs(q), initial=0.0)))
    if cheap <= tol / 16.0:
        return 0.0
    return float(eps * np.max(np.abs(M) @ np.abs(z) + np.abs(q), initial=0.0))


def verified_result(M: np.ndarray, q: np.ndarray, z: np.ndarray | None, *, solver: str, claimed: Status, tol: float,
                    iterations: int, t_start: float, message: str = "", **extras: Any) -> Result:
    """Build a :class:`Result`, checking the solver's claim independently.

    ``M`` and ``q`` must be the validated float64 arrays of :func:`validate_lcp`. A claimed
    ``SOLVED`` whose residual exceeds ``tol`` is downgraded to ``NOT_SOLVED`` (the scipy
    ``_linprog_util`` discipline); the message then says so. A residual below the check's
    :func:`rounding_floor` counts as that floor (it cannot be certified smaller). A solver that gave up on an iterate
    that happens to pass the check is upgraded to ``SOLVED`` (the check, not the claim, decides).
    ``extras["w"]`` holds ``M z + q``.
    """
    n = q.shape[0]
    if z is None:
        z = np.full(n, np.nan)
    elif type(z) is not np.ndarray or z.dtype != np.float64 or not z.flags.c_contiguous:
        z = np.ascontiguousarray(z, dtype=np.float64)
    w = np.empty(n)
    res = w_and_residual_kernel(M, q, z, w) if z.shape == q.shape else float("inf")
    if res <= tol:
        res = max(res, rounding_floor(M, q, z, tol))
    return judged_result(z, w, res, solver=solver, claimed=claimed, tol=tol, iterations=iterations,
                         t_start=t_start, message=message, extras=extras)


def judged_result(z: np.ndarray, w: np.ndarray, residual: float, *, solver: str, claimed: Status, tol: float,
                  iterations: int, t_start: float, message: str, extras: dict[str, Any]) -> Result:
    """The :class:`Result` of :func:`verified_result` from an already computed check:
    ``w = M z + q`` and ``residual = ||min(z, w)||_inf`` evaluated from the original ``M, q`` and
    the returned ``z`` (for example by :func:`w_and_residual_kernel` inside a solver's compiled
    kernel, which saves a second call on tiny problems). The claim is judged here, as there;
    ``extras`` (taken over, not copied) gets ``"w"`` unless it has one."""
    res = float(residual)
    status, passed = claimed, res <= tol
    if (claimed is Status.SOLVED) != passed:  # only then is there anything to judge (hot path)
        why = f"the independent residual {res:.3e} exceeds tol {tol:.1e}"
        status, message = judge_claim(claimed, passed, message, why, res)
    if "w" not in extras:
        extras["w"] = w
    return Result(status, z, solver, res, tol, int(iterations), time.perf_counter() - t_start, message, extras)


def polish_lcp(M: np.ndarray, q: np.ndarray, z: np.ndarray) -> np.ndarray | None:
    """Active-set polish of an approximate LCP solution.

    Guess the basis ``B = {i : z_i > w_i}`` (with ``w = M z + q``), solve ``M_BB z_B = -q_B`` with
    ``z_N = 0`` (minimum-norm least squares when ``M_BB`` is singular), and return the candidate
    (negative entries of ``z_B`` clipped to 0) when it is finite and ``w_N = M_NB z_B + q_N >= 0``
    up to ``1e-9 (1 + ||q||_inf)``; else ``None``. Interior point, Newton and IPOPT answers are
    accurate to their own tolerance only; this turns a close one into an exact complementary
    solution, which the caller still verifies with :func:`lcp_residual`. One compiled
    implementation (:func:`contactmp.solvers.lcp._newton_kernels.polish`, LAPACK from numba) serves
    this function and the Newton method's own polish steps.
    """
    from contactmp.solvers.lcp._newton_kernels import polish  # imports this module: import here

    z = np.ascontiguousarray(z, dtype=np.float64)
    found, cand = polish(np.ascontiguousarray(M, dtype=np.float64), np.ascontiguousarray(q, dtype=np.float64), z)
    return cand if found else None
