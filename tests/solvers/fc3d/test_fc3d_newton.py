"""The semismooth Newton method for fc3d: contactmp.solvers.fc3d.newton."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.result import Status
from contactmp.solvers.fc3d import newton as fc3d_newton
from contactmp.solvers.fc3d.problem import fc3d_residual, project_cone

#: the Siconos fc3d test problems shipped in the repository (tests/data/fc3d)
FC3D = Path(__file__).resolve().parents[2] / "data" / "fc3d"
PROBLEMS = sorted(FC3D.glob("*.npz"))
FORMULATIONS = ("ac", "natural")


def load(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = np.load(FC3D / f"{name}.npz", allow_pickle=False)
    return d["W"], d["q"], d["mu"]


def random_spd(rng: np.random.Generator, n: int) -> np.ndarray:
    a = rng.standard_normal((n, n))
    return a @ a.T + 0.1 * np.eye(n)


def known_solution_problem(rng: np.random.Generator, nc: int, rank_frac: float):
    """A rank-deficient fc3d problem built around a chosen solution r (mixed contact modes).

    W = J J^T with J of ``rank_frac * 3 nc`` columns; per contact separated (r = 0, u_n > 0),
    sticking (r inside K, u = 0) or sliding (r on the boundary, u_n = 0, u_T opposite to r_T);
    then q = u - W r. Returns (W, q, mu, r).
    """
    n = 3 * nc
    J = rng.standard_normal((n, max(1, int(rank_frac * n))))
    W = J @ J.T
    mu = rng.uniform(0.1, 1.0, nc)
    r, u = np.zeros(n), np.zeros(n)
    for j in range(nc):
        i, mode = 3 * j, rng.integers(3)
        if mode == 0:
            u[i], u[i + 1:i + 3] = abs(rng.standard_normal()), rng.standard_normal(2)
            continue
        r[i] = abs(rng.standard_normal()) + 0.1
        t = rng.standard_normal(2)
        t /= np.linalg.norm(t)
        if mode == 1:
            r[i + 1:i + 3] = rng.uniform(0, 0.99) * mu[j] * r[i] * t
        else:
            r[i + 1:i + 3] = mu[j] * r[i] * t
            u[i + 1:i + 3] = -abs(rng.standard_normal()) * t
    return W, u - W @ r, mu, r


def assert_coulomb(W: np.ndarray, q: np.ndarray, mu: np.ndarray, r: np.ndarray,
                   tol: float = 1e-8) -> None:
    """r in K, u_hat in K^*, r . u_hat = 0 per contact, as far as a natural map below ``tol`` allows.

    The solvers stop when ``||e|| <= tol max(||q||, ||r||, ||u||)`` with ``e = r - p``,
    ``p = P_K(r - u_hat)`` (Siconos' measure; re-checked here). Moreau's decomposition of
    ``r - u_hat`` gives ``p in K``, ``e - u_hat in -K^*`` and ``p . (e - u_hat) = 0``, so per contact
    ``dist(r_j, K_j) <= ||e_j||``, ``dist(u_hat_j, K^*_j) <= ||e_j||`` and
    ``r_j . u_hat_j = e_j . (p_j + u_hat_j)``; a point at distance ``d`` from ``K_mu`` has
    ``||x_T|| - mu x_n <= sqrt(1 + mu^2) d`` (the same for ``K^*``: ``mu ||x_T|| - x_n``). The
    measure's scale (500 to 1050 on the known-solution problems, from ||q||) is hundreds of times
    ``max(1, |r|_inf, |u|_inf)``, so a fixed tolerance on that smaller scale is not implied by the
    solver's test: with OPENBLAS_NUM_THREADS=2 a 162-row problem stopped at 5.7e-9 with a cone
    violation of 6.4e-6 in one contact (the bound here: 6.4e-6). Rounding of the projection and of
    these sums: ``16 eps (||r_j|| + ||u_hat_j||)`` per contact.
    """
    eps = np.finfo(float).eps
    u = W @ r + q
    uhat = u.copy()
    uhat[0::3] += mu * np.hypot(u[1::3], u[2::3])
    p = project_cone(r - uhat, mu)
    e = r - p
    norm_scale = max(np.linalg.norm(q), np.linalg.norm(r), np.linalg.norm(u))
    assert np.linalg.norm(e) <= tol * norm_scale, (np.linalg.norm(e) / norm_scale, tol)
    for j, m in enumerate(mu):
        sl = slice(3 * j, 3 * j + 3)
        ej = np.linalg.norm(e[sl])
        slack = 16 * eps * (np.linalg.norm(r[sl]) + np.linalg.norm(uhat[sl]))
        rn, rt = r[3 * j], r[3 * j + 1:3 * j + 3]
        un, ut = u[3 * j], u[3 * j + 1:3 * j + 3]
        uhat_n = uhat[3 * j]
        cone = np.sqrt(1 + m * m) * ej + slack
        assert np.linalg.norm(rt) - m * rn <= cone, (j, "r in K")
        assert m * np.linalg.norm(ut) - uhat_n <= cone, (j, "u_hat in K^*")
        compl = ej * (np.linalg.norm(p[sl]) + np.linalg.norm(uhat[sl])) + slack * (
            np.linalg.norm(r[sl]) + np.linalg.norm(uhat[sl]))
        assert abs(rn * uhat_n + rt @ ut) <= compl, (j, "r . u_hat = 0")


# ---------------------------------------------------------------------------------------------
# One contact: closed forms
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("formulation", FORMULATIONS)
@pytest.mark.parametrize("wn, wt, mu", [(1.0, 1.0, 0.5), (14.0, 3.0, 0.1), (2e-3, 1e-3, 0.8)])
def test_sticking_closed_form(formulation: str, wn: float, wt: float, mu: float) -> None:
    W = np.diag([wn, wt, wt])
    r_true = np.array([2.0, 0.3 * mu * 2.0, -0.5 * mu * 2.0])  # ||r_T|| < mu r_n: inside K
    q = -W @ r_true  # so that u = W r + q = 0 at r_true
    res = fc3d_newton.solve(W, q, [mu], tol=1e-12, formulation=formulation)
    assert res.status is Status.SOLVED, res.message
    assert res.residual <= 1e-12
    np.testing.assert_allclose(res.x, r_true, rtol=1e-10, atol=1e-10 * np.abs(r_true).max())
    np.testing.assert_allclose(res.extras["u"], 0.0, atol=1e-10 * np.abs(q).max())


@pytest.mark.parametrize("formulation", FORMULATIONS)
@pytest.mark.parametrize("wn, wt, mu", [(1.0, 1.0, 0.5), (14.0, 3.0, 0.1), (2e-3, 1e-3, 0.8)])
def test_sliding_closed_form(formulation: str, wn: float, wt: float, mu: float) -> None:
    W = np.diag([wn, wt, wt])
    qn = -1.5 * wn  # r_n = 1.5
    rn = -qn / wn
    direction = np.array([0.6, -0.8])
    qt = (3.0 * wt * mu * rn) * direction  # ||q_T|| > w_t mu r_n: the contact slides
    q = np.array([qn, *qt])
    res = fc3d_newton.solve(W, q, [mu], tol=1e-12, formulation=formulation)
    assert res.status is Status.SOLVED, res.message
    assert res.residual <= 1e-12
    r, u = res.x, res.extras["u"]
    r_true = np.array([rn, *(-mu * rn * direction)])  # on the boundary, opposite to the sliding
    np.testing.assert_allclose(r, r_true, rtol=1e-10, atol=1e-10 * rn)
    assert abs(np.linalg.norm(r[1:]) - mu * r[0]) <= 1e-10 * rn
    assert abs(u[0]) <= 1e-10 * abs(qn)
    ut = u[1:]
    assert np.linalg.norm(ut) > 0
    # u_T parallel to -r_T: u_T = |u_T| * direction, and its size is ||q_T|| - w_t mu r_n
    np.testing.assert_allclose(ut, (np.linalg.norm(qt) - wt * mu * rn) * direction, rtol=1e-10)
    np.testing.assert_allclose(ut / np.linalg.norm(ut), -r[1:] / np.linalg.norm(r[1:]), atol=1e-10)


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_separation_closed_form(formulation: str) -> None:
    rng = np.random.default_rng(3)
    for _ in range(5):
        W = random_spd(rng, 3)
        q = np.array([abs(rng.standard_normal()) + 0.1, *rng.standard_normal(2)])
        res = fc3d_newton.solve(W, q, [0.7], tol=1e-12, formulation=formulation)
        assert res.status is Status.SOLVED and res.residual <= 1e-12
        np.testing.assert_allclose(res.x, 0.0, atol=1e-10)
        np.testing.assert_allclose(res.extras["u"], q, atol=1e-10)


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_sticking_general_spd(formulation: str) -> None:
    """General SPD W: if r = -W^{-1} q lies inside K, it is the solution and u = 0."""
    rng = np.random.default_rng(4)
    found = 0
    while found < 5:
        W = random_spd(rng, 3)
        r_true = np.array([1.0, *(0.2 * rng.standard_normal(2))])
        if np.linalg.norm(r_true[1:]) >= 0.9 * 0.6:
            continue
        found += 1
        q = -W @ r_true
        res = fc3d_newton.solve(W, q, [0.6], tol=1e-12, formulation=formulation)
        assert res.status is Status.SOLVED and res.residual <= 1e-12
        np.testing.assert_allclose(res.x, r_true, atol=1e-10)
        np.testing.assert_allclose(res.extras["u"], 0.0, atol=1e-10)


def test_frictionless_is_an_lcp() -> None:
    """mu = 0: r_T = 0 and (r_n, u_n) solve the LCP of the normal block."""
    rng = np.random.default_rng(5)
    nc = 6
    W = random_spd(rng, 3 * nc)
    q = rng.standard_normal(3 * nc)
    res = fc3d_newton.solve(W, q, np.zeros(nc), tol=1e-12)
    assert res.success
    r, u = res.x, res.extras["u"]
    np.testing.assert_allclose(r[1::3], 0.0, atol=1e-12)
    np.testing.assert_allclose(r[2::3], 0.0, atol=1e-12)
    # u_hat = u here, and the normal rows are complementary
    assert r[0::3].min() >= -1e-12 and u[0::3].min() >= -1e-10
    assert np.abs(r[0::3] * u[0::3]).max() <= 1e-10


# ---------------------------------------------------------------------------------------------
# The generalized Jacobian (finite differences away from the kinks)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_jacobian_matches_finite_differences(formulation: str) -> None:
    rng = np.random.default_rng(6)
    for _ in range(20):
        nc = int(rng.integers(1, 6))
        W = random_spd(rng, 3 * nc)
        q = rng.standard_normal(3 * nc)
        mu = rng.uniform(0.0, 1.0, nc)
        prob = fc3d_newton._Problem(W, q, mu, fc3d_newton.default_rho(W), formulation)
        r = rng.standard_normal(3 * nc)
        phi, _ = prob.phi(r, jac=True)
        H = prob.jacobian()
        d = rng.standard_normal(3 * nc)
        h = 1e-7
        fd = (prob.phi(r + h * d)[0] - prob.phi(r - h * d)[0]) / (2 * h)
        np.testing.assert_allclose(H @ d, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())


def test_projection_identity_at_the_answer() -> None:
    """The returned r is a fixed point r = P_K(r - u_hat) (the definition of a solution)."""
    W, q, mu = load("Rover1040")
    res = fc3d_newton.solve(W, q, mu, tol=1e-12)
    r, u = res.x, res.extras["u"]
    uhat = u.copy()
    uhat[0::3] += mu * np.hypot(u[1::3], u[2::3])
    np.testing.assert_allclose(project_cone(r - uhat, mu), r, atol=1e-11 * np.abs(r).max())


# ---------------------------------------------------------------------------------------------
# The shared problems (all take well under a second)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_shared_problems(path: Path) -> None:
    W, q, mu = load(path.stem)
    res = fc3d_newton.solve(W, q, mu)
    assert res.status is Status.SOLVED, res.message
    assert fc3d_residual(W, q, mu, res.x) <= 1e-8
    assert_coulomb(W, q, mu, res.x)


def test_shared_problem_count() -> None:
    assert len(PROBLEMS) == 19


@pytest.mark.parametrize("name", ["Rover4144", "NESpheres_10_1", "OneObject-i100000-316_hdf5",
                                  "Confeti-ex03-Fc3D-SBM"])
def test_natural_formulation_on_shared_problems(name: str) -> None:
    W, q, mu = load(name)
    res = fc3d_newton.solve(W, q, mu, formulation="natural")
    assert res.status is Status.SOLVED and res.residual <= 1e-8


def test_sparse_and_dense_paths_agree() -> None:
    """NESpheres_10_1 has a positive definite W, so r is unique: both storages must find it."""
    W, q, mu = load("NESpheres_10_1")
    dense = fc3d_newton.solve(W, q, mu, sparse=False, tol=1e-12)
    sparse = fc3d_newton.solve(W, q, mu, sparse=True, tol=1e-12)
    assert dense.success and sparse.success
    assert not dense.extras["sparse"] and sparse.extras["sparse"]
    np.testing.assert_allclose(sparse.x, dense.x, atol=1e-9 * np.abs(dense.x).max())


def test_large_sparse_problem_uses_sparse_storage() -> None:
    W, q, mu = load("Capsules-i101-404")
    res = fc3d_newton.solve(W, q, mu)
    assert res.extras["sparse"] and res.success


def test_singular_w_uses_the_regularized_step() -> None:
    """BoxesStack's W has rank 78 of 156: the plain Newton system is singular."""
    W, q, mu = load("BoxesStack1-i100000-32_hdf5")
    assert np.linalg.matrix_rank(W) < W.shape[0]
    res = fc3d_newton.solve(W, q, mu)
    assert res.success
    assert res.extras["regularized_steps"] + res.extras["lm_steps"] > 0


@pytest.mark.parametrize("seed", range(8))
def test_random_positive_definite_problems(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    nc = int(rng.integers(1, 30))
    J = rng.standard_normal((3 * nc, max(3, 2 * nc)))
    W = J @ J.T + 1e-3 * np.eye(3 * nc)
    q = rng.standard_normal(3 * nc)
    mu = rng.uniform(0.05, 1.0, nc)
    res = fc3d_newton.solve(W, q, mu)
    assert res.success, res.message
    assert fc3d_residual(W, q, mu, res.x) <= 1e-8


@pytest.mark.parametrize("seed", range(10))
def test_rank_deficient_problems_with_known_solutions(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    nc = int(rng.integers(3, 30))
    W, q, mu, r_known = known_solution_problem(rng, nc, rng.uniform(0.4, 0.9))
    assert fc3d_residual(W, q, mu, r_known) <= 1e-12  # the construction is right
    res = fc3d_newton.solve(W, q, mu)
    assert res.success, res.message
    assert_coulomb(W, q, mu, res.x)


def test_fischer_burmeister_fallback_after_alart_curnier_stalls() -> None:
    """Larger rank-deficient problems where AC tends to stall and the FB phase finishes the job.

    The iterates of these hard problems depend on round-off (BLAS), so the assertion is on the
    set: every one is solved, most through the fb phase, and AC alone fails on some.
    """
    used_fb = alone_failed = 0
    for seed in (5, 12, 22, 24, 26, 30, 32):
        rng = np.random.default_rng(500 + seed)
        W, q, mu, _ = known_solution_problem(rng, int(rng.integers(30, 60)), 0.5)
        res = fc3d_newton.solve(W, q, mu)
        assert res.success and res.residual <= 1e-8, (seed, res.message)
        assert_coulomb(W, q, mu, res.x)
        used_fb += any(p.startswith("fb") for p in res.extras["phases"])
        alone_failed += not fc3d_newton.solve(W, q, mu, fallback=()).success
    assert used_fb >= 4 and alone_failed >= 4


def test_proximal_fallback() -> None:
    """The prox phase alone after AC stalls: solves some of the problems above (as measured, 6 of
    12 within 100 iterations where the fb phase solves all 12); its answers are verified."""
    solved = 0
    for seed in (5, 12, 14, 24, 26, 32):
        rng = np.random.default_rng(500 + seed)
        W, q, mu, _ = known_solution_problem(rng, int(rng.integers(30, 60)), 0.5)
        res = fc3d_newton.solve(W, q, mu, fallback=("prox",))
        if res.success and res.extras["prox_iterations"] > 0:
            solved += 1
            assert_coulomb(W, q, mu, res.x)
        else:
            assert res.status is not Status.SOLVED or res.residual <= 1e-8
    assert solved >= 3


def test_warm_start_at_a_solution_takes_no_iteration() -> None:
    W, q, mu = load("Rover1039")
    first = fc3d_newton.solve(W, q, mu, tol=1e-12)
    again = fc3d_newton.solve(W, q, mu, r0=first.x, tol=1e-10)
    assert again.success and again.iterations == 0


def test_registry_dispatch() -> None:
    from contactmp.solvers.registry import FC3D_SOLVERS, solve_fc3d

    assert FC3D_SOLVERS["newton"] == "contactmp.solvers.fc3d.newton"
    W, q, mu = load("FC3D_Example1")
    res = solve_fc3d(W, q, mu, solver="newton")
    assert res.solver == "newton" and res.success


# ---------------------------------------------------------------------------------------------
# Bad input raises; non-convergence is a status
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "W, q, mu, kwargs, field",
    [
        (np.eye(3)[:2], np.zeros(3), [0.5], {}, "W"),
        (np.eye(4), np.zeros(4), [0.5], {}, "W"),
        (np.eye(3), np.zeros(4), [0.5], {}, "q"),
        (np.full((3, 3), np.nan), np.zeros(3), [0.5], {}, "W"),
        (np.eye(3), [np.inf, 0, 0], [0.5], {}, "q"),
        (np.eye(3), np.zeros(3), [-0.1], {}, "mu"),
        (np.eye(3), np.zeros(3), [0.1, 0.2], {}, "mu"),
        (np.eye(3), np.zeros(3), [0.5], {"r0": np.zeros(4)}, "r0"),
        (np.eye(3), np.zeros(3), [0.5], {"r0": [np.nan, 0, 0]}, "r0"),
        (np.eye(6), np.zeros(6), [0.5, 0.5], {"rho": [1.0, 1.0, 1.0]}, "rho"),
    ],
)
def test_bad_input_names_the_field(W, q, mu, kwargs, field) -> None:
    with pytest.raises(InputError) as err:
        fc3d_newton.solve(W, q, mu, **kwargs)
    assert err.value.field == field


@pytest.mark.parametrize(
    "kwargs",
    [{"tolerance": 1e-8}, {"formulation": "fb2"}, {"max_iter": -1}, {"rho": -1.0}, {"sigma": 2.0},
     {"sparse": "yes"}, {"time_limit": 0.0}, {"fallback": "prox"}, {"fallback": ("nsgs",)},
     {"memory": 0}, {"fb_weight": 0.0}],
)
def test_bad_options(kwargs) -> None:
    with pytest.raises(OptionError):
        fc3d_newton.solve(np.eye(3), np.array([-1.0, 0, 0]), [0.5], **kwargs)


@pytest.mark.parametrize("fallback", [(), ("fb", "prox")])
def test_no_solution_is_a_status_not_an_exception(fallback) -> None:
    """W = 0 and q_n < 0: u = q whatever r is, so u_n < 0 and no solution exists."""
    res = fc3d_newton.solve(np.zeros((3, 3)), np.array([-1.0, 0.2, 0.0]), [0.5], fallback=fallback)
    assert res.status in (Status.NOT_SOLVED, Status.MAX_ITER)
    # u = q: its modified velocity stays at distance 1/sqrt(2) * ... from K^*, whatever r is
    assert res.extras["dual_violation"] > 0.1


def test_dual_violation_matches_the_independent_check() -> None:
    from contactmp.solvers.fc3d.problem import verified_fc3d_result

    rng = np.random.default_rng(7)
    for _ in range(50):
        nc = int(rng.integers(1, 5))
        W = random_spd(rng, 3 * nc)
        q = rng.standard_normal(3 * nc)
        mu = rng.uniform(0.0, 1.2, nc) * (rng.random(nc) > 0.2)
        r = rng.standard_normal(3 * nc)
        u = W @ r + q
        ref = verified_fc3d_result(W, q, mu, r, solver="t", claimed=Status.NOT_SOLVED, tol=1e-8,
                                   iterations=0, t_start=0.0).extras["dual_violation"]
        assert fc3d_newton.dual_violation(q, mu, u) == pytest.approx(ref, rel=1e-12, abs=1e-15)


def test_iteration_and_time_limits_are_statuses() -> None:
    W, q, mu = load("Capsules-i125-1213")
    res = fc3d_newton.solve(W, q, mu, max_iter=1)
    assert res.status is Status.MAX_ITER and res.iterations == 1
    res = fc3d_newton.solve(W, q, mu, time_limit=1e-9)
    assert res.status is Status.TIME_LIMIT
    assert np.isfinite(res.residual)
