"""IPOPT's derivatives of a program with stage groups, from one copy of each stage.

For a :class:`~contactmp.program.Program` whose rows repeat a :class:`~contactmp.stages.StageTemplate`
(:mod:`contactmp.stages`), the constraint Jacobian and the Hessian of the Lagrangian

    J = dg/dx,      H = lam_f grad^2 f + sum_i lam_i grad^2 g_i

split into the stages' parts and the rest (the objective, rows outside every stage: boundary
conditions, an MPCC strategy's rows):

    J[g_index[k], x_index[k]]  = J_T(x[x_index[k]], p[p_index[k]])
    H[x_index[k], x_index[k]] += H_T(x[x_index[k]], p[p_index[k]], lam[g_index[k]])

with ``J_T = dg_T/dz`` and ``H_T = grad_z^2 (lam_T . g_T)`` of the template, built once and
evaluated at every stage by one mapped call (``casadi.Function.map``); the rest is differentiated
as plain SX. Entries of several stages at one position (variables shared by neighbouring knots)
are summed. The build time and memory are those of one stage plus the rest, and with ``jit`` the
template's derivatives run as compiled C (CasADi's JIT through the system's C compiler), the
same numbers in a fraction of the time of CasADi's SX virtual machine.

:func:`stage_derivatives` returns the Functions as CasADi's ``nlpsol`` takes them (options
``jac_g`` and ``hess_lag``) and :class:`~contactmp.solvers.ipopt.CyipoptCallbacks` uses them too.
"""
from __future__ import annotations

import hashlib
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

import casadi as ca
import numpy as np

from contactmp.program import Program
from contactmp.stages import StageGroup, StageTemplate

__all__ = ["StageDerivatives", "stage_derivatives", "resolve_derivatives", "jit_available", "JIT_FLAGS",
           "AUTO_STAGE_INSTRUCTIONS"]

#: compiler flags of the JIT: -O1 compiled a Solo12 knot's Hessian (190k SX instructions) in 31 s
#: and runs it 8x faster than the SX virtual machine; -O0 compiled in 10 s and ran 3x faster
JIT_FLAGS = ("-O1",)

#: compiled template derivatives of this process, by the hash of the template's serialized
#: expressions (a Dask worker that runs many starts of one task compiles once)
_COMPILED: dict[str, "_TemplateDerivatives"] = {}


#: ``derivatives="auto"`` uses the stage derivatives when a template's rows take at least this
#: many SX instructions (a Solo12 knot: 2,111 planar, 10,024 in 3D); smaller stages (the box and
#: hopper knots, 157-457) keep CasADi's whole-program derivatives, as fast there and the path
#: IPOPT took before stage groups existed
AUTO_STAGE_INSTRUCTIONS = 1000


def resolve_derivatives(prog: Program, mode: str) -> str:
    """``"full"``, ``"stages"`` or ``"stages_jit"`` for ``prog`` from an
    :attr:`~contactmp.solvers.nlp.solve.NLPOptions.derivatives` value: a program without stage groups
    is always differentiated whole; ``"auto"`` picks ``"stages"`` when some template has at least
    :data:`AUTO_STAGE_INSTRUCTIONS` instructions, else ``"full"``."""
    if not prog.stage_groups:
        return "full"
    if mode == "auto":
        big = any(g.template.function.n_instructions() >= AUTO_STAGE_INSTRUCTIONS for g in prog.stage_groups)
        return "stages" if big else "full"
    return mode


def jit_available() -> bool:
    """True when a C compiler (``gcc``) for CasADi's JIT is on the PATH."""
    return shutil.which("gcc") is not None


@dataclass
class StageDerivatives:
    """``jac_g: (x, p) -> (g, dg/dx)`` and ``hess_lag: (x, p, lam_f, lam_g) -> triu(H)`` as CasADi
    MX Functions (the signatures ``nlpsol`` expects); ``jit`` tells whether the templates'
    derivatives are compiled; ``template_instructions`` counts the SX instructions of the templates'
    derivatives and ``rest_instructions`` those of the rest's."""

    jac_g: ca.Function
    hess_lag: ca.Function
    jit: bool
    template_instructions: int
    rest_instructions: int

    def nlpsol_options(self) -> dict[str, Any]:
        """The ``casadi.nlpsol`` options that make IPOPT use these derivatives."""
        return {"jac_g": self.jac_g, "hess_lag": self.hess_lag}


@dataclass(frozen=True)
class _TemplateDerivatives:
    """``jac: (z, p_T) -> nonzeros of dg_T/dz`` and ``hess: (z, p_T, lam_T) -> nonzeros of
    triu(grad_z^2 lam_T . g_T)``, with the sparsities whose nonzeros they list."""

    jac: ca.Function
    hess: ca.Function
    jac_sp: ca.Sparsity
    hess_sp: ca.Sparsity


def _nonzeros(m: ca.SX) -> ca.SX:
    """The nonzeros of ``m`` as a column (CasADi's column-major order)."""
    return ca.vertcat(*m.nonzeros()) if m.nnz() else ca.SX(0, 1)


def _template_derivatives(t: StageTemplate, jit: bool) -> _TemplateDerivatives:
    """The derivatives of one template (compiled with ``jit``; compiled ones are kept for the
    process, by the hash of the template's serialized rows)."""
    key = None
    if jit:
        key = hashlib.sha256(t.function.serialize().encode()).hexdigest()
        if key in _COMPILED:
            return _COMPILED[key]
    lam = ca.SX.sym("lam", t.n_r)
    jac = ca.jacobian(t.g, t.z)
    hess = ca.triu(ca.hessian(ca.dot(lam, t.g), t.z)[0])
    opts: dict[str, Any] = {}
    if jit:
        opts = {"jit": True, "compiler": "shell", "jit_cleanup": True,  # C source and library in the temp folder
                "jit_options": {"flags": list(JIT_FLAGS), "verbose": False, "directory": tempfile.gettempdir()}}
    label = t.function.name()  # a valid CasADi name made from the template's
    out = _TemplateDerivatives(ca.Function(f"{label}_jacobian", [t.z, t.p], [_nonzeros(jac)], opts),
                               ca.Function(f"{label}_hessian", [t.z, t.p, lam], [_nonzeros(hess)], opts),
                               jac.sparsity(), hess.sparsity())
    if key is not None:
        _COMPILED[key] = out
    return out


def _assemble(shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray, values: ca.MX) -> ca.MX:
    """The sparse MX matrix with ``values[i]`` at ``(rows[i], cols[i])`` (duplicates summed)."""
    sp, mapping = ca.Sparsity.triplet(shape[0], shape[1], [int(r) for r in rows], [int(c) for c in cols], True)
    n = len(mapping)
    if n == sp.nnz() and np.array_equal(np.sort(mapping), np.arange(n)):  # no duplicates: a permutation
        inverse = np.empty(n, dtype=int)
        inverse[np.asarray(mapping, dtype=int)] = np.arange(n)
        return ca.MX(sp, values[[int(i) for i in inverse]])
    summing = ca.DM(ca.Sparsity.triplet(sp.nnz(), n, [int(m) for m in mapping], list(range(n))), 1.0)
    return ca.MX(sp, ca.mtimes(summing, values))


def _stack(parts: list[tuple[np.ndarray, np.ndarray, ca.MX]]) -> tuple[np.ndarray, np.ndarray, ca.MX]:
    """The rows, columns and values of several triplet lists, one after the other."""
    return (np.concatenate([r for r, _, _ in parts]), np.concatenate([c for _, c, _ in parts]),
            ca.vertcat(*[v for _, _, v in parts]))


def _gather(v: ca.MX, index: np.ndarray) -> ca.MX:
    """``v[index]`` as an ``index.shape[1] x index.shape[0]`` MX matrix (one column per stage)."""
    n_s, w = index.shape
    if w == 0:
        return ca.MX(0, n_s)
    return ca.reshape(v[[int(i) for i in index.ravel()]], w, n_s)


def stage_derivatives(prog: Program, jit: bool = False) -> StageDerivatives | None:
    """The :class:`StageDerivatives` of ``prog``'s NLP (``prog.nlp()``: its objective and rows; a
    program with complementarity pairs is read as its NLP without them), or None when ``prog`` has
    no stage group. ``jit`` compiles the templates' derivatives (CasADi's JIT; needs
    :func:`jit_available`)."""
    groups: tuple[StageGroup, ...] = prog.stage_groups
    if not groups:
        return None
    n_x, n_p, n_g = prog.n_x, prog.n_p, prog.n_g
    x, p, f, g = prog.x, prog.p, prog.f, prog.g
    in_stage = np.zeros(n_g, dtype=bool)
    for grp in groups:
        in_stage[grp.g_index.ravel()] = True
    rest = np.flatnonzero(~in_stage)
    g_rest = g[[int(i) for i in rest]] if rest.size else ca.SX(0, 1)
    lam_f, lam_r = ca.SX.sym("lam_f"), ca.SX.sym("lam_r", rest.size)
    jac_rest = ca.jacobian(g_rest, x)
    hess_rest = ca.triu(ca.hessian(lam_f * f + (ca.dot(lam_r, g_rest) if rest.size else 0), x)[0])
    rest_jac_f = ca.Function("rest_jac", [x, p], [_nonzeros(jac_rest)])
    rest_hess_f = ca.Function("rest_hess", [x, p, lam_f, lam_r], [_nonzeros(hess_rest)])
    g_f = ca.Function("g", [x, p], [g])

    X, P = ca.MX.sym("x", n_x), ca.MX.sym("p", n_p)
    LF, LG = ca.MX.sym("lam_f"), ca.MX.sym("lam_g", n_g)
    LR = LG[[int(i) for i in rest]] if rest.size else ca.MX(0, 1)
    # triplets (row, column, values) of J and of triu(H): the rest's first, then each group's
    r_r, r_c = (np.asarray(v, dtype=int) for v in jac_rest.sparsity().get_triplet())
    jac_parts = [(rest[r_r], r_c, rest_jac_f(X, P))]
    r_r, r_c = (np.asarray(v, dtype=int) for v in hess_rest.sparsity().get_triplet())
    hess_parts = [(r_r, r_c, rest_hess_f(X, P, LF, LR))]
    n_template = 0
    for grp in groups:
        d = _template_derivatives(grp.template, jit)
        n_template += d.jac.n_instructions() + d.hess.n_instructions()
        Z, PT, LT = _gather(X, grp.x_index), _gather(P, grp.p_index), _gather(LG, grp.g_index)
        # (nnz, n_stages) with column k the stage k: vec() lists stage 0's nonzeros, then stage 1's, ...
        jv = ca.vec(d.jac.map(grp.n_stages)(Z, PT))
        hv = ca.vec(d.hess.map(grp.n_stages)(Z, PT, LT))
        tr, tc = (np.asarray(v, dtype=int) for v in d.jac_sp.get_triplet())
        jac_parts.append((grp.g_index[:, tr].ravel(), grp.x_index[:, tc].ravel(), jv))
        tr, tc = (np.asarray(v, dtype=int) for v in d.hess_sp.get_triplet())
        a, b = grp.x_index[:, tr].ravel(), grp.x_index[:, tc].ravel()
        hess_parts.append((np.minimum(a, b), np.maximum(a, b), hv))  # the upper triangle
    J = _assemble((n_g, n_x), *_stack(jac_parts))
    H = _assemble((n_x, n_x), *_stack(hess_parts))
    jac_g = ca.Function("nlp_jac_g", [X, P], [g_f(X, P), J], ["x", "p"], ["g", "jac_g_x"])
    hess_lag = ca.Function("nlp_hess_l", [X, P, LF, LG], [H], ["x", "p", "lam_f", "lam_g"], ["hess_gamma_x_x"])
    return StageDerivatives(jac_g, hess_lag, bool(jit), n_template,
                            rest_jac_f.n_instructions() + rest_hess_f.n_instructions())
