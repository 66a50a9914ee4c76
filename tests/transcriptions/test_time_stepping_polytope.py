"""TimeStepping with the wrench-polytope formulations ("nmdp", "mdp"): frame-by-frame NMDP /
linearized-MDP simulation.

Physics asserted: a point mass resting on a constant pyramid polytope stays at rest with the
normal force m g; a sliding point mass decelerates by the closed-form maximal-dissipation force;
PGM and IPOPT give the same trajectory of the hopper; the adaptive step halves failed substeps and
covers the frame exactly; a box settles at the depth where its polytopes carry its weight.
"""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.models.systems import box_2d, hopper_2d, point_mass_2d
from contactmp.result import Status
from contactmp.transcriptions.time_stepping import TimeStepping

G = 9.81
#: method -> (formulation, options)
METHOD = {"pgm": ("nmdp", {"method": "pgm"}), "ipopt": ("nmdp", {"method": "ipopt"}),
          "ipopt-cyipopt": ("nmdp", {"method": "ipopt-cyipopt"}), "mdp": ("mdp", {})}


def _stepper(system, h, method, **kw) -> TimeStepping:
    name, opts = METHOD[method]
    return TimeStepping(system, h, name, **opts, **kw)


def _box_poly(depth: float = 1e-3) -> dict:
    # each bottom corner carries m g / 2 at the depth: k = (m g / 2) / depth^2
    return {"stiffness": 0.5 * G / depth ** 2, "relax": 0.0}


@pytest.fixture(scope="module")
def pm():
    return point_mass_2d(m=2.0, mu=0.5)


@pytest.mark.parametrize("method", ["pgm", "ipopt", "mdp"])
def test_resting_point_mass_carries_its_weight(pm, method):
    # constant-magnitude polytope (k = 0, height 100 N >> m g = 19.62 N): at rest the maximal-
    # dissipation force is exactly the weight and the body does not move
    opts = {"solver_options": {"tol_stationarity": 1e-10}} if method == "pgm" else {}  # PGM: to K's floor
    tr = _stepper(pm, 0.01, method, stiffness=0.0, relax=100.0, **opts).simulate([0.3, 0.0], [0.0, 0.0], n_steps=5)
    assert tr.status == ["solved"] * 5
    np.testing.assert_allclose(tr.v, 0.0, atol=1e-8)
    np.testing.assert_allclose(tr.q[-1], [0.3, 0.0], atol=1e-9)
    np.testing.assert_allclose(tr.forces[:, 0, 0], 2.0 * G, atol=1e-6)
    np.testing.assert_allclose(tr.forces[:, 0, 1:], 0.0, atol=1e-6)


@pytest.mark.parametrize("method", ["pgm", "ipopt", "mdp"])
def test_sliding_point_mass_maximal_dissipation_closed_form(pm, method):
    # A constant pyramid (|Ft| <= mu Fn, Fn <= 100 N) is not complementary with the gap: maximal
    # dissipation minimizes (vx - a mu Fn)^2 + (a (Fn - m g))^2 (a = h / m, sliding), so
    # Fn = (mu vx + a m g) / (a (1 + mu^2)) (here 95.7 N < 100 N) and Ft = -mu Fn.
    h, v0, m, mu = 0.01, 1.0, 2.0, 0.5
    a = h / m
    fn = (mu * v0 + a * m * G) / (a * (1.0 + mu ** 2))
    out = _stepper(pm, h, method, stiffness=0.0, relax=100.0).step([0.0, 0.0], [v0, 0.0])
    assert out.status is Status.SOLVED
    np.testing.assert_allclose(out.result.extras["forces"][0], [fn, -mu * fn, 0.0], atol=1e-4)
    np.testing.assert_allclose(out.v, [v0 - a * mu * fn, a * (fn - m * G)], atol=1e-6)
    np.testing.assert_allclose(out.q, h * out.v, atol=1e-12)


def test_pgm_and_ipopt_trajectories_agree_on_the_hopper():
    hp = hopper_2d()
    kw = dict(stiffness=1e6, relax=0.1, kp=[500.0, 50.0], kd=[20.0, 5.0])
    trs = {m: _stepper(hp, 0.02, m, **kw).simulate(hp.q_nominal, np.zeros(5), n_steps=5)
           for m in ("pgm", "ipopt", "ipopt-cyipopt")}
    for m, tr in trs.items():
        assert tr.status == ["solved"] * 5, m
        np.testing.assert_allclose(tr.q, trs["pgm"].q, atol=1e-6)
        np.testing.assert_allclose(tr.v, trs["pgm"].v, atol=1e-6)
    # the foot lands on its stiff polytope: the normal force grows toward the weight (m g = 107.9 N)
    fn = trs["pgm"].forces[:, 0, 0]
    assert np.all(np.diff(fn) > 0) and 0 < fn[-1] < 11.0 * G


def test_adaptive_step_on_a_stiff_contact(pm):
    # a 0.1 s frame landing on k = 1e8 N/m^2 at 3 m/s: PGM fails the full frame once and the
    # adaptive step covers it by two halves
    tr = _stepper(pm, 0.1, "pgm", stiffness=1e8, relax=0.0).simulate([0.0, 0.05], [1.0, -3.0], n_steps=3)
    assert tr.status == ["solved"] * 3
    assert max(len(r.extras["substeps"]) for r in tr.results) >= 2
    assert tr.extra("h_smallest").min() == pytest.approx(0.05)
    np.testing.assert_allclose(tr.t, [0.0, 0.1, 0.2, 0.3])
    # at rest on the spring at the end: the impulse-averaged normal force is the weight
    assert tr.forces[-1, 0, 0] == pytest.approx(2.0 * G, rel=1e-5)
    assert -1e-3 < tr.q[-1, 1] < 0.0  # penetration sqrt(m g / k) = 0.44 mm


def test_adaptive_step_halves_forced_failures(pm):
    ts = _stepper(pm, 0.04, "pgm", stiffness=0.0, relax=100.0)
    form = ts.formulation
    inner = form._substep

    def failing(system, method, q, qd, t, hh, w0, targets, tau_0):  # any substep longer than 0.015 s fails
        r = inner(system, method, q, qd, t, hh, w0, targets, tau_0)
        return {**r, "status": Status.NOT_SOLVED} if hh > 0.015 else r

    form._substep = failing
    out = ts.step([0.0, 0.0], [1.0, 0.0])
    assert out.status is Status.SOLVED
    assert out.result.extras["substeps"] == [0.01] * 4 and out.result.extras["h_smallest"] == pytest.approx(0.01)
    ref = _stepper(pm, 0.01, "pgm", stiffness=0.0, relax=100.0).simulate([0.0, 0.0], [1.0, 0.0], n_steps=4)
    np.testing.assert_allclose(out.q, ref.q[-1], atol=1e-8)  # = four frames of 0.01 s
    np.testing.assert_allclose(out.v, ref.v[-1], atol=1e-6)
    # every substep fails: the frame gives up below h_min and says so
    form._substep = lambda *a: {**inner(*a), "status": Status.NOT_SOLVED}
    ts = _stepper(pm, 0.04, "pgm", stiffness=0.0, relax=100.0, h_min=0.005)
    ts.formulation._substep = form._substep
    out = ts.step([0.0, 0.0], [1.0, 0.0])
    assert out.status is Status.NUMERICAL_ERROR and out.result.extras["substeps"] == []
    assert out.result.extras["h_smallest"] == pytest.approx(0.005)


def test_stop_and_validation(pm):
    ts = _stepper(pm, 0.01, "mdp", stiffness=0.0, relax=100.0)
    tr = ts.simulate([0.0, 0.0], [1.0, 0.0], n_steps=100, stop=lambda t, q, qd: q[0] > 0.025)
    assert "stop" in tr.stopped and tr.q[-1, 0] > 0.025 >= tr.q[-2, 0]
    for kw, name in ((dict(method="lcp"), "method"), (dict(h_min=1.0), "h_min"),
                     (dict(adaptive=1), "adaptive"), (dict(stiffness=-1.0), "stiffness"),
                     (dict(stifness=1.0), "stifness")):
        with pytest.raises(InputError) as err:
            TimeStepping(pm, 0.01, "nmdp", **kw)
        assert err.value.field == name
    with pytest.raises(InputError) as err:
        ts.simulate([0.0], [0.0, 0.0], n_steps=10)
    assert err.value.field == "q0"
    with pytest.raises(InputError, match="polytope|option"):
        TimeStepping(box_2d(), 0.01, "pyramid", **_box_poly())
    with pytest.raises(OptionError):
        TimeStepping(box_2d(), 0.01, "nmdp", solver="mdp", **_box_poly()).step([0.0, 0.1, 0.0], [0.0, 0.0, 0.0])


@pytest.mark.parametrize("formulation, solver", [("nmdp", "pgm"), ("nmdp", "ipopt"), ("mdp", None)])
def test_box_settles_on_its_polytopes_and_carries_its_weight(formulation: str, solver: str | None) -> None:
    """A 1 kg box dropped 1 mm deep onto the ground settles at the depth where s(phi) = k phi^2 carries
    m g / 2 per bottom corner (1 mm), and the step's normal impulses then sum to m g h."""
    ts = TimeStepping(box_2d(m=1.0, width=0.4, height=0.2), 0.02, formulation, solver=solver, **_box_poly())
    tr = ts.simulate([0.0, 0.1, 0.0], [0.0, 0.0, 0.0], n_steps=40)
    assert all(s is Status.SOLVED for s in tr.status)
    depth = 0.1 - tr.q[-1, 1]
    assert depth >= 1e-3 - 1e-9                                      # at least the static depth
    assert depth < (1.2e-3 if formulation == "nmdp" else 5e-3)
    assert abs(tr.q[-1, 2]) < 1e-9 and np.abs(tr.v[-1]).max() < 1e-4
    assert tr.p_n[-1].sum() == pytest.approx(G * 0.02, rel=1e-3)    # sum p_n = m g h at rest
    assert tr.p_n[-1, 2:].max() == 0.0                               # top corners carry nothing


def test_nmdp_methods_agree_step_by_step() -> None:
    """PGM and IPOPT solve the same NMDP step (the box pushed sideways while landing)."""
    run = {m: TimeStepping(box_2d(), 0.02, "nmdp", solver=m, **_box_poly()).simulate(
        [0.0, 0.249, 0.0], [0.5, -0.2, 0.0], u=[2.0, 0.0, 0.0], n_steps=10) for m in ("pgm", "ipopt")}
    np.testing.assert_allclose(run["pgm"].q, run["ipopt"].q, atol=1e-6)
    np.testing.assert_allclose(run["pgm"].p_n, run["ipopt"].p_n, atol=1e-5)


def test_mdp_equals_nmdp_for_a_point_mass_with_a_constant_polytope() -> None:
    """Linear dynamics and a pose-independent polytope: backward Euler and the frozen QP coincide;
    a push below mu m g sticks (x stays put)."""
    poly = {"stiffness": 0.0, "relax": 30.0}
    u = [0.3 * 0.5 * G, 0.0]
    a = TimeStepping(point_mass_2d(), 0.01, "nmdp", **poly).simulate([0.0, 0.0], [0.0, 0.0], u=u, n_steps=20)
    b = TimeStepping(point_mass_2d(), 0.01, "mdp", **poly).simulate([0.0, 0.0], [0.0, 0.0], u=u, n_steps=20)
    np.testing.assert_allclose(a.q, b.q, atol=1e-7)
    assert np.abs(a.q[:, 0]).max() < 1e-8                             # stiction
    assert a.p_t[-1, 0] == pytest.approx(-u[0] * 0.01, rel=1e-5)      # friction balances the push
