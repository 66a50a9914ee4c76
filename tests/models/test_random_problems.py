"""The section-6 generator, the Table 1 data sets, and islands."""
from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.pyramid_lcp import PyramidLCP, random_pyramid_lcp
from contactmp.models import (
    Contact,
    ContactModel,
    Manipulator,
    contact_graph,
    link,
    obj,
    random_problem,
    split_islands,
    trinkle_dataset,
    two_stacks,
)

TABLE1 = {2: 20, 10: 60, 16: 10, 30: 26, 50: 20, 90: 23, 120: 10, 150: 6, 170: 10}


@pytest.fixture(scope="module")
def dataset():
    return trinkle_dataset(seed=0)


def _arrays(m: ContactModel) -> list[np.ndarray]:
    return [m.W, m.J, m.A, m.b, m.v, m.bias, m.M_obj, m.M_man, m.tau, m.mu]


def test_seeded_reproducibility():
    a = random_problem(42, 3, 5, 4, mu=0.3)
    b = random_problem(42, 3, 5, 4, mu=0.3)
    for x, y in zip(_arrays(a), _arrays(b)):
        assert np.array_equal(x, y)
    c = random_problem(43, 3, 5, 4, mu=0.3)
    assert c.A.shape != a.A.shape or not np.array_equal(c.A, a.A)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("shape", [(1, 2, 0), (1, 0, 2), (2, 5, 1), (3, 4, 6), (4, 6, 4), (1, 5, 10)])
def test_generated_models_satisfy_7_and_8(seed, shape):
    nb, ns, nr = shape
    m = random_problem(seed, nb, ns, nr)
    assert (m.n_obj, len(m.sliding), len(m.rolling)) == shape
    scale = max(1.0, np.abs(m.v).max())
    assert np.abs(m.v_n).max() <= 1e-9 * scale  # (7)
    vT = np.hypot(m.v_t, m.v_o)
    assert vT[m.rolling].max(initial=0.0) <= 1e-9 * scale  # (8)
    assert vT[m.sliding].min(initial=np.inf) >= 1e-2  # sliding contacts keep moving
    assert PyramidLCP(m).size == ns + 5 * nr
    # gravity acts on every box; every box rests on something below it
    for i, body in enumerate(m.objects):
        assert body.wrench[2] == pytest.approx(-body.mass * 9.81)
        below = [c for c in m.contacts if c.body_i == obj(i) and c.face == "k"]
        assert below and all(c.normal[2] > 0.8 for c in below)
    # fingertips push into their boxes along the normal (torques beyond g_man + h_man)
    if m.n_l:
        extra = m.tau - m.g_man - m.h_man
        assert np.abs(extra).max() > 0


def test_generator_input_validation():
    with pytest.raises(InputError) as info:
        random_problem(0, 3, 1, 1)
    assert info.value.field == "n_sliding"
    with pytest.raises(InputError) as info:
        random_problem(0, 0, 1, 1)
    assert info.value.field == "n_bodies"
    with pytest.raises(InputError) as info:
        random_problem(0, 1, -1, 1)
    assert info.value.field == "n_sliding"
    with pytest.raises(InputError) as info:
        random_pyramid_lcp(0, 1)
    assert info.value.field == "size"


def test_trinkle_dataset_sizes(dataset):
    assert len(dataset) == 328
    assert len({d.problem_id for d in dataset}) == 35
    sizes = Counter(d.size for d in dataset)
    assert min(sizes) == 2 and max(sizes) == 170
    for size, count in TABLE1.items():
        assert sizes[size] == count
    per_problem = Counter(d.problem_id for d in dataset)
    assert Counter(per_problem.values())[10] >= 30  # 10 friction values for most problems
    for d in dataset:
        assert d.mu in {round(0.1 * k, 1) for k in range(1, 11)}
        assert np.all(d.model.mu == d.mu)
        assert d.size == d.n_S + 5 * d.n_R
        assert (len(d.model.sliding), len(d.model.rolling), d.model.n_obj) == (d.n_S, d.n_R, d.n_bodies)
    # the problems of Tables 2-4 are among them
    shapes = {(d.size, d.n_bodies, d.n_S, d.n_R) for d in dataset}
    assert {(26, 4, 6, 4), (2, 1, 2, 0), (30, 5, 5, 5), (55, 1, 5, 10)} <= shapes


def test_trinkle_dataset_models_satisfy_7_8_and_lcp_size(dataset):
    seen = set()
    for d in dataset:
        if d.problem_id in seen:
            continue
        seen.add(d.problem_id)
        m = d.model
        scale = max(1.0, np.abs(m.v).max())
        assert np.abs(m.v_n).max() <= 1e-9 * scale
        assert np.hypot(m.v_t, m.v_o)[m.rolling].max(initial=0.0) <= 1e-9 * scale
        assert PyramidLCP(m).size == d.size
        # reproducible from the recorded seed and style
        again = random_problem(d.seed, d.n_bodies, d.n_S, d.n_R, mu=d.mu, style=d.style)
        assert np.array_equal(again.A, m.A) and np.array_equal(again.b, m.b)


def test_trinkle_dataset_is_reproducible(dataset):
    other = trinkle_dataset(seed=0)
    for d1, d2 in zip(dataset[::37], other[::37]):
        assert d1.seed == d2.seed and np.array_equal(d1.model.A, d2.model.A)
        assert np.array_equal(d1.model.b, d2.model.b)


@pytest.mark.parametrize("size", [1, 2, 7, 10, 50, 100, 170])
def test_random_pyramid_lcp_has_exact_size(size):
    M, q = random_pyramid_lcp(size, seed=3)
    assert M.shape == (size, size) and q.shape == (size,)
    M2, q2 = random_pyramid_lcp(size, seed=3)
    assert np.array_equal(M, M2) and np.array_equal(q, q2)


def test_generation_is_fast():
    t0 = time.perf_counter()
    for k in range(10):
        random_problem(100 + k, 3, 10, 7)  # a size-45 problem
    per = (time.perf_counter() - t0) / 10
    assert per < 0.25  # ~0.03 s on one core; loose for loaded CI machines


# ---------------------------------------------------------------------------------------------
# islands
# ---------------------------------------------------------------------------------------------


def _check_island_blocks(model: ContactModel, islands: list[ContactModel]) -> None:
    """A and b of the islands are the diagonal blocks of the whole model's A and b, and the
    off-island blocks vanish."""
    used = []
    for isl in islands:
        idx = []
        for c in isl.contacts:
            j = next(k for k, c0 in enumerate(model.contacts) if np.array_equal(c0.point, c.point)
                     and np.array_equal(c0.normal, c.normal))
            idx.append(j)
        used.append(idx)
        nc, ni = model.n_c, isl.n_c
        rows = np.concatenate([np.array(idx) + s * nc for s in range(3)])
        assert np.allclose(isl.A, model.A[np.ix_(rows, rows)], atol=1e-12)
        assert np.allclose(isl.b, model.b[rows], atol=1e-12)
    for a in range(len(used)):
        for b in range(len(used)):
            if a != b:
                ra = np.concatenate([np.array(used[a]) + s * model.n_c for s in range(3)])
                rb = np.concatenate([np.array(used[b]) + s * model.n_c for s in range(3)])
                assert np.abs(model.A[np.ix_(ra, rb)]).max() == 0.0


def test_two_stacks_split_into_two_islands():
    m = two_stacks()
    islands = split_islands(m)
    assert len(islands) == 2
    assert [isl.n_obj for isl in islands] == [2, 2] and [isl.n_c for isl in islands] == [8, 8]
    _check_island_blocks(m, islands)
    G = contact_graph(m)
    assert ("object", 0) in G and not any("ground" in str(n) for n in G.nodes)


def _finger(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    axes = np.array([[0, 0, 1.0], [0, 1.0, 0]])
    origins = np.array([p + [0.0, 0.0, 1.0], p + [0.0, 0.0, 0.5]])
    return axes, origins


def test_moving_manipulator_couples_islands_but_ground_does_not():
    base = two_stacks()
    # a fingertip on the top of each upper box: top face centres
    tops = [base.objects[1].position + [0, 0, 0.15], base.objects[3].position + [0, 0, 0.15]]
    axes, origins = [], []
    for p in tops:
        a, o = _finger(np.asarray(p))
        axes.append(a)
        origins.append(o)
    axes, origins = np.vstack(axes), np.vstack(origins)

    def model(parents, mass_matrix):
        man = Manipulator(axes=axes, origins=origins, parents=parents, joint_velocities=np.zeros(4),
                          efforts=np.zeros(4), mass_matrix=mass_matrix, g_man=np.zeros(4), h_man=np.zeros(4))
        extra = [Contact(obj(1), link(1), tops[0], [0, 0, -1], [1, 0, 0], face="i"),
                 Contact(obj(3), link(3), tops[1], [0, 0, -1], [1, 0, 0], face="i")]
        return ContactModel(base.objects, list(base.contacts) + extra, manipulator=man)

    # two independent fingers (block-diagonal M_man): still two islands
    m = model([-1, 0, -1, 2], np.eye(4))
    islands = split_islands(m)
    assert len(islands) == 2 and [isl.n_l for isl in islands] == [2, 2]
    _check_island_blocks(m, islands)
    # inertial coupling between the fingers joins them
    Mm = np.eye(4)
    Mm[1, 2] = Mm[2, 1] = 0.3
    m = model([-1, 0, -1, 2], Mm)
    assert len(split_islands(m)) == 1
    # one chain carrying both fingertips (joint 2 mounted on link 1) joins them
    m = model([-1, 0, 1, 2], np.eye(4))
    islands = split_islands(m)
    assert len(islands) == 1 and islands[0].n_c == 18
    assert np.allclose(islands[0].A, m.A) and np.allclose(islands[0].b, m.b)


def test_random_problem_islands_are_blocks():
    m = random_problem(7, 4, 6, 4)
    islands = split_islands(m)
    assert sum(isl.n_c for isl in islands) == m.n_c
    assert sum(isl.n_obj for isl in islands) == m.n_obj
    _check_island_blocks(m, islands)
