"""Receding-horizon re-solves: the shifted guess, the moved initial state, and a warm re-solve that is
verified and cheaper than a cold solve of the same shifted problem."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.case_studies import _cito
from contactmp.errors import InputError
from contactmp.models.systems import point_mass_2d
from contactmp.result import Status
from contactmp.transcriptions.contact_implicit import ContactImplicitTO
from contactmp.transcriptions.receding_horizon import RecedingHorizon, shift_indices


def _push(formulation: str = "pyramid", N: int = 8, lift_sides: bool = False) -> ContactImplicitTO:
    to = ContactImplicitTO(point_mass_2d(m=1.0, mu=0.5), N, 0.05, formulation=formulation, lift_sides=lift_sides)
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.2, 0.0], [0.0, 0.0])
    to.bound_inputs([-20.0, 0.0], [20.0, 0.0])
    to.minimize_effort(1.0)
    return to


@pytest.mark.parametrize("formulation, lift_sides", [("pyramid", False), ("cone", False), ("nmdp", False),
                                                     ("cone", True)])
def test_shift_moves_every_knot_one_step_and_holds_the_last(formulation: str, lift_sides: bool) -> None:
    to = _push(formulation, lift_sides=lift_sides)
    prog, N = to.program, to.N
    x = np.arange(prog.n_x, dtype=float)  # every entry tells where it came from
    xs = x[shift_indices(to)]
    for k in range(N + 1):
        j = min(k + 1, N)
        np.testing.assert_array_equal(prog.value(to.q[k], xs), prog.value(to.q[j], x))
        np.testing.assert_array_equal(prog.value(to.v[k], xs), prog.value(to.v[j], x))
    for k in range(N):
        j = min(k + 1, N - 1)
        np.testing.assert_array_equal(prog.value(to.u[k], xs), prog.value(to.u[j], x))
        here = [h for h in prog.blocks[f"step{k}"].variables if h is not to.v[k + 1]]
        there = [h for h in prog.blocks[f"step{j}"].variables if h is not to.v[j + 1]]
        assert here and [h.name.split("/", 1)[1] for h in here] == [h.name.split("/", 1)[1] for h in there]
        for a, b in zip(here, there):
            np.testing.assert_array_equal(prog.value(a, xs), prog.value(b, x))
    # every variable is a state, an input or belongs to a step: all of them moved but the last knot's
    last = {i for h in (to.q[N], to.v[N], to.u[N - 1], *prog.blocks[f"step{N - 1}"].variables)
            for i in range(h.index.start, h.index.stop)}
    moved = np.flatnonzero(shift_indices(to) != np.arange(prog.n_x))
    assert set(moved.tolist()) == set(range(prog.n_x)) - last


def test_needs_an_initial_state_and_a_solved_plan() -> None:
    to = ContactImplicitTO(point_mass_2d(), 4, 0.05)
    to.set_initial_state([0.0, 0.0])  # q only: the state of a re-solve is (q, v)
    with pytest.raises(InputError, match="initial_v"):
        RecedingHorizon(to)
    with pytest.raises(InputError):
        RecedingHorizon(object())  # type: ignore[arg-type]
    rh = RecedingHorizon(_push())
    with pytest.raises(InputError, match="solve"):
        rh.advance()
    with pytest.raises(InputError):
        rh.shifted(np.zeros(3))


def test_the_program_is_not_rebuilt_between_re_solves() -> None:
    to = _push(N=10)
    rh = RecedingHorizon(to, certify=False)
    n = (to.program.n_x, to.program.n_g, to.program.n_comp)
    first = rh.solve()
    assert first.status is Status.SOLVED
    rh.advance()
    engines = dict(to.program._cache["solve_program_engines"])  # the IPOPT objects of cold and warm options
    assert len(engines) == 2
    second = rh.advance()
    rh.solve(keep=False)
    assert second.status is Status.SOLVED and rh.shift == 2
    assert (to.program.n_x, to.program.n_g, to.program.n_comp) == n
    after = to.program._cache["solve_program_engines"]
    assert set(after) == set(engines) and all(after[k] is engines[k] for k in engines)
    # the task's initial guess now starts at the moved state
    q0, v0 = rh.initial_state
    np.testing.assert_array_equal(to.program.value(to.q[0], to.initial_guess()), q0)
    np.testing.assert_array_equal(to.program.value(to.v[0], to.initial_guess()), v0)


# (the hopper takes 25-50 s: marked slow, the box covers the same behaviour in a few seconds)
@pytest.mark.parametrize("task", ["box", pytest.param("hopper", marks=pytest.mark.slow)])
def test_warm_re_solve_is_verified_starts_at_the_shifted_state_and_beats_cold(task: str) -> None:
    t = _cito.TASKS[task]
    to = t.build("pyramid", True)
    rh = RecedingHorizon(to, **dict(t.options))
    plan = rh.solve()
    assert plan.status is Status.SOLVED
    q1, v1 = plan.q[1].copy(), plan.v[1].copy()
    warm = rh.advance()
    # the imposed initial state is the plan's knot 1, bit for bit; the trajectory meets it to IPOPT's tolerance
    q0, v0 = rh.initial_state
    np.testing.assert_array_equal(q0, q1)
    np.testing.assert_array_equal(v0, v1)
    np.testing.assert_allclose(warm.q[0], q1, rtol=0, atol=1e-8)
    np.testing.assert_allclose(warm.v[0], v1, rtol=0, atol=1e-8)
    assert warm.status is Status.SOLVED and warm.comp_violation <= _cito.COMP_TOL
    assert rh.plan is warm
    cold = rh.solve(keep=False)  # the same shifted problem from ContactImplicitTO.initial_guess
    assert cold.status is Status.SOLVED and rh.plan is warm
    w, c = rh.records[-2], rh.records[-1]
    assert w.warm and not c.warm and w.shift == c.shift == 1
    assert w.iterations < c.iterations, (w, c)


def test_elastic_l1_warm_re_solve_is_one_nlp_at_the_last_penalty() -> None:
    """With elastic l1 the default warm re-solve starts its homotopy one penalty step below rho_max
    (warm_changes): at most two NLPs, the second at the penalty where a cold solve ends; verified,
    cheaper than cold."""
    from contactmp.transcriptions.receding_horizon import WARM_START, warm_changes

    to = _push(N=10)
    rh = RecedingHorizon(to, strategy="elastic_l1", polish=False, certify=False, rho_max=1e6)
    assert rh.warm_options.rho0 == rh.warm_options.rho_max / rh.warm_options.rho_factor == 1e5
    assert warm_changes("scholtes", rh.options) == WARM_START
    plan = rh.solve()
    assert plan.status is Status.SOLVED
    warm = rh.advance()
    assert warm.status is Status.SOLVED and warm.comp_violation <= 1e-8
    assert [h["rho"] for h in warm.result.extras["homotopy"]] in ([1e5], [1e5, 1e6])
    cold = rh.solve(keep=False)
    assert cold.status is Status.SOLVED
    assert rh.records[-2].iterations < rh.records[-1].iterations
