"""Certificates judge the impulses and, given a motion map, the motion.

A planar box (``box_2d``, mu = 0.8) resting on its two bottom corners, flat and on an incline of
0.3 rad (gravity tilted by the input force): one time step's pyramid LCP (12 unknowns, small
enough to enumerate) has a continuum of impulses (the friction and normal split between the
corners is indeterminate) and one next velocity ``v_{k+1} = 0``. The enumeration says so
(``verdict`` continuum, ``motion_verdict`` unique); the second-solution MILP finds a second
impulse set but proves that no second motion exists. Lotstedt's pulled rod has three motions."""
from __future__ import annotations

import math

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.base import Step, for_system
from contactmp.models.systems import box_2d
from contactmp.program import Program
from contactmp.reductions import MOTION_SAFETY, to_lcp
from contactmp.solvers.lcp.certificates import (
    Verdict, enumerate_lcp_solutions, lcp_existence_milp, lcp_second_solution_milp,
)

G = 9.81
H = 0.01


def _box_2d_step(slope: float):
    """The LCP of one step of a unit planar box at rest on its bottom corners, on an incline."""
    system = box_2d(mu=0.8)
    u = np.array([G * math.sin(slope), G * (1.0 - math.cos(slope)), 0.0])
    form = for_system("pyramid", system, H)
    prog = Program("box_2d_step")
    blk = form.add_step(prog, Step(system, H, np.array(system.q_nominal), np.zeros(3), u, contacts=np.array([0, 1])))
    red = to_lcp(prog)
    return red, red.motion_map(blk.v_next)


def test_enumeration_continuum_of_impulses_one_motion():
    """On the incline (the flat case is the MILP's and the multistart's; one enumeration takes ~20 s)."""
    red, mm = _box_2d_step(0.3)
    enum = enumerate_lcp_solutions(red.M, red.q, motion=mm)
    assert enum.verdict is Verdict.CONTINUUM
    assert enum.motion_verdict is Verdict.UNIQUE and enum.motion_count == 1.0
    assert enum.certifies == "impulses and motion"
    np.testing.assert_allclose(enum.motions[0], 0.0, atol=enum.tol_motion)
    assert enum.tol_motion == pytest.approx(MOTION_SAFETY * mm.gain * enum.tol, rel=1e-6)
    assert "motion" in enum.message


@pytest.mark.parametrize("slope", [0.0, 0.3])
def test_second_solution_milp_by_impulses_and_by_motion(slope):
    """By impulses a second solution exists (same motion); by motion none does, up to delta."""
    red, mm = _box_2d_step(slope)
    ex = lcp_existence_milp(red.M, red.q, time_limit=30)
    assert ex.verdict is Verdict.SOLUTION and ex.certifies == "existence"
    by_z = lcp_second_solution_milp(red.M, red.q, ex.z, 1e-4, time_limit=30)
    assert by_z.verdict is Verdict.SECOND_SOLUTION and by_z.certifies == "impulses"
    assert np.abs(mm(by_z.z) - mm(ex.z)).max() <= 1e-6  # another impulse set, the same motion
    by_v = lcp_second_solution_milp(red.M, red.q, ex.z, 1e-4, motion=mm, time_limit=30)
    assert by_v.verdict is Verdict.UNIQUE_UP_TO_DELTA and by_v.certifies == "motion"
    assert "motion" in by_v.separation


def test_pulled_rod_has_three_motions_and_a_certified_second_one():
    """Lotstedt's rod pulled up and back (theta = 45 deg, mu = 2): lift-off, stick and slip."""
    from contactmp.case_studies.uniqueness_random import lcp_motion_map
    from contactmp.formulations.pyramid_lcp import PyramidLCP
    from contactmp.models.painleve import RodState, rod

    form = PyramidLCP(rod(RodState(math.radians(45.0), 2.0, pull=(-1.0, 1.1))))
    mm = lcp_motion_map(form)
    plain = enumerate_lcp_solutions(form.M, form.q)
    assert plain.motion_verdict is None and plain.certifies == "impulses" and plain.motion_count is None
    enum = enumerate_lcp_solutions(form.M, form.q, motion=mm)
    assert enum.verdict is plain.verdict and enum.certifies == "impulses and motion"
    assert enum.motion_verdict is Verdict.FINITE and enum.motion_count == 3.0
    z1 = enum.solutions[0]
    sec = lcp_second_solution_milp(form.M, form.q, z1, 1e-3, motion=mm, time_limit=30)
    assert sec.verdict is Verdict.SECOND_SOLUTION and sec.certifies == "motion"
    assert np.abs(mm(sec.z) - mm(z1)).max() >= 1e-3 * (1 - 1e-9)
    assert sec.distance == pytest.approx(float(np.abs(mm(sec.z) - mm(z1)).max()))


def test_bad_motion_maps_are_refused():
    """A map with the wrong number of columns, not a map, a negative tolerance: InputError naming it."""
    red, mm = _box_2d_step(0.0)
    with pytest.raises(InputError, match="motion"):
        enumerate_lcp_solutions(red.M, red.q, motion=(mm.A[:, :-1], mm.b))
    with pytest.raises(InputError, match="motion"):
        lcp_second_solution_milp(red.M, red.q, np.zeros(red.q.size), 1e-4, motion="v")
    with pytest.raises(InputError, match="tol_motion"):
        enumerate_lcp_solutions(red.M, red.q, motion=mm, tol_motion=-1.0)
