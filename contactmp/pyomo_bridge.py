"""CasADi SX -> Pyomo expressions: a walk over the algorithm of an SX Function.

The CasADi form of a program is the source; the Pyomo form is produced from it. ``translate`` builds
``casadi.Function("f", [symbols], [exprs])`` and replays its algorithm (one instruction at a time,
CasADi's own topological order), emitting one Pyomo expression object per instruction. Every
instruction result is built once and reused as a Python object, so the Pyomo expressions are a DAG
of the same size as the CasADi graph (CasADi's SX graph is already free of duplicated nodes).

A DAG is compact in memory, but Pyomo walks expressions as trees (``value()``, the NL writer).
For graphs that reuse intermediate results deeply (a result used twice in each of k nested levels
is walked 2^k times) pass ``share=shared_expressions(block)``: every result used more than once
is then stored in an indexed Pyomo ``Expression`` on ``block``, which the NL writer emits once (as
an AMPL "defined variable").

Supported CasADi operations: const, input, output, assign, add, sub, mul, div, neg, inv, twice,
sq, sqrt, pow, constpow, exp, log, log1p, expm1, sin, cos, tan, asin, acos, atan, sinh, cosh,
tanh, asinh, acosh, atanh, fabs, hypot, sign, fmin, fmax, lt, le, eq, ne, not, if_else_zero.
fmin/fmax/sign/comparisons become Pyomo ``Expr_if`` (Pyomo has no min/max); with
``minmax="abs"`` fmin/fmax become ``(a + b -+ |a - b|) / 2`` instead (no if-then-else, which
CasADi's NL importer cannot read, at the price of cancellation when |a| >> |b|). Any other
operation raises :class:`~contactmp.errors.UnsupportedProgramError` naming it.

The way back: :class:`PyomoToSX` converts Pyomo expressions to CasADi SX, walking Pyomo's
expression DAG and converting each distinct node once (so a model made by ``translate`` comes back
as an SX graph of the same size); :func:`contactmp.solvers.nlp.pyomo_ipopt.pyomo_to_program` uses it to read a
whole Pyomo model into a Program. For a program and its twin ``program.to_pyomo()``,
:func:`program_variables`, :func:`program_x` and :func:`set_program_x` map the program's ``x``
vector to the model's variables and back.
"""
from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any, Literal

import casadi
import numpy as np
import pyomo.environ as pyo
from pyomo.core.expr.numeric_expr import DivisionExpression, NegationExpression, ProductExpression, SumExpression

from contactmp.errors import InputError, UnsupportedProgramError

__all__ = ["translate", "is_pure_symbol_column", "shared_expressions", "op_name", "PyomoToSX",
           "program_variables", "program_x", "set_program_x"]

_OP_NAMES: dict[int, str] = {
    getattr(casadi, n): n[3:].lower() for n in dir(casadi) if n.startswith("OP_")
}


def op_name(op: int) -> str:
    """The CasADi name of operation code ``op`` (``casadi.OP_ADD`` -> ``"add"``)."""
    return _OP_NAMES.get(op, f"<unknown op {op}>")


def is_pure_symbol_column(sx: Any) -> bool:
    """True if ``sx`` is a dense SX column (or empty) whose entries are distinct pure symbols.

    Such a column can be the input of a CasADi Function, and its i-th entry can stand for one
    Pyomo leaf.
    """
    if not isinstance(sx, casadi.SX):
        return False
    if sx.numel() == 0:
        return True
    if not sx.is_column() or not sx.is_dense() or not sx.is_valid_input():
        return False
    n = sx.numel()
    return len({sx[i].element_hash() for i in range(n)}) == n


def shared_expressions(block: Any, name: str = "cse") -> Callable[[Any], Any]:
    """A ``share`` hook for :func:`translate` that stores shared results in ``block.<name>[k]``.

    Creates (or reuses) an ``Expression`` indexed by ``Any`` named ``name`` on ``block`` and
    returns ``f(e) -> block.<name>[k]`` where ``k`` counts up. The NL writer writes each such
    named expression once, so deeply shared graphs stay linear in size.
    """
    comp = block.component(name)
    if comp is None:
        comp = pyo.Expression(pyo.Any)
        block.add_component(name, comp)
    elif not isinstance(comp, pyo.Expression):
        raise InputError("name", f"block has a component {name!r} that is not an Expression")
    counter = [len(comp)]

    def add(expr: Any) -> Any:
        k = counter[0]
        while k in comp:
            k += 1
        counter[0] = k + 1
        comp[k] = expr
        return comp[k]

    return add


class _Cond:
    """A 0/1 comparison result kept as a Pyomo relational (so if_else_zero can branch on it)."""

    __slots__ = ("rel", "negated", "_num")

    def __init__(self, rel: Any, negated: bool = False):
        self.rel = rel
        self.negated = negated
        self._num = None

    def number(self) -> Any:
        """The 0/1 numeric value of the condition, as ``Expr_if(rel, 1, 0)``."""
        if self._num is None:
            t, e = (0.0, 1.0) if self.negated else (1.0, 0.0)
            self._num = pyo.Expr_if(IF=self.rel, THEN=t, ELSE=e)
        return self._num


def _is_num(a: Any) -> bool:
    t = type(a)
    return t is float or t is int


def _fold(fn: Callable[..., Any], *args: float) -> float:
    with np.errstate(all="ignore"):
        return float(fn(*(np.float64(a) for a in args)))


def _sign(a: Any) -> Any:
    return pyo.Expr_if(IF=a > 0, THEN=1.0, ELSE=pyo.Expr_if(IF=a < 0, THEN=-1.0, ELSE=0.0))


# The four arithmetic operations and negation build their Pyomo node directly, one node per CasADi
# instruction with the same operands in the same order, instead of through Pyomo's operators:
# those simplify as they build, and some simplifications change the rounding of the operation
# they stand for (a sum of two sums is flattened: ((a1 + a2) + b1) + b2 for
# (a1 + a2) + (b1 + b2); a minus is distributed into b's terms; coefficients are folded:
# (c d) x for c (d x); x / 0.05 becomes 20 x). A difference a - b is the sum a + (-b), which
# :class:`PyomoToSX` reads back as a - b. So CasADi -> Pyomo -> CasADi gives back the same
# operations on the same numbers: a program and its Pyomo twin read back evaluate bit for bit
# alike, and IPOPT takes the same path on both. (Building nodes also skips Pyomo's operator
# dispatch and the copies of shared n-ary sums, the bulk of the time of ``translate``.)
def _py_add(a: Any, b: Any) -> Any:
    return SumExpression([a, b])


def _py_sub(a: Any, b: Any) -> Any:
    return SumExpression([a, NegationExpression((b,))])


def _py_mul(a: Any, b: Any) -> Any:
    return ProductExpression((a, b))


def _py_div(a: Any, b: Any) -> Any:
    return DivisionExpression((a, b))


def _py_neg(a: Any) -> Any:
    return NegationExpression((a,))


# code -> (pyomo builder, numpy fold); the builder only ever sees Pyomo operands
_UNARY: dict[int, tuple[Callable[[Any], Any], Callable[..., Any]]] = {
    casadi.OP_ASSIGN: (lambda a: a, lambda a: a),
    casadi.OP_NEG: (_py_neg, np.negative),
    casadi.OP_INV: (lambda a: 1.0 / a, lambda a: 1.0 / a),
    casadi.OP_TWICE: (lambda a: 2.0 * a, lambda a: 2.0 * a),
    casadi.OP_SQ: (lambda a: a**2, lambda a: a * a),
    casadi.OP_SQRT: (pyo.sqrt, np.sqrt),
    casadi.OP_EXP: (pyo.exp, np.exp),
    casadi.OP_LOG: (pyo.log, np.log),
    casadi.OP_LOG1P: (lambda a: pyo.log(1.0 + a), np.log1p),
    casadi.OP_EXPM1: (lambda a: pyo.exp(a) - 1.0, np.expm1),
    casadi.OP_SIN: (pyo.sin, np.sin),
    casadi.OP_COS: (pyo.cos, np.cos),
    casadi.OP_TAN: (pyo.tan, np.tan),
    casadi.OP_ASIN: (pyo.asin, np.arcsin),
    casadi.OP_ACOS: (pyo.acos, np.arccos),
    casadi.OP_ATAN: (pyo.atan, np.arctan),
    casadi.OP_SINH: (pyo.sinh, np.sinh),
    casadi.OP_COSH: (pyo.cosh, np.cosh),
    casadi.OP_TANH: (pyo.tanh, np.tanh),
    casadi.OP_ASINH: (pyo.asinh, np.arcsinh),
    casadi.OP_ACOSH: (pyo.acosh, np.arccosh),
    casadi.OP_ATANH: (pyo.atanh, np.arctanh),
    casadi.OP_FABS: (abs, np.abs),
    casadi.OP_SIGN: (_sign, np.sign),
}

_BINARY: dict[int, tuple[Callable[[Any, Any], Any], Callable[..., Any]]] = {
    casadi.OP_ADD: (_py_add, np.add),
    casadi.OP_SUB: (_py_sub, np.subtract),
    casadi.OP_MUL: (_py_mul, np.multiply),
    casadi.OP_DIV: (_py_div, np.divide),
    casadi.OP_POW: (lambda a, b: a**b, np.power),
    casadi.OP_CONSTPOW: (lambda a, b: a**b, np.power),
    casadi.OP_HYPOT: (lambda a, b: pyo.sqrt(a**2 + b**2), np.hypot),
}

_MINMAX = {
    "expr_if": {
        casadi.OP_FMIN: lambda a, b: pyo.Expr_if(IF=a <= b, THEN=a, ELSE=b),
        casadi.OP_FMAX: lambda a, b: pyo.Expr_if(IF=a >= b, THEN=a, ELSE=b),
    },
    "abs": {
        casadi.OP_FMIN: lambda a, b: 0.5 * (a + b - abs(a - b)),
        casadi.OP_FMAX: lambda a, b: 0.5 * (a + b + abs(a - b)),
    },
}
_MINMAX_FOLD = {casadi.OP_FMIN: np.fmin, casadi.OP_FMAX: np.fmax}

# comparisons: code -> (relational builder, negated, numpy fold)
_COMPARE: dict[int, tuple[Callable[[Any, Any], Any], bool, Callable[..., Any]]] = {
    casadi.OP_LT: (lambda a, b: a < b, False, np.less),
    casadi.OP_LE: (lambda a, b: a <= b, False, np.less_equal),
    casadi.OP_EQ: (lambda a, b: a == b, False, np.equal),
    casadi.OP_NE: (lambda a, b: a == b, True, np.not_equal),
}


def _num(v: Any) -> Any:
    """Numeric form of a work value (conditions become 0/1 expressions)."""
    return v.number() if type(v) is _Cond else v


def _as_leaf(leaf: Any) -> Any:
    return float(leaf) if isinstance(leaf, numbers.Real) else leaf  # bool is a Real too


def translate(exprs: casadi.SX, symbols: casadi.SX, leaves: Sequence[Any], *,
              share: Callable[[Any], Any] | None = None,
              minmax: Literal["expr_if", "abs"] = "expr_if") -> list[Any]:
    """Pyomo expressions for each entry of the column ``exprs`` (SX), where the i-th pure symbol in
    the column ``symbols`` stands for ``leaves[i]`` (a Pyomo VarData / ParamData / number).

    Entries of ``exprs`` are returned in column-major (``vec``) order, structural zeros as ``0.0``;
    an entry that does not depend on any Pyomo leaf comes back as a Python float (evaluated as
    CasADi would: 1/0 = inf, log(-1) = nan). ``share`` (optional) is applied to every
    intermediate result used more than once (see :func:`shared_expressions`); ``minmax`` selects
    the form of fmin/fmax (module docstring).

    Raises ``InputError`` for symbols that are not distinct pure symbols, a ``leaves`` of the
    wrong length, or ``exprs`` depending on a symbol not in ``symbols``; and
    ``UnsupportedProgramError`` naming the CasADi operation that Pyomo cannot express.
    """
    if isinstance(exprs, casadi.MX) or not isinstance(symbols, casadi.SX):
        raise InputError("exprs" if isinstance(exprs, casadi.MX) else "symbols",
                         "must be casadi.SX (MX graphs are not translated)")
    exprs = casadi.SX(exprs)
    if not is_pure_symbol_column(symbols):
        raise InputError("symbols", "must be a dense SX column of distinct pure symbols")
    n_sym = symbols.numel()
    if len(leaves) != n_sym:
        raise InputError("leaves", f"has {len(leaves)} entries, symbols has {n_sym}")
    if minmax not in _MINMAX:
        raise InputError("minmax", f"must be one of {sorted(_MINMAX)}, got {minmax!r}")
    minmax_ops = _MINMAX[minmax]
    if n_sym == 0:
        symbols = casadi.SX(0, 1)
    try:
        fun = casadi.Function("f", [symbols], [exprs])
    except RuntimeError as err:
        if "are free" in str(err):
            free = str(err).split("variables", 1)[1].split("are free", 1)[0].strip()
            raise InputError("exprs", f"depends on symbols not in `symbols`: {free}") from None
        raise
    leaf_values = [_as_leaf(leaf) for leaf in leaves]
    out: list[Any] = [0.0] * exprs.numel()
    out_index = exprs.sparsity().find()  # nonzero k of exprs -> column-major linear index

    n = fun.n_instructions()
    ops = [fun.instruction_id(k) for k in range(n)]
    ins = [fun.instruction_input(k) for k in range(n)]
    outs = [fun.instruction_output(k) for k in range(n)]
    shared = _shared_instructions(ops, ins, outs) if share is not None else None

    OP_CONST, OP_INPUT, OP_OUTPUT = casadi.OP_CONST, casadi.OP_INPUT, casadi.OP_OUTPUT
    OP_IF_ELSE_ZERO, OP_NOT = casadi.OP_IF_ELSE_ZERO, casadi.OP_NOT
    work: dict[int, Any] = {}
    for k in range(n):
        op, i, o = ops[k], ins[k], outs[k]
        if op == OP_INPUT:
            work[o[0]] = leaf_values[i[1]]
            continue
        if op == OP_OUTPUT:
            out[out_index[o[1]]] = _num(work[i[0]])
            continue
        if op == OP_CONST:
            work[o[0]] = float(fun.instruction_constant(k))
            continue
        if op in _BINARY:
            a, b = _num(work[i[0]]), _num(work[i[1]])
            build, fold = _BINARY[op]
            r = _fold(fold, a, b) if _is_num(a) and _is_num(b) else build(a, b)
        elif op in _UNARY:
            a = _num(work[i[0]])
            build, fold = _UNARY[op]
            r = _fold(fold, a) if _is_num(a) else build(a)
        elif op in minmax_ops:
            a, b = _num(work[i[0]]), _num(work[i[1]])
            r = _fold(_MINMAX_FOLD[op], a, b) if _is_num(a) and _is_num(b) else minmax_ops[op](a, b)
        elif op in _COMPARE:
            a, b = _num(work[i[0]]), _num(work[i[1]])
            build, negated, fold = _COMPARE[op]
            r = _fold(fold, a, b) if _is_num(a) and _is_num(b) else _Cond(build(a, b), negated)
        elif op == OP_NOT:
            c = work[i[0]]
            if type(c) is _Cond:
                r = _Cond(c.rel, not c.negated)
            elif _is_num(c):
                r = 0.0 if c != 0.0 else 1.0
            else:
                r = _Cond(c == 0.0)
        elif op == OP_IF_ELSE_ZERO:
            c, x = work[i[0]], _num(work[i[1]])
            if type(c) is _Cond:
                t, e = (0.0, x) if c.negated else (x, 0.0)
                r = pyo.Expr_if(IF=c.rel, THEN=t, ELSE=e)
            elif _is_num(c):
                r = x if c != 0.0 else 0.0
            else:
                r = pyo.Expr_if(IF=c == 0.0, THEN=0.0, ELSE=x)
        else:
            raise UnsupportedProgramError(
                f"CasADi operation '{op_name(op)}' (casadi.OP_{op_name(op).upper()}) has no Pyomo "
                "translation in contactmp.pyomo_bridge.translate"
            )
        if shared is not None and k in shared and not _is_num(r):
            r = share(_num(r))
        work[o[0]] = r
    return out


def _shared_instructions(ops: list[int], ins: list[list[int]], outs: list[list[int]]) -> set[int]:
    """Instructions whose result is read by two or more later instructions (excluding inputs and
    constants, which are leaves already)."""
    producer: dict[int, int] = {}
    uses: dict[int, int] = {}
    skip = (casadi.OP_INPUT, casadi.OP_CONST)
    for k, op in enumerate(ops):
        if op == casadi.OP_INPUT:
            producer[outs[k][0]] = -1
            continue
        args = ins[k] if op != casadi.OP_CONST else []
        for w in args:
            p = producer.get(w, -1)
            if p >= 0:
                uses[p] = uses.get(p, 0) + 1
        if op != casadi.OP_OUTPUT:
            producer[outs[k][0]] = -1 if op in skip else k
    return {k for k, c in uses.items() if c >= 2}


# ----------------------------------------------------------------------------------------------
# The way back: Pyomo expressions -> CasADi SX
# ----------------------------------------------------------------------------------------------
# Each scalar SX operation goes through casadi.SX.unary / SX.binary with SX operands: about 4 us,
# against about 25 us for ``a * b`` (whose SWIG overload resolution tries many argument types).
_SX_UNARY_OPS: dict[str, int] = {
    "sin": casadi.OP_SIN, "cos": casadi.OP_COS, "tan": casadi.OP_TAN, "asin": casadi.OP_ASIN,
    "acos": casadi.OP_ACOS, "atan": casadi.OP_ATAN, "sinh": casadi.OP_SINH,
    "cosh": casadi.OP_COSH, "tanh": casadi.OP_TANH, "asinh": casadi.OP_ASINH,
    "acosh": casadi.OP_ACOSH, "atanh": casadi.OP_ATANH, "exp": casadi.OP_EXP,
    "log": casadi.OP_LOG, "sqrt": casadi.OP_SQRT, "ceil": casadi.OP_CEIL,
    "floor": casadi.OP_FLOOR, "abs": casadi.OP_FABS,
}
_SX_UNARY_SLOW: dict[str, Callable[[Any], Any]] = {"log10": casadi.log10}

# node kinds of the walk (per Python class, cached)
_NUMBER, _CONST, _VAR, _NAMED, _OP = range(5)


class PyomoToSX:
    """Pyomo expressions -> CasADi SX: a walk that converts every distinct Pyomo node once.

    Calling the converter on an expression returns a Python float (the expression has no unfixed
    variable) or a scalar ``casadi.SX``. Unfixed variables become the SX symbols
    ``symbols[i]`` for ``variables[i]`` (in the order first met); fixed variables, mutable
    parameters and every sub-expression without variables become their current values; named
    expressions (``Expression`` components) are converted once and shared. Pyomo's expressions are
    walked as the DAG they are (a node shared by many constraints, as :func:`translate` emits
    them, is converted once), without recursion, so the SX graph has the size of the Pyomo DAG.
    Operations: sums (linear too), products, division, powers (``x**2`` as CasADi's ``sq``,
    other constant exponents as ``constpow``), negation, sin ... atanh, exp, log, log10, sqrt,
    ceil, floor, abs, ``Expr_if`` (``casadi.if_else``), min/max and relations (inside
    ``Expr_if``). Anything else (external functions, ...) raises
    :class:`~contactmp.errors.UnsupportedProgramError` naming it; so does a discrete variable.
    """

    def __init__(self) -> None:
        self.variables: list[Any] = []
        self.symbols: list[casadi.SX] = []
        self._index: dict[int, int] = {}
        self._memo: dict[int, casadi.SX] = {}
        self._alive: list[Any] = []  # keeps converted nodes alive, so their id() stays theirs
        self._consts: dict[float, casadi.SX] = {}
        self._kinds: dict[type, tuple[int, Any]] = {}
        self._builders = self._make_builders()
        from pyomo.common.numeric_types import native_numeric_types, value

        self._native, self._value = native_numeric_types, value

    # -- leaves ----------------------------------------------------------------------------------
    def symbol(self, var: Any) -> casadi.SX:
        """The SX symbol of the unfixed variable ``var`` (created on first use)."""
        i = self._index.get(id(var))
        if i is None:
            if not var.is_continuous():
                raise UnsupportedProgramError(
                    f"discrete variable {var.name}: an NLP takes continuous variables only")
            i = len(self.variables)
            self._index[id(var)] = i
            self.variables.append(var)
            self.symbols.append(casadi.SX.sym(f"v{i}"))
        return self.symbols[i]

    def const(self, v: float) -> casadi.SX:
        """The SX constant ``v`` (one object per value)."""
        c = self._consts.get(v)
        if c is None:
            c = self._consts[v] = casadi.SX(v)
        return c

    # -- dispatch --------------------------------------------------------------------------------
    def _make_builders(self) -> list[tuple[type, Callable[[Any, list[Any]], Any]]]:
        from pyomo.core.expr import numeric_expr as ne
        from pyomo.core.expr.relational_expr import (
            EqualityExpression, InequalityExpression, NotEqualExpression, RangedExpression,
        )

        B, U = casadi.SX.binary, casadi.SX.unary

        def chain(op: int) -> Callable[[Any, list[Any]], Any]:
            def build(node: Any, a: list[Any]) -> Any:
                acc = a[0]
                for b in a[1:]:
                    acc = B(op, acc, b)
                return acc

            return build

        memo, neg = self._memo, ne.NegationExpression

        def add(node: Any, a: list[Any]) -> Any:
            # a term -b (a NegationExpression) is subtracted: a - b, as CasADi wrote it
            args = node.args
            acc = a[0]
            for k in range(1, len(a)):
                t = args[k]
                if type(t) is neg:
                    acc = B(casadi.OP_SUB, acc, memo[id(t.args[0])])
                else:
                    acc = B(casadi.OP_ADD, acc, a[k])
            return acc

        def power(node: Any, a: list[Any]) -> Any:
            base, ex = a
            if ex.is_constant():
                e = float(ex)
                return U(casadi.OP_SQ, base) if e == 2.0 else B(casadi.OP_CONSTPOW, base, ex)
            return B(casadi.OP_POW, base, ex)

        def unary(node: Any, a: list[Any]) -> Any:
            name = node.getname()
            op = _SX_UNARY_OPS.get(name)
            if op is not None:
                return U(op, a[0])
            fn = _SX_UNARY_SLOW.get(name)
            if fn is None:
                raise UnsupportedProgramError(f"Pyomo function '{name}' has no CasADi translation")
            return fn(a[0])

        def inequality(node: Any, a: list[Any]) -> Any:
            return B(casadi.OP_LT if node.strict else casadi.OP_LE, a[0], a[1])

        def ranged(node: Any, a: list[Any]) -> Any:
            lo, e, hi = a
            s1, s2 = node.strict
            return B(casadi.OP_AND, B(casadi.OP_LT if s1 else casadi.OP_LE, lo, e),
                     B(casadi.OP_LT if s2 else casadi.OP_LE, e, hi))

        return [
            (ne.MonomialTermExpression, lambda n, a: B(casadi.OP_MUL, a[0], a[1])),
            (ne.SumExpression, add),
            (ne.ProductExpression, lambda n, a: B(casadi.OP_MUL, a[0], a[1])),
            (ne.DivisionExpression, lambda n, a: B(casadi.OP_DIV, a[0], a[1])),
            (ne.PowExpression, power),
            (ne.NegationExpression, lambda n, a: U(casadi.OP_NEG, a[0])),
            (ne.UnaryFunctionExpression, unary),  # AbsExpression included ("abs")
            (ne.Expr_ifExpression, lambda n, a: casadi.if_else(a[0], a[1], a[2])),
            (ne.MaxExpression, chain(casadi.OP_FMAX)),
            (ne.MinExpression, chain(casadi.OP_FMIN)),
            (InequalityExpression, inequality),
            (EqualityExpression, lambda n, a: B(casadi.OP_EQ, a[0], a[1])),
            (NotEqualExpression, lambda n, a: B(casadi.OP_NE, a[0], a[1])),
            (RangedExpression, ranged),
        ]

    def _kind(self, cls: type, node: Any) -> tuple[int, Any]:
        k = self._kinds.get(cls)
        if k is not None:
            return k
        if cls in self._native:
            k = (_NUMBER, None)
        elif not hasattr(node, "is_potentially_variable"):
            raise UnsupportedProgramError(f"{cls.__name__} {node!r} in a Pyomo expression")
        elif not node.is_potentially_variable():
            k = (_CONST, None)  # parameters, NPV expressions, numeric constants
        elif node.is_variable_type():
            k = (_VAR, None)
        elif not node.is_expression_type():
            raise UnsupportedProgramError(f"Pyomo object {cls.__name__} in an expression")
        elif node.is_named_expression_type():
            k = (_NAMED, None)
        else:
            for base, build in self._builders:
                if issubclass(cls, base):
                    k = (_OP, build)
                    break
            else:
                raise UnsupportedProgramError(
                    f"Pyomo expression {cls.__name__} has no CasADi translation")
        self._kinds[cls] = k
        return k

    # -- the walk --------------------------------------------------------------------------------
    def sx(self, expr: Any) -> casadi.SX:
        """``expr`` as a scalar SX (constants too)."""
        value, kinds = self._value, self._kinds
        memo = self._memo
        got = memo.get(id(expr))
        if got is not None:
            return got
        alive = self._alive
        stack = [expr]
        while stack:
            node = stack[-1]
            key = id(node)
            if key in memo:
                stack.pop()
                continue
            kb = kinds.get(type(node))
            kind, build = kb if kb is not None else self._kind(type(node), node)
            if kind == _NUMBER:
                out = self.const(float(node))
            elif kind == _CONST:
                out = self.const(float(value(node)))
            elif kind == _VAR:
                out = self.const(float(value(node))) if node.fixed else self.symbol(node)
            else:
                args = node.args
                pending = [a for a in args if id(a) not in memo]
                if pending:
                    stack.extend(pending)
                    continue
                if kind == _NAMED:
                    out = memo[id(args[0])]
                else:
                    out = build(node, [memo[id(a)] for a in args])
            stack.pop()
            memo[key] = out
            alive.append(node)
        return memo[id(expr)]

    def __call__(self, expr: Any) -> Any:
        out = self.sx(expr)
        return float(out) if out.is_constant() else out


# ----------------------------------------------------------------------------------------------
# A Program and its Pyomo twin (Program.to_pyomo): the program's x vector <-> the model's Vars
# ----------------------------------------------------------------------------------------------
def program_variables(model: Any, program: Any) -> list[Any]:
    """The Pyomo variable of each entry of ``program.x`` in its twin ``model``.

    ``model`` is a model made by :meth:`Program.to_pyomo <contactmp.program.Program.to_pyomo>`
    (its ``contactmp_names`` maps each Variables handle to its indexed ``Var``); entry ``j`` of
    the returned list is the ``VarData`` of ``x[j]``. Raises ``InputError`` when ``model`` is not
    a twin of ``program``.
    """
    names = getattr(model, "contactmp_names", None)
    if not isinstance(names, dict):
        raise InputError("model", "has no contactmp_names: it was not made by Program.to_pyomo()")
    out: list[Any] = []
    for h in program.variables:
        comp = model.component(names.get(h.name, "")) if h.name in names else None
        if comp is None or len(comp) != h.size:
            raise InputError("model", f"has no Var of size {h.size} for the variables '{h.name}' "
                             f"of program '{program.name}'")
        out.extend(comp[i] for i in range(h.size))
    return out


def program_x(model: Any, program: Any) -> np.ndarray:
    """The values of ``program.x`` held by the twin ``model`` (``None`` -> nan); read a Pyomo
    solve of the twin back into the program's order (``program.value(handle, x)``,
    ``program.residuals(x)``)."""
    return np.array([np.nan if v.value is None else float(v.value)
                     for v in program_variables(model, program)])


def set_program_x(model: Any, program: Any, x: Any) -> None:
    """Set the twin ``model``'s variables to the program vector ``x`` (an initial guess, say)."""
    xv = np.asarray(x, dtype=float).ravel()
    if xv.shape != (program.n_x,):
        raise InputError("x", f"must have length {program.n_x}, got shape {xv.shape}")
    for v, val in zip(program_variables(model, program), xv.tolist()):
        v.set_value(val, skip_validation=True)
