"""Sensitivities of a wrench-polytope time step (Pan and Hauser's NMDP and its linearized MDP QP).

A polytope step of :class:`~contactmp.formulations.nmdp.NMDPFormulation` or
:class:`~contactmp.formulations.linearized_mdp.MDPFormulation` is one substep, or (NMDP,
``adaptive``) several substeps of lengths ``h_1 + ... + h_m = h``, each with the step data
``p = (q_n, qd_n, h_j, q_d, qd_d, tau_0)`` (``tau_0 = u``; ``q_d = S q_n`` when the PD targets hold
the pose). Each substep is written, with ``(q_n, qd_n, tau_0, q_d, qd_d, mu)`` as Program
parameters, as the KKT system of its program -- :func:`~contactmp.formulations.nmdp.add_nmdp_step`
(variables ``theta = q_{n+1}``, ``w``, ``nu``, ``lam_w``, ``lam_s``) or
:func:`~contactmp.formulations.linearized_mdp.add_linearized_mdp_step` (``qd+``, ``w``, ``sigma``)
with the formulation's PD gains and objective -- and differentiated at the substep's answer by
:func:`~contactmp.formulations.step_sensitivity.program_sensitivity`. The solvers return only
``(theta, w)``; the multipliers are recovered from the stationarity conditions at that answer:

* NMDP: ``nu = -G_theta^-T grad K(theta)``, then per contact with ``g = -W^T nu``:
  ``lam_s = max(0, max_j -g_j)`` when ``1^T w_i = 1`` (else 0) and ``lam_w = g + E lam_s``;
* linearized MDP: the same with ``g = W^T y`` (``= (Q w + c) / h`` of its QP) and ``sigma``.

A contact whose polytope is ``{0}`` at the answer (``s_i = 0``: separated, where ``s_i`` and its
derivative vanish) carries no force whatever its weights: they are set to 0 and its pairs are not
flagged. The answer is first polished by Newton's method on its pieces (kept when that converges
within 1e-6 of it: the derivative is the exact step's, at its exact solution; PGM's weights can be
1e-4 off where the contact is lightly loaded). The substeps are chained by the chain rule
(``d(q, qd)_{j+1} / d(q, qd)_j``).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from contactmp.errors import InputError
from contactmp.formulations.base import Formulation, StepOutcome
from contactmp.formulations.linearized_mdp import MDPFormulation, add_linearized_mdp_step
from contactmp.formulations.nmdp import NMDPFormulation, PolytopeFormulation, add_nmdp_step
from contactmp.formulations.step_sensitivity import StepJacobian, polish, program_sensitivity
from contactmp.models.symbolic import ContactSystem
from contactmp.program import Program
from contactmp.solvers.sensitivity import DEGENERATE_TOL

__all__ = ["SubstepProgram", "substep_program", "substep_point", "polish_substep", "substep_jacobian",
           "polytope_step_jacobian"]

#: relative size below which a polytope magnitude ``s_i`` counts as zero (the contact carries no force)
DEAD_CONTACT = 1e-12


class SubstepProgram:
    """The KKT Program of one polytope substep (module docstring) and its handles: ``params``
    (``q``, ``v``, ``u``, ``q_d``, ``qd_d``, ``mu``, ``h``), ``q_next`` (NMDP) or the block's
    ``v_next`` (MDP), and ``kkt`` the block."""

    def __init__(self, form: PolytopeFormulation, system: ContactSystem) -> None:
        s, prob = system, form.problem(system)
        self.nmdp = isinstance(form, NMDPFormulation)
        self.system, self.problem = s, prob
        prog = self.program = Program(f"{form.name}_substep")
        names = ("q", "v", "u", "q_d", "qd_d", "mu", "h")
        sizes = (s.n_q, s.n_v, s.n_u, s.n_u, s.n_u, s.n_c, 1)
        self.params = {nm: prog.add_parameters(f"step/{nm}", m, 0.0) for nm, m in zip(names, sizes)}
        P = {nm: v.sym for nm, v in self.params.items()}
        opts = dict(vertices=prob.vertices, stiffness=prob.stiffness, relax=prob.relax, radius=prob.radius,
                    kp=prob.kp, kd=prob.kd, q_d=P["q_d"], qd_d=P["qd_d"], objective=prob.objective, mu=P["mu"],
                    prefix="step")
        if self.nmdp:
            self.q_next = prog.add_variables("step/q_next", s.n_q)
            self.kkt = add_nmdp_step(prog, s, P["q"], P["v"], self.q_next.sym, P["u"], P["h"], **opts)
        else:
            if not isinstance(form, MDPFormulation):
                raise InputError("formulation", f"{form.name!r} is not a polytope formulation ('nmdp' or 'mdp')")
            self.kkt = add_linearized_mdp_step(prog, s, P["q"], P["v"], P["u"], P["h"], pd=prob.pd, **opts)

    def set_parameters(self, p: np.ndarray, mu: np.ndarray) -> None:
        """Set the Program's parameters from the substep data ``p = (q_n, qd_n, h, q_d, qd_d, tau_0)``
        and the friction coefficients ``mu``."""
        for nm, val in {**_split(self.system, p), "mu": mu}.items():
            self.params[nm].value = val

    def state(self, p: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(q_{n+1}, qd+)`` of the point ``x`` of the Program at the substep data ``p``."""
        d = _split(self.system, p)
        if self.nmdp:  # backward Euler: qd+ = (q+ - q_n) / h
            q_next = x[self.q_next.index]
            return q_next, (q_next - d["q"]) / d["h"]
        qd_next = x[self.kkt.v_next.index]  # q+ = q_n + h qd+
        return d["q"] + d["h"] * qd_next, qd_next


def _split(system: ContactSystem, p: np.ndarray) -> dict[str, Any]:
    """The substep data ``p = (q_n, qd_n, h, q_d, qd_d, tau_0)`` by name (``q``, ``v``, ``h``,
    ``q_d``, ``qd_d``, ``u``)."""
    n, m = system.n_v, system.n_u
    return {"q": p[:n], "v": p[n:2 * n], "h": float(p[2 * n]), "q_d": p[2 * n + 1:2 * n + 1 + m],
            "qd_d": p[2 * n + 1 + m:2 * n + 1 + 2 * m], "u": p[2 * n + 1 + 2 * m:]}


def substep_program(form: PolytopeFormulation, system: ContactSystem) -> SubstepProgram:
    """The :class:`SubstepProgram` of ``form`` for ``system``, built once and kept on the
    formulation (least recently used dropped beyond its cache size)."""
    cache = form.__dict__.setdefault("_substep_programs", OrderedDict())
    key = system
    if key not in cache:
        cache[key] = SubstepProgram(form, system)
        while len(cache) > form.PARAMETRIC_CACHE_SIZE:
            cache.popitem(last=False)
    cache.move_to_end(key)
    return cache[key]


def substep_point(sp: SubstepProgram, p: np.ndarray, q_next: np.ndarray, qd_next: np.ndarray,
                  w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The substep's answer ``(q_{n+1}, qd+, w)`` completed with its multipliers (module docstring)
    as a point ``x`` of ``sp.program``; also the mask of the contacts with ``s_i = 0``."""
    prob, s, kkt, prog = sp.problem, sp.system, sp.kkt, sp.program
    n = s.n_v
    w = np.asarray(w, dtype=float).copy()
    x = np.zeros(prog.n_x)
    if sp.nmdp:
        theta = np.asarray(q_next, dtype=float)
        mags = prob._c.magnitudes(theta).full().ravel()
    else:
        mags = prob._data(p[:n], p[n:2 * n])[3].full().ravel()
    dead = mags <= DEAD_CONTACT * max(1.0, float(np.abs(mags).max(initial=0.0)))
    for i in np.flatnonzero(dead):
        w[prob.groups[i]] = 0.0
    if sp.nmdp:
        c = prob._c
        nu = -np.linalg.lstsq(c.G_theta(theta, w, p).full().T, c.K_grad(theta, p).full().ravel(), rcond=None)[0]
        g = c.G_w(theta, p).full().reshape(n, prob.n_w).T @ nu  # G_w = -W, so g = -W^T nu
        x[sp.q_next.index] = theta
        x[kkt.nu.index] = nu
    else:
        sd = _split(s, p)
        hh = sd["h"]
        d = prob.qp(sd["q"], sd["v"], hh, sd["q_d"], sd["qd_d"], sd["u"])
        g = (d["Q"] @ w + d["c"]) / hh  # = W^T y
        x[kkt.v_next.index] = qd_next
        if kkt.y is not None:  # y = A^-1 M qd+
            A = d["M"] + hh * prob.B @ np.diag(hh * prob.kp + prob.kd) @ prob.S
            x[kkt.y.index] = np.linalg.solve(A, d["M"] @ qd_next)
    lam_s = np.zeros(s.n_c)
    for i, grp in enumerate(prob.groups):
        if w[grp].sum() >= 1.0 - DEGENERATE_TOL and not dead[i]:
            lam_s[i] = max(0.0, float(np.max(-g[grp])))
    x[kkt.w.index] = w
    if sp.nmdp:
        x[kkt.lam_w.index] = g + prob._c.E @ lam_s
        x[kkt.lam_s.index] = lam_s
    else:
        x[kkt.sigma.index] = lam_s
    return x, dead


def polish_substep(form: PolytopeFormulation, system: ContactSystem, p: np.ndarray, q_next: np.ndarray,
                   qd_next: np.ndarray, w: np.ndarray, *, tol: float = 1e-9
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The substep answer ``(q_{n+1}, qd+, w)`` at step data ``p`` refined by Newton's method on its
    KKT pieces (:func:`~contactmp.formulations.step_sensitivity.polish`) to rounding; None when the
    Newton residual stays above ``tol`` or a pair's side turns negative (the pieces were not those
    of a solution)."""
    sp = substep_program(form, system)
    sp.set_parameters(p, np.asarray(system.mu, dtype=float))
    x, _ = substep_point(sp, p, q_next, qd_next, w)
    x, res, viol = polish(sp.program, x)
    if not (res <= tol and viol <= 1e-12):
        return None
    return (*sp.state(p, x), x[sp.kkt.w.index])


def substep_jacobian(form: PolytopeFormulation, system: ContactSystem, detail: dict[str, Any], *,
                     side: str = "a", tol: float = DEGENERATE_TOL, smoothing: float = 0.0
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str], bool]:
    """``(J_state, J_u, J_mu, J_h, degenerate, singular)`` of one substep (``detail``: an entry of
    ``result.extras["substep_details"]``): ``d(q, qd)_{n+1}`` with respect to ``(q_n, qd_n)``
    (``2n x 2n``; through ``q_d = S q_n`` when the targets held the pose), ``tau_0 = u``
    (``2n x n_u``), ``mu`` (``2n x n_c``) and the substep's length ``h`` (``2n``)."""
    s = system
    n, m = s.n_v, s.n_u
    p = np.asarray(detail["p"], dtype=float)
    h = float(p[2 * n])
    sp = substep_program(form, s)
    sp.set_parameters(p, np.asarray(s.mu, dtype=float))
    x, dead = substep_point(sp, p, detail["q"], detail["qd"], detail["w"])
    out_rows = sp.q_next.index if sp.nmdp else sp.kkt.v_next.index
    xp, res, viol = polish(sp.program, x, side=side, tol=tol)
    if res <= 1e-9 and viol <= 1e-12 and np.abs(xp[out_rows] - x[out_rows]).max(initial=0.0) <= 1e-6 * max(
            1.0, float(np.abs(x[out_rows]).max(initial=0.0))):
        x = xp  # the exact solution on the solver's pieces: PGM stops ~1e-7 away, and its w up to 1e-4 off
    q_next, qd_next = sp.state(p, x)
    sens = program_sensitivity(sp.program, x, side=side, tol=tol, smoothing=smoothing, outputs=out_rows)
    D = sens.dx_dp()
    cols = {nm: sp.params[nm].index for nm in sp.params}
    ih = cols["h"].start
    if sp.nmdp:  # qd+ = (q+ - q_n) / h
        dq = D[sp.q_next.index]
        dv = dq / h
        dv[:, cols["q"]] -= np.eye(n) / h
        dv[:, ih] -= (q_next - p[:n]) / h ** 2
    else:  # q+ = q_n + h qd+
        dv = D[sp.kkt.v_next.index]
        dq = h * dv
        dq[:, cols["q"]] += np.eye(n)
        dq[:, ih] += qd_next
    X = np.vstack([dq, dv])
    J_state = np.hstack([X[:, cols["q"]], X[:, cols["v"]]])
    if detail["hold"]:  # q_d = S q_n
        J_state[:, :n] += X[:, cols["q_d"]] @ sp.problem.S
    dead_names = {f"step/dissipation[{j}]" for i in np.flatnonzero(dead) for j in sp.problem.groups[i]}
    dead_names |= {f"step/simplex[{i}]" for i in np.flatnonzero(dead)}
    degenerate = [d for d in sens.degenerate if d not in dead_names]
    return J_state, X[:, cols["u"]], X[:, cols["mu"]], X[:, ih], degenerate, sens.core.singular


def polytope_step_jacobian(form: Formulation, system: ContactSystem, h: float, outcome: StepOutcome, *,
                           wrt: Sequence[str] = (), side: str = "a", tol: float = DEGENERATE_TOL,
                           smoothing: float = 0.0) -> StepJacobian:
    """The :class:`~contactmp.formulations.step_sensitivity.StepJacobian` of a polytope time step
    (``outcome`` from :meth:`~contactmp.formulations.nmdp.PolytopeFormulation.advance`) by the chain
    rule through its substeps (module docstring); ``wrt`` may name ``"mu"``; ``smoothing``: the
    relaxed derivative of :func:`~contactmp.formulations.step_sensitivity.program_sensitivity`."""
    if not isinstance(form, PolytopeFormulation):
        raise InputError("formulation", f"{getattr(form, 'name', form)!r} is not a polytope formulation")
    details = outcome.result.extras.get("substep_details")
    if not details:
        raise InputError("outcome", "has no substep_details: not the outcome of a polytope formulation's step")
    for name in wrt:
        if name != "mu":
            raise InputError("wrt", f"a polytope step is differentiated by 'mu' only, got {name!r}")
    n, m, nc = system.n_v, system.n_u, system.n_c
    X = np.hstack([np.eye(2 * n), np.zeros((2 * n, m + nc + 1))])  # d(q, qd)_j / d(q_0, qd_0, u, mu, h)
    degenerate, singular = [], False
    for j, det in enumerate(details):
        Js, Ju, Jmu, Jh, deg, sing = substep_jacobian(form, system, det, side=side, tol=tol, smoothing=smoothing)
        X = Js @ X
        X[:, 2 * n:2 * n + m] += Ju
        X[:, 2 * n + m:2 * n + m + nc] += Jmu
        X[:, -1] += Jh * float(det["p"][2 * n]) / h  # substep j has the length h_j = (h_j / h) h
        degenerate += [f"substep {j}: {d}" for d in deg] if len(details) > 1 else deg
        singular = singular or sing
    dq, dv = X[:n], X[n:]
    sl = slice(2 * n + m, 2 * n + m + nc)
    return StepJacobian(dq[:, :n], dq[:, n:2 * n], dq[:, 2 * n:2 * n + m], dv[:, :n], dv[:, n:2 * n],
                        dv[:, 2 * n:2 * n + m], degenerate, singular,
                        {"mu": dq[:, sl]} if "mu" in wrt else {}, {"mu": dv[:, sl]} if "mu" in wrt else {},
                        dq[:, -1].copy(), dv[:, -1].copy())
