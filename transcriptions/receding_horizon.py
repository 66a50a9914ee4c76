"""Receding-horizon (MPC-style) re-solves of a contact-implicit trajectory optimization.

A :class:`RecedingHorizon` holds one built :class:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO`
and its current plan (a :class:`~contactmp.transcriptions.contact_implicit.TOResult`). One
:meth:`~RecedingHorizon.advance` moves the task one knot on and solves it again:

* the imposed initial state becomes the plan's state at knot 1, ``(q_1, v_1)`` (the same numbers;
  the re-solved trajectory meets them to IPOPT's tolerance, as any equality row);
* the initial guess is the plan shifted by one knot: the variables of knot ``k + 1`` (``q``, ``v``,
  ``u`` and every variable of step ``k + 1``'s contact block) move to knot ``k``, and the last knot's
  variables are held (``q_N``, ``v_N``, ``u_{N-1}`` and step ``N - 1``'s block keep their values;
  the held last step obeys its dynamics only when the plan ends at rest in equilibrium: the
  hopper's shifted guess violates that row by 3.8, everything else holds);
* the solve is warm-started: the homotopy starts near its end and IPOPT near the guess
  (:func:`warm_changes`: :data:`WARM_START`, or for elastic l1 its last penalty at once; on top of
  the caller's options).

Everything else of the task stays as it was built: the same ``N``, ``h``, costs and final
conditions (a receding horizon with a fixed terminal target).

Why the NLP is not built again: the initial state is the bounds of the rows ``initial_q`` and
``initial_v`` that :meth:`ContactImplicitTO.set_initial_state` added, and
:func:`~contactmp.solvers.nlp.solve.solve_program` reads the bounds, the start and the parameter values
at every solve while it keeps its IPOPT objects in the program's cache (they are built again only
when the program's structure changes). Moving the initial state is therefore two bound updates, and
every re-solve, warm or cold, uses the same IPOPT objects (building them costs about as much as a
short solve). Parameters would do as well (a constraint ``q_0 - p = 0`` with ``p`` a
:meth:`Program.add_parameters` handle: constraints may depend on parameters), but the rows with
numeric bounds are what the transcription already builds, so any task built with
``set_initial_state(q0, v0)`` can recede as it is.

Measured (benchmarks/receding_horizon.py, quick tasks, pyramid, Scholtes, shifts 1-4, two runs):
the box's warm re-solves take a median 21 IPOPT iterations against 172 cold, median cold time /
warm time 8.4 and 7.7; the hopper's 512 against 938, 2.7 and 2.3 (at the fourth shift the warm
re-solve took 1,897 iterations against 607). The hopper's warm re-solves also stay near the first
plan's local optimum (costs 17.9-23.2 against 13.6-24.4 cold). On the hopper the warm re-solve's
first relaxed NLP takes 300-750 IPOPT iterations and its active-set polish 75-200; that polish NLP
takes 180-200 iterations even when started at its own answer without multipliers, 23 with them.

Solo12 3D walk (``--system solo12``: the cito-quadruped study's task and options, elastic l1 with
:func:`warm_changes`' ``rho0 = rho_max / rho_factor``, every solve verified at complementarity
1e-6, shifts 1-3, on the loaded 2-core machine): warm re-solves 33, 25, 45 IPOPT iterations and
2.4, 2.6, 6.0 s against cold 486, 539, 2,614 and 61, 143, 312 s; ratios 25, 55, 52 (median 52);
every solve verified. (With ``rho0 = rho_max``: 16, 12, 13 iterations against 1,195, 581, 1,467,
ratios 90, 51, 151, before the study's options changed; with those options the third warm
re-solve ended at complementarity 2.8e-8, short of the library's 1e-8.)

Warm starts here are primal only: :func:`~contactmp.solvers.nlp.solve.solve_program` takes no starting
multipliers and its :class:`~contactmp.result.Result` returns none (``warm_start_duals`` only
passes multipliers between the NLPs of one homotopy).
"""
from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError
from contactmp.program import Constraint, Variables
from contactmp.result import Status
from contactmp.transcriptions.contact_implicit import ContactImplicitTO, TOResult
from contactmp.solvers.nlp import WARM_START  # re-exported (defined here before time steps used it too)
from contactmp.validate import float_vector

__all__ = ["RecedingHorizon", "ShiftRecord", "WARM_START", "warm_changes", "shift_indices"]


def warm_changes(strategy: str, options: Any) -> dict[str, Any]:
    """The default changes of a warm re-solve for ``strategy`` with the cold ``options``
    (:class:`~contactmp.solvers.nlp.solve.NLPOptions`): for ``"elastic_l1"`` the homotopy starts one
    penalty step below its end, ``rho0 = rho_max / rho_factor`` (IPOPT's own start and barrier),
    which leaves it one NLP at ``rho_max`` when the first answer is not complementary to
    ``comp_tol``; for the other strategies :data:`WARM_START`. Solo12 3D walk
    (``benchmarks/receding_horizon.py --system solo12``, elastic l1, the study's options with
    ``resolve_at_last``), shifts 1-3, IPOPT iterations: at ``rho0 = rho_max`` 19, 13, 36, the third
    ending at complementarity 2.8e-8 (not solved; the active-set polish added 200 iterations and
    did not mend it); at ``rho_max / 10`` 33, 25, 70, all solved; at ``rho_max / 100`` 33, 25, 239;
    cold 693, 791, 1,216. Earlier (before ``resolve_at_last``), from ``rho0 = 1e5`` the NLPs took
    14, 11, 10, 10 iterations but the re-solves at ``tol`` of the loose answers 379 and 1,128;
    with WARM_START's small bound push (``1e-8``) added, 175 iterations ending in IPOPT's
    Error_In_Step_Computation."""
    if strategy == "elastic_l1":
        return {"rho0": float(options.rho_max) / float(options.rho_factor)}
    return dict(WARM_START)


@dataclass
class ShiftRecord:
    """One solve of a :class:`RecedingHorizon`: ``shift`` (knots moved on since the first solve),
    ``warm`` (from the shifted plan, with :data:`WARM_START`) or cold (from
    :meth:`ContactImplicitTO.initial_guess`), ``status``, ``objective``, ``comp_violation``,
    ``constraint_violation``, IPOPT ``iterations``, ``time_s`` (the solver's time, the
    B-stationarity certificate excluded) and ``wall_s`` (the whole call, certificate included)."""

    shift: int
    warm: bool
    status: Status
    objective: float
    comp_violation: float
    constraint_violation: float
    iterations: int
    time_s: float
    wall_s: float

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``status`` as its value)."""
        return {"shift": self.shift, "warm": self.warm, "status": self.status.value, "objective": self.objective,
                "comp_violation": self.comp_violation, "constraint_violation": self.constraint_violation,
                "iterations": self.iterations, "time_s": self.time_s, "wall_s": self.wall_s}


def shift_indices(to: ContactImplicitTO) -> np.ndarray:
    """The index map of a one-knot shift of ``to``'s variable vector: ``x_new = x[idx]``.

    ``q_k``, ``v_k`` (k < N) take knot ``k + 1``'s, ``u_k`` and the variables of step ``k``'s blocks
    (``step{k}`` and its sub-blocks ``step{k}/...``, matched by name) take step ``k + 1``'s (k < N - 1);
    ``q_N``, ``v_N``, ``u_{N-1}`` and step ``N - 1``'s variables, and any variable outside these
    knots, keep their own."""
    prog, N = to.program, to.N
    idx = np.arange(prog.n_x)

    def move(dst: Variables, src: Variables) -> None:
        if dst.size != src.size:
            raise InputError("to", f"cannot shift '{src.name}' ({src.size}) onto '{dst.name}' ({dst.size})")
        idx[dst.index] = np.arange(src.index.start, src.index.stop)

    for k in range(N):
        move(to.q[k], to.q[k + 1])
        move(to.v[k], to.v[k + 1])
    for k in range(N - 1):
        move(to.u[k], to.u[k + 1])
    states = {id(h) for h in (*to.q, *to.v, *to.u)}
    per_step = [_step_variables(to, k, states) for k in range(N)]
    for k in range(N - 1):
        here, there = per_step[k], per_step[k + 1]
        if here.keys() != there.keys():
            raise InputError("to", f"steps {k} and {k + 1} have different variables: "
                                   f"{sorted(here)} against {sorted(there)}")
        for name, h in here.items():
            move(h, there[name])
    return idx


def _step_variables(to: ContactImplicitTO, k: int, skip: set[int]) -> dict[str, Variables]:
    """Step ``k``'s variables other than the states and inputs, by name with the step's prefix
    replaced by ``step*`` (so that step ``k``'s and step ``k + 1``'s can be matched)."""
    pattern = re.compile(rf"^step{k}(?=/|$)")
    out: dict[str, Variables] = {}
    for name, blk in to.program.blocks.items():
        if not pattern.match(name):
            continue
        for h in blk.variables:
            if id(h) not in skip:
                out[pattern.sub("step*", h.name)] = h
    return out


class RecedingHorizon:
    """Receding-horizon re-solves of the task ``to`` (see the module docstring).

    Parameters
    ----------
    to : a :class:`ContactImplicitTO` whose initial state was set with ``set_initial_state(q0, v0)``
        (both rows, ``initial_q`` and ``initial_v``, are needed: the state of a re-solve is ``(q, v)``).
    backend, strategy : as for :meth:`ContactImplicitTO.solve`.
    options, overrides : the :class:`~contactmp.solvers.nlp.solve.NLPOptions` of every solve (the task's).
    warm : the changes of a warm re-solve (default :func:`warm_changes` of the strategy: :data:`WARM_START`,
        or ``rho0 = rho_max / rho_factor`` for elastic l1; ``{}``: the same options as a
        cold solve).

    ``plan`` is the current plan (the last kept solve), ``shift`` the number of knots moved on since
    the first solve (the plan starts at time ``shift * h`` of the receding task), ``records`` one
    :class:`ShiftRecord` per solve.
    """

    def __init__(self, to: ContactImplicitTO, backend: str = "casadi", strategy: str = "scholtes", *,
                 options: Any = None, warm: dict[str, Any] | None = None, **overrides: Any) -> None:
        from contactmp.solvers.nlp import NLPOptions

        if not isinstance(to, ContactImplicitTO):
            raise InputError("to", f"must be a ContactImplicitTO, got {type(to).__name__}")
        rows = []
        for name in ("initial_q", "initial_v"):
            try:
                rows.append(to.program[name])
            except KeyError:
                rows.append(None)
            if not isinstance(rows[-1], Constraint):
                raise InputError("to", f"has no row '{name}': set its initial state with set_initial_state(q0, v0)")
        self._rows: tuple[Constraint, Constraint] = (rows[0], rows[1])
        self.to, self.backend, self.strategy = to, backend, strategy
        self.options = NLPOptions.build(options, **overrides)
        changes = warm_changes(strategy, self.options) if warm is None else dict(warm)
        if "ipopt" in changes:
            changes["ipopt"] = {**self.options.ipopt, **changes["ipopt"]}
        self.warm_options = NLPOptions.build(self.options, **changes)
        self.index = shift_indices(to)
        self.plan: TOResult | None = None
        self.shift = 0
        self.records: list[ShiftRecord] = []

    # ---------------------------------------------------------------------------- the state
    @property
    def initial_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The imposed initial state ``(q_0, v_0)`` (the rows' bounds)."""
        return self._rows[0].lb.copy(), self._rows[1].lb.copy()

    def set_initial_state(self, q0: ArrayLike, v0: ArrayLike) -> None:
        """Impose ``q_0 = q0``, ``v_0 = v0`` by moving the bounds of the rows ``initial_q`` and
        ``initial_v`` (the program's structure, hence its IPOPT objects, stay), and make
        :meth:`ContactImplicitTO.initial_guess` start from it."""
        s = self.to.system
        self.to.set_initial_state(float_vector(q0, s.n_q, "q0"), float_vector(v0, s.n_v, "v0"))

    def shifted(self, x: ArrayLike) -> np.ndarray:
        """The variable vector ``x`` shifted by one knot (:func:`shift_indices`)."""
        xv = np.asarray(x, dtype=float).ravel()
        if xv.shape != (self.to.program.n_x,):
            raise InputError("x", f"must have {self.to.program.n_x} entries, got {xv.shape}")
        return xv[self.index]

    # ---------------------------------------------------------------------------- solving
    def solve(self, guess: ArrayLike | None = None, *, warm: bool = False, keep: bool = True) -> TOResult:
        """Solve the task at its current initial state from ``guess`` (None:
        :meth:`ContactImplicitTO.initial_guess`, a cold start) with the options (``warm``: with the
        warm-start changes too). ``keep``: make the answer the plan. Never raises on
        non-convergence; the outcome is also appended to ``records``."""
        from contactmp.solvers.multistart import solve_from_guesses

        prog = self.to.program
        x0 = self.to.initial_guess() if guess is None else np.asarray(guess, dtype=float).ravel()
        t0 = time.perf_counter()
        ms = solve_from_guesses(prog, [x0], backend=self.backend, strategy=self.strategy,
                                options=self.warm_options if warm else self.options)
        wall = time.perf_counter() - t0
        starts = [{**r, "status": Status(r["status"])} for r in ms.starts]
        traj = dataclasses.replace(self.to.trajectory(ms.best_result), starts=starts)
        res = traj.result
        self.records.append(ShiftRecord(self.shift, bool(warm), traj.status, traj.objective, traj.comp_violation,
                                        traj.constraint_violation, int(res.iterations), float(res.time_s), wall))
        if keep:
            self.plan = traj
        return traj

    def advance(self) -> TOResult:
        """Move on one knot: impose the plan's ``(q_1, v_1)`` as the initial state and solve from the
        plan shifted by one knot, warm (:meth:`solve` with ``warm=True``); the answer becomes the
        plan. The plan must be solved (InputError otherwise: a failed plan's ``q_1`` is no state to
        start from)."""
        if self.plan is None:
            raise InputError("plan", "there is no plan yet: solve() first")
        if self.plan.status is not Status.SOLVED:
            raise InputError("plan", f"the last solve ended {self.plan.status.value}; advance needs a solved plan")
        x = self.plan.result.x
        self.set_initial_state(self.plan.q[1], self.plan.v[1])
        self.shift += 1
        return self.solve(self.shifted(x), warm=True)
