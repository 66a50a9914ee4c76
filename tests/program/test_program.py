"""Program: construction, handles, the MCP / LCP / Pyomo reductions (closed-form answers)."""
from __future__ import annotations

import itertools
import math

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError, UnsupportedProgramError
from contactmp.program import Program
from contactmp.solvers.lcp.problem import lcp_residual

INF = math.inf


def enumerate_lcp(M: np.ndarray, q: np.ndarray) -> list[np.ndarray]:
    """Every solution of LCP(q, M) with nonsingular principal blocks, by trying all 2^n bases."""
    n = q.size
    sols = []
    for k in range(n + 1):
        for B in itertools.combinations(range(n), k):
            z = np.zeros(n)
            if B:
                idx = list(B)
                z[idx] = np.linalg.solve(M[np.ix_(idx, idx)], -q[idx])
            if z.min() >= -1e-12 and (M @ z + q).min() >= -1e-12:
                sols.append(z)
    return sols


# A mixed LCP: free y (2), lam >= 0 (3);  A y + B lam + c = 0,  0 <= lam _|_ D y + E lam + d >= 0.
A = np.array([[2.0, 0.0], [0.0, 1.0]])
B = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
C = np.array([1.0, -2.0])
D = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
E = 2.0 * np.eye(3)


def mixed_program(d: np.ndarray) -> tuple[Program, object, object]:
    prog = Program("mixed")
    y = prog.add_variables("y", 2, block="step0/dynamics")
    lam = prog.add_variables("lam", 3, lb=0.0, block="step0/contact")
    prog.add_constraint(ca.mtimes(A, y.sym) + ca.mtimes(B, lam.sym) + C, 0.0, 0.0, name="eq",
                        block="step0/dynamics")
    prog.add_complementarity(lam, ca.mtimes(D, y.sym) + ca.mtimes(E, lam.sym) + d, name="contact",
                             block="step0/contact")
    return prog, y, lam


def test_to_lcp_schur_complement_matches_hand_derivation() -> None:
    # By hand: y = -A^{-1}(B lam + c) = -((lam0 + lam2 + 1)/2, lam1 - 2), so
    #   w0 = y0 + 2 lam0 + 1         =  1.5 lam0          - 0.5 lam2 + 0.5
    #   w1 = y1 + 2 lam1 + 2         =             lam1              + 4
    #   w2 = y0 + y1 + 2 lam2 + 3    = -0.5 lam0 - lam1 + 1.5 lam2 + 4.5
    prog, y, lam = mixed_program(np.array([1.0, 2.0, 3.0]))
    red = prog.to_lcp()
    M_hand = np.array([[1.5, 0.0, -0.5], [0.0, 1.0, 0.0], [-0.5, -1.0, 1.5]])
    q_hand = np.array([0.5, 4.0, 4.5])
    np.testing.assert_allclose(red.M, M_hand, rtol=0, atol=1e-15)
    np.testing.assert_allclose(red.q, q_hand, rtol=0, atol=1e-15)
    # invert recovers the free variables: lam = (1, 2, 3) -> y = (-2.5, 0)
    x = red.invert(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(x[y.index], [-2.5, 0.0], atol=1e-15)
    np.testing.assert_allclose(x[lam.index], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(A @ x[y.index] + B @ x[lam.index] + C, 0.0, atol=1e-14)
    # q > 0: the solution is lam = 0, and then y = -A^{-1} c = (-0.5, 2)
    x0 = red.invert(np.zeros(3))
    np.testing.assert_allclose(x0[y.index], [-0.5, 2.0], atol=1e-15)
    assert red.labels[0].startswith("'lam'[0]")


def test_to_lcp_roundtrips_M_and_q_exactly() -> None:
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    q = np.array([-5.0, -6.0])
    prog = Program("lcp")
    z = prog.add_variables("z", 2, lb=0.0)
    prog.add_complementarity(z, ca.mtimes(ca.DM(M), z.sym) + q)
    red = prog.to_lcp()
    assert np.array_equal(red.M, M) and np.array_equal(red.q, q)
    z_star = np.array([4.0 / 3.0, 7.0 / 3.0])  # M z = -q
    assert lcp_residual(red.M, red.q, z_star) < 1e-15
    np.testing.assert_array_equal(red.invert(z_star), z_star)


def test_to_lcp_uses_current_parameter_values() -> None:
    prog = Program()
    z = prog.add_variables("z", 2, lb=0.0)
    r = prog.add_parameters("r", 2, [1.0, -1.0])
    prog.add_complementarity(z, 3.0 * z.sym + r.sym)
    np.testing.assert_array_equal(prog.to_lcp().q, [1.0, -1.0])
    r.value = [-2.0, 4.0]
    np.testing.assert_array_equal(prog.to_lcp().q, [-2.0, 4.0])
    np.testing.assert_array_equal(prog.to_lcp().M, 3.0 * np.eye(2))


def test_to_mcp_pairs_and_natural_map_residual() -> None:
    d = np.array([-1.0, -3.0, -3.0])
    prog, y, lam = mixed_program(d)
    mcp = prog.to_mcp()
    assert mcp.n == 5 and mcp.labels[0] == "'y'[0] _|_ equality 'eq'[0]"
    np.testing.assert_array_equal(mcp.lb, [-INF, -INF, 0, 0, 0])
    # the LCP solution mapped back is an MCP solution (natural-map residual ~ 0)
    red = prog.to_lcp()
    sols = enumerate_lcp(red.M, red.q)
    assert len(sols) == 1  # M is a P-matrix here
    x = red.invert(sols[0])
    assert mcp.residual(x) < 1e-13
    assert mcp.residual(x + 1e-3) > 1e-4
    # the Jacobian is constant and equals [[A, B], [D, E]] in this ordering
    np.testing.assert_allclose(mcp.jac(x), np.block([[A, B], [D, E]]))
    np.testing.assert_allclose(mcp.jac(x, sparse=True).toarray(), np.block([[A, B], [D, E]]))


def test_to_mcp_adds_slack_for_general_expressions() -> None:
    # x free, 0 <= x - 1 _|_ 2 - x >= 0: slack s = x - 1 paired with F = 2 - x; the equality
    # x - 1 - s = 0 is paired with the free x. Schur complement by hand: M = -1, q = 1.
    prog = Program()
    x = prog.add_variables("x", 1)
    prog.add_complementarity(x.sym - 1.0, 2.0 - x.sym, name="pair")
    mcp = prog.to_mcp()
    assert mcp.n == 2 and mcp.lb.tolist() == [-INF, 0.0]
    red = prog.to_lcp()
    np.testing.assert_allclose(red.M, [[-1.0]])
    np.testing.assert_allclose(red.q, [1.0])
    # LCP(1, -1) has the solutions s = 0 and s = 1 -> x = 1 and x = 2
    np.testing.assert_allclose(red.invert([0.0]), [1.0])
    np.testing.assert_allclose(red.invert([1.0]), [2.0])
    assert mcp.residual([2.0, 1.0]) < 1e-15 and mcp.residual([1.0, 0.0]) < 1e-15


def test_fixed_variables_are_substituted() -> None:
    prog = Program()
    z = prog.add_variables("z", 1, lb=0.0)
    f = prog.add_variables("f", 1, lb=2.0, ub=2.0)
    prog.add_complementarity(z, z.sym - f.sym)  # w = z - 2
    red = prog.to_lcp()
    np.testing.assert_allclose(red.M, [[1.0]])
    np.testing.assert_allclose(red.q, [-2.0])
    np.testing.assert_allclose(red.invert([2.0]), [2.0, 2.0])


@pytest.mark.parametrize(
    "build, reason",
    [
        (lambda p, x, z: p.add_cost(ca.sumsqr(x.sym)), "objective"),
        (lambda p, x, z: p.add_constraint(x.sym[0], 0.0, 1.0), "inequality"),
        (lambda p, x, z: p.add_variables("b", 1, lb=0.0, ub=1.0), "no complementarity pair"),
        (lambda p, x, z: p.add_variables("free", 1), "free variables"),
    ],
)
def test_to_mcp_refuses_with_reason(build, reason) -> None:
    prog = Program()
    x = prog.add_variables("x", 2)
    z = prog.add_variables("z", 1, lb=0.0)
    prog.add_constraint(x.sym + z.sym, 1.0, 1.0, name="eq")
    prog.add_complementarity(z, x.sym[0] + 2.0, name="c")
    prog.to_mcp()  # well posed before the change
    build(prog, x, z)
    with pytest.raises(UnsupportedProgramError, match=reason):
        prog.to_mcp()


def test_to_lcp_refuses_nonlinear_and_singular() -> None:
    prog = Program()
    z = prog.add_variables("z", 2, lb=0.0)
    prog.add_complementarity(z, z.sym**2 - 1.0, name="nl")
    prog.to_mcp()  # an MCP is fine
    with pytest.raises(UnsupportedProgramError, match="not affine.*'z'\\[0\\]"):
        prog.to_lcp()
    prog = Program()
    y = prog.add_variables("y", 2)
    z = prog.add_variables("z", 1, lb=0.0)
    prog.add_constraint(ca.vertcat(y.sym[0] + y.sym[1], 2.0 * y.sym[0] + 2.0 * y.sym[1] + z.sym), 0.0, 0.0)
    prog.add_complementarity(z, y.sym[0] + 1.0)
    with pytest.raises(UnsupportedProgramError, match="singular \\(rank 1\\)"):
        prog.to_lcp()


def test_handles_blocks_and_stacking() -> None:
    prog, y, lam = mixed_program(np.array([1.0, 2.0, 3.0]))
    assert set(prog.blocks) == {"step0/dynamics", "step0/contact"}
    blk = prog.blocks["step0/contact"]
    assert blk.variables == [lam] and [h.name for h in blk.complementarities] == ["contact"]
    assert prog["eq"] in prog.blocks["step0/dynamics"].constraints
    assert (y.index, lam.index) == (slice(0, 2), slice(2, 5)) and prog.n_x == 5
    np.testing.assert_array_equal(prog.lbx, [-INF, -INF, 0, 0, 0])
    np.testing.assert_array_equal(prog.value(lam, np.arange(5.0)), [2.0, 3.0, 4.0])
    res = prog.residuals(np.array([-0.5, 2.0, 0.0, 0.0, 0.0]))  # the solution (q > 0, lam = 0)
    assert res["constraint"] == 0.0 and res["bound"] == 0.0 and res["comp_min"] == 0.0
    res = prog.residuals(np.array([0.0, 0.0, -1.0, 0.0, 0.0]))
    assert res["bound"] == 1.0 and res["comp_sign"] == 1.0


def test_input_errors_name_the_field() -> None:
    prog = Program()
    x = prog.add_variables("x", 2)
    cases = [
        (lambda: prog.add_variables("x", 1), "name"),
        (lambda: prog.add_variables("v", 0), "n"),
        (lambda: prog.add_variables("v", 2, lb=[0.0, 1.0, 2.0]), "lb"),
        (lambda: prog.add_variables("v", 2, lb=1.0, ub=0.0), "lb"),
        (lambda: prog.add_variables("v", 2, init=np.inf), "init"),
        (lambda: prog.add_variables("v", 2, ub=np.nan), "ub"),
        (lambda: prog.add_parameters("p", 2, [1.0, np.nan]), "value"),
        (lambda: prog.add_constraint(x.sym, [0.0, 0.0, 0.0], 1.0), "lb"),
        (lambda: prog.add_constraint(ca.SX.sym("alien"), 0.0, 0.0), "expr"),
        (lambda: prog.add_constraint(ca.MX.sym("m"), 0.0, 0.0), "expr"),
        (lambda: prog.add_constraint(ca.SX.zeros(2, 2) + x.sym[0], 0.0, 0.0), "expr"),
        (lambda: prog.add_complementarity(x, x.sym[0]), "b"),
        (lambda: prog.add_cost(x.sym), "expr"),
        (lambda: Program(""), "name"),
        (lambda: prog.add_variables("w", 1, block=""), "block"),
    ]
    for call, fieldname in cases:
        with pytest.raises(InputError) as err:
            call()
        assert err.value.field == fieldname, (fieldname, str(err.value))
    p = prog.add_parameters("p", 2, 1.0)
    with pytest.raises(InputError, match="value"):
        p.value = [1.0, 2.0, 3.0]
    with pytest.raises(InputError, match="handle"):
        Program().value(x, np.zeros(2))


# ----------------------------------------------------------------------------------------------
# Pyomo
# ----------------------------------------------------------------------------------------------
pyo = pytest.importorskip("pyomo.environ")


def test_to_pyomo_structure() -> None:
    prog = Program("structure")
    x = prog.add_variables("x/pos", 2, lb=[-1.0, 0.0], ub=[1.0, INF], init=[0.5, 0.25])
    p = prog.add_parameters("gain", 1, 3.0)
    prog.add_cost(p.sym * ca.sumsqr(x.sym))
    prog.add_constraint(x.sym[0] + x.sym[1], -INF, 2.0, name="sum")
    prog.add_complementarity(x.sym[1], x.sym[0] + 1.0, name="pair")
    m = prog.to_pyomo()
    names = m.contactmp_names
    v = getattr(m, names["x/pos"])
    assert [v[i].bounds for i in range(2)] == [(-1.0, 1.0), (0.0, None)]
    assert [pyo.value(v[i]) for i in range(2)] == [0.5, 0.25]
    gain = getattr(m, names["gain"])
    assert gain.mutable
    # the objective evaluates like the CasADi one at the initial point
    obj = next(m.component_data_objects(pyo.Objective))
    assert pyo.value(obj.expr) == pytest.approx(prog.evaluate(prog.x0)["f"], rel=1e-15)
    gain[0] = 2.0
    assert pyo.value(obj.expr) == pytest.approx(2.0 * (0.25 + 0.0625), rel=1e-15)
    con = getattr(m, names["sum"])[0]
    assert con.upper == 2.0 and con.lower is None


def _solve_pyomo(prog: Program):
    pytest.importorskip("contactmp.solvers.nlp.pyomo_ipopt")
    import contactmp.solvers.nlp.pyomo_ipopt  # noqa: F401  (registers the plugin)

    m = prog.to_pyomo()
    pyo.TransformationFactory("mpec.simple_nonlinear").apply_to(m)
    res = pyo.SolverFactory("contactmp_ipopt").solve(m)
    return m, res


def test_to_pyomo_lcp_gives_the_casadi_solution() -> None:
    from contactmp.solvers.nlp.solve import solve_program

    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    q = np.array([-5.0, -6.0])
    prog = Program("lcp")
    z = prog.add_variables("z", 2, lb=0.0)
    prog.add_complementarity(z, ca.mtimes(ca.DM(M), z.sym) + q, name="z_perp_w")
    m, res = _solve_pyomo(prog)
    assert str(res.solver.termination_condition) == "optimal"
    z_pyomo = np.array([pyo.value(getattr(m, m.contactmp_names["z"])[i]) for i in range(2)])
    z_casadi = solve_program(prog).value(z)
    np.testing.assert_allclose(z_pyomo, [4.0 / 3.0, 7.0 / 3.0], atol=1e-7)
    np.testing.assert_allclose(z_pyomo, z_casadi, atol=1e-7)


def test_to_pyomo_mixed_program_gives_the_casadi_solution() -> None:
    from contactmp.solvers.nlp.solve import solve_program

    prog, y, lam = mixed_program(np.array([-1.0, -3.0, -3.0]))
    red = prog.to_lcp()
    (z_star,) = enumerate_lcp(red.M, red.q)
    x_star = red.invert(z_star)
    m, res = _solve_pyomo(prog)
    assert str(res.solver.termination_condition) == "optimal"
    x_pyomo = np.array([pyo.value(getattr(m, m.contactmp_names[h.name])[i])
                        for h in prog.variables for i in range(h.size)])
    r = solve_program(prog)
    assert r.success
    np.testing.assert_allclose(r.x, x_star, atol=1e-7)
    np.testing.assert_allclose(x_pyomo, x_star, atol=1e-6)
