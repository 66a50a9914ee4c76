"""The velocity-level Coulomb-cone step as a Program block: closed-form answers (point mass, 3D box)."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.velocity_cone import VelocityConeStep, add_velocity_cone_step
from contactmp.formulations.velocity_pyramid import add_velocity_pyramid_step
from contactmp.models.systems import box_3d
from contactmp.program import Program
from contactmp.result import Status
from contactmp.solvers import solve_lcp
from contactmp.solvers.nlp.solve import solve_program

m, g, h, MU = 2.0, 9.81, 0.01, 0.3


def _point_mass(force, v0, planar: bool, phi: float = 0.0, prog=None, prefix="step"):
    """A point mass on the ground z = 0 (3D: q = (x, y, z); planar: q = (x, z)) under ``force``."""
    prog = prog or Program("point_mass")
    if planar:
        data = dict(M=m * np.eye(2), f=[force[0], -m * g], Jn=[[0, 1.0]], Jt=[[1.0, 0]], Jo=[[0, 0.0]])
    else:
        data = dict(M=m * np.eye(3), f=[force[0], force[1], -m * g], Jn=[[0, 0, 1.0]], Jt=[[1.0, 0, 0]],
                    Jo=[[0, 1.0, 0]])
    st = add_velocity_cone_step(prog, v=v0, mu=[MU], phi=[phi], h=h, prefix=prefix, **data)
    return prog, st


def _solve(prog: Program, strategy: str = "direct"):
    res = solve_program(prog, strategy=strategy)
    assert res.status is Status.SOLVED, res.message
    assert res.residuals["comp_min"] <= 1e-8 and res.residuals["constraint"] <= 1e-8
    return res


DIRS = [(1.0, 0.0), (0.6, 0.8), (-np.sqrt(0.5), np.sqrt(0.5))]


@pytest.mark.parametrize("planar", [False, True])
@pytest.mark.parametrize("direction", DIRS)
def test_push_below_mu_m_g_sticks(planar: bool, direction) -> None:
    """|F| = 0.6 mu m g: static friction holds the mass, p_T = -F h inside the cone."""
    d = np.array(direction) if not planar else np.array([np.sign(direction[0]), 0.0])
    F = 0.6 * MU * m * g * d
    prog, st = _point_mass(F, np.zeros(2 if planar else 3), planar)
    res = _solve(prog)
    p_n = res.value(st.p_n)
    P = st.friction_impulse(res.x)[0]
    np.testing.assert_allclose(p_n, [m * g * h], atol=1e-8)
    np.testing.assert_allclose(res.value(st.v_next), 0.0, atol=1e-8)
    np.testing.assert_allclose(P, -F * h, atol=1e-8)  # friction balances the push exactly
    assert np.linalg.norm(P) <= MU * p_n[0] + 1e-9
    assert np.linalg.norm(P) < 0.61 * MU * p_n[0]  # strictly inside: sticking, not sliding
    np.testing.assert_allclose(res.value(st.gamma), 0.0, atol=1e-8)


@pytest.mark.parametrize("strategy", ["direct", "scholtes", "elastic_l1"])
@pytest.mark.parametrize("planar", [False, True])
@pytest.mark.parametrize("direction", DIRS)
def test_push_above_mu_m_g_slides_against_friction(strategy: str, planar: bool, direction) -> None:
    """|F| = 2 mu m g: the mass slides along F, v+ = (|F| - mu m g) h / m, and the friction is
    -mu p_n times the unit sliding direction (on the cone's boundary, opposite to v+)."""
    d = np.array(direction) if not planar else np.array([np.sign(direction[0]), 0.0])
    F = 2.0 * MU * m * g * d
    prog, st = _point_mass(F, np.zeros(2 if planar else 3), planar)
    res = _solve(prog, strategy)
    p_n = res.value(st.p_n)[0]
    vt = res.value(st.v_next)[:-1]  # tangential velocity (x, y) or (x)
    P = st.friction_impulse(res.x)[0][: vt.size]
    np.testing.assert_allclose(p_n, m * g * h, atol=1e-7)
    speed = (2.0 * MU * m * g - MU * m * g) * h / m
    np.testing.assert_allclose(vt, speed * d[: vt.size], atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(P), MU * p_n, atol=1e-8)  # on the boundary
    np.testing.assert_allclose(P, -MU * p_n * vt / np.linalg.norm(vt), atol=1e-7)  # opposite to v+
    np.testing.assert_allclose(res.value(st.gamma), np.linalg.norm(vt), atol=1e-7)  # gamma = |u_T|


def test_planar_cone_is_the_even_pyramid() -> None:
    """Planar: one tangent, w scalar, no p_o; the step equals the 4-facet pyramid step (Lemke) exactly."""
    for v0, fx in [(0.0, 0.5), (0.0, 10.0), (0.01, 0.0), (1.0, 0.0), (-0.5, 3.0), (0.02, -7.0)]:
        prog, st = _point_mass([fx, 0.0], [v0, 0.0], planar=True)
        assert st.planar and st.p_o is None and st.w.size == 1 and isinstance(st, VelocityConeStep)
        res = _solve(prog)
        pp = Program("pyramid")
        sp = add_velocity_pyramid_step(pp, M=m * np.eye(2), f=[fx, -m * g], v=[v0, 0.0], Jn=[[0, 1.0]],
                                       Jt=[[1.0, 0]], Jo=[[0, 0.0]], mu=[MU], phi=[0.0], h=h, facets=4)
        red = pp.to_lcp()
        lcp = solve_lcp(red.M, red.q, solver="lemke")
        assert lcp.success
        x = red.invert(lcp.x)
        np.testing.assert_allclose(res.value(st.v_next), pp.value(sp.v_next, x), atol=1e-8)
        np.testing.assert_allclose(res.value(st.p_n), pp.value(sp.p_n, x), atol=1e-8)
        P = st.friction_impulse(res.x)
        np.testing.assert_allclose(P[:, 0], sp.friction_impulse(pp.value(sp.beta, x))[:, 0], atol=1e-8)
        assert P[0, 1] == 0.0  # (the pyramid's o weights act through Jo = 0: no force)


def _box_step(v0: np.ndarray):
    box = box_3d(m=1.0, size=0.5, mu=0.5)
    q = np.array(box.q_nominal)
    Jn, Jt, Jo = box.eval_J(q)
    data = dict(M=box.eval_M(q), f=-box.eval_h(q, v0), v=v0, Jn=Jn, Jt=Jt, Jo=Jo, mu=box.mu,
                phi=box.eval_phi(q), h=h)
    return box, data


def test_box_3d_sliding_diagonally_friction_opposes_velocity() -> None:
    """A box sliding at 30 degrees: the cone's friction is exactly opposite to the sliding
    velocity at every corner (the square pyramid's is 15 degrees off, at its 45-degree vertex)."""
    th = np.deg2rad(30.0)
    d = np.array([np.cos(th), np.sin(th)])
    box, data = _box_step(np.array([d[0], d[1], 0.0, 0.0, 0.0, 0.0]))
    prog = Program("box")
    st = add_velocity_cone_step(prog, **data)
    assert not st.planar and st.w.size == 16
    res = _solve(prog)
    vp = res.value(st.v_next)
    p_n = res.value(st.p_n)
    P = st.friction_impulse(res.x)
    # no rotation, the weight carried by the four bottom corners, Coulomb deceleration along d
    np.testing.assert_allclose(vp, [*(1.0 - 0.5 * g * h) * d, 0, 0, 0, 0], atol=1e-7)
    np.testing.assert_allclose(p_n.sum(), g * h, atol=1e-8)
    np.testing.assert_allclose(p_n[1::2], 0.0, atol=1e-8)  # top corners
    u = np.c_[data["Jt"] @ vp, data["Jo"] @ vp]
    for j in np.flatnonzero(p_n > 1e-6):
        np.testing.assert_allclose(P[j], -0.5 * p_n[j] * u[j] / np.linalg.norm(u[j]), atol=1e-8)
    total = P.sum(axis=0)
    # the angle between -total and d by atan2 (arccos of a rounded cosine just above 1 is NaN)
    ang = np.degrees(np.arctan2(abs(total[0] * d[1] - total[1] * d[0]), -total @ d))
    assert ang <= 1e-5
    # the square pyramid on the same step
    pp = Program("pyramid")
    sp = add_velocity_pyramid_step(pp, facets=4, **data)
    red = pp.to_lcp()
    lcp = solve_lcp(red.M, red.q, solver="lemke")
    assert lcp.success
    Fp = sp.friction_impulse(pp.value(sp.beta, red.invert(lcp.x))).sum(axis=0)
    ang_p = np.degrees(np.arccos(-Fp @ d / np.linalg.norm(Fp)))
    assert ang_p == pytest.approx(15.0, abs=1e-6)


def test_blocks_stack_over_steps() -> None:
    prog, s1 = _point_mass([0.0, 0.0], [1.0, 0.0, 0.0], planar=False, prefix="k0")
    _, s2 = _point_mass([0.0, 0.0], s1.v_next.sym, planar=False, prog=prog, prefix="k1")
    assert {"k0", "k1"} <= set(prog.blocks)
    res = _solve(prog)
    np.testing.assert_allclose(res.value(s2.v_next), [1.0 - 2 * MU * g * h, 0, 0], atol=1e-8)


def test_separated_mass_falls_freely_without_friction() -> None:
    prog, st = _point_mass([0.0, 0.0], [0.5, 0.0, 0.0], planar=False, phi=0.1)
    res = _solve(prog)
    np.testing.assert_allclose(res.value(st.p_n), 0.0, atol=1e-9)
    np.testing.assert_allclose(st.friction_impulse(res.x), 0.0, atol=1e-9)
    np.testing.assert_allclose(res.value(st.v_next), [0.5, 0, -g * h], atol=1e-8)


def test_program_is_a_square_mcp() -> None:
    """Free variables pair with the equality rows, p_n and gamma with their slacks (no extra
    slack variables), and the IPOPT answer solves that MCP."""
    th = np.deg2rad(30.0)
    _, data = _box_step(np.array([np.cos(th), np.sin(th), 0.0, 0.0, 0.0, 0.0]))
    prog = Program("box")
    add_velocity_cone_step(prog, **data)
    red = prog.to_mcp()
    assert red.n == prog.n_x
    z = _solve(prog).x
    F = np.asarray(red.F_fun(z, red.p0), dtype=float).ravel()
    free = np.isinf(red.lb) & np.isinf(red.ub)
    assert np.abs(F[free]).max() <= 1e-8
    assert (red.lb[~free] == 0.0).all() and np.abs(np.minimum(z[~free], F[~free])).max() <= 1e-8


def test_bad_input_names_the_field() -> None:
    with pytest.raises(InputError, match="mu"):
        add_velocity_cone_step(Program(), M=np.eye(3), f=[0, 0, 0], v=[0, 0, 0], Jn=[[0, 0, 1.0]],
                               Jt=[[1.0, 0, 0]], Jo=[[0, 1.0, 0]], mu=[-0.1], phi=[0.0], h=h)
    with pytest.raises(InputError, match="M"):
        add_velocity_cone_step(Program(), M=-np.eye(3), f=[0, 0, 0], v=[0, 0, 0], Jn=[[0, 0, 1.0]],
                               Jt=[[1.0, 0, 0]], Jo=[[0, 1.0, 0]], mu=[0.1], phi=[0.0], h=h)
    with pytest.raises(InputError, match="Jo"):
        add_velocity_cone_step(Program(), M=np.eye(3), f=[0, 0, 0], v=[0, 0, 0], Jn=[[0, 0, 1.0]],
                               Jt=[[1.0, 0, 0]], Jo=[[0, 1.0, 0]], mu=[0.1], phi=[0.0], h=h, planar=True)
    with pytest.raises(InputError, match="Jt"):
        add_velocity_cone_step(Program(), M=np.eye(3), f=[0, 0, 0], v=[0, 0, 0], Jn=[[0, 0, 1.0]],
                               Jt=[[1.0, 0]], Jo=[[0, 1.0, 0]], mu=[0.1], phi=[0.0], h=h)
    with pytest.raises(InputError, match="h"):
        add_velocity_cone_step(Program(), M=np.eye(3), f=[0, 0, 0], v=[0, 0, 0], Jn=[[0, 0, 1.0]],
                               Jt=[[1.0, 0, 0]], Jo=[[0, 1.0, 0]], mu=[0.1], phi=[0.0], h=0.0)
    _, st = _point_mass([0.0, 0.0], [0.0, 0.0, 0.0], planar=False)
    with pytest.raises(InputError, match="x"):
        st.friction_impulse(np.zeros(3))
