"""Batched fc3d solves (issue 18, item 1): the default solver's quick NSGS pass on a whole batch in
one compiled call, one verified Result per problem, equal to the unbatched ``solve_fc3d``."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.io import load_fc3d
from contactmp.result import BatchResult, Status
from contactmp.solvers.fc3d.problem import fc3d_residual
from contactmp.solvers.registry import solve_fc3d, solve_fc3d_batch

#: the Siconos fc3d test problems shipped in the repository
FC3D = Path(__file__).resolve().parents[2] / "data" / "fc3d"


def _same_answer(r, alone) -> None:
    """Everything but the clock equals the unbatched answer (the same kernels on the same data)."""
    assert r.status is alone.status
    np.testing.assert_array_equal(r.x, alone.x)
    assert r.residual == alone.residual and r.message == alone.message and r.solver == alone.solver
    assert [(a["solver"], a["status"]) for a in r.extras["attempts"]] == \
        [(a["solver"], a["status"]) for a in alone.extras["attempts"]]


def _rover_batch(B: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``B`` random one-to-four-contact problems: ``W = J J^T + 0.05 I`` (Delassus-like, SPD) and
    normal approach velocities ``q_n < 0`` mixed with separating ones."""
    rng = np.random.default_rng(seed)
    nc = 4
    J = rng.normal(size=(B, 3 * nc, 6))
    Ws = J @ J.transpose(0, 2, 1) + 0.05 * np.eye(3 * nc)
    qs = rng.normal(size=(B, 3 * nc))
    mus = rng.uniform(0.1, 1.0, size=(B, nc))
    return Ws, qs, mus


@pytest.mark.parametrize("parallel", [False, True])
def test_stacked_batch_equals_the_unbatched_solves(parallel):
    Ws, qs, mus = _rover_batch(120)
    res = solve_fc3d_batch(Ws, qs, mus, parallel=parallel)
    assert len(res) == 120
    solved = 0
    for b, r in enumerate(res):
        _same_answer(r, solve_fc3d(Ws[b], qs[b], mus[b]))
        if r.success:  # verified here too, on the original data
            solved += 1
            assert fc3d_residual(Ws[b], qs[b], mus[b], r.x) <= 1e-8
    assert solved == 120  # SPD W: the default chain solves every one (NSGS or, after it, Newton)
    assert {r.solver for r in res} >= {"nsgs"}


def test_list_of_unequal_shared_problems():
    """The Siconos test problems with at most nine contacts as one list (grouped by size): in input
    order, each answer equal to the unbatched one, every one solved to 1e-8."""
    triples = []
    for f in sorted(FC3D.glob("*.npz")):
        W, q, mu = load_fc3d(f)
        if mu.shape[0] <= 9:
            triples.append((W, q, mu))
    assert len(triples) >= 12
    res = solve_fc3d_batch(triples)
    for (W, q, mu), r in zip(triples, res):
        _same_answer(r, solve_fc3d(W, q, mu))
        assert r.success and fc3d_residual(W, q, mu, r.x) <= 1e-8


def test_a_scalar_mu_and_a_problem_the_quick_pass_leaves_to_newton():
    """``mus`` as one number; a problem whose quick pass is refused (a block with ``W_nn = 0``) goes
    through the general chain alone and reports what ``solve_fc3d`` reports."""
    W = np.diag([2.0, 1.0, 1.0])
    bad = np.diag([0.0, 1.0, 1.0])
    Ws = np.stack([W, bad])
    qs = np.array([[-1.0, 0.5, 0.2], [-1.0, 0.5, 0.2]])
    res = solve_fc3d_batch(Ws, qs, 0.3)
    for b in range(2):
        _same_answer(res[b], solve_fc3d(Ws[b], qs[b], np.array([0.3])))
    # closed form of the first (W = diag(2, 1, 1): no coupling): r_n = -q_n / 2 = 0.5; sticking would
    # need r_T = -q_T, |r_T| = 0.539 > mu r_n = 0.15, so it slides: r_T = -0.15 q_T / |q_T|
    qT = qs[0, 1:]
    expected = np.concatenate([[0.5], -0.15 * qT / np.linalg.norm(qT)])
    assert res[0].success
    np.testing.assert_allclose(res[0].x, expected, rtol=0, atol=1e-14)


def test_batch_bad_input_names_the_problem():
    Ws, qs, mus = _rover_batch(6)
    qs[4, 2] = np.inf
    with pytest.raises(InputError, match=r"qs\[4\]"):
        solve_fc3d_batch(Ws, qs, mus)
    Ws, qs, mus = _rover_batch(6)
    mus[2, 1] = -0.1
    with pytest.raises(InputError, match=r"mus\[2\]"):
        solve_fc3d_batch(Ws, qs, mus)
    with pytest.raises(InputError, match="mus"):
        solve_fc3d_batch(Ws, qs, mus[:, :2])
    with pytest.raises(InputError, match="Ws"):
        solve_fc3d_batch(Ws[:, :5, :5], qs[:, :5], mus)


def test_batch_arrays_agree_with_the_results_built_on_access():
    """A stacked fc3d batch is a BatchResult: ``x`` holds every ``r``, ``success`` every verdict,
    also of the problems the quick pass leaves to the rest of the chain (problem 4: a contact that
    no force moves, ``W_jj = 0``, approaching with ``q_n = -1``: no solution, reported) and of a
    batch too large for the quick pass."""
    Ws, qs, mus = _rover_batch(30, seed=5)
    Ws[4, :3, :] = Ws[4, :, :3] = 0.0
    qs[4, 0] = -1.0
    batch = solve_fc3d_batch(Ws, qs, mus)
    assert isinstance(batch, BatchResult) and batch.solver == "auto"
    for b, r in enumerate(batch):
        _same_answer(r, solve_fc3d(Ws[b], qs[b], mus[b]))
        np.testing.assert_array_equal(batch.x[b], r.x)
        assert batch.residual[b] == r.residual and batch.iterations[b] == r.iterations
        assert batch.success[b] == r.success
    assert not batch.success[4] and batch.statuses[4] is batch[4].status
    normal = np.where(np.arange(210) % 3 == 0, 1.0, 0.0)  # 70 contacts approaching at 1, no slip
    big = solve_fc3d_batch(np.repeat(np.eye(210)[None], 2, 0), -normal[None].repeat(2, 0), 0.5)
    assert isinstance(big, BatchResult) and big.success.all()
    np.testing.assert_allclose(big.x, normal[None].repeat(2, 0), atol=1e-12)  # W = I: r = -q
