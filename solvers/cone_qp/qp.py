"""Convex QP and second-order-cone QP backends, chosen by name, taking matrices.

* :func:`solve_qp`: ``min 1/2 x^T H x + g^T x s.t. lbx <= x <= ubx, lba <= A x <= uba`` (dense) by a
  CasADi conic plugin of :data:`QP_SOLVERS` (options that make each solve to ~1e-12);
* :func:`solve_cone_qp`: ``min 1/2 x^T H x + g^T x s.t. lbx <= x <= ubx, ||x_T,i|| <= mu_i x_n,i``
  per contact (``d`` rows per contact, normal first) by a backend of :data:`CONE_QP_SOLVERS`;
* :func:`bounded_least_squares`: ``min ||A x - b|| s.t. lb <= x <= ub`` (scipy's ``lsq_linear``);
* :func:`natural_map_newton`: Newton's method on a residual map ``F(x) = 0`` (forward-difference
  Jacobian, backtracking on ``||F||``), the polish of a natural map.

None of them judges its answer: the caller checks it independently (the ``success`` flags are the
backend's own claims). Solvers are built once per size and options and cached.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import casadi as ca
import numpy as np

from contactmp.errors import OptionError, did_you_mean
from contactmp.progress import quiet_stdout
from contactmp.solvers.ipopt import IpoptNLP

__all__ = ["QP_SOLVERS", "CONE_QP_SOLVERS", "QPAnswer", "solve_qp", "solve_cone_qp", "available_qp_solvers",
           "natural_map_newton", "bounded_least_squares", "SUPERSCS_OPTIONS"]

#: CasADi conic plugins, with options that make them solve to ~1e-12
QP_SOLVERS: dict[str, dict[str, Any]] = {
    "qpoases": {"printLevel": "none"},
    "osqp": {"osqp": {"verbose": False, "eps_abs": 1e-12, "eps_rel": 1e-12, "polish": True,
                      "max_iter": 200000}},
    "highs": {"highs": {"output_flag": False, "primal_feasibility_tolerance": 1e-10,
                        "dual_feasibility_tolerance": 1e-10, "optimality_tolerance": 1e-10}},
    "daqp": {},
    "proxqp": {"proxqp": {"eps_abs": 1e-12, "max_iter": 100000}},
    "qrqp": {"print_iter": False, "print_header": False, "print_info": False},
}
#: backends of :func:`solve_cone_qp`
CONE_QP_SOLVERS: dict[str, str] = {
    "ipopt": "IPOPT on the smooth cone mu^2 x_n^2 - |x_T|^2 >= 0, x_n >= 0 (tol 1e-14)",
    "superscs": "SuperSCS (casadi.conic) on the true second-order cones, LP objective + epigraph cone",
}
#: SuperSCS options: tight tolerances (the caller polishes and verifies the answer)
SUPERSCS_OPTIONS: dict[str, Any] = {"eps": 1e-12, "max_iters": 20000, "verbose": 0}


@dataclass
class QPAnswer:
    """A backend's answer: ``x`` (NaN after an exception), the multipliers ``lam_x``, ``lam_a`` in
    CasADi's convention (``L = f + lam_x^T x + lam_a^T A x``), ``iterations``, the backend's
    ``status`` text and its own ``success`` claim."""

    x: np.ndarray
    lam_x: np.ndarray
    lam_a: np.ndarray
    iterations: int
    status: str
    success: bool


def available_qp_solvers() -> tuple[str, ...]:
    """The names of :data:`QP_SOLVERS` that this CasADi build can load (``casadi.has_conic``)."""
    return tuple(p for p in QP_SOLVERS if ca.has_conic(p))


def _conic(plugin: str, m: int, n_a: int, extra: tuple[tuple[str, Any], ...]) -> ca.Function:
    """A new CasADi conic Function for one solve. Not cached: a plugin keeps its state in the
    Function's memory between calls (qpOASES hot-starts from the last QP it solved, OSQP warm-starts
    from its last iterate), so a cached Function made the answer of a QP with several solutions (a
    resting box's friction weights) depend on which QPs the process had solved before it -- the same
    MDP run gave a Signorini measure of 0.1222 and then 0.1199 in one process. Building one costs
    about 0.09 ms (qpOASES, 16 variables), half a solve."""
    with quiet_stdout():
        return ca.conic(f"qp_{plugin}_{m}_{n_a}", plugin,
                        {"h": ca.Sparsity.dense(m, m), "a": ca.Sparsity.dense(n_a, m) if n_a else ca.Sparsity(0, m)},
                        {**QP_SOLVERS[plugin], **dict(extra), "error_on_fail": False})


def solve_qp(solver: str, H: np.ndarray, g: np.ndarray, lbx: Any = -np.inf, ubx: Any = np.inf,
             A: np.ndarray | None = None, lba: Any = -np.inf, uba: Any = np.inf,
             options: dict[str, Any] | None = None) -> QPAnswer:
    """``min 1/2 x^T H x + g^T x s.t. lbx <= x <= ubx, lba <= A x <= uba`` by the CasADi conic
    plugin ``solver`` (a name of :data:`QP_SOLVERS`; ``options`` added to its defaults). Dense
    data; :class:`OptionError` for an unknown or unloadable plugin; never raises on failure."""
    if solver not in QP_SOLVERS:
        raise OptionError(f"unknown QP solver {solver!r} (known: {', '.join(QP_SOLVERS)}){did_you_mean(solver, QP_SOLVERS)}")
    if not ca.has_conic(solver):
        raise OptionError(f"conic plugin {solver!r} cannot be loaded by this CasADi build; "
                          f"available: {available_qp_solvers()}")
    m = int(np.asarray(g).size)
    n_a = 0 if A is None else int(np.asarray(A).shape[0])
    nan = np.full(m, np.nan)
    try:
        fun = _conic(solver, m, n_a, tuple(sorted((options or {}).items())))
        with quiet_stdout():  # OSQP ("Polishing not needed") and HiGHS print from C while solving
            out = fun(h=ca.DM(H), g=ca.DM(g), lbx=lbx, ubx=ubx, a=ca.DM(A) if n_a else ca.DM(0, m),
                      lba=lba if n_a else ca.DM(0, 1), uba=uba if n_a else ca.DM(0, 1))
        st = fun.stats()
    except RuntimeError as exc:
        return QPAnswer(nan, nan, np.full(n_a, np.nan), 0, f"{solver} failed: {exc}", False)
    return QPAnswer(np.asarray(out["x"], dtype=float).ravel(), np.asarray(out["lam_x"], dtype=float).ravel(),
                    np.asarray(out["lam_a"], dtype=float).ravel(), int(st.get("iter_count", 0) or 0),
                    str(st.get("return_status", "")), bool(st.get("success", False)))


@functools.lru_cache(maxsize=32)
def _cone_ipopt(nc: int, d: int) -> IpoptNLP:
    """IPOPT on ``min 1/2 x^T A x + c^T x`` s.t. ``mu_i^2 x_n^2 - |x_T|^2 >= 0`` (A, c, mu parameters)."""
    m = nc * d
    x, A, c, mu = ca.SX.sym("x", m), ca.SX.sym("A", m, m), ca.SX.sym("c", m), ca.SX.sym("mu", nc)
    g = ca.vertcat(*[mu[i] ** 2 * x[i * d] ** 2 - ca.sumsqr(x[i * d + 1:(i + 1) * d]) for i in range(nc)])
    ipopt = {"print_level": 0, "sb": "yes", "tol": 1e-14, "acceptable_iter": 0, "constr_viol_tol": 1e-14,
             "bound_relax_factor": 0.0, "max_iter": 500, "mu_strategy": "adaptive"}
    return IpoptNLP({"x": x, "p": ca.vertcat(ca.vec(A), c, mu), "f": 0.5 * ca.dot(x, ca.mtimes(A, x)) + ca.dot(c, x),
                     "g": g}, ipopt, name=f"cone_qp_{nc}_{d}")


@functools.lru_cache(maxsize=32)
def _superscs(nc: int, d: int) -> tuple[ca.Function, ca.Function]:
    """SuperSCS (``casadi.conic``, LP objective + psd constraints) on the epigraph form::

        min g^T x + t   s.t.  ||(L^T x, t - 1/2)|| <= t + 1/2    (i.e. 1/2 x^T H x <= t,  H = L L^T)
                              ||x_T,i|| <= mu_i x_n,i           per contact

    each cone given as the psd Schur block ``soc(y, z) = [z I y; y^T z]`` (CasADi passes those to SCS as
    second-order cones). The quadratic objective is NOT passed as ``h``: CasADi 3.8.2's superscs plugin
    returns a wrong minimizer for ``h != 0`` (for ``H = diag(1.30, 1.91, 1.25)``, ``g = (-1, .1, .1)``, no
    constraints, it returned 1.6 times the exact minimizer ``-H^-1 g``). Returns the solver and the map
    ``(L, mu) -> (Q, P)`` of the constraint data."""
    m = nc * d
    z = ca.SX.sym("z", m + 1)
    x, t = z[:m], z[m]
    L = ca.SX.sym("L", ca.Sparsity.lower(m))
    mu = ca.SX.sym("mu", nc)
    blocks = [ca.soc(ca.vertcat(ca.mtimes(L.T, x), t - 0.5), t + 0.5)]
    blocks += [ca.soc(x[i * d + 1:(i + 1) * d], mu[i] * x[i * d]) for i in range(nc)]
    S = ca.diagcat(*blocks)
    Q = ca.jacobian(ca.vec(S), z)
    P = ca.substitute(S, z, ca.SX.zeros(m + 1))
    qp_map = ca.Function("cone_soc_data", [L, mu], [Q, P])
    solver = ca.conic(f"cone_superscs_{nc}_{d}", "superscs",
                      {"a": ca.Sparsity(0, m + 1), "q": Q.sparsity(), "p": P.sparsity()},
                      {"superscs": dict(SUPERSCS_OPTIONS), "error_on_fail": False})
    return solver, qp_map


def solve_cone_qp(solver: str, H: np.ndarray, g: np.ndarray, mu: np.ndarray, lbx: np.ndarray,
                  ubx: np.ndarray, d: int, x0: np.ndarray | None = None) -> QPAnswer:
    """``min 1/2 x^T H x + g^T x s.t. lbx <= x <= ubx, x_i in K_mu_i = {||x_T,i|| <= mu_i x_n,i}``
    (``d`` rows per contact, normal first; ``H`` SPD) by ``solver`` of :data:`CONE_QP_SOLVERS`
    (IPOPT starts at ``x0``, default ``x_n = 1``, ``x_T = 0``). Never raises on failure."""
    if solver not in CONE_QP_SOLVERS:
        raise OptionError(f"unknown cone solver {solver!r}; choose from {tuple(CONE_QP_SOLVERS)}")
    nc = int(np.asarray(mu).size)
    m = nc * d
    nan = np.full(m, np.nan)
    if solver == "ipopt":
        if x0 is None:
            x0 = np.zeros(m)
            x0[0::d] = 1.0
        ans = _cone_ipopt(nc, d).solve(x0, np.concatenate([np.asarray(H).ravel(order="F"), g, mu]), lbx, ubx,
                                       0.0, np.inf)
        return QPAnswer(ans.x, ans.lam_x, ans.lam_g, ans.iterations, ans.status, ans.ok)
    fun, qp_map = _superscs(nc, d)
    try:
        L = np.linalg.cholesky(0.5 * (H + H.T))
    except np.linalg.LinAlgError as exc:
        return QPAnswer(nan, nan, np.zeros(0), 0, f"Cholesky of H failed: {exc}", False)
    Q, P = qp_map(ca.tril(ca.DM(L)), ca.DM(mu))
    try:
        out = fun(g=ca.DM(np.append(g, 1.0)), lbx=ca.DM(np.append(lbx, -np.inf)),
                  ubx=ca.DM(np.append(ubx, np.inf)), q=Q, p=P, lba=ca.DM(0, 1), uba=ca.DM(0, 1))
    except RuntimeError as exc:
        return QPAnswer(nan, nan, np.zeros(0), 0, f"exception: {exc}", False)
    st = fun.stats()
    return QPAnswer(np.asarray(out["x"], dtype=float).ravel()[:m], np.asarray(out["lam_x"], dtype=float).ravel()[:m],
                    np.zeros(0), int(st.get("iter_count", 0) or 0),
                    str(st.get("unified_return_status", st.get("return_status", ""))), bool(st.get("success", False)))


def natural_map_newton(F: Callable[[np.ndarray], np.ndarray], x: np.ndarray, iters: int) -> tuple[np.ndarray, int]:
    """Newton's method on ``F(x) = 0`` from ``x`` for at most ``iters`` steps: forward-difference
    Jacobian (step ``1e-8 max(1, ||x||_inf)``), least-squares step, backtracking until ``||F||``
    falls by the factor ``1 - 1e-4 t``. Returns ``(x, steps taken)``; stops early when no step
    decreases ``||F||``."""
    x = np.array(x, dtype=float)
    Fx = F(x)
    for k in range(1, iters + 1):
        nF = float(np.linalg.norm(Fx))
        if nF == 0.0:
            return x, k - 1
        eps = 1e-8 * max(1.0, float(np.max(np.abs(x))))
        J = np.empty((x.size, x.size))
        for j in range(x.size):
            xp = x.copy()
            xp[j] += eps
            J[:, j] = (F(xp) - Fx) / eps
        try:
            dx = np.linalg.lstsq(J, -Fx, rcond=None)[0]
        except np.linalg.LinAlgError:
            return x, k
        t = 1.0
        while t > 1e-6:
            xn = x + t * dx
            Fn = F(xn)
            if np.linalg.norm(Fn) < (1 - 1e-4 * t) * nF:
                break
            t *= 0.5
        else:
            return x, k
        x, Fx = xn, Fn
    return x, iters


def bounded_least_squares(A: np.ndarray, b: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> np.ndarray:
    """A minimizer of ``||A x - b||_2`` over ``lb <= x <= ub`` (scipy's ``lsq_linear``, bounded
    variable least squares); entries with ``lb == ub`` are fixed there and moved to the right-hand
    side (``lsq_linear`` needs ``lb < ub``)."""
    from scipy.optimize import lsq_linear

    lb, ub = np.asarray(lb, dtype=float), np.asarray(ub, dtype=float)
    free = lb < ub
    x = np.where(free, 0.0, lb)
    if free.any():
        x[free] = lsq_linear(A[:, free], b - A @ x, bounds=(lb[free], ub[free])).x
    return x
