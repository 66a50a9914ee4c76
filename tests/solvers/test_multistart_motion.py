"""Multistart counts distinct solutions twice: by the impulses and by the motion they produce.

A box resting on four corners (on a flat plane and on an incline below its slip angle) is
statically indeterminate: one time step's LCP and fc3d problems have many impulse sets and one
next velocity ``v_{k+1} = 0``. Painleve's rod pulled up and back (Lotstedt's three solutions)
has genuinely distinct motions. The box step is built here from the shipped ``box_3d`` model
(CasADi), the incline as gravity tilted by the input force."""
from __future__ import annotations

import math

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.base import Step, for_system
from contactmp.models.systems import box_3d
from contactmp.program import Program
from contactmp.reductions import MOTION_SAFETY, MotionMap, to_cone_problem, to_lcp
from contactmp.solvers.multistart import multistart

G = 9.81
H = 0.01
BOTTOM = np.array([0, 2, 4, 6])  # box_3d's corners with z = -c/2
STARTS = 60


def _box_step(formulation: str, slope: float) -> tuple[Program, object]:
    """One time step of a unit box (edge 0.5 m, mu = 0.8) at rest on its four bottom corners, on a
    plane inclined by ``slope``: gravity tilted by the input force ``u = m g (sin, 0, 1 - cos)``."""
    system = box_3d(m=1.0, size=0.5, mu=0.8)
    u = np.array([G * math.sin(slope), 0.0, G * (1.0 - math.cos(slope)), 0.0, 0.0, 0.0])
    form = for_system(formulation, system, H)
    prog = Program("box_step")
    blk = form.add_step(prog, Step(system, H, np.array(system.q_nominal), np.zeros(6), u, contacts=BOTTOM))
    return prog, blk


def _reduced(formulation: str, slope: float):
    prog, blk = _box_step(formulation, slope)
    red = to_lcp(prog) if formulation == "pyramid" else to_cone_problem(prog)
    data = (red.M, red.q) if formulation == "pyramid" else (red.W, red.q, red.mu)
    return prog, blk, red, data


@pytest.mark.parametrize("formulation", ["pyramid", "cone"])
def test_motion_map_is_the_step_programs_next_velocity(formulation):
    """``A z + b`` of the reduction's map is ``v_{k+1}`` of the program's ``x = invert(z)``, for any ``z``."""
    prog, blk, red, data = _reduced(formulation, 0.3)
    mm = red.motion_map(blk.v_next)
    assert mm.name == blk.v_next.name and mm.A.shape == (6, data[1].shape[0])
    rng = np.random.default_rng(0)
    for _ in range(3):
        z = rng.random(data[1].shape[0])
        np.testing.assert_allclose(mm(z), prog.value(blk.v_next, red.invert(z)), rtol=0, atol=1e-12)


@pytest.mark.parametrize("slope", [0.0, 0.3])
@pytest.mark.parametrize("formulation", ["pyramid", "cone"])
def test_box_resting_on_four_corners_has_many_impulse_sets_and_one_motion(formulation, slope):
    """Below the slip angle (tan 0.3 = 0.31 < mu = 0.8) the box stays at rest: v_{k+1} = 0 for every
    impulse set, whose distribution over the corners is indeterminate."""
    _, blk, red, data = _reduced(formulation, slope)
    ms = multistart(data, starts=STARTS, seed=0, motion=red.motion_map(blk.v_next))
    assert ms.n_distinct_impulses >= 10, ms.n_distinct_impulses
    assert ms.n_distinct_motions == 1
    only = ms.motions[0]
    assert only.clusters == [c.index for c in ms.clusters if c.verified]
    assert only.count == sum(c.count for c in ms.clusters if c.verified)
    assert np.abs(only.v).max() <= ms.tol_motion
    assert only.spread <= 1e-7 < ms.tol_motion  # the impulse sets agree on v_{k+1} to ~1e-8
    assert all(c.motion == 0 for c in ms.clusters if c.verified)
    # the derived tolerance: MOTION_SAFETY ||A||_inf e + 64 eps V
    gain = float(np.abs(red.motion_map(blk.v_next).A).sum(axis=1).max())
    assert ms.motion_map["gain"] == pytest.approx(gain)
    if formulation == "pyramid":
        assert ms.tol_motion == pytest.approx(MOTION_SAFETY * gain * 1e-8, rel=1e-6)
    d = ms.to_dict()
    assert d["n_distinct_impulses"] == ms.n_distinct and d["n_distinct_motions"] == 1
    assert d["motions"][0]["clusters"] == only.clusters and d["tol_motion"] == ms.tol_motion


def test_bare_lcp_judges_no_motion_and_bare_fc3d_uses_the_contact_velocities():
    """Without a map an LCP reports impulses only (and says why); fc3d takes u = W r + q, which for
    the box (contact Jacobian of full column rank) counts the motions exactly."""
    _, _, _, lcp = _reduced("pyramid", 0.3)
    ms = multistart(lcp, starts=20, seed=0)
    assert ms.n_distinct_motions is None and ms.tol_motion is None and ms.motions == []
    assert "not judged" in ms.motion_note and ms.n_distinct_impulses > 1
    assert ms.to_dict()["n_distinct_motions"] is None
    _, _, _, fc3d = _reduced("cone", 0.3)
    ms = multistart(fc3d, starts=20, seed=0)
    assert ms.n_distinct_impulses > 1 and ms.n_distinct_motions == 1
    assert ms.motion_map["name"].startswith("contact velocity")


def test_painleve_rod_pulled_has_three_distinct_motions():
    """Lotstedt's resting rod pulled up and back at theta = 45 deg, mu = 2 (inside Painleve's region):
    separation, sticking and slipping are three solutions with three different accelerations."""
    from contactmp.case_studies.uniqueness_random import lcp_motion_map
    from contactmp.formulations.pyramid_lcp import PyramidLCP
    from contactmp.models.painleve import RodState, rod

    form = PyramidLCP(rod(RodState(math.radians(45.0), 2.0, pull=(-1.0, 1.1))))
    ms = multistart((form.M, form.q), starts=32, seed=0, motion=lcp_motion_map(form))
    assert ms.n_distinct_motions == 3
    assert ms.n_distinct_impulses >= 3
    vs = np.array([m.v for m in ms.motions])
    gaps = [np.abs(vs[i] - vs[j]).max() for i in range(3) for j in range(i)]
    assert min(gaps) > 1e3 * ms.tol_motion


def test_motion_tolerance_can_be_given_and_bad_maps_are_refused():
    _, blk, red, data = _reduced("pyramid", 0.3)
    mm = red.motion_map(blk.v_next)
    ms = multistart(data, starts=10, seed=0, motion=(mm.A, mm.b), tol_motion=1e-3)
    assert ms.tol_motion == 1e-3 and ms.n_distinct_motions == 1
    with pytest.raises(InputError, match="motion"):
        multistart(data, starts=2, motion=(mm.A[:, :-1], mm.b))
    with pytest.raises(InputError, match="motion"):
        multistart(data, starts=2, motion=np.eye(3))
    with pytest.raises(InputError, match="motion"):
        MotionMap(np.ones((2, 3)), np.ones(3))
    with pytest.raises(InputError, match="handle"):
        red.motion_map(np.array([10 ** 6]))


def test_program_multistart_judges_the_motion_of_the_selected_variables():
    """A Program's multistart (IPOPT from seeded guesses) takes a map of its ``x``: here the
    selection of ``v_{k+1}``; the box step's impulse sets differ, its motion does not."""
    prog, blk = _box_step("pyramid", 0.3)
    select = MotionMap(np.eye(prog.n_x)[blk.v_next.index], np.zeros(6), "v_next")
    ms = multistart(prog, starts=6, seed=0, motion=select)
    assert ms.n_solved == 6 and ms.n_distinct_impulses > 1 and ms.n_distinct_motions == 1
    assert ms.tol_motion == pytest.approx(MOTION_SAFETY * 1e-6)  # ||A||_inf = 1, e = max(feas_tol, comp_tol)
