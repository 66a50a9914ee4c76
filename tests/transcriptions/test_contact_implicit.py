"""Contact-implicit trajectory optimization: the optimized trajectory obeys the time-stepping physics."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.models.systems import point_mass_2d
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
    with pytest.raises(OptionError):
        ContactImplicitTO(sys_, 5, 0.05, formulation="cone")
    to = ContactImplicitTO(sys_, 5, 0.05)
    with pytest.raises(InputError):
        to.set_initial_state([0.0, 0.0, 0.0])
    with pytest.raises(InputError):
        to.add_quadratic_cost(Q=-np.eye(2))
    with pytest.raises(InputError):
        to.solve(starts=0)


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
