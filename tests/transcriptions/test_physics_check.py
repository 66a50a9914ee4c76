"""The independent physics checker (transcriptions/physics_check.py) on cases with known answers."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.models.systems import box_2d, box_3d, point_mass_2d
from contactmp.transcriptions.physics_check import check_trajectory, step_metrics
from contactmp.transcriptions.time_stepping import TimeStepping

G = 9.81


@pytest.mark.parametrize("name", ["pyramid", "cone"])
def test_resting_point_mass_scores_zero(name: str) -> None:
    """A point mass resting on the ground: no penetration, Signorini and cone hold exactly, no slip
    (no dissipation gap), no energy change."""
    s = point_mass_2d(m=2.0)
    tr = TimeStepping(s, 0.01, name, tol=1e-12).simulate([0.0, 0.0], [0.0, 0.0], None, 20)
    c = check_trajectory(s, tr).summary()
    for key in ("penetration", "signorini", "cone", "negative_normal", "mdp_gap", "energy_drift"):
        assert c[key] <= 1e-10, key
    assert check_trajectory(s, tr).status_counts == {"solved": 20}


@pytest.mark.parametrize("angle", [0.0, 45.0])
def test_sliding_box_dissipation_gap_cone_zero_pyramid_corner(angle: float) -> None:
    """A 3D box sliding at ``angle`` to the pyramid's edge normals (k = 4; the polygon circumscribes
    Coulomb's disk, inradius mu p_n): under the cone the friction opposes the slip on the cone's
    boundary (gap and cone violation 0 to rounding); under the pyramid, sliding along an edge normal
    (0 deg), every point of that edge dissipates the maximum (gap 0; where on the edge each contact's
    friction lies is not determined, so its cone violation is only bounded by the corner's); at 45 deg
    it sits on the corner along the slip, mu p_n / cos 45 deg long: the cone is exceeded by
    mu p_n (1 / cos 45 - 1) and the dissipation by mu p_n |u_T| (1 / cos 45 - 1)."""
    s = box_3d(m=1.0, size=0.2, mu=0.5)
    q0 = np.array([0.0, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0])
    a = np.radians(angle)
    v0 = np.array([np.cos(a), np.sin(a), 0.0, 0.0, 0.0, 0.0])
    excess = 1 / np.cos(np.pi / 4) - 1 if angle == 45.0 else 0.0
    for name in ("cone", "pyramid"):
        ts = TimeStepping(s, 0.01, name, tol=1e-12, **({"facets": 4} if name == "pyramid" else {}))
        tr = ts.simulate(q0, v0, None, 5)
        k = 2
        m = step_metrics(s, 0.01, tr.q[k + 1], tr.v[k + 1], tr.impulses[k])
        Jt, Jo = s.eval_J(tr.q[k + 1])[1:]
        slip = np.linalg.norm(np.column_stack([Jt @ tr.v[k + 1], Jo @ tr.v[k + 1]]), axis=1)
        p_n = tr.impulses[k][:, 0]
        assert (0.5 * p_n * slip).max() > 1e-4  # sliding, loaded
        e = excess if name == "pyramid" else 0.0
        np.testing.assert_allclose(m["mdp_gap"], 0.5 * p_n * slip * e, rtol=1e-6, atol=1e-12)
        if name == "pyramid" and angle == 0.0:  # any point of the edge dissipates the maximum: the
            assert np.all(m["cone"] <= 0.5 * p_n * (1 / np.cos(np.pi / 4) - 1) + 1e-12)  # split is free
        else:
            np.testing.assert_allclose(m["cone"], 0.5 * p_n * e, rtol=1e-6, atol=1e-12)


def test_compliant_box_penetrates_by_its_static_depth() -> None:
    """A box_2d at rest on two compliant corners (K = 1e4 N/m each): penetration m g / (2 K), and
    Signorini scores the spring pushing while the gap is open the other way: |p_n phi / h|."""
    K, m, h = 1e4, 1.0, 0.01
    s = box_2d(m=m, width=0.4, height=0.2)
    ts = TimeStepping(s, h, "compliant", tol=1e-12, stiffness=K, damping=200.0, tangential_damping=100.0)
    depth = m * G / (2 * K)
    tr = ts.simulate([0.0, 0.1 - depth, 0.0], np.zeros(3), None, 50)
    c = check_trajectory(s, tr).summary()
    assert c["penetration"] == pytest.approx(depth, rel=1e-3)
    assert c["signorini"] == pytest.approx(0.5 * m * G * h * depth / h, rel=1e-3)


def test_planar_pyramid_o_impulses_are_ignored() -> None:
    """A planar box sliding under the 4-facet pyramid: the o generators act on nothing (Jo = 0) and
    the solver may load them; the checker judges p_t alone, which sits on the segment's end mu p_n."""
    s = box_2d(m=1.0, width=0.4, height=0.2, mu=0.5)
    tr = TimeStepping(s, 0.01, "pyramid", facets=4, tol=1e-12).simulate([0.0, 0.1, 0.0], [1.0, 0.0, 0.0], None, 20)
    c = check_trajectory(s, tr).summary()
    assert c["cone"] <= 1e-12 and c["mdp_gap"] <= 1e-12


def test_bad_trajectory_is_refused() -> None:
    s = point_mass_2d()
    tr = TimeStepping(s, 0.01, "cone").simulate([0.0, 0.0], [0.0, 0.0], None, 3)
    with pytest.raises(InputError, match="trajectory"):
        check_trajectory(box_2d(), tr)


@pytest.mark.parametrize("n", [3, 10])
@pytest.mark.parametrize("name", ["pyramid", "cone"])
def test_box_stack_rests_with_exact_interface_loads(n: int, name: str) -> None:
    """A stack of n boxes (box_stack_2d) at rest under a rigid formulation: it does not move (1e-9 m
    over 30 steps), the ground carries n m g and interface k (box k on box k-1) (n - k) m g -- the
    normal loads are determined even though each interface's friction split is not -- and the
    checker scores every metric 0 to rounding."""
    from contactmp.models.systems import box_stack_2d

    s = box_stack_2d(n, m=1.0)
    h = 0.01
    tr = TimeStepping(s, h, name, tol=1e-12).simulate(s.q_nominal, np.zeros(3 * n), None, 30)
    assert np.abs(tr.q - s.q_nominal).max() <= 1e-9
    p_n = tr.impulses[-1][:, 0] / h
    assert p_n[:4].sum() == pytest.approx(n * G, rel=1e-9)
    for k in range(1, n):
        assert p_n[4 + 2 * (k - 1):4 + 2 * k].sum() == pytest.approx((n - k) * G, rel=1e-9)
    c = check_trajectory(s, tr).summary()
    for key in ("penetration", "signorini", "cone", "mdp_gap"):
        assert c[key] <= 1e-9, key


def test_box_stack_input_errors() -> None:
    from contactmp.models.systems import box_stack_2d

    for bad in (0, 2.5, True):
        with pytest.raises(InputError, match="n"):
            box_stack_2d(bad)
