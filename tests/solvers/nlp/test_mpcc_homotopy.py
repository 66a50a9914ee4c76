"""The MPCC homotopy of solve_program: the early stop, the active-set polish, the branch steps of the
B-stationarity certificate, the l-infinity Scholtes mode, the portfolio and the product-form reading
of the pairs (sign_constraints=False). Every expected value is worked out by hand in a comment."""
from __future__ import annotations

import math

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.program import Program
from contactmp.result import Status
from contactmp.solvers.nlp.stationarity import BVerdict, b_stationarity
from contactmp.solvers.nlp.mpcc import NONNEG, PORTFOLIO, S_MAX, ZERO, relax, relaxation
from contactmp.solvers.nlp.solve import STRATEGIES, solve_program


def corner(start: tuple[float, float] = (0.5, 0.5)) -> tuple[Program, object, object]:
    """min (x - 1)^2 + (y - 1)^2 s.t. 0 <= x _|_ y >= 0; local minimizers (1, 0) and (0, 1), f = 1."""
    prog = Program("corner")
    x = prog.add_variables("x", 1, lb=0.0, init=start[0])
    y = prog.add_variables("y", 1, lb=0.0, init=start[1])
    prog.add_cost((x.sym - 1) ** 2 + (y.sym - 1) ** 2)
    prog.add_complementarity(x, y, name="xy")
    return prog, x, y


def scholtes4() -> Program:
    """min z1 + z2 - z3 s.t. z3 <= 4 z1, z3 <= 4 z2, 0 <= z1 _|_ z2 >= 0 (MacMPEC's scholtes4, from the
    Pyomo example's start z = (0, 1), z3 = 0); the solution is the origin, f = 0."""
    prog = Program("scholtes4")
    z = prog.add_variables("z", 3, lb=[0.0, 0.0, -np.inf], init=[0.0, 1.0, 0.0])
    prog.add_cost(z.sym[0] + z.sym[1] - z.sym[2])
    prog.add_constraint(z.sym[2] - 4 * z.sym[0], -np.inf, 0.0, name="r1")
    prog.add_constraint(z.sym[2] - 4 * z.sym[1], -np.inf, 0.0, name="r2")
    prog.add_complementarity(z.sym[0], z.sym[1], name="z1z2")
    return prog


def nlp_iterations(r) -> int:
    """Every IPOPT iteration recorded in a result's extras."""
    hist = r.extras["homotopy"]
    return sum(h["iterations"] + h.get("at_tol", {}).get("iterations", 0) + h.get("polish", {}).get("iterations", 0)
               + h.get("polish", {}).get("first_try", {}).get("iterations", 0)
               + h.get("infeasible_at_homotopy_tol", {}).get("iterations", 0)
               for h in hist) + sum(s["iterations"] for s in r.extras.get("branch_steps", []))


# ---------------------------------------------------------------------------------------------
# the planted non-B-stationary endpoint: certificate and branch step
# ---------------------------------------------------------------------------------------------
def test_relaxation_endpoint_that_is_not_b_stationary_is_caught_and_left_by_a_branch_step() -> None:
    # From the symmetric start (0.5, 0.5) every Scholtes NLP keeps x = y (the NLP is symmetric in x
    # and y, and so is IPOPT's path): min (x - 1)^2 + (y - 1)^2 on x y <= sigma ends at x = y =
    # sqrt(sigma) (for sigma < 1/4 a saddle along the hyperbola), whose limit is the origin, f = 2.
    # The first NLP (sigma = 0.01) ends at x = y = 0.1; its polish fixes both sides (biactive:
    # max(x, y) <= 2 sqrt(max x y)) and returns the origin. The LPEC there: grad f = (-2, -2) on
    # {d_x = 0 <= d_y <= 1} u {d_y = 0 <= d_x <= 1}: value -2, so the origin is not B-stationary;
    # the branch NLP (one side 0, the other >= 0) ends at (1, 0) or (0, 1), f = 1, where the LPEC's
    # value is 0, and the homotopy ends there.
    prog, x, y = corner()
    r = solve_program(prog, "casadi", "scholtes")
    hist = r.extras["homotopy"]
    assert [h["sigma"] for h in hist] == [0.01]
    assert hist[0]["comp_min"] == pytest.approx(0.1, rel=1e-3)
    assert hist[0]["polish"]["objective"] == pytest.approx(2.0, abs=1e-6)
    steps = r.extras["branch_steps"]
    assert len(steps) == 1 and steps[0]["f"] == pytest.approx(2.0, abs=1e-6)
    assert steps[0]["verdict"] == "no" and steps[0]["value"] == pytest.approx(-2.0, abs=1e-8)
    assert steps[0]["accepted"] and steps[0]["f_new"] == pytest.approx(1.0, abs=1e-7)
    assert r.status is Status.SOLVED and r.extras["found_by"] == "branch"
    xy = sorted([float(r.value(x)[0]), float(r.value(y)[0])])
    assert xy == pytest.approx([0.0, 1.0], abs=1e-7)
    assert r.objective == pytest.approx(1.0, abs=1e-7)
    assert r.extras["b_stationarity"]["b_stationary"] is True
    assert r.extras["b_stationarity"]["value"] == pytest.approx(0.0, abs=1e-6)
    assert r.iterations == nlp_iterations(r)
    # the certificates are timed apart
    assert r.extras["certify_time_s"] > 0.0

    # Without branch steps the origin is kept aside and the homotopy goes on; on the symmetric line
    # every polish returns the origin again and the last NLP ends at x = y = 1e-6 (not complementary
    # to comp_tol), so the answer is the best solved one, the origin, reported as not certified.
    r0 = solve_program(prog, "casadi", "scholtes", branch_rounds=0)
    assert [h["sigma"] for h in r0.extras["homotopy"]] == pytest.approx([10.0 ** -k for k in range(2, 13)])
    assert r0.status is Status.SOLVED and r0.extras["branch_steps"] == []
    np.testing.assert_allclose(r0.x, [0.0, 0.0], atol=1e-7)
    assert r0.extras["b_stationarity"]["b_stationary"] is False
    assert r0.extras["b_stationarity"]["value"] == pytest.approx(-2.0, abs=1e-8)
    assert "no answer certified" in r0.message


def test_scholtes4_reaches_the_origin_exactly() -> None:
    # The Scholtes NLPs end at z1 = z2 = sqrt(sigma)-ish points with z3 = 4 min(z1, z2): the limit is
    # the origin, biactive (a degenerate solution: B- but not S-stationary, see
    # test_b_stationarity). The homotopy alone stalls near complementarity 1e-6; the polish fixes
    # z1 = z2 = 0, so z3 <= 0 and the tightened NLP's minimizer is z3 = 0, f = 0.
    r = solve_program(scholtes4(), "casadi", "scholtes")
    assert r.status is Status.SOLVED, r.message
    np.testing.assert_allclose(r.x, [0.0, 0.0, 0.0], atol=1e-8)
    assert r.residuals["comp_min"] <= 1e-12
    assert r.extras["found_by"] in ("polish", "nlp")
    assert r.extras["b_stationarity"]["b_stationary"] is True


# ---------------------------------------------------------------------------------------------
# the homotopy stops at the first verified point; the polish is checked independently
# ---------------------------------------------------------------------------------------------
def lcp_program() -> tuple[Program, object]:
    """LCP(q, M) with M = [[2, 1], [1, 2]], q = (-5, -6): z = (4/3, 7/3), w = 0 (both z > 0)."""
    prog = Program("lcp")
    z = prog.add_variables("z", 2, lb=0.0)
    M, q = np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-5.0, -6.0])
    prog.add_complementarity(z, ca.mtimes(ca.DM(M), z.sym) + ca.DM(q))
    return prog, z


def test_the_first_nlps_polish_ends_the_homotopy() -> None:
    # At sigma = 1 the relaxed answer already has z > w: the polish fixes w = 0 (the side rows, here
    # expressions of z) and the tightened NLP is the linear system M z + q = 0: z = (4/3, 7/3)
    # exactly, so the homotopy stops after its first NLP.
    prog, z = lcp_program()
    r = solve_program(prog, "casadi", "scholtes")
    assert r.status is Status.SOLVED and r.extras["found_by"] == "polish"
    assert len(r.extras["homotopy"]) == 1
    np.testing.assert_allclose(r.value(z), [4 / 3, 7 / 3], atol=1e-9)
    assert r.residuals["comp_min"] <= 1e-9
    # without the polish the same homotopy runs on until max |min(z, w)| <= comp_tol
    r2 = solve_program(prog, "casadi", "scholtes", polish=False)
    assert r2.status is Status.SOLVED and len(r2.extras["homotopy"]) > 1
    np.testing.assert_allclose(r2.value(z), [4 / 3, 7 / 3], atol=1e-8)


def wrong_side_first() -> tuple[Program, object, object]:
    """min (x - 1)^2 + (y - 3)^2 s.t. x >= 1/2 (a row), 0 <= x _|_ y >= 0, started at (0.6, 1): its
    only B-stationary point is (1, 0), f = 9."""
    prog = Program("wrong_side_first")
    x = prog.add_variables("x", 1, lb=0.0, init=0.6)
    y = prog.add_variables("y", 1, lb=0.0, init=1.0)
    prog.add_constraint(x.sym, 0.5, np.inf, name="x_min")
    prog.add_cost((x.sym - 1) ** 2 + (y.sym - 3) ** 2)
    prog.add_complementarity(x, y)
    return prog, x, y


def test_a_polish_that_fails_the_checks_is_not_returned() -> None:
    # min (x - 1)^2 + (y - 3)^2 s.t. x >= 1/2 (a row), 0 <= x _|_ y >= 0. At sigma = 1 the relaxed
    # answer has x < y (x y <= 1 near (0.5, 2)), so the polish fixes x = 0: that piece is empty
    # (x >= 1/2), IPOPT reports it infeasible and the homotopy goes on. As sigma falls y -> 0, the
    # polish fixes y = 0 and returns the only B-stationary point, (1, 0), f = 9.
    prog, x, y = wrong_side_first()
    r = solve_program(prog, "casadi", "scholtes", sigma0=1.0)
    first = r.extras["homotopy"][0]["polish"]
    assert first["status"] != "Solve_Succeeded" and first["constraint"] > 1e-6
    assert r.status is Status.SOLVED and r.extras["found_by"] == "polish"
    np.testing.assert_allclose([r.value(x)[0], r.value(y)[0]], [1.0, 0.0], atol=1e-8)
    assert r.objective == pytest.approx(9.0, abs=1e-7)
    assert r.extras["b_stationarity"]["b_stationary"] is True


def test_a_loose_answer_that_passes_the_checks_is_solved_again_at_tol() -> None:
    # homotopy_tol = 1e-3: the inner NLPs stop early; an answer that passes the checks is only
    # returned after the same NLP is solved again at tol (recorded as "at_tol").
    prog, z = lcp_program()
    r = solve_program(prog, "casadi", "scholtes", polish=False, homotopy_tol=1e-3)
    assert r.status is Status.SOLVED
    last = r.extras["homotopy"][-1]
    assert last["tol"] == 1e-8 or "at_tol" in last
    assert [h["tol"] for h in r.extras["homotopy"][:-1]] == [1e-3] * (len(r.extras["homotopy"]) - 1)
    np.testing.assert_allclose(r.value(z), [4 / 3, 7 / 3], atol=1e-8)


# ---------------------------------------------------------------------------------------------
# pieces of the relaxation
# ---------------------------------------------------------------------------------------------
def test_piece_bounds_fix_variables_and_side_rows_and_switch_off_the_strategy_rows() -> None:
    prog, z = lcp_program()
    rel = relaxation(prog, "scholtes", 0.1, side_rows=True)
    # a = z (variables with lb 0: no sign row), b = M z + q (rows mpcc/sign_b)
    assert list(rel.a_var) == [0, 1] and list(rel.a_row) == [-1, -1]
    assert list(rel.b_var) == [-1, -1] and (rel.b_row >= 0).all() and (rel.pair_row >= 0).all()
    lbx, ubx, lbg, ubg = rel.piece_bounds(np.array([ZERO, NONNEG]), np.array([NONNEG, ZERO]))
    np.testing.assert_array_equal(lbx, [0.0, 0.0])
    np.testing.assert_array_equal(ubx, [0.0, np.inf])   # z_0 = 0
    assert lbg[rel.b_row[1]] == ubg[rel.b_row[1]] == 0.0  # w_1 = 0
    assert lbg[rel.b_row[0]] == 0.0 and ubg[rel.b_row[0]] == np.inf
    assert (lbg[rel.pair_row] == -np.inf).all() and (ubg[rel.pair_row] == np.inf).all()
    # an empty piece (a variable with lb = 0 asked to be <= -... ) is refused as None
    prog.variables[0].lb = np.array([1.0, 0.0])
    assert rel.piece_bounds(np.array([ZERO, NONNEG]), np.array([NONNEG, ZERO])) is None


def test_free_side_rows_stay_out_of_the_homotopys_nlp() -> None:
    # Without sign constraints a side that is an expression has no row in the homotopy's NLP (even a
    # free row changes IPOPT's path: on NOSBENCH's CARHYS elastic_l1 took 9 NLPs and failed with
    # them, 1 NLP without); the pieces are written on a second relaxation that has them.
    from contactmp.solvers.nlp.homotopy import engine
    from contactmp.solvers.nlp.solve import NLPOptions

    prog, z = lcp_program()
    o = NLPOptions.build(sign_constraints=False)
    eng = engine(prog, "scholtes", o, "casadi", {"print_level": 0, "sb": "yes"}, True, False)
    assert [c.name for c in eng.rel.program.constraints] == ["mpcc/product"]
    assert [c.name for c in eng.rel_piece.program.constraints] == ["mpcc/side_b", "mpcc/product"]
    assert eng.rel_piece.program.n_x == eng.rel.program.n_x
    # with sign constraints the sign rows serve both: one relaxation
    eng2 = engine(prog, "scholtes", NLPOptions.build(), "casadi", {"print_level": 0, "sb": "yes"}, True, False)
    assert eng2.rel_piece is eng2.rel


def test_side_rows_are_free_without_sign_constraints() -> None:
    prog, z = lcp_program()
    rel = relaxation(prog, "scholtes", 0.1, sign_constraints=False, side_rows=True)
    side = rel.program["mpcc/side_b"]
    assert side.size == 2 and (side.lb == -np.inf).all() and (side.ub == np.inf).all()
    # relax() (what users inspect) has no such rows
    names = [c.name for c in relax(prog, "scholtes", 0.1, sign_constraints=False).constraints]
    assert names == ["mpcc/product"]


# ---------------------------------------------------------------------------------------------
# the l-infinity mode of Scholtes' relaxation
# ---------------------------------------------------------------------------------------------
def test_scholtes_linf_is_one_slack_with_weight_one_over_sigma() -> None:
    prog, z = lcp_program()
    nlp = relax(prog, "scholtes_linf", 0.01)
    s = nlp["mpcc/s"]
    assert s.size == 1 and s.lb[0] == 0.0 and s.ub[0] == S_MAX == 10.0
    prod = nlp["mpcc/product"]
    assert prod.size == 2 and (prod.ub == 0.0).all()
    # f = 0 + s / sigma; rows a_i b_i - s: at z = (1, 1), s = 2: w = (-2, -3), products (-2, -3) - 2
    f = ca.Function("f", [nlp.x, nlp.p], [nlp.f, nlp.g])
    fv, gv = f([1.0, 1.0, 2.0], nlp.p0)
    assert float(fv) == pytest.approx(2.0 / 0.01)
    np.testing.assert_allclose(np.asarray(gv).ravel()[prod.index], [-4.0, -5.0])
    r = solve_program(prog, "casadi", "scholtes_linf")
    assert r.status is Status.SOLVED, r.message
    np.testing.assert_allclose(r.value(z), [4 / 3, 7 / 3], atol=1e-8)
    assert r.x.shape == (2,)  # the slack is not part of the answer


def test_scholtes_linf_solves_the_two_minima_mpcc() -> None:
    prog, x, y = corner(start=(0.9, 0.1))
    r = solve_program(prog, "casadi", "scholtes_linf")
    assert r.status is Status.SOLVED and r.extras["b_stationarity"]["b_stationary"] is True
    xy = sorted([float(r.value(x)[0]), float(r.value(y)[0])])
    assert xy == pytest.approx([0.0, 1.0], abs=1e-7) and r.objective == pytest.approx(1.0, abs=1e-7)


# ---------------------------------------------------------------------------------------------
# the portfolio
# ---------------------------------------------------------------------------------------------
def test_portfolio_stops_at_the_first_certified_answer() -> None:
    prog, x, y = corner(start=(0.9, 0.1))
    r = solve_program(prog, "casadi", "portfolio")
    assert r.status is Status.SOLVED and r.solver == "casadi/portfolio"
    attempts = r.extras["portfolio"]
    assert [a["strategy"] for a in attempts] == [PORTFOLIO[0].strategy] == [r.extras["member"]]
    assert attempts[0]["b_stationary"] is True and "monotone" in attempts[0]["member"]
    assert r.objective == pytest.approx(1.0, abs=1e-7)


def test_portfolio_runs_its_members_in_order_until_one_is_not_refuted() -> None:
    # branch_rounds = 0 and one NLP per strategy (sigma_min = sigma0, rho_max = rho0) from the
    # symmetric start: the relaxations end at the origin (f = 2), solved but not B-stationary (test
    # above); so the portfolio goes on down its list. The answer returned is the first one not
    # refuted by its certificate, or the best solved one.
    prog, x, y = corner()
    r = solve_program(prog, "casadi", "portfolio", branch_rounds=0, sigma0=1.0, sigma_min=1.0, rho_max=1.0)
    attempts = r.extras["portfolio"]
    names = [a["strategy"] for a in attempts]
    assert names == [m.strategy for m in PORTFOLIO[:len(names)]]
    assert attempts[0]["objective"] == pytest.approx(2.0, abs=1e-6)
    assert all(a["b_stationary"] is False for a in attempts[:-1])
    assert r.status is Status.SOLVED
    if attempts[-1]["b_stationary"] is not False:
        assert r.extras["member"] == names[-1] and r.objective == pytest.approx(attempts[-1]["objective"])
    else:
        assert len(names) == len(PORTFOLIO)
        assert r.objective == pytest.approx(min(a["objective"] for a in attempts if a["status"] == "solved"))
    assert r.iterations == sum(a["iterations"] for a in attempts)


def test_portfolio_members_have_their_options_and_caps() -> None:
    prog, _ = lcp_program()
    assert STRATEGIES["portfolio"].is_portfolio
    assert {m.strategy for m in PORTFOLIO} < set(STRATEGIES)
    assert PORTFOLIO[-1].cpu_seconds is None and all(m.cpu_seconds > 0 for m in PORTFOLIO[:-1])
    with pytest.raises(InputError, match="portfolio"):
        relax(prog, "portfolio", 1.0)


def test_cpu_time_limit_stops_the_homotopy() -> None:
    prog, _ = lcp_program()
    r = solve_program(prog, "casadi", "scholtes", cpu_time_limit=1e-9, polish=False)
    assert r.status is Status.TIME_LIMIT and "CPU" in r.message


# ---------------------------------------------------------------------------------------------
# the product reading of the pairs (sign_constraints=False): certificate and solved agree
# ---------------------------------------------------------------------------------------------
def sign_indefinite() -> tuple[Program, object, object]:
    """NOSBENCH's way of writing Lambda L = 0 with L free: the pairs (Lambda, L) and (Lambda, -L),
    read as the products Lambda L <= 0 and -Lambda L <= 0, Lambda >= 0 by its bound; minimize
    (Lambda - 1)^2 + (L - 1)^2. Local minimizers (1, 0) and (0, 1), f = 1."""
    prog = Program("sign_indefinite")
    lam = prog.add_variables("Lambda", 1, lb=0.0, init=0.5)
    L = prog.add_variables("L", 1, init=0.5)
    prog.add_cost((lam.sym - 1) ** 2 + (L.sym - 1) ** 2)
    prog.add_complementarity(ca.vertcat(lam.sym, lam.sym), ca.vertcat(L.sym, -L.sym), name="LambdaL")
    return prog, lam, L


def test_product_form_certificate_of_a_sign_indefinite_pair() -> None:
    prog, lam, L = sign_indefinite()
    # (0, 1): Lambda = 0 active with L = 1 > 0 in pair 1 (d_Lambda <= 0) and -L < 0 in pair 2
    # (d_Lambda >= 0); with the bound: d_Lambda = 0, and grad f = (-2, 0): value 0, B-stationary.
    cert = b_stationarity(prog, [0.0, 1.0], sign_constraints=False)
    assert cert.verdict is BVerdict.YES and cert.sides == ("a", "a")
    # with sign constraints the same point is not feasible (-L < 0): the readings differ
    assert b_stationarity(prog, [0.0, 1.0]).verdict is BVerdict.UNKNOWN
    # the origin: biactive twice; pair 1 on branch "b" (d_L <= 0 <= d_Lambda), pair 2 on "a"
    # (d_Lambda <= 0 <= -d_L) gives d_Lambda = 0... the best is d = (0, 1): pair 1 "a" (d_Lambda <=
    # 0 <= d_L) and pair 2 "b" (-d_L <= 0 <= d_Lambda): grad f^T d = -2 d_L = -2.
    cert0 = b_stationarity(prog, [0.0, 0.0], sign_constraints=False)
    assert cert0.verdict is BVerdict.NO and cert0.value == pytest.approx(-2.0, abs=1e-8)
    # that branch's piece: Lambda <= 0 <= L (pair 1 on "a") and Lambda >= 0 >= -L (pair 2 on "b"):
    # with Lambda's bound, Lambda = 0 and L >= 0; as a Program (branch_nlp), Lambda's bounds
    # [0, 0] and the row -L <= 0
    a_int, b_int = cert0.piece_intervals()
    np.testing.assert_array_equal(a_int, [[-np.inf, 0.0], [0.0, np.inf]])
    np.testing.assert_array_equal(b_int, [[0.0, np.inf], [-np.inf, 0.0]])
    from contactmp.solvers.nlp.stationarity import branch_nlp

    nlp = branch_nlp(prog, [0.0, 0.0], cert0)
    assert nlp.lbx[0] == nlp.ubx[0] == 0.0 and nlp.lbx[1] == 0.0
    assert [c.name for c in nlp.constraints] == ["LambdaL/branch_nonpos"]
    r = solve_program(nlp, "casadi")
    np.testing.assert_allclose(r.x, [0.0, 1.0], atol=1e-7)


def test_product_form_solve_is_solved_and_certified() -> None:
    prog, lam, L = sign_indefinite()
    r = solve_program(prog, "casadi", "scholtes", sign_constraints=False, comp_tol=1e-7)
    assert r.status is Status.SOLVED, r.message
    assert r.objective == pytest.approx(1.0, abs=1e-6)
    assert r.residuals["comp_prod"] <= 1e-7
    assert r.extras["b_stationarity"]["b_stationary"] is True


def test_a_certificate_does_not_make_an_uncomplementary_point_solved() -> None:
    # scholtes4 relaxed at sigma = 1e-13 only, no polish: the NLP's answer is z1 = z2 = t with
    # t^2 = sigma (f = z1 + z2 - z3 with z3 = 4 t is -2 t, pushing t up to the product row), so
    # max |min(z1, z2)| = 3.2e-7 > comp_tol = 1e-8: not solved. The certificate's own feasibility
    # test (active to 1e-6) takes the pair as biactive and the point as B-stationary (the LPEC of
    # the origin's cone, value 0); that must not turn the answer into "solved".
    r = solve_program(scholtes4(), "casadi", "scholtes", sigma0=1e-13, sigma_min=1e-13, polish=False)
    assert r.residuals["comp_min"] == pytest.approx(math.sqrt(1e-13), rel=1e-3)
    assert r.status is not Status.SOLVED
    assert r.extras["b_stationarity"]["b_stationary"] is True


def test_a_polish_with_more_equations_than_variables_falls_back_to_one_side_per_pair() -> None:
    # Two pairs on two free variables, sides written as rows: 0 <= x + y _|_ x - y >= 0 and
    # 0 <= x + 2y _|_ 2x - y >= 0, min (x - 1)^2 + (y - 1)^2. The four sign rows leave only a cone
    # around the origin, and the MPCC's feasible set is the origin alone (each piece pairs two
    # independent lines through it): f = 2, B-stationary (nothing else is feasible). The relaxed
    # answers lie near the origin with every side of order sqrt(sigma), so both pairs are biactive
    # for the polish: four rows fixed at 0 (no two parallel, so no twins) in two variables, which
    # IPOPT refuses (Not_Enough_Degrees_Of_Freedom, before its first iteration: 0 iterations
    # counted, not the stale count CasADi reports). The polish then keeps one side per pair at 0,
    # the nearer one: two equations, the origin.
    prog = Program("overdetermined_piece")
    x = prog.add_variables("x", 1, init=0.5)
    y = prog.add_variables("y", 1, init=0.2)
    prog.add_cost((x.sym - 1) ** 2 + (y.sym - 1) ** 2)
    prog.add_complementarity(ca.vertcat(x.sym + y.sym, x.sym + 2 * y.sym),
                             ca.vertcat(x.sym - y.sym, 2 * x.sym - y.sym), name="pairs")
    r = solve_program(prog, "casadi", "scholtes", sigma0=1.0)
    tries = [h["polish"].get("first_try", {}) for h in r.extras["homotopy"]]
    refused = [t for t in tries if t.get("status") == "Not_Enough_Degrees_Of_Freedom"]
    assert refused and all(t["iterations"] == 0 for t in refused)
    assert r.status is Status.SOLVED and r.extras["found_by"] == "polish"
    np.testing.assert_allclose(r.x, [0.0, 0.0], atol=1e-8)
    assert r.objective == pytest.approx(2.0, abs=1e-7)
    assert r.extras["b_stationarity"]["b_stationary"] is True
    assert 0 <= r.iterations == nlp_iterations(r)


def test_twin_zero_sides_are_fixed_once() -> None:
    # The pairs 0 <= 2x _|_ 2y >= 0 and 0 <= 3x _|_ 3y >= 0 from the symmetric start: the relaxed
    # answers are symmetric, so the polish fixes all four sides (both pairs biactive). 2x and 3x are
    # the same row up to a factor (and 2y, 3y): fixed twice they would be four equations of rank 2;
    # each twin is left at its sign row (>= 0) instead, 2 of them, and the piece is the origin.
    prog = Program("twins")
    x = prog.add_variables("x", 1, init=0.5)
    y = prog.add_variables("y", 1, init=0.5)
    prog.add_cost((x.sym - 1) ** 2 + (y.sym - 1) ** 2)
    prog.add_complementarity(ca.vertcat(2 * x.sym, 3 * x.sym), ca.vertcat(2 * y.sym, 3 * y.sym), name="pairs")
    r = solve_program(prog, "casadi", "scholtes", sigma0=1.0, branch_rounds=0)
    first = r.extras["homotopy"][0]["polish"]
    assert first["biactive"] == 2 and first["twin_rows"] == 2 and first["status"] == "Solve_Succeeded"
    assert "first_try" not in first
    assert first["objective"] == pytest.approx(2.0, abs=1e-6)


@pytest.mark.parametrize("strategy", ["scholtes", "elastic_l1"])
def test_warm_resolve_restarts_from_the_answers_multipliers(strategy: str) -> None:
    # The wrong-side-first MPCC (only B-stationary point (1, 0), f = 9) without polish: a loose inner
    # answer that passes the checks is solved again at tol. From its primal-dual point with a small
    # barrier (warm_resolve) IPOPT needs fewer iterations for that re-solve than from its primal
    # point alone (measured: 1 against 5-7), and both end at the same point.
    at_tol = {}
    for warm in (False, True):
        prog, x, y = wrong_side_first()
        r = solve_program(prog, "casadi", strategy, polish=False, homotopy_tol=1e-3, warm_resolve=warm)
        assert r.status is Status.SOLVED
        np.testing.assert_allclose([r.value(x)[0], r.value(y)[0]], [1.0, 0.0], atol=1e-7)
        assert r.objective == pytest.approx(9.0, abs=1e-6)
        resolves = [h["at_tol"] for h in r.extras["homotopy"] if "at_tol" in h]
        assert resolves and resolves[-1]["status"] == "Solve_Succeeded"
        at_tol[warm] = resolves[-1]["iterations"]
    assert at_tol[True] < at_tol[False]
    with pytest.raises(OptionError, match="warm_resolve"):
        solve_program(wrong_side_first()[0], "casadi", strategy, warm_resolve=1)


def test_resolve_at_last_solves_the_verified_answer_at_the_last_penalty() -> None:
    # elastic l1 on the wrong-side-first MPCC: the first verified loose answer is solved again at
    # tol with rho = rho_max (the homotopy's last NLP), and that answer, still (1, 0) with f = 9, is
    # returned with IPOPT's success.
    prog, x, y = wrong_side_first()
    r = solve_program(prog, "casadi", "elastic_l1", polish=False, homotopy_tol=1e-3, resolve_at_last=True,
                      rho_max=1e6)
    assert r.status is Status.SOLVED
    np.testing.assert_allclose([r.value(x)[0], r.value(y)[0]], [1.0, 0.0], atol=1e-7)
    assert r.objective == pytest.approx(9.0, abs=1e-6)
    resolves = [h["at_tol"] for h in r.extras["homotopy"] if "at_tol" in h]
    assert resolves and resolves[-1]["rho"] == 1e6 and resolves[-1]["status"] == "Solve_Succeeded"
    assert r.extras["homotopy"][-1]["rho"] < 1e6  # it stopped before the homotopy reached rho_max
