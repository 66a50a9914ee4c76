"""solve_program (IPOPT via CasADi and cyipopt, MPCC strategies) and the IPOPT LCP solvers."""
from __future__ import annotations

from pathlib import Path

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.program import Program
from contactmp.result import Status
from contactmp.solvers.lcp import ipopt as ipopt_lcp
from contactmp.solvers.lcp import cyipopt as ipopt_lcp_cy
from contactmp.solvers.lcp.problem import lcp_residual
from contactmp.solvers.ipopt import ipopt_option_types
from contactmp.solvers.nlp.solve import NLPOptions, solve_program
from contactmp.solvers.registry import lcp_solver

#: the Siconos test LCPs shipped in the repository (tests/data/lcp)
DATA = Path(__file__).resolve().parents[2] / "data" / "lcp"
BACKENDS = ["casadi", "cyipopt"]
M2 = np.array([[2.0, 1.0], [1.0, 2.0]])
Q2 = np.array([-5.0, -6.0])
Z2 = np.array([4.0 / 3.0, 7.0 / 3.0])  # M z + q = 0, z > 0: the unique solution


def lcp_prog(M: np.ndarray, q: np.ndarray):
    prog = Program("lcp")
    z = prog.add_variables("z", q.size, lb=0.0)
    prog.add_complementarity(z, ca.mtimes(ca.DM(M), z.sym) + q, name="z_perp_w")
    return prog, z


def mpcc_prog(x0: float, y0: float):
    """min (x - 1)^2 + (y - 1)^2  s.t.  0 <= x _|_ y >= 0: local minima (1, 0), (0, 1), f = 1."""
    prog = Program("mpcc")
    x = prog.add_variables("x", 1, init=x0)
    y = prog.add_variables("y", 1, init=y0)
    prog.add_cost((x.sym - 1.0) ** 2 + (y.sym - 1.0) ** 2)
    prog.add_complementarity(x, y)
    return prog, x, y


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("strategy", ["direct", "scholtes", "elastic_l1"])
def test_lcp_program_solved_by_every_backend_and_strategy(backend: str, strategy: str) -> None:
    prog, z = lcp_prog(M2, Q2)
    r = solve_program(prog, backend, strategy)
    assert r.status is Status.SOLVED, r.message
    zs = r.value(z)
    np.testing.assert_allclose(zs, Z2, atol=1e-8)
    assert lcp_residual(M2, Q2, zs) <= 1e-8
    assert r.residuals["comp_min"] <= 1e-8 and r.residuals["comp_prod"] <= 1e-8
    assert r.iterations >= 1 and r.time_s > 0 and r.extras["backend"] == backend
    assert r.backend_status in ("Solve_Succeeded", "Solved_To_Acceptable_Level")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("strategy", ["direct", "scholtes", "elastic_l1"])
def test_mpcc_two_local_minima(backend: str, strategy: str) -> None:
    prog, x, y = mpcc_prog(0.5, 0.2)
    r = solve_program(prog, backend, strategy)
    assert r.status is Status.SOLVED, r.message
    xy = np.concatenate([r.value(x), r.value(y)])
    dist = min(np.abs(xy - [1.0, 0.0]).max(), np.abs(xy - [0.0, 1.0]).max())
    assert dist <= 1e-6, xy
    assert r.objective == pytest.approx(1.0, abs=1e-6)
    assert min(xy) >= -1e-8 and abs(min(xy)) <= 1e-8


def test_scholtes_homotopy_is_recorded_and_warm_started() -> None:
    prog, x, y = mpcc_prog(0.0, 0.0)
    r = solve_program(prog, "casadi", "scholtes", sigma0=1.0)
    hist = r.extras["homotopy"]
    sig = [h["sigma"] for h in hist]
    assert sig[0] == 1.0 and all(b == pytest.approx(0.1 * a) for a, b in zip(sig, sig[1:]))
    # every IPOPT iteration is counted: each NLP, its repeat at tol, its polish, the branch steps
    assert r.iterations == sum(h["iterations"] + h.get("at_tol", {}).get("iterations", 0)
                               + h.get("polish", {}).get("iterations", 0) for h in hist) \
        + sum(s["iterations"] for s in r.extras["branch_steps"])
    assert r.success and r.objective == pytest.approx(1.0, abs=1e-6)


def test_ipopt_success_is_not_enough() -> None:
    # A homotopy stopped at sigma = 1e-2 (and no polish): every NLP succeeds, but z_i w_i <= 1e-2
    # leaves max |min(z, w)| far above comp_tol; the independent check must refuse it, without raising.
    prog, z = lcp_prog(M2, Q2)
    r = solve_program(prog, "casadi", "scholtes", sigma0=1.0, sigma_min=1e-2, polish=False)
    assert r.backend_status == "Solve_Succeeded"
    assert r.status is Status.NOT_SOLVED
    assert r.residuals["comp_min"] > 1e-8 and "comp_min" in r.message
    assert [h["sigma"] for h in r.extras["homotopy"]] == pytest.approx([1.0, 0.1, 0.01])


def test_equality_constrained_program_matches_its_lcp() -> None:
    # free y, lam >= 0:  y - lam0 - 1 = 0,  0 <= lam _|_ (y + lam0 - 3, lam1 + y - 4) >= 0.
    # Schur: w = (2 lam0 - 2, lam1 + lam0 - 3) -> lam = (1, 2), y = 2.
    prog = Program()
    y = prog.add_variables("y", 1)
    lam = prog.add_variables("lam", 2, lb=0.0)
    prog.add_constraint(y.sym - lam.sym[0] - 1.0, 0.0, 0.0)
    prog.add_complementarity(lam, ca.vertcat(y.sym + lam.sym[0] - 3.0, lam.sym[1] + y.sym - 4.0))
    red = prog.to_lcp()
    np.testing.assert_allclose(red.M, [[2.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(red.q, [-2.0, -3.0])
    for backend in BACKENDS:
        r = solve_program(prog, backend)
        assert r.success, r.message
        np.testing.assert_allclose(r.x, red.invert([1.0, 2.0]), atol=1e-8)
        np.testing.assert_allclose(r.value(y), [2.0], atol=1e-8)


def test_parameters_are_used_at_their_current_value() -> None:
    prog = Program()
    z = prog.add_variables("z", 1, lb=0.0)
    r0 = prog.add_parameters("r", 1, -2.0)
    prog.add_complementarity(z, 4.0 * z.sym + r0.sym)  # z = max(0, -r / 4)
    # (Scholtes stops once max |min(z, w)| <= 1e-8, so z is within 1e-8 / 4 of the answer)
    assert solve_program(prog).value(z)[0] == pytest.approx(0.5, abs=1e-8)
    r0.value = -6.0
    assert solve_program(prog, "cyipopt").value(z)[0] == pytest.approx(1.5, abs=1e-8)
    r0.value = 3.0
    assert solve_program(prog).value(z)[0] == pytest.approx(0.0, abs=1e-8)


def test_non_convergence_is_a_status() -> None:
    prog, _ = lcp_prog(M2, Q2)
    r = solve_program(prog, "casadi", "direct", max_iter=1)
    assert r.status is Status.MAX_ITER and r.backend_status == "Maximum_Iterations_Exceeded"
    r = solve_program(prog, "cyipopt", "direct", max_iter=1)
    assert r.status is Status.MAX_ITER
    r = solve_program(prog, "casadi", "scholtes", time_limit=1e-12)
    assert r.status is Status.TIME_LIMIT


def test_infeasible_program_is_a_status() -> None:
    prog = Program()
    z = prog.add_variables("z", 1, lb=0.0)
    prog.add_complementarity(z, -z.sym - 1.0)  # w = -z - 1 < 0 for every z >= 0
    for backend in BACKENDS:
        r = solve_program(prog, backend)
        assert r.status is Status.INFEASIBLE, r.message
        # the homotopy stops after infeasible_stop = 3 infeasible NLPs in a row (tighter sets stay
        # infeasible); with infeasible_stop = 1 after the first
        assert len(r.extras["homotopy"]) == 3
        assert len(solve_program(prog, backend, infeasible_stop=1).extras["homotopy"]) == 1


def test_options_are_strict() -> None:
    prog, z = lcp_prog(M2, Q2)
    with pytest.raises(OptionError, match="did you mean 'sigma_min'"):
        solve_program(prog, sigma_mni=1e-9)
    with pytest.raises(OptionError, match="did you mean 'scholtes'"):
        solve_program(prog, strategy="scholte")
    with pytest.raises(OptionError, match="did you mean 'cyipopt'"):
        solve_program(prog, backend="cyipop")
    with pytest.raises(OptionError, match="did you mean 'mu_strategy'"):
        solve_program(prog, ipopt={"mu_strateg": "adaptive"})
    with pytest.raises(OptionError, match="takes a string"):
        solve_program(prog, ipopt={"mu_strategy": 3})
    with pytest.raises(OptionError, match="through the option 'tol'"):
        solve_program(prog, ipopt={"tol": 1e-3})
    with pytest.raises(OptionError, match="sigma_factor"):
        solve_program(prog, sigma_factor=2.0)
    with pytest.raises(InputError) as err:
        solve_program("not a program")  # type: ignore[arg-type]
    assert err.value.field == "prog"
    with pytest.raises(InputError) as err:
        solve_program(prog).value(Program().add_variables("z", 2))
    assert err.value.field == "handle"
    # IPOPT's types are coerced (an int for a real option works on both backends)
    assert ipopt_option_types()["acceptable_tol"] == "real"
    caller = {"acceptable_tol": 1}
    opts = NLPOptions(ipopt=caller)
    for backend in BACKENDS:
        assert solve_program(prog, backend, options=opts).success
    assert caller == {"acceptable_tol": 1}  # the caller's dict is not written into


# ----------------------------------------------------------------------------------------------
# The registered LCP solvers "ipopt" and "cyipopt"
# ----------------------------------------------------------------------------------------------
def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    d = np.load(DATA / f"lcp_{name}.npz", allow_pickle=False)
    return d["M"], d["q"]


SOLVABLE = ["CPS_1", "trivial", "deudeu", "ortiz", "exp_murty", "mmc"]


@pytest.mark.parametrize("solver", ["ipopt", "cyipopt"])
@pytest.mark.parametrize("name", SOLVABLE)
def test_lcp_solvers_on_shared_problems(solver: str, name: str) -> None:
    M, q = load(name)
    r = lcp_solver(solver)(M, q)
    assert r.status is Status.SOLVED, r.message
    assert r.solver == solver
    assert lcp_residual(M, q, r.x) <= 1e-8 and r.residual <= 1e-8
    np.testing.assert_allclose(r.extras["w"], M @ r.x + q, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mod", [ipopt_lcp, ipopt_lcp_cy])
def test_lcp_solvers_unique_solution_and_strategies(mod) -> None:
    for strategy in ["scholtes", "direct", "elastic_l1"]:
        r = mod.solve(M2, Q2, strategy=strategy)
        assert r.success and np.abs(r.x - Z2).max() <= 1e-8, (strategy, r.message)


@pytest.mark.parametrize("mod", [ipopt_lcp, ipopt_lcp_cy])
def test_lcp_solvers_refuse_the_infeasible_problem(mod) -> None:
    M, q = load("Pang_isolated_sol_perturbed")  # w_2 = -z_1 - 1 < 0: no solution
    r = mod.solve(M, q)
    assert r.status is not Status.SOLVED
    assert r.residual > 1e-8


@pytest.mark.parametrize("mod", [ipopt_lcp, ipopt_lcp_cy])
def test_lcp_solvers_on_a_zero_matrix(mod) -> None:
    # M = 0: w = q is constant (empty constraint Jacobian; cyipopt needs a padded structure).
    r = mod.solve(np.zeros((1, 1)), np.zeros(1))  # every z >= 0 solves it
    assert r.success and r.x[0] >= 0.0
    r = mod.solve(np.zeros((2, 2)), np.array([-1.0, 1.0]))  # w_1 = -1 < 0: no solution
    assert not r.success and r.residual >= 1.0 - 1e-12


def test_lcp_solver_input_and_option_errors() -> None:
    for solve, M, q, field in ((ipopt_lcp.solve, np.ones((2, 3)), np.ones(2), "M"),
                               (ipopt_lcp_cy.solve, np.eye(2), [1.0, np.nan], "q")):
        with pytest.raises(InputError) as err:
            solve(M, q)
        assert err.value.field == field
    with pytest.raises(OptionError, match="did you mean 'max_iter'"):
        ipopt_lcp.solve(M2, Q2, max_iters=10)
    with pytest.raises(OptionError, match="did you mean 'scholtes'"):
        ipopt_lcp_cy.solve(M2, Q2, strategy="scholts")
    r = ipopt_lcp.solve(M2, Q2, max_iter=1, strategy="direct")  # not converged: a status
    assert isinstance(r.status, Status)
