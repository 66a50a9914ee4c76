"""The velocity-level time-stepping form of Coulomb's friction cone, as a Program block.

One step of length ``h`` of the Stewart-Trinkle / Anitescu-Potra scheme in impulses, the same step
as :func:`~contactmp.formulations.velocity_pyramid.add_velocity_pyramid_step` (same dynamics row,
same non-penetration pair) with Coulomb's disk in place of the k-gon:

    M (v+ - v) = h f + J_n^T p_n + J_t^T p_t + J_o^T p_o               (dynamics, v+ free)
    0 <= p_n  _|_  phi / h + J_n v+ >= 0                               (non-penetration)
    (p_t, p_o) = mu p_n w                                              (friction in the disk)
    (J_t v+, J_o v+) + gamma w = 0                                     (sliding opposes friction)
    0 <= 1 - |w|^2  _|_  gamma >= 0                                    (slides only on the boundary)

with ``f = B u - h(q, v)``. The last three rows are the smooth *disk form* of Coulomb's law
(C) of :mod:`contactmp.formulations.cone_ncp` (Trinkle et al. (10), (13), (31) with De Saxce's
modified velocity), written by that module's ``cone_law`` with ``r = p`` and ``u = J v+``:
per contact, ``gamma = ||u_T||`` is the sliding speed and ``w`` the friction impulse in units of
``mu p_n``. Sticking: ``gamma = 0``, ``u_T = 0``, ``|p_T| <= mu p_n``; sliding: ``|w| = 1`` and
``p_T = -mu p_n u_T / ||u_T||``, exactly opposite to the sliding velocity in every direction
(the k-gon's maximal dissipation picks a vertex instead: up to ``pi / k`` off, 45 degrees for the
square pyramid).

Planar systems
--------------
A planar :class:`~contactmp.models.symbolic.ContactSystem` has ``J_o = 0`` (nothing moves along
the out-of-plane tangent). There the block keeps only the ``t`` direction: ``w`` is one number per
contact, ``p_t = mu p_n w``, ``J_t v+ + gamma w = 0``, ``0 <= 1 - w^2 _|_ gamma >= 0``, and there
is no ``p_o``. The planar cone is the segment ``|p_t| <= mu p_n`` with the force opposing a
nonzero sliding velocity, which is exactly what the pyramid with an *even* number of facets gives
in the plane (its generators' ``t`` components reach ``+-1`` and the polygon's support along
``t`` is the segment; that is why planar pyramids require even ``facets``). Keeping a ``w_o`` with
``u_o = 0`` instead would leave ``w_o`` free at every sticking contact and the program degenerate.
The one-direction law is the disk law with ``w_o = 0``; ``cone_law`` takes two tangents only, so
it is written here (:func:`_segment_law`).

Every input may be a number array or a CasADi expression (``v`` may be the previous step's
variables), so transcriptions can stack one block per step; the program is polynomial, so it
also goes to Pyomo (``Program.to_pyomo``), and without an objective it is a square MCP
(``Program.to_mcp``: ``v+, p_t, p_o, w`` pair with the equality rows, ``p_n`` and ``gamma`` with
their slacks). ``w`` has no bounds in the block (``|w| <= 1`` is the pair's own side, and a square
MCP pairs every bounded variable); the MPCC strategies' NLPs bound it to
``[-cone_bound, cone_bound]`` (:attr:`~contactmp.solvers.nlp.solve.NLPOptions.cone_bounds`; ``cone_bound``
1.5 by default): at a contact without force that does not slide, ``w`` enters no row but
``1 - |w|^2 >= 0``, whose linearization at ``w = 0`` is flat, and IPOPT's steps in it were
unbounded (the rest-to-rest cone box: 1,070-6,729 iterations, 136-388 with the box at 1). The box is wider than the disk so that it is never active at
a point of it.

Degenerate points
-----------------
At a sticking contact (``gamma = 0``) the two rows ``u_T + gamma w = 0`` constrain ``u_T`` only
through ``J_T v+``; when ``v+`` is fixed by other rows (a boundary condition ``v_N = vf`` of a
transcription) or when several sticking contacts of one rigid body have dependent rows
``J_T``, they are linearly dependent (and at ``gamma = w = 0``, e.g. a force-free contact at rest,
their ``(gamma, w)`` gradient vanishes). IPOPT handles such rank-deficient Jacobians badly: a 3-D
box pushed from rest *to rest* did not converge, from rest to a free final velocity it did.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, check_step
from contactmp.formulations.base import Formulation, Step, StepBlock, register
from contactmp.formulations.step_rows import (check_gap, dynamics_row, matrix, normal_rate, normal_side, numeric_mu,
                                               step_inputs)
from contactmp.program import Complementarity, Constraint, Program, Variables

__all__ = ["VelocityConeStep", "add_velocity_cone_step", "cone_block", "Cone"]


@dataclass(eq=False, kw_only=True)
class VelocityConeStep(StepBlock):
    """Handles of one cone step block (a :class:`~contactmp.formulations.base.StepBlock`; query a
    solve with ``result.value(handle)``).

    ``w`` holds ``(w_t..., w_o...)`` (``2 n_c``), or ``w_t`` alone (``n_c``) when ``planar``;
    ``p_o`` is None when ``planar``. ``cone`` is the block's
    :class:`~contactmp.program.ConeComplementarity` (its pairs and rows are ``non_penetration``,
    ``friction``, ``direction`` and ``disk``).
    """

    p_n: Variables  #: normal impulses (n_c, >= 0)
    p_t: Variables  #: friction impulses along t (n_c)
    p_o: Variables | None  #: friction impulses along o (n_c); None for planar systems
    w: Variables  #: friction direction in the unit disk (units of mu p_n)
    gamma: Variables  #: sliding speeds ||(J_t v+, J_o v+)|| (n_c, >= 0)
    dynamics: Constraint
    non_penetration: Complementarity
    friction: Constraint  #: p_T - mu p_n w = 0
    direction: Constraint  #: u_T + gamma w = 0
    disk: Complementarity  #: 0 <= 1 - |w|^2 _|_ gamma >= 0
    planar: bool

    def friction_impulse(self, x: ArrayLike) -> np.ndarray:
        """(n_c, 2) tangential impulses ``(p_t, p_o)`` read from the program vector ``x``
        (``p_o = 0`` for planar systems). The pyramid block's accessor of the same name takes its
        generator weights ``beta`` instead; both return the same ``(t, o)`` layout."""
        xv = np.asarray(x, dtype=float).ravel()
        last = max(h.index.stop for h in (self.p_t, self.p_o) if h is not None)
        if xv.size < last:
            raise InputError("x", f"has length {xv.size}; the block's variables end at index {last}")
        out = np.zeros((self.n_c, 2))
        out[:, 0] = xv[self.p_t.index]
        if self.p_o is not None:
            out[:, 1] = xv[self.p_o.index]
        return out

    def impulses(self, x: Any) -> np.ndarray:
        """``(n_c, 3)`` impulses ``(p_n, p_t, p_o)`` at the program vector ``x``."""
        return np.column_stack([self.program.value(self.p_n, x), self.friction_impulse(x)])

    def modes(self, x: Any, tol: float = 1e-9) -> list[str]:
        """:meth:`StepBlock.speed_modes` with the sliding speed ``gamma``."""
        return self.speed_modes(self.p_n, self.gamma, x, tol)


def cone_block(prog: Program, prefix: str, v_next: Variables, p_n: Variables, p_t: Variables,
               p_o: Variables | None, dynamics: Constraint, u: tuple[Any, ...], mu: Any,
               associated: bool) -> VelocityConeStep:
    """Add Coulomb's law ``(p_n, p_t[, p_o]) in K_mu`` against the contact velocities ``u`` as one
    :class:`~contactmp.program.ConeComplementarity` (named ``prefix``) and return the step block."""
    r = (p_n.sym, p_t.sym) if p_o is None else (p_n.sym, p_t.sym, p_o.sym)
    cone = prog.add_cone_complementarity(r, u, mu, associated=associated, name=prefix, block=prefix)
    handles = {"p_n": p_n, "p_t": p_t, "w": cone.w, "gamma": cone.gamma}
    if p_o is not None:
        handles["p_o"] = p_o
    return VelocityConeStep(program=prog, v_next=v_next, mu=numeric_mu(mu, p_n.size), p_n=p_n, p_t=p_t, p_o=p_o,
                            w=cone.w, gamma=cone.gamma, dynamics=dynamics, non_penetration=cone.normal,
                            friction=cone.friction, direction=cone.direction, disk=cone.disk,
                            planar=p_o is None, constraints=(dynamics, cone.friction, cone.direction),
                            complementarities=(cone.normal, cone.disk), cones=(cone,), handles=handles)


def _structurally_zero(J: Any) -> bool:
    """True when ``J`` is zero: every entry of a number array, or every stored entry of an SX
    (an MX is zero only when CasADi can tell structurally)."""
    if isinstance(J, np.ndarray):
        return not np.any(J)
    if isinstance(J, ca.DM):
        return not np.any(np.asarray(J))
    if isinstance(J, ca.SX):
        return all(J.nz[i].is_zero() for i in range(J.nnz()))
    return J.nnz() == 0 or bool(J.is_zero())


def disk_step_inputs(M: Any, f: Any, v: Any, Jn: Any, Jt: Any, Jo: Any, mu: Any, phi: Any, h: float,
                     planar: bool | None) -> tuple[Any, ...]:
    """Checked inputs of a velocity step with Coulomb's disk: ``(n_c, n_v, planar, M, f, v, Jn, Jt,
    Jo, phi, mu)`` (``mu`` as a CasADi DM when numeric; ``planar`` decided from ``Jo`` when None, as
    :func:`add_velocity_cone_step` documents). InputError naming the bad field."""
    check_step(h)
    if planar is not None and not isinstance(planar, (bool, np.bool_)):
        raise InputError("planar", f"must be True, False or None, got {planar!r}")
    Jn_ = Jn if isinstance(Jn, (ca.SX, ca.MX, ca.DM)) else np.atleast_2d(np.asarray(Jn, dtype=float))
    nc, nv = Jn_.shape
    Jn_ = matrix(Jn_, (nc, nv), "Jn")
    Jt_ = matrix(Jt, (nc, nv), "Jt")
    Jo_ = None if Jo is None else matrix(Jo, (nc, nv), "Jo")
    zero_o = Jo_ is None or _structurally_zero(Jo_)
    if planar is None:
        planar = zero_o
    elif planar and not zero_o:
        raise InputError("Jo", "must be zero (or None) when planar=True")
    elif not planar and Jo_ is None:
        raise InputError("Jo", "is required when planar=False")
    M_, f_, v_, phi_, mu_ = step_inputs(M, f, v, phi, mu, nc, nv)
    if isinstance(mu_, np.ndarray):
        mu_ = ca.DM(mu_)
    return nc, nv, bool(planar), M_, f_, v_, Jn_, Jt_, Jo_, phi_, mu_


def add_velocity_cone_step(prog: Program, *, M: Any, f: Any, v: Any, Jn: Any, Jt: Any, Jo: Any, mu: Any,
                           phi: Any, h: float, prefix: str = "step", gap_stabilization: bool = True,
                           planar: bool | None = None,
                           gap_rate: Callable[[Any], Any] | None = None) -> VelocityConeStep:
    """Add one velocity-level Coulomb-cone step to ``prog`` (block name ``prefix``).

    Shapes as in :func:`~contactmp.formulations.velocity_pyramid.add_velocity_pyramid_step`:
    ``M`` (n_v x n_v, symmetric positive definite when numeric), ``f`` and ``v`` (n_v), ``Jn``,
    ``Jt``, ``Jo`` (n_c x n_v), ``mu`` and ``phi`` (n_c; ``mu >= 0``). With ``gap_stabilization``
    the non-penetration row is ``phi / h + J_n v+ >= 0`` (Anitescu-Potra), otherwise
    ``J_n v+ >= 0``; ``gap_rate``, when given, maps ``v+`` (SX, n_v) to the normal side instead
    (n_c; e.g. :meth:`~contactmp.formulations.base.Step.end_gap_rate`). ``planar`` keeps only the
    ``t`` tangent (see the module docstring); None
    decides from ``Jo``: planar exactly when ``Jo`` is None or zero (numerically, or structurally
    for a CasADi expression). ``planar=True`` with a nonzero ``Jo`` raises :class:`InputError`.

    Variables (block ``prefix``): ``v_next`` (n_v), ``p_n`` (n_c, >= 0), ``p_t``, ``p_o`` (n_c;
    no ``p_o`` when planar), ``w`` (2 n_c: ``w_t`` then ``w_o``; n_c when planar), ``gamma``
    (n_c, >= 0).
    """
    nc, nv, planar, M_, f_, v_, Jn_, Jt_, Jo_, phi_, mu_ = disk_step_inputs(M, f, v, Jn, Jt, Jo, mu, phi, h,
                                                                             planar)

    blk = prefix
    v_next = prog.add_variables(f"{prefix}/v_next", nv, init=0.0, block=blk)
    p_n = prog.add_variables(f"{prefix}/p_n", nc, lb=0.0, block=blk)
    p_t = prog.add_variables(f"{prefix}/p_t", nc, block=blk)
    p_o = None if planar else prog.add_variables(f"{prefix}/p_o", nc, block=blk)
    vp = v_next.sym
    friction_impulse = ca.mtimes(Jt_.T, p_t.sym)
    if p_o is not None:
        friction_impulse = friction_impulse + ca.mtimes(Jo_.T, p_o.sym)
    dynamics = dynamics_row(prog, prefix, M_, f_, v_, h, vp, Jn_, p_n.sym, friction_impulse)
    u_n = normal_rate(vp, Jn_, phi_, h, gap_stabilization, gap_rate)
    u = (u_n, ca.mtimes(Jt_, vp)) if planar else (u_n, ca.mtimes(Jt_, vp), ca.mtimes(Jo_, vp))
    return cone_block(prog, prefix, v_next, p_n, p_t, p_o, dynamics, u, mu_, associated=False)


@register
class Cone(Formulation):
    """The velocity-level Coulomb cone (:func:`add_velocity_cone_step`): an fc3d problem per time
    step (the registry's fc3d solvers, Newton first), an MPCC block (disk form) in trajectory
    optimization. Options ``gap_stabilization`` (the ``phi / h`` term of the normal row) and
    ``gap`` (``"position"``: the normal side is the gap at the step's end, ``phi(q + h qdot(q,
    v+)) / h``; see :mod:`contactmp.formulations.velocity_pyramid`)."""

    name = "cone"
    model_parameters = ("mu",)
    parametric = True
    #: contact-implicit plans start from the pyramid's (:mod:`contactmp.transcriptions.pyramid_start`)
    pyramid_start = True

    @dataclass(frozen=True)
    class Options:
        """``gap_stabilization``: the normal row is ``phi / h + Jn v+ >= 0``; ``gap``:
        ``"linear"`` or ``"position"`` (:data:`~contactmp.formulations.step_rows.GAPS`)."""

        gap_stabilization: bool = True
        gap: str = "linear"

        def __post_init__(self) -> None:
            check_gap(self.gap, self.gap_stabilization)

    @property
    def auto_options(self) -> dict[str, Any]:  # type: ignore[override]
        """fc3d with Newton first (no Gauss-Seidel squeezing friction at rest); nothing for
        ``gap="position"``, whose step goes to the front door's NLP route."""
        return {} if self.options.gap == "position" else {"quick": False}

    def step_solvers(self) -> dict[str, Any]:
        """The default order of the fc3d solvers (Newton first) and every fc3d solver of the registry
        alone; the NLP route's IPOPT for ``gap="position"``."""
        if self.options.gap == "position":
            return {"nlp-ipopt": None}
        from contactmp.solvers.registry import FC3D_SOLVERS

        return {"auto": None, **{name: {"cone": name} for name in FC3D_SOLVERS}}

    def add_step(self, prog: Program, step: Step) -> VelocityConeStep:
        """:func:`add_velocity_cone_step` at the step's data (planar for a planar system)."""
        d = step.data()
        return add_velocity_cone_step(prog, M=d.M, f=d.f, v=step.v, Jn=d.Jn, Jt=d.Jt, Jo=d.Jo, mu=d.mu, phi=d.phi,
                                      h=step.h, prefix=step.prefix, planar=step.system.planar,
                                      gap_stabilization=self.options.gap_stabilization,
                                      gap_rate=normal_side(step, self.options.gap))
