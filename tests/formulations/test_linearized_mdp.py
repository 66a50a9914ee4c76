"""The linearized MDP QP (formulations/linearized_mdp.py): KKT and natural-map residuals, equality
with NMDP on a linear system, closed forms of both PD modes, and the Program block in LCP form."""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError, OptionError
from contactmp.formulations.linearized_mdp import (LinearizedMDP, add_linearized_mdp_step,
                                                   project_capped_simplices)
from contactmp.formulations.nmdp import NMDP
from contactmp.models.systems import box_2d, box_3d, point_mass_2d
from contactmp.program import Program
from contactmp.result import Status
from contactmp.solvers.registry import lcp_solver

MU, G0 = 0.5, 9.81
BOX = dict(q_n=np.array([0.0, 0.25 - 0.001, 0.05]), qd_n=np.array([0.3, -0.2, 0.1]), h=0.01,
           tau_0=np.array([1.0, 0.0, 0.0]))


@pytest.fixture(scope="module")
def box():
    return box_2d(m=1.0, mu=MU)


def test_qp_kkt_and_global_minimum(box):
    """Box on a penetrating corner: the QP answer is a verified minimizer (natural-map residual and
    KKT residual with qpOASES's multipliers ~ 0, multipliers >= 0, complementary), its objective is
    below that of random feasible points, and the kinetic energy matches the QP's value."""
    lm = LinearizedMDP(box, stiffness=1e5)
    r = lm.step(**BOX)
    assert r.status is Status.SOLVED and r.solver == "qpoases"
    assert r.residual <= 1e-10 and r.extras["kkt"] <= 1e-8
    lw, ls = r.extras["lam_w"], r.extras["lam_s"]
    assert lw.min() >= -1e-10 and ls.min() >= -1e-10
    assert np.max(np.abs(lw * r.extras["w"])) <= 1e-10
    Q, c = r.extras["Q"], r.extras["c"]
    f = lambda w: 0.5 * w @ Q @ w + c @ w  # noqa: E731
    rng = np.random.default_rng(1)
    for _ in range(200):
        z = rng.uniform(0, 1, 8)
        z = z / np.maximum(1.0, np.add.reduceat(z, [0, 2, 4, 6]).repeat(2))  # feasible
        assert f(r.extras["w"]) <= f(z) + 1e-12
    d = lm.qp(**BOX)
    K0 = 0.5 * d["qd_star"] @ d["M"] @ d["qd_star"]
    assert r.extras["kinetic_energy"] == pytest.approx(K0 + f(r.extras["w"]), rel=1e-10)
    assert np.allclose(r.extras["forces"][1:], 0.0) and r.extras["forces"][0, 0] > 0  # only the penetrating corner
    assert abs(r.extras["forces"][0, 1]) <= MU * r.extras["forces"][0, 0] + 1e-9


@pytest.mark.parametrize("q0, v0, tau_0", [
    ([0.0, 0.0], [0.0, 0.0], [0.0, 0.0]),      # resting
    ([0.0, 0.0], [0.0, 0.0], [2.0, 0.0]),      # sticking
    ([0.1, 0.0], [1.0, -0.5], [1.0, 0.0]),     # sliding into the ground
    ([0.0, 0.01], [0.0, 0.3], [0.0, 20.0]),    # pushed up
])
@pytest.mark.parametrize("kp, kd", [(0.0, 0.0), (3.0, 0.5)])
def test_point_mass_linearized_equals_nmdp(q0, v0, tau_0, kp, kd):
    """A point mass is linear and a constant pyramid does not depend on q, so the frozen QP with the
    stable PD (semi-implicit) is the NMDP step itself: same next state and forces."""
    s = point_mass_2d(m=1.0, mu=MU)
    kw = dict(vertices=2, stiffness=0.0, relax=100.0, kp=kp, kd=kd)
    step = (q0, v0, 0.01)
    extra = dict(q_d=[0.0, 0.02], qd_d=[0.1, 0.0], tau_0=tau_0)
    lin = LinearizedMDP(s, **kw).step(*step, **extra)
    nl = NMDP(s, **kw).solve_ipopt(*step, **extra)
    assert lin.success and nl.success, (lin.message, nl.message)
    np.testing.assert_allclose(lin.x, nl.x, atol=1e-9)
    np.testing.assert_allclose(lin.extras["forces"], nl.extras["forces"], atol=1e-5)
    assert lin.extras["kinetic_energy"] == pytest.approx(nl.extras["kinetic_energy"], rel=1e-6, abs=1e-12)


def test_pd_modes_free_flight_closed_form():
    """No contact force (a polytope of height 0): the step is the PD-driven free flight.
    explicit: qd+ = qd_n + h (tau(q_n, qd_n) - m g e_z) / m;
    stable:   (m + h (h Kp + Kd)) qd+ = m qd_n + h (-Kp (q_n - q_d) + Kd qd_d + tau_0 - m g e_z)."""
    m, h, kp, kd = 2.0, 0.02, 50.0, 3.0
    s = point_mass_2d(m=m, mu=MU)
    qn, qdn, qd, qdd, t0 = (np.array(a) for a in ([0.1, 0.5], [0.2, -1.0], [0.0, 0.6], [0.3, 0.0], [1.0, 2.0]))
    ge = np.array([0.0, m * G0])
    ex = LinearizedMDP(s, kp=kp, kd=kd, pd="explicit").step(qn, qdn, h, qd, qdd, t0)
    st = LinearizedMDP(s, kp=kp, kd=kd, pd="stable").step(qn, qdn, h, qd, qdd, t0)
    tau_ex = -kp * (qn - qd) - kd * (qdn - qdd) + t0
    np.testing.assert_allclose(ex.extras["qd_next"], qdn + h * (tau_ex - ge) / m, rtol=1e-12)
    v_st = (m * qdn + h * (-kp * (qn - qd) + kd * qdd + t0 - ge)) / (m + h * (h * kp + kd))
    np.testing.assert_allclose(st.extras["qd_next"], v_st, rtol=1e-12)
    np.testing.assert_allclose(st.x, qn + h * v_st, rtol=1e-12)
    assert ex.success and st.success and np.all(ex.extras["w"] == 0) and np.all(st.extras["forces"] == 0)


def test_block_lcp_equals_qp_step(box):
    """The Program block (LCP form) with numeric q0, v0, u, reduced by to_lcp and solved by Lemke,
    gives the QP step's velocity and forces; the QP answer with sigma = lam_s / h satisfies the
    block's conditions."""
    h = BOX["h"]
    lm = LinearizedMDP(box, stiffness=1e5)
    r = lm.step(**BOX)
    prog = Program("lmdp")
    blk = add_linearized_mdp_step(prog, box, BOX["q_n"], BOX["qd_n"], BOX["tau_0"], h, stiffness=1e5)
    red = prog.to_lcp()
    res = lcp_solver("lemke")(red.M, red.q)
    assert res.success
    x = red.invert(res.x)
    np.testing.assert_allclose(prog.value(blk.v_next, x), r.extras["qd_next"], atol=1e-9)
    mags = np.array([1e5 * min(p, 0.0) ** 2 for p in box.eval_phi(BOX["q_n"])])
    fn = mags * prog.value(blk.w, x).reshape(-1, 2).sum(axis=1)
    np.testing.assert_allclose(fn, r.extras["forces"][:, 0], atol=1e-7)
    x2 = np.zeros(prog.n_x)
    x2[blk.v_next.index], x2[blk.w.index], x2[blk.sigma.index] = r.extras["qd_next"], r.extras["w"], r.extras["lam_s"] / h
    res2 = prog.residuals(x2)
    assert res2["constraint"] <= 1e-9 and res2["comp_min"] <= 1e-9 and res2["bound"] == 0.0, res2


def test_project_capped_simplices():
    """Projection onto {w >= 0, sum_g w <= 1}: feasible, idempotent, and the variational inequality
    (y - P y)^T (z - P y) <= 0 for feasible z."""
    rng = np.random.default_rng(3)
    groups = [np.arange(0, 3), np.arange(3, 7)]
    for _ in range(50):
        y = rng.normal(scale=1.5, size=7)
        p = project_capped_simplices(y, groups)
        assert p.min() >= 0 and all(p[g].sum() <= 1 + 1e-12 for g in groups)
        np.testing.assert_allclose(project_capped_simplices(p, groups), p, atol=1e-12)
        for _ in range(20):
            z = rng.uniform(0, 1, 7)
            for g in groups:
                z[g] /= max(1.0, z[g].sum())
            assert (y - p) @ (z - p) <= 1e-10


def test_input_errors():
    s = point_mass_2d()
    with pytest.raises(InputError) as e:
        LinearizedMDP(box_3d(), kp=1.0)  # a torque on a quaternion body's omega has no position to hold
    assert e.value.field == "kp"
    for kw, name in ((dict(vertices=3), "vertices"), (dict(stiffness=-1.0), "stiffness"),
                     (dict(relax=np.inf), "relax"), (dict(radius=np.nan), "radius"),
                     (dict(kp=[1.0]), "kp"), (dict(kd=-1.0), "kd")):
        with pytest.raises(InputError) as e:
            LinearizedMDP(s, **kw)
        assert e.value.field == name
    with pytest.raises(OptionError):
        LinearizedMDP(s, pd="implicit")
    lm = LinearizedMDP(s, relax=10.0)
    for args, name in ((([0.0], [0.0, 0.0], 0.01), "q_n"), (([0.0, 0.0], [0.0, 0.0], -0.01), "h")):
        with pytest.raises(InputError) as e:
            lm.step(*args)
        assert e.value.field == name
    with pytest.raises(InputError) as e:
        add_linearized_mdp_step(Program(), s, [0.0, 0.0], [0.0], [0.0, 0.0], 0.01)
    assert e.value.field == "v0"
