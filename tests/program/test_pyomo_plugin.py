"""SolverFactory("contactmp_ipopt"): IPOPT through CasADi's NL importer, on NLPs and mpec models."""
from __future__ import annotations

import logging
import shutil

import casadi as ca
import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.mpec import Complementarity, complements
from pyomo.opt import TerminationCondition
from scipy.optimize import minimize_scalar

import contactmp.solvers.nlp.pyomo_ipopt  # noqa: F401  (registers the plugin)
from contactmp.errors import OptionError, UnsupportedProgramError
from contactmp.pyomo_bridge import translate

TOL = {"tol": 1e-10}
HAS_IPOPT = shutil.which("ipopt") is not None


def _solver(name: str = "contactmp_ipopt"):
    return pyo.SolverFactory(name)


def _rosenbrock_disk(sense=pyo.minimize, radius2: float = 1.0) -> pyo.ConcreteModel:
    """min (1-x)^2 + 100 (y - x^2)^2  s.t.  x^2 + y^2 <= radius2 (or max of its negative)."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=-1.2)
    m.y = pyo.Var(initialize=1.0)
    f = (1 - m.x) ** 2 + 100 * (m.y - m.x**2) ** 2
    m.o = pyo.Objective(expr=f if sense == pyo.minimize else -f, sense=sense)
    m.disk = pyo.Constraint(expr=m.x**2 + m.y**2 <= radius2)
    m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    return m


def _rosenbrock_disk_reference() -> tuple[float, float, float]:
    """The constraint is active at the optimum: minimize over the circle's angle (independent)."""
    f = lambda t: (1 - np.cos(t)) ** 2 + 100 * (np.sin(t) - np.cos(t) ** 2) ** 2
    r = minimize_scalar(f, bounds=(0.0, np.pi / 2), method="bounded", options={"xatol": 1e-12})
    return float(np.cos(r.x)), float(np.sin(r.x)), float(r.fun)


def test_rosenbrock_on_disk_solution_and_dual() -> None:
    xr, yr, fr = _rosenbrock_disk_reference()
    m = _rosenbrock_disk()
    res = _solver().solve(m, options=TOL)
    assert res.solver.termination_condition == TerminationCondition.optimal
    assert res.solver.message == "Solve_Succeeded"
    assert abs(m.x.value - xr) < 1e-6 and abs(m.y.value - yr) < 1e-6
    assert abs(pyo.value(m.o) - fr) < 1e-8
    # the dual is the sensitivity d f*/d r^2 (negative: a larger disk lowers the minimum)
    h = 1e-4
    f_plus, f_minus = [], []
    for r2, store in [(1 + h, f_plus), (1 - h, f_minus)]:
        mp = _rosenbrock_disk(radius2=r2)
        _solver().solve(mp, options=TOL)
        store.append(pyo.value(mp.o))
    fd = (f_plus[0] - f_minus[0]) / (2 * h)
    assert m.dual[m.disk] < 0 and abs(m.dual[m.disk] - fd) < 1e-5


def test_maximize_gives_same_point_and_flipped_dual() -> None:
    xr, yr, fr = _rosenbrock_disk_reference()
    m = _rosenbrock_disk(sense=pyo.maximize)
    res = _solver().solve(m, options=TOL)
    assert res.solver.termination_condition == TerminationCondition.optimal
    assert abs(m.x.value - xr) < 1e-6 and abs(m.y.value - yr) < 1e-6
    assert abs(pyo.value(m.o) + fr) < 1e-8
    assert abs(res.problem.lower_bound + fr) < 1e-8
    mmin = _rosenbrock_disk()
    _solver().solve(mmin, options=TOL)
    # max of -f: d(-f*)/d r^2 = -(d f*/d r^2)
    assert abs(m.dual[m.disk] + mmin.dual[mmin.disk]) < 1e-6


def test_options_pass_through_and_max_iter(caplog: pytest.LogCaptureFixture) -> None:
    m = _rosenbrock_disk()
    solver = _solver()
    solver.options["max_iter"] = 3
    with caplog.at_level(logging.WARNING):
        res = solver.solve(m)
    assert res.solver.termination_condition == TerminationCondition.maxIterations
    assert res.solver.message == "Maximum_Iterations_Exceeded"
    assert res.solver.iterations == 3
    assert (m.x.value, m.y.value) != (-1.2, 1.0)  # the last iterate is loaded
    with pytest.raises(OptionError, match="no_such_option"):
        _solver().solve(_rosenbrock_disk(), options={"no_such_option": 1})
    with pytest.raises(ValueError, match="unrecognized"):
        _solver().solve(_rosenbrock_disk(), bogus_keyword=True)


def test_fixed_unbounded_and_bounded_variables_with_rc() -> None:
    m = pyo.ConcreteModel()
    m.x = pyo.Var()  # no bounds, no initial value
    m.y = pyo.Var(initialize=3.0)
    m.y.fix()
    m.z = pyo.Var(bounds=(None, 1.0), initialize=0.0)
    m.unused = pyo.Var(initialize=42.0)
    m.o = pyo.Objective(expr=(m.x - 1) ** 2 + (m.y - 2) ** 2 + m.x * m.y + (m.z - 3) ** 2)
    m.rc = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    res = _solver().solve(m, options=TOL)
    assert res.solver.termination_condition == TerminationCondition.optimal
    assert abs(m.x.value + 0.5) < 1e-8  # 2(x - 1) + y = 0 with y = 3
    assert m.y.value == 3.0 and m.unused.value == 42.0
    assert abs(m.z.value - 1.0) < 1e-7
    assert abs(m.rc[m.z] - 2 * (1.0 - 3.0)) < 1e-6  # d f*/d ub(z) = 2 (ub - 3)
    assert abs(m.rc[m.x]) < 1e-8


def test_feasibility_problem_without_objective() -> None:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(0, None), initialize=2.0)
    m.y = pyo.Var(initialize=0.5)
    m.circle = pyo.Constraint(expr=m.x**2 + m.y**2 == 2)
    m.diag = pyo.Constraint(expr=m.x - m.y == 0)
    res = _solver().solve(m, options=TOL)
    assert res.solver.termination_condition == TerminationCondition.optimal
    assert abs(m.x.value - 1) < 1e-8 and abs(m.y.value - 1) < 1e-8


def test_column_mapping_is_exact() -> None:
    """The NL writer reorders columns (nonlinear before linear); values must land on the right
    Pyomo variable."""
    m = pyo.ConcreteModel()
    m.lin = pyo.Var(range(3), initialize=0.0)
    m.nl = pyo.Var(range(4), initialize=1.0)
    m.o = pyo.Objective(expr=sum((m.nl[i] - (i + 1)) ** 4 for i in range(4)) + sum(
        (i + 1) * m.lin[i] for i in range(3)))
    m.c = pyo.Constraint(range(3), rule=lambda m, i: m.lin[i] >= -(10 * i + 5))
    _solver().solve(m, options=TOL)
    assert [round(m.lin[i].value, 6) for i in range(3)] == [-5.0, -15.0, -25.0]
    assert np.allclose([m.nl[i].value for i in range(4)], [1, 2, 3, 4], atol=1e-2)


def test_load_solutions_false_then_load_from() -> None:
    m = _rosenbrock_disk()
    res = _solver().solve(m, load_solutions=False, options=TOL)
    assert (m.x.value, m.y.value) == (-1.2, 1.0)
    m.solutions.load_from(res)
    xr, yr, _ = _rosenbrock_disk_reference()
    assert abs(m.x.value - xr) < 1e-6 and abs(m.y.value - yr) < 1e-6
    assert m.dual[m.disk] < 0


def test_unsupported_models_raise() -> None:
    m = pyo.ConcreteModel()
    m.k = pyo.Var(within=pyo.Integers, bounds=(0, 5))
    m.o = pyo.Objective(expr=(m.k - 2.5) ** 2)
    with pytest.raises(UnsupportedProgramError, match="discrete.*k"):
        _solver().solve(m)

    m = pyo.ConcreteModel()
    m.x = pyo.Var()
    m.y = pyo.Var()
    m.cc = Complementarity(expr=complements(m.x >= 0, m.y >= 0))
    with pytest.raises(UnsupportedProgramError, match="mpec"):
        _solver().solve(m)

    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=1.0)
    m.o = pyo.Objective(expr=pyo.Expr_if(IF=m.x >= 0, THEN=m.x, ELSE=-m.x) + m.x**2)
    with pytest.raises(UnsupportedProgramError, match="(?i)if-then-else"):
        _solver().solve(m)


def test_infeasible_problem_is_reported_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=1.0)
    m.c = pyo.Constraint(expr=m.x**2 <= -1)
    with caplog.at_level(logging.WARNING):
        res = _solver().solve(m)
    assert res.solver.termination_condition == TerminationCondition.infeasible
    assert res.solver.message == "Infeasible_Problem_Detected"
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(2, 1))
    m.o = pyo.Objective(expr=m.x**2)
    assert _solver().solve(m).solver.termination_condition == TerminationCondition.infeasible


# ---------------------------------------------------------------- pyomo.mpec models
def _mpcc_two_branches() -> pyo.ConcreteModel:
    """min (x-0.2)^2 + (y-0.5)^2 s.t. 0 <= x _|_ x + y - 1 >= 0. On x = 0 the best is (0, 1) with
    f = 0.29 (not a local min); on x + y = 1 it is x = 0.35: unique solution (0.35, 0.65),
    f = 0.045."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=0.0)
    m.y = pyo.Var(initialize=0.0)
    m.o = pyo.Objective(expr=(m.x - 0.2) ** 2 + (m.y - 0.5) ** 2)
    m.cc = Complementarity(expr=complements(0 <= m.x, m.x + m.y - 1 >= 0))
    return m


def _mpcc_axes() -> pyo.ConcreteModel:
    """min (x-1)^2 + (y+1)^2 s.t. x >= 0 _|_ y >= 0: on y = 0 the minimum is (1, 0) with f = 1, on
    x = 0 it is >= 2 at the corner (where x can still decrease f): unique solution (1, 0)."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=0.5)
    m.y = pyo.Var(initialize=0.5)
    m.o = pyo.Objective(expr=(m.x - 1) ** 2 + (m.y + 1) ** 2)
    m.cc = Complementarity(expr=complements(m.x >= 0, m.y >= 0))
    return m


def _lcp_model(M: np.ndarray, q: np.ndarray) -> pyo.ConcreteModel:
    """0 <= z _|_ M z + q >= 0 written with Complementarity components, no objective."""
    n = len(q)
    m = pyo.ConcreteModel()
    m.z = pyo.Var(range(n), initialize=1.0)
    m.cc = Complementarity(range(n), rule=lambda m, i: complements(
        m.z[i] >= 0, sum(float(M[i, j]) * m.z[j] for j in range(n)) + float(q[i]) >= 0))
    return m


def _transform(m: pyo.ConcreteModel) -> pyo.ConcreteModel:
    pyo.TransformationFactory("mpec.simple_nonlinear").apply_to(m)
    return m


SOLVERS = ["contactmp_ipopt", pytest.param("ipopt", marks=pytest.mark.skipif(
    not HAS_IPOPT, reason="no ipopt executable on PATH"))]


@pytest.mark.parametrize("name", SOLVERS)
def test_mpcc_through_simple_nonlinear(name: str) -> None:
    m = _transform(_mpcc_two_branches())
    res = _solver(name).solve(m, options=TOL)
    assert res.solver.termination_condition == TerminationCondition.optimal
    assert abs(m.x.value - 0.35) < 1e-6 and abs(m.y.value - 0.65) < 1e-6
    assert abs(pyo.value(m.o) - 0.045) < 1e-8

    m = _transform(_mpcc_axes())
    res = _solver(name).solve(m, options=TOL)
    assert res.solver.termination_condition == TerminationCondition.optimal
    assert abs(m.x.value - 1.0) < 1e-6 and abs(m.y.value) < 1e-6


@pytest.mark.parametrize("name", SOLVERS)
def test_lcp_with_unique_solution(name: str) -> None:
    # M is symmetric positive definite, so z = (4/3, 7/3) (where M z + q = 0 and z > 0) is the
    # unique solution: 2*4/3 + 7/3 - 5 = 0 and 4/3 + 2*7/3 - 6 = 0.
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    q = np.array([-5.0, -6.0])
    m = _transform(_lcp_model(M, q))
    res = _solver(name).solve(m, options=TOL)
    assert res.solver.termination_condition == TerminationCondition.optimal
    z = np.array([m.z[i].value for i in range(2)])
    assert np.max(np.abs(np.minimum(z, M @ z + q))) < 1e-7
    np.testing.assert_allclose(z, [4 / 3, 7 / 3], atol=1e-7)


@pytest.mark.skipif(not HAS_IPOPT, reason="no ipopt executable on PATH")
def test_agrees_with_pyomo_ipopt_executable() -> None:
    a, b = _rosenbrock_disk(), _rosenbrock_disk()
    _solver().solve(a, options=TOL)
    _solver("ipopt").solve(b, options=TOL)
    assert abs(a.x.value - b.x.value) < 1e-6 and abs(a.y.value - b.y.value) < 1e-6
    assert abs(a.dual[a.disk] - b.dual[b.disk]) < 1e-5
    a, b = _rosenbrock_disk(pyo.maximize), _rosenbrock_disk(pyo.maximize)
    _solver().solve(a, options=TOL)
    _solver("ipopt").solve(b, options=TOL)
    assert abs(a.dual[a.disk] - b.dual[b.disk]) < 1e-5


# ---------------------------------------------------------------- a model built through translate
def test_model_built_through_translate_matches_casadi() -> None:
    """An NLP declared in CasADi, translated to Pyomo, solved by the plugin, equals CasADi's own
    nlpsol on the SX form; plus an LCP whose w = M z + q comes from translate."""
    x = ca.SX.sym("x", 3)
    p = ca.SX.sym("p", 2)
    f = (x[0] - p[0]) ** 2 + ca.exp(0.3 * x[1]) + ca.sqrt(1 + x[2] ** 2) * p[1]
    f = f - ca.sin(x[0] * x[1])
    g = ca.vertcat(x[0] ** 2 + x[1] ** 2 + x[2] ** 2, x[0] + ca.tanh(x[2]))
    lbg, ubg = [-np.inf, 0.2], [2.0, np.inf]
    pval = [1.5, 0.7]

    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(3), initialize=0.1)
    m.p = pyo.Param(range(2), initialize=dict(enumerate(pval)), mutable=True)
    sym = ca.vertcat(x, p)
    leaves = [m.x[i] for i in range(3)] + [m.p[i] for i in range(2)]
    [fe], ge = translate(f, sym, leaves), translate(g, sym, leaves)
    m.o = pyo.Objective(expr=fe)
    m.g0 = pyo.Constraint(expr=ge[0] <= ubg[0])
    m.g1 = pyo.Constraint(expr=ge[1] >= lbg[1])
    res = _solver().solve(m, options=TOL)
    assert res.solver.termination_condition == TerminationCondition.optimal

    nlp = ca.nlpsol("ref", "ipopt", {"x": x, "p": p, "f": f, "g": g},
                    {"print_time": False, "ipopt": {"print_level": 0, "sb": "yes", "tol": 1e-10}})
    ref = nlp(x0=[0.1] * 3, p=pval, lbg=lbg, ubg=ubg)
    np.testing.assert_allclose([m.x[i].value for i in range(3)], np.array(ref["x"]).ravel(),
                               atol=1e-7)
    assert abs(pyo.value(m.o) - float(ref["f"])) < 1e-9

    z = ca.SX.sym("z", 2)
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    q = np.array([-5.0, -6.0])
    lcp = pyo.ConcreteModel()
    lcp.z = pyo.Var(range(2), initialize=1.0)
    w = translate(ca.mtimes(M, z) + q, z, [lcp.z[0], lcp.z[1]])
    lcp.cc = Complementarity(range(2), rule=lambda b, i: complements(b.z[i] >= 0, w[i] >= 0))
    _solver().solve(_transform(lcp), options=TOL)
    np.testing.assert_allclose([lcp.z[0].value, lcp.z[1].value], [4 / 3, 7 / 3], atol=1e-7)
