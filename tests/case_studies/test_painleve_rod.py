"""The painleve-rod study on a tiny grid (in process): proven counts against the closed forms, the
multistart never above the proven count, MILP cross-checks, Prop. 3, files and resume."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from contactmp.case_studies import painleve_rod as pr
from contactmp.models.painleve import painleve_mu

MUS = (0.5, 2.5)
THETAS = (45.0, 65.0)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("painleve")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pr, "STARTS", 12)  # fewer starts than the study's 32: keeps the test fast
        mp.setattr(pr, "STRUCTURED", 4)
        summary = pr.run(out, quick=True, seed=3, workers=0, mus=MUS, thetas_deg=THETAS)
    return out, summary


def records(out: Path) -> dict[tuple[str, float, float], dict]:
    recs = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    return {(r["state"], r["theta_deg"], r["mu"]): r for r in recs}


def test_counts_match_the_closed_forms(study: tuple[Path, dict]) -> None:
    out, summary = study
    recs = records(out)
    assert len(recs) == len(pr.STATES) * len(MUS) * len(THETAS)
    for (state, th, mu), r in recs.items():
        assert r["closed_form_agrees"], (state, th, mu)
        above_painleve = mu > painleve_mu(math.radians(th))
        expected = {
            "sliding": 0 if above_painleve else 1,
            "sliding-spin": 2 if above_painleve else 1,  # b_n > 0 above 33 deg
            "rolling": 1,
            "rolling-pulled": 3 if mu == 2.5 else 1,  # mu_3 = 1.88 (45 deg), 1.77 (65 deg)
        }[state]
        assert r["count"] == expected, (state, th, mu)
        assert r["region"] == {0: "none", 1: "one"}.get(expected, "several")
    assert summary["three_solution_region"]["points"] == 2
    assert summary["literature"]["three_solution_region_inside_painleve"]


def test_multistart_never_exceeds_proven(study: tuple[Path, dict]) -> None:
    out, summary = study
    assert summary["multistart_never_exceeds_proven"] and not summary["violations"]
    for r in records(out).values():
        ms = r["multistart"]
        assert ms["n_forces"] <= r["count"] and ms["unmatched"] == 0
        assert ms["time_per_start_s"] > 0
    assert 0 < summary["time_per_start_s"] < 1.0


def test_milp_cross_checks_and_prop3(study: tuple[Path, dict]) -> None:
    out, _ = study
    for (state, th, mu), r in records(out).items():
        assert r["milp"]["existence_agrees"] is True
        assert r["milp"]["second_agrees"] in (True, None)
        if r["count"] >= 2:
            assert r["milp"]["second_other_forces"] is True  # several solutions certified by MILP
        if state.startswith("sliding"):
            assert r["prop3"]["mu_bar"] == pytest.approx(r["mu_P"], rel=1e-9)  # Prop. 3 is tight here
            assert r["guaranteed_unique"] == (mu < r["mu_P"])
        if r["guaranteed_unique"]:
            assert r["count"] == 1


def test_outputs_and_resume(study: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch) -> None:
    out, summary = study
    for name in ("summary.json", "table.md", "solution_counts.png", "records.jsonl"):
        assert (out / name).stat().st_size > 0
    saved = json.loads((out / "summary.json").read_text())
    assert saved["seed"] == 3 and saved["by_state"][0]["state"] == "sliding"
    assert "Three-solution region" in (out / "table.md").read_text()
    monkeypatch.setattr(pr, "STARTS", 12)
    monkeypatch.setattr(pr, "STRUCTURED", 4)
    again = pr.run(out, quick=True, seed=3, workers=0, mus=MUS, thetas_deg=THETAS)  # nothing recomputed
    assert again["dask"]["computed"] == 0 and again["dask"]["resumed"] == summary["dask"]["computed"]
