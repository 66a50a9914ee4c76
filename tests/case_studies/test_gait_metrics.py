"""Gait metrics of the nmdp-timestep study against closed forms."""
import math

import numpy as np
import pytest

from contactmp.case_studies._gait_metrics import (exploded, gait_metrics, height_amplitude, height_periodicity,
                                                  tilt_stats, walking_line)
from contactmp.errors import InputError


def test_steady_walk_is_a_perfect_line_and_periodic() -> None:
    t = np.linspace(0.0, 10.0, 2001)
    T = 0.8
    x = 0.3 * t + 0.01 * np.sin(2 * np.pi * t / T)     # steady speed plus a periodic sway
    z = 0.5 + 0.02 * np.sin(2 * np.pi * t / T)
    theta = np.radians(3.0) * np.sin(2 * np.pi * t / T)
    m = gait_metrics(t, x, z, theta, T)
    assert not m["exploded"]
    assert m["height_periodicity"] < 1e-3                 # z(t) = z(t - T) up to interpolation
    assert m["speed"] == pytest.approx(0.3, abs=2e-3)
    assert m["linearity"] > 0.999
    assert m["tilt_max_deg"] == pytest.approx(3.0, rel=1e-4)
    assert m["tilt_rms_deg"] == pytest.approx(3.0 / math.sqrt(2), rel=1e-3)


def test_noise_is_not_periodic() -> None:
    rng = np.random.default_rng(0)
    t = np.linspace(0.0, 10.0, 4001)
    z = 0.5 + 0.01 * rng.standard_normal(t.size)
    assert height_periodicity(t, z, 0.8) == pytest.approx(math.sqrt(2), rel=0.1)


def test_explosions_are_detected_and_metrics_cut_before_them() -> None:
    t = np.linspace(0.0, 2.0, 201)
    x, z, th = 0.1 * t, np.full_like(t, 0.5), np.zeros_like(t)
    th[150:] = 2.0                                         # flips over at t = 1.5 s
    boom, why = exploded(t, x, z, th)
    assert boom and "tilt" in why
    m = gait_metrics(t, x, z, th, 0.5)
    assert m["exploded"] and m["tilt_max_deg"] == 0.0       # tilt measured before the flip only
    z2 = z.copy()
    z2[50] = np.nan
    assert "non-finite" in exploded(t, x, z2, np.zeros_like(t))[1]
    z3 = z.copy()
    z3[60:] = -1.0
    assert "height" in exploded(t, x, z3, np.zeros_like(t))[1]


def test_line_fit_and_tilt_closed_forms() -> None:
    t = np.array([0.0, 1.0, 2.0])
    assert walking_line(t, [1.0, 2.0, 3.0]) == pytest.approx({"distance": 2.0, "speed": 1.0, "linearity": 1.0})
    assert tilt_stats(np.radians([3.0, -4.0]))["tilt_max_deg"] == pytest.approx(4.0)


def test_bad_input_names_field() -> None:
    with pytest.raises(InputError, match="z"):
        gait_metrics([0.0, 1.0], [0.0, 1.0], [0.0], [0.0, 0.0], 1.0)
    with pytest.raises(InputError, match="period"):
        height_periodicity([0.0, 1.0], [0.0, 0.0], -1.0)


def test_jump_height_is_the_swing_per_period() -> None:
    t = np.linspace(0.0, 10.0, 5001)
    z = 0.5 + 0.15 * np.maximum(np.sin(2 * np.pi * t / 2.0), 0.0)   # 15 cm hops every 2 s
    assert height_amplitude(t, z, 2.0) == pytest.approx(0.15, rel=1e-6)
    assert gait_metrics(t, 0 * t, z, 0 * t, 2.0)["height_amplitude"] == pytest.approx(0.15, rel=1e-6)
    assert height_amplitude(t[:100], z[:100], 2.0) == pytest.approx(np.ptp(z[:100]))  # shorter than 2 periods
