"""Stage groups (contactmp.stages) and the derivatives built from one copy of each stage
(contactmp.solvers.structured): the same Jacobian and Hessian as CasADi's whole-program
derivatives, the same solutions, and refusal of groups that do not describe their program."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

from contactmp.case_studies import _cito
from contactmp.errors import InputError, OptionError
from contactmp.program import Program
from contactmp.result import Status
from contactmp.solvers.nlp.mpcc import relaxation
from contactmp.solvers.nlp.solve import NLPOptions
from contactmp.solvers.structured import jit_available, resolve_derivatives, stage_derivatives
from contactmp.stages import StageGroup, StageTemplate


def _full_derivatives(prog: Program) -> tuple[ca.Function, ca.Function]:
    lam, lf = ca.SX.sym("lam", prog.n_g), ca.SX.sym("lf")
    jac = ca.Function("J", [prog.x, prog.p], [ca.jacobian(prog.g, prog.x)])
    hess = ca.Function("H", [prog.x, prog.p, lf, lam],
                       [ca.triu(ca.hessian(lf * prog.f + ca.dot(lam, prog.g), prog.x)[0])])
    return jac, hess


def _assert_same_derivatives(prog: Program, seed: int = 0) -> None:
    """Stage derivatives == whole-program derivatives at a random point: same sparsity, values to
    1e-12 relative to the largest entry (both sum the same products; only the order of the sums of
    entries shared by two stages differs, a few ulps)."""
    d = stage_derivatives(prog)
    assert d is not None
    jac, hess = _full_derivatives(prog)
    rng = np.random.default_rng(seed)
    x, lam = prog.x0 + 0.1 * rng.standard_normal(prog.n_x), rng.standard_normal(prog.n_g)
    g1, j1 = d.jac_g(x, prog.p0)
    j2 = jac(x, prog.p0)
    assert j1.sparsity() == j2.sparsity()
    np.testing.assert_allclose(np.asarray(g1).ravel(), prog.evaluate(x)["g"], rtol=0, atol=1e-12)
    scale = max(1.0, float(ca.mmax(ca.fabs(j2))))
    assert float(ca.mmax(ca.fabs(j1 - j2))) <= 1e-12 * scale
    h1, h2 = d.hess_lag(x, prog.p0, 0.7, lam), hess(x, prog.p0, 0.7, lam)
    assert h1.sparsity() == h2.sparsity()
    scale = max(1.0, float(ca.mmax(ca.fabs(h2))))
    assert float(ca.mmax(ca.fabs(h1 - h2))) <= 1e-12 * scale


@pytest.mark.parametrize("task,formulation", [("box", "pyramid"), ("hopper", "cone")])
def test_contact_implicit_knots_are_one_stage_group(task: str, formulation: str) -> None:
    to = _cito.TASKS[task].build(formulation, True)
    (group,) = to.program.stage_groups
    assert group.n_stages == to.N
    # every row of every knot (the formulation's block and the kinematics row) is in the group
    knot_rows = [c for c in to.program.constraints if c.block and c.block.startswith("step")]
    assert group.g_index.size == sum(c.size for c in knot_rows)
    # knot k's local variables start with q_k and v_k
    for k in (0, to.N - 1):
        np.testing.assert_array_equal(group.x_index[k, :to.system.n_q], np.arange(to.q[k].index.start, to.q[k].index.stop))
    for strategy in ("scholtes", "elastic_l1", "fischer_burmeister"):  # the relaxations keep the group
        _assert_same_derivatives(relaxation(to.program, strategy, 0.1).program)


def test_solo12_planar_knot_derivatives_match() -> None:
    from contactmp.models.urdf import solo12, solo12_standing
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    to = ContactImplicitTO(solo12(planar=True), 3, 0.025, "cone")
    to.set_initial_state(solo12_standing(True), np.zeros(11))
    to.minimize_effort()
    assert resolve_derivatives(to.program, "auto") == "stages"  # a 2,111-instruction knot
    _assert_same_derivatives(relaxation(to.program, "scholtes", 0.01).program, seed=3)


@pytest.mark.parametrize("backend", ["casadi", "cyipopt"])
def test_stage_derivatives_solve_to_the_same_answer(backend: str) -> None:
    """The box push solved with the stage derivatives: verified, and the same trajectory as with
    the whole-program derivatives (IPOPT sees the same numbers up to rounding of shared sums)."""
    ref = _cito.TASKS["box"].build("pyramid", True).solve(backend=backend, strategy="scholtes", derivatives="full")
    got = _cito.TASKS["box"].build("pyramid", True).solve(backend=backend, strategy="scholtes", derivatives="stages")
    assert ref.status is Status.SOLVED and got.status is Status.SOLVED
    assert got.objective == pytest.approx(ref.objective, rel=1e-6)
    np.testing.assert_allclose(got.q, ref.q, atol=1e-6)


def test_auto_keeps_whole_program_derivatives_for_small_knots() -> None:
    to = _cito.TASKS["box"].build("pyramid", True)
    assert resolve_derivatives(to.program, "auto") == "full"
    assert resolve_derivatives(to.program, "stages") == "stages"
    assert resolve_derivatives(Program("empty"), "stages") == "full"
    with pytest.raises(OptionError, match="derivatives"):
        NLPOptions(derivatives="stage").check()


@pytest.mark.skipif(not jit_available(), reason="no C compiler (gcc) for CasADi's JIT on this machine")
def test_jit_stage_derivatives_equal_the_virtual_machine() -> None:
    prog = relaxation(_cito.TASKS["box"].build("pyramid", True).program, "scholtes", 0.1).program
    vm, jit = stage_derivatives(prog), stage_derivatives(prog, jit=True)
    assert jit.jit and not vm.jit
    rng = np.random.default_rng(1)
    x, lam = rng.standard_normal(prog.n_x), rng.standard_normal(prog.n_g)
    # compiled C and CasADi's virtual machine run the same operations: equal to rounding
    np.testing.assert_allclose(np.asarray(ca.densify(jit.hess_lag(x, prog.p0, 1.0, lam))),
                               np.asarray(ca.densify(vm.hess_lag(x, prog.p0, 1.0, lam))), rtol=0, atol=1e-12)


def _tiny_program() -> tuple[Program, StageTemplate]:
    prog = Program("tiny")
    xs = [prog.add_variables(f"x{k}", 2) for k in range(3)]
    for k in range(2):
        prog.add_constraint(ca.sin(xs[k].sym[0]) * xs[k + 1].sym[1] - xs[k].sym[1], 0, 0, name=f"row{k}")
    z = ca.SX.sym("z", 4)
    return prog, StageTemplate("link", z, ca.SX(0, 1), ca.sin(z[0]) * z[3] - z[1])


def test_stage_group_is_checked_against_its_program() -> None:
    prog, t = _tiny_program()
    good = StageGroup(t, np.array([[0, 1, 2, 3], [2, 3, 4, 5]]), np.zeros((2, 0), dtype=int), np.array([[0], [1]]))
    prog.add_stage_group(good)
    assert prog.stage_groups == (good,)
    with pytest.raises(InputError, match="g_index"):  # rows already in a group
        prog.add_stage_group(good)
    prog2, t2 = _tiny_program()
    wrong = StageGroup(t2, np.array([[0, 1, 2, 3], [2, 3, 5, 4]]), np.zeros((2, 0), dtype=int), np.array([[0], [1]]))
    with pytest.raises(InputError, match="stages"):
        prog2.add_stage_group(wrong)
    assert prog2.stage_groups == ()


@pytest.mark.parametrize("field,kwargs", [
    ("x_index", {"x_index": np.zeros((2, 3), dtype=int)}),
    ("x_index", {"x_index": np.array([[0, 0, 1, 2], [2, 3, 4, 5]])}),
    ("g_index", {"g_index": np.array([[0], [0]])}),
    ("x_index", {"x_index": np.zeros((0, 4), dtype=int), "p_index": np.zeros((0, 0), dtype=int),
                 "g_index": np.zeros((0, 1), dtype=int)}),
    ("x_index", {"x_index": np.array([[0.0, 1, 2, 3], [2, 3, 4, 5]])}),
])
def test_stage_group_rejects_malformed_positions(field: str, kwargs: dict) -> None:
    _, t = _tiny_program()
    args = {"x_index": np.array([[0, 1, 2, 3], [2, 3, 4, 5]]), "p_index": np.zeros((2, 0), dtype=int),
            "g_index": np.array([[0], [1]]), **kwargs}
    with pytest.raises(InputError, match=field):
        StageGroup(t, **args)


def test_positions_outside_the_program_are_refused() -> None:
    prog, t = _tiny_program()
    with pytest.raises(InputError, match="x_index"):
        prog.add_stage_group(StageGroup(t, np.array([[0, 1, 2, 3], [2, 3, 4, 9]]), np.zeros((2, 0), dtype=int),
                                        np.array([[0], [1]])))


def test_lifted_sides_are_variables_bound_to_their_expressions() -> None:
    prog = Program("lift")
    x = prog.add_variables("x", 2)
    y = prog.add_variables("y", 2, lb=0.0)
    prog.lift_sides = True
    pair = prog.add_complementarity(y.sym, ca.vertcat(x.sym[0] ** 2, y.sym[1]), name="c")
    lifted = prog["c/b"]
    assert lifted.size == 1 and lifted.lb[0] == 0.0  # only the entry that is not a variable
    assert prog.variable_index(pair.b[0]) == lifted.index.start and prog.variable_index(pair.b[1]) == y.index.start + 1
    row = prog["c/lift_b"]
    xv = prog.guess_lifted(np.array([3.0, 0.0, 1.0, 2.0, -5.0]))
    assert xv[lifted.index.start] == 9.0  # x_0^2 at the point
    assert prog.evaluate(xv)["g"][row.index.start] == 0.0
    assert prog.guess_lifted(np.array([0.0, 0.0, 1.0, 2.0, -5.0]))[lifted.index.start] == 0.0


def test_lifted_transcription_has_the_same_optimum() -> None:
    """The box push with its pair sides lifted: a different program (more variables, rows
    ``s = side``) with the same solutions; Scholtes reaches the same optimum from start 0."""
    from contactmp.models.systems import box_2d
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    def push(lift: bool) -> ContactImplicitTO:
        to = ContactImplicitTO(box_2d(m=1.0, width=0.4, height=0.2, mu=0.5), 20, 0.05, "pyramid", lift_sides=lift)
        to.set_initial_state([0.0, 0.1, 0.0], [0.0, 0.0, 0.0])
        to.set_final_state([1.0, 0.1, 0.0], [0.0, 0.0, 0.0])
        to.bound_inputs([-10.0, 0.0, 0.0], [10.0, 0.0, 0.0])
        to.minimize_effort(1.0)
        return to

    plain, lifted = push(False), push(True)
    assert lifted.program.n_x > plain.program.n_x
    assert all(lifted.program.variable_index(e) is not None
               for side in (lifted.program.comp_a, lifted.program.comp_b) for e in ca.vertsplit(side))
    _assert_same_derivatives(relaxation(lifted.program, "scholtes", 0.1).program)
    a = plain.solve(strategy="scholtes", ipopt={"mu_strategy": "monotone"})
    b = lifted.solve(strategy="scholtes", ipopt={"mu_strategy": "monotone"}, derivatives="stages")
    assert a.status is Status.SOLVED and b.status is Status.SOLVED
    assert b.objective == pytest.approx(a.objective, rel=1e-6)
