"""Contact-implicit trajectory optimization by direct transcription (Posa-style, all steps in one MPCC).

The decision variables are the states ``q_k`` (k = 0..N), ``v_k`` (k = 0..N), the inputs ``u_k``
(k = 0..N-1) and, per step, the impulses of the contact block. Each step k is exactly the step of
:class:`~contactmp.transcriptions.time_stepping.TimeStepping` with every quantity evaluated at the
step's own variables ``q_k``:

    M(q_k) (v_{k+1} - v_k) = h (B(q_k) u_k - h(q_k, v_k)) + Jn(q_k)^T p_n + (friction impulses)
    0 <= p_n   _|_  phi(q_k) / h + Jn(q_k) v_{k+1} >= 0
    (friction law of the formulation, at the velocity v_{k+1})
    q_{k+1} = q_k + h qdot(q_k, v_{k+1})

with the contact law of the formulation (a name of the registry,
:mod:`contactmp.formulations.base`, or a configured formulation object): ``"pyramid"`` (the k-gon
circumscribing Coulomb's disk), ``"cone"`` (Coulomb's disk in its smooth disk form),
``"compliant"`` (Drumwright's compliant cone QP through its KKT conditions; no ``phi / h`` gap
stabilization, so boundary states must be at the spring's depth), ``"nmdp"`` (Pan and Hauser's
backward-Euler maximal-dissipation step through its KKT conditions; the formulation owns
``q_{k+1}``, its :attr:`~contactmp.formulations.base.Formulation.backward_euler`) and ``"mdp"`` (the
linearized MDP frozen at ``q_k``). Each step is the formulation's
:meth:`~contactmp.formulations.base.Formulation.add_step` block, the same block
:class:`~contactmp.transcriptions.time_stepping.TimeStepping` solves one at a time.

Every block is fed with the step's variables ``q_k, v_k, u_k`` (and ``q_{k+1}`` for a backward-Euler
formulation); its ``v_next`` variables *are* ``v_{k+1}``. Every contact enters every step
(TimeStepping with ``active_gap = inf``; for contacts with ``phi <= active_gap`` the two coincide).
The quaternion renormalization of TimeStepping's 3-D bodies is not part of the transcription.

Force at a distance: the velocity-level side ``phi(q_k) / h + Jn(q_k) v_{k+1}`` is the gap at the
step's end only to first order in ``h``, so a plan's impulse can act while ``phi(q_{k+1}) > 0``
(measured on the cito tasks: up to 12 cm on the hopper, 3-12 mm on the two-link arm and the
two-finger hand). :meth:`ContactImplicitTO.force_gap` reports the largest gap at which a plan's
force acts; the pyramid's and the cone's option ``gap="position"`` (the side ``phi(q_{k+1}) / h``)
removes it (<= 3e-13 m on the same tasks, at no extra solve time; the cito studies use it). It is
not this class's default: the transcription takes no formulation options of its own, and
:class:`~contactmp.transcriptions.time_stepping.TimeStepping` with the same formulation object
replays the plan (a position-gap step goes to the NLP route instead of Lemke or fc3d).

The whole program is a :class:`~contactmp.program.Program` (``.program``), solved with
:func:`~contactmp.solvers.nlp.solve.solve_program` from one or several seeded initial guesses; its Pyomo
twin is :meth:`ContactImplicitTO.to_pyomo`.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError
from contactmp.formulations.base import Formulation, Step, StepBlock, for_system
from contactmp.models.symbolic import ContactSystem
from contactmp.program import Program, Variables, largest_residual
from contactmp.result import Result, Status
from contactmp.stages import StageGroup, StageTemplate

__all__ = ["ContactImplicitTO", "TOResult"]


@dataclass
class TOResult:
    """The outcome of :meth:`ContactImplicitTO.solve` (the best start's trajectory).

    ``t`` (N+1), ``q`` (N+1, n_q), ``v`` (N+1, n_v), ``u`` (N, n_u), impulses ``p_n``, ``p_t``,
    ``p_o`` (N, n_c; ``p_o = 0`` for planar systems), for either formulation;
    ``status`` and ``objective`` of the best start; ``comp_violation`` is
    ``max |min(a_i, b_i)|`` over every complementarity pair, ``constraint_violation`` the scaled
    violation of the equality/inequality rows (both from :meth:`Program.residuals`). ``starts``
    records every start (index, status, objective, violations, IPOPT iterations, time);
    ``best`` is the start index of the chosen start (``starts[j]["start"]``, not a position);
    ``result`` its :class:`~contactmp.result.Result` and ``results`` every start's, in the order of
    ``starts``.
    """

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    u: np.ndarray
    p_n: np.ndarray
    p_t: np.ndarray
    p_o: np.ndarray
    status: Status
    objective: float
    comp_violation: float
    constraint_violation: float
    best: int
    starts: list[dict[str, Any]] = field(default_factory=list)
    result: Result | None = field(default=None, repr=False)
    results: list[Result] = field(default_factory=list, repr=False)

    @property
    def success(self) -> bool:
        """True when the best start's answer passed the independent checks."""
        return self.status is Status.SOLVED

    @property
    def n_solved(self) -> int:
        """Number of starts that ended ``solved``."""
        return sum(s["status"] is Status.SOLVED for s in self.starts)


class ContactImplicitTO:
    """Contact-implicit trajectory optimization of ``system`` over ``N`` steps of length ``h``.

    Parameters
    ----------
    system : ContactSystem
    N : number of steps (>= 1).
    h : step length (s), > 0.
    formulation : a registered name (``"pyramid"``, ``"cone"``, ``"compliant"``, ``"nmdp"``,
        ``"mdp"``, or one registered by the user) or a configured
        :class:`~contactmp.formulations.base.Formulation`.
    facets : shorthand for the ``facets`` option (pyramid; compliant with ``friction="pyramid"``).
    stages : declare the N knots as one :class:`~contactmp.stages.StageGroup` (checked), so that
        IPOPT's derivatives can be built from one knot (NLPOptions ``derivatives``); it changes no
        row of the program.
    lift_sides : give every complementarity side of the knots that is not a variable a variable
        of its own (``>= 0``, with the row ``s = side``; :attr:`Program.lift_sides`): the MPCC
        strategies' products and penalties then involve variables only, and the robot's
        expressions stay in the knots' rows (with ``stages``, one copy of their derivatives). A
        different but equivalent program: more variables, the same solutions.
    gap_rows : add ``phi(q_{k+1}) >= 0`` at every knot (rows ``gap{k+1}``). The velocity-level
        contact condition ``phi(q_k) / h + Jn(q_k) v_{k+1} >= 0`` holds ``phi(q_{k+1}) >= 0`` only
        to first order in ``h``: curved motion can end a step up to ``O(h^2 |v|^2)`` below the
        ground (Solo12 walk starts: 4e-5 m). The rows keep every knot on or above it; each step
        is still a time-stepping step, the rows only exclude trajectories that penetrate. The
        formulations' option ``gap="position"`` replaces the contact side by ``phi(q_{k+1}) / h``
        instead of adding a row beside it (no nearly parallel rows; IPOPT handles it better).
    model_parameters : names of model parameters (``"mu"``; the compliant gains) held as Program
        parameters ``param/<name>`` with one value per contact (the system's or formulation's
        values), read by every step: a solution can then be differentiated by them
        (:meth:`sensitivity`, ``dx_dp``) and they can be changed without a rebuild.
    **options : the formulation's options (with a name): ``stiffness``, ``damping``,
        ``tangential_damping``, ``friction``, ``associated`` for ``"compliant"``; ``vertices``,
        ``stiffness``, ``relax``, ``radius`` for ``"nmdp"`` / ``"mdp"``; ...

    Handles: ``q[k]``, ``v[k]`` (k = 0..N) and ``u[k]`` (k = 0..N-1) are
    :class:`~contactmp.program.Variables` of ``.program``; ``steps[k]`` (k = 0..N-1) the step
    blocks (:class:`~contactmp.formulations.base.StepBlock`: ``impulses(x)``, ``modes(x)``,
    ``handles``, and the formulation's own fields such as ``p_n``, ``beta``, ``w``, ``gamma``).
    """

    def __init__(self, system: ContactSystem, N: int, h: float, formulation: str | Formulation = "pyramid",
                 facets: int | None = None, *, stages: bool = True, lift_sides: bool = False,
                 gap_rows: bool = False, model_parameters: Sequence[str] = (), **options: Any) -> None:
        if not isinstance(N, (int, np.integer)) or isinstance(N, bool) or N < 1:
            raise InputError("N", f"must be an integer >= 1, got {N!r}")
        self.formulation = for_system(formulation, system, h, facets, **options)
        from contactmp.formulations.step_sensitivity import model_parameter_values

        #: model parameters held as Program parameters ``param/<name>`` (one value per contact, at
        #: the system's or formulation's values): every step reads them, so a solution can be
        #: differentiated by them (:meth:`sensitivity`, ``dx_dp``) and they can be changed without
        #: a rebuild (``self.program["param/mu"].value = ...``)
        self.model_parameters = model_parameter_values(self.formulation, system, np.asarray(system.q_nominal, float),
                                                       list(model_parameters), field="model_parameters")
        self.system, self.N, self.h = system, int(N), float(h)
        self.program = Program("contact_implicit_to")
        self.q: list[Variables] = []
        self.v: list[Variables] = []
        self.u: list[Variables] = []
        self.steps: list[StepBlock] = []
        self._q0: np.ndarray | None = None
        self._v0: np.ndarray | None = None
        self._qf: np.ndarray | None = None
        self._vf: np.ndarray | None = None
        self._declare_stages = bool(stages)
        self._lift_sides = bool(lift_sides)
        self._gap_rows = bool(gap_rows)
        #: :meth:`initial_guess` also sets the inputs and normal impulses that carry the guessed
        #: motion (:meth:`_support`); off by default (the guess of the studies before it)
        self.support_guess = False
        self._build()

    # ------------------------------------------------------------------------------ building
    def _build(self) -> None:
        s, prog = self.system, self.program
        self._qdot_jac = ca.Function("qdot_jac", [s.q], [ca.jacobian(s.qdot, s.v)])  # qdot is linear in v
        self._phi = ca.Function("phi", [s.q], [s.phi])  # the gap rows' phi(q_{k+1})
        prog.lift_sides = self._lift_sides  # the knots' pairs only: cleared again after the knots
        self._params = {name: prog.add_parameters(f"param/{name}", s.n_c, val).sym
                        for name, val in self.model_parameters.items()}
        shared = np.arange(prog.n_p)  # the model parameters: every knot's first parameters
        self.q.append(prog.add_variables("q0", s.n_q, init=s.q_nominal, block="state0"))
        self.v.append(prog.add_variables("v0", s.n_v, block="state0"))
        x_index, p_index, g_index = [], [], []
        for k in range(self.N):
            start = (prog.n_x, prog.n_p, prog.n_g)
            self._add_knot(prog, k, self.q[k], self.v[k], self.u, self.steps, self.q, self.v, self._params)
            local = np.r_[self.q[k].index.start:self.q[k].index.stop, self.v[k].index.start:self.v[k].index.stop,
                          start[0]:prog.n_x]
            x_index.append(local), p_index.append(np.r_[shared, np.arange(start[1], prog.n_p)])
            g_index.append(np.arange(start[2], prog.n_g))
        prog.lift_sides = False
        if self._declare_stages:
            self._declare_knot_stages(x_index, p_index, g_index)
        # what the build declared: everything after it is the user's (carried to the pyramid start)
        self._built = {"n_x": prog.n_x, "n_p": prog.n_p, "n_g": prog.n_g, "n_comp": prog.n_comp,
                       "n_cones": len(prog.cones), "n_groups": len(prog.stage_groups), "cost_free": prog.f.is_zero(),
                       "lbx": prog.lbx, "ubx": prog.ubx, "lbg": prog.lbg, "ubg": prog.ubg}

    def _add_knot(self, prog: Program, k: int, qk: Variables, vk: Variables, inputs: list[Variables],
                  steps: list[StepBlock], qs: list[Variables], vs: list[Variables],
                  params: dict[str, ca.SX] | None = None) -> None:
        """Step ``k`` from ``(q_k, v_k)``: the input ``u_k``, the formulation's block (its
        ``v_{k+1}``), ``q_{k+1}`` and the kinematics row ``q_{k+1} = q_k + h qdot(q_k, v_{k+1})``
        (or the formulation's own, backward Euler), appended to ``inputs``, ``steps``, ``qs``, ``vs``."""
        s, hs = self.system, self.h
        uk = prog.add_variables(f"u{k}", s.n_u, block=f"input{k}")
        inputs.append(uk)
        implicit = self.formulation.backward_euler
        q_next = prog.add_variables(f"q{k + 1}", s.n_q, init=s.q_nominal, block=f"state{k + 1}") if implicit else None
        step = Step(s, hs, qk.sym, vk.sym, uk.sym, f"step{k}", q_next=None if q_next is None else q_next.sym,
                    params=params or None)
        blk = self.formulation.add_step(prog, step)
        steps.append(blk)
        vs.append(blk.v_next)
        if q_next is None:
            q_next = prog.add_variables(f"q{k + 1}", s.n_q, init=s.q_nominal, block=f"state{k + 1}")
        qs.append(q_next)
        prog.add_constraint(q_next.sym - qk.sym - hs * step.qdot(qk.sym, blk.v_next.sym), 0.0, 0.0,
                            name=f"kinematics{k}", block=f"step{k}")
        if self._gap_rows:
            prog.add_constraint(self._phi(q_next.sym), 0.0, math.inf, name=f"gap{k + 1}", block=f"step{k}")

    def _declare_knot_stages(self, x_index: list[np.ndarray], p_index: list[np.ndarray],
                             g_index: list[np.ndarray]) -> None:
        """Declare the N knots as one :class:`~contactmp.stages.StageGroup`: the template is knot 0
        built again in a program of its own (its variables ``q_k, v_k`` then those the knot creates,
        in the same order as in every knot of the transcription; checked by the Program)."""
        s = self.system
        tmpl = Program("knot")
        tmpl.lift_sides = self._lift_sides
        params = {name: tmpl.add_parameters(f"param/{name}", s.n_c, val).sym for name, val in self.model_parameters.items()}
        qs = [tmpl.add_variables("q0", s.n_q)]
        vs = [tmpl.add_variables("v0", s.n_v)]
        self._add_knot(tmpl, 0, qs[0], vs[0], [], [], qs, vs, params)
        sizes = {(len(a), len(b), len(c)) for a, b, c in zip(x_index, p_index, g_index)}
        if sizes != {(tmpl.n_x, tmpl.n_p, tmpl.n_g)}:
            return  # knots of different sizes (a user formulation that varies with k): no template
        template = StageTemplate(f"{self.formulation.name or 'formulation'}_knot", tmpl.x, tmpl.p, tmpl.g)
        self.program.add_stage_group(StageGroup(template, np.array(x_index), np.array(p_index).reshape(self.N, -1),
                                                np.array(g_index)))  # checked at random points

    def to_pyomo(self, x0: ArrayLike | None = None) -> Any:
        """The Pyomo twin of the whole transcription: ``self.program.to_pyomo(x0)``, a
        ``pyomo.environ.ConcreteModel`` with one indexed ``Var`` per handle (``q0``, ``v0``, ``u0``,
        ``step0/p_n``, ...; their bounds and initial values), the objective, one indexed
        ``Constraint`` per row group (dynamics, kinematics, friction law, boundary conditions) and
        one ``pyomo.mpec`` ``Complementarity`` per pair group; ``model.contactmp_names`` maps handle
        names to component names. Built from the current program, so call it after setting the
        boundary conditions, bounds and costs.

        The variables start at ``x0`` (a vector of ``program.n_x`` finite numbers; InputError naming
        ``x0``) or, when None, at :meth:`initial_guess` without noise: start 0 of
        :meth:`solve` with ``pyramid_start=False`` (the cone's default begins with the pyramid's
        plan, which the twin does not run), so a solver started from the model's values starts where
        the CasADi route does (from the
        program's stored start instead, the interpolated motion's ``q_k``, ``v_k`` and cone guesses
        would be missing, and an MPCC strategy from there ends elsewhere or locally infeasible: the
        arm-push task of ``case_studies/_cito.py``). A start stored with ``to.program.x0 = guess``
        is what ``to.program.to_pyomo()`` writes; here pass it as ``to.to_pyomo(guess)`` (the
        default, like :meth:`solve`'s start 0, overwrites the ``q_k``, ``v_k`` and cone entries of the
        stored start). Solve it with ``pyomo.mpec`` transformations
        and IPOPT, or untransformed with ``SolverFactory("contactmp_ipopt")`` and an MPCC strategy
        (the task's :func:`~contactmp.solvers.nlp.solve.solve_program` options alike); read it back
        with :func:`contactmp.pyomo_bridge.program_x`::

            model = to.to_pyomo()                       # starts at to.initial_guess()
            pyo.SolverFactory("contactmp_ipopt").solve(model, options={"strategy": "scholtes"})
            x = program_x(model, to.program)            # to.program.value(to.u[0], x), residuals(x)
        """
        return self.program.to_pyomo(self.initial_guess() if x0 is None else x0)

    def _state(self, field_name: str, x: ArrayLike, n: int) -> np.ndarray:
        return self.system._vec(field_name, x, n)

    def set_initial_state(self, q0: ArrayLike, v0: ArrayLike | None = None) -> None:
        """Constrain ``q_0 = q0`` and, when given, ``v_0 = v0``. Called again, it moves the bounds
        of the rows it made (``initial_q``, ``initial_v``): the program's structure, and so the
        IPOPT objects built for it, stay (what a receding-horizon re-solve needs)."""
        self._q0 = self._state("q0", q0, self.system.n_q)
        self._initial_row("initial_q", self.q[0].sym, self._q0)
        if v0 is not None:
            self._v0 = self._state("v0", v0, self.system.n_v)
            self._initial_row("initial_v", self.v[0].sym, self._v0)

    def _initial_row(self, name: str, sym: ca.SX, value: np.ndarray) -> None:
        """The row ``sym = value`` called ``name``: added, or its bounds moved when it exists."""
        try:
            row = self.program[name]
        except KeyError:
            self.program.add_constraint(sym, value, value, name=name, block="boundary")
            return
        row.lb, row.ub = value.copy(), value.copy()

    def set_final_state(self, qf: ArrayLike, vf: ArrayLike | None = None, *,
                        q_indices: ArrayLike | None = None) -> None:
        """Constrain ``q_N = qf`` (only the entries ``q_indices`` when given) and, when given,
        ``v_N = vf``. ``qf`` always has all ``n_q`` entries (the free ones still shape
        :meth:`initial_guess`).

        Constrain only what the contact rows leave free: for a body resting on the ground the
        height and tilt at ``q_N`` already follow from the last step's non-penetration rows, and
        the four quaternion entries of a 3-D body carry three degrees of freedom, so fixing all of
        ``q_N`` gives dependent equality rows (a rank-deficient constraint Jacobian), which IPOPT
        handles badly. Likewise ``v_N = vf`` fixes every contact velocity of the last step, which
        makes the cone block's rows ``u_T + gamma w = 0`` dependent at sticking contacts.
        """
        nq = self.system.n_q
        self._qf = self._state("qf", qf, nq)
        if q_indices is None:
            idx = list(range(nq))
        else:
            arr = np.asarray(q_indices)
            if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer) \
                    or arr.min() < 0 or arr.max() >= nq or np.unique(arr).size != arr.size:
                raise InputError("q_indices", f"must be distinct integers in [0, {nq}), got {q_indices!r}")
            idx = [int(i) for i in arr]
        target = self._qf[idx]
        self.program.add_constraint(self.q[-1].sym[idx], target, target, name="final_q", block="boundary")
        if vf is not None:
            self._vf = self._state("vf", vf, self.system.n_v)
            self.program.add_constraint(self.v[-1].sym, self._vf, self._vf, name="final_v", block="boundary")

    def bound_inputs(self, lb: ArrayLike = -math.inf, ub: ArrayLike = math.inf) -> None:
        """Bounds ``lb <= u_k <= ub`` on every input (scalars broadcast; set as variable bounds)."""
        lbv, ubv = _bound_vectors("input", lb, ub, self.system.n_u)
        for uk in self.u:
            uk.lb, uk.ub = lbv.copy(), ubv.copy()
            uk.init = np.clip(uk.init, lbv, ubv)

    def bound_configurations(self, lb: ArrayLike = -math.inf, ub: ArrayLike = math.inf) -> None:
        """Bounds ``lb <= q_k <= ub`` on every configuration ``q_0 .. q_N`` (vectors of ``n_q``,
        scalars broadcast, +-inf for none; for example a robot's joint ranges), as variable bounds."""
        lbv, ubv = _bound_vectors("configuration", lb, ub, self.system.n_q)
        for qk in self.q:
            qk.lb, qk.ub = np.maximum(qk.lb, lbv), np.minimum(qk.ub, ubv)
            if (qk.lb > qk.ub).any():
                raise InputError("lb", f"the bounds leave no configuration for {qk.name}")
            qk.init = np.clip(qk.init, qk.lb, qk.ub)

    def add_quadratic_cost(self, Q: ArrayLike | None = None, R: ArrayLike | None = None,
                           q_ref: ArrayLike | None = None, Qf: ArrayLike | None = None) -> None:
        """Add ``sum_{k<N} [(q_k - q_ref)^T Q (q_k - q_ref) + u_k^T R u_k] + (q_N - q_ref)^T Qf (q_N - q_ref)``.

        ``Q``, ``Qf`` (n_q x n_q) and ``R`` (n_u x n_u) may be given as diagonals; None skips a term.
        """
        s = self.system
        ref = np.zeros(s.n_q) if q_ref is None else self._state("q_ref", q_ref, s.n_q)
        Qm = None if Q is None else _weight("Q", Q, s.n_q)
        Rm = None if R is None else _weight("R", R, s.n_u)
        Qfm = None if Qf is None else _weight("Qf", Qf, s.n_q)
        cost = ca.SX(0.0)
        for k in range(self.N):
            if Qm is not None:
                e = self.q[k].sym - ref
                cost += ca.bilin(ca.DM(Qm), e, e)
            if Rm is not None:
                cost += ca.bilin(ca.DM(Rm), self.u[k].sym, self.u[k].sym)
        if Qfm is not None:
            e = self.q[-1].sym - ref
            cost += ca.bilin(ca.DM(Qfm), e, e)
        self.program.add_cost(cost)

    def minimize_effort(self, weight: float = 1.0) -> None:
        """Add ``weight * h * sum_k ||u_k||^2`` (the control effort)."""
        if not (isinstance(weight, (int, float)) and math.isfinite(weight) and weight >= 0):
            raise InputError("weight", f"must be a finite number >= 0, got {weight!r}")
        self.program.add_cost(weight * self.h * sum(ca.sumsqr(uk.sym) for uk in self.u))

    # ------------------------------------------------------------------------------- solving
    def initial_guess(self, rng: np.random.Generator | None = None, scale: float = 0.1) -> np.ndarray:
        """An initial guess ``x``: ``q_k`` interpolated linearly from the initial to the final
        configuration (or ``q_nominal``), ``v_{k+1}`` the least-squares solution of the
        kinematics ``q_{k+1} = q_k + h qdot(q_k, v_{k+1})`` along it (the constant velocity when
        ``qdot = v``; ``v_0 = v_1``), both ends' velocities replaced by the fixed ones; for every cone
        construct the sliding speeds ``gamma`` and directions ``w = -u_T / |u_T|`` of that motion
        (:meth:`Program.guess_cones`); inputs and impulses at their stored initial values (zero), or
        with :attr:`support_guess` the ones that best carry that motion (:meth:`_support`); then
        the lifted pair sides from that point (:meth:`Program.guess_lifted`, with ``lift_sides``).
        With ``rng`` every entry gets ``scale * N(0, 1)`` noise (then clipped to the bounds)."""
        prog, s = self.program, self.system
        x = prog.x0.copy()
        qa = self._q0 if self._q0 is not None else s.q_nominal
        qb = self._qf if self._qf is not None else qa
        qs = [qa + (qb - qa) * k / self.N for k in range(self.N + 1)]
        for k in range(self.N + 1):
            x[self.q[k].index] = qs[k]
        for k in range(self.N):
            G = np.asarray(self._qdot_jac(qs[k]), dtype=float)
            vel = np.linalg.lstsq(G, (qs[k + 1] - qs[k]) / self.h, rcond=None)[0]
            x[self.v[k + 1].index] = vel
            if k == 0:
                x[self.v[0].index] = vel
        x = prog.guess_cones(x)
        if self._v0 is not None:
            x[self.v[0].index] = self._v0
        if self._vf is not None:
            x[self.v[-1].index] = self._vf
        if self.support_guess:
            x = self._support(x)
        return self._perturbed(prog.guess_lifted(x), rng, scale)

    def _perturbed(self, x: np.ndarray, rng: np.random.Generator | None, scale: float) -> np.ndarray:
        """``x`` plus ``scale * N(0, 1)`` noise from ``rng`` (none when ``rng`` is None), clipped to
        the program's bounds: how every start i >= 1 of :meth:`solve` differs from start 0."""
        if rng is not None:
            x = x + scale * rng.standard_normal(x.size)
        return np.clip(x, self.program.lbx, self.program.ubx)

    def _friction_coefficients(self) -> np.ndarray:
        """The ``mu`` of each contact that the program's rows read now: the Program parameter
        ``param/mu`` when ``"mu"`` is a model parameter (it may have been changed since the build),
        else the system's."""
        if "mu" in self.model_parameters:
            return np.asarray(self.program["param/mu"].value, dtype=float).ravel()
        return np.broadcast_to(np.asarray(self.system.mu, dtype=float), (self.system.n_c,)).copy()

    def guess_from(self, plan: TOResult, tol: float = 1e-9) -> np.ndarray:
        """An initial guess ``x`` from a plan of the same task, for example the pyramid's plan as the
        start of a cone solve: ``q_k``, ``v_k``, ``u_k`` and the impulses ``p_n``, ``p_t``, ``p_o`` of
        ``plan`` wherever this transcription's steps have them as variables (the pyramid's facet
        impulses are not rebuilt); for every cone construct the sliding speed ``gamma = ||u_T||``
        and direction ``w = -u_T / ||u_T||`` of the plan's motion (:meth:`Program.guess_cones`) and,
        at a contact that does not slide (``gamma <= tol``) and carries force, the direction of its
        friction ``w = (p_t, p_o) / (mu p_n)`` (``mu`` as the rows read it: ``param/mu`` when it is a
        model parameter; a direction outside the unit disk is scaled onto it); then the lifted pair
        sides (:meth:`Program.guess_lifted`). In the plane the pyramid with its two facets is the
        Coulomb law, so its plan is then a feasible point of the cone's program with the same cost.
        Variables the plan does not give keep :meth:`initial_guess`'s values. The result is clipped
        to the bounds."""
        s, prog, N = self.system, self.program, self.N
        if not isinstance(plan, TOResult):
            raise InputError("plan", f"must be a TOResult of a transcription with the same system, N and h, "
                                     f"got {type(plan).__name__}")
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0.0 <= tol < math.inf:
            raise InputError("tol", f"must be a finite number >= 0, got {tol!r}")
        for name, shape in (("t", (N + 1,)), ("q", (N + 1, s.n_q)), ("v", (N + 1, s.n_v)), ("u", (N, s.n_u)),
                            ("p_n", (N, s.n_c)), ("p_t", (N, s.n_c)), ("p_o", (N, s.n_c))):
            arr = np.asarray(getattr(plan, name), dtype=float)
            if arr.shape != shape:
                raise InputError(f"plan.{name}", f"must have shape {shape} (this transcription's system, "
                                                 f"N = {N}), got {arr.shape}")
            bad = np.argwhere(~np.isfinite(arr))
            if bad.size:
                raise InputError(f"plan.{name}", f"must be finite, entry {tuple(int(i) for i in bad[0])} is "
                                                 f"{arr[tuple(bad[0])]}")
        if not np.allclose(plan.t, self.h * np.arange(N + 1), rtol=1e-12, atol=1e-12 * self.h * N):
            raise InputError("plan.t", f"must be the times h k of this transcription (h = {self.h}), "
                                       f"got steps {np.unique(np.round(np.diff(plan.t), 12))}")
        if s.planar and np.any(np.asarray(plan.p_o) != 0.0):
            raise InputError("plan.p_o", "must be 0 for a planar system (it has no o direction)")
        x = self.initial_guess()
        for k in range(N + 1):
            x[self.q[k].index], x[self.v[k].index] = plan.q[k], plan.v[k]
        for k, blk in enumerate(self.steps):
            x[self.u[k].index] = plan.u[k]
            for name in ("p_n", "p_t", "p_o"):
                if name in blk.handles and blk.handles[name].size == s.n_c:
                    x[blk.handles[name].index] = getattr(plan, name)[k]
        x = prog.guess_cones(x)
        mu = self._friction_coefficients()
        for k, blk in enumerate(self.steps):
            if "w" not in blk.handles or "gamma" not in blk.handles or blk.handles["gamma"].size != s.n_c:
                continue
            w = prog.value(blk.handles["w"], x).reshape(-1, s.n_c)
            gamma = prog.value(blk.handles["gamma"], x)
            force = np.vstack([plan.p_t[k], plan.p_o[k]])[:w.shape[0]]
            pn = plan.p_n[k]
            stick = (gamma <= tol) & (pn > tol) & (mu > 0)
            if stick.any():
                d = force[:, stick] / (mu[stick] * pn[stick])
                w[:, stick] = d / np.maximum(1.0, np.linalg.norm(d, axis=0))
                x[blk.handles["w"].index] = w.ravel()
        x = prog.guess_lifted(x)
        return np.clip(x, prog.lbx, prog.ubx)

    def _support(self, x: np.ndarray) -> np.ndarray:
        """``x`` with the inputs ``u_k`` and normal impulses ``p_n`` of every step that has them
        (handle ``"p_n"``) set to the bounded least-squares solution of the step's dynamics along
        the guessed motion,

            min || M (v_{k+1} - v_k) + h h(q_k, v_k) - h B u_k - sum_j (Jn_j + mu_j Jf_j w_j)^T p_n,j ||
            s.t. u_k within its bounds, p_n >= 0, and p_n = 0 at contacts with phi(q_k) > 1e-3,

        where ``w_j`` is the guessed friction direction of a cone block (``"w"``; its friction
        impulses are set to ``mu p_n w``, so that its friction rows hold) and 0 otherwise (friction
        impulses stay 0): the forces that carry the guessed motion (a standing robot's weight)
        instead of none (:func:`~contactmp.solvers.cone_qp.qp.bounded_least_squares`)."""
        from contactmp.solvers.cone_qp import bounded_least_squares

        s, prog, h = self.system, self.program, self.h
        mu = self._friction_coefficients()
        for k, blk in enumerate(self.steps):
            if "p_n" not in blk.handles or blk.handles["p_n"].size != s.n_c:
                continue
            q, v, vn = x[self.q[k].index], x[self.v[k].index], x[self.v[k + 1].index]
            Jn, Jt, Jo = s.eval_J(q)
            cols = Jn.T.copy()
            w = None
            if "w" in blk.handles:
                w = prog.value(blk.handles["w"], x).reshape(-1, s.n_c)
                cols += mu * Jt.T * w[0] + (mu * Jo.T * w[1] if w.shape[0] > 1 else 0.0)
            A = np.hstack([h * s.eval_B(q), cols])
            b = s.eval_M(q) @ (vn - v) + h * s.eval_h(q, v)
            free = s.eval_phi(q) > 1e-3
            lb = np.concatenate([self.u[k].lb, np.zeros(s.n_c)])
            ub = np.concatenate([self.u[k].ub, np.where(free, 0.0, np.inf)])
            sol = bounded_least_squares(A, b, lb, ub)
            x[self.u[k].index] = sol[:s.n_u]
            pn = sol[s.n_u:]
            x[blk.handles["p_n"].index] = pn
            if w is not None:
                for i, name in enumerate(("p_t", "p_o")):
                    if name in blk.handles and i < w.shape[0]:
                        x[blk.handles[name].index] = mu * pn * w[i]
        return x

    def solve(self, backend: str = "casadi", strategy: str = "scholtes", starts: int = 1, seed: int = 0,
              *, scale: float = 0.1, start_indices: ArrayLike | None = None, options: Any = None,
              plan: TOResult | None = None, pyramid_start: bool | None = None, **overrides: Any) -> TOResult:
        """Solve the transcription from ``starts`` initial guesses and return the best.

        Start 0 is :meth:`initial_guess` without noise (with ``plan``: :meth:`guess_from` the plan,
        for example a pyramid plan seeding a cone solve; with ``pyramid_start``, see below); start
        i >= 1 adds ``scale * N(0, 1)``
        noise from ``numpy.random.default_rng([seed, i])`` (then clipped to the bounds).
        ``start_indices`` (distinct integers >= 0) runs exactly those starts instead of
        ``0 .. starts-1`` (so start ``i`` can be run on its own, for example by a parallel
        multistart). Every start's outcome is recorded in ``TOResult.starts``; the best is the
        solved start of least objective, else the start of least ``max(constraint, comp_min)``
        violation. ``options`` / ``overrides`` go to :func:`~contactmp.solvers.nlp.solve.solve_program`.
        Never raises on non-convergence.

        ``pyramid_start`` (default: the formulation's
        :attr:`~contactmp.formulations.base.Formulation.pyramid_start`, True for the Coulomb cone,
        off when a ``plan`` is given): start i first solves the pyramid's transcription of the same task
        (:func:`~contactmp.transcriptions.pyramid_start.pyramid_transcription`: every declaration
        made here after the build carried over) from its start i, then this transcription from
        :meth:`guess_from` that plan (no further noise; also when the pyramid's phase did not end
        solved: its last iterate is still a guess). Why: on the contact-implicit tasks, 20 starts
        each, the cone from its own guess converged on 17/20 and 14/20 starts of two Solo12 tasks
        where the pyramid converged on all, and from the pyramid's plan on every start measured (see
        :mod:`~contactmp.transcriptions.pyramid_start`). A start's ``time_s`` and ``iterations``
        are then both phases' sums (each phase has the options' time limits, so a start may take
        twice them), and its record adds the pyramid's ``seed_status``, ``seed_objective``,
        ``seed_time_s``, ``seed_iterations`` and ``pyramid_start`` (``"used"``, ``"used (the
        pyramid's phase ended ...)"``, or why not). With the default, a task whose declarations the
        pyramid cannot carry (a cost on the cone's friction impulses or directions) warns and starts
        from the cone's own guess (every record says why); ``pyramid_start=True`` raises
        :class:`~contactmp.transcriptions.pyramid_start.PyramidStartUnavailable` instead, and
        ``False`` solves the cone alone. ``True`` also runs a pyramid phase before any other
        formulation (compliant, NMDP, MDP: not measured).
        """
        from contactmp.solvers.multistart import solve_from_guesses
        from contactmp.solvers.nlp import NLPOptions
        from contactmp.transcriptions.pyramid_start import PyramidStartUnavailable
        from contactmp.transcriptions.pyramid_start import check_choice as check_pyramid_start

        if start_indices is None:
            if not isinstance(starts, (int, np.integer)) or isinstance(starts, bool) or starts < 1:
                raise InputError("starts", f"must be an integer >= 1, got {starts!r}")
            indices = list(range(int(starts)))
        else:
            arr = np.asarray(start_indices)
            if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 \
                    or np.unique(arr).size != arr.size:
                raise InputError("start_indices", f"must be distinct integers >= 0, got {start_indices!r}")
            indices = [int(i) for i in arr]
        base = None if plan is None else self.guess_from(plan)
        seeded: dict[int, dict[str, Any]] = {}
        from_pyramid: dict[int, np.ndarray | None] = {}
        unavailable = None
        if check_pyramid_start(self, pyramid_start, plan):
            try:
                from_pyramid, seeded = self._pyramid_phase(indices, {
                    "backend": backend, "strategy": strategy, "seed": seed, "scale": scale, "options": options,
                    **overrides})
            except PyramidStartUnavailable as err:
                if pyramid_start:
                    raise
                unavailable = str(err)
                warnings.warn(f"ContactImplicitTO.solve: no pyramid start for {self.formulation.name!r} ({err}); "
                              f"every start begins from its own guess", stacklevel=2)

        def guess(i: int) -> np.ndarray:
            if from_pyramid.get(i) is not None:
                return from_pyramid[i]  # the cone from the pyramid's plan of start i, without noise of its own
            rng = None if i == 0 else np.random.default_rng([int(seed), i])
            return self.initial_guess(rng, scale) if base is None else self._perturbed(base, rng, scale)

        ms = solve_from_guesses(  # options / overrides are solve_program's (NLPOptions), per start
            self.program, guess,
            indices=indices, backend=backend, strategy=strategy, options=NLPOptions.build(options, **overrides))
        records = [{**r, "status": Status(r["status"])} for r in ms.starts]
        for r in records:
            extra = seeded.get(r["start"])
            if extra is not None:
                r.update(extra, time_s=r["time_s"] + extra["seed_time_s"],
                         iterations=r["iterations"] + extra["seed_iterations"])
        if unavailable is not None:
            for r in records:
                r["pyramid_start"] = f"unavailable: {unavailable}"
        return self._trajectory(ms.best_result, records, ms.best, [ms.results.get(r["start"]) for r in ms.starts])

    def _pyramid_phase(self, indices: list[int], solve_args: dict[str, Any]) -> tuple[dict[int, np.ndarray | None],
                                                                                      dict[int, dict[str, Any]]]:
        """Solve the pyramid's transcription of this task (:func:`~contactmp.transcriptions.pyramid_start.
        pyramid_transcription`) from the starts ``indices`` (``solve_args``: :meth:`solve`'s); return
        per start this transcription's guess from the pyramid's plan (:meth:`guess_from`, also when
        that phase did not end solved; None when the plan is not finite) and the pyramid phase's
        fields of the start's record: ``seed_status``, ``seed_objective``, ``seed_time_s``,
        ``seed_iterations`` and ``pyramid_start`` (``"used"``, ``"used (the pyramid's phase ended
        ...)"`` or why the plan could not be used)."""
        from contactmp.transcriptions.pyramid_start import pyramid_transcription

        twin = pyramid_transcription(self)
        first = twin.solve(start_indices=indices, pyramid_start=False, **solve_args)
        guesses, fields = {}, {}
        for rec, res in zip(first.starts, first.results):
            i = int(rec["start"])
            status = Status(rec["status"])
            try:
                guesses[i] = self.guess_from(twin.trajectory(res))
                used = "used" if status is Status.SOLVED else f"used (the pyramid's phase ended {status.value})"
            except InputError as err:
                guesses[i], used = None, f"plan unusable ({err}); the start began from this formulation's own guess"
            fields[i] = {"seed_status": status, "seed_objective": float(rec["objective"]),
                         "seed_time_s": float(rec["time_s"]), "seed_iterations": int(rec["iterations"]),
                         "pyramid_start": used}
        return guesses, fields

    def replay(self, traj: TOResult, tol: float = 1e-12) -> dict[str, Any]:
        """Check ``traj`` against :class:`~contactmp.transcriptions.time_stepping.TimeStepping`
        with the same formulation (every contact active), step by step from its own states:

        * ``step_residual``: the largest residual (scaled row and bound violation,
          ``max |min(a, b)|``; :meth:`Program.residuals`) of the time-stepping step's own Program,
          built from the numbers ``M(q_k), h(q_k, v_k), J(q_k), phi(q_k)`` of each step, at the
          trajectory's values of that step's variables (``v_{k+1}``, impulses, ...; matched by
          name): whether each step of ``traj`` *is* a time-stepping step;
        * ``replay_error``: the largest ``|(q, v)_{k+1} - step(q_k, v_k, u_k)|`` where ``step`` is
          :meth:`TimeStepping.step` solved by its own solver (tolerance ``tol``; inf when a step
          fails);
        * ``nonunique_steps``: the steps where the two differ by more than 1e-6 although
          ``traj``'s values satisfy the step to 1e-6: the step's problem has more than one solution
          and the simulator picked another (the velocity-level scheme lets a foot push within one
          step of the ground, ``p_n > 0`` at ``phi > 0`` with ``phi / h + Jn v+ = 0``, besides free
          flight);
        * ``seeded_replay_error``: the largest difference when each step that differed is solved
          again by the simulator's solver started at the trajectory's values of that step
          (``TimeStepping.step(..., start=...)``, as a simulator warm-started by the plan would:
          it returns the step's solution nearest the start, which the solver verifies on the
          step's own problem, so a step whose solutions form a set returns the plan's member and
          an isolated solution is returned as it is); equal to ``replay_error`` when no step
          differed or the step's solver takes no start (the LCP and cone solvers of linear-gap
          steps: :attr:`Formulation.position_gap` is false);
        * ``seeded_misses``: the steps still more than 1e-6 away when seeded although the plan's
          values solve them, and ``seeded_misses_not_isolated`` those of them where the plan's
          solution is not an isolated one to first order: the linearization of the step's
          conditions on its pieces is singular, or a pair or contact is degenerate
          (:func:`~contactmp.formulations.step_sensitivity.program_sensitivity`); there a solver
          may return a neighbouring solution of the same step.
        """
        from contactmp.transcriptions.time_stepping import TimeStepping

        s = self.system
        ts = TimeStepping(s, self.h, self.formulation, active_gap=math.inf, tol=tol)
        x_to = traj.result.x if traj.result is not None else None
        from contactmp.formulations.step_sensitivity import program_sensitivity

        worst_res, worst_err, worst_seeded, nonunique, misses, explained = 0.0, 0.0, 0.0, [], [], []

        def error(out: Any, k: int) -> float:
            return (math.inf if not out.success else
                    max(float(np.max(np.abs(out.q - traj.q[k + 1]))), float(np.max(np.abs(out.v - traj.v[k + 1])))))

        for k in range(self.N):
            step_res, start = math.inf, None
            if x_to is not None:
                prog = Program("time_step")
                prefix = f"step{k}"
                self.formulation.add_step(prog, Step(s, self.h, traj.q[k], traj.v[k], traj.u[k], prefix))
                x = np.zeros(prog.n_x)
                try:
                    start = {}
                    for var in prog.variables:
                        x[var.index] = self.program.value(self.program[var.name], x_to)
                        start["step" + var.name[len(prefix):]] = x[var.index]  # the simulator's prefix
                    step_res = largest_residual(prog.residuals(x))
                except KeyError:  # a variable of the step that the transcription does not have
                    step_res, start = math.inf, None
            err = seeded = error(ts.step(traj.q[k], traj.v[k], traj.u[k]), k)
            if err > 1e-6 and start is not None and self.formulation.position_gap:
                seeded = error(ts.step(traj.q[k], traj.v[k], traj.u[k], start=start), k)
            if err > 1e-6 and step_res <= 1e-6:
                nonunique.append(k)
            if seeded > 1e-6 and start is not None and step_res <= 1e-6:
                misses.append(k)
                try:
                    sens = program_sensitivity(prog, x)
                    if sens.core.singular or sens.degenerate:
                        explained.append(k)
                except InputError:  # a step Program outside the sensitivity's reach (an objective, ...)
                    pass
            worst_res, worst_err, worst_seeded = max(worst_res, step_res), max(worst_err, err), max(worst_seeded, seeded)
        return {"step_residual": worst_res, "replay_error": worst_err, "nonunique_steps": nonunique,
                "seeded_replay_error": worst_seeded, "seeded_misses": misses, "seeded_misses_not_isolated": explained}

    def force_gap(self, traj: TOResult, impulse_tol: float = 1e-6) -> dict[str, Any]:
        """The largest position-level gap at which a plan's contact force acts: the maximum of
        ``phi_j(q_{k+1})`` over the steps ``k`` and contacts ``j`` whose normal impulse
        ``p_n[k, j] > impulse_tol * max(1, max p_n)`` (friction acts only with it: ``|p_T| <= mu
        p_n``). A rigid contact pushes only when touching, so on a physical plan this is at most
        the solver's tolerance; the velocity-level contact side ``phi(q_k) / h + Jn(q_k) v_{k+1}``
        lets force act while ``phi(q_{k+1}) > 0`` (the linearization of the gap over the step).

        Returns ``{"gap": largest gap (m; -inf when no force acts), "step": k, "contact": j
        (None when no force acts), "impulse": p_n there, "forces": number of (k, j) with force}``.
        """
        if not isinstance(impulse_tol, (int, float)) or not impulse_tol >= 0:
            raise InputError("impulse_tol", f"must be a number >= 0, got {impulse_tol!r}")
        pn = np.asarray(traj.p_n, dtype=float).reshape(self.N, self.system.n_c)
        q = np.asarray(traj.q, dtype=float)
        if q.shape != (self.N + 1, self.system.n_q):
            raise InputError("traj", f"q has shape {q.shape}, expected ({self.N + 1}, {self.system.n_q})")
        phi_next = np.array([np.asarray(self._phi(q[k + 1]), dtype=float).ravel() for k in range(self.N)])
        acts = pn > impulse_tol * max(1.0, float(pn.max(initial=0.0)))
        if not acts.any():
            return {"gap": -math.inf, "step": None, "contact": None, "impulse": 0.0, "forces": 0}
        gaps = np.where(acts, phi_next, -np.inf)
        k, j = np.unravel_index(int(np.argmax(gaps)), gaps.shape)
        return {"gap": float(gaps[k, j]), "step": int(k), "contact": int(j), "impulse": float(pn[k, j]),
                "forces": int(acts.sum())}

    def sensitivity(self, traj: TOResult, tol: float = 1e-7) -> Any:
        """The parametric sensitivity of the solved trajectory ``traj`` from the KKT system of its
        active set (:func:`~contactmp.solvers.nlp.kkt.kkt_sensitivity`): ``dx_drows`` of the
        rows ``initial_q``, ``initial_v``, ``final_q``, ``final_v`` (``self.program[name].index``)
        moves the plan with its initial state or goal, ``dx_dp`` with the Program's parameters; the
        multipliers give the cost's derivatives (``dJ/db = -lambda`` of the row's bound). Read the
        trajectory's change from a column ``dx`` with ``self.program.value(handle, dx)``."""
        from contactmp.solvers.nlp import kkt_sensitivity

        if traj.result is None:
            raise InputError("traj", "has no result to differentiate")
        return kkt_sensitivity(self.program, traj.result.x, tol=tol)

    def trajectory(self, result: Result) -> TOResult:
        """The :class:`TOResult` of one :class:`~contactmp.result.Result` of this transcription's
        program (for example from :func:`~contactmp.solvers.nlp.solve.solve_program` called directly):
        the trajectory at ``result.x``, with ``starts`` holding that one solve."""
        rec = {"start": 0, "status": result.status, "objective": float(result.objective),
               "iterations": int(result.iterations), "time_s": float(result.time_s)}
        return self._trajectory(result, [rec], 0, [result])

    def _trajectory(self, res: Result, records: list[dict[str, Any]], best: int, results: list[Result]) -> TOResult:
        x = res.x
        prog = self.program
        q = np.array([prog.value(h, x) for h in self.q])
        v = np.array([prog.value(h, x) for h in self.v])
        u = np.array([prog.value(h, x) for h in self.u]).reshape(self.N, self.system.n_u)
        imp = np.array([b.impulses(x) for b in self.steps]).reshape(self.N, self.system.n_c, 3)
        pn, pto = imp[:, :, 0], imp[:, :, 1:]
        if self.system.planar:  # Jo = 0: an o impulse (pyramid generators' o part) exerts no force
            pto[:, :, 1] = 0.0
        return TOResult(t=self.h * np.arange(self.N + 1), q=q, v=v, u=u, p_n=pn, p_t=pto[:, :, 0],
                        p_o=pto[:, :, 1], status=res.status, objective=float(res.objective),
                        comp_violation=float(res.residuals["comp_min"]),
                        constraint_violation=float(res.residuals["constraint"]),
                        best=best, starts=records, result=res, results=results)


def _bound_vectors(what: str, lb: ArrayLike, ub: ArrayLike, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``lb``, ``ub`` broadcast to ``n`` entries; InputError (field ``lb``) unless ``lb <= ub``
    with no NaN, no lower bound +inf and no upper bound -inf."""
    lbv = np.broadcast_to(np.asarray(lb, dtype=float), (n,)).copy()
    ubv = np.broadcast_to(np.asarray(ub, dtype=float), (n,)).copy()
    if np.isnan(lbv).any() or np.isnan(ubv).any() or (lbv > ubv).any() or (lbv == math.inf).any() \
            or (ubv == -math.inf).any():
        raise InputError("lb", f"invalid {what} bounds lb={lbv}, ub={ubv}")
    return lbv, ubv


def _weight(field_name: str, W: ArrayLike, n: int) -> np.ndarray:
    """A symmetric positive semidefinite weight matrix (a vector is read as its diagonal)."""
    arr = np.asarray(W, dtype=float)
    if arr.ndim <= 1:
        arr = np.diag(np.broadcast_to(arr, (n,)))
    if arr.shape != (n, n) or not np.isfinite(arr).all():
        raise InputError(field_name, f"must be finite with shape ({n}, {n}) or ({n},), got {arr.shape}")
    if not np.allclose(arr, arr.T) or np.linalg.eigvalsh(0.5 * (arr + arr.T)).min() < -1e-12:
        raise InputError(field_name, "must be symmetric positive semidefinite")
    return arr

