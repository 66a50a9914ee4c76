"""Case study nmdp-timestep (case_studies/nmdp_timestep.py) on a tiny configuration.

Physics asserted: the standing spider's feet carry its weight (the frame-averaged total normal
force is m g once it has settled, and its time average over a run from rest to rest is m g by the
momentum balance); the linearized MDP, frozen at q_n, lets the body fall freely through the first
frame (z drops g h^2, semi-implicit Euler) because the polytope at zero penetration is only ``relax``. Records are resumable.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from contactmp.case_studies import nmdp_timestep as study

MG = 100.0 * 9.81


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("nmdp_timestep")
    items = [("spider", "stand", "pgm", 50, 0.4), ("spider", "stand", "mdp", 50, 0.4)]
    summary = study.run(out, quick=True, workers=0, items=items)
    return out, items, summary


def test_standing_spider_carries_its_weight(tiny):
    out, _, summary = tiny
    recs = {r["method"]: r for r in map(json.loads, (out / "records.jsonl").read_text().splitlines())}
    for m in ("pgm", "mdp"):
        r = recs[m]
        assert r["weight"] == pytest.approx(MG)
        assert not r["exploded"] and r["failed_frames"] == 0 and r["frames"] == 8
        fn = np.array(r["series"]["fn_sum"])
        assert fn[-1] == pytest.approx(MG, rel=5e-3)          # settled: the feet carry m g
        assert r["fn_mean"] == pytest.approx(MG, rel=5e-3)    # sum h Fn = m g T (rest to rest)
        assert r["tilt_max_deg"] < 1e-6                        # symmetric stance: no pitch
    # MDP: the first frame is free fall (force <= 4 relax): qd1 = -g h, z1 = z0 + h qd1 = z0 - g h^2
    z = np.array(recs["mdp"]["series"]["z"])
    assert recs["mdp"]["series"]["fn_sum"][0] <= 4.0 + 1e-9
    assert z[1] - z[0] == pytest.approx(-9.81 * 0.05 ** 2, rel=0.02)
    # NMDP: implicit in the contact, it catches the body within the first frame, above the static
    # depth sqrt(m g / (4 k)) = 3.1 mm (the MDP frame falls 24 mm first)
    depth = np.sqrt(MG / 4.0 / study.PARAMS["spider"]["stiffness"])
    assert abs(recs["pgm"]["series"]["z"][1]) < depth
    assert {"table.md", "summary.json", "spider_stand_pgm.png"} <= {p.name for p in out.iterdir()}
    assert len(summary["rows"]) == 2 and "spider/stand" in summary["checks"]


def test_rerun_resumes(tiny):
    out, items, _ = tiny
    before = (out / "records.jsonl").read_text()
    study.run(out, quick=True, workers=0, items=items)
    assert (out / "records.jsonl").read_text() == before  # nothing recomputed or appended


def test_checks_drift_and_distance_ratio():
    def rec(m, dt, d, tilt=2.0, boom=False):
        return {"robot": "r", "gait": "walk", "method": m, "dt_ms": dt, "distance": d, "tilt_max_deg": tilt,
                "exploded": boom, "stopped": ""}

    recs = [rec("pgm", 5, 1.0), rec("pgm", 50, 0.95), rec("mdp", 5, 1.0), rec("mdp", 10, 0.9),
            rec("mdp", 20, 0.6), rec("mdp", 50, 0.1, boom=True)]
    c = study.checks(recs)["r/walk"]
    assert c["mdp_fails_at_dt"] == 20          # |0.6 - 1.0| > 0.25 + 0.05
    assert c["methods"]["mdp"]["status_by_dt"] == {5: "ok", 10: "ok", 20: "drift", 50: "exploded"}
    assert c["nmdp_stable_to_max_dt"] == {"pgm": True}
    assert c["nmdp_distance_ratio"]["pgm"] == pytest.approx(0.95)
    assert study.checks([rec("pgm", 5, 1.0), rec("pgm", 50, 1.0, tilt=25.0)])["r/walk"][
        "nmdp_stable_to_max_dt"] == {"pgm": False}
