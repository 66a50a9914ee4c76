"""The one intermediate representation: :class:`Program`, and its reductions.

A Program is a mathematical program with complementarity constraints (MPCC) written with CasADi
SX symbols::

    minimize    f(x, p)
    subject to  lbx <= x <= ubx
                lbg <= g(x, p) <= ubg
                0 <= a(x, p)  _|_  b(x, p) >= 0      (elementwise: a >= 0, b >= 0, a_i b_i = 0)

``Program.add_*`` return typed handles (Drake's bindings); a solve result is queried with them
(``result.value(handle)``). Handles created with ``block="step3/contact"`` are grouped in
``program.blocks`` so that indices map back to physics.

Reductions (CVXPY's ``apply``/``invert``), each refusing with :class:`UnsupportedProgramError` and
the reason when the program does not fit:

* :meth:`Program.to_mcp` -- the square mixed complementarity problem ``MCP(F, [l, u])``;
* :meth:`Program.to_lcp` -- ``LCP(q, M)`` when that MCP is affine (free variables eliminated by a
  Schur complement);
* :meth:`Program.to_pyomo` -- a Pyomo ``ConcreteModel`` with ``pyomo.mpec`` complementarity
  components, through :func:`contactmp.pyomo_bridge.translate`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Union

import casadi as ca
import numpy as np

from contactmp.errors import InputError, UnsupportedProgramError

if TYPE_CHECKING:  # pragma: no cover
    import pyomo.environ
    import scipy.sparse

__all__ = [
    "Program",
    "Variables",
    "Parameters",
    "Constraint",
    "Complementarity",
    "Block",
    "MCPReduction",
    "LCPReduction",
]

INF = math.inf


# ----------------------------------------------------------------------------------------------
# Handles
# ----------------------------------------------------------------------------------------------
@dataclass(eq=False)
class Variables:
    """A vector of decision variables ``x[index]`` with bounds ``lb <= x <= ub``.

    ``sym`` is the CasADi SX column of the variables, ``index`` the slice into the program's
    stacked ``x``; ``lb``, ``ub``, ``init`` are float arrays of length ``size``.
    """

    name: str
    sym: ca.SX
    index: slice
    lb: np.ndarray
    ub: np.ndarray
    init: np.ndarray
    block: str | None = None

    @property
    def size(self) -> int:
        """Number of scalar variables."""
        return self.index.stop - self.index.start

    def __repr__(self) -> str:
        return f"Variables({self.name!r}, size={self.size}, block={self.block!r})"


@dataclass(eq=False)
class Parameters:
    """A vector of parameters ``p[index]`` (fixed data of a solve; ``value`` is settable)."""

    name: str
    sym: ca.SX
    index: slice
    _value: np.ndarray
    block: str | None = None

    @property
    def size(self) -> int:
        """Number of scalar parameters."""
        return self.index.stop - self.index.start

    @property
    def value(self) -> np.ndarray:
        """Current numeric value (a copy); assign to change it (broadcast, must be finite)."""
        return self._value.copy()

    @value.setter
    def value(self, v: Any) -> None:
        self._value = _float_vector(v, self.size, "value", allow_inf=False)

    def __repr__(self) -> str:
        return f"Parameters({self.name!r}, size={self.size}, block={self.block!r})"


@dataclass(eq=False)
class Constraint:
    """The rows ``lb <= expr <= ub`` (``g[index]`` of the program); equality when ``lb == ub``."""

    name: str
    expr: ca.SX
    lb: np.ndarray
    ub: np.ndarray
    index: slice
    block: str | None = None

    @property
    def size(self) -> int:
        """Number of scalar rows."""
        return self.index.stop - self.index.start

    def __repr__(self) -> str:
        return f"Constraint({self.name!r}, size={self.size}, block={self.block!r})"


@dataclass(eq=False)
class Complementarity:
    """The pairs ``0 <= a_i _|_ b_i >= 0`` (rows ``index`` of the program's stacked pairs)."""

    name: str
    a: ca.SX
    b: ca.SX
    index: slice
    block: str | None = None

    @property
    def size(self) -> int:
        """Number of scalar pairs."""
        return self.index.stop - self.index.start

    def __repr__(self) -> str:
        return f"Complementarity({self.name!r}, size={self.size}, block={self.block!r})"


Handle = Union[Variables, Parameters, Constraint, Complementarity]


@dataclass
class Block:
    """The handles created with one block name (for example ``"step3/contact"``)."""

    name: str
    variables: list[Variables] = field(default_factory=list)
    parameters: list[Parameters] = field(default_factory=list)
    constraints: list[Constraint] = field(default_factory=list)
    complementarities: list[Complementarity] = field(default_factory=list)

    def handles(self) -> list[Handle]:
        """Every handle of the block, in creation order within each kind."""
        return [*self.variables, *self.parameters, *self.constraints, *self.complementarities]


# ----------------------------------------------------------------------------------------------
# Input helpers
# ----------------------------------------------------------------------------------------------
def _float_vector(v: Any, n: int, fieldname: str, *, allow_inf: bool) -> np.ndarray:
    """``v`` broadcast to a float vector of length ``n`` (InputError naming ``fieldname``)."""
    try:
        arr = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(fieldname, f"cannot be read as float numbers ({exc})") from None
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    elif arr.ndim != 1 or arr.shape[0] != n:
        raise InputError(fieldname, f"must be a scalar or a vector of length {n}, got shape {arr.shape}")
    else:
        arr = arr.copy()
    if np.isnan(arr).any():
        raise InputError(fieldname, "contains NaN")
    if not allow_inf and not np.isfinite(arr).all():
        raise InputError(fieldname, "contains inf")
    return arr


def _check_name(name: Any, fieldname: str = "name") -> str:
    if not isinstance(name, str) or not name.strip():
        raise InputError(fieldname, f"must be a non-empty string, got {name!r}")
    return name


def _check_bounds(lb: np.ndarray, ub: np.ndarray) -> None:
    if (lb == INF).any():
        raise InputError("lb", "contains +inf (a lower bound must be < inf)")
    if (ub == -INF).any():
        raise InputError("ub", "contains -inf (an upper bound must be > -inf)")
    bad = np.flatnonzero(lb > ub)
    if bad.size:
        i = int(bad[0])
        raise InputError("lb", f"exceeds ub at index {i} ({lb[i]} > {ub[i]})")


def _is_free(lb: float, ub: float) -> bool:
    return lb == -INF and ub == INF


# ----------------------------------------------------------------------------------------------
# Program
# ----------------------------------------------------------------------------------------------
class Program:
    """An MPCC in CasADi SX: variables, parameters, objective, constraints, complementarity pairs.

    Build it with :meth:`add_variables`, :meth:`add_parameters`, :meth:`add_constraint`,
    :meth:`add_complementarity` and :meth:`add_cost`; every name is unique within the program.
    The stacked data (``x``, ``p``, ``f``, ``g``, ``comp_a``, ``comp_b`` as SX; ``lbx``, ``ubx``,
    ``x0``, ``p0``, ``lbg``, ``ubg`` as numpy) are read from the properties of the same names.
    """

    def __init__(self, name: str = "program") -> None:
        self.name = _check_name(name)
        self._variables: dict[str, Variables] = {}
        self._parameters: dict[str, Parameters] = {}
        self._constraints: dict[str, Constraint] = {}
        self._complementarities: dict[str, Complementarity] = {}
        self._names: set[str] = set()
        self.blocks: dict[str, Block] = {}
        self._cost: ca.SX = ca.SX(0.0)
        self._n_x = 0
        self._n_p = 0
        self._n_g = 0
        self._n_c = 0
        # element hash of each scalar symbol -> ("x" | "p", position)
        self._symbols: dict[int, tuple[str, int]] = {}
        self._cache: dict[str, Any] = {}

    # -- construction ---------------------------------------------------------------------------
    def add_variables(
        self,
        name: str,
        n: int,
        lb: Any = -INF,
        ub: Any = INF,
        init: Any = 0.0,
        block: str | None = None,
    ) -> Variables:
        """Add ``n`` variables ``lb <= x <= ub`` (scalars broadcast) starting at ``init``."""
        self._new_name(name)
        n = self._check_size(n)
        lbv = _float_vector(lb, n, "lb", allow_inf=True)
        ubv = _float_vector(ub, n, "ub", allow_inf=True)
        _check_bounds(lbv, ubv)
        initv = _float_vector(init, n, "init", allow_inf=False)
        sym = ca.SX.sym(name, n)
        h = Variables(name, sym, slice(self._n_x, self._n_x + n), lbv, ubv, initv, self._block(block))
        for i in range(n):
            self._symbols[sym[i].element_hash()] = ("x", self._n_x + i)
        self._n_x += n
        self._variables[name] = h
        self._names.add(name)
        if h.block is not None:
            self.blocks[h.block].variables.append(h)
        self._cache.clear()
        return h

    def add_parameters(self, name: str, n: int, value: Any, block: str | None = None) -> Parameters:
        """Add ``n`` parameters with the (finite) numeric ``value`` (scalars broadcast)."""
        self._new_name(name)
        n = self._check_size(n)
        val = _float_vector(value, n, "value", allow_inf=False)
        sym = ca.SX.sym(name, n)
        h = Parameters(name, sym, slice(self._n_p, self._n_p + n), val, self._block(block))
        for i in range(n):
            self._symbols[sym[i].element_hash()] = ("p", self._n_p + i)
        self._n_p += n
        self._parameters[name] = h
        self._names.add(name)
        if h.block is not None:
            self.blocks[h.block].parameters.append(h)
        self._cache.clear()
        return h

    def add_constraint(
        self, expr: Any, lb: Any, ub: Any, name: str | None = None, block: str | None = None
    ) -> Constraint:
        """Add the rows ``lb <= expr <= ub`` (vector ``expr``; scalar bounds broadcast)."""
        name = self._auto_name(name, "constraint")
        e = self._expr(expr, "expr")
        n = e.shape[0]
        lbv = _float_vector(lb, n, "lb", allow_inf=True)
        ubv = _float_vector(ub, n, "ub", allow_inf=True)
        _check_bounds(lbv, ubv)
        self._new_name(name)
        h = Constraint(name, e, lbv, ubv, slice(self._n_g, self._n_g + n), self._block(block))
        self._n_g += n
        self._constraints[name] = h
        self._names.add(name)
        if h.block is not None:
            self.blocks[h.block].constraints.append(h)
        self._cache.clear()
        return h

    def add_complementarity(
        self, a: Any, b: Any, name: str | None = None, block: str | None = None
    ) -> Complementarity:
        """Add the pairs ``0 <= a_i _|_ b_i >= 0``: ``a >= 0``, ``b >= 0``, ``a_i b_i = 0``."""
        name = self._auto_name(name, "complementarity")
        ea = self._expr(a, "a")
        eb = self._expr(b, "b")
        if ea.shape[0] != eb.shape[0]:
            raise InputError("b", f"has size {eb.shape[0]} but a has size {ea.shape[0]}")
        n = ea.shape[0]
        self._new_name(name)
        h = Complementarity(name, ea, eb, slice(self._n_c, self._n_c + n), self._block(block))
        self._n_c += n
        self._complementarities[name] = h
        self._names.add(name)
        if h.block is not None:
            self.blocks[h.block].complementarities.append(h)
        self._cache.clear()
        return h

    def add_cost(self, expr: Any) -> None:
        """Add the scalar ``expr`` to the objective (the objective is the sum of costs, minimized)."""
        e = self._expr(expr, "expr")
        if e.shape[0] != 1:
            raise InputError("expr", f"a cost must be scalar, got size {e.shape[0]}")
        self._cost = self._cost + e
        self._cache.clear()

    # -- read access ----------------------------------------------------------------------------
    @property
    def variables(self) -> tuple[Variables, ...]:
        """Variables handles in creation (= stacking) order."""
        return tuple(self._variables.values())

    @property
    def parameters(self) -> tuple[Parameters, ...]:
        """Parameters handles in stacking order."""
        return tuple(self._parameters.values())

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        """Constraint handles in stacking order of ``g``."""
        return tuple(self._constraints.values())

    @property
    def complementarities(self) -> tuple[Complementarity, ...]:
        """Complementarity handles in stacking order of ``comp_a`` / ``comp_b``."""
        return tuple(self._complementarities.values())

    def __getitem__(self, name: str) -> Handle:
        for d in (self._variables, self._parameters, self._constraints, self._complementarities):
            if name in d:
                return d[name]
        raise KeyError(name)

    @property
    def n_x(self) -> int:
        """Number of scalar variables."""
        return self._n_x

    @property
    def n_p(self) -> int:
        """Number of scalar parameters."""
        return self._n_p

    @property
    def n_g(self) -> int:
        """Number of scalar constraint rows."""
        return self._n_g

    @property
    def n_comp(self) -> int:
        """Number of scalar complementarity pairs."""
        return self._n_c

    @property
    def x(self) -> ca.SX:
        """All variables stacked (SX column ``n_x``)."""
        return self._stack("x", [h.sym for h in self._variables.values()])

    @property
    def p(self) -> ca.SX:
        """All parameters stacked (SX column ``n_p``)."""
        return self._stack("p", [h.sym for h in self._parameters.values()])

    @property
    def f(self) -> ca.SX:
        """The objective (sum of the costs; ``0`` when there is none)."""
        return self._cost

    @property
    def g(self) -> ca.SX:
        """All constraint expressions stacked (SX column ``n_g``)."""
        return self._stack("g", [h.expr for h in self._constraints.values()])

    @property
    def comp_a(self) -> ca.SX:
        """Left sides ``a`` of every pair, stacked."""
        return self._stack("a", [h.a for h in self._complementarities.values()])

    @property
    def comp_b(self) -> ca.SX:
        """Right sides ``b`` of every pair, stacked."""
        return self._stack("b", [h.b for h in self._complementarities.values()])

    @property
    def lbx(self) -> np.ndarray:
        """Lower bounds of ``x``."""
        return self._cat([h.lb for h in self._variables.values()])

    @property
    def ubx(self) -> np.ndarray:
        """Upper bounds of ``x``."""
        return self._cat([h.ub for h in self._variables.values()])

    @property
    def x0(self) -> np.ndarray:
        """Initial guess of ``x``."""
        return self._cat([h.init for h in self._variables.values()])

    @property
    def p0(self) -> np.ndarray:
        """Current values of ``p``."""
        return self._cat([h._value for h in self._parameters.values()])

    @property
    def lbg(self) -> np.ndarray:
        """Lower bounds of ``g``."""
        return self._cat([h.lb for h in self._constraints.values()])

    @property
    def ubg(self) -> np.ndarray:
        """Upper bounds of ``g``."""
        return self._cat([h.ub for h in self._constraints.values()])

    @property
    def has_objective(self) -> bool:
        """True when the objective depends on ``x`` (a constant objective is no objective)."""
        return self._n_x > 0 and bool(ca.depends_on(self._cost, self.x))

    def nlp(self) -> dict[str, ca.SX]:
        """The NLP without its complementarity pairs: ``{"x", "p", "f", "g"}`` (CasADi nlpsol form)."""
        return {"x": self.x, "p": self.p, "f": self.f, "g": self.g}

    # -- numeric evaluation ---------------------------------------------------------------------
    def evaluate(self, x: Any, p: Any = None) -> dict[str, Any]:
        """Numeric ``f``, ``g``, ``a``, ``b`` at ``(x, p)`` (``p`` defaults to ``p0``)."""
        fun = self._cache.get("eval")
        if fun is None:
            fun = ca.Function(
                "evaluate", [self.x, self.p], [self.f, self.g, self.comp_a, self.comp_b],
                ["x", "p"], ["f", "g", "a", "b"],
            )
            self._cache["eval"] = fun
        xv = _float_vector(x, self._n_x, "x", allow_inf=True)
        pv = self.p0 if p is None else _float_vector(p, self._n_p, "p", allow_inf=False)
        out = fun(xv, pv)
        return {
            "f": float(out[0]),
            "g": np.asarray(out[1], dtype=float).ravel(),
            "a": np.asarray(out[2], dtype=float).ravel(),
            "b": np.asarray(out[3], dtype=float).ravel(),
        }

    def residuals(self, x: Any, p: Any = None) -> dict[str, float]:
        """Independent residuals of a candidate ``x`` (any solver's answer is judged by these).

        * ``bound``: ``max_i max(lbx_i - x_i, x_i - ubx_i, 0) / max(1, |violated bound|)``;
        * ``constraint``: the same for ``lbg <= g(x, p) <= ubg``;
        * ``comp_min``: ``max_i |min(a_i, b_i)|`` (0 exactly when a, b >= 0 and a_i b_i = 0);
        * ``comp_prod``: ``max_i a_i b_i`` (the signed residual of NOSBENCH);
        * ``comp_sign``: ``max_i max(-a_i, -b_i, 0)`` (violation of ``a, b >= 0``);
        * ``objective``: ``f(x, p)``.

        Non-finite ``x`` gives ``inf`` everywhere.
        """
        xv = np.asarray(x, dtype=float).ravel()
        if xv.shape != (self._n_x,) or not np.isfinite(xv).all():
            return {k: INF for k in ("bound", "constraint", "comp_min", "comp_prod", "comp_sign", "objective")}
        ev = self.evaluate(xv, p)
        out = {
            "bound": _scaled_violation(xv, self.lbx, self.ubx),
            "constraint": _scaled_violation(ev["g"], self.lbg, self.ubg),
            "comp_min": float(np.max(np.abs(np.minimum(ev["a"], ev["b"])), initial=0.0)),
            "comp_prod": float(np.max(ev["a"] * ev["b"], initial=0.0)),
            "comp_sign": float(max(np.max(-ev["a"], initial=0.0), np.max(-ev["b"], initial=0.0), 0.0)),
            "objective": ev["f"],
        }
        for k, v in out.items():
            if not np.isfinite(v):
                out[k] = INF
        return out

    def variable_index(self, e: ca.SX) -> int | None:
        """The position in ``x`` of the scalar ``e`` if ``e`` is exactly one variable, else None."""
        if not (isinstance(e, ca.SX) and e.is_scalar() and e.is_symbolic()):
            return None
        kind, j = self._symbols.get(e.element_hash(), ("?", -1))
        return j if kind == "x" else None

    def value(self, handle: Variables, x: Any) -> np.ndarray:
        """``x[handle.index]`` for a Variables handle of this program."""
        self._own(handle, "handle")
        xv = np.asarray(x, dtype=float).ravel()
        if xv.shape[0] != self.n_x:
            raise InputError("x", f"has length {xv.shape[0]} but the program has {self.n_x} variables")
        return xv[handle.index].copy()

    # -- reductions -----------------------------------------------------------------------------
    def to_mcp(self) -> "MCPReduction":
        """The square mixed complementarity problem MCP(F, [l, u]) of this program.

        Find ``z`` in the box ``[l, u]`` with, for each i, ``F_i(z) >= 0`` if ``z_i = l_i``,
        ``F_i(z) <= 0`` if ``z_i = u_i`` and ``F_i(z) = 0`` in between. ``z`` is ``x`` followed
        by slack variables. The pairing:

        * a pair ``(a_i, b_i)`` whose ``a_i`` is exactly a variable with bounds ``[0, inf)`` not
          yet paired gives that variable ``F = b_i``; else, if ``b_i`` is such a variable, it gets
          ``F = a_i``; else a slack ``s >= 0`` is added with the equality ``a_i - s = 0`` and ``s``
          gets ``F = b_i`` (so general expressions on both sides are allowed);
        * free variables (``lb = -inf``, ``ub = inf``) are paired, in order, with the equality rows
          (``lbg = ubg``, residual ``g - lbg``), the slack equalities last; the counts must match;
        * fixed variables (``lb = ub``) get ``F = 0``.

        Refused (:class:`UnsupportedProgramError`, with the reason): a non-constant objective,
        inequality rows, bounded variables in no pair, a count mismatch.
        """
        if self.has_objective:
            raise UnsupportedProgramError(
                "an MCP has no objective, but this program's objective depends on x; solve it as an "
                "NLP/MPCC (contactmp.solvers.nlp.solve_program) instead"
            )
        x, p = self.x, self.p
        lbx, ubx, x0, p0 = self.lbx, self.ubx, self.x0, self.p0
        labels = self._x_labels()

        # Inequality rows are not part of an MCP.
        lbg, ubg = self.lbg, self.ubg
        eq_rows: list[int] = []
        for h in self._constraints.values():
            for i in range(h.size):
                lo, hi = h.lb[i], h.ub[i]
                if lo == hi:
                    eq_rows.append(h.index.start + i)
                elif not _is_free(lo, hi):
                    raise UnsupportedProgramError(
                        f"constraint '{h.name}'[{i}] is an inequality ({lo} <= g <= {hi}); an MCP takes "
                        "only equalities and complementarity pairs (write it as a pair with a slack)"
                    )
        g = self.g
        F: list[ca.SX | None] = [None] * self._n_x
        f_label: list[str] = [""] * self._n_x
        paired = np.zeros(self._n_x, dtype=bool)
        slack_a: list[ca.SX] = []
        slack_b: list[ca.SX] = []
        slack_tags: list[str] = []

        def pairable(e: ca.SX) -> int | None:
            j = self.variable_index(e)
            if j is None or paired[j] or lbx[j] != 0.0 or ubx[j] != INF:
                return None
            return j

        for h in self._complementarities.values():
            for i in range(h.size):
                ai, bi = h.a[i], h.b[i]
                tag = f"{h.name}[{i}]"
                j = pairable(ai)
                if j is not None:
                    F[j], f_label[j], paired[j] = bi, f"b of {tag}", True
                    continue
                j = pairable(bi)
                if j is not None:
                    F[j], f_label[j], paired[j] = ai, f"a of {tag}", True
                    continue
                slack_a.append(ai)
                slack_b.append(bi)
                slack_tags.append(tag)

        free = [j for j in range(self._n_x) if _is_free(lbx[j], ubx[j])]
        fixed = [j for j in range(self._n_x) if lbx[j] == ubx[j]]
        for j in range(self._n_x):
            if not (paired[j] or _is_free(lbx[j], ubx[j]) or lbx[j] == ubx[j]):
                raise UnsupportedProgramError(
                    f"variable {labels[j]} has bounds [{lbx[j]}, {ubx[j]}] but is in no complementarity "
                    "pair as a variable with bounds [0, inf); an MCP pairs every bounded variable "
                    "(write 0 <= x _|_ F >= 0, or make it free and add an equality)"
                )
        n_eq = len(eq_rows) + len(slack_a)
        if len(free) != n_eq:
            raise UnsupportedProgramError(
                f"the program has {len(free)} free variables but {n_eq} equality rows "
                f"({len(eq_rows)} from constraints, {len(slack_a)} from slacks of complementarity pairs "
                "whose sides are not variables with bounds [0, inf)); a square MCP pairs each free "
                "variable with one equality"
            )
        n_s = len(slack_a)
        s = ca.SX.sym("slack", n_s)
        eqs = [g[r] - lbg[r] for r in eq_rows] + [slack_a[k] - s[k] for k in range(n_s)]
        eq_labels = [self._g_label(r) for r in eq_rows] + [f"equality a - s of {t}" for t in slack_tags]
        for j, e, lab in zip(free, eqs, eq_labels):
            F[j], f_label[j] = e, lab
        for j in fixed:
            F[j], f_label[j] = ca.SX(0.0), "fixed (F = 0)"
        z = ca.vertcat(x, s)
        F_expr = ca.vertcat(*[e for e in F], *slack_b) if (self._n_x + n_s) else ca.SX(0, 1)
        lb = np.concatenate([lbx, np.zeros(n_s)])
        ub = np.concatenate([ubx, np.full(n_s, INF)])
        if n_s:
            a0 = np.asarray(ca.Function("a0", [x, p], [ca.vertcat(*slack_a)])(x0, p0), dtype=float).ravel()
            s0 = np.maximum(a0, 0.0)
        else:
            s0 = np.zeros(0)
        z0 = np.concatenate([x0, s0])
        pair_labels = [f"{labels[j]} _|_ {f_label[j]}" for j in range(self._n_x)] + [
            f"slack s = a of {slack_tags[k]} _|_ b of {slack_tags[k]}" for k in range(n_s)
        ]
        return MCPReduction(z=z, p=p, F_expr=F_expr, lb=lb, ub=ub, z0=z0, p0=p0, n_x=self._n_x,
                            labels=pair_labels)

    def to_lcp(self) -> "LCPReduction":
        """``LCP(q, M)`` of this program: ``z >= 0``, ``w = M z + q >= 0``, ``z^T w = 0``.

        Starting from :meth:`to_mcp` with ``F(z) = J z + c`` affine (``J = dF/dz`` must not depend
        on ``z``; it may depend on parameters, evaluated at their current values), fixed variables
        are substituted and the free variables ``z_F`` (paired with the equalities ``F_F = 0``) are
        eliminated by the Schur complement (``B``: the variables in ``[0, inf)``)::

            z_F = -J_FF^{-1} (J_FB z_B + c_F)
            M   = J_BB - J_BF J_FF^{-1} J_FB,      q = c_B - J_BF J_FF^{-1} c_F

        which needs ``J_FF`` nonsingular. ``invert(z_B)`` returns the full ``x``.
        """
        mcp = self.to_mcp()
        zs, F = mcp.z, mcp.F_expr
        J = ca.jacobian(F, zs)
        if ca.depends_on(J, zs):
            rows = [i for i in range(F.shape[0]) if ca.depends_on(J[i, :], zs)]
            raise UnsupportedProgramError(
                "F is not affine in the variables (an LCP needs F(z) = M z + q); nonlinear rows: "
                + ", ".join(mcp.labels[i] for i in rows[:5]) + (" ..." if len(rows) > 5 else "")
            )
        fun = ca.Function("lcp_data", [zs, self.p], [J, ca.substitute(F, zs, ca.DM.zeros(zs.shape[0]))])
        Jn, cn = fun(np.zeros(zs.shape[0]), mcp.p0)
        Jd = np.asarray(ca.DM(Jn).full(), dtype=float)
        c = np.asarray(cn, dtype=float).ravel()
        lb, ub = mcp.lb, mcp.ub
        B = np.flatnonzero((lb == 0.0) & (ub == INF))
        Fr = np.flatnonzero((lb == -INF) & (ub == INF))
        X = np.flatnonzero(lb == ub)
        other = np.setdiff1d(np.arange(lb.size), np.concatenate([B, Fr, X]))
        if other.size:  # to_mcp refuses these already; kept as a guard
            raise UnsupportedProgramError(f"{mcp.labels[int(other[0])]}: bounds are neither [0, inf), free nor fixed")
        if not (np.isfinite(Jd).all() and np.isfinite(c).all()):
            raise UnsupportedProgramError("M or q is not finite at the current parameter values")
        if B.size == 0:
            raise UnsupportedProgramError(
                "the program has no variable in [0, inf) paired with a complementarity: it is a linear "
                "system, not an LCP"
            )
        zfix = lb[X]
        c_eff = c + Jd[:, X] @ zfix
        if Fr.size:
            A = Jd[np.ix_(Fr, Fr)]
            sv = np.linalg.svd(A, compute_uv=False)
            if sv[0] == 0.0 or sv[-1] <= 1e-12 * sv[0]:
                rank = int(np.sum(sv > 1e-12 * max(sv[0], 1e-300)))
                raise UnsupportedProgramError(
                    f"the Jacobian of the equalities with respect to the {Fr.size} free variables is "
                    f"singular (rank {rank}); the mixed LCP cannot be reduced to an LCP by a Schur complement"
                )
            rhs = np.column_stack([Jd[np.ix_(Fr, B)], c_eff[Fr]])
            sol = np.linalg.solve(A, rhs)
            S_B, S_c = sol[:, :-1], sol[:, -1]  # z_F = -(S_B z_B + S_c)
            M = Jd[np.ix_(B, B)] - Jd[np.ix_(B, Fr)] @ S_B
            q = c_eff[B] - Jd[np.ix_(B, Fr)] @ S_c
        else:
            S_B = np.zeros((0, B.size))
            S_c = np.zeros(0)
            M = Jd[np.ix_(B, B)].copy()
            q = c_eff[B].copy()
        return LCPReduction(M=M, q=q, mcp=mcp, basis=B, free=Fr, fixed=X, fixed_values=zfix,
                            free_gain=S_B, free_offset=S_c, labels=[mcp.labels[i] for i in B])

    def to_pyomo(self) -> "pyomo.environ.ConcreteModel":
        """A Pyomo ``ConcreteModel`` of this program (``pyomo.mpec`` for the pairs).

        One indexed ``Var`` per Variables handle (bounds, initial values), one mutable indexed
        ``Param`` per Parameters handle, the ``Objective`` (minimize; omitted when constant), one
        indexed ``Constraint`` per Constraint handle and one indexed ``Complementarity``
        (``complements(a >= 0, b >= 0)``) per pair handle (a pair with a constant side ``c``
        becomes the row ``e >= 0`` if ``c = 0`` or ``e == 0`` if ``c > 0`` in the ConstraintList
        ``complementarity_constant_sides``). Component names are the handle names
        with characters other than letters, digits and ``_`` replaced by ``_``;
        ``model.contactmp_names`` maps handle name -> component name. Expressions are translated by
        :func:`contactmp.pyomo_bridge.translate`.
        """
        import pyomo.environ as pyo
        from pyomo.mpec import Complementarity as PyoComplementarity
        from pyomo.mpec import complements

        from contactmp.pyomo_bridge import translate

        model = pyo.ConcreteModel(name=self.name)
        names: dict[str, str] = {}

        def comp_name(name: str, handle: bool = True) -> str:
            base = re.sub(r"\W", "_", name)
            if not base or base[0].isdigit():
                base = "_" + base
            cand = base
            k = 1
            while hasattr(model, cand):
                cand = f"{base}_{k}"
                k += 1
            if handle:
                names[name] = cand
            return cand

        leaves: list[Any] = []
        for h in self._variables.values():
            lb, ub, init = h.lb, h.ub, h.init
            var = pyo.Var(
                range(h.size),
                bounds={i: (None if lb[i] == -INF else float(lb[i]), None if ub[i] == INF else float(ub[i]))
                        for i in range(h.size)},
                initialize={i: float(init[i]) for i in range(h.size)},
            )
            model.add_component(comp_name(h.name), var)
            leaves.extend(var[i] for i in range(h.size))
        for h in self._parameters.values():
            par = pyo.Param(range(h.size), initialize={i: float(v) for i, v in enumerate(h._value)},
                            mutable=True)
            model.add_component(comp_name(h.name), par)
            leaves.extend(par[i] for i in range(h.size))

        symbols = ca.vertcat(self.x, self.p)
        exprs = ca.vertcat(self.f, self.g, self.comp_a, self.comp_b)
        out = list(translate(exprs, symbols, leaves))
        if len(out) != exprs.shape[0]:
            raise RuntimeError(f"pyomo_bridge.translate returned {len(out)} expressions, expected {exprs.shape[0]}")
        f_py, rest = out[0], out[1:]
        g_py, rest = rest[: self._n_g], rest[self._n_g:]
        a_py, b_py = rest[: self._n_c], rest[self._n_c:]

        if self.has_objective:
            model.add_component(comp_name("objective", False), pyo.Objective(expr=f_py, sense=pyo.minimize))

        def is_number(e: Any) -> bool:
            return isinstance(e, (int, float, np.floating, np.integer))

        extra = pyo.ConstraintList()  # pairs with a constant side, rewritten as plain rows
        if any(is_number(e) for e in (*a_py, *b_py)):
            model.add_component(comp_name("complementarity_constant_sides", False), extra)

        def constraint_rule(h: Constraint) -> Callable[[Any, int], Any]:
            def rule(m: Any, i: int) -> Any:
                e = g_py[h.index.start + i]
                lo = None if h.lb[i] == -INF else float(h.lb[i])
                hi = None if h.ub[i] == INF else float(h.ub[i])
                if is_number(e):
                    ok = (lo is None or e >= lo - 1e-12) and (hi is None or e <= hi + 1e-12)
                    return pyo.Constraint.Feasible if ok else pyo.Constraint.Infeasible
                if lo is None and hi is None:
                    return pyo.Constraint.Skip
                if lo is not None and lo == hi:
                    return e == lo
                return (lo, e, hi)

            return rule

        def complementarity_rule(h: Complementarity) -> Callable[[Any, int], Any]:
            def crule(m: Any, i: int) -> Any:
                k = h.index.start + i
                a, b = a_py[k], b_py[k]
                if is_number(a) or is_number(b):
                    # A constant side: 0 <= c _|_ e >= 0 is e >= 0 (c = 0) or e == 0 (c > 0).
                    c, e = (a, b) if is_number(a) else (b, a)
                    if is_number(e):
                        ok = min(c, e) >= -1e-12 and abs(c * e) <= 1e-12
                        extra.add(pyo.Constraint.Feasible if ok else pyo.Constraint.Infeasible)
                    elif c < 0:
                        extra.add(pyo.Constraint.Infeasible)
                    elif c == 0:
                        extra.add(e >= 0)
                    else:
                        extra.add(e == 0)
                    return PyoComplementarity.Skip
                return complements(a >= 0, b >= 0)

            return crule

        # (Pyomo inspects a rule's signature: closures, not default arguments, carry the handle)
        for h in self._constraints.values():
            model.add_component(comp_name(h.name), pyo.Constraint(range(h.size), rule=constraint_rule(h)))
        for h in self._complementarities.values():
            model.add_component(comp_name(h.name), PyoComplementarity(range(h.size), rule=complementarity_rule(h)))

        model.contactmp_names = names
        return model

    # -- internals ------------------------------------------------------------------------------
    def _new_name(self, name: Any) -> None:
        _check_name(name)
        if name in self._names:
            raise InputError("name", f"'{name}' is already used in program '{self.name}'")

    def _auto_name(self, name: str | None, kind: str) -> str:
        if name is not None:
            return _check_name(name)
        k = len(self._constraints) + len(self._complementarities)
        while f"{kind}{k}" in self._names:
            k += 1
        return f"{kind}{k}"

    @staticmethod
    def _check_size(n: Any) -> int:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise InputError("n", f"must be a positive integer, got {n!r}")
        return int(n)

    def _block(self, block: str | None) -> str | None:
        if block is None:
            return None
        _check_name(block, "block")
        self.blocks.setdefault(block, Block(block))
        return block

    def _own(self, handle: Any, fieldname: str) -> None:
        if not isinstance(handle, Variables) or self._variables.get(handle.name) is not handle:
            raise InputError(fieldname, f"{handle!r} is not a Variables handle of program '{self.name}'")

    def _expr(self, expr: Any, fieldname: str) -> ca.SX:
        """``expr`` as an SX column whose symbols all belong to this program."""
        if isinstance(expr, (Variables, Parameters)):
            if self[expr.name] is not expr:
                raise InputError(fieldname, f"{expr!r} belongs to another program")
            return expr.sym
        if isinstance(expr, ca.MX):
            raise InputError(fieldname, "is a CasADi MX expression; a Program takes SX (build it with the handles' .sym)")
        if isinstance(expr, (list, tuple)) and any(isinstance(v, (ca.SX, Variables, Parameters)) for v in expr):
            e = ca.vertcat(*[self._expr(v, fieldname) for v in expr])
        elif isinstance(expr, ca.SX):
            e = expr
        else:
            try:
                arr = np.asarray(expr, dtype=np.float64)
            except (TypeError, ValueError):
                raise InputError(fieldname, f"must be a CasADi SX expression or numbers, got {type(expr).__name__}") from None
            if np.isnan(arr).any():
                raise InputError(fieldname, "contains NaN")
            e = ca.SX(ca.DM(np.atleast_1d(arr).reshape(-1, 1) if arr.ndim <= 1 else arr))
        if e.shape[0] != 1 and e.shape[1] != 1:
            raise InputError(fieldname, f"must be a vector, got a {e.shape[0]} x {e.shape[1]} matrix")
        if e.shape[0] == 1 and e.shape[1] != 1:
            e = e.T
        if e.shape[0] == 0:
            raise InputError(fieldname, "is empty")
        e = ca.densify(e)
        for s in ca.symvar(e):
            if s.element_hash() not in self._symbols:
                raise InputError(fieldname, f"depends on the symbol '{s}' which is not a variable or parameter of program '{self.name}'")
        return e

    def _stack(self, key: str, parts: list[ca.SX]) -> ca.SX:
        v = self._cache.get(key)
        if v is None:
            v = ca.vertcat(*parts) if parts else ca.SX(0, 1)
            self._cache[key] = v
        return v

    @staticmethod
    def _cat(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0)

    def _x_labels(self) -> list[str]:
        return [f"'{h.name}'[{i}]" for h in self._variables.values() for i in range(h.size)]

    def _g_label(self, row: int) -> str:
        for h in self._constraints.values():
            if h.index.start <= row < h.index.stop:
                return f"equality '{h.name}'[{row - h.index.start}]"
        return f"g[{row}]"  # pragma: no cover

    def __repr__(self) -> str:
        return (f"Program({self.name!r}: {self._n_x} variables, {self._n_p} parameters, {self._n_g} "
                f"constraint rows, {self._n_c} complementarity pairs, objective={'yes' if self.has_objective else 'no'})")


def _scaled_violation(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """``max_i max(lo_i - v_i, v_i - hi_i, 0) / max(1, |violated bound_i|)`` (0 when empty)."""
    if v.size == 0:
        return 0.0
    with np.errstate(invalid="ignore"):
        below = np.where(lo > -INF, (lo - v) / np.maximum(1.0, np.abs(np.where(lo > -INF, lo, 0.0))), 0.0)
        above = np.where(hi < INF, (v - hi) / np.maximum(1.0, np.abs(np.where(hi < INF, hi, 0.0))), 0.0)
    return float(max(np.max(below), np.max(above), 0.0))


# ----------------------------------------------------------------------------------------------
# Reductions
# ----------------------------------------------------------------------------------------------
class MCPReduction:
    """MCP(F, [lb, ub]) from :meth:`Program.to_mcp`: ``z = (x, slacks)``, ``F(z)`` paired with ``z``.

    ``F(z)`` and ``jac(z)`` evaluate at the parameter values the reduction was made with (``p0``)
    unless ``p`` is given; ``F_fun`` and ``jac_fun`` are the CasADi Functions of ``(z, p)``.
    ``labels[i]`` says what ``z_i`` and ``F_i`` are. ``invert(z)`` returns ``x``.
    """

    def __init__(self, *, z: ca.SX, p: ca.SX, F_expr: ca.SX, lb: np.ndarray, ub: np.ndarray,
                 z0: np.ndarray, p0: np.ndarray, n_x: int, labels: list[str]) -> None:
        self.z = z
        self.p = p
        self.F_expr = F_expr
        self.lb = lb
        self.ub = ub
        self.z0 = z0
        self.p0 = p0
        self.n_x = n_x
        self.labels = labels
        self.F_fun = ca.Function("mcp_F", [z, p], [F_expr], ["z", "p"], ["F"])
        self.jac_fun = ca.Function("mcp_jac", [z, p], [ca.jacobian(F_expr, z)], ["z", "p"], ["J"])

    @property
    def n(self) -> int:
        """Number of MCP variables (``n_x`` plus slacks)."""
        return int(self.lb.size)

    def F(self, z: Any, p: Any = None) -> np.ndarray:
        """``F(z)`` as a float vector."""
        return np.asarray(self.F_fun(np.asarray(z, float), self.p0 if p is None else p), dtype=float).ravel()

    def jac(self, z: Any, p: Any = None, sparse: bool = False) -> "np.ndarray | scipy.sparse.csc_matrix":
        """``dF/dz`` at ``z``: dense array, or ``scipy.sparse.csc_matrix`` with ``sparse=True``."""
        J = self.jac_fun(np.asarray(z, float), self.p0 if p is None else p)
        if sparse:
            import scipy.sparse as sp

            return sp.csc_matrix(J.sparse())
        return np.asarray(J.full(), dtype=float)

    def residual(self, z: Any, p: Any = None) -> float:
        """The natural-map residual ``||z - mid(lb, ub, z - F(z))||_inf`` (0 exactly at a solution)."""
        zv = np.asarray(z, dtype=float).ravel()
        if zv.shape != self.lb.shape or not np.isfinite(zv).all():
            return INF
        r = zv - np.clip(zv - self.F(zv, p), self.lb, self.ub)
        out = float(np.max(np.abs(r), initial=0.0))
        return out if np.isfinite(out) else INF

    def invert(self, z: Any) -> np.ndarray:
        """The program's ``x`` from an MCP solution ``z`` (slacks dropped)."""
        return np.asarray(z, dtype=float).ravel()[: self.n_x].copy()


class LCPReduction:
    """``LCP(q, M)`` from :meth:`Program.to_lcp`; ``invert(z)`` gives the program's full ``x``.

    ``basis`` are the MCP positions of the LCP variables (``labels`` name them); the free
    variables are recovered as ``z_F = -(free_gain z + free_offset)``, fixed ones are set.
    """

    def __init__(self, *, M: np.ndarray, q: np.ndarray, mcp: MCPReduction, basis: np.ndarray,
                 free: np.ndarray, fixed: np.ndarray, fixed_values: np.ndarray, free_gain: np.ndarray,
                 free_offset: np.ndarray, labels: list[str]) -> None:
        self.M = M
        self.q = q
        self.mcp = mcp
        self.basis = basis
        self.free = free
        self.fixed = fixed
        self.fixed_values = fixed_values
        self.free_gain = free_gain
        self.free_offset = free_offset
        self.labels = labels

    def invert(self, z: Any) -> np.ndarray:
        """The program's full ``x`` from an LCP solution ``z`` (free variables recovered)."""
        zb = np.asarray(z, dtype=float).ravel()
        if zb.shape != (self.basis.size,):
            raise InputError("z", f"must have length {self.basis.size}, got shape {zb.shape}")
        full = np.zeros(self.mcp.n)
        full[self.basis] = zb
        full[self.fixed] = self.fixed_values
        full[self.free] = -(self.free_gain @ zb + self.free_offset)
        return self.mcp.invert(full)

