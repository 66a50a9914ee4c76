"""Sensitivities of an fc3d solution ``r`` (Coulomb cones, see :mod:`contactmp.solvers.fc3d`) with
respect to ``W``, ``q`` and ``mu``, by implicit differentiation on its contact modes.

With ``u = W r + q`` each contact ``j`` is in one mode, and three equations ``F_j(r, u) = 0`` hold
on it:

* **separated** (``r_j = 0``, ``u_jn > 0``): ``F_j = r_j``;
* **sticking** (``r_j`` inside the cone, ``u_j = 0``): ``F_j = u_j``;
* **sliding** (``r_j`` on the cone's boundary, ``u_jn = 0``, ``u_jT != 0``, the friction opposite
  the slip): ``F_j = (u_jn, r_jT + mu_j r_jn u_jT / ||u_jT||)``.

Writing ``F_j = G_j u_j + D_j r_j + ...`` to first order, ``A = G W + D`` and
``dF = G (dW r + dq) + E dmu`` (``E_j = (0, r_jn t_j)``, ``t_j = u_jT / ||u_jT||``, for a sliding
contact), so ``dr = -A^{-1} (G (dW r + dq) + E dmu)`` (:class:`~contactmp.solvers.sensitivity.
ImplicitSensitivity`). A frictionless contact (``mu_j = 0``) in contact is ``F_j = (u_jn, r_jT)``.

Degenerate contacts (no derivative; each is flagged and differentiated on a documented piece):
**grazing** (``r_j = 0`` and ``u_jn = 0``) on the separated piece (``r_j`` stays 0: the one-sided
derivative for data changes that open the contact), and the **stick/slip boundary** (``u_j = 0``
with ``||r_jT|| = mu_j r_jn``) on the sticking piece (for changes that keep it sticking).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError
from contactmp.result import Result
from contactmp.solvers.sensitivity import DEGENERATE_TOL, ImplicitSensitivity, _mat, _vec
from contactmp.validate import validate_fc3d

__all__ = ["FC3DSensitivity", "fc3d_sensitivity", "contact_modes", "MODES"]

#: the modes of :func:`contact_modes`, by code
MODES = ("separated", "sticking", "sliding", "grazing", "stick_slip")


def contact_modes(r: np.ndarray, u: np.ndarray, mu: np.ndarray, tol: float = DEGENERATE_TOL) -> np.ndarray:
    """The mode code (index into :data:`MODES`) of each contact of the fc3d pair ``(r, u)``: sides
    at most ``tol * max(1, ||r||_inf, ||u||_inf)`` count as zero."""
    s = tol * max(1.0, float(np.max(np.abs(r), initial=0.0)), float(np.max(np.abs(u), initial=0.0)))
    R, U = r.reshape(-1, 3), u.reshape(-1, 3)
    rt, ut = np.linalg.norm(R[:, 1:], axis=1), np.linalg.norm(U[:, 1:], axis=1)
    out = np.empty(mu.size, dtype=int)
    for j in range(mu.size):
        if R[j, 0] <= s:
            out[j] = 3 if U[j, 0] <= s else 0
        elif ut[j] > s:
            out[j] = 2
        else:
            out[j] = 4 if mu[j] > 0 and rt[j] >= mu[j] * R[j, 0] - s else 1
    return out


@dataclass
class FC3DSensitivity:
    """Derivatives of the fc3d solution ``r`` with respect to ``(W, q, mu)``
    (:func:`fc3d_sensitivity`)."""

    r: np.ndarray
    u: np.ndarray
    modes: np.ndarray        #: per contact, an index into :data:`MODES`
    degenerate: np.ndarray   #: the contacts at a grazing or stick/slip boundary point
    core: ImplicitSensitivity = field(repr=False)
    _G: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0)))  # dF/dq
    _E: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0)))  # dF/dmu

    @property
    def flagged(self) -> bool:
        """True when a contact is degenerate or the linearization is singular."""
        return self.core.flagged

    def jvp(self, dq: ArrayLike | None = None, dW: ArrayLike | None = None, dmu: ArrayLike | None = None) -> np.ndarray:
        """``dr`` for the data change ``(dq, dW, dmu)`` (any may be None)."""
        m, nc = self.r.size, self.modes.size
        return self.core.jvp(q=np.zeros(m) if dq is None else _vec("dq", dq, m),
                             W=np.zeros((m, m)) if dW is None else _mat("dW", dW, m),
                             mu=np.zeros(nc) if dmu is None else _vec("dmu", dmu, nc))

    def vjp(self, r_bar: ArrayLike) -> dict[str, np.ndarray]:
        """``{"q": q_bar, "W": W_bar, "mu": mu_bar}``, the products ``dr/d(.)^T r_bar``."""
        return self.core.vjp(_vec("r_bar", r_bar, self.r.size))

    def dr_dq(self) -> np.ndarray:
        """The Jacobian ``dr/dq`` (3 nc x 3 nc)."""
        return self.core.jacobian(self._G)

    def dr_dmu(self) -> np.ndarray:
        """The Jacobian ``dr/dmu`` (3 nc x nc)."""
        return self.core.jacobian(self._E)

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready summary: ``dr_dq``, ``dr_dmu``, the modes and the flags."""
        return {"dr_dq": self.dr_dq().tolist(), "dr_dmu": self.dr_dmu().tolist(),
                "modes": [MODES[k] for k in self.modes], "degenerate": bool(self.flagged),
                "degenerate_pairs": self.degenerate.tolist(), "singular": self.core.singular}


def fc3d_sensitivity(W: ArrayLike, q: ArrayLike, mu: ArrayLike, r: ArrayLike | Result, *,
                     tol: float = DEGENERATE_TOL) -> FC3DSensitivity:
    """The sensitivity of the fc3d solution ``r`` (an array or a solved :class:`Result`) to
    ``(W, q, mu)`` on its contact modes (module docstring; modes by :func:`contact_modes`)."""
    Wv, qv, muv = validate_fc3d(W, q, mu)
    m, nc = qv.size, muv.size
    rv = _vec("r", r.x if isinstance(r, Result) else r, m)
    u = Wv @ rv + qv
    modes = contact_modes(rv, u, muv, tol)
    G, D, E = np.zeros((m, m)), np.zeros((m, m)), np.zeros((m, nc))
    for j, mode in enumerate(modes):
        b = slice(3 * j, 3 * j + 3)
        rn, ut = rv[3 * j], u[3 * j + 1:3 * j + 3]
        if mode in (0, 3):  # separated (grazing: on the separated piece)
            D[b, b] = np.eye(3)
        elif mode in (1, 4) and muv[j] > 0:  # sticking (stick/slip boundary: on the sticking piece)
            G[b, b] = np.eye(3)
        else:  # sliding, or a frictionless contact: u_n = 0, r_T + mu r_n t = 0
            G[3 * j, 3 * j] = 1.0
            D[3 * j + 1:3 * j + 3, 3 * j + 1:3 * j + 3] = np.eye(2)
            nrm = float(np.linalg.norm(ut))
            if mode == 2:
                t = ut / nrm
                G[3 * j + 1:3 * j + 3, 3 * j + 1:3 * j + 3] = muv[j] * rn / nrm * (np.eye(2) - np.outer(t, t))
                D[3 * j + 1:3 * j + 3, 3 * j] = muv[j] * t
                E[3 * j + 1:3 * j + 3, j] = rn * t

    def apply_B(d: dict[str, np.ndarray]) -> np.ndarray:
        return G @ (d["W"] @ rv + d["q"]) + E @ d["mu"]

    def apply_BT(lam: np.ndarray) -> dict[str, np.ndarray]:
        gq = G.T @ lam
        return {"q": gq, "W": np.outer(gq, rv), "mu": E.T @ lam}

    degenerate = np.flatnonzero((modes == 3) | (modes == 4))
    core = ImplicitSensitivity(G @ Wv + D, apply_B, apply_BT, degenerate, "separated at grazing, sticking at stick/slip")
    if not np.isfinite(core.A).all():
        raise InputError("r", "the linearization at r is not finite")
    return FC3DSensitivity(rv, u, modes, degenerate, core, G, E)
