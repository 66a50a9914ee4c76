"""The step-formulation protocol and the one registry of contact formulations.

A *formulation* adds one time step of contact to a :class:`~contactmp.program.Program`; the
transcriptions (:class:`~contactmp.transcriptions.time_stepping.TimeStepping`,
:class:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO`) stack or solve those blocks
and never ask which formulation they hold. The protocol:

* :class:`Step` -- what a transcription hands over for step ``k``: the system, ``h``, the state
  ``(q_k, v_k)`` and input ``u_k`` (numbers in time stepping, program symbols in trajectory
  optimization), the contacts in the step, and ``q_{k+1}`` when the formulation asks for it
  (:attr:`Formulation.backward_euler`). :meth:`Step.data` evaluates ``M, f = B u - h, Jn, Jt,
  Jo, phi, mu`` at ``(q_k, v_k, u_k)``.
* :meth:`Formulation.add_step` -- adds the step's variables and rows and returns a
  :class:`StepBlock`, whose interface is the same for every formulation: ``v_next`` (the
  velocity ``v_{k+1}``, a Variables handle), ``q_next`` (the handle of ``q_{k+1}`` when the
  formulation owns it), :meth:`StepBlock.impulses` (per contact ``(p_n, p_t, p_o)`` in the contact
  frame), :meth:`StepBlock.modes`, ``complementarities`` and ``cones`` (its handles) and
  :meth:`StepBlock.check` (the physics residuals of a solution).
* :meth:`Formulation.advance` -- one time-stepping step from numbers. The default builds the
  step's Program, solves it through the solver front door (:func:`contactmp.solvers.front.solve`,
  which reduces it to an LCP, an fc3d problem, a cone QP or an NLP) and reads the block; a
  formulation with its own time discretization or adaptivity (NMDP's backward Euler with step
  halving and stable-PD targets) overrides it.

Formulations are registered by name (:func:`register`) and built from a name and options by
:func:`formulation`; :data:`FORMULATIONS` lists the registered names.
"""
from __future__ import annotations

import dataclasses
import math
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field, fields
from typing import Any, Callable, ClassVar, Mapping

import casadi as ca
import numpy as np

from contactmp.errors import InputError, OptionError, check_spd, did_you_mean
from contactmp.models.symbolic import ContactSystem
from contactmp.program import Complementarity, ConeComplementarity, Constraint, Program, Variables
from contactmp.result import Result, Status
from contactmp.solvers.nlp import STEP_START
from contactmp.validate import float_vector

__all__ = ["Step", "StepData", "StepBlock", "StepOutcome", "Formulation", "PhysicsTolerances", "register",
           "formulation", "FORMULATIONS", "Targets"]

#: PD targets of a stable-PD formulation: ``targets(t) -> (q_d, qd_d)``
Targets = Callable[[float], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class StepData:
    """``M`` (n_v x n_v), ``f = B u - h(q, v)`` (n_v) and, for the step's contacts, ``Jn, Jt, Jo``
    (n_c x n_v), ``phi`` and ``mu`` (n_c), all at ``(q_k, v_k, u_k)``: numbers or CasADi SX."""

    M: Any
    f: Any
    Jn: Any
    Jt: Any
    Jo: Any
    phi: Any
    mu: Any


class SystemFunctions:
    """The CasADi Functions of a system that every step evaluates (built once per system)."""

    _cache: ClassVar["weakref.WeakKeyDictionary[ContactSystem, SystemFunctions]"] = weakref.WeakKeyDictionary()

    def __init__(self, s: ContactSystem) -> None:
        self.data = ca.Function("step_data", [s.q, s.v, s.u], [s.M, s.B @ s.u - s.h, s.Jn, s.Jt, s.Jo, s.phi])
        self.qdot = ca.Function("qdot", [s.q, s.v], [s.qdot])
        self.phi = ca.Function("phi", [s.q], [s.phi])

    @classmethod
    def of(cls, s: ContactSystem) -> "SystemFunctions":
        """The Functions of ``s``, built on first use and dropped with the system."""
        fn = cls._cache.get(s)
        if fn is None:
            fn = cls._cache[s] = cls(s)
        return fn


@dataclass
class Step:
    """Step ``k`` of a transcription as a formulation sees it (see the module docstring).

    ``q``, ``v``, ``u`` are numbers (time stepping) or SX (trajectory optimization); ``contacts``
    the indices of the contacts in the step (None: all); ``q_next`` the SX of ``q_{k+1}`` when the
    formulation is :attr:`~Formulation.backward_euler` (else None); ``t`` the step's start time
    and ``targets`` the PD targets, for formulations with a stable PD controller; ``previous``
    the result of the previous time step (a warm start); ``start`` the start values of the numeric
    step Program's variables by name (their ``init``), which a position-gap step's NLP takes with
    the warm-start options :data:`~contactmp.solvers.nlp.solve.STEP_START`, returning the step's solution
    nearest the start (least squares over the variables started; other steps' LCP and cone
    solvers start from their own points and refuse it); ``params`` overrides model parameters for
    this step, numbers or CasADi expressions with one entry per contact of the system (or one for
    all): ``"mu"`` (the friction coefficients) and, for the compliant formulation, ``"stiffness"``,
    ``"damping"``, ``"tangential_damping"`` (what a sensitivity with respect to them builds on);
    ``prefix`` names the block; ``pd_gains`` ``(Kp, Kd)`` (one entry per input) is the implicit part of
    a stable PD controller (Tan, Liu and Turk) on the actuated coordinates ``B^T q`` of a system with
    ``qdot = v``: the torque ``Kp (q_d - q_{k+1}) + Kd (qd_d - v+)`` with ``q_{k+1} = q_k + h v+``
    splits into ``Kp (q_d - q_k) + Kd qd_d - (h Kp + Kd) B^T v_k``, a number the caller adds to
    ``u_k``, and ``-(h Kp + Kd) B^T (v+ - v_k)``, which :meth:`data` moves to the left side:
    ``M + h B diag(h Kp + Kd) B^T`` (see :class:`~contactmp.transcriptions.time_stepping.TimeStepping`).
    """

    system: ContactSystem
    h: float
    q: Any
    v: Any
    u: Any
    prefix: str = "step"
    contacts: np.ndarray | None = None
    q_next: Any = None
    t: float = 0.0
    targets: Targets | None = None
    previous: Result | None = None
    start: Mapping[str, Any] | None = None
    params: Mapping[str, Any] | None = None
    pd_gains: tuple[np.ndarray, np.ndarray] | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def numeric(self) -> bool:
        """True when the state and input are numbers (a time-stepping step)."""
        return not any(isinstance(a, (ca.SX, ca.MX)) for a in (self.q, self.v, self.u))

    @property
    def n_c(self) -> int:
        """Number of contacts in the step."""
        return self.system.n_c if self.contacts is None else int(np.asarray(self.contacts).size)

    def data(self) -> StepData:
        """:class:`StepData` at ``(q_k, v_k, u_k)`` for the step's contacts (numbers: evaluated once
        per step for all contacts, shared by the copies of this step)."""
        s = self.system
        idx = slice(None) if self.contacts is None else np.asarray(self.contacts, dtype=int)
        if self.numeric:
            full = self._cache.get("data")
            if full is None:
                Jn, Jt, Jo = s.eval_J(self.q)
                B = s.eval_B(self.q)
                full = self._cache["data"] = StepData(
                    s.eval_M(self.q) + self._pd_mass(B), B @ self.u - s.eval_h(self.q, self.v), Jn, Jt, Jo,
                    s.eval_phi(self.q), self.param("mu", s.mu))
            if self.contacts is None:
                return full
            return StepData(full.M, full.f, full.Jn[idx], full.Jt[idx], full.Jo[idx], full.phi[idx], full.mu[idx])
        M, f, Jn, Jt, Jo, phi = SystemFunctions.of(s).data(self.q, self.v, self.u)
        if self.pd_gains is not None:
            M = M + self._pd_mass(np.array(ca.evalf(s.B), dtype=float).reshape(s.n_v, s.n_u))
        mu = self.param("mu", s.mu)
        if self.contacts is not None:
            rows = [int(i) for i in idx]
            Jn, Jt, Jo, phi = Jn[rows, :], Jt[rows, :], Jo[rows, :], phi[rows]
            mu = mu[rows] if isinstance(mu, ca.SX) else mu[idx]
        return StepData(M, f, Jn, Jt, Jo, phi, mu)

    def _pd_mass(self, B: np.ndarray) -> Any:
        """``h B diag(h Kp + Kd) B^T``, the stable PD's implicit part (0 without ``pd_gains``)."""
        if self.pd_gains is None:
            return 0.0
        kp, kd = self.pd_gains
        return self.h * (B * (self.h * kp + kd)) @ B.T

    def param(self, name: str, default: Any) -> Any:
        """The model parameter ``name`` of the step: ``params[name]`` broadcast to one entry per
        contact of the system (an SX column, or a float array), else ``default``."""
        if not self.params or name not in self.params:
            return default
        val, n = self.params[name], self.system.n_c
        if isinstance(val, (ca.SX, ca.MX)):
            if val.numel() == 1:
                return val * ca.DM.ones(n, 1)
            if val.numel() != n:
                raise InputError("params", f"'{name}' has {val.numel()} entries; the system has {n} contacts")
            return ca.reshape(val, n, 1)
        return float_vector(val, n, f"params[{name!r}]")

    def qdot(self, q: Any, v: Any) -> Any:
        """``qdot(q, v)`` of the system (numbers or SX)."""
        if self.numeric and not isinstance(v, (ca.SX, ca.MX)):
            return self.system.eval_qdot(q, v)
        return SystemFunctions.of(self.system).qdot(q, v)

    def end_gap_rate(self, v_next: Any) -> Any:
        """``phi(q_{k+1}) / h`` for the step's contacts, with ``q_{k+1} = q_k + h qdot(q_k, v_{k+1})``
        (the explicit kinematics every velocity-level transcription uses): the gap at the *end* of
        the step, of which ``phi(q_k) / h + Jn(q_k) v_{k+1}`` is the first-order expansion in
        ``h``. An SX of ``v_next`` (and of the state, in trajectory optimization)."""
        fn = SystemFunctions.of(self.system)
        rate = fn.phi(self.q + self.h * fn.qdot(self.q, v_next)) / self.h
        if self.contacts is not None:
            rate = rate[[int(i) for i in np.asarray(self.contacts, dtype=int)]]
        return rate


@dataclass(eq=False)
class StepBlock:
    """The handles of one step block; the same interface for every formulation.

    ``v_next`` is ``v_{k+1}``; ``q_next`` the handle of ``q_{k+1}`` when the formulation created
    it (backward Euler), else None (the transcription adds ``q_{k+1} = q_k + h qdot(q_k, v_{k+1})``);
    ``complementarities``, ``constraints`` and ``cones`` are every pair, row and cone construct
    of the block; ``mu`` the friction coefficients of its contacts; ``handles`` the
    formulation's own variables by name (``p_n``, ``beta``, ``w``, ...).
    """

    program: Program
    v_next: Variables
    mu: np.ndarray
    complementarities: tuple[Complementarity, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    cones: tuple[ConeComplementarity, ...] = ()
    q_next: Variables | None = None
    handles: dict[str, Variables] = field(default_factory=dict)

    @property
    def n_c(self) -> int:
        """Number of contacts of the block."""
        return int(np.asarray(self.mu).size)

    def impulses(self, x: Any) -> np.ndarray:
        """``(n_c, 3)`` contact impulses ``(p_n, p_t, p_o)`` (contact frame) at the program vector ``x``."""
        raise NotImplementedError

    def modes(self, x: Any, tol: float = 1e-9) -> list[str]:
        """Per contact ``"separated"`` (``p_n <= tol`` times the largest impulse, at least 1 N s), ``"sliding"``
        (the friction impulse on the boundary ``||p_T|| = mu p_n`` to ``sqrt(tol)`` relative) or
        ``"sticking"``."""
        p = self.impulses(x)
        scale = max(float(np.max(np.abs(p), initial=0.0)), 1.0)
        out = []
        for (pn, pt, po), mu in zip(p, np.asarray(self.mu, dtype=float).ravel()):
            if pn <= tol * scale:
                out.append("separated")
            elif math.hypot(pt, po) >= mu * pn * (1.0 - math.sqrt(tol)):
                out.append("sliding")
            else:
                out.append("sticking")
        return out

    def check(self, x: Any) -> dict[str, float]:
        """The block's residuals at ``x``: ``rows`` (max ``|g - bound|`` over its rows, scaled as
        :meth:`Program.residuals`) and ``complementarity`` (max ``|min(a, b)|`` over its pairs)."""
        ev = self.program.evaluate(x)
        rows = [ev["g"][c.index] - np.clip(ev["g"][c.index], c.lb, c.ub) for c in self.constraints]
        pairs = [np.minimum(ev["a"][c.index], ev["b"][c.index]) for c in self.complementarities]
        return {"rows": float(max((np.max(np.abs(r), initial=0.0) for r in rows), default=0.0)),
                "complementarity": float(max((np.max(np.abs(c), initial=0.0) for c in pairs), default=0.0))}

    def speed_modes(self, p_n: Variables, speed: Variables, x: Any, tol: float) -> list[str]:
        """Per contact ``"separated"`` (``p_n = 0``), ``"sliding"`` (the sliding speed ``speed > 0``)
        or ``"sticking"``, judged against ``tol`` times the largest entry (at least 1: impulses in
        N s, speeds in m/s): the modes of a block with a sliding-speed variable."""
        pn, g = self.program.value(p_n, x), self.program.value(speed, x)
        sp, sg = tol * max(np.abs(pn).max(initial=0.0), 1.0), tol * max(np.abs(g).max(initial=0.0), 1.0)
        return ["separated" if a <= sp else "sliding" if b > sg else "sticking" for a, b in zip(pn, g)]

    def value(self, name: str, x: Any) -> np.ndarray:
        """The values of the block's variables ``handles[name]`` at ``x``."""
        if name not in self.handles:
            raise InputError("name", f"unknown block variable {name!r}{did_you_mean(name, self.handles)}")
        return self.program.value(self.handles[name], x)


@dataclass
class StepOutcome:
    """One time-stepping step from numbers: the next state ``(q, v)``, the impulses ``(n_c, 3)``
    (every contact of the system, contact frame ``(n, t, o)``), which contacts entered the step
    (``active``), and the step's solve ``result`` (status, residual, solver, iterations, time;
    ``residuals["dynamics"]`` is ``||M (v+ - v) - h f - J^T p||_inf`` for the velocity-level
    scheme; ``extras`` carries the formulation's own data)."""

    q: np.ndarray
    v: np.ndarray
    impulses: np.ndarray
    active: np.ndarray
    result: Result

    @property
    def p_n(self) -> np.ndarray:
        """Normal impulses (``n_c``)."""
        return self.impulses[:, 0]

    @property
    def p_t(self) -> np.ndarray:
        """Friction impulses along ``t`` (``n_c``)."""
        return self.impulses[:, 1]

    @property
    def p_o(self) -> np.ndarray:
        """Friction impulses along ``o`` (``n_c``)."""
        return self.impulses[:, 2]

    @property
    def status(self) -> Status:
        """The step's status (``result.status``)."""
        return self.result.status

    @property
    def success(self) -> bool:
        """True when the step's contact problem was solved (verified residual) and, for a step of
        :class:`~contactmp.transcriptions.time_stepping.TimeStepping`, its physics verdict passed."""
        return self.result.success


@dataclass(frozen=True)
class PhysicsTolerances:
    """What a formulation's own contact model allows, which the physics verdict of every
    time-stepping step (:mod:`contactmp.transcriptions.physics_check`) measures against:

    * ``penetration`` [m]: the deepest a contact may be inside its surface at a step's end
      (``-phi_i(q_{k+1})``): a rigid model's position error of its explicit kinematics, a soft
      model's design depth with the extra depth of an impact;
    * ``gap`` [m]: a contact may carry force only while its gap at the step's end is at most this;
    * ``gap_force`` [N]: a force any contact may carry at any gap by the model's own definition (a
      polytope's ``relax``), 0 for the others;
    * ``cone_factor``: the friction impulse may reach ``cone_factor mu p_n`` (1 for Coulomb's cone and
      the polygons inscribed in it; ``1 / cos(pi / k)`` for a k-facet pyramid circumscribing it).
    """

    penetration: float
    gap: float
    gap_force: float = 0.0
    cone_factor: float = 1.0


class Formulation:
    """A contact formulation: options (a strict dataclass, ``Options``) and the step protocol.

    Subclasses set ``name``, ``Options`` and implement :meth:`add_step`; they may set
    ``backward_euler`` (the step owns ``q_{k+1}``), ``solver`` (the default solver, or chain of
    solvers, of a time-stepping step), ``auto_options`` (front-door options used when no solver
    is named), and override
    :meth:`check_system`, :meth:`step_contacts` and :meth:`advance`.
    """

    name: ClassVar[str] = ""
    backward_euler: ClassVar[bool] = False
    solver: ClassVar[Any] = None
    auto_options: ClassVar[dict[str, Any]] = {}
    #: the default :meth:`advance` builds one Program per contact set, with the state ``(q, v, u)``
    #: as parameters, and reuses it (and its reduction) while the set stays: set True only when
    #: :meth:`add_step` takes nothing from a numeric step but ``step.data()``, as in trajectory
    #: optimization (so the block is the same function of the state)
    parametric: ClassVar[bool] = False
    #: how many contact sets the parametric cache keeps (least recently used dropped first)
    PARAMETRIC_CACHE_SIZE: ClassVar[int] = 32
    #: the model parameters :meth:`add_step` reads from :attr:`Step.params` (``"mu"``, the compliant
    #: gains): only these can be held as Program parameters and differentiated by
    model_parameters: ClassVar[tuple[str, ...]] = ()
    #: a step is solved in substeps and differentiated substep by substep
    #: (:mod:`contactmp.formulations.polytope_sensitivity`: the NMDP and the linearized MDP)
    substeps_differentiable: ClassVar[bool] = False
    #: :meth:`ContactImplicitTO.solve <contactmp.transcriptions.contact_implicit.ContactImplicitTO.solve>`
    #: starts each of its starts from the pyramid's plan of the same task by default (its
    #: ``pyramid_start``): set True where that was measured to pay (the Coulomb cone)
    pyramid_start: ClassVar[bool] = False

    @dataclass(frozen=True)
    class Options:
        """No options."""

    def __init__(self, **options: Any) -> None:
        known = {f.name for f in fields(self.Options)}
        for key in options:
            if key not in known:
                raise InputError(key, f"is not an option of formulation {self.name!r} "
                                      f"(options: {', '.join(sorted(known)) or 'none'}){did_you_mean(key, known)}")
        self.options = self.Options(**options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({getattr(self, 'options', '')})"

    # -- the protocol ---------------------------------------------------------------------------
    def physics_tolerances(self, system: ContactSystem, h: float) -> PhysicsTolerances:
        """The :class:`PhysicsTolerances` of this formulation on ``system`` with step ``h``. The
        default, for the rigid velocity-level models (whose non-penetration holds at the step's end
        to first order in ``h``: what remains is the explicit kinematics' curvature error):
        ``penetration = gap = DESIGN_DEPTH`` (1 mm, :mod:`contactmp.formulations.contact_scale`) and
        the friction set's :meth:`cone_factor`; soft models override it with their design depth."""
        from contactmp.formulations.contact_scale import DESIGN_DEPTH

        return PhysicsTolerances(penetration=DESIGN_DEPTH, gap=DESIGN_DEPTH, cone_factor=self.cone_factor())

    def cone_factor(self) -> float:
        """How far the friction set reaches beyond Coulomb's cone, as a factor on ``mu p_n``: ``1 /
        cos(pi / k)`` for a k-facet pyramid (option ``facets``, with ``friction="pyramid"`` where the
        formulation has that option), whose polygon circumscribes the disk; 1 otherwise."""
        o = getattr(self, "options", None)
        facets = getattr(o, "facets", None)
        if facets is None or getattr(o, "friction", "pyramid") != "pyramid":
            return 1.0
        return 1.0 / math.cos(math.pi / int(facets))

    def model_parameter_value(self, name: str, system: ContactSystem, q: np.ndarray, field: str = "wrt") -> np.ndarray:
        """The value (one per contact) of the model parameter ``name`` (one of
        :attr:`model_parameters`) in a step from ``q``, the value a step reads from
        :attr:`Step.params` when it is held as a parameter: the system's friction coefficients for
        ``"mu"``. A formulation that declares other model parameters overrides this; InputError
        naming ``field`` when there is no constant value to give."""
        if name == "mu":
            return np.asarray(system.mu, dtype=float).copy()
        raise InputError(field, f"formulation {self.name!r} declares the model parameter {name!r} but gives no "
                                "value for it (override Formulation.model_parameter_value)")

    def check_system(self, system: ContactSystem, h: float) -> None:
        """Raise :class:`InputError` when ``system`` (with step ``h``) does not fit the formulation
        (called once by every transcription)."""

    def add_step(self, prog: Program, step: Step) -> StepBlock:
        """Add one step to ``prog`` and return its block."""
        raise NotImplementedError

    def step_contacts(self, step: Step, data: StepData) -> np.ndarray:
        """The positions (into ``step.contacts``) of the contacts that carry force in a numeric
        step (default: all)."""
        return np.arange(step.n_c)

    def step_solvers(self) -> dict[str, Any]:
        """Every solver of this formulation's time step: label -> the ``solver`` argument of
        :meth:`advance` (and of :class:`~contactmp.transcriptions.time_stepping.TimeStepping`), the
        default (``None``) first. A comparison runs each (``formulation-compare``); the base class
        knows only the default."""
        return {"default": None}

    @property
    def position_gap(self) -> bool:
        """Whether the non-penetration side is the gap at the step's end (``gap="position"`` of the
        pyramid and the cone): a numeric step is then a nonlinear complementarity problem, solved
        by the front door's NLP route, and takes a ``start``."""
        return getattr(getattr(self, "options", None), "gap", "linear") == "position"

    def advance(self, step: Step, *, solver: Any = None, tol: float = 1e-10) -> StepOutcome:
        """One time-stepping step from the numbers of ``step`` (the default scheme): the contacts
        of ``step.contacts`` that :meth:`step_contacts` keeps enter the block, whose Program the
        front door solves (``solver``: the transcription's choice, else :attr:`solver`; a
        position-gap step starts at ``step.start`` when given, and returns the step's solution
        nearest it, else at its linear-gap solution; its answer is refined by Newton's method on
        its active pieces, :attr:`~contactmp.solvers.nlp.solve.NLPOptions.refine`: IPOPT leaves rows and
        pairs at ~1e-8, which an ill-conditioned step turns into a velocity error of 1e-6 or more,
        a sagittal Solo12 step 3.6e-6 at residual 1.1e-8, refined 1.9e-10); then
        ``q_{k+1} = q_k + h qdot(q_k, v_{k+1})``.
        Without contacts the step is free flight."""
        from contactmp.solvers.front import solve

        nc, h = step.system.n_c, step.h
        position_gap = self.position_gap
        full = _with_contacts(step, None).data()
        idx = np.arange(nc) if step.contacts is None else np.asarray(step.contacts, dtype=int)
        if idx.size:
            idx = idx[self.step_contacts(step, full)]
        active = np.zeros(nc, dtype=bool)
        imp = np.zeros((nc, 3))
        try:  # once per step, for every formulation (a parametric Program does not see numbers)
            check_spd(full.M)
        except InputError as exc:  # the model left its valid range (the hopper's leg center of mass at
            nan_v = np.full(step.system.n_v, np.nan)  # its hip, ...): a status, and the run stops
            res = Result(Status.NUMERICAL_ERROR, nan_v, "step", math.nan, tol,
                         message=f"{exc} at q = {np.asarray(step.q).tolist()}")
            return StepOutcome(np.full(step.system.n_q, np.nan), nan_v, imp, active, res)
        if idx.size == 0:
            try:
                v_next = step.v + np.linalg.solve(full.M, h * full.f)
                res = Result(Status.SOLVED, v_next, "free_flight", 0.0, tol)
            except np.linalg.LinAlgError:  # positive definite to rounding, an exact zero pivot in LU
                v_next = np.full(step.system.n_v, np.nan)
                res = Result(Status.NUMERICAL_ERROR, v_next, "free_flight", math.nan, tol,
                             message=f"M: mass matrix is singular at q = {np.asarray(step.q).tolist()}")
        else:
            if step.start is not None and not position_gap:
                raise InputError("start", f"only a position-gap step (gap='position', solved by the NLP "
                                 f"route) takes a start; {self.name}'s step is solved by {self.solver!r} "
                                 "from the solver's own point")
            prog, blk = (self._step_program(step, idx, full) if step.start is None
                         else self._nearest_step_program(step, idx))
            kept = {var.name: var.init for var in prog.variables}  # a parametric Program is cached
            opts = self.auto_options if solver is None else {}
            if step.start is not None:  # (the nearest-solution objective only selects: no certificate of it)
                opts = {**opts, **STEP_START, "certify": False}
            elif position_gap:
                self._start_from_linear_gap(prog, step, idx, full, tol)
            if position_gap:  # IPOPT's answer (rows and pairs to ~1e-8) refined to rounding on its pieces
                opts = {**opts, "refine": True}
            res = solve(prog, solver=solver if solver is not None else self.solver, tol=tol, **opts)
            _set_start(prog, kept)
            v_next = prog.value(blk.v_next, res.x)
            imp[idx] = blk.impulses(res.x)
            active[idx] = True
            res.extras["modes"] = blk.modes(res.x)
            res = res.replace(program=None)  # a trajectory keeps every step's result, not its Program
        dyn = full.M @ (v_next - step.v) - h * full.f - full.Jn.T @ imp[:, 0] - full.Jt.T @ imp[:, 1] \
            - full.Jo.T @ imp[:, 2]
        res.residuals["dynamics"] = float(np.max(np.abs(dyn), initial=0.0))
        if not np.isfinite(v_next).all():  # a failed solve's answer: the state is not finite, the run stops
            return StepOutcome(np.full(step.system.n_q, np.nan), v_next, imp, active, res)
        if position_gap:
            res.extras["gap_rate"] = np.asarray(_with_contacts(step, None).end_gap_rate(v_next), dtype=float).ravel()[active]
        else:
            res.extras["gap_rate"] = full.phi[active] / h + full.Jn[active] @ v_next
        q_next = step.q + h * step.qdot(step.q, v_next)
        return StepOutcome(np.asarray(q_next, dtype=float).ravel(), v_next, imp, active, res)

    def _start_from_linear_gap(self, prog: Program, step: Step, idx: np.ndarray, full: StepData,
                               tol: float) -> None:
        """Start the variables of a position-gap step's Program (``gap="position"``, a nonlinear
        complementarity problem solved by the NLP route) at the solution of the same step with the
        linearized gap (its LCP or fc3d problem, solved by that route's solvers): the two differ by
        ``O(h^2)``, and the NLP started at zero found other solutions of the step, a leg swung
        through 0.95 rad in one 0.025 s step so that its foot ends on the ground (Solo12 walk). When
        the linear step is not solved the Program's own start is kept."""
        from contactmp.solvers.front import solve

        twin = self.__dict__.get("_linear_twin")
        if twin is None:
            twin = self.__dict__["_linear_twin"] = type(self)(**{**dataclasses.asdict(self.options), "gap": "linear"})
        lin_prog, _ = twin._step_program(step, idx, full)
        lin = solve(lin_prog, solver=twin.solver, tol=tol, **twin.auto_options)
        if lin.status is not Status.SOLVED:
            return
        _set_start(prog, {var.name: lin_prog.value(lin_prog[var.name], lin.x) for var in prog.variables})

    def _nearest_step_program(self, step: Step, idx: np.ndarray) -> tuple[Program, StepBlock]:
        """The Program of a numeric step with the contacts ``idx`` started at ``step.start``, whose
        objective ``1/2 sum (x_i - start_i)^2`` (over the variables named in the start) selects,
        among the step's solutions, the one nearest the start: the step's conditions are its
        constraints, so an isolated solution is returned as it is, and a step whose solutions form
        a set (a foot that can reach the ground within the step or press from above it; a sticking
        foot set whose friction split is indeterminate) returns the member nearest the start
        instead of wherever the solver's iterates drift. Built for each call (not cached)."""
        prog = Program("time_step")
        blk = self.add_step(prog, _with_contacts(step, idx))
        _set_start(prog, step.start)
        for name, values in step.start.items():
            var = prog[name]
            prog.add_cost(0.5 * ca.sumsqr(var.sym - ca.DM(np.asarray(values, dtype=float).reshape(-1, 1))))
        return prog, blk

    def _step_program(self, step: Step, idx: np.ndarray, full: StepData) -> tuple[Program, StepBlock]:
        """The Program and block of a numeric step with the contacts ``idx``: built from the step's
        numbers, or (:attr:`parametric`) the cached Program of this contact set with its
        parameters ``state/q``, ``state/v``, ``state/u`` set to the step's state."""
        if not self.parametric:
            prog = Program("time_step")
            return prog, self.add_step(prog, _with_contacts(step, idx))
        cache = self.__dict__.setdefault("_step_programs", OrderedDict())  # (advance has checked M)
        pd = b"" if step.pd_gains is None else b"".join(g.tobytes() for g in step.pd_gains)
        key = (step.system, float(step.h), step.prefix, idx.tobytes(), pd)  # a system hashes by identity
        hit = cache.get(key)
        if hit is None:
            s = step.system
            prog = Program("time_step")
            state = [prog.add_parameters(f"state/{n}", k, 0.0) if k else None
                     for n, k in (("q", s.n_q), ("v", s.n_v), ("u", s.n_u))]
            sym = [ca.SX(0, 1) if p is None else p.sym for p in state]
            blk = self.add_step(prog, dataclasses.replace(step, q=sym[0], v=sym[1], u=sym[2], contacts=idx,
                                                          _cache={}))
            hit = cache[key] = (prog, blk, state)
            while len(cache) > self.PARAMETRIC_CACHE_SIZE:
                cache.popitem(last=False)
        cache.move_to_end(key)
        prog, blk, state = hit
        for p, value in zip(state, (step.q, step.v, step.u)):
            if p is not None:
                p.value = value
        return prog, blk


def _set_start(prog: Program, start: Mapping[str, Any]) -> None:
    """Set the ``init`` of the variables of ``prog`` named in ``start``; InputError (field
    ``start``) for a name the Program does not have or values of another size or not finite."""
    names = {var.name: var for var in prog.variables}
    for name, values in start.items():
        var = names.get(name)
        if var is None:
            raise InputError("start", f"the step's program has no variable {name!r}{did_you_mean(name, names)}")
        arr = np.asarray(values, dtype=float).ravel()
        if arr.size != var.init.size or not np.isfinite(arr).all():
            raise InputError("start", f"{name!r} needs {var.init.size} finite values, got {arr.size}: {arr}")
        var.init = arr.reshape(var.init.shape)


def _with_contacts(step: Step, idx: np.ndarray | None) -> Step:
    return dataclasses.replace(step, contacts=idx)


# ------------------------------------------------------------------------------------------------
# The registry
# ------------------------------------------------------------------------------------------------
_REGISTRY: dict[str, type[Formulation]] = {}
#: the entry-point group an installed package lists its formulations in (``name = "module:Class"``)
ENTRY_POINT_GROUP = "contactmp.formulations"


def register(cls: type[Formulation] | None = None, *, replace: bool = False) -> Any:
    """Register the formulation class ``cls`` under ``cls.name`` (a class decorator: ``@register``,
    or ``@register(replace=True)`` to replace a registered name). A name that is registered already
    (a built-in included) raises :class:`InputError` naming ``cls`` unless ``replace`` is True; the
    same class defined by the same module again (a re-import) replaces itself."""
    if cls is None:
        return lambda c: register(c, replace=replace)
    if not (isinstance(cls, type) and issubclass(cls, Formulation) and isinstance(cls.name, str) and cls.name):
        raise InputError("cls", "must be a Formulation subclass with a non-empty name")
    old = _REGISTRY.get(cls.name)
    same = old is not None and (old.__module__, old.__qualname__) == (cls.__module__, cls.__qualname__)
    if old is not None and not (replace or same):
        raise InputError("cls", f"the formulation name {cls.name!r} is registered already "
                                f"({old.__module__}.{old.__qualname__}); pass replace=True to replace it")
    _REGISTRY[cls.name] = cls
    return cls


def formulation(spec: str | Formulation, **options: Any) -> Formulation:
    """The formulation ``spec``: a configured :class:`Formulation` (returned as is; ``options``
    must then be empty) or a registered name built with ``options``."""
    _load_builtin()
    if isinstance(spec, Formulation):
        if options:
            raise InputError("options", "are given by the formulation object itself; pass a name to set them")
        return spec
    if not isinstance(spec, str) or spec not in _REGISTRY:
        raise OptionError(f"formulation must be one of {', '.join(map(repr, _REGISTRY))} or a Formulation, "
                          f"got {spec!r}{did_you_mean(spec, _REGISTRY)}")
    return _REGISTRY[spec](**options)


def for_system(spec: str | Formulation, system: ContactSystem, h: Any, facets: int | None = None,
               **options: Any) -> Formulation:
    """The formulation ``spec`` (see :func:`formulation`; ``facets``, when given, is one more option)
    checked against ``system`` with the step ``h`` (a positive finite number): what every
    transcription does first."""
    if not isinstance(system, ContactSystem):
        raise InputError("system", f"must be a ContactSystem, got {type(system).__name__}")
    if not (isinstance(h, (int, float)) and not isinstance(h, bool) and math.isfinite(h) and h > 0):
        raise InputError("h", f"must be a positive finite step, got {h!r}")
    if facets is not None:
        options["facets"] = facets
    form = formulation(spec, **options)
    form.check_system(system, float(h))
    return form


def registered() -> tuple[str, ...]:
    """The registered formulation names."""
    _load_builtin()
    return tuple(_REGISTRY)


def _load_builtin() -> None:
    """Import the built-in formulation modules (each registers itself), then the formulations that
    installed packages list under the entry-point group :data:`ENTRY_POINT_GROUP` (once)."""
    if not _REGISTRY.keys() >= {"pyramid", "cone", "compliant", "nmdp", "mdp"}:
        import contactmp.formulations.linearized_mdp  # noqa: F401
        import contactmp.formulations.nmdp  # noqa: F401
        import contactmp.formulations.velocity_compliant  # noqa: F401
        import contactmp.formulations.velocity_cone  # noqa: F401
        import contactmp.formulations.velocity_pyramid  # noqa: F401
    from contactmp.plugins import load_entry_points

    for name, cls in load_entry_points(ENTRY_POINT_GROUP):
        if not (isinstance(cls, type) and issubclass(cls, Formulation) and cls.name == name):
            raise InputError("entry point", f"{ENTRY_POINT_GROUP} entry point {name!r} must be a Formulation "
                                            f"class whose name is {name!r}, got {cls!r}")
        register(cls)


class _Names:
    """:data:`FORMULATIONS`: the registered names, read at use (``"cone" in FORMULATIONS``)."""

    def __iter__(self):
        return iter(registered())

    def __contains__(self, name: object) -> bool:
        return name in registered()

    def __len__(self) -> int:
        return len(registered())

    def __repr__(self) -> str:
        return repr(registered())


FORMULATIONS = _Names()
