"""The fc3d core: cone projection, the natural-map residual and the honesty of verified results."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.result import Status
from contactmp.solvers.fc3d import fc3d_residual, project_cone, validate_fc3d, verified_fc3d_result


def test_projection_onto_the_cone_is_idempotent_and_orthogonal() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        mu = rng.uniform(0, 2, size=4)
        x = rng.normal(size=12) * 3
        p = project_cone(x, mu)
        np.testing.assert_allclose(project_cone(p, mu), p, atol=1e-12)
        # p in K, x - p in the polar cone and orthogonal to p (Moreau)
        for j in range(4):
            pj, dj = p[3 * j:3 * j + 3], (x - p)[3 * j:3 * j + 3]
            assert np.hypot(pj[1], pj[2]) <= mu[j] * pj[0] + 1e-12
            assert abs(pj @ dj) <= 1e-10 * (1 + np.linalg.norm(x))


def test_closed_form_answers_have_zero_residual() -> None:
    W, mu = np.eye(3), np.array([0.5])
    assert fc3d_residual(W, np.array([-1.0, 0.2, 0.0]), mu, [1.0, -0.2, 0.0]) == 0.0  # sticking
    assert fc3d_residual(W, np.array([-1.0, 2.0, 0.0]), mu, [1.0, -0.5, 0.0]) == 0.0  # sliding
    assert fc3d_residual(W, np.array([1.0, 2.0, 0.0]), mu, [0.0, 0.0, 0.0]) == 0.0  # separation
    assert fc3d_residual(W, np.array([-1.0, 2.0, 0.0]), mu, [1.0, 0.5, 0.0]) > 0.1  # friction the wrong way


def test_a_huge_force_cannot_fake_a_solution_that_does_not_exist() -> None:
    # W = 0, q_n < 0: u_n = -1 whatever r is, so no solution; Siconos' normalisation by ||r||
    # would pass r_n = 1e9 at 1e-9
    W, q, mu = np.zeros((3, 3)), np.array([-1.0, 0.0, 0.0]), np.array([0.5])
    res = verified_fc3d_result(W, q, mu, np.array([1e9, 0.0, 0.0]), solver="x", claimed=Status.SOLVED,
                               tol=1e-8, iterations=0, t_start=0.0)
    assert res.residual < 1e-8
    assert res.status is Status.NOT_SOLVED and res.extras["dual_violation"] == pytest.approx(1.0)


def test_validation_names_the_field() -> None:
    with pytest.raises(InputError, match="W"):
        validate_fc3d(np.eye(4), np.zeros(4), [0.1])
    with pytest.raises(InputError, match="q"):
        validate_fc3d(np.eye(3), np.zeros(2), [0.1])
    with pytest.raises(InputError, match="mu"):
        validate_fc3d(np.eye(3), np.zeros(3), [-0.1])
    with pytest.raises(InputError, match="mu"):
        validate_fc3d(np.eye(6), np.zeros(6), [0.1, 0.2, 0.3])
