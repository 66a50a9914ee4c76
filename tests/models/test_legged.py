"""The spider (models/legged.py): mass matrix, Lagrangian bias, energy, contacts, standing pose."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.models.legged import spider, spider_feet, spider_standing


@pytest.fixture(scope="module")
def sp():
    return spider()


def _random_q(rng: np.random.Generator) -> np.ndarray:
    q = np.zeros(19)
    q[:3] = rng.uniform(-0.5, 0.5, 3)
    q[3:] = rng.uniform(-1.5, 1.5, 16)
    return q


def test_sizes_and_selection(sp):
    assert (sp.n_q, sp.n_v, sp.n_u, sp.n_c) == (19, 19, 16, 4)
    B = sp.eval_B(sp.q_nominal)
    np.testing.assert_array_equal(B, np.vstack([np.zeros((3, 16)), np.eye(16)]))
    assert not sp.planar


def test_mass_matrix_spd_and_total_mass(sp):
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = _random_q(rng)
        M = sp.eval_M(q)
        np.testing.assert_allclose(M, M.T, atol=1e-12)
        assert np.linalg.eigvalsh(M).min() > 1e-4
        # translation block = total mass, for any pose
        np.testing.assert_allclose(M[:2, :2], 100.0 * np.eye(2), atol=1e-10)
        sp.check_at(q)


def test_gravity_is_gradient_of_potential(sp):
    rng = np.random.default_rng(1)
    for _ in range(3):
        q = _random_q(rng)
        h0 = sp.eval_h(q, np.zeros(19))
        e = 1e-6
        dV = np.array([(sp.eval_V(q + e * d) - sp.eval_V(q - e * d)) / (2 * e) for d in np.eye(19)])
        np.testing.assert_allclose(h0, dV, atol=1e-6)
    assert sp.eval_h(sp.q_nominal, np.zeros(19))[1] == pytest.approx(100.0 * 9.81)


def test_energy_conserved_in_free_flight(sp):
    """RK4 of M vdot = -h (u = 0, no contact): E = 1/2 v^T M v + V stays constant."""
    rng = np.random.default_rng(2)
    q = sp.q_nominal + np.r_[0, 1.0, 0, rng.uniform(-0.3, 0.3, 16)]
    v = rng.uniform(-1.0, 1.0, 19)

    def f(x):
        return np.r_[x[19:], sp.eval_vdot(x[:19], x[19:])]

    x, dt = np.r_[q, v], 1e-3
    E0 = sp.eval_energy(q, v)
    for _ in range(100):
        k1 = f(x); k2 = f(x + dt / 2 * k1); k3 = f(x + dt / 2 * k2); k4 = f(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    assert abs(sp.eval_energy(x[:19], x[19:]) - E0) < 1e-6 * max(1.0, abs(E0))


def test_standing_pose_touches_ground_level(sp):
    q = sp.q_nominal
    np.testing.assert_allclose(sp.eval_phi(q), 0.0, atol=1e-14)
    assert q[2] == 0.0 and q[1] == pytest.approx(0.0)
    np.testing.assert_allclose(spider_feet(q)[:, 2], -0.43 + 0.08, atol=1e-14)
    # ground height is a parameter: the pose follows it
    s2 = spider(ground_height=0.1, mu=0.7)
    np.testing.assert_allclose(s2.eval_phi(s2.q_nominal), 0.0, atol=1e-14)
    np.testing.assert_allclose(s2.mu, 0.7)


def test_gap_and_jacobians(sp):
    rng = np.random.default_rng(3)
    q = _random_q(rng)
    feet = spider_feet(q)
    np.testing.assert_allclose(sp.eval_phi(q), feet[:, 2] + 0.43 - 0.08, atol=1e-12)
    Jn, Jt, Jo = sp.eval_J(q)
    e = 1e-6
    dP = np.array([(spider_feet(q + e * d) - spider_feet(q - e * d)) / (2 * e) for d in np.eye(19)])
    np.testing.assert_allclose(Jn, dP[:, :, 2].T, atol=1e-7)
    np.testing.assert_allclose(Jt, dP[:, :, 0].T, atol=1e-7)
    np.testing.assert_allclose(Jo, dP[:, :, 1].T, atol=1e-7)
    assert np.abs(Jo).max() > 1e-3  # legs move out of the sagittal plane


def test_bad_input_names_field():
    with pytest.raises(InputError) as e:
        spider(mu=-1.0)
    assert e.value.field == "mu"
    with pytest.raises(InputError) as e:
        spider(body_fraction=1.5)
    assert e.value.field == "body_fraction"
    with pytest.raises(InputError) as e:
        spider_standing(body_height=2.0)
    assert e.value.field == "body_height"


def test_inverse_dynamics_and_kinetic_energy_match_the_lagrangian(sp):
    """The compact Kane-form Functions the NMDP uses are M a + h and 1/2 v^T M v to rounding."""
    rng = np.random.default_rng(3)
    ID, T = sp.functions["inverse_dynamics"], sp.functions["kinetic_energy"]
    for _ in range(4):
        q, v, a = _random_q(rng), rng.normal(size=19), rng.normal(size=19)
        ref = sp.eval_M(q) @ a + sp.eval_h(q, v)
        np.testing.assert_allclose(np.array(ID(q, v, a)).ravel(), ref, rtol=0, atol=1e-11 * np.abs(ref).max())
        assert abs(float(T(q, v)) - 0.5 * v @ sp.eval_M(q) @ v) <= 1e-12 * max(1.0, float(T(q, v)))
    assert ID.n_instructions() < 0.2 * (sp.functions["M"].n_instructions() + sp.functions["h"].n_instructions())
