"""ContactImplicitTO(formulation="compliant"): each step is CompliantFriction's cone QP (through its KKT
conditions), the optimum replays through TimeStepping(formulation="compliant"), and the rigid cone
optimum is the limit K, Bt -> inf."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.compliant_friction import CompliantFriction
from contactmp.models.systems import box_2d, point_mass_2d
from contactmp.result import Status
from contactmp.formulations.base import FORMULATIONS
from contactmp.transcriptions.contact_implicit import ContactImplicitTO
from contactmp.transcriptions.time_stepping import TimeStepping

MASS, MU, G = 1.0, 0.5, 9.81
# box gains: static penetration m g / (2 K) ~ 1 mm per corner, near-critical damping, small creep
BOX = {"stiffness": 5.0e3, "damping": 100.0, "tangential_damping": 2.5e3}


def _one_step(friction: str, q0: list[float], v0: list[float], u0: list[float], h: float = 0.05):
    """The N = 1 transcription with q0, v0, u0 fixed (a square MCP: the step itself)."""
    system = box_2d(m=MASS, width=0.4, height=0.2, mu=MU)
    to = ContactImplicitTO(system, 1, h, formulation="compliant", friction=friction, associated=True, **BOX)
    to.set_initial_state(q0, v0)
    to.bound_inputs(u0, u0)
    r = to.solve(strategy="scholtes")
    q, v, u = np.asarray(q0), np.asarray(v0), np.asarray(u0)
    Jn, Jt, _ = system.eval_J(q)
    qp = CompliantFriction(system.eval_M(q), system.eval_B(q) @ u - system.eval_h(q, v), v, Jn, Jt, None,
                           system.eval_phi(q), system.mu, BOX["stiffness"], BOX["damping"],
                           BOX["tangential_damping"], h).solve(tol=1e-10)
    return r, qp, h


@pytest.mark.parametrize("friction", ["cone", "pyramid"])
@pytest.mark.parametrize("case,v0,u0,modes", [
    ("resting", [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], ["stick", "stick"]),   # pushed below mu m g
    ("sliding", [1.0, 0.0, 0.0], [0.0, 0.0, 0.0], ["slide", "slide"]),
])
def test_one_step_equals_compliant_friction_qp(friction, case, v0, u0, modes) -> None:
    z_rest = 0.1 - MASS * G / (2 * BOX["stiffness"])
    r, qp, h = _one_step(friction, [0.0, z_rest, 0.0], v0, u0)
    assert r.status is Status.SOLVED and qp.status is Status.SOLVED
    assert qp.extras["modes"][:2] == modes
    lam = qp.x
    np.testing.assert_allclose(r.p_n[0], h * lam[0::2], atol=1e-6)
    np.testing.assert_allclose(r.p_t[0], h * lam[1::2], atol=1e-6)
    np.testing.assert_allclose(r.v[1], qp.extras["v1"], atol=1e-6)
    if case == "sliding":  # friction at the cone's boundary, against the motion
        np.testing.assert_allclose(r.p_t[0, :2], -MU * r.p_n[0, :2], atol=1e-7)
    else:  # at rest on the springs, pushed: the supports carry the weight
        assert abs(r.p_n[0].sum() - MASS * G * h) < 0.05 * MASS * G * h


def _push(formulation: str, N: int = 10, h: float = 0.1, z0: float = 0.0, **gains):
    system = point_mass_2d(m=MASS, mu=MU, g=G)
    to = ContactImplicitTO(system, N, h, formulation=formulation, **gains)
    to.set_initial_state([0.0, z0], [0.0, 0.0])
    to.set_final_state([0.5, z0], q_indices=[0])
    to.bound_inputs([-20.0, 0.0], [20.0, 0.0])
    to.minimize_effort(1.0)
    return system, to


# point mass on one contact: K = 1e4 N/m (m g / K ~ 1 mm), critical B = 2 sqrt(K m), creep < 5 mm/s
PM = {"stiffness": 1.0e4, "damping": 200.0, "tangential_damping": 1.0e3}


def test_push_replays_through_time_stepping() -> None:
    z0 = -MASS * G / PM["stiffness"]
    system, to = _push("compliant", z0=z0, **PM)
    r = to.solve(strategy="elastic_l1")
    assert r.success and r.comp_violation <= 1e-8, r.status
    np.testing.assert_allclose(r.q[-1, 0], 0.5, atol=1e-8)
    ts = TimeStepping(system, to.h, formulation="compliant", active_gap=np.inf, tol=1e-10, **PM)
    sim = ts.simulate(r.q[0], r.v[0], r.u, n_steps=to.N)
    assert all(s is Status.SOLVED for s in sim.status)
    err = max(np.abs(sim.q - r.q).max(), np.abs(sim.v - r.v).max())
    print("replay: max state error", err)
    assert err < 1e-6, err
    np.testing.assert_allclose(sim.p_n, r.p_n, atol=1e-7)
    np.testing.assert_allclose(sim.p_t, r.p_t, atol=1e-7)
    # sliding steps ride above the spring's depth (the associated law's (h + B/K) mu gamma layer), so
    # the normal impulse is not m g h step by step, but the springs carry the weight on average
    assert abs(r.p_n.sum() - MASS * G * to.h * to.N) < 0.1 * MASS * G * to.h * to.N


def test_stiff_limit_approaches_rigid_cone() -> None:
    """Non-associated compliant law: K, Bt -> inf gives the rigid cone step (D K -> 1/h, D -> 0).
    Both programs start from their own guess of the same motion: the cone's default pyramid start
    reaches another minimizer of the same cost (to 3e-9; the push's optimal inputs are not unique)."""
    _, rigid = _push("cone")
    rr = rigid.solve(strategy="scholtes", pyramid_start=False)
    assert rr.success
    gaps = []
    for K in (1e4, 1e8):
        gains = {"stiffness": K, "damping": 0.0, "tangential_damping": K}
        _, comp = _push("compliant", z0=-MASS * G / K, associated=False, **gains)
        rc = comp.solve(strategy="scholtes")
        assert rc.success
        gaps.append((abs(rc.objective - rr.objective) / rr.objective, np.abs(rc.u - rr.u).max(),
                     np.abs(rc.q[:, 0] - rr.q[:, 0]).max()))
    print("relative cost gap, max |du|, max |dx| for K = 1e4, 1e8:", gaps)
    assert gaps[1][0] <= gaps[0][0]
    assert gaps[1][0] < 1e-4 and gaps[1][1] < 1e-2 and gaps[1][2] < 1e-4, gaps


def test_formulation_registered() -> None:
    assert "compliant" in FORMULATIONS


@pytest.mark.parametrize("gains,field", [
    ({"stiffness": -1.0, "tangential_damping": 1.0}, "stiffness"),
    ({"stiffness": 1.0, "damping": [1.0, 2.0], "tangential_damping": 1.0}, "damping"),
    ({"stiffness": 1.0, "damping": np.nan, "tangential_damping": 1.0}, "damping"),
    ({"stiffness": 1.0, "tangential_damping": 0.0}, "tangential_damping"),
    ({"stiffness": 0.0, "damping": 0.0, "tangential_damping": 1.0}, "stiffness"),
    ({"stiffness": 1.0, "tangential_damping": 1.0, "compliant_friction": "disk"}, "compliant_friction"),
])
def test_bad_gains_name_the_field(gains, field) -> None:
    with pytest.raises(InputError) as exc:
        ContactImplicitTO(point_mass_2d(), 2, 0.1, formulation="compliant", **gains)
    assert exc.value.field == field


def test_underived_gains_name_the_field() -> None:
    """A point mass without gravity has no load to derive the spring from: the error names
    ``stiffness``, and with a stiffness given, ``tangential_damping`` (derived from the same load)."""
    with pytest.raises(InputError) as exc:
        ContactImplicitTO(point_mass_2d(g=0.0), 2, 0.1, formulation="compliant")
    assert exc.value.field == "stiffness"
    with pytest.raises(InputError) as exc:
        ContactImplicitTO(point_mass_2d(g=0.0), 2, 0.1, formulation="compliant", stiffness=1.0, damping=0.0)
    assert exc.value.field == "tangential_damping"
