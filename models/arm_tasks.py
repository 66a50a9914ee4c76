"""Articulated manipulation systems: a planar two-link arm whose fingertip pushes or pivots a box on
the ground, every contact a unilateral frictional contact of one
:class:`~contactmp.models.symbolic.ContactSystem`.

Conventions are those of :mod:`contactmp.models.manipulation` (planar systems in the world x-z
plane, z up, gravity ``-g e_z``; the fingertip-box contact is written like a ground contact with
the box in the ground's place, :func:`~contactmp.models.manipulation.face_contact_2d`).
"""
from __future__ import annotations

import casadi as ca
import numpy as np

from contactmp.errors import InputError, check_number
from contactmp.models.manipulation import last_two_actuated, face_contact_2d, pushed_box_contacts
from contactmp.models.rigid_bodies import GRAVITY
from contactmp.models.symbolic import ContactSystem
from contactmp.models.systems import lagrangian_system

__all__ = ["two_link_arm_box", "arm_fingertip", "two_finger_rotation"]


def arm_fingertip(q: ca.SX | np.ndarray, base: tuple[float, float], l1: float, l2: float) -> ca.SX | np.ndarray:
    """The fingertip ``base + l1 (cos a1, sin a1) + l2 (cos(a1 + a2), sin(a1 + a2))`` of the arm of
    :func:`two_link_arm_box` (``a1 = q[3]``: shoulder angle from ``+e_x``; ``a2 = q[4]``: elbow angle
    relative to the upper link), in ``(x, z)``: a CasADi column for a CasADi ``q``, else numpy
    (``q`` of shape ``(5,)`` or ``(K, 5)``)."""
    if isinstance(q, (ca.SX, ca.MX, ca.DM)):
        a1, a12 = q[3], q[3] + q[4]
        return ca.vertcat(base[0] + l1 * ca.cos(a1) + l2 * ca.cos(a12), base[1] + l1 * ca.sin(a1) + l2 * ca.sin(a12))
    a = np.asarray(q, dtype=float)
    if a.shape[-1:] != (5,) or a.ndim > 2:
        raise InputError("q", f"expected shape (5,) or (K, 5), got {a.shape}")
    a1, a12 = a[..., 3], a[..., 3] + a[..., 4]
    return np.stack([base[0] + l1 * np.cos(a1) + l2 * np.cos(a12), base[1] + l1 * np.sin(a1) + l2 * np.sin(a12)],
                    axis=-1)


def two_link_arm_box(m_box: float = 1.0, width: float = 0.2, height: float = 0.2, mu_ground: float = 0.3,
                     mu_finger: float = 0.5, link_mass: float = 0.5, l1: float = 0.5, l2: float = 0.5,
                     base: tuple[float, float] = (-0.65, 0.5), g: float = GRAVITY) -> ContactSystem:
    """A planar two-link arm (revolute shoulder fixed at ``base``, revolute elbow, joint torques) and a
    box on the ground that its fingertip touches on the box's left face.

    ``q = (x, z, theta, a1, a2)``: the box's center of mass and angle; the shoulder angle ``a1``
    (from ``+e_x``) and the elbow angle ``a2`` (relative). Each link is a uniform rod (mass
    ``link_mass``, lengths ``l1``, ``l2``, inertia ``m l^2 / 12`` about its center); the arm feels
    gravity (its torques hold it up), ``M(q)`` and ``h(q, v)`` come from the Lagrangian. ``B = [0;
    I_2]``: the inputs are the shoulder and elbow torques ``u = (tau_1, tau_2)``; the box is
    unactuated.

    Contacts, in this order: ``bottom_left``, ``bottom_right`` (the box's bottom corners on the
    ground, ``mu_ground``) and ``finger`` (the fingertip on the box's left face, ``mu_finger``; the
    face's *plane*, valid while the fingertip stays within the face, ``|r_z| <= height / 2`` in the
    box's frame: a task bounds it). Only the fingertip touches the box (the links are not collision
    geometry).

    ``q_nominal``: the box resting at the origin, the arm at ``a1 = -0.5, a2 = 1.0``.
    """
    mb = check_number("m_box", m_box, positive=True)
    ml = check_number("link_mass", link_mass, positive=True)
    w, hh = check_number("width", width, positive=True), check_number("height", height, positive=True)
    l1_, l2_ = check_number("l1", l1, positive=True), check_number("l2", l2, positive=True)
    mug = check_number("mu_ground", mu_ground, nonnegative=True)
    muf = check_number("mu_finger", mu_finger, nonnegative=True)
    g = check_number("g", g, nonnegative=True)
    b = np.asarray(base, dtype=float)
    if b.shape != (2,) or not np.all(np.isfinite(b)):
        raise InputError("base", f"must be a finite (x, z) pair, got {base!r}")
    base_ = (float(b[0]), float(b[1]))
    q, v, u = ca.SX.sym("q", 5), ca.SX.sym("v", 5), ca.SX.sym("u", 2)
    a1, a12 = q[3], q[3] + q[4]
    e1, e12 = ca.vertcat(ca.cos(a1), ca.sin(a1)), ca.vertcat(ca.cos(a12), ca.sin(a12))
    c1 = ca.DM(base_) + 0.5 * l1_ * e1
    elbow = ca.DM(base_) + l1_ * e1
    c2 = elbow + 0.5 * l2_ * e12
    dc1, dc2 = ca.jacobian(c1, q) @ v, ca.jacobian(c2, q) @ v
    inertia = mb * (w ** 2 + hh ** 2) / 12.0
    T = (0.5 * mb * (v[0] ** 2 + v[1] ** 2) + 0.5 * inertia * v[2] ** 2
         + 0.5 * ml * ca.dot(dc1, dc1) + ml * l1_ ** 2 / 24.0 * v[3] ** 2
         + 0.5 * ml * ca.dot(dc2, dc2) + ml * l2_ ** 2 / 24.0 * (v[3] + v[4]) ** 2)
    V = g * (mb * q[1] + ml * c1[1] + ml * c2[1])
    M, h = lagrangian_system(q, v, T, V)
    center, theta = q[0:2], q[2]
    phi, Jn, Jt, Jo = pushed_box_contacts(q, v, center, theta, w, hh, arm_fingertip(q, base_, l1_, l2_))
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=last_two_actuated(), phi=phi, Jn=Jn, Jt=Jt, Jo=Jo,
                         mu=[mug, mug, muf], V=V, planar=True,
                         q_nominal=[0.0, hh / 2, 0.0, -0.5, 1.0], name="two_link_arm_box",
                         q_names=("x", "z", "theta", "a1", "a2"),
                         v_names=("xdot", "zdot", "thetadot", "a1dot", "a2dot"),
                         u_names=("tau_1", "tau_2"), contact_names=("bottom_left", "bottom_right", "finger"))


def two_finger_rotation(m_box: float = 0.5, width: float = 0.1, height: float = 0.1, mu: float = 0.8,
                        m_finger: float = 0.1, g: float = GRAVITY) -> ContactSystem:
    """A planar box held in the air between two actuated point fingers that move freely in the x-z
    plane (in-hand manipulation: the box can only be held, turned and moved through the fingers'
    friction).

    ``q = (x, z, theta, x_l, z_l, x_r, z_r)``: the box's center of mass and angle, the left and the
    right fingertip. ``M = diag(m_box, m_box, I, m_finger I_4)``, ``I = m_box (width^2 + height^2)
    / 12``; gravity acts on the box only (the fingers are gravity compensated); ``B = [0; I_4]``:
    ``u = (f_xl, f_zl, f_xr, f_zr)`` are forces on the fingertips. Contacts
    (:func:`~contactmp.models.manipulation.face_contact_2d`, friction ``mu``): ``left``, the left
    fingertip on the box's left face, and ``right``, the right one on its right face (each the
    face's plane: valid while the fingertip stays within the face, which a task bounds). Holding
    the box level by squeezing with ``F`` needs ``2 mu F >= m_box g``.

    ``q_nominal = (0, 0, 0, -width/2, 0, width/2, 0)``: both fingertips at the faces' mid-height.
    """
    mb, mf = check_number("m_box", m_box, positive=True), check_number("m_finger", m_finger, positive=True)
    w, hh = check_number("width", width, positive=True), check_number("height", height, positive=True)
    mu_ = check_number("mu", mu, nonnegative=True)
    g = check_number("g", g, nonnegative=True)
    inertia = mb * (w ** 2 + hh ** 2) / 12.0
    q, v, u = ca.SX.sym("q", 7), ca.SX.sym("v", 7), ca.SX.sym("u", 4)
    center, theta = q[0:2], q[2]
    T = 0.5 * mb * (v[0] ** 2 + v[1] ** 2) + 0.5 * inertia * v[2] ** 2 + 0.5 * mf * ca.sumsqr(v[3:7])
    V = mb * g * q[1]
    M, h = lagrangian_system(q, v, T, V)
    rows = [face_contact_2d(q, v, q[3 + 2 * k:5 + 2 * k], center, theta, (sign, 0.0), w / 2)
            for k, sign in enumerate((-1.0, 1.0))]
    B = ca.vertcat(ca.SX.zeros(3, 4), ca.SX.eye(4))
    phi, Jn, Jt, Jo = (ca.vertcat(*(r[i] for r in rows)) for i in range(4))
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=B, phi=phi, Jn=Jn, Jt=Jt, Jo=Jo, mu=mu_, V=V, planar=True,
                         q_nominal=[0.0, 0.0, 0.0, -w / 2, 0.0, w / 2, 0.0], name="two_finger_rotation",
                         q_names=("x", "z", "theta", "x_l", "z_l", "x_r", "z_r"),
                         v_names=("xdot", "zdot", "thetadot", "xdot_l", "zdot_l", "xdot_r", "zdot_r"),
                         u_names=("f_xl", "f_zl", "f_xr", "f_zr"), contact_names=("left", "right"))
