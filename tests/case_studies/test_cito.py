"""The contact-implicit TO studies: the box task's optimum obeys Coulomb friction and discovers
sticking and sliding; records resume; modes are classified from the trajectory's physics."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from contactmp.case_studies import STUDIES, _cito, study_module
from contactmp.case_studies._study import StudyRun
from contactmp.result import Status


@pytest.fixture(scope="module")
def box_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cito")
    study = StudyRun("cito-box", out, quick=True, seed=0)
    records = _cito.run_grid(study, ["box"], ["pyramid"], ["elastic_l1"], starts=2)
    return study, records


def test_box_push_physics(box_run) -> None:
    _, records = box_run
    assert [r["start"] for r in records] == [0, 1]
    conv = [r for r in records if r["converged"]]
    assert conv, [r["status"] for r in records]
    m, g, mu = 1.0, 9.81, 0.5
    for r in conv:
        assert r["status"] == Status.SOLVED.value and r["comp_violation"] <= _cito.COMP_TOL
        tr = {k: np.asarray(v) for k, v in r["trajectory"].items()}
        h = tr["t"][1] - tr["t"][0]
        np.testing.assert_allclose(tr["q"][0], [0.0, 0.1, 0.0], atol=1e-6)
        np.testing.assert_allclose(tr["q"][-1], [1.0, 0.1, 0.0], atol=1e-6)
        # the box stays flat on the ground: the two bottom corners carry the weight
        np.testing.assert_allclose(tr["p_n"][:, :2].sum(axis=1), m * g * h, atol=1e-5)
        np.testing.assert_allclose(tr["p_n"][:, 2:], 0.0, atol=1e-6)
        # Coulomb friction on each bottom corner
        assert np.all(np.abs(tr["p_t"][:, :2]) <= mu * tr["p_n"][:, :2] + 1e-6)
        # the optimizer found a sliding phase and sticking steps (the box rests at the end)
        counts = r["mode_counts"]
        assert counts["sliding"] >= 10 and counts["sticking"] >= 1
        # sliding steps: total friction impulse exactly mu m g h against the motion
        slide = (tr["modes"][:, :2] == 2).all(axis=1)
        vx = tr["v"][1:, 0]
        np.testing.assert_allclose(tr["p_t"][slide, :2].sum(axis=1), -mu * m * g * h * np.sign(vx[slide]), atol=1e-5)
        # the push beats static friction somewhere
        assert np.abs(tr["u"][:, 0]).max() > mu * m * g


def test_records_resume_without_rerunning(box_run) -> None:
    study, records = box_run
    again = StudyRun("cito-box", study.out, quick=True, seed=0)
    n_lines = len((study.out / "records.jsonl").read_text().splitlines())
    rerun = _cito.run_grid(again, ["box"], ["pyramid"], ["elastic_l1"], starts=2)
    assert len((study.out / "records.jsonl").read_text().splitlines()) == n_lines
    assert [r["objective"] for r in rerun] == [r["objective"] for r in records]


def test_summary_rows_and_figures(box_run) -> None:
    study, records = box_run
    rows = _cito.summarize(records)
    assert len(rows) == 1 and rows[0]["starts"] == 2
    conv = [r["objective"] for r in records if r["converged"]]
    assert rows[0]["cost"]["min"] == pytest.approx(min(conv))
    assert rows[0]["success_rate"] == pytest.approx(len(conv) / 2)
    names = _cito.plot_best_trajectories(study, records, rows)
    assert names and all((study.out / n).stat().st_size > 10_000 for n in names)
    assert "| box | pyramid | elastic_l1 | 2 |" in _cito.summary_table(rows)


def test_contact_modes_from_physics() -> None:
    from contactmp.models.systems import point_mass_2d

    to = SimpleNamespace(system=point_mass_2d())
    q = np.zeros((4, 2))
    v = np.array([[0, 0], [0.0, 0.0], [0.5, 0.0], [0.0, 1.0]])  # v_{k+1}: stick, slide, lift-off
    traj = SimpleNamespace(q=q, v=v, p_n=np.array([[0.1], [0.1], [0.0]]))
    np.testing.assert_array_equal(_cito.contact_modes(to, traj)[:, 0], [1, 2, 0])


def test_studies_registered() -> None:
    for name in ("cito-box", "cito-hopper", "cito-compare"):
        assert name in STUDIES and study_module(name).DESCRIPTION
