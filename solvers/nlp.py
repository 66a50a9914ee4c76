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

Whatever the backend says, the :class:`~contactmp.result.Result` is ``solved`` only when the independent
checks of :meth:`Program.residuals` pass: scaled bound and constraint violations ``<= feas_tol``
and ``max_i |min(a_i, b_i)| <= comp_tol``; and, when the program has an objective, the last NLP
must have ended with an IPOPT success (a feasible point is not a minimizer). A relaxed NLP that
IPOPT declares locally infeasible ends the homotopy when its answer does violate the relaxed
constraints (the relaxed sets shrink as sigma falls); when the answer satisfies them after all,
the homotopy goes on.
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
from contactmp.solvers.ipopt import BACKENDS, IpoptNLP, check_ipopt_options, ipopt_status
from contactmp.solvers.lcp import SolverOptions
from contactmp.solvers.mpcc import MPCC_STRATEGIES, fischer_burmeister, relaxation, strategy_named

__all__ = ["solve_program", "NLPOptions", "STRATEGIES", "BACKENDS", "fischer_burmeister"]

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
    tol : IPOPT's convergence tolerance (its ``tol``) for each NLP.
    feas_tol : accepted scaled bound / constraint violation (see :meth:`Program.residuals`).
    comp_tol : accepted complementarity residual ``max_i |min(a_i, b_i)|``.
    max_iter : IPOPT iterations per NLP.
    sigma0, sigma_factor, sigma_min : the Scholtes homotopy ``sigma <- sigma_factor * sigma``.
    rho0, rho_factor, rho_max : the elastic_l1 penalty sequence ``rho <- rho_factor * rho``.
    eps0, eps_factor, eps_min : the Fischer-Burmeister smoothing ``eps <- eps_factor * eps``.
    sign_constraints : add ``a >= 0`` and ``b >= 0`` (False: rely on variable bounds; judge
        complementarity by ``max_i a_i b_i``).
    time_limit : wall-clock seconds for the whole solve (``None`` or ``inf``: none); checked
        between NLPs, and inside each NLP unless ``ipopt`` sets ``max_wall_time`` (cyipopt: the
        time left as IPOPT's ``max_wall_time``; CasADi, whose IPOPT options are fixed when the
        solver is built: an iteration callback that stops IPOPT at the deadline).
    ipopt : further IPOPT options, checked against IPOPT's own option table.
    certify : attach the B-stationarity certificate of the returned point
        (:func:`contactmp.solvers.b_stationarity.b_stationarity`, its LPEC solved as a MILP by
        HiGHS) as ``extras["b_stationarity"]`` when the program has complementarity pairs; timed
        apart (the result's ``time_s`` does not include it).
    certify_time_limit : seconds for that MILP.
    """

    tol: float = 1e-8
    feas_tol: float = 1e-6
    comp_tol: float = 1e-8
    max_iter: int = 3000
    sigma0: float = 1.0
    sigma_factor: float = 0.1
    sigma_min: float = 1e-12
    rho0: float = 1.0
    rho_factor: float = 10.0
    rho_max: float = 1e8
    eps0: float = 1.0
    eps_factor: float = 0.1
    eps_min: float = 1e-10
    sign_constraints: bool = True
    time_limit: float = math.inf
    ipopt: dict[str, Any] = field(default_factory=dict)
    certify: bool = True
    certify_time_limit: float = 10.0

    def check(self) -> None:
        """Reject ill-typed values; copy and type-check the IPOPT options."""
        super().check()
        for name in ("feas_tol", "comp_tol"):
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
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 0:
            raise OptionError(f"max_iter must be a nonnegative integer, got {self.max_iter!r}")
        for name in ("sign_constraints", "certify"):
            if not isinstance(getattr(self, name), bool):
                raise OptionError(f"{name} must be True or False, got {getattr(self, name)!r}")
        _positive_finite(self, "certify_time_limit")
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
    parameter values ``p0`` are used and ``x0`` starts the first NLP.

    ``accept(x)``, if given, is called after every NLP that IPOPT solves and may return a
    repaired point (for an LCP: the active-set polish); a repaired point that passes the
    independent checks ends the homotopy and is returned (the caller vouches for its optimality
    when the program has an objective). Never raises on non-convergence: the returned
    :class:`~contactmp.result.Result` carries the status (``solver = "backend/strategy"``;
    ``residuals`` the independent checks of the chosen point -- ``bound``, ``constraint``,
    ``comp_min``, ``comp_prod``, ``comp_sign``, ``objective`` --; ``residual`` the largest of
    bound / feas_tol, constraint / feas_tol and the complementarity residual / comp_tol, judged
    against ``tol = 1``; ``extras``: ``backend_status`` (IPOPT's text for the last NLP),
    ``backend``, ``strategy``, ``homotopy`` (every NLP: parameter, status, iterations, residuals),
    ``ipopt_options`` and, for fischer_burmeister, ``smoothed_pairs``).
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
    ipopt = {**IPOPT_DEFAULTS, "tol": float(o.tol), "max_iter": int(o.max_iter), **o.ipopt}
    limit = math.inf if o.time_limit is None else float(o.time_limit)
    wall_each_nlp = math.isfinite(limit) and "max_wall_time" not in o.ipopt
    if wall_each_nlp:
        ipopt["max_wall_time"] = max(limit - (time.perf_counter() - t0), 1e-3)
    ts = hom.homotopy(o) if prog.n_comp else [0.0]  # no pairs: one NLP
    rel = relaxation(prog, strategy, ts[0], sign_constraints=o.sign_constraints)
    nlp = rel.program
    solver = IpoptNLP(nlp.nlp(), ipopt, backend, t0 + limit if wall_each_nlp else math.inf)
    lbx, ubx, lbg, ubg = nlp.lbx, nlp.ubx, nlp.lbg, nlp.ubg
    p0 = prog.p0
    comp_key = "comp_min" if o.sign_constraints else "comp_prod"

    def verified(res: dict[str, float]) -> bool:
        return res["bound"] <= o.feas_tol and res["constraint"] <= o.feas_tol and res[comp_key] <= o.comp_tol

    x = np.clip(prog.x0, lbx, ubx)
    history: list[dict[str, Any]] = []
    iterations = 0
    param_name, nested = hom.param, hom.nested
    last: _Candidate | None = None      # the answer of the last NLP
    last_ok: _Candidate | None = None   # the answer of the last NLP IPOPT solved
    found: _Candidate | None = None     # a verified answer (ends the homotopy)
    checked: _Candidate | None = None   # the last answer that passes the checks although IPOPT failed
    stop_reason = "homotopy exhausted"
    for t in ts:
        if limit - (time.perf_counter() - t0) <= 0:
            stop_reason = "time_limit"
            break
        pt = rel.p(t)
        ans = solver.solve(x, pt, lbx, ubx, lbg, ubg)
        iterations += ans.iterations
        ok = ans.ok
        extra: dict[str, float] = {}
        if rel.n_smoothed:
            # IPOPT's |phi_eps| <= tol also holds far out on an axis: count the NLP as solved only
            # when its answer is on the curves a_i b_i = eps^2 (and the rest of the NLP) to feas_tol
            extra["smoothing_violation"] = rel.violation(ans.x, pt)
            ok = ok and extra["smoothing_violation"] <= o.feas_tol
        cand = _Candidate(ans.x, ans.status, ok, prog.residuals(ans.x, p0))
        history.append({param_name: t, "status": ans.status, "iterations": ans.iterations, **cand.res,
                        **extra})
        last = cand
        if np.isfinite(ans.x).all() and (nested or ok):
            # (a failed NLP of a non-nested homotopy says nothing of the next: keep the last start)
            x = ans.x
        if not cand.ok and verified(cand.res):
            checked = cand
        if cand.ok:
            last_ok = cand
            if verified(cand.res):
                found = cand
                break
            if accept is not None:
                xr = accept(ans.x.copy())
                if xr is not None:
                    rep = _Candidate(np.asarray(xr, dtype=float).ravel(), ans.status, True,
                                     prog.residuals(xr, p0), repaired=True)
                    history[-1]["repaired"] = {k: rep.res[k] for k in ("bound", "constraint", comp_key)}
                    if verified(rep.res):
                        found = rep
                        break
        if ans.status == "Infeasible_Problem_Detected" and nested and rel.violation(ans.x, pt) > o.feas_tol:
            # IPOPT's answer violates the relaxed NLP itself; the next relaxations are tighter
            stop_reason = "the relaxed NLP is locally infeasible"
            break
    backend_status = last.status if last is not None else "not started"
    messages = [f"{strategy} via {backend}: {len(history)} NLP(s), last IPOPT status {backend_status}"]
    if found is not None:
        chosen, status = found, Status.SOLVED
        if found.repaired:
            messages.append("answer repaired by accept() and verified")
    else:
        # the last NLP's answer, unless it failed and an earlier NLP succeeded
        chosen = last if (last is not None and (last.ok or last_ok is None)) else last_ok
        if checked is not None and (chosen is None or not verified(chosen.res)):
            # an NLP IPOPT did not finish left a point that passes the independent checks (feasible
            # and complementary): return it rather than a worse one; with an objective its status
            # stays unsolved (IPOPT certified no stationarity), without one it is a solution
            chosen = checked
            messages.append(f"returning a point that passes the checks although IPOPT ended {checked.status}")
        if chosen is None:  # time limit before the first NLP
            chosen = _Candidate(x, "not started", False, prog.residuals(x, p0))
        elif chosen is not last:
            messages.append("returning the answer of the last NLP IPOPT solved")
        if verified(chosen.res) and (chosen.ok or not prog.has_objective):
            status = Status.SOLVED
        elif stop_reason == "time_limit":
            status = Status.TIME_LIMIT
            messages.append(f"time limit {limit:g} s reached")
        else:
            status = ipopt_status(backend_status)
            r = chosen.res
            messages.append(
                f"{stop_reason}; checks: bound {r['bound']:.2e}, constraint {r['constraint']:.2e} "
                f"(feas_tol {o.feas_tol:.0e}), {comp_key} {r[comp_key]:.2e} (comp_tol {o.comp_tol:.0e})"
            )
    r = chosen.res
    time_s = time.perf_counter() - t0
    extras = {"backend_status": backend_status, "backend": backend, "strategy": strategy,
              "homotopy": history, "ipopt_options": ipopt,
              **({"smoothed_pairs": rel.n_smoothed} if strategy == "fischer_burmeister" else {})}
    if o.certify and prog.n_comp:
        from contactmp.solvers.b_stationarity import b_stationarity

        extras["b_stationarity"] = b_stationarity(prog, chosen.x, p=p0, feas_tol=o.feas_tol,
                                                  time_limit=o.certify_time_limit).summary()
    return Result(
        status=status, x=chosen.x, solver=f"{backend}/{strategy}",
        residual=max(r["bound"] / o.feas_tol, r["constraint"] / o.feas_tol, r[comp_key] / o.comp_tol), tol=1.0,
        iterations=iterations, time_s=time_s, message="; ".join(messages),
        residuals=chosen.res, objective=chosen.res["objective"], program=prog, extras=extras,
    )


@dataclass
class _Candidate:
    x: np.ndarray
    status: str
    ok: bool
    res: dict[str, float]
    repaired: bool = False
