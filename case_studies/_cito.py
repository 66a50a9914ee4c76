"""What the contact-implicit trajectory-optimization studies share: the tasks, one recorded start,
the contact modes of a trajectory, and the trajectory figure.

A *task* builds a :class:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO` for a
formulation; a *start* is one seeded initial guess solved with one MPCC strategy. Every start is one
JSONL record (key ``task/formulation/strategy/seed/start``), so an interrupted study resumes at the
first start it had not finished. A start *converged* when the solve is verified ``solved``
(bounds, constraints and complementarity independently checked) and its complementarity violation
``max |min(a_i, b_i)|`` is at most :data:`COMP_TOL`.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from contactmp.result import Status

#: a start counts as converged when verified solved and max |min(a_i, b_i)| <= COMP_TOL
COMP_TOL = 1e-6
#: noise of the seeded starts: every entry of the base guess plus NOISE_SCALE * N(0, 1)
NOISE_SCALE = 0.1
#: wall-clock limit of one start (s): IPOPT's max_wall_time per NLP, checked between the NLPs
TIME_LIMIT = 60.0
#: the rigid formulations' (pyramid, cone) contact side in every task here: ``"position"``, the gap at
#: the step's end ``phi(q_{k+1}) / h`` (the formulations' ``gap`` option), so that a plan's impulses
#: act only where the bodies touch at the step's end. With the linearized side ``phi(q_k) / h +
#: Jn(q_k) v_{k+1}`` (``"linear"``) the hopper's plans pushed off from up to 12 cm, the arm's and the
#: hand's from 3-12 mm; with the position gap the largest such gap is 3e-13 m and the solves were no
#: slower (Scholtes, benchmarks/cito_cone_reliability.py, 4-8 starts per task and formulation: median
#: time per start 0.6-1.0x the linear gap's on box, push, hopper and arm-push, 1.3x on rotate)
GAP = "position"
#: a plan's normal impulses should act only where the gap at the step's end phi(q_{k+1}) is at most
#: this (m); the tables print the largest gap at which they act (:func:`largest_force_gap`)
FORCE_GAP_TOL = 1e-6
#: contact modes, in the order of their integer codes in the records
MODES = ("separated", "sticking", "sliding")


@dataclass(frozen=True)
class Task:
    """A trajectory-optimization task: ``build(formulation, quick)`` returns the transcription;
    ``options`` are the task's :class:`~contactmp.solvers.nlp.solve.NLPOptions` (every start's solve)."""

    name: str
    description: str
    build: Callable[[str, bool], Any]
    options: tuple[tuple[str, Any], ...] = ()


def rest_at_the_end(to: Any, speed_max: np.ndarray) -> None:
    """Bound a task's velocities: ``v_N = 0`` and ``|v_k| <= speed_max`` (per coordinate, ``inf`` for
    none) for ``0 < k < N``, as variable bounds, not rows: rows ``v_N = 0`` would repeat the last
    step's sticking-contact rows (the cone block's ``u_T + gamma w = 0``), a rank-deficient Jacobian
    (:meth:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO.set_final_state`). Each
    start value is clipped into its new bounds."""
    last = len(to.v) - 1
    for k, vk in enumerate(to.v):
        if k == 0:
            continue
        if k == last:
            vk.lb, vk.ub = np.zeros(speed_max.size), np.zeros(speed_max.size)
        else:
            vk.lb, vk.ub = -speed_max, speed_max.copy()
        vk.init = np.clip(vk.init, vk.lb, vk.ub)


#: compliant gains of the box task (per corner contact; 1 kg box resting on its two bottom corners,
#: each carrying m g / 2 = 4.9 N): K = 5e3 N/m gives the static penetration m g / (2 K) = 0.98 mm;
#: B = 2 sqrt(K m / 2) = 100 N s/m is critical damping of one corner's spring with half the mass;
#: Bt = 2.5e3 N s/m keeps the stiction creep ||f_t|| / Bt below mu m g / (2 Bt) = 1 mm/s.
#: ``associated=True``: these tasks (and cito-compare) plan with the associated, convex-QP law they
#: were designed for (the box's end condition below), not the formulation's default (the
#: non-associated law since issue 35, under which one quick start of each ends at 36.304 for the box
#: and 13.89 for the hopper, against max_iter and 21.03 with the associated law)
BOX_GAINS = {"stiffness": 5.0e3, "damping": 100.0, "tangential_damping": 2.5e3, "associated": True}
#: the compliant box task's end condition on the unactuated vertical and pitch velocities,
#: ``|vz_N| <= BOX_SETTLE_SPEED`` [m/s] and ``|omega_N| <= BOX_SETTLE_SPEED`` [rad/s]: a residual
#: vertical kinetic energy of at most m (1e-2)^2 / 2 = 5e-5 J, which the damped springs absorb
#: within a few steps (the spring rest itself is reached only asymptotically)
BOX_SETTLE_SPEED = 1.0e-2
#: compliant gains of the hopper task (one foot carrying the whole 11 kg, weight 107.9 N):
#: K = 1e5 N/m gives the static penetration 1.08 mm; B = 2 sqrt(K m) = 2.1e3 N s/m is critical
#: damping of the foot spring under the whole mass; Bt = 1e5 N s/m keeps the stiction creep below
#: mu m g / Bt = 0.86 mm/s.
HOPPER_GAINS = {"stiffness": 1.0e5, "damping": 2.1e3, "tangential_damping": 1.0e5, "associated": True}
#: static penetration [m] of the polytope formulations ("nmdp", "mdp") per task: the magnitude
#: s(phi) = k min(phi, 0)^2 carries a contact's share W of the weight at depth d when k = W / d^2;
#: its slope there, 2 W / d, is the contact's stiffness: 9.8e3 N/m per box corner (1 mm) and
#: 2.2e4 N/m for the hopper's foot (1 cm; at 1 mm, 2.2e5 N/m, IPOPT diverged on every strategy)
POLYTOPE_DEPTH = {"box": 1.0e-3, "hopper": 1.0e-2}
#: the polytope tasks start at rest 1.5 x deeper than the static depth, strictly inside the
#: polytope (at the static depth the resting state sits on its boundary 1^T w = 1, where the
#: complementarity pairs are degenerate; the hopper converged on 0/3 strategies from there, 3/3 here)
POLYTOPE_START = 1.5


def polytope_options(weight_share: float, depth: float) -> dict[str, float]:
    """Wrench-polytope options of the "nmdp" / "mdp" formulations for a contact carrying
    ``weight_share`` [N] at rest: ``k = weight_share / depth^2`` [N/m^2] (so the resting body sinks
    ``depth``), ``relax = 0`` (no force without penetration), ``radius = 0``."""
    return {"stiffness": weight_share / depth ** 2, "relax": 0.0, "radius": 0.0}


def _box_task(formulation: str, quick: bool) -> Any:
    """Push a 0.4 m x 0.2 m, 1 kg planar box (mu = 0.5) 1 m along the ground in 1 s, from rest to
    rest, with a horizontal force at its center, |f_x| <= 10 N; minimize h sum f_x^2.

    The rigid formulations impose the full rest state at both ends: ``q = (0, 0.1, 0)`` and
    ``(1, 0.1, 0)``, ``v = 0``.

    ``"nmdp"`` and ``"mdp"`` use :func:`polytope_options` (each bottom corner carries m g / 2 at
    the depth :data:`POLYTOPE_DEPTH` ``["box"]``); the box starts at rest :data:`POLYTOPE_START` times
    deeper and ends with ``x_N = 1``, ``vx_N = 0``, ``|vz_N|, |omega_N| <= BOX_SETTLE_SPEED`` and
    ``z_N``, ``theta_N`` free, as the compliant box (with ``v_N = 0`` imposed the linearized MDP
    stalled with a violated pair on 2 of 2 strategies).

    ``"compliant"`` uses :data:`BOX_GAINS` and a different end condition. The box starts at rest on
    its springs (center at ``z0 = 0.1 - m g / (2 K)``, the static equilibrium of the step) and must
    end with ``x_N = 1`` and ``vx_N = 0`` exactly, but only *settling* vertically:
    ``|vz_N|, |omega_N| <= BOX_SETTLE_SPEED``, with ``z_N`` and ``theta_N`` free. Why: the box has
    no vertical or pitch actuation, and while it sticks on its springs ``(z, theta, vz, omega)``
    follow a damped linear step map without input, which reaches the spring rest only
    geometrically (a TimeStepping replay: ``vz`` shrinks about 4x per step after the box stops), so
    the exact rest ``(z0, 0, 0, 0)`` cannot be reached in finitely many steps (only by tuning slips
    through the associated law's ``mu gamma`` term, which ``vx_N = 0`` forbids at the last step).
    Imposing it made the MPCC locally infeasible (0 of 12 starts; IPOPT stalled at a kinematics
    residual 2.3e-5, also with ``z_N, theta_N`` free and ``v_N = 0``). The solved trajectories end
    with ``z_N - z0`` ~ 0.1 mm and ``|theta_N|`` ~ 2e-4; they match a TimeStepping replay of their
    inputs to 1e-11, and with zero input after ``t = 1 s`` that replay settles within 0.25 s,
    20 micrometres short of ``x = 1``. (The associated law also lifts the sliding box by
    ``(h + B / K) mu gamma``, 3.5 cm per m/s of slip with ``h = 0.05``; the solved box rises
    6.6 cm: a property of the formulation, not of the task.)"""
    from contactmp.models.systems import box_2d
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    system = box_2d(m=1.0, width=0.4, height=0.2, mu=0.5)
    N = 20 if quick else 40
    if formulation in ("compliant", "nmdp", "mdp"):
        if formulation == "compliant":
            to = ContactImplicitTO(system, N, 1.0 / N, formulation=formulation, **BOX_GAINS)
            z0 = 0.1 - 1.0 * 9.81 / (2.0 * BOX_GAINS["stiffness"])
        else:
            depth = POLYTOPE_DEPTH["box"]
            to = ContactImplicitTO(system, N, 1.0 / N, formulation=formulation,
                                   **polytope_options(1.0 * 9.81 / 2.0, depth))
            z0 = 0.1 - POLYTOPE_START * depth
        to.set_initial_state([0.0, z0, 0.0], [0.0, 0.0, 0.0])
        to.set_final_state([1.0, z0, 0.0], q_indices=[0])  # z_N, theta_N free (the springs / depth settle them)
        v_end = to.v[-1]  # vx_N = 0 exactly; vz_N, omega_N settling (see the docstring)
        v_end.lb = np.array([0.0, -BOX_SETTLE_SPEED, -BOX_SETTLE_SPEED])
        v_end.ub = np.array([0.0, BOX_SETTLE_SPEED, BOX_SETTLE_SPEED])
    else:
        to = ContactImplicitTO(system, N, 1.0 / N, formulation=formulation, gap=GAP)
        to.set_initial_state([0.0, 0.1, 0.0], [0.0, 0.0, 0.0])
        to.set_final_state([1.0, 0.1, 0.0], [0.0, 0.0, 0.0])
    to.bound_inputs([-10.0, 0.0, 0.0], [10.0, 0.0, 0.0])
    to.minimize_effort(1.0)
    return to


#: the hopper's configuration limits (x, z, theta, alpha, l): leg length 0.5..1.3 m, body and leg
#: angles within +-0.6 and +-1.2 rad (keeps the one-legged hopper in its physical range)
HOPPER_Q_LB = np.array([-np.inf, 0.3, -0.6, -1.2, 0.5])
HOPPER_Q_UB = np.array([np.inf, 2.0, 0.6, 1.2, 1.3])


def _hopper_task(formulation: str, quick: bool) -> Any:
    """The planar hopper (10 kg body, 1 kg leg, mu = 0.8) stands at x = 0 and must stand at rest at
    x = d (0.3 m in 1 s quick, 0.5 m in 1.5 s full), |f_leg| <= 300 N, |tau| <= 50 N m; minimize
    1e-3 h sum |u|^2 + sum theta_k^2 (effort and a level body). With mu = 0.8 sliding the foot is
    expensive, so the optimizer has to discover a hop (a flight phase).

    ``"compliant"`` uses :data:`HOPPER_GAINS`; the hopper starts at rest on the foot spring (body
    lowered by ``m g / K``) and the final body height is left free (it follows from the spring).
    ``"nmdp"`` and ``"mdp"`` use :func:`polytope_options` (the foot carries the 11 kg at the depth
    :data:`POLYTOPE_DEPTH` ``["hopper"]``), start :data:`POLYTOPE_START` times deeper and leave the
    final height free likewise."""
    from contactmp.models.systems import hopper_2d
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    system = hopper_2d()
    N, d = (20, 0.3) if quick else (30, 0.5)
    q0 = np.array([0.0, 1.0, 0.0, 0.0, 1.0])
    free_height = [0, 2, 3, 4] if formulation in ("compliant", "nmdp", "mdp") else None
    if formulation == "compliant":
        to = ContactImplicitTO(system, N, 0.05, formulation=formulation, **HOPPER_GAINS)
        q0[1] -= 11.0 * 9.81 / HOPPER_GAINS["stiffness"]
    elif formulation in ("nmdp", "mdp"):
        depth = POLYTOPE_DEPTH["hopper"]
        to = ContactImplicitTO(system, N, 0.05, formulation=formulation,
                               **polytope_options(11.0 * 9.81, depth))
        q0[1] -= POLYTOPE_START * depth
    else:
        to = ContactImplicitTO(system, N, 0.05, formulation=formulation, gap=GAP)
    qf = q0.copy()
    qf[0] = d
    to.set_initial_state(q0, np.zeros(5))
    to.set_final_state(qf, np.zeros(5), q_indices=free_height)
    to.bound_inputs([-300.0, -50.0], [300.0, 50.0])
    for qk in to.q:
        qk.lb, qk.ub = HOPPER_Q_LB.copy(), HOPPER_Q_UB.copy()
        qk.init = np.clip(qk.init, qk.lb, qk.ub)
    to.minimize_effort(1e-3)
    to.add_quadratic_cost(Q=[0.0, 0.0, 1.0, 0.0, 0.0])
    return to


#: the hopper's homotopy starts at sigma0 = 1 rather than the default 1e-2 and solves every NLP to
#: IPOPT's tolerance (homotopy_tol 1e-8, not the default 1e-3): its relaxations at large sigma, solved
#: tightly, lead to cheaper hops. Scholtes, pyramid, quick, 10 starts (2026-12-02, 1 core each):
#: median cost 13.91, best 13.23, median 2.1 s per start, as before issue 14 (13.91, 13.23, 13.7 s);
#: with the loose default tolerance 16.71, 13.38, 1.3 s; with 1e-6 16.19, 13.38, 1.8 s. The box's
#: optimum is the same either way (36.114), so it keeps the faster defaults (0.56 s against 0.96 s)
HOPPER_OPTIONS = (("sigma0", 1.0), ("homotopy_tol", 1e-8))

#: the box's NLPs with IPOPT's monotone barrier update rather than the adaptive one of IPOPT_DEFAULTS:
#: Scholtes, quick, the study's 20 starts, one core (benchmarks/mpcc_settings.py, 2026-12-02): 20/20
#: converged at 36.114 either way, median 0.51 s against 0.59 s per start, slowest 0.79 s against
#: 2.28 s. (The hopper gains as well, 1.06 s against 2.5 s and median cost 13.29 against 13.93, but
#: it is measured with Scholtes only; the library default stays adaptive, NOSBENCH's protocol.)
BOX_OPTIONS = (("ipopt", {"mu_strategy": "monotone"}),)


def _push_task(formulation: str, quick: bool) -> Any:
    """A point finger pushes a box 0.4 m to a goal, rest to rest (:func:`contactmp.case_studies.cito_push.build_task`)."""
    from contactmp.case_studies.cito_push import build_task

    return build_task(formulation, quick)


#: the arm tasks' system (:func:`contactmp.models.arm_tasks.two_link_arm_box`'s arguments)
ARM_SYSTEM = {"m_box": 1.0, "width": 0.2, "height": 0.2, "mu_ground": 0.3, "mu_finger": 0.5, "link_mass": 0.5,
              "l1": 0.5, "l2": 0.5, "base": (-0.65, 0.5)}
#: the arm tasks' joint torque bound (N m), joint speed bound (rad/s) and the fingertip's margin
#: from the face's top and bottom edges (m; it stays within |r_z| <= height / 2 - ARM_FACE_MARGIN)
ARM_TAU_MAX, ARM_SPEED_MAX, ARM_FACE_MARGIN = 20.0, 3.0, 0.02


def arm_joint_angles(tip: Any, base: tuple[float, float] = ARM_SYSTEM["base"], l1: float = ARM_SYSTEM["l1"],
                     l2: float = ARM_SYSTEM["l2"]) -> np.ndarray:
    """Shoulder and elbow angles ``(a1, a2)`` placing the fingertip of
    :func:`~contactmp.models.arm_tasks.two_link_arm_box` at ``tip = (x, z)``, elbow up (``a2 <= 0``):
    ``cos a2 = (d^2 - l1^2 - l2^2) / (2 l1 l2)``, ``a1 = atan2(dz, dx) - atan2(l2 sin a2, l1 + l2 cos a2)``."""
    from contactmp.errors import InputError

    dx, dz = float(tip[0]) - base[0], float(tip[1]) - base[1]
    c2 = (dx * dx + dz * dz - l1 * l1 - l2 * l2) / (2 * l1 * l2)
    if not -1.0 <= c2 <= 1.0:
        raise InputError("tip", f"{tuple(tip)} is out of the arm's reach")
    a2 = -float(np.arccos(c2))
    a1 = float(np.arctan2(dz, dx) - np.arctan2(l2 * np.sin(a2), l1 + l2 * np.cos(a2)))
    return np.array([a1, a2])


def _arm_transcription(formulation: str, N: int, h: float, q0: np.ndarray, qf: np.ndarray,
                       q_indices: list[int]) -> Any:
    """The arm-box transcription shared by the arm tasks: from rest at ``q0`` to rest with the
    entries ``q_indices`` of ``qf``; joint torques within :data:`ARM_TAU_MAX`, joint speeds within
    :data:`ARM_SPEED_MAX`, the fingertip within the face's extent (rows ``fingertip_on_face{k}``:
    ``|r_z| <= height / 2 - ARM_FACE_MARGIN`` in the box's frame); minimize ``h sum |u|^2``."""
    import casadi as ca

    from contactmp.models.arm_tasks import arm_fingertip, two_link_arm_box
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    system = two_link_arm_box(**ARM_SYSTEM)
    to = ContactImplicitTO(system, N, h, formulation=formulation, gap=GAP)
    to.set_initial_state(q0, np.zeros(system.n_v))
    to.set_final_state(qf, q_indices=q_indices)
    inf = np.inf
    rest_at_the_end(to, np.array([inf, inf, inf, ARM_SPEED_MAX, ARM_SPEED_MAX]))
    half = ARM_SYSTEM["height"] / 2 - ARM_FACE_MARGIN
    for k, qk in enumerate(to.q):
        qs = qk.sym
        tip = arm_fingertip(qs, ARM_SYSTEM["base"], ARM_SYSTEM["l1"], ARM_SYSTEM["l2"])
        c, s = ca.cos(qs[2]), ca.sin(qs[2])
        r_z = -s * (tip[0] - qs[0]) + c * (tip[1] - qs[1])
        to.program.add_constraint(r_z, -half, half, name=f"fingertip_on_face{k}", block=f"state{k}")
    to.bound_inputs(-ARM_TAU_MAX, ARM_TAU_MAX)
    to.minimize_effort(1.0)
    return to


def _arm_push_task(formulation: str, quick: bool) -> Any:
    """The two-link arm of :func:`~contactmp.models.arm_tasks.two_link_arm_box` pushes the 1 kg,
    0.2 m box 0.3 m along the ground (``mu = 0.3``; fingertip ``mu = 0.5``), from rest with the
    fingertip 0.2 m left of the box to rest with ``x_N = 0.3`` (the box's height and tilt and the
    arm's angles at the end free), N = 30 steps of 0.05 s (the issue's task; also ``--quick``);
    minimize ``h sum |tau|^2`` (:func:`_arm_transcription`)."""
    hh = ARM_SYSTEM["height"]
    q0 = np.r_[0.0, hh / 2, 0.0, arm_joint_angles((-0.3, hh / 2))]
    qf = np.r_[0.3, hh / 2, 0.0, arm_joint_angles((0.2, hh / 2))]
    return _arm_transcription(formulation, 30, 0.05, q0, qf, [0])


def _arm_pivot_task(formulation: str, quick: bool) -> Any:
    """The two-link arm tips the box over its bottom-right corner: from rest with the fingertip
    touching the box's left face near its top, to rest with the box tilted to ``theta_N = -0.3``
    rad (its left corner lifted, held there by the fingertip; position and height free), N = 30
    steps of 0.05 s (also ``--quick``); minimize ``h sum |tau|^2`` (:func:`_arm_transcription`)."""
    hh, w = ARM_SYSTEM["height"], ARM_SYSTEM["width"]
    q0 = np.r_[0.0, hh / 2, 0.0, arm_joint_angles((-w / 2, hh - 0.03))]
    th = -0.3  # rotate about the bottom-right corner (w/2, 0): center and tip follow
    R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    corner = np.array([w / 2, 0.0])
    center = corner + R @ np.array([-w / 2, hh / 2])
    tip = corner + R @ np.array([-w, hh - 0.03])
    qf = np.r_[center, th, arm_joint_angles(tip)]
    return _arm_transcription(formulation, 30, 0.05, q0, qf, [2])


#: the in-hand rotation's system (:func:`contactmp.models.arm_tasks.two_finger_rotation`'s arguments),
#: its finger force bound (N per component), finger speed bound (m/s per component) and the
#: fingertips' margin from the faces' edges (m)
ROTATE_SYSTEM = {"m_box": 0.5, "width": 0.1, "height": 0.1, "mu": 0.8, "m_finger": 0.1}
ROTATE_F_MAX, ROTATE_V_MAX, ROTATE_FACE_MARGIN = 20.0, 0.5, 0.01
#: the box's turn (rad) in the in-hand rotation task
ROTATE_ANGLE = 0.4


def _rotate_task(formulation: str, quick: bool) -> Any:
    """Two fingertips (:func:`~contactmp.models.arm_tasks.two_finger_rotation`, ``mu = 0.8``) hold
    a 0.5 kg, 0.1 m box in the air and turn it in hand by :data:`ROTATE_ANGLE` about its center: from
    rest, level, fingertips at the faces' mid-heights, to rest at ``theta_N = ROTATE_ANGLE`` with the
    center back at the origin (the fingertips' end positions free), N = 20 steps of 0.05 s (also
    ``--quick``). Finger forces within :data:`ROTATE_F_MAX` per component, finger speeds within
    :data:`ROTATE_V_MAX`, each fingertip within its face (rows ``fingertip_on_face{k}``: ``|r_z| <=
    height / 2 - ROTATE_FACE_MARGIN`` in the box's frame); minimize ``h sum |u|^2``."""
    import casadi as ca

    from contactmp.models.arm_tasks import two_finger_rotation
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    system = two_finger_rotation(**ROTATE_SYSTEM)
    w, hh = ROTATE_SYSTEM["width"], ROTATE_SYSTEM["height"]
    N = 20
    to = ContactImplicitTO(system, N, 0.05, formulation=formulation, gap=GAP)
    th = ROTATE_ANGLE
    R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    q0 = np.array([0.0, 0.0, 0.0, -w / 2, 0.0, w / 2, 0.0])
    qf = np.r_[0.0, 0.0, th, R @ [-w / 2, 0.0], R @ [w / 2, 0.0]]  # the fingertips' entries shape the guess
    to.set_initial_state(q0, np.zeros(system.n_v))
    to.set_final_state(qf, q_indices=[0, 1, 2])
    inf = np.inf
    rest_at_the_end(to, np.r_[inf, inf, inf, np.full(4, ROTATE_V_MAX)])
    half = hh / 2 - ROTATE_FACE_MARGIN
    for k, qk in enumerate(to.q):
        qs = qk.sym
        c, s = ca.cos(qs[2]), ca.sin(qs[2])
        r_z = ca.vertcat(*(-s * (qs[3 + 2 * i] - qs[0]) + c * (qs[4 + 2 * i] - qs[1]) for i in range(2)))
        to.program.add_constraint(r_z, -half, half, name=f"fingertip_on_face{k}", block=f"state{k}")
    to.bound_inputs(-ROTATE_F_MAX, ROTATE_F_MAX)
    to.minimize_effort(1.0)
    return to


TASKS: dict[str, Task] = {
    "box": Task("box", "push a planar box 1 m on a friction surface, rest to rest", _box_task, BOX_OPTIONS),
    "hopper": Task("hopper", "planar one-legged hopper moves forward and stands again", _hopper_task, HOPPER_OPTIONS),
    "push": Task("push", "a point finger pushes a box 0.4 m to a goal, rest to rest", _push_task),
    "arm-push": Task("arm-push", "a two-link arm pushes a box 0.3 m with its fingertip, rest to rest", _arm_push_task),
    "arm-pivot": Task("arm-pivot", "a two-link arm tips a box 0.3 rad over its corner and holds it", _arm_pivot_task),
    "rotate": Task("rotate", "two fingertips turn a box held in the air by 0.4 rad, rest to rest", _rotate_task),
}


def contact_modes(to: Any, traj: Any, impulse_tol: float = 1e-6, slip_tol: float = 1e-4) -> np.ndarray:
    """(N, n_c) integer codes into :data:`MODES` of each step's contacts: *separated* when the normal
    impulse ``p_n <= impulse_tol * max(1, max p_n)``, else *sticking* when the contact point's
    tangential speed ``||(J_t, J_o)(q_k) v_{k+1}|| <= slip_tol``, else *sliding*."""
    system = to.system
    scale = max(1.0, float(np.abs(traj.p_n).max(initial=0.0)))
    codes = np.zeros(traj.p_n.shape, dtype=int)
    for k in range(traj.p_n.shape[0]):
        _, Jt, Jo = system.eval_J(traj.q[k])
        slip = np.hypot(Jt @ traj.v[k + 1], Jo @ traj.v[k + 1])
        for j in range(traj.p_n.shape[1]):
            if traj.p_n[k, j] <= impulse_tol * scale:
                codes[k, j] = 0
            else:
                codes[k, j] = 1 if slip[j] <= slip_tol else 2
    return codes


def run_start(to: Any, strategy: str, seed: int, start: int, backend: str = "casadi",
              options: tuple[tuple[str, Any], ...] = (), plan: Any = None) -> tuple[dict[str, Any], Any]:
    """Solve ``to`` from start ``start`` (0: the deterministic guess, or with ``plan`` the guess
    :meth:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO.guess_from` that plan;
    i >= 1: seeded noise ``numpy.random.default_rng([seed, i])``) with ``strategy`` and the
    NLPOptions ``options`` (a ``time_limit`` there replaces :data:`TIME_LIMIT`); return its record
    and trajectory."""
    t0 = time.perf_counter()
    traj = to.solve(backend=backend, strategy=strategy, start_indices=[start], seed=seed, scale=NOISE_SCALE,
                    plan=plan, **{"time_limit": TIME_LIMIT, **dict(options)})
    wall = time.perf_counter() - t0
    rec = traj.starts[0]
    modes = contact_modes(to, traj)
    force_gap = to.force_gap(traj)
    converged = bool(traj.status is Status.SOLVED and traj.comp_violation <= COMP_TOL)
    record = {
        "status": traj.status.value,
        "converged": converged,
        "objective": float(traj.objective),
        "comp_violation": float(traj.comp_violation),
        "constraint_violation": float(traj.constraint_violation),
        "iterations": int(rec["iterations"]),
        "time_s": float(rec["time_s"]),
        "wall_s": wall,
        "backend_status": rec.get("backend_status", ""),
        "b_stationarity": rec.get("b_stationarity"),  # the certificate of the returned point (timed apart)
        # the cone's pyramid start (ContactImplicitTO.solve): its phase is in time_s and iterations
        **{k: (rec[k].value if isinstance(rec[k], Status) else rec[k])
           for k in ("pyramid_start", "seed_status", "seed_objective", "seed_time_s", "seed_iterations") if k in rec},
        "mode_counts": {m: int((modes == i).sum()) for i, m in enumerate(MODES)},
        # the largest gap phi(q_{k+1}) at which a normal impulse acts (ContactImplicitTO.force_gap)
        "force_gap": force_gap["gap"] if force_gap["step"] is not None else None,
        "trajectory": {
            "t": traj.t, "q": traj.q, "v": traj.v, "u": traj.u,
            "p_n": traj.p_n, "p_t": traj.p_t, "p_o": traj.p_o, "modes": modes,
        },
    }
    return record, traj


def spread(values: list[float]) -> dict[str, float | None]:
    """min / median / max of ``values`` (None when empty)."""
    if not values:
        return {"min": None, "median": None, "max": None}
    a = np.asarray(values, dtype=float)
    return {"min": float(a.min()), "median": float(np.median(a)), "max": float(a.max())}


def plot_trajectory(path: Path, system: Any, traj: dict[str, Any], title: str) -> None:
    """Three panels over time: the configuration ``q``, the contact forces ``p / h`` (normal solid,
    tangential dashed) and the contact modes (one row per contact)."""
    from contactmp.case_studies._figures import plot_mode_chart, pyplot, save

    plt = pyplot()
    t = np.asarray(traj["t"])
    q = np.asarray(traj["q"])
    pn, pt = np.asarray(traj["p_n"]), np.asarray(traj["p_t"])
    modes = np.asarray(traj["modes"])
    h = float(t[1] - t[0])
    used = [j for j in range(pn.shape[1]) if (modes[:, j] > 0).any()] or list(range(pn.shape[1]))
    fig, axes = plt.subplots(3, 1, figsize=(8, 7.5), sharex=True,
                             gridspec_kw={"height_ratios": [3, 3, 0.4 + 0.35 * len(used)]})
    for i, name in enumerate(system.q_names):
        axes[0].plot(t, q[:, i], label=name)
    axes[0].set_ylabel("configuration q")
    axes[0].legend(fontsize=8, ncol=min(5, len(system.q_names)))
    for n_, j in enumerate(used):
        name = system.contact_names[j]
        axes[1].step(t[:-1], pn[:, j] / h, where="post", color=f"C{n_}", label=f"{name}: normal")
        axes[1].step(t[:-1], pt[:, j] / h, where="post", color=f"C{n_}", ls="--", label=f"{name}: tangential")
    axes[1].set_ylabel("contact force p / h (N)")
    axes[1].legend(fontsize=8, ncol=2)
    plot_mode_chart(axes[2], t, modes[:, used], [system.contact_names[j] for j in used])
    for ax in axes[:2]:
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    save(fig, path, dpi=110)


def start_policy(name: str) -> str:
    """The key part that says how a start of the formulation ``name`` begins: ``"/from-pyramid"``
    when :meth:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO.solve` starts it from
    the pyramid's plan by default (its ``pyramid_start``: the cone; records of the cone from its own
    guess, made before, are then not resumed), ``""`` otherwise."""
    from contactmp.formulations.base import formulation, registered

    return "/from-pyramid" if name in registered() and formulation(name).pyramid_start else ""


def record_key(task: str, formulation: str, strategy: str, seed: int, start: int, quick: bool) -> str:
    """The JSONL key of one start."""
    return (f"{'quick' if quick else 'full'}/{task}/{formulation}/{strategy}/s{seed}/start{start:02d}/gap-{GAP}"
            f"{start_policy(formulation)}")


@functools.lru_cache(maxsize=8)
def _transcription(task: str, formulation: str, quick: bool) -> Any:
    """The task's transcription, built once per process (a Dask worker reuses it for its starts)."""
    return TASKS[task].build(formulation, quick)


def solve_item(item: tuple[str, str, str, int, int, bool, str]) -> dict[str, Any]:
    """The record of one grid item ``(task, formulation, strategy, seed, start, quick, backend)``
    (a module-level function of plain arguments, so that Dask can ship it to its workers)."""
    task, form, strategy, seed, start, quick, backend = item
    rec, _ = run_start(_transcription(task, form, quick), strategy, seed, start, backend, TASKS[task].options)
    return {"key": record_key(task, form, strategy, seed, start, quick), "task": task, "formulation": form,
            "strategy": strategy, "seed": seed, "start": start, "backend": backend, **rec}


def run_grid(study: Any, tasks: list[str], formulations: list[str], strategies: list[str], starts: int,
             backend: str = "casadi", workers: int | None = 0, scheduler: str | None = None) -> list[dict[str, Any]]:
    """Run every (task, formulation, strategy, start) not yet in ``study.store`` through
    :func:`contactmp.parallel.run_tasks` (``workers=0``: in this process; None: a local Dask cluster
    of 2 workers; ``scheduler``: an existing cluster); each record is appended as it finishes.
    Returns the grid's records in grid order."""
    from contactmp.parallel import run_tasks

    items = [(t, f, s, study.seed, i, study.quick, backend)
             for t in tasks for f in formulations for s in strategies for i in range(starts)]
    report = run_tasks(solve_item, items, keys=[record_key(*it[:5], it[5]) for it in items],
                       store_path=study.store, workers=workers, scheduler=scheduler, description=study.name)
    return report.records()


def summarize(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (task, formulation, strategy): success rate (converged starts / starts), final
    cost spread over the converged starts, complementarity violation and time per start."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["task"], r["formulation"], r["strategy"]), []).append(r)
    rows = []
    for (task, form, strategy), rs in groups.items():
        conv = [r for r in rs if r["converged"]]
        best = min(conv, key=lambda r: r["objective"]) if conv else None
        rows.append({
            "task": task, "formulation": form, "strategy": strategy, "starts": len(rs),
            "converged": len(conv), "success_rate": len(conv) / len(rs),
            "solved": sum(r["status"] == Status.SOLVED.value for r in rs),
            "cost": spread([r["objective"] for r in conv]),
            "comp_violation": spread([r["comp_violation"] for r in rs]),
            "constraint_violation": spread([r["constraint_violation"] for r in rs]),
            "time_s": spread([r["time_s"] for r in rs]),
            "total_time_s": float(sum(r["time_s"] for r in rs)),
            "force_gap_max": largest_force_gap(conv),
            "best_start": best["start"] if best else None,
            "best_modes": best["mode_counts"] if best else None,
        })
    return rows


def largest_force_gap(records: list[dict[str, Any]]) -> float | None:
    """The largest ``force_gap`` of ``records`` (the gap ``phi(q_{k+1})`` at which a plan's normal
    impulse acts, :meth:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO.force_gap`);
    None when no record has one (no converged start, no force, or records from before the check)."""
    gaps = [float(r["force_gap"]) for r in records if r.get("force_gap") is not None]
    return max(gaps) if gaps else None


def summary_table(rows: list[dict[str, Any]]) -> str:
    """The markdown table of :func:`summarize`'s rows."""
    from contactmp.case_studies._study import markdown_table

    def g(x: float | None) -> str:
        return "-" if x is None else f"{x:.4g}"

    headers = ["task", "formulation", "strategy", "starts", "converged", "success", "cost min",
               "cost median", "cost max", "comp viol. median", "comp viol. max", "constr. viol. max",
               "time/start median (s)", f"largest gap with force (m; target <= {FORCE_GAP_TOL:g})",
               "best: sticking/sliding/separated contact-steps"]
    body = []
    for r in rows:
        m = r["best_modes"]
        body.append([r["task"], r["formulation"], r["strategy"], r["starts"], r["converged"],
                     f"{100 * r['success_rate']:.0f}%", g(r["cost"]["min"]), g(r["cost"]["median"]),
                     g(r["cost"]["max"]), g(r["comp_violation"]["median"]), g(r["comp_violation"]["max"]),
                     g(r.get("constraint_violation", {}).get("max")), g(r["time_s"]["median"]),
                     g(r.get("force_gap_max")),
                     "-" if m is None else f"{m['sticking']}/{m['sliding']}/{m['separated']}"])
    return markdown_table(headers, body)


def plot_best_trajectories(study: Any, records: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[str]:
    """One trajectory PNG per row with a converged start (its best start); returns the file names."""
    names = []
    systems: dict[str, Any] = {}
    for row in rows:
        if row["best_start"] is None:
            continue
        rec = next(r for r in records if (r["task"], r["formulation"], r["strategy"], r["start"])
                   == (row["task"], row["formulation"], row["strategy"], row["best_start"]))
        if row["task"] not in systems:
            systems[row["task"]] = TASKS[row["task"]].build("pyramid", study.quick).system
        name = f"trajectory_{row['task']}_{row['formulation']}_{row['strategy']}.png"
        title = (f"{row['task']}: {row['formulation']} / {row['strategy']}, best of {row['starts']} starts "
                 f"(start {row['best_start']}, cost {rec['objective']:.4g})")
        plot_trajectory(study.out / name, systems[row["task"]], rec["trajectory"], title)
        names.append(name)
    return names
