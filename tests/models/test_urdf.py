"""URDF robots through adam-robotics (models/urdf.py): closed forms, Lagrangian identities, energy,
finite differences, and time stepping of Solo12 on the ground."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.models.rigid_bodies import GRAVITY as G
from contactmp.models.symbolic import ContactSystem
from contactmp.models.systems import quaternion_to_rotation
from contactmp.models.urdf import (
    SOLO12_FEET,
    SOLO12_SAGITTAL_JOINTS,
    example_robot_urdf,
    read_urdf,
    solo12,
    solo12_standing,
    static_torques,
    urdf_system,
)
from contactmp.result import Status
from contactmp.transcriptions.time_stepping import TimeStepping

# double_pendulum_simple.urdf: joint axes along x, links along z; link i has mass m_i, center of
# mass a_i from its joint, inertia I_i (xx) about it; joint 2 sits l1 above joint 1 on link 1
M1, A1, I1, L1 = 0.2, 0.05, 0.000177083, 0.1
M2, A2, I2, TIP = 0.3, 0.1, 0.001015625, 0.2
GROUND_DP = -0.25


@pytest.fixture(scope="module")
def pendulum() -> ContactSystem:
    return urdf_system("double_pendulum_simple", {"tip": ("link2", (0.0, 0.0, TIP))},
                       floating_base=False, ground_height=GROUND_DP, mu=0.3)


@pytest.fixture(scope="module")
def solo() -> ContactSystem:
    return solo12()


@pytest.fixture(scope="module")
def solo_planar() -> ContactSystem:
    return solo12(planar=True)


def _fd_rate(fun, sys_: ContactSystem, q: np.ndarray, v: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central difference of ``fun`` along the motion ``q(t)`` with ``qdot = qdot(q, v)``."""
    qd = sys_.eval_qdot(q, v)
    return (fun(q + eps * qd) - fun(q - eps * qd)) / (2 * eps)


def _coriolis_identity_gap(sys_: ContactSystem, q: np.ndarray, v: np.ndarray) -> float:
    """For ``qdot = v``: ``h(q, v) - h(q, 0) - (d(M v)/dq v - 1/2 d(v^T M v)/dq)`` (Lagrange)."""
    qs, vs = sys_.q, sys_.v
    c = ca.jacobian(sys_.M @ vs, qs) @ vs - 0.5 * ca.gradient(ca.dot(vs, sys_.M @ vs), qs)
    c_num = np.array(ca.Function("c", [qs, vs], [c])(q, v)).ravel()
    gap = sys_.eval_h(q, v) - sys_.eval_h(q, np.zeros(sys_.n_v)) - c_num
    return float(np.max(np.abs(gap)) / max(1.0, np.max(np.abs(c_num))))


def _rk4_energy_drift(sys_: ContactSystem, q: np.ndarray, v: np.ndarray, dt: float,
                      n: int) -> float:
    """Relative drift of ``E = T + V`` along an RK4 free flight (no input, no contact)."""
    def f(x):
        qq, vv = x[:sys_.n_q], x[sys_.n_q:]
        return np.concatenate([sys_.eval_qdot(qq, vv), sys_.eval_vdot(qq, vv)])
    x = np.concatenate([q, v])
    e0 = sys_.eval_energy(q, v)
    scale = abs(e0) + 0.5 * float(v @ sys_.eval_M(q) @ v)
    drift = 0.0
    for _ in range(n):
        k1 = f(x)
        k2 = f(x + 0.5 * dt * k1)
        k3 = f(x + 0.5 * dt * k2)
        k4 = f(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        drift = max(drift, abs(sys_.eval_energy(x[:sys_.n_q], x[sys_.n_q:]) - e0) / scale)
    return drift


def _urdf_total_mass(name: str) -> float:
    root = ET.parse(example_robot_urdf(name)).getroot()
    return sum(float(m.get("value")) for m in root.iter("mass"))


# ------------------------------------------------------------------------------ URDF lookup
def test_example_robot_names_resolve() -> None:
    p = example_robot_urdf("solo12")
    assert p.name == "solo12.urdf" and p.is_file()
    assert example_robot_urdf("solo_description/solo12") == p
    with pytest.raises(InputError, match="ambiguous"):
        example_robot_urdf("anymal")  # two anymal.urdf (b and c)
    assert example_robot_urdf("anymal_b_simple_description/anymal").is_file()
    with pytest.raises(InputError, match="no URDF named"):
        example_robot_urdf("no_such_robot")
    info = read_urdf(p)  # a path works too, and an XML string
    assert read_urdf(info.text).movable_joints == info.movable_joints
    assert len(info.movable_joints) == 12


# --------------------------------------------------------------------- fixed base: pendulum
def _pendulum_closed_form(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``M``, ``dV/dq`` and the tip height of the double pendulum (upright at q = 0; a rotation
    by q about +x takes e_z to (0, -sin q, cos q))."""
    q1, q2 = q
    c2 = np.cos(q2)
    m11 = I1 + M1 * A1**2 + I2 + M2 * (L1**2 + A2**2 + 2 * L1 * A2 * c2)
    m12 = I2 + M2 * (A2**2 + L1 * A2 * c2)
    m22 = I2 + M2 * A2**2
    dV = -G * np.array([M1 * A1 * np.sin(q1) + M2 * (L1 * np.sin(q1) + A2 * np.sin(q1 + q2)),
                        M2 * A2 * np.sin(q1 + q2)])
    tip_z = L1 * np.cos(q1) + TIP * np.cos(q1 + q2)
    return np.array([[m11, m12], [m12, m22]]), dV, tip_z


def test_pendulum_matches_closed_form(pendulum: ContactSystem) -> None:
    assert (pendulum.n_q, pendulum.n_v, pendulum.n_u, pendulum.n_c) == (2, 2, 2, 1)
    assert pendulum.q_names == ("joint1", "joint2") and pendulum.u_names == ("joint1", "joint2")
    rng = np.random.default_rng(1)
    for q in rng.uniform(-np.pi, np.pi, (5, 2)):
        M_cf, dV_cf, tip_z = _pendulum_closed_form(q)
        M = pendulum.eval_M(q)
        np.testing.assert_allclose(M, M_cf, rtol=0, atol=1e-12)
        assert np.all(np.linalg.eigvalsh(M) > 0)
        np.testing.assert_allclose(pendulum.eval_h(q, np.zeros(2)), dV_cf, rtol=0, atol=1e-12)
        np.testing.assert_allclose(pendulum.eval_phi(q), [tip_z - GROUND_DP], rtol=0, atol=1e-12)
        np.testing.assert_allclose(pendulum.eval_B(q), np.eye(2))


def test_pendulum_coriolis_energy_and_contact_jacobians(pendulum: ContactSystem) -> None:
    rng = np.random.default_rng(2)
    for _ in range(3):
        q, v = rng.uniform(-2, 2, 2), rng.uniform(-3, 3, 2)
        # RNEA's velocity terms are the Lagrangian's (Christoffel symbols of the CRBA mass matrix)
        assert _coriolis_identity_gap(pendulum, q, v) <= 1e-12
        Jn, Jt, Jo = pendulum.eval_J(q)
        np.testing.assert_allclose(Jn @ v, _fd_rate(pendulum.eval_phi, pendulum, q, v),
                                   rtol=1e-7, atol=1e-9)
        # the tip moves in the y-z plane (joint axes along x): no x velocity, Jo = d(tip_y)/dt
        np.testing.assert_allclose(Jt, 0.0, atol=1e-14)
        tip_y = lambda qq: np.array([-L1 * np.sin(qq[0]) - TIP * np.sin(qq[0] + qq[1])])
        np.testing.assert_allclose(Jo @ v, _fd_rate(tip_y, pendulum, q, v), rtol=1e-7, atol=1e-9)
    # free swing: E = 1/2 v^T M v + V is conserved (RK4, dt = 1 ms, 0.3 s)
    assert _rk4_energy_drift(pendulum, np.array([0.4, -0.3]), np.array([1.0, -2.0]), 1e-3,
                             300) <= 1e-8


# ------------------------------------------------------------------------ floating base: Solo12
def _random_solo_state(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    quat = rng.normal(size=4)
    q = np.concatenate([rng.uniform(-0.2, 0.2, 3) + [0, 0, 0.3], quat / np.linalg.norm(quat),
                        solo12_standing()[7:] + rng.uniform(-0.4, 0.4, 12)])
    return q, rng.uniform(-1, 1, 18)


def test_solo12_standing_feet_and_mass(solo: ContactSystem) -> None:
    assert (solo.n_q, solo.n_v, solo.n_u, solo.n_c) == (19, 18, 12, 4)
    assert solo.contact_names == ("FL", "FR", "HL", "HR")
    qs = solo12_standing()
    np.testing.assert_allclose(solo.eval_phi(qs), 0.0, atol=1e-12)
    # raise the base by 5 cm and bend the front-left knee: closed-form foot heights
    q = qs.copy()
    q[2] += 0.05
    q[9] = -1.2  # FL_KFE: the FL shin is at hfe + kfe = 0.8 - 1.2 from the vertical
    z_fl = q[2] - 0.16 * np.cos(0.8) - 0.16 * np.cos(0.8 - 1.2)
    np.testing.assert_allclose(solo.eval_phi(q), [z_fl, 0.05, 0.05, 0.05], atol=1e-12)
    m = _urdf_total_mass("solo12")
    M = solo.eval_M(qs)
    np.testing.assert_allclose(M[:3, :3], m * np.eye(3), rtol=1e-12)
    assert np.all(np.linalg.eigvalsh(M) > 0)
    # at rest the base's vertical row of h is the weight, and nothing pushes sideways
    h0 = solo.eval_h(qs, np.zeros(18))
    np.testing.assert_allclose(h0[:3], [0.0, 0.0, m * G], rtol=1e-12, atol=1e-12)


def test_solo12_gravity_energy_and_jacobians(solo: ContactSystem) -> None:
    rng = np.random.default_rng(3)
    Gq = ca.Function("G", [solo.q], [ca.jacobian(solo.qdot, solo.v)])
    dV = ca.Function("dV", [solo.q], [ca.gradient(solo.V, solo.q)])
    kd = _adam_solo()
    for _ in range(3):
        q, v = _random_solo_state(rng)
        # h(q, 0) is the generalized gravity of V = m g z_com: (d qdot/d v)^T dV/dq
        np.testing.assert_allclose(solo.eval_h(q, np.zeros(18)),
                                   np.array(Gq(q)).T @ np.array(dV(q)).ravel(), atol=1e-10)
        Jn, Jt, Jo = solo.eval_J(q)
        np.testing.assert_allclose(Jn @ v, _fd_rate(solo.eval_phi, solo, q, v), rtol=1e-6,
                                   atol=1e-8)
        # rows against adam's own mixed frame Jacobians of the feet (independent of our qdot)
        H = _pose(q)
        for j, foot in enumerate(SOLO12_FEET):
            J = np.array(kd.jacobian_fun(foot)(H, q[7:]))
            np.testing.assert_allclose(np.vstack([Jt[j], Jo[j], Jn[j]]), J[:3], atol=1e-12)
    # free flight (no contact, no torque): energy conserved by RK4, dt = 0.2 ms, 20 ms
    q, v = _random_solo_state(rng)
    assert _rk4_energy_drift(solo, q, v, 2e-4, 100) <= 1e-8


def _adam_solo():
    """adam's own model of Solo12 (mixed representation, its default), built independently."""
    from adam.casadi import KinDynComputations
    return KinDynComputations(str(example_robot_urdf("solo12")),
                              list(read_urdf("solo12").movable_joints),
                              gravity=np.array([0, 0, -G, 0, 0, 0]))


def _pose(q: np.ndarray) -> np.ndarray:
    H = np.eye(4)
    H[:3, :3] = np.array(ca.DM(quaternion_to_rotation(ca.DM(q[3:7]))))
    H[:3, 3] = q[:3]
    return H


def test_solo12_planar_is_the_projected_3d_model(solo: ContactSystem,
                                                 solo_planar: ContactSystem) -> None:
    sp = solo_planar
    assert (sp.n_q, sp.n_v, sp.n_u, sp.n_c) == (11, 11, 8, 4) and sp.planar
    assert sp.q_names[:3] == ("x", "z", "pitch") and sp.q_names[3:] == SOLO12_SAGITTAL_JOINTS
    np.testing.assert_allclose(sp.eval_phi(sp.q_nominal), 0.0, atol=1e-12)
    # embedding q_3d(q_p) (abduction joints locked at 0) and E: v_3d = E v_p
    i3 = [0, 2, 4] + [6 + solo.q_names[7:].index(j) for j in SOLO12_SAGITTAL_JOINTS]
    E = np.zeros((18, 11))
    E[i3, np.arange(11)] = 1.0
    rng = np.random.default_rng(4)
    for _ in range(3):
        qp = sp.q_nominal + np.concatenate([rng.uniform(-0.2, 0.2, 3), rng.uniform(-0.5, 0.5, 8)])
        vp = rng.uniform(-1, 1, 11)
        q3 = np.zeros(19)
        q3[[0, 2]] = qp[:2]
        q3[3:7] = [np.cos(qp[2] / 2), 0.0, np.sin(qp[2] / 2), 0.0]
        q3[7:][[solo.q_names[7:].index(j) for j in SOLO12_SAGITTAL_JOINTS]] = qp[3:]
        Mp = sp.eval_M(qp)
        assert np.all(np.linalg.eigvalsh(Mp) > 0)
        np.testing.assert_allclose(Mp, E.T @ solo.eval_M(q3) @ E, atol=1e-12)
        np.testing.assert_allclose(sp.eval_h(qp, vp), E.T @ solo.eval_h(q3, E @ vp), atol=1e-11)
        np.testing.assert_allclose(sp.eval_phi(qp), solo.eval_phi(q3), atol=1e-12)
        Jn3, Jt3, Jo3 = solo.eval_J(q3)
        Jn, Jt, Jo = sp.eval_J(qp)
        np.testing.assert_allclose(Jn, Jn3 @ E, atol=1e-12)
        np.testing.assert_allclose(Jt, Jt3 @ E, atol=1e-12)
        np.testing.assert_allclose(Jo3 @ E, 0.0, atol=1e-12)  # in-plane motion
        assert not np.any(Jo)
        # with qdot = v the planar model is a Lagrangian system: Coriolis identity and gravity
        assert _coriolis_identity_gap(sp, qp, vp) <= 1e-11
        dV = ca.Function("dV", [sp.q], [ca.gradient(sp.V, sp.q)])
        np.testing.assert_allclose(sp.eval_h(qp, np.zeros(11)), np.array(dV(qp)).ravel(),
                                   atol=1e-11)


def test_bad_inputs_name_the_field() -> None:
    with pytest.raises(InputError, match="contact_points"):
        urdf_system("solo12", ["NO_SUCH_LINK"])
    with pytest.raises(InputError, match="joints"):
        urdf_system("solo12", ["FL_FOOT"], joints=["FL_KNEE"])
    with pytest.raises(InputError, match="actuated"):
        urdf_system("solo12", ["FL_FOOT"], joints=["FL_HFE"], actuated=["FL_KFE"])
    with pytest.raises(InputError, match="base_pose"):
        urdf_system("solo12", ["FL_FOOT"], base_pose=np.eye(4))
    with pytest.raises(InputError, match="contact_points"):
        urdf_system("solo12", [("FL_FOOT", (0.0, 0.0))])
    # the abduction joints move the feet out of the sagittal plane
    with pytest.raises(InputError, match="^joints: planar"):
        urdf_system("solo12", list(SOLO12_FEET), planar=True,
                    q_nominal=solo12_standing(planar=True)[:3].tolist() + [0.0] * 12)
    with pytest.raises(InputError, match="urdf"):
        urdf_system("<robot name='r'><link name='a'/></robot>", ["a"])


# ----------------------------------------------------------------------- time stepping Solo12
H_STEP = 0.01


@pytest.mark.parametrize("form", ["pyramid", "cone"])
def test_rigid_solo12_dropped_on_the_ground_rests(form: str) -> None:
    """Solo12 with every joint locked at 0 (straight legs, feet 0.32 m below the base): a floating
    base with quaternion and four feet, dropped level from 2 cm."""
    rigid = urdf_system("solo12", list(SOLO12_FEET), joints=[], mu=0.8,
                        q_nominal=[0.0, 0.0, 0.32, 1.0, 0.0, 0.0, 0.0])
    m = rigid.eval_M(rigid.q_nominal)[0, 0]
    np.testing.assert_allclose(m, _urdf_total_mass("solo12"), rtol=1e-12)
    ts = TimeStepping(rigid, H_STEP, form)
    tr = ts.simulate([0.0, 0.0, 0.34, 1.0, 0.0, 0.0, 0.0], np.zeros(6), None, 20)
    assert tr.n_failed == 0
    phis = np.array([rigid.eval_phi(q) for q in tr.q])
    assert phis.min() >= -1e-6
    # 2 cm of free fall take sqrt(2 * 0.02 / g) = 0.064 s: resting from step 10 on
    np.testing.assert_allclose(phis[10:], 0.0, atol=1e-6)
    np.testing.assert_allclose(tr.v[10:], 0.0, atol=1e-9)
    np.testing.assert_allclose(tr.p_n[10:].sum(axis=1), m * G * H_STEP, rtol=1e-6)


def _standing_torques(sys_: ContactSystem) -> np.ndarray:
    """Static joint torques at ``q_nominal``: ``h(q, 0) = B u + J^T lambda`` (least squares,
    :func:`~contactmp.models.urdf.static_torques`), which hold the pose exactly."""
    q = sys_.q_nominal
    u, lam = static_torques(sys_, q)
    Jn, Jt, Jo = sys_.eval_J(q)
    h0 = sys_.eval_h(q, np.zeros(sys_.n_v))
    assert np.max(np.abs(sys_.eval_B(q) @ u + Jn.T @ lam[:, 0] + Jt.T @ lam[:, 1] + Jo.T @ lam[:, 2] - h0)) <= 1e-10
    return u


@pytest.mark.parametrize("planar,form", [(True, "pyramid"), (True, "cone"), (False, "cone")])
def test_solo12_stands_still_under_static_torques(planar: bool, form: str, solo: ContactSystem,
                                                  solo_planar: ContactSystem) -> None:
    sys_ = solo_planar if planar else solo
    m = sys_.eval_M(sys_.q_nominal)[0, 0]
    u = _standing_torques(sys_)
    ts = TimeStepping(sys_, H_STEP, form)
    tr = ts.simulate(sys_.q_nominal, np.zeros(sys_.n_v), u, 20)
    assert tr.n_failed == 0 and all(s is Status.SOLVED for s in tr.status)
    np.testing.assert_allclose(tr.q, np.tile(sys_.q_nominal, (21, 1)), atol=1e-9)
    assert min(sys_.eval_phi(q).min() for q in tr.q) >= -1e-9
    np.testing.assert_allclose(tr.p_n.sum(axis=1), m * G * H_STEP, rtol=1e-6)
