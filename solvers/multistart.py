"""Multistart: how many solutions does a contact problem have, and how often is each one found?

A problem is solved by a local method from many seeded starting points; the verified answers are
clustered into distinct solutions, each one checked again independently, counted, and reported
with the share of starts that reached it. Four kinds of problem:

``"lcp"``  LCP(q, M) (``(M, q)``): find ``z >= 0``, ``w = M z + q >= 0``, ``z^T w = 0``. Local
    method: the semismooth Newton method (:mod:`contactmp.solvers.lcp.newton`, ``restart=False`` so
    that the answer depends on the start) from ``z0``. A *structured* start guesses the
    complementary index set ``alpha`` (``z_i`` basic for ``i`` in ``alpha``, ``z_i = 0``
    elsewhere): it solves ``M_aa z_a = -q_a`` directly and keeps that point when it verifies,
    else runs Newton from ``z0 = s 1_alpha``. Enumerating all ``2^n`` sets finds every solution
    whose basis matrix is nonsingular.
``"fc3d"`` the Coulomb-cone problem ``(W, q, mu)`` (:mod:`contactmp.solvers.fc3d.problem`). Local method:
    :mod:`contactmp.solvers.fc3d.newton` from ``r0``. A structured start guesses each contact's
    mode, separated (``r_j = 0``), sticking (``r_jT = 0``, ``r_jn = s``) or sliding
    (``||r_jT|| = mu_j r_jn``, ``r_jn = s``, a seeded direction): ``3^nc`` patterns.
``"program"`` a :class:`~contactmp.program.Program` (an MPCC), solved by
    :func:`~contactmp.solvers.nlp.solve.solve_program` from a seeded initial guess. A structured start
    guesses, per pair ``0 <= a_j _|_ b_j >= 0``, which side vanishes: that side's variable is set
    to 0 in the guess and the other side's variable (when it is positive-free) to ``s``; a side
    that is an expression rather than one variable is left as drawn. ``2^n_comp`` patterns.
``"trajectory"`` a :class:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO`: the
    distinct local optima of the whole transcription. A random start ``i`` is the transcription's
    own start ``i``, ``to.initial_guess(default_rng([seed, i]), scale)`` (no noise for ``i = 0``);
    a structured start applies a mode pattern, as for a Program, to that guess.

Starts. Start ``i`` draws everything from ``numpy.random.default_rng([seed, i])``. Starts
``0 .. S-1`` are structured, the rest random, with ``S`` set by ``structured``: ``True`` gives all
the patterns when there are at most ``starts`` of them (complete enumeration; pattern ``i`` is
``i`` written in base 2 or 3, digit ``j`` for pair/contact ``j``), else ``starts // 2`` patterns
drawn at random; an integer ``k`` gives ``min(k, starts, #patterns)``; ``False`` gives none. A
random LCP start is ``z0_i = s E_i B_i`` (``E_i`` exponential, ``B_i`` Bernoulli(1/2): random
faces of the orthant); a random fc3d start puts each ``r_j`` in its cone (``r_jn = s E_j`` with
probability 0.8, else 0; ``r_jT`` uniform in the disk of radius ``mu_j r_jn``); a random Program
start is ``x0 + scale max(1, |x0|) N(0, 1)`` clipped to the bounds. ``s = scale ||q||_inf /
max_i |M_ii|`` (the size of a one-variable solution ``-q_i / M_ii``; 1 when undefined).

Clusters. The verified answers are grouped in start order (leader clustering): an answer joins
the nearest cluster whose first member ``y`` satisfies ``||x - y||_inf <= tol_cluster *
max(1, ||y||_inf)`` (and, for programs and trajectories, ``|f(x) - f(y)| <= tol_cluster *
max(1, |f(y)|)``), else it starts a new one. ``x`` is ``z`` (LCP), ``r`` (fc3d), the whole
variable vector (program) or the states and inputs ``q_k, v_k, u_k`` (trajectory: impulses are
not compared, since rank-deficient contact Jacobians leave them non-unique along one
trajectory). The default ``tol_cluster`` is 1e-6 (LCP, fc3d: their answers are exact to about
1e-8) and 1e-4 (programs and trajectories: IPOPT's answers are exact to its tolerances). Each
cluster's representative is its member of least residual, checked again here: LCP
``||min(z, Mz + q)||_inf <= tol``, fc3d the natural-map residual ``<= tol`` and the dual-cone
violation ``<= sqrt(tol)``, programs :meth:`Program.residuals` against ``feas_tol`` and
``comp_tol`` of the NLP options. A problem with a continuum of solutions (a rank-deficient
contact LCP) gives as many clusters as distinct points the starts happened to reach.

:func:`solve_from_guesses` runs the same loop from the caller's initial guesses.

Motions. Distinct solutions are counted twice, each count with its own tolerance: by the
*impulses* (the clusters above: ``z``, ``r`` or the program's ``x``, relative ``tol_cluster``) and by
the *motion* they produce, ``v = A x + b`` of a :class:`~contactmp.reductions.MotionMap` (a time
step's next velocity ``v_{k+1} = v_free + A z``; :meth:`LCPReduction.motion_map
<contactmp.reductions.LCPReduction.motion_map>` and :meth:`ConeReduction.motion_map
<contactmp.reductions.ConeReduction.motion_map>` carry it from the step's Program to its LCP or
fc3d problem). Statically indeterminate contacts (a box resting on four corners) have many impulse
sets and one motion. The verified clusters' representatives are grouped by motion (leader
clustering, absolute ``||v - v_lead||_inf <= tol_motion``); ``tol_motion`` defaults to
:meth:`MotionMap.tolerance <contactmp.reductions.MotionMap.tolerance>` ``(e, V)``:
``MOTION_SAFETY ||A||_inf e + 64 eps V``, with ``e`` the bound on a verified answer's distance to an
exact solution of a nearby problem (LCP: the residual tolerance ``tol``, the residual being
absolute; fc3d: ``tol max(||q||, ||r||, ||u||)`` over the representatives, its residual being
relative to that scale; programs: ``max(feas_tol, comp_tol)``, taken as such) and ``V`` the largest
``||v||_inf`` found. Without a map the motion is not judged for an LCP (``n_distinct_motions`` is
None and ``motion_note`` says why: a bare ``(M, q)`` carries nothing that maps ``z`` to a velocity,
and its ``w = M z + q`` mixes contact velocities with friction slacks), nor for programs and
trajectories; for a bare fc3d problem the contact velocities ``u = W r + q`` are the motion
(``u = J v_{k+1} + ...`` is the motion of the contact points: equal ``v_{k+1}`` give equal ``u``,
so the count by ``u`` is a lower bound on the count by ``v_{k+1}``, equal to it when ``J`` has full
column rank).

Every start's outcome is one JSON-able record (start, structured, pattern, method, status,
residual, iterations, time, ``x``, objective, mode) written through
:func:`contactmp.parallel.run_tasks`, so a multistart runs in this process (``workers=0``, the
default here), on a local Dask cluster (``workers=N``) or on an existing one (``scheduler=``),
streams its records to ``store_path`` and resumes there. Record keys carry a fingerprint of the
problem and of every setting that changes a start's outcome, so a store is never reused for a
different problem. Programs and transcriptions hold CasADi symbols that do not pickle: to run
them on Dask workers, pass a zero-argument function that builds the problem (each worker builds
it once) instead of the problem itself.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from contactmp.errors import InputError, OptionError
from contactmp.progress import check_time_limit
from contactmp.result import Result, Status, jsonable

if TYPE_CHECKING:  # pragma: no cover
    from distributed import Client
    from numpy.typing import ArrayLike

    from contactmp.records import RecordStore

__all__ = ["multistart", "solve_from_guesses", "best_start", "MultistartResult", "Cluster", "MotionCluster", "KINDS",
           "cluster_points"]

#: kinds of problem multistart takes
KINDS = ("lcp", "fc3d", "program", "trajectory")

#: default clustering tolerance per kind
DEFAULT_TOL_CLUSTER = {"lcp": 1e-6, "fc3d": 1e-6, "program": 1e-4, "trajectory": 1e-4}

#: default ``scale`` of the random starts per kind (the transcription's own default noise is 0.1)
DEFAULT_SCALE = {"lcp": 1.0, "fc3d": 1.0, "program": 1.0, "trajectory": 0.1}

#: bump when a start's outcome would change for the same settings (part of every record key)
_FORMAT = "ms1"


# -- Results -------------------------------------------------------------------------------------
@dataclass
class Cluster:
    """One distinct solution found by the multistart.

    ``x`` is the representative (the member of least residual), ``residual`` its independent
    residual recomputed here and ``verified`` whether it passes; ``count`` starts reached it
    (``starts`` lists them), ``share = count / n_run``; ``objective`` for programs and
    trajectories; ``mode`` the representative's contact mode (LCP: ``'1'`` where ``z_i > w_i``;
    fc3d: ``'0'`` separated, ``'1'`` sticking, ``'2'`` sliding, per contact).
    """

    index: int
    x: np.ndarray
    residual: float
    verified: bool
    count: int
    share: float
    starts: list[int]
    objective: float | None = None
    mode: str | None = None
    motion: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return jsonable(dataclasses.asdict(self))


@dataclass
class MotionCluster:
    """One distinct motion: the verified impulse clusters (``clusters``, their indices) whose
    representatives' motions ``v = A x + b`` agree with ``v`` (the leader's) to ``tol_motion``.

    ``count`` starts reached it (summed over its clusters), ``share = count / n_run``; ``spread`` is
    the largest ``||v_c - v||_inf`` over its clusters (how closely the impulse sets agree on it).
    """

    index: int
    v: np.ndarray
    clusters: list[int]
    count: int
    share: float
    spread: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return jsonable(dataclasses.asdict(self))


@dataclass(frozen=True)
class MultistartResult:
    """The outcome of :func:`multistart` and :func:`solve_from_guesses` (frozen).

    ``clusters`` (distinct impulses, tolerance ``tol_cluster``) are sorted by decreasing ``count``
    (ties: first reached first); ``motions`` (distinct motions, absolute tolerance ``tol_motion`` in
    the units of ``v``; empty when the motion is not judged, ``motion_note`` then says why) likewise;
    ``motion_map`` describes the map (its name, size and ``||A||_inf``). ``starts`` holds
    every start's record (start order) with ``"cluster"`` added (-1: the start did not end
    ``solved``). ``n_starts`` starts were asked for, ``n_run`` have a record (fewer only when the
    run was stopped early), ``n_structured`` of them are structured. ``time_s`` is the wall time of
    this call; ``time_per_start_s`` that of the computing part divided by the starts computed by
    this call (``n_computed``; the rest came from the store). ``workers`` is 0 for an in-process
    run, else the number of Dask workers. Programs and transcriptions also give ``best``, the start
    chosen by :func:`best_start` (None when no start ran), and ``results``: start index -> the
    result of its :func:`~contactmp.solvers.nlp.solve.solve_program` call (the object itself for a start
    solved in this process by this call; else a :class:`~contactmp.result.Result` rebuilt from its
    record); :attr:`best_result` is the best one's.
    """

    kind: str
    clusters: list[Cluster]
    starts: list[dict[str, Any]]
    n_starts: int
    n_run: int
    n_structured: int
    seed: int
    tol_cluster: float
    key_prefix: str
    time_s: float
    time_per_start_s: float
    n_computed: int
    workers: int
    store_path: str | None = None
    complete: bool = True
    extras: dict[str, Any] = field(default_factory=dict)
    best: int | None = None
    results: dict[int, Any] = field(default_factory=dict, repr=False, compare=False)
    motions: list[MotionCluster] = field(default_factory=list)
    tol_motion: float | None = None
    motion_map: dict[str, Any] | None = None
    motion_note: str = ""

    @property
    def best_result(self) -> Any:
        """The result of the best start (programs and transcriptions; None otherwise)."""
        return None if self.best is None else self.results.get(self.best)

    @property
    def n_solved(self) -> int:
        """Starts that ended ``solved``."""
        return sum(1 for r in self.starts if r["status"] == Status.SOLVED.value)

    @property
    def n_distinct(self) -> int:
        """Number of distinct verified solutions by their impulses (= :attr:`n_distinct_impulses`)."""
        return sum(1 for c in self.clusters if c.verified)

    @property
    def n_distinct_impulses(self) -> int:
        """Number of distinct verified impulse sets (``z``, ``r`` or ``x``; tolerance ``tol_cluster``)."""
        return self.n_distinct

    @property
    def n_distinct_motions(self) -> int | None:
        """Number of distinct motions of the verified solutions (tolerance ``tol_motion``); None when
        the motion is not judged (no map: see ``motion_note``)."""
        return None if self.tol_motion is None else len(self.motions)

    def to_dict(self, with_starts: bool = False) -> dict[str, Any]:
        """A JSON-ready summary (the start records only with ``with_starts``)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("starts", "results")}
        out.update(n_solved=self.n_solved, n_distinct=self.n_distinct, n_distinct_impulses=self.n_distinct_impulses,
                   n_distinct_motions=self.n_distinct_motions, clusters=[c.to_dict() for c in self.clusters],
                   motions=[m.to_dict() for m in self.motions])
        return jsonable({**out, "starts": self.starts} if with_starts else out)


# -- What a worker needs to run start i (picklable) ----------------------------------------------
@dataclass(frozen=True)
class _Spec:
    kind: str
    token: str
    data: tuple[np.ndarray, ...] | None     # (M, q) or (W, q, mu); None for programs/transcriptions
    factory: Callable[[], Any] | None       # builds the program / transcription in a worker
    seed: int
    n_structured: int
    enumerate_all: bool                     # pattern i = digits of i (all patterns are tried)
    scale: float
    options: tuple[tuple[str, Any], ...]    # solver overrides
    backend: str = "casadi"
    strategy: str = "scholtes"
    deadline: float | None = None           # time.time() at which the multistart stops (not in the token)
    guesses: dict[int, np.ndarray] | None = None  # start -> the caller's initial guess (solve_from_guesses)
    keep_results: bool = False              # keep each solve's result in the process's cache entry


@dataclass
class _Prepared:
    """A problem and what its starts need, built once per process."""

    kind: str
    problem: Any
    size: float = 1.0                       # s / scale
    pair_vars: tuple[list[int | None], list[int | None]] = field(default_factory=lambda: ([], []))
    traj_index: np.ndarray | None = None
    results: dict[int, Any] = field(default_factory=dict)  # start -> solve result (keep_results)


#: token -> prepared problem, in this process (a worker keeps the few last ones)
_CACHE: dict[str, _Prepared] = {}
_CACHE_SIZE = 4


def _prepared(spec: _Spec) -> _Prepared:
    prep = _CACHE.get(spec.token)
    if prep is None:
        if spec.data is not None:
            problem: Any = spec.data
        elif spec.factory is not None:
            problem = spec.factory()
        else:  # pragma: no cover - multistart always fills the cache or sends a factory
            raise RuntimeError("multistart: problem not available in this process")
        prep = _prepare(spec.kind, problem)
        while len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[spec.token] = prep
    return prep


def _prepare(kind: str, problem: Any) -> _Prepared:
    if kind in ("lcp", "fc3d"):
        A, q = problem[0], problem[1]
        d = float(np.max(np.abs(np.diag(A)))) if A.size else 0.0
        qn = float(np.max(np.abs(q))) if q.size else 0.0
        size = qn / d if d > 0 and qn > 0 else 1.0
        return _Prepared(kind, problem, size=size)
    prog = problem if kind == "program" else problem.program
    a, b = prog.comp_a, prog.comp_b
    pa = [prog.variable_index(a[j]) for j in range(prog.n_comp)]
    pb = [prog.variable_index(b[j]) for j in range(prog.n_comp)]
    traj = None
    if kind == "trajectory":
        idx = [np.arange(h.index.start, h.index.stop) for h in (*problem.q, *problem.v, *problem.u)]
        traj = np.concatenate(idx) if idx else np.zeros(0, dtype=int)
    return _Prepared(kind, problem, pair_vars=(pa, pb), traj_index=traj)


def _pattern(spec: _Spec, i: int, rng: np.random.Generator, base: int, m: int) -> np.ndarray:
    """Digit j of start i's mode pattern (base 2 or 3, m digits)."""
    if spec.enumerate_all:
        return np.array([(i // base ** j) % base for j in range(m)], dtype=int)
    return rng.integers(0, base, size=m)


class _CutShort(Exception):
    """A start not run (or not finished) before the multistart's time limit: no record is written
    for it, so that a later run with the same store computes it."""


#: in the error text of a start cut short by the multistart's time limit
_CUT_MARK = "contactmp-multistart-time-limit"


def _run_start(spec: _Spec, i: int) -> dict[str, Any]:
    """The record of start ``i`` (module-level, so Dask can ship it).

    With the multistart's deadline (``spec.deadline``, seconds since the epoch): a start that
    would begin after it raises :class:`_CutShort` at once; one that begins before gets the time
    left as its solver's ``time_limit`` (when that is below the start's own), and raises
    :class:`_CutShort` if it ends ``time_limit`` because of it."""
    binding = False
    if spec.deadline is not None:
        left = spec.deadline - time.time()
        if left <= 0:
            raise _CutShort(f"{_CUT_MARK}: start {i} not begun")
        opts = dict(spec.options)
        own = opts.get("time_limit")
        if own is None or left < float(own):
            opts["time_limit"] = left
            binding = True
            spec = dataclasses.replace(spec, options=tuple(opts.items()))
    prep = _prepared(spec)
    rng = np.random.default_rng([spec.seed, int(i)])
    structured = i < spec.n_structured
    t0 = time.perf_counter()
    if spec.kind == "lcp":
        rec = _lcp_start(spec, prep, i, rng, structured)
    elif spec.kind == "fc3d":
        rec = _fc3d_start(spec, prep, i, rng, structured)
    else:
        rec = _program_start(spec, prep, i, rng, structured)
    if binding and rec["status"] == Status.TIME_LIMIT.value:
        raise _CutShort(f"{_CUT_MARK}: start {i} cut short")
    rec.update(start=int(i), structured=bool(structured), time_s=time.perf_counter() - t0)
    return rec


# -- LCP ----------------------------------------------------------------------------------------
def _basis_point(M: np.ndarray, q: np.ndarray, alpha: np.ndarray) -> np.ndarray | None:
    """``z`` with ``M_aa z_a = -q_a`` and ``z_i = 0`` off ``alpha`` (None when M_aa is singular)."""
    z = np.zeros_like(q)
    if alpha.any():
        try:
            za = np.linalg.solve(M[np.ix_(alpha, alpha)], -q[alpha])
        except np.linalg.LinAlgError:
            return None
        if not np.isfinite(za).all():
            return None
        z[alpha] = za
    return z


def _lcp_start(spec: _Spec, prep: _Prepared, i: int, rng: np.random.Generator, structured: bool) -> dict[str, Any]:
    from contactmp.solvers.lcp import newton
    from contactmp.solvers.lcp import lcp_residual

    M, q = prep.problem
    n = q.shape[0]
    opts = {"restart": False, **dict(spec.options)}
    tol = float(opts.get("tol", newton.Options.tol))
    s = spec.scale * prep.size
    pattern = None
    if structured:
        pat = _pattern(spec, i, rng, 2, n)
        pattern = "".join(map(str, pat))
        alpha = pat.astype(bool)
        z = _basis_point(M, q, alpha)
        if z is not None:
            if np.min(z) >= -1e-12 * max(1.0, float(np.max(np.abs(z)))):
                z = np.maximum(z, 0.0)  # round-off below zero; a truly negative z_a fails the check
            res = lcp_residual(M, q, z)
            if res <= tol:
                return _lcp_record(M, q, z, "basis", Status.SOLVED, res, 0, pattern)
        z0 = s * alpha.astype(float)
    else:
        z0 = s * rng.exponential(size=n) * (rng.random(n) < 0.5)
    out = newton.solve(M, q, z0=z0, **opts)
    return _lcp_record(M, q, out.x, "newton", out.status, out.residual, out.iterations, pattern)


def _lcp_record(M: np.ndarray, q: np.ndarray, z: np.ndarray, method: str, status: Status,
                residual: float, iterations: int, pattern: str | None) -> dict[str, Any]:
    w = M @ z + q if np.isfinite(z).all() else np.full_like(q, np.nan)
    return {"method": method, "status": status.value, "residual": float(residual),
            "iterations": int(iterations), "pattern": pattern, "x": z,
            "mode": "".join("1" if a > b else "0" for a, b in zip(z, w))}


# -- fc3d ---------------------------------------------------------------------------------------
def _fc3d_start(spec: _Spec, prep: _Prepared, i: int, rng: np.random.Generator, structured: bool) -> dict[str, Any]:
    from contactmp.solvers.fc3d import newton as fc3d_newton

    W, q, mu = prep.problem
    nc = mu.shape[0]
    s = spec.scale * prep.size
    r0 = np.zeros(3 * nc)
    pattern = None
    if structured:
        pat = _pattern(spec, i, rng, 3, nc)
        pattern = "".join(map(str, pat))
        rn = np.where(pat > 0, s, 0.0)
        rad = np.where(pat == 2, mu * rn, 0.0)
    else:
        rn = s * rng.exponential(size=nc) * (rng.random(nc) < 0.8)
        rad = mu * rn * np.sqrt(rng.random(nc))
    theta = 2 * math.pi * rng.random(nc)
    r0[0::3], r0[1::3], r0[2::3] = rn, rad * np.cos(theta), rad * np.sin(theta)
    out = fc3d_newton.solve(W, q, mu, r0=r0, **dict(spec.options))
    return {"method": "newton", "status": out.status.value, "residual": float(out.residual),
            "iterations": int(out.iterations), "pattern": pattern, "x": out.x,
            "mode": _fc3d_mode(W, q, out.x)}


def _fc3d_mode(W: np.ndarray, q: np.ndarray, r: np.ndarray) -> str | None:
    """Per contact: '0' separated (``r_n`` ~ 0), '2' sliding (``||u_T||`` > 0), else '1' sticking."""
    if not np.isfinite(r).all():
        return None
    u = W @ r + q
    rs = 1e-9 * max(1.0, float(np.max(np.abs(r))))
    us = 1e-7 * max(1.0, float(np.max(np.abs(u))))
    out = []
    for j in range(r.shape[0] // 3):
        if r[3 * j] <= rs:
            out.append("0")
        elif math.hypot(u[3 * j + 1], u[3 * j + 2]) > us:
            out.append("2")
        else:
            out.append("1")
    return "".join(out)


# -- programs and transcriptions ----------------------------------------------------------------
def _program_guess(spec: _Spec, prep: _Prepared, i: int, rng: np.random.Generator, structured: bool,
                   x: np.ndarray | None) -> tuple[np.ndarray | None, str | None]:
    """Start i's initial guess (None: let the transcription draw its own start i) and pattern."""
    prog = prep.problem if prep.kind == "program" else prep.problem.program
    lbx, ubx = prog.lbx, prog.ubx
    pattern = None
    pat = _pattern(spec, i, rng, 2, prog.n_comp) if structured else None
    if x is None:
        x0 = prog.x0
        x = x0 + spec.scale * np.maximum(1.0, np.abs(x0)) * rng.standard_normal(x0.size)
    x = np.clip(x, lbx, ubx)
    if pat is not None:
        pattern = "".join(map(str, pat))
        pa, pb = prep.pair_vars
        for j, bit in enumerate(pat):
            zero, pos = (pb[j], pa[j]) if bit else (pa[j], pb[j])
            if zero is not None:
                x[zero] = min(max(0.0, lbx[zero]), ubx[zero])
            if pos is not None and x[pos] <= 0.0:
                x[pos] = min(max(spec.scale, lbx[pos]), ubx[pos])
    return x, pattern


def _program_start(spec: _Spec, prep: _Prepared, i: int, rng: np.random.Generator, structured: bool) -> dict[str, Any]:
    opts = dict(spec.options)
    if spec.guesses is not None:  # the caller's guess i
        prog, x0, pattern = prep.problem, spec.guesses[i], None
    elif prep.kind == "trajectory":
        to = prep.problem  # its own start i (no noise for start 0)
        base = to.initial_guess(rng if structured or i > 0 else None, spec.scale)
        x0, pattern = _program_guess(spec, prep, i, rng, structured, base)
        prog = to.program
    else:
        prog = prep.problem
        x0, pattern = _program_guess(spec, prep, i, rng, structured, None)
    return _program_record(spec, prep, i, _solve_from(prog, x0, spec.backend, spec.strategy, opts), pattern)


def _solve_from(prog: Any, x0: np.ndarray, backend: str, strategy: str, opts: dict[str, Any]) -> Any:
    """:func:`~contactmp.solvers.nlp.solve.solve_program` of ``prog`` from the initial guess ``x0``; the
    variables' own initial values are put back afterwards."""
    from contactmp.solvers.nlp import solve_program

    handles = prog.variables
    saved = [h.init.copy() for h in handles]
    try:
        for h in handles:
            h.init = np.asarray(x0[h.index], dtype=float).copy()
        return solve_program(prog, backend=backend, strategy=strategy, **opts)
    finally:
        for h, init in zip(handles, saved):
            h.init = init


def _program_record(spec: _Spec, prep: _Prepared, i: int, res: Any, pattern: str | None) -> dict[str, Any]:
    from contactmp.program import largest_residual

    if spec.keep_results:
        prep.results[int(i)] = res
    r = res.residuals
    return {"method": "solve_program", "status": res.status.value,
            "residual": largest_residual(r),
            "iterations": int(res.iterations), "pattern": pattern, "x": res.x,
            "objective": float(res.objective), "backend_status": res.backend_status,
            "comp_violation": float(r["comp_min"]), "constraint_violation": float(r["constraint"]),
            "residuals": dict(r), "mode": None, "b_stationarity": res.extras.get("b_stationarity")}


def best_start(records: list[dict[str, Any]]) -> int | None:
    """The start (``record["start"]``) a program multistart keeps: the ``solved`` start of least
    ``objective``, else the start of least ``max(constraint_violation, comp_violation)``; ties go
    to the first in ``records``' order; None when ``records`` is empty."""
    if not records:
        return None
    solved = [r for r in records if r["status"] == Status.SOLVED.value]
    if solved:
        return min(solved, key=lambda r: _float(r["objective"]))["start"]
    return min(records, key=lambda r: max(_float(r["constraint_violation"]), _float(r["comp_violation"])))["start"]


def _result_of(prog: Any, rec: dict[str, Any], solver: str) -> Result:
    """A :class:`~contactmp.result.Result` rebuilt from a program start's record."""
    return Result(status=Status(rec["status"]), x=np.asarray(rec["x"], dtype=float), solver=solver,
                  residual=_float(rec["residual"]), iterations=int(rec["iterations"]),
                  time_s=_float(rec.get("time_s", 0.0)),
                  extras={"backend_status": rec.get("backend_status", ""),
                          **({"b_stationarity": rec["b_stationarity"]} if rec.get("b_stationarity") else {})},
                  residuals={k: _float(v) for k, v in rec.get("residuals", {}).items()},
                  objective=_float(rec["objective"]), program=prog)


# -- Clustering and verification -----------------------------------------------------------------
def cluster_points(points: list[np.ndarray], tol: float, objectives: list[float] | None = None,
                   relative: bool = True) -> list[int]:
    """Leader clustering in the given order: the cluster index of each point.

    A point joins the cluster, among those whose leader (first member) ``y`` has
    ``||x - y||_inf <= tol max(1, ||y||_inf)`` (``<= tol`` with ``relative=False``; and
    ``|f - f_y| <= tol max(1, |f_y|)`` when ``objectives`` are given), with the nearest leader;
    otherwise it leads a new cluster.
    """
    labels: list[int] = []
    leaders: list[np.ndarray] = []
    lead_f: list[float] = []
    for k, x in enumerate(points):
        best, best_d = -1, math.inf
        if leaders:
            L = np.asarray(leaders)
            d = np.max(np.abs(L - x), axis=1) if L.shape[1] else np.zeros(len(leaders))
            thr = tol * np.maximum(1.0, np.max(np.abs(L), axis=1, initial=0.0)) if relative else np.full(len(L), tol)
            ok = d <= thr
            if objectives is not None:
                F = np.asarray(lead_f)
                ok &= np.abs(F - objectives[k]) <= tol * np.maximum(1.0, np.abs(F))
            if ok.any():
                best = int(np.argmin(np.where(ok, d, np.inf)))
                best_d = float(d[best])
        if best < 0 or not math.isfinite(best_d):
            leaders.append(np.asarray(x, dtype=float))
            if objectives is not None:
                lead_f.append(float(objectives[k]))
            best = len(leaders) - 1
        labels.append(best)
    return labels


def _verify(kind: str, prep: _Prepared, x: np.ndarray, options: dict[str, Any]) -> tuple[float, bool]:
    """The independent residual of ``x`` and whether it passes (see the module docstring)."""
    if kind == "lcp":
        from contactmp.solvers.lcp import newton
        from contactmp.solvers.lcp import lcp_residual

        M, q = prep.problem
        res = lcp_residual(M, q, x)
        return res, bool(res <= float(options.get("tol", newton.Options.tol)))
    if kind == "fc3d":
        from contactmp.solvers.fc3d import newton as fc3d_newton
        from contactmp.solvers.fc3d import dual_violation, fc3d_residual

        W, q, mu = prep.problem
        tol = float(options.get("tol", fc3d_newton.Options.tol))
        res = fc3d_residual(W, q, mu, x)
        u = W @ x + q
        return res, bool(res <= tol and dual_violation(q, mu, u) <= math.sqrt(tol))
    from contactmp.solvers.nlp import NLPOptions

    prog = prep.problem if kind == "program" else prep.problem.program
    o = NLPOptions.build(None, **{k: v for k, v in options.items() if k in ("feas_tol", "comp_tol", "sign_constraints")})
    r = prog.residuals(x)
    return max(r["bound"], r["constraint"], r[o.comp_key]), bool(o.verified(r))


# -- The front door ------------------------------------------------------------------------------
def _classify(problem: Any, kind: str) -> tuple[str, Any, Callable[[], Any] | None]:
    """(kind, problem object, factory or None); arrays validated."""
    from contactmp.program import Program

    factory = None
    if callable(problem) and not isinstance(problem, (Program, tuple, list, dict)) and not hasattr(problem, "program"):
        factory = problem
        problem = factory()
    if isinstance(problem, dict):
        problem = tuple(problem[k] for k in (("W", "q", "mu") if "W" in problem else ("M", "q")))
    found: str
    if isinstance(problem, Program):
        found = "program"
    elif isinstance(getattr(problem, "program", None), Program) and callable(getattr(problem, "initial_guess", None)):
        found = "trajectory"  # a transcription: its Program and its own starts (ContactImplicitTO's protocol)
    elif isinstance(problem, (tuple, list)) and len(problem) in (2, 3):
        found = "lcp" if len(problem) == 2 else "fc3d"
    else:
        raise InputError("problem", "must be (M, q), (W, q, mu), a Program, a ContactImplicitTO or a "
                                    f"zero-argument function building one; got {type(problem).__name__}")
    if kind != "auto":
        if kind not in KINDS:
            raise OptionError(f"kind must be 'auto' or one of {KINDS}, got {kind!r}")
        if kind != found:
            raise InputError("problem", f"is a {found} problem but kind={kind!r}")
    if found == "lcp":
        from contactmp.solvers.lcp import validate_lcp

        problem = validate_lcp(*problem)
    elif found == "fc3d":
        from contactmp.solvers.fc3d import validate_fc3d

        problem = validate_fc3d(*problem)
    return found, problem, factory


def _n_modes(kind: str, problem: Any) -> tuple[int, int]:
    """(base, digits) of the mode patterns."""
    if kind == "lcp":
        return 2, problem[1].shape[0]
    if kind == "fc3d":
        return 3, problem[2].shape[0]
    prog = problem if kind == "program" else problem.program
    return 2, prog.n_comp


def _fingerprint(kind: str, problem: Any, settings: tuple[Any, ...], arrays: Sequence[np.ndarray] = ()) -> str:
    h = hashlib.sha256(repr((_FORMAT, kind, settings)).encode())
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    if kind in ("lcp", "fc3d"):
        for a in problem:
            h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
            h.update(repr(a.shape).encode())
    else:
        prog = problem if kind == "program" else problem.program
        for e in (prog.f, prog.g, prog.comp_a, prog.comp_b):
            h.update(str(e).encode())
        for a in (prog.lbx, prog.ubx, prog.lbg, prog.ubg, prog.x0, prog.p0):
            h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        if kind == "trajectory":
            h.update(repr((type(problem).__name__, problem.N, problem.h)).encode())
    return h.hexdigest()[:16]


def multistart(
    problem: Any,
    *,
    starts: int = 100,
    seed: int = 0,
    kind: str = "auto",
    structured: bool | int = True,
    tol_cluster: float | None = None,
    scale: float | None = None,
    solver_options: dict[str, Any] | None = None,
    backend: str = "casadi",
    strategy: str = "scholtes",
    workers: int = 0,
    scheduler: str | None = None,
    client: "Client | None" = None,
    store_path: str | Path | "RecordStore | None" = None,
    batch_size: int | None = None,
    progress: bool = False,
    max_results: int | None = None,
    callback: Callable[[str, dict[str, Any]], None] | None = None,
    time_limit: float | None = None,
    motion: Any = None,
    tol_motion: float | None = None,
) -> MultistartResult:
    """Solve ``problem`` from ``starts`` seeded starting points and cluster the verified answers,
    by their impulses and by their motion.

    Parameters
    ----------
    problem : ``(M, q)`` (LCP), ``(W, q, mu)`` (fc3d), a :class:`~contactmp.program.Program`, a
        :class:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO`, a dict with those
        arrays, or a zero-argument function returning one of these (needed to run programs and
        transcriptions on Dask workers).
    starts, seed : start ``i`` (``0 <= i < starts``) draws from ``default_rng([seed, i])``.
    kind : ``"auto"`` (from the type of ``problem``) or one of :data:`KINDS`, checked.
    structured : the number of structured (mode-guessing) starts (see the module docstring).
    tol_cluster : the impulses' clustering tolerance, relative (default :data:`DEFAULT_TOL_CLUSTER`).
    motion : the motion ``v = A x + b`` of an answer ``x``: a :class:`~contactmp.reductions.MotionMap`
        or a pair ``(A, b)`` (``A`` with one column per unknown). Default: none for an LCP, a
        program or a trajectory (the motion is not judged), ``u = W r + q`` for fc3d (see the module
        docstring).
    tol_motion : the motions' clustering tolerance, absolute in the units of ``v`` (default:
        :meth:`MotionMap.tolerance <contactmp.reductions.MotionMap.tolerance>`, module docstring).
    scale : size of the random starts (default :data:`DEFAULT_SCALE`).
    solver_options : overrides for the local solver (``newton.Options``, ``fc3d_newton.Options``
        or ``NLPOptions``; strict). Their ``tol`` (LCP, fc3d) and ``feas_tol``/``comp_tol``
        (programs) are also the verification tolerances.
    backend, strategy : of :func:`~contactmp.solvers.nlp.solve.solve_program` (programs, trajectories).
    workers, scheduler, client : where to run (:func:`contactmp.parallel.run_tasks`); the default
        ``workers=0`` runs in this process.
    store_path : JSONL of the start records (resumable); None: a temporary file.
    batch_size : starts per Dask task (default: about 20 tasks per worker and 20 ms per task).
    progress : a rich progress bar on stderr.
    max_results, callback : passed to :func:`~contactmp.parallel.run_tasks` (stop after that many
        new records; a function called with each record).
    time_limit : wall-clock seconds for the whole call (``None`` or ``inf``: none). Starts not
        begun by then are not run; a start running then gets the time left as its solver's
        ``time_limit`` and, if that cuts it short, is dropped (no record: a later call with the
        same store runs both kinds). The result is then ``complete=False`` with
        ``extras["cut_short"] = True`` and ``extras["starts_not_run"]``; finished starts are kept
        and clustered as usual. On Dask workers the deadline is compared with each worker's
        wall clock (``time.time()``).

    Returns a :class:`MultistartResult`. Never raises on non-convergence (unsolved starts are
    counted, not clustered); raises :class:`InputError` / :class:`OptionError` on bad input.
    """
    t0, wall0 = time.perf_counter(), time.time()
    limit = check_time_limit(time_limit)
    found, prob, factory = _classify(problem, kind)
    if isinstance(starts, bool) or not isinstance(starts, (int, np.integer)) or starts < 1:
        raise InputError("starts", f"must be an integer >= 1, got {starts!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError("seed", f"must be an integer >= 0, got {seed!r}")
    starts, seed = int(starts), int(seed)
    tol_c = _check_positive("tol_cluster", DEFAULT_TOL_CLUSTER[found] if tol_cluster is None else tol_cluster)
    sc = _check_positive("scale", DEFAULT_SCALE[found] if scale is None else scale)
    opts = dict(solver_options or {})
    _check_solver_options(found, opts)
    base, m = _n_modes(found, prob)
    n_patterns = base ** m if m * math.log2(base) < 62 else math.inf
    if isinstance(structured, bool):
        n_struct = (n_patterns if n_patterns <= starts else starts // 2) if structured else 0
    elif isinstance(structured, (int, np.integer)) and structured >= 0:
        n_struct = min(int(structured), starts, n_patterns)
    else:
        raise OptionError(f"structured must be True, False or an integer >= 0, got {structured!r}")
    n_struct = int(n_struct) if m > 0 else 0
    enumerate_all = n_struct > 0 and n_struct == n_patterns
    settings = (seed, n_struct, enumerate_all, float(sc), tuple(sorted((k, repr(v)) for k, v in opts.items())),
                backend if found in ("program", "trajectory") else None,
                strategy if found in ("program", "trajectory") else None)
    spec = _Spec(kind=found, token=_fingerprint(found, prob, settings), data=prob if found in ("lcp", "fc3d") else None,
                 factory=factory, seed=seed, n_structured=n_struct, enumerate_all=enumerate_all,
                 scale=float(sc), options=tuple(opts.items()), backend=backend, strategy=strategy,
                 deadline=wall0 + limit if limit < math.inf else None)
    mmap, note = _motion_of(found, prob, motion)
    tol_m = None if tol_motion is None else _check_positive("tol_motion", tol_motion)
    return _run(spec, _prepare(found, prob), list(range(starts)), opts, t0=t0, limit=limit, tol_c=tol_c,
                store_path=store_path, workers=workers, scheduler=scheduler, client=client, batch_size=batch_size,
                progress=progress, max_results=max_results, callback=callback, motion=(mmap, tol_m, note))


def solve_from_guesses(
    program: Any,
    guesses: Sequence[ArrayLike] | Callable[[int], ArrayLike],
    *,
    indices: Sequence[int] | int | None = None,
    backend: str = "casadi",
    strategy: str = "scholtes",
    options: Any = None,
    time_limit: float | None = None,
    store_path: str | Path | "RecordStore | None" = None,
    progress: bool = False,
    workers: int = 0,
    scheduler: str | None = None,
    client: "Client | None" = None,
    batch_size: int | None = None,
    callback: Callable[[str, dict[str, Any]], None] | None = None,
    max_results: int | None = None,
    tol_cluster: float | None = None,
    motion: Any = None,
    tol_motion: float | None = None,
    **overrides: Any,
) -> MultistartResult:
    """Solve ``program`` from each of the caller's initial guesses and keep the best (the multistart
    of a transcription that draws its own starts, e.g. ``ContactImplicitTO.solve``).

    Start ``i`` sets the program's variables to its guess and runs
    ``solve_program(program, backend=backend, strategy=strategy, options=options, **overrides)``
    (the variables' own initial values are put back afterwards); its record holds ``start`` (= i),
    ``status`` (a :class:`~contactmp.result.Status` value), ``objective``, ``comp_violation``
    (``residuals["comp_min"]``), ``constraint_violation`` (``residuals["constraint"]``),
    ``iterations``, ``time_s`` (wall time of the start), ``backend_status``, ``x`` and ``residuals``.
    The starts run through the same loop as :func:`multistart` (same records, store, resume, Dask,
    time limit and clustering, with no structured starts).

    ``program`` is a :class:`~contactmp.program.Program` or a zero-argument function building it
    (needed on Dask workers). ``guesses``: one initial guess (``n_x`` finite values) per start, or a
    function ``i -> guess``, called here once per start before anything runs. ``indices``: the
    starts' indices in order (distinct integers >= 0; ``n``: ``0 .. n-1``; default ``0 ..
    len(guesses)-1``, required with a function). ``backend``, ``strategy``, ``options`` (an
    ``NLPOptions``) and ``overrides`` go to ``solve_program`` (checked here; their ``feas_tol`` and
    ``comp_tol`` also verify the clusters); the other arguments are those of :func:`multistart`
    (``motion``: a map of the program's ``x``, e.g. ``MotionMap(np.eye(n_x)[v.index], 0)`` for the
    variables ``v``).

    Returns a :class:`MultistartResult` (kind ``"program"``) whose ``starts`` follow ``indices``'
    order, ``best`` is :func:`best_start` of them and ``results[i]`` start i's result
    (``best_result``: the best one's). Never raises on non-convergence; raises
    :class:`InputError` / :class:`OptionError` on bad input.
    """
    from contactmp.program import Program

    t0, wall0 = time.perf_counter(), time.time()
    limit = check_time_limit(time_limit)
    factory = program if callable(program) and not isinstance(program, Program) else None
    prog = factory() if factory is not None else program
    if not isinstance(prog, Program):
        raise InputError("program", f"must be a Program or a zero-argument function building one, "
                                    f"got {type(prog).__name__}")
    if indices is None and callable(guesses):
        raise InputError("indices", "are needed with a guess function")
    n = len(guesses) if indices is None else indices  # type: ignore[arg-type]
    idx = list(range(int(n))) if isinstance(n, (int, np.integer)) and not isinstance(n, bool) else list(n)
    if not idx or not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) and i >= 0 for i in idx) \
            or len(set(idx)) != len(idx):
        raise InputError("indices", f"must be distinct integers >= 0 (at least one), got {indices!r}")
    if not callable(guesses) and len(guesses) != len(idx):
        raise InputError("guesses", f"has {len(guesses)} entries for {len(idx)} indices")
    x0s = {}
    for k, i in enumerate(idx):
        x = np.asarray(guesses(int(i)) if callable(guesses) else guesses[k], dtype=float)
        if x.shape != (prog.n_x,) or not np.isfinite(x).all():
            raise InputError("guesses", f"start {i}: must be {prog.n_x} finite values, got shape {x.shape}")
        x0s[int(i)] = x
    opts = {} if options is None else {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
    opts.update(overrides)
    _check_solver_options("program", opts)
    tol_c = _check_positive("tol_cluster", DEFAULT_TOL_CLUSTER["program"] if tol_cluster is None else tol_cluster)
    settings = ("guesses", tuple(sorted((k, repr(v)) for k, v in opts.items())), backend, strategy)
    token = _fingerprint("program", prog, settings, arrays=[x0s[i] for i in idx])
    spec = _Spec(kind="program", token=token, data=None, factory=factory, seed=0, n_structured=0,
                 enumerate_all=False, scale=1.0, options=tuple(opts.items()), backend=backend, strategy=strategy,
                 deadline=wall0 + limit if limit < math.inf else None, guesses=x0s)
    mmap, note = _motion_of("program", prog, motion)
    tol_m = None if tol_motion is None else _check_positive("tol_motion", tol_motion)
    return _run(spec, _prepare("program", prog), idx, opts, t0=t0, limit=limit, tol_c=tol_c,
                store_path=store_path, workers=workers, scheduler=scheduler, client=client, batch_size=batch_size,
                progress=progress, max_results=max_results, callback=callback, motion=(mmap, tol_m, note))


def _run(spec: _Spec, prep: _Prepared, indices: list[int], opts: dict[str, Any], *, t0: float, limit: float,
         tol_c: float, store_path: Any, workers: int, batch_size: int | None,
         motion: tuple[Any, float | None, str] = (None, None, ""), **run: Any) -> MultistartResult:
    """The one loop of :func:`multistart` and :func:`solve_from_guesses`: start ``i`` of ``indices``
    is :func:`_run_start` ``(spec, i)``, run by :func:`contactmp.parallel.run_tasks` (which stops
    starting batches at the deadline ``t0 + limit``; a start cut short by it leaves no record),
    and the records are summarized by :func:`_summarize`."""
    from contactmp import parallel

    distributed = not (run["client"] is None and run["scheduler"] is None and workers == 0)
    if distributed and spec.kind in ("program", "trajectory") and spec.factory is None:
        name = "problem" if spec.guesses is None else "program"
        raise InputError(name, f"a {type(prep.problem).__name__} holds CasADi symbols that cannot be sent to "
                               "Dask workers; pass a zero-argument function that builds it (or workers=0)")
    spec = dataclasses.replace(spec, keep_results=not distributed and spec.kind in ("program", "trajectory"))
    prefix = f"multistart-{spec.kind}-{spec.token}"
    keys = [f"{prefix}/{i}" for i in indices]
    if batch_size is None:  # in process too: one fsync per batch, not per start
        per = 1e-3 if spec.kind in ("lcp", "fc3d") else 0.05
        n_w = workers if (workers and run["client"] is None and run["scheduler"] is None) else (2 if distributed else 1)
        batch_size = parallel.default_batch_size(len(indices), n_w, per)
    tmp = None
    if store_path is None:
        tmp = tempfile.TemporaryDirectory(prefix="contactmp-multistart-")
        store_path = Path(tmp.name) / "starts.jsonl"
    had = spec.token in _CACHE
    _CACHE[spec.token] = prep  # the in-process runs use the caller's object itself
    try:
        report = parallel.run_tasks(
            functools.partial(_run_start, spec), indices, keys=keys, store_path=store_path, workers=workers,
            batch_size=batch_size, description=f"multistart ({spec.kind})", raise_on_error=False,
            deadline=t0 + limit if limit < math.inf else None, **run)
        errors = {k: v for k, v in report.failed.items() if _CUT_MARK not in v}
        if errors:
            raise parallel.TaskError(errors)
        records = [dict(r) for r in report.records()]
        extras = {} if limit == math.inf else {
            "time_limit": limit, "cut_short": len(report.failed) > len(errors) or not report.complete,
            "starts_not_run": len(indices) - len(records)}
        return _summarize(spec, prep, records, opts, tol_c, len(indices), report, extras=extras, t0=t0,
                          store_path=None if tmp is not None else str(report.store.path), motion=motion)
    finally:
        if not had:
            _CACHE.pop(spec.token, None)
        if tmp is not None:
            tmp.cleanup()


def _check_solver_options(kind: str, opts: dict[str, Any]) -> None:
    """Reject unknown or ill-typed local-solver options now, not in every start."""
    start = {"lcp": "z0", "fc3d": "r0"}.get(kind)
    if start in opts:
        raise OptionError(f"{start} is set by each start; it cannot be a solver option of multistart")
    if kind == "lcp":
        from contactmp.solvers.lcp.newton import Options
    elif kind == "fc3d":
        from contactmp.solvers.fc3d.newton import Options
    else:
        from contactmp.solvers.nlp import NLPOptions as Options
    Options.build(None, **opts)


def _summarize(spec: _Spec, prep: _Prepared, records: list[dict[str, Any]], opts: dict[str, Any], tol_c: float,
               n_starts: int, report: Any, extras: dict[str, Any], t0: float, store_path: str | None,
               motion: tuple[Any, float | None, str] = (None, None, "")) -> MultistartResult:
    """Cluster and verify the records (in start order) of one run, then group the verified clusters
    by motion (``motion = (map or None, tol_motion or None, note)``); the :class:`MultistartResult`."""
    kind = spec.kind
    programs = kind in ("program", "trajectory")
    for r in records:  # JSON keeps non-finite floats as strings
        for name in ("residual", "objective", "comp_violation", "constraint_violation", "time_s"):
            if r.get(name) is not None:
                r[name] = _float(r[name])
    solved = [r for r in records if r["status"] == Status.SOLVED.value and _finite(r["x"])]
    points = [np.asarray(r["x"], dtype=float) for r in solved]
    if kind == "trajectory" and prep.traj_index is not None:
        points = [p[prep.traj_index] for p in points]
    labels = cluster_points(points, tol_c, [r["objective"] for r in solved] if programs else None)
    groups: dict[int, list[dict[str, Any]]] = {}
    for lab, r in zip(labels, solved):
        groups.setdefault(lab, []).append(r)
    n_run = len(records)
    order = sorted(groups, key=lambda g: (-len(groups[g]), groups[g][0]["start"]))
    clusters: list[Cluster] = []
    cluster_of: dict[int, int] = {}
    for new, g in enumerate(order):
        members = groups[g]
        rep = min(members, key=lambda r: (r["residual"], r["start"]))
        x = np.asarray(rep["x"], dtype=float)
        res, ok = _verify(kind, prep, x, opts)
        clusters.append(Cluster(index=new, x=x, residual=float(res), verified=ok, count=len(members),
                                share=len(members) / n_run, starts=[r["start"] for r in members],
                                objective=rep.get("objective"), mode=rep.get("mode")))
        for r in members:
            cluster_of[r["start"]] = new
    for r in records:
        r["cluster"] = cluster_of.get(r["start"], -1)
    mmap, tol_m, note = motion
    motions: list[MotionCluster] = []
    if mmap is not None:
        motions, tol_m = _motion_clusters(kind, prep, mmap, tol_m, clusters, opts, n_run)
    results: dict[int, Any] = {}
    if programs:
        prog = prep.problem if kind == "program" else prep.problem.program
        solver = f"{spec.backend}/{spec.strategy}"
        kept = {i: prep.results.pop(i) for i in [r["start"] for r in records] if i in prep.results}
        results = {r["start"]: kept[r["start"]] if r["start"] in kept else _result_of(prog, r, solver) for r in records}
    return MultistartResult(
        kind=kind, clusters=clusters, starts=records, n_starts=n_starts, n_run=n_run,
        n_structured=spec.n_structured, seed=spec.seed, tol_cluster=float(tol_c),
        key_prefix=f"multistart-{kind}-{spec.token}", time_s=time.perf_counter() - t0,
        time_per_start_s=report.time_s / max(1, report.done), n_computed=report.done, workers=report.workers,
        store_path=store_path, complete=report.complete,
        extras={"resumed": report.skipped, "solver_time_s": float(sum(r.get("time_s", 0.0) for r in records)),
                **extras},
        best=best_start(records) if programs else None, results=results, motions=motions,
        tol_motion=None if mmap is None else tol_m, motion_map=None if mmap is None else mmap.to_dict(),
        motion_note=note,
    )


def _motion_of(kind: str, problem: Any, motion: Any) -> tuple[Any, str]:
    """(the :class:`~contactmp.reductions.MotionMap` or None, a note on what the motion is)."""
    from contactmp.reductions import MotionMap

    if motion is None:
        if kind == "fc3d":
            W, q, _ = problem
            return (MotionMap(W, q, "contact velocity u = W r + q"),
                    "no map given: the contact velocities u = W r + q are the motion (a lower bound on the "
                    "count by v_{k+1}, equal to it when the contact Jacobian has full column rank)")
        what = {"lcp": "a bare LCP (M, q) has no map from z to a velocity (w = M z + q mixes contact "
                       "velocities and friction slacks)"}.get(kind, "no motion map given")
        return None, f"motion not judged: {what}; impulses only"
    if kind in ("lcp", "fc3d"):
        n = problem[1].shape[0]
    else:
        n = (problem if kind == "program" else problem.program).n_x
    mm = MotionMap.of(motion, n)
    return mm, f"motion: {mm.name} = A x + b"


def _solve_error(kind: str, prep: _Prepared, xs: list[np.ndarray], options: dict[str, Any]) -> float:
    """``e``: a verified answer's distance (inf-norm) to an exact solution of a nearby problem (see
    the module docstring and :meth:`MotionMap.tolerance <contactmp.reductions.MotionMap.tolerance>`)."""
    if kind == "lcp":
        from contactmp.solvers.lcp import newton

        return float(options.get("tol", newton.Options.tol))
    if kind == "fc3d":
        from contactmp.solvers.fc3d import newton as fc3d_newton

        W, q, _ = prep.problem
        tol = float(options.get("tol", fc3d_newton.Options.tol))
        nq = float(np.linalg.norm(q))
        scale = max([nq] + [max(float(np.linalg.norm(x)), float(np.linalg.norm(W @ x + q))) for x in xs])
        return tol * scale
    from contactmp.solvers.nlp import NLPOptions

    o = NLPOptions.build(None, **{k: v for k, v in options.items() if k in ("feas_tol", "comp_tol")})
    return float(max(o.feas_tol, o.comp_tol))


def _motion_clusters(kind: str, prep: _Prepared, mmap: Any, tol_m: float | None, clusters: list[Cluster],
                     opts: dict[str, Any], n_run: int) -> tuple[list[MotionCluster], float]:
    """Group the verified ``clusters`` (in their order) by motion ``v = A x + b``: leader clustering
    with the absolute tolerance ``tol_m`` (default ``mmap.tolerance(e, V)``); sets each cluster's
    ``motion``. Returns the motion clusters (by decreasing count) and the tolerance used."""
    ok = [c for c in clusters if c.verified]
    vs = [mmap(c.x) for c in ok]
    if tol_m is None:
        scale = max([float(np.abs(v).max(initial=0.0)) for v in vs] + [float(np.abs(mmap.b).max(initial=0.0))])
        tol_m = mmap.tolerance(_solve_error(kind, prep, [c.x for c in ok], opts), scale)
    labels = cluster_points(vs, tol_m, relative=False)
    groups: dict[int, list[int]] = {}
    for lab, k in zip(labels, range(len(ok))):
        groups.setdefault(lab, []).append(k)
    order = sorted(groups, key=lambda g: (-sum(ok[k].count for k in groups[g]), groups[g][0]))
    out = []
    for new, g in enumerate(order):
        ks = groups[g]
        lead = vs[ks[0]]
        count = sum(ok[k].count for k in ks)
        for k in ks:
            ok[k].motion = new
        out.append(MotionCluster(index=new, v=lead, clusters=[ok[k].index for k in ks], count=count,
                                 share=count / max(1, n_run),
                                 spread=float(max(np.abs(vs[k] - lead).max(initial=0.0) for k in ks))))
    return out, float(tol_m)


def _check_positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
        raise OptionError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _float(v: Any) -> float:
    """JSON floats come back as strings when not finite ("inf", "nan")."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.inf


def _finite(x: Any) -> bool:
    try:
        return bool(np.isfinite(np.asarray(x, dtype=float)).all())
    except (TypeError, ValueError):
        return False
