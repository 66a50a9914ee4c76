"""A time-stepping step of a parametric formulation reuses one Program per contact set (the state as
parameters) and gives the same numbers as a Program built from the step's numbers."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.models import box_3d, hopper_2d
from contactmp.transcriptions.time_stepping import TimeStepping

GAINS = {"stiffness": 1e5, "damping": 1e3, "tangential_damping": 1e3}
CASES = {"pyramid": ("pyramid", {}), "cone": ("cone", {}),
         "compliant-cone": ("compliant", {**GAINS, "friction": "cone"}),
         "compliant-pyramid": ("compliant", {**GAINS, "friction": "pyramid"})}


def _run(system, case: str, n: int = 40, cache_size: int | None = None):
    form, options = CASES[case]
    ts = TimeStepping(system, 0.005, form, **options)
    if cache_size is not None:
        ts.formulation.PARAMETRIC_CACHE_SIZE = cache_size  # every change of contact set rebuilds
    q0 = np.asarray(system.q_nominal, dtype=float) + (0.02 if form != "compliant" else 0.0)  # in contact
    v0 = np.zeros(system.n_v)
    v0[0] = 1.0  # sliding
    return ts, ts.simulate(q0, v0, None, n)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("make", [box_3d, hopper_2d])
def test_the_reused_program_gives_the_same_trajectory_bit_for_bit(make, case, monkeypatch):
    system = make()
    ts, reused = _run(system, case)
    assert ts.formulation.parametric
    cache = ts.formulation._step_programs
    assert 1 <= len(cache) <= ts.formulation.PARAMETRIC_CACHE_SIZE  # one Program per contact set seen
    monkeypatch.setattr(type(ts.formulation), "parametric", False)  # a Program from the numbers per step
    _, built = _run(system, case)
    assert reused.n_failed == built.n_failed == 0
    assert sum(v for k, v in reused.solver_counts.items() if k != "free_flight") > 0  # contact steps were taken
    # the same expression graphs evaluated at the same numbers: identical floats, not merely close
    np.testing.assert_array_equal(reused.q, built.q)
    np.testing.assert_array_equal(reused.impulses, built.impulses)


def test_the_cache_keeps_at_most_its_size(monkeypatch):
    system = box_3d()
    ts, limited = _run(system, "pyramid", cache_size=1)
    assert len(ts.formulation._step_programs) == 1
    monkeypatch.setattr(type(ts.formulation), "parametric", False)
    _, built = _run(system, "pyramid")
    np.testing.assert_array_equal(limited.q, built.q)


def test_callable_gains_build_the_step_from_its_numbers():
    ts = TimeStepping(box_3d(), 0.005, "compliant", stiffness=lambda phi, q: 1e5 + 0 * phi, damping=1e3,
                      tangential_damping=1e3)
    assert not ts.formulation.parametric  # the gains change with q: nothing to reuse
