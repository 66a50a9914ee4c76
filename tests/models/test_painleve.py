"""Painleve's sliding rod and Lotstedt's resting rod: the ContactModel against the closed forms, and
the number of LCP solutions (complete enumeration, physical forces) against the region formulas."""
from __future__ import annotations

import math

import numpy as np
import pytest

from contactmp.case_studies.uniqueness_random import physical_solutions
from contactmp.errors import InputError
from contactmp.formulations.pyramid_lcp import PyramidLCP, proposition3_mu_bound
from contactmp.models.painleve import (
    RodState,
    closed_form_count,
    closed_form_solutions,
    lotstedt_rod,
    painleve_min_mu,
    painleve_mu,
    painleve_rod,
    rod,
    rod_matrices,
    spin_angle,
    stick_mu,
    three_solution_mu,
)
from contactmp.models.rigid_bodies import GRAVITY
from contactmp.solvers.lcp.certificates import enumerate_lcp_solutions

PULL = (-1.0, 1.1)  # b_n = 0.1 g, b_t = -g: rho = 10


def proven(st: RodState) -> tuple[np.ndarray, bool, PyramidLCP]:
    """Distinct physical forces of the rod's pyramid LCP by complete enumeration."""
    form = PyramidLCP(rod(st))
    enum = enumerate_lcp_solutions(form.M, form.q)
    phys = physical_solutions(form, enum)
    for z in phys.z_points:  # every solution satisfies the model's conditions
        res = form.check(form.solution(z))
        assert max(res.values()) < 1e-8, res
    return phys.forces, phys.force_continuum, form


def assert_matches_closed_form(st: RodState) -> int:
    forces, cont, _ = proven(st)
    assert not cont
    cf = closed_form_solutions(st)
    assert len(forces) == len(cf)
    want = sorted((s.c_n, s.c_t) for s in cf)
    got = sorted((f[0], f[1]) for f in forces)
    for (wn, wt), (gn, gt) in zip(want, got):
        assert gn == pytest.approx(wn, rel=1e-9, abs=1e-9) and gt == pytest.approx(wt, rel=1e-9, abs=1e-9)
    assert all(abs(f[2]) < 1e-12 for f in forces)  # c_o = 0: the o direction decouples
    return len(forces)


@pytest.mark.parametrize("theta_deg", [10.0, 37.0, 63.0, 80.0])
@pytest.mark.parametrize("kw", [{}, {"omega": 3.0, "v_t": -0.5}, {"pull": (0.4, 0.3)}, {"inertia": 0.2, "mass": 2.0}])
def test_model_matrices_are_the_closed_form(theta_deg: float, kw: dict) -> None:
    st = RodState(math.radians(theta_deg), 0.7, **kw).checked()
    m = rod(st)
    kappa = st.mass * st.length ** 2 / (4 * st.inertia)
    A = rod_matrices(st.theta, st.mass, kappa)
    assert np.allclose(m.A[np.ix_([0, 1], [0, 1])], A, atol=1e-12)
    assert m.A[2, 2] == pytest.approx((1 + kappa) / st.mass)  # o decouples
    assert abs(m.A[0, 2]) < 1e-12 and abs(m.A[1, 2]) < 1e-12
    assert np.allclose(m.b, [*st.bias, 0.0], atol=1e-12)
    assert np.allclose(m.v, [0.0, st.v_t, 0.0], atol=1e-12)  # (7): v_n = 0; the end moves with v_t
    assert (m.sliding.tolist(), m.rolling.tolist()) == (([0], []) if st.v_t else ([], [0]))


def test_painleve_critical_friction_minimum() -> None:
    mu_min, th_min = painleve_min_mu()
    assert mu_min == pytest.approx(4.0 / 3.0) and math.tan(th_min) == pytest.approx(2.0)
    th = np.linspace(0.01, math.pi / 2 - 0.01, 20001)
    vals = painleve_mu(th)
    assert vals.min() == pytest.approx(4.0 / 3.0, abs=1e-6)
    assert math.degrees(th[np.argmin(vals)]) == pytest.approx(63.4349, abs=0.01)
    # and A_eff = (1 + 3 c (c - mu s)) / m changes sign exactly at mu_P (the sliding row of the LCP)
    for theta in (0.5, 1.1, 1.3):
        for mu, sign in ((0.99 * painleve_mu(theta), 1), (1.01 * painleve_mu(theta), -1)):
            form = PyramidLCP(painleve_rod(theta, mu))
            assert np.sign(form.M[0, 0]) == sign
            s, c = math.sin(theta), math.cos(theta)
            assert form.M[0, 0] == pytest.approx(1 + 3 * c * (c - mu * s))


@pytest.mark.parametrize("theta_deg", [20.0, 45.0, 63.43, 75.0])
def test_sliding_rod_counts(theta_deg: float) -> None:
    th = math.radians(theta_deg)
    mp = painleve_mu(th)
    omega = 8.0  # omega^2 l/2 sin(theta) > g for theta > 17.9 deg: b_n > 0
    assert spin_angle(omega) < math.radians(20.0)
    cases = [
        (RodState(th, 0.8 * mp, v_t=-1.0), 1),               # below mu_P: one
        (RodState(th, 1.2 * mp, v_t=-1.0), 0),               # Painleve: inconsistent
        (RodState(th, 1.2 * mp, v_t=-1.0, omega=omega), 2),  # Painleve: indeterminate
        (RodState(th, 0.8 * mp, v_t=-1.0, omega=omega), 1),  # lifts off
        (RodState(th, 1.5 * mp, v_t=+1.0), 1),               # the other sliding direction: always one
    ]
    for st, n in cases:
        assert closed_form_count(st) == n
        assert assert_matches_closed_form(st) == n


def test_sliding_rod_indeterminate_solutions_are_lift_off_and_sliding() -> None:
    th = math.radians(60.0)
    st = RodState(th, 2.0, v_t=-1.0, omega=6.0)
    b_n, _ = st.bias
    s, c = math.sin(th), math.cos(th)
    a_eff = 1 + 3 * c * (c - 2.0 * s)
    assert a_eff < 0 < b_n
    sols = {s_.mode: s_ for s_ in closed_form_solutions(st)}
    assert set(sols) == {"separation", "sliding"}
    assert sols["sliding"].c_n == pytest.approx(-b_n / a_eff)
    assert sols["sliding"].c_t == pytest.approx(2.0 * sols["sliding"].c_n)  # friction opposes v_t < 0
    forces, _, _ = proven(st)
    assert sorted(f[0] for f in forces) == pytest.approx([0.0, -b_n / a_eff])


@pytest.mark.parametrize("theta_deg", [15.0, 40.0, 70.0])
def test_resting_rod_under_gravity_is_unique(theta_deg: float) -> None:
    th = math.radians(theta_deg)
    ms = stick_mu(th)
    for mu, mode in ((0.5 * ms, "slip-x"), (1.5 * ms, "sticking"), (3.0, "sticking")):
        st = RodState(th, mu)
        assert closed_form_count(st) == 1
        assert assert_matches_closed_form(st) == 1
        assert [s.mode for s in closed_form_solutions(st)] == [mode]
    # sticking force: c = -A^{-1} b with b = (-g, 0): c_n = m g (1 + 3 s^2) / 4
    sol = closed_form_solutions(RodState(th, 3.0))[0]
    assert sol.c_n == pytest.approx(GRAVITY * (1 + 3 * math.sin(th) ** 2) / 4)


@pytest.mark.parametrize("theta_deg", [40.0, 55.0, 65.0])
def test_lotstedt_three_solutions(theta_deg: float) -> None:
    th = math.radians(theta_deg)
    rho = -PULL[0] / (PULL[1] - 1.0)
    mu3 = three_solution_mu(th, rho)
    assert painleve_mu(th) < mu3 < 3.0  # inside Painleve's region
    above, below = RodState(th, 1.05 * mu3, pull=PULL), RodState(th, 0.95 * mu3, pull=PULL)
    assert closed_form_count(above) == 3 and closed_form_count(below) == 1
    assert assert_matches_closed_form(above) == 3
    assert assert_matches_closed_form(below) == 1
    assert sorted(s.mode for s in closed_form_solutions(above)) == ["separation", "slip-x", "sticking"]
    # the model's own modes of the proven solutions
    forces, _, form = proven(above)
    enum = enumerate_lcp_solutions(form.M, form.q)
    modes = {m[0] for m in physical_solutions(form, enum).modes}
    assert modes == {"breaking", "rolling", "sliding"}


def test_three_solution_threshold_tends_to_painleve() -> None:
    for theta in (0.6, 1.1071, 1.3):
        mus = [three_solution_mu(theta, rho) for rho in (20.0, 200.0, 2e5)]
        assert all(m > painleve_mu(theta) for m in mus) and mus[0] > mus[1] > mus[2]
        assert mus[-1] == pytest.approx(painleve_mu(theta), rel=1e-4)
    # no three solutions when rho kappa s c <= 1 + kappa s^2 (min of (1 + 3 s^2)/(3 s c) is 4/3)
    assert math.isinf(three_solution_mu(math.atan(0.5), 4.0 / 3.0 - 1e-6))
    assert closed_form_count(RodState(math.radians(5.0), 3.0, pull=PULL)) == 1
    assert assert_matches_closed_form(RodState(math.radians(5.0), 3.0, pull=PULL)) == 1


def test_nonuniform_rod_critical_friction() -> None:
    # a rod with its mass at the ends: I = m l^2 / 4, kappa = 1: mu_P = (1 + c^2) / (s c) >= 2 sqrt(2)
    mu_min, th_min = painleve_min_mu(1.0)
    assert mu_min == pytest.approx(2 * math.sqrt(2)) and math.tan(th_min) == pytest.approx(math.sqrt(2))
    mp = painleve_mu(th_min, 1.0)
    for factor, n in ((0.95, 1), (1.05, 0)):
        st = RodState(th_min, factor * mp, v_t=-1.0, inertia=0.25)
        assert closed_form_count(st) == n
        assert assert_matches_closed_form(st) == n


def test_prop3_bound_equals_painleve_for_the_sliding_rod() -> None:
    for theta in (0.4, 1.1, 1.4):
        fb = proposition3_mu_bound(painleve_rod(theta, 0.5))
        assert fb.mu_bar == pytest.approx(painleve_mu(theta), rel=1e-10)
        assert fb.mu_bar_unique == pytest.approx(painleve_mu(theta), rel=1e-10)
        fb_r = proposition3_mu_bound(lotstedt_rod(theta, 0.5))
        assert math.isinf(fb_r.mu_bar) and 0 < fb_r.mu_bar_unique < stick_mu(theta) + 1.0


def test_input_errors() -> None:
    with pytest.raises(InputError, match="theta"):
        rod(RodState(0.0, 0.5))
    with pytest.raises(InputError, match="theta"):
        rod(RodState(math.pi / 2, 0.5))
    with pytest.raises(InputError, match="mu"):
        rod(RodState(0.5, -0.1))
    with pytest.raises(InputError, match="v_t"):
        painleve_rod(0.5, 0.5, v_t=0.0)
    with pytest.raises(InputError, match="pull"):
        rod(RodState(0.5, 0.5, pull=(1.0,)))
    with pytest.raises(InputError, match="state"):
        closed_form_count(RodState(0.5, 0.5, omega=5.0))  # resting end with b_t > 0: not a covered case
