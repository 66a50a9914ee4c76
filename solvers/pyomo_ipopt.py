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
  :data:`contactmp.solvers.nlp.STRATEGIES`: ``"scholtes"``, ``"elastic_l1"``, ``"direct"``, ...).
  The model becomes a :class:`~contactmp.program.Program` (:func:`pyomo_to_program`; no .nl
  file) and is solved by
  :func:`contactmp.solvers.nlp.solve_program` -- the same homotopy, warm starts, IPOPT defaults
  (``bound_relax_factor = 0``, adaptive barrier) and independent residual checks as a Program
  built in CasADi. Options: ``strategy``, ``backend`` (``"casadi"`` or ``"cyipopt"``) and the
  fields of :class:`~contactmp.solvers.nlp.NLPOptions` (``tol``, ``max_iter``, ``comp_tol``,
  ``feas_tol``, ``sigma0``, ``sigma_factor``, ``sigma_min``, ``rho0``, ...; note that
  ``sigma_min`` is the homotopy's, not IPOPT's) are read by the plugin; every other key is an
  IPOPT option (``"ipopt.<name>"`` forces IPOPT, e.g. ``"ipopt.sigma_min"``). The termination
  condition is ``optimal`` only when the answer passed the checks (bounds, rows, ``max_i
  |min(a_i, b_i)|`` <= ``comp_tol``); no ``dual``/``rc`` suffixes are produced. The solver object
  keeps ``last_result`` (the :class:`~contactmp.result.Result`, with the homotopy in
  ``extras["homotopy"]``) and ``last_program`` (the :class:`PyomoProgram`). A pair must be
  ``complements(e1 >= l1, e2 >= l2)`` (any inequality on each side; an equality side makes the
  pair that equality, as in Pyomo); the box form ``l <= e1 <= u _|_ e2`` is refused.

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

__all__ = ["NAME", "CasadiIpopt", "PYOMO_STATUS", "SUFFIXES", "PyomoProgram", "pyomo_to_program"]

NAME = "contactmp_ipopt"
logger = logging.getLogger("contactmp.solvers.pyomo_ipopt")

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


@dataclass(eq=False)
class PyomoProgram:
    """A :class:`~contactmp.program.Program` read from a Pyomo model, with the maps back to it.

    ``program`` has one Variables handle ``x`` (``program["x"]``): ``x[j]`` is the Pyomo variable
    ``variables[j]`` (the unfixed variables met in the active objective, rows and complementarity
    conditions, in the model's declaration order, so a model made by
    :meth:`Program.to_pyomo <contactmp.program.Program.to_pyomo>` keeps its program's order when
    every variable is used). Its rows (constraint ``"g"``) come from ``constraints``: the
    active rows with a bound in declaration order, then the conditions with an equality side
    (a row ``lhs - rhs = 0``); its pairs (complementarity ``"pairs"``) are the other active
    ``Complementarity`` conditions ``pairs`` in declaration order, as ``0 <= a _|_ b >= 0`` with
    ``a = rhs - lhs`` for a side ``lhs <= rhs``. The objective is ``sense * (model objective)``,
    minimized (``sense = -1`` for a maximization).
    """

    program: Program
    variables: list[Any]
    constraints: list[Any]
    pairs: list[Any]
    sense: int

    @property
    def x(self) -> Variables:
        """The Variables handle of all columns."""
        return self.program["x"]  # type: ignore[return-value]

    def values(self) -> np.ndarray:
        """The model's current values of :attr:`variables` (``None`` -> nan), in program order."""
        return np.array([np.nan if v.value is None else float(v.value) for v in self.variables])

    def load(self, x: Any) -> None:
        """Set the model's variables to the program vector ``x`` (Pyomo stale flags updated)."""
        xv = np.asarray(x, dtype=float).ravel()
        if xv.shape != (len(self.variables),):
            from contactmp.errors import InputError

            raise InputError("x", f"must have length {len(self.variables)}, got shape {xv.shape}")
        _load(self, xv.tolist(), {}, {})


def _relation_side(conv: Any, cdata: Any, arg: Any) -> tuple[str, Any]:
    """("ge", s) for an inequality ``lhs <= rhs`` (``s = rhs - lhs >= 0`` as SX or float), or
    ("eq", (lhs, rhs)) converted, for an equality."""
    from pyomo.core.expr.relational_expr import (
        EqualityExpression,
        InequalityExpression,
        RangedExpression,
    )

    if isinstance(arg, InequalityExpression):
        lhs, rhs = (conv(e) for e in arg.args)
        if type(lhs) is float and lhs == 0.0:
            return "ge", rhs
        if type(rhs) is float and rhs == 0.0:
            return "ge", -lhs
        return "ge", rhs - lhs
    if isinstance(arg, EqualityExpression):
        return "eq", tuple(conv(e) for e in arg.args)
    what = ("a range l <= e <= u" if isinstance(arg, RangedExpression)
            else f"{type(arg).__name__} {arg!r} (no relation)")
    raise UnsupportedProgramError(
        f"{NAME}: complementarity {cdata.name} has {what} as a side; the strategy option takes "
        "complements(e1 >= l1, e2 >= l2) (one inequality per side); transform the model with "
        "mpec.simple_nonlinear and solve it without strategy instead"
    )


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


_CONSTANT_ROW_TOL = 1e-8  # a row without variables is kept out; violated by more: infeasible


def _read_model(model: Any) -> _Read:
    """Convert the active objective, rows and complementarity conditions of ``model`` to SX.

    Raises Pyomo's ``InfeasibleConstraintException`` for a violated row without variables and
    :class:`UnsupportedProgramError` for more than one objective, discrete variables, a model
    without variables or what :class:`~contactmp.pyomo_bridge.PyomoToSX` cannot translate.
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

    def add_row(owner: Any, e: Any, lo: float | None, hi: float | None) -> None:
        lo = -np.inf if lo is None else float(lo)
        hi = np.inf if hi is None else float(hi)
        if type(e) is float:
            if e < lo - _CONSTANT_ROW_TOL or e > hi + _CONSTANT_ROW_TOL:
                raise InfeasibleConstraintException(
                    f"row {owner.name} has no variables and is violated: {lo} <= {e} <= {hi}")
            return
        rows.append(owner)
        g.append(e)
        lbg.append(lo)
        ubg.append(hi)

    for c in model.component_data_objects(pyo.Constraint, active=True, descend_into=True):
        if c.lb is None and c.ub is None:
            continue
        add_row(c, conv(c.body), c.lb, c.ub)
    pairs: list[Any] = []
    a: list[Any] = []
    b: list[Any] = []
    for cdata in model.component_data_objects(Complementarity, active=True, descend_into=True):
        if len(cdata._args) != 2:
            raise UnsupportedProgramError(f"{NAME}: complementarity {cdata.name} has no two sides")
        sides = []
        for arg in cdata._args:
            kind, val = _relation_side(conv, cdata, arg)
            if kind == "eq":  # as in Pyomo: an equality side makes the condition that equality
                lhs, rhs = val
                add_row(cdata, lhs - rhs, 0.0, 0.0)
                break
            sides.append(val)
        else:
            pairs.append(cdata)
            a.append(sides[0])
            b.append(sides[1])

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
        a=a, b=b,
    )


def _program(read: _Read, model: Any) -> PyomoProgram:
    """The Program of a read ``model`` (see :class:`PyomoProgram`), named as the model."""
    from contactmp.program import Program

    prog = Program(str(getattr(model, "name", "") or "").strip() or "pyomo_model")
    xh = prog.add_variables("x", len(read.variables), lb=read.lbx, ub=read.ubx, init=read.x0)
    parts = [casadi.SX(e) if type(e) is float else e
             for e in ([read.f] if read.f is not None else []) + read.g + read.a + read.b]
    # one substitution of the placeholders by the program's symbols (keeps the DAG)
    parts = casadi.substitute(parts, [read.symbols], [xh.sym])
    k = 1 if read.f is not None else 0
    n_g, n_c = len(read.g), len(read.a)
    if read.f is not None and not parts[0].is_constant():
        prog.add_cost(parts[0])
    if n_g:
        prog.add_constraint(casadi.vertcat(*parts[k:k + n_g]), read.lbg, read.ubg, name="g")
    if n_c:
        prog.add_complementarity(casadi.vertcat(*parts[k + n_g:k + n_g + n_c]),
                                 casadi.vertcat(*parts[k + n_g + n_c:]), name="pairs")
    return PyomoProgram(program=prog, variables=read.variables, constraints=read.rows,
                        pairs=read.pairs, sense=read.sense)


def pyomo_to_program(model: Any) -> PyomoProgram:
    """The :class:`~contactmp.program.Program` of a Pyomo model with ``pyomo.mpec`` pairs.

    ``min sense * objective s.t. l <= x <= u, lbg <= g(x) <= ubg, 0 <= a(x) _|_ b(x) >= 0``
    read from the model's active components by :class:`~contactmp.pyomo_bridge.PyomoToSX`
    (fixed variables and mutable parameters at their current values); the initial guess is the
    variables' current values (``None`` -> 0). See :class:`PyomoProgram` for the orders. The model
    is not changed. Raises :class:`UnsupportedProgramError` (discrete variables, several
    objectives, a box-form complementarity, an expression without CasADi form) and Pyomo's
    ``InfeasibleConstraintException`` (a violated row without variables).
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
    from contactmp.solvers.nlp import NLPOptions

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


def _solve_mpcc(model: Any, options: dict[str, Any], *, tee: bool, load: bool,
                timelimit: float | None, keepfiles: bool, suffixes: list[str],
                report_timing: bool) -> tuple[SolverResults, Any, PyomoProgram | None]:
    """Solve ``model`` (Complementarity components untransformed) with an MPCC strategy of
    :func:`contactmp.solvers.nlp.solve_program` on :func:`pyomo_to_program`'s Program."""
    from types import SimpleNamespace

    from pyomo.common.errors import InfeasibleConstraintException
    from pyomo.core.base.suffix import active_import_suffix_generator

    from contactmp.solvers.nlp import solve_program

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
    _deliver(results, model, view, [float(v) for v in res.x], {}, read.sense * float(res.objective), read.sense,
             tc, ss, sol_status, res.backend_status, load, {}, (res.status.value, res.message),
             f"no finite point to load ({res.status.value})")
    return results, res, pp
