"""Articulated legged robots with a planar floating base, written in CasADi (NMDP notes, issue 7).

The **spider** of Pan and Hauser's experiments (``notes/nmdp.md``, "experiments' set-up"): a body
sphere of radius ``0.25`` with four legs attached on its equator at the azimuths 45, 135, 225 and
315 degrees (front-left, hind-left, hind-right, front-right; +x is forward, +y left, +z up). Each
leg is a ball hip (three angles, z-y-x Euler: yaw ``psi``, pitch ``theta``, roll ``rho``) and a
hinge knee (angle ``kappa`` about the upper leg's y axis). With all leg angles zero a leg sticks
straight out radially and horizontally.

Frames (world ``W``, body ``b``): the base moves in the world x-z plane, ``q = (x, z, pitch, s)``
with ``pitch`` a rotation about the world ``+y`` axis (positive turns ``+x`` toward ``-z``, the
convention of :mod:`contactmp.models.urdf`'s planar floating base), so ``R_b = R_y(pitch)`` and the
body center is ``(x, 0, z)``. Leg ``i`` (azimuth ``a_i``) has its hip at ``r_b (cos a_i, sin a_i, 0)``
in the body frame and the chain

    R_upper = R_b R_z(a_i) R_z(psi) R_y(theta) R_x(rho),     knee = hip + R_upper (L1, 0, 0)
    R_foot  = R_upper R_y(kappa),                            foot = knee + R_foot (L2, 0, 0)

``s = (psi_1, theta_1, rho_1, kappa_1, ..., psi_4, theta_4, rho_4, kappa_4)`` (16 angles),
``n_q = n_v = 19`` and ``qdot = v``. Positive ``theta`` and ``kappa`` turn the leg downward.

Dynamics: with the world velocity Jacobian ``J_v,k`` of link ``k``'s center of mass and its world
angular velocity Jacobian ``J_w,k`` (``omega = vee(Rdot R^T)``),

    M(q) = sum_k m_k J_v,k^T J_v,k + J_w,k^T R_k I_k R_k^T J_w,k,    T = 1/2 v^T M v,
    V(q) = g sum_k m_k z_k(q),    h(q, v) = d(M v)/dq v - dT/dq + dV/dq   (Lagrange, qdot = v),

``B`` selects the 16 joints (``u`` = joint torques). The same dynamics without the expanded
matrices, for the NMDP step (:mod:`contactmp.formulations.nmdp`): ``system.functions
["inverse_dynamics"](q, v, a) = M(q) a + h(q, v)`` by the recursive Newton-Euler algorithm and
``system.functions["kinetic_energy"](q, v) = 1/2 v^T M(q) v`` from the link velocities (2.0 k and
0.9 k SX instructions against 6.2 k for ``M`` and 52 k for ``h``; equal to rounding).

Contacts: the four foot spheres (radius ``0.08``) against the ground ``z = ground_height``:
``phi_i = z_foot,i - r_foot - ground_height`` (a true gap), frames ``n = e_z, t = e_x, o = e_y``
(``planar=False``: legs move out of the plane).
"""
from __future__ import annotations

import math

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, check_number
from contactmp.models.rigid_bodies import GRAVITY
from contactmp.models.symbolic import ContactSystem
from contactmp.models.systems import point_contacts

__all__ = ["SPIDER_LEGS", "SPIDER_AZIMUTHS", "SPIDER_GEOMETRY", "spider", "spider_standing",
           "spider_leg_fk", "spider_feet", "rot_x", "rot_y", "rot_z"]

#: leg names in the order of q, contacts and inputs
SPIDER_LEGS = ("FL", "HL", "HR", "FR")
#: azimuths (rad) of the hips on the body's equator, in the order of SPIDER_LEGS
SPIDER_AZIMUTHS = tuple(math.radians(a) for a in (45.0, 135.0, 225.0, 315.0))
#: default geometry [m] and masses [kg] (see :func:`spider`)
SPIDER_GEOMETRY = {
    "body_radius": 0.25,
    "upper_length": 0.2,
    "foot_length": 0.2 * math.sqrt(2.0) + 0.16,
    "foot_radius": 0.08,
    "ground_height": -0.43,
    "mass": 100.0,
    "body_fraction": 0.6,
    "upper_fraction": 0.4,
    "link_radius": 0.03,
}
_JOINTS = ("hip_yaw", "hip_pitch", "hip_roll", "knee")


# ----------------------------------------------------------------------------- rotations
def rot_x(a: ca.SX | float) -> ca.SX:
    """Rotation by ``a`` about the x axis."""
    c, s = ca.cos(a), ca.sin(a)
    return ca.vertcat(ca.horzcat(1, 0, 0), ca.horzcat(0, c, -s), ca.horzcat(0, s, c))


def rot_y(a: ca.SX | float) -> ca.SX:
    """Rotation by ``a`` about the y axis (``+x`` turns toward ``-z`` for ``a > 0``)."""
    c, s = ca.cos(a), ca.sin(a)
    return ca.vertcat(ca.horzcat(c, 0, s), ca.horzcat(0, 1, 0), ca.horzcat(-s, 0, c))


def rot_z(a: ca.SX | float) -> ca.SX:
    """Rotation by ``a`` about the z axis."""
    c, s = ca.cos(a), ca.sin(a)
    return ca.vertcat(ca.horzcat(c, -s, 0), ca.horzcat(s, c, 0), ca.horzcat(0, 0, 1))


# ---------------------------------------------------------------------------- kinematics
def _leg_chain(angles: ca.SX, azimuth: float, body_radius: float, L1: float, L2: float
               ) -> tuple[ca.SX, ca.SX, ca.SX, ca.SX, ca.SX]:
    """Body-frame ``(hip, knee, foot, R_upper, R_foot)`` of one leg for ``angles = (psi, theta,
    rho, kappa)``."""
    psi, theta, rho, kappa = (angles[i] for i in range(4))
    hip = ca.DM([body_radius * math.cos(azimuth), body_radius * math.sin(azimuth), 0.0])
    R_up = rot_z(azimuth) @ rot_z(psi) @ rot_y(theta) @ rot_x(rho)
    knee = hip + R_up @ ca.DM([L1, 0.0, 0.0])
    R_ft = R_up @ rot_y(kappa)
    foot = knee + R_ft @ ca.DM([L2, 0.0, 0.0])
    return hip, knee, foot, R_up, R_ft


def spider_leg_fk(angles: ArrayLike | ca.SX, leg: int, *,
                  body_radius: float = SPIDER_GEOMETRY["body_radius"],
                  upper_length: float = SPIDER_GEOMETRY["upper_length"],
                  foot_length: float = SPIDER_GEOMETRY["foot_length"]) -> np.ndarray | ca.SX:
    """Body-frame position of the foot-sphere center of leg ``leg`` (index into SPIDER_LEGS) for
    the four angles ``(psi, theta, rho, kappa)``: ``hip + R_z(a) R_z(psi) R_y(theta) R_x(rho)
    ((L1, 0, 0) + R_y(kappa) (L2, 0, 0))``. Numeric input gives an ndarray (3,), SX gives SX."""
    if not 0 <= int(leg) < 4:
        raise InputError("leg", f"expected 0..3, got {leg}")
    symbolic = isinstance(angles, (ca.SX, ca.MX))
    a = angles if symbolic else ca.DM(np.asarray(angles, dtype=float).reshape(4))
    foot = _leg_chain(a, SPIDER_AZIMUTHS[int(leg)], body_radius, upper_length, foot_length)[2]
    return foot if symbolic else np.array(ca.evalf(foot), dtype=float).ravel()


def spider_feet(q: ArrayLike, *, body_radius: float = SPIDER_GEOMETRY["body_radius"],
                upper_length: float = SPIDER_GEOMETRY["upper_length"],
                foot_length: float = SPIDER_GEOMETRY["foot_length"]) -> np.ndarray:
    """World positions ``(4, 3)`` of the four foot-sphere centers at ``q = (x, z, pitch, s)``."""
    q = np.asarray(q, dtype=float).reshape(19)
    R = np.array(ca.evalf(rot_y(q[2])), dtype=float)
    base = np.array([q[0], 0.0, q[1]])
    return np.array([base + R @ spider_leg_fk(q[3 + 4 * i:7 + 4 * i], i, body_radius=body_radius,
                                              upper_length=upper_length,
                                              foot_length=foot_length) for i in range(4)])


def spider_standing(ground_height: float = SPIDER_GEOMETRY["ground_height"], *,
                    body_radius: float = SPIDER_GEOMETRY["body_radius"],
                    upper_length: float = SPIDER_GEOMETRY["upper_length"],
                    foot_length: float = SPIDER_GEOMETRY["foot_length"],
                    foot_radius: float = SPIDER_GEOMETRY["foot_radius"], body_height: float = 0.43) -> np.ndarray:
    """The nominal standing pose: body level at ``z = ground_height + body_height``, every hip
    angle 0 (upper legs horizontal and radial) and every knee at ``kappa = asin(d / L2)`` with
    ``d = body_height - foot_radius`` the drop from knee to foot center, so that all four feet touch
    the ground (``phi = 0``). Raises InputError (``body_height``) if the foot cannot reach."""
    d = body_height - foot_radius
    if not 0.0 < d < foot_length:
        raise InputError("body_height", f"knee-to-foot drop {d:g} must lie in (0, {foot_length:g})")
    kappa = math.asin(d / foot_length)
    return np.array([0.0, ground_height + body_height, 0.0] + [0.0, 0.0, 0.0, kappa] * 4)


def _vee(S: ca.SX) -> ca.SX:
    """``(S_32, S_13, S_21)`` of a skew-symmetric 3x3 matrix (the angular velocity of ``Rdot R^T``)."""
    return ca.vertcat(S[2, 1], S[0, 2], S[1, 0])


def _rod_inertia(m: float, length: float, radius: float) -> np.ndarray:
    """Central inertia of a solid cylinder along its x axis."""
    axial = 0.5 * m * radius**2
    transverse = m * (3.0 * radius**2 + length**2) / 12.0
    return np.diag([axial, transverse, transverse])


# ---------------------------------------------------------------------------------- model
def spider(mu: float = 1.5, ground_height: float = SPIDER_GEOMETRY["ground_height"], *,
           mass: float = SPIDER_GEOMETRY["mass"], body_radius: float = SPIDER_GEOMETRY["body_radius"],
           upper_length: float = SPIDER_GEOMETRY["upper_length"],
           foot_length: float = SPIDER_GEOMETRY["foot_length"], foot_radius: float = SPIDER_GEOMETRY["foot_radius"],
           body_fraction: float = SPIDER_GEOMETRY["body_fraction"],
           upper_fraction: float = SPIDER_GEOMETRY["upper_fraction"],
           link_radius: float = SPIDER_GEOMETRY["link_radius"], g: float = GRAVITY) -> ContactSystem:
    """The four-legged spider (module docstring) as a ContactSystem, ``n_q = n_v = 19``, ``n_u = 16``,
    four foot contacts named ``FL, HL, HR, FR``.

    Masses: the body, a solid sphere, carries ``body_fraction * mass`` (default 60 kg,
    ``I = 2/5 m r^2 = 1.5 kg m^2``); each leg carries ``(1 - body_fraction) mass / 4`` (10 kg), split
    ``upper_fraction`` (4 kg) for the upper leg and the rest (6 kg) for the foot segment, each a
    solid cylinder of radius ``link_radius`` with its center of mass at its midpoint (the foot
    sphere is part of the foot segment's mass). ``q_nominal`` is :func:`spider_standing`.
    """
    mu = check_number("mu", mu, nonnegative=True)
    gh = check_number("ground_height", ground_height)
    m_tot = check_number("mass", mass, positive=True)
    rb = check_number("body_radius", body_radius, positive=True)
    L1 = check_number("upper_length", upper_length, positive=True)
    L2 = check_number("foot_length", foot_length, positive=True)
    rf = check_number("foot_radius", foot_radius, positive=True)
    rl = check_number("link_radius", link_radius, positive=True)
    g = check_number("g", g, nonnegative=True)
    fb = check_number("body_fraction", body_fraction, positive=True)
    fu = check_number("upper_fraction", upper_fraction, positive=True)
    if fb >= 1.0:
        raise InputError("body_fraction", f"must lie in (0, 1), got {fb:g}")
    if fu >= 1.0:
        raise InputError("upper_fraction", f"must lie in (0, 1), got {fu:g}")
    m_body = fb * m_tot
    m_leg = (1.0 - fb) * m_tot / 4.0
    m_up, m_ft = fu * m_leg, (1.0 - fu) * m_leg

    q, v, u = ca.SX.sym("q", 19), ca.SX.sym("v", 19), ca.SX.sym("u", 16)
    R_b = rot_y(q[2])
    base = ca.vertcat(q[0], 0.0, q[1])
    # links: (mass, world com, world rotation, central inertia in the link frame)
    links = [(m_body, base, R_b, np.eye(3) * 0.4 * m_body * rb**2)]
    feet = []
    for i, az in enumerate(SPIDER_AZIMUTHS):
        hip, knee, foot, R_up, R_ft = _leg_chain(q[3 + 4 * i:7 + 4 * i], az, rb, L1, L2)
        links.append((m_up, base + R_b @ (0.5 * (hip + knee)), R_b @ R_up,
                      _rod_inertia(m_up, L1, rl)))
        links.append((m_ft, base + R_b @ (0.5 * (knee + foot)), R_b @ R_ft,
                      _rod_inertia(m_ft, L2, rl)))
        feet.append(base + R_b @ foot)

    a = ca.SX.sym("a", 19)
    rnea = _recursive_inverse_dynamics(q, v, a, rb, L1, L2, (m_body, m_up, m_ft),
                                       tuple(link[3] for link in links[:3]), g)
    inverse_dynamics = ca.Function("inverse_dynamics", [q, v, a], [ca.cse(rnea)], ["q", "v", "a"], ["tau"])
    kin = _recursive_kinetic_energy(q, v, rb, L1, L2, (m_body, m_up, m_ft), tuple(link[3] for link in links[:3]))
    kinetic_energy = ca.Function("kinetic_energy", [q, v], [ca.cse(kin)], ["q", "v"], ["T"])
    M = ca.SX.zeros(19, 19)
    V = ca.SX(0.0)
    for m, c, R, I in links:
        Jv = ca.jacobian(c, q)                     # qdot = v
        Rdot = ca.reshape(ca.jacobian(ca.vec(R), q) @ v, 3, 3)
        Jw = ca.jacobian(_vee(Rdot @ R.T), v)
        M += m * (Jv.T @ Jv) + Jw.T @ (R @ ca.DM(I) @ R.T) @ Jw
        V += m * g * c[2]
    M = 0.5 * (M + M.T)
    T = 0.5 * ca.dot(v, M @ v)
    h = ca.jacobian(M @ v, q) @ v - ca.gradient(T, q) + ca.gradient(V, q)
    B = ca.SX(ca.DM(np.vstack([np.zeros((3, 16)), np.eye(16)])))
    ground = ((0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0))
    phi, Jn, Jt, Jo = point_contacts(feet, [ground] * 4, [gh + rf] * 4, q, v, v, planar=False)
    joint_names = [f"{leg}_{j}" for leg in SPIDER_LEGS for j in _JOINTS]
    q_nom = spider_standing(gh, body_radius=rb, upper_length=L1, foot_length=L2, foot_radius=rf)
    system = ContactSystem(q=q, v=v, u=u, M=M, h=h, B=B, phi=phi, Jn=Jn, Jt=Jt, Jo=Jo, mu=mu, V=V,
                         planar=False, q_nominal=q_nom, name="spider",
                         q_names=("x", "z", "pitch", *joint_names),
                         v_names=tuple(f"{n}_dot" for n in ("x", "z", "pitch", *joint_names)),
                         u_names=tuple(joint_names), contact_names=SPIDER_LEGS)
    system.functions["inverse_dynamics"] = inverse_dynamics
    system.functions["kinetic_energy"] = kinetic_energy
    return system


def _recursive_inverse_dynamics(q: ca.SX, v: ca.SX, a: ca.SX, rb: float, L1: float, L2: float,
                                masses: tuple[float, float, float], inertias: tuple[np.ndarray, ...],
                                g: float) -> ca.SX:
    """``M(q) a + h(q, v)`` of the spider by the recursive Newton-Euler algorithm, in world
    coordinates: forward along each leg the angular velocities and accelerations
    ``omega_j = omega_p + z_j qd_j``, ``alpha_j = alpha_p + z_j qdd_j + omega_p x z_j qd_j`` (``z_j``
    the world axis of joint j) and the accelerations of the points ``a_P = a_O + alpha x r +
    omega x (omega x r)``; backward the link forces ``F = m (a_c + g e_z)`` and moments
    ``N = R (I alpha_b + omega_b x I omega_b)`` (body-frame ``omega_b = R^T omega``), summed toward
    the base with ``r x F``; a revolute joint's generalized force is ``z_j . N`` about its origin,
    the base's ``(F_x, F_z, e_y . N_base)``. ``masses = (m_body, m_upper, m_foot)``, ``inertias``
    the central inertias in the link frames (body, upper leg, foot segment)."""
    m_b, m_u, m_f = masses
    I_b, I_u, I_f = (ca.DM(I) for I in inertias)
    ex, ey, ez = ca.DM([1.0, 0.0, 0.0]), ca.DM([0.0, 1.0, 0.0]), ca.DM([0.0, 0.0, 1.0])
    grav = ca.vertcat(0.0, 0.0, g)
    R_b = rot_y(q[2])
    w_b, al_b = ey * v[2], ey * a[2]
    acc_b = ca.vertcat(a[0], 0.0, a[1])

    def moment(R: ca.SX, I: ca.DM, om: ca.SX, al: ca.SX) -> ca.SX:
        ob, ab = R.T @ om, R.T @ al
        return R @ (I @ ab + ca.cross(ob, I @ ob))

    def point_acc(acc: ca.SX, al: ca.SX, om: ca.SX, r: ca.SX) -> ca.SX:
        return acc + ca.cross(al, r) + ca.cross(om, ca.cross(om, r))

    tau = [None] * 19
    F_base = m_b * (acc_b + grav)
    N_base = moment(R_b, I_b, w_b, al_b)
    for i, az in enumerate(SPIDER_AZIMUTHS):
        k = 3 + 4 * i
        r_hip = R_b @ ca.DM([rb * math.cos(az), rb * math.sin(az), 0.0])
        acc_hip = point_acc(acc_b, al_b, w_b, r_hip)
        R0 = R_b @ rot_z(az)
        om, al, Rj, axes = w_b, al_b, R0, []
        for j, (rot, e) in enumerate(((rot_z, ez), (rot_y, ey), (rot_x, ex))):  # yaw, pitch, roll at the hip
            z = Rj @ e
            al = al + z * a[k + j] + ca.cross(om, z) * v[k + j]
            om = om + z * v[k + j]
            Rj = Rj @ rot(q[k + j])
            axes.append(z)
        R_up, om_u, al_u = Rj, om, al
        z_k = R_up @ ey
        al_f = al_u + z_k * a[k + 3] + ca.cross(om_u, z_k) * v[k + 3]
        om_f = om_u + z_k * v[k + 3]
        R_ft = R_up @ rot_y(q[k + 3])
        r_uc, r_kn, r_fc = R_up @ (ex * (0.5 * L1)), R_up @ (ex * L1), R_ft @ (ex * (0.5 * L2))
        acc_kn = point_acc(acc_hip, al_u, om_u, r_kn)
        F_f = m_f * (point_acc(acc_kn, al_f, om_f, r_fc) + grav)
        N_kn = moment(R_ft, I_f, om_f, al_f) + ca.cross(r_fc, F_f)  # about the knee
        tau[k + 3] = ca.dot(z_k, N_kn)
        F_u = m_u * (point_acc(acc_hip, al_u, om_u, r_uc) + grav)
        N_hip = moment(R_up, I_u, om_u, al_u) + ca.cross(r_uc, F_u) + N_kn + ca.cross(r_kn, F_f)
        for j in range(3):
            tau[k + j] = ca.dot(axes[j], N_hip)
        F_leg = F_u + F_f
        F_base = F_base + F_leg
        N_base = N_base + N_hip + ca.cross(r_hip, F_leg)
    tau[0], tau[1], tau[2] = F_base[0], F_base[2], ca.dot(ey, N_base)
    return ca.vertcat(*tau)


def _recursive_kinetic_energy(q: ca.SX, v: ca.SX, rb: float, L1: float, L2: float,
                              masses: tuple[float, float, float], inertias: tuple[np.ndarray, ...]) -> ca.SX:
    """``T(q, v) = 1/2 v^T M(q) v = sum_k 1/2 m_k |v_c,k|^2 + 1/2 omega_b,k^T I_k omega_b,k`` of the spider
    from the link velocities propagated along each leg (``omega_j = omega_p + z_j qd_j``,
    ``v_P = v_O + omega x r``; ``omega_b = R^T omega`` in the link frame), as in
    :func:`_recursive_inverse_dynamics`."""
    m_b, m_u, m_f = masses
    I_b, I_u, I_f = (ca.DM(I) for I in inertias)
    ex, ey, ez = ca.DM([1.0, 0.0, 0.0]), ca.DM([0.0, 1.0, 0.0]), ca.DM([0.0, 0.0, 1.0])
    R_b = rot_y(q[2])
    w_b, vel_b = ey * v[2], ca.vertcat(v[0], 0.0, v[1])

    def rot_energy(R: ca.SX, I: ca.DM, om: ca.SX) -> ca.SX:
        ob = R.T @ om
        return 0.5 * ca.dot(ob, I @ ob)

    T = 0.5 * m_b * ca.dot(vel_b, vel_b) + rot_energy(R_b, I_b, w_b)
    for i, az in enumerate(SPIDER_AZIMUTHS):
        k = 3 + 4 * i
        vel_hip = vel_b + ca.cross(w_b, R_b @ ca.DM([rb * math.cos(az), rb * math.sin(az), 0.0]))
        om, Rj = w_b, R_b @ rot_z(az)
        for j, (rot, e) in enumerate(((rot_z, ez), (rot_y, ey), (rot_x, ex))):
            om = om + (Rj @ e) * v[k + j]
            Rj = Rj @ rot(q[k + j])
        R_up = Rj
        om_f = om + (R_up @ ey) * v[k + 3]
        R_ft = R_up @ rot_y(q[k + 3])
        vel_uc = vel_hip + ca.cross(om, R_up @ (ex * (0.5 * L1)))
        vel_fc = vel_hip + ca.cross(om, R_up @ (ex * L1)) + ca.cross(om_f, R_ft @ (ex * (0.5 * L2)))
        T += 0.5 * m_u * ca.dot(vel_uc, vel_uc) + rot_energy(R_up, I_u, om)
        T += 0.5 * m_f * ca.dot(vel_fc, vel_fc) + rot_energy(R_ft, I_f, om_f)
    return T
