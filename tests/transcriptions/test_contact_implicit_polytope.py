"""ContactImplicitTO with the polytope formulations ("nmdp", "mdp"): every optimized step is the
formulation's own step (replayed through NMDP.solve_ipopt / LinearizedMDP.step), bad options name
their field."""
import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.formulations.linearized_mdp import LinearizedMDP
from contactmp.formulations.nmdp import NMDP
from contactmp.models.systems import box_3d, point_mass_2d
from contactmp.result import Status
from contactmp.transcriptions.contact_implicit import ContactImplicitTO

#: constant-magnitude polytope |f_n| <= 20 N (twice the weight), segment |f_t| <= mu f_n
POLY = {"stiffness": 0.0, "relax": 20.0}
N, H = 10, 0.1


def _push(formulation: str) -> ContactImplicitTO:
    to = ContactImplicitTO(point_mass_2d(), N, H, formulation=formulation, **POLY)
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.5, 0.0], q_indices=[0])
    to.bound_inputs([-20.0, 0.0], [20.0, 0.0])
    to.minimize_effort(1.0)
    return to


@pytest.mark.parametrize("formulation", ["nmdp", "mdp"])
def test_polytope_push_replays_through_its_own_step(formulation: str) -> None:
    """The optimized trajectory is a trajectory of the formulation: step k from (q_k, v_k) under
    tau = u_k, solved on its own (NMDP by IPOPT, the linearized MDP by its QP), lands on q_{k+1}."""
    to = _push(formulation)
    res = to.solve(strategy="elastic_l1")
    assert res.status is Status.SOLVED and res.comp_violation <= 1e-7
    assert res.q[-1, 0] == pytest.approx(0.5, abs=1e-8)
    sys_ = to.system
    if formulation == "nmdp":
        step = NMDP(sys_, **POLY)
        nxt = [step.solve_ipopt(res.q[k], res.v[k], H, tau_0=res.u[k]) for k in range(N)]
        qs = np.array([r.x for r in nxt])
    else:
        step = LinearizedMDP(sys_, pd="explicit", **POLY)
        nxt = [step.step(res.q[k], res.v[k], H, tau_0=res.u[k]) for k in range(N)]
        qs = np.array([r.x for r in nxt])
    assert all(r.status is Status.SOLVED for r in nxt)
    np.testing.assert_allclose(qs, res.q[1:], atol=1e-6)
    # the impulses the TO reports are the step's forces times h
    forces = np.array([r.extras["forces"] for r in nxt])
    np.testing.assert_allclose(res.p_n, H * forces[:, :, 0], atol=1e-5)
    np.testing.assert_allclose(res.p_t, H * forces[:, :, 1], atol=1e-5)


def test_nmdp_and_mdp_agree_on_a_linear_system() -> None:
    """A point mass with a constant polytope: backward Euler and the frozen linearization are the
    same equations, so both transcriptions follow the same homotopy path to the same optimum when
    every NLP is solved to tol (homotopy_tol = tol). (With the default inner tolerance 1e-3 the
    elastic homotopy of "nmdp" ends at another local minimizer, 30.10 against 28.02: both certified
    B-stationary.)"""
    a = _push("nmdp").solve(strategy="elastic_l1", homotopy_tol=1e-8)
    b = _push("mdp").solve(strategy="elastic_l1", homotopy_tol=1e-8)
    assert a.status is Status.SOLVED and b.status is Status.SOLVED
    assert a.objective == pytest.approx(b.objective, rel=1e-6)


def test_polytope_options_are_validated() -> None:
    with pytest.raises(InputError, match="stiffnes"):
        ContactImplicitTO(point_mass_2d(), 3, 0.1, formulation="nmdp", stiffnes=1.0)
    with pytest.raises(InputError, match="option"):
        ContactImplicitTO(point_mass_2d(), 3, 0.1, formulation="cone", **POLY)
    with pytest.raises(InputError, match="relax"):
        ContactImplicitTO(point_mass_2d(), 3, 0.1, formulation="mdp", relax=-1.0)
    with pytest.raises(InputError, match="system"):   # quaternion coordinates: qdot != v
        ContactImplicitTO(box_3d(), 3, 0.1, formulation="nmdp", **POLY)


@pytest.mark.parametrize("formulation", ["nmdp", "mdp"])
def test_friction_as_a_parameter_gives_the_same_optimum(formulation: str) -> None:
    """mu held as a Program parameter (model_parameters=("mu",), read by the polytope blocks from
    Step.params) is the same program: the same optimum as with mu baked in."""
    a = _push(formulation).solve(strategy="elastic_l1", homotopy_tol=1e-8)
    to = ContactImplicitTO(point_mass_2d(), N, H, formulation=formulation, model_parameters=("mu",), **POLY)
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.5, 0.0], q_indices=[0])
    to.bound_inputs([-20.0, 0.0], [20.0, 0.0])
    to.minimize_effort(1.0)
    b = to.solve(strategy="elastic_l1", homotopy_tol=1e-8)
    assert a.status is Status.SOLVED and b.status is Status.SOLVED
    assert b.objective == pytest.approx(a.objective, rel=1e-8)
