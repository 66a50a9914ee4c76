"""Manipulation systems: an actuated point finger and an unactuated object, every contact a
unilateral frictional contact of one :class:`~contactmp.models.symbolic.ContactSystem`.

Conventions are those of :mod:`contactmp.models.systems` (planar systems in the world x-z plane, z up,
gravity ``-g e_z``; a body point with body coordinates ``r`` sits at ``p + R(theta) r``). A contact
between two *moving* bodies A (the finger) and B (the box) is written like a ground contact with
B in the ground's place: ``phi(q) >= 0`` is the gap, the frame ``(n, t, o)`` is B's (``n`` the
outward normal of B's face, pointing at A), and the Jacobian rows map ``v`` to the velocity of A's
contact point *relative to* the material point of B at the same place,

    Jn = n^T (J_A - J_B),    Jt = t^T (J_A - J_B),    J_B = d (p_B + R(theta_B) r_B) / dq,

with ``r_B = R(theta_B)^T (p_A - p_B)`` held fixed while differentiating (the material point of B
under A). Then ``Jn v = d phi / dt`` and ``Jn^T lambda_n`` applies ``+lambda_n n`` to the finger and
``-lambda_n n`` to the box at the contact point (with its moment), as the Newton-Euler equations
ask (Stewart and Trinkle 1996; Posa, Cantu and Tedrake 2014, section II).
"""
from __future__ import annotations

from typing import Any

import casadi as ca
import numpy as np

from contactmp.errors import InputError, check_number
from contactmp.models.rigid_bodies import GRAVITY
from contactmp.models.symbolic import ContactSystem
from contactmp.models.systems import GROUND_2D, lagrangian_system, point_contacts, rot2

__all__ = ["planar_pusher", "two_finger_grasp", "face_contact_2d", "finger_in_box_frame"]


def face_contact_2d(q: ca.SX, v: ca.SX, finger: ca.SX, center: ca.SX, theta: ca.SX,
                    normal_body: tuple[float, float], offset: float) -> tuple[ca.SX, ca.SX, ca.SX, ca.SX]:
    """Gap and Jacobian rows ``(phi, Jn, Jt, Jo)`` of a point ``finger(q)`` against the flat face
    ``{r : n_B . r = offset}`` (body coordinates ``r``) of a planar body at ``center(q)``, angle
    ``theta(q)``; ``qdot = v``.

    ``n = R(theta) n_B`` is the face's outward unit normal (``normal_body`` is normalized here),
    ``t = (n_z, -n_x)`` in ``(x, z)`` coordinates, so that ``n x t = o = e_y`` with ``(x, z)``
    embedded as ``(x, 0, z)`` (the ground's ``n = e_z`` gets ``t = e_x``), and ``phi = n . (finger - center) - offset`` is the signed
    distance of the finger from the face's *plane* (so the model holds while the finger stays
    within the face's extent; the caller bounds it there). Rows as in the module docstring; ``Jo``
    is zero (planar)."""
    nb = np.asarray(normal_body, dtype=float)
    if nb.shape != (2,) or not np.all(np.isfinite(nb)) or np.linalg.norm(nb) == 0.0:
        raise InputError("normal_body", f"must be a finite nonzero 2-vector, got {normal_body!r}")
    nb = nb / np.linalg.norm(nb)
    R = rot2(theta)
    n = R @ ca.DM(nb)
    t = ca.vertcat(n[1], -n[0])  # n x t = e_y with (x, z) embedded as (x, 0, z)
    rel = finger - center
    phi = ca.dot(n, rel) - float(offset)
    r_b = ca.SX.sym("r_b", 2)  # body coordinates of B's material point under the finger, frozen
    J_box = ca.jacobian(center + R @ r_b, q)
    J_rel = ca.jacobian(finger, q) - ca.substitute(J_box, r_b, R.T @ rel)  # d/dq of positions; qdot = v
    return phi, (n.T @ J_rel), (t.T @ J_rel), ca.SX.zeros(1, v.size1())


def pushed_box_contacts(q: ca.SX, v: ca.SX, center: ca.SX, theta: ca.SX, width: float, height: float,
                        tip: ca.SX) -> tuple[ca.SX, ca.SX, ca.SX, ca.SX]:
    """``(phi, Jn, Jt, Jo)`` of a planar box (center ``center``, angle ``theta``, ``width`` x
    ``height``) on the ground ``z = 0`` pushed at its left face by the point ``tip`` (``qdot = v``):
    its two bottom corners against the ground, then the tip against the face
    (:func:`face_contact_2d`)."""
    R = rot2(theta)
    corners = [center + R @ ca.DM([-width / 2, -height / 2]), center + R @ ca.DM([width / 2, -height / 2])]
    phi_g, Jn_g, Jt_g, Jo_g = point_contacts(corners, [GROUND_2D] * 2, [0.0, 0.0], q, v, v, planar=True)
    phi_f, Jn_f, Jt_f, Jo_f = face_contact_2d(q, v, tip, center, theta, (-1.0, 0.0), width / 2)
    return (ca.vertcat(phi_g, phi_f), ca.vertcat(Jn_g, Jn_f), ca.vertcat(Jt_g, Jt_f), ca.vertcat(Jo_g, Jo_f))


def last_two_actuated() -> ca.SX:
    """``B`` (5 x 2) of a box-and-pusher system: the inputs act on ``q[3]`` and ``q[4]``."""
    B = ca.SX.zeros(5, 2)
    B[3, 0] = 1.0
    B[4, 1] = 1.0
    return B


def planar_pusher(m_box: float = 1.0, width: float = 0.2, height: float = 0.2, mu_ground: float = 0.3,
                  m_finger: float = 0.1, mu_finger: float = 0.5, g: float = GRAVITY) -> ContactSystem:
    """A planar box pushed along the ground by an actuated point finger (x-z plane).

    ``q = (x, z, theta, x_f, z_f)``: the box's center of mass and angle, the finger's position.
    ``M = diag(m_box, m_box, I, m_finger, m_finger)`` with ``I = m_box (width^2 + height^2) / 12``;
    ``h = (0, m_box g, 0, 0, 0)``: the finger is gravity compensated (a robot fingertip whose
    controller cancels its weight, so it floats and never needs a ground contact);
    ``B = [0; I_2]``: the inputs ``u = (f_x, f_z)`` are forces on the finger, the box is unactuated.

    Contacts, in this order:

    * ``bottom_left``, ``bottom_right``: the box's bottom corners on the ground,
      ``phi = z`` of the corner, ``n = e_z``, ``t = e_x``, friction ``mu_ground``;
    * ``finger``: the finger on the box's *left* face (body coordinates ``r_x = -width/2``),
      ``n = R(theta) (-1, 0)`` (the face's outward normal, ``-e_x`` when level),
      ``t = R(theta) (0, 1)`` (``n x t = e_y``), ``phi = n . (p_f - p_box) - width/2``, friction
      ``mu_finger``; a positive normal impulse pushes the box along ``-n`` (``+e_x`` when level).
      ``phi`` is the distance to the face's plane: the finger must stay within the face
      (``|r_z| <= height/2`` in body coordinates), which a task imposes with bounds on ``z_f``.

    ``q_nominal = (0, height/2, 0, -width/2 - 0.1, height/2)``: the box resting on the ground and
    the finger 0.1 m left of it at the face's mid-height.
    """
    mb, mf = check_number("m_box", m_box, positive=True), check_number("m_finger", m_finger, positive=True)
    w, hh = check_number("width", width, positive=True), check_number("height", height, positive=True)
    mug = check_number("mu_ground", mu_ground, nonnegative=True)
    muf = check_number("mu_finger", mu_finger, nonnegative=True)
    g = check_number("g", g, nonnegative=True)
    inertia = mb * (w ** 2 + hh ** 2) / 12.0
    q, v, u = ca.SX.sym("q", 5), ca.SX.sym("v", 5), ca.SX.sym("u", 2)
    center, theta, finger = q[0:2], q[2], q[3:5]
    T = 0.5 * mb * (v[0] ** 2 + v[1] ** 2) + 0.5 * inertia * v[2] ** 2 + 0.5 * mf * (v[3] ** 2 + v[4] ** 2)
    V = mb * g * q[1]  # the finger's weight is compensated
    M, h = lagrangian_system(q, v, T, V)
    phi, Jn, Jt, Jo = pushed_box_contacts(q, v, center, theta, w, hh, finger)
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=last_two_actuated(), phi=phi, Jn=Jn, Jt=Jt, Jo=Jo,
                         mu=[mug, mug, muf], V=V, planar=True,
                         q_nominal=[0.0, hh / 2, 0.0, -w / 2 - 0.1, hh / 2], name="planar_pusher",
                         q_names=("x", "z", "theta", "x_f", "z_f"),
                         v_names=("xdot", "zdot", "thetadot", "xdot_f", "zdot_f"),
                         u_names=("f_x", "f_z"), contact_names=("bottom_left", "bottom_right", "finger"))


def two_finger_grasp(m_box: float = 0.5, width: float = 0.1, height: float = 0.1, mu: float = 0.5,
                     m_finger: float = 0.1, g: float = GRAVITY) -> ContactSystem:
    """A planar box held between two actuated point fingers that squeeze it horizontally (no ground).

    ``q = (x, z, theta, x_l, x_r)``: the box's center of mass and angle, the left and right fingers'
    horizontal positions; the fingertips move on the line ``z = 0`` (a prismatic joint each, gravity
    compensated). ``M = diag(m_box, m_box, I, m_finger, m_finger)``, ``I = m_box (width^2 +
    height^2) / 12``, ``h = (0, m_box g, 0, 0, 0)``, ``B = [0; I_2]`` (``u = (f_l, f_r)``, horizontal
    forces on the fingers). Contacts (:func:`face_contact_2d`): ``left`` the left finger on the box's
    left face, ``right`` the right finger on its right face, friction ``mu``. Squeezing with
    ``u = (F, -F)`` holds the box iff ``2 mu F >= m_box g`` (each face carries ``m_box g / 2``);
    held rigidly, the box does not slip at all. ``q_nominal = (0, 0, 0, -width/2, width/2)``: the
    fingers touch the faces at the box's mid-height."""
    mb, mf = check_number("m_box", m_box, positive=True), check_number("m_finger", m_finger, positive=True)
    w, hh = check_number("width", width, positive=True), check_number("height", height, positive=True)
    mu_ = check_number("mu", mu, nonnegative=True)
    g = check_number("g", g, nonnegative=True)
    inertia = mb * (w ** 2 + hh ** 2) / 12.0
    q, v, u = ca.SX.sym("q", 5), ca.SX.sym("v", 5), ca.SX.sym("u", 2)
    center, theta = q[0:2], q[2]
    T = 0.5 * mb * (v[0] ** 2 + v[1] ** 2) + 0.5 * inertia * v[2] ** 2 + 0.5 * mf * (v[3] ** 2 + v[4] ** 2)
    M, h = lagrangian_system(q, v, T, mb * g * q[1])
    rows = [face_contact_2d(q, v, ca.vertcat(q[3 + k], 0.0), center, theta, (sign, 0.0), w / 2)
            for k, sign in enumerate((-1.0, 1.0))]
    B = ca.SX.zeros(5, 2)
    B[3, 0] = 1.0
    B[4, 1] = 1.0
    phi, Jn, Jt, Jo = (ca.vertcat(*(r[i] for r in rows)) for i in range(4))
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=B, phi=phi, Jn=Jn, Jt=Jt, Jo=Jo, mu=mu_, V=mb * g * q[1],
                         planar=True, q_nominal=[0.0, 0.0, 0.0, -w / 2, w / 2], name="two_finger_grasp",
                         q_names=("x", "z", "theta", "x_l", "x_r"),
                         v_names=("xdot", "zdot", "thetadot", "xdot_l", "xdot_r"),
                         u_names=("f_l", "f_r"), contact_names=("left", "right"))


def finger_in_box_frame(q: Any) -> Any:
    """Body coordinates ``r = R(theta)^T (p_f - p_box)`` of the finger of :func:`planar_pusher`
    (``q = (x, z, theta, x_f, z_f)``), as ``(r_x, r_z)``: a CasADi column for a CasADi ``q``, else a
    numpy array (``q`` of shape ``(5,)`` or ``(K, 5)`` for ``K`` configurations, giving ``(K, 2)``).

    The finger contact of :func:`planar_pusher` is the face's *plane*; it models the face while
    ``|r_z| <= height / 2`` (a task keeps it there), and the finger touches the face when
    ``r_x = -width / 2``."""
    if isinstance(q, (ca.SX, ca.MX, ca.DM)):
        if q.numel() != 5:
            raise InputError("q", f"expected 5 entries (x, z, theta, x_f, z_f), got {q.numel()}")
        c, s = ca.cos(q[2]), ca.sin(q[2])
        dx, dz = q[3] - q[0], q[4] - q[1]
        return ca.vertcat(c * dx + s * dz, -s * dx + c * dz)
    a = np.asarray(q, dtype=float)
    if a.shape[-1:] != (5,) or a.ndim > 2 or not np.all(np.isfinite(a)):
        raise InputError("q", f"expected finite shape (5,) or (K, 5), got {a.shape}")
    c, s = np.cos(a[..., 2]), np.sin(a[..., 2])
    dx, dz = a[..., 3] - a[..., 0], a[..., 4] - a[..., 1]
    return np.stack([c * dx + s * dz, -s * dx + c * dz], axis=-1)
