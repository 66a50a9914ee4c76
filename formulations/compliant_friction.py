"""Compliant contact with Coulomb friction on the true cone: Drumwright's cone QP (arXiv 1905.10828).

Per contact ``i`` there are ``d`` rows, in the order ``(n, t, o)`` (``d = 2`` drops ``o`` for planar
systems): a unilateral normal spring-damper (stiffness ``K_i`` [N/m], damping ``B_i`` [N s/m], as in
:class:`~contactmp.formulations.compliant_qp.CompliantQP`) and tangential rows that treat the sliding
velocity ``u_T = J_T v1`` as a deformation *rate*: damping ``Bt_i`` [N s/m], no stiffness. With
``G`` the stacked rows, ``W = G M^-1 G^T``, ``a = v0 + h M^-1 f`` and the semi-explicit step

    v1 = a + h M^-1 G^T lambda,     phi1 = phi0 + h Jn v1,     q1 = q0 + h N v1,

the unconstrained laws would be ``lambda_n = -K phi1 - B Jn v1`` and ``lambda_T = -Bt J_T v1``. Written
as a residual in velocity units, with ``D = diag(1 / (h K + B))`` on normal rows and ``1 / Bt`` on
tangential rows,

    w = A lambda + c,     A = D + h W   (symmetric positive definite),
                          c = (D K phi0 on normal rows, 0 on tangential rows) + G a,

``w_n = D (lambda_n - lambda_spring)`` and ``w_T = lambda_T / Bt + u_T`` (the slip not explained by the
viscous creep of the damper). The step is the strictly convex second-order-cone QP

    minimize 1/2 lambda^T A lambda + c^T lambda   s.t.  lambda_i in K_mu_i = {||lambda_T|| <= mu lambda_n}

whose optimality conditions are ``K_mu  contains  lambda  _|_  w  in  K_mu*`` per contact, i.e. the
natural map ``lambda = P_K(lambda - w / alpha)`` for any ``alpha > 0`` (checked by :meth:`residual`).

Why this is Coulomb's law with maximal dissipation. Since ``v1 - a = h M^-1 G^T lambda``, the objective
equals ``||v1||_M^2 / (2h) + 1/2 lambda^T D lambda + lambda_n^T D K phi0 + const``: the kinetic energy
after the step plus the compliance (damper) potential, minimized over the admissible forces (Gauss'
least constraint on the cone). Per contact the KKT conditions give three modes:

* separation: ``lambda_i = 0``, ``w_i in K*`` (the spring law asks for no pull, as in CompliantQP);
* stiction (interior): ``w_i = 0``: the normal spring law holds and ``lambda_T = -Bt u_T`` -- stiction
  modelled "organically" by a stiff damper; the creep speed is ``||lambda_T|| / Bt``;
* sliding (boundary ``||lambda_T|| = mu lambda_n > 0``): ``-w in N_K(lambda)``, i.e. ``w_T = -s e``,
  ``w_n = mu s`` with ``e = lambda_T / ||lambda_T||`` and ``s >= 0``. So ``u_T = -(1/Bt + s/||lambda_T||)
  lambda_T``: the friction force has magnitude ``mu lambda_n`` and points against the slip; for fixed
  ``lambda_n``, ``lambda_T`` maximizes ``-lambda_T . w_T`` over the disk ``||lambda_T|| <= mu lambda_n``
  (the maximal-dissipation principle, with the damper's creep removed from the slip).

The price of the convex (associated) cone: while sliding ``w_n = mu s > 0``, i.e. ``lambda_n =
lambda_spring + (h K + B) mu s``; at steady sliding (``lambda_n = m g``) the body rides ``(h + B/K) mu s``
above the spring's equilibrium depth (``s = ||u_T|| - ||lambda_T|| / Bt``). This is the O(h) boundary
layer of Anitescu's convex relaxation; it vanishes as ``h, B/K -> 0``. Frictionless contacts
(``mu = 0``) reduce exactly to CompliantQP's unilateral LCP.

Solver: IPOPT through ``casadi.nlpsol`` on the smooth description of the cone
``mu^2 lambda_n^2 - ||lambda_T||^2 >= 0, lambda_n >= 0`` (these two smooth inequalities define exactly
``K_mu``; the plain norm form is not differentiable at ``lambda_T = 0``, which is the stiction mode).
The squared form loses LICQ at the apex (separating contacts), so IPOPT's answer is then polished by
an active-set solve: each contact is classified (separated / stick / slide with direction ``e``), the
forces are ``lambda = T z`` with ``T_i`` = ``I`` (stick), ``(1, mu e)`` (slide) or empty, and
``T^T A T z = -T^T c`` (SPD) is solved, re-estimating ``e = -w_T / ||w_T||`` a few times. Whatever is
returned is judged by the independent natural-map residual.

Alternative backend ``solve("superscs")``: the true second-order cones through ``casadi.conic``'s
SuperSCS plugin, each cone as the psd Schur block ``soc(lambda_T, mu lambda_n)`` (CasADi hands these
to SCS as SOC constraints). The quadratic objective goes in as an epigraph cone
``||(L^T x, t - 1/2)|| <= t + 1/2`` with an LP objective, because the plugin's own quadratic term
(``h``) gives wrong minimizers in CasADi 3.8.2 (see :func:`contactmp.solvers.qp._superscs`). SCS's answer (relative residual
~1e-11) gets the same polish and the same residual check.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from contactmp.errors import InputError, OptionError
from contactmp.formulations.compliant_qp import _vec
from contactmp.result import Result, Status
from contactmp.solvers.fc3d import project_cone
from contactmp.solvers.qp import CONE_QP_SOLVERS, natural_map_newton, solve_cone_qp

__all__ = ["CompliantFriction", "compliant_friction_step", "CONE_SOLVERS"]

#: backends of :meth:`CompliantFriction.solve` (:data:`contactmp.solvers.qp.CONE_QP_SOLVERS`)
CONE_SOLVERS = tuple(CONE_QP_SOLVERS)


class CompliantFriction:
    """One compliant frictional-contact step with data evaluated at ``(q0, v0)``.

    ``M`` (n x n SPD), ``f`` (n), ``v0`` (n), ``Jn``, ``Jt`` (nc x n), ``Jo`` (nc x n, or None for planar
    contacts: ``d = 2``), ``phi0``, ``mu``, ``K``, ``B``, ``Bt`` (nc; scalars broadcast; ``h K + B > 0``
    and ``Bt > 0``), ``h > 0``. ``lam`` is stacked per contact as ``(n, t[, o])`` [N]; see the module
    docstring for ``A``, ``c``.
    """

    def __init__(self, M: Any, f: Any, v0: Any, Jn: Any, Jt: Any, Jo: Any, phi0: Any, mu: Any,
                 K: Any, B: Any, Bt: Any, h: float) -> None:
        M = np.atleast_2d(np.asarray(M, dtype=float))
        if M.ndim != 2 or M.shape[0] != M.shape[1] or not np.isfinite(M).all():
            raise InputError("M", f"must be a finite square matrix, got shape {M.shape}")
        try:
            self._Lm = np.linalg.cholesky(0.5 * (M + M.T))
        except np.linalg.LinAlgError:
            raise InputError("M", "mass matrix is not positive definite") from None
        n = M.shape[0]
        rows = []
        for name, J in (("Jn", Jn), ("Jt", Jt), ("Jo", Jo)):
            if J is None and name == "Jo":
                continue
            J = np.atleast_2d(np.asarray(J, dtype=float))
            if J.ndim != 2 or J.shape[1] != n or not np.isfinite(J).all():
                raise InputError(name, f"must be a finite nc x {n} matrix, got shape {J.shape}")
            if rows and J.shape[0] != rows[0].shape[0]:
                raise InputError(name, f"must have {rows[0].shape[0]} rows like Jn, got {J.shape[0]}")
            rows.append(J)
        if not (isinstance(h, (int, float, np.floating)) and np.isfinite(h) and h > 0):
            raise InputError("h", f"must be a positive finite step, got {h!r}")
        self.nc, self.d, self.n, self.h = rows[0].shape[0], len(rows), n, float(h)
        nc, d = self.nc, self.d
        self.M = M
        self.f, self.v0 = _vec(f, n, "f"), _vec(v0, n, "v0")
        self.phi0, self.mu = _vec(phi0, nc, "phi0"), _vec(mu, nc, "mu")
        self.K, self.B, self.Bt = _vec(K, nc, "K"), _vec(B, nc, "B"), _vec(Bt, nc, "Bt")
        for name, arr in (("mu", self.mu), ("K", self.K), ("B", self.B)):
            if (arr < 0).any():
                raise InputError(name, "must be >= 0")
        if (self.Bt <= 0).any():
            raise InputError("Bt", "tangential damping must be > 0")
        self.rate = self.h * self.K + self.B
        if (self.rate <= 0).any():
            raise InputError("K", "h K + B must be > 0 on every contact")
        G = np.empty((nc * d, n))
        for k, J in enumerate(rows):
            G[k::d] = J
        self.G = G
        self.W = G @ self._minv(G.T)
        self.W = 0.5 * (self.W + self.W.T)
        self.a = self.v0 + self.h * self._minv(self.f)
        Dg = np.empty(nc * d)
        Dg[0::d] = 1.0 / self.rate
        for k in range(1, d):
            Dg[k::d] = 1.0 / self.Bt
        self.A = np.diag(Dg) + self.h * self.W
        self.c = G @ self.a
        self.c[0::d] += self.K * self.phi0 / self.rate
        # one scalar per contact (keeps the cone invariant): the largest diagonal of its block
        self.alpha = np.array([np.max(np.diag(self.A)[i * d:(i + 1) * d]) for i in range(nc)])

    def _minv(self, x: np.ndarray) -> np.ndarray:
        return np.linalg.solve(self._Lm.T, np.linalg.solve(self._Lm, x))

    def velocity(self, lam: Any) -> np.ndarray:
        """``v1 = v0 + h M^-1 (f + G^T lambda)``."""
        return self.a + self.h * self._minv(self.G.T @ np.asarray(lam, dtype=float))

    def slack(self, lam: Any) -> np.ndarray:
        """``w = A lambda + c`` [m/s] (normal: spring-law residual scaled by D; tangential: slip + creep)."""
        return self.A @ np.asarray(lam, dtype=float) + self.c

    def residual(self, lam: Any) -> tuple[float, dict[str, float]]:
        """Independent check: ``(max_i ||lambda_i - P_K(lambda_i - w_i / alpha_i)|| / scale, details)``.

        ``scale = max(1, ||lambda||_inf, ||c_i / alpha_i||_inf)``; the details give the separate conic
        KKT measures (cone violation of ``lambda``, dual-cone violation of ``w``, ``|lambda_i . w_i|``).
        """
        lam = np.asarray(lam, dtype=float).ravel()
        inf = float("inf")
        if lam.shape != (self.nc * self.d,) or not np.isfinite(lam).all():
            return inf, {"natural_map": inf, "primal": inf, "dual": inf, "complementarity": inf}
        w = self.slack(lam)
        d = self.d
        F = self._natural_map(lam)
        nat = prim = dual = comp = 0.0
        for i in range(self.nc):
            li, wi, mu = lam[i * d:(i + 1) * d], w[i * d:(i + 1) * d], self.mu[i]
            nat = max(nat, float(np.linalg.norm(F[i * d:(i + 1) * d])))
            prim = max(prim, float(np.linalg.norm(li[1:]) - mu * li[0]), float(-li[0]))
            dual = max(dual, float(mu * np.linalg.norm(wi[1:]) - wi[0]) / self.alpha[i] if mu > 0
                       else float(-wi[0]) / self.alpha[i])
            comp = max(comp, abs(float(li @ wi)) / self.alpha[i])
        scale = max(1.0, float(np.max(np.abs(lam))), float(np.max(np.abs(self.c) / np.repeat(self.alpha, d))))
        return nat / scale, {"natural_map": nat, "primal": prim, "dual": dual, "complementarity": comp,
                             "scale": scale}

    # ------------------------------------------------------------------------------- solving
    def solve(self, solver: str = "ipopt", *, tol: float = 1e-10, polish: bool = True,
              polish_iters: int = 8) -> Result:
        """The cone QP by ``solver``, polished on its active set; never raises on failure.

        ``solver``: ``"ipopt"`` (``casadi.nlpsol`` on the squared cone ``mu^2 x_n^2 - |x_T|^2 >= 0``,
        ``x_n >= 0``) or ``"superscs"`` (``casadi.conic``'s SuperSCS plugin with the true second-order
        cones given as ``soc(x_T, mu x_n)`` psd constraints, which CasADi hands to SCS as SOC blocks).
        ``status`` is ``SOLVED`` only if :meth:`residual` ``<= tol``. The result's ``solver`` is the
        backend name, with ``"+active-set"`` / ``"+newton"`` appended when the polish produced the
        answer. Returns a :class:`~contactmp.result.Result` with ``x = lambda`` (per contact
        ``(n, t[, o])`` [N]), ``residuals`` the conic KKT measures of :meth:`residual`, ``extras``:
        ``v1``, ``active`` (``lambda_n > 0``), ``modes`` (``"separated" | "stick" | "slide"`` per
        contact), ``backend_status``, ``backend_residual``.
        """
        if solver not in CONE_SOLVERS:
            raise OptionError(f"unknown cone solver {solver!r}; choose from {CONE_SOLVERS}")
        if not (isinstance(tol, (int, float)) and tol > 0):
            raise OptionError(f"tol must be a positive number, got {tol!r}")
        t0 = time.perf_counter()
        nc, d = self.nc, self.d
        # lambda_i = sigma x_i / alpha_i: per-contact scalars keep the cone, and x, A_s, c_s are O(1)
        al = np.repeat(self.alpha, d)
        sigma = max(1e-300, float(np.max(np.abs(self.c) / al)))
        As = self.A / al[:, None] / al[None, :]
        cs = self.c / al / sigma
        lbx = np.full(nc * d, -np.inf)
        ubx = np.full(nc * d, np.inf)
        lbx[0::d] = 0.0
        for i in np.flatnonzero(self.mu == 0):
            lbx[i * d + 1:(i + 1) * d] = 0.0
            ubx[i * d + 1:(i + 1) * d] = 0.0
        ans = solve_cone_qp(solver, As, cs, self.mu, lbx, ubx, d)
        x, backend, iters = ans.x, ans.status, ans.iterations
        lam = sigma * x / al
        ip_res, _ = self.residual(lam)
        best, name, msg = lam, solver, f"{solver}: {backend}"
        modes = self._modes(lam)
        if polish and not ip_res <= 1e-3 * tol:
            pol, pol_modes, k = self._polish(lam, polish_iters)
            if pol is not None and self.residual(pol)[0] < ip_res:
                best, name, modes = pol, solver + "+active-set", pol_modes
                msg += f"; polished on its active set ({k} solve(s))"
        if polish and not self.residual(best)[0] <= 1e-3 * tol:
            nw, k = natural_map_newton(self._natural_map, best, 30)
            if self.residual(nw)[0] < self.residual(best)[0]:
                best, name, modes = nw, name + "+newton", self._modes(nw)
                msg += f"; {k} semismooth Newton step(s) on the natural map"
        for i in np.flatnonzero(self.mu == 0):  # the cone of mu = 0 is the ray lambda_T = 0
            best[i * d + 1:(i + 1) * d] = 0.0
        r, kkt = self.residual(best)
        status = Status.SOLVED if r <= tol else Status.NOT_SOLVED
        if status is not Status.SOLVED:
            msg += f"; residual {r:.3g} > tol {tol:.3g}"
        return Result(status, best, name, r, tol, iters, time.perf_counter() - t0, msg, residuals=kkt,
                      extras={"v1": self.velocity(best), "active": best[0::d] > 0, "modes": modes,
                              "backend_residual": ip_res, "backend_status": backend})

    def _modes(self, lam: np.ndarray) -> list[str]:
        d, out = self.d, []
        w = self.slack(lam)
        scale = max(1.0, float(np.max(np.abs(lam))))
        for i in range(self.nc):
            li, wi, mu = lam[i * d:(i + 1) * d], w[i * d:(i + 1) * d], self.mu[i]
            if li[0] <= 1e-9 * scale:
                out.append("separated")
            elif mu > 0 and mu * li[0] - np.linalg.norm(li[1:]) <= 1e-6 * mu * li[0] \
                    and np.linalg.norm(wi[1:]) * self.alpha[i] > 1e-9 * scale * self.alpha[i] ** 2:
                out.append("slide")
            else:
                out.append("stick")
        return out

    def _natural_map(self, lam: np.ndarray) -> np.ndarray:
        """``F(lambda) = lambda - P_K(lambda - w / alpha)`` stacked over contacts (0 at a solution);
        ``P_K`` is :func:`contactmp.solvers.fc3d.project_cone` (planar contacts padded with ``o = 0``)."""
        d, nc = self.d, self.nc
        z = np.zeros(3 * nc)
        y = lam - self.slack(lam) / np.repeat(self.alpha, d)
        for k in range(d):
            z[k::3] = y[k::d]
        return lam - project_cone(z, self.mu).reshape(nc, 3)[:, :d].ravel()

    def _polish(self, lam: np.ndarray, iters: int) -> tuple[np.ndarray | None, list[str], int]:
        """Active-set solve ``T^T A T z = -T^T c`` on IPOPT's modes, re-estimating slide directions."""
        d = self.d
        modes = self._modes(lam)
        e = {i: lam[i * d + 1:(i + 1) * d] / max(np.linalg.norm(lam[i * d + 1:(i + 1) * d]), 1e-300)
             for i, md in enumerate(modes) if md == "slide"}
        best, best_r = None, np.inf
        for k in range(1, iters + 1):
            cols = []
            for i, md in enumerate(modes):
                if md == "stick":
                    for j in range(d):
                        col = np.zeros(self.nc * d)
                        col[i * d + j] = 1.0
                        cols.append(col)
                elif md == "slide":
                    col = np.zeros(self.nc * d)
                    col[i * d] = 1.0
                    col[i * d + 1:(i + 1) * d] = self.mu[i] * e[i]
                    cols.append(col)
            if cols:
                T = np.array(cols).T
                try:
                    z = np.linalg.solve(T.T @ self.A @ T, -T.T @ self.c)
                except np.linalg.LinAlgError:
                    break
                cand = T @ z
            else:
                cand = np.zeros(self.nc * d)
            r = self.residual(cand)[0]
            if r < best_r:
                best, best_r = cand, r
            if not e or r <= 1e-15:
                return best, modes, k
            w = self.slack(cand)
            for i in e:
                wt = w[i * d + 1:(i + 1) * d]
                nw = np.linalg.norm(wt)
                if nw > 0:
                    e[i] = -wt / nw
        return best, modes, iters


def compliant_friction_step(M: Any, f: Any, v0: Any, Jn: Any, Jt: Any, Jo: Any, phi0: Any, mu: Any, K: Any,
                            B: Any, Bt: Any, h: float, **options: Any) -> Result:
    """``CompliantFriction(M, f, v0, Jn, Jt, Jo, phi0, mu, K, B, Bt, h).solve(**options)``."""
    return CompliantFriction(M, f, v0, Jn, Jt, Jo, phi0, mu, K, B, Bt, h).solve(**options)
