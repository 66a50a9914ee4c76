"""The pyramid start of a Coulomb-cone transcription: each start solves the task with the friction
pyramid first, then the cone from the pyramid's plan.

Why (issue 35; ``docs/baselines.md`` has the tables): on the contact-implicit tasks, 20 seeded
starts each with the default strategy, the cone's program from its own interpolated guess
converged on 17/20 starts of the sagittal Solo12 walk and 14/20 of the 3D Solo12 jump (the
pyramid: 20/20), and its converged Solo12 plans cost 3.2-4.8x the pyramid's (median). The cause is
the start, not the rows: the cone's direction variables ``w`` and sliding speeds ``gamma`` guessed
from an interpolated motion put IPOPT in poorer basins, while the pyramid (polyhedral: its
friction rows are linear in the impulses) reaches a gait from the same guess. Started from the pyramid's plan
(:meth:`ContactImplicitTO.guess_from`, which also sets ``w`` and ``gamma`` from that motion), every
start measured converged, and the median cost of each task fell to the pyramid's or below. A start
is not guaranteed to end below its own pyramid plan (the homotopy is local; in the plane the
pyramid's plan is a feasible point of the cone's program with the same cost).

:func:`pyramid_transcription` builds the pyramid's transcription of the same task: the same system,
``N``, ``h``, knot options and gap option, with every declaration made on the cone's transcription
after its build (the boundary rows of :meth:`~ContactImplicitTO.set_initial_state` and
:meth:`~ContactImplicitTO.set_final_state`, the costs, bounds, rows and variables a user added)
carried over by substituting the pyramid's ``q_k``, ``v_k``, ``u_k`` and normal impulses ``p_n``
for the cone's. A declaration the pyramid cannot carry (one that reads the cone's friction
variables ``p_t``, ``w``, ``gamma``, or moved bounds of those) raises
:class:`PyramidStartUnavailable`, which names it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import casadi as ca
import numpy as np

from contactmp.errors import InputError
from contactmp.program import Program, Variables

if TYPE_CHECKING:
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

__all__ = ["PyramidStartUnavailable", "pyramid_transcription"]


class PyramidStartUnavailable(InputError):
    """A cone transcription whose declarations cannot be written for the pyramid (the field names
    the declaration and the variable of the cone's steps it reads)."""


def pyramid_transcription(to: "ContactImplicitTO") -> "ContactImplicitTO":
    """The pyramid's :class:`ContactImplicitTO` of the task ``to`` declares, in step with it.

    Built again whenever the cone program's sizes or cost object changed since the last call (every
    declaration adds variables, rows or a cost; none removes one), else taken from a cache on
    ``to``; every call then copies what can change without a declaration: the bounds and start
    values of the states, inputs, normal impulses and carried variables, the bounds of the rows both
    programs have, the parameters' values, the boundary states and
    :attr:`ContactImplicitTO.support_guess`. Raises :class:`PyramidStartUnavailable` when a
    declaration reads a variable the pyramid does not have, when the bounds of such a variable or of
    a row only the cone has were moved since the build, when a user's name is one of the pyramid's
    own, when pairs, cones or stage groups were added after the build, or when the formulation's own
    build added a cost.
    """
    key = _declarations_key(to)
    cached = getattr(to, "_pyramid_cache", None)
    if cached is None or not _same_key(cached[0], key):
        cached = (key, *_build_pyramid(to))
        to._pyramid_cache = cached
    _, twin, carried = cached
    _sync(to, twin, carried)
    return twin


def _declarations_key(to: "ContactImplicitTO") -> tuple[Any, ...]:
    """What identifies the cone program's declarations: its sizes and its cost object (replaced by
    every ``add_cost``; held here, so that it cannot be confused with a new one)."""
    prog = to.program
    return (prog.n_x, prog.n_p, prog.n_g, prog.n_comp, len(prog.cones), len(prog.stage_groups), prog.f)


def _same_key(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return a[:-1] == b[:-1] and a[-1] is b[-1]


def _shared_variables(to: "ContactImplicitTO", twin: "ContactImplicitTO") -> list[tuple[Variables, Variables]]:
    """The built variables both programs have with the same meaning: ``q_k``, ``v_k``, ``u_k`` and
    each step's normal impulses ``p_n`` (when both blocks have them, of the same size)."""
    pairs = []
    for mine, theirs in ((to.q, twin.q), (to.v, twin.v), (to.u, twin.u)):
        pairs += list(zip(mine, theirs))
    for a, b in zip(to.steps, twin.steps):
        pa, pb = a.handles.get("p_n"), b.handles.get("p_n")
        if isinstance(pa, Variables) and isinstance(pb, Variables) and pa.size == pb.size:
            pairs.append((pa, pb))
    return pairs


def _unavailable(message: str) -> PyramidStartUnavailable:
    return PyramidStartUnavailable("pyramid_start", f"{message} (pass pyramid_start=False to solve the cone alone)")


def _build_pyramid(to: "ContactImplicitTO") -> tuple["ContactImplicitTO", list[tuple[str, str]]]:
    """The pyramid transcription with the cone's post-build declarations substituted; and the
    (kind, name) of every carried declaration (``"x"``, ``"p"``, ``"g"``) for :func:`_sync`."""
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    cone, built = to.program, to._built
    if cone.n_comp != built["n_comp"] or len(cone.cones) != built["n_cones"] \
            or len(cone.stage_groups) != built["n_groups"]:
        raise _unavailable("complementarity pairs, cones or stage groups were added after the build; the pyramid "
                           "cannot carry them")
    if not built["cost_free"]:
        raise _unavailable(f"the formulation {to.formulation.name!r} adds a cost of its own; the pyramid's program "
                           "would not have it")
    gap_options = {name: getattr(to.formulation.options, name) for name in ("gap", "gap_stabilization")
                   if hasattr(to.formulation.options, name)}
    twin = ContactImplicitTO(to.system, to.N, to.h, "pyramid", stages=to._declare_stages, lift_sides=to._lift_sides,
                             gap_rows=to._gap_rows, model_parameters=list(to.model_parameters), **gap_options)
    prog = twin.program
    pairs = [(a.sym, b.sym) for a, b in _shared_variables(to, twin)]
    pairs += [(cone[f"param/{name}"].sym, prog[f"param/{name}"].sym) for name in to.model_parameters]
    carried: list[tuple[str, str]] = []
    try:
        for h in cone.variables:
            if h.index.start >= built["n_x"]:
                pairs.append((h.sym, prog.add_variables(h.name, h.size, h.lb, h.ub, h.init, block=h.block).sym))
                carried.append(("x", h.name))
        for h in cone.parameters:
            if h.index.start >= built["n_p"]:
                pairs.append((h.sym, prog.add_parameters(h.name, h.size, h.value, block=h.block).sym))
                carried.append(("p", h.name))
        old = ca.vertcat(*[a for a, _ in pairs])
        new = ca.vertcat(*[b for _, b in pairs])
        known = {old[i].element_hash() for i in range(old.numel())}
        for h in cone.constraints:
            if h.index.start >= built["n_g"]:
                prog.add_constraint(_substituted(cone, h.expr, old, new, known, f"row '{h.name}'"), h.lb, h.ub,
                                    name=h.name, block=h.block)
                carried.append(("g", h.name))
    except PyramidStartUnavailable:
        raise
    except InputError as err:  # a user's name that the pyramid's build already uses
        raise _unavailable(f"a declaration cannot be made in the pyramid's program ({err})") from None
    if not cone.f.is_zero():
        prog.add_cost(_substituted(cone, cone.f, old, new, known, "the cost"))
    return twin, carried


def _substituted(cone: Program, expr: ca.SX, old: ca.SX, new: ca.SX, known: set[int], what: str) -> ca.SX:
    """``expr`` with the pyramid's symbols for the cone's; PyramidStartUnavailable when it reads a
    variable the pyramid does not have (the cone's friction impulses, directions, sliding speeds)."""
    for s in ca.symvar(expr):
        if s.element_hash() not in known:
            raise _unavailable(f"{what} reads '{_owner(cone, s)}', a variable of the cone's steps that the pyramid "
                               "does not have")
    return ca.substitute(expr, old, new)


def _owner(prog: Program, s: ca.SX) -> str:
    """The name of the Variables handle whose entry is the scalar symbol ``s`` (every parameter of
    the cone's program is carried, so an unknown symbol is a variable; else the symbol's own name)."""
    pos = prog.variable_index(s)
    return next((h.name for h in prog.variables if pos is not None and h.index.start <= pos < h.index.stop), str(s))


def _sync(to: "ContactImplicitTO", twin: "ContactImplicitTO", carried: list[tuple[str, str]]) -> None:
    """Copy what may change without a new declaration (see :func:`pyramid_transcription`);
    PyramidStartUnavailable when moved bounds have no counterpart in the pyramid."""
    cone, prog, built = to.program, twin.program, to._built
    shared = _shared_variables(to, twin)
    for a, b in shared + [(cone[name], prog[name]) for kind, name in carried if kind == "x"]:
        b.lb, b.ub, b.init = a.lb.copy(), a.ub.copy(), a.init.copy()
    mine = {id(a) for a, _ in shared}
    lbx, ubx = cone.lbx, cone.ubx
    for h in cone.variables:  # the cone's own built variables keep their build-time bounds
        if h.index.start < built["n_x"] and id(h) not in mine and (
                not np.array_equal(lbx[h.index], built["lbx"][h.index])
                or not np.array_equal(ubx[h.index], built["ubx"][h.index])):
            raise _unavailable(f"the bounds of '{h.name}', a variable of the cone's steps that the pyramid does not "
                               "have, were moved")
    theirs = {c.name: c for c in prog.constraints}
    for h in cone.constraints:
        if h.index.start >= built["n_g"]:
            continue
        other = theirs.get(h.name)
        if other is not None and other.size == h.size:
            other.lb, other.ub = h.lb.copy(), h.ub.copy()
        elif not (np.array_equal(h.lb, built["lbg"][h.index]) and np.array_equal(h.ub, built["ubg"][h.index])):
            raise _unavailable(f"the bounds of row '{h.name}', which only the cone's program has, were moved")
    for name in to.model_parameters:
        prog[f"param/{name}"].value = cone[f"param/{name}"].value
    for kind, name in carried:
        a, b = cone[name], prog[name]
        if kind == "p":
            b.value = a.value
        elif kind == "g":
            b.lb, b.ub = a.lb.copy(), a.ub.copy()
    twin._q0, twin._v0, twin._qf, twin._vf = to._q0, to._v0, to._qf, to._vf
    twin.support_guess = to.support_guess


def check_choice(to: "ContactImplicitTO", pyramid_start: Any, plan: Any) -> bool:
    """The resolved ``pyramid_start`` of a solve: ``None`` means the formulation's
    :attr:`~contactmp.formulations.base.Formulation.pyramid_start` (the Coulomb cone's is True), off
    when a ``plan`` is the start; ``True`` is accepted for any formulation but the pyramid itself
    (measured for the cone only); InputError for a non-bool and for ``True`` with a plan."""
    from contactmp.formulations.velocity_pyramid import Pyramid

    if pyramid_start is None:
        return plan is None and type(to.formulation).pyramid_start
    if not isinstance(pyramid_start, (bool, np.bool_)):
        raise InputError("pyramid_start", f"must be True, False or None, got {pyramid_start!r}")
    if pyramid_start and plan is not None:
        raise InputError("pyramid_start", "cannot be True with a plan: the plan is the start already")
    if pyramid_start and isinstance(to.formulation, Pyramid):
        raise InputError("pyramid_start", "is for formulations other than the pyramid itself")
    return bool(pyramid_start)
