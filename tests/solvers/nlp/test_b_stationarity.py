"""B-stationarity certificates (the LPEC of the linearized tangent cone as a HiGHS MILP), the branch
NLP and the branch loop; every expected value is worked out by hand in the test's comment."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.program import Program
from contactmp.solvers.nlp.stationarity import BStationarity, BVerdict, b_stationarity, b_stationary_point, branch_nlp


def corner(bounded: bool = True) -> Program:
    """min (x - 1)^2 + (y - 1)^2  s.t.  0 <= x _|_ y >= 0 (signs from bounds, or from the pair alone)."""
    prog = Program("corner")
    lb = 0.0 if bounded else -np.inf
    x = prog.add_variables("x", 1, lb=lb)
    y = prog.add_variables("y", 1, lb=lb)
    prog.add_cost((x.sym - 1) ** 2 + (y.sym - 1) ** 2)
    prog.add_complementarity(x.sym, y.sym, name="xy")
    return prog


def scholtes4() -> Program:
    """min z1 + z2 - z3  s.t.  z3 <= 4 z1,  z3 <= 4 z2,  0 <= z1 _|_ z2 >= 0 (MacMPEC's scholtes4)."""
    prog = Program("scholtes4")
    z = prog.add_variables("z", 3, lb=[0.0, 0.0, -np.inf])
    prog.add_cost(z.sym[0] + z.sym[1] - z.sym[2])
    prog.add_constraint(z.sym[2] - 4 * z.sym[0], -np.inf, 0.0, name="r1")
    prog.add_constraint(z.sym[2] - 4 * z.sym[1], -np.inf, 0.0, name="r2")
    prog.add_complementarity(z.sym[0], z.sym[1], name="z1z2")
    return prog


# ---------------------------------------------------------------------------------------------
# (1) the biactive corner
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bounded", [True, False])
def test_corner_origin_is_not_b_stationary_with_the_exact_lpec_value(bounded):
    # grad f(0, 0) = (-2, -2); the LPEC's feasible set is {d_x = 0, 0 <= d_y <= 1} u {d_y = 0,
    # 0 <= d_x <= 1}; on either branch the minimum of -2 d_x - 2 d_y is -2, at d = (0, 1) or (1, 0).
    prog = corner(bounded)
    cert = b_stationarity(prog, [0.0, 0.0])
    assert cert.verdict is BVerdict.NO and cert.b_stationary is False
    assert cert.value == pytest.approx(-2.0, abs=1e-9)
    assert cert.n_biactive == 1 and cert.n_binary == 1 and cert.biactive == (0,) and cert.sides == ("ab",)
    d = cert.direction
    assert d is not None and float(np.array([-2.0, -2.0]) @ d) == pytest.approx(-2.0, abs=1e-9)
    # the branch says which side stays 0; the direction keeps that side's linearization at 0
    assert cert.branch in (("a",), ("b",))
    fixed, free = (0, 1) if cert.branch == ("a",) else (1, 0)
    assert d[fixed] == pytest.approx(0.0, abs=1e-9) and d[free] == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("point", [[1.0, 0.0], [0.0, 1.0]])
def test_corner_axis_minimizers_are_b_stationary(point):
    # at (1, 0): b = y = 0 < a = x = 1, so d_y = 0; grad f = (0, -2), so grad f^T d = 0 for all
    # admissible d: the LPEC optimum is 0 (and symmetrically at (0, 1)).
    cert = b_stationarity(corner(), point)
    assert cert.verdict is BVerdict.YES and cert.b_stationary is True
    assert cert.value == pytest.approx(0.0, abs=1e-12)
    assert cert.n_biactive == 0 and cert.n_binary == 0
    assert cert.sides == (("b",) if point[0] == 1.0 else ("a",))



def test_pair_tol_reads_a_product_complementary_point():
    # (2e-4, 3e-4): x y = 6e-8 <= comp_tol = 1e-7, so the point is solved in the product reading,
    # but both sides are above active_tol = 1e-6: by default no side is active ("not complementary",
    # UNKNOWN). With pair_tol = sqrt(1e-7) = 3.16e-4 both sides are active, the pair is biactive,
    # and the LPEC with grad f = (2 (2e-4 - 1), 2 (3e-4 - 1)) = (-1.9996, -1.9994) takes the branch
    # y = 0, d = (1, 0): value -1.9996 (NO).
    point = [2e-4, 3e-4]
    loose = b_stationarity(corner(False), point, sign_constraints=False)
    assert loose.verdict is BVerdict.UNKNOWN and "not complementary" in loose.message
    cert = b_stationarity(corner(False), point, sign_constraints=False, pair_tol=float(np.sqrt(1e-7)))
    assert cert.sides == ("ab",) and cert.verdict is BVerdict.NO
    assert cert.value == pytest.approx(2 * (2e-4 - 1), abs=1e-9)
    with pytest.raises(InputError) as ei:
        b_stationarity(corner(False), point, pair_tol=0.0)
    assert ei.value.field == "pair_tol"

def test_corner_branch_nlp_moves_to_a_certified_axis_minimizer():
    prog = corner()
    cert = b_stationarity(prog, [0.0, 0.0])
    nlp = branch_nlp(prog, [0.0, 0.0], cert)
    assert nlp.n_comp == 0 and nlp.n_x == 2
    # the branch fixes the side the LPEC kept at 0 (a variable: by its bounds) and keeps the other >= 0
    fixed = 0 if cert.branch == ("a",) else 1
    assert nlp.lbx[fixed] == nlp.ubx[fixed] == 0.0 and nlp.lbx[1 - fixed] == 0.0
    x, final, history = b_stationary_point(prog, [0.0, 0.0])
    expect = np.array([0.0, 1.0]) if fixed == 0 else np.array([1.0, 0.0])
    np.testing.assert_allclose(x, expect, atol=1e-7)
    assert final.verdict is BVerdict.YES and final.value == pytest.approx(0.0, abs=1e-6)
    assert [h["verdict"] for h in history] == ["no", "yes"]
    assert history[0]["accepted"] and history[0]["f_new"] == pytest.approx(1.0, abs=1e-7)


def test_corner_branch_nlp_with_expression_sides_uses_rows():
    # sides that are expressions (2 x, 3 y of free variables) cannot become bounds: the branch writes
    # the rows {pair}/branch_zero (= 0) and {pair}/branch_nonneg (>= 0).
    prog = Program("corner_expr")
    x = prog.add_variables("x", 1)
    y = prog.add_variables("y", 1)
    prog.add_cost((x.sym - 1) ** 2 + (y.sym - 1) ** 2)
    prog.add_complementarity(2 * x.sym, 3 * y.sym, name="xy")
    cert = b_stationarity(prog, [0.0, 0.0])
    # the pair 0 <= 2x _|_ 3y >= 0 has the same feasible set: same value -2
    assert cert.verdict is BVerdict.NO and cert.value == pytest.approx(-2.0, abs=1e-9)
    nlp = branch_nlp(prog, [0.0, 0.0], cert)
    assert [c.name for c in nlp.constraints] == ["xy/branch_zero", "xy/branch_nonneg"]
    x_end, final, _ = b_stationary_point(prog, [0.0, 0.0])
    assert final.verdict is BVerdict.YES
    assert sorted(np.round(x_end, 6)) == [0.0, 1.0]


# ---------------------------------------------------------------------------------------------
# (2) Scholtes' scholtes4
# ---------------------------------------------------------------------------------------------
def test_scholtes4_origin_is_b_stationary():
    # at 0 both rows are active: d3 <= 4 d1, d3 <= 4 d2. Branch d1 = 0 <= d2: d3 <= 0, so
    # d1 + d2 - d3 = d2 - d3 >= 0; branch d2 = 0 <= d1: d1 - d3 >= 0. Optimum 0: B-stationary
    # (though not S-stationary: d1 = d2 = 1/4, d3 = 1 gives -1/2 on the relaxed cone d1, d2 >= 0).
    cert = b_stationarity(scholtes4(), [0.0, 0.0, 0.0])
    assert cert.verdict is BVerdict.YES
    assert cert.value == pytest.approx(0.0, abs=1e-9) and cert.dual_bound >= -1e-9
    assert cert.n_biactive == 1 and cert.n_binary == 1
    # 2 active rows + 4 rows of the one biactive pair
    assert cert.lpec_rows == 6


def test_scholtes4_point_on_the_z1_axis_is_not_b_stationary():
    # at (1, 0, 0): z2 = 0 < z1 = 1, so d2 = 0; r1 = -4 is inactive, r2 = 0 active: d3 <= 4 d2 = 0.
    # grad f^T d = d1 - d3 with d1 in [-1, 1] (z1 = 1 is off its bound): minimum d1 = -1, d3 = 0,
    # value -1, d = (-1, 0, 0). No biactive pair: the MILP is the LP, without binaries.
    cert = b_stationarity(scholtes4(), [1.0, 0.0, 0.0])
    assert cert.verdict is BVerdict.NO
    assert cert.value == pytest.approx(-1.0, abs=1e-9)
    assert cert.n_biactive == 0 and cert.n_binary == 0 and cert.branch == () and cert.sides == ("b",)
    np.testing.assert_allclose(cert.direction, [-1.0, 0.0, 0.0], atol=1e-9)


def test_scholtes4_branch_loop_reaches_the_origin():
    # branch NLP from (1, 0, 0): z2 = 0, z1 >= 0, z3 <= 4 z1, z3 <= 0: f = z1 - z3 >= 0 with
    # equality only at z1 = z3 = 0. The origin is B-stationary (above).
    x, cert, history = b_stationary_point(scholtes4(), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(x, [0.0, 0.0, 0.0], atol=1e-6)
    assert cert.verdict is BVerdict.YES
    assert history[0]["verdict"] == "no" and history[0]["accepted"]
    assert history[-1]["verdict"] == "yes"


# ---------------------------------------------------------------------------------------------
# (3) no biactive pair: the LPEC is the LP
# ---------------------------------------------------------------------------------------------
def test_non_biactive_lpec_equals_the_lp_value():
    # 0 <= x _|_ y >= 0 at (0, 2), f = 3 x - y + x y: grad f = (3 + y, -1 + x) = (5, -1).
    # a = x = 0 < b = 2: d_x = 0 (pair) and d_x >= 0 (bound); d_y in [-1, 1]. LP: min -d_y = -1 at d_y = 1.
    prog = Program("lp")
    x = prog.add_variables("x", 1, lb=0.0)
    y = prog.add_variables("y", 1, lb=0.0)
    prog.add_cost(3 * x.sym - y.sym + x.sym * y.sym)
    prog.add_complementarity(x.sym, y.sym)
    cert = b_stationarity(prog, [0.0, 2.0])
    assert cert.n_binary == 0 and cert.sides == ("a",)
    assert cert.verdict is BVerdict.NO and cert.value == pytest.approx(-1.0, abs=1e-12)
    np.testing.assert_allclose(cert.direction, [0.0, 1.0], atol=1e-12)
    # the same LP by scipy's LP solver, written out by hand
    from scipy.optimize import linprog

    lp = linprog([5.0, -1.0], A_eq=[[1.0, 0.0]], b_eq=[0.0], bounds=[(0, 1), (-1, 1)])
    assert cert.value == pytest.approx(lp.fun, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# (4) infeasible points
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("point, why", [
    ([1.0, 1.0], "not complementary"),      # both sides positive
    ([-0.1, 0.0], "bound violation"),       # x < lb = 0
    ([np.nan, 0.0], "not finite"),
])
def test_infeasible_point_gives_unknown(point, why):
    cert = b_stationarity(corner(), point)
    assert cert.verdict is BVerdict.UNKNOWN and cert.b_stationary is None
    assert why in cert.message
    assert cert.direction is None and np.isnan(cert.value)
    with pytest.raises(InputError):
        branch_nlp(corner(), [1.0, 1.0], cert)


def test_violated_row_and_negative_side_give_unknown():
    prog = scholtes4()
    cert = b_stationarity(prog, [0.0, 0.0, 1.0])  # z3 = 1 > 4 z1 = 0
    assert cert.verdict is BVerdict.UNKNOWN and "row violation" in cert.message
    free = corner(bounded=False)
    cert = b_stationarity(free, [-1e-3, 0.0])  # a = x < 0 (no bound to report it)
    assert cert.verdict is BVerdict.UNKNOWN and "side < 0" in cert.message
    # within the tolerances the same point counts as feasible: a = -1e-9 is 0
    assert b_stationarity(free, [-1e-9, 0.0]).verdict is BVerdict.NO


def test_malformed_input_raises():
    with pytest.raises(InputError):
        b_stationarity(corner(), [0.0])
    with pytest.raises(InputError):
        b_stationarity(corner(), [0.0, 0.0], active_tol=0.0)
    with pytest.raises(InputError):
        b_stationarity("not a program", [0.0, 0.0])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# (5) equality rows and active bounds keep d in the tangent cone
# ---------------------------------------------------------------------------------------------
def cone_program(z_upper: bool) -> Program:
    """Variables x <= 1, y >= 0, z free, s = 0.5 fixed; f = x - y - s; equality x^2 + z = 2;
    pair 0 <= y _|_ z + x - 1 >= 0; inequality x + z <= 10 (inactive); optionally z <= 1."""
    prog = Program("cone")
    x = prog.add_variables("x", 1, ub=1.0)
    y = prog.add_variables("y", 1, lb=0.0)
    z = prog.add_variables("z", 1)
    s = prog.add_variables("s", 1, lb=0.5, ub=0.5)
    prog.add_cost(x.sym - y.sym - s.sym)
    prog.add_constraint(x.sym ** 2 + z.sym, 2.0, 2.0, name="eq")
    prog.add_constraint(x.sym + z.sym, -np.inf, 10.0, name="far")
    if z_upper:
        prog.add_constraint(z.sym, -np.inf, 1.0, name="z_upper")
    prog.add_complementarity(y.sym, z.sym + x.sym - 1, name="pair")
    return prog


def test_equality_rows_and_active_bounds_bound_the_descent():
    # at (x, y, z, s) = (1, 0, 1, 0.5): grad f = (1, -1, 0, -1). Tangent cone: d_x <= 0 (x at ub),
    # d_y = 0 (y = 0 < z + x - 1 = 1), d_s = 0 (fixed), 2 d_x + d_z = 0 (equality, grad (2, 0, 1, 0)).
    # grad f^T d = d_x with |d_z| = 2 |d_x| <= 1: the minimum is -1/2 at d = (-1/2, 0, 1, 0).
    # (Ignoring the equality would give -1, ignoring d_y = 0 or d_s = 0 another -1 each.)
    cert = b_stationarity(cone_program(False), [1.0, 0.0, 1.0, 0.5])
    assert cert.verdict is BVerdict.NO and cert.n_biactive == 0
    assert cert.value == pytest.approx(-0.5, abs=1e-9)
    np.testing.assert_allclose(cert.direction, [-0.5, 0.0, 1.0, 0.0], atol=1e-9)
    # the inactive row x + z <= 10 adds no row: 1 equality + 1 pair row
    assert cert.lpec_rows == 2


def test_an_active_inequality_row_makes_the_point_b_stationary():
    # with z <= 1 active: d_z <= 0, so d_x = -d_z / 2 >= 0, and d_x <= 0: d_x = 0, value 0.
    cert = b_stationarity(cone_program(True), [1.0, 0.0, 1.0, 0.5])
    assert cert.verdict is BVerdict.YES and cert.value == pytest.approx(0.0, abs=1e-9)
    assert cert.lpec_rows == 3


def test_biactive_direction_respects_the_branch_and_the_rows():
    # min -y - z  s.t.  y >= 0, y + z <= 1, 0 <= y _|_ z >= 0. At the origin the row is inactive;
    # branch y = 0: d_z in [0, 1], value -1; branch z = 0: d_y in [0, 1], value -1.
    prog = Program("bi")
    y = prog.add_variables("y", 1, lb=0.0)
    z = prog.add_variables("z", 1)
    prog.add_cost(-y.sym - z.sym)
    prog.add_constraint(y.sym + z.sym, -np.inf, 1.0)
    prog.add_complementarity(y.sym, z.sym)
    cert = b_stationarity(prog, [0.0, 0.0])
    assert cert.verdict is BVerdict.NO and cert.value == pytest.approx(-1.0, abs=1e-9)
    d = cert.direction
    assert min(d[0], d[1]) == pytest.approx(0.0, abs=1e-9) and min(d) >= -1e-9
    assert d[0 if cert.branch == ("a",) else 1] == pytest.approx(0.0, abs=1e-12)
    # with the row y + z <= 1 at its bound (x* = (0, 1), i.e. z = 1 > 0 = y): d_y = 0 and
    # d_y + d_z <= 0: value min -d_z = 0 at d_z = 0 (d_z <= 0): B-stationary.
    cert = b_stationarity(prog, [0.0, 1.0])
    assert cert.verdict is BVerdict.YES and cert.sides == ("a",)


def test_certificate_is_frozen_and_reports_sizes():
    cert = b_stationarity(corner(), [0.0, 0.0])
    assert isinstance(cert, BStationarity)
    with pytest.raises(AttributeError):
        cert.value = 0.0  # type: ignore[misc]
    assert cert.lpec_rows == 4 and cert.time_s >= 0 and str(cert.verdict) == "no"
    assert cert.pair_branch() == cert.branch


def test_two_biactive_pairs_take_one_binary_each():
    # two copies of the corner: grad f = (-2, -2, -2, -2) at 0; each pair contributes -2: value -4
    prog = Program("two")
    v = prog.add_variables("v", 4, lb=0.0)
    prog.add_cost(sum((v.sym[i] - 1) ** 2 for i in range(4)))
    prog.add_complementarity(v.sym[0:2], v.sym[2:4], name="pairs")
    cert = b_stationarity(prog, np.zeros(4))
    assert cert.verdict is BVerdict.NO and cert.value == pytest.approx(-4.0, abs=1e-9)
    assert cert.n_biactive == cert.n_binary == 2 and cert.lpec_rows == 8 and len(cert.branch) == 2
    x, final, history = b_stationary_point(prog, np.zeros(4))
    assert final.verdict is BVerdict.YES and len(history) == 2
    assert final.objective == pytest.approx(2.0, abs=1e-6)  # one side of each pair at 1, the other at 0


def test_time_limit_and_zero_rounds():
    cert = b_stationarity(corner(), [0.0, 0.0], time_limit=1e-12)
    assert cert.verdict is BVerdict.UNKNOWN and "time limit" in cert.message
    assert cert.n_biactive == 1  # the active sets were found before the limit
    x, cert, history = b_stationary_point(corner(), [0.0, 0.0], max_rounds=0)
    assert cert.verdict is BVerdict.NO and len(history) == 1 and "accepted" not in history[0]
    np.testing.assert_array_equal(x, [0.0, 0.0])


# ---------------------------------------------------------------- attached to solve_program
def test_solve_program_attaches_the_certificate_and_times_it_apart():
    from contactmp.solvers.nlp.solve import solve_program

    prog = corner()
    prog["x"].init, prog["y"].init = np.array([0.9]), np.array([0.2])
    res = solve_program(prog, strategy="scholtes")
    assert res.success, res.message
    cert = res.extras["b_stationarity"]
    # a Scholtes limit point of this corner problem is (1, 0) or (0, 1): B-stationary, LPEC value 0
    assert cert["b_stationary"] is True and cert["verdict"] == "yes"
    assert abs(cert["value"]) <= 1e-6 and cert["time_s"] >= 0.0
    assert sorted(np.round(res.x, 6)) == [0.0, 1.0]
    assert set(cert) == {"b_stationary", "verdict", "value", "n_biactive", "n_binary", "lpec_rows", "time_s",
                         "message"}
    assert res.extras["certify_time_s"] >= cert["time_s"] > 0.0
    # without the certificate nothing is certified and no branch step is taken; from sigma0 = 1 the
    # relaxed answer is (1, 1) (x y = 1 <= sigma), biactive for the polish, which returns the origin:
    # not B-stationary, and nothing says so
    off = solve_program(prog, strategy="scholtes", certify=False, sigma0=1.0)
    assert "b_stationarity" not in off.extras and "branch_steps" not in off.extras
    assert off.success and off.extras["found_by"] == "polish"
    np.testing.assert_allclose(off.x, [0.0, 0.0], atol=1e-8)


def test_certify_options_are_strict():
    from contactmp.errors import OptionError
    from contactmp.solvers.nlp.solve import solve_program

    with pytest.raises(OptionError, match="certify"):
        solve_program(corner(), certify="yes")
    with pytest.raises(OptionError, match="certify_time_limit"):
        solve_program(corner(), certify_time_limit=0.0)
