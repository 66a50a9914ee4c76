"""Drumwright's compliant contact step as a velocity-level Program block (the KKT form of the cone QP).

:class:`~contactmp.formulations.compliant_friction.CompliantFriction` solves, per step, the convex
cone QP ``min 1/2 lambda^T A lambda + c^T lambda`` over ``lambda_i in K_mu_i`` with
``A = D + h G M^-1 G^T``, ``c = (D K phi0 on normal rows) + G a``, ``a = v + h M^-1 f`` and
``D = diag(1 / (h K + B)`` on normal rows, ``1 / Bt`` on tangential rows``). Since
``v+ = a + h M^-1 G^T lambda``, the QP's residual is

    w = A lambda + c = D lambda + (D K phi0, 0) + G v+,

so with impulses ``p = h lambda`` (the unit of the rigid velocity steps) the compliant step is the rigid
velocity step with a regularized residual:

    M (v+ - v) = h f + J_n^T p_n + J_t^T p_t + J_o^T p_o                     (dynamics, v+ free)
    w_n = D_n K phi0 + J_n v+ + (D_n / h) p_n,     D_n = 1 / (h K + B)       (normal: spring law)
    w_T = J_T v+ + p_T / (h Bt)                                              (tangential: slip + creep)

As ``K -> inf`` (B fixed), ``D_n K -> 1 / h`` and ``D_n -> 0``: ``w_n`` becomes the rigid, gap-stabilized
row ``phi0 / h + J_n v+``; as ``Bt -> inf``, ``w_T`` becomes the rigid slip ``u_T = J_T v+``.

The QP's optimality conditions are the conic complementarity ``K_mu contains p _|_ w in K_mu*`` per
contact. In the smooth disk form of :mod:`contactmp.formulations.velocity_cone` (planar systems: the
segment) they read

    0 <= p_n  _|_  w_n - mu gamma >= 0                                       (associated normal row)
    p_T = mu p_n s,    w_T + gamma s = 0,    0 <= 1 - |s|^2  _|_  gamma >= 0

(``s`` is the cone block's ``w`` variable: the friction direction in units of ``mu p_n``).
Check: ``p_n = 0`` gives ``gamma = ||w_T||`` and ``w_n >= mu ||w_T||``, i.e. ``w in K*``; sticking
(``gamma = 0``) gives ``w = 0``; sliding gives ``||p_T|| = mu p_n``, ``w_T = -gamma p_T / ||p_T||``,
``w_n = mu gamma`` -- exactly the three KKT modes of the module docstring of ``compliant_friction``.
The term ``- mu gamma`` is De Saxce's modification; it is what makes the step a convex QP (the
*associated* law: a sliding body rides ``(h + B / K) mu gamma`` above the spring's equilibrium).
``associated=False`` drops it: Coulomb's non-associated law with the regularized slip (no longer the
QP's KKT conditions; it coincides with it whenever no contact slides).

The pyramid variant replaces the disk by the k-gon of
:func:`~contactmp.formulations.velocity_pyramid.add_velocity_pyramid_step` (``p_T = sum_i beta_i g_i``):
the KKT conditions of the same QP over the pyramid are

    0 <= p_n     _|_  w_n - mu lambda >= 0     (associated; ``w_n >= 0`` when ``associated=False``)
    0 <= beta_i  _|_  lambda + g_i . w_T >= 0,       0 <= lambda  _|_  mu p_n - sum_i beta_i >= 0

Gains ``K`` [N/m], ``B`` [N s/m], ``Bt`` [N s/m] are numbers per contact (scalars broadcast;
``K, B >= 0``, ``h K + B > 0``, ``Bt > 0``); every other input may be a CasADi expression, so a
transcription can stack one block per step. The blocks return the handles of the rigid steps
(:class:`~contactmp.formulations.velocity_cone.VelocityConeStep`,
:class:`~contactmp.formulations.velocity_pyramid.VelocityPyramidStep`); their ``non_penetration`` pair
is the spring-law pair above.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

import math

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, OptionError, check_number, check_step
from contactmp.formulations.base import Formulation, PhysicsTolerances, Step, StepData, register
from contactmp.formulations.contact_scale import DESIGN_DEPTH, ContactScale, contact_scale
from contactmp.formulations.velocity_cone import VelocityConeStep, cone_block, disk_step_inputs
from contactmp.formulations.step_rows import dynamics_row, numeric_mu
from contactmp.formulations.velocity_pyramid import VelocityPyramidStep, pyramid_generators
from contactmp.models.symbolic import ContactSystem
from contactmp.program import Program
from contactmp.validate import float_vector

__all__ = ["add_velocity_compliant_step", "compliant_gains", "FRICTION_LAWS", "Compliant", "CREEP_TIME", "IMPACT_SPEED",
           "damping_ramp"]

#: friction law name -> description
FRICTION_LAWS: dict[str, str] = {
    "cone": "Coulomb disk (planar: segment), smooth disk form",
    "pyramid": "k-gon circumscribing the disk, generator weights",
}


#: the compliant gains' names (TimeStepping's keywords, and the ``Step.params`` keys)
GAIN_NAMES = ("stiffness", "damping", "tangential_damping")


def gain_array(name: str, val: ArrayLike | None, n_c: int) -> np.ndarray:
    """One compliant gain as an array of ``n_c`` finite values ``>= 0`` (a scalar broadcasts);
    InputError naming ``name`` otherwise (also when ``val`` is None)."""
    if val is None:
        raise InputError(name, "is required by the compliant formulation")
    return float_vector(val, n_c, name, nonnegative=True)


def compliant_gains(stiffness: ArrayLike | None, damping: ArrayLike | None,
                    tangential_damping: ArrayLike | None, n_c: int, h: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(K, B, Bt)`` as arrays of length ``n_c`` (scalars broadcast), validated: finite, ``>= 0``,
    ``Bt > 0`` and ``h K + B > 0``. Raises :class:`InputError` naming ``stiffness``, ``damping`` or
    ``tangential_damping`` (the argument names of TimeStepping's compliant gains)."""
    K, B, Bt = (gain_array(name, val, n_c) for name, val in
                (("stiffness", stiffness), ("damping", damping), ("tangential_damping", tangential_damping)))
    if (Bt <= 0).any():
        raise InputError("tangential_damping", "must be > 0")
    if not isinstance(check_step(h), (ca.SX, ca.MX)) and (float(h) * K + B <= 0).any():
        raise InputError("stiffness", "h * stiffness + damping must be > 0")
    return K, B, Bt


def add_velocity_compliant_step(prog: Program, *, M: Any, f: Any, v: Any, Jn: Any, Jt: Any, Jo: Any,
                                mu: Any, phi: Any, h: float, stiffness: ArrayLike, damping: ArrayLike,
                                tangential_damping: ArrayLike, friction: str = "cone", facets: int = 4,
                                associated: bool = True, prefix: str = "step",
                                planar: bool | None = None) -> VelocityConeStep | VelocityPyramidStep:
    """Add one compliant (Drumwright) velocity step to ``prog`` (block ``prefix``); see the module docstring.

    Shapes as in :func:`~contactmp.formulations.velocity_cone.add_velocity_cone_step`; ``phi`` is the
    gap ``phi0`` at the start of the step, ``stiffness`` K, ``damping`` B, ``tangential_damping`` Bt per
    contact. ``friction`` is ``"cone"`` (disk form; planar systems: the segment, ``planar`` decided as
    in the cone step) or ``"pyramid"`` (``facets`` generators; even for planar systems). With
    ``associated`` (this block's default; the registered :class:`Compliant` formulation's default
    is False, which keeps sliding bodies on their surface) the block's conditions are exactly the KKT conditions of
    :class:`~contactmp.formulations.compliant_friction.CompliantFriction`'s QP (impulses ``p = h lambda``).
    """
    if friction not in FRICTION_LAWS:
        raise InputError("friction", f"must be one of {', '.join(map(repr, FRICTION_LAWS))}, got {friction!r}")
    if not isinstance(associated, (bool, np.bool_)):
        raise InputError("associated", f"must be True or False, got {associated!r}")
    nc, nv, planar, M_, f_, v_, Jn_, Jt_, Jo_, phi_, mu_ = disk_step_inputs(M, f, v, Jn, Jt, Jo, mu, phi, h,
                                                                             planar)
    if any(isinstance(g, (ca.SX, ca.MX)) for g in (stiffness, damping, tangential_damping)):
        K, B, Bt = (g if isinstance(g, (ca.SX, ca.MX)) else ca.DM(gain_array(name, g, nc)) for name, g in
                    zip(GAIN_NAMES, (stiffness, damping, tangential_damping)))  # symbolic gains: a sensitivity
    else:
        K, B, Bt = (ca.DM(g) for g in compliant_gains(stiffness, damping, tangential_damping, nc, h))
    Dn = 1.0 / (h * K + B)
    DK = Dn * K
    Dn_h = Dn / h
    inv_hBt = 1.0 / (h * Bt)

    blk = prefix
    v_next = prog.add_variables(f"{prefix}/v_next", nv, init=0.0, block=blk)
    p_n = prog.add_variables(f"{prefix}/p_n", nc, lb=0.0, block=blk)
    vp = v_next.sym
    # normal residual w_n = D K phi0 + Jn v+ + (D / h) p_n
    w_n = DK * phi_ + ca.mtimes(Jn_, vp) + Dn_h * p_n.sym

    if friction == "pyramid":
        G = pyramid_generators(facets)  # validates facets
        if planar and facets % 2:
            raise InputError("facets", "must be even for a planar system")
        k = G.shape[0]
        beta = prog.add_variables(f"{prefix}/beta", nc * k, lb=0.0, block=blk)
        lam = prog.add_variables(f"{prefix}/lambda", nc, lb=0.0, block=blk)
        Jo_eff = Jo_ if Jo_ is not None else ca.DM.zeros(nc, nv)
        bsym = ca.reshape(beta.sym, k, nc)  # column j: contact j's weights
        p_t = ca.mtimes(ca.DM(G[:, 0]).T, bsym).T  # (nc,)
        p_o = ca.mtimes(ca.DM(G[:, 1]).T, bsym).T
        fric = ca.mtimes(Jt_.T, p_t) + ca.mtimes(Jo_eff.T, p_o)
        dynamics = dynamics_row(prog, prefix, M_, f_, v_, h, vp, Jn_, p_n.sym, fric)
        w_t = ca.mtimes(Jt_, vp) + inv_hBt * p_t
        w_o = ca.mtimes(Jo_eff, vp) + inv_hBt * p_o
        rows = [G[i, 0] * w_t[j] + G[i, 1] * w_o[j] for j in range(nc) for i in range(k)]
        E = np.kron(np.eye(nc), np.ones((k, 1)))
        normal = prog.add_complementarity(p_n.sym, w_n - (mu_ * lam.sym if associated else 0),
                                          name=f"{prefix}/non_penetration", block=blk)
        dissipation = prog.add_complementarity(beta.sym, ca.mtimes(E, lam.sym) + ca.vertcat(*rows),
                                               name=f"{prefix}/dissipation", block=blk)
        polygon = prog.add_complementarity(lam.sym, mu_ * p_n.sym - ca.mtimes(E.T, beta.sym),
                                           name=f"{prefix}/polygon", block=blk)
        return VelocityPyramidStep(program=prog, v_next=v_next, mu=numeric_mu(mu_, nc), p_n=p_n, beta=beta,
                                   lam=lam, dynamics=dynamics, non_penetration=normal, dissipation=dissipation,
                                   polygon=polygon, generators=G, constraints=(dynamics,),
                                   complementarities=(normal, dissipation, polygon),
                                   handles={"p_n": p_n, "beta": beta, "lambda": lam})

    p_t = prog.add_variables(f"{prefix}/p_t", nc, block=blk)
    p_o = None if planar else prog.add_variables(f"{prefix}/p_o", nc, block=blk)
    fric = ca.mtimes(Jt_.T, p_t.sym)
    if p_o is not None:
        fric = fric + ca.mtimes(Jo_.T, p_o.sym)
    dynamics = dynamics_row(prog, prefix, M_, f_, v_, h, vp, Jn_, p_n.sym, fric)
    w_t = ca.mtimes(Jt_, vp) + inv_hBt * p_t.sym
    u = (w_n, w_t) if planar else (w_n, w_t, ca.mtimes(Jo_, vp) + inv_hBt * p_o.sym)
    return cone_block(prog, prefix, v_next, p_n, p_t, p_o, dynamics, u, mu_, associated=bool(associated))


Gain = Union[ArrayLike, Callable[[np.ndarray, np.ndarray], ArrayLike], None]

#: the creep time T [s] of the default tangential damping ``Bt = load T / d``: a sticking contact at
#: its friction limit ``mu lambda_n <= mu load`` creeps at ``|lambda_T| / Bt <= mu d / T``, i.e. by at
#: most ``mu`` design depths per creep time (0.6 mm/s at mu = 0.6, d = 1 mm)
CREEP_TIME = 1.0
#: the design impact speed [m/s] of :meth:`Compliant.physics_tolerances` (a fall from 0.2 m:
#: ``sqrt(2 g 0.2) = 1.98 m/s``): the extra penetration and the damper's reach are bounded at it
IMPACT_SPEED = 2.0


@register
class Compliant(Formulation):
    """Drumwright's compliant contact (:func:`add_velocity_compliant_step`): per contact a
    unilateral spring-damper normal row and damped tangential rows,

        lambda_n = max(0, -K phi(t+h) - B phidot(t+h)),     lambda_T = -Bt u_T  (inside K_mu),

    taken implicitly over the step (``phi(t+h) = phi0 + h Jn v+``). There is no ``phi / h`` gap
    stabilization: the penetration is the spring's. With ``associated=False`` (default) the
    normal row is Coulomb's non-associated law on the regularized slip (an fc3d problem per time
    step with the cone, an LCP with the pyramid); with ``associated=True`` it carries De Saxce's
    ``- mu gamma``, and a time step is the convex cone QP of
    :class:`~contactmp.formulations.compliant_friction.CompliantFriction` (its KKT conditions,
    reduced to the cone LCP ``K_mu contains p _|_ W p + q in K_mu*`` and solved as that QP).

    Options and their defaults (derived from the system, :mod:`~contactmp.formulations.contact_scale`:
    ``load`` [N] the normal force of the most loaded contact at rest at ``q_nominal``, ``m_c`` [kg]
    the mass its spring carries; ``d = design_depth``):

    * ``design_depth`` d [m] (default ``DESIGN_DEPTH`` = 1 mm): how far the most loaded contact sinks
      at rest under the default stiffness; with :attr:`IMPACT_SPEED` it sets the declared
      :meth:`physics_tolerances`.
    * ``stiffness`` K [N/m] (default ``load / d``: a linear spring that sinks ``d`` under ``load``;
      a ball of 1 kg: 9810 N/m).
    * ``damping`` B [N s/m] (default: critical damping of that contact's spring, ``B_c = 2 sqrt(K
      m_c)``, with ``K`` the stiffness used (given or default), *proportional to the depth at the
      step's start* (Hunt and Crossley's damping): ``B = B_c max(0, -phi(q_k)) / d``. Zero at and
      above the surface, so the damper never pushes a body that has not touched (a constant ``B``
      pushes wherever ``K phi(t+h) + B phidot(t+h) < 0``: an approaching contact is braked ``B
      |phidot| / K`` above the surface, 3.3 cm for a ball dropped from 0.2 m with ``B_c``); critical at the static
      depth ``d`` and smooth there (no kink at rest for a gradient), more than critical deeper
      in an impact. With a callable ``stiffness`` the default damping is 0 (give ``damping``).
    * ``tangential_damping`` Bt [N s/m] (default ``load T / d`` with ``T = CREEP_TIME`` = 1 s, i.e.
      ``K T`` for the default ``K``): a sticking contact creeps at ``|lambda_T| / Bt <= mu load /
      Bt = mu d / T`` (at most ``mu`` design depths per second; a box held by friction on a 30 deg
      incline, mu = 0.61: measured 0.57 mm/s, bound 0.61 mm/s). For 1 kg at d = 1 mm this is the
      ``Bt = 1e4 m_c`` of formulation-compare's scenes.
    * ``friction`` (``"cone"`` or ``"pyramid"``), ``facets`` (pyramid).
    * ``associated`` (default False): De Saxce's ``- mu gamma`` in the normal row (the cone QP's
      KKT conditions). Its artifact: a sliding contact's normal force is the spring's plus ``(h K +
      B) mu s`` (``s`` the slip beyond the damper's creep), so a sliding body rides ``(h + B/K) mu s``
      above the spring's equilibrium and rises while ``s`` grows: a 0.2 m cube sliding down a 30 deg
      incline (mu = 0.3, h = 0.01) from rest ends with every corner 2.7 mm above the plane after
      0.30 m and 3.4 mm after 0.43 m with the default gains (12 mm after 0.43 m with a constant
      critical damping and ``Bt = 1e4 m_c``; 4.5 mm after 0.3 m on issue 35's box), where the
      non-associated law keeps its bottom corners 0.44-0.83 mm inside (the spring's depth under
      the tilted load). Choose it for the convex QP (a unique step, the cone-QP backends).

    Given gains are used as given (bit for bit: the options ``stiffness``, ``damping``,
    ``tangential_damping`` per contact, scalars broadcast; ``h K + B > 0``, ``Bt > 0``; in time
    stepping ``stiffness`` and ``damping`` may be callables ``gain(phi, q)`` of the gaps of all
    contacts and ``q_k``, evaluated at every step's start and frozen over it, e.g.
    :func:`~contactmp.models.compliance.hertz_gains`; a contact with ``h K + B = 0`` then carries no
    force in that step). A default that cannot be derived (no gravity load on any contact at
    ``q_nominal``) is an :class:`InputError` naming the option to give.
    """

    name = "compliant"
    model_parameters = ("mu", "stiffness", "damping", "tangential_damping")

    @dataclass(frozen=True)
    class Options:
        """The gains, the friction set and the normal law (see the class docstring); None: derived."""

        stiffness: Gain = None
        damping: Gain = None
        tangential_damping: Any = None
        friction: str = "cone"
        facets: int = 4
        associated: bool = False
        design_depth: float = DESIGN_DEPTH

        def __post_init__(self) -> None:
            if self.friction not in FRICTION_LAWS:
                raise InputError("friction", f"must be one of {', '.join(map(repr, FRICTION_LAWS))}, "
                                             f"got {self.friction!r}")
            if not isinstance(self.associated, (bool, np.bool_)):
                raise InputError("associated", f"must be True or False, got {self.associated!r}")
            if self.friction == "pyramid":
                pyramid_generators(self.facets)
            check_number("design_depth", self.design_depth, positive=True)

    @property
    def solver(self) -> Any:  # type: ignore[override]
        """The pyramid's LCP solvers; the cone QP's backend (IPOPT) for the associated cone; the
        fc3d solvers (Newton first, as the rigid cone) for the non-associated cone."""
        return {"lcp": ("lemke", "newton"), "cone": "ipopt" if self.options.associated else None}

    @property
    def auto_options(self) -> dict[str, Any]:  # type: ignore[override]
        """fc3d with Newton first for the non-associated cone (as :class:`~contactmp.formulations.
        velocity_cone.Cone`); none otherwise."""
        o = self.options
        return {"quick": False} if (o.friction == "cone" and not o.associated) else {}

    def check_system(self, system: ContactSystem, h: float) -> None:
        """Validate the gains for ``system.n_c`` contacts and step ``h`` (constant gains, the
        defaults derived here: an :class:`InputError` naming the option when they cannot be) or
        ``tangential_damping`` alone (callable gains); even facets for a planar pyramid."""
        o = self.options
        if self.callable_gains:
            Bt = self.tangential_gain(system)
            if (Bt <= 0).any():
                raise InputError("tangential_damping", "must be > 0")
        else:
            K, B, Bt = self.gains(system, np.zeros(system.n_c), np.asarray(system.q_nominal, dtype=float))
            compliant_gains(K, B, Bt, system.n_c, h)
        if o.friction == "pyramid" and system.planar and o.facets % 2:
            raise InputError("facets", "must be even for a planar system")

    def step_solvers(self) -> dict[str, Any]:
        """Every LCP solver (``friction="pyramid"``), every backend of the cone QP (associated cone)
        or every fc3d solver (non-associated cone)."""
        if self.options.friction == "pyramid":
            from contactmp.solvers.registry import LCP_SOLVERS

            return {"lemke+newton": None, **{name: {"lcp": name} for name in LCP_SOLVERS}}
        if not self.options.associated:
            from contactmp.solvers.registry import FC3D_SOLVERS

            return {"auto": None, **{name: {"cone": name} for name in FC3D_SOLVERS}}
        from contactmp.solvers.cone_qp import CONE_SOLVERS

        return {name: {"cone": name} for name in CONE_SOLVERS}

    @property
    def parametric(self) -> bool:  # type: ignore[override]
        """With constant gains the block is a function of the state alone (the default damping's
        ramp is an expression of the gaps), so a time step reuses its Program
        (:attr:`Formulation.parametric`); callable gains are evaluated per step."""
        return not self.callable_gains

    def model_parameter_value(self, name: str, system: ContactSystem, q: np.ndarray, field: str = "wrt") -> np.ndarray:
        """``mu`` (the system's) or one of the gains ``stiffness``, ``damping``,
        ``tangential_damping`` of a step from ``q`` (:meth:`gains`); InputError naming ``field``
        for callable gains (they depend on the configuration: no constant to differentiate by)."""
        gains = ("stiffness", "damping", "tangential_damping")
        if name not in gains:
            return super().model_parameter_value(name, system, q, field)
        if self.callable_gains:
            raise InputError(field, f"{self.name}'s {name} depends on the configuration (a callable gain): "
                             "no constant to differentiate by")
        return dict(zip(gains, self.gains(system, system.eval_phi(q), q)))[name]

    @property
    def callable_gains(self) -> bool:
        """True when ``stiffness`` or ``damping`` is a callable ``gain(phi, q)``."""
        return callable(self.options.stiffness) or callable(self.options.damping)

    @property
    def ramped_damping(self) -> bool:
        """True when the damping is the default ramp ``B_c max(0, -phi_k) / d`` (no
        ``damping`` given, a constant ``stiffness``)."""
        return self.options.damping is None and not callable(self.options.stiffness)

    # -- the derived defaults --------------------------------------------------------------------
    def stiffness_gain(self, system: ContactSystem) -> np.ndarray:
        """``K`` (``n_c``) of constant gains: the given ``stiffness``, else ``load / d``."""
        o = self.options
        if o.stiffness is not None:
            return gain_array("stiffness", o.stiffness, system.n_c)
        return np.full(system.n_c, contact_scale(system, "stiffness").stiffness(o.design_depth))

    def critical_damping(self, system: ContactSystem, K: np.ndarray) -> np.ndarray:
        """``B_c = 2 sqrt(K m_c)`` (``n_c``) for the stiffnesses ``K``: the ramp's value at the depth ``d``."""
        m_c = contact_scale(system, "damping").mass
        return 2.0 * np.sqrt(np.asarray(K, dtype=float) * m_c)

    def tangential_gain(self, system: ContactSystem) -> np.ndarray:
        """``Bt`` (``n_c``): the given ``tangential_damping``, else ``load CREEP_TIME / d``."""
        o = self.options
        if o.tangential_damping is not None:
            return gain_array("tangential_damping", o.tangential_damping, system.n_c)
        load = contact_scale(system, "tangential_damping").load
        return np.full(system.n_c, load * CREEP_TIME / check_number("design_depth", o.design_depth, positive=True))

    def gains(self, system: ContactSystem, phi: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(K, B, Bt)`` (each ``n_c``) of a step starting at ``q`` with the gaps ``phi`` of all
        contacts: the constants (given or derived; the default damping ramped with ``phi``), or the
        callables evaluated at ``(phi, q)`` and checked (finite, >= 0)."""
        o, nc = self.options, system.n_c
        if self.ramped_damping:
            K = self.stiffness_gain(system)
            B = self.critical_damping(system, K) * damping_ramp(np.asarray(phi, dtype=float), o.design_depth)
            return K, B, self.tangential_gain(system)
        out = []
        for name, g in (("stiffness", o.stiffness), ("damping", 0.0 if o.damping is None else o.damping)):
            if callable(g):
                val = np.asarray(g(np.array(phi, dtype=float), np.array(q, dtype=float)), dtype=float)
                val = np.full(nc, float(val)) if val.ndim == 0 else val.ravel()
                if val.shape != (nc,) or not np.isfinite(val).all() or (val < 0).any():
                    raise InputError(name, f"callable must return a scalar or {nc} finite values >= 0, got {val!r}")
                out.append(val)
            elif name == "stiffness":
                out.append(self.stiffness_gain(system))
            else:
                out.append(gain_array(name, g, nc))
        return out[0], out[1], self.tangential_gain(system)

    def physics_tolerances(self, system: ContactSystem, h: float) -> PhysicsTolerances:
        """The compliant contact's :class:`PhysicsTolerances`, from the *design* spring ``K_d = load
        / d`` with ``m_c`` (not from given gains, so a wrong stiffness is flagged, not excused):

        * ``penetration``: the static depth ``d`` plus an impact at :data:`IMPACT_SPEED` ``V`` (2
          m/s, a 0.2 m fall), by the energy bound of an undamped spring: ``1/2 K_d delta^2 = 1/2
          m_c V^2 + load delta``, ``delta = (load + sqrt(load^2 + K_d m_c V^2)) / K_d = d (1 + sqrt(1
          + V^2 / (a d)))`` with ``a = load / m_c`` (about ``g``): 21 mm at d = 1 mm. Damping only
          removes energy; measured with the defaults (h = 0.01): a ball (or a cube landing flat)
          dropped from 0.05 m sinks 3.2 mm, from 0.2 m 4.9 mm (the bound at those speeds: 11.1 and
          21.0 mm), without rebound.
        * ``gap``: the damper's reach: ``d`` with the default ramped damping (zero at and above the
          surface, so a contact pushes only while its linearized end gap ``phi0 + h Jn v+`` is
          negative, up to the explicit kinematics' curvature, as the rigid models); with a given
          constant damping ``d + max_i B_i / K_i V`` (a constant damper pushes while ``K phi(t+h)
          + B phidot(t+h) < 0``, up to ``B |phidot| / K`` above the surface). The associated law's
          lift (``associated=True``) is not excused: a sliding contact that rides more than the gap
          above its surface while pushing is flagged (``gap_force``), its documented artifact.
        * ``gap_force``: 0; ``cone_factor``: the friction set's (:meth:`Formulation.cone_factor`:
          ``1 / cos(pi / k)`` with ``friction="pyramid"``, whose k-gon circumscribes the disk).

        When nothing can be derived (no gravity load), the penetration is ``d`` plus ``V sqrt(m_e /
        K)`` with a given constant ``K`` and the largest effective contact mass ``m_e = 1 / (Jn_i
        M^-1 Jn_i^T)`` at ``q_nominal``, else ``d``."""
        o = self.options
        d, V = float(o.design_depth), IMPACT_SPEED
        try:
            cs: ContactScale | None = contact_scale(system, "stiffness")
        except InputError:
            cs = None
        K = None
        if not callable(o.stiffness) and (o.stiffness is not None or cs is not None):
            K = self.stiffness_gain(system)
        gap = d
        if K is not None and o.damping is not None and not callable(o.damping):  # a given constant damper
            B = gain_array("damping", o.damping, system.n_c)
            reach = np.divide(B, K, out=np.full(system.n_c, math.inf), where=K > 0)
            reach[B == 0] = 0.0
            gap = d + float(np.max(reach, initial=0.0)) * V
        if cs is not None:
            Kd = cs.stiffness(d)
            return PhysicsTolerances(penetration=(cs.load + math.sqrt(cs.load ** 2 + Kd * cs.mass * V * V)) / Kd,
                                     gap=gap, cone_factor=self.cone_factor())
        pen = d
        if K is not None:
            q = np.asarray(system.q_nominal, dtype=float)
            Jn = system.eval_J(q)[0]
            inv_m = np.einsum("ij,ij->i", Jn, np.linalg.solve(system.eval_M(q), Jn.T).T)
            m_e = 1.0 / np.maximum(inv_m, 1e-300)
            pen = d + float(np.max(V * np.sqrt(m_e / np.maximum(K, 1e-300)), initial=0.0))
        return PhysicsTolerances(penetration=pen, gap=gap, cone_factor=self.cone_factor())

    def _step_gains(self, step: Step) -> tuple[np.ndarray, ...]:
        """:meth:`gains` at the step's start (``q_nominal`` and zero gaps for a symbolic step, where
        only constant gains are allowed), evaluated once per step (a callable gain is called once)."""
        gains = step._cache.get("gains")
        if gains is None:
            s = step.system
            q = step.q if step.numeric else s.q_nominal
            gains = self.gains(s, s.eval_phi(q) if step.numeric else np.zeros(s.n_c), q)
            gains = step._cache["gains"] = tuple(step.param(name, g) for name, g in zip(GAIN_NAMES, gains))
        return gains

    def step_contacts(self, step: Step, data: StepData) -> np.ndarray:
        """The step's contacts with ``h K + B > 0`` (the others carry no force in this step)."""
        K, B, _ = self._step_gains(step)
        idx = np.arange(step.system.n_c) if step.contacts is None else np.asarray(step.contacts, dtype=int)
        return np.flatnonzero(step.h * K[idx] + B[idx] > 0)

    def add_step(self, prog: Program, step: Step) -> VelocityConeStep | VelocityPyramidStep:
        """:func:`add_velocity_compliant_step` at the step's data and gains; the default damping is
        the ramp ``B_c max(0, -phi0) / d`` of the step's gaps ``phi0`` (an expression of the
        state in a parametric or trajectory-optimization step)."""
        o, s = self.options, step.system
        if self.callable_gains and not step.numeric:
            raise OptionError("configuration-dependent gains (callables) need numeric steps (TimeStepping)")
        idx = slice(None) if step.contacts is None else [int(i) for i in np.asarray(step.contacts, dtype=int)]
        K, B, Bt = (g[idx] for g in self._step_gains(step))
        d = step.data()
        if self.ramped_damping and not (step.params and "damping" in step.params):
            Bc = self.critical_damping(s, self.stiffness_gain(s))[idx]
            B = ca.DM(Bc) * damping_ramp(d.phi, o.design_depth) if isinstance(d.phi, (ca.SX, ca.MX)) \
                else Bc * damping_ramp(np.asarray(d.phi, dtype=float).ravel(), o.design_depth)
        return add_velocity_compliant_step(
            prog, M=d.M, f=d.f, v=step.v, Jn=d.Jn, Jt=d.Jt, Jo=d.Jo, mu=d.mu, phi=d.phi, h=step.h,
            stiffness=K, damping=B, tangential_damping=Bt, friction=o.friction, facets=o.facets,
            associated=o.associated, prefix=step.prefix, planar=s.planar)


def damping_ramp(phi: Any, depth: float) -> Any:
    """The default damping's factor ``max(0, -phi) / d`` of the gaps ``phi`` (numbers or a CasADi
    expression): 0 at and above the surface, 1 at the design depth ``d``."""
    if isinstance(phi, (ca.SX, ca.MX)):
        return ca.fmax(0.0, -phi) / depth
    return np.maximum(0.0, -np.asarray(phi, dtype=float)) / depth
