"""Solvers chosen by name (the CasADi / qpsolvers pattern): one registry per problem class.

Each LCP solver module defines ``NAME``, an ``Options`` dataclass (a :class:`SolverOptions`,
so ``tol`` and ``time_limit`` among its fields) and
``solve(M, q, options=None, progress=None, **overrides) -> Result`` (``progress``: a reporter,
see :mod:`contactmp.progress`); the fc3d solvers take ``(W, q, mu, ...)`` alike. Modules are
imported lazily so that a missing optional backend only affects the solvers that need it, with
its own error message. :func:`register_lcp_solver` and :func:`register_fc3d_solver` add a solver
(a module object or its dotted name); installed packages add theirs under the entry-point groups
``contactmp.lcp_solvers`` and ``contactmp.fc3d_solvers`` (:mod:`contactmp.plugins`), loaded the
first time a name is not found.
"""
from __future__ import annotations

import importlib
import math
import time
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np

from contactmp.errors import InputError, OptionError, did_you_mean
from contactmp.progress import check_progress, check_time_limit
from contactmp.result import BatchResult, Result, Status
from contactmp.solvers.lcp import validate_lcp

#: name -> module implementing it (``solve`` and ``Options`` inside), or its dotted name
LCP_SOLVERS: dict[str, Any] = {
    "lemke": "contactmp.solvers.lcp.lemke",
    "fip": "contactmp.solvers.lcp.fip",
    "newton": "contactmp.solvers.lcp.newton",
    "pgs": "contactmp.solvers.lcp.pgs",
    "ipopt": "contactmp.solvers.lcp.ipopt",
    "cyipopt": "contactmp.solvers.lcp.cyipopt",
}

#: the order in which the default ("auto") tries solvers: exact pivoting first, then the
#: globalized Newton method, then the interior point method, then the MPCC through IPOPT.
DEFAULT_LCP_ORDER: tuple[str, ...] = ("lemke", "newton", "fip", "ipopt")


def _load(name: Any, table: dict[str, Any], loaded: dict[str, Callable[..., Result]],
          what: str) -> Callable[..., Result]:
    """The ``solve`` function of the module ``table[name]`` (strict, with a hint), imported once;
    an unknown name first loads the installed packages' solvers (:func:`_load_plugins`)."""
    if isinstance(name, str) and name not in table:
        _load_plugins()
    if not isinstance(name, str) or name not in table:
        hint = did_you_mean(name, table)
        raise OptionError(f"unknown {what} solver {name!r} (known: {', '.join(table)}){hint}")
    fn = loaded.get(name)
    if fn is None:
        mod = table[name]
        fn = loaded[name] = (importlib.import_module(mod) if isinstance(mod, str) else mod).solve
    return fn


def _register(table: dict[str, Any], loaded: dict[str, Any], what: str, name: Any, module: Any,
              replace: bool) -> None:
    """Add ``module`` (a module object with ``NAME``, ``Options`` and ``solve``, or its dotted name,
    imported when first used) to ``table`` under ``name``."""
    if not isinstance(name, str) or not name or name == "auto":
        raise InputError("name", f"must be a non-empty string other than 'auto', got {name!r}")
    if not isinstance(module, str):
        missing = [a for a in ("NAME", "Options", "solve") if not hasattr(module, a)]
        if missing or not callable(module.solve):
            raise InputError("module", f"an {what} solver module needs NAME, Options and solve(); "
                                       f"{module!r} lacks {', '.join(missing) or 'a callable solve'}")
    if name in table and not replace and table[name] is not module:
        raise InputError("name", f"the {what} solver {name!r} is registered already ({table[name]!r}); "
                                 f"pass replace=True to replace it")
    table[name] = module
    loaded.pop(name, None)


def register_lcp_solver(name: str, module: Any, *, replace: bool = False) -> None:
    """Register the LCP solver ``module`` (see the module docstring) under ``name``; a registered
    name (a built-in included) raises :class:`InputError` naming ``name`` unless ``replace``."""
    _register(LCP_SOLVERS, _LOADED, "LCP", name, module, replace)


def register_fc3d_solver(name: str, module: Any, *, replace: bool = False) -> None:
    """Register the fc3d solver ``module`` under ``name`` (as :func:`register_lcp_solver`)."""
    _register(FC3D_SOLVERS, _LOADED_FC3D, "fc3d", name, module, replace)


def _load_plugins() -> None:
    """Register, once, the solvers installed packages list under ``contactmp.lcp_solvers`` and
    ``contactmp.fc3d_solvers``."""
    from contactmp.plugins import load_entry_points

    for name, module in load_entry_points("contactmp.lcp_solvers"):
        register_lcp_solver(name, module)
    for name, module in load_entry_points("contactmp.fc3d_solvers"):
        register_fc3d_solver(name, module)


def lcp_solver(name: str) -> Callable[..., Result]:
    """Return the ``solve`` function registered under ``name`` (strict, with a hint)."""
    return _load(name, LCP_SOLVERS, _LOADED, "LCP")


_LOADED: dict[str, Callable[..., Result]] = {}


def solve_lcp(M: Any, q: Any, solver: str | tuple[str, ...] | None = None, **options: Any) -> Result:
    """Solve LCP(q, M): z >= 0, w = M z + q >= 0, z^T w = 0.

    ``solver`` is a registry name, a tuple of names (a chain: tried in order until one verifies,
    each with all ``options``; the answer of least residual is returned, with ``extras["attempts"]``)
    or None / ``"auto"``.

    With ``solver=None`` (or ``"auto"``) the solvers of :data:`DEFAULT_LCP_ORDER` are tried in
    turn until one returns a verified solution; ``extras["attempts"]`` lists every attempt and
    ``solver`` names the one whose answer is returned. ``options`` go to the named solver
    (unknown keys are rejected); in auto mode only ``tol``, ``time_limit`` (one wall-clock budget
    for the whole chain: each solver gets what is left) and ``progress`` (a reporter, see
    :mod:`contactmp.progress`, passed to every solver) are accepted. When the budget runs out
    before a verified solution, the answer is the attempt of least residual with status
    ``time_limit``.
    """
    if solver is not None and solver != "auto" and not isinstance(solver, tuple):
        fn = _LOADED.get(solver) if type(solver) is str else None  # hot path: a loaded name
        if fn is None:
            fn = lcp_solver(solver)
        return fn(M, q, **options) if options else fn(M, q)  # the solver validates its input
    if isinstance(solver, tuple):
        M, q = validate_lcp(M, q)
        return _try_in_order(solver, lcp_solver, (M, q), options, set(options))[0]
    M, q = validate_lcp(M, q)
    best, tried = _try_in_order(DEFAULT_LCP_ORDER, lcp_solver, (M, q), options, _AUTO_OPTIONS)
    if not best.success and best.status is not Status.TIME_LIMIT:
        # Lemke's secondary ray is the most telling failure (for copositive-plus M it proves that
        # no solution exists): report it rather than another solver's unconverged iterate.
        ray = next((r for r in tried if r.status is Status.RAY_TERMINATION), None)
        if ray is not None:
            ray.extras["attempts"] = best.extras["attempts"]
            best = ray.replace(time_s=best.time_s)
    return best


#: the options of the auto modes (those every solver takes)
_AUTO_OPTIONS = frozenset(("tol", "time_limit", "progress"))


def _try_in_order(order: tuple[str, ...], lookup: Callable[[str], Callable[..., Result]], args: tuple[Any, ...],
                  options: dict[str, Any], allowed: set[str], per_entry: list[dict[str, Any] | None] | None = None,
                  tried: list[Result] | None = None, t0: float | None = None) -> tuple[Result, list[Result]]:
    """The auto mode: try ``order`` until a verified solution; return the best answer (smallest
    residual) with ``extras["attempts"]`` listing every attempt, and all the attempts. Only the
    ``allowed`` options (those every solver of ``order`` takes) are passed on, plus
    ``per_entry[i]`` to entry ``i`` (an entry whose ``per_entry`` is ``None`` is skipped).
    ``tried`` are attempts already made (unsuccessful; they count as the first entries of the
    list) and ``t0`` the time the chain started (default now): ``time_limit`` runs from ``t0``.
    When the budget ran out (an attempt ended ``time_limit``, or no time was left for the next
    solver) and no attempt verified, the best attempt is returned with status ``time_limit``."""
    extra = set(options) - allowed
    if extra:
        raise OptionError(
            f"auto mode takes only {sorted(allowed)}; got {sorted(extra)} (name a solver to pass them)"
        )
    if t0 is None:
        t0 = time.perf_counter()
    deadline, limit = None, math.inf
    if "time_limit" in options:
        limit = check_time_limit(options["time_limit"])
        deadline = t0 + limit if limit < math.inf else None
    if "progress" in options:
        check_progress(options["progress"])
    tried = [] if tried is None else list(tried)
    cut = False
    for i, name in enumerate(order):
        extra_opts = per_entry[i] if per_entry is not None else {}
        if extra_opts is None:
            continue
        if deadline is not None:  # the whole chain shares one time budget
            left = deadline - time.perf_counter()
            if left <= 0 and tried:
                cut = True
                break
            options = {**options, "time_limit": max(left, 1e-3)}
        tried.append(lookup(name)(*args, **options, **extra_opts))
        if tried[-1].success:
            break
    best = min(tried, key=lambda r: r.residual)
    best.extras["attempts"] = [_attempt(r) for r in tried]
    if not best.success and best.status is not Status.TIME_LIMIT and (
            cut or any(r.status is Status.TIME_LIMIT for r in tried)):
        best = best.replace(status=Status.TIME_LIMIT, message=(f"{best.message}; " if best.message else "") + (
            f"time limit {limit:g} s of the chain reached (best attempt: {best.solver}, {best.status.value})"))
    return best.replace(time_s=time.perf_counter() - t0), tried


def _attempt(r: Result) -> dict[str, Any]:
    """One entry of ``extras["attempts"]`` of the auto mode."""
    return {"solver": r.solver, "status": r.status.value, "residual": r.residual,
            "iterations": r.iterations, "time_s": r.time_s}


def solve_lcp_batch(problems: Any, qs: Any = None, *, tol: float = 1e-8,
                    parallel: bool | None = None) -> BatchResult | list[Result]:
    """Solve a batch of LCPs by Lemke's method, one :class:`Result` each, in input order: a
    :class:`~contactmp.result.BatchResult` for a stacked batch (arrays ``x``, ``residual``,
    ``iterations``, ``success`` over the batch; each Result built when read), a list for a list.

    ``problems`` is either a stacked array ``Ms`` of shape ``(B, n, n)`` with ``qs`` of shape
    ``(B, n)`` (equal sizes: one compiled call, :func:`contactmp.solvers.lcp.lemke.solve_batch`), or a
    list of ``(M, q)`` pairs of any sizes (grouped by size, one compiled call per size; each pair
    validated as by :func:`solve_lcp`). Every answer is verified independently and equals the
    unbatched ``solve_lcp(M, q, "lemke", tol=tol)`` (the same kernel; ``tol`` defaults to Lemke's); a problem whose first start
    does not verify is solved again with Lemke's restarts. ``parallel``: numba threads (default:
    for large batches)."""
    from contactmp.solvers.lcp.lemke import solve_batch

    if qs is not None:
        return solve_batch(problems, qs, tol=tol, parallel=parallel)
    return _by_size([validate_lcp(M, q) for M, q in problems],
                    lambda Ms, qs: solve_batch(Ms, qs, tol=tol, parallel=parallel))


def _by_size(problems: list[tuple[np.ndarray, ...]], solve_stacked: Callable[..., Sequence[Result]]) -> list[Result]:
    """``solve_stacked(*stacked)`` on the validated ``problems`` (tuples of arrays: ``(M, q)`` or
    ``(W, q, mu)``) of each size (the length of ``q``), each array stacked over the group; the
    Results in input order."""
    out: list[Result | None] = [None] * len(problems)
    for m in sorted({p[1].shape[0] for p in problems}):
        idx = [i for i, p in enumerate(problems) if p[1].shape[0] == m]
        stacked = [np.stack([problems[i][k] for i in idx]) for k in range(len(problems[idx[0]]))]
        for i, r in zip(idx, solve_stacked(*stacked)):
            out[i] = r
    return out  # type: ignore[return-value]


#: fc3d (Coulomb-cone) solvers: name -> module (``solve(W, q, mu, options=None, **overrides)``)
FC3D_SOLVERS: dict[str, Any] = {
    "newton": "contactmp.solvers.fc3d.newton",
    "nsgs": "contactmp.solvers.fc3d.nsgs",
    "qvi": "contactmp.solvers.fc3d.qvi",
    "pyramid": "contactmp.solvers.fc3d.pyramid",
    "ipopt": "contactmp.solvers.fc3d.ipopt",
    "prox-newton": "contactmp.solvers.fc3d.prox",
}

#: on problems with more than this many contacts the auto chain starts with the proximal
#: semismooth Newton method on sparse 3 x 3 blocks ("prox-newton", :mod:`contactmp.solvers.fc3d.prox`):
#: on the two Capsules problems (225 and 286 contacts, singular W) it verifies in 9 and 18
#: factorizations where "newton" needs 19 and 12 iterations with twice as many dense-to-sparse
#: factorizations (benchmarks/fc3d_large.py). A failed attempt hands over to the default order.
LARGE_FC3D_MIN_NC = 65
LARGE_FC3D_FIRST = "prox-newton"

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
    return _load(name, FC3D_SOLVERS, _LOADED_FC3D, "fc3d")


def solve_fc3d(W: Any, q: Any, mu: Any, solver: str | None = None, **options: Any) -> Result:
    """Solve fc3d(W, q, mu): r in K_mu, u = W r + q, u + mu ||u_T|| e_n in K_mu^*, r . u_hat = 0.

    With ``solver=None`` (or ``"auto"``) the solvers of :data:`DEFAULT_FC3D_ORDER` are tried in
    turn until one returns a verified solution (natural-map residual <= tol and the dual-cone
    check of :func:`~contactmp.solvers.fc3d.problem.verified_fc3d_result`); ``extras["attempts"]`` lists
    every attempt and ``solver`` names the one whose answer is returned. In auto mode only
    ``tol``, ``time_limit`` (one budget shared by the whole chain) and ``progress`` (a reporter,
    see :mod:`contactmp.progress`) are accepted; as for :func:`solve_lcp`, a chain cut short by
    its time limit returns its best attempt with status ``time_limit``.

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

    **Lean path.** The common call (float64 arrays, nc <= 64, options among ``tol``,
    ``time_limit >= 1 s``) skips the general chain's fixed Python cost: the quick pass is one
    compiled call that checks the data, sweeps and computes the same independent residual and
    dual-cone check (:func:`_solve_fc3d_lean`); answers, statuses, residuals and ``attempts``
    are those of the general path (tests compare the two).
    """
    if solver is not None and solver != "auto":
        return fc3d_solver(solver)(W, q, mu, **options)
    out = _solve_fc3d_lean(W, q, mu, options)
    return out if out is not None else _solve_fc3d_general(W, q, mu, options)


#: the lean path serves a ``time_limit`` of at least this many seconds (its quick pass, at most
#: QUICK_NSGS_SWEEPS sweeps over at most QUICK_NSGS_MAX_NC contacts, runs uninterrupted: a few ms
#: at worst); shorter limits take the general path, which checks the clock between sweeps
LEAN_MIN_TIME_LIMIT = 1.0
_LEAN_KEYS = frozenset(("tol", "time_limit", "quick"))
_F64 = np.dtype(np.float64)


def _fc3d_per_entry(order: tuple[str, ...], nc: int) -> list[dict[str, Any] | None]:
    """The per-entry options of the auto chain: an "nsgs" entry before "newton" is the quick pass
    (or skipped when ``nc > QUICK_NSGS_MAX_NC``), every other entry runs with the chain's options."""
    per_entry: list[dict[str, Any] | None] = []
    for i, name in enumerate(order):
        if not (name == "nsgs" and "newton" in order[i + 1:]):
            per_entry.append({})
        elif nc <= QUICK_NSGS_MAX_NC:
            per_entry.append({"max_iter": QUICK_NSGS_SWEEPS, "early_stop": True})
        else:
            per_entry.append(None)  # skipped
    return per_entry


def _solve_fc3d_general(W: Any, q: Any, mu: Any, options: dict[str, Any]) -> Result:
    """The auto chain of :func:`solve_fc3d` for any input: validate, then ``_try_in_order``.

    On problems of at least :data:`LARGE_FC3D_MIN_NC` contacts (a ``W`` array of that size) the
    dense ``W`` is checked once, in the same compiled pass that splits it into the nonzero 3 x 3
    blocks :data:`LARGE_FC3D_FIRST` works on
    (:func:`contactmp.solvers.fc3d.prox.validate_dense_fc3d`): that solver gets the blocks, the
    rest of the chain the checked dense arrays (no second scan, no second conversion)."""
    from contactmp.solvers.fc3d import validate_fc3d

    t0 = time.perf_counter()
    options = dict(options)
    quick = options.pop("quick", True)
    if not isinstance(quick, (bool, np.bool_)):
        raise OptionError(f"quick must be a bool, got {quick!r}")
    order = DEFAULT_FC3D_ORDER if quick else DEFAULT_FC3D_ORDER[1:]
    lookup = fc3d_solver
    m = W.shape[0] if isinstance(W, np.ndarray) and W.ndim == 2 else 0
    if m // 3 >= LARGE_FC3D_MIN_NC and LARGE_FC3D_FIRST == "prox-newton" and LARGE_FC3D_FIRST not in order:
        from contactmp.solvers.fc3d.prox import validate_dense_fc3d

        W, blocks, q, mu = validate_dense_fc3d(W, q, mu)

        def lookup(name: str) -> Callable[..., Result]:
            fn = fc3d_solver(name)
            return (lambda W, q, mu, **kw: fn(blocks, q, mu, **kw)) if name == LARGE_FC3D_FIRST else fn
    else:
        W, q, mu = validate_fc3d(W, q, mu)
    if mu.shape[0] >= LARGE_FC3D_MIN_NC and LARGE_FC3D_FIRST not in order:
        order = (LARGE_FC3D_FIRST,) + order
    return _try_in_order(order, lookup, (W, q, mu), options, _AUTO_OPTIONS,
                         _fc3d_per_entry(order, mu.shape[0]), t0=t0)[0]


def _solve_fc3d_lean(W: Any, q: Any, mu: Any, options: dict[str, Any]) -> Result | None:
    """The default's hot path on small problems, or ``None`` when the general path must run.

    It serves the common call: ``W`` (3nc x 3nc, nc <= QUICK_NSGS_MAX_NC) and ``q`` float64
    C-contiguous arrays, ``mu`` such an array of nc entries or a number, options among ``tol`` (a
    float in (0, inf)), ``time_limit`` (None or >= LEAN_MIN_TIME_LIMIT) and ``quick=True``, the
    default order starting with the quick NSGS pass. Then the quick pass is one compiled call
    (:func:`contactmp.solvers.fc3d.nsgs.quick_pass`: finiteness check, sweeps, the independent
    residual and dual-cone check) and, when it verifies, its Result is returned with the attempts
    list of the general path. When it does not, the rest of the chain runs as in the general path
    (same options, same shared time budget, the quick attempt first in ``attempts``). Anything
    else (other types, bad values, a block with ``(W_jj)_nn <= 0``) returns ``None`` so that the
    general path validates (naming the bad field) and answers: the two paths give the same ``x``,
    status, residual, message and attempts.
    """
    t0 = time.perf_counter()
    tol = 1e-8
    if options:
        if not options.keys() <= _LEAN_KEYS or options.get("quick", True) is not True:
            return None
        tol = options.get("tol", 1e-8)
        if type(tol) is not float or not 0.0 < tol < math.inf:
            return None
        tl = options.get("time_limit")
        if tl is not None and (type(tl) not in (float, int) or not tl >= LEAN_MIN_TIME_LIMIT):
            return None
    if (type(W) is not np.ndarray or type(q) is not np.ndarray or W.dtype is not _F64 or q.dtype is not _F64
            or W.ndim != 2 or q.ndim != 1 or not W.flags.c_contiguous or not q.flags.c_contiguous):
        return None
    m = q.shape[0]
    if W.shape[0] != m or W.shape[1] != m or m == 0 or m % 3 or m > 3 * QUICK_NSGS_MAX_NC:
        return None
    nc = m // 3
    if type(mu) is np.ndarray:
        if mu.dtype is not _F64 or mu.shape != (nc,) or not mu.flags.c_contiguous:
            return None
    elif isinstance(mu, (float, int)) and not isinstance(mu, bool):
        mu = np.full(nc, float(mu))
    else:
        return None
    order = DEFAULT_FC3D_ORDER
    if order[0] != "nsgs" or "newton" not in order[1:]:
        return None
    from contactmp.solvers.fc3d.nsgs import quick_pass

    first = quick_pass(W, q, mu, tol, QUICK_NSGS_SWEEPS, t0)
    if first is None:
        return None
    return _after_quick_pass(first, W, q, mu, {k: v for k, v in options.items() if k != "quick"}, t0)


def _after_quick_pass(first: Result, W: np.ndarray, q: np.ndarray, mu: np.ndarray, options: dict[str, Any],
                      t0: float) -> Result:
    """The default chain once its quick NSGS pass gave ``first``: ``first`` itself when it verified
    (with its ``attempts``), else the rest of :data:`DEFAULT_FC3D_ORDER` from ``t0`` with ``first``
    as the first attempt."""
    if first.success:  # its time_s already counts from t0 (the quick pass is the whole call)
        first.extras["attempts"] = [_attempt(first)]
        return first
    return _try_in_order(DEFAULT_FC3D_ORDER[1:], fc3d_solver, (W, q, mu), options, _AUTO_OPTIONS,
                         _fc3d_per_entry(DEFAULT_FC3D_ORDER, mu.shape[0])[1:], tried=[first], t0=t0)[0]


def solve_fc3d_batch(problems: Any, qs: Any = None, mus: Any = None, *, tol: float = 1e-8,
                     parallel: bool | None = None) -> BatchResult | list[Result]:
    """Solve a batch of fc3d problems by the default solver (``solve_fc3d(W, q, mu, tol=tol)``), one
    :class:`Result` each, in input order: a :class:`~contactmp.result.BatchResult` for a stacked
    batch (arrays ``x`` = the ``r``, ``residual``, ``iterations``, ``success``; each Result built
    when read), a list for a list.

    ``problems`` is either a stacked array ``Ws`` of shape ``(B, 3nc, 3nc)`` with ``qs`` ``(B, 3nc)``
    and ``mus`` ``(B, nc)`` (or one number for all) -- equal sizes: the quick NSGS pass of the
    default chain runs on the whole batch in one compiled call
    (:func:`contactmp.solvers.fc3d.nsgs.quick_batch`, numba threads when ``parallel`` or, by
    default, for large batches) -- or a list of ``(W, q, mu)`` triples of any sizes (grouped by
    size, one compiled call per size). Every problem is checked (non-finite data or ``mu < 0`` raise
    :class:`~contactmp.errors.InputError` naming ``Ws[b]``, ``qs[b]`` or ``mus[b]``) and every
    answer verified independently; a problem the quick pass does not solve goes on through the
    rest of the default chain alone (Newton, NSGS, QVI, IPOPT), exactly as in
    :func:`solve_fc3d`, whose answer (``r``, status, residual, message, attempts) each Result
    equals. Problems of more than :data:`QUICK_NSGS_MAX_NC` contacts are solved one by one."""
    from contactmp.validate import validate_fc3d

    if qs is None:
        return _by_size([validate_fc3d(W, q, mu) for W, q, mu in problems],
                        lambda Ws, qs_, mus_: solve_fc3d_batch(Ws, qs_, mus_, tol=tol, parallel=parallel))
    from contactmp.solvers.fc3d.nsgs import quick_batch

    t0 = time.perf_counter()
    if type(tol) is not float or not 0.0 < tol < math.inf:
        raise InputError("tol", f"must be a float in (0, inf), got {tol!r}")
    Ws = np.ascontiguousarray(problems, dtype=float)
    qs = np.ascontiguousarray(qs, dtype=float)
    if qs.ndim != 2 or Ws.shape != (qs.shape[0], qs.shape[1], qs.shape[1]) or qs.shape[1] == 0 or qs.shape[1] % 3:
        raise InputError("Ws", f"expected (B, 3nc, 3nc) and qs (B, 3nc) with nc >= 1, got {Ws.shape} and {qs.shape}")
    B, nc = qs.shape[0], qs.shape[1] // 3
    mus = np.ascontiguousarray(np.broadcast_to(np.asarray(mus, dtype=float), (B, nc)) if np.ndim(mus) == 0
                               else mus, dtype=float)
    if mus.shape != (B, nc):
        raise InputError("mus", f"expected a number or shape {(B, nc)}, got {mus.shape}")
    if nc > QUICK_NSGS_MAX_NC or DEFAULT_FC3D_ORDER[0] != "nsgs":
        alone = {b: solve_fc3d(Ws[b], qs[b], mus[b], tol=tol) for b in range(B)}
        return BatchResult("auto", np.empty((B, 3 * nc)), np.empty(B), np.empty(B, dtype=np.int64),
                           np.empty(B, dtype=bool), lambda bs: [alone[b] for b in bs], alone,
                           time.perf_counter() - t0)
    quick = quick_batch(Ws, qs, mus, tol, QUICK_NSGS_SWEEPS, parallel)
    codes = quick.ints[:, 0]
    bad = np.flatnonzero((codes >= 1) & (codes <= 3))
    if bad.size:
        b = int(bad[0])
        field = ("Ws", "qs", "mus")[int(codes[b]) - 1]
        raise InputError(f"{field}[{b}]", "contains NaN or inf" + (" or a negative entry" if field == "mus" else ""))
    verified = quick.verified
    alone = {}
    unverified = np.flatnonzero(~verified).tolist()
    for b, first in zip(unverified, quick.results(unverified)):
        if first is None:  # a block with (W_jj)_nn <= 0: the general path reports it
            alone[b] = solve_fc3d(Ws[b], qs[b], mus[b], tol=tol)
        else:  # the rest of the chain, its clock started where this problem's share of the batch began
            alone[b] = _after_quick_pass(first, Ws[b], qs[b], mus[b], {"tol": tol}, time.perf_counter() - first.time_s)

    def make(bs: list[int]) -> list[Result]:
        """The Results of the problems ``bs``, which the quick pass solved and verified."""
        made = quick.results(bs)
        for first in made:
            first.extras["attempts"] = [_attempt(first)]
        return made

    return BatchResult("auto", quick.r, quick.floats[:, 1].copy(), quick.ints[:, 1].copy(), verified, make,
                       alone, time.perf_counter() - t0)
