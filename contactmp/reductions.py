"""Reductions of a :class:`~contactmp.program.Program` to the problems the solvers take.

Each reduction (CVXPY's ``apply`` / ``invert``) either returns the reduced problem with an
``invert`` that maps its solution back to the program's ``x``, or refuses with
:class:`~contactmp.errors.UnsupportedProgramError` and the reason:

* :func:`to_mcp` -- the square mixed complementarity problem ``MCP(F, [l, u])``;
* :func:`to_lcp` -- ``LCP(q, M)`` when that MCP is affine (free variables eliminated by a Schur
  complement);
* :func:`to_cone_problem` -- ``fc3d(W, q, mu)`` (Coulomb's law, De Saxce's form) or the cone LCP
  ``K_mu contains r _|_ W r + q in K_mu*`` (the associated law) when every pair of the program
  belongs to a :class:`~contactmp.program.ConeComplementarity` and everything else is affine.

Both reduced problems keep the program's other variables as an affine function of their unknowns
(the eliminated equalities), so any variable of the program -- a time step's next velocity
``v_{k+1}`` above all -- is ``A z + b`` of an LCP solution ``z`` (or of an fc3d ``r``).
:meth:`LCPReduction.motion_map` and :meth:`ConeReduction.motion_map` give that map as a
:class:`MotionMap`, which a multistart or a certificate takes to judge distinct solutions by what
moves as well as by the impulses (:mod:`contactmp.solvers.multistart`).

:data:`REDUCTIONS` lists them for the solver front door (:func:`contactmp.solvers.front.solve`),
with :func:`refusal` giving each one's reason for a program it does not take.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Callable

import casadi as ca
import numpy as np

from contactmp.errors import InputError, UnsupportedProgramError
from contactmp.program import INF, ConeComplementarity, Program, is_free

__all__ = ["to_mcp", "to_lcp", "to_cone_problem", "MCPReduction", "LCPReduction", "ConeReduction",
           "MotionMap", "MOTION_SAFETY", "REDUCTIONS", "refusal"]


#: the factor between the motion tolerance and what a verified answer's own error moves the motion
#: by (:meth:`MotionMap.tolerance`)
MOTION_SAFETY = 10.0


@dataclass(frozen=True)
class MotionMap:
    """The motion ``v = A z + b`` of a solution ``z`` of a reduced problem (a time step's
    ``v_{k+1} = v_free + A z``, with ``v_free = b`` the velocity without contact impulses).

    ``A`` is ``n_v x n`` and ``b`` has ``n_v`` entries (finite); ``name`` says what ``v`` is
    (``"v_next"``, ``"contact velocity u = W r + q"``, ...), ``labels`` (optional) name its entries.
    Two solutions are the same motion when their ``v`` agree to :meth:`tolerance`.
    """

    A: np.ndarray
    b: np.ndarray
    name: str = "v_next"
    labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        try:
            A = np.array(self.A, dtype=float, ndmin=2)
            b = np.array(self.b, dtype=float).ravel()
        except (TypeError, ValueError) as exc:
            raise InputError("motion", f"A and b must be numeric ({exc})") from None
        if A.ndim != 2 or b.shape != (A.shape[0],):
            raise InputError("motion", f"A must be 2-D with one row per entry of b, got A {A.shape}, b {b.shape}")
        if not (np.isfinite(A).all() and np.isfinite(b).all()):
            raise InputError("motion", "A and b must be finite")
        if self.labels and len(self.labels) != b.size:
            raise InputError("motion", f"has {len(self.labels)} labels for {b.size} entries")
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "b", b)

    @classmethod
    def of(cls, value: Any, n: int) -> "MotionMap":
        """``value`` as a map of ``n`` unknowns: a :class:`MotionMap` or a pair ``(A, b)``."""
        mm = value if isinstance(value, MotionMap) else None
        if mm is None:
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise InputError("motion", f"must be a MotionMap or a pair (A, b), got {type(value).__name__}")
            mm = cls(value[0], value[1])
        if mm.A.shape[1] != n:
            raise InputError("motion", f"A has {mm.A.shape[1]} columns but the problem has {n} unknowns")
        return mm

    @property
    def n_v(self) -> int:
        """Number of motion entries."""
        return int(self.b.size)

    @property
    def gain(self) -> float:
        """``||A||_inf`` (largest absolute row sum): ``||A dz||_inf <= gain ||dz||_inf``."""
        return float(np.abs(self.A).sum(axis=1).max(initial=0.0))

    def __call__(self, z: Any) -> np.ndarray:
        """``v = A z + b``."""
        return self.A @ np.asarray(z, dtype=float).ravel() + self.b

    def tolerance(self, solve_error: float, scale: float = 0.0) -> float:
        """The motion tolerance ``tol_v = MOTION_SAFETY ||A||_inf e + 64 eps V`` [units of ``v``].

        ``e`` (``solve_error``) bounds ``||z - z'||_inf`` for a verified answer ``z`` and an exact
        solution ``z'`` of a nearby problem; for an LCP verified by ``||r||_inf <= tol``,
        ``r = min(z, M z + q)``, the point ``z' = z - r = max(z - w, 0)`` with ``w' = w - r`` solves
        ``LCP(q + (M - I) r, M)`` exactly, so ``e = tol``. Its motion ``A z' + b`` is then within
        ``||A||_inf e`` of the answer's, and two answers of one motion differ by ``2 ||A||_inf e``
        plus what the perturbation of ``q`` (of size ``(||M||_inf + 1) e``) moves the motion by;
        :data:`MOTION_SAFETY` (10) covers that second part for a motion whose sensitivity to ``q``
        is up to about 4 ``||A||_inf`` (on a worse-conditioned step one motion may be reported as
        several; two motions are merged only when they differ by less than ``tol_v``).
        ``64 eps V`` (``V = scale``, the largest ``||v||_inf`` seen) is the rounding of ``A z + b``.
        """
        return float(MOTION_SAFETY * self.gain * float(solve_error) + 64.0 * np.finfo(float).eps * float(scale))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (the name, the size and ``||A||_inf``; not the matrices)."""
        return {"name": self.name, "n_v": self.n_v, "gain": self.gain, "labels": list(self.labels)}



def _check_program(prog: Any, fn: str) -> None:
    """InputError naming ``prog`` unless it is a :class:`~contactmp.program.Program` (the reductions'
    first check: ``to_lcp(None)`` said ``'NoneType' object has no attribute 'lbx'``)."""
    if not isinstance(prog, Program):
        hint = (" (a time-stepping step's Result carries no program; "
                "TimeStepping.step_program(q, v, u, t) builds the step's Program)") if prog is None else ""
        raise InputError("prog", f"{fn} takes a Program, got {type(prog).__name__}{hint}")


def to_mcp(prog: Program) -> MCPReduction:
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
    _check_program(prog, "to_mcp")
    if prog.has_objective:
        raise UnsupportedProgramError(
            "an MCP has no objective, but this program's objective depends on x; solve it as an "
            "NLP/MPCC (contactmp.solvers.nlp.solve.solve_program) instead"
        )
    x, p = prog.x, prog.p
    lbx, ubx, x0, p0 = prog.lbx, prog.ubx, prog.x0, prog.p0
    labels = prog._x_labels()

    # Inequality rows are not part of an MCP.
    lbg, ubg = prog.lbg, prog.ubg
    eq_rows: list[int] = []
    for h in prog.constraints:
        for i in range(h.size):
            lo, hi = h.lb[i], h.ub[i]
            if lo == hi:
                eq_rows.append(h.index.start + i)
            elif not is_free(lo, hi):
                raise UnsupportedProgramError(
                    f"constraint '{h.name}'[{i}] is an inequality ({lo} <= g <= {hi}); an MCP takes "
                    "only equalities and complementarity pairs (write it as a pair with a slack)"
                )
    g = prog.g
    F: list[ca.SX | None] = [None] * prog.n_x
    f_label: list[str] = [""] * prog.n_x
    paired = np.zeros(prog.n_x, dtype=bool)
    slack_a: list[ca.SX] = []
    slack_b: list[ca.SX] = []
    slack_tags: list[str] = []

    def pairable(e: ca.SX) -> int | None:
        j = prog.variable_index(e)
        if j is None or paired[j] or lbx[j] != 0.0 or ubx[j] != INF:
            return None
        return j

    for h in prog.complementarities:
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

    free = [j for j in range(prog.n_x) if is_free(lbx[j], ubx[j])]
    fixed = [j for j in range(prog.n_x) if lbx[j] == ubx[j]]
    for j in range(prog.n_x):
        if not (paired[j] or is_free(lbx[j], ubx[j]) or lbx[j] == ubx[j]):
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
    eq_labels = [prog._g_label(r) for r in eq_rows] + [f"equality a - s of {t}" for t in slack_tags]
    for j, e, lab in zip(free, eqs, eq_labels):
        F[j], f_label[j] = e, lab
    for j in fixed:
        F[j], f_label[j] = ca.SX(0.0), "fixed (F = 0)"
    z = ca.vertcat(x, s)
    F_expr = ca.vertcat(*[e for e in F], *slack_b) if (prog.n_x + n_s) else ca.SX(0, 1)
    lb = np.concatenate([lbx, np.zeros(n_s)])
    ub = np.concatenate([ubx, np.full(n_s, INF)])
    if n_s:
        a0 = np.asarray(ca.Function("a0", [x, p], [ca.vertcat(*slack_a)])(x0, p0), dtype=float).ravel()
        s0 = np.maximum(a0, 0.0)
    else:
        s0 = np.zeros(0)
    z0 = np.concatenate([x0, s0])
    pair_labels = [f"{labels[j]} _|_ {f_label[j]}" for j in range(prog.n_x)] + [
        f"slack s = a of {slack_tags[k]} _|_ b of {slack_tags[k]}" for k in range(n_s)
    ]
    return MCPReduction(z=z, p=p, F_expr=F_expr, lb=lb, ub=ub, z0=z0, p0=p0, n_x=prog.n_x,
                        labels=pair_labels)

def to_lcp(prog: Program) -> LCPReduction:
    """``LCP(q, M)`` of this program: ``z >= 0``, ``w = M z + q >= 0``, ``z^T w = 0``.

    Starting from :func:`to_mcp` with ``F(z) = J z + c`` affine (``J = dF/dz`` must not depend
    on ``z``; it may depend on parameters, evaluated at their current values), fixed variables
    are substituted and the free variables ``z_F`` (paired with the equalities ``F_F = 0``) are
    eliminated by the Schur complement (``B``: the variables in ``[0, inf)``)::

        z_F = -J_FF^{-1} (J_FB z_B + c_F)
        M   = J_BB - J_BF J_FF^{-1} J_FB,      q = c_B - J_BF J_FF^{-1} c_F

    which needs ``J_FF`` nonsingular. ``invert(z_B)`` returns the full ``x``.
    """
    _check_program(prog, "to_lcp")
    mcp, fun = _structure(prog, "lcp", _lcp_structure)
    p0 = prog.p0
    if p0.size:
        mcp = copy.copy(mcp)
        mcp.p0 = p0
    Jn, cn = fun(np.zeros(mcp.z.shape[0]), p0)
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


def _structure(prog: Program, key: str, build: Callable[[Program], Any]) -> Any:
    """``build(prog)`` (the symbolic part of a reduction, a refusal included), cached on ``prog``
    until its structure or its variable bounds change; parameter values may change in between
    (a time-stepping step reuses its Program with the state as parameters)."""
    bounds = (prog.lbx, prog.ubx)
    hit = prog._cache.get(f"reduction/{key}")
    if hit is None or not all(np.array_equal(a, b) for a, b in zip(hit[0], bounds)):
        try:
            out: Any = build(prog)
        except UnsupportedProgramError as exc:
            out = exc
        hit = prog._cache[f"reduction/{key}"] = (bounds, out)
    if isinstance(hit[1], UnsupportedProgramError):
        raise UnsupportedProgramError(str(hit[1]))
    return hit[1]


def _lcp_structure(prog: Program) -> tuple[MCPReduction, ca.Function]:
    """The MCP of ``prog`` and the compiled ``(J, F(0))`` of its ``F`` as a function of ``(z, p)``."""
    mcp = to_mcp(prog)
    zs, F = mcp.z, mcp.F_expr
    J = ca.jacobian(F, zs)
    if ca.depends_on(J, zs):
        rows = [i for i in range(F.shape[0]) if ca.depends_on(J[i, :], zs)]
        raise UnsupportedProgramError(
            "F is not affine in the variables (an LCP needs F(z) = M z + q); nonlinear rows: "
            + ", ".join(mcp.labels[i] for i in rows[:5]) + (" ..." if len(rows) > 5 else "")
        )
    return mcp, ca.Function("lcp_data", [zs, prog.p], [J, ca.substitute(F, zs, ca.DM.zeros(zs.shape[0]))])


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

    def motion_map(self, handle: Any, name: str | None = None) -> MotionMap:
        """The program variables ``x[handle.index]`` (a :class:`~contactmp.program.Variables` handle,
        e.g. a step block's ``v_next``; or an index array into ``x``) as ``A z + b`` of the LCP's
        ``z``: what :meth:`invert` computes, ``x_B = z``, ``x_F = -(S_B z + S_c)``, ``x_X`` fixed."""
        idx = _variable_index(handle, self.mcp.n_x)
        n = self.basis.size
        A = np.zeros((self.mcp.n, n))
        b = np.zeros(self.mcp.n)
        A[self.basis, np.arange(n)] = 1.0
        b[self.fixed] = self.fixed_values
        A[self.free] = -self.free_gain
        b[self.free] = -self.free_offset
        return MotionMap(A[idx], b[idx], name or getattr(handle, "name", "x[index]"))



class ConeReduction:
    """``fc3d(W, q, mu)`` (``associated=False``) or the cone LCP (``associated=True``) of a program,
    from :func:`to_cone_problem`; ``r`` and ``u = W r + q`` are ``3 n_c``, per contact ``(n, t, o)``.

    Planar contacts (a 2-entry cone) get a decoupled dummy ``o`` row: ``W_oo = w`` (the largest
    ``t`` diagonal entry, at least 1e-12) and ``q_o = 0``, for which every solution has ``r_o = 0``
    (sliding: ``r_o (1 + mu r_n w / ||u_T||) = 0``; sticking: ``u_o = w r_o = 0``), so the answer is
    the exact 2-D cone; :meth:`invert` drops it. ``invert(r)`` gives the program's full ``x``: the
    other variables from the eliminated equalities, and the disk-form variables ``w``, ``gamma`` of
    every cone from ``r`` and ``u``.
    """

    def __init__(self, *, W: np.ndarray, q: np.ndarray, mu: np.ndarray, associated: bool, n_x: int,
                 r_index: np.ndarray, planar: np.ndarray, other: np.ndarray, other_gain: np.ndarray,
                 other_offset: np.ndarray, cones: tuple[ConeComplementarity, ...]) -> None:
        self.W, self.q, self.mu, self.associated = W, q, mu, associated
        self.n_x, self.r_index, self.planar = n_x, r_index, planar
        self.other, self.other_gain, self.other_offset, self.cones = other, other_gain, other_offset, cones

    @property
    def n_c(self) -> int:
        """Number of contacts."""
        return int(self.mu.size)

    def invert(self, r: Any) -> np.ndarray:
        """The program's ``x`` from a solution ``r`` (``3 n_c``) of the reduced problem."""
        rv = np.asarray(r, dtype=float).ravel()
        if rv.shape != (3 * self.n_c,):
            raise InputError("r", f"must have length {3 * self.n_c}, got shape {rv.shape}")
        rv = rv.copy()
        rv[2::3][self.planar] = 0.0
        u = self.W @ rv + self.q
        x = np.zeros(self.n_x)
        keep = self.r_index >= 0
        x[self.r_index[keep]] = rv[keep]
        x[self.other] = -(self.other_gain @ rv + self.other_offset)
        j = 0
        for cone in self.cones:
            n, m = cone.size, cone.dim - 1
            rc, uc, mu = rv[3 * j:3 * (j + n)].reshape(n, 3), u[3 * j:3 * (j + n)].reshape(n, 3), self.mu[j:j + n]
            ut = uc[:, 1:1 + m]
            gamma = np.linalg.norm(ut, axis=1)
            push = mu * rc[:, 0]
            # in contact (mu r_n > 0): r_T = mu r_n w, whether sticking or sliding; separated: the
            # direction of the slip (|w| = 1), or 0 when the contact does not move
            w = np.where(push[:, None] > 0, rc[:, 1:1 + m] / np.where(push > 0, push, 1.0)[:, None],
                         -ut / np.where(gamma > 0, gamma, np.inf)[:, None])
            x[cone.gamma.index] = gamma
            x[cone.w.index] = w.T.ravel()  # (w_t of all contacts, then w_o)
            j += n
        return x

    def motion_map(self, handle: Any, name: str | None = None) -> MotionMap:
        """The program variables ``x[handle.index]`` (a :class:`~contactmp.program.Variables` handle,
        e.g. a step block's ``v_next``; or an index array into ``x``) as ``A r + b`` of the reduced
        problem's ``r``: the variables outside the cones are ``y = -(gain r + offset)``, the cones'
        ``r`` are ``r`` (a planar contact's dummy ``r_o`` maps to no variable). The cones' disk variables ``w``,
        ``gamma`` are not affine in ``r`` and are refused (:class:`InputError`)."""
        idx = _variable_index(handle, self.n_x)
        n = 3 * self.n_c
        A = np.full((self.n_x, n), np.nan)
        b = np.full(self.n_x, np.nan)
        keep = np.flatnonzero(self.r_index >= 0)
        A[self.r_index[keep]] = 0.0
        b[self.r_index[keep]] = 0.0
        A[self.r_index[keep], keep] = 1.0
        A[self.other] = -self.other_gain
        b[self.other] = -self.other_offset
        if not np.isfinite(A[idx]).all():
            raise InputError("handle", "selects a cone's disk variables (w, gamma), which are not affine in r")
        return MotionMap(A[idx], b[idx], name or getattr(handle, "name", "x[index]"))


def _variable_index(handle: Any, n_x: int) -> np.ndarray:
    """The positions in ``x`` of a Variables handle (its ``index`` slice) or of an index array."""
    index = getattr(handle, "index", handle)
    if isinstance(index, slice):
        return np.arange(n_x)[index]
    try:
        idx = np.asarray(index, dtype=int).ravel()
    except (TypeError, ValueError):
        raise InputError("handle", "must be a Variables handle or an index array, "
                                   f"got {type(handle).__name__}") from None
    if idx.size and (idx.min() < 0 or idx.max() >= n_x):
        raise InputError("handle", f"indices must lie in [0, {n_x}), got {idx.min()}..{idx.max()}")
    return idx


def to_cone_problem(prog: Program) -> ConeReduction:
    """The cone problem of ``prog`` when its complementarity is Coulomb's law only.

    Accepted: no objective; at least one :class:`~contactmp.program.ConeComplementarity`, all with
    the same ``associated``; no pair and no inequality row outside the cones' disk forms; the
    variables outside the cones free, as many as the equality rows outside the cones; those rows
    and the cones' ``u`` affine in ``x``. With the equalities ``A_y y + A_r r + e = 0`` (``y`` the
    other variables) and ``u = C_y y + C_r r + c``, the free ``y`` are eliminated (``A_y``
    nonsingular)::

        y = -A_y^{-1} (A_r r + e),    W = C_r - C_y A_y^{-1} A_r,    q = c - C_y A_y^{-1} e

    (a velocity step: ``y = v+``, ``A_y = M``, ``A_r = -J^T``, so ``W = J M^-1 J^T``, the Delassus
    matrix, and ``q = J v_free`` plus the gap term). ``W`` is symmetrized when it is symmetric to
    1e-10 relative (it is in exact arithmetic for every velocity step).
    """
    _check_program(prog, "to_cone_problem")
    st = _structure(prog, "cone", _cone_structure)
    rows, r_index, other, fun = st.rows, st.r_index, st.other, st.fun
    zero = np.zeros(prog.n_x)
    JEn, e0, JUn, c0 = (np.asarray(ca.DM(v).full(), dtype=float) for v in fun(zero, prog.p0))
    e0, c0 = e0.ravel(), c0.ravel()
    R = np.flatnonzero(r_index >= 0)
    A_r = np.zeros((len(rows), r_index.size))
    C_r = np.zeros((r_index.size, r_index.size))
    A_r[:, R], C_r[:, R] = JEn[:, r_index[R]], JUn[:, r_index[R]]
    A_y, C_y = JEn[:, other], JUn[:, other]
    if other.size:
        try:
            S = np.linalg.solve(A_y, np.column_stack([A_r, e0]))
        except np.linalg.LinAlgError:
            raise UnsupportedProgramError("the equalities do not determine the variables outside the cones "
                                          "(singular Jacobian)") from None
        gain, offset = S[:, :-1], S[:, -1]
        W = C_r - C_y @ gain
        q = c0 - C_y @ offset
    else:
        gain, offset = np.zeros((0, r_index.size)), np.zeros(0)
        W, q = C_r, c0
    if not (np.isfinite(W).all() and np.isfinite(q).all()):
        raise UnsupportedProgramError("W or q is not finite at the current parameter values")
    if np.abs(W - W.T).max(initial=0.0) <= 1e-10 * np.abs(W).max(initial=0.0):
        W = 0.5 * (W + W.T)
    planar_ = st.planar.copy()
    if planar_.any():  # decoupled dummy o rows (r_o = 0 at every solution)
        o = 3 * np.flatnonzero(planar_) + 2
        w_dummy = max(float(np.max(np.diag(W)[1::3], initial=0.0)), 1e-12)
        W[o, :] = 0.0
        W[:, o] = 0.0
        W[o, o] = w_dummy
        q[o] = 0.0
    return ConeReduction(W=W, q=q, mu=st.mu.copy(), associated=st.associated, n_x=prog.n_x, r_index=r_index,
                         planar=planar_, other=other, other_gain=gain, other_offset=offset, cones=prog.cones)


@dataclass(frozen=True)
class _ConeStructure:
    """The symbolic part of :func:`to_cone_problem`: which rows and variables play which role, and
    the compiled ``(J_E, E(0), J_U, U(0))`` as a function of ``(x, p)``."""

    rows: list[int]
    r_index: np.ndarray
    other: np.ndarray
    planar: np.ndarray
    mu: np.ndarray
    associated: bool
    fun: ca.Function


def _cone_structure(prog: Program) -> _ConeStructure:
    """See :func:`to_cone_problem` (what it accepts) and :class:`_ConeStructure`."""
    cones = prog.cones
    if not cones:
        raise UnsupportedProgramError("the program has no cone complementarity (Program.add_cone_complementarity)")
    if prog.has_objective:
        raise UnsupportedProgramError("a cone complementarity problem has no objective, but this program's depends on x")
    kinds = {c.associated for c in cones}
    if len(kinds) > 1:
        raise UnsupportedProgramError("the program mixes Coulomb and associated cones")
    own_pairs = {id(h) for c in cones for h in (c.normal, c.disk)}
    own_rows = {id(h) for c in cones for h in (c.friction, c.direction)}
    for h in prog.complementarities:
        if id(h) not in own_pairs:
            raise UnsupportedProgramError(f"the pair '{h.name}' belongs to no cone; a cone problem has no other pairs")
    rows = []
    for h in prog.constraints:
        if id(h) in own_rows:
            continue
        if not np.array_equal(h.lb, h.ub):
            raise UnsupportedProgramError(f"constraint '{h.name}' is not an equality")
        rows.extend(range(h.index.start, h.index.stop))
    n_x = prog.n_x
    r_entries, u_parts, mus, planar = [], [], [], []
    own_vars = np.zeros(n_x, dtype=bool)
    for c in cones:
        own_vars[c.w.index] = own_vars[c.gamma.index] = True
        for i in range(c.size):
            idx = [prog.variable_index(part[i]) for part in c.r]
            u_parts.extend(part[i] for part in c.u)
            if c.dim == 2:
                idx.append(-1)
                u_parts.append(ca.SX(0.0))
            r_entries.extend(idx)
            planar.append(c.dim == 2)
        mus.append(np.asarray(ca.DM(ca.evalf(c.mu)) if isinstance(c.mu, ca.SX) else c.mu, dtype=float).ravel())
    r_index = np.array(r_entries, dtype=int)
    own_vars[r_index[r_index >= 0]] = True
    other = np.flatnonzero(~own_vars)
    lbx, ubx = prog.lbx, prog.ubx
    bounded = [j for j in other if not is_free(lbx[j], ubx[j])]
    if bounded:
        raise UnsupportedProgramError(f"variable {prog._x_labels()[bounded[0]]} is bounded but in no cone")
    if len(rows) != other.size:
        raise UnsupportedProgramError(f"{other.size} variables outside the cones but {len(rows)} equality rows")
    x = prog.x
    E = prog.g[rows] - ca.DM(prog.lbg[rows]) if rows else ca.SX(0, 1)
    U = ca.vertcat(*u_parts)
    JE, JU = ca.jacobian(E, x), ca.jacobian(U, x)
    if ca.depends_on(JE, x) or ca.depends_on(JU, x):
        raise UnsupportedProgramError("the equality rows or the cones' velocities are not affine in x")
    zero = np.zeros(n_x)
    fun = ca.Function("cone_data", [x, prog.p], [JE, ca.substitute(E, x, zero), JU, ca.substitute(U, x, zero)])
    return _ConeStructure(rows, r_index, other, np.array(planar, dtype=bool), np.concatenate(mus), kinds.pop(), fun)


#: the reductions the solver front door tries, in order: name -> function (each refuses with the reason)
REDUCTIONS: dict[str, Callable[[Program], Any]] = {"lcp": to_lcp, "cone": to_cone_problem}


def refusal(name: str, prog: Program) -> str | None:
    """Why the reduction ``name`` of :data:`REDUCTIONS` does not take ``prog`` (None: it does)."""
    try:
        REDUCTIONS[name](prog)
    except UnsupportedProgramError as exc:
        return str(exc)
    return None
