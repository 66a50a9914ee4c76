"""Styles of the section-6 generator: fixtured boxes (jaws, channel, wall, corner, drawer) and heavy
fingers; the block between jaws has no strictly feasible point, yet Lemke solves it."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy.optimize import linprog

from contactmp.errors import InputError
from contactmp.formulations.pyramid_lcp import PyramidLCP, random_pyramid_lcp
from contactmp.models.random_problems import (
    STYLES,
    TRINKLE_PROBLEMS,
    SceneStyle,
    random_problem,
    trinkle_dataset,
)
from contactmp.models.scenes import block_between_jaws
from contactmp.solvers import solve_lcp

G = 9.81


def strict_feasibility(M: np.ndarray, q: np.ndarray) -> float:
    """``t* = max t`` s.t. ``M z + q >= t``, ``z >= t``, ``t <= 1`` (``t* > 0``: strictly feasible)."""
    n = q.size
    c = np.zeros(n + 1)
    c[-1] = -1.0
    a_ub = np.block([[-M, np.ones((n, 1))], [-np.eye(n), np.ones((n, 1))]])
    lp = linprog(c, A_ub=a_ub, b_ub=np.concatenate([q, np.zeros(n)]),
                 bounds=[(None, None)] * n + [(None, 1.0)], method="highs")
    assert lp.status == 0
    return float(lp.x[-1])


def opposing_pairs(m) -> list[tuple[int, int]]:
    """Pairs of contacts of one object with the fixed ground, opposite normals, on one normal line."""
    pairs = []
    for j, cj in enumerate(m.contacts):
        for k in range(j + 1, m.n_c):
            ck = m.contacts[k]
            if cj.body_i != ck.body_i or cj.body_k.kind != "ground" or ck.body_k.kind != "ground":
                continue
            d = np.asarray(ck.point) - np.asarray(cj.point)
            if np.allclose(cj.normal, -ck.normal, atol=1e-12) and np.linalg.norm(np.cross(d, cj.normal)) < 1e-9:
                pairs.append((j, k))
    return pairs


def only(*kinds: str) -> SceneStyle:
    return SceneStyle("test", float("inf"), (0.5, 3.0), (0.5, 3.0), True, kinds)


def lemke(M, q):
    return solve_lcp(M, q, solver="lemke", max_iter=101, restarts=0)


# ---------------------------------------------------------------------------------------------
# the hand-built block between jaws (Table 3's size-2 problem)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0])
def test_block_between_jaws_has_no_strictly_feasible_point_and_lemke_solves_it(mu):
    mass = 1.7
    m = block_between_jaws(mass=mass, mu=mu, speed=0.4)
    P = PyramidLCP(m)
    assert P.size == 2 and m.sliding.tolist() == [0, 1]
    # a_n0 = (c_n0 - c_n1)/m - g = -a_n1
    assert np.allclose(P.M, np.array([[1, -1], [-1, 1]]) / mass, atol=1e-14)
    assert np.allclose(P.q, [-G, G], atol=1e-14)
    assert abs(strict_feasibility(P.M, P.q)) <= 1e-9
    res = lemke(P.M, P.q)
    assert res.success and res.iterations <= 2 and res.residual <= 1e-12
    sol = P.solution(res.x)
    assert max(P.check(sol).values()) < 1e-10
    assert sol.c_n[0] - sol.c_n[1] == pytest.approx(mass * G)
    assert np.allclose(sol.c_t, -mu * sol.c_n) and np.allclose(sol.c_o, 0.0)  # friction opposes e_x
    assert np.allclose(sol.a_n, 0.0, atol=1e-12)
    # any clamping force on top is a solution too: the solution set is a ray
    z = res.x + 3.0
    assert np.abs(np.minimum(z, P.M @ z + P.q)).max() <= 1e-12


def test_block_between_jaws_at_rest():
    m = block_between_jaws(speed=0.0, mu=0.3)
    P = PyramidLCP(m)
    assert P.size == 10 and m.rolling.tolist() == [0, 1]
    assert abs(strict_feasibility(P.M, P.q)) <= 1e-9  # a_n0 + a_n1 = 0 still
    res = lemke(P.M, P.q)
    assert res.success
    sol = P.solution(res.x)
    assert max(P.check(sol).values()) < 1e-10
    assert sol.c_n[0] - sol.c_n[1] == pytest.approx(G)


# ---------------------------------------------------------------------------------------------
# generated fixtures
# ---------------------------------------------------------------------------------------------


def _check_7_8(m, shape) -> None:
    nb, ns, nr = shape
    assert (m.n_obj, len(m.sliding), len(m.rolling)) == shape
    scale = max(1.0, np.abs(m.v).max())
    assert np.abs(m.v_n).max() <= 1e-9 * scale  # (7)
    vT = np.hypot(m.v_t, m.v_o)
    assert vT[m.rolling].max(initial=0.0) <= 1e-9 * scale  # (8)
    assert vT[m.sliding].min(initial=np.inf) >= 1e-2
    assert PyramidLCP(m).size == ns + 5 * nr
    for i, body in enumerate(m.objects):
        assert body.wrench[2] == pytest.approx(-body.mass * G)
        # every box is held by the ground or another box, not by fingers alone
        assert any(c.body_i.index == i and c.body_k.kind != "link" for c in m.contacts)


@pytest.mark.parametrize("style", ["heavy", "workcell", "fixtured"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", [(1, 2, 0), (1, 0, 2), (2, 5, 1), (3, 4, 6), (2, 10, 4), (1, 5, 10)])
def test_styled_models_satisfy_7_and_8(style, seed, shape):
    m = random_problem(seed, *shape, style=style)
    _check_7_8(m, shape)
    again = random_problem(seed, *shape, style=style)
    assert np.array_equal(again.A, m.A) and np.array_equal(again.b, m.b)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("shape", [(1, 2, 0), (1, 0, 2), (1, 3, 1)])
def test_jaws_pair_fixes_a_n_sum_so_no_strictly_feasible_point(seed, shape):
    m = random_problem(seed, *shape, style=only("jaws"))
    _check_7_8(m, shape)
    (j, k), = opposing_pairs(m)
    # the box turns only about the jaw line, so the pins stay on their faces to second order
    w = m.objects[0].angular_velocity
    assert np.linalg.norm(np.cross(w, m.contacts[j].normal)) <= 1e-9 * max(1.0, np.linalg.norm(w))
    # a_nj + a_nk = 0 for any forces: the rows of A and b add up to zero
    assert np.abs(m.A[j] + m.A[k]).max() <= 1e-12 * np.abs(m.A).max()
    assert abs(m.b[j] + m.b[k]) <= 1e-12 * max(1.0, np.abs(m.b).max())
    for mu in (0.1, 0.6, 1.0):
        P = PyramidLCP(m.with_mu(mu))
        assert abs(strict_feasibility(P.M, P.q)) <= 1e-9


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shape", [(1, 8, 0), (1, 0, 8), (2, 0, 12)])
def test_channel_pairs_have_no_strictly_feasible_point(seed, shape):
    m = random_problem(seed, *shape, style=only("channel"))
    _check_7_8(m, shape)
    pairs = opposing_pairs(m)
    assert len(pairs) >= 2
    for j, k in pairs:
        assert np.abs(m.A[j] + m.A[k]).max() <= 1e-12 * np.abs(m.A).max()
        assert abs(m.b[j] + m.b[k]) <= 1e-12 * max(1.0, np.abs(m.b).max())
    P = PyramidLCP(m.with_mu(0.5))
    assert abs(strict_feasibility(P.M, P.q)) <= 1e-9
    res = solve_lcp(P.M, P.q, solver="lemke")
    if res.success:
        assert max(P.check(P.solution(res.x)).values()) < 1e-8


@pytest.mark.parametrize("kind,shape", [("wall", (1, 6, 0)), ("wall", (1, 0, 6)), ("corner", (1, 0, 8)),
                                        ("drawer", (1, 6, 0)), ("drawer", (1, 0, 6))])
def test_rank_deficient_fixtures_stay_strictly_feasible(kind, shape):
    for seed in range(3):
        m = random_problem(seed, *shape, style=only(kind))
        _check_7_8(m, shape)
        assert m.n_l == 0 and not opposing_pairs(m)
        # more contact constraints than the box's 6 degrees of freedom
        assert np.linalg.matrix_rank(m.J_sys) == 6 < 3 * m.n_c
        P = PyramidLCP(m.with_mu(0.5))
        assert strict_feasibility(P.M, P.q) > 1e-3
        res = solve_lcp(P.M, P.q, solver="lemke")
        assert res.success
        assert max(P.check(P.solution(res.x)).values()) < 1e-8
        if shape[1]:  # sliding along the guides: a pure translation
            assert np.allclose(m.objects[0].angular_velocity, 0.0, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_heavy_fingers_push_with_multiples_of_the_box_weight(seed):
    m = random_problem(seed, 2, 4, 3, style="heavy")
    man = m.manipulator
    assert man is not None and man.n_joints % 3 == 0
    extra = m.tau - m.g_man - m.h_man
    for j, c in enumerate(m.contacts):
        if c.body_k.kind != "link":
            continue
        k = c.body_k.index
        cols = [k - 2, k - 1, k]
        jn = (man.point_jacobian(k, c.point).T @ c.normal)[cols]
        push = float(jn @ extra[cols] / (jn @ jn))
        assert np.allclose(push * jn, extra[cols], rtol=1e-9, atol=1e-9)  # along the normal only
        ratio = push / (m.objects[c.body_i.index].mass * G)
        assert 0.5 - 1e-12 <= ratio <= 3.0 + 1e-12
    # link masses in [0.5, 3] kg make M_man much heavier than the classic fingers'
    light = random_problem(seed, 2, 4, 3)
    assert np.trace(m.M_man) / m.n_l > np.trace(light.M_man) / light.n_l


def test_style_default_is_classic_and_bad_styles_are_refused():
    a = random_problem(5, 2, 3, 2, mu=0.4)
    b = random_problem(5, 2, 3, 2, mu=0.4, style="classic")
    assert np.array_equal(a.A, b.A) and np.array_equal(a.b, b.b)
    c = random_problem(5, 2, 3, 2, mu=0.4, style="heavy")
    assert not np.array_equal(a.A, c.A) or a.A.shape != c.A.shape
    for bad in ("nope", 3, SceneStyle("x", 1.0, (0.0, 1.0), (0.1, 1.0), True),
                SceneStyle("x", 1.0, (0.1, 1.0), (0.1, 1.0), True, ("moat",))):
        with pytest.raises(InputError) as info:
            random_problem(0, 1, 2, 0, style=bad)
        assert info.value.field == "style"
    M, q = random_pyramid_lcp(30, seed=2, style="workcell")
    assert M.shape == (30, 30) and q.shape == (30,)


# ---------------------------------------------------------------------------------------------
# the Table 1 data sets
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dataset():
    return trinkle_dataset(seed=0)


def test_dataset_styles(dataset):
    styles = Counter(p[4] for p in TRINKLE_PROBLEMS)
    assert set(styles) <= set(STYLES) and styles["fixtured"] == 1
    assert all(d.style == TRINKLE_PROBLEMS[d.problem_id][4] for d in dataset)


def test_table3_size2_problem_is_the_block_between_jaws(dataset):
    """Table 3: size 2 (1 body, 2 sliding contacts), no strictly feasible point for any mu, and
    Lemke solves every data set at once."""
    rows = [d for d in dataset if d.problem_id == 0]
    assert len(rows) == 10 and {(d.size, d.n_bodies, d.n_S, d.n_R) for d in rows} == {(2, 1, 2, 0)}
    assert len(opposing_pairs(rows[0].model)) == 1
    for d in rows:
        P = PyramidLCP(d.model)
        assert abs(strict_feasibility(P.M, P.q)) <= 1e-9
        res = lemke(P.M, P.q)
        assert res.success and res.iterations <= 2
        assert max(P.check(P.solution(res.x)).values()) < 1e-8
    # the other size-2 problem (two boxes each sliding on a corner) is strictly feasible
    other = next(d for d in dataset if d.problem_id == 1)
    P = PyramidLCP(other.model)
    assert P.size == 2 and strict_feasibility(P.M, P.q) > 1e-3
