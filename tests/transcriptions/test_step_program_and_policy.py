"""One step's Program from a system and a state (``TimeStepping.step_program``, issue 36 item 2) and
feedback in simulation (``simulate(u=policy(t, q, v))``, ``targets(t, q, v)``, item 7)."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.case_studies._cito import arm_joint_angles
from contactmp.errors import InputError, UnsupportedProgramError
from contactmp.models.arm_tasks import two_link_arm_box
from contactmp.models.systems import box_2d, box_3d
from contactmp.result import Status
from contactmp.solvers.front import solve
from contactmp.transcriptions.time_stepping import TimeStepping


def _as_the_step_solves(ts: TimeStepping, prog):
    """The front door's solve of ``prog`` with the step's own solver, tolerance and options."""
    form = ts.formulation
    return solve(prog, solver=form.solver, tol=ts.tol, **form.auto_options)


# ----------------------------------------------------------------------------- step_program
def test_a_steps_result_carries_no_program_and_the_reductions_say_so() -> None:
    """``to_lcp(result.program)`` of a time step's Result (None) names ``prog`` and points at
    ``step_program`` (it used to fail with ``'NoneType' object has no attribute 'lbx'``)."""
    from contactmp.reductions import to_cone_problem, to_lcp, to_mcp

    s = box_2d()
    out = TimeStepping(s, 0.01, "pyramid").step(np.array(s.q_nominal, float), np.zeros(3))
    for reduce in (to_lcp, to_mcp, to_cone_problem):
        with pytest.raises(InputError, match="step_program") as err:
            reduce(out.result.program)
        assert err.value.field == "prog"


def test_pyramid_step_program_is_the_steps_lcp() -> None:
    s = box_2d()
    ts = TimeStepping(s, 0.01, "pyramid")
    q, v, u = np.array(s.q_nominal, float), np.array([0.3, -0.1, 0.2]), None
    prog = ts.step_program(q, v, u, 0.0)
    assert prog.name == "time_step" and prog.n_comp > 0
    np.testing.assert_array_equal(prog["state/q"].value, q)  # the state as Parameters, bound
    np.testing.assert_array_equal(prog["state/v"].value, v)
    lcp = prog.to_lcp()
    assert lcp.M.shape[0] == lcp.q.size > 0
    res = _as_the_step_solves(ts, prog)
    out = ts.step(q, v, u)
    assert res.status is Status.SOLVED and out.result.program is None  # Result.program documented None
    np.testing.assert_allclose(res.value(prog["step/v_next"]), out.v, rtol=0, atol=1e-12)
    # a fresh Program each call: changing one leaves the step's own (cached) Program alone
    prog["state/v"].value = np.zeros(3)
    np.testing.assert_array_equal(ts.step(q, v, u).v, out.v)


def test_cone_step_program_is_the_steps_fc3d_problem() -> None:
    s = box_3d()
    ts = TimeStepping(s, 0.01, "cone")
    q, v = np.array(s.q_nominal, float), np.r_[0.2, 0.1, 0.0, 0.0, 0.0, 0.3]
    prog = ts.step_program(q, v)
    cp = prog.to_cone_problem()
    assert cp.W.shape == (12, 12) and np.allclose(cp.W, cp.W.T) and np.all(cp.mu == 0.5)
    res = _as_the_step_solves(ts, prog)
    np.testing.assert_allclose(res.value(prog["step/v_next"]), ts.step(q, v).v, rtol=0, atol=1e-10)


def test_step_program_with_stable_pd_free_flight_and_refusals() -> None:
    arm = two_link_arm_box()
    q = np.r_[0.0, 0.1, 0.0, arm_joint_angles((-0.3, 0.1))]
    v = np.r_[0.0, 0.0, 0.0, 0.5, -0.4]
    ts = TimeStepping(arm, 0.01, "pyramid", pd_gains=(10.0, 1.5))
    targets = lambda t: (q[3:5] + 0.1, None)  # noqa: E731
    prog = ts.step_program(q, v, [0.2, -0.1], 0.05, targets=targets)
    res = _as_the_step_solves(ts, prog)
    out = ts.step(q, v, [0.2, -0.1], t=0.05, targets=targets)
    np.testing.assert_allclose(res.value(prog["step/v_next"]), out.v, rtol=0, atol=1e-12)
    # free flight (no contact within active_gap): v_next and the dynamics rows, which no LCP takes
    s = box_2d()
    ts2 = TimeStepping(s, 0.01, "pyramid")
    qa = np.array(s.q_nominal, float) + [0.0, 1.0, 0.0]
    free = ts2.step_program(qa, np.zeros(3))
    assert free.n_comp == 0 and [c.name for c in free.constraints] == ["step/dynamics"]
    with pytest.raises(UnsupportedProgramError):
        free.to_lcp()
    np.testing.assert_allclose(solve(free).value(free["step/v_next"]), ts2.step(qa, np.zeros(3)).v, atol=1e-12)
    with pytest.raises(InputError) as exc:
        TimeStepping(s, 0.01, "nmdp").step_program(qa, np.zeros(3))
    assert exc.value.field == "formulation"
    with pytest.raises(InputError) as exc:
        ts2.step_program(qa[:2], np.zeros(3))
    assert exc.value.field == "q"
    with pytest.raises(InputError) as exc:
        ts2.step_program(qa, np.zeros(3), t="soon")
    assert exc.value.field == "t"


# ------------------------------------------------------------------------------- feedback
def test_pd_policy_on_the_arms_joint_angles_converges() -> None:
    """``u_k = Kp (q_d - q_a) - Kd v_a + g_a(q)`` on the two-link arm's joints (gravity compensated
    with ``h(q, 0)``), the box beside it at rest: the joints reach their targets, 1.7 rad away."""
    arm = two_link_arm_box()
    q0 = np.r_[0.0, 0.1, 0.0, arm_joint_angles((-0.3, 0.1))]
    q_d = arm_joint_angles((-0.45, 0.6))
    seen: list[tuple[float, np.ndarray]] = []

    def pd(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        seen.append((t, q.copy()))
        q[:] = 0.0  # a copy: the simulation's state is not touched
        return 10.0 * (q_d - seen[-1][1][3:5]) - 1.5 * v[3:5] + arm.eval_h(seen[-1][1], 0.0 * v)[3:5]

    traj = TimeStepping(arm, 0.01, "pyramid").simulate(q0, np.zeros(5), u=pd, n_steps=150)
    assert traj.n_failed == 0 and len(seen) == 150
    for k in (0, 1, 77):  # the policy saw t_k and q_k
        assert seen[k][0] == pytest.approx(0.01 * k)
        np.testing.assert_array_equal(seen[k][1], traj.q[k])
    assert np.abs(traj.q[0, 3:5] - q_d).max() > 1.6
    assert np.abs(traj.q[-1, 3:5] - q_d).max() < 1e-4
    assert np.abs(traj.v[-1]).max() < 1e-3
    np.testing.assert_allclose(traj.q[-1, :3], q0[:3], atol=1e-9)  # the box stays


def test_time_only_u_is_unchanged_and_bad_callables_name_u() -> None:
    s = box_2d()
    ts = TimeStepping(s, 0.01, "pyramid")
    q0, v0 = np.array(s.q_nominal, float), np.array([0.5, 0.0, 0.0])
    rows = np.array([[np.sin(3 * (k * 0.01))] * 3 for k in range(8)])  # t_k = k h
    by_array = ts.simulate(q0, v0, u=rows, n_steps=8)
    by_time = ts.simulate(q0, v0, u=lambda t: [np.sin(3 * t)] * 3, n_steps=8)
    np.testing.assert_array_equal(by_time.q, by_array.q)
    np.testing.assert_array_equal(by_time.v, by_array.v)
    by_policy = ts.simulate(q0, v0, u=lambda t, q, v: [np.sin(3 * t)] * 3, n_steps=8)
    np.testing.assert_array_equal(by_policy.q, by_array.q)

    def star(*args):
        return np.zeros(3)

    def defaults(t, q=None, v=None):
        return np.zeros(3)

    def keyword(t, *, gain):
        return np.zeros(3)

    for bad, match in ((lambda t, q: np.zeros(3), "accepts neither"), (star, "accepts both"),
                       (defaults, "accepts both"), (lambda: np.zeros(3), "accepts neither"),
                       (keyword, "keyword-only")):
        with pytest.raises(InputError, match=match) as exc:
            ts.simulate(q0, v0, u=bad, n_steps=2)
        assert exc.value.field == "u"
    with pytest.raises(InputError, match=r"policy\(t, q, v\) at step 3 .*returned \(2,\)") as exc:
        ts.simulate(q0, v0, u=lambda t, q, v: np.zeros(2) if t > 0.025 else np.zeros(3), n_steps=5)
    assert exc.value.field == "u"
    with pytest.raises(InputError, match=r"u\(t\) at step 0 .*finite") as exc:
        ts.simulate(q0, v0, u=lambda t: [np.nan, 0.0, 0.0], n_steps=2)
    assert exc.value.field == "u"
    with pytest.raises(InputError, match="u") as exc:
        ts.simulate(q0, v0, u=lambda t, q, v: None, n_steps=2)
    assert exc.value.field == "u"


def test_stable_pd_targets_may_take_the_state() -> None:
    arm = two_link_arm_box()
    q0 = np.r_[0.0, 0.1, 0.0, arm_joint_angles((-0.3, 0.1))]
    q_d = q0[3:5] + [0.3, -0.2]
    ts = TimeStepping(arm, 0.01, "pyramid", pd_gains=(10.0, 1.5))
    seen: list[np.ndarray] = []

    def feedback(t, q, v):
        seen.append(q.copy())
        return q_d, None

    a = ts.simulate(q0, np.zeros(5), n_steps=10, targets=lambda t: (q_d, None))
    b = ts.simulate(q0, np.zeros(5), n_steps=10, targets=feedback)
    np.testing.assert_array_equal(a.q, b.q)
    assert len(seen) == 10 and all(np.array_equal(seen[k], b.q[k]) for k in range(10))
    with pytest.raises(InputError) as exc:
        ts.simulate(q0, np.zeros(5), n_steps=2, targets=lambda t, q: (q_d, None))
    assert exc.value.field == "targets"
    with pytest.raises(InputError) as exc:
        ts.step(q0, np.zeros(5), targets=lambda t, q: (q_d, None))
    assert exc.value.field == "targets"
