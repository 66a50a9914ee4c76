"""Coulomb's friction cone as complementarity program blocks: Trinkle, Pang, Sudarsky and Lo (1995),
section 3.1, (29)-(34), equivalently (42) of Appendix A.1; and the velocity-level fc3d problem.

Coulomb's law at one contact
----------------------------
At a contact with force ``r = (r_n, r_t, r_o)``, relative acceleration (or velocity) ``u`` and
friction coefficient ``mu``, Coulomb's law with De Saxce's modified velocity reads

    r in K = {||r_T|| <= mu r_n},  u_hat = u + mu ||u_T|| e_n in K^*,  r . u_hat = 0.        (C)

``u_hat in K^*`` is just ``u_n >= 0``, and ``r . u_hat = r_n u_n + (mu r_n ||u_T|| + r_T . u_T)`` is a
sum of two terms that are ``>= 0`` on ``K x K^*`` (Cauchy-Schwarz), so (C) says ``r_n u_n = 0`` and
``r_T . u_T = -mu r_n ||u_T||``: if ``u_T != 0`` the force is on the cone's boundary and its
friction opposes ``u_T``. That is (9), (10), (11), (16) and (13) of the paper ((13) also gives
(31): ``mu c_n |a_T| = |c_T| |a_T|``).

The smooth form (``form="disk"``, the default)
----------------------------------------------
With the sliding speed ``gamma >= 0`` and a point ``w = (w_t, w_o)`` of the unit disk per contact
(the friction force in units of ``mu r_n``), (C) is written without norms, max or abs::

    0 <= r_n  _|_  u_n >= 0                      (9), (11), (16)
    r_T = mu r_n w                               the friction force
    u_T + gamma w = 0                            (13): sliding opposes friction
    0 <= 1 - w_t^2 - w_o^2  _|_  gamma >= 0      (10), (31): slides only on the cone's boundary

*Equivalence* in ``(r, u)``. From the smooth form: ``|r_T| = mu r_n |w| <= mu r_n`` (``r in K``),
``u_n >= 0``, ``r_n u_n = 0``, and ``r_T . u_T = -mu r_n gamma |w|^2``, which is
``-mu r_n ||u_T||`` because either ``gamma = 0`` and ``u_T = 0``, or ``gamma > 0``, ``|w| = 1``
and ``||u_T|| = gamma``. Conversely a solution of (C) gives ``gamma = ||u_T||``,
``w = -u_T / ||u_T||`` if ``u_T != 0``, else ``gamma = 0``, ``w = r_T / (mu r_n)`` (``w = 0`` when
``mu r_n = 0``). The cases: *rolling* ``gamma = 0``, ``u_T = 0``, ``w`` anywhere in the disk;
*starting to slide* ``gamma = ||u_T|| > 0``, ``|w| = 1``, ``r_T = -mu r_n u_T / ||u_T||``;
*breaking* ``r_n = 0`` forces ``r_T = 0`` exactly while ``u_T = -gamma w`` is free;
``mu = 0`` gives ``r_T = 0``, ``u_T`` free.

The quadratic form (``form="quadratic"``)
-----------------------------------------
The literal translation of (10), (13), (31) with ``gamma`` standing for ``|u_T|``::

    mu r_n u_T + gamma r_T = 0,      0 <= mu^2 r_n^2 - |r_T|^2  _|_  gamma >= 0

(equivalent by the same case analysis: ``gamma > 0`` puts ``r`` on the boundary and
``u_T = -gamma r_T / (mu r_n)``, ``gamma = 0`` with ``r_n > 0`` gives ``u_T = 0``, ``r_n = 0`` gives
``r_T = 0``). It is kept for comparison; the disk form is the default because it is better posed
for IPOPT: the quadratic slack has a zero gradient at the apex ``r = 0`` (every separating contact,
and the usual starting point) and a violation ``eps`` of it allows ``|r_T| ~ sqrt(eps)`` (we saw a
friction of 7.6e-6 at a separating contact pass the NLP checks at 1e-10), whereas ``1 - |w|^2``
has the gradient ``-2 w != 0`` where it is active, friction vanishes exactly with ``r_n`` and a
violation ``eps`` moves ``|r_T|`` by ``mu r_n eps / 2``. On 52 random problems of
:func:`~contactmp.models.random_problems.random_problem` the disk form was solved by the
elastic_l1, direct and scholtes strategies 52/52 times each, the quadratic form 46, 43 and 46
times; through Pyomo (``mpec.simple_nonlinear`` + IPOPT) 42/42 against 27/42.

Neither form adds ``gamma^2 = u_t^2 + u_o^2``: it is implied wherever it matters, it has a zero
gradient at every sticking solution, and without it the program is a square MCP (the free
variables ``r_T, u`` (and ``w``) pair with the equality rows, ``r_n`` with ``u_n``, ``gamma`` with
the slack), which :meth:`~contactmp.program.Program.to_mcp` accepts. Both forms are polynomial,
so the Pyomo model goes through ``mpec.simple_nonlinear`` and the NL writer.

The instantaneous cone problem (:class:`ConeNCP`)
-------------------------------------------------
From ``a = A c + b`` (24) of a :class:`~contactmp.models.ContactModel`: sliding contacts ``S`` have
their friction eliminated by (12) (``c_T = -mu v_T / |v_T| c_n``, the matrix ``A~`` of (27)-(28),
as :class:`~contactmp.formulations.PyramidLCP` does; their tangential accelerations are free and
drop out), and keep only ``0 <= c_n _|_ a_n >= 0``; rolling contacts ``R`` get the whole smooth form
above with ``r = c``, ``u = a``. That is (42); (29)-(34) is the same system with the tangential
quantities split into positive and negative parts. Variables (block ``name``), see
:meth:`ConeNCP.to_program`, with the rows ``a = A~ (c_Sn, c_R) + b`` as equalities.

With no sliding contact the problem *is* fc3d (:meth:`ConeNCP.to_fc3d`): ``W = A`` and ``q = b``
reordered per contact ``(n, t, o)``, ``r = c``, ``u = a``, by the equivalence above.

The QVI of Appendix A.3 is the same problem in the rolling friction forces alone, after
``(a_n, c_n)`` are eliminated through the LCP (47) -- a function only when ``A~`` is a P-matrix and
itself the solution of a subproblem; the complementarity form above is one flat program for any
``A~``, which is what IPOPT, Pyomo and the MCP reduction take, so it is the one built here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, UnsupportedProgramError
from contactmp.models.contact_model import ContactModel, StackedSolution
from contactmp.solvers.fc3d import FC3DBlock, FORMS, check_form, cone_law, add_fc3d_block
from contactmp.validate import float_vector

if TYPE_CHECKING:  # pragma: no cover
    from contactmp.program import Program

__all__ = ["ConeNCP", "ConeSolution", "FC3DBlock", "FORMS", "add_fc3d_block", "fc3d_permutation"]


def fc3d_permutation(n_c: int) -> np.ndarray:
    """``p`` with ``x_fc3d = x_model[p]``: the model's grouping ``(n..., t..., o...)`` -> per contact
    ``(n_j, t_j, o_j)``."""
    j = np.arange(n_c)
    return np.column_stack([j, n_c + j, 2 * n_c + j]).ravel()


# ----------------------------------------------------------------------------------------------
# The instantaneous cone problem of a ContactModel
# ----------------------------------------------------------------------------------------------
@dataclass
class ConeSolution(StackedSolution):
    """A solution of the cone model mapped back to physics.

    ``c_n, c_t, c_o`` and ``a_n, a_t, a_o`` have one entry per contact (model order); ``qddot``
    (``6 n_obj``) and ``lddot`` (``n_l``) the body and joint accelerations; ``modes[j]`` is
    ``"breaking"`` (``a_jn > tol``), ``"rolling"`` (a rolling contact with ``a_jT = 0``) or
    ``"sliding"`` (a sliding contact, or a rolling one starting to slide). ``gamma`` is the
    program's sliding-speed variable at the rolling contacts (``|a_T|`` when computed from forces),
    NaN at sliding contacts; ``x`` the program vector it came from (None when built from forces).
    """

    gamma: np.ndarray
    x: np.ndarray | None = None


class ConeNCP:
    """The instantaneous three-dimensional contact problem with Coulomb's cone, (42) / (29)-(34).

    Parameters
    ----------
    model : ContactModel
    form : "disk" (default) or "quadratic"
        The smooth form of Coulomb's law at rolling contacts (see the module docstring).

    Attributes
    ----------
    S, R : the sliding and rolling contact indices (model order)
    L : (3 n_c, n_c + 2 n_R) the linear map ``c = L y`` with ``y = (c_n, c_Rt, c_Ro)`` (``c_n`` of
        all contacts in model order); sliding friction by (12)
    A_tilde, b_tilde : ``a_rows = A_tilde y + b_tilde`` for the rows ``(a_n, a_Rt, a_Ro)`` -- the
        matrix ``A~`` of (27) with its columns in the order of ``y``
    """

    def __init__(self, model: ContactModel, form: str = "disk"):
        if not isinstance(model, ContactModel):
            raise InputError("model", "must be a ContactModel")
        self.form = check_form(form)
        if model.n_c == 0:
            raise InputError("model", "has no contacts")
        self.model = model
        m = model
        nc = m.n_c
        self.S = np.asarray(m.sliding, dtype=np.int64)
        self.R = np.asarray(m.rolling, dtype=np.int64)
        nR = self.R.size
        L = np.zeros((3 * nc, nc + 2 * nR))
        L[np.arange(nc), np.arange(nc)] = 1.0
        if self.S.size:
            vT = np.hypot(m.v_t[self.S], m.v_o[self.S])
            L[nc + self.S, self.S] = -m.mu[self.S] * m.v_t[self.S] / vT  # -(V_St)_jj   (12), (28)
            L[2 * nc + self.S, self.S] = -m.mu[self.S] * m.v_o[self.S] / vT  # -(V_So)_jj
        kR = np.arange(nR)
        L[nc + self.R, nc + kR] = 1.0
        L[2 * nc + self.R, nc + nR + kR] = 1.0
        self.L = L
        self._rows = np.concatenate([np.arange(nc), nc + self.R, 2 * nc + self.R])
        self.A_tilde = (m.A @ L)[self._rows]
        self.b_tilde = m.b[self._rows].copy()

    @property
    def n_x(self) -> int:
        """Number of variables of the program made by :meth:`to_program`."""
        return 2 * self.model.n_c + (7 if self.form == "disk" else 5) * self.R.size

    def _layout(self) -> list[tuple[str, int]]:
        """(name, size) of the variables of :meth:`to_program`, in order."""
        nc, nR = self.model.n_c, self.R.size
        out = [("c_n", nc)]
        if nR:
            out += [("c_t", nR), ("c_o", nR)] + ([("w", 2 * nR)] if self.form == "disk" else []) + [("gamma", nR)]
        out.append(("a_n", nc))
        if nR:
            out += [("a_t", nR), ("a_o", nR)]
        return out

    # -----------------------------------------------------------------------------------------
    def to_program(self, name: str = "cone_ncp") -> "Program":
        """This problem as a :class:`~contactmp.program.Program` with one block ``name``.

        Variables (in this order; names ``"{name}/c_n"`` etc.): ``c_n`` (``n_c``, model order,
        ``>= 0``), ``c_t``, ``c_o`` (``n_R``, rolling contacts in the order of ``R``), ``w``
        (``2 n_R``, disk form only: ``w_t`` then ``w_o``), ``gamma`` (``n_R``, ``>= 0``), ``a_n``
        (``n_c``), ``a_t``, ``a_o`` (``n_R``). Rows: ``(a_n, a_Rt, a_Ro) = A~ (c_n, c_Rt, c_Ro) + b``
        ((24) with (12) substituted), the pairs ``0 <= c_n _|_ a_n >= 0`` ((9), (11), (16)), and at
        the rolling contacts the friction law of ``form`` (disk: ``c_T = mu c_n w``,
        ``a_T + gamma w = 0``, ``0 <= 1 - |w|^2 _|_ gamma >= 0``; quadratic:
        ``mu c_n a_T + gamma c_T = 0``, ``0 <= mu^2 c_n^2 - |c_T|^2 _|_ gamma >= 0``), which is
        (10), (13), (31); see the module docstring for why this is equivalent. Polynomial, so it
        also goes to Pyomo (``to_pyomo()``) and, being a square MCP, to ``to_mcp()``.
        """
        import casadi as ca

        from contactmp.program import Program

        m = self.model
        nc, nR = m.n_c, self.R.size
        prog = Program(name)
        c_n = prog.add_variables(f"{name}/c_n", nc, lb=0.0, block=name)
        parts = [c_n.sym]
        if nR:
            c_t = prog.add_variables(f"{name}/c_t", nR, block=name)
            c_o = prog.add_variables(f"{name}/c_o", nR, block=name)
            w = prog.add_variables(f"{name}/w", 2 * nR, block=name) if self.form == "disk" else None
            gamma = prog.add_variables(f"{name}/gamma", nR, lb=0.0, block=name)
            parts += [c_t.sym, c_o.sym]
        a_n = prog.add_variables(f"{name}/a_n", nc, init=np.maximum(m.b[:nc], 0.0), block=name)
        a_parts = [a_n.sym]
        if nR:
            a_t = prog.add_variables(f"{name}/a_t", nR, init=m.b[nc + self.R], block=name)
            a_o = prog.add_variables(f"{name}/a_o", nR, init=m.b[2 * nc + self.R], block=name)
            a_parts += [a_t.sym, a_o.sym]
        y = ca.vertcat(*parts)
        a_rows = ca.vertcat(*a_parts)
        prog.add_constraint(a_rows - ca.mtimes(ca.DM(self.A_tilde), y) - ca.DM(self.b_tilde), 0.0, 0.0,
                            name=f"{name}/accelerations", block=name)
        prog.add_complementarity(c_n.sym, a_n.sym, name=f"{name}/normal", block=name)
        if nR:
            mu = ca.DM(m.mu[self.R])
            cone_law(prog, name, name, self.form, c_n.sym[self.R.tolist()], c_t.sym, c_o.sym, a_t.sym,
                      a_o.sym, gamma.sym, w, mu)
        return prog

    def to_fc3d(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(W, q, mu)`` of fc3d when no contact is sliding: ``W = A``, ``q = b`` reordered per
        contact ``(n, t, o)`` (:func:`fc3d_permutation`), with ``r = c`` and ``u = a``.

        With ``S`` empty the problem is ``a = A c + b`` with, at every contact, ``c in K_mu``,
        ``a_n >= 0``, ``c_n a_n = 0`` and (13): exactly (C) of the module docstring, i.e. fc3d
        with De Saxce's ``u_hat = u + mu ||u_T|| e_n``: ``r_n > 0`` forces ``u_n = 0`` (and ``u_T``
        opposite to ``r_T`` with ``r`` on the boundary, or ``u_T = 0``), ``r = 0`` leaves
        ``u_n >= 0`` and ``u_T`` free. Map an fc3d answer back with ``solution(r=...)``.
        Raises :class:`UnsupportedProgramError` when some contact slides.
        """
        if self.S.size:
            raise UnsupportedProgramError(
                f"contacts {self.S.tolist()} are sliding: their friction is fixed by (12) "
                "(c_T = -mu v_T/|v_T| c_n), so their force is not a free point of the cone and their "
                "tangential accelerations are free; that is not fc3d. Use to_program() instead."
            )
        p = fc3d_permutation(self.model.n_c)
        W = self.model.A[np.ix_(p, p)].copy()
        return W, self.model.b[p].copy(), self.model.mu.copy()

    # -----------------------------------------------------------------------------------------
    def solution(self, x: ArrayLike | None = None, *, c: ArrayLike | None = None, r: ArrayLike | None = None,
                 program: "Program | None" = None, name: str = "cone_ncp", tol: float = 1e-8) -> ConeSolution:
        """Map an answer to forces, accelerations ``qddot`` (22), ``lddot`` (23), ``a`` (6), modes.

        Give exactly one of: ``x``, a solution of the Program of :meth:`to_program` (read through
        ``program``'s block ``name`` if ``program`` is given, else in to_program's variable
        layout); ``c``, the forces ``(c_n, c_t, c_o)`` (``3 n_c``, model grouping; used as given);
        ``r``, an fc3d answer of :meth:`to_fc3d` (per-contact order). ``tol`` (times
        ``max(1, ||b||_inf)``) decides ``a_n > 0`` (breaking) and ``a_T = 0`` (rolling).
        """
        given = [k for k, v in (("x", x), ("c", c), ("r", r)) if v is not None]
        if len(given) != 1:
            raise InputError("x", f"give exactly one of x, c, r (got {given or 'none'})")
        m = self.model
        nc, nR = m.n_c, self.R.size
        gamma = np.full(nc, np.nan)
        xv = None
        if x is not None:
            xv = _finite_vector(x, "x")
            if program is not None:
                blk = program.blocks.get(name)
                if blk is None:
                    raise InputError("program", f"has no block '{name}'")
                vals = {h.name.rsplit("/", 1)[-1]: program.value(h, xv) for h in blk.variables}
            else:
                if xv.shape[0] != self.n_x:
                    raise InputError("x", f"must have length {self.n_x} (the layout of to_program), got {xv.shape[0]}")
                vals, k = {}, 0
                for key, size in self._layout():
                    vals[key] = xv[k: k + size]
                    k += size
            y = np.concatenate([vals["c_n"]] + ([vals["c_t"], vals["c_o"]] if nR else []))
            cv = self.L @ y
            if nR:
                gamma[self.R] = vals["gamma"]
        elif c is not None:
            cv = float_vector(c, 3 * nc, "c")
        else:
            cv = np.empty(3 * nc)
            cv[fc3d_permutation(nc)] = float_vector(r, 3 * nc, "r")
        fields = m.solution_fields(cv, self.R, tol)
        if xv is None and nR:
            gamma[self.R] = np.hypot(fields["a_t"][self.R], fields["a_o"][self.R])
        return ConeSolution(gamma=gamma, x=xv, **fields)

    def check(self, sol: ConeSolution) -> dict[str, float]:
        """Residuals of the model's conditions computed from the physical quantities of ``sol``.

        Keys (all 0 at an exact solution; (4)-(6) are identities for the output of
        :meth:`solution`): ``"(4)"``, ``"(5)"`` Newton-Euler of objects and manipulator;
        ``"(6)"`` ``a = W^T qddot - J lddot + bias``; ``"(9)"`` ``max(0, -a_n)``; ``"(10)"`` cone
        violation ``max(0, |c_T| - mu c_n)``; ``"(11)"`` ``max(0, -c_n)``; ``"(12)"`` sliding
        friction ``|mu c_n v_T + c_T |v_T|| / |v_T|``; ``"(13)"`` at rolling contacts
        ``|mu c_n a_T + c_T |a_T|| / max(1, |a_T|)`` (it also implies (31): force on the boundary
        when ``a_T != 0``); ``"(16)"`` ``max_j min(|c_jn|, |a_jn|)`` (all inf-norms).
        """
        m = self.model
        mu, R = m.mu, self.R
        out = m.common_residuals(sol.c, sol.a, sol.qddot, sol.lddot, self.S)
        cT = np.hypot(sol.c_t, sol.c_o)
        out["(10)"] = max(0.0, float((cT - mu * sol.c_n).max(initial=0.0)))

        def inf(v: np.ndarray) -> float:
            return float(np.abs(v).max(initial=0.0))

        if R.size:
            at, ao = sol.a_t[R], sol.a_o[R]
            aT = np.hypot(at, ao)
            mc = mu[R] * sol.c_n[R]
            r13 = np.maximum(np.abs(mc * at + sol.c_t[R] * aT), np.abs(mc * ao + sol.c_o[R] * aT))
            out["(13)"] = inf(r13 / np.maximum(1.0, aT))
        else:
            out["(13)"] = 0.0
        return out


def _finite_vector(v: Any, field: str) -> np.ndarray:
    try:
        arr = np.asarray(v, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InputError(field, f"cannot be read as a float vector ({exc})") from None
    if not np.isfinite(arr).all():
        raise InputError(field, "contains NaN or inf")
    return arr
