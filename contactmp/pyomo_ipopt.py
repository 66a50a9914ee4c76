"""Pyomo solver plugin ``SolverFactory("contactmp_ipopt")``: IPOPT through CasADi, no executable.

PyPI gives Pyomo no ``ipopt`` binary, but CasADi bundles IPOPT. Importing this module registers
the plugin. A solve:

1. writes the model as an AMPL ``.nl`` file in a temporary directory with Pyomo's NL writer
   (numeric labels, no scaling, no linear presolve); the writer's returned ``NLWriterInfo`` gives
   the exact order of the variables (column j of the file is ``info.variables[j]``) and of the
   constraints;
2. reads the file with CasADi's NL importer (``casadi.NlpBuilder.import_nl``);
3. solves ``min f(x) s.t. lbg <= g(x) <= ubg, lbx <= x <= ubx`` with ``casadi.nlpsol(..., "ipopt")``
   from the model's current variable values (``None`` -> 0);
4. loads x into the model (plus the import Suffixes ``dual`` and ``rc``, the sensitivities
   d f*/d(bound) of the constraints and variable bounds, and ``ipopt_zL_out`` / ``ipopt_zU_out``,
   in the sign conventions of IPOPT's AMPL driver) and returns a Pyomo ``SolverResults`` whose
   termination condition is mapped from IPOPT's ``return_status`` by :data:`IPOPT_STATUS` (the raw
   status is ``results.solver.message``). ``load_solutions=False`` leaves the model untouched and
   puts the solution in ``results`` for ``model.solutions.load_from(results)``.

Options: ``solver.options[k] = v`` (or ``solve(..., options={...})`` / ``options_string``) are
IPOPT options (``tol``, ``max_iter``, ``print_level``, ...); keys written ``"casadi.<name>"`` go to
``nlpsol`` itself. ``tee=True`` prints IPOPT's log; ``timelimit`` sets IPOPT's ``max_wall_time``.

Models with ``pyomo.mpec`` Complementarity components must be transformed first (for example
``TransformationFactory("mpec.simple_nonlinear").apply_to(m)``); discrete variables, and the NL
operators CasADi's importer cannot read (if-then-else ``Expr_if``, asinh, acosh, atanh, ...), raise
:class:`~contactmp.errors.UnsupportedProgramError`; an unknown IPOPT option raises
:class:`~contactmp.errors.OptionError`.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import time
from typing import Any

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

from contactmp.errors import OptionError, UnsupportedProgramError

__all__ = ["NAME", "CasadiIpopt", "IPOPT_STATUS", "SUFFIXES"]

NAME = "contactmp_ipopt"
logger = logging.getLogger("contactmp.pyomo_ipopt")

_TC, _SS, _SOL = TerminationCondition, SolverStatus, SolutionStatus
#: IPOPT return_status (as CasADi reports it) -> (termination, solver status, solution status).
#: Statuses whose iterate is meaningful carry ok/warning so the iterate can be loaded.
IPOPT_STATUS: dict[str, tuple[TerminationCondition, SolverStatus, SolutionStatus]] = {
    "Solve_Succeeded": (_TC.optimal, _SS.ok, _SOL.optimal),
    "Solved_To_Acceptable_Level": (_TC.optimal, _SS.ok, _SOL.optimal),
    "Feasible_Point_Found": (_TC.feasible, _SS.ok, _SOL.feasible),
    "Infeasible_Problem_Detected": (_TC.infeasible, _SS.warning, _SOL.infeasible),
    "Maximum_Iterations_Exceeded": (_TC.maxIterations, _SS.warning, _SOL.stoppedByLimit),
    "Maximum_CpuTime_Exceeded": (_TC.maxTimeLimit, _SS.warning, _SOL.stoppedByLimit),
    "Maximum_WallTime_Exceeded": (_TC.maxTimeLimit, _SS.warning, _SOL.stoppedByLimit),
    "Diverging_Iterates": (_TC.unbounded, _SS.warning, _SOL.unbounded),
    "User_Requested_Stop": (_TC.userInterrupt, _SS.aborted, _SOL.stoppedByLimit),
    "Search_Direction_Becomes_Too_Small": (_TC.other, _SS.warning, _SOL.other),
    "Restoration_Failed": (_TC.other, _SS.warning, _SOL.other),
    "Error_In_Step_Computation": (_TC.other, _SS.warning, _SOL.other),
    "Not_Enough_Degrees_Of_Freedom": (_TC.invalidProblem, _SS.error, _SOL.error),
    "Invalid_Problem_Definition": (_TC.invalidProblem, _SS.error, _SOL.error),
    "Invalid_Number_Detected": (_TC.error, _SS.error, _SOL.error),
}
_ERROR = (_TC.error, _SS.error, _SOL.error)
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
        return _solve(model, options, tee=tee, load=load, timelimit=timelimit,
                      keepfiles=keepfiles, suffixes=suffixes, report_timing=report_timing)


def _check_model(model: Any) -> None:
    from pyomo.mpec import Complementarity

    left = [c.name for c in model.component_data_objects(Complementarity, active=True)]
    if left:
        raise UnsupportedProgramError(
            f"{NAME}: untransformed Complementarity components {left[:5]}; apply "
            "TransformationFactory('mpec.simple_nonlinear') (or another mpec transformation) first"
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


def _nlpsol_options(options: dict[str, Any], tee: bool, timelimit: float | None) -> dict[str, Any]:
    ipopt: dict[str, Any] = {"print_level": 5 if tee else 0, "sb": "yes"}
    top: dict[str, Any] = {"expand": True, "print_time": tee, "error_on_fail": False}
    if timelimit is not None:
        ipopt["max_wall_time"] = float(timelimit)
    for key, val in options.items():
        if key.startswith("casadi."):
            top[key[len("casadi."):]] = val
        else:
            ipopt[key] = val
    top["ipopt"] = ipopt
    return top


def _make_results(model: Any, info: Any, sense: int) -> SolverResults:
    results = SolverResults()
    results.problem.name = model.name
    results.problem.number_of_variables = len(info.variables)
    results.problem.number_of_constraints = len(info.constraints)
    results.problem.number_of_objectives = len(info.objectives)
    results.problem.sense = ProblemSense.maximize if sense < 0 else ProblemSense.minimize
    results.solver.name = f"{NAME} (IPOPT via CasADi {casadi.__version__})"
    return results


def _set_status(results: SolverResults, status: str, detail: str = "") -> tuple:
    tc, ss, sol = IPOPT_STATUS.get(status, _ERROR)
    results.solver.status = ss
    results.solver.termination_condition = tc
    results.solver.message = status
    results.solver.termination_message = f"IPOPT return_status={status}" + (
        f": {detail}" if detail else "")
    results.solver.return_code = 0
    return tc, ss, sol


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
            results = SolverResults()
            results.problem.name = model.name
            results.solver.name = NAME
            results.solver.status = SolverStatus.warning
            results.solver.termination_condition = TerminationCondition.infeasible
            results.solver.message = "trivially infeasible (found by the NL writer)"
            results.solver.termination_message = str(err)
            return results
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
    try:
        solver = casadi.nlpsol("contactmp_ipopt", "ipopt", {"x": x, "f": f, "g": g},
                               _nlpsol_options(options, tee, timelimit))
    except RuntimeError as err:
        msg = str(err).strip().splitlines()[-1]
        if "No such IPOPT option" in msg or "Unknown option" in msg:
            raise OptionError(f"{NAME}: {msg.split(': ', 1)[-1]}") from None
        raise
    x0 = [v.value if v.value is not None else 0.0 for v in info.variables]
    t_build = time.perf_counter()
    try:
        sol = solver(x0=x0, lbx=lbx, ubx=ubx, lbg=lbg, ubg=ubg)
        stats = solver.stats()
        status = str(stats.get("return_status", "unknown"))
        detail = ""
    except RuntimeError as err:  # evaluation errors CasADi raises instead of reporting
        sol, stats, status = None, {}, "NonIpopt_Exception_Thrown"
        detail = str(err).strip().splitlines()[-1]
    t_solve = time.perf_counter()
    tc, ss, sol_status = _set_status(results, status, detail)
    results.solver.iterations = int(stats.get("iter_count", 0))
    results.solver.wallclock_time = t_solve - t0
    results.solver.time = t_solve - t_build
    if report_timing:
        print(f"      {t_write - t0:6.3f} s write .nl, {t_import - t_write:6.3f} s import, "
              f"{t_build - t_import:6.3f} s nlpsol, {t_solve - t_build:6.3f} s IPOPT")
    if sol is None or ss == SolverStatus.error:
        if load:
            logger.warning("%s: no solution to load (IPOPT return_status=%s)", NAME, status)
        return results

    xs = [float(v) for v in sol["x"].full().ravel()]
    lam_g = [float(v) for v in sol["lam_g"].full().ravel()]
    lam_x = [float(v) for v in sol["lam_x"].full().ravel()]
    objective = sense * float(sol["f"])
    if info.objectives and tc == TerminationCondition.optimal:  # a feasible point bounds f*
        if sense > 0:
            results.problem.upper_bound = objective
        else:
            results.problem.lower_bound = objective
    values = _suffix_values(sense, lam_g, lam_x, wanted)
    if load:
        if ss != SolverStatus.ok:
            logger.warning("%s: loading a solution with status %s into model %r: %s",
                           NAME, ss, model.name, status)
        _load(info, xs, values, import_suffixes)
    else:
        soln, smap = _solution(info, xs, values, objective, sol_status, status)
        results.solution.insert(soln)
        results._smap = smap  # model.solutions.load_from(results) maps labels through it
        results._smap_id = None
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
