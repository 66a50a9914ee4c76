"""Constraint compliance models: per-row stiffness ``K`` [N/m] and damping ``B`` [N s/m] for
:class:`contactmp.formulations.compliant_qp.CompliantQP` (Drumwright, arXiv 1905.10828, section 4).

CompliantQP's law is ``lambda = -K phi - B phidot`` (unilateral rows: ``max(0, .)``), with ``phi``
the signed gap [m] (negative = penetration) and ``G = dphi/dq``. Three models:

* :func:`hertz_point_contact` -- Hertz sphere-plane / sphere-sphere contact at depth ``d = -phi``::

      E* = 1 / ((1 - nu1^2)/E1 + (1 - nu2^2)/E2)        [Pa]  (E = inf: rigid body)
      R* = 1 / (1/R1 + 1/R2)                            [m]   (R2 = inf: plane)
      F(d) = (4/3) E* sqrt(R*) d^(3/2)                  [N]
      K(d) = dF/dd = 2 E* sqrt(R* d)                    [N/m] (tangent stiffness)
      K_sec(d) = F(d)/d = (2/3) K(d)                    [N/m] (secant: -K_sec phi reproduces F(d))

  Damping, one of: Hunt-Crossley ``F_d = (3/2) alpha k_h d^(3/2) ddot`` with ``k_h = (4/3) E*
  sqrt(R*)``, i.e. ``B = alpha K(d) d`` [N s/m] (``alpha`` [s/m]; from a restitution ``e`` at impact
  speed ``v_in``, the small-loss estimate ``alpha = (1 - e) / v_in``), or a damping ratio ``zeta``
  of the linearized oscillator with effective mass ``m``: ``B = 2 zeta sqrt(K(d) m)``.

* :func:`elastic_foundation` -- a Winkler foundation (Kelvin-Voigt layer of modulus ``E`` [Pa],
  viscosity ``eta`` [Pa s], thickness ``t`` [m]) under a rectangular face ``a x b`` split into
  ``nx x ny`` equal cells, one spring at each cell centre::

      k_j = E A_cell / t,  b_j = eta A_cell / t,   A_cell = a b / (nx ny)
      sum_j k_j = E A / t   (a flat face under weight W settles at depth W t / (E A))

* :func:`range_of_motion_limit` -- joint limits ``lower <= q_i <= upper`` as two unilateral rows
  ``phi = (q_i - lower, upper - q_i) >= 0``, ``G = (e_i^T, -e_i^T)``; a torque ``tau`` pushing past
  a limit is held with deflection ``tau / K`` at rest.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from contactmp.errors import InputError, check_number

__all__ = [
    "HertzContact", "hertz_point_contact", "effective_modulus", "effective_radius", "HertzGains", "hertz_gains",
    "ElasticFoundation", "elastic_foundation", "RangeOfMotion", "range_of_motion_limit",
]


def _pos(name: str, x: Any, allow_inf: bool = False) -> float:
    """A positive float (``inf`` allowed when ``allow_inf``)."""
    return check_number(name, x, positive=True, allow_inf=allow_inf)


def _nonneg(name: str, x: Any) -> float:
    return check_number(name, x, nonnegative=True)


def _poisson(name: str, nu: Any) -> float:
    try:
        v = float(nu)
    except (TypeError, ValueError):
        raise InputError(name, f"must be a number, got {nu!r}") from None
    if not (-1.0 < v < 0.5 + 1e-15):
        raise InputError(name, f"Poisson's ratio must lie in (-1, 0.5], got {nu!r}")
    return v


# ------------------------------------------------------------------------------------- Hertz
def effective_modulus(E1: float, nu1: float, E2: float = math.inf, nu2: float = 0.0) -> float:
    """``E* = 1 / ((1 - nu1^2)/E1 + (1 - nu2^2)/E2)`` [Pa]; ``E = inf`` is a rigid body."""
    E1, E2 = _pos("E1", E1, True), _pos("E2", E2, True)
    nu1, nu2 = _poisson("nu1", nu1), _poisson("nu2", nu2)
    c = (1.0 - nu1 ** 2) / E1 + (1.0 - nu2 ** 2) / E2
    if c <= 0:
        raise InputError("E1", "both bodies are rigid (E1 = E2 = inf): no Hertz compliance")
    return 1.0 / c


def effective_radius(R1: float, R2: float = math.inf) -> float:
    """``R* = 1 / (1/R1 + 1/R2)`` [m]; ``R2 = inf`` is a plane."""
    R1, R2 = _pos("R1", R1, True), _pos("R2", R2, True)
    c = 1.0 / R1 + 1.0 / R2
    if c <= 0:
        raise InputError("R1", "two planes (R1 = R2 = inf) are not a Hertz point contact")
    return 1.0 / c


@dataclass(frozen=True)
class HertzContact:
    """Hertz contact state at depth ``depth`` [m] (see the module docstring for the formulas).

    ``force`` F [N], ``K`` tangent stiffness dF/dd [N/m], ``K_secant`` F/d [N/m], ``B`` damping
    [N s/m], ``E_star`` [Pa], ``R_star`` [m], ``damping`` names the damping model used.
    """

    depth: float
    force: float
    K: float
    K_secant: float
    B: float
    E_star: float
    R_star: float
    damping: str

    def force_at(self, depth: Any) -> Any:
        """``F(d) = (4/3) E* sqrt(R*) d^(3/2)`` [N] at other depths (0 for ``d <= 0``)."""
        d = np.maximum(np.asarray(depth, dtype=float), 0.0)
        return (4.0 / 3.0) * self.E_star * np.sqrt(self.R_star) * d ** 1.5


def hertz_point_contact(E1: float, nu1: float, E2: float, nu2: float, R1: float, R2: float = math.inf, *,
                        depth: float, alpha: float | None = None, restitution: float | None = None,
                        impact_speed: float | None = None, damping_ratio: float | None = None,
                        mass: float | None = None) -> HertzContact:
    """Hertz sphere-plane (``R2 = inf``) or sphere-sphere contact at penetration ``depth >= 0`` [m].

    Returns ``F = (4/3) E* sqrt(R*) d^(3/2)``, the tangent ``K = 2 E* sqrt(R* d)`` and secant
    ``K_sec = F/d`` stiffnesses [N/m], and the damping ``B`` [N s/m] of exactly one model (or none,
    ``B = 0``): ``alpha`` [s/m] (Hunt-Crossley, ``B = alpha K d``), ``restitution`` with
    ``impact_speed`` [m/s] (Hunt-Crossley with ``alpha = (1 - e)/v_in``), or ``damping_ratio`` with
    ``mass`` [kg] (``B = 2 zeta sqrt(K m)``). At ``depth = 0`` everything is 0 (no contact force).
    For CompliantQP use ``K_secant`` to reproduce ``F`` at the current depth with ``lambda = -K phi``;
    ``K`` is the linearization about ``d``.
    """
    Es = effective_modulus(E1, nu1, E2, nu2)
    Rs = effective_radius(R1, R2)
    d = _nonneg("depth", depth)
    given = [alpha is not None, restitution is not None or impact_speed is not None,
             damping_ratio is not None or mass is not None]
    if sum(given) > 1:
        raise InputError("alpha", "give one damping model: alpha, (restitution, impact_speed) or "
                                  "(damping_ratio, mass)")
    K = 2.0 * Es * math.sqrt(Rs * d)
    F = (4.0 / 3.0) * Es * math.sqrt(Rs) * d ** 1.5
    Ksec = (2.0 / 3.0) * K
    if given[1]:
        if restitution is None or impact_speed is None:
            raise InputError("restitution", "needs both restitution and impact_speed")
        e = _nonneg("restitution", restitution)
        if e > 1:
            raise InputError("restitution", f"must lie in [0, 1], got {restitution!r}")
        alpha = (1.0 - e) / _pos("impact_speed", impact_speed)
    if alpha is not None:
        a = _nonneg("alpha", alpha)
        B, model = a * K * d, f"hunt-crossley(alpha={a:.6g} s/m)"
    elif given[2]:
        if damping_ratio is None or mass is None:
            raise InputError("damping_ratio", "needs both damping_ratio and mass")
        z, m = _nonneg("damping_ratio", damping_ratio), _pos("mass", mass)
        B, model = 2.0 * z * math.sqrt(K * m), f"ratio(zeta={z:.6g}, m={m:.6g} kg)"
    else:
        B, model = 0.0, "none"
    return HertzContact(d, F, K, Ksec, B, Es, Rs, model)


@dataclass(frozen=True)
class HertzGains:
    """Configuration-dependent Hertz gains for ``TimeStepping(..., formulation="compliant")``.

    ``stiffness(phi, q)`` is the secant ``K_sec(d) = F(d)/d = (4/3) E* sqrt(R* d)`` [N/m] and
    ``damping(phi, q)`` the model's ``B(d)`` [N s/m] at the depth ``d = max(-phi, min_depth)`` of every
    contact (``phi`` the gaps, any shape; ``q`` unused). With the gains frozen over a step, a contact at
    rest obeys ``lambda = -K_sec(d) phi = F(d)``: the Hertz force exactly.
    """

    E_star: float
    R_star: float
    alpha: float | None = None
    damping_ratio: float | None = None
    mass: float | None = None
    min_depth: float = 0.0

    def depth(self, phi: Any) -> np.ndarray:
        """``d = max(-phi, min_depth)`` [m]."""
        return np.maximum(-np.asarray(phi, dtype=float), self.min_depth)

    def stiffness(self, phi: Any, q: Any = None) -> np.ndarray:
        """Secant stiffness ``K_sec(d) = (4/3) E* sqrt(R* d)`` [N/m] per contact."""
        return (4.0 / 3.0) * self.E_star * np.sqrt(self.R_star * self.depth(phi))

    def damping(self, phi: Any, q: Any = None) -> np.ndarray:
        """``B(d)`` [N s/m]: Hunt-Crossley ``alpha K(d) d``, or ``2 zeta sqrt(K(d) m)``, or 0, with the
        tangent ``K(d) = 2 E* sqrt(R* d)``."""
        d = self.depth(phi)
        Kt = 2.0 * self.E_star * np.sqrt(self.R_star * d)
        if self.alpha is not None:
            return self.alpha * Kt * d
        if self.damping_ratio is not None:
            return 2.0 * self.damping_ratio * np.sqrt(Kt * self.mass)
        return np.zeros_like(d)

    def static_depth(self, weight: float) -> float:
        """The depth where ``F(d) = weight``: ``d = (3 W / (4 E* sqrt(R*)))^(2/3)`` [m]."""
        return (3.0 * _pos("weight", weight) / (4.0 * self.E_star * math.sqrt(self.R_star))) ** (2.0 / 3.0)


def hertz_gains(E1: float, nu1: float, E2: float = math.inf, nu2: float = 0.0, R1: float = 1.0,
                R2: float = math.inf, *, alpha: float | None = None, damping_ratio: float | None = None,
                mass: float | None = None, min_depth: float = 0.0) -> HertzGains:
    """Hertz gains as callables of the gap (see :class:`HertzGains`): materials ``E1, nu1, E2, nu2``,
    radii ``R1, R2`` [m] as in :func:`hertz_point_contact`; damping by ``alpha`` [s/m] (Hunt-Crossley)
    or ``damping_ratio`` with ``mass`` [kg], or none; ``min_depth`` [m] a floor on the depth used for the
    gains (``0``: a contact at zero depth has ``K = B = 0`` and carries no force in that step)."""
    Es, Rs = effective_modulus(E1, nu1, E2, nu2), effective_radius(R1, R2)
    if alpha is not None and (damping_ratio is not None or mass is not None):
        raise InputError("alpha", "give one damping model: alpha or (damping_ratio, mass)")
    a = None if alpha is None else _nonneg("alpha", alpha)
    z = m = None
    if damping_ratio is not None or mass is not None:
        if damping_ratio is None or mass is None:
            raise InputError("damping_ratio", "needs both damping_ratio and mass")
        z, m = _nonneg("damping_ratio", damping_ratio), _pos("mass", mass)
    return HertzGains(Es, Rs, a, z, m, _nonneg("min_depth", min_depth))


# -------------------------------------------------------------------------- elastic foundation
@dataclass(frozen=True)
class ElasticFoundation:
    """Winkler springs under a rectangular face (see :func:`elastic_foundation`).

    ``points`` (N x 2) [m]: spring points in the face frame (face centre at the origin, cell
    centres, x fastest); ``k`` (N,) [N/m]; ``b`` (N,) [N s/m]; ``size`` (a, b) [m]; ``shape``
    (nx, ny); ``E`` [Pa], ``viscosity`` [Pa s], ``thickness`` [m].
    """

    points: np.ndarray
    k: np.ndarray
    b: np.ndarray
    size: tuple[float, float]
    shape: tuple[int, int]
    E: float
    viscosity: float
    thickness: float

    @property
    def n(self) -> int:
        """Number of springs ``nx ny``."""
        return self.points.shape[0]

    @property
    def area(self) -> float:
        """Face area ``A = a b`` [m^2]."""
        return self.size[0] * self.size[1]

    @property
    def total_stiffness(self) -> float:
        """``sum_j k_j`` [N/m] (``= E A / t``)."""
        return float(self.k.sum())

    @property
    def total_damping(self) -> float:
        """``sum_j b_j`` [N s/m] (``= eta A / t``)."""
        return float(self.b.sum())

    def rows(self, position: Any, rotation: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Gaps and Jacobian of the springs against the ground plane ``z = 0``.

        The face frame has pose ``(position p, rotation R)`` in the world; spring ``j`` sits at
        ``r_j = R (x_j, y_j, 0)`` from ``p``. Returns ``phi`` (N,) with ``phi_j = p_z + r_j,z`` [m]
        and ``G`` (N x 6) against the body twist ``(v, omega)`` (both in world coordinates):
        ``G_j = (0, 0, 1, r_j,y, -r_j,x, 0)``, since ``d/dt (p + r_j)_z = v_z + (omega x r_j)_z``.
        """
        p = np.asarray(position, dtype=float).ravel()
        if p.shape != (3,) or not np.isfinite(p).all():
            raise InputError("position", f"must be 3 finite numbers, got {position!r}")
        R = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
        if R.shape != (3, 3) or not np.isfinite(R).all():
            raise InputError("rotation", "must be a finite 3 x 3 rotation matrix")
        r = np.column_stack([self.points, np.zeros(self.n)]) @ R.T
        phi = p[2] + r[:, 2]
        G = np.zeros((self.n, 6))
        G[:, 2] = 1.0
        G[:, 3] = r[:, 1]
        G[:, 4] = -r[:, 0]
        return phi, G


def elastic_foundation(face_size: float | Sequence[float], grid: int | Sequence[int], E: float,
                       thickness: float, viscosity: float = 0.0) -> ElasticFoundation:
    """A Winkler (Kelvin-Voigt) foundation of ``nx x ny`` springs under an ``a x b`` face.

    ``face_size`` a or (a, b) [m], ``grid`` n or (nx, ny), ``E`` layer modulus [Pa], ``thickness``
    t [m], ``viscosity`` eta [Pa s]. Each spring: ``k = E A_cell / t`` [N/m], ``b = eta A_cell / t``
    [N s/m], ``A_cell = a b / (nx ny)``; so ``sum k = E A / t``.
    """
    sz = np.broadcast_to(np.asarray(face_size, dtype=float), (2,)) if np.ndim(face_size) == 0 else \
        np.asarray(face_size, dtype=float).ravel()
    if sz.shape != (2,):
        raise InputError("face_size", f"must be a or (a, b), got {face_size!r}")
    a, bb = _pos("face_size", sz[0]), _pos("face_size", sz[1])
    gr = (grid, grid) if np.ndim(grid) == 0 else tuple(np.asarray(grid).ravel())
    if len(gr) != 2 or any(int(g) != g or int(g) < 1 for g in gr):
        raise InputError("grid", f"must be a positive integer or two of them, got {grid!r}")
    nx, ny = int(gr[0]), int(gr[1])
    E_, t = _pos("E", E), _pos("thickness", thickness)
    eta = _nonneg("viscosity", viscosity)
    xs = (np.arange(nx) + 0.5) * (a / nx) - a / 2
    ys = (np.arange(ny) + 0.5) * (bb / ny) - bb / 2
    X, Yg = np.meshgrid(xs, ys, indexing="xy")  # x fastest
    pts = np.column_stack([X.ravel(), Yg.ravel()])
    cell = a * bb / (nx * ny)
    N = nx * ny
    return ElasticFoundation(pts, np.full(N, E_ * cell / t), np.full(N, eta * cell / t), (a, bb), (nx, ny),
                             E_, eta, t)


# ---------------------------------------------------------------------------- range of motion
@dataclass(frozen=True)
class RangeOfMotion:
    """Joint limit ``lower <= q_i <= upper`` as two unilateral CompliantQP rows.

    ``G`` (2 x n), ``K`` (2,) [N/m or N m/rad], ``B`` (2,), ``kind`` ("unilateral", "unilateral").
    """

    q_index: int
    lower: float
    upper: float
    n: int
    G: np.ndarray
    K: np.ndarray
    B: np.ndarray
    kind: tuple[str, str] = field(default=("unilateral", "unilateral"))

    def phi(self, q: Any) -> np.ndarray:
        """``phi = (q_i - lower, upper - q_i)`` (>= 0 inside the range)."""
        q = np.asarray(q, dtype=float).ravel()
        if q.shape != (self.n,):
            raise InputError("q", f"must have length {self.n}, got shape {q.shape}")
        return np.array([q[self.q_index] - self.lower, self.upper - q[self.q_index]])


def range_of_motion_limit(q_index: int, lower: float, upper: float, K: float, B: float = 0.0, *,
                          n: int | None = None) -> RangeOfMotion:
    """Two unilateral rows ``phi = q_i - lower >= 0``, ``upper - q_i >= 0`` with ``G = (e_i, -e_i)``.

    ``K`` stiffness [N/m or N m/rad] and ``B`` damping [N s/m or N m s/rad] (both rows); ``n`` the
    number of generalized coordinates (default ``q_index + 1``). Both limits must be finite.
    """
    if not isinstance(q_index, (int, np.integer)) or q_index < 0:
        raise InputError("q_index", f"must be a non-negative integer, got {q_index!r}")
    n_ = int(q_index) + 1 if n is None else n
    if not isinstance(n_, (int, np.integer)) or n_ <= q_index:
        raise InputError("n", f"must be an integer > q_index = {q_index}, got {n!r}")
    lo, up = float(lower), float(upper)
    if not (math.isfinite(lo) and math.isfinite(up) and lo < up):
        raise InputError("lower", f"need finite lower < upper, got {lower!r}, {upper!r}")
    K_, B_ = _pos("K", K), _nonneg("B", B)
    G = np.zeros((2, int(n_)))
    G[0, q_index], G[1, q_index] = 1.0, -1.0
    return RangeOfMotion(int(q_index), lo, up, int(n_), G, np.full(2, K_), np.full(2, B_))
