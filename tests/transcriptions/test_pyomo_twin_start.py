"""The Pyomo twin of a contact-implicit transcription carries its start point (issue 36, item 5).

``ContactImplicitTO.to_pyomo()`` writes :meth:`ContactImplicitTO.initial_guess` (start 0 of the
CasADi route) into the Pyomo variables, so ``SolverFactory("contactmp_ipopt")`` with
``strategy="scholtes"`` and the task's options, started from the model's own values, ends at the
CasADi route's objective on the cito tasks of ``case_studies/_cito.py`` (pyramid, quick).

Measured (2026-12-07, 2 shared cores, Scholtes; CasADi route / Pyomo twin from its defaults):

====================  ==================  ==================  =======================================
task                  CasADi              Pyomo twin          twin from the program's stored start
====================  ==================  ==================  =======================================
box                   36.11401 (1.7 s)    36.11401 (1.8 s)    36.11401
push                  9.67168 (3.0 s)     9.67168 (2.1 s)     9.67168
hopper                19.35894 (4.8 s)    19.35894 (4.7 s)    13.72429 (another local minimizer)
arm-push              19.11978 (18.2 s)   19.11978 (11.6 s)   infeasible (3 relaxed NLPs in a row)
rotate                27.25241 (8.6 s)    27.25241 (4.8 s)    28.02540 (another local minimizer)
====================  ==================  ==================  =======================================

The last column is what ``to.program.to_pyomo()`` gave before: the stored start has no
interpolated motion and no cone guesses.

With cones (``"cone"``, ``"compliant"``) the twin also needs the bounds ``|w_i| <= cone_bound``
(1.5) that ``solve_program`` puts on every NLP of a program with cones (``NLPOptions.cone_bounds``):
the model lists the directions (``model.contactmp_cone_directions``) and the plugin bounds them by
the same half-width. Measured (CasADi / twin from its defaults, box at 1.5; in brackets the box at
1, before 5c44098): box cone 36.11401 (1.4 s) / 36.11401 (1.7 s) [37.02697 / 37.02697], push cone
9.67605 / 9.67605 [9.67143 / 9.67143], box compliant 41.75829 / 41.75829 [41.96125 / 41.96125],
hopper cone 30.61561 / 30.61561 (9 s) [both locally infeasible at 48.22054].

The twin of a program with stage groups lists them too (``model.contactmp_stage_groups``) and the
read-back program declares them again, so ``derivatives="auto"`` builds IPOPT's derivatives as for
the program. Without them the sagittal Solo12 tasks went elsewhere (measured 2026-12-07, from the
task's guess; elastic l1 with ``cito_quadruped.OPTIONS``; program / twin / twin without groups):
CALIPSO pyramid Scholtes 0.71212 / 0.71212 / 2.12611, elastic l1 0.85928 / 0.85928 / 1.04605;
CALIPSO cone elastic l1 2.46388 / 2.46388 / 3.81589 (``cone_bound=1``), 1.40984 / 1.40984 /
1.89909 (``cone_bound=1.5``); walk pyramid elastic l1 1.15214 / 1.15214 / 1.05329.
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.opt import TerminationCondition

import contactmp.solvers.nlp.pyomo_ipopt  # noqa: F401  (registers SolverFactory("contactmp_ipopt"))
from contactmp.case_studies._cito import TASKS
from contactmp.errors import InputError
from contactmp.models.systems import point_mass_2d
from contactmp.program import Program
from contactmp.pyomo_bridge import program_x
from contactmp.result import Status
from contactmp.transcriptions.contact_implicit import ContactImplicitTO

#: the twin's objective against the CasADi route's, relative (measured: equal to 1e-12 or better;
#: the read-back program evaluates bit for bit like the original, tests/transcriptions/
#: test_contact_implicit_pyomo.py, and declares the original's stage groups again, so IPOPT's
#: derivatives are built the same way; the Solo12 objectives below were equal bit for bit)
REL_TOL = 1e-6


def _twin_objective(task: str, formulation: str = "pyramid") -> tuple[float, float, float]:
    """(CasADi objective, twin objective, twin's max |min(a, b)| in the program) of ``task``."""
    spec = TASKS[task]
    to = spec.build(formulation, True)
    opts = dict(spec.options)
    # the program alone from its stored start, as the twin solves it (no pyramid start for the cone)
    ref = to.solve(strategy="scholtes", pyramid_start=False, **opts)
    assert ref.status is Status.SOLVED
    model = to.to_pyomo()
    np.testing.assert_array_equal(program_x(model, to.program), to.initial_guess())
    assert len(model.contactmp_cone_directions) == sum(c.w.size for c in to.program.cones)
    solver = pyo.SolverFactory("contactmp_ipopt")
    results = solver.solve(model, options={"strategy": "scholtes", **opts})
    assert results.solver.termination_condition == TerminationCondition.optimal
    x = program_x(model, to.program)
    res = to.program.residuals(x)
    assert res["constraint"] <= 1e-6 and res["bound"] == 0.0
    return ref.objective, pyo.value(model.objective), res["comp_min"]


@pytest.mark.parametrize("task, formulation", [("box", "pyramid"), ("push", "pyramid"), ("hopper", "pyramid"),
                                               ("box", "cone")])
def test_twin_from_its_defaults_reaches_the_casadi_objective(task: str, formulation: str) -> None:
    ref, got, comp = _twin_objective(task, formulation)
    assert got == pytest.approx(ref, rel=REL_TOL)
    assert comp <= 1e-8


@pytest.mark.slow
@pytest.mark.parametrize("task, formulation", [("arm-push", "pyramid"), ("rotate", "pyramid"), ("push", "cone"),
                                               ("box", "compliant"), ("hopper", "cone")])
def test_twin_from_its_defaults_reaches_the_casadi_objective_slow(task: str, formulation: str) -> None:
    """arm-push (30 s with the CasADi solve) ended infeasible from the program's stored start;
    the fast test above covers the same behaviour (the start on box, push and hopper, the cone
    bounds on the cone box)."""
    ref, got, comp = _twin_objective(task, formulation)
    assert got == pytest.approx(ref, rel=REL_TOL)
    assert comp <= 1e-8


def _small() -> ContactImplicitTO:
    to = ContactImplicitTO(point_mass_2d(), 3, 0.1, formulation="pyramid", facets=4)
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.1, 0.0], [0.0, 0.0])
    to.minimize_effort(1.0)
    return to


def test_program_x0_setter_and_to_pyomo_start() -> None:
    to = _small()
    prog = to.program
    guess = to.initial_guess()
    assert not np.array_equal(prog.x0, guess)  # the stored start has no interpolated motion
    # the twin starts at the guess; the program's own start is left as it was
    np.testing.assert_array_equal(program_x(to.to_pyomo(), prog), guess)
    np.testing.assert_array_equal(program_x(prog.to_pyomo(), prog), prog.x0)
    mine = np.linspace(-1.0, 1.0, prog.n_x)
    np.testing.assert_array_equal(program_x(to.to_pyomo(mine), prog), mine)
    np.testing.assert_array_equal(program_x(prog.to_pyomo(x0=mine), prog), mine)
    # the setter writes every handle's init; to_pyomo() and solve_program start there
    prog.x0 = guess
    np.testing.assert_array_equal(prog.x0, guess)
    np.testing.assert_array_equal(prog.value(to.q[2], prog.x0), to.q[2].init)
    np.testing.assert_array_equal(program_x(prog.to_pyomo(), prog), guess)
    prog.x0 = guess.reshape(-1, 1)  # a column is read as the vector
    np.testing.assert_array_equal(prog.x0, guess)


@pytest.mark.parametrize("bad, match", [
    (np.zeros(3), "x0: must have"),
    (np.zeros((2, 5)), "x0: must have"),
    ("abc", "x0"),
    (None, "x0"),
])
def test_x0_shape_errors_name_x0(bad, match: str) -> None:
    to = _small()
    before = to.program.x0
    with pytest.raises(InputError, match=match) as exc:
        to.program.x0 = bad
    assert exc.value.field == "x0"
    np.testing.assert_array_equal(to.program.x0, before)  # nothing written
    with pytest.raises(InputError) as exc:
        to.program.to_pyomo(x0=bad if bad is not None else np.zeros(1))
    assert exc.value.field == "x0"


def test_x0_not_finite_names_the_entry() -> None:
    prog = Program("p")
    prog.add_variables("a", 2)
    b = prog.add_variables("b", 1)
    with pytest.raises(InputError, match=r"x0: must be finite; 'b'\[0\] is nan"):
        prog.x0 = [0.0, 1.0, np.nan]
    with pytest.raises(InputError, match="x0"):
        ContactImplicitTO(point_mass_2d(), 2, 0.1).to_pyomo(np.full(3, np.inf))
    prog.x0 = [1.0, 2.0, 3.0]
    assert b.init.tolist() == [3.0]


def test_plugin_bounds_the_cone_directions_unless_told_not_to() -> None:
    to = ContactImplicitTO(point_mass_2d(), 3, 0.1, formulation="cone")
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.05, 0.0], [0.0, 0.0])
    to.minimize_effort(1.0)
    n_w = sum(c.w.size for c in to.program.cones)
    assert n_w == 3
    # the half-width solve_program uses (NLPOptions.cone_bound)
    from contactmp.solvers.nlp.solve import NLPOptions

    cases = [({}, NLPOptions().cone_bound), ({"cone_bounds": False}, np.inf), ({"sign_constraints": False}, np.inf),
             ({"cone_bound": 1.25}, 1.25)]
    for options, want in cases:
        model = to.to_pyomo()
        assert len(model.contactmp_cone_directions) == n_w
        solver = pyo.SolverFactory("contactmp_ipopt")
        solver.solve(model, options={"strategy": "scholtes", "max_iter": 50, **options})
        pp = solver.last_program
        column = {id(v): j for j, v in enumerate(pp.variables)}
        j = [column[id(v)] for v in model.contactmp_cone_directions]
        np.testing.assert_array_equal(pp.x.ub[j], want)
        np.testing.assert_array_equal(pp.x.lb[j], -want)
        assert np.array_equal(np.delete(pp.x.ub, j), np.delete(to.program.ubx, j))  # no other bound moves


# -- stage groups (issue 36, last gap) --------------------------------------------------------------
# The twin of a program with stage groups lists them in its components
# (``model.contactmp_stage_groups``) and the read-back program declares them again. Without them the
# read-back program of a sagittal Solo12 task was differentiated whole (``derivatives="auto"`` ->
# ``"full"`` instead of ``"stages"``): the same values, rounded another way, and the homotopy went to
# another local minimizer (CALIPSO gait, pyramid: Scholtes 0.71212 against 2.12611, which is also what
# the program itself gives with ``derivatives="full"``).

#: the fields of a Relaxation that say where the pairs live in the NLP
_RELAXATION_FIELDS = ("a_var", "b_var", "a_row", "b_row", "pair_row", "directions")


def _assert_same_relaxation(p_rel, q_rel) -> None:
    """``q_rel`` (of the read-back program) has the structure of ``p_rel`` (of the program): pair
    sides on the same variables and rows, the same bounds, rows and stage groups."""
    for name in _RELAXATION_FIELDS:
        np.testing.assert_array_equal(getattr(q_rel, name), getattr(p_rel, name), err_msg=name)
    assert (q_rel.slack, q_rel.n_smoothed) == (p_rel.slack, p_rel.n_smoothed)
    for mine, theirs in zip(q_rel.bounds(), p_rel.bounds()):
        np.testing.assert_array_equal(mine, theirs)
    q, p = q_rel.program, p_rel.program
    assert (q.n_x, q.n_g, q.n_comp) == (p.n_x, p.n_g, p.n_comp)
    assert len(q.stage_groups) == len(p.stage_groups) >= 1
    for mine, theirs in zip(q.stage_groups, p.stage_groups):
        assert mine.template is theirs.template  # no parameters: the template itself
        for name in ("x_index", "p_index", "g_index"):
            np.testing.assert_array_equal(getattr(mine, name), getattr(theirs, name), err_msg=name)


def test_solo12_read_back_has_the_programs_relaxation_structure() -> None:
    """The sagittal Solo12 CALIPSO task (pyramid): the read-back program relaxes like the program
    (both relaxations ``solve_program`` builds) and gets the same derivative mode."""
    from contactmp.case_studies._quadruped import solo_task
    from contactmp.solvers.nlp.mpcc import relaxation
    from contactmp.solvers.nlp.pyomo_ipopt import pyomo_to_program
    from contactmp.solvers.structured import resolve_derivatives

    to = solo_task("calipso", True, "pyramid")
    prog = to.program
    model = to.to_pyomo()
    assert len(model.contactmp_stage_groups) == len(prog.stage_groups) == 1
    back = pyomo_to_program(model).program
    np.testing.assert_array_equal(back.x0, to.initial_guess())
    for kw in ({}, {"sign_constraints": False, "side_rows": True}):
        for strategy in ("scholtes", "elastic_l1"):
            _assert_same_relaxation(relaxation(prog, strategy, 1.0, **kw), relaxation(back, strategy, 1.0, **kw))
    assert resolve_derivatives(back, "auto") == resolve_derivatives(prog, "auto") == "stages"


def test_stage_groups_with_parameters_read_back_at_the_models_values(caplog: pytest.LogCaptureFixture) -> None:
    """A stage template with parameters (``model_parameters=["mu"]``) is read back with the Pyomo
    ``Param``'s current value put in (the read-back program has no parameters); a model whose
    stage row was deactivated keeps no group; ``model.clone()`` keeps the groups on its own
    components."""
    from contactmp.solvers.nlp.pyomo_ipopt import pyomo_to_program

    to = ContactImplicitTO(point_mass_2d(), 3, 0.1, formulation="pyramid", facets=4, model_parameters=["mu"])
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.1, 0.0], [0.0, 0.0])
    to.minimize_effort(1.0)
    prog = to.program
    (group,) = prog.stage_groups
    assert group.template.n_p == 1
    model = to.to_pyomo()
    (mu,) = {id(q): q for stage in model.contactmp_stage_groups[0].p for q in stage}.values()
    mu.value = 0.3  # the read-back program's rows and template both take the new value
    (back,) = pyomo_to_program(model).program.stage_groups
    assert back.template.n_p == 0 and back.p_index.shape == (3, 0)
    np.testing.assert_array_equal(back.x_index, group.x_index)
    np.testing.assert_array_equal(back.g_index, group.g_index)
    z = np.linspace(-0.5, 0.5, group.template.n_z)
    want = group.template.function(z, [0.3])
    np.testing.assert_allclose(np.asarray(back.template.function(z, np.zeros(0))), np.asarray(want), rtol=1e-14,
                               atol=1e-14)
    copy = model.clone()
    assert copy.contactmp_stage_groups[0].template is model.contactmp_stage_groups[0].template
    assert copy.contactmp_stage_groups[0].g[0][0] is not model.contactmp_stage_groups[0].g[0][0]
    assert copy.contactmp_stage_groups[0].g[0][0].parent_block() is copy
    assert len(pyomo_to_program(copy).program.stage_groups) == 1
    copy.contactmp_stage_groups[0].g[1][0].deactivate()
    with caplog.at_level("WARNING", logger="contactmp.solvers.nlp.pyomo_ipopt"):
        assert pyomo_to_program(copy).program.stage_groups == ()
    assert "not declared" in caplog.text  # the edited model loses its groups, and says so


@pytest.mark.slow
def test_solo12_twin_reaches_the_programs_objective() -> None:
    """The sagittal Solo12 CALIPSO task (pyramid), Scholtes from the task's guess: the twin solved
    through ``SolverFactory("contactmp_ipopt")`` ends at the program's objective (measured 0.71212
    both; 2.12611 for the twin before it carried the stage groups). About 60 s on 2 shared cores;
    the structure test above covers the cause fast."""
    from contactmp.case_studies._quadruped import solo_task
    from contactmp.solvers.nlp.solve import solve_program

    to = solo_task("calipso", True, "pyramid")
    prog = to.program
    prog.x0 = to.initial_guess()
    ref = solve_program(prog, strategy="scholtes")
    assert ref.status is Status.SOLVED
    model = to.to_pyomo()
    solver = pyo.SolverFactory("contactmp_ipopt")
    results = solver.solve(model, options={"strategy": "scholtes"})
    assert results.solver.termination_condition == TerminationCondition.optimal
    assert pyo.value(model.objective) == pytest.approx(ref.objective, rel=REL_TOL)
