"""The compliant-friction study on its quick grid (h in {0.01, 0.1}, K in {1e4, 1e12}): stiction
creep equals the exact discrete closed form (F/Bt in steady state), sliding friction equals
mu m g, the convex cone's lift rate (h + B/K) mu a, stability at h = 0.1 s and K = 1e12 N/m,
files and resume."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from contactmp.case_studies import compliant_friction as cf


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("compliant_friction")
    return out, cf.run(out, quick=True)


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]


def test_stiction_creep_is_the_closed_form(study: tuple[Path, dict]) -> None:
    out, _ = study
    stick = [r for r in records(out) if r["push"] == "stick"]
    assert len(stick) == len(cf.HS_QUICK) * len(cf.KS_QUICK)
    F = cf.PUSHES["stick"] * cf.MU * cf.MASS * cf.GRAVITY
    for r in stick:
        v_cf, x_cf = cf.creep_closed_form(F, r["h"], r["steps"])
        assert r["x_T"] == pytest.approx(x_cf, rel=1e-9)
        assert r["vx_T"] == pytest.approx(v_cf, rel=1e-9)
        assert r["vx_T"] == pytest.approx(F / cf.BT, rel=1e-9)  # steady creep speed F / Bt
        assert r["creep_per_s"] <= F / cf.BT * (1 + 1e-12)  # small: 2.45e-4 m/s with Bt = 1e4
        assert r["friction_ratio"] == pytest.approx(cf.PUSHES["stick"], rel=1e-9)  # |lambda_T| = F < mu m g
        assert r["max_abs_z_minus_eq"] <= 1e-9 and r["failed_steps"] == 0


def test_sliding_friction_is_mu_weight(study: tuple[Path, dict]) -> None:
    out, _ = study
    slide = [r for r in records(out) if r["push"] == "slide"]
    assert len(slide) == len(cf.HS_QUICK) * len(cf.KS_QUICK)
    for r in slide:
        assert r["friction_ratio"] == pytest.approx(1.0, rel=1e-6), r["key"]
        assert r["normal_rel_err"] <= 1e-6 and r["cone_boundary_dev"] <= 1e-8
        assert r["vx_T"] > r["F"] / cf.BT * 100  # really sliding, not creeping
        # the convex cone's lift: zdot = (h + B/K) mu a, height per the step's KKT identity
        assert r["lift_rate"] == pytest.approx((r["h"] + r["B"] / r["K"]) * cf.MU * r["accel_closed_form"], rel=1e-6)
        assert r["lift"] == pytest.approx(r["lift_pred"], rel=1e-6)


def test_stable_at_largest_step_and_stiffness(study: tuple[Path, dict]) -> None:
    out, summary = study
    big = [r for r in records(out) if r["h"] == 0.1 and r["K"] == 1e12]
    assert len(big) == 2
    for r in big:
        assert r["stable"] and r["finite"] and r["failed_steps"] == 0 and r["max_residual"] <= cf.TOL
    assert summary["stable_at_largest_h_K"] and summary["all_stable"]


def test_files_headline_and_resume(study: tuple[Path, dict]) -> None:
    out, summary = study
    for name in ("summary.json", "table.md", "records.jsonl", "compliant_friction.png"):
        assert (out / name).stat().st_size > 0
    assert "headline" in summary and json.loads((out / "summary.json").read_text())["study"] == "compliant-friction"
    n = len(records(out))
    again = cf.run(out, quick=True)  # every key present: nothing is recomputed
    assert len(records(out)) == n and again["max_friction_rel_err"] == summary["max_friction_rel_err"]
