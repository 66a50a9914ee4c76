"""The cone construct of a Program, its reduction to fc3d / the cone LCP, and the solver front door.

Math asserted: a velocity step with Coulomb's cone reduces to the Delassus problem
``W = J M^-1 J^T``, ``q = J (v + h M^-1 f) + (phi / h, 0, 0)`` (Trinkle et al.'s fc3d form);
``invert`` gives a program vector whose residuals vanish (every row and pair of the disk form);
planar cones embed with a decoupled dummy row whose impulse is zero; the front door says which
routes take a program and why the others do not.
"""
from __future__ import annotations

import numpy as np
import pytest

from contactmp.errors import InputError, UnsupportedProgramError
from contactmp.formulations.velocity_cone import add_velocity_cone_step
from contactmp.models.systems import box_2d, box_3d
from contactmp.program import Program
from contactmp.solvers.front import routes, solve


def _step(system, q, v, h=0.01, planar=None):
    M = system.eval_M(q)
    f = -system.eval_h(q, v)
    Jn, Jt, Jo = system.eval_J(q)
    phi = system.eval_phi(q)
    prog = Program("step")
    blk = add_velocity_cone_step(prog, M=M, f=f, v=v, Jn=Jn, Jt=Jt, Jo=Jo, mu=system.mu, phi=phi, h=h,
                                 planar=planar)
    return prog, blk, (M, f, Jn, Jt, Jo, phi, h)


def test_a_cone_step_reduces_to_the_delassus_fc3d_problem() -> None:
    box = box_3d()
    q = np.array([0.0, 0.0, 0.249, 1.0, 0.0, 0.0, 0.0])
    v = np.array([0.5, 0.2, -0.1, 0.0, 0.3, 0.0])
    prog, blk, (M, f, Jn, Jt, Jo, phi, h) = _step(box, q, v)
    red = prog.to_cone_problem()
    J = np.empty((3 * box.n_c, box.n_v))
    J[0::3], J[1::3], J[2::3] = Jn, Jt, Jo
    W = J @ np.linalg.solve(M, J.T)
    qc = J @ (v + np.linalg.solve(M, h * f))
    qc[0::3] += phi / h
    scale = np.abs(W).max()
    np.testing.assert_allclose(red.W, 0.5 * (W + W.T), rtol=0, atol=1e-14 * scale)
    np.testing.assert_allclose(red.q, qc, rtol=0, atol=1e-13 * max(1.0, np.abs(qc).max()))
    assert not red.associated and red.mu.tolist() == box.mu.tolist()
    # a solution of the reduced problem is a solution of the whole program (every row and pair)
    res = solve(prog, tol=1e-10, quick=False)
    assert res.success and res.extras["reduction"] == "cone"
    r = prog.residuals(res.x)
    assert max(r["constraint"], r["comp_min"], r["bound"]) < 1e-8


def test_planar_cones_get_a_decoupled_dummy_row_with_zero_impulse() -> None:
    box = box_2d()
    q, v = np.array([0.0, 0.099, 0.0]), np.array([1.0, -0.2, 0.0])
    prog, blk, _ = _step(box, q, v)
    red = prog.to_cone_problem()
    o = np.arange(2, 3 * box.n_c, 3)
    assert red.planar.all() and np.all(red.q[o] == 0.0)
    off = red.W[np.ix_(o, np.setdiff1d(np.arange(red.W.shape[0]), o))]
    assert not off.any() and np.all(np.diag(red.W)[o] > 0)
    res = solve(prog, tol=1e-10, quick=False)
    assert res.success
    assert np.abs(prog.residuals(res.x)["constraint"]) < 1e-8
    assert blk.p_o is None and blk.impulses(res.x).shape == (box.n_c, 3)


def test_the_front_door_says_which_route_takes_a_program_and_why_not() -> None:
    box = box_2d()
    prog, _, _ = _step(box, np.array([0.0, 0.099, 0.0]), np.array([1.0, 0.0, 0.0]))
    why = routes(prog)
    assert why["cone"] is None and why["nlp"] is None and "cone" in why["lcp"]
    with pytest.raises(UnsupportedProgramError, match="lcp"):
        solve(prog, via="lcp")
    nlp = Program("nlp")
    x = nlp.add_variables("x", 2, lb=0.0)
    nlp.add_complementarity(x.sym[0], x.sym[1])
    nlp.add_cost((x.sym[0] - 1) ** 2 + (x.sym[1] - 1) ** 2)
    why = routes(nlp)
    assert "objective" in why["lcp"] and "cone" in why["cone"] and why["nlp"] is None
    res = solve(nlp)
    assert res.success and res.extras["reduction"] == "nlp" and res.objective == pytest.approx(1.0, abs=1e-6)


def test_the_cone_construct_checks_its_input() -> None:
    prog = Program("bad")
    r = prog.add_variables("r", 2)
    with pytest.raises(InputError, match="r"):
        prog.add_cone_complementarity((r.sym[0],), (r.sym[1],), [0.5])
    with pytest.raises(InputError, match="u"):
        prog.add_cone_complementarity((r.sym[0:1], r.sym[1:2]), (r.sym[0:1],), [0.5])
    with pytest.raises(InputError, match="r"):
        prog.add_cone_complementarity((2 * r.sym[0:1], r.sym[1:2]), (r.sym[0:1], r.sym[1:2]), [0.5])
    with pytest.raises(InputError, match="mu"):
        prog.add_cone_complementarity((r.sym[0:1], r.sym[1:2]), (r.sym[0:1], r.sym[1:2]), [-0.5])
