"""The projected gradient method for one NMDP step (solvers/pgm/projected_gradient.py): closed-form point-mass
answers (resting, sticking, sliding), first order vs zeroth order, quadratic convergence of the
projection, exact proximal QPs (KKT), the adaptive time step, and input validation.

The test problem is a point mass (theta = q_{n+1} = (x, z)) on the ground with one contact whose
polytope has the two vertices ``s(theta) (+-mu, 1)`` (the planar friction pyramid), so

    G(theta, w) = m (theta - q_n - h v_n) / h^2 + m g e_z - s(theta_z) V0 w,   V0 = [[mu, -mu], [1, 1]]
    K(theta)    = m/2 |theta - q_n|^2 / h^2            (kinetic energy at n+1)

with either a constant magnitude ``s = S`` or the pose-dependent ``s = k min(z - r, 0)^2 + relax``.
"""
from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq

from contactmp.errors import InputError
from contactmp.result import Status
from contactmp.solvers.pgm.projected_gradient import (
    adaptive_step, pgm, project, project_W, prox_qp, qp_kkt_residual, stationarity,
)

M, H, GRAV, MU, S = 1.0, 0.01, 9.81, 0.5, 20.0
V0 = np.array([[MU, -MU], [1.0, 1.0]])
EZ = np.array([0.0, 1.0])


def point_mass(q_n, v_n, *, k: float | None = None, r: float = 0.0, relax: float = 1e-3):
    """NMDPFunctions-like namespace of the point mass (constant magnitude S unless ``k``)."""
    q_n = np.asarray(q_n, float)
    v_n = np.asarray(v_n, float)
    if k is None:
        def s(th):
            return S

        def ds(th):
            return 0.0
    else:
        def s(th):
            return k * min(th[1] - r, 0.0) ** 2 + relax

        def ds(th):
            return 2.0 * k * min(th[1] - r, 0.0)

    def G(th, w):
        return M * (th - q_n - H * v_n) / H**2 + M * GRAV * EZ - s(th) * (V0 @ w)

    def G_theta(th, w):
        A = M / H**2 * np.eye(2)
        A[:, 1] -= ds(th) * (V0 @ w)  # the derivative of the vertices
        return A

    return types.SimpleNamespace(
        n=2, n_w=2, groups=[np.array([0, 1])], q_n=q_n, h=H, G=G, G_theta=G_theta,
        G_theta_zo=lambda th, w: M / H**2 * np.eye(2), G_w=lambda th: -s(th) * V0,
        K=lambda th: 0.5 * M * float(np.sum((th - q_n) ** 2)) / H**2,
        K_grad=lambda th: M * (th - q_n) / H**2, K_hess=lambda th: M / H**2 * np.eye(2), s=s)


def stick_weights(v_n, s):
    """theta = q_n (K = 0): the force m g e_z - m v_n / h must be s V0 w."""
    return np.linalg.solve(V0, M * GRAV * EZ - M * np.asarray(v_n) / H) / s


# ------------------------------------------------------------------------------ closed forms


@pytest.mark.parametrize("v_n", [(0.0, 0.0), (0.02, 0.0), (-0.03, -0.01)])
def test_resting_and_sticking_closed_form(v_n):
    # |v_x| <= mu g h = 0.049: the pyramid can stop the mass in one step, theta = q_n, K = 0
    fns = point_mass([0.3, 0.0], v_n)
    w_star = stick_weights(v_n, S)
    assert np.all(w_star > 0) and w_star.sum() < 1
    r = pgm(fns, tol_d=1e-10)
    assert r.status is Status.SOLVED, r.message
    np.testing.assert_allclose(r.x, fns.q_n, atol=1e-8)
    np.testing.assert_allclose(r.extras["w"], w_star, atol=1e-8)
    assert r.residual <= 1e-8 and r.residuals["stationarity"] <= 1e-8 and r.objective <= 1e-12


def test_sliding_closed_form():
    # v_n = (0.2, 0): sliding. With b = h S / m the reduced problem is min |v+|^2,
    # v+ = (v_x + b mu (w1 - w2), -h g + b (w1 + w2)); at w1 = 0 the minimizer over w2 is
    # w2 = (mu v_x + h g) / (b (1 + mu^2)), and w1 = 0 is optimal iff d|v+|^2/dw1 >= 0 there.
    v_x = 0.2
    b = H * S / M
    w2 = (MU * v_x + H * GRAV) / (b * (1.0 + MU**2))
    v_plus = np.array([v_x - b * MU * w2, -H * GRAV + b * w2])
    assert 0 < w2 < 1 and MU * v_plus[0] + v_plus[1] > 0  # strict complementarity at w1 = 0
    fns = point_mass([0.0, 0.0], [v_x, 0.0])
    r = pgm(fns, tol_d=1e-10)
    assert r.status is Status.SOLVED, r.message
    np.testing.assert_allclose(r.extras["w"], [0.0, w2], atol=1e-8)
    np.testing.assert_allclose(r.x, fns.q_n + H * v_plus, atol=1e-10)
    assert abs(r.objective - 0.5 * M * v_plus @ v_plus) <= 1e-12


def test_default_options_reach_closed_form():
    # the defaults (tol_d = 1e-8, tol_decrease = 1e-6, beta0 = 1, eta = 1.5, beta_min = 1e-4)
    fns = point_mass([0.0, 0.0], [0.02, 0.0])
    r = pgm(fns)
    assert r.status is Status.SOLVED, r.message
    np.testing.assert_allclose(r.extras["w"], stick_weights([0.02, 0.0], S), atol=2e-8)
    assert r.iterations <= 30
    assert r.extras["K_history"] == sorted(r.extras["K_history"], reverse=True)  # monotone: only decreases accepted


# ------------------------------------------------------------------------ first vs zeroth order


def test_first_and_zeroth_order_identical_for_constant_magnitude():
    # constant polytope: G_theta == G_theta_zo, so PGM and ZOPGM are the same method
    fns = point_mass([0.0, 0.0], [0.2, -0.1])
    a = pgm(fns, zeroth_order=False)
    b = pgm(fns, zeroth_order=True)
    assert a.status is Status.SOLVED and b.status is Status.SOLVED
    np.testing.assert_array_equal(a.extras["w"], b.extras["w"])
    np.testing.assert_array_equal(a.x, b.x)
    assert (a.iterations, a.extras["projections"]) == (b.iterations, b.extras["projections"])


def test_pose_dependent_stop_in_one_step():
    # s(z) = 1e4 min(z, 0)^2 + 1e-3 at z = -0.04 (s = 16): the mass can be stopped, K* = 0 at
    # theta = q_n with w from the 2x2 solve; both methods reach it, ZOPGM needs more Newton steps
    fns = point_mass([0.0, -0.04], [0.01, -0.005], k=1e4)
    w_star = stick_weights([0.01, -0.005], fns.s(fns.q_n))
    fo = pgm(fns, tol_d=1e-10)
    zo = pgm(fns, zeroth_order=True, tol_d=1e-10)
    for r in (fo, zo):
        assert r.status is Status.SOLVED, r.message
        np.testing.assert_allclose(r.x, fns.q_n, atol=1e-10)
        np.testing.assert_allclose(r.extras["w"], w_star, atol=1e-8)
    assert zo.extras["projections"] > 2 * fo.extras["projections"]


def test_pose_dependent_sliding_vertex():
    # fast and falling: the optimum is the vertex w = (0, 1) (full normal force and full friction);
    # theta_z solves m (z - z_n - h v_z)/h^2 + m g - s(z) = 0 (one root: the left side increases)
    q_n, v_n = np.array([0.0, -0.04]), np.array([2.0, -0.5])
    fns = point_mass(q_n, v_n, k=1e4)
    z = brentq(lambda z: M * (z - q_n[1] - H * v_n[1]) / H**2 + M * GRAV - fns.s([0.0, z]),
               -1.0, 1.0, xtol=1e-15)
    x = q_n[0] + H * v_n[0] - H**2 / M * MU * fns.s([0.0, z])
    fo = pgm(fns)
    zo = pgm(fns, zeroth_order=True)
    for r in (fo, zo):
        assert r.status is Status.SOLVED, r.message
        np.testing.assert_allclose(r.extras["w"], [0.0, 1.0], atol=1e-12)
        np.testing.assert_allclose(r.x, [x, z], atol=1e-12)
    # strict complementarity at the vertex: with g = grad K(theta(w)), g + lam_s (1, 1) - lam_0 e_0
    # = 0 gives the multipliers of 1^T w <= 1 and of w_0 >= 0; both are > 0
    from contactmp.solvers.pgm.projected_gradient import _reduced_derivatives
    g, _ = _reduced_derivatives(fns, fo.x, fo.extras["w"], False)
    lam_s = -g[1]
    assert lam_s > 0 and g[0] + lam_s > 0
    assert fo.iterations == zo.iterations and zo.extras["projections"] > fo.extras["projections"]


# --------------------------------------------------------------------------------- projection


def test_projection_converges_quadratically_and_zo_linearly():
    fns = point_mass([0.0, -0.04], [0.01, -0.005], k=1e4)
    w = np.array([0.3, 0.6])
    res: list[float] = []
    th, ok, it = project(fns, fns.q_n, w, tol=1e-12, residuals=res)
    assert ok and np.max(np.abs(fns.G(th, w))) < 1e-12 and it == 3
    # e_{k+1} / e_k^2 stays bounded (measured 7.83e-5, 7.84e-5) while e drops from 4.1 to 1e-10
    assert res[1] / res[0] ** 2 < 1e-4 and res[2] / res[1] ** 2 < 1e-4
    res_zo: list[float] = []
    th_zo, ok, it_zo = project(fns, fns.q_n, w, zeroth_order=True, tol=1e-12, residuals=res_zo)
    assert ok and it_zo > 3 * it
    np.testing.assert_allclose(th_zo, th, atol=1e-14)
    rates = [res_zo[k + 1] / res_zo[k] for k in range(1, 8)]  # linear, rate ~0.071
    assert max(rates) < 0.1 and min(rates) > 0.05


def test_projection_failure_is_a_status():
    # G(theta) = theta^2 + 1 has no root: the projection reports failure, PGM numerical_error
    fns = types.SimpleNamespace(
        n=1, n_w=1, groups=[np.array([0])], q_n=np.array([0.5]), h=0.01,
        G=lambda th, w: th**2 + 1.0 + 0.0 * w, G_theta=lambda th, w: np.array([[2 * th[0]]]),
        G_theta_zo=lambda th, w: np.array([[2 * th[0]]]), G_w=lambda th: np.zeros((1, 1)),
        K=lambda th: float(th @ th), K_grad=lambda th: 2 * th, K_hess=lambda th: 2 * np.eye(1))
    _, ok, _ = project(fns, fns.q_n, np.zeros(1))
    assert not ok
    r = pgm(fns)
    assert r.status is Status.NUMERICAL_ERROR and "projection" in r.message


# ------------------------------------------------------------------------------- proximal QP


def random_feasible_w(rng, groups, n_w):
    w = rng.uniform(0, 1, n_w) * (rng.uniform(size=n_w) < 0.6)  # some exact zeros
    for g in groups:
        if rng.uniform() < 0.4:
            w[g] /= max(w[g].sum(), 1e-3)  # on the face 1^T w_i = 1
            w[g] = project_W(w[g], [np.arange(g.size)])
        else:
            w[g] *= rng.uniform(0, 1) / max(w[g].sum(), 1.0)
    return w


@pytest.mark.parametrize("seed", range(40))
def test_prox_qp_kkt_on_random_instances(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, size=rng.integers(1, 5))
    n_w = int(sizes.sum()) + 1  # one index in no group: w >= 0 only
    groups = np.split(np.arange(n_w - 1), np.cumsum(sizes)[:-1])
    w = random_feasible_w(rng, groups, n_w)
    J = rng.standard_normal((max(1, n_w // 2), n_w))
    beta = 10.0 ** rng.uniform(-4, 2)
    P = J.T @ J + beta * np.eye(n_w)
    g = rng.standard_normal(n_w) * 10.0 ** rng.uniform(-2, 2)
    d, lam, ok, _ = prox_qp(g, P, w, groups)
    assert ok
    assert qp_kkt_residual(P, g, w, groups, d, lam) < 1e-10 * max(1.0, np.max(np.abs(g)))
    x = w + d
    assert x.min() >= 0.0 and all(x[gr].sum() <= 1.0 + 1e-15 for gr in groups)
    # the objective is no larger than at a few projected random points (convexity sanity check)
    f = g @ d + 0.5 * d @ P @ d
    for _ in range(5):
        y = project_W(w + rng.standard_normal(n_w), groups) - w
        assert f <= g @ y + 0.5 * y @ P @ y + 1e-12


def test_prox_qp_after_a_full_step_on_an_ill_conditioned_spider_frame():
    """A proximal QP of a 50 ms spider frame (cond(P) ~ 5.6e6, |g| ~ 600, weights at 1e-17): after
    its first full step the KKT solve returns a step of 1.8e-12 (rounding), which the method used to
    take again and again up to its iteration limit ("proximal QP did not converge"). Both the
    Python method and the compiled one now stop on the multipliers, with the KKT conditions
    verified."""
    from contactmp.solvers.pgm._kernels import _prox_qp

    data = np.load(Path(__file__).resolve().parents[1] / "data" / "prox_qp_spider_frame.npz")
    g, P, w, sizes = data["g"], data["P"], data["w"], data["group_sizes"]
    groups = np.split(np.arange(w.size), np.cumsum(sizes)[:-1])
    d, lam, ok, iterations = prox_qp(g, P, w, groups)
    assert ok and iterations <= 10
    # the rounding of P d bounds the KKT residual: eps |P| |d| ~ 3e-10 here (measured 5e-13)
    assert qp_kkt_residual(P, g, w, groups, d, lam) < 4 * np.finfo(float).eps * np.max(np.abs(P)) * np.max(np.abs(d))
    d_compiled, ok_compiled = _prox_qp(g, P, w, np.arange(w.size), np.concatenate([[0], np.cumsum(sizes)]))
    assert ok_compiled
    np.testing.assert_allclose(d_compiled, d, rtol=0, atol=1e-12)


def test_project_W_and_stationarity():
    groups = [np.array([0, 1, 2])]
    np.testing.assert_allclose(project_W(np.array([0.2, -1.0, 0.3]), groups), [0.2, 0.0, 0.3])
    np.testing.assert_allclose(project_W(np.array([1.0, 1.0, -1.0]), groups), [0.5, 0.5, 0.0])
    # min -w_0 over W: optimum w = e_0, stationary; w = 0 is not
    g = np.array([-1.0, 0.0, 0.0])
    assert stationarity(np.array([1.0, 0.0, 0.0]), g, groups) == 0.0
    assert stationarity(np.zeros(3), g, groups) == 1.0


# ---------------------------------------------------------------------------- adaptive step


def test_adaptive_step_halves_above_threshold():
    calls = []

    def step_fn(t, h):
        calls.append(h)
        return t + h, h <= 0.003  # fails above 3 ms

    r = adaptive_step(step_fn, 0.01, 0.0)
    assert r.status is Status.SOLVED
    assert r.extras["substeps"] == [0.0025] * 4 and r.extras["h_smallest"] == 0.0025
    assert r.extras["state"] == pytest.approx(0.01)
    assert calls == [0.01, 0.005, 0.0025, 0.0025, 0.005, 0.0025, 0.0025] and r.iterations == 7


def test_adaptive_step_state_dependent_substeps():
    # a step longer than 1 ms fails when an event (a contact change at t = 4 ms) lies strictly
    # inside it: 10 ms -> 5 ms (fails) -> 2.5 ok, 2.5 (fails) -> 1.25 ok, 1.25 (fails) ->
    # 0.625, 0.625; then the second 5 ms half is fine
    def step_fn(t, h):
        return t + h, h <= 0.001 + 1e-15 or not (t + 1e-12 < 0.004 < t + h - 1e-12)

    r = adaptive_step(step_fn, 0.01, 0.0)
    assert r.status is Status.SOLVED
    assert r.extras["substeps"] == pytest.approx([0.0025, 0.00125, 0.000625, 0.000625, 0.005])
    assert r.extras["state"] == pytest.approx(0.01) and r.extras["h_smallest"] == pytest.approx(0.000625)


def test_adaptive_step_gives_up_below_h_min():
    r = adaptive_step(lambda s, h: (s, False), 0.01, "x", h_min=1e-5)
    assert r.status is Status.NUMERICAL_ERROR and r.extras["substeps"] == [] and r.extras["state"] == "x"
    assert r.extras["h_smallest"] == pytest.approx(0.01 / 2**9)  # 1.95e-5; the next, 9.8e-6, is below h_min


# ------------------------------------------------------------------------------ input errors


@pytest.mark.parametrize("kwargs, field", [
    ({"eta": 1.0}, "eta"), ({"beta0": -1.0}, "beta0"), ({"beta_min": 0.0}, "beta_min"),
    ({"beta_max": 1e-5}, "beta_max"), ({"tol_d": float("nan")}, "tol_d"),
    ({"max_outer": 0}, "max_outer"), ({"w0": np.array([0.7, 0.7])}, "w0"),
    ({"theta0": np.zeros(3)}, "theta0"),
])
def test_bad_options_name_the_field(kwargs, field):
    with pytest.raises(InputError) as e:
        pgm(point_mass([0.0, 0.0], [0.0, 0.0]), **kwargs)
    assert e.value.field == field


def test_bad_max_polish_names_the_field():
    for bad in (-1, 1.5, True):
        with pytest.raises(InputError) as e:
            pgm(point_mass([0.0, 0.0], [0.0, 0.0]), max_polish=bad)
        assert e.value.field == "max_polish"


def test_steps_below_tol_d_reach_stationarity():
    """With ``tol_d = 1e-3`` the proximal step of the sticking point mass falls below ``tol_d`` while
    the projected gradient is still 1.5e-5: stopping there fails the check (``max_polish = 0``);
    the steps below ``tol_d`` (taken without the decrease test) reach the closed-form answer."""
    fns = point_mass([0.0, 0.0], [0.02, 0.0])
    stopped = pgm(fns, tol_d=1e-3, max_polish=0)
    assert stopped.status is Status.NOT_SOLVED and stopped.residuals["stationarity"] > 1e-5
    res = pgm(fns, tol_d=1e-3)
    assert res.status is Status.SOLVED and res.residuals["stationarity"] <= 1e-6
    assert 1 <= res.iterations - stopped.iterations <= 5
    # the reduced curvature along the pyramid is ~0.04, so a projected gradient below 1e-6 puts w
    # within 1e-6 / 0.04 = 2.5e-5 of the closed form, and theta = q_n + h^2 s V0 dw / m within 1e-7
    np.testing.assert_allclose(res.extras["w"], stick_weights([0.02, 0.0], S), atol=5e-5)
    np.testing.assert_allclose(res.x, fns.q_n, atol=1e-7)
    assert "step below tol_d" in res.message


def test_bad_problem_name_the_field():
    fns = point_mass([0.0, 0.0], [0.0, 0.0])
    fns.groups = [np.array([0, 1]), np.array([1])]
    with pytest.raises(InputError) as e:
        pgm(fns)
    assert e.value.field == "groups"
    del fns.K_hess
    with pytest.raises(InputError) as e:
        pgm(fns)
    assert e.value.field == "fns"
    with pytest.raises(InputError) as e:
        adaptive_step(lambda s, h: (s, True), 0.01, 0.0, h_min=-1.0)
    assert e.value.field == "h_min"


# ------------------------------------------------------------- against IPOPT on a real model


HOPPER_CASES = [  # (qd_n, h): landing with sideways speed / settling / sliding fast
    ((0.3, -0.5, 0.1, 0.0, 0.0), 0.01), ((0.3, -0.5, 0.1, 0.0, 0.0), 0.05),
    ((0.0, -0.1, 0.0, 0.0, 0.0), 0.05), ((1.5, -1.0, 0.2, 0.0, 0.0), 0.05),
]


@pytest.fixture(scope="module")
def hopper_nmdp():
    nmdp = pytest.importorskip("contactmp.formulations.nmdp")
    from contactmp.models.systems import hopper_2d

    system = hopper_2d()
    # pose-dependent pyramid: s = 1e5 min(phi, 0)^2 + 1 [N]; stable PD on (l, alpha)
    form = nmdp.NMDP(system, stiffness=1e5, relax=1.0, kp=[200.0, 20.0], kd=[5.0, 1.0])
    q_n = np.array(system.q_nominal, float)
    q_n[1] -= 0.01  # the foot 1 cm into the ground
    return form, q_n


@pytest.mark.parametrize("qd_n, h", HOPPER_CASES)
def test_pgm_agrees_with_ipopt_on_hopper(hopper_nmdp, qd_n, h):
    form, q_n = hopper_nmdp
    fns = form.functions(q_n, qd_n, h)
    r = pgm(fns)
    ip = form.solve_ipopt(q_n, qd_n, h, tol=1e-8)
    assert r.status is Status.SOLVED, r.message
    assert ip.status is Status.SOLVED, ip.message
    assert abs(r.objective - ip.objective) <= 1e-9 * max(1.0, ip.objective)
    np.testing.assert_allclose(r.extras["w"], ip.extras["w"], atol=1e-6)
    np.testing.assert_allclose(r.x, ip.x, atol=1e-9)
    np.testing.assert_allclose(fns.forces(r.x, r.extras["w"]), ip.extras["forces"], atol=1e-4)


def test_zopgm_agrees_with_ipopt_on_hopper_small_step(hopper_nmdp):
    form, q_n = hopper_nmdp
    qd_n, h = HOPPER_CASES[0]
    fns = form.functions(q_n, qd_n, h)
    fo, zo = pgm(fns), pgm(fns, zeroth_order=True)
    ip = form.solve_ipopt(q_n, qd_n, h, tol=1e-8)
    assert zo.status is Status.SOLVED and ip.status is Status.SOLVED
    np.testing.assert_allclose(zo.extras["w"], ip.extras["w"], atol=1e-6)
    np.testing.assert_allclose(zo.x, ip.x, atol=1e-9)
    assert zo.extras["projections"] > 2 * fo.extras["projections"]  # quasi-Newton projections: linear convergence


# ------------------------------------------------------------- the compiled loop (tapes)


@pytest.fixture(scope="module")
def spider_nmdp():
    from contactmp.formulations.nmdp import NMDP
    from contactmp.models.legged import spider

    system = spider()
    form = NMDP(system, stiffness=2.5e7, relax=1.0, kp=2000.0, kd=20.0)
    rng = np.random.default_rng(0)
    q_n = np.array(system.q_nominal, float)
    q_n[1] -= 0.003  # every foot 3 mm into the ground (a loaded frame)
    qd_n = np.concatenate([[0.05, -0.1, 0.02], rng.normal(scale=0.1, size=16)])
    return form, q_n, qd_n


@pytest.mark.parametrize("h, zeroth_order, tol_d", [(0.01, False, 1e-8), (0.05, False, 1e-8), (0.01, True, 1e-8),
                                                   (0.05, False, 1e-4)])
def test_compiled_loop_equals_python_loop_on_spider_frame(spider_nmdp, h, zeroth_order, tol_d):
    """pgm on the tapes (numba) takes the Python loop's steps: the same accepted and rejected steps,
    projections and verdict, and the same answer to rounding (with ``tol_d = 1e-4`` through steps
    below ``tol_d``)."""
    import dataclasses

    form, q_n, qd_n = spider_nmdp
    fns = form.functions(q_n, qd_n, h)
    assert fns.tapes is not None
    opts = {"beta_max": 1e4} if zeroth_order else {}
    opts["tol_d"] = tol_d
    a = pgm(fns, q_n + h * qd_n, zeroth_order=zeroth_order, **opts)
    b = pgm(dataclasses.replace(fns, tapes=None), q_n + h * qd_n, zeroth_order=zeroth_order, **opts)
    assert a.status is b.status and a.message == b.message
    assert (a.iterations, a.extras["qp_solves"]) == (b.iterations, b.extras["qp_solves"])
    # a polish step is taken when it lowers ||G|| at ~1e-12 N: a rounding decision, at most one per
    # projection (the initial one and one per proximal QP)
    assert abs(a.extras["projections"] - b.extras["projections"]) <= 1 + a.extras["qp_solves"]
    np.testing.assert_allclose(a.x, b.x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.extras["w"], b.extras["w"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.extras["K_history"], b.extras["K_history"], rtol=1e-12)
    if not zeroth_order:
        assert a.status is Status.SOLVED, a.message
