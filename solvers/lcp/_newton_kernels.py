"""Compiled (numba) form of :mod:`contactmp.solvers.lcp.newton`'s method for the dense LCP.

For the LCP (``l = 0``, ``u = inf``, ``F(z) = M z + q``) every row of the reformulation is
``Phi_i = phi(z_i, w_i)`` with ``w = M z + q`` and ``phi`` the (penalized) Fischer-Burmeister
function, and the generalized Jacobian is ``H = diag(Da) + diag(Db) M``. :func:`run_lcp` is one
run of ``newton._run`` specialized to this case (same Newton / Levenberg-Marquardt / projected
gradient steps, same nonmonotone search, same polish attempts), so that a run costs the linear
algebra and no per-iteration Python overhead. ``newton._run`` stays the reference for the general
box MCP; tests check that both take the same steps on LCPs.

Dot products and matrix-vector products go through ``np.dot`` (BLAS); the factorizations call
SciPy's LAPACK directly (``dgesv`` for the Newton system reduced to the rows with ``Db_i != 0``,
``dsyrk`` + ``dpotrf``/``dpotrs`` for the Levenberg-Marquardt system, ``dgelsy`` for the polish's
least squares), registered with LLVM by symbol name so that the kernels are cached on disk.
"""
from __future__ import annotations

import math

import llvmlite.binding as llvm
import numba
import numpy as np
from numba.core import types
from numba.extending import get_cython_function_address

from contactmp.solvers.lcp.problem import residual_kernel

# codes of run_lcp's outcome (newton._run_lcp turns them into Status and message)
SOLVED = 0  #: natural residual <= tol
POLISHED = 1  #: polish_lcp's candidate verified
MAX_ITER = 2
STATIONARY = 3  #: gradient of the merit is zero (or not finite)
NO_DECREASE = 4  #: no decrease along the projected gradient
NOT_FINITE = 5  #: F not finite at the starting point
CHUNK = 6  #: lcp_steps stopped before iteration k_stop (resumable; never an outcome of a run)

_EPS = 2.220446049250313e-16  # float64 machine epsilon (numpy's lstsq rcond=None is eps max(m, n))


def _fortran(module: str, name: str, nargs: int) -> types.ExternalFunction:
    """SciPy's BLAS/LAPACK routine ``name`` as an external function of numba code.

    Fortran takes every argument by pointer; the pointers are passed as ``intp``
    (``arr.ctypes.data``). The routine is found by a symbol name registered with LLVM, not by an
    address baked into the code, so the compiled kernels can be cached on disk.
    """
    symbol = f"contactmp_scipy_{name}"
    llvm.add_symbol(symbol, get_cython_function_address(f"scipy.linalg.cython_{module}", name))
    return types.ExternalFunction(symbol, types.void(*([types.intp] * nargs)))


_dsyrk = _fortran("blas", "dsyrk", 10)  # (uplo, trans, n, k, alpha, a, lda, beta, c, ldc)
_dgesv = _fortran("lapack", "dgesv", 8)  # (n, nrhs, a, lda, ipiv, b, ldb, info)
_dpotrf = _fortran("lapack", "dpotrf", 5)  # (uplo, n, a, lda, info)
_dpotrs = _fortran("lapack", "dpotrs", 8)  # (uplo, n, nrhs, a, lda, b, ldb, info)
# (m, n, nrhs, a, lda, b, ldb, jpvt, rcond, rank, work, lwork, info)
_dgelsy = _fortran("lapack", "dgelsy", 13)


@numba.njit(cache=True)
def fb_merit(z: np.ndarray, w: np.ndarray, lam: float,
             phi: np.ndarray) -> float:  # pragma: no cover
    """``phi <- Phi(z)``, ``Phi_i = lam (sqrt(z_i^2 + w_i^2) - z_i - w_i) - (1 - lam) z_i+ w_i+``;
    return the merit ``Psi = 0.5 ||Phi||^2``."""
    for i in range(z.shape[0]):
        a, b = z[i], w[i]
        out = math.hypot(a, b) - a - b
        if lam != 1.0:
            out = lam * out - (1.0 - lam) * max(a, 0.0) * max(b, 0.0)
        phi[i] = out
    return 0.5 * np.dot(phi, phi)


@numba.njit(cache=True)
def fb_jacobian(z: np.ndarray, w: np.ndarray, M: np.ndarray, lam: float,
                da: np.ndarray, db: np.ndarray) -> None:  # pragma: no cover
    """``(Da, Db)`` with ``H = diag(Da) + diag(Db) M`` in the generalized Jacobian of ``Phi``.

    At ``z_i = w_i = 0`` the limit of the gradient along ``d = 1_deg`` (De Luca, Facchinei and
    Kanzow): ``lam ((1, (M d)_i) / ||(1, (M d)_i)|| - 1)``.
    """
    n = z.shape[0]
    ndeg = 0
    for i in range(n):
        a, b = z[i], w[i]
        r = math.hypot(a, b)
        if r == 0.0:
            pa, pb = -1.0, -1.0
            ndeg += 1
        else:
            pa, pb = a / r - 1.0, b / r - 1.0
        if lam != 1.0:
            pa = lam * pa - (1.0 - lam) * max(b, 0.0) * (1.0 if a > 0 else 0.0)
            pb = lam * pb - (1.0 - lam) * max(a, 0.0) * (1.0 if b > 0 else 0.0)
        da[i], db[i] = pa, pb
    if ndeg:
        d = np.zeros(n)
        for i in range(n):
            if math.hypot(z[i], w[i]) == 0.0:
                d[i] = 1.0
        jd = np.dot(M, d)
        for i in range(n):
            if d[i] == 1.0:
                nrm = math.hypot(1.0, jd[i])
                da[i] = lam * (1.0 / nrm - 1.0)
                db[i] = lam * (jd[i] / nrm - 1.0)


@numba.njit(cache=True)
def natural_residual(z: np.ndarray, w: np.ndarray) -> float:  # pragma: no cover
    """``||z - max(z - w, 0)||_inf`` (inf when ``z`` or ``w`` is not finite)."""
    res = 0.0
    for i in range(z.shape[0]):
        if not (np.isfinite(z[i]) and np.isfinite(w[i])):
            return np.inf
        v = abs(z[i] - max(z[i] - w[i], 0.0))
        if v > res:
            res = v
    return res


@numba.njit(cache=True)
def _has_zero_line(a: np.ndarray) -> bool:  # pragma: no cover
    """Whether the square ``a`` has a row or a column of zeros (then it is singular)."""
    n = a.shape[0]
    for i in range(n):
        row_zero = True
        col_zero = True
        for j in range(n):
            if a[i, j] != 0.0:
                row_zero = False
            if a[j, i] != 0.0:
                col_zero = False
        if row_zero or col_zero:
            return True
    return False


@numba.njit(cache=True)
def polish(M: np.ndarray, q: np.ndarray,
           z: np.ndarray) -> tuple[bool, np.ndarray]:  # pragma: no cover
    """:func:`contactmp.solvers.lcp.problem.polish_lcp` compiled: ``(found, candidate)``.

    Basis ``B = {z_i > w_i}``, ``M_BB z_B = -q_B`` (minimum-norm least squares if singular, by
    :func:`lstsq`), ``z_N = 0``; found when the candidate is finite and
    ``w_N >= -1e-9 (1 + ||q||_inf)``.
    """
    n = q.shape[0]
    cand = np.zeros(n)
    for i in range(n):
        if not np.isfinite(z[i]):
            return False, cand
    w = np.dot(M, z) + q
    idx = np.empty(n, dtype=np.int64)
    nb = 0
    for i in range(n):
        if z[i] > w[i]:
            idx[nb] = i
            nb += 1
    if nb:
        mbb = np.empty((nb, nb))
        rhs = np.empty(nb)
        for a in range(nb):
            rhs[a] = -q[idx[a]]
            for b in range(nb):
                mbb[a, b] = M[idx[a], idx[b]]
        # a zero row or column makes LU meet an exactly zero pivot: go to least squares at once
        ok = False
        if not _has_zero_line(mbb):
            ok, zb = lu_solve(mbb, rhs)
        if not ok:
            zb = lstsq(mbb, rhs)
        for a in range(nb):
            if not np.isfinite(zb[a]):
                return False, cand
            cand[idx[a]] = max(zb[a], 0.0)
    scale = 1.0 + np.max(np.abs(q))
    wc = np.dot(M, cand) + q
    for i in range(n):
        if not z[i] > w[i] and wc[i] < -1e-9 * scale:
            return False, cand
    return True, cand


@numba.njit(cache=True)
def gram(h: np.ndarray) -> np.ndarray:  # pragma: no cover
    """``H^T H`` of a C-ordered ``k x n`` matrix ``H`` by one symmetric rank-k update (BLAS
    ``dsyrk``, as NumPy's ``h.T @ h``), both triangles filled."""
    k, n = h.shape
    c = np.zeros((n, n))
    if k == 0:
        return c
    ni = np.array([n], dtype=np.int32)
    ki = np.array([k], dtype=np.int32)
    alpha = np.array([1.0])
    beta = np.array([0.0])
    uplo = np.array([ord("L")], dtype=np.uint8)
    trans = np.array([ord("N")], dtype=np.uint8)
    # column-major, h is the n x k matrix H^T and c the transpose of the row-major result:
    # c = h h^T, lower triangle
    _dsyrk(uplo.ctypes.data, trans.ctypes.data, ni.ctypes.data, ki.ctypes.data,
           alpha.ctypes.data, h.ctypes.data, ni.ctypes.data, beta.ctypes.data, c.ctypes.data,
           ni.ctypes.data)
    for i in range(n):  # row-major upper triangle is filled: mirror it
        for j in range(i):
            c[i, j] = c[j, i]
    return c


@numba.njit(cache=True)
def lu_solve(a: np.ndarray, rhs: np.ndarray) -> tuple[bool, np.ndarray]:  # pragma: no cover
    """``(ok, a^{-1} rhs)`` by LU with partial pivoting (LAPACK ``dgesv`` on a copy); not ok when
    a pivot is exactly zero (``a`` singular, as ``np.linalg.solve`` raises)."""
    n = a.shape[0]
    f = a.T.copy()  # column-major a
    x = rhs.copy()
    ni = np.array([n], dtype=np.int32)
    one = np.array([1], dtype=np.int32)
    ipiv = np.empty(n, dtype=np.int32)
    info = np.zeros(1, dtype=np.int32)
    _dgesv(ni.ctypes.data, one.ctypes.data, f.ctypes.data, ni.ctypes.data, ipiv.ctypes.data,
           x.ctypes.data, ni.ctypes.data, info.ctypes.data)
    return info[0] == 0, x


@numba.njit(cache=True)
def lstsq(a: np.ndarray, rhs: np.ndarray) -> np.ndarray:  # pragma: no cover
    """The minimum-norm least-squares solution of ``a x = rhs`` (square ``a``), by the complete
    orthogonal factorization of LAPACK ``dgelsy``, with the rank cutoff of ``np.linalg.lstsq``
    (``rcond = eps n``); about three times faster than the SVD (``dgelsd``) at n ~ 100."""
    n = a.shape[0]
    f = a.T.copy()  # column-major a
    x = rhs.copy()
    ni = np.array([n], dtype=np.int32)
    one = np.array([1], dtype=np.int32)
    jpvt = np.zeros(n, dtype=np.int32)
    rcond = np.array([_EPS * n])
    rank = np.zeros(1, dtype=np.int32)
    info = np.zeros(1, dtype=np.int32)
    work = np.empty(1)
    lwork = np.array([-1], dtype=np.int32)  # workspace query
    _dgelsy(ni.ctypes.data, ni.ctypes.data, one.ctypes.data, f.ctypes.data, ni.ctypes.data,
            x.ctypes.data, ni.ctypes.data, jpvt.ctypes.data, rcond.ctypes.data,
            rank.ctypes.data, work.ctypes.data, lwork.ctypes.data, info.ctypes.data)
    lwork[0] = max(int(work[0]), 1)
    work = np.empty(lwork[0])
    _dgelsy(ni.ctypes.data, ni.ctypes.data, one.ctypes.data, f.ctypes.data, ni.ctypes.data,
            x.ctypes.data, ni.ctypes.data, jpvt.ctypes.data, rcond.ctypes.data,
            rank.ctypes.data, work.ctypes.data, lwork.ctypes.data, info.ctypes.data)
    if info[0] != 0:
        x[:] = np.nan
    return x


@numba.njit(cache=True)
def spd_solve(a: np.ndarray, rhs: np.ndarray) -> tuple[bool, np.ndarray]:  # pragma: no cover
    """``(ok, a^{-1} rhs)`` for a symmetric ``a``: Cholesky (``dpotrf``/``dpotrs``) when ``a`` is
    numerically positive definite, else :func:`lu_solve` (not ok: singular)."""
    n = a.shape[0]
    f = a.copy()  # symmetric: its own column-major form
    x = rhs.copy()
    ni = np.array([n], dtype=np.int32)
    one = np.array([1], dtype=np.int32)
    info = np.zeros(1, dtype=np.int32)
    uplo = np.array([ord("L")], dtype=np.uint8)
    _dpotrf(uplo.ctypes.data, ni.ctypes.data, f.ctypes.data, ni.ctypes.data, info.ctypes.data)
    if info[0] != 0:
        return lu_solve(a, rhs)
    _dpotrs(uplo.ctypes.data, ni.ctypes.data, one.ctypes.data, f.ctypes.data, ni.ctypes.data,
            x.ctypes.data, ni.ctypes.data, info.ctypes.data)
    return info[0] == 0, x


@numba.njit(cache=True)
def newton_direction(h: np.ndarray, phi: np.ndarray, da: np.ndarray, db: np.ndarray,
                     rest: np.ndarray, n_rest: int) -> tuple[bool, np.ndarray]:  # pragma: no cover
    """``(ok, d)`` with ``H d = -Phi``, ``H = diag(Da) + diag(Db) M`` (in ``h``).

    A row with ``Db_i = 0`` (``z_i = 0 < w_i``) reads ``Da_i d_i = -Phi_i``; those ``d_i`` are
    eliminated and LU works on the other rows and columns, ``rest[:n_rest]``, only (``H`` is
    singular exactly when a ``Da_i`` of the first kind is 0 or the remaining block is singular).
    """
    n = phi.shape[0]
    if n_rest == n:
        return lu_solve(h, -phi)
    d = np.empty(n)
    for i in range(n):
        if db[i] == 0.0:
            if da[i] == 0.0:
                return False, d
            d[i] = -phi[i] / da[i]
    hr = np.empty((n_rest, n_rest))
    rhs = np.empty(n_rest)
    for a in range(n_rest):
        i = rest[a]
        s = -phi[i]
        for j in range(n):
            if db[j] == 0.0:
                s -= h[i, j] * d[j]
        rhs[a] = s
        for b in range(n_rest):
            hr[a, b] = h[i, rest[b]]
    ok, dr = lu_solve(hr, rhs)
    for a in range(n_rest):
        d[rest[a]] = dr[a]
    return ok, d


@numba.njit(cache=True)
def lm_matrix(h: np.ndarray, da: np.ndarray, db: np.ndarray, nu: float, rest: np.ndarray,
              n_rest: int) -> np.ndarray:  # pragma: no cover
    """``H^T H + nu I``; rows with ``Db_i = 0`` add only ``Da_i^2`` to the diagonal, so the
    rank-k update runs over the other rows ``rest[:n_rest]``."""
    n = da.shape[0]
    if n_rest == n:
        a = gram(h)
    else:
        hr = np.empty((n_rest, n))
        for r in range(n_rest):
            hr[r] = h[rest[r]]
        a = gram(hr)
        for i in range(n):
            if db[i] == 0.0:
                a[i, i] += da[i] * da[i]
    for i in range(n):
        a[i, i] += nu
    return a


@numba.njit(cache=True)
def _finite_solution(ok: bool, d: np.ndarray) -> bool:  # pragma: no cover
    """The solve succeeded and its answer is finite (``newton._linear_solve`` is not None)."""
    return ok and np.isfinite(d).all()


@numba.njit(cache=True)
def _search(M: np.ndarray, q: np.ndarray, z: np.ndarray, d: np.ndarray, grad: np.ndarray,
            ref: float, sigma: float, beta: float, lam: float, t_min: float, free: bool,
            phit: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, float]:  # pragma: no cover
    """Nonmonotone Armijo search along ``max(z + t d, 0)`` (``z + t d`` when ``free``),
    ``t = 1, beta, ...``, ``t >= t_min``: ``(t, z(t), w(t), Psi(z(t)))``, ``t = -1`` if none;
    ``phit`` receives ``Phi(z(t))``."""
    n = z.shape[0]
    zt = np.empty(n)
    t = 1.0
    while t >= t_min:
        for i in range(n):
            v = z[i] + t * d[i]
            zt[i] = v if free or v >= 0.0 else 0.0
        slope = np.dot(grad, zt - z)
        if slope < 0:
            wt = np.dot(M, zt) + q
            if np.isfinite(wt).all():
                psit = fb_merit(zt, wt, lam, phit)
                if psit <= ref + sigma * slope:
                    return t, zt, wt, psit
        t *= beta
    return -1.0, zt, zt, 0.0


@numba.njit(cache=True)
def run_lcp(
    M: np.ndarray, q: np.ndarray, z0: np.ndarray, max_iter: int, free: bool, memory: int,
    tol: float, sigma: float, beta: float, rho: float, p: float, lam: float, lm: float,
    lm_max: float, lm_factor: float, min_newton_step: float, polish_every: int,
    polish_drop: float, tried: np.ndarray, n_tried: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, int, int, int, int, int, float, float]:  # pragma: no cover
    """One run of the globalized semismooth Newton method on LCP(q, M) from ``z0``.

    The iteration of ``newton._run`` with ``F(z) = M z + q`` and its LCP polish callback; the
    bases ``{z_i > w_i}`` already polished are the first ``n_tried[0]`` rows of ``tried`` (shared
    by the runs). Returns ``(z, w, code, iterations, newton_steps, lm_steps, gradient_steps,
    merit, natural residual)`` with ``code`` one of the module's outcome codes.
    :func:`start_lcp` and all of :func:`lcp_steps` in one call.
    """
    ok, z, w, psi, history = start_lcp(M, q, z0, max_iter, lam)
    if not ok:
        return z, w, NOT_FINITE, 0, 0, 0, 0, np.nan, np.inf
    out = lcp_steps(M, q, z, w, z, z, False, history, psi, lm, np.inf, 0, 0, 0, 0, max_iter + 1, max_iter,
                    free, memory, tol, sigma, beta, rho, p, lam, lm, lm_max, lm_factor, min_newton_step,
                    polish_every, polish_drop, tried, n_tried)
    return out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], out[8]


@numba.njit(cache=True)
def start_lcp(M: np.ndarray, q: np.ndarray, z0: np.ndarray, max_iter: int,
              lam: float) -> tuple[bool, np.ndarray, np.ndarray, float, np.ndarray]:  # pragma: no cover
    """The state of a run before its first iteration: ``(ok, z, w, merit, history)``, ``ok``
    false when ``w = M z0 + q`` is not finite (outcome ``NOT_FINITE``)."""
    z = z0.copy()
    w = np.dot(M, z) + q
    history = np.empty(max_iter + 1)
    if not np.isfinite(w).all():
        return False, z, w, np.nan, history
    phi = np.empty(q.shape[0])
    psi = fb_merit(z, w, lam, phi)
    history[0] = psi
    return True, z, w, psi, history


@numba.njit(cache=True)
def lcp_steps(
    M: np.ndarray, q: np.ndarray, z: np.ndarray, w: np.ndarray, prev_z: np.ndarray, prev_g: np.ndarray,
    has_prev: bool, history: np.ndarray, psi: float, mu: float, res_polish: float, k: int, n_newton: int,
    n_lm: int, n_grad: int, k_stop: int, max_iter: int, free: bool, memory: int, tol: float, sigma: float,
    beta: float, rho: float, p: float, lam: float, lm: float, lm_max: float, lm_factor: float,
    min_newton_step: float, polish_every: int, polish_drop: float, tried: np.ndarray, n_tried: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, int, int, int, int, int, float, float, np.ndarray, np.ndarray, bool,
           float, float]:  # pragma: no cover
    """Iterations ``k, k + 1, ...`` of a run (see :func:`run_lcp`) from its state, until an outcome
    or until iteration ``k_stop`` is about to begin (outcome ``CHUNK``: nothing of iteration
    ``k_stop`` is done, and a call with the returned state resumes exactly there).

    The state: the iterate ``z``, ``w = M z + q``, the last iterate and merit gradient
    (``prev_z``, ``prev_g``, valid when ``has_prev``), the merit values ``history[:k + 1]``, the
    merit ``psi`` of ``z``, the Levenberg-Marquardt weight ``mu``, the residual ``res_polish`` at
    the last polish attempt and the step counts. Returns ``(z, w, code, k, newton_steps,
    lm_steps, gradient_steps, merit, natural residual, prev_z, prev_g, has_prev, mu,
    res_polish)``; the natural residual is that of ``z`` (``inf`` after ``CHUNK``). The iterate
    arrays are never written in place (each step makes new ones), so the state is shared, not
    copied.
    """
    n = q.shape[0]
    phi = np.empty(n)
    da = np.empty(n)
    db = np.empty(n)
    h = np.empty((n, n))
    rest = np.empty(n, dtype=np.int64)
    mu_max = max(lm, lm_max)
    while True:
        if k >= k_stop:
            return (z, w, CHUNK, k, n_newton, n_lm, n_grad, psi, np.inf, prev_z, prev_g, has_prev, mu,
                    res_polish)
        res = natural_residual(z, w)
        if res <= tol:
            return z, w, SOLVED, k, n_newton, n_lm, n_grad, psi, res, prev_z, prev_g, has_prev, mu, res_polish
        if polish_every and k and k % polish_every == 0 and res <= polish_drop * res_polish:
            res_polish = res
            basis = z > np.dot(M, z) + q
            seen = False
            for r in range(n_tried[0]):
                if (tried[r] == basis).all():
                    seen = True
                    break
            if not seen:
                if n_tried[0] < tried.shape[0]:
                    tried[n_tried[0]] = basis
                    n_tried[0] += 1
                found, cand = polish(M, q, z)
                if found and residual_kernel(M, q, cand) <= tol:
                    z = cand
                    w = np.dot(M, z) + q
                    psi = fb_merit(z, w, lam, phi)
                    return (z, w, POLISHED, k, n_newton, n_lm, n_grad, psi, res, prev_z, prev_g, has_prev, mu,
                            res_polish)
        if k >= max_iter:
            return z, w, MAX_ITER, k, n_newton, n_lm, n_grad, psi, res, prev_z, prev_g, has_prev, mu, res_polish
        psi_z = fb_merit(z, w, lam, phi)  # Phi at z (as newton._mcp_phi_jac recomputes it)
        fb_jacobian(z, w, M, lam, da, db)
        for i in range(n):
            for j in range(n):
                h[i, j] = db[i] * M[i, j]
            h[i, i] += da[i]
        grad = np.dot(h.T, phi)
        n_rest = 0  # rows with Db_i != 0
        for i in range(n):
            if db[i] != 0.0:
                rest[n_rest] = i
                n_rest += 1
        ref = history[max(0, k + 1 - memory)]
        for i in range(max(0, k + 1 - memory), k + 1):
            ref = max(ref, history[i])
        t = -1.0
        zt, wt, psit = z, w, psi_z
        # 1. Newton: H d = -Phi
        ok, d = newton_direction(h, phi, da, db, rest, n_rest)
        if _finite_solution(ok, d) and np.dot(grad, d) <= -rho * math.sqrt(np.dot(d, d)) ** p:
            phit = np.empty(n)
            t, zt, wt, psit = _search(M, q, z, d, grad, ref, sigma, beta, lam, min_newton_step,
                                      free, phit)
            if t > 0:
                n_newton += 1
        # 2. Levenberg-Marquardt
        if t < 0 and lm > 0:
            nu = mu * math.sqrt(np.dot(phi, phi))
            ok, d = spd_solve(lm_matrix(h, da, db, nu, rest, n_rest), -grad)
            if _finite_solution(ok, d) and np.dot(grad, d) < 0:
                phit = np.empty(n)
                t, zt, wt, psit = _search(M, q, z, d, grad, ref, sigma, beta, lam,
                                          min_newton_step, free, phit)
            if t > 0:
                n_lm += 1
            if t == 1.0:
                mu = max(mu / lm_factor, lm)
            else:
                mu = min(mu * lm_factor, mu_max)
        # 3. (projected) gradient with Barzilai-Borwein scaling
        if t < 0:
            gmax = np.max(np.abs(grad))
            if not gmax > 0 or not np.isfinite(gmax):
                return (z, w, STATIONARY, k, n_newton, n_lm, n_grad, psi, res, prev_z, prev_g, has_prev, mu,
                        res_polish)
            scale = 1.0 / max(gmax, 1.0)
            if has_prev:
                s_k = z - prev_z
                y_k = grad - prev_g
                sy = np.dot(s_k, y_k)
                if sy > 0:
                    scale = min(max(np.dot(s_k, s_k) / sy, 1e-12), 1e12)
            t_min = 1e-15 * max(1.0, np.max(np.abs(z))) / (scale * gmax)
            phit = np.empty(n)
            t, zt, wt, psit = _search(M, q, z, -scale * grad, grad, ref, sigma, beta, lam, t_min,
                                      free, phit)
            if t < 0:
                return (z, w, NO_DECREASE, k, n_newton, n_lm, n_grad, psi, res, prev_z, prev_g, has_prev, mu,
                        res_polish)
            n_grad += 1
        prev_z, prev_g, has_prev = z, grad, True
        z, w, psi = zt, wt, psit
        k += 1
        history[k] = psi
