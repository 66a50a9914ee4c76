"""Floating bases (``qdot = G(q) v``) under NMDP, the linearized MDP and the stable PD, and the
polytope formulations' physical defaults (``stiffness = load / d^2``, ``relax = 0``) with their
declared physics tolerances."""
from __future__ import annotations

import math
import warnings

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.base import formulation
from contactmp.formulations.contact_scale import DESIGN_DEPTH
from contactmp.formulations.linearized_mdp import LinearizedMDP, add_linearized_mdp_step
from contactmp.formulations.nmdp import NMDP, chart, impact_depth, quaternion_blocks
from contactmp.models.rigid_bodies import GRAVITY
from contactmp.models.symbolic import ContactSystem
from contactmp.models.systems import ball_3d, box_3d, cube_3d
from contactmp.program import Program
from contactmp.transcriptions.time_stepping import TimeStepping

H = 0.01


def _quiet_simulate(ts: TimeStepping, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ts.simulate(*args, **kw)


def _min_phi(s: ContactSystem, qs: np.ndarray) -> np.ndarray:
    return np.array([float(np.min(s.eval_phi(q))) for q in qs])


# ------------------------------------------------------------------------------------ the chart
def test_chart_of_a_quaternion_box_and_of_minimal_coordinates():
    """box_3d: one quaternion block q[3:7], minimal False, no position for its torques; the retraction
    keeps |quat| = 1 and agrees with the explicit q + G(q) xi to second order in xi; cube_3d (Euler
    angles, qdot = v) is minimal with S_q = B^T."""
    b = box_3d(size=0.2)
    ch = chart(b)
    assert not ch.minimal and ch.quaternions == (slice(3, 7),) and quaternion_blocks(b) == (slice(3, 7),)
    assert ch.actuated_q.tolist() == [0, 1, 2, -1, -1, -1]  # forces on x, y, z; torques on omega
    qdot = ca.Function("qdot", [b.q, b.v], [b.qdot])
    q = np.array([0.1, -0.2, 0.3, *(np.array([1.0, 0.2, -0.1, 0.3]) / math.sqrt(1.14))])
    for eps in (1e-2, 1e-3):
        xi = eps * np.array([0.3, -0.1, 0.2, 1.0, -2.0, 0.5])
        got = ch.retract(q, xi, lambda a, v: qdot(a, v).full().ravel())
        assert abs(np.linalg.norm(got[3:]) - 1.0) <= 1e-15
        explicit = q + qdot(q, xi).full().ravel()
        assert np.abs(got - explicit).max() <= 2.0 * eps ** 2  # |quat + O(xi)| = 1 + O(xi^2)
    c = cube_3d(size=0.2)
    cc = chart(c)
    assert cc.minimal and cc.quaternions == () and np.array_equal(cc.S_q, cc.B.T)


# ------------------------------------------------------------------------------- the defaults
def test_default_gains_are_derived_from_the_load():
    """stiffness=None is load / d^2 with the contact's load at rest (a ball on a 30 deg slope:
    m g cos 30, to the 1e-8 of contact_scale's least-norm ridge); relax=None is 0; design_depth
    scales it; a given stiffness is kept; a system whose gravity pushes no contact has nothing to
    derive from: InputError naming stiffness."""
    s = ball_3d(slope=math.pi / 6, mu=0.3)
    load = GRAVITY * math.cos(math.pi / 6)
    for name in ("nmdp", "mdp"):
        p = formulation(name).problem(s)
        assert p.stiffness[0] == pytest.approx(load / DESIGN_DEPTH ** 2, rel=1e-7) and p.relax[0] == 0.0
        assert formulation(name, design_depth=2e-3).problem(s).stiffness[0] == pytest.approx(load / 4e-6, rel=1e-7)
        assert formulation(name, stiffness=123.0).problem(s).stiffness[0] == 123.0
        with pytest.raises(InputError) as e:
            formulation(name).problem(ball_3d(g=0.0))
        assert e.value.field == "stiffness"
        with pytest.raises(InputError) as e:
            formulation(name, design_depth=-1.0).problem(s)
        assert e.value.field == "design_depth"


def test_declared_tolerances_follow_the_design_depth():
    """impact_depth solves x^3 / (3 d^2) - x = v^2 / (2 a): sqrt(3) d released touching; the
    declared penetration is that depth at 1 m/s plus a h^2 (NMDP) or h * 1 m/s (MDP); gap = d (NMDP)
    or d + h * 1 m/s (MDP); gap_force = relax."""
    d, a = 1e-3, GRAVITY
    assert impact_depth(d, a, 0.0) == pytest.approx(math.sqrt(3.0) * d, rel=1e-12)
    x = impact_depth(d, a, 1.0)
    assert x ** 3 / (3 * d * d) - x == pytest.approx(1.0 / (2 * a), rel=1e-12)
    s = box_3d(size=0.2)
    tn = formulation("nmdp").physics_tolerances(s, H)
    tm = formulation("mdp", relax=0.5).physics_tolerances(s, H)
    assert tn.penetration == pytest.approx(x + a * H * H, rel=1e-12) and tn.gap == d and tn.gap_force == 0.0
    assert tm.penetration == pytest.approx(x + H * 1.0, rel=1e-12) and tm.gap_force == 0.5
    assert tm.gap == pytest.approx(d + H * 1.0, rel=1e-12)


def test_sphere_on_an_incline_with_defaults_rolls_on_the_plane():
    """The issue's sphere (30 deg, mu = 0.3; it rolls: tan 30 < 7/2 mu) under nmdp and mdp with no
    options: it stays within the declared penetration (it fell 0.4 m through the plane with the old
    zero defaults) and its center accelerates at 5/7 g sin 30 (rolling, any friction law) to 2 %."""
    s = ball_3d(slope=math.pi / 6, mu=0.3)
    for name in ("nmdp", "mdp"):
        ts = TimeStepping(s, H, name)
        tr = _quiet_simulate(ts, s.q_nominal, np.zeros(6), n_steps=30)
        assert tr.status_counts == {"solved": 30}, name
        phi = _min_phi(s, tr.q)
        assert -phi.min() <= ts.tolerances.penetration and -phi.min() >= 0.5 * DESIGN_DEPTH
        acc = (tr.v[-1, 0] - tr.v[10, 0]) / (tr.t[-1] - tr.t[10])
        assert acc == pytest.approx(5 / 7 * GRAVITY * 0.5, rel=0.02), name


# ------------------------------------------------------------------------- the quaternion box
@pytest.mark.parametrize("name", ["nmdp", "mdp"])
def test_quaternion_box_rests_and_lands_within_the_declared_penetration(name: str):
    """box_3d with defaults: set on the plane it sinks to rest within the declared penetration
    (sqrt(3) d continuous, measured 1.17 / 2.00 mm) and the four bottom corners carry its weight
    m g to 1e-6; dropped 5 cm (landing at 0.99 m/s) it stays within the declared penetration."""
    s = box_3d(size=0.2, mu=0.5)
    ts = TimeStepping(s, H, name)
    tol = ts.tolerances.penetration
    tr = _quiet_simulate(ts, s.q_nominal, np.zeros(6), n_steps=30)
    assert tr.status_counts == {"solved": 30}
    phi = _min_phi(s, tr.q)
    assert DESIGN_DEPTH <= -phi.min() <= tol
    assert float(np.sum(tr.forces[-1, :, 0])) == pytest.approx(GRAVITY, rel=1e-6)
    assert np.linalg.norm(tr.v[-1]) <= 1e-6 and abs(np.linalg.norm(tr.q[-1, 3:]) - 1.0) <= 1e-14
    q0 = np.array(s.q_nominal, dtype=float)
    q0[2] += 0.05
    tr = _quiet_simulate(ts, q0, np.zeros(6), n_steps=25)
    depth = -_min_phi(s, tr.q).min()
    assert 1.5 * DESIGN_DEPTH <= depth <= tol


def test_quaternion_box_slides_as_the_euler_angle_cube():
    """Sliding at 1 m/s (15 deg) under NMDP with defaults, the quaternion box (chart q(xi) = R(q_k +
    G(q_k) xi)) and the Euler-angle cube (qdot = v) are the same backward-Euler step in two charts of
    the orientation, which stays at identity to rounding: their centers agree to 1e-8 m (PGM's
    tolerance on G is 1e-8 N; measured 2e-10 m) and both stop after the discrete Coulomb distance
    of the rigid step to 15 % (the soft polytope pyramid: measured 13.6 % for both)."""
    b, c = box_3d(size=0.2, mu=0.5), cube_3d(size=0.2, mu=0.5)
    v0 = np.array([math.cos(math.radians(15)), math.sin(math.radians(15)), 0, 0, 0, 0])
    trs = [_quiet_simulate(TimeStepping(s, H, "nmdp"), s.q_nominal, v0, n_steps=30) for s in (b, c)]
    assert all(t.status_counts == {"solved": 30} for t in trs)
    assert np.abs(trs[0].q[:, :3] - trs[1].q[:, :3]).max() <= 1e-8
    assert np.abs(trs[0].v[:, :3] - trs[1].v[:, :3]).max() <= 1e-6
    from contactmp.case_studies._compare_scenes import cube_stop_distance

    dist = float(np.linalg.norm(trs[0].q[-1, :2]))
    assert dist == pytest.approx(cube_stop_distance(H), rel=0.15)


def test_tumbling_box_chart_step_pgm_and_ipopt_agree_and_never_gain_energy():
    """A spinning box (3 x 2 x 1 dm, omega = (3, -2, 1) rad/s) dropped 25 cm under NMDP: PGM and
    IPOPT solve the same chart step (n_v = 6 unknowns xi) to the same trajectory (to 1e-5: their
    per-step answers differ by their tolerances, which 60 steps of corner contact amplify to a
    measured 2.1e-6), the quaternion stays unit to rounding, and the energy never grows (a passive body
    under maximal dissipation: at most rounding, 1e-9 J)."""
    s = box_3d(size=(0.3, 0.2, 0.1), mu=0.5)
    q0, v0 = np.array([0, 0, 0.3, 1, 0, 0, 0.0]), np.array([0.5, 0, 0, 3.0, -2.0, 1.0])
    trs = [_quiet_simulate(TimeStepping(s, 0.005, "nmdp", method=m), q0, v0, n_steps=100) for m in ("pgm", "ipopt")]
    for tr in trs:
        assert set(tr.status_counts) <= {"solved", "unphysical"} and tr.n_steps == 100
        assert np.abs(np.linalg.norm(tr.q[:, 3:], axis=1) - 1.0).max() <= 1e-15
        E = [0.5 * v @ s.eval_M(q) @ v + GRAVITY * q[2] for q, v in zip(tr.q, tr.v)]
        assert np.max(np.diff(E)) <= 1e-9 and E[-1] < 0.3 * E[0]
    assert np.abs(trs[0].q - trs[1].q).max() <= 1e-5
    # it lands a corner at over 2 m/s (a 25 cm fall, spinning), faster than the 1 m/s the default
    # declares: 4 steps are flagged (6.6 mm > 5.8 mm); declaring impact_speed=3 covers it (impact_depth at 3 m/s: 11.4 mm)
    assert trs[0].violations["penetration"][0] == 4
    ts = TimeStepping(s, 0.005, "nmdp", impact_speed=3.0)
    assert ts.tolerances.penetration == pytest.approx(impact_depth(DESIGN_DEPTH, GRAVITY, 3.0) + GRAVITY * 0.005 ** 2)
    assert _quiet_simulate(ts, q0, v0, n_steps=100).status_counts == {"solved": 100}
    with pytest.raises(InputError) as e:
        TimeStepping(s, 0.005, "mdp", impact_speed=-1.0)
    assert e.value.field == "impact_speed"


# -------------------------------------------------------------------------------- the 3D Solo12
@pytest.fixture(scope="module")
def solo3d():
    from contactmp.models.urdf import solo12, solo12_standing

    return solo12(planar=False), solo12_standing(planar=False)


def test_stable_pd_targets_the_joint_entries_of_q(solo3d):
    """The stable PD's explicit torque on a free-flyer: the position error is taken on q[7:19] (the
    joint angles, whose rates are v[6:18]), so Kp (q_d - q_a) - (h Kp + Kd) v_a exactly."""
    s, q = solo3d
    kp, kd = 15.0, 0.3
    ts = TimeStepping(s, H, "pyramid", pd_gains=(kp, kd))
    assert ts._pd_q.tolist() == list(range(7, 19))
    rng = np.random.default_rng(0)
    v = rng.normal(size=s.n_v)
    dq = rng.normal(size=12) * 0.01
    tau = ts._pd_torque(q, v, 0.0, lambda t: (q[7:] + dq, np.zeros(12)))
    np.testing.assert_allclose(tau, kp * dq - (H * kp + kd) * v[6:], rtol=0, atol=1e-14)


@pytest.mark.parametrize("name", ["nmdp", "mdp", "pyramid"])
def test_solo12_3d_stands_under_the_stable_pd(solo3d, name: str):
    """The 3D Solo12 (quaternion base) standing under the stable PD (Kp 15, Kd 0.3) for 0.4 s: its
    torso sags by the joints' compliance (3.94 mm with rigid feet) plus at most two design depths of
    a soft foot, keeps a unit quaternion and level, and the feet carry its weight (sum of normal
    forces m g to 2 %, the PD still settling)."""
    s, q0 = solo3d
    targets = (lambda t: (q0[7:], np.zeros(12)))
    ts = TimeStepping(s, H, name, pd_gains=(15.0, 0.3))
    tr = _quiet_simulate(ts, q0, np.zeros(s.n_v), n_steps=40, targets=targets)
    assert tr.status_counts == {"solved": 40}
    sag = q0[2] - tr.q[-1, 2]
    assert 3.0e-3 <= sag <= 3.94e-3 + 2 * DESIGN_DEPTH
    assert abs(np.linalg.norm(tr.q[-1, 3:7]) - 1.0) <= 1e-12 and np.abs(tr.q[-1, 4:7]).max() <= 1e-5
    mass = float(s.eval_M(q0)[0, 0])
    assert float(np.sum(tr.forces[-1, :, 0])) == pytest.approx(mass * GRAVITY, rel=0.02)


# ------------------------------------------------------------------------------------ bad input
def test_floating_base_bad_input_names_the_field():
    """A position gain on a quaternion body's torque (kp, pd_gains), the polish and the KKT blocks
    (minimal coordinates only: polish, system), a qdot = G(q) v that is not a quaternion (system)."""
    b = box_3d(size=0.2)

    def field(fn):
        with pytest.raises(InputError) as e:
            fn()
        return e.value.field

    assert field(lambda: NMDP(b, kp=1.0)) == "kp"
    assert field(lambda: LinearizedMDP(b, kp=[0, 0, 0, 1.0, 0, 0])) == "kp"
    assert field(lambda: TimeStepping(b, H, "cone", pd_gains=(1.0, 0.1))).startswith("pd_gains")
    assert field(lambda: TimeStepping(b, H, "nmdp", polish=True)) == "polish"
    assert field(lambda: add_linearized_mdp_step(Program(), b, np.zeros(7), np.zeros(6), np.zeros(6), H)) == "system"
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    for name in ("nmdp", "mdp"):  # contact-implicit trajectory optimization: the KKT blocks are minimal-coordinate
        assert field(lambda: ContactImplicitTO(b, 3, H, formulation=name)) == "system"
    q, v, u = ca.SX.sym("q", 2), ca.SX.sym("v", 1), ca.SX.sym("u", 1)
    odd = ContactSystem(q=q, v=v, u=u, M=ca.SX.eye(1), h=ca.SX(9.81), B=ca.SX(1.0), phi=q[1],
                        Jn=ca.SX(1.0), Jt=ca.SX(0.0), Jo=ca.SX(0.0), mu=0.5, planar=True,
                        qdot=ca.vertcat(ca.cos(q[1]) * v[0], v[0]), q_nominal=[0.0, 0.0])
    assert field(lambda: NMDP(odd, stiffness=1.0)) == "system"
