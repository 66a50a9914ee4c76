"""The pyramid refinement for fc3d: sticking and separation exact, sliding exact along an edge
normal of the polygon, the O(1/k^2) vertex bound elsewhere (never claimed solved), Proposition 1
on a shared problem, bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.friction_polygon import facet_generators
from contactmp.result import Status
from contactmp.solvers.fc3d import pyramid as fc3d_pyramid
from contactmp.solvers.fc3d.problem import fc3d_residual
from contactmp.solvers.registry import fc3d_solver


def spd3(seed: int) -> np.ndarray:
    A = np.random.default_rng(seed).standard_normal((3, 3))
    return A @ A.T + 0.5 * np.eye(3)


def sliding(W: np.ndarray, mu: float, th: float, rn: float = 1.2, speed: float = 0.8):
    r = rn * np.array([1.0, -mu * math.cos(th), -mu * math.sin(th)])
    u = np.array([0.0, speed * math.cos(th), speed * math.sin(th)])
    return u - W @ r, r


@pytest.mark.parametrize("W", [np.diag([2.0, 1.0, 1.0]), spd3(1)], ids=["diag", "spd"])
def test_sticking_and_separation_exact(W):
    mu = 0.3
    sep = fc3d_pyramid.solve(W, [0.7, -0.4, 1.1], mu)
    assert sep.success and sep.extras["k"] == 4
    np.testing.assert_allclose(sep.x, 0.0, atol=1e-12)
    r = np.array([1.5, 0.2, -0.25])
    st = fc3d_pyramid.solve(W, -W @ r, mu, tol=1e-12)
    assert st.success and st.extras["k"] == 4 and st.extras["max_cone_violation"] == 0.0
    np.testing.assert_allclose(st.x, r, atol=1e-10)


@pytest.mark.parametrize("i", [0, 1, 2, 3])
def test_sliding_along_an_edge_normal_is_exact(i):
    """Sliding along an edge normal (angles 2 i pi / k) puts the force at the edge midpoint, which
    touches the disk: the pyramid answer is Coulomb's (Proposition 1)."""
    W = np.diag([2.0, 1.0, 1.0])
    q, r = sliding(W, 0.5, i * math.pi / 2)
    out = fc3d_pyramid.solve(W, q, 0.5, tol=1e-10)
    assert out.success and out.extras["k"] == 4 and out.residual <= 1e-10
    np.testing.assert_allclose(out.x, r, atol=1e-10)


def test_sliding_off_the_edges_is_not_claimed():
    """Elsewhere the force sits on the polygon outside the disk: the violation obeys the vertex
    bound mu r_n (1/cos(pi/k) - 1) and the answer is never reported as solved."""
    W = np.diag([2.0, 1.0, 1.0])
    mu, th = 0.5, 0.3
    q, r = sliding(W, mu, th)
    out = fc3d_pyramid.solve(W, q, mu, k_max=32)
    assert out.status is Status.MAX_ITER and out.residual > 1e-8
    assert [h["k"] for h in out.extras["history"]] == [4, 8, 16, 32]
    for h in out.extras["history"]:
        assert 0.0 < h["max_cone_violation"] <= mu * r[0] * (1 / math.cos(math.pi / h["k"]) - 1) + 1e-12
        assert h["residual"] == pytest.approx(h["residual"])  # finite
    assert out.residual == pytest.approx(fc3d_residual(W, q, np.array([mu]), out.x))


def test_generators_circumscribe_the_disk():
    for k in (4, 8, 16, 64):
        G = facet_generators(k)
        # every edge midpoint of the polygon is at distance 1 from the origin
        mid = 0.5 * (G + np.roll(G, -1, axis=0))
        np.testing.assert_allclose(np.linalg.norm(mid, axis=1), 1.0, atol=1e-14)


def test_registered():
    assert fc3d_solver("pyramid") is fc3d_pyramid.solve


def test_shared_problems(repo_data):
    """NESpheres_30_1's pyramid solution lies in the cones (verified at k = 4); a sliding problem
    reports the residual reached, never a claim."""
    d = np.load(repo_data / "fc3d" / "NESpheres_30_1.npz", allow_pickle=False)
    out = fc3d_pyramid.solve(d["W"], d["q"], d["mu"])
    assert out.success and out.extras["k"] == 4
    assert fc3d_residual(d["W"], d["q"], d["mu"], out.x) <= 1e-8
    d = np.load(repo_data / "fc3d" / "Rover1039.npz", allow_pickle=False)
    out = fc3d_pyramid.solve(d["W"], d["q"], d["mu"], k_max=16)
    assert out.status is Status.MAX_ITER and out.residual > 1e-8
    assert out.extras["max_cone_violation"] > 0.0


def test_size_limit_and_bad_input():
    q, _ = sliding(np.eye(3), 0.5, 0.3)
    out = fc3d_pyramid.solve(np.eye(3), q, 0.5, k_max=64, max_size=20)
    assert out.extras["skipped"] == [32, 64]
    assert [h["k"] for h in out.extras["history"]] == [4, 8, 16]
    with pytest.raises(InputError) as e:
        fc3d_pyramid.solve(np.ones((3, 2)), np.zeros(3), 0.1)
    assert e.value.field == "W"
    with pytest.raises(OptionError):
        fc3d_pyramid.solve(np.eye(3), np.zeros(3), 0.1, k_start=2)
    with pytest.raises(OptionError):
        fc3d_pyramid.solve(np.eye(3), np.zeros(3), 0.1, k_start=8, k_max=4)
