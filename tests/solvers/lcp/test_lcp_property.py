"""Property: over thousands of random LCPs, no solver ever reports `solved` with a residual above
its tolerance, and no solver raises on a well-formed problem (non-convergence is a status)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contactmp.result import Status
from contactmp.solvers import solve_lcp


@st.composite
def lcps(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 7))
    kind = draw(st.sampled_from(["integers", "floats", "psd_plus_skew", "degenerate"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if kind == "integers":
        M = rng.integers(-3, 4, size=(n, n)).astype(float)
        q = rng.integers(-3, 4, size=n).astype(float)
    elif kind == "floats":
        M = rng.normal(size=(n, n)) * 10 ** rng.uniform(-3, 3)
        q = rng.normal(size=n) * 10 ** rng.uniform(-3, 3)
    elif kind == "psd_plus_skew":
        S = rng.normal(size=(n, max(1, n - 1)))
        K = rng.normal(size=(n, n))
        M = S @ S.T + (K - K.T)
        q = rng.normal(size=n)
    else:  # repeated rows/columns and zeros in q: degenerate bases
        base = rng.integers(-2, 3, size=(1, n)).astype(float)
        M = np.repeat(base, n, axis=0) + np.eye(n) * rng.integers(0, 2)
        q = rng.integers(-1, 2, size=n).astype(float)
    return M, q


FAST_SOLVERS = ["lemke", "newton", "fip", "pgs"]


def plain_residual(M: np.ndarray, q: np.ndarray, z: np.ndarray) -> float:
    """||min(z, M z + q)||_inf in plain numpy: independent of the package's compiled kernels."""
    z = np.asarray(z, dtype=float)
    r = np.abs(np.minimum(z, M @ z + q)).max()
    return float(r) if np.isfinite(r) else np.inf


@pytest.mark.parametrize("solver", FAST_SOLVERS)
@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=lcps())
def test_solved_is_always_verified(solver: str, problem: tuple[np.ndarray, np.ndarray]) -> None:
    M, q = problem
    res = solve_lcp(M, q, solver=solver)
    assert isinstance(res.status, Status)
    if res.status is Status.SOLVED:
        assert plain_residual(M, q, res.x) <= res.tol * (1 + 1e-12)
        scale = max(1.0, np.abs(q).max(), np.abs(M).max() * np.abs(res.x).max() * len(q))
        assert abs(plain_residual(M, q, res.x) - res.residual) <= 1e-13 * scale  # the reported one
        assert np.all(res.x >= -res.tol)


@pytest.mark.parametrize("solver", ["ipopt", "cyipopt"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=lcps())
def test_solved_is_always_verified_ipopt(solver: str, problem: tuple[np.ndarray, np.ndarray]) -> None:
    M, q = problem
    res = solve_lcp(M, q, solver=solver)
    if res.status is Status.SOLVED:
        assert plain_residual(M, q, res.x) <= res.tol * (1 + 1e-12)


def test_a_diverged_iterate_is_not_certified_by_rounding() -> None:
    """The feasible interior-point method followed a ray of this LCP to |z| ~ 4e16, where the
    computed residual of ``min(z, M z + q)`` was 0 and the true one is 3 (Hypothesis found it): the
    check's rounding floor, eps (|M| |z| + |q|) ~ 20 here, is far above tol, so it is not solved."""
    M = np.array([[-2., 0., 1., 3., 1., -2., 0.], [1., -2., -3., -1., -1., -3., 2.], [3., -3., 1., 1., -1., 3., 1.],
                  [3., 2., -1., -3., 1., -2., -3.], [-1., 0., 0., 2., 3., -3., 3.], [1., 3., -2., -2., -2., -3., 3.],
                  [-2., 0., 1., -3., -2., 2., 3.]])
    q = np.array([2., -3., -1., -2., 0., 3., 0.])
    res = solve_lcp(M, q, solver="fip")
    if res.status is Status.SOLVED:
        assert plain_residual(M, q, res.x) <= res.tol * (1 + 1e-12)
    z = np.array([2.70215978e16, 4.05323966e16, 0.0, 1.80143985e16, 0.0, 0.0, 3.60287970e16])
    from contactmp.solvers.lcp.problem import rounding_floor
    assert rounding_floor(M, q, z, 1e-8) > 1.0
    assert rounding_floor(M, q, np.ones(7), 1e-8) == 0.0
