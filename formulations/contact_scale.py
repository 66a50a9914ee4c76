"""The contact scale of a system: the load its contacts carry at rest, from which the soft
formulations derive their default gains and every formulation its physics tolerances.

A soft contact model (Drumwright's compliant spring, Pan and Hauser's wrench polytopes whose
magnitude grows with penetration) needs a stiffness scaled to the system: a stiffness chosen for a
1 kg box lets a 40 kg robot sink through the ground, one chosen for the robot makes the box's steps
stiff. The *design depth* ``d`` (default :data:`DESIGN_DEPTH` = 1 mm) is how far a contact may sink
under its static load; the load comes from the system itself, at its nominal configuration
``q_nominal``:

* the gravity load ``g0 = h(q_nominal, 0)`` (the generalized force the contacts and actuators must
  hold; ``M vdot = B u - h + J^T lambda``);
* the contact forces that hold it: ``lambda = (lambda_n, lambda_t, lambda_o)`` of least norm that
  minimizes ``|| N^T (Jn^T lambda_n + Jt^T lambda_t + Jo^T lambda_o - g0) ||`` with
  ``lambda_n >= 0``, over the contacts closed at ``q_nominal`` (``phi <= CLOSED_GAP``; all contacts
  when none is closed). ``N`` spans the directions no input acts on (the left null space of ``B``:
  a legged robot's floating base, a passive body's every coordinate); when the inputs act on every
  coordinate (a box with an external force and torque as its inputs) ``N = I``: the load the
  contacts carry with the inputs at zero;
* ``load`` [N] is the largest ``lambda_n,i``: the normal force of the most loaded contact at rest
  (a ball: ``m g cos(slope)``; a cube on its face: ``m g / 4``; a quadruped: about a quarter of its
  weight);
* ``mass`` [kg] is the mass that contact's spring carries, ``load / a_i`` with ``a_i = Jn_i M^-1 g0``
  its free-fall acceleration along the normal (``m`` for a ball, ``m / 4`` for a cube's corner);
  where the contact does not fall toward its surface (``a_i <= 0``), the contact's effective mass
  ``1 / (Jn_i M^-1 Jn_i^T)``.

From them a compliant spring ``K = load / d`` sinks ``d`` under the load, with critical damping
``2 sqrt(K mass)``; a polytope magnitude ``k min(phi, 0)^2`` with ``k = load / d^2`` does the same.
When the gravity load pushes no contact (no potential, ``g = 0``, contacts only on walls at
``q_nominal``), nothing can be derived and :func:`contact_scale` raises an :class:`InputError` naming
the option the caller must give.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from contactmp.errors import InputError, check_number
from contactmp.models.symbolic import ContactSystem

__all__ = ["ContactScale", "contact_scale", "DESIGN_DEPTH", "CLOSED_GAP"]

#: the default design depth [m]: how far a soft contact sinks under its static load
DESIGN_DEPTH = 1e-3
#: a contact is closed at ``q_nominal`` when its gap is at most this [m]
CLOSED_GAP = 1e-6
#: the ridge weight (relative to the rows' scale) that picks the least-norm forces of a redundant support
_RIDGE = 1e-8


@dataclass(frozen=True)
class ContactScale:
    """The contact scale of a system (see the module docstring): ``load`` [N] of its most loaded
    contact at rest, the ``mass`` [kg] that contact carries, the ``forces`` (n_c normal forces at rest
    [N]; zero on contacts open at ``q_nominal``) and ``contact`` (the index of the most loaded one)."""

    load: float
    mass: float
    forces: np.ndarray
    contact: int

    def stiffness(self, depth: float = DESIGN_DEPTH, power: int = 1) -> float:
        """The stiffness that sinks ``depth`` [m] under ``load``: ``load / depth**power`` (a linear
        spring [N/m] with ``power=1``, a polytope magnitude ``k min(phi, 0)^2`` [N/m^2] with ``power=2``)."""
        d = check_number("design_depth", depth, positive=True)
        return self.load / d**power

    def critical_damping(self, depth: float = DESIGN_DEPTH) -> float:
        """``2 sqrt(K mass)`` [N s/m] with ``K = load / depth``: the linear spring's critical damping."""
        return 2.0 * math.sqrt(self.stiffness(depth) * self.mass)


_cache: "weakref.WeakKeyDictionary[ContactSystem, ContactScale]" = weakref.WeakKeyDictionary()


def contact_scale(system: ContactSystem, option: str = "stiffness") -> ContactScale:
    """The :class:`ContactScale` of ``system`` at its ``q_nominal`` (module docstring), computed once
    per system. ``option`` names the option a caller must give instead when the scale cannot be
    derived (the :class:`InputError` names it)."""
    if not isinstance(system, ContactSystem):
        raise InputError("system", f"must be a ContactSystem, got {type(system).__name__}")
    got = _cache.get(system)
    if got is None:
        got = _cache[system] = _derive(system, option)
    return got


def _derive(s: ContactSystem, option: str) -> ContactScale:
    from contactmp.solvers.cone_qp import bounded_least_squares

    q = np.asarray(s.q_nominal, dtype=float)
    g0 = s.eval_h(q, np.zeros(s.n_v))
    M = s.eval_M(q)
    Jn, Jt, Jo = s.eval_J(q)
    phi = s.eval_phi(q)
    closed = phi <= CLOSED_GAP
    idx = np.flatnonzero(closed) if closed.any() else np.arange(s.n_c)
    B = s.eval_B(q)
    N = _unactuated_basis(B) if s.n_u else np.eye(s.n_v)
    if N.shape[1] == 0:  # every coordinate actuated: the load with the inputs at zero
        N = np.eye(s.n_v)
    tang = [Jt[idx]] if s.planar else [Jt[idx], Jo[idx]]
    A = N.T @ np.vstack([Jn[idx]] + tang).T
    b = N.T @ g0
    scale = max(float(np.max(np.abs(A), initial=0.0)), 1e-300)
    m = len(idx)
    lb = np.concatenate([np.zeros(m), np.full(A.shape[1] - m, -np.inf)])
    ridge = math.sqrt(_RIDGE) * scale * np.eye(A.shape[1])
    x = bounded_least_squares(np.vstack([A, ridge]), np.concatenate([b, np.zeros(A.shape[1])]), lb,
                              np.full(A.shape[1], np.inf))
    forces = np.zeros(s.n_c)
    forces[idx] = np.maximum(x[:m], 0.0)
    i = int(np.argmax(forces))
    load = float(forces[i])
    if not (math.isfinite(load) and load > 1e-12 * max(float(np.linalg.norm(g0)), 1.0)):
        raise InputError(option, f"cannot be derived for {s.name}: its gravity load h(q_nominal, 0) pushes none "
                                 f"of its contacts at q_nominal (no potential, g = 0, or contacts only on "
                                 f"walls); give {option} explicitly")
    Minv_jn = np.linalg.solve(M, Jn[i])
    fall = float(Minv_jn @ g0)  # Jn_i M^-1 g0: the contact's free-fall acceleration toward its surface
    mass = load / fall if fall > 1e-9 * load else 1.0 / float(Jn[i] @ Minv_jn)
    return ContactScale(load, float(mass), forces, i)


def _unactuated_basis(B: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the directions no input acts on: the left null space of ``B``
    (``N^T B = 0``)."""
    U, sv, _ = np.linalg.svd(B, full_matrices=True)
    rank = int(np.sum(sv > 1e-10 * max(float(sv[0]) if sv.size else 0.0, 1e-300)))
    return U[:, rank:]
