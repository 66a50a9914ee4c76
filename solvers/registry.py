"""Solvers chosen by name (the CasADi / qpsolvers pattern): one registry per problem class.

Each LCP solver module defines ``NAME``, an ``Options`` dataclass (a :class:`SolverOptions`)
and ``solve(M, q, options=None, **overrides) -> Result``. Modules are imported lazily so that a
missing optional backend only affects the solvers that need it, with its own error message.
"""
from __future__ import annotations

import importlib
import time
from typing import Any, Callable

import numpy as np

from contactmp.errors import OptionError
from contactmp.result import Result, Status
from contactmp.solvers.lcp import validate_lcp

#: name -> module implementing it (``solve`` and ``Options`` inside)
LCP_SOLVERS: dict[str, str] = {
    "lemke": "contactmp.solvers.lemke",
    "fip": "contactmp.solvers.fip",
    "newton": "contactmp.solvers.newton",
    "pgs": "contactmp.solvers.pgs",
    "ipopt": "contactmp.solvers.ipopt_lcp",
    "cyipopt": "contactmp.solvers.ipopt_lcp_cy",
}

#: the order in which the default ("auto") tries solvers: exact pivoting first, then the
#: globalized Newton method, then the interior point method, then the MPCC through IPOPT.
DEFAULT_LCP_ORDER: tuple[str, ...] = ("lemke", "newton", "fip", "ipopt")


def lcp_solver(name: str) -> Callable[..., Result]:
    """Return the ``solve`` function registered under ``name`` (strict, with a hint)."""
    if name not in LCP_SOLVERS:
        import difflib

        close = difflib.get_close_matches(name, list(LCP_SOLVERS), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise OptionError(f"unknown LCP solver '{name}' (known: {', '.join(LCP_SOLVERS)}){hint}")
    if not isinstance(name, str):
        raise OptionError(f"solver must be a name (one of {', '.join(LCP_SOLVERS)}), got {name!r}")
    fn = _LOADED.get(name)
    if fn is None:
        fn = _LOADED[name] = importlib.import_module(LCP_SOLVERS[name]).solve
    return fn


_LOADED: dict[str, Callable[..., Result]] = {}


def solve_lcp(M: Any, q: Any, solver: str | None = None, **options: Any) -> Result:
    """Solve LCP(q, M): z >= 0, w = M z + q >= 0, z^T w = 0.

    With ``solver=None`` (or ``"auto"``) the solvers of :data:`DEFAULT_LCP_ORDER` are tried in
    turn until one returns a verified solution; ``extras["attempts"]`` lists every attempt and
    ``solver`` names the one whose answer is returned. ``options`` go to the named solver
    (unknown keys are rejected); in auto mode only ``tol`` is accepted.
    """
    if solver is not None and solver != "auto":
        fn = _LOADED.get(solver) if type(solver) is str else None  # hot path: a loaded name
        if fn is None:
            fn = lcp_solver(solver)
        return fn(M, q, **options) if options else fn(M, q)  # the solver validates its input
    M, q = validate_lcp(M, q)
    best, tried = _try_in_order(DEFAULT_LCP_ORDER, lcp_solver, (M, q), options, {"tol"})
    if not best.success:
        # Lemke's secondary ray is the most telling failure (for copositive-plus M it proves that
        # no solution exists): report it rather than another solver's unconverged iterate.
        ray = next((r for r in tried if r.status is Status.RAY_TERMINATION), None)
        if ray is not None:
            ray.extras["attempts"], ray.time_s = best.extras["attempts"], best.time_s
            best = ray
    return best


def _try_in_order(
    order: tuple[str, ...], lookup: Callable[[str], Callable[..., Result]], args: tuple[Any, ...],
    options: dict[str, Any], allowed: set[str], per_entry: list[dict[str, Any] | None] | None = None,
) -> tuple[Result, list[Result]]:
    """The auto mode: try ``order`` until a verified solution; return the best answer (smallest
    residual) with ``extras["attempts"]`` listing every attempt, and all the attempts. Only the
    ``allowed`` options (those every solver of ``order`` takes) are passed on, plus
    ``per_entry[i]`` to entry ``i`` (an entry whose ``per_entry`` is ``None`` is skipped)."""
    extra = set(options) - allowed
    if extra:
        raise OptionError(
            f"auto mode takes only {sorted(allowed)}; got {sorted(extra)} (name a solver to pass them)"
        )
    deadline = time.perf_counter() + options["time_limit"] if "time_limit" in options else None
    t0 = time.perf_counter()
    tried: list[Result] = []
    for i, name in enumerate(order):
        extra_opts = per_entry[i] if per_entry is not None else {}
        if extra_opts is None:
            continue
        if deadline is not None:  # the whole chain shares one time budget
            left = deadline - time.perf_counter()
            if left <= 0 and tried:
                break
            options = {**options, "time_limit": max(left, 1e-3)}
        tried.append(lookup(name)(*args, **options, **extra_opts))
        if tried[-1].success:
            break
    best = min(tried, key=lambda r: r.residual)
    best.extras["attempts"] = [
        {"solver": r.solver, "status": r.status.value, "residual": r.residual,
         "iterations": r.iterations, "time_s": r.time_s}
        for r in tried
    ]
    best.time_s = time.perf_counter() - t0
    return best, tried


#: fc3d (Coulomb-cone) solvers: name -> module (``solve(W, q, mu, options=None, **overrides)``)
FC3D_SOLVERS: dict[str, str] = {
    "newton": "contactmp.solvers.fc3d_newton",
    "nsgs": "contactmp.solvers.fc3d_nsgs",
    "qvi": "contactmp.solvers.fc3d_qvi",
    "pyramid": "contactmp.solvers.fc3d_pyramid",
    "ipopt": "contactmp.solvers.fc3d_ipopt",
}

#: the order in which the default tries cone solvers: a quick nonsmooth Gauss-Seidel pass, the
#: semismooth Newton method (PATH-like), then NSGS with its full budget, the QVI fixed point and
#: the NLP through IPOPT. An "nsgs" entry placed before "newton" is the quick pass of
#: :func:`solve_fc3d` (at most :data:`QUICK_NSGS_SWEEPS` sweeps with an early stop, and only on
#: problems of at most :data:`QUICK_NSGS_MAX_NC` contacts; skipped otherwise).
DEFAULT_FC3D_ORDER: tuple[str, ...] = ("nsgs", "newton", "nsgs", "qvi", "ipopt")

#: sweep budget of the quick NSGS pass (the shared problems it solves need at most 31 sweeps)
QUICK_NSGS_SWEEPS = 50
#: the quick NSGS pass runs only on problems with at most this many contacts
QUICK_NSGS_MAX_NC = 64

_LOADED_FC3D: dict[str, Callable[..., Result]] = {}


def fc3d_solver(name: str) -> Callable[..., Result]:
    """Return the fc3d ``solve`` function registered under ``name`` (strict, with a hint)."""
    if not isinstance(name, str) or name not in FC3D_SOLVERS:
        import difflib

        close = difflib.get_close_matches(str(name), list(FC3D_SOLVERS), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise OptionError(f"unknown fc3d solver {name!r} (known: {', '.join(FC3D_SOLVERS)}){hint}")
    fn = _LOADED_FC3D.get(name)
    if fn is None:
        fn = _LOADED_FC3D[name] = importlib.import_module(FC3D_SOLVERS[name]).solve
    return fn


def solve_fc3d(W: Any, q: Any, mu: Any, solver: str | None = None, **options: Any) -> Result:
    """Solve fc3d(W, q, mu): r in K_mu, u = W r + q, u + mu ||u_T|| e_n in K_mu^*, r . u_hat = 0.

    With ``solver=None`` (or ``"auto"``) the solvers of :data:`DEFAULT_FC3D_ORDER` are tried in
    turn until one returns a verified solution (natural-map residual <= tol and the dual-cone
    check of :func:`~contactmp.solvers.fc3d.verified_fc3d_result`); ``extras["attempts"]`` lists
    every attempt and ``solver`` names the one whose answer is returned. In auto mode only
    ``tol`` and ``time_limit`` (one budget shared by the whole chain) are accepted.

    **Why NSGS comes first on small problems.** Newton's method pays a fixed cost per call
    (Jacobian assembly, LU, line search in Python: 0.2-1.5 ms on 1-9 contacts), while an NSGS
    sweep over a few contacts costs microseconds in compiled code. On the 19 shared Siconos
    problems NSGS verifies the 12 with nc <= 9 in at most 19 sweeps, NESpheres_30_1 (44 contacts)
    in 1 and Confeti-ex03 (54) in 31; it stagnates on OneObject (24, 25) and BoxesStack1 (52).
    So an "nsgs" entry placed before "newton" runs as a quick pass: at most
    :data:`QUICK_NSGS_SWEEPS` sweeps with ``early_stop`` (it gives up once its observed linear
    rate cannot reach ``tol`` within that budget, typically after 4-6 sweeps when stagnating),
    only when ``nc <= QUICK_NSGS_MAX_NC`` and every diagonal block has ``(W_jj)_nn > 0``. A failed
    pass costs a few sweeps and the chain goes on with Newton from ``r = 0`` exactly as before, so
    the set of problems solved can only grow; every answer is judged by the same independent check.

    ``quick=False`` leaves the quick pass out (the chain starts with Newton from ``r = 0``). Where
    the forces are not unique (a box resting on four corners) the two pick different members of
    the continuum: Gauss-Seidel sweeps tend to leave internal friction that squeezes the body
    (up to ``mu c_n`` at each corner of a resting box), Newton from ``r = 0`` does not; time
    stepping passes ``quick=False`` so that its trajectories of forces stay free of it.
    """
    from contactmp.solvers.fc3d import validate_fc3d

    if solver is not None and solver != "auto":
        return fc3d_solver(solver)(W, q, mu, **options)
    quick = options.pop("quick", True)
    if not isinstance(quick, (bool, np.bool_)):
        raise OptionError(f"quick must be a bool, got {quick!r}")
    W, q, mu = validate_fc3d(W, q, mu)
    order = DEFAULT_FC3D_ORDER if quick else tuple(n for n in DEFAULT_FC3D_ORDER[1:])
    nc = mu.shape[0]
    per_entry: list[dict[str, Any] | None] = []
    for i, name in enumerate(order):
        quick = name == "nsgs" and "newton" in order[i + 1:]
        if not quick:
            per_entry.append({})
        elif nc <= QUICK_NSGS_MAX_NC:
            per_entry.append({"max_iter": QUICK_NSGS_SWEEPS, "early_stop": True})
        else:
            per_entry.append(None)  # skipped
    return _try_in_order(order, fc3d_solver, (W, q, mu), options, {"tol", "time_limit"},
                         per_entry)[0]
