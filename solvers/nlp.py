"""Solve a :class:`~contactmp.program.Program` (an MPCC) with IPOPT, through CasADi or cyipopt.

The complementarity pairs ``0 <= a _|_ b >= 0`` violate the constraint qualifications IPOPT
relies on, so they are handled by a named MPCC strategy (:data:`STRATEGIES`):

``"direct"``
    One NLP with ``a >= 0``, ``b >= 0`` and ``a_i b_i <= 0`` as plain constraints.
``"scholtes"``
    Scholtes' relaxation: ``a >= 0``, ``b >= 0``, ``a_i b_i <= sigma``, solved for
    ``sigma = sigma0, sigma0 * sigma_factor, ...`` down to ``sigma_min`` (defaults 1, 0.1,
    1e-12: NOSBENCH stops at 1e-9 but judges the product ``a_i b_i``; we judge ``min(a_i, b_i)``),
    each NLP warm-started at the previous answer; the homotopy stops at the first NLP that
    succeeds with a verified answer (bounds, constraints, complementarity).
``"elastic_l1"``
    The l1 penalty: ``a >= 0``, ``b >= 0`` and ``rho * sum_i a_i b_i`` added to the objective,
    for ``rho = rho0, rho0 * rho_factor, ...`` up to ``rho_max``, warm-started, with the same stop.
``"fischer_burmeister"``
    Smoothing: ``a >= 0``, ``b >= 0`` and, per pair, the equation
    ``phi_eps(a_i, b_i) = a_i + b_i - sqrt(a_i^2 + b_i^2 + 2 eps^2) = 0``, whose solutions are
    exactly ``a_i, b_i > 0`` with ``a_i b_i = eps^2`` (at ``eps = 0``: complementarity), for
    ``eps = eps0, eps0 * eps_factor, ...`` down to ``eps_min`` (defaults 1, 0.1, 1e-10),
    warm-started, with the same stop. The row is ``phi_eps / eps`` (unit size at every ``eps``),
    evaluated without cancellation (see :func:`fischer_burmeister`). ``eps_min``: a degenerate pair
    (``a_i = b_i = 0`` in the limit) sits at ``a_i = b_i = eps``, so ``min(a_i, b_i) <= comp_tol
    = 1e-8`` needs ``eps <= 1e-8``, and one more step leaves room; judged by the product
    (NOSBENCH, ``<= 1e-7``) ``eps = 1e-4`` already passes, and the homotopy stops at the first
    verified NLP. Unlike Scholtes' relaxed sets, the curves ``a_i b_i = eps^2`` are disjoint for
    different ``eps``: an infeasible NLP does not end the homotopy, and the next NLP starts from
    the last NLP that was solved (else ``x0``). An NLP counts as solved only when IPOPT succeeded
    and its answer lies on the curves (``|a_i b_i - eps^2| <= feas_tol``): ``phi_eps(a, 0)``
    tends to 0 as ``a`` grows, so far out on an axis IPOPT can meet its tolerance off the curve.
    Smoothing needs points with ``a_i, b_i > 0``: when the constraints pin a side to 0 (the last
    contact of a trajectory with a fixed final state), every smoothed NLP is infeasible by
    ``O(eps^2)`` and only NLPs with ``eps^2`` below IPOPT's tolerance can succeed; use
    ``"scholtes"`` for such programs.

With ``sign_constraints=False`` the constraints ``a >= 0``, ``b >= 0`` are not added (the signs
must then come from the variable bounds, NOSBENCH's convention) and complementarity is judged by
the signed residual ``max_i a_i b_i``. Since ``phi_eps = 0`` forces ``a_i, b_i > 0``,
``"fischer_burmeister"`` then smooths only the pairs whose two sides are affine in ``x`` and
nonnegative on the whole box ``lbx <= x <= ubx``; any other pair (a sign-indefinite one, such as
NOSBENCH's ``(Lambda, L)``, ``(Lambda, -L)`` with ``L`` free) keeps the product form
``a_i b_i <= eps^2``, so the limit problem is the same as the other strategies'.

Whatever the backend says, a :class:`ProgramResult` is ``solved`` only when the independent
checks of :meth:`Program.residuals` pass: scaled bound and constraint violations ``<= feas_tol``
and ``max_i |min(a_i, b_i)| <= comp_tol``; and, when the program has an objective, the last NLP
must have ended with an IPOPT success (a feasible point is not a minimizer). A relaxed NLP that
IPOPT declares locally infeasible ends the homotopy when its answer does violate the relaxed
constraints (the relaxed sets shrink as sigma falls); when the answer satisfies them after all,
the homotopy goes on.
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
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import casadi as ca
import numpy as np

from contactmp.errors import InputError, OptionError, did_you_mean
from contactmp.program import Program, Variables, _scaled_violation
from contactmp.result import Result, Status
from contactmp.solvers.lcp import SolverOptions

__all__ = ["solve_program", "ProgramResult", "NLPOptions", "STRATEGIES", "BACKENDS", "ipopt_option_types",
           "fischer_burmeister"]

#: MPCC strategy name -> one-line description
STRATEGIES: dict[str, str] = {
    "direct": "one NLP with a >= 0, b >= 0, a_i b_i <= 0",
    "scholtes": "relaxation a_i b_i <= sigma, sigma0 -> sigma_min geometrically, warm-started",
    "elastic_l1": "penalty rho * sum a_i b_i in the objective, rho0 -> rho_max geometrically",
    "fischer_burmeister": "smoothing a_i + b_i - sqrt(a_i^2 + b_i^2 + 2 eps^2) = 0, eps0 -> eps_min geometrically",
}


class _Homotopy(NamedTuple):
    """The parameter sequence of one strategy: ``start, start * factor, ...`` until ``stop``.

    The fields name :class:`NLPOptions` attributes; ``param`` names the parameter in
    ``extras["homotopy"]``; ``shrinks`` says whether the sequence falls (factor in (0, 1)) or
    grows (factor > 1); ``nested`` says whether each NLP's feasible set contains the next one's
    (then an NLP that is locally infeasible ends the homotopy).
    """

    param: str
    start: str
    factor: str
    stop: str
    shrinks: bool
    nested: bool = True


#: strategy -> its homotopy ("direct" is one NLP at parameter 0)
_HOMOTOPY: dict[str, _Homotopy] = {
    "scholtes": _Homotopy("sigma", "sigma0", "sigma_factor", "sigma_min", shrinks=True),
    "elastic_l1": _Homotopy("rho", "rho0", "rho_factor", "rho_max", shrinks=False),
    # {a_i b_i = eps^2} are disjoint for different eps: an infeasible NLP says nothing of the next
    "fischer_burmeister": _Homotopy("eps", "eps0", "eps_factor", "eps_min", shrinks=True, nested=False),
}

#: backend name -> how IPOPT is called
BACKENDS: dict[str, str] = {
    "casadi": "casadi.nlpsol(..., 'ipopt'): exact Hessian, sparse Jacobians",
    "cyipopt": "cyipopt.Problem with callbacks built from CasADi Functions (sparse structures)",
}

#: IPOPT options set unless the caller's ``ipopt`` dict says otherwise
IPOPT_DEFAULTS: dict[str, Any] = {
    "print_level": 0,
    "sb": "yes",
    # the NOSBENCH protocol's settings: no bound relaxation (a >= 0 means a >= 0) and the adaptive
    # barrier update, which halves the iterations of a warm-started homotopy on the shared LCPs
    "bound_relax_factor": 0.0,
    "mu_strategy": "adaptive",
}

#: IPOPT return status (text) -> Status (anything unlisted is NOT_SOLVED)
_IPOPT_STATUS: dict[str, Status] = {
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

#: IPOPT's ApplicationReturnStatus codes (cyipopt reports the integer)
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


# ----------------------------------------------------------------------------------------------
# IPOPT's own option table (for strict pass-through)
# ----------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def ipopt_option_types() -> dict[str, str]:
    """Every IPOPT option name -> ``"real"``, ``"integer"`` or ``"string"``.

    Read once per process from IPOPT's own documentation (``print_options_documentation`` in
    doxygen mode, captured from ``sys.stdout`` and file descriptor 1 while a one-variable NLP runs
    for 0 iterations; about 10 ms). Returns an empty dict if nothing could be read, in which case options are passed
    to IPOPT unchecked and a rejection by IPOPT is still reported as :class:`OptionError`.
    """
    x = ca.SX.sym("x")
    opts = {
        "print_time": False,
        "ipopt": {"print_options_documentation": "yes", "print_options_mode": "doxygen",
                  "print_advanced_options": "yes", "print_level": 3, "sb": "yes", "max_iter": 0},
    }
    text = ""
    # CasADi's Python module prints through sys.stdout; a plain IPOPT build writes to fd 1.
    py_out = io.StringIO()
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
        name = chunk.split(None, 1)[0]
        m = re.search(r"this (real|integer|string) option", chunk)
        if m:
            table[name] = m.group(1)
    if table:
        table.setdefault("sb", "string")  # undocumented: suppress the banner
    return table


def _check_ipopt_options(opts: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``opts`` with values coerced to IPOPT's types; OptionError (with a hint) otherwise."""
    if not isinstance(opts, dict):
        raise OptionError(f"ipopt must be a dict of IPOPT options, got {type(opts).__name__}")
    table = ipopt_option_types()
    out: dict[str, Any] = {}
    for key, val in opts.items():
        if not isinstance(key, str):
            raise OptionError(f"IPOPT option names are strings, got {key!r}")
        if key in ("tol", "max_iter"):
            raise OptionError(f"set IPOPT's '{key}' through the option '{key}', not inside ipopt={{...}}")
        kind = table.get(key) if table else None
        if table and kind is None:
            hint = did_you_mean(key, table)
            raise OptionError(f"unknown IPOPT option '{key}'{hint}")
        if kind == "real":
            if isinstance(val, bool) or not isinstance(val, (int, float, np.integer, np.floating)):
                raise OptionError(f"IPOPT option '{key}' takes a real number, got {val!r}")
            val = float(val)
        elif kind == "integer":
            if isinstance(val, bool) or not isinstance(val, (int, float, np.integer, np.floating)) or float(val) != int(val):
                raise OptionError(f"IPOPT option '{key}' takes an integer, got {val!r}")
            val = int(val)
        elif kind == "string":
            if not isinstance(val, str):
                raise OptionError(f"IPOPT option '{key}' takes a string, got {val!r}")
        out[key] = val
    return out


# ----------------------------------------------------------------------------------------------
# Options and result
# ----------------------------------------------------------------------------------------------
@dataclass
class NLPOptions(SolverOptions):
    """Options of :func:`solve_program` (strict: unknown keys raise :class:`OptionError`).

    Attributes
    ----------
    tol : IPOPT's convergence tolerance (its ``tol``) for each NLP.
    feas_tol : accepted scaled bound / constraint violation (see :meth:`Program.residuals`).
    comp_tol : accepted complementarity residual ``max_i |min(a_i, b_i)|``.
    max_iter : IPOPT iterations per NLP.
    sigma0, sigma_factor, sigma_min : the Scholtes homotopy ``sigma <- sigma_factor * sigma``.
    rho0, rho_factor, rho_max : the elastic_l1 penalty sequence ``rho <- rho_factor * rho``.
    eps0, eps_factor, eps_min : the Fischer-Burmeister smoothing ``eps <- eps_factor * eps``.
    sign_constraints : add ``a >= 0`` and ``b >= 0`` (False: rely on variable bounds; judge
        complementarity by ``max_i a_i b_i``).
    time_limit : wall-clock seconds for the whole solve (``None`` or ``inf``: none); checked
        between NLPs, and inside each NLP unless ``ipopt`` sets ``max_wall_time`` (cyipopt: the
        time left as IPOPT's ``max_wall_time``; CasADi, whose IPOPT options are fixed when the
        solver is built: an iteration callback that stops IPOPT at the deadline).
    ipopt : further IPOPT options, checked against IPOPT's own option table.
    """

    tol: float = 1e-8
    feas_tol: float = 1e-6
    comp_tol: float = 1e-8
    max_iter: int = 3000
    sigma0: float = 1.0
    sigma_factor: float = 0.1
    sigma_min: float = 1e-12
    rho0: float = 1.0
    rho_factor: float = 10.0
    rho_max: float = 1e8
    eps0: float = 1.0
    eps_factor: float = 0.1
    eps_min: float = 1e-10
    sign_constraints: bool = True
    time_limit: float = math.inf
    ipopt: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """Reject ill-typed values; copy and type-check the IPOPT options."""
        super().check()
        for name in ("feas_tol", "comp_tol"):
            _positive_finite(self, name)
        for h in _HOMOTOPY.values():
            _positive_finite(self, h.start)
            _positive_finite(self, h.stop)
            f, s0, s1 = getattr(self, h.factor), getattr(self, h.start), getattr(self, h.stop)
            if isinstance(f, bool) or not isinstance(f, (int, float)) or not (0 < f < 1 if h.shrinks else 1 < f < math.inf):
                raise OptionError(f"{h.factor} must be {'in (0, 1)' if h.shrinks else 'a finite number > 1'}, got {f!r}")
            if (s1 > s0) if h.shrinks else (s1 < s0):
                raise OptionError(f"{h.stop} ({s1}) must not {'exceed' if h.shrinks else 'be below'} {h.start} ({s0})")
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 0:
            raise OptionError(f"max_iter must be a nonnegative integer, got {self.max_iter!r}")
        if not isinstance(self.sign_constraints, bool):
            raise OptionError(f"sign_constraints must be True or False, got {self.sign_constraints!r}")
        self.ipopt = _check_ipopt_options(self.ipopt)


def _positive_finite(o: NLPOptions, name: str) -> None:
    v = getattr(o, name)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0 and math.isfinite(v)):
        raise OptionError(f"{name} must be a positive finite number, got {v!r}")


@dataclass
class ProgramResult:
    """The outcome of :func:`solve_program`.

    ``status`` is ``SOLVED`` only after the independent checks (see the module docstring);
    ``residuals`` holds them (``bound``, ``constraint``, ``comp_min`` = ``max |min(a, b)|``,
    ``comp_prod`` = ``max a_i b_i``, ``objective``). ``iterations`` sums IPOPT's iterations over
    the homotopy; ``backend_status`` is IPOPT's text for the last NLP solved;
    ``extras["homotopy"]`` lists every NLP (parameter, status, iterations, residuals);
    ``extras["smoothed_pairs"]`` (fischer_burmeister only) counts the pairs written as
    ``phi_eps(a_i, b_i) = 0`` (the rest keep ``a_i b_i <= eps^2``, see the module docstring).
    """

    status: Status
    x: np.ndarray
    objective: float
    iterations: int
    time_s: float
    backend: str
    strategy: str
    backend_status: str
    residuals: dict[str, float]
    message: str = ""
    extras: dict[str, Any] = field(default_factory=dict)
    program: Program | None = field(default=None, repr=False)

    @property
    def success(self) -> bool:
        """True exactly when ``status`` is ``SOLVED``."""
        return self.status is Status.SOLVED

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``x`` as a list, non-finite floats as strings; no program)."""
        res = Result(status=self.status, x=self.x, solver=f"{self.backend}/{self.strategy}",
                     iterations=self.iterations, time_s=self.time_s, message=self.message,
                     extras={"residuals": self.residuals, "homotopy": self.extras.get("homotopy", [])})
        out = res.to_dict()
        del out["residual"], out["tol"]
        out.update(objective=float(self.objective) if np.isfinite(self.objective) else str(self.objective),
                   backend=self.backend, strategy=self.strategy, backend_status=self.backend_status)
        return out

    def value(self, handle: Variables) -> np.ndarray:
        """The solution's values of the variables ``handle`` (a handle of the solved program)."""
        if self.program is None:  # pragma: no cover - always set by solve_program
            raise InputError("handle", "this result carries no program")
        return self.program.value(handle, self.x)


# ----------------------------------------------------------------------------------------------
# The relaxed NLP of one strategy
# ----------------------------------------------------------------------------------------------
@dataclass
class _RelaxedNLP:
    """The NLP ``min f s.t. lbx <= x <= ubx, lbg <= g(x, [p; t]) <= ubg`` of one strategy.

    ``t`` is the homotopy parameter (sigma, rho or eps), appended to the program's parameters.
    ``n_smoothed`` counts the pairs written as Fischer-Burmeister equations. ``g_check`` is ``g``
    with each such row ``phi_eps(a_i, b_i)`` replaced by ``a_i b_i - eps^2`` (same zero set):
    :meth:`violation` measures the smoothing in product units, because ``phi_eps(a, 0) ~ -eps^2 / a``
    tends to 0 as ``a`` grows, so a point far out on an axis meets ``|phi_eps| <= tol`` without
    being anywhere near the curve ``a b = eps^2``.
    """

    x: ca.SX
    p: ca.SX
    f: ca.SX
    g: ca.SX
    lbx: np.ndarray
    ubx: np.ndarray
    lbg: np.ndarray
    ubg: np.ndarray
    g_check: ca.SX
    n_smoothed: int = 0
    _g_fun: ca.Function | None = field(default=None, repr=False)

    def violation(self, x: np.ndarray, p: np.ndarray) -> float:
        """The scaled violation of this NLP's own bounds and rows (``g_check``) at ``x``.

        ``p`` includes ``t``. Scaled as in :meth:`Program.residuals`: a violation of bound ``c``
        is divided by ``max(1, |c|)``; the MPCC rows have bounds 0, 0 or -inf, so theirs is absolute.
        """
        if not np.isfinite(x).all():
            return math.inf
        if self._g_fun is None:
            self._g_fun = ca.Function("relaxed_g", [self.x, self.p], [self.g_check])
        g = np.asarray(self._g_fun(x, p), dtype=float).ravel()
        return max(_scaled_violation(x, self.lbx, self.ubx), _scaled_violation(g, self.lbg, self.ubg))


def fischer_burmeister(a: Any, b: Any, eps: Any = 0.0) -> Any:
    """The smoothed Fischer-Burmeister function ``phi_eps(a, b) = a + b - sqrt(a^2 + b^2 + 2 eps^2)``.

    ``phi_eps(a, b) = 0`` exactly when ``a, b > 0`` and ``a b = eps^2`` (``eps != 0``), and, at
    ``eps = 0``, exactly when ``0 <= a _|_ b >= 0``. Elementwise on numbers, numpy arrays and
    CasADi expressions. Where ``a + b > 0`` it is evaluated as ``2 (a b - eps^2) / (a + b +
    sqrt(...))`` (the same number, without the cancellation of ``a + b - sqrt(...)``), so it keeps
    its relative accuracy when ``a b = eps^2`` is far below ``(a + b)`` times machine precision.
    """
    symbolic = any(isinstance(v, (ca.SX, ca.MX, ca.DM)) for v in (a, b, eps))
    if symbolic:
        s, r = a + b, ca.sqrt(a * a + b * b + 2 * eps * eps)
        return ca.if_else(s > 0, 2 * (a * b - eps * eps) / ca.if_else(s > 0, s + r, 1.0), s - r)
    a, b, eps = (np.asarray(v, dtype=float) for v in (a, b, eps))
    s, r = a + b, np.sqrt(a * a + b * b + 2 * eps * eps)
    pos = s > 0
    out = np.where(pos, 2 * (a * b - eps * eps) / np.where(pos, s + r, 1.0), s - r)
    return float(out) if out.ndim == 0 else out


def _relaxed_nlp(prog: Program, strategy: str, sign_constraints: bool) -> _RelaxedNLP:
    x, p = prog.x, prog.p
    t = ca.SX.sym("mpcc_t")
    a, b = prog.comp_a, prog.comp_b
    lbx, ubx = prog.lbx, prog.ubx
    parts = [prog.g]
    lbg = [prog.lbg]
    ubg = [prog.ubg]
    f = prog.f
    n_smoothed = 0
    check = [prog.g]  # parts, with each smoothing row in product units

    def add_rows(expr: ca.SX, lo: float, hi: float, checked_as: ca.SX | None = None) -> None:
        if expr.shape[0]:
            parts.append(expr)
            check.append(expr if checked_as is None else checked_as)
            lbg.append(np.full(expr.shape[0], lo))
            ubg.append(np.full(expr.shape[0], hi))

    if prog.n_comp:
        if sign_constraints:
            for side in (a, b):
                # a side that is a variable with lb >= 0 is already nonnegative by its bound
                keep = [i for i in range(side.shape[0]) if not _nonneg_variable(prog, side[i], lbx)]
                add_rows(side[keep, 0], 0.0, np.inf)
        prod = a * b
        if strategy in ("direct", "scholtes"):
            add_rows(prod - t, -np.inf, 0.0)
        elif strategy == "elastic_l1":
            f = f + t * ca.sum1(prod)
        elif strategy == "fischer_burmeister":
            # phi_eps = 0 forces a, b > 0: without sign constraints only pairs whose signs the
            # bounds already fix are smoothed; the others keep the product form a_i b_i <= eps^2
            if sign_constraints:
                fb = np.ones(prog.n_comp, dtype=bool)
            else:
                fb = _nonneg_on_box(prog, a) & _nonneg_on_box(prog, b)
            smooth, rest = [int(i) for i in np.flatnonzero(fb)], [int(i) for i in np.flatnonzero(~fb)]
            # phi_eps(a, b) = eps phi_1(a / eps, b / eps): the row phi_eps / eps has unit size at every
            # eps, so IPOPT's tolerance on it is relative to eps (t >= eps_min > 0)
            add_rows(fischer_burmeister(a[smooth, 0], b[smooth, 0], t) / t, 0.0, 0.0,
                     checked_as=prod[smooth, 0] - t * t)
            add_rows(prod[rest, 0] - t * t, -np.inf, 0.0)
            n_smoothed = len(smooth)
        else:  # pragma: no cover - checked by solve_program
            raise AssertionError(strategy)
    g = ca.vertcat(*parts) if any(e.shape[0] for e in parts) else ca.SX(0, 1)
    g_check = ca.vertcat(*check) if any(e.shape[0] for e in check) else ca.SX(0, 1)
    return _RelaxedNLP(x=x, p=ca.vertcat(p, t), f=f, g=g, lbx=lbx, ubx=ubx, lbg=np.concatenate(lbg),
                       ubg=np.concatenate(ubg), g_check=g_check, n_smoothed=n_smoothed)


def _nonneg_variable(prog: Program, e: ca.SX, lbx: np.ndarray) -> bool:
    j = prog.variable_index(e)
    return j is not None and lbx[j] >= 0.0


def _nonneg_on_box(prog: Program, side: ca.SX) -> np.ndarray:
    """Which rows of ``side`` are affine in ``x`` and ``>= 0`` on the whole box ``lbx <= x <= ubx``.

    For an affine row ``c + sum_j A_j x_j`` (``c``, ``A`` at the parameters ``p0``) the least
    value on the box is ``c + sum_j min(A_j lbx_j, A_j ubx_j)``; a row that is nonlinear in ``x``
    counts as not known to be nonnegative.
    """
    n = side.shape[0]
    affine = ~np.asarray(ca.which_depends(side, prog.x, 2, True), dtype=bool).reshape(n)
    jac = ca.jacobian(side, prog.x)
    vals = ca.Function("affine_part", [prog.x, prog.p], [side, jac])
    with np.errstate(all="ignore"):
        c_dm, a_dm = vals(np.zeros(prog.n_x), prog.p0)
        low = np.asarray(c_dm, dtype=float).reshape(n).copy()
        rows, cols = (np.asarray(v, dtype=int) for v in a_dm.sparsity().get_triplet())
        coef = np.asarray(a_dm.nonzeros(), dtype=float)
        used = coef != 0.0
        rows, cols, coef = rows[used], cols[used], coef[used]
        least = np.where(coef > 0, coef * prog.lbx[cols], coef * prog.ubx[cols])
        np.add.at(low, rows, least)
    return affine & (low >= 0.0)


def _homotopy(strategy: str, o: NLPOptions) -> list[float]:
    if strategy == "direct":
        return [0.0]
    h = _HOMOTOPY[strategy]
    start, factor, stop, down = getattr(o, h.start), getattr(o, h.factor), getattr(o, h.stop), h.shrinks
    vals = [float(start)]
    while (vals[-1] > stop * (1 + 1e-9)) if down else (vals[-1] < stop * (1 - 1e-9)):
        nxt = vals[-1] * factor
        vals.append(max(nxt, stop) if down else min(nxt, stop))
    return vals


# ----------------------------------------------------------------------------------------------
# Backends: each solves the relaxed NLP for one parameter value
# ----------------------------------------------------------------------------------------------
@dataclass
class _NLPAnswer:
    x: np.ndarray
    f: float
    iterations: int
    status_text: str

    @property
    def ok(self) -> bool:
        return _IPOPT_STATUS.get(self.status_text) is Status.SOLVED


class _DeadlineCallback(ca.Callback):
    """CasADi's ``iteration_callback`` of IPOPT: asks IPOPT to stop (``User_Requested_Stop``)
    once ``time.perf_counter()`` has passed ``deadline``. IPOPT's own ``max_wall_time`` counts
    from the start of each NLP and CasADi fixes it when the solver is built (building again costs
    about as much as a short solve: 0.3 s at 500 variables, 3 s at 4000), so the whole solve's
    deadline is checked here instead."""

    def __init__(self, nx: int, ng: int, np_: int) -> None:
        ca.Callback.__init__(self)
        self.nx, self.ng, self.np_ = nx, ng, np_
        self.deadline = math.inf
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
        if time.perf_counter() >= self.deadline:
            self.stopped = True
            return [1]
        return [0]


class _CasadiBackend:
    """IPOPT through ``casadi.nlpsol`` (exact Hessian, sparse Jacobians). With a deadline
    (:meth:`set_deadline`) an iteration callback stops IPOPT at it."""

    def __init__(self, nlp: _RelaxedNLP, ipopt: dict[str, Any], deadline: float = math.inf) -> None:
        self.nlp = nlp
        opts: dict[str, Any] = {"ipopt": ipopt, "print_time": False, "error_on_fail": False}
        self.deadline_cb = None
        if deadline < math.inf:
            self.deadline_cb = _DeadlineCallback(nlp.x.shape[0], nlp.g.shape[0], nlp.p.shape[0])
            self.deadline_cb.deadline = deadline
            opts["iteration_callback"] = self.deadline_cb
        try:
            self.solver = ca.nlpsol(
                "contactmp_nlp", "ipopt", {"x": nlp.x, "p": nlp.p, "f": nlp.f, "g": nlp.g}, opts,
            )
        except RuntimeError as exc:
            if "IPOPT option" in str(exc) or "type mismatch" in str(exc):
                raise OptionError(f"IPOPT rejected an option: {str(exc).splitlines()[-1]}") from None
            raise

    def solve(self, x0: np.ndarray, p: np.ndarray) -> _NLPAnswer:
        n = self.nlp
        cb = self.deadline_cb
        if cb is not None:
            cb.stopped = False
        sol = self.solver(x0=x0, p=p, lbx=n.lbx, ubx=n.ubx, lbg=n.lbg, ubg=n.ubg)
        st = self.solver.stats()
        status = str(st.get("return_status", "unknown"))
        if cb is not None and cb.stopped and status == "User_Requested_Stop":
            status = "Maximum_WallTime_Exceeded"  # our deadline stopped it: IPOPT's own limit, in effect
        return _NLPAnswer(
            x=np.asarray(sol["x"], dtype=float).ravel(),
            f=float(sol["f"]),
            iterations=int(st.get("iter_count", 0)),
            status_text=status,
        )


class CyipoptCallbacks:
    """The callbacks ``cyipopt.Problem`` calls for ``min f(x, p) s.t. g(x, p)`` (CasADi SX in the
    symbols ``x``, ``p``), each one a CasADi Function evaluation; set ``.p`` before a solve,
    ``.iterations`` counts IPOPT's iterations of the last solve."""

    def __init__(self, x: ca.SX, p: ca.SX, f: ca.SX, g: ca.SX) -> None:
        m = g.shape[0]
        lam = ca.SX.sym("lam", m)
        obj = ca.SX.sym("obj_factor")
        jac = ca.jacobian(g, x)
        hess = ca.tril(ca.hessian(obj * f + ca.dot(lam, g), x)[0]) if m else ca.tril(ca.hessian(obj * f, x)[0])
        self._f = ca.Function("f", [x, p], [f])
        self._grad = ca.Function("grad_f", [x, p], [ca.gradient(f, x)])
        self._g = ca.Function("g", [x, p], [g])
        self._jac = ca.Function("jac_g", [x, p], [jac])
        self._hess = ca.Function("hess_l", [x, p, obj, lam], [hess])
        self._jac_rc = tuple(np.asarray(v, dtype=int) for v in jac.sparsity().get_triplet())
        # cyipopt refuses m > 0 constraints with an empty Jacobian structure: declare one zero
        self._jac_pad = m > 0 and jac.nnz() == 0
        if self._jac_pad:
            self._jac_rc = (np.zeros(1, dtype=int), np.zeros(1, dtype=int))
        self._hess_rc = tuple(np.asarray(v, dtype=int) for v in hess.sparsity().get_triplet())
        self.p = np.zeros(p.shape[0])
        self.iterations = 0

    def objective(self, x: np.ndarray) -> float:
        return float(self._f(x, self.p))

    def gradient(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self._grad(x, self.p), dtype=float).ravel()

    def constraints(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self._g(x, self.p), dtype=float).ravel()

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        if self._jac_pad:
            return np.zeros(1)
        return np.asarray(self._jac(x, self.p).nonzeros(), dtype=float)

    def jacobianstructure(self) -> tuple[np.ndarray, np.ndarray]:
        return self._jac_rc

    def hessian(self, x: np.ndarray, lagrange: np.ndarray, obj_factor: float) -> np.ndarray:
        return np.asarray(self._hess(x, self.p, obj_factor, lagrange).nonzeros(), dtype=float)

    def hessianstructure(self) -> tuple[np.ndarray, np.ndarray]:
        return self._hess_rc

    def intermediate(self, alg_mod: int, iter_count: int, *args: Any) -> bool:
        self.iterations = int(iter_count)
        return True


class _CyipoptBackend:
    """IPOPT through ``cyipopt.Problem`` with callbacks from CasADi Functions."""

    def __init__(self, nlp: _RelaxedNLP, ipopt: dict[str, Any]) -> None:
        import cyipopt

        self.nlp = nlp
        self.cb = CyipoptCallbacks(nlp.x, nlp.p, nlp.f, nlp.g)
        self.problem = cyipopt.Problem(
            n=nlp.x.shape[0], m=nlp.g.shape[0], problem_obj=self.cb,
            lb=nlp.lbx, ub=nlp.ubx, cl=nlp.lbg, cu=nlp.ubg,
        )
        for key, val in ipopt.items():
            try:
                self.problem.add_option(key, val)
            except TypeError:
                raise OptionError(f"IPOPT (cyipopt) rejected the option {key}={val!r}") from None

    def set_wall_time(self, seconds: float) -> None:
        """IPOPT's ``max_wall_time`` for the next solves (an option cyipopt lets us change)."""
        self.problem.add_option("max_wall_time", float(seconds))

    def solve(self, x0: np.ndarray, p: np.ndarray) -> _NLPAnswer:
        self.cb.p = np.asarray(p, dtype=float)
        self.cb.iterations = 0
        x, info = self.problem.solve(np.asarray(x0, dtype=float))
        code = int(info["status"])
        return _NLPAnswer(
            x=np.asarray(x, dtype=float).ravel(),
            f=float(info["obj_val"]),
            iterations=self.cb.iterations,
            status_text=IPOPT_RETURN_CODES.get(code, f"ipopt status {code}"),
        )


_BACKEND_CLASSES = {"casadi": _CasadiBackend, "cyipopt": _CyipoptBackend}


# ----------------------------------------------------------------------------------------------
# The front door
# ----------------------------------------------------------------------------------------------
def _choose(name: Any, table: dict[str, str], what: str) -> str:
    if name not in table:
        hint = did_you_mean(name, table)
        raise OptionError(f"unknown {what} '{name}' (known: {', '.join(table)}){hint}")
    return str(name)


def solve_program(
    prog: Program,
    backend: str = "casadi",
    strategy: str = "scholtes",
    options: NLPOptions | None = None,
    *,
    accept: Callable[[np.ndarray], np.ndarray | None] | None = None,
    **overrides: Any,
) -> ProgramResult:
    """Solve the MPCC ``prog`` with IPOPT: ``min f s.t. bounds, lbg <= g <= ubg, 0 <= a _|_ b >= 0``.

    ``backend`` is ``"casadi"`` or ``"cyipopt"``; ``strategy`` one of :data:`STRATEGIES`;
    ``options`` an :class:`NLPOptions` and/or keyword overrides (strict). The program's current
    parameter values ``p0`` are used and ``x0`` starts the first NLP.

    ``accept(x)``, if given, is called after every NLP that IPOPT solves and may return a
    repaired point (for an LCP: the active-set polish); a repaired point that passes the
    independent checks ends the homotopy and is returned (the caller vouches for its optimality
    when the program has an objective). Never raises on non-convergence: the returned
    :class:`ProgramResult` carries the status.
    """
    t0 = time.perf_counter()
    if not isinstance(prog, Program):
        raise InputError("prog", f"must be a contactmp Program, got {type(prog).__name__}")
    if prog.n_x == 0:
        raise InputError("prog", "has no variables")
    backend = _choose(backend, BACKENDS, "backend")
    strategy = _choose(strategy, STRATEGIES, "MPCC strategy")
    o = NLPOptions.build(options, **overrides)
    ipopt = {**IPOPT_DEFAULTS, "tol": float(o.tol), "max_iter": int(o.max_iter), **o.ipopt}
    limit = math.inf if o.time_limit is None else float(o.time_limit)
    wall_each_nlp = math.isfinite(limit) and "max_wall_time" not in o.ipopt
    if wall_each_nlp:
        ipopt["max_wall_time"] = max(limit - (time.perf_counter() - t0), 1e-3)
    nlp = _relaxed_nlp(prog, strategy, o.sign_constraints)
    if backend == "casadi":  # IPOPT's options are fixed once built: the deadline goes in a callback
        solver: Any = _CasadiBackend(nlp, ipopt, t0 + limit if wall_each_nlp else math.inf)
        wall_each_nlp = False
    else:
        solver = _BACKEND_CLASSES[backend](nlp, ipopt)
    p0 = prog.p0
    comp_key = "comp_min" if o.sign_constraints else "comp_prod"

    def verified(res: dict[str, float]) -> bool:
        return res["bound"] <= o.feas_tol and res["constraint"] <= o.feas_tol and res[comp_key] <= o.comp_tol

    x = np.clip(prog.x0, nlp.lbx, nlp.ubx)
    history: list[dict[str, Any]] = []
    iterations = 0
    hom = _HOMOTOPY.get(strategy)  # None for "direct": one NLP at sigma = 0
    param_name = hom.param if hom is not None else "sigma"
    nested = hom is None or hom.nested
    last: _Candidate | None = None      # the answer of the last NLP
    last_ok: _Candidate | None = None   # the answer of the last NLP IPOPT solved
    found: _Candidate | None = None     # a verified answer (ends the homotopy)
    checked: _Candidate | None = None   # the last answer that passes the checks although IPOPT failed
    stop_reason = "homotopy exhausted"
    for t in (_homotopy(strategy, o) if prog.n_comp else [0.0]):  # no pairs: one NLP
        left = limit - (time.perf_counter() - t0)
        if left <= 0:
            stop_reason = "time_limit"
            break
        if wall_each_nlp:
            solver.set_wall_time(left)
        pt = np.concatenate([p0, [t]])
        ans = solver.solve(x, pt)
        iterations += ans.iterations
        ok = ans.ok
        extra: dict[str, float] = {}
        if nlp.n_smoothed:
            # IPOPT's |phi_eps| <= tol also holds far out on an axis: count the NLP as solved only
            # when its answer is on the curves a_i b_i = eps^2 (and the rest of the NLP) to feas_tol
            extra["smoothing_violation"] = nlp.violation(ans.x, pt)
            ok = ok and extra["smoothing_violation"] <= o.feas_tol
        cand = _Candidate(ans.x, ans.status_text, ok, prog.residuals(ans.x, p0))
        history.append({param_name: t, "status": ans.status_text, "iterations": ans.iterations, **cand.res,
                        **extra})
        last = cand
        if np.isfinite(ans.x).all() and (nested or ok):
            # (a failed NLP of a non-nested homotopy says nothing of the next: keep the last start)
            x = ans.x
        if not cand.ok and verified(cand.res):
            checked = cand
        if cand.ok:
            last_ok = cand
            if verified(cand.res):
                found = cand
                break
            if accept is not None:
                xr = accept(ans.x.copy())
                if xr is not None:
                    rep = _Candidate(np.asarray(xr, dtype=float).ravel(), ans.status_text, True,
                                     prog.residuals(xr, p0), repaired=True)
                    history[-1]["repaired"] = {k: rep.res[k] for k in ("bound", "constraint", comp_key)}
                    if verified(rep.res):
                        found = rep
                        break
        if ans.status_text == "Infeasible_Problem_Detected" and nested and nlp.violation(ans.x, pt) > o.feas_tol:
            # IPOPT's answer violates the relaxed NLP itself; the next relaxations are tighter
            stop_reason = "the relaxed NLP is locally infeasible"
            break
    backend_status = last.status if last is not None else "not started"
    messages = [f"{strategy} via {backend}: {len(history)} NLP(s), last IPOPT status {backend_status}"]
    if found is not None:
        chosen, status = found, Status.SOLVED
        if found.repaired:
            messages.append("answer repaired by accept() and verified")
    else:
        # the last NLP's answer, unless it failed and an earlier NLP succeeded
        chosen = last if (last is not None and (last.ok or last_ok is None)) else last_ok
        if checked is not None and (chosen is None or not verified(chosen.res)):
            # an NLP IPOPT did not finish left a point that passes the independent checks (feasible
            # and complementary): return it rather than a worse one; with an objective its status
            # stays unsolved (IPOPT certified no stationarity), without one it is a solution
            chosen = checked
            messages.append(f"returning a point that passes the checks although IPOPT ended {checked.status}")
        if chosen is None:  # time limit before the first NLP
            chosen = _Candidate(x, "not started", False, prog.residuals(x, p0))
        elif chosen is not last:
            messages.append("returning the answer of the last NLP IPOPT solved")
        if verified(chosen.res) and (chosen.ok or not prog.has_objective):
            status = Status.SOLVED
        elif stop_reason == "time_limit":
            status = Status.TIME_LIMIT
            messages.append(f"time limit {limit:g} s reached")
        else:
            claimed = _IPOPT_STATUS.get(backend_status, Status.NOT_SOLVED)
            status = Status.NOT_SOLVED if claimed is Status.SOLVED else claimed
            r = chosen.res
            messages.append(
                f"{stop_reason}; checks: bound {r['bound']:.2e}, constraint {r['constraint']:.2e} "
                f"(feas_tol {o.feas_tol:.0e}), {comp_key} {r[comp_key]:.2e} (comp_tol {o.comp_tol:.0e})"
            )
    return ProgramResult(
        status=status,
        x=chosen.x,
        objective=chosen.res["objective"],
        iterations=iterations,
        time_s=time.perf_counter() - t0,
        backend=backend,
        strategy=strategy,
        backend_status=backend_status,
        residuals=chosen.res,
        message="; ".join(messages),
        extras={"homotopy": history, "ipopt_options": ipopt,
                **({"smoothed_pairs": nlp.n_smoothed} if strategy == "fischer_burmeister" else {})},
        program=prog,
    )


@dataclass
class _Candidate:
    x: np.ndarray
    status: str
    ok: bool
    res: dict[str, float]
    repaired: bool = False
