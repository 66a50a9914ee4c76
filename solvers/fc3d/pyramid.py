"""fc3d by refining the friction pyramid (Trinkle, Pang, Sudarsky and Lo 1995, section 2.4 and
Proposition 1), at the velocity level.

Each Coulomb cone is replaced by the pyramid over a ``k``-gon circumscribing Coulomb's disk: with
the generators ``D_i`` of :func:`contactmp.friction_polygon.facet_generators` (angles
``(2i+1) pi / k``, length ``1 / cos(pi / k)``) the friction force is ``r_jT = sum_i D_i beta_ji``,
and the contact conditions are the LCP

    0 <= r_jn     _|_  u_jn = (W r + q)_jn                 >= 0   (normal, no De Saxce term)
    0 <= beta_ji  _|_  lambda_j + D_i . u_jT               >= 0   (maximal dissipation)
    0 <= lambda_j _|_  mu_j r_jn - sum_i beta_ji           >= 0   (friction polygon)

in ``z = (r_n, beta, lambda)`` of size ``(k + 2) nc``, solved by Lemke's method
(``solve_lcp(M, q, solver="lemke")``, then the semismooth Newton method if Lemke fails). Since the
polygon contains the disk, ``||r_jT||`` may exceed ``mu_j r_jn`` (by up to the factor
``1 / cos(pi / k)`` at a vertex). Proposition 1 (for the paper's 4-sided pyramid; the same argument
holds for the k-gon: a force strictly inside the polygon has ``lambda = 0`` and hence ``u_T = 0``,
and a force on the polygon that is also in the disk is at an edge midpoint, where the active
generators force ``u_T`` to be antiparallel to it): a pyramid solution whose forces all lie in the
quadratic cones solves the cone problem. So ``k`` is doubled from ``k_start`` up to ``k_max``
until the forces lie in the cones, and every answer is judged by the fc3d natural-map residual.

At a sliding contact whose direction is not an edge normal of the polygon the force sits at a
vertex or on an edge off its midpoint, so the cone violation only shrinks like ``1/cos(pi/k) - 1
~ pi^2 / (2 k^2)``: sliding problems are in general solved only in the limit ``k -> infinity``,
and the result then reports ``max_iter`` with the residual reached (the history of every ``k`` is
in ``extras["history"]``).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from contactmp.errors import OptionError
from contactmp.friction_polygon import facet_generators
from contactmp.progress import Reporter, check_progress
from contactmp.result import Result, Status
from contactmp.solvers.fc3d.problem import fc3d_residual, validate_fc3d, verified_fc3d_result
from contactmp.solvers.options import SolverOptions, check_int, check_real

NAME = "pyramid"


@dataclass
class Options(SolverOptions):
    """Options of the pyramid refinement.

    Attributes
    ----------
    tol : float
        Tolerance of the fc3d natural-map residual that verifies an answer.
    k_start : int
        Facets of the first pyramid (>= 3).
    k_max : int
        Largest number of facets tried (``k`` doubles from ``k_start``; ``k_max`` itself is
        tried last when the doubling skips it).
    max_size : int
        Largest LCP dimension ``(k + 2) nc`` attempted (dense Lemke costs ``O(size^2)`` memory and
        time per pivot); larger ``k`` are skipped and reported.
    time_limit : float or None
        Wall-clock limit in seconds (``None`` or ``inf``: none), checked before each new ``k``:
        a ``k`` is not started when the time of the previous one scaled by ``(size ratio)^3``
        would exceed it; each LCP gets what is left as its own ``time_limit``.
    cone_tol : float
        A force counts as inside its cone when ``||r_T|| - mu r_n <= cone_tol * max(1, ||r||_inf)``.
    """

    k_start: int = 4
    k_max: int = 64
    max_size: int = 4000
    time_limit: float | None = None
    cone_tol: float = 1e-12

    def check(self) -> None:
        """Reject ill-typed values."""
        super().check()
        for name, low in (("k_start", 3), ("k_max", 3), ("max_size", 1)):
            check_int(name, getattr(self, name), low)
        if self.k_max < self.k_start:
            raise OptionError(f"k_max ({self.k_max}) must be >= k_start ({self.k_start})")
        check_real("cone_tol", self.cone_tol, 0.0, lo_open=False)


def pyramid_lcp(W: np.ndarray, q: np.ndarray, mu: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix]:
    """The velocity-level pyramid LCP ``(M, q_lcp)`` of fc3d(W, q, mu) with ``k`` facets, and the
    sparse map ``L`` with ``r = L z`` (``z = (r_n, beta (k per contact, contact-major), lambda)``)."""
    nc = mu.shape[0]
    G = facet_generators(k)  # (k, 2): rows D_i
    n_idx = 3 * np.arange(nc)
    # r = P z: r_n from z[:nc], r_T = blockdiag(G^T) beta
    rows, cols, vals = [n_idx], [np.arange(nc)], [np.ones(nc)]
    for a in (1, 2):
        rows.append(np.repeat(n_idx + a, k))
        cols.append(nc + np.arange(nc * k))
        vals.append(np.tile(G[:, a - 1], nc))
    size = nc * (k + 2)
    L = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(3 * nc, size))
    Lrb = L[:, : nc * (k + 1)].toarray()  # the (r_n, beta) columns
    # Lambda rows select u_n (normal rows) and D^T u_T (beta rows) from u = W r + q
    S = np.zeros((nc * (k + 1), 3 * nc))
    S[np.arange(nc), n_idx] = 1.0
    for j in range(nc):
        S[nc + j * k: nc + (j + 1) * k, 3 * j + 1: 3 * j + 3] = G
    M = np.zeros((size, size))
    M[: nc * (k + 1), : nc * (k + 1)] = S @ W @ Lrb
    E = np.kron(np.eye(nc), np.ones((k, 1)))  # (nc k, nc)
    M[nc: nc * (k + 1), nc * (k + 1):] = E
    M[nc * (k + 1):, :nc] = np.diag(mu)
    M[nc * (k + 1):, nc: nc * (k + 1)] = -E.T
    ql = np.zeros(size)
    ql[: nc * (k + 1)] = S @ q
    return M, ql, L


def cone_violation(r: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Per contact ``||r_T|| - mu r_n`` (positive outside the cone)."""
    R = r.reshape(-1, 3)
    return np.hypot(R[:, 1], R[:, 2]) - mu * R[:, 0]


def _k_sequence(k_start: int, k_max: int) -> list[int]:
    ks = []
    k = k_start
    while k <= k_max:
        ks.append(k)
        k *= 2
    if ks[-1] != k_max:
        ks.append(k_max)
    return ks


def solve(W: Any, q: Any, mu: Any, options: Options | None = None, progress: Reporter | None = None,
          **overrides: Any) -> Result:
    """Solve fc3d(W, q, mu) by pyramids with ``k = k_start, 2 k_start, ..., k_max`` facets.

    Returns a :class:`Result` whose ``x`` is the answer with the smallest fc3d residual over all
    ``k`` tried; ``solved`` only when that residual is <= tol (verified); else ``max_iter`` (every
    ``k`` solved as an LCP but none verified), ``time_limit``, or ``not_solved`` (no LCP solved).
    Extras: ``k`` (facets of the returned answer), ``max_cone_violation`` (largest
    ``||r_T|| - mu r_n`` of it, absolute), ``history`` (per ``k``: LCP size, LCP solver and status,
    pivots, largest cone violation, fc3d residual, time), ``skipped`` (``k`` whose LCP exceeded
    ``max_size``). A ``progress`` reporter (see :mod:`contactmp.progress`) is passed to the LCP
    solves and called with each ``k``'s fc3d residual. When the time limit is reached the answer is
    the best ``k``'s (or ``r = 0`` when no LCP was solved in time), status ``time_limit``.
    """
    from contactmp.solvers.registry import solve_lcp

    t0 = time.perf_counter()
    W, q, mu = validate_fc3d(W, q, mu)
    opts = Options.build(options, **overrides)
    report = check_progress(progress)
    limit = math.inf if opts.time_limit is None else float(opts.time_limit)
    nc = mu.shape[0]
    best_r: np.ndarray | None = None
    best_res = np.inf
    best_k = 0
    best_viol = np.inf
    history: list[dict[str, Any]] = []
    skipped: list[int] = []
    lcp_solved_any = False
    timed_out = False
    last_size, last_time = 0, 0.0
    for k in _k_sequence(int(opts.k_start), int(opts.k_max)):
        size = nc * (k + 2)
        if size > opts.max_size:
            skipped.append(k)
            continue
        lcp_opts: dict[str, Any] = {} if report is None else {"progress": report}
        if limit < math.inf:
            elapsed = time.perf_counter() - t0
            # dense Lemke / Newton cost grows like size^3: do not start a k that cannot finish
            predicted = last_time * (size / last_size) ** 3 if last_size else 0.0
            if elapsed + predicted >= limit:
                timed_out = True
                break
            lcp_opts["time_limit"] = max(limit - elapsed, 1e-3)
        tk = time.perf_counter()
        M, ql, L = pyramid_lcp(W, q, mu, k)
        lcp_tol = 1e-10 * max(1.0, float(np.max(np.abs(ql))))
        lcp = solve_lcp(M, ql, solver="lemke", tol=lcp_tol, **lcp_opts)
        used = "lemke"
        if not lcp.success and lcp.status is not Status.TIME_LIMIT:
            if "time_limit" in lcp_opts:
                lcp_opts["time_limit"] = max(limit - (time.perf_counter() - t0), 1e-3)
            alt = solve_lcp(M, ql, solver="newton", tol=lcp_tol, **lcp_opts)
            if alt.success or alt.residual < lcp.residual:
                lcp, used = alt, "newton"
            elif alt.status is Status.TIME_LIMIT:
                timed_out = True
        entry: dict[str, Any] = {
            "k": k, "size": size, "lcp_solver": used, "lcp_status": lcp.status.value,
            "lcp_residual": float(lcp.residual), "lcp_iterations": int(lcp.iterations),
        }
        z = np.asarray(lcp.x, dtype=np.float64)
        if np.isfinite(z).all():
            lcp_solved_any |= lcp.success
            r = L @ z
            viol = float(max(np.max(cone_violation(r, mu)), 0.0))
            res = fc3d_residual(W, q, mu, r)
            entry.update(max_cone_violation=viol, residual=res)
            if res < best_res or best_r is None:
                best_r, best_res, best_k, best_viol = r, res, k, viol
        else:
            entry.update(max_cone_violation=float("nan"), residual=float("inf"))
        entry["time_s"] = time.perf_counter() - tk
        last_size, last_time = size, entry["time_s"]
        history.append(entry)
        if report is not None:
            report(NAME, k, entry["residual"])
        if best_res <= opts.tol:
            break
        if lcp.status is Status.TIME_LIMIT or timed_out:
            timed_out = True
            break
        scale = max(1.0, float(np.max(np.abs(best_r)))) if best_r is not None else 1.0
        if lcp.success and entry["max_cone_violation"] <= opts.cone_tol * scale:
            break  # Proposition 1: inside every cone, more facets cannot help
    if timed_out and best_r is None:  # no LCP answered in time: the zero force, checked like any other
        best_r = np.zeros(3 * nc)
        best_res = fc3d_residual(W, q, mu, best_r)
    if best_res <= opts.tol:
        claimed = Status.SOLVED
        message = f"pyramid with k = {best_k} facets verified (Proposition 1)"
    elif timed_out:
        claimed = Status.TIME_LIMIT
        message = f"time limit {limit:g} s reached; best residual {best_res:.3e} at k = {best_k}"
    elif lcp_solved_any:
        claimed = Status.MAX_ITER
        message = (
            f"no pyramid up to k = {history[-1]['k'] if history else 0} facets lies in the cones "
            f"(best residual {best_res:.3e} at k = {best_k}, cone violation {best_viol:.3e})"
        )
    else:
        claimed = Status.NOT_SOLVED
        message = "no pyramid LCP was solved" if history else (
            f"every LCP exceeds max_size = {opts.max_size} (k_start = {opts.k_start}, nc = {nc})")
    if skipped:
        message += f"; skipped k = {skipped} (LCP size > max_size = {opts.max_size})"
    return verified_fc3d_result(
        W, q, mu, best_r, solver=NAME, claimed=claimed, tol=opts.tol, iterations=len(history), t_start=t0,
        message=message, k=best_k, max_cone_violation=best_viol if np.isfinite(best_viol) else float("nan"),
        history=history, skipped=skipped,
    )
