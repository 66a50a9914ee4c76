"""Every complementarity form pyomo.mpec accepts, solved by SolverFactory("contactmp_ipopt") with a
strategy, against pyomo.mpec's own ``mpec.standard_form`` (and ``mpec.simple_nonlinear``) on the
same models.

Each case is a model in two variables ``x``, ``y`` with one condition whose feasible set is drawn in
its docstring and a distance objective with a unique local (hence global) minimizer on that set.
Three judges are compared, each written apart from the plugin's mapping:

* :func:`_condition_residual` evaluates the ORIGINAL Pyomo condition numerically (the natural
  residual ``|e1 - mid(l, u, e1 - e2)|`` of the MCP form, ``|min(s1, s2)|`` of two inequalities,
  ``|lhs - rhs|`` of an equality side);
* :func:`_standard_form_residuals` evaluates the model after ``mpec.standard_form`` (``v`` in its
  bounds complementary to the row ``c``, ``v`` given by ``ve``);
* the Program the plugin builds, judged by ``Program.residuals`` at ``PyomoProgram.program_x()``.

On sampled points, feasible and not, the three must agree; the strategy's answer must satisfy the
original model and be the known solution.
"""
from __future__ import annotations

import logging
import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.core.expr.relational_expr import EqualityExpression, InequalityExpression, RangedExpression
from pyomo.mpec import Complementarity, complements
from pyomo.opt import TerminationCondition

import contactmp.solvers.nlp.pyomo_ipopt  # noqa: F401  (registers the plugin)
from contactmp.errors import InputError, UnsupportedProgramError
from contactmp.solvers.nlp.pyomo_ipopt import pyomo_to_program

INF = float("inf")
STRATEGIES = ["scholtes", "direct", "elastic_l1", "fischer_burmeister"]
FEAS = 1e-7      # a strategy's answer: residuals of the original model
EXACT = 1e-12    # a sampled point on the set (exact arithmetic but for rounding)
CLEAR = 1e-3     # a sampled point off the set is off by at least this much


# ------------------------------------------------------------------ independent judges
def _is_number(e: Any) -> bool:
    return not hasattr(e, "is_fixed") or bool(e.is_fixed())


def _canon(arg: Any) -> tuple[str, float, float, float]:
    """(kind, lo, body, hi) of a side at the model's current values; kind "eq" (body = lhs - rhs),
    "rel" (lo <= body <= hi, infinite bounds as +-inf) or "expr" (body free)."""
    if isinstance(arg, EqualityExpression):
        return "eq", -INF, pyo.value(arg.args[0]) - pyo.value(arg.args[1]), INF
    if isinstance(arg, InequalityExpression):
        a, b = arg.args
        if _is_number(b):
            return "rel", -INF, pyo.value(a), pyo.value(b)
        if _is_number(a):
            return "rel", pyo.value(a), pyo.value(b), INF
        return "rel", 0.0, pyo.value(b) - pyo.value(a), INF
    if isinstance(arg, RangedExpression):
        lo, e, hi = (pyo.value(t) for t in arg.args)
        return "rel", lo, e, hi
    return "expr", -INF, pyo.value(arg), INF


def _condition_residual(cdata: Any) -> float:
    """0 exactly when the ORIGINAL condition holds at the model's values (pyomo.mpec's meaning)."""
    sides = [_canon(arg) for arg in cdata._args]
    for kind, _, body, _ in sides:
        if kind == "eq":  # the first equality side is the condition
            return abs(body)
    nb = [(lo > -INF) + (hi < INF) for _, lo, _, hi in sides]
    if nb == [1, 1]:  # two inequalities: both slacks >= 0, one of them 0
        slack = [body - lo if lo > -INF else hi - body for _, lo, body, hi in sides]
        return abs(min(slack))
    # l <= e1 <= u against a free e2: e1 = mid(l, u, e1 - e2)
    k = 0 if nb[0] > 0 or (nb[1] == 0 and sides[0][0] == "rel") else 1
    _, lo, e1, hi = sides[k]
    e2 = sides[1 - k][2]
    return abs(e1 - min(max(e1 - e2, lo), hi))


def _model_residual(m: Any) -> float:
    """The largest violation of the original model's rows, bounds and conditions."""
    worst = 0.0
    for c in m.component_data_objects(pyo.Constraint, active=True):
        v = pyo.value(c.body)
        if c.lb is not None:
            worst = max(worst, c.lb - v)
        if c.ub is not None:
            worst = max(worst, v - c.ub)
    for v in m.component_data_objects(pyo.Var):
        if v.value is None:
            continue
        worst = max(worst, (v.lb - v.value) if v.lb is not None else 0.0,
                    (v.value - v.ub) if v.ub is not None else 0.0)
    for cdata in m.component_data_objects(Complementarity, active=True):
        worst = max(worst, _condition_residual(cdata))
    return worst


def _standard_form(m: Any) -> list[Any]:
    """Apply pyomo.mpec's ``mpec.standard_form`` to ``m``; its former condition blocks."""
    blocks = list(m.component_data_objects(Complementarity, active=True))
    pyo.TransformationFactory("mpec.standard_form").apply_to(m)
    return blocks


def _standard_form_residuals(blocks: list[Any]) -> list[float]:
    """Per block of ``mpec.standard_form``: an equality block ``c``, or ``v`` (bounds ``[lv, uv]``)
    complementary to ``F`` (the slack of ``c`` when it has a bound, else ``c``'s body), with ``v``
    set from the row ``ve: v = expression``; the natural residual ``|v - mid(lv, uv, v - F)|``."""
    out = []
    for b in blocks:
        c = b.c
        if not hasattr(b, "v"):
            out.append(abs(pyo.value(c.body) - pyo.value(c.lower)))
            continue
        v = b.v
        v.set_value(0.0, skip_validation=True)
        r0 = pyo.value(b.ve.body)
        v.set_value(1.0, skip_validation=True)
        v.set_value((pyo.value(b.ve.lower) - r0) / (pyo.value(b.ve.body) - r0), skip_validation=True)
        lv = -INF if v.lb is None else v.lb
        uv = INF if v.ub is None else v.ub
        if c.lower is None and c.upper is None:
            F = pyo.value(c.body)
        elif c.upper is None:
            F = pyo.value(c.body) - pyo.value(c.lower)
        else:  # a one-sided row Pyomo stored as body <= upper (e.g. q <= y with q a fixed Var)
            assert c.lower is None
            F = pyo.value(c.upper) - pyo.value(c.body)
        out.append(abs(v.value - min(max(v.value - F, lv), uv)))
    return out


def _program_residual(pp: Any) -> float:
    """The plugin's Program judged at the model's current point (auxiliaries completed)."""
    r = pp.program.residuals(pp.program_x())
    return max(r["bound"], r["constraint"], r["comp_min"])


def _set(m: Any, values: dict[str, float]) -> None:
    for name, val in values.items():
        m.find_component(name).set_value(val, skip_validation=True)


# ------------------------------------------------------------------ the forms
@dataclass
class Case:
    """One form: ``cond(m)`` on a model with ``x``, ``y`` and the objective
    ``(x - target_x)^2 + (y - target_y)^2``; ``ref(m)`` is the same condition as pyomo's
    transformations accept it (default: ``cond``); ``forms`` what the plugin maps it to."""

    id: str
    cond: Callable[[Any], Any]
    target: tuple[float, float]
    solution: tuple[float, float]
    forms: tuple[str, ...]
    on: list[tuple[float, float]]
    off: list[tuple[float, float]]
    ref: Callable[[Any], Any] | None = None
    setup: Callable[[Any], None] | None = None
    #: mpec.simple_nonlinear can solve ``ref`` (it cannot take infinite bounds, nor a bound that is
    #: a fixed Var: ``q <= y`` becomes a row without lower bound, which it negates)
    simple_nonlinear: bool = True

    @property
    def objective(self) -> float:
        return float(np.sum((np.array(self.solution) - np.array(self.target)) ** 2))

    def build(self, reference: bool = False) -> pyo.ConcreteModel:
        m = pyo.ConcreteModel()
        m.x = pyo.Var()
        m.y = pyo.Var()
        if self.setup is not None:
            self.setup(m)
        tx, ty = self.target
        m.o = pyo.Objective(expr=(m.x - tx) ** 2 + (m.y - ty) ** 2)
        rule = self.ref if reference and self.ref is not None else self.cond
        m.cc = Complementarity(expr=rule(m))
        return m


def _params(m: Any) -> None:
    m.p = pyo.Param(mutable=True, initialize=1.0)
    m.q = pyo.Var(initialize=2.0)
    m.q.fix()
    m.lo = pyo.Param(mutable=True, initialize=0.0)
    m.hi = pyo.Param(mutable=True, initialize=1.0)


# {x = 1, y >= 2} u {x >= 1, y = 2}; target (3, 1): (3, 2) (the corner (1, 2) is not a local min)
PAIR = dict(target=(3.0, 1.0), solution=(3.0, 2.0), forms=("pair",),
            on=[(1, 5), (4, 2), (1, 2)], off=[(0.5, 2), (1, 1.5), (3, 3), (1.5, 2.5), (4, 1)])
# 0 <= x <= 1 _|_ y: {x = 0, y >= 0} u {0 <= x <= 1, y = 0} u {x = 1, y <= 0}; each target has
# one local minimizer (the projections onto the other pieces are corners one can leave downhill)
BOX = dict(forms=("box",), on=[(0, 0.5), (1, -0.5), (0.5, 0), (0, 0), (1, 0)],
           off=[(0, -0.5), (1, 0.5), (0.5, 0.1), (1.2, 0), (-0.1, 0), (0.5, -0.3)])
BOX_LOW = dict(target=(-0.5, 0.8), solution=(0.0, 0.8), **BOX)
BOX_UP = dict(target=(1.5, -0.8), solution=(1.0, -0.8), **BOX)
BOX_MID = dict(target=(0.5, 0.0), solution=(0.5, 0.0), **BOX)
# x >= 1 _|_ y: {x = 1, y >= 0} u {x >= 1, y = 0}; target (0, 2): (1, 2)
LOWER = dict(target=(0.0, 2.0), solution=(1.0, 2.0), forms=("lower",),
             on=[(1, 3), (2, 0), (1, 0)], off=[(1, -1), (2, 1), (0.5, 0), (2, -1)],
             ref=lambda m: complements(pyo.inequality(1, m.x, INF), m.y))
# x <= 1 _|_ y: {x = 1, y <= 0} u {x <= 1, y = 0}; target (2, -2): (1, -2)
UPPER = dict(target=(2.0, -2.0), solution=(1.0, -2.0), forms=("upper",),
             on=[(1, -3), (0, 0), (1, 0)], off=[(1, 1), (0, -1), (2, 0), (0, 1)],
             ref=lambda m: complements(pyo.inequality(-INF, m.x, 1), m.y))
# x + y = 1 (the equality side is the condition); target (1, 3): (-0.5, 1.5)
EQUALITY = dict(target=(1.0, 3.0), solution=(-0.5, 1.5), forms=("equality",),
                on=[(0, 1), (2, -1), (-0.5, 1.5)], off=[(0, 0), (1, 1)])

CASES = [
    Case("ge_ge", lambda m: complements(m.x >= 1, m.y >= 2), **PAIR),
    Case("le_le_constants_left", lambda m: complements(1 <= m.x, 2 <= m.y), **PAIR),
    Case("ge_ge_reversed", lambda m: complements(m.y - 2 >= 0, m.x - 1 >= 0), **PAIR),
    Case("le_le_upper_bounds", lambda m: complements(-m.x <= -1, -m.y <= -2), **PAIR),
    Case("mixed_le_ge", lambda m: complements(m.x - 1 >= 0, 2 - m.y <= 0), **PAIR),
    Case("variables_both_sides", lambda m: complements(m.x + m.y >= m.y + 1, m.y >= 2), **PAIR),
    Case("param_and_fixed_bounds", lambda m: complements(m.x >= m.p, m.q <= m.y), setup=_params,
         simple_nonlinear=False, **PAIR),
    Case("strict", lambda m: complements(m.x > 1, m.y > 2), **PAIR),
    Case("box_lower", lambda m: complements(pyo.inequality(0, m.x, 1), m.y), **BOX_LOW),
    Case("box_upper", lambda m: complements(pyo.inequality(0, m.x, 1), m.y), **BOX_UP),
    Case("box_interior", lambda m: complements(pyo.inequality(0, m.x, 1), m.y), **BOX_MID),
    Case("box_free_side_first", lambda m: complements(m.y, pyo.inequality(0, m.x, 1)), **BOX_LOW),
    # pyomo's standard form wants constant bounds of a range; the plugin takes their values
    Case("box_param_bounds", lambda m: complements(pyo.inequality(m.lo, m.x, m.hi), m.y),
         setup=_params, ref=lambda m: complements(pyo.inequality(0, m.x, 1), m.y), **BOX_UP),
    # e1 = x + x^3 in [0, 2] is x in [0, 1]: the same set
    Case("box_nonlinear_e1", lambda m: complements(pyo.inequality(0, m.x + m.x**3, 2), m.y),
         **BOX_UP),
    # 0 <= x <= 1 _|_ y^2 (y^2 <= 0 at x = 1 means y = 0): {x = 0} u {0 <= x <= 1, y = 0}
    Case("box_pow_side", lambda m: complements(pyo.inequality(0, m.x, 1), m.y**2),
         target=(-1.0, 1.0), solution=(0.0, 1.0), forms=("box",),
         on=[(0, 3), (0, -2), (0.5, 0), (1, 0)], off=[(0.5, 0.5), (1, 1), (1.5, 0), (-0.5, 1)]),
    Case("lower", lambda m: complements(m.x >= 1, m.y), **LOWER),
    Case("lower_free_side_first", lambda m: complements(m.y, 1 <= m.x), **LOWER),
    Case("lower_zero_bound", lambda m: complements(m.x - 1 >= 0, m.y), **LOWER),
    Case("upper", lambda m: complements(m.x <= 1, m.y), **UPPER),
    Case("upper_zero_bound", lambda m: complements(m.x - 1 <= 0, m.y), **UPPER),
    # the written form decides the sign: 0 <= 1 - x is a LOWER bound of 1 - x, so y >= 0 at x = 1:
    # {x = 1, y >= 0} u {x <= 1, y = 0}; target (2, -2): the corner (1, 0), a local min
    Case("lower_bound_of_1_minus_x", lambda m: complements(0 <= 1 - m.x, m.y),
         target=(2.0, -2.0), solution=(1.0, 0.0), forms=("lower",),
         on=[(1, 3), (0, 0), (1, 0)], off=[(1, -1), (0, 1), (2, 0)],
         ref=lambda m: complements(pyo.inequality(0, 1 - m.x, INF), m.y)),
    # x >= 0 _|_ y^2 (a PowExpression side, as in MacMPEC's taxmcp): {x = 0} u {x >= 0, y = 0}
    Case("bare_pow_side", lambda m: complements(m.x >= 0, m.y**2),
         target=(-1.0, 1.0), solution=(0.0, 1.0), forms=("lower",),
         on=[(0, 5), (3, 0), (0, 0), (0, -2)], off=[(1, 1), (-1, 0), (2, -0.5)],
         ref=lambda m: complements(pyo.inequality(0, m.x, INF), m.y**2)),
    # l == u: the row x = 1, y free
    Case("fixed_range", lambda m: complements(pyo.inequality(1, m.x, 1), m.y),
         target=(0.0, 2.0), solution=(1.0, 2.0), forms=("fixed",),
         on=[(1, 5), (1, -5)], off=[(0.9, 0), (1.1, 3)]),
    # both bounds infinite: x free, so y = 0
    Case("free_range", lambda m: complements(pyo.inequality(-INF, m.x, INF), m.y),
         target=(3.0, 2.0), solution=(3.0, 0.0), forms=("free",),
         on=[(3, 0), (-7, 0)], off=[(0, 0.1), (2, -1)]),
    Case("equality", lambda m: complements(m.x + m.y == 1, m.y), **EQUALITY),
    Case("equality_second", lambda m: complements(m.y, m.x + m.y == 1), **EQUALITY),
    Case("equality_constant_left", lambda m: complements(1 == m.x + m.y, m.y), **EQUALITY),
    # as in pyomo.mpec, the bound of the other side is ignored (a warning says so): y = 1.5 < 2
    Case("equality_with_bounded_side", lambda m: complements(m.x + m.y == 1, m.y >= 2), **EQUALITY),
]
IDS = [c.id for c in CASES]
for _c in CASES:  # these references have an infinite bound
    _c.simple_nonlinear &= not {"lower", "upper", "free"} & set(_c.forms)
SIMPLE = [c for c in CASES if c.simple_nonlinear]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_mapping_has_the_feasible_set_of_standard_form(case: Case,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    """On points on and off the condition's set, the original condition, pyomo's standard form
    and the plugin's Program agree (and the Program has the expected form)."""
    m = case.build()
    pp = pyomo_to_program(m)
    assert tuple(c.form for c in pp.conditions) == case.forms
    ref = case.build(reference=True)  # the plugin reads pyomo's accepted spelling alike
    pp_ref = pyomo_to_program(ref)
    sf = case.build(reference=True)
    blocks = _standard_form(sf)
    for pts, on in ((case.on, True), (case.off, False)):
        for x, y in pts:
            for model in (m, ref, sf):
                _set(model, {"x": x, "y": y})
            own = _condition_residual(m.cc)
            std = max(_standard_form_residuals(blocks))
            prog, prog_ref = _program_residual(pp), _program_residual(pp_ref)
            if on:
                assert max(own, std, prog, prog_ref) <= EXACT, (x, y, own, std, prog, prog_ref)
            else:
                assert min(own, std, prog, prog_ref) >= CLEAR, (x, y, own, std, prog, prog_ref)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_strategy_finds_the_unique_solution(case: Case, strategy: str) -> None:
    m = case.build()
    solver = pyo.SolverFactory("contactmp_ipopt")
    res = solver.solve(m, options={"strategy": strategy})
    assert res.solver.termination_condition == TerminationCondition.optimal
    assert _model_residual(m) <= FEAS  # judged on the original Pyomo model
    # (direct's NLP has no constraint qualification: IPOPT stops within ~1e-5 of the point)
    np.testing.assert_allclose([m.x.value, m.y.value], case.solution, atol=1e-5)
    assert pyo.value(m.o) == pytest.approx(case.objective, abs=1e-7)
    assert m.cc.active  # the model is left untransformed
    # the same point satisfies pyomo's standard form of the condition
    sf = case.build(reference=True)
    blocks = _standard_form(sf)
    _set(sf, {"x": m.x.value, "y": m.y.value})
    assert max(_standard_form_residuals(blocks)) <= 1e-6


@pytest.mark.parametrize("case", SIMPLE, ids=[c.id for c in SIMPLE])
def test_simple_nonlinear_of_the_same_model_agrees(case: Case) -> None:
    """pyomo.mpec's mpec.simple_nonlinear (standard form + product rows) solved as an NLP reaches
    the same solution and objective as the strategy."""
    ref = case.build(reference=True)
    pyo.TransformationFactory("mpec.simple_nonlinear").apply_to(ref)
    res = pyo.SolverFactory("contactmp_ipopt").solve(ref, options={"tol": 1e-10})
    assert res.solver.termination_condition == TerminationCondition.optimal
    np.testing.assert_allclose([ref.x.value, ref.y.value], case.solution, atol=1e-4)
    m = case.build()
    pyo.SolverFactory("contactmp_ipopt").solve(m, options={"strategy": "scholtes"})
    assert pyo.value(m.o) == pytest.approx(pyo.value(ref.o), abs=1e-6)


def test_box_aux_variables_and_start() -> None:
    """A box condition adds w+ = max(e2, 0), w- = max(-e2, 0): rows e2 - w+ + w- = 0 and pairs
    (e1 - l) _|_ w+, (u - e1) _|_ w-, started from the model's values."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=0.25)
    m.y = pyo.Var(initialize=-3.0)
    m.z = pyo.Var([1, 2], initialize=2.0)
    m.a = Complementarity(expr=complements(m.z[1] >= 0, m.z[2] >= 0))
    m.b = Complementarity(expr=complements(pyo.inequality(-1, m.x, 2), 2 * m.y))
    pp = pyomo_to_program(m)
    prog = pp.program
    assert [c.form for c in pp.conditions] == ["pair", "box"]
    assert pp.conditions[1].aux == (0, 1) and pp.conditions[1].pairs == (1, 2)
    assert pp.conditions[1].rows == (0,) and pp.constraints == [m.b]
    assert pp.n_aux == 2 and prog.n_x == 6 and prog.n_comp == 3
    np.testing.assert_array_equal(prog.x0, [0.25, -3.0, 2.0, 2.0, 0.0, 6.0])  # e2 = -6: w- = 6
    np.testing.assert_array_equal(prog["w"].lb, [0.0, 0.0])
    ev = prog.evaluate(np.array([0.25, -3.0, 2.0, 2.0, 0.5, 0.7]))
    np.testing.assert_allclose(ev["g"], [-6.0 - 0.5 + 0.7])
    np.testing.assert_allclose(ev["a"], [2.0, 1.25, 1.75])
    np.testing.assert_allclose(ev["b"], [2.0, 0.5, 0.7])
    np.testing.assert_array_equal(pp.program_x(), [0.25, -3.0, 2.0, 2.0, 0.0, 6.0])
    # load takes a program vector or its model part
    pp.load(np.array([1.0, 2.0, 0.0, 3.0, 4.0, 0.0]))
    assert (m.x.value, m.y.value, m.z[2].value) == (1.0, 2.0, 3.0)
    with pytest.raises(InputError, match="^x:"):
        pp.load(np.zeros(3))


# ------------------------------------------------------------------ a taxmcp-like model
SIGMA, BETA, LBAR, TAU = 0.5, 0.5, 2.0, 0.25


def _tax_economy(reference: bool = False) -> pyo.ConcreteModel:
    """A small general equilibrium with a tax, written in the style of MacMPEC's taxmcp (our own
    model): labor (price PL = 1, fixed numeraire, endowment LBAR) makes goods Y1, Y2 one for one;
    utility C aggregates them with a CES unit cost e(P (1 + t)); the tax t1 = mid(0, 0.5, TAU)
    (a box condition) is paid back as income GOVT (an equality side); an idle activity X has a
    positive CES unit cost (a bare PowExpression side, so X = 0). ``reference``: the one-sided
    conditions against free expressions as ``inequality(0, var, inf)``, the form pyomo's own
    transformations accept."""
    m = pyo.ConcreteModel()
    m.I = pyo.RangeSet(1, 2)
    m.Y = pyo.Var(m.I, within=pyo.NonNegativeReals, initialize=1.0)
    m.P = pyo.Var(m.I, bounds=(0.1, None), initialize=1.0)
    m.C = pyo.Var(within=pyo.NonNegativeReals, initialize=1.0)
    m.X = pyo.Var(within=pyo.NonNegativeReals, initialize=1.0)
    m.PC = pyo.Var(within=pyo.NonNegativeReals, initialize=1.0)
    m.PL = pyo.Var(initialize=1.0)
    m.PL.fix()
    m.GOVT = pyo.Var(initialize=0.0)
    m.T1 = pyo.Var(initialize=0.0)
    rate = {1: m.T1, 2: 0.0}
    s = SIGMA
    unit_cost = sum(BETA * (m.P[i] * (1 + rate[i])) ** (1 - s) for i in m.I) ** (1 / (1 - s))

    def lower(v: Any) -> Any:
        return pyo.inequality(0, v, INF) if reference else v >= 0

    m.welfare = pyo.Objective(expr=m.C, sense=pyo.maximize)
    m.PROFIT = Complementarity(m.I, rule=lambda m, i: complements(m.PL >= m.P[i], m.Y[i] >= 0))
    m.PROFITC = Complementarity(expr=complements(lower(m.C), unit_cost - m.PC))
    m.PROFITX = Complementarity(expr=complements(
        lower(m.X), (0.5 * m.PL ** (1 - s) + 0.5 * m.PC ** (1 - s)) ** (1 / (1 - s))))
    m.MARKET = Complementarity(m.I, rule=lambda m, i: complements(
        m.Y[i] >= BETA * (m.PC / (m.P[i] * (1 + rate[i]))) ** s * m.C, m.P[i] >= 0))
    m.INCOME = Complementarity(expr=complements(m.PC * m.C >= m.PL * LBAR + m.GOVT, m.PC >= 0))
    m.REVENUE = Complementarity(expr=complements(m.GOVT == m.T1 * m.P[1] * m.Y[1], m.GOVT))
    m.TAX = Complementarity(expr=complements(pyo.inequality(0, m.T1, 0.5), m.T1 - TAU))
    return m


def _tax_equilibrium() -> dict[str, float]:
    """The closed form: every good is made (P = PL = 1), PC = e(1 + TAU, 1), demand
    Y_i = BETA (PC / p_i)^SIGMA C with sum Y_i = LBAR (income PC C = LBAR + TAU Y1 and the CES
    identity sum p_i Y_i = PC C)."""
    p = np.array([1.0 + TAU, 1.0])
    e = np.sum(BETA * p ** (1 - SIGMA)) ** (1 / (1 - SIGMA))
    share = BETA * (e / p) ** SIGMA
    C = LBAR / share.sum()
    Y = share * C
    return {"Y[1]": Y[0], "Y[2]": Y[1], "P[1]": 1.0, "P[2]": 1.0, "C": C, "X": 0.0, "PC": e,
            "GOVT": TAU * Y[0], "T1": TAU}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_taxmcp_like_mixed_complementarity(strategy: str) -> None:
    want = _tax_equilibrium()
    m = _tax_economy()
    solver = pyo.SolverFactory("contactmp_ipopt")
    # max C with the penalty rho = 1 is unbounded; elastic_l1 starts at rho0 = 10 here
    extra = {"rho0": 10.0} if strategy == "elastic_l1" else {}
    res = solver.solve(m, options={"strategy": strategy, **extra})
    assert res.solver.termination_condition == TerminationCondition.optimal
    assert [c.form for c in solver.last_program.conditions] == [
        "pair", "pair", "lower", "lower", "pair", "pair", "pair", "equality", "box"]
    assert _model_residual(m) <= FEAS
    for name, val in want.items():
        assert m.find_component(name).value == pytest.approx(val, abs=1e-6), name
    assert pyo.value(m.welfare) == pytest.approx(want["C"], abs=1e-6)
    assert m.PL.value == 1.0 and m.PL.fixed


def test_taxmcp_like_matches_standard_form() -> None:
    """At the closed-form equilibrium all three judges accept; moved off it, all three reject."""
    want = _tax_equilibrium()
    m = _tax_economy()
    pp = pyomo_to_program(m)
    sf = _tax_economy(reference=True)
    blocks = _standard_form(sf)
    conds = list(m.component_data_objects(Complementarity, active=True))
    moves = [{}, {"T1": TAU + 0.1}, {"X": 0.5}, {"C": want["C"] + 0.1}, {"P[2]": 0.9},
             {"GOVT": 0.0}, {"T1": 0.6}]
    for move in moves:
        point = {**want, **move}
        _set(m, point)
        _set(sf, point)
        own = max(_condition_residual(c) for c in conds)
        std = max(_standard_form_residuals(blocks))
        prog = _program_residual(pp)
        if not move:
            assert max(own, std, prog) <= 1e-12
        else:
            assert min(own, std, prog) >= 1e-3, (move, own, std, prog)


# ------------------------------------------------------------------ pyomo's own MPEC examples
#: file -> (known solution {variable: value} (None: not unique), objective or None for an MCP)
KNOWN: dict[str, tuple[dict[str, float] | None, float | None]] = {
    # Bard's bilevel program: the optimum of MacMPEC's bard1
    "bard1": ({"x": 1.0, "y": 0.0}, 17.0),
    # min (x - 1 - y)^2 is 0 only at x = 1 + y; y > 0 would need y = x^2 - 1 = y^2 + 2y: so (1, 0)
    "df": ({"x": 1.0, "y": 0.0}, 0.0),
    # no two neighbours nonzero; the heaviest such set {1, 3, 5} is at 1, the rest 0: f = 2 + 4
    "indexed": ({"x[1]": 1.0, "x[2]": 0.0, "x[3]": 1.0, "x[4]": 0.0, "x[5]": 1.0}, 6.0),
    # two optima, (0, 1) and (2, 0)
    "linear1": (None, -2.0),
    # the LCP 0 <= x _|_ M x + q >= 0 (munson1 is munson1a; b, c, d negate variables and rows)
    "munson1": ({"x1": 1.0, "x2": 0.0, "x3": 0.0}, None),
    "munson1a": ({"x1": 1.0, "x2": 0.0, "x3": 0.0}, None),
    "munson1b": ({"x1": -1.0, "x2": 0.0, "x3": 0.0}, None),
    "munson1c": ({"x1": 1.0, "x2": 0.0, "x3": 0.0}, None),
    "munson1d": ({"x1": -1.0, "x2": 0.0, "x3": 0.0}, None),
    # z3 <= 4 min(z1, z2) = 0, so f = z1 + z2 - z3 >= 0, 0 only at the origin
    "scholtes4": ({"z[1]": 0.0, "z[2]": 0.0, "z3": 0.0}, 0.0),
}
def _example(data: Path, name: str) -> pyo.ConcreteModel:
    """The ``model`` that ``tests/data/pyomo_mpec/<name>.py`` builds."""
    return runpy.run_path(str(data / "pyomo_mpec" / f"{name}.py"))["model"]


def _example_params() -> list[Any]:
    out = []
    for name in KNOWN:
        for strategy in STRATEGIES:
            out.append(pytest.param(name, strategy, id=f"{name}-{strategy}"))
    return out


def test_every_shared_example_is_known(repo_data: Path) -> None:
    assert sorted(p.stem for p in (repo_data / "pyomo_mpec").glob("*.py")) == sorted(KNOWN)


@pytest.mark.parametrize("name,strategy", _example_params())
def test_pyomo_mpec_examples(name: str, strategy: str, repo_data: Path) -> None:
    solution, objective = KNOWN[name]
    m = _example(repo_data, name)
    res = pyo.SolverFactory("contactmp_ipopt").solve(m, options={"strategy": strategy})
    assert res.solver.termination_condition == TerminationCondition.optimal
    assert _model_residual(m) <= FEAS
    if solution is not None:
        for var, val in solution.items():
            assert m.find_component(var).value == pytest.approx(val, abs=1e-5), var
    objs = list(m.component_data_objects(pyo.Objective, active=True))
    if objective is not None:
        assert pyo.value(objs[0]) == pytest.approx(objective, abs=1e-6)
    else:
        assert not objs


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_pyomo_mpec_examples_match_standard_form(name: str, repo_data: Path) -> None:
    """At the known solution (or a point of linear1's) all three judges accept; at random points
    they agree."""
    solution = KNOWN[name][0] or {"x1": 0.0, "x2": 1.0}
    m = _example(repo_data, name)
    pp = pyomo_to_program(m)
    assert {c.form for c in pp.conditions} == {"pair"}
    sf = _example(repo_data, name)
    blocks = _standard_form(sf)
    conds = list(m.component_data_objects(Complementarity, active=True))
    names = [v.name for v in pp.variables]
    full = {n: solution.get(n) for n in names}
    if name == "bard1":  # the multipliers of the lower level at the optimum
        full.update({"l[1]": 3.5, "l[2]": 0.0, "l[3]": 0.0})
    assert None not in full.values()
    rng = np.random.default_rng(3)
    for k in range(6):
        point = full if k == 0 else dict(zip(names, rng.uniform(-2, 3, len(names))))
        _set(m, point)
        _set(sf, point)
        own = [_condition_residual(c) for c in conds]
        std = _standard_form_residuals(blocks)
        prog = pp.program.evaluate(pp.program_x())
        mine = np.abs(np.minimum(prog["a"], prog["b"]))
        if k == 0:
            assert max(own + std + mine.tolist()) <= 1e-12
        # per condition: zero for one judge exactly when zero for the others
        np.testing.assert_array_equal(np.array(own) <= 1e-12, np.array(std) <= 1e-12)
        np.testing.assert_array_equal(np.array(own) <= 1e-12, mine <= 1e-12)


# ------------------------------------------------------------------ refused forms, clear errors
def _xy() -> pyo.ConcreteModel:
    m = pyo.ConcreteModel()
    m.x = pyo.Var()
    m.y = pyo.Var()
    m.z = pyo.Var()
    m.o = pyo.Objective(expr=m.x**2 + m.y**2)
    return m


@pytest.mark.parametrize("cond,match", [
    (lambda m: complements(pyo.inequality(0, m.x, 1), m.y >= 0), "cc has 3 finite bounds"),
    (lambda m: complements(pyo.inequality(0, m.x, 1), pyo.inequality(0, m.y, 1)), "4 finite bounds"),
    (lambda m: complements(m.x, m.y), "cc has no finite bound"),
    (lambda m: complements(pyo.inequality(-INF, m.x, INF), pyo.inequality(-INF, m.y, INF)),
     "no finite bound"),
    (lambda m: complements(pyo.inequality(m.z, m.x, 1), m.y), "lower bound .* unfixed"),
    (lambda m: complements(m.x >= 0, 2 >= 1), "relation between numbers"),
])
def test_forms_pyomo_refuses_are_refused(cond: Callable[[Any], Any], match: str) -> None:
    m = _xy()
    m.cc = Complementarity(expr=cond(m))
    with pytest.raises(UnsupportedProgramError, match=match):
        pyo.SolverFactory("contactmp_ipopt").solve(m, options={"strategy": "scholtes"})
    assert m.cc.active


@pytest.mark.parametrize("cond,match", [
    # (with numbers, pyo.inequality(1, x, 0) is already False; parameters keep the range)
    (lambda m: complements(pyo.inequality(m.p, m.x, m.lo), m.y), "lower bound 1.0 > upper bound 0.0"),
    (lambda m: complements(m.x >= INF, m.y >= 0), "lower bound inf"),
    (lambda m: complements(m.x <= -INF, m.y), "upper bound -inf"),
])
def test_contradictory_bounds_name_the_condition(cond: Callable[[Any], Any], match: str) -> None:
    m = _xy()
    _params(m)
    m.cc = Complementarity(expr=cond(m))
    with pytest.raises(InputError, match=match) as err:
        pyomo_to_program(m)
    assert err.value.field == "cc"


def test_ignored_side_of_an_equality_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    m = _xy()
    m.cc = Complementarity(expr=complements(m.x + m.y == 1, m.z >= 2))
    with caplog.at_level(logging.WARNING, logger="contactmp.solvers.nlp.pyomo_ipopt"):
        pp = pyomo_to_program(m)
    assert "cc" in caplog.text and "ignored" in caplog.text
    assert pp.program.n_comp == 0 and pp.program.n_g == 1
    assert pp.variables == [m.x, m.y]  # z is only in the ignored side: not a column, as in Pyomo
