"""A formulation defined here, in the test file, runs through TimeStepping, ContactImplicitTO and
multistart without any change to transcriptions/, solvers/ or case_studies/ (the step protocol of
contactmp.formulations.base, worked example of docs/ARCHITECTURE.md).

The formulation is a penalty contact: the normal impulse is ``p_n = h k max(0, -phi(q_k))`` and the
friction is Coulomb's law regularized, ``p_T = -mu p_n u_T / sqrt(|u_T|^2 + eps^2)`` with
``u_T = J_T v+``. Its step has no complementarity at all: the front door finds that neither the
LCP nor the cone route takes it and solves it as an NLP (IPOPT).

Physics asserted: a point mass resting at the penalty depth ``m g / k`` stays there and carries
its weight; a sliding one decelerates by ``mu g`` (to the regularization); the trajectory that
trajectory optimization finds replays through time stepping with the same formulation (the same
block solved one step at a time).
"""
from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.base import Formulation, PhysicsTolerances, Step, StepBlock, register
from contactmp.formulations.contact_scale import contact_scale
from contactmp.models.systems import point_mass_2d
from contactmp.program import Program, Variables
from contactmp.solvers.multistart import multistart
from contactmp.transcriptions.contact_implicit import ContactImplicitTO
from contactmp.transcriptions.time_stepping import TimeStepping

G, MU, K = 9.81, 0.5, 100.0  # h sqrt(K / m) <= 1 for h <= 0.1: the explicit penalty is stable


@dataclass(eq=False, kw_only=True)
class PenaltyStep(StepBlock):
    """The penalty block's handles: impulses ``p`` (n_c x 3, contact-major)."""

    p: Variables

    def impulses(self, x) -> np.ndarray:
        return self.program.value(self.p, x).reshape(-1, 3)


@register
class Penalty(Formulation):
    """Penalty contact with regularized Coulomb friction (see the module docstring)."""

    name = "test-penalty"
    #: the stiffness can be held as a Program parameter (``Step.params``) and differentiated by
    model_parameters = ("stiffness",)

    @dataclass(frozen=True)
    class Options:
        stiffness: float = K
        eps: float = 1e-4

    def model_parameter_value(self, name, system, q, field="wrt"):
        """The stiffness of every contact (the option), for ``wrt=["stiffness"]``."""
        if name == "stiffness":
            return np.full(system.n_c, float(self.options.stiffness))
        return super().model_parameter_value(name, system, q, field)

    def physics_tolerances(self, system, h: float) -> PhysicsTolerances:
        """What the physics verdict of every step allows this model: twice the depth at which the
        penalty holds the system's most loaded contact (``load / k``), and force while the gap at the
        step's end is within that depth (the penalty acts on the gap at the step's start)."""
        depth = 2.0 * contact_scale(system).load / self.options.stiffness
        return PhysicsTolerances(penetration=depth, gap=depth)

    def add_step(self, prog: Program, step: Step) -> PenaltyStep:
        d = step.data()
        nc, nv = step.n_c, step.system.n_v
        v_next = prog.add_variables(f"{step.prefix}/v_next", nv, block=step.prefix)
        p = prog.add_variables(f"{step.prefix}/p", 3 * nc, block=step.prefix)
        pn, pt, po = p.sym[0::3], p.sym[1::3], p.sym[2::3]
        mu = ca.DM(np.asarray(d.mu, dtype=float))
        k = step.param("stiffness", np.full(step.system.n_c, float(self.options.stiffness)))
        if step.contacts is not None:  # the step's contacts only
            k = k[[int(i) for i in step.contacts]] if isinstance(k, ca.SX) else k[np.asarray(step.contacts)]
        ut, uo = ca.mtimes(d.Jt, v_next.sym), ca.mtimes(d.Jo, v_next.sym)
        slip = ca.sqrt(ut ** 2 + uo ** 2 + self.options.eps ** 2)
        rows = [ca.mtimes(d.M, v_next.sym - step.v) - step.h * d.f - ca.mtimes(d.Jn.T, pn)
                - ca.mtimes(d.Jt.T, pt) - ca.mtimes(d.Jo.T, po),
                pn - step.h * k * ca.fmax(0, -d.phi),
                pt + mu * pn * ut / slip, po + mu * pn * uo / slip]
        cons = tuple(prog.add_constraint(r, 0.0, 0.0, name=f"{step.prefix}/{n}", block=step.prefix)
                     for r, n in zip(rows, ("dynamics", "normal", "friction_t", "friction_o")))
        return PenaltyStep(program=prog, v_next=v_next, mu=np.asarray(d.mu, dtype=float), p=p, constraints=cons,
                           handles={"p": p})


DEPTH = 1.0 * G / K  # the penalty depth of a 1 kg point mass (9.8 cm)


def test_resting_point_mass_stays_at_the_penalty_depth_and_carries_its_weight() -> None:
    h = 0.01
    out = TimeStepping(point_mass_2d(mu=MU), h, "test-penalty", active_gap=np.inf).step([0.0, -DEPTH], [0.0, 0.0])
    assert out.success and out.result.extras["reduction"] == "nlp"
    np.testing.assert_allclose(out.v, 0.0, atol=1e-8)
    assert out.p_n[0] == pytest.approx(G * h, rel=1e-9)   # p_n = m g h
    assert abs(out.p_t[0]) < 1e-8                           # no slip, no friction
    assert out.result.residuals["dynamics"] < 1e-9


def test_its_own_model_parameter_is_differentiated() -> None:
    """``wrt=["stiffness"]``, a model parameter the formulation declares: at rest on the penalty,
    ``v_z+ = v_z - h g + h K (-phi) / m`` (normal impulse ``h K max(0, -phi)``, m = 1 kg), so
    ``dv_z+ / dK = h DEPTH`` and ``dz+ / dK = h^2 DEPTH``."""
    from contactmp.formulations.step_sensitivity import step_jacobian

    h, system = 0.01, point_mass_2d(mu=MU)
    ts = TimeStepping(system, h, "test-penalty", active_gap=np.inf)
    q, v, u = [0.0, -DEPTH], [0.0, 0.0], [0.0, 0.0]
    jac = step_jacobian(ts.formulation, system, h, q, v, u, ts.step(q, v), wrt=["stiffness"])
    dK = jac.param("stiffness")[:, 0]  # (dx, dz, dvx, dvz) / dK
    np.testing.assert_allclose(dK, [0.0, h * h * DEPTH, 0.0, h * DEPTH], rtol=1e-6, atol=1e-12)
    with pytest.raises(InputError, match="does not read the model parameter 'mu'"):
        step_jacobian(ts.formulation, system, h, q, v, u, ts.step(q, v), wrt=["mu"])


def test_sliding_point_mass_decelerates_by_mu_g() -> None:
    h, n = 0.01, 10
    tr = TimeStepping(point_mass_2d(mu=MU), h, "test-penalty", active_gap=np.inf).simulate(
        [0.0, -DEPTH], [1.0, 0.0], n_steps=n)
    assert tr.n_failed == 0 and tr.solver_counts == {"casadi/scholtes": n}
    np.testing.assert_allclose(tr.v[:, 0], 1.0 - MU * G * h * np.arange(n + 1), atol=1e-6)
    np.testing.assert_allclose(tr.p_t[:, 0], -MU * tr.p_n[:, 0], rtol=1e-6)


def _push(starts: int = 1):
    to = ContactImplicitTO(point_mass_2d(mu=MU), 10, 0.1, "test-penalty")
    to.set_initial_state([0.0, -DEPTH], [0.0, 0.0])
    to.set_final_state([0.5, -DEPTH], [0.0, 0.0], q_indices=[0])
    to.bound_inputs([-20.0, 0.0], [20.0, 0.0])
    to.minimize_effort()
    return to


def test_trajectory_optimization_replays_through_time_stepping() -> None:
    to = _push()
    res = to.solve(start_indices=[1, 2], time_limit=120.0)  # two seeded starts (the noiseless guess p = 0 stalls IPOPT)
    assert res.success and res.n_solved == 2
    assert res.q[-1, 0] == pytest.approx(0.5, abs=1e-8) and np.abs(res.v[-1]).max() < 1e-6
    assert res.p_n.sum() == pytest.approx(G * 1.0, rel=1e-3)  # the weight over 1 s, from the springs
    replay = TimeStepping(to.system, to.h, "test-penalty", active_gap=np.inf).simulate(
        res.q[0], res.v[0], u=res.u, n_steps=to.N)
    np.testing.assert_allclose(replay.q, res.q, atol=1e-6)
    np.testing.assert_allclose(replay.impulses, np.stack([res.p_n, res.p_t, res.p_o], axis=-1), atol=1e-6)


def test_multistart_finds_the_push() -> None:
    ms = multistart(_push(), starts=4, structured=False)
    assert ms.n_solved >= 2 and ms.n_distinct == 1  # every solved start reaches the same push
    best = ms.clusters[0]
    assert best.count == ms.n_solved
