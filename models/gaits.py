"""Periodic joint targets (gaits) for stable-PD tracking (NMDP notes, "experiments' set-up").

A gait is a loop of keyframes: foot positions relative to the body (body frame, base at the
origin, level), turned into joint angles by inverse kinematics per leg, and interpolated in joint
space by periodic cubic Hermite splines. Between keyframes ``t_k < t < t_{k+1}`` with
``s = (t - t_k) / dt_k``:

    q_d(t) = h00(s) q_k + h10(s) dt_k m_k + h01(s) q_{k+1} + h11(s) dt_k m_{k+1},
    h00 = 2s^3 - 3s^2 + 1, h10 = s^3 - 2s^2 + s, h01 = -2s^3 + 3s^2, h11 = s^3 - s^2,

with keyframe velocities ``m_k`` either the three-point (non-uniform Catmull-Rom) estimate
``m_k = (dt_{k-1} D_k + dt_k D_{k-1}) / (dt_{k-1} + dt_k)``, ``D_k = (q_{k+1} - q_k) / dt_k``
(``"catmull"``, smooth walking) or zero (``"zero"``, rest at every keyframe: the jump).
Indices wrap around with the period ``T`` (``q_K = q_0`` at ``t_K = T``), so ``q_d`` and
``qd_d = d q_d / dt`` are ``T``-periodic and ``C^1``.

Robots (joint order = the ContactSystem's inputs, ``B`` = selection of the joints):

* ``"spider"`` (:func:`contactmp.models.legged.spider`): 16 targets ``(psi, theta, rho, kappa)``
  per leg ``FL, HL, HR, FR``; the IK solves ``(psi, theta, kappa)`` for a 3D foot-center target
  with the hip roll ``rho = 0``.
* ``"solo12"`` (:func:`contactmp.models.urdf.solo12` with ``planar=True``): 8 targets
  ``(HFE, KFE)`` per leg ``FL, FR, HL, HR``; the IK solves both for a sagittal ``(x, z)`` target
  of the foot frame origin. Sagittal leg kinematics from ``solo12.urdf``: hip at
  ``(+-0.1946, 0)``, thigh and shin 0.16 m, both joints about ``+y``:
  ``foot = hip - L (sin a + sin(a + k), cos a + cos(a + k))``.

Gaits: ``walk`` (trot: diagonal pairs alternate; a stance foot moves backward by ``stride``
on the ground over half a period while the other pair lifts by ``lift``, moves forward and
sets down) and ``jump`` (stand -> crouch by ``depth`` -> extend by ``extension`` below standing ->
stand, all legs together).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, check_number
from contactmp.models.legged import SPIDER_LEGS, spider_leg_fk, spider_standing

__all__ = ["Gait", "gait", "GAITS", "ROBOTS", "solo12_leg_fk", "leg_ik", "standing_feet",
           "SOLO12_LEGS", "SOLO12_HIP_X", "SOLO12_LINK"]

SOLO12_LEGS = ("FL", "FR", "HL", "HR")
#: body-frame x of the HFE axes (solo12.urdf: HAA origin +-0.1946, HFE offset only along y)
SOLO12_HIP_X = {"FL": 0.1946, "FR": 0.1946, "HL": -0.1946, "HR": -0.1946}
#: thigh and shin lengths (solo12.urdf: KFE origin z -0.16, ANKLE origin z -0.16)
SOLO12_LINK = 0.16
_IK_TOL = 1e-12


# ------------------------------------------------------------------------------ kinematics
def solo12_leg_fk(angles: ArrayLike, leg: int) -> np.ndarray:
    """Body-frame sagittal ``(x, z)`` of Solo12's foot ``leg`` (index into SOLO12_LEGS) for
    ``angles = (HFE, KFE)``: ``(x_hip - L (sin a + sin(a+k)), -L (cos a + cos(a+k)))``."""
    a, k = np.asarray(angles, dtype=float).reshape(2)
    L = SOLO12_LINK
    return np.array([SOLO12_HIP_X[SOLO12_LEGS[leg]] - L * (math.sin(a) + math.sin(a + k)),
                     -L * (math.cos(a) + math.cos(a + k))])


def _solo12_leg_jac(angles: np.ndarray) -> np.ndarray:
    a, k = angles
    L = SOLO12_LINK
    return np.array([[-L * (math.cos(a) + math.cos(a + k)), -L * math.cos(a + k)],
                     [L * (math.sin(a) + math.sin(a + k)), L * math.sin(a + k)]])


_SPIDER_IK: dict[int, ca.Function] = {}


def _spider_ik_functions(leg: int) -> ca.Function:
    """CasADi function ``x = (psi, theta, kappa) -> (foot(psi, theta, 0, kappa), d foot / dx)``."""
    if leg not in _SPIDER_IK:
        x = ca.SX.sym("x", 3)
        p = spider_leg_fk(ca.vertcat(x[0], x[1], 0.0, x[2]), leg)
        _SPIDER_IK[leg] = ca.Function(f"spider_ik_{leg}", [x], [p, ca.jacobian(p, x)])
    return _SPIDER_IK[leg]


def _robot(robot: str) -> str:
    r = str(robot).lower()
    if r in ("spider",):
        return "spider"
    if r in ("solo12", "solo12_planar", "solo12_sagittal"):
        return "solo12"
    raise InputError("robot", f"unknown robot {robot!r}; known: {ROBOTS}")


def _standing_joints(robot: str) -> np.ndarray:
    """Actuated joint angles of the robot's q_nominal."""
    if robot == "spider":
        return spider_standing()[3:]
    from contactmp.models.urdf import solo12_standing  # adam is not needed for the pose
    return solo12_standing(planar=True)[3:]


def leg_ik(robot: str, leg: int, target: ArrayLike, init: ArrayLike | None = None,
           max_iter: int = 50) -> tuple[np.ndarray, float]:
    """Inverse kinematics of one leg by damped Newton: joint angles ``x`` with
    ``fk(x) = target`` (body frame; spider: 3D foot center, angles ``(psi, theta, 0, kappa)``
    returned as 4 numbers; solo12: sagittal ``(x, z)``, angles ``(HFE, KFE)``). ``init`` defaults
    to the standing angles (which fixes the knee branch). Returns ``(angles, residual)`` with
    ``residual = ||fk(angles) - target||_inf``; the caller decides whether it is small enough."""
    robot = _robot(robot)
    n_legs = 4
    if not 0 <= int(leg) < n_legs:
        raise InputError("leg", f"expected 0..3, got {leg}")
    leg = int(leg)
    stand = _standing_joints(robot)
    if robot == "spider":
        tgt = np.asarray(target, dtype=float).reshape(3)
        x0 = stand[4 * leg:4 * leg + 4] if init is None else np.asarray(init, float).reshape(4)
        x = x0[[0, 1, 3]].copy()
        fun = _spider_ik_functions(leg)

        def fk(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            p, J = fun(x)
            return np.array(p, dtype=float).ravel(), np.array(J, dtype=float)
    else:
        tgt = np.asarray(target, dtype=float).reshape(2)
        x = (stand[2 * leg:2 * leg + 2] if init is None
             else np.asarray(init, float).reshape(2)).copy()

        def fk(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return solo12_leg_fk(x, leg), _solo12_leg_jac(x)
    if not np.all(np.isfinite(tgt)):
        raise InputError("target", "must be finite")
    p, J = fk(x)
    r = p - tgt
    for _ in range(max_iter):
        if np.max(np.abs(r)) < _IK_TOL:
            break
        dx = np.linalg.lstsq(J, -r, rcond=None)[0]
        t = 1.0
        while t > 1e-6:  # backtracking on ||r||
            p2, J2 = fk(x + t * dx)
            if np.linalg.norm(p2 - tgt) < np.linalg.norm(r):
                break
            t *= 0.5
        else:
            break
        x = x + t * dx
        p, J = p2, J2
        r = p - tgt
    res = float(np.max(np.abs(r)))
    if robot == "spider":
        return np.array([x[0], x[1], 0.0, x[2]]), res
    return x, res


def standing_feet(robot: str) -> np.ndarray:
    """Body-frame foot positions of the robot's standing pose q_nominal: spider ``(4, 3)``
    foot-sphere centers, solo12 ``(4, 2)`` sagittal ``(x, z)`` of the foot frames."""
    robot = _robot(robot)
    s = _standing_joints(robot)
    if robot == "spider":
        return np.array([spider_leg_fk(s[4 * i:4 * i + 4], i) for i in range(4)])
    return np.array([solo12_leg_fk(s[2 * i:2 * i + 2], i) for i in range(4)])


# ------------------------------------------------------------------------------------- Gait
@dataclass(frozen=True)
class Gait:
    """Periodic joint targets ``q_d(t)``, ``qd_d(t)`` (module docstring).

    Attributes: ``name``, ``robot``, ``period`` T [s]; ``times`` (K,) keyframe times in
    ``[0, T)`` starting at 0; ``keyframes`` (K, n_u) joint angles; ``velocities`` (K, n_u) the
    Hermite tangents ``m_k``; ``feet`` (K, 4, d) the body-frame foot targets the keyframes solve
    (d = 3 spider, 2 solo12); ``joint_names`` (n_u); ``params`` the gait parameters used.
    """

    name: str
    robot: str
    period: float
    times: np.ndarray
    keyframes: np.ndarray
    velocities: np.ndarray
    feet: np.ndarray
    joint_names: tuple[str, ...]
    params: dict = field(default_factory=dict)

    @property
    def n_u(self) -> int:
        """Number of actuated joints (length of q_d)."""
        return self.keyframes.shape[1]

    def targets(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """``(q_d(t), qd_d(t))``, each of length ``n_u``, for any real ``t`` (periodic)."""
        t = check_number("t", t)
        T = self.period
        tau = t - T * math.floor(t / T)
        if tau >= T:  # rounding
            tau = 0.0
        k = int(np.searchsorted(self.times, tau, side="right")) - 1
        k1 = (k + 1) % len(self.times)
        t1 = self.times[k + 1] if k + 1 < len(self.times) else T
        dt = t1 - self.times[k]
        s = (tau - self.times[k]) / dt
        p0, p1 = self.keyframes[k], self.keyframes[k1]
        m0, m1 = self.velocities[k] * dt, self.velocities[k1] * dt
        s2, s3 = s * s, s * s * s
        q = ((2 * s3 - 3 * s2 + 1) * p0 + (s3 - 2 * s2 + s) * m0 + (-2 * s3 + 3 * s2) * p1
             + (s3 - s2) * m1)
        dq = ((6 * s2 - 6 * s) * p0 + (3 * s2 - 4 * s + 1) * m0 + (-6 * s2 + 6 * s) * p1
              + (3 * s2 - 2 * s) * m1) / dt
        return q, dq


def _tangents(times: np.ndarray, keys: np.ndarray, period: float, mode: str) -> np.ndarray:
    """Keyframe velocities ``m_k`` of the periodic spline (module docstring)."""
    if mode == "zero":
        return np.zeros_like(keys)
    K = len(times)
    ext_t = np.append(times, period)
    dts = np.diff(ext_t)                                   # dt_k, k = 0..K-1
    D = (np.roll(keys, -1, axis=0) - keys) / dts[:, None]  # D_k
    dprev, Dprev = np.roll(dts, 1), np.roll(D, 1, axis=0)
    return (dprev[:, None] * D + dts[:, None] * Dprev) / (dprev + dts)[:, None] if K > 1 else D * 0


def _build(robot: str, name: str, period: float, times: np.ndarray, feet: np.ndarray,
           mode: str, params: dict, blame: str) -> Gait:
    """IK of every keyframe (warm-started from the previous keyframe) and the spline."""
    n_legs = 4
    per_leg = 4 if robot == "spider" else 2
    keys = np.zeros((len(times), n_legs * per_leg))
    stand = _standing_joints(robot)
    for k in range(len(times)):
        for i in range(n_legs):
            init = stand[per_leg * i:per_leg * (i + 1)]
            ang, res = leg_ik(robot, i, feet[k, i], init=init)
            if res > 1e-9:
                raise InputError(blame, f"foot target {feet[k, i]} of leg {i} at keyframe {k} "
                                        f"is out of reach (IK residual {res:.2e})")
            keys[k, per_leg * i:per_leg * (i + 1)] = ang
    legs = SPIDER_LEGS if robot == "spider" else SOLO12_LEGS
    jn = (("hip_yaw", "hip_pitch", "hip_roll", "knee") if robot == "spider" else ("HFE", "KFE"))
    names = tuple(f"{leg}_{j}" for leg in legs for j in jn)
    return Gait(name=name, robot=robot, period=period, times=times, keyframes=keys,
                velocities=_tangents(times, keys, period, mode), feet=feet, joint_names=names,
                params=dict(params))


def _walk(robot: str, period: float, stride: float, lift: float, n_keys: int) -> Gait:
    """Trot: legs of pair A in stance over phase [0, 1/2) and swing over [1/2, 1); pair B shifted
    by half a period. Stance: x from +stride/2 to -stride/2 linearly on the standing height.
    Swing: x = -stride/2 + stride (1 - cos(pi s))/2, height + lift sin(pi s), s in [0, 1)."""
    p0 = standing_feet(robot)
    # diagonal pairs: spider FL, HL, HR, FR -> A = (FL, HR); solo12 FL, FR, HL, HR -> A = (FL, HR)
    offsets = (0.0, 0.5, 0.0, 0.5) if robot == "spider" else (0.0, 0.5, 0.5, 0.0)
    zi = 2 if robot == "spider" else 1
    times = np.arange(n_keys) * period / n_keys
    feet = np.repeat(p0[None], n_keys, axis=0)
    for k in range(n_keys):
        for i in range(4):
            ph = (k / n_keys + offsets[i]) % 1.0
            if ph < 0.5:
                dx, dz = stride / 2 - stride * ph / 0.5, 0.0
            else:
                s = (ph - 0.5) / 0.5
                dx, dz = -stride / 2 + stride * 0.5 * (1 - math.cos(math.pi * s)), \
                    lift * math.sin(math.pi * s)
            feet[k, i, 0] += dx
            feet[k, i, zi] += dz
    params = dict(period=period, stride=stride, lift=lift, n_keys=n_keys)
    return _build(robot, "walk", period, times, feet, "catmull", params, "stride")


def _jump(robot: str, period: float, depth: float, extension: float) -> Gait:
    """Stand (t = 0) -> crouch (0.4 T, feet ``depth`` closer to the body) -> extended (0.6 T, feet
    ``extension`` farther than standing) -> stand (0.8 T) -> stand (T); rest at each keyframe."""
    p0 = standing_feet(robot)
    zi = 2 if robot == "spider" else 1
    fr = np.array([0.0, 0.4, 0.6, 0.8])
    dz = np.array([0.0, depth, -extension, 0.0])
    feet = np.repeat(p0[None], len(fr), axis=0)
    feet[:, :, zi] += dz[:, None]
    params = dict(period=period, depth=depth, extension=extension)
    return _build(robot, "jump", period, fr * period, feet, "zero", params, "extension")


#: defaults per (robot, gait)
_DEFAULTS: dict[tuple[str, str], dict] = {
    ("spider", "walk"): dict(period=1.0, stride=0.15, lift=0.08, n_keys=8),
    ("spider", "jump"): dict(period=1.0, depth=0.10, extension=0.05),
    ("solo12", "walk"): dict(period=0.5, stride=0.06, lift=0.04, n_keys=8),
    ("solo12", "jump"): dict(period=0.8, depth=0.08, extension=0.05),
}
_BUILDERS: dict[str, Callable[..., Gait]] = {"walk": _walk, "jump": _jump}
GAITS = tuple(_BUILDERS)
ROBOTS = ("spider", "solo12")


def gait(robot: str, name: str, **params: float) -> Gait:
    """The gait ``name`` (``"walk"`` or ``"jump"``) of ``robot`` (``"spider"`` or ``"solo12"``, the
    sagittal Solo12). Parameters (defaults in parentheses, spider / solo12):

    * walk: ``period`` (1.0 / 0.5 s), ``stride`` (0.15 / 0.06 m), ``lift`` (0.08 / 0.04 m),
      ``n_keys`` (8 keyframes per period, even, >= 4);
    * jump: ``period`` (1.0 / 0.8 s), ``depth`` (0.10 / 0.08 m), ``extension`` (0.05 / 0.05 m).

    Raises InputError naming the bad field (``robot``, ``name``, an unknown or invalid parameter,
    or the parameter that puts a foot out of reach)."""
    r = _robot(robot)
    nm = str(name).lower()
    if nm not in _BUILDERS:
        raise InputError("name", f"unknown gait {name!r}; known: {GAITS}")
    opts = dict(_DEFAULTS[(r, nm)])
    for key, val in params.items():
        if key not in opts:
            raise InputError(key, f"unknown parameter of the {nm} gait; known: {sorted(opts)}")
        opts[key] = val
    opts["period"] = check_number("period", opts["period"], positive=True)
    for key in ("stride", "lift", "depth", "extension"):
        if key in opts:
            opts[key] = check_number(key, opts[key], nonnegative=True)
    if "n_keys" in opts:
        nk = opts["n_keys"]
        if isinstance(nk, bool) or not isinstance(nk, (int, np.integer)) or nk < 4 or nk % 2:
            raise InputError("n_keys", f"must be an even integer >= 4, got {nk!r}")
        opts["n_keys"] = int(nk)
    return _BUILDERS[nm](r, **opts)
