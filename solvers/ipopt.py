"""The one IPOPT layer: ``min f(x, p) s.t. lbx <= x <= ubx, lbg <= g(x, p) <= ubg`` by IPOPT.

Two backends solve the same CasADi graph (:class:`IpoptNLP`): ``"casadi"`` (``casadi.nlpsol``,
exact Hessian, sparse Jacobians) and ``"cyipopt"`` (``cyipopt.Problem`` with callbacks that
evaluate CasADi Functions). Everything else that meets IPOPT goes through here: the option
checker (:func:`check_ipopt_options`, against IPOPT's own option table
:func:`ipopt_option_types`), the meaning of IPOPT's return texts (:data:`IPOPT_STATUS`) and a
wall-time deadline for a whole sequence of solves (:meth:`IpoptNLP.solve` stops IPOPT at it).
Used by :func:`contactmp.solvers.nlp.solve.solve_program` (Programs and MPCCs), the Pyomo plugin
(:mod:`contactmp.solvers.nlp.pyomo_ipopt`), the NMDP step and the compliant cone QP.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import io
import math
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import casadi as ca
import numpy as np

from contactmp.errors import OptionError, did_you_mean
from contactmp.result import Status
from contactmp.solvers.structured import StageDerivatives

__all__ = ["IpoptNLP", "IpoptAnswer", "DeadlineCallback", "IPOPT_STATUS", "IPOPT_RETURN_CODES", "BACKENDS", "ipopt_status",
           "ipopt_option_types", "check_ipopt_options", "CyipoptCallbacks"]

#: backend name -> how IPOPT is called
BACKENDS: dict[str, str] = {
    "casadi": "casadi.nlpsol(..., 'ipopt'): exact Hessian, sparse Jacobians",
    "cyipopt": "cyipopt.Problem with callbacks built from CasADi Functions (sparse structures)",
}

#: THE table of IPOPT's return texts. ``SOLVED`` here means only that IPOPT *claims* convergence:
#: every user of this layer still checks the answer independently before it reports ``solved``
#: (a claim that fails the check is ``NOT_SOLVED``). A text that is not listed (for example
#: ``Restoration_Failed``, ``Search_Direction_Becomes_Too_Small``, ``Diverging_Iterates``,
#: ``User_Requested_Stop``) is ``NOT_SOLVED``: the backend stopped without a claim we could verify.
IPOPT_STATUS: dict[str, Status] = {
    "Solve_Succeeded": Status.SOLVED,
    "Solved_To_Acceptable_Level": Status.SOLVED,
    "Feasible_Point_Found": Status.SOLVED,
    "Maximum_Iterations_Exceeded": Status.MAX_ITER,
    "Maximum_CpuTime_Exceeded": Status.TIME_LIMIT,
    "Maximum_WallTime_Exceeded": Status.TIME_LIMIT,
    "Infeasible_Problem_Detected": Status.INFEASIBLE,
    "Error_In_Step_Computation": Status.NUMERICAL_ERROR,
    "Invalid_Number_Detected": Status.NUMERICAL_ERROR,
    "Insufficient_Memory": Status.NUMERICAL_ERROR,
    "Internal_Error": Status.NUMERICAL_ERROR,
    "Unrecoverable_Exception": Status.NUMERICAL_ERROR,
    "NonIpopt_Exception_Thrown": Status.NUMERICAL_ERROR,
}

#: IPOPT's integer return codes (what cyipopt reports) -> its return texts
IPOPT_RETURN_CODES: dict[int, str] = {
    0: "Solve_Succeeded", 1: "Solved_To_Acceptable_Level", 2: "Infeasible_Problem_Detected",
    3: "Search_Direction_Becomes_Too_Small", 4: "Diverging_Iterates", 5: "User_Requested_Stop",
    6: "Feasible_Point_Found", -1: "Maximum_Iterations_Exceeded", -2: "Restoration_Failed",
    -3: "Error_In_Step_Computation", -4: "Maximum_CpuTime_Exceeded", -5: "Maximum_WallTime_Exceeded",
    -10: "Not_Enough_Degrees_Of_Freedom", -11: "Invalid_Problem_Definition", -12: "Invalid_Option",
    -13: "Invalid_Number_Detected", -100: "Unrecoverable_Exception", -101: "NonIpopt_Exception_Thrown",
    -102: "Insufficient_Memory", -199: "Internal_Error",
}


#: IPOPT's return texts that come before its first iteration (CasADi then reports the iteration
#: count of an earlier solve, or an uninitialized one)
_BEFORE_ITERATING = frozenset({"Not_Enough_Degrees_Of_Freedom", "Invalid_Problem_Definition", "Invalid_Option",
                               "Insufficient_Memory"})


def ipopt_status(text: str, verified: bool = False) -> Status:
    """The :class:`Status` of an IPOPT return ``text`` (:data:`IPOPT_STATUS`, unlisted: ``NOT_SOLVED``).

    ``SOLVED`` only when IPOPT claims convergence *and* the caller's independent check passed
    (``verified``); a claim without a passed check is ``NOT_SOLVED``.
    """
    claimed = IPOPT_STATUS.get(text, Status.NOT_SOLVED)
    if claimed is Status.SOLVED:
        return Status.SOLVED if verified else Status.NOT_SOLVED
    return claimed


@functools.lru_cache(maxsize=1)
def ipopt_option_types() -> dict[str, str]:
    """Every IPOPT option name -> ``"real"``, ``"integer"`` or ``"string"``.

    Read once per process from IPOPT's own documentation (``print_options_documentation`` in
    doxygen mode, captured from ``sys.stdout`` and file descriptor 1 while a one-variable NLP runs
    for 0 iterations; about 10 ms). Returns an empty dict if nothing could be read, in which case
    options are passed to IPOPT unchecked and a rejection by IPOPT is still an :class:`OptionError`.
    """
    x = ca.SX.sym("x")
    opts = {
        "print_time": False,
        "ipopt": {"print_options_documentation": "yes", "print_options_mode": "doxygen",
                  "print_advanced_options": "yes", "print_level": 3, "sb": "yes", "max_iter": 0},
    }
    py_out = io.StringIO()  # CasADi's Python module prints through sys.stdout; IPOPT writes to fd 1
    try:
        with tempfile.TemporaryFile(mode="w+b") as tmp:
            sys.stdout.flush()
            saved = os.dup(1)
            os.dup2(tmp.fileno(), 1)
            try:
                with contextlib.redirect_stdout(py_out):
                    ca.nlpsol("ipopt_doc", "ipopt", {"x": x, "f": x * x}, opts)(x0=1.0)
            finally:
                try:
                    ctypes.CDLL(None).fflush(None)
                except (OSError, AttributeError):  # pragma: no cover - non-POSIX libc
                    pass
                os.dup2(saved, 1)
                os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace") + py_out.getvalue()
    except (OSError, RuntimeError):  # pragma: no cover - no fd 1, or IPOPT missing
        return {}
    table: dict[str, str] = {}
    for chunk in text.split("\\anchor OPT_")[1:]:
        m = re.search(r"this (real|integer|string) option", chunk)
        if m:
            table[chunk.split(None, 1)[0]] = m.group(1)
    if table:
        table.setdefault("sb", "string")  # undocumented: suppress the banner
    return table


def check_ipopt_options(opts: Any, reserved: tuple[str, ...] = ("tol", "max_iter")) -> dict[str, Any]:
    """A copy of the IPOPT options ``opts`` with values coerced to IPOPT's types.

    :class:`OptionError` (with a did-you-mean hint) for an unknown name, a value of the wrong
    type, or a ``reserved`` name (one the caller sets through its own option of the same name).
    """
    if not isinstance(opts, dict):
        raise OptionError(f"ipopt must be a dict of IPOPT options, got {type(opts).__name__}")
    table = ipopt_option_types()
    out: dict[str, Any] = {}
    for key, val in opts.items():
        if not isinstance(key, str):
            raise OptionError(f"IPOPT option names are strings, got {key!r}")
        if key in reserved:
            raise OptionError(f"set IPOPT's '{key}' through the option '{key}', not inside ipopt={{...}}")
        kind = table.get(key) if table else None
        if table and kind is None:
            raise OptionError(f"unknown IPOPT option '{key}'{did_you_mean(key, table)}")
        number = not isinstance(val, bool) and isinstance(val, (int, float, np.integer, np.floating))
        if kind == "real":
            if not number:
                raise OptionError(f"IPOPT option '{key}' takes a real number, got {val!r}")
            val = float(val)
        elif kind == "integer":
            if not number or float(val) != int(val):
                raise OptionError(f"IPOPT option '{key}' takes an integer, got {val!r}")
            val = int(val)
        elif kind == "string" and not isinstance(val, str):
            raise OptionError(f"IPOPT option '{key}' takes a string, got {val!r}")
        out[key] = val
    return out


@dataclass
class IpoptAnswer:
    """One IPOPT solve: ``x``, objective ``f``, IPOPT ``iterations``, its return text ``status``
    (verbatim; ``Maximum_WallTime_Exceeded`` when the deadline stopped it) and the multipliers in
    CasADi's convention ``L = f + lam_g^T g + lam_x^T x`` (a multiplier of an active lower bound is
    ``-lam_x >= 0``); ``detail`` is the text of an exception the backend raised, if any."""

    x: np.ndarray
    f: float
    iterations: int
    status: str
    lam_g: np.ndarray
    lam_x: np.ndarray
    detail: str = ""

    @property
    def ok(self) -> bool:
        """IPOPT claims convergence (still to be checked by the caller)."""
        return IPOPT_STATUS.get(self.status) is Status.SOLVED


class DeadlineCallback(ca.Callback):
    """CasADi's ``iteration_callback``: asks IPOPT to stop (``User_Requested_Stop``) once
    ``time.perf_counter()`` has passed ``deadline`` or ``time.process_time()`` has passed
    ``cpu_deadline``. IPOPT's own ``max_wall_time`` counts from the start of each NLP and CasADi fixes
    it when the solver is built (building again costs about as much as a short solve), so the
    deadline of a whole sequence of solves is checked here."""

    def __init__(self, nx: int, ng: int) -> None:
        ca.Callback.__init__(self)
        self.nx, self.ng = nx, ng
        self.deadline = math.inf
        self.cpu_deadline = math.inf
        self.stopped = False
        self.construct("contactmp_deadline", {})

    def get_n_in(self) -> int:
        return ca.nlpsol_n_out()

    def get_n_out(self) -> int:
        return 1

    def get_name_in(self, i: int) -> str:
        return ca.nlpsol_out(i)

    def get_name_out(self, i: int) -> str:
        return "ret"

    def get_sparsity_in(self, i: int) -> Any:
        name = ca.nlpsol_out(i)
        if name == "f":
            return ca.Sparsity.scalar()
        if name in ("x", "lam_x"):
            return ca.Sparsity.dense(self.nx)
        if name in ("g", "lam_g"):
            return ca.Sparsity.dense(self.ng)
        return ca.Sparsity(0, 0)

    def eval(self, arg: Any) -> list[int]:
        if time.perf_counter() >= self.deadline or (self.cpu_deadline < math.inf
                                                    and time.process_time() >= self.cpu_deadline):
            self.stopped = True
            return [1]
        return [0]


class CyipoptCallbacks:
    """The callbacks ``cyipopt.Problem`` calls for ``min f(x, p) s.t. g(x, p)`` (CasADi SX in the
    symbols ``x``, ``p``), each one a CasADi Function evaluation; set ``.p`` before a solve,
    ``.iterations`` counts IPOPT's iterations of the last solve."""

    def __init__(self, x: ca.SX, p: ca.SX, f: ca.SX, g: ca.SX, derivatives: StageDerivatives | None = None) -> None:
        m = g.shape[0]
        self._f = ca.Function("f", [x, p], [f])
        self._grad = ca.Function("grad_f", [x, p], [ca.gradient(f, x)])
        self._g = ca.Function("g", [x, p], [g])
        if derivatives is None:
            lam = ca.SX.sym("lam", m)
            obj = ca.SX.sym("obj_factor")
            jac = ca.jacobian(g, x)
            hess = ca.tril(ca.hessian(obj * f + (ca.dot(lam, g) if m else 0), x)[0])
            self._jac = ca.Function("jac_g", [x, p], [jac])
            self._hess = ca.Function("hess_l", [x, p, obj, lam], [hess])
            jac_sp, hess_rc = jac.sparsity(), hess.sparsity().get_triplet()
        else:  # the stage groups' derivatives: (x, p) -> (g, J) and the upper triangle of H, whose
            # transpose is the lower triangle IPOPT reads (the same nonzeros, rows and columns swapped)
            jac_g, hess_l = derivatives.jac_g, derivatives.hess_lag
            self._jac = ca.Function("jac_g", [jac_g.mx_in(0), jac_g.mx_in(1)], [jac_g(jac_g.mx_in(0), jac_g.mx_in(1))[1]])
            self._hess = hess_l
            jac_sp = jac_g.sparsity_out(1)
            rows, cols = hess_l.sparsity_out(0).get_triplet()
            hess_rc = (cols, rows)
        self._jac_rc = tuple(np.asarray(v, dtype=int) for v in jac_sp.get_triplet())
        # cyipopt refuses m > 0 constraints with an empty Jacobian structure: declare one zero
        self._jac_pad = m > 0 and jac_sp.nnz() == 0
        if self._jac_pad:
            self._jac_rc = (np.zeros(1, dtype=int), np.zeros(1, dtype=int))
        self._hess_rc = tuple(np.asarray(v, dtype=int) for v in hess_rc)
        self.p = np.zeros(p.shape[0])
        self.iterations = 0

    def objective(self, x: np.ndarray) -> float:
        """``f(x, p)``."""
        return float(self._f(x, self.p))

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """``grad_x f(x, p)``."""
        return np.asarray(self._grad(x, self.p), dtype=float).ravel()

    def constraints(self, x: np.ndarray) -> np.ndarray:
        """``g(x, p)``."""
        return np.asarray(self._g(x, self.p), dtype=float).ravel()

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """The nonzeros of ``dg/dx`` in :meth:`jacobianstructure` order."""
        if self._jac_pad:
            return np.zeros(1)
        return np.asarray(self._jac(x, self.p).nonzeros(), dtype=float)

    def jacobianstructure(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows and columns of the Jacobian's nonzeros."""
        return self._jac_rc

    def hessian(self, x: np.ndarray, lagrange: np.ndarray, obj_factor: float) -> np.ndarray:
        """The nonzeros of the lower triangle of ``obj_factor H_f + sum_i lagrange_i H_gi``."""
        return np.asarray(self._hess(x, self.p, obj_factor, lagrange).nonzeros(), dtype=float)

    def hessianstructure(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows and columns of the Hessian's lower-triangle nonzeros."""
        return self._hess_rc

    def intermediate(self, alg_mod: int, iter_count: int, *args: Any) -> bool:
        """Count IPOPT's iterations; never stops it."""
        self.iterations = int(iter_count)
        return True


def _option_error(exc: Exception) -> OptionError | None:
    msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else str(exc)
    if any(s in str(exc) for s in ("IPOPT option", "type mismatch", "Unknown option", "No such")):
        return OptionError(f"IPOPT rejected an option: {msg}")
    return None


class IpoptNLP:
    """The NLP ``nlp = {"x", "p", "f", "g"}`` (CasADi SX, or MX for ``"casadi"``) built once for IPOPT.

    ``ipopt``: IPOPT options (passed as given; check them first with :func:`check_ipopt_options`);
    ``backend``: a name of :data:`BACKENDS`; ``deadline``: a ``time.perf_counter()`` time at which
    every later solve stops (status ``Maximum_WallTime_Exceeded``; CasADi: an iteration callback,
    cyipopt: IPOPT's ``max_wall_time`` set to the time left); ``nlpsol``: further ``casadi.nlpsol``
    options. An option IPOPT rejects raises :class:`OptionError`.
    """

    def __init__(self, nlp: dict[str, Any], ipopt: dict[str, Any], backend: str = "casadi",
                 deadline: float = math.inf, nlpsol: dict[str, Any] | None = None,
                 name: str = "contactmp_nlp", derivatives: StageDerivatives | None = None) -> None:
        if backend not in BACKENDS:
            raise OptionError(f"unknown backend '{backend}' (known: {', '.join(BACKENDS)})"
                              f"{did_you_mean(backend, BACKENDS)}")
        self.backend, self.ipopt, self.deadline = backend, dict(ipopt), deadline
        self.cpu_deadline = math.inf
        x = nlp["x"]
        g, p = nlp.get("g", type(x)(0, 1)), nlp.get("p", type(x)(0, 1))
        self.nx, self.ng = x.shape[0], g.shape[0]
        self._cb: DeadlineCallback | None = None
        if backend == "casadi":
            opts: dict[str, Any] = {"print_time": False, "error_on_fail": False, **(nlpsol or {}),
                                    **(derivatives.nlpsol_options() if derivatives is not None else {}),
                                    "ipopt": self.ipopt}
            if deadline < math.inf:
                self._cb = DeadlineCallback(self.nx, self.ng)
                self._cb.deadline = deadline
                opts["iteration_callback"] = self._cb
            try:
                self._solver = ca.nlpsol(name, "ipopt", {"x": x, "p": p, "f": nlp["f"], "g": g}, opts)
            except RuntimeError as exc:
                err = _option_error(exc)
                if err is None:
                    raise
                raise err from None
        else:
            import cyipopt

            self._cyipopt = cyipopt
            self._callbacks = CyipoptCallbacks(x, p, nlp["f"], g, derivatives)
            self._problem: Any = None
            self._bounds: tuple[bytes, ...] = ()

    def _cy_problem(self, lbx: np.ndarray, ubx: np.ndarray, lbg: np.ndarray, ubg: np.ndarray) -> Any:
        """The ``cyipopt.Problem`` of these bounds (built again only when the bounds change)."""
        bounds = tuple(np.asarray(b, dtype=float).tobytes() for b in (lbx, ubx, lbg, ubg))
        if self._problem is None or bounds != self._bounds:
            prob = self._cyipopt.Problem(n=self.nx, m=self.ng, problem_obj=self._callbacks, lb=lbx, ub=ubx,
                                         cl=lbg, cu=ubg)
            for key, val in self.ipopt.items():
                try:
                    prob.add_option(key, val)
                except TypeError:
                    raise OptionError(f"IPOPT (cyipopt) rejected the option {key}={val!r}") from None
            self._problem, self._bounds = prob, bounds
        return self._problem

    def set_deadline(self, deadline: float, cpu_deadline: float = math.inf) -> None:
        """Move the deadlines of later solves: ``deadline`` a ``time.perf_counter()`` time,
        ``cpu_deadline`` a ``time.process_time()`` time (this process's CPU seconds). A solver built
        without a deadline (``math.inf``) has no stop callback and cannot take a finite one."""
        if min(deadline, cpu_deadline) < math.inf and self.backend == "casadi" and self._cb is None:
            raise ValueError("this IpoptNLP was built without a deadline")
        self.deadline, self.cpu_deadline = deadline, cpu_deadline
        if self._cb is not None:
            self._cb.deadline, self._cb.cpu_deadline = deadline, cpu_deadline

    def solve(self, x0: Any, p: Any, lbx: Any, ubx: Any, lbg: Any, ubg: Any,
              lam_x0: Any = None, lam_g0: Any = None) -> IpoptAnswer:
        """One IPOPT run from ``x0`` at parameters ``p``; never raises on non-convergence (an
        exception inside the backend gives the status ``NonIpopt_Exception_Thrown``).

        ``lam_x0``, ``lam_g0``: starting multipliers (CasADi's convention, as in
        :class:`IpoptAnswer`); IPOPT uses them only when built with ``warm_start_init_point=yes``
        (with cyipopt they are passed as its ``lagrange`` and bound multipliers ``zl``, ``zu``)."""
        bounds = [np.broadcast_to(np.asarray(b, dtype=float), (n,)) for b, n in
                  ((lbx, self.nx), (ubx, self.nx), (lbg, self.ng), (ubg, self.ng))]
        x0 = np.asarray(x0, dtype=float).ravel()
        p = np.asarray(p, dtype=float).ravel()
        nan = np.full(self.nx, np.nan)
        if self.backend == "casadi":
            if self._cb is not None:
                self._cb.stopped = False
            warm: dict[str, Any] = {}
            if lam_x0 is not None:
                warm["lam_x0"] = np.asarray(lam_x0, dtype=float).ravel()
            if lam_g0 is not None:
                warm["lam_g0"] = np.asarray(lam_g0, dtype=float).ravel()
            try:
                sol = self._solver(x0=x0, p=p, lbx=bounds[0], ubx=bounds[1], lbg=bounds[2], ubg=bounds[3], **warm)
            except RuntimeError as exc:  # evaluation errors CasADi raises instead of reporting
                return IpoptAnswer(nan, math.nan, 0, "NonIpopt_Exception_Thrown", np.full(self.ng, np.nan),
                                   nan.copy(), str(exc).strip().splitlines()[-1])
            st = self._solver.stats()
            status = str(st.get("return_status", "unknown"))
            iterations = int(st.get("iter_count", 0))
            if status in _BEFORE_ITERATING or not 0 <= iterations <= 10**9:
                iterations = 0  # IPOPT stopped before its first iteration: CasADi's count is stale
            if self._cb is not None and self._cb.stopped and status == "User_Requested_Stop":
                # our deadline stopped it: IPOPT's own limit, in effect
                status = ("Maximum_CpuTime_Exceeded" if time.process_time() >= self._cb.cpu_deadline
                          else "Maximum_WallTime_Exceeded")
            return IpoptAnswer(np.asarray(sol["x"], dtype=float).ravel(), float(sol["f"]),
                               iterations, status,
                               np.asarray(sol["lam_g"], dtype=float).ravel(),
                               np.asarray(sol["lam_x"], dtype=float).ravel())
        prob = self._cy_problem(*bounds)
        if self.deadline < math.inf:
            prob.add_option("max_wall_time", max(self.deadline - time.perf_counter(), 1e-3))
        if self.cpu_deadline < math.inf:
            prob.add_option("max_cpu_time", max(self.cpu_deadline - time.process_time(), 1e-3))
        self._callbacks.p = p
        self._callbacks.iterations = 0
        kw: dict[str, Any] = {}
        if lam_g0 is not None:
            kw["lagrange"] = np.asarray(lam_g0, dtype=float).ravel()
        if lam_x0 is not None:
            lx = np.asarray(lam_x0, dtype=float).ravel()
            kw["zl"], kw["zu"] = np.maximum(-lx, 0.0), np.maximum(lx, 0.0)
        x, info = prob.solve(x0, **kw)
        code = int(info["status"])
        return IpoptAnswer(np.asarray(x, dtype=float).ravel(), float(info["obj_val"]), self._callbacks.iterations,
                           IPOPT_RETURN_CODES.get(code, f"ipopt status {code}"),
                           np.asarray(info["mult_g"], dtype=float).ravel(),
                           np.asarray(info["mult_x_U"], dtype=float).ravel()
                           - np.asarray(info["mult_x_L"], dtype=float).ravel())
