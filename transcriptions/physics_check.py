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

**The physics verdict of every step** (:func:`judge_step`, run by
:meth:`~contactmp.transcriptions.time_stepping.TimeStepping.step` on every step it takes): a step
whose program was solved can still be wrong physics (a soft model with no stiffness lets a ball
fall through the ground while every step's program is solved to 1e-12). The verdict compares the
step's end state and impulses with the formulation's own
:class:`~contactmp.formulations.base.PhysicsTolerances` (``tol``) and lists every violation:

* ``penetration``: ``max_i -phi_i(q_{k+1}) > tol.penetration``;
* ``gap_force``: a contact pushes (``p_n / h`` above ``tol.gap_force`` plus the step's force floor)
  while its gap at the step's end is ``phi_i(q_{k+1}) > tol.gap`` (force at a distance);
* ``cone``: ``|p_T| - c mu_i p_n`` above the step's impulse floor, with the friction set's
  ``c = tol.cone_factor`` (1 for Coulomb's cone and the polytopes inscribed in it, ``1 / cos(pi/k)``
  for a k-facet pyramid, whose corners lie outside the cone);
* ``negative_normal``: ``p_n`` below minus the impulse floor (a contact that pulls);
* ``energy_gain``: the work the contacts did on the system since the run began,
  ``W = sum_k p_k . J(q_k) (v_k + v_{k+1}) / 2`` (the contact impulses' exact share of the kinetic
  energy change ``v_mid^T M (v_{k+1} - v_k)`` of the velocity-level scheme), is above
  ``tol.penetration * F_max``: the energy a push out of the deepest allowed penetration could
  release under the largest total normal force ``F_max`` seen so far (each step that adds to such a
  gain is flagged). Contacts on fixed surfaces only dissipate; what they store (a soft model's
  spring, a rigid model's position correction) they may give back, but no more.

The floors are rounding bounds relative to the step's own impulses: the impulse floor is
``IMPULSE_FLOOR`` times the step's largest impulse (at least ``1e-12`` N s), the force floor that
floor over ``h``. A step whose program was solved but whose verdict lists a violation has status
:attr:`~contactmp.result.Status.UNPHYSICAL` (its ``result.extras["physics"]`` names each violated
check with its value and tolerance); :class:`~contactmp.transcriptions.time_stepping.Trajectory`
counts them and :func:`check_trajectory` summarizes them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contactmp.errors import InputError
from contactmp.formulations.base import PhysicsTolerances
from contactmp.models.symbolic import ContactSystem

__all__ = ["PhysicsCheck", "check_trajectory", "step_metrics", "METRICS", "StepVerdict", "judge_step",
           "VERDICT_CHECKS", "IMPULSE_FLOOR"]

#: the per-step metrics, in the order of :attr:`PhysicsCheck.per_step`
METRICS = ("penetration", "signorini", "cone", "negative_normal", "mdp_gap", "complementarity")
#: the checks of the physics verdict (module docstring), in the order they are reported
VERDICT_CHECKS = ("penetration", "gap_force", "cone", "negative_normal", "energy_gain")
#: the rounding floor of the verdict's impulse checks, relative to the step's largest impulse: a
#: verified contact solve (residual <= 1e-8 relative) leaves the cone and sign of its impulses
#: within it
IMPULSE_FLOOR = 1e-6
#: units of each verdict check's value and tolerance
_UNITS = {"penetration": "m", "gap_force": "N", "cone": "N s", "negative_normal": "N s", "energy_gain": "J"}


@dataclass(frozen=True)
class StepVerdict:
    """The physics verdict of one step (:func:`judge_step`; module docstring).

    ``violations`` maps each failed check of :data:`VERDICT_CHECKS` to ``(value, tolerance)``;
    ``contact_work`` [J] is the contacts' work since the run began and ``force_max`` [N] the largest
    total normal force so far (the running state the next step's verdict continues from)."""

    violations: dict[str, tuple[float, float]]
    contact_work: float
    force_max: float

    @property
    def ok(self) -> bool:
        """True when no check failed."""
        return not self.violations

    def describe(self) -> str:
        """The violations in words, e.g. ``"penetration 0.395 m > 0.001 m"`` ("" when none)."""
        return "; ".join(f"{name} {val:.3g} {_UNITS[name]} > {tol:.3g} {_UNITS[name]}"
                         for name, (val, tol) in self.violations.items())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what a step's ``result.extras["physics"]`` holds)."""
        return {"ok": self.ok, "violations": {k: [float(a), float(b)] for k, (a, b) in self.violations.items()},
                "contact_work": float(self.contact_work), "force_max": float(self.force_max)}

    @classmethod
    def from_dict(cls, d: Any) -> "StepVerdict | None":
        """The verdict of :meth:`to_dict` (None when ``d`` is not one)."""
        if not isinstance(d, dict) or "contact_work" not in d:
            return None
        return cls({k: (float(a), float(b)) for k, (a, b) in d.get("violations", {}).items()},
                   float(d["contact_work"]), float(d.get("force_max", 0.0)))


def judge_step(system: ContactSystem, tolerances: PhysicsTolerances, h: float, q: np.ndarray, v: np.ndarray,
               q_next: np.ndarray, v_next: np.ndarray, impulses: np.ndarray,
               previous: StepVerdict | None = None, J: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
               phi_next: np.ndarray | None = None) -> StepVerdict:
    """The physics verdict (module docstring) of the step ``(q, v) -> (q_next, v_next)`` with contact
    impulses ``impulses`` (n_c, 3; contact frame ``(n, t, o)``) against ``tolerances`` (a
    :class:`~contactmp.formulations.base.PhysicsTolerances`), continuing the running contact work
    and force scale of ``previous`` (the previous step's verdict; None at a run's start). ``J`` are
    ``Jn, Jt, Jo`` at ``q`` and ``phi_next`` the gaps at ``q_next`` when the caller has them (else
    evaluated)."""
    s = system
    p = np.asarray(impulses, dtype=float).reshape(s.n_c, 3)
    phi = s.eval_phi(q_next) if phi_next is None else np.asarray(phi_next, dtype=float)
    p_n = p[:, 0]
    p_T = p[:, 1:2] if s.planar else p[:, 1:]
    mu = np.broadcast_to(np.asarray(s.mu, dtype=float), (s.n_c,))
    floor = max(IMPULSE_FLOOR * float(np.max(np.abs(p), initial=0.0)), 1e-12)
    Jn, Jt, Jo = s.eval_J(q) if J is None else J
    mid = 0.5 * (np.asarray(v, dtype=float) + np.asarray(v_next, dtype=float))
    work = float(p_n @ (Jn @ mid) + p[:, 1] @ (Jt @ mid) + (0.0 if s.planar else p[:, 2] @ (Jo @ mid)))
    work_total = (previous.contact_work if previous is not None else 0.0) + work
    force_max = max(previous.force_max if previous is not None else 0.0, float(np.sum(np.maximum(p_n, 0.0))) / h)
    tol = tolerances
    found: dict[str, tuple[float, float]] = {}
    depth = float(np.max(-phi, initial=0.0))
    if depth > tol.penetration:
        found["penetration"] = (depth, float(tol.penetration))
    far = phi > tol.gap
    if far.any():
        force = float(np.max(p_n[far])) / h
        limit = float(tol.gap_force) + floor / h
        if force > limit:
            found["gap_force"] = (force, limit)
    cone = float(np.max(np.linalg.norm(p_T, axis=1) - tol.cone_factor * mu * p_n, initial=0.0))
    if cone > floor:
        found["cone"] = (cone, floor)
    if float(np.min(p_n, initial=0.0)) < -floor:
        found["negative_normal"] = (-float(np.min(p_n)), floor)
    energy_tol = float(tol.penetration) * force_max + 1e-12
    if work > 0.0 and work_total > energy_tol:  # flag the steps that add to a gain
        found["energy_gain"] = (work_total, energy_tol)
    return StepVerdict(found, work_total, force_max)


@dataclass
class PhysicsCheck:
    """The metrics of one trajectory (:func:`check_trajectory`): ``per_step[name]`` (N, the
    maximum over contacts), ``energy`` (N+1; None without a potential), ``quaternion_drift``
    (N+1; None without a quaternion), ``gap_drift`` (N+1, over the contacts closed at the start),
    ``status_counts`` (``"unphysical"``: steps solved whose physics verdict failed),
    ``violations`` (each verdict check that failed: on how many steps) and ``time_per_step_s`` (the
    median of the steps' wall times: data, program build and reduction, solve and verdict)."""

    per_step: dict[str, np.ndarray]
    energy: np.ndarray | None
    quaternion_drift: np.ndarray | None
    status_counts: dict[str, int]
    time_per_step_s: float
    gap_drift: np.ndarray | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    violations: dict[str, int] = field(default_factory=dict)

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
        out["unphysical_steps"] = float(self.status_counts.get("unphysical", 0))
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
    violated = {name: n for name, (n, _worst) in trajectory.violations.items()}
    times = [r.time_s for r in trajectory.results]
    return PhysicsCheck(per_step, energy, quat, trajectory.status_counts,
                        float(np.median(times)) if times else float("nan"), gap_drift=drift, violations=violated)
