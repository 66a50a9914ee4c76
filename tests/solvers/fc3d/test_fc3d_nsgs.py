"""NSGS for fc3d and the exact one-contact solvers it sweeps with: closed-form contacts
(separation, sticking, sliding), random 3x3 blocks solved to round-off, the shared Siconos problems,
bad input and non-convergence."""
from __future__ import annotations

import math

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.result import Status
from contactmp.solvers.fc3d import nsgs as fc3d_nsgs
from contactmp.solvers.fc3d.problem import fc3d_residual
from contactmp.solvers.fc3d.local import one_contact_cone, one_contact_cylinder
from contactmp.solvers.registry import fc3d_solver


def spd3(seed: int) -> np.ndarray:
    A = np.random.default_rng(seed).standard_normal((3, 3))
    return A @ A.T + 0.5 * np.eye(3)


def closed_forms() -> list[tuple[str, np.ndarray, np.ndarray, float, np.ndarray]]:
    """(case, W, q, mu, exact r): built backwards from a chosen r and u (u = W r + q)."""
    cases = []
    D = np.diag([2.0, 1.0, 1.0])
    for W, tag in ((D, "diag"), (spd3(1), "spd")):
        mu = 0.3
        # separation: r = 0, u_n > 0
        cases.append((f"separation-{tag}", W, np.array([0.7, -0.4, 1.1]), mu, np.zeros(3)))
        # sticking: r strictly inside the cone, u = 0
        r = np.array([1.5, 0.2, -0.25])
        cases.append((f"sticking-{tag}", W, -W @ r, mu, r))
        # sliding: r on the boundary opposite to u_T, u_n = 0
        th = 0.7
        rn = 1.2
        r = rn * np.array([1.0, -mu * math.cos(th), -mu * math.sin(th)])
        u = np.array([0.0, 0.8 * math.cos(th), 0.8 * math.sin(th)])
        cases.append((f"sliding-{tag}", W, u - W @ r, mu, r))
    return cases


@pytest.mark.parametrize("case,W,q,mu,r_exact", closed_forms(), ids=[c[0] for c in closed_forms()])
def test_one_contact_closed_forms(case, W, q, mu, r_exact):
    r, res = one_contact_cone(W, q, mu)
    np.testing.assert_allclose(r, r_exact, rtol=0, atol=1e-10 * max(1.0, np.abs(r_exact).max()))
    out = fc3d_nsgs.solve(W, q, mu, tol=1e-12)
    assert out.status is Status.SOLVED and out.residual <= 1e-12
    np.testing.assert_allclose(out.x, r_exact, rtol=0, atol=1e-10 * max(1.0, np.abs(r_exact).max()))


def test_one_contact_random_blocks_to_roundoff():
    """Random 3x3 blocks (symmetric positive definite and nonsymmetric with PD symmetric part),
    random q over 6 orders of magnitude and mu in [0, 2]: the local residual is round-off."""
    rng = np.random.default_rng(7)
    worst = 0.0
    for i in range(400):
        W = spd3(100 + i)
        if i % 2:
            W = W + 0.3 * rng.standard_normal((3, 3))
            if np.linalg.eigvalsh(W + W.T).min() <= 0:
                continue
        q = rng.standard_normal(3) * 10.0 ** rng.integers(-3, 4)
        mu = float(rng.choice([0.0, 0.1, 0.5, 1.0, 2.0]))
        r, res = one_contact_cone(W, q, mu)
        assert np.hypot(r[1], r[2]) <= mu * r[0] * (1 + 1e-12) + 1e-300
        worst = max(worst, fc3d_residual(W, q, np.array([mu]), r))
    assert worst <= 1e-12


def test_one_contact_tresca_closed_forms_and_random():
    # W = I, b = (-1, 3, 4), bound s = 0.5: r_n = 1, r_T on the circle opposite to b_T
    r, res = one_contact_cylinder(np.eye(3), [-1.0, 3.0, 4.0], 0.5)
    np.testing.assert_allclose(r, [1.0, -0.3, -0.4], atol=1e-14)
    # inside the disk: u_T = 0
    r, res = one_contact_cylinder(np.eye(3), [-1.0, 0.1, 0.2], 0.5)
    np.testing.assert_allclose(r, [1.0, -0.1, -0.2], atol=1e-14)
    rng = np.random.default_rng(3)
    for i in range(300):
        W = spd3(500 + i)
        b = rng.standard_normal(3)
        s = float(rng.choice([0.0, 0.05, 0.5, 5.0]))
        r, res = one_contact_cylinder(W, b, s)
        u = W @ r + b
        scale = max(np.linalg.norm(b), np.linalg.norm(r), np.linalg.norm(u))
        assert res <= 1e-12 * scale
        assert r[0] >= 0 and np.hypot(r[1], r[2]) <= s * (1 + 1e-12)


def test_registered():
    assert fc3d_solver("nsgs") is fc3d_nsgs.solve


# Problems on which Siconos' NSGS fails too (its baseline residuals 1e-3 and 2e-5 after 10000
# sweeps); every other shared problem is solved.
NSGS_HARD = {"OneObject-i100000-499_hdf5", "OneObject-i100000-316_hdf5", "BoxesStack1-i100000-32_hdf5"}


def test_shared_problems(repo_data):
    files = sorted((repo_data / "fc3d").glob("*.npz"))
    assert len(files) == 19
    for f in files:
        d = np.load(f, allow_pickle=False)
        if f.stem in NSGS_HARD:
            out = fc3d_nsgs.solve(d["W"], d["q"], d["mu"], max_iter=50)
            assert out.status is Status.MAX_ITER and out.iterations == 50
            assert out.residual == pytest.approx(fc3d_residual(d["W"], d["q"], d["mu"], out.x))
            continue
        out = fc3d_nsgs.solve(d["W"], d["q"], d["mu"])
        assert out.status is Status.SOLVED, f.stem
        assert fc3d_residual(d["W"], d["q"], d["mu"], out.x) <= 1e-8, f.stem


def test_under_relaxation_solves_oneobject(repo_data):
    d = np.load(repo_data / "fc3d" / "OneObject-i100000-316_hdf5.npz", allow_pickle=False)
    out = fc3d_nsgs.solve(d["W"], d["q"], d["mu"], omega=0.5)
    assert out.success and fc3d_residual(d["W"], d["q"], d["mu"], out.x) <= 1e-8


def test_warm_start_and_time_limit(repo_data):
    d = np.load(repo_data / "fc3d" / "Rover1039.npz", allow_pickle=False)
    first = fc3d_nsgs.solve(d["W"], d["q"], d["mu"], tol=1e-12)
    assert first.success
    again = fc3d_nsgs.solve(d["W"], d["q"], d["mu"], tol=1e-12, r0=first.x)
    assert again.success and again.iterations <= 2
    timed = fc3d_nsgs.solve(d["W"], d["q"], d["mu"], tol=1e-12, time_limit=30.0)
    assert timed.success and timed.iterations == first.iterations  # batches stop at convergence
    hard = np.load(repo_data / "fc3d" / "BoxesStack1-i100000-32_hdf5.npz", allow_pickle=False)
    out = fc3d_nsgs.solve(hard["W"], hard["q"], hard["mu"], time_limit=0.05, max_iter=10**7)
    assert out.status is Status.TIME_LIMIT and out.time_s < 2.0


def test_bad_input_and_options():
    W = np.eye(3)
    with pytest.raises(InputError) as e:
        fc3d_nsgs.solve(np.eye(4), np.zeros(4), 0.1)
    assert e.value.field == "W"
    with pytest.raises(InputError) as e:
        fc3d_nsgs.solve(W, [np.nan, 0, 0], 0.1)
    assert e.value.field == "q"
    with pytest.raises(InputError) as e:
        fc3d_nsgs.solve(W, np.zeros(3), -0.1)
    assert e.value.field == "mu"
    with pytest.raises(InputError) as e:
        fc3d_nsgs.solve(W, np.zeros(3), 0.1, r0=np.zeros(4))
    assert e.value.field == "r0"
    with pytest.raises(InputError) as e:
        one_contact_cone(np.eye(2), np.zeros(3), 0.1)
    assert e.value.field == "W"
    with pytest.raises(InputError) as e:
        one_contact_cone(W, np.zeros(3), -1.0)
    assert e.value.field == "mu"
    with pytest.raises(InputError) as e:
        one_contact_cylinder(W, np.zeros(2), 1.0)
    assert e.value.field == "b"
    with pytest.raises(OptionError):
        fc3d_nsgs.solve(W, np.zeros(3), 0.1, omgea=1.0)
    with pytest.raises(OptionError):
        fc3d_nsgs.solve(W, np.zeros(3), 0.1, omega=2.5)


def test_nonpositive_normal_diagonal_is_numerical_error():
    W = np.diag([0.0, 1.0, 1.0])
    out = fc3d_nsgs.solve(W, np.array([-1.0, 0.0, 0.0]), 0.3)
    assert out.status is Status.NUMERICAL_ERROR and out.extras["bad_contact"] == 0


def test_block_data_matches_scipy_csr():
    """The compiled CSR builder gives scipy's compressed rows (nonzeros only, sorted columns)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    W = rng.standard_normal((12, 12)) * (rng.random((12, 12)) < 0.4)
    indptr, indices, data, diag = fc3d_nsgs.block_data(W)
    C = sp.csr_matrix(W)
    C.sort_indices()
    np.testing.assert_array_equal(indptr, C.indptr)
    np.testing.assert_array_equal(indices, C.indices)
    np.testing.assert_array_equal(data, C.data)
    for j in range(4):
        np.testing.assert_array_equal(diag[j], W[3 * j:3 * j + 3, 3 * j:3 * j + 3])


def test_early_stop_gives_up_on_stagnation_and_keeps_convergent_runs(repo_data):
    """early_stop: where NSGS stagnates (residual ~1e-3 after hundreds of sweeps) it gives up
    within a few sweeps; where it converges linearly it still reaches tol (same sweeps as without)."""
    for stem in sorted(NSGS_HARD):
        d = np.load(repo_data / "fc3d" / f"{stem}.npz", allow_pickle=False)
        out = fc3d_nsgs.solve(d["W"], d["q"], d["mu"], max_iter=50, early_stop=True)
        assert out.status is Status.NOT_SOLVED and 4 <= out.iterations < 50, stem
        assert out.residual == pytest.approx(fc3d_residual(d["W"], d["q"], d["mu"], out.x))
    for stem in ("Rover1039", "NESpheres_10_1", "Confeti-ex03-Fc3D-SBM"):
        d = np.load(repo_data / "fc3d" / f"{stem}.npz", allow_pickle=False)
        full = fc3d_nsgs.solve(d["W"], d["q"], d["mu"])
        quick = fc3d_nsgs.solve(d["W"], d["q"], d["mu"], max_iter=50, early_stop=True, time_limit=10.0)
        assert quick.status is Status.SOLVED and quick.iterations == full.iterations, stem
        assert fc3d_residual(d["W"], d["q"], d["mu"], quick.x) <= 1e-8
    with pytest.raises(OptionError, match="early_stop"):
        fc3d_nsgs.solve(np.eye(3), np.array([-1.0, 0.0, 0.0]), 0.5, early_stop=1)


def test_allocation_free_roots_are_roots():
    """``_poly_roots`` (Aberth-Ehrlich) finds every root of random quadratics and quartics,
    including the conjugate-reciprocal quartics of the angle equation, to near round-off."""
    from contactmp.solvers.fc3d.local import _poly_roots

    rng = np.random.default_rng(7)
    z = np.empty(4, dtype=np.complex128)
    for k in range(300):
        deg = 4 if k % 3 else 2
        roots = rng.normal(size=deg) * np.exp(1j * rng.uniform(0, 2 * np.pi, size=deg)) * 10.0 ** rng.uniform(-1, 1)
        if k % 5 == 0 and deg == 4:  # |z| = 1 pairs z, 1 / conj(z), as for h(t)
            a, b = roots[0], roots[1]
            roots = np.array([a, 1 / np.conj(a), b, 1 / np.conj(b)])
        p = np.poly(roots).astype(np.complex128) * (0.3 - 2.0j)
        _poly_roots(p, deg, z)
        found = z[:deg]
        # each true root matched by a distinct computed one
        d = np.abs(roots[:, None] - found[None, :])
        assert sorted(d.argmin(axis=1).tolist()) == list(range(deg)), (roots, found)
        assert d.min(axis=1).max() <= 1e-8 * max(1.0, np.abs(roots).max())


def test_quick_pass_is_the_early_stopping_solve(repo_data):
    """The compiled quick pass equals ``solve(max_iter=50, early_stop=True)`` (same r, sweeps,
    status, residual, message) where it converges and where it gives up, and declines bad data."""
    import time

    for stem in ("Rover1039", "FC3D_Example1", "OneObject-i100000-316_hdf5"):
        d = np.load(repo_data / "fc3d" / f"{stem}.npz", allow_pickle=False)
        W, q, mu = (np.ascontiguousarray(d[k], dtype=np.float64) for k in ("W", "q", "mu"))
        ref = fc3d_nsgs.solve(W, q, mu, max_iter=50, early_stop=True)
        out = fc3d_nsgs.quick_pass(W, q, mu, 1e-8, 50, time.perf_counter())
        assert (out.status, out.iterations, out.residual, out.message) == \
            (ref.status, ref.iterations, ref.residual, ref.message), stem
        np.testing.assert_array_equal(out.x, ref.x)
        assert out.residual == fc3d_residual(W, q, mu, out.x)
    W, q = np.eye(3), np.array([-1.0, 0.0, 0.0])
    assert fc3d_nsgs.quick_pass(W, q, np.array([-0.1]), 1e-8, 50, 0.0) is None
    assert fc3d_nsgs.quick_pass(np.diag([-1.0, 1.0, 1.0]), q, np.array([0.1]), 1e-8, 50, 0.0) is None
