"""Sensitivities of an fc3d solution ``r`` (Coulomb cones, see :mod:`contactmp.solvers.fc3d.problem`) with
respect to ``W``, ``q`` and ``mu``, by implicit differentiation on its contact modes.

With ``u = W r + q`` each contact ``j`` is in one mode, and three equations ``F_j(r, u) = 0`` hold
on it:

* **separated** (``r_j = 0``, ``u_jn > 0``): ``F_j = r_j``;
* **sticking** (``r_j`` inside the cone, ``u_j = 0``): ``F_j = u_j``;
* **sliding** (``r_j`` on the cone's boundary, ``u_jn = 0``, ``u_jT != 0``, the friction opposite
  the slip): ``F_j = (u_jn, r_jT + mu_j r_jn u_jT / ||u_jT||)``.

Writing ``F_j = G_j u_j + D_j r_j + ...`` to first order, ``A = G W + D`` and
``dF = G (dW r + dq) + E dmu`` (``E_j = (0, r_jn t_j)``, ``t_j = u_jT / ||u_jT||``, for a sliding
contact), so ``dr = -A^{-1} (G (dW r + dq) + E dmu)``
(:class:`~contactmp.solvers.sensitivity.ImplicitSensitivity`). A frictionless contact (``mu_j = 0``) in contact is ``F_j = (u_jn, r_jT)``.

Degenerate contacts (no derivative; each is flagged and differentiated on a documented piece):
**grazing** (``r_j = 0`` and ``u_jn = 0``) on the separated piece (``r_j`` stays 0: the one-sided
derivative for data changes that open the contact), and the **stick/slip boundary** (``u_j = 0``
with ``||r_jT|| = mu_j r_jn``) on the sticking piece (for changes that keep it sticking).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError
from contactmp.result import Result
from contactmp.solvers.sensitivity import DEGENERATE_TOL, ImplicitSensitivity, as_matrix, as_vector
from contactmp.validate import validate_fc3d

__all__ = ["FC3DSensitivity", "fc3d_sensitivity", "contact_modes", "MODES"]

#: the modes of :func:`contact_modes`, by code
MODES = ("separated", "sticking", "sliding", "grazing", "stick_slip")


@numba.njit(cache=True)
def _modes_kernel(r: np.ndarray, u: np.ndarray, mu: np.ndarray, tol: float) -> np.ndarray:  # pragma: no cover
    big = 1e-300
    for i in range(r.shape[0]):
        big = max(big, abs(r[i]), abs(u[i]))
    s = tol * big
    out = np.empty(mu.shape[0], dtype=np.int64)
    for j in range(mu.shape[0]):
        rn, un = r[3 * j], u[3 * j]
        rt = math.hypot(r[3 * j + 1], r[3 * j + 2])
        ut = math.hypot(u[3 * j + 1], u[3 * j + 2])
        if rn <= s:
            out[j] = 3 if un <= s else 0
        elif ut > s:
            out[j] = 2
        elif mu[j] > 0 and rt >= mu[j] * rn - s:
            out[j] = 4
        else:
            out[j] = 1
    return out


def contact_modes(r: np.ndarray, u: np.ndarray, mu: np.ndarray, tol: float = DEGENERATE_TOL) -> np.ndarray:
    """The mode code (index into :data:`MODES`) of each contact of the fc3d pair ``(r, u)``: sides
    at most ``tol * max(||r||_inf, ||u||_inf)`` count as zero."""
    return _modes_kernel(np.ascontiguousarray(r, dtype=float), np.ascontiguousarray(u, dtype=float),
                         np.ascontiguousarray(mu, dtype=float), float(tol))


@numba.njit(cache=True)
def _linearize(W: np.ndarray, r: np.ndarray, u: np.ndarray, mu: np.ndarray, modes: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """``(A, G, E)``: ``A = G W + D`` and the blocks ``G_j`` (3 x 3) and ``E_j`` (3) of the module
    docstring, for the modes ``modes``."""
    nc, m = mu.shape[0], r.shape[0]
    G = np.zeros((nc, 3, 3))
    D = np.zeros((nc, 3, 3))
    E = np.zeros((nc, 3))
    for j in range(nc):
        mode = modes[j]
        if mode == 0 or mode == 3:  # separated (grazing: on the separated piece)
            for a in range(3):
                D[j, a, a] = 1.0
        elif (mode == 1 or mode == 4) and mu[j] > 0:  # sticking (stick/slip boundary: sticking piece)
            for a in range(3):
                G[j, a, a] = 1.0
        else:  # sliding, or a frictionless contact in contact: u_n = 0, r_T + mu r_n t = 0
            G[j, 0, 0] = 1.0
            D[j, 1, 1] = 1.0
            D[j, 2, 2] = 1.0
            if mode == 2:
                u1, u2 = u[3 * j + 1], u[3 * j + 2]
                nrm = math.hypot(u1, u2)
                t1, t2 = u1 / nrm, u2 / nrm
                k = mu[j] * r[3 * j] / nrm
                G[j, 1, 1] = k * (1.0 - t1 * t1)
                G[j, 1, 2] = -k * t1 * t2
                G[j, 2, 1] = -k * t2 * t1
                G[j, 2, 2] = k * (1.0 - t2 * t2)
                D[j, 1, 0] = mu[j] * t1
                D[j, 2, 0] = mu[j] * t2
                E[j, 1] = r[3 * j] * t1
                E[j, 2] = r[3 * j] * t2
    A = np.zeros((m, m))
    for j in range(nc):
        for a in range(3):
            row = 3 * j + a
            for b in range(3):
                g = G[j, a, b]
                if g != 0.0:
                    for c in range(m):
                        A[row, c] += g * W[3 * j + b, c]
                A[row, 3 * j + b] += D[j, a, b]
    return A, G, E


@dataclass
class FC3DSensitivity:
    """Derivatives of the fc3d solution ``r`` with respect to ``(W, q, mu)``
    (:func:`fc3d_sensitivity`)."""

    r: np.ndarray
    u: np.ndarray
    modes: np.ndarray        #: per contact, an index into :data:`MODES`
    degenerate: np.ndarray   #: the contacts at a grazing or stick/slip boundary point
    core: ImplicitSensitivity = field(repr=False)
    _G: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 3, 3)))  # dF/du blocks G_j
    _E: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 3)))     # dF/dmu blocks E_j
    _act: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=int))  # rows of contacts in contact

    @property
    def flagged(self) -> bool:
        """True when a contact is degenerate or the linearization is singular."""
        return self.core.flagged

    def jvp(self, dq: ArrayLike | None = None, dW: ArrayLike | None = None, dmu: ArrayLike | None = None) -> np.ndarray:
        """``dr`` for the data change ``(dq, dW, dmu)`` (any may be None)."""
        m, nc = self.r.size, self.modes.size
        x = np.zeros(m) if dq is None else as_vector("dq", dq, m).copy()
        if dW is not None:
            x += as_matrix("dW", dW, m) @ self.r
        rhs = np.einsum("jab,jb->ja", self._G, x.reshape(nc, 3))
        if dmu is not None:
            rhs += self._E * as_vector("dmu", dmu, nc)[:, None]
        dr = np.zeros(m)
        dr[self._act] = -self.core._solve(rhs.ravel()[self._act])
        return dr

    def vjp(self, r_bar: ArrayLike, wrt: tuple[str, ...] = ("q", "W", "mu")) -> dict[str, np.ndarray]:
        """``{"q": q_bar, "W": W_bar, "mu": mu_bar}``, the products ``dr/d(.)^T r_bar``, for the
        blocks named in ``wrt`` (``W_bar = q_bar r^T`` is a dense ``3 nc x 3 nc`` matrix: leave it out
        when only ``q_bar`` or ``mu_bar`` is needed)."""
        unknown = set(wrt) - {"q", "W", "mu"}
        if unknown:
            raise InputError("wrt", f"unknown data blocks {sorted(unknown)}; choose from 'q', 'W', 'mu'")
        m, nc = self.r.size, self.modes.size
        full = np.zeros(m)
        full[self._act] = -self.core._solve(as_vector("r_bar", r_bar, m)[self._act], trans=1)
        l3 = full.reshape(nc, 3)
        gq = np.einsum("jba,jb->ja", self._G, l3).ravel()
        out = {"q": gq, "W": np.outer(gq, self.r) if "W" in wrt else None, "mu": (self._E * l3).sum(axis=1)}
        return {k: out[k] for k in wrt}

    def dr_dq(self) -> np.ndarray:
        """The Jacobian ``dr/dq`` (3 nc x 3 nc)."""
        nc, m = self.modes.size, self.r.size
        G = np.zeros((m, m))
        for j in range(nc):
            G[3 * j:3 * j + 3, 3 * j:3 * j + 3] = self._G[j]
        J = np.zeros((m, m))
        J[self._act] = self.core.jacobian(G[self._act])
        return J

    def dr_dmu(self) -> np.ndarray:
        """The Jacobian ``dr/dmu`` (3 nc x nc)."""
        nc = self.modes.size
        E = np.zeros((3 * nc, nc))
        E[np.arange(3 * nc), np.repeat(np.arange(nc), 3)] = self._E.ravel()
        J = np.zeros((3 * nc, nc))
        J[self._act] = self.core.jacobian(E[self._act])
        return J

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
    if isinstance(r, Result) and not r.success:
        raise InputError("r", f"the result is {r.status.value}, not a verified solution (pass r itself to "
                         "differentiate at an unverified point)")
    rv = as_vector("r", r.x if isinstance(r, Result) else r, m)
    u = Wv @ rv + qv
    modes = _modes_kernel(rv, u, muv, float(tol))
    A, Gb, Eb = _linearize(Wv, rv, u, muv, modes)
    # a separated (or grazing) contact's rows read dr_j = 0: only the contacts in contact are solved for
    act = np.flatnonzero(np.repeat((modes != 0) & (modes != 3), 3))

    def apply_B(d: dict[str, np.ndarray]) -> np.ndarray:
        x = (d["W"] @ rv + d["q"]).reshape(nc, 3)
        return (np.einsum("jab,jb->ja", Gb, x) + Eb * d["mu"][:, None]).ravel()[act]

    def apply_BT(lam: np.ndarray) -> dict[str, np.ndarray]:
        full = np.zeros(m)
        full[act] = lam
        l3 = full.reshape(nc, 3)
        gq = np.einsum("jba,jb->ja", Gb, l3).ravel()
        return {"q": gq, "W": np.outer(gq, rv), "mu": (Eb * l3).sum(axis=1)}

    degenerate = np.flatnonzero((modes == 3) | (modes == 4))
    core = ImplicitSensitivity(A[np.ix_(act, act)], apply_B, apply_BT, degenerate,
                               "separated at grazing, sticking at stick/slip")
    return FC3DSensitivity(rv, u, modes, degenerate, core, Gb, Eb, act)
