"""One independent judge of simulated contact physics (issue 17): the same metrics for every
formulation, computed from the trajectory alone.

A :class:`~contactmp.transcriptions.time_stepping.Trajectory` holds the states ``(q_k, v_k)`` and
each step's contact impulses ``p_k`` (contact frame ``(n, t, o)``, N s). :func:`check_trajectory`
re-evaluates the system's own functions there and never asks the formulation anything, so a rigid
pyramid, a Coulomb cone, a compliant spring or a wrench polytope is measured by one rule. Per step
``k -> k+1`` and contact ``i`` (``u = J v_{k+1}`` the contact velocity at the step's end, ``p`` its
impulse):

* ``penetration`` [m]: ``max(0, -phi_i(q_{k+1}))`` (the gap at the step's end);
* ``signorini`` [J = N s m/s]: ``|p_n min(u_n, phi_i(q_{k+1}) / h)|`` over contacts whose gap is
  closed or closing -- zero when an impulse acts only on a contact that stays closed (velocity-level
  Signorini ``0 <= p_n _|_ u_n >= 0``); a compliant contact, pushing while it opens, scores its
  spring's work, a polytope contact its force at a distance;
* ``cone`` [N s]: ``max(0, |p_T| - mu_i p_n)`` (outside Coulomb's cone; ``p_T = p_t`` for a planar
  system, whose ``o`` direction acts on nothing) and ``negative_normal`` ``max(0, -p_n)``;
* ``mdp_gap`` [J]: ``|mu_i p_n |u_T| + p_T . u_T|`` -- how far the power the friction dissipates is
  from Coulomb's maximum over the cone ``mu p_n |u_T|``; zero for maximal dissipation (sliding:
  ``p_T`` opposite ``u_T`` on the cone's boundary; sticking: ``u_T = 0``); friction that opposes the
  slip only partly (a linearized polytope) dissipates less, friction outside the cone (a pyramid
  whose polygon circumscribes the disk, sliding toward a corner) more;
* ``complementarity`` [J]: ``|p . (u + mu_i |u_T| e_n)| = |p_n (u_n + mu_i |u_T|) + p_T . u_T|``, De
  Saxce's bipotential complementarity (ContactBench's contact complementarity, Le Lidec et al. 2024):
  zero for a Coulomb solution (separating: ``p = 0``; sticking: ``u = 0``; sliding: ``u_n = 0`` and
  ``p_T`` opposite ``u_T`` on the cone's boundary), unlike ``mdp_gap`` also nonzero for an impulse
  while the contact opens or closes;
* ``energy`` [J]: ``1/2 v^T M(q) v + V(q)`` at every state (``energy_drift = E_k - E_0``; only
  systems with a potential ``V``);
* ``quaternion_drift``: ``| |q_quat| - 1 |`` for a body with a unit quaternion (``n_q = n_v + 1``,
  ``q[3:7]``), else absent.

* ``gap_drift`` [m] (summary only): ``max_k |phi_i(q_k) - phi_i(q_0)|`` over the contacts closed at the
  start (``phi_i(q_0) <= 1e-9``) -- how far a contact that should stay closed sinks or lifts (0
  when no contact starts closed).

Each metric is given per step (the maximum over contacts) and summarized (maximum over the
trajectory); a step the solver did not solve is counted, not hidden (``status_counts``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contactmp.errors import InputError
from contactmp.models.symbolic import ContactSystem

__all__ = ["PhysicsCheck", "check_trajectory", "step_metrics", "METRICS"]

#: the per-step metrics, in the order of :attr:`PhysicsCheck.per_step`
METRICS = ("penetration", "signorini", "cone", "negative_normal", "mdp_gap", "complementarity")


@dataclass
class PhysicsCheck:
    """The metrics of one trajectory (:func:`check_trajectory`): ``per_step[name]`` (N, the
    maximum over contacts), ``energy`` (N+1; None without a potential), ``quaternion_drift``
    (N+1; None without a quaternion), ``gap_drift`` (N+1, over the contacts closed at the start),
    ``status_counts`` and ``time_per_step_s`` (median)."""

    per_step: dict[str, np.ndarray]
    energy: np.ndarray | None
    quaternion_drift: np.ndarray | None
    status_counts: dict[str, int]
    time_per_step_s: float
    gap_drift: np.ndarray | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, float]:
        """The largest value of every metric over the trajectory; ``energy_drift`` is
        ``max |E_k - E_0|`` and ``energy_gain`` ``max (E_k - E_0)`` (a passive system must not
        gain energy)."""
        out = {name: float(np.max(vals, initial=0.0)) for name, vals in self.per_step.items()}
        if self.energy is not None:
            d = self.energy - self.energy[0]
            out["energy_drift"] = float(np.max(np.abs(d), initial=0.0))
            out["energy_gain"] = float(np.max(d, initial=0.0))
        if self.quaternion_drift is not None:
            out["quaternion_drift"] = float(np.max(self.quaternion_drift, initial=0.0))
        if self.gap_drift is not None:
            out["gap_drift"] = float(np.max(self.gap_drift, initial=0.0))
        out["time_per_step_s"] = self.time_per_step_s
        return out


def step_metrics(system: ContactSystem, h: float, q_next: np.ndarray, v_next: np.ndarray,
                 impulses: np.ndarray) -> dict[str, np.ndarray]:
    """The per-contact metrics of the module docstring for one step that ends at ``(q_next,
    v_next)`` with the contact impulses ``impulses`` (n_c, 3)."""
    s = system
    p = np.asarray(impulses, dtype=float).reshape(s.n_c, 3)
    phi = s.eval_phi(q_next)
    Jn, Jt, Jo = s.eval_J(q_next)
    u_n, u_t, u_o = Jn @ v_next, Jt @ v_next, Jo @ v_next
    mu = np.asarray(s.mu, dtype=float)
    p_n, p_T = p[:, 0], p[:, 1:]
    u_T = np.column_stack([u_t, u_o])
    if s.planar:  # no o direction: an impulse there acts on nothing (a 4-facet pyramid may put one)
        p_T, u_T = p_T[:, :1], u_T[:, :1]
    slip = np.linalg.norm(u_T, axis=1)
    return {
        "penetration": np.maximum(0.0, -phi),
        "signorini": np.abs(p_n * np.minimum(u_n, phi / h)),
        "cone": np.maximum(0.0, np.linalg.norm(p_T, axis=1) - mu * p_n),
        "negative_normal": np.maximum(0.0, -p_n),
        "mdp_gap": np.abs(mu * np.maximum(p_n, 0.0) * slip + np.sum(p_T * u_T, axis=1)),
        "complementarity": np.abs(p_n * (u_n + mu * slip) + np.sum(p_T * u_T, axis=1)),
    }


def check_trajectory(system: ContactSystem, trajectory: Any) -> PhysicsCheck:
    """The metrics of the module docstring for ``trajectory`` (a TimeStepping
    :class:`~contactmp.transcriptions.time_stepping.Trajectory` of ``system``)."""
    s = system
    if not isinstance(s, ContactSystem):
        raise InputError("system", f"must be a ContactSystem, got {type(s).__name__}")
    q, v, imp = (np.asarray(getattr(trajectory, k), dtype=float) for k in ("q", "v", "impulses"))
    N = len(trajectory.results)
    if q.shape != (N + 1, s.n_q) or v.shape != (N + 1, s.n_v) or imp.shape != (N, s.n_c, 3):
        raise InputError("trajectory", f"shapes q {q.shape}, v {v.shape}, impulses {imp.shape} do not fit "
                         f"{N} steps of {s.name} (n_q {s.n_q}, n_v {s.n_v}, n_c {s.n_c})")
    h = float(trajectory.h)
    per_step = {name: np.full(N, np.nan) for name in METRICS}
    for k in range(N):
        if not (np.isfinite(q[k + 1]).all() and np.isfinite(v[k + 1]).all()):
            continue
        m = step_metrics(s, h, q[k + 1], v[k + 1], imp[k])
        for name in METRICS:
            per_step[name][k] = float(np.max(m[name], initial=0.0))
    energy = None
    if s.V is not None:
        energy = np.array([0.5 * vk @ s.eval_M(qk) @ vk + s.eval_V(qk) if np.isfinite(qk).all() else np.nan
                           for qk, vk in zip(q, v)])
    quat = None
    if s.n_q == s.n_v + 1 and s.n_q >= 7:
        quat = np.abs(np.linalg.norm(q[:, 3:7], axis=1) - 1.0)
    closed = s.eval_phi(q[0]) <= 1e-9
    drift = None
    if closed.any():
        phis = np.array([s.eval_phi(qk)[closed] if np.isfinite(qk).all() else np.full(int(closed.sum()), np.nan)
                         for qk in q])
        drift = np.max(np.abs(phis - phis[0]), axis=1)
    counts: dict[str, int] = {}
    for r in trajectory.results:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    times = [r.time_s for r in trajectory.results]
    return PhysicsCheck(per_step, energy, quat, counts, float(np.median(times)) if times else float("nan"),
                        gap_drift=drift)
