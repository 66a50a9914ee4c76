"""B-stationarity certificates for the MPCC of a :class:`~contactmp.program.Program`, and a branch step.

The program is ::

    minimize f(x, p)  s.t.  lbx <= x <= ubx,  lbg <= g(x, p) <= ubg,  0 <= a(x, p) _|_ b(x, p) >= 0.

A feasible point ``x*`` is (linearized) **B-stationary** when ``d = 0`` solves the LPEC of the
linearized tangent cone (Luo, Pang and Ralph 1996; Scheel and Scholtes 2000), here with the
trust region ``||d||_inf <= 1``::

    min_d  grad f(x*)^T d
    s.t.   -1 <= d_j <= 1,
           d_j >= 0 if x_j is at lbx_j,  d_j <= 0 if x_j is at ubx_j   (d_j = 0 if both),
           grad g_i^T d = 0             for the equality rows (lbg_i = ubg_i),
           grad g_i^T d >= 0 (<= 0)     for the inequality rows active at lbg_i (ubg_i),
           grad a_i^T d = 0             for the pairs with a_i = 0 < b_i,
           grad b_i^T d = 0             for the pairs with b_i = 0 < a_i,
           0 <= grad a_i^T d  _|_  grad b_i^T d >= 0   for the biactive pairs (a_i = b_i = 0).

The feasible set is a union of polyhedral cones cut by the box, so the optimum is 0 (``d = 0`` is
optimal: no first-order descent direction) or negative (a descent direction ``d`` exists, and then
``t d`` descends for every ``t > 0``). The linearized cone equals the tangent cone of the MPCC when
an MPCC constraint qualification holds (MPCC-LICQ, MPCC-ACQ, or all of ``g``, ``a``, ``b`` affine);
without one, "B-stationary" here means the linearized notion.

Without sign constraints (``sign_constraints=False``, NOSBENCH's convention: the signs of ``a`` and
``b`` come from the variable bounds only) a pair is the product row ``a_i b_i <= 0``, whose pieces
are the quadrants ``a_i <= 0 <= b_i`` and ``b_i <= 0 <= a_i``. Its linearization: nothing for
a pair with ``a_i b_i < 0``; ``sign(b_i) grad a_i^T d <= 0`` for ``a_i = 0 != b_i`` (and
symmetrically); for a biactive pair ``(u_i <= 0 <= v_i) or (v_i <= 0 <= u_i)``. When both sides
are nonnegative by their bounds this is the LPEC above (the bounds add ``u_i, v_i >= 0``), so
the certificate and ``solved`` judge the same feasible set as
:func:`contactmp.solvers.nlp.solve.solve_program` with the same ``sign_constraints``.

The LPEC is solved exactly as a MILP with HiGHS (:func:`scipy.optimize.milp`): one binary ``z_k``
per biactive pair and the big-M rows ``-M_a z_k <= u_k <= M_a (1 - z_k)``, ``-M_b (1 - z_k) <= v_k <=
M_b z_k`` with ``u_k = grad a_k^T d``, ``v_k = grad b_k^T d``. ``z_k = 1`` puts the pair on the
branch ``"a"`` (``u_k <= 0 <= v_k``; with sign constraints ``u_k = 0``, ``v_k >= 0``), ``z_k = 0``
on ``"b"``.

Contents
--------
* :func:`b_stationarity` -- the certificate :class:`BStationarity` of a point (verdict, LPEC value,
  descent direction, branch).
* :func:`branch_nlp` -- the NLP of one branch of the pairs (no complementarity left), a new Program.
* :func:`b_stationary_point` -- certificate, branch NLP, move, repeat.
"""
from __future__ import annotations

import enum
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import casadi as ca
import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from contactmp.errors import InputError, check_number
from contactmp.program import Program, scaled_violation
from contactmp.progress import quiet_stdout
from contactmp.solvers.nlp.mpcc import copy_without_pairs

__all__ = ["BVerdict", "BStationarity", "b_stationarity", "branch_nlp", "b_stationary_point"]

INF = math.inf

#: a direction from HiGHS is accepted only if it meets the linearized cone to this (row-scaled) tolerance
_DIRECTION_TOL = 1e-7
#: HiGHS's primal feasibility tolerance of the LPEC (forwarded verbatim; scipy warns, silenced below)
_HIGHS_FEAS_TOL = 1e-9
#: HiGHS's MIP feasibility tolerance (integrality and rows of an incumbent). At 1e-9 HiGHS found no
#: incumbent in 10 s on an LPEC of 4 binaries and 388 rows (NOSBENCH CARTIM STEP_3), which it solves
#: in 7 ms at 1e-7; a direction it returns is checked against the cone to _DIRECTION_TOL anyway
_HIGHS_MIP_FEAS_TOL = 1e-7


class BVerdict(str, enum.Enum):
    """The answer of :func:`b_stationarity`; ``str()`` (and JSON) give the value.

    (:class:`contactmp.solvers.lcp.certificates.Verdict` names LCP facts -- solution, unique, P, ... --
    and has no member for "stationary"; its ``UNDECIDED`` is the analogue of ``UNKNOWN``.)
    """

    YES = "yes"  #: B-stationary: the LPEC optimum is 0 (to ``opt_tol``)
    NO = "no"  #: a verified descent direction of the LPEC
    UNKNOWN = "unknown"  #: infeasible point, MILP failure or time limit

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, eq=False)
class BStationarity:
    """The B-stationarity certificate of a point (see :func:`b_stationarity`).

    Attributes
    ----------
    verdict : BVerdict
        ``YES``, ``NO`` or ``UNKNOWN``.
    value : float
        The LPEC optimum ``min grad f^T d`` over the trust region ``||d||_inf <= 1`` (NaN if not solved).
    direction : numpy.ndarray or None
        The LPEC's minimizer ``d`` (a descent direction when ``verdict`` is ``NO``), or None.
    n_biactive : int
        Number of biactive pairs (``a_i = b_i = 0`` to the tolerance).
    n_binary : int
        Binaries of the MILP (one per biactive pair).
    lpec_rows : int
        Linear rows of the MILP (cone rows plus four per biactive pair).
    time_s : float
        Wall-clock time of the certificate.
    message : str
        What was decided and why (HiGHS's status text kept verbatim when it failed).
    branch : tuple of str
        For each biactive pair (in the order of ``biactive``): ``"a"`` when the LPEC put it on
        ``a_i = 0`` (``b_i`` free to grow), ``"b"`` when on ``b_i = 0``. Empty when no LPEC was solved.
    biactive : tuple of int
        The indices (into ``prog.comp_a``) of the biactive pairs.
    sides : tuple of str
        For every pair: ``"a"`` (``a_i = 0 != b_i``), ``"b"`` (``b_i = 0 != a_i``), ``"ab"``
        (biactive) or ``"-"`` (``a_i b_i < 0``, inactive; only without sign constraints). Empty when
        the point is not feasible.
    objective : float
        ``f(x*, p)`` (NaN when not evaluated).
    dual_bound : float
        HiGHS's lower bound on the LPEC optimum (NaN if none).
    sign_constraints : bool
        The reading of the pairs: ``0 <= a _|_ b >= 0`` (True) or ``a_i b_i <= 0`` (False).
    side_signs : tuple of (int, int)
        For every pair the signs (-1, 0, 1) of ``a_i`` and ``b_i`` at the point (0: active at 0).
    """

    verdict: BVerdict
    value: float
    direction: np.ndarray | None
    n_biactive: int
    n_binary: int
    lpec_rows: int
    time_s: float
    message: str
    branch: tuple[str, ...] = ()
    biactive: tuple[int, ...] = ()
    sides: tuple[str, ...] = ()
    objective: float = float("nan")
    dual_bound: float = float("nan")
    sign_constraints: bool = True
    side_signs: tuple[tuple[int, int], ...] = ()

    @property
    def b_stationary(self) -> bool | None:
        """True (``YES``), False (``NO``) or None (``UNKNOWN``)."""
        return {BVerdict.YES: True, BVerdict.NO: False}.get(self.verdict)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary for result extras and study records: ``b_stationary`` (True, False or
        None), ``verdict``, ``value``, the LPEC's size (``n_biactive``, ``n_binary``, ``lpec_rows``),
        ``time_s`` and ``message`` (no direction)."""
        return {"b_stationary": self.b_stationary, "verdict": self.verdict.value, "value": self.value,
                "n_biactive": self.n_biactive, "n_binary": self.n_binary, "lpec_rows": self.lpec_rows,
                "time_s": self.time_s, "message": self.message}

    def piece_intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """The piece of the LPEC's branch as intervals of the sides (``(n_c, 2)`` arrays of ``(lo, hi)``,
        the argument of :meth:`contactmp.solvers.nlp.mpcc.Relaxation.piece_bounds`): branch ``"a"`` is
        ``a_i <= 0 <= b_i``, ``"b"`` is ``b_i <= 0 <= a_i`` (with sign constraints ``a_i = 0 <= b_i``
        and ``b_i = 0 <= a_i``); a pair ``"a"`` takes the quadrant of the sign of ``b_i`` (``a_i``
        must keep ``a_i b_i <= 0``), an inactive pair the quadrant it is in. Empty arrays when there
        is no branch."""
        fixed = self.pair_branch()
        if not fixed:
            return np.zeros((0, 2)), np.zeros((0, 2))
        lo_hi = {1: (0.0, INF), -1: (-INF, 0.0)}
        a_int, b_int = np.empty((len(fixed), 2)), np.empty((len(fixed), 2))
        for i, side in enumerate(fixed):
            sa, sb = self.side_signs[i]
            if side == "a":      # a_i on its zero side, b_i on the other: quadrant of b's sign
                qb = 1 if sb >= 0 else -1
                qa = -qb
            elif side == "b":
                qa = 1 if sa >= 0 else -1
                qb = -qa
            else:                # "-": the quadrant the pair is in
                qa, qb = (1 if sa > 0 else -1), (1 if sb > 0 else -1)
            a_int[i], b_int[i] = lo_hi[qa], lo_hi[qb]
            if self.sign_constraints:  # a, b >= 0 as well: the negative half of a quadrant is {0}
                a_int[i] = (0.0, max(a_int[i][1], 0.0))
                b_int[i] = (0.0, max(b_int[i][1], 0.0))
        return a_int, b_int

    def pair_branch(self) -> tuple[str, ...]:
        """For every pair the side fixed to 0 on the LPEC's branch: ``sides`` with each biactive
        pair's ``"ab"`` replaced by its ``branch`` entry (empty when there is no branch)."""
        if not self.sides or len(self.branch) != len(self.biactive):
            return ()
        out = list(self.sides)
        for k, i in enumerate(self.biactive):
            out[i] = self.branch[k]
        return tuple(out)


# ----------------------------------------------------------------------------------------------
# numeric data at a point
# ----------------------------------------------------------------------------------------------
@dataclass
class _Point:
    f: float
    grad_f: np.ndarray
    g: np.ndarray
    jac_g: sp.csr_matrix
    a: np.ndarray
    b: np.ndarray
    jac_a: sp.csr_matrix
    jac_b: sp.csr_matrix


def _functions(prog: Program) -> ca.Function:
    """The one CasADi Function ``(x, p) -> (f, grad f, g, jac g, a, b, jac a, jac b)`` of ``prog``."""
    # kept in the program's own cache, which the program clears whenever it is changed
    fun = prog._cache.get("b_stationarity")
    if fun is None:
        x = prog.x
        fun = ca.Function(
            "b_stationarity_data", [x, prog.p],
            [prog.f, ca.densify(ca.gradient(prog.f, x)), prog.g, ca.jacobian(prog.g, x),
             prog.comp_a, prog.comp_b, ca.jacobian(prog.comp_a, x), ca.jacobian(prog.comp_b, x)],
            ["x", "p"], ["f", "grad_f", "g", "jac_g", "a", "b", "jac_a", "jac_b"],
        )
        prog._cache["b_stationarity"] = fun
    return fun


def csr_rows(m: ca.DM) -> sp.csr_matrix:
    """A CasADi DM (sparse) as a scipy CSR matrix."""
    colind, row = m.sparsity().get_ccs()
    data = np.asarray(m.nonzeros(), dtype=float)
    return sp.csc_matrix((data, np.asarray(row, dtype=int), np.asarray(colind, dtype=int)), shape=m.shape).tocsr()


def _vec(m: ca.DM) -> np.ndarray:
    return np.asarray(ca.densify(m), dtype=float).ravel()


def _evaluate(prog: Program, x: np.ndarray, p: np.ndarray) -> _Point:
    out = _functions(prog)(x, p)
    return _Point(float(out[0]), _vec(out[1]), _vec(out[2]), csr_rows(out[3]), _vec(out[4]), _vec(out[5]),
                  csr_rows(out[6]), csr_rows(out[7]))


def _row_l1(m: sp.csr_matrix) -> np.ndarray:
    """``||row_i||_1`` of every row."""
    return np.asarray(abs(m).sum(axis=1), dtype=float).ravel()


@dataclass
class _Active:
    """Active sets of a feasible point (or ``why`` it is not feasible)."""

    why: str = ""
    d_lb: np.ndarray | None = None  # bounds of d (trust region and active bounds)
    d_ub: np.ndarray | None = None
    sides: tuple[str, ...] = ()
    signs: tuple[tuple[int, int], ...] = ()
    rows: list[tuple[sp.csr_matrix, np.ndarray, np.ndarray]] = field(default_factory=list)


def _classify(prog: Program, x: np.ndarray, pt: _Point, active_tol: float, feas_tol: float,
              sign_constraints: bool = True, pair_tol: float | None = None) -> _Active:
    """Feasibility to the tolerances and the active sets, with the rule: a quantity ``h`` with bound
    ``c`` is active when ``|h - c| <= active_tol * max(1, |c|, ||grad h||_1)`` -- the bound's own
    scale (as in :meth:`Program.residuals`), or the change of ``h`` over the trust region
    ``||d||_inf <= 1`` (``|grad h^T d| <= ||grad h||_1``), whichever is larger. Feasibility: the
    scaled bound and row violations of :meth:`Program.residuals` ``<= feas_tol``, every pair side
    ``>= -feas_tol * max(1, ||grad side||_1)`` and at least one side of every pair active at 0
    (a pair side to ``pair_tol``, default ``active_tol``)."""
    n = prog.n_x
    pair_tol = active_tol if pair_tol is None else pair_tol
    vals = [pt.f, *pt.grad_f, *pt.g, *pt.a, *pt.b]
    if not np.isfinite(vals).all() or not all(np.isfinite(m.data).all() for m in (pt.jac_g, pt.jac_a, pt.jac_b)):
        return _Active(why="f, g, a, b or a derivative is not finite at x")
    lbx, ubx, lbg, ubg = prog.lbx, prog.ubx, prog.lbg, prog.ubg
    vb = scaled_violation(x, lbx, ubx)
    vg = scaled_violation(pt.g, lbg, ubg)
    if vb > feas_tol or vg > feas_tol:
        return _Active(why=f"the point is not feasible: scaled bound violation {vb:.2e}, row violation "
                           f"{vg:.2e} (feas_tol {feas_tol:.1e})")
    t_lb = active_tol * np.maximum(1.0, np.abs(np.where(np.isfinite(lbx), lbx, 0.0)))
    t_ub = active_tol * np.maximum(1.0, np.abs(np.where(np.isfinite(ubx), ubx, 0.0)))
    fixed = lbx == ubx  # d_j = 0 however close x_j is
    with np.errstate(invalid="ignore"):
        at_lb = fixed | (np.isfinite(lbx) & (x - lbx <= t_lb))
        at_ub = fixed | (np.isfinite(ubx) & (ubx - x <= t_ub))
    d_lb = np.where(at_lb, 0.0, -1.0)
    d_ub = np.where(at_ub, 0.0, 1.0)
    act = _Active(d_lb=d_lb, d_ub=d_ub)
    if prog.n_g:
        s = np.maximum(1.0, _row_l1(pt.jac_g))
        s_lo = active_tol * np.maximum(s, np.abs(np.where(np.isfinite(lbg), lbg, 0.0)))
        s_hi = active_tol * np.maximum(s, np.abs(np.where(np.isfinite(ubg), ubg, 0.0)))
        with np.errstate(invalid="ignore"):
            lo = np.isfinite(lbg) & (pt.g - lbg <= s_lo)
            hi = np.isfinite(ubg) & (ubg - pt.g <= s_hi)
        eq = (lbg == ubg) | (lo & hi)
        keep = np.flatnonzero(eq | lo | hi)
        if keep.size:
            r_lo = np.where(eq[keep] | lo[keep], 0.0, -INF)
            r_hi = np.where(eq[keep] | hi[keep], 0.0, INF)
            act.rows.append((pt.jac_g[keep], r_lo, r_hi))
    if prog.n_comp:
        sa = np.maximum(1.0, _row_l1(pt.jac_a))
        sb = np.maximum(1.0, _row_l1(pt.jac_b))
        za = np.abs(pt.a) <= pair_tol * sa
        zb = np.abs(pt.b) <= pair_tol * sb
        if sign_constraints:
            neg = np.flatnonzero((pt.a < -feas_tol * sa) | (pt.b < -feas_tol * sb))
            if neg.size:
                i = int(neg[0])
                return _Active(why=f"the point is not feasible: pair {i} has a side < 0 (a = {pt.a[i]:.3e}, "
                                   f"b = {pt.b[i]:.3e}; {neg.size} such pair(s))")
            inactive = np.zeros(prog.n_comp, dtype=bool)
        else:  # the product row a_i b_i <= 0: a pair with sides of opposite signs is inactive
            inactive = ~(za | zb) & (pt.a * pt.b < 0.0)
        bad = np.flatnonzero(~(za | zb | inactive))
        if bad.size:
            i = int(bad[0])
            return _Active(why=f"the point is not feasible: pair {i} is not complementary (a = {pt.a[i]:.3e}, "
                               f"b = {pt.b[i]:.3e}; {bad.size} such pair(s); pair_tol {pair_tol:.1e})")
        act.sides = tuple("-" if off else ("ab" if (p_ and q_) else ("a" if p_ else "b"))
                          for p_, q_, off in zip(za, zb, inactive))
        act.signs = tuple((0 if p_ else int(np.sign(a_)), 0 if q_ else int(np.sign(b_)))
                          for p_, q_, a_, b_ in zip(za, zb, pt.a, pt.b))
        only_a = np.flatnonzero(za & ~zb)  # a_i = 0 != b_i: sign(b_i) a stays <= 0 (= 0 with signs)
        only_b = np.flatnonzero(zb & ~za)
        for idx, jac, other in ((only_a, pt.jac_a, pt.b), (only_b, pt.jac_b, pt.a)):
            if idx.size:
                if sign_constraints:
                    lo, hi = np.zeros(idx.size), np.zeros(idx.size)
                else:
                    pos = other[idx] > 0
                    lo, hi = np.where(pos, -INF, 0.0), np.where(pos, 0.0, INF)
                act.rows.append((jac[idx], lo, hi))
    assert d_lb.shape == (n,)
    return act


# ----------------------------------------------------------------------------------------------
# the certificate
# ----------------------------------------------------------------------------------------------
def b_stationarity(
    prog: Program,
    x: Any,
    *,
    p: Any = None,
    active_tol: float = 1e-6,
    feas_tol: float = 1e-6,
    opt_tol: float = 1e-6,
    time_limit: float = 60.0,
    sign_constraints: bool = True,
    pair_tol: float | None = None,
) -> BStationarity:
    """Decide whether ``x`` is a (linearized) B-stationary point of the MPCC ``prog``.

    ``sign_constraints`` reads each pair as ``0 <= a_i _|_ b_i >= 0`` (True) or as the product row
    ``a_i b_i <= 0`` with the signs from the variable bounds (False; see the module docstring), as
    :func:`contactmp.solvers.nlp.solve.solve_program` does with the same option.

    Every number comes from one CasADi Function of ``(x, p)`` evaluated at ``(x, p)`` (``p``
    defaults to ``prog.p0``): ``f``, ``grad f``, ``g``, ``jac g``, ``a``, ``b``, ``jac a``, ``jac b``.

    1. Feasibility and active sets (``active_tol``, ``feas_tol``): see the module docstring's rows;
       a quantity ``h`` with bound ``c`` is active when ``|h - c| <= active_tol * max(1, |c|,
       ||grad h||_1)`` (bounds of ``x``: ``max(1, |c|)``); a pair side ``a_i`` is active when
       ``|a_i| <= pair_tol * max(1, ||grad a_i||_1)`` (``pair_tol`` defaults to ``active_tol``; a
       point solved to ``a_i b_i <= comp_tol`` without sign constraints has a side at most
       ``sqrt(comp_tol)``: ``pair_tol = sqrt(comp_tol)`` classifies every such point). A point
       that is not feasible (bounds or rows violated by more than ``feas_tol`` in the scaled units
       of :meth:`Program.residuals`, a pair side below ``-feas_tol * max(1, ||grad side||_1)``
       with sign constraints, a pair with no active side (without sign constraints: and sides of
       equal signs)) gets ``UNKNOWN``.
    2. The LPEC ``min grad f^T d`` over the linearized cone and ``||d||_inf <= 1``, solved as a MILP
       with one binary per biactive pair (the big-M constants are valid bounds, see the code).
    3. Verdict, with ``thr = opt_tol * max(1, ||grad f||_1)`` (``||grad f||_1`` is the largest
       ``|grad f^T d|`` on the trust region): ``NO`` when HiGHS's ``d`` passes an independent check
       of the linearized cone (rows to ``1e-7 * max(1, ||row||_1)``) and ``grad f^T d < -thr``;
       ``YES`` when HiGHS proves the optimum ``>= -thr`` (its dual bound); ``UNKNOWN`` when HiGHS
       fails, hits ``time_limit`` (seconds), or its answer fails the check.

    Never raises on a point that is not stationary, not feasible or not finite (the verdict says
    so); malformed arguments raise :class:`~contactmp.errors.InputError`.
    """
    t0 = time.perf_counter()
    if not isinstance(prog, Program):
        raise InputError("prog", f"must be a contactmp Program, got {type(prog).__name__}")
    if prog.n_x == 0:
        raise InputError("prog", "has no variables")
    if not isinstance(sign_constraints, (bool, np.bool_)):
        raise InputError("sign_constraints", f"must be True or False, got {sign_constraints!r}")
    active_tol = check_number("active_tol", active_tol, positive=True)
    pair_tol = active_tol if pair_tol is None else check_number("pair_tol", pair_tol, positive=True)
    feas_tol = check_number("feas_tol", feas_tol, positive=True)
    opt_tol = check_number("opt_tol", opt_tol, positive=True)
    time_limit = check_number("time_limit", time_limit, positive=True, allow_inf=True)
    try:
        xv = np.asarray(x, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InputError("x", f"must be a vector of numbers, got {type(x).__name__}") from None
    if xv.shape != (prog.n_x,):
        raise InputError("x", f"has length {xv.size} but the program has {prog.n_x} variables")
    pv = prog.p0 if p is None else np.asarray(p, dtype=float).ravel()
    if pv.shape != (prog.n_p,) or not np.isfinite(pv).all():
        raise InputError("p", f"must be {prog.n_p} finite numbers")

    def unknown(msg: str, **kw: Any) -> BStationarity:
        base: dict[str, Any] = dict(value=float("nan"), direction=None, n_biactive=0, n_binary=0, lpec_rows=0)
        base.update(kw)
        return BStationarity(BVerdict.UNKNOWN, time_s=time.perf_counter() - t0, message=msg, **base)

    if not np.isfinite(xv).all():
        return unknown("x is not finite")
    pt = _evaluate(prog, xv, pv)
    act = _classify(prog, xv, pt, active_tol, feas_tol, bool(sign_constraints), pair_tol)
    if act.why:
        return unknown(act.why, objective=pt.f, sign_constraints=bool(sign_constraints))
    n = prog.n_x
    biactive = tuple(i for i, s in enumerate(act.sides) if s == "ab")
    nb = len(biactive)

    # -- the MILP in (d, z) ----------------------------------------------------------------------
    blocks: list[sp.csr_matrix] = []
    lo_parts: list[np.ndarray] = []
    hi_parts: list[np.ndarray] = []
    for A, lo, hi in act.rows:
        blocks.append(sp.hstack([A, sp.csr_matrix((A.shape[0], nb))], format="csr"))
        lo_parts.append(lo)
        hi_parts.append(hi)
    if nb:
        idx = np.asarray(biactive)
        Ja, Jb = pt.jac_a[idx], pt.jac_b[idx]
        # Big-M: on the trust region |d_j| <= 1, so |grad a_i^T d| <= sum_j |grad a_ij| |d_j| <= ||grad a_i||_1
        # =: M_a (and M_b for b). Hence -M_a z <= u <= M_a (1 - z) and -M_b (1 - z) <= v <= M_b z cut
        # nothing off besides the other branch: z = 1 forces u <= 0 <= v (branch "a"), z = 0 forces
        # v <= 0 <= u (branch "b"); with sign constraints also u, v >= 0 (so u = 0, or v = 0).
        Ma, Mb = _row_l1(Ja), _row_l1(Jb)
        eye = sp.identity(nb, format="csr")
        blocks += [sp.hstack([Ja, sp.diags(Ma) @ eye], format="csr"),      # 0 <= u + M_a z <= M_a
                   sp.hstack([Jb, -(sp.diags(Mb) @ eye)], format="csr")]   # -M_b <= v - M_b z <= 0
        lo_parts += [np.zeros(nb), -Mb]
        hi_parts += [Ma, np.zeros(nb)]
        if sign_constraints:
            zero = sp.csr_matrix((nb, nb))
            blocks += [sp.hstack([Ja, zero], format="csr"), sp.hstack([Jb, zero], format="csr")]  # u, v >= 0
            lo_parts += [np.zeros(nb), np.zeros(nb)]
            hi_parts += [np.full(nb, INF), np.full(nb, INF)]
    c = np.concatenate([pt.grad_f, np.zeros(nb)])
    lb = np.concatenate([act.d_lb, np.zeros(nb)])
    ub = np.concatenate([act.d_ub, np.ones(nb)])
    integrality = np.concatenate([np.zeros(n), np.ones(nb)])
    cons = []
    n_rows = 0
    if blocks:
        A_all = sp.vstack(blocks, format="csr")
        n_rows = A_all.shape[0]
        cons = [LinearConstraint(A_all, np.concatenate(lo_parts), np.concatenate(hi_parts))]
    sizes = dict(n_biactive=nb, n_binary=nb, lpec_rows=n_rows, biactive=biactive, sides=act.sides, objective=pt.f,
                 sign_constraints=bool(sign_constraints), side_signs=act.signs)
    remaining = time_limit - (time.perf_counter() - t0)
    if remaining <= 0:
        return unknown("time limit reached before the LPEC was solved", **sizes)
    opts: dict[str, Any] = {"presolve": True, "mip_rel_gap": 0.0, "primal_feasibility_tolerance": _HIGHS_FEAS_TOL,
                            "mip_feasibility_tolerance": _HIGHS_MIP_FEAS_TOL}
    if math.isfinite(remaining):
        opts["time_limit"] = float(remaining)
    with warnings.catch_warnings():  # milp warns that it forwards the two tolerances unchecked
        warnings.filterwarnings("ignore", message="Unrecognized options", category=RuntimeWarning)
        with quiet_stdout():  # HiGHS prints MIP debug lines to fd 1 on some LPECs
            res = milp(c, integrality=integrality if nb else None, bounds=Bounds(lb, ub), constraints=cons,
                       options=opts)
    hi_msg = str(res.message)
    if res.status == 1:
        return unknown(f"time or node limit before the LPEC was solved (HiGHS: {hi_msg})", **sizes)
    if res.status != 0 or res.x is None:
        return unknown(f"the LPEC was not solved (HiGHS status {res.status}: {hi_msg})", **sizes)
    d = np.asarray(res.x[:n], dtype=float)
    branch = tuple("a" if zk > 0.5 else "b" for zk in res.x[n:])
    value = float(res.fun)
    dual = getattr(res, "mip_dual_bound", None)
    dual_bound = float(dual) if (dual is not None and np.isfinite(dual)) else value
    thr = opt_tol * max(1.0, float(np.abs(pt.grad_f).sum()))
    common = dict(value=value, n_biactive=nb, n_binary=nb, lpec_rows=n_rows, branch=branch, biactive=biactive,
                  sides=act.sides, objective=pt.f, dual_bound=dual_bound, sign_constraints=bool(sign_constraints),
                  side_signs=act.signs)
    slope = float(pt.grad_f @ d)
    if slope < -thr:
        bad = _cone_violation(d, act, pt, biactive, branch, bool(sign_constraints))
        if bad:
            return BStationarity(BVerdict.UNKNOWN, direction=d, time_s=time.perf_counter() - t0,
                                 message=f"HiGHS's LPEC direction fails the check of the linearized cone: {bad}",
                                 **common)
        desc = ", ".join(f"pair {i}: {'a' if s == 'a' else 'b'} = 0" for i, s in zip(biactive, branch))
        return BStationarity(BVerdict.NO, direction=d, time_s=time.perf_counter() - t0,
                             message=f"not B-stationary: descent direction with grad f^T d = {slope:.6e} < "
                                     f"-{thr:.1e} (LPEC value {value:.6e}; {nb} biactive pair(s)"
                                     f"{'; branch ' + desc if desc else ''})", **common)
    if dual_bound >= -thr:
        return BStationarity(BVerdict.YES, direction=d, time_s=time.perf_counter() - t0,
                             message=f"B-stationary: LPEC optimum {value:.3e} >= -{thr:.1e} (dual bound "
                                     f"{dual_bound:.3e}; {nb} biactive pair(s), {n_rows} rows)", **common)
    return BStationarity(BVerdict.UNKNOWN, direction=d, time_s=time.perf_counter() - t0,
                         message=f"LPEC primal {value:.3e} but dual bound {dual_bound:.3e} < -{thr:.1e} "
                                 f"(HiGHS: {hi_msg})", **common)


def _cone_violation(d: np.ndarray, act: _Active, pt: _Point, biactive: tuple[int, ...],
                    branch: tuple[str, ...], sign_constraints: bool = True) -> str:
    """Empty when ``d`` lies in the linearized cone (and the trust region) to the check's tolerance,
    else what fails: ``lb - 1e-7 <= d <= ub + 1e-7`` (HiGHS's MIP feasibility tolerance), each row
    ``lo <= A d <= hi`` to ``1e-7 * max(1, ||row||_1)``, each biactive pair on its branch's quadrant (``u <= tol``,
    ``v >= -tol`` on ``"a"``) and, with sign constraints, ``u, v >= -tol``."""
    assert act.d_lb is not None and act.d_ub is not None
    if (d < act.d_lb - _HIGHS_MIP_FEAS_TOL).any() or (d > act.d_ub + _HIGHS_MIP_FEAS_TOL).any():
        return "a bound of d (trust region or active bound of x) is violated"
    for A, lo, hi in act.rows:
        r = A @ d
        s = _DIRECTION_TOL * np.maximum(1.0, _row_l1(A))
        if (r < lo - s).any() or (r > hi + s).any():
            return "a linearized row is violated"
    if biactive:
        idx = np.asarray(biactive)
        Ja, Jb = pt.jac_a[idx], pt.jac_b[idx]
        u, v = Ja @ d, Jb @ d
        sa, sb = _DIRECTION_TOL * np.maximum(1.0, _row_l1(Ja)), _DIRECTION_TOL * np.maximum(1.0, _row_l1(Jb))
        if sign_constraints and ((u < -sa).any() or (v < -sb).any()):
            return "grad a^T d >= 0 or grad b^T d >= 0 is violated at a biactive pair"
        on_a = np.asarray([s == "a" for s in branch])
        if (np.where(on_a, (u > sa) | (v < -sb), (v > sb) | (u < -sa))).any():
            return "a biactive pair is off its branch"
    return ""


# ----------------------------------------------------------------------------------------------
# the branch NLP and the loop
# ----------------------------------------------------------------------------------------------
def branch_nlp(prog: Program, x: Any, cert: BStationarity) -> Program:
    """The NLP of the branch of ``cert`` at ``x``: a new Program without complementarity pairs.

    Same variables (names, blocks; ``init = x`` clipped into the bounds), parameters, objective and
    rows as ``prog`` (expressions substituted symbol for symbol, as :func:`contactmp.solvers.nlp.mpcc.relax`
    does). Each pair is replaced by its piece (:meth:`BStationarity.piece_intervals`): with sign
    constraints ``a_i = 0 <= b_i`` (a pair with ``a_i = 0 < b_i``, or a biactive pair the LPEC put on
    ``a = 0``) or ``b_i = 0 <= a_i``; without them the quadrant ``a_i <= 0 <= b_i`` or ``b_i <= 0 <=
    a_i``. (On a descent branch the LPEC's ``d`` lies in the piece's linearization, so ``d`` is a
    descent direction of the branch NLP.) A side that is a single variable gets the interval as
    bounds (when they stay consistent), any other side rows ``{pair name}/branch_zero`` (``= 0``),
    ``{pair name}/branch_nonneg`` (``>= 0``) or ``{pair name}/branch_nonpos`` (``<= 0``) in the
    pair's block. Solve it with :func:`contactmp.solvers.nlp.solve.solve_program`.
    """
    if not isinstance(prog, Program):
        raise InputError("prog", f"must be a contactmp Program, got {type(prog).__name__}")
    if not isinstance(cert, BStationarity):
        raise InputError("cert", f"must be a BStationarity, got {type(cert).__name__}")
    xv = np.asarray(x, dtype=float).ravel()
    if xv.shape != (prog.n_x,) or not np.isfinite(xv).all():
        raise InputError("x", f"must be {prog.n_x} finite numbers")
    a_int, b_int = cert.piece_intervals()
    if a_int.shape[0] != prog.n_comp:
        raise InputError("cert", f"has no branch for the {prog.n_comp} pairs ({cert.verdict}: {cert.message})")
    lbx, ubx = prog.lbx.copy(), prog.ubx.copy()
    handles = prog.complementarities
    owner = np.empty(prog.n_comp, dtype=int)
    for k, h in enumerate(handles):
        owner[h.index] = k
    # rows[k][kind]: the (pair, side) whose side of kind "zero" / "nonneg" / "nonpos" is a row
    rows: dict[int, dict[str, list[tuple[int, str]]]] = {}
    for i in range(prog.n_comp):
        for side, expr, (lo, hi) in (("a", prog.comp_a[i], a_int[i]), ("b", prog.comp_b[i], b_int[i])):
            j = prog.variable_index(expr)
            if j is not None and max(lbx[j], lo) <= min(ubx[j], hi):
                lbx[j], ubx[j] = max(lbx[j], lo), min(ubx[j], hi)
                continue
            kind = "zero" if lo == hi == 0.0 else ("nonneg" if lo == 0.0 else "nonpos")
            rows.setdefault(int(owner[i]), {}).setdefault(kind, []).append((i, side))
    new, f, _, a, b = copy_without_pairs(prog, f"{prog.name}/branch", lbx=lbx, ubx=ubx,
                                         init=np.clip(xv, lbx, ubx))
    new.add_cost(f)

    def unique(name: str) -> str:
        cand, k = name, 1
        while True:
            try:
                new[cand]
            except KeyError:
                try:
                    prog[cand]
                except KeyError:
                    return cand
            cand, k = f"{name}_{k}", k + 1

    bounds = {"zero": (0.0, 0.0), "nonneg": (0.0, INF), "nonpos": (-INF, 0.0)}
    for k, h in enumerate(handles):
        for kind in ("zero", "nonneg", "nonpos"):
            sides = rows.get(k, {}).get(kind)
            if sides:
                e = ca.vertcat(*[a[i] if s == "a" else b[i] for i, s in sides])
                new.add_constraint(e, *bounds[kind], name=unique(f"{h.name}/branch_{kind}"), block=h.block)
    return new


def b_stationary_point(
    prog: Program,
    x: Any,
    max_rounds: int = 5,
    *,
    backend: str = "casadi",
    nlp_options: Any = None,
    active_tol: float = 1e-6,
    feas_tol: float = 1e-6,
    opt_tol: float = 1e-6,
    time_limit: float = 60.0,
    sign_constraints: bool = True,
) -> tuple[np.ndarray, BStationarity, list[dict[str, Any]]]:
    """Move from ``x`` to a certified B-stationary point by branch NLPs, at most ``max_rounds`` of them.

    Each round: ``cert = b_stationarity(prog, x)``; if ``cert`` is ``YES`` or ``UNKNOWN``, stop. Else
    solve the NLP of the certificate's branch (:meth:`BStationarity.piece_intervals`, as bounds on
    one IPOPT object of the program: the branch step of :func:`contactmp.solvers.nlp.solve.solve_program`,
    :func:`contactmp.solvers.nlp.solve.walk_branches`) from ``x``; move to its point ``x+`` when ``x+``
    passes the independent checks (``feas_tol``, and ``comp_tol`` of ``nlp_options``, an
    ``NLPOptions`` or dict) and ``f(x+) < f(x)``, else stop. ``time_limit`` (seconds) bounds each
    certificate.

    Returns ``(x, cert, history)``: the last point, its certificate and one dict per round
    (``round``, ``f``, ``verdict``, ``value``, ``branch``, and for a branch NLP ``nlp_status``,
    ``iterations``, ``f_new``, ``accepted``, ``reason``). Never raises on non-convergence.
    """
    from contactmp.solvers.nlp.solve import NLPOptions, walk_branches  # (nlp imports IPOPT; only this needs it)

    if isinstance(max_rounds, bool) or not isinstance(max_rounds, (int, np.integer)) or max_rounds < 0:
        raise InputError("max_rounds", f"must be a nonnegative integer, got {max_rounds!r}")
    opts = dict(nlp_options) if isinstance(nlp_options, dict) else {}
    base = None if isinstance(nlp_options, dict) else nlp_options
    o = NLPOptions.build(base, **{"feas_tol": feas_tol, "certify_time_limit": time_limit,
                                  "sign_constraints": sign_constraints, **opts})
    return walk_branches(prog, x, int(max_rounds), backend=backend, options=o,
                         active_tol=check_number("active_tol", active_tol, positive=True),
                         opt_tol=check_number("opt_tol", opt_tol, positive=True))
