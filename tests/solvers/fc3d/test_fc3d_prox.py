"""The proximal semismooth Newton method on sparse blocks (contactmp.solvers.fc3d.prox) and the
generated piles it is meant for (contactmp.models.piles)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from contactmp.errors import InputError, OptionError
from contactmp.models.contact_model import ContactModel
from contactmp.models.piles import box_wall, sphere_pile
from contactmp.result import Status
from contactmp.solvers.fc3d import prox as fc3d_prox
from contactmp.solvers.fc3d.problem import fc3d_residual
from contactmp.solvers.registry import FC3D_SOLVERS, solve_fc3d


def load(repo_data, name: str):
    d = np.load(repo_data / "fc3d" / f"{name}.npz", allow_pickle=False)
    return d["W"], d["q"], d["mu"]


def test_capsules_solved_and_checked_on_the_original_problem(repo_data) -> None:
    W, q, mu = load(repo_data, "Capsules-i101-404")
    assert np.linalg.matrix_rank(W) < W.shape[0]  # singular W
    res = fc3d_prox.solve(W, q, mu)
    assert res.status is Status.SOLVED, res.message
    assert fc3d_residual(W, q, mu, res.x) <= 1e-8
    np.testing.assert_allclose(res.extras["u"], W @ res.x + q, atol=1e-12)
    # the same answer from sparse input, and through the registry
    res_s = solve_fc3d(sp.csr_matrix(W), q, mu, solver="prox-newton")
    assert res_s.success and fc3d_residual(W, q, mu, res_s.x) <= 1e-8
    assert FC3D_SOLVERS["prox-newton"] == "contactmp.solvers.fc3d.prox"


def test_auto_starts_with_prox_newton_on_large_problems(repo_data) -> None:
    W, q, mu = load(repo_data, "Capsules-i125-1213")
    res = solve_fc3d(W, q, mu, tol=1e-8, time_limit=60)
    assert res.success and fc3d_residual(W, q, mu, res.x) <= 1e-8
    assert res.extras["attempts"][0]["solver"] == "prox-newton"


def test_small_singular_pile_is_solved() -> None:
    pile = sphere_pile(3, 0.9, seed=2)  # 27 spheres, 3*9*2 + 5*9 = 99 contacts
    n = 3 * pile.nc
    W = pile.W.toarray()
    assert np.linalg.matrix_rank(W) <= 6 * pile.n_bodies < n
    res = fc3d_prox.solve(pile.W, pile.q, pile.mu, time_limit=30)
    assert res.status is Status.SOLVED, res.message
    assert fc3d_residual(W, pile.q, pile.mu, res.x) <= 1e-8
    wall = box_wall(4, 3, 1.0, seed=1)
    res = fc3d_prox.solve(wall.W, wall.q, wall.mu, time_limit=30)
    assert res.success and fc3d_residual(wall.W.toarray(), wall.q, wall.mu, res.x) <= 1e-8


def test_pile_matrix_is_the_contact_models_delassus_matrix() -> None:
    """W of a pile at rest equals ContactModel's A = W_obj^T M^{-1} W_obj (grouped n, t, o order)
    after reordering, and q equals h times its b."""
    pile = sphere_pile(2, 0.5, speed=0.0)
    model = ContactModel(pile.bodies, pile.contacts)
    nc = pile.nc
    order = np.ravel(np.column_stack([np.arange(nc), nc + np.arange(nc), 2 * nc + np.arange(nc)]))
    np.testing.assert_allclose(pile.W.toarray(), model.A[np.ix_(order, order)], atol=1e-10)
    np.testing.assert_allclose(pile.q, pile.h * model.b[order], atol=1e-12)


def test_bad_input_names_the_field() -> None:
    W, q, mu = np.diag([2.0, 1.0, 1.0]), np.array([-1.0, 0.1, 0.0]), np.array([0.5])
    with pytest.raises(InputError, match="^W"):
        fc3d_prox.solve(np.eye(4), np.zeros(4), [0.5])
    with pytest.raises(InputError, match="^W"):
        fc3d_prox.solve(sp.csr_matrix(np.full((3, 3), np.nan)), q, mu)
    with pytest.raises(InputError, match="^q"):
        fc3d_prox.solve(sp.csr_matrix(W), np.array([1.0, np.inf, 0.0]), mu)
    with pytest.raises(InputError, match="^mu"):
        fc3d_prox.solve(sp.csr_matrix(W), q, [-0.1])
    with pytest.raises(InputError, match="^r0"):
        fc3d_prox.solve(W, q, mu, r0=np.zeros(4))
    with pytest.raises(InputError, match="^n"):
        sphere_pile(0)
    with pytest.raises(InputError, match="^bond"):
        box_wall(3, 3, bond="herringbone")
    with pytest.raises(OptionError, match="lam"):
        fc3d_prox.solve(W, q, mu, lam=-1.0)
    with pytest.raises(OptionError, match="unknown option"):
        fc3d_prox.solve(W, q, mu, lamda=1.0)


def test_non_convergence_returns_a_status() -> None:
    # no solution: W = 0 and q_n < 0 (the normal velocity can never become >= 0)
    W, q, mu = np.zeros((3, 3)), np.array([-1.0, 0.0, 0.0]), np.array([0.5])
    res = fc3d_prox.solve(W, q, mu, max_iter=20)
    assert res.status is not Status.SOLVED and not res.success
    # an iteration budget too small for a hard pile
    pile = sphere_pile(3, 0.9, seed=2)
    res = fc3d_prox.solve(pile.W, pile.q, pile.mu, max_iter=1)
    assert res.status is Status.MAX_ITER and res.residual > 1e-8


def test_time_limit_is_honoured() -> None:
    pile = sphere_pile(4, 0.9, packing="pyramid", seed=0)
    res = fc3d_prox.solve(pile.W, pile.q, pile.mu, time_limit=0.3, max_iter=100000)
    assert res.status in (Status.TIME_LIMIT, Status.SOLVED)
    assert res.time_s < 2.0


def test_dense_input_is_checked_and_split_into_blocks_in_one_pass(repo_data) -> None:
    W, q, mu = load(repo_data, "Capsules-i101-404")
    Wd, Wb, q2, mu2 = fc3d_prox.validate_dense_fc3d(W, q, mu)
    assert Wb.blocksize == (3, 3) and Wb.has_canonical_format
    np.testing.assert_array_equal(Wb.toarray(), W)  # the nonzero blocks, exactly
    ref = fc3d_prox.block_matrix(sp.csr_matrix(W))  # the sparse route: the same blocks
    np.testing.assert_array_equal(Wb.indptr, ref.indptr)
    np.testing.assert_array_equal(Wb.indices, ref.indices)
    np.testing.assert_array_equal(Wb.data, ref.data)
    # a BSR matrix in the working form is taken as it is, and gives the dense answer
    dense = fc3d_prox.solve(W, q, mu)
    blocks = fc3d_prox.solve(Wb, q, mu)
    assert blocks.success and np.array_equal(blocks.x, dense.x)
    # a zero diagonal block is stored (explicitly) either way
    Wz = np.zeros((6, 6))
    Wz[3:, 3:] = np.eye(3)
    _, Wzb, _, _ = fc3d_prox.validate_dense_fc3d(Wz, np.zeros(6), 0.5)
    assert Wzb.indices.tolist() == [0, 1]
    for field, args in (("W", (np.where(np.eye(6) > 0, np.nan, 0.0), np.zeros(6), 0.5)),
                        ("W", (np.eye(6)[:, :5], np.zeros(6), 0.5)),
                        ("q", (np.eye(6), [0, 0, np.inf, 0, 0, 0], 0.5)),
                        ("q", (np.eye(6), np.zeros(5), 0.5)),
                        ("mu", (np.eye(6), np.zeros(6), [0.5, -1.0])),
                        ("mu", (np.eye(6), np.zeros(6), [0.5]))):
        with pytest.raises(InputError, match=f"^{field}"):
            fc3d_prox.validate_dense_fc3d(*args)
    with pytest.raises(InputError, match="^W"):
        fc3d_prox.solve(sp.bsr_matrix(np.where(np.eye(6) > 0, np.inf, 0.0), blocksize=(3, 3)), np.zeros(6), 0.5)


def test_block_norms_and_ordering() -> None:
    rng = np.random.default_rng(0)
    blocks = rng.standard_normal((200, 3, 3))
    blocks[:50] += blocks[:50].transpose(0, 2, 1)
    blocks[50] = 0.0
    blocks[51] = np.diag([1e-9, 2.0, 2.0])
    blocks[52] = np.outer([1.0, 2.0, 3.0], [1.0, 0.0, 1.0])
    ref = np.array([np.linalg.norm(b, 2) for b in blocks])
    np.testing.assert_allclose(fc3d_prox._block_norms(blocks), ref, rtol=1e-13, atol=0)
    pile = sphere_pile(3, 0.9, seed=2)
    Wb = fc3d_prox.block_matrix(pile.W)
    order = fc3d_prox.block_ordering(Wb.indptr.astype(np.int64), Wb.indices.astype(np.int64))
    assert sorted(order.tolist()) == list(range(pile.nc))


def test_auto_on_large_dense_input_checks_once_and_names_the_field(repo_data) -> None:
    W, q, mu = load(repo_data, "Capsules-i101-404")
    res = solve_fc3d(W, q, mu)
    assert res.success and res.extras["attempts"][0]["solver"] == "prox-newton"
    assert fc3d_residual(W, q, mu, res.x) <= 1e-8
    np.testing.assert_allclose(res.extras["u"], W @ res.x + q, atol=1e-12)
    assert np.array_equal(res.x, fc3d_prox.solve(W, q, mu).x)  # the same answer as the solver alone
    bad = W.copy()
    bad[5, 7] = np.nan
    with pytest.raises(InputError, match="^W"):
        solve_fc3d(bad, q, mu)
    with pytest.raises(InputError, match="^q"):
        solve_fc3d(W, np.where(np.arange(q.shape[0]) == 4, np.inf, q), mu)
    with pytest.raises(InputError, match="^mu"):
        solve_fc3d(W, q, -np.asarray(mu))
    # a list of lists takes the general validation and the same chain
    res_list = solve_fc3d(W.tolist(), q, mu)
    assert res_list.success and res_list.extras["attempts"][0]["solver"] == "prox-newton"
