"""Metrics of a simulated legged gait (issue 7, ``nmdp-timestep``): is the run stable, how much does the
torso tilt, is its height periodic, how far and how steadily does it walk.

All functions take the sampled torso trajectory of a planar floating base: times ``t`` [s], forward
position ``x`` [m], height ``z`` [m] and pitch ``theta`` [rad] at the ends of the accepted steps.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from contactmp.errors import InputError

#: a run *exploded* when a state is not finite, the torso tilts beyond this angle [rad] ...
EXPLODE_TILT = math.radians(80.0)
#: ... or its height leaves ``[z0 - EXPLODE_DROP, z0 + EXPLODE_RISE]`` (m) around the start height
EXPLODE_DROP, EXPLODE_RISE = 0.5, 2.0


def _series(name: str, x: Any, n: int | None = None) -> np.ndarray:
    arr = np.asarray(x, dtype=float).ravel()
    if n is not None and arr.size != n:
        raise InputError(name, f"must have {n} samples like t, got {arr.size}")
    return arr


def exploded(t: Any, x: Any, z: Any, theta: Any) -> tuple[bool, str]:
    """``(True, reason)`` when the run left the physical range: a non-finite sample, a tilt
    ``|theta| > EXPLODE_TILT`` or a height outside ``z_0 + [-EXPLODE_DROP, EXPLODE_RISE]``."""
    t = _series("t", t)
    x, z, theta = (_series(n, a, t.size) for n, a in (("x", x), ("z", z), ("theta", theta)))
    if t.size == 0:
        raise InputError("t", "needs at least one sample")
    bad = ~(np.isfinite(x) & np.isfinite(z) & np.isfinite(theta))
    if bad.any():
        return True, f"non-finite state at t = {t[np.argmax(bad)]:.4g} s"
    tilt = np.abs(theta) > EXPLODE_TILT
    if tilt.any():
        return True, f"tilt {math.degrees(abs(theta[np.argmax(tilt)])):.1f} deg at t = {t[np.argmax(tilt)]:.4g} s"
    out = (z < z[0] - EXPLODE_DROP) | (z > z[0] + EXPLODE_RISE)
    if out.any():
        return True, f"height {z[np.argmax(out)]:.3g} m at t = {t[np.argmax(out)]:.4g} s"
    return False, ""


def tilt_stats(theta: Any) -> dict[str, float]:
    """Torso tilt: ``max |theta|`` and the RMS of ``theta`` [deg]."""
    th = np.degrees(_series("theta", theta))
    return {"tilt_max_deg": float(np.max(np.abs(th))), "tilt_rms_deg": float(np.sqrt(np.mean(th ** 2)))}


def height_periodicity(t: Any, z: Any, period: float, skip_periods: int = 1) -> float:
    """How periodic the torso height is with the gait period ``T``: the RMS of ``z(t) - z(t - T)``
    over ``t >= (skip_periods + 1) T`` divided by the RMS of ``z - mean(z)`` over the same window
    (0: exactly periodic; about 1.4 for uncorrelated noise). ``nan`` when the run is shorter than
    ``skip_periods + 2`` periods. ``z(t - T)`` is interpolated linearly between samples."""
    t = _series("t", t)
    z = _series("z", z, t.size)
    if not (isinstance(period, (int, float)) and period > 0):
        raise InputError("period", f"must be > 0, got {period!r}")
    start = (skip_periods + 1) * period
    win = t >= start
    if t.size < 3 or t[-1] < start + period:
        return math.nan
    lagged = np.interp(t[win] - period, t, z)
    spread = float(np.sqrt(np.mean((z[win] - z[win].mean()) ** 2)))
    diff = float(np.sqrt(np.mean((z[win] - lagged) ** 2)))
    if spread == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / spread


def height_amplitude(t: Any, z: Any, period: float, skip_periods: int = 1) -> float:
    """The torso's height swing per gait period (a jump's height): the median over the complete
    periods after the first ``skip_periods`` of ``max z - min z`` within the period [m]; over the
    whole run when it is shorter than ``skip_periods + 1`` periods."""
    t = _series("t", t)
    z = _series("z", z, t.size)
    if not (isinstance(period, (int, float)) and period > 0):
        raise InputError("period", f"must be > 0, got {period!r}")
    if t.size == 0:
        return math.nan
    k = np.floor((t - t[0]) / period).astype(int)
    full = [j for j in range(skip_periods, int(k.max()) + 1) if t[0] + (j + 1) * period <= t[-1] + 1e-12]
    if not full:
        return float(z.max() - z.min())
    return float(np.median([np.ptp(z[k == j]) for j in full]))


def walking_line(t: Any, x: Any) -> dict[str, float]:
    """Least-squares line ``x ~ a + b t``: ``distance = x_end - x_0`` [m], ``speed = b`` [m/s] and
    ``linearity = R^2`` of the fit (1 for a perfectly steady walk; ``nan`` if ``x`` is constant)."""
    t = _series("t", t)
    x = _series("x", x, t.size)
    if t.size < 2:
        return {"distance": 0.0, "speed": math.nan, "linearity": math.nan}
    A = np.column_stack([np.ones_like(t), t])
    coef, *_ = np.linalg.lstsq(A, x, rcond=None)
    resid = x - A @ coef
    ss_tot = float(np.sum((x - x.mean()) ** 2))
    r2 = math.nan if ss_tot == 0.0 else 1.0 - float(np.sum(resid ** 2)) / ss_tot
    return {"distance": float(x[-1] - x[0]), "speed": float(coef[1]), "linearity": r2}


def gait_metrics(t: Any, x: Any, z: Any, theta: Any, period: float) -> dict[str, Any]:
    """All of the above for one run: ``exploded`` (+ ``reason``), tilt max/RMS [deg],
    ``height_periodicity``, ``height_amplitude`` (jump height), walking ``distance``/``speed``/``linearity``. The tilt, periodicity and
    walking metrics are computed over the samples before an explosion."""
    t = _series("t", t)
    x, z, theta = (_series(n, a, t.size) for n, a in (("x", x), ("z", z), ("theta", theta)))
    boom, reason = exploded(t, x, z, theta)
    keep = np.ones(t.size, dtype=bool)
    if boom:
        finite = np.isfinite(x) & np.isfinite(z) & np.isfinite(theta)
        ok = finite & (np.abs(theta) <= EXPLODE_TILT) & (z >= z[0] - EXPLODE_DROP) & (z <= z[0] + EXPLODE_RISE)
        first_bad = int(np.argmin(ok)) if not ok.all() else t.size
        keep[first_bad:] = False
    out: dict[str, Any] = {"exploded": boom, "reason": reason}
    out.update(tilt_stats(theta[keep]) if keep.any() else {"tilt_max_deg": math.nan, "tilt_rms_deg": math.nan})
    out["height_periodicity"] = height_periodicity(t[keep], z[keep], period)
    out["height_amplitude"] = height_amplitude(t[keep], z[keep], period) if keep.any() else math.nan
    out.update(walking_line(t[keep], x[keep]))
    return out
