"""The three-dimensional frictional contact problem "fc3d" and what every cone solver shares.

fc3d(W, q, mu) (Siconos' FrictionContact3D, the velocity-level local problem of time-stepping
simulators): with contacts ordered (normal, tangent 1, tangent 2), find r and u = W r + q with

    r_j in K_j = {(r_n, r_T) : ||r_T|| <= mu_j r_n}            (Coulomb's cone)
    u_hat_j = u_j + mu_j ||u_jT|| e_n  in K_j^* (the dual cone)  (De Saxce's modified velocity)
    r_j . u_hat_j = 0

equivalently ``r = P_K(r - u_hat)``. The independent check of any answer is the natural-map
residual ``||r - P_K(r - u_hat)|| / max(||q||, ||r||, ||u||)`` (Siconos 4.4's fc3d_compute_error,
see ``tests/data/fc3d/README.md``). The instantaneous Coulomb model of Trinkle et al. section 3.1
has the same structure at the acceleration level (forces c, accelerations a).
"""
from __future__ import annotations

import copy
import math
import time
from typing import Any

import numba
import numpy as np

from contactmp.progress import Reporter, Watch, watch_for
from contactmp.result import Result, Status
from contactmp.solvers.options import judge_claim
from contactmp.validate import validate_fc3d  # noqa: F401 (re-exported: the solvers import it from here)


_OPTIONS_CACHE: dict[tuple[Any, ...], Any] = {}


def build_options(cls: Any, options: Any, overrides: dict[str, Any]) -> Any:
    """``cls.build(options, **overrides)``, memoized when ``options`` is None and every override is
    a plain number, string, bool or None (the auto mode's calls): building and checking a
    dataclass costs more than a small solve. ``time_limit`` (which the auto mode changes on every
    call) is left out of the key and set on a copy when it is a positive number; anything else
    goes through ``cls.build`` and its checks. Solvers treat their options as read-only."""
    if options is not None or not all(
        v is None or isinstance(v, (bool, int, float, str)) for v in overrides.values()
    ):
        return cls.build(options, **overrides)
    rest = dict(overrides)
    tl = rest.pop("time_limit", None)
    if "time_limit" in overrides and (isinstance(tl, bool) or not isinstance(tl, (int, float)) or not tl > 0):
        return cls.build(options, **overrides)  # let the class reject (or accept) it
    key = (cls, *sorted((k, type(v).__name__, v) for k, v in rest.items()))
    base = _OPTIONS_CACHE.get(key)
    if base is None:
        base = cls.build(None, **rest)
        if len(_OPTIONS_CACHE) < 256:
            _OPTIONS_CACHE[key] = base
    if "time_limit" not in overrides:
        return base
    opts = copy.copy(base)
    opts.time_limit = tl
    return opts


@numba.njit(cache=True)
def _project_one(n: float, t1: float, t2: float, m: float) -> tuple[float, float, float]:
    """Euclidean projection of ``(n, t1, t2)`` onto the cone ``{||t|| <= m n}``."""
    s = math.sqrt(t1 * t1 + t2 * t2)
    if s <= m * n:  # inside
        return n, t1, t2
    if m * s <= -n:  # inside the polar cone
        return 0.0, 0.0, 0.0
    a = (n + m * s) / (1.0 + m * m)  # onto the boundary ray in the plane of (n, t)
    return a, m * a * t1 / s, m * a * t2 / s


@numba.njit(cache=True)
def project_cone(x: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``x`` (3 nc) onto the product of Coulomb cones ``K_mu``."""
    out = np.empty_like(x)
    for j in range(mu.shape[0]):
        out[3 * j], out[3 * j + 1], out[3 * j + 2] = _project_one(x[3 * j], x[3 * j + 1], x[3 * j + 2], mu[j])
    return out


@numba.njit(cache=True)
def _power_of_two_scale(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> float:
    """``2^-e`` with ``2^(e-1) <= max |a, b, c| < 2^e`` (1 when all are 0): multiplying by it is exact
    and brings the entries near 1, so sums of squares neither overflow (entries ~1e300) nor
    underflow (~1e-300). The residuals below are positively homogeneous of degree 0 in (q, r, u)."""
    big = 0.0
    for x in (a, b, c):
        for i in range(x.shape[0]):
            big = max(big, abs(x[i]))
    if big == 0.0:
        return 1.0
    return math.ldexp(1.0, -math.frexp(big)[1])


@numba.njit(cache=True)
def natural_map_residual(q: np.ndarray, mu: np.ndarray, r: np.ndarray, u: np.ndarray) -> float:
    """The normalized natural-map residual ``||r - P_K(r - u_hat)|| / max(||q||, ||r||, ||u||)`` of
    ``r`` given ``u = W r + q`` (however ``W r`` was formed: dense here, CSR in NSGS); inf when
    ``r`` or ``u`` is not finite. The one fc3d residual of contactmp.

    Computed on ``(q, r, u)`` times an exact power-of-two scale (:func:`_power_of_two_scale`), so
    that data near the float limits is judged as faithfully as data near 1; no temporaries."""
    m = q.shape[0]
    for i in range(m):
        if not (np.isfinite(r[i]) and np.isfinite(u[i])):
            return np.inf
    c = _power_of_two_scale(q, r, u)
    err = nq = nr = nu = 0.0
    for j in range(mu.shape[0]):
        rn, r1, r2 = r[3 * j] * c, r[3 * j + 1] * c, r[3 * j + 2] * c
        un, u1, u2 = u[3 * j] * c, u[3 * j + 1] * c, u[3 * j + 2] * c
        p0, p1, p2 = _project_one(rn - (un + mu[j] * math.sqrt(u1 * u1 + u2 * u2)), r1 - u1, r2 - u2, mu[j])
        err += (rn - p0) ** 2 + (r1 - p1) ** 2 + (r2 - p2) ** 2
        nr += rn * rn + r1 * r1 + r2 * r2
        nu += un * un + u1 * u1 + u2 * u2
    for i in range(m):
        nq += (q[i] * c) ** 2
    err = math.sqrt(err)
    scale = max(math.sqrt(nq), math.sqrt(nr), math.sqrt(nu))
    if not np.isfinite(err):
        return np.inf
    return err / scale if scale > 0.0 else err


@numba.njit(cache=True)
def residual_kernel(W: np.ndarray, q: np.ndarray, mu: np.ndarray, r: np.ndarray, u: np.ndarray) -> float:
    """u <- W r + q (dense); return :func:`natural_map_residual` (inf on non-finite data)."""
    m = q.shape[0]
    for i in range(m):
        if not np.isfinite(r[i]):
            return np.inf
    for i in range(m):
        s = q[i]
        for k in range(m):
            s += W[i, k] * r[k]
        if not np.isfinite(s):  # W r + q overflowed: nothing can be verified
            return np.inf
        u[i] = s
    return natural_map_residual(q, mu, r, u)


@numba.njit(cache=True)
def dual_violation(q: np.ndarray, mu: np.ndarray, u: np.ndarray) -> float:
    """dist(u_hat, K_mu^*) / max(||q||, ||u||): how far the modified velocity is from the dual cone.

    K_mu^* = {v : mu ||v_T|| <= v_n} (for mu = 0 the half-space v_n >= 0). Siconos' normalisation
    divides by ||r|| too, which a huge r can exploit when no solution exists (W = 0, q_n < 0: any
    r_n ~ 1e8 reaches 1e-8); this second measure is scaled by the velocities only.
    """
    c = _power_of_two_scale(q, u, u)  # exact; the measure is homogeneous of degree 0
    q, u = q * c, u * c
    d2 = 0.0
    nq = nu = 0.0
    for j in range(mu.shape[0]):
        un, u1, u2 = u[3 * j], u[3 * j + 1], u[3 * j + 2]
        s = math.sqrt(u1 * u1 + u2 * u2)
        vn = un + mu[j] * s
        if mu[j] == 0.0:
            if vn < 0.0:
                d2 += vn * vn
        elif not mu[j] * s <= vn:
            m = 1.0 / mu[j]  # K^* is the cone of opening 1/mu
            if m * vn <= -s:  # in the polar of K^*: the distance is the norm
                d2 += vn * vn + s * s
            else:
                a = (vn + m * s) / (1.0 + m * m)
                d2 += (vn - a) ** 2 + (s - m * a) ** 2
    for i in range(q.shape[0]):
        nq += q[i] * q[i]
        nu += u[i] * u[i]
    scale = max(math.sqrt(nq), math.sqrt(nu))
    d = math.sqrt(d2)
    return d / scale if scale > 0.0 else d


def fc3d_residual(W: np.ndarray, q: np.ndarray, mu: np.ndarray, r: Any) -> float:
    """``||r - P_K(r - u_hat)|| / max(||q||, ||r||, ||u||)`` with ``u = W r + q`` (0 at a solution)."""
    r = np.ascontiguousarray(r, dtype=np.float64).ravel()
    if r.shape != q.shape:
        return float("inf")
    return float(residual_kernel(W, q, mu, r, np.empty_like(q)))


def residual_watch(solver: str, time_limit: float | None, progress: Reporter | None, t0: float,
                   W: np.ndarray, q: np.ndarray, mu: np.ndarray, r: np.ndarray
                   ) -> tuple[Watch | None, Any]:
    """``(watch, offer)`` for an fc3d solve whose iterate is the array ``r`` (updated in place), or
    ``(None, None)`` when neither a time limit nor a reporter is given. ``offer(k)`` hands ``watch``
    the iterate at iteration ``k`` with its independent natural-map residual; the watch keeps the
    best one for a run cut short and reports progress."""
    watch = watch_for(solver, time_limit, progress, t0)
    if watch is None:
        return None, None
    u = np.empty(q.shape[0])

    def offer(k: int) -> None:
        watch.offer(r, residual_kernel(W, q, mu, r, u), k)

    return watch, offer


def verified_fc3d_result(W: np.ndarray, q: np.ndarray, mu: np.ndarray, r: np.ndarray | None, *, solver: str,
                         claimed: Status, tol: float, iterations: int, t_start: float, message: str = "",
                         **extras: Any) -> Result:
    """A :class:`Result` for an fc3d answer ``r``, with the solver's claim checked independently.

    As :func:`contactmp.solvers.lcp.problem.verified_result`: a claimed ``SOLVED`` above ``tol`` becomes
    ``NOT_SOLVED``; an unclaimed iterate that passes the check becomes ``SOLVED``. Passing means the
    natural-map residual (Siconos' normalisation, the judge) is ``<= tol`` AND, as a guard against gross
    infeasibility, the dual-cone violation of ``u_hat`` scaled by ``max(||q||, ||u||)`` (which a huge
    ``r`` cannot dilute) is ``<= sqrt(tol)``: the guard rejects "solutions" whose small residual comes
    only from dividing by a huge ``||r||`` (``W = 0``, ``q_n < 0``: no solution, yet ``r_n = 1e9``
    passes Siconos' measure at 1e-9), while honest iterates at Siconos' tolerance pass (on the shared
    problems ``||r||`` exceeds ``||q||`` by up to 1e4, and velocity errors of 1e-4 then remain).
    ``extras["u"]`` holds ``W r + q`` and ``extras["dual_violation"]`` the second measure.
    """
    m = q.shape[0]
    r = np.full(m, np.nan) if r is None else np.ascontiguousarray(r, dtype=np.float64).ravel()
    u = np.empty(m)
    res = float(residual_kernel(W, q, mu, r, u)) if r.shape == q.shape else float("inf")
    dual = float(dual_violation(q, mu, u)) if np.isfinite(res) else float("inf")
    return checked_fc3d_result(r, u, res, dual, solver=solver, claimed=claimed, tol=tol,
                               iterations=iterations, t_start=t_start, message=message, **extras)


def ending_status(reason: str, done: str, res: float) -> tuple[Status, str] | None:
    """The claim and message of an fc3d iteration that ended ``"converged"``, on its ``"budget"`` or
    on its ``"time"`` limit after ``done`` (e.g. ``"12 iterations"``) at natural-map residual ``res``;
    None for any other ending (the solver says what that means)."""
    if reason == "converged":
        return Status.SOLVED, f"natural-map residual {res:.3e} <= tol"
    if reason == "budget":
        return Status.MAX_ITER, f"{done}, natural-map residual {res:.3e}"
    if reason == "time":
        return Status.TIME_LIMIT, f"time limit after {done}, residual {res:.3e}"
    return None


def checked_fc3d_result(r: np.ndarray, u: np.ndarray, res: float, dual: float, *, solver: str, claimed: Status,
                        tol: float, iterations: int, t_start: float, message: str = "", **extras: Any) -> Result:
    """The judgment of :func:`verified_fc3d_result` once its two measures are known: ``res`` (the
    natural-map residual of ``r``, from ``residual_kernel``, which also wrote ``u = W r + q``) and
    ``dual`` (``dual_violation(q, mu, u)``, ``inf`` when ``res`` is not finite). Passing means
    ``res <= tol`` and ``dual <= sqrt(tol)``. Used by ``verified_fc3d_result`` and by the compiled
    quick pass of the default solver (which computes both measures inside its one call), so the
    two judge alike."""
    passed = res <= tol and dual <= math.sqrt(tol)
    why = ""
    if claimed is Status.SOLVED and not passed:
        why = (f"the natural-map residual {res:.3e} or the dual-cone violation {dual:.3e} exceeds its "
               f"bound ({tol:.1e}, resp. sqrt(tol) = {math.sqrt(tol):.1e})")
    status, message = judge_claim(claimed, passed, message, why, res)
    extras.setdefault("u", u)
    extras.setdefault("dual_violation", dual)
    return Result(status, r, solver, res, tol, int(iterations), time.perf_counter() - t_start, message, extras)
