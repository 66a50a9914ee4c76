"""The uniqueness-random study: physical solution sets of pyramid LCPs (forces vs LCP vectors vs
motion), the MILP path against enumeration, and a tiny in-process run with its checks."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from contactmp.case_studies import uniqueness_random as ur
from contactmp.errors import InputError
from contactmp.formulations.pyramid_lcp import PyramidLCP
from contactmp.models.painleve import RodState, rod
from contactmp.models.rigid_bodies import GRAVITY
from contactmp.models.scenes import block_between_jaws, box_on_plane
from contactmp.solvers.lcp.certificates import enumerate_lcp_solutions


def phys(model) -> tuple[ur.PhysicalSolutions, PyramidLCP]:
    form = PyramidLCP(model)
    return ur.physical_solutions(form, enumerate_lcp_solutions(form.M, form.q)), form


def test_slack_continuum_is_one_physical_solution() -> None:
    # a resting rod lifted off (b_n > 0): z has a continuum (free a+_t, a-_t), the forces are c = 0
    p, _ = phys(rod(RodState(0.7, 0.5, pull=(0.3, 1.5))))
    assert math.isinf(p.n_z)
    assert p.n_forces == 1 and p.n_motions == 1 and np.abs(p.forces).max() == 0.0
    assert ur.classify(p.n_forces) == "unique" and ur.classify(p.n_z) == "continuum"


def test_clamped_block_has_a_force_continuum() -> None:
    # block between two jaws, sliding: c_n0 - c_n1 = m g, the clamping force is free (and, through
    # friction, so is the tangential acceleration)
    p, form = phys(block_between_jaws(mass=2.0, speed=0.5, mu=0.3))
    assert p.force_continuum and p.n_forces == math.inf and p.motion_continuum
    for f in p.forces:
        assert f[0] - f[1] == pytest.approx(2.0 * GRAVITY)
    # a point of the continuum that is not an enumerated representative is matched on the piece
    c0, C = p.force_pieces[0]
    other = c0 + C @ np.full(C.shape[1], 0.37)
    assert ur.unmatched(other[None, :], p.forces, p.force_pieces) == 0
    assert ur.unmatched((other + 1.0)[None, :], p.forces, p.force_pieces) == 1


def test_sliding_box_forces_indeterminate_motion_unique() -> None:
    # four coplanar corners sliding: the normal forces are statically indeterminate (one free
    # alternating distribution), but it changes neither the net friction nor its moments
    p, _ = phys(box_on_plane(mu=0.4, speed=1.0))
    assert p.force_continuum and not p.motion_continuum and p.n_motions == 1
    assert p.motions[0][0] == pytest.approx(-0.4 * GRAVITY)  # a_x = -mu g
    assert np.abs(p.motions[0][1:]).max() < 1e-9
    assert all(f[:4].sum() == pytest.approx(GRAVITY) for f in p.forces)


def test_not_enumerated_is_refused() -> None:
    form = PyramidLCP(box_on_plane(mu=0.8))  # 4 rolling contacts: n = 20 > max_n
    with pytest.raises(InputError, match="enum"):
        ur.physical_solutions(form, enumerate_lcp_solutions(form.M, form.q))


@pytest.mark.parametrize("label", ["trinkle-01", "trinkle-02", "trinkle-03"])
def test_milp_path_agrees_with_enumeration(label: str) -> None:
    spec = next(s for s in ur.problem_specs(0, quick=True) if s.label == label)
    milp_spec = ur.ProblemSpec(spec.label, spec.seed, spec.n_bodies, spec.n_S, spec.n_R, spec.style, "milp")
    for mu in (0.3, 2.0):
        a = ur.solve_point((spec, mu, 0))
        b = ur.solve_point((milp_spec, mu, 0))
        compatible = {"several": "two_or_more", "continuum": "two_or_more"}.get(a["forces_class"], a["forces_class"])
        assert b["forces_class"] in (compatible, "undecided"), (label, mu, a["forces_class"], b)
        assert a["multistart"]["n_forces"] <= ur.record_number(a["n_forces"])
        assert a["multistart"]["unmatched"] == 0


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("uniq")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ur, "QUICK_MAX_N", 7)
        mp.setattr(ur, "N_EXTRA_QUICK", 2)
        mp.setattr(ur, "QUICK_MUS", (0.1, 2.0))
        mp.setattr(ur, "STARTS", 8)
        summary = ur.run(out, quick=True, seed=1, workers=0)
    return out, summary


def test_tiny_run(tiny: tuple[Path, dict]) -> None:
    out, summary = tiny
    recs = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    assert len(recs) == summary["problems"] * 2 and summary["problems"] >= 5
    for row in summary["by_mu"]:
        total = sum(row[f"forces_{c}"] for c in ur.CLASSES)
        assert total == pytest.approx(1.0)
        assert row["below_mu_bar_unique"] <= row["forces_unique"] + 1e-12  # the bound is sufficient
    checks = summary["checks"]
    assert checks["multistart_never_exceeds_proven"]
    assert not checks["bound_uniqueness_violations"] and not checks["bound_existence_violations"]
    for r in recs:
        assert r["multistart"]["n_forces"] <= ur.record_number(r["n_forces"])
        if r["guaranteed_unique"]:
            assert r["forces_class"] == "unique"
        # the bounds depend on the problem only
        assert r["prop3"]["mu_bar_unique"] == next(
            q["prop3"]["mu_bar_unique"] for q in recs if q["problem"] == r["problem"])
    for name in ("summary.json", "table.md", "uniqueness.png"):
        assert (out / name).stat().st_size > 0
    assert 0 < summary["time_per_start_s"] < 1.0
