"""Independent contact islands found from the matrix, solved separately (batched) and judged whole
(issue 18, item 1: the time-stepping code uses the batches for independent islands)."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.models.systems import ball_3d, cube_3d, ensemble
from contactmp.solvers.fc3d.problem import fc3d_residual
from contactmp.solvers.islands import coupling_components, solve_fc3d_islands, solve_lcp_islands
from contactmp.solvers.lcp.problem import lcp_residual
from contactmp.solvers.registry import solve_fc3d, solve_lcp
from contactmp.transcriptions.time_stepping import TimeStepping


def _block_diagonal(blocks: list[np.ndarray]) -> np.ndarray:
    n = sum(b.shape[0] for b in blocks)
    A, k = np.zeros((n, n)), 0
    for b in blocks:
        A[k:k + b.shape[0], k:k + b.shape[0]] = b
        k += b.shape[0]
    return A


def test_components_of_a_permuted_block_diagonal_matrix():
    rng = np.random.default_rng(1)
    sizes = [5, 3, 5, 1, 4]
    A = _block_diagonal([rng.normal(size=(s, s)) + 3 * np.eye(s) for s in sizes])
    owner = np.repeat(np.arange(len(sizes)), sizes)
    p = rng.permutation(A.shape[0])
    comps = coupling_components(A[np.ix_(p, p)])
    assert sorted(c.size for c in comps) == sorted(sizes)
    for c in comps:  # every component is exactly one original block
        assert np.unique(owner[p[c]]).size == 1
    # a single coupling entry (upper triangle only) joins two blocks
    B = A.copy()
    B[0, A.shape[0] - 1] = 1.0
    assert len(coupling_components(B)) == len(sizes) - 1
    # 3x3 blocks (fc3d contacts): contacts 0 and 1 coupled by one entry, 2 and 3 alone
    W = np.kron(np.eye(4), np.ones((3, 3)))
    W[0, 4] = 0.5
    assert [c.tolist() for c in coupling_components(W, 3)] == [[0, 1, 2, 3, 4, 5], [6, 7, 8], [9, 10, 11]]
    assert [c.tolist() for c in coupling_components(np.ones((3, 3)))] == [[0, 1, 2]]


def test_lcp_islands_equal_the_whole_solve():
    """Positive definite blocks (a P-matrix: one solution): the islands solved as a batch and
    assembled equal Lemke on the whole problem to round-off, and the whole LCP is verified."""
    rng = np.random.default_rng(2)
    parts = []
    for s in [4, 4, 4, 6, 6, 2]:
        G = rng.normal(size=(s, s))
        parts.append(G @ G.T + 0.5 * np.eye(s))
    M = _block_diagonal(parts)
    q = rng.normal(size=M.shape[0])
    blocks = coupling_components(M)
    assert len(blocks) == 6
    res = solve_lcp_islands(M, q, blocks, ("lemke", "newton"), tol=1e-10)
    whole = solve_lcp(M, q, "lemke", tol=1e-10)
    assert res.success and whole.success
    assert lcp_residual(M, q, res.x) <= 1e-10
    np.testing.assert_allclose(res.x, whole.x, rtol=0, atol=1e-12)
    assert [r["size"] for r in res.extras["islands"]] == [4, 4, 4, 6, 6, 2]
    assert res.message == "6 islands solved separately"


def test_fc3d_islands_equal_each_island_alone():
    rng = np.random.default_rng(3)
    parts, qs, mus = [], [], []
    for nc in [2, 2, 1, 2]:
        J = rng.normal(size=(3 * nc, 6))
        parts.append(J @ J.T + 0.05 * np.eye(3 * nc))
        qs.append(rng.normal(size=3 * nc) - np.tile([0.5, 0.0, 0.0], nc))
        mus.append(rng.uniform(0.2, 0.9, size=nc))
    W, q, mu = _block_diagonal(parts), np.concatenate(qs), np.concatenate(mus)
    blocks = coupling_components(W, 3)
    assert [b.size for b in blocks] == [6, 6, 3, 6]
    res = solve_fc3d_islands(W, q, mu, blocks, tol=1e-10)
    assert res.success and fc3d_residual(W, q, mu, res.x) <= 1e-10
    for I, W_I, q_I, mu_I in zip(blocks, parts, qs, mus):
        np.testing.assert_array_equal(res.x[I], solve_fc3d(W_I, q_I, mu_I, tol=1e-10).x)


@pytest.mark.parametrize("formulation, solver", [("pyramid", None), ("cone", None), ("cone", "auto")])
def test_an_ensemble_steps_like_its_members_alone(formulation, solver, monkeypatch):
    """Three cubes and a ball on one floor, never touching each other: stepped as one system (their
    islands solved separately, also below the size from which the front door splits by default)
    each follows exactly the trajectory it has alone."""
    import contactmp.solvers.front as front

    monkeypatch.setattr(front, "ISLANDS_MIN_LCP", 2)
    members = [cube_3d(mu=0.3), cube_3d(mu=0.6, size=0.3), cube_3d(mu=0.45), ball_3d(mu=0.4)]
    S = ensemble(members)
    v0s = [np.array([1.0, 0.2, 0, 0, 0, 0.5]), np.array([0.5, 0, 0, 0, 0, 0]), np.array([2.0, -1.0, 0, 0, 0, 0]),
           np.array([1.0, 0, 0, 0, 0, 0])]
    h, n = 0.01, 25
    tr = TimeStepping(S, h, formulation, solver=solver).simulate(S.q_nominal, np.concatenate(v0s), n_steps=n)
    assert tr.n_failed == 0
    if formulation == "pyramid" or solver == "auto":  # batched islands (Lemke; the fc3d quick pass), one per member
        assert {r.message for r in tr.results} == {"4 islands solved separately"}
    k = 0
    for sys_k, v0 in zip(members, v0s):
        alone = TimeStepping(sys_k, h, formulation, solver=solver).simulate(sys_k.q_nominal, v0, n_steps=n)
        np.testing.assert_allclose(tr.q[:, k:k + sys_k.n_q], alone.q, rtol=0, atol=1e-9)
        k += sys_k.n_q


def test_ensemble_bad_input_names_the_member():
    with pytest.raises(InputError, match="systems"):
        ensemble([])
    with pytest.raises(InputError, match=r"systems\[1\]"):
        ensemble([ball_3d(), "cube"])
