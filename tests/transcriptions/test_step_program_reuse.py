"""A time-stepping step of a parametric formulation reuses one Program per contact set (the state as
parameters) and gives the same numbers as a Program built from the step's numbers."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.models import box_3d, hopper_2d
from contactmp.transcriptions.time_stepping import TimeStepping


def _run(system, form: str, parametric: bool, n: int = 40, cache_size: int | None = None):
    ts = TimeStepping(system, 0.005, form)
    ts.formulation.parametric = parametric
    if cache_size is not None:
        ts.formulation.PARAMETRIC_CACHE_SIZE = cache_size  # every change of contact set rebuilds
    q0 = np.asarray(system.q_nominal, dtype=float) + 0.02  # starts in contact, sliding
    v0 = np.zeros(system.n_v)
    v0[0] = 1.0
    return ts, ts.simulate(q0, v0, None, n)


@pytest.mark.parametrize("form", ["pyramid", "cone"])
@pytest.mark.parametrize("make", [box_3d, hopper_2d])
def test_the_reused_program_gives_the_same_trajectory_bit_for_bit(make, form):
    system = make()
    ts, reused = _run(system, form, True)
    _, built = _run(system, form, False)
    assert reused.n_failed == built.n_failed == 0
    assert sum(reused.solver_counts.get(k, 0) for k in ("lemke", "newton")) > 0  # contact steps were taken
    # the same expression graphs evaluated at the same numbers: identical floats, not merely close
    np.testing.assert_array_equal(reused.q, built.q)
    np.testing.assert_array_equal(reused.impulses, built.impulses)
    cache = ts.formulation._step_programs
    assert 1 <= len(cache) <= ts.formulation.PARAMETRIC_CACHE_SIZE  # one Program per contact set seen


def test_the_cache_keeps_at_most_its_size_and_the_newest_sets():
    system = box_3d()
    ts, limited = _run(system, "pyramid", True, cache_size=1)
    assert len(ts.formulation._step_programs) == 1
    _, built = _run(system, "pyramid", False)
    np.testing.assert_array_equal(limited.q, built.q)
