"""The velocity-level time-stepping form of the pyramid friction law, as a Program block.

One step of length ``h`` of the Stewart-Trinkle / Anitescu-Potra scheme, in impulses:

    M (v+ - v) = h f + J_n^T p_n + sum_i D_i^T beta_i                  (dynamics, v+ free)
    0 <= p_n      _|_  phi / h + J_n v+              >= 0              (non-penetration)
    0 <= beta_ji  _|_  lambda_j + (D_ji v+)          >= 0              (maximal dissipation)
    0 <= lambda_j _|_  mu_j p_nj - sum_i beta_ji     >= 0              (friction polygon)

with ``f = B u - h(q, v)`` and, at contact j, the k generators
``D_ji = (cos th_i t_j + sin th_i o_j) / cos(pi / k)``, ``th_i = (2 i + 1) pi / k``: the friction
polygon circumscribes Coulomb's disk, and for k = 4 it is the square pyramid
``|c_t|, |c_o| <= mu c_n`` of Trinkle et al. (17). ``lambda_j`` is the sliding speed measured by
the polygon's support function. The same friction law as the instantaneous pyramid LCP
(35)-(39), at the velocity level, so that transcriptions can stack one block per step: every
input may be a number array or a CasADi expression (``v`` may be the previous step's variables).

The non-penetration side ``phi / h + J_n v+`` is the gap at the end of the step to first order in
``h`` (Anitescu-Potra): a foot on a curved path can end a step ``O(h^2 |v|^2)`` below the ground
(Solo12 walks at ``h = 0.025``: 4e-5 m). Option ``gap="position"`` (:data:`GAPS`) writes the gap
itself, ``phi(q+) / h`` with ``q+ = q + h qdot(q, v+)`` (:meth:`Step.end_gap_rate`; Posa, Cantu and
Tedrake's position-level condition in the velocity-level step): no knot of a trajectory is then
below the ground, and the step is a nonlinear complementarity problem (time stepping solves it
through the NLP route of the solver front door instead of an LCP or fc3d solver).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import casadi as ca
import numpy as np

from contactmp.errors import InputError, check_step
from contactmp.formulations.pyramid_lcp import facet_generators
from contactmp.formulations.base import Formulation, StepBlock, register
from contactmp.formulations.step_rows import (GAPS, check_gap, dynamics_row, matrix, normal_rate, normal_side,
                                               numeric_mu, step_inputs)
from contactmp.models.symbolic import ContactSystem
from contactmp.program import Complementarity, Constraint, Program, Variables


@dataclass(eq=False, kw_only=True)
class VelocityPyramidStep(StepBlock):
    """Handles of one pyramid step block (a :class:`~contactmp.formulations.base.StepBlock`)."""

    p_n: Variables  #: normal impulses (n_c)
    beta: Variables  #: friction impulses along the generators (n_c * k, contact-major)
    lam: Variables  #: sliding-speed multipliers (n_c)
    dynamics: Constraint
    non_penetration: Complementarity
    dissipation: Complementarity
    polygon: Complementarity
    generators: np.ndarray  #: (k, 2) coefficients of (t, o) in each generator D_i

    def friction_impulse(self, beta: np.ndarray) -> np.ndarray:
        """(n_c, 2) tangential impulses (along t and o) from the generator weights ``beta``."""
        k = self.generators.shape[0]
        return np.asarray(beta, dtype=float).reshape(-1, k) @ self.generators

    def impulses(self, x: Any) -> np.ndarray:
        """``(n_c, 3)`` impulses ``(p_n, D^T beta)`` at the program vector ``x``."""
        prog = self.program
        return np.column_stack([prog.value(self.p_n, x), self.friction_impulse(prog.value(self.beta, x))])

    def modes(self, x: Any, tol: float = 1e-9) -> list[str]:
        """:meth:`StepBlock.speed_modes` with the sliding speed ``lambda``."""
        return self.speed_modes(self.p_n, self.lam, x, tol)


def pyramid_generators(facets: int) -> np.ndarray:
    """(k, 2) generator directions in the (t, o) plane of a k-gon circumscribing the unit disk
    (the same polygon as the instantaneous :class:`~contactmp.formulations.pyramid_lcp.PyramidLCP`)."""
    if not isinstance(facets, (int, np.integer)) or isinstance(facets, bool) or facets < 3:
        raise InputError("facets", f"must be an integer >= 3, got {facets!r}")
    return facet_generators(int(facets))


def add_velocity_pyramid_step(prog: Program, *, M: Any, f: Any, v: Any, Jn: Any, Jt: Any, Jo: Any, mu: Any,
                              phi: Any, h: float, facets: int = 4, prefix: str = "step",
                              gap_stabilization: bool = True,
                              gap_rate: Callable[[Any], Any] | None = None) -> VelocityPyramidStep:
    """Add one velocity-level pyramid-friction step to ``prog`` (block name ``prefix``).

    Shapes: ``M`` (n_v x n_v, symmetric positive definite when numeric), ``f`` and ``v`` (n_v),
    ``Jn``, ``Jt``, ``Jo`` (n_c x n_v: normal and tangent rows of the contact Jacobian), ``mu``
    and ``phi`` (n_c; ``mu >= 0``). With ``gap_stabilization`` the non-penetration row is
    ``phi / h + J_n v+ >= 0`` (Anitescu-Potra), otherwise ``J_n v+ >= 0``; ``gap_rate``, when
    given, maps ``v+`` (SX, n_v) to the side instead (n_c; e.g. :meth:`Step.end_gap_rate`).
    """
    h = check_step(h)
    Jn_ = Jn if isinstance(Jn, (ca.SX, ca.MX, ca.DM)) else np.atleast_2d(np.asarray(Jn, dtype=float))
    nc, nv = Jn_.shape
    Jn_ = matrix(Jn_, (nc, nv), "Jn")
    Jt_ = matrix(Jt, (nc, nv), "Jt")
    Jo_ = matrix(Jo, (nc, nv), "Jo")
    M_, f_, v_, phi_, mu_ = step_inputs(M, f, v, phi, mu, nc, nv)
    G = pyramid_generators(facets)
    k = G.shape[0]

    blk = prefix
    v_next = prog.add_variables(f"{prefix}/v_next", nv, init=0.0, block=blk)
    p_n = prog.add_variables(f"{prefix}/p_n", nc, lb=0.0, block=blk)
    beta = prog.add_variables(f"{prefix}/beta", nc * k, lb=0.0, block=blk)
    lam = prog.add_variables(f"{prefix}/lambda", nc, lb=0.0, block=blk)

    # D (nc*k x nv): generator rows, contact-major
    D_rows = []
    for j in range(nc):
        for i in range(k):
            D_rows.append(G[i, 0] * Jt_[j, :] + G[i, 1] * Jo_[j, :])
    D = ca.vertcat(*D_rows) if any(isinstance(r, (ca.SX, ca.MX)) for r in D_rows) else np.vstack(D_rows)

    vp = v_next.sym
    dynamics = dynamics_row(prog, prefix, M_, f_, v_, h, vp, Jn_, p_n.sym, ca.mtimes(D.T, beta.sym))
    side = normal_rate(vp, Jn_, phi_, h, gap_stabilization, gap_rate)
    non_pen = prog.add_complementarity(p_n.sym, side, name=f"{prefix}/non_penetration", block=blk)
    E = np.kron(np.eye(nc), np.ones((k, 1)))  # (nc*k x nc): lambda_j repeated for its k generators
    dissipation = prog.add_complementarity(
        beta.sym, ca.mtimes(E, lam.sym) + ca.mtimes(D, vp), name=f"{prefix}/dissipation", block=blk
    )
    polygon = prog.add_complementarity(
        lam.sym, mu_ * p_n.sym - ca.mtimes(E.T, beta.sym), name=f"{prefix}/polygon", block=blk
    )
    return VelocityPyramidStep(program=prog, v_next=v_next, mu=numeric_mu(mu_, nc), p_n=p_n, beta=beta, lam=lam,
                               dynamics=dynamics, non_penetration=non_pen, dissipation=dissipation,
                               polygon=polygon, generators=G, constraints=(dynamics,),
                               complementarities=(non_pen, dissipation, polygon),
                               handles={"p_n": p_n, "beta": beta, "lambda": lam})


@register
class Pyramid(Formulation):
    """The velocity-level k-facet friction pyramid (:func:`add_velocity_pyramid_step`): an LCP per
    time step (Lemke, then the semismooth Newton method), an MPCC block in trajectory optimization.

    Options: ``facets`` k (>= 3; even for planar systems), ``gap_stabilization`` (the
    ``phi / h`` term of the non-penetration row), ``gap`` (:data:`GAPS`: ``"position"`` writes
    the gap at the step's end, ``phi(q + h qdot(q, v+)) / h``, see the module docstring)."""

    name = "pyramid"
    model_parameters = ("mu",)
    parametric = True

    @dataclass(frozen=True)
    class Options:
        """``facets`` k >= 3 of the polygon; ``gap_stabilization``: ``phi / h + Jn v+ >= 0``;
        ``gap``: ``"linear"`` or ``"position"`` (:data:`GAPS`)."""

        facets: int = 4
        gap_stabilization: bool = True
        gap: str = "linear"

        def __post_init__(self) -> None:
            pyramid_generators(self.facets)
            check_gap(self.gap, self.gap_stabilization)

    @property
    def solver(self) -> Any:  # type: ignore[override]
        """Lemke then Newton for the LCP of a linear-gap step; None (the front door's NLP route)
        for ``gap="position"``, whose step is not an LCP."""
        return None if self.options.gap == "position" else {"lcp": ("lemke", "newton")}

    def step_solvers(self) -> dict[str, Any]:
        """The default chain (Lemke, then Newton) and every LCP solver of the registry alone; the NLP
        route's IPOPT for ``gap="position``."""
        if self.options.gap == "position":
            return {"nlp-ipopt": None}
        from contactmp.solvers.registry import LCP_SOLVERS

        return {"lemke+newton": None, **{name: {"lcp": name} for name in LCP_SOLVERS}}

    def check_system(self, system: ContactSystem, h: float) -> None:
        """A planar system needs an even number of facets (an odd polygon is not symmetric along
        the single tangent)."""
        if system.planar and self.options.facets % 2:
            raise InputError("facets", "must be even for a planar system (an odd polygon is not "
                                       "symmetric along the single tangent)")

    def add_step(self, prog: Program, step: Step) -> VelocityPyramidStep:
        """:func:`add_velocity_pyramid_step` at the step's data."""
        d = step.data()
        return add_velocity_pyramid_step(prog, M=d.M, f=d.f, v=step.v, Jn=d.Jn, Jt=d.Jt, Jo=d.Jo, mu=d.mu,
                                         phi=d.phi, h=step.h, facets=self.options.facets, prefix=step.prefix,
                                         gap_stabilization=self.options.gap_stabilization,
                                         gap_rate=normal_side(step, self.options.gap))
