"""The scenes of ``formulation-compare``: each a symbolic system every registered formulation steps,
a start, an input, a duration, and the physics it is judged by (closed forms where they exist).

A :class:`Scene` names its system by a builder key (systems are built once per process,
:func:`system`), so a scene is plain data that a worker process can rebuild. ``load`` [N] is the
normal force the most loaded supporting contact carries at rest; the soft formulations' gains
follow from it (:func:`formulation_options`) so that every soft model sinks the same design depth
``DESIGN_DEPTH`` under it. ``physics(trajectory)`` returns the scene's own measurements (errors
against closed forms, slip, drift), computed from the trajectory alone like
:func:`~contactmp.transcriptions.physics_check.check_trajectory`.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from contactmp.models.rigid_bodies import GRAVITY

#: friction coefficient of the ball, cube, stack and rod scenes
MU = 0.5
#: the soft models' static depth under ``Scene.load`` [m] (compliant ``K = load / d``, polytope
#: ``k = load / d^2``)
DESIGN_DEPTH = 1e-3
#: initial sliding speed of the ball and cube [m/s]
V0 = 1.0
#: the 8 sliding directions [deg]: 15 deg off the axes, so that none is an edge normal or a vertex
#: of the 4-facet pyramid (whose friction there would be exactly opposite the slip by symmetry)
DIRECTIONS_DEG = tuple(15.0 + 45.0 * j for j in range(8))
#: incline slopes as multiples of each body's slip angle (stick below, slip above)
INCLINE_FACTORS = {"below": 0.95, "above": 1.05}
#: Painleve's rod: the angle of least paradox friction (tan theta = 2, kappa = 3) and mu above 4/3
ROD_THETA, ROD_MU = math.atan(2.0), 1.5
#: the spinning rod: omega^2 (l/2) sin(theta) > g, so b_n > 0 (two acceleration-level solutions)
ROD_SPIN = 6.0
#: Solo12 (sagittal): stable-PD gains on the joints, drop height [m]
SOLO_PD, SOLO_DROP = (15.0, 0.3), 0.1
#: two-finger grasp: squeeze force [N] (2 mu F = 10 N against the box's 4.9 N weight)
GRASP_FORCE = 10.0


@dataclass(frozen=True)
class Scene:
    """One scene: ``system`` (a key of :data:`BUILDERS` and its keyword arguments), the start
    ``q0, v0``, a constant input ``u`` (None: zero), the duration ``T`` [s], the stable-PD gains
    ``pd`` and targets (hold ``q0``'s joints), the ``load`` [N] of the most loaded contact at rest,
    the ``family`` it belongs to, and ``physics`` (the name of its measurement in :data:`PHYSICS`)
    with ``info`` (the closed-form inputs)."""

    name: str
    family: str
    system: str
    system_args: tuple[tuple[str, Any], ...]
    q0: tuple[float, ...]
    v0: tuple[float, ...]
    T: float
    load: float
    physics: str
    u: tuple[float, ...] | None = None
    pd: tuple[float, float] | None = None
    info: dict[str, float] = field(default_factory=dict)

    @property
    def passive(self) -> bool:
        """No input and no controller: the energy must not grow."""
        return self.u is None and self.pd is None

    def build(self) -> Any:
        """The scene's :class:`~contactmp.models.symbolic.ContactSystem` (cached per process)."""
        return system(self.system, self.system_args)

    def targets(self) -> Callable[[float], tuple[np.ndarray, np.ndarray]] | None:
        """The PD targets: the start's actuated coordinates (the entries of ``q`` whose rates the
        inputs act on, :class:`~contactmp.formulations.nmdp.Chart`: ``B^T q`` in minimal coordinates,
        a floating base's joint angles), at rest (None without ``pd``)."""
        if self.pd is None:
            return None
        from contactmp.formulations.nmdp import chart

        idx = chart(self.build()).actuated_q
        q_d, qd_d = np.asarray(self.q0, dtype=float)[idx], np.zeros(idx.size)
        return lambda t: (q_d, qd_d)


def _builders() -> dict[str, Callable[..., Any]]:
    from contactmp.models.manipulation import two_finger_grasp
    from contactmp.models.systems import ball_3d, box_3d, box_stack_2d, cube_3d, rod_2d
    from contactmp.models.urdf import solo12

    return {"ball": ball_3d, "cube": cube_3d, "stack": box_stack_2d, "rod": rod_2d, "grasp": two_finger_grasp,
            "solo12": lambda: solo12(planar=True), "box3d": box_3d, "solo12_3d": lambda: solo12(planar=False)}


@functools.lru_cache(maxsize=None)
def system(key: str, args: tuple[tuple[str, Any], ...]) -> Any:
    """The system ``BUILDERS[key](**dict(args))``, built once per process."""
    return _builders()[key](**dict(args))


def formulation_options(name: str, scene: Scene, depth: float = DESIGN_DEPTH) -> dict[str, Any]:
    """The options of formulation ``name`` on ``scene``: the soft models sink ``depth`` (default
    ``DESIGN_DEPTH``) under
    ``scene.load`` -- compliant ``K = load / d``, critical normal damping ``B = 2 sqrt(K m_c)``
    (``m_c = load / g``), tangential damping ``Bt = 1e4 m_c`` N s/m (creep ``F / Bt`` below the
    friction limit); NMDP / MDP polytope ``k = load / d^2`` N/m^2 and ``relax = 1e-3 load`` (the
    force a contact may get at a positive gap, which keeps the polytope non-degenerate), with
    ``design_depth = d`` declared (the depth the physics verdict holds them to). The rigid models
    take none."""
    w, d = scene.load, depth
    if name == "compliant":
        K, m_c = w / d, w / GRAVITY
        return {"stiffness": K, "damping": 2.0 * math.sqrt(K * m_c), "tangential_damping": 1e4 * m_c}
    if name in ("nmdp", "mdp"):
        return {"stiffness": w / d**2, "relax": 1e-3 * w, "design_depth": d}
    return {}


# ------------------------------------------------------------------------------------- scenes
def _ball(slope: float = 0.0) -> tuple[tuple[str, Any], ...]:
    return (("mu", MU), ("radius", 0.1), ("slope", slope))


def _cube(slope: float = 0.0) -> tuple[tuple[str, Any], ...]:
    return (("mu", MU), ("size", 0.2), ("slope", slope))


def _box3d() -> tuple[tuple[str, Any], ...]:
    return (("mu", MU), ("size", 0.2))


def box3d_incline_input(slope: float, m: float = 1.0, g: float = GRAVITY) -> tuple[float, ...]:
    """The input of ``box_3d`` (a world force at its center, a body torque) that turns its gravity
    ``(0, 0, -m g)`` into a slope's: ``(m g sin a, 0, m g (1 - cos a))`` plus gravity is
    ``m g (sin a, 0, -cos a)``, the incline of ``cube_3d(slope=a)`` (down the slope along ``+x``) on
    the horizontal plane."""
    return (m * g * math.sin(slope), 0.0, m * g * (1.0 - math.cos(slope)), 0.0, 0.0, 0.0)


def ball_slip_angle(mu: float = MU) -> float:
    """The slope above which a solid ball's contact slips: ``tan = 7/2 mu``."""
    return math.atan(3.5 * mu)


def cube_slip_angle(mu: float = MU) -> float:
    """The slope above which a box slides (Coulomb's cone): ``tan = mu``."""
    return math.atan(mu)


def scenes() -> list[Scene]:
    """Every scene of the study (see the module docstring of ``formulation_compare``)."""
    from contactmp.models.painleve import RodState, rod_planar_state
    from contactmp.models.urdf import solo12_standing

    g, out = GRAVITY, []
    for deg in DIRECTIONS_DEG:
        c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
        out.append(Scene(f"ball-slide-{deg:g}", "ball-slide", "ball", _ball(), (0, 0, 0.1, 0, 0, 0),
                         (V0 * c, V0 * s, 0, 0, 0, 0), 0.3, g, "slide_ball", info={"direction_deg": deg}))
        out.append(Scene(f"cube-slide-{deg:g}", "cube-slide", "cube", _cube(), (0, 0, 0.1, 0, 0, 0),
                         (V0 * c, V0 * s, 0, 0, 0, 0), 0.3, g / 4, "slide_cube", info={"direction_deg": deg}))
    out.append(Scene("ball-roll", "ball-roll", "ball", _ball(), (0, 0, 0.1, 0, 0, 0),
                     (V0, 0, 0, 0, V0 / 0.1, 0), 0.3, g, "roll_ball"))
    for body, angle, load in (("ball", ball_slip_angle(), g), ("cube", cube_slip_angle(), g / 4)):
        for side, f in INCLINE_FACTORS.items():
            slope = f * angle
            args = _ball(slope) if body == "ball" else _cube(slope)
            q0 = (0, 0, 0.1, 0, 0, 0)
            out.append(Scene(f"{body}-incline-{side}", "incline", body, args, q0, (0,) * 6, 0.2,
                             load * math.cos(slope), f"incline_{body}", info={"slope": slope, "factor": f}))
    for n in (3, 10):
        q0 = tuple(float(x) for x in system("stack", (("n", n), ("mu", MU))).q_nominal)
        out.append(Scene(f"stack-{n}", "stack", "stack", (("n", n), ("mu", MU)), q0, (0.0,) * (3 * n), 0.5,
                         n * g / 4, "stack", info={"n": n}))
    for name, omega in (("painleve-jam", 0.0), ("painleve-spin", ROD_SPIN)):
        q0, v0 = rod_planar_state(RodState(ROD_THETA, ROD_MU, -1.0, omega))
        out.append(Scene(name, "painleve", "rod", (("mu", ROD_MU),), tuple(q0), tuple(v0), 0.2, g, "rod",
                         info={"omega": omega}))
    q_stand = solo12_standing(planar=True)
    q_drop = q_stand.copy()
    q_drop[1] += SOLO_DROP
    for name, q0 in (("solo12-stand", q_stand), ("solo12-drop", q_drop)):
        out.append(Scene(name, "solo12", "solo12", (), tuple(q0), (0.0,) * 11, 1.0, 2.5 * g / 4, "solo12",
                         pd=SOLO_PD, info={"z_stand": float(q_stand[1])}))
    out.append(Scene("cube-rest", "rest", "cube", _cube(), (0, 0, 0.1, 0, 0, 0), (0.0,) * 6, 0.3, g / 4, "rest"))
    # the quaternion box (q = (x, y, z, qw, qx, qy, qz), qdot = G(q) v) and the 3D Solo12 (floating base)
    q_box = (0.0, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0)
    for deg in DIRECTIONS_DEG:
        c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
        out.append(Scene(f"box3d-slide-{deg:g}", "box3d-slide", "box3d", _box3d(), q_box, (V0 * c, V0 * s, 0, 0, 0, 0),
                         0.3, g / 4, "slide_box3d", info={"direction_deg": deg}))
    for side, f in INCLINE_FACTORS.items():
        slope = f * cube_slip_angle()
        out.append(Scene(f"box3d-incline-{side}", "box3d", "box3d", _box3d(), q_box, (0.0,) * 6, 0.2,
                         g / 4 * math.cos(slope), "incline_cube", u=box3d_incline_input(slope),
                         info={"slope": slope, "factor": f}))
    out.append(Scene("box3d-rest", "box3d", "box3d", _box3d(), q_box, (0.0,) * 6, 0.3, g / 4, "rest"))
    q3 = solo12_standing(planar=False)
    q3_drop = q3.copy()
    q3_drop[2] += SOLO_DROP
    for name, q0 in (("solo12-3d-stand", q3), ("solo12-3d-drop", q3_drop)):
        out.append(Scene(name, "solo12-3d", "solo12_3d", (), tuple(q0), (0.0,) * 18, 1.0, 2.5 * g / 4, "solo12_3d",
                         pd=SOLO_PD, info={"z_stand": float(q3[2])}))
    out.append(Scene("grasp", "grasp", "grasp", (("mu", MU),), (0, 0, 0, -0.05, 0.05), (0.0,) * 5, 1.0,
                     GRASP_FORCE, "grasp", u=(GRASP_FORCE, -GRASP_FORCE)))
    return out


def scene(name: str) -> Scene:
    """The scene called ``name``."""
    for sc in scenes():
        if sc.name == name:
            return sc
    raise KeyError(name)


def push_scene(theta_deg: float, ratio: float = 2.0) -> Scene:
    """The cone-vs-pyramid push (its Figure 3 scene) as one time step: the cube at rest pushed through
    its center by ``ratio mu m g`` at ``theta_deg`` from the pyramid's ``t`` axis."""
    th = math.radians(theta_deg)
    F = ratio * MU * 1.0 * GRAVITY
    return Scene(f"push-{theta_deg:g}", "push", "cube", _cube(), (0, 0, 0.1, 0, 0, 0), (0.0,) * 6, 0.01,
                 GRAVITY / 4, "push", u=(F * math.cos(th), F * math.sin(th), 0, 0, 0, 0),
                 info={"theta_deg": theta_deg, "ratio": ratio})


# ------------------------------------------------------------------------------------- physics
def _angle_deg(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return math.nan
    return math.degrees(math.acos(max(-1.0, min(1.0, float(a @ b) / (na * nb)))))


def _slide_ball(sc: Scene, tr: Any) -> dict[str, float]:
    """Slip stops at ``t* = 2 v0 / (7 mu g)``; then the ball rolls at ``5/7 v0`` in the start's
    direction -- whatever the friction law, as long as the slip ends (angular momentum about the
    contact point), so the *path* shows a biased law: the final speed's relative error, the
    displacement's direction error [deg] and its lateral offset [m] from the start's line, the last slip."""
    v_end, d0 = tr.v[-1, :2], np.array(sc.v0[:2])
    d = tr.q[-1, :2] - tr.q[0, :2]
    slip = tr.v[-1, :2] + np.array([-0.1 * tr.v[-1, 4], 0.1 * tr.v[-1, 3]])
    return {"speed_rel_err": abs(float(np.linalg.norm(v_end)) / (5 / 7 * V0) - 1.0),
            "velocity_direction_err_deg": _angle_deg(v_end, d0), "direction_err_deg": _angle_deg(d, d0),
            "lateral_offset": float(abs(d0[0] * d[1] - d0[1] * d[0]) / np.linalg.norm(d0)),
            "final_slip": float(np.linalg.norm(slip))}


def ball_distance(T: float, v0: float = V0, mu: float = MU, g: float = GRAVITY) -> float:
    """The sliding ball's distance at time ``T`` (continuous closed form): it slides with deceleration
    ``mu g`` until ``t* = 2 v0 / (7 mu g)``, then rolls at ``5/7 v0``."""
    ts = 2.0 * v0 / (7.0 * mu * g)
    if T <= ts:
        return v0 * T - 0.5 * mu * g * T * T
    return v0 * ts - 0.5 * mu * g * ts * ts + 5.0 / 7.0 * v0 * (T - ts)


def cube_stop_distance(h: float, v0: float = V0, mu: float = MU, g: float = GRAVITY) -> float:
    """The discrete closed form of the sliding cube's distance under a rigid Coulomb step of ``h``
    (``v_k = v0 - k h mu g`` until it would change sign, ``x_{k+1} = x_k + h v_{k+1}``); tends to
    ``v0^2 / (2 mu g)`` as ``h -> 0``."""
    k = int(math.floor(v0 / (h * mu * g)))
    return h * (k * v0 - h * mu * g * k * (k + 1) / 2)


def _slide_cube(sc: Scene, tr: Any, yaw: float | None = None) -> dict[str, float]:
    """The cube stops after ``v0 / (mu g)`` having slid ``v0^2 / (2 mu g)`` along the start's direction:
    the distance's error against the step's discrete closed form (:func:`cube_stop_distance`) and
    against the continuous one, the direction's error [deg]."""
    d = tr.q[-1, :2] - tr.q[0, :2]
    dist = float(np.linalg.norm(d))
    return {"distance_rel_err": abs(dist / cube_stop_distance(tr.h) - 1.0),
            "distance_rel_err_continuous": abs(dist / (V0**2 / (2 * MU * GRAVITY)) - 1.0),
            "direction_err_deg": _angle_deg(d, np.array(sc.v0[:2])),
            "final_speed": float(np.linalg.norm(tr.v[-1, :3])),
            "yaw_deg": abs(math.degrees(float(tr.q[-1, 5]) if yaw is None else yaw))}


def _yaw_pitch(quat: np.ndarray) -> tuple[float, float]:
    """Yaw and pitch [rad] (z-y-x Euler angles) of the unit quaternion ``(w, x, y, z)``."""
    w, x, y, z = (float(c) for c in quat)
    return (math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)),
            math.asin(max(-1.0, min(1.0, 2.0 * (w * y - z * x)))))


def _slide_box3d(sc: Scene, tr: Any) -> dict[str, float]:
    """The quaternion box's slide: :func:`_slide_cube`'s measures (its ``v`` starts with the center's
    world velocity too), the yaw from the quaternion ``q[3:7]``."""
    return _slide_cube(sc, tr, yaw=_yaw_pitch(tr.q[-1, 3:7])[0])


def _roll_ball(sc: Scene, tr: Any) -> dict[str, float]:
    """A rolling ball keeps its speed ``v0`` and never slips (no rolling resistance)."""
    slips = np.abs(tr.v[:, 0] - 0.1 * tr.v[:, 4])
    return {"speed_rel_err": abs(float(tr.v[-1, 0]) / V0 - 1.0), "max_slip": float(np.max(slips))}


def _incline(sc: Scene, tr: Any, ball: bool) -> dict[str, float]:
    """Below the slip angle the contact sticks (a ball rolls at ``5/7 g sin``, a box rests); above it
    slips with the center accelerating at ``g (sin - mu cos)``: the contact's final slip speed and
    the center's mean acceleration against these."""
    a, T = sc.info["slope"], tr.t[-1]
    slip = float(tr.v[-1, 0] - (0.1 * tr.v[-1, 4] if ball else 0.0))
    sticks = sc.info["factor"] < 1.0
    if sticks:
        acc = 5 / 7 * GRAVITY * math.sin(a) if ball else 0.0
    else:
        acc = GRAVITY * (math.sin(a) - MU * math.cos(a))
    measured = float(tr.v[-1, 0] - tr.v[0, 0]) / T
    scale = GRAVITY * math.sin(a)
    return {"slip_speed": abs(slip), "accel_err_rel": float(abs(measured - acc) / scale), "sticks_expected": float(sticks)}


def _stack(sc: Scene, tr: Any) -> dict[str, float]:
    """A stack at rest stays put: the largest horizontal drift of any box [m], its largest tilt, and the
    top box's sink (a soft model's interfaces each sink under their load; a rigid one's do not)."""
    d = tr.q - tr.q[0]
    n = int(sc.info["n"])
    return {"max_horizontal_drift": float(np.max(np.abs(d[:, 0::3]))), "top_sink": float(-d[-1, 3 * (n - 1) + 1]),
            "max_tilt_deg": math.degrees(float(np.max(np.abs(d[:, 2::3]))))}


def _rod(sc: Scene, tr: Any) -> dict[str, float]:
    """Painleve's rod: the first step's normal and tangential impulse (an impulsive jam keeps them
    O(1) as ``h -> 0``), the end's slip speed after the first step, whether it left the table (its
    energy gain is the physics check's ``energy_gain``)."""
    s = sc.build()
    u_t = np.array([float((s.eval_J(q)[1] @ v)[0]) for q, v in zip(tr.q[1:], tr.v[1:])])
    phi = np.array([float(s.eval_phi(q)[0]) for q in tr.q])
    stop = np.flatnonzero(np.abs(u_t) < 1e-6)
    return {"first_p_n": float(tr.p_n[0, 0]), "first_p_t": float(tr.p_t[0, 0]),
            "slip_after_first_step": float(abs(u_t[0])),
            "time_to_stop": float(tr.t[1 + stop[0]]) if stop.size else math.nan,
            "max_lift": float(np.max(phi))}


def _solo12(sc: Scene, tr: Any) -> dict[str, float]:
    """Standing / landing under fixed PD targets: the torso's final height against standing (its sag),
    pitch, the largest horizontal foot slip while a foot is loaded (a mean force above 1 % of the
    design load ``sc.load``: a polytope's ``relax`` force in the air is not a load), and whether the
    run stayed finite."""
    s = sc.build()
    slip = 0.0
    for k in range(tr.n_steps):
        Jt = s.eval_J(tr.q[k + 1])[1]
        loaded = tr.p_n[k] / tr.h > 0.01 * sc.load
        if loaded.any():
            slip = max(slip, float(np.max(np.abs(Jt[loaded] @ tr.v[k + 1]))))
    return {"final_height_err": float(tr.q[-1, 1] - sc.info["z_stand"]), "final_pitch_deg": math.degrees(float(tr.q[-1, 2])),
            "max_loaded_foot_slip": slip, "finite": float(np.isfinite(tr.q).all())}


def _solo12_3d(sc: Scene, tr: Any) -> dict[str, float]:
    """:func:`_solo12` for the floating base ``q = (p, quat, joints)``: the torso's height ``q[2]``
    against standing, its pitch from the quaternion, the largest tangential speed ``|(Jt v, Jo v)|``
    of a loaded foot."""
    s = sc.build()
    slip = 0.0
    for k in range(tr.n_steps):
        _, Jt, Jo = s.eval_J(tr.q[k + 1])
        loaded = tr.p_n[k] / tr.h > 0.01 * sc.load
        if loaded.any():
            speed = np.hypot(Jt[loaded] @ tr.v[k + 1], Jo[loaded] @ tr.v[k + 1])
            slip = max(slip, float(np.max(speed)))
    return {"final_height_err": float(tr.q[-1, 2] - sc.info["z_stand"]),
            "final_pitch_deg": math.degrees(_yaw_pitch(tr.q[-1, 3:7])[1]),
            "max_loaded_foot_slip": slip, "finite": float(np.isfinite(tr.q).all())}


def _rest(sc: Scene, tr: Any) -> dict[str, float]:
    """The cube set on the plane at rest: its final sink and largest penetration [m] (a soft model's
    static depth under ``sc.load`` is its design depth; a rigid model's is 0)."""
    phi = np.array([np.min(sc.build().eval_phi(q)) for q in tr.q])
    return {"final_sink": float(-phi[-1]), "max_sink": float(-np.min(phi)),
            "final_speed": float(np.linalg.norm(tr.v[-1]))}


def _grasp(sc: Scene, tr: Any) -> dict[str, float]:
    """A box held by ``2 mu F > m g`` must not slip: its vertical drift [m] and largest speed."""
    return {"box_slip": float(abs(tr.q[-1, 1] - tr.q[0, 1])), "max_box_speed": float(np.max(np.abs(tr.v[:, 1]))),
            "tilt_deg": math.degrees(float(abs(tr.q[-1, 2])))}


def _push(sc: Scene, tr: Any) -> dict[str, float]:
    """The angle between the resultant friction impulse and the slip ``-v_{k+1}`` after one step
    (cone-vs-pyramid's measure: 0 for Coulomb's cone, up to ``pi/k`` for the ``k``-facet pyramid)."""
    f = np.sum(tr.impulses[0, :, 1:], axis=0)
    return {"bias_deg": _angle_deg(f, -tr.v[1, :2])}


PHYSICS: dict[str, Callable[[Scene, Any], dict[str, float]]] = {
    "slide_ball": _slide_ball, "slide_cube": _slide_cube, "roll_ball": _roll_ball,
    "incline_ball": lambda sc, tr: _incline(sc, tr, True), "incline_cube": lambda sc, tr: _incline(sc, tr, False),
    "stack": _stack, "rod": _rod, "solo12": _solo12, "grasp": _grasp, "push": _push, "rest": _rest,
    "slide_box3d": _slide_box3d, "solo12_3d": _solo12_3d,
}
