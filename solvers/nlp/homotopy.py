"""The machinery of :func:`contactmp.solvers.nlp.solve.solve_program`'s MPCC homotopy (read that module's
docstring for what it does; this one says how).

* :class:`Engine` -- built once per program, strategy and options and kept in the program's cache:
  the relaxations (:class:`~contactmp.solvers.nlp.mpcc.Relaxation`) and the IPOPT objects of the inner
  NLPs, of the returned NLP and of the pieces.
* :class:`Homotopy` -- one run: the NLPs along the strategy's parameter, the active-set polish of
  each answer (with twin zero sides fixed once, and a retry with one side per pair when IPOPT
  refuses a piece with more equations than variables), the certified stop, the walk along the
  LPEC's descent branches, and the :class:`~contactmp.result.Result`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import casadi as ca
import numpy as np

from contactmp.program import Program
from contactmp.result import Result, Status
from contactmp.solvers.ipopt import IpoptAnswer, IpoptNLP, ipopt_status
from contactmp.solvers.structured import resolve_derivatives, stage_derivatives
from contactmp.solvers.nlp.mpcc import FREE, NONNEG, ZERO, MPCCStrategy, Relaxation, variable_index, relaxation

if TYPE_CHECKING:  # pragma: no cover
    from contactmp.solvers.nlp.solve import NLPOptions

__all__ = ["Engine", "engine", "Homotopy", "Candidate", "Walk", "IPOPT_DEFAULTS", "WARM_RESOLVE", "BIACTIVE_FACTOR",
           "SNAP_TOL"]

#: IPOPT options set unless the caller's ``ipopt`` dict says otherwise
IPOPT_DEFAULTS: dict[str, Any] = {
    "print_level": 0,
    "sb": "yes",
    # the NOSBENCH protocol's settings: no bound relaxation (a >= 0 means a >= 0) and the adaptive
    # barrier update, which halves the iterations of a warm-started homotopy on the shared LCPs
    "bound_relax_factor": 0.0,
    "mu_strategy": "adaptive",
}


#: IPOPT options of the warm re-solve at ``tol`` of an inner NLP's verified answer
#: (``NLPOptions.warm_resolve``): start from the answer's multipliers, keep it (and them) nearly where
#: they are, and start the barrier near where the inner NLP left it (``homotopy_tol`` = 1e-3)
WARM_RESOLVE: dict[str, Any] = {
    "warm_start_init_point": "yes",
    "mu_init": 1e-5,
    "warm_start_bound_push": 1e-9,
    "warm_start_bound_frac": 1e-9,
    "warm_start_slack_bound_push": 1e-9,
    "warm_start_slack_bound_frac": 1e-9,
    "warm_start_mult_bound_push": 1e-9,
}


class Engine:
    """What one (program, strategy, options) solve needs, built once and kept in the program's cache
    (so the starts of a multistart share it): the relaxation ``rel`` of the homotopy, the relaxation
    ``rel_piece`` whose bounds write the pieces (the same object, unless the pairs have no sign
    rows and a side is not a variable: then it adds the free side rows ``mpcc/side_a``,
    ``mpcc/side_b``, kept out of the homotopy's NLP because even a free row changes IPOPT's path),
    the pair sides ``(x, p) -> (a, b)`` and three IPOPT objects, each built on first use:
    ``"loose"`` (``rel``, ``tol = homotopy_tol``, the homotopy's inner NLPs), ``"tight"`` (``rel``,
    ``tol``, ``max_iter``), ``"piece"`` (``rel_piece``, ``tol``, ``max_iter = polish_max_iter``:
    polish and branch steps) and, with ``warm_resolve``, ``"resolve"`` (``rel``, ``tol``,
    :data:`WARM_RESOLVE`: an inner NLP's verified answer solved again from its multipliers). Both
    relaxations have the same variables and parameters."""

    def __init__(self, rel: Relaxation, rel_piece: Relaxation, sides: ca.Function,
                 options: dict[str, dict[str, Any]], backend: str, deadline: bool, derivatives: str = "full") -> None:
        self.rel, self.rel_piece, self.sides, self.options, self.backend = rel, rel_piece, sides, options, backend
        self.derivatives = derivatives  # "full", "stages" or "stages_jit" (NLPOptions.derivatives, resolved)
        self._stoppable = deadline  # IPOPT objects with the stop callback (they take deadlines)
        self._deadline = self._cpu_deadline = math.inf
        self._solvers: dict[str, IpoptNLP] = {}
        self._side_jac: ca.Function | None = None

    def has(self, kind: str) -> bool:
        """Whether the IPOPT object ``kind`` is configured (``"loose"`` only with a homotopy)."""
        return kind in self.options

    def solver(self, kind: str) -> IpoptNLP:
        """The IPOPT object ``kind``, built now if it is the first use."""
        s = self._solvers.get(kind)
        if s is None:
            rel = self.rel_piece if kind == "piece" else self.rel
            derivs = None
            if self.derivatives != "full":
                derivs = stage_derivatives(rel.program, jit=self.derivatives == "stages_jit")
            s = IpoptNLP(rel.program.nlp(), self.options[kind], self.backend, 0.0 if self._stoppable else math.inf,
                         nlpsol=NLPSOL_OPTIONS, derivatives=derivs)
            s.set_deadline(self._deadline, self._cpu_deadline)
            self._solvers[kind] = s
        return s

    def side_jacobians(self, x: np.ndarray, p: np.ndarray) -> tuple[Any, Any]:
        """``d a / d x`` and ``d b / d x`` at ``(x, p)`` as scipy CSR matrices (the Function is built
        on first use)."""
        import scipy.sparse as sp

        if self._side_jac is None:
            prog = self.rel.source
            self._side_jac = ca.Function("side_jac", [prog.x, prog.p],
                                         [ca.jacobian(prog.comp_a, prog.x), ca.jacobian(prog.comp_b, prog.x)])
        out = []
        for m in self._side_jac(x, p):
            colind, row = m.sparsity().get_ccs()
            out.append(sp.csc_matrix((np.asarray(m.nonzeros(), dtype=float), np.asarray(row, dtype=int),
                                      np.asarray(colind, dtype=int)), shape=m.shape).tocsr())
        return out[0], out[1]

    def set_deadline(self, deadline: float, cpu_deadline: float = math.inf) -> None:
        """The wall-clock and CPU deadlines of every IPOPT object, now and when built later."""
        self._deadline, self._cpu_deadline = deadline, cpu_deadline
        for s in self._solvers.values():
            s.set_deadline(deadline, cpu_deadline)


#: a pair is biactive for the polish when max(|a_i|, |b_i|) <= BIACTIVE_FACTOR sqrt(max_j |a_j b_j|)
#: (on a relaxation's answer a degenerate pair has both sides of the order of sqrt(sigma))
BIACTIVE_FACTOR = 2.0

#: how near an active bound (relative to max(1, |bound|)) an IPOPT answer is put on it
SNAP_TOL = 1e-5

#: engines kept per program (least recently used dropped first)
ENGINES_PER_PROGRAM = 8


def engine(prog: Program, strategy: str, o: NLPOptions, backend: str, ipopt: dict[str, Any],
            homotopy: bool, deadline: bool) -> Engine:
    """The cached :class:`Engine` of ``prog`` for these settings (built on first use). The
    program's cache is cleared by every change of its structure; the bounds, start and parameter
    values are read at every solve, so they may change between solves."""
    piece = {**ipopt, "max_iter": int(o.polish_max_iter)}
    if piece.get("linear_solver", "mumps") == "mumps":
        # a piece has many equations (sides fixed at 0 as rows); with MUMPS' default ordering its
        # factorizations took 40-80 ms against 11 ms with METIS on the point mass at N = 400
        piece.setdefault("mumps_pivot_order", 5)
    options = {"tight": ipopt, "piece": piece}
    if homotopy and o.homotopy_tol > o.tol:
        options["loose"] = {**ipopt, "tol": float(o.homotopy_tol)}
        if o.warm_start_duals:
            options["loose"].setdefault("warm_start_init_point", "yes")
        if o.warm_resolve:
            options["resolve"] = {**ipopt, **WARM_RESOLVE}
    side_vars = prog._cache.get("side_variables")
    if side_vars is None:  # (the program's cache is cleared when its structure changes)
        side_vars = prog._cache["side_variables"] = np.array(
            [j for e in (prog.comp_a, prog.comp_b) for j in (variable_index(prog, p) for p in ca.vertsplit(e)) if j >= 0],
            dtype=int)
    # the sign rows that relaxation() leaves out depend on the current lower bounds of the sides
    sign_pattern = (prog.lbx[side_vars] >= 0.0).tobytes() if o.sign_constraints else b""
    derivatives = resolve_derivatives(prog, o.derivatives)
    key = (strategy, o.sign_constraints, o.cone_bounds, o.cone_bound, backend,
           repr(sorted((k, sorted(v.items())) for k, v in options.items())), deadline, sign_pattern, derivatives)
    cache: dict[Any, Engine] = prog._cache.setdefault("solve_program_engines", {})
    eng = cache.pop(key, None)
    if eng is None:
        t0 = 1.0 if strategy == "fischer_burmeister" else 0.0
        rel = relaxation(prog, strategy, t0, sign_constraints=o.sign_constraints, cone_bounds=o.cone_bounds,
                         cone_bound=o.cone_bound)
        rel_piece = rel
        if not o.sign_constraints and ((rel.a_var < 0) | (rel.b_var < 0)).any():
            rel_piece = relaxation(prog, strategy, t0, sign_constraints=False, side_rows=True)
        sides = ca.Function("sides", [prog.x, prog.p], [prog.comp_a, prog.comp_b])
        eng = Engine(rel, rel_piece, sides, options, backend, deadline, derivatives)
    cache[key] = eng  # (re)inserted last: the most recently used
    while len(cache) > ENGINES_PER_PROGRAM:
        cache.pop(next(iter(cache)))
    return eng


#: casadi.nlpsol options of every solver here: no input check (it would warn at every solve of a
#: piece with sides fixed by bounds that "the NLP is overconstrained", more equality rows and fixed
#: variables than variables; the bounds are checked where they are made: Program, piece_bounds)
NLPSOL_OPTIONS: dict[str, Any] = {"inputs_check": False}


@dataclass
class Candidate:
    """A point of the source program (``x``) from one IPOPT answer: its return text ``status``,
    ``ok`` (IPOPT claims convergence), the independent residuals ``res``, what produced it
    (``found_by``: ``"nlp"``, ``"polish"``, ``"accept"``, ``"branch"``) and the point in the NLP's
    own variables (``x_full``, the slack of ``"scholtes_linf"`` included)."""

    x: np.ndarray
    status: str
    ok: bool
    res: dict[str, float]
    found_by: str = "nlp"
    x_full: np.ndarray | None = None  # the point in the NLP's variables (slack included)


class Homotopy:
    """One run of :func:`~contactmp.solvers.nlp.solve.solve_program` for one strategy (its state in one
    place): :meth:`run` gives the :class:`~contactmp.result.Result`."""

    def __init__(self, prog: Program, backend: str, hom: MPCCStrategy, o: NLPOptions,
                 accept: Callable[[np.ndarray], np.ndarray | None] | None, t0: float) -> None:
        self.prog, self.backend, self.hom, self.o, self.accept, self.t0 = prog, backend, hom, o, accept, t0
        self.ipopt = {**IPOPT_DEFAULTS, "tol": float(o.tol), "max_iter": int(o.max_iter), **o.ipopt}
        self.limit = math.inf if o.time_limit is None else float(o.time_limit)
        self.cpu_limit, self.cpu0 = float(o.cpu_time_limit), time.process_time()
        self.ts = hom.homotopy(o) if prog.n_comp else [0.0]  # no pairs: one NLP
        wall = math.isfinite(self.limit) and "max_wall_time" not in o.ipopt
        cpu = math.isfinite(self.cpu_limit) and "max_cpu_time" not in o.ipopt
        self.eng = engine(prog, hom.name, o, backend, self.ipopt, len(self.ts) > 1, wall or cpu)
        self.eng.set_deadline(t0 + self.limit if wall else math.inf, self.cpu0 + self.cpu_limit if cpu else math.inf)
        self.rel = self.eng.rel
        self.bounds = self.rel.bounds()
        self.piece_bounds0 = self.bounds if self.eng.rel_piece is self.rel else self.eng.rel_piece.bounds()
        self.p0 = prog.p0
        self.comp_key = o.comp_key
        self.iterations = 0
        self.history: list[dict[str, Any]] = []
        self.answers: list[tuple[Candidate, dict[str, Any]]] = []  # settled answers and their certificates
        self.pending: list[tuple[Candidate, Any]] = []  # solved answers certified not B-stationary
        self.branch_steps: list[dict[str, Any]] = []  # every branch NLP of every walk of the run
        self.certify_time = 0.0

    # -- checks ----------------------------------------------------------------------------------
    def verified(self, res: dict[str, float]) -> bool:
        """The independent checks: bounds and rows to ``feas_tol``, complementarity to ``comp_tol``."""
        return self.o.verified(res)

    def left(self) -> float:
        """Seconds left of the wall-clock and the CPU budgets, whichever is smaller."""
        return min(self.limit - (time.perf_counter() - self.t0), self.cpu_limit - (time.process_time() - self.cpu0))

    def candidate(self, ans: IpoptAnswer, ok: bool | None = None, found_by: str = "nlp",
                  bounds: tuple[np.ndarray, np.ndarray] | None = None) -> Candidate:
        """The answer ``ans`` as a point of the source with its independent residuals. With the
        variable ``bounds`` of the NLP solved, a variable IPOPT left within ``SNAP_TOL * max(1,
        |bound|)`` of a bound whose multiplier says it is active (CasADi's sign: ``lam_x < 0`` lower,
        ``> 0`` upper) is put on that bound -- an interior-point method stops a distance of order
        ``mu`` inside -- and the snapped point is kept when it passes the checks no worse and does
        not raise ``f``."""
        n = self.prog.n_x
        cand = Candidate(ans.x[:n], ans.status, ans.ok if ok is None else ok, self.prog.residuals(ans.x[:n], self.p0),
                          found_by, ans.x)
        if bounds is None or not np.isfinite(ans.x).all() or not np.isfinite(ans.lam_x).all():
            return cand
        lb, ub = bounds
        with np.errstate(invalid="ignore"):
            lo = (ans.lam_x < 0) & np.isfinite(lb) & (ans.x - lb <= SNAP_TOL * np.maximum(1.0, np.abs(lb))) & (ans.x != lb)
            hi = (ans.lam_x > 0) & np.isfinite(ub) & (ub - ans.x <= SNAP_TOL * np.maximum(1.0, np.abs(ub))) & (ans.x != ub)
        if not (lo.any() or hi.any()):
            return cand
        x_full = np.where(lo, lb, np.where(hi, ub, ans.x))
        res = self.prog.residuals(x_full[:n], self.p0)
        keys = ("bound", "constraint", self.comp_key)
        if all(res[k] <= max(cand.res[k], self.o.feas_tol if k != self.comp_key else 0.0) for k in keys) \
                and res["objective"] <= cand.res["objective"]:
            return Candidate(x_full[:n], ans.status, cand.ok, res, found_by, x_full)
        return cand

    # -- the pieces ------------------------------------------------------------------------------
    def solve_piece(self, x_full: np.ndarray, t: float, a_int: np.ndarray, b_int: np.ndarray,
                    found_by: str) -> tuple[Candidate | None, dict[str, Any]]:
        """The tightened NLP of one piece from ``x_full`` with the tight IPOPT object."""
        rel = self.eng.rel_piece
        twins = self.twin_rows(x_full, a_int, b_int)
        bnd = rel.piece_bounds(a_int, b_int, self.piece_bounds0)
        if bnd is None:
            return None, {"status": "not tried", "reason": "the piece cannot be written with bounds or is empty"}
        ans = self.eng.solver("piece").solve(np.clip(x_full, bnd[0], bnd[1]), rel.p(rel.piece_parameter(t)),
                                             *bnd)
        self.iterations += ans.iterations
        cand = self.candidate(ans, found_by=found_by, bounds=bnd[:2])
        info = {"status": ans.status, "iterations": ans.iterations, **({"twin_rows": twins} if twins else {}),
                **{k: cand.res[k] for k in ("bound", "constraint", self.comp_key, "objective")}}
        return cand, info

    def twin_rows(self, x_full: np.ndarray, a_int: np.ndarray, b_int: np.ndarray) -> int:
        """Keep one of each group of *twin* zero sides as the equation ``= 0`` and give the others
        (in ``a_int``, ``b_int``, in place) the interval of their pair's other reading (``>= 0`` with
        sign constraints, else free); returns how many were given. Twins are sides written as rows
        (not variables) that are the same affine function up to a factor at ``x``: gradients and
        constant terms equal after scaling each row by its largest coefficient, to 1e-9. (A planar
        pyramid's facets repeat a direction with coefficients equal only up to rounding; fixed twice,
        such a row makes the piece's equations rank-deficient, and IPOPT slow: 80 ms against 10 ms
        per iteration on the point mass at N = 400.)"""
        rel = self.eng.rel_piece
        zero_rows = [((ints[:, 0] == 0.0) & (ints[:, 1] == 0.0) & (var < 0), ints)
                     for var, ints in ((rel.a_var, a_int), (rel.b_var, b_int))]
        if sum(int(z.sum()) for z, _ in zero_rows) < 2:
            return 0
        xs = x_full[:self.prog.n_x]
        jacs = self.eng.side_jacobians(xs, self.p0)
        values = self.eng.sides(xs, self.p0)
        seen: set[tuple[Any, ...]] = set()
        other = NONNEG if self.o.sign_constraints else FREE
        demoted = 0
        for (zero, ints), J, val in zip(zero_rows, jacs, values):
            v = np.asarray(val, dtype=float).ravel()
            for i in np.flatnonzero(zero):
                lo, hi = J.indptr[i], J.indptr[i + 1]
                cols, coef = J.indices[lo:hi], J.data[lo:hi]
                keep = coef != 0.0
                cols, coef = cols[keep], coef[keep]
                if coef.size == 0:
                    continue
                k = int(np.argmax(np.abs(coef)))
                scale = coef[k]
                const = (v[i] - float(coef @ xs[cols])) / scale
                key = (tuple(cols.tolist()), tuple(np.round(coef / scale, 9).tolist()), round(const, 9))
                if key in seen:
                    ints[i] = other
                    demoted += 1
                else:
                    seen.add(key)
        return demoted

    def polish(self, x_full: np.ndarray, t: float) -> tuple[Candidate | None, dict[str, Any]]:
        """The active-set polish of an NLP answer (see :class:`NLPOptions`)."""
        a, b = (np.asarray(v, dtype=float).ravel() for v in self.eng.sides(x_full[:self.prog.n_x], self.p0))
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            return None, {"status": "not tried", "reason": "sides not finite"}
        tau = BIACTIVE_FACTOR * math.sqrt(float(np.max(np.abs(a * b), initial=0.0)))
        both = np.maximum(np.abs(a), np.abs(b)) <= tau
        a_zero = both | (np.abs(a) <= np.abs(b))
        b_zero = both | ~a_zero
        other = NONNEG if self.o.sign_constraints else FREE
        a_int = np.where(a_zero[:, None], ZERO, other)
        b_int = np.where(b_zero[:, None], ZERO, other)
        cand, info = self.solve_piece(x_full, t, a_int, b_int, "polish")
        info["biactive"] = int(both.sum())
        if info["status"] == "Not_Enough_Degrees_Of_Freedom" and both.any():
            # the biactive pairs' second zero sides left more equations than variables (IPOPT refuses
            # such NLPs even when they are consistent): keep only each pair's nearer side at 0
            a_zero = np.abs(a) <= np.abs(b)
            a_int = np.where(a_zero[:, None], ZERO, other)
            b_int = np.where(a_zero[:, None], other, ZERO)
            cand, again = self.solve_piece(x_full, t, a_int, b_int, "polish")
            info = {**again, "biactive": 0, "first_try": info}
        return cand, info

    # -- the homotopy ----------------------------------------------------------------------------
    def run(self) -> Result:
        """The homotopy: NLPs, polish, certified stop (see the module docstring of
        :mod:`contactmp.solvers.nlp.solve`)."""
        prog, o, rel = self.prog, self.o, self.rel
        lbx, ubx, lbg, ubg = self.bounds
        x = np.clip(rel.start(prog.x0), lbx, ubx)
        lam: tuple[np.ndarray, np.ndarray] | None = None
        last: Candidate | None = None      # the answer of the last NLP
        last_ok: Candidate | None = None   # the answer of the last NLP IPOPT solved
        found: Candidate | None = None     # a verified answer (ends the homotopy)
        checked: Candidate | None = None   # the last answer that passes the checks although IPOPT failed
        stop_reason = "homotopy exhausted"
        param_name, nested = self.hom.param, self.hom.nested
        infeasible_run = 0
        for k, t in enumerate(self.ts):
            if self.left() <= 0:
                stop_reason = "time_limit"
                break
            pt = rel.p(t)
            final = k == len(self.ts) - 1 or not self.eng.has("loose")
            solver = self.eng.solver("tight" if final else "loose")
            warm = lam if (o.warm_start_duals and not final and lam is not None) else (None, None)
            ans = solver.solve(x, pt, lbx, ubx, lbg, ubg, *warm)
            self.iterations += ans.iterations
            retried: dict[str, Any] = {}
            if not final and ans.status == "Infeasible_Problem_Detected":
                # an inner NLP at homotopy_tol may give up early: ask IPOPT at tol before believing it
                retried = {"status": ans.status, "iterations": ans.iterations}
                solver = self.eng.solver("tight")
                ans = solver.solve(x, pt, lbx, ubx, lbg, ubg)
                self.iterations += ans.iterations
            ok = ans.ok
            extra: dict[str, Any] = {}
            if rel.n_smoothed:
                # IPOPT's |phi_eps| <= tol also holds far out on an axis: count the NLP as solved only
                # when its answer is on the curves a_i b_i = eps^2 (and the rest of the NLP) to feas_tol
                extra["smoothing_violation"] = rel.violation(ans.x, pt)
                ok = ok and extra["smoothing_violation"] <= o.feas_tol
            cand = self.candidate(ans, ok, bounds=(lbx, ubx) if final else None)
            entry = {param_name: t, "status": ans.status, "iterations": ans.iterations, "tol": solver.ipopt["tol"],
                     **cand.res, **extra, **({"infeasible_at_homotopy_tol": retried} if retried else {})}
            self.history.append(entry)
            last = cand
            if np.isfinite(ans.x).all() and (nested or ok):
                # (a failed NLP of a non-nested homotopy says nothing of the next: keep the last start)
                x = ans.x
                lam = (ans.lam_x, ans.lam_g)
            if not cand.ok and self.verified(cand.res):
                checked = cand
            if cand.ok:
                last_ok = cand
                if self.verified(cand.res):
                    if final:
                        if self.settle(cand):
                            found = cand
                            break
                    # a loose NLP's answer passes the checks: solve the same NLP again at tol (with
                    # resolve_at_last: the homotopy's last NLP, from this answer)
                    t_again = self.ts[-1] if o.resolve_at_last else t
                    p_again = rel.p(t_again)
                    if self.eng.has("resolve"):  # from its primal-dual point, a small barrier
                        again = self.eng.solver("resolve").solve(ans.x, p_again, lbx, ubx, lbg, ubg, ans.lam_x,
                                                                 ans.lam_g)
                    else:
                        again = self.eng.solver("tight").solve(ans.x, p_again, lbx, ubx, lbg, ubg)
                    self.iterations += again.iterations
                    c2 = self.candidate(again, bounds=(lbx, ubx))
                    entry["at_tol"] = {"status": again.status, "iterations": again.iterations, param_name: t_again}
                    if c2.ok and self.verified(c2.res) and self.settle(c2):
                        found = c2
                        break
                if self.accept is not None:
                    xr = self.accept(cand.x.copy())
                    if xr is not None:
                        xr = np.asarray(xr, dtype=float).ravel()
                        rep = Candidate(xr, ans.status, True, prog.residuals(xr, self.p0), "accept")
                        entry["repaired"] = {k: rep.res[k] for k in ("bound", "constraint", self.comp_key)}
                        if self.verified(rep.res) and self.settle(rep):
                            found = rep
                            break
            if o.polish and prog.n_comp and np.isfinite(ans.x).all() and self.left() > 0:
                pol, info = self.polish(ans.x, t)
                entry["polish"] = info
                if pol is not None and pol.ok and self.verified(pol.res) and self.settle(pol):
                    found = pol
                    break
            if ans.status == "Infeasible_Problem_Detected" and nested and rel.violation(ans.x, pt) > o.feas_tol:
                # IPOPT's answer violates the relaxed NLP itself; the next relaxations are tighter, but
                # "locally" infeasible: from the next NLP's start IPOPT may find the set again
                infeasible_run += 1
                if o.infeasible_stop and infeasible_run >= o.infeasible_stop:
                    stop_reason = f"{infeasible_run} relaxed NLPs in a row are locally infeasible"
                    break
            else:
                infeasible_run = 0
        return self.finish(found, last, last_ok, checked, stop_reason)

    def settle(self, cand: Candidate) -> bool:
        """``cand`` passed the checks with an IPOPT success: certify it and say whether the homotopy
        ends here. When the certificate finds a descent direction, the walk along its branches
        (:meth:`certify`) starts at once (MPECopt-style: a branch NLP from a point on the right piece
        is cheap, the homotopy's NLPs at tiny ``sigma`` are not); the homotopy goes on only when the
        walk ends at a point still certified *not* B-stationary, which is kept aside (pending) and
        returned if nothing better is found (a solved answer all the same)."""
        if not (self.o.certify and self.prog.n_comp):
            self.answers.append((cand, {}))
            return True
        chosen, extras = self.certify(cand, Status.SOLVED)
        if extras["b_stationarity"]["verdict"] == "no":
            self.pending.append((chosen, extras))
            return False
        self.answers.append((chosen, extras))
        return True

    def certificate(self, x: np.ndarray, active_tol: float = 1e-6, opt_tol: float = 1e-6) -> Any:
        """The B-stationarity certificate of the source point ``x`` (timed into ``certify_time``)."""
        from contactmp.solvers.nlp.stationarity import b_stationarity

        o = self.o
        c0 = time.perf_counter()
        # (pair sides are active to active_tol, also in the product reading, where "solved" only says
        # a_i b_i <= comp_tol: a point with both sides near sqrt(comp_tol) gets UNKNOWN. Reading them
        # active to sqrt(comp_tol) (b_stationarity's pair_tol) refuted DISCM's and MFTOPT's NOSBENCH
        # answers, and the homotopy's search for a certified point then cost 5-15x their solve)
        cert = b_stationarity(self.prog, x, p=self.p0, feas_tol=o.feas_tol, active_tol=active_tol, opt_tol=opt_tol,
                              sign_constraints=o.sign_constraints, time_limit=o.certify_time_limit)
        self.certify_time += time.perf_counter() - c0
        return cert

    def finish(self, found: Candidate | None, last: Candidate | None, last_ok: Candidate | None,
               checked: Candidate | None, stop_reason: str) -> Result:
        """The Result: the settled answer, else the best answer kept aside, else the last NLP's (or
        a point that passed the checks though IPOPT failed), its status and extras."""
        prog, o = self.prog, self.o
        backend_status = last.status if last is not None else "not started"
        messages = [f"{self.hom.name} via {self.backend}: {len(self.history)} NLP(s), last IPOPT status {backend_status}"]
        extras: dict[str, Any] = {}
        if found is None and self.pending:
            # nothing certified: the best solved answer kept aside
            self.answers.append(min(self.pending, key=lambda a: a[0].res["objective"]))
            messages.append(f"no answer certified B-stationary; returning the best of {len(self.pending)} "
                            f"solved one(s)")
        if self.answers:
            chosen, extras = self.answers[-1]
            status = Status.SOLVED
            backend_status = chosen.status
            by = {"accept": "answer repaired by accept() and verified", "polish": "answer of the active-set polish, "
                  "verified", "branch": "moved along descent branches of the B-stationarity certificate"}
            if chosen.found_by in by:
                messages.append(by[chosen.found_by])
            extras.pop("solid", None)
        else:
            # the last NLP's answer, unless it failed and an earlier NLP succeeded
            chosen = last if (last is not None and (last.ok or last_ok is None)) else last_ok
            if checked is not None and (chosen is None or not self.verified(chosen.res)):
                # an NLP IPOPT did not finish left a point that passes the independent checks (feasible
                # and complementary): return it rather than a worse one; with an objective its status
                # stays unsolved (IPOPT certified no stationarity), without one it is a solution
                chosen = checked
                messages.append(f"returning a point that passes the checks although IPOPT ended {checked.status}")
            if chosen is None:  # time limit before the first NLP
                x = np.clip(self.prog.x0, prog.lbx, prog.ubx)
                chosen = Candidate(x, "not started", False, prog.residuals(x, self.p0), "")
            elif chosen is not last:
                messages.append("returning the answer of the last NLP IPOPT solved")
            if self.verified(chosen.res) and (chosen.ok or not prog.has_objective):
                status = Status.SOLVED
            elif stop_reason == "time_limit" or self.left() <= 0:
                status = Status.TIME_LIMIT
                messages.append(f"time limit reached ({self.limit:g} s wall, {self.cpu_limit:g} s CPU)")
            else:
                status = ipopt_status(backend_status)
                r = chosen.res
                messages.append(
                    f"{stop_reason}; checks: bound {r['bound']:.2e}, constraint {r['constraint']:.2e} "
                    f"(feas_tol {o.feas_tol:.0e}), {self.comp_key} {r[self.comp_key]:.2e} (comp_tol {o.comp_tol:.0e})"
                )
            chosen = Candidate(chosen.x, chosen.status, chosen.ok, chosen.res, "", chosen.x_full)
            if o.certify and prog.n_comp:
                chosen, extras = self.certify(chosen, status)
                if extras.pop("solid", False) and status is not Status.SOLVED:
                    # feasible, complementary and certified B-stationary: a stronger claim than IPOPT's
                    status = Status.SOLVED
                    messages.append("solved: the point passes the checks and is certified B-stationary")
        r = chosen.res
        time_s = time.perf_counter() - self.t0 - self.certify_time
        extras = {"backend_status": backend_status, "backend": self.backend, "strategy": self.hom.name,
                  "homotopy": self.history, "ipopt_options": self.ipopt, "found_by": chosen.found_by,
                  **extras, **({"smoothed_pairs": self.rel.n_smoothed} if self.hom.name == "fischer_burmeister" else {})}
        if o.certify and prog.n_comp:
            extras["certify_time_s"] = self.certify_time
            extras["branch_steps"] = self.branch_steps
        return Result(
            status=status, x=chosen.x, solver=f"{self.backend}/{self.hom.name}",
            residual=o.scaled_residual(r),
            tol=1.0, iterations=self.iterations, time_s=time_s, message="; ".join(messages),
            residuals=chosen.res, objective=chosen.res["objective"], program=prog, extras=extras,
        )

    # -- the certificate and the branch steps ----------------------------------------------------
    def certify(self, chosen: Candidate, status: Status) -> tuple[Candidate, dict[str, Any]]:
        """The B-stationarity certificate of ``chosen`` and the branch steps of :meth:`walk` (the
        rounds that solved a branch NLP are added to ``branch_steps``). The point returned is the last
        *solid* one of the walk (IPOPT converged on its NLP, or its certificate proves it B-stationary:
        a feasible point where ``d = 0`` solves the LPEC needs no IPOPT claim), else ``chosen``; the
        extras are ``b_stationarity`` (its certificate's summary) and, for a solid point, ``solid``."""
        from contactmp.solvers.nlp.stationarity import BVerdict

        walk = self.walk(chosen, self.o.branch_rounds)
        self.branch_steps += [h for h in walk.history if "accepted" in h]
        # (a certificate makes a point solved only when the point passes the checks: its own
        # feasibility test, to active_tol, is looser than comp_tol)
        solid = (chosen, walk.certs[0]) if (status is Status.SOLVED or (walk.certs[0].verdict is BVerdict.YES
                                                                        and self.verified(chosen.res))) else None
        for point, cert in zip(walk.points[1:], walk.certs[1:]):
            if point.ok or cert.verdict is BVerdict.YES:
                solid = (point, cert)
        if solid is None:  # not solved, and no move made it so: the point and certificate as they are
            return chosen, {"b_stationarity": walk.certs[0].summary()}
        return solid[0], {"b_stationarity": solid[1].summary(), "solid": True}

    def walk(self, start: Candidate, rounds: int, active_tol: float = 1e-6, opt_tol: float = 1e-6) -> "Walk":
        """Certify ``start``; while the certificate finds a descent branch (at most ``rounds``
        times), solve that branch's NLP from the current point with the ``"piece"`` IPOPT object
        and move to its answer when the answer passes the independent checks and lowers ``f``.
        Every certificate is timed apart; each branch NLP counts as solving."""
        from contactmp.solvers.nlp.stationarity import BVerdict

        walk = Walk([start], [self.certificate(start.x, active_tol, opt_tol)], [])
        current = start
        while True:
            cert = walk.certs[-1]
            # (the branch of the biactive pairs only, as [pair, side]: the others follow from the point)
            entry: dict[str, Any] = {"round": len(walk.history), "f": cert.objective, "verdict": cert.verdict.value,
                                     "value": cert.value, "branch": [[int(i), b] for i, b in zip(cert.biactive,
                                                                                                cert.branch)]}
            walk.history.append(entry)
            # (a refuted point is feasible to the certificate's tolerances, which are looser than the
            # checks: the walk may start from a point that is not solved, its moves must be)
            if cert.verdict is not BVerdict.NO or len(walk.history) > rounds or self.left() <= 0:
                return walk
            a_int, b_int = cert.piece_intervals()
            x_full = current.x_full if current.x_full is not None else self.rel.start(current.x)
            cand, info = self.solve_piece(x_full, self.ts[-1], a_int, b_int, "branch")
            entry.update(nlp_status=info["status"], iterations=info.get("iterations", 0),
                         f_new=cand.res["objective"] if cand is not None else math.nan)
            if cand is None or not self.verified(cand.res):
                entry.update(accepted=False, reason=f"the branch NLP's answer fails the checks ({info['status']})")
                return walk
            if not cand.res["objective"] < current.res["objective"]:
                entry.update(accepted=False, reason=f"the branch NLP's answer does not lower f "
                                                    f"({cand.res['objective']:.6e} >= {current.res['objective']:.6e})")
                return walk
            entry.update(accepted=True, reason="moved to the branch NLP's answer")
            current = cand
            walk.points.append(current)
            walk.certs.append(self.certificate(current.x, active_tol, opt_tol))


@dataclass
class Walk:
    """The points of a branch walk (the start first), their certificates and one history entry per
    round (``round``, ``f``, ``verdict``, ``value``, ``branch`` and, for a round that solved a branch
    NLP, ``nlp_status``, ``iterations``, ``f_new``, ``accepted``, ``reason``)."""

    points: list[Candidate]
    certs: list[Any]
    history: list[dict[str, Any]]


