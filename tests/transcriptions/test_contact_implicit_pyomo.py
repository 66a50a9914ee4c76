"""The Pyomo twin of a contact-implicit transcription, solved through SolverFactory("contactmp_ipopt")
with an MPCC strategy, is the CasADi solve; and why mpec.simple_nonlinear ends elsewhere.

Measured on the 20-step push: CasADi/Scholtes 25.0762, Pyomo (mpec.simple_nonlinear + plugin)
25.1279. The Pyomo form is not the cause: simple_nonlinear is the "direct" MPCC form
(``a_i b_i <= 0``), and the direct form from this start ends in another local minimizer (another
contact-mode sequence), CasADi's strategy="direct" too; the plugin's ``strategy="scholtes"`` reads
the twin back into the same program (bit for bit) and reproduces the CasADi solve exactly.
"""
from __future__ import annotations

import logging

import casadi as ca
import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.mpec import Complementarity, complements
from pyomo.opt import TerminationCondition

import contactmp.solvers.nlp.pyomo_ipopt  # noqa: F401  (registers SolverFactory("contactmp_ipopt"))
from contactmp.errors import InputError, OptionError, UnsupportedProgramError
from contactmp.models.systems import hopper_2d, point_mass_2d
from contactmp.program import Program
from contactmp.pyomo_bridge import (
    PyomoToSX,
    program_variables,
    program_x,
    set_program_x,
    translate,
)
from contactmp.solvers.nlp.pyomo_ipopt import pyomo_to_program
from contactmp.result import Status
from contactmp.transcriptions.contact_implicit import ContactImplicitTO

M_, MU, G, N, H = 1.0, 0.5, 9.81, 20, 0.05
#: IPOPT's tol for the Scholtes solves. At the default 1e-8 the last relaxed NLPs stop on IPOPT's
#: *scaled* error (multipliers ~1/sigma make its dual scaling s_d ~1e6; the unscaled stationarity
#: is ~1e-2 there), so u_k is only good to ~1e-3 (on both paths alike); 1e-10 puts the answer
#: within 1e-7 of the exact minimizer, which the piece test below compares with.
TOL = 1e-10


def _push() -> ContactImplicitTO:
    to = ContactImplicitTO(point_mass_2d(m=M_, mu=MU, g=G), N, H, formulation="pyramid", facets=4)
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.5, 0.0], [0.0, 0.0])
    to.bound_inputs([-20.0, 0.0], [20.0, 0.0])
    to.minimize_effort(1.0)
    return to


def _crouch(n: int = 5, horizon: float = 0.5) -> ContactImplicitTO:
    """The hopper lowers its body by 0.1 m (leg 1.0 -> 0.9 m) and comes to rest."""
    hp = hopper_2d()
    to = ContactImplicitTO(hp, n, horizon / n, formulation="pyramid", facets=4)
    q0 = np.asarray(hp.q_nominal, dtype=float)
    to.set_initial_state(q0, np.zeros(5))
    to.set_final_state(q0 + np.array([0.0, -0.1, 0.0, 0.0, -0.1]), np.zeros(5))
    to.bound_inputs([-300.0, -50.0], [300.0, 50.0])
    to.add_quadratic_cost(Q=[0.0, 0.0, 1.0, 1.0, 0.0], R=[1e-3, 1e-2], q_ref=q0)
    return to


def _twin(to: ContactImplicitTO) -> pyo.ConcreteModel:
    """The Pyomo twin, started at the transcription's initial guess (CasADi's start 0)."""
    model = to.to_pyomo() if hasattr(to, "to_pyomo") else to.program.to_pyomo()
    set_program_x(model, to.program, to.initial_guess())
    return model


def _trajectory(to: ContactImplicitTO, x: np.ndarray) -> dict[str, np.ndarray]:
    prog = to.program
    return {
        "q": np.array([prog.value(h, x) for h in to.q]),
        "v": np.array([prog.value(h, x) for h in to.v]),
        "u": np.array([prog.value(h, x) for h in to.u]),
        "p_n": np.array([prog.value(b.p_n, x) for b in to.steps]),
        # the t component only: for a planar system the o component of the pyramid is not unique
        "p_t": np.array([b.friction_impulse(prog.value(b.beta, x))[:, 0] for b in to.steps]),
    }


def _solve_twin(model: pyo.ConcreteModel, **options):
    solver = pyo.SolverFactory("contactmp_ipopt")
    results = solver.solve(model, options=options)
    return solver, results


@pytest.fixture(scope="module")
def push_solves():
    to = _push()
    ref = to.solve(backend="casadi", strategy="scholtes", tol=TOL)
    model = _twin(to)
    solver, results = _solve_twin(model, strategy="scholtes", tol=TOL)
    return to, ref, model, solver, results


def test_push_twin_through_plugin_matches_casadi(push_solves) -> None:
    to, ref, model, solver, results = push_solves
    prog = to.program
    assert ref.status is Status.SOLVED
    assert results.solver.termination_condition == TerminationCondition.optimal
    assert solver.last_result.success and solver.last_result.extras["strategy"] == "scholtes"
    x = program_x(model, prog)
    # judged independently, in the original (CasADi) program
    res = prog.residuals(x)
    assert res["constraint"] <= 1e-6 and res["bound"] == 0.0 and res["comp_min"] <= 1e-8
    obj = pyo.value(model.objective)
    assert obj == pytest.approx(res["objective"], rel=1e-12)
    assert obj == pytest.approx(ref.objective, rel=1e-6)
    assert abs(obj - 25.0762) < 1e-3
    assert results.problem.upper_bound == pytest.approx(obj, rel=1e-12)
    got = _trajectory(to, x)
    want = {"q": ref.q, "v": ref.v, "u": ref.u, "p_n": ref.p_n, "p_t": ref.p_t}
    for key, val in want.items():
        np.testing.assert_allclose(got[key], val, atol=1e-5, err_msg=key)
    # the read-back program evaluates bit for bit like the original (see the next test), so IPOPT
    # takes the same path: the same homotopy, the same iterations
    assert solver.last_result.iterations == ref.result.iterations
    # the model itself is left as it was: its pairs are still untransformed and active
    comps = list(model.component_data_objects(Complementarity, active=True))
    assert len(comps) == prog.n_comp and not hasattr(model, "mpec_bound")


def test_program_read_back_has_the_programs_order_and_functions(push_solves) -> None:
    to, _, model, solver, _ = push_solves
    prog, back = to.program, solver.last_program.program
    assert (back.n_x, back.n_g, back.n_comp) == (prog.n_x, prog.n_g, prog.n_comp)
    assert solver.last_program.variables == program_variables(model, prog)
    np.testing.assert_array_equal(back.lbx, prog.lbx)
    np.testing.assert_array_equal(back.ubx, prog.ubx)
    rng = np.random.default_rng(0)
    for _ in range(3):  # CasADi -> Pyomo (translate) -> CasADi (PyomoToSX) is exact
        x = rng.standard_normal(prog.n_x)
        a, b = prog.evaluate(x), back.evaluate(x)
        assert a["f"] == b["f"]
        for key in ("g", "a", "b"):
            np.testing.assert_array_equal(b[key], a[key], err_msg=key)


def _active_sides(prog: Program, x: np.ndarray) -> np.ndarray:
    """Per pair, True where ``a_i`` is the side at zero (``a_i <= b_i``)."""
    ev = prog.evaluate(x)
    return ev["a"] <= ev["b"]


def _tnlp_objective(prog: Program, x: np.ndarray) -> tuple[float, float]:
    """Re-solve with every pair's zero side fixed (``a_i = 0, b_i >= 0`` where ``a_i <= b_i``, else
    the reverse) from ``x``: the tightened NLP of x's contact modes. Returns (its optimal
    objective, ``min_i max(a_i, b_i)`` at x: > 0 when every pair is strictly complementary)."""
    ev = prog.evaluate(x)
    at_a = _active_sides(prog, x)
    A, B = prog.comp_a, prog.comp_b
    zero = [A[i] if at_a[i] else B[i] for i in range(prog.n_comp)]
    pos = [B[i] if at_a[i] else A[i] for i in range(prog.n_comp)]
    g = ca.vertcat(prog.g, *zero, *pos)
    lbg = np.concatenate([prog.lbg, np.zeros(2 * prog.n_comp)])
    ubg = np.concatenate([prog.ubg, np.zeros(prog.n_comp), np.full(prog.n_comp, np.inf)])
    # the point mass's tightened program is a convex QP (affine rows, constant PSD Hessian), so
    # its KKT point is its global minimum
    assert not ca.depends_on(ca.jacobian(g, prog.x), prog.x)
    hess = ca.hessian(prog.f, prog.x)[0]
    assert not ca.depends_on(hess, prog.x)
    assert np.linalg.eigvalsh(np.array(ca.DM(hess))).min() >= -1e-12
    solver = ca.nlpsol("tnlp", "ipopt", {"x": prog.x, "f": prog.f, "g": g},
                       {"print_time": False, "ipopt": {"print_level": 0, "sb": "yes", "tol": 1e-12,
                                                       "bound_relax_factor": 0.0}})
    sol = solver(x0=x, lbx=prog.lbx, ubx=prog.ubx, lbg=lbg, ubg=ubg)
    assert solver.stats()["success"]
    return float(sol["f"]), float(np.min(np.maximum(ev["a"], ev["b"])))


def test_simple_nonlinear_gap_is_another_local_minimizer_of_the_direct_form(push_solves) -> None:
    """Every local minimizer of this MPCC lies on one convex piece (a contact-mode sequence: which
    side of each pair is zero). Scholtes (either path) and mpec.simple_nonlinear (= the direct
    form a_i b_i <= 0 as one plain NLP) end on two different pieces, each at that piece's optimum:
    two local minimizers, 25.0762 and 25.1279. The Pyomo translation is exact."""
    to, ref, _, _, _ = push_solves
    prog = to.program
    plain = _twin(to)
    pyo.TransformationFactory("mpec.simple_nonlinear").apply_to(plain)
    out = pyo.SolverFactory("contactmp_ipopt").solve(plain, options={"tol": 1e-8})
    assert out.solver.termination_condition == TerminationCondition.optimal
    x_plain = program_x(plain, prog)
    direct = to.solve(backend="casadi", strategy="direct")  # CasADi, same start
    assert direct.status is Status.SOLVED
    # CasADi's direct form ends certified B-stationary (its NLP from the same start; before the
    # issue-14 homotopy it ended on simple_nonlinear's piece, now on Scholtes' piece, below)
    assert direct.result.extras["b_stationarity"]["b_stationary"] is True
    f_piece, gap = _tnlp_objective(prog, x_plain)
    assert gap > 1e-4  # strictly complementary: near x the MPCC is this convex piece
    assert abs(pyo.value(plain.objective) - f_piece) < 1e-3  # IPOPT's bound_relax_factor 1e-8
    assert direct.objective <= f_piece + 1e-3
    # Scholtes' answer is the optimum of another piece, 0.05 lower, and certified B-stationary
    f_scholtes_piece, _ = _tnlp_objective(prog, ref.result.x)
    assert f_scholtes_piece == pytest.approx(ref.objective, rel=1e-6)
    assert ref.result.extras["b_stationarity"]["b_stationary"] is True
    assert f_piece > f_scholtes_piece + 0.04
    # the two pieces: Scholtes rests for the first steps and pushes late; direct pushes at once
    u_s, u_d = ref.u[:, 0], _trajectory(to, x_plain)["u"][:, 0]
    assert np.all(np.abs(u_s[:3]) < 1e-6) and u_d[0] > 5.0


def test_hopper_short_horizon_twin_matches_casadi() -> None:
    to = _crouch()
    ref = to.solve(backend="casadi", strategy="scholtes")
    model = _twin(to)
    solver, results = _solve_twin(model, strategy="scholtes")
    assert ref.status is Status.SOLVED
    assert results.solver.termination_condition == TerminationCondition.optimal
    x = program_x(model, to.program)
    assert to.program.residuals(x)["comp_min"] <= 1e-8
    assert pyo.value(model.objective) == pytest.approx(ref.objective, rel=1e-6)
    got = _trajectory(to, x)
    for key, val in {"q": ref.q, "v": ref.v, "u": ref.u, "p_n": ref.p_n}.items():
        np.testing.assert_allclose(got[key], val, atol=1e-5, err_msg=key)
    # the hopper sits on its foot throughout: p_n > 0 at every step
    assert np.all(ref.p_n[:, 0] > 0.5)


# ------------------------------------------------------------------ the strategy option itself
def _two_branches() -> pyo.ConcreteModel:
    """min (x-0.2)^2 + (y-0.5)^2 s.t. 0 <= x _|_ x + y - 1 >= 0: unique solution (0.35, 0.65)."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=0.0)
    m.y = pyo.Var(initialize=0.0)
    m.o = pyo.Objective(expr=(m.x - 0.2) ** 2 + (m.y - 0.5) ** 2)
    m.cc = Complementarity(expr=complements(0 <= m.x, m.x + m.y - 1 >= 0))
    return m


@pytest.mark.parametrize("strategy", ["scholtes", "elastic_l1", "direct"])
def test_strategy_on_a_small_mpcc(strategy: str) -> None:
    m = _two_branches()
    solver = pyo.SolverFactory("contactmp_ipopt")
    res = solver.solve(m, options={"strategy": strategy, "tol": 1e-10})
    assert res.solver.termination_condition == TerminationCondition.optimal
    assert abs(m.x.value - 0.35) < 1e-6 and abs(m.y.value - 0.65) < 1e-6
    assert pyo.value(m.o) == pytest.approx(0.045, abs=1e-8)
    assert solver.last_result.residuals["comp_min"] <= 1e-8
    assert m.cc.active  # not transformed


def test_strategy_maximize_equality_side_fixed_vars_and_lcp() -> None:
    # max -(x-1)^2 - (y+1)^2 s.t. x >= 0 _|_ y >= 0 (written as y <= 0 reversed: -y <= 0):
    # solution (1, 0); an equality side makes its pair that equality (z = 2); a fixed variable and
    # a mutable parameter enter as their values
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=0.5)
    m.y = pyo.Var(initialize=0.5)
    m.z = pyo.Var(initialize=0.0)
    m.w = pyo.Var(initialize=3.0)
    m.w.fix()
    m.p = pyo.Param(mutable=True, initialize=1.0)
    m.o = pyo.Objective(expr=-(m.x - m.p) ** 2 - (m.y + 1) ** 2 - (m.z - m.w) ** 2,
                        sense=pyo.maximize)
    m.cc = Complementarity(expr=complements(m.x >= 0, -m.y <= 0))
    m.eq = Complementarity(expr=complements(m.z == 2.0, m.x >= 0))
    solver = pyo.SolverFactory("contactmp_ipopt")
    res = solver.solve(m, options={"strategy": "scholtes", "tol": 1e-10})
    assert res.solver.termination_condition == TerminationCondition.optimal
    np.testing.assert_allclose([m.x.value, m.y.value, m.z.value], [1.0, 0.0, 2.0], atol=1e-7)
    assert pyo.value(m.o) == pytest.approx(-2.0, abs=1e-7)
    assert res.problem.lower_bound == pytest.approx(-2.0, abs=1e-7)
    assert m.w.value == 3.0 and m.w.fixed
    pp = solver.last_program
    assert pp.sense == -1 and pp.program.n_comp == 1 and pp.program.n_g == 1
    # an LCP without objective: 0 <= z _|_ M z + q >= 0 with a unique solution
    M, q = np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-5.0, -6.0])
    lcp = pyo.ConcreteModel()
    lcp.z = pyo.Var(range(2), initialize=1.0)
    lcp.cc = Complementarity(range(2), rule=lambda b, i: complements(
        b.z[i] >= 0, sum(float(M[i, j]) * b.z[j] for j in range(2)) + float(q[i]) >= 0))
    out = pyo.SolverFactory("contactmp_ipopt").solve(lcp, options={"strategy": "scholtes"})
    assert out.solver.termination_condition == TerminationCondition.optimal
    np.testing.assert_allclose([lcp.z[0].value, lcp.z[1].value], [4 / 3, 7 / 3], atol=1e-7)


def test_strategy_load_solutions_false_and_errors(caplog: pytest.LogCaptureFixture) -> None:
    m = _two_branches()
    solver = pyo.SolverFactory("contactmp_ipopt")
    res = solver.solve(m, options={"strategy": "scholtes"}, load_solutions=False)
    assert m.x.value == 0.0  # untouched
    m.solutions.load_from(res)
    assert abs(m.x.value - 0.35) < 1e-6
    with pytest.raises(OptionError, match="sigma_factor"):
        solver.solve(_two_branches(), options={"strategy": "scholtes", "sigma_fator": 0.2})
    with pytest.raises(OptionError, match="strategy"):
        solver.solve(_two_branches(), options={"strategy": "scholte"})
    with pytest.raises(OptionError, match="casadi"):
        solver.solve(_two_branches(), options={"strategy": "scholtes", "casadi.expand": True})
    box = pyo.ConcreteModel()
    box.x = pyo.Var()
    box.y = pyo.Var()
    box.o = pyo.Objective(expr=box.x**2 + box.y**2)
    # a range against a bounded side: three finite bounds, which pyomo.mpec refuses too
    box.cc = Complementarity(expr=complements(pyo.inequality(0, box.x, 1), box.y >= 0))
    with pytest.raises(UnsupportedProgramError, match="cc has 3 finite bounds"):
        solver.solve(box, options={"strategy": "scholtes"})
    assert box.cc.active
    # duals are not available on this path: a warning, not an error
    d = _two_branches()
    d.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    with caplog.at_level(logging.WARNING, logger="contactmp.solvers.nlp.pyomo_ipopt"):
        solver.solve(d, options={"strategy": "scholtes"})
    assert "suffixes" in caplog.text and abs(d.x.value - 0.35) < 1e-6


def test_pyomo_to_sx_walks_shared_nodes_once() -> None:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(3), initialize={0: 0.3, 1: -0.7, 2: 1.4})
    m.p = pyo.Param(mutable=True, initialize=2.5)
    m.e = pyo.Expression(expr=m.x[0] * m.x[1] + m.p)
    exprs = [m.e**2 + pyo.sin(m.x[2]) / m.x[0], abs(m.x[1]) ** 1.5 - pyo.log10(m.x[2]),
             pyo.Expr_if(IF=m.x[0] >= m.x[1], THEN=m.x[2], ELSE=-m.x[2]),
             3 * m.x[0] + 2 * m.x[1] - m.x[2] + 7, m.x[0] ** m.x[2] * pyo.atan(m.e)]
    conv = PyomoToSX()
    out = [conv(e) for e in exprs]
    assert conv(m.p * 2) == 5.0  # no variable: a float
    fun = ca.Function("f", [ca.vertcat(*conv.symbols)], [ca.vertcat(*out)])
    np.testing.assert_allclose(np.array(fun([v.value for v in conv.variables])).ravel(),
                               [pyo.value(e) for e in exprs], rtol=1e-14)
    # a chain of k shared levels stays k nodes (a tree walk would visit 2^k)
    y = m.x[0]
    for _ in range(60):
        y = pyo.sin(y) * y + 1.0
    f = ca.Function("g", [ca.vertcat(*conv.symbols)], [conv(y)])
    assert f.n_instructions() < 400


def test_program_x_round_trip_and_non_twin() -> None:
    to = _crouch(3)
    model = to.program.to_pyomo()
    x = np.random.default_rng(1).standard_normal(to.program.n_x)
    set_program_x(model, to.program, x)
    np.testing.assert_array_equal(program_x(model, to.program), x)
    pp = pyomo_to_program(model)
    np.testing.assert_array_equal(pp.program.x0, x)
    assert pp.program.evaluate(x)["f"] == pytest.approx(to.program.evaluate(x)["f"], rel=1e-13)
    with pytest.raises(InputError, match="model"):
        program_x(_two_branches(), to.program)
    with pytest.raises(InputError, match="x"):
        set_program_x(model, to.program, x[:-1])


def test_translate_then_back_is_bit_exact() -> None:
    """CasADi -> Pyomo (translate) -> CasADi (PyomoToSX) repeats the same operations on the same
    operands: random graphs full of cancellations evaluate bit for bit alike."""
    rng = np.random.default_rng(7)
    x = ca.SX.sym("x", 4)
    for _ in range(40):
        pool = [x[i] for i in range(4)] + [ca.SX(float(c)) for c in rng.standard_normal(2)]
        for _ in range(20):
            a, b = (pool[i] for i in rng.integers(len(pool), size=2))
            pool.append([a + b, a - b, a * b, a / (1.5 + b * b), 0.37 * a, a / 0.05, -a,
                         ca.sin(a) * b, ca.sqrt(1 + a * a), (a * a + 1) ** 1.5][rng.integers(10)])
        out = ca.vertcat(*pool[-6:])
        m = pyo.ConcreteModel()
        m.v = pyo.Var(range(4))
        conv = PyomoToSX()
        back = [ca.SX(conv(e)) for e in translate(out, x, [m.v[i] for i in range(4)])]
        cols = [next(i for i in range(4) if m.v[i] is v) for v in conv.variables]
        back_x = ca.substitute(back, [ca.vertcat(*conv.symbols)], [x[cols]]) if cols else back
        f, f_back = ca.Function("f", [x], [out]), ca.Function("b", [x], [ca.vertcat(*back_x)])
        for xv in rng.standard_normal((3, 4)):
            np.testing.assert_array_equal(np.array(f_back(xv)), np.array(f(xv)))
