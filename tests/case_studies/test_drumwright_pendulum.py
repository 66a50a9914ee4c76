"""drumwright-pendulum: O(h^2) constraint deviation, compliance floor, O(h) energy error, resumability."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from contactmp.case_studies import drumwright_pendulum as dp

G = dp.GRAVITY


def test_jacobian_matches_finite_differences() -> None:
    q = np.array([0.3, -0.2, 0.7])
    eps = 1e-7
    fd = np.column_stack([(dp.pin_phi(q + eps * e) - dp.pin_phi(q - eps * e)) / (2 * eps) for e in np.eye(3)])
    assert np.allclose(dp.pin_jacobian(q), fd, atol=1e-8)
    assert np.allclose(dp.pin_phi(np.array([0.5, 0.0, math.pi / 2])), 0.0, atol=1e-15)


def test_deviation_slope_is_two_for_stiff_K() -> None:
    hs = [0.02, 0.01, 0.005, 0.0025]
    runs = [dp.simulate(1e8, h) for h in hs]
    assert all(r["failed_steps"] == 0 for r in runs)
    slope = dp.fit_slope(hs, [r["max_dev"] for r in runs])
    assert slope == pytest.approx(2.0, abs=0.2)
    # the leading term is the curvature error (L/2) w_max^2 h^2 / 2 = 3 g h^2 / 4 (w_max^2 = 3 g / L)
    for h, r in zip(hs, runs):
        assert 0.8 <= r["max_dev"] / (0.75 * G * h * h) <= 1.1
        assert r["compliance"] < 1e-2 * r["max_dev"]


def test_soft_K_deviation_floors_at_the_compliance_deflection() -> None:
    r = dp.simulate(1e4, 1e-3)
    # largest pin reaction of a rod released horizontal: at the bottom, m g + m (L/2)(3 g / L) = 2.5 m g
    assert r["compliance"] == pytest.approx(2.5 * dp.MASS * G / 1e4, rel=0.01)
    assert r["max_dev"] == pytest.approx(r["compliance"], rel=0.01)


def test_energy_error_is_bounded_and_first_order() -> None:
    hs = [0.01, 0.005]
    runs = [dp.simulate(1e12, h) for h in hs]
    for h, r in zip(hs, runs):
        assert r["max_abs_dE"] <= 10.0 * h          # J, against m g L / 2 = 4.9 J
        # bounded oscillation with the swing (symplectic Euler), not a one-sided drift: it both loses and gains
        assert min(r["dE"]) < -0.5 * r["max_abs_dE"] and r["max_dE"] > 0.5 * r["max_abs_dE"]
        assert np.all(np.isfinite(r["dE"]))
    assert dp.fit_slope(hs, [r["max_abs_dE"] for r in runs]) == pytest.approx(1.0, abs=0.1)


def test_run_writes_outputs_and_resumes(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(dp, "QUICK_K", (1e8,))
    monkeypatch.setattr(dp, "QUICK_H", (0.02, 0.01, 0.005))
    s1 = dp.run(tmp_path, quick=True)
    for name in ("records.jsonl", "table.md", "summary.json", "deviation_vs_h.png", "energy_vs_time.png"):
        assert (tmp_path / name).exists()
    assert json.loads((tmp_path / "summary.json").read_text())["headline"] == s1["headline"]
    assert s1["per_K"][0]["slope_asymptotic"] == pytest.approx(2.0, abs=0.2)
    assert s1["failed_steps"] == 0

    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    assert len(lines) == 3
    (tmp_path / "records.jsonl").write_text("\n".join(lines[:2]) + "\n" + lines[2][:20])  # cut the last record
    calls = []
    real = dp.simulate
    monkeypatch.setattr(dp, "simulate", lambda K, h, **kw: calls.append((K, h)) or real(K, h, **kw))
    s2 = dp.run(tmp_path, quick=True)
    assert calls == [(1e8, 0.005)]
    assert s2["per_K"][0]["slope_asymptotic"] == pytest.approx(s1["per_K"][0]["slope_asymptotic"], rel=1e-12)
    calls.clear()
    dp.run(tmp_path, quick=True)
    assert calls == []
