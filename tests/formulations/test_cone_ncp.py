"""The Coulomb-cone formulation: the fc3d block (one-contact closed forms), ConeNCP of boxes on planes
(closed forms of the sliding speed), the k-facet pyramid converging to it, and one generated
problem solved three ways (IPOPT on the Program, Pyomo, the semismooth Newton method on fc3d)."""
from __future__ import annotations

import logging

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError, UnsupportedProgramError
from contactmp.formulations.cone_ncp import ConeNCP, add_fc3d_block, fc3d_permutation
from contactmp.formulations.pyramid_lcp import PyramidLCP
from contactmp.models import box_on_plane, random_problem
from contactmp.program import Program
from contactmp.solvers import solve_lcp
from contactmp.solvers.fc3d import ipopt as fc3d_ipopt
from contactmp.solvers.fc3d.problem import fc3d_residual
from contactmp.solvers.nlp.solve import solve_program

G = 9.81
FORMS = ("disk", "quadratic")

# One contact, W = diag(2, 0.5, 0.5), mu = 0.5: closed forms of the three modes.
W1 = np.diag([2.0, 0.5, 0.5])
MU1 = 0.5
ONE_CONTACT = {
    # r = -W^-1 q lies inside the cone (|r_T| = 0.224 < 0.5 r_n = 0.5): u = 0
    "stick": (np.array([-2.0, 0.1, -0.05]), np.array([1.0, -0.2, 0.1]), np.zeros(3)),
    # r_n = 1, friction -mu r_n e on the boundary, e = q_T / |q_T|, u_T = (|q_T| - 0.5 mu) e
    "slide": (np.array([-2.0, 1.2, -1.6]), np.array([1.0, -0.3, 0.4]), np.array([0.0, 1.05, -1.4])),
    # q_n > 0: r = 0, u = q
    "separate": (np.array([1.0, 0.3, -0.2]), np.zeros(3), np.array([1.0, 0.3, -0.2])),
}


# ----------------------------------------------------------------------------------------------
# The fc3d block
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", list(ONE_CONTACT))
def test_one_contact_closed_forms_through_the_block(case, form):
    q, r_star, u_star = ONE_CONTACT[case]
    prog = Program("one")
    blk = add_fc3d_block(prog, W1, q, MU1, form=form)
    res = solve_program(prog, strategy="elastic_l1")
    assert res.success, res.message
    r, u = res.value(blk.r), res.value(blk.u)
    np.testing.assert_allclose(r, r_star, atol=1e-7)
    np.testing.assert_allclose(u, u_star, atol=1e-7)
    assert fc3d_residual(W1, q, np.array([MU1]), r) <= 1e-8
    if case != "separate":  # gamma is the sliding speed (undetermined only at r = 0 in the quadratic form)
        assert abs(res.value(blk.gamma)[0] - np.hypot(*u_star[1:])) <= 1e-7


@pytest.mark.parametrize("case", list(ONE_CONTACT))
def test_one_contact_closed_forms_through_the_solver(case):
    q, r_star, u_star = ONE_CONTACT[case]
    res = fc3d_ipopt.solve(W1, q, MU1)
    assert res.success, res.message
    assert res.residual <= 1e-8
    np.testing.assert_allclose(res.x, r_star, atol=1e-7)
    np.testing.assert_allclose(res.extras["u"], u_star, atol=1e-7)


def test_block_takes_casadi_parameters_and_is_a_square_mcp():
    """q and mu as Parameters (a transcription's data), W as a CasADi DM; changing q re-solves."""
    prog = Program("param")
    qp = prog.add_parameters("q", 3, ONE_CONTACT["stick"][0])
    mup = prog.add_parameters("mu", 1, MU1)
    blk = add_fc3d_block(prog, ca.DM(W1), qp.sym, mup.sym, prefix="c0")
    for case in ("stick", "slide"):
        q, r_star, _ = ONE_CONTACT[case]
        qp.value = q
        res = solve_program(prog, strategy="elastic_l1")
        assert res.success, res.message
        np.testing.assert_allclose(res.value(blk.r), r_star, atol=1e-7)
    # square MCP: r_T, u, w free (7 per contact) against 7 equality rows; r_n with u_n, gamma with
    # the disk slack. F vanishes at the closed-form solution of the sliding case.
    mcp = prog.to_mcp()
    assert mcp.n == prog.n_x
    q, r_star, u_star = ONE_CONTACT["slide"]
    x = np.zeros(prog.n_x)
    x[blk.r.index], x[blk.u.index] = r_star, u_star
    x[blk.w.index] = r_star[1:] / (MU1 * r_star[0])
    x[blk.gamma.index] = np.hypot(*u_star[1:])
    assert mcp.residual(x) <= 1e-12


def test_block_input_errors():
    prog = Program("bad")
    with pytest.raises(InputError, match="W"):
        add_fc3d_block(prog, np.eye(4), np.zeros(4), 0.5)
    with pytest.raises(InputError, match="q"):
        add_fc3d_block(prog, np.eye(3), np.zeros(2), 0.5)
    with pytest.raises(InputError, match="mu"):
        add_fc3d_block(prog, np.eye(3), np.zeros(3), -0.1)
    with pytest.raises(InputError, match="form"):
        add_fc3d_block(prog, np.eye(3), np.zeros(3), 0.5, form="cone")


# ----------------------------------------------------------------------------------------------
# ConeNCP of a box on a plane
# ----------------------------------------------------------------------------------------------
def _solve(cone: ConeNCP):
    prog = cone.to_program()
    res = solve_program(prog, strategy="elastic_l1")
    assert res.success, res.message
    sol = cone.solution(res.x)
    check = cone.check(sol)
    assert max(check.values()) <= 1e-7, check
    return sol


def test_box_sliding_on_a_plane_decelerates_at_mu_g():
    mu = 0.4
    cone = ConeNCP(box_on_plane(speed=1.0, mu=mu))
    assert cone.R.size == 0 and cone.S.size == 4
    sol = _solve(cone)
    np.testing.assert_allclose(sol.qddot, [-mu * G, 0, 0, 0, 0, 0], atol=1e-7)
    np.testing.assert_allclose(sol.c_n.sum(), G, atol=1e-7)  # mass 1
    np.testing.assert_allclose(sol.c_t.sum(), -mu * G, atol=1e-7)
    assert sol.modes == ["sliding"] * 4
    with pytest.raises(UnsupportedProgramError, match="sliding"):
        cone.to_fc3d()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("slope,mu", [(0.3, 0.5), (0.6, 0.2)])
def test_box_on_an_incline_sticks_below_and_slides_above_the_limit(slope, mu, form):
    """At rest on a slope: a = 0 if tan(slope) <= mu, else a = g (sin - mu cos) downhill."""
    model = box_on_plane(slope=slope, mu=mu)
    cone = ConeNCP(model, form=form)
    assert cone.S.size == 0
    downhill = np.array([np.cos(slope), 0.0, -np.sin(slope)])
    a = max(0.0, G * (np.sin(slope) - mu * np.cos(slope)))
    expected = np.concatenate([a * downhill, np.zeros(3)])
    sol = _solve(cone)
    np.testing.assert_allclose(sol.qddot, expected, atol=1e-7)
    assert sol.modes == (["rolling"] * 4 if a == 0 else ["sliding"] * 4)
    if a > 0:  # every corner on the cone's boundary, friction uphill
        np.testing.assert_allclose(np.hypot(sol.c_t, sol.c_o), mu * sol.c_n, atol=1e-7)
        assert (sol.c_t <= 1e-9).all()
    # the same instant as fc3d (all contacts rolling), through the IPOPT cone solver
    W, q, mus = cone.to_fc3d()
    p = fc3d_permutation(model.n_c)
    np.testing.assert_array_equal(W, model.A[np.ix_(p, p)])
    res = fc3d_ipopt.solve(W, q, mus, form=form)
    assert res.success, res.message
    sol2 = cone.solution(r=res.x)
    assert max(cone.check(sol2).values()) <= 1e-6
    np.testing.assert_allclose(sol2.qddot, expected, atol=1e-6)


def test_pyramid_with_many_facets_approaches_the_cone():
    """Sliding down a slope, friction points uphill (angle pi in the contact plane). For odd k that
    is a vertex of the k-facet polygon, at distance mu c_n / cos(pi/k): the pyramid's acceleration
    is g (sin - mu cos / cos(pi/k)), within mu g cos pi^2 / k^2 of the cone's; for k = 4 the
    direction is a facet normal and the two agree exactly."""
    slope, mu = 0.6, 0.2
    model = box_on_plane(slope=slope, mu=mu)
    downhill = np.array([np.cos(slope), 0.0, -np.sin(slope)])
    cone_sol = _solve(ConeNCP(model))
    a_cone = cone_sol.qddot[:3] @ downhill
    bound = mu * G * np.cos(slope) * np.pi**2
    errors = []
    for k in (3, 5, 9, 17, 33):
        pyr = PyramidLCP(model, facets=k)
        res = solve_lcp(pyr.M, pyr.q, solver="lemke")
        assert res.success, res.message
        sol = pyr.solution(res.x)
        a_k = sol.qddot[:3] @ downhill
        np.testing.assert_allclose(a_k, G * (np.sin(slope) - mu * np.cos(slope) / np.cos(np.pi / k)), atol=1e-9)
        err = max(abs(a_k - a_cone), abs(sol.c_t.sum() - cone_sol.c_t.sum()), abs(sol.c_n.sum() - cone_sol.c_n.sum()))
        assert err * k**2 <= bound
        errors.append(err)
    assert all(e2 < e1 for e1, e2 in zip(errors, errors[1:]))
    pyr4 = PyramidLCP(model, facets=4)
    sol4 = pyr4.solution(solve_lcp(pyr4.M, pyr4.q, solver="lemke").x)
    np.testing.assert_allclose(sol4.qddot, cone_sol.qddot, atol=1e-7)


@pytest.mark.parametrize("args", [(3, 1, 1, 1), (0, 2, 2, 3)])
def test_generated_problems_with_sliding_and_rolling_contacts(args):
    """Sliding contacts (friction fixed by (12)) beside rolling ones; the program is a square MCP."""
    model = random_problem(*args, mu=0.3)
    cone = ConeNCP(model)
    assert cone.S.size == args[2] and cone.R.size == args[3]
    sol = _solve(cone)  # (4)-(6), (9)-(13), (16) all <= 1e-7
    assert all(sol.modes[j] in ("sliding", "breaking") for j in cone.S)
    prog = cone.to_program()
    assert prog.to_mcp().n == prog.n_x


def test_solution_input_and_check_detect_a_wrong_answer():
    cone = ConeNCP(box_on_plane(slope=0.3, mu=0.5))
    with pytest.raises(InputError):
        cone.solution()
    with pytest.raises(InputError):
        cone.solution(np.zeros(cone.n_x), c=np.zeros(12))
    with pytest.raises(InputError, match="x"):
        cone.solution(np.zeros(cone.n_x + 1))
    sol = _solve(cone)
    bad = sol.c.copy()
    bad[4:8] *= 3.0  # friction three times what holds the box: outside the cone, box accelerates
    check = cone.check(cone.solution(c=bad))
    assert check["(10)"] > 0.1


# ----------------------------------------------------------------------------------------------
# The required one: a generated problem, three solution paths
# ----------------------------------------------------------------------------------------------
def test_trinkle_random_problem_ipopt_pyomo_and_newton_agree():
    """random_problem(seed=4, 1 box, 0 sliding, 3 rolling) with a 3-joint finger pair: A is positive
    definite (9 contact rows, 6 + 6 degrees of freedom) and the answer has one contact starting to
    slide, one rolling and one breaking. The cone program through IPOPT, its Pyomo model through
    mpec.simple_nonlinear + IPOPT, and the semismooth Newton method on to_fc3d() agree."""
    import pyomo.environ as pyo

    import contactmp.solvers.nlp.pyomo_ipopt  # noqa: F401  (registers SolverFactory("contactmp_ipopt"))
    from contactmp.solvers.registry import FC3D_SOLVERS, solve_fc3d

    model = random_problem(4, 1, 0, 3, mu=0.3)
    assert model.sliding.size == 0
    assert np.linalg.eigvalsh(model.A).min() > 0.1
    cone = ConeNCP(model)

    # 1. IPOPT on the Program
    prog = cone.to_program()
    res = solve_program(prog, strategy="elastic_l1")
    assert res.success, res.message
    sol_ipopt = cone.solution(res.x)

    # 2. the Pyomo model
    m = prog.to_pyomo()
    pyo.TransformationFactory("mpec.simple_nonlinear").apply_to(m)
    logging.getLogger("contactmp.solvers.nlp.pyomo_ipopt").setLevel(logging.ERROR)
    out = pyo.SolverFactory("contactmp_ipopt").solve(m)
    assert str(out.solver.termination_condition) == "optimal", out.solver.message
    x_pyomo = np.concatenate([
        np.array([pyo.value(getattr(m, m.contactmp_names[h.name])[i]) for i in range(h.size)])
        for h in prog.variables
    ])
    sol_pyomo = cone.solution(x_pyomo)

    # 3. the fc3d solvers on (W, q, mu) = (A, b, mu) per contact
    W, q, mu = cone.to_fc3d()
    ref_name = "newton" if "newton" in FC3D_SOLVERS else "nsgs"
    ref = solve_fc3d(W, q, mu, solver=ref_name)
    assert ref.success, ref.message
    sol_ref = cone.solution(r=ref.x)

    assert sorted(sol_ref.modes) == ["breaking", "rolling", "sliding"]
    for sol in (sol_ipopt, sol_pyomo, sol_ref):
        assert max(cone.check(sol).values()) <= 1e-7
        assert sol.modes == sol_ref.modes
    for sol in (sol_ipopt, sol_pyomo):
        np.testing.assert_allclose(sol.c, sol_ref.c, atol=1e-6)
        np.testing.assert_allclose(sol.a, sol_ref.a, atol=1e-6)
        np.testing.assert_allclose(sol.qddot, sol_ref.qddot, atol=1e-6)
        np.testing.assert_allclose(sol.lddot, sol_ref.lddot, atol=1e-6)
