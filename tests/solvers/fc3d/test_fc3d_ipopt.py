"""fc3d through IPOPT (registry "ipopt"): closed forms, shared Siconos problems verified by the
natural-map residual, the polish that cannot fake a solution, strict options and statuses."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.result import Status
from contactmp.solvers.fc3d import ipopt as fc3d_ipopt
from contactmp.solvers.fc3d.problem import fc3d_residual, project_cone
from contactmp.solvers.registry import solve_fc3d

# small shared problems (1 to 9 contacts) solved in well under a second each
SMALL = ["FrictionContact3D_1c", "FrictionContact3D_RR_1c", "Rover11035", "Rover4396", "FC3D_Example1",
         "GFC3D_TwoRods1-condensed", "Confeti-ex13-4contact-Fc3D-SBM", "Rover1039", "Rover4144",
         "Rover1040", "Rover3865", "NESpheres_10_1"]


def _load(repo_data, name):
    with np.load(repo_data / "fc3d" / f"{name}.npz", allow_pickle=False) as d:
        return d["W"], d["q"], d["mu"]


@pytest.mark.parametrize("name", SMALL)
def test_shared_problem_solved_and_verified(repo_data, name):
    W, q, mu = _load(repo_data, name)
    res = solve_fc3d(W, q, mu, solver="ipopt")
    assert res.status is Status.SOLVED, res.message
    assert res.solver == "ipopt"
    # the reported residual is the independent one, recomputed here from r alone
    assert res.residual == pytest.approx(fc3d_residual(W, q, mu, res.x), abs=1e-14)
    assert res.residual <= 1e-8
    np.testing.assert_allclose(res.extras["u"], W @ res.x + q, atol=1e-12)
    # r in K and r . u_hat ~ 0, the definition itself
    r, u = res.x, res.extras["u"]
    np.testing.assert_allclose(project_cone(r, mu), r, atol=1e-8 * max(1.0, np.abs(r).max()))
    u_hat = u.copy()
    u_hat[0::3] += mu * np.hypot(u[1::3], u[2::3])
    assert u_hat[0::3].min() >= -1e-7 * max(1.0, np.abs(u).max())


@pytest.mark.parametrize("strategy", ["elastic_l1", "direct", "scholtes"])
def test_each_strategy_alone_on_a_coupled_problem(repo_data, strategy):
    W, q, mu = _load(repo_data, "GFC3D_TwoRods1-condensed")
    res = fc3d_ipopt.solve(W, q, mu, strategies=(strategy,))
    assert res.success, res.message
    assert [a["strategy"] for a in res.extras["attempts"]] == [strategy]


def test_without_polish_and_scaling_still_verified(repo_data):
    W, q, mu = _load(repo_data, "Rover4144")
    res = fc3d_ipopt.solve(W, q, mu, polish=False, scale=False)
    assert res.success, res.message
    assert res.extras["polished"] is False
    assert res.extras["scale"] == (1.0, 1.0)


def test_polish_only_returns_what_the_residual_accepts():
    """polish_fc3d keeps the best iterate by the natural-map residual; from a far point it cannot
    claim a solution it does not have."""
    rng = np.random.default_rng(0)
    B = rng.normal(size=(9, 9))
    W = B @ B.T + 0.5 * np.eye(9)
    q = rng.normal(size=9)
    mu = np.full(3, 0.3)
    r0 = np.abs(rng.normal(size=9))
    r, res = fc3d_ipopt.polish_fc3d(W, q, mu, r0, steps=0)
    np.testing.assert_array_equal(r, r0)
    assert res == fc3d_residual(W, q, mu, r0)
    r, res = fc3d_ipopt.polish_fc3d(W, q, mu, r0, steps=10)
    assert res == fc3d_residual(W, q, mu, r)
    assert res <= fc3d_residual(W, q, mu, r0)


def test_no_solution_is_reported_not_raised():
    """W = -I, q_n = -1: u_n = -r_n - 1 < 0 for every r_n >= 0, so fc3d has no solution."""
    res = fc3d_ipopt.solve(-np.eye(3), np.array([-1.0, 0.0, 0.0]), 0.5)
    assert res.status is not Status.SOLVED
    assert res.residual > 0.1


def test_zero_q_is_solved_by_zero():
    res = fc3d_ipopt.solve(np.eye(6), np.zeros(6), 0.3)
    assert res.success and not res.x.any()


def test_time_limit_reported(repo_data):
    W, q, mu = _load(repo_data, "NESpheres_30_1")
    res = fc3d_ipopt.solve(W, q, mu, time_limit=1e-6)
    assert res.status is Status.TIME_LIMIT


def test_input_and_option_errors():
    with pytest.raises(InputError, match="W"):
        fc3d_ipopt.solve(np.eye(4), np.zeros(4), 0.5)
    with pytest.raises(InputError, match="mu"):
        fc3d_ipopt.solve(np.eye(3), np.ones(3), -1.0)
    with pytest.raises(OptionError, match="scholtes"):
        fc3d_ipopt.solve(np.eye(3), np.ones(3), 0.5, strategies=("scholtez",))
    with pytest.raises(OptionError, match="did you mean"):
        fc3d_ipopt.solve(np.eye(3), np.ones(3), 0.5, polsh=True)
    with pytest.raises(OptionError, match="form"):
        fc3d_ipopt.solve(np.eye(3), np.ones(3), 0.5, form="cone")
