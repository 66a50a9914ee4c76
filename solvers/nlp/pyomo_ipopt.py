"""Pyomo solver plugin ``SolverFactory("contactmp_ipopt")``: IPOPT through CasADi, no executable.

PyPI gives Pyomo no ``ipopt`` binary, but CasADi bundles IPOPT. Importing this module registers
the plugin. A solve:

1. writes the model as an AMPL ``.nl`` file in a temporary directory with Pyomo's NL writer
   (numeric labels, no scaling, no linear presolve); the writer's returned ``NLWriterInfo`` gives
   the exact order of the variables (column j of the file is ``info.variables[j]``) and of the
   constraints. This list is what a ``.col`` file holds, one name per column in file order; Pyomo
   writes ``.col``/``.row`` files only with ``symbolic_solver_labels=True``, which also puts
   ``#label`` comments into the ``.nl`` body, so the plugin keeps the writer's own list instead of
   reading the names back from a file;
2. reads the file with CasADi's NL importer (``casadi.NlpBuilder.import_nl``);
3. solves ``min f(x) s.t. lbg <= g(x) <= ubg, lbx <= x <= ubx`` with ``casadi.nlpsol(..., "ipopt")``
   from the model's current variable values (``None`` -> 0);
4. loads x into the model (plus the import Suffixes ``dual`` and ``rc``, the sensitivities
   d f*/d(bound) of the constraints and variable bounds, and ``ipopt_zL_out`` / ``ipopt_zU_out``,
   in the sign conventions of IPOPT's AMPL driver) and returns a Pyomo ``SolverResults`` (IPOPT's
   raw ``return_status`` is ``results.solver.message``). ``load_solutions=False`` leaves the model untouched and
   puts the solution in ``results`` for ``model.solutions.load_from(results)``. The termination
   condition comes from the one table of IPOPT's texts,
   :data:`contactmp.solvers.ipopt.IPOPT_STATUS`, through :data:`PYOMO_STATUS`.

Options: ``solver.options[k] = v`` (or ``solve(..., options={...})`` / ``options_string``) are
IPOPT options (``tol``, ``max_iter``, ``print_level``, ...); keys written ``"casadi.<name>"`` go to
``nlpsol`` itself. ``tee=True`` prints IPOPT's log; ``timelimit`` sets IPOPT's ``max_wall_time``.

Models with ``pyomo.mpec`` Complementarity components are solved in one of two ways:

* transformed first (for example ``TransformationFactory("mpec.simple_nonlinear").apply_to(m)``,
  whose rows ``a_i b_i <= mpec_bound = 0`` are the "direct" MPCC form) and solved as an NLP;
* untransformed, with the solver option ``strategy`` (a name of
  :data:`contactmp.solvers.nlp.solve.STRATEGIES`: ``"scholtes"``, ``"elastic_l1"``, ``"direct"``, ...).
  The model becomes a :class:`~contactmp.program.Program` (:func:`pyomo_to_program`; no .nl
  file) and is solved by
  :func:`contactmp.solvers.nlp.solve.solve_program` -- the same homotopy, warm starts, IPOPT defaults
  (``bound_relax_factor = 0``, adaptive barrier) and independent residual checks as a Program
  built in CasADi. Options: ``strategy``, ``backend`` (``"casadi"`` or ``"cyipopt"``) and the
  fields of :class:`~contactmp.solvers.nlp.solve.NLPOptions` (``tol``, ``max_iter``, ``comp_tol``,
  ``feas_tol``, ``sigma0``, ``sigma_factor``, ``sigma_min``, ``rho0``, ...; note that
  ``sigma_min`` is the homotopy's, not IPOPT's) are read by the plugin; every other key is an
  IPOPT option (``"ipopt.<name>"`` forces IPOPT, e.g. ``"ipopt.sigma_min"``). The termination
  condition is ``optimal`` only when the answer passed the checks (bounds, rows, ``max_i
  |min(a_i, b_i)|`` <= ``comp_tol``); no ``dual``/``rc`` suffixes are produced. The solver object
  keeps ``last_result`` (the :class:`~contactmp.result.Result`, with the homotopy in
  ``extras["homotopy"]``) and ``last_program`` (the :class:`PyomoProgram`). The model's variable
  values are the start. A twin made by :meth:`Program.to_pyomo <contactmp.program.Program.to_pyomo>`
  of a program with Coulomb cones lists their disk-form directions ``w``
  (``model.contactmp_cone_directions``), and the read-back program bounds them as ``solve_program``
  bounds them in every NLP of the original program (``NLPOptions.cone_bounds``; not when
  ``cone_bounds`` or ``sign_constraints`` is False); a twin of a program with stage groups lists
  them too (``model.contactmp_stage_groups``), and the read-back program declares them again, so
  that IPOPT's derivatives are built as for the original program: the twin, started where the
  program starts (:meth:`ContactImplicitTO.to_pyomo <contactmp.transcriptions.contact_implicit.ContactImplicitTO.to_pyomo>`
  starts at the CasADi route's guess), then takes the CasADi route's path (the cito tasks: the same
  objective with the pyramid, the cone and the compliant formulations).

With ``strategy``, every condition ``complements(arg1, arg2)`` that pyomo.mpec accepts becomes
Program rows and pairs ``0 <= a _|_ b >= 0`` with exactly the same feasible set (tested against
``mpec.standard_form`` on the same models). Each side is first put in Pyomo's canonical form
(``ComplementarityData._canonical_expression``): ``p <= q`` is ``p <= u`` (upper bound u = q) when
``q`` is a number or fixed, else ``l <= q`` (l = p) when ``p`` is, else ``0 <= q - p``; ``l <= e <=
u`` is a range (``l``, ``u`` numbers, mutable parameters or fixed expressions: their current
values; Pyomo's own transformations want constants); ``lhs == rhs`` an equality; anything else
(``m.z[1]**2``, ``x - y``, a variable) a free expression. Strict inequalities count as ``<=``, as in
Pyomo. An infinite bound is no bound. The slack of a one-sided side is ``s = e - l`` or ``s = u - e``.
Then (:attr:`ConditionForm.form`, in :attr:`PyomoProgram.conditions`):

* ``"equality"``: a side ``lhs == rhs`` (the first, if both are) makes the condition the row
  ``lhs - rhs = 0``; the other side is ignored, as Pyomo does (a warning names it when it had a
  bound);
* ``"pair"``: one bound on each side (``e1 >= l1 _|_ e2 >= l2``, ``<=`` variants, either order):
  ``0 <= s1 _|_ s2 >= 0``;
* a side with bounds ``l <= e1 <= u`` against a free ``e2`` (either order), the mixed
  complementarity (MCP) form: ``e1`` in ``[l, u]``; ``e1 = l`` => ``e2 >= 0``; ``e1 = u`` =>
  ``e2 <= 0``; ``l < e1 < u`` => ``e2 = 0``. With one finite bound this is the form
  ``complements(e1 >= l, e2)`` (``e2 >= 0`` at the bound; ``e1 <= u``: ``e2 <= 0``), which
  pyomo.mpec's transformations refuse (they count three missing bounds) but which is their
  ``complements(inequality(l, e1, inf), e2)`` exactly:

  - ``"lower"`` (``u`` infinite): ``0 <= e1 - l _|_ e2 >= 0``;
  - ``"upper"`` (``l`` infinite): ``0 <= u - e1 _|_ -e2 >= 0``;
  - ``"box"`` (``l < u``, both finite): two variables ``w+, w- >= 0`` (the Variables ``w``), the
    row ``e2 - w+ + w- = 0`` and the pairs ``0 <= e1 - l _|_ w+ >= 0``, ``0 <= u - e1 _|_ w- >= 0``
    (``w+ = max(e2, 0)``, ``w- = max(-e2, 0)`` at every feasible point; they start there);
  - ``"fixed"`` (``l == u``): the row ``e1 = l``, ``e2`` free;
  - ``"free"`` (a range with both bounds infinite): the row ``e2 = 0``.

The written form decides the sign of the free side: ``0 <= 1 - x _|_ y`` bounds ``1 - x`` below
(``y >= 0`` at ``x = 1``), ``x <= 1 _|_ y`` bounds ``x`` above (``y <= 0`` at ``x = 1``), as in Pyomo.
What Pyomo refuses is refused with :class:`UnsupportedProgramError` naming the condition: three
or four finite bounds (a range against a bounded side, ``0 <= x <= 1 _|_ y >= 0``, or two ranges),
two free sides, a range whose bound has unfixed variables. Contradictory bounds of a side (``l > u``
through parameters, ``e >= inf``) raise :class:`~contactmp.errors.InputError` whose ``field`` is
the condition's name.

Without ``strategy``, an untransformed Complementarity raises
:class:`~contactmp.errors.UnsupportedProgramError`; so do discrete variables and the NL operators
CasADi's importer cannot read (if-then-else ``Expr_if``, asinh, acosh, atanh, ...); an unknown
IPOPT option raises :class:`~contactmp.errors.OptionError`.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

import casadi
from pyomo.common.collections import Bunch
from pyomo.opt import (
    ProblemSense,
    Solution,
    SolutionStatus,
    SolverFactory,
    SolverResults,
    SolverStatus,
    TerminationCondition,
)
from pyomo.opt.base.solvers import OptSolver

from contactmp.errors import OptionError, UnsupportedProgramError, did_you_mean

from contactmp.result import Result, Status
from contactmp.solvers.ipopt import IpoptNLP, ipopt_option_types, ipopt_status

if TYPE_CHECKING:  # pragma: no cover
    from contactmp.program import Program, Variables

__all__ = ["NAME", "CasadiIpopt", "PYOMO_STATUS", "SUFFIXES", "PyomoProgram", "ConditionForm",
           "CONDITION_FORMS", "pyomo_to_program"]

NAME = "contactmp_ipopt"
logger = logging.getLogger("contactmp.solvers.nlp.pyomo_ipopt")

_TC, _SS, _SOL = TerminationCondition, SolverStatus, SolutionStatus
#: Status -> (termination, solver status, solution status) of the Pyomo results. A plain NLP solve
#: maps IPOPT's text through :func:`~contactmp.solvers.ipopt.ipopt_status` (IPOPT's claim, no check
#: of ours), a solve with ``strategy`` reports the verified status of ``solve_program``.
PYOMO_STATUS: dict[Status, tuple[TerminationCondition, SolverStatus, SolutionStatus]] = {
    Status.SOLVED: (_TC.optimal, _SS.ok, _SOL.optimal),
    Status.MAX_ITER: (_TC.maxIterations, _SS.warning, _SOL.stoppedByLimit),
    Status.TIME_LIMIT: (_TC.maxTimeLimit, _SS.warning, _SOL.stoppedByLimit),
    Status.INFEASIBLE: (_TC.infeasible, _SS.warning, _SOL.infeasible),
    Status.NUMERICAL_ERROR: (_TC.other, _SS.warning, _SOL.other),
    Status.NOT_SOLVED: (_TC.other, _SS.warning, _SOL.other),
}
#: import Suffixes this plugin fills (see ``_suffix_values`` for the sign conventions)
SUFFIXES = ("dual", "rc", "ipopt_zL_out", "ipopt_zU_out")

# AMPL NL operator codes that CasADi's importer rejects, for readable errors
_NL_OPCODES = {4: "rem", 11: "min", 12: "max", 35: "if-then-else (Expr_if)", 47: "atanh",
               50: "asinh", 52: "acosh", 55: "intdiv", 57: "round", 58: "trunc", 65: "if-then-else",
               72: "if-then-else"}


@SolverFactory.register(NAME, doc="IPOPT bundled with CasADi: .nl -> casadi.NlpBuilder -> nlpsol")
class CasadiIpopt(OptSolver):
    """Pyomo solver plugin: write .nl, import it with CasADi, solve with CasADi's IPOPT."""

    def __init__(self, **kwds: Any):
        kwds.setdefault("type", NAME)
        super().__init__(**kwds)
        self._capabilities = Bunch(linear=True, quadratic_objective=True,
                                   quadratic_constraint=True, integer=False, sos1=False,
                                   sos2=False)
        #: the Result / PyomoProgram of the last solve with a ``strategy`` (else None)
        self.last_result: Result | None = None
        self.last_program: PyomoProgram | None = None

    def available(self, exception_flag: bool = True) -> bool:
        """True if CasADi was built with its IPOPT plugin."""
        ok = bool(casadi.has_nlpsol("ipopt"))
        if not ok and exception_flag:
            raise RuntimeError("casadi has no 'ipopt' nlpsol plugin")
        return ok

    def _get_version(self) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", casadi.__version__)[:3])

    def warm_start_capable(self) -> bool:
        return False

    def solve(self, *args: Any, **kwds: Any) -> SolverResults:
        """Solve the Pyomo model ``args[0]`` with IPOPT through CasADi (module docstring)."""
        if len(args) != 1:
            raise ValueError(f"{NAME}: solve() takes exactly one model, got {len(args)}")
        model = args[0]
        if hasattr(model, "is_constructed") and not model.is_constructed():
            raise RuntimeError(f"{NAME}: model {model.name} has unconstructed components")
        options = dict(self.options)
        options.update(kwds.pop("options", None) or {})
        options.update(self._options_string_to_dict(kwds.pop("options_string", "") or ""))
        tee = bool(kwds.pop("tee", False))
        load = bool(kwds.pop("load_solutions", True))
        timelimit = kwds.pop("timelimit", None)
        keepfiles = bool(kwds.pop("keepfiles", False))
        suffixes = list(kwds.pop("suffixes", None) or [])
        report_timing = bool(kwds.pop("report_timing", False))
        kwds.pop("symbolic_solver_labels", None)  # accepted; the .nl file never carries labels
        kwds.pop("logfile", None)
        if kwds:
            raise ValueError(f"Solver={NAME} passed unrecognized keywords: {sorted(kwds)}")
        self.last_result = self.last_program = None
        run = dict(tee=tee, load=load, timelimit=timelimit, keepfiles=keepfiles, suffixes=suffixes,
                   report_timing=report_timing)
        if options.get("strategy") is not None:
            results, self.last_result, self.last_program = _solve_mpcc(model, options, **run)
            return results
        options.pop("strategy", None)
        return _solve(model, options, **run)


def _check_model(model: Any) -> None:
    from pyomo.mpec import Complementarity

    left = [c.name for c in model.component_data_objects(Complementarity, active=True)]
    if left:
        raise UnsupportedProgramError(
            f"{NAME}: untransformed Complementarity components {left[:5]}; apply "
            "TransformationFactory('mpec.simple_nonlinear') (or another mpec transformation) first, "
            "or pass the solver option strategy='scholtes' (or another MPCC strategy)"
        )


def _write_nl(model: Any, path: str) -> Any:
    from pyomo.repn.plugins.nl_writer import NLWriter

    with open(path, "w", newline="") as stream:
        return NLWriter().write(model, stream, None, None, symbolic_solver_labels=False,
                                scale_model=False, linear_presolve=False,
                                skip_trivial_constraints=True, export_defined_variables=True)


def _import_nl(path: str) -> casadi.NlpBuilder:
    nl = casadi.NlpBuilder()
    try:
        nl.import_nl(path, {})
    except RuntimeError as err:
        msg = str(err).strip().splitlines()[-1]
        code = re.search(r"operation: \"?(\d+)", msg)
        what = ""
        if code:
            what = f" (AMPL operator {_NL_OPCODES.get(int(code.group(1)), code.group(1))})"
        raise UnsupportedProgramError(
            f"{NAME}: CasADi's NL importer cannot read this model{what}: {msg}") from None
    return nl


def _make_results(model: Any, info: Any, sense: int) -> SolverResults:
    results = SolverResults()
    results.problem.name = model.name
    results.problem.number_of_variables = len(info.variables)
    results.problem.number_of_constraints = len(info.constraints)
    results.problem.number_of_objectives = len(info.objectives)
    results.problem.sense = ProblemSense.maximize if sense < 0 else ProblemSense.minimize
    results.solver.name = f"{NAME} (IPOPT via CasADi {casadi.__version__})"
    return results


def _set_status(results: SolverResults, status: str, detail: str = "", verdict: Status | None = None,
                termination: str = "") -> tuple:
    """Set the solver status of ``results`` from IPOPT's text ``status`` (the Pyomo status of
    ``verdict`` when given, else IPOPT's claim); ``(termination, solver status, solution status)``."""
    tc, ss, sol = PYOMO_STATUS[ipopt_status(status, verified=True) if verdict is None else verdict]
    results.solver.status = ss
    results.solver.termination_condition = tc
    results.solver.message = status
    results.solver.termination_message = termination or f"IPOPT return_status={status}" + (
        f": {detail}" if detail else "")
    results.solver.return_code = 0
    return tc, ss, sol


def _trivially_infeasible(model: Any, err: Exception, found: str) -> SolverResults:
    """The results of a model with a violated row that has no variables."""
    results = SolverResults()
    results.problem.name = model.name
    results.solver.name = NAME
    results.solver.status = SolverStatus.warning
    results.solver.termination_condition = TerminationCondition.infeasible
    results.solver.message = f"trivially infeasible ({found})"
    results.solver.termination_message = str(err)
    return results


def _deliver(results: SolverResults, model: Any, info: Any, xs: list[float],
             values: dict[str, tuple[str, list[float]]], objective: float, sense: int, tc: Any, ss: Any,
             sol_status: SolutionStatus, text: str, load: bool, import_suffixes: dict[str, Any],
             warning: tuple[Any, str], missing: str) -> None:
    """The answer ``xs`` into ``results``: the objective bound it gives, then the values loaded into
    the model (``load``; ``warning``: the status and detail logged when it is not ``ok``) or kept as a
    Solution for ``model.solutions.load_from(results)``; nothing when ``xs`` is not finite (logging
    ``missing`` with ``load``)."""
    if not np.isfinite(xs).all():
        if load:
            logger.warning("%s: %s", NAME, missing)
        return
    if info.objectives and tc == TerminationCondition.optimal:  # a feasible point bounds f*
        if sense > 0:
            results.problem.upper_bound = objective
        else:
            results.problem.lower_bound = objective
    if load:
        if ss != SolverStatus.ok:
            logger.warning("%s: loading a solution with status %s into model %r: %s", NAME, warning[0],
                           model.name, warning[1])
        _load(info, xs, values, import_suffixes)
    else:
        soln, smap = _solution(info, xs, values, objective, sol_status, text)
        results.solution.insert(soln)
        results._smap = smap  # model.solutions.load_from(results) maps labels through it
        results._smap_id = None


def _solve(model: Any, options: dict[str, Any], *, tee: bool, load: bool,
           timelimit: float | None, keepfiles: bool, suffixes: list[str],
           report_timing: bool) -> SolverResults:
    from pyomo.common.errors import InfeasibleConstraintException
    from pyomo.core.base.suffix import active_import_suffix_generator

    t0 = time.perf_counter()
    _check_model(model)
    import_suffixes = dict(active_import_suffix_generator(model))
    wanted = set(suffixes) | set(import_suffixes)
    unknown = wanted - set(SUFFIXES)
    if unknown:
        logger.warning("%s: cannot provide solution suffixes %s (only %s)", NAME, sorted(unknown),
                       list(SUFFIXES))
    tmpdir = tempfile.mkdtemp(prefix="contactmp_ipopt_")
    try:
        path = os.path.join(tmpdir, "model.nl")
        try:
            info = _write_nl(model, path)
        except InfeasibleConstraintException as err:
            return _trivially_infeasible(model, err, "found by the NL writer")
        discrete = [v.name for v in info.variables if v.is_integer()]
        if discrete:
            raise UnsupportedProgramError(
                f"{NAME}: IPOPT cannot take discrete variables: {discrete[:5]}"
                + (" ..." if len(discrete) > 5 else "")
            )
        if not info.variables:
            raise UnsupportedProgramError(
                f"{NAME}: no unfixed variable appears in the active constraints or objective"
            )
        t_write = time.perf_counter()
        nl = _import_nl(path)
        t_import = time.perf_counter()
    finally:
        if keepfiles:
            logger.info("%s: kept %s", NAME, tmpdir)
        else:
            shutil.rmtree(tmpdir, ignore_errors=True)

    sense = -1 if any(o.sense == -1 for o in info.objectives) else 1  # pyomo: maximize == -1
    results = _make_results(model, info, sense)
    x = casadi.vertcat(*nl.x)
    f = nl.f if not nl.f.is_empty() else casadi.MX(0)
    g = casadi.vertcat(*nl.g) if len(nl.g) else casadi.MX(0, 1)
    lbx, ubx, lbg, ubg = nl.x_lb, nl.x_ub, nl.g_lb, nl.g_ub
    if any(lo > up for lo, up in zip(lbx, ubx)) or any(lo > up for lo, up in zip(lbg, ubg)):
        _set_status(results, "Infeasible_Problem_Detected", "a lower bound exceeds its upper bound")
        return results
    ipopt: dict[str, Any] = {"print_level": 5 if tee else 0, "sb": "yes"}
    top: dict[str, Any] = {"expand": True, "print_time": tee}
    if timelimit is not None:
        ipopt["max_wall_time"] = float(timelimit)
    for key, val in options.items():
        if key.startswith("casadi."):
            top[key[len("casadi."):]] = val
        else:
            ipopt[key] = val
    try:
        solver = IpoptNLP({"x": x, "f": f, "g": g}, ipopt, nlpsol=top, name="contactmp_ipopt")
    except OptionError as err:
        raise OptionError(f"{NAME}: {err}") from None
    x0 = [v.value if v.value is not None else 0.0 for v in info.variables]
    t_build = time.perf_counter()
    sol = solver.solve(x0, [], lbx, ubx, lbg, ubg)
    status = sol.status
    t_solve = time.perf_counter()
    tc, ss, sol_status = _set_status(results, status, sol.detail)
    results.solver.iterations = sol.iterations
    results.solver.wallclock_time = t_solve - t0
    results.solver.time = t_solve - t_build
    if report_timing:
        print(f"      {t_write - t0:6.3f} s write .nl, {t_import - t_write:6.3f} s import, "
              f"{t_build - t_import:6.3f} s nlpsol, {t_solve - t_build:6.3f} s IPOPT")
    values = _suffix_values(sense, sol.lam_g.tolist(), sol.lam_x.tolist(), wanted)
    _deliver(results, model, info, sol.x.tolist(), values, sense * sol.f, sense, tc, ss, sol_status, status,
             load, import_suffixes, (ss, status), f"no solution to load (IPOPT return_status={status})")
    return results


def _suffix_values(sense: int, lam_g: list[float], lam_x: list[float],
                   wanted: set[str]) -> dict[str, tuple[str, list[float]]]:
    """Suffix name -> ("con" | "var", values), in the sign conventions of IPOPT's AMPL interface.

    CasADi's Lagrangian is ``sign*f + lam_g'g + lam_x'x`` (``sign`` = -1 when maximizing).
    ``dual`` = d f*/d(constraint bound) = ``-sign*lam_g``; ``rc`` = d f*/d(variable bound) =
    ``-sign*lam_x``; ``ipopt_zL_out`` / ``ipopt_zU_out`` are IPOPT's bound multipliers as its
    AMPL driver reports them (z_L >= 0 and -z_U <= 0 when minimizing, signs swapped when
    maximizing).
    """
    out: dict[str, tuple[str, list[float]]] = {}
    if "dual" in wanted:
        out["dual"] = ("con", [-sense * lam for lam in lam_g])
    if "rc" in wanted:
        out["rc"] = ("var", [-sense * lam for lam in lam_x])
    if "ipopt_zL_out" in wanted:
        out["ipopt_zL_out"] = ("var", [sense * max(-lam, 0.0) for lam in lam_x])
    if "ipopt_zU_out" in wanted:
        out["ipopt_zU_out"] = ("var", [-sense * max(lam, 0.0) for lam in lam_x])
    return out


def _solution(info: Any, xs: list[float], values: dict[str, tuple[str, list[float]]],
              objective: float, sol_status: SolutionStatus, status: str) -> tuple[Solution, Any]:
    from pyomo.core.expr.symbol_map import SymbolMap

    smap = SymbolMap()
    soln = Solution()
    soln.status = sol_status
    soln.message = status
    key = {name: name[0].upper() + name[1:] for name in values}
    for j, v in enumerate(info.variables):
        smap.addSymbol(v, f"v{j}")
        entry = {"Value": xs[j]}
        entry.update({key[n]: vals[j] for n, (kind, vals) in values.items() if kind == "var"})
        soln.variable[f"v{j}"] = entry
    for i, c in enumerate(info.constraints):
        smap.addSymbol(c, f"c{i}")
        entry = {key[n]: vals[i] for n, (kind, vals) in values.items() if kind == "con"}
        if entry:
            soln.constraint[f"c{i}"] = entry
    for k, o in enumerate(info.objectives):
        smap.addSymbol(o, f"o{k}")
        soln.objective[f"o{k}"] = {"Value": objective}
    return soln, smap


def _load(info: Any, xs: list[float], values: dict[str, tuple[str, list[float]]],
          import_suffixes: dict[str, Any]) -> None:
    from pyomo.core.staleflag import StaleFlagManager

    StaleFlagManager.mark_all_as_stale()
    for v, val in zip(info.variables, xs):
        v.set_value(val, skip_validation=True)
    for name, suffix in import_suffixes.items():
        suffix.clear_all_values()
        if name in values:
            kind, vals = values[name]
            for obj, val in zip(info.variables if kind == "var" else info.constraints, vals):
                suffix[obj] = val
    StaleFlagManager.mark_all_as_stale(delayed=True)


# -- Complementarity models solved with an MPCC strategy (the model read into a Program) -------
#: solver options read by the strategy path itself (besides the fields of NLPOptions)
_PLUGIN_KEYS = ("strategy", "backend")

#: the forms of a pyomo.mpec condition, as :attr:`ConditionForm.form` names them (see the module
#: docstring for the equations)
CONDITION_FORMS = ("pair", "equality", "lower", "upper", "box", "fixed", "free")


@dataclass(frozen=True)
class ConditionForm:
    """How one ``pyomo.mpec`` condition became rows, pairs and auxiliary variables of the Program.

    ``form`` is one of :data:`CONDITION_FORMS`; ``rows`` are positions in the constraint ``"g"``,
    ``pairs`` positions in the complementarity ``"pairs"`` and ``aux`` positions in the
    Variables ``"w"`` (the ``w+``, ``w-`` of a ``"box"`` condition), all of
    :attr:`PyomoProgram.program`.
    """

    condition: Any
    form: str
    rows: tuple[int, ...] = ()
    pairs: tuple[int, ...] = ()
    aux: tuple[int, ...] = ()


@dataclass(eq=False)
class PyomoProgram:
    """A :class:`~contactmp.program.Program` read from a Pyomo model, with the maps back to it.

    ``program`` has the Variables handle ``x`` (``program["x"]``): ``x[j]`` is the Pyomo variable
    ``variables[j]`` (the unfixed variables met in the active objective, rows and complementarity
    conditions, in the model's declaration order, so a model made by
    :meth:`Program.to_pyomo <contactmp.program.Program.to_pyomo>` keeps its program's order when
    every variable is used). A model with a box condition ``l <= e1 <= u _|_ e2`` also has the
    Variables handle ``w`` (``w >= 0``, two per box condition, after ``x``). The rows
    (constraint ``"g"``) come from ``constraints``: the active rows with a bound in declaration
    order, then the rows of the conditions in declaration order (a condition owns at most one
    row); the pairs (complementarity ``"pairs"``) from ``pairs`` (a box
    condition owns two consecutive pairs). ``conditions`` says how each active condition was
    mapped (:class:`ConditionForm`). The objective is ``sense * (model objective)``, minimized
    (``sense = -1`` for a maximization).
    """

    program: Program
    variables: list[Any]
    constraints: list[Any]
    pairs: list[Any]
    sense: int
    conditions: list[ConditionForm] = dataclasses.field(default_factory=list)
    #: x (the model's columns) -> the free sides e2 of the box conditions, one per box, in order
    _free_sides: casadi.Function | None = None

    @property
    def x(self) -> Variables:
        """The Variables handle of the model's columns."""
        return self.program["x"]  # type: ignore[return-value]

    @property
    def n_aux(self) -> int:
        """The number of auxiliary variables ``w`` (two per box condition)."""
        return self.program.n_x - len(self.variables)

    def values(self) -> np.ndarray:
        """The model's current values of :attr:`variables` (``None`` -> nan), in program order."""
        return np.array([np.nan if v.value is None else float(v.value) for v in self.variables])

    def aux_values(self, x: Any) -> np.ndarray:
        """The auxiliary variables of the model point ``x`` (length ``len(variables)``): for each
        box condition ``w+ = max(e2, 0)``, ``w- = max(-e2, 0)``, the only values with which the
        Program's rows and pairs can hold when ``x`` satisfies the condition."""
        xv = np.asarray(x, dtype=float).ravel()
        if xv.shape != (len(self.variables),):
            from contactmp.errors import InputError

            raise InputError("x", f"must have length {len(self.variables)}, got shape {xv.shape}")
        if self._free_sides is None:
            return np.zeros(0)
        e2 = np.asarray(self._free_sides(xv), dtype=float).ravel()
        return np.column_stack([np.maximum(e2, 0.0), np.maximum(-e2, 0.0)]).ravel()

    def program_x(self, x: Any = None) -> np.ndarray:
        """The program vector of the model point ``x`` (default: the model's current values,
        ``None`` -> nan): ``x`` then :meth:`aux_values`. ``program.residuals(program_x())`` judges
        the model's point by the Program's rows, bounds and pairs."""
        xv = self.values() if x is None else np.asarray(x, dtype=float).ravel()
        return np.concatenate([xv, self.aux_values(xv)])

    def load(self, x: Any) -> None:
        """Set the model's variables to ``x``: a program vector (length ``program.n_x``) or its
        model part (length ``len(variables)``); Pyomo stale flags updated."""
        xv = np.asarray(x, dtype=float).ravel()
        if xv.shape not in {(len(self.variables),), (self.program.n_x,)}:
            from contactmp.errors import InputError

            raise InputError("x", f"must have length {len(self.variables)} or {self.program.n_x}, "
                             f"got shape {xv.shape}")
        _load(self, xv[:len(self.variables)].tolist(), {}, {})


def _is_fixed(e: Any) -> bool:
    """Pyomo's test of a relation's bound: a number, or an expression whose variables are fixed."""
    from pyomo.common.numeric_types import native_numeric_types

    return type(e) in native_numeric_types or (hasattr(e, "is_fixed") and bool(e.is_fixed()))


@dataclass
class _Side:
    """One side of a condition in Pyomo's canonical form ``lo <= body <= hi`` (converted; an
    infinite bound is None), an equality ``body = 0`` or a bare expression ``body``."""

    kind: str                 # "rel" or "expr"
    body: Any                 # SX or float
    lo: float | None = None
    hi: float | None = None
    arg: Any = None           # the Pyomo side itself (for messages)

    @property
    def n_bounds(self) -> int:
        """How many of ``lo``, ``hi`` are finite."""
        return (self.lo is not None) + (self.hi is not None)

    @property
    def text(self) -> str:
        """The side as Pyomo prints it."""
        return str(self.arg)

    def slack(self) -> Any:
        """The side as ``s >= 0``: ``body - lo`` (lower bound) or ``hi - body`` (upper bound)."""
        if self.lo is not None:
            return self.body if self.lo == 0.0 else self.body - self.lo
        return -self.body if self.hi == 0.0 else self.hi - self.body


def _bound(cdata: Any, val: Any, which: str, arg: Any) -> float | None:
    """A converted bound: a float, None for an infinite one on its own side; InputError for NaN
    or an infinite bound that no point meets."""
    from contactmp.errors import InputError

    v = float(val)
    if np.isnan(v) or (which == "lower" and v == np.inf) or (which == "upper" and v == -np.inf):
        raise InputError(cdata.name, f"complementarity side {arg} has the {which} bound {v}")
    return None if np.isinf(v) else v


def _side(conv: Any, cdata: Any, arg: Any) -> _Side:
    """One side (not an equality) of ``cdata`` in Pyomo's canonical form
    (``ComplementarityData._canonical_expression``): ``a <= b`` with ``b`` fixed is ``a`` bounded
    above by ``b``, with ``a`` fixed ``b`` bounded below by ``a``, else ``b - a >= 0``;
    ``l <= e <= u`` needs fixed ``l``, ``u``; anything else is a free expression."""
    from pyomo.core.expr.relational_expr import InequalityExpression, RangedExpression, RelationalExpression

    if isinstance(arg, InequalityExpression):
        a, b = arg.args
        if _is_fixed(b):
            return _Side("rel", conv(a), None, _bound(cdata, conv(b), "upper", arg), arg)
        if _is_fixed(a):
            return _Side("rel", conv(b), _bound(cdata, conv(a), "lower", arg), None, arg)
        return _Side("rel", conv(b) - conv(a), 0.0, None, arg)
    if isinstance(arg, RangedExpression):
        lo, e, hi = arg.args
        for name, bnd in (("lower", lo), ("upper", hi)):
            if not _is_fixed(bnd):
                raise UnsupportedProgramError(
                    f"{NAME}: complementarity {cdata.name}: the {name} bound of {arg} has unfixed "
                    "variables; a range l <= e1 <= u needs numbers (or fixed expressions) l, u")
        return _Side("rel", conv(e), _bound(cdata, conv(lo), "lower", arg),
                     _bound(cdata, conv(hi), "upper", arg), arg)
    if isinstance(arg, bool):
        raise UnsupportedProgramError(
            f"{NAME}: complementarity {cdata.name} has {arg} as a side (a relation between numbers, "
            "which Python evaluated); a side is an inequality, a range l <= e <= u, an equality or "
            "an expression")
    if isinstance(arg, RelationalExpression):
        raise UnsupportedProgramError(
            f"{NAME}: complementarity {cdata.name} has {type(arg).__name__} {arg} as a side; a side "
            "is an inequality, a range l <= e <= u, an equality or an expression")
    return _Side("expr", conv(arg), arg=arg)


@dataclass
class _Mapped:
    """One condition as rows ``(expr, lo, hi)``, pairs ``(a, b)`` and box free sides (each box
    gets the auxiliary pair ``w+``, ``w-``)."""

    form: str
    rows: list[tuple[Any, float, float]] = dataclasses.field(default_factory=list)
    pairs: list[tuple[Any, Any]] = dataclasses.field(default_factory=list)
    box: Any = None           # the free side e2 of a "box" condition


def _map_condition(conv: Any, cdata: Any, wp: Any, wm: Any) -> _Mapped:
    """The rows and pairs of the condition ``cdata`` (the forms of the module docstring);
    ``wp``, ``wm`` are the auxiliary symbols a box condition uses."""
    from pyomo.core.expr.relational_expr import EqualityExpression, InequalityExpression, RangedExpression

    from contactmp.errors import InputError

    args = cdata._args
    eq = [k for k, arg in enumerate(args) if isinstance(arg, EqualityExpression)]
    if eq:  # as in Pyomo: the (first) equality side alone; the other side is not even read
        lhs, rhs = (conv(e) for e in args[eq[0]].args)
        other = args[1 - eq[0]]
        if isinstance(other, (InequalityExpression, RangedExpression)):
            logger.warning("%s: complementarity %s: the equality side %s makes the condition; the "
                           "other side %s is ignored, as pyomo.mpec does", NAME, cdata.name,
                           args[eq[0]], other)
        return _Mapped("equality", rows=[(lhs - rhs, 0.0, 0.0)])
    s1, s2 = (_side(conv, cdata, arg) for arg in args)
    free1 = s1.kind == "expr" or s1.n_bounds == 0
    free2 = s2.kind == "expr" or s2.n_bounds == 0
    if not free1 and not free2:
        if s1.n_bounds == 1 and s2.n_bounds == 1:
            return _Mapped("pair", pairs=[(s1.slack(), s2.slack())])
        raise UnsupportedProgramError(
            f"{NAME}: complementarity {cdata.name} has {s1.n_bounds + s2.n_bounds} finite bounds "
            f"({s1.text} _|_ {s2.text}); a condition has exactly two: one on each side, or "
            "l <= e1 <= u with an expression e2 on the other side")
    if free1 and free2:  # a range with two infinite bounds is the bounded side of a free one
        rel = [s for s in (s1, s2) if s.kind == "rel"]
        if len(rel) != 1:
            raise UnsupportedProgramError(
                f"{NAME}: complementarity {cdata.name} has no finite bound ({s1.text} _|_ "
                f"{s2.text}); one side must be bounded (e1 >= l, e1 <= u or l <= e1 <= u)")
        bounded, free = (s1, s2) if rel[0] is s1 else (s2, s1)
    else:
        bounded, free = (s2, s1) if free1 else (s1, s2)
    lo, e1, hi, e2 = bounded.lo, bounded.body, bounded.hi, free.body
    if lo is None and hi is None:
        return _Mapped("free", rows=[(e2, 0.0, 0.0)])
    if hi is None:
        return _Mapped("lower", pairs=[(bounded.slack(), e2)])
    if lo is None:
        return _Mapped("upper", pairs=[(bounded.slack(), -e2)])
    if lo > hi:
        raise InputError(cdata.name, f"complementarity side {bounded.text} has lower bound {lo} > "
                                     f"upper bound {hi}")
    if lo == hi:
        return _Mapped("fixed", rows=[(e1, lo, lo)])
    low = e1 if lo == 0.0 else e1 - lo
    return _Mapped("box", rows=[(e2 - wp + wm, 0.0, 0.0)], pairs=[(low, wp), (hi - e1, wm)], box=e2)


@dataclass(eq=False)
class _Read:
    """A Pyomo model read into SX (placeholder symbols), before it becomes a Program."""

    variables: list[Any]      # declaration order
    symbols: casadi.SX        # placeholder symbols of ``variables``
    lbx: np.ndarray
    ubx: np.ndarray
    x0: np.ndarray
    f: Any                    # SX or float (minimized: sense * objective), None without objective
    sense: int
    objectives: list[Any]     # the active objective (at most one)
    rows: list[Any]
    g: list[Any]
    lbg: list[float]
    ubg: list[float]
    pairs: list[Any]
    a: list[Any]
    b: list[Any]
    conditions: list[ConditionForm] = dataclasses.field(default_factory=list)
    aux: list[casadi.SX] = dataclasses.field(default_factory=list)   # w+, w- placeholders
    boxes: list[Any] = dataclasses.field(default_factory=list)       # e2 of each box condition


_CONSTANT_ROW_TOL = 1e-8  # a row without variables is kept out; violated by more: infeasible


def _read_model(model: Any) -> _Read:
    """Convert the active objective, rows and complementarity conditions of ``model`` to SX.

    Raises Pyomo's ``InfeasibleConstraintException`` for a violated row without variables,
    :class:`UnsupportedProgramError` for more than one objective, discrete variables, a model
    without variables, a condition with another number of finite bounds than Pyomo's two (or what
    :class:`~contactmp.pyomo_bridge.PyomoToSX` cannot translate) and
    :class:`~contactmp.errors.InputError` (naming the condition) for contradictory bounds of a side.
    """
    import pyomo.environ as pyo
    from pyomo.common.errors import InfeasibleConstraintException
    from pyomo.mpec import Complementarity

    from contactmp.pyomo_bridge import PyomoToSX

    conv = PyomoToSX()
    objectives = list(model.component_data_objects(pyo.Objective, active=True, descend_into=True))
    if len(objectives) > 1:
        raise UnsupportedProgramError(
            f"{NAME}: {len(objectives)} active objectives ({objectives[0].name}, "
            f"{objectives[1].name}, ...); deactivate all but one")
    f, sense = None, 1
    if objectives:
        sense = -1 if objectives[0].sense == pyo.maximize else 1
        f = conv(objectives[0].expr)
        f = -f if sense < 0 else f
    rows: list[Any] = []
    g: list[Any] = []
    lbg: list[float] = []
    ubg: list[float] = []

    def add_row(owner: Any, e: Any, lo: float | None, hi: float | None) -> tuple[int, ...]:
        lo = -np.inf if lo is None else float(lo)
        hi = np.inf if hi is None else float(hi)
        if type(e) is float:
            if e < lo - _CONSTANT_ROW_TOL or e > hi + _CONSTANT_ROW_TOL:
                raise InfeasibleConstraintException(
                    f"row {owner.name} has no variables and is violated: {lo} <= {e} <= {hi}")
            return ()
        rows.append(owner)
        g.append(e)
        lbg.append(lo)
        ubg.append(hi)
        return (len(g) - 1,)

    for c in model.component_data_objects(pyo.Constraint, active=True, descend_into=True):
        if c.lb is None and c.ub is None:
            continue
        add_row(c, conv(c.body), c.lb, c.ub)
    pairs: list[Any] = []
    a: list[Any] = []
    b: list[Any] = []
    conditions: list[ConditionForm] = []
    aux: list[casadi.SX] = []
    boxes: list[Any] = []
    for cdata in model.component_data_objects(Complementarity, active=True, descend_into=True):
        if len(cdata._args) != 2:
            raise UnsupportedProgramError(f"{NAME}: complementarity {cdata.name} has no two sides")
        k = len(aux)
        wp, wm = casadi.SX.sym(f"w{k}"), casadi.SX.sym(f"w{k + 1}")
        mapped = _map_condition(conv, cdata, wp, wm)
        at_row = [i for e, lo, hi in mapped.rows for i in add_row(cdata, e, lo, hi)]
        at_pair = []
        for sa, sb in mapped.pairs:
            at_pair.append(len(a))
            pairs.append(cdata)
            a.append(sa)
            b.append(sb)
        at_aux: tuple[int, ...] = ()
        if mapped.box is not None:
            aux += [wp, wm]
            boxes.append(mapped.box)
            at_aux = (k, k + 1)
        conditions.append(ConditionForm(cdata, mapped.form, tuple(at_row), tuple(at_pair), at_aux))

    if not conv.variables:
        raise UnsupportedProgramError(
            f"{NAME}: no unfixed variable appears in the active constraints or objective")
    seen = {id(v): i for i, v in enumerate(conv.variables)}
    order = [seen[id(v)] for v in model.component_data_objects(pyo.Var, descend_into=True)
             if id(v) in seen]
    if len(order) < len(seen):  # variables of other blocks, used in this model
        have = set(order)
        order += [i for i in range(len(seen)) if i not in have]
    variables = [conv.variables[i] for i in order]
    bounds = [(v.lb, v.ub) for v in variables]
    return _Read(
        variables=variables,
        symbols=casadi.vertcat(*[conv.symbols[i] for i in order]),
        lbx=np.array([-np.inf if lo is None else float(lo) for lo, _ in bounds]),
        ubx=np.array([np.inf if hi is None else float(hi) for _, hi in bounds]),
        x0=np.array([0.0 if v.value is None else float(v.value) for v in variables]),
        f=f, sense=sense, objectives=objectives, rows=rows, g=g, lbg=lbg, ubg=ubg, pairs=pairs,
        a=a, b=b, conditions=conditions, aux=aux, boxes=boxes,
    )


def _program(read: _Read, model: Any) -> PyomoProgram:
    """The Program of a read ``model`` (see :class:`PyomoProgram`), named as the model."""
    from contactmp.program import Program

    prog = Program(str(getattr(model, "name", "") or "").strip() or "pyomo_model")
    xh = prog.add_variables("x", len(read.variables), lb=read.lbx, ub=read.ubx, init=read.x0)
    free_sides = None
    syms, subs = [read.symbols], [xh.sym]
    if read.aux:
        boxes = casadi.substitute([casadi.SX(e) for e in read.boxes], [read.symbols], [xh.sym])
        free_sides = casadi.Function("free_sides", [xh.sym], [casadi.vertcat(*boxes)])
        e2 = np.asarray(free_sides(read.x0), dtype=float).ravel()
        e2 = np.where(np.isfinite(e2), e2, 0.0)  # a start where e2 is undefined: w = 0
        w0 = np.column_stack([np.maximum(e2, 0.0), np.maximum(-e2, 0.0)]).ravel()
        wh = prog.add_variables("w", len(read.aux), lb=0.0, init=w0)
        syms, subs = [read.symbols, casadi.vertcat(*read.aux)], [xh.sym, wh.sym]
    parts = [casadi.SX(e) if type(e) is float else e
             for e in ([read.f] if read.f is not None else []) + read.g + read.a + read.b]
    # one substitution of the placeholders by the program's symbols (keeps the DAG)
    parts = casadi.substitute(parts, syms, subs)
    k = 1 if read.f is not None else 0
    n_g, n_c = len(read.g), len(read.a)
    if read.f is not None and not parts[0].is_constant():
        prog.add_cost(parts[0])
    if n_g:
        prog.add_constraint(casadi.vertcat(*parts[k:k + n_g]), read.lbg, read.ubg, name="g")
    if n_c:
        prog.add_complementarity(casadi.vertcat(*parts[k + n_g:k + n_g + n_c]),
                                 casadi.vertcat(*parts[k + n_g + n_c:]), name="pairs")
    _declare_stage_groups(prog, read, model)
    return PyomoProgram(program=prog, variables=read.variables, constraints=read.rows,
                        pairs=read.pairs, sense=read.sense, conditions=read.conditions,
                        _free_sides=free_sides)


def _declare_stage_groups(prog: Program, read: _Read, model: Any) -> None:
    """Declare in ``prog`` (read from ``model``) the stage groups of the program whose twin
    ``model`` is (``model.contactmp_stage_groups``, :class:`~contactmp.program.PyomoStageGroup`).

    A stage ``k`` of a group says ``g[g_index[k]] = g_T(x[x_index[k]], p[p_index[k]])`` in the
    source program's positions; here ``x_index[k]`` and ``g_index[k]`` become the columns of the
    stage's ``VarData`` and the rows of its ``ConstraintData`` in ``prog``. ``prog`` has no
    parameters (the reader takes a mutable ``Param`` at its current value), so the stages are
    grouped by the current values of their parameters ``p[p_index[k]]`` and each set of equal
    values gets the template ``g_T(z, p_T)`` with ``p_T`` put in (the template itself when it has
    no parameters: a Program without parameters, such as a ContactImplicitTO without
    ``model_parameters``, keeps one group and its template). Each group is checked against
    ``prog``'s rows (:meth:`~contactmp.program.Program.add_stage_group`). A group is left out, with
    a warning in the log, when the model was changed so that it no longer describes the read
    program: a variable of a stage fixed or unused, a row of a stage deactivated, deleted or unbounded (or
    never written), or rows that fail the check. Without its stage groups the read program gets the
    whole-program derivatives (``NLPOptions.derivatives`` ``"auto"`` -> ``"full"``): the same
    values, rounded another way, and on the sagittal Solo12 tasks another local minimizer of the
    homotopy (Scholtes 2.1261 against the program's 0.7121 on the CALIPSO gait).
    """
    import pyomo.environ as pyo

    from contactmp.errors import InputError
    from contactmp.stages import StageGroup, StageTemplate

    groups = getattr(model, "contactmp_stage_groups", None)
    if not groups:
        return
    column = {id(v): j for j, v in enumerate(read.variables)}
    row = {id(c): i for i, c in enumerate(read.rows)}  # a condition's one row: never a stage's
    for grp in groups:
        t = grp.template
        try:
            x_index = np.array([[column[id(v)] for v in stage] for stage in grp.x], dtype=np.int64)
            g_index = np.array([[row[id(c)] for c in stage] for stage in grp.g], dtype=np.int64)
        except KeyError:
            logger.warning("%s: stage group %r not declared: a variable of a stage is fixed or unused, or "
                           "a row of a stage is not in the model's active rows", NAME, t.name)
            continue
        values = np.array([[float(pyo.value(q)) for q in stage] for stage in grp.p], dtype=float)
        values = values.reshape(len(grp.x), t.n_p)
        sets, which = np.unique(values, axis=0, return_inverse=True)
        which = np.asarray(which).ravel()
        order = sorted(range(len(sets)), key=lambda u: int(np.flatnonzero(which == u)[0]))
        for n, u in enumerate(order):
            stages = np.flatnonzero(which == u)
            tmpl = t
            if t.n_p:
                g = casadi.substitute(t.g, t.p, casadi.DM(sets[u]))
                tmpl = StageTemplate(t.name if len(sets) == 1 else f"{t.name}_{n}", t.z, casadi.SX(0, 1), g)
            try:
                prog.add_stage_group(StageGroup(tmpl, x_index[stages], np.zeros((stages.size, 0), dtype=np.int64),
                                                g_index[stages]))
            except InputError as err:
                logger.warning("%s: stage group %r not declared: %s", NAME, t.name, err)


def pyomo_to_program(model: Any) -> PyomoProgram:
    """The :class:`~contactmp.program.Program` of a Pyomo model with ``pyomo.mpec`` conditions.

    ``min sense * objective s.t. l <= x <= u, lbg <= g(x, w) <= ubg, 0 <= a(x, w) _|_ b(x, w) >= 0,
    w >= 0`` read from the model's active components by
    :class:`~contactmp.pyomo_bridge.PyomoToSX` (fixed variables and mutable parameters at their
    current values); every form of condition is mapped exactly as the module docstring says (the
    auxiliary ``w`` only for box conditions ``l <= e1 <= u _|_ e2``). The initial guess is the
    variables' current values (``None`` -> 0) and :meth:`PyomoProgram.aux_values` of them. See
    :class:`PyomoProgram` for the orders. The model is not changed. Raises
    :class:`UnsupportedProgramError` (discrete variables, several objectives, a condition without
    exactly two finite bounds, an expression without CasADi form),
    :class:`~contactmp.errors.InputError` (a variable or a side with lower bound > upper bound)
    and Pyomo's ``InfeasibleConstraintException`` (a violated row without variables).
    """
    if hasattr(model, "is_constructed") and not model.is_constructed():
        raise RuntimeError(f"{NAME}: model {model.name} has unconstructed components")
    read = _read_model(model)
    bad = np.flatnonzero(read.lbx > read.ubx)
    if bad.size:
        from contactmp.errors import InputError

        v = read.variables[int(bad[0])]
        raise InputError("model", f"variable {v.name} has lower bound {v.lb} > upper bound {v.ub}")
    return _program(read, model)


def _mpcc_options(options: dict[str, Any], tee: bool,
                  timelimit: float | None) -> tuple[str, str, dict[str, Any]]:
    """``(strategy, backend, solve_program keyword options)`` from the plugin's options."""
    from contactmp.solvers.nlp.solve import NLPOptions

    fields = {f.name for f in dataclasses.fields(NLPOptions)} - {"ipopt"}
    table = ipopt_option_types()
    strategy = options.get("strategy")
    backend = options.get("backend", "casadi")
    kw: dict[str, Any] = {}
    ipopt: dict[str, Any] = {"print_level": 5} if tee else {}
    for key, val in options.items():
        if key in _PLUGIN_KEYS:
            continue
        if key.startswith("casadi."):
            raise OptionError(f"{NAME}: '{key}' (an nlpsol option) is not available with "
                              "strategy=...; pass IPOPT options instead")
        if key.startswith("ipopt."):
            ipopt[key[len("ipopt."):]] = val
        elif key in fields:
            kw[key] = val
        elif key == "ipopt":
            if not isinstance(val, dict):
                raise OptionError(f"{NAME}: option 'ipopt' must be a dict of IPOPT options")
            ipopt.update(val)
        else:
            if table and key not in table:
                hint = did_you_mean(key, [*_PLUGIN_KEYS, *fields, *table])
                raise OptionError(f"{NAME}: unknown option '{key}' (neither an MPCC option nor an "
                                  f"IPOPT option){hint}")
            ipopt[key] = val
    if timelimit is not None:
        kw.setdefault("time_limit", float(timelimit))
    kw["ipopt"] = ipopt
    return str(strategy), str(backend), kw


def _bound_cone_directions(pp: PyomoProgram, model: Any, kw: dict[str, Any]) -> None:
    """Bound the disk-form directions ``w`` of the cones of a twin made by
    :meth:`Program.to_pyomo <contactmp.program.Program.to_pyomo>` (its
    ``contactmp_cone_directions``) to ``[-r, r]`` in the read-back program, ``r`` the half-width
    that :func:`~contactmp.solvers.nlp.solve.solve_program` uses (``NLPOptions.cone_bound``), unless the
    options turn ``cone_bounds`` or ``sign_constraints`` off: ``solve_program`` puts these bounds
    on every NLP of a Program with cones, but the read-back program has no cone constructs, and
    without them the twin's homotopy took another path (the cone box task of
    ``case_studies/_cito.py`` with ``r = 1``: 36.114 against the CasADi route's 37.027; hopper cone
    with ``r = 1.5``: CasADi and the twin both 30.61561). A ``cone_bound`` that ``NLPOptions``
    refuses bounds nothing here; ``solve_program`` then raises the OptionError."""
    from contactmp.solvers.nlp.mpcc import valid_cone_bound
    from contactmp.solvers.nlp.solve import NLPOptions

    directions = getattr(model, "contactmp_cone_directions", None)
    defaults = NLPOptions()
    if not directions or not kw.get("cone_bounds", defaults.cone_bounds) \
            or not kw.get("sign_constraints", defaults.sign_constraints):
        return
    r = kw.get("cone_bound", defaults.cone_bound)
    if not valid_cone_bound(r):
        return
    column = {id(v): j for j, v in enumerate(pp.variables)}
    j = np.array([column[id(v)] for v in directions if id(v) in column and not v.fixed], dtype=int)
    if j.size:
        x = pp.x
        x.lb[j], x.ub[j] = np.maximum(x.lb[j], -float(r)), np.minimum(x.ub[j], float(r))


def _solve_mpcc(model: Any, options: dict[str, Any], *, tee: bool, load: bool,
                timelimit: float | None, keepfiles: bool, suffixes: list[str],
                report_timing: bool) -> tuple[SolverResults, Any, PyomoProgram | None]:
    """Solve ``model`` (Complementarity components untransformed) with an MPCC strategy of
    :func:`contactmp.solvers.nlp.solve.solve_program` on :func:`pyomo_to_program`'s Program."""
    from types import SimpleNamespace

    from pyomo.common.errors import InfeasibleConstraintException
    from pyomo.core.base.suffix import active_import_suffix_generator

    from contactmp.solvers.nlp.solve import solve_program

    del keepfiles  # no file is written on this path
    t0 = time.perf_counter()
    strategy, backend, kw = _mpcc_options(options, tee, timelimit)
    import_suffixes = dict(active_import_suffix_generator(model))
    wanted = set(suffixes) | set(import_suffixes)
    if wanted:
        logger.warning("%s: strategy=%r provides no solution suffixes (asked for %s)", NAME,
                       strategy, sorted(wanted))
    try:
        read = _read_model(model)
    except InfeasibleConstraintException as err:
        return _trivially_infeasible(model, err, "a violated row without variables"), None, None
    view = SimpleNamespace(variables=read.variables, constraints=read.rows,
                           objectives=read.objectives)
    results = _make_results(model, view, read.sense)
    results.solver.name = f"{NAME} (strategy {strategy}, IPOPT via {backend})"
    if (read.lbx > read.ubx).any():
        _set_status(results, "Infeasible_Problem_Detected", "a lower bound exceeds its upper bound")
        return results, None, None
    pp = _program(read, model)
    _bound_cone_directions(pp, model, kw)
    t_build = time.perf_counter()
    res = solve_program(pp.program, backend=backend, strategy=strategy, **kw)
    t_solve = time.perf_counter()
    tc, ss, sol_status = _set_status(results, res.backend_status, verdict=res.status,
                                     termination=f"{res.status.value}: {res.message}")
    results.problem.number_of_constraints = pp.program.n_g + pp.program.n_comp
    results.solver.iterations = int(res.iterations)
    results.solver.wallclock_time = t_solve - t0
    results.solver.time = t_solve - t_build
    if report_timing:
        print(f"      {t_build - t0:6.3f} s Pyomo -> Program, {t_solve - t_build:6.3f} s {strategy} "
              f"({len(res.extras.get('homotopy', []))} NLPs)")
    xs = [float(v) for v in np.asarray(res.x, dtype=float).ravel()[:len(read.variables)]]
    _deliver(results, model, view, xs, {}, read.sense * float(res.objective), read.sense,
             tc, ss, sol_status, res.backend_status, load, {}, (res.status.value, res.message),
             f"no finite point to load ({res.status.value})")
    return results, res, pp
