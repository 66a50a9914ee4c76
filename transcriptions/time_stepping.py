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
either continues with the best iterate or stops (``on_failure``).

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

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Union

import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, OptionError
from contactmp.formulations.base import Formulation, PhysicsTolerances, Step, StepOutcome, Targets, for_system
from contactmp.models.symbolic import ContactSystem
from contactmp.result import Result, Status
from contactmp.transcriptions.physics_check import StepVerdict, judge_step

__all__ = ["TimeStepping", "Trajectory", "PhysicsWarning"]


class PhysicsWarning(UserWarning):
    """A simulated step whose physics verdict failed (a solved step then has status
    :attr:`~contactmp.result.Status.UNPHYSICAL`; a step not solved keeps its status, and its verdict
    still counts in :attr:`Trajectory.violations`): issued once per :meth:`TimeStepping.simulate` run."""

Control = Union[ArrayLike, Callable[[float], ArrayLike], None]


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
             targets: Targets | None = None, previous: Result | None = None,
             start: Mapping[str, ArrayLike] | None = None) -> StepOutcome:
        """One step from ``(q_k, v_k)`` at time ``t`` under input ``u_k`` (zeros when None) and PD
        ``targets``; ``previous`` is the previous step's result (a warm start); ``start`` maps names
        of the step Program's variables (prefix ``step``, e.g. ``step/v_next``) to start values, where
        the step's solver takes a start (the NLP route: position-gap steps), and the step then
        returns its solution nearest the start (a non-unique step, such as a statically
        indeterminate friction split, follows the start; see
        :class:`~contactmp.formulations.base.Step`)."""
        t0 = time.perf_counter()
        s = self.system
        q = s._vec("q", q, s.n_q)
        v = s._vec("v", v, s.n_v)
        u = np.zeros(s.n_u) if u is None else s._vec("u", u, s.n_u)
        contacts = np.flatnonzero(self._gaps(q) <= self.active_gap)
        if self._pd is not None:
            u = u + self._pd_torque(q, v, t, targets)
        step = Step(s, self.h, q, v, u, "step", contacts, t=float(t), targets=targets, previous=previous,
                    start=start, pd_gains=self._pd)
        out = self.formulation.advance(step, solver=self.solver, tol=self.tol)
        self.renormalize(out.q)
        return self._judged(out, step, previous, t0)

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
                 targets: Targets | None = None, on_step: Callable[[StepOutcome], None] | None = None,
                 stop: Callable[[float, np.ndarray, np.ndarray], bool] | None = None) -> Trajectory:
        """Run ``n_steps`` steps from ``(q0, v0)``. ``u`` is None (zero input), one input vector
        (held constant), an array ``(n_steps, n_u)``, or a callable ``u(t_k)``; ``targets(t) ->
        (q_d, qd_d)`` are the PD targets of a stable-PD formulation. After each step
        ``on_step(outcome)`` is called; the run stops early when ``stop(t, q, v)`` is true, when
        the state is not finite, or on a failed step with ``on_failure="stop"``
        (``Trajectory.stopped`` says why)."""
        s = self.system
        if not isinstance(n_steps, (int, np.integer)) or isinstance(n_steps, bool) or n_steps < 0:
            raise InputError("n_steps", f"must be an integer >= 0, got {n_steps!r}")
        for name, fn in (("targets", targets), ("on_step", on_step), ("stop", stop)):
            if fn is not None and not callable(fn):
                raise InputError(name, "must be callable")
        u_of = self._control(u, int(n_steps))
        q = s._vec("q0", q0, s.n_q)
        v = s._vec("v0", v0, s.n_v)
        qs, vs, imps, results = [q], [v], [], []
        stopped, previous, warned = "", None, False
        for k in range(int(n_steps)):
            out = self.step(q, v, u_of(k), t=k * self.h, targets=targets, previous=previous)
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
