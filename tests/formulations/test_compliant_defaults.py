"""The compliant formulation's defaults (issue 35): gains derived from the system, the
non-associated flow rule, and the declared physics tolerances.

The systems are built here from CasADi expressions, as a user would (not the shipped scenes): a
solid sphere in minimal coordinates and a box with a unit quaternion, on a plane inclined by
``ALPHA`` (gravity tilted toward ``+x``), with friction 5 % above and below the slip threshold, and
dropped onto the level plane. Notation of Drumwright's compliant contact: ``lambda_n = max(0, -K
phi(t+h) - B phidot(t+h))``, ``lambda_T = -Bt u_T`` inside the cone; ``load`` and ``m_c`` from
:func:`~contactmp.formulations.contact_scale.contact_scale`, ``d`` the design depth.
"""
from __future__ import annotations

import math
import warnings

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.contact_scale import DESIGN_DEPTH, contact_scale
from contactmp.formulations.velocity_compliant import CREEP_TIME, IMPACT_SPEED, Compliant, damping_ramp
from contactmp.models.symbolic import ContactSystem
from contactmp.transcriptions.time_stepping import TimeStepping

G = 9.81
ALPHA = math.radians(30.0)
H = 0.01


def _gravity(m: float, alpha: float, g: float) -> ca.DM:
    """``dV/dpos`` of ``V = m g (cos a z - sin a x)``."""
    return ca.DM([-m * g * math.sin(alpha), 0.0, m * g * math.cos(alpha)])


def sphere(mu: float, alpha: float = 0.0, m: float = 2.0, r: float = 0.05, g: float = G) -> ContactSystem:
    """A solid sphere, ``q = (x, y, z, rx, ry, rz)``, ``v = qdot``, one contact at its lowest point."""
    q, v, u = ca.SX.sym("q", 6), ca.SX.sym("v", 6), ca.SX.sym("u", 0)
    inertia = 0.4 * m * r * r
    M = ca.SX(ca.diag(ca.DM([m, m, m, inertia, inertia, inertia])))
    h = ca.vertcat(_gravity(m, alpha, g), ca.DM.zeros(3))
    pv = v[:3] + ca.cross(v[3:], ca.DM([0.0, 0.0, -r]))
    Jt, Jo, Jn = (ca.jacobian(pv[i], v) for i in range(3))
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=ca.SX(6, 0), phi=q[2] - r, Jn=Jn, Jt=Jt, Jo=Jo, mu=mu,
                         V=m * g * (math.cos(alpha) * q[2] - math.sin(alpha) * q[0]), planar=False,
                         q_nominal=[0.0, 0.0, r, 0.0, 0.0, 0.0], name="test_sphere")


def box(mu: float, alpha: float = 0.0, m: float = 1.0, size: float = 0.2, g: float = G) -> ContactSystem:
    """A cube with a unit quaternion, ``q = (p, quat)``, ``v = (world velocity, body angular
    velocity)``, ``qdot = (v, 1/2 quat (x) (0, w))``, 8 corner contacts."""
    q, v, u = ca.SX.sym("q", 7), ca.SX.sym("v", 6), ca.SX.sym("u", 0)
    a = size
    Ib = np.full(3, m * a * a / 6.0)
    quat, w = q[3:], v[3:]
    qdot = ca.vertcat(v[:3], 0.5 * ca.vertcat(-ca.dot(quat[1:], w), quat[0] * w + ca.cross(quat[1:], w)))
    qw, qx, qy, qz = (quat[i] for i in range(4))
    R = ca.vertcat(ca.horzcat(1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)),
                   ca.horzcat(2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)),
                   ca.horzcat(2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)))
    corners = [q[:3] + R @ ca.DM([sx * a / 2, sy * a / 2, sz * a / 2])
               for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    Gq = ca.jacobian(qdot, v)
    J = [ca.vertcat(*[ca.jacobian(p[i], q) @ Gq for p in corners]) for i in range(3)]
    M = ca.SX(ca.diag(ca.DM(np.concatenate([np.full(3, m), Ib]))))
    h = ca.vertcat(_gravity(m, alpha, g), ca.cross(w, ca.DM(Ib) * w))
    return ContactSystem(q=q, v=v, u=u, M=M, h=h, B=ca.SX(6, 0), phi=ca.vertcat(*[p[2] for p in corners]),
                         Jn=J[2], Jt=J[0], Jo=J[1], mu=mu, qdot=qdot,
                         V=m * g * (math.cos(alpha) * q[2] - math.sin(alpha) * q[0]), planar=False,
                         q_nominal=[0.0, 0.0, a / 2, 1.0, 0.0, 0.0, 0.0], name="test_box")


#: the box slides when mu < tan a; the sphere's contact slips when mu < 2/7 tan a
THRESHOLD = {"box": math.tan(ALPHA), "sphere": 2.0 / 7.0 * math.tan(ALPHA)}
BUILD = {"box": box, "sphere": sphere}


def _simulate(s: ContactSystem, n: int, z0: float = 0.0, **options):
    ts = TimeStepping(s, H, "compliant", **options)
    q0 = np.array(s.q_nominal, dtype=float)
    q0[2] += z0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = ts.simulate(q0, np.zeros(s.n_v), n_steps=n)
    return ts, tr, np.array([s.eval_phi(q) for q in tr.q])


# ------------------------------------------------------------------------------ derived defaults
def test_defaults_are_derived_from_the_load_at_rest() -> None:
    """Sphere on the incline: ``load = m g cos a``, ``m_c = m``; cube on its face: ``load = m g / 4``,
    ``m_c = m / 4``; ``K = load / d``, ``B = 2 sqrt(K m_c) max(0, -phi) / d`` (critical at the design
    depth, 0 above the surface), ``Bt = load T / d``."""
    for s, load, m_c in ((sphere(0.3, ALPHA), 2.0 * G * math.cos(ALPHA), 2.0), (box(0.5), G / 4, 0.25)):
        f = Compliant()
        f.check_system(s, H)
        cs = contact_scale(s)
        assert cs.load == pytest.approx(load, rel=1e-6) and cs.mass == pytest.approx(m_c, rel=1e-6)
        nc = s.n_c
        for phi, ramp in ((0.0, 0.0), (1e-4, 0.0), (-DESIGN_DEPTH / 2, 0.5), (-DESIGN_DEPTH, 1.0), (-0.01, 10.0)):
            K, B, Bt = f.gains(s, np.full(nc, phi), np.asarray(s.q_nominal, dtype=float))
            np.testing.assert_allclose(K, load / DESIGN_DEPTH, rtol=1e-6)
            np.testing.assert_allclose(B, ramp * 2.0 * math.sqrt(load / DESIGN_DEPTH * m_c), rtol=1e-6)
            np.testing.assert_allclose(Bt, load * CREEP_TIME / DESIGN_DEPTH, rtol=1e-6)
        K5 = Compliant(design_depth=5e-3).gains(s, np.zeros(nc), np.asarray(s.q_nominal, dtype=float))[0]
        np.testing.assert_allclose(K5, load / 5e-3, rtol=1e-6)
    np.testing.assert_allclose(damping_ramp(np.array([1.0, 0.0, -2e-3, -8e-3]), 4e-3), [0.0, 0.0, 0.5, 2.0])


def test_no_options_step_and_the_default_flow_rule() -> None:
    """``TimeStepping(system, h, "compliant")`` needs no option; the default is the non-associated
    law, solved as an fc3d problem (Newton first); ``associated=True`` keeps the cone QP (IPOPT)."""
    s = sphere(0.3)
    f = TimeStepping(s, H, "compliant").formulation
    assert f.options.associated is False and f.options.design_depth == DESIGN_DEPTH
    _, tr, _ = _simulate(s, 3)
    assert tr.solver[-1] == "newton"
    _, tr, _ = _simulate(s, 3, associated=True)
    assert tr.solver[-1].startswith("ipopt")


@pytest.mark.parametrize("d", [1e-3, 4e-3])
def test_design_depth_is_the_static_depth(d: float) -> None:
    """A sphere set on the plane settles at ``phi = -d`` (critically damped at rest): 60 steps."""
    s = sphere(0.5)
    _, tr, phis = _simulate(s, 60, design_depth=d)
    assert phis[-1, 0] == pytest.approx(-d, rel=1e-4)
    assert np.abs(tr.v[-1]).max() < 1e-6


def test_given_gains_are_used_as_given() -> None:
    """Given constants are returned as given (no ramp on a given damping, no derivation), and the
    declared gap widens by the given damper's reach ``B / K V`` at the design impact speed ``V``."""
    s = sphere(0.5)
    f = Compliant(stiffness=1e4, damping=50.0, tangential_damping=20.0)
    for phi in (0.05, 0.0, -1e-3):
        K, B, Bt = f.gains(s, np.array([phi]), np.asarray(s.q_nominal, dtype=float))
        assert (K.tolist(), B.tolist(), Bt.tolist()) == ([1e4], [50.0], [20.0])
    tol = f.physics_tolerances(s, H)
    assert tol.gap == pytest.approx(DESIGN_DEPTH + 50.0 / 1e4 * IMPACT_SPEED)
    assert Compliant().physics_tolerances(s, H).gap == DESIGN_DEPTH


def test_what_cannot_be_derived_names_the_option() -> None:
    """Without gravity no contact is loaded at rest: each default that needs the load is an
    InputError naming the option to give."""
    s = sphere(0.5, g=0.0)
    with pytest.raises(InputError) as exc:
        TimeStepping(s, H, "compliant")
    assert exc.value.field == "stiffness"
    with pytest.raises(InputError) as exc:
        TimeStepping(s, H, "compliant", stiffness=1e4)
    assert exc.value.field == "damping"
    with pytest.raises(InputError) as exc:
        TimeStepping(s, H, "compliant", stiffness=1e4, damping=10.0)
    assert exc.value.field == "tangential_damping"
    for bad in (0.0, -1e-3, math.nan):
        with pytest.raises(InputError) as exc:
            Compliant(design_depth=bad)
        assert exc.value.field == "design_depth"
    ts = TimeStepping(s, H, "compliant", stiffness=1e4, damping=10.0, tangential_damping=1e3)
    # the tolerance falls back to d + V sqrt(m_e / K) with the contact's effective mass m_e = 2 kg
    assert ts.formulation.physics_tolerances(s, H).penetration == pytest.approx(
        DESIGN_DEPTH + IMPACT_SPEED * math.sqrt(2.0 / 1e4))


def test_penetration_tolerance_is_the_energy_bound() -> None:
    """``delta = (load + sqrt(load^2 + K m_c V^2)) / K = d (1 + sqrt(1 + V^2 / (a d)))``, ``a = load /
    m_c``: 21.2 mm for the sphere on the level plane (``a = g``)."""
    s = sphere(0.5)
    tol = Compliant().physics_tolerances(s, H)
    d = DESIGN_DEPTH
    assert tol.penetration == pytest.approx(d * (1 + math.sqrt(1 + IMPACT_SPEED ** 2 / (G * d))), rel=1e-6)
    assert tol.gap_force == 0.0


# ---------------------------------------------------------------------- physics with the defaults
@pytest.mark.parametrize("friction", ["cone", "pyramid"])
@pytest.mark.parametrize("body", ["box", "sphere"])
def test_slides_on_the_incline_and_stays_on_it(body: str, friction: str) -> None:
    """5 % below the slip threshold, 0.3 s: penetration within the declared tolerance (in fact the
    static depth: 1.0 mm), no contact that starts closed lifts above the plane (box: the lightly
    loaded uphill corners stay 0.28 mm inside), and the body slides (box: ``g (sin a - mu cos a) t``
    to 2 %); the same with the pyramid (an LCP, Lemke)."""
    mu = 0.95 * THRESHOLD[body]
    s = BUILD[body](mu, ALPHA)
    ts, tr, phis = _simulate(s, 30, friction=friction)
    tol = ts.formulation.physics_tolerances(s, H)
    closed = s.eval_phi(np.asarray(s.q_nominal, dtype=float)) <= 1e-9
    assert tr.n_failed == 0
    assert -phis.min() <= tol.penetration and -phis.min() <= 1.1 * DESIGN_DEPTH
    assert phis[5:, closed].max() <= 0.0  # on the plane: no lift-off at all after the first contact
    assert phis[:, closed].max() <= 1e-3
    if body == "box":
        assert tr.v[-1, 0] == pytest.approx(G * (math.sin(ALPHA) - mu * math.cos(ALPHA)) * 0.3, rel=0.02)
    else:
        assert tr.v[-1, 0] > 0.5 * G * math.sin(ALPHA) * 0.3 * 5 / 7


@pytest.mark.parametrize("body", ["box", "sphere"])
def test_sticks_or_rolls_above_the_slip_threshold(body: str) -> None:
    """5 % above the threshold, 0.3 s. The box sticks: its creep speed is at most ``mu d / T``
    (``T = CREEP_TIME``; measured 0.57 mm/s against 0.61) and it moves at most that times the
    time plus one design depth of settling (measured 0.59 mm); the sphere rolls at ``5/7 g sin a``
    to 1 %."""
    mu = 1.05 * THRESHOLD[body]
    s = BUILD[body](mu, ALPHA)
    ts, tr, phis = _simulate(s, 30)
    tol = ts.formulation.physics_tolerances(s, H)
    closed = s.eval_phi(np.asarray(s.q_nominal, dtype=float)) <= 1e-9
    assert tr.n_failed == 0
    assert -phis.min() <= tol.penetration and phis[:, closed].max() <= 1e-3
    if body == "box":
        bound = mu * DESIGN_DEPTH / CREEP_TIME
        creep = (tr.q[-1, 0] - tr.q[15, 0]) / (tr.t[-1] - tr.t[15])
        assert 0.0 < creep <= bound
        assert tr.q[-1, 0] <= bound * tr.t[-1] + DESIGN_DEPTH
    else:
        assert tr.v[-1, 0] == pytest.approx(5.0 / 7.0 * G * math.sin(ALPHA) * 0.3, rel=0.01)


@pytest.mark.parametrize("body", ["box", "sphere"])
@pytest.mark.parametrize("height,measured", [(0.05, 3.15e-3), (0.2, 4.87e-3)])
def test_dropped_body_stays_within_the_energy_bound(body: str, height: float, measured: float) -> None:
    """Dropped flat from ``height`` onto the level plane: the deepest penetration (3.2 mm from 0.05
    m, 4.9 mm from 0.2 m, the same for the sphere and the cube, whose corners each carry a quarter)
    lies below the declared tolerance (21 mm) and below the undamped energy bound at the impact
    speed; no contact pushes above the surface (the default damping is zero there); no rebound;
    at rest at the design depth."""
    s = BUILD[body](0.5)
    n = int((math.sqrt(2 * height / G) + 0.3) / H)
    ts, tr, phis = _simulate(s, n, z0=height)
    tol = ts.formulation.physics_tolerances(s, H)
    cs = contact_scale(s)
    K, v = cs.stiffness(), math.sqrt(2 * G * height)
    energy = (cs.load + math.sqrt(cs.load ** 2 + K * cs.mass * v * v)) / K
    depth = -phis.min()
    assert depth == pytest.approx(measured, rel=0.02)
    assert depth <= energy <= tol.penetration
    pushing = tr.p_n > 1e-9
    assert (phis[1:][pushing] <= 1e-9).all()  # force only where the step ends in contact
    bottom = s.eval_phi(np.asarray(s.q_nominal, dtype=float)) <= 1e-9
    first = int(np.argmin(phis.min(axis=1)))
    assert phis[first:, bottom].max() <= 1e-9  # no rebound
    np.testing.assert_allclose(phis[-1, bottom], -DESIGN_DEPTH, rtol=1e-3)


def test_the_associated_rule_lifts_a_sliding_box() -> None:
    """The documented artifact of ``associated=True``: the box of issue 35's kind (30 deg, mu = 0.3)
    slides 0.30 m in 0.5 s; the associated law lifts it (the sliding normal force is the spring's
    plus ``(h K + B) mu s``): its lowest corner ends 2.7 mm above the plane, and rising; the default
    law keeps the four bottom corners 0.44-0.83 mm inside."""
    s = box(0.3, ALPHA)
    _, tr_a, ph_a = _simulate(s, 50, associated=True)
    _, tr_n, ph_n = _simulate(s, 50)
    assert tr_n.q[-1, 0] == pytest.approx(tr_a.q[-1, 0], rel=0.02) and tr_n.q[-1, 0] > 0.29
    assert ph_a[-1].min() > 2e-3 and ph_a[-1].min() > ph_a[40].min()  # every corner off the plane, rising
    assert -1.1 * DESIGN_DEPTH <= ph_n[-1].min() and np.sort(ph_n[-1])[3] <= 0.0


def test_step_jacobian_sees_the_damping_ramp() -> None:
    """The default damping ``B_c max(0, -phi_k) / d`` is an expression of the state, so the step's
    Jacobian by the height ``z`` of a box pressed 0.7 mm into its springs (through ``phi_k``, the
    spring and the ramp) equals central differences (measured 3.5e-9 relative)."""
    from contactmp.models.systems import box_2d
    from contactmp.transcriptions.rollout_gradient import step_jacobian

    q, v, u = np.array([0.0, 0.1 - 7e-4, 0.0]), np.array([0.5, -0.1, 0.0]), np.array([1.0, 0.0, 0.0])
    s = box_2d(width=0.4, height=0.2, mu=0.5)
    ts = TimeStepping(s, H, "compliant", tol=1e-13)

    def step(dz: float) -> np.ndarray:
        out = ts.step(q + np.array([0.0, dz, 0.0]), v, u)
        return np.concatenate([out.q, out.v])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        J = step_jacobian(ts.formulation, s, H, q, v, u, ts.step(q, v, u))
        fd = (step(1e-7) - step(-1e-7)) / 2e-7
    dz = np.vstack([J.dq_dq, J.dv_dq])[:, 1]
    assert np.max(np.abs(dz - fd)) <= 1e-7 * np.max(np.abs(fd))
