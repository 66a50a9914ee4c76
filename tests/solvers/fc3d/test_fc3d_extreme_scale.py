"""The fc3d judge (natural-map residual and dual-cone measure) near the float limits.

Both measures are positively homogeneous of degree 0 in (q, r, u): scaling a problem and its
candidate by any c > 0 leaves them unchanged. They are computed on the data times an exact power of
two, so a scale of 1e300 or 1e-300 must give the same value as the unscaled problem, to rounding.
"""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.solvers.fc3d.problem import dual_violation, fc3d_residual, verified_fc3d_result
from contactmp.result import Status


def _problem(seed: int, nc: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((3 * nc, 3 * nc))
    return A @ A.T + np.eye(3 * nc), rng.standard_normal(3 * nc), rng.uniform(0.1, 1.0, nc), \
        rng.standard_normal(3 * nc)


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e150, 1e300])
@pytest.mark.parametrize("seed", range(5))
def test_measures_are_scale_invariant_up_to_the_float_limits(scale, seed):
    W, q, mu, r = _problem(seed)
    ref = fc3d_residual(W, q, mu, r)
    # W r + q is the same vector times `scale`; the only new rounding is that of the products
    # (relative eps per entry), so the measures agree to a few eps relative.
    got = fc3d_residual(W, q * scale, mu, r * scale)
    assert got == pytest.approx(ref, rel=1e-12)
    u = W @ r + q
    assert dual_violation(q * scale, mu, u * scale) == pytest.approx(dual_violation(q, mu, u), rel=1e-12)


def test_an_overflowing_scale_does_not_make_zero_a_solution():
    # u = q at r = 0 has u_n = -1e300 < 0 (penetration): r = 0 is no solution for any mu; before
    # the exact rescaling, ||q||^2 overflowed to inf and the residual came out as 0.
    W, q = 1e300 * np.eye(3), np.array([-1e300, 1e300, 0.0])
    for mu in (0.0, 0.5, 1.0, 2.0):
        res = verified_fc3d_result(W, q, np.array([mu]), np.zeros(3), solver="test",
                                   claimed=Status.SOLVED, tol=1e-8, iterations=0, t_start=0.0)
        assert res.residual > 0.1 and res.status is not Status.SOLVED


def test_an_overflowing_velocity_is_not_verified():
    W, q = 1e300 * np.eye(3), np.array([1e300, 0.0, 0.0])
    assert fc3d_residual(W, q, np.array([0.5]), np.array([1e300, 0.0, 0.0])) == np.inf
