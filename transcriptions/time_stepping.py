"""Time-stepping simulation of a :class:`~contactmp.models.symbolic.ContactSystem`.

The velocity-level Stewart-Trinkle / Anitescu-Potra scheme, semi-implicit: with every quantity
evaluated at ``q_k`` (``M, h(q_k, v_k), B, Jn, Jt, Jo, phi``) one step of length ``h`` solves

    M (v+ - v_k) = h (B u_k - h(q_k, v_k)) + Jn^T p_n + Jt^T p_t + Jo^T p_o
    0 <= p_n  _|_  phi / h + Jn v+ >= 0                          (non-penetration, gap-stabilized)
    (p_t, p_o) from the friction law at the velocity level (maximal dissipation)

and then ``q_{k+1} = q_k + h qdot(q_k, v+)`` (the quaternion of a 3-D body is renormalized).
The impulses ``p`` are forces times ``h``. Two friction laws:

* ``"pyramid"``: the polygonal law of :func:`~contactmp.formulations.velocity_pyramid.
  add_velocity_pyramid_step`, one Program block per step, reduced with ``Program.to_lcp`` and
  solved by Lemke's method with the semismooth Newton method as fallback. For planar systems the
  out-of-plane tangent is zero, and an even number of facets gives the exact segment
  ``|p_t| <= mu p_n``.
* ``"cone"``: the Coulomb cone ``||(p_t, p_o)|| <= mu p_n`` as an fc3d problem
  ``r in K_mu, u = W r + q_c`` with the Delassus matrix ``W = J M^-1 J^T`` (``J`` stacked per contact
  in the order (n, t, o)) and ``q_c = J (v + h M^-1 f) + (phi / h, 0, 0)``; ``u`` is the velocity
  ``J v+`` plus the gap term. Planar systems have no ``o`` row; it is replaced by a decoupled
  dummy row with a positive diagonal in ``W`` and ``q_c = 0``, for which every fc3d solution has
  ``r_o = 0`` (sliding: ``r_o (1 + mu r_n w / ||u_T||) = 0``; sticking: ``u_o = w r_o = 0``), so the
  answer is the exact 2-D cone.

* ``"compliant"``: Drumwright's compliant contact with the true Coulomb cone
  (:class:`~contactmp.formulations.compliant_friction.CompliantFriction`): per contact a unilateral
  spring-damper normal row (``stiffness`` K, ``damping`` B) and damped tangential rows
  (``tangential_damping`` Bt, no stiffness), one convex cone QP per step, implicit in the contact
  state and semi-explicit in ``q, v`` (``v+ = v + h M^-1 (f + J^T lambda)``; the impulses are
  ``p = h lambda``). There is no ``phi / h`` gap stabilization: the penetration is the spring's.
  ``stiffness`` and ``damping`` may be callables ``gain(phi, q) -> (n_c,)`` of the gaps ``phi(q_k)``
  (all contacts) and the configuration ``q_k``: configuration-dependent K and B (e.g. Hertz contact,
  :func:`~contactmp.models.compliance.hertz_gains`). As in Drumwright's scheme they are evaluated once
  at the step's start and frozen over the step: the step is implicit in the constraint state
  (``phi1 = phi0 + h Jn v+`` enters the law linearly) but explicit in the gains. A contact whose
  gains give ``h K + B = 0`` (e.g. Hertz at zero depth) carries no force in that step.

* ``"nmdp"`` / ``"mdp"``: Pan and Hauser's maximal-dissipation steps with wrench polytopes
  (``polytope={"vertices", "stiffness", "relax", "radius"}``, see
  :class:`~contactmp.formulations.nmdp.NMDP`), run by
  :class:`~contactmp.transcriptions.nmdp_stepping.NMDPStepping`: ``"nmdp"`` is the backward-Euler
  NMDP (``solver``: ``"pgm"`` (default), ``"zopgm"``, ``"ipopt"``, ``"ipopt-cyipopt"``; failed steps
  are halved adaptively), ``"mdp"`` the linearized MDP QP frozen at ``q_k``. Here the input is the
  torque ``B u`` held over the step (no PD controller; gait tracking with the stable PD is
  NMDPStepping's own interface). Every contact is in every step (the polytope magnitude decides
  whether it pushes); the impulses are ``h`` times the step's mean forces. The solver's own check
  (``||G||``, feasibility, stationarity; the QP's natural-map residual) certifies ``solved``, so
  ``residual`` and ``dynamics_residual`` are not recomputed here (NaN).

Only contacts with ``phi <= active_gap`` enter a step's problem; the others get zero impulses.
A step never raises on non-convergence: its status is recorded, and :meth:`TimeStepping.simulate`
either continues with the best iterate or stops (``on_failure``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Union

import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, OptionError
from contactmp.formulations.velocity_pyramid import add_velocity_pyramid_step, pyramid_generators
from contactmp.models.symbolic import ContactSystem
from contactmp.program import Program
from contactmp.result import Result, Status
from contactmp.solvers.lcp import lcp_residual

__all__ = ["TimeStepping", "StepResult", "Trajectory", "FORMULATIONS"]

#: the contact formulations of a step
FORMULATIONS = ("pyramid", "cone", "compliant", "nmdp", "mdp")

#: Lemke first, then the globalized semismooth Newton method
_PYRAMID_FALLBACK: tuple[str, ...] = ("lemke", "newton")

Control = Union[ArrayLike, Callable[[float], ArrayLike], None]


@dataclass
class StepResult:
    """One step ``(q_k, v_k, u_k) -> (q_{k+1}, v_{k+1})`` and the impulses that produced it.

    ``p_n``, ``p_t``, ``p_o`` have length ``n_c`` (zero for contacts outside the problem);
    ``active`` marks the contacts that entered it. ``status`` / ``residual`` / ``solver`` come from
    the contact solver (``solved`` with residual 0 when no contact was active). ``dynamics_residual``
    is ``||M (v+ - v) - h f - J^T p||_inf`` and ``gap_rate`` is ``phi/h + Jn v+`` on active contacts.
    """

    q: np.ndarray
    v: np.ndarray
    p_n: np.ndarray
    p_t: np.ndarray
    p_o: np.ndarray
    active: np.ndarray
    status: Status
    residual: float
    solver: str
    dynamics_residual: float
    gap_rate: np.ndarray
    result: Result | None = None

    @property
    def success(self) -> bool:
        """True when the contact problem was solved (verified residual)."""
        return self.status is Status.SOLVED


@dataclass
class Trajectory:
    """A simulated trajectory: ``t`` (N+1), ``q`` (N+1, n_q), ``v`` (N+1, n_v), impulses ``p_n``,
    ``p_t``, ``p_o`` (N, n_c) per step, ``status`` (N), ``residual`` (N), ``dynamics_residual`` (N),
    ``solver`` (N). ``N`` is the number of steps actually taken (fewer than asked when the
    simulation stopped on a failed step, see ``stopped``)."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    p_n: np.ndarray
    p_t: np.ndarray
    p_o: np.ndarray
    status: list[Status]
    residual: np.ndarray
    dynamics_residual: np.ndarray
    solver: list[str]
    stopped: bool = False
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        """Number of steps taken."""
        return len(self.status)

    @property
    def solver_counts(self) -> dict[str, int]:
        """How many steps each contact solver name produced (``"free_flight"`` for contact-free steps)."""
        out: dict[str, int] = {}
        for name in self.solver:
            out[name] = out.get(name, 0) + 1
        return out

    @property
    def n_failed(self) -> int:
        """Number of steps whose contact problem was not solved."""
        return sum(s is not Status.SOLVED for s in self.status)


class TimeStepping:
    """Velocity-level time stepping of ``system`` with step ``h`` (see the module docstring).

    Parameters
    ----------
    system : ContactSystem
    h : float, the step length (s), > 0.
    formulation : ``"pyramid"`` (LCP), ``"cone"`` (fc3d), ``"compliant"`` (cone QP, needs the gains),
        ``"nmdp"`` or ``"mdp"`` (wrench polytopes, needs ``polytope``).
    facets : number of pyramid facets (>= 3; even for planar systems).
    solver : LCP solver name (pyramid; default: Lemke, then Newton), fc3d solver name (cone;
        default: the registry's auto order) or cone-QP backend (compliant: ``"ipopt"`` (default) or
        ``"superscs"``). Every step reports the solver that produced it (``StepResult.solver``,
        ``Trajectory.solver`` and ``Trajectory.solver_counts``).
    active_gap : contacts with ``phi <= active_gap`` enter a step (``math.inf``: all).
    tol : tolerance passed to the contact solver.
    on_failure : ``"continue"`` (keep the best iterate) or ``"stop"`` in :meth:`simulate`.
    stiffness, damping, tangential_damping : compliant gains K [N/m], B [N s/m], Bt [N s/m] per
        contact (scalars broadcast; ``h K + B > 0``, ``Bt > 0``); used by ``"compliant"`` only.
        ``stiffness`` and ``damping`` may also be callables ``gain(phi, q)`` returning a scalar or
        ``n_c`` values >= 0, evaluated at the start of every step and frozen over it.
    polytope : ``"nmdp"`` / ``"mdp"`` only: the wrench-polytope options ``vertices``, ``stiffness``
        [N/m^2], ``relax`` [N], ``radius`` [m] of :class:`~contactmp.formulations.nmdp.NMDP`.
    """

    def __init__(self, system: ContactSystem, h: float, formulation: str = "pyramid",
                 facets: int = 4, solver: str | None = None, *, active_gap: float = 0.1,
                 tol: float = 1e-10, on_failure: str = "continue",
                 stiffness: ArrayLike | Callable[[np.ndarray, np.ndarray], ArrayLike] | None = None,
                 damping: ArrayLike | Callable[[np.ndarray, np.ndarray], ArrayLike] = 0.0,
                 tangential_damping: ArrayLike | None = None,
                 polytope: dict[str, Any] | None = None) -> None:
        if not isinstance(system, ContactSystem):
            raise InputError("system", f"must be a ContactSystem, got {type(system).__name__}")
        if not (isinstance(h, (int, float)) and not isinstance(h, bool) and math.isfinite(h) and h > 0):
            raise InputError("h", f"must be a positive finite step, got {h!r}")
        if formulation not in FORMULATIONS:
            raise OptionError(f"formulation must be one of {', '.join(map(repr, FORMULATIONS))}, got {formulation!r}")
        self._polytope_stepper = None
        if formulation in ("nmdp", "mdp"):
            from contactmp.transcriptions.nmdp_stepping import METHODS, NMDPStepping

            method = "mdp" if formulation == "mdp" else (solver or "pgm")
            if formulation == "nmdp" and (method not in METHODS or METHODS[method][0] == "mdp"):
                raise OptionError(f"solver for formulation='nmdp' must be one of "
                                  f"{[m for m, k in METHODS.items() if k[0] != 'mdp']}, got {solver!r}")
            opts = dict(polytope or {})
            unknown = set(opts) - {"vertices", "stiffness", "relax", "radius"}
            if unknown:
                raise InputError("polytope", f"unknown keys {sorted(unknown)} (allowed: vertices, stiffness, "
                                             "relax, radius)")
            self._polytope_stepper = NMDPStepping(system, float(h), method, **opts)
        elif polytope is not None:
            raise InputError("polytope", "is used by formulation='nmdp' or 'mdp' only")
        self.stiffness = self.damping = self.tangential_damping = None
        if formulation == "compliant":
            from contactmp.formulations.velocity_compliant import compliant_gains, gain_array

            if callable(stiffness) or callable(damping):  # configuration-dependent: checked per step
                self.stiffness, self.damping = (val if callable(val) else gain_array(name, val, system.n_c)
                                                for name, val in (("stiffness", stiffness), ("damping", damping)))
                self.tangential_damping = gain_array("tangential_damping", tangential_damping, system.n_c)
                if (self.tangential_damping <= 0).any():
                    raise InputError("tangential_damping", "must be > 0")
            else:
                self.stiffness, self.damping, self.tangential_damping = compliant_gains(
                    stiffness, damping, tangential_damping, system.n_c, float(h))
        if formulation == "compliant" and solver is not None:
            from contactmp.formulations.compliant_friction import CONE_SOLVERS
            if solver not in CONE_SOLVERS:
                raise OptionError(f"solver for formulation='compliant' must be one of {CONE_SOLVERS}, got {solver!r}")
        if on_failure not in ("continue", "stop"):
            raise OptionError(f"on_failure must be 'continue' or 'stop', got {on_failure!r}")
        if formulation == "pyramid":
            pyramid_generators(facets)  # validates facets
            if system.planar and facets % 2:
                raise InputError("facets", "must be even for a planar system (an odd polygon is not "
                                           "symmetric along the single tangent)")
        try:
            self.active_gap = float(active_gap)
        except (TypeError, ValueError) as exc:
            raise InputError("active_gap", f"must be a number, got {active_gap!r}") from exc
        if not (isinstance(tol, (int, float)) and tol > 0):
            raise InputError("tol", f"must be > 0, got {tol!r}")
        self.system, self.h, self.formulation = system, float(h), formulation
        self.facets, self.solver, self.tol, self.on_failure = int(facets), solver, float(tol), on_failure
        # quaternion block of q to renormalize after each step (box_3d convention q[3:7])
        self._quat = slice(3, 7) if (system.n_q == 7 and system.n_v == 6) else None

    # --------------------------------------------------------------------------- one step
    def step(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> StepResult:
        """One step from ``(q_k, v_k)`` under input ``u_k`` (zeros when None)."""
        sys_ = self.system
        q = sys_._vec("q", q, sys_.n_q)
        v = sys_._vec("v", v, sys_.n_v)
        u = np.zeros(sys_.n_u) if u is None else sys_._vec("u", u, sys_.n_u)
        if self._polytope_stepper is not None:
            return self._polytope_step(q, v, u)
        hs = self.h
        M = sys_.eval_M(q)
        f = sys_.eval_B(q) @ u - sys_.eval_h(q, v)
        phi = sys_.eval_phi(q)
        Jn, Jt, Jo = sys_.eval_J(q)
        nc = sys_.n_c
        active = phi <= self.active_gap
        idx = np.flatnonzero(active)
        p_n, p_t, p_o = np.zeros(nc), np.zeros(nc), np.zeros(nc)
        result: Result | None = None
        if idx.size == 0:
            v_next = v + np.linalg.solve(M, hs * f)
            status, residual, solver = Status.SOLVED, 0.0, "free_flight"
        elif self.formulation == "pyramid":
            v_next, pn, pt, po, result = self._pyramid(M, f, v, Jn[idx], Jt[idx], Jo[idx],
                                                       sys_.mu[idx], phi[idx])
            p_n[idx], p_t[idx], p_o[idx] = pn, pt, po
            status, residual, solver = result.status, result.residual, result.solver
        elif self.formulation == "compliant":
            K, B = self.gains(phi, q)
            idx = idx[hs * K[idx] + B[idx] > 0]  # h K + B = 0: the contact carries no force this step
            if idx.size == 0:
                v_next = v + np.linalg.solve(M, hs * f)
                status, residual, solver = Status.SOLVED, 0.0, "free_flight"
            else:
                v_next, pn, pt, po, result = self._compliant(M, f, v, Jn[idx], Jt[idx], Jo[idx],
                                                             sys_.mu[idx], phi[idx], idx, K[idx], B[idx])
                p_n[idx], p_t[idx], p_o[idx] = pn, pt, po
                status, residual, solver = result.status, result.residual, result.solver
                result.extras.update(K=K[idx], B=B[idx])
        else:
            v_next, pn, pt, po, result = self._cone(M, f, v, Jn[idx], Jt[idx], Jo[idx],
                                                    sys_.mu[idx], phi[idx])
            p_n[idx], p_t[idx], p_o[idx] = pn, pt, po
            status, residual, solver = result.status, result.residual, result.solver
        dyn = M @ (v_next - v) - hs * f - Jn.T @ p_n - Jt.T @ p_t - Jo.T @ p_o
        q_next = q + hs * sys_.eval_qdot(q, v_next)
        if self._quat is not None:
            nrm = np.linalg.norm(q_next[self._quat])
            if nrm > 0:
                q_next[self._quat] /= nrm
        return StepResult(q=q_next, v=v_next, p_n=p_n, p_t=p_t, p_o=p_o, active=active,
                          status=status, residual=float(residual), solver=solver,
                          dynamics_residual=float(np.max(np.abs(dyn), initial=0.0)),
                          gap_rate=phi[idx] / hs + Jn[idx] @ v_next, result=result)

    def _polytope_step(self, q: np.ndarray, v: np.ndarray, u: np.ndarray) -> StepResult:
        """One ``"nmdp"`` / ``"mdp"`` step through NMDPStepping with the torque ``B u`` (no PD)."""
        n_u, nc = self.system.n_u, self.system.n_c
        zero = (np.zeros(n_u), np.zeros(n_u))
        rec = self._polytope_stepper.step(q, v, 0.0, lambda _t: zero, tau_0=u)
        imp = self.h * np.asarray(rec.forces, dtype=float)
        nan = float("nan")
        solver = f"{self.formulation}/{self._polytope_stepper.method}"
        res = Result(status=rec.status, x=rec.w, solver=solver, residual=nan, tol=self.tol,
                     iterations=int(rec.outer_iterations), time_s=rec.time_s, message=rec.message,
                     extras={"substeps": rec.substeps, "h_smallest": rec.h_smallest,
                             "projections": rec.projections, "forces": rec.forces})
        return StepResult(q=rec.q, v=rec.qd, p_n=imp[:, 0], p_t=imp[:, 1], p_o=imp[:, 2],
                          active=np.ones(nc, dtype=bool), status=rec.status, residual=nan, solver=solver,
                          dynamics_residual=nan, gap_rate=np.full(nc, nan), result=res)

    def _pyramid(self, M: np.ndarray, f: np.ndarray, v: np.ndarray, Jn: np.ndarray, Jt: np.ndarray,
                 Jo: np.ndarray, mu: np.ndarray, phi: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Result]:
        """The pyramid step as a Program block -> ``to_lcp`` -> LCP solver -> ``invert``."""
        prog = Program("time_step")
        blk = add_velocity_pyramid_step(prog, M=M, f=f, v=v, Jn=Jn, Jt=Jt, Jo=Jo, mu=mu, phi=phi,
                                        h=self.h, facets=self.facets, prefix="step")
        red = prog.to_lcp()
        res = self._solve_lcp(red.M, red.q)
        x = red.invert(res.x)
        v_next = prog.value(blk.v_next, x)
        p_n = prog.value(blk.p_n, x)
        pto = blk.friction_impulse(prog.value(blk.beta, x))
        return v_next, p_n, pto[:, 0], pto[:, 1], res

    def _solve_lcp(self, A: np.ndarray, b: np.ndarray) -> Result:
        from contactmp.solvers.registry import lcp_solver

        names = (self.solver,) if self.solver else _PYRAMID_FALLBACK
        tried: list[Result] = []
        for name in names:
            try:
                tried.append(lcp_solver(name)(A, b, tol=self.tol))
            except (InputError, np.linalg.LinAlgError) as exc:  # pragma: no cover - defensive
                tried.append(Result(status=Status.NUMERICAL_ERROR, x=np.zeros(b.size), solver=name,
                                    residual=math.inf, tol=self.tol, message=str(exc)))
            if tried[-1].success:
                break
        best = min(tried, key=lambda r: r.residual)
        if best.x is None or np.asarray(best.x).size != b.size:
            best = best.replace(x=np.zeros(b.size), residual=lcp_residual(A, b, np.zeros(b.size)))
        return best

    def _cone(self, M: np.ndarray, f: np.ndarray, v: np.ndarray, Jn: np.ndarray, Jt: np.ndarray,
              Jo: np.ndarray, mu: np.ndarray, phi: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Result]:
        """The Coulomb-cone step as fc3d(W, q_c, mu) (see the module docstring)."""
        from contactmp.solvers.registry import solve_fc3d

        nc, nv = Jn.shape
        J = np.empty((3 * nc, nv))
        J[0::3], J[1::3], J[2::3] = Jn, Jt, Jo
        Minv_JT = np.linalg.solve(M, J.T)
        W = J @ Minv_JT
        W = 0.5 * (W + W.T)
        v_free = v + np.linalg.solve(M, self.h * f)
        qc = J @ v_free
        qc[0::3] += phi / self.h
        if self.system.planar:  # decoupled dummy o rows (r_o = 0 at every solution)
            w_dummy = max(float(np.max(np.diag(W)[1::3], initial=0.0)), 1e-12)
            W[2::3, :] = 0.0
            W[:, 2::3] = 0.0
            W[2::3, 2::3] = w_dummy * np.eye(nc)
            qc[2::3] = 0.0
        opts: dict[str, Any] = {"tol": self.tol}
        if self.solver is None:  # Newton first: no Gauss-Seidel squeezing friction at rest
            opts["quick"] = False
        res = solve_fc3d(W, qc, mu, solver=self.solver, **opts)
        r = np.asarray(res.x, dtype=float).ravel() if res.x is not None else np.zeros(3 * nc)
        if self.system.planar:
            r = r.copy()
            r[2::3] = 0.0
        v_next = v_free + Minv_JT @ r
        return v_next, r[0::3], r[1::3], r[2::3], res

    def gains(self, phi: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The compliant gains ``(K, B)`` (each ``n_c``) of a step starting at ``q`` with gaps ``phi``:
        the constants given, or the callables evaluated at ``(phi, q)`` and checked (finite, >= 0)."""
        nc = self.system.n_c
        out = []
        for name, g in (("stiffness", self.stiffness), ("damping", self.damping)):
            if g is None:
                raise OptionError("gains are defined for formulation='compliant' only")
            if callable(g):
                val = np.asarray(g(np.array(phi, dtype=float), np.array(q, dtype=float)), dtype=float)
                if val.ndim == 0:
                    val = np.full(nc, float(val))
                val = val.ravel()
                if val.shape != (nc,) or not np.isfinite(val).all() or (val < 0).any():
                    raise InputError(name, f"callable must return a scalar or {nc} finite values >= 0, "
                                           f"got {val!r}")
                out.append(val)
            else:
                out.append(g)
        return out[0], out[1]

    def _compliant(self, M: np.ndarray, f: np.ndarray, v: np.ndarray, Jn: np.ndarray, Jt: np.ndarray,
                   Jo: np.ndarray, mu: np.ndarray, phi: np.ndarray, idx: np.ndarray, K: np.ndarray,
                   B: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Result]:
        """The compliant cone QP of this step; impulses ``p = h lambda``."""
        from contactmp.formulations.compliant_friction import CompliantFriction

        planar = self.system.planar
        prob = CompliantFriction(M, f, v, Jn, Jt, None if planar else Jo, phi, mu, K, B,
                                 self.tangential_damping[idx], self.h)
        r = prob.solve(self.solver or "ipopt", tol=self.tol)
        d = prob.d
        lam = r.x
        p_o = np.zeros(idx.size) if planar else self.h * lam[2::d]
        res = Result(status=r.status, x=lam, solver=r.solver, residual=r.residual, tol=r.tol,
                     iterations=r.iterations, time_s=r.time_s, message=r.message,
                     extras={"lam": lam, "modes": r.extras.get("modes"), "kkt": r.residuals})
        return r.extras["v1"], self.h * lam[0::d], self.h * lam[1::d], p_o, res

    # -------------------------------------------------------------------------- trajectories
    def simulate(self, q0: ArrayLike, v0: ArrayLike, u: Control = None, n_steps: int = 100
                 ) -> Trajectory:
        """Run ``n_steps`` steps from ``(q0, v0)``. ``u`` is None (zero input), one input vector
        (held constant), an array ``(n_steps, n_u)``, or a callable ``u(t_k)``."""
        sys_ = self.system
        if not isinstance(n_steps, (int, np.integer)) or isinstance(n_steps, bool) or n_steps < 0:
            raise InputError("n_steps", f"must be an integer >= 0, got {n_steps!r}")
        u_of = self._control(u, int(n_steps))
        q = sys_._vec("q0", q0, sys_.n_q)
        v = sys_._vec("v0", v0, sys_.n_v)
        qs, vs = [q], [v]
        pn, pt, po, st, rs, dr, sv = [], [], [], [], [], [], []
        stopped = False
        for k in range(int(n_steps)):
            s = self.step(q, v, u_of(k))
            q, v = s.q, s.v
            qs.append(q), vs.append(v), pn.append(s.p_n), pt.append(s.p_t), po.append(s.p_o)
            st.append(s.status), rs.append(s.residual), dr.append(s.dynamics_residual)
            sv.append(s.solver)
            if not s.success and self.on_failure == "stop":
                stopped = True
                break
        n = len(st)
        z = np.zeros((0, sys_.n_c))
        return Trajectory(t=self.h * np.arange(n + 1), q=np.array(qs), v=np.array(vs),
                          p_n=np.array(pn) if n else z, p_t=np.array(pt) if n else z,
                          p_o=np.array(po) if n else z, status=st, residual=np.array(rs),
                          dynamics_residual=np.array(dr), solver=sv, stopped=stopped,
                          extras={"h": self.h, "formulation": self.formulation,
                                  "facets": self.facets, "active_gap": self.active_gap})

    def _control(self, u: Control, n_steps: int) -> Callable[[int], np.ndarray]:
        nu = self.system.n_u
        if u is None:
            zero = np.zeros(nu)
            return lambda k: zero
        if callable(u):
            return lambda k: self.system._vec("u", u(k * self.h), nu)
        arr = np.asarray(u, dtype=float)
        if arr.shape in ((nu,), (nu, 1)):
            arr = arr.reshape(nu)
            if not np.isfinite(arr).all():
                raise InputError("u", "must be finite")
            return lambda k: arr
        if arr.ndim == 2 and arr.shape[1] == nu and arr.shape[0] >= n_steps:
            if not np.isfinite(arr).all():
                raise InputError("u", "must be finite")
            return lambda k: arr[k]
        raise InputError("u", f"expected None, a callable, shape ({nu},) or ({n_steps}, {nu}); "
                              f"got {arr.shape}")
