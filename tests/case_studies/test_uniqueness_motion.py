"""The uniqueness studies count solutions by force and by motion: a box sliding on four coplanar
corners (acceleration-level pyramid LCP, :func:`contactmp.models.scenes.box_on_plane`) has a
continuum of normal-force distributions and one acceleration; the multistart, the enumeration and
the MILP path of the uniqueness-random study all say so, and the painleve-rod records carry both
counts."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.case_studies import painleve_rod as pr
from contactmp.case_studies import uniqueness_random as ur
from contactmp.formulations.pyramid_lcp import PyramidLCP
from contactmp.models.rigid_bodies import GRAVITY
from contactmp.models.scenes import box_on_plane
from contactmp.solvers.lcp.certificates import (
    Verdict, enumerate_lcp_solutions, lcp_existence_milp, lcp_second_solution_milp,
)
from contactmp.solvers.multistart import multistart


@pytest.fixture(scope="module")
def sliding_box() -> PyramidLCP:
    return PyramidLCP(box_on_plane(mu=0.4, speed=1.0))


def test_lcp_motion_map_is_the_accelerations(sliding_box: PyramidLCP) -> None:
    """``G L z + g0`` of :func:`lcp_motion_map` is the formulation's own ``qddot`` of a solution."""
    mm = ur.lcp_motion_map(sliding_box)
    ex = lcp_existence_milp(sliding_box.M, sliding_box.q, time_limit=30)
    np.testing.assert_allclose(mm(ex.z)[:6], sliding_box.solution(ex.z).qddot, atol=1e-9)
    assert mm(ex.z)[0] == pytest.approx(-0.4 * GRAVITY)


def test_sliding_box_many_forces_one_motion(sliding_box: PyramidLCP) -> None:
    mm = ur.lcp_motion_map(sliding_box)
    ms = multistart((sliding_box.M, sliding_box.q), starts=40, seed=0, motion=mm)
    assert ms.n_distinct_impulses > 1 and len(ur.multistart_forces(sliding_box, ms)) > 1
    assert ms.n_distinct_motions == 1
    enum = enumerate_lcp_solutions(sliding_box.M, sliding_box.q, motion=mm)
    assert enum.verdict is Verdict.CONTINUUM and enum.motion_verdict is Verdict.UNIQUE
    phys = ur.physical_solutions(sliding_box, enumerate_lcp_solutions(sliding_box.M, sliding_box.q))
    assert phys.n_motions == enum.motion_count == 1
    z1 = enum.solutions[0]
    by_z = lcp_second_solution_milp(sliding_box.M, sliding_box.q, z1, 1e-4, time_limit=30)
    by_v = lcp_second_solution_milp(sliding_box.M, sliding_box.q, z1, 1e-4, time_limit=30, motion=mm)
    assert by_z.verdict is Verdict.SECOND_SOLUTION and by_v.verdict is Verdict.UNIQUE_UP_TO_DELTA


def test_painleve_record_has_both_counts() -> None:
    """The pulled rod at 45 deg, mu = 2: three force solutions and three motions, proven and found;
    the MILP separated by motion agrees."""
    rec = pr.grid_point(("rolling-pulled", 45.0, 2.0, 0))
    assert rec["count"] == 3 and rec["motion_count"] == 3
    assert rec["multistart"]["n_motions"] == 3 and rec["multistart"]["n_forces"] == 3
    assert rec["multistart"]["n_z"] >= 3 and rec["multistart"]["tol_motion"] > 0
    assert rec["milp"]["second_motion"] == Verdict.SECOND_SOLUTION and rec["milp"]["second_motion_agrees"]
    assert rec["multistart_le_proven"]
