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
layer of Anitescu's convex relaxation; it vanishes as ``h, B/K -> 0``. (The registered
``"compliant"`` formulation solves this QP only with ``associated=True``; its default is Coulomb's
non-associated law on the same regularized slip, which keeps a sliding body at the spring's depth.)
Frictionless contacts (``mu = 0``) reduce exactly to CompliantQP's unilateral LCP.

Solver (:mod:`contactmp.solvers.cone_qp.cone_lcp`): IPOPT on the smooth description of the cone
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
(``h``) gives wrong minimizers in CasADi 3.8.2 (see :func:`contactmp.solvers.cone_qp.qp._superscs`). SCS's answer (relative residual
~1e-11) gets the same polish and the same residual check.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from contactmp.errors import InputError, check_spd
from contactmp.result import Result
from contactmp.solvers.cone_qp import CONE_SOLVERS, cone_lcp_residual, solve_cone_lcp
from contactmp.validate import float_vector

__all__ = ["CompliantFriction", "compliant_friction_step", "CONE_SOLVERS"]



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
        self._Lm = check_spd(M)
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
        self.f, self.v0 = float_vector(f, n, "f"), float_vector(v0, n, "v0")
        self.phi0, self.mu = float_vector(phi0, nc, "phi0"), float_vector(mu, nc, "mu")
        self.K, self.B, self.Bt = float_vector(K, nc, "K"), float_vector(B, nc, "B"), float_vector(Bt, nc, "Bt")
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

    def _minv(self, x: np.ndarray) -> np.ndarray:
        return np.linalg.solve(self._Lm.T, np.linalg.solve(self._Lm, x))

    def velocity(self, lam: Any) -> np.ndarray:
        """``v1 = v0 + h M^-1 (f + G^T lambda)``."""
        return self.a + self.h * self._minv(self.G.T @ np.asarray(lam, dtype=float))

    def slack(self, lam: Any) -> np.ndarray:
        """``w = A lambda + c`` [m/s] (normal: spring-law residual scaled by D; tangential: slip + creep)."""
        return self.A @ np.asarray(lam, dtype=float) + self.c

    def residual(self, lam: Any) -> tuple[float, dict[str, float]]:
        """Independent check of ``lambda`` (:func:`contactmp.solvers.cone_qp.cone_lcp.cone_lcp_residual`)."""
        return cone_lcp_residual(self.A, self.c, self.mu, self.d, lam)

    def solve(self, solver: str = "ipopt", *, tol: float = 1e-10, polish: bool = True,
              polish_iters: int = 8) -> Result:
        """The cone QP by ``solver`` (:func:`contactmp.solvers.cone_qp.cone_lcp.solve_cone_lcp`: IPOPT or
        SuperSCS, polished on its active set, judged by the natural-map residual); never raises on
        failure. ``x = lambda`` (per contact ``(n, t[, o])`` [N]); ``extras`` adds ``v1``."""
        res = solve_cone_lcp(self.A, self.c, self.mu, self.d, solver=solver, tol=tol, polish=polish,
                             polish_iters=polish_iters)
        res.extras["v1"] = self.velocity(res.x)
        return res


def compliant_friction_step(M: Any, f: Any, v0: Any, Jn: Any, Jt: Any, Jo: Any, phi0: Any, mu: Any, K: Any,
                            B: Any, Bt: Any, h: float, **options: Any) -> Result:
    """``CompliantFriction(M, f, v0, Jn, Jt, Jo, phi0, mu, K, B, Bt, h).solve(**options)``."""
    return CompliantFriction(M, f, v0, Jn, Jt, Jo, phi0, mu, K, B, Bt, h).solve(**options)
