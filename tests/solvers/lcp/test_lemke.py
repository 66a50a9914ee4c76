"""Lemke's method on LCP(q, M): shared Siconos problems, P-matrix LCPs against enumeration,
degenerate problems, Murty's exponential example, restarts and bad input."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.result import Status
from contactmp.solvers.lcp import lemke
from contactmp.solvers.lcp.problem import lcp_residual
from contactmp.solvers.registry import lcp_solver

#: the Siconos test LCPs shipped in the repository (tests/data/lcp)
DATA = Path(__file__).resolve().parents[2] / "data" / "lcp"
PROBLEMS = sorted(p.stem for p in DATA.glob("*.npz"))
assert len(PROBLEMS) == 17, f"expected the 17 Siconos LCPs in {DATA}"
#: problems on which Lemke's method ends on a secondary ray (every start)
#: lcp_CPS_3: M = [[0, A], [B, 0]] with A, B > 0: after z0 enters, the complement's column is
#: -M[:, r] <= 0 whatever the covering vector, so every start ends on a ray (Siconos' Lemke fails
#: too) although the LCP is solvable. lcp_Pang_isolated_sol_perturbed has no solution.
RAY_EXPECTED = {"lcp_CPS_3", "lcp_Pang_isolated_sol_perturbed"}


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    data = np.load(DATA / f"{name}.npz", allow_pickle=False)
    return data["M"], data["q"]


def enumerate_solutions(M: np.ndarray, q: np.ndarray, tol: float = 1e-9) -> list[np.ndarray]:
    """All solutions from complementary bases: z_S = -M_SS^{-1} q_S, z_N = 0, checked for signs."""
    n = q.shape[0]
    sols = []
    for k in range(n + 1):
        for S in itertools.combinations(range(n), k):
            z = np.zeros(n)
            if S:
                idx = list(S)
                try:
                    z[idx] = np.linalg.solve(M[np.ix_(idx, idx)], -q[idx])
                except np.linalg.LinAlgError:
                    continue
            if z.min() >= -tol and (M @ z + q).min() >= -tol:
                sols.append(z)
    return sols


def random_p_matrix(rng: np.random.Generator, n: int) -> np.ndarray:
    """A (nonsymmetric) positive definite matrix: A A^T / n + 0.1 I + skew; PD implies P."""
    A = rng.standard_normal((n, n))
    S = rng.standard_normal((n, n))
    return A @ A.T / n + 0.1 * np.eye(n) + (S - S.T) / np.sqrt(n)


def test_registered():
    assert lcp_solver("lemke") is lemke.solve


@pytest.mark.parametrize("name", PROBLEMS)
def test_shared_problems(name):
    M, q = load(name)
    res = lemke.solve(M, q)
    if name in RAY_EXPECTED:
        assert res.status is Status.RAY_TERMINATION, (name, res.status, res.message)
        assert res.extras["starts"] == 4
        assert res.extras["start_statuses"] == ["ray_termination"] * 4
        assert "secondary ray" in res.message and "copositive-plus" in res.message
    else:
        assert res.status is Status.SOLVED, (name, res.status, res.message)
        assert res.residual < 1e-10
        assert lcp_residual(M, q, res.x) < 1e-10
        assert np.allclose(res.extras["w"], M @ res.x + q)
    assert res.iterations == sum(res.extras["pivots_per_start"])


def test_lcp_cps_1():
    M, q = load("lcp_CPS_1")
    res = lemke.solve(M, q)
    assert res.success and res.residual < 1e-10
    # M = ones, q = -1: every solution has z >= 0, z_1 + z_2 = 1
    assert res.x.min() >= 0 and abs(res.x.sum() - 1.0) < 1e-12


def test_infeasible_pang_perturbed():
    # w_2 = -z_1 - 1 < 0 for every z >= 0: no solution, so Lemke must end on a ray.
    M, q = load("lcp_Pang_isolated_sol_perturbed")
    res = lemke.solve(M, q)
    assert res.status is Status.RAY_TERMINATION
    assert not enumerate_solutions(M, q)


def test_trivial_q_nonnegative():
    M = np.array([[1.0, -3.0], [2.0, 0.5]])
    res = lemke.solve(M, np.array([0.0, 2.0]))
    assert res.success and res.iterations == 0 and np.array_equal(res.x, [0.0, 0.0])
    assert res.extras["starts"] == 1


@pytest.mark.parametrize("n", list(range(1, 9)))
def test_p_matrix_matches_enumeration(n):
    rng = np.random.default_rng(100 + n)
    for _ in range(6):
        M = random_p_matrix(rng, n)
        q = rng.standard_normal(n)
        res = lemke.solve(M, q)
        assert res.success and res.residual < 1e-10
        sols = enumerate_solutions(M, q)
        assert len(sols) == 1  # P-matrix: unique solution
        np.testing.assert_allclose(res.x, sols[0], atol=1e-9)
        assert res.extras["starts"] == 1  # P-matrix: the first start never fails


@pytest.mark.parametrize("n", [10, 16, 25, 40, 60])
def test_p_matrix_larger(n):
    rng = np.random.default_rng(200 + n)
    for _ in range(3):
        M = random_p_matrix(rng, n)
        q = rng.standard_normal(n)
        res = lemke.solve(M, q)
        assert res.success and res.residual < 1e-10
        assert res.extras["starts"] == 1
        # complementarity exactly: z_i w_i = 0 up to round-off
        w = M @ res.x + q
        assert np.max(np.abs(res.x * w)) < 1e-10


def test_degenerate_cycles_without_lexicographic_rule():
    # Degenerate (all q_i tie on the first ratio test); with ties broken by the pivot size
    # the method cycles, with the lexicographic rule it solves.
    M = np.array([[0.0, 2.0, 2.0], [2.0, -1.0, 2.0], [-1.0, -2.0, 1.0]])
    q = -np.ones(3)
    plain = lemke.solve(M, q, lexicographic=False, restarts=0, max_iter=200)
    assert plain.status is Status.MAX_ITER and plain.iterations == 200
    lex = lemke.solve(M, q, restarts=0)
    assert lex.success and lex.residual == 0.0
    np.testing.assert_allclose(lex.x, [0.0, 0.0, 1.0])


def test_degenerate_repeated_rows_and_zero_q():
    # Repeated rows of M and q (degenerate bases) and zero entries of q; M positive definite.
    M = np.array([[2.0, 1.0, 0.0, 1.0], [2.0, 1.0, 0.0, 1.0], [0.0, 1.0, 3.0, 0.0],
                  [-1.0, 0.0, 1.0, 2.0]])
    M[1, 1] += 1.0  # keep the repeated structure in all but one entry, M stays P
    q = np.array([-1.0, -1.0, 0.0, -2.0])
    res = lemke.solve(M, q)
    assert res.success and res.residual < 1e-12
    sols = enumerate_solutions(M, q)
    assert any(np.allclose(res.x, s, atol=1e-9) for s in sols)


def test_lexicographic_never_cycles_on_random_degenerate_problems():
    # Small integer data with zeros in q and repeated rows: many degenerate pivots. The
    # lexicographic rule must end every start with a solution or a ray, never at the limit.
    rng = np.random.default_rng(7)
    solved = 0
    for _ in range(1500):
        n = int(rng.integers(3, 6))
        M = rng.integers(-2, 3, size=(n, n)).astype(float)
        q = rng.integers(-1, 2, size=n).astype(float)
        if rng.random() < 0.5:
            M[1], q[1] = M[0], q[0]
        res = lemke.solve(M, q, restarts=0, max_iter=500)
        assert res.status in (Status.SOLVED, Status.RAY_TERMINATION), (M, q, res.message)
        if res.success:
            solved += 1
            assert res.residual < 1e-12
    assert solved > 500


def murty(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Murty's example: upper triangular, 1 on the diagonal, 2 above; q_i = -(2^(n+1) - 2^i)."""
    M = np.triu(2.0 * np.ones((n, n)), 1) + np.eye(n)
    q = -np.array([2.0 ** (n + 1) - 2.0**i for i in range(1, n + 1)])
    return M, q


def test_murty_examples():
    M, q = load("lcp_exp_murty2")
    M6, q6 = murty(6)
    np.testing.assert_array_equal(M, M6)
    np.testing.assert_array_equal(q, q6)
    res = lemke.solve(M, q)
    assert res.success and res.residual == 0.0
    # 2^n - 1 complementary pivots plus the one on which z0 enters
    assert res.iterations == 2**6
    np.testing.assert_allclose(res.x, [0, 0, 0, 0, 0, 64])
    M1, q1 = load("lcp_exp_murty")
    res1 = lemke.solve(M1, q1)
    assert res1.success and res1.residual == 0.0 and res1.iterations == 2
    M8, q8 = murty(8)
    res8 = lemke.solve(M8, q8)
    assert res8.success and res8.iterations == 2**8


def test_restart_succeeds_after_ray():
    # z0 enters and w_1 leaves for every d in [0.5, 1.5]^2 (3 d_2 > d_1); z_1's updated column is
    # (-2/d_1, 2 (1 - d_2/d_1)): no positive entry (a ray) for d = ones, a pivot for d_2 < d_1,
    # which then finds the unique solution z = (1/2, 2) (w = 0).
    M = np.array([[-2.0, 2.0], [-2.0, 1.0]])
    q = np.array([-3.0, -1.0])
    first = lemke.solve(M, q, restarts=0)
    assert first.status is Status.RAY_TERMINATION
    assert first.extras["starts"] == 1 and first.extras["start_statuses"] == ["ray_termination"]
    res = lemke.solve(M, q)
    assert res.success and res.residual < 1e-12
    np.testing.assert_allclose(res.x, [0.5, 2.0])
    assert res.extras["starts"] >= 2
    assert res.extras["start_statuses"][0] == "ray_termination"
    assert res.extras["start_statuses"][-1] == "solved"
    assert res.iterations == sum(res.extras["pivots_per_start"]) > first.iterations


def test_restarts_count_and_seed_reproducible():
    M, q = load("lcp_CPS_3")
    for restarts in (0, 1, 3, 5):
        res = lemke.solve(M, q, restarts=restarts)
        assert res.extras["starts"] == restarts + 1
        assert len(res.extras["pivots_per_start"]) == restarts + 1
    M = np.array([[-2.0, 2.0], [-2.0, 1.0]])
    q = np.array([-3.0, -1.0])
    runs = {}
    for seed in range(6):
        a = lemke.solve(M, q, seed=seed)
        b = lemke.solve(M, q, options=lemke.Options(seed=seed))
        assert a.extras["pivots_per_start"] == b.extras["pivots_per_start"]
        np.testing.assert_array_equal(a.x, b.x)
        runs[seed] = a.extras["start_statuses"]
    # the seed changes the covering vectors: the number of starts differs between seeds
    assert len({len(s) for s in runs.values()}) > 1


def test_bad_input():
    M = np.eye(2)
    with pytest.raises(InputError) as err:
        lemke.solve(np.array([[1.0, np.nan], [0.0, 1.0]]), [-1.0, 1.0])
    assert err.value.field == "M"
    with pytest.raises(InputError) as err:
        lemke.solve(M, [-1.0, 1.0, 2.0])
    assert err.value.field == "q"
    with pytest.raises(OptionError):
        lemke.solve(M, [-1.0, 1.0], restart=2)
    with pytest.raises(OptionError):
        lemke.solve(M, [-1.0, 1.0], max_iter=0)


def test_bad_input_on_the_compiled_path():
    """float64 C-contiguous arrays skip the Python checks; the compiled start must refuse the
    same things with the same named fields."""
    q = np.array([-1.0, 1.0])
    with pytest.raises(InputError) as err:
        lemke.solve(np.array([[1.0, np.inf], [0.0, 1.0]]), q)
    assert err.value.field == "M"
    with pytest.raises(InputError) as err:
        lemke.solve(np.eye(2), np.array([-1.0, np.nan]))
    assert err.value.field == "q"
    with pytest.raises(InputError) as err:
        lemke.solve(np.eye(2), np.array([-1.0, 1.0, 2.0]))
    assert err.value.field == "q"
    with pytest.raises(InputError) as err:
        lemke.solve(np.ones((2, 3)), q)
    assert err.value.field == "M"
    with pytest.raises(InputError) as err:
        lemke.solve(np.ones((0, 0)), np.ones(0))
    assert err.value.field == "M"


def test_any_array_layout_gives_the_same_answer():
    """Read-only, Fortran-ordered, strided, integer and list inputs take the converting path and
    give the answer of the float64 C-contiguous path (z = (4/3, 7/3) for this P-matrix LCP)."""
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    q = np.array([-5.0, -6.0])
    expected = np.linalg.solve(M, -q)
    ro_M, ro_q = M.copy(), q.copy()
    ro_M.flags.writeable = False
    ro_q.flags.writeable = False
    wide = np.zeros((2, 4))
    wide[:, ::2] = M
    cases = [
        (M, q), (ro_M, ro_q), (np.asfortranarray(M), q), (wide[:, ::2], q[::1]),
        (M.astype(int), q.astype(np.float32)), (M.tolist(), q.tolist()), (M, q.reshape(2, 1)),
    ]
    for Mi, qi in cases:
        res = lemke.solve(Mi, qi)
        assert res.success and np.allclose(res.x, expected, atol=1e-14)
        assert np.allclose(res.extras["w"], 0.0, atol=1e-13)


def test_max_iter_status():
    M, q = load("lcp_exp_murty2")
    res = lemke.solve(M, q, max_iter=10, restarts=0)
    assert res.status is Status.MAX_ITER and res.iterations == 10
    assert res.extras["start_statuses"] == ["max_iter"]


def test_default_pivot_limit():
    assert lemke.default_max_pivots(2) == 1000 and lemke.default_max_pivots(100) == 5000


def test_warmup_runs():
    lemke.warmup()
