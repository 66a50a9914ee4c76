"""CasADi SX -> Pyomo translation: the Pyomo expressions evaluate to what CasADi evaluates."""
from __future__ import annotations

import io
import math

import casadi as ca
import numpy as np
import pyomo.environ as pyo
import pytest

from contactmp.errors import InputError, UnsupportedProgramError
from contactmp.pyomo_bridge import is_pure_symbol_column, op_name, shared_expressions, translate

N_SYM = 4


def _random_expr(rng: np.random.Generator, x: ca.SX, depth: int, pool: list[ca.SX]) -> ca.SX:
    """A random composition of the supported ops, kept in the domain of every op and of moderate
    magnitude; sometimes reuses an earlier node (shared subexpressions)."""
    if depth == 0 or rng.random() < 0.15:
        r = rng.random()
        if r < 0.6:
            return x[int(rng.integers(N_SYM))]
        if r < 0.8 and pool:
            return pool[int(rng.integers(len(pool)))]
        return ca.SX(float(rng.uniform(-2, 2)))
    a = _random_expr(rng, x, depth - 1, pool)
    kind = int(rng.integers(24))
    if kind >= 12:
        b = _random_expr(rng, x, depth - 1, pool)
    bounded = ca.tanh(a)
    e = [
        lambda: -a, lambda: a**2, lambda: ca.sqrt(1 + a**2), lambda: ca.exp(bounded),
        lambda: ca.log(1 + a**2), lambda: ca.sin(a), lambda: ca.cos(a),
        lambda: ca.tan(0.5 * bounded), lambda: ca.atan(a), lambda: ca.tanh(a), lambda: ca.fabs(a),
        lambda: 2 * a,
        lambda: a + b, lambda: a - b, lambda: a * b, lambda: a / (1 + b**2),
        lambda: (1 + a**2) ** ca.tanh(b),
        lambda: (1 + a**2) ** float(rng.choice([2.5, -1.5, 0.5, 3.0])),
        lambda: ca.fmin(a, b), lambda: ca.fmax(a, b), lambda: ca.tanh(a) * ca.tanh(b),
        lambda: ca.if_else(a < b, a, b * 0.5), lambda: ca.sign(a - b) * a, lambda: ca.hypot(a, b),
    ][kind]()
    pool.append(e)
    return e


def _evaluate(outs: list, model: pyo.ConcreteModel, point: np.ndarray) -> np.ndarray:
    for i in range(N_SYM):
        model.x[i].set_value(float(point[i]))
    return np.array([pyo.value(e) for e in outs], dtype=float)


def test_random_compositions_agree_with_casadi() -> None:
    rng = np.random.default_rng(20240501)
    x = ca.SX.sym("x", N_SYM)
    pool: list[ca.SX] = []
    exprs = ca.vertcat(*[_random_expr(rng, x, 5, pool) for _ in range(60)])
    fun = ca.Function("f", [x], [exprs])
    seen = {fun.instruction_id(k) for k in range(fun.n_instructions())}
    required = {ca.OP_CONST, ca.OP_INPUT, ca.OP_OUTPUT, ca.OP_ADD, ca.OP_SUB, ca.OP_MUL, ca.OP_DIV,
                ca.OP_NEG, ca.OP_POW, ca.OP_CONSTPOW, ca.OP_SQ, ca.OP_SQRT, ca.OP_EXP, ca.OP_LOG,
                ca.OP_SIN, ca.OP_COS, ca.OP_TAN, ca.OP_ATAN, ca.OP_TANH, ca.OP_FABS, ca.OP_FMIN,
                ca.OP_FMAX, ca.OP_TWICE, ca.OP_IF_ELSE_ZERO, ca.OP_LT, ca.OP_SIGN, ca.OP_HYPOT}
    assert required <= seen, sorted(op_name(o) for o in required - seen)

    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(N_SYM))
    outs = translate(exprs, x, [m.x[i] for i in range(N_SYM)])
    assert len(outs) == exprs.numel()
    for _ in range(20):
        point = rng.uniform(-2, 2, N_SYM)
        ref = np.array(fun(point)).ravel()
        got = _evaluate(outs, m, point)
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def test_every_supported_unary_op_at_several_points() -> None:
    x = ca.SX.sym("x")
    y = ca.SX.sym("y")
    cases = [ca.asin(x), ca.acos(x), ca.sinh(x), ca.cosh(x), ca.asinh(x), ca.atanh(x),
             ca.acosh(2 + y * y), ca.log1p(x), ca.expm1(x), 1 / (3 + x), ca.sign(x), x == y,
             x != y, x <= y, ca.logic_not(x < y), x ** y * 0 + (2 + y * y) ** x]
    exprs = ca.vertcat(*cases)
    fun = ca.Function("f", [ca.vertcat(x, y)], [exprs])
    m = pyo.ConcreteModel()
    m.a = pyo.Var()
    m.b = pyo.Var()
    outs = translate(exprs, ca.vertcat(x, y), [m.a, m.b])
    for px, py in [(0.3, -0.7), (-0.5, -0.5), (0.0, 0.25), (0.9, 1.5)]:
        m.a.set_value(px)
        m.b.set_value(py)
        ref = np.array(fun([px, py])).ravel()
        got = np.array([pyo.value(e) for e in outs], dtype=float)
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)


def test_leaves_follow_symbol_order_and_params() -> None:
    a, b, c = ca.SX.sym("a"), ca.SX.sym("b"), ca.SX.sym("c")
    m = pyo.ConcreteModel()
    m.u = pyo.Var(initialize=3.0)
    m.v = pyo.Var(initialize=5.0)
    m.p = pyo.Param(initialize=7.0, mutable=True)
    [e] = translate(a - 2 * b + c * a, ca.vertcat(a, b, c), [m.v, m.u, m.p])
    assert pyo.value(e) == 5.0 - 2 * 3.0 + 7.0 * 5.0
    m.p.set_value(-1.0)  # a mutable Param stays symbolic in the Pyomo expression
    assert pyo.value(e) == 5.0 - 6.0 - 5.0


def test_numeric_leaves_fold_like_casadi() -> None:
    x = ca.SX.sym("x", 2)
    exprs = ca.vertcat(x[0] / x[1], ca.log(x[1]), ca.sqrt(x[0]) + x[0] ** 2, ca.fmax(x[0], x[1]))
    outs = translate(exprs, x, [4, 0.0])
    assert all(type(o) is float for o in outs)
    assert outs[0] == math.inf and outs[1] == -math.inf
    assert outs[2] == 18.0 and outs[3] == 4.0


def test_structural_zeros_constants_and_matrix_order() -> None:
    x = ca.SX.sym("x", 2)
    m = pyo.ConcreteModel()
    m.x = pyo.Var([0, 1], initialize={0: 2.0, 1: 3.0})
    sparse = ca.SX(3, 1)
    sparse[1] = x[0] * x[1]
    outs = translate(sparse, x, [m.x[0], m.x[1]])
    assert outs[0] == 0.0 and outs[2] == 0.0 and pyo.value(outs[1]) == 6.0
    mat = ca.horzcat(ca.vertcat(x[0], 1), ca.vertcat(x[1], x[0] + x[1]))  # 2x2, vec order
    outs = translate(mat, x, [m.x[0], m.x[1]])
    assert [pyo.value(o) for o in outs] == [2.0, 1.0, 3.0, 5.0]
    assert translate(ca.SX(0, 1), x, [m.x[0], m.x[1]]) == []
    assert translate(ca.SX(2.5), ca.SX(0, 1), []) == [2.5]


def test_errors_name_the_problem() -> None:
    x = ca.SX.sym("x", 2)
    leaves = [1.0, 2.0]
    with pytest.raises(UnsupportedProgramError, match="atan2"):
        translate(ca.atan2(x[0], x[1]), x, leaves)
    with pytest.raises(UnsupportedProgramError, match="floor"):
        translate(ca.floor(x[0]), x, leaves)
    with pytest.raises(InputError, match="exprs.*z") as err:
        translate(x[0] + ca.SX.sym("z"), x, leaves)
    assert err.value.field == "exprs"
    with pytest.raises(InputError) as err:
        translate(x[0], ca.vertcat(x[0], 2 * x[1]), leaves)
    assert err.value.field == "symbols"
    with pytest.raises(InputError) as err:
        translate(x[0], ca.vertcat(x[0], x[0]), leaves)
    assert err.value.field == "symbols"
    with pytest.raises(InputError) as err:
        translate(x[0], x, [1.0])
    assert err.value.field == "leaves"
    with pytest.raises(InputError):
        translate(ca.MX.sym("y"), x, leaves)


def test_is_pure_symbol_column() -> None:
    x = ca.SX.sym("x", 3)
    assert is_pure_symbol_column(x)
    assert is_pure_symbol_column(ca.SX(0, 1))
    assert not is_pure_symbol_column(ca.vertcat(x[0], x[0]))
    assert not is_pure_symbol_column(ca.vertcat(x[0], 2 * x[1]))
    assert not is_pure_symbol_column(x.T)
    assert not is_pure_symbol_column(ca.MX.sym("x", 2))


def test_minmax_abs_form() -> None:
    x = ca.SX.sym("x", 2)
    m = pyo.ConcreteModel()
    m.x = pyo.Var([0, 1])
    outs = translate(ca.vertcat(ca.fmin(x[0], x[1]), ca.fmax(x[0], x[1])), x,
                     [m.x[0], m.x[1]], minmax="abs")
    assert "Expr_if" not in str(outs[0])
    for p in [(0.25, -3.5), (-1.0, 2.0), (1.5, 1.5)]:
        m.x[0].set_value(p[0])
        m.x[1].set_value(p[1])
        assert [pyo.value(o) for o in outs] == [min(p), max(p)]


def _chain(x: ca.SX, depth: int) -> ca.SX:
    """y_{k+1} = sin(y_k) y_k / 2 + 0.3 y_k + 0.1 x_1: each level reads y_k three times."""
    y = x[0]
    for _ in range(depth):
        y = 0.5 * ca.sin(y) * y + 0.3 * y + 0.1 * x[1]
    return y


def test_shared_subexpressions_are_built_once() -> None:
    from pyomo.repn.plugins.nl_writer import NLWriter

    x = ca.SX.sym("x", 2)
    m = pyo.ConcreteModel()
    m.x = pyo.Var([0, 1], initialize={0: 0.7, 1: -0.4})
    [plain] = translate(_chain(x, 8), x, [m.x[0], m.x[1]])
    [named] = translate(_chain(x, 8), x, [m.x[0], m.x[1]], share=shared_expressions(m))
    ref = float(ca.Function("f", [x], [_chain(x, 8)])([0.7, -0.4]))
    assert abs(pyo.value(plain) - ref) <= 1e-14 and abs(pyo.value(named) - ref) <= 1e-14
    assert len(m.cse) == 7  # y_1 .. y_7 (y_0 is a leaf, y_8 is read once)

    # 60 levels: 3^60 tree nodes, but the NL writer visits each named expression once
    deep = pyo.ConcreteModel()
    deep.x = pyo.Var([0, 1], initialize=0.5)
    [e] = translate(_chain(x, 60), x, [deep.x[0], deep.x[1]], share=shared_expressions(deep))
    deep.o = pyo.Objective(expr=(e - 0.2) ** 2)
    out = io.StringIO()
    NLWriter().write(deep, out, None, None, linear_presolve=False, scale_model=False)
    # linear in the depth (each named expression written once); the expanded tree would have 3^60 nodes
    assert len(out.getvalue()) < 100_000


def test_ten_thousand_instructions_translate_exactly() -> None:
    """(Its speed is measured by benchmarks/pyomo_scale.py, not asserted here.)"""
    rng = np.random.default_rng(7)
    n = 120
    x = ca.SX.sym("x", n)
    A = rng.standard_normal((30, n))
    g = ca.vertcat(ca.sin(ca.mtimes(A, x)), ca.exp(-ca.sumsqr(x)), ca.fmax(x[:20], 0.1 * x[20:40]))
    fun = ca.Function("f", [x], [g])
    assert fun.n_instructions() >= 10_000
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(n))
    leaves = [m.x[i] for i in range(n)]
    outs = translate(g, x, leaves)
    point = rng.uniform(-0.2, 0.2, n)
    for i in range(n):
        m.x[i].set_value(float(point[i]))
    np.testing.assert_allclose([pyo.value(o) for o in outs], np.array(fun(point)).ravel(),
                               rtol=1e-12, atol=1e-13)
