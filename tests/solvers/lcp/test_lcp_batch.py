"""Batched Lemke solves (issue 18, item 1): one compiled call per batch, one verified Result per
problem, equal to the unbatched answers."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.io import load_lcp
from contactmp.solvers.lcp import lemke
from contactmp.solvers.registry import solve_lcp, solve_lcp_batch
from contactmp.result import BatchResult, Status

#: the Siconos test LCPs shipped in the repository
LCPS = Path(__file__).resolve().parents[2] / "data" / "lcp"


def _random_batch(B: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(B, n, n))
    return A @ A.transpose(0, 2, 1) + 0.1 * np.eye(n), rng.normal(size=(B, n))


@pytest.mark.parametrize("parallel", [False, True])
def test_batch_equals_the_unbatched_solves(parallel):
    Ms, qs = _random_batch(300, 7)
    batched = lemke.solve_batch(Ms, qs, parallel=parallel)
    assert len(batched) == 300
    for b, r in enumerate(batched):
        alone = solve_lcp(Ms[b], qs[b], "lemke")
        assert r.status is alone.status is Status.SOLVED
        np.testing.assert_array_equal(r.x, alone.x)  # the same compiled start: bit for bit
        z, w = r.x, Ms[b] @ r.x + qs[b]
        assert np.max(np.abs(np.minimum(z, w))) <= 1e-8  # verified independently here too


@pytest.mark.parametrize("B, n", [(2500, 3), (300, 17)])
def test_large_and_threaded_batches_equal_the_unbatched_solves(B, n):
    """A batch of thousands of tiny problems (one workspace for all) and problems of
    n >= PARALLEL_MIN_N on numba's threads (one workspace per thread): the same answers."""
    Ms, qs = _random_batch(B, n, seed=n)
    batched = lemke.solve_batch(Ms, qs, parallel=True)
    assert len(batched) == B
    for b in range(0, B, 7):
        alone = solve_lcp(Ms[b], qs[b], "lemke")
        assert batched[b].status is alone.status is Status.SOLVED
        np.testing.assert_array_equal(batched[b].x, alone.x)
        np.testing.assert_array_equal(batched[b].extras["w"], alone.extras["w"])


def test_list_of_unequal_shared_problems():
    """The Siconos test LCPs (n = 2 ... 60) as one list: grouped by size, each answer equal to the
    unbatched one to 1e-12 and in input order."""
    problems = [load_lcp(f) for f in sorted(LCPS.glob("*.npz"))]
    pairs = [(p.M, p.q) if hasattr(p, "M") else p for p in problems]
    res = solve_lcp_batch(pairs)
    assert len(res) == len(pairs)
    for (M, q), r in zip(pairs, res):
        alone = solve_lcp(M, q, "lemke")
        assert r.status is alone.status
        assert np.max(np.abs(r.x - alone.x), initial=0.0) <= 1e-12


def test_batch_bad_input_names_the_problem():
    Ms, qs = _random_batch(5, 3)
    qs[3, 1] = np.nan
    with pytest.raises(InputError, match=r"qs\[3\]"):
        lemke.solve_batch(Ms, qs)
    with pytest.raises(InputError, match="Ms"):
        lemke.solve_batch(Ms[:, :2], qs)


def test_a_first_start_that_fails_falls_back_to_restarts():
    """A problem whose first start ends on a ray is solved again by the unbatched path (restarts);
    the answer and status equal the unbatched solve's."""
    M = np.array([[-1.0, 1.0], [1.0, -1.0]])  # not copositive-plus: no solution for this q
    q = np.array([-1.0, -1.0])
    r = lemke.solve_batch(M[None], q[None])[0]
    alone = lemke.solve(M, q)
    assert r.status is alone.status and r.status is not Status.SOLVED


def test_batch_arrays_agree_with_the_results_built_on_access():
    """A stacked batch returns a BatchResult: its arrays hold every problem's answer and verdict
    (including a problem solved again alone after its first start failed), and ``batch[b]`` is
    built once, on first access, with the same values."""
    Ms, qs = _random_batch(50, 4, seed=3)
    Ms[7], qs[7] = np.array([[-1.0, 1.0, 0, 0], [1.0, -1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]), -np.ones(4)
    batch = solve_lcp_batch(Ms, qs)
    assert isinstance(batch, BatchResult) and len(batch) == 50 and batch.solver == "lemke"
    assert batch[3] is batch[3] and batch[-1] is batch[49]
    assert [r.x.tolist() for r in batch[10:13]] == [batch[b].x.tolist() for b in (10, 11, 12)]
    for b, r in enumerate(batch):
        alone = solve_lcp(Ms[b], qs[b], "lemke")
        assert r.status is alone.status and r.message == alone.message and r.iterations == alone.iterations
        np.testing.assert_array_equal(batch.x[b], r.x)
        assert batch.residual[b] == r.residual and batch.iterations[b] == r.iterations
        assert batch.success[b] == r.success == (b != 7)
    assert batch.statuses[7] is batch[7].status is not Status.SOLVED
    assert int(batch.success.sum()) == 49
    with pytest.raises(IndexError):
        batch[50]
