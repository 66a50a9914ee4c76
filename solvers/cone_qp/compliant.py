"""Solvers of the compliant step's symmetric positive-definite (mixed) LCP (Drumwright, arXiv 1905.10828).

On the loaded rows (``h K + B > 0``) one compliant step is::

    A lambda + c = w,   A = D + h W = D + h U U^T  (SPD),   D = (h K + B)^-1,   W = G M^-1 G^T = U U^T,
    bilateral rows: w = 0;   unilateral rows: 0 <= lambda _|_ w >= 0,

(unloaded rows carry no force). The problem object
(:class:`~contactmp.formulations.compliant_qp.CompliantQP`) holds these data and the independent
check; this module only computes ``lambda``:

* ``"cholesky"``: ``A lambda = -c`` (bilateral steps);
* ``"lu-Y"``: ``Y lambda = r``, ``Y = I + diag(h (h K + B)) W``, the paper's (53)-(63) (bilateral steps);
* ``"active-set"``: block principal pivoting on the SPD LCP, each basis solved by Cholesky;
* ``"lowrank"``: the same pivoting, each basis ``A_SS lambda_S = -c_S`` by the Woodbury identity
  ``A_SS^-1 = E - E U_S (I/h + U_S^T E U_S)^-1 U_S^T E`` (``E = D_S^-1``; one n x n Cholesky,
  O(|S| n^2)), never forming an m x m matrix;
* a QP solver of :data:`~contactmp.solvers.cone_qp.qp.QP_SOLVERS` on ``min 1/2 lambda^T A lambda + c^T lambda``
  (unilateral rows ``lambda >= 0``), optionally polished on its active set.
"""
from __future__ import annotations

import time
from typing import Any, Protocol

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from contactmp.errors import InputError, OptionError, did_you_mean
from contactmp.result import Result, Status
from contactmp.solvers.cone_qp.qp import QP_SOLVERS, available_qp_solvers, solve_qp

__all__ = ["CompliantLCP", "solve_compliant_lcp", "DIRECT_SOLVERS", "LOWRANK_RATIO"]

DIRECT_SOLVERS = ("cholesky", "lu-Y", "active-set", "lowrank")
#: ``solver="auto"`` uses the Woodbury (``"lowrank"``) path when the loaded rows exceed this many times n
LOWRANK_RATIO = 4


class CompliantLCP(Protocol):
    """The data a compliant-step solver reads (all at ``q0, v0``; ``loaded_rows`` index the rows with
    ``h K + B > 0``, and ``D``, ``Ul``, ``c``, ``diagA``, ``A`` are restricted to them)."""

    m: int  #: constraint rows
    n: int  #: generalized velocities
    h: float  #: step [s]
    unilateral: np.ndarray  #: (m,) True on unilateral rows
    loaded_rows: np.ndarray  #: indices of the rows with h K + B > 0
    D: np.ndarray  #: (h K + B)^-1 on the loaded rows
    Ul: np.ndarray  #: U = G L^-T (M = L L^T) on the loaded rows
    c: np.ndarray  #: c = D K phi0 + G (v0 + h M^-1 f) on the loaded rows
    diagA: np.ndarray  #: diag(A) on the loaded rows
    A: np.ndarray  #: A = D + h W on the loaded rows (dense; formed on first use)
    Y: np.ndarray  #: Y = I + h diag(h K + B) W (m x m)
    rhs: np.ndarray  #: r of Y lambda = r

    def A_times(self, x: np.ndarray) -> np.ndarray:
        """``A x`` on the loaded rows, without forming ``A``."""

    def gap_rate(self, lam: Any) -> np.ndarray:
        """``w = A lambda + c`` on the loaded rows."""

    def velocity(self, lam: Any) -> np.ndarray:
        """``v1 = v0 + h M^-1 (f + G^T lambda)``."""

    def residual(self, lam: Any) -> tuple[float, dict[str, float]]:
        """The independent check of ``lambda``: ``(relative residual, details)``."""


def solve_compliant_lcp(p: CompliantLCP, solver: str = "auto", *, active: Any = None, tol: float = 1e-10,
                        polish: bool = True, max_pivots: int = 20) -> Result:
    """Compute the compliant step's ``lambda`` (and ``v1``); never raises on failure (see ``status``).

    ``solver``: ``"auto"`` (``"lowrank"`` when the loaded rows outnumber ``LOWRANK_RATIO * n``,
    else ``"cholesky"`` for bilateral-only steps and ``"active-set"`` otherwise; a failed
    unilateral attempt is retried with ``"qpoases"``), a name of :data:`DIRECT_SOLVERS` (see the
    module docstring; ``active`` is the pivoting's first guess -- a boolean mask or row indices of
    unilateral rows guessed to carry force; default the rows with ``c_i < 0`` -- and ``max_pivots``
    bounds its solves), or one of :data:`~contactmp.solvers.cone_qp.qp.QP_SOLVERS` (with ``polish`` an
    answer that fails the check is re-solved densely on its active set and kept if that verifies).

    Returns a :class:`~contactmp.result.Result`: ``x = lambda`` [N]; ``SOLVED`` only when
    ``p.residual(lambda) <= tol``; ``solver`` names what produced ``lambda`` (``"<qp solver>+active-set"``
    when the dense solve on its active set polished the answer); ``residuals`` the separate
    checks of ``p.residual``; ``extras``: ``v1``, ``active`` (unilateral rows with ``lambda > 0``),
    ``backend_status``, ``attempts``, ``raw_lam``, ``raw_residual``.
    """
    t0 = time.perf_counter()
    if not isinstance(solver, str):
        raise OptionError(f"solver must be a string, got {type(solver).__name__}")
    names = ("auto",) + DIRECT_SOLVERS + tuple(QP_SOLVERS)
    if solver not in names:
        raise OptionError(f"unknown solver {solver!r} (known: {', '.join(names)}){did_you_mean(solver, names)}")
    if not (isinstance(tol, (int, float)) and tol > 0):
        raise OptionError(f"tol must be a positive number, got {tol!r}")
    has_uni = bool(p.unilateral[p.loaded_rows].any())
    if solver in ("cholesky", "lu-Y") and has_uni:
        raise OptionError(f"solver {solver!r} solves bilateral steps only; this step has unilateral rows")
    if solver == "auto":
        if p.loaded_rows.size > LOWRANK_RATIO * p.n:
            solver = "lowrank"
        else:
            solver = "active-set" if has_uni else "cholesky"
        res = _dispatch(p, solver, active, tol, polish, max_pivots)
        if not res.success and (has_uni or solver == "lowrank"):
            first = res
            res = _dispatch(p, "qpoases" if has_uni else "cholesky", None, tol, polish, max_pivots)
            res = res.replace(extras={**res.extras, "attempts": [first.solver + ": " + first.message,
                                                                  res.solver + ": " + res.message]})
    else:
        res = _dispatch(p, solver, active, tol, polish, max_pivots)
    return res.replace(time_s=time.perf_counter() - t0)


def _finish(p: CompliantLCP, lam: np.ndarray, solver: str, tol: float, iterations: int, message: str,
            claimed: Status = Status.SOLVED, **extras: Any) -> Result:
    """The Result of ``lam``, judged by ``p.residual`` (a claimed SOLVED stands only if it verifies)."""
    r, kkt = p.residual(lam)
    ok = r <= tol
    status = Status.SOLVED if ok else (claimed if claimed is not Status.SOLVED else Status.NOT_SOLVED)
    if claimed is Status.SOLVED and not ok:
        message = (message + "; " if message else "") + f"claimed solved but residual {r:.3g} > tol {tol:.3g}"
    finite = bool(np.isfinite(lam).all())
    active = (lam > 0) & p.unilateral if finite else np.zeros(p.m, bool)
    v1 = p.velocity(lam) if finite else np.full(p.n, np.nan)
    return Result(status, lam, solver, r, tol, iterations, message=message, residuals=kkt,
                  extras={"v1": v1, "active": active, **extras})


def _dispatch(p: CompliantLCP, solver: str, active: Any, tol: float, polish: bool, max_pivots: int) -> Result:
    if solver == "cholesky":
        lam = np.zeros(p.m)
        if p.loaded_rows.size:
            lam[p.loaded_rows] = _chol_solve(p, np.ones(p.loaded_rows.size, bool))
        return _finish(p, lam, "cholesky", tol, 1, "A lambda = -c by Cholesky")
    if solver == "lu-Y":
        try:
            lam = np.linalg.solve(p.Y, p.rhs)
        except np.linalg.LinAlgError as exc:  # cannot happen for K, B >= 0 (Y is nonsingular)
            return _finish(p, np.full(p.m, np.nan), "lu-Y", tol, 1, str(exc), Status.NUMERICAL_ERROR)
        return _finish(p, lam, "lu-Y", tol, 1, "Y lambda = r by LU")
    if solver in ("active-set", "lowrank"):
        return _active_set(p, active, tol, max_pivots, lowrank=solver == "lowrank")
    return _qp(p, solver, tol, polish, max_pivots)


def _chol_solve(p: CompliantLCP, on: np.ndarray) -> np.ndarray:
    """Loaded-row forces with the rows ``on`` (mask over loaded rows) solved, the others 0."""
    out = np.zeros(p.loaded_rows.size)
    if on.any():
        L = np.linalg.cholesky(p.A[np.ix_(on, on)])
        out[on] = -np.linalg.solve(L.T, np.linalg.solve(L, p.c[on]))
    return out


def _woodbury_solve(p: CompliantLCP, on: np.ndarray, refine: int = 2) -> np.ndarray:
    """As :func:`_chol_solve`, by the Woodbury identity on ``A_SS = D_S + h U_S U_S^T``::

        A_SS^-1 b = E b - E U_S (I/h + U_S^T E U_S)^-1 U_S^T E b,    E = D_S^-1 = diag(h K + B)_S,

    one n x n Cholesky factorization (O(|S| n^2)), then ``refine`` steps of iterative refinement
    with the O(|S| n) product ``A_SS x`` (the two terms cancel when ``h K + B`` is large).
    """
    out = np.zeros(p.loaded_rows.size)
    if not on.any():
        return out
    U, E = p.Ul[on], 1.0 / p.D[on]
    fac = cho_factor(np.eye(p.n) / p.h + U.T @ (E[:, None] * U), lower=True)
    b = -p.c[on]

    def apply_inv(r: np.ndarray) -> np.ndarray:
        Er = E * r
        return Er - E * (U @ cho_solve(fac, U.T @ Er))

    x = apply_inv(b)
    for _ in range(refine):
        x = x + apply_inv(b - (p.D[on] * x + p.h * (U @ (U.T @ x))))
    out[on] = x
    return out


def _first_basis(p: CompliantLCP, active: Any, uni: np.ndarray) -> np.ndarray:
    """The pivoting's first basis over the loaded rows: bilateral rows, and ``active`` (default ``c < 0``)."""
    if active is None:
        return (~uni) | (p.c < 0)
    arr = np.asarray(active)
    if arr.dtype == bool:
        if arr.shape != (p.m,):
            raise InputError("active", f"boolean mask must have length {p.m}")
        mask = arr.copy()
    else:
        mask = np.zeros(p.m, bool)
        mask[arr.astype(int).ravel()] = True
    return (~uni) | mask[p.loaded_rows]


def _active_set(p: CompliantLCP, active: Any, tol: float, max_pivots: int, lowrank: bool = False) -> Result:
    """Block principal pivoting on the SPD LCP (bilateral rows always in the basis); each basis
    solve dense (:func:`_chol_solve`) or by Woodbury (:func:`_woodbury_solve`, ``lowrank``)."""
    name = "lowrank" if lowrank else "active-set"
    uni = p.unilateral[p.loaded_rows]
    on = _first_basis(p, active, uni)
    seen: set[bytes] = set()
    lam = np.zeros(p.m)
    solve_on = _woodbury_solve if lowrank else _chol_solve
    for it in range(1, max_pivots + 1):
        seen.add(on.tobytes())
        try:
            li = solve_on(p, on)
        except np.linalg.LinAlgError as exc:
            return _finish(p, np.full(p.m, np.nan), name, tol, it, str(exc), Status.NUMERICAL_ERROR)
        lam = np.zeros(p.m)
        lam[p.loaded_rows] = li
        w = p.A_times(li) + p.c
        wtol = 1e-13 * max(1.0, float(np.max(np.abs(li), initial=0.0))) * p.diagA
        bad_in = on & uni & (li < 0)
        bad_out = ~on & (w < -wtol)
        if not (bad_in.any() or bad_out.any()):
            return _finish(p, lam, name, tol, it, f"active set verified after {it} {name} solve(s)")
        on = (on & ~bad_in) | bad_out
        if on.tobytes() in seen:
            return _finish(p, lam, name, tol, it, "active-set pivoting cycled", Status.NOT_SOLVED)
    return _finish(p, lam, name, tol, max_pivots, f"no verified active set in {max_pivots} solves", Status.MAX_ITER)


def _qp(p: CompliantLCP, plugin: str, tol: float, polish: bool, max_pivots: int) -> Result:
    """``min 1/2 mu^T A' mu + c'^T mu`` by :func:`~contactmp.solvers.cone_qp.qp.solve_qp`, with the
    symmetric diagonal scaling ``mu = sqrt(A_ii) lambda``."""
    lam = np.zeros(p.m)
    if p.loaded_rows.size == 0:
        if plugin not in available_qp_solvers():
            solve_qp(plugin, np.zeros((0, 0)), np.zeros(0))  # raises the OptionError
        return _finish(p, lam, plugin, tol, 0, "no loaded rows")
    d = np.sqrt(np.diag(p.A))
    As = p.A / d[:, None] / d[None, :]
    uni = p.unilateral[p.loaded_rows]
    ans = solve_qp(plugin, 0.5 * (As + As.T), p.c / d, np.where(uni, 0.0, -np.inf), np.inf)
    if not np.isfinite(ans.x).all() and ans.status.startswith(f"{plugin} failed"):
        return _finish(p, np.full(p.m, np.nan), plugin, tol, 0, ans.status, Status.NUMERICAL_ERROR)
    lam[p.loaded_rows] = ans.x / d
    backend, iters = ans.status, ans.iterations
    raw = _finish(p, lam, plugin, tol, iters, f"{plugin}: {backend}",
                  Status.SOLVED if ans.success else Status.NOT_SOLVED, backend_status=backend)
    raw = raw.replace(extras={**raw.extras, "raw_residual": raw.residual})
    if not polish or raw.success or not np.isfinite(lam).all():
        return raw
    s = np.zeros(p.m)
    s[p.loaded_rows] = p.gap_rate(lam) / p.diagA
    guess = lam > np.abs(s)  # lambda_i > s_i: the row carries force
    pol = _active_set(p, guess & p.unilateral, tol, max_pivots)
    if pol.success and pol.residual < raw.residual:
        return pol.replace(solver=f"{plugin}+active-set", iterations=pol.iterations + iters,
                           message=f"{plugin}: {backend}; polished on its active set ({pol.message})",
                           extras={**pol.extras, "backend_status": backend, "raw_lam": lam,
                                   "raw_residual": raw.residual})
    return raw
