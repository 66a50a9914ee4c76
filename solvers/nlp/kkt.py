"""Parametric sensitivity of a Program's solution from its KKT system (contact-implicit trajectory
optimization: how the optimal trajectory moves with the goal, the initial state or a parameter).

At a verified solution ``x*`` of an MPCC (a :class:`~contactmp.program.Program` with an objective,
rows ``lbg <= g <= ubg``, bounds and pairs ``0 <= a _|_ b >= 0``) the *active set* is read off:
fixed and active variable bounds, equality and active inequality rows, and for each pair the side
that is zero (both sides at a biactive pair: the tightened NLP of Scheel and Scholtes, and the pair is
flagged). On it the MPCC is locally the equality-constrained NLP ``min f(x, p)`` s.t. ``c(x, p, b) = 0``
(``b`` the values of the active bounds), whose KKT conditions

    grad_x f + A^T lambda = 0,     c = 0,                     A = dc/dx

have multipliers ``lambda`` found by least squares at ``x*`` (the *stationarity residual*
``||grad f + A^T lambda||_inf`` says how well ``x*`` is a KKT point of that NLP; an elastic-l1
answer need not be B-stationary, and then the residual is large and the result is flagged).
Differentiating the KKT system (Fiacco's theorem) gives, with ``H`` the Hessian of the Lagrangian,

    [H  A^T] [dx     ]     [H_xp dp                ]
    [A   0 ] [dlambda] = - [c_p dp + c_b db        ]

solved with one sparse LU for all right-hand sides (a singular system, where the active set fails
LICQ or second-order sufficiency, is solved by least squares and flagged). The multipliers' signs
are checked on the active inequalities (``L = f + lambda^T c``: a lower bound or an inequality row at
its lower end needs ``lambda <= 0``, an upper one ``lambda >= 0``, both sides of a biactive pair
``lambda <= 0``, strong stationarity; a side zero against a positive partner is an equality): a
wrong sign means ``x`` is no strongly stationary point of its active set, a zero one a weakly active
constraint (the derivative holds the active set: one-sided); both are flagged. The check needs
unique multipliers: it is made only when the KKT matrix is nonsingular (a singular one is flagged
anyway: where LICQ fails, at biactive pairs, the least-squares multipliers are one choice of many).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import casadi as ca
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import ArrayLike

from contactmp.errors import InputError
from contactmp.program import Program
from contactmp.solvers.nlp.stationarity import csr_rows

__all__ = ["KKTSensitivity", "kkt_sensitivity"]


@dataclass
class KKTSensitivity:
    """The linearized KKT system of a Program's solution (:func:`kkt_sensitivity`)."""

    x: np.ndarray
    multipliers: np.ndarray          #: ``lambda`` of the active constraints, in ``active`` order
    active: list[str]                #: what each active constraint is (``"bound x[i]"``, ``"row g[j]"``, ``"pair a[k]"``)
    stationarity: float              #: ``||grad f + A^T lambda||_inf / max(1, ||grad f||_inf)``
    biactive: list[int]              #: the pairs with both sides zero (both held at zero)
    open_pairs: list[int]            #: pairs with neither side zero (x is not complementary there)
    singular: bool
    #: active inequalities (bounds, inequality rows, biactive pairs' sides) whose multiplier has the
    #: wrong sign: x is no strongly stationary point of its active set, which would change
    wrong_sign: list[str] = field(default_factory=list)
    #: active inequalities whose multiplier is zero (to ``tol``): weakly active, the derivative is
    #: that of the active set held, one-sided where the constraint would leave it
    weakly_active: list[str] = field(default_factory=list)
    _K: Any = field(repr=False, default=None)
    _lu: Any = field(repr=False, default=None)
    _Hxp: np.ndarray = field(repr=False, default=None)
    _cp: np.ndarray = field(repr=False, default=None)
    _bound_rows: dict[int, int] = field(repr=False, default_factory=dict)
    _row_rows: dict[int, int] = field(repr=False, default_factory=dict)

    @property
    def flagged(self) -> bool:
        """True when a pair is biactive or not complementary, the KKT matrix is singular, ``x`` is
        no KKT point of its active-set NLP (stationarity residual above 1e-6), or an active
        inequality's multiplier has the wrong sign or is zero (``wrong_sign``, ``weakly_active``)."""
        return (bool(self.biactive) or bool(self.open_pairs) or self.singular or self.stationarity > 1e-6
                or bool(self.wrong_sign) or bool(self.weakly_active))

    def _solve(self, rhs: np.ndarray) -> np.ndarray:
        if self._lu is not None:
            return self._lu.solve(rhs)
        return np.linalg.lstsq(self._K.toarray(), rhs, rcond=None)[0]

    def _rhs(self) -> np.ndarray:
        return np.zeros((self._K.shape[0], 0))

    def dx_dp(self) -> np.ndarray:
        """``dx*/dp`` for the Program's parameters (``n_x x n_p``)."""
        n = self.x.size
        rhs = -np.vstack([self._Hxp, self._cp])
        return self._solve(rhs)[:n]

    def dx_dbounds(self, indices: Sequence[int]) -> np.ndarray:
        """``dx*/db`` for the bound values of the variables ``indices`` (each must be fixed or at an
        active bound; ``n_x x len(indices)``): how the solution moves with, e.g., a goal state."""
        return self._dx_d(indices, self._bound_rows, "indices", "variable")

    def dx_drows(self, rows: Sequence[int]) -> np.ndarray:
        """``dx*/db`` for the bound values of the rows ``rows`` of ``g`` (equality or active; e.g.
        the initial-state rows of a trajectory optimization)."""
        return self._dx_d(rows, self._row_rows, "rows", "row")

    def _dx_d(self, which: Sequence[int], table: dict[int, int], name: str, what: str) -> np.ndarray:
        n = self.x.size
        rhs = np.zeros((self._K.shape[0], len(which)))
        for col, i in enumerate(which):
            r = table.get(int(i))
            if r is None:
                raise InputError(name, f"{what} {i} is not held at a bound at this solution (not in the active set)")
            rhs[n + r, col] = 1.0  # c = x_i - b_i (or g_j - b_j): dc/db = -1, moved to the right-hand side
        return self._solve(rhs)[:n]


def kkt_sensitivity(prog: Program, x: ArrayLike, p: ArrayLike | None = None, *, tol: float = 1e-7) -> KKTSensitivity:
    """The KKT sensitivity of the solution ``x`` of ``prog`` at parameters ``p`` (default their
    values); a bound, row or pair side within ``tol`` (relative to ``max(1, |value|)`` of its bound)
    counts as active (module docstring)."""
    xv = np.asarray(x, dtype=float).ravel()
    if xv.shape != (prog.n_x,) or not np.isfinite(xv).all():
        raise InputError("x", f"must be {prog.n_x} finite numbers, got shape {xv.shape}")
    pv = prog.p0 if p is None else np.asarray(p, dtype=float).ravel()
    ev = prog.evaluate(xv, pv)
    X, P = prog.x, prog.p
    sides = set()
    for e in ca.vertsplit(ca.vertcat(prog.comp_a, prog.comp_b)):
        i = prog.variable_index(e)
        if i is not None:
            sides.add(i)
    cons: list[ca.SX] = []
    active: list[str] = []
    sign: list[int] = []  # per active constraint: -1 (a lower bound: lambda <= 0), +1 (upper), 0 (free)
    bound_rows: dict[int, int] = {}
    row_rows: dict[int, int] = {}
    lbx, ubx = prog.lbx, prog.ubx
    for i in range(prog.n_x):
        if i in sides and not (lbx[i] == ubx[i]):
            continue  # a pair side: the pair decides
        for bnd, sgn in ((lbx[i], -1), (ubx[i], 1)):
            if np.isfinite(bnd) and abs(xv[i] - bnd) <= tol * max(1.0, abs(bnd)):
                bound_rows[i] = len(cons)
                cons.append(X[i] - float(bnd))
                active.append(f"bound x[{i}]")
                sign.append(0 if lbx[i] == ubx[i] else sgn)
                break
    g, lbg, ubg = prog.g, prog.lbg, prog.ubg
    for j in range(prog.n_g):
        for bnd, sgn in ((lbg[j], -1), (ubg[j], 1)):
            if np.isfinite(bnd) and abs(ev["g"][j] - bnd) <= tol * max(1.0, abs(bnd)):
                row_rows[j] = len(cons)
                cons.append(g[j] - float(bnd))
                active.append(f"row g[{j}]")
                sign.append(0 if lbg[j] == ubg[j] else sgn)
                break
    a, b = ev["a"], ev["b"]
    biactive, open_pairs = [], []
    for k in range(prog.n_comp):
        za, zb = a[k] <= tol, b[k] <= tol
        if za and zb:
            biactive.append(k)
        elif not (za or zb):
            open_pairs.append(k)  # neither side zero: x is not complementary there
        if za:  # a = 0 with b > 0 is locally an equality (free multiplier); at a biactive pair both
            cons.append(prog.comp_a[k])  # sides are inequalities (strong stationarity: lambda <= 0)
            active.append(f"pair a[{k}]")
            sign.append(-1 if zb else 0)
        if zb:
            cons.append(prog.comp_b[k])
            active.append(f"pair b[{k}]")
            sign.append(-1 if za else 0)
    c = ca.vertcat(*cons) if cons else ca.SX(0, 1)
    m, n = c.shape[0], prog.n_x
    f = prog.f
    fun = ca.Function("kkt_first", [X, P], [ca.gradient(f, X), ca.jacobian(c, X)])
    grad_f, A = fun(xv, pv)
    grad = np.asarray(grad_f, dtype=float).ravel()
    A_sp = csc_matrix_of(A)
    lam = spla.lsqr(A_sp.T, -grad, atol=1e-14, btol=1e-14, iter_lim=10 * (n + m))[0] if m else np.zeros(0)
    gscale = max(1.0, float(np.abs(grad).max(initial=0.0)))
    stat = float(np.abs(grad + A_sp.T @ lam).max(initial=0.0) / gscale)
    sgn = np.asarray(sign, dtype=float)
    ineq = sgn != 0
    L_sym = ca.SX.sym("lam", m)
    lag = f + ca.dot(L_sym, c)
    gx = ca.gradient(lag, X)
    second = ca.Function("kkt_second", [X, P, L_sym], [ca.jacobian(gx, X), ca.jacobian(gx, P), ca.jacobian(c, P)])
    H, Hxp, cp = second(xv, pv, lam)
    K = sp.bmat([[csc_matrix_of(H), A_sp.T], [A_sp, None]], format="csc") if m else csc_matrix_of(H)
    lu, singular = None, False
    try:
        lu = spla.splu(K)
        if not np.isfinite(lu.U.diagonal()).all() or np.abs(lu.U.diagonal()).min() <= 1e-13 * max(1.0, np.abs(lu.U.diagonal()).max()):
            lu, singular = None, True
    except RuntimeError:  # exactly singular
        singular = True
    wrong_sign, weakly_active = [], []
    if not singular:  # unique multipliers (a singular KKT matrix, e.g. LICQ failing at biactive pairs, has many)
        wrong_sign = [active[i] for i in np.flatnonzero(ineq & (sgn * lam < -tol * gscale))]
        weakly_active = [active[i] for i in np.flatnonzero(ineq & (np.abs(lam) <= tol * gscale))]
    return KKTSensitivity(xv, lam, active, stat, biactive, open_pairs, singular, wrong_sign, weakly_active, K, lu,
                          np.asarray(ca.DM(Hxp), dtype=float), np.asarray(ca.DM(cp), dtype=float), bound_rows, row_rows)


def csc_matrix_of(M: Any) -> sp.csc_matrix:
    """A CasADi DM (its sparsity kept) as a SciPy CSC matrix."""
    return csr_rows(ca.DM(M)).tocsc()
