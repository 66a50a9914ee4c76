"""The ``gap="position"`` option of the velocity-level formulations: the non-penetration side is
the gap at the step's end, ``phi(q + h qdot(q, v+)) / h``, not its first-order expansion."""
from __future__ import annotations

import warnings

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.base import Step, formulation
from contactmp.models.systems import box_2d
from contactmp.result import Status
from contactmp.transcriptions.contact_implicit import ContactImplicitTO
from contactmp.transcriptions.time_stepping import PhysicsWarning, TimeStepping


def _spinning_box() -> tuple[object, np.ndarray, np.ndarray]:
    """A box_2d resting on its bottom face, spinning."""
    s = box_2d(width=1.0, height=0.5, mu=0.5)
    return s, np.array([0.0, 0.25, 0.0]), np.array([0.0, 0.0, 6.0])


def _pushed_box(formulation: str, N: int, distance: float) -> tuple[object, ContactImplicitTO]:
    """A box_2d (0.4 x 0.2 m, mu = 0.8) pushed ``distance`` along the ground in ``N`` steps of
    0.05 s, rest to rest, by forces at its center (no torque), with the position gap."""
    s = box_2d(width=0.4, height=0.2, mu=0.8)
    to = ContactImplicitTO(s, N, 0.05, formulation=formulation, gap="position")
    to.set_initial_state([0.0, 0.1, 0.0], [0.0, 0.0, 0.0])
    to.set_final_state([distance, 0.1, 0.0], [0.0, 0.0, 0.0])
    to.bound_inputs([-20.0, -20.0, 0.0], [20.0, 20.0, 0.0])
    to.minimize_effort(1.0)
    return s, to


@pytest.mark.parametrize("name", ["pyramid", "cone"])
def test_gap_option_is_checked(name: str) -> None:
    with pytest.raises(InputError, match="gap"):
        formulation(name, gap="exact")
    with pytest.raises(InputError, match="gap"):
        formulation(name, gap="position", gap_stabilization=False)
    assert formulation(name, gap="position").options.gap == "position"


def test_end_gap_rate_is_the_gap_after_the_explicit_kinematics() -> None:
    s, q, v = _spinning_box()
    h = 0.05
    v_next = np.array([0.3, -0.2, 4.0])
    rate = np.asarray(Step(s, h, q, v, np.zeros(3)).end_gap_rate(v_next), dtype=float).ravel()
    np.testing.assert_allclose(rate, s.eval_phi(q + h * s.eval_qdot(q, v_next)) / h, rtol=0, atol=1e-12)
    # symbolic in v+: the same function, and its Jacobian at h -> 0 is Jn (first order)
    vs = ca.SX.sym("v", 3)
    expr = Step(s, 1e-7, q, v, np.zeros(3), contacts=np.array([1, 2])).end_gap_rate(vs)
    J = np.asarray(ca.Function("J", [vs], [ca.jacobian(expr, vs)])(v_next))
    np.testing.assert_allclose(J, s.eval_J(q)[0][[1, 2]], atol=1e-6)


@pytest.mark.parametrize("name", ["pyramid", "cone"])
def test_position_gap_keeps_every_step_above_ground(name: str) -> None:
    """The sagittal Solo12 dropped from 2 cm without torques, h = 0.025: its legs fold, the feet
    move on curved paths, and with the linearized gap a foot ends a step more than 1 mm below the
    ground (9.7e-3 m measured), which the physics verdict flags (those steps' programs are solved,
    their status is ``unphysical``); with the position gap none is below it (to IPOPT's
    feasibility, 1e-9), and every step is solved (verified) and physical."""
    from contactmp.models.urdf import solo12, solo12_standing

    s = solo12(planar=True)
    q0 = solo12_standing(True)
    q0[1] += 0.02
    depth = {}
    for gap in ("linear", "position"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PhysicsWarning)
            tr = TimeStepping(s, 0.025, name, gap=gap).simulate(q0, np.zeros(s.n_v), None, n_steps=12)
        depth[gap] = -min(float(np.min(s.eval_phi(q))) for q in tr.q)
        if gap == "position":
            assert all(st is Status.SOLVED for st in tr.status), tr
        else:  # every program solved; the steps that end a foot below 1 mm are flagged
            assert all(st in (Status.SOLVED, Status.UNPHYSICAL) for st in tr.status)
            assert tr.violations["penetration"][1] == pytest.approx(depth[gap])
    assert depth["linear"] > 1e-3
    assert depth["position"] <= 1e-9


def test_position_gap_trajectory_optimization_replays() -> None:
    """A box_2d pushed 0.1 m along the ground in 10 steps (forces at its center, no torque): solved
    and verified, no knot below the ground, and each step is a time step of the same position-gap
    formulation (its step program's residual at the trajectory's values <= 1e-6)."""
    s, to = _pushed_box("pyramid", 10, 0.1)
    r = to.solve(strategy="elastic_l1")
    assert r.status is Status.SOLVED and r.comp_violation <= 1e-8
    assert min(float(np.min(s.eval_phi(q))) for q in r.q) >= -1e-8
    rep = to.replay(r)
    assert rep["step_residual"] <= 1e-6


def test_a_step_started_at_its_solution_returns_it() -> None:
    """``TimeStepping.step(..., start=...)`` starts the step's NLP at the given values: started at
    the step's own solution it returns that solution (to 1e-8), and a name or size the step's Program does not have is an InputError naming
    ``start``."""
    s, q0, v0 = _spinning_box()
    ts = TimeStepping(s, 0.05, "cone", gap="position")
    first = ts.step(q0, v0)
    assert first.result.status is Status.SOLVED
    on = first.active  # the contacts in the step (within the active gap)
    start = {"step/v_next": first.v, "step/p_n": first.impulses[on, 0], "step/p_t": first.impulses[on, 1]}
    again = ts.step(q0, v0, start=start)
    assert again.result.status is Status.SOLVED
    assert np.max(np.abs(again.v - first.v)) <= 1e-8
    with pytest.raises(InputError, match="start.*step/v_nxt.*did you mean 'step/v_next'"):
        ts.step(q0, v0, start={"step/v_nxt": first.v})
    with pytest.raises(InputError, match="start.*needs 3 finite values"):
        ts.step(q0, v0, start={"step/v_next": [0.0, 1.0]})


def test_a_started_step_returns_the_solution_nearest_its_start() -> None:
    """A box_2d at rest on its two bottom corners, pushed by 3 N < mu m g at its center: the step's
    friction split between the corners is not unique (any split with the right sum and each
    |p_t| <= mu p_n keeps the box at rest; the corners sit at one height, so the split changes no
    moment). Started at another admissible split, the step returns that split (the nearest
    solution; to 1e-7, the NLP's feasibility) and the same state, not the simulator's own choice."""
    s = box_2d(width=0.4, height=0.2, mu=0.8)
    q0, v0, u = np.array([0.0, 0.1, 0.0]), np.zeros(3), np.array([3.0, 0.0, 0.0])
    ts = TimeStepping(s, 0.05, "cone", gap="position")
    own = ts.step(q0, v0, u)
    on = own.active
    assert own.result.status is Status.SOLVED and on.sum() == 2
    pn, pt = own.impulses[on, 0], own.impulses[on, 1]
    np.testing.assert_allclose(pt.sum(), -3.0 * 0.05, atol=1e-12)  # at rest: friction = -push * h
    moved = pt + 0.4 * pt.sum() * np.array([1.0, -1.0])  # shift 40 % of the friction between the corners
    assert np.all(np.abs(moved) <= 0.8 * pn) and np.max(np.abs(moved - pt)) > 0.05
    seeded = ts.step(q0, v0, u, start={"step/v_next": own.v, "step/p_n": pn, "step/p_t": moved})
    assert seeded.result.status is Status.SOLVED
    np.testing.assert_allclose(seeded.impulses[on, 1], moved, atol=1e-7)
    np.testing.assert_allclose(seeded.v, own.v, atol=1e-12)


def test_position_gap_steps_are_refined_to_rounding() -> None:
    """The NLP route stops at IPOPT's tolerances; a position-gap step's answer is then refined by
    Newton's method on its active pieces (``NLPOptions.refine``): every step of the spinning box
    satisfies its rows and pairs to rounding (<= 1e-12 with impulses and velocities of order 1),
    where the NLP's own answers were less accurate (``extras["refinement"]["before"]``: up to
    3.7e-9 measured)."""
    s, q0, v0 = _spinning_box()
    tr = TimeStepping(s, 0.05, "cone", gap="position").simulate(q0, v0, None, n_steps=10)
    assert tr.n_failed == 0
    for r in tr.results:
        assert max(r.residuals["bound"], r.residuals["constraint"], r.residuals["comp_min"]) <= 1e-12
    before = [r.extras["refinement"]["before"] for r in tr.results if r.extras["refinement"]["accepted"]]
    assert before and max(before) > 1e-12


def test_seeded_replay_reports_the_simulators_answer_from_the_plan() -> None:
    """``replay`` also reports ``seeded_replay_error``: equal to ``replay_error`` when every step of
    the plan is the simulator's own answer (the box pushed with the position gap), and the plan's
    steps are re-solved from the plan's values only where they differ."""
    _, to = _pushed_box("cone", 6, 0.06)
    r = to.solve(strategy="elastic_l1")
    assert r.status is Status.SOLVED
    rep = to.replay(r)
    assert rep["step_residual"] <= 1e-6 and rep["replay_error"] <= 1e-6
    assert rep["seeded_replay_error"] == rep["replay_error"] and rep["nonunique_steps"] == []
    assert rep["seeded_misses"] == [] and rep["seeded_misses_not_isolated"] == []


def test_only_a_position_gap_step_takes_a_start() -> None:
    """A linear-gap step is solved by an LCP or fc3d solver, which starts from its own point: a
    ``start`` for it is refused (InputError naming ``start``), not silently dropped."""
    s, q0, v0 = _spinning_box()
    ts = TimeStepping(s, 0.05, "cone")
    assert not ts.formulation.position_gap and TimeStepping(s, 0.05, "cone", gap="position").formulation.position_gap
    with pytest.raises(InputError, match="start.*only a position-gap step"):
        ts.step(q0, v0, start={"step/v_next": v0})


def test_refined_position_gap_plan_replays_to_rounding() -> None:
    """The cone-pushed box solved with elastic l1 and refined on its active pieces
    (``NLPOptions.refine``): every step is a time step to rounding (step residual <= 1e-12) and
    the simulator reproduces the plan from its default start to 1e-9."""
    _, to = _pushed_box("cone", 6, 0.06)
    r = to.solve(strategy="elastic_l1", refine=True)
    assert r.status is Status.SOLVED and r.result.extras["refinement"]["accepted"]
    rep = to.replay(r)
    assert rep["step_residual"] <= 1e-12 and rep["replay_error"] <= 1e-9
