"""The projected gradient method (PGM) for one NMDP step, and the adaptive time step.

One NMDP step (Pan and Hauser, notes ``nmdp.md``) is the program

    minimize_{theta, w}  K(theta)   s.t.  G(theta, w) = 0,  w >= 0,  1^T w_i <= 1  (each contact i)

with ``theta = q_{n+1}``, ``G`` the backward-Euler residual (affine in the vertex weights ``w``) and
``K`` the kinetic energy at step n+1. Writing ``theta(w)`` for the root of ``G(., w) = 0`` the
program becomes ``min_{w in W} K(theta(w))`` over the product ``W`` of simplices-with-slack, and
PGM is a proximal Gauss-Newton method on it:

1. *Projection* (:func:`project`): Newton on ``G(., w) = 0`` in ``theta`` with ``w`` fixed; a step is
   accepted only if ``||G||_2`` decreases (halving otherwise); converged when ``||G||_inf < tol``.
2. *Implicit function theorem*: ``J_w = d theta / d w = -(dG/dtheta)^-1 dG/dw``, gradient
   ``g = J_w^T grad K``, Gauss-Newton Hessian ``H = J_w^T (hess K) J_w``.
3. *Proximal QP* (:func:`prox_qp`): ``d = argmin g^T d + 1/2 d^T (H + beta I) d`` s.t. ``w + d in W``,
   solved exactly by a primal active-set method whose KKT conditions are verified.
4. ``w' = w + d``, ``theta' = project(theta, w')``; accept if ``K(theta') < K(theta)`` (then
   ``beta <- max(beta / eta, beta_min)``), else ``beta <- eta beta`` and retry.

The zeroth-order variant (ZOPGM, ``zeroth_order=True``) uses ``G_theta_zo`` (``dG/dtheta`` without
the derivative of the polytope vertices) both as the Newton matrix of the projection (a quasi-Newton
iteration, which still converges to the exact root of ``G``) and in ``J_w``.

The problem is passed duck-typed (``formulations.nmdp.NMDPFunctions`` or any object with the same
attributes): ``n``, ``n_w``, ``groups`` (index arrays of ``w`` per contact), ``q_n``, ``h`` and the
callables ``G(theta, w)``, ``G_theta(theta, w)``, ``G_theta_zo(theta, w)``, ``G_w(theta)``,
``K(theta)``, ``K_grad(theta)``, ``K_hess(theta)``. When it also carries ``tapes`` (the same
functions as CasADi instruction tapes with inputs ``(theta, w, params)``,
:class:`contactmp.solvers.pgm._kernels.PGMTapes`; what :meth:`NMDP.functions
<contactmp.formulations.nmdp.NMDP.functions>` hands out) the loop runs compiled
(:func:`contactmp.solvers.pgm._kernels.run_pgm`, the same steps with LAPACK through numba: its
answers differ from this module's loop by rounding, e.g. ``K`` along the spider's iterations to
1e-13 relative; where the last decreases of ``K`` are at that level a step can be accepted by one
and rejected by the other, and the answers then differ within the tolerances); the check below is
this module's in both cases.

Cost (spider walk, ``benchmarks/nmdp_frame.py``): a frame was dominated by evaluating CasADi
Functions from Python (82 % of a loaded 50 ms frame; ``G_theta`` alone 449 k SX instructions,
1.9 ms a call, from the expanded Lagrangian ``M(q) a + h(q, v)``) and by this module's Python loop
(the rest). With the spider's recursive Newton-Euler dynamics (``G_theta`` 20 k instructions), the
instruction tapes (~40 us a ``G_theta``) and the compiled loop a frame costs 2.7 - 3.5 times the
linearized MDP QP at dt = 10 ms (median). At 50 ms it cost 12 - 20 times, because a frame was 5.7 PGM
runs of the adaptive step on average: most failed runs had stopped on ``||d||_inf < tol_d`` at a
point whose stationarity (1e-6 - 7e-5) failed the check, and the step was halved. There the stiff
contacts' Gauss-Newton curvature (to 5e5) makes the step tiny while the projected gradient is still
above ``tol_stationarity``, and the predicted decrease of such a step (1e-14 - 1e-17) is below the
rounding of ``K`` (~1e-14), so the decrease test rejects it at every ``beta``; the steps below
``tol_d`` (:func:`pgm`) are now taken without that test, each dividing the projected gradient by
10 - 25; with the proximal QP's full-step rule (:func:`prox_qp`) every 50 ms frame of the walk is
one PGM run, 2.9 - 4.1 times the QP (median over two runs; mean 3.8 - 5.3).
ZOPGM on the spider: the zeroth-order projection diverges at the study's steps (its contraction
factor grows like ``k h^2 / m``: 27 - 49 at 50 ms, 1.2 - 2.7 at 10 ms) and its gradient is off by
13 % (h = 1.6 ms) to 440 % (12.5 ms) on frames with a sliding foot; the measurements are in
``benchmarks/nmdp_frame.py``.

Statuses: ``solved`` only after an independent check at the returned point: ``||G||_inf <= tol``,
``w`` in ``W`` (to ``1e-12``) and first-order stationarity of the reduced problem
``||w - P_W(w - g)||_inf <= tol_stationarity`` with the *full* derivative ``G_theta`` (also for
ZOPGM). ``numerical_error`` when a projection diverges, ``beta`` exceeds ``beta_max`` or a
proximal QP fails; ``max_iter`` after ``max_outer`` accepted steps; ``not_solved`` when the loop
stopped (step or decrease below tolerance) at a point that fails the stationarity check.
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np

from contactmp.errors import InputError, check_number
from contactmp.result import Result, Status

__all__ = [
    "project", "pgm", "prox_qp", "qp_kkt_residual",
    "project_W", "stationarity", "adaptive_step",
]

_REQUIRED = ("n", "n_w", "groups", "q_n", "h", "G", "G_theta", "G_theta_zo", "G_w", "K",
             "K_grad", "K_hess")
_FEAS_TOL = 1e-12
#: after a full unblocked step of length ``|p|`` the active-set QP's next step is exactly 0; a
#: computed one below ``QP_ROUNDING_STEP |p|`` is the rounding of the KKT solve and is taken as 0
#: (the compiled method, :mod:`contactmp.solvers.pgm._kernels`, reads it too)
QP_ROUNDING_STEP = 1e-8


# -- the feasible set W = prod_i {w_i >= 0, 1^T w_i <= 1} --------------------------------------

def _check_groups(groups: Any, n_w: int) -> list[np.ndarray]:
    """The groups as int arrays; InputError (field ``groups``) unless disjoint and in range."""
    out: list[np.ndarray] = []
    seen = np.zeros(n_w, dtype=bool)
    try:
        items = list(groups)
    except TypeError:
        raise InputError("groups", f"must be a list of index arrays, got {groups!r}") from None
    for k, g in enumerate(items):
        a = np.asarray(g)
        if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
            raise InputError("groups", f"group {k} must be a 1-D integer index array")
        a = a.astype(int)
        if a.size and (a.min() < 0 or a.max() >= n_w):
            raise InputError("groups", f"group {k} has indices outside [0, {n_w})")
        if seen[a].any() or len(np.unique(a)) != a.size:
            raise InputError("groups", f"group {k} overlaps another group (groups must be disjoint)")
        seen[a] = True
        out.append(a)
    return out


def _simplex_projection(y: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``y`` onto ``{x >= 0, 1^T x <= 1}`` (sort-based, exact; NaN where
    ``y`` is not finite: an overflowed iterate has no projection)."""
    if not np.isfinite(y).all():
        return np.full(y.shape, np.nan)
    x = np.maximum(y, 0.0)
    if x.sum() <= 1.0:
        return x
    u = np.sort(y)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, y.size + 1)
    # the first entry always qualifies (u_1 - (u_1 - 1) = 1 > 0) except to rounding when |u_1| >> 1
    hits = np.flatnonzero(u - css / k > 0)
    rho = int(hits[-1]) if hits.size else 0
    tau = css[rho] / (rho + 1.0)
    return np.maximum(y - tau, 0.0)


def project_W(y: np.ndarray, groups: list[np.ndarray]) -> np.ndarray:
    """``P_W(y)``: the Euclidean projection onto ``W`` (indices in no group: ``w >= 0`` only)."""
    x = np.maximum(np.asarray(y, dtype=float), 0.0)
    for g in groups:
        if g.size:
            x[g] = _simplex_projection(np.asarray(y, dtype=float)[g])
    return x


def _infeasibility(w: np.ndarray, groups: list[np.ndarray]) -> float:
    """``max(-min w, max_i (1^T w_i - 1), 0)``."""
    v = max(0.0, float(-w.min()) if w.size else 0.0)
    for g in groups:
        if g.size:
            v = max(v, float(w[g].sum()) - 1.0)
    return v


def stationarity(w: np.ndarray, g: np.ndarray, groups: list[np.ndarray]) -> float:
    """First-order stationarity of ``min_{w in W} f(w)`` with ``g = grad f(w)``:
    ``||w - P_W(w - g)||_inf`` (zero exactly at KKT points)."""
    return float(np.max(np.abs(w - project_W(w - g, groups)))) if w.size else 0.0


# -- the proximal QP ---------------------------------------------------------------------------

def _constraints(w: np.ndarray, groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``A, r`` with ``W = {w + d : A d >= r}``: rows ``e_j`` (``w_j + d_j >= 0``) then
    ``-1_i^T`` per group (``1^T (w + d)_i <= 1``)."""
    n_w = w.size
    rows = [np.eye(n_w)]
    rhs = [-w]
    for g in groups:
        a = np.zeros((1, n_w))
        a[0, g] = -1.0
        rows.append(a)
        rhs.append(np.array([w[g].sum() - 1.0]))
    return np.vstack(rows), np.concatenate(rhs)


def qp_kkt_residual(P: np.ndarray, g: np.ndarray, w: np.ndarray, groups: list[np.ndarray],
                    d: np.ndarray, lam: np.ndarray) -> float:
    """KKT residual of ``min g^T d + 1/2 d^T P d s.t. w + d in W`` at ``(d, lam)`` (multipliers of
    the rows of :func:`_constraints`): the max of ``||P d + g - A^T lam||_inf``, the primal
    infeasibility, ``max(-lam, 0)`` and ``max |lam_k (A d - r)_k|``."""
    A, r = _constraints(w, groups)
    s = A @ d - r
    return float(max(np.max(np.abs(P @ d + g - A.T @ lam), initial=0.0),
                     np.max(-s, initial=0.0), np.max(-lam, initial=0.0),
                     np.max(np.abs(lam * s), initial=0.0)))


def prox_qp(g: np.ndarray, P: np.ndarray, w: np.ndarray, groups: list[np.ndarray], *,
            max_iter: int | None = None) -> tuple[np.ndarray, np.ndarray, bool, int]:
    """Solve ``d = argmin g^T d + 1/2 d^T P d  s.t.  w + d >= 0,  1^T (w + d)_i <= 1`` exactly.

    ``P`` must be symmetric positive definite (``H + beta I``) and ``w`` feasible. Primal active-set
    method (Nocedal and Wright, Alg. 16.3) started at ``d = 0`` with the constraints active at ``w``
    as working set; each iteration solves the equality-constrained KKT system exactly. After a full
    step that no constraint blocked, ``d`` minimizes on the working set, so the next step is 0
    in exact arithmetic: a computed one below ``QP_ROUNDING_STEP`` times the full step's length is
    taken as 0 and the multipliers decide. Returns
    ``(d, lam, ok, iterations)`` with ``lam`` the multipliers of the rows of :func:`_constraints`
    (``lam >= 0``); ``ok`` is False if the iteration limit was hit.
    """
    n_w = w.size
    A, r = _constraints(w, groups)
    m = A.shape[0]
    if max_iter is None:
        max_iter = 10 * (m + 5)
    scale = max(1.0, float(np.max(np.abs(g), initial=0.0)), float(np.max(np.abs(P), initial=0.0)))
    d = np.zeros(n_w)
    slack = A @ d - r
    # initial working set: constraints active at w (never all bounds of a group plus its sum)
    work: list[int] = [k for k in range(m) if slack[k] <= 1e-14]
    lam_w = np.zeros(0)
    ok = False
    it = 0
    full_step = 0.0  # |p| of the last step when it was full and unblocked, else 0
    for it in range(1, max_iter + 1):
        grad = P @ d + g
        k = len(work)
        Aw = A[work]
        kkt = np.zeros((n_w + k, n_w + k))
        kkt[:n_w, :n_w] = P
        kkt[:n_w, n_w:] = -Aw.T
        kkt[n_w:, :n_w] = Aw
        try:
            sol = np.linalg.solve(kkt, np.concatenate([-grad, np.zeros(k)]))
        except np.linalg.LinAlgError:
            sol = np.linalg.lstsq(kkt, np.concatenate([-grad, np.zeros(k)]), rcond=None)[0]
        p, lam_w = sol[:n_w], sol[n_w:]
        pmax = float(np.max(np.abs(p), initial=0.0))
        if k == n_w or pmax <= QP_ROUNDING_STEP * full_step:
            # a vertex (the only feasible direction is 0), or the step after a full unblocked step:
            # d already minimizes on the working set and p is the KKT solve's rounding (1.8e-12
            # against a step of 0.4 on a spider frame, where cond(P) ~ 5e6: taking it again and again
            # ran the method into its iteration limit)
            p, pmax = np.zeros(n_w), 0.0
        full_step = 0.0
        if pmax <= 1e-12 * max(1.0, float(np.max(np.abs(d), initial=0.0))):
            if k == 0 or lam_w.min() >= -1e-13 * scale:
                ok = True
                break
            work.pop(int(np.argmin(lam_w)))
            continue
        Ap = A @ p
        slack = A @ d - r
        alpha, block = 1.0, -1
        for j in range(m):
            if j not in work and Ap[j] < 0.0:
                a = max(slack[j], 0.0) / -Ap[j]
                if a < alpha:
                    alpha, block = a, j
        d = d + alpha * p
        if block >= 0:
            work.append(block)
        else:
            full_step = pmax
    lam = np.zeros(m)
    if work:
        lam[work] = np.maximum(lam_w, 0.0) if ok else lam_w
    # remove rounding: land exactly on the active constraints
    x = project_W(w + d, groups) if _infeasibility(w + d, groups) > 0.0 else w + d
    return x - w, lam, ok, it


# -- projection onto the manifold G(., w) = 0 --------------------------------------------------

def project(fns: Any, theta: np.ndarray, w: np.ndarray, *, zeroth_order: bool = False,
            tol: float = 1e-8, max_iter: int = 50, residuals: list[float] | None = None,
            polish: int = 0) -> tuple[np.ndarray, bool, int]:
    """Solve ``G(theta, w) = 0`` for ``theta`` (``w`` fixed) by Newton's method from ``theta``.

    The step is ``-A^-1 G`` with ``A = G_theta`` (``G_theta_zo`` when ``zeroth_order``), halved
    until ``||G||_2`` decreases (at most 40 halvings). Converged when ``||G||_inf < tol``. Returns
    ``(theta, converged, newton_iterations)``; ``converged`` is False when no decreasing step is
    found, the matrix is singular, a value is not finite or ``max_iter`` is reached. If
    ``residuals`` is a list, ``||G||_inf`` of every iterate is appended to it. After convergence
    up to ``polish`` further full Newton steps are taken while they decrease ``||G||_2`` (PGM
    polishes once: comparing ``K`` at two projections is only meaningful to the accuracy of
    ``theta``, and near the optimum the decrease of ``K`` is far below what ``tol`` allows).
    """
    jac = fns.G_theta_zo if zeroth_order else fns.G_theta
    th = np.array(theta, dtype=float)
    Gv = np.asarray(fns.G(th, w), dtype=float)
    nrm = float(np.linalg.norm(Gv))
    for it in range(max_iter + 1):
        ninf = float(np.max(np.abs(Gv))) if Gv.size else 0.0
        if residuals is not None:
            residuals.append(ninf)
        if not math.isfinite(ninf):
            return th, False, it
        if ninf < tol:
            for _ in range(polish):
                try:
                    cand = th - np.linalg.solve(np.asarray(jac(th, w), dtype=float), Gv)
                except np.linalg.LinAlgError:
                    break
                Gc = np.asarray(fns.G(cand, w), dtype=float)
                nc = float(np.linalg.norm(Gc))
                if not (math.isfinite(nc) and nc < nrm):
                    break
                th, Gv, nrm = cand, Gc, nc
                it += 1
                if residuals is not None:
                    residuals.append(float(np.max(np.abs(Gv))))
            return th, True, it
        if it == max_iter:
            break
        try:
            step = np.linalg.solve(np.asarray(jac(th, w), dtype=float), Gv)
        except np.linalg.LinAlgError:
            return th, False, it
        if not np.all(np.isfinite(step)):
            return th, False, it
        alpha = 1.0
        for _ in range(41):
            cand = th - alpha * step
            Gc = np.asarray(fns.G(cand, w), dtype=float)
            nc = float(np.linalg.norm(Gc))
            if math.isfinite(nc) and nc < nrm:
                break
            alpha *= 0.5
        else:
            return th, False, it + 1
        th, Gv, nrm = cand, Gc, nc
    return th, False, max_iter


# -- PGM ---------------------------------------------------------------------------------------

def _validate_fns(fns: Any) -> tuple[int, int, list[np.ndarray], np.ndarray]:
    missing = [a for a in _REQUIRED if not hasattr(fns, a)]
    if missing:
        raise InputError("fns", f"missing attributes {missing} (NMDPFunctions interface)")
    n, n_w = fns.n, fns.n_w
    for name, v in (("n", n), ("n_w", n_w)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise InputError(name, f"must be a nonnegative int, got {v!r}")
    q_n = np.asarray(fns.q_n, dtype=float).ravel()
    if q_n.shape != (n,) or not np.all(np.isfinite(q_n)):
        raise InputError("q_n", f"must be a finite vector of length n={n}")
    check_number("h", fns.h, positive=True)
    return int(n), int(n_w), _check_groups(fns.groups, int(n_w)), q_n


def _check_options(beta0: float, eta: float, beta_min: float, beta_max: float, tol_d: float,
                   tol_decrease: float, max_outer: int, tol: float, tol_stationarity: float) -> None:
    check_number("beta0", beta0, positive=True)
    if check_number("eta", eta) <= 1.0:
        raise InputError("eta", f"must be > 1, got {eta!r}")
    check_number("beta_min", beta_min, positive=True)
    if check_number("beta_max", beta_max, allow_inf=True) <= beta_min:
        raise InputError("beta_max", f"must be > beta_min={beta_min!r}, got {beta_max!r}")
    check_number("tol_d", tol_d, nonnegative=True)
    check_number("tol_decrease", tol_decrease, nonnegative=True)
    check_number("tol", tol, positive=True)
    check_number("tol_stationarity", tol_stationarity, positive=True)
    if not isinstance(max_outer, (int, np.integer)) or isinstance(max_outer, bool) or max_outer < 1:
        raise InputError("max_outer", f"must be a positive int, got {max_outer!r}")


def _reduced_derivatives(fns: Any, theta: np.ndarray, w: np.ndarray, zeroth_order: bool, hessian: bool = True,
                         ) -> tuple[np.ndarray, np.ndarray | None]:
    """``g = J_w^T grad K`` and ``H = J_w^T hess K J_w`` with ``J_w = -(dG/dtheta)^-1 dG/dw``
    (``H`` None when not ``hessian``: the final check needs ``g`` only)."""
    A = np.asarray((fns.G_theta_zo if zeroth_order else fns.G_theta)(theta, w), dtype=float)
    Gw = np.asarray(fns.G_w(theta), dtype=float).reshape(A.shape[0], -1)
    Jw = -np.linalg.solve(A, Gw)
    g = Jw.T @ np.asarray(fns.K_grad(theta), dtype=float).ravel()
    if not hessian:
        return g, None
    H = Jw.T @ np.asarray(fns.K_hess(theta), dtype=float) @ Jw
    return g, 0.5 * (H + H.T)


def pgm(fns: Any, theta0: np.ndarray | None = None, w0: np.ndarray | None = None, *,
        zeroth_order: bool = False, beta0: float = 1.0, eta: float = 1.5, beta_min: float = 1e-4,
        beta_max: float = 1e8, tol_d: float = 1e-8, tol_decrease: float = 1e-6,
        max_outer: int = 200, tol: float = 1e-8, tol_stationarity: float = 1e-6,
        max_newton: int = 50, max_polish: int = 5) -> Result:
    """Projected gradient method on ``min K(theta) s.t. G(theta, w) = 0, w in W`` (one NMDP step).

    Starts at ``w = w0`` (default 0) and ``theta = project(theta0)`` (default ``q_n``), then takes
    proximal Gauss-Newton steps on ``f(w) = K(theta(w))`` (see the module docstring) with the
    proximal weight ``beta`` adapted by ``eta`` in ``[beta_min, beta_max]``. The loop stops when
    ``||d||_inf < tol_d`` (``d = 0`` exactly at a stationary point) at a point whose projected
    gradient is within ``tol_stationarity`` (else see *steps below tol_d*), when a decrease of ``K``
    below ``tol_decrease`` (the paper's rule) is accepted from a step taken with ``beta`` at its
    floor ``beta_min`` (with a larger ``beta`` the step is damped, and a small decrease says little:
    on a point mass with ``H ~ 0.04`` the unguarded rule stops with ``w`` off by ``2e-3``), or
    after ``max_outer`` accepted steps; it fails (``numerical_error``) when a
    projection does not converge to ``||G||_inf < tol`` in ``max_newton`` Newton iterations, when
    ``beta > beta_max`` or when a proximal QP fails. Each projection is warm-started at the
    current ``theta`` and polished by one extra Newton step. ``tol_stationarity`` is absolute
    (units of ``K`` per unit weight). Never raises on non-convergence; raises
    :class:`InputError` (naming the field) on malformed ``fns``, starts or options.

    *Steps below tol_d.* With stiff contacts the Gauss-Newton curvature ``H`` reaches 1e5 - 1e6
    while the projected gradient is still 1e-6 - 1e-4, so the step ``d`` falls below ``tol_d``
    before the point is stationary. Such a step changes ``K`` by ``|g^T d| <= ||g||_1 tol_d``, and
    its predicted decrease (1e-14 - 1e-17 on the spider at 50 ms, against ``eps |K|`` ~ 1e-14)
    is below what the values of ``K`` resolve, so the decrease test cannot judge it (measured: it
    rejects every such step up to ``beta_max``). It is taken instead when its projection
    converges (``beta`` unchanged), at most ``max_polish`` times per run, while each lowers the
    projected gradient below the previous one; the loop stops (``step below tol_d``) when the
    point is stationary to ``tol_stationarity``, the budget is spent or the projected gradient
    stops falling. On the spider each such Newton step divides the projected gradient by 10-25.
    ``max_polish = 0`` stops at the first step below ``tol_d`` (the behaviour before).

    Returns a :class:`~contactmp.result.Result`: ``x = theta = q_{n+1}`` at the last accepted
    iterate, ``SOLVED`` only after the independent check (module docstring); ``residual`` is
    ``||G(theta, w)||_inf`` recomputed at the end; ``residuals``: ``G``, ``stationarity``
    (``||w - P_W(w - g)||_inf``, full-derivative gradient), ``infeasibility`` (of ``w in W``);
    ``objective`` ``K(theta)``; ``iterations`` the accepted proximal steps; ``extras``: ``w``,
    ``qp_solves`` (accepted plus rejected), ``projections`` (Newton iterations summed over all
    projections), ``beta`` (proximal weight at the end), ``K_history``.
    """
    t0 = time.perf_counter()
    n, n_w, groups, q_n = _validate_fns(fns)
    _check_options(beta0, eta, beta_min, beta_max, tol_d, tol_decrease, max_outer, tol,
                   tol_stationarity)
    if not isinstance(max_newton, (int, np.integer)) or isinstance(max_newton, bool) or max_newton < 1:
        raise InputError("max_newton", f"must be a positive int, got {max_newton!r}")
    if not isinstance(max_polish, (int, np.integer)) or isinstance(max_polish, bool) or max_polish < 0:
        raise InputError("max_polish", f"must be a non-negative int, got {max_polish!r}")
    theta = q_n.copy() if theta0 is None else np.array(theta0, dtype=float).ravel()
    if theta.shape != (n,) or not np.all(np.isfinite(theta)):
        raise InputError("theta0", f"must be a finite vector of length n={n}")
    w = np.zeros(n_w) if w0 is None else np.array(w0, dtype=float).ravel()
    if w.shape != (n_w,) or not np.all(np.isfinite(w)):
        raise InputError("w0", f"must be a finite vector of length n_w={n_w}")
    if _infeasibility(w, groups) > 1e-9:
        raise InputError("w0", "must satisfy w >= 0 and 1^T w_i <= 1 for every group")
    w = project_W(w, groups)

    tapes = getattr(fns, "tapes", None)
    if tapes is not None:
        theta, w, K, outer, qp_solves, n_newton, beta, failure, stop, history = _compiled_loop(
            fns, tapes, theta, w, groups, zeroth_order, beta0, eta, beta_min, beta_max, tol_d, tol_decrease,
            max_outer, tol, max_newton, tol_stationarity, max_polish)
    else:
        theta, w, K, outer, qp_solves, n_newton, beta, failure, stop, history = _loop(
            fns, theta, w, groups, zeroth_order, beta0, eta, beta_min, beta_max, tol_d, tol_decrease,
            max_outer, tol, max_newton, tol_stationarity, max_polish)
    return _verdict(fns, theta, w, K, outer, qp_solves, n_newton, beta, failure, stop, history, groups,
                    zeroth_order, tol, tol_stationarity, max_outer, t0)


def _compiled_loop(fns: Any, tapes: Any, theta: np.ndarray, w: np.ndarray, groups: list[np.ndarray],
                   zeroth_order: bool, beta0: float, eta: float, beta_min: float, beta_max: float, tol_d: float,
                   tol_decrease: float, max_outer: int, tol: float, max_newton: int, tol_stationarity: float,
                   max_polish: int) -> tuple[Any, ...]:
    """:func:`_loop` compiled (:func:`contactmp.solvers.pgm._kernels.run_pgm`) on the problem's
    instruction tapes (``fns.tapes``, inputs ``(theta, w, fns.params)``)."""
    from contactmp.solvers.pgm._kernels import FAILURES, STOPS, run_pgm

    p = np.asarray(fns.params, dtype=float).ravel()
    J = tapes.G_theta_zo if zeroth_order else tapes.G_theta
    parts = []
    for tp in (tapes.G, J, tapes.G_w, tapes.K, tapes.K_grad, tapes.K_hess):
        if tp.n_x != theta.size + w.size + p.size:
            raise InputError("fns", f"tape {tp.name!r} takes {tp.n_x} inputs, not (theta, w, params)")
        parts += [tp.code, tp.consts, tp.runs, tp.work()]
    sizes = np.array([g.size for g in groups], dtype=np.int64)
    gidx = np.concatenate(groups).astype(np.int64) if groups else np.zeros(0, dtype=np.int64)
    gptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    (theta, w, K, outer, qp_solves, n_newton, beta, failure, stop, hist, nh) = run_pgm(
        *parts, p, theta, w, gidx, gptr, float(beta0), float(eta), float(beta_min), float(beta_max),
        float(tol_d), float(tol_decrease), int(max_outer), float(tol), int(max_newton), float(tol_stationarity),
        int(max_polish))
    why = FAILURES[int(failure)] + (f"={beta_max:g}" if int(failure) == 4 else "")
    return (theta, w, float(K), int(outer), int(qp_solves), int(n_newton), float(beta), why,
            STOPS[int(stop)], [float(k) for k in hist[:nh]])


def _loop(fns: Any, theta: np.ndarray, w: np.ndarray, groups: list[np.ndarray], zeroth_order: bool,
          beta0: float, eta: float, beta_min: float, beta_max: float, tol_d: float, tol_decrease: float,
          max_outer: int, tol: float, max_newton: int, tol_stationarity: float, max_polish: int) -> tuple[Any, ...]:
    """The loop of :func:`pgm` (its docstring): ``(theta, w, K, outer, qp_solves, projections,
    beta, failure, stop, K_history)``."""
    n_w = w.size
    n_newton = 0
    qp_solves = 0
    outer = 0
    beta = float(beta0)
    theta, ok, it = project(fns, theta, w, zeroth_order=zeroth_order, tol=tol, max_iter=max_newton,
                           polish=1)
    n_newton += it
    failure = "" if ok else "initial projection did not converge"
    K = float(fns.K(theta)) if ok else float("nan")
    history = [K]
    stop = ""
    polish, polish_stat = 0, math.inf  # steps below tol_d taken, and the projected gradient before the last
    while not failure and not stop:
        if outer >= max_outer:
            stop = "max_outer"
            break
        try:
            g, H = _reduced_derivatives(fns, theta, w, zeroth_order)
        except np.linalg.LinAlgError:
            failure = "dG/dtheta is singular"
            break
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(H))):
            failure = "non-finite gradient or Hessian"
            break
        stat = stationarity(w, g, groups)
        if stat == 0.0:
            stop = "stationary"
            break
        if polish and stat >= polish_stat:  # the steps below tol_d stopped helping
            stop = "step below tol_d"
            break
        tiny = False
        while True:  # proximal weight search
            if beta > beta_max:
                failure = f"beta exceeded beta_max={beta_max:g}"
                break
            d, _, qp_ok, _ = prox_qp(g, H + beta * np.eye(n_w), w, groups)
            qp_solves += 1
            if not qp_ok:
                failure = "proximal QP did not converge"
                break
            tiny = float(np.max(np.abs(d), initial=0.0)) < tol_d
            if tiny and (stat <= tol_stationarity or polish >= max_polish):
                stop = "step below tol_d"
                break
            w_new = w + d
            th_new, ok, it = project(fns, theta, w_new, zeroth_order=zeroth_order, tol=tol,
                                     max_iter=max_newton, polish=1)
            n_newton += it
            K_new = float(fns.K(th_new)) if ok else float("nan")
            if tiny:  # below what K resolves: taken without the decrease test (see pgm)
                if not ok:
                    stop = "step below tol_d"
                break
            if ok and K_new < K:
                break
            beta *= eta
        if failure or stop:
            break
        decrease = K - K_new
        theta, w, K = th_new, w_new, K_new
        history.append(K)
        outer += 1
        if tiny:
            polish, polish_stat = polish + 1, stat
            continue
        at_floor = beta <= beta_min * (1.0 + 1e-12)
        beta = max(beta / eta, beta_min)
        if decrease < tol_decrease and at_floor:
            stop = "decrease below tol_decrease"
    return theta, w, K, outer, qp_solves, n_newton, beta, failure, stop, history


def _verdict(fns: Any, theta: np.ndarray, w: np.ndarray, K: float, outer: int, qp_solves: int, n_newton: int,
             beta: float, failure: str, stop: str, history: list[float], groups: list[np.ndarray],
             zeroth_order: bool, tol: float, tol_stationarity: float, max_outer: int, t0: float) -> Result:
    """The independent check at the returned point (with the full derivative) and the Result."""
    Gv = np.asarray(fns.G(theta, w), dtype=float)
    res = float(np.max(np.abs(Gv), initial=0.0)) if np.all(np.isfinite(Gv)) else float("inf")
    infeas = _infeasibility(w, groups)
    try:
        g_full, _ = _reduced_derivatives(fns, theta, w, False, hessian=False)
        stat = stationarity(w, g_full, groups)
    except np.linalg.LinAlgError:
        stat = float("inf")
    if not math.isfinite(stat):
        stat = float("inf")
    if failure:
        status, msg = Status.NUMERICAL_ERROR, failure
    elif res <= tol and infeas <= _FEAS_TOL and stat <= tol_stationarity:
        status, msg = Status.SOLVED, f"stopped: {stop}; verified"
    elif stop == "max_outer":
        status, msg = Status.MAX_ITER, f"max_outer={max_outer} accepted steps"
    else:
        status = Status.NOT_SOLVED
        msg = (f"stopped: {stop}; check failed: ||G||_inf={res:.3g} (tol {tol:g}), "
               f"infeasibility={infeas:.3g}, stationarity={stat:.3g} (tol {tol_stationarity:g})")
    return Result(status=status, x=theta, solver="pgm" + ("/zeroth_order" if zeroth_order else ""),
                  residual=res, tol=tol, iterations=outer, time_s=time.perf_counter() - t0, message=msg,
                  residuals={"G": res, "stationarity": stat, "infeasibility": infeas},
                  objective=K if math.isfinite(K) else float("nan"),
                  extras={"w": w, "qp_solves": qp_solves, "projections": n_newton, "beta": beta,
                          "K_history": history})


# -- adaptive time step (Algorithm 2) ----------------------------------------------------------

def adaptive_step(step_fn: Callable[[Any, float], tuple[Any, bool]], h: float, state: Any = None,
                  *, h_min: float = 1e-5) -> Result:
    """Advance ``state`` by ``h`` (Algorithm 2): try ``step_fn(state, h)``; if it fails, take two
    steps of ``h / 2`` recursively; give up (``numerical_error``) when a step below ``h_min``
    would be needed. ``step_fn(state, h) -> (new_state, ok)``.

    Returns a :class:`~contactmp.result.Result`: ``SOLVED`` when the whole interval ``h`` was
    covered (every substep verified by ``step_fn``), ``NUMERICAL_ERROR`` otherwise; ``iterations``
    counts the calls of ``step_fn``; ``x`` is empty; ``extras``: ``state`` (after the last substep
    taken; the input state if none was), ``substeps`` (the step sizes taken, in order) and
    ``h_smallest`` (the smallest step attempted, ``inf`` if none)."""
    h = check_number("h", h, positive=True)
    h_min = check_number("h_min", h_min, positive=True)
    if not callable(step_fn):
        raise InputError("step_fn", "must be callable as step_fn(state, h) -> (new_state, ok)")
    taken: list[float] = []
    info = {"attempts": 0, "smallest": float("inf")}

    def step(s: Any, hh: float) -> tuple[Any, bool]:
        if hh < h_min:
            return s, False
        info["attempts"] += 1
        info["smallest"] = min(info["smallest"], hh)
        new, ok = step_fn(s, hh)
        if ok:
            taken.append(hh)
            return new, True
        s1, ok1 = step(s, 0.5 * hh)
        if not ok1:
            return s1, False
        return step(s1, 0.5 * hh)

    final, ok = step(state, h)
    msg = f"{len(taken)} substeps" if ok else (f"a step below h_min={h_min:g} was needed; covered "
                                               f"{sum(taken):.6g} of {h:.6g}")
    return Result(Status.SOLVED if ok else Status.NUMERICAL_ERROR, np.zeros(0), "adaptive_step",
                  iterations=info["attempts"], message=msg,
                  extras={"state": final, "substeps": taken, "h_smallest": info["smallest"]})
