"""A PATH-like semismooth Newton method for box-constrained complementarity (MCP) and the LCP.

MCP(F, l, u): find ``l <= z <= u`` with ``F(z)`` in the normal cone of the box at ``z``:
``z_i = l_i => F_i(z) >= 0``, ``z_i = u_i => F_i(z) <= 0``, ``l_i < z_i < u_i => F_i(z) = 0``.
Equivalently the natural map ``z - clip(z - F(z), l, u)`` vanishes; its infinity norm is the
independent residual. The LCP(q, M) is the MCP with ``l = 0``, ``u = inf`` and ``F(z) = M z + q``.

Reformulation (Fischer-Burmeister). With ``phi(a, b) = sqrt(a^2 + b^2) - a - b``, which vanishes
exactly when ``a >= 0``, ``b >= 0``, ``a b = 0`` (or its penalized form of Chen, Chen and Kanzow,
``lam phi(a, b) - (1 - lam) a_+ b_+``, option ``lam``, default 0.95; it keeps the sign pattern of
``phi``, negative when ``a, b > 0`` and positive when ``a < 0`` or ``b < 0``, which is all that
Billups' composition below needs), the MCP is the nonsmooth system ``Phi(z) = 0``:

* ``l_i`` finite, ``u_i = inf``:  ``Phi_i = phi(z_i - l_i, F_i)``;
* ``l_i = -inf``, ``u_i`` finite: ``Phi_i = phi(u_i - z_i, -F_i)``;
* both finite (``l_i < u_i``), Billups' composition: ``Phi_i = phi(z_i - l_i, phi(u_i - z_i, -F_i))``;
* both infinite: ``Phi_i = F_i``; fixed (``l_i = u_i``): ``Phi_i = z_i - l_i``.

Every row has the form ``Phi_i(z_i, F_i(z))``, so an element of the generalized Jacobian is
``H = diag(Da) + diag(Db) J`` with ``J = F'(z)``. Where ``phi`` is not differentiable
(``a = b = 0``) we take, as De Luca, Facchinei and Kanzow (1996), the limit of the gradient along the
direction ``d`` with ``d_i = 1`` on the degenerate indices and 0 elsewhere:
``(da/||(da, db)|| - 1, db/||(da, db)|| - 1)`` with ``(da, db)`` the directional derivatives of the
two arguments along ``d``.

Globalization (Ferris, Kanzow and Munson 1999, "feasible descent"; Grippo, Lampariello and Lucidi
1986, nonmonotone). Iterates stay in the box, so ``F`` is only evaluated there. On the merit
``Psi = 0.5 ||Phi||^2`` with gradient ``g = H^T Phi``, each iteration tries, in turn:

1. Newton: solve ``H d = -Phi``; if ``H`` is singular or ``d`` is not a sufficient descent
   direction (``g^T d > -rho ||d||^p``), skip to 2. Search along the projected Newton path
   ``z(t) = P(z + t d)``, ``t = 1, beta, beta^2, ...``, for
   ``Psi(z(t)) <= max(last `memory` values of Psi) + sigma g^T (z(t) - z)`` with
   ``g^T (z(t) - z) < 0``; if no ``t >= 1e-10`` passes, go to 2.
2. Levenberg-Marquardt (option ``lm``): the same search along
   ``d = -(H^T H + nu I)^{-1} g``, ``nu = mu ||Phi||``. ``H`` is often singular on contact
   LCPs (non-unique contact forces make ``M`` rank deficient), and there this regularized
   Gauss-Newton direction is still defined and a descent direction. ``mu`` adapts as a trust
   region would: it starts at ``lm``, is multiplied by 10 (up to 1) after a backtracked or failed
   search and divided by 10 (down to ``lm``) after a full step.
3. projected gradient step: the same test along ``z(t) = P(z - t c g)``, with ``c`` the
   Barzilai-Borwein ratio ``s^T s / s^T y`` (``s``, ``y`` the last changes of ``z`` and ``g``)
   when it is positive, else ``1 / max(1, ||g||_inf)``; if even a negligible step fails, ``z`` is
   a stationary point of ``Psi`` on the box and the method stops (status ``not_solved``).

The method stops when the natural-map residual is ``<= tol``.

LCP only (``solve``): restarts, as PATH restarts with other strategies. The merit ``Psi`` of an LCP
whose ``M`` is not P0 (the pyramid LCPs of Trinkle et al. with sliding contacts) has local minima
and narrow valleys, and where a run ends depends on the globalization and on the start. So when a
run fails within its share of ``max_iter``, the method starts again, differently:

1. from ``z0`` along projected paths, as above (30% of ``max_iter``; lcp_tobenna is solved only
   this way);
2. from ``z0`` along the straight lines ``z + t d``: ``F(z) = M z + q`` is defined everywhere, so
   iterates may leave ``z >= 0`` (the unconstrained method of De Luca, Facchinei and Kanzow),
   with the longer memory ``free_memory``; near ``z_i = 0`` the projection can turn the Newton or
   LM direction into an ascent direction, a straight line cannot (20%);
3. and 4. the same two from the interior point ``s 1``, ``s = max(1, ||q||_inf)``, rather than
   from the corner ``z0 = 0`` where every index with ``q_i = 0`` is degenerate (25% each; the
   last run gets what the others left).

The answer is the first solved run, else the iterate with the smallest natural residual. Every
``polish_every`` iterations, when the natural residual has fallen tenfold since the last attempt,
and at the end, :func:`~contactmp.solvers.lcp.problem.polish_lcp` (one solve with the basis
``{z_i > w_i}``) is tried; a run stops as soon as its candidate passes the residual check. The
final iterate is replaced by its projection onto ``z >= 0`` when that keeps the residual below
``tol`` (or does not increase it), then by the polished one when that does not increase it.

Implementation. :func:`solve_mcp` runs the iteration in Python (:func:`_run`; any ``F``, dense or
sparse Jacobian). :func:`solve` runs the same iteration compiled
(:mod:`contactmp.solvers.lcp._newton_kernels`, numba, LAPACK from SciPy): ``Phi``, ``Da``, ``Db`` and
the merit in one pass, the Newton system reduced to the rows with ``Db_i != 0`` (a row with
``Db_i = 0``, i.e. ``z_i = 0 < w_i``, gives ``d_i = -Phi_i / Da_i``), the Levenberg-Marquardt
system ``H^T H + nu I`` by a rank-k update and Cholesky, and the polish's least squares by a
complete orthogonal factorization (``dgelsy``, the minimum-norm solution as ``np.linalg.lstsq``).
The mathematics is that of :func:`_run`; round-off is not, and on the singular Newton matrices of
contact LCPs it can change which steps later iterations take (tests compare the first steps).
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from contactmp.errors import InputError
from contactmp.progress import Reporter, Watch, next_chunk, watch_for
from contactmp.result import Result, Status
from contactmp.solvers.lcp import _newton_kernels as _kernels
from contactmp.solvers.lcp.problem import lcp_residual, residual_kernel, validate_lcp, verified_result
from contactmp.solvers.options import SolverOptions, check_bool, check_int, check_real
from contactmp.validate import validate_start

NAME = "newton"

#: smallest step tried along the projected Newton path before switching to the gradient
_MIN_NEWTON_STEP = 1e-10
#: factor by which the Levenberg-Marquardt weight grows after a poor step, shrinks after a full one
_LM_FACTOR = 10.0
#: largest Levenberg-Marquardt weight ``mu`` (``nu = mu ||Phi||``)
_LM_MAX = 1.0
#: the runs of the LCP method with restarts: (search along straight lines?, start at the interior
#: point s 1 instead of z0?, share of max_iter); the last run gets whatever the others left
_LCP_RUNS = ((False, False, 0.3), (True, False, 0.2), (False, True, 0.25), (True, True, 0.25))
#: polish again only once the natural residual has fallen below this share of its value at the
#: last attempt (an attempt costs about one iteration, and a rank-deficient basis a least-squares)
_POLISH_DROP = 0.1
#: LCP: at most this many polished bases are remembered (so as not to polish them again)
_MAX_TRIED = 256


@dataclass
class Options(SolverOptions):
    """Options of the semismooth Newton method.

    Attributes
    ----------
    tol : natural-map residual ``||z - clip(z - F(z), l, u)||_inf`` at which to stop (for the LCP
        this is ``||min(z, M z + q)||_inf``, the package's independent check).
    max_iter : iterations (Newton, Levenberg-Marquardt or gradient steps); for the LCP, of both
        runs together (see ``restart``).
    memory : the nonmonotone line search compares with the largest of the last ``memory`` merit
        values (1 gives the monotone Armijo rule).
    sigma : Armijo constant in ``(0, 1)``.
    beta : backtracking factor in ``(0, 1)``.
    rho, p : the Newton direction ``d`` is used only if ``g^T d <= -rho ||d||^p`` (``p > 2``).
    z0 : starting point (projected onto the box); ``None`` means the projection of 0.
    lm : smallest Levenberg-Marquardt weight: when the Newton direction is unusable (singular ``H``,
        no descent, or no acceptable step along it) the method tries
        ``d = -(H^T H + nu I)^{-1} H^T Phi`` with ``nu = mu ||Phi||``, ``lm <= mu <= 1``; 0 turns
        this off (the old Newton / projected-gradient method).
    restart : LCP only: up to four runs within ``max_iter`` (see the module docstring): from
        ``z0`` along projected paths (30% of ``max_iter``), from ``z0`` along straight lines (20%),
        from ``s 1`` with ``s = max(1, ||q||_inf)`` along projected paths (25%), then along
        straight lines (the rest), each begun only if the previous one failed. False: one run
        along projected paths with all ``max_iter`` iterations.
    free_memory : ``memory`` of the nonmonotone search of the run along straight lines.
    polish_every : LCP only: try the polish of :func:`polish_lcp` every this many iterations,
        when the natural residual has fallen tenfold since the last attempt, and stop as soon as
        its candidate verifies (0: only at the end).
    lam : weight of the Chen-Chen-Kanzow penalized FB function
        ``lam phi(a, b) - (1 - lam) a_+ b_+`` in ``(0, 1]``; 1 is the plain FB function. The
        default 0.95 (their suggestion) solves lcp_tobenna and badly scaled P0 LCPs that plain FB
        does not, at the same cost elsewhere.
    """

    tol: float = 1e-8
    max_iter: int = 200
    memory: int = 5
    sigma: float = 1e-4
    beta: float = 0.5
    rho: float = 1e-8
    p: float = 2.1
    z0: Any = None
    lam: float = 0.95
    lm: float = 1e-6
    restart: bool = True
    free_memory: int = 10
    polish_every: int = 1

    def check(self) -> None:
        """Reject ill-typed or out-of-range values."""
        super().check()
        for name, low in (("max_iter", 0), ("memory", 1), ("free_memory", 1), ("polish_every", 0)):
            check_int(name, getattr(self, name), low)
        check_real("lam", self.lam, 0.0, 1.0, hi_open=False)
        check_real("sigma", self.sigma, 0.0, 1.0)
        check_real("beta", self.beta, 0.0, 1.0)
        check_real("rho", self.rho, 0.0)
        check_real("lm", self.lm, 0.0, lo_open=False)
        check_bool("restart", self.restart)
        check_real("p", self.p, 2.0)


_DEFAULT_OPTIONS = Options()


# ------------------------------------------------------------------------------------------------
# The Fischer-Burmeister reformulation of the box MCP
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Box:
    """Bounds and the index classes of the reformulation.

    ``lo``/``up`` equal ``lb``/``ub`` where those are finite and 0 elsewhere, so that arithmetic on
    them never meets ``inf`` (the masks select which rows use them).
    """

    lb: np.ndarray
    ub: np.ndarray
    lo: np.ndarray
    up: np.ndarray
    has_l: np.ndarray  # finite lower bound, not fixed
    has_u: np.ndarray  # finite upper bound, not fixed
    fixed: np.ndarray  # l_i == u_i

    @classmethod
    def make(cls, lb: np.ndarray, ub: np.ndarray) -> "_Box":
        fixed = lb == ub
        fin_l, fin_u = np.isfinite(lb), np.isfinite(ub)
        return cls(lb, ub, np.where(fin_l, lb, 0.0), np.where(fin_u, ub, 0.0),
                   fin_l & ~fixed, fin_u & ~fixed, fixed)

    def project(self, z: np.ndarray) -> np.ndarray:
        return np.clip(z, self.lb, self.ub)


def fischer_burmeister(a: np.ndarray, b: np.ndarray, lam: float = 1.0) -> np.ndarray:
    """``lam (sqrt(a^2 + b^2) - a - b) - (1 - lam) a_+ b_+``: zero iff ``a >= 0, b >= 0, a b = 0``.

    ``lam = 1`` is the Fischer-Burmeister function; ``lam < 1`` is the penalized form of Chen,
    Chen and Kanzow (2000), with the same sign pattern (negative when ``a, b > 0``).
    """
    out = np.hypot(a, b) - a - b
    if lam != 1.0:
        out = lam * out - (1.0 - lam) * np.maximum(a, 0.0) * np.maximum(b, 0.0)
    return out


def _fb_grad(
    a: np.ndarray, b: np.ndarray, lam: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(d phi/da, d phi/db, degenerate)``; at ``a = b = 0`` the derivatives are left at -lam."""
    r = np.hypot(a, b)
    deg = r == 0.0
    safe = np.where(deg, 1.0, r)
    pa = np.where(deg, -1.0, a / safe - 1.0)
    pb = np.where(deg, -1.0, b / safe - 1.0)
    if lam != 1.0:
        ap, bp = np.maximum(a, 0.0), np.maximum(b, 0.0)
        pa = lam * pa - (1.0 - lam) * bp * (a > 0)
        pb = lam * pb - (1.0 - lam) * ap * (b > 0)
    return pa, pb, deg


def _fb_limit(da: np.ndarray, db: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Limit of ``grad phi`` at ``(0, 0)`` along the direction ``(da, db)`` (De Luca et al.).

    The penalty ``a_+ b_+`` is of second order at the origin, so it contributes nothing.
    """
    nrm = np.hypot(da, db)
    ok = nrm > 0
    safe = np.where(ok, nrm, 1.0)
    xi = np.where(ok, da / safe, 1.0) - 1.0
    chi = np.where(ok, db / safe, 0.0) - 1.0
    return lam * xi, lam * chi


def mcp_phi(z: np.ndarray, f: np.ndarray, box: _Box, lam: float = 1.0) -> np.ndarray:
    """The residual ``Phi(z)`` of the reformulation, given ``f = F(z)`` (see the module docstring)."""
    g = np.where(box.has_u, fischer_burmeister(box.up - z, -f, lam), f)
    phi = np.where(box.has_l, fischer_burmeister(z - box.lo, g, lam), g)
    return np.where(box.fixed, z - box.lo, phi)


def _mcp_phi_jac(
    z: np.ndarray, f: np.ndarray, jac: np.ndarray | sp.spmatrix, box: _Box, lam: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Phi, Da, Db)`` with ``H = diag(Da) + diag(Db) J`` an element of the generalized Jacobian."""
    n = z.shape[0]
    # inner level: g = phi(u - z, -F) where u is finite, else g = F
    a1, b1 = box.up - z, -f
    ga, gb, deg1 = _fb_grad(a1, b1, lam)
    deg1 &= box.has_u
    g = np.where(box.has_u, fischer_burmeister(a1, b1, lam), f)
    g_z = np.where(box.has_u, -ga, 0.0)  # dg/dz_i (own component)
    g_f = np.where(box.has_u, -gb, 1.0)  # dg/dF_i
    # outer level: Phi = phi(z - l, g) where l is finite, else g
    a2 = z - box.lo
    pa, pb, deg2 = _fb_grad(a2, g, lam)
    deg2 &= box.has_l
    if deg1.any() or deg2.any():
        d = (deg1 | deg2).astype(np.float64)
        jd = np.asarray(jac @ d).ravel()
        if deg1.any():  # direction of (u - z, -F) is (-d_i, -(J d)_i)
            xi, chi = _fb_limit(-d, -jd, lam)
            ga = np.where(deg1, xi, ga)
            gb = np.where(deg1, chi, gb)
            g_z = np.where(box.has_u, -ga, 0.0)
            g_f = np.where(box.has_u, -gb, 1.0)
        if deg2.any():  # direction of (z - l, g) is (d_i, g_z d_i + g_f (J d)_i)
            xi, chi = _fb_limit(d, g_z * d + g_f * jd, lam)
            pa = np.where(deg2, xi, pa)
            pb = np.where(deg2, chi, pb)
    phi = np.where(box.has_l, fischer_burmeister(a2, g, lam), g)
    da = np.where(box.has_l, pa + pb * g_z, g_z)
    db = np.where(box.has_l, pb * g_f, g_f)
    phi = np.where(box.fixed, z - box.lo, phi)
    da = np.where(box.fixed, 1.0, da)
    db = np.where(box.fixed, 0.0, db)
    assert phi.shape == (n,)
    return phi, da, db


def fb_system(
    z: Any, F: Callable[[np.ndarray], np.ndarray], jac: Callable[[np.ndarray], Any],
    lb: Any, ub: Any, lam: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """``(Phi(z), H)``: the reformulated residual and a dense element ``H`` of its generalized
    Jacobian (De Luca-Facchinei-Kanzow choice at degenerate points), for inspection and tests."""
    z = np.asarray(z, dtype=np.float64)
    lb_a, ub_a = _bounds(lb, ub, z.shape[0])
    box = _Box.make(lb_a, ub_a)
    f = np.asarray(F(z), dtype=np.float64)
    j = jac(z)
    phi, da, db = _mcp_phi_jac(z, f, j, box, lam)
    j = j.toarray() if sp.issparse(j) else np.asarray(j, dtype=np.float64)
    h = db[:, None] * j
    h[np.diag_indices_from(h)] += da
    return phi, h


def natural_residual(z: np.ndarray, f: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> float:
    """``||z - clip(z - F(z), l, u)||_inf`` (0 exactly at a solution of the MCP)."""
    if not (np.isfinite(z).all() and np.isfinite(f).all()):
        return float("inf")
    return float(np.max(np.abs(z - np.clip(z - f, lb, ub)), initial=0.0))


# ------------------------------------------------------------------------------------------------
# The method
# ------------------------------------------------------------------------------------------------


@dataclass
class _Outcome:
    z: np.ndarray
    f: np.ndarray
    status: Status
    iterations: int
    message: str
    extras: dict[str, Any]


def _newton_matrix(
    da: np.ndarray, db: np.ndarray, jac: np.ndarray | sp.spmatrix
) -> np.ndarray | sp.csc_matrix:
    """``H = diag(Da) + diag(Db) J`` (dense, or CSC when ``J`` is sparse)."""
    if sp.issparse(jac):
        return (sp.diags(da) + sp.diags(db) @ jac).tocsc()
    h = db[:, None] * jac
    h[np.diag_indices_from(h)] += da
    return h


def _linear_solve(a: np.ndarray | sp.spmatrix, rhs: np.ndarray) -> np.ndarray | None:
    """``a^{-1} rhs`` by (sparse) LU; ``None`` when ``a`` is singular or the answer not finite."""
    if sp.issparse(a):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                d = np.asarray(spla.spsolve(sp.csc_matrix(a), rhs), dtype=np.float64).ravel()
            except (RuntimeError, ValueError):
                return None
    else:
        try:
            d = np.linalg.solve(a, rhs)
        except np.linalg.LinAlgError:
            return None
    return d if np.isfinite(d).all() else None


def _lm_direction(h: np.ndarray | sp.spmatrix, grad: np.ndarray, nu: float) -> np.ndarray | None:
    """The Levenberg-Marquardt direction ``d = -(H^T H + nu I)^{-1} H^T Phi`` (``grad = H^T Phi``).

    For ``nu > 0`` the matrix is positive definite whatever the rank of ``H``, and ``d`` is a
    descent direction of ``Psi``; it is the minimizer of ``||Phi + H d||^2 + nu ||d||^2``.
    """
    n = grad.shape[0]
    if sp.issparse(h):
        a = (h.T @ h + nu * sp.identity(n, format="csc")).tocsc()
    else:
        a = h.T @ h
        a[np.diag_indices_from(a)] += nu
    return _linear_solve(a, -grad)


def _run(F: Callable[[np.ndarray], np.ndarray], jac: Callable[[np.ndarray], Any], box: _Box, z0: np.ndarray,
         opts: Options, max_iter: int, free: bool = False, memory: int | None = None,
         polish: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray] | None] | None = None,
         watch: Watch | None = None) -> _Outcome:
    """The globalized semismooth Newton iteration from ``z0`` (in the box), at most ``max_iter``
    iterations. ``free``: search along the straight lines ``z + t d`` instead of their projections
    onto the box (only for an ``F`` defined everywhere, as the LCP's ``M z + q``). ``memory``
    overrides ``opts.memory``. ``polish(z)``, tried every ``opts.polish_every`` iterations, returns
    a verified solution ``(z, F(z))`` or None. With a ``watch`` every iterate's natural residual is
    reported and the clock read before each iteration; when the time is up the iterate of least
    natural residual is returned, status ``time_limit``."""
    n = z0.shape[0]
    memory = opts.memory if memory is None else memory
    z = z0.copy()
    count = {"newton_steps": 0, "lm_steps": 0, "gradient_steps": 0}
    f = _eval_f(F, z, n)
    if f is None:
        return _Outcome(z, np.full(n, np.nan), Status.NUMERICAL_ERROR, 0,
                        "F is not finite at the starting point", {**count, "merit": float("nan")})
    phi = mcp_phi(z, f, box, opts.lam)
    psi = 0.5 * float(phi @ phi)
    history = [psi]
    mu = opts.lm  # Levenberg-Marquardt weight, adapted below
    res_polish = float("inf")
    mu_max = max(opts.lm, _LM_MAX)
    k = 0
    prev: tuple[np.ndarray, np.ndarray] | None = None  # (z, grad) of the previous iterate

    def outcome(status: Status, message: str) -> _Outcome:
        return _Outcome(z, f, status, k, message, {**count, "merit": psi})

    best = (math.inf, z, f)  # (natural residual, z, F(z)) of the best iterate (with a watch)
    while True:
        res = natural_residual(z, f, box.lb, box.ub)
        if res <= opts.tol:
            return outcome(Status.SOLVED, f"natural residual {res:.3e} <= tol")
        if watch is not None:
            if res < best[0]:
                best = (res, z, f)  # (iterates are never changed in place)
            watch.report(k, res)
            if watch.expired():
                z, f = best[1], best[2]
                return outcome(Status.TIME_LIMIT, f"time limit {watch.limit:g} s reached after {k} iterations; "
                               f"the iterate of least natural residual ({best[0]:.3e}) is returned")
        if (polish is not None and opts.polish_every and k and k % opts.polish_every == 0
                and res <= _POLISH_DROP * res_polish):
            res_polish = res
            cand = polish(z)
            if cand is not None:
                z, f = cand
                phi = mcp_phi(z, f, box, opts.lam)
                psi = 0.5 * float(phi @ phi)
                return outcome(Status.SOLVED, f"polished at iteration {k}")
        if k >= max_iter:
            return outcome(Status.MAX_ITER, f"{k} iterations, natural residual {res:.3e}")
        j = _eval_jac(jac, z, n)
        if j is None:
            return outcome(Status.NUMERICAL_ERROR, f"Jacobian not finite at iteration {k}")
        phi, da, db = _mcp_phi_jac(z, f, j, box, opts.lam)
        h = _newton_matrix(da, db, j)
        grad = np.asarray(h.T @ phi).ravel()  # H^T Phi
        ref = max(history[-memory:])
        step = None
        # 1. Newton: H d = -Phi
        d = _linear_solve(h, -phi)
        if d is not None and grad @ d <= -opts.rho * float(np.linalg.norm(d)) ** opts.p:
            step = _search(F, box, z, d, grad, ref, opts, _MIN_NEWTON_STEP, n, free)
            if step is not None:
                count["newton_steps"] += 1
        # 2. Levenberg-Marquardt: defined, and a descent direction, also when H is singular
        if step is None and opts.lm > 0:
            d = _lm_direction(h, grad, mu * float(np.linalg.norm(phi)))
            if d is not None and grad @ d < 0:
                step = _search(F, box, z, d, grad, ref, opts, _MIN_NEWTON_STEP, n, free)
            if step is not None:
                count["lm_steps"] += 1
            if step is not None and step[4] == 1.0:
                mu = max(mu / _LM_FACTOR, opts.lm)
            else:
                mu = min(mu * _LM_FACTOR, mu_max)
        # 3. gradient (projected, unless free)
        if step is None:
            gmax = float(np.max(np.abs(grad)))
            if not gmax > 0 or not np.isfinite(gmax):
                return outcome(Status.NOT_SOLVED,
                               "stationary point of the merit function that is not a solution")
            # Barzilai-Borwein scaling from the last step, else a first step of length <= 1
            scale = 1.0 / max(gmax, 1.0)
            if prev is not None:
                s_k, y_k = z - prev[0], grad - prev[1]
                sy = float(s_k @ y_k)
                if sy > 0:
                    scale = min(max(float(s_k @ s_k) / sy, 1e-12), 1e12)
            # backtrack until the trial step is negligible next to z
            t_min = 1e-15 * max(1.0, float(np.max(np.abs(z)))) / (scale * gmax)
            step = _search(F, box, z, -scale * grad, grad, ref, opts, t_min, n, free)
            if step is None:
                return outcome(Status.NOT_SOLVED,
                               "no decrease along the projected gradient (stationary point of the"
                               " merit function that is not a solution)")
            count["gradient_steps"] += 1
        prev = (z, grad)
        z, f, phi, psi, _ = step
        history.append(psi)
        k += 1


def _search(F: Callable[[np.ndarray], np.ndarray], box: _Box, z: np.ndarray, d: np.ndarray, grad: np.ndarray,
            ref: float, opts: Options, t_min: float, n: int,
            free: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float] | None:
    """Nonmonotone Armijo search along ``P(z + t d)`` (``z + t d`` when ``free``); the accepted
    ``(z, F, Phi, Psi, t)`` or None."""
    t = 1.0
    while t >= t_min:
        zt = z + t * d if free else box.project(z + t * d)
        s = zt - z
        slope = float(grad @ s)
        if slope < 0:
            ft = _eval_f(F, zt, n)
            if ft is not None:
                phit = mcp_phi(zt, ft, box, opts.lam)
                psit = 0.5 * float(phit @ phit)
                if psit <= ref + opts.sigma * slope:
                    return zt, ft, phit, psit, t
        t *= opts.beta
    return None


def _eval_f(F: Callable[[np.ndarray], np.ndarray], z: np.ndarray, n: int) -> np.ndarray | None:
    """``F(z)`` as a float vector of length ``n``; None if not finite; InputError on a bad shape."""
    f = np.asarray(F(z), dtype=np.float64)
    if f.ndim == 2 and 1 in f.shape:
        f = f.ravel()
    if f.shape != (n,):
        raise InputError("F", f"must return a vector of length {n}, got shape {f.shape}")
    return f if np.isfinite(f).all() else None


def _eval_jac(jac: Callable[[np.ndarray], Any], z: np.ndarray, n: int) -> np.ndarray | sp.spmatrix | None:
    """``F'(z)`` as a dense array or a scipy.sparse matrix ``n x n``; None if not finite."""
    j = jac(z)
    if sp.issparse(j):
        j = sp.csr_matrix(j, dtype=np.float64)
        vals = j.data
    else:
        j = np.asarray(j, dtype=np.float64)
        vals = j
    if j.shape != (n, n):
        raise InputError("jac", f"must return an {n} x {n} matrix, got shape {j.shape}")
    return j if np.isfinite(vals).all() else None


def _bounds(lb: Any, ub: Any, n: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``lb``, ``ub`` (vectors, or scalars when ``n`` is known)."""
    out = []
    for name, v in (("lb", lb), ("ub", ub)):
        try:
            a = np.array(v, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InputError(name, f"cannot be read as a float vector ({exc})") from None
        if a.ndim == 0 and n is not None:
            a = np.full(n, float(a))
        if a.ndim != 1:
            raise InputError(name, f"must be a 1-D vector, got shape {a.shape}")
        if np.isnan(a).any():
            raise InputError(name, "contains NaN")
        out.append(a)
    lb_a, ub_a = out
    if lb_a.shape != ub_a.shape:
        raise InputError("ub", f"has length {ub_a.shape[0]} but lb has length {lb_a.shape[0]}")
    if n is not None and lb_a.shape[0] != n:
        raise InputError("lb", f"has length {lb_a.shape[0]} but z0 has length {n}")
    if lb_a.shape[0] == 0:
        raise InputError("lb", "is empty (n = 0)")
    if (lb_a == np.inf).any():
        raise InputError("lb", "contains +inf")
    if (ub_a == -np.inf).any():
        raise InputError("ub", "contains -inf")
    if (lb_a > ub_a).any():
        i = int(np.argmax(lb_a > ub_a))
        raise InputError("ub", f"ub[{i}] = {ub_a[i]} is below lb[{i}] = {lb_a[i]}")
    return lb_a, ub_a


def solve_mcp(F: Callable[[np.ndarray], np.ndarray], jac: Callable[[np.ndarray], Any], lb: Any, ub: Any,
              z0: Any = None, options: Options | None = None, progress: Reporter | None = None,
              **overrides: Any) -> Result:
    """Solve MCP(F, [lb, ub]) with the globalized semismooth Newton method on Billups' FB system.

    ``F(z)`` returns a vector of length ``n``; ``jac(z)`` returns ``F'(z)`` as a dense array or a
    scipy.sparse matrix (sparse LU is then used). ``lb`` may hold ``-inf`` and ``ub`` ``+inf``.
    ``z0`` here overrides ``options.z0``. ``Result.residual`` is the natural-map residual
    ``||z - clip(z - F(z), lb, ub)||_inf``, computed independently of the merit function, and
    ``solved`` is claimed only when it is ``<= tol`` and ``z`` lies in the box. Other statuses:
    ``max_iter``, ``not_solved`` (stationary point of the merit that is not a solution) and
    ``numerical_error`` (``F`` or ``jac`` not finite at an iterate). ``extras["F"]`` holds
    ``F(z)``; ``extras`` also count ``newton_steps``, ``lm_steps`` and ``gradient_steps``. The
    LCP-only options (``restart``, ``free_memory``, ``polish_every``) have no effect here. With a
    ``time_limit`` (checked before every iteration) the answer at the limit is the iterate of least
    natural residual, status ``time_limit``; a ``progress`` reporter gets every natural residual.
    """
    t_start = time.perf_counter()
    if not callable(F):
        raise InputError("F", "must be callable")
    if not callable(jac):
        raise InputError("jac", "must be callable")
    opts = Options.build(options, **overrides)
    if z0 is None:
        z0 = opts.z0
    n_hint = None if z0 is None else int(np.size(z0))
    lb_a, ub_a = _bounds(lb, ub, n_hint)
    box = _Box.make(lb_a, ub_a)
    z_init = box.project(validate_start(z0, lb_a.shape[0], "z0"))
    watch = watch_for(NAME, opts.time_limit, progress, t_start)
    out = _run(F, jac, box, z_init, opts, opts.max_iter, watch=watch)
    return _mcp_result(out, box, opts, t_start)


def _mcp_result(out: _Outcome, box: _Box, opts: Options, t_start: float) -> Result:
    """Check the outcome independently (natural map, box) and build the :class:`Result`."""
    res = natural_residual(out.z, out.f, box.lb, box.ub)
    in_box = bool(np.all(out.z >= box.lb) and np.all(out.z <= box.ub))
    status, msg = out.status, out.message
    if status is Status.SOLVED and not (res <= opts.tol and in_box):
        status = Status.NOT_SOLVED
        msg += f"; independent residual {res:.3e} exceeds tol {opts.tol:.1e}"
    elif status is not Status.SOLVED and res <= opts.tol and in_box:
        status = Status.SOLVED
        msg += f"; iterate verified (residual {res:.3e})"
    extras = dict(out.extras)
    extras["F"] = out.f
    return Result(status=status, x=out.z, solver=NAME, residual=res, tol=opts.tol,
                  iterations=out.iterations, time_s=time.perf_counter() - t_start,
                  message=msg, extras=extras)


def solve(M: Any, q: Any, options: Options | None = None, progress: Reporter | None = None,
          **overrides: Any) -> Result:
    """Solve LCP(q, M) as the MCP with ``l = 0``, ``u = inf``, ``F(z) = M z + q`` (dense).

    Up to four runs (option ``restart``, see the module docstring); the polish of
    :func:`polish_lcp` is tried during the runs (option ``polish_every``) and at the end, where the
    final iterate is replaced by its polished form when that does not increase
    ``||min(z, M z + q)||_inf``; ``solved`` is claimed only through :func:`verified_result`.
    ``iterations`` counts all runs. Statuses: ``solved``, ``max_iter``, ``not_solved`` (stopped at
    a stationary point of the merit function that is not a solution) and ``numerical_error``
    (non-finite ``F`` or Jacobian). ``extras``: ``newton_steps``, ``lm_steps``,
    ``gradient_steps`` (all runs), ``merit`` (final ``Psi``), ``restarts`` (runs after the first),
    ``polished``, ``w``.

    The runs are compiled (:func:`contactmp.solvers.lcp._newton_kernels.run_lcp`, the iteration of
    :func:`solve_mcp` specialized to the LCP). With a ``time_limit`` (or a ``progress`` reporter)
    a run goes in chunks of iterations (:func:`~contactmp.solvers.lcp._newton_kernels.lcp_steps`, the
    same iterations); after each chunk the iterate's ``||min(z, M z + q)||_inf`` is checked, the
    clock read and the reporter called. When the time is up no further run starts and the answer
    is the checked iterate of least residual (chunk ends and ends of runs), projected as above when
    that does not increase its residual (not polished: that is a factorization, and the time is
    up); status ``time_limit`` unless it verifies.
    """
    t_start = time.perf_counter()
    M, q = validate_lcp(M, q)
    if options is None and not overrides and progress is None:
        opts = _DEFAULT_OPTIONS  # skips the strict build: microseconds on tiny problems
    else:
        opts = Options.build(options, **overrides)
    watch = watch_for(NAME, opts.time_limit, progress, t_start)
    n = q.shape[0]
    if opts.z0 is None:
        z_init = np.zeros(n)
    else:
        z_init = _Box.make(np.zeros(n), np.full(n, np.inf)).project(validate_start(opts.z0, n, "z0"))
    runs = _LCP_RUNS if opts.restart else ((False, False, 1.0),)
    # bases already polished (an attempt needs a tenfold drop of the residual, so few are made; a
    # basis not recorded once the table is full is only polished again, to the same candidate)
    tried = np.zeros((min(opts.max_iter + len(runs) + 1, _MAX_TRIED), n), dtype=np.bool_)
    n_tried = np.zeros(1, dtype=np.int64)
    used = 0
    steps = [0, 0, 0]
    best = None  # (z, w, code, iterations, merit, residual) of the answer so far
    notes = []
    timed_out = False
    for r, (free, interior, share) in enumerate(runs):
        last = r == len(runs) - 1
        budget = opts.max_iter - used if last else int(round(share * opts.max_iter))
        start = np.full(n, max(1.0, float(np.max(np.abs(q))))) if interior else z_init
        args = (free, opts.free_memory if free else opts.memory, opts.tol,
                opts.sigma, opts.beta, opts.rho, opts.p, opts.lam, opts.lm, _LM_MAX, _LM_FACTOR,
                _MIN_NEWTON_STEP, opts.polish_every, _POLISH_DROP, tried, n_tried)
        if watch is None:
            z, w, code, k, n_newton, n_lm, n_grad, psi, res = _kernels.run_lcp(M, q, start, budget, *args)
        else:
            if r and watch.expired():
                timed_out = True
                break
            (z, w, code, k, n_newton, n_lm, n_grad, psi, res), timed_out = _watched_run(
                M, q, start, budget, args, watch, used)
        used += k
        steps[0] += n_newton
        steps[1] += n_lm
        steps[2] += n_grad
        solved = code in (_kernels.SOLVED, _kernels.POLISHED)
        if best is None or solved or (
            _kernels.natural_residual(z, w) < _kernels.natural_residual(best[0], best[1])
        ):
            best = (z, w, code, k, psi, res)
        notes.append((free, interior, code, k, res))
        if timed_out or solved or code == _kernels.NOT_FINITE or last:
            break
    z, w, code, k, psi, res = best
    restarts = len(notes) - 1
    if restarts:
        message = "; ".join(
            f"run {i + 1} ({'straight lines' if fr else 'projected paths'} from "
            f"{'s 1' if inter else 'z0'}): {_kernel_message(c, kk, rr)}"
            for i, (fr, inter, c, kk, rr) in enumerate(notes))
    else:
        message = _kernel_message(code, k, res)
    claimed = _KERNEL_STATUS[code]
    if timed_out:  # the checked iterate of least residual, not the last run's
        z, claimed = watch.x, Status.TIME_LIMIT
        message = (f"time limit {watch.limit:g} s reached after {used} iterations in {len(notes)} run(s) "
                   f"(the best iterate checked, after {watch.iteration} iterations, is returned): " + message)
    if (z < 0).any():  # the straight-line run may end just outside z >= 0
        zp = np.maximum(z, 0.0)
        if lcp_residual(M, q, zp) <= max(lcp_residual(M, q, z), opts.tol):
            z = zp
    polished = False
    found, cand = (False, z) if timed_out else _kernels.polish(M, q, z)  # (no O(n^3) step after the limit)
    if found and residual_kernel(M, q, cand) <= residual_kernel(M, q, z):
        z, polished = cand, True
    return verified_result(M, q, z, solver=NAME, claimed=claimed, tol=opts.tol,
                           iterations=used, t_start=t_start, message=message,
                           polished=polished, restarts=restarts, newton_steps=steps[0],
                           lm_steps=steps[1], gradient_steps=steps[2], merit=psi)


def _watched_run(M: np.ndarray, q: np.ndarray, z0: np.ndarray, budget: int, args: tuple[Any, ...],
                 watch: Watch, before: int) -> tuple[tuple[Any, ...], bool]:
    """One run of :func:`_kernels.run_lcp` (``args`` its arguments after ``max_iter``) in chunks
    of :func:`_kernels.lcp_steps`, with a checkpoint (:meth:`Watch.offer` of the iterate and its
    ``||min(z, M z + q)||_inf``; ``before`` iterations of earlier runs added to the count) after
    each chunk and at the end. Returns ``(run_lcp's tuple, timed_out)``; a run cut short reports
    ``MAX_ITER`` with the iterations it made."""
    lam, lm = args[7], args[8]
    ok, z, w, psi, history = _kernels.start_lcp(M, q, z0, budget, lam)
    if not ok:
        return (z, w, _kernels.NOT_FINITE, 0, 0, 0, 0, np.nan, np.inf), False
    state: tuple[Any, ...] = (z, w, z, z, False, history, psi, lm, np.inf, 0, 0, 0, 0)
    chunk = 2  # iterations cost from microseconds (line searches) to seconds: let next_chunk learn
    while True:
        t, k = time.perf_counter(), state[9]
        out = _kernels.lcp_steps(M, q, *state, min(k + chunk, budget + 1), budget, *args)
        dt = time.perf_counter() - t
        z, code, k_new = out[0], out[2], out[3]
        timed_out = False
        if code == _kernels.CHUNK:
            watch.offer(z, residual_kernel(M, q, z), before + k_new)
            if not watch.expired():
                state = (z, out[1], out[9], out[10], out[11], history, out[7], out[12], out[13], k_new, out[4],
                         out[5], out[6])
                chunk = next_chunk(chunk, k_new - k, dt, watch)
                continue
            timed_out, code = True, _kernels.MAX_ITER
        else:
            watch.offer(z, residual_kernel(M, q, z), before + k_new)
        res = out[8] if np.isfinite(out[8]) else _kernels.natural_residual(z, out[1])
        return (z, out[1], code, k_new, out[4], out[5], out[6], out[7], res), timed_out


#: Status of each outcome code of :func:`~contactmp.solvers.lcp._newton_kernels.run_lcp`
_KERNEL_STATUS = {
    _kernels.SOLVED: Status.SOLVED,
    _kernels.POLISHED: Status.SOLVED,
    _kernels.MAX_ITER: Status.MAX_ITER,
    _kernels.STATIONARY: Status.NOT_SOLVED,
    _kernels.NO_DECREASE: Status.NOT_SOLVED,
    _kernels.NOT_FINITE: Status.NUMERICAL_ERROR,
}


def _kernel_message(code: int, k: int, res: float) -> str:
    """The message of :func:`_run` for an outcome code of the compiled run (same wording)."""
    if code == _kernels.SOLVED:
        return f"natural residual {res:.3e} <= tol"
    if code == _kernels.POLISHED:
        return f"polished at iteration {k}"
    if code == _kernels.MAX_ITER:
        return f"{k} iterations, natural residual {res:.3e}"
    if code == _kernels.STATIONARY:
        return "stationary point of the merit function that is not a solution"
    if code == _kernels.NO_DECREASE:
        return ("no decrease along the projected gradient (stationary point of the"
                " merit function that is not a solution)")
    return "F is not finite at the starting point"
