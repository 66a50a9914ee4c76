"""The feasible interior point method (Trinkle et al. 1995, Appendix B): contactmp.solvers.lcp.fip."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.result import Status
from contactmp.solvers.lcp import fip
from contactmp.solvers.lcp.problem import lcp_residual

#: the Siconos test LCPs shipped in the repository (tests/data/lcp)
DATA = Path(__file__).resolve().parents[2] / "data" / "lcp"

#: shared problems with no strictly feasible pair. Each has two rows with w_i = -w_j for every z:
#: CPS_5 (w_2 = -1 - z_1 + z_2 = -w_1), Pang_isolated_sol and its perturbation and
#: inf_sol_perturbed (w_3 = 1 - z_1 = -w_2), so w_i > 0 and w_j > 0 cannot both hold.
NO_INTERIOR = {"lcp_CPS_5", "lcp_Pang_isolated_sol", "lcp_Pang_isolated_sol_perturbed",
               "lcp_inf_sol_perturbed"}


def random_p0(n: int, rank: int, rng: np.random.Generator) -> np.ndarray:
    """``M = S S^T + K`` with ``K`` skew: positive semidefinite, hence P0."""
    s = rng.standard_normal((n, rank))
    k = rng.standard_normal((n, n))
    return s @ s.T + (k - k.T)


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    d = np.load(DATA / f"{name}.npz", allow_pickle=False)
    return d["M"], d["q"]


@pytest.mark.parametrize("seed", range(12))
def test_random_p0_solved_after_purification(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 50))
    M = random_p0(n, int(rng.integers(1, n + 1)), rng)
    q = rng.standard_normal(n)
    res = fip.solve(M, q)
    assert res.status is Status.SOLVED, res.message
    z = res.x
    w = M @ z + q
    assert lcp_residual(M, q, z) <= 1e-8
    assert z.min() >= 0 and w.min() >= -1e-8 and abs(z @ w) <= 1e-8 * (1 + np.abs(z).max())
    assert 0 < res.iterations <= 300
    assert res.extras["paper_criterion_met"] and res.extras["gap"] <= 1e-6
    assert res.extras["phase1_t"] > 0 and res.extras["lp_time_s"] >= 0


def test_degenerate_p0_with_known_solution() -> None:
    """q = w* - M z* with z*, w* complementary and some pairs both zero: a degenerate solution."""
    rng = np.random.default_rng(7)
    n = 30
    M = random_p0(n, 10, rng)  # singular PSD part
    zs = np.maximum(rng.standard_normal(n), 0)
    ws = np.maximum(rng.standard_normal(n), 0)
    ws[zs > 0] = 0
    res = fip.solve(M, ws - M @ zs)
    assert res.success and res.residual <= 1e-8


def test_phase_one_point_is_strictly_feasible() -> None:
    rng = np.random.default_rng(3)
    M = random_p0(8, 3, rng)
    q = rng.standard_normal(8)
    t, z, _ = fip.phase_one(M, q)
    assert z is not None and 0 < t <= 1
    assert z.min() >= t - 1e-12 and (M @ z + q).min() >= t - 1e-12


def test_direction_solves_54_and_descends_on_the_potential() -> None:
    """(54) holds, and grad Phi . d <= -(1 - beta) zeta: the basis of our reading of (55)."""
    rng = np.random.default_rng(11)
    n = 6
    M = random_p0(n, 4, rng)
    z = rng.uniform(0.5, 2.0, n)
    q = rng.uniform(0.5, 2.0, n) - M @ z
    w = q + M @ z
    beta, zeta = 0.3, np.sqrt(n)
    dw, dz = fip.direction(M, w, z, beta)
    mu = w @ z / n
    np.testing.assert_allclose(dw, M @ dz, atol=1e-12)
    np.testing.assert_allclose(z * dw + w * dz, -w * z + beta * mu, atol=1e-10)
    h = 1e-7
    up = fip.potential(w + h * dw, z + h * dz, zeta)
    down = fip.potential(w - h * dw, z - h * dz, zeta)
    slope = (up - down) / (2 * h)
    assert slope <= -(1 - beta) * zeta + 1e-5


def test_no_strictly_feasible_point_is_nfp() -> None:
    """M = [[0, 1], [-1, 0]], q = 0: w_2 = -z_1, so z_1 > 0 and w_2 > 0 are incompatible. z = 0
    solves this LCP, so an empty interior must not be reported as infeasibility."""
    res = fip.solve([[0.0, 1.0], [-1.0, 0.0]], [0.0, 0.0])
    assert res.status is Status.NOT_SOLVED
    assert res.message.startswith("NFP")
    assert res.extras["nfp"] is True
    assert res.iterations == 0
    assert res.extras["phase1_t"] <= 1e-9


def test_empty_interior_with_a_solution_is_not_called_infeasible() -> None:
    """M = [[1, 0], [0, 0]], q = [-1, 0]: w_2 = 0 always (no interior), yet z = (1, 0) solves it."""
    res = fip.solve([[1.0, 0.0], [0.0, 0.0]], [-1.0, 0.0])
    assert res.status is Status.NOT_SOLVED and res.extras["nfp"]


def test_infeasible_lcp_is_nfp() -> None:
    """w = -1 - z < 0 for every z >= 0: not even feasible."""
    res = fip.solve([[-1.0]], [-1.0])
    assert res.status is Status.INFEASIBLE and res.extras["nfp"] and "infeasible" in res.message


@pytest.mark.parametrize("path", sorted(DATA.glob("*.npz")), ids=lambda p: p.stem)
def test_shared_lcps(path: Path) -> None:
    M, q = load(path.stem)
    res = fip.solve(M, q)
    if path.stem in NO_INTERIOR:
        # Phase I proves infeasibility only for the problem without a solution
        expected = Status.INFEASIBLE if path.stem == "lcp_Pang_isolated_sol_perturbed" else Status.NOT_SOLVED
        assert res.status is expected and res.message.startswith("NFP")
    else:
        assert res.status is Status.SOLVED, res.message
        assert lcp_residual(M, q, res.x) <= 1e-8
        assert res.iterations <= 300


def test_max_iter_reports_gap() -> None:
    rng = np.random.default_rng(5)
    M = random_p0(20, 20, rng)
    q = rng.standard_normal(20)
    res = fip.solve(M, q, max_iter=2)
    assert res.status is Status.MAX_ITER
    assert res.iterations == 2
    assert res.extras["gap"] > 1e-6 and res.extras["paper_criterion_met"] is False


def test_tighter_gap_keeps_iterating_until_purification_verifies() -> None:
    """purify=False: only the interior iterate itself can pass, so the gap must go much lower."""
    rng = np.random.default_rng(9)
    M = random_p0(10, 10, rng)
    q = rng.standard_normal(10)
    res = fip.solve(M, q, purify=False)
    assert res.success and res.residual <= 1e-8
    assert res.extras["gap"] <= 1e-8  # the 1e-6 target was divided by 100 at least once
    assert res.extras["purified"] is False


def test_bad_input_names_the_field() -> None:
    with pytest.raises(InputError) as e:
        fip.solve(np.ones((2, 3)), np.ones(2))
    assert e.value.field == "M"
    with pytest.raises(InputError) as e:
        fip.solve(np.eye(2), [1.0, np.nan])
    assert e.value.field == "q"
    with pytest.raises(InputError) as e:
        fip.solve(np.eye(2), np.ones(3))
    assert e.value.field == "q"


def test_bad_options() -> None:
    with pytest.raises(OptionError):
        fip.solve(np.eye(2), -np.ones(2), eta=1.5)
    with pytest.raises(OptionError):
        fip.solve(np.eye(2), -np.ones(2), gap_tl=1e-3)
    with pytest.raises(OptionError):
        fip.solve(np.eye(2), -np.ones(2), max_iter=-1)


def test_registry_entry() -> None:
    from contactmp.solvers.registry import lcp_solver

    assert fip.NAME == "fip"
    res = lcp_solver("fip")(np.eye(3), -np.ones(3))
    np.testing.assert_allclose(res.x, np.ones(3), atol=1e-10)
