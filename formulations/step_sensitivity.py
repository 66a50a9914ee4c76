"""Sensitivities of a time step, ``d(q_{k+1}, v_{k+1}) / d(q_k, v_k, u_k)``, for any formulation whose
step is a complementarity :class:`~contactmp.program.Program` block.

A formulation writes its step as a Program of variables ``x`` (``v_{k+1}``, impulses, multipliers),
equality rows ``g(x, p) = 0`` and pairs ``0 <= a(x, p) _|_ b(x, p) >= 0``, with Coulomb cones as
:class:`~contactmp.program.ConeComplementarity` constructs; built with the state as parameters
``p = (q_k, v_k, u_k)`` (exactly what the trajectory-optimization transcription does with SX), the
step's solution ``x*`` satisfies on its identified pieces a square system ``F(x, p) = 0``:

* every equality row, except the disk-form rows of the cones;
* for each pair, the side that is zero at ``x*`` (a pair with both sides zero is *degenerate*:
  the side ``side`` is taken, ``"a"`` by default -- in every formulation the impulse or weight
  side, so the contact stays open -- and the pair is flagged);
* for each cone contact, the three equations of its mode (``separated``: ``r = 0``; ``sticking``:
  ``u = 0``; ``sliding``: ``u_n = 0`` (associated: ``u_n - mu ||u_T|| = 0``) and
  ``r_T + mu r_n u_T / ||u_T|| = 0``; the grazing and stick/slip boundary points are flagged and
  taken on the separated and sticking pieces, as :mod:`contactmp.solvers.fc3d.sensitivity` does),
  and equations that pin the disk form's auxiliary ``gamma`` and ``w`` to their values
  (``gamma = ||u_T||``, ``w = -u_T / ||u_T||`` when ``u_T != 0``, else ``gamma = 0`` and ``w``
  from ``r_T = mu r_n w``, or held where it is free).

Then ``dx/dp = -F_x^{-1} F_p`` (:class:`~contactmp.solvers.sensitivity.ImplicitSensitivity`), and
with ``q_{k+1} = q_k + h qdot(q_k, v_{k+1})`` the step's Jacobian follows by the chain rule. The
wrench-polytope steps (NMDP, linearized MDP), whose time step is a program of their own with
substeps, go through :mod:`contactmp.formulations.polytope_sensitivity` (the same
:func:`program_sensitivity` on their KKT blocks). :func:`polish` refines an approximate solution
by Newton's method on its pieces (finite-difference references).
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, check_number
from contactmp.formulations.base import Formulation, Step, StepOutcome, SystemFunctions, for_system
from contactmp.models.symbolic import ContactSystem
from contactmp.program import Program
from contactmp.solvers.sensitivity import DEGENERATE_TOL, ImplicitSensitivity, min_norm_solve

__all__ = ["ProgramSensitivity", "program_sensitivity", "smoothed_solution", "polish", "StepJacobian", "step_jacobian"]


@dataclass
class ProgramSensitivity:
    """``dx/dp`` of a complementarity Program's solution ``x`` (:func:`program_sensitivity`)."""

    x: np.ndarray
    degenerate: list[str]   #: the degenerate pairs and cone contacts, ``"name[i]"``
    core: ImplicitSensitivity = field(repr=False)
    _Fp: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0)))
    smoothing: float = 0.0  #: the central-path parameter kappa of a smoothed derivative (0: exact)
    benign: list[str] = field(default_factory=list)  #: degenerate pairs whose pieces agree on the outputs (not flagged)

    @property
    def flagged(self) -> bool:
        """True when a pair or cone contact is degenerate or ``F_x`` is singular."""
        return bool(self.degenerate) or self.core.singular

    def dx_dp(self) -> np.ndarray:
        """The Jacobian ``dx/dp`` (``n_x`` x ``n_p``, the parameters in the Program's order)."""
        return self.core.jacobian(self._Fp)[:self.x.size]

    def jvp(self, dp: ArrayLike) -> np.ndarray:
        """``dx`` for the parameter change ``dp``."""
        return -self.core._solve(self._Fp @ np.asarray(dp, dtype=float))[:self.x.size]

    def vjp(self, x_bar: ArrayLike) -> np.ndarray:
        """``p_bar = dx/dp^T x_bar``."""
        xb = np.zeros(self._Fp.shape[0])
        xb[:self.x.size] = np.asarray(x_bar, dtype=float)
        return -self._Fp.T @ self.core._solve(xb, trans=1)


def _cone_pieces(prog: Program, cone: Any, xv: np.ndarray, pv: np.ndarray, tol: float, cache: dict
                 ) -> tuple[tuple[tuple[int, int], ...], list[str]]:
    """Per contact of ``cone`` at ``(x, p)``: ``(piece, aux)`` with piece 0 separated, 1 sticking,
    2 sliding (or frictionless in contact) and aux 0 (``u_T != 0``: ``gamma = ||u_T||``,
    ``w = -u_T / ||u_T||``), 1 (``gamma = 0``, ``r_T = mu r_n w``) or 2 (``gamma = 0``, ``w`` held);
    and the flagged contacts."""
    fn = cache.get(("cone", cone.name))
    if fn is None:
        fn = cache[("cone", cone.name)] = ca.Function("cone_ru", [prog.x, prog.p],
                                                      [ca.horzcat(*cone.r), ca.horzcat(*cone.u), cone.mu])
    Rm, Um, mum = fn(xv, pv)
    R = np.asarray(Rm, dtype=float).reshape(cone.size, cone.dim)
    U = np.asarray(Um, dtype=float).reshape(cone.size, cone.dim)
    mu = np.asarray(mum, dtype=float).ravel()
    scale = tol * max(float(np.abs(R).max(initial=0.0)), float(np.abs(U).max(initial=0.0)), 1e-300)
    pieces, flagged = [], []
    for j in range(cone.size):
        ut, rt = float(np.linalg.norm(U[j, 1:])), float(np.linalg.norm(R[j, 1:]))
        if R[j, 0] <= scale:  # separated (grazing when the normal pair's other side is zero too)
            if U[j, 0] - (mu[j] * ut if cone.associated else 0.0) <= scale:
                flagged.append(f"{cone.name}[{j}] grazing")
            piece = 0
        elif ut <= scale and mu[j] > 0:  # sticking (stick/slip boundary: on the sticking piece)
            if rt >= mu[j] * R[j, 0] - scale:
                flagged.append(f"{cone.name}[{j}] stick/slip")
            piece = 1
        else:
            piece = 2
        aux = 0 if ut > scale else (1 if R[j, 0] > scale and mu[j] > 0 else 2)
        pieces.append((piece, aux))
    return tuple(pieces), flagged


def _cone_equations(cone: Any, pieces: tuple[tuple[int, int], ...]) -> list[ca.SX]:
    """The equations of the cone's contacts on ``pieces`` (:func:`_cone_pieces`; a held ``w`` is
    written ``w = 0``: only the equations' Jacobians are used)."""
    r, u = ca.horzcat(*cone.r), ca.horzcat(*cone.u)
    m = cone.dim - 1
    eqs: list[ca.SX] = []
    for j, (piece, aux) in enumerate(pieces):
        rn, un = r[j, 0], u[j, 0]
        rT, uT = r[j, 1:].T, u[j, 1:].T
        wj = ca.vertcat(*[cone.w.sym[i * cone.size + j] for i in range(m)])
        if piece == 0:
            eqs += [r[j, k] for k in range(cone.dim)]
        elif piece == 1:
            eqs += [u[j, k] for k in range(cone.dim)]
        else:  # sliding (u_T != 0), or a frictionless contact in contact
            moving = aux == 0
            eqs.append(un - cone.mu[j] * ca.norm_2(uT) if (cone.associated and moving) else un)
            slip = cone.mu[j] * rn * uT / ca.norm_2(uT) if moving else ca.DM.zeros(m, 1)
            eqs += [(rT + slip)[k] for k in range(m)]
        g = cone.gamma.sym[j]
        if aux == 0:
            eqs.append(g - ca.norm_2(uT))
            eqs += [(wj + uT / ca.norm_2(uT))[k] for k in range(m)]
        else:
            eqs.append(g)
            eqs += [(rT - cone.mu[j] * rn * wj)[k] for k in range(m)] if aux == 1 else [wj[k] for k in range(m)]
    return eqs


def program_sensitivity(prog: Program, x: ArrayLike, p: ArrayLike | None = None, *, side: str = "a",
                        tol: float = DEGENERATE_TOL, smoothing: float = 0.0,
                        outputs: Any = None) -> ProgramSensitivity:
    """The sensitivity ``dx/dp`` of the solution ``x`` of the complementarity Program ``prog``
    (no objective; equality rows, pairs, cones) at parameters ``p`` (default: their values), by
    implicit differentiation of the square system of the module docstring. ``side``: the side
    (``"a"`` or ``"b"``) held at zero in a degenerate pair. The Jacobian functions of each set of
    pieces are built once per Program and kept (a rollout meets few sets).

    ``smoothing = kappa > 0``: instead, the derivative of the smoothed problem (Dojo's relaxed
    gradient, Howell et al. 2022): every pair ``0 <= a _|_ b >= 0`` (the cones' normal and disk pairs
    included, their rows kept) relaxed to ``a b = kappa, a, b > 0``, the relaxed solution ``x_kappa``
    found by an interior Newton method started from ``x`` (:func:`smoothed_solution`), and
    ``dx_kappa / dp`` returned: defined everywhere (no piece, no flag), it sees a contact that is
    about to open or close, and it tends to the exact derivative on a piece as ``kappa -> 0``.
    ``kappa`` is in the units of the pairs' products (an impulse times a velocity for a velocity-level
    step). If the relaxed solve does not converge the result is flagged (``degenerate`` says so).

    ``outputs`` (an index or slice of ``x``, e.g. a step's ``v_{k+1}``): the flags are judged by
    the derivative of those entries only (:func:`_judge_on_outputs`: a degenerate pair whose two
    pieces give the same output derivative is listed in ``benign``, a singular system whose
    null space misses the outputs is not singular for them)."""
    if side not in ("a", "b"):
        raise InputError("side", f"must be 'a' or 'b', got {side!r}")
    if prog.has_objective:
        raise InputError("prog", "has an objective: its sensitivity needs its KKT conditions; write the step in "
                         "complementarity (KKT) form")
    xv = np.asarray(x, dtype=float).ravel()
    if xv.shape != (prog.n_x,) or not np.isfinite(xv).all():
        raise InputError("x", f"must be {prog.n_x} finite numbers, got shape {xv.shape}")
    pv = prog.p0 if p is None else np.asarray(p, dtype=float).ravel()
    kappa = check_number("smoothing", smoothing, nonnegative=True)
    if kappa > 0:
        z, res, fn = smoothed_solution(prog, xv, pv, kappa)
        _, Fz, Fp = (np.asarray(ca.DM(v), dtype=float) for v in fn(z, pv, kappa))
        flags = [] if res <= SMOOTHED_TOL else [f"smoothed solve did not converge (||F||_inf = {res:.2g})"]
        core = ImplicitSensitivity(Fz, lambda d: Fp @ d["p"], lambda lam: {"p": Fp.T @ lam}, np.arange(len(flags)), side)
        return ProgramSensitivity(z[:prog.n_x], flags, core, Fp, kappa)
    jac, degenerate, pieces = _piece_function(prog, xv, pv, side, tol)
    _, Fx, Fp = (np.asarray(ca.DM(v), dtype=float) for v in jac(xv, pv))

    def apply_B(d: dict[str, np.ndarray]) -> np.ndarray:
        return Fp @ d["p"]

    def apply_BT(lam: np.ndarray) -> dict[str, np.ndarray]:
        return {"p": Fp.T @ lam}

    core = ImplicitSensitivity(Fx, apply_B, apply_BT, np.arange(len(degenerate)), side)
    sens = ProgramSensitivity(xv, degenerate, core, Fp)
    if outputs is not None and (degenerate or core.singular):
        _judge_on_outputs(prog, xv, pv, sens, pieces, np.arange(prog.n_x)[outputs])
    return sens


def _judge_on_outputs(prog: Program, xv: np.ndarray, pv: np.ndarray, sens: ProgramSensitivity, pieces: tuple,
                      rows: np.ndarray) -> None:
    """Keep only the flags that matter for the derivative of the entries ``rows`` of ``x`` (a step's
    ``v_{k+1}``): a degenerate pair whose other piece gives the same ``d x[rows] / dp`` (the pair
    flipped alone, to 1e-9 relative) is moved to ``sens.benign`` -- the friction pairs of a pyramid
    contact that carries nothing, whose slip multiplier is free; a singular ``F_x`` whose null space
    does not reach ``rows`` (the multipliers are not unique, the outputs are: the minimum-norm
    derivative is exact for them) is not reported as singular."""
    take_a, cone_pairs, cone_pieces = pieces
    D = sens.dx_dp()[rows]
    size = max(1.0, float(np.abs(D).max(initial=0.0)))
    names = {f"{c.name}[{i}]": c.index.start + i for c in prog.complementarities for i in range(c.size)}
    for d in list(sens.degenerate):
        k = names.get(d)
        if k is None:  # a cone contact's flag
            continue
        flipped = take_a.copy()
        flipped[k] = not flipped[k]
        _, Fx2, Fp2 = (np.asarray(ca.DM(v), dtype=float)
                       for v in _pieces_function(prog, flipped, cone_pairs, cone_pieces)(xv, pv))
        D2 = -min_norm_solve(Fx2, Fp2)[rows]
        if float(np.abs(D2 - D).max(initial=0.0)) <= 1e-9 * size:
            sens.degenerate.remove(d)
            sens.benign.append(d)
    if sens.core.singular:
        _, sv, Vt = np.linalg.svd(sens.core.A)
        null = Vt[sv <= 1e-12 * max(float(sv[0]), 1e-300)]
        if float(np.abs(null[:, rows]).max(initial=0.0)) <= 1e-9:
            sens.core.singular = False


def _piece_function(prog: Program, xv: np.ndarray, pv: np.ndarray, side: str, tol: float
                    ) -> tuple[ca.Function, list[str], tuple]:
    """The pieces of ``prog``'s complementarity system at ``(x, p)`` (module docstring): the
    function ``(x, p) -> (F, F_x, F_p)`` of their square system (built once per set of pieces and
    kept on the Program), the flagged pairs and cone contacts, and the pieces
    ``(take_a, cone_pairs, cone_pieces)``."""
    cache = prog._cache.setdefault("sensitivity_functions", {})  # Program clears _cache when it changes
    cone_pairs = cache.get("cone_pairs")
    if cone_pairs is None:
        cone_pairs = cache["cone_pairs"] = np.zeros(prog.n_comp, dtype=bool)
        for cone in prog.cones:
            for c in (cone.normal, cone.disk):
                cone_pairs[c.index] = True
    ev = prog.evaluate(xv, pv)
    a, b = ev["a"], ev["b"]
    scale = tol * max(float(np.abs(a).max(initial=0.0)), float(np.abs(b).max(initial=0.0)), 1e-300)
    both = (a <= scale) & (b <= scale) & ~cone_pairs
    take_a = np.where(both, side == "a", a <= b)
    degenerate = [f"{c.name}[{i}]" for c in prog.complementarities for i in range(c.size) if both[c.index.start + i]]
    cone_pieces = []
    for cone in prog.cones:
        pieces, flagged = _cone_pieces(prog, cone, xv, pv, tol, cache)
        cone_pieces.append(pieces)
        degenerate += flagged
    return _pieces_function(prog, take_a, cone_pairs, cone_pieces), degenerate, (take_a, cone_pairs, cone_pieces)


def _pieces_function(prog: Program, take_a: np.ndarray, cone_pairs: np.ndarray,
                     cone_pieces: list[tuple[tuple[int, int], ...]]) -> ca.Function:
    """:func:`_jacobian_function` of these pieces, built once per Program and set of pieces."""
    cache = prog._cache.setdefault("sensitivity_functions", {})  # Program clears _cache when it changes
    key = (take_a[~cone_pairs].tobytes(), tuple(cone_pieces))
    if key not in cache:
        cache[key] = _jacobian_function(prog, take_a, cone_pairs, cone_pieces)
    return cache[key]


#: the residual ``||F_kappa||_inf`` at which the smoothed solve stops (relative to the start's scale)
SMOOTHED_TOL = 1e-10


def _smoothed_function(prog: Program) -> ca.Function:
    """``(z, p, kappa) -> (F, F_z, F_p)`` of the relaxed system in ``z = (x, s, t)``: the equality
    rows, ``s - a(x) = 0``, ``t - b(x) = 0``, ``s t - kappa = 0`` (built once per Program)."""
    cache = prog._cache.setdefault("sensitivity_functions", {})
    fn = cache.get("smoothed")
    if fn is None:
        rows = []
        for c in prog.constraints:
            for i in range(c.size):
                if c.lb[i] != c.ub[i]:
                    raise InputError("prog", f"row {c.name}[{i}] is an inequality ({c.lb[i]} <= g <= {c.ub[i]}); "
                                     "a step's sensitivity handles equality rows and pairs")
                rows.append(c.expr[i] - c.lb[i])
        a = ca.vertcat(*[c.a for c in prog.complementarities]) if prog.complementarities else ca.SX(0, 1)
        b = ca.vertcat(*[c.b for c in prog.complementarities]) if prog.complementarities else ca.SX(0, 1)
        m = a.shape[0]
        s_, t_, kappa = ca.SX.sym("s", m), ca.SX.sym("t", m), ca.SX.sym("kappa")
        z = ca.vertcat(prog.x, s_, t_)
        F = ca.vertcat(*rows, s_ - a, t_ - b, s_ * t_ - kappa)
        if F.shape[0] != z.shape[0]:
            raise InputError("prog", f"{prog.n_g} rows and {m} pairs for {prog.n_x} variables: not a square "
                             "complementarity system")
        fn = cache["smoothed"] = ca.Function("F_smoothed", [z, prog.p, kappa], [F, ca.jacobian(F, z), ca.jacobian(F, prog.p)])
    return fn


def smoothed_solution(prog: Program, x: np.ndarray, p: np.ndarray, kappa: float, *, max_iter: int = 60
                      ) -> tuple[np.ndarray, float, ca.Function]:
    """The solution ``z = (x, s, t)`` of the relaxed system ``F_kappa(z, p) = 0`` (equality rows,
    ``s = a(x)``, ``t = b(x)``, ``s t = kappa``, ``s, t > 0``) near the complementarity solution
    ``x``: Newton's method from ``x`` with ``s = a+ + kappa / (b+ + sqrt(kappa))`` and symmetrically
    for ``t`` (``a+ = max(a, 0)``; so ``s t ~ kappa``), steps cut to keep 1% of the distance to
    ``s, t = 0`` and halved until ``||F||`` decreases. Returns ``(z, ||F||_inf, the function)``."""
    fn = _smoothed_function(prog)
    ev = prog.evaluate(x, p)
    ap, bp = np.maximum(ev["a"], 0.0), np.maximum(ev["b"], 0.0)
    r = math.sqrt(kappa)
    z = np.concatenate([x, ap + kappa / (bp + r), bp + kappa / (ap + r)])
    n = x.size

    def resid(zz: np.ndarray) -> np.ndarray:
        return np.asarray(ca.DM(fn(zz, p, kappa)[0]), dtype=float).ravel()

    F = resid(z)
    scale = max(1.0, float(np.abs(F[:n]).max(initial=0.0)), float(np.abs(z).max(initial=0.0)))
    for _ in range(max_iter):
        res = float(np.abs(F).max(initial=0.0))
        if res <= SMOOTHED_TOL * scale:
            break
        Fz = np.asarray(ca.DM(fn(z, p, kappa)[1]), dtype=float)
        dz = -np.linalg.lstsq(Fz, F, rcond=None)[0]
        st, dst = z[n:], dz[n:]
        neg = dst < 0
        alpha = min(1.0, float(np.min(-0.99 * st[neg] / dst[neg], initial=1.0)))
        F_new = F
        while alpha > 1e-12:
            F_new = resid(z + alpha * dz)
            if np.linalg.norm(F_new) < np.linalg.norm(F):
                break
            alpha /= 2
        z, F = z + alpha * dz, F_new
    return z, float(np.abs(F).max(initial=0.0)) / scale, fn


def polish(prog: Program, x: ArrayLike, p: ArrayLike | None = None, *, side: str = "a",
           tol: float = DEGENERATE_TOL, max_iter: int = 10) -> tuple[np.ndarray, float, float]:
    """Newton's method on the square system of the pieces of ``x`` (module docstring; the pieces
    re-identified at every iterate), from an approximate solution ``x`` of the complementarity
    Program ``prog`` to one accurate to rounding: what a finite-difference reference of a
    sensitivity needs. Returns ``(x, ||F||_inf, pair_violation)``, the last the largest negative
    part of a pair's sides (nonzero: the pieces were misidentified, ``x`` is no solution)."""
    xv = np.asarray(x, dtype=float).ravel().copy()
    pv = prog.p0 if p is None else np.asarray(p, dtype=float).ravel()
    for it in range(max_iter + 1):  # max_iter Newton steps, the residual evaluated after each
        jac = _piece_function(prog, xv, pv, side, tol)[0]
        F, Fx, _ = (np.asarray(ca.DM(v), dtype=float) for v in jac(xv, pv))
        F = F.ravel()
        res = float(np.abs(F).max(initial=0.0))
        if it == max_iter or res <= 4 * np.finfo(float).eps * max(1.0, float(np.abs(xv).max(initial=0.0))):
            break
        xv = xv - np.linalg.lstsq(Fx, F, rcond=None)[0]
    ev = prog.evaluate(xv, pv)
    viol = max(0.0, -float(np.min(ev["a"], initial=0.0)), -float(np.min(ev["b"], initial=0.0)))
    return xv, res, viol


def _jacobian_function(prog: Program, take_a: np.ndarray, cone_pairs: np.ndarray,
                       cone_pieces: list[tuple[tuple[int, int], ...]]) -> ca.Function:
    """``(x, p) -> (F, F_x, F_p)`` of the square system on the given pieces (module docstring)."""
    cone_rows = np.zeros(prog.n_g, dtype=bool)
    for cone in prog.cones:
        for c in (cone.friction, cone.direction):
            cone_rows[c.index] = True
    eqs: list[ca.SX] = []
    for c in prog.constraints:
        for i in range(c.size):
            if cone_rows[c.index.start + i]:
                continue
            if c.lb[i] != c.ub[i]:
                raise InputError("prog", f"row {c.name}[{i}] is an inequality ({c.lb[i]} <= g <= {c.ub[i]}); "
                                 "a step's sensitivity handles equality rows and pairs")
            eqs.append(c.expr[i] - c.lb[i])
    for comp in prog.complementarities:
        for i in range(comp.size):
            k = comp.index.start + i
            if not cone_pairs[k]:
                eqs.append(comp.a[i] if take_a[k] else comp.b[i])
    for cone, pieces in zip(prog.cones, cone_pieces):
        eqs += _cone_equations(cone, pieces)
    F = ca.vertcat(*eqs)
    if F.shape[0] != prog.n_x:
        raise InputError("prog", f"its pieces give {F.shape[0]} equations for {prog.n_x} variables: not a square "
                         "complementarity system (a variable bound that is no pair side, or a missing row)")
    return ca.Function("F_jac", [prog.x, prog.p], [F, ca.jacobian(F, prog.x), ca.jacobian(F, prog.p)])


@dataclass
class StepJacobian:
    """``d(q_{k+1}, v_{k+1}) / d(q_k, v_k, u_k)`` of one time step (:func:`step_jacobian`).

    ``dq_dq`` is ``dq_{k+1}/dq_k`` (``n_q x n_q``), and so on for ``v`` and ``u``; ``dq_dparams``
    and ``dv_dparams`` hold, by name, the derivatives with respect to the model parameters asked for
    (``n_q x n_c`` and ``n_v x n_c``: one column per contact's value), ``dq_dh`` and ``dv_dh`` by the
    step length; ``degenerate``
    lists the flagged pairs and contacts (their piece is the documented one), ``singular`` says the
    step's solution is not locally unique (the minimum-norm derivative is given)."""

    dq_dq: np.ndarray
    dq_dv: np.ndarray
    dq_du: np.ndarray
    dv_dq: np.ndarray
    dv_dv: np.ndarray
    dv_du: np.ndarray
    degenerate: list[str]
    singular: bool
    dq_dparams: dict[str, np.ndarray] = field(default_factory=dict)
    dv_dparams: dict[str, np.ndarray] = field(default_factory=dict)
    dq_dh: np.ndarray | None = None  #: ``dq_{k+1} / dh`` (``n_q``)
    dv_dh: np.ndarray | None = None  #: ``dv_{k+1} / dh`` (``n_v``)
    #: the ``v_{k+1}`` the Jacobian was taken at: the relaxed step's (``relaxed=True``), else the step's own
    v_next: np.ndarray | None = None

    @property
    def flagged(self) -> bool:
        """True at a degenerate or singular step."""
        return bool(self.degenerate) or self.singular

    def state(self) -> np.ndarray:
        """``d(q, v)_{k+1} / d(q, v)_k`` as one ``(n_q + n_v)`` square matrix."""
        return np.block([[self.dq_dq, self.dq_dv], [self.dv_dq, self.dv_dv]])

    def input(self) -> np.ndarray:
        """``d(q, v)_{k+1} / du_k`` (``(n_q + n_v) x n_u``)."""
        return np.vstack([self.dq_du, self.dv_du])

    def param(self, name: str) -> np.ndarray:
        """``d(q, v)_{k+1} / d theta`` for the model parameter ``name`` (``(n_q + n_v) x n_c``)."""
        return np.vstack([self.dq_dparams[name], self.dv_dparams[name]])


def model_parameter_values(form: Formulation, system: ContactSystem, q: np.ndarray, names: Sequence[str],
                           field: str = "wrt") -> dict[str, np.ndarray]:
    """The values (one per contact) of the model parameters ``names`` in a step from ``q``
    (:meth:`Formulation.model_parameter_value`: the system's ``mu``, the compliant formulation's
    constant gains, or what a formulation of one's own declares); each must be one the formulation
    reads (:attr:`Formulation.model_parameters`). InputError naming ``field`` otherwise."""
    out = {}
    for name in names:
        if name not in form.model_parameters:
            raise InputError(field, f"formulation {form.name!r} does not read the model parameter {name!r} from "
                             f"Step.params (it reads: {', '.join(form.model_parameters) or 'none'})")
        out[name] = form.model_parameter_value(name, system, q, field)
    return out


def step_jacobian(formulation: str | Formulation, system: ContactSystem, h: float, q: ArrayLike, v: ArrayLike,
                  u: ArrayLike, outcome: StepOutcome, *, wrt: Sequence[str] = (), side: str = "a",
                  tol: float = DEGENERATE_TOL, smoothing: float = 0.0, relaxed: bool = False) -> StepJacobian:
    """The Jacobian of the time step from ``(q, v, u)`` whose solution is ``outcome`` (what
    :meth:`TimeStepping.step` returned for it, with the same ``formulation``, system and ``h``;
    before TimeStepping's renormalization of a 3D body's quaternion, which
    :func:`~contactmp.transcriptions.rollout_gradient.differentiable_rollout` chains on), for
    a formulation whose step is a complementarity Program (pyramid, cone, compliant, ...): the step's
    Program is built with the state as parameters, differentiated at ``outcome``'s solution
    (:func:`program_sensitivity`), and chained through ``q_{k+1} = q_k + h qdot(q_k, v_{k+1})``. A
    free-flight step (no contact in it) is differentiated in closed form. ``wrt`` names model
    parameters (:attr:`Formulation.model_parameters` of ``formulation``) to differentiate by as well, at their values in the step.
    ``smoothing = kappa > 0``: the derivative of the relaxed step (:func:`program_sensitivity`) over
    the step's contacts (those within TimeStepping's ``active_gap``). ``relaxed=True`` (with
    ``kappa > 0``): the Jacobian of the relaxed step itself, taken at its solution ``v_{k+1}(kappa)``
    (every pair ``a b = kappa``), which is returned in ``v_next``: the step of a smoothed model whose
    rollout (:func:`~contactmp.transcriptions.rollout_gradient.differentiable_rollout` with
    ``relaxed=True``) is a smooth function of the inputs, differentiated exactly.
    """
    s = system
    if relaxed and not smoothing > 0:
        raise InputError("relaxed", "needs smoothing = kappa > 0 (the relaxed step is the one of a b = kappa)")
    form = for_system(formulation, s, h) if not isinstance(formulation, Formulation) else formulation
    qv = s._vec("q", q, s.n_q)
    vv = s._vec("v", v, s.n_v)
    uv = s._vec("u", u, s.n_u)
    values = model_parameter_values(form, s, qv, list(wrt))
    if form.substeps_differentiable:  # the wrench-polytope steps (NMDP, linearized MDP)
        from contactmp.formulations.polytope_sensitivity import polytope_step_jacobian
        if relaxed:
            raise InputError("relaxed", f"{form.name}'s steps are solved in substeps: no relaxed step is defined for them")
        return polytope_step_jacobian(form, s, h, outcome, wrt=wrt, side=side, tol=tol, smoothing=smoothing)
    idx = np.flatnonzero(outcome.active)
    key = (s, idx.tobytes(), tuple(values))  # a system hashes by identity; h is a parameter
    cache = form.__dict__.setdefault("_sensitivity_programs", OrderedDict())
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = _step_program(form, s, idx, values)
        while len(cache) > form.PARAMETRIC_CACHE_SIZE:  # least recently used contact sets dropped
            cache.popitem(last=False)
    cache.move_to_end(key)
    prog, params, blk, free_flight, qdot_jac = hit
    for P, val in zip(params, (qv, vv, uv, *values.values(), float(h))):
        if P is not None:
            P.value = val
    n_state = s.n_q + s.n_v + s.n_u
    n_p = prog.n_p
    if free_flight is not None:  # no contact: v+ = v + h M^-1 f
        dv_dp = np.asarray(free_flight(prog.p0), dtype=float)
        v_next, degenerate, singular = outcome.v, [], False
    else:
        x = np.asarray(outcome.result.x, dtype=float).ravel()
        if x.size != prog.n_x:
            raise InputError("outcome", f"its result has {x.size} variables but the step's program {prog.n_x}: "
                             "not the outcome of this formulation's step")
        sens = program_sensitivity(prog, x, side=side, tol=tol, smoothing=smoothing, outputs=blk.v_next.index)
        dv_dp = sens.dx_dp()[blk.v_next.index]
        v_next, degenerate, singular = (sens.x if relaxed else x)[blk.v_next.index], sens.degenerate, sens.core.singular
    # q+ = q + h qdot(q, v+): dq+/dp = [I 0 0] + h (dqdot/dq [I 0 0] + dqdot/dv+ dv+/dp)
    jq, jv = (np.asarray(m, dtype=float) for m in qdot_jac(qv, v_next))
    eye_q = np.zeros((s.n_q, n_p))
    eye_q[:, :s.n_q] = np.eye(s.n_q)
    dq_dp = eye_q + h * (jq @ eye_q + jv @ dv_dp)
    dq_dp[:, -1] += s.eval_qdot(qv, v_next)  # the last parameter is h
    nq, nv = s.n_q, s.n_v
    cols = {name: slice(n_state + i * s.n_c, n_state + (i + 1) * s.n_c) for i, name in enumerate(values)}
    return StepJacobian(dq_dp[:, :nq], dq_dp[:, nq:nq + nv], dq_dp[:, nq + nv:n_state], dv_dp[:, :nq],
                        dv_dp[:, nq:nq + nv], dv_dp[:, nq + nv:n_state], degenerate, singular,
                        {k: dq_dp[:, c] for k, c in cols.items()}, {k: dv_dp[:, c] for k, c in cols.items()},
                        dq_dp[:, -1].copy(), dv_dp[:, -1].copy(), np.array(v_next, dtype=float))


def _step_program(form: Formulation, s: ContactSystem, idx: np.ndarray, values: dict[str, np.ndarray]
                  ) -> tuple[Program, list[Any], Any, ca.Function | None, ca.Function]:
    """The step Program of the contacts ``idx`` with the state ``(q, v, u)``, the model parameters
    ``values`` and the step length ``h`` (last) as parameters (built once per contact set, kept on the formulation), its
    parameter handles, its block (None in free flight), the free-flight ``dv+/dp`` function (None
    with contacts) and ``(q, v) -> (dqdot/dq, dqdot/dv)``."""
    fns = SystemFunctions.of(s)
    prog = Program("step_sensitivity")
    pq = prog.add_parameters("state/q", s.n_q, 0.0)
    pv = prog.add_parameters("state/v", s.n_v, 0.0)
    pu = prog.add_parameters("state/u", s.n_u, 0.0) if s.n_u else None
    theta = [prog.add_parameters(f"param/{name}", s.n_c, val) for name, val in values.items()]
    ph = prog.add_parameters("state/h", 1, 1.0)
    u_sym = ca.SX(0, 1) if pu is None else pu.sym
    blk, free_flight = None, None
    if idx.size == 0:
        M, f = fns.data(pq.sym, pv.sym, u_sym)[:2]
        v_next = pv.sym + ph.sym * ca.solve(M, f)
        free_flight = ca.Function("dv", [prog.p], [ca.jacobian(v_next, prog.p)])
    else:
        params = {name: P.sym for name, P in zip(values, theta)} or None
        blk = form.add_step(prog, Step(s, ph.sym, pq.sym, pv.sym, u_sym, "step", idx, params=params))
    qs, vs = ca.SX.sym("q", s.n_q), ca.SX.sym("v", s.n_v)
    qd = fns.qdot(qs, vs)
    qdot_jac = ca.Function("qdot_jac", [qs, vs], [ca.jacobian(qd, qs), ca.jacobian(qd, vs)])
    return prog, [pq, pv, pu, *theta, ph], blk, free_flight, qdot_jac
