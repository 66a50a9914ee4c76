"""A proximal (regularized) semismooth Newton method for large fc3d problems with a singular W.

Problem (see :mod:`contactmp.solvers.fc3d.problem`): find ``r`` and ``u = W r + q`` with, per contact ``j``
(order normal, t1, t2), ``r_j in K_j = {||r_T|| <= mu_j r_n}``, ``u_hat_j = u_j + mu_j ||u_jT|| e_n in
K_j^*`` and ``r_j . u_hat_j = 0``.

**Why another Newton method.** Piles and stacks have more contact rows than degrees of freedom:
``W = J M^{-1} J^T`` (``3 nc x 3 nc``) has rank at most ``6 n_bodies``, so whenever enough contacts
stick the generalized Jacobian ``H = A + B W`` of the Alart-Curnier function (Alart and Curnier 1991)

    Phi_n = r_n - max(0, r_n - rho u_n)
    Phi_T = r_T - P_D(mu max(0, r_n - rho u_n)) (r_T - rho u_T)

(``A``, ``B`` block diagonal, 3 x 3 per contact; :func:`contactmp.solvers.fc3d.newton.ac_eval`) is
singular, and the plain Newton step does not exist; its reactions are not unique either.
Here every step solves the Jacobian of the *proximal* problem instead (Rockafellar's proximal point
method, the idea of Siconos' PROX): with ``S_k = eta_k diag(||W_jj||_2)`` and the centre ``r_k``,
fc3d(W + S_k, q - S_k r_k, mu) has the same velocity ``u`` at ``r = r_k`` (so the same ``Phi(r_k)``)
and the Jacobian ``A + B (W + S_k)``, regular for ``eta_k > 0`` whenever W is positive
semidefinite (as a Delassus matrix is). One step of Newton on that problem from its centre is

    (A + B (W + S_k)) d = -Phi(r_k),      eta_k = lambda_k min(1, res_k),

``res_k`` the normalized natural-map residual of the ORIGINAL problem at ``r_k``. As ``res_k -> 0``
the weight vanishes and the step tends to the semismooth Newton step, so convergence is fast near a
solution (Li and Fukushima's regularized Newton; the proximal-point view is Rockafellar 1976).
Globalization: the nonmonotone Armijo rule (Grippo, Lampariello and Lucidi) on the merit
``psi = ||Phi||^2 / 2`` of the original problem with the slope ``psi'(r_k; d) = -2 psi - Phi^T B S_k d``;
``lambda_k`` is divided by ``10`` (down to ``lambda_min``) after a full step and multiplied by ``10``
when the step is not a descent direction, when the line search fails or when the matrix is
singular. When ``lambda_k`` exceeds ``lambda_max`` without a step, or psi stops decreasing for
``stall`` iterations, a proximal-point phase follows: centres ``c`` move to the (inexact) solution of
fc3d(W + S, q - S c, mu), each solved by the same regularized iteration, with ``S`` following the
residual (Siconos' PROX rule ``alpha = sigma res``, scaled per contact).

**Sparse block storage end to end.** ``W`` is held as a 3 x 3 block sparse row matrix (BSR: the
blocks ``W_jk`` of contacts that share a body); ``u = W r + q`` and the Jacobian's blocks
``B_j W_jk (+ A_j + B_j S_j on the diagonal)`` are computed by compiled loops over those blocks,
scattered into a CSC matrix of fixed pattern and factorized by SuperLU (``scipy.sparse.linalg.splu``).
The pattern is the same at every step, so its fill-reducing order is computed once per solve
(minimum degree on the contacts' block graph, :func:`block_ordering`) and applied symmetrically
(diagonal blocks stay on the diagonal); SuperLU then factors in that order with threshold pivoting
instead of reordering every matrix (on the Capsules and the generated piles: 0.4-0.5x the time per
factorization of a COLAMD order per step, and less fill). Dense input is checked and split into
its nonzero blocks in one compiled pass; a dense ``W`` is never formed from sparse input.

The answer is judged on the original problem by the independent natural-map residual and the
dual-cone check of :func:`~contactmp.solvers.fc3d.problem.checked_fc3d_result` (``u = W r + q`` recomputed
from the sparse blocks).
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from contactmp.errors import InputError, OptionError
from contactmp.progress import Reporter, check_progress
from contactmp.result import Result, Status
from contactmp.solvers.fc3d.problem import (
    build_options, checked_fc3d_result, dual_violation, ending_status, natural_map_residual,
)
from contactmp.solvers.fc3d.newton import ac_eval, merit_kernel
from contactmp.solvers.options import SolverOptions, check_int, check_real
from contactmp.validate import fc3d_q_mu, fc3d_size, validate_start

NAME = "prox-newton"


@dataclass
class Options(SolverOptions):
    """Options of the proximal semismooth Newton method.

    Attributes
    ----------
    tol : natural-map residual of the original problem at which to stop.
    max_iter : linear solves (factorizations) in all phases.
    lam : initial weight ``lambda_0`` of the proximal term (``eta = lambda min(1, res)``).
    lam_min, lam_max : bounds of ``lambda`` in the regularized phase (beyond ``lam_max`` the
        proximal-point phase takes over).
    sigma : Armijo constant in ``(0, 1)``.
    beta : backtracking factor in ``(0, 1)``.
    memory : nonmonotone memory (1: monotone Armijo).
    max_backtracks : step halvings tried before ``lambda`` is raised.
    stall : iterations without halving psi after which the proximal-point phase takes over.
    prox_sigma : weight of the proximal-point phase per unit residual (Siconos' PROX: 5).
    time_limit : wall-clock seconds (``None`` or ``inf``: none), checked before every iteration;
        when exceeded the status is ``time_limit`` and the answer the iterate of least residual.
    r0 : warm start (``3 nc`` values); ``None`` starts from ``r = 0``.
    """

    tol: float = 1e-8
    max_iter: int = 300
    lam: float = 1.0
    lam_min: float = 1e-2
    lam_max: float = 1e8
    sigma: float = 1e-4
    beta: float = 0.5
    memory: int = 5
    max_backtracks: int = 12
    stall: int = 30
    prox_sigma: float = 5.0
    time_limit: float | None = None
    r0: Any = None

    def check(self) -> None:
        """Reject ill-typed or out-of-range values."""
        super().check()
        for name, low in (("max_iter", 0), ("memory", 1), ("max_backtracks", 0), ("stall", 1)):
            check_int(name, getattr(self, name), low)
        for name in ("sigma", "beta"):
            check_real(name, getattr(self, name), 0.0, 1.0)
        for name in ("lam", "lam_min", "lam_max", "prox_sigma"):
            check_real(name, getattr(self, name), 0.0)
        if not self.lam_min <= self.lam_max:
            raise OptionError(f"lam_min ({self.lam_min!r}) must not exceed lam_max ({self.lam_max!r})")


# ------------------------------------------------------------------------------------------------
# Sparse 3 x 3 block storage
# ------------------------------------------------------------------------------------------------


def validate_block_fc3d(W: Any, q: Any, mu: Any) -> tuple[sp.bsr_matrix, np.ndarray, np.ndarray]:
    """``(W, q, mu)`` with ``W`` as a 3 x 3 block sparse row matrix (sorted, every diagonal block
    stored), or :class:`InputError` naming the field. ``W`` may be dense or any scipy.sparse matrix;
    the checks are those of :func:`contactmp.validate.validate_fc3d` (shapes ``3 nc``, finite, ``mu``
    finite and ``>= 0``, a scalar ``mu`` broadcast). Dense ``W`` is checked and split into its
    nonzero blocks in one compiled pass (:func:`validate_dense_fc3d`); a BSR matrix already in this
    form (float64, 3 x 3 blocks, canonical, every diagonal block stored) is used as it is."""
    if not sp.issparse(W):
        _, Wb, q, mu = validate_dense_fc3d(W, q, mu)
        return Wb, q, mu
    m = fc3d_size(W)
    if (W.format == "bsr" and W.blocksize == (3, 3) and W.dtype == np.float64 and W.has_canonical_format
            and (_diag_positions(W.indptr.astype(np.int64), W.indices.astype(np.int64)) >= 0).all()):
        Wb = W  # already the working form (e.g. from validate_dense_fc3d)
        if not np.isfinite(Wb.data).all():
            raise InputError("W", "contains NaN or inf")
    else:
        try:
            Wc = sp.csr_matrix(W, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InputError("W", f"cannot be read as a float matrix ({exc})") from None
        if not np.isfinite(Wc.data).all():
            raise InputError("W", "contains NaN or inf")
        Wb = block_matrix(Wc)
    q, mu_arr = fc3d_q_mu(q, mu, m)
    _check_finite_q_mu(q, mu_arr)
    return Wb, q, mu_arr


def validate_dense_fc3d(W: Any, q: Any, mu: Any) -> tuple[np.ndarray, sp.bsr_matrix, np.ndarray, np.ndarray]:
    """``(W, Wb, q, mu)``: the checks and conversions of :func:`contactmp.validate.validate_fc3d`
    (``W`` a float64 C-contiguous ``3 nc x 3 nc`` array, ``q`` of ``3 nc`` and ``mu`` of ``nc``
    entries, all finite, ``mu >= 0``; :class:`InputError` naming the field otherwise) and ``Wb``, the
    nonzero 3 x 3 blocks ``W_jk`` of ``W`` (every diagonal block stored) as a BSR matrix, from one
    compiled pass over ``W``: the default solver checks a large dense problem once and hands the
    blocks to this solver, the dense ``W`` to the rest of its chain."""
    try:
        W = np.ascontiguousarray(W, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError("W", f"cannot be read as a float matrix ({exc})") from None
    m = fc3d_size(W)
    q, mu_arr = fc3d_q_mu(q, mu, m)
    indptr, indices, data, finite = _dense_blocks(W)
    if not finite:
        raise InputError("W", "contains NaN or inf")
    _check_finite_q_mu(q, mu_arr)
    return W, sp.bsr_matrix((data, indices, indptr), shape=(m, m)), q, mu_arr


def _check_finite_q_mu(q: np.ndarray, mu: np.ndarray) -> None:
    """:class:`InputError` naming ``q`` (a NaN or inf) or ``mu`` (not finite, or negative)."""
    if not np.isfinite(q).all():
        raise InputError("q", "contains NaN or inf")
    if not (np.isfinite(mu).all() and (mu >= 0).all()):
        raise InputError("mu", "friction coefficients must be finite and >= 0")


def block_matrix(W: sp.spmatrix) -> sp.bsr_matrix:
    """``W`` as a BSR matrix of 3 x 3 blocks with sorted block indices and every diagonal block
    stored (explicit zeros where W has none), the storage this solver works on."""
    coo = sp.coo_matrix(W)
    m = W.shape[0]
    d = np.arange(m)
    rows = np.concatenate([coo.row, np.repeat(d, 3)])
    cols = np.concatenate([coo.col, (3 * (np.repeat(d, 3) // 3)) + np.tile(np.arange(3), m)])
    vals = np.concatenate([coo.data, np.zeros(3 * m)])
    full = sp.csr_matrix((vals, (rows, cols)), shape=(m, m))  # duplicates summed, zeros kept
    full.sort_indices()
    B = full.tobsr(blocksize=(3, 3))
    B.sort_indices()
    return B


@numba.njit(cache=True)
def _dense_blocks(W: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:  # pragma: no cover
    """``(indptr, indices, data, finite)``: the 3 x 3 blocks of the dense ``W`` with a nonzero entry,
    and every diagonal block, in BSR arrays (block columns sorted); ``finite`` is false (and the
    arrays empty) as soon as an entry is NaN or inf. One pass over ``W`` marks the blocks, a second
    copies the marked ones."""
    m = W.shape[0]
    nb = m // 3
    mark = np.zeros((nb, nb), dtype=np.bool_)
    indptr = np.zeros(nb + 1, dtype=np.int64)
    for j in range(nb):
        for a in range(3):
            i = 3 * j + a
            for k in range(nb):
                for c in range(3 * k, 3 * k + 3):
                    v = W[i, c]
                    if v != 0.0:  # NaN and inf included
                        if not math.isfinite(v):
                            return indptr, np.empty(0, np.int64), np.empty((0, 3, 3)), False
                        mark[j, k] = True
        mark[j, j] = True
        cnt = 0
        for k in range(nb):
            if mark[j, k]:
                cnt += 1
        indptr[j + 1] = indptr[j] + cnt
    indices = np.empty(indptr[nb], dtype=np.int64)
    data = np.empty((indptr[nb], 3, 3))
    for j in range(nb):
        p = indptr[j]
        for k in range(nb):
            if mark[j, k]:
                indices[p] = k
                for a in range(3):
                    for c in range(3):
                        data[p, a, c] = W[3 * j + a, 3 * k + c]
                p += 1
    return indptr, indices, data, True


@numba.njit(cache=True)
def _diag_positions(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Index in the block arrays of each diagonal block (-1 when absent)."""
    nb = indptr.shape[0] - 1
    out = np.full(nb, -1, dtype=np.int64)
    for j in range(nb):
        for p in range(indptr[j], indptr[j + 1]):
            if indices[p] == j:
                out[j] = p
    return out


@numba.njit(cache=True)
def _block_matvec(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, x: np.ndarray,
                  out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out <- W x`` for ``W`` in 3 x 3 BSR form."""
    nb = indptr.shape[0] - 1
    for j in range(nb):
        a0 = a1 = a2 = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            k = 3 * indices[p]
            x0, x1, x2 = x[k], x[k + 1], x[k + 2]
            a0 += data[p, 0, 0] * x0 + data[p, 0, 1] * x1 + data[p, 0, 2] * x2
            a1 += data[p, 1, 0] * x0 + data[p, 1, 1] * x1 + data[p, 1, 2] * x2
            a2 += data[p, 2, 0] * x0 + data[p, 2, 1] * x1 + data[p, 2, 2] * x2
        out[3 * j] = a0
        out[3 * j + 1] = a1
        out[3 * j + 2] = a2


@numba.njit(cache=True)
def _jacobian_blocks(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, diag: np.ndarray,
                     A: np.ndarray, B: np.ndarray, s: np.ndarray, H: np.ndarray) -> None:  # pragma: no cover
    """``H <- A + B (W + diag(s))`` block by block (the pattern of W)."""
    nb = indptr.shape[0] - 1
    for j in range(nb):
        for p in range(indptr[j], indptr[j + 1]):
            for a in range(3):
                b0, b1, b2 = B[j, a, 0], B[j, a, 1], B[j, a, 2]
                for c in range(3):
                    H[p, a, c] = b0 * data[p, 0, c] + b1 * data[p, 1, c] + b2 * data[p, 2, c]
        p = diag[j]
        for a in range(3):
            for c in range(3):
                H[p, a, c] += A[j, a, c] + B[j, a, c] * s[3 * j + c]


@numba.njit(cache=True)
def _bsb_dot(phi: np.ndarray, B: np.ndarray, s: np.ndarray, d: np.ndarray) -> float:  # pragma: no cover
    """``phi^T B diag(s) d``."""
    out = 0.0
    for j in range(B.shape[0]):
        for a in range(3):
            v = 0.0
            for c in range(3):
                v += B[j, a, c] * s[3 * j + c] * d[3 * j + c]
            out += phi[3 * j + a] * v
    return out


@numba.njit(cache=True)
def _trial_merit(r: np.ndarray, u: np.ndarray, d: np.ndarray, wd: np.ndarray, t: float, mu: np.ndarray,
                 rho: np.ndarray, rt: np.ndarray, ut: np.ndarray, phi: np.ndarray,
                 A: np.ndarray, B: np.ndarray) -> float:  # pragma: no cover - compiled
    """``rt <- r + t d``, ``ut <- u + t W d`` and the merit ``||Phi(rt)||^2 / 2`` (``phi`` overwritten)."""
    for i in range(r.shape[0]):
        rt[i] = r[i] + t * d[i]
        ut[i] = u[i] + t * wd[i]
    ac_eval(rt, ut, mu, rho, phi, A, B, False)
    return merit_kernel(phi)


@numba.njit(cache=True)
def _block_norms(blocks: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """``||W_jj||_2`` of each 3 x 3 block of ``blocks`` (nc, 3, 3): the square root of the largest
    eigenvalue of ``G = W_jj^T W_jj``, by cyclic Jacobi rotations on ``G`` (to rounding; no LAPACK
    call and no temporary per block)."""
    out = np.empty(blocks.shape[0])
    g = np.empty((3, 3))
    for j in range(blocks.shape[0]):
        for a in range(3):
            for b in range(3):
                g[a, b] = (blocks[j, 0, a] * blocks[j, 0, b] + blocks[j, 1, a] * blocks[j, 1, b]
                           + blocks[j, 2, a] * blocks[j, 2, b])
        for _ in range(30):
            off = g[0, 1] * g[0, 1] + g[0, 2] * g[0, 2] + g[1, 2] * g[1, 2]
            if off <= 1e-32 * (g[0, 0] * g[0, 0] + g[1, 1] * g[1, 1] + g[2, 2] * g[2, 2]):
                break
            for a, b in ((0, 1), (0, 2), (1, 2)):
                if g[a, b] == 0.0:
                    continue
                theta = (g[b, b] - g[a, a]) / (2.0 * g[a, b])
                t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(3):  # G <- G R, then R^T G
                    gka, gkb = g[k, a], g[k, b]
                    g[k, a], g[k, b] = c * gka - s * gkb, s * gka + c * gkb
                for k in range(3):
                    gak, gbk = g[a, k], g[b, k]
                    g[a, k], g[b, k] = c * gak - s * gbk, s * gak + c * gbk
        out[j] = math.sqrt(max(g[0, 0], g[1, 1], g[2, 2], 0.0))
    return out


def block_ordering(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """A fill-reducing order of the contacts for the LU factors of ``A + B (W + S)``, computed once
    per solve from the block pattern of W (the Jacobian has that pattern at every step).

    Minimum degree on the pattern of ``G + G^T`` (``G`` the ``nc x nc`` graph of the nonzero blocks
    ``W_jk``), as SuperLU computes it (``MMD_AT_PLUS_A``), read off the factorization of a strictly
    diagonally dominant matrix with that pattern. Returns ``order``: position ``i`` of the permuted
    Jacobian holds contact ``order[i]``. A symmetric permutation keeps the diagonal blocks (where
    ``A_j + B_j (W_jj + S_j)`` lives) on the diagonal, so the threshold pivoting of :meth:`_Blocks.factor`
    mostly keeps the diagonal pivots this order plans for."""
    nb = indptr.shape[0] - 1
    G = sp.csr_matrix((np.ones(indices.shape[0]), indices, indptr), shape=(nb, nb))
    G = (G + G.T).tocsc()
    G.data[:] = -1.0
    deg = np.diff(G.indptr).astype(np.float64)
    G = (G + sp.diags(deg + 2.0)).tocsc()  # diagonal stored, strictly dominant: pivots stay on it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pc = spla.splu(G, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                       options={"SymmetricMode": True}).perm_c
    order = np.empty(nb, dtype=np.int64)
    order[pc] = np.arange(nb)  # perm_c sends column i to position perm_c[i]
    return order


class _Factors:
    """The LU factors of the permuted Jacobian ``P^T H P``; :meth:`solve` answers ``H d = b``."""

    def __init__(self, lu: Any, order3: np.ndarray):
        self.lu, self.order3 = lu, order3

    def solve(self, b: np.ndarray) -> np.ndarray:
        """``d`` with ``H d = b``."""
        d = np.empty_like(b)
        d[self.order3] = self.lu.solve(b[self.order3])
        return d


class _Blocks:
    """W in BSR form with the CSC pattern of the (symmetrically permuted) Jacobian
    ``A + B (W + S)`` and its value map."""

    #: SuperLU's threshold for keeping a diagonal pivot (1: partial pivoting): small enough to
    #: follow the ordering, large enough to bound the growth of the factors
    PIVOT_THRESHOLD = 0.1

    def __init__(self, W: sp.bsr_matrix):
        self.indptr = W.indptr.astype(np.int64)
        self.indices = W.indices.astype(np.int64)
        self.data = np.ascontiguousarray(W.data, dtype=np.float64)
        self.n = W.shape[0]
        self.nc = self.n // 3
        self.diag = _diag_positions(self.indptr, self.indices)
        if (self.diag < 0).any():  # block_matrix stores every diagonal block
            raise AssertionError("internal: a diagonal block of W is not stored")
        nnzb = self.data.shape[0]
        order = block_ordering(self.indptr, self.indices)
        self.order3 = (3 * order[:, None] + np.arange(3)).ravel()
        tag = np.arange(1, 9 * nnzb + 1, dtype=np.float64).reshape(nnzb, 3, 3)
        csc = sp.bsr_matrix((tag, self.indices, self.indptr), shape=(self.n, self.n)).tocsr()
        csc = csc[self.order3][:, self.order3].tocsc()
        csc.sort_indices()
        self.perm = (csc.data - 1).astype(np.int64)
        self.csc = csc
        self.H = np.empty_like(self.data)
        blocks = self.data[self.diag]
        norms = _block_norms(np.ascontiguousarray(blocks))
        big = float(np.abs(blocks).max()) if blocks.size else 0.0
        self.wnorm = np.where(norms > 0, norms, big if big > 0 else 1.0)  # ||W_jj||_2 per contact

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``W x``."""
        out = np.empty(self.n)
        _block_matvec(self.indptr, self.indices, self.data, x, out)
        return out

    def factor(self, A: np.ndarray, B: np.ndarray, s: np.ndarray) -> _Factors | None:
        """SuperLU factors of ``A + B (W + diag(s))`` in the order of :func:`block_ordering` (fixed
        for the solve: no fill-reducing ordering per step), or ``None`` when singular."""
        _jacobian_blocks(self.indptr, self.indices, self.data, self.diag, A, B, s, self.H)
        self.csc.data = self.H.ravel()[self.perm]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                lu = spla.splu(self.csc, permc_spec="NATURAL", diag_pivot_thresh=self.PIVOT_THRESHOLD,
                               options={"SymmetricMode": True})
            except RuntimeError:
                return None
        return _Factors(lu, self.order3)


# ------------------------------------------------------------------------------------------------
# The iteration
# ------------------------------------------------------------------------------------------------


class _Run:
    """State of one solve: the best iterate of the original problem, counts, the clock."""

    def __init__(self, blocks: _Blocks, q: np.ndarray, mu: np.ndarray, opts: Options, t0: float,
                 report: Reporter | None):
        self.W, self.q, self.mu, self.opts = blocks, q, mu, opts
        self.deadline = t0 + (math.inf if opts.time_limit is None else opts.time_limit)
        self.report = report
        self.best_res, self.best_r = math.inf, None
        self.solves = 0
        self.checks = 0
        self.counts = dict.fromkeys(("newton_steps", "raised", "singular", "fixed_point_steps",
                                     "prox_iterations"), 0)

    def check(self, r: np.ndarray, u: np.ndarray) -> float:
        """The original problem's residual at ``(r, u)``; the dual-cone guard folded in at ``<= tol``.
        Keeps the best iterate."""
        res = float(natural_map_residual(self.q, self.mu, r, u))
        if res <= self.opts.tol:
            dual = float(dual_violation(self.q, self.mu, u))
            if not dual <= math.sqrt(self.opts.tol):
                res = max(res, dual)
        if res < self.best_res:
            self.best_res, self.best_r = res, r.copy()
        self.checks += 1
        if self.report is not None:
            self.report(NAME, self.checks, res)
        return res

    def out_of_budget(self) -> str | None:
        if self.solves >= self.opts.max_iter:
            return "budget"
        if time.perf_counter() > self.deadline:
            return "time"
        return None


def _regularized_newton(run: _Run, shift: np.ndarray, qs: np.ndarray, r: np.ndarray, rho: np.ndarray,
                        tol: float, outer: bool) -> tuple[np.ndarray, str]:
    """The regularized semismooth Newton iteration on fc3d(W + diag(shift), qs, mu) from ``r``.

    Stops when the residual (of the original problem when ``outer``, else of this problem) is
    ``<= tol``; returns the last iterate and why it stopped ("converged", "stalled", "budget", "time").
    """
    W, mu, opts = run.W, run.mu, run.opts
    n, nc = W.n, W.nc
    A = np.zeros((nc, 3, 3))
    B = np.zeros((nc, 3, 3))
    At = np.zeros((nc, 3, 3))
    Bt = np.zeros((nc, 3, 3))
    phi = np.empty(n)
    ptrial = np.empty(n)
    rt = np.empty(n)
    ut = np.empty(n)
    u = W.matvec(r) + shift * r + qs
    ac_eval(r, u, mu, rho, phi, A, B, True)
    psi = merit_kernel(phi)
    history = [psi]
    lam = opts.lam
    wrow = np.repeat(W.wnorm, 3)
    stall_ref, stall_k, k = psi, 0, 0
    while True:
        if outer:
            res = run.check(r, u)
        else:
            # this problem's natural map at (r, u), normalized as the original problem's residual
            # (the shifted q - S c would dilute it when S is large)
            res = float(natural_map_residual(run.q, mu, r, u))
        if res <= tol:
            return r, "converged"
        why = run.out_of_budget()
        if why is not None:
            return r, why
        if not math.isfinite(psi):
            return r, "stalled"
        if psi <= 0.5 * stall_ref:
            stall_ref, stall_k = psi, k
        elif k - stall_k >= opts.stall:
            return r, "stalled"
        ref = max(history[-opts.memory:])
        step = None
        while step is None and lam <= opts.lam_max:
            s = (lam * min(1.0, res)) * wrow
            lu = W.factor(A, B, s + shift)
            run.solves += 1
            if lu is None:
                run.counts["singular"] += 1
                lam *= 10.0
                continue
            d = lu.solve(-phi)
            if not np.isfinite(d).all():
                lam *= 10.0
                continue
            slope = -2.0 * psi - _bsb_dot(phi, B, s, d)
            if slope < 0.0:
                wd = W.matvec(d) + shift * d
                t = 1.0
                for _ in range(opts.max_backtracks + 1):
                    pt = _trial_merit(r, u, d, wd, t, mu, rho, rt, ut, ptrial, At, Bt)
                    if pt <= ref + opts.sigma * t * slope:
                        step = t
                        break
                    t *= opts.beta
            if step is None:
                run.counts["raised"] += 1
                lam *= 10.0
                why = run.out_of_budget()
                if why is not None:
                    return r, why
        if step is None:
            # the fixed-point step of the formulation, then give way
            rt[:] = r - phi
            ut[:] = W.matvec(rt) + shift * rt + qs
            ac_eval(rt, ut, mu, rho, ptrial, At, Bt, False)
            if merit_kernel(ptrial) < ref:
                run.counts["fixed_point_steps"] += 1
                lam = opts.lam
            else:
                return r, "stalled"
        else:
            run.counts["newton_steps"] += 1
            if step == 1.0:
                lam = max(lam / 10.0, opts.lam_min)
        r, u = rt.copy(), ut.copy()
        ac_eval(r, u, mu, rho, phi, A, B, True)
        psi = merit_kernel(phi)
        history.append(psi)
        k += 1


def _proximal_phase(run: _Run, r: np.ndarray, rho: np.ndarray) -> tuple[np.ndarray, str]:
    """Proximal-point iterations from the centre ``r``: ``c <- `` an inexact solution of
    fc3d(W + S, q - S c, mu), ``S = alpha diag(||W_jj||)``, ``alpha = prox_sigma res`` (raised
    tenfold after a failed inner solve). Returns the last centre and why it stopped."""
    W, q, opts = run.W, run.q, run.opts
    wrow = np.repeat(W.wnorm, 3)
    c = r
    res = run.check(c, W.matvec(c) + q)
    scale = 1.0
    while True:
        if res <= opts.tol:
            return c, "converged"
        why = run.out_of_budget()
        if why is not None:
            return c, why
        shift = opts.prox_sigma * scale * min(res, 1.0) * wrow
        run.counts["prox_iterations"] += 1
        r_new, how = _regularized_newton(run, shift, q - shift * c, c, rho, max(0.1 * res, 0.1 * opts.tol),
                                         outer=False)
        res_new = run.check(r_new, W.matvec(r_new) + q)
        if how == "converged" or res_new < 0.9 * res:  # (the inner solve made at least one step)
            c, res = r_new, res_new
            scale = max(scale / 10.0, 1.0)
        else:
            scale *= 10.0
            if scale > 1e12:
                return c, "stalled"


def solve(W: Any, q: Any, mu: Any, options: Options | None = None, progress: Reporter | None = None,
          **overrides: Any) -> Result:
    """Solve fc3d(W, q, mu) by the proximal semismooth Newton method of the module docstring.

    ``W`` may be a dense array or a scipy.sparse matrix (kept sparse). Returns a :class:`Result`
    with ``x = r`` and ``extras["u"] = W r + q``; the status is ``solved`` only when the natural-map
    residual of the original problem is ``<= tol`` (and the dual-cone guard passes). ``iterations``
    counts the factorizations; ``extras`` counts the accepted Newton steps, the raises of
    ``lambda``, singular factorizations, fixed-point steps and proximal-point iterations, and lists
    the ``phases`` run.
    """
    t0 = time.perf_counter()
    Wb, q, mu = validate_block_fc3d(W, q, mu)
    opts = build_options(Options, options, overrides)
    report = check_progress(progress)
    n = q.shape[0]
    r = validate_start(opts.r0, n, "r0")
    blocks = _Blocks(Wb)
    rho = 1.0 / blocks.wnorm
    run = _Run(blocks, q, mu, opts, t0, report)
    zero = np.zeros(n)
    r, how = _regularized_newton(run, zero, q, r, rho, opts.tol, outer=True)
    phases = [f"regularized: {how} after {run.solves}"]
    if how == "stalled":
        before = run.solves
        r, how = _proximal_phase(run, run.best_r if run.best_r is not None else r, rho)
        phases.append(f"prox: {how} after {run.solves - before}")
    best = run.best_r if run.best_r is not None else r
    status, message = _status(how, run.solves, run.best_res)
    u = blocks.matvec(best) + q
    res = float(natural_map_residual(q, mu, best, u))
    dual = float(dual_violation(q, mu, u)) if math.isfinite(res) else math.inf
    return checked_fc3d_result(best, u, res, dual, solver=NAME, claimed=status, tol=opts.tol,
                               iterations=run.solves, t_start=t0, message=message, phases=phases,
                               **run.counts)


def _status(how: str, solves: int, res: float) -> tuple[Status, str]:
    """The status and message for how the last phase ended."""
    common = ending_status(how, f"{solves} factorizations", res)
    if common is not None:
        return common
    return Status.NOT_SOLVED, (f"stalled after {solves} factorizations (best residual {res:.3e}): neither "
                               "the regularized Newton steps nor the proximal-point phase decrease it")
