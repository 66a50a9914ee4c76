"""A globalized semismooth Newton method for fc3d(W, q, mu) (the default cone solver).

Problem (see :mod:`contactmp.solvers.fc3d.problem`): find ``r`` and ``u = W r + q`` with, per contact
``j`` (order normal, t1, t2), ``r_j in K_j``, ``u_hat_j = u_j + mu_j ||u_jT|| e_n in K_j^*`` and
``r_j . u_hat_j = 0``. For ``K_j = {||r_T|| <= mu r_n}`` this is exactly Coulomb's law with
Signorini's condition: ``0 <= r_n _|_ u_n >= 0``; ``u_T = 0 => ||r_T|| <= mu r_n``;
``u_T != 0 => r_T = -mu r_n u_T / ||u_T||`` (De Saxce's ``mu ||u_T||`` term only shifts
``u_n`` by what the cone's geometry needs).

Formulations (option ``formulation``), each a nonsmooth system ``Phi(r) = 0`` whose rows for
contact ``j`` depend on ``(r_j, u_j)`` only, so an element of the generalized Jacobian is
``H = A + B W`` with ``A``, ``B`` block diagonal (3 x 3 per contact), assembled dense or sparse:

``"ac"`` (default), Alart and Curnier (1991), as in Siconos' NSN_AC (its "standard" form)::

    Phi_n = r_n - max(0, r_n - rho u_n)
    Phi_T = r_T - P_D(mu max(0, r_n - rho u_n)) (r_T - rho u_T)

``P_D(R)`` the projection onto the disc of radius ``R``. Its zeros are Coulomb's law above, so
``mu ||u_T||`` (the non-monotone part) is carried by the tangential projection and never
differentiated.

``"fb"``, the Fischer-Burmeister function of the second-order cone (Fukushima, Luo and Tseng
2001; Hayashi, Yamashita and Fukushima 2005) on ``x = (mu r_n, r_T)`` and
``y = rho (u_hat_n, mu u_T)``, which lie in the unit cone exactly when ``r in K_mu`` and
``u_hat in K_mu^*``, with ``x . y = rho mu r . u_hat``. Its merit ``||Phi||^2`` is smooth except
where ``u_T = 0`` (De Saxce's term).

``"natural"``, the natural map with De Saxce's velocity: ``Phi = r - P_K(r - rho u_hat)``.

Where ``||u_T||`` is differentiated (fb, natural) its zero subgradient is used at ``u_T = 0``.

``rho`` (option ``rho``): ``None`` gives ``rho_j = 1 / ||W_jj||_2``, the spectral norm of the
contact's diagonal 3 x 3 block (Siconos' "spectral norm" strategy): ``r - rho u`` is then a
Jacobi-like local update, ``Phi`` has units of force and ``H`` is dimensionless with entries of
order one. Measured: Newton alone (300 iterations) with a constant ``rho = 1`` solved 10 of 40
random rank-deficient problems and 18 of the 19 shared ones, against 34 and 19 with this choice;
an earlier version of the iteration with ``1 / W_nn`` for the normal and ``1 / lambda_max(W_TT)``
for the tangential rows solved 15 of the 19 shared problems, against 19. A positive number or
``nc`` values fix ``rho``.

One Newton iteration, on the merit ``psi = ||Phi||^2 / 2`` with the nonmonotone Armijo test of
Grippo, Lampariello and Lucidi (against ``ref``, the largest of the last ``memory`` values),
tries in turn:

1. Newton: ``H d = -Phi`` (dense LU, or sparse LU when W is sparse), accepted along
   ``r + t d``, ``t = 1, beta, beta^2, ...``, when ``psi(r + t d) <= ref - 2 sigma t psi(r)``;
2. when ``H`` is singular (a rank-deficient W makes it singular whenever enough contacts stick)
   or that search fails, the regularized step ``(H + nu I) d = -Phi``, ``nu = reg * res``
   (``res`` the dimensionless natural-map residual), with ``psi(r + t d) <= ref + sigma t g^T d``,
   ``g = H^T Phi``;
3. then a Levenberg-Marquardt step ``(H^T H + nu I) d = -g`` (Yamashita and Fukushima), same test;
4. then the fixed-point step ``r - Phi(r)`` (the projection iteration of the formulation).

Fallbacks (option ``fallback``, tried in order when ``psi`` has not halved in ``stall``
iterations or when no step decreases it), each from the best iterate so far:

``"fb"``: Newton on the Fischer-Burmeister function with the velocity weighted by
``fb_weight * rho``. Measured (100 iterations in all): AC then prox solved 29 of 40 random
rank-deficient problems and 53 of 57 perturbed shared ones; AC then fb then prox 34 and 52-53.
Weights 30 to 100 did best (1000: 32 of 40; the plain ``rho``: 28 of 40).

``"prox"``: the proximal point method (Rockafellar; Siconos' PROX): with
``S = diag(s_j ||W_jj||_2)`` and the centre ``c``, solve fc3d(W + S, q - S c, mu) by the same
Newton iteration (``W + S`` is positive definite when W is semidefinite, so its Jacobian is
regular much more often), then move the centre. A fixed point ``c`` solves fc3d(W, q, mu). The
weight ``s = prox_sigma * 10^k * min(res, 1)`` follows the residual, with ``k`` raised after a
failed inner solve and lowered after a good one.

The method stops when the independent natural-map residual
:func:`~contactmp.solvers.fc3d.problem.fc3d_residual` is ``<= tol`` and, as the independent check also
demands, the dual-cone violation of ``u_hat`` (:func:`dual_violation`) is ``<= sqrt(tol)``
(Siconos' residual divides by ``||r||``, which a diverging ``r`` dilutes); the answer goes back through
:func:`~contactmp.solvers.fc3d.problem.verified_fc3d_result`. ``iterations`` counts every Newton
iteration of every phase (proximal inner iterations included); ``max_iter`` bounds that total.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numba
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from contactmp.errors import InputError, OptionError
from contactmp.progress import Reporter, check_progress
from contactmp.result import Result, Status
from contactmp.solvers.fc3d.problem import (
    build_options, dual_violation, ending_status, fc3d_residual, project_cone, validate_fc3d,
    verified_fc3d_result,
)
from contactmp.solvers.options import SolverOptions, check_int, check_real
from contactmp.validate import validate_start

NAME = "newton"

FORMULATIONS = ("ac", "fb", "natural")
FALLBACKS = ("fb", "prox")


@dataclass
class Options(SolverOptions):
    """Options of the semismooth Newton method for fc3d.

    Attributes
    ----------
    tol : natural-map residual (:func:`fc3d_residual`) at which to stop.
    max_iter : Newton iterations in all phases (proximal inner iterations included).
    formulation : ``"ac"`` (Alart-Curnier), ``"fb"`` (Fischer-Burmeister) or ``"natural"``.
    rho : ``None`` (``1 / ||W_jj||_2`` per contact), a positive number, or ``nc`` positive numbers.
    sigma : Armijo constant in ``(0, 1)``.
    beta : backtracking factor in ``(0, 1)``.
    memory : nonmonotone memory (1 gives the monotone Armijo rule).
    min_step : smallest step length tried before the next kind of step.
    reg : weight of the regularized step, ``nu = reg * residual``.
    stall : iterations without halving ``psi`` after which a phase gives way to the next.
    fallback : the phases tried after the first one stalls, in order (any of ``"fb"``,
        ``"prox"``; ``()`` stops with ``not_solved`` instead).
    fb_weight : velocity weight of the ``"fb"`` fallback, relative to ``rho``.
    prox_sigma : proximal weight per unit residual (relative to ``||W_jj||_2``).
    sparse : ``"auto"`` (sparse LU when W has density <= 0.1 and more than 60 rows), ``True`` or
        ``False``.
    time_limit : wall-clock seconds (``inf`` or ``None`` for none), checked before every
        iteration; when exceeded the status is ``time_limit`` and the answer the iterate of least
        natural-map residual so far.
    r0 : warm start (``3 nc`` values); ``None`` starts from ``r = 0``.
    """

    tol: float = 1e-8
    max_iter: int = 100
    formulation: str = "ac"
    rho: Any = None
    sigma: float = 1e-4
    beta: float = 0.5
    memory: int = 5
    min_step: float = 1e-10
    reg: float = 1e-1
    stall: int = 20
    fallback: tuple = FALLBACKS
    fb_weight: float = 100.0
    prox_sigma: float = 10.0
    sparse: Any = "auto"
    time_limit: float = math.inf
    r0: Any = None

    def check(self) -> None:
        """Reject ill-typed or out-of-range values."""
        super().check()
        for name, low in (("max_iter", 0), ("memory", 1), ("stall", 1)):
            check_int(name, getattr(self, name), low)
        if self.formulation not in FORMULATIONS:
            raise OptionError(f"formulation must be one of {FORMULATIONS}, got {self.formulation!r}")
        for name in ("sigma", "beta"):
            check_real(name, getattr(self, name), 0.0, 1.0)
        for name in ("min_step", "reg", "fb_weight", "prox_sigma"):
            check_real(name, getattr(self, name), 0.0)
        fb = self.fallback
        if isinstance(fb, str) or not isinstance(fb, (tuple, list)) or any(f not in FALLBACKS for f in fb):
            raise OptionError(f"fallback must be a sequence of {FALLBACKS}, got {fb!r}")
        if not (isinstance(self.sparse, bool) or (isinstance(self.sparse, str) and self.sparse == "auto")):
            raise OptionError(f"sparse must be 'auto', True or False, got {self.sparse!r}")
        if self.rho is not None:
            try:
                rho = np.asarray(self.rho, dtype=np.float64)
            except (TypeError, ValueError):
                raise OptionError(
                    f"rho must be None, a positive number or an array, got {self.rho!r}") from None
            if rho.ndim > 1 or not np.isfinite(rho).all() or not (rho > 0).all():
                raise OptionError(
                    f"rho must be positive and finite (a number or one per contact), got {self.rho!r}")


# ------------------------------------------------------------------------------------------------
# The per-contact functions and their generalized Jacobians (compiled)
# ------------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def ac_eval(r, u, mu, rho, phi, A, B, jac):  # pragma: no cover - compiled
    """Alart-Curnier ``Phi`` into ``phi``; with ``jac`` also ``A = dPhi/dr``, ``B = dPhi/du``."""
    nc = mu.shape[0]
    for j in range(nc):
        i = 3 * j
        h = rho[j]
        xn = r[i] - h * u[i]
        pn = xn if xn > 0.0 else 0.0
        phi[i] = r[i] - pn
        x1 = r[i + 1] - h * u[i + 1]
        x2 = r[i + 2] - h * u[i + 2]
        rad = mu[j] * pn
        s = math.sqrt(x1 * x1 + x2 * x2)
        inside = s <= rad
        if inside:
            phi[i + 1] = h * u[i + 1]
            phi[i + 2] = h * u[i + 2]
        else:
            phi[i + 1] = r[i + 1] - rad * x1 / s
            phi[i + 2] = r[i + 2] - rad * x2 / s
        if not jac:
            continue
        for a in range(3):
            for b in range(3):
                A[j, a, b] = 0.0
                B[j, a, b] = 0.0
        if xn > 0.0:
            B[j, 0, 0] = h
        else:
            A[j, 0, 0] = 1.0
        if inside:
            B[j, 1, 1] = h
            B[j, 2, 2] = h
        else:
            # d(rad e) = e d rad + (rad / s)(I - e e^T) dx,  dx = dr_T - rho du_T,
            # d rad = mu [xn > 0] (dr_n - rho du_n)
            e1, e2 = x1 / s, x2 / s
            if xn > 0.0:
                A[j, 1, 0] = -mu[j] * e1
                A[j, 2, 0] = -mu[j] * e2
                B[j, 1, 0] = mu[j] * h * e1
                B[j, 2, 0] = mu[j] * h * e2
            c = rad / s
            p11, p12, p22 = c * (1.0 - e1 * e1), -c * e1 * e2, c * (1.0 - e2 * e2)
            A[j, 1, 1] = 1.0 - p11
            A[j, 1, 2] = -p12
            A[j, 2, 1] = -p12
            A[j, 2, 2] = 1.0 - p22
            B[j, 1, 1] = h * p11
            B[j, 1, 2] = h * p12
            B[j, 2, 1] = h * p12
            B[j, 2, 2] = h * p22


@numba.njit(cache=True)
def _natural_eval(r, u, mu, rho, phi, A, B, jac):  # pragma: no cover - compiled
    """Natural map ``r - P_K(r - rho u_hat)`` into ``phi``; with ``jac`` also ``A``, ``B``."""
    nc = mu.shape[0]
    P = np.zeros((3, 3))
    for j in range(nc):
        i = 3 * j
        m, h = mu[j], rho[j]
        ut = math.sqrt(u[i + 1] ** 2 + u[i + 2] ** 2)
        xn = r[i] - h * (u[i] + m * ut)
        x1 = r[i + 1] - h * u[i + 1]
        x2 = r[i + 2] - h * u[i + 2]
        s = math.sqrt(x1 * x1 + x2 * x2)
        for a in range(3):
            for b in range(3):
                P[a, b] = 0.0
        if s <= m * xn:  # inside K
            pn, p1, p2 = xn, x1, x2
            P[0, 0] = P[1, 1] = P[2, 2] = 1.0
        elif m * s <= -xn:  # inside the polar cone
            pn = p1 = p2 = 0.0
        else:
            k = 1.0 / (1.0 + m * m)
            a_ = (xn + m * s) * k
            e1, e2 = x1 / s, x2 / s
            pn, p1, p2 = a_, m * a_ * e1, m * a_ * e2
            # da = k (dxn + m e . dxT); d(m a e) = m e da + m a (I - e e^T) dxT / s
            P[0, 0] = k
            P[0, 1] = k * m * e1
            P[0, 2] = k * m * e2
            c = m * a_ / s
            P[1, 0] = m * e1 * k
            P[2, 0] = m * e2 * k
            P[1, 1] = m * e1 * k * m * e1 + c * (1.0 - e1 * e1)
            P[1, 2] = m * e1 * k * m * e2 - c * e1 * e2
            P[2, 1] = m * e2 * k * m * e1 - c * e1 * e2
            P[2, 2] = m * e2 * k * m * e2 + c * (1.0 - e2 * e2)
        phi[i] = r[i] - pn
        phi[i + 1] = r[i + 1] - p1
        phi[i + 2] = r[i + 2] - p2
        if not jac:
            continue
        # dx = dr - h D du with D = I + e_n (m u_T / ||u_T||)^T (zero subgradient at u_T = 0)
        g1 = m * u[i + 1] / ut if ut > 0.0 else 0.0
        g2 = m * u[i + 2] / ut if ut > 0.0 else 0.0
        for a in range(3):
            for b in range(3):
                A[j, a, b] = (1.0 if a == b else 0.0) - P[a, b]
            B[j, a, 0] = h * P[a, 0]
            B[j, a, 1] = h * (P[a, 1] + P[a, 0] * g1)
            B[j, a, 2] = h * (P[a, 2] + P[a, 0] * g2)


@numba.njit(cache=True)
def _fb_eval(r, u, mu, rho, phi, A, B, jac):  # pragma: no cover - compiled
    """Fischer-Burmeister function of the second-order cone (Fukushima, Luo and Tseng 2001).

    Per contact with ``mu > 0``: ``x = (mu r_n, r_T)`` and ``y = rho (u_hat_n, mu u_T)`` lie in
    the unit cone ``K_1`` exactly when ``r in K_mu`` and ``u_hat in K_mu^*``, and
    ``x . y = rho mu r . u_hat``; ``Phi = x + y - (x o x + y o y)^(1/2)`` in the Jordan algebra of
    ``K_1``. With ``mu = 0``: the scalar FB function of ``(r_n, rho u_n)`` and ``Phi_T = r_T``.
    """
    nc = mu.shape[0]
    Lx = np.zeros((3, 3))
    Ly = np.zeros((3, 3))
    Li = np.zeros((3, 3))
    for j in range(nc):
        i = 3 * j
        m, h = mu[j], rho[j]
        if jac:
            for a in range(3):
                for b in range(3):
                    A[j, a, b] = 0.0
                    B[j, a, b] = 0.0
        if m == 0.0:
            a_, b_ = r[i], h * u[i]
            s = math.sqrt(a_ * a_ + b_ * b_)
            phi[i] = a_ + b_ - s
            phi[i + 1] = r[i + 1]
            phi[i + 2] = r[i + 2]
            if jac:
                if s > 0.0:
                    A[j, 0, 0] = 1.0 - a_ / s
                    B[j, 0, 0] = h * (1.0 - b_ / s)
                else:
                    A[j, 0, 0] = 1.0 - 1.0 / math.sqrt(2.0)
                    B[j, 0, 0] = h * (1.0 - 1.0 / math.sqrt(2.0))
                A[j, 1, 1] = 1.0
                A[j, 2, 2] = 1.0
            continue
        ut = math.sqrt(u[i + 1] ** 2 + u[i + 2] ** 2)
        x0, x1, x2 = m * r[i], r[i + 1], r[i + 2]
        y0, y1, y2 = h * (u[i] + m * ut), h * m * u[i + 1], h * m * u[i + 2]
        w0 = x0 * x0 + x1 * x1 + x2 * x2 + y0 * y0 + y1 * y1 + y2 * y2
        w1 = 2.0 * (x0 * x1 + y0 * y1)
        w2 = 2.0 * (x0 * x2 + y0 * y2)
        nw = math.sqrt(w1 * w1 + w2 * w2)
        if nw > 0.0:
            e1, e2 = w1 / nw, w2 / nw
        else:
            e1, e2 = 1.0, 0.0
        l1 = max(w0 - nw, 0.0)
        l2 = w0 + nw
        s1, s2 = math.sqrt(l1), math.sqrt(l2)
        phi[i] = x0 + y0 - 0.5 * (s1 + s2)
        phi[i + 1] = x1 + y1 - 0.5 * (s2 - s1) * e1
        phi[i + 2] = x2 + y2 - 0.5 * (s2 - s1) * e2
        if not jac:
            continue
        if w0 == 0.0:  # x = y = 0: the limit along x = y inside the cone
            c = 1.0 - 1.0 / math.sqrt(2.0)
            for a in range(3):
                for b in range(3):
                    Lx[a, b] = c if a == b else 0.0
                    Ly[a, b] = Lx[a, b]
        else:
            # z = sqrt(w + 2 eps^2 e) with eps^2 = 1e-20 w0: the Jacobian of the smoothed function,
            # which tends to an element of the B-subdifferential (Jacobian consistency)
            d = 2e-20 * w0
            t1, t2 = math.sqrt(l1 + d), math.sqrt(l2 + d)
            z0 = 0.5 * (t1 + t2)
            za, zb = 0.5 * (t2 - t1) * e1, 0.5 * (t2 - t1) * e2
            det = t1 * t2
            # L_z^{-1} = [[z0, -zb^T], [-zb, (det / z0) I + zb zb^T / z0]] / det
            Li[0, 0] = z0 / det
            Li[0, 1] = -za / det
            Li[0, 2] = -zb / det
            Li[1, 0] = -za / det
            Li[2, 0] = -zb / det
            Li[1, 1] = 1.0 / z0 + za * za / (z0 * det)
            Li[1, 2] = za * zb / (z0 * det)
            Li[2, 1] = Li[1, 2]
            Li[2, 2] = 1.0 / z0 + zb * zb / (z0 * det)
            # V = I - L_z^{-1} L_v with L_v = [[v0, vb^T], [vb, v0 I]]
            for a in range(3):
                for b in range(3):
                    sx = 0.0
                    sy = 0.0
                    for k in range(3):
                        if k == 0:
                            lxk = x0 if b == 0 else (x1 if b == 1 else x2)
                            lyk = y0 if b == 0 else (y1 if b == 1 else y2)
                        elif b == 0:
                            lxk = x1 if k == 1 else x2
                            lyk = y1 if k == 1 else y2
                        else:
                            lxk = x0 if k == b else 0.0
                            lyk = y0 if k == b else 0.0
                        sx += Li[a, k] * lxk
                        sy += Li[a, k] * lyk
                    Lx[a, b] = (1.0 if a == b else 0.0) - sx
                    Ly[a, b] = (1.0 if a == b else 0.0) - sy
        # x = D1 r, D1 = diag(m, 1, 1); y = h D2 G u, D2 = diag(1, m, m),
        # G = I + e_n (m u_T / ||u_T||)^T (zero subgradient at u_T = 0)
        g1 = m * u[i + 1] / ut if ut > 0.0 else 0.0
        g2 = m * u[i + 2] / ut if ut > 0.0 else 0.0
        for a in range(3):
            A[j, a, 0] = Lx[a, 0] * m
            A[j, a, 1] = Lx[a, 1]
            A[j, a, 2] = Lx[a, 2]
            B[j, a, 0] = h * Ly[a, 0]
            B[j, a, 1] = h * (Ly[a, 0] * g1 + m * Ly[a, 1])
            B[j, a, 2] = h * (Ly[a, 0] * g2 + m * Ly[a, 2])


@numba.njit(cache=True)
def _natural_error(r, u, mu):  # pragma: no cover - compiled
    """``||r - P_K(r - u_hat)||`` for a given ``u`` (the numerator of :func:`fc3d_residual`)."""
    m = r.shape[0]
    v = np.empty(m)
    for j in range(mu.shape[0]):
        i = 3 * j
        ut = math.sqrt(u[i + 1] ** 2 + u[i + 2] ** 2)
        v[i] = r[i] - u[i] - mu[j] * ut
        v[i + 1] = r[i + 1] - u[i + 1]
        v[i + 2] = r[i + 2] - u[i + 2]
    p = project_cone(v, mu)
    err = 0.0
    for i in range(m):
        err += (r[i] - p[i]) ** 2
    return math.sqrt(err)


# ------------------------------------------------------------------------------------------------
# One problem: Phi, H = A + B W and the linear solves, dense or sparse
# ------------------------------------------------------------------------------------------------


def default_rho(W: np.ndarray | sp.spmatrix) -> np.ndarray:
    """``rho_j = 1 / ||W_jj||_2`` per contact (``W_jj`` the diagonal 3 x 3 block of contact j).

    A zero block falls back to the largest diagonal entry of W (and to 1 if W is zero).
    """
    norms = _spectral_norms(np.ascontiguousarray(_diag_blocks(W)))
    diag = W.diagonal() if sp.issparse(W) else np.diag(W)
    biggest = float(np.max(np.abs(diag)))
    norms = np.where(norms > 0, norms, biggest if biggest > 0 else 1.0)
    return 1.0 / norms


@numba.njit(cache=True)
def _spectral_norms(blocks):  # pragma: no cover - compiled
    """``||W_jj||_2`` (largest singular value) of each 3 x 3 block of ``blocks`` (nc, 3, 3)."""
    out = np.empty(blocks.shape[0])
    for j in range(blocks.shape[0]):
        out[j] = np.linalg.norm(blocks[j].copy(), 2)
    return out


@numba.njit(cache=True)
def _eval(code, r, u, mu, rho, phi, A, B, jac):  # pragma: no cover - compiled
    """The formulation ``code`` (0 ac, 1 fb, 2 natural) into ``phi`` (and ``A``, ``B``)."""
    if code == 0:
        ac_eval(r, u, mu, rho, phi, A, B, jac)
    elif code == 1:
        _fb_eval(r, u, mu, rho, phi, A, B, jac)
    else:
        _natural_eval(r, u, mu, rho, phi, A, B, jac)


@numba.njit(cache=True)
def merit_kernel(phi):  # pragma: no cover - compiled
    """``||phi||^2 / 2``, ``inf`` when not finite."""
    v = 0.0
    for i in range(phi.shape[0]):
        v += phi[i] * phi[i]
    v *= 0.5
    return v if np.isfinite(v) else np.inf


@numba.njit(cache=True)
def _eval_merit(code, r, u, mu, rho, phi, A, B, jac):  # pragma: no cover - compiled
    """``phi <- Phi(r)`` at ``u`` (and the blocks with ``jac``); returns the merit ``||phi||^2 / 2``."""
    _eval(code, r, u, mu, rho, phi, A, B, jac)
    return merit_kernel(phi)


@numba.njit(cache=True)
def _dense_jacobian(A, B, W, H):  # pragma: no cover - compiled
    """``H <- A + B W`` with ``A``, ``B`` block diagonal (nc, 3, 3)."""
    n = W.shape[0]
    for j in range(A.shape[0]):
        for a in range(3):
            i = 3 * j + a
            b0, b1, b2 = B[j, a, 0], B[j, a, 1], B[j, a, 2]
            for k in range(n):
                H[i, k] = b0 * W[3 * j, k] + b1 * W[3 * j + 1, k] + b2 * W[3 * j + 2, k]
            for b in range(3):
                H[i, 3 * j + b] += A[j, a, b]


_CODES = {"ac": 0, "fb": 1, "natural": 2}


def _diag_blocks(W: np.ndarray | sp.spmatrix) -> np.ndarray:
    """The ``nc`` diagonal 3 x 3 blocks of W as an ``(nc, 3, 3)`` array."""
    nc = W.shape[0] // 3
    if sp.issparse(W):
        return np.stack([W[3 * j:3 * j + 3, 3 * j:3 * j + 3].toarray() for j in range(nc)])
    idx = np.arange(nc)
    return W.reshape(nc, 3, nc, 3)[idx, :, idx, :]


class _Problem:
    """fc3d(W, q, mu) with a formulation and weights: ``Phi``, ``H = A + B W``, linear solves."""

    def __init__(self, W: np.ndarray | sp.csr_matrix, q: np.ndarray, mu: np.ndarray,
                 rho: np.ndarray, formulation: str):
        self.W, self.q, self.mu, self.rho = W, q, mu, rho
        self.n, self.nc = q.shape[0], mu.shape[0]
        self.sparse = sp.issparse(W)
        self.code = _CODES[formulation]
        self.A = np.zeros((self.nc, 3, 3))
        self.B = np.zeros((self.nc, 3, 3))
        self.qnorm = float(np.linalg.norm(q))

    def phi(self, r: np.ndarray, jac: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(Phi(r), u)``; with ``jac`` the blocks ``A``, ``B`` are refreshed."""
        out, u, _ = self.phi_merit(r, jac)
        return out, u

    def phi_merit(self, r: np.ndarray, jac: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
        """``(Phi(r), u, ||Phi(r)||^2 / 2)``: ``u = W r + q`` by BLAS (as before: the iterates of hard
        problems depend on its round-off), then one compiled pass for ``Phi`` and the merit."""
        r = np.ascontiguousarray(r, dtype=np.float64)
        out = np.empty_like(r)
        if self.sparse:
            u = np.ascontiguousarray(self.W @ r + self.q)
            psi = _eval_merit(self.code, r, u, self.mu, self.rho, out, self.A, self.B, jac)
            return out, u, float(psi)
        u = self.W @ r + self.q
        psi = _eval_merit(self.code, r, u, self.mu, self.rho, out, self.A, self.B, jac)
        return out, u, float(psi)

    def merit(self, r: np.ndarray) -> float:
        """``||Phi(r)||^2 / 2``."""
        return self.phi_merit(r)[2]

    def residual(self, r: np.ndarray, u: np.ndarray) -> float:
        """The normalized natural-map residual of this problem at ``(r, u)``."""
        if not (np.isfinite(r).all() and np.isfinite(u).all()):
            return math.inf
        err = _natural_error(r, u, self.mu)
        scale = max(self.qnorm, float(np.linalg.norm(r)), float(np.linalg.norm(u)))
        return err / scale if scale > 0 else err

    def jacobian(self) -> np.ndarray | sp.csc_matrix:
        """``H = A + B W`` from the current blocks (dense array or CSC matrix)."""
        n, nc = self.n, self.nc
        if self.sparse:
            blocks = (np.arange(nc), np.arange(nc + 1))
            A = sp.bsr_matrix((self.A, *blocks), shape=(n, n))
            B = sp.bsr_matrix((self.B, *blocks), shape=(n, n))
            return (A + B.tocsr() @ self.W).tocsc()
        H = np.empty((n, n))
        _dense_jacobian(self.A, self.B, self.W, H)
        return H

    def solve(self, H: np.ndarray | sp.csc_matrix, rhs: np.ndarray, shift: float = 0.0) -> np.ndarray | None:
        """Solve ``(H + shift I) d = rhs``; ``None`` when singular or non-finite."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                if self.sparse:
                    M = (H + shift * sp.identity(self.n, format="csc")).tocsc() if shift else H
                    d = spla.splu(M).solve(rhs)
                else:
                    return _dense_solve(H, rhs, shift)
            except (RuntimeError, ValueError, np.linalg.LinAlgError):
                return None
        return d if np.isfinite(d).all() else None

    def levenberg_marquardt(self, H: np.ndarray | sp.csc_matrix, g: np.ndarray,
                            nu: float) -> np.ndarray | None:
        """Solve ``(H^T H + nu I) d = -g``; ``None`` on failure."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                if self.sparse:
                    N = (H.T @ H + nu * sp.identity(self.n, format="csc")).tocsc()
                    d = spla.splu(N).solve(-g)
                else:
                    N = H.T @ H
                    N[np.diag_indices_from(N)] += nu
                    d = sla.solve(N, -g, assume_a="pos", check_finite=False)
            except (RuntimeError, ValueError, np.linalg.LinAlgError):
                return None
        return d if np.isfinite(d).all() else None


def _dense_solve(H: np.ndarray, rhs: np.ndarray, shift: float = 0.0) -> np.ndarray | None:
    """``(H + shift I)^{-1} rhs`` by LAPACK's LU (getrf/getrs called directly: the scipy.linalg
    wrappers cost more than the factorization at these sizes); ``None`` when a pivot is below
    ``1e-13`` times the largest or the answer is not finite."""
    if shift:
        M = H.copy()
        M.flat[::H.shape[0] + 1] += shift
    else:
        M = H
    lu, piv, info = _getrf(M, overwrite_a=shift != 0.0)
    if info < 0:
        return None
    pivots = np.abs(lu.diagonal())
    if not pivots.min() > 1e-13 * max(pivots.max(), 1e-300):
        return None
    d, info = _getrs(lu, piv, rhs)
    if info != 0 or not np.isfinite(d).all():
        return None
    return d


_getrf, _getrs = sla.get_lapack_funcs(("getrf", "getrs"), (np.empty((1, 1)),))


# ------------------------------------------------------------------------------------------------
# The globalized Newton iteration on one problem
# ------------------------------------------------------------------------------------------------


@dataclass
class _Run:
    """Outcome of a phase: its best iterate, that iterate's residual and how the phase ended."""

    r: np.ndarray
    res: float
    iterations: int
    reason: str  # "converged", "stalled", "no_step", "budget", "time", "nonfinite"

    @property
    def converged(self) -> bool:
        return self.reason == "converged"


def _newton(prob: _Problem, r: np.ndarray, opts: Options, budget: int, deadline: float,
            check: Callable[[np.ndarray, np.ndarray], float], tol: float,
            counts: dict[str, int]) -> _Run:
    """Globalized semismooth Newton on ``prob`` from ``r`` until ``check(r, u) <= tol``.

    ``check`` returns the dimensionless residual that decides convergence (and sets the
    regularization weight). Returns the iterate with the smallest ``check`` value.
    """
    phi, u, psi = prob.phi_merit(r, jac=True)
    history = [psi]
    best = (math.inf, r)
    stall_ref, stall_k = psi, 0
    k = 0
    while True:
        res = check(r, u)
        if res < best[0]:
            best = (res, r)
        if res <= tol:
            return _Run(r, res, k, "converged")
        if not math.isfinite(psi):
            return _Run(best[1], best[0], k, "nonfinite")
        if k >= budget:
            return _Run(best[1], best[0], k, "budget")
        if time.perf_counter() > deadline:
            return _Run(best[1], best[0], k, "time")
        if psi <= 0.5 * stall_ref:
            stall_ref, stall_k = psi, k
        elif k - stall_k >= opts.stall:
            return _Run(best[1], best[0], k, "stalled")
        ref = max(history[-opts.memory:])
        H = prob.jacobian()
        step, kind = None, "newton_steps"
        d = prob.solve(H, -phi)
        if d is not None:
            step = _search(prob, r, d, ref, -2.0 * psi, opts)
        if step is None:
            g = np.asarray(H.T @ phi).ravel()
            nu = opts.reg * min(res, 1.0)
            kind, d = "regularized_steps", prob.solve(H, -phi, nu)
            if d is not None and float(g @ d) < 0:
                step = _search(prob, r, d, ref, float(g @ d), opts)
            if step is None:
                kind, d = "lm_steps", prob.levenberg_marquardt(H, g, nu)
                if d is not None and float(g @ d) < 0:
                    step = _search(prob, r, d, ref, float(g @ d), opts)
        if step is None:
            kind, trial = "fixed_point_steps", r - phi
            if prob.merit(trial) < ref:
                step = trial
        if step is None:
            return _Run(best[1], best[0], k, "no_step")
        counts[kind] += 1
        r = step
        phi, u, psi = prob.phi_merit(r, jac=True)
        history.append(psi)
        k += 1


def _search(prob: _Problem, r: np.ndarray, d: np.ndarray, ref: float, slope: float,
            opts: Options) -> np.ndarray | None:
    """Nonmonotone Armijo backtracking along ``r + t d``: ``psi <= ref + sigma t slope``."""
    t = 1.0
    while t >= opts.min_step:
        trial = r + t * d
        if prob.merit(trial) <= ref + opts.sigma * t * slope:
            return trial
        t *= opts.beta
    return None


def _proximal(Wm: np.ndarray | sp.csr_matrix, q: np.ndarray, mu: np.ndarray, c: np.ndarray,
              res: float, check: Callable[[np.ndarray, np.ndarray], float], opts: Options,
              budget: int, deadline: float, counts: dict[str, int]) -> _Run:
    """Proximal-point loop from the centre ``c``: solve fc3d(W + S, q - S c) by :func:`_newton`.

    ``check(r, u)`` is the residual of the original problem, ``res`` its value at ``c``.
    """
    scale = np.repeat(1.0 / default_rho(Wm), 3)  # ||W_jj||_2 per row
    level = 1.0
    used = 0
    best = (res, c)
    while True:
        if res <= opts.tol:
            return _Run(c, res, used, "converged")
        if used >= budget:
            return _Run(best[1], best[0], used, "budget")
        if time.perf_counter() > deadline:
            return _Run(best[1], best[0], used, "time")
        s = opts.prox_sigma * level * min(res, 1.0) * scale
        Ws = Wm + sp.diags(s, format="csr") if sp.issparse(Wm) else Wm + np.diag(s)
        sub = _Problem(Ws, q - s * c, mu, default_rho(Ws), opts.formulation)
        run = _newton(sub, c, opts, budget - used, deadline, sub.residual,
                      max(0.1 * opts.tol, 0.1 * res), counts)
        used += max(run.iterations, 1)
        counts["prox_iterations"] += 1
        if run.converged or run.res < 0.9 * res:
            c, res = run.r, check(run.r, Wm @ run.r + q)
            if res < best[0]:
                best = (res, c)
            level = max(level / 10.0, 1.0)
        else:
            level = min(level * 10.0, 1e12)


# ------------------------------------------------------------------------------------------------
# The solver
# ------------------------------------------------------------------------------------------------


def solve(W: Any, q: Any, mu: Any, options: Options | None = None, progress: Reporter | None = None,
          **overrides: Any) -> Result:
    """Solve fc3d(W, q, mu) by the globalized semismooth Newton method of the module docstring.

    Returns a :class:`Result` with ``x = r`` and ``extras["u"] = W r + q``; the status is
    ``solved`` only if :func:`fc3d_residual` ``<= tol``. ``extras`` also counts the kinds of
    steps (``newton_steps``, ``regularized_steps``, ``lm_steps``, ``fixed_point_steps``), the
    proximal outer iterations (``prox_iterations``) and lists the ``phases`` run. A ``progress``
    reporter (see :mod:`contactmp.progress`) is called with every residual check (once per
    iteration; the count reported is that of the checks).
    """
    t0 = time.perf_counter()
    W, q, mu = validate_fc3d(W, q, mu)
    opts = build_options(Options, options, overrides)
    n, nc = q.shape[0], mu.shape[0]
    r = validate_start(opts.r0, n, "r0")
    if opts.rho is None:
        rho = default_rho(W)
    else:
        rho = np.asarray(opts.rho, dtype=np.float64)
        rho = np.full(nc, float(rho)) if rho.ndim == 0 else np.ascontiguousarray(rho)
        if rho.shape != (nc,):
            raise InputError("rho", f"has {rho.shape[0]} entries but the problem has {nc} contacts")
    use_sparse = opts.sparse if isinstance(opts.sparse, bool) else (
        n > 60 and np.count_nonzero(W) <= 0.1 * n * n
    )
    Wm = sp.csr_matrix(W) if use_sparse else W
    deadline = t0 + (math.inf if opts.time_limit is None else opts.time_limit)
    report = check_progress(progress)
    checks = [0]

    def outer(r_: np.ndarray, u_: np.ndarray) -> float:
        res = fc3d_residual(W, q, mu, r_)
        if report is not None:
            checks[0] += 1
            report(NAME, checks[0], res)
        if res <= opts.tol:  # the guard of verified_fc3d_result against a huge r
            dual = dual_violation(q, mu, u_)
            if not dual <= math.sqrt(opts.tol):
                return max(res, dual)
        return res

    counts = dict.fromkeys(("newton_steps", "regularized_steps", "lm_steps", "fixed_point_steps",
                            "prox_iterations"), 0)
    run = _newton(_Problem(Wm, q, mu, rho, opts.formulation), r, opts, opts.max_iter, deadline,
                  outer, opts.tol, counts)
    phases = [f"{opts.formulation}: {run.reason} after {run.iterations}"]
    iterations = run.iterations
    for name in opts.fallback:
        if run.reason not in ("stalled", "no_step"):
            break
        if name == "fb":
            fb = _Problem(Wm, q, mu, opts.fb_weight * rho, "fb")
            nxt = _newton(fb, run.r, opts, opts.max_iter - iterations, deadline, outer, opts.tol, counts)
        else:
            nxt = _proximal(Wm, q, mu, run.r, run.res, outer, opts, opts.max_iter - iterations,
                            deadline, counts)
        iterations += nxt.iterations
        phases.append(f"{name}: {nxt.reason} after {nxt.iterations}")
        run = nxt if nxt.res <= run.res or nxt.converged else _Run(run.r, run.res, 0, nxt.reason)
    status, message = _status(run.reason, iterations, run.res)
    return verified_fc3d_result(
        W, q, mu, run.r, solver=NAME, claimed=status, tol=opts.tol, iterations=iterations,
        t_start=t0, message=message, formulation=opts.formulation, sparse=use_sparse,
        phases=phases, **counts,
    )


def _status(reason: str, iterations: int, res: float) -> tuple[Status, str]:
    """The status and message for how the last phase ended."""
    common = ending_status(reason, f"{iterations} iterations", res)
    if common is not None:
        return common
    if reason == "nonfinite":
        return Status.NUMERICAL_ERROR, f"non-finite merit after {iterations} iterations"
    return Status.NOT_SOLVED, (
        f"Newton {reason} after {iterations} iterations (best residual {res:.3e}): ||Phi||^2 stopped"
        " decreasing along the Newton, regularized, Levenberg-Marquardt and fixed-point steps"
    )
