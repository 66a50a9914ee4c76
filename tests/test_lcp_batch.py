"""Batched Lemke solves (issue 18, item 1): one compiled call per batch, one verified Result per
problem, equal to the unbatched answers."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.io import load_lcp
from contactmp.solvers import lemke
from contactmp.solvers.registry import solve_lcp, solve_lcp_batch
from contactmp.result import FILL_CHUNK, Result, Status

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "lcp"


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


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared LCP data not present")
def test_list_of_unequal_shared_problems():
    """The Siconos test LCPs (n = 2 ... 60) as one list: grouped by size, each answer equal to the
    unbatched one to 1e-12 and in input order."""
    problems = [load_lcp(f) for f in sorted(SHARED.glob("*.npz"))]
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


def test_a_stacked_batch_is_a_list_of_results_built_on_first_read():
    """A stacked batch returns a plain list with one Result per problem (including a problem solved
    again alone after its first start failed); each entry is built in place when first read, then
    is a plain Result (its class too) equal to the unbatched answer, and reading it again reads the
    same object."""
    Ms, qs = _random_batch(200, 4, seed=3)
    Ms[7], qs[7] = np.array([[-1.0, 1.0, 0, 0], [1.0, -1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]), -np.ones(4)
    batch = solve_lcp_batch(Ms, qs)
    assert type(batch) is list and len(batch) == 200 and all(isinstance(r, Result) for r in batch)
    assert type(batch[7]) is Result  # solved alone: built already
    assert type(batch[100]) is not Result  # not read yet
    r100 = batch[100]
    assert r100.solver == "lemke" and type(r100) is Result and batch[100] is r100
    assert type(batch[100 + FILL_CHUNK - 1]) is Result is not type(batch[100 + FILL_CHUNK])  # built with it
    for b, r in enumerate(batch):
        alone = solve_lcp(Ms[b], qs[b], "lemke")
        assert r.status is alone.status and r.message == alone.message and r.iterations == alone.iterations
        np.testing.assert_array_equal(r.x, alone.x)
        assert r.residual == alone.residual and r.success == (b != 7)
    assert all(type(r) is Result for r in batch)


def test_a_pending_result_behaves_as_the_result():
    """Whatever first touches a pending entry -- repr, copy, replace, to_dict, a property -- sees
    the built Result."""
    Ms, qs = _random_batch(5, 3, seed=4)
    batch = solve_lcp_batch(Ms, qs)
    alone = [solve_lcp(M, q, "lemke") for M, q in zip(Ms, qs)]
    assert repr(batch[0]).startswith("Result(status=<Status.SOLVED")
    batch = solve_lcp_batch(Ms, qs)
    c = copy.deepcopy(batch[1])
    assert type(c) is Result and np.array_equal(c.x, alone[1].x)
    batch = solve_lcp_batch(Ms, qs)
    assert batch[2].replace(message="m").message == "m" and batch[2].message == alone[2].message
    batch = solve_lcp_batch(Ms, qs)
    assert batch[3].to_dict()["x"] == alone[3].to_dict()["x"] and batch[4].success
