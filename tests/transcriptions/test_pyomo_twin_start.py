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

With cones (``"cone"``, ``"compliant"``) the twin also needs the bounds ``|w_i| <= 1`` that
``solve_program`` puts on every NLP of a program with cones (``NLPOptions.cone_bounds``): the model
lists the directions (``model.contactmp_cone_directions``) and the plugin bounds them. Measured
(CasADi / twin from its defaults; without the bounds): box cone 37.02697 (1.1 s) / 37.02697
(1.6 s; 36.11401 without, as CasADi with ``cone_bounds=False``), push cone 9.67143 / 9.67143
(9.5 / 8.3 s; 9.67238 without), box compliant 41.96125 / 41.96125 (14 / 15 s; 41.75829 without),
hopper cone: both end locally infeasible at the same point (48.22054).
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.opt import TerminationCondition

import contactmp.solvers.pyomo_ipopt  # noqa: F401  (registers SolverFactory("contactmp_ipopt"))
from contactmp.case_studies._cito import TASKS
from contactmp.errors import InputError
from contactmp.models.systems import point_mass_2d
from contactmp.program import Program
from contactmp.pyomo_bridge import program_x
from contactmp.result import Status
from contactmp.transcriptions.contact_implicit import ContactImplicitTO

#: the twin's objective against the CasADi route's, relative (measured: equal to 1e-12 or better;
#: the read-back program evaluates bit for bit like the original, tests/transcriptions/
#: test_contact_implicit_pyomo.py, but it has no stage groups, so IPOPT's derivatives are built
#: another way and may round differently)
REL_TOL = 1e-6


def _twin_objective(task: str, formulation: str = "pyramid") -> tuple[float, float, float]:
    """(CasADi objective, twin objective, twin's max |min(a, b)| in the program) of ``task``."""
    spec = TASKS[task]
    to = spec.build(formulation, True)
    opts = dict(spec.options)
    ref = to.solve(strategy="scholtes", **opts)
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
                                               ("box", "compliant")])
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
    for options, bounded in (({}, True), ({"cone_bounds": False}, False), ({"sign_constraints": False}, False)):
        model = to.to_pyomo()
        assert len(model.contactmp_cone_directions) == n_w
        solver = pyo.SolverFactory("contactmp_ipopt")
        solver.solve(model, options={"strategy": "scholtes", "max_iter": 50, **options})
        pp = solver.last_program
        column = {id(v): j for j, v in enumerate(pp.variables)}
        j = [column[id(v)] for v in model.contactmp_cone_directions]
        want = 1.0 if bounded else np.inf
        np.testing.assert_array_equal(pp.x.ub[j], want)
        np.testing.assert_array_equal(pp.x.lb[j], -want)
        assert np.array_equal(np.delete(pp.x.ub, j), np.delete(to.program.ubx, j))  # no other bound moves
