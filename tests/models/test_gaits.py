"""Gaits (models/gaits.py): periodicity, derivative, IK residual, standing keyframe."""
from __future__ import annotations

import math

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.models.gaits import gait, leg_ik, solo12_leg_fk, standing_feet
from contactmp.models.legged import spider_leg_fk, spider_standing
from contactmp.models.urdf import solo12_standing

CASES = [(r, n) for r in ("spider", "solo12") for n in ("walk", "jump")]


def _fk(robot, angles, leg):
    return spider_leg_fk(angles, leg) if robot == "spider" else solo12_leg_fk(angles, leg)


@pytest.mark.parametrize("robot,name", CASES)
def test_periodic_and_derivative(robot, name):
    g = gait(robot, name)
    assert g.n_u == (16 if robot == "spider" else 8) and g.name == name
    rng = np.random.default_rng(0)
    for t in rng.uniform(-2.0, 5.0, 20):
        q, dq = g.targets(t)
        q2, dq2 = g.targets(t + g.period)
        np.testing.assert_allclose(q, q2, atol=1e-12)
        np.testing.assert_allclose(dq, dq2, atol=1e-10)
        e = 1e-6
        num = (g.targets(t + e)[0] - g.targets(t - e)[0]) / (2 * e)
        np.testing.assert_allclose(dq, num, atol=1e-6)
    # keyframes are interpolated exactly, and the spline is C1 across the wrap-around
    for tk, key in zip(g.times, g.keyframes):
        np.testing.assert_allclose(g.targets(tk)[0], key, atol=1e-12)
    np.testing.assert_allclose(g.targets(g.period - 1e-9)[1], g.targets(0.0)[1], atol=1e-5)


@pytest.mark.parametrize("robot,name", CASES)
def test_keyframe_ik_places_feet(robot, name):
    g = gait(robot, name)
    per_leg = 4 if robot == "spider" else 2
    for key, feet in zip(g.keyframes, g.feet):
        for i in range(4):
            p = _fk(robot, key[per_leg * i:per_leg * (i + 1)], i)
            assert np.max(np.abs(p - feet[i])) < 1e-8
    if robot == "spider":  # hip roll held at 0
        np.testing.assert_array_equal(g.keyframes[:, 2::4], 0.0)


def test_walk_feet_move_as_a_trot():
    g = gait("spider", "walk", stride=0.1, lift=0.05)
    p0 = standing_feet("spider")
    d = g.feet - p0[None]
    # at phase 0: pair A (FL, HR) in front by stride/2, pair B (HL, FR) behind; all on the ground
    np.testing.assert_allclose(d[0, :, 0], [0.05, -0.05, 0.05, -0.05], atol=1e-15)
    np.testing.assert_allclose(d[0, :, 2], 0.0, atol=1e-15)
    # at quarter period pair B is at the top of its swing, pair A on the ground at mid-stride
    np.testing.assert_allclose(d[2, :, 2], [0.0, 0.05, 0.0, 0.05], atol=1e-15)
    np.testing.assert_allclose(d[2, [0, 2], 0], 0.0, atol=1e-15)


def test_jump_crouches_then_extends():
    g = gait("solo12", "jump", depth=0.08, extension=0.05)
    dz = g.feet[:, 0, 1] - standing_feet("solo12")[0, 1]
    np.testing.assert_allclose(dz, [0.0, 0.08, -0.05, 0.0], atol=1e-15)
    np.testing.assert_allclose(g.velocities, 0.0)


def test_standing_keyframe_reproduces_nominal():
    for robot, nominal in (("spider", spider_standing()[3:]),
                           ("solo12", solo12_standing(planar=True)[3:])):
        g = gait(robot, "jump")
        np.testing.assert_allclose(g.keyframes[0], nominal, atol=1e-10)
        per_leg = 4 if robot == "spider" else 2
        feet = standing_feet(robot)
        for i in range(4):  # from a perturbed start, IK returns to the nominal angles
            init = nominal[per_leg * i:per_leg * (i + 1)] + 0.2
            if robot == "spider":
                init[2] = 0.0
            ang, res = leg_ik(robot, i, feet[i], init=init)
            assert res < 1e-10
            np.testing.assert_allclose(ang, nominal[per_leg * i:per_leg * (i + 1)], atol=1e-8)


def test_solo12_fk_closed_form():
    # straight leg pointing down: foot at (x_hip, -0.32); thigh horizontal backward at HFE = pi/2
    np.testing.assert_allclose(solo12_leg_fk([0.0, 0.0], 0), [0.1946, -0.32], atol=1e-15)
    np.testing.assert_allclose(solo12_leg_fk([math.pi / 2, 0.0], 2), [-0.1946 - 0.32, 0.0],
                               atol=1e-15)


def test_bad_input_names_field():
    for kwargs, fld in ((dict(robot="dog", name="walk"), "robot"),
                        (dict(robot="spider", name="run"), "name"),
                        (dict(robot="spider", name="walk", speed=1.0), "speed"),
                        (dict(robot="spider", name="walk", period=-1.0), "period"),
                        (dict(robot="spider", name="walk", n_keys=5), "n_keys"),
                        (dict(robot="solo12", name="jump", extension=0.5), "extension"),
                        (dict(robot="spider", name="walk", stride=5.0), "stride")):
        with pytest.raises(InputError) as e:
            gait(**kwargs)
        assert e.value.field == fld
