"""Solve a :class:`~contactmp.program.Program` (an MPCC) with IPOPT, through CasADi or cyipopt.

The complementarity pairs ``0 <= a _|_ b >= 0`` violate the constraint qualifications IPOPT
relies on, so they are handled by a named MPCC strategy (:data:`STRATEGIES`, the registry
:data:`contactmp.solvers.nlp.mpcc.MPCC_STRATEGIES`; each is the Program transformation
:func:`contactmp.solvers.nlp.mpcc.relax`, solved here along its homotopy):

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
    No transformation of its own: the strategies of :data:`~contactmp.solvers.nlp.mpcc.PORTFOLIO` in
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
   point's B-stationarity certificate (:mod:`contactmp.solvers.nlp.stationarity`, the LPEC as a HiGHS
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

import numpy as np

from contactmp.errors import InputError, OptionError, did_you_mean
from contactmp.program import Program
from contactmp.result import Result, Status
from contactmp.solvers.nlp.homotopy import Candidate, Homotopy
from contactmp.solvers.ipopt import BACKENDS, check_ipopt_options
from contactmp.solvers.options import SolverOptions
from contactmp.solvers.nlp.mpcc import (CONE_BOUND, MPCC_STRATEGIES, MPCCStrategy, fischer_burmeister, strategy_named,
                                    valid_cone_bound)

__all__ = ["solve_program", "NLPOptions", "WARM_START", "STEP_START", "warm_start_changes", "STRATEGIES", "BACKENDS", "fischer_burmeister", "walk_branches"]

#: MPCC strategy name -> :class:`~contactmp.solvers.nlp.mpcc.MPCCStrategy` (the registry of solvers/nlp/mpcc.py)
STRATEGIES = MPCC_STRATEGIES

#: the values of :attr:`NLPOptions.derivatives`
DERIVATIVES = ("auto", "full", "stages", "stages_jit")


def warm_start_changes(sigma0: float, mu_init: float, push: float, homotopy_tol: float | None = None) -> dict[str, Any]:
    """NLPOptions changes that start the Scholtes homotopy at ``sigma0`` from a point already near
    a solution: IPOPT starts with a small barrier (monotone, ``mu_init``) and moves the start off
    its bounds by only ``push`` (``bound_push``, ``bound_frac`` and their slack twins) instead of
    1e-2, which would throw a complementary start far from complementarity; ``homotopy_tol``, when
    given, is the tolerance of the homotopy's inner NLPs. Added to the caller's options, the
    ``ipopt`` entries merged into the caller's."""
    changes: dict[str, Any] = {"sigma0": sigma0, "ipopt": {
        "mu_strategy": "monotone", "mu_init": mu_init, "bound_push": push, "bound_frac": push,
        "slack_bound_push": push, "slack_bound_frac": push}}
    if homotopy_tol is not None:
        changes["homotopy_tol"] = homotopy_tol
    return changes


#: the warm re-solve of a receding horizon (transcriptions/receding_horizon.py): the shifted plan is
#: already complementary and nearly feasible, so the Scholtes homotopy starts at ``sigma0 = 1e-6``,
#: its NLPs are solved loosely (``homotopy_tol = 1e-3``: the active-set polish then finishes, as in a
#: cold solve), IPOPT's barrier starts at ``1e-6`` and the bound push is ``1e-8``. Box task, shifts
#: 1-4, median IPOPT iterations (benchmarks/receding_horizon.py ``--warm``): cold 172; the shifted
#: guess with the cold options 219 (worse than cold); without the bound-push changes 52; all of these 21.
WARM_START: dict[str, Any] = warm_start_changes(sigma0=1e-6, mu_init=1e-6, push=1e-8, homotopy_tol=1e-3)

#: a time step started at given values (``TimeStepping.step(start=...)``, a position-gap step): the
#: values of a plan's step solve it to about 1e-10, so the homotopy starts at ``sigma0 = 1e-8``,
#: the barrier at ``1e-9``, the bound push ``1e-10``. Sagittal Solo12 steps where the simulator's
#: default start found another solution (up to 0.3 away; 35-435 IPOPT iterations): from the plan's
#: step values 3-34 iterations, back at the plan's step to at most 1e-7; with WARM_START's values one
#: step of 13 ended 7.7e-6 away.
STEP_START: dict[str, Any] = warm_start_changes(sigma0=1e-8, mu_init=1e-9, push=1e-10)


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
    cone_bounds : with ``sign_constraints``, the NLPs bound every disk-form direction ``w_i`` of the
        program's cones (:meth:`Program.add_cone_complementarity`) to ``[-cone_bound, cone_bound]``
        (:attr:`~contactmp.solvers.nlp.mpcc.Relaxation.directions`); the disk side ``1 - |w|^2 >= 0``
        implies ``|w_i| <= 1``, so no relaxed feasible set changes. Without them a force-free
        contact at rest leaves ``w`` in no row but that side, whose linearization at ``w = 0`` is
        flat: IPOPT's steps in ``w`` are then unbounded (``w^2`` overflows: CasADi's ``Inf detected
        for output g``) and the rest-to-rest cone box took 1,070-6,729 IPOPT iterations instead of
        136-388 with the box at 1 (Scholtes); the cone box push of ``cito-box``, 20 starts: median
        1,983 iterations unbounded, 188 with ``|w_i| <= 1``. False: the program's own bounds only.
    cone_bound : the half-width of that box, a finite number >= 1 (default 1.5). At ``1`` the box
        is active together with the disk row wherever a contact slides along a tangent axis
        (``w = +-e_i``), a degenerate point for the interior point: on the 3D Solo12 walk and jump
        (elastic l1, 300 CPU s per start) the cone then converged on 18/20 and 10/14 starts; all six
        failed starts converged without the box, and walk start 19 (``not_solved`` at 1) in 538
        iterations at 1.5. Above 1 the box is never active at a point of the disk and still bounds
        the steps (cone box push of ``cito-box``: 20/20 at 1.5, median 178 iterations, every start
        at the pyramid's optimum 36.114, where the box at 1 ended 10 of 20 at 37.027; the cone
        finger push took a median 1,036 iterations at 1.5 against 606 at 1). The bounds
        can cost a one-NLP solve: ``"direct"`` from the 3-D cone box test's guess took 56 instead of
        16 iterations with ``|w_i| <= 1`` (384 instead of 17 to rest).
    polish_max_iter : IPOPT iterations of each polish and branch step (a piece that needs more is
        left to the homotopy).
    polish : after every NLP of the homotopy, solve the *tightened* NLP of its active set (the side
        nearer to 0 of each pair fixed at 0, both sides of a pair with ``max(|a_i|, |b_i|) <=
        2 sqrt(max_j |a_j b_j|)``, the strategy's rows switched off; see
        :meth:`~contactmp.solvers.nlp.mpcc.Relaxation.piece_bounds`) with the same IPOPT object, and
        return its answer when IPOPT succeeds and the independent checks pass.
    warm_start_duals : start every NLP after the first from the previous NLP's multipliers too
        (IPOPT's ``warm_start_init_point``); primal warm starts are always on.
    warm_resolve : when an inner NLP's answer (solved at ``homotopy_tol``) passes the checks, solve
        the same NLP again at ``tol`` from its primal-dual point (IPOPT's ``warm_start_init_point``
        with the barrier at :data:`~contactmp.solvers.nlp.homotopy.WARM_RESOLVE` ``mu_init``) instead of
        from its primal point with IPOPT's default start (False). Small MPCCs: 1 iteration instead
        of 5-7 for the re-solve; Solo12 3D walk starts, where the cold re-solve took 870-2,150 of
        their 1,467-2,454 IPOPT iterations, gain little (start 3: 2,373 against 2,454 in all).
    resolve_at_last : solve that verified answer again at the homotopy's *last* parameter
        (``rho_max``, ``sigma_min``, ...) instead of its own (False). For elastic l1 the point stays
        complementary and stationary as ``rho`` grows (the bound multipliers of the sides grow with
        it), and IPOPT finished from such points in 10-27 iterations where the re-solve at the
        same ``rho`` took hundreds to thousands (Solo12 3D walk starts).
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
        (:func:`contactmp.solvers.nlp.stationarity.b_stationarity`, its LPEC solved as a MILP by
        HiGHS) as ``extras["b_stationarity"]`` when the program has complementarity pairs, and take
        the branch steps it finds; the certificates are timed apart (``extras["certify_time_s"]``,
        not in the result's ``time_s``).
    certify_time_limit : seconds for each certificate's MILP.
    refine : refine a solved point by Newton's method on its active pieces
        (:func:`~contactmp.solvers.nlp.refine.refine_on_pieces`: the minimum-norm correction onto the
        rows, bounds and pair sides active at it) and return the refined point when its independent
        residuals are lower (``extras["refinement"]`` gives the numbers either way, its time is in
        ``time_s``). IPOPT leaves rows and pairs at about 1e-8 (up to ``feas_tol``); refined, they
        hold to rounding, which a trajectory replayed through a simulator needs (a Solo12 walk:
        residual 9.5e-7 -> 3.8e-15 in 3 steps and 2.8 s, objective changed by 6.7e-8, replay error
        4.1e-6 -> 6.9e-12). The point moves by about the residual it removes, so IPOPT's
        stationarity holds to about that.
    derivatives : how IPOPT's constraint Jacobian and Lagrangian Hessian are built: ``"full"``
        (CasADi differentiates the whole SX program), ``"stages"`` (a program with stage groups,
        such as a :class:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO`: one copy of
        each stage's derivatives evaluated at every stage, :mod:`contactmp.solvers.structured`;
        build time and memory of one knot instead of N), ``"stages_jit"`` (the same, compiled
        with the system's C compiler by CasADi's JIT: faster iterations after a compile of about
        30 s per template, kept for the process), ``"auto"`` (``"stages"`` when the program has
        stage groups, else ``"full"``). The values are the same; only the time and memory differ.
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
    cone_bounds: bool = True
    cone_bound: float = CONE_BOUND
    polish: bool = True
    polish_max_iter: int = 200
    warm_start_duals: bool = False
    warm_resolve: bool = False
    resolve_at_last: bool = False
    branch_rounds: int = 5
    infeasible_stop: int = 3
    time_limit: float = math.inf
    cpu_time_limit: float = math.inf
    ipopt: dict[str, Any] = field(default_factory=dict)
    certify: bool = True
    certify_time_limit: float = 10.0
    derivatives: str = "auto"
    refine: bool = False

    @property
    def comp_key(self) -> str:
        """The complementarity residual judged: ``comp_min`` (``max |min(a, b)|``), or with
        ``sign_constraints`` off ``comp_prod`` (``max a b``)."""
        return "comp_min" if self.sign_constraints else "comp_prod"

    def verified(self, r: dict[str, float]) -> bool:
        """The independent checks of :meth:`Program.residuals` ``r``: bounds and rows to
        ``feas_tol``, complementarity to ``comp_tol``."""
        return r["bound"] <= self.feas_tol and r["constraint"] <= self.feas_tol and r[self.comp_key] <= self.comp_tol

    def scaled_residual(self, r: dict[str, float]) -> float:
        """The largest of bound / feas_tol, constraint / feas_tol and the complementarity residual /
        comp_tol (a result's ``residual``, judged against 1)."""
        return max(r["bound"] / self.feas_tol, r["constraint"] / self.feas_tol, r[self.comp_key] / self.comp_tol)

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
        for name in ("sign_constraints", "cone_bounds", "certify", "polish", "warm_start_duals", "warm_resolve",
                     "resolve_at_last", "refine"):
            if not isinstance(getattr(self, name), bool):
                raise OptionError(f"{name} must be True or False, got {getattr(self, name)!r}")
        _positive_finite(self, "certify_time_limit")
        if not valid_cone_bound(self.cone_bound):
            raise OptionError(f"cone_bound must be a finite number >= 1 (the disk side implies |w_i| <= 1), "
                              f"got {self.cone_bound!r}")
        if self.derivatives not in DERIVATIVES:
            raise OptionError(f"derivatives must be one of {', '.join(DERIVATIVES)}, got {self.derivatives!r}"
                              f"{did_you_mean(str(self.derivatives), DERIVATIVES)}")
        v = self.cpu_time_limit
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise OptionError(f"cpu_time_limit must be a positive number of seconds (inf: none), got {v!r}")
        self.ipopt = check_ipopt_options(self.ipopt)


def _positive_finite(o: NLPOptions, name: str) -> None:
    v = getattr(o, name)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0 and math.isfinite(v)):
        raise OptionError(f"{name} must be a positive finite number, got {v!r}")


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
        res = _solve_portfolio(prog, backend, hom, o, accept, t0)
    else:
        res = Homotopy(prog, backend, hom, o, accept, t0).run()
    return _refined(prog, res, o) if o.refine else res


def _refined(prog: Program, res: Result, o: NLPOptions) -> Result:
    """``res`` with its point refined on its active pieces when it is solved and the refinement
    lowers its independent residuals (:attr:`NLPOptions.refine`)."""
    from contactmp.solvers.nlp.refine import refine_on_pieces

    if res.status is not Status.SOLVED:
        return res
    t0 = time.perf_counter()
    ref = refine_on_pieces(prog, res.x, derivatives=o.derivatives)
    extras = {**res.extras, "refinement": ref.summary()}
    time_s = res.time_s + time.perf_counter() - t0
    r = ref.residuals
    if not (ref.accepted and o.verified(r)):
        return res.replace(extras=extras, time_s=time_s)
    return res.replace(x=ref.x, residuals=r, objective=r["objective"], extras=extras, time_s=time_s,
                       residual=o.scaled_residual(r))


def walk_branches(prog: Program, x: Any, rounds: int = 5, *, backend: str = "casadi", options: NLPOptions | None = None,
                  active_tol: float = 1e-6, opt_tol: float = 1e-6,
                  **overrides: Any) -> tuple[np.ndarray, Any, list[dict[str, Any]]]:
    """From the point ``x`` of the MPCC ``prog``, move along descent branches of the B-stationarity
    certificate (:meth:`Homotopy.walk`, the same step :func:`solve_program` takes after its
    homotopy): at most ``rounds`` branch NLPs, each solved with IPOPT (``backend``; ``options`` /
    ``overrides`` are :class:`NLPOptions`: ``feas_tol``, ``comp_tol`` judge a move,
    ``certify_time_limit`` bounds each certificate, ``sign_constraints`` reads the pairs).
    Returns ``(x, certificate, history)`` of the last point reached (see :class:`Walk`)."""
    o = NLPOptions.build(options, **overrides)
    xv = np.asarray(x, dtype=float).ravel()
    if xv.shape != (prog.n_x,) or not np.isfinite(xv).all():
        raise InputError("x", f"must be {prog.n_x} finite numbers")
    h = Homotopy(prog, backend, strategy_named("direct"), o, None, time.perf_counter())
    start = Candidate(xv, "given", False, prog.residuals(xv, h.p0), "", h.rel.start(xv))
    walk = h.walk(start, rounds, active_tol, opt_tol)
    return walk.points[-1].x, walk.certs[-1], walk.history


def _solve_portfolio(prog: Program, backend: str, hom: MPCCStrategy, o: NLPOptions,
                     accept: Callable[[np.ndarray], np.ndarray | None] | None, t0: float) -> Result:
    """The ``"portfolio"`` strategy: its members in order, each with its options and CPU cap within
    the time left; the first answer that is solved and not refuted by its certificate (verdict not
    ``"no"``) ends it, else the best solved answer, else the attempt of least residual.
    ``extras["portfolio"]`` lists every attempt."""
    limit = math.inf if o.time_limit is None else float(o.time_limit)
    cpu0 = time.process_time()
    tried: list[Result] = []
    chosen: Result | None = None
    for k, member in enumerate(hom.members):
        wall_left = limit - (time.perf_counter() - t0)
        cpu_left = o.cpu_time_limit - (time.process_time() - cpu0)
        if min(wall_left, cpu_left) <= 0:
            break
        changes = dict(member.options)
        if "ipopt" in changes:  # merged into the caller's IPOPT options
            changes["ipopt"] = {**o.ipopt, **changes["ipopt"]}
        cap = member.cpu_seconds if (member.cpu_seconds is not None and k < len(hom.members) - 1) else math.inf
        mo = NLPOptions.build(o, **changes, time_limit=wall_left, cpu_time_limit=min(cpu_left, cap))
        res = Homotopy(prog, backend, strategy_named(member.strategy), mo, accept, time.perf_counter()).run()
        tried.append(res)
        if res.status is Status.SOLVED and res.extras.get("b_stationarity", {}).get("verdict") != "no":
            chosen = res
            break
    if chosen is None and tried:
        solved = [r for r in tried if r.status is Status.SOLVED]
        chosen = min(solved, key=lambda r: r.objective) if solved else min(tried, key=lambda r: r.residual)
    if chosen is None:  # no time for any member
        chosen = Homotopy(prog, backend, strategy_named(hom.members[0].strategy), NLPOptions.build(o, time_limit=1e-9),
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
