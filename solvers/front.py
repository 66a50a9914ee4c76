"""The solver front door: a :class:`~contactmp.program.Program` goes to the solver its structure fits.

:func:`solve` tries the reductions of :mod:`contactmp.reductions` in turn -- the LCP (Lemke,
Newton, ... through :func:`~contactmp.solvers.registry.solve_lcp`), the cone problem (fc3d through
:func:`~contactmp.solvers.registry.solve_fc3d`; the associated cone LCP, a convex cone QP, through
:func:`~contactmp.solvers.cone_qp.cone_lcp.solve_cone_lcp`) -- and falls back to the NLP/MPCC (IPOPT,
:func:`~contactmp.solvers.nlp.solve.solve_program`), which takes every smooth program. The answer is
one :class:`~contactmp.result.Result` whose ``x`` is the program's vector (``program`` set, so
``result.value(handle)`` works) and ``extras["reduction"]`` says which route it took. With
``via`` one route is forced; when it (or, with ``via=None``, every route) refuses,
:class:`~contactmp.errors.UnsupportedProgramError` gives each route's reason
(:func:`routes` lists them without solving).
"""
from __future__ import annotations

from typing import Any

from contactmp.errors import OptionError, UnsupportedProgramError
from contactmp.program import Program
from contactmp.result import Result

__all__ = ["solve", "routes", "ROUTES"]

#: the routes of :func:`solve`, in the order tried
ROUTES = ("lcp", "cone", "nlp")
#: an LCP step is split into islands from this many unknowns on: below, finding and assembling them
#: costs more than Lemke on the whole (benchmarks/batch.py, cube ensembles stepped with the pyramid:
#: 4 cubes, 96 unknowns, 337 us as islands against 253 us whole; 16 cubes, 384 unknowns, 1.07 ms
#: against 4.18 ms; 64 cubes 10 ms against 247 ms)
ISLANDS_MIN_LCP = 128
#: an fc3d problem whose islands cannot be batched (a named solver, or options) is solved island by
#: island only above this many contacts
ISLANDS_MIN_NC = 64


def routes(prog: Program) -> dict[str, str | None]:
    """For each route of :data:`ROUTES`: None if it takes ``prog``, else why not."""
    from contactmp.reductions import refusal

    out: dict[str, str | None] = {}
    for name in ROUTES[:-1]:
        out[name] = _precheck(name, prog) or refusal(name, prog)
    out["nlp"] = None
    return out


def _precheck(name: str, prog: Program) -> str | None:
    """A cheap structural refusal (before building a reduction), or None."""
    if name == ROUTES[0] and prog.cones:
        return "the program has cone complementarity constructs (not linear)"
    return None


def solve(prog: Program, solver: Any = None, *, tol: float = 1e-10, via: str | None = None,
          islands: bool = True, **options: Any) -> Result:
    """Solve ``prog`` by the first route (:data:`ROUTES`) that takes it, or by ``via``.

    ``solver`` names the solver of the route taken (a tuple of LCP solver names is a chain; a dict
    maps route names to solvers; None: the route's default order); ``tol`` is the verification tolerance of the LCP and cone routes;
    ``options`` go to the route's solver (for the NLP route: :func:`solve_program`'s keywords,
    e.g. ``strategy``, ``backend``). With ``islands`` (the default) an LCP or fc3d problem whose
    matrix is block diagonal (independent contact islands: separate objects, an
    :func:`~contactmp.models.systems.ensemble` of systems) is solved island by island, equal-size
    islands as one batch (:mod:`contactmp.solvers.islands`), and judged whole; ``extras["islands"]``
    records each. Never raises on non-convergence (the status says it);
    raises :class:`UnsupportedProgramError` with every route's reason when none takes ``prog``.
    """
    from contactmp.errors import InputError

    if not isinstance(prog, Program):
        raise InputError("prog", f"must be a contactmp Program, got {type(prog).__name__}")
    if via is not None and via not in ROUTES:
        raise OptionError(f"via must be one of {ROUTES} or None, got {via!r}")
    reasons: dict[str, str] = {}
    for name in ROUTES if via is None else (via,):
        why = _precheck(name, prog)
        if why is not None:
            reasons[name] = why
            continue
        chosen = solver.get(name) if isinstance(solver, dict) else solver
        try:
            if name == "nlp":
                return _nlp(prog, chosen, tol, options)
            return _ROUTE_SOLVERS[name](prog, chosen, tol, options, bool(islands))
        except UnsupportedProgramError as exc:
            reasons[name] = str(exc)
    raise UnsupportedProgramError("no solver route takes this program: "
                                  + "; ".join(f"{k}: {v}" for k, v in reasons.items()))


def _lcp(prog: Program, solver: Any, tol: float, options: dict[str, Any], islands: bool) -> Result:
    from contactmp.solvers.islands import coupling_components, solve_lcp_islands
    from contactmp.solvers.registry import solve_lcp

    red = prog.to_lcp()
    blocks = coupling_components(red.M) if islands and red.q.shape[0] >= ISLANDS_MIN_LCP else []
    if len(blocks) > 1:
        res = solve_lcp_islands(red.M, red.q, blocks, solver, tol=tol, **options)
    else:
        res = solve_lcp(red.M, red.q, solver, tol=tol, **options)
    return _back(res, red.invert(res.x), prog, "lcp")


def _cone(prog: Program, solver: Any, tol: float, options: dict[str, Any], islands: bool) -> Result:
    red = prog.to_cone_problem()
    if red.associated:  # the cone LCP of a convex cone QP; planar contacts without their dummy rows
        import numpy as np

        from contactmp.solvers.cone_qp import solve_cone_lcp

        keep = np.ones(red.W.shape[0], dtype=bool)
        if red.planar.all():
            keep[2::3] = False
        res = solve_cone_lcp(red.W[np.ix_(keep, keep)], red.q[keep], red.mu, 3 - int(red.planar.all()),
                             solver=solver or "ipopt", tol=tol, **options)
        r = np.zeros(red.W.shape[0])
        r[keep] = res.x
        return _back(res, red.invert(r), prog, "cone")
    from contactmp.solvers.islands import coupling_components, solve_fc3d_islands
    from contactmp.solvers.registry import solve_fc3d

    nc = red.mu.shape[0]
    batched = solver in (None, "auto") and not options  # what solve_fc3d_islands batches (tol is separate)
    # islands pay when they are batched (one compiled quick pass for all) or large; otherwise each
    # island's solve costs the fixed Python overhead of a Newton solve (0.2-1 ms) and the whole
    # problem is faster (8 cubes on a floor, 32 contacts: 2.4 ms whole, 7 ms as 8 Newton solves)
    blocks = coupling_components(red.W, 3) if islands and nc > 1 and (batched or nc > ISLANDS_MIN_NC) else []
    if len(blocks) > 1:
        res = solve_fc3d_islands(red.W, red.q, red.mu, blocks, solver, tol=tol, **options)
    else:
        res = solve_fc3d(red.W, red.q, red.mu, solver=solver, tol=tol, **options)
    return _back(res, red.invert(res.x), prog, "cone")


def _nlp(prog: Program, solver: Any, tol: float, options: dict[str, Any]) -> Result:
    from contactmp.solvers.nlp import solve_program

    if solver is not None:
        options = {"backend": solver, **options}
    res = solve_program(prog, **options)
    res.extras["reduction"] = "nlp"
    return res


def _back(res: Result, x: Any, prog: Program, route: str) -> Result:
    """``res`` of a reduced problem as a result of ``prog`` (``x`` the program's vector)."""
    return res.replace(x=x, program=prog, extras={**res.extras, "reduction": route, "reduced_x": res.x})


_ROUTE_SOLVERS = {"lcp": _lcp, "cone": _cone}
