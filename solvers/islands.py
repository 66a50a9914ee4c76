"""Independent sub-problems ("contact islands") of an LCP or an fc3d problem, found from the matrix.

Two unknowns interact only through a nonzero entry of ``M`` (LCP) or of a block ``W_jk`` (fc3d,
contacts ``j``, ``k``): the connected components of that coupling graph are independent problems.
Separate objects on one floor, many environments stepped as one system
(:func:`contactmp.models.systems.ensemble`) or the feet of robots far apart give block-diagonal
problems whose islands are solved separately -- equal-size islands as one batch
(:func:`contactmp.solvers.registry.solve_lcp_batch`) -- and assembled; the assembled answer is
judged on the whole problem, so ``solved`` still means that the whole problem is solved.
:func:`contactmp.models.islands.contact_islands` finds the same islands from a contact model's
bodies (Trinkle's PyramidLCP); this module needs only the numbers.
"""
from __future__ import annotations

import time
from typing import Any

import numba
import numpy as np

from contactmp.result import Result, Status

__all__ = ["coupling_components", "solve_lcp_islands", "solve_fc3d_islands"]


@numba.njit(cache=True)
def _root(parent: np.ndarray, i: int) -> int:  # pragma: no cover - compiled
    """The representative of ``i``'s set (with path halving)."""
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@numba.njit(cache=True)
def _component_labels(A: np.ndarray, block: int) -> tuple[np.ndarray, int]:  # pragma: no cover - compiled
    """Label of each ``block``-sized group of rows/columns of ``A`` in the graph with an edge
    ``i ~ j`` when the block ``A[i, j]`` or ``A[j, i]`` has a nonzero entry: one row-major pass over
    ``A`` joining the groups of every nonzero (union-find), then labels numbered in order of each
    component's first group. Returns ``(labels, number of components)``."""
    n = A.shape[0]
    nb = n // block
    parent = np.arange(nb)
    for i in range(n):
        gi = i // block
        for j in range(n):
            if A[i, j] != 0.0:
                a, b = _root(parent, gi), _root(parent, j // block)
                if a != b:
                    if a < b:
                        parent[b] = a
                    else:
                        parent[a] = b
    label = np.full(nb, -1, dtype=np.int64)
    count = 0
    for g in range(nb):
        r = _root(parent, g)
        if label[r] < 0:
            label[r] = count
            count += 1
        label[g] = label[r]
    return label, count


def coupling_components(A: np.ndarray, block: int = 1) -> list[np.ndarray]:
    """The rows (= columns) of each independent sub-problem of the square ``A``: connected components
    of the graph joining groups ``i``, ``j`` of ``block`` consecutive rows when ``A[i, j]`` or
    ``A[j, i]`` (a ``block x block`` block) has a nonzero entry, in order of their first row. One
    component: ``A`` does not decompose."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    label, count = _component_labels(A, block)
    rows = np.repeat(label, block)
    if count == 1:
        return [np.arange(A.shape[0])]
    order = np.argsort(rows, kind="stable")
    cuts = np.searchsorted(rows[order], np.arange(1, count))
    return np.split(order, cuts)


def _judged_whole(parts: list[Result], blocks: list[np.ndarray], m: int) -> tuple[np.ndarray, Status, int, list[dict]]:
    """The islands' answers assembled: ``x``, the claim (``solved`` when every island verified,
    else the first failed island's status), summed iterations and one record per island."""
    x = np.zeros(m)
    claimed, iterations, records = Status.SOLVED, 0, []
    for I, res in zip(blocks, parts):
        x[I] = res.x
        iterations += int(res.iterations)
        records.append({"size": int(I.size), "status": res.status.value, "solver": res.solver,
                        "iterations": int(res.iterations), "residual": float(res.residual)})
        if not res.success and claimed is Status.SOLVED:
            claimed = res.status
    return x, claimed, iterations, records


def _message(n: int) -> str:
    return f"{n} island{'s' if n != 1 else ''} solved separately"


def solve_lcp_islands(M: np.ndarray, q: np.ndarray, blocks: list[np.ndarray], solver: Any = None, *,
                      tol: float = 1e-8, **options: Any) -> Result:
    """LCP(q, M) with ``M`` block diagonal over ``blocks`` (index arrays covering ``0..n-1``): each
    island ``(M[I, I], q[I])`` solved by :func:`~contactmp.solvers.registry.solve_lcp` with ``solver``
    and ``options``, and assembled. When the solver chain starts with Lemke (``None``, ``"lemke"`` or a
    tuple whose first name is ``"lemke"``) and no option but ``tol`` is given, the islands of each
    size go to Lemke as one batch (:func:`~contactmp.solvers.registry.solve_lcp_batch`) and only an
    island that batch does not solve runs the whole chain alone. The Result judges the assembled
    ``z`` on the whole LCP (``||min(z, M z + q)||_inf <= tol``); ``extras["islands"]`` has one
    record per island (size, status, solver, iterations, residual)."""
    from contactmp.solvers.lcp import verified_result
    from contactmp.solvers.registry import solve_lcp, solve_lcp_batch

    t0 = time.perf_counter()
    first = solver[0] if isinstance(solver, tuple) and solver else solver
    parts: list[Result | None] = [None] * len(blocks)
    if first in (None, "auto", "lemke") and not options:
        batched = solve_lcp_batch([(M[np.ix_(I, I)], q[I]) for I in blocks], tol=tol)
        parts = [r if r.success or solver == "lemke" else None for r in batched]
    for k, I in enumerate(blocks):
        if parts[k] is None:
            parts[k] = solve_lcp(M[np.ix_(I, I)], q[I], solver, tol=tol, **options)
    x, claimed, iterations, records = _judged_whole(parts, blocks, q.shape[0])  # type: ignore[arg-type]
    return verified_result(M, q, x, solver="+".join(sorted({r["solver"] for r in records})), claimed=claimed,
                           tol=tol, iterations=iterations, t_start=t0, message=_message(len(blocks)),
                           islands=records)


def solve_fc3d_islands(W: np.ndarray, q: np.ndarray, mu: np.ndarray, blocks: list[np.ndarray], solver: Any = None,
                       *, tol: float = 1e-8, **options: Any) -> Result:
    """fc3d(W, q, mu) with ``W`` block diagonal over ``blocks`` (row index arrays, whole contacts):
    each island solved by :func:`~contactmp.solvers.registry.solve_fc3d` with ``solver`` and
    ``options`` -- with the default solver and no option but ``tol``, the islands of each size as one
    batch (:func:`~contactmp.solvers.registry.solve_fc3d_batch`) -- and assembled; the Result
    judges the assembled ``r`` on the whole problem (:func:`~contactmp.solvers.fc3d.problem.verified_fc3d_result`),
    ``extras["islands"]`` one record per island."""
    from contactmp.solvers.fc3d import verified_fc3d_result
    from contactmp.solvers.registry import solve_fc3d, solve_fc3d_batch

    t0 = time.perf_counter()
    parts: list[Result | None] = [None] * len(blocks)
    if solver in (None, "auto") and not options:
        parts = list(solve_fc3d_batch([(W[np.ix_(I, I)], q[I], mu[I[::3] // 3]) for I in blocks], tol=tol))
    for k, I in enumerate(blocks):
        if parts[k] is None:
            parts[k] = solve_fc3d(W[np.ix_(I, I)], q[I], mu[I[::3] // 3], solver=solver, tol=tol, **options)
    x, claimed, iterations, records = _judged_whole(parts, blocks, q.shape[0])  # type: ignore[arg-type]
    return verified_fc3d_result(W, q, mu, x, solver="+".join(sorted({r["solver"] for r in records})),
                                claimed=claimed, tol=tol, iterations=iterations, t_start=t0,
                                message=_message(len(blocks)), islands=records)
