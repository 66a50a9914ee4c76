"""The QVI (Tresca) fixed point for fc3d: closed-form contacts, the shared problems, the claim
that no De Saxce shift is needed (u_n = 0 at sliding contacts), bad input and non-convergence."""
from __future__ import annotations

import math

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.result import Status
from contactmp.solvers.fc3d import qvi as fc3d_qvi
from contactmp.solvers.fc3d.problem import fc3d_residual
from contactmp.solvers.registry import fc3d_solver


def spd3(seed: int) -> np.ndarray:
    A = np.random.default_rng(seed).standard_normal((3, 3))
    return A @ A.T + 0.5 * np.eye(3)


def closed_forms() -> list[tuple[str, np.ndarray, np.ndarray, float, np.ndarray]]:
    """(case, W, q, mu, exact r), built backwards from a chosen r and u = W r + q."""
    cases = []
    for W, tag in ((np.diag([2.0, 1.0, 1.0]), "diag"), (spd3(1), "spd")):
        mu = 0.3
        cases.append((f"separation-{tag}", W, np.array([0.7, -0.4, 1.1]), mu, np.zeros(3)))
        r = np.array([1.5, 0.2, -0.25])
        cases.append((f"sticking-{tag}", W, -W @ r, mu, r))
        th, rn = 0.7, 1.2
        r = rn * np.array([1.0, -mu * math.cos(th), -mu * math.sin(th)])
        u = np.array([0.0, 0.8 * math.cos(th), 0.8 * math.sin(th)])
        cases.append((f"sliding-{tag}", W, u - W @ r, mu, r))
    return cases


@pytest.mark.parametrize("case,W,q,mu,r_exact", closed_forms(), ids=[c[0] for c in closed_forms()])
def test_one_contact_closed_forms(case, W, q, mu, r_exact):
    out = fc3d_qvi.solve(W, q, mu, tol=1e-12)
    assert out.status is Status.SOLVED and out.residual <= 1e-12
    np.testing.assert_allclose(out.x, r_exact, rtol=0, atol=1e-10 * max(1.0, np.abs(r_exact).max()))


def test_sliding_fixed_point_has_zero_normal_velocity():
    """The frozen quantity is the bound s = mu r_n only; at the fixed point of a sliding contact
    u_n = 0 (a shift mu ||u_T|| added to u_n would leave u_n = -mu ||u_T||)."""
    W = spd3(4)
    mu, th, rn = 0.4, 2.1, 0.9
    r = rn * np.array([1.0, -mu * math.cos(th), -mu * math.sin(th)])
    u = np.array([0.0, 1.5 * math.cos(th), 1.5 * math.sin(th)])
    out = fc3d_qvi.solve(W, u - W @ r, mu, tol=1e-13)
    assert out.success
    assert abs(out.extras["u"][0]) <= 1e-12
    np.testing.assert_allclose(out.extras["u"][1:], u[1:], atol=1e-11)


def test_registered():
    assert fc3d_solver("qvi") is fc3d_qvi.solve


# BoxesStack (about 20 s: its Tresca problems need ~5000 sweeps each) is left to the benchmark.
SLOW = {"BoxesStack1-i100000-32_hdf5", "Capsules-i101-404"}


def test_shared_problems(repo_data):
    files = sorted((repo_data / "fc3d").glob("*.npz"))
    assert len(files) == 19
    for f in files:
        if f.stem in SLOW:
            continue
        d = np.load(f, allow_pickle=False)
        out = fc3d_qvi.solve(d["W"], d["q"], d["mu"])
        assert out.status is Status.SOLVED, f.stem
        assert fc3d_residual(d["W"], d["q"], d["mu"], out.x) <= 1e-8, f.stem
        assert out.extras["inner_sweeps"] >= out.iterations


def test_non_convergence_is_a_status(repo_data):
    d = np.load(repo_data / "fc3d" / "Rover1039.npz", allow_pickle=False)
    out = fc3d_qvi.solve(d["W"], d["q"], d["mu"], max_iter=2)
    assert out.status is Status.MAX_ITER and out.iterations == 2
    assert out.residual > 1e-8
    hard = np.load(repo_data / "fc3d" / "BoxesStack1-i100000-32_hdf5.npz", allow_pickle=False)
    out = fc3d_qvi.solve(hard["W"], hard["q"], hard["mu"], time_limit=0.1)
    assert out.status is Status.TIME_LIMIT and out.time_s < 2.0


def test_bad_input_and_options():
    with pytest.raises(InputError) as e:
        fc3d_qvi.solve(np.eye(3), np.zeros(6), 0.1)
    assert e.value.field == "q"
    with pytest.raises(InputError) as e:
        fc3d_qvi.solve(np.eye(3), np.zeros(3), [0.1, 0.2])
    assert e.value.field == "mu"
    with pytest.raises(InputError) as e:
        fc3d_qvi.solve(np.eye(3), np.zeros(3), 0.1, r0=[np.inf, 0, 0])
    assert e.value.field == "r0"
    with pytest.raises(OptionError):
        fc3d_qvi.solve(np.eye(3), np.zeros(3), 0.1, inner_ratio=1.5)
    with pytest.raises(OptionError):
        fc3d_qvi.solve(np.eye(3), np.zeros(3), 0.1, inner_tol=-1.0)
