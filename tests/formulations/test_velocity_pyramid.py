"""The velocity-level pyramid step as a Program block: closed-form answers for a point mass."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.velocity_pyramid import add_velocity_pyramid_step, pyramid_generators
from contactmp.program import Program
from contactmp.solvers import solve_lcp

m, g, h = 2.0, 9.81, 0.01


def _step(v0, mu=0.3, phi=0.0, facets=4, prog=None, prefix="step"):
    prog = prog or Program("point_mass")
    st = add_velocity_pyramid_step(
        prog, M=m * np.eye(3), f=[0.0, 0.0, -m * g], v=v0, Jn=[[0, 0, 1.0]], Jt=[[1.0, 0, 0]],
        Jo=[[0, 1.0, 0]], mu=[mu], phi=[phi], h=h, facets=facets, prefix=prefix,
    )
    return prog, st


def _solve(prog):
    red = prog.to_lcp()
    res = solve_lcp(red.M, red.q, solver="lemke")
    assert res.success, res.message
    return red.invert(res.x)


@pytest.mark.parametrize("facets", [4, 8, 16])
def test_sliding_point_mass_decelerates_by_mu_g(facets):
    mu = 0.3
    prog, st = _step([1.0, 0.0, 0.0], mu=mu, facets=facets)
    x = _solve(prog)
    # sliding along a generator-symmetric direction: v+ = v - mu g h along t, normal impulse m g h
    np.testing.assert_allclose(prog.value(st.p_n, x), [m * g * h], atol=1e-12)
    v = prog.value(st.v_next, x)
    # polygons circumscribe the disk: along t (a facet normal for k = 4, 8, 16) friction is mu c_n
    np.testing.assert_allclose(v, [1.0 - mu * g * h, 0.0, 0.0], atol=1e-12)


def test_resting_mass_normal_impulse_equals_weight():
    prog, st = _step([0.0, 0.0, 0.0])
    x = _solve(prog)
    np.testing.assert_allclose(prog.value(st.p_n, x), [m * g * h], atol=1e-12)
    np.testing.assert_allclose(prog.value(st.v_next, x), 0.0, atol=1e-12)
    np.testing.assert_allclose(prog.value(st.beta, x), 0.0, atol=1e-12)


def test_slow_mass_sticks_within_the_step():
    v0 = 0.01  # below mu g h = 0.0294: friction stops it within the step
    prog, st = _step([v0, 0.0, 0.0])
    x = _solve(prog)
    np.testing.assert_allclose(prog.value(st.v_next, x), 0.0, atol=1e-12)
    F = st.friction_impulse(prog.value(st.beta, x))
    np.testing.assert_allclose(F[0], [-m * v0, 0.0], atol=1e-12)


def test_separated_mass_falls_freely():
    prog, st = _step([0.0, 0.0, 0.0], phi=0.1)
    x = _solve(prog)
    np.testing.assert_allclose(prog.value(st.p_n, x), 0.0, atol=1e-12)
    np.testing.assert_allclose(prog.value(st.v_next, x), [0, 0, -g * h], atol=1e-12)


def test_blocks_stack_over_steps():
    prog, s1 = _step([1.0, 0.0, 0.0], prefix="k0")
    _, s2 = _step(s1.v_next.sym, prog=prog, prefix="k1")
    assert set(prog.blocks) >= {"k0", "k1"}
    x = _solve(prog)
    np.testing.assert_allclose(prog.value(s2.v_next, x), [1.0 - 2 * 0.3 * g * h, 0, 0], atol=1e-12)


def test_generators_circumscribe_the_disk():
    for k in (3, 4, 7, 16):
        G = pyramid_generators(k)
        # every edge midpoint lies on the unit circle: the polygon touches the disk from outside
        mid = 0.5 * (G + np.roll(G, -1, axis=0))
        np.testing.assert_allclose(np.linalg.norm(mid, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.abs(pyramid_generators(4)), 1.0, atol=1e-12)  # the (+-1, +-1) square


def test_bad_input_names_the_field():
    with pytest.raises(InputError, match="mu"):
        _step([0, 0, 0], mu=-0.1)
    with pytest.raises(InputError, match="facets"):
        _step([0, 0, 0], facets=2)
    with pytest.raises(InputError, match="M"):
        add_velocity_pyramid_step(Program(), M=-np.eye(3), f=[0, 0, 0], v=[0, 0, 0], Jn=[[0, 0, 1.0]],
                                  Jt=[[1.0, 0, 0]], Jo=[[0, 1.0, 0]], mu=[0.1], phi=[0.0], h=h)


@pytest.mark.parametrize("strategy", ["scholtes", "elastic_l1", "direct"])
def test_ipopt_on_the_program_matches_lemke(strategy):
    from contactmp.solvers.nlp.solve import solve_program

    prog, st = _step([1.0, 0.0, 0.0])
    res = solve_program(prog, strategy=strategy)
    assert res.success, res.message
    np.testing.assert_allclose(res.value(st.v_next), [1.0 - 0.3 * g * h, 0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(res.value(st.p_n), [m * g * h], atol=1e-7)
