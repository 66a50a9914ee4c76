"""Lemke's almost-complementary pivot method for LCP(q, M) (Cottle, Pang and Stone, sec. 4.4).

The method works on the system ``w - M z - d z0 = q`` (the tableau ``[I  -M  -d | q]``) with an
artificial variable ``z0`` and a covering vector ``d > 0``. Starting from the basis ``{w}``, ``z0``
enters at the level ``max_i(-q_i / d_i)``; afterwards the complement of the variable that left last
enters, and the leaving variable is chosen by the lexicographic minimum-ratio test on the rows of
``[q_bar | B^{-1}]`` (so degenerate problems cannot cycle). The run ends when ``z0`` leaves (a
solution), when the entering column has no positive entry (a secondary ray), or at the pivot limit.

Implementation: the basis inverse ``B^{-1}`` is kept explicitly (dense, ``n x n``) and updated by
one rank-1 product per pivot; the pivot loop is compiled with numba and allocates nothing. At the
end the basic ``z`` are recomputed from the original data (``M_ZZ z_Z = -q_Z`` by LU with partial
pivoting and one step of iterative refinement) so the residual is at round-off level.

On failure of the first start (covering vector of ones), up to ``restarts`` further starts use
random covering vectors (uniform in ``[0.5, 1.5]^n``, from ``numpy.random.default_rng(seed)``), as
Trinkle, Pang, Sudarsky and Lo (1995) did.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from contactmp.errors import InputError
from contactmp.progress import Reporter, Watch, check_progress, next_chunk
from contactmp.result import BatchResult, Result, Status
from contactmp.solvers.lcp.problem import judged_result, residual_kernel, validate_lcp, w_and_residual_kernel
from contactmp.solvers.options import SolverOptions, check_bool, check_int

NAME = "lemke"

# Kernel status codes.
_SOLVED = 0
_RAY = 1
_MAX_ITER = 2

_STATUS_OF_CODE = {_SOLVED: "solved", _RAY: "ray_termination", _MAX_ITER: "max_iter"}

#: an entry of the entering column counts as positive only above this (relative to its largest)
_PIVOT_TOL = 1e-11
#: relative tolerance under which two ratios of the minimum-ratio test are treated as tied
_TIE_TOL = 1e-11


@dataclass
class Options(SolverOptions):
    """Options of Lemke's method.

    Attributes
    ----------
    tol : float
        Tolerance of the independent residual ``||min(z, M z + q)||_inf`` that confirms a solution.
    max_iter : int or None
        Pivot limit per start (the first pivot, on which ``z0`` enters, counts). ``None`` means
        ``max(1000, 50 n)``: with the lexicographic rule Lemke's method cannot cycle, so the limit
        only bounds work; contact problems typically need ``n`` to ``3 n`` pivots, while Murty's
        examples need ``2^n - 1``.
    restarts : int
        Further starts with random covering vectors after a failed start (ray or pivot limit).
    seed : int
        Seed of ``numpy.random.default_rng`` for the restarts' covering vectors.
    lexicographic : bool
        Break ties of the minimum-ratio test lexicographically (rows of ``[q_bar | B^{-1}]``).
        With ``False`` ties go to the row with the largest pivot entry (may cycle on degenerate
        problems).
    """

    max_iter: int | None = None
    restarts: int = 3
    seed: int = 0
    lexicographic: bool = True

    def check(self) -> None:
        """Reject ill-typed values."""
        super().check()
        check_int("max_iter", self.max_iter, none_ok=True)
        check_int("restarts", self.restarts, 0)
        check_int("seed", self.seed, 0)
        check_bool("lexicographic", self.lexicographic)


_DEFAULT_OPTIONS = Options()


def default_max_pivots(n: int) -> int:
    """The pivot limit per start used when ``Options.max_iter`` is ``None``: ``max(1000, 50 n)``."""
    return max(1000, 50 * n)


# ---------------------------------------------------------------------------------------------
# numba kernels
# ---------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _leaving_row(qbar, bt, col, basis, z0_var, lexico, clip, ties):  # pragma: no cover - compiled
    """Row chosen by the (lexicographic) minimum-ratio test for the entering column ``col``.

    Candidates are rows with ``col_i > ptol``; the primary ratio is ``qbar_i / col_i``, with
    ``qbar_i`` clipped at 0 when ``clip`` (round-off below zero in a feasible basis). If the row
    of ``z0`` ties in the primary ratio it is chosen (the run then ends with a solution); else
    ties are broken by the lexicographic minimum of ``(B^{-1})[i, :] / col_i`` (``bt`` holds
    ``(B^{-1})^T``). ``ties`` is an int work array of length n. Returns -1 when no entry is
    positive (a ray).
    """
    n = qbar.shape[0]
    cmax = 0.0
    for i in range(n):
        a = abs(col[i])
        if a > cmax:
            cmax = a
    ptol = _PIVOT_TOL * max(1.0, cmax)
    theta = np.inf
    r = -1
    for i in range(n):
        if col[i] > ptol:
            qi = qbar[i]
            if clip and qi < 0.0:
                qi = 0.0
            t = qi / col[i]
            if t < theta:
                theta = t
                r = i
    if r < 0:
        return -1
    # Collect ties of the primary ratio.
    ttol = _TIE_TOL * max(1.0, abs(theta))
    nties = 0
    for i in range(n):
        if col[i] > ptol:
            qi = qbar[i]
            if clip and qi < 0.0:
                qi = 0.0
            if qi / col[i] <= theta + ttol:
                if basis[i] == z0_var:
                    return i
                ties[nties] = i
                nties += 1
    if nties == 1:
        return ties[0]
    if not lexico:
        best = ties[0]
        for t in range(1, nties):
            if col[ties[t]] > col[best]:
                best = ties[t]
        return best
    # Lexicographic tie-break on the rows of B^{-1} / col_i.
    for k in range(n):
        vmin = np.inf
        vmax = 0.0
        for t in range(nties):
            i = ties[t]
            v = bt[k, i] / col[i]
            if v < vmin:
                vmin = v
            if abs(v) > vmax:
                vmax = abs(v)
        vtol = _TIE_TOL * max(1.0, vmax)
        m = 0
        for t in range(nties):
            i = ties[t]
            if bt[k, i] / col[i] <= vmin + vtol:
                ties[m] = i
                m += 1
        nties = m
        if nties == 1:
            return ties[0]
    best = ties[0]
    for t in range(1, nties):
        if col[ties[t]] > col[best]:
            best = ties[t]
    return best


@numba.njit(cache=True)
def _pivot(bt, qbar, col, r):  # pragma: no cover - compiled
    """Replace the basic variable of row ``r`` by the one whose updated column is ``col``.

    ``bt`` holds ``(B^{-1})^T`` (row ``k`` of ``bt`` is column ``k`` of ``B^{-1}``, so every loop
    below runs over contiguous memory). ``B^{-1} <- E B^{-1}`` and ``qbar <- E qbar`` with the
    elementary (eta) matrix ``E`` of the pivot on ``col[r]``: one rank-1 update, O(n^2).
    """
    n = qbar.shape[0]
    piv = col[r]
    qr = qbar[r] / piv
    for i in range(n):
        qbar[i] -= col[i] * qr
    qbar[r] = qr
    for k in range(n):  # 2-D indexing, not row views: views cost a refcount each in numba
        rk = bt[k, r] / piv
        if rk != 0.0:
            for i in range(n):
                bt[k, i] -= rk * col[i]
            bt[k, r] = rk


@numba.njit(cache=True)
def _lu_solve_refined(M, q, idx, m, lu, perm, x, rhs):  # pragma: no cover - compiled
    """Solve ``A x = b`` with ``A = M[idx, idx]``, ``b = -q[idx]`` (the first ``m`` entries of
    ``idx``) by LU with partial pivoting plus one step of iterative refinement against the
    original ``M`` (the submatrix is never formed). ``lu`` (at least ``m x m``), ``perm``, ``x``
    and ``rhs`` (at least ``m``) are work arrays; the answer is ``x[:m]``.

    Returns ``ok``: False when a pivot is exactly zero (singular ``A``).
    """
    for a in range(m):
        for c in range(m):
            lu[a, c] = M[idx[a], idx[c]]
    for a in range(m):
        perm[a] = a
        x[a] = 0.0
    for k in range(m):
        p = k
        amax = abs(lu[k, k])
        for i in range(k + 1, m):
            if abs(lu[i, k]) > amax:
                amax = abs(lu[i, k])
                p = i
        if amax == 0.0:
            return False
        if p != k:
            for j in range(m):
                tmp = lu[k, j]
                lu[k, j] = lu[p, j]
                lu[p, j] = tmp
            tp = perm[k]
            perm[k] = perm[p]
            perm[p] = tp
        inv = 1.0 / lu[k, k]
        for i in range(k + 1, m):
            f = lu[i, k] * inv
            lu[i, k] = f
            if f != 0.0:
                for j in range(k + 1, m):
                    lu[i, j] -= f * lu[k, j]
    for step in range(2):
        if step == 0:
            for i in range(m):
                rhs[i] = -q[idx[perm[i]]]
        else:
            # residual b - A x with the original M, permuted
            for i in range(m):
                ri = idx[perm[i]]
                s = -q[ri]
                for j in range(m):
                    s -= M[ri, idx[j]] * x[j]
                rhs[i] = s
        for i in range(m):  # forward substitution (unit lower)
            s = rhs[i]
            for j in range(i):
                s -= lu[i, j] * rhs[j]
            rhs[i] = s
        for i in range(m - 1, -1, -1):  # back substitution
            s = rhs[i]
            for j in range(i + 1, m):
                s -= lu[i, j] * rhs[j]
            rhs[i] = s / lu[i, i]
        for i in range(m):
            x[i] += rhs[i]
    return True


@numba.njit(cache=True, inline="always")
def _lemke_run(M, q, d, lexico, bt, qbar, basis, col, ties, leaving, pivots, stop, z, lu, fv, iv):  # pragma: no cover
    """Run one start of Lemke's method from its state until ``z0`` leaves, a secondary ray, or
    ``pivots == stop``; write the start's ``z`` into ``z``. Returns ``(leaving, pivots, code)``.

    The state is the basis inverse ``bt = (B^{-1})^T``, ``qbar = B^{-1} q``, ``basis`` (the
    variable basic in each row; ``w_j = j``, ``z_j = n + j``, ``z0 = 2 n``), ``leaving`` (the
    variable that left last) and the pivot count. With ``pivots == 0`` (``bt = I``, ``qbar = q``,
    ``basis = 0..n-1``) the first pivot is made: ``z0`` enters at level ``max_i(-q_i / d_i)``
    (``d`` of length 0: all ones) and the row of the lexicographic minimum of ``(q_i, e_i) / d_i``
    leaves. Then the complement of the variable that left enters, and so on. ``code`` is 0 (z0
    left: solution), 1 (secondary ray) or 2 (``stop`` reached: the pivot limit, or the end of a
    chunk, after which a call with the same state resumes exactly where this one stopped).
    ``z`` is the basic ``z`` (``qbar`` clipped at 0); after a solution it is refined from the
    original data (with ``z_Z`` basic and ``w_Z = 0``: ``M_ZZ z_Z = -q_Z``, LU with one step of
    iterative refinement), kept when that does not increase the residual (skipped when the pivoted
    ``z`` already has residual exactly 0, as on most tiny problems: half of their time). ``col``, ``ties``,
    ``lu`` (``n x n``), ``fv`` (float, rows 2-4 used) and ``iv`` (int, row 2 used) are work arrays
    (see :func:`_workspace`).
    """
    n = q.shape[0]
    z0_var = 2 * n
    if pivots == 0:
        ones = d.shape[0] == 0  # covering vector of ones, not stored
        # Its column is -d; the ratio test is run on +d.
        for i in range(n):
            col[i] = 1.0 if ones else d[i]
        r = _leaving_row(qbar, bt, col, basis, -1, lexico, False, ties)
        for i in range(n):
            col[i] = -col[i]
        _pivot(bt, qbar, col, r)
        leaving = basis[r]
        basis[r] = z0_var
        pivots = 1
    code = _MAX_ITER
    while pivots < stop:
        # The complement of the variable that just left enters.
        if leaving < n:
            e = leaving + n  # w_j left: z_j enters, column -M[:, j]
            j = leaving
            for i in range(n):
                col[i] = 0.0
            for k in range(n):  # col = -B^{-1} M[:, j] as a sum of rows of bt (no reduction)
                mkj = M[k, j]
                if mkj != 0.0:
                    for i in range(n):
                        col[i] -= bt[k, i] * mkj
        else:
            e = leaving - n  # z_j left: w_j enters, column e_j
            for i in range(n):
                col[i] = bt[e, i]
        r = _leaving_row(qbar, bt, col, basis, z0_var, lexico, True, ties)
        if r < 0:
            code = _RAY
            break
        _pivot(bt, qbar, col, r)
        leaving = basis[r]
        basis[r] = e
        pivots += 1
        if leaving == z0_var:
            code = _SOLVED
            break

    # z from the pivoting: basic z_j take qbar (clipped at 0), the rest is 0.
    nz = 0
    for i in range(n):
        z[i] = 0.0
    for i in range(n):
        v = basis[i]
        if v >= n and v < z0_var:
            val = qbar[i]
            z[v - n] = val if val > 0.0 else 0.0
            nz += 1
    if code != _SOLVED or nz == 0 or residual_kernel(M, q, z) == 0.0:  # nothing to refine: exact already
        return leaving, pivots, code
    # Refinement from the original data: with z_Z basic (w_Z nonbasic = 0), M_ZZ z_Z = -q_Z.
    idx = ties  # work array reused: the basic z indices
    m = 0
    for i in range(n):
        v = basis[i]
        if v >= n and v < z0_var:
            idx[m] = v - n
            m += 1
    x, z2 = fv[2], fv[4]
    if _lu_solve_refined(M, q, idx, nz, lu, iv[2], x, fv[3]):
        for i in range(n):
            z2[i] = 0.0
        for a in range(nz):
            z2[idx[a]] = x[a] if x[a] > 0.0 else 0.0
        if residual_kernel(M, q, z2) <= residual_kernel(M, q, z):
            for i in range(n):
                z[i] = z2[i]
    return leaving, pivots, code


@numba.njit(cache=True)
def _workspace(n):  # pragma: no cover - compiled
    """The work arrays of one start on an ``n``-problem, allocated once and reused by every start
    (a batch allocates them once per thread): ``bt = (B^{-1})^T`` and the LU factors (``n x n``
    each), the float rows ``fv = [qbar, col, x, rhs, z2]`` and the int rows ``iv = [basis, ties,
    perm]``. On tiny problems a start's ten allocations cost as much as its pivots."""
    return np.empty((n, n)), np.empty((n, n)), np.empty((5, n)), np.empty((3, n), dtype=np.int64)


@numba.njit(cache=True)
def _lemke_start(M, q, d, max_piv, lexico, z, bt, lu, fv, iv):  # pragma: no cover - compiled
    """One start of Lemke's method with covering vector ``d`` (length 0 means all ones), all its
    pivots in one call of :func:`_lemke_run`, in the work arrays of :func:`_workspace`; writes the
    start's ``z`` into ``z``. Returns ``(code, pivots)`` with ``code`` 0 (z0 left: solution), 1
    (secondary ray), 2 (pivot limit)."""
    n = q.shape[0]
    qmin = 0.0
    for i in range(n):
        z[i] = 0.0
        if q[i] < qmin:
            qmin = q[i]
    if qmin >= 0.0:
        return 0, 0
    qbar, basis = fv[0], iv[0]
    for i in range(n):
        for j in range(n):
            bt[i, j] = 0.0
        bt[i, i] = 1.0  # (B^{-1})^T = I
        qbar[i] = q[i]
        basis[i] = i  # basis[i] = variable basic in row i
    _, pivots, code = _lemke_run(M, q, d, lexico, bt, qbar, basis, fv[1], iv[1], -1, 0, max_piv, z, lu, fv, iv)
    return code, pivots


@numba.njit(cache=True)
def _checked_start(M, q, d, max_piv, lexico, zw, work):  # pragma: no cover - compiled
    """One start of :func:`_lemke_start` and the independent check, in one compiled call.

    Writes ``z`` into ``zw[:n]`` and ``w = M z + q`` into ``zw[n:]`` and returns
    ``(code, pivots, residual, bad)`` with ``residual = ||min(z, w)||_inf`` evaluated from the
    original data. ``bad`` is 1 (2) when ``M`` (``q``) holds a NaN or inf and 3 when the shapes
    do not form an LCP (``M`` not ``n x n``, ``q`` not of length ``n``, ``zw`` not of length
    ``2 n``, ``n = 0``); then nothing else is computed. ``max_piv <= 0`` means
    :func:`default_max_pivots`. The explicit signature makes the dispatcher itself refuse
    anything but C-contiguous float64 arrays (``TypeError``), which is the caller's cue to
    convert. On tiny problems the Python-numba boundary dominates the work (each call and each
    returned array costs about as much as the pivoting), hence one call and one caller-owned array.
    ``work`` is the tuple of :func:`_workspace` (``n``) or of any larger size.
    """
    n = q.shape[0]
    if n == 0 or M.shape[0] != n or M.shape[1] != n or zw.shape[0] != 2 * n:
        return _MAX_ITER, 0, np.inf, 3
    if max_piv <= 0:
        max_piv = max(1000, 50 * n)
    for i in range(n):
        for j in range(n):
            if not np.isfinite(M[i, j]):
                return _MAX_ITER, 0, np.inf, 1
    for i in range(n):
        if not np.isfinite(q[i]):
            return _MAX_ITER, 0, np.inf, 2
    bt, lu, fv, iv = work
    z = zw[:n]
    code, piv = _lemke_start(M, q, d, max_piv, lexico, z, bt, lu, fv, iv)
    res = w_and_residual_kernel(M, q, z, zw[n:])
    return code, piv, res, 0


_CHECKED_SIGNATURE = "Tuple((int64, int64, float64, int64))(float64[:, ::1], float64[::1], {}float64[::1])"


@numba.njit(_CHECKED_SIGNATURE.format("float64[::1], int64, boolean, "), cache=True)
def _lemke_checked(M, q, d, max_piv, lexico, zw):  # pragma: no cover - compiled
    """:func:`_checked_start` behind an explicit signature (any covering vector and options)."""
    return _checked_start(M, q, d, max_piv, lexico, zw, _workspace(q.shape[0]))


@numba.njit(_CHECKED_SIGNATURE.format(""), cache=True)
def _lemke_default(M, q, zw):  # pragma: no cover - compiled
    """:func:`_checked_start` with the default options (covering vector of ones, default pivot
    limit, lexicographic rule): three arguments cross the boundary instead of six, a tenth of a
    tiny solve."""
    return _checked_start(M, q, np.empty(0), 0, True, zw, _workspace(q.shape[0]))


_EMPTY = np.empty(0)
_BAD_FIELD = {1: "M", 2: "q"}


def _message(code: int, start: int, d_kind: str, piv: int, statuses: list[str]) -> str:
    """Human-readable account of the last start (and of the failed ones before it)."""
    if code == _SOLVED and len(statuses) == 1:  # the common case, kept cheap
        return f"z0 left the basis after {piv} pivot{'s' if piv != 1 else ''} (start 1 of 1, ones covering vector)"
    p = f"{piv} pivot{'s' if piv != 1 else ''}"
    where = f"start {start + 1} of {len(statuses)}, {d_kind} covering vector"
    before = ""
    if len(statuses) > 1:
        before = f"; earlier starts: {', '.join(statuses[:-1])}"
    if code == _SOLVED:
        return f"z0 left the basis after {p} ({where}){before}"
    if code == _RAY:
        return (
            f"secondary ray after {p} ({where}): the entering column has no positive entry; "
            "if M is copositive-plus this proves that LCP(q, M) has no solution (infeasible)"
            + before
        )
    return f"pivot limit reached: {p} ({where}){before}"


def solve(M: Any, q: Any, options: Options | None = None, progress: Reporter | None = None,
          **overrides: Any) -> Result:
    """Solve LCP(q, M) (find z >= 0, w = M z + q >= 0, z^T w = 0) by Lemke's method.

    Returns a :class:`Result` with ``x = z``. ``status`` is ``solved`` (verified residual <= tol),
    ``ray_termination`` (the last start ended on a secondary ray), ``max_iter`` (the last start
    hit the pivot limit) or ``time_limit``. ``iterations`` counts the pivots of all starts;
    ``extras`` holds ``starts``, ``start_statuses`` and ``pivots_per_start``.

    With a ``time_limit`` (or a ``progress`` reporter, see :mod:`contactmp.progress`) the pivots run
    in chunks of about :data:`~contactmp.progress.CHUNK_SECONDS` (the same pivots: the state of the
    tableau is kept between chunks); after each chunk the basic ``z`` of the current basis is
    checked (``||min(z, M z + q)||_inf``), the clock read and the reporter called. When the time
    is up the answer is the checked iterate of least residual (chunk ends and ends of starts),
    status ``time_limit``. A problem so small that all its starts cannot take a millisecond runs
    in one call as without a limit.
    """
    t0 = time.perf_counter()
    if options is None and not overrides and progress is None:  # skips the strict build: microseconds on tiny problems
        opts, max_piv, lexico = _DEFAULT_OPTIONS, 0, True
    else:
        opts = Options.build(options, **overrides)
        max_piv = opts.max_iter if opts.max_iter is not None else 0  # 0: default_max_pivots(n)
        lexico = bool(opts.lexicographic)
        if progress is not None or (opts.time_limit is not None and opts.time_limit < math.inf):
            out = _solve_watched(M, q, opts, progress, t0)
            if out is not None:
                return out
    try:  # the hot path: float64 C-contiguous arrays go straight into the compiled start
        n = q.shape[0]
        zw = np.empty(2 * n)
        if opts is _DEFAULT_OPTIONS:
            code, piv, res, bad = _lemke_default(M, q, zw)
        else:
            code, piv, res, bad = _lemke_checked(M, q, _EMPTY, max_piv, lexico, zw)
    except (TypeError, AttributeError, IndexError):  # other types: convert (or refuse) first
        M, q = _validated(M, q)
        n = q.shape[0]
        zw = np.empty(2 * n)
        code, piv, res, bad = _lemke_checked(M, q, _EMPTY, max_piv, lexico, zw)
    if bad:
        if bad == 3:
            validate_lcp(M, q)  # raises the InputError that names the field
        raise InputError(_BAD_FIELD[bad], "contains NaN or inf")
    if code == _SOLVED and res <= opts.tol:
        # The first start ended with z0 leaving and the independent residual, computed from the
        # original M, q in the same compiled call, confirms it: nothing to judge, build the answer.
        message = _SOLVED_MESSAGE.get(piv) or _message(code, 0, "ones", piv, _ONE_SOLVED)
        extras = {"w": zw[n:], "starts": 1, "start_statuses": ["solved"], "pivots_per_start": [piv]}
        return Result(Status.SOLVED, zw[:n], NAME, res, opts.tol, piv, time.perf_counter() - t0, message, extras)
    statuses = [_STATUS_OF_CODE[code]]
    pivots = [int(piv)]
    start = 0
    d_kind = "ones"
    if code != _SOLVED and opts.restarts > 0:
        rng = np.random.default_rng(opts.seed)
        d_kind = "random"
        for start in range(1, opts.restarts + 1):
            d = rng.uniform(0.5, 1.5, size=n)
            code, piv, res, _ = _lemke_checked(M, q, d, max_piv, lexico, zw)
            statuses.append(_STATUS_OF_CODE[code])
            pivots.append(int(piv))
            if code == _SOLVED:
                break
    claimed = Status.SOLVED if code == _SOLVED else (
        Status.RAY_TERMINATION if code == _RAY else Status.MAX_ITER
    )
    return judged_result(
        zw[:n], zw[n:], res,
        solver=NAME, claimed=claimed, tol=opts.tol, iterations=sum(pivots), t_start=t0,
        message=_message(code, start, d_kind, int(piv), statuses),
        extras={"starts": len(statuses), "start_statuses": statuses, "pivots_per_start": pivots},
    )


def _validated(M: Any, q: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`validate_lcp`, with writeable arrays (the compiled starts refuse read-only ones)."""
    M, q = validate_lcp(M, q)
    return np.require(M, requirements="W"), np.require(q, requirements="W")  # read-only: copy


#: a time-limited solve runs its starts in one compiled call each (as without a limit) when all of
#: them together cannot reach this many (pivots x n^2): well under a millisecond
_UNCHUNKED_WORK = 2e5
#: ... and at least this many seconds are left
_UNCHUNKED_LEFT = 0.05


def _solve_watched(M: Any, q: Any, opts: Options, progress: Reporter | None, t0: float) -> Result | None:
    """:func:`solve` with a time limit or a reporter: every start in chunks of pivots (see there).
    ``None`` when the problem is too small to need it (no reporter, and the worst case of all
    starts is below :data:`_UNCHUNKED_WORK` with :data:`_UNCHUNKED_LEFT` seconds left)."""
    progress = check_progress(progress)
    checked = not (type(q) is np.ndarray and q.ndim == 1)
    if checked:
        M, q = _validated(M, q)
    n = q.shape[0]
    max_piv = opts.max_iter if opts.max_iter is not None else default_max_pivots(n)
    if (progress is None and opts.time_limit - (time.perf_counter() - t0) >= _UNCHUNKED_LEFT
            and max_piv * (n * n + 8) * (opts.restarts + 1) <= _UNCHUNKED_WORK):
        return None  # (the caller validates M and q)
    if not checked:
        M, q = _validated(M, q)
    watch = Watch(NAME, opts.time_limit, progress, t0)
    lexico = bool(opts.lexicographic)
    zw = np.empty(2 * n)
    statuses: list[str] = []
    pivots: list[int] = []
    d, d_kind, rng = _EMPTY, "ones", None
    code, start, timed_out = _MAX_ITER, 0, False
    for start in range(opts.restarts + 1):
        if start:
            if watch.expired():
                timed_out = True
                start -= 1
                break
            if rng is None:
                rng = np.random.default_rng(opts.seed)
            d, d_kind = rng.uniform(0.5, 1.5, size=n), "random"
        code, piv, timed_out = _watched_start(M, q, d, max_piv, lexico, zw, watch, sum(pivots))
        statuses.append("time_limit" if timed_out else _STATUS_OF_CODE[code])
        pivots.append(int(piv))
        if code == _SOLVED or timed_out:
            break
    extras: dict[str, Any] = {"starts": len(statuses), "start_statuses": statuses, "pivots_per_start": pivots}
    if not timed_out:
        res = w_and_residual_kernel(M, q, zw[:n], zw[n:])
        claimed = Status.SOLVED if code == _SOLVED else (
            Status.RAY_TERMINATION if code == _RAY else Status.MAX_ITER)
        message = _message(code, start, d_kind, pivots[-1], statuses)
    else:
        z = zw[:n]
        z[:] = watch.x
        res = w_and_residual_kernel(M, q, z, zw[n:])
        claimed = Status.TIME_LIMIT
        message = (f"time limit {watch.limit:g} s reached after {sum(pivots)} pivots in {len(statuses)} "
                   f"start(s); the best iterate checked (after {watch.iteration} pivots) is returned")
        extras["best_iteration"] = watch.iteration
    return judged_result(zw[:n], zw[n:], res, solver=NAME, claimed=claimed, tol=opts.tol,
                         iterations=sum(pivots), t_start=watch.t0, message=message, extras=extras)


def _watched_start(M: np.ndarray, q: np.ndarray, d: np.ndarray, max_piv: int, lexico: bool, zw: np.ndarray,
                   watch: Watch, before: int) -> tuple[int, int, bool]:
    """One start of :func:`_lemke_run` in chunks of pivots, with a checkpoint after each chunk
    (:meth:`Watch.offer` of the basic ``z`` and its residual; ``before`` pivots of earlier
    starts are added to the count reported). Writes ``z`` into ``zw[:n]``; returns
    ``(code, pivots, timed_out)``. The start's final ``z`` is offered too."""
    n = q.shape[0]
    z = zw[:n]
    pivots, code, timed_out = 0, _SOLVED, False
    if q.min() < 0.0:
        bt, lu, fv, iv = _workspace(n)
        bt[:] = np.eye(n)
        qbar, col, basis, ties = fv[0], fv[1], iv[0], iv[1]
        qbar[:] = q
        basis[:] = np.arange(n)
        leaving, chunk = -1, max(1, int(1e5 // (n * n + 8)))
        while True:
            t = time.perf_counter()
            done = pivots
            leaving, pivots, code = _lemke_run(M, q, d, lexico, bt, qbar, basis, col, ties, leaving, pivots,
                                               min(max_piv, pivots + chunk), z, lu, fv, iv)
            dt = time.perf_counter() - t
            if code != _MAX_ITER or pivots >= max_piv:
                break
            watch.offer(z, residual_kernel(M, q, z), before + pivots)
            if watch.expired():
                timed_out = True
                break
            chunk = next_chunk(chunk, pivots - done, dt, watch)
    else:
        z[:] = 0.0
    if not timed_out:
        watch.offer(z, residual_kernel(M, q, z), before + pivots)
    return code, pivots, timed_out


_ONE_SOLVED = ["solved"]
#: messages of one successful start with few pivots, formatted once (a tenth of a tiny solve)
_SOLVED_MESSAGE: dict[int, str] = {0: "q >= 0: z = 0 solves the LCP (no pivot)"}
_SOLVED_MESSAGE.update({p: _message(_SOLVED, 0, "ones", p, _ONE_SOLVED) for p in range(1, 64)})


def warmup() -> None:
    """Compile the numba kernels (on a 2x2 problem and a degenerate one) before timing."""
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    solve(M, np.array([-5.0, -6.0]))
    solve(np.ones((2, 2)), np.array([-1.0, -1.0]))
    solve(M, np.array([-5.0, -6.0]), lexicographic=False)
    solve(np.array([[0.0, -1.0], [1.0, 0.0]]), np.array([-1.0, 1.0]), restarts=1)
    solve(M, np.array([-5.0, -6.0]), progress=lambda *args: None)  # the chunked (time-limited) path


# ------------------------------------------------------------------------------------------------
# Batches of equal-size problems
# ------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _batch_range(Ms, qs, zw, out, lo, hi):  # pragma: no cover - compiled
    """:func:`_checked_start` with the default options on the problems ``lo <= b < hi`` of the
    stacked ``Ms[b]``, ``qs[b]``, one workspace for all of them; ``out[b] = (code, pivots)`` and the
    residuals in ``zw[b, 2 n]`` (the caller has checked the data: a NaN would end with code
    ``_MAX_ITER`` and residual inf)."""
    work = _workspace(qs.shape[1])
    for b in range(lo, hi):
        code, piv, res, _ = _checked_start(Ms[b], qs[b], _EMPTY, 0, True, zw[b, :-1], work)
        out[b, 0], out[b, 1] = code, piv
        zw[b, -1] = res


@numba.njit(cache=True, parallel=True)
def _batch_parallel(Ms, qs, zw, out, lo, hi, parts):  # pragma: no cover - compiled
    """:func:`_batch_range` on ``lo <= b < hi`` cut into ``parts`` contiguous slices (one per numba
    thread; ``prange`` over the slices, one workspace each). Each thread works on its own copy of
    its slice: the per-problem views of a shared array would update one reference count from
    every thread (an atomic on a shared cache line, which made two threads slower than one)."""
    B = hi - lo
    for p in numba.prange(parts):
        a, b = lo + p * B // parts, lo + (p + 1) * B // parts
        zw_p, out_p = np.empty((b - a, zw.shape[1])), np.empty((b - a, 2), dtype=np.int64)
        _batch_range(Ms[a:b].copy(), qs[a:b].copy(), zw_p, out_p, 0, b - a)
        zw[a:b] = zw_p
        out[a:b] = out_p


#: a batch runs on numba's threads from this many problems x n^2 on, for problems of at least
#: PARALLEL_MIN_N unknowns: below that one thread was as fast (measured when the batch still built
#: every Result in Python, which was most of the time; not measured again since Results are built
#: on access)
PARALLEL_WORK = 200_000
PARALLEL_MIN_N = 16


def solve_batch(Ms: Any, qs: Any, *, tol: float = _DEFAULT_OPTIONS.tol, parallel: bool | None = None) -> BatchResult:
    """Solve the ``B`` problems LCP(``qs[b]``, ``Ms[b]``) of equal size ``n`` (``Ms``: ``(B, n, n)``,
    ``qs``: ``(B, n)``) by Lemke's method with the default options: one compiled call runs the first
    start of every problem and checks each answer independently (``||min(z, M z + q)||_inf`` from
    the original data, as :func:`solve`); a problem whose first start does not verify to ``tol`` is
    solved again by :func:`solve` (restarts). Returns a :class:`~contactmp.result.BatchResult`: the
    arrays ``x``, ``residual``, ``iterations``, ``success`` over the batch, and ``batch[b]``, built
    when read, equal to what :func:`solve` returns for problem ``b`` alone (the same kernel). ``parallel``: numba threads (default:
    when ``B n^2 >= PARALLEL_WORK`` and ``n >= PARALLEL_MIN_N``; ``True`` forces them for
    ``n >= PARALLEL_MIN_N``, ``False`` never). InputError names ``Ms``/``qs`` (with the problem's
    index) for bad shapes or a NaN/inf, before any work."""
    t0 = time.perf_counter()
    Ms = np.ascontiguousarray(Ms, dtype=float)
    qs = np.ascontiguousarray(qs, dtype=float)
    if qs.ndim != 2 or Ms.ndim != 3 or Ms.shape != (qs.shape[0], qs.shape[1], qs.shape[1]) or qs.shape[1] == 0:
        raise InputError("Ms", f"expected (B, n, n) and qs (B, n) with n >= 1, got {Ms.shape} and {qs.shape}")
    B, n = qs.shape
    for name, arr in (("Ms", Ms), ("qs", qs)):  # before any work: the error names the first bad problem
        finite = np.isfinite(arr.reshape(B, -1)).all(axis=1)
        if not finite.all():
            raise InputError(f"{name}[{int(np.argmin(finite))}]", "contains NaN or inf")
    zw = np.empty((B, 2 * n + 1))
    out = np.empty((B, 2), dtype=np.int64)
    threads = numba.get_num_threads()
    if B and parallel is not False and threads > 1 and (parallel or B * n * n >= PARALLEL_WORK) and n >= PARALLEL_MIN_N:
        _batch_parallel(Ms, qs, zw, out, 0, B, min(threads, B))
    elif B:
        _batch_range(Ms, qs, zw, out, 0, B)
    per = (time.perf_counter() - t0) / max(B, 1)
    codes, pivots, residuals = out[:, 0], out[:, 1], zw[:, -1]
    verified = (codes == _SOLVED) & (residuals <= tol)
    alone = {b: solve(Ms[b], qs[b], tol=tol) for b in np.flatnonzero(~verified).tolist()}

    def make(bs: list[int]) -> list[Result]:
        """The Results of the problems ``bs``, which the batch's first start solved and verified."""
        made = []
        rows = slice(None) if len(bs) == B else bs  # the whole batch: row views, no copies
        for piv, res, z, w in zip(pivots[rows].tolist(), residuals[rows].tolist(), list(zw[rows, :n]),
                                  list(zw[rows, n:2 * n])):
            message = _SOLVED_MESSAGE.get(piv) or _message(_SOLVED, 0, "ones", piv, _ONE_SOLVED)
            made.append(Result(Status.SOLVED, z, NAME, res, tol, piv, per, message,
                               {"w": w, "starts": 1, "start_statuses": ["solved"], "pivots_per_start": [piv],
                                "batched": True}))
        return made

    return BatchResult(NAME, zw[:, :n], residuals.copy(), pivots.copy(), verified, make, alone,
                       time.perf_counter() - t0)
