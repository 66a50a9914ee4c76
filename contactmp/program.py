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
from contactmp.stages import StageGroup, StageTemplate
from contactmp.validate import float_vector

if TYPE_CHECKING:  # pragma: no cover
    import pyomo.environ
    import scipy.sparse

__all__ = [
    "Program",
    "PyomoStageGroup",
    "Variables",
    "Parameters",
    "Constraint",
    "Complementarity",
    "Block",
    "ConeComplementarity",
    "largest_residual",
]

INF = math.inf


# ----------------------------------------------------------------------------------------------
# Handles
# ----------------------------------------------------------------------------------------------
class _Handle:
    """What every handle has: ``name``, ``index`` (a slice into the program's stacked vector), ``block``."""

    name: str
    index: slice
    block: str | None

    @property
    def size(self) -> int:
        """Number of scalar entries (variables, parameters, rows or pairs)."""
        return self.index.stop - self.index.start

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, size={self.size}, block={self.block!r})"


@dataclass(eq=False, repr=False)
class Variables(_Handle):
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


@dataclass(eq=False, repr=False)
class Parameters(_Handle):
    """A vector of parameters ``p[index]`` (fixed data of a solve; ``value`` is settable)."""

    name: str
    sym: ca.SX
    index: slice
    _value: np.ndarray
    block: str | None = None

    @property
    def value(self) -> np.ndarray:
        """Current numeric value (a copy); assign to change it (broadcast, must be finite)."""
        return self._value.copy()

    @value.setter
    def value(self, v: Any) -> None:
        self._value = float_vector(v, self.size, "value", allow_inf=False)


@dataclass(eq=False, repr=False)
class Constraint(_Handle):
    """The rows ``lb <= expr <= ub`` (``g[index]`` of the program); equality when ``lb == ub``."""

    name: str
    expr: ca.SX
    lb: np.ndarray
    ub: np.ndarray
    index: slice
    block: str | None = None


@dataclass(eq=False, repr=False)
class Complementarity(_Handle):
    """The pairs ``0 <= a_i _|_ b_i >= 0`` (rows ``index`` of the program's stacked pairs)."""

    name: str
    a: ca.SX
    b: ca.SX
    index: slice
    block: str | None = None


@dataclass(eq=False)
class ConeComplementarity:
    """Coulomb's law at ``n`` contacts as one construct (Trinkle et al. (10), (13), (31)).

    ``r = (r_n, r_t[, r_o])`` are the contact impulses (program variables), ``u = (u_n, u_t[, u_o])``
    the contact velocities they answer to (affine or not), ``mu`` the friction coefficients; planar
    contacts have no ``o`` entry (``dim = 2``). The construct means, per contact,

    * Coulomb (``associated=False``): ``r in K_mu``, ``u_n >= 0``, ``r_n u_n = 0`` and the friction
      opposes the slip with maximal dissipation -- fc3d with De Saxce's modified velocity;
    * associated (``associated=True``): ``K_mu contains r _|_ u in K_mu*`` (the KKT conditions of a
      convex cone QP; Drumwright's compliant step).

    The program holds it in the smooth *disk form* (what NLP solvers see): ``gamma = ||u_T||`` and
    ``w`` (``r_T = mu r_n w``) are variables, with the pair ``normal`` ``0 <= r_n _|_ u_n (- mu gamma
    when associated) >= 0``, the rows ``friction`` ``r_T - mu r_n w = 0`` and ``direction``
    ``u_T + gamma w = 0``, and the pair ``disk`` ``0 <= 1 - |w|^2 _|_ gamma >= 0``. The construct
    itself is what :func:`contactmp.reductions.to_cone_problem` reads, so a step with cones reduces
    to fc3d without recognizing physics in the rows.
    """

    name: str
    r: tuple[ca.SX, ...]
    u: tuple[ca.SX, ...]
    mu: ca.DM
    associated: bool
    w: Variables
    gamma: Variables
    normal: Complementarity
    friction: Constraint
    direction: Constraint
    disk: Complementarity
    block: str | None = None

    @property
    def size(self) -> int:
        """Number of contacts ``n``."""
        return int(self.r[0].shape[0])

    @property
    def dim(self) -> int:
        """Entries per contact: 3 ``(n, t, o)``, or 2 ``(n, t)`` for planar contacts."""
        return len(self.r)

    def __repr__(self) -> str:
        return f"ConeComplementarity({self.name!r}, size={self.size}, dim={self.dim}, associated={self.associated})"


Handle = Union[Variables, Parameters, Constraint, Complementarity]


@dataclass(eq=False)
class PyomoStageGroup:
    """A :class:`~contactmp.stages.StageGroup` of a program as the components of its Pyomo twin
    (:meth:`Program.to_pyomo`, ``model.contactmp_stage_groups``).

    The group says ``g[g_index[k]](x, p) = g_T(x[x_index[k]], p[p_index[k]])`` for every stage
    ``k`` in the program's positions; the twin has no positions, so each is replaced by its Pyomo
    component data: ``x[k][i]`` is the ``VarData`` of ``x[x_index[k, i]]``, ``p[k][i]`` the
    ``ParamData`` of ``p[p_index[k, i]]`` and ``g[k][r]`` the ``ConstraintData`` of row
    ``g_index[k, r]`` (None where ``to_pyomo`` wrote no row: a row without variables or bounds).
    ``template`` is the group's :class:`~contactmp.stages.StageTemplate` itself. A program read
    back from the model (:func:`contactmp.solvers.nlp.pyomo_ipopt.pyomo_to_program`) finds its own
    positions of these components and declares the group again, so that
    :func:`~contactmp.solvers.nlp.solve.solve_program` builds IPOPT's derivatives the same way for the
    twin as for the program (``NLPOptions.derivatives``). ``model.clone()`` copies the component
    references and shares the template.
    """

    template: StageTemplate
    x: list[list[Any]]
    p: list[list[Any]]
    g: list[list[Any]]

    def __deepcopy__(self, memo: dict[int, Any]) -> "PyomoStageGroup":
        from copy import deepcopy

        return PyomoStageGroup(self.template, deepcopy(self.x, memo), deepcopy(self.p, memo), deepcopy(self.g, memo))


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


def is_free(lb: float, ub: float) -> bool:
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
        self._cones: dict[str, ConeComplementarity] = {}
        self._stage_groups: list[StageGroup] = []
        self._lifted: list[tuple[Variables, ca.SX]] = []
        #: when True, :meth:`add_complementarity` gives every side entry that is not a variable a
        #: variable of its own (see there)
        self.lift_sides = False
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
        lbv = float_vector(lb, n, "lb", allow_inf=True)
        ubv = float_vector(ub, n, "ub", allow_inf=True)
        _check_bounds(lbv, ubv)
        initv = float_vector(init, n, "init", allow_inf=False)
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
        val = float_vector(value, n, "value", allow_inf=False)
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
        lbv = float_vector(lb, n, "lb", allow_inf=True)
        ubv = float_vector(ub, n, "ub", allow_inf=True)
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
        """Add the pairs ``0 <= a_i _|_ b_i >= 0``: ``a >= 0``, ``b >= 0``, ``a_i b_i = 0``.

        With :attr:`lift_sides` set, each entry of ``a`` or ``b`` that is not a single variable is
        *lifted*: a new variable ``s >= 0`` (``{name}/a`` or ``{name}/b``, one per lifted entry)
        with the row ``s = a_i`` (``{name}/lift_a``, ``{name}/lift_b``) takes its place in the
        pair, so every pair is between variables (an MPCC strategy's rows and penalties are then
        products of variables, and the expressions stay in rows; :meth:`guess_lifted` sets the new
        variables from a point)."""
        name = self._auto_name(name, "complementarity")
        ea = self._expr(a, "a")
        eb = self._expr(b, "b")
        if ea.shape[0] != eb.shape[0]:
            raise InputError("b", f"has size {eb.shape[0]} but a has size {ea.shape[0]}")
        n = ea.shape[0]
        self._new_name(name)
        if self.lift_sides:
            ea, eb = self._lift(ea, name, "a", block), self._lift(eb, name, "b", block)
        h = Complementarity(name, ea, eb, slice(self._n_c, self._n_c + n), self._block(block))
        self._n_c += n
        self._complementarities[name] = h
        self._names.add(name)
        if h.block is not None:
            self.blocks[h.block].complementarities.append(h)
        self._cache.clear()
        return h

    def _lift(self, side: ca.SX, name: str, which: str, block: str | None) -> ca.SX:
        """``side`` with its entries that are not variables replaced by new variables ``>= 0``
        bound to them by equality rows (:meth:`add_complementarity` with :attr:`lift_sides`)."""
        entries = ca.vertsplit(side)
        lift = [i for i, e in enumerate(entries) if self.variable_index(e) is None]
        if not lift:
            return side
        expr = ca.vertcat(*[entries[i] for i in lift])
        var = self.add_variables(f"{name}/{which}", len(lift), lb=0.0, block=block)
        self.add_constraint(var.sym - expr, 0.0, 0.0, name=f"{name}/lift_{which}", block=block)
        self._lifted.append((var, expr))
        for j, i in enumerate(lift):
            entries[i] = var.sym[j]
        return ca.vertcat(*entries)

    def guess_lifted(self, x: Any) -> np.ndarray:
        """``x`` with every lifted side variable (:meth:`add_complementarity` with
        :attr:`lift_sides`) set to its side's value at ``x`` (at the parameters' values), raised to
        its lower bound 0 where the side is negative."""
        xv = float_vector(x, self._n_x, "x", allow_inf=False).copy()
        if not self._lifted:
            return xv
        fn = self._cache.get("lifted_sides")
        if fn is None:
            fn = self._cache["lifted_sides"] = ca.Function("lifted", [self.x, self.p],
                                                           [ca.vertcat(*[e for _, e in self._lifted])])
        vals = np.asarray(fn(xv, self.p0), dtype=float).ravel()
        j = 0
        for var, _ in self._lifted:
            xv[var.index] = np.maximum(vals[j:j + var.size], 0.0)
            j += var.size
        return xv

    def add_cone_complementarity(
        self, r: tuple[Any, ...], u: tuple[Any, ...], mu: Any, *, associated: bool = False,
        name: str | None = None, block: str | None = None,
    ) -> ConeComplementarity:
        """Add Coulomb's law ``r_i in K_mu_i`` against the contact velocities ``u`` (see
        :class:`ConeComplementarity`): ``r = (r_n, r_t)`` or ``(r_n, r_t, r_o)`` (each ``n``
        entries, variables of this program), ``u`` the same layout, ``mu`` (``n``, >= 0).
        Creates the variables ``{name}/w`` (``(dim - 1) n``) and ``{name}/gamma`` (``n``, >= 0)
        and the rows and pairs of the disk form, in the order normal pair, friction, direction,
        disk pair."""
        name = self._auto_name(name, "cone")
        if not isinstance(r, (tuple, list)) or len(r) not in (2, 3):
            raise InputError("r", "must be (r_n, r_t) or (r_n, r_t, r_o)")
        if not isinstance(u, (tuple, list)) or len(u) != len(r):
            raise InputError("u", f"must have {len(r)} parts like r")
        rs = tuple(self._expr(e, "r") for e in r)
        us = tuple(self._expr(e, "u") for e in u)
        n = rs[0].shape[0]
        if any(e.shape[0] != n for e in (*rs, *us)):
            raise InputError("u", f"every part of r and u must have {n} entries")
        for e in rs:
            if any(self.variable_index(e[i]) is None for i in range(n)):
                raise InputError("r", "must be variables of this program")
        mu_ = mu if isinstance(mu, (ca.SX, ca.DM)) else ca.DM(float_vector(mu, n, "mu", allow_inf=False))
        if isinstance(mu_, ca.DM) and (np.asarray(mu_).ravel() < 0).any():
            raise InputError("mu", "friction coefficients must be >= 0")
        if not isinstance(associated, (bool, np.bool_)):
            raise InputError("associated", f"must be True or False, got {associated!r}")
        blk = self._block(block)
        m = len(rs) - 1
        w = self.add_variables(f"{name}/w", m * n, block=blk)
        gamma = self.add_variables(f"{name}/gamma", n, lb=0.0, block=blk)
        g = gamma.sym
        normal = self.add_complementarity(rs[0], us[0] - mu_ * g if associated else us[0],
                                          name=f"{name}/non_penetration", block=blk)
        ws = [w.sym[i * n:(i + 1) * n] for i in range(m)]
        mr = mu_ * rs[0]
        friction = self.add_constraint(ca.vertcat(*[rs[1 + i] - mr * ws[i] for i in range(m)]), 0.0, 0.0,
                                       name=f"{name}/friction", block=blk)
        direction = self.add_constraint(ca.vertcat(*[us[1 + i] + g * ws[i] for i in range(m)]), 0.0, 0.0,
                                        name=f"{name}/direction", block=blk)
        slack = 1.0 - ws[0] * ws[0]
        for wi in ws[1:]:
            slack = slack - wi * wi
        disk = self.add_complementarity(slack, g, name=f"{name}/disk_perp_gamma", block=blk)
        h = ConeComplementarity(name, rs, us, mu_, bool(associated), w, gamma, normal, friction, direction,
                                disk, blk)
        self._cones[name] = h
        return h

    def guess_cones(self, x: Any) -> np.ndarray:
        """``x`` with every cone's disk-form variables set from the motion in ``x``: ``gamma =
        ||u_T(x)||`` and ``w = -u_T / ||u_T||`` (0 where ``u_T = 0``), so that the rows
        ``u_T + gamma w = 0`` hold and do not start at their degenerate point ``gamma = w = 0``."""
        xv = float_vector(x, self._n_x, "x", allow_inf=False).copy()
        if not self._cones:
            return xv
        m = max(c.dim - 1 for c in self._cones.values())
        fun = self._cache.get("cone_guess")
        if fun is None:
            rows = [ca.horzcat(*c.u[1:], ca.SX.zeros(c.size, m + 1 - c.dim)) for c in self._cones.values()]
            fun = self._cache["cone_guess"] = ca.Function("cone_guess", [self.x, self.p], [ca.vertcat(*rows)])
        ut = np.asarray(fun(xv, self.p0), dtype=float).reshape(-1, m)
        j = 0
        for c in self._cones.values():
            u = ut[j:j + c.size, :c.dim - 1]
            j += c.size
            gamma = np.linalg.norm(u, axis=1)
            inv = np.where(gamma > 0, 1.0 / np.where(gamma > 0, gamma, 1.0), 0.0)
            xv[c.gamma.index] = gamma
            xv[c.w.index] = (-u * inv[:, None]).T.ravel()
        return xv

    @property
    def cones(self) -> tuple[ConeComplementarity, ...]:
        """The :class:`ConeComplementarity` constructs, in creation order."""
        return tuple(self._cones.values())

    def add_cost(self, expr: Any) -> None:
        """Add the scalar ``expr`` to the objective (the objective is the sum of costs, minimized)."""
        e = self._expr(expr, "expr")
        if e.shape[0] != 1:
            raise InputError("expr", f"a cost must be scalar, got size {e.shape[0]}")
        self._cost = self._cost + e
        self._cache.clear()

    def add_stage_group(self, group: StageGroup, check: bool = True) -> None:
        """Declare that rows of this program repeat one :class:`~contactmp.stages.StageTemplate`
        (:mod:`contactmp.stages`); with ``check`` the identity is verified first
        (:meth:`StageGroup.check`, InputError if it fails). Stage groups change no row, bound or
        answer: they let a solver build the derivatives of one stage instead of all of them."""
        if not isinstance(group, StageGroup):
            raise InputError("group", f"must be a contactmp.stages.StageGroup, got {type(group).__name__}")
        used = {int(i) for grp in self._stage_groups for i in grp.g_index.ravel()}
        if used.intersection(int(i) for i in group.g_index.ravel()):
            raise InputError("g_index", "a row already belongs to another stage group")
        if check:
            group.check(self.x, self.p, self.g)
        self._stage_groups.append(group)
        self._cache.clear()

    @property
    def stage_groups(self) -> tuple[StageGroup, ...]:
        """The declared :class:`~contactmp.stages.StageGroup` s, in declaration order."""
        return tuple(self._stage_groups)

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
        """Initial guess of ``x``: the ``init`` of every Variables handle, stacked (a copy).

        Assign a vector of ``n_x`` finite numbers to set every handle's ``init`` at once (the start
        of :func:`~contactmp.solvers.nlp.solve.solve_program` when it is given no ``x0``, and the initial
        values :meth:`to_pyomo` writes into the Pyomo variables); a value outside a variable's
        bounds is kept as given (the solvers move it inside). :class:`InputError` naming ``x0``
        for another length or a value that is not finite::

            prog.x0 = guess                     # e.g. ContactImplicitTO.initial_guess()
            model = prog.to_pyomo()             # the twin starts at guess
        """
        return self._cat([h.init for h in self._variables.values()])

    @x0.setter
    def x0(self, value: Any) -> None:
        arr = self._start_vector(value)
        for h in self._variables.values():
            h.init = arr[h.index].copy()

    def _start_vector(self, value: Any) -> np.ndarray:
        """``value`` as a start of ``x``: ``n_x`` finite numbers (InputError naming ``x0``)."""
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise InputError("x0", f"must be {self._n_x} numbers, got {type(value).__name__}") from None
        if arr.ndim > 2 or arr.size != self._n_x or (arr.ndim == 2 and 1 not in arr.shape) \
                or (arr.ndim == 0 and self._n_x != 1):
            raise InputError("x0", f"must have {self._n_x} entries (one per variable of program "
                                   f"'{self.name}'), got shape {arr.shape}")
        arr = arr.ravel()
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise InputError("x0", f"must be finite; {self._x_labels()[int(bad[0])]} is {arr[int(bad[0])]}")
        return arr

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
        xv = float_vector(x, self._n_x, "x", allow_inf=True)
        pv = self.p0 if p is None else float_vector(p, self._n_p, "p", allow_inf=False)
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
            "bound": scaled_violation(xv, self.lbx, self.ubx),
            "constraint": scaled_violation(ev["g"], self.lbg, self.ubg),
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
        """The square MCP of this program (:func:`contactmp.reductions.to_mcp`)."""
        from contactmp.reductions import to_mcp

        return to_mcp(self)

    def to_lcp(self) -> "LCPReduction":
        """``LCP(q, M)`` of this program (:func:`contactmp.reductions.to_lcp`)."""
        from contactmp.reductions import to_lcp

        return to_lcp(self)

    def to_cone_problem(self) -> "ConeReduction":
        """``W, q, mu`` of a program whose pairs are all Coulomb cones (:func:`contactmp.reductions.to_cone_problem`)."""
        from contactmp.reductions import to_cone_problem

        return to_cone_problem(self)

    def to_pyomo(self, x0: Any = None) -> "pyomo.environ.ConcreteModel":
        """A Pyomo ``ConcreteModel`` of this program (``pyomo.mpec`` for the pairs).

        One indexed ``Var`` per Variables handle (bounds; initial values: ``x0`` when given, a
        vector of ``n_x`` finite numbers checked as the :attr:`x0` setter checks it, else the
        program's own start :attr:`x0`, so a solver started from the model's values starts where
        :func:`~contactmp.solvers.nlp.solve.solve_program` does), one mutable indexed
        ``Param`` per Parameters handle, the ``Objective`` (minimize; omitted when constant), one
        indexed ``Constraint`` per Constraint handle and one indexed ``Complementarity``
        (``complements(a >= 0, b >= 0)``) per pair handle (a pair with a constant side ``c``
        becomes the row ``e >= 0`` if ``c = 0`` or ``e == 0`` if ``c > 0`` in the ConstraintList
        ``complementarity_constant_sides``). Component names are the handle names
        with characters other than letters, digits and ``_`` replaced by ``_``;
        ``model.contactmp_names`` maps handle name -> component name and
        ``model.contactmp_cone_directions`` lists the ``VarData`` of every cone's disk-form direction
        ``w`` (:class:`ConeComplementarity`; the plugin ``SolverFactory("contactmp_ipopt")`` bounds
        them in its NLPs as :func:`~contactmp.solvers.nlp.solve.solve_program` does with
        ``cone_bounds``, so the twin's solve is the program's) and ``model.contactmp_stage_groups``
        the program's stage groups in the model's components (:class:`PyomoStageGroup`; the
        read-back program declares them again, so IPOPT's derivatives are built as for this
        program: without them the read-back program of a sagittal Solo12 task, for which
        ``derivatives="auto"`` means ``"stages"``, was differentiated whole, which gives the same
        values rounded another way, and its homotopy reached another local minimizer: Scholtes
        2.1261 against 0.7121 on the CALIPSO gait). Expressions are translated by
        :func:`contactmp.pyomo_bridge.translate`. Read a solved model back with
        :func:`contactmp.pyomo_bridge.program_x` (``program.value(handle, x)``)::

            model = prog.to_pyomo(x0=guess)
            pyomo.environ.SolverFactory("contactmp_ipopt").solve(model, options={"strategy": "scholtes"})
            x = contactmp.pyomo_bridge.program_x(model, prog)
        """
        import pyomo.environ as pyo
        from pyomo.mpec import Complementarity as PyoComplementarity
        from pyomo.mpec import complements

        from contactmp.pyomo_bridge import translate

        start = self.x0 if x0 is None else self._start_vector(x0)
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
            lb, ub, init = h.lb, h.ub, start[h.index]
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
        # the disk-form directions w of the cones (Python list, not a component): the Pyomo model has
        # no cone constructs, so SolverFactory("contactmp_ipopt") with a strategy reads them here to
        # keep |w_i| <= cone_bound in its NLPs, as solve_program's cone_bounds does for this program
        model.contactmp_cone_directions = [model.component(names[c.w.name])[i]
                                           for c in self._cones.values() for i in range(c.w.size)]
        model.contactmp_stage_groups = self._pyomo_stage_groups(model, names, leaves)
        return model

    def _pyomo_stage_groups(self, model: Any, names: dict[str, str], leaves: list[Any]) -> list[PyomoStageGroup]:
        """The stage groups of this program in the components of its twin ``model``
        (:class:`PyomoStageGroup`); ``leaves`` are the ``VarData`` of ``x`` then the ``ParamData``
        of ``p``, in program order (the order :meth:`to_pyomo` translates ``vertcat(x, p)`` by)."""
        if not self._stage_groups:
            return []
        x_leaf, p_leaf = leaves[:self._n_x], leaves[self._n_x:]
        rows: list[Any] = [None] * self._n_g
        for h in self._constraints.values():
            comp = model.component(names[h.name])
            for i in range(h.size):
                rows[h.index.start + i] = comp[i] if i in comp else None
        return [PyomoStageGroup(grp.template,
                                [[x_leaf[int(j)] for j in row] for row in grp.x_index],
                                [[p_leaf[int(j)] for j in row] for row in grp.p_index],
                                [[rows[int(r)] for r in row] for row in grp.g_index])
                for grp in self._stage_groups]

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


def largest_residual(r: dict[str, float]) -> float:
    """The largest of ``bound``, ``constraint`` and ``comp_min`` of :meth:`Program.residuals`
    ``r``: how far a point is from satisfying the program's bounds, rows and pairs (not divided by
    any tolerance; :meth:`~contactmp.solvers.nlp.solve.NLPOptions.scaled_residual` is)."""
    return max(r["bound"], r["constraint"], r["comp_min"])


def scaled_violation(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """``max_i max(lo_i - v_i, v_i - hi_i, 0) / max(1, |violated bound_i|)`` (0 when empty)."""
    if v.size == 0:
        return 0.0
    with np.errstate(invalid="ignore"):
        below = np.where(lo > -INF, (lo - v) / np.maximum(1.0, np.abs(np.where(lo > -INF, lo, 0.0))), 0.0)
        above = np.where(hi < INF, (v - hi) / np.maximum(1.0, np.abs(np.where(hi < INF, hi, 0.0))), 0.0)
    return float(max(np.max(below), np.max(above), 0.0))

