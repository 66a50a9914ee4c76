"""The pyramid LCP (35)-(39): its matrix, closed-form physics, and the map back with its check."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.pyramid_lcp import PyramidLCP, facet_generators
from contactmp.models import box_on_plane, random_problem
from contactmp.solvers import lcp_residual, solve_lcp

G = 9.81


def enumerate_lcp(M: np.ndarray, q: np.ndarray) -> list[np.ndarray]:
    """All solutions of LCP(q, M) at nondegenerate complementary bases (exact, for small n)."""
    n = q.shape[0]
    sols = []
    for mask in itertools.product([False, True], repeat=n):
        a = np.flatnonzero(mask)
        z = np.zeros(n)
        if a.size:
            try:
                z[a] = np.linalg.solve(M[np.ix_(a, a)], -q[a])
            except np.linalg.LinAlgError:
                continue
        if lcp_residual(M, q, z) <= 1e-10 * max(1.0, np.abs(q).max()):
            sols.append(z)
    return sols


def lemke(M: np.ndarray, q: np.ndarray) -> np.ndarray | None:
    res = solve_lcp(M, q, solver="lemke", tol=1e-9)
    return res.x if res.success else None


def paper_matrix(model) -> tuple[np.ndarray, np.ndarray]:
    """M and q of (37) written block by block from (27)-(28) and the M_nn definition."""
    A, b, nc = model.A, model.b, model.n_c
    S, R = model.sliding, model.rolling
    n_, t_, o_ = (lambda idx: idx), (lambda idx: nc + idx), (lambda idx: 2 * nc + idx)
    vT = np.hypot(model.v_t, model.v_o)
    VSt = np.diag(model.mu[S] * model.v_t[S] / vT[S])
    VSo = np.diag(model.mu[S] * model.v_o[S] / vT[S])
    UR = np.diag(model.mu[R])
    blk = lambda r, c: A[np.ix_(r, c)]
    both = np.concatenate([S, R])
    Vt = np.block([[VSt, np.zeros((len(S), len(R)))], [np.zeros((len(R), len(S))), UR]])
    Vo = np.block([[VSo, np.zeros((len(S), len(R)))], [np.zeros((len(R), len(S))), UR]])
    rows_n = both
    Mnn = blk(n_(rows_n), n_(both)) - blk(n_(rows_n), t_(both)) @ Vt - blk(n_(rows_n), o_(both)) @ Vo
    Mtn = blk(t_(R), n_(both)) - blk(t_(R), t_(both)) @ Vt - blk(t_(R), o_(both)) @ Vo
    Mon = blk(o_(R), n_(both)) - blk(o_(R), t_(both)) @ Vt - blk(o_(R), o_(both)) @ Vo
    nS, nR = len(S), len(R)
    I, Z = np.eye(nR), np.zeros((nR, nR))
    ZS = np.zeros((nR, nS))
    M = np.block([
        [Mnn, blk(n_(both), t_(R)), blk(n_(both), o_(R)), np.zeros((nS + nR, 2 * nR))],
        [Mtn, blk(t_(R), t_(R)), blk(t_(R), o_(R)), I, Z],
        [Mon, blk(o_(R), t_(R)), blk(o_(R), o_(R)), Z, I],
        [ZS, 2 * UR, -I, Z, Z, Z],
        [ZS, 2 * UR, Z, -I, Z, Z],
    ])
    q = np.concatenate([b[n_(S)], b[n_(R)], b[t_(R)], b[o_(R)], np.zeros(2 * nR)])
    return M, q


# ---------------------------------------------------------------------------------------------
# the matrix
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed,shape", [(0, (2, 3, 2)), (1, (3, 5, 4)), (2, (1, 0, 3)), (3, (2, 4, 0))])
def test_matrix_is_the_papers_37(seed, shape):
    m = random_problem(seed, *shape, mu=0.4)
    P = PyramidLCP(m)
    M, q = paper_matrix(m)
    assert P.size == shape[1] + 5 * shape[2]
    assert np.allclose(P.M, M, atol=1e-12) and np.allclose(P.q, q, atol=1e-12)
    assert len(P.z_names) == len(P.w_names) == P.size and len(P.index) == P.size
    j = int(m.rolling[0]) if m.rolling.size else int(m.sliding[0])
    assert P.z_names[P.index[f"c_n[{j}]"]] == f"c_n[{j}]"


def test_validation_names_fields():
    m = box_on_plane()
    with pytest.raises(InputError) as info:
        PyramidLCP(m, facets=2)
    assert info.value.field == "facets"
    with pytest.raises(InputError) as info:
        PyramidLCP(m, facets=6, form="paper")
    assert info.value.field == "form"
    P = PyramidLCP(m)
    with pytest.raises(InputError) as info:
        P.solution(np.zeros(P.size + 1))
    assert info.value.field == "z"


def test_facet_generators_circumscribe_the_circle():
    for k in (3, 4, 5, 8):
        D = facet_generators(k)
        # polygon edges between consecutive vertices are at distance 1 from the origin
        for i in range(k):
            p, r = D[i], D[(i + 1) % k]
            e = r - p
            dist = abs(p[0] * e[1] - p[1] * e[0]) / np.linalg.norm(e)
            assert dist == pytest.approx(1.0)
    assert np.allclose(np.abs(facet_generators(4)), 1.0)  # the square |c_t|, |c_o| <= mu c_n


# ---------------------------------------------------------------------------------------------
# closed-form physics
# ---------------------------------------------------------------------------------------------


def _assert_check_small(P, sol, tol=1e-9):
    res = P.check(sol)
    assert set(res) >= {"(4)", "(5)", "(6)", "(9)", "(12)", "(16)", "(17)", "(18)"}
    assert max(res.values()) < tol, res


def test_box_at_rest_on_ground():
    mass = 1.3
    m = box_on_plane(mass=mass, mu=0.5)
    P = PyramidLCP(m)
    # the symmetric answer: c_n = m g / 4 at each corner, no friction, is an exact LCP solution
    z = np.zeros(P.size)
    for j in range(4):
        z[P.index[f"c_n[{j}]"]] = mass * G / 4
        z[P.index[f"s+_t[{j}]"]] = z[P.index[f"s+_o[{j}]"]] = 0.5 * mass * G / 4
    assert lcp_residual(P.M, P.q, z) < 1e-12
    sol = P.solution(z)
    assert np.allclose(sol.c_t, 0) and np.allclose(sol.c_o, 0) and np.allclose(sol.qddot, 0, atol=1e-12)
    _assert_check_small(P, sol)
    # any solution (the forces are not unique: 4 supports) has the same physics
    answers = [lemke(P.M, P.q)]
    fip = solve_lcp(P.M, P.q, solver="fip", tol=1e-9)
    if fip.success:
        answers.append(fip.x)
    for zz in answers:
        sol = P.solution(zz)
        assert abs(sol.c_n.sum() - mass * G) < 1e-9
        assert abs(sol.c_t.sum()) < 1e-9 and abs(sol.c_o.sum()) < 1e-9  # zero net friction
        assert np.abs(sol.qddot).max() < 1e-9
        assert sol.modes == ["rolling"] * 4
        _assert_check_small(P, sol)


@pytest.mark.parametrize("mu", [0.2, 0.6])
def test_box_sliding_on_ground_decelerates_at_mu_g(mu):
    v = 1.5
    m = box_on_plane(mass=2.0, speed=v, mu=mu)
    P = PyramidLCP(m)
    assert P.size == 4  # n_S = 4, n_R = 0
    z = lemke(P.M, P.q)
    assert z is not None
    sol = P.solution(z)
    assert np.allclose(sol.c_t, -mu * sol.c_n, atol=1e-12) and np.allclose(sol.c_o, 0, atol=1e-12)
    assert abs(sol.c_n.sum() - 2.0 * G) < 1e-9
    assert np.allclose(sol.qddot[:3], [-mu * G, 0, 0], atol=1e-9)
    assert np.allclose(sol.qddot[3:], 0, atol=1e-9)
    assert sol.modes == ["sliding"] * 4
    _assert_check_small(P, sol)


@pytest.mark.parametrize("slope,mu", [(0.3, 0.5), (0.45, 0.5), (0.6, 0.5), (0.9, 0.3)])
def test_box_on_incline(slope, mu):
    m = box_on_plane(slope=slope, mu=mu, mass=1.0)
    P = PyramidLCP(m)
    z = lemke(P.M, P.q)
    assert z is not None
    sol = P.solution(z)
    t = m.contacts[0].tangent  # downhill
    _assert_check_small(P, sol)
    if np.tan(slope) < mu:
        assert np.abs(sol.qddot).max() < 1e-9
        assert sol.modes == ["rolling"] * 4
        assert abs(sol.c_t.sum() + G * np.sin(slope)) < 1e-9  # friction holds the weight's slope part
    else:
        acc = G * (np.sin(slope) - mu * np.cos(slope))
        assert np.allclose(sol.qddot[:3], acc * t, atol=1e-9)
        assert np.allclose(sol.qddot[3:], 0, atol=1e-9)
        assert sol.modes == ["sliding"] * 4
        assert np.allclose(sol.c_t, -mu * sol.c_n, atol=1e-9)  # pyramid face along the slope


# ---------------------------------------------------------------------------------------------
# generated problems: exact solutions satisfy the physics
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("shape", [(1, 2, 0), (1, 5, 1), (2, 1, 2), (1, 0, 2)])
def test_small_generated_problems_by_enumeration(seed, shape):
    m = random_problem(seed, *shape, mu=0.1 + 0.15 * seed)
    P = PyramidLCP(m)
    assert P.size <= 12
    sols = enumerate_lcp(P.M, P.q)
    z_lemke = lemke(P.M, P.q)
    if not sols:  # no solution at a complementary basis: Lemke must not claim one either
        assert z_lemke is None
    elif z_lemke is not None:
        sols.append(z_lemke)
    for z in sols:
        sol = P.solution(z)
        res = P.check(sol)
        assert max(res.values()) < 1e-8, res
        # the LCP's complementarity shows up as the physical modes
        for j, mode in enumerate(sol.modes):
            if mode == "breaking":
                assert abs(sol.c_n[j]) < 1e-9 and abs(sol.c_t[j]) < 1e-9 and abs(sol.c_o[j]) < 1e-9


@pytest.mark.parametrize("seed,shape", [(s, sh) for s in range(4) for sh in [(2, 3, 2), (3, 6, 4), (4, 6, 4), (1, 5, 10)]])
def test_generated_problems_by_lemke(seed, shape):
    m = random_problem(seed, *shape, mu=0.5)
    P = PyramidLCP(m)
    z = lemke(P.M, P.q)
    assert z is not None, "Lemke solves every one of these seeded problems"
    sol = P.solution(z)
    res = P.check(sol)
    assert max(res.values()) < 1e-8, res
    # rolling contacts that keep rolling have forces inside the pyramid; those that start to slide
    # have friction on the pyramid's boundary opposing the sliding components (18)
    for j in m.rolling:
        if sol.modes[j] == "sliding":
            for a, c in ((sol.a_t[j], sol.c_t[j]), (sol.a_o[j], sol.c_o[j])):
                if abs(a) > 1e-7:
                    assert c == pytest.approx(-np.sign(a) * m.mu[j] * sol.c_n[j], abs=1e-8)


@pytest.mark.parametrize("seed", range(5))
def test_generator_form_k4_and_paper_form_both_satisfy_the_papers_conditions(seed):
    m = random_problem(seed, 2, 3, 3, mu=0.4)
    paper = PyramidLCP(m, facets=4, form="paper")
    gens = PyramidLCP(m, facets=4, form="generators")
    assert gens.size == 3 + 6 * 3 and paper.size == 3 + 5 * 3
    z1, z2 = lemke(paper.M, paper.q), lemke(gens.M, gens.q)
    assert z1 is not None and z2 is not None
    s1, s2 = paper.solution(z1), gens.solution(z2)
    # both judged by the paper's (17)-(18) (the 4-facet checker of either form)
    for sol in (s1, s2):
        assert max(paper.check(sol).values()) < 1e-8
        assert max(gens.check(sol).values()) < 1e-8
    # the friction polygon of the generator form is exactly the paper's square
    R = m.rolling
    assert np.all(np.abs(s2.c_t[R]) <= m.mu[R] * s2.c_n[R] + 1e-9)
    assert np.all(np.abs(s2.c_o[R]) <= m.mu[R] * s2.c_n[R] + 1e-9)


@pytest.mark.parametrize("k", [3, 6, 8])
def test_more_facets(k):
    m = random_problem(21, 2, 2, 3, mu=0.5)
    P = PyramidLCP(m, facets=k)
    assert P.size == 2 + (k + 2) * 3
    z = lemke(P.M, P.q)
    assert z is not None
    sol = P.solution(z)
    res = P.check(sol)
    assert max(res.values()) < 1e-8, res
    # forces inside the circumscribing polygon, so within 1/cos(pi/k) of the Coulomb cone
    R = m.rolling
    cT = np.hypot(sol.c_t[R], sol.c_o[R])
    assert np.all(cT <= m.mu[R] * sol.c_n[R] / np.cos(np.pi / k) + 1e-9)


def test_box_on_incline_with_many_facets_matches_closed_form():
    slope, mu = 0.6, 0.5
    m = box_on_plane(slope=slope, mu=mu)
    t = m.contacts[0].tangent
    for k in (4, 8, 16):
        P = PyramidLCP(m, facets=k, form="generators")
        z = lemke(P.M, P.q)
        sol = P.solution(z)
        assert max(P.check(sol).values()) < 1e-9
        # the polygon's support in the downhill direction is mu c_n (a vertex or edge along t for
        # k divisible by 4): the same deceleration as Coulomb
        acc = G * (np.sin(slope) - mu * np.cos(slope))
        assert np.allclose(sol.qddot[:3], acc * t, atol=1e-8)


def test_check_detects_wrong_answers():
    m = box_on_plane(slope=0.6, mu=0.5)
    P = PyramidLCP(m)
    sol = P.solution(lemke(P.M, P.q))
    bad = P.solution(sol.z * 1.01)
    assert max(P.check(bad).values()) > 1e-3
    sol.qddot = sol.qddot + 1e-3
    assert P.check(sol)["(4)"] > 1e-4


@pytest.mark.parametrize("facets", [4, 8])
def test_solve_by_islands_equals_the_whole_solve(facets):
    """Two separate stacks: the LCP is block diagonal over the two islands of the contact graph;
    solving each block alone gives a z that solves the whole LCP (verified on the whole residual)
    and the physics of the whole solve (accelerations all zero: the stacks rest)."""
    from contactmp.models.scenes import two_stacks

    form = PyramidLCP(two_stacks(mu=0.5), facets=facets)
    blocks = form.island_blocks()
    assert len(blocks) == 2 and sum(b.size for b in blocks) == form.size
    assert np.abs(form.M[np.ix_(blocks[0], blocks[1])]).max() == 0.0
    assert np.abs(form.M[np.ix_(blocks[1], blocks[0])]).max() == 0.0
    res, sol = form.solve("lemke")
    whole, sol_whole = form.solve("lemke", islands=False)
    assert res.success and whole.success
    assert [p["size"] for p in res.extras["islands"]] == [b.size for b in blocks]
    assert lcp_residual(form.M, form.q, res.x) <= 1e-10
    np.testing.assert_allclose(sol.qddot, 0.0, atol=1e-9)
    np.testing.assert_allclose(sol.qddot, sol_whole.qddot, atol=1e-9)
    assert max(form.check(sol).values()) <= 1e-8
    # each stack carries its own weight: the ground contacts of a stack hold 2 boxes
    np.testing.assert_allclose(sol.c_n.sum(), sol_whole.c_n.sum(), rtol=1e-10)


def test_solve_by_islands_on_random_problems_verifies_on_the_whole_lcp():
    """Random section-6 problems: the island solve is judged by the whole LCP; whenever it claims
    solved, the whole residual and the paper's conditions hold."""
    checked = 0
    for seed in range(12):
        form = PyramidLCP(random_problem(seed, 4, 6, 4, mu=0.3))
        res, sol = form.solve("lemke")
        assert (res.status.value == "solved") == (lcp_residual(form.M, form.q, res.x) <= 1e-8)
        if res.success:
            checked += 1
            assert max(form.check(sol).values()) <= 1e-6
    assert checked >= 8
