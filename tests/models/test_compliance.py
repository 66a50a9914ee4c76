"""Compliance models (Hertz, elastic foundation, range of motion) against closed forms and CompliantQP."""
from __future__ import annotations

import math

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.compliant_qp import CompliantQP
from contactmp.models.compliance import (
    effective_modulus,
    effective_radius,
    elastic_foundation,
    hertz_point_contact,
    range_of_motion_limit,
)

STEEL = dict(E1=200e9, nu1=0.3)
G_ACC = 9.81


# ------------------------------------------------------------------------------------- Hertz
def test_hertz_force_closed_form_sphere_plane_rigid():
    # steel ball R = 1 cm on a rigid plane: E* = E / (1 - nu^2), R* = R
    d = 1e-6
    c = hertz_point_contact(**STEEL, E2=math.inf, nu2=0.0, R1=0.01, depth=d)
    Es = 200e9 / (1 - 0.09)
    assert c.E_star == pytest.approx(Es, rel=1e-15, abs=0)
    assert c.R_star == pytest.approx(0.01, rel=1e-15, abs=0)
    F = 4.0 / 3.0 * Es * math.sqrt(0.01) * d ** 1.5
    assert c.force == pytest.approx(F, rel=1e-14, abs=0)
    assert c.K == pytest.approx(2 * Es * math.sqrt(0.01 * d), rel=1e-14, abs=0)
    assert c.K_secant * d == pytest.approx(F, rel=1e-14, abs=0)
    assert c.B == 0.0 and c.damping == "none"


def test_hertz_sphere_sphere_effective_values():
    Es = effective_modulus(200e9, 0.3, 70e9, 0.33)
    assert 1 / Es == pytest.approx(0.91 / 200e9 + (1 - 0.33 ** 2) / 70e9, rel=1e-15, abs=0)
    assert effective_radius(0.01, 0.03) == pytest.approx(0.0075, rel=1e-15, abs=0)
    c = hertz_point_contact(200e9, 0.3, 70e9, 0.33, 0.01, 0.03, depth=2e-6)
    assert c.force == pytest.approx(4 / 3 * Es * math.sqrt(0.0075) * (2e-6) ** 1.5, rel=1e-14, abs=0)


@pytest.mark.parametrize("d", [1e-7, 1e-6, 1e-5, 1e-4])
def test_hertz_K_is_derivative_of_F(d):
    c = hertz_point_contact(**STEEL, E2=70e9, nu2=0.33, R1=0.02, R2=0.05, depth=d)
    eps = d * 1e-5
    num = (c.force_at(d + eps) - c.force_at(d - eps)) / (2 * eps)  # central difference, O(eps^2)
    assert c.K == pytest.approx(num, rel=1e-8, abs=0)
    assert c.force_at(d) == pytest.approx(c.force, rel=1e-15, abs=0)


def test_hertz_damping_models():
    d = 1e-5
    c = hertz_point_contact(**STEEL, E2=math.inf, nu2=0.0, R1=0.01, depth=d, alpha=0.2)
    assert c.B == pytest.approx(0.2 * c.K * d, rel=1e-15, abs=0)  # Hunt-Crossley: (3/2) alpha k_h d^(3/2)
    assert c.B == pytest.approx(1.5 * 0.2 * (4 / 3 * c.E_star * math.sqrt(c.R_star)) * d ** 1.5, rel=1e-14, abs=0)
    r = hertz_point_contact(**STEEL, E2=math.inf, nu2=0.0, R1=0.01, depth=d, restitution=0.8, impact_speed=1.0)
    assert r.B == pytest.approx(0.2 * r.K * d, rel=1e-14, abs=0)
    z = hertz_point_contact(**STEEL, E2=math.inf, nu2=0.0, R1=0.01, depth=d, damping_ratio=1.0, mass=0.05)
    assert z.B == pytest.approx(2 * math.sqrt(z.K * 0.05), rel=1e-15, abs=0)
    zero = hertz_point_contact(**STEEL, E2=math.inf, nu2=0.0, R1=0.01, depth=0.0, alpha=0.2)
    assert zero.force == zero.K == zero.B == 0.0


def test_hertz_input_errors():
    with pytest.raises(InputError) as e:
        hertz_point_contact(**STEEL, E2=math.inf, nu2=0.0, R1=0.01, depth=-1e-6)
    assert e.value.field == "depth"
    with pytest.raises(InputError):
        hertz_point_contact(**STEEL, E2=math.inf, nu2=0.0, R1=0.01, depth=1e-6, alpha=0.1, damping_ratio=1, mass=1)
    with pytest.raises(InputError):
        hertz_point_contact(math.inf, 0.3, math.inf, 0.3, 0.01, depth=1e-6)
    with pytest.raises(InputError) as e:
        hertz_point_contact(200e9, 0.7, math.inf, 0.0, 0.01, depth=1e-6)
    assert e.value.field == "nu1"


def test_hertz_ball_rests_at_hertz_depth_with_compliant_qp():
    """A ball of weight W on a plane, stepped with CompliantQP re-evaluating K_sec(d), B(d) each step,
    settles where F(d) = W, i.e. d = (3 W / (4 E* sqrt(R*)))^(2/3)."""
    m, R, h = 0.05, 0.01, 1e-4
    W = m * G_ACC
    c0 = hertz_point_contact(**STEEL, E2=math.inf, nu2=0.0, R1=R, depth=0.0)
    d_star = (3 * W / (4 * c0.E_star * math.sqrt(c0.R_star))) ** (2 / 3)
    z, v = 0.0, 0.0
    for _ in range(400):
        d = max(-z, 0.0)
        dd = max(d, 1e-3 * d_star)  # a small floor so the first step has stiffness
        c = hertz_point_contact(**STEEL, E2=math.inf, nu2=0.0, R1=R, depth=dd, damping_ratio=1.0, mass=m)
        qp = CompliantQP(M=[[m]], f=[-W], v0=[v], G=[[1.0]], phi0=[z], K=[c.K_secant], B=[c.B], h=h,
                         kind="unilateral")
        res = qp.solve()
        assert res.success
        v = float(res.extras["v1"][0])
        z = z + h * v
    assert -z == pytest.approx(d_star, rel=1e-9, abs=0)


# -------------------------------------------------------------------------- elastic foundation
def test_elastic_foundation_total_stiffness_and_points():
    fd = elastic_foundation((0.2, 0.1), (4, 5), E=2e6, thickness=0.02, viscosity=300.0)
    assert fd.n == 20
    assert fd.total_stiffness == pytest.approx(2e6 * 0.02 / 0.02, rel=1e-14, abs=0)
    assert fd.total_damping == pytest.approx(300.0 * 0.02 / 0.02, rel=1e-14, abs=0)
    assert np.allclose(fd.k, 2e6 * (0.02 / 20) / 0.02, rtol=1e-15)
    assert np.allclose(fd.points.mean(axis=0), 0.0, atol=1e-16)
    assert np.allclose(np.unique(fd.points[:, 0]), [-0.075, -0.025, 0.025, 0.075])
    assert np.allclose(np.unique(fd.points[:, 1]), [-0.04, -0.02, 0.0, 0.02, 0.04])
    with pytest.raises(InputError) as e:
        elastic_foundation(0.1, 0, E=1e6, thickness=0.01)
    assert e.value.field == "grid"


def test_elastic_foundation_rows_match_finite_difference():
    fd = elastic_foundation(0.1, 3, E=1e6, thickness=0.01)
    th = 0.3
    R = np.array([[1, 0, 0], [0, math.cos(th), -math.sin(th)], [0, math.sin(th), math.cos(th)]])
    p = np.array([0.1, -0.2, 0.05])
    phi, G = fd.rows(p, R)
    omega, vel, eps = np.array([0.4, -0.7, 0.2]), np.array([0.1, 0.3, -0.5]), 1e-7
    w = np.linalg.norm(omega)
    Kx = np.array([[0, -omega[2], omega[1]], [omega[2], 0, -omega[0]], [-omega[1], omega[0], 0]]) / w
    dR = np.eye(3) + math.sin(w * eps) * Kx + (1 - math.cos(w * eps)) * Kx @ Kx
    phi2, _ = fd.rows(p + eps * vel, dR @ R)
    assert np.allclose((phi2 - phi) / eps, G @ np.concatenate([vel, omega]), atol=1e-7)


def test_flat_face_settles_at_W_t_over_EA_with_equal_loads():
    """A 1 kg box face on a 5 x 5 Winkler grid (25 unilateral rows, redundant: W = G M^-1 G^T is
    rank 3) stepped with CompliantQP from touching rest settles at W t / (E A) with equal loads."""
    E, t, a, m = 1e6, 0.01, 0.1, 1.0
    Kt = E * a * a / t
    eta = 2 * math.sqrt(Kt * m) * t / (a * a)  # critical damping of the heave mode
    fd = elastic_foundation(a, 5, E=E, thickness=t, viscosity=eta)
    Wt = m * G_ACC
    I = m * a * a / 6 * np.ones(3)
    M = np.diag([m, m, m, *I])
    f = np.array([0, 0, -Wt, 0, 0, 0])
    p, v, h = np.zeros(3), np.zeros(6), 1e-3
    for _ in range(300):
        phi, G = fd.rows(p)
        res = CompliantQP(M=M, f=f, v0=v, G=G, phi0=phi, K=fd.k, B=fd.b, h=h, kind="unilateral").solve()
        assert res.success
        v = res.extras["v1"]
        p = p + h * v[:3]
    depth = Wt * t / (E * a * a)
    assert -p[2] == pytest.approx(depth, rel=1e-9, abs=0)
    assert np.abs(v[3:]).max() < 1e-12
    assert np.abs(res.x - Wt / fd.n).max() <= 1e-9 * Wt / fd.n
    assert res.x.sum() == pytest.approx(Wt, rel=1e-10, abs=0)


# ---------------------------------------------------------------------------- range of motion
def test_range_of_motion_rows():
    rom = range_of_motion_limit(1, -0.5, 0.8, K=1e4, B=10.0, n=3)
    assert rom.G.tolist() == [[0, 1, 0], [0, -1, 0]]
    assert np.allclose(rom.phi([9, 0.1, 9]), [0.6, 0.7])
    assert rom.kind == ("unilateral", "unilateral")
    with pytest.raises(InputError) as e:
        range_of_motion_limit(0, 1.0, 0.5, K=1.0)
    assert e.value.field == "lower"
    with pytest.raises(InputError) as e:
        range_of_motion_limit(0, 0.0, 1.0, K=-1.0)
    assert e.value.field == "K"


@pytest.mark.parametrize("K", [1e3, 1e6, 1e12])
def test_pendulum_driven_past_limit_is_held_within_tau_over_K(K):
    """Pendulum angle theta (from hanging down), motor torque tau drives it into upper = 1 rad;
    at rest the limit row carries tau_net = tau - m g l sin(theta) and theta = upper + tau_net / K
    (a fixed point; to first order tau_net = tau - m g l sin(upper))."""
    m, l, tau, h = 1.0, 0.5, 20.0, 1e-3
    upper = 1.0
    rom = range_of_motion_limit(0, -1.0, upper, K=K, B=2 * math.sqrt(K * m * l * l))
    th, w = 0.0, 0.0
    tau0 = tau - m * G_ACC * l * math.sin(upper)
    ulp = 4 * np.finfo(float).eps * upper  # resolution of theta near the limit
    Mq = np.array([[m * l * l]])
    for _ in range(3000):
        f = [tau - m * G_ACC * l * math.sin(th)]
        res = CompliantQP(M=Mq, f=f, v0=[w], G=rom.G, phi0=rom.phi([th]), K=rom.K, B=rom.B, h=h,
                          kind=rom.kind).solve()
        assert res.success
        w = float(res.extras["v1"][0])
        th += h * w
        assert th - upper <= 1.01 * tau0 / K + ulp  # never past the compliance deflection
    defl = 0.0
    for _ in range(50):  # the rest condition K defl = tau - m g l sin(upper + defl)
        defl = (tau - m * G_ACC * l * math.sin(upper + defl)) / K
    assert 0 < defl <= tau0 / K
    assert th - upper == pytest.approx(defl, rel=1e-9, abs=ulp)
    assert res.x[1] == pytest.approx(K * defl, rel=1e-9, abs=0)
    assert res.x[0] == 0.0


def test_hertz_gains_reproduce_the_hertz_force_and_damping():
    """K_sec(d) d = F(d) = (4/3) E* sqrt(R*) d^1.5 at every depth; B matches hertz_point_contact."""
    from contactmp.models.compliance import hertz_gains

    R, m = 0.01, 0.05
    gz = hertz_gains(**STEEL, E2=math.inf, nu2=0.0, R1=R, damping_ratio=0.7, mass=m)
    ga = hertz_gains(**STEEL, E2=math.inf, nu2=0.0, R1=R, alpha=0.4)
    phi = -np.array([1e-8, 1e-7, 1e-6, 1e-5])
    for p, d in zip(phi, -phi):
        ref = hertz_point_contact(**STEEL, E2=math.inf, nu2=0.0, R1=R, depth=d, damping_ratio=0.7, mass=m)
        assert gz.stiffness(np.array([p]))[0] * d == pytest.approx(ref.force, rel=1e-14)
        assert gz.damping(np.array([p]))[0] == pytest.approx(ref.B, rel=1e-14)
        refa = hertz_point_contact(**STEEL, E2=math.inf, nu2=0.0, R1=R, depth=d, alpha=0.4)
        assert ga.damping(np.array([p]))[0] == pytest.approx(refa.B, rel=1e-14)
    assert gz.stiffness(np.array([1e-3]))[0] == 0.0 and gz.damping(np.array([1e-3]))[0] == 0.0  # separated
    floor = hertz_gains(**STEEL, E2=math.inf, nu2=0.0, R1=R, min_depth=1e-9)
    assert floor.stiffness(np.array([0.0]))[0] > 0
    with pytest.raises(InputError):
        hertz_gains(**STEEL, R1=R, alpha=0.1, damping_ratio=0.5, mass=1.0)
    with pytest.raises(InputError):
        hertz_gains(**STEEL, R1=R, damping_ratio=0.5)
