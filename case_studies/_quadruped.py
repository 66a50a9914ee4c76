"""The Solo12 tasks of the study ``cito-quadruped``: contact-implicit trajectory optimization of a
real quadruped, its gait discovered by the optimizer (no contact schedule is given).

Every task starts standing still (:func:`~contactmp.models.urdf.solo12_standing`: four feet on
the ground, the SRDF's straight-standing joint angles) and ends standing still, elsewhere:

* ``walk``: the base 0.3 m forward in 1 s (N = 40, h = 0.025);
* ``jump``: onto a 10 cm step (:func:`~contactmp.models.urdf.step_terrain`, edge at x = 0.25 m,
  smoothed over 8 mm) in 0.8 s (N = 40, h = 0.02), the base 0.5 m forward and 0.1 m up: every
  foot starts on the lower floor and ends on the step (the front feet start at x = 0.195 m,
  5.5 cm before the edge, where the smoothed step is 1.1e-7 m high; the hind feet end at
  x = 0.305 m, 5.5 cm past it);
* ``calipso``: the sagittal model set up like CALIPSO's planar quadruped gait (Howell et al. 2022:
  4 feet, 31 knots, second-order-cone friction, where the paper reports that IPOPT fails to
  converge): N = 30 steps of 1/30 s, the base 0.3 m forward.

Each exists for the 3D robot (floating base, 12 joints, ``n_q = 19``) and the sagittal one (base
``(x, z, pitch)``, 8 joints), with the Coulomb cone (``"cone"``) or the 4-facet pyramid
(``"pyramid"``; the sagittal pyramid is the cone's segment). Limits: the URDF's joint ranges
(+-10 rad, placeholders that bound nothing here) and the actuators' torque, ``|u_i| <=``
:data:`~contactmp.models.urdf.SOLO12_TORQUE_LIMIT` = 2.7 N m (the URDF's effort="1000" is a
placeholder). Cost: ``h sum_k ||u_k||^2`` (minimum effort). The end state fixes the base's
horizontal position (and for 3D its yaw entry ``q_z`` of the quaternion) and the joint angles,
and ``v_N = 0``; the base height and tilt follow from the four feet's contact rows (fixing them
too would duplicate those rows, see
:meth:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO.set_final_state`).

Every foot's non-penetration side is the gap at the end of the step, ``phi(q_{k+1}) / h``
(the formulations' ``gap="position"``), not its first-order expansion ``phi(q_k) / h + Jn v_{k+1}``:
with the expansion, feet on curved paths ended steps up to 4e-5 m below the ground (3D walk, 2 of
4 quick starts) and up to 0.126 m (a sagittal start whose foot swept through the ground within one
step); the ``gap_rows`` of :class:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO`
(``phi(q_{k+1}) >= 0`` added beside the linear side) prevented that but, nearly parallel to the
contact rows at a stance foot, stalled IPOPT (sagittal walk start 0: not solved after 5,875
iterations against 1,746 without). The position gap replaces the side instead of adding a row;
replays then go through :class:`~contactmp.transcriptions.time_stepping.TimeStepping` with the
same option (each step a nonlinear complementarity problem, solved through the NLP route).
The knots' complementarity sides are lifted to variables (``lift_sides``) and the initial guess
carries the robot (``support_guess``: the torques and normal impulses that best balance the
dynamics along the interpolated motion): on the sagittal walk from start 0 (elastic l1, one core)
IPOPT took 1,746 iterations and 49 CPU s with it against 2,740 and 69 s without.
"""
from __future__ import annotations

from typing import Any

import numpy as np

#: (N, h, base displacement (dx, dz)) of each task
TASK_SHAPES: dict[str, tuple[int, float, tuple[float, float]]] = {
    "walk": (40, 0.025, (0.3, 0.0)),
    "jump": (40, 0.02, (0.5, 0.1)),
    "calipso": (30, 1.0 / 30.0, (0.3, 0.0)),
}
#: the jump's step: height (m), edge position x (m), smoothing width (m)
STEP = (0.1, 0.25, 0.008)


def solo_task(kind: str, planar: bool, formulation: str, lift_sides: bool = True, gap: str = "position") -> Any:
    """The :class:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO` of task ``kind``
    (``"walk"``, ``"jump"``, ``"calipso"``) for Solo12 (``planar``: the sagittal model) with
    ``formulation`` (see the module docstring); ``lift_sides``: the knots' complementarity sides
    as variables (:class:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO`); ``gap``:
    the formulation's ``gap`` option (``"position"``: the gap at each step's end)."""
    from contactmp.models.urdf import SOLO12_TORQUE_LIMIT, joint_limits, solo12, solo12_standing, step_terrain
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    N, h, (dx, dz) = TASK_SHAPES[kind]
    terrain = step_terrain(*STEP) if kind == "jump" else None
    system = solo12(planar=planar, terrain=terrain)
    to = ContactImplicitTO(system, N, h, formulation=formulation, lift_sides=lift_sides, gap=gap)
    q0 = solo12_standing(planar)
    qf = q0.copy()
    qf[0] += dx
    qf[1 if planar else 2] += dz
    n_base = 3 if planar else 7
    to.set_initial_state(q0, np.zeros(system.n_v))
    fixed = [0] + ([] if planar else [1, 6]) + list(range(n_base, system.n_q))
    to.set_final_state(qf, np.zeros(system.n_v), q_indices=fixed)
    limits = joint_limits("solo12")
    lb, ub = np.full(system.n_q, -np.inf), np.full(system.n_q, np.inf)
    for i, name in enumerate(system.q_names[n_base:]):
        lb[n_base + i], ub[n_base + i] = limits[name][:2]
    to.bound_configurations(lb, ub)
    to.bound_inputs(-SOLO12_TORQUE_LIMIT, SOLO12_TORQUE_LIMIT)
    to.minimize_effort(1.0)
    to.support_guess = True  # start from the inputs and normal impulses that carry the guessed motion
    return to
