"""Projected Gauss-Seidel (with over-relaxation) for LCP(q, M).

One sweep updates, for i = 1..n in turn and with the newest values of z,

    z_i <- max(0, z_i - omega (M z + q)_i / M_ii),

and sweeps repeat until the natural-map residual ``||min(z, M z + q)||_inf`` is at most ``tol`` or
``max_iter`` sweeps have run. For symmetric positive definite M and 0 < omega < 2 the iterates
converge to the unique solution (Cryer's projected SOR); for other matrices they may not. Every
``M_ii`` must be positive: otherwise the sweep is undefined and the solver returns
``numerical_error`` naming the index (it does not raise).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from contactmp.progress import Reporter, Watch, check_progress, next_chunk
from contactmp.result import Result, Status
from contactmp.solvers.lcp.problem import residual_kernel, validate_lcp, verified_result
from contactmp.solvers.options import SolverOptions, check_int, check_real
from contactmp.validate import validate_start

NAME = "pgs"


@dataclass
class Options(SolverOptions):
    """Options of projected Gauss-Seidel.

    Attributes
    ----------
    tol : float
        Stop when ``||min(z, M z + q)||_inf <= tol`` (checked after every sweep).
    max_iter : int
        Maximum number of sweeps.
    omega : float
        Relaxation factor in (0, 2); 1 is plain projected Gauss-Seidel.
    z0 : numpy.ndarray or None
        Warm start (length n, finite; negative entries are projected to 0). ``None`` starts at 0.
    """

    max_iter: int = 10000
    omega: float = 1.0
    z0: np.ndarray | None = None

    def check(self) -> None:
        """Reject ill-typed values."""
        super().check()
        check_int("max_iter", self.max_iter)
        check_real("omega", self.omega, 0.0, 2.0)


_DEFAULT_OPTIONS = Options()


@numba.njit(cache=True)
def _pgs_sweeps(M, q, z, tol, omega, max_iter):  # pragma: no cover - compiled
    """Run PGS sweeps on ``z`` in place. Returns ``(sweeps, residual)``.

    The residual ``||min(z, M z + q)||_inf`` is computed after each sweep; the loop also stops
    when it is not finite (divergence).
    """
    n = q.shape[0]
    res = np.inf
    sweeps = 0
    while sweeps < max_iter:
        for i in range(n):
            s = q[i]
            for j in range(n):
                s += M[i, j] * z[j]
            v = z[i] - omega * s / M[i, i]
            z[i] = v if v > 0.0 else 0.0
        sweeps += 1
        res = residual_kernel(M, q, z)
        if res <= tol or not res < np.inf:
            break
    return sweeps, res


def solve(M: Any, q: Any, options: Options | None = None, progress: Reporter | None = None,
          **overrides: Any) -> Result:
    """Solve LCP(q, M) (z >= 0, w = M z + q >= 0, z^T w = 0) by projected Gauss-Seidel / SOR.

    Returns a :class:`Result` with ``x = z`` and ``iterations`` = sweeps. ``status`` is ``solved``
    (verified residual <= tol), ``max_iter``, ``time_limit`` or ``numerical_error`` (a diagonal
    entry ``M_ii <= 0``, or the iterates diverged to a non-finite value).

    With a ``time_limit`` (or a ``progress`` reporter, see :mod:`contactmp.progress`) the sweeps
    run in chunks (the same sweeps); after each chunk the residual of the last sweep (the
    independent check, computed in the sweep kernel) is noted, the clock read and the reporter
    called. When the time is up the answer is the chunk-end iterate of least residual.
    """
    t0 = time.perf_counter()
    M, q = validate_lcp(M, q)
    if options is None and not overrides and progress is None:
        opts = _DEFAULT_OPTIONS
    else:
        opts = Options.build(options, **overrides)
    n = q.shape[0]
    z = np.maximum(validate_start(opts.z0, n, "z0"), 0.0)
    diag = np.diagonal(M)
    bad = np.flatnonzero(diag <= 0.0)
    if bad.size:
        i = int(bad[0])
        return verified_result(
            M, q, z, solver=NAME, claimed=Status.NUMERICAL_ERROR, tol=opts.tol, iterations=0,
            t_start=t0,
            message=f"PGS needs M_ii > 0, but M[{i}, {i}] = {diag[i]:g} (index {i}; "
            f"{bad.size} nonpositive diagonal entries)",
            bad_index=i,
        )
    timed_out = False
    if progress is None and (opts.time_limit is None or opts.time_limit == math.inf):
        sweeps, res = _pgs_sweeps(M, q, z, float(opts.tol), float(opts.omega), int(opts.max_iter))
    else:
        sweeps, res, timed_out = _watched_sweeps(M, q, z, opts, Watch(NAME, opts.time_limit,
                                                                     check_progress(progress), t0))
    if timed_out:
        claimed = Status.TIME_LIMIT
        message = (f"time limit {opts.time_limit:g} s reached after {sweeps} sweeps; the best iterate "
                   f"checked is returned")
    elif res <= opts.tol:
        claimed, message = Status.SOLVED, f"converged in {sweeps} sweeps"
    elif not np.isfinite(res):
        claimed = Status.NUMERICAL_ERROR
        message = f"iterates diverged (non-finite) after {sweeps} sweeps"
    else:
        claimed = Status.MAX_ITER
        message = f"{sweeps} sweeps without reaching tol (residual {res:.3e})"
    return verified_result(
        M, q, z, solver=NAME, claimed=claimed, tol=opts.tol, iterations=sweeps, t_start=t0,
        message=message,
    )


def _watched_sweeps(M: np.ndarray, q: np.ndarray, z: np.ndarray, opts: Options,
                    watch: Watch) -> tuple[int, float, bool]:
    """:func:`_pgs_sweeps` in chunks with a checkpoint after each (:meth:`Watch.offer`). Returns
    ``(sweeps, residual, timed_out)``; when timed out ``z`` holds the best iterate checked."""
    n = q.shape[0]
    tol, omega, max_iter = float(opts.tol), float(opts.omega), int(opts.max_iter)
    total, chunk, res = 0, max(1, int(1e5 // (n * n + 8))), np.inf
    while total < max_iter:
        t = time.perf_counter()
        done, res = _pgs_sweeps(M, q, z, tol, omega, min(chunk, max_iter - total))
        dt = time.perf_counter() - t
        total += done
        watch.offer(z, res, total)
        if res <= tol or not res < np.inf:
            break
        if watch.expired() and total < max_iter:
            z[:] = watch.x
            return total, watch.residual, True
        chunk = next_chunk(chunk, done, dt, watch)
    return total, res, False


def warmup() -> None:
    """Compile the numba sweep on a 2x2 problem."""
    solve(np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-5.0, -6.0]))
