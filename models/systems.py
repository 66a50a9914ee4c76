"""Example contact systems as :class:`~contactmp.models.symbolic.ContactSystem` s (SI units).

Planar systems live in the world x-z plane (z up, gravity ``-g e_z``); a planar angle ``theta``
turns the body counterclockwise in the (x, z) coordinates, so a body point ``r = (r_x, r_z)`` sits at
``p + R(theta) r`` with ``R = [[cos, -sin], [sin, cos]]``. Their contacts have one tangent ``t``
(``planar=True``, ``Jo = 0``); the frame ``(n, t, o)`` has ``o`` = the out-of-plane world y axis,
``n x t = o``: ground contacts use ``n = e_z, t = e_x``.

Unless a system says otherwise, ``qdot = v`` and the mass matrix and ``h`` come from the Lagrangian
``L = T - V`` with ``T = 1/2 v^T M(q) v``:
``h(q, v) = d(M v)/dq v - dT/dq + dV/dq`` (Coriolis, centrifugal and gravity terms).
"""
from __future__ import annotations

from typing import Sequence

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, check_number
from contactmp.models.rigid_bodies import GRAVITY
from contactmp.models.symbolic import ContactSystem

__all__ = ["point_mass_2d", "box_2d", "box_stack_2d", "rod_2d", "hopper_2d", "cart_pole_walls", "box_3d",
           "ball_3d", "cube_3d", "ensemble", "quaternion_to_rotation", "euler_zyx_rotation"]


# --------------------------------------------------------------------------------- helpers
def _positive(name: str, value: float) -> float:
    return check_number(name, value, positive=True)


def _nonnegative(name: str, value: float) -> float:
    return check_number(name, value, nonnegative=True)


def lagrangian_system(q: ca.SX, v: ca.SX, T: ca.SX, V: ca.SX) -> tuple[ca.SX, ca.SX]:
    """``M = d^2 T / dv^2`` and ``h = d(M v)/dq v - dT/dq + dV/dq`` (for ``qdot = v``)."""
    M = ca.hessian(T, v)[0]
    h = ca.jacobian(M @ v, q) @ v - ca.gradient(T, q) + ca.gradient(V, q)
    return ca.simplify(M), h


def rot2(theta: ca.SX) -> ca.SX:
    c, s = ca.cos(theta), ca.sin(theta)
    return ca.vertcat(ca.horzcat(c, -s), ca.horzcat(s, c))


def _box_corners(width: float, height: float) -> list[tuple[float, float]]:
    """A planar box's corners in its body frame: bottom-left, bottom-right, top-right, top-left."""
    return [(-width / 2, -height / 2), (width / 2, -height / 2), (width / 2, height / 2), (-width / 2, height / 2)]


def point_contacts(points: Sequence[ca.SX], frames: Sequence[tuple[ArrayLike, ...]],
                    offsets: Sequence[float], q: ca.SX, v: ca.SX, qdot: ca.SX,
                    planar: bool) -> tuple[ca.SX, ca.SX, ca.SX, ca.SX]:
    """Gaps and Jacobian rows of material points ``p_j(q)`` against fixed planes.

    Plane ``j`` is ``{x : n_j . x = offsets[j]}`` with frame ``(n_j, t_j[, o_j])``;
    ``phi_j = n_j . p_j - offsets[j]`` and the rows are ``n_j^T Jp_j``, ``t_j^T Jp_j``, ``o_j^T Jp_j``
    where ``Jp_j = d (dp_j/dq qdot) / dv`` is the point's velocity Jacobian.
    """
    phi, Jn, Jt, Jo = [], [], [], []
    n_v = v.size1()
    for p, frame, off in zip(points, frames, offsets):
        Jp = ca.jacobian(ca.jacobian(p, q) @ qdot, v)
        n, t = (ca.DM(np.asarray(a, dtype=float)) for a in frame[:2])
        phi.append(ca.dot(n, p) - off)
        Jn.append(n.T @ Jp)
        Jt.append(t.T @ Jp)
        Jo.append(ca.SX.zeros(1, n_v) if planar else ca.DM(np.asarray(frame[2], float)).T @ Jp)
    return ca.vertcat(*phi), ca.vertcat(*Jn), ca.vertcat(*Jt), ca.vertcat(*Jo)


GROUND_2D = ((0.0, 1.0), (1.0, 0.0))            # n = e_z, t = e_x (in (x, z))
_GROUND_3D = ((0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0))  # n = e_z, t = e_x, o = e_y


# --------------------------------------------------------------------------------- systems
def point_mass_2d(m: float = 1.0, mu: float = 0.5, g: float = GRAVITY) -> ContactSystem:
    """A planar point mass above the ground: ``q = (x, z)``, ``M = m I``, ``h = (0, m g)``,
    ``B = I`` (inputs: forces ``f_x, f_z``), one contact with ``phi = z``."""
    m, g = _positive("m", m), _nonnegative("g", g)
    q, v, u = ca.SX.sym("q", 2), ca.SX.sym("v", 2), ca.SX.sym("u", 2)
    V = m * g * q[1]
    M, h = lagrangian_system(q, v, 0.5 * m * ca.dot(v, v), V)
    phi, Jn, Jt, Jo = point_contacts([q], [GROUND_2D], [0.0], q, v, v, planar=True)
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=ca.SX.eye(2), phi=phi, Jn=Jn, Jt=Jt, Jo=Jo,
                         mu=mu, V=V, planar=True, q_nominal=[0.0, 0.0], name="point_mass_2d",
                         q_names=("x", "z"), v_names=("xdot", "zdot"), u_names=("f_x", "f_z"),
                         contact_names=("ground",))


def box_2d(m: float = 1.0, width: float = 1.0, height: float = 0.5, mu: float = 0.5,
           g: float = GRAVITY) -> ContactSystem:
    """A planar box: ``q = (x, z, theta)`` (center of mass, angle), ``M = diag(m, m, I)`` with
    ``I = m (width^2 + height^2) / 12``, ``h = (0, m g, 0)``, ``B = I`` (inputs: a force
    ``f_x, f_z`` at the center and a torque ``tau``). Four corner contacts with the ground, in
    the order bottom-left, bottom-right, top-right, top-left (body frame); ``phi_j`` is the corner
    height. ``q_nominal = (0, height/2, 0)`` rests on the ground."""
    m, g = _positive("m", m), _nonnegative("g", g)
    w, hh = _positive("width", width), _positive("height", height)
    inertia = m * (w**2 + hh**2) / 12.0
    q, v, u = ca.SX.sym("q", 3), ca.SX.sym("v", 3), ca.SX.sym("u", 3)
    T = 0.5 * m * (v[0] ** 2 + v[1] ** 2) + 0.5 * inertia * v[2] ** 2
    V = m * g * q[1]
    M, h = lagrangian_system(q, v, T, V)
    R = rot2(q[2])
    points = [q[:2] + R @ ca.DM(c) for c in _box_corners(w, hh)]
    phi, Jn, Jt, Jo = point_contacts(points, [GROUND_2D] * 4, [0.0] * 4, q, v, v, planar=True)
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=ca.SX.eye(3), phi=phi, Jn=Jn, Jt=Jt, Jo=Jo,
                         mu=mu, V=V, planar=True, q_nominal=[0.0, hh / 2, 0.0], name="box_2d",
                         q_names=("x", "z", "theta"), v_names=("xdot", "zdot", "thetadot"),
                         u_names=("f_x", "f_z", "tau"),
                         contact_names=("bottom_left", "bottom_right", "top_right", "top_left"))


def box_stack_2d(n: int = 3, m: float = 1.0, width: float = 0.4, height: float = 0.2, mu: float = 0.5,
                 g: float = GRAVITY) -> ContactSystem:
    """``n`` planar boxes stacked on the ground: ``q = (x_i, z_i, theta_i)`` per box (bottom first),
    ``M = diag(m, m, I)`` per box (``I = m (width^2 + height^2) / 12``), ``B = I`` (a force and a
    torque on each box). Contacts: the bottom box's four corners with the ground (as :func:`box_2d`),
    then for each box ``i >= 1`` its two bottom corners with the top face of box ``i - 1``: ``phi`` is
    the corner's height above that face (along the lower box's normal ``n = R_{i-1} e_z``, ``t =
    R_{i-1} e_x``), ``Jn = dphi/dq`` and ``Jt`` the corner's velocity relative to the lower box's
    material point under it. Each interface has two contacts for three equilibrium equations: the
    friction forces are not unique (the redundancy a stack is built to show). ``q_nominal`` rests
    the boxes centered on each other."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise InputError("n", f"must be an integer >= 1, got {n!r}")
    m, g = _positive("m", m), _nonnegative("g", g)
    w, hh = _positive("width", width), _positive("height", height)
    inertia = m * (w**2 + hh**2) / 12.0
    q, v, u = ca.SX.sym("q", 3 * n), ca.SX.sym("v", 3 * n), ca.SX.sym("u", 3 * n)
    T = sum(0.5 * m * (v[3 * i] ** 2 + v[3 * i + 1] ** 2) + 0.5 * inertia * v[3 * i + 2] ** 2 for i in range(n))
    V = sum(m * g * q[3 * i + 1] for i in range(n))
    M, h = lagrangian_system(q, v, T, V)
    R = [rot2(q[3 * i + 2]) for i in range(n)]
    c = [q[3 * i:3 * i + 2] for i in range(n)]
    corners = _box_corners(w, hh)
    points = [c[0] + R[0] @ ca.DM(k) for k in corners]
    phi, Jn, Jt, Jo = point_contacts(points, [GROUND_2D] * 4, [0.0] * 4, q, v, v, planar=True)
    phis, Jns, Jts, names = [phi], [Jn], [Jt], ["ground_bl", "ground_br", "ground_tr", "ground_tl"]
    for i in range(1, n):
        normal, tangent = R[i - 1] @ ca.DM([0.0, 1.0]), R[i - 1] @ ca.DM([1.0, 0.0])
        omega = v[3 * (i - 1) + 2]
        for side, k in (("left", corners[0]), ("right", corners[1])):
            p = c[i] + R[i] @ ca.DM(k)
            gap = ca.dot(normal, p - c[i - 1]) - hh / 2
            p_dot = ca.jacobian(p, q) @ v
            r = p - c[i - 1]  # the lower box's material point under the corner moves with v + omega x r
            under = v[3 * (i - 1):3 * (i - 1) + 2] + omega * ca.vertcat(-r[1], r[0])
            phis.append(gap)
            Jns.append(ca.jacobian(gap, q))
            Jts.append(ca.jacobian(ca.dot(tangent, p_dot - under), v))
            names.append(f"box{i}_on_box{i - 1}_{side}")
    phi, Jn, Jt = ca.vertcat(*phis), ca.vertcat(*Jns), ca.vertcat(*Jts)
    nominal = np.zeros(3 * n)
    nominal[1::3] = hh / 2 + hh * np.arange(n)
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=ca.SX.eye(3 * n), phi=phi, Jn=Jn, Jt=Jt,
                         Jo=ca.SX.zeros(phi.shape[0], 3 * n), mu=mu, V=V, planar=True, q_nominal=nominal,
                         name=f"box_stack_2d_{n}",
                         q_names=tuple(f"{a}{i}" for i in range(n) for a in ("x", "z", "theta")),
                         v_names=tuple(f"{a}dot{i}" for i in range(n) for a in ("x", "z", "theta")),
                         u_names=tuple(f"{a}{i}" for i in range(n) for a in ("f_x", "f_z", "tau")),
                         contact_names=tuple(names))


def rod_2d(m: float = 1.0, length: float = 1.0, mu: float = 0.5, inertia: float | None = None,
           g: float = GRAVITY) -> ContactSystem:
    """A planar rod touching the ground with its lower end (Painleve's rod as a time-stepping system):
    ``q = (x, z, theta)`` (center of mass; ``theta`` the angle of the rod axis from ``+x``),
    ``M = diag(m, m, I)`` with ``I = m length^2 / 12`` unless given, ``h = (0, m g, 0)``, ``B = I``.
    One contact: the end at body coordinates ``(-length/2, 0)`` (the lower end for ``0 < theta <
    pi``) with the ground, ``n = e_z``, ``t = e_x``. :func:`~contactmp.models.painleve.rod_planar_state`
    turns a :class:`~contactmp.models.painleve.RodState` into ``(q, v)`` of this system.
    ``q_nominal = (length/2, 0, 0)``: the rod lying on the ground, its end at the origin."""
    m, g = _positive("m", m), _nonnegative("g", g)
    ell = _positive("length", length)
    inertia = m * ell**2 / 12.0 if inertia is None else _positive("inertia", inertia)
    q, v, u = ca.SX.sym("q", 3), ca.SX.sym("v", 3), ca.SX.sym("u", 3)
    T = 0.5 * m * (v[0] ** 2 + v[1] ** 2) + 0.5 * inertia * v[2] ** 2
    V = m * g * q[1]
    M, h = lagrangian_system(q, v, T, V)
    end = q[:2] + rot2(q[2]) @ ca.DM([-ell / 2, 0.0])
    phi, Jn, Jt, Jo = point_contacts([end], [GROUND_2D], [0.0], q, v, v, planar=True)
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=ca.SX.eye(3), phi=phi, Jn=Jn, Jt=Jt, Jo=Jo,
                         mu=mu, V=V, planar=True, q_nominal=[ell / 2, 0.0, 0.0], name="rod_2d",
                         q_names=("x", "z", "theta"), v_names=("xdot", "zdot", "thetadot"),
                         u_names=("f_x", "f_z", "tau"), contact_names=("end",))


def hopper_2d(m_body: float = 10.0, I_body: float = 0.4, m_leg: float = 1.0,
              I_leg: float = 0.05, foot_to_com: float = 0.25, l_nominal: float = 1.0,
              mu: float = 0.8, g: float = GRAVITY) -> ContactSystem:
    """A planar one-legged hopper.

    ``q = (x, z, theta, alpha, l)``: body center of mass ``(x, z)`` and angle ``theta``; the hip
    (at the body's center of mass) carries a revolute joint ``alpha`` (leg angle relative to the
    body; absolute leg angle ``beta = theta + alpha`` from the downward vertical) and a prismatic
    joint ``l`` (hip-to-foot length). The foot is at ``(x + l sin beta, z - l cos beta)``. The leg
    (mass ``m_leg``, inertia ``I_leg`` about its own center of mass) has its center of mass on the
    leg axis at ``foot_to_com`` above the foot, i.e. at distance ``l - foot_to_com`` from the hip.
    Inputs ``u = (f_leg, tau_hip)``: the leg force along ``l`` (positive extends) and the hip torque
    on the leg (minus on the body), so ``B = [e_l, e_alpha]``. One foot contact with the ground.
    ``q_nominal = (0, l_nominal, 0, 0, l_nominal)`` stands upright with the foot on the ground.
    """
    mb, Ib = _positive("m_body", m_body), _positive("I_body", I_body)
    ml, Il = _positive("m_leg", m_leg), _positive("I_leg", I_leg)
    c = _nonnegative("foot_to_com", foot_to_com)
    l0, g = _positive("l_nominal", l_nominal), _nonnegative("g", g)
    q, v, u = ca.SX.sym("q", 5), ca.SX.sym("v", 5), ca.SX.sym("u", 2)
    x, z, theta, alpha, l = (q[i] for i in range(5))
    beta = theta + alpha
    axis = ca.vertcat(ca.sin(beta), -ca.cos(beta))       # hip -> foot unit vector in (x, z)
    hip = ca.vertcat(x, z)
    leg_com = hip + (l - c) * axis
    foot = hip + l * axis
    v_leg = ca.jacobian(leg_com, q) @ v
    T = (0.5 * mb * (v[0] ** 2 + v[1] ** 2) + 0.5 * Ib * v[2] ** 2
         + 0.5 * ml * ca.dot(v_leg, v_leg) + 0.5 * Il * (v[2] + v[3]) ** 2)
    V = g * (mb * z + ml * leg_com[1])
    M, h = lagrangian_system(q, v, T, V)
    B = ca.SX.zeros(5, 2)
    B[4, 0] = 1.0
    B[3, 1] = 1.0
    phi, Jn, Jt, Jo = point_contacts([foot], [GROUND_2D], [0.0], q, v, v, planar=True)
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=B, phi=phi, Jn=Jn, Jt=Jt, Jo=Jo, mu=mu, V=V,
                         planar=True, q_nominal=[0.0, l0, 0.0, 0.0, l0], name="hopper_2d",
                         q_names=("x", "z", "theta", "alpha", "l"),
                         v_names=("xdot", "zdot", "thetadot", "alphadot", "ldot"),
                         u_names=("f_leg", "tau_hip"), contact_names=("foot",))


def cart_pole_walls(m_cart: float = 1.0, m_pole: float = 0.1, length: float = 1.0,
                    d: float = 0.5, mu: float = 0.3, g: float = GRAVITY) -> ContactSystem:
    """A cart-pole whose pole tip can touch two walls at ``x = +d`` and ``x = -d``.

    ``q = (x, theta)``: cart position on a horizontal rail at ``z = 0`` and pole angle from the
    upright (positive tips toward ``+x``); the pole is massless with a point mass ``m_pole`` at its
    tip ``(x + length sin theta, length cos theta)``. Input ``u = (f,)``: a horizontal force on the
    cart. Contacts ``(right, left)`` between the tip and the walls have horizontal normals pointing
    away from the wall into the free space: right ``n = -e_x, t = e_z``, ``phi = d - x_tip``;
    left ``n = e_x, t = -e_z``, ``phi = x_tip + d`` (``n x t = e_y`` for both). ``q_nominal = 0``.
    """
    mc, mp = _positive("m_cart", m_cart), _positive("m_pole", m_pole)
    L, dd, g = _positive("length", length), _positive("d", d), _nonnegative("g", g)
    q, v, u = ca.SX.sym("q", 2), ca.SX.sym("v", 2), ca.SX.sym("u", 1)
    tip = ca.vertcat(q[0] + L * ca.sin(q[1]), L * ca.cos(q[1]))
    v_tip = ca.jacobian(tip, q) @ v
    T = 0.5 * mc * v[0] ** 2 + 0.5 * mp * ca.dot(v_tip, v_tip)
    V = mp * g * tip[1]
    M, h = lagrangian_system(q, v, T, V)
    B = ca.SX(ca.DM([[1.0], [0.0]]))
    frames = [((-1.0, 0.0), (0.0, 1.0)), ((1.0, 0.0), (0.0, -1.0))]
    phi, Jn, Jt, Jo = point_contacts([tip, tip], frames, [-dd, -dd], q, v, v, planar=True)
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=B, phi=phi, Jn=Jn, Jt=Jt, Jo=Jo, mu=mu, V=V,
                         planar=True, q_nominal=[0.0, 0.0], name="cart_pole_walls",
                         q_names=("x", "theta"), v_names=("xdot", "thetadot"), u_names=("f",),
                         contact_names=("right_wall", "left_wall"))


def quaternion_to_rotation(quat: ca.SX) -> ca.SX:
    """Rotation matrix of the quaternion ``(w, x, y, z)`` divided by its squared norm, so that it
    is a rotation for any nonzero quaternion (and the usual formula for a unit one)."""
    w, x, y, z = (quat[i] for i in range(4))
    s = 2.0 / (w * w + x * x + y * y + z * z)
    return ca.vertcat(
        ca.horzcat(1 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)),
        ca.horzcat(s * (x * y + z * w), 1 - s * (x * x + z * z), s * (y * z - x * w)),
        ca.horzcat(s * (x * z - y * w), s * (y * z + x * w), 1 - s * (x * x + y * y)),
    )


def _box_edges(size: float | ArrayLike, m: float) -> tuple[float, float, float, np.ndarray]:
    """Edge lengths ``(a, b, c)`` of a 3D box (one number: a cube) and its central principal inertia
    ``m/12 (b^2+c^2, a^2+c^2, a^2+b^2)``; InputError naming ``size`` unless three finite lengths > 0."""
    sz = np.asarray(size, dtype=float)
    if sz.ndim == 0:
        sz = np.full(3, float(sz))
    if sz.shape != (3,) or not np.all(np.isfinite(sz)) or np.any(sz <= 0):
        raise InputError("size", f"expected one or three finite edge lengths > 0, got {size!r}")
    a, b, c = (float(x) for x in sz)
    return a, b, c, m / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])


#: the signs of a 3D box's 8 corners (x slowest) and their contact names
_CORNER_SIGNS = [(sx, sy, sz) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
_CORNER_NAMES = tuple("corner_" + "".join("+" if s > 0 else "-" for s in sg) for sg in _CORNER_SIGNS)


def _box_corner_points(pos: ca.SX, R: ca.SX, a: float, b: float, c: float) -> list[ca.SX]:
    """World positions ``pos + R (+-a/2, +-b/2, +-c/2)`` of the 8 corners, in :data:`_CORNER_SIGNS` order."""
    return [pos + R @ ca.DM([sx * a / 2, sy * b / 2, sz * c / 2]) for sx, sy, sz in _CORNER_SIGNS]


def box_3d(m: float = 1.0, size: float | ArrayLike = 0.5, mu: float = 0.5,
           g: float = GRAVITY) -> ContactSystem:
    """A 3D box (edge lengths ``size = (a, b, c)`` along its body axes, or one number for a cube)
    with 8 corner contacts against the ground ``z = 0``.

    ``q = (x, y, z, qw, qx, qy, qz)``: center of mass and a unit quaternion (body -> world);
    ``v = (vx, vy, vz, wx, wy, wz)``: world velocity of the center and the angular velocity in the
    *body* frame. ``qdot = (v_lin, 1/2 quat (x) (0, omega))`` (quaternion product), which keeps
    ``|quat|`` constant. ``M = diag(m I_3, I_body)``, ``I_body = m/12 diag(b^2+c^2, a^2+c^2,
    a^2+b^2)``; ``h = (0, 0, m g, omega x I_body omega)`` (Newton-Euler). ``B = I_6``: inputs
    ``(f_x, f_y, f_z)`` a world force at the center and ``(tau_x, tau_y, tau_z)`` a body-frame
    torque. Corners ``(+-a/2, +-b/2, +-c/2)`` in the order of ``itertools.product((-1, 1), repeat=3)``
    over the signs (x slowest); ground frame ``n = e_z, t = e_x, o = e_y``.
    ``q_nominal = (0, 0, c/2, 1, 0, 0, 0)`` rests on the ground.
    """
    m, g = _positive("m", m), _nonnegative("g", g)
    a, b, c, Ib = _box_edges(size, m)
    q, v, u = ca.SX.sym("q", 7), ca.SX.sym("v", 7 - 1), ca.SX.sym("u", 6)
    pos, quat, vlin, om = q[:3], q[3:], v[:3], v[3:]
    qw, qv = quat[0], quat[1:]
    quat_dot = 0.5 * ca.vertcat(-ca.dot(qv, om), qw * om + ca.cross(qv, om))
    qdot = ca.vertcat(vlin, quat_dot)
    M = ca.SX(ca.DM(np.diag(np.concatenate([np.full(3, m), Ib]))))
    Iom = ca.DM(Ib) * om
    h = ca.vertcat(0.0, 0.0, m * g, ca.cross(om, Iom))
    V = m * g * pos[2]
    R = quaternion_to_rotation(quat)
    phi, Jn, Jt, Jo = point_contacts(_box_corner_points(pos, R, a, b, c), [_GROUND_3D] * 8, [0.0] * 8, q, v, qdot,
                                      planar=False)
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=ca.SX.eye(6), phi=phi, Jn=Jn, Jt=Jt, Jo=Jo,
                         mu=mu, qdot=qdot, V=V, planar=False,
                         q_nominal=[0.0, 0.0, c / 2, 1.0, 0.0, 0.0, 0.0], name="box_3d",
                         q_names=("x", "y", "z", "qw", "qx", "qy", "qz"),
                         v_names=("vx", "vy", "vz", "wx", "wy", "wz"),
                         u_names=("f_x", "f_y", "f_z", "tau_x", "tau_y", "tau_z"),
                         contact_names=_CORNER_NAMES)


def _tilted_gravity(m: float, g: float, slope: float, pos: ca.SX) -> ca.SX:
    """Potential ``m g (cos(slope) z - sin(slope) x)`` of a body on a plane inclined by ``slope`` about
    the y axis, drawn with the plane horizontal and gravity tilted toward ``+x`` (downhill = ``+x``)."""
    return m * g * (np.cos(slope) * pos[2] - np.sin(slope) * pos[0])


def _slope(slope: float) -> float:
    sl = check_number("slope", slope)
    if not -np.pi / 2 < sl < np.pi / 2:
        raise InputError("slope", f"must lie in (-pi/2, pi/2) rad, got {slope!r}")
    return sl


def ball_3d(m: float = 1.0, radius: float = 0.1, mu: float = 0.5, g: float = GRAVITY,
            slope: float = 0.0) -> ContactSystem:
    """A solid ball (uniform sphere) on a plane, in minimal coordinates with ``qdot = v``.

    ``v = (vx, vy, vz, wx, wy, wz)``: the center's velocity and the *world* angular velocity;
    ``q = (x, y, z, rx, ry, rz)``: the center and the integral of the world angular velocity. A
    uniform sphere's inertia ``I = 2/5 m r^2`` is the same about every axis and its contact point is
    always the lowest point, so neither the dynamics (``M = diag(m I_3, I I_3)``, no gyroscopic
    term) nor the contact depend on the orientation: ``(rx, ry, rz)`` only record how far it turned
    (exact, not an approximation). ``V = m g (cos(slope) z - sin(slope) x)``: the plane ``z = 0``
    inclined by ``slope`` (downhill ``+x``; see :func:`_tilted_gravity`). One contact at the lowest
    point: ``phi = z - r``, contact velocity ``v + w x (-r e_z)``, frame ``n = e_z, t = e_x, o = e_y``.
    ``B = I_6`` (a force and a torque at the center). Closed forms (``slope = 0``, slip speed
    ``v0`` and no spin at ``t = 0``): the slip ``s(t) = v0 - 7/2 mu g t`` vanishes at
    ``t* = 2 v0 / (7 mu g)``, then the ball rolls at ``5/7 v0``; on the incline it rolls without
    slipping iff ``tan(slope) <= 7/2 mu``. ``q_nominal = (0, 0, r, 0, 0, 0)``."""
    m, g = _positive("m", m), _nonnegative("g", g)
    r = _positive("radius", radius)
    sl = _slope(slope)
    inertia = 0.4 * m * r * r
    q, v, u = ca.SX.sym("q", 6), ca.SX.sym("v", 6), ca.SX.sym("u", 6)
    T = 0.5 * m * ca.dot(v[:3], v[:3]) + 0.5 * inertia * ca.dot(v[3:], v[3:])
    V = _tilted_gravity(m, g, sl, q[:3])
    M, h = lagrangian_system(q, v, T, V)
    u_contact = v[:3] + ca.cross(v[3:], ca.DM([0.0, 0.0, -r]))
    Jrows = [ca.jacobian(u_contact[i], v) for i in range(3)]
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=ca.SX.eye(6), phi=q[2] - r, Jn=Jrows[2], Jt=Jrows[0],
                         Jo=Jrows[1], mu=mu, V=V, planar=False, q_nominal=[0.0, 0.0, r, 0.0, 0.0, 0.0],
                         name="ball_3d", q_names=("x", "y", "z", "rx", "ry", "rz"),
                         v_names=("vx", "vy", "vz", "wx", "wy", "wz"),
                         u_names=("f_x", "f_y", "f_z", "tau_x", "tau_y", "tau_z"), contact_names=("ground",))


def euler_zyx_rotation(angles: ca.SX) -> ca.SX:
    """``R = Rz(yaw) Ry(pitch) Rx(roll)`` of ``angles = (roll, pitch, yaw)`` (body -> world)."""
    from contactmp.models.legged import rot_x, rot_y, rot_z

    return rot_z(angles[2]) @ rot_y(angles[1]) @ rot_x(angles[0])


def cube_3d(m: float = 1.0, size: float | ArrayLike = 0.2, mu: float = 0.5, g: float = GRAVITY,
            slope: float = 0.0) -> ContactSystem:
    """A 3-D box in minimal coordinates (``qdot = v``, so every formulation steps it, the
    maximal-dissipation ones included; :func:`box_3d` is the same body with a quaternion).

    ``q = (x, y, z, roll, pitch, yaw)``: center of mass and ZYX Euler angles
    (:func:`euler_zyx_rotation`; singular at ``pitch = +-pi/2``, far from the resting and sliding
    poses this model is for), ``v = qdot``. ``T = 1/2 m |v_lin|^2 + 1/2 w_b^T I_b w_b`` with the body
    angular velocity ``w_b = vee(R^T Rdot)`` and ``I_b = m/12 diag(b^2+c^2, a^2+c^2, a^2+b^2)``;
    ``M`` and ``h`` from the Lagrangian (Coriolis terms included).
    ``V = m g (cos(slope) z - sin(slope) x)`` (the plane inclined by ``slope``, downhill ``+x``).
    ``B = I_6`` (a force at the center and generalized torques on the Euler angles). Contacts: the
    8 corners ``(+-a/2, +-b/2, +-c/2)`` against ``z = 0`` in the order of :func:`box_3d`, frame
    ``n = e_z, t = e_x, o = e_y``. ``q_nominal = (0, 0, c/2, 0, 0, 0)`` rests on the plane."""
    m, g = _positive("m", m), _nonnegative("g", g)
    sl = _slope(slope)
    a, b, c, inertia = _box_edges(size, m)
    Ib = ca.DM(inertia)
    q, v, u = ca.SX.sym("q", 6), ca.SX.sym("v", 6), ca.SX.sym("u", 6)
    R = euler_zyx_rotation(q[3:])
    Rdot = ca.reshape(ca.jacobian(ca.vec(R), q) @ v, 3, 3)
    S = R.T @ Rdot
    w_b = ca.vertcat(S[2, 1], S[0, 2], S[1, 0])
    T = 0.5 * m * ca.dot(v[:3], v[:3]) + 0.5 * ca.dot(w_b, Ib * w_b)
    V = _tilted_gravity(m, g, sl, q[:3])
    M, h = lagrangian_system(q, v, T, V)
    phi, Jn, Jt, Jo = point_contacts(_box_corner_points(q[:3], R, a, b, c), [_GROUND_3D] * 8, [0.0] * 8, q, v, v,
                                      planar=False)
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=ca.SX.eye(6), phi=phi, Jn=Jn, Jt=Jt, Jo=Jo, mu=mu, V=V,
                         planar=False, q_nominal=[0.0, 0.0, c / 2, 0.0, 0.0, 0.0], name="cube_3d",
                         q_names=("x", "y", "z", "roll", "pitch", "yaw"),
                         v_names=("vx", "vy", "vz", "rolldot", "pitchdot", "yawdot"),
                         u_names=("f_x", "f_y", "f_z", "tau_roll", "tau_pitch", "tau_yaw"), contact_names=_CORNER_NAMES)


def ensemble(systems: Sequence[ContactSystem], name: str = "ensemble") -> ContactSystem:
    """The systems ``systems[0], systems[1], ...`` side by side as one system that never couples them
    (many environments of a learning loop, separate objects on one floor): ``q``, ``v``, ``u``,
    ``h``, ``phi``, ``qdot`` and ``mu`` stacked, ``M``, ``B``, ``Jn``, ``Jt``, ``Jo`` block
    diagonal, ``V`` the sum. Every contact of member ``k`` touches only member ``k``'s coordinates,
    so each member's contacts form their own independent contact island(s) in every step.
    Names get the prefix ``k/``; ``planar`` when every member is planar."""
    if isinstance(systems, ContactSystem) or not len(systems):
        raise InputError("systems", "must be a non-empty sequence of ContactSystem")
    for k, s in enumerate(systems):
        if not isinstance(s, ContactSystem):
            raise InputError(f"systems[{k}]", f"must be a ContactSystem, got {type(s).__name__}")
    qs = [ca.SX.sym(f"q{k}", s.n_q) for k, s in enumerate(systems)]
    vs = [ca.SX.sym(f"v{k}", s.n_v) for k, s in enumerate(systems)]
    us = [ca.SX.sym(f"u{k}", s.n_u) for k, s in enumerate(systems)]

    def member(k: int, expr: ca.SX) -> ca.SX:
        s = systems[k]
        return ca.substitute([expr], [s.q, s.v, s.u], [qs[k], vs[k], us[k]])[0]

    def stacked(attr: str) -> ca.SX:
        return ca.vertcat(*[member(k, getattr(s, attr)) for k, s in enumerate(systems)])

    def diagonal(attr: str) -> ca.SX:
        return ca.diagcat(*[member(k, getattr(s, attr)) for k, s in enumerate(systems)])

    def names(attr: str, n: int) -> list[str]:
        return [f"{k}/{nm}" for k, s in enumerate(systems) for nm in (getattr(s, attr) or range(getattr(s, n)))]

    V = [member(k, s.V) for k, s in enumerate(systems) if s.V is not None]
    return ContactSystem(
        q=ca.vertcat(*qs), v=ca.vertcat(*vs), u=ca.vertcat(*us), M=diagonal("M"), h=stacked("h"), B=diagonal("B"),
        phi=stacked("phi"), Jn=diagonal("Jn"), Jt=diagonal("Jt"), Jo=diagonal("Jo"),
        mu=np.concatenate([np.broadcast_to(np.asarray(s.mu, dtype=float), (s.n_c,)) for s in systems]),
        qdot=stacked("qdot"), V=sum(V[1:], V[0]) if len(V) == len(systems) else None,
        planar=all(s.planar for s in systems),
        q_nominal=np.concatenate([np.asarray(s.q_nominal, dtype=float) for s in systems]), name=name,
        q_names=names("q_names", "n_q"), v_names=names("v_names", "n_v"), u_names=names("u_names", "n_u"),
        contact_names=names("contact_names", "n_c"))
