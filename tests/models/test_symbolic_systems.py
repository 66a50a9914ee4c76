"""Physics checks of the symbolic contact systems (models/symbolic.py, models/systems.py)."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.models.rigid_bodies import GRAVITY
from contactmp.models.symbolic import ContactSystem
from contactmp.models.systems import (
    box_2d,
    box_3d,
    cart_pole_walls,
    hopper_2d,
    point_mass_2d,
    quaternion_to_rotation,
)

CONSTRUCTORS = {
    "point_mass_2d": point_mass_2d,
    "box_2d": box_2d,
    "hopper_2d": hopper_2d,
    "cart_pole_walls": cart_pole_walls,
    "box_3d": box_3d,
}
_CACHE: dict[str, ContactSystem] = {}


def system(name: str) -> ContactSystem:
    if name not in _CACHE:
        _CACHE[name] = CONSTRUCTORS[name]()
    return _CACHE[name]


def random_q(sys: ContactSystem, rng: np.random.Generator) -> np.ndarray:
    """A random valid configuration near q_nominal (unit quaternion for box_3d, l > 0 for the
    hopper)."""
    q = sys.q_nominal + rng.uniform(-0.5, 0.5, sys.n_q)
    if sys.name == "box_3d":
        q[3:] = rng.normal(size=4)
        q[3:] /= np.linalg.norm(q[3:])
    return q


def rk4(sys: ContactSystem, q: np.ndarray, v: np.ndarray, u: np.ndarray, dt: float, steps: int):
    """Free flight (no contact forces) with constant input; also integrates the input work
    ``W = int v^T B u dt``. Returns the trajectory of (q, v, W)."""

    def f(x):
        qq, vv = x[: sys.n_q], x[sys.n_q: sys.n_q + sys.n_v]
        return np.concatenate([sys.eval_qdot(qq, vv), sys.eval_vdot(qq, vv, u),
                               [vv @ sys.eval_B(qq) @ u]])

    x = np.concatenate([q, v, [0.0]])
    out = [x]
    for _ in range(steps):
        k1 = f(x)
        k2 = f(x + 0.5 * dt * k1)
        k3 = f(x + 0.5 * dt * k2)
        k4 = f(x + dt * k3)
        x = x + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        out.append(x)
    return [(y[: sys.n_q], y[sys.n_q: sys.n_q + sys.n_v], y[-1]) for y in out]


# ------------------------------------------------------------------------------ mass matrix
@pytest.mark.parametrize("name", CONSTRUCTORS)
def test_mass_matrix_spd_at_random_q(name):
    sys = system(name)
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = random_q(sys, rng)
        M = sys.eval_M(q)
        assert np.allclose(M, M.T, atol=1e-12)
        assert np.linalg.eigvalsh(M).min() > 1e-6
        sys.check_at(q)  # also checks Jn = d phi/dq (d qdot/d v)


# ---------------------------------------------------------------------------------- gravity
def test_point_mass_closed_form():
    sys = point_mass_2d(m=2.0, mu=0.3)
    q, v = np.array([0.3, 1.2]), np.array([-1.0, 0.4])
    assert np.allclose(sys.eval_M(q), 2.0 * np.eye(2))
    assert np.allclose(sys.eval_h(q, v), [0.0, 2.0 * GRAVITY])
    assert np.allclose(sys.eval_phi(q), [1.2])
    Jn, Jt, Jo = sys.eval_J(q)
    assert np.allclose(Jn, [[0, 1]]) and np.allclose(Jt, [[1, 0]]) and np.allclose(Jo, 0)
    # a normal force lambda_n = m g balances gravity: vdot = 0
    assert np.allclose(sys.eval_vdot(q, np.zeros(2), lambda_n=[2.0 * GRAVITY]), 0.0, atol=1e-12)


@pytest.mark.parametrize("name", CONSTRUCTORS)
def test_h_at_rest_is_gravity(name):
    """``h(q, 0) . v = dV/dt`` along ``qdot(q, v)`` for random v (gravity is the gradient of V)."""
    sys = system(name)
    rng = np.random.default_rng(2)
    eps = 1e-6
    for _ in range(5):
        q = random_q(sys, rng)
        v = rng.normal(size=sys.n_v)
        qd = sys.eval_qdot(q, v)
        dV = (sys.eval_V(q + eps * qd) - sys.eval_V(q - eps * qd)) / (2 * eps)
        assert sys.eval_h(q, np.zeros(sys.n_v)) @ v == pytest.approx(dV, rel=1e-6, abs=1e-7)


def test_box_3d_gravity_and_gyroscopic_terms():
    sys = box_3d(m=3.0, size=(0.4, 0.6, 0.8))
    q = sys.q_nominal
    om = np.array([0.3, -1.0, 2.0])
    Ib = 3.0 / 12 * np.array([0.36 + 0.64, 0.16 + 0.64, 0.16 + 0.36])
    h = sys.eval_h(q, np.concatenate([[1.0, 2.0, 3.0], om]))
    assert np.allclose(h, np.concatenate([[0, 0, 3.0 * GRAVITY], np.cross(om, Ib * om)]))


# ----------------------------------------------------------------------------------- energy
@pytest.mark.parametrize("name", CONSTRUCTORS)
def test_energy_balance_in_free_flight(name):
    """``E(t) - E(0) = int v^T B u dt`` along an RK4 free-flight trajectory (checks h's Coriolis
    terms against M), with and without input."""
    sys = system(name)
    rng = np.random.default_rng(3)
    q0 = random_q(sys, rng)
    v0 = rng.normal(size=sys.n_v)
    for u in (np.zeros(sys.n_u), rng.normal(size=sys.n_u)):
        traj = rk4(sys, q0, v0, u, dt=1e-3, steps=200)
        E0 = sys.eval_energy(q0, v0)
        drift = max(abs(sys.eval_energy(q, v) - W - E0) for q, v, W in traj)
        assert drift < 1e-6, drift
        if u.any():  # the input does work: the balance is not trivially satisfied
            assert abs(traj[-1][2]) > 1e-3


def test_box_3d_quaternion_norm_kept():
    sys = system("box_3d")
    rng = np.random.default_rng(4)
    q0 = random_q(sys, rng)
    traj = rk4(sys, q0, rng.normal(size=6), np.zeros(6), dt=1e-3, steps=200)
    assert abs(np.linalg.norm(traj[-1][0][3:]) - 1.0) < 1e-9


# --------------------------------------------------------------------------------- contacts
@pytest.mark.parametrize("name", CONSTRUCTORS)
def test_jacobians_match_finite_differences(name):
    """``Jn v = d phi/dt`` (finite differences of phi along qdot(q, v)); Jt, Jo rows are checked
    against closed-form point velocities in the per-system tests below."""
    sys = system(name)
    rng = np.random.default_rng(5)
    eps = 1e-6
    for _ in range(5):
        q = random_q(sys, rng)
        v = rng.normal(size=sys.n_v)
        qd = sys.eval_qdot(q, v)
        dphi = (sys.eval_phi(q + eps * qd) - sys.eval_phi(q - eps * qd)) / (2 * eps)
        Jn, Jt, Jo = sys.eval_J(q)
        assert np.allclose(Jn @ v, dphi, rtol=1e-6, atol=1e-7)
        if sys.planar:
            assert np.all(Jo == 0)


def test_box_2d_rest_and_corner_velocities():
    sys = box_2d(m=2.0, width=0.8, height=0.4)
    phi = sys.eval_phi(sys.q_nominal)
    assert np.allclose(phi, [0.0, 0.0, 0.4, 0.4])
    # rotation about the center by thetadot = 1: bottom-left corner r = (-0.4, -0.2) moves with
    # omega x r = (0.2, -0.4) in (x, z) -> Jn v = -0.4, Jt v = 0.2
    Jn, Jt, _ = sys.eval_J(sys.q_nominal)
    v = np.array([0.0, 0.0, 1.0])
    assert np.allclose([Jn[0] @ v, Jt[0] @ v], [-0.4, 0.2])
    # turned by +90 degrees onto its left face (center height width/2): the left corners touch
    q = np.array([0.0, 0.4, np.pi / 2])
    assert np.allclose(sys.eval_phi(q), [0.0, 0.8, 0.8, 0.0])


def test_box_3d_rest_and_corner_velocities():
    sys = box_3d(size=(0.4, 0.6, 0.8))
    phi = sys.eval_phi(sys.q_nominal)
    bottom = [j for j, nm in enumerate(sys.contact_names) if nm.endswith("-")]
    assert len(bottom) == 4
    assert np.allclose(phi[bottom], 0.0) and np.allclose(np.delete(phi, bottom), 0.8)
    # random pose: (Jn, Jt, Jo) v is the world velocity of each corner, v_lin + R (omega x r)
    rng = np.random.default_rng(6)
    q = random_q(sys, rng)
    v = rng.normal(size=6)
    R = np.array(ca.Function("R", [sys.q], [quaternion_to_rotation(sys.q[3:])])(q))
    assert np.allclose(R @ R.T, np.eye(3))
    Jn, Jt, Jo = sys.eval_J(q)
    for j, nm in enumerate(sys.contact_names):
        r = np.array([0.2, 0.3, 0.4]) * [1 if c == "+" else -1 for c in nm[-3:]]
        vel = v[:3] + R @ np.cross(v[3:], r)
        assert np.allclose([Jt[j] @ v, Jo[j] @ v, Jn[j] @ v], vel)
        assert sys.eval_phi(q)[j] == pytest.approx(q[2] + (R @ r)[2])


def test_cart_pole_wall_normals_push_tip_away():
    sys = cart_pole_walls(m_cart=1.0, m_pole=0.2, length=1.0, d=0.5)
    q = np.array([0.0, np.arcsin(0.5)])  # tip touches the right wall
    phi = sys.eval_phi(q)
    assert phi[0] == pytest.approx(0.0, abs=1e-12) and phi[1] == pytest.approx(1.0)
    # a normal force on the right wall contact accelerates the tip toward -x (away from the wall)
    vdot = sys.eval_vdot(q, np.zeros(2), lambda_n=[1.0, 0.0]) - sys.eval_vdot(q, np.zeros(2))
    Jn, _, _ = sys.eval_J(q)
    assert Jn[0] @ vdot > 0  # the gap opens
    assert np.allclose(Jn[0], -Jn[1])


def test_hopper_inputs_and_foot():
    sys = hopper_2d(l_nominal=0.9)
    q = sys.q_nominal
    assert sys.eval_phi(q) == pytest.approx([0.0])
    B = sys.eval_B(q)
    assert np.allclose(B, [[0, 0], [0, 0], [0, 0], [0, 1], [1, 0]])
    # foot on the ground, body at rest: pushing the leg (f_leg > 0) with the foot held by
    # lambda_n: the foot's normal acceleration -> vertical leg axis, Jn row is d z_foot/dq
    Jn, Jt, _ = sys.eval_J(q)
    assert np.allclose(Jn, [[0, 1, 0, 0, -1]]) and np.allclose(Jt, [[1, 0, 0.9, 0.9, 0]])


# ------------------------------------------------------------------------------- bad input
def _parts():
    q, v, u = ca.SX.sym("q", 2), ca.SX.sym("v", 2), ca.SX.sym("u", 1)
    return dict(q=q, v=v, u=u, M=ca.SX.eye(2), h=ca.vertcat(0, 9.81), B=ca.SX.ones(2, 1),
                phi=q[1:2], Jn=ca.SX(ca.DM([[0, 1]])), Jt=ca.SX(ca.DM([[1, 0]])),
                Jo=ca.SX.zeros(1, 2), mu=0.5, planar=True)


def test_valid_parts_build():
    sys = ContactSystem(**_parts())
    assert (sys.n_q, sys.n_v, sys.n_u, sys.n_c) == (2, 2, 1, 1)
    assert sys.mu.shape == (1,)


@pytest.mark.parametrize("field_name, value", [
    ("M", ca.SX.eye(3)),
    ("h", ca.SX.zeros(3, 1)),
    ("B", ca.SX.ones(2, 2)),
    ("Jn", ca.SX.zeros(2, 2)),
    ("Jt", ca.SX.zeros(1, 3)),
    ("Jo", ca.SX(ca.DM([[1.0, 0.0]]))),              # nonzero Jo on a planar system
    ("mu", -0.1),
    ("mu", [0.1, 0.2]),
    ("mu", float("nan")),
    ("M", ca.SX(ca.DM([[1.0, 0.5], [0.0, 1.0]]))),   # not symmetric
    ("M", ca.SX(ca.DM([[1.0, 0.0], [0.0, -1.0]]))),  # not positive definite
    ("Jn", ca.SX(ca.DM([[0.0, 2.0]]))),              # inconsistent with phi
    ("q", 2 * ca.SX.sym("q", 2)),                    # not pure symbols
    ("phi", ca.SX.sym("stranger")),                  # free symbol
    ("q_names", ("x",)),
    ("qdot", ca.SX.sym("v", 2) ** 2),                # not linear in v (also: other symbols)
])
def test_bad_input_names_field(field_name, value):
    parts = _parts()
    parts[field_name] = value
    with pytest.raises(InputError) as err:
        ContactSystem(**parts)
    assert err.value.field == field_name


def test_qdot_must_be_linear_in_v():
    parts = _parts()
    parts["qdot"] = parts["v"] * parts["v"]
    with pytest.raises(InputError) as err:
        ContactSystem(**parts)
    assert err.value.field == "qdot"
    parts = _parts()
    parts["v"] = ca.SX.sym("v", 1)
    parts["M"], parts["h"], parts["B"] = ca.SX.eye(1), ca.SX(0), ca.SX.ones(1, 1)
    parts["Jn"], parts["Jt"], parts["Jo"] = ca.SX(1), ca.SX(0), ca.SX(0)
    with pytest.raises(InputError) as err:  # n_q != n_v needs an explicit qdot
        ContactSystem(**parts)
    assert err.value.field == "qdot"


def test_bad_evaluation_input_and_parameters():
    sys = system("box_2d")
    with pytest.raises(InputError) as err:
        sys.eval_M([0.0, 1.0])
    assert err.value.field == "q"
    with pytest.raises(InputError) as err:
        sys.eval_h(sys.q_nominal, [0.0, np.nan, 0.0])
    assert err.value.field == "v"
    with pytest.raises(InputError) as err:
        sys.check_at([0.0, 0.0, np.inf])
    assert err.value.field == "q"
    for ctor, kw in ((box_2d, {"width": -1.0}), (point_mass_2d, {"mu": -0.2}),
                     (box_3d, {"size": (1.0, 0.0, 1.0)}), (hopper_2d, {"m_leg": 0.0}),
                     (cart_pole_walls, {"d": float("nan")})):
        with pytest.raises(InputError) as err:
            ctor(**kw)
        assert err.value.field == next(iter(kw))


def test_check_at_rejects_singular_mass_matrix():
    q, v = ca.SX.sym("q", 1), ca.SX.sym("v", 1)
    sys = ContactSystem(q=q, v=v, u=ca.SX.sym("u", 0), M=1 + q**2,
                        h=ca.SX(0), B=ca.SX.zeros(1, 0), phi=q, Jn=ca.SX(1), Jt=ca.SX(0),
                        Jo=ca.SX(0), mu=0.0, q_nominal=[1.0])
    sys.check_at([2.0])
    with pytest.raises(InputError) as err:
        ContactSystem(q=q, v=v, u=ca.SX.sym("u", 0), M=q**2, h=ca.SX(0), B=ca.SX.zeros(1, 0),
                      phi=q, Jn=ca.SX(1), Jt=ca.SX(0), Jo=ca.SX(0), mu=0.0, q_nominal=[0.0])
    assert err.value.field == "M"
