"""The PATH-like semismooth Newton method: contactmp.solvers.lcp.newton (LCP and box MCP)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from contactmp.errors import InputError, OptionError
from contactmp.result import Status
from contactmp.solvers.lcp import newton
from contactmp.solvers.lcp.problem import lcp_residual
from contactmp.solvers.lcp.newton import _lm_direction, fb_system, natural_residual, solve_mcp

#: the Siconos test LCPs shipped in the repository (tests/data/lcp)
DATA = Path(__file__).resolve().parents[2] / "data" / "lcp"
NO_SOLUTION = "lcp_Pang_isolated_sol_perturbed"  # w_2 = -z_1 - 1 < 0 (data README)


def schedule_budget(runs: int) -> int:
    """Iterations the default restart schedule gives its first ``runs`` runs (``newton._LCP_RUNS``:
    30%, 20%, 25% of ``max_iter``, the last run the rest): the cap on a solve that ends in them."""
    max_iter = newton.Options().max_iter
    shares = [share for _, _, share in newton._LCP_RUNS]
    if runs >= len(shares):
        return max_iter
    return sum(int(round(share * max_iter)) for share in shares[:runs])


def random_p0(n: int, rank: int, rng: np.random.Generator) -> np.ndarray:
    s = rng.standard_normal((n, rank))
    k = rng.standard_normal((n, n))
    return s @ s.T + (k - k.T)


# ---------------------------------------------------------------------------------------------
# LCPs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(DATA.glob("*.npz")), ids=lambda p: p.stem)
def test_shared_lcps(path: Path) -> None:
    d = np.load(path, allow_pickle=False)
    M, q = d["M"], d["q"]
    res = newton.solve(M, q)
    if path.stem == NO_SOLUTION:
        assert res.status is not Status.SOLVED
        assert res.residual > 1e-8
    else:
        assert res.status is Status.SOLVED, res.message
        assert lcp_residual(M, q, res.x) <= 1e-8
        z, w = res.x, M @ res.x + q
        assert z.min() >= 0 and w.min() >= -1e-8


@pytest.mark.parametrize("seed", range(10))
def test_random_p0_lcps(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 60))
    M = random_p0(n, int(rng.integers(1, n + 1)), rng)
    zs = np.maximum(rng.standard_normal(n), 0)
    ws = np.maximum(rng.standard_normal(n), 0)
    ws[zs > 0] = 0
    q = ws - M @ zs  # has the (possibly degenerate) solution zs
    res = newton.solve(M, q)
    assert res.success and res.residual <= 1e-8
    # the first run (projected paths from 0) solves them: 1 to 20 iterations, the same under
    # 1-ulp perturbations of (M, q)
    assert res.extras["restarts"] == 0 and res.iterations <= schedule_budget(1)


def test_plain_fb_matches_on_a_p_matrix() -> None:
    """lam = 1 (plain FB): a P-matrix LCP has one solution; both variants find it."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((12, 12))
    M = a @ a.T + np.eye(12)
    q = rng.standard_normal(12)
    r1 = newton.solve(M, q, lam=1.0)
    r2 = newton.solve(M, q)
    assert r1.success and r2.success
    np.testing.assert_allclose(r1.x, r2.x, atol=1e-9)


def test_quadratic_local_convergence() -> None:
    """Near a nondegenerate solution the residual squares (up to a constant) step by step."""
    M = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    q = np.array([-1.0, 2.0, -3.0])
    exact = newton.solve(M, q, tol=1e-14)
    assert exact.success
    res = newton.solve(M, q, z0=exact.x + 1e-3, max_iter=4, tol=1e-15)
    assert res.residual <= 1e-12
    assert res.extras["newton_steps"] == res.iterations


# ---------------------------------------------------------------------------------------------
# Pyramid LCPs of the Trinkle et al. data sets (seed 0): rank-deficient M, zero diagonal blocks
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trinkle_lcps() -> list[tuple[np.ndarray, np.ndarray]]:
    from contactmp.formulations.pyramid_lcp import PyramidLCP
    from contactmp.models.random_problems import trinkle_dataset

    out = []
    for ds in trinkle_dataset(seed=0):
        form = PyramidLCP(ds.model)
        out.append((form.M, form.q))
    return out


def _check_lcp_solution(M: np.ndarray, q: np.ndarray, res) -> None:
    assert res.status is Status.SOLVED, res.message
    z, w = res.x, M @ res.x + q
    assert lcp_residual(M, q, z) <= 1e-8
    assert z.min() >= 0 and w.min() >= -1e-8 and abs(z @ w) <= 1e-8 * max(1.0, np.abs(z).max())


# sizes 100 to 170: the old method (no Levenberg-Marquardt step, one run) hit max_iter on all four;
# with lm = 0 they still fail (the Newton matrix is singular or the projected path ascends there,
# and the projected gradient crawls). `runs`: the runs of the restart schedule the solve may need,
# so the iteration cap is what the schedule gives those runs. 286, 310 and 318 end in run 1
# (13 to 22 iterations, unchanged under 1-4 ulp perturbations of M and q). 304 is decided by
# round-off: in about half of such perturbed copies run 1 reaches the solution (17 iterations), in
# the others it stalls at natural residual 0.89 after its 60 and run 2 (straight lines from z0)
# finishes in about 25 of its 40 (85 in all; this machine, numpy 2.4 / OpenBLAS 0.3.31). In 1 of
# 300 perturbed copies run 2 needed 41 and the solve ended at max_iter with residual 1.5e-7: the
# fixed shares can cut off a converging run (a property of the method, not of this test).
@pytest.mark.parametrize("index, runs", [(286, 1), (304, 2), (310, 1), (318, 1)])
def test_trinkle_lcps_that_used_to_fail(trinkle_lcps, index: int, runs: int) -> None:
    M, q = trinkle_lcps[index]
    assert np.linalg.matrix_rank(M) < M.shape[0]  # non-unique contact forces
    res = newton.solve(M, q)
    _check_lcp_solution(M, q, res)
    assert res.extras["restarts"] <= runs - 1, res.message
    assert res.iterations <= schedule_budget(runs), res.message
    assert res.extras["lm_steps"] > 0


def test_trinkle_restart(trinkle_lcps) -> None:
    """Data set 305 (size 120): the run from z0 = 0 along projected paths stalls (with
    restart=False the method ends at max_iter); a later run of the restart schedule solves it within
    the same max_iter, and the answer is returned in z >= 0."""
    M, q = trinkle_lcps[305]
    res = newton.solve(M, q)
    _check_lcp_solution(M, q, res)
    assert res.extras["restarts"] >= 1
    assert res.iterations <= newton.Options().max_iter  # 76 here: run 2 finishes after run 1's 60


def test_trinkle_dataset_solved_count(trinkle_lcps) -> None:
    """All 328 LCPs: Lemke (no pivot cap) solves 310, the old method (lm = 0, no restarts, polish
    only at the end) 275; this one 310 on the reference machine. The bound leaves room for the
    data sets where round-off decides which basin the globalization ends in."""
    solved = 0
    for M, q in trinkle_lcps:
        res = newton.solve(M, q)
        if res.status is Status.SOLVED:
            assert lcp_residual(M, q, res.x) <= 1e-8
            solved += 1
        else:
            assert res.residual > 1e-8
    assert solved >= 307


# ---------------------------------------------------------------------------------------------
# The Levenberg-Marquardt direction
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True])
def test_lm_direction_on_a_singular_newton_matrix(sparse: bool) -> None:
    """``(H^T H + nu I) d = -H^T Phi`` holds, and ``d`` is a descent direction of
    ``0.5 ||Phi||^2``, also when ``H`` has rank n - 2."""
    rng = np.random.default_rng(3)
    n = 9
    H = rng.standard_normal((n, n - 2)) @ rng.standard_normal((n - 2, n))
    phi = rng.standard_normal(n)
    grad = H.T @ phi
    nu = 1e-3
    d = _lm_direction(sp.csr_matrix(H) if sparse else H.copy(), grad, nu)
    assert d is not None
    np.testing.assert_allclose((H.T @ H + nu * np.eye(n)) @ d, -grad, atol=1e-9)
    assert grad @ d < 0
    # the minimizer of ||Phi + H d||^2 + nu ||d||^2: no random perturbation does better
    obj = lambda x: float(np.sum((phi + H @ x) ** 2) + nu * x @ x)  # noqa: E731
    assert all(obj(d) <= obj(d + 1e-3 * rng.standard_normal(n)) for _ in range(20))


def test_restart_runs_reach_the_unique_solution() -> None:
    """On a P-matrix LCP each run of the restart schedule (projected paths or straight lines, from
    0 or from s 1) reaches the unique solution; straight-line answers are returned in z >= 0."""
    rng = np.random.default_rng(6)
    a = rng.standard_normal((15, 15))
    M = a @ a.T + 0.1 * np.eye(15)
    q = rng.standard_normal(15)
    ref = newton.solve(M, q, restart=False, polish_every=0)
    _check_lcp_solution(M, q, ref)
    assert ref.extras["restarts"] == 0
    for free in (False, True):
        for z0 in (np.zeros(15), np.full(15, max(1.0, np.abs(q).max()))):
            box = newton._Box.make(np.zeros(15), np.full(15, np.inf))
            out = newton._run(lambda z: M @ z + q, lambda z: M, box, z0, newton.Options(), 200,
                              free=free)
            assert out.status is Status.SOLVED
            np.testing.assert_allclose(out.z, ref.x, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# MCPs with boxes
# ---------------------------------------------------------------------------------------------


def test_scalar_cubic_on_a_box() -> None:
    """F(z) = z^3 - 1 on [0, 2]: the solution is the interior root z = 1."""
    res = solve_mcp(lambda z: z**3 - 1, lambda z: np.diag(3 * z**2), [0.0], [2.0])
    assert res.success
    assert abs(res.x[0] - 1.0) <= 1e-9 and res.residual <= 1e-8


def test_two_dimensional_upper_bound_active() -> None:
    """F = (z1 - 3, z2 + z1^2 - 5) on [0, 2]^2: z1 = 2 at its upper bound with F1 = -1 <= 0,
    and z2 = 5 - 4 = 1 interior with F2 = 0."""
    F = lambda z: np.array([z[0] - 3.0, z[1] + z[0] ** 2 - 5.0])  # noqa: E731
    J = lambda z: np.array([[1.0, 0.0], [2 * z[0], 1.0]])  # noqa: E731
    res = solve_mcp(F, J, [0.0, 0.0], [2.0, 2.0])
    assert res.success
    np.testing.assert_allclose(res.x, [2.0, 1.0], atol=1e-9)
    assert res.extras["F"][0] <= -1 + 1e-9


def test_start_at_degenerate_upper_bound() -> None:
    """z0 = (2, 0) has z1 = u1 and F1 = 0 (the inner FB term is at (0, 0)); solution (1, 1)."""
    F = lambda z: np.array([z[0] - 2.0 + z[1], z[1] - 1.0])  # noqa: E731
    J = lambda z: np.array([[1.0, 1.0], [0.0, 1.0]])  # noqa: E731
    res = solve_mcp(F, J, [0.0, 0.0], [2.0, 2.0], z0=[2.0, 0.0])
    assert res.success
    np.testing.assert_allclose(res.x, [1.0, 1.0], atol=1e-9)


def test_free_upper_only_and_fixed_variables() -> None:
    """Free pair solving z1 + z2 = 1, z1 - z2 = -1 -> (0, 1); z3 <= 0 with F3 = z3 - 1 -> z3 = 0
    (F3 = -1 <= 0 at the upper bound); z4 fixed at 3 whatever F4 is."""
    F = lambda z: np.array([z[0] + z[1] - 1, z[0] - z[1] + 1, z[2] - 1, z[3] + 5])  # noqa: E731
    J = lambda z: np.array([[1.0, 1, 0, 0], [1, -1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])  # noqa: E731
    lb = [-np.inf, -np.inf, -np.inf, 3.0]
    ub = [np.inf, np.inf, 0.0, 3.0]
    res = solve_mcp(F, J, lb, ub, z0=[5.0, 5.0, -4.0, 0.0])
    assert res.success
    np.testing.assert_allclose(res.x, [0.0, 1.0, 0.0, 3.0], atol=1e-9)


def test_sparse_jacobian_box_lcp() -> None:
    """A tridiagonal (P-matrix) LCP through solve_mcp with a scipy.sparse Jacobian, upper bounds
    added; compared with the dense path."""
    n = 300
    A = sp.diags([-1.0, 2.5, -1.0], [-1, 0, 1], shape=(n, n)).tocsr()
    rng = np.random.default_rng(4)
    q = rng.standard_normal(n)
    lb, ub = np.zeros(n), np.full(n, 0.5)
    rs = solve_mcp(lambda z: A @ z + q, lambda z: A, lb, ub)
    Ad = A.toarray()
    rd = solve_mcp(lambda z: Ad @ z + q, lambda z: Ad, lb, ub)
    assert rs.success and rd.success
    assert natural_residual(rs.x, Ad @ rs.x + q, lb, ub) <= 1e-8
    np.testing.assert_allclose(rs.x, rd.x, atol=1e-8)
    assert (rs.x >= 0).all() and (rs.x <= 0.5).all() and np.isclose(rs.x, 0.5).any()


@pytest.mark.parametrize("lam", [1.0, 0.95])
def test_jacobian_element_matches_finite_differences(lam: float) -> None:
    """Away from kinks Phi is differentiable, and H must be its Jacobian (all four row types)."""
    rng = np.random.default_rng(8)
    n = 8
    A = rng.standard_normal((n, n))
    c = rng.standard_normal(n)
    F = lambda z: A @ z + np.sin(z) + c  # noqa: E731
    J = lambda z: A + np.diag(np.cos(z))  # noqa: E731
    lb = np.array([0.0, 0.0, -1.0, -np.inf, -np.inf, 0.5, -2.0, 1.0])
    ub = np.array([np.inf, 1.0, 1.0, 0.0, np.inf, 3.0, np.inf, 1.0])
    z = rng.uniform(-0.5, 0.5, n) + np.array([0.3, 0.4, 0, -0.7, 0, 1.5, 0, 0])
    phi, H = fb_system(z, F, J, lb, ub, lam)
    h = 1e-6
    fd = np.empty((n, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = h
        fd[:, j] = (fb_system(z + e, F, J, lb, ub, lam)[0] - fb_system(z - e, F, J, lb, ub, lam)[0]) / (2 * h)
    np.testing.assert_allclose(H, fd, atol=1e-6)
    np.testing.assert_allclose(phi[7], z[7] - 1.0)  # fixed row


def test_phi_vanishes_exactly_at_solutions() -> None:
    F = lambda z: np.array([z[0] - 3.0, z[1] + z[0] ** 2 - 5.0])  # noqa: E731
    J = lambda z: np.array([[1.0, 0.0], [2 * z[0], 1.0]])  # noqa: E731
    phi, _ = fb_system([2.0, 1.0], F, J, [0, 0], [2, 2])
    np.testing.assert_allclose(phi, 0.0, atol=1e-15)
    phi, _ = fb_system([1.5, 1.0], F, J, [0, 0], [2, 2])
    assert np.abs(phi).max() > 0.1


def test_no_solution_is_not_claimed() -> None:
    """MCP on [0, inf) with F(z) = -1 has no solution (z = 0 needs F >= 0, z > 0 needs F = 0)."""
    res = solve_mcp(lambda z: -np.ones(1), lambda z: np.zeros((1, 1)), [0.0], [np.inf], max_iter=30)
    assert res.status is not Status.SOLVED and res.residual > 1e-8


# ---------------------------------------------------------------------------------------------
# Input and options
# ---------------------------------------------------------------------------------------------


def test_bad_lcp_input_names_the_field() -> None:
    with pytest.raises(InputError) as e:
        newton.solve(np.ones((2, 3)), np.ones(2))
    assert e.value.field == "M"
    with pytest.raises(InputError) as e:
        newton.solve(np.eye(2), [np.inf, 1.0])
    assert e.value.field == "q"
    with pytest.raises(InputError) as e:
        newton.solve(np.eye(2), np.ones(2), z0=np.ones(3))
    assert e.value.field == "z0"


def test_bad_mcp_input_names_the_field() -> None:
    F = lambda z: z  # noqa: E731
    J = lambda z: np.eye(z.shape[0])  # noqa: E731
    with pytest.raises(InputError) as e:
        solve_mcp(F, J, [0.0, 1.0], [1.0, 0.0])
    assert e.value.field == "ub"
    with pytest.raises(InputError) as e:
        solve_mcp(F, J, [0.0, np.nan], [1.0, 1.0])
    assert e.value.field == "lb"
    with pytest.raises(InputError) as e:
        solve_mcp(lambda z: np.ones(3), J, [0.0, 0.0], [1.0, 1.0])
    assert e.value.field == "F"
    with pytest.raises(InputError) as e:
        solve_mcp(F, lambda z: np.eye(3), [0.0, 0.0], [1.0, 1.0], z0=[0.5, 0.5])
    assert e.value.field == "jac"
    with pytest.raises(InputError) as e:
        solve_mcp(F, J, [0.0, 0.0], [1.0], z0=None)
    assert e.value.field == "ub"
    with pytest.raises(InputError) as e:
        solve_mcp("F", J, [0.0], [1.0])
    assert e.value.field == "F"


def test_bad_options() -> None:
    with pytest.raises(OptionError):
        newton.solve(np.eye(2), -np.ones(2), sigma=2.0)
    with pytest.raises(OptionError):
        newton.solve(np.eye(2), -np.ones(2), memmory=3)
    with pytest.raises(OptionError):
        newton.solve(np.eye(2), -np.ones(2), p=2.0)
    for bad in (dict(restart=0.5), dict(restart="yes"), dict(lm=-1.0), dict(free_memory=0),
                dict(polish_every=-1)):
        with pytest.raises(OptionError):
            newton.solve(np.eye(2), -np.ones(2), **bad)


def test_registry_entry() -> None:
    from contactmp.solvers.registry import lcp_solver

    assert newton.NAME == "newton"
    res = lcp_solver("newton")(np.eye(3), -np.ones(3))
    np.testing.assert_allclose(res.x, np.ones(3), atol=1e-12)


# ---------------------------------------------------------------------------------------------
# The compiled LCP run (solvers/lcp/_newton_kernels.py) against the reference iteration
# ---------------------------------------------------------------------------------------------


def _kernel_run(M, q, z0, max_iter, free, polish_every, tried=None):
    from contactmp.solvers.lcp import _newton_kernels as K

    o = newton._DEFAULT_OPTIONS
    if tried is None:
        tried = np.zeros((max_iter + 2, q.shape[0]), dtype=bool)
    return K.run_lcp(M, q, z0, max_iter, free, o.free_memory if free else o.memory, o.tol,
                     o.sigma, o.beta, o.rho, o.p, o.lam, o.lm, newton._LM_MAX, newton._LM_FACTOR,
                     newton._MIN_NEWTON_STEP, polish_every, newton._POLISH_DROP, tried,
                     np.zeros(1, dtype=np.int64))


def _compare_runs(M, q, free: bool, max_iter: int, atol: float = 1e-10) -> None:
    n = q.shape[0]
    box = newton._Box.make(np.zeros(n), np.full(n, np.inf))
    ref = newton._run(lambda z: M @ z + q, lambda z: M, box, np.zeros(n), newton.Options(),
                      max_iter, free=free, memory=10 if free else 5)
    z, w, code, k, n_newton, n_lm, n_grad, psi, res = _kernel_run(M, q, np.zeros(n), max_iter,
                                                                   free, 0)
    assert newton._KERNEL_STATUS[code] is ref.status
    assert k == ref.iterations
    assert (n_newton, n_lm, n_grad) == tuple(ref.extras[key] for key in
                                             ("newton_steps", "lm_steps", "gradient_steps"))
    np.testing.assert_allclose(z, ref.z, rtol=1e-9, atol=atol)
    np.testing.assert_allclose(w, M @ z + q, rtol=1e-12, atol=1e-12)
    assert psi == pytest.approx(ref.extras["merit"], rel=1e-6, abs=1e-20)


@pytest.mark.parametrize("free", [False, True])
@pytest.mark.parametrize("stem", ["lcp_CPS_2", "lcp_CPS_4", "lcp_exp_murty2", "lcp_mmc",
                                  "lcp_enum_fails", "lcp_inf_sol_perturbed"])
def test_compiled_run_takes_the_reference_steps(stem: str, free: bool) -> None:
    """Without polishing, the compiled run and ``_run`` (the MCP iteration with ``F = M z + q``)
    take the same Newton / LM / gradient steps to the same iterate (to round-off)."""
    d = np.load(DATA / f"{stem}.npz", allow_pickle=False)
    _compare_runs(np.ascontiguousarray(d["M"], dtype=float), np.asarray(d["q"], dtype=float),
                  free, 200)


@pytest.mark.parametrize("seed", range(4))
def test_compiled_run_on_degenerate_p0_lcps(seed: int) -> None:
    """Rank-deficient P0 LCPs that start degenerate (the De Luca-Facchinei-Kanzow limit at
    z_i = w_i = 0): same steps as ``_run`` for the first iterations."""
    rng = np.random.default_rng(200 + seed)
    n = 12
    M = random_p0(n, 5, rng)
    zs = np.maximum(rng.standard_normal(n), 0)
    ws = np.maximum(rng.standard_normal(n), 0)
    ws[zs > 0] = 0
    q = ws - M @ zs
    q[:3] = 0.0  # z_i = w_i = 0 at the start for i with q_i = 0: degenerate rows
    _compare_runs(M, q, False, 3)


@pytest.mark.parametrize("size, seed", [(15, 0), (20, 3), (30, 1)])
def test_compiled_run_on_pyramid_lcps(size: int, seed: int) -> None:
    """Pyramid LCPs (singular Newton matrices, LM steps): the first four steps agree with
    ``_run``. Later the runs may part: on a singular ``H`` round-off (here LAPACK from SciPy's
    build with Cholesky for the LM system, there NumPy's with LU) picks the direction."""
    from contactmp.formulations.pyramid_lcp import random_pyramid_lcp

    M, q = random_pyramid_lcp(size, seed, mu=0.5)
    _compare_runs(M, q, False, 4, atol=1e-8)


def _polish_numpy(M: np.ndarray, q: np.ndarray, z: np.ndarray) -> np.ndarray | None:
    """The active-set polish written in plain numpy (the reference of the compiled one)."""
    w = M @ z + q
    basis = z > w
    cand = np.zeros_like(z)
    if basis.any():
        Mbb = M[np.ix_(basis, basis)]
        try:
            zb = np.linalg.solve(Mbb, -q[basis])
        except np.linalg.LinAlgError:
            zb = np.linalg.lstsq(Mbb, -q[basis], rcond=None)[0]
        if not np.isfinite(zb).all():
            return None
        cand[basis] = np.maximum(zb, 0.0)
    w_c = M @ cand + q
    if np.min(w_c[~basis], initial=0.0) < -1e-9 * (1.0 + float(np.max(np.abs(q)))):
        return None
    return cand


def test_compiled_polish_matches_polish_lcp() -> None:
    """The compiled polish (which polish_lcp calls) gives the plain-numpy polish's candidate,
    also with a singular basis matrix."""
    from contactmp.solvers.lcp import _newton_kernels as K
    from contactmp.solvers.lcp.problem import polish_lcp

    rng = np.random.default_rng(7)
    for trial in range(30):
        n = int(rng.integers(2, 15))
        M = random_p0(n, int(rng.integers(1, n + 1)), rng)
        zs = np.maximum(rng.standard_normal(n), 0)
        q = np.maximum(rng.standard_normal(n), 0) * (zs == 0) - M @ zs
        z = zs + 1e-3 * rng.standard_normal(n) * (trial % 3 != 0)
        ref = _polish_numpy(M, q, z)
        found, cand = K.polish(M, q, z)
        assert found == (ref is not None)
        via = polish_lcp(M, q, z)
        assert (via is not None) == found
        if found:
            np.testing.assert_allclose(cand, ref, rtol=1e-8, atol=1e-10)
            np.testing.assert_array_equal(via, cand)


def test_compiled_linear_algebra() -> None:
    """gram = H^T H (both triangles), LU reports singular matrices, the SPD solve falls back to
    LU on an indefinite matrix."""
    from contactmp.solvers.lcp import _newton_kernels as K

    rng = np.random.default_rng(8)
    h = rng.standard_normal((7, 7))
    b = rng.standard_normal(7)
    np.testing.assert_allclose(K.gram(h), h.T @ h, rtol=1e-13, atol=1e-13)
    ok, x = K.lu_solve(h, b)
    assert ok
    np.testing.assert_allclose(h @ x, b, atol=1e-10)
    assert not K.lu_solve(np.zeros((3, 3)), np.ones(3))[0]
    indefinite = np.diag([1.0, -2.0, 3.0])
    ok, x = K.spd_solve(indefinite, np.ones(3))
    assert ok
    np.testing.assert_allclose(x, [1.0, -0.5, 1.0 / 3.0])
    spd = h.T @ h + np.eye(7)
    ok, x = K.spd_solve(spd, b)
    assert ok
    np.testing.assert_allclose(spd @ x, b, atol=1e-10)


def test_default_options_fast_path() -> None:
    """solve(M, q) with no options gives what explicit default options give."""
    d = np.load(DATA / "lcp_tobenna.npz", allow_pickle=False)
    a = newton.solve(d["M"], d["q"])
    b = newton.solve(d["M"], d["q"], options=newton.Options(), tol=1e-8)
    assert a.status is b.status and a.iterations == b.iterations
    np.testing.assert_array_equal(a.x, b.x)


def test_compiled_lstsq_is_the_minimum_norm_solution() -> None:
    """On a singular system (rank 4 of 6, inconsistent right-hand side) the compiled least
    squares gives np.linalg.lstsq's minimum-norm solution."""
    from contactmp.solvers.lcp import _newton_kernels as K

    rng = np.random.default_rng(9)
    a = rng.standard_normal((6, 4)) @ rng.standard_normal((4, 6))
    a[2] = 0.0
    b = rng.standard_normal(6)
    np.testing.assert_allclose(K.lstsq(a, b), np.linalg.lstsq(a, b, rcond=None)[0],
                               rtol=1e-10, atol=1e-12)


def test_compiled_newton_direction_eliminates_inactive_rows() -> None:
    """Rows with Db_i = 0 eliminated: the same H d = -Phi and H^T H + nu I as the dense forms;
    a zero row (Da_i = Db_i = 0) is reported singular."""
    from contactmp.solvers.lcp import _newton_kernels as K

    rng = np.random.default_rng(10)
    n = 9
    M = rng.standard_normal((n, n))
    da, db, phi = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(n)
    db[[1, 4, 5]] = 0.0
    h = db[:, None] * M + np.diag(da)
    rest = np.flatnonzero(db != 0).astype(np.int64)
    ok, d = K.newton_direction(h, phi, da, db, rest, rest.size)
    assert ok
    np.testing.assert_allclose(h @ d, -phi, atol=1e-10)
    np.testing.assert_allclose(K.lm_matrix(h, da, db, 0.3, rest, rest.size),
                               h.T @ h + 0.3 * np.eye(n), rtol=1e-12, atol=1e-12)
    da[4] = 0.0
    h = db[:, None] * M + np.diag(da)
    assert not K.newton_direction(h, phi, da, db, rest, rest.size)[0]
