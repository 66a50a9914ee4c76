"""Drumwright's compliant step: closed-form particle answers, redundancy, the unilateral QP/LCP."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from contactmp.errors import InputError, OptionError
from contactmp.formulations.compliant_qp import CompliantQP, compliant_step
from contactmp.result import Status
from contactmp.solvers import solve_lcp
from contactmp.solvers.cone_qp.qp import available_qp_solvers

g = 9.81


def _particle_map(m, K, B, F, h):
    """The scheme on x'' m = F + lambda, lambda = -K x1 - B v1, x1 = x0 + h v1, as z1 = T z0 + b."""
    den = m + h * (h * K + B)
    T = np.array([[1 - h * h * K / den, h * m / den], [-h * K / den, m / den]])
    b = np.array([h * h * F / den, h * F / den])
    return T, b


def _simulate_particle(m, K, B, F, h, x0, v0, steps, **kw):
    x, v, lams = x0, v0, []
    for _ in range(steps):
        r = compliant_step([[m]], [F], [v], [[1.0]], [x], K, B, h, **kw)
        assert r.success, r.message
        v = r.extras["v1"][0]
        x = (x + h * r.extras["v1"][0])
        lams.append(r.x[0])
    return x, v, np.array(lams)


@pytest.mark.parametrize("solver", ["cholesky", "lu-Y"])
def test_particle_step_equals_closed_form_recursion(solver):
    m, K, B, h = 2.0, 400.0, 3.0, 0.01
    F = -m * g
    x0, v0, n = 0.1, -0.5, 200
    T, b = _particle_map(m, K, B, F, h)
    zs = F / K * np.array([1.0, 0.0])  # fixed point (F/K, 0)
    x, v, lams = _simulate_particle(m, K, B, F, h, x0, v0, n, solver=solver)
    z_closed = zs + np.linalg.matrix_power(T, n) @ (np.array([x0, v0]) - zs)
    np.testing.assert_allclose([x, v], z_closed, rtol=0, atol=1e-10)
    # one step: lambda = -K x1 - B v1 with x1, v1 from the affine map
    z1 = T @ np.array([x0, v0]) + b
    np.testing.assert_allclose(lams[0], -K * z1[0] - B * z1[1], rtol=1e-12)


def test_particle_converges_first_order_to_mass_spring_damper():
    m, K, B, T_end = 1.0, 100.0, 2.0, 1.0
    x0, v0, F = 0.2, 0.0, 0.0
    w0, zeta = np.sqrt(K / m), B / (2 * np.sqrt(K * m))
    wd = w0 * np.sqrt(1 - zeta**2)
    exact = np.exp(-zeta * w0 * T_end) * (x0 * np.cos(wd * T_end) + (v0 + zeta * w0 * x0) / wd * np.sin(wd * T_end))
    errs = []
    for h in (2e-3, 1e-3, 5e-4):
        T, _ = _particle_map(m, K, B, F, h)  # the recursion was checked against the solver above
        n = int(round(T_end / h))
        x = (np.linalg.matrix_power(T, n) @ [x0, v0])[0]
        errs.append(abs(x - exact))
    # spot check the solver itself at the coarsest step
    xs, _, _ = _simulate_particle(m, K, B, F, 2e-3, x0, v0, 500)
    T, _ = _particle_map(m, K, B, F, 2e-3)
    assert abs(xs - (np.linalg.matrix_power(T, 500) @ [x0, v0])[0]) < 1e-10
    ratios = [errs[0] / errs[1], errs[1] / errs[2]]
    assert all(1.8 < r < 2.2 for r in ratios), (errs, ratios)


EPS = np.finfo(float).eps


def _forward_error_bound(A: np.ndarray, c: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """A componentwise bound on ``|lam - lam*|``, ``A lam* + c = 0`` (A nonsingular).

    ``lam - lam* = A^-1 (A lam + c)`` exactly; the computed residual ``w`` is off by at most
    ``gamma_{m+1} (|A| |lam| + |c|)`` (Higham, Accuracy and Stability, Sec. 3.5), so
    ``|lam - lam*| <= |A^-1| (|w| + gamma (|A| |lam| + |c|))``. ``|A^-1|`` is computed by ``inv``
    to a relative accuracy of about ``m cond(A) eps`` (<= 1e-2 asserted): the factor 2 covers it.
    """
    m = A.shape[0]
    assert m * EPS * np.linalg.cond(A) <= 1e-2  # else lam* has no correct digit to compare
    gamma = (m + 1) * EPS / (1 - (m + 1) * EPS)
    w = A @ lam + c
    return 2.0 * np.abs(np.linalg.inv(A)) @ (np.abs(w) + gamma * (np.abs(A) @ np.abs(lam) + np.abs(c)))


def _natural_map(p: CompliantQP, lam: np.ndarray) -> np.ndarray:
    """Per row, the (unscaled) bilateral natural map of :meth:`CompliantQP.residual`:
    ``|w_i / A_ii|`` on loaded rows, ``|lam_i|`` on rows with ``h K + B = 0``."""
    out = np.abs(lam).copy()
    out[p.loaded_rows] = np.abs(p.gap_rate(lam) / p.diagA)
    return out


def _lu_natural_map_bound(p: CompliantQP, lam: np.ndarray) -> np.ndarray:
    """What LU with partial pivoting on ``Y lam = r`` guarantees for :func:`_natural_map`, per row.

    Backward error (Higham, Thm 9.4): ``|Y lam - r| <= gamma_3m P |L| |U| |lam|`` with
    ``Y = P L U`` (scipy.linalg.lu, the same getrf as numpy.linalg.solve). On an unloaded row
    ``Y_i = e_i``, ``r_i = 0``: that is the bound on ``|lam_i|``. For a loaded row,
    ``(Y lam - r)_i = (h K + B)_i w_i + sum_{j unloaded} Y_ij lam_j`` (``w = A lam + c`` on the
    loaded rows only) and ``(h K + B)_i A_ii = Y_ii``, so ``|w_i / A_ii|`` is at most
    ``(|Y lam - r|_i + sum_{j unloaded} |Y_ij| |lam_j|) / Y_ii``; forming Y, r, A, c and the
    residual adds ``gamma_k (|Y| |lam| + |r|)_i / Y_ii`` and
    ``gamma_k (D |lam| + h |U| |U|^T |lam| + |c|)_i / A_ii``. One ``gamma`` with ``k = 3m + n + 4``
    covers the rounding terms (first order in eps).
    """
    Pm, Lf, Uf = scipy.linalg.lu(p.Y)
    al = np.abs(lam)
    k = 3 * p.m + p.n + 4
    gamma = k * EPS / (1 - k * EPS)
    y_form = (Pm @ (np.abs(Lf) @ (np.abs(Uf) @ al)) + np.abs(p.Y) @ al + np.abs(p.rhs)) / np.diag(p.Y)
    bound = gamma * y_form
    idx, Ul = p.loaded_rows, np.abs(p.Ul)
    a_form = (p.D * al[idx] + p.h * Ul @ (Ul.T @ al[idx]) + np.abs(p.c)) / p.diagA
    bound[idx] += gamma * a_form
    unloaded = ~p.loaded
    bound[idx] += (np.abs(p.Y[np.ix_(idx, unloaded)]) @ al[unloaded]) / np.diag(p.Y)[idx]
    return bound


def test_Y_nonsingular_for_rank_deficient_G_and_zero_gains():
    rng = np.random.default_rng(6)
    for _ in range(50):
        n, m = 3, 6
        G = rng.normal(size=(2, n))
        G = np.vstack([G, G, G[:1] + G[1:], rng.normal(size=(1, n))])  # rank 3 < m
        L = rng.normal(size=(n, n))
        M = L @ L.T + 0.1 * np.eye(n)
        K = rng.choice([0.0, 1.0, 1e6, 1e12], size=m)
        B = rng.choice([0.0, 0.5, 1e3], size=m)
        h = float(rng.choice([1e-4, 1e-2, 0.1]))
        p = CompliantQP(M, rng.normal(size=n), rng.normal(size=n), G, rng.normal(size=m) * 1e-3, K, B, h)
        S = h * (h * K + B)
        sym = np.eye(m) + np.sqrt(S)[:, None] * p.W * np.sqrt(S)[None, :]
        # Sylvester: det Y = det(I + S^1/2 W S^1/2) >= 1; the spectra agree (all real, >= 1).
        # A backward-stable eigensolver moves eigenvalue i of the unsymmetric Y by at most
        # kappa_i ||dY||, kappa_i = 1 / |y_i^H x_i| (unit left/right eigenvectors), ||dY|| <= c(m)
        # eps ||Y|| (Wilkinson; c(m) = m^2 taken), and those of the symmetric form by c(m) eps ||sym||
        w, vl, vr = scipy.linalg.eig(p.Y, left=True, right=True)
        kappa = 1.0 / np.abs(np.sum(vl.conj() * vr, axis=0))
        order = np.argsort(w.real)
        w, kappa = w[order], kappa[order]
        ev = w.real
        tol = m * m * EPS * (np.linalg.norm(p.Y, 2) * kappa + np.linalg.norm(sym, 2))
        np.testing.assert_array_less(np.abs(ev - np.sort(np.linalg.eigvalsh(sym))), tol)
        assert np.all(np.abs(w.imag) <= tol)
        assert ev.min() >= 1 - tol[0]
        a, b = p.solve("cholesky"), p.solve("lu-Y")
        assert a.success, a.message
        # the paper's unsymmetric Y form is badly row-scaled at K = 1e12 (rows times h K + B):
        # LU on it loses digits that the symmetric D-scaled form keeps; what it keeps is LU's
        # backward error, row by row (measured residuals 1e-16 .. 6e-9, bounds 3e-14 .. 4e-7)
        nat, bound = _natural_map(p, b.x), _lu_natural_map_bound(p, b.x)
        assert np.all(nat <= bound), (nat, bound)
        # rows with h K + B = 0 carry no force: exactly 0 from the Cholesky path
        idx, scale = p.loaded_rows, max(1.0, np.abs(a.x).max())
        assert np.all(a.x[~p.loaded] == 0.0)
        if idx.size == 0:
            continue
        # Both answers solve A lam + c = 0 (A SPD, cond(A) up to ~1e12 here: a force split between
        # duplicated rows of G is fixed only by the stiff springs' compliance D). The digits they
        # share follow from the equations, not from a fixed rtol: with the exact solution lam*,
        # |lam - lam*| <= |A^-1| (|A lam + c| + rounding of the residual) for any lam
        bound_a = _forward_error_bound(p.A, p.c, a.x[idx])
        bound_b = _forward_error_bound(p.A, p.c, b.x[idx])
        diff = np.abs(a.x[idx] - b.x[idx])
        assert np.all(diff <= bound_a + bound_b), (diff, bound_a + bound_b)
        # and Cholesky is backward stable: its error is O(m eps cond(A)) relative to ||lam||
        cond_A = np.linalg.cond(p.A)
        assert bound_a.max() <= 4 * m * EPS * cond_A * scale, (bound_a.max(), cond_A)


@pytest.mark.parametrize("K,B,split_tol", [(1e4, 10.0, 1e-12), (1e12, 0.0, 1e-8)])
def test_redundant_rows_share_the_load_equally(K, B, split_tol):
    m, h, phi0, v0 = 3.0, 0.01, -1e-3, -0.2
    one = compliant_step([[m]], [-m * g], [v0], [[1.0]], [phi0], K, B, h)
    two = compliant_step([[m]], [-m * g], [v0], [[1.0], [1.0]], [phi0, phi0], K / 2, B / 2, h)
    assert one.success and two.success
    # the split lives on W's null direction, whose eigenvalue is D = 2 / (h K + B): at K = 1e12 an
    # eps-sized error in c moves the split by eps / D ~ 1e-7 N, so it holds to ~1e-9 relative;
    # the total (on range(W)) to 1e-12
    np.testing.assert_allclose(two.x, [one.x[0] / 2] * 2, rtol=split_tol)
    np.testing.assert_allclose(two.x.sum(), one.x[0], rtol=1e-12)
    np.testing.assert_allclose(two.extras["v1"], one.extras["v1"], rtol=1e-10, atol=1e-12)
    # the same stiffness on each copy: still unique and equal, total from the doubled spring
    dbl = compliant_step([[m]], [-m * g], [v0], [[1.0], [1.0]], [phi0, phi0], K, B, h)
    ref = compliant_step([[m]], [-m * g], [v0], [[1.0]], [phi0], 2 * K, 2 * B, h)
    np.testing.assert_allclose(dbl.x, [ref.x[0] / 2] * 2, rtol=split_tol)


def test_unilateral_separating_and_pressing():
    m, h, K, B = 2.0, 0.01, 1e5, 50.0
    sep = compliant_step([[m]], [-m * g], [1.0], [[1.0]], [0.01], K, B, h, kind="unilateral")
    assert sep.success and sep.x[0] == 0.0 and not sep.extras["active"][0]
    np.testing.assert_allclose(sep.extras["v1"], [1.0 - g * h], rtol=1e-14)
    press = compliant_step([[m]], [-m * g], [-0.3], [[1.0]], [-1e-3], K, B, h, kind="unilateral")
    bil = compliant_step([[m]], [-m * g], [-0.3], [[1.0]], [-1e-3], K, B, h, kind="bilateral")
    assert press.success and press.extras["active"][0] and press.x[0] > 0
    np.testing.assert_allclose(press.x, bil.x, rtol=1e-12)
    # a spring that would pull (phi > 0 after the step) carries no force
    pull = compliant_step([[m]], [0.0], [0.5], [[1.0]], [-1e-4], K, B, h, kind="unilateral")
    assert pull.x[0] == 0.0 and pull.success


def _random_unilateral(seed, n=4, m=7):
    rng = np.random.default_rng(seed)
    L = rng.normal(size=(n, n))
    M = L @ L.T + 0.5 * np.eye(n)
    G = rng.normal(size=(m, n))
    G[-1] = G[0]  # a redundant row
    phi0 = rng.normal(size=m) * 1e-2
    K = rng.uniform(1e2, 1e6, size=m)
    B = rng.uniform(0.0, 10.0, size=m)
    return CompliantQP(M, rng.normal(size=n) * 5, rng.normal(size=n), G, phi0, K, B, 0.01, "unilateral")


@pytest.mark.parametrize("seed", range(4))
def test_unilateral_qp_equals_spd_lcp(seed):
    p = _random_unilateral(seed)
    lcp = solve_lcp(p.A, p.c, solver="lemke")
    assert lcp.success
    res = p.solve()
    assert res.success, res.message
    np.testing.assert_allclose(res.x, lcp.x, rtol=0, atol=1e-10 * max(1, np.abs(lcp.x).max()))
    assert 0 < res.extras["active"].sum() < p.m  # both kinds of rows occur
    for plugin in available_qp_solvers():
        r = p.solve(plugin)
        assert r.success, (plugin, r.message)
        np.testing.assert_allclose(r.x, lcp.x, rtol=0, atol=1e-10 * max(1, np.abs(lcp.x).max()), err_msg=plugin)
        assert r.extras["raw_residual"] < 1e-5, (plugin, r.extras["raw_residual"])


def test_conic_plugins_of_this_build():
    assert {"qpoases", "osqp", "highs", "daqp"} <= set(available_qp_solvers())


def test_active_set_from_a_wrong_guess_and_mixed_kinds():
    p = _random_unilateral(11)
    ref = p.solve("qpoases")
    bad = p.solve("active-set", active=np.arange(p.m))  # everything guessed active
    assert bad.success, bad.message
    np.testing.assert_allclose(bad.x, ref.x, atol=1e-10 * max(1, np.abs(ref.x).max()))
    kinds = ["bilateral", "unilateral"] * 3 + ["unilateral"]
    q = CompliantQP(p.M, p.f, p.v0, p.G, p.phi0, p.K, p.B, p.h, kinds)
    a, b = q.solve(), q.solve("daqp")
    assert a.success and b.success
    np.testing.assert_allclose(a.x, b.x, atol=1e-10 * max(1, np.abs(a.x).max()))
    np.testing.assert_allclose(q.gap_rate(a.x)[~q.unilateral], 0, atol=1e-10)


def test_rigid_unilateral_spring_at_large_step_is_stable_and_rests_at_mg():
    m, K, B, h = 1.5, 1e12, 0.0, 0.1
    x, v = 0.05, 0.0
    xs, lams = [], []
    for _ in range(40):
        r = compliant_step([[m]], [-m * g], [v], [[1.0]], [x], K, B, h, kind="unilateral")
        assert r.success, r.message
        v, x = r.extras["v1"][0], (x + h * r.extras["v1"][0])
        xs.append(x)
        lams.append(r.x[0])
    assert max(abs(e) for e in xs) <= 0.05 and abs(v) < 1e-9
    np.testing.assert_allclose(lams[-1], m * g, rtol=1e-8)
    np.testing.assert_allclose(x, -m * g / K, rtol=0, atol=1e-15)  # x1 = x0 + h v1 rounds at ~eps * 0.05


def test_malformed_input_names_the_field():
    ok = dict(M=[[1.0]], f=[0.0], v0=[0.0], G=[[1.0]], phi0=[0.0], K=1.0, B=1.0, h=0.1)
    with pytest.raises(InputError, match="^K"):
        CompliantQP(**{**ok, "K": -1.0})
    with pytest.raises(InputError, match="^M"):
        CompliantQP(**{**ok, "M": [[-1.0]]})
    with pytest.raises(InputError, match="^G"):
        CompliantQP(**{**ok, "G": [[1.0, 2.0]]})
    with pytest.raises(InputError, match="^kind"):
        CompliantQP(**ok, kind="sliding")
    with pytest.raises(OptionError, match="did you mean"):
        CompliantQP(**ok).solve("qpoase")
    with pytest.raises(OptionError):
        CompliantQP(**ok, kind="unilateral").solve("lu-Y")


def test_unloaded_rows_carry_no_force():
    r = compliant_step([[1.0]], [0.0], [-1.0], [[1.0], [1.0]], [-0.1, -0.1], [0.0, 1e3], [0.0, 1.0], 0.01,
                       kind="unilateral")
    assert r.success and r.x[0] == 0.0 and r.x[1] > 0
    assert r.status is Status.SOLVED


# ------------------------------------------------------------------ low-rank (Woodbury) solve
def _many_rows(seed, m=300, n=6, kind="unilateral", K=1e5, B=30.0):
    rng = np.random.default_rng(seed)
    L = rng.normal(size=(n, n))
    M = L @ L.T + n * np.eye(n)
    G = rng.normal(size=(m, n))
    phi = rng.normal(size=m) * 1e-3
    return CompliantQP(M, rng.normal(size=n) * 10, rng.normal(size=n) * 0.1, G, phi,
                       K * rng.uniform(0.5, 2.0, m), B, 1e-3, kind)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["unilateral", "bilateral"])
def test_lowrank_equals_dense_solve_for_many_rows(seed, kind):
    """m = 300 rows against n = 6 velocities: the Woodbury solve on A = D + h U U^T gives the dense
    answer (active-set / Cholesky on the 300 x 300 A) and passes the independent residual."""
    p = _many_rows(seed, kind=kind)
    low = p.solve("lowrank")
    assert low.success and low.solver == "lowrank", low.message
    assert low.residual <= 1e-12
    assert "A" not in p.__dict__ and "W" not in p.__dict__  # no m x m matrix was formed
    dense = p.solve("active-set" if kind == "unilateral" else "cholesky")
    assert dense.success
    assert np.max(np.abs(low.x - dense.x)) <= 1e-9 * max(1.0, np.abs(dense.x).max())
    if kind == "unilateral":  # the LCP conditions, checked directly on the dense A
        w = p.A @ low.x + p.c
        scale = np.abs(low.x).max()
        assert low.x.min() >= 0 and w.min() >= -1e-10 * scale / p.A.diagonal().min()
        assert np.max(np.abs(low.x * w)) <= 1e-10 * scale * np.abs(w).max()


def test_auto_picks_lowrank_when_rows_outnumber_velocities():
    from contactmp.solvers.cone_qp.compliant import LOWRANK_RATIO
    many = _many_rows(0, m=LOWRANK_RATIO * 6 + 1).solve()
    few = _many_rows(0, m=LOWRANK_RATIO * 6).solve()
    assert many.success and many.solver == "lowrank"
    assert few.success and few.solver == "active-set"
    assert _many_rows(1, m=100, kind="bilateral").solve().solver == "lowrank"


@pytest.mark.parametrize("K", [1e8, 1e12])
def test_lowrank_stiff_gains_verified_by_residual(K):
    """h K + B up to 1e9 makes the two Woodbury terms cancel; iterative refinement keeps the residual."""
    p = _many_rows(7, m=200, K=K, B=0.0)
    r = p.solve("lowrank")
    assert r.success and r.residual <= 1e-10, r.message
    d = p.solve("active-set")
    assert np.max(np.abs(r.x - d.x)) <= 1e-8 * np.abs(d.x).max()
