"""The cone-vs-pyramid study: Figure 3's friction-direction error, the stick-slip threshold on an
incline and Proposition 1, asserted against closed forms."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from contactmp.case_studies import STUDIES, study_module
from contactmp.case_studies import cone_vs_pyramid as cvp
from contactmp.models.contact_model import Contact, ContactModel
from contactmp.models.rigid_bodies import GRAVITY, GROUND, RigidBody, box_inertia, obj
from contactmp.models.scenes import block_between_jaws, box_on_plane

MU = cvp.MU_SCENE
THETAS = [5.0 * i for i in range(19)]


@pytest.fixture(scope="module")
def push_angles() -> dict[int, list[float]]:
    """Resultant-friction angle [deg] of the k-facet pyramid (Lemke) for the push of 2 mu m g."""
    out: dict[int, list[float]] = {}
    for k in cvp.FACETS:
        angles = []
        for th in THETAS:
            model = cvp.pushed_box(math.radians(th), 2.0)
            r = cvp.solve_pyramid(model, k)
            assert r["solved"], (k, th, r["result"].status)
            e = cvp.push_entry(model, r["solution"], r["physics"], r["solved"], r["time_s"])
            assert e["sliding"] and e["yaw_spread"] < 1e-9  # translates: one a_T for all contacts
            # the LCP answer is the closed form Proj_Q(-F)
            assert e["angle_deg"] == pytest.approx(cvp.predicted_push_angle(math.radians(th), 2.0, k), abs=1e-6)
            angles.append(e["angle_deg"])
        out[k] = angles
    return out


def test_cone_friction_opposes_sliding_exactly() -> None:
    for th in (0.0, 10.0, 30.0, 55.0, 80.0):
        model = cvp.pushed_box(math.radians(th), 2.0)
        r = cvp.solve_cone(model, fc3d_tol=cvp.SCENE_FC3D_TOL)
        assert r["solved"] and r["route"].startswith("fc3d/")
        sol = r["solution"]
        e = cvp.push_entry(model, sol, r["physics"], r["solved"], r["time_s"])
        assert e["sliding"]
        assert e["angle_deg"] < 1e-6
        assert e["contact_angle_max_deg"] < 1e-6  # every loaded contact, not only the resultant
        # the box slides along the push with a = (F - mu m g) / m
        assert e["slide_dir_deg"] == pytest.approx(th, abs=1e-6)
        assert e["a_T"] == pytest.approx((2.0 - 1.0) * MU * GRAVITY, rel=1e-9)
        assert float(sol.c_n.sum()) == pytest.approx(GRAVITY, rel=1e-9)


def test_pyramid_angle_error_is_at_most_pi_over_k_and_shrinks(push_angles: dict[int, list[float]]) -> None:
    maxima = {k: max(v) for k, v in push_angles.items()}
    # k = 4, push 2 mu m g: at theta = 30 deg, -F projects onto the corner (-1, -1) mu m g with
    # a_T = F + f = (2 cos 30 - 1, 2 sin 30 - 1) mu g = (0.732, 0) mu g: exactly 45 deg
    assert push_angles[4][THETAS.index(30.0)] == pytest.approx(45.0, abs=1e-6)
    assert maxima[4] == pytest.approx(45.0, abs=1e-6)
    for k in cvp.FACETS:
        assert maxima[k] <= 180.0 / k + 1e-6
        assert push_angles[k][0] == pytest.approx(0.0, abs=1e-6)  # along an edge normal
    ks = list(cvp.FACETS)
    assert all(maxima[a] > maxima[b] for a, b in zip(ks, ks[1:]))
    assert maxima[32] < 6.0


def test_closed_form_supremum_is_pi_over_k() -> None:
    thetas = np.radians(np.linspace(0.0, 90.0, 721))
    for k in (4, 8, 16):
        worst = max(cvp.predicted_push_angle(t, ratio, k) for t in thetas for ratio in (1.5, 2.0, 4.0, 10.0))
        assert worst <= 180.0 / k + 1e-9
        assert worst > 0.97 * 180.0 / k
    # the square: projection = clipping
    y = np.array([-3.0, 0.4])
    assert np.allclose(cvp.polygon_projection(y, 1.0, 4), [-1.0, 0.4])
    assert np.allclose(cvp.polygon_projection(np.array([-3.0, -2.5]), 1.0, 4), [-1.0, -1.0])


def test_incline_scene_is_box_on_plane() -> None:
    slope = 0.3
    a, b = cvp.incline_box(slope, 0.0), box_on_plane(slope=slope, mu=MU)
    assert np.allclose(a.A, b.A, atol=1e-12) and np.allclose(a.b, b.b, atol=1e-12)


def test_stick_slip_thresholds() -> None:
    for psi in (0.0, math.radians(30.0)):
        th = cvp.find_threshold(None, psi)
        assert th["threshold"] is not None
        assert th["threshold"] == pytest.approx(math.atan(MU), abs=1e-8)  # rad
        assert math.degrees(th["threshold"]) == pytest.approx(math.degrees(math.atan(MU)), abs=1e-6)
    # the square, downhill along its diagonal: tan(alpha*) = mu sqrt(2); along t: mu
    th = cvp.find_threshold(4, math.radians(45.0))
    assert th["threshold"] == pytest.approx(math.atan(MU * math.sqrt(2.0)), abs=1e-8)
    th = cvp.find_threshold(4, 0.0)
    assert th["threshold"] == pytest.approx(math.atan(MU), abs=1e-8)
    th = cvp.find_threshold(8, math.radians(10.0))
    assert th["threshold"] == pytest.approx(math.atan(MU / math.cos(math.radians(10.0))), abs=1e-8)
    assert cvp.threshold_closed_form(MU, 0.7, None) == pytest.approx(math.atan(MU))


def _puck(theta: float) -> ContactModel:
    """A box touching the ground at one point under its center, pushed sideways with 2 mu m g."""
    h = np.array([0.2, 0.2, 0.1])
    F = 2.0 * MU * GRAVITY
    box = RigidBody(mass=1.0, inertia=box_inertia(1.0, h), position=[0, 0, h[2]],
                    wrench=[F * math.cos(theta), F * math.sin(theta), -GRAVITY, 0, 0, 0])
    c = Contact(obj(0), GROUND, point=[0, 0, 0], normal=[0, 0, 1], tangent=[1, 0, 0], mu=MU)
    return ContactModel(objects=[box], contacts=[c])


def test_isolated_solutions() -> None:
    puck = _puck(0.4)
    r = cvp.solve_cone(puck, fc3d_tol=cvp.SCENE_FC3D_TOL)
    assert r["solved"] and cvp.isolated(puck, r["solution"], "cone")
    p = cvp.solve_pyramid(puck, 8)
    assert p["solved"] and cvp.isolated(puck, p["solution"], "pyramid", 8)
    # four corners: normal forces statically indeterminate, sliding or sticking
    box = cvp.pushed_box(0.4, 2.0)
    assert not cvp.isolated(box, cvp.solve_cone(box, fc3d_tol=cvp.SCENE_FC3D_TOL)["solution"], "cone")
    rest = cvp.pushed_box(0.4, 0.5)
    rs = cvp.solve_pyramid(rest, 4)
    assert rs["solved"] and not cvp.isolated(rest, rs["solution"], "pyramid", 4)
    # a block clamped between two jaws: the clamping force (hence the deceleration) is free
    jaws = block_between_jaws(mu=MU)
    js = cvp.solve_pyramid(jaws, 4)
    assert js["solved"] and not cvp.isolated(jaws, js["solution"], "pyramid", 4)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, dict]:
    out = tmp_path_factory.mktemp("cvp")
    assert STUDIES["cone-vs-pyramid"] == "contactmp.case_studies.cone_vs_pyramid"
    summary = study_module("cone-vs-pyramid").run(out=out, quick=True, seed=0)
    return out, summary


def test_quick_study_writes_its_files(quick_run: tuple[object, dict]) -> None:
    out, summary = quick_run
    for name in ("records.jsonl", "table.md", "summary.json", "friction_angle_vs_direction.png",
                 "cone_share_vs_k.png", "threshold_vs_direction.png"):
        assert (out / name).exists() and (out / name).stat().st_size > 0, name
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["seed"] == 0 and on_disk["quick"] is True and "versions" in on_disk["environment"]
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert all(r["key"].startswith("s0-") for r in records)
    assert summary["max_angle_deg"]["k4"] == pytest.approx(45.0, abs=1e-6)
    assert summary["max_angle_deg"]["cone"] < 1e-6
    assert summary["threshold_max_deg"]["cone"] == pytest.approx(math.degrees(math.atan(MU)), abs=1e-6)
    assert summary["threshold_max_deg"]["k4"] == pytest.approx(math.degrees(math.atan(MU * math.sqrt(2))), abs=1e-6)
    for d in summary["random"]:
        assert d["solved"] >= 0.9 * d["n"]
        assert d["prop1_violations"] == 0  # Proposition 1: forces in the cones => a cone solution
        assert d["max_rel_violation"] <= d["violation_bound"] + 1e-9  # the polygon's circumradius
    # resuming: a second run reads every record back and recomputes nothing
    n = len(records)
    again = study_module("cone-vs-pyramid").run(out=out, quick=True, seed=0)
    assert len((out / "records.jsonl").read_text().splitlines()) == n
    assert again["max_angle_deg"] == summary["max_angle_deg"]
