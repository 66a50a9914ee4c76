"""The pieces of the cito-quadruped study that run fast: the Solo12 tasks as built (sizes, limits,
boundary states on the terrain), the gait labels of mode charts, and the TimeStepping replay check
on a solved trajectory (the planar box, whose solve takes a second)."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.case_studies import _cito
from contactmp.case_studies._quadruped import TASK_SHAPES, solo_task
from contactmp.case_studies.cito_quadruped import gait
from contactmp.models.urdf import SOLO12_TORQUE_LIMIT
from contactmp.result import Status


@pytest.mark.parametrize("kind,planar", [("walk", False), ("jump", False), ("calipso", True), ("jump", True)])
def test_solo_tasks_as_built(kind: str, planar: bool) -> None:
    to = solo_task(kind, planar, "cone")
    N, h, (dx, dz) = TASK_SHAPES[kind]
    assert (to.N, to.h) == (N, h) and to.system.n_q == (11 if planar else 19)
    assert len(to.program.stage_groups) == 1  # the knots are one stage group
    assert to.formulation.options.gap == "position"  # no knot below the terrain
    assert all(np.all(u.ub == SOLO12_TORQUE_LIMIT) and np.all(u.lb == -SOLO12_TORQUE_LIMIT) for u in to.u)
    # standing at both ends: every foot on the terrain (the jump's smoothed step is 1e-7 m high
    # under the front feet at the start and 1e-7 m short of its top under the hind feet at the end)
    np.testing.assert_allclose(to.system.eval_phi(to._q0), 0.0, atol=2e-7)
    assert to._qf[0] - to._q0[0] == pytest.approx(dx)
    np.testing.assert_allclose(to._vf, 0.0)


def test_gait_labels() -> None:
    on, off = 1, 0
    stand = [on, on, on, on]
    trot = np.array([stand, [on, off, off, on], stand, [off, on, on, off], stand])
    assert gait(trot)["label"] == "trot"
    assert gait(trot)["phases"] == ["FL FR HL HR", "FL HR", "FL FR HL HR", "FR HL", "FL FR HL HR"]
    bound = np.array([stand, [off, off, on, on], stand, [on, on, off, off], stand])
    assert gait(bound)["label"] == "bound"
    pronk = np.array([stand, [off] * 4, stand])
    assert gait(pronk)["label"] == "pronk" and gait(pronk)["phases"][1] == "flight"
    walk = np.array([stand, [off, on, on, on], stand, [on, on, on, off], stand])
    assert gait(walk)["label"] == "walk" and gait(walk)["lifts"] == {"FL": 1, "FR": 0, "HL": 0, "HR": 1}
    slide = np.array([stand, [2, 2, 1, 1], stand])  # sliding still counts as on the ground
    assert gait(slide)["label"] == "no lift-off"


def test_replay_of_a_solved_trajectory_matches_time_stepping() -> None:
    """Every step of a verified box trajectory is TimeStepping's step from its state (the pyramid
    LCP at the same data) to 1e-6; a corrupted input shows up in both the step residual and the
    replay error."""
    to = _cito.TASKS["box"].build("pyramid", True)
    traj = to.solve(strategy="scholtes", **dict(_cito.TASKS["box"].options))
    assert traj.status is Status.SOLVED
    rep = to.replay(traj)
    assert rep["step_residual"] <= 1e-6 and rep["replay_error"] <= 1e-6 and rep["nonunique_steps"] == []
    traj.u[3] += 1.0  # step 3 is no longer the simulator's step from its state
    rep = to.replay(traj)
    assert rep["step_residual"] > 1e-3 and rep["replay_error"] > 1e-3 and rep["nonunique_steps"] == []


def test_support_guess_carries_the_standing_robot(monkeypatch: pytest.MonkeyPatch) -> None:
    """The support guess balances the dynamics rows along the guessed motion: for a robot asked to
    stay where it stands (the guess is at rest), the rows hold exactly with the feet carrying the
    weight (sum p_n = m g h) within the torque limits, while the plain guess leaves the whole
    weight m g h = 2.5 kg * 9.81 m/s^2 * 0.025 s = 0.6 N s unbalanced at every step."""
    monkeypatch.setitem(TASK_SHAPES, "stand", (4, 0.025, (0.0, 0.0)))
    to = solo_task("stand", True, "cone")
    rows = [c for blk in to.steps for c in blk.constraints if c.name.endswith("dynamics")]
    assert len(rows) == to.N

    def worst(x: np.ndarray) -> float:
        g = to.program.evaluate(x)["g"]
        return max(float(np.max(np.abs(g[c.index]))) for c in rows)

    to.support_guess = False
    assert worst(to.initial_guess()) > 0.5
    to.support_guess = True
    x = to.initial_guess()
    assert worst(x) < 1e-10
    m = to.system.eval_M(to._q0)[1, 1]  # the total mass (base z coordinate of the sagittal model)
    for blk in to.steps:
        assert to.program.value(blk.handles["p_n"], x).sum() == pytest.approx(m * 9.81 * to.h, rel=1e-8)
    assert all(np.all(np.abs(x[u.index]) <= SOLO12_TORQUE_LIMIT) for u in to.u)


def test_gap_rows_are_knot_rows() -> None:
    """With gap_rows every knot has phi(q_{k+1}) >= 0 inside its stage (the template includes it)."""
    from contactmp.models.urdf import solo12
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    to = ContactImplicitTO(solo12(planar=True), 5, 0.025, "cone", gap_rows=True)
    rows = [c for c in to.program.constraints if c.name.startswith("gap")]
    assert len(rows) == to.N and all(c.size == 4 and np.all(c.lb == 0.0) for c in rows)
    (group,) = to.program.stage_groups
    staged = set(group.g_index.ravel().tolist())
    assert all(i in staged for c in rows for i in range(c.index.start, c.index.stop))


def test_summary_counts_replays_from_json_records() -> None:
    """Records read back from JSONL keep an infinite replay error as the string "inf": the summary
    counts the starts replayed to 1e-6 from the default and from the seeded start all the same."""
    from contactmp.case_studies.cito_quadruped import summarize

    def rec(start: int, err: object, seeded: object) -> dict:
        return {"task": "walk-3d-cone", "start": start, "converged": True, "objective": 1.0 + start,
                "status": "solved", "comp_violation": 0.0, "time_s": 1.0, "solve_cpu_s": 1.0, "iterations": 10,
                "penetration": 0.0, "gait": {"label": "irregular"},
                "replay": {"step_residual": 1e-9, "replay_error": err, "nonunique_steps": [3],
                           "seeded_replay_error": seeded}}

    row = summarize([rec(0, "inf", 2e-7), rec(1, 3.5, "inf"), rec(2, 1e-9, 1e-9)])[0]
    assert (row["replayed"], row["replayed_seeded"], row["converged"]) == (1, 2, 3)


def test_a_record_of_an_earlier_replay_revision_is_replayed_from_its_x(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A converged record replayed by an earlier revision (here: no ``replay_revision``, a
    corrupted replay) is replayed again from its stored ``x`` without solving it again: the new
    replay (every step of the box plan is TimeStepping's to 1e-6) lands in ``replays.jsonl`` and
    replaces the record's in the report's records; a second pass finds nothing to do (resumes), and
    a stale record without ``x`` is an InputError naming the records."""
    from contactmp.case_studies import cito_quadruped as cq
    from contactmp.case_studies._study import StudyRun
    from contactmp.errors import InputError

    to = _cito.TASKS["box"].build("pyramid", True)
    traj = to.solve(strategy="scholtes", **dict(_cito.TASKS["box"].options))
    assert traj.status is Status.SOLVED
    monkeypatch.setattr(cq, "_transcription", lambda task: to)
    study = StudyRun("cito-quadruped", tmp_path, False, 0)
    old = {"key": "full/box/s0/start00", "task": "box", "converged": True, "x": traj.result.x,
           "replay": {"step_residual": 1.0, "replay_error": 1.0}}
    study.store.append(old)
    (rec,) = cq.replay_again(study, [old["key"]], ["box"], 0, None)
    assert rec["replay_revision"] == cq.REPLAY_REVISION and rec["key"] == old["key"]
    assert rec["replay"]["step_residual"] <= 1e-6 and rec["replay"]["replay_error"] <= 1e-6
    lines = (tmp_path / "replays.jsonl").read_text().splitlines()
    assert len(lines) == 1
    (again,) = cq.replay_again(study, [old["key"]], ["box"], 0, None)
    assert again["replay"] == rec["replay"] and (tmp_path / "replays.jsonl").read_text().splitlines() == lines
    study.store.append({**old, "key": "full/box/s0/start01", "x": None})
    with pytest.raises(InputError, match="records"):
        cq.replay_again(study, ["full/box/s0/start01"], ["box"], 0, None)
