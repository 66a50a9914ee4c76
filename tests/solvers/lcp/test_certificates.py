"""Certificates for LCPs: MILP existence / second solution, complete enumeration, matrix classes,
and the Proposition 3 friction bound (Trinkle, Pang, Sudarsky and Lo 1995)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.pyramid_lcp import PyramidLCP, proposition3_mu_bound
from contactmp.models.random_problems import random_problem
from contactmp.solvers.lcp.certificates import (
    enumerate_lcp_solutions,
    is_copositive,
    is_p_matrix,
    is_strictly_copositive,
    lcp_existence_milp,
    lcp_second_solution_milp,
)
from contactmp.solvers.lcp.problem import lcp_residual

TOL = 1e-8

#: Horn's matrix: copositive, but neither PSD + nonnegative nor strictly copositive
HORN = np.array([
    [1, -1, 1, 1, -1],
    [-1, 1, -1, 1, 1],
    [1, -1, 1, -1, 1],
    [1, 1, -1, 1, -1],
    [-1, 1, 1, -1, 1],
], dtype=float)

#: 2x2 LCP with exactly two solutions, worked by hand over the four bases
#: (w = M z + q):  {}: w = q, w_2 = -1 < 0;  {1}: z_1 = 1, w_2 = 2 - 1 = 1 >= 0  -> (1, 0);
#: {2}: z_2 = 1, w_1 = 2 + 1 = 3 >= 0  -> (0, 1);  {1,2}: z = -M^{-1} q = (3/5, -1/5) < 0.
TWO_M = np.array([[-1.0, 2.0], [2.0, 1.0]])
TWO_Q = np.array([1.0, -1.0])
TWO_SOLUTIONS = [np.array([1.0, 0.0]), np.array([0.0, 1.0])]


def _load(repo_data, name):
    d = np.load(repo_data / "lcp" / f"{name}.npz", allow_pickle=False)
    return d["M"], d["q"]


def _small_problems(repo_data):
    out = []
    for path in sorted((repo_data / "lcp").glob("*.npz")):
        d = np.load(path, allow_pickle=False)
        if d["q"].shape[0] <= 16:
            out.append((path.stem, d["M"], d["q"]))
    return out


# ------------------------------------------------------------------------------------------------
# existence: MILP against enumeration
# ------------------------------------------------------------------------------------------------
def test_existence_milp_agrees_with_enumeration(repo_data):
    problems = _small_problems(repo_data)
    assert len(problems) >= 14
    for name, M, q in problems:
        enum = enumerate_lcp_solutions(M, q)
        cert = lcp_existence_milp(M, q, time_limit=30)
        assert enum.verdict != "undecided", name
        solvable = enum.verdict != "no_solution"
        assert cert.verdict == ("solution" if solvable else "no_solution"), (name, cert.message)
        for z, r in zip(enum.solutions, enum.residuals):
            assert r <= TOL and lcp_residual(M, q, z) <= TOL
        if solvable:
            assert cert.residual <= TOL and lcp_residual(M, q, cert.z) <= TOL
            assert (cert.z >= 0).all()
            if enum.verdict in ("unique", "finite"):  # the MILP's solution is one of the enumerated
                dist = np.abs(enum.solutions - cert.z).max(axis=1)
                assert dist.min() <= 1e-6 * (1 + np.abs(cert.z).max()), name


def test_infeasible_lcp_is_proven(repo_data):
    # w_2 = z_1 - 1 >= 0 and w_3 = 1 - z_1 >= 0 force z_1 = 1, then w_1 = -z_2 - z_3 - 1e-4 < 0
    M, q = _load(repo_data, "lcp_Pang_isolated_sol_perturbed")
    cert = lcp_existence_milp(M, q)
    assert cert.verdict == "no_solution" and cert.z is None
    assert cert.alpha_upper <= 1e-6
    assert cert.z_bound > 1e5  # (here alpha* = 0 exactly: no solution at all)
    enum = enumerate_lcp_solutions(M, q)
    assert enum.verdict == "no_solution" and enum.count == 0
    # the unperturbed problem has the isolated solution (1, 0, 0) on a singular basis
    M0, q0 = _load(repo_data, "lcp_Pang_isolated_sol")
    enum0 = enumerate_lcp_solutions(M0, q0)
    assert enum0.verdict == "unique"
    np.testing.assert_allclose(enum0.solutions[0], [1.0, 0.0, 0.0], atol=1e-12)


def test_enumeration_flags_continua(repo_data):
    # CPS_1: z_1 + z_2 = 1 (segment); CPS_5: z_2 = z_1 + 1 (ray); inf_sol_perturbed: z_1 = 1,
    # z_3 = z_2 + 1e-4 (ray)
    for name, ray in (("lcp_CPS_1", False), ("lcp_CPS_5", True), ("lcp_inf_sol_perturbed", True)):
        M, q = _load(repo_data, name)
        enum = enumerate_lcp_solutions(M, q)
        assert enum.verdict == "continuum" and enum.count == float("inf"), name
        for piece in enum.continua:
            assert piece.bounded != ray
            lo, hi = piece.t_range
            d = piece.directions[:, 0]
            for t in (lo, 0.5 * (lo + hi) if np.isfinite(hi) else lo + 10.0, hi if np.isfinite(hi) else lo + 1e3):
                z = piece.point + t * d
                assert lcp_residual(M, q, np.maximum(z, 0)) <= 1e-9, (name, t)
    M, q = _load(repo_data, "lcp_CPS_1")
    piece = enumerate_lcp_solutions(M, q).continua[0]
    d = piece.directions[:, 0]
    assert abs(abs(d @ np.array([1.0, -1.0])) / np.sqrt(2) - 1.0) < 1e-12  # along z_1 + z_2 = 1
    assert piece.t_range[1] - piece.t_range[0] == pytest.approx(np.sqrt(2), rel=1e-9)


def test_enumeration_finds_every_solution_of_a_bimatrix_game(repo_data):
    M, q = _load(repo_data, "lcp_CPS_3")
    enum = enumerate_lcp_solutions(M, q)
    assert enum.verdict == "finite" and len(enum.solutions) == 3
    # a second-solution search from each finds one of the others
    for z1 in enum.solutions:
        cert = lcp_second_solution_milp(M, q, z1, 1e-3)
        assert cert.verdict == "second_solution" and cert.distance >= 1e-3
        assert np.abs(enum.solutions - cert.z).max(axis=1).min() <= 1e-7


# ------------------------------------------------------------------------------------------------
# uniqueness up to delta
# ------------------------------------------------------------------------------------------------
def test_two_solution_lcp():
    enum = enumerate_lcp_solutions(TWO_M, TWO_Q)
    assert enum.verdict == "finite"
    found = sorted(map(tuple, np.round(enum.solutions, 12)))
    assert found == sorted(map(tuple, TWO_SOLUTIONS))
    for z1, z2 in (TWO_SOLUTIONS, TWO_SOLUTIONS[::-1]):
        cert = lcp_second_solution_milp(TWO_M, TWO_Q, z1, 0.5)
        assert cert.verdict == "second_solution"
        np.testing.assert_allclose(cert.z, z2, atol=1e-10)
        assert cert.distance == pytest.approx(1.0)
        # the two solutions are exactly 1 apart: nothing at distance >= 1.5
        cert = lcp_second_solution_milp(TWO_M, TWO_Q, z1, 1.5)
        assert cert.verdict == "unique_up_to_delta" and cert.z is None


def test_p_matrix_lcp_is_unique(repo_data):
    for name in ("lcp_ortiz", "lcp_deudeu", "lcp_exp_murty"):
        M, q = _load(repo_data, name)
        assert is_p_matrix(M).verdict == "P", name
        z = lcp_existence_milp(M, q).z
        cert = lcp_second_solution_milp(M, q, z, 1e-3)
        assert cert.verdict == "unique_up_to_delta", (name, cert.message)
        assert cert.alpha_upper <= 1e-6 and cert.z_bound > 1e5
        enum = enumerate_lcp_solutions(M, q)
        assert enum.verdict == "unique"
        np.testing.assert_allclose(enum.solutions[0], z, atol=1e-9)


# ------------------------------------------------------------------------------------------------
# P-matrices and copositivity
# ------------------------------------------------------------------------------------------------
def _brute_p(M):
    n = M.shape[0]
    return all(np.linalg.det(M[np.ix_(J, J)]) > 0 for k in range(1, n + 1)
               for J in itertools.combinations(range(n), k))


def test_is_p_matrix_known():
    assert is_p_matrix(np.eye(4)).holds is True
    c = is_p_matrix([[1.0, 2.0], [2.0, 1.0]])  # positive diagonal, det = -3
    assert c.verdict == "not_P" and c.witness_subset == (0, 1)
    # minors 1, 1, 1 + 3 = 4: a P-matrix whose symmetric part is singular and that is no H-matrix
    c = is_p_matrix([[1.0, -3.0], [1.0, 1.0]])
    assert c.verdict == "P" and c.method == "all principal minors"
    assert is_p_matrix([[0.0, 1.0], [-1.0, 1.0]]).verdict == "not_P"  # zero diagonal entry
    # block diagonal of that 2x2, permuted: all 2^10 - 1 minors checked
    B = np.kron(np.eye(5), np.array([[1.0, -3.0], [1.0, 1.0]]))
    perm = np.random.default_rng(3).permutation(10)
    c = is_p_matrix(B[np.ix_(perm, perm)])
    assert c.verdict == "P" and c.n_checked == 2 ** 10 - 1
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(60):
        n = int(rng.integers(2, 6))
        M = rng.normal(size=(n, n)) + rng.uniform(0, 3) * np.eye(n)
        c = is_p_matrix(M)
        seen.add(c.verdict)
        assert c.holds == _brute_p(M)
        if c.verdict == "not_P":
            J = list(c.witness_subset)
            assert np.linalg.det(M[np.ix_(J, J)]) <= 0
    assert seen == {"P", "not_P"}


def test_copositivity_known():
    # Horn: copositive, not strictly (x = e_1 + e_2 gives 0), not PSD, has negative entries
    assert np.linalg.eigvalsh(HORN).min() < -1.0 and HORN.min() < 0
    c = is_copositive(HORN)
    assert c.verdict == "copositive" and c.method == "all principal submatrices"
    s = is_strictly_copositive(HORN)
    assert s.verdict == "not_strictly_copositive"
    x = s.witness
    assert (x >= 0).all() and x.any() and abs(x @ HORN @ x) <= 1e-12
    # sampled: x^T H x >= 0 on the simplex
    X = np.random.default_rng(1).dirichlet(np.ones(5) * 0.3, size=20000)
    assert np.einsum("ij,jk,ik->i", X, HORN, X).min() >= -1e-12
    # not copositive: witness with x^T M x < 0
    c = is_copositive([[1.0, -2.0], [-2.0, 1.0]])
    assert c.verdict == "not_copositive" and c.witness @ np.array([[1, -2], [-2, 1.0]]) @ c.witness < 0
    # strictly copositive though singular (x^T J x = (sum x)^2)
    assert is_strictly_copositive(np.ones((3, 3))).holds is True
    # a PSD matrix with negative entries: copositive, and not strictly (null vector (1, 1) >= 0)
    P = np.array([[1.0, -1.0], [-1.0, 1.0]])
    assert is_copositive(P).holds is True and is_strictly_copositive(P).holds is False
    # nonsymmetric input: only the symmetric part counts
    assert is_copositive([[1.0, -5.0], [3.0, 1.0]]).holds is True  # S = [[1, -1], [-1, 1]]


def test_copositivity_random_against_sampling():
    rng = np.random.default_rng(2)
    X = rng.dirichlet(np.ones(4) * 0.5, size=20000)
    verdicts = set()
    for _ in range(40):
        A = rng.normal(size=(4, 4))
        S = 0.5 * (A + A.T) + rng.uniform(0, 2) * np.eye(4)
        c = is_copositive(S)
        verdicts.add(c.verdict)
        vals = np.einsum("ij,jk,ik->i", X, S, X)
        if c.holds:
            assert vals.min() >= -1e-12
        else:
            x = c.witness
            assert (x >= 0).all() and x @ S @ x < 0
        if is_strictly_copositive(S).holds:
            assert c.holds
    assert verdicts == {"copositive", "not_copositive"}


# ------------------------------------------------------------------------------------------------
# Proposition 3
# ------------------------------------------------------------------------------------------------
def _distinct_forces(P, enum):
    forces = []
    for z in enum.solutions:
        c = P.L @ z
        if not any(np.abs(c - f).max() <= 1e-6 * (1 + np.abs(c).max()) for f in forces):
            forces.append(c)
    return forces


def test_proposition3_reconstruction_matches_the_pyramid_lcp():
    # all contacts sliding: the pyramid LCP matrix is exactly ~A = ~B - E_t - E_o (46)
    model = random_problem(1, 2, 3, 0, mu=0.3)
    fb = proposition3_mu_bound(model)
    P = PyramidLCP(model)
    np.testing.assert_allclose(fb.extras["A_tilde"], P.M, atol=1e-12)
    assert fb.sigma_min > 0 and 0 < fb.mu_bar == fb.mu_bar_unique < fb.mu_pd_exact
    # below mu_bar the symmetric part of ~A is positive definite (Proposition 3), so M is P
    small = PyramidLCP(model.with_mu(0.99 * fb.mu_bar))
    assert np.linalg.eigvalsh(0.5 * (small.M + small.M.T)).min() > 0
    assert is_p_matrix(small.M).verdict == "P"
    # mu_pd_exact is where the symmetric part stops being positive definite
    for f, sign in ((0.99, 1), (1.01, -1)):
        Mf = PyramidLCP(model.with_mu(f * fb.mu_pd_exact)).M
        assert sign * np.linalg.eigvalsh(0.5 * (Mf + Mf.T)).min() > 0


def test_proposition3_bound_gives_a_unique_solution():
    model = random_problem(0, 2, 2, 1, mu=0.3)  # 2 boxes, 2 sliding, 1 rolling: LCP size 7
    fb = proposition3_mu_bound(model)
    assert fb.sigma_min > 0 and 0 < fb.mu_bar_unique <= fb.mu_bar
    P = PyramidLCP(model.with_mu(0.9 * fb.mu_bar_unique))
    assert proposition3_mu_bound(P).verdict in ("uniqueness", "existence_and_uniqueness")
    enum = enumerate_lcp_solutions(P.M, P.q)
    assert enum.verdict == "unique" and len(_distinct_forces(P, enum)) == 1
    cert = lcp_second_solution_milp(P.M, P.q, enum.solutions[0], 1e-3)
    assert cert.verdict == "unique_up_to_delta"
    # how conservative: the same problem keeps one solution far above the bound, and has three
    # (indeterminacy) at mu = 2, about 200 times the bound; the MILP finds another one there
    P1 = PyramidLCP(model.with_mu(1.5))
    assert len(_distinct_forces(P1, enumerate_lcp_solutions(P1.M, P1.q))) == 1
    P2 = PyramidLCP(model.with_mu(2.0))
    enum2 = enumerate_lcp_solutions(P2.M, P2.q)
    assert enum2.verdict == "finite" and len(_distinct_forces(P2, enum2)) == 3
    cert2 = lcp_second_solution_milp(P2.M, P2.q, enum2.solutions[0], 1e-3)
    assert cert2.verdict == "second_solution" and lcp_residual(P2.M, P2.q, cert2.z) <= TOL
    assert 2.0 / fb.mu_bar_unique > 100


def test_proposition3_rank_deficient_model_has_no_bound():
    # a box on two corners, both rolling: ~B = A is singular (squeezing along the edge)
    fb = proposition3_mu_bound(random_problem(0, 1, 0, 2, mu=0.3))
    assert not fb.full_rank and fb.sigma_min <= 0 and fb.mu_bar_unique == 0
    assert fb.verdict == "not_guaranteed"


# ------------------------------------------------------------------------------------------------
# input checking and limits
# ------------------------------------------------------------------------------------------------
def test_bad_input_names_the_field():
    M, q = TWO_M, TWO_Q
    cases = [
        (lambda: lcp_existence_milp(np.ones((2, 3)), q), "M"),
        (lambda: lcp_existence_milp(M, [1.0, np.nan]), "q"),
        (lambda: lcp_existence_milp(M, q, time_limit=-1), "time_limit"),
        (lambda: lcp_second_solution_milp(M, q, [1.0], 0.1), "z1"),
        (lambda: lcp_second_solution_milp(M, q, [1.0, -1.0], 0.1), "z1"),
        (lambda: lcp_second_solution_milp(M, q, [1.0, 0.0], 0.0), "delta"),
        (lambda: enumerate_lcp_solutions(M, q, max_n=0), "max_n"),
        (lambda: is_p_matrix(np.ones((2, 3))), "M"),
        (lambda: is_copositive([[1.0, np.inf], [0.0, 1.0]]), "M"),
        (lambda: proposition3_mu_bound(M), "model"),
    ]
    for call, field in cases:
        with pytest.raises(InputError) as info:
            call()
        assert info.value.field == field


def test_limits_give_undecided_not_errors():
    rng = np.random.default_rng(0)
    M = rng.normal(size=(18, 18))
    q = rng.normal(size=18)
    enum = enumerate_lcp_solutions(M, q, max_n=16)
    assert enum.verdict == "undecided" and np.isnan(enum.count)
    # a P-matrix (block diagonal of [[1, -3], [1, 1]]) that no quick test recognizes: above max_n
    # only the minors of order <= 2 are searched, and none fails
    B = np.kron(np.eye(9), np.array([[1.0, -3.0], [1.0, 1.0]]))
    c = is_p_matrix(B, max_n=4)
    assert c.verdict == "undecided" and c.holds is None and c.value > 0
    A = np.eye(18) + 0.01 * rng.normal(size=(18, 18))
    A[0, 1] = A[1, 0] = -0.5  # copositive (diagonally dominant PSD): found by the quick test
    assert is_copositive(A, max_n=4).verdict == "copositive"
