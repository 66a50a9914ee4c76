"""The cone LCP ``K_mu contains x _|_ A x + c in K_mu*`` with ``A`` symmetric positive definite: the
optimality conditions of the strictly convex cone QP ``min 1/2 x^T A x + c^T x, x_i in K_mu_i``.

Drumwright's compliant contact step is such a problem
(:class:`~contactmp.formulations.compliant_friction.CompliantFriction`), and so is every Program whose
pairs are associated :class:`~contactmp.program.ConeComplementarity` constructs
(:func:`contactmp.reductions.to_cone_problem`, the solver front door's cone route). Per contact ``i``
there are ``d`` entries, normal first (``d = 2`` for planar contacts). :func:`solve_cone_lcp` solves
the QP with a backend of :data:`CONE_SOLVERS` (:func:`contactmp.solvers.cone_qp.qp.solve_cone_qp`; the
squared cone loses LICQ at the apex, so IPOPT's answer is polished), polishes it on its active set
(each contact separated / stick / slide with direction ``e``: ``x = T z`` with ``T_i = I``, ``(1, mu
e)`` or empty and ``T^T A T z = -T^T c``, re-estimating ``e = -w_T / ||w_T||``), then by semismooth
Newton steps on the natural map, and judges the answer by :func:`cone_lcp_residual`.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from contactmp.errors import OptionError
from contactmp.result import Result, Status
from contactmp.solvers.fc3d import project_cone
from contactmp.solvers.cone_qp.qp import CONE_QP_SOLVERS, natural_map_newton, solve_cone_qp

__all__ = ["solve_cone_lcp", "cone_lcp_residual", "CONE_SOLVERS"]

#: backends of :func:`solve_cone_lcp` (:data:`contactmp.solvers.cone_qp.qp.CONE_QP_SOLVERS`)
CONE_SOLVERS = tuple(CONE_QP_SOLVERS)


class _ConeLCP:
    """The data ``A``, ``c``, ``mu``, ``d`` and the per-contact scalars ``alpha`` (the largest diagonal
    entry of each contact's block of ``A``; scaling by them keeps the cone invariant)."""

    def __init__(self, A: np.ndarray, c: np.ndarray, mu: np.ndarray, d: int) -> None:
        self.A, self.c, self.mu, self.d = A, c, np.asarray(mu, dtype=float).ravel(), int(d)
        self.nc = self.mu.size
        self.alpha = np.array([np.max(np.diag(A)[i * d:(i + 1) * d]) for i in range(self.nc)])

    def slack(self, lam: Any) -> np.ndarray:
        return self.A @ np.asarray(lam, dtype=float) + self.c

    def residual(self, lam: Any) -> tuple[float, dict[str, float]]:
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

    def solve(self, solver: str = "ipopt", *, tol: float = 1e-10, polish: bool = True,
              polish_iters: int = 8) -> Result:
        """:func:`solve_cone_lcp` of this problem. ``solver``: ``"ipopt"`` (``casadi.nlpsol`` on the
        squared cone ``mu^2 x_n^2 - |x_T|^2 >= 0``, ``x_n >= 0``) or ``"superscs"`` (``casadi.conic``'s
        SuperSCS plugin with the true second-order cones given as ``soc(x_T, mu x_n)`` psd constraints,
        which CasADi hands to SCS as SOC blocks)."""
        if solver not in CONE_SOLVERS:
            raise OptionError(f"unknown cone solver {solver!r}; choose from {CONE_SOLVERS}")
        if not (isinstance(tol, (int, float)) and tol > 0):
            raise OptionError(f"tol must be a positive number, got {tol!r}")
        t0 = time.perf_counter()
        nc, d = self.nc, self.d
        # lambda_i = sigma x_i / sqrt(alpha_i): per-contact scalars keep the cone; A_s = S A S has
        # diagonal entries <= 1 and c_s = S c / sigma entries <= 1 (S = diag(alpha)^-1/2), so the QP IPOPT
        # sees is the same for A, c in any units (k A and c give the same iterates; before, with
        # S = diag(alpha)^-1, IPOPT took 10 iterations at k = 1 and 42 at k = 100 on a box step)
        al = np.repeat(np.sqrt(self.alpha), d)
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
                      extras={"active": best[0::d] > 0, "modes": modes,
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
        ``P_K`` is :func:`contactmp.solvers.fc3d.problem.project_cone` (planar contacts padded with ``o = 0``)."""
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
        eye = np.eye(self.nc * d)
        for k in range(1, iters + 1):
            cols = []
            for i, md in enumerate(modes):
                if md == "stick":
                    cols += [eye[:, i * d + j] for j in range(d)]
                elif md == "slide":
                    col = eye[:, i * d].copy()
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


def cone_lcp_residual(A: Any, c: Any, mu: Any, d: int, x: Any) -> tuple[float, dict[str, float]]:
    """The independent check of ``x``: ``(max_i ||x_i - P_K(x_i - w_i / alpha_i)|| / scale, details)``
    with ``w = A x + c`` and ``scale = max(1, ||x||_inf, ||c_i / alpha_i||_inf)``; the details are
    the separate conic KKT measures (cone violation of ``x``, dual-cone violation of ``w``,
    ``|x_i . w_i|``)."""
    return _ConeLCP(np.asarray(A, dtype=float), np.asarray(c, dtype=float), mu, d).residual(x)


def solve_cone_lcp(A: Any, c: Any, mu: Any, d: int = 3, *, solver: str = "ipopt", tol: float = 1e-10,
                   polish: bool = True, polish_iters: int = 8) -> Result:
    """Solve the cone LCP ``(A, c, mu)`` (``d`` entries per contact; see the module docstring) by
    ``solver`` of :data:`CONE_SOLVERS`; ``status`` is ``SOLVED`` only if :func:`cone_lcp_residual`
    ``<= tol``. ``x`` per contact ``(n, t[, o])``; ``residuals`` the conic KKT measures; ``extras``:
    ``active`` (``x_n > 0``), ``modes`` (``"separated" | "stick" | "slide"``), ``backend_status``,
    ``backend_residual``. The result's ``solver`` is the backend, with ``"+active-set"`` /
    ``"+newton"`` when a polish produced the answer. Never raises on non-convergence."""
    return _ConeLCP(np.asarray(A, dtype=float), np.asarray(c, dtype=float), mu, d).solve(
        solver, tol=tol, polish=polish, polish_iters=polish_iters)
