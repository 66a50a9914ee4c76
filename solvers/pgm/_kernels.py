"""Compiled (numba) form of :func:`contactmp.solvers.pgm.projected_gradient.pgm` for problems given as SX tapes.

:func:`run_pgm` is the loop of ``nmdp_pgm.pgm`` -- the Newton projection with its halving search
and one polish step (``project``), the implicit-function gradient and Gauss-Newton Hessian
(``_reduced_derivatives``), the primal active-set proximal QP (``prox_qp``), the proximal-weight
search and the stopping rules -- statement for statement, with the problem's functions evaluated
from their CasADi instruction tapes (:mod:`contactmp.solvers.pgm.sx_tape`) instead of Python
callables. ``nmdp_pgm.pgm`` stays the reference (and the path for any duck-typed problem); it calls
this kernel when the problem carries tapes (:class:`PGMTapes`, from
:meth:`contactmp.formulations.nmdp.NMDP.functions`) and does the independent check of the answer
itself. The tapes' values are CasADi's to the bit; the linear algebra is LAPACK through numba, so
an answer can differ from the Python loop's by rounding (measured on the spider walk: see
``benchmarks/nmdp_frame.py``).

Every tape takes the flat argument ``x = (theta, w, p)`` (``p`` the step data).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from contactmp.solvers.pgm.projected_gradient import QP_ROUNDING_STEP
from contactmp.solvers.pgm.sx_tape import Tape, tape_eval

__all__ = ["PGMTapes", "run_pgm", "FAILURES", "STOPS"]

#: failure codes of :func:`run_pgm` -> message of ``nmdp_pgm.pgm``
FAILURES = {0: "", 1: "initial projection did not converge", 2: "dG/dtheta is singular",
            3: "non-finite gradient or Hessian", 4: "beta exceeded beta_max", 5: "proximal QP did not converge"}
#: stop codes of :func:`run_pgm` -> the reason ``nmdp_pgm.pgm`` records
STOPS = {0: "", 1: "max_outer", 2: "stationary", 3: "step below tol_d", 4: "decrease below tol_decrease"}

_EPS = 2.220446049250313e-16


@dataclass(frozen=True)
class PGMTapes:
    """The tapes of one NMDP (all with inputs ``(theta, w, p)``): ``G`` (n), ``G_theta`` and
    ``G_theta_zo`` (n x n), ``G_w`` (n x n_w), ``K`` (1), ``K_grad`` (n), ``K_hess`` (n x n)."""

    G: Tape
    G_theta: Tape
    G_theta_zo: Tape
    G_w: Tape
    K: Tape
    K_grad: Tape
    K_hess: Tape


# -- evaluation --------------------------------------------------------------------------------

@numba.njit(cache=True)
def _ev(code: np.ndarray, consts: np.ndarray, runs: np.ndarray, work: np.ndarray, x: np.ndarray,
        n_y: int) -> np.ndarray:  # pragma: no cover (compiled)
    y = np.zeros(n_y)
    tape_eval(code, consts, runs, work, x, y)
    return y


@numba.njit(cache=True)
def _mat(y: np.ndarray, rows: int, cols: int) -> np.ndarray:  # pragma: no cover (compiled)
    """The column-major flat ``y`` as a C-contiguous ``(rows, cols)`` matrix."""
    out = np.empty((rows, cols))
    for j in range(cols):
        for i in range(rows):
            out[i, j] = y[j * rows + i]
    return out


@numba.njit(cache=True)
def _set(x: np.ndarray, theta: np.ndarray, w: np.ndarray) -> None:  # pragma: no cover (compiled)
    n = theta.shape[0]
    x[:n] = theta
    x[n:n + w.shape[0]] = w


@numba.njit(cache=True)
def _norm2(v: np.ndarray) -> float:  # pragma: no cover (compiled)
    return math.sqrt(np.dot(v, v))


@numba.njit(cache=True)
def _ninf(v: np.ndarray) -> float:  # pragma: no cover (compiled)
    r = 0.0
    for i in range(v.shape[0]):
        a = abs(v[i])
        if a > r or math.isnan(a):
            r = a
    return r


@numba.njit(cache=True)
def _finite(v: np.ndarray) -> bool:  # pragma: no cover (compiled)
    for a in v.ravel():
        if not math.isfinite(a):
            return False
    return True


@numba.njit(cache=True)
def _jac(cJ, kJ, rJ, wJ, x, n, cache_x, cache_J):  # pragma: no cover (compiled)
    """``G_theta`` (or ``G_theta_zo``) at the argument ``x`` as an ``(n, n)`` matrix, re-used when
    ``x`` is bitwise the argument of the previous evaluation (``cache_x``; NaN: none): the Newton
    projection's last matrix is often the one the reduced derivatives need next."""
    same = True
    for i in range(x.shape[0]):
        if x[i] != cache_x[i]:
            same = False
            break
    if not same:
        cache_J[:, :] = _mat(_ev(cJ, kJ, rJ, wJ, x, n * n), n, n)
        cache_x[:] = x
    return cache_J.copy()


# -- the feasible set --------------------------------------------------------------------------

@numba.njit(cache=True)
def _simplex_projection(y: np.ndarray) -> np.ndarray:  # pragma: no cover (compiled)
    if not _finite(y):
        return np.full(y.shape[0], np.nan)
    x = np.maximum(y, 0.0)
    if x.sum() <= 1.0:
        return x
    u = np.sort(y)[::-1]
    css = np.cumsum(u) - 1.0
    rho = 0
    for k in range(y.shape[0]):
        if u[k] - css[k] / (k + 1.0) > 0:
            rho = k
    tau = css[rho] / (rho + 1.0)
    return np.maximum(y - tau, 0.0)


@numba.njit(cache=True)
def _project_W(y: np.ndarray, gidx: np.ndarray, gptr: np.ndarray) -> np.ndarray:  # pragma: no cover
    x = np.maximum(y, 0.0)
    for k in range(gptr.shape[0] - 1):
        g = gidx[gptr[k]:gptr[k + 1]]
        if g.size:
            x[g] = _simplex_projection(y[g])
    return x


@numba.njit(cache=True)
def _infeasibility(w: np.ndarray, gidx: np.ndarray, gptr: np.ndarray) -> float:  # pragma: no cover
    v = max(0.0, -w.min()) if w.size else 0.0
    for k in range(gptr.shape[0] - 1):
        g = gidx[gptr[k]:gptr[k + 1]]
        if g.size:
            v = max(v, w[g].sum() - 1.0)
    return v


@numba.njit(cache=True)
def _stationarity(w: np.ndarray, g: np.ndarray, gidx: np.ndarray, gptr: np.ndarray) -> float:  # pragma: no cover
    if w.size == 0:
        return 0.0
    return np.max(np.abs(w - _project_W(w - g, gidx, gptr)))


# -- the proximal QP (nmdp_pgm.prox_qp) --------------------------------------------------------

@numba.njit(cache=True)
def _constraints(w: np.ndarray, gidx: np.ndarray,
                 gptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover (compiled)
    n_w = w.shape[0]
    ng = gptr.shape[0] - 1
    A = np.zeros((n_w + ng, n_w))
    r = np.empty(n_w + ng)
    for j in range(n_w):
        A[j, j] = 1.0
        r[j] = -w[j]
    for k in range(ng):
        g = gidx[gptr[k]:gptr[k + 1]]
        for j in g:
            A[n_w + k, j] = -1.0
        r[n_w + k] = w[g].sum() - 1.0
    return A, r


@numba.njit(cache=True)
def _prox_qp(g: np.ndarray, P: np.ndarray, w: np.ndarray, gidx: np.ndarray,
             gptr: np.ndarray) -> tuple[np.ndarray, bool]:  # pragma: no cover (compiled)
    n_w = w.shape[0]
    A, r = _constraints(w, gidx, gptr)
    m = A.shape[0]
    max_iter = 10 * (m + 5)
    scale = max(1.0, np.max(np.abs(g)) if g.size else 0.0, np.max(np.abs(P)) if P.size else 0.0)
    d = np.zeros(n_w)
    slack = A @ d - r
    work = np.empty(m, dtype=np.int64)
    inwork = np.zeros(m, dtype=np.bool_)
    k = 0
    for j in range(m):
        if slack[j] <= 1e-14:
            work[k] = j
            inwork[j] = True
            k += 1
    lam_w = np.zeros(0)
    ok = False
    full_step = 0.0
    for _it in range(1, max_iter + 1):
        grad = P @ d + g
        kkt = np.zeros((n_w + k, n_w + k))
        kkt[:n_w, :n_w] = P
        for c in range(k):
            for i in range(n_w):
                kkt[i, n_w + c] = -A[work[c], i]
                kkt[n_w + c, i] = A[work[c], i]
        rhs = np.zeros(n_w + k)
        rhs[:n_w] = -grad
        try:
            sol = np.linalg.solve(kkt, rhs)
        except Exception:  # noqa: BLE001 (numba raises on an exactly singular matrix)
            sol = np.linalg.lstsq(kkt, rhs, rcond=_EPS * (n_w + k))[0]
        p = sol[:n_w].copy()
        lam_w = sol[n_w:].copy()
        pmax = np.max(np.abs(p)) if n_w else 0.0
        if k == n_w or pmax <= QP_ROUNDING_STEP * full_step:  # as nmdp_pgm.prox_qp
            p = np.zeros(n_w)
            pmax = 0.0
        full_step = 0.0
        dmax = np.max(np.abs(d)) if n_w else 0.0
        if pmax <= 1e-12 * max(1.0, dmax):
            if k == 0 or lam_w.min() >= -1e-13 * scale:
                ok = True
                break
            drop = int(np.argmin(lam_w))
            inwork[work[drop]] = False
            for c in range(drop, k - 1):
                work[c] = work[c + 1]
            k -= 1
            continue
        Ap = A @ p
        slack = A @ d - r
        alpha, block = 1.0, -1
        for j in range(m):
            if not inwork[j] and Ap[j] < 0.0:
                a = max(slack[j], 0.0) / -Ap[j]
                if a < alpha:
                    alpha, block = a, j
        d = d + alpha * p
        if block >= 0:
            work[k] = block
            inwork[block] = True
            k += 1
        else:
            full_step = pmax
    x = w + d
    if _infeasibility(x, gidx, gptr) > 0.0:
        x = _project_W(x, gidx, gptr)
    return x - w, ok


# -- the Newton projection (nmdp_pgm.project) --------------------------------------------------

@numba.njit(cache=True)
def _project(cG, kG, rG, wG, nG, cJ, kJ, rJ, wJ, x, theta, w, n, tol, max_iter, polish, cache_x, cache_J
             ):  # pragma: no cover (compiled)
    """``(theta, converged, iterations)``; ``x`` the argument buffer (its ``p`` part set)."""
    th = theta.copy()
    _set(x, th, w)
    Gv = _ev(cG, kG, rG, wG, x, nG)
    nrm = _norm2(Gv)
    for it in range(max_iter + 1):
        ninf = _ninf(Gv)
        if not math.isfinite(ninf):
            return th, False, it
        if ninf < tol:
            for _ in range(polish):
                _set(x, th, w)
                J = _jac(cJ, kJ, rJ, wJ, x, n, cache_x, cache_J)
                try:
                    cand = th - np.linalg.solve(J, Gv)
                except Exception:  # noqa: BLE001
                    break
                _set(x, cand, w)
                Gc = _ev(cG, kG, rG, wG, x, nG)
                nc = _norm2(Gc)
                if not (math.isfinite(nc) and nc < nrm):
                    break
                th, Gv, nrm = cand, Gc, nc
                it += 1
            return th, True, it
        if it == max_iter:
            break
        _set(x, th, w)
        J = _jac(cJ, kJ, rJ, wJ, x, n, cache_x, cache_J)
        if not _finite(J):
            return th, False, it
        try:
            step = np.linalg.solve(J, Gv)
        except Exception:  # noqa: BLE001
            return th, False, it
        if not _finite(step):
            return th, False, it
        alpha = 1.0
        found = False
        cand = th
        Gc = Gv
        nc = nrm
        for _ in range(41):
            cand = th - alpha * step
            _set(x, cand, w)
            Gc = _ev(cG, kG, rG, wG, x, nG)
            nc = _norm2(Gc)
            if math.isfinite(nc) and nc < nrm:
                found = True
                break
            alpha *= 0.5
        if not found:
            return th, False, it + 1
        th, Gv, nrm = cand, Gc, nc
    return th, False, max_iter


@numba.njit(cache=True)
def _reduced(cJ, kJ, rJ, wJ, cW, kW, rW, wW, cKg, kKg, rKg, wKg, cKh, kKh, rKh, wKh, x, theta, w, n, n_w,
             cache_x, cache_J):  # pragma: no cover (compiled)
    """``(g, H, code)``: code 0, or 2 (singular) / 3 (not finite) as ``nmdp_pgm``'s failures."""
    _set(x, theta, w)
    A = _jac(cJ, kJ, rJ, wJ, x, n, cache_x, cache_J)
    Gw = _mat(_ev(cW, kW, rW, wW, x, n * n_w), n, n_w)
    if not (_finite(A) and _finite(Gw)):
        return np.zeros(n_w), np.zeros((n_w, n_w)), 3
    try:
        Jw = -np.linalg.solve(A, Gw)
    except Exception:  # noqa: BLE001
        return np.zeros(n_w), np.zeros((n_w, n_w)), 2
    Kg = _ev(cKg, kKg, rKg, wKg, x, n)
    Kh = _mat(_ev(cKh, kKh, rKh, wKh, x, n * n), n, n)
    JwT = np.ascontiguousarray(Jw.T)
    g = JwT @ Kg
    H = (JwT @ Kh) @ Jw
    H = 0.5 * (H + H.T)
    if not (_finite(g) and _finite(H)):
        return g, H, 3
    return g, H, 0


@numba.njit(cache=True)
def run_pgm(cG, kG, rG, wG, cJ, kJ, rJ, wJ, cW, kW, rW, wW, cK, kK, rK, wK, cKg, kKg, rKg, wKg,
            cKh, kKh, rKh, wKh,
            p, theta0, w0, gidx, gptr, beta0, eta, beta_min, beta_max, tol_d, tol_decrease,
            max_outer, tol, max_newton, tol_stationarity, max_polish):  # pragma: no cover (compiled)
    """One run of ``nmdp_pgm.pgm``'s loop (``cX, kX, rX, wX``: code, constants, runs and work of tape X;
    ``cJ`` is ``G_theta`` or ``G_theta_zo``). Returns ``(theta, w, K, outer, qp_solves,
    projections, beta, failure, stop, history, n_history)`` (codes: :data:`FAILURES`,
    :data:`STOPS`). Steps below ``tol_d`` at a point not yet stationary are taken as in
    ``nmdp_pgm._loop`` (at most ``max_polish``)."""
    n = theta0.shape[0]
    n_w = w0.shape[0]
    x = np.zeros(n + n_w + p.shape[0])
    x[n + n_w:] = p
    w = _project_W(w0, gidx, gptr)
    n_newton = 0
    qp_solves = 0
    outer = 0
    beta = beta0
    history = np.full(max_outer + 1, np.nan)
    cache_x = np.full(x.shape[0], np.nan)
    cache_J = np.zeros((n, n))
    theta, ok, it = _project(cG, kG, rG, wG, n, cJ, kJ, rJ, wJ, x, theta0, w, n, tol, max_newton, 1, cache_x, cache_J)
    n_newton += it
    failure = 0 if ok else 1
    K = np.nan
    if ok:
        _set(x, theta, w)
        K = _ev(cK, kK, rK, wK, x, 1)[0]
    history[0] = K
    nh = 1
    stop = 0
    K_new = np.nan
    w_new = w
    th_new = theta
    polish = 0
    polish_stat = np.inf
    while failure == 0 and stop == 0:
        if outer >= max_outer:
            stop = 1
            break
        g, H, code = _reduced(cJ, kJ, rJ, wJ, cW, kW, rW, wW, cKg, kKg, rKg, wKg, cKh, kKh, rKh, wKh, x, theta,
                              w, n, n_w, cache_x, cache_J)
        if code != 0:
            failure = code
            break
        stat = _stationarity(w, g, gidx, gptr)
        if stat == 0.0:
            stop = 2
            break
        if polish > 0 and stat >= polish_stat:  # the steps below tol_d stopped helping
            stop = 3
            break
        tiny = False
        while True:
            if beta > beta_max:
                failure = 4
                break
            P = H + beta * np.eye(n_w)
            d, qp_ok = _prox_qp(g, P, w, gidx, gptr)
            qp_solves += 1
            if not qp_ok:
                failure = 5
                break
            tiny = (np.max(np.abs(d)) if n_w else 0.0) < tol_d
            if tiny and (stat <= tol_stationarity or polish >= max_polish):
                stop = 3
                break
            w_new = w + d
            th_new, ok, it = _project(cG, kG, rG, wG, n, cJ, kJ, rJ, wJ, x, theta, w_new, n, tol, max_newton, 1,
                                      cache_x, cache_J)
            n_newton += it
            K_new = np.nan
            if ok:
                _set(x, th_new, w_new)
                K_new = _ev(cK, kK, rK, wK, x, 1)[0]
            if tiny:
                if not ok:
                    stop = 3
                break
            if ok and K_new < K:
                break
            beta *= eta
        if failure != 0 or stop != 0:
            break
        decrease = K - K_new
        theta, w, K = th_new, w_new, K_new
        history[nh] = K
        nh += 1
        outer += 1
        if tiny:
            polish += 1
            polish_stat = stat
            continue
        at_floor = beta <= beta_min * (1.0 + 1e-12)
        beta = max(beta / eta, beta_min)
        if decrease < tol_decrease and at_floor:
            stop = 4
    return theta, w, K, outer, qp_solves, n_newton, beta, failure, stop, history, nh
