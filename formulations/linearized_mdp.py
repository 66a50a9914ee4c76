"""The linearized maximal-dissipation step (a convex QP): the baseline of the NMDP notes.

Everything is frozen at ``q_n`` (the "NE-MDP" of Pan and Hauser): ``M = M(q_n)``,
``h_b = h_b(q_n, qd_n)``, the polytope columns ``W = W(q_n)`` (column ``(i, j)`` is
``s_i(q_n) J_i(q_n)^T b_j``, see :mod:`contactmp.formulations.nmdp`) and the step is linear in
the vertex weights ``w``:

    A qd+ = M qd_n + h (B tau_e - h_b) + h W w,         q_{n+1} = q_n + h qd+

Actuation, ``pd="stable"`` (default; the paper tracks with the stable PD controller in every
simulator): ``tau = -Kp (S q_n + h S qd+ - q_d) - Kd (S qd+ - qd_d) + tau_0`` is linear in ``qd+``,
so ``tau_e = -Kp (S q_n - q_d) + Kd qd_d + tau_0`` and ``A = M + h B D S`` with
``D = diag(h Kp + Kd)`` (symmetric positive definite; ``S = B^T``). ``pd="explicit"``: the notes'
formula ``qd* = qd_n + h M^-1 (tau - C)`` with ``tau`` evaluated at ``(q_n, qd_n)``, ``A = M``.

With ``qd* = A^-1 (M qd_n + h (B tau_e - h_b))`` and ``P = h A^-1 W`` (so ``qd+ = qd* + P w``),
the energy ``1/2 qd+^T A qd+`` (``objective="effective"``, default, as in
:class:`~contactmp.formulations.nmdp.NMDP`: its KKT conditions are maximal dissipation at the contact
velocities ``W^T qd+``) or the plain kinetic energy ``1/2 qd+^T M qd+`` (``objective="kinetic"``) is
the QP (``N`` the metric)

    minimize_w  1/2 w^T Q w + c^T w,   Q = P^T N P,  c = P^T N qd*,   w >= 0,  1^T w_i <= 1

(for ``pd="explicit"`` this is the notes' ``Q = Bt^T J M^-1 J^T Bt``, ``c = Bt^T J qd*`` with
``Bt = h B_i``). For a linear system with a constant polytope (a point mass) and ``pd="stable"``
it is exactly the NMDP step. The QP is solved by qpOASES (an exact active-set method) through
``casadi.conic``; the answer is verified by the natural-map residual
``||w - Proj_C(w - (Q w + c) / L)||_inf`` (``C`` the product of capped simplices,
``L = max |Q_ij|``), which needs no multipliers.

:func:`add_linearized_mdp_step` writes the same step (with or without the PD torque) as a Program
block in LCP form: for contact-implicit trajectory optimization (``tau = B u``) and for the step's
sensitivity (:mod:`contactmp.formulations.polytope_sensitivity`).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, OptionError, check_number
from contactmp.formulations.base import Step, register
from contactmp.formulations.contact_scale import DESIGN_DEPTH
from contactmp.formulations.nmdp import (OBJECTIVES, PolytopeFormulation, PolytopeOptions, PolytopeStep, block_inputs,
                                        mu_column, set_polytope, polytope_step_data, polytope_columns, polytope_forces)
from contactmp.validate import float_vector
from contactmp.models.symbolic import ContactSystem
from contactmp.program import Complementarity, Constraint, Program, Variables
from contactmp.result import Result, Status
from contactmp.solvers.pgm import project_W as project_capped_simplices  # the product of capped simplices
from contactmp.solvers.cone_qp import solve_qp

__all__ = ["LinearizedMDP", "LinearizedMDPBlock", "add_linearized_mdp_step",
           "project_capped_simplices"]

PD_MODES = ("stable", "explicit")
#: the QP backends a time step tries in turn until one's answer verifies: qpOASES (active set, exact
#: when it succeeds) first; OSQP and ProxQP where its factorization of the semidefinite Hessian fails
#: (a 10-box stack: 49 of 50 steps fail with qpOASES alone)
DEFAULT_QP_CHAIN: tuple[str, ...] = ("qpoases", "osqp", "proxqp")
#: CasADi QP plugins the time step refuses, and why
UNSUITED_QP_SOLVERS: dict[str, str] = {
    "highs": "HiGHS's QP solver did not return on the semidefinite QP of a cube's 8 contacts in 10 minutes",
}


def _mdp_backends() -> tuple[str, ...]:
    """The CasADi QP plugins a linearized-MDP step may use: those this build loads, less
    :data:`UNSUITED_QP_SOLVERS`."""
    from contactmp.solvers.cone_qp import available_qp_solvers

    return tuple(b for b in available_qp_solvers() if b not in UNSUITED_QP_SOLVERS)


class LinearizedMDP:
    """The linearized MDP QP of ``system`` (module docstring); the polytope and PD options are those
    of :class:`~contactmp.formulations.nmdp.NMDP` (``stiffness=None``: ``load / design_depth^2``,
    ``relax=None``: 0, :func:`~contactmp.formulations.nmdp.default_gains`); ``pd`` is ``"stable"`` or
    ``"explicit"``. A floating base (``qdot = G(q) v``) steps on its chart
    (:class:`~contactmp.formulations.nmdp.Chart`): ``q_{n+1} = R(q_n + h G(q_n) qd+)``, the PD's
    position error ``S_q q_n - q_d`` on the actuated coordinates' entries of ``q``."""

    #: the polytope is frozen at ``q_n`` (its declared penetration allows one step's lag,
    #: :func:`~contactmp.formulations.nmdp.polytope_tolerances`)
    frozen = True

    def __init__(self, system: ContactSystem, *, vertices: int | None = None, stiffness: ArrayLike | None = None,
                 relax: ArrayLike | None = None, radius: ArrayLike = 0.0, kp: ArrayLike = 0.0,
                 kd: ArrayLike = 0.0, pd: str = "stable", objective: str = "effective",
                 design_depth: float = DESIGN_DEPTH) -> None:
        set_polytope(self, system, vertices, stiffness, relax, radius, kp, kd, objective, design_depth)
        if pd not in PD_MODES:
            raise OptionError(f"pd must be one of {PD_MODES}, got {pd!r}")
        self.pd = pd
        q, v = system.q, system.v
        W, mags = polytope_columns(system, q, self.coeffs, self.stiffness, self.relax, self.radius)
        self._data = ca.Function("lmdp_data", [q, v], [system.M, system.h, W, mags])

    def parameters(self, q_n: ArrayLike, qd_n: ArrayLike, h: float, q_d: ArrayLike | None = None,
                   qd_d: ArrayLike | None = None, tau_0: ArrayLike | None = None) -> np.ndarray:
        """The step data ``p = (q_n, qd_n, h, q_d, qd_d, tau_0)`` after validation (as
        :meth:`NMDP.parameters`)."""
        return np.concatenate([np.atleast_1d(x) for x in polytope_step_data(self, q_n, qd_n, h, q_d, qd_d, tau_0)])

    def qp(self, q_n: ArrayLike, qd_n: ArrayLike, h: float, q_d: ArrayLike | None = None,
           qd_d: ArrayLike | None = None, tau_0: ArrayLike | None = None) -> dict[str, np.ndarray]:
        """The QP data of one step: ``Q``, ``c``, ``qd_star``, ``P`` (``qd+ = qd* + P w``), ``M``,
        ``magnitudes``. Defaults as in :meth:`NMDP.parameters`."""
        qn, qdn, hh, qd, qdd, t0 = polytope_step_data(self, q_n, qd_n, h, q_d, qd_d, tau_0)
        M, hb, W, mags = (x.full() for x in self._data(qn, qdn))
        hb, mags = hb.ravel(), mags.ravel()
        W = W.reshape(self.n, self.n_w)
        if self.pd == "stable":
            tau_e = -self.kp * (self.S_q @ qn - qd) + self.kd * qdd + t0
            A = M + hh * self.B @ np.diag(hh * self.kp + self.kd) @ self.S
        else:
            tau_e = -self.kp * (self.S_q @ qn - qd) - self.kd * (self.S @ qdn - qdd) + t0
            A = M
        A = 0.5 * (A + A.T)
        rhs = M @ qdn + hh * (self.B @ tau_e - hb)
        qd_star = np.linalg.solve(A, rhs)
        P = hh * np.linalg.solve(A, W)
        N = A if self.objective == "effective" else M
        Q = P.T @ N @ P
        Q = 0.5 * (Q + Q.T)
        return {"Q": Q, "c": P.T @ N @ qd_star, "qd_star": qd_star, "P": P, "M": M,
                "magnitudes": mags, "q_n": qn, "h": np.array(hh)}

    def step(self, q_n: ArrayLike, qd_n: ArrayLike, h: float, q_d: ArrayLike | None = None,
             qd_d: ArrayLike | None = None, tau_0: ArrayLike | None = None, *,
             tol: float = 1e-8, qp_solver: str | tuple[str, ...] = "qpoases") -> Result:
        """One step: solve the QP (``qp_solver``: a CasADi conic plugin of
        :data:`~contactmp.solvers.cone_qp.qp.QP_SOLVERS`, or a chain of them tried in turn until one's answer
        verifies, through :func:`contactmp.solvers.cone_qp.qp.solve_qp`), verify it, and return a
        :class:`~contactmp.result.Result` with ``x = q_{n+1}``; ``SOLVED`` only when the natural-map
        residual ``residual <= tol`` (checked here, independently of the backend; a chain returns the
        first verified answer, else the one of least residual, with ``extras["attempts"]``);
        ``extras``: ``qd_next``, ``w``, ``forces`` ``(n_c, 3)`` (contact-frame forces ``s_i(q_n)
        sum_j w_ij b_j`` [N]), ``kinetic_energy``, ``Q``, ``c``, ``kkt`` (the KKT residual with
        the backend's multipliers), ``lam_w``, ``lam_s``, ``pd``, ``backend_status``. Contacts whose
        polytope is ``{0}`` (``s_i(q_n) = 0``) get ``w_i = 0`` and leave the QP. Never raises on
        non-convergence."""
        tol = check_number("tol", tol, positive=True)
        chain = (qp_solver,) if isinstance(qp_solver, str) else tuple(qp_solver)
        d = self.qp(q_n, qd_n, h, q_d, qd_d, tau_0)
        best, attempts = None, []
        for backend in chain:
            r = self._solve_qp(d, backend, tol)
            attempts.append({"solver": backend, "status": r.status.value, "residual": r.residual})
            if best is None or r.residual < best.residual:
                best = r
            if r.status is Status.SOLVED:
                best = r
                break
        if len(chain) > 1:
            best.extras["attempts"] = attempts
        return best

    def _solve_qp(self, d: dict[str, np.ndarray], backend: str, tol: float) -> Result:
        """The QP of data ``d`` (:meth:`qp`) by one ``backend``, verified (see :meth:`step`)."""
        Q, c, mags = d["Q"], d["c"], d["magnitudes"]
        live = [i for i in range(self.system.n_c) if mags[i] > 0]
        idx = np.concatenate([self.groups[i] for i in live]) if live else np.zeros(0, dtype=int)
        w = np.zeros(self.n_w)
        lam_w, lam_s = np.zeros(self.n_w), np.zeros(self.system.n_c)
        t0 = time.perf_counter()
        iters, text = 0, "no active contact"
        if idx.size:
            V = self.vertices
            E = np.kron(np.eye(len(live)), np.ones((1, V)))
            semidef = {"hessian_type": "semidef", "enableRegularisation": True} if backend == "qpoases" else {}
            sol = solve_qp(backend, Q[np.ix_(idx, idx)], c[idx], 0.0, np.inf, E, -np.inf, 1.0, options=semidef)
            iters, text = sol.iterations, sol.status
            w[idx] = sol.x
            lam_w[idx] = -sol.lam_x   # casadi: L = f + lam_x^T x + lam_a^T (E w)
            lam_s[live] = sol.lam_a
        dt = time.perf_counter() - t0
        res = self.natural_residual(Q, c, w)
        kkt = float(np.max(np.abs(Q @ w + c - lam_w + np.kron(np.eye(self.system.n_c),
                                                                 np.ones((self.vertices, 1))) @ lam_s),
                           initial=0.0))
        finite = np.isfinite(w).all()
        status = Status.SOLVED if finite and res <= tol else (
            Status.NUMERICAL_ERROR if not finite else Status.NOT_SOLVED)
        qd_next = d["qd_star"] + d["P"] @ w
        q_next = self.configuration(d["q_n"], float(d["h"]) * qd_next)
        forces = polytope_forces(self.system, self.coeffs, mags, w)
        return Result(
            status=status, x=q_next, solver=backend, residual=res, tol=tol, iterations=iters, time_s=dt,
            message="" if status is Status.SOLVED else f"{backend}: {text}; natural residual {res:.3g}",
            residuals={"natural_map": res, "kkt": kkt},
            extras={"qd_next": qd_next, "w": w, "forces": forces,
                    "kinetic_energy": float(0.5 * qd_next @ d["M"] @ qd_next), "Q": Q, "c": c, "kkt": kkt,
                    "lam_w": lam_w, "lam_s": lam_s, "pd": self.pd, "backend_status": text})

    def configuration(self, q_n: np.ndarray, xi: np.ndarray) -> np.ndarray:
        """``q_{n+1} = q_n + xi`` (minimal coordinates) or ``R(q_n + G(q_n) xi)`` (the chart), ``xi = h qd+``."""
        return self.chart.retract(q_n, xi, self.system.eval_qdot)

    def natural_residual(self, Q: np.ndarray, c: np.ndarray, w: np.ndarray) -> float:
        """``||w - Proj_C(w - (Q w + c) / L)||_inf`` with ``L = max |Q_ij|`` (0 exactly at the
        minimizers of the convex QP)."""
        if not np.isfinite(w).all():
            return math.inf
        L = float(np.max(np.abs(Q), initial=0.0))
        L = L if L > 0 else 1.0
        with np.errstate(over="ignore", invalid="ignore"):  # an overflowed step: judged inf below
            r = w - project_capped_simplices(w - (Q @ w + c) / L, self.groups)
        return float(np.max(np.abs(r), initial=0.0)) if np.isfinite(r).all() else math.inf


# -- The step as a Program block (LCP form) ----------------------------------------------------
@dataclass
class LinearizedMDPBlock:
    """Handles of one linearized-MDP step (see :func:`add_linearized_mdp_step`)."""

    v_next: Variables  #: qd_{n+1}
    w: Variables  #: vertex weights (n_c V, contact-major)
    sigma: Variables  #: multipliers of 1^T w_i <= 1 divided by h (n_c), the largest vertex power
    dynamics: Constraint
    dissipation: Complementarity
    simplex: Complementarity
    q_next: ca.SX  #: q0 + h v_next
    groups: list[np.ndarray]
    coefficients: np.ndarray
    y: Variables | None = None  #: ``A^-1 M qd+`` (objective "kinetic" with a stable PD), else None
    metric: Constraint | None = None  #: ``A y - M qd+ = 0`` when ``y`` is used


def add_linearized_mdp_step(prog: Program, system: ContactSystem, q0: Any, v0: Any, u: Any, h: float,
                            *, vertices: int | None = None, stiffness: ArrayLike = 0.0,
                            relax: ArrayLike = 0.0, radius: ArrayLike = 0.0, kp: ArrayLike = 0.0,
                            kd: ArrayLike = 0.0, q_d: Any = None, qd_d: Any = None, pd: str = "stable",
                            objective: str = "effective", mu: Any = None,
                            prefix: str = "lmdp") -> LinearizedMDPBlock:
    """Add one linearized-MDP step (everything frozen at ``q0``; ``tau_e = B u`` without PD gains,
    else the PD torque of :class:`LinearizedMDP` with feedforward ``u``, ``pd`` and ``objective``
    as there) as the KKT system of its QP over ``(v+, w)``; the multiplier of the dynamics drops out:

        A v+ = M v0 + h (B tau_e - h_b(q0, v0)) + h W(q0) w            (dynamics)
        0 <= w      _|_  W(q0)^T y + E sigma  >= 0                      (maximal dissipation)
        0 <= sigma  _|_  1 - E^T w            >= 0                      (polytope)

    with ``A = M`` (no gains, or ``pd="explicit"``) or ``M + h B diag(h Kp + Kd) B^T``, and
    ``y = A^-1 N v+`` for the objective's metric ``N`` (``y = v+`` when ``N = A``; else a variable
    with the row ``A y - M v+ = 0``). ``W^T y`` is the power of each vertex direction; ``sigma`` is
    the largest power a contact can still dissipate. ``q_d`` (default ``S q0``), ``qd_d`` (default
    0) and ``mu`` (default the system's) may be SX. With numeric ``q0, v0, u`` the block is an LCP
    (``Program.to_lcp``).
    """
    n_u = system.n_u
    B, hh, coeffs, k_, r_, rad, args = block_inputs(prog, system, h, vertices, stiffness, relax, radius,
                                                     q0=q0, v0=v0, u=u,
                                                     q_d=np.zeros(n_u) if q_d is None else q_d,
                                                     qd_d=np.zeros(n_u) if qd_d is None else qd_d)
    if pd not in PD_MODES:
        raise InputError("pd", f"must be one of {PD_MODES}, got {pd!r}")
    if objective not in OBJECTIVES:
        raise InputError("objective", f"must be one of {', '.join(map(repr, OBJECTIVES))}, got {objective!r}")
    S = B.T
    if q_d is None:
        args["q_d"] = ca.mtimes(S, args["q0"])
    kp_, kd_ = float_vector(kp, n_u, "kp", nonnegative=True), float_vector(kd, n_u, "kd", nonnegative=True)
    V, n, n_c = coeffs.shape[0], system.n_v, system.n_c
    if mu is None:  # the system's mu as numbers (the transcription's graph as it always was)
        W, _ = polytope_columns(system, system.q, coeffs, k_, r_, rad)
        M, hb, Wq = ca.Function("lmdp_block_data", [system.q, system.v], [system.M, system.h, W])(args["q0"], args["v0"])
    else:
        mus = ca.SX.sym("mu", system.n_c)
        W, _ = polytope_columns(system, system.q, coeffs, k_, r_, rad, mu=mus)
        data = ca.Function("lmdp_block_data", [system.q, system.v, mus], [system.M, system.h, W])
        M, hb, Wq = data(args["q0"], args["v0"], mu_column(system, mu))
    q0e, v0e = args["q0"], args["v0"]
    gains = bool(np.any(kp_ > 0) or np.any(kd_ > 0))
    tau_e = args["u"]
    A = M
    if gains:
        tau_e = -kp_ * (ca.mtimes(S, q0e) - args["q_d"]) + kd_ * args["qd_d"] + args["u"]
        if pd == "stable":
            A = M + hh * ca.mtimes(ca.mtimes(B, ca.diag(hh * kp_ + kd_)), S)
        else:
            tau_e = tau_e - kd_ * ca.mtimes(S, v0e)
    n_w = n_c * V
    E = np.kron(np.eye(n_c), np.ones((V, 1)))
    blk = prefix
    v_next = prog.add_variables(f"{prefix}/v_next", n, block=blk)
    w = prog.add_variables(f"{prefix}/w", n_w, lb=0.0, block=blk)
    sigma = prog.add_variables(f"{prefix}/sigma", n_c, lb=0.0, block=blk)
    inertia = ca.mtimes(M, v_next.sym - v0e) if A is M else ca.mtimes(A, v_next.sym) - ca.mtimes(M, v0e)
    dyn = prog.add_constraint(inertia - hh * (ca.mtimes(B, tau_e) - hb) - hh * ca.mtimes(Wq, w.sym), 0.0, 0.0,
                              name=f"{prefix}/dynamics", block=blk)
    y_var, metric, y = None, None, v_next.sym
    if gains and pd == "stable" and objective == "kinetic":
        y_var = prog.add_variables(f"{prefix}/y", n, block=blk)
        metric = prog.add_constraint(ca.mtimes(A, y_var.sym) - ca.mtimes(M, v_next.sym), 0.0, 0.0,
                                     name=f"{prefix}/metric", block=blk)
        y = y_var.sym
    dis = prog.add_complementarity(w.sym, ca.mtimes(Wq.T, y) + ca.mtimes(E, sigma.sym),
                                   name=f"{prefix}/dissipation", block=blk)
    smp = prog.add_complementarity(sigma.sym, 1.0 - ca.mtimes(E.T, w.sym), name=f"{prefix}/simplex",
                                   block=blk)
    groups = [np.arange(i * V, (i + 1) * V) for i in range(n_c)]
    return LinearizedMDPBlock(v_next, w, sigma, dyn, dis, smp, q0e + hh * v_next.sym, groups,
                              coeffs, y_var, metric)


@register
class MDPFormulation(PolytopeFormulation):
    """The linearized maximal-dissipation QP of the same wrench polytopes, frozen at ``q_k``
    (:class:`LinearizedMDP`): in trajectory optimization its KKT/LCP conditions
    (:func:`add_linearized_mdp_step`), in time stepping one QP per frame (no adaptivity), solved by the
    backends of ``solver`` (default :data:`DEFAULT_QP_CHAIN`) until one's answer verifies; a QP that
    none solves is reported in the frame's status and the answer of least residual used anyway.

    Options: ``vertices``, ``stiffness``, ``relax``, ``radius``, ``design_depth``, ``impact_speed``,
    ``kp``, ``kd``, ``objective`` as for ``"nmdp"`` (``stiffness=None``: ``load / design_depth^2``,
    ``relax=None``: 0); ``pd``: ``"stable"`` (the PD torque implicit in ``qd+``) or ``"explicit"`` (the
    notes' baseline, evaluated at ``(q_n, qd_n)``)."""

    name = "mdp"
    problem_class = LinearizedMDP

    @dataclass(frozen=True)
    class Options(PolytopeOptions):
        """See the class docstring."""

        pd: str = "stable"

        def __post_init__(self) -> None:
            if self.pd not in PD_MODES:
                raise InputError("pd", f"must be one of {PD_MODES}, got {self.pd!r}")

    def _problem_options(self) -> dict[str, Any]:
        return {"pd": self.options.pd}

    def step_solvers(self) -> dict[str, Any]:
        """The default chain (:data:`DEFAULT_QP_CHAIN`), then every CasADi conic plugin this build
        loads that the step accepts, alone."""
        return {"+".join(DEFAULT_QP_CHAIN): None, **{name: name for name in _mdp_backends()}}

    def _method(self, solver: Any) -> str:
        """``qp-<pd>/<backend>[+<backend>...]``: ``solver`` is None (:data:`DEFAULT_QP_CHAIN`), a CasADi
        QP plugin or a tuple of them (a chain, tried in turn until one's answer verifies)."""
        chain = DEFAULT_QP_CHAIN if solver is None else (solver,) if isinstance(solver, str) else solver
        if not isinstance(chain, tuple) or not chain or any(b not in _mdp_backends() for b in chain):
            why = f" ({UNSUITED_QP_SOLVERS[solver]})" if isinstance(solver, str) and solver in UNSUITED_QP_SOLVERS else ""
            raise OptionError(f"solver for formulation 'mdp' must be None (the chain {DEFAULT_QP_CHAIN}), one of "
                              f"{_mdp_backends()} or a tuple of them, got {solver!r}{why}")
        return f"qp-{self.options.pd}/" + "+".join(chain)

    def _magnitudes(self, system: ContactSystem) -> Callable[[np.ndarray], Any]:
        data, zero = self.problem(system)._data, np.zeros(system.n_v)
        return lambda q: data(q, zero)[3]

    def add_step(self, prog: Program, step: Step) -> PolytopeStep:
        """The KKT/LCP conditions of the linearized MDP at ``q_k`` (:func:`add_linearized_mdp_step`)."""
        kkt = add_linearized_mdp_step(prog, step.system, step.q, step.v, step.u, step.h, prefix=step.prefix,
                                      mu=step.param("mu", None), **self._kkt_options(step.system))
        return self._block(prog, step, kkt, kkt.v_next, step.q)

    def _substep(self, system: ContactSystem, method: str, q: np.ndarray, qd: np.ndarray, t: float, hh: float,
                 w0: np.ndarray, targets: Any, tau_0: np.ndarray) -> dict[str, Any]:
        """One linearized-MDP QP of length ``hh`` from ``(q, qd)``."""
        q_d, qd_d = targets(t + hh)
        prob = self.problem(system)
        r = prob.step(q, qd, hh, q_d, qd_d, tau_0, qp_solver=tuple(method.partition("/")[2].split("+")))
        return {"status": r.status, "q": r.x, "qd": r.extras["qd_next"], "w": r.extras["w"],
                "forces": r.extras["forces"], "outer": r.iterations, "proj": 0, "message": r.message,
                "residual": r.residual,
                "p": prob.parameters(q, qd, hh, q_d, qd_d, tau_0), "hold": q_d is None}
