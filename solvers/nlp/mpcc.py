"""MPCC strategies as Program transformations: the complementarity pairs replaced by NLP rows.

A :class:`~contactmp.program.Program` ``min f s.t. bounds, lbg <= g <= ubg, 0 <= a _|_ b >= 0``
violates the constraint qualifications IPOPT relies on. A strategy of :data:`MPCC_STRATEGIES`
turns it into an NLP with one homotopy parameter ``t`` (sigma, rho or eps). :func:`relax` gives that
NLP as a new Program (same variables, parameters and rows, plus the parameter ``mpcc/<t>`` and the
strategy's rows ``mpcc/sign_a``, ``mpcc/sign_b``, ``mpcc/product``, ``mpcc/smoothing``), to inspect
(``.g``, ``.constraints``, ``.to_pyomo()``) or to solve with any NLP solver;
:func:`contactmp.solvers.nlp.solve.solve_program` solves the same transformation along the strategy's
homotopy. With ``sign_constraints=True`` the rows ``a >= 0``, ``b >= 0`` are added (except for a
side that is a variable whose lower bound is already ``>= 0``).

A :class:`Relaxation` also knows where each pair lives in its NLP (the variable or row of each side,
the pair's product or smoothing row), so that one IPOPT object of the NLP can also solve the NLP of
one *piece* of the MPCC by changing bounds only (:meth:`Relaxation.piece_bounds`): each side kept
in an interval (``= 0``, ``>= 0``, ``<= 0`` or free) and the strategy's own rows switched off. That
is the active-set polish of :func:`contactmp.solvers.nlp.solve.solve_program` and its branch step.

Sign conventions. With ``sign_constraints=True`` a pair means ``0 <= a_i _|_ b_i >= 0``. With
``sign_constraints=False`` (NOSBENCH's convention) a pair means the product row ``a_i b_i <= 0``
and the signs of ``a`` and ``b`` come from the variable bounds only; when both sides are
nonnegative by their bounds the two readings agree. Either way, a *piece* of a pair is a
quadrant: branch ``"a"`` is ``a_i <= 0 <= b_i`` and branch ``"b"`` is ``b_i <= 0 <= a_i`` (with sign
constraints: ``a_i = 0 <= b_i`` and ``b_i = 0 <= a_i``, the usual branches).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import casadi as ca
import numpy as np

from contactmp.errors import InputError, OptionError, did_you_mean
from contactmp.program import Program, scaled_violation

__all__ = ["MPCC_STRATEGIES", "MPCCStrategy", "PortfolioMember", "Relaxation", "relax", "relaxation", "fischer_burmeister",
           "copy_without_pairs", "PORTFOLIO", "ZERO", "NONNEG", "NONPOS", "FREE", "CONE_BOUND", "valid_cone_bound"]

INF = math.inf

#: the side intervals of a piece (see :meth:`Relaxation.piece_bounds`)
ZERO, NONNEG, NONPOS, FREE = (0.0, 0.0), (0.0, math.inf), (-math.inf, 0.0), (-math.inf, math.inf)


#: the default half-width of the box ``|w_i| <= CONE_BOUND`` on the cones' disk-form directions in
#: every relaxed NLP (:attr:`Relaxation.directions`, ``NLPOptions.cone_bound``): above the ``1`` that
#: the disk side implies, so the box never meets the disk, yet it bounds IPOPT's steps in ``w``
CONE_BOUND = 1.5


def valid_cone_bound(value: object) -> bool:
    """Whether ``value`` can be the half-width of the box on the disk-form directions: a finite
    number >= 1 (the disk side implies ``|w_i| <= 1``, so a narrower box would cut feasible points)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 1.0 <= value < math.inf


@dataclass(frozen=True)
class PortfolioMember:
    """One attempt of the ``"portfolio"`` strategy: the MPCC ``strategy`` with the
    :class:`~contactmp.solvers.nlp.solve.NLPOptions` ``options`` (an ``ipopt`` dict is merged into the
    caller's IPOPT options), given at most ``cpu_seconds`` of this process's CPU time (None: all the
    time left)."""

    strategy: str
    options: tuple[tuple[str, Any], ...] = ()
    cpu_seconds: float | None = None

    def describe(self) -> str:
        """``strategy`` with its options and cap, for messages and records."""
        opts = ", ".join(f"{k}={v}" for k, v in self.options)
        cap = f", at most {self.cpu_seconds:g} s CPU" if self.cpu_seconds is not None else ""
        return f"{self.strategy}{' (' + opts + ')' if opts else ''}{cap}"


@dataclass(frozen=True)
class MPCCStrategy:
    """One MPCC strategy. ``doc`` says what it does; the homotopy is ``start, start * factor, ...``
    until ``stop`` (the three fields name :class:`~contactmp.solvers.nlp.solve.NLPOptions` attributes;
    ``None`` for ``"direct"``: one NLP at ``t = 0``); ``param`` names ``t``; ``shrinks`` says
    whether the sequence falls; ``nested``: each NLP's feasible set contains the next one's (then a
    locally infeasible NLP ends the homotopy)."""

    name: str
    doc: str
    param: str
    start: str | None = None
    factor: str | None = None
    stop: str | None = None
    shrinks: bool = True
    nested: bool = True
    members: tuple["PortfolioMember", ...] = ()

    @property
    def is_portfolio(self) -> bool:
        """True for a portfolio: no transformation of its own, it runs its ``members`` in turn."""
        return bool(self.members)

    def homotopy(self, o: Any) -> list[float]:
        """The parameter values of the options ``o`` (an ``NLPOptions``), in order."""
        if self.start is None:
            return [0.0]
        start, factor, stop = (float(getattr(o, k)) for k in (self.start, self.factor, self.stop))
        vals = [start]
        while (vals[-1] > stop * (1 + 1e-9)) if self.shrinks else (vals[-1] < stop * (1 - 1e-9)):
            nxt = vals[-1] * factor
            vals.append(max(nxt, stop) if self.shrinks else min(nxt, stop))
        return vals


#: strategy name -> :class:`MPCCStrategy` (``.doc`` describes it)
MPCC_STRATEGIES: dict[str, MPCCStrategy] = {s.name: s for s in (
    MPCCStrategy("direct", "one NLP with a >= 0, b >= 0 and a_i b_i <= 0 as plain constraints "
                 "(rows mpcc/product = a_i b_i - t <= 0 at t = 0)", "sigma"),
    MPCCStrategy("scholtes", "Scholtes' relaxation a_i b_i <= sigma (rows mpcc/product = a_i b_i - sigma "
                 "<= 0), sigma = sigma0, sigma0 * sigma_factor, ... down to sigma_min (defaults 1, 0.1, "
                 "1e-12), each NLP warm-started at the previous answer", "sigma", "sigma0", "sigma_factor",
                 "sigma_min"),
    MPCCStrategy("elastic_l1", "the l1 penalty rho * sum_i a_i b_i added to the objective, rho = rho0, "
                 "rho0 * rho_factor, ... up to rho_max (defaults 1, 10, 1e8), warm-started", "rho", "rho0",
                 "rho_factor", "rho_max", shrinks=False),
    # {a_i b_i = eps^2} are disjoint for different eps: an infeasible NLP says nothing of the next
    MPCCStrategy("fischer_burmeister", "smoothing: per pair the row mpcc/smoothing = phi_eps(a_i, b_i) / eps "
                 "= 0 with phi_eps = a + b - sqrt(a^2 + b^2 + 2 eps^2) (solutions: a_i, b_i > 0, a_i b_i = "
                 "eps^2), eps = eps0, eps0 * eps_factor, ... down to eps_min (defaults 1, 0.1, 1e-10); "
                 "without sign constraints only the pairs whose sides are affine and nonnegative on the box "
                 "are smoothed, the others keep mpcc/product = a_i b_i - eps^2 <= 0", "eps", "eps0",
                 "eps_factor", "eps_min", nested=False),
    # every NLP has the same feasible set (s in [0, S_MAX]); only the weight 1 / sigma changes
    MPCCStrategy("scholtes_linf", "the l-infinity (elastic) mode of Scholtes' relaxation: one slack variable "
                 "mpcc/s in [0, 10] for all pairs, rows mpcc/product = a_i b_i - s <= 0, objective f + s / sigma, "
                 "sigma = sigma0, sigma0 * sigma_factor, ... down to sigma_min (the NOSBENCH paper's 'l_inf' "
                 "mode, nosnoc's ELASTIC_INF), warm-started", "sigma", "sigma0", "sigma_factor", "sigma_min"),
    MPCCStrategy("portfolio", "no transformation of its own: runs the members of PORTFOLIO in that order (the "
                 "order and CPU caps measured on the 66 shared NOSBENCH problems, benchmarks/mpcc_vs_nosnoc.py): "
                 "scholtes_linf with IPOPT's monotone barrier (at most 8 s CPU), scholtes with the LOQO barrier "
                 "oracle (at most 1 s CPU), then elastic_l1 with the time left; it returns the first answer that "
                 "is solved and not refuted by its B-stationarity certificate (else the best solved one, else the "
                 "attempt of least residual)", "sigma",
                 members=(PortfolioMember("scholtes_linf", (("ipopt", {"mu_strategy": "monotone"}),), 8.0),
                          PortfolioMember("scholtes", (("ipopt", {"mu_oracle": "loqo"}),), 1.0),
                          PortfolioMember("elastic_l1"))),
)}

#: the attempts of the ``"portfolio"`` strategy, in order
PORTFOLIO: tuple[PortfolioMember, ...] = MPCC_STRATEGIES["portfolio"].members

#: the upper bound of the slack ``mpcc/s`` of ``"scholtes_linf"`` (the NOSBENCH paper's value)
S_MAX = 10.0


def fischer_burmeister(a: Any, b: Any, eps: Any = 0.0) -> Any:
    """The smoothed Fischer-Burmeister function ``phi_eps(a, b) = a + b - sqrt(a^2 + b^2 + 2 eps^2)``.

    ``phi_eps(a, b) = 0`` exactly when ``a, b > 0`` and ``a b = eps^2`` (``eps != 0``), and, at
    ``eps = 0``, exactly when ``0 <= a _|_ b >= 0``. Elementwise on numbers, numpy arrays and
    CasADi expressions. Where ``a + b > 0`` it is evaluated as ``2 (a b - eps^2) / (a + b +
    sqrt(...))`` (the same number, without the cancellation of ``a + b - sqrt(...)``), so it keeps
    its relative accuracy when ``a b = eps^2`` is far below ``(a + b)`` times machine precision.
    """
    if any(isinstance(v, (ca.SX, ca.MX, ca.DM)) for v in (a, b, eps)):
        s, r = a + b, ca.sqrt(a * a + b * b + 2 * eps * eps)
        return ca.if_else(s > 0, 2 * (a * b - eps * eps) / ca.if_else(s > 0, s + r, 1.0), s - r)
    a, b, eps = (np.asarray(v, dtype=float) for v in (a, b, eps))
    s, r = a + b, np.sqrt(a * a + b * b + 2 * eps * eps)
    pos = s > 0
    out = np.where(pos, 2 * (a * b - eps * eps) / np.where(pos, s + r, 1.0), s - r)
    return float(out) if out.ndim == 0 else out


@dataclass
class Relaxation:
    """The transformation of ``source`` by ``strategy``: ``program`` is the NLP (its last parameter
    is the homotopy parameter ``t``), ``n_smoothed`` counts the pairs written as Fischer-Burmeister
    rows. :meth:`violation` measures the NLP's own bounds and rows with each smoothing row
    ``phi_eps(a_i, b_i) / eps`` replaced by ``a_i b_i - eps^2`` (same zero set, product units):
    ``phi_eps(a, 0) ~ -eps^2 / a`` tends to 0 as ``a`` grows, so a point far out on an axis meets
    ``|phi_eps| <= tol`` without being near the curve ``a b = eps^2``.

    Where the pairs live in the NLP (``-1``: nowhere): ``a_var[i]`` / ``b_var[i]`` the variable that
    side ``i`` is (if it is one), ``a_row[i]`` / ``b_row[i]`` its side row (``mpcc/sign_a``,
    ``mpcc/sign_b``, or the free rows ``mpcc/side_a``, ``mpcc/side_b`` made with ``side_rows``),
    ``pair_row[i]`` its product or smoothing row, ``slack`` the variable ``mpcc/s`` of
    ``"scholtes_linf"``, ``directions`` the disk-form directions ``w`` of the source's cones
    (:meth:`Program.add_cone_complementarity`; empty without sign constraints or with
    ``cone_bounds=False``), which :meth:`bounds` keeps in ``[-direction_bound, direction_bound]``:
    the disk side ``1 - |w|^2 >= 0`` (a sign row of the NLP) implies ``|w_i| <= 1``, so with
    ``direction_bound >= 1`` no relaxed feasible set changes, but IPOPT's fraction-to-the-boundary
    rule then keeps every step of ``w`` inside. With ``direction_bound > 1`` the box is never active
    at a point of the disk: at ``1`` it is, together with the disk row, wherever a contact slides
    along a tangent axis (``w = +-e_i``), a degenerate point for the interior point. Where a contact
    carries no force and does not slide (``p_n = 0`` or no friction, ``gamma = 0``), ``w`` enters
    no row but the disk side, whose linearization at ``w = 0`` is flat, and nothing else bounds
    IPOPT's steps in it. The NLP's variables are the source's followed by the strategy's own
    (``n_source`` of them come first), so ``x[:n_source]`` is a point of the source.
    """

    source: Program
    strategy: MPCCStrategy
    program: Program
    g_check: ca.SX
    n_smoothed: int = 0
    sign_constraints: bool = True
    a_var: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    b_var: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    a_row: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    b_row: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    pair_row: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    slack: int = -1
    directions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    direction_bound: float = CONE_BOUND
    _check: ca.Function | None = field(default=None, repr=False)

    @property
    def n_source(self) -> int:
        """The number of the source's variables (the first entries of the NLP's ``x``)."""
        return self.source.n_x

    def p(self, t: float) -> np.ndarray:
        """The parameter vector of :attr:`program`: the source's current values and ``t``."""
        return np.concatenate([self.source.p0, [float(t)]])

    def bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(lbx, ubx, lbg, ubg)`` of the NLP with the source's *current* bounds (a variable's
        bounds may have been changed since the relaxation was built) and the strategy's own."""
        prog, src = self.program, self.source
        n, m = src.n_x, src.n_g
        lbx, ubx = prog.lbx, prog.ubx
        lbg, ubg = prog.lbg, prog.ubg
        lbx[:n], ubx[:n] = src.lbx, src.ubx
        lbg[:m], ubg[:m] = src.lbg, src.ubg
        if self.sign_constraints and self.directions.size:  # |w_i| <= 1 is implied by 1 - |w|^2 >= 0
            j, r = self.directions, self.direction_bound
            lbx[j], ubx[j] = np.maximum(lbx[j], -r), np.minimum(ubx[j], r)
        return lbx, ubx, lbg, ubg

    def start(self, x_source: np.ndarray) -> np.ndarray:
        """An NLP start from a point of the source: ``x_source`` followed by the strategy's own
        variables' initial values (the slack ``mpcc/s`` starts at ``S_MAX``, where every pair's row
        ``a_i b_i <= s`` is loosest: on DSCSP this start takes 907 IPOPT iterations against 8,404
        from ``S_MAX / 2``, benchmarks/nosbench_findings.md)."""
        return np.concatenate([np.asarray(x_source, dtype=float).ravel(), self.program.x0[self.n_source:]])

    def piece_parameter(self, t: float) -> float:
        """The homotopy parameter at which a piece is solved: ``0`` for ``"elastic_l1"`` (so the
        objective is ``f``: on a quadrant piece ``a_i b_i`` may be negative and a penalty would reward
        it), ``t`` otherwise (the switched-off rows need a finite ``t``; the objective is ``f``)."""
        return 0.0 if self.strategy.name == "elastic_l1" else float(t)

    def piece_bounds(self, a_int: np.ndarray, b_int: np.ndarray,
                     bounds: tuple[np.ndarray, ...] | None = None) -> tuple[np.ndarray, ...] | None:
        """``(lbx, ubx, lbg, ubg)`` of the NLP of a piece of the MPCC: side ``a_i`` kept in the
        interval ``a_int[i] = (lo, hi)`` (:data:`ZERO`, :data:`NONNEG`, :data:`NONPOS`, :data:`FREE`),
        ``b_i`` in ``b_int[i]``, every product / smoothing row switched off (``-inf, inf``) and the
        slack ``mpcc/s`` fixed at 0. A side that is a variable gets the interval as bounds (intersected
        with its own), any other side on its side row. ``bounds`` defaults to :meth:`bounds`.

        Returns None when the piece cannot be written with bounds (a side with neither a variable nor
        a row, which :func:`relaxation` with ``side_rows=True`` never leaves) or is empty (an
        interval that misses a side's bounds)."""
        lbx, ubx, lbg, ubg = (b.copy() for b in (bounds if bounds is not None else self.bounds()))
        for var, row, ints in ((self.a_var, self.a_row, a_int), (self.b_var, self.b_row, b_int)):
            ints = np.asarray(ints, dtype=float).reshape(-1, 2)
            lo, hi = ints[:, 0], ints[:, 1]
            restricts = (lo > -INF) | (hi < INF)
            on_var = var >= 0
            on_row = ~on_var & (row >= 0)
            if (restricts & ~on_var & ~on_row).any():
                return None
            j = var[on_var]
            np.maximum.at(lbx, j, lo[on_var])
            np.minimum.at(ubx, j, hi[on_var])
            r = row[on_row]
            np.maximum.at(lbg, r, lo[on_row])
            np.minimum.at(ubg, r, hi[on_row])
        used = self.pair_row[self.pair_row >= 0]
        lbg[used], ubg[used] = -INF, INF
        if self.slack >= 0:
            lbx[self.slack] = ubx[self.slack] = 0.0
        if (lbx > ubx).any() or (lbg > ubg).any():
            return None
        return lbx, ubx, lbg, ubg

    def violation(self, x: np.ndarray, p: np.ndarray) -> float:
        """The scaled violation (as in :meth:`Program.residuals`) of the NLP's bounds and rows
        (smoothing rows in product units) at ``x`` and the parameters ``p`` (``t`` included)."""
        if not np.isfinite(x).all():
            return math.inf
        if self._check is None:
            self._check = ca.Function("relaxed_g", [self.program.x, self.program.p], [self.g_check])
        g = np.asarray(self._check(x, p), dtype=float).ravel()
        lbx, ubx, lbg, ubg = self.bounds()
        return max(scaled_violation(x, lbx, ubx), scaled_violation(g, lbg, ubg))


def copy_without_pairs(prog: Program, name: str, *, lbx: Any = None, ubx: Any = None,
                       init: Any = None) -> tuple[Program, ca.SX, ca.SX, ca.SX, ca.SX]:
    """A new Program ``name`` with the variables of ``prog`` (names, blocks; bounds and start from
    ``prog``, or from the full vectors ``lbx``, ``ubx``, ``init`` when given), its parameters, its
    rows and its stage groups (same positions), but no objective and no complementarity pairs; returned with ``f``, ``g``, ``a``, ``b``
    rewritten in the new program's symbols (for the caller's objective and pair replacements)."""
    new = Program(name)
    for v in prog.variables:
        new.add_variables(v.name, v.size, v.lb if lbx is None else lbx[v.index],
                          v.ub if ubx is None else ubx[v.index], v.init if init is None else init[v.index],
                          block=v.block)
    for h in prog.parameters:
        new.add_parameters(h.name, h.size, h.value, block=h.block)
    f, g, a, b = ca.substitute([prog.f, prog.g, prog.comp_a, prog.comp_b], [ca.vertcat(prog.x, prog.p)],
                               [ca.vertcat(new.x, new.p)])
    for c in prog.constraints:
        new.add_constraint(g[c.index], c.lb, c.ub, name=c.name, block=c.block)
    for group in prog.stage_groups:  # the same positions in the copy (checked on the source)
        new.add_stage_group(group, check=False)
    return new, f, g, a, b


def strategy_named(name: Any) -> MPCCStrategy:
    """The :class:`MPCCStrategy` called ``name``; :class:`OptionError` (with a hint) otherwise."""
    if name not in MPCC_STRATEGIES:
        raise OptionError(f"unknown MPCC strategy '{name}' (known: {', '.join(MPCC_STRATEGIES)})"
                          f"{did_you_mean(name, MPCC_STRATEGIES)}")
    return MPCC_STRATEGIES[name]


def relaxation(prog: Program, strategy: str, parameter: float = 0.0, *,
               sign_constraints: bool = True, side_rows: bool = False, cone_bounds: bool = True,
               cone_bound: float = CONE_BOUND) -> Relaxation:
    """The :class:`Relaxation` of ``prog`` by ``strategy`` with ``t = parameter`` (see :func:`relax`).

    ``cone_bounds`` (with ``sign_constraints``): :meth:`Relaxation.bounds` keeps every disk-form
    direction ``w`` of the program's cones in ``[-cone_bound, cone_bound]``
    (:attr:`Relaxation.directions`; ``cone_bound >= 1``, which the disk side implies).

    ``side_rows=True`` (what :func:`contactmp.solvers.nlp.solve.solve_program` uses) also gives every side
    that is not a variable a row when ``sign_constraints`` adds none: the free rows ``mpcc/side_a``,
    ``mpcc/side_b`` (``-inf <= a_i <= inf``; they change nothing until a piece puts bounds on them).
    """
    if not isinstance(prog, Program):
        raise InputError("prog", f"must be a contactmp Program, got {type(prog).__name__}")
    st = strategy_named(strategy)
    if st.is_portfolio:
        raise InputError("strategy", f"'{st.name}' is a portfolio of strategies "
                                     f"({', '.join(m.strategy for m in st.members)}), not one transformation; "
                                     "relax the program with one of them")
    if isinstance(parameter, bool) or not isinstance(parameter, (int, float)) or not math.isfinite(parameter):
        raise InputError("parameter", f"must be a finite number, got {parameter!r}")
    if not valid_cone_bound(cone_bound):
        raise InputError("cone_bound", f"must be a finite number >= 1 (the disk side implies |w_i| <= 1), "
                                       f"got {cone_bound!r}")
    if st.name == "fischer_burmeister" and prog.n_comp and parameter <= 0:
        raise InputError("parameter", f"eps must be > 0 for fischer_burmeister, got {parameter!r}")
    new, f, g, a, b = copy_without_pairs(prog, f"{prog.name}/{st.name}")
    t = new.add_parameters(f"mpcc/{st.param}", 1, float(parameter)).sym
    check = [g]  # the rows, with each smoothing row in product units
    n_smoothed = 0
    nc = prog.n_comp
    rows: dict[str, np.ndarray] = {k: np.full(nc, -1, dtype=int) for k in ("a", "b", "pair")}
    var = {"a": np.array([variable_index(prog, e) for e in ca.vertsplit(prog.comp_a)], dtype=int).reshape(nc),
           "b": np.array([variable_index(prog, e) for e in ca.vertsplit(prog.comp_b)], dtype=int).reshape(nc)}
    lbx = prog.lbx
    slack = -1

    def add_rows(name: str, expr: ca.SX, lo: float, hi: float, checked_as: ca.SX | None = None) -> np.ndarray:
        if not expr.shape[0]:
            return np.zeros(0, dtype=int)
        h = new.add_constraint(expr, lo, hi, name=f"mpcc/{name}")
        check.append(expr if checked_as is None else checked_as)
        return np.arange(h.index.start, h.index.stop)

    if nc:
        for side, src, side_new in (("a", prog.comp_a, a), ("b", prog.comp_b, b)):
            if sign_constraints:
                # a side that is a variable with lb >= 0 is already nonnegative by its bound
                keep = [i for i in range(nc) if not (var[side][i] >= 0 and lbx[var[side][i]] >= 0.0)]
                rows[side][keep] = add_rows(f"sign_{side}", side_new[keep, 0], 0.0, INF)
            elif side_rows:
                keep = [i for i in range(nc) if var[side][i] < 0]
                rows[side][keep] = add_rows(f"side_{side}", side_new[keep, 0], -INF, INF)
        prod = a * b
        if st.name in ("direct", "scholtes"):
            rows["pair"][:] = add_rows("product", prod - t, -INF, 0.0)
        elif st.name == "scholtes_linf":
            s = new.add_variables("mpcc/s", 1, 0.0, S_MAX, S_MAX)
            slack = s.index.start
            rows["pair"][:] = add_rows("product", prod - s.sym, -INF, 0.0)
            f = f + s.sym / t
        elif st.name == "elastic_l1":
            f = f + t * ca.sum1(prod)
        else:
            # phi_eps = 0 forces a, b > 0: without sign constraints only pairs whose signs the
            # bounds already fix are smoothed; the others keep the product form a_i b_i <= eps^2
            fb = (np.ones(nc, dtype=bool) if sign_constraints
                  else _nonneg_on_box(prog, prog.comp_a) & _nonneg_on_box(prog, prog.comp_b))
            smooth, rest = [int(i) for i in np.flatnonzero(fb)], [int(i) for i in np.flatnonzero(~fb)]
            # phi_eps(a, b) = eps phi_1(a / eps, b / eps): the row phi_eps / eps has unit size at every
            # eps, so IPOPT's tolerance on it is relative to eps (t >= eps_min > 0)
            rows["pair"][smooth] = add_rows("smoothing", fischer_burmeister(a[smooth, 0], b[smooth, 0], t) / t,
                                            0.0, 0.0, checked_as=prod[smooth, 0] - t * t)
            rows["pair"][rest] = add_rows("product", prod[rest, 0] - t * t, -INF, 0.0)
            n_smoothed = len(smooth)
    new.add_cost(f)
    g_check = ca.vertcat(*[e for e in check if e.shape[0]]) if new.n_g else ca.SX(0, 1)
    directions = np.array([j for c in prog.cones for j in range(c.w.index.start, c.w.index.stop)]
                          if cone_bounds and sign_constraints else [], dtype=int)
    return Relaxation(prog, st, new, g_check, n_smoothed, bool(sign_constraints), var["a"], var["b"], rows["a"],
                      rows["b"], rows["pair"], slack, directions, float(cone_bound))


def relax(prog: Program, strategy: str, parameter: float, *, sign_constraints: bool = True) -> Program:
    """The NLP of ``strategy`` (a name of :data:`MPCC_STRATEGIES`) for the MPCC ``prog``, at the
    homotopy parameter ``t = parameter`` (sigma, rho or eps; ignored by ``"direct"``), as a new
    :class:`~contactmp.program.Program` without complementarity pairs.

    Its variables, parameters and rows are ``prog``'s (same names, order and bounds), followed by
    the parameter ``mpcc/<sigma|rho|eps>`` (value ``parameter``; change it with
    ``relaxed["mpcc/sigma"].value = ...``) and the strategy's rows: ``mpcc/sign_a``, ``mpcc/sign_b``
    (``a >= 0``, ``b >= 0``, with ``sign_constraints``), ``mpcc/product`` (``a_i b_i - sigma <= 0``;
    ``a_i b_i - s <= 0`` for scholtes_linf, whose slack variable ``mpcc/s`` in ``[0, 10]`` follows
    the source's variables and adds ``s / sigma`` to the objective; ``a_i b_i - eps^2 <= 0`` for the
    unsmoothed pairs of fischer_burmeister) and ``mpcc/smoothing`` (``phi_eps(a_i, b_i) / eps = 0``);
    elastic_l1 adds ``rho sum_i a_i b_i`` to the objective.
    """
    return relaxation(prog, strategy, parameter, sign_constraints=sign_constraints).program


def variable_index(prog: Program, e: ca.SX) -> int:
    """The position of the scalar ``e`` in ``prog.x`` if it is one variable, else -1."""
    j = prog.variable_index(e)
    return -1 if j is None else int(j)


def _nonneg_on_box(prog: Program, side: ca.SX) -> np.ndarray:
    """Which rows of ``side`` are affine in ``x`` and ``>= 0`` on the whole box ``lbx <= x <= ubx``.

    For an affine row ``c + sum_j A_j x_j`` (``c``, ``A`` at the parameters ``p0``) the least
    value on the box is ``c + sum_j min(A_j lbx_j, A_j ubx_j)``; a row that is nonlinear in ``x``
    counts as not known to be nonnegative.
    """
    n = side.shape[0]
    affine = ~np.asarray(ca.which_depends(side, prog.x, 2, True), dtype=bool).reshape(n)
    vals = ca.Function("affine_part", [prog.x, prog.p], [side, ca.jacobian(side, prog.x)])
    with np.errstate(all="ignore"):
        c_dm, a_dm = vals(np.zeros(prog.n_x), prog.p0)
        low = np.asarray(c_dm, dtype=float).reshape(n).copy()
        rows, cols = (np.asarray(v, dtype=int) for v in a_dm.sparsity().get_triplet())
        coef = np.asarray(a_dm.nonzeros(), dtype=float)
        used = coef != 0.0
        rows, cols, coef = rows[used], cols[used], coef[used]
        np.add.at(low, rows, np.where(coef > 0, coef * prog.lbx[cols], coef * prog.ubx[cols]))
    return affine & (low >= 0.0)
