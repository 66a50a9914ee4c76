"""NMDP (formulations/nmdp.py): agreement with the pyramid LCP at small steps, both IPOPT backends,
the KKT Program block, the derivative callables of NMDPFunctions, and input validation."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.formulations.nmdp import NMDP, add_nmdp_step, vertex_coefficients
from contactmp.models.symbolic import ContactSystem
from contactmp.models.systems import box_2d, box_3d, hopper_2d, point_mass_2d
from contactmp.program import Program
from contactmp.result import Status
from contactmp.transcriptions.time_stepping import TimeStepping

MU = 0.5
G0 = 9.81


@pytest.fixture(scope="module")
def point_mass():
    return point_mass_2d(m=1.0, mu=MU)


@pytest.fixture(scope="module")
def pyramid_nmdp(point_mass):
    # constant-magnitude pyramid polytope: k = 0, height relax = 100 N (>> m g)
    return NMDP(point_mass, vertices=2, stiffness=0.0, relax=100.0)


@pytest.fixture(scope="module")
def box():
    return box_2d(m=1.0, mu=MU)


@pytest.fixture(scope="module")
def box_nmdp(box):
    return NMDP(box, stiffness=1e5, relax=0.0, radius=0.0, kp=[0.0, 0.0, 2.0], kd=[0.0, 0.0, 0.1])


BOX_STEP = dict(q_n=np.array([0.0, 0.25 - 0.001, 0.05]), qd_n=np.array([0.3, -0.2, 0.1]), h=0.01,
                q_d=np.array([0.0, 0.0, 0.0]), tau_0=np.array([1.0, 0.0, 0.0]))


@pytest.mark.parametrize("v0, u", [
    ([0.0, 0.0], [0.0, 0.0]),        # resting
    ([0.0, 0.0], [2.0, 0.0]),        # pushed, sticking: |f_t| = 2 < mu m g
    ([0.0, -1e-3], [0.0, 0.0]),      # small impact, then resting
    ([1e-3, 0.0], [-1.0, 0.0]),      # slow tangential motion stopped by static friction
])
def test_nmdp_equals_pyramid_lcp_when_resting_or_sticking(point_mass, pyramid_nmdp, v0, u):
    """One contact, a constant pyramid polytope (V = 2: n +- mu t, height 100 N), h = 1e-3.

    When the contact ends the step at rest (resting or sticking), the LCP's answer gives
    ``v+ = 0``: kinetic energy 0, the global minimum of the MDP, and (with the polytope tall
    enough) the force that achieves it, ``f = -M v0/h + h_b - B u`` in contact coordinates, is
    unique and lies in the polytope; so both must return the same force. In sliding the two need
    not agree: the MDP minimizes the whole kinetic energy over the polytope and may pick a normal
    force above what non-penetration needs (lift-off buys more friction), while the LCP enforces
    non-penetration by its own complementarity and takes the least normal force.
    TimeStepping's planar pyramid uses facets=4 (its polygon gives the exact segment
    ``|p_t| <= mu p_n``; facets=2 is rejected there); its impulses divided by h are forces.
    """
    h = 1e-3
    q0 = np.zeros(2)
    lcp = TimeStepping(point_mass, h, "pyramid", facets=4).step(q0, v0, u)
    assert lcp.success
    res = pyramid_nmdp.solve_ipopt(q0, v0, h, tau_0=u)  # kp = kd = 0: tau = tau_0 = u
    assert res.status is Status.SOLVED, res.message
    np.testing.assert_allclose(res.extras["forces"][:, 0], lcp.p_n / h, atol=1e-4)
    np.testing.assert_allclose(res.extras["forces"][:, 1:][:, 0], lcp.p_t / h, atol=1e-4)
    np.testing.assert_allclose(res.extras["qd_next"], lcp.v, atol=1e-6)
    # closed form (v+ = 0): f = -m v0/h + (0, m g) - u, components (t, n) = (x, z)
    f = -np.asarray(v0) / h + np.array([0.0, G0]) - np.asarray(u)
    np.testing.assert_allclose([res.extras["forces"][:, 1:][0, 0], res.extras["forces"][:, 0][0]], f, atol=1e-4)


@pytest.mark.parametrize("v0", [[1.0, 0.0], [2.0, -0.05]])
def test_nmdp_sliding_dissipates_at_least_as_much_as_lcp(point_mass, pyramid_nmdp, v0):
    """Sliding: the LCP's force is feasible for the MDP (inside the polytope: checked), so the MDP's
    kinetic energy after the step is <= the LCP's (maximal dissipation over a larger set)."""
    h = 1e-3
    lcp = TimeStepping(point_mass, h, "pyramid", facets=4).step(np.zeros(2), v0)
    assert lcp.success and lcp.p_n[0] / h <= 100.0 and abs(lcp.p_t[0]) <= MU * lcp.p_n[0] + 1e-12
    res = pyramid_nmdp.solve_ipopt(np.zeros(2), v0, h)
    assert res.status is Status.SOLVED, res.message
    k_lcp = 0.5 * float(lcp.v @ lcp.v)
    assert res.extras["kinetic_energy"] <= k_lcp + 1e-9
    # forces stay in the polytope: |f_t| <= mu f_n, f_n <= 100
    assert abs(res.extras["forces"][:, 1:][0, 0]) <= MU * res.extras["forces"][:, 0][0] + 1e-8
    assert res.extras["forces"][:, 0][0] <= 100.0 + 1e-8


def test_backends_agree(box_nmdp):
    """casadi nlpsol and cyipopt solve the same step (box on a corner, penetration-dependent
    polytope, stable PD on the angle) to the same answer."""
    a = box_nmdp.solve_ipopt(**BOX_STEP, backend="casadi")
    b = box_nmdp.solve_ipopt(**BOX_STEP, backend="cyipopt")
    assert a.success and b.success, (a.message, b.message)
    assert (a.solver, b.solver) == ("ipopt/casadi", "ipopt/cyipopt")
    np.testing.assert_allclose(a.x, b.x, atol=1e-9)
    np.testing.assert_allclose(a.extras["forces"], b.extras["forces"], atol=1e-6)
    np.testing.assert_allclose(a.extras["nu"], b.extras["nu"], atol=1e-6)
    assert a.extras["forces"][0, 0] > 0 and np.allclose(a.extras["forces"][1:], 0.0)  # only the penetrating corner
    # the independent residual
    F = box_nmdp.functions(**BOX_STEP)
    assert np.max(np.abs(F.G(a.x, a.extras["w"]))) <= 1e-6


@pytest.mark.parametrize("backend", ["casadi", "cyipopt"])
def test_kkt_block_vanishes_at_ipopt_solution(box, backend):
    """The KKT block (tau = B u, no PD) built from the IPOPT answer and multipliers of the same step
    (NMDP without PD gains, tau_0 = u) has vanishing residuals; a wrong multiplier does not."""
    nm = NMDP(box, stiffness=1e5, relax=0.0)
    u = BOX_STEP["tau_0"]
    a = nm.solve_ipopt(BOX_STEP["q_n"], BOX_STEP["qd_n"], BOX_STEP["h"], tau_0=u, backend=backend)
    assert a.success, a.message
    prog = Program("kkt")
    q0, v0 = prog.add_variables("q0", 3), prog.add_variables("v0", 3)
    q1, uu = prog.add_variables("q1", 3), prog.add_variables("u", 3)
    blk = add_nmdp_step(prog, box, q0.sym, v0.sym, q1.sym, uu.sym, BOX_STEP["h"], stiffness=1e5)
    x = np.zeros(prog.n_x)
    for hd, val in ((q0, BOX_STEP["q_n"]), (v0, BOX_STEP["qd_n"]), (q1, a.x), (uu, u), (blk.w, a.extras["w"]),
                    (blk.nu, a.extras["nu"]), (blk.lam_w, a.extras["lam_w"]), (blk.lam_s, a.extras["lam_s"])):
        x[hd.index] = val
    r = prog.residuals(x)
    assert r["constraint"] <= 1e-7 and r["bound"] <= 1e-9 and r["comp_min"] <= 1e-7, r
    # the block's kinetic energy and velocity expressions agree with the step result
    f = ca.Function("f", [prog.x], [blk.kinetic_energy, blk.v_next])
    Ke, vn = f(x)
    assert float(Ke) == pytest.approx(a.extras["kinetic_energy"], rel=1e-10)
    np.testing.assert_allclose(np.asarray(vn).ravel(), a.extras["qd_next"], atol=1e-12)
    # a wrong multiplier breaks stationarity: the check is not vacuous
    x[blk.nu.index] += 1.0
    assert prog.residuals(x)["constraint"] > 1e-3


def test_nmdp_functions_derivatives(box, box_nmdp):
    """G_theta, G_w, K_grad, K_hess against central differences; G_theta_zo is G_theta without the
    derivative of the contact term W(theta) w; K and qd_next by their definitions."""
    F = box_nmdp.functions(**BOX_STEP)
    assert (F.n, F.n_w) == (3, 8) and [list(g) for g in F.groups] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    rng = np.random.default_rng(0)
    th = BOX_STEP["q_n"] + 0.01 * np.array([0.3, -0.2, 0.1]) + 1e-4 * rng.standard_normal(3)
    w = rng.uniform(0, 0.5, 8)
    eps = 1e-6
    E = np.eye(3)
    fd_G = np.column_stack([(F.G(th + eps * E[i], w) - F.G(th - eps * E[i], w)) / (2 * eps) for i in range(3)])
    np.testing.assert_allclose(F.G_theta(th, w), fd_G, rtol=1e-5, atol=1e-3)
    fd_Gw = np.column_stack([F.G(th, w + np.eye(8)[j]) - F.G(th, w) for j in range(8)])
    np.testing.assert_allclose(F.G_w(th), fd_Gw, atol=1e-8)
    # zeroth order: G_theta = G_theta_zo - (d/dtheta of W w through the magnitudes s_i only): the
    # vertices s_i(theta) b_j frozen, the Jacobians J_i(theta) still differentiated
    mags = box_nmdp._c.magnitudes
    s0 = np.asarray(mags(th)).ravel()
    per_contact = [F.G_w(th)[:, g] @ w[g] / s0[i] if s0[i] > 0 else np.zeros(3)   # -J_i^T B_i w_i / s_i
                   for i, g in enumerate(F.groups)]
    fd_s = np.column_stack([sum(((np.asarray(mags(th + eps * E[k])).ravel()[i]
                                  - np.asarray(mags(th - eps * E[k])).ravel()[i]) / (2 * eps)) * per_contact[i]
                                for i in range(len(F.groups))) for k in range(3)])
    np.testing.assert_allclose(F.G_theta(th, w), F.G_theta_zo(th, w) + fd_s, rtol=1e-5, atol=1e-3)
    assert np.max(np.abs(fd_s)) > 1.0  # the penetrating corner's polytope depends on theta
    fd_K = np.array([(F.K(th + eps * E[i]) - F.K(th - eps * E[i])) / (2 * eps) for i in range(3)])
    np.testing.assert_allclose(F.K_grad(th), fd_K, rtol=1e-6)
    fd_H = np.column_stack([(F.K_grad(th + eps * E[i]) - F.K_grad(th - eps * E[i])) / (2 * eps)
                            for i in range(3)])
    np.testing.assert_allclose(F.K_hess(th), fd_H, rtol=1e-5, atol=1e-3)
    qd = (th - BOX_STEP["q_n"]) / BOX_STEP["h"]
    M = box.eval_M(th)
    # effective metric A = M + h B diag(h Kp + Kd) B^T (B = I here; Kp = 2, Kd = 0.1 on the angle)
    A = M + BOX_STEP["h"] * np.diag(BOX_STEP["h"] * np.array([0.0, 0.0, 2.0]) + np.array([0.0, 0.0, 0.1]))
    assert F.K(th) == pytest.approx(0.5 * qd @ A @ qd, rel=1e-12)
    kinetic = NMDP(box, stiffness=1e5, kp=[0.0, 0.0, 2.0], kd=[0.0, 0.0, 0.1], objective="kinetic")
    assert kinetic.functions(**BOX_STEP).K(th) == pytest.approx(0.5 * qd @ M @ qd, rel=1e-12)
    np.testing.assert_allclose(F.qd_next(th), qd, rtol=1e-12)
    assert F.h == BOX_STEP["h"] and np.array_equal(F.q_n, BOX_STEP["q_n"])
    # G by its definition at the PD torque (kp = 2, kd = 0.1 on the angle)
    tau = np.array([1.0, 0.0, -2.0 * th[2] - 0.1 * qd[2]])
    h_b = box.eval_h(th, qd)
    Fc = -F.G_w(th) @ w
    np.testing.assert_allclose(F.G(th, w), M @ (qd - BOX_STEP["qd_n"]) / BOX_STEP["h"] + h_b - tau - Fc,
                               atol=1e-9)


def test_constant_polytope_has_no_vertex_derivative(point_mass, pyramid_nmdp):
    """Point mass, constant polytope: W does not depend on theta, so G_theta_zo = G_theta = M / h^2."""
    F = pyramid_nmdp.functions([0.0, 0.0], [0.0, 0.0], 0.01)
    th, w = np.array([0.01, -0.02]), np.array([0.2, 0.3])
    np.testing.assert_allclose(F.G_theta(th, w), F.G_theta_zo(th, w), atol=0)
    np.testing.assert_allclose(F.G_theta(th, w), np.eye(2) / 0.01**2, rtol=1e-12)
    # vertices: (n + mu t, n - mu t) scaled by 100 N, in generalized coordinates (x, z)
    np.testing.assert_allclose(-F.G_w(th), 100.0 * np.array([[MU, -MU], [1.0, 1.0]]), rtol=1e-12)


def test_hopper_step_with_stable_pd_is_solved():
    """Hopper standing on its foot (B selects (l, alpha)), stable PD holding the pose: one 20 ms step
    is solved and the foot force is upward and inside the friction cone."""
    s = hopper_2d()
    nm = NMDP(s, stiffness=1e6, relax=0.0, kp=[1e3, 50.0], kd=[10.0, 1.0])
    q = s.q_nominal - np.array([0.0, 0.002, 0.0, 0.0, 0.0])  # 2 mm penetration
    res = nm.solve_ipopt(q, np.zeros(5), 0.02, q_d=nm.S @ s.q_nominal)
    assert res.success, res.message
    assert res.extras["forces"][:, 0][0] > 0 and abs(res.extras["forces"][:, 1:][0, 0]) <= s.mu[0] * res.extras["forces"][:, 0][0] + 1e-8
    assert res.residual <= 1e-6 and res.extras["w_violation"] <= 1e-9


def test_vertex_coefficients():
    np.testing.assert_allclose(vertex_coefficients(2, True), [[1, 0], [-1, 0]])
    np.testing.assert_allclose(vertex_coefficients(4, False), [[1, 0], [0, 1], [-1, 0], [0, -1]], atol=1e-15)


def test_input_errors(point_mass):
    def field(fn):
        with pytest.raises(InputError) as ei:
            fn()
        return ei.value.field

    assert field(lambda: NMDP(box_3d(), kp=1.0)) == "kp"        # a torque on omega has no position to hold
    assert field(lambda: add_nmdp_step(Program(), box_3d(), np.zeros(7), np.zeros(6), np.zeros(7),
                                       np.zeros(6), 0.01)) == "system"  # the KKT block: minimal coordinates only
    assert field(lambda: NMDP("not a system")) == "system"
    assert field(lambda: NMDP(point_mass, vertices=4)) == "vertices"
    assert field(lambda: NMDP(point_mass, vertices=2.0)) == "vertices"
    assert field(lambda: NMDP(point_mass, stiffness=-1.0)) == "stiffness"
    assert field(lambda: NMDP(point_mass, relax=np.nan)) == "relax"
    assert field(lambda: NMDP(point_mass, relax=[1.0, 2.0])) == "relax"
    assert field(lambda: NMDP(point_mass, radius=np.inf)) == "radius"
    assert field(lambda: NMDP(point_mass, kp=[1.0, 2.0, 3.0])) == "kp"
    assert field(lambda: NMDP(point_mass, kd=-0.1)) == "kd"
    assert field(lambda: NMDP(point_mass, kd="x")) == "kd"
    nm = NMDP(point_mass, relax=10.0)
    assert field(lambda: nm.functions([0.0], [0.0, 0.0], 0.01)) == "q_n"
    assert field(lambda: nm.functions([0.0, 0.0], [0.0, np.nan], 0.01)) == "qd_n"
    assert field(lambda: nm.functions([0.0, 0.0], [0.0, 0.0], 0.0)) == "h"
    assert field(lambda: nm.functions([0.0, 0.0], [0.0, 0.0], 0.01, tau_0=[1.0])) == "tau_0"
    assert field(lambda: nm.solve_ipopt([0.0, 0.0], [0.0, 0.0], 0.01, w0=[1.0])) == "w0"
    with pytest.raises(OptionError):
        nm.solve_ipopt([0.0, 0.0], [0.0, 0.0], 0.01, backend="snopt")
    # B not a 0/1 selection
    q, v, u = ca.SX.sym("q", 2), ca.SX.sym("v", 2), ca.SX.sym("u", 1)
    bad = ContactSystem(q=q, v=v, u=u, M=ca.SX.eye(2), h=ca.vertcat(0, G0), B=ca.vertcat(1.0, 1.0),
                        phi=q[1], Jn=ca.horzcat(0, 1), Jt=ca.horzcat(1, 0), Jo=ca.SX.zeros(1, 2), mu=0.5,
                        planar=True)
    assert field(lambda: NMDP(bad)) == "B"
    prog = Program()
    assert field(lambda: add_nmdp_step(prog, point_mass, [0, 0], [0, 0], [0, 0, 0], [0, 0], 0.01)) == "q1"
    assert field(lambda: add_nmdp_step(prog, point_mass, [0, 0], [0, 0], [0, 0], [0, 0], -1.0)) == "h"


def test_solo12_sagittal_standing_step():
    """Solo12 in the sagittal plane (n = 11, 4 feet), penetration-dependent polytopes, stable PD
    holding the standing pose: 5 steps of 50 ms are solved; the feet carry the weight in the last
    step (sum of normal forces ~ m g, up to the PD's joint accelerations), each inside its cone."""
    from contactmp.models.urdf import solo12

    s = solo12(planar=True)
    nm = NMDP(s, stiffness=1e6, relax=0.0, kp=5.0, kd=0.1)
    q, v, h = s.q_nominal.copy(), np.zeros(s.n_v), 0.05
    for _ in range(5):
        r = nm.solve_ipopt(q, v, h, q_d=nm.S @ s.q_nominal)
        assert r.success, r.message
        q, v = r.x, r.extras["qd_next"]
    mass = s.eval_M(q)[0, 0]  # x translation of the floating base: the total mass
    assert np.all(r.extras["forces"][:, 0] > 0) and np.all(np.abs(r.extras["forces"][:, 1:][:, 0]) <= s.mu * r.extras["forces"][:, 0] + 1e-8)
    assert r.extras["forces"][:, 0].sum() == pytest.approx(mass * G0, rel=0.05)


@pytest.fixture(scope="module")
def spider_pair():
    """The spider's NMDP built from its inverse-dynamics Functions, and from M and h (the old graph)."""
    from contactmp.models.legged import spider

    fast, old = spider(), spider()
    del old.functions["inverse_dynamics"], old.functions["kinetic_energy"]
    opts = dict(stiffness=2.5e7, relax=1.0, kp=2000.0, kd=20.0)
    return NMDP(fast, **opts), NMDP(old, **opts)


def test_spider_step_graph_equals_the_lagrangian_one(spider_pair):
    """The small graph (inverse dynamics, tapes) gives the old graph's G, its Jacobians and K to rounding
    at a loaded frame, in a tenth of the instructions."""
    fast, old = spider_pair
    rng = np.random.default_rng(0)
    q = np.array(fast.system.q_nominal) + np.concatenate([[0.01, -0.003, 0.02], rng.normal(scale=0.02, size=16)])
    qd, h = rng.normal(scale=0.2, size=19), 0.02
    a, b = fast.functions(q, qd, h), old.functions(q, qd, h)
    assert a.tapes is not None and b.tapes is not None
    th, w = q + h * qd, np.full(16, 0.2)
    for name, args in (("G", (th, w)), ("G_theta", (th, w)), ("G_theta_zo", (th, w)), ("G_w", (th,)),
                       ("K", (th,)), ("K_grad", (th,)), ("K_hess", (th,))):
        x, y = np.asarray(getattr(a, name)(*args)), np.asarray(getattr(b, name)(*args))
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-11 * max(1.0, np.abs(y).max()), err_msg=name)
        # the tapes are the CasADi Functions' own values
        ref = getattr(fast._c, name)(*(args[:1] + ((args[1],) if len(args) > 1 else ()) + (a.params,))).full()
        np.testing.assert_array_equal(np.asarray(x).reshape(ref.shape), ref, err_msg=name)
    assert fast._c.G_theta.n_instructions() < 0.15 * old._c.G_theta.n_instructions()


@pytest.mark.parametrize("h", [0.01, 0.05])
def test_spider_frame_new_path_equals_old_answer(spider_pair, h):
    """One loaded spider frame: the new path (recursive dynamics, tapes, compiled PGM) and the old one
    (expanded Lagrangian, CasADi Functions, Python loop) give the same verified answer."""
    from contactmp.solvers.pgm.projected_gradient import pgm

    fast, old = spider_pair
    rng = np.random.default_rng(1)
    q = np.array(fast.system.q_nominal) + np.concatenate([[0.0, -0.003, 0.01], rng.normal(scale=0.01, size=16)])
    qd = np.concatenate([[0.1, -0.05, 0.0], rng.normal(scale=0.1, size=16)])
    a = pgm(fast.functions(q, qd, h), q + h * qd)
    p = old.parameters(q, qd, h)
    b = pgm(old._casadi_functions(p), q + h * qd)
    assert a.status is b.status is Status.SOLVED and a.iterations == b.iterations, (a.message, b.message)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.extras["w"], b.extras["w"], atol=1e-7)
