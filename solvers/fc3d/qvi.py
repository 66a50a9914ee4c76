"""The QVI fixed point for fc3d(W, q, mu) (Trinkle, Pang, Sudarsky and Lo 1995, Appendix A.3).

The paper writes the Coulomb problem as a quasi-variational inequality: the feasible set of the
friction forces, the disks ``{||r_jT|| <= mu_j r_jn}``, depends on the solution through ``r_n``.
Freezing the friction bound ``s_j = mu_j r_jn`` gives the **Tresca problem** TP(s)

    0 <= r_jn _|_ u_jn >= 0,   r_jT in D(s_j) = {||r_jT|| <= s_j},   -u_jT in N_D(s_j)(r_jT),

(maximal dissipation; ``u = W r + q``), a monotone VI on the convex set ``C(s) = prod_j R_+ x D(s_j)``
(with ``W`` symmetric positive semidefinite it is the convex QP ``min 1/2 r'W r + q'r`` over
``C(s)``). The method is the fixed point

    s^0 = mu r_n^0,   r^{k+1} = solution of TP(s^k),   s^{k+1} = mu r_n^{k+1},

stopped when the fc3d natural-map residual (De Saxce's ``u_hat``, Siconos' normalisation) of
``r^{k+1}`` is at most ``tol``. Each TP(s) is solved by Gauss-Seidel over the contacts with the
exact one-contact Tresca solver :func:`contactmp.solvers.fc3d.local.solve_cylinder_local` (works for
nonsymmetric ``W``), warm-started from ``r^k``, to the inner residual
``||r - P_C(s)(r - u)|| / max(||q||, ||r||, ||u||) <= max(inner_tol, inner_ratio * res_k)``
(``res_k`` the current outer residual), i.e. always tighter than the outer residual it improves.

**What is frozen, and why De Saxce's shift is not.** Only the friction bound ``s = mu r_n`` is
frozen; the normal condition of TP(s) uses the physical normal velocity ``u_n``. At a fixed point
(``s = mu r_n``) the TP(s) conditions are exactly Coulomb's law with ``0 <= r_n _|_ u_n >= 0``, and
that is equivalent to the fc3d conditions with ``u_hat = u + mu ||u_T|| e_n``: at a sliding contact
``u_hat`` lies on the boundary of the dual cone, which forces ``u_n = 0``; at a separating contact
``u_hat in K^*`` reduces to ``u_n >= 0``; at a sticking contact ``u = 0``. Adding a frozen shift
``mu sigma`` (``sigma = ||u_T||`` of the previous iterate) to ``u_n`` in TP(s) would make the fixed
points satisfy ``u_n = -mu ||u_T||`` at sliding contacts, which is *not* a solution of fc3d.
The shift belongs to the other fixed point (Acary, Cadoux, Lemarechal and Malick 2011), which
keeps the cone ``K`` and freezes ``sigma = ||u_T||`` instead of the bound; that variant is not
implemented here.

The fixed point map is a contraction for small friction (the paper's small-``mu`` regime,
Theorem 1 and Proposition 4); for large ``mu`` it may cycle or converge slowly, and the run then
ends with ``max_iter`` or ``time_limit`` and the last iterate.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from contactmp.progress import Reporter
from contactmp.result import Result, Status
from contactmp.solvers.fc3d.problem import residual_watch, verified_fc3d_result
from contactmp.solvers.fc3d.local import solve_cylinder_local
from contactmp.solvers.fc3d.nsgs import csr_residual, csr_velocity, local_q, relaxed_update, run_batches, sweep_start
from contactmp.solvers.options import SolverOptions, check_int, check_real

NAME = "qvi"


@dataclass
class Options(SolverOptions):
    """Options of the QVI (Tresca) fixed point.

    Attributes
    ----------
    tol : float
        Stop when the fc3d natural-map residual is at most ``tol``.
    max_iter : int
        Maximum number of outer (fixed point) iterations.
    inner_tol : float or None
        Floor of the inner (Tresca) residual target; ``None`` means ``tol / 10``.
    inner_ratio : float
        The inner target is ``max(inner_tol, inner_ratio * outer residual)`` (in (0, 1)).
    inner_omega : float
        Relaxation of the inner Gauss-Seidel sweeps, in (0, 2) (1: none).
    inner_max_iter : int
        Maximum Gauss-Seidel sweeps per Tresca problem.
    time_limit : float or None
        Wall-clock limit in seconds (``None`` or ``inf``: none).
    r0 : array or None
        Warm start (3 nc); the first friction bound is ``mu * max(r0_n, 0)``. ``None`` starts at 0
        (the first Tresca problem is then frictionless).
    """

    max_iter: int = 1000
    inner_tol: float | None = None
    inner_ratio: float = 0.5
    inner_omega: float = 1.0
    inner_max_iter: int = 10000
    time_limit: float | None = None
    r0: Any = None

    def check(self) -> None:
        """Reject ill-typed values."""
        super().check()
        check_int("max_iter", self.max_iter)
        check_int("inner_max_iter", self.inner_max_iter)
        check_real("inner_tol", self.inner_tol, 0.0, none_ok=True)
        check_real("inner_ratio", self.inner_ratio, 0.0, 1.0)
        check_real("inner_omega", self.inner_omega, 0.0, 2.0)


@numba.njit(cache=True)
def _tresca_residual(indptr, indices, data, q, s, r, u):  # pragma: no cover - compiled
    """``u <- W r + q``; ``||r - P_C(s)(r - u)|| / max(||q||, ||r||, ||u||)``."""
    scale = csr_velocity(indptr, indices, data, q, r, u)
    err = 0.0
    for j in range(s.shape[0]):
        n = r[3 * j] - u[3 * j]
        p0 = n if n > 0.0 else 0.0
        t1 = r[3 * j + 1] - u[3 * j + 1]
        t2 = r[3 * j + 2] - u[3 * j + 2]
        nt = math.sqrt(t1 * t1 + t2 * t2)
        if nt > s[j]:
            f = s[j] / nt
            t1 *= f
            t2 *= f
        err += (r[3 * j] - p0) ** 2 + (r[3 * j + 1] - t1) ** 2 + (r[3 * j + 2] - t2) ** 2
    err = math.sqrt(err)
    if not np.isfinite(err):
        return np.inf
    return err / scale if scale > 0.0 else err


@numba.njit(cache=True)
def _tresca_sweeps(indptr, indices, data, diag, q, s, r, tol, sweeps, omega):  # pragma: no cover - compiled
    """Gauss-Seidel sweeps for TP(s) on ``r`` in place (exact one-contact Tresca solves).
    Returns ``(sweeps done, inner residual)``; stops early when the residual is <= ``tol``."""
    nc = s.shape[0]
    ql = np.empty(3)
    rp = np.empty(3)
    rn = np.empty(3)
    u = np.empty(q.shape[0])
    res = _tresca_residual(indptr, indices, data, q, s, r, u)
    if res <= tol:
        return 0, res
    done = 0
    while done < sweeps:
        for j in range(nc):
            local_q(indptr, indices, data, diag, q, r, j, ql)
            rp[0], rp[1], rp[2] = r[3 * j], r[3 * j + 1], r[3 * j + 2]
            solve_cylinder_local(diag[j], ql, s[j], rp, rn)
            relaxed_update(r, j, rn, rp, omega)
        done += 1
        res = _tresca_residual(indptr, indices, data, q, s, r, u)
        if res <= tol or not res < np.inf:
            break
    return done, res


def solve(W: Any, q: Any, mu: Any, options: Options | None = None, progress: Reporter | None = None,
          **overrides: Any) -> Result:
    """Solve fc3d(W, q, mu) by the QVI fixed point on the friction bound ``s = mu r_n``.

    Returns a :class:`Result` with ``x = r``, ``iterations`` = outer iterations, and extras
    ``inner_sweeps`` (total Gauss-Seidel sweeps), ``inner_residual`` (of the last Tresca problem),
    ``fixed_point_gap`` (``max_j |s_j - mu_j r_jn|`` between the bound of the last Tresca problem and
    its solution). Status: ``solved``
    (verified), ``max_iter``, ``time_limit`` or ``numerical_error``.

    With a ``time_limit`` (or a ``progress`` reporter, see :mod:`contactmp.progress`) the iterate
    is checked (natural-map residual of fc3d, from the dense ``W``) and reported after every outer
    iteration and every batch of inner sweeps; when the time is up (checked there too) the answer
    is the checked iterate of least residual.
    """
    t0 = time.perf_counter()
    W, q, mu, opts, r, (indptr, indices, data, diag), failed = sweep_start(
        W, q, mu, Options, options, overrides, NAME, "the Tresca sweeps need", t0)
    if failed is not None:
        return failed
    tol = float(opts.tol)
    omega = float(opts.inner_omega)
    inner_floor = float(opts.inner_tol) if opts.inner_tol is not None else 0.1 * tol
    u = np.empty(q.shape[0])
    res = csr_residual(indptr, indices, data, q, mu, r, u)
    s = mu * np.maximum(r[0::3], 0.0)
    outer = 0
    inner_total = 0
    inner_res = np.inf
    gap = 0.0
    claimed, message = Status.MAX_ITER, ""
    watch, offer = residual_watch(NAME, opts.time_limit, progress, t0, W, q, mu, r)
    checkpoint = None if offer is None else (lambda _sweeps, _res: offer(outer))
    if offer is not None:
        offer(0)
    while res > tol:
        if outer >= opts.max_iter:
            claimed = Status.MAX_ITER
            message = f"{outer} fixed-point iterations without reaching tol (residual {res:.3e})"
            break
        if watch is not None and watch.expired():
            claimed = Status.TIME_LIMIT
            message = f"time limit {opts.time_limit:g} s reached after {outer} iterations (residual {res:.3e})"
            break
        target = max(inner_floor, float(opts.inner_ratio) * res) if np.isfinite(res) else inner_floor
        remaining = None if watch is None or not watch.limited else max(watch.left(), 1e-3)

        def kernel(n: int, target: float = target, s: np.ndarray = s) -> tuple[int, float]:
            return _tresca_sweeps(indptr, indices, data, diag, q, s, r, target, n, omega)

        sweeps, inner_res, _ = run_batches(kernel, int(opts.inner_max_iter), remaining, time.perf_counter(), target,
                                           checkpoint=checkpoint)
        inner_total += sweeps
        outer += 1
        s_new = mu * np.maximum(r[0::3], 0.0)
        gap = float(np.max(np.abs(s_new - s)))
        s = s_new
        res = csr_residual(indptr, indices, data, q, mu, r, u)
        if not np.isfinite(res):
            claimed, message = Status.NUMERICAL_ERROR, f"iterates not finite after {outer} iterations"
            break
        if checkpoint is not None and res > tol:
            checkpoint(sweeps, res)
    else:
        claimed, message = Status.SOLVED, f"converged in {outer} fixed-point iterations ({inner_total} sweeps)"
    if claimed is Status.TIME_LIMIT:  # the checked iterate of least residual
        r[:] = watch.x
        message += f"; the best iterate checked (outer iteration {watch.iteration}) is returned"
    return verified_fc3d_result(
        W, q, mu, r, solver=NAME, claimed=claimed, tol=opts.tol, iterations=outer, t_start=t0,
        message=message, inner_sweeps=inner_total, inner_residual=float(inner_res), fixed_point_gap=gap,
    )


def warmup() -> None:
    """Compile the sweeps on a one-contact problem."""
    solve(np.diag([2.0, 1.0, 1.0]), np.array([-1.0, 0.5, 0.2]), 0.3)
