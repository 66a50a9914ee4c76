"""formulation-compare (issue 17): the scenes' systems, the stable PD shared by every formulation,
the solvers each formulation lists, the known physics the study must recover, and the study's files."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from contactmp.case_studies import _compare_scenes as cs
from contactmp.case_studies import formulation_compare as fc
from contactmp.errors import InputError
from contactmp.formulations import registered
from contactmp.formulations.base import formulation
from contactmp.models.manipulation import two_finger_grasp
from contactmp.models.systems import ball_3d, box_3d, cube_3d, point_mass_2d
from contactmp.transcriptions.physics_check import check_trajectory
from contactmp.transcriptions.time_stepping import TimeStepping

G = 9.81


# ------------------------------------------------------------------------------ stable PD
@pytest.mark.parametrize("form", ["pyramid", "cone", "compliant", "nmdp", "mdp"])
def test_stable_pd_is_the_same_discrete_law_for_every_formulation(form):
    """Free flight of a point mass under ``pd_gains=(Kp, Kd)``: ``(m + h (h Kp + Kd)) v+ = m v + h (Kp (q_d - q)
    + Kd qd_d) - h m g e_z`` per coordinate, whichever formulation steps it (the contact is 5 m away)."""
    s = point_mass_2d(m=2.0)
    h, kp, kd = 0.01, np.array([30.0, 50.0]), np.array([2.0, 3.0])
    opts = {"stiffness": 1e5, "damping": 10.0, "tangential_damping": 100.0} if form == "compliant" else {}
    ts = TimeStepping(s, h, form, pd_gains=(kp, kd), **opts)
    q, v, q_d, qd_d = np.array([0.3, 5.0]), np.array([0.5, -1.0]), np.array([1.0, 5.5]), np.array([0.2, 0.0])
    out = ts.step(q, v, t=0.0, targets=lambda t: (q_d, qd_d))
    expect = (2.0 * v + h * (kp * (q_d - q) + kd * qd_d) - h * np.array([0.0, 2.0 * G])) / (2.0 + h * (h * kp + kd))
    assert out.success
    np.testing.assert_allclose(out.v, expect, rtol=0, atol=1e-12)  # a 2x2 solve: rounding ~1e-15
    np.testing.assert_allclose(out.q, q + h * expect, rtol=0, atol=1e-12)


def test_stable_pd_bad_input_names_the_field():
    with pytest.raises(InputError, match="pd_gains"):
        TimeStepping(point_mass_2d(), 0.01, "cone", pd_gains=(1.0,))
    with pytest.raises(InputError, match="pd_gains"):
        TimeStepping(point_mass_2d(), 0.01, "nmdp", pd_gains=(1.0, 0.1), kp=1.0)
    with pytest.raises(InputError, match="pd_gains"):  # a torque on a quaternion body's omega: no position to hold
        TimeStepping(box_3d(), 0.01, "cone", pd_gains=(1.0, 0.1))
    # the linearized MDP's own option pd ("stable" / "explicit") is not the controller's gains
    TimeStepping(point_mass_2d(), 0.01, "mdp", pd="explicit", pd_gains=(1.0, 0.1))


# ------------------------------------------------------------------------------ the systems
def test_cube_3d_is_box_3d_in_euler_angles():
    """At zero angles the Euler rates are the body angular velocity, so both mass matrices agree;
    every formulation accepts the minimal-coordinate cube (qdot = v), the quaternion box only some."""
    c, b = cube_3d(size=0.2), box_3d(size=0.2)
    np.testing.assert_allclose(c.eval_M(c.q_nominal), b.eval_M(b.q_nominal), atol=1e-15)
    for name in registered():
        TimeStepping(c, 0.01, name, **cs.formulation_options(name, cs.scene("cube-slide-15")))


def test_quick_plan_runs_every_formulation_on_the_quaternion_box_and_the_3d_solo12():
    """The quick study steps box_3d (sliding in two directions, on both inclines, at rest) and the 3D
    Solo12 (standing, dropped 10 cm, under the stable PD) with all five formulations."""
    plan = fc.plan(quick=True)
    five = {"pyramid", "cone", "compliant", "nmdp", "mdp"}
    for scene in ("box3d-slide-15", "box3d-slide-60", "box3d-incline-below", "box3d-incline-above", "box3d-rest",
                  "solo12-3d-stand", "solo12-3d-drop"):
        assert five <= {config for name, config, _, h in plan if name == scene and h == fc.H_MAIN}, scene


def test_quaternion_box_scene_is_the_euler_cube_scene():
    """box3d-slide-15 and cube-slide-15 are the same physics in two charts of the orientation: under
    the cone both stop at the rigid step's discrete distance exactly (to 1e-12), under NMDP (the
    quaternion chart q(xi) = R(q_k + G(q_k) xi)) both stop at the same distance to 1e-8 relative
    (PGM's tolerance); the incline above the slip angle (box_3d's tilted gravity is its input)
    accelerates at g (sin a - mu cos a) to 1e-9 under the cone."""
    for form, tol in (("cone", 1e-12), ("nmdp", 1e-8)):
        box = fc.run_case(("box3d-slide-15", form, fc.default_solver(form, {}), 0.01))
        cube = fc.run_case(("cube-slide-15", form, fc.default_solver(form, {}), 0.01))
        assert box["failed_steps"] == cube["failed_steps"] == 0
        assert box["physics"]["distance_rel_err"] == pytest.approx(cube["physics"]["distance_rel_err"], abs=tol)
    inc = fc.run_case(("box3d-incline-above", "cone", fc.default_solver("cone", {}), 0.01))
    assert inc["physics"]["accel_err_rel"] <= 1e-9 and fc.verdict(inc)[0]


def test_3d_solo12_stands_under_the_stable_pd_in_the_study():
    """solo12-3d-stand under the cone: the torso sags 3.94 mm (the joints' compliance under Kp = 15,
    the sagittal Solo12's too), the feet do not slip: the scene's verdict passes."""
    r = fc.run_case(("solo12-3d-stand", "cone", fc.default_solver("cone", {}), 0.01))
    assert r["physics"]["final_height_err"] == pytest.approx(-3.938e-3, abs=2e-6)
    assert fc.verdict(r)[0]


def test_ball_slides_then_rolls_at_five_sevenths():
    """The cone steps the sliding ball: the slip falls by ``7/2 mu g h`` per step until it would change
    sign, then the ball rolls at exactly ``5/7 v0`` (angular momentum about the contact point)."""
    s = ball_3d(mu=0.5, radius=0.1)
    h, n = 0.01, 20
    tr = TimeStepping(s, h, "cone").simulate(s.q_nominal, [1.0, 0, 0, 0, 0, 0], n_steps=n)
    slip = tr.v[:, 0] - 0.1 * tr.v[:, 4]
    k_star = int(math.floor(1.0 / (3.5 * 0.5 * G * h)))  # the last step that still slides
    np.testing.assert_allclose(slip[:k_star + 1], 1.0 - 3.5 * 0.5 * G * h * np.arange(k_star + 1), atol=1e-12)
    np.testing.assert_allclose(slip[k_star + 1:], 0.0, atol=1e-12)
    np.testing.assert_allclose(tr.v[-1, 0], 5.0 / 7.0, atol=1e-12)


@pytest.mark.parametrize("form", ["pyramid", "cone"])
def test_held_box_does_not_slip_under_rigid_contact(form):
    """Squeezed with ``2 mu F = 2 m g`` the rigid models hold the box: zero slip over 1 s."""
    s = two_finger_grasp()
    tr = TimeStepping(s, 0.01, form).simulate(s.q_nominal, np.zeros(5), u=[cs.GRASP_FORCE, -cs.GRASP_FORCE],
                                            n_steps=100)
    assert tr.n_failed == 0
    assert np.max(np.abs(tr.q[:, 1])) <= 1e-12 and np.max(np.abs(tr.v[:, 1])) <= 1e-12
    # each face carries half the box's weight (m = 0.5 kg) in friction (the faces' tangents are opposite)
    np.testing.assert_allclose(np.abs(tr.p_t[-1]) / 0.01, [0.25 * G, 0.25 * G], rtol=1e-9)


# ------------------------------------------------------------------------------ known physics
def test_cone_slip_threshold_on_the_incline_to_1e6_rad():
    """The cube at rest slides after one cone step exactly when ``tan(slope) > mu``."""
    for mu in (0.3, 0.5):
        assert abs(fc.incline_threshold("cone", mu=mu) - math.atan(mu)) <= 1e-6


def test_pyramid_direction_bias_as_cone_vs_pyramid_measures_it():
    """One step of the push (ratio 2 mu m g) over the 5-degree grid: the k-facet pyramid's friction is
    off the slip by up to 45.00 deg (k = 4) ... 4.99 deg (k = 32), as cone-vs-pyramid's closed form;
    the cone's by 0."""
    bias = {}
    for config in ("pyramid", "pyramid-k32", "cone"):
        form, fixed = fc.configurations("push")[config]
        lab = fc.default_solver(form, fixed)
        bias[config] = max(fc.run_case((f"push-{5.0 * i:g}", config, lab, 0.01))["physics"]["bias_deg"]
                           for i in range(19))
    assert abs(bias["pyramid"] - 45.00) <= 5e-3
    assert abs(bias["pyramid-k32"] - 4.99) <= 5e-3
    # the cone's steps are verified to 1e-10 (scaled natural map); the friction's direction follows to ~1e-8 rad
    assert bias["cone"] <= 1e-4


@pytest.mark.parametrize("K", [1e4, 1e6])
def test_compliant_penetration_is_load_over_stiffness_at_every_step(K):
    """The compliant cube at rest sinks to ``m g / (4 K)`` per corner: from the spring's equilibrium
    it stays there exactly, for every ``h`` (the static solution of the discrete scheme)."""
    s = cube_3d(size=0.2)
    z_eq = 0.1 - G / (4 * K)
    for h in (0.001, 0.01, 0.05):
        ts = TimeStepping(s, h, "compliant", stiffness=K, damping=2 * math.sqrt(K * 0.25), tangential_damping=1e3,
                          active_gap=math.inf)
        tr = ts.simulate([0, 0, z_eq, 0, 0, 0], np.zeros(6), n_steps=20)
        chk = check_trajectory(s, tr).summary()
        # phi = z - 0.1 loses the digits of z ~ 0.1 m: rounding ~1e-17 m per step, 1e-12 m is generous
        assert abs(chk["penetration"] - G / (4 * K)) <= 1e-12


def test_linearized_mdp_sinks_with_h_and_stiffness_nmdp_does_not():
    """The polytope bounds the contact force by ``s(q)``; any depth where ``s >= load`` can hold the
    body, so a cube set on the plane stops where it stopped sinking. The linearized MDP freezes ``s``
    at ``q_k`` (the body falls a step on the old bound): it sinks 1.9, 3.3, 13 design depths at h = 5,
    10, 20 ms for a 0.3 mm design depth, and at 20 ms more the stiffer the polytope (13, 3.9, 1.7 for
    0.3, 1, 3 mm). NMDP's ``s(q_{k+1})`` stops it within 1.7 design depths at every h and stiffness
    of the study (1.66 at most, at 1 ms), less as h grows: 1.03 at 20 ms / 0.3 mm, 1.48 at 5 ms / 3 mm."""
    ratio = {}
    for form, d, h in [("mdp", 3e-4, 0.005), ("mdp", 3e-4, 0.01), ("mdp", 3e-4, 0.02), ("mdp", 1e-3, 0.02),
                       ("mdp", 3e-3, 0.02), ("nmdp", 3e-4, 0.02), ("nmdp", 3e-3, 0.005)]:
        r = fc.run_case(("cube-rest", f"{form}-d{1e3 * d:g}mm", fc.default_solver(form, {}), h))
        assert r["failed_steps"] == 0 and r["physics"]["final_speed"] <= 1e-6
        ratio[form, d, h] = r["physics"]["final_sink"] / d
    assert ratio["mdp", 3e-4, 0.005] < ratio["mdp", 3e-4, 0.01] < ratio["mdp", 3e-4, 0.02]
    assert ratio["mdp", 3e-4, 0.02] > ratio["mdp", 1e-3, 0.02] > ratio["mdp", 3e-3, 0.02] > 1.5
    assert ratio["mdp", 3e-4, 0.02] > 10
    assert ratio["nmdp", 3e-4, 0.02] <= 1.5 and ratio["nmdp", 3e-3, 0.005] <= 1.5


@pytest.mark.parametrize("d", [3e-4, 3e-3])
def test_compliant_sink_is_its_design_depth_at_every_h(d):
    """Critically damped, the compliant cube set on the plane approaches ``load / K`` = the design
    depth from above without overshoot, for every h (the study's rest scene): within 1e-3 of it after
    0.3 s (the approach decays like ``exp(-w t)``, ``w = sqrt(g / d)``: 57 rad/s at 3 mm)."""
    for h in (0.005, 0.02):
        r = fc.run_case(("cube-rest", f"compliant-d{1e3 * d:g}mm", "ipopt", h))
        assert abs(r["physics"]["final_sink"] / d - 1.0) <= 1e-3 and r["physics"]["max_sink"] <= d * (1 + 1e-9)


# ------------------------------------------------------------------------------ solvers, study
def test_every_formulation_lists_its_solvers():
    from contactmp.solvers.registry import FC3D_SOLVERS, LCP_SOLVERS

    assert set(LCP_SOLVERS) <= set(formulation("pyramid").step_solvers())
    assert set(FC3D_SOLVERS) <= set(formulation("cone").step_solvers())
    nmdp = list(formulation("nmdp").step_solvers())
    assert nmdp[0] == "pgm" and set(nmdp) == {"pgm", "zopgm", "ipopt", "ipopt-cyipopt"}
    assert next(iter(formulation("mdp").step_solvers().values())) is None  # the default chain first


def test_mdp_default_chain_solves_the_ten_box_stack():
    """qpOASES alone fails the 10-box stack's semidefinite QP (49 of 50 steps); the default chain
    verifies every step and the stack stays put."""
    r = fc.run_case(("stack-10", "mdp", fc.default_solver("mdp", {}), 0.01))
    assert r["failed_steps"] == 0 and r["physics"]["max_horizontal_drift"] <= 1e-9


def test_study_writes_its_files_and_resumes(tmp_path):
    items = [("cube-slide-15", "cone", "auto", 0.01), ("cube-slide-15", "pyramid", "lemke+newton", 0.01),
             ("grasp", "cone", "auto", 0.01), ("push-30", "pyramid", "lemke+newton", 0.01)]
    s1 = fc.run(tmp_path, quick=True, workers=0, items=items)
    assert s1["runs"] == 4 and s1["complete"]
    for name in ("table.md", "summary.json", "records.jsonl", "heatmap.png", "histories.png", "paths.png"):
        assert (tmp_path / name).exists(), name
    recs = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    cone = next(r for r in recs if r["scene"] == "cube-slide-15" and r["config"] == "cone")
    assert cone["failed_steps"] == 0 and cone["physics"]["direction_err_deg"] <= 1e-6
    assert fc.verdict(cone)[0]
    pyr = next(r for r in recs if r["scene"] == "cube-slide-15" and r["config"] == "pyramid")
    assert pyr["physics"]["direction_err_deg"] > 5.0 and not fc.verdict(pyr)[0]  # the pyramid's bias
    fc.run(tmp_path, quick=True, workers=0, items=items)  # resume: nothing recomputed
    assert len((tmp_path / "records.jsonl").read_text().splitlines()) == 4


def test_study_time_limit_stops_and_the_next_call_resumes(tmp_path):
    """With no time left the study starts no run (nothing written, ``complete`` False); the next call
    computes what is missing."""
    items = [("grasp", "pyramid", "lemke+newton", 0.05), ("grasp", "cone", "auto", 0.05)]
    first = fc.run(tmp_path, quick=True, workers=0, items=items, time_limit=0.0)
    assert first["runs"] == 0 and not first["complete"]
    second = fc.run(tmp_path, quick=True, workers=0, items=items)
    assert second["runs"] == 2 and second["complete"]
