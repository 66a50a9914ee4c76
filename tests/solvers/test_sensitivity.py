"""Sensitivities of LCP and fc3d solutions (solvers/sensitivity.py, solvers/fc3d/sensitivity.py):
Jacobians against central finite differences of re-solved problems, VJPs against J^T v, and the
documented one-sided derivatives at constructed degenerate points.

Finite differences: step h = 1e-6 on problems with |data| ~ 1 solved to 1e-14 (Lemke: exact
pivoting; fc3d Newton: natural-map residual ~1e-16), so the truncation error is O(h^2 |d3 r|)
~ 1e-12 (the solution is affine in q on a mode's piece for the LCP, smooth for fc3d) and the
rounding error ~ eps |r| / h ~ 1e-10; 1e-7 relative leaves three orders of room.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.io import load_fc3d
from contactmp.result import Status
from contactmp.solvers.fc3d.sensitivity import MODES, contact_modes, fc3d_sensitivity
from contactmp.solvers.registry import solve_fc3d, solve_lcp
from contactmp.solvers.sensitivity import lcp_sensitivity

H = 1e-6
FD_TOL = 1e-7


def _lcp(M: np.ndarray, q: np.ndarray) -> np.ndarray:
    r = solve_lcp(M, q, "lemke", tol=1e-12)
    assert r.status is Status.SOLVED
    return r.x


def _fc3d(W: np.ndarray, q: np.ndarray, mu: np.ndarray) -> np.ndarray:
    r = solve_fc3d(W, q, mu, "newton", tol=1e-13)
    assert r.status is Status.SOLVED
    return r.x


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b), initial=0.0) / max(1.0, float(np.max(np.abs(b), initial=0.0))))


def _spd(rng: np.random.Generator, n: int) -> np.ndarray:
    A = rng.normal(size=(n, n))
    return A @ A.T / n + 0.3 * np.eye(n)


@pytest.mark.parametrize("n", [3, 12, 40])
def test_lcp_jacobian_matches_finite_differences(n: int) -> None:
    """dz/dq, the M-direction JVP and the VJP of a P-matrix LCP's solution (M SPD)."""
    rng = np.random.default_rng(n)
    M, q = _spd(rng, n), rng.normal(size=n)
    S = lcp_sensitivity(M, q, solve_lcp(M, q, "lemke", tol=1e-12))
    assert not S.flagged and S.active.size + S.inactive.size == n
    fd = np.column_stack([(_lcp(M, q + H * e) - _lcp(M, q - H * e)) / (2 * H) for e in np.eye(n)])
    assert _rel(S.dz_dq(), fd) <= FD_TOL
    dM, dq, z_bar = rng.normal(size=(n, n)), rng.normal(size=n), rng.normal(size=n)
    fd_M = (_lcp(M + H * dM, q) - _lcp(M - H * dM, q)) / (2 * H)
    assert _rel(S.jvp(dM=dM), fd_M) <= FD_TOL
    q_bar, M_bar = S.vjp(z_bar)
    assert abs(z_bar @ S.jvp(dq=dq, dM=dM) - (q_bar @ dq + np.sum(M_bar * dM))) <= 1e-10 * max(1.0, np.abs(q_bar).sum())
    np.testing.assert_allclose(q_bar, S.dz_dq().T @ z_bar, rtol=0, atol=1e-12)


def test_lcp_closed_form_two_by_two() -> None:
    """M = [[2, 1], [1, 2]], q = (-1, 1): z = (1/2, 0), w = (0, 3/2); dz1/dq1 = -1/2, the rest 0."""
    M, q = np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-1.0, 1.0])
    S = lcp_sensitivity(M, q, np.array([0.5, 0.0]))
    np.testing.assert_array_equal(S.dz_dq(), [[-0.5, 0.0], [0.0, 0.0]])
    assert list(S.active) == [0] and list(S.inactive) == [1] and not S.flagged


def test_lcp_degenerate_pair_is_flagged_and_one_sided() -> None:
    """A pair with z_i = w_i = 0: flagged, finite, and each side's derivative is the one-sided
    finite difference in the direction that keeps the solution on that side (q_i up: z_i stays 0;
    q_i down: w_i stays 0)."""
    rng = np.random.default_rng(7)
    n = 6
    M = _spd(rng, n)
    z = np.array([1.0, 0.0, 0.5, 0.0, 0.0, 2.0])
    w = np.array([0.0, 1.0, 0.0, 0.0, 0.7, 0.0])  # index 3: z = w = 0
    q = w - M @ z
    for side, sign in (("inactive", 1.0), ("active", -1.0)):
        S = lcp_sensitivity(M, q, z, side=side)
        assert S.flagged and list(S.degenerate) == [3]
        e = np.zeros(n)
        e[3] = sign
        one_sided = (_lcp(M, q + H * e) - z) / H
        d = S.jvp(dq=e)
        assert np.isfinite(S.dz_dq()).all() and _rel(d, one_sided) <= FD_TOL


def test_lcp_sensitivity_input_errors() -> None:
    M, q = np.eye(2), np.array([-1.0, 1.0])
    with pytest.raises(InputError, match="side"):
        lcp_sensitivity(M, q, np.array([1.0, 0.0]), side="both")
    with pytest.raises(InputError, match="z"):
        lcp_sensitivity(M, q, np.array([1.0]))
    with pytest.raises(InputError, match="dq"):
        lcp_sensitivity(M, q, np.array([1.0, 0.0])).jvp(dq=[1.0])


def _random_fc3d(rng: np.random.Generator, nc: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _spd(rng, 3 * nc), rng.normal(size=3 * nc), rng.uniform(0.1, 1.0, nc)


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_fc3d_jacobians_match_finite_differences(seed: int) -> None:
    """dr/dq, dr/dmu, a W-direction JVP and the VJP on generated problems with positive definite W
    (seeds whose solutions mix separated, sticking and sliding contacts, none degenerate)."""
    rng = np.random.default_rng(seed)
    W, q, mu = _random_fc3d(rng, 5)
    S = fc3d_sensitivity(W, q, mu, _fc3d(W, q, mu))
    assert not S.flagged and len({MODES[k] for k in S.modes}) >= 2
    m = q.size
    fd_q = np.column_stack([(_fc3d(W, q + H * e, mu) - _fc3d(W, q - H * e, mu)) / (2 * H) for e in np.eye(m)])
    fd_mu = np.column_stack([(_fc3d(W, q, mu + H * e) - _fc3d(W, q, mu - H * e)) / (2 * H) for e in np.eye(5)])
    assert _rel(S.dr_dq(), fd_q) <= FD_TOL and _rel(S.dr_dmu(), fd_mu) <= FD_TOL
    dW = rng.normal(size=(m, m))
    assert _rel(S.jvp(dW=dW), (_fc3d(W + H * dW, q, mu) - _fc3d(W - H * dW, q, mu)) / (2 * H)) <= FD_TOL
    r_bar = rng.normal(size=m)
    g = S.vjp(r_bar)
    np.testing.assert_allclose(g["q"], S.dr_dq().T @ r_bar, rtol=0, atol=1e-10)
    np.testing.assert_allclose(g["mu"], S.dr_dmu().T @ r_bar, rtol=0, atol=1e-10)
    np.testing.assert_allclose(g["W"], np.outer(g["q"], S.r), rtol=0, atol=1e-14)  # dr/dW^T r_bar = q_bar r^T
    only_q = S.vjp(r_bar, wrt=("q",))
    assert list(only_q) == ["q"] and np.array_equal(only_q["q"], g["q"])
    with pytest.raises(InputError, match="wrt"):
        S.vjp(r_bar, wrt=("M",))


def test_fc3d_shared_problem_with_unique_solution(repo_data: Path) -> None:
    """FC3D_Example1 (Siconos' test suite, W positive definite, solution non-degenerate): dr/dq
    matches finite differences."""
    W, q, mu = load_fc3d(repo_data / "fc3d" / "FC3D_Example1.npz")
    assert np.linalg.eigvalsh(W).min() > 0
    S = fc3d_sensitivity(W, q, mu, _fc3d(W, q, mu))
    assert not S.flagged
    h = H * max(1.0, float(np.abs(q).max()))
    fd = np.column_stack([(_fc3d(W, q + h * e, mu) - _fc3d(W, q - h * e, mu)) / (2 * h) for e in np.eye(q.size)])
    assert _rel(S.dr_dq(), fd) <= FD_TOL


def test_fc3d_degenerate_contacts_are_flagged_and_one_sided() -> None:
    """One contact, W = I: (a) grazing, q = (0, 1, 0): r = 0 and u_n = 0; the separated piece's
    derivative (0) is the one-sided derivative for q_n rising; (b) the stick/slip boundary,
    q = (-1, mu, 0): r = (1, -mu, 0), u = 0; the sticking piece's derivative (-I) is the one-sided
    derivative for q_t falling (deeper into sticking)."""
    W, mu = np.eye(3), np.array([0.5])
    S = fc3d_sensitivity(W, np.array([0.0, 1.0, 0.0]), mu, np.zeros(3))
    assert S.flagged and [MODES[k] for k in S.modes] == ["grazing"] and list(S.degenerate) == [0]
    e = np.array([1.0, 0.0, 0.0])
    np.testing.assert_array_equal(S.jvp(dq=e), (_fc3d(W, np.array([H, 1.0, 0.0]), mu) - 0.0) / H)
    q = np.array([-1.0, 0.5, 0.0])
    r = _fc3d(W, q, mu)
    np.testing.assert_allclose(r, [1.0, -0.5, 0.0], atol=1e-12)
    S = fc3d_sensitivity(W, q, mu, r)
    assert S.flagged and [MODES[k] for k in S.modes] == ["stick_slip"]
    d = np.array([0.0, -1.0, 0.0])
    assert np.isfinite(S.dr_dq()).all()
    np.testing.assert_allclose(S.jvp(dq=d), (_fc3d(W, q + H * d, mu) - r) / H, atol=1e-7)


def test_contact_modes_of_a_sliding_contact() -> None:
    """W = I, q = (-1, 2, 0), mu = 0.5: the contact slides, r = (1, -0.5, 0), u = (0, 1.5, 0)."""
    W, q, mu = np.eye(3), np.array([-1.0, 2.0, 0.0]), np.array([0.5])
    r = _fc3d(W, q, mu)
    np.testing.assert_allclose(r, [1.0, -0.5, 0.0], atol=1e-12)
    assert MODES[contact_modes(r, W @ r + q, mu)[0]] == "sliding"


def test_degeneracy_rule_does_not_depend_on_units() -> None:
    """M = I, q = (-1, 1) * 1e-9: z = (1e-9, 0) is not degenerate and dz1/dq1 = -1, as at unit
    scale (the tolerance is relative to |z|, |w|, not floored at 1)."""
    S = lcp_sensitivity(np.eye(2), np.array([-1e-9, 1e-9]), np.array([1e-9, 0.0]))
    assert not S.flagged
    np.testing.assert_array_equal(S.dz_dq(), [[-1.0, 0.0], [0.0, 0.0]])


def test_a_result_that_is_not_solved_is_refused() -> None:
    """A Result whose status is not solved names the field; the bare array is taken as given."""
    M, q = np.array([[0.0, 1.0], [-1.0, 0.0]]), np.array([-1.0, -1.0])  # w_2 = -z_1 - 1: no solution
    r = solve_lcp(M, q, "lemke")
    assert r.status is not Status.SOLVED
    with pytest.raises(InputError, match="z.*not a verified solution"):
        lcp_sensitivity(M, q, r)
    W = np.eye(3)
    bad = solve_fc3d(W, np.array([-1.0, 0.0, 0.0]), np.array([0.5]), "nsgs", max_iter=1, tol=1e-300)
    if bad.status is not Status.SOLVED:
        with pytest.raises(InputError, match="r.*not a verified solution"):
            fc3d_sensitivity(W, np.array([-1.0, 0.0, 0.0]), np.array([0.5]), bad)
