"""The cone's pyramid start (``ContactImplicitTO.solve(pyramid_start=...)``, on by default for the
Coulomb cone): each start solves the pyramid's transcription of the same task, then the cone from
its plan. The pyramid's transcription carries every declaration made after the build, and a
declaration it cannot carry is named, never dropped."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.models.systems import box_2d
from contactmp.result import Status
from contactmp.transcriptions.contact_implicit import ContactImplicitTO
from contactmp.transcriptions.pyramid_start import PyramidStartUnavailable, pyramid_transcription

M_, MU, G = 1.0, 0.5, 9.81


def _box(formulation: str, N: int = 8) -> ContactImplicitTO:
    """A 1 kg planar box (mu 0.5) pushed 0.5 m in 1 s from rest to rest."""
    to = ContactImplicitTO(box_2d(m=M_, width=0.4, height=0.2, mu=MU, g=G), N, 1.0 / N, formulation=formulation)
    to.set_initial_state([0.0, 0.1, 0.0], [0.0, 0.0, 0.0])
    to.set_final_state([0.5, 0.1, 0.0], [0.0, 0.0, 0.0])
    to.bound_inputs([-10.0, 0.0, 0.0], [10.0, 0.0, 0.0])
    to.minimize_effort(1.0)
    return to


def _evaluate(to: ContactImplicitTO, x: np.ndarray) -> tuple[np.ndarray, float]:
    prog = to.program
    f = ca.Function("fg", [prog.x, prog.p], [prog.g, prog.f])
    g, cost = f(x, prog.p0)
    return np.asarray(g, dtype=float).ravel(), float(cost)


def test_pyramid_transcription_is_the_pyramid_built_by_hand() -> None:
    """Same variables, bounds, rows and cost (evaluated at a random point) as the task declared
    with the pyramid directly."""
    mirror, by_hand = pyramid_transcription(_box("cone")), _box("pyramid")
    a, b = mirror.program, by_hand.program
    assert [h.name for h in a.variables] == [h.name for h in b.variables]
    assert [h.name for h in a.constraints] == [h.name for h in b.constraints]
    assert a.n_comp == b.n_comp and len(a.stage_groups) == len(b.stage_groups) == 1
    for field in ("lbx", "ubx", "x0", "lbg", "ubg"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    x = np.random.default_rng(3).standard_normal(a.n_x)
    (ga, fa), (gb, fb) = _evaluate(mirror, x), _evaluate(by_hand, x)
    np.testing.assert_array_equal(ga, gb)
    assert fa == fb


def test_cone_starts_from_the_pyramid_by_default() -> None:
    """Start i of the default cone solve is the pyramid's start i, then the cone from that plan:
    the same answer as the two phases run by hand, both phases' time and iterations in the record,
    and a plan that obeys Coulomb's law (friction within mu p_n)."""
    to = _box("cone")
    r = to.solve(starts=2)
    assert r.status is Status.SOLVED and r.comp_violation <= 1e-6
    for rec in r.starts:
        assert rec["pyramid_start"] == "used" and rec["seed_status"] is Status.SOLVED
        assert rec["time_s"] > rec["seed_time_s"] > 0.0 and rec["iterations"] > rec["seed_iterations"] > 0
    plan = _box("pyramid").solve(start_indices=[1])
    assert plan.objective == r.starts[1]["seed_objective"]
    by_hand = _box("cone").solve(plan=plan)
    assert by_hand.objective == r.starts[1]["objective"]
    assert np.all(np.abs(r.p_t) <= MU * r.p_n + 1e-8)
    np.testing.assert_allclose(r.p_n[:, :2].sum(axis=1), M_ * G * to.h, atol=1e-6)
    # and without it, the cone's own guess: no pyramid phase in the record
    cold = to.solve(starts=1, pyramid_start=False)
    assert cold.status is Status.SOLVED and "pyramid_start" not in cold.starts[0]


def test_user_declarations_are_carried_and_kept_in_step() -> None:
    """A variable, a row and a cost the user adds on the states reach the pyramid; moved bounds are
    copied on every call (same object), a new declaration rebuilds it."""
    to = _box("cone")
    prog = to.program
    reach = prog.add_variables("reach", 1, lb=0.0, ub=1.0, init=0.2)
    prog.add_constraint(to.q[to.N // 2].sym[0] - reach.sym, 0.0, 0.0, name="halfway")
    prog.add_cost(3.0 * (reach.sym - 0.3) ** 2)
    twin = pyramid_transcription(to)
    tp = twin.program
    assert tp["reach"].lb[0] == 0.0 and tp["reach"].ub[0] == 1.0 and tp["reach"].init[0] == 0.2
    assert "halfway" in {h.name for h in tp.constraints}
    x = tp.x0.copy()
    x[twin.q[to.N // 2].index] = [0.4, 0.1, 0.0]
    x[tp["reach"].index] = 0.25
    g = np.asarray(ca.Function("g", [tp.x, tp.p], [tp["halfway"].expr])(x, tp.p0)).ravel()
    assert g[0] == pytest.approx(0.15)
    to.set_initial_state([0.1, 0.1, 0.0], [0.0, 0.0, 0.0])
    to.bound_inputs([-5.0, 0.0, 0.0], [5.0, 0.0, 0.0])
    again = pyramid_transcription(to)
    assert again is twin
    np.testing.assert_array_equal(again.program["initial_q"].lb, [0.1, 0.1, 0.0])
    np.testing.assert_array_equal(again.u[0].ub, [5.0, 0.0, 0.0])
    prog.add_cost(reach.sym)
    assert pyramid_transcription(to) is not twin


def test_normal_impulses_are_shared_and_friction_variables_are_not() -> None:
    """The normal impulses mean the same in both programs: a cost on them is carried and their
    bounds are copied; moved bounds of the cone's friction variables, or a user's name that the
    pyramid's build uses, make the pyramid start unavailable, naming why."""
    to = _box("cone", N=4)
    p_n = to.steps[1].handles["p_n"]
    to.program.add_cost(1e-3 * sum(ca.sumsqr(b.handles["p_n"].sym) for b in to.steps))
    p_n.ub = np.full(p_n.size, 0.5)
    twin = pyramid_transcription(to)
    np.testing.assert_array_equal(twin.steps[1].handles["p_n"].ub, 0.5)
    assert ca.depends_on(twin.program.f, twin.steps[2].handles["p_n"].sym)
    gamma = to.steps[0].handles["gamma"]
    gamma.ub = np.full(gamma.size, 2.0)
    with pytest.raises(PyramidStartUnavailable, match="step0/gamma"):
        pyramid_transcription(to)
    clash = _box("cone", N=2)
    clash.program.add_variables("step0/beta", 1)
    with pytest.raises(PyramidStartUnavailable, match="step0/beta"):
        pyramid_transcription(clash)


def test_a_cost_on_the_cones_own_variables_is_named() -> None:
    """A cost on the cone's friction impulses has no pyramid counterpart: the default solve warns
    and starts from the cone's guess (every record says why); pyramid_start=True raises and names
    the variable."""
    to = _box("cone", N=4)
    p_t = to.steps[0].handles["p_t"]
    to.program.add_cost(1e-3 * ca.sumsqr(p_t.sym))
    with pytest.raises(PyramidStartUnavailable, match=p_t.name) as exc:
        to.solve(pyramid_start=True)
    assert exc.value.field == "pyramid_start"
    with pytest.warns(UserWarning, match="no pyramid start"):
        r = to.solve(starts=1)
    assert r.starts[0]["pyramid_start"].startswith("unavailable: pyramid_start:")
    assert "seed_status" not in r.starts[0]


@pytest.mark.parametrize("formulation, kwargs, message", [
    ("cone", {"pyramid_start": "yes"}, "True, False or None"),
    ("cone", {"pyramid_start": 1}, "True, False or None"),
    ("pyramid", {"pyramid_start": True}, "other than the pyramid"),
])
def test_bad_pyramid_start_names_the_field(formulation: str, kwargs: dict, message: str) -> None:
    with pytest.raises(InputError, match=message) as exc:
        _box(formulation, N=2).solve(**kwargs)
    assert exc.value.field == "pyramid_start"


def test_pyramid_start_with_a_plan_is_refused() -> None:
    plan = _box("pyramid", N=2).solve()
    with pytest.raises(InputError, match="plan is the start") as exc:
        _box("cone", N=2).solve(plan=plan, pyramid_start=True)
    assert exc.value.field == "pyramid_start"
