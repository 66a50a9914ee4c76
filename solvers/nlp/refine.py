"""Refining a verified MPCC point by Newton's method on its active pieces.

IPOPT stops an MPCC's last NLP at its tolerances: rows and pairs hold to about 1e-8 (scaled), and
an accepted point may be off by up to ``feas_tol``. For a trajectory that is to be *replayed*
step by step through a simulator, this is not enough: a time step whose solution is
ill-conditioned turns a residual of 1e-7 into a velocity error of 1e-6 to 1e-5 (Solo12 walks).

At a point ``x`` the *active pieces* are the equations

    g_i(x) = lbg_i = ubg_i                      (equality rows)
    g_i(x) = lbg_i  or  ubg_i                   (inequality rows beyond a bound, or driven beyond it by a step)
    x_j = lbx_j  or  ubx_j                      (variables beyond a bound, or driven beyond it by a step)
    a_i(x) = 0  where a_i <= b_i, else b_i(x) = 0                  (pairs: the smaller side)

``F(x) = 0``, fewer equations than variables in a trajectory optimization. Each iteration takes
the minimum-norm correction ``dx = -A^T (A A^T + delta I)^{-1} F`` (``A = dF/dx``, a Levenberg-
Marquardt step on the dual with ``delta`` a tiny multiple of the largest diagonal, so repeated
equations -- a pair side that is also a variable at its bound -- do no harm). When the step drives
the free side of a pair negative, the pair is not on the piece chosen, and the step is taken again
with both its sides fixed (a biactive solution), then with its other side (at most
:data:`MAX_PIECE_SWAPS` times). A pair is not fixed on both sides from the start because its
sides are both small: IPOPT's answer of a Solo12 step had a disk pair at (3e-10, 0) whose
solution is (1.06e-5, 0), and with both sides fixed the refinement stalled at residual 4.9e-8,
1.2e-5 from the solution. For the same reason an inequality row or a bound is fixed only once it
is violated, at the start or by a step (which is then taken again): a bound within 1e-6 is not
active for that alone. A sagittal Solo12 step's NLP answer had a friction pair at (0, 0) whose
solution is (0, 5.5e-5), its second side a variable at its bound 0; fixing that bound as well
as the pair's first side left 30 equations in 27 unknowns that no step could satisfy, 2.1e-4 from
the solution, and with the bound free the refinement lands on it (4e-14). A step is kept when it
lowers the merit -- the largest violation of a row, a bound or a pair, ``|min(a_i, b_i)|``, which does not
depend on the pieces -- and the iteration ends at rounding (``4 eps max(1, |x|)``) or when the
merit stops falling. The point moves by about the residuals it removes (1e-7), so its objective
changes by about as much; the refined point is kept only when the independent residuals
(:meth:`~contactmp.program.Program.residuals`: rows, bounds, pairs) are lower than before.

The Jacobian of the rows is the one IPOPT used (:mod:`contactmp.solvers.structured` for a program
with stage groups: one copy of each stage's derivatives; CasADi's whole-program derivative
otherwise); the pair sides' Jacobian is CasADi's (they are variables or short expressions).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import casadi as ca
import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from contactmp.errors import InputError
from contactmp.program import Program, largest_residual
from contactmp.solvers.nlp.kkt import csc_matrix_of

__all__ = ["Refinement", "refine_on_pieces"]

#: ``delta`` of the dual Levenberg-Marquardt step, relative to the largest diagonal entry of ``A A^T``
DUAL_REGULARIZATION = 1e-14
#: how many times a refinement may take a Newton step again with other pieces: the pairs it drives
#: to a negative side moved to their next piece, the inequality rows and bounds it violates fixed
MAX_PIECE_SWAPS = 4


@dataclass(frozen=True)
class Refinement:
    """The outcome of :func:`refine_on_pieces`: the point ``x`` (the refined one when ``accepted``,
    else the given one) and its independent ``residuals`` (:meth:`Program.residuals`), ``before`` and ``after`` the largest independent residual (rows, bounds,
    pairs) at the given and the refined point, ``objective_change`` ``f(refined) - f(given)``,
    ``step`` ``max |refined - given|``, ``iterations`` the Newton steps taken, ``equations`` the
    number of active equations (of the last step) and ``swaps`` how often a step was taken again
    with other pieces (pairs moved to their next piece, violated rows or bounds fixed)."""

    x: np.ndarray
    residuals: dict[str, float]
    accepted: bool
    before: float
    after: float
    objective_change: float
    step: float
    iterations: int
    equations: int
    swaps: int = 0

    def summary(self) -> dict[str, Any]:
        """The numbers of this refinement (JSON-ready), without ``x`` and ``residuals``."""
        return {"accepted": self.accepted, "before": self.before, "after": self.after,
                "objective_change": self.objective_change, "step": self.step,
                "iterations": self.iterations, "equations": self.equations, "swaps": self.swaps}


def _functions(prog: Program, derivatives: str) -> tuple[ca.Function, ca.Function]:
    """``(x, p) -> (g, dg/dx)`` and ``(x, p) -> (a, b, da/dx, db/dx)``, kept on the Program."""
    from contactmp.solvers.structured import resolve_derivatives, stage_derivatives

    key = f"refine/{derivatives}"
    hit = prog._cache.get(key)
    if hit is None:
        mode = resolve_derivatives(prog, derivatives)
        stages = stage_derivatives(prog, jit=mode == "stages_jit") if mode != "full" else None
        rows = stages.jac_g if stages is not None else ca.Function(
            "refine_rows", [prog.x, prog.p], [prog.g, ca.jacobian(prog.g, prog.x)])
        a, b = prog.comp_a, prog.comp_b
        pairs = ca.Function("refine_pairs", [prog.x, prog.p], [a, b, ca.jacobian(a, prog.x), ca.jacobian(b, prog.x)])
        hit = prog._cache[key] = (rows, pairs)
    return hit


def refine_on_pieces(prog: Program, x: Any, p: Any = None, *, max_iter: int = 8,
                     derivatives: str = "auto") -> Refinement:
    """Newton's method on the active pieces of the MPCC point ``x`` of ``prog`` (module docstring):
    the minimum-norm correction onto the equality rows, the inequality rows and bounds that are
    violated (at ``x`` or by a step), and the pair sides, at most ``max_iter`` steps. ``derivatives`` is
    :attr:`~contactmp.solvers.nlp.solve.NLPOptions.derivatives` (how the rows' Jacobian is built).
    Returns a :class:`Refinement`; ``x`` there is the refined point only when its independent
    residuals are lower than the given point's. A cone complementarity constraint
    (:meth:`~contactmp.program.Program.add_cone_complementarity`) is its rows and pairs here."""
    x0 = np.asarray(x, dtype=float).ravel()
    if x0.shape != (prog.n_x,) or not np.isfinite(x0).all():
        raise InputError("x", f"must be {prog.n_x} finite numbers")
    pv = prog.p0 if p is None else np.asarray(p, dtype=float).ravel()
    rows_fn, pairs_fn = _functions(prog, derivatives)
    lbg, ubg, lbx, ubx = prog.lbg, prog.ubg, prog.lbx, prog.ubx
    n = prog.n_x

    def evaluate(xv: np.ndarray) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray, Any, Any, float]:
        """Rows, their Jacobian, pair sides, their Jacobians, and the merit: the largest violation
        of an equality row, an inequality row, a bound, or a pair (``|min(a, b)|``), which does
        not depend on the pieces."""
        g, jg = rows_fn(xv, pv)
        g = np.asarray(g, dtype=float).ravel()
        a, b, ja, jb = pairs_fn(xv, pv)
        a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
        merit = max(float(np.max(np.maximum(lbg - g, g - ubg), initial=0.0)),
                    float(np.max(np.maximum(lbx - xv, xv - ubx), initial=0.0)),
                    float(np.max(np.abs(np.minimum(a, b)), initial=0.0)))
        return g, jg, a, b, ja, jb, merit

    def system(xv: np.ndarray, ev: tuple, row_target: np.ndarray, bound_target: np.ndarray, take_a: np.ndarray,
               take_b: np.ndarray) -> tuple[np.ndarray, sp.csr_matrix]:
        """``F`` and ``A = dF/dx`` of the rows and bounds fixed at ``row_target`` / ``bound_target``
        (nan: free) and the given pair sides."""
        g, jg, a, b, ja, jb, _ = ev
        on_g, fixed = np.isfinite(row_target), np.flatnonzero(np.isfinite(bound_target))
        F = np.concatenate([g[on_g] - row_target[on_g], xv[fixed] - bound_target[fixed], a[take_a], b[take_b]])
        A = sp.vstack([csc_matrix_of(jg)[on_g], sp.csr_matrix((np.ones(fixed.size), (np.arange(fixed.size), fixed)), shape=(fixed.size, n)),
                       csc_matrix_of(ja)[take_a], csc_matrix_of(jb)[take_b]]).tocsr()
        return F, A

    def crossed(value: np.ndarray, lower: np.ndarray, upper: np.ndarray, slack: float) -> np.ndarray:
        """The bound each entry of ``value`` lies beyond by more than ``slack`` (nan: none)."""
        return np.where(value < lower - slack, lower, np.where(value > upper + slack, upper, np.nan))

    def pieces_of(first_a: np.ndarray, stage: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The sides fixed at 0 of each pair: at stage 0 the side that was the smaller one
        (``first_a``: a), at stage 1 both, at stage 2 the other one."""
        return (np.where(stage == 0, first_a, np.where(stage == 1, True, ~first_a)),
                np.where(stage == 0, ~first_a, np.where(stage == 1, True, first_a)))

    def newton_step(F: np.ndarray, A: sp.csr_matrix) -> np.ndarray | None:
        AAt = (A @ A.T).tocsc()
        delta = DUAL_REGULARIZATION * max(float(AAt.diagonal().max(initial=0.0)), 1.0)
        try:
            return -(A.T @ splu((AAt + delta * sp.identity(AAt.shape[0], format="csc")).tocsc()).solve(F))
        except RuntimeError:  # an exactly singular factor despite the regularization
            return None

    r0 = prog.residuals(x0, pv)
    before = largest_residual(r0)
    xv = x0.copy()
    ev = evaluate(xv)
    taken, flips = 0, 0
    rounding = 4 * np.finfo(float).eps * max(1.0, float(np.abs(x0).max(initial=0.0)))
    first_a, stage = ev[2] <= ev[3], np.zeros(ev[2].size, dtype=int)
    # equality rows always; an inequality row or a bound only once it is violated (at an iterate or
    # by a trial step), at the bound it crossed
    row_target, bound_target = np.where(lbg == ubg, lbg, np.nan), np.full(n, np.nan)
    n_eq = 0
    while taken < max_iter and ev[6] > rounding:
        row_target = np.where(np.isfinite(row_target), row_target, crossed(ev[0], lbg, ubg, 0.0))
        bound_target = np.where(np.isfinite(bound_target), bound_target, crossed(xv, lbx, ubx, 0.0))
        take_a, take_b = pieces_of(first_a, stage)
        F, A = system(xv, ev, row_target, bound_target, take_a, take_b)
        n_eq = F.size
        dx = newton_step(F, A)
        if dx is None:
            break
        trial = xv + dx
        ev_t = evaluate(trial)
        # a pair whose free side the step drives negative (beyond the present merit) is not on the
        # piece chosen: fix both its sides, then the other one, and take the step again from xv
        slack = max(ev[6], rounding)
        wrong = (take_a & ~take_b & (ev_t[3] < -slack)) | (take_b & ~take_a & (ev_t[2] < -slack))
        row_hit = np.where(np.isfinite(row_target), np.nan, crossed(ev_t[0], lbg, ubg, slack))
        bound_hit = np.where(np.isfinite(bound_target), np.nan, crossed(trial, lbx, ubx, slack))
        if (wrong.any() or np.isfinite(row_hit).any() or np.isfinite(bound_hit).any()) and flips < MAX_PIECE_SWAPS:
            stage = np.where(wrong, np.minimum(stage + 1, 2), stage)
            row_target = np.where(np.isfinite(row_hit), row_hit, row_target)
            bound_target = np.where(np.isfinite(bound_hit), bound_hit, bound_target)
            flips += 1
            continue
        if not ev_t[6] < ev[6]:
            break  # no progress: stop at the last improvement
        xv, ev, taken = trial, ev_t, taken + 1
        first_a = np.where(stage == 0, ev[2] <= ev[3], first_a)  # a pair not yet moved: its smaller side now
    r1 = prog.residuals(xv, pv)
    after = largest_residual(r1)
    accepted = after < before
    return Refinement(x=xv if accepted else x0, residuals=r1 if accepted else r0, accepted=accepted, before=before, after=after,
                      objective_change=float(r1["objective"] - r0["objective"]),
                      step=float(np.abs(xv - x0).max(initial=0.0)), iterations=taken, equations=n_eq, swaps=flips)
