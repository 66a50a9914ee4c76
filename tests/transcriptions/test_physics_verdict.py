"""The physics verdict of every time step (issue 35): each check of
:func:`~contactmp.transcriptions.physics_check.judge_step` on numbers whose answer is known, and
:class:`~contactmp.transcriptions.time_stepping.TimeStepping` flagging a solved step whose physics
is wrong (status ``unphysical``, a warning once per run, the trajectory's repr and summary)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from contactmp.formulations.base import Formulation, PhysicsTolerances, StepOutcome
from contactmp.models.systems import box_2d, box_3d, point_mass_2d
from contactmp.result import Status
from contactmp.transcriptions.physics_check import StepVerdict, check_trajectory, judge_step
from contactmp.transcriptions.time_stepping import PhysicsWarning, TimeStepping

TOL = PhysicsTolerances(penetration=1e-3, gap=1e-3)
H = 0.01


def _point_mass_step(z_next: float, p: tuple[float, float, float], vz: float = 0.0, vz_next: float = 0.0,
                     previous: StepVerdict | None = None, tol: PhysicsTolerances = TOL) -> StepVerdict:
    """The verdict of one step of a planar point mass (q = v = (x, z), one ground contact)."""
    s = point_mass_2d(mu=0.5)
    return judge_step(s, tol, H, np.array([0.0, 0.0]), np.array([0.0, vz]), np.array([0.0, z_next]),
                      np.array([0.0, vz_next]), np.array([p]), previous)


def test_a_resting_step_passes_every_check():
    v = _point_mass_step(0.0, (9.81 * H, 0.0, 0.0))
    assert v.ok and v.describe() == ""
    assert v.contact_work == 0.0 and v.force_max == pytest.approx(9.81)


def test_penetration_beyond_the_tolerance_is_named_with_its_value():
    v = _point_mass_step(-0.4, (0.0, 0.0, 0.0))
    assert set(v.violations) == {"penetration"}
    assert v.violations["penetration"] == (pytest.approx(0.4), 1e-3)
    assert "penetration 0.4 m > 0.001 m" in v.describe()
    assert _point_mass_step(-0.9e-3, (0.0, 0.0, 0.0)).ok  # within the tolerance


def test_force_at_a_gap_beyond_the_models_own_gap_force():
    v = _point_mass_step(0.01, (0.05, 0.0, 0.0))  # 5 N pushing at a 1 cm gap
    assert set(v.violations) == {"gap_force"}
    assert v.violations["gap_force"][0] == pytest.approx(5.0)
    allowed = PhysicsTolerances(penetration=1e-3, gap=1e-3, gap_force=6.0)  # a polytope's relax force
    assert _point_mass_step(0.01, (0.05, 0.0, 0.0), tol=allowed).ok


def test_friction_outside_the_models_cone_and_a_pulling_contact():
    v = _point_mass_step(0.0, (0.1, 0.06, 0.0))  # |p_t| = 0.06 > mu p_n = 0.05
    assert set(v.violations) == {"cone"} and v.violations["cone"][0] == pytest.approx(0.01)
    square = PhysicsTolerances(penetration=1e-3, gap=1e-3, cone_factor=math.sqrt(2.0))  # 4-facet pyramid
    assert _point_mass_step(0.0, (0.1, 0.06, 0.0), tol=square).ok
    v = _point_mass_step(0.0, (-0.1, 0.0, 0.0))
    assert "negative_normal" in v.violations


def test_contact_work_is_the_kinetic_energy_it_takes_and_a_gain_is_flagged():
    # an inelastic landing: v_z -1 -> 0 under p_n = m dv: the contact takes 1/2 m v^2 = 0.5 J
    landing = _point_mass_step(0.0, (1.0, 0.0, 0.0), vz=-1.0, vz_next=0.0)
    assert landing.ok and landing.contact_work == pytest.approx(-0.5, abs=1e-15)
    # a push that gives the mass 1 m/s upward while it stays in contact: +0.5 J from nowhere
    gain = _point_mass_step(0.0, (1.0, 0.0, 0.0), vz=0.0, vz_next=1.0)
    assert set(gain.violations) == {"energy_gain"} and gain.violations["energy_gain"][0] == pytest.approx(0.5)
    # the energy a landing stored may be given back (a bounce), no more
    back = _point_mass_step(0.0, (1.0, 0.0, 0.0), vz=0.0, vz_next=1.0, previous=landing)
    assert back.ok and back.contact_work == pytest.approx(0.0, abs=1e-15)


def test_a_verdict_round_trips_through_its_dict():
    v = _point_mass_step(-0.4, (0.0, 0.0, 0.0))
    assert StepVerdict.from_dict(v.to_dict()) == v
    assert StepVerdict.from_dict(None) is None


def test_a_sliding_box_passes_and_its_contacts_take_exactly_its_kinetic_energy():
    """A rigid box sliding to rest on level ground: every step solved and physical; the contacts'
    work is -1/2 m v0^2 (friction takes all the kinetic energy, the normal impulse none)."""
    s = box_2d(m=2.0, mu=0.5)
    ts = TimeStepping(s, H, "pyramid")
    v0 = np.array([1.5, 0.0, 0.0])
    tr = ts.simulate(s.q_nominal, v0, n_steps=40)
    assert tr.n_unphysical == 0 and all(st is Status.SOLVED for st in tr.status)
    assert abs(tr.v[-1]).max() < 1e-9  # stopped after v0 / (mu g) = 0.31 s
    work = tr.results[-1].extras["physics"]["contact_work"]
    assert work == pytest.approx(-0.5 * 2.0 * 1.5**2, rel=1e-9)
    assert all(r.time_s >= r.extras["solve_s"] for r in tr.results)  # a step's time includes its solve


@pytest.mark.parametrize("form,options", [("pyramid", {}), ("compliant", {"friction": "pyramid"})])
def test_a_3d_pyramid_may_reach_its_corners_but_not_beyond(form, options):
    """The 4-facet pyramid's square circumscribes the disk (the rigid pyramid's and the compliant
    contact's with ``friction="pyramid"``): a box sliding diagonally gets friction up to
    sqrt(2) mu p_n, which its own model allows; the cone check holds it to that."""
    s = box_3d(mu=0.3, size=0.2)
    ts = TimeStepping(s, H, form, **options)
    assert ts.tolerances.cone_factor == pytest.approx(math.sqrt(2.0))
    v0 = np.array([1.0, 1.0, 0.0, 0.0, 0.0, 0.0]) / math.sqrt(2.0)
    tr = ts.simulate(s.q_nominal, v0, n_steps=10)
    assert tr.n_unphysical == 0
    p = tr.impulses[0][tr.impulses[0][:, 0] > 0]
    assert np.max(np.hypot(p[:, 1], p[:, 2]) / (0.3 * p[:, 0])) > 1.3  # beyond Coulomb's cone, inside the square


class _Sinking(Formulation):
    """A user formulation whose step is 'solved' but lets everything fall: no contact force at all."""

    name = "sinking_for_test"

    def advance(self, step, *, solver=None, tol=1e-10):  # noqa: D102
        from contactmp.result import Result

        s = step.system
        v = step.v + np.linalg.solve(s.eval_M(step.q), step.h * (s.eval_B(step.q) @ step.u - s.eval_h(step.q, step.v)))
        q = step.q + step.h * s.eval_qdot(step.q, v)
        return StepOutcome(q, v, np.zeros((s.n_c, 3)), np.ones(s.n_c, dtype=bool),
                           Result(Status.SOLVED, v, "free_fall", 0.0, tol))


def test_a_solved_step_inside_the_ground_is_unphysical_and_warned_once():
    s = point_mass_2d(mu=0.5)
    ts = TimeStepping(s, H, _Sinking())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tr = ts.simulate(s.q_nominal, np.zeros(2), n_steps=50)
    physics = [w for w in caught if issubclass(w.category, PhysicsWarning)]
    assert len(physics) == 1 and "penetration" in str(physics[0].message)
    assert "status unphysical" in str(physics[0].message)  # its program was solved
    depth = -tr.q[-1][1]
    assert depth == pytest.approx(9.81 * H**2 * 50 * 51 / 2, rel=1e-12)  # symplectic Euler's fall
    first = int(np.argmax(-tr.q[1:, 1] > 1e-3))  # the first step that ends deeper than 1 mm
    assert all(st is Status.SOLVED for st in tr.status[:first])
    assert all(st is Status.UNPHYSICAL for st in tr.status[first:])
    assert tr.n_unphysical == 50 - first and tr.n_failed == tr.n_unphysical
    assert tr.violations["penetration"] == (50 - first, pytest.approx(depth))
    assert "unphysical" in repr(tr) and "penetration" in repr(tr)
    assert "physics: penetration" in tr.results[-1].message
    chk = check_trajectory(s, tr)
    assert chk.status_counts["unphysical"] == 50 - first and chk.violations == {"penetration": 50 - first}
    assert chk.summary()["unphysical_steps"] == 50 - first


def test_a_step_alone_is_judged_and_a_caller_loop_carries_the_work():
    """``step`` judges the step it takes; passing ``previous`` (as a caller's own loop does for a warm
    start) continues the run's contact work."""
    s = point_mass_2d(mu=0.5)
    ts = TimeStepping(s, H, "pyramid")
    # lands at 1 m/s: the impulse p = m (1 + g h) stops it, doing p (u + u+) / 2 = -(1 + g h) / 2 of work
    first = ts.step(np.array([0.0, 0.0]), np.array([0.0, -1.0]))
    assert first.status is Status.SOLVED
    landing = -0.5 * (1.0 + 9.81 * H)
    assert first.result.extras["physics"]["contact_work"] == pytest.approx(landing, rel=1e-9)
    second = ts.step(first.q, first.v, previous=first.result)  # at rest: no more work
    assert second.result.extras["physics"]["contact_work"] == pytest.approx(landing, rel=1e-9)
