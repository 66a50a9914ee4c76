"""drumwright-stiff: static closed form, agreement with Radau on a drop (first order), resumability."""
from __future__ import annotations

import json

import numpy as np
import pytest

from contactmp.case_studies import drumwright_stiff as ds


def test_rest_reproduces_static_depth_closed_form() -> None:
    box = ds.Box(10)
    depth = ds.MASS * ds.GRAVITY * ds.THICKNESS / (ds.MODULUS * ds.FACE ** 2)  # W t / (E A)
    assert box.static_depth == pytest.approx(depth, rel=1e-12)
    te = np.linspace(0.0, 0.02, 5)
    r = ds.compliant_run(box, ds.initial_state(box, "rest"), 1e-3, 0.02, te)
    assert r["failed_steps"] == 0 and r["max_active"] == 100
    assert np.max(np.abs(r["Y"][:, 2] - (0.5 * ds.HEIGHT - depth))) < 1e-15
    assert np.max(np.abs(r["Y"][:, 7:])) < 1e-12
    # released with the face just touching, it settles at the closed-form depth
    y0 = ds.initial_state(box, "rest")
    y0[2] = 0.5 * ds.HEIGHT
    r = ds.compliant_run(box, y0, 1e-3, 0.2, np.array([0.2]))
    assert 0.5 * ds.HEIGHT - r["Y"][0, 2] == pytest.approx(depth, rel=1e-3)


def test_compliant_run_lowrank_equals_dense_and_reports_solvers() -> None:
    """900 springs (30 x 30): the Woodbury path gives the dense path's trajectory on a tilted drop."""
    box = ds.Box(30)
    te = np.linspace(0.0, 0.03, 4)
    y0 = ds.initial_state(box, "tilted-drop")
    low = ds.compliant_run(box, y0, 1e-3, 0.03, te)
    assert low["solvers"] == {"lowrank": 30} and low["failed_steps"] == 0 and low["max_residual"] <= 1e-12
    dense = ds.compliant_run(box, y0, 1e-3, 0.03, te, solver="active-set")
    assert dense["solvers"] == {"active-set": 30}
    assert np.max(np.abs(low["Y"] - dense["Y"])) <= 1e-12
    assert low["max_active"] > 0


def test_scheme_agrees_with_radau_on_a_drop_first_order() -> None:
    box = ds.Box(10)
    te = np.linspace(0.0, 0.02, 21)  # impact at t = sqrt(2e-3 / g) = 14.3 ms
    y0 = ds.initial_state(box, "flat-drop")
    ref = ds.ivp_run(box, y0, "Radau", 1e-9, 0.02, te)
    assert ref["success"]
    e1 = ds.errors(ds.compliant_run(box, y0, 1e-4, 0.02, te)["Y"], ref["Y"])["pos_err"]
    e2 = ds.errors(ds.compliant_run(box, y0, 2e-5, 0.02, te)["Y"], ref["Y"])["pos_err"]
    assert e2 < 1e-4              # m, against a 1 mm drop and a ~0.2 mm rebound
    assert 4.0 <= e1 / e2 <= 6.0  # first order in h


def test_run_writes_outputs_and_resumes(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(ds, "QUICK_ICS", ("tilted-drop",))
    monkeypatch.setattr(ds, "QUICK_GRID", 4)
    monkeypatch.setattr(ds, "STIFF_RTOL", (1e-3,))
    s1 = ds.run(tmp_path, quick=True, T=0.02)
    for name in ("records.jsonl", "table.md", "summary.json", "time_vs_error.png"):
        assert (tmp_path / name).exists()
    assert json.loads((tmp_path / "summary.json").read_text())["headline"] == s1["headline"]
    assert s1["failed_steps"] == 0
    # time and accuracy side by side, best and worst over the ICs, and the QP solvers used with counts
    side = {e["method"]: e for e in s1["side_by_side"]}
    assert set(side) == {"compliant", "Radau", "BDF"}
    for e in side.values():
        assert e["time_best"] <= e["time_worst"] and e["pos_err_best"] <= e["pos_err_worst"]
        assert e["time_best_ic"] == "tilted-drop"
    assert sum(s1["solvers"].values()) == round(0.02 / ds.QUICK_H[0])
    assert "best and worst case" in (tmp_path / "table.md").read_text()
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    assert len(lines) == 4  # reference, ours, Radau, BDF
    (tmp_path / "records.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:20])
    calls = []
    real = ds.ivp_run
    monkeypatch.setattr(ds, "ivp_run", lambda *a, **kw: calls.append(a[2]) or real(*a, **kw))
    s2 = ds.run(tmp_path, quick=True, T=0.02)
    assert calls == ["BDF"]
    assert s2["per_ic"][0]["ours_pos_err"] == pytest.approx(s1["per_ic"][0]["ours_pos_err"], rel=1e-12)
    calls.clear()
    ds.run(tmp_path, quick=True, T=0.02)
    assert calls == []
