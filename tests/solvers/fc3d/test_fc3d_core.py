"""The fc3d core: cone projection, the natural-map residual and the honesty of verified results."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.result import Status
from contactmp.solvers.fc3d.problem import fc3d_residual, project_cone, validate_fc3d, verified_fc3d_result


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


def test_default_solver_runs_quick_nsgs_first_and_falls_back_to_newton(repo_data) -> None:
    """The auto chain: a small problem that NSGS solves is answered by the quick NSGS pass; one
    where NSGS stagnates falls through to Newton; both verified by the independent residual."""
    from contactmp.io import load_fc3d
    from contactmp.solvers.registry import DEFAULT_FC3D_ORDER, solve_fc3d

    assert DEFAULT_FC3D_ORDER[:2] == ("nsgs", "newton")
    W, q, mu = load_fc3d(repo_data / "fc3d" / "Rover4144.npz")
    res = solve_fc3d(W, q, mu)
    assert res.solver == "nsgs" and res.status is Status.SOLVED
    assert fc3d_residual(W, q, mu, res.x) <= 1e-8
    W, q, mu = load_fc3d(repo_data / "fc3d" / "OneObject-i100000-316_hdf5.npz")
    res = solve_fc3d(W, q, mu, time_limit=30.0)
    assert [a["solver"] for a in res.extras["attempts"]] == ["nsgs", "newton"]
    assert res.extras["attempts"][0]["status"] == "not_solved" and res.extras["attempts"][0]["iterations"] < 50
    assert res.solver == "newton" and fc3d_residual(W, q, mu, res.x) <= 1e-8


def test_nonfinite_input_names_the_field() -> None:
    W, q = np.eye(3), np.array([-1.0, 0.0, 0.0])
    for field, args in (("W", (np.full((3, 3), np.nan), q, 0.5)), ("q", (W, [np.inf, 0, 0], 0.5)),
                        ("mu", (W, q, -0.1)), ("mu", (W, q, np.nan))):
        with pytest.raises(InputError) as exc:
            validate_fc3d(*args)
        assert exc.value.field == field


def test_quick_false_starts_with_newton_and_keeps_a_resting_box_unsqueezed() -> None:
    """A box resting on four corners (W of rank 3 in the normal rows: forces not unique):
    with ``quick=False`` the chain starts with Newton from r = 0 and leaves no internal friction;
    both answers are verified solutions."""
    from contactmp.errors import OptionError
    from contactmp.solvers.registry import solve_fc3d

    corners = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]], dtype=float) * 0.1
    m, I, h, g = 1.0, np.diag([0.01, 0.01, 0.02]), 0.01, 9.81
    J = []
    for x, y in corners:  # rows n, t, o of each corner: velocity of the point (x, y, -0.05)
        p = np.array([x, y, -0.05])
        for d in np.eye(3)[[2, 0, 1]]:
            J.append(np.concatenate([d, np.cross(p, d)]))
    J = np.array(J)
    Minv = np.diag(np.concatenate([np.full(3, 1 / m), 1 / np.diag(I)]))
    W = J @ Minv @ J.T
    q = J @ (Minv @ np.array([0, 0, -m * g * h, 0, 0, 0]))
    mu = np.full(4, 0.5)
    res = solve_fc3d(W, q, mu, quick=False)
    assert res.success and res.extras["attempts"][0]["solver"] == "newton"
    r = res.x.reshape(4, 3)
    np.testing.assert_allclose(r[:, 0].sum(), m * g * h, rtol=1e-9)
    assert np.abs(r[:, 1:]).max() <= 1e-9
    assert solve_fc3d(W, q, mu).success
    with pytest.raises(OptionError):
        solve_fc3d(W, q, mu, quick="yes")


def _same_result(a, b) -> None:
    """Two auto-mode results agree in everything but timings."""
    assert a.status is b.status and a.solver == b.solver and a.message == b.message
    assert a.iterations == b.iterations and a.tol == b.tol
    assert a.residual == b.residual or (np.isinf(a.residual) and np.isinf(b.residual))
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.extras["u"], b.extras["u"])
    assert a.extras["dual_violation"] == b.extras["dual_violation"]
    keys = ("solver", "status", "residual", "iterations")
    assert [{k: t[k] for k in keys} for t in a.extras["attempts"]] == \
        [{k: t[k] for k in keys} for t in b.extras["attempts"]]
    assert all(t["time_s"] >= 0.0 for t in a.extras["attempts"])


def test_lean_path_gives_the_general_paths_answer_on_the_shared_problems(repo_data) -> None:
    """The default's hot path (one compiled quick pass) and the general chain return the same r,
    status, residual, message and attempts on every shared problem it serves (nc <= 64), with and
    without options; larger problems are left to the general path."""
    from contactmp.io import load_fc3d
    from contactmp.solvers import registry
    from contactmp.solvers.fc3d.problem import dual_violation

    served = 0
    for f in sorted((repo_data / "fc3d").glob("*.npz")):
        W, q, mu = load_fc3d(f)
        for options in ({}, {"tol": 1e-8, "time_limit": 30.0}):
            lean = registry._solve_fc3d_lean(W, q, mu, dict(options))
            if mu.shape[0] > registry.QUICK_NSGS_MAX_NC:
                assert lean is None
                continue
            served += 1
            _same_result(lean, registry._solve_fc3d_general(W, q, mu, dict(options)))
            assert lean.success, f.stem  # and it is verified, by a plain numpy re-check here:
            u = W @ lean.x + q
            assert fc3d_residual(W, q, mu, lean.x) <= 1e-8
            np.testing.assert_allclose(lean.extras["u"], u, rtol=1e-12, atol=1e-12 * np.abs(q).max())
            assert lean.extras["dual_violation"] == dual_violation(q, mu, lean.extras["u"]) <= 1e-4
    assert served == 2 * 17


def test_lean_path_equals_the_general_path_on_small_edge_cases() -> None:
    """Scalar mu, a tighter tol, a block with (W_jj)_nn <= 0 (left to the general path): the same
    answer either way (stagnating quick passes that fall through to Newton are among the shared
    problems of the previous test)."""
    from contactmp.solvers import registry

    W, q = np.diag([2.0, 1.0, 1.0]), np.array([-1.0, 0.5, 0.2])
    lean = registry._solve_fc3d_lean(W, q, 0.3, {})
    _same_result(lean, registry._solve_fc3d_general(W, q, 0.3, {}))
    # sliding: r_n = 1/2, r_T = -mu r_n (u_T direction), u_n = 0
    np.testing.assert_allclose(lean.x[0], 0.5, rtol=1e-14)
    np.testing.assert_allclose(np.hypot(*lean.x[1:]), 0.15, rtol=1e-12)
    bad = np.diag([0.0, 1.0, 1.0])
    assert registry._solve_fc3d_lean(bad, q, 0.3, {}) is None
    out = registry.solve_fc3d(bad, q, 0.3)
    assert out.extras["attempts"][0]["status"] == "numerical_error"
    _same_result(registry._solve_fc3d_lean(W, q, 0.3, {"tol": 1e-12}),
                 registry._solve_fc3d_general(W, q, 0.3, {"tol": 1e-12}))
    # a time limit below the lean threshold, an int tol or unknown keys go the general way
    for options in ({"time_limit": 0.5}, {"tol": 1}, {"tol": 1e-8, "quick": False}, {"max_iter": 3}):
        assert registry._solve_fc3d_lean(W, q, 0.3, options) is None
    with pytest.raises(OptionError):
        registry.solve_fc3d(W, q, 0.3, max_iter=3)


def test_lean_path_leaves_bad_input_to_validation_which_names_the_field() -> None:
    from contactmp.solvers import registry

    W, q, mu = np.eye(6), np.array([-1.0, 0.0, 0.0, -1.0, 0.2, 0.0]), np.array([0.5, 0.5])
    Wn = W.copy()
    Wn[4, 1] = np.nan
    qn = q.copy()
    qn[2] = np.inf
    for field, args in (("W", (Wn, q, mu)), ("q", (W, qn, mu)), ("mu", (W, q, np.array([0.5, -0.1]))),
                        ("mu", (W, q, -0.5)), ("mu", (W, q, np.array([0.5, np.nan])))):
        assert registry._solve_fc3d_lean(*args, {}) is None
        with pytest.raises(InputError) as exc:
            registry.solve_fc3d(*args)
        assert exc.value.field == field
