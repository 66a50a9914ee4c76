"""Contact-implicit trajectory optimization: the optimized trajectory obeys the time-stepping physics."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.models.systems import box_3d, point_mass_2d
from contactmp.result import Status
from contactmp.transcriptions.contact_implicit import ContactImplicitTO
from contactmp.transcriptions.time_stepping import TimeStepping

M_, MU, G, N, H = 1.0, 0.5, 9.81, 20, 0.05


def _push_problem() -> tuple[ContactImplicitTO, object]:
    sys_ = point_mass_2d(m=M_, mu=MU, g=G)
    to = ContactImplicitTO(sys_, N, H, formulation="pyramid", facets=4)
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.5, 0.0], [0.0, 0.0])
    to.bound_inputs([-20.0, 0.0], [20.0, 0.0])  # horizontal push only (no lifting)
    to.minimize_effort(1.0)
    return to, sys_


@pytest.fixture(scope="module")
def push():
    return _push_problem()


@pytest.mark.parametrize("strategy", ["scholtes", "elastic_l1"])
def test_push_point_mass_obeys_time_stepping(push, strategy: str) -> None:
    to, sys_ = push
    r = to.solve(backend="casadi", strategy=strategy, starts=2, seed=3)
    assert r.status is Status.SOLVED and r.success
    assert len(r.starts) == 2 and r.best in (0, 1)
    assert r.comp_violation <= 1e-8 and r.constraint_violation <= 1e-6
    assert r.q.shape == (N + 1, 2) and r.v.shape == (N + 1, 2) and r.u.shape == (N, 2)
    # boundary states
    np.testing.assert_allclose(r.q[0], [0.0, 0.0], atol=1e-8)
    np.testing.assert_allclose(r.q[-1], [0.5, 0.0], atol=1e-6)
    np.testing.assert_allclose(r.v[[0, -1]], 0.0, atol=1e-6)
    # stays on the ground: p_n = m g h every step (f_z = 0), vertical motion none
    np.testing.assert_allclose(r.q[:, 1], 0.0, atol=1e-6)
    np.testing.assert_allclose(r.p_n[:, 0], M_ * G * H, atol=1e-6)
    # Coulomb: |p_t| <= mu p_n, p_t opposes the new velocity, and equals -mu p_n sign(v) when sliding
    pt, vx = r.p_t[:, 0], r.v[1:, 0]
    assert np.all(np.abs(pt) <= MU * r.p_n[:, 0] + 1e-7)
    assert np.all(pt * vx <= 1e-8)
    sliding = np.abs(vx) > 1e-4
    assert sliding.sum() >= 5
    np.testing.assert_allclose(pt[sliding], -MU * M_ * G * H * np.sign(vx[sliding]), atol=1e-6)
    # re-simulate the optimized inputs: the same trajectory
    traj = TimeStepping(sys_, H, formulation="pyramid").simulate([0.0, 0.0], [0.0, 0.0], r.u, N)
    assert traj.n_failed == 0
    np.testing.assert_allclose(traj.q, r.q, atol=1e-4)
    np.testing.assert_allclose(traj.p_n, r.p_n, atol=1e-6)
    # the push must beat static friction at some step, and moving 0.5 m costs at least the
    # friction work: sum_k u_k h * v_{k+1} (exact work balance of the scheme) >= mu m g * 0.5
    assert np.abs(r.u[:, 0]).max() > MU * M_ * G
    assert np.sum(r.u[:, 0] * H * vx) >= MU * M_ * G * 0.5 - 1e-6


def test_multistart_records_every_start_reproducibly(push) -> None:
    to, _ = push
    a = to.solve(strategy="elastic_l1", starts=3, seed=7)
    b = to.solve(strategy="elastic_l1", starts=3, seed=7)
    assert [s["start"] for s in a.starts] == [0, 1, 2]
    assert [s["objective"] for s in a.starts] == [s["objective"] for s in b.starts]
    solved = [s for s in a.starts if s["status"] is Status.SOLVED]
    assert a.objective == min(s["objective"] for s in solved)
    # solving does not change the program's stored initial guess
    np.testing.assert_array_equal(to.program.x0, _push_problem()[0].program.x0)


def test_input_validation() -> None:
    sys_ = point_mass_2d()
    with pytest.raises(InputError):
        ContactImplicitTO(sys_, 0, 0.05)
    with pytest.raises(InputError):
        ContactImplicitTO(sys_, 5, -1.0)
    with pytest.raises(InputError):
        ContactImplicitTO(sys_, 5, 0.05, facets=3)
    with pytest.raises(OptionError, match="formulation"):
        ContactImplicitTO(sys_, 5, 0.05, formulation="polygon")
    with pytest.raises(InputError, match="facets"):  # facets: an option of the pyramid only, never ignored
        ContactImplicitTO(sys_, 5, 0.05, formulation="cone", facets=3)
    to = ContactImplicitTO(sys_, 5, 0.05)
    with pytest.raises(InputError):
        to.set_initial_state([0.0, 0.0, 0.0])
    with pytest.raises(InputError):
        to.add_quadratic_cost(Q=-np.eye(2))
    with pytest.raises(InputError):
        to.solve(starts=0)
    with pytest.raises(InputError, match="q_indices"):
        to.set_final_state([0.5, 0.0], q_indices=[0, 2])
    with pytest.raises(InputError, match="q_indices"):
        to.set_final_state([0.5, 0.0], q_indices=[0, 0])


def test_quadratic_cost_matches_effort_cost(push) -> None:
    """``R = h I`` in :meth:`add_quadratic_cost` is the same objective as ``minimize_effort(1)``."""
    to_e, _ = push
    sys_ = point_mass_2d(m=M_, mu=MU, g=G)
    to_q = ContactImplicitTO(sys_, N, H)
    to_q.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to_q.set_final_state([0.5, 0.0], [0.0, 0.0])
    to_q.bound_inputs([-20.0, 0.0], [20.0, 0.0])
    to_q.add_quadratic_cost(R=[H, H])
    re, rq = to_e.solve(strategy="elastic_l1"), to_q.solve(strategy="elastic_l1")
    assert re.success and rq.success
    assert rq.objective == pytest.approx(re.objective, rel=1e-6)
    assert rq.objective == pytest.approx(H * np.sum(rq.u**2), rel=1e-12)


# ------------------------------------------------------------------------ the Coulomb-cone blocks
def _cone_push() -> tuple[ContactImplicitTO, object]:
    sys_ = point_mass_2d(m=M_, mu=MU, g=G)
    to = ContactImplicitTO(sys_, N, H, formulation="cone")
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.5, 0.0], [0.0, 0.0])
    to.bound_inputs([-20.0, 0.0], [20.0, 0.0])
    to.minimize_effort(1.0)
    return to, sys_


def test_cone_push_point_mass_equals_pyramid(push) -> None:
    """Planar: Coulomb's cone is the segment |p_t| <= mu p_n, which the even pyramid is too, so the
    two transcriptions have the same optimum (measured 25.076208 for both). The cone's program is
    solved alone from its own guess (``pyramid_start=False``), so it reaches that optimum on its own."""
    to_p, _ = push
    to_c, sys_ = _cone_push()
    assert all(b.planar and b.p_o is None for b in to_c.steps)
    rp = to_p.solve(strategy="elastic_l1")
    rc = to_c.solve(strategy="elastic_l1", pyramid_start=False)
    assert rp.success and rc.success
    assert rc.comp_violation <= 1e-8 and rc.constraint_violation <= 1e-6
    assert abs(rc.objective - rp.objective) <= 1e-4
    np.testing.assert_allclose(rc.q, rp.q, atol=1e-4)
    np.testing.assert_allclose(rc.u, rp.u, atol=1e-2)
    np.testing.assert_allclose(rc.p_n, rp.p_n, atol=1e-6)
    np.testing.assert_allclose(rc.p_t, rp.p_t, atol=1e-4)
    assert np.abs(rc.p_o).max() == 0.0 and np.abs(rp.p_o).max() == 0.0
    # Coulomb on the cone's trajectory: inside the segment, opposite to the new velocity
    pt, vx = rc.p_t[:, 0], rc.v[1:, 0]
    assert np.all(np.abs(pt) <= MU * rc.p_n[:, 0] + 1e-8)
    sliding = np.abs(vx) > 1e-4
    np.testing.assert_allclose(pt[sliding], -MU * rc.p_n[sliding, 0] * np.sign(vx[sliding]), atol=1e-7)
    traj = TimeStepping(sys_, H, formulation="cone").simulate([0.0, 0.0], [0.0, 0.0], rc.u, N)
    assert traj.n_failed == 0
    np.testing.assert_allclose(traj.q, rc.q, atol=1e-5)


BOX_N, BOX_H = 10, 0.05


def test_cone_box_3d_push_is_coulomb_and_replays() -> None:
    """A 3D box pushed from rest by a horizontal force at its center toward (0.3, 0.15) in 0.5 s
    (final velocity free). The optimized trajectory has every friction impulse in Coulomb's cone,
    exactly opposite to the sliding velocity at sliding corners, and TimeStepping with the cone
    (fc3d per step) replays it from the optimized inputs."""
    box = box_3d(m=1.0, size=0.5, mu=0.5)
    q0 = np.array(box.q_nominal)
    qf = q0.copy()
    qf[:2] = [0.3, 0.15]
    to = ContactImplicitTO(box, BOX_N, BOX_H, formulation="cone")
    to.set_initial_state(q0, np.zeros(6))
    to.set_final_state(qf, q_indices=[0, 1])  # height and tilt follow from the contacts
    to.bound_inputs([-20.0, -20.0, 0.0, 0.0, 0.0, 0.0], [20.0, 20.0, 0.0, 0.0, 0.0, 0.0])
    to.minimize_effort(1.0)
    r = to.solve(strategy="direct")
    assert r.status is Status.SOLVED
    assert r.comp_violation <= 1e-6 and r.constraint_violation <= 1e-6
    np.testing.assert_allclose(r.q[-1, :2], [0.3, 0.15], atol=1e-8)
    # the box slides flat: four bottom corners carry the weight, no tilt or spin
    np.testing.assert_allclose(r.q[:, 2], 0.25, atol=1e-7)
    np.testing.assert_allclose(r.q[:, 3:], np.tile([1.0, 0, 0, 0], (BOX_N + 1, 1)), atol=1e-7)
    np.testing.assert_allclose(r.p_n.sum(axis=1), G * BOX_H, atol=1e-7)
    # Coulomb's cone at every corner and step
    pT = np.hypot(r.p_t, r.p_o)
    assert np.all(pT <= box.mu * r.p_n + 1e-6)
    n_sliding = 0
    for k in range(BOX_N):
        _, Jt, Jo = box.eval_J(r.q[k])
        u = np.c_[Jt @ r.v[k + 1], Jo @ r.v[k + 1]]
        for j in np.flatnonzero((r.p_n[k] > 1e-6) & (np.linalg.norm(u, axis=1) > 1e-6)):
            n_sliding += 1
            want = -box.mu[j] * r.p_n[k, j] * u[j] / np.linalg.norm(u[j])
            np.testing.assert_allclose([r.p_t[k, j], r.p_o[k, j]], want, atol=1e-8)
    assert n_sliding >= 4 * 8  # the box slides most of the way
    # the motion is diagonal: a pyramid's friction would be up to 45 degrees off here
    heading = np.degrees(np.arctan2(r.v[1:, 1], r.v[1:, 0]))[np.hypot(r.v[1:, 0], r.v[1:, 1]) > 1e-3]
    assert np.all(np.abs(heading - np.degrees(np.arctan2(0.15, 0.3))) < 1.0)
    traj = TimeStepping(box, BOX_H, formulation="cone", active_gap=np.inf).simulate(q0, np.zeros(6), r.u, BOX_N)
    assert traj.n_failed == 0
    np.testing.assert_allclose(traj.q, r.q, atol=1e-5)
    np.testing.assert_allclose(traj.v, r.v, atol=1e-5)


def test_to_pyomo_is_the_program_twin() -> None:
    """``to_pyomo()`` holds the same variables, bounds and rows: at a CasADi solution its
    constraints hold and its objective is the program's."""
    import pyomo.environ as pyo
    from pyomo.mpec import Complementarity

    from contactmp.pyomo_bridge import set_program_x

    sys_ = point_mass_2d(m=M_, mu=MU, g=G)
    to = ContactImplicitTO(sys_, 4, H, formulation="cone")
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.05, 0.0])
    to.bound_inputs([-20.0, 0.0], [20.0, 0.0])
    to.minimize_effort(1.0)
    r = to.solve(strategy="elastic_l1")
    assert r.success
    model = to.to_pyomo()
    assert sum(len(v) for v in model.component_objects(pyo.Var, descend_into=False)) == to.program.n_x
    assert len(list(model.component_data_objects(Complementarity))) == to.program.n_comp
    set_program_x(model, to.program, r.result.x)
    assert pyo.value(model.objective) == pytest.approx(r.objective, rel=1e-12)
    worst = 0.0
    for c in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(c.body)
        lo = -np.inf if c.lower is None else pyo.value(c.lower)
        hi = np.inf if c.upper is None else pyo.value(c.upper)
        worst = max(worst, lo - body, body - hi)
    assert worst <= 1e-8


def test_start_indices_run_single_starts(push) -> None:
    """``start_indices=[i]`` runs start i alone: the same answer as start i within a multistart."""
    to, _ = push
    both = to.solve(strategy="elastic_l1", starts=2, seed=5)
    one = to.solve(strategy="elastic_l1", seed=5, start_indices=[1])
    assert [s["start"] for s in one.starts] == [1] and one.best == 1
    for key in ("objective", "iterations", "comp_violation"):
        assert one.starts[0][key] == both.starts[1][key]
    with pytest.raises(InputError, match="start_indices"):
        to.solve(start_indices=[1, 1])


def test_initial_state_moves_and_a_result_becomes_a_trajectory() -> None:
    """set_initial_state called again moves the bounds of its rows (no new rows: the IPOPT objects
    built for the program stay valid); trajectory(result) turns any Result of the program into a
    TOResult (here solve_program's, called directly)."""
    from contactmp.solvers.nlp.solve import solve_program

    to, _ = _push_problem()
    n_g = to.program.n_g
    to.set_initial_state([0.1, 0.0], [0.0, 0.0])
    assert to.program.n_g == n_g
    np.testing.assert_array_equal(to.program["initial_q"].lb, [0.1, 0.0])
    res = solve_program(to.program, strategy="scholtes")
    traj = to.trajectory(res)
    assert traj.status is Status.SOLVED and traj.starts[0]["iterations"] == res.iterations
    np.testing.assert_allclose(traj.q[0], [0.1, 0.0], atol=1e-8)  # the moved initial state holds
    np.testing.assert_allclose(traj.q[-1], [0.5, 0.0], atol=1e-8)
