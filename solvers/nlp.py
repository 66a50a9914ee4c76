"""Solve a :class:`~contactmp.program.Program` (an MPCC) with IPOPT, through CasADi or cyipopt.

The complementarity pairs ``0 <= a _|_ b >= 0`` violate the constraint qualifications IPOPT
relies on, so they are handled by a named MPCC strategy (:data:`STRATEGIES`, the registry
:data:`contactmp.solvers.mpcc.MPCC_STRATEGIES`; each is the Program transformation
:func:`contactmp.solvers.mpcc.relax`, solved here along its homotopy):

``"direct"``
    One NLP with ``a >= 0``, ``b >= 0`` and ``a_i b_i <= 0`` as plain constraints.
``"scholtes"``
    Scholtes' relaxation: ``a >= 0``, ``b >= 0``, ``a_i b_i <= sigma``, solved for
    ``sigma = sigma0, sigma0 * sigma_factor, ...`` down to ``sigma_min`` (defaults 1, 0.1,
    1e-12: NOSBENCH stops at 1e-9 but judges the product ``a_i b_i``; we judge ``min(a_i, b_i)``),
    each NLP warm-started at the previous answer; the homotopy stops at the first NLP that
    succeeds with a verified answer (bounds, constraints, complementarity).
``"scholtes_linf"``
    The l-infinity (elastic) mode of Scholtes' relaxation (the NOSBENCH paper's, nosnoc's
    ``ELASTIC_INF``): one slack variable ``s`` in ``[0, 10]`` for all pairs, ``a_i b_i <= s``, and
    ``s / sigma`` added to the objective, for the same ``sigma`` sequence, warm-started.
``"elastic_l1"``
    The l1 penalty: ``a >= 0``, ``b >= 0`` and ``rho * sum_i a_i b_i`` added to the objective,
    for ``rho = rho0, rho0 * rho_factor, ...`` up to ``rho_max``, warm-started, with the same stop.
``"fischer_burmeister"``
    Smoothing: ``a >= 0``, ``b >= 0`` and, per pair, the equation
    ``phi_eps(a_i, b_i) = a_i + b_i - sqrt(a_i^2 + b_i^2 + 2 eps^2) = 0``, whose solutions are
    exactly ``a_i, b_i > 0`` with ``a_i b_i = eps^2`` (at ``eps = 0``: complementarity), for
    ``eps = eps0, eps0 * eps_factor, ...`` down to ``eps_min`` (defaults 1, 0.1, 1e-10),
    warm-started, with the same stop. The row is ``phi_eps / eps`` (unit size at every ``eps``),
    evaluated without cancellation (see :func:`fischer_burmeister`). ``eps_min``: a degenerate pair
    (``a_i = b_i = 0`` in the limit) sits at ``a_i = b_i = eps``, so ``min(a_i, b_i) <= comp_tol
    = 1e-8`` needs ``eps <= 1e-8``, and one more step leaves room; judged by the product
    (NOSBENCH, ``<= 1e-7``) ``eps = 1e-4`` already passes, and the homotopy stops at the first
    verified NLP. Unlike Scholtes' relaxed sets, the curves ``a_i b_i = eps^2`` are disjoint for
    different ``eps``: an infeasible NLP does not end the homotopy, and the next NLP starts from
    the last NLP that was solved (else ``x0``). An NLP counts as solved only when IPOPT succeeded
    and its answer lies on the curves (``|a_i b_i - eps^2| <= feas_tol``): ``phi_eps(a, 0)``
    tends to 0 as ``a`` grows, so far out on an axis IPOPT can meet its tolerance off the curve.
    Smoothing needs points with ``a_i, b_i > 0``: when the constraints pin a side to 0 (the last
    contact of a trajectory with a fixed final state), every smoothed NLP is infeasible by
    ``O(eps^2)`` and only NLPs with ``eps^2`` below IPOPT's tolerance can succeed; use
    ``"scholtes"`` for such programs.

With ``sign_constraints=False`` the constraints ``a >= 0``, ``b >= 0`` are not added (the signs
must then come from the variable bounds, NOSBENCH's convention) and complementarity is judged by
the signed residual ``max_i a_i b_i``. Since ``phi_eps = 0`` forces ``a_i, b_i > 0``,
``"fischer_burmeister"`` then smooths only the pairs whose two sides are affine in ``x`` and
nonnegative on the whole box ``lbx <= x <= ubx``; any other pair (a sign-indefinite one, such as
NOSBENCH's ``(Lambda, L)``, ``(Lambda, -L)`` with ``L`` free) keeps the product form
``a_i b_i <= eps^2``, so the limit problem is the same as the other strategies'.

``"portfolio"``
    No transformation of its own: the strategies of :data:`~contactmp.solvers.mpcc.PORTFOLIO` in
    that order (learned on the shared NOSBENCH problems) with the time left, stopping at the first
    answer that is solved and certified B-stationary.

How a homotopy runs (every strategy but ``"direct"``, which is one NLP):

1. The relaxed NLPs are built once per program, strategy and options (the *engine*, kept in the
   program's cache, so the starts of a multistart share it): one CasADi/cyipopt IPOPT object for
   the inner NLPs (``tol = homotopy_tol``, default 1e-3: their answers only start the next NLP and
   the polish), one at ``tol`` for the NLP whose answer is returned and one at ``tol`` with
   ``polish_max_iter`` iterations for the pieces below. Parameters, bounds and the start change
   between solves, the structure never; every NLP is warm-started at the previous answer (primal;
   with ``warm_start_duals`` also its multipliers).
2. After each NLP, the *active-set polish*: each pair's side nearer to 0 is fixed at 0 (both sides
   of a pair with ``max(|a_i|, |b_i|) <= 2 sqrt(max_j |a_j b_j|)``, a degenerate pair at this
   ``sigma``), the strategy's rows are switched off, and the resulting *tightened NLP* (one piece of
   the MPCC) is solved by changing bounds on the same IPOPT object. Its answer, put onto the bounds
   its multipliers say are active, is accepted only when IPOPT succeeds and the independent checks
   pass.
3. The homotopy stops at the first point that passes the checks with an IPOPT success at ``tol``
   (the NLP's own answer, solved again at ``tol`` if it came from an inner NLP; the polish; the
   caller's ``accept``) *and* is not certified non-B-stationary: with ``certify`` (default) the
   point's B-stationarity certificate (:mod:`contactmp.solvers.b_stationarity`, the LPEC as a HiGHS
   MILP, timed apart) is computed, and a point with a descent direction is kept aside while the
   homotopy goes on. If nothing certified is found, the best point kept aside starts a walk along
   the LPEC's descent branches (at most ``branch_rounds`` branch NLPs, each solved by bounds on the
   same object; a move must pass the checks and lower ``f``), MPECopt-style.

Whatever the backend says, the :class:`~contactmp.result.Result` is ``solved`` only when the independent
checks of :meth:`Program.residuals` pass: scaled bound and constraint violations ``<= feas_tol``
and ``max_i |min(a_i, b_i)| <= comp_tol``; and, when the program has an objective, the NLP of the
returned point must have ended with an IPOPT success, or the point must be certified B-stationary
(a feasible point where the LPEC's optimum is 0 is a stationary point of the MPCC, which is what an
IPOPT success would have claimed). ``extras["b_stationarity"]`` says whether it is certified
(``b_stationary``: True, False or None). A relaxed NLP that IPOPT declares locally infeasible ends
the homotopy when its answer does violate the relaxed constraints (the relaxed sets shrink as
sigma falls); when the answer satisfies them after all, the homotopy goes on.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import casadi as ca
import numpy as np

from contactmp.errors import InputError, OptionError, did_you_mean
from contactmp.program import Program
from contactmp.result import Result, Status
from contactmp.solvers.ipopt import BACKENDS, IpoptAnswer, IpoptNLP, check_ipopt_options, ipopt_status
from contactmp.solvers.lcp import SolverOptions
from contactmp.solvers.mpcc import (FREE, MPCC_STRATEGIES, NONNEG, ZERO, MPCCStrategy, Relaxation, _variable,
                                    fischer_burmeister, relaxation, strategy_named)

__all__ = ["solve_program", "NLPOptions", "STRATEGIES", "BACKENDS", "fischer_burmeister", "walk_branches"]

#: MPCC strategy name -> :class:`~contactmp.solvers.mpcc.MPCCStrategy` (the registry of solvers/mpcc.py)
STRATEGIES = MPCC_STRATEGIES

#: IPOPT options set unless the caller's ``ipopt`` dict says otherwise
IPOPT_DEFAULTS: dict[str, Any] = {
    "print_level": 0,
    "sb": "yes",
    # the NOSBENCH protocol's settings: no bound relaxation (a >= 0 means a >= 0) and the adaptive
    # barrier update, which halves the iterations of a warm-started homotopy on the shared LCPs
    "bound_relax_factor": 0.0,
    "mu_strategy": "adaptive",
}


@dataclass
class NLPOptions(SolverOptions):
    """Options of :func:`solve_program` (strict: unknown keys raise :class:`OptionError`).

    Attributes
    ----------
    tol : IPOPT's convergence tolerance (its ``tol``) for the NLP whose answer is returned (the last
        NLP of the homotopy, a polish, a branch step, a program without pairs).
    homotopy_tol : IPOPT's ``tol`` for the NLPs inside the homotopy (their answers only start the next
        NLP and the polish; an answer that passes the checks is solved again at ``tol`` before it is
        returned). ``homotopy_tol <= tol`` solves every NLP at ``tol``.
    feas_tol : accepted scaled bound / constraint violation (see :meth:`Program.residuals`).
    comp_tol : accepted complementarity residual ``max_i |min(a_i, b_i)|`` (``max_i a_i b_i``
        without sign constraints).
    max_iter : IPOPT iterations per NLP.
    sigma0, sigma_factor, sigma_min : the Scholtes homotopy ``sigma <- sigma_factor * sigma`` (also
        the weight ``1 / sigma`` of ``"scholtes_linf"``).
    rho0, rho_factor, rho_max : the elastic_l1 penalty sequence ``rho <- rho_factor * rho``.
    eps0, eps_factor, eps_min : the Fischer-Burmeister smoothing ``eps <- eps_factor * eps``.
    sign_constraints : add ``a >= 0`` and ``b >= 0`` (False: rely on variable bounds; a pair is then
        the product row ``a_i b_i <= 0``, judged by ``max_i a_i b_i``).
    polish_max_iter : IPOPT iterations of each polish and branch step (a piece that needs more is
        left to the homotopy).
    polish : after every NLP of the homotopy, solve the *tightened* NLP of its active set (the side
        nearer to 0 of each pair fixed at 0, both sides of a pair with ``max(|a_i|, |b_i|) <=
        2 sqrt(max_j |a_j b_j|)``, the strategy's rows switched off; see
        :meth:`~contactmp.solvers.mpcc.Relaxation.piece_bounds`) with the same IPOPT object, and
        return its answer when IPOPT succeeds and the independent checks pass.
    warm_start_duals : start every NLP after the first from the previous NLP's multipliers too
        (IPOPT's ``warm_start_init_point``); primal warm starts are always on.
    branch_rounds : at most this many branch steps when the certificate finds a descent branch
        (0: certify only).
    infeasible_stop : a homotopy whose relaxed sets shrink (Scholtes, direct, l1) ends after this many
        NLPs in a row that IPOPT finds locally infeasible (their answers violating the relaxed NLP);
        0: never (each NLP starts from the last answer, and IPOPT may find the set again).
    time_limit : wall-clock seconds for the whole solve (``None`` or ``inf``: none); checked
        between NLPs, and inside each NLP unless ``ipopt`` sets ``max_wall_time`` (cyipopt: the
        time left as IPOPT's ``max_wall_time``; CasADi, whose IPOPT options are fixed when the
        solver is built: an iteration callback that stops IPOPT at the deadline).
    cpu_time_limit : CPU seconds of this process (``time.process_time``) for the whole solve (``inf``:
        none), checked like ``time_limit``; unlike wall-clock time it does not depend on what else
        the machine runs (the portfolio caps its members with it).
    ipopt : further IPOPT options, checked against IPOPT's own option table.
    certify : attach the B-stationarity certificate of the returned point
        (:func:`contactmp.solvers.b_stationarity.b_stationarity`, its LPEC solved as a MILP by
        HiGHS) as ``extras["b_stationarity"]`` when the program has complementarity pairs, and take
        the branch steps it finds; the certificates are timed apart (``extras["certify_time_s"]``,
        not in the result's ``time_s``).
    certify_time_limit : seconds for each certificate's MILP.
    """

    tol: float = 1e-8
    homotopy_tol: float = 1e-3
    feas_tol: float = 1e-6
    comp_tol: float = 1e-8
    max_iter: int = 3000
    sigma0: float = 1e-2
    sigma_factor: float = 0.1
    sigma_min: float = 1e-12
    rho0: float = 1.0
    rho_factor: float = 10.0
    rho_max: float = 1e8
    eps0: float = 1.0
    eps_factor: float = 0.1
    eps_min: float = 1e-10
    sign_constraints: bool = True
    polish: bool = True
    polish_max_iter: int = 200
    warm_start_duals: bool = False
    branch_rounds: int = 5
    infeasible_stop: int = 3
    time_limit: float = math.inf
    cpu_time_limit: float = math.inf
    ipopt: dict[str, Any] = field(default_factory=dict)
    certify: bool = True
    certify_time_limit: float = 10.0

    def check(self) -> None:
        """Reject ill-typed values; copy and type-check the IPOPT options."""
        super().check()
        for name in ("feas_tol", "comp_tol", "homotopy_tol"):
            _positive_finite(self, name)
        for h in MPCC_STRATEGIES.values():
            if h.start is None:
                continue
            _positive_finite(self, h.start)
            _positive_finite(self, h.stop)
            f, s0, s1 = getattr(self, h.factor), getattr(self, h.start), getattr(self, h.stop)
            if isinstance(f, bool) or not isinstance(f, (int, float)) or not (0 < f < 1 if h.shrinks else 1 < f < math.inf):
                raise OptionError(f"{h.factor} must be {'in (0, 1)' if h.shrinks else 'a finite number > 1'}, got {f!r}")
            if (s1 > s0) if h.shrinks else (s1 < s0):
                raise OptionError(f"{h.stop} ({s1}) must not {'exceed' if h.shrinks else 'be below'} {h.start} ({s0})")
        for name in ("max_iter", "branch_rounds", "polish_max_iter", "infeasible_stop"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise OptionError(f"{name} must be a nonnegative integer, got {v!r}")
        for name in ("sign_constraints", "certify", "polish", "warm_start_duals"):
            if not isinstance(getattr(self, name), bool):
                raise OptionError(f"{name} must be True or False, got {getattr(self, name)!r}")
        _positive_finite(self, "certify_time_limit")
        v = self.cpu_time_limit
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise OptionError(f"cpu_time_limit must be a positive number of seconds (inf: none), got {v!r}")
        self.ipopt = check_ipopt_options(self.ipopt)


def _positive_finite(o: NLPOptions, name: str) -> None:
    v = getattr(o, name)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0 and math.isfinite(v)):
        raise OptionError(f"{name} must be a positive finite number, got {v!r}")


class _Engine:
    """What one (program, strategy, options) solve needs, built once and kept in the program's cache
    (so the starts of a multistart share it): the relaxation ``rel`` of the homotopy, the relaxation
    ``rel_piece`` whose bounds write the pieces (the same object, unless the pairs have no sign
    rows and a side is not a variable: then it adds the free side rows ``mpcc/side_a``,
    ``mpcc/side_b``, kept out of the homotopy's NLP because even a free row changes IPOPT's path),
    the pair sides ``(x, p) -> (a, b)`` and three IPOPT objects, each built on first use:
    ``"loose"`` (``rel``, ``tol = homotopy_tol``, the homotopy's inner NLPs), ``"tight"`` (``rel``,
    ``tol``, ``max_iter``) and ``"piece"`` (``rel_piece``, ``tol``, ``max_iter = polish_max_iter``:
    polish and branch steps). Both relaxations have the same variables and parameters."""

    def __init__(self, rel: Relaxation, rel_piece: Relaxation, sides: ca.Function,
                 options: dict[str, dict[str, Any]], backend: str, deadline: bool) -> None:
        self.rel, self.rel_piece, self.sides, self.options, self.backend = rel, rel_piece, sides, options, backend
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
            s = IpoptNLP(rel.program.nlp(), self.options[kind], self.backend, 0.0 if self._stoppable else math.inf,
                         nlpsol=_NLPSOL_OPTIONS)
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
_ENGINES_PER_PROGRAM = 8


def _engine(prog: Program, strategy: str, o: NLPOptions, backend: str, ipopt: dict[str, Any],
            homotopy: bool, deadline: bool) -> _Engine:
    """The cached :class:`_Engine` of ``prog`` for these settings (built on first use). The
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
    side_vars = prog._cache.get("side_variables")
    if side_vars is None:  # (the program's cache is cleared when its structure changes)
        side_vars = prog._cache["side_variables"] = np.array(
            [j for e in (prog.comp_a, prog.comp_b) for j in (_variable(prog, p) for p in ca.vertsplit(e)) if j >= 0],
            dtype=int)
    # the sign rows that relaxation() leaves out depend on the current lower bounds of the sides
    sign_pattern = (prog.lbx[side_vars] >= 0.0).tobytes() if o.sign_constraints else b""
    key = (strategy, o.sign_constraints, backend, repr(sorted((k, sorted(v.items())) for k, v in options.items())),
           deadline, sign_pattern)
    cache: dict[Any, _Engine] = prog._cache.setdefault("solve_program_engines", {})
    eng = cache.pop(key, None)
    if eng is None:
        t0 = 1.0 if strategy == "fischer_burmeister" else 0.0
        rel = relaxation(prog, strategy, t0, sign_constraints=o.sign_constraints)
        rel_piece = rel
        if not o.sign_constraints and ((rel.a_var < 0) | (rel.b_var < 0)).any():
            rel_piece = relaxation(prog, strategy, t0, sign_constraints=False, side_rows=True)
        sides = ca.Function("sides", [prog.x, prog.p], [prog.comp_a, prog.comp_b])
        eng = _Engine(rel, rel_piece, sides, options, backend, deadline)
    cache[key] = eng  # (re)inserted last: the most recently used
    while len(cache) > _ENGINES_PER_PROGRAM:
        cache.pop(next(iter(cache)))
    return eng


#: casadi.nlpsol options of every solver here: no input check (it would warn at every solve of a
#: piece with sides fixed by bounds that "the NLP is overconstrained", more equality rows and fixed
#: variables than variables; the bounds are checked where they are made: Program, piece_bounds)
_NLPSOL_OPTIONS: dict[str, Any] = {"inputs_check": False}


def solve_program(
    prog: Program,
    backend: str = "casadi",
    strategy: str = "scholtes",
    options: NLPOptions | None = None,
    *,
    accept: Callable[[np.ndarray], np.ndarray | None] | None = None,
    **overrides: Any,
) -> Result:
    """Solve the MPCC ``prog`` with IPOPT: ``min f s.t. bounds, lbg <= g <= ubg, 0 <= a _|_ b >= 0``.

    ``backend`` is ``"casadi"`` or ``"cyipopt"``; ``strategy`` one of :data:`STRATEGIES`;
    ``options`` an :class:`NLPOptions` and/or keyword overrides (strict). The program's current
    parameter values ``p0``, bounds and start ``x0`` are used.

    The homotopy (module docstring) stops at the first point that passes the independent checks
    with an IPOPT success at ``tol``: an NLP's own answer, the answer of its polish (``polish``), or
    the answer of ``accept(x)``. ``accept(x)``, if given, is called after every NLP that IPOPT
    solves and may return a repaired point (for an LCP: the active-set polish); a repaired point
    that passes the independent checks is returned (the caller vouches for its optimality when the
    program has an objective). With ``certify``, the returned point of a program with pairs gets its
    B-stationarity certificate; when the certificate finds a descent branch, the NLP of that branch
    is solved from it (same IPOPT object) and the move is kept when it passes the checks and lowers
    ``f`` (at most ``branch_rounds`` times).

    Never raises on non-convergence: the returned :class:`~contactmp.result.Result` carries the
    status (``solver = "backend/strategy"``; ``residuals`` the independent checks of the chosen
    point -- ``bound``, ``constraint``, ``comp_min``, ``comp_prod``, ``comp_sign``, ``objective``
    --; ``residual`` the largest of bound / feas_tol, constraint / feas_tol and the complementarity
    residual / comp_tol, judged against ``tol = 1``; ``extras``: ``backend_status`` (IPOPT's text for
    the NLP of the returned point), ``backend``, ``strategy``, ``homotopy`` (every NLP: parameter,
    status, iterations, residuals, and its ``polish`` attempt), ``ipopt_options``, ``found_by``
    (``"nlp"``, ``"polish"``, ``"accept"`` or ``""``), ``b_stationarity`` and ``branch_steps`` (with
    ``certify``), ``certify_time_s`` and, for fischer_burmeister, ``smoothed_pairs``).
    """
    t0 = time.perf_counter()
    if not isinstance(prog, Program):
        raise InputError("prog", f"must be a contactmp Program, got {type(prog).__name__}")
    if prog.n_x == 0:
        raise InputError("prog", "has no variables")
    if backend not in BACKENDS:
        raise OptionError(f"unknown backend '{backend}' (known: {', '.join(BACKENDS)}){did_you_mean(backend, BACKENDS)}")
    hom = strategy_named(strategy)
    o = NLPOptions.build(options, **overrides)
    if hom.is_portfolio:
        return _solve_portfolio(prog, backend, hom, o, accept, t0)
    return _Homotopy(prog, backend, hom, o, accept, t0).run()


@dataclass
class _Candidate:
    x: np.ndarray
    status: str
    ok: bool
    res: dict[str, float]
    found_by: str = "nlp"
    x_full: np.ndarray | None = None  # the point in the NLP's variables (slack included)


class _Homotopy:
    """One run of :func:`solve_program` for one strategy (its state in one place)."""

    def __init__(self, prog: Program, backend: str, hom: MPCCStrategy, o: NLPOptions,
                 accept: Callable[[np.ndarray], np.ndarray | None] | None, t0: float) -> None:
        self.prog, self.backend, self.hom, self.o, self.accept, self.t0 = prog, backend, hom, o, accept, t0
        self.ipopt = {**IPOPT_DEFAULTS, "tol": float(o.tol), "max_iter": int(o.max_iter), **o.ipopt}
        self.limit = math.inf if o.time_limit is None else float(o.time_limit)
        self.cpu_limit, self.cpu0 = float(o.cpu_time_limit), time.process_time()
        self.ts = hom.homotopy(o) if prog.n_comp else [0.0]  # no pairs: one NLP
        wall = math.isfinite(self.limit) and "max_wall_time" not in o.ipopt
        cpu = math.isfinite(self.cpu_limit) and "max_cpu_time" not in o.ipopt
        self.eng = _engine(prog, hom.name, o, backend, self.ipopt, len(self.ts) > 1, wall or cpu)
        self.eng.set_deadline(t0 + self.limit if wall else math.inf, self.cpu0 + self.cpu_limit if cpu else math.inf)
        self.rel = self.eng.rel
        self.bounds = self.rel.bounds()
        self.piece_bounds0 = self.bounds if self.eng.rel_piece is self.rel else self.eng.rel_piece.bounds()
        self.p0 = prog.p0
        self.comp_key = "comp_min" if o.sign_constraints else "comp_prod"
        self.iterations = 0
        self.history: list[dict[str, Any]] = []
        self.answers: list[tuple[_Candidate, dict[str, Any]]] = []  # settled answers and their certificates
        self.pending: list[tuple[_Candidate, Any]] = []  # solved answers certified not B-stationary
        self.branch_steps: list[dict[str, Any]] = []  # every branch NLP of every walk of the run
        self.certify_time = 0.0

    # -- checks ----------------------------------------------------------------------------------
    def verified(self, res: dict[str, float]) -> bool:
        o = self.o
        return res["bound"] <= o.feas_tol and res["constraint"] <= o.feas_tol and res[self.comp_key] <= o.comp_tol

    def left(self) -> float:
        """Seconds left of the wall-clock and the CPU budgets, whichever is smaller."""
        return min(self.limit - (time.perf_counter() - self.t0), self.cpu_limit - (time.process_time() - self.cpu0))

    def candidate(self, ans: IpoptAnswer, ok: bool | None = None, found_by: str = "nlp",
                  bounds: tuple[np.ndarray, np.ndarray] | None = None) -> _Candidate:
        """The answer ``ans`` as a point of the source with its independent residuals. With the
        variable ``bounds`` of the NLP solved, a variable IPOPT left within ``SNAP_TOL * max(1,
        |bound|)`` of a bound whose multiplier says it is active (CasADi's sign: ``lam_x < 0`` lower,
        ``> 0`` upper) is put on that bound -- an interior-point method stops a distance of order
        ``mu`` inside -- and the snapped point is kept when it passes the checks no worse and does
        not raise ``f``."""
        n = self.prog.n_x
        cand = _Candidate(ans.x[:n], ans.status, ans.ok if ok is None else ok, self.prog.residuals(ans.x[:n], self.p0),
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
            return _Candidate(x_full[:n], ans.status, cand.ok, res, found_by, x_full)
        return cand

    # -- the pieces ------------------------------------------------------------------------------
    def solve_piece(self, x_full: np.ndarray, t: float, a_int: np.ndarray, b_int: np.ndarray,
                    found_by: str) -> tuple[_Candidate | None, dict[str, Any]]:
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

    def polish(self, x_full: np.ndarray, t: float) -> tuple[_Candidate | None, dict[str, Any]]:
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
        prog, o, rel = self.prog, self.o, self.rel
        lbx, ubx, lbg, ubg = self.bounds
        x = np.clip(rel.start(prog.x0), lbx, ubx)
        lam: tuple[np.ndarray, np.ndarray] | None = None
        last: _Candidate | None = None      # the answer of the last NLP
        last_ok: _Candidate | None = None   # the answer of the last NLP IPOPT solved
        found: _Candidate | None = None     # a verified answer (ends the homotopy)
        checked: _Candidate | None = None   # the last answer that passes the checks although IPOPT failed
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
                    # a loose NLP's answer passes the checks: solve the same NLP again at tol
                    again = self.eng.solver("tight").solve(ans.x, pt, lbx, ubx, lbg, ubg)
                    self.iterations += again.iterations
                    c2 = self.candidate(again, bounds=(lbx, ubx))
                    entry["at_tol"] = {"status": again.status, "iterations": again.iterations}
                    if c2.ok and self.verified(c2.res) and self.settle(c2):
                        found = c2
                        break
                if self.accept is not None:
                    xr = self.accept(cand.x.copy())
                    if xr is not None:
                        xr = np.asarray(xr, dtype=float).ravel()
                        rep = _Candidate(xr, ans.status, True, prog.residuals(xr, self.p0), "accept")
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

    def settle(self, cand: _Candidate) -> bool:
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
        from contactmp.solvers.b_stationarity import b_stationarity

        o = self.o
        c0 = time.perf_counter()
        cert = b_stationarity(self.prog, x, p=self.p0, feas_tol=o.feas_tol, active_tol=active_tol, opt_tol=opt_tol,
                              sign_constraints=o.sign_constraints, time_limit=o.certify_time_limit)
        self.certify_time += time.perf_counter() - c0
        return cert

    def finish(self, found: _Candidate | None, last: _Candidate | None, last_ok: _Candidate | None,
               checked: _Candidate | None, stop_reason: str) -> Result:
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
                chosen = _Candidate(x, "not started", False, prog.residuals(x, self.p0), "")
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
            chosen = _Candidate(chosen.x, chosen.status, chosen.ok, chosen.res, "", chosen.x_full)
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
            residual=max(r["bound"] / o.feas_tol, r["constraint"] / o.feas_tol, r[self.comp_key] / o.comp_tol),
            tol=1.0, iterations=self.iterations, time_s=time_s, message="; ".join(messages),
            residuals=chosen.res, objective=chosen.res["objective"], program=prog, extras=extras,
        )

    # -- the certificate and the branch steps ----------------------------------------------------
    def certify(self, chosen: _Candidate, status: Status, first: Any = None) -> tuple[_Candidate, dict[str, Any]]:
        """The B-stationarity certificate of ``chosen`` (``first``, if already computed) and the branch
        steps of :meth:`walk`. The point returned is the last *solid* one of the walk (IPOPT converged
        on its NLP, or its certificate proves it B-stationary: a feasible point where ``d = 0`` solves
        the LPEC needs no IPOPT claim), else ``chosen``; the extras are ``b_stationarity`` (its
        certificate's summary), ``branch_steps`` (the rounds that solved a branch NLP) and ``solid``."""
        from contactmp.solvers.b_stationarity import BVerdict

        walk = self.walk(chosen, self.o.branch_rounds, first=first)
        self.branch_steps += [h for h in walk.history if "accepted" in h]
        extras: dict[str, Any] = {}
        # (a certificate makes a point solved only when the point passes the checks: its own
        # feasibility test, to active_tol, is looser than comp_tol)
        solid = (chosen, walk.certs[0]) if (status is Status.SOLVED or (walk.certs[0].verdict is BVerdict.YES
                                                                        and self.verified(chosen.res))) else None
        for point, cert in zip(walk.points[1:], walk.certs[1:]):
            if point.ok or cert.verdict is BVerdict.YES:
                solid = (point, cert)
        if solid is None:  # not solved, and no move made it so: the point and certificate as they are
            return chosen, {"b_stationarity": walk.certs[0].summary(), **extras}
        return solid[0], {"b_stationarity": solid[1].summary(), **extras, "solid": True}

    def walk(self, start: _Candidate, rounds: int, active_tol: float = 1e-6, opt_tol: float = 1e-6,
             first: Any = None) -> "_Walk":
        """Certify ``start`` (``first``: its certificate, if already computed); while the certificate
        finds a descent branch (at most ``rounds`` times), solve that branch's NLP from the current
        point with the ``"piece"`` IPOPT object and move to its answer when the answer passes the
        independent checks and lowers ``f``. Every certificate is timed apart; each branch NLP counts
        as solving."""
        from contactmp.solvers.b_stationarity import BVerdict

        walk = _Walk([start], [first if first is not None else self.certificate(start.x, active_tol, opt_tol)], [])
        current = start
        while True:
            cert = walk.certs[-1]
            # (the branch of the biactive pairs only, as [pair, side]: the others follow from the point)
            entry: dict[str, Any] = {"round": len(walk.history), "f": cert.objective, "verdict": cert.verdict.value,
                                     "value": cert.value, "branch": [[int(i), b] for i, b in zip(cert.biactive,
                                                                                                cert.branch)]}
            walk.history.append(entry)
            if (cert.verdict is not BVerdict.NO or not self.verified(current.res) or len(walk.history) > rounds
                    or self.left() <= 0):
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
class _Walk:
    """The points of a branch walk (the start first), their certificates and one history entry per
    round (``round``, ``f``, ``verdict``, ``value``, ``branch`` and, for a round that solved a branch
    NLP, ``nlp_status``, ``iterations``, ``f_new``, ``accepted``, ``reason``)."""

    points: list[_Candidate]
    certs: list[Any]
    history: list[dict[str, Any]]


def walk_branches(prog: Program, x: Any, rounds: int = 5, *, backend: str = "casadi", options: NLPOptions | None = None,
                  active_tol: float = 1e-6, opt_tol: float = 1e-6,
                  **overrides: Any) -> tuple[np.ndarray, Any, list[dict[str, Any]]]:
    """From the point ``x`` of the MPCC ``prog``, move along descent branches of the B-stationarity
    certificate (:meth:`_Homotopy.walk`, the same step :func:`solve_program` takes after its
    homotopy): at most ``rounds`` branch NLPs, each solved with IPOPT (``backend``; ``options`` /
    ``overrides`` are :class:`NLPOptions`: ``feas_tol``, ``comp_tol`` judge a move,
    ``certify_time_limit`` bounds each certificate, ``sign_constraints`` reads the pairs).
    Returns ``(x, certificate, history)`` of the last point reached (see :class:`_Walk`)."""
    o = NLPOptions.build(options, **overrides)
    xv = np.asarray(x, dtype=float).ravel()
    if xv.shape != (prog.n_x,) or not np.isfinite(xv).all():
        raise InputError("x", f"must be {prog.n_x} finite numbers")
    h = _Homotopy(prog, backend, strategy_named("direct"), o, None, time.perf_counter())
    start = _Candidate(xv, "given", False, prog.residuals(xv, h.p0), "", h.rel.start(xv))
    walk = h.walk(start, rounds, active_tol, opt_tol)
    return walk.points[-1].x, walk.certs[-1], walk.history


def _solve_portfolio(prog: Program, backend: str, hom: MPCCStrategy, o: NLPOptions,
                     accept: Callable[[np.ndarray], np.ndarray | None] | None, t0: float) -> Result:
    """The ``"portfolio"`` strategy: its members in order, each with its options and CPU cap within
    the time left; the first answer that is solved and not refuted by its certificate (verdict not
    ``"no"``) ends it, else the best solved answer, else the attempt of least residual.
    ``extras["portfolio"]`` lists every attempt."""
    from dataclasses import fields, replace

    limit = math.inf if o.time_limit is None else float(o.time_limit)
    cpu0 = time.process_time()
    tried: list[Result] = []
    chosen: Result | None = None
    for k, member in enumerate(hom.members):
        wall_left = limit - (time.perf_counter() - t0)
        cpu_left = o.cpu_time_limit - (time.process_time() - cpu0)
        if min(wall_left, cpu_left) <= 0:
            break
        values = {f.name: getattr(o, f.name) for f in fields(o)}
        for key, val in member.options:
            values[key] = {**values[key], **val} if key == "ipopt" else val
        cap = member.cpu_seconds if (member.cpu_seconds is not None and k < len(hom.members) - 1) else math.inf
        values.update(time_limit=wall_left, cpu_time_limit=min(cpu_left, cap))
        res = _Homotopy(prog, backend, strategy_named(member.strategy), NLPOptions.build(None, **values), accept,
                        time.perf_counter()).run()
        tried.append(res)
        if res.status is Status.SOLVED and res.extras.get("b_stationarity", {}).get("verdict") != "no":
            chosen = res
            break
    if chosen is None and tried:
        solved = [r for r in tried if r.status is Status.SOLVED]
        chosen = min(solved, key=lambda r: r.objective) if solved else min(tried, key=lambda r: r.residual)
    if chosen is None:  # no time for any member
        chosen = _Homotopy(prog, backend, strategy_named(hom.members[0].strategy), replace(o, time_limit=1e-9),
                           accept, time.perf_counter()).run()
        tried.append(chosen)
    attempts = [{"strategy": r.extras["strategy"], "member": m.describe(), "status": r.status.value,
                 "objective": r.objective, "residual": r.residual, "iterations": r.iterations, "time_s": r.time_s,
                 "b_stationary": r.extras.get("b_stationarity", {}).get("b_stationary")}
                for r, m in zip(tried, hom.members)]
    return chosen.replace(
        solver=f"{backend}/portfolio", iterations=sum(r.iterations for r in tried),
        time_s=time.perf_counter() - t0 - sum(r.extras.get("certify_time_s", 0.0) for r in tried),
        message=f"portfolio: {len(tried)} attempt(s), returned {chosen.extras['strategy']}; {chosen.message}",
        extras={**chosen.extras, "strategy": "portfolio", "member": chosen.extras["strategy"], "portfolio": attempts},
    )
