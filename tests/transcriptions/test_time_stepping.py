"""Physics checks of the velocity-level time stepping (pyramid LCP and Coulomb cone)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.models.rigid_bodies import GRAVITY as G
from contactmp.models.systems import box_2d, box_3d, hopper_2d, point_mass_2d
from contactmp.result import Status
from contactmp.transcriptions.time_stepping import PhysicsWarning, TimeStepping

FORMS = ("pyramid", "cone")
H = 0.01


@pytest.mark.parametrize("form", FORMS)
def test_box_2d_drop_lands_without_penetration_and_rests(form: str) -> None:
    m = 2.0
    box = box_2d(m=m, width=1.0, height=0.5, mu=0.5)
    ts = TimeStepping(box, H, form)
    q0 = np.array([0.0, 0.25 + 0.2, 0.0])  # bottom 0.2 m above the ground
    tr = ts.simulate(q0, np.zeros(3), None, 60)
    assert tr.n_failed == 0 and tr.n_steps == 60
    phis = np.array([box.eval_phi(q) for q in tr.q])
    # free fall of 0.2 m takes sqrt(2*0.2/g) = 0.202 s: landed well before step 40
    assert phis.min() >= -1e-6
    assert np.abs(phis[40:, :2]).max() <= 1e-9  # bottom corners on the ground, not above it
    # at rest the normal impulses carry the weight over each step
    np.testing.assert_allclose(tr.p_n[40:].sum(axis=1), m * G * H, rtol=1e-6)
    np.testing.assert_allclose(tr.v[40:], 0.0, atol=1e-9)
    assert np.abs(tr.p_t[40:]).max() <= 1e-9 and np.abs(tr.p_o).max() == 0.0
    assert tr.dynamics_residual.max() <= 1e-9
    # before landing it is free flight: v_z = -g t exactly (semi-implicit Euler)
    k = 10
    assert tr.solver[0] == "free_flight" or tr.p_n[0].sum() == 0.0
    np.testing.assert_allclose(tr.v[k, 1], -G * H * k, rtol=1e-12)


@pytest.mark.parametrize("form", FORMS)
def test_point_mass_slides_with_coulomb_deceleration(form: str) -> None:
    mu, m = 0.5, 1.5
    pm = point_mass_2d(m=m, mu=mu)
    ts = TimeStepping(pm, H, form)
    n = 40
    tr = ts.simulate([0.0, 0.0], [1.0, 0.0], None, n)
    assert tr.n_failed == 0
    a = mu * G
    # discrete closed form of the scheme: v_{k+1} = max(v_k - a h, 0), x_{k+1} = x_k + h v_{k+1}
    k = np.arange(n + 1)
    v_exact = np.maximum(1.0 - a * H * k, 0.0)
    x_exact = np.concatenate([[0.0], np.cumsum(H * v_exact[1:])])
    np.testing.assert_allclose(tr.v[:, 0], v_exact, atol=1e-9)
    np.testing.assert_allclose(tr.q[:, 0], x_exact, atol=1e-9)
    np.testing.assert_allclose(tr.q[:, 1], 0.0, atol=1e-12)
    # continuous closed form x(t) = t - a t^2 / 2 (t <= 1/a), stop at x* = 1/(2a): O(h) error
    t_stop = 1.0 / a
    t = tr.t[tr.t <= t_stop]
    assert np.abs(tr.q[: t.size, 0] - (t - a * t**2 / 2)).max() <= H
    assert abs(tr.q[-1, 0] - 1.0 / (2 * a)) <= H
    # while sliding the friction impulse is -mu p_n and p_n = m g h
    sliding = v_exact[1:] > 0
    np.testing.assert_allclose(tr.p_n[:, 0], m * G * H, rtol=1e-9)
    np.testing.assert_allclose(tr.p_t[sliding, 0], -mu * m * G * H, rtol=1e-9)


@pytest.mark.parametrize("form", FORMS)
def test_hopper_stands_still_on_its_foot(form: str) -> None:
    m_body, m_leg = 10.0, 1.0
    hp = hopper_2d(m_body=m_body, m_leg=m_leg)
    # at q_nominal (beta = 0) Jn = (0, 1, 0, 0, -1); statics h(q, 0) = B u + Jn^T lambda_n gives
    # z-row: (m_body + m_leg) g = lambda_n, l-row: -m_leg g = f_leg - lambda_n, so f_leg = m_body g
    u = np.array([m_body * G, 0.0])
    ts = TimeStepping(hp, H, form)
    tr = ts.simulate(hp.q_nominal, np.zeros(5), u, 100)
    assert tr.n_failed == 0
    np.testing.assert_allclose(tr.q, np.tile(hp.q_nominal, (101, 1)), atol=1e-10)
    np.testing.assert_allclose(tr.p_n[:, 0], (m_body + m_leg) * G * H, rtol=1e-6)
    assert np.abs(tr.p_t).max() <= 1e-9


@pytest.mark.parametrize("form", FORMS)
def test_box_3d_slides_lands_and_stops(form: str) -> None:
    m, mu = 1.0, 0.5
    box = box_3d(m=m, size=0.5, mu=mu)
    ts = TimeStepping(box, H, form)
    q0 = np.array([0.0, 0.0, 0.25, 1.0, 0.0, 0.0, 0.0])  # resting, sliding along x
    tr = ts.simulate(q0, [0.3, 0.4, 0, 0, 0, 0], None, 20)
    assert tr.n_failed == 0
    a = mu * G
    k = np.arange(21)
    if form == "cone":  # Coulomb: deceleration mu g along the velocity direction (0.6, 0.8)
        speed = np.maximum(0.5 - a * H * k, 0.0)
        vx, vy = 0.6 * speed, 0.8 * speed
    else:  # the square pyramid |p_t|, |p_o| <= mu p_n: each axis decelerates by mu g on its own
        vx, vy = np.maximum(0.3 - a * H * k, 0.0), np.maximum(0.4 - a * H * k, 0.0)
    np.testing.assert_allclose(tr.v[:, 0], vx, atol=1e-7)
    np.testing.assert_allclose(tr.v[:, 1], vy, atol=1e-7)
    np.testing.assert_allclose(tr.p_n.sum(axis=1), m * G * H, rtol=1e-6)
    assert min(box.eval_phi(q).min() for q in tr.q) >= -1e-6
    np.testing.assert_allclose(np.linalg.norm(tr.q[:, 3:], axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(tr.v[-1], 0.0, atol=1e-8)


def test_failed_step_is_recorded_and_can_stop() -> None:
    pm = point_mass_2d()
    ts = TimeStepping(pm, H, "pyramid", solver="pgs", tol=1e-300, on_failure="stop")
    tr = ts.simulate([0.0, 0.0], [1.0, 0.0], None, 5)
    assert tr.stopped and tr.n_steps == 1 and tr.status[0] is not Status.SOLVED
    ts = TimeStepping(pm, H, "pyramid", solver="pgs", tol=1e-300)
    tr = ts.simulate([0.0, 0.0], [1.0, 0.0], None, 3)
    assert not tr.stopped and tr.n_steps == 3 and tr.n_failed == 3


@pytest.mark.parametrize("z", [0.0, 1.0])  # in contact (a contact step) or in the air (free flight)
def test_a_mass_matrix_that_is_not_positive_definite_is_a_status(z: float) -> None:
    """A model whose M(q) = diag(1 - x, 1) loses positive definiteness at x >= 1 (a model left its
    valid range, as a blown-up simulation does): the step reports numerical_error naming M instead
    of raising, the state is not finite, and the simulation stops there."""
    import casadi as ca

    from contactmp.models.symbolic import ContactSystem

    q, v, u = ca.SX.sym("q", 2), ca.SX.sym("v", 2), ca.SX.sym("u", 2)
    s = ContactSystem(q=q, v=v, u=u, M=ca.diag(ca.vertcat(1 - q[0], 1)), h=ca.vertcat(0, 9.81), B=ca.SX.eye(2),
                      phi=q[1], Jn=ca.horzcat(0, 1), Jt=ca.horzcat(1, 0), Jo=ca.SX.zeros(1, 2), mu=0.5,
                      planar=True, q_nominal=[0.0, 0.0], name="bad_mass")
    ts = TimeStepping(s, 0.01, "pyramid")
    out = ts.step([1.5, z], [0.0, 0.0], [0.0, 0.0])
    assert out.result.status is Status.NUMERICAL_ERROR and out.result.message.startswith("M:")
    assert not np.isfinite(out.q).any() and not np.isfinite(out.v).any()
    tr = ts.simulate([1.5, z], [0.0, 0.0], None, 5)
    assert tr.n_steps == 1 and "non-finite" in tr.stopped
    assert ts.step([0.5, z], [0.0, 0.0], [0.0, 0.0]).result.status is Status.SOLVED


def test_inputs_are_checked() -> None:
    pm = point_mass_2d()
    with pytest.raises(InputError, match="h"):
        TimeStepping(pm, -1.0)
    with pytest.raises(OptionError):
        TimeStepping(pm, H, "no-such-formulation")
    with pytest.raises(InputError, match="facets"):
        TimeStepping(pm, H, facets=5)
    ts = TimeStepping(pm, H)
    with pytest.raises(InputError, match="u"):
        ts.simulate([0, 0], [0, 0], np.zeros(3), 2)
    tr = ts.simulate([0, 1.0], [0, 0], lambda t: [0.0, 0.0], 2)  # callable input, free flight
    np.testing.assert_allclose(tr.v[2], [0.0, -2 * G * H], rtol=1e-12)


# ---------------------------------------------------------------- compliant cone QP (Drumwright)
def _compliant(h: float, K: float, B: float, Bt: float, m: float = 1.0, mu: float = 0.5, **options):
    pm = point_mass_2d(m=m, mu=mu)
    return pm, TimeStepping(pm, h, "compliant", stiffness=K, damping=B, tangential_damping=Bt, **options)


def test_compliant_stiction_creeps_at_force_over_damping() -> None:
    m, mu, Bt = 1.0, 0.5, 1e4
    F = 0.5 * mu * m * G
    pm, ts = _compliant(H, 1e6, 2e3, Bt)
    tr = ts.simulate([0.0, -m * G / 1e6], [0.0, 0.0], [F, 0.0], 100)
    assert tr.n_failed == 0
    creep = (tr.q[-1, 0] - tr.q[50, 0]) / (tr.t[-1] - tr.t[50])  # m/s
    assert creep < 1e-3
    np.testing.assert_allclose(creep, F / Bt, rtol=1e-6)  # closed form: lambda_t = -Bt u_t = -F
    np.testing.assert_allclose(tr.p_t[50:, 0] / H, -F, rtol=1e-9)
    np.testing.assert_allclose(tr.p_n[50:, 0] / H, m * G, rtol=1e-9)


def test_compliant_sliding_friction_is_mu_weight() -> None:
    """The associated (De Saxce) compliant cone: friction mu m g while sliding, and the body rises
    while it slides, which the physics verdict flags once it is above the surface (force at a gap;
    the default non-associated law stays on the surface: tests/formulations/test_compliant_defaults.py)."""
    m, mu, K, B = 1.0, 0.5, 1e6, 2e3
    F = 2 * mu * m * G
    pm, ts = _compliant(H, K, B, 1e4, associated=True)
    with pytest.warns(PhysicsWarning, match="gap_force"):
        tr = ts.simulate([0.0, -m * G / K], [0.0, 0.0], [F, 0.0], 60)
    assert tr.n_failed == tr.n_unphysical > 0 and set(tr.violations) == {"gap_force"}
    assert all(name.startswith("ipopt") for name in tr.solver)  # the cone QP's backend
    np.testing.assert_allclose(tr.p_n[20:, 0] / H, m * G, rtol=1e-6)
    np.testing.assert_allclose(tr.p_t[20:, 0] / H, -mu * m * G, rtol=1e-6)
    np.testing.assert_allclose(np.diff(tr.v[20:, 0]) / H, (F - mu * m * G) / m, rtol=1e-6)
    # the convex cone's dilation: the body rises at (h + B/K) mu a while sliding (documented artifact)
    np.testing.assert_allclose(tr.v[20:, 1], (H + B / K) * mu * (F - mu * m * G) / m, rtol=1e-6)


def test_compliant_stable_with_large_step_and_stiffness() -> None:
    m, h, K = 1.0, 0.1, 1e12
    pm, ts = _compliant(h, K, 0.0, 1e4)
    tr = ts.simulate([0.0, 0.05], [0.2, 0.0], None, 40)
    assert tr.n_failed == 0
    assert np.abs(tr.v).max() <= 2.0 and np.abs(tr.q[:, 1]).max() <= 0.06
    np.testing.assert_allclose(tr.p_n[-10:, 0] / h, m * G, rtol=1e-6)
    np.testing.assert_allclose(tr.q[-1, 1], -m * G / K, atol=1e-9)
    np.testing.assert_allclose(tr.v[-10:], 0.0, atol=1e-6)


def test_compliant_gains_are_derived_or_named() -> None:
    """Without gains the compliant step derives them from the system's load (it sinks its design
    depth); a system whose gravity load pushes no contact has none to derive from: an InputError
    naming ``stiffness``; a zero tangential damping is named."""
    pm = point_mass_2d()
    tr = TimeStepping(pm, H, "compliant").simulate([0.0, 0.0], [0.0, 0.0], None, 50)
    assert tr.n_failed == 0 and tr.q[-1, 1] == pytest.approx(-1e-3, rel=1e-3)
    with pytest.raises(InputError, match="stiffness"):
        TimeStepping(point_mass_2d(g=0.0), H, "compliant", tangential_damping=1.0)
    with pytest.raises(InputError, match="tangential_damping"):
        TimeStepping(pm, H, "compliant", stiffness=1e4, tangential_damping=0.0)


# ------------------------------------------------- configuration-dependent gains (Hertz contact)
def test_compliant_hertz_gains_settle_at_hertz_static_depth() -> None:
    """A steel ball (m = 50 g, R = 1 cm) on a rigid plane with K = K_sec(d) = F(d)/d and B = 2 zeta
    sqrt(K_t(d) m) evaluated at each step's start (frozen over the step) settles at the closed-form
    Hertz depth d = (3 m g / (4 E* sqrt(R)))^(2/3) = 6.54e-8 m. Measured: |d - d*| / d* = 6e-16 after
    200 steps of h = 1e-4 (9e-15 with h = 1e-3); asserted to 1e-12."""
    import math

    from contactmp.models.compliance import hertz_gains

    m, R, h = 0.05, 0.01, 1e-4
    pm = point_mass_2d(m=m, mu=0.5)
    gains = hertz_gains(200e9, 0.3, math.inf, 0.0, R, damping_ratio=1.0, mass=m)
    d_star = (3 * m * G / (4 * gains.E_star * math.sqrt(R))) ** (2 / 3)
    assert gains.static_depth(m * G) == pytest.approx(d_star, rel=1e-14)
    ts = TimeStepping(pm, h, "compliant", stiffness=gains.stiffness, damping=gains.damping,
                      tangential_damping=1e3, active_gap=math.inf)
    tr = ts.simulate([0.0, 0.0], [0.0, 0.0], None, 200)
    assert tr.n_failed == 0
    assert tr.solver[0] == "free_flight"  # at zero depth K = B = 0: no force in the first step
    assert sum(tr.solver_counts.values()) == 200 and tr.solver_counts["free_flight"] == 1
    assert -tr.q[-1, 1] == pytest.approx(d_star, rel=1e-12, abs=0)
    np.testing.assert_allclose(tr.p_n[-1, 0] / h, m * G, rtol=1e-9)  # lambda = K_sec(d) d = F(d) = W


def test_compliant_callable_gains_are_checked() -> None:
    pm = point_mass_2d()
    ts = TimeStepping(pm, H, "compliant", stiffness=lambda phi, q: -1.0, damping=0.0, tangential_damping=1.0)
    with pytest.raises(InputError, match="stiffness"):
        ts.step([0.0, -1e-3], [0.0, 0.0])
    ts = TimeStepping(pm, H, "compliant", stiffness=1e4, damping=lambda phi, q: np.ones(3),
                      tangential_damping=1.0)
    with pytest.raises(InputError, match="damping"):
        ts.step([0.0, -1e-3], [0.0, 0.0])
    with pytest.raises(OptionError, match="lemke"):  # not a cone-QP backend: refused at the first contact step
        TimeStepping(pm, H, "compliant", solver="lemke", stiffness=1e4, tangential_damping=1.0).step(
            [0.0, -1e-3], [0.0, 0.0])


def test_compliant_superscs_steps_match_ipopt_steps() -> None:
    """Sliding point mass: the SuperSCS cone backend reproduces the IPOPT trajectory (to 1e-9) and
    every step names its solver."""
    m, mu, K, B = 1.0, 0.5, 1e6, 2e3
    pm = point_mass_2d(m=m, mu=mu)
    runs = {}
    for name in ("ipopt", "superscs"):
        ts = TimeStepping(pm, H, "compliant", solver=name, stiffness=K, damping=B, tangential_damping=1e4,
                          associated=True)  # the cone QP of the associated law (its lift is flagged)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PhysicsWarning)
            runs[name] = ts.simulate([0.0, -m * G / K], [0.0, 0.0], [2 * mu * m * G, 0.0], 20)
        assert runs[name].n_failed == runs[name].n_unphysical
        assert all(s.startswith(name) for s in runs[name].solver)
    np.testing.assert_allclose(runs["superscs"].q, runs["ipopt"].q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(runs["superscs"].p_t, runs["ipopt"].p_t, rtol=1e-9, atol=1e-12)
