"""Time-stepping simulation of a :class:`~contactmp.models.symbolic.ContactSystem`.

Each step hands the state ``(q_k, v_k)``, the input ``u_k`` (and, for formulations with a stable
PD controller, the PD targets) to the contact formulation's
:meth:`~contactmp.formulations.base.Formulation.advance`. The formulations of the registry
(:mod:`contactmp.formulations.base`):

* ``"pyramid"``, ``"cone"``, ``"compliant"``: the velocity-level Stewart-Trinkle / Anitescu-Potra
  scheme, semi-implicit: with ``M, h(q_k, v_k), B, Jn, Jt, Jo, phi`` at ``q_k`` one step of length
  ``h`` solves

      M (v+ - v_k) = h (B u_k - h(q_k, v_k)) + Jn^T p_n + Jt^T p_t + Jo^T p_o

  with the formulation's contact law (the k-facet pyramid, an LCP; Coulomb's cone, an fc3d
  problem; Drumwright's compliant cone, a convex cone QP), then ``q_{k+1} = q_k + h qdot(q_k,
  v+)`` (the quaternion of a 3-D body is renormalized). The step's block is the one
  :class:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO` stacks, reduced by the
  solver front door (:func:`contactmp.solvers.front.solve`). The impulses ``p`` are forces times
  ``h``. Only contacts with ``phi <= active_gap`` enter a step; the others get zero impulses.
* ``"nmdp"``, ``"mdp"``: Pan and Hauser's maximal-dissipation steps with wrench polytopes, with
  their own discretization (backward Euler with adaptive step halving; the linearized QP), the
  stable-PD targets ``targets(t) -> (q_d, qd_d)`` and every contact in every step.

A stable PD controller (``pd_gains=(Kp, Kd)``, targets ``targets(t) -> (q_d, qd_d)`` at the step's end, the
current pose held when None) is the same discrete law for every formulation: the torque
``Kp (q_d - q_{k+1}) + Kd (qd_d - v+)`` on the actuated coordinates ``S_q q`` (``B`` a 0/1
selection of ``v``; ``S_q`` picks the entry of ``q`` whose rate is each actuated entry of ``v``:
``B^T q`` when ``qdot = v``, a floating base's joint angles, see
:class:`~contactmp.formulations.nmdp.Chart`), with ``S_q q_{k+1} = S_q q_k + h B^T v+``.
The polytope formulations take it as their ``kp``,
``kd``; the velocity-level ones as ``M + h B diag(h Kp + Kd) B^T`` in the step
(:attr:`~contactmp.formulations.base.Step.pd_gains`) and ``Kp (q_d - q_k) + Kd qd_d - (h Kp + Kd)
B^T v_k`` added to ``u_k``.

A step never raises on non-convergence: its status is recorded, and :meth:`TimeStepping.simulate`
either continues with the best iterate or stops (``on_failure``). The input of a run may be a
feedback policy ``u_k = policy(t_k, q_k, v_k)``, and the PD targets ``targets(t, q, v)``
(:meth:`TimeStepping.simulate`). :meth:`TimeStepping.step_program` gives the Program one step solves
(its LCP, fc3d problem or NLP through the Program's reductions)::

    ts = TimeStepping(system, 0.01, "pyramid")
    traj = ts.simulate(q0, v0, u=lambda t, q, v: K @ (q_ref - q), n_steps=100)
    lcp = ts.step_program(traj.q[10], traj.v[10]).to_lcp()

Every step is judged by the physics verdict (:func:`~contactmp.transcriptions.physics_check.judge_step`)
against the formulation's own tolerances
(:meth:`~contactmp.formulations.base.Formulation.physics_tolerances`): penetration, force at a gap,
Coulomb's cone, the sign of the normal impulse and the contacts' work since the run began. A step
whose program was solved but whose physics fails has status
:attr:`~contactmp.result.Status.UNPHYSICAL`; ``result.extras["physics"]`` holds the verdict of every
step (:meth:`~contactmp.transcriptions.physics_check.StepVerdict.to_dict`), and
:meth:`TimeStepping.simulate` warns once per run (:class:`PhysicsWarning`). A step's
``result.time_s`` is its whole wall time (the step's data, its program's build and reduction, the
solve, the verdict); the solver's own share is ``result.extras["solve_s"]``.
"""
from __future__ import annotations

import dataclasses
import inspect
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Union

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, OptionError, check_spd
from contactmp.formulations.base import Formulation, PhysicsTolerances, Step, StepOutcome, Targets, for_system
from contactmp.models.symbolic import ContactSystem
from contactmp.program import Program
from contactmp.result import Result, Status
from contactmp.transcriptions.physics_check import StepVerdict, judge_step

__all__ = ["TimeStepping", "Trajectory", "PhysicsWarning"]


class PhysicsWarning(UserWarning):
    """A simulated step whose physics verdict failed (a solved step then has status
    :attr:`~contactmp.result.Status.UNPHYSICAL`; a step not solved keeps its status, and its verdict
    still counts in :attr:`Trajectory.violations`): issued once per :meth:`TimeStepping.simulate` run."""

#: the input of :meth:`TimeStepping.simulate`: None, a vector, an array of one row per step, a
#: function of time ``u(t)`` or a feedback policy ``policy(t, q, v)``
Control = Union[ArrayLike, Callable[[float], ArrayLike], Callable[[float, np.ndarray, np.ndarray], ArrayLike], None]
#: PD targets of :meth:`TimeStepping.step` / :meth:`TimeStepping.simulate`: ``targets(t) -> (q_d,
#: qd_d)`` or, as feedback, ``targets(t, q, v) -> (q_d, qd_d)`` (the state at the step's start)
TargetsPolicy = Union[Targets, Callable[[float, np.ndarray, np.ndarray], tuple[Any, Any]]]


@dataclass
class Trajectory:
    """A simulated trajectory: ``t`` (N+1), ``q`` (N+1, n_q), ``v`` (N+1, n_v), the contact impulses
    ``impulses`` (N, n_c, 3; contact frame ``(n, t, o)``, forces times ``h``) and one
    :class:`~contactmp.result.Result` per step (``results``: the step's solve, with its status,
    residual, solver, iterations and time). ``N`` is the number of steps taken (fewer than asked
    when the run stopped: ``stopped`` says why, empty when it ran to the end)."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    impulses: np.ndarray
    results: list[Result]
    h: float
    stopped: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        """Number of steps taken."""
        return len(self.results)

    @property
    def p_n(self) -> np.ndarray:
        """Normal impulses (N, n_c)."""
        return self.impulses[:, :, 0]

    @property
    def p_t(self) -> np.ndarray:
        """Friction impulses along ``t`` (N, n_c)."""
        return self.impulses[:, :, 1]

    @property
    def p_o(self) -> np.ndarray:
        """Friction impulses along ``o`` (N, n_c)."""
        return self.impulses[:, :, 2]

    @property
    def forces(self) -> np.ndarray:
        """Mean contact forces of each step ``impulses / h`` (N, n_c, 3) [N]."""
        return self.impulses / self.h

    @property
    def status(self) -> list[Status]:
        """Each step's status."""
        return [r.status for r in self.results]

    @property
    def residual(self) -> np.ndarray:
        """Each step's verified residual (N)."""
        return np.array([r.residual for r in self.results], dtype=float)

    @property
    def dynamics_residual(self) -> np.ndarray:
        """Each step's ``||M (v+ - v) - h f - J^T p||_inf`` (N; NaN where the formulation's own
        discretization has no such row)."""
        return self.extra("dynamics")

    @property
    def solver(self) -> list[str]:
        """The solver of each step (``"free_flight"`` for contact-free steps)."""
        return [r.solver for r in self.results]

    @property
    def iterations(self) -> np.ndarray:
        """Each step's solver iterations (N)."""
        return np.array([r.iterations for r in self.results], dtype=int)

    @property
    def time_s(self) -> np.ndarray:
        """Each step's wall time [s] (N)."""
        return np.array([r.time_s for r in self.results], dtype=float)

    @property
    def solver_counts(self) -> dict[str, int]:
        """How many steps each solver name produced."""
        out: dict[str, int] = {}
        for name in self.solver:
            out[name] = out.get(name, 0) + 1
        return out

    @property
    def n_failed(self) -> int:
        """Number of steps that are not ``solved``: contact problems not solved, and steps solved but
        unphysical (:attr:`n_unphysical`)."""
        return sum(r.status is not Status.SOLVED for r in self.results)

    @property
    def n_unphysical(self) -> int:
        """Number of steps whose program was solved but whose physics verdict failed (status
        :attr:`~contactmp.result.Status.UNPHYSICAL`)."""
        return sum(r.status is Status.UNPHYSICAL for r in self.results)

    @property
    def status_counts(self) -> dict[str, int]:
        """How many steps ended with each status."""
        out: dict[str, int] = {}
        for r in self.results:
            out[r.status.value] = out.get(r.status.value, 0) + 1
        return out

    @property
    def violations(self) -> dict[str, tuple[int, float]]:
        """Each physics check that failed on some step (module docstring of
        :mod:`~contactmp.transcriptions.physics_check`): ``(steps it failed on, its largest value)``."""
        out: dict[str, tuple[int, float]] = {}
        for r in self.results:
            verdict = StepVerdict.from_dict(r.extras.get("physics"))
            for name, (val, _tol) in (verdict.violations.items() if verdict else ()):
                n, worst = out.get(name, (0, -math.inf))
                out[name] = (n + 1, max(worst, val))
        return out

    def __repr__(self) -> str:
        text = (f"Trajectory({self.n_steps} steps of h = {self.h:g} s, status "
                + ", ".join(f"{k}: {n}" for k, n in self.status_counts.items()))
        bad = self.violations
        if bad:
            text += "; physics failed: " + ", ".join(f"{k} on {n} steps (worst {w:.3g})" for k, (n, w) in bad.items())
        return text + (f"; stopped: {self.stopped}" if self.stopped else "") + ")"

    @property
    def frames_per_second(self) -> float:
        """Simulated steps per second of wall time."""
        tot = float(np.sum(self.time_s))
        return self.n_steps / tot if tot > 0 else math.nan

    def extra(self, name: str) -> np.ndarray:
        """The per-step values ``results[k].residuals[name]`` or ``results[k].extras[name]`` (N;
        NaN where a step has none)."""
        out = []
        for r in self.results:
            v = r.residuals.get(name, r.extras.get(name, math.nan))
            out.append(float(v) if np.ndim(v) == 0 else math.nan)
        return np.array(out, dtype=float)


class TimeStepping:
    """Time stepping of ``system`` with step ``h`` (see the module docstring).

    Parameters
    ----------
    system : ContactSystem
    h : float, the step length (s), > 0.
    formulation : a registered name (``"pyramid"``, ``"cone"``, ``"compliant"``, ``"nmdp"``,
        ``"mdp"``, or one registered by the user) or a configured
        :class:`~contactmp.formulations.base.Formulation`.
    facets : shorthand for the ``facets`` option (pyramid; compliant with ``friction="pyramid"``).
    solver : the solver of every step (a name or a chain of names the front door passes to the
        route the step's program takes; for ``"nmdp"`` the method ``"pgm"``, ``"zopgm"``,
        ``"ipopt"``, ``"ipopt-cyipopt"``); None: the formulation's default. Every step reports the
        solver that produced it.
    active_gap : contacts with ``phi <= active_gap`` enter a step (``math.inf``: all).
    tol : tolerance passed to the contact solver.
    on_failure : ``"continue"`` (keep the best iterate) or ``"stop"`` in :meth:`simulate`.
    pd_gains : stable-PD gains ``(Kp, Kd)`` (scalars or one per input, >= 0; see the module
        docstring), with the targets of :meth:`step` / :meth:`simulate`; None: no controller.
    **options : the formulation's options (with a name), e.g. ``stiffness``, ``damping``,
        ``tangential_damping`` for ``"compliant"``, ``vertices``, ``stiffness``, ``relax``,
        ``radius``, ``kp``, ``kd`` for ``"nmdp"``.

    The attribute ``tolerances`` holds what the physics verdict of every step measures against
    (the formulation's :meth:`~contactmp.formulations.base.Formulation.physics_tolerances`).
    """

    def __init__(self, system: ContactSystem, h: float, formulation: str | Formulation = "pyramid",
                 facets: int | None = None, solver: Any = None, *, active_gap: float = 0.1,
                 tol: float = 1e-10, on_failure: str = "continue",
                 pd_gains: tuple[ArrayLike, ArrayLike] | None = None,
                 **options: Any) -> None:
        self._pd: tuple[np.ndarray, np.ndarray] | None = None
        if pd_gains is not None:
            kp, kd = _pd_gains(system, pd_gains)
            if _takes_pd(formulation):
                if "kp" in options or "kd" in options:
                    raise InputError("pd_gains", "give the stable-PD gains once: pd_gains=(Kp, Kd) or the options kp, kd")
                options = {**options, "kp": kp, "kd": kd}
            else:
                self._pd = (kp, kd)
        self.formulation = for_system(formulation, system, h, facets, **options)
        if on_failure not in ("continue", "stop"):
            raise OptionError(f"on_failure must be 'continue' or 'stop', got {on_failure!r}")
        try:
            self.active_gap = float(active_gap)
        except (TypeError, ValueError) as exc:
            raise InputError("active_gap", f"must be a number, got {active_gap!r}") from exc
        if not (isinstance(tol, (int, float)) and tol > 0):
            raise InputError("tol", f"must be > 0, got {tol!r}")
        self.system, self.h = system, float(h)
        self.solver, self.tol, self.on_failure = solver, float(tol), on_failure
        from contactmp.formulations.nmdp import chart, check_position_gains, quaternion_blocks

        if self._pd is not None:  # B (on v) and the q entry of each actuated coordinate (qdot_i = v_j)
            pd_chart = chart(system)
            check_position_gains(system, self._pd[0], "pd_gains[0] (Kp)")
            self._pd_selection, self._pd_q = pd_chart.B, pd_chart.actuated_q
        # the unit-quaternion blocks of q to renormalize after each step (a floating base's q[3:7]);
        # _quat: the one block (None: none or several), as differentiable_rollout reads it
        self._quats = quaternion_blocks(system)
        self._quat = self._quats[0] if len(self._quats) == 1 else None
        self.tolerances: PhysicsTolerances = self.formulation.physics_tolerances(system, self.h)
        self._last_gaps: tuple[bytes, np.ndarray] | None = None

    # --------------------------------------------------------------------------- one step
    def step(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None, *, t: float = 0.0,
             targets: TargetsPolicy | None = None, previous: Result | None = None,
             start: Mapping[str, ArrayLike] | None = None) -> StepOutcome:
        """One step from ``(q_k, v_k)`` at time ``t`` under input ``u_k`` (zeros when None) and PD
        ``targets`` (``targets(t)`` or, as feedback, ``targets(t, q, v)``, called with this step's
        ``(q_k, v_k)``; see :meth:`simulate`); ``previous`` is the previous step's result (a warm
        start); ``start`` maps names
        of the step Program's variables (prefix ``step``, e.g. ``step/v_next``) to start values, where
        the step's solver takes a start (the NLP route: position-gap steps), and the step then
        returns its solution nearest the start (a non-unique step, such as a statically
        indeterminate friction split, follows the start; see
        :class:`~contactmp.formulations.base.Step`).

        The outcome's ``result.program`` is None: a parametric formulation's step reuses one cached
        Program per contact set, whose parameters the next step overwrites, so a kept Program would
        not describe this step (and a trajectory would hold one per step); :meth:`step_program`
        builds this step's Program::

            out = ts.step(q, v, u)                  # out.q, out.v, out.impulses, out.result
            prog = ts.step_program(q, v, u)         # the Program the step solved
        """
        t0 = time.perf_counter()
        step = self._numeric_step(q, v, u, t, targets)
        step = dataclasses.replace(step, previous=previous, start=start)
        out = self.formulation.advance(step, solver=self.solver, tol=self.tol)
        self.renormalize(out.q)
        return self._judged(out, step, previous, t0)

    def _numeric_step(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None, t: float,
                      targets: TargetsPolicy | None) -> Step:
        """The :class:`~contactmp.formulations.base.Step` of :meth:`step` from ``(q, v, u, t)``:
        the contacts with ``phi <= active_gap``, the targets as a function of time (a feedback
        ``targets(t, q, v)`` bound to this state) and the stable PD's explicit torque added to ``u``."""
        s = self.system
        q = s._vec("q", q, s.n_q)
        v = s._vec("v", v, s.n_v)
        u = np.zeros(s.n_u) if u is None else s._vec("u", u, s.n_u)
        try:
            t = float(t)
        except (TypeError, ValueError):
            raise InputError("t", f"must be a number, got {t!r}") from None
        targets = _bind_state(targets, q, v)
        contacts = np.flatnonzero(self._gaps(q) <= self.active_gap)
        if self._pd is not None:
            u = u + self._pd_torque(q, v, t, targets)
        return Step(s, self.h, q, v, u, "step", contacts, t=t, targets=targets, pd_gains=self._pd)

    def step_program(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None, t: float = 0.0, *,
                     targets: TargetsPolicy | None = None) -> Program:
        """The :class:`~contactmp.program.Program` that :meth:`step` from ``(q_k, v_k)`` at time
        ``t`` under input ``u_k`` (zeros when None) and PD ``targets`` solves: the formulation's
        step block (:meth:`~contactmp.formulations.base.Formulation.add_step`, the block
        :class:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO` stacks) for the
        contacts that enter the step (``phi_i(q_k) <= active_gap``, then the formulation's
        :meth:`~contactmp.formulations.base.Formulation.step_contacts`), with every number bound, so
        that its reductions apply directly: ``to_lcp()`` (pyramid: ``LCP(q, M)`` of the step),
        ``to_cone_problem()`` (cone: ``fc3d(W, q, mu)`` with the Delassus ``W = J M^-1 J^T``;
        compliant: its cone LCP), ``to_mcp()``, ``to_pyomo()``, or the front door
        (:func:`contactmp.solvers.front.solve`). With a stable PD (``pd_gains``) the mass matrix is
        ``M + h B diag(h Kp + Kd) B^T`` and ``u_k`` carries the explicit PD torque, as in the step.

        A fresh Program per call (the step's own is cached and reused, see :meth:`step`), named
        ``"time_step"``, its variables under the prefix ``step``: ``prog["step/v_next"]`` is
        ``v_{k+1}`` and the formulation's impulses follow (``step/p_n``, ...). A parametric
        formulation's Program (pyramid, cone; compliant with constant gains) holds the state as
        the Parameters ``state/q``, ``state/v``, ``state/u``, set to ``(q_k, v_k, u_k)`` (assign
        ``prog["state/q"].value`` to move it to another state of the same contact set); the others
        are built from the numbers. A position-gap step's Program (``gap="position"``, no reduction
        takes it: the NLP route) starts at the linear-gap step's solution, as the step does. With
        no contact in the step the Program is free flight: ``v_next`` and the rows ``step/dynamics``
        ``M (v_{k+1} - v_k) = h f``. The next configuration is not part of it:
        ``q_{k+1} = q_k + h qdot(q_k, v_{k+1})``.

        Formulations that advance a step by their own discretization (``"nmdp"``, ``"mdp"``:
        adaptive substeps solved as QPs or by PGM) have no one Program per step: InputError naming
        ``formulation`` (:class:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO` with
        ``N = 1`` holds their step's KKT block). A mass matrix that is not positive definite at
        ``q_k`` raises InputError naming ``M``.

        Example (a box resting on its corners; the LCP of one pyramid step, and its answer)::

            ts = TimeStepping(box_2d(), 0.01, "pyramid")
            lcp = ts.step_program(q, v).to_lcp()            # lcp.M, lcp.q
            res = solve(ts.step_program(q, v))              # contactmp.solvers.front.solve
            v_next = res.value(res.program["step/v_next"])
        """
        form = self.formulation
        if type(form).advance is not Formulation.advance:
            raise InputError("formulation", f"{form.name!r} advances a time step by its own discretization "
                             "(adaptive substeps solved by its own method), not by one Program; "
                             "ContactImplicitTO(system, 1, h, formulation) holds its step block")
        step = self._numeric_step(q, v, u, t, targets)
        s, h = self.system, self.h
        full = dataclasses.replace(step, contacts=None).data()
        check_spd(full.M)
        idx = step.contacts
        if idx.size:
            idx = idx[form.step_contacts(step, full)]
        prog = Program("time_step")
        if idx.size == 0:  # free flight: M (v+ - v) = h f
            v_next = prog.add_variables("step/v_next", s.n_v, init=step.v, block="step")
            prog.add_constraint(ca.DM(full.M) @ (v_next.sym - step.v) - h * full.f, 0.0, 0.0,
                                name="step/dynamics", block="step")
            return prog
        if form.parametric:  # the state as Parameters, bound to the step's numbers
            state = [prog.add_parameters(f"state/{n}", k, val) if k else None
                     for n, k, val in (("q", s.n_q, step.q), ("v", s.n_v, step.v), ("u", s.n_u, step.u))]
            sym = [ca.SX(0, 1) if p is None else p.sym for p in state]
            form.add_step(prog, dataclasses.replace(step, q=sym[0], v=sym[1], u=sym[2], contacts=idx, _cache={}))
        else:
            form.add_step(prog, dataclasses.replace(step, contacts=idx))
        if form.position_gap:  # started where the step starts: the linear-gap step's solution
            form._start_from_linear_gap(prog, step, idx, full, self.tol)
        return prog

    def _judged(self, out: StepOutcome, step: Step, previous: Result | None, t0: float) -> StepOutcome:
        """``out`` with the step's physics verdict in ``result.extras["physics"]`` (status
        ``UNPHYSICAL`` when the program was solved but the verdict failed) and ``result.time_s`` the
        step's wall time since ``t0`` (the solver's own time in ``extras["solve_s"]``)."""
        res = out.result
        extras = dict(res.extras)
        extras["solve_s"] = res.time_s
        changes: dict[str, Any] = {"extras": extras}
        if np.isfinite(out.q).all() and np.isfinite(out.v).all() and np.isfinite(out.impulses).all():
            data = step._cache.get("data")  # the velocity-level step's J at q_k, when it evaluated them
            J = (data.Jn, data.Jt, data.Jo) if data is not None else None
            before = StepVerdict.from_dict(previous.extras.get("physics")) if previous is not None else None
            phi_next = self.system.eval_phi(out.q)
            self._last_gaps = (out.q.tobytes(), phi_next)  # the next step's active set reads them
            verdict = judge_step(self.system, self.tolerances, self.h, step.q, step.v, out.q, out.v,
                                 out.impulses, before, J, phi_next)
            extras["physics"] = verdict.to_dict()
            if not verdict.ok and res.status is Status.SOLVED:
                changes["status"] = Status.UNPHYSICAL
                changes["message"] = (f"{res.message}; " if res.message else "") + "physics: " + verdict.describe()
        changes["time_s"] = time.perf_counter() - t0
        out.result = res.replace(**changes)
        return out

    def _gaps(self, q: np.ndarray) -> np.ndarray:
        """``phi(q)``: the gaps the previous step's verdict evaluated at its end, when ``q`` is that
        end (as in :meth:`simulate`), else evaluated."""
        last = self._last_gaps
        if last is not None and last[0] == q.tobytes():
            return last[1]
        return self.system.eval_phi(q)

    def renormalize(self, q: np.ndarray) -> None:
        """Rescale every unit quaternion of ``q`` (a floating base's entries 3-7,
        :func:`~contactmp.formulations.nmdp.quaternion_blocks`) to norm 1, in place, after
        ``q_{k+1} = q_k + h qdot(q_k, v_{k+1})`` (nothing for other systems)."""
        for blk in self._quats:
            nrm = np.linalg.norm(q[blk])
            if nrm > 0:
                q[blk] /= nrm

    def _pd_torque(self, q: np.ndarray, v: np.ndarray, t: float, targets: Targets | None) -> np.ndarray:
        """The stable PD's explicit part ``Kp (q_d - q_a) + Kd qd_d - (h Kp + Kd) B^T v_k`` (targets
        at the step's end ``t + h``; None holds ``q_a`` at rest) with ``q_a`` the actuated
        coordinates' entries of ``q_k`` (``B^T q_k`` when ``qdot = v``; a floating base's joint angles,
        :class:`~contactmp.formulations.nmdp.Chart`)."""
        kp, kd = self._pd
        B = self._pd_selection
        qa, va = np.where(self._pd_q >= 0, q[self._pd_q], 0.0), B.T @ v
        q_d, qd_d = (None, None) if targets is None else targets(t + self.h)
        q_d = qa if q_d is None else self.system._vec("q_d", q_d, self.system.n_u)
        qd_d = np.zeros_like(va) if qd_d is None else self.system._vec("qd_d", qd_d, self.system.n_u)
        return kp * (q_d - qa) + kd * qd_d - (self.h * kp + kd) * va

    # -------------------------------------------------------------------------- trajectories
    def simulate(self, q0: ArrayLike, v0: ArrayLike, u: Control = None, n_steps: int = 100, *,
                 targets: TargetsPolicy | None = None, on_step: Callable[[StepOutcome], None] | None = None,
                 stop: Callable[[float, np.ndarray, np.ndarray], bool] | None = None) -> Trajectory:
        """Run ``n_steps`` steps from ``(q0, v0)``, step ``k`` from ``(q_k, v_k)`` at ``t_k = k h``.

        ``u`` is the input ``u_k`` of every step:

        * None (zero input), one vector (held constant) or an array ``(n_steps, n_u)`` (row ``k``);
        * a function of time ``u(t)``: ``u_k = u(t_k)``;
        * a feedback policy ``policy(t, q, v)``: ``u_k = policy(t_k, q_k, v_k)``, called with copies
          of the state at the step's start.

        A callable's form is read from its signature (:func:`inspect.signature`): one positional
        parameter is ``u(t)``, three are ``policy(t, q, v)``; a callable that accepts both (``*args``,
        defaults) or neither raises InputError naming ``u`` (a callable without a readable signature,
        a NumPy ufunc say, is ``u(t)``). Each value it returns must be ``n_u`` finite numbers
        (InputError naming ``u`` and the step).

        ``targets`` are the PD targets of a stable PD (``pd_gains``, or the ``kp``, ``kd`` of
        ``"nmdp"`` / ``"mdp"``): ``targets(t) -> (q_d, qd_d)`` at the step's end ``t = t_k + h`` (a
        substep's end for an adaptive NMDP step), or, read the same way from its signature, the
        feedback ``targets(t, q, v)``, called with ``(q_k, v_k)`` of the step it is asked in.

        After each step ``on_step(outcome)`` is called; the run stops early when ``stop(t, q, v)``
        is true, when the state is not finite, or on a failed step with ``on_failure="stop"``
        (``Trajectory.stopped`` says why).

        Example: a PD loop on the joint angles ``q[3:5]`` of the two-link arm, with gravity
        compensation (``h(q, 0)`` on the actuated coordinates)::

            arm = two_link_arm_box()
            ts = TimeStepping(arm, 0.01, "pyramid")
            def pd(t, q, v):
                return 40 * (q_d - q[3:5]) - 8 * v[3:5] + arm.eval_h(q, 0 * v)[3:5]
            traj = ts.simulate(q0, np.zeros(5), u=pd, n_steps=300)      # traj.q[-1, 3:5] ~ q_d
        """
        s = self.system
        if not isinstance(n_steps, (int, np.integer)) or isinstance(n_steps, bool) or n_steps < 0:
            raise InputError("n_steps", f"must be an integer >= 0, got {n_steps!r}")
        for name, fn in (("targets", targets), ("on_step", on_step), ("stop", stop)):
            if fn is not None and not callable(fn):
                raise InputError(name, "must be callable")
        if targets is not None:
            _arity(targets, "targets")  # checked once, before the first step
        u_of = self._control(u, int(n_steps))
        q = s._vec("q0", q0, s.n_q)
        v = s._vec("v0", v0, s.n_v)
        qs, vs, imps, results = [q], [v], [], []
        stopped, previous, warned = "", None, False
        for k in range(int(n_steps)):
            out = self.step(q, v, u_of(k, q, v), t=k * self.h, targets=targets, previous=previous)
            q, v, previous = out.q, out.v, out.result
            verdict = StepVerdict.from_dict(out.result.extras.get("physics"))
            if verdict is not None and not verdict.ok and not warned:
                warned = True
                warnings.warn(PhysicsWarning(
                    f"{self.system.name} under {self.formulation.name}: the physics of step {k} (t = {k * self.h:.4g} s, "
                    f"status {out.status.value}) failed ({verdict.describe()}); a solved step whose physics fails "
                    "has status 'unphysical' (Trajectory.violations lists every check that failed)"),
                    stacklevel=2)
            qs.append(q), vs.append(v), imps.append(out.impulses), results.append(out.result)
            if on_step is not None:
                on_step(out)
            t_next = (k + 1) * self.h
            if not (np.isfinite(q).all() and np.isfinite(v).all()):
                stopped = f"non-finite state at t = {t_next:.4g} s"
            elif not out.success and self.on_failure == "stop":
                stopped = f"step {k} failed ({out.status.value}) and on_failure='stop'"
            elif stop is not None and stop(t_next, q, v):
                stopped = f"stop(t, q, v) at t = {t_next:.4g} s"
            if stopped:
                break
        n = len(results)
        return Trajectory(t=self.h * np.arange(n + 1), q=np.array(qs), v=np.array(vs),
                          impulses=np.array(imps).reshape(n, s.n_c, 3), results=results, h=self.h,
                          stopped=stopped, extras={"formulation": self.formulation, "active_gap": self.active_gap})

    def _control(self, u: Control, n_steps: int) -> Callable[[int, np.ndarray, np.ndarray], np.ndarray]:
        """``u_k`` as a function of the step ``k`` and its state ``(q_k, v_k)`` (see :meth:`simulate`)."""
        nu = self.system.n_u
        if u is None:
            zero = np.zeros(nu)
            return lambda k, q, v: zero
        if callable(u):
            feedback = _arity(u, "u") == 3

            def value(k: int, q: np.ndarray, v: np.ndarray) -> np.ndarray:
                t = k * self.h
                got = u(t, q.copy(), v.copy()) if feedback else u(t)
                try:
                    return self.system._vec("u", got, nu)
                except InputError as exc:
                    form = "policy(t, q, v)" if feedback else "u(t)"
                    raise InputError("u", f"{form} at step {k} (t = {t:.6g} s) returned "
                                          f"{np.asarray(got).shape if _numeric(got) else type(got).__name__}: "
                                          f"{str(exc).partition(': ')[2]}") from None

            return value
        arr = np.asarray(u, dtype=float)
        if arr.shape in ((nu,), (nu, 1)):
            arr = arr.reshape(nu)
            if not np.isfinite(arr).all():
                raise InputError("u", "must be finite")
            return lambda k, q, v: arr
        if arr.ndim == 2 and arr.shape[1] == nu and arr.shape[0] >= n_steps:
            if not np.isfinite(arr).all():
                raise InputError("u", "must be finite")
            return lambda k, q, v: arr[k]
        raise InputError("u", f"expected None, a callable u(t) or policy(t, q, v), shape ({nu},) or "
                              f"({n_steps}, {nu}); got {arr.shape}")


def _numeric(x: Any) -> bool:
    """Whether ``x`` reads as a float array (for a message)."""
    try:
        np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        return False
    return True


def _arity(fn: Callable[..., Any], name: str) -> int:
    """How ``fn`` is called: 1 (``fn(t)``) or 3 (``fn(t, q, v)``), read from its signature: the
    numbers of positional arguments it accepts, of which exactly one of 1 and 3 must be (InputError
    naming ``name`` otherwise, and for a required keyword-only parameter). A callable without a
    readable signature (a NumPy ufunc, some builtins) is ``fn(t)``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1
    P = inspect.Parameter
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    required = sum(p.default is P.empty for p in positional)
    star = any(p.kind is P.VAR_POSITIONAL for p in params)
    keyword = [p.name for p in params if p.kind is P.KEYWORD_ONLY and p.default is P.empty]
    forms = "f(t) (a function of time) or f(t, q, v) (feedback on the state at the step's start)"
    if keyword:
        raise InputError(name, f"must be called as {forms}; {fn!r} has the required keyword-only "
                               f"parameter(s) {keyword}")
    takes = [n for n in (1, 3) if required <= n and (star or n <= len(positional))]
    if len(takes) != 1:
        raise InputError(name, f"must take exactly 1 or exactly 3 positional arguments, {forms}; "
                               f"{fn!r} has signature {sig}, which "
                               + ("accepts both" if takes else "accepts neither"))
    return takes[0]


def _bind_state(targets: TargetsPolicy | None, q: np.ndarray, v: np.ndarray) -> Targets | None:
    """``targets`` as a function of time: itself (``targets(t)``), or a feedback ``targets(t, q, v)``
    bound to the state ``(q, v)`` (copies)."""
    if targets is None:
        return None
    if not callable(targets):
        raise InputError("targets", "must be callable: targets(t) or targets(t, q, v) -> (q_d, qd_d)")
    if _arity(targets, "targets") == 1:
        return targets  # type: ignore[return-value]
    qc, vc = q.copy(), v.copy()
    return lambda t: targets(t, qc, vc)  # type: ignore[call-arg]


def _pd_gains(system: ContactSystem, pd: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(Kp, Kd)`` as two arrays of one entry >= 0 per input (InputError naming ``pd_gains``)."""
    from contactmp.validate import float_vector

    if not isinstance(pd, (tuple, list)) or len(pd) != 2:
        raise InputError("pd_gains", f"must be a pair (Kp, Kd), got {pd!r}")
    return (float_vector(pd[0], system.n_u, "pd_gains[0] (Kp)", nonnegative=True),
            float_vector(pd[1], system.n_u, "pd_gains[1] (Kd)", nonnegative=True))


def _takes_pd(formulation: Any) -> bool:
    """Whether ``formulation`` (a name or an instance) has its own stable PD (options ``kp``, ``kd``)."""
    from dataclasses import fields

    from contactmp.formulations.base import formulation as make

    form = make(formulation) if isinstance(formulation, str) else formulation
    names = {f.name for f in fields(form.Options)} if isinstance(form, Formulation) else set()
    return {"kp", "kd"} <= names
