"""The feasible interior point (FIP) method of Trinkle, Pang, Sudarsky and Lo (1995), Appendix B.

LCP(r, M) in the paper's notation: find ``(w, z) >= 0`` with ``w = r + M z`` and ``w^T z = 0``
(``r`` is this package's ``q``). The method keeps every iterate in the strictly feasible set
``F+ = {(w, z) > 0 : w = r + M z}`` and drives the complementary gap ``w^T z`` to zero.

Phase I (the paper's "Phase I simplex-type procedure") is the linear program

    maximize t   subject to   r + M z >= t e,   z >= t e,   t <= 1,

solved with HiGHS through :func:`scipy.optimize.linprog`. It is always feasible (``z = 0`` with
``t = min(0, min r)``) and bounded (``t <= 1``), so no artificial bound on ``z`` is needed. If its
optimum ``t* <= nfp_tol`` there is no strictly feasible pair and the method cannot start: status
``infeasible`` with the paper's "NFP" (Tables 2 and 3).

Phase II, from ``(w^k, z^k)`` in ``F+`` with ``mu_k = (w^k)^T z^k / n``:

* direction, equation (54): ``-dw + M dz = 0`` and ``Z dw + W dz = -w o z + beta_k mu_k e``,
  solved as the reduced system ``(W + Z M) dz = -w o z + beta_k mu_k e``, ``dw = M dz``;
* step: ``theta_bar = min(1, -w_i/dw_i (dw_i < 0), -z_i/dz_i (dz_i < 0))``,
  ``theta_0 = eta * theta_bar``, and ``theta = rho^m theta_0`` with ``m`` the smallest nonnegative
  integer satisfying the Armijo condition (55) on the potential
  ``Phi(w, z) = (n + zeta) log(w^T z) - sum_i log(w_i z_i)``.

Our reading of the garbled (55) is

    Phi(w + rho^m theta_0 dw, z + rho^m theta_0 dz) - Phi(w, z) <= -sigma (1 - beta_k) zeta rho^m theta_0.

It is the standard Armijo rule because the directional derivative of ``Phi`` along (54) is at most
``-(1 - beta_k) zeta``: with ``z^T dw + w^T dz = -(1 - beta) w^T z`` and
``sum_i (z_i dw_i + w_i dz_i)/(w_i z_i) = -n + beta mu sum_i 1/(w_i z_i)`` one gets
``grad Phi . d = -(1 - beta) zeta + beta (n - mu sum_i 1/(w_i z_i)) <= -(1 - beta) zeta`` by the
arithmetic-harmonic mean inequality.

The centering parameters follow Step 3's rule ``beta_{k+1} in [0, beta_k]`` as
``beta_{k+1} = max(beta_min, beta_factor * beta_k)`` (defaults 0.5, 0.8, 0.1: on random P0 LCPs
this needs fewer iterations than a constant ``beta`` and is more robust than letting ``beta -> 0``).

Termination: the paper stops when ``w^T z <= 1e-6``. We then purify the interior iterate with the
active-set polish :func:`~contactmp.solvers.lcp.problem.polish_lcp`; if the polished candidate passes the
independent check ``||min(z, M z + q)||_inf <= tol`` it is returned as solved, otherwise the gap
target is divided by 100 and the iteration continues, up to ``max_iter`` (the paper's 300).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linprog

from contactmp.progress import Reporter, watch_for
from contactmp.result import Result, Status
from contactmp.solvers.lcp.problem import lcp_residual, polish_lcp, validate_lcp, verified_result
from contactmp.solvers.options import SolverOptions, check_bool, check_int, check_real

NAME = "fip"

#: at most this many step halvings (rho^m) before the line search is declared failed
_MAX_BACKTRACKS = 60


@dataclass
class Options(SolverOptions):
    """Options of the FIP method (Appendix B); defaults are the paper's where it gives them.

    Attributes
    ----------
    tol : independent residual ``||min(z, Mz + q)||_inf`` a solution must meet.
    gap_tol : the paper's ``epsilon``: first purification once ``w^T z <= gap_tol`` (paper 1e-6).
    max_iter : interior-point iterations (paper: 300). Phase I is not counted.
    beta0 : the first centering parameter ``beta_0`` in ``[0, 1)``.
    beta_factor : ``beta_{k+1} = beta_factor * beta_k`` (in ``(0, 1]``; keeps ``beta`` nonincreasing
        as Step 3 requires).
    beta_min : floor of ``beta_k`` in ``[0, 1)`` (the floor used is ``min(beta_min, beta0)``).
    zeta : the potential's weight ``zeta > 0``; ``None`` means ``sqrt(n)``.
    rho : backtracking factor in ``(0, 1)``.
    sigma : Armijo constant in ``(0, 1)``.
    eta : fraction of the step to the boundary, in ``(0, 1)``.
    purify : polish the interior iterate into an exact complementary candidate.
    nfp_tol : Phase I declares "no strictly feasible point" when its optimum ``t* <= nfp_tol``.
    """

    tol: float = 1e-8
    gap_tol: float = 1e-6
    max_iter: int = 300
    beta0: float = 0.5
    beta_factor: float = 0.8
    beta_min: float = 0.1
    zeta: float | None = None
    rho: float = 0.5
    sigma: float = 1e-4
    eta: float = 0.9995
    purify: bool = True
    nfp_tol: float = 1e-9

    def check(self) -> None:
        """Reject values outside the ranges Appendix B allows."""
        super().check()
        check_real("gap_tol", self.gap_tol, 0.0)
        check_real("beta0", self.beta0, 0.0, 1.0, lo_open=False)
        check_real("beta_factor", self.beta_factor, 0.0, 1.0, hi_open=False)
        check_real("beta_min", self.beta_min, 0.0, 1.0, lo_open=False)
        for name in ("rho", "sigma", "eta"):
            check_real(name, getattr(self, name), 0.0, 1.0)
        check_real("nfp_tol", self.nfp_tol, 0.0, lo_open=False)
        check_real("zeta", self.zeta, 0.0, none_ok=True)
        check_int("max_iter", self.max_iter, 0)
        check_bool("purify", self.purify)


def phase_one(M: np.ndarray, q: np.ndarray, time_limit: float | None = None) -> tuple[float, np.ndarray | None, str]:
    """Phase I: ``max t`` s.t. ``q + M z >= t e``, ``z >= t e``, ``t <= 1`` (an LP, HiGHS).

    Returns ``(t*, z, message)``: ``t* > 0`` means ``(w, z) = (q + M z, z) >= t* e`` is strictly
    feasible. ``z`` is ``None`` (and ``t* = nan``) when the LP solver failed (or ran out of its
    ``time_limit`` seconds, HiGHS' own limit).
    """
    n = q.shape[0]
    eye = np.eye(n)
    ones = np.ones((n, 1))
    # variables x = (z, t); minimize -t
    c = np.zeros(n + 1)
    c[-1] = -1.0
    a_ub = np.vstack([np.hstack([-M, ones]), np.hstack([-eye, ones])])
    b_ub = np.concatenate([q, np.zeros(n)])
    bounds = [(None, None)] * n + [(None, 1.0)]
    lp = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs",
                 options=None if time_limit is None else {"time_limit": max(float(time_limit), 1e-3)})
    if lp.status != 0 or lp.x is None:
        return float("nan"), None, f"Phase I LP failed (HiGHS status {lp.status}: {lp.message})"
    z = np.asarray(lp.x[:n], dtype=np.float64)
    t = float(lp.x[-1])
    # the LP optimum is accurate to HiGHS's feasibility tolerance: report the t the point achieves
    t_true = float(min(np.min(z), np.min(q + M @ z)))
    return min(t, t_true), z, "Phase I LP optimal"


def potential(w: np.ndarray, z: np.ndarray, zeta: float) -> float:
    """The merit ``Phi(w, z) = (n + zeta) log(w^T z) - sum_i log(w_i z_i)`` for ``(w, z) > 0``."""
    n = w.shape[0]
    return float((n + zeta) * np.log(w @ z) - np.sum(np.log(w)) - np.sum(np.log(z)))


def direction(M: np.ndarray, w: np.ndarray, z: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """The search direction ``(dw, dz)`` of equation (54) at ``(w, z) > 0``.

    ``[-I M; Z W] [dw; dz] = [0; -w o z + beta mu e]`` with ``mu = w^T z / n``, solved as
    ``(W + Z M) dz = -w o z + beta mu e`` and ``dw = M dz``. Raises ``LinAlgError`` if singular
    (it is not when ``M`` is P0 and ``(w, z) > 0``).
    """
    n = w.shape[0]
    mu = float(w @ z) / n
    a = z[:, None] * M
    a[np.diag_indices(n)] += w
    dz = np.linalg.solve(a, -w * z + beta * mu)
    return M @ dz, dz


def _max_step(v: np.ndarray, dv: np.ndarray) -> float:
    """Largest ``theta`` in ``(0, inf]`` with ``v + theta dv >= 0`` (``v > 0``)."""
    neg = dv < 0
    if not neg.any():
        return float("inf")
    return float(np.min(-v[neg] / dv[neg]))


def _best_candidate(M: np.ndarray, q: np.ndarray, z: np.ndarray, purify: bool) -> tuple[np.ndarray, bool]:
    """The interior iterate or its polished version, whichever has the smaller LCP residual."""
    if not purify:
        return z, False
    cand = polish_lcp(M, q, z)
    if cand is not None and lcp_residual(M, q, cand) <= lcp_residual(M, q, z):
        return cand, True
    return z, False


def solve(M: Any, q: Any, options: Options | None = None, progress: Reporter | None = None,
          **overrides: Any) -> Result:
    """Solve LCP(q, M) with the feasible interior point method of Appendix B.

    Returns a :class:`Result` whose ``x`` is ``z``; ``iterations`` counts interior-point
    iterations (Phase I excluded; its time is ``extras["lp_time_s"]``). Statuses: ``solved``
    (independently verified), ``infeasible`` (Phase I found no strictly feasible point: message
    "NFP ...", ``extras["nfp"] = True``), ``max_iter`` (with ``extras["gap"]`` and
    ``extras["paper_criterion_met"]``, whether ``w^T z <= gap_tol`` was ever reached),
    ``time_limit`` and ``numerical_error`` (singular direction system, line-search failure,
    non-finite values).

    With a ``time_limit`` Phase I gets what is left as HiGHS' own limit, and Phase II checks the
    clock before every iteration; with it (or a ``progress`` reporter, see
    :mod:`contactmp.progress`) every iterate's ``||min(z, M z + q)||_inf`` is checked. When the
    time is up the answer is the checked iterate of least residual, not purified (``z = 0`` if the
    time ran out in Phase I).
    """
    t_start = time.perf_counter()
    M, q = validate_lcp(M, q)
    opts = Options.build(options, **overrides)
    watch = watch_for(NAME, opts.time_limit, progress, t_start)
    n = q.shape[0]
    zeta = float(np.sqrt(n)) if opts.zeta is None else float(opts.zeta)
    base: dict[str, Any] = {"nfp": False}

    def finish(z: np.ndarray, status: Status, k: int, msg: str, **extra: Any) -> Result:
        return verified_result(M, q, z, solver=NAME, claimed=status, tol=opts.tol,
                               iterations=k, t_start=t_start, message=msg, **base, **extra)

    # Phase I ------------------------------------------------------------------------------
    t_lp = time.perf_counter()
    t_star, z0, lp_msg = phase_one(M, q, None if watch is None or not watch.limited else watch.left())
    base["lp_time_s"] = time.perf_counter() - t_lp
    base["phase1_t"] = t_star
    if z0 is None:
        if watch is not None and watch.limited and (watch.expired() or "(HiGHS status 1:" in lp_msg):
            return finish(np.zeros(n), Status.TIME_LIMIT, 0,
                          f"time limit {watch.limit:g} s reached in Phase I ({lp_msg}); z = 0 is returned")
        return finish(np.zeros(n), Status.NUMERICAL_ERROR, 0, lp_msg)
    if not t_star > opts.nfp_tol:
        base["nfp"] = True
        why = ("the LCP is infeasible" if t_star < -opts.nfp_tol
               else "the feasible set has empty interior")
        # The method never starts, so it returns no iterate (x is NaN); the Phase I point is kept.
        base["phase1_z"] = z0
        # t* < 0 proves that no z >= 0 has M z + q >= 0 (t = 0 would be feasible otherwise): the
        # LCP has no solution. t* ~ 0 only says the interior is empty: a solution may still exist.
        status = Status.INFEASIBLE if t_star < -opts.nfp_tol else Status.NOT_SOLVED
        return finish(np.full(n, np.nan), status, 0,
                      f"NFP: no strictly feasible point (Phase I optimum t* = {t_star:.3e}; {why})")

    # Phase II -----------------------------------------------------------------------------
    z = z0.copy()
    w = q + M @ z
    beta = float(opts.beta0)
    beta_floor = min(float(opts.beta_min), beta)
    gap_target = float(opts.gap_tol)
    paper_met = False
    k_paper: int | None = None  # the iteration at which the paper's criterion w^T z <= gap_tol held
    backtracks = 0
    k = 0
    gap = float(w @ z)
    phi = potential(w, z, zeta)

    def stop(status: Status, msg: str) -> Result:
        cand, polished = _best_candidate(M, q, z, opts.purify)
        return finish(cand, status, k, msg, gap=gap, paper_criterion_met=paper_met, k_paper=k_paper,
                      purified=polished, beta=beta, backtracks=backtracks)

    while True:
        if not (np.isfinite(gap) and gap > 0.0 and np.isfinite(phi)):
            return stop(Status.NUMERICAL_ERROR, f"gap {gap:.3e} underflowed or is not finite")
        if gap <= opts.gap_tol and not paper_met:
            paper_met, k_paper = True, k
        if gap <= gap_target:
            cand, polished = _best_candidate(M, q, z, opts.purify)
            if lcp_residual(M, q, cand) <= opts.tol:
                return finish(cand, Status.SOLVED, k,
                              f"gap {gap:.3e} <= {gap_target:.1e}" + ("; purified" if polished else ""),
                              gap=gap, paper_criterion_met=paper_met, k_paper=k_paper,
                              purified=polished, beta=beta, backtracks=backtracks)
            gap_target /= 100.0
            continue
        if k >= opts.max_iter:
            return stop(Status.MAX_ITER, f"{k} iterations, gap {gap:.3e}")
        if watch is not None:
            watch.offer(z, lcp_residual(M, q, z), k)
            if watch.expired():  # the checked iterate of least residual (no purification: time is up)
                return finish(watch.x, Status.TIME_LIMIT, k,
                              f"time limit {watch.limit:g} s reached after {k} iterations (gap {gap:.3e}); the "
                              f"best iterate checked (iteration {watch.iteration}) is returned", gap=gap,
                              paper_criterion_met=paper_met, k_paper=k_paper, purified=False, beta=beta,
                              backtracks=backtracks)
        # Step 1: the direction of (54), reduced to (W + Z M) dz = -w o z + beta mu e
        try:
            dw, dz = direction(M, w, z, beta)
        except np.linalg.LinAlgError:
            return stop(Status.NUMERICAL_ERROR, f"singular system (W + Z M) at iteration {k}")
        if not (np.isfinite(dz).all() and np.isfinite(dw).all()):
            return stop(Status.NUMERICAL_ERROR, f"non-finite direction at iteration {k}")
        # Step 2: step to the boundary, then Armijo on the potential, condition (55)
        theta_bar = min(1.0, _max_step(w, dw), _max_step(z, dz))
        theta0 = opts.eta * theta_bar
        theta = theta0
        accepted = False
        for _m in range(_MAX_BACKTRACKS):
            w_new = w + theta * dw
            z_new = z + theta * dz
            if (w_new > 0).all() and (z_new > 0).all():
                phi_new = potential(w_new, z_new, zeta)
                if np.isfinite(phi_new) and phi_new - phi <= -opts.sigma * (1.0 - beta) * zeta * theta:
                    accepted = True
                    break
            theta *= opts.rho
            backtracks += 1
        if not accepted:
            return stop(Status.NUMERICAL_ERROR,
                        f"line search on the potential failed at iteration {k} (gap {gap:.3e})")
        # Step 3: update; beta nonincreasing
        w, z, phi = w_new, z_new, phi_new
        gap = float(w @ z)
        k += 1
        beta = max(beta_floor, beta * opts.beta_factor)
