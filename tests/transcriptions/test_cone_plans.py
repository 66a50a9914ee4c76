"""Coulomb-cone plans: the NLP bounds the disk-form directions |w_i| <= 1.5 (above the 1 that the
disk side 1 - |w|^2 >= 0 implies), so a rest-to-rest cone plan converges and obeys Coulomb's law;
the largest gap at which a plan's force acts is measured from the plan itself; and a cone solve
starts from the pyramid's plan by default (the tests at the end)."""
from __future__ import annotations

import dataclasses
import math

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.models.systems import box_2d, point_mass_2d
from contactmp.result import Status
from contactmp.solvers.nlp.mpcc import CONE_BOUND, relaxation
from contactmp.solvers.nlp.solve import NLPOptions
from contactmp.transcriptions.contact_implicit import ContactImplicitTO, TOResult
from contactmp.transcriptions.pyramid_start import PyramidStartUnavailable, pyramid_transcription

M_, MU, G = 1.0, 0.5, 9.81


def _box_rest_to_rest(formulation: str, N: int = 10) -> ContactImplicitTO:
    """A 1 kg planar box (mu 0.5) pushed 0.5 m in 1 s from rest to rest: v_N = 0 fixes every corner's
    velocity at the last step (the cone's direction rows there read gamma w = 0)."""
    to = ContactImplicitTO(box_2d(m=M_, width=0.4, height=0.2, mu=MU, g=G), N, 1.0 / N, formulation=formulation)
    to.set_initial_state([0.0, 0.1, 0.0], [0.0, 0.0, 0.0])
    to.set_final_state([0.5, 0.1, 0.0], [0.0, 0.0, 0.0])
    to.bound_inputs([-10.0, 0.0, 0.0], [10.0, 0.0, 0.0])
    to.minimize_effort(1.0)
    return to


def test_relaxation_bounds_cone_directions() -> None:
    to = _box_rest_to_rest("cone", N=2)
    prog = to.program
    w = np.concatenate([np.arange(c.w.index.start, c.w.index.stop) for c in prog.cones])
    assert w.size == 2 * 4  # two steps, four corners, one tangent (planar)
    assert np.all(np.isinf(prog.lbx[w])) and np.all(np.isinf(prog.ubx[w]))  # the MPCC's own w is free
    assert CONE_BOUND == NLPOptions().cone_bound == 1.5
    others = np.setdiff1d(np.arange(prog.n_x), w)
    for strategy in ("scholtes", "elastic_l1", "fischer_burmeister", "scholtes_linf", "direct"):
        for kw, r in (({}, CONE_BOUND), ({"cone_bound": 1.0}, 1.0), ({"cone_bound": 4}, 4.0)):
            lbx, ubx, _, _ = relaxation(prog, strategy, 1.0, **kw).bounds()
            np.testing.assert_array_equal(lbx[w], -r)
            np.testing.assert_array_equal(ubx[w], r)
            np.testing.assert_array_equal(lbx[others], prog.lbx[others])  # nothing else moves
            np.testing.assert_array_equal(ubx[others], prog.ubx[others])
    # without sign rows the disk side is not kept >= 0, so nothing implies |w_i| <= 1: no bounds
    for kw in ({"sign_constraints": False}, {"cone_bounds": False}):
        lbx, ubx, _, _ = relaxation(prog, "scholtes", 1.0, **kw).bounds()
        assert np.all(np.isinf(lbx[w])) and np.all(np.isinf(ubx[w]))


@pytest.mark.parametrize("bad", [0.5, 0.999, math.inf, math.nan, True, "1.5"])
def test_cone_bound_below_the_disk_is_refused(bad: object) -> None:
    """A box narrower than the disk would cut feasible points: refused, naming the option."""
    with pytest.raises(OptionError, match="cone_bound"):
        NLPOptions(cone_bound=bad).check()
    with pytest.raises(InputError, match="cone_bound"):
        relaxation(_box_rest_to_rest("cone", N=2).program, "scholtes", 1.0, cone_bound=bad)


def test_cone_box_rest_to_rest_is_coulomb() -> None:
    """The rest-to-rest cone box (every corner's direction row degenerate at the last step) converges
    with the default strategy and is Coulomb: the bottom corners carry the weight, friction inside the
    segment, exactly mu m g h against the motion while both slide. The cone's program alone, from its
    own guess (``pyramid_start=False``): the direction bounds, not the pyramid's plan, carry it."""
    to = _box_rest_to_rest("cone")
    r = to.solve(starts=1, pyramid_start=False)
    assert r.status is Status.SOLVED and r.comp_violation <= 1e-6
    h = to.h
    np.testing.assert_allclose(r.q[-1], [0.5, 0.1, 0.0], atol=1e-6)
    np.testing.assert_allclose(r.v[-1], 0.0, atol=1e-8)
    np.testing.assert_allclose(r.p_n[:, :2].sum(axis=1), M_ * G * h, atol=1e-6)
    np.testing.assert_allclose(r.p_n[:, 2:], 0.0, atol=1e-8)
    assert np.all(np.abs(r.p_t) <= MU * r.p_n + 1e-8)
    vx = r.v[1:, 0]
    slide = np.abs(vx) > 1e-4
    assert slide.sum() >= 5
    np.testing.assert_allclose(r.p_t[slide, :2].sum(axis=1), -MU * M_ * G * h * np.sign(vx[slide]), atol=1e-6)
    # the pyramid (k = 4: the exact segment in the plane) plans the same law: no better optimum
    rp = _box_rest_to_rest("pyramid").solve(starts=1)
    assert rp.status is Status.SOLVED
    assert r.objective >= rp.objective - 1e-6 * rp.objective or math.isclose(r.objective, rp.objective, rel_tol=1e-3)


def _fake_plan(to: ContactImplicitTO, z: np.ndarray, p_n: np.ndarray) -> TOResult:
    """A TOResult of the point mass with heights ``z`` (N+1) and normal impulses ``p_n`` (N)."""
    N = to.N
    q = np.column_stack([np.linspace(0.0, 1.0, N + 1), z])
    zeros = np.zeros((N, 1))
    return TOResult(t=to.h * np.arange(N + 1), q=q, v=np.zeros((N + 1, 2)), u=np.zeros((N, 2)),
                    p_n=p_n.reshape(N, 1), p_t=zeros, p_o=zeros, status=Status.SOLVED, objective=0.0,
                    comp_violation=0.0, constraint_violation=0.0, best=0)


def test_force_gap_is_the_gap_at_the_step_end() -> None:
    to = ContactImplicitTO(point_mass_2d(), 4, 0.1)
    z = np.array([0.0, 2e-3, 0.0, 5e-3, 1e-2])
    # impulses act in steps 0 and 1 (ending at z = 2 mm and 0), not in 2 (ends at 5 mm, p_n below
    # the threshold 1e-6 max(1, max p_n)) nor 3
    plan = _fake_plan(to, z, np.array([0.3, 0.5, 1e-9, 0.0]))
    fg = to.force_gap(plan)
    assert fg["step"] == 0 and fg["contact"] == 0 and fg["forces"] == 2
    assert fg["gap"] == pytest.approx(2e-3) and fg["impulse"] == pytest.approx(0.3)
    # with the threshold at 0, the tiny impulse of step 2 counts (its step ends 5 mm up)
    assert to.force_gap(plan, impulse_tol=0.0)["gap"] == pytest.approx(5e-3)
    none = to.force_gap(_fake_plan(to, z, np.zeros(4)))
    assert none["gap"] == -math.inf and none["step"] is None and none["forces"] == 0
    with pytest.raises(InputError, match="impulse_tol"):
        to.force_gap(plan, impulse_tol=-1.0)


def test_pyramid_plan_seeds_the_planar_cone() -> None:
    """In the plane the two-facet pyramid is Coulomb's law, so its plan is a feasible point of the
    cone's program with the same cost (``guess_from``: rows and pairs to rounding, here <= 1e-10 for
    impulses of order m g h = 0.98), and a cone solve started there ends no worse than the pyramid
    (the unseeded cone start ends at another local optimum, 25.166 against 25.069)."""
    rp = _box_rest_to_rest("pyramid").solve(starts=1)
    assert rp.status is Status.SOLVED
    to = _box_rest_to_rest("cone")
    x = to.guess_from(rp)
    res = to.program.residuals(x)
    assert res["constraint"] <= 1e-10 and res["comp_min"] <= 1e-10 and res["bound"] == 0.0
    assert math.isclose(res["objective"], rp.objective, rel_tol=1e-12)
    seeded = to.solve(plan=rp)
    assert seeded.status is Status.SOLVED and seeded.comp_violation <= 1e-6
    assert seeded.objective <= rp.objective * (1 + 1e-6)
    np.testing.assert_allclose(seeded.q[-1], [0.5, 0.1, 0.0], atol=1e-6)


def test_guess_from_refuses_a_plan_of_another_task() -> None:
    rp = _box_rest_to_rest("pyramid", N=4).solve(starts=1)
    with pytest.raises(InputError, match=r"plan\.t: must have shape \(6,\)"):
        _box_rest_to_rest("cone", N=5).guess_from(rp)
    with pytest.raises(InputError, match="plan"):
        _box_rest_to_rest("cone", N=4).guess_from(rp.q)  # type: ignore[arg-type]


def test_guess_from_names_each_bad_field() -> None:
    """A plan of another step length, a NaN, an o impulse in the plane, a bad ``tol``: each an
    InputError naming the field."""
    to = _box_rest_to_rest("pyramid", N=3)
    rp = to.solve(starts=1)
    cone = _box_rest_to_rest("cone", N=3)
    cone.guess_from(rp)  # the plan itself is fine
    bad_t = dataclasses.replace(rp, t=0.5 * rp.t)
    with pytest.raises(InputError, match=r"plan\.t"):
        cone.guess_from(bad_t)
    q = rp.q.copy()
    q[1, 2] = np.nan
    with pytest.raises(InputError, match=r"plan\.q.*\(1, 2\)"):
        cone.guess_from(dataclasses.replace(rp, q=q))
    with pytest.raises(InputError, match=r"plan\.p_o"):
        cone.guess_from(dataclasses.replace(rp, p_o=rp.p_o + 1.0))
    for tol in (-1.0, math.nan, True):
        with pytest.raises(InputError, match="tol"):
            cone.guess_from(rp, tol=tol)


def test_guess_from_reads_mu_as_the_rows_do() -> None:
    """With ``mu`` a model parameter changed after the build, a sticking contact's direction is
    ``p_t / (mu p_n)`` with the program's ``mu``, so the friction rows ``p_t = mu p_n w`` hold at
    the guess."""
    to = ContactImplicitTO(point_mass_2d(mu=0.5), 2, 0.1, formulation="cone", model_parameters=["mu"])
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.program["param/mu"].value = np.array([0.25])
    zeros = np.zeros((2, 1))
    plan = TOResult(t=to.h * np.arange(3), q=np.zeros((3, 2)), v=np.zeros((3, 2)), u=np.zeros((2, 2)),
                    p_n=np.ones((2, 1)), p_t=np.full((2, 1), 0.2), p_o=zeros, status=Status.SOLVED,
                    objective=0.0, comp_violation=0.0, constraint_violation=0.0, best=0)
    x = to.guess_from(plan)
    w = np.concatenate([x[c.w.index] for c in to.program.cones])
    np.testing.assert_allclose(w, 0.2 / 0.25, rtol=1e-15)


# --------------------------------------------------------------- the cone's pyramid start (solve's default)
# Each start of a cone solve solves the pyramid's transcription of the same task, then the cone from
# its plan (ContactImplicitTO.solve(pyramid_start=...)). The pyramid's transcription carries every
# declaration made after the build, and a declaration it cannot carry is named, never dropped.


def _evaluate(to: ContactImplicitTO, x: np.ndarray) -> tuple[np.ndarray, float]:
    prog = to.program
    f = ca.Function("fg", [prog.x, prog.p], [prog.g, prog.f])
    g, cost = f(x, prog.p0)
    return np.asarray(g, dtype=float).ravel(), float(cost)


def test_pyramid_transcription_is_the_pyramid_built_by_hand() -> None:
    """Same variables, bounds, rows and cost (evaluated at a random point) as the task declared
    with the pyramid directly."""
    mirror, by_hand = pyramid_transcription(_box_rest_to_rest("cone", N=8)), _box_rest_to_rest("pyramid", N=8)
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
    to = _box_rest_to_rest("cone", N=8)
    r = to.solve(starts=2)
    assert r.status is Status.SOLVED and r.comp_violation <= 1e-6
    for rec in r.starts:
        assert rec["pyramid_start"] == "used" and rec["seed_status"] is Status.SOLVED
        assert rec["time_s"] > rec["seed_time_s"] > 0.0 and rec["iterations"] > rec["seed_iterations"] > 0
    plan = _box_rest_to_rest("pyramid", N=8).solve(start_indices=[1])
    assert plan.objective == r.starts[1]["seed_objective"]
    by_hand = _box_rest_to_rest("cone", N=8).solve(plan=plan)
    assert by_hand.objective == r.starts[1]["objective"]
    assert np.all(np.abs(r.p_t) <= MU * r.p_n + 1e-8)
    np.testing.assert_allclose(r.p_n[:, :2].sum(axis=1), M_ * G * to.h, atol=1e-6)
    # and without it, the cone's own guess: no pyramid phase in the record
    cold = to.solve(starts=1, pyramid_start=False)
    assert cold.status is Status.SOLVED and "pyramid_start" not in cold.starts[0]


def test_user_declarations_are_carried_and_kept_in_step() -> None:
    """A variable, a row and a cost the user adds on the states reach the pyramid; moved bounds are
    copied on every call (same object), a new declaration rebuilds it."""
    to = _box_rest_to_rest("cone", N=8)
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
    to = _box_rest_to_rest("cone", N=4)
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
    clash = _box_rest_to_rest("cone", N=2)
    clash.program.add_variables("step0/beta", 1)
    with pytest.raises(PyramidStartUnavailable, match="step0/beta"):
        pyramid_transcription(clash)


def test_a_cost_on_the_cones_own_variables_is_named() -> None:
    """A cost on the cone's friction impulses has no pyramid counterpart: the default solve warns
    and starts from the cone's guess (every record says why); pyramid_start=True raises and names
    the variable."""
    to = _box_rest_to_rest("cone", N=4)
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
        _box_rest_to_rest(formulation, N=2).solve(**kwargs)
    assert exc.value.field == "pyramid_start"


def test_pyramid_start_with_a_plan_is_refused() -> None:
    plan = _box_rest_to_rest("pyramid", N=2).solve()
    with pytest.raises(InputError, match="plan is the start") as exc:
        _box_rest_to_rest("cone", N=2).solve(plan=plan, pyramid_start=True)
    assert exc.value.field == "pyramid_start"
