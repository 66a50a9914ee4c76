"""Nonsmooth Gauss-Seidel (NSGS) for fc3d(W, q, mu), the baseline of Siconos' FC3D_NSGS.

One sweep visits the contacts j = 1..nc in turn and replaces ``r_j`` by the exact solution of
the one-contact problem with the other reactions fixed,

    local W = W_jj (3x3),   local q = q_j + sum_{k != j} W_jk r_k,

solved by :func:`contactmp.solvers.fc3d.local.solve_cone_local` (separation, sticking, or sliding
from the roots of the angle equation; round-off accurate). With relaxation ``omega`` the new
``r_j`` is ``omega r_j^new + (1 - omega) r_j^old`` (a convex combination, so it stays in the cone).
Sweeps stop when the global natural-map residual :func:`contactmp.solvers.fc3d.problem.fc3d_residual` is
at most ``tol`` (checked every ``check_every`` sweeps; one check costs a product with ``W``, done
with ``W`` in compressed sparse rows). Gauss-Seidel over contacts has no general convergence
guarantee for the Coulomb cone (it converges for small friction and well-conditioned ``W``); a run
that does not converge ends with status ``max_iter`` or ``time_limit`` and its best iterate.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numba
import numpy as np

from contactmp.progress import CHUNK_SECONDS, Reporter
from contactmp.result import Result, Status
from contactmp.solvers.fc3d.problem import (
    residual_watch, residual_kernel, build_options, checked_fc3d_result, dual_violation, natural_map_residual,
    validate_fc3d, verified_fc3d_result,
)
from contactmp.solvers.fc3d.local import solve_cone_local
from contactmp.solvers.options import SolverOptions, check_bool, check_int, check_real
from contactmp.validate import first_bad_entry, validate_start

NAME = "nsgs"


@dataclass
class Options(SolverOptions):
    """Options of NSGS.

    Attributes
    ----------
    tol : float
        Stop when the natural-map residual (Siconos' normalisation) is at most ``tol``.
    max_iter : int
        Maximum number of sweeps.
    omega : float
        Relaxation in (0, 2): ``r_j <- omega r_j^new + (1 - omega) r_j^old``.
    check_every : int
        Compute the global residual every this many sweeps (and after the last one).
    time_limit : float or None
        Wall-clock limit in seconds (checked between batches of sweeps; ``None`` or ``inf``: none).
        When it is reached the answer is the batch-end iterate of least residual.
    r0 : array or None
        Warm start (3 nc); ``None`` starts from 0.
    early_stop : bool
        Give up (status ``not_solved``) as soon as the observed rate of convergence says that
        ``tol`` will not be reached within ``max_iter`` sweeps: from the 4th sweep on, with
        ``rate = (res_k / res_{k-3})^(1/3)`` (needs ``check_every = 1``), stop when ``rate >= 1``
        or ``k + log(tol / res_k) / log(rate) > max_iter``. The default solver (auto mode) uses it
        to try a few cheap sweeps before Newton's method (see ``registry.solve_fc3d``).
    """

    max_iter: int = 10000
    omega: float = 1.0
    check_every: int = 1
    time_limit: float | None = None
    r0: Any = None
    early_stop: bool = False

    def check(self) -> None:
        """Reject ill-typed values."""
        super().check()
        check_int("max_iter", self.max_iter)
        check_int("check_every", self.check_every)
        check_real("omega", self.omega, 0.0, 2.0)
        check_bool("early_stop", self.early_stop)


# ---------------------------------------------------------------------------------------------
# compiled kernels shared with the QVI solver
# ---------------------------------------------------------------------------------------------


def block_data(W: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data, diag)``: ``W`` in compressed sparse rows (its nonzeros, column
    indices sorted) and its 3x3 diagonal blocks ``diag[j] = W_jj`` (contiguous, for the compiled
    sweeps). Built by one compiled pass over ``W`` (no scipy.sparse object per call)."""
    return _block_data(np.ascontiguousarray(W, dtype=np.float64))


@numba.njit(cache=True)
def _block_data(W: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """The compiled body of :func:`block_data`."""
    m = W.shape[0]
    nc = m // 3
    nnz = 0
    for i in range(m):
        for k in range(m):
            if W[i, k] != 0.0:
                nnz += 1
    indptr = np.zeros(m + 1, dtype=np.int64)
    indices = np.empty(nnz, dtype=np.int64)
    data = np.empty(nnz)
    p = 0
    for i in range(m):
        for k in range(m):
            if W[i, k] != 0.0:
                indices[p] = k
                data[p] = W[i, k]
                p += 1
        indptr[i + 1] = p
    diag = np.empty((nc, 3, 3))
    for j in range(nc):
        for a in range(3):
            for b in range(3):
                diag[j, a, b] = W[3 * j + a, 3 * j + b]
    return indptr, indices, data, diag


@numba.njit(cache=True)
def local_q(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, diag: np.ndarray, q: np.ndarray,
            r: np.ndarray, j: int, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out <- q_j + sum_{k != j} W_jk r_k``: the local ``q`` of contact ``j`` (rows ``3j..3j+2`` of
    ``W r + q`` minus ``W_jj r_j``), ``W`` in CSR ``(indptr, indices, data)``, ``diag[j] = W_jj``."""
    for a in range(3):
        row = 3 * j + a
        s = q[row]
        for p in range(indptr[row], indptr[row + 1]):
            s += data[p] * r[indices[p]]
        for b in range(3):
            s -= diag[j, a, b] * r[3 * j + b]
        out[a] = s


@numba.njit(cache=True)
def relaxed_update(r: np.ndarray, j: int, rn: np.ndarray, rp: np.ndarray,
                   omega: float) -> None:  # pragma: no cover - compiled
    """Contact j of ``r`` <- ``omega * rn + (1 - omega) * rp`` (the local answer, relaxed)."""
    if omega == 1.0:
        r[3 * j], r[3 * j + 1], r[3 * j + 2] = rn[0], rn[1], rn[2]
    else:
        for a in range(3):
            r[3 * j + a] = omega * rn[a] + (1.0 - omega) * rp[a]


@numba.njit(cache=True)
def csr_velocity(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, q: np.ndarray, r: np.ndarray,
                 u: np.ndarray) -> float:  # pragma: no cover - compiled
    """``u <- W r + q`` (W in CSR); return the scale ``max(||q||, ||r||, ||u||)`` of the residuals."""
    nq = nr = nu = 0.0
    for i in range(q.shape[0]):
        s = q[i]
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * r[indices[p]]
        u[i] = s
        nq += q[i] * q[i]
        nr += r[i] * r[i]
        nu += s * s
    return max(math.sqrt(nq), math.sqrt(nr), math.sqrt(nu))


@numba.njit(cache=True)
def csr_residual(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, q: np.ndarray, mu: np.ndarray,
                 r: np.ndarray, u: np.ndarray) -> float:  # pragma: no cover - compiled
    """``u <- W r + q`` (W in CSR) and :func:`~contactmp.solvers.fc3d.problem.natural_map_residual`."""
    csr_velocity(indptr, indices, data, q, r, u)
    return natural_map_residual(q, mu, r, u)


@numba.njit(cache=True)
def _nsgs_sweeps(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, diag: np.ndarray, q: np.ndarray,
                 mu: np.ndarray, r: np.ndarray, tol: float, omega: float, sweeps: int, check_every: int,
                 hist: np.ndarray, offset: int, horizon: int) -> tuple[int, float, bool]:  # pragma: no cover
    """Run up to ``sweeps`` NSGS sweeps on ``r`` in place. Returns ``(sweeps done, residual, gave_up)``.

    The residual is checked every ``check_every`` sweeps and after the last one; ``inf`` comes
    back when the iterate is not finite. With ``horizon > 0`` (early stop, ``check_every = 1``)
    the residual after global sweep ``k = offset + done`` is stored in ``hist[k]`` and the sweeps
    stop (``gave_up``) when the rate over the last three sweeps predicts that ``tol`` is not
    reached by sweep ``horizon`` (see ``Options.early_stop``).
    """
    nc = mu.shape[0]
    ql = np.empty(3)
    rp = np.empty(3)
    rn = np.empty(3)
    u = np.empty(q.shape[0])
    res = np.inf
    done = 0
    while done < sweeps:
        for j in range(nc):
            local_q(indptr, indices, data, diag, q, r, j, ql)
            rp[0], rp[1], rp[2] = r[3 * j], r[3 * j + 1], r[3 * j + 2]
            solve_cone_local(diag[j], ql, mu[j], rp, rn)
            relaxed_update(r, j, rn, rp, omega)
        done += 1
        if done % check_every == 0 or done == sweeps:
            res = csr_residual(indptr, indices, data, q, mu, r, u)
            if res <= tol or not res < np.inf:
                break
            if horizon > 0:
                k = offset + done
                hist[k] = res
                if k >= 4 and hist[k - 3] > 0.0:
                    rate = (res / hist[k - 3]) ** (1.0 / 3.0)
                    if not rate < 1.0 or k + math.log(tol / res) / math.log(rate) > horizon:
                        return done, res, True
    return done, res, False


def sweep_start(W: Any, q: Any, mu: Any, options_cls: Any, options: Any, overrides: dict[str, Any], solver: str,
                who: str, t0: float) -> tuple[Any, ...]:
    """The common start of the contact sweeps (NSGS, the QVI fixed point): ``(W, q, mu)`` checked,
    the options built, ``r = opts.r0`` (zeros when None), ``W`` in CSR with its diagonal blocks
    (:func:`block_data`) and ``failed``, the ``numerical_error`` Result when some block ``W_jj``
    has ``(W_jj)_nn <= 0`` (the local problems are then not well posed; ``who`` names the sweeps in
    its message), else None. Returns ``(W, q, mu, opts, r, (indptr, indices, data, diag), failed)``."""
    W, q, mu = validate_fc3d(W, q, mu)
    opts = build_options(options_cls, options, overrides)
    r = validate_start(opts.r0, q.shape[0], "r0")
    csr = block_data(W)
    diag = csr[3]
    bad = np.flatnonzero(~(diag[:, 0, 0] > 0.0))
    if not bad.size:
        return W, q, mu, opts, r, csr, None
    j = int(bad[0])
    return W, q, mu, opts, r, csr, verified_fc3d_result(
        W, q, mu, r, solver=solver, claimed=Status.NUMERICAL_ERROR, tol=opts.tol, iterations=0, t_start=t0,
        message=f"{who} (W_jj)_nn > 0, but contact {j} has W[{3 * j}, {3 * j}] = {diag[j, 0, 0]:g}", bad_contact=j)


def run_batches(
    kernel: Callable[[int], tuple[int, float]], max_iter: int, time_limit: float | None, t0: float, tol: float,
    stopped: Callable[[], bool] | None = None, checkpoint: Callable[[int, float], None] | None = None,
) -> tuple[int, float, bool]:
    """Call ``kernel(n) -> (done, residual)`` in batches of growing size until the residual is
    at most ``tol`` (or not finite), ``stopped()`` is true, ``max_iter`` sweeps are done or
    ``time_limit`` seconds have passed since ``t0``. Returns ``(sweeps, residual, timed_out)``.

    Without a limit (``None`` or ``inf``) and without ``checkpoint`` all sweeps are one batch.
    Otherwise batches start at one sweep and grow (at most fourfold) to about
    :data:`~contactmp.progress.CHUNK_SECONDS` (and a quarter of the time left), and
    ``checkpoint(sweeps, residual)`` is called after each batch that did not end the run."""
    total = 0
    res = np.inf
    limited = time_limit is not None and not math.isinf(time_limit)
    batch = 1 if limited or checkpoint is not None else max_iter
    while total < max_iter:
        n = min(batch, max_iter - total)
        t_b = time.perf_counter()
        done, res = kernel(n)
        dt = time.perf_counter() - t_b
        total += done
        if res <= tol or not res < np.inf or (stopped is not None and stopped()):
            return total, res, False
        if checkpoint is not None:
            checkpoint(total, res)
        if limited or checkpoint is not None:
            left = time_limit - (time.perf_counter() - t0) if limited else math.inf
            if left <= 0:
                return total, res, total < max_iter
            per = max(dt, 1e-6) / max(done, 1)
            batch = int(max(1, min(4 * batch, min(CHUNK_SECONDS, 0.25 * left) / per)))
    return total, res, False


def claim(res: float, tol: float, sweeps: int, gave_up: bool, timed_out: bool, max_iter: int,
          time_limit: float | None) -> tuple[Status, str]:
    """What an NSGS run claims (before the independent check) and why, from its last sweep
    residual ``res``: ``solved`` (``res <= tol``), ``not_solved`` (the early stop gave up),
    ``numerical_error`` (iterates not finite), ``time_limit`` or ``max_iter``."""
    if res <= tol:
        return Status.SOLVED, _converged(sweeps)
    if gave_up:
        return Status.NOT_SOLVED, (f"stopped early after {sweeps} sweeps: the residual ({res:.3e}) does not "
                                   f"fall fast enough to reach tol within {max_iter} sweeps")
    if not np.isfinite(res):
        return Status.NUMERICAL_ERROR, f"iterates not finite after {sweeps} sweeps"
    if timed_out:
        return Status.TIME_LIMIT, f"time limit {time_limit} s reached after {sweeps} sweeps (residual {res:.3e})"
    return Status.MAX_ITER, f"{sweeps} sweeps without reaching tol (residual {res:.3e})"


@numba.njit(cache=True)
def _quick_kernel(W: np.ndarray, q: np.ndarray, mu: np.ndarray, tol: float, sweeps: int, r: np.ndarray,
                  u: np.ndarray) -> tuple[int, int, float, bool, float, float]:  # pragma: no cover
    """The quick pass in one compiled call: input check, CSR, NSGS sweeps, independent check.

    Returns ``(code, sweeps_or_contact, sweep_residual, gave_up, residual, dual)``. ``code`` is 1, 2
    or 3 when ``W``, ``q`` or ``mu`` is not finite (or ``mu < 0``, as ``first_bad_entry``), 4 when contact
    ``sweeps_or_contact`` has ``(W_jj)_nn <= 0``, 0 after the sweeps: ``r`` (zero on entry) holds the
    iterate after ``sweeps_or_contact`` sweeps (``omega = 1``, residual checked every sweep,
    early stop with horizon ``sweeps``), ``u = W r + q`` and ``residual``, ``dual`` are the two
    measures of ``verified_fc3d_result`` computed from the dense ``W`` (``residual_kernel``,
    ``dual_violation``), not from the sweeps' own CSR residual ``sweep_residual``.
    """
    bad = first_bad_entry(W, q, mu)
    if bad != 0:
        return bad, -1, np.inf, False, np.inf, np.inf
    indptr, indices, data, diag = _block_data(W)
    for j in range(mu.shape[0]):
        if not diag[j, 0, 0] > 0.0:
            return 4, j, np.inf, False, np.inf, np.inf
    hist = np.zeros(sweeps + 1)
    done, res, gave_up = _nsgs_sweeps(indptr, indices, data, diag, q, mu, r, tol, 1.0, sweeps, 1, hist, 0,
                                      sweeps)
    check = residual_kernel(W, q, mu, r, u)
    dual = dual_violation(q, mu, u) if np.isfinite(check) else np.inf
    return 0, done, res, gave_up, check, dual


def quick_pass(W: np.ndarray, q: np.ndarray, mu: np.ndarray, tol: float, max_iter: int,
               t_start: float) -> Result | None:
    """The quick pass of the default solver (``solve(W, q, mu, tol=tol, max_iter=max_iter,
    early_stop=True)`` from ``r = 0``) on arrays already of the right type: float64, C-contiguous,
    ``W`` 3nc x 3nc, ``q`` 3nc, ``mu`` nc. One compiled call checks the data, runs the sweeps and
    computes the independent residual and dual-cone check of :func:`verified_fc3d_result`; the
    :class:`Result` (same status, message, ``r``, residual, extras) is built once.

    Returns ``None`` when the data are not finite, ``mu < 0`` or some ``(W_jj)_nn <= 0``: the caller
    then takes the general path, which names the bad field or reports the bad block.
    """
    m = q.shape[0]
    r = np.zeros(m)
    u = np.empty(m)
    code, sweeps, res, gave_up, check, dual = _quick_kernel(W, q, mu, tol, max_iter, r, u)
    if code != 0:
        return None
    claimed, message = claim(res, tol, sweeps, gave_up, False, max_iter, None)
    return checked_fc3d_result(r, u, check, dual, solver=NAME, claimed=claimed, tol=tol, iterations=sweeps,
                               t_start=t_start, message=message)


@numba.njit(cache=True)
def _quick_range(Ws, qs, mus, tol, sweeps, rs, us, ints, floats, lo, hi):  # pragma: no cover - compiled
    """:func:`_quick_kernel` on the problems ``lo <= b < hi`` of a stacked batch: ``ints[b] = (code,
    sweeps_or_contact, gave_up)``, ``floats[b] = (sweep_residual, residual, dual)``, ``r`` and ``u``
    in ``rs[b]``, ``us[b]`` (``rs`` zero on entry)."""
    for b in range(lo, hi):
        code, done, res, gave_up, check, dual = _quick_kernel(Ws[b], qs[b], mus[b], tol, sweeps, rs[b], us[b])
        ints[b, 0], ints[b, 1], ints[b, 2] = code, done, gave_up
        floats[b, 0], floats[b, 1], floats[b, 2] = res, check, dual


@numba.njit(cache=True)
def _quick_serial(Ws, qs, mus, tol, sweeps, rs, us, ints, floats):  # pragma: no cover - compiled
    """:func:`_quick_range` over the whole batch in one compiled call."""
    _quick_range(Ws, qs, mus, tol, sweeps, rs, us, ints, floats, 0, qs.shape[0])


@numba.njit(cache=True, parallel=True)
def _quick_parallel(Ws, qs, mus, tol, sweeps, rs, us, ints, floats, parts):  # pragma: no cover - compiled
    """:func:`_quick_serial` on ``parts`` contiguous slices, one per numba thread, each on its own
    copy of its slice (as ``lemke._batch_parallel``: no reference count shared between threads)."""
    B = qs.shape[0]
    for p in numba.prange(parts):
        lo, hi = p * B // parts, (p + 1) * B // parts
        r_p, u_p = np.zeros((hi - lo, rs.shape[1])), np.empty((hi - lo, us.shape[1]))
        i_p, f_p = np.empty((hi - lo, 3), dtype=np.int64), np.empty((hi - lo, 3))
        _quick_range(Ws[lo:hi].copy(), qs[lo:hi].copy(), mus[lo:hi].copy(), tol, sweeps, r_p, u_p, i_p, f_p,
                     0, hi - lo)
        rs[lo:hi], us[lo:hi], ints[lo:hi], floats[lo:hi] = r_p, u_p, i_p, f_p


#: a batch of quick passes runs on numba's threads from this many problems x (3 nc)^2 on
PARALLEL_WORK = 20_000


@dataclass(frozen=True)
class QuickBatch:
    """The outputs of :func:`quick_batch`: per problem ``b``, ``r[b]``, ``u[b] = W r + q``,
    ``ints[b] = (code, sweeps, gave_up)`` (``code``: ``0`` data checked; ``1``, ``2``, ``3``: ``W``,
    ``q``, ``mu`` not finite or ``mu < 0``; ``4``: a block with ``(W_jj)_nn <= 0``), ``floats[b] =
    (sweep_residual, residual, dual_violation)``; ``per``: the batch's time per problem;
    ``verified[b]``: the pass claimed convergence and the independent check agrees (the common case:
    :meth:`results` are then solved Results)."""

    r: np.ndarray
    u: np.ndarray
    ints: np.ndarray
    floats: np.ndarray
    tol: float
    max_iter: int
    per: float
    verified: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        res, check, dual = self.floats.T
        object.__setattr__(self, "verified", (self.ints[:, 0] == 0) & (res <= self.tol) & (check <= self.tol)
                           & (dual <= math.sqrt(self.tol)))

    def results(self, bs: list[int]) -> list[Result | None]:
        """What :func:`quick_pass` returns for each problem ``b`` of ``bs`` alone (``None`` where it
        does), in one pass over the batch's arrays."""
        tol, out = self.tol, []
        for (code, sweeps, gave_up), (res, check, dual), r, u, ok in zip(
                self.ints[bs].tolist(), self.floats[bs].tolist(), list(self.r[bs]), list(self.u[bs]),
                self.verified[bs].tolist()):
            if code != 0:
                out.append(None)
            elif ok:  # claimed and verified: kept cheap
                out.append(Result(Status.SOLVED, r, NAME, check, tol, sweeps, self.per, _converged(sweeps),
                                  {"u": u, "dual_violation": dual}))
            else:
                claimed, message = claim(res, tol, sweeps, bool(gave_up), False, self.max_iter, None)
                out.append(checked_fc3d_result(r, u, check, dual, solver=NAME, claimed=claimed, tol=tol,
                                               iterations=sweeps, t_start=time.perf_counter() - self.per,
                                               message=message))
        return out


def quick_batch(Ws: np.ndarray, qs: np.ndarray, mus: np.ndarray, tol: float, max_iter: int,
                parallel: bool | None = None) -> QuickBatch:
    """:func:`quick_pass` on every problem ``b`` of a stacked batch (``Ws`` (B, 3nc, 3nc), ``qs``
    (B, 3nc), ``mus`` (B, nc); float64, C-contiguous) in one compiled call (numba threads when
    ``parallel``, default from :data:`PARALLEL_WORK`); no Result is built until
    :meth:`QuickBatch.results` asks for them."""
    t0 = time.perf_counter()
    B, m = qs.shape
    rs, us = np.zeros((B, m)), np.empty((B, m))
    ints, floats = np.empty((B, 3), dtype=np.int64), np.empty((B, 3))
    if B:
        if (B * m * m >= PARALLEL_WORK) if parallel is None else parallel:
            _quick_parallel(Ws, qs, mus, tol, max_iter, rs, us, ints, floats, min(numba.get_num_threads(), B))
        else:
            _quick_serial(Ws, qs, mus, tol, max_iter, rs, us, ints, floats)
    return QuickBatch(rs, us, ints, floats, tol, max_iter, (time.perf_counter() - t0) / max(B, 1))


def _converged(sweeps: int) -> str:
    """The message of a run that converged in ``sweeps`` sweeps (as :func:`claim`'s)."""
    return _CONVERGED[sweeps] if sweeps < len(_CONVERGED) else f"converged in {sweeps} sweeps"


_CONVERGED = [f"converged in {k} sweeps" for k in range(128)]


def solve(W: Any, q: Any, mu: Any, options: Options | None = None, progress: Reporter | None = None,
          **overrides: Any) -> Result:
    """Solve fc3d(W, q, mu) by nonsmooth Gauss-Seidel over the contacts.

    Returns a :class:`Result` with ``x = r``, ``iterations`` = sweeps and ``extras["u"] = W r + q``.
    Status: ``solved`` (verified natural-map residual <= tol), ``max_iter``, ``time_limit`` or
    ``numerical_error`` (a block with ``(W_jj)_nn <= 0``, or non-finite iterates).

    With a ``time_limit`` (or a ``progress`` reporter, see :mod:`contactmp.progress`) the sweeps
    run in batches (:func:`run_batches`); after each the iterate's natural-map residual is checked
    (:func:`~contactmp.solvers.fc3d.problem.fc3d_residual`, from the dense ``W``) and reported. When the
    time is up the answer is the checked iterate of least residual.
    """
    t0 = time.perf_counter()
    W, q, mu, opts, r, (indptr, indices, data, diag), failed = sweep_start(
        W, q, mu, Options, options, overrides, NAME, "NSGS needs", t0)
    if failed is not None:
        return failed
    tol, omega, every = float(opts.tol), float(opts.omega), int(opts.check_every)
    max_iter = int(opts.max_iter)
    early = bool(opts.early_stop) and every == 1
    hist = np.zeros(max_iter + 1 if early else 1)
    state = {"total": 0, "gave_up": False}

    def kernel(n: int) -> tuple[int, float]:
        done, res_, gave_up = _nsgs_sweeps(indptr, indices, data, diag, q, mu, r, tol, omega, n, every,
                                           hist, state["total"], max_iter if early else 0)
        state["total"] += done
        state["gave_up"] = gave_up
        return done, res_

    watch, offer = residual_watch(NAME, opts.time_limit, progress, t0, W, q, mu, r)
    checkpoint = None if offer is None else (lambda done, _res: offer(done))

    sweeps, res, timed_out = run_batches(kernel, max_iter, opts.time_limit, t0, tol,
                                         lambda: state["gave_up"], checkpoint)
    claimed, message = claim(res, tol, sweeps, state["gave_up"], timed_out, max_iter, opts.time_limit)
    if timed_out:  # the checked iterate of least residual
        r[:] = watch.x
        message += f"; the best iterate checked (after {watch.iteration} sweeps) is returned"
    return verified_fc3d_result(
        W, q, mu, r, solver=NAME, claimed=claimed, tol=opts.tol, iterations=sweeps, t_start=t0,
        message=message,
    )


def warmup() -> None:
    """Compile the sweep and the quick pass on a one-contact problem."""
    W, q, mu = np.diag([2.0, 1.0, 1.0]), np.array([-1.0, 0.5, 0.2]), np.array([0.3])
    solve(W, q, mu)
    quick_pass(W, q, mu, 1e-8, 50, time.perf_counter())
