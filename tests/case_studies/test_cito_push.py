"""The cito-push study: a point finger discovers contact with a box and pushes it to the goal. The
solutions obey the discrete dynamics, non-penetration and Coulomb friction at every contact, the box
moves only while the finger pushes it, and the study writes its records, table and figures."""
from __future__ import annotations

import json

import numpy as np
import pytest

from contactmp.case_studies import STUDIES, _cito, cito_push, study_module
from contactmp.models.manipulation import finger_in_box_frame

TOL = 1e-6


@pytest.fixture(scope="module")
def push_run(tmp_path_factory):
    """The quick study with one start of the pyramid (start 0, the deterministic guess), in this process."""
    out = tmp_path_factory.mktemp("cito_push")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cito_push, "STARTS", 1)
        mp.setattr(cito_push, "FORMULATIONS", ("pyramid",))
        summary = cito_push.run(out, quick=True, seed=0, workers=0)
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    return out, summary, records


@pytest.fixture(scope="module")
def cone_record():
    """One start of the cone formulation (start 3, seeded noise), solved as the study solves it."""
    rec, _ = _cito.run_start(cito_push.build_task("cone", True), "scholtes", 0, 3)
    return rec


def _check_push(rec: dict, pushed_throughout: bool = True) -> None:
    """Every physical claim of the task about one converged start's trajectory; with
    ``pushed_throughout`` also that the box moves only in steps in which the finger pushes (true of
    the least-cost solutions; a local optimum of the quick study, cost 13.5, lets the box coast)."""
    system = cito_push.build_task("pyramid", True).system
    assert rec["converged"] and rec["comp_violation"] <= _cito.COMP_TOL
    tr = {k: np.asarray(v, dtype=float) for k, v in rec["trajectory"].items()}
    t, q, v, u, pn, pt, modes = (tr[k] for k in ("t", "q", "v", "u", "p_n", "p_t", "modes"))
    N, h = pn.shape[0], t[1] - t[0]
    w, hh = cito_push.SYSTEM["width"], cito_push.SYSTEM["height"]
    mu = system.mu
    # boundary conditions: from rest with the finger GAP away, to rest at the goal, the box level on the ground
    np.testing.assert_allclose(q[0], [0.0, hh / 2, 0.0, -w / 2 - cito_push.GAP, hh / 2], atol=TOL)
    np.testing.assert_allclose(v[0], 0.0, atol=TOL)
    np.testing.assert_allclose(v[-1], 0.0, atol=TOL)
    np.testing.assert_allclose(q[-1, :3], [cito_push.GOAL_X, hh / 2, 0.0], atol=TOL)
    # task bounds
    assert np.abs(u).max() <= cito_push.F_MAX + TOL and np.abs(v[:, 3:]).max() <= cito_push.V_MAX + TOL
    assert np.abs(q[:, 2]).max() <= cito_push.THETA_MAX + TOL
    for k in range(N):
        M, Jn, Jt = system.eval_M(q[k]), *system.eval_J(q[k])[:2]
        # the discrete Newton-Euler equations of the step and its kinematics
        f = system.eval_B(q[k]) @ u[k] - system.eval_h(q[k], v[k])
        np.testing.assert_allclose(M @ (v[k + 1] - v[k]), h * f + Jn.T @ pn[k] + Jt.T @ pt[k], atol=1e-6)
        np.testing.assert_allclose(q[k + 1], q[k] + h * v[k + 1], atol=1e-9)
        # non-penetration: 0 <= p_n _|_ phi(q_{k+1}) / h >= 0 at every contact (the position gap)
        gap = system.eval_phi(q[k + 1]) / h
        assert pn[k].min() >= -TOL and gap.min() >= -TOL
        assert np.minimum(pn[k], gap).max() <= TOL
        # Coulomb friction at every contact: inside the cone, on its edge against the slip when sliding
        assert np.all(np.abs(pt[k]) <= mu * pn[k] + TOL)
        slip = Jt @ v[k + 1]
        sliding = modes[k] == 2
        np.testing.assert_allclose(np.abs(pt[k, sliding]), mu[sliding] * pn[k, sliding], atol=1e-5)
        assert np.all(pt[k, sliding] * slip[sliding] < 0.0)
    finger = pn[:, 2] > TOL * max(1.0, pn.max())
    assert not finger[0] and finger.any(), "the finger starts away from the box and must touch it"
    first = int(np.argmax(finger))
    # until the finger first pushes, the box rests where it started
    np.testing.assert_allclose(q[: first + 1, :3], np.tile(q[0, :3], (first + 1, 1)), atol=TOL)
    # without the finger's impulse only friction acts on the box: its speed never grows, and it
    # never moves backwards; the best solutions move the box only while the finger pushes it
    moving = np.abs(v[1:, :3]).max(axis=1) > 1e-5
    assert moving.any()
    assert np.all(np.abs(v[1:, 0])[~finger] <= np.abs(v[:-1, 0])[~finger] + TOL)
    assert np.all(np.diff(q[:, 0]) >= -TOL)
    if pushed_throughout:
        assert np.all(finger[moving])
    # while pushing, the finger ends each step on the face within the face's extent: phi(q_{k+1}) = 0
    # (the position gap: no force at a distance; with the linearized side the finger pushed from up
    # to 0.11 mm over the 40 quick-study starts); no gap is negative
    phi = np.array([system.eval_phi(qk) for qk in q])
    assert phi.min() >= -1e-6 * h
    np.testing.assert_allclose(phi[1:, 2][finger], 0.0, atol=1e-6 * h)
    assert rec["force_gap"] <= _cito.FORCE_GAP_TOL
    assert np.all(np.abs(finger_in_box_frame(q[1:][finger])[:, 1]) <= hh / 2)
    # the ground contacts discover sliding while pushed and stick at the end
    assert (modes[:, :2] == 2).any() and np.all(modes[-1, :2] == 1)
    timeline = cito_push.mode_strings(modes, system.contact_names)
    assert timeline["finger"][0] == "." and set(timeline["finger"]) <= set(".s>")


def test_pyramid_push_physics(push_run) -> None:
    _, _, records = push_run
    assert [(r["task"], r["formulation"], r["strategy"], r["start"]) for r in records] == [("push", "pyramid", "scholtes", 0)]
    _check_push(records[0])


def test_cone_push_physics(cone_record) -> None:
    _check_push(cone_record)


def test_study_outputs_and_resume(push_run) -> None:
    out, summary, records = push_run
    assert summary["converged"] == 1 and summary["starts"] == 1
    assert "1/1 starts converged (pyramid/scholtes 1/1)" in summary["headline"]
    assert set(summary["figures"]) == {"trajectory_push_pyramid_scholtes.png", "push_pyramid_scholtes.png"}
    assert all((out / f).stat().st_size > 10_000 for f in summary["figures"])
    tl = summary["mode_timelines"]["pyramid/scholtes"]
    assert set(tl) == {"bottom_left", "bottom_right", "finger"} and all(len(s) == 20 for s in tl.values())
    table = (out / "table.md").read_text()
    assert "| push | pyramid | scholtes | 1 | 1 | 100% |" in table and tl["finger"] in table
    saved = json.loads((out / "summary.json").read_text())
    assert saved["study"] == "cito-push" and saved["seed"] == 0 and saved["quick"] is True
    # a second run resumes: nothing is solved again
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cito_push, "STARTS", 1)
        mp.setattr(cito_push, "FORMULATIONS", ("pyramid",))
        again = cito_push.run(out, quick=True, seed=0, workers=0)
    assert len((out / "records.jsonl").read_text().splitlines()) == 1
    assert again["rows"][0]["cost"] == summary["rows"][0]["cost"]


def test_registered_as_a_study() -> None:
    assert STUDIES["cito-push"] == "contactmp.case_studies.cito_push"
    assert study_module("cito-push") is cito_push
    assert _cito.TASKS["push"].build is not None and "finger" in _cito.TASKS["push"].description
    to = _cito.TASKS["push"].build("cone", True)
    assert (to.N, to.h) == cito_push.STEPS[True] and to.system.n_c == 3 and to.system.planar
