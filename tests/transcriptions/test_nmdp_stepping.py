"""NMDPStepping (transcriptions/nmdp_stepping.py): frame-by-frame NMDP / linearized-MDP simulation.

Physics asserted: a point mass resting on a constant pyramid polytope stays at rest with the
normal force m g; a sliding point mass decelerates by mu g per unit time (maximal dissipation on
the exact planar cone); PGM and IPOPT give the same trajectory of the hopper; the adaptive step
halves failed substeps and covers the frame exactly.
"""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.models.systems import hopper_2d, point_mass_2d
from contactmp.result import Status
from contactmp.transcriptions.nmdp_stepping import NMDPStepping

G = 9.81


@pytest.fixture(scope="module")
def pm():
    return point_mass_2d(m=2.0, mu=0.5)


@pytest.mark.parametrize("method", ["pgm", "ipopt", "mdp"])
def test_resting_point_mass_carries_its_weight(pm, method):
    # constant-magnitude polytope (k = 0, height 100 N >> m g = 19.62 N): at rest the maximal-
    # dissipation force is exactly the weight and the body does not move
    opts = {"tol_stationarity": 1e-10} if method == "pgm" else None  # PGM: to K's floor
    sim = NMDPStepping(pm, 0.01, method, stiffness=0.0, relax=100.0, solver_options=opts)
    tr = sim.simulate([0.3, 0.0], [0.0, 0.0], 0.05)
    assert tr.status == ["solved"] * 5
    np.testing.assert_allclose(tr.qd, 0.0, atol=1e-8)
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
    sim = NMDPStepping(pm, h, method, stiffness=0.0, relax=100.0)
    rec = sim.step([0.0, 0.0], [v0, 0.0], 0.0, lambda t: (np.zeros(2), np.zeros(2)))
    assert rec.status is Status.SOLVED
    np.testing.assert_allclose(rec.forces[0], [fn, -mu * fn, 0.0], atol=1e-4)
    np.testing.assert_allclose(rec.qd, [v0 - a * mu * fn, a * (fn - m * G)], atol=1e-6)
    np.testing.assert_allclose(rec.q, h * rec.qd, atol=1e-12)


def test_pgm_and_ipopt_trajectories_agree_on_the_hopper():
    hp = hopper_2d()
    kw = dict(stiffness=1e6, relax=0.1, kp=[500.0, 50.0], kd=[20.0, 5.0])
    trs = {m: NMDPStepping(hp, 0.02, m, **kw).simulate(hp.q_nominal, np.zeros(5), 0.1)
           for m in ("pgm", "ipopt", "ipopt-cyipopt")}
    for m, tr in trs.items():
        assert tr.status == ["solved"] * 5, m
        np.testing.assert_allclose(tr.q, trs["pgm"].q, atol=1e-6)
        np.testing.assert_allclose(tr.qd, trs["pgm"].qd, atol=1e-6)
    # the foot lands on its stiff polytope: the normal force grows toward the weight (m g = 107.9 N)
    fn = trs["pgm"].forces[:, 0, 0]
    assert np.all(np.diff(fn) > 0) and 0 < fn[-1] < 11.0 * G


def test_adaptive_step_on_a_stiff_contact(pm):
    # a 0.1 s frame landing on k = 1e8 N/m^2 at 3 m/s: PGM fails the full frame once and the
    # adaptive step covers it by two halves
    sim = NMDPStepping(pm, 0.1, "pgm", stiffness=1e8, relax=0.0)
    tr = sim.simulate([0.0, 0.05], [1.0, -3.0], 0.3)
    assert tr.status == ["solved"] * 3
    assert tr.substeps.max() >= 2 and tr.h_smallest.min() == pytest.approx(0.05)
    np.testing.assert_allclose(tr.t, [0.0, 0.1, 0.2, 0.3])
    # at rest on the spring at the end: the impulse-averaged normal force is the weight
    assert tr.forces[-1, 0, 0] == pytest.approx(2.0 * G, rel=1e-5)
    assert -1e-3 < tr.q[-1, 1] < 0.0  # penetration sqrt(m g / k) = 0.44 mm


def test_adaptive_step_halves_forced_failures(pm):
    sim = NMDPStepping(pm, 0.04, "pgm", stiffness=0.0, relax=100.0)
    inner = sim._solve

    def failing(q, qd, t, hh, w0, targets, tau_0=None):  # any substep longer than 0.015 s fails
        r = inner(q, qd, t, hh, w0, targets, tau_0)
        return {**r, "status": Status.NOT_SOLVED} if hh > 0.015 else r

    sim._solve = failing
    rec = sim.step([0.0, 0.0], [1.0, 0.0], 0.0, lambda t: (np.zeros(2), np.zeros(2)))
    assert rec.status is Status.SOLVED
    assert rec.substeps == [0.01] * 4 and rec.h_smallest == pytest.approx(0.01)
    ref = NMDPStepping(pm, 0.01, "pgm", stiffness=0.0, relax=100.0).simulate([0.0, 0.0], [1.0, 0.0], 0.04)
    np.testing.assert_allclose(rec.q, ref.q[-1], atol=1e-8)  # = four frames of 0.01 s
    np.testing.assert_allclose(rec.qd, ref.qd[-1], atol=1e-6)
    # every substep fails: the frame gives up below h_min and says so
    sim._solve = lambda q, qd, t, hh, w0, tg, ff=None: {**inner(q, qd, t, hh, w0, tg, ff), "status": Status.NOT_SOLVED}
    sim.h_min = 0.005
    rec = sim.step([0.0, 0.0], [1.0, 0.0], 0.0, lambda t: (np.zeros(2), np.zeros(2)))
    assert rec.status is Status.NUMERICAL_ERROR and rec.substeps == []
    assert rec.h_smallest == pytest.approx(0.005)


def test_stop_on_explode_and_validation(pm):
    sim = NMDPStepping(pm, 0.01, "mdp", stiffness=0.0, relax=100.0)
    tr = sim.simulate([0.0, 0.0], [1.0, 0.0], 1.0, stop_on_explode=lambda t, q, qd: q[0] > 0.025)
    assert "exploded" in tr.stopped and tr.q[-1, 0] > 0.025 >= tr.q[-2, 0]
    for kw, name in ((dict(h=0.0), "h"), (dict(method="lcp"), "method"), (dict(h_min=1.0), "h_min"),
                     (dict(adaptive=1), "adaptive"), (dict(stiffness=-1.0), "stiffness")):
        args = {"h": 0.01, **kw}
        with pytest.raises(InputError) as err:
            NMDPStepping(pm, **args)
        assert err.value.field == name
    with pytest.raises(InputError) as err:
        sim.simulate([0.0], [0.0, 0.0], 0.1)
    assert err.value.field == "q0"
