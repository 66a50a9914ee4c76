"""fc3d(W, q, mu) as an MPCC solved by IPOPT (registry name ``"ipopt"``).

The problem is declared once, as the smooth complementarity block of :func:`add_fc3d_block`
(defined here, since this solver needs it; :mod:`contactmp.formulations.cone_ncp` derives the
forms and uses the same block and cone law) (variables ``r``, ``u``, friction
directions ``w``, sliding speeds ``gamma``; ``u = W r + q``, ``0 <= r_n _|_ u_n >= 0``,
``r_T = mu r_n w``, ``u_T + gamma w = 0``, ``0 <= 1 - |w|^2 _|_ gamma >= 0``; option
``form="quadratic"`` for the literal form of (10), (13)), and solved by
:func:`contactmp.solvers.nlp.solve.solve_program` with the MPCC strategies of ``Options.strategies`` in
turn (default: the l1 elastic penalty, then the direct NLP, then Scholtes' relaxation -- the order
measured best on the shared fc3d problems: each alone solves the 17 problems up to 54 contacts,
elastic_l1 fastest on most of them) until an answer is verified.

Before the solve the data are scaled, ``r = s_r r'``, ``u = s_u u'`` with ``s_u = ||q||_inf`` and
``s_r = s_u / d``, ``d`` the mean of ``diag(W)``: fc3d is invariant under positive scalings of
``r`` and ``u`` (the cones are), and the scaled problem ``(W / d, q / s_u)`` has entries of order 1
(the Confeti problems have ``W ~ 1e-4``, ``q ~ 10``, so ``r ~ 1e5``).

After every NLP IPOPT solves, and on the final answer, an active-set Newton polish
(:func:`polish_fc3d`) guesses each contact's mode from IPOPT's point (separating ``r = 0``,
sticking ``u = 0`` or sliding ``u_n = 0``, ``r_T = -mu r_n u_T / |u_T|``), and takes a few
Newton steps on those smooth equations. It can only be kept if it lowers the natural-map residual;
the answer is judged by :func:`~contactmp.solvers.fc3d.problem.verified_fc3d_result`
(``||r - P_K(r - u_hat)|| / max(||q||, ||r||, ||u||) <= tol``), so the polish cannot fake a
solution.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, OptionError, did_you_mean
from contactmp.progress import Reporter, check_progress
from contactmp.result import Result, Status
from contactmp.solvers.fc3d.problem import fc3d_residual, validate_fc3d, verified_fc3d_result
from contactmp.solvers.options import SolverOptions, check_int
from contactmp.solvers.nlp import STRATEGIES, solve_program

if TYPE_CHECKING:  # pragma: no cover
    from contactmp.program import Complementarity, Constraint, Program, Variables

NAME = "ipopt"

__all__ = ["NAME", "Options", "solve", "polish_fc3d", "fc3d_program", "FORMS", "FC3DBlock", "add_fc3d_block"]


@dataclass
class Options(SolverOptions):
    """Options of the IPOPT fc3d solver (strict keys).

    Attributes
    ----------
    tol : accepted natural-map residual (Siconos' normalization).
    form : the smooth form of the block, ``"disk"`` or ``"quadratic"``
        (:data:`FORMS`).
    strategies : MPCC strategies of :data:`contactmp.solvers.nlp.solve.STRATEGIES`, tried in turn until
        an answer is verified (each from ``r = 0``).
    scale : solve the scaled problem ``(W / d, q / ||q||_inf)`` (see the module docstring).
    polish : run :func:`polish_fc3d` after every NLP IPOPT solves and on the final answer.
    polish_steps : Newton steps per polish.
    max_iter : IPOPT iterations per NLP (500: an NLP of the elastic homotopy that needs more is
        better left for the next penalty; measured on BoxesStack1, 7 s against 21 s with 3000).
    time_limit : wall-clock seconds for the whole solve (``None`` or ``inf``: none; status
        ``time_limit`` when reached, with the checked point of least natural-map residual).
    ipopt : further IPOPT options (checked against IPOPT's own table).
    """

    tol: float = 1e-8
    form: str = "disk"
    strategies: tuple[str, ...] = ("elastic_l1", "direct", "scholtes")
    scale: bool = True
    polish: bool = True
    polish_steps: int = 10
    max_iter: int = 500
    time_limit: float = math.inf
    ipopt: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """Reject ill-typed values."""
        super().check()
        if isinstance(self.strategies, str):
            self.strategies = (self.strategies,)
        if not isinstance(self.strategies, (tuple, list)) or not self.strategies:
            raise OptionError(f"strategies must be a non-empty sequence of names, got {self.strategies!r}")
        for s in self.strategies:
            if s not in STRATEGIES:
                hint = did_you_mean(s, STRATEGIES)
                raise OptionError(f"unknown MPCC strategy '{s}' (known: {', '.join(STRATEGIES)}){hint}")
        self.strategies = tuple(self.strategies)
        if self.form not in FORMS:
            raise OptionError(f"form must be one of {', '.join(FORMS)}, got {self.form!r}")
        for name in ("scale", "polish"):
            if not isinstance(getattr(self, name), bool):
                raise OptionError(f"{name} must be True or False, got {getattr(self, name)!r}")
        for name in ("polish_steps", "max_iter"):
            check_int(name, getattr(self, name), 0)
        if not isinstance(self.ipopt, dict):
            raise OptionError(f"ipopt must be a dict of IPOPT options, got {type(self.ipopt).__name__}")


# ----------------------------------------------------------------------------------------------
# The fc3d block and the smooth cone law (shared with the instantaneous ConeNCP and the velocity steps)
# ----------------------------------------------------------------------------------------------
#: the smooth forms of Coulomb's law (see :mod:`contactmp.formulations.cone_ncp`)
FORMS: dict[str, str] = {
    "disk": "r_T = mu r_n w, u_T + gamma w = 0, 0 <= 1 - |w|^2 _|_ gamma >= 0",
    "quadratic": "mu r_n u_T + gamma r_T = 0, 0 <= mu^2 r_n^2 - |r_T|^2 _|_ gamma >= 0",
}


@dataclass
class _Law:
    """Handles of the friction law rows of one block."""

    direction: "Constraint"
    slack: "Complementarity"
    friction: "Constraint | None"


def check_form(form: Any) -> str:
    if form not in FORMS:
        raise InputError("form", f"must be one of {', '.join(map(repr, FORMS))}, got {form!r}")
    return str(form)


def cone_law(
    prog: "Program", prefix: str, block: str, form: str, r_n: Any, r_t: Any, r_o: Any, u_t: Any,
    u_o: Any, gamma: Any, w: "Variables | None", mu: Any,
) -> _Law:
    """Add the friction law of ``form`` at ``n`` contacts (``w`` holds ``(w_t..., w_o...)``)."""
    import casadi as ca

    if form == "disk":
        assert w is not None
        n = r_n.shape[0]
        wt, wo = w.sym[:n], w.sym[n:]
        mr = mu * r_n
        friction = prog.add_constraint(ca.vertcat(r_t - mr * wt, r_o - mr * wo), 0.0, 0.0,
                                       name=f"{prefix}/friction", block=block)
        direction = prog.add_constraint(ca.vertcat(u_t + gamma * wt, u_o + gamma * wo), 0.0, 0.0,
                                        name=f"{prefix}/direction", block=block)
        slack = prog.add_complementarity(1.0 - wt * wt - wo * wo, gamma, name=f"{prefix}/disk_perp_gamma",
                                         block=block)
        return _Law(direction, slack, friction)
    mr = mu * r_n
    direction = prog.add_constraint(ca.vertcat(mr * u_t + gamma * r_t, mr * u_o + gamma * r_o), 0.0, 0.0,
                                    name=f"{prefix}/direction", block=block)
    slack = prog.add_complementarity(mr * mr - r_t * r_t - r_o * r_o, gamma, name=f"{prefix}/cone_perp_gamma",
                                     block=block)
    return _Law(direction, slack, None)


@dataclass
class FC3DBlock:
    """Handles of an fc3d block (query a solve with ``result.value(handle)``).

    ``r`` and ``u`` are ``3 nc`` in the fc3d order (per contact ``n, t, o``); ``gamma`` (``nc``) is
    the sliding speed ``||u_T||`` (undetermined at a contact with ``r = 0`` in the quadratic form);
    ``w`` (disk form, ``2 nc``: ``w_t`` of all contacts, then ``w_o``) the friction direction with
    ``r_T = mu r_n w``. Rows of the constraints ``friction``, ``direction`` and pairs ``slack``:
    the ``t`` rows of all contacts, then the ``o`` rows.
    """

    r: "Variables"
    u: "Variables"
    gamma: "Variables"
    w: "Variables | None"
    velocity: "Constraint"  #: u - W r - q = 0
    friction: "Constraint | None"  #: r_T - mu r_n w = 0 (disk form)
    direction: "Constraint"  #: u_T + gamma w = 0 (disk) or mu r_n u_T + gamma r_T = 0 (quadratic)
    normal: "Complementarity"  #: 0 <= r_n _|_ u_n >= 0
    slack: "Complementarity"  #: 0 <= 1 - |w|^2 (disk) or mu^2 r_n^2 - |r_T|^2 (quadratic) _|_ gamma >= 0
    nc: int
    form: str


def _sx_or_array(value: Any, shape: tuple[int, ...], field: str) -> Any:
    """A CasADi SX/DM of ``shape`` (checked) or a finite float array of ``shape``."""
    import casadi as ca

    if isinstance(value, ca.MX):
        raise InputError(field, "is a CasADi MX expression; the Program takes SX")
    if isinstance(value, (ca.SX, ca.DM)):
        want = shape if len(shape) == 2 else (shape[0], 1)
        got = value.shape
        if got != want and not (len(shape) == 1 and got == (1, shape[0])):
            raise InputError(field, f"must have shape {shape}, got {got}")
        if len(shape) == 1 and got == (1, shape[0]):
            value = value.T
        return ca.SX(value) if isinstance(value, ca.DM) else value
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(field, f"cannot be read as float numbers ({exc})") from None
    if len(shape) == 1 and arr.ndim == 0:
        arr = np.full(shape, float(arr))
    arr = arr.reshape(-1) if len(shape) == 1 and arr.ndim == 2 and 1 in arr.shape else arr
    if arr.shape != shape:
        raise InputError(field, f"must have shape {shape}, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError(field, "contains NaN or inf")
    return arr


def add_fc3d_block(
    prog: "Program",
    W: Any,
    q: Any,
    mu: Any,
    prefix: str = "fc3d",
    *,
    form: str = "disk",
    r_init: ArrayLike | None = None,
) -> FC3DBlock:
    """Add fc3d(W, q, mu) to ``prog`` as block ``prefix`` (smooth form, see
    :mod:`contactmp.formulations.cone_ncp`).

    Finds ``r`` (``3 nc``, per contact ``(n, t, o)``) and ``u = W r + q`` with ``r in K_mu``,
    ``u_hat = u + mu ||u_T|| e_n in K_mu^*``, ``r . u_hat = 0``, written (``form="disk"``) as

        u - W r - q = 0,       0 <= r_n _|_ u_n >= 0,
        r_T = mu r_n w,        u_T + gamma w = 0,       0 <= 1 - |w|^2 _|_ gamma >= 0,

    or (``form="quadratic"``) ``mu r_n u_T + gamma r_T = 0``, ``0 <= mu^2 r_n^2 - |r_T|^2 _|_
    gamma >= 0``; ``r_n >= 0`` and ``gamma >= 0`` are variable bounds. ``W`` (``3 nc x 3 nc``),
    ``q`` (``3 nc``) and ``mu`` (``nc``, or a scalar) are numbers or CasADi SX expressions of the
    program's variables and parameters (a transcription stacks one block per step). ``r_init``
    starts ``r`` (and ``u = W r_init + q`` when ``W``, ``q`` are numeric); default ``r = 0``.
    """
    import casadi as ca

    form = check_form(form)
    if isinstance(W, (ca.SX, ca.DM, ca.MX)):
        shape = tuple(W.shape)
    else:
        try:
            shape = np.shape(np.asarray(W, dtype=np.float64))
        except (TypeError, ValueError) as exc:
            raise InputError("W", f"cannot be read as a float matrix ({exc})") from None
    if len(shape) != 2 or shape[0] != shape[1]:
        raise InputError("W", f"must be a square 3 nc x 3 nc matrix, got shape {shape}")
    m = int(shape[0])
    if m == 0 or m % 3:
        raise InputError("W", f"must be 3 nc x 3 nc (nc >= 1 contacts), got {m} x {m}")
    nc = m // 3
    W_ = _sx_or_array(W, (m, m), "W")
    q_ = _sx_or_array(q, (m,), "q")
    mu_ = _sx_or_array(mu, (nc,), "mu")
    if isinstance(mu_, np.ndarray) and (mu_ < 0).any():
        raise InputError("mu", "friction coefficients must be >= 0")

    r_lb = np.tile([0.0, -np.inf, -np.inf], nc)
    if r_init is None:
        r0 = np.zeros(m)
    else:
        r0 = _sx_or_array(r_init, (m,), "r_init")
        if not isinstance(r0, np.ndarray):
            raise InputError("r_init", "must be numbers")
        r0 = np.maximum(r0, r_lb)
    numeric = isinstance(W_, np.ndarray) and isinstance(q_, np.ndarray)
    u0 = W_ @ r0 + q_ if numeric else np.zeros(m)
    blk = prefix
    r = prog.add_variables(f"{prefix}/r", m, lb=r_lb, init=r0, block=blk)
    u = prog.add_variables(f"{prefix}/u", m, init=u0, block=blk)
    w = prog.add_variables(f"{prefix}/w", 2 * nc, block=blk) if form == "disk" else None
    gamma = prog.add_variables(f"{prefix}/gamma", nc, lb=0.0, init=np.hypot(u0[1::3], u0[2::3]), block=blk)

    if isinstance(W_, np.ndarray):  # only the nonzeros of W enter the expression graph
        import scipy.sparse as sp

        W_e = ca.DM(sp.csc_matrix(W_))
    else:
        W_e = W_
    Wr = ca.mtimes(W_e, r.sym)
    q_e = ca.DM(q_) if isinstance(q_, np.ndarray) else q_
    velocity = prog.add_constraint(u.sym - Wr - q_e, 0.0, 0.0, name=f"{prefix}/velocity", block=blk)
    rs, us = r.sym, u.sym
    r_n, r_t, r_o = rs[0::3], rs[1::3], rs[2::3]
    u_n, u_t, u_o = us[0::3], us[1::3], us[2::3]
    mu_e = ca.DM(mu_) if isinstance(mu_, np.ndarray) else mu_
    normal = prog.add_complementarity(r_n, u_n, name=f"{prefix}/normal", block=blk)
    law = cone_law(prog, prefix, blk, form, r_n, r_t, r_o, u_t, u_o, gamma.sym, w, mu_e)
    return FC3DBlock(r=r, u=u, gamma=gamma, w=w, velocity=velocity, friction=law.friction,
                     direction=law.direction, normal=normal, slack=law.slack, nc=nc, form=form)


# ----------------------------------------------------------------------------------------------
# Active-set Newton polish
# ----------------------------------------------------------------------------------------------
def _modes(W: np.ndarray, q: np.ndarray, mu: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Per contact 0 = separating (r = 0), 1 = sticking (u = 0), 2 = sliding, guessed from ``r``.

    Forces are compared with velocities through the contact's own stiffness ``d_j`` (mean of the
    diagonal of its 3 x 3 block of W): separating when ``d_j r_n < u_n``; else sticking when
    ``|u_T| < d_j (mu r_n - |r_T|)`` (the velocity is smaller than the distance to the cone's
    boundary), else sliding.
    """
    u = W @ r + q
    nc = mu.shape[0]
    dg = np.diag(W).reshape(nc, 3).mean(axis=1)
    d = np.where(dg > 0, dg, max(float(dg.max(initial=0.0)), 1.0))
    R, U = r.reshape(nc, 3), u.reshape(nc, 3)
    rT = np.hypot(R[:, 1], R[:, 2])
    uT = np.hypot(U[:, 1], U[:, 2])
    modes = np.full(nc, 2)
    modes[uT < d * (mu * R[:, 0] - rT)] = 1
    modes[d * R[:, 0] < U[:, 0]] = 0
    return modes


def _newton_system(W: np.ndarray, q: np.ndarray, mu: np.ndarray, r: np.ndarray,
                   modes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``F(r)`` and its Jacobian for fixed modes: ``r_j = 0`` (0), ``u_j = 0`` (1), or (2)
    ``u_jn = 0`` and ``r_jT + mu_j r_jn u_jT / |u_jT| = 0``."""
    u = W @ r + q
    m = r.shape[0]
    F = np.empty(m)
    J = np.zeros((m, m))
    for j, mode in enumerate(modes):
        s = slice(3 * j, 3 * j + 3)
        if mode == 0:
            F[s] = r[s]
            J[s, s] = np.eye(3)
        elif mode == 1:
            F[s] = u[s]
            J[s] = W[s]
        else:
            n, t = 3 * j, slice(3 * j + 1, 3 * j + 3)
            uT = u[t]
            nrm = float(np.hypot(uT[0], uT[1]))
            F[n] = u[n]
            J[n] = W[n]
            if nrm == 0.0:  # no direction: fall back to sticking tangentially
                F[t] = uT
                J[t] = W[t]
                continue
            e = uT / nrm
            F[t] = r[t] + mu[j] * r[n] * e
            P = (np.eye(2) - np.outer(e, e)) / nrm
            J[t] = mu[j] * r[n] * (P @ W[t])
            J[t, t] += np.eye(2)
            J[t, n] += mu[j] * e
    return F, J


def polish_fc3d(
    W: np.ndarray, q: np.ndarray, mu: np.ndarray, r: np.ndarray, steps: int = 10
) -> tuple[np.ndarray, float]:
    """The best of ``r`` and up to ``steps`` active-set Newton iterates, by natural-map residual.

    Each step guesses the modes from the current iterate (:func:`_modes`), solves
    ``J dr = -F`` for the smooth equations of those modes (least squares when ``J`` is singular:
    several W are), and keeps the iterate if it is finite. Returns ``(r_best, residual)``;
    whatever it returns is judged by :func:`~contactmp.solvers.fc3d.problem.fc3d_residual`.
    """
    best = np.asarray(r, dtype=float).copy()
    best_res = fc3d_residual(W, q, mu, best)
    x = best.copy()
    for _ in range(steps):
        F, J = _newton_system(W, q, mu, x, _modes(W, q, mu, x))
        try:
            dx = np.linalg.solve(J, -F)
        except np.linalg.LinAlgError:
            dx = np.linalg.lstsq(J, -F, rcond=None)[0]
        if not np.isfinite(dx).all():
            dx = np.linalg.lstsq(J, -F, rcond=None)[0]
            if not np.isfinite(dx).all():
                break
        x = x + dx
        res = fc3d_residual(W, q, mu, x)
        if res < best_res:
            best, best_res = x.copy(), res
        if res == 0.0 or not np.isfinite(res):
            break
    return best, best_res


# ----------------------------------------------------------------------------------------------
# The solver
# ----------------------------------------------------------------------------------------------
def fc3d_program(W: np.ndarray, q: np.ndarray, mu: np.ndarray, form: str = "disk",
                 r_init: np.ndarray | None = None) -> tuple[Any, Any]:
    """``(Program, FC3DBlock)`` of fc3d(W, q, mu): one block ``"fc3d"``, no objective."""
    from contactmp.program import Program

    prog = Program("fc3d")
    return prog, add_fc3d_block(prog, W, q, mu, prefix="fc3d", form=form, r_init=r_init)


def solve(W: Any, q: Any, mu: Any, options: Options | None = None, progress: Reporter | None = None,
          **overrides: Any) -> Result:
    """Solve fc3d(W, q, mu) with IPOPT on the smooth MPCC (see the module docstring).

    ``x`` of the Result is ``r`` (per contact ``(n, t, o)``), ``extras["u"] = W r + q``;
    ``extras["attempts"]`` lists each strategy tried (IPOPT status, iterations, NLPs, time and
    natural-map residual), ``extras["polished"]`` says whether the returned ``r`` came from the
    Newton polish, ``extras["scale"] = (s_r, s_u)``. Never raises on non-convergence. Every point
    considered (IPOPT's answer of each NLP, polished or not) is checked and, with a ``progress``
    reporter (see :mod:`contactmp.progress`), reported; at the time limit the answer is the
    checked point of least residual.
    """
    t0 = time.perf_counter()
    W, q, mu = validate_fc3d(W, q, mu)
    o = Options.build(options, **overrides)
    m = q.shape[0]
    s_u = float(np.abs(q).max())
    if s_u == 0.0:  # r = 0 solves fc3d(W, 0, mu)
        return verified_fc3d_result(W, q, mu, np.zeros(m), solver=NAME, claimed=Status.SOLVED, tol=o.tol,
                                    iterations=0, t_start=t0, message="q = 0: r = 0", attempts=[],
                                    polished=False, scale=(1.0, 1.0))
    if o.scale:
        dg = np.abs(np.diag(W)).mean()
        d = float(dg) if dg > 0 else 1.0
        s_r = s_u / d
    else:
        s_u, s_r = 1.0, 1.0
    Ws, qs = W * (s_r / s_u), q / s_u

    best = {"r": np.zeros(m), "res": fc3d_residual(W, q, mu, np.zeros(m)), "polished": False}

    report = check_progress(progress)
    checks = [0]
    limit = math.inf if o.time_limit is None else float(o.time_limit)

    def consider(r_scaled: np.ndarray, polished: bool) -> float:
        r = s_r * r_scaled
        res = fc3d_residual(W, q, mu, r)
        if report is not None:
            checks[0] += 1
            report(NAME, checks[0], res)
        if res < best["res"]:
            best.update(r=r, res=res, polished=polished)
        return res

    def accept(x: np.ndarray, prog: Any, blk: Any) -> np.ndarray | None:
        """Record IPOPT's answer, polish it; a verified polished point ends the homotopy."""
        r_s = prog.value(blk.r, x)
        consider(r_s, False)
        if not o.polish:
            return None
        rp, _ = polish_fc3d(Ws, qs, mu, r_s, o.polish_steps)
        if consider(rp, True) <= o.tol:
            return _program_point(prog, blk, Ws, qs, mu, rp)
        return None

    attempts: list[dict[str, Any]] = []
    iterations = 0
    last_status = Status.NOT_SOLVED
    message = ""
    for strategy in o.strategies:
        remaining = limit - (time.perf_counter() - t0)
        if remaining <= 0:
            last_status, message = Status.TIME_LIMIT, f"time limit {limit:g} s reached"
            break
        t1 = time.perf_counter()
        prog, blk = fc3d_program(Ws, qs, mu, o.form)
        res = solve_program(prog, strategy=strategy, max_iter=int(o.max_iter), time_limit=float(remaining),
                            ipopt=dict(o.ipopt), accept=lambda x, p=prog, b=blk: accept(x, p, b))
        iterations += res.iterations
        r_s = res.value(blk.r)
        nat = consider(r_s, False)
        if o.polish and best["res"] > o.tol and np.isfinite(r_s).all():
            rp, _ = polish_fc3d(Ws, qs, mu, r_s, o.polish_steps)
            nat = min(nat, consider(rp, True))
        attempts.append({"strategy": strategy, "status": res.status.value, "ipopt_status": res.backend_status,
                         "iterations": res.iterations, "nlps": len(res.extras.get("homotopy", [])),
                         "time_s": time.perf_counter() - t1, "residual": nat})
        last_status = res.status
        if best["res"] <= o.tol:
            break
    claimed = Status.SOLVED if best["res"] <= o.tol else (
        last_status if last_status is not Status.SOLVED else Status.NOT_SOLVED)
    if claimed is Status.TIME_LIMIT and not message:
        message = f"time limit {limit:g} s reached"
    summary = ", ".join(f"{a['strategy']}: {a['status']} ({a['residual']:.1e})" for a in attempts)
    message = "; ".join(s for s in (summary, message, "polished by active-set Newton" if best["polished"] else "") if s)
    return verified_fc3d_result(W, q, mu, best["r"], solver=NAME, claimed=claimed, tol=o.tol,
                                iterations=iterations, t_start=t0, message=message, attempts=attempts,
                                polished=best["polished"], scale=(s_r, s_u))


def _program_point(prog: Any, blk: Any, W: np.ndarray, q: np.ndarray, mu: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The program vector of the block at ``r``: ``u = W r + q``, ``gamma = |u_T|`` and (disk form)
    ``w = r_T / (mu r_n)``, or ``-u_T / |u_T|`` where ``mu r_n = 0`` (``|w| <= 1`` enforced)."""
    x = prog.x0.copy()
    u = W @ r + q
    x[blk.r.index] = r
    x[blk.u.index] = u
    uT = np.column_stack([u[1::3], u[2::3]])
    speed = np.hypot(uT[:, 0], uT[:, 1])
    x[blk.gamma.index] = speed
    if blk.w is not None:
        mr = mu * r[0::3]
        rT = np.column_stack([r[1::3], r[2::3]])
        w = np.zeros_like(rT)
        inside = mr > 0
        w[inside] = rT[inside] / mr[inside, None]
        moving = ~inside & (speed > 0)
        w[moving] = -uT[moving] / speed[moving, None]
        nrm = np.hypot(w[:, 0], w[:, 1])
        w[nrm > 1] /= nrm[nrm > 1, None]
        x[blk.w.index] = np.concatenate([w[:, 0], w[:, 1]])
    return x
