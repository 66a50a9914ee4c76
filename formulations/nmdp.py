"""NMDP: the nonconvex maximal-dissipation program of Pan and Hauser (arXiv 2010.14691).

One backward-Euler step of length ``h`` of a :class:`~contactmp.models.symbolic.ContactSystem`
with minimal coordinates (``qdot = v``). Unknowns: the next pose ``theta = q_{n+1}`` and the
vertex weights ``w`` of the contact-wrench polytopes. With ``qd+ = (theta - q_n) / h``:

    G(theta, w) = M(theta) (qd+ - qd_n) / h + h_b(theta, qd+) - B tau(theta, qd+)
                  - sum_i J_i(theta)^T B_i(theta) w_i                                  (force units)

    minimize_{theta, w}  K(theta) = 1/2 qd+^T A(theta) qd+
    subject to           G(theta, w) = 0,   w_i >= 0,   1^T w_i <= 1   (every contact i)

with the metric ``A = M(theta) + h B diag(h Kp + Kd) B^T`` (``objective="effective"``, default) or
``A = M(theta)`` (``objective="kinetic"``, the plain kinetic energy); without PD gains they are the
same. Why the effective metric: the implicit PD makes the step's velocity respond to a contact
force through ``A`` rather than ``M`` (``G_theta ~ A / h^2``), so by the implicit function theorem
the gradient of ``1/2 qd+^T A qd+`` in ``w`` is ``h W^T qd+`` -- the vertex powers of the contact
velocities, whose KKT conditions are maximal dissipation at the contacts -- while the plain kinetic
energy gives ``h W^T A^-1 M qd+``: it dissipates whole-body motion that the PD controller commands,
and stance feet slip. Measured on the spider walk (nmdp-timestep): with ``M`` the walking distance
in 3 s fell from 0.34 m at dt = 5 ms to 0.02 m at 50 ms (feet slipping at 0.12-0.17 m/s even with
mu = 10); with ``A`` (linearized MDP) 0.870 / 0.888 / 0.878 m at 5 / 20 / 50 ms.

(the project's sign convention ``M vdot = B u - h_b + J^T lambda``, so the bias ``h_b`` enters
``G`` with a plus sign). ``tau`` is the stable PD controller evaluated at step n+1,

    tau = -Kp (S theta - q_d) - Kd (S qd+ - qd_d) + tau_0,     S = B^T

(``B`` a constant 0/1 selection of the actuated coordinates, so ``S theta`` are the actuated
coordinates).

A floating base (``qdot = G(q) v``, unit quaternions: ``box_3d``, the 3D Solo12, URDF free-flyers)
takes the same step on the configuration manifold, ``q_{n+1} = q_n (+) h qd+``, in a chart around
``q_n`` (:class:`Chart`): ``theta = xi`` in ``R^{n_v}``, ``q_{n+1} = q(xi) = R(q_n + G(q_n) xi)``
(``R`` renormalizes each quaternion block), ``qd+ = xi / h``, and every ``theta`` above that stands
for a configuration is ``q(xi)`` (``M``, ``h_b``, ``J_i``, ``B_i``, ``phi_i`` at ``q(xi)``); the PD
acts on ``S_q q(xi)``, the entries of ``q`` whose rates are the actuated entries of ``v`` (the joint
angles). The program keeps ``n_v`` unknowns and the same structure, so PGM and IPOPT solve it as
they do a minimal-coordinate step. The KKT block :func:`add_nmdp_step` (trajectory optimization,
sensitivities, ``polish``) is written in ``q_{n+1}`` and stays minimal-coordinate.

The defaults are physical (:func:`default_gains`): ``stiffness = load / d^2`` with the system's
most loaded contact's load at rest and the design depth ``d`` (1 mm), ``relax = 0``; what a step
may then do is declared by :func:`polytope_tolerances`.

Contact i's polytope has the ``V`` vertices ``s_i(theta) b_j`` (contact frame,
normal first) with the pyramid edges ``b_j = n + mu (cos(2 pi j/V) t + sin(2 pi j/V) o)``,
``j = 0..V-1`` (planar systems: ``V = 2``, ``b = n +- mu t``: the exact 2-D friction cone), and
the magnitude

    s_i(theta) = k_i min(phi_i(theta) - r_i, 0)^2 + relax_i          (k [N/m^2], relax [N])

so the generalized force of vertex j is ``s_i (Jn_i + mu cos_j Jt_i + mu sin_j Jo_i)^T`` and the
contact force in the contact frame is ``f_i = s_i sum_j w_ij b_j`` (the impulse over the step is
``h f_i``). With ``k = 0`` the polytope is a constant pyramid of height ``relax`` (the "pyramid
polytope"). Note: ``min(x, 0)^2`` is C1, not C2 (its second derivative jumps from 2 to 0 at
``x = 0``); the notes' "C2" is not right, IPOPT copes with the kink in the Hessian.

Why it is maximal dissipation: the weights ``w`` pick the contact force in the polytope that
makes the kinetic energy after the step smallest; nothing is linearized, so the program is
nonconvex. :class:`NMDP` compiles the CasADi graphs once per (system, polytope, gains) with the
step data ``p = (q_n, qd_n, h, q_d, qd_d, tau_0)`` as parameters (the dynamics from the system's
inverse-dynamics Function where it has one, see :func:`step_expressions`), and the projected
gradient method's Functions once more as instruction tapes (:mod:`contactmp.solvers.pgm.sx_tape`), hands
out the numeric callables of one step (:class:`NMDPFunctions`, evaluated from the tapes; with them
:func:`~contactmp.solvers.pgm.projected_gradient.pgm` runs its compiled loop) and solves one step
with IPOPT (through ``casadi.nlpsol`` or cyipopt). :func:`add_nmdp_step` writes the program's KKT
conditions as a Program block for contact-implicit trajectory optimization.
"""
from __future__ import annotations

import math
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, OptionError, check_number, check_step
from contactmp.formulations.base import (Formulation, PhysicsTolerances, Step, StepBlock, StepOutcome,
                                         SystemFunctions, register)
from contactmp.formulations.contact_scale import DESIGN_DEPTH
from contactmp.models.symbolic import ContactSystem
from contactmp.program import Complementarity, Constraint, Program, Variables
from contactmp.result import Result, Status
from contactmp.solvers.ipopt import BACKENDS, IpoptNLP, ipopt_status
from contactmp.validate import float_vector

__all__ = ["NMDP", "NMDPFunctions", "NMDPBlock", "add_nmdp_step", "Chart", "chart", "quaternion_blocks",
           "default_gains", "polytope_tolerances", "impact_depth",
           "selection_matrix", "vertex_coefficients", "polytope_columns",
           "step_expressions"]

#: the step's objective: the metric of the kinetic energy (see the module docstring)
OBJECTIVES = ("effective", "kinetic")


# -- Validation, the chart and the polytope ----------------------------------------------------
@dataclass(frozen=True)
class Chart:
    """How a step of ``system`` writes ``q_{k+1}``: the backward-Euler step on the configuration
    manifold ``q_{k+1} = q_k (+) h v_{k+1}`` in a chart around ``q_k``.

    * ``minimal`` (``qdot = v``): the unknown is ``theta = q_{k+1}`` itself, ``qd+ = (theta - q_k) / h``
      (the chart is the identity; every number is the one of the minimal-coordinate step);
    * otherwise (``qdot = G(q) v``, a floating base with unit quaternions): the unknown is the
      increment ``xi`` in ``R^{n_v}`` (``xi = h v_{k+1}``) and

          q(xi) = R(q_k + G(q_k) xi),        qd+ = xi / h,

      ``R`` renormalizing every unit-quaternion block (``quaternions``: the 4-entry blocks of ``q``
      whose rows of ``G`` depend on ``q``; every other row of ``G`` is constant). This is the
      integration of the velocity-level formulations (``q_k + h qdot(q_k, v+)``, quaternion
      renormalized), made implicit: the step's unknowns are ``n_v`` numbers, so the NMDP stays a
      minimal-coordinate program in ``xi``.

    ``B`` is the numeric 0/1 input selection (``n_v x n_u``) and ``actuated_q`` the index into ``q``
    of each input's coordinate: the entry whose ``qdot`` is that input's ``v`` entry (``qdot_i = v_j``
    exactly), where a stable PD's position target acts (``S_q q``, with ``S_q`` the 0/1 rows
    ``actuated_q``); for minimal coordinates ``S_q = B^T``. An input on a velocity no entry of ``q``
    integrates alone (a torque on a quaternion body's angular velocity) has ``actuated_q = -1`` and a
    zero row in ``S_q``: it takes no position gain (:func:`check_position_gains`)."""

    minimal: bool
    quaternions: tuple[slice, ...]
    B: np.ndarray
    actuated_q: np.ndarray
    n_q: int

    @property
    def S_q(self) -> np.ndarray:
        """``(n_u x n_q)`` 0/1 rows picking the actuated coordinates out of ``q``."""
        S = np.zeros((self.actuated_q.size, self.n_q))
        rows = np.flatnonzero(self.actuated_q >= 0)
        S[rows, self.actuated_q[rows]] = 1.0
        return S

    def retract(self, q_n: Any, xi: Any, qdot: Callable[[Any, Any], Any]) -> Any:
        """``q(xi) = R(q_n + G(q_n) xi)`` (numbers or SX; ``qdot(q, v) = G(q) v`` the system's
        Function); the identity chart gives ``q_n + xi``."""
        if self.minimal:
            return q_n + xi
        if isinstance(xi, ca.SX) or isinstance(q_n, ca.SX):
            q = q_n + qdot(q_n, xi)
            parts, last = [], 0
            for blk in self.quaternions:
                parts += [q[last:blk.start], q[blk] / ca.norm_2(q[blk])]
                last = blk.stop
            parts.append(q[last:])
            return ca.vertcat(*parts)
        q = np.asarray(q_n, dtype=float) + np.asarray(qdot(q_n, xi), dtype=float).ravel()
        for blk in self.quaternions:
            q[blk] /= np.linalg.norm(q[blk])
        return q


def chart(system: ContactSystem) -> Chart:
    """The :class:`Chart` of ``system`` (built once per system): checks that ``B`` is a constant
    0/1 selection of actuated coordinates (each column one 1, each row at most one 1), that each
    input's coordinate has a position entry (``qdot_i = v_j``), and, when ``qdot != v``, that the
    rows of ``G = d qdot / d v`` that depend on ``q`` are unit-quaternion blocks of four entries.
    InputError naming ``system`` or ``B`` otherwise."""
    if not isinstance(system, ContactSystem):
        raise InputError("system", f"must be a ContactSystem, got {type(system).__name__}")
    got = _charts.get(system)
    if got is not None:
        return got
    if ca.depends_on(system.B, system.q):
        raise InputError("B", "must be a constant selection matrix (it depends on q)")
    B = np.array(ca.evalf(system.B), dtype=float).reshape(system.n_v, system.n_u)
    if not np.all((B == 0) | (B == 1)) or not np.all(B.sum(axis=0) == 1) or np.any(B.sum(axis=1) > 1):
        raise InputError("B", "must be a 0/1 selection of actuated coordinates (one 1 per column, "
                              "at most one per row)")
    n_q, n_v = system.n_q, system.n_v
    varying, Gc = _kinematic_map(system)
    const = [i for i in range(n_q) if i not in varying]
    minimal = n_q == n_v and not varying and np.array_equal(Gc, np.eye(n_v))
    quats = () if minimal else quaternion_blocks(system, strict=True)
    act = np.empty(system.n_u, dtype=int)
    for j in range(system.n_u):
        col = int(np.flatnonzero(B[:, j])[0])
        hit = [i for i in const if np.array_equal(Gc[i], np.eye(n_v)[col])]
        act[j] = hit[0] if hit else -1
    got = _charts[system] = Chart(bool(minimal), tuple(quats), B, act, n_q)
    return got


_charts: "weakref.WeakKeyDictionary[ContactSystem, Chart]" = weakref.WeakKeyDictionary()


def check_position_gains(system: ContactSystem, kp: np.ndarray, field_name: str = "kp") -> None:
    """InputError naming ``field_name`` when a position gain ``kp_j > 0`` acts on an input whose
    coordinate has no entry of ``q`` (:class:`Chart`, ``actuated_q = -1``)."""
    bad = np.flatnonzero((chart(system).actuated_q < 0) & (np.asarray(kp) > 0))
    if bad.size:
        names = [system.u_names[j] if getattr(system, "u_names", None) else str(j) for j in bad]
        raise InputError(field_name, f"inputs {names} of {system.name} act on velocities no entry of q integrates "
                                     "alone (a quaternion body's angular velocity): they take no position gain (0)")


def _kinematic_map(system: ContactSystem) -> tuple[tuple[int, ...], np.ndarray]:
    """``(varying, Gc)``: the rows of ``G = d qdot / d v`` that depend on ``q``, and ``G`` with those
    rows NaN (the others are constant); derived once per system (:func:`chart` and
    :func:`quaternion_blocks`, which every TimeStepping asks, both read it)."""
    got = _kinematic_maps.get(system)
    if got is None:
        got = _kinematic_maps[system] = _derive_kinematic_map(system)
    return got


_kinematic_maps: "weakref.WeakKeyDictionary[ContactSystem, tuple[tuple[int, ...], np.ndarray]]" = \
    weakref.WeakKeyDictionary()


def _derive_kinematic_map(system: ContactSystem) -> tuple[tuple[int, ...], np.ndarray]:
    Gq = ca.jacobian(system.qdot, system.v)
    n_q, n_v = system.n_q, system.n_v
    varying = [i for i in range(n_q) if ca.depends_on(Gq[i, :], system.q)]
    const = [i for i in range(n_q) if i not in varying]
    Gc = np.full((n_q, n_v), np.nan)
    if const:
        Gc[const] = np.array(ca.evalf(ca.substitute(Gq[const, :], system.q, ca.DM.zeros(n_q))), dtype=float)
    Gc.setflags(write=False)
    return tuple(varying), Gc


def quaternion_blocks(system: ContactSystem, strict: bool = False) -> tuple[slice, ...]:
    """The unit-quaternion blocks of ``q``: the runs of 4 consecutive entries whose rows of
    ``G = d qdot / d v`` depend on ``q`` and whose entries at ``q_nominal`` have norm 1 (a floating
    base's ``q[3:7]``). Rows of ``G`` that depend on ``q`` in any other way: an InputError naming
    ``system`` when ``strict``, else ``()`` (nothing to renormalize)."""
    varying, _ = _kinematic_map(system)
    qn = np.asarray(system.q_nominal, dtype=float)
    out = []
    for k in range(0, len(varying), 4):
        r = list(varying[k:k + 4])
        if len(r) != 4 or r != list(range(r[0], r[0] + 4)) or abs(float(np.linalg.norm(qn[r])) - 1.0) > 1e-9:
            if not strict:
                return ()
            raise InputError("system", f"qdot = G(q) v with rows of G that depend on q other than unit-quaternion "
                                       f"blocks of 4 entries (rows {list(varying)}; {system.name}): the step's chart "
                                       "q(xi) = R(q_k + G(q_k) xi) cannot renormalize them")
        out.append(slice(r[0], r[0] + 4))
    return tuple(out)


def selection_matrix(system: ContactSystem) -> np.ndarray:
    """``B`` of ``system`` as a numeric 0/1 matrix after checking that it is a constant selection of
    actuated coordinates (:func:`chart`: each column one 1, each row at most one 1, each input's
    coordinate integrated by one entry of ``q``). InputError naming ``system`` or ``B`` otherwise.
    The position of input j's coordinate is ``q[chart(system).actuated_q[j]]`` (``B^T q`` when
    ``qdot = v``)."""
    return chart(system).B


def default_gains(system: ContactSystem, stiffness: ArrayLike | None, relax: ArrayLike | None,
                  design_depth: float = DESIGN_DEPTH) -> tuple[ArrayLike, ArrayLike]:
    """The polytope gains ``(k, relax)`` of ``s_i = k min(phi_i - r_i, 0)^2 + relax`` with the
    physical defaults: ``stiffness=None`` is ``k = load / d^2`` [N/m^2] with ``d = design_depth``
    and ``load`` the normal force of the system's most loaded contact at rest at ``q_nominal``
    (:func:`~contactmp.formulations.contact_scale.contact_scale`: from ``M``, ``B`` and the gravity
    load ``h(q_nominal, 0)``), so that the most loaded contact sinks ``d`` under its static load
    (``k d^2 = load``); ``relax=None`` is ``0``: no force at a gap (a positive ``relax`` is a force
    any contact may get at any distance, which maximal dissipation spends against the motion: a
    falling body is braked before it lands). When nothing can be derived (no gravity load on a
    contact) the :class:`InputError` names ``stiffness``."""
    if stiffness is None:
        from contactmp.formulations.contact_scale import contact_scale

        stiffness = contact_scale(system, "stiffness").stiffness(design_depth, power=2)
    return stiffness, 0.0 if relax is None else relax


#: the landing speed [m/s] a polytope formulation's declared penetration covers (a drop from 5 cm)
IMPACT_SPEED = 1.0


def impact_depth(design_depth: float, fall: float, speed: float = IMPACT_SPEED) -> float:
    """The depth ``x`` [m] a contact reaches against ``s(x) = k x^2`` when it lands at ``speed``
    under the free-fall acceleration ``fall`` [m/s^2], with ``k`` sinking ``design_depth = d`` under
    its static load (``k d^2 = m fall``): maximal dissipation spends the whole polytope against the
    approach, and the work balance ``k x^3 / 3 = 1/2 m speed^2 + m fall x`` gives
    ``x^3 / (3 d^2) - x = speed^2 / (2 fall)`` (``x = sqrt(3) d`` for a contact released touching).
    The largest root, by Newton's method from above."""
    d, a = float(design_depth), max(float(fall), 1e-12)
    c = speed * speed / (2.0 * a)
    x = max(math.sqrt(3.0) * d, (3.0 * d * d * c) ** (1.0 / 3.0)) * 2.0
    for _ in range(100):
        f, df = x ** 3 / (3.0 * d * d) - x - c, x * x / (d * d) - 1.0
        x_new = x - f / df
        if abs(x_new - x) <= 1e-15 * x:
            break
        x = x_new
    return x


def polytope_tolerances(problem: Any, h: float, impact_speed: float = IMPACT_SPEED) -> PhysicsTolerances:
    """The :class:`~contactmp.formulations.base.PhysicsTolerances` of a polytope step (an
    :class:`NMDP` or a :class:`~contactmp.formulations.linearized_mdp.LinearizedMDP` ``problem``) of
    length ``h``:

    * ``penetration``: less the smallest ``radius`` (the polytope acts from ``phi = r``), the depth
      :func:`impact_depth` a contact reaches landing at :data:`IMPACT_SPEED` on the spring that sinks
      ``design_depth`` under the most loaded contact's static load (its free-fall acceleration
      ``load / mass`` of :func:`~contactmp.formulations.contact_scale.contact_scale`, ``a``), plus
      the step's own overshoot: NMDP (backward Euler, its force acts at the step's end) ``a h^2``,
      the distance one step of that acceleration adds; the linearized MDP (the polytope frozen at
      ``q_k``, one step behind the depth) ``h * IMPACT_SPEED``, one step of travel at the landing
      speed (``impact_speed`` [m/s] replaces :data:`IMPACT_SPEED`: the formulations' option of that
      name declares faster landings). Measured (ball and quaternion box, ``d = 1`` mm, ``h`` = 10 / 5 / 2 ms): released
      touching the plane, NMDP 1.17 / 1.32 / 1.51 mm, MDP 2.00 / 1.73 / 1.74 mm against
      ``sqrt(3) d = 1.73`` mm; landing at 1 m/s, NMDP 2.79 / 3.33 / 4.34 mm (declared 6.51 / 5.78 /
      5.57), MDP 5.03 / 5.61 / 5.56 mm (declared 15.5 / 10.5 / 7.5); a 10-box stack released at rest
      under the MDP (each interface carrying the boxes above) 6.6 mm at 10 ms. Based on the design depth,
      not on the given stiffness: a softer stiffness than ``load / design_depth^2`` is flagged; give a
      deeper ``design_depth`` to declare it;
    * ``gap = max(r, 0) + design_depth`` (NMDP: the polytope carries force only where ``phi < r``
      at the step's end), plus ``h * IMPACT_SPEED`` for the linearized MDP (its force is the polytope
      at ``q_k``: a foot lifting during the step carries it to its end, measured on the spider's
      walk at 50 ms: 25 N at a gap above 3.1 mm);
    * ``gap_force = max relax``: the force any contact may get at any gap by the model's definition."""
    from contactmp.formulations.contact_scale import contact_scale

    d = float(problem.design_depth)
    v_ref = check_number("impact_speed", impact_speed, nonnegative=True)
    try:
        sc = contact_scale(problem.system, "stiffness")
        fall = sc.load / sc.mass
    except InputError:  # no gravity load on a contact: a landing is driven by the inputs alone
        fall = 9.81
    r_lo, r_hi = float(np.min(problem.radius, initial=0.0)), float(np.max(problem.radius, initial=0.0))
    # the step's overshoot and its lift: a frozen polytope is one step behind (h v_ref each), NMDP's
    # force acts at the step's end (a h^2, no lift)
    lag, lift = (float(h) * v_ref,) * 2 if getattr(problem, "frozen", False) else (fall * float(h) ** 2, 0.0)
    pen = max(impact_depth(d, fall, v_ref) - r_lo, 0.0) + lag
    return PhysicsTolerances(penetration=pen, gap=max(r_hi, 0.0) + d + lift,
                             gap_force=float(np.max(problem.relax, initial=0.0)))


def minimal_coordinates(system: ContactSystem, field_name: str, what: str) -> None:
    """InputError naming ``field_name`` unless ``system`` has minimal coordinates (``qdot = v``):
    for ``what`` (a trajectory-optimization block or a sensitivity) that is written in ``q_{k+1}``."""
    if not chart(system).minimal:
        raise InputError(field_name, f"{what} is written in minimal coordinates (qdot = v); {system.name} has "
                                     f"qdot = G(q) v (n_q = {system.n_q}, n_v = {system.n_v}): its time stepping "
                                     "works (the chart q_{k+1} = q_k (+) h v_{k+1}), this does not")


def vertex_coefficients(vertices: Any, planar: bool) -> np.ndarray:
    """``(V, 2)`` coefficients ``(cos(2 pi j/V), sin(2 pi j/V))`` of ``t`` and ``o`` in the pyramid
    edges ``b_j = n + mu (cos t + sin o)``; planar systems need ``V = 2`` (``b = n +- mu t``), 3-D
    systems ``V >= 3``."""
    if not isinstance(vertices, (int, np.integer)) or isinstance(vertices, bool):
        raise InputError("vertices", f"must be an integer, got {vertices!r}")
    V = int(vertices)
    if planar and V != 2:
        raise InputError("vertices", f"must be 2 for a planar system (directions n +- mu t), got {V}")
    if not planar and V < 3:
        raise InputError("vertices", f"must be >= 3 for a 3-D system, got {V}")
    ang = 2.0 * np.pi * np.arange(V) / V
    c = np.column_stack([np.cos(ang), np.sin(ang)])
    c[np.abs(c) < 1e-15] = 0.0
    return c


def set_polytope(obj: Any, system: ContactSystem, vertices: int | None, stiffness: ArrayLike | None,
                  relax: ArrayLike | None, radius: ArrayLike, kp: ArrayLike, kd: ArrayLike, objective: str,
                  design_depth: float = DESIGN_DEPTH) -> None:
    """Check and set the polytope, gains and objective of :class:`NMDP` and of
    :class:`~contactmp.formulations.linearized_mdp.LinearizedMDP` (``chart``, ``B``, ``S = B^T`` (on
    ``v``), ``S_q`` (on ``q``), ``coeffs``, ``vertices``, per-contact ``stiffness``, ``relax``
    (None: :func:`default_gains`), ``radius``, per-input ``kp``, ``kd``, ``n``, ``n_q``, ``n_w``,
    ``groups``)."""
    if objective not in OBJECTIVES:
        raise InputError("objective", f"must be one of {', '.join(map(repr, OBJECTIVES))}, got {objective!r}")
    obj.objective = objective
    obj.chart = chart(system)
    obj.B = obj.chart.B
    obj.S = obj.B.T
    obj.S_q = obj.S if obj.chart.minimal else obj.chart.S_q
    obj.design_depth = check_number("design_depth", design_depth, positive=True)
    stiffness, relax = default_gains(system, stiffness, relax, obj.design_depth)
    obj.system = system
    if vertices is None:
        vertices = 2 if system.planar else 4
    obj.coeffs = vertex_coefficients(vertices, system.planar)
    obj.vertices = int(vertices)
    n_c, n_u = system.n_c, system.n_u
    obj.stiffness = float_vector(stiffness, n_c, "stiffness", nonnegative=True)
    obj.relax = float_vector(relax, n_c, "relax", nonnegative=True)
    obj.radius = float_vector(radius, n_c, "radius")
    obj.kp = float_vector(kp, n_u, "kp", nonnegative=True)
    obj.kd = float_vector(kd, n_u, "kd", nonnegative=True)
    check_position_gains(system, obj.kp)
    obj.n, obj.n_q, obj.n_w = system.n_v, system.n_q, n_c * obj.vertices
    obj.groups = [np.arange(i * obj.vertices, (i + 1) * obj.vertices) for i in range(n_c)]


def polytope_step_data(obj: Any, q_n: ArrayLike, qd_n: ArrayLike, h: float, q_d: ArrayLike | None,
               qd_d: ArrayLike | None, tau_0: ArrayLike | None) -> tuple[Any, ...]:
    """``(q_n, qd_n, h, q_d, qd_d, tau_0)`` of one step of ``obj`` (an NMDP or a LinearizedMDP),
    checked, with the defaults of :meth:`NMDP.parameters`."""
    s = obj.system
    qn = s._vec("q_n", q_n, s.n_q)
    qdn = s._vec("qd_n", qd_n, s.n_v)
    hh = check_number("h", h, positive=True)
    qd = obj.S_q @ qn if q_d is None else s._vec("q_d", q_d, s.n_u)
    qdd = np.zeros(s.n_u) if qd_d is None else s._vec("qd_d", qd_d, s.n_u)
    t0 = np.zeros(s.n_u) if tau_0 is None else s._vec("tau_0", tau_0, s.n_u)
    return qn, qdn, hh, qd, qdd, t0


def block_inputs(prog: Program, system: ContactSystem, h: float, vertices: int | None, stiffness: ArrayLike,
                  relax: ArrayLike, radius: ArrayLike, **exprs: Any) -> tuple[Any, ...]:
    """The checked inputs of :func:`add_nmdp_step` and
    :func:`~contactmp.formulations.linearized_mdp.add_linearized_mdp_step`: ``(B, h, coefficients,
    stiffness, relax, radius, {name: SX column})`` (``u`` has ``n_u`` rows, the others ``n_v``)."""
    if not isinstance(prog, Program):
        raise InputError("prog", f"must be a contactmp Program, got {type(prog).__name__}")
    B = selection_matrix(system)
    minimal_coordinates(system, "system", "a polytope step's Program block (trajectory optimization, sensitivity)")
    hh = check_step(h)
    if vertices is None:
        vertices = 2 if system.planar else 4
    coeffs = vertex_coefficients(vertices, system.planar)
    n_c = system.n_c
    k_ = float_vector(stiffness, n_c, "stiffness", nonnegative=True)
    r_ = float_vector(relax, n_c, "relax", nonnegative=True)
    rad = float_vector(radius, n_c, "radius")
    args = {}
    for nm, x in exprs.items():
        m = system.n_u if nm in ("u", "q_d", "qd_d") else system.n_v
        e = x if isinstance(x, ca.SX) else ca.SX(np.asarray(x, dtype=float).reshape(-1, 1))
        if e.shape != (m, 1):
            raise InputError(nm, f"must have shape ({m}, 1), got {e.shape}")
        args[nm] = e
    return B, hh, coeffs, k_, r_, rad, args


def mu_column(system: ContactSystem, mu: Any) -> ca.SX:
    """The friction coefficients of a polytope block: ``mu`` (an SX column of ``n_c`` entries, or
    numbers) or, when None, the system's."""
    if isinstance(mu, ca.SX):
        if mu.shape != (system.n_c, 1):
            raise InputError("mu", f"must have shape ({system.n_c}, 1), got {mu.shape}")
        return mu
    return ca.SX(ca.DM(float_vector(system.mu if mu is None else mu, system.n_c, "mu", nonnegative=True)))


def polytope_columns(system: ContactSystem, theta: ca.SX, coeffs: np.ndarray, stiffness: np.ndarray,
                     relax: np.ndarray, radius: np.ndarray, magnitudes: ca.SX | None = None,
                     mu: Any = None) -> tuple[ca.SX, ca.SX]:
    """``(W, s)``: the ``n x (n_c V)`` matrix whose column ``(i, j)`` (contact-major) is the
    generalized force ``s_i(theta) (Jn_i + mu_i c_j Jt_i + mu_i s_j Jo_i)^T`` of vertex j of contact
    i, i.e. ``sum_i J_i^T B_i w_i = W w``, and the magnitudes ``s(theta)`` (``n_c``). With
    ``magnitudes`` given, those symbols replace ``s(theta)`` in ``W`` (the vertices frozen, the
    Jacobians still functions of theta: what the zeroth-order derivative needs). ``mu`` (an SX
    column or numbers, one per contact) replaces the system's friction coefficients."""
    sub = ca.Function("nmdp_kin", [system.q], [system.phi, system.Jn, system.Jt, system.Jo])
    phi, Jn, Jt, Jo = sub(theta)
    cols, mags = [], []
    for i in range(system.n_c):
        s_i = stiffness[i] * ca.fmin(phi[i] - radius[i], 0.0) ** 2 + relax[i]
        mags.append(s_i)
        if magnitudes is not None:
            s_i = magnitudes[i]
        mu_i = float(system.mu[i]) if mu is None else mu[i]
        for c, sn in coeffs:
            cols.append(s_i * (Jn[i, :] + mu_i * c * Jt[i, :] + mu_i * sn * Jo[i, :]).T)
    n = system.n_v
    W = ca.horzcat(*cols) if cols else ca.SX(n, 0)
    return W, (ca.vertcat(*mags) if mags else ca.SX(0, 1))


def step_expressions(system: ContactSystem, theta: ca.SX, q_n: ca.SX, qd_n: ca.SX, h: Any, Btau: ca.SX,
                     W: ca.SX, qd: ca.SX | None = None) -> tuple[ca.SX, ca.SX, ca.SX]:
    """``(G_free, K, qd+)`` of one backward-Euler step: ``qd+ = (theta - q_n) / h`` (or ``qd`` when
    given: a floating base's ``xi / h``, with ``theta`` the configuration ``q(xi)`` of its chart),
    ``G_free = M(theta) (qd+ - qd_n) / h + h_b(theta, qd+) - B tau`` (``Btau`` given, may depend
    on theta), so that ``G = G_free - W w``, and ``K = 1/2 qd+^T M(theta) qd+``. When the system
    has an inverse-dynamics Function ``system.functions["inverse_dynamics"](q, v, a) = M(q) a +
    h_b(q, v)`` (the spider's, :func:`contactmp.models.legged.spider`) both are written with it
    (``M(theta) x = ID(theta, 0, x) - ID(theta, 0, 0)``), and ``K`` with its kinetic-energy Function
    ``system.functions["kinetic_energy"](q, v) = 1/2 v^T M(q) v`` if it has one: the same
    quantities to rounding in graphs a tenth the size, which makes the step's Jacobians cheap."""
    if qd is None:
        qd = (theta - q_n) / h
    fast = system.functions.get("inverse_dynamics")
    if fast is None:
        M, hb = ca.Function("nmdp_dyn", [system.q, system.v], [system.M, system.h])(theta, qd)
        G_free = ca.mtimes(M, qd - qd_n) / h + hb - Btau
        return G_free, 0.5 * ca.dot(qd, ca.mtimes(M, qd)), qd
    # the model's own inverse dynamics ID(q, v, a) = M(q) a + h_b(q, v) (a smaller graph than the
    # expanded M and h_b); M(q) x = ID(q, 0, x) - ID(q, 0, 0)
    G_free = fast(theta, qd, (qd - qd_n) / h) - Btau
    kinetic = system.functions.get("kinetic_energy")
    if kinetic is not None:
        return G_free, kinetic(theta, qd), qd
    zero = ca.SX.zeros(system.n_v)
    return G_free, 0.5 * ca.dot(qd, fast(theta, zero, qd) - fast(theta, zero, zero)), qd


# -- The numeric callables of one step ---------------------------------------------------------
@dataclass(frozen=True)
class NMDPFunctions:
    """Numeric callables of ONE NMDP step (step data fixed), for the projected gradient method.

    ``theta`` is ``q_{n+1}`` (``n``), ``w`` the vertex weights (``n_w``); ``groups[i]`` indexes the
    weights of contact i (constraints ``w >= 0``, ``sum(w[g]) <= 1``).

    * ``G(theta, w) -> (n,)``: the backward-Euler residual (module docstring), in N (or N m);
    * ``G_theta(theta, w) -> (n, n)``: its full derivative in theta;
    * ``G_theta_zo(theta, w) -> (n, n)``: the same without the derivative of the vertices
      (zeroth order: the magnitudes ``s_i`` held constant, the Jacobians ``J_i(theta)`` differentiated);
    * ``G_w(theta) -> (n, n_w)``: ``-W(theta)`` (G is affine in w);
    * ``K(theta)``, ``K_grad(theta) -> (n,)``, ``K_hess(theta) -> (n, n)``: the kinetic energy
      ``1/2 qd+^T M(theta) qd+`` and its exact derivatives;
    * ``qd_next(theta) = (theta - q_n) / h``; ``forces(theta, w) -> (n_c, 3)``: contact forces
      ``s_i sum_j w_ij b_j`` in the contact frame (normal, t, o) [N];
    * ``q_n``, ``qd_n``, ``h``: the step data (``q_d``, ``qd_d``, ``tau_0`` in ``params``);
    * ``tapes``: the same functions as instruction tapes with inputs ``(theta, w, params)``
      (:class:`~contactmp.solvers.pgm._kernels.PGMTapes`), with which
      :func:`~contactmp.solvers.pgm.projected_gradient.pgm` runs its compiled loop; None: the Python loop;
    * ``configuration(theta) -> (n_q,)``: ``q_{n+1}`` of ``theta`` (:class:`Chart`: ``theta`` itself in
      minimal coordinates; ``q_n`` is then the chart's origin, 0 for a floating base's ``xi``).
    """

    n: int
    n_w: int
    groups: list[np.ndarray]
    G: Callable[[np.ndarray, np.ndarray], np.ndarray]
    G_theta: Callable[[np.ndarray, np.ndarray], np.ndarray]
    G_theta_zo: Callable[[np.ndarray, np.ndarray], np.ndarray]
    G_w: Callable[[np.ndarray], np.ndarray]
    K: Callable[[np.ndarray], float]
    K_grad: Callable[[np.ndarray], np.ndarray]
    K_hess: Callable[[np.ndarray], np.ndarray]
    q_n: np.ndarray
    h: float
    qd_n: np.ndarray = field(default_factory=lambda: np.zeros(0))
    qd_next: Callable[[np.ndarray], np.ndarray] | None = None
    forces: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    params: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tapes: Any = None
    configuration: Callable[[np.ndarray], np.ndarray] | None = None


class _Compiled:
    """CasADi Functions of the NMDP with inputs ``(theta, w, p)`` (built once)."""

    def __init__(self, nmdp: "NMDP") -> None:
        s = nmdp.system
        n, n_u, n_w, n_c = s.n_v, s.n_u, nmdp.n_w, s.n_c
        theta, w = ca.SX.sym("theta", n), ca.SX.sym("w", n_w)
        q_n, qd_n, h = ca.SX.sym("q_n", s.n_q), ca.SX.sym("qd_n", n), ca.SX.sym("h")
        q_d, qd_d, tau_0 = ca.SX.sym("q_d", n_u), ca.SX.sym("qd_d", n_u), ca.SX.sym("tau_0", n_u)
        p = ca.vertcat(q_n, qd_n, h, q_d, qd_d, tau_0)
        self.n_p = p.shape[0]
        S = nmdp.S
        if nmdp.chart.minimal:  # theta = q_{n+1}
            qd = (theta - q_n) / h
            tau = -nmdp.kp * (ca.mtimes(S, theta) - q_d) - nmdp.kd * (ca.mtimes(S, qd) - qd_d) + tau_0
            W, mags = polytope_columns(s, theta, nmdp.coeffs, nmdp.stiffness, nmdp.relax, nmdp.radius)
            G_free, K, _ = step_expressions(s, theta, q_n, qd_n, h, ca.mtimes(nmdp.B, tau), W)
            q_th = theta
        else:  # theta = xi, q_{n+1} = q(xi) = R(q_n + G(q_n) xi) (Chart), qd+ = xi / h
            q_th = nmdp.chart.retract(q_n, theta, SystemFunctions.of(s).qdot)
            qd = theta / h
            tau = -nmdp.kp * (ca.mtimes(nmdp.S_q, q_th) - q_d) - nmdp.kd * (ca.mtimes(S, qd) - qd_d) + tau_0
            W, mags = polytope_columns(s, q_th, nmdp.coeffs, nmdp.stiffness, nmdp.relax, nmdp.radius)
            G_free, K, _ = step_expressions(s, q_th, q_n, qd_n, h, ca.mtimes(nmdp.B, tau), W, qd=qd)
        #: q_{n+1} of theta at the step data p (theta itself in minimal coordinates)
        self.configuration = ca.Function("configuration", [theta, p], [q_th])
        self.kinetic = ca.Function("kinetic", [theta, p], [K])  # 1/2 qd+^T M qd+, whatever the objective
        if nmdp.objective == "effective":  # + 1/2 h (S qd+)^T diag(h Kp + Kd) (S qd+)
            Sqd = ca.mtimes(S, qd)
            K = K + 0.5 * h * ca.dot(Sqd, (h * nmdp.kp + nmdp.kd) * Sqd)
        G = G_free - ca.mtimes(W, w)
        Kh, Kg = ca.hessian(K, theta)
        tw = [theta, w, p]
        tp = [theta, p]
        self.G = ca.Function("G", tw, [G])
        self.G_theta = ca.Function("G_theta", tw, [ca.jacobian(G, theta)])
        # zeroth order: the vertices B_i (here the magnitudes s_i) held constant, J_i(theta) kept
        s_frozen = ca.SX.sym("s_frozen", n_c)
        W_frozen, _ = polytope_columns(s, q_th, nmdp.coeffs, nmdp.stiffness, nmdp.relax, nmdp.radius,
                                       magnitudes=s_frozen)
        G_zo = ca.substitute(ca.jacobian(G_free - ca.mtimes(W_frozen, w), theta), s_frozen, mags)
        self.G_theta_zo = ca.Function("G_theta_zo", tw, [G_zo])
        self.G_w = ca.Function("G_w", tp, [-W])
        self.K = ca.Function("K", tp, [K])
        self.K_grad = ca.Function("K_grad", tp, [Kg])
        self.K_hess = ca.Function("K_hess", tp, [Kh])
        # contact-frame forces (n_c x 3): s_i sum_j w_ij (1, mu c_j, mu s_j)
        rows = []
        V = nmdp.vertices
        for i in range(n_c):
            wi = w[i * V:(i + 1) * V]
            mu = float(s.mu[i])
            rows.append(ca.horzcat(mags[i] * ca.sum1(wi), mags[i] * mu * ca.dot(nmdp.coeffs[:, 0], wi),
                                   mags[i] * mu * ca.dot(nmdp.coeffs[:, 1], wi)))
        self.forces = ca.Function("forces", [theta, w, p], [ca.vertcat(*rows) if rows else ca.SX(0, 3)])
        if nmdp.chart.minimal:
            self.magnitudes = ca.Function("magnitudes", [theta], [mags])
        else:  # the magnitudes s(q) of a configuration q
            _, mq = polytope_columns(s, s.q, nmdp.coeffs, nmdp.stiffness, nmdp.relax, nmdp.radius)
            self.magnitudes = ca.Function("magnitudes", [s.q], [mq])
        # the NLP: x = (theta, w), g = (G, E^T w)
        E = np.kron(np.eye(n_c), np.ones((V, 1)))  # (n_w x n_c)
        self.nlp = {"x": ca.vertcat(theta, w), "p": p, "f": K,
                    "g": ca.vertcat(G, ca.mtimes(E.T, w))}
        self.E = E
        self._solvers: dict[str, Any] = {}
        # the PGM's functions as instruction tapes, all with inputs (theta, w, p), built once
        # (None, with the reason in tapes_note, when a graph holds an operation tapes do not take:
        # then the NMDPFunctions are CasADi's and PGM runs its Python loop)
        from contactmp.errors import UnsupportedProgramError
        from contactmp.solvers.pgm import PGMTapes
        from contactmp.solvers.pgm import Tape

        def tape(name: str, expr: ca.SX) -> Tape:
            return Tape.from_function(ca.Function(name, tw, [expr]))

        self.tapes: PGMTapes | None = None
        self.tapes_note = ""
        try:
            self.tapes = PGMTapes(G=tape("G", G), G_theta=tape("G_theta", ca.jacobian(G, theta)),
                                  G_theta_zo=tape("G_theta_zo", G_zo), G_w=tape("G_w", -W), K=tape("K", K),
                                  K_grad=tape("K_grad", Kg), K_hess=tape("K_hess", Kh))
        except UnsupportedProgramError as exc:
            self.tapes_note = str(exc)


# -- The formulation ---------------------------------------------------------------------------
class NMDP:
    """The NMDP of ``system`` (module docstring) with a pyramid polytope per contact.

    Parameters
    ----------
    system : ContactSystem with a constant 0/1 input selection ``B``: minimal coordinates
        (``qdot = v``: ``theta = q_{n+1}``) or a floating base with unit quaternions (``qdot = G(q) v``:
        ``theta = xi``, the increment of the :class:`Chart` ``q_{n+1} = R(q_n + G(q_n) xi)``, and
        ``qd+ = xi / h``; the step's ``x`` is then ``q_{n+1}``, see :meth:`configuration`).
    vertices : V, pyramid edges per contact (2 for planar systems, >= 3 otherwise; default 2
        planar, 4 otherwise).
    stiffness : k_i [N/m^2] >= 0 (scalar or per contact) of ``s_i = k min(phi - r, 0)^2 + relax``;
        None (default): ``load / design_depth^2`` (:func:`default_gains`: the most loaded contact at
        rest sinks ``design_depth`` under its load).
    relax : relax_i [N] >= 0 (scalar or per contact); ``stiffness = 0, relax = S``: a constant
        pyramid of height S; None (default): 0, no force at a gap.
    design_depth : d [m] > 0 of the default stiffness (default 1 mm,
        :data:`~contactmp.formulations.contact_scale.DESIGN_DEPTH`).
    radius : r_i [m] (scalar or per contact), the offset of the gap (a foot radius); any sign.
    kp, kd : stable-PD gains (scalar or per input, >= 0) [N/m or N m/rad, N s/m].
    objective : ``"effective"`` (default): ``K = 1/2 qd+^T (M + h B diag(h Kp + Kd) B^T) qd+``;
        ``"kinetic"``: ``1/2 qd+^T M qd+`` (module docstring: why the first is maximal dissipation
        under stable PD).
    """

    def __init__(self, system: ContactSystem, *, vertices: int | None = None, stiffness: ArrayLike | None = None,
                 relax: ArrayLike | None = None, radius: ArrayLike = 0.0, kp: ArrayLike = 0.0,
                 kd: ArrayLike = 0.0, objective: str = "effective", design_depth: float = DESIGN_DEPTH) -> None:
        set_polytope(self, system, vertices, stiffness, relax, radius, kp, kd, objective, design_depth)
        self._c = _Compiled(self)

    def origin(self, q_n: np.ndarray) -> np.ndarray:
        """The chart coordinate ``theta`` of ``q_n`` itself: ``q_n`` (minimal coordinates) or 0 (``xi``)."""
        return np.asarray(q_n, dtype=float).copy() if self.chart.minimal else np.zeros(self.n)

    def configuration(self, theta: np.ndarray, p: np.ndarray) -> np.ndarray:
        """``q_{n+1}`` of the unknown ``theta`` at the step data ``p``: ``theta`` itself (minimal
        coordinates) or ``R(q_n + G(q_n) theta)`` (:class:`Chart`)."""
        th = np.asarray(theta, dtype=float).ravel()
        if self.chart.minimal:
            return th
        return self._c.configuration(th, p).full().ravel()

    # ------------------------------------------------------------------------- step data
    def parameters(self, q_n: ArrayLike, qd_n: ArrayLike, h: float, q_d: ArrayLike | None = None,
                   qd_d: ArrayLike | None = None, tau_0: ArrayLike | None = None) -> np.ndarray:
        """The parameter vector ``p = (q_n, qd_n, h, q_d, qd_d, tau_0)`` after validation.
        Defaults: ``q_d = S q_n`` (hold the current pose), ``qd_d = 0``, ``tau_0 = 0``."""
        return np.concatenate([np.atleast_1d(x) for x in polytope_step_data(self, q_n, qd_n, h, q_d, qd_d, tau_0)])

    def functions(self, q_n: ArrayLike, qd_n: ArrayLike, h: float, q_d: ArrayLike | None = None,
                  qd_d: ArrayLike | None = None, tau_0: ArrayLike | None = None) -> NMDPFunctions:
        """The numeric callables of one step (:class:`NMDPFunctions`); no recompilation. They
        evaluate the instruction tapes built once with the problem (``tapes``: PGM then runs
        compiled), or, for a graph tapes do not take, the CasADi Functions."""
        p = self.parameters(q_n, qd_n, h, q_d, qd_d, tau_0)
        c, n, nq = self._c, self.n, self.n_q
        qn = self.origin(p[:nq])
        hh = float(p[nq + n])

        t, n_w, w0 = c.tapes, self.n_w, np.zeros(self.n_w)
        if t is None:
            return self._casadi_functions(p)

        def ev(tp: Any, th: Any, w: Any) -> np.ndarray:  # a tape's output, dense (rows, cols)
            return tp(np.asarray(th, dtype=float), np.asarray(w, dtype=float), p)[0]

        return NMDPFunctions(
            n=n, n_w=n_w, groups=[g.copy() for g in self.groups],
            G=lambda th, w: ev(t.G, th, w).ravel(),
            G_theta=lambda th, w: ev(t.G_theta, th, w),
            G_theta_zo=lambda th, w: ev(t.G_theta_zo, th, w),
            G_w=lambda th: ev(t.G_w, th, w0),
            K=lambda th: float(ev(t.K, th, w0)[0, 0]),
            K_grad=lambda th: ev(t.K_grad, th, w0).ravel(),
            K_hess=lambda th: ev(t.K_hess, th, w0),
            q_n=qn, h=hh, qd_n=p[nq:nq + n].copy(),
            qd_next=lambda th: (np.asarray(th, dtype=float).ravel() - qn) / hh,
            forces=lambda th, w: c.forces(th, w, p).full().reshape(self.system.n_c, 3),
            params=p.copy(), tapes=t, configuration=lambda th: self.configuration(th, p),
        )

    def _casadi_functions(self, p: np.ndarray) -> NMDPFunctions:
        """:meth:`functions` evaluated by the CasADi Functions (no tapes: PGM's Python loop)."""
        c, n, nq = self._c, self.n, self.n_q
        qn, hh = self.origin(p[:nq]), float(p[nq + n])

        def vec(f: ca.Function, *a: Any) -> np.ndarray:
            return f(*a).full().ravel()

        def mat(f: ca.Function, *a: Any) -> np.ndarray:
            return f(*a).full()

        return NMDPFunctions(
            n=n, n_w=self.n_w, groups=[g.copy() for g in self.groups],
            G=lambda th, w: vec(c.G, th, w, p),
            G_theta=lambda th, w: mat(c.G_theta, th, w, p),
            G_theta_zo=lambda th, w: mat(c.G_theta_zo, th, w, p),
            G_w=lambda th: mat(c.G_w, th, p).reshape(n, self.n_w),
            K=lambda th: float(c.K(th, p)),
            K_grad=lambda th: vec(c.K_grad, th, p),
            K_hess=lambda th: mat(c.K_hess, th, p),
            q_n=qn, h=hh, qd_n=p[nq:nq + n].copy(),
            qd_next=lambda th: (np.asarray(th, dtype=float).ravel() - qn) / hh,
            forces=lambda th, w: mat(c.forces, th, w, p).reshape(self.system.n_c, 3),
            params=p.copy(), configuration=lambda th: self.configuration(th, p),
        )

    # ------------------------------------------------------------------------- checking
    def check(self, p: np.ndarray, theta: np.ndarray, w: np.ndarray) -> tuple[float, float]:
        """``(||G(theta, w)||_inf, feasibility violation of w)`` at step data ``p``: the latter is
        ``max(max(-w), max_i (sum w_i - 1), 0)``."""
        G = self._c.G(theta, w, p).full().ravel()
        viol = 0.0
        if w.size:
            viol = max(float(np.max(-w)), float(np.max(self._c.E.T @ w - 1.0)), 0.0)
        return float(np.max(np.abs(G), initial=0.0)) if np.isfinite(G).all() else math.inf, viol

    # ------------------------------------------------------------------------- IPOPT
    def solve_ipopt(self, q_n: ArrayLike, qd_n: ArrayLike, h: float, q_d: ArrayLike | None = None,
                    qd_d: ArrayLike | None = None, tau_0: ArrayLike | None = None, *,
                    backend: str = "casadi", theta0: ArrayLike | None = None, w0: ArrayLike | None = None,
                    tol: float = 1e-6, ipopt_tol: float = 1e-10, max_iter: int = 500,
                    ipopt_options: dict[str, Any] | None = None) -> Result:
        """Solve one step ``min K s.t. G = 0, w >= 0, 1^T w_i <= 1`` with IPOPT.

        ``backend``: ``"casadi"`` (``casadi.nlpsol``) or ``"cyipopt"`` (callbacks from the same
        CasADi graph). Start: ``theta0`` (default ``q_n + h qd_n``) and ``w0`` (default 0). The NLP
        is built once per backend and options (through :class:`~contactmp.solvers.ipopt.IpoptNLP`).
        Never raises on non-convergence.

        Returns a :class:`~contactmp.result.Result`: ``x = q_{n+1}`` (``theta`` itself in minimal
        coordinates; ``extras["theta"]`` the chart's unknown); ``status`` ``SOLVED``
        only when IPOPT converged and the independent check passed: ``residual = ||G(theta, w)||_inf
        <= tol`` and ``w`` feasible to ``tol`` (``residuals``: ``G``, ``w_violation``);
        ``objective`` the NLP's objective ``K``; ``extras``: ``w``, ``qd_next``, ``forces`` ``(n_c,
        3)`` (per contact the normal and the (t, o) components of ``f_i = s_i sum_j w_ij b_j`` [N]),
        ``kinetic_energy`` ``1/2 qd+^T M qd+``, the multipliers ``nu`` (of G = 0), ``lam_w`` (of w >=
        0), ``lam_s`` (of 1^T w_i <= 1), ``magnitudes`` s_i and IPOPT's text ``backend_status``.
        """
        if backend not in BACKENDS:
            raise OptionError(f"backend must be one of {tuple(BACKENDS)}, got {backend!r}")
        tol = check_number("tol", tol, positive=True)
        if not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
            raise InputError("max_iter", f"must be an integer >= 1, got {max_iter!r}")
        p = self.parameters(q_n, qd_n, h, q_d, qd_d, tau_0)
        s, n, nq = self.system, self.n, self.n_q
        hp = float(p[nq + n])
        th0 = self.origin(p[:nq]) + hp * p[nq:nq + n] if theta0 is None else s._vec("theta0", theta0, n)
        ww0 = np.zeros(self.n_w) if w0 is None else s._vec("w0", w0, self.n_w)
        opts = {"print_level": 0, "sb": "yes", "tol": float(ipopt_tol), "max_iter": int(max_iter),
                "bound_relax_factor": 0.0, **(ipopt_options or {})}
        key = (backend, tuple(sorted(opts.items())))
        if key not in self._c._solvers:  # built once per backend and options
            self._c._solvers[key] = IpoptNLP(self._c.nlp, opts, backend, name="nmdp")
        lbx = np.concatenate([np.full(n, -np.inf), np.zeros(self.n_w)])
        lbg = np.concatenate([np.zeros(n), np.full(s.n_c, -np.inf)])
        ubg = np.concatenate([np.zeros(n), np.ones(s.n_c)])
        t0 = time.perf_counter()
        ans = self._c._solvers[key].solve(np.concatenate([th0, ww0]), p, lbx, np.inf, lbg, ubg)
        dt = time.perf_counter() - t0
        x, text = ans.x, ans.status
        theta, w = x[:n], x[n:]
        res, viol = self.check(p, theta, w)
        finite = bool(np.isfinite(x).all())
        status = ipopt_status(text, res <= tol and viol <= tol) if finite else Status.NUMERICAL_ERROR
        msg = "" if status is Status.SOLVED else (
            f"IPOPT: {text}; ||G||_inf = {res:.3g}, w violation = {viol:.3g} (tol {tol:g})")
        q_next = self.configuration(theta, p) if finite else theta
        return Result(
            status=status, x=q_next, solver=f"ipopt/{backend}", residual=res, tol=tol, iterations=ans.iterations,
            time_s=dt, message=msg, residuals={"G": res, "w_violation": viol},
            objective=float(self._c.K(theta, p)) if finite else math.inf,
            extras={"w": w, "qd_next": (theta - self.origin(p[:nq])) / hp, "theta": theta,
                    "forces": (self._c.forces(theta, w, p).full().reshape(s.n_c, 3) if finite
                               else np.full((s.n_c, 3), np.nan)),
                    "kinetic_energy": float(self._c.kinetic(theta, p)) if finite else math.inf,
                    "nu": ans.lam_g[:n], "lam_s": ans.lam_g[n:], "lam_w": -ans.lam_x[n:], "backend_status": text,
                    "w_violation": viol, "magnitudes": self._c.magnitudes(q_next).full().ravel() if finite else None})


# -- The KKT conditions as a Program block (contact-implicit trajectory optimization) ----------
@dataclass
class NMDPBlock:
    """Handles of one NMDP step written as its KKT conditions (see :func:`add_nmdp_step`).

    ``w`` vertex weights (``n_c V``, contact-major, ``>= 0``), ``nu`` the free multiplier of
    ``G = 0`` (``n``), ``lam_w`` the multiplier of ``w >= 0`` (``n_c V``, ``>= 0``), ``lam_s`` the
    multiplier of ``1 - 1^T w_i >= 0`` (``n_c``, ``>= 0``); ``v_next`` the expression
    ``(q1 - q0) / h`` and ``kinetic_energy`` the expression ``K(q1)``.
    """

    w: Variables
    nu: Variables
    lam_w: Variables
    lam_s: Variables
    dynamics: Constraint
    stationarity_q: Constraint
    stationarity_w: Constraint
    dissipation: Complementarity
    simplex: Complementarity
    v_next: ca.SX
    kinetic_energy: ca.SX
    groups: list[np.ndarray]
    coefficients: np.ndarray


def polytope_forces(system: ContactSystem, coefficients: np.ndarray, magnitudes: Any, w: Any) -> np.ndarray:
    """``(n_c, 3)`` contact-frame forces (normal, t, o) ``s_i sum_j w_ij (1, mu_i c_j, mu_i s_j)`` [N]
    of the vertex weights ``w`` (contact-major) and magnitudes ``s_i``."""
    V = coefficients.shape[0]
    W = np.asarray(w, dtype=float).reshape(-1, V)
    mu = np.asarray(system.mu, dtype=float)
    return np.asarray(magnitudes, dtype=float).reshape(-1)[:, None] * np.column_stack(
        [W.sum(axis=1), mu * (W @ coefficients[:, 0]), mu * (W @ coefficients[:, 1])])


def add_nmdp_step(prog: Program, system: ContactSystem, q0: Any, v0: Any, q1: Any, u: Any, h: float,
                  *, vertices: int | None = None, stiffness: ArrayLike = 0.0, relax: ArrayLike = 0.0,
                  radius: ArrayLike = 0.0, kp: ArrayLike = 0.0, kd: ArrayLike = 0.0, q_d: Any = None,
                  qd_d: Any = None, objective: str = "effective", mu: Any = None,
                  prefix: str = "nmdp") -> NMDPBlock:
    """Add one NMDP step ``(q0, v0) -> q1`` under the input ``u`` (``tau = B u``; with PD gains the
    stable PD torque ``tau = -Kp (S q1 - q_d) - Kd (S qd+ - qd_d) + u`` of :class:`NMDP`, and its
    ``objective``) as the first-order optimality (KKT) conditions of ``min K(q1) s.t. G(q1, w) = 0,
    w >= 0, 1^T w_i <= 1`` (block ``prefix``). With ``L = K + nu^T G - lam_w^T w - lam_s^T (1 - E^T w)``:

        G(q1, w) = 0                                            (dynamics, n rows)
        grad K(q1) + (dG/dq1)^T nu = 0                          (stationarity in q1)
        -W(q1)^T nu - lam_w + E lam_s = 0                       (stationarity in w; G_w = -W)
        0 <= w _|_ lam_w >= 0,   0 <= 1 - E^T w _|_ lam_s >= 0  (complementarity pairs)

    ``q0, v0, q1, u, q_d, qd_d`` are CasADi expressions (normally the symbols of existing program
    variables or parameters) or numbers (``q_d`` default ``S q0``, ``qd_d`` default 0); ``h > 0`` a
    number; ``mu`` (SX or numbers, one per contact) replaces the system's friction coefficients.
    The polytope options are those of :class:`NMDP`.
    """
    n_u = system.n_u
    B, hh, coeffs, k_, r_, rad, args = block_inputs(prog, system, h, vertices, stiffness, relax, radius,
                                                     q0=q0, v0=v0, q1=q1, u=u,
                                                     q_d=np.zeros(n_u) if q_d is None else q_d,
                                                     qd_d=np.zeros(n_u) if qd_d is None else qd_d)
    if q_d is None:
        args["q_d"] = ca.mtimes(B.T, args["q0"])
    kp_, kd_ = float_vector(kp, n_u, "kp", nonnegative=True), float_vector(kd, n_u, "kd", nonnegative=True)
    if objective not in OBJECTIVES:
        raise InputError("objective", f"must be one of {', '.join(map(repr, OBJECTIVES))}, got {objective!r}")
    mu_ = mu_column(system, mu)
    V, n, n_c = coeffs.shape[0], system.n_v, system.n_c
    n_w = n_c * V
    # the conditions in internal symbols, then substituted by a Function call
    th, a0, b0, uu = ca.SX.sym("theta", n), ca.SX.sym("q0", n), ca.SX.sym("v0", n), ca.SX.sym("u", n_u)
    qds, qdds, mus, hs = ca.SX.sym("q_d", n_u), ca.SX.sym("qd_d", n_u), ca.SX.sym("mu", n_c), ca.SX.sym("h")
    ws, nus, lws, lss = (ca.SX.sym(s_, m) for s_, m in (("w", n_w), ("nu", n), ("lw", n_w), ("ls", n_c)))
    # numbers stay numbers in the expressions (the transcription's graph, rounding included, is the
    # one it always was); symbols enter only when mu or h is symbolic (a sensitivity's Program)
    h_in = hs if isinstance(hh, ca.SX) else hh
    W, _ = polytope_columns(system, th, coeffs, k_, r_, rad, mu=None if mu is None else mus)
    qd_sym = (th - a0) / h_in
    S = B.T
    tau = uu
    pd = bool(np.any(kp_ > 0) or np.any(kd_ > 0))
    if pd:
        tau = -kp_ * (ca.mtimes(S, th) - qds) - kd_ * (ca.mtimes(S, qd_sym) - qdds) + uu
    G_free, K, qd = step_expressions(system, th, a0, b0, h_in, ca.mtimes(B, tau), W)
    if pd and objective == "effective":  # + 1/2 h (S qd+)^T diag(h Kp + Kd) (S qd+), as in NMDP
        Sqd = ca.mtimes(S, qd)
        K = K + 0.5 * h_in * ca.dot(Sqd, (h_in * kp_ + kd_) * Sqd)
    G = G_free - ca.mtimes(W, ws)
    E = np.kron(np.eye(n_c), np.ones((V, 1)))
    st_q = ca.gradient(K, th) + ca.mtimes(ca.jacobian(G, th).T, nus)
    st_w = -ca.mtimes(W.T, nus) - lws + ca.mtimes(E, lss)
    F = ca.Function("nmdp_kkt", [th, a0, b0, uu, qds, qdds, mus, hs, ws, nus, lws, lss], [G, st_q, st_w, K, qd])

    blk = prefix
    w = prog.add_variables(f"{prefix}/w", n_w, lb=0.0, block=blk)
    nu = prog.add_variables(f"{prefix}/nu", n, block=blk)
    lam_w = prog.add_variables(f"{prefix}/lam_w", n_w, lb=0.0, block=blk)
    lam_s = prog.add_variables(f"{prefix}/lam_s", n_c, lb=0.0, block=blk)
    Ge, sq, sw, Ke, qde = F(args["q1"], args["q0"], args["v0"], args["u"], args["q_d"], args["qd_d"], mu_, hh,
                            w.sym, nu.sym, lam_w.sym, lam_s.sym)
    dyn = prog.add_constraint(Ge, 0.0, 0.0, name=f"{prefix}/dynamics", block=blk)
    stq = prog.add_constraint(sq, 0.0, 0.0, name=f"{prefix}/stationarity_q", block=blk)
    stw = prog.add_constraint(sw, 0.0, 0.0, name=f"{prefix}/stationarity_w", block=blk)
    dis = prog.add_complementarity(w.sym, lam_w.sym, name=f"{prefix}/dissipation", block=blk)
    smp = prog.add_complementarity(1.0 - ca.mtimes(E.T, w.sym), lam_s.sym, name=f"{prefix}/simplex",
                                   block=blk)
    groups = [np.arange(i * V, (i + 1) * V) for i in range(n_c)]
    return NMDPBlock(w, nu, lam_w, lam_s, dyn, stq, stw, dis, smp, qde, Ke, groups, coeffs)


# -- The step formulations "nmdp" (and, in linearized_mdp.py, "mdp") ---------------------------
@dataclass(eq=False, kw_only=True)
class PolytopeStep(StepBlock):
    """A wrench-polytope step block (NMDP or linearized MDP) as a
    :class:`~contactmp.formulations.base.StepBlock`: ``kkt`` holds the formulation's own handles
    (:class:`NMDPBlock` / ``LinearizedMDPBlock``); the impulses are ``h s_i(q) sum_j w_ij
    (1, mu c_j, mu s_j)`` with the magnitudes ``s_i`` at ``q_{k+1}`` (NMDP, backward Euler) or
    ``q_k`` (linearized MDP), whose positions in ``x`` are ``q_index``."""

    kkt: Any
    system: ContactSystem
    h: float
    q_index: np.ndarray
    magnitudes: Callable[[np.ndarray], Any]

    def impulses(self, x: Any) -> np.ndarray:
        """``(n_c, 3)`` contact-frame impulses of the polytope forces over the step."""
        xv = np.asarray(x, dtype=float).ravel()
        mags = np.asarray(self.magnitudes(xv[self.q_index]), dtype=float).ravel()
        return self.h * polytope_forces(self.system, self.kkt.coefficients, mags, self.program.value(self.kkt.w, x))


def _variable_positions(prog: Program, e: Any, field_name: str) -> np.ndarray:
    """The positions in ``x`` of the entries of ``e`` (each must be one variable of ``prog``)."""
    pos = [prog.variable_index(e[i]) for i in range(e.shape[0])] if isinstance(e, ca.SX) else [None]
    if any(j is None for j in pos):
        raise InputError(field_name, "must be variables of the program (a trajectory-optimization step)")
    return np.array(pos, dtype=int)


@dataclass(frozen=True)
class PolytopeOptions:
    """The options both polytope formulations have (see :class:`NMDP`): ``stiffness=None`` and
    ``relax=None`` are derived from the system (:func:`default_gains`: ``k = load / design_depth^2``,
    ``relax = 0``); ``impact_speed`` [m/s] is the landing speed the declared penetration covers
    (:func:`polytope_tolerances`)."""

    vertices: int | None = None
    stiffness: Any = None
    relax: Any = None
    radius: Any = 0.0
    kp: Any = 0.0
    kd: Any = 0.0
    objective: str = "effective"
    design_depth: float = DESIGN_DEPTH
    impact_speed: float = IMPACT_SPEED


class PolytopeFormulation(Formulation):
    """What the two wrench-polytope formulations share: the polytope options, one problem object per
    system (:class:`NMDP` or :class:`~contactmp.formulations.linearized_mdp.LinearizedMDP`, which
    validate the system: ``qdot = v`` and a 0/1 input selection ``B``), every contact in every
    step, and a time-stepping step of their own (:meth:`advance`) with the stable-PD targets
    ``targets(t + h) -> (q_d, qd_d)`` (None: hold the current pose) and the input as a feedforward
    torque ``tau_0 = u``. A step's ``result.x`` is the vertex weights ``w``; the previous step's
    warm-starts the next (clipped to the polytopes)."""

    problem_class: Any = None
    model_parameters = ("mu",)
    #: a step is differentiated substep by substep (:mod:`contactmp.formulations.polytope_sensitivity`)
    substeps_differentiable = True

    def problem(self, system: ContactSystem) -> Any:
        """The formulation's problem object for ``system`` (built once per system)."""
        cache = self.__dict__.setdefault("_problems", {})  # keyed by the system (it hashes by identity)
        if system not in cache:
            o = self.options
            kw = dict(vertices=o.vertices, stiffness=o.stiffness, relax=o.relax, radius=o.radius, kp=o.kp, kd=o.kd,
                      objective=o.objective, design_depth=o.design_depth, **self._problem_options())
            cache[system] = self.problem_class(system, **kw)
        return cache[system]

    def _problem_options(self) -> dict[str, Any]:
        return {}

    def check_system(self, system: ContactSystem, h: float) -> None:
        """Build the problem object (it validates the system and every option)."""
        self.problem(system)

    def physics_tolerances(self, system: ContactSystem, h: float) -> PhysicsTolerances:
        """What the polytope ``s_i = k min(phi_i - r_i, 0)^2 + relax_i`` allows (:func:`polytope_tolerances`):
        ``penetration`` the depth a contact reaches landing at :data:`IMPACT_SPEED` with the step's
        own overshoot, ``gap = max(r, 0) + design_depth`` (the MDP: plus one step's lift) and
        ``gap_force = max relax``."""
        return polytope_tolerances(self.problem(system), h, self.options.impact_speed)

    def _kkt_options(self, system: ContactSystem) -> dict[str, Any]:
        p = self.problem(system)
        return dict(vertices=p.vertices, stiffness=p.stiffness, relax=p.relax, radius=p.radius)

    def _block(self, prog: Program, step: Step, kkt: Any, v_next: Variables, q_at: Any) -> PolytopeStep:
        return PolytopeStep(program=prog, v_next=v_next, mu=np.asarray(step.system.mu, dtype=float), kkt=kkt,
                            system=step.system, h=step.h, q_index=_variable_positions(prog, q_at, "q"),
                            magnitudes=self._magnitudes(step.system),
                            constraints=tuple(c for c in (getattr(kkt, n, None) for n in
                                                          ("dynamics", "stationarity_q", "stationarity_w")) if c),
                            complementarities=(kkt.dissipation, kkt.simplex),
                            handles={n: getattr(kkt, n) for n in ("w", "nu", "lam_w", "lam_s", "sigma")
                                     if isinstance(getattr(kkt, n, None), Variables)})

    def _magnitudes(self, system: ContactSystem) -> Callable[[np.ndarray], Any]:
        """``q -> s(q)``, the polytope magnitudes of every contact."""
        return self.problem(system)._c.magnitudes

    def _substep(self, system: ContactSystem, method: str, q: np.ndarray, qd: np.ndarray, t: float, hh: float,
                 w0: np.ndarray, targets: Any, tau_0: np.ndarray) -> dict[str, Any]:
        raise NotImplementedError

    def _method(self, solver: Any) -> str:
        return self.options.method if solver is None else solver

    def advance(self, step: Step, *, solver: Any = None, tol: float = 1e-10) -> StepOutcome:
        """One frame ``[t, t + h]``: one substep, or (NMDP with ``adaptive``) the adaptive step of
        Algorithm 2 (:func:`contactmp.solvers.pgm.projected_gradient.adaptive_step`: a substep whose status is not
        ``solved`` is replaced by two of half its length, down to ``h_min``; when it gives up, the
        frame is completed by one unverified substep over the remaining time, status
        ``numerical_error``). The frame's forces are the substep-length-weighted mean of the
        substeps' forces and its ``residual`` the largest of its substeps' (each judged by the substep's
        own check); ``result.extras`` holds ``substeps``, ``h_smallest``, ``projections``
        (PGM's Newton projections), ``forces`` [N] and ``w``."""
        s, h = step.system, step.h
        if step.params:
            raise InputError("params", f"{self.name}'s time step takes its model parameters from its problem object "
                             f"(mu of the system, the polytope options); got params {sorted(step.params)}")
        method = self._method(solver)
        prob = self.problem(s)
        w0 = np.zeros(prob.n_w)
        if step.previous is not None and "w" in step.previous.extras:
            w = np.asarray(step.previous.extras["w"], dtype=float)
            w0 = _feasible(np.clip(w, 0.0, None), prob.groups) if np.isfinite(w).all() else w0
        targets = step.targets if step.targets is not None else (lambda _t: (None, None))
        q, qd, t = np.asarray(step.q, dtype=float), np.asarray(step.v, dtype=float), float(step.t)
        tau = np.asarray(step.u, dtype=float)
        t0 = time.perf_counter()
        acc = {"outer": 0, "proj": 0, "impulse": np.zeros((s.n_c, 3)), "details": [], "residual": 0.0}
        substeps, h_smallest, status, msg = [h], h, Status.SOLVED, ""
        if not getattr(self.options, "adaptive", False):
            r = self._substep(s, method, q, qd, t, h, w0, targets, tau)
            qq, vv, ww, status, msg = r["q"], r["qd"], r["w"], r["status"], r["message"]
            acc.update(outer=r["outer"], proj=r["proj"], impulse=h * r["forces"], details=[_detail(r)],
                       residual=r["residual"])
        else:
            from contactmp.solvers.pgm import adaptive_step

            def step_fn(state: tuple[np.ndarray, np.ndarray, float, np.ndarray], hh: float
                        ) -> tuple[tuple[np.ndarray, np.ndarray, float, np.ndarray], bool]:
                qs, vs, ts, ws = state
                r = self._substep(s, method, qs, vs, ts, hh, ws, targets, tau)
                acc["outer"] += r["outer"]
                acc["proj"] += r["proj"]
                if r["status"] is not Status.SOLVED:
                    return state, False
                acc["residual"] = max(acc["residual"], r["residual"])
                acc["impulse"] = acc["impulse"] + hh * r["forces"]
                acc["details"].append(_detail(r))
                return (r["q"], r["qd"], ts + hh, r["w"]), True

            ad = adaptive_step(step_fn, h, (q, qd, t, w0), h_min=self.options.h_min)
            qq, vv, tt, ww = ad.extras["state"]
            substeps, h_smallest, msg = list(ad.extras["substeps"]), ad.extras["h_smallest"], ad.message
            if not ad.success:  # finish the frame with one unverified substep over the remaining time
                rest = t + h - tt
                r = self._substep(s, method, qq, vv, tt, rest, ww, targets, tau)
                acc["outer"] += r["outer"]
                acc["proj"] += r["proj"]
                qq, vv, ww = r["q"], r["qd"], r["w"]
                acc["impulse"] = acc["impulse"] + rest * r["forces"]
                acc["details"].append(_detail(r))
                acc["residual"] = max(acc["residual"], r["residual"])
                status = Status.NUMERICAL_ERROR
                msg = f"adaptive step gave up ({ad.message}); last substep unverified: {r['message']}"
        ww = np.asarray(ww, dtype=float)
        res = Result(status, ww, f"{self.name}/{method}", float(acc["residual"]), tol, int(acc["outer"]),
                     time.perf_counter() - t0, msg,
                     {"substeps": substeps, "h_smallest": h_smallest, "projections": int(acc["proj"]),
                      "forces": acc["impulse"] / h, "w": ww, "substep_details": acc["details"]})
        return StepOutcome(np.asarray(qq, dtype=float), np.asarray(vv, dtype=float), acc["impulse"],
                           np.ones(s.n_c, dtype=bool), res)


def _detail(r: dict[str, Any]) -> dict[str, Any]:
    """What a substep's sensitivity needs (:mod:`contactmp.formulations.polytope_sensitivity`): its
    step data ``p = (q_n, qd_n, h, q_d, qd_d, tau_0)``, whether the PD targets held the pose
    (``q_d = S q_n``), and its answer ``q``, ``qd``, ``w``."""
    return {"p": r["p"], "hold": r["hold"], "q": r["q"], "qd": r["qd"], "w": r["w"]}


def _feasible(w: np.ndarray, groups: list[np.ndarray]) -> np.ndarray:
    """Scale each group of ``w >= 0`` so that its sum is at most 1 (a feasible warm start)."""
    out = w.copy()
    for g in groups:
        tot = float(out[g].sum())
        if tot > 1.0:
            out[g] /= tot
    return out


#: NMDP method name -> (solver kind, option): the projected gradient method (zeroth order or not)
#: or IPOPT through a backend
NMDP_METHODS: dict[str, tuple[str, Any]] = {
    "pgm": ("pgm", False), "zopgm": ("pgm", True), "ipopt": ("ipopt", "casadi"), "ipopt-cyipopt": ("ipopt", "cyipopt"),
}


@register
class NMDPFormulation(PolytopeFormulation):
    """Pan and Hauser's nonconvex maximal-dissipation step (backward Euler in ``q_{k+1}``, wrench
    polytopes; :class:`NMDP`). In trajectory optimization its KKT conditions (:func:`add_nmdp_step`);
    in time stepping one NMDP per frame by ``method`` (``"pgm"``, ``"zopgm"``, ``"ipopt"``,
    ``"ipopt-cyipopt"``), halved adaptively (``adaptive``, down to ``h_min``); ``polish``: refine each
    solved substep by Newton's method on its KKT conditions on the pieces the solver identified
    (:func:`~contactmp.formulations.polytope_sensitivity.polish_substep`; PGM's answers on the
    standing hopper are 1e-9 - 1e-7 m/s from the polished ones, which are exact to rounding: what
    finite differences of a rollout need; kept only when the refined point passes the step's check).

    Options: ``vertices``, ``stiffness`` [N/m^2], ``relax`` [N], ``radius`` [m] (the polytope
    ``s_i = k min(phi - r, 0)^2 + relax``; None: ``load / design_depth^2`` and 0, see
    :func:`default_gains`), ``design_depth`` [m], ``impact_speed`` [m/s] (the landing speed the
    declared penetration covers), ``kp``, ``kd`` (stable PD), ``objective``
    (``"effective"`` or ``"kinetic"``), ``method``, ``adaptive``, ``h_min`` [s],
    ``solver_options`` (keyword options of ``pgm`` or :meth:`NMDP.solve_ipopt`), ``polish``."""

    name = "nmdp"
    backward_euler = True
    problem_class = NMDP

    @dataclass(frozen=True)
    class Options(PolytopeOptions):
        """See the class docstring."""

        method: str = "pgm"
        adaptive: bool = True
        h_min: float = 1e-5
        solver_options: dict | None = None
        polish: bool = False

        def __post_init__(self) -> None:
            if self.method not in NMDP_METHODS:
                raise InputError("method", f"must be one of {tuple(NMDP_METHODS)}, got {self.method!r}")
            if not isinstance(self.adaptive, bool):
                raise InputError("adaptive", f"must be True or False, got {self.adaptive!r}")
            check_number("h_min", self.h_min, positive=True)
            if self.solver_options is not None and not isinstance(self.solver_options, dict):
                raise InputError("solver_options", "must be a dict of keyword options")
            if not isinstance(self.polish, bool):
                raise InputError("polish", f"must be True or False, got {self.polish!r}")

    def step_solvers(self) -> dict[str, Any]:
        """Every NMDP method (:data:`NMDP_METHODS`), the option ``method`` first."""
        return {m: m for m in sorted(NMDP_METHODS, key=lambda m: m != self.options.method)}

    def check_system(self, system: ContactSystem, h: float) -> None:
        """The system must fit :class:`NMDP`; ``h_min <= h``; ``polish`` only in minimal coordinates."""
        super().check_system(system, h)
        if self.options.h_min > h:
            raise InputError("h_min", f"must be <= h = {h:g}, got {self.options.h_min!r}")
        if self.options.polish:
            minimal_coordinates(system, "polish", "the polish (Newton on the step's KKT block)")

    def _method(self, solver: Any) -> str:
        method = self.options.method if solver is None else solver
        if method not in NMDP_METHODS:
            raise OptionError(f"solver for formulation 'nmdp' must be one of {tuple(NMDP_METHODS)}, got {solver!r}")
        return method

    def add_step(self, prog: Program, step: Step) -> PolytopeStep:
        """``v_{k+1}`` and the KKT conditions of the NMDP (:func:`add_nmdp_step`) from ``q_k`` to ``q_{k+1}``."""
        if step.q_next is None:
            raise InputError("q_next", "the NMDP step is backward Euler: the transcription must give q_{k+1}")
        s = step.system
        v_next = prog.add_variables(f"{step.prefix}/v_next", s.n_v, block=step.prefix)
        kkt = add_nmdp_step(prog, s, step.q, step.v, step.q_next, step.u, step.h, prefix=step.prefix,
                            mu=step.param("mu", None), **self._kkt_options(s))
        return self._block(prog, step, kkt, v_next, step.q_next)

    def _polished(self, system: ContactSystem, p: np.ndarray, theta: np.ndarray, w: np.ndarray, fns: NMDPFunctions
                  ) -> tuple[np.ndarray, np.ndarray]:
        """``(theta, w)`` refined by Newton's method on the step's KKT pieces (option ``polish``), kept
        only when that converges and the refined point passes the step's own check (``||G||_inf`` at
        most the larger of the solver's and its tolerance ``tol``, default 1e-8; ``w`` feasible to
        1e-12); else the solver's answer."""
        from contactmp.formulations.polytope_sensitivity import polish_substep

        got = polish_substep(self, system, p, theta, fns.qd_next(theta), w)
        if got is None:
            return theta, w
        th2, w2 = got[0], got[2]
        c = self.problem(system)
        res, _ = c.check(p, theta, w)
        res2, viol2 = c.check(p, th2, w2)
        tol = float((self.options.solver_options or {}).get("tol", 1e-8))
        return (th2, w2) if res2 <= max(res, tol) and viol2 <= 1e-12 else (theta, w)

    def _substep(self, system: ContactSystem, method: str, q: np.ndarray, qd: np.ndarray, t: float, hh: float,
                 w0: np.ndarray, targets: Any, tau_0: np.ndarray) -> dict[str, Any]:
        """One NMDP substep of length ``hh`` from ``(q, qd)`` at time ``t``, from ``theta0 = q + hh qd``
        (a floating base's chart: ``xi0 = hh qd``)."""
        kind, option = NMDP_METHODS[method]
        prob, opts = self.problem(system), dict(self.options.solver_options or {})
        q_d, qd_d = targets(t + hh)
        theta0 = prob.origin(q) + hh * qd
        data = {"p": prob.parameters(q, qd, hh, q_d, qd_d, tau_0), "hold": q_d is None}
        if kind == "ipopt":
            r = prob.solve_ipopt(q, qd, hh, q_d, qd_d, tau_0, backend=option, theta0=theta0, w0=w0, **opts)
            theta, qd_next, w, forces = r.x, r.extras["qd_next"], r.extras["w"], r.extras["forces"]
            if self.options.polish and r.status is Status.SOLVED:
                fns = prob.functions(q, qd, hh, q_d, qd_d, tau_0)
                theta, w = self._polished(system, data["p"], theta, w, fns)
                qd_next, forces = fns.qd_next(theta), fns.forces(theta, w)
            return {"status": r.status, "q": theta, "qd": qd_next, "w": w, "forces": forces,
                    "outer": r.iterations, "proj": 0, "message": r.message, "residual": r.residual, **data}
        from contactmp.solvers.pgm import pgm

        fns = prob.functions(q, qd, hh, q_d, qd_d, tau_0)
        r = pgm(fns, theta0, w0, zeroth_order=option, **opts)
        theta, w = r.x, r.extras["w"]
        if self.options.polish and r.status is Status.SOLVED:
            theta, w = self._polished(system, data["p"], theta, w, fns)
        finite = bool(np.all(np.isfinite(theta)) and np.all(np.isfinite(w)))
        forces = fns.forces(theta, w) if finite else np.full((system.n_c, 3), np.nan)
        q_next = fns.configuration(theta) if finite else np.full(system.n_q, np.nan)
        return {"status": r.status, "q": q_next, "qd": fns.qd_next(theta), "w": w, "forces": forces,
                "outer": r.iterations, "proj": r.extras["projections"], "message": r.message, "residual": r.residual,
                **data}
