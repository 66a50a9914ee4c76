"""Terrain and joint limits of URDF robots (models/urdf.py): the step terrain's gap and its
Jacobian against finite differences, the URDF's <limit> elements, and bad input naming its field."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.models.urdf import SOLO12_TORQUE_LIMIT, joint_limits, solo12, solo12_standing, step_terrain


def test_step_terrain_is_a_smoothed_step() -> None:
    H = step_terrain(0.1, 0.25, 0.008)
    x = ca.SX.sym("x")
    f = ca.Function("H", [x], [H(x, 0.0)])
    assert float(f(0.25)) == pytest.approx(0.05, abs=1e-15)  # half height at the edge
    # 7.3 widths from the edge the step is flat to 1e-6 of its height (tanh(7.3) = 1 - 9e-7)
    assert abs(float(f(0.25 - 7.3 * 0.008))) <= 1e-7
    assert abs(float(f(0.25 + 7.3 * 0.008)) - 0.1) <= 1e-7
    with pytest.raises(InputError, match="width"):
        step_terrain(0.1, 0.25, 0.0)


@pytest.mark.parametrize("planar", [True, False])
def test_terrain_gap_and_its_jacobian(planar: bool) -> None:
    """phi = z_foot - H(x_foot): the standing robot 0.1 m up on the step has phi = 0 at all feet;
    Jn = d phi/dq (d qdot/d v) at a configuration where the front feet are on the riser (slope
    ~6), checked by central differences along a random motion (error O(eps^2) ~ 1e-9)."""
    s = solo12(planar=planar, terrain=step_terrain(0.1, 0.0, 0.02))
    q = solo12_standing(planar, ground_height=0.1)
    q[0] = 1.0  # every foot far past the edge: on top of the step
    np.testing.assert_allclose(s.eval_phi(q), 0.0, atol=1e-12)
    q = solo12_standing(planar)
    q[0] = -0.19  # the front feet (x = +0.195 from the base) at the edge, on the riser
    rng = np.random.default_rng(0)
    v = rng.standard_normal(s.n_v)
    qd = s.eval_qdot(q, v)
    eps = 1e-6
    rate = (s.eval_phi(q + eps * qd) - s.eval_phi(q - eps * qd)) / (2 * eps)
    Jn = s.eval_J(q)[0]
    np.testing.assert_allclose(Jn @ v, rate, atol=1e-7)
    flat = solo12(planar=planar)  # the riser's slope changes the normal rows of the front feet
    assert np.max(np.abs(flat.eval_J(q)[0][:2] - Jn[:2])) > 1.0


def test_joint_limits_of_solo12() -> None:
    lim = joint_limits("solo12")
    assert len(lim) == 12 and set(lim) >= {"FL_HAA", "HR_KFE"}
    # the URDF's ranges and efforts are placeholders: +-10 rad and 1000 N m
    assert lim["FL_KFE"] == (-10.0, 10.0, 1000.0, 1000.0)
    assert SOLO12_TORQUE_LIMIT == 2.7


def test_bad_terrain_names_the_field() -> None:
    with pytest.raises(InputError, match="terrain"):
        solo12(planar=True, terrain=0.1)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="terrain"):
        solo12(planar=True, terrain=lambda x, y: np.array([1.0, 2.0]))
