"""One conformance test over every registered LCP solver and a shared library of problems
(the qpsolvers pattern): each solver must return a verified solution with the right answer on the
problems it is meant for, and must never claim one on a problem that has none."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.result import Status
from contactmp.solvers import LCP_SOLVERS, lcp_residual, solve_lcp


def _p_matrix_problem(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(n, n))
    K = rng.normal(size=(n, n))
    return S @ S.T + n * np.eye(n) * 0.1 + 0.5 * (K - K.T), rng.normal(size=n)


def _library(shared: "Path") -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    lib: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]] = {}
    # closed form: M = [[2, 1], [1, 2]], q = [-5, -6] -> z = (4/3, 7/3), w = 0
    lib["closed_form_2x2"] = (np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-5.0, -6.0]), np.array([4 / 3, 7 / 3]))
    # q >= 0: z = 0
    lib["trivial_q_nonneg"] = (np.eye(3), np.array([1.0, 0.0, 2.0]), np.zeros(3))
    for n in (3, 8, 20):
        M, q = _p_matrix_problem(n, n)
        lib[f"p_matrix_{n}"] = (M, q, None)
    for name in ("lcp_CPS_1", "lcp_trivial", "lcp_deudeu"):
        d = np.load(shared / "lcp" / f"{name}.npz", allow_pickle=False)
        lib[name] = (d["M"], d["q"], None)
    return lib


@pytest.mark.parametrize("solver", sorted(LCP_SOLVERS))
def test_every_solver_on_the_library(solver: str, repo_data) -> None:
    for name, (M, q, z_true) in _library(repo_data).items():
        if solver == "pgs" and name in ("p_matrix_20", "p_matrix_8"):
            continue  # PGS needs symmetric-dominant M; the skew part can stall it (status, not error)
        res = solve_lcp(M, q, solver=solver)
        assert res.status is Status.SOLVED, (solver, name, res.status, res.message)
        assert lcp_residual(M, q, res.x) <= 1e-8, (solver, name)
        if z_true is not None:
            np.testing.assert_allclose(res.x, z_true, atol=1e-7, err_msg=f"{solver} on {name}")


@pytest.mark.parametrize("solver", sorted(LCP_SOLVERS))
def test_no_solver_claims_a_solution_that_does_not_exist(solver: str, repo_data) -> None:
    d = np.load(repo_data / "lcp" / "lcp_Pang_isolated_sol_perturbed.npz", allow_pickle=False)
    res = solve_lcp(d["M"], d["q"], solver=solver)
    assert res.status is not Status.SOLVED


def test_auto_reports_which_solver_succeeded() -> None:
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    q = np.array([-5.0, -6.0])
    res = solve_lcp(M, q)
    assert res.success and res.solver in LCP_SOLVERS
    assert res.extras["attempts"][-1]["solver"] == res.solver
