"""Painleve's sliding rod and Lotstedt's resting rod: a uniform rod touching a table with one end.

The scene (planar motion inside the 3-D model of Trinkle, Pang, Sudarsky and Lo 1995)
------------------------------------------------------------------------------------
A rod of mass ``m``, length ``l`` and central moment of inertia ``I`` about the axes across it
(``m l^2 / 12`` for a thin uniform rod) leans at the angle ``theta`` (``0 < theta < pi/2``) over
the table ``z = 0``; its lower end is at the origin and touches the table there, its centre of mass
``G`` is at ``(l/2) u`` with ``u = (cos theta, 0, sin theta)`` (the rod leans toward ``+x``). The
contact frame is ``n = e_z`` (into the rod), ``t = e_x``, ``o = n x t = e_y``; the face is the table's.

The state: the lower end moves along the table with ``v_t`` (``v_t != 0``: the contact is in the
sliding set ``S``, Painleve's problem; ``v_t = 0``: it is in the rolling set ``R``, Lotstedt's rod),
the rod turns about ``e_y`` with ``omega`` (rad/s), and an external force ``pull = (p_x, p_z)``, in
multiples of the weight ``m g``, acts on ``G`` besides gravity.

Closed forms (derived for this scene; ``s = sin theta``, ``c = cos theta``)
----------------------------------------------------------------------------
With ``kappa = m l^2 / (4 I)`` (3 for the uniform rod), Newton-Euler for the planar motion gives
the contact accelerations ``a = A c + b`` of (24)-(26) on the ``(n, t)`` rows::

    A = (1/m) [[1 + kappa c^2,   -kappa s c  ],
               [ -kappa s c,   1 + kappa s^2 ]],      det(m A) = 1 + kappa > 0,
    b_n = omega^2 (l/2) s + g (p_z - 1),   b_t = omega^2 (l/2) c + g p_x.

The ``o`` direction decouples (``A_no = A_to = 0``, ``A_oo = (1 + kappa)/m``, ``b_o = 0``), so every
solution has ``c_o = 0``.

* Sliding end (Painleve), ``c_t = -mu sign(v_t) c_n``: ``a_n = A_eff c_n + b_n`` with
  ``m A_eff = 1 + kappa c (c + mu sign(v_t) s)``. For ``v_t < 0`` (the lower end slides away from
  the side the rod leans to, so friction pushes it toward ``+x`` and its moment presses the end
  into the table) ``A_eff < 0`` exactly when ``mu > mu_P(theta) = (1 + kappa c^2) / (kappa s c)``
  (:func:`painleve_mu`); its minimum over ``theta`` is ``2 sqrt(1 + kappa) / kappa`` (4/3 for the
  uniform rod) at ``tan theta = sqrt(1 + kappa)`` (63.43 deg) (:func:`painleve_min_mu`). Then
  ``b_n < 0`` has no solution (inconsistency) and ``b_n > 0`` two, ``c_n = 0`` and
  ``c_n = -b_n / A_eff`` (indeterminacy); below ``mu_P`` (and always for ``v_t > 0``) there is
  exactly one. Gravity alone gives ``b_n = -g``; a spin ``omega^2 (l/2) s > g`` makes ``b_n > 0``.
* Resting end (Lotstedt), modes separation (``c = 0``, needs ``b_n >= 0``), sticking
  (``c = -A^{-1} b`` with ``c_n >= 0``, ``|c_t| <= mu c_n``) and slipping toward ``+x`` or ``-x``
  (``c_t = -+ mu c_n``, ``a_n = 0``, ``a_t`` of the slip's sign) (:func:`closed_form_solutions`).
  Under gravity alone (``b = (-g, 0)``) exactly one mode holds: sticking if
  ``mu >= kappa s c / (1 + kappa s^2)`` (:func:`stick_mu`), else slipping toward ``-x``.
  With ``b_n > 0`` and ``b_t = -rho b_n`` (``rho > 0``: a pull up and back, away from the lean),
  separation, sticking and slipping toward ``-x`` all hold -- three solutions -- exactly when
  ``rho kappa s c > 1 + kappa s^2`` and ``mu > mu_3 = (rho (1 + kappa c^2) - kappa s c) /
  (rho kappa s c - (1 + kappa s^2))`` (:func:`three_solution_mu`); otherwise separation is the
  only one. ``mu_3 > mu_P``, and ``mu_3 -> mu_P`` as ``rho -> inf``: Lotstedt's three solutions
  live inside Painleve's region.

Everything here is planar and exact: the rod's axial inertia (a thin cylinder of ``radius``) never
enters ``A`` or ``b``, since forces at a point of the axis have no moment about it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from contactmp.errors import InputError, check_number
from contactmp.models.contact_model import Contact, ContactModel
from contactmp.models.rigid_bodies import GRAVITY, GROUND, RigidBody, obj, rotation_about

__all__ = [
    "RodState", "rod", "painleve_rod", "lotstedt_rod", "rod_kappa", "rod_matrices",
    "painleve_mu", "painleve_min_mu", "stick_mu", "three_solution_mu", "spin_angle",
    "RodSolution", "closed_form_solutions", "closed_form_count", "rod_planar_state",
]


def _number(name: str, value: float, *, positive: bool = False, nonneg: bool = False) -> float:
    return check_number(name, value, positive=positive, nonnegative=nonneg)


@dataclass(frozen=True)
class RodState:
    """The data of one rod scene (see the module docstring); angles in radians, SI units.

    ``inertia`` is the central moment across the rod (``None``: ``m l^2 / 12``); ``pull`` the
    external force on the centre of mass in multiples of ``m g`` (x, z)."""

    theta: float
    mu: float
    v_t: float = 0.0
    omega: float = 0.0
    pull: Sequence[float] = (0.0, 0.0)
    mass: float = 1.0
    length: float = 1.0
    inertia: float | None = None
    gravity: float = GRAVITY

    def checked(self) -> "RodState":
        """A copy with every field validated (raises :class:`InputError` naming the field)."""
        theta = _number("theta", self.theta)
        if not 0.0 < theta < 0.5 * math.pi:
            raise InputError("theta", f"must lie in (0, pi/2), got {self.theta!r}")
        try:
            px, pz = (float(v) for v in self.pull)
        except (TypeError, ValueError):
            raise InputError("pull", f"must be two numbers (x, z), got {self.pull!r}") from None
        if not (math.isfinite(px) and math.isfinite(pz)):
            raise InputError("pull", "must be finite")
        mass = _number("mass", self.mass, positive=True)
        length = _number("length", self.length, positive=True)
        inertia = mass * length ** 2 / 12.0 if self.inertia is None else _number("inertia", self.inertia, positive=True)
        return RodState(theta, _number("mu", self.mu, nonneg=True), _number("v_t", self.v_t),
                        _number("omega", self.omega), (px, pz), mass, length, inertia,
                        _number("gravity", self.gravity, nonneg=True))

    @property
    def kappa(self) -> float:
        """``kappa = m l^2 / (4 I)`` (3 for a thin uniform rod)."""
        st = self.checked()
        return rod_kappa(st.mass, st.length, st.inertia)

    @property
    def bias(self) -> tuple[float, float]:
        """``(b_n, b_t)``: the contact end's acceleration without contact force."""
        st = self.checked()
        s, c = math.sin(st.theta), math.cos(st.theta)
        half = 0.5 * st.length
        return (st.omega ** 2 * half * s + st.gravity * (st.pull[1] - 1.0),
                st.omega ** 2 * half * c + st.gravity * st.pull[0])


def rod_kappa(mass: float = 1.0, length: float = 1.0, inertia: float | None = None) -> float:
    """``kappa = m l^2 / (4 I)``; ``inertia=None`` is the thin uniform rod (``kappa = 3``)."""
    if inertia is None:
        return 3.0
    return mass * length ** 2 / (4.0 * inertia)


def rod_matrices(theta: float, mass: float = 1.0, kappa: float = 3.0) -> np.ndarray:
    """The planar ``(n, t)`` block of ``A`` (25) for the rod at ``theta`` (see the module docstring)."""
    s, c = math.sin(theta), math.cos(theta)
    return np.array([[1.0 + kappa * c * c, -kappa * s * c], [-kappa * s * c, 1.0 + kappa * s * s]]) / mass


def painleve_mu(theta: float | np.ndarray, kappa: float = 3.0) -> float | np.ndarray:
    """Painleve's critical friction ``mu_P = (1 + kappa cos^2) / (kappa sin cos)``: the sliding rod
    (``v_t < 0``) has ``A_eff < 0`` exactly for ``mu > mu_P``."""
    s, c = np.sin(theta), np.cos(theta)
    return (1.0 + kappa * c * c) / (kappa * s * c)


def painleve_min_mu(kappa: float = 3.0) -> tuple[float, float]:
    """``(min_theta mu_P, argmin)``: ``2 sqrt(1 + kappa) / kappa`` at ``tan theta = sqrt(1 + kappa)``
    (4/3 at 63.43 deg for the uniform rod)."""
    return 2.0 * math.sqrt(1.0 + kappa) / kappa, math.atan(math.sqrt(1.0 + kappa))


def stick_mu(theta: float | np.ndarray, kappa: float = 3.0) -> float | np.ndarray:
    """The resting rod under gravity alone sticks iff ``mu >= kappa s c / (1 + kappa s^2)``."""
    s, c = np.sin(theta), np.cos(theta)
    return kappa * s * c / (1.0 + kappa * s * s)


def three_solution_mu(theta: float | np.ndarray, rho: float, kappa: float = 3.0) -> float | np.ndarray:
    """``mu_3``: the resting rod with ``b_n > 0``, ``b_t = -rho b_n`` has three solutions (separation,
    sticking, slipping toward ``-x``) for ``mu > mu_3``; ``inf`` where ``rho kappa s c <= 1 + kappa s^2``
    (one solution for every ``mu``)."""
    s, c = np.sin(theta), np.cos(theta)
    a, d, k = 1.0 + kappa * c * c, 1.0 + kappa * s * s, kappa * s * c
    den = rho * k - d
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den > 0, (rho * a - k) / np.where(den > 0, den, 1.0), np.inf)
    return float(out) if np.ndim(out) == 0 else out


def spin_angle(omega: float, length: float = 1.0, gravity: float = GRAVITY) -> float:
    """The angle above which a spin ``omega`` lifts the end of a rod under gravity alone
    (``b_n = omega^2 (l/2) sin theta - g > 0``); ``pi/2`` if never."""
    r = gravity / (0.5 * length * omega ** 2) if omega else math.inf
    return math.asin(r) if r < 1.0 else 0.5 * math.pi


# ------------------------------------------------------------------------------------------------
# The scene as a ContactModel
# ------------------------------------------------------------------------------------------------
def rod(state: RodState, *, radius: float | None = None, name: str = "") -> ContactModel:
    """The rod scene of ``state`` as a :class:`ContactModel` (object 0, one contact with the ground).

    The body frame's x axis is the rod axis; its inertia is ``diag(m r^2 / 2, I, I)`` with ``r`` =
    ``radius`` (default ``l / 100``; it never enters ``A`` or ``b``). The centre of mass moves with
    ``v_G = (v_t, 0, 0) + omega e_y x (G - p)``, so the contact end has velocity ``(v_t, 0, 0)`` and
    (7) ``v_n = 0`` holds.
    """
    st = state.checked()
    s, c = math.sin(st.theta), math.cos(st.theta)
    half = 0.5 * st.length
    r = st.length / 100.0 if radius is None else _number("radius", radius, positive=True)
    u = np.array([c, 0.0, s])
    G = half * u
    w = np.array([0.0, st.omega, 0.0])
    v_G = np.array([st.v_t, 0.0, 0.0]) + np.cross(w, G)
    weight = st.mass * st.gravity
    body = RigidBody(
        mass=st.mass,
        inertia=np.diag([0.5 * st.mass * r * r, st.inertia, st.inertia]),
        position=G,
        rotation=rotation_about([0.0, 1.0, 0.0], -st.theta),
        velocity=v_G,
        angular_velocity=w,
        wrench=np.array([weight * st.pull[0], 0.0, weight * (st.pull[1] - 1.0), 0.0, 0.0, 0.0]),
        name="rod",
    )
    contact = Contact(obj(0), GROUND, point=np.zeros(3), normal=[0.0, 0.0, 1.0], tangent=[1.0, 0.0, 0.0],
                      mu=st.mu, face="k")
    label = name or (f"rod(theta={math.degrees(st.theta):.3g} deg, mu={st.mu:.3g}, v_t={st.v_t:.3g}, "
                     f"omega={st.omega:.3g}, pull={st.pull})")
    return ContactModel(objects=[body], contacts=[contact], name=label)


def rod_planar_state(state: RodState) -> tuple[np.ndarray, np.ndarray]:
    """``(q, v)`` of :func:`~contactmp.models.systems.rod_2d` for ``state`` (its end at the origin):
    ``q = (G_x, G_z, theta)`` with ``G = (l/2)(cos theta, sin theta)``, and ``v = (v_t + omega G_z,
    -omega G_x, -omega)`` -- the planar angle turns counterclockwise in ``(x, z)``, a turn about
    ``+e_y`` clockwise, so ``thetadot = -omega``, and the end moves with ``(v_t, 0)``."""
    st = state.checked()
    gx, gz = 0.5 * st.length * math.cos(st.theta), 0.5 * st.length * math.sin(st.theta)
    return np.array([gx, gz, st.theta]), np.array([st.v_t + st.omega * gz, -st.omega * gx, -st.omega])


def painleve_rod(theta: float, mu: float, *, v_t: float = -1.0, omega: float = 0.0,
                 pull: Sequence[float] = (0.0, 0.0), mass: float = 1.0, length: float = 1.0,
                 inertia: float | None = None, gravity: float = GRAVITY) -> ContactModel:
    """Painleve's problem: the rod whose lower end slides with ``v_t != 0`` (the contact in ``S``).
    The default ``v_t = -1`` is the direction with the paradox (see the module docstring)."""
    if _number("v_t", v_t) == 0.0:
        raise InputError("v_t", "must be nonzero for the sliding rod (use lotstedt_rod for v_t = 0)")
    return rod(RodState(theta, mu, v_t, omega, pull, mass, length, inertia, gravity))


def lotstedt_rod(theta: float, mu: float, *, omega: float = 0.0, pull: Sequence[float] = (0.0, 0.0),
                 mass: float = 1.0, length: float = 1.0, inertia: float | None = None,
                 gravity: float = GRAVITY) -> ContactModel:
    """Lotstedt's rod: the lower end at rest on the table (``v_t = 0``, the contact in ``R``)."""
    return rod(RodState(theta, mu, 0.0, omega, pull, mass, length, inertia, gravity))


# ------------------------------------------------------------------------------------------------
# Closed-form solutions
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RodSolution:
    """One closed-form solution: contact force ``(c_n, c_t)`` (``c_o = 0``), contact accelerations
    ``(a_n, a_t)`` and the mode: ``"separation"``, ``"sliding"`` (the end keeps sliding),
    ``"sticking"``, ``"slip+x"`` or ``"slip-x"`` (a resting end starting to slide that way)."""

    c_n: float
    c_t: float
    a_n: float
    a_t: float
    mode: str


def closed_form_solutions(state: RodState, rtol: float = 1e-12) -> list[RodSolution]:
    """Every solution of the rod's instantaneous problem by its modes (see the module docstring).

    A mode's inequalities are tested with the slack ``rtol * scale`` (``scale`` = ``max(1, |b|) *
    max(1, mu)``); solutions that coincide (on a region boundary) are listed once."""
    st = state.checked()
    kap = rod_kappa(st.mass, st.length, st.inertia)
    A = rod_matrices(st.theta, st.mass, kap)
    b_n, b_t = st.bias
    b = np.array([b_n, b_t])
    tol = rtol * max(1.0, float(np.abs(b).max())) * max(1.0, st.mu)
    out: list[RodSolution] = []

    def add(c: np.ndarray, mode: str) -> None:
        a = A @ c + b
        for o in out:
            if abs(o.c_n - c[0]) <= tol * 10 and abs(o.c_t - c[1]) <= tol * 10:
                return
        out.append(RodSolution(float(c[0]), float(c[1]), float(a[0]), float(a[1]), mode))

    if b_n >= -tol:
        add(np.zeros(2), "separation")
    if st.v_t != 0.0:
        sgn = math.copysign(1.0, st.v_t)
        a_eff = A[0, 0] - sgn * st.mu * A[0, 1]
        if a_eff != 0.0:
            cn = -b_n / a_eff
            if cn > tol:
                add(np.array([cn, -sgn * st.mu * cn]), "sliding")
        return out
    c = -np.linalg.solve(A, b)
    if c[0] > tol and abs(c[1]) <= st.mu * c[0] + tol:
        add(c, "sticking")
    for sgn, mode in ((1.0, "slip+x"), (-1.0, "slip-x")):  # a_t has the sign sgn; c_t = -sgn mu c_n
        a_eff = A[0, 0] - sgn * st.mu * A[0, 1]
        if a_eff == 0.0:
            continue
        cn = -b_n / a_eff
        if cn <= tol:
            continue
        cc = np.array([cn, -sgn * st.mu * cn])
        a_t = float(A[1] @ cc + b_t)
        if sgn * a_t > tol:
            add(cc, mode)
    return out


def closed_form_count(state: RodState) -> int:
    """The number of solutions by the region formulas alone (no mode solving), for the states the
    module docstring covers: sliding end (any ``b_n != 0``); resting end under ``b_n < 0, b_t = 0``
    (always 1) or ``b_n > 0, b_t <= 0`` (3 above :func:`three_solution_mu`, else 1).

    Raises :class:`InputError` (field ``state``) for a resting-end state outside these cases."""
    st = state.checked()
    kap = rod_kappa(st.mass, st.length, st.inertia)
    b_n, b_t = st.bias
    if st.v_t != 0.0:
        if st.v_t > 0 or st.mu < painleve_mu(st.theta, kap):
            return 1
        return 2 if b_n > 0 else (1 if b_n == 0 else 0)
    if b_n < 0 and b_t == 0.0:
        return 1
    if b_n > 0 and b_t <= 0.0:
        return 3 if st.mu > three_solution_mu(st.theta, -b_t / b_n, kap) else 1
    raise InputError("state", "closed_form_count covers b_n < 0 with b_t = 0, or b_n > 0 with b_t <= 0, "
                              "for a resting end; use closed_form_solutions")
