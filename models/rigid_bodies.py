"""Bodies of the instantaneous multi-rigid-body contact model (Trinkle, Pang, Sudarsky, Lo 1995, sec. 2).

* :class:`RigidBody` -- a passive object ``i`` with the Newton-Euler equation (2)
  ``sum_j W_ij c_ij + g_obj,i + h_obj,i = M_obj,i qddot_i``.
* :class:`Manipulator` -- the active mechanism: revolute joints forming serial chains rooted at
  the fixed ground (a forest; a single chain is the special case), with joint rates ``ldot``,
  efforts ``tau``, inertia ``M_man`` and the joint-space terms ``g_man``, ``h_man`` of (5).
* :class:`BodyRef` -- which body a contact touches: an object, a manipulator link, or the fixed
  ground (all grounded links are one link, as in the paper).

Frames and units. Everything is expressed in the world frame at the current time (SI units). The
object state is ``qdot_i = (v_i, omega_i)``: the velocity of the center of mass and the angular
velocity, both world coordinates; ``qddot_i`` likewise. With the world-frame inertia
``I_w = R I_body R^T`` the Euler equation is ``I_w alpha + omega x I_w omega = moment``, so
``h_obj,i = (0, -omega x I_w omega)``. External wrenches ``g_obj,i = (force, moment about the
center of mass)`` are world-frame too.

Manipulator link ``m`` is the link moved by joint ``m``; joint ``m``'s axis ``a_m`` (unit) and a
point ``o_m`` on it are given in the world at the current configuration, and ``parents[m]`` is the
joint whose link carries joint ``m`` (``-1``: the ground). The linear-velocity Jacobian column of a
material point ``p`` of link ``m`` for an ancestor joint ``j`` is ``a_j x (p - o_j)``; its
angular-velocity column is ``a_j``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Sequence

import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, check_spd

#: standard gravity [m/s^2]
GRAVITY = 9.81

_ORTHO_TOL = 1e-9


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------


def cross(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """``a x b`` over the last axis (length 3), broadcasting; a fast ``numpy.cross``."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.ndim == 1 and b.ndim == 1:
        x0, x1, x2 = a.tolist()
        y0, y1, y2 = b.tolist()
        return np.array([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0])
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def skew(w: np.ndarray) -> np.ndarray:
    """The cross-product matrix ``[w]x`` with ``[w]x u = w x u``."""
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def rotation_about(axis: ArrayLike, angle: float) -> np.ndarray:
    """Rotation matrix ``exp(angle [axis]x)`` (Rodrigues) for a unit ``axis``."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    K = skew(a)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def box_inertia(mass: float, half_extents: ArrayLike) -> np.ndarray:
    """Body-frame inertia tensor of a solid box of the given mass and half extents."""
    hx, hy, hz = (2.0 * np.asarray(half_extents, dtype=float)) ** 2
    return mass / 12.0 * np.diag([hy + hz, hx + hz, hx + hy])


def as_array(value: ArrayLike, shape: tuple[int, ...], field_name: str) -> np.ndarray:
    """``value`` as a finite float array of ``shape``, else :class:`InputError` naming the field."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(field_name, f"cannot be read as a float array ({exc})") from None
    if arr.shape != shape:
        if arr.size == int(np.prod(shape)) and arr.ndim <= 2 and len(shape) == 1:
            arr = arr.reshape(shape)
        else:
            raise InputError(field_name, f"must have shape {shape}, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError(field_name, "contains NaN or inf")
    return arr


def check_rotation(R: np.ndarray, field_name: str) -> None:
    """Raise :class:`InputError` unless ``R`` is a proper rotation (``R^T R = I``, ``det R = 1``)."""
    if np.abs(R.T @ R - np.eye(3)).max() > _ORTHO_TOL or np.linalg.det(R) < 0.0:
        raise InputError(field_name, "is not a rotation matrix (R^T R = I, det R = +1)")


# ---------------------------------------------------------------------------------------------
# body references
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BodyRef:
    """A body a contact touches: ``object`` ``index``, manipulator ``link`` ``index``, or ``ground``."""

    kind: Literal["object", "link", "ground"]
    index: int = -1

    def __post_init__(self) -> None:
        if self.kind not in ("object", "link", "ground"):
            raise InputError("kind", f"must be 'object', 'link' or 'ground', got {self.kind!r}")
        if self.kind != "ground" and (not isinstance(self.index, (int, np.integer)) or self.index < 0):
            raise InputError("index", f"must be a nonnegative int for a {self.kind}, got {self.index!r}")

    def __str__(self) -> str:
        return "ground" if self.kind == "ground" else f"{self.kind}[{self.index}]"


#: the fixed ground (all grounded manipulator links are this one link)
GROUND = BodyRef("ground")


def obj(i: int) -> BodyRef:
    """Reference to passive object ``i``."""
    return BodyRef("object", int(i))


def link(m: int) -> BodyRef:
    """Reference to manipulator link ``m`` (the link moved by joint ``m``)."""
    return BodyRef("link", int(m))


def as_body_ref(value: BodyRef | int | str, field_name: str) -> BodyRef:
    """Accept a :class:`BodyRef`, an int (an object index) or ``"ground"``."""
    if isinstance(value, BodyRef):
        return value
    if isinstance(value, str) and value == "ground":
        return GROUND
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 0:
        return obj(int(value))
    raise InputError(field_name, f"must be a BodyRef, an object index or 'ground', got {value!r}")


# ---------------------------------------------------------------------------------------------
# passive objects
# ---------------------------------------------------------------------------------------------


@dataclass(eq=False)
class RigidBody:
    """A passive 6-DOF object of the Newton-Euler equation (2).

    Attributes
    ----------
    mass : float
        ``m_obj,i > 0``.
    inertia : (3, 3) array
        Inertia tensor about the center of mass in the body frame ``B_i`` (SPD).
    position : (3,) array
        Center of mass in the world.
    rotation : (3, 3) array
        Body-to-world rotation ``R`` (the world inertia is ``R inertia R^T``).
    velocity, angular_velocity : (3,) arrays
        ``qdot_i = (v, omega)``, world coordinates.
    wrench : (6,) array
        External generalized force ``g_obj,i = (force, moment about the center of mass)``, world.
    name : str
        A label for reports.
    """

    mass: float
    inertia: ArrayLike
    position: ArrayLike = field(default_factory=lambda: np.zeros(3))
    rotation: ArrayLike = field(default_factory=lambda: np.eye(3))
    velocity: ArrayLike = field(default_factory=lambda: np.zeros(3))
    angular_velocity: ArrayLike = field(default_factory=lambda: np.zeros(3))
    wrench: ArrayLike = field(default_factory=lambda: np.zeros(6))
    name: str = ""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "") -> None:
        """Convert fields to arrays and check them; errors name ``prefix + field``."""
        try:
            m = float(self.mass)
        except (TypeError, ValueError):
            raise InputError(prefix + "mass", f"must be a number, got {self.mass!r}") from None
        if not np.isfinite(m) or m <= 0.0:
            raise InputError(prefix + "mass", f"must be finite and > 0, got {self.mass!r}")
        self.mass = m
        self.inertia = as_array(self.inertia, (3, 3), prefix + "inertia")
        check_spd(self.inertia, prefix + "inertia", "the inertia matrix")
        self.position = as_array(self.position, (3,), prefix + "position")
        self.rotation = as_array(self.rotation, (3, 3), prefix + "rotation")
        check_rotation(self.rotation, prefix + "rotation")
        self.velocity = as_array(self.velocity, (3,), prefix + "velocity")
        self.angular_velocity = as_array(self.angular_velocity, (3,), prefix + "angular_velocity")
        self.wrench = as_array(self.wrench, (6,), prefix + "wrench")

    @property
    def inertia_world(self) -> np.ndarray:
        """World-frame inertia ``R I_body R^T``."""
        R = np.asarray(self.rotation)
        return R @ np.asarray(self.inertia) @ R.T

    @property
    def mass_matrix(self) -> np.ndarray:
        """``M_obj,i = diag(m I_3, I_w)`` (6 x 6, SPD)."""
        M = np.zeros((6, 6))
        M[:3, :3] = self.mass * np.eye(3)
        M[3:, 3:] = self.inertia_world
        return M

    @property
    def twist(self) -> np.ndarray:
        """``qdot_i = (v, omega)``."""
        return np.concatenate([self.velocity, self.angular_velocity])

    @property
    def velocity_product(self) -> np.ndarray:
        """``h_obj,i = (0, -omega x I_w omega)`` (world frame)."""
        w = np.asarray(self.angular_velocity)
        return np.concatenate([np.zeros(3), -cross(w, self.inertia_world @ w)])

    def point_velocity(self, p: np.ndarray) -> np.ndarray:
        """Velocity ``v + omega x (p - x)`` of the material point at ``p``."""
        return np.asarray(self.velocity) + cross(self.angular_velocity, p - self.position)

    def point_bias(self, p: np.ndarray) -> np.ndarray:
        """Velocity-product part ``omega x (omega x r)`` of the acceleration of the material point ``p``."""
        w = np.asarray(self.angular_velocity)
        return cross(w, cross(w, p - self.position))

    @classmethod
    def box(cls, half_extents: ArrayLike, mass: float, position: ArrayLike = (0.0, 0.0, 0.0),
            rotation: ArrayLike | None = None, velocity: ArrayLike = (0.0, 0.0, 0.0),
            angular_velocity: ArrayLike = (0.0, 0.0, 0.0), gravity: float = GRAVITY, name: str = "") -> "RigidBody":
        """A solid box under gravity ``-gravity e_z`` (``g_obj = (0, 0, -m g, 0, 0, 0)``)."""
        return cls(
            mass=mass,
            inertia=box_inertia(mass, half_extents),
            position=position,
            rotation=np.eye(3) if rotation is None else rotation,
            velocity=velocity,
            angular_velocity=angular_velocity,
            wrench=np.array([0.0, 0.0, -mass * gravity, 0.0, 0.0, 0.0]),
            name=name,
        )


# ---------------------------------------------------------------------------------------------
# the manipulator
# ---------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Manipulator:
    """Revolute joints in serial chains rooted at the ground, with the dynamics (5).

    ``tau - (J^T c + g_man + h_man) = M_man lddot``.

    Attributes
    ----------
    axes, origins : (n_l, 3) arrays
        Unit axis ``a_m`` of joint ``m`` and a point ``o_m`` on it, world frame, current configuration.
    parents : (n_l,) ints
        ``parents[m]`` is the joint whose link carries joint ``m`` (``-1``: the ground); parents
        come before children (``parents[m] < m``).
    joint_velocities : (n_l,)
        ``ldot``.
    efforts : (n_l,)
        ``tau`` (joint torques).
    mass_matrix : (n_l, n_l)
        ``M_man`` (SPD).
    g_man, h_man : (n_l,)
        Joint efforts induced by the external (gravity) wrenches and by velocity products.
    joint_positions : (n_l,)
        ``l`` (informational: the geometry is given by ``axes`` and ``origins``).
    """

    axes: ArrayLike
    origins: ArrayLike
    parents: Sequence[int]
    joint_velocities: ArrayLike
    efforts: ArrayLike
    mass_matrix: ArrayLike
    g_man: ArrayLike
    h_man: ArrayLike
    joint_positions: ArrayLike | None = None

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "manipulator.") -> None:
        """Convert fields to arrays and check them; errors name the field."""
        par = np.asarray(self.parents)
        if par.ndim != 1 or (par.size and not np.issubdtype(par.dtype, np.integer)):
            raise InputError(prefix + "parents", "must be a 1-D sequence of ints")
        n = int(par.size)
        self.parents = par.astype(np.int64)
        for m, p in enumerate(self.parents):
            if not (-1 <= p < m):
                raise InputError(prefix + "parents", f"parents[{m}] = {p} must satisfy -1 <= parent < {m}")
        self.axes = as_array(self.axes, (n, 3), prefix + "axes")
        norms = np.linalg.norm(self.axes, axis=1)
        if n and np.abs(norms - 1.0).max() > 1e-9:
            raise InputError(prefix + "axes", "rows must be unit vectors")
        self.origins = as_array(self.origins, (n, 3), prefix + "origins")
        self.joint_velocities = as_array(self.joint_velocities, (n,), prefix + "joint_velocities")
        self.efforts = as_array(self.efforts, (n,), prefix + "efforts")
        self.mass_matrix = as_array(self.mass_matrix, (n, n), prefix + "mass_matrix")
        if n:
            check_spd(self.mass_matrix, prefix + "mass_matrix", "the joint-space mass matrix")
        self.g_man = as_array(self.g_man, (n,), prefix + "g_man")
        self.h_man = as_array(self.h_man, (n,), prefix + "h_man")
        if self.joint_positions is None:
            self.joint_positions = np.zeros(n)
        self.joint_positions = as_array(self.joint_positions, (n,), prefix + "joint_positions")
        self._chains = [self._chain(m) for m in range(n)]

    @property
    def n_joints(self) -> int:
        """``n_l``."""
        return int(len(self.parents))

    def _chain(self, m: int) -> list[int]:
        out = []
        while m >= 0:
            out.append(m)
            m = int(self.parents[m])
        return out[::-1]

    def chain(self, m: int) -> list[int]:
        """Joints from the root to joint ``m`` (inclusive): the joints that move link ``m``."""
        return list(self._chains[m])

    def angular_jacobian(self, m: int) -> np.ndarray:
        """``J_w`` of link ``m`` (3 x n_l): ``omega_m = J_w ldot`` (columns ``a_j``, ``j`` in the chain)."""
        Jw = np.zeros((3, self.n_joints))
        ch = self._chains[m]
        Jw[:, ch] = np.asarray(self.axes)[ch].T
        return Jw

    def point_jacobian(self, m: int, p: np.ndarray) -> np.ndarray:
        """``J_v`` of the material point ``p`` of link ``m`` (3 x n_l): columns ``a_j x (p - o_j)``."""
        Jv = np.zeros((3, self.n_joints))
        ch = self._chains[m]
        ax, org = np.asarray(self.axes)[ch], np.asarray(self.origins)[ch]
        Jv[:, ch] = cross(ax, p - org).T
        return Jv

    def angular_velocity(self, m: int) -> np.ndarray:
        """``omega`` of link ``m``."""
        ch = self._chains[m]
        return np.asarray(self.joint_velocities)[ch] @ np.asarray(self.axes)[ch]

    def point_velocity(self, m: int, p: np.ndarray) -> np.ndarray:
        """Velocity of the material point ``p`` of link ``m``."""
        return self.point_jacobian(m, p) @ self.joint_velocities

    def _prefix_kinematics(self, m: int) -> tuple[list[int], np.ndarray, np.ndarray]:
        """For each joint ``j`` in the chain of ``m``: the angular velocity of the link carrying it
        (``omega_pre(j)``) and the velocity of ``o_j`` as a point of that link."""
        ch = self._chains[m]
        ax, org = np.asarray(self.axes), np.asarray(self.origins)
        ld = np.asarray(self.joint_velocities)
        w_pre = np.zeros((len(ch), 3))
        v_org = np.zeros((len(ch), 3))
        for idx, j in enumerate(ch):
            prev = ch[:idx]
            if prev:
                w_pre[idx] = ld[prev] @ ax[prev]
                v_org[idx] = ld[prev] @ cross(ax[prev], org[j] - org[prev])
        return ch, w_pre, v_org

    def angular_bias(self, m: int) -> np.ndarray:
        """``Jdot_w ldot`` of link ``m``: ``sum_j ldot_j (omega_pre(j) x a_j)``."""
        ch, w_pre, _ = self._prefix_kinematics(m)
        ax = np.asarray(self.axes)[ch]
        ld = np.asarray(self.joint_velocities)[ch]
        return ld @ cross(w_pre, ax)

    def point_bias(self, m: int, p: np.ndarray) -> np.ndarray:
        """``Jdot_v ldot`` of the material point ``p`` of link ``m``.

        Differentiating ``v(p) = sum_j ldot_j a_j x (p - o_j)`` with ``adot_j = omega_pre(j) x a_j``,
        ``odot_j = v_pre(j)(o_j)`` and ``pdot = v(p)`` gives
        ``sum_j ldot_j [(omega_pre(j) x a_j) x (p - o_j) + a_j x (v(p) - odot_j)]``.
        """
        ch, w_pre, v_org = self._prefix_kinematics(m)
        ax, org = np.asarray(self.axes)[ch], np.asarray(self.origins)[ch]
        ld = np.asarray(self.joint_velocities)[ch]
        vp = self.point_velocity(m, p)
        terms = cross(cross(w_pre, ax), p - org) + cross(ax, vp - v_org)
        return ld @ terms

    @classmethod
    def from_links(cls, axes: ArrayLike, origins: ArrayLike, parents: Sequence[int], joint_velocities: ArrayLike,
                   link_masses: ArrayLike, link_centers: ArrayLike, link_inertias: ArrayLike,
                   efforts: ArrayLike | None = None, gravity: float = GRAVITY,
                   joint_positions: ArrayLike | None = None) -> "Manipulator":
        """A manipulator whose ``M_man``, ``g_man`` and ``h_man`` come from its links' inertia.

        For links with mass ``m_L``, center ``c_L`` and world inertia ``I_L`` (about ``c_L``):
        ``M_man = sum_L m_L J_v^T J_v + J_w^T I_L J_w``,
        ``h_man = sum_L m_L J_v^T (Jdot_v ldot) + J_w^T (I_L Jdot_w ldot + omega x I_L omega)``
        and ``g_man = -sum_L J_v^T (m_L g)`` with ``g = (0, 0, -gravity)`` (the sign of (5)).
        ``efforts`` default to ``g_man + h_man`` (gravity and velocity-product compensation).
        """
        tmp = cls(
            axes=axes, origins=origins, parents=parents, joint_velocities=joint_velocities,
            efforts=np.zeros(len(parents)), mass_matrix=np.eye(len(parents)),
            g_man=np.zeros(len(parents)), h_man=np.zeros(len(parents)), joint_positions=joint_positions,
        )
        n = tmp.n_joints
        masses = as_array(link_masses, (n,), "link_masses")
        if (masses <= 0).any():
            raise InputError("link_masses", "must be > 0")
        centers = as_array(link_centers, (n, 3), "link_centers")
        inertias = as_array(link_inertias, (n, 3, 3), "link_inertias")
        M = np.zeros((n, n))
        h = np.zeros(n)
        g = np.zeros(n)
        grav = np.array([0.0, 0.0, -gravity])
        for L in range(n):
            check_spd(inertias[L], f"link_inertias[{L}]", "the inertia matrix")
            Jv = tmp.point_jacobian(L, centers[L])
            Jw = tmp.angular_jacobian(L)
            IL = inertias[L]
            M += masses[L] * Jv.T @ Jv + Jw.T @ IL @ Jw
            w = tmp.angular_velocity(L)
            h += masses[L] * Jv.T @ tmp.point_bias(L, centers[L])
            h += Jw.T @ (IL @ tmp.angular_bias(L) + cross(w, IL @ w))
            g -= Jv.T @ (masses[L] * grav)
        M = 0.5 * (M + M.T)
        tau = g + h if efforts is None else efforts
        return cls(
            axes=tmp.axes, origins=tmp.origins, parents=tmp.parents,
            joint_velocities=tmp.joint_velocities, efforts=tau, mass_matrix=M, g_man=g, h_man=h,
            joint_positions=tmp.joint_positions,
        )

    def subset(self, joints: Sequence[int]) -> "Manipulator":
        """The manipulator restricted to ``joints`` (sorted; a missing parent becomes the ground).

        Only valid when ``M_man`` couples no kept joint with a dropped one (as in an island).
        """
        js = sorted(int(j) for j in joints)
        pos = {j: k for k, j in enumerate(js)}
        parents = [pos.get(int(self.parents[j]), -1) for j in js]
        return Manipulator(
            axes=np.asarray(self.axes)[js], origins=np.asarray(self.origins)[js], parents=parents,
            joint_velocities=np.asarray(self.joint_velocities)[js], efforts=np.asarray(self.efforts)[js],
            mass_matrix=np.asarray(self.mass_matrix)[np.ix_(js, js)], g_man=np.asarray(self.g_man)[js],
            h_man=np.asarray(self.h_man)[js], joint_positions=np.asarray(self.joint_positions)[js],
        )
