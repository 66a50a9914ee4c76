"""Compliant contact with the true Coulomb cone: conic KKT, frictionless = CompliantQP, modes."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.compliant_friction import CompliantFriction
from contactmp.solvers.fc3d.problem import project_cone
from contactmp.formulations.compliant_qp import CompliantQP

g = 9.81


def _random(seed: int, nc: int = 3, n: int = 6, mu=None) -> CompliantFriction:
    rng = np.random.default_rng(seed)
    L = rng.normal(size=(n, n))
    M = L @ L.T + n * np.eye(n)
    Jn, Jt, Jo = (rng.normal(size=(nc, n)) for _ in range(3))
    mu = rng.uniform(0.2, 1.0, nc) if mu is None else mu
    return CompliantFriction(M, rng.normal(size=n) * 10, rng.normal(size=n), Jn, Jt, Jo,
                             rng.normal(size=nc) * 1e-3, mu, 1e4, 10.0, 50.0, 0.01)


@pytest.mark.parametrize("seed", range(12))
def test_random_cone_qp_satisfies_conic_kkt(seed):
    p = _random(seed)
    r = p.solve()
    assert r.success, r.message
    assert r.solver.startswith("ipopt")
    lam, w = r.x, p.slack(r.x)
    for i in range(p.nc):  # independent conic KKT: lambda in K, w in K*, lambda . w = 0
        li, wi, mu = lam[3 * i:3 * i + 3], w[3 * i:3 * i + 3], p.mu[i]
        assert np.linalg.norm(li[1:]) <= mu * li[0] + 1e-9
        assert mu * np.linalg.norm(wi[1:]) <= wi[0] + 1e-9
        assert abs(li @ wi) <= 1e-9 * max(1.0, np.abs(lam).max())
    # optimality of the convex QP: no feasible random perturbation lowers the objective
    obj = lambda x: 0.5 * x @ p.A @ x + p.c @ x  # noqa: E731
    rng = np.random.default_rng(seed + 100)
    for _ in range(200):
        x = lam + rng.normal(size=lam.size) * 0.1
        x = project_cone(x, p.mu)
        assert obj(x) >= obj(lam) - 1e-9


def test_frictionless_equals_compliant_qp_unilateral():
    for seed in range(6):
        p = _random(seed, mu=np.zeros(3))
        r = p.solve()
        assert r.success, r.message
        q = CompliantQP(p.M, p.f, p.v0, p.G[0::3], p.phi0, p.K, p.B, p.h, "unilateral").solve()
        assert q.success
        np.testing.assert_allclose(r.x[0::3], q.x, rtol=0, atol=1e-10 * max(1, np.abs(q.x).max()))
        np.testing.assert_array_equal(r.x[1::3], 0.0)
        np.testing.assert_allclose(r.extras["v1"], q.extras["v1"], atol=1e-10)


def test_one_contact_frictionless_particle_closed_form():
    m, K, B, h = 2.0, 1e5, 50.0, 0.01
    p = CompliantFriction([[m]], [-m * g], [-0.3], [[1.0]], [[0.0]], None, [-1e-3], 0.0, K, B, 1.0, h)
    r = p.solve()
    # lambda = max(0, -K phi1 - B v1), v1 = v0 + h (f + lambda) / m, phi1 = phi0 + h v1
    v_free = -0.3 - h * g
    lam = (-K * (-1e-3) - (h * K + B) * v_free) / (1 + h * (h * K + B) / m)
    assert abs(r.x[0] - lam) <= 1e-10 * lam
    q = CompliantQP([[m]], [-m * g], [-0.3], [[1.0]], [-1e-3], K, B, h, "unilateral").solve()
    assert abs(r.x[0] - q.x[0]) <= 1e-10 * lam


def test_stick_and_slide_modes_of_a_point_mass():
    m, mu, K, B, Bt, h = 1.0, 0.5, 1e6, 2e3, 1e4, 0.01
    base = dict(M=m * np.eye(2), Jn=[[0.0, 1.0]], Jt=[[1.0, 0.0]], Jo=None, phi0=[-m * g / K], mu=mu,
                K=K, B=B, Bt=Bt, h=h)
    F = 0.5 * mu * m * g  # below the limit, at rest: stiction with creep F / Bt
    r = CompliantFriction(f=[F, -m * g], v0=[F / Bt, 0.0], **base).solve()
    assert r.success and r.extras["modes"] == ["stick"]
    np.testing.assert_allclose(r.x, [m * g, -F], rtol=1e-9)
    np.testing.assert_allclose(r.extras["v1"], [F / Bt, 0.0], atol=1e-12)
    F = 2 * mu * m * g  # above: sliding, friction = mu lambda_n against the slip
    r = CompliantFriction(f=[F, -m * g], v0=[1.0, 0.0], **base).solve()
    assert r.success and r.extras["modes"] == ["slide"]
    assert abs(r.x[1] + mu * r.x[0]) <= 1e-12 * r.x[0]


def test_project_cone_and_inputs():
    z = np.array([1.0, 3.0, 4.0])
    p = project_cone(z, np.array([0.5]))
    assert abs(np.linalg.norm(p[1:]) - 0.5 * p[0]) < 1e-14
    assert abs((z - p) @ p) < 1e-12  # projection onto a cone: residual orthogonal to the point
    np.testing.assert_array_equal(project_cone(np.array([-10.0, 1.0, 0.0]), np.array([0.5])), 0.0)
    with pytest.raises(InputError, match="Bt"):
        CompliantFriction([[1.0]], [0.0], [0.0], [[1.0]], [[0.0]], None, [0.0], 0.5, 1.0, 0.0, 0.0, 0.1)
    with pytest.raises(InputError, match="Jt"):
        CompliantFriction(np.eye(2), [0, 0], [0, 0], [[0, 1.0]], [[1.0]], None, [0.0], 0.5, 1.0, 0.0, 1.0, 0.1)


@pytest.mark.parametrize("seed", range(6))
def test_superscs_second_order_cones_agree_with_ipopt(seed):
    """SuperSCS through casadi.conic with the true SOC constraints (soc(x_T, mu x_n) psd blocks, the
    quadratic objective as an epigraph cone) agrees with IPOPT to 1e-6: raw and after the polish."""
    mu = np.array([0.0, 0.5, 1.0]) if seed == 5 else None
    p = _random(seed, mu=mu)
    ip = p.solve("ipopt")
    raw = p.solve("superscs", polish=False)
    pol = p.solve("superscs")
    assert ip.success and pol.success, (ip.message, pol.message)
    assert pol.solver.startswith("superscs")
    scale = max(1.0, np.abs(ip.x).max())
    assert np.max(np.abs(raw.x - ip.x)) <= 1e-6 * scale
    assert np.max(np.abs(pol.x - ip.x)) <= 1e-6 * scale
    assert pol.residual <= 1e-10


def test_unknown_cone_solver_is_an_option_error():
    from contactmp.errors import OptionError
    with pytest.raises(OptionError):
        _random(0).solve("scs")
