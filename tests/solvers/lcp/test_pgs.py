"""Projected Gauss-Seidel on LCP(q, M): convergence on SPD M to Lemke's solution, warm start,
over-relaxation, and the M_ii <= 0 guard."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.result import Status
from contactmp.solvers.lcp import lemke
from contactmp.solvers.lcp import pgs
from contactmp.solvers.registry import lcp_solver


def random_spd(rng: np.random.Generator, n: int) -> np.ndarray:
    A = rng.standard_normal((n, n))
    return A @ A.T / n + 0.5 * np.eye(n)


def test_registered():
    assert lcp_solver("pgs") is pgs.solve


@pytest.mark.parametrize("n", [1, 2, 5, 20, 50])
def test_spd_converges_to_lemke_solution(n):
    rng = np.random.default_rng(n)
    for _ in range(3):
        M = random_spd(rng, n)
        q = rng.standard_normal(n)
        ref = lemke.solve(M, q)
        assert ref.success
        res = pgs.solve(M, q, tol=1e-10, max_iter=100000)
        assert res.status is Status.SOLVED and res.residual <= 1e-10
        # SPD: unique solution; the error is bounded by the residual times a condition factor
        np.testing.assert_allclose(res.x, ref.x, atol=1e-7)


def test_deudeu_closed_form():
    # M = [[2, 1], [1, 2]], q = (-5, -6): interior solution z = M^{-1}(-q) = (4/3, 7/3)
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    q = np.array([-5.0, -6.0])
    res = pgs.solve(M, q, tol=1e-12)
    assert res.success
    np.testing.assert_allclose(res.x, [4.0 / 3.0, 7.0 / 3.0], atol=1e-11)


def test_over_relaxation_and_warm_start():
    rng = np.random.default_rng(3)
    M = random_spd(rng, 30)
    q = rng.standard_normal(30)
    plain = pgs.solve(M, q, tol=1e-10)
    sor = pgs.solve(M, q, tol=1e-10, omega=1.3)
    assert plain.success and sor.success
    np.testing.assert_allclose(sor.x, plain.x, atol=1e-8)
    warm = pgs.solve(M, q, tol=1e-10, z0=plain.x)
    assert warm.success and warm.iterations == 1  # one sweep confirms the solution


def test_zero_diagonal_is_numerical_error():
    M = np.array([[1.0, 0.5, 0.0], [0.5, 0.0, 1.0], [0.0, 1.0, 2.0]])
    res = pgs.solve(M, [-1.0, -1.0, -1.0])
    assert res.status is Status.NUMERICAL_ERROR
    assert res.extras["bad_index"] == 1 and "M[1, 1]" in res.message


def test_max_iter_status():
    rng = np.random.default_rng(5)
    M = random_spd(rng, 20)
    q = rng.standard_normal(20)
    res = pgs.solve(M, q, tol=1e-14, max_iter=2)
    assert res.status is Status.MAX_ITER and res.iterations == 2
    assert res.residual > 1e-14


def test_bad_input_and_options():
    with pytest.raises(InputError) as err:
        pgs.solve(np.array([[np.inf, 0.0], [0.0, 1.0]]), [1.0, 1.0])
    assert err.value.field == "M"
    with pytest.raises(InputError) as err:
        pgs.solve(np.eye(2), [1.0])
    assert err.value.field == "q"
    with pytest.raises(InputError) as err:
        pgs.solve(np.eye(2), [1.0, -1.0], z0=[1.0, 2.0, 3.0])
    assert err.value.field == "z0"
    with pytest.raises(OptionError):
        pgs.solve(np.eye(2), [1.0, -1.0], omega=2.0)
    with pytest.raises(OptionError):
        pgs.solve(np.eye(2), [1.0, -1.0], sweeps=3)
