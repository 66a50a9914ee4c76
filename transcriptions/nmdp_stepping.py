"""Time stepping with the NMDP (Pan and Hauser) or the linearized MDP QP, frame by frame.

A *frame* is one interval ``[t, t + h]`` of the fixed output step ``h``. For the NMDP methods one
frame is one backward-Euler NMDP step (:mod:`contactmp.formulations.nmdp`)

    minimize_{theta, w}  K(theta)   s.t.  G(theta, w) = 0,  w >= 0,  1^T w_i <= 1,
    q_{n+1} = theta,  qd_{n+1} = (theta - q_n) / h,

with the stable-PD targets ``(q_d, qd_d) = targets(t + h)`` (the controller is evaluated at step
n+1), solved by the projected gradient method (``"pgm"``), its zeroth-order variant (``"zopgm"``)
or IPOPT (``"ipopt"`` through CasADi, ``"ipopt-cyipopt"``), started at ``theta0 = q_n + h qd_n``
and at the previous frame's weights ``w``. With ``adaptive=True`` the frame goes through the
adaptive step (Algorithm 2, :func:`contactmp.solvers.nmdp_pgm.adaptive_step`): a substep whose
solver status is not ``solved`` is replaced by two substeps of half its length, down to
``h_min``. For ``"mdp"`` (and ``"mdp-explicit"``, the PD torque explicit) a frame is one
linearized-MDP QP (:class:`~contactmp.formulations.linearized_mdp.LinearizedMDP`, everything
frozen at ``q_n``, no adaptivity); a QP that fails its
check is reported in the frame's status and its answer used anyway.

A frame whose adaptive step gives up (a substep below ``h_min`` needed) keeps the state reached by
the substeps that succeeded and completes the frame with the unverified answer of one substep
over the remaining time (status ``numerical_error`` recorded); a non-finite state ends the run.

The frame's contact forces are the substep-length-weighted mean of the substeps' forces
``f_i = s_i sum_j w_ij b_j`` (contact frame: normal, t, o) [N]: for one substep the force itself.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, OptionError, check_number
from contactmp.models.symbolic import ContactSystem
from contactmp.result import Status

__all__ = ["NMDPStepping", "StepRecord", "NMDPTrajectory", "METHODS"]

#: method name -> (kind, option): NMDP by PGM / ZOPGM / IPOPT backends, or the linearized MDP QP
METHODS: dict[str, tuple[str, Any]] = {
    "pgm": ("pgm", False),
    "zopgm": ("pgm", True),
    "ipopt": ("ipopt", "casadi"),
    "ipopt-cyipopt": ("ipopt", "cyipopt"),
    "mdp": ("mdp", "stable"),
    "mdp-explicit": ("mdp", "explicit"),
}

Targets = Callable[[float], tuple[np.ndarray, np.ndarray]]


@dataclass
class StepRecord:
    """One frame ``[t, t + h]``: the state at its end (``q``, ``qd`` at time ``t``), the frame's
    ``status`` (``solved`` when every substep was verified), the solver's ``outer_iterations``
    (PGM accepted proximal steps / IPOPT iterations / qpOASES iterations, summed over substeps),
    Newton ``projections`` (PGM only), the ``substeps`` taken, the smallest substep attempted
    ``h_smallest``, the wall time ``time_s``, the contact ``forces`` ``(n_c, 3)`` [N] and ``w``
    the last substep's vertex weights."""

    t: float
    q: np.ndarray
    qd: np.ndarray
    status: Status
    outer_iterations: int
    projections: int
    substeps: list[float]
    h_smallest: float
    time_s: float
    forces: np.ndarray
    w: np.ndarray
    message: str = ""

    @property
    def success(self) -> bool:
        """True exactly when ``status`` is ``SOLVED``."""
        return self.status is Status.SOLVED


@dataclass
class NMDPTrajectory:
    """A simulated run: ``t`` ``(N+1,)``, ``q`` ``(N+1, n)``, ``qd`` ``(N+1, n)`` (row 0 the initial
    state) and per frame ``(N,)``: ``status`` (strings), ``outer_iterations``, ``projections``,
    ``h_smallest``, ``substeps`` (count), ``time_s``, ``forces`` ``(N, n_c, 3)``. ``stopped``: why
    the run ended before ``T`` (empty when it reached ``T``)."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    status: list[str]
    outer_iterations: np.ndarray
    projections: np.ndarray
    h_smallest: np.ndarray
    substeps: np.ndarray
    time_s: np.ndarray
    forces: np.ndarray
    method: str
    h: float
    stopped: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def failed_frames(self) -> int:
        """Frames whose status is not ``solved``."""
        return sum(s != Status.SOLVED.value for s in self.status)

    @property
    def frames_per_second(self) -> float:
        """Simulated frames per second of wall time."""
        tot = float(np.sum(self.time_s))
        return len(self.status) / tot if tot > 0 else math.nan


class NMDPStepping:
    """Frame-by-frame simulation of ``system`` with step ``h`` by ``method`` (module docstring).

    Parameters
    ----------
    system : ContactSystem with ``qdot = v`` and a 0/1 input selection (see ``NMDP``).
    h : frame length [s] > 0.
    method : ``"pgm"``, ``"zopgm"``, ``"ipopt"``, ``"ipopt-cyipopt"``, ``"mdp"`` (linearized MDP with
        the stable PD, implicit in ``qd+``) or ``"mdp-explicit"`` (the notes' baseline: PD torque
        evaluated at ``(q_n, qd_n)``).
    vertices, stiffness, relax, radius, kp, kd : the polytope ``s_i = k min(phi - r, 0)^2 + relax``
        and the stable-PD gains, as in :class:`~contactmp.formulations.nmdp.NMDP`.
    adaptive : halve a failed NMDP substep (Algorithm 2); ignored for ``"mdp"``.
    h_min : the smallest substep [s] before the adaptive step gives up.
    solver_options : extra keyword options of ``pgm`` or ``NMDP.solve_ipopt`` (e.g. ``tol``).
    objective : the step's energy metric, ``"effective"`` (default) or ``"kinetic"`` (see
        :class:`~contactmp.formulations.nmdp.NMDP`).
    """

    def __init__(self, system: ContactSystem, h: float, method: str = "pgm", *,
                 vertices: int | None = None, stiffness: ArrayLike = 0.0, relax: ArrayLike = 0.0,
                 radius: ArrayLike = 0.0, kp: ArrayLike = 0.0, kd: ArrayLike = 0.0,
                 adaptive: bool = True, h_min: float = 1e-5,
                 solver_options: dict[str, Any] | None = None, objective: str = "effective") -> None:
        if not isinstance(system, ContactSystem):
            raise InputError("system", f"must be a ContactSystem, got {type(system).__name__}")
        self.h = check_number("h", h, positive=True)
        if not isinstance(method, str) or method not in METHODS:
            raise InputError("method", f"must be one of {tuple(METHODS)}, got {method!r}")
        if not isinstance(adaptive, bool):
            raise InputError("adaptive", f"must be True or False, got {adaptive!r}")
        self.h_min = check_number("h_min", h_min, positive=True)
        if self.h_min > self.h:
            raise InputError("h_min", f"must be <= h = {self.h:g}, got {h_min!r}")
        if solver_options is not None and not isinstance(solver_options, dict):
            raise InputError("solver_options", "must be a dict of keyword options")
        self.system, self.method, self.adaptive = system, method, adaptive
        self.kind, self.option = METHODS[method]
        self.solver_options = dict(solver_options or {})
        kw = dict(vertices=vertices, stiffness=stiffness, relax=relax, radius=radius, kp=kp, kd=kd,
                  objective=objective)
        if self.kind == "mdp":
            from contactmp.formulations.linearized_mdp import LinearizedMDP

            self.formulation: Any = LinearizedMDP(system, pd=self.option, **kw)
        else:
            from contactmp.formulations.nmdp import NMDP

            self.formulation = NMDP(system, **kw)
        self.n, self.n_c, self.n_w = system.n_v, system.n_c, self.formulation.n_w

    # ------------------------------------------------------------------------------ one substep
    def _solve(self, q: np.ndarray, qd: np.ndarray, t: float, hh: float, w0: np.ndarray,
               targets: Targets, tau_0: np.ndarray | None = None) -> dict[str, Any]:
        """One NMDP / MDP substep of length ``hh`` from ``(q, qd)`` at time ``t`` (feedforward
        torque ``tau_0`` added to the PD torque)."""
        q_d, qd_d = targets(t + hh)
        if self.kind == "mdp":
            r = self.formulation.step(q, qd, hh, q_d, qd_d, tau_0)
            return {"status": r.status, "q": r.x, "qd": r.extras["qd_next"], "w": r.extras["w"],
                    "forces": r.extras["forces"], "outer": r.iterations, "proj": 0, "message": r.message}
        theta0 = q + hh * qd
        if self.kind == "ipopt":
            r = self.formulation.solve_ipopt(q, qd, hh, q_d, qd_d, tau_0, backend=self.option, theta0=theta0,
                                             w0=w0, **self.solver_options)
            return {"status": r.status, "q": r.x, "qd": r.extras["qd_next"], "w": r.extras["w"],
                    "forces": r.extras["forces"], "outer": r.iterations, "proj": 0, "message": r.message}
        from contactmp.solvers.nmdp_pgm import pgm

        fns = self.formulation.functions(q, qd, hh, q_d, qd_d, tau_0)
        r = pgm(fns, theta0, w0, zeroth_order=self.option, **self.solver_options)
        w = r.extras["w"]
        finite = bool(np.all(np.isfinite(r.x)) and np.all(np.isfinite(w)))
        forces = fns.forces(r.x, w) if finite else np.full((self.n_c, 3), np.nan)
        return {"status": r.status, "q": r.x, "qd": fns.qd_next(r.x), "w": w,
                "forces": forces, "outer": r.iterations, "proj": r.extras["projections"],
                "message": r.message}

    # ------------------------------------------------------------------------------ one frame
    def step(self, q: ArrayLike, qd: ArrayLike, t: float, targets: Targets,
             w0: ArrayLike | None = None, tau_0: ArrayLike | None = None) -> StepRecord:
        """Advance ``(q, qd)`` at time ``t`` by one frame ``h`` (module docstring) with the PD
        targets ``targets(time) -> (q_d, qd_d)``; ``w0`` warm-starts the weights (default 0);
        ``tau_0`` (``n_u``) is a feedforward torque held over the frame (default 0)."""
        s = self.system
        q = s._vec("q", q, self.n)
        qd = s._vec("qd", qd, self.n)
        t = check_number("t", t)
        if not callable(targets):
            raise InputError("targets", "must be callable as targets(t) -> (q_d, qd_d)")
        w_start = np.zeros(self.n_w) if w0 is None else s._vec("w0", w0, self.n_w)
        ff = None if tau_0 is None else s._vec("tau_0", tau_0, s.n_u)
        t0 = time.perf_counter()
        if self.kind == "mdp" or not self.adaptive:
            r = self._solve(q, qd, t, self.h, w_start, targets, ff)
            return StepRecord(t + self.h, r["q"], r["qd"], r["status"], r["outer"], r["proj"], [self.h],
                              self.h, time.perf_counter() - t0, r["forces"], r["w"], r["message"])
        from contactmp.solvers.nmdp_pgm import adaptive_step

        acc = {"outer": 0, "proj": 0, "impulse": np.zeros((self.n_c, 3))}

        def step_fn(state: tuple[np.ndarray, np.ndarray, float, np.ndarray], hh: float
                    ) -> tuple[tuple[np.ndarray, np.ndarray, float, np.ndarray], bool]:
            qq, vv, tt, ww = state
            r = self._solve(qq, vv, tt, hh, ww, targets, ff)
            acc["outer"] += r["outer"]
            acc["proj"] += r["proj"]
            if r["status"] is not Status.SOLVED:
                return state, False
            acc["impulse"] = acc["impulse"] + hh * r["forces"]
            return (r["q"], r["qd"], tt + hh, r["w"]), True

        ad = adaptive_step(step_fn, self.h, (q, qd, t, w_start), h_min=self.h_min)
        qq, vv, tt, ww = ad.extras["state"]
        status, msg = Status.SOLVED, ad.message
        if not ad.success:  # finish the frame with one unverified substep over the remaining time
            rest = t + self.h - tt
            r = self._solve(qq, vv, tt, rest, ww, targets, ff)
            acc["outer"] += r["outer"]
            acc["proj"] += r["proj"]
            qq, vv, ww = r["q"], r["qd"], r["w"]
            acc["impulse"] = acc["impulse"] + rest * r["forces"]
            status = Status.NUMERICAL_ERROR
            msg = f"adaptive step gave up ({ad.message}); last substep unverified: {r['message']}"
        return StepRecord(t + self.h, np.asarray(qq, dtype=float), np.asarray(vv, dtype=float), status,
                          acc["outer"], acc["proj"], list(ad.extras["substeps"]), ad.extras["h_smallest"],
                          time.perf_counter() - t0, acc["impulse"] / self.h, np.asarray(ww, dtype=float),
                          msg)

    # ------------------------------------------------------------------------------ a run
    def simulate(self, q0: ArrayLike, qd0: ArrayLike, T: float, targets: Targets | None = None, *,
                 on_step: Callable[[StepRecord], None] | None = None,
                 stop_on_explode: Callable[[float, np.ndarray, np.ndarray], bool] | None = None
                 ) -> NMDPTrajectory:
        """Simulate ``round(T / h)`` frames from ``(q0, qd0)`` at ``t = 0``. ``targets(t) ->
        (q_d, qd_d)`` (default: hold ``S q0``, zero velocity). After each frame ``on_step(record)``
        is called and the run stops early when ``stop_on_explode(t, q, qd)`` is true or the state is
        not finite (``NMDPTrajectory.stopped`` says why)."""
        s = self.system
        q = s._vec("q0", q0, self.n)
        qd = s._vec("qd0", qd0, self.n)
        T = check_number("T", T, positive=True)
        if targets is None:
            S = self.formulation.S
            hold = (S @ q, np.zeros(S.shape[0]))
            targets = lambda t: hold  # noqa: E731
        if not callable(targets):
            raise InputError("targets", "must be callable as targets(t) -> (q_d, qd_d)")
        if on_step is not None and not callable(on_step):
            raise InputError("on_step", "must be callable as on_step(record)")
        if stop_on_explode is not None and not callable(stop_on_explode):
            raise InputError("stop_on_explode", "must be callable as stop_on_explode(t, q, qd) -> bool")
        N = max(1, int(round(T / self.h)))
        ts, qs, qds = [0.0], [q.copy()], [qd.copy()]
        recs: list[StepRecord] = []
        w = np.zeros(self.n_w)
        stopped = ""
        for k in range(N):
            rec = self.step(qs[-1], qds[-1], k * self.h, targets, w0=w)
            rec.t = (k + 1) * self.h
            recs.append(rec)
            ts.append(rec.t)
            qs.append(rec.q)
            qds.append(rec.qd)
            if on_step is not None:
                on_step(rec)
            if not (np.all(np.isfinite(rec.q)) and np.all(np.isfinite(rec.qd))):
                stopped = f"non-finite state at t = {rec.t:.4g} s"
                break
            if stop_on_explode is not None and stop_on_explode(rec.t, rec.q, rec.qd):
                stopped = f"exploded at t = {rec.t:.4g} s"
                break
            w = np.clip(rec.w, 0.0, None) if np.all(np.isfinite(rec.w)) else np.zeros(self.n_w)
            w = _feasible(w, self.formulation.groups)
        return NMDPTrajectory(
            t=np.array(ts), q=np.array(qs), qd=np.array(qds), status=[r.status.value for r in recs],
            outer_iterations=np.array([r.outer_iterations for r in recs]),
            projections=np.array([r.projections for r in recs]),
            h_smallest=np.array([r.h_smallest for r in recs]),
            substeps=np.array([len(r.substeps) for r in recs]),
            time_s=np.array([r.time_s for r in recs]),
            forces=np.array([r.forces for r in recs]).reshape(len(recs), self.n_c, 3),
            method=self.method, h=self.h, stopped=stopped)


def _feasible(w: np.ndarray, groups: list[np.ndarray]) -> np.ndarray:
    """Scale each group of ``w >= 0`` so that its sum is at most 1 (a feasible warm start)."""
    out = w.copy()
    for g in groups:
        tot = float(out[g].sum())
        if tot > 1.0:
            out[g] /= tot
    return out
