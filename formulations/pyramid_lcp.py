"""The friction-pyramid model as an LCP: Trinkle, Pang, Sudarsky and Lo (1995), (35)-(39) / (52).

Starting from ``a = A c + b`` (24) of a :class:`~contactmp.models.ContactModel`:

* sliding contacts ``j in S``: Coulomb's law (12) gives ``c_jt = -mu_j v_jt / |v_jT| c_jn`` and
  ``c_jo = -mu_j v_jo / |v_jT| c_jn`` (the diagonal matrices ``V_St``, ``V_So`` of (27)-(28)); their
  tangential accelerations are free and drop out;
* rolling contacts ``j in R`` (4 facets, the paper's form): the slacks (35)
  ``s+_jt = mu_j c_jn + c_jt``, ``s-_jt = mu_j c_jn - c_jt = 2 mu_j c_jn - s+_jt`` (same for ``o``) and
  ``a_jt = a+_jt - a-_jt`` give the LCP (37)-(39)::

      z = (c_Sn, c_Rn, s+_Rt, s+_Ro, a-_Rt, a-_Ro)
      w = (a_Sn, a_Rn, a+_Rt, a+_Ro, s-_Rt, s-_Ro) = M z + q,   0 <= z _|_ w >= 0

  of size ``n_S + 5 n_R``, with ``q = (b_Sn, b_Rn, b_Rt, b_Ro, 0, 0)`` and ``M`` the matrix of (37)
  (its ``M_nn`` blocks are ``A_nn - A_nt diag(V_St, U_R) - A_no diag(V_So, U_R)``, its last block
  rows ``[0 2U_R -I 0 0 0]`` and ``[0 2U_R 0 -I 0 0]``);
* ``k >= 3`` facets (the generalization announced in section 2.4): the friction force at a rolling
  contact is ``c_T = sum_i D_i beta_i`` with ``beta >= 0`` and generators ``D_i`` at the angles
  ``(2i+1) pi / k`` of length ``1 / cos(pi / k)``, so the polygon ``{sum D_i beta_i : sum beta_i <=
  mu c_n}`` circumscribes the circle of radius ``mu c_n`` (for ``k = 4`` it is the paper's square
  ``|c_t|, |c_o| <= mu c_n``). With ``lambda_j >= 0`` the maximal-dissipation LCP reads
  ``beta_ji _|_ lambda_j + D_i . a_jT >= 0`` and ``lambda_j _|_ mu_j c_jn - sum_i beta_ji >= 0``::

      z = (c_Sn, c_Rn, beta_R (k per contact), lambda_R),   size n_S + (k + 2) n_R.

``solution(z)`` maps any answer back to physics (forces of all contacts, ``qddot`` (22), ``lddot``
(23), ``a`` (6), contact modes) and ``check(solution)`` judges it by the paper's conditions
computed from those physical quantities. For a solution built by ``solution()`` the entries (4)-(6)
hold by construction (the accelerations are computed from the forces with the same equations); they
are there to judge forces and accelerations that come from elsewhere. (9), (11), (12) and (16)-(18)
are the real test of an LCP answer.

Also here: :func:`random_pyramid_lcp` (the pyramid LCP of a random problem of section 6, of a given
size) and :func:`proposition3_mu_bound` (Proposition 3's friction bound for a model, a
:class:`FrictionBound` certificate with a :class:`~contactmp.solvers.lcp.certificates.Verdict`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, check_number
from contactmp.friction_polygon import facet_generators, facet_normals
from contactmp.models.contact_model import ContactModel, StackedSolution
from contactmp.models.random_problems import SceneStyle, random_problem
from contactmp.validate import float_vector

if TYPE_CHECKING:  # pragma: no cover
    from contactmp.program import Program
    from contactmp.result import Result
    from contactmp.solvers.lcp import Verdict


@dataclass
class PyramidSolution(StackedSolution):
    """A solution of the pyramid model mapped back to physics.

    ``c_n, c_t, c_o`` and ``a_n, a_t, a_o`` have one entry per contact (all contacts, in the model's
    order); ``qddot`` (6 n_obj) and ``lddot`` (n_l) are the body and joint accelerations; ``modes[j]``
    is ``"breaking"`` (``a_jn > tol``), ``"rolling"`` (a rolling contact staying at rest,
    ``a_jt = a_jo = 0``) or ``"sliding"`` (a sliding contact, or a rolling one starting to slide).
    ``z`` and ``w = M z + q`` are the LCP vectors it came from.
    """

    z: np.ndarray
    w: np.ndarray
    facets: int


class PyramidLCP:
    """The pyramid LCP of a contact model (see the module docstring).

    Parameters
    ----------
    model : ContactModel
    facets : int
        Number of facets ``k >= 3`` of the friction pyramid at rolling contacts.
    form : "auto", "paper" or "generators"
        ``"paper"``: the slack form (37) (only ``k = 4``); ``"generators"``: the ``beta``/``lambda``
        form for any ``k``; ``"auto"``: ``"paper"`` when ``k = 4``, else ``"generators"``.

    Attributes
    ----------
    M, q : the LCP data (``w = M z + q``); ``size``
    z_names, w_names : names of the variables, e.g. ``"c_n[3]"``, ``"s+_t[5]"``, ``"a-_o[5]"``
        (the number is the contact index in the model)
    index : dict mapping each name of ``z_names`` to its position
    contact_of : (size,) the contact index each entry of ``z`` (and ``w``) belongs to
    S, R : the sliding and rolling contact indices (in the order used in ``z``)
    L : (3 n_c, size) the linear map ``c = L z`` back to the contact forces
    """

    def __init__(self, model: ContactModel, facets: int = 4, form: Literal["auto", "paper", "generators"] = "auto"):
        if not isinstance(model, ContactModel):
            raise InputError("model", "must be a ContactModel")
        if not isinstance(facets, (int, np.integer)) or isinstance(facets, bool) or facets < 3:
            raise InputError("facets", f"must be an int >= 3, got {facets!r}")
        if form not in ("auto", "paper", "generators"):
            raise InputError("form", f"must be 'auto', 'paper' or 'generators', got {form!r}")
        if form == "paper" and facets != 4:
            raise InputError("form", "the paper's slack form (37) has exactly 4 facets")
        self.model = model
        self.facets = int(facets)
        self.form = ("paper" if facets == 4 else "generators") if form == "auto" else form
        self.S = np.asarray(model.sliding, dtype=np.int64)
        self.R = np.asarray(model.rolling, dtype=np.int64)
        if self.form == "paper":
            self._build_paper()
        else:
            self._build_generators()
        self.index = {name: k for k, name in enumerate(self.z_names)}

    @property
    def size(self) -> int:
        """Dimension of the LCP."""
        return int(self.q.shape[0])

    # -----------------------------------------------------------------------------------------
    def _sliding_block(self, L: np.ndarray) -> None:
        """Columns of ``c_Sn`` in ``L``: ``c_n``, and ``c_T = -mu v_T / |v_T| c_n`` (12), (27)-(28)."""
        m = self.model
        nc = m.n_c
        vT = np.hypot(m.v_t, m.v_o)
        for k, j in enumerate(self.S):
            L[j, k] = 1.0
            L[nc + j, k] = -m.mu[j] * m.v_t[j] / vT[j]  # -(V_St)_jj
            L[2 * nc + j, k] = -m.mu[j] * m.v_o[j] / vT[j]  # -(V_So)_jj

    def _build_paper(self) -> None:
        m = self.model
        nc, nS, nR = m.n_c, len(self.S), len(self.R)
        n = nS + 5 * nR
        zR, zst, zso, zat, zao = nS, nS + nR, nS + 2 * nR, nS + 3 * nR, nS + 4 * nR
        muR = m.mu[self.R]
        L = np.zeros((3 * nc, n))
        self._sliding_block(L)
        kR = np.arange(nR)
        L[self.R, zR + kR] = 1.0
        L[nc + self.R, zst + kR] = 1.0  # c_Rt = s+_Rt - mu c_Rn   (35)
        L[nc + self.R, zR + kR] = -muR
        L[2 * nc + self.R, zso + kR] = 1.0
        L[2 * nc + self.R, zR + kR] = -muR
        AL = m.A @ L
        M = np.zeros((n, n))
        q = np.zeros(n)
        M[:nS] = AL[self.S]
        q[:nS] = m.b[self.S]
        M[zR:zst] = AL[self.R]
        q[zR:zst] = m.b[self.R]
        M[zst:zso] = AL[nc + self.R]  # a+_Rt = a_Rt + a-_Rt
        M[zst + kR, zat + kR] += 1.0
        q[zst:zso] = m.b[nc + self.R]
        M[zso:zat] = AL[2 * nc + self.R]
        M[zso + kR, zao + kR] += 1.0
        q[zso:zat] = m.b[2 * nc + self.R]
        M[zat + kR, zR + kR] = 2.0 * muR  # s-_Rt = 2 mu c_Rn - s+_Rt
        M[zat + kR, zst + kR] = -1.0
        M[zao + kR, zR + kR] = 2.0 * muR
        M[zao + kR, zso + kR] = -1.0
        self.L, self.M, self.q = L, M, q
        S, R = self.S.tolist(), self.R.tolist()
        self.contact_of = np.array(S + R * 5, dtype=np.int64)
        self.z_names = (
            [f"c_n[{j}]" for j in S] + [f"c_n[{j}]" for j in R] + [f"s+_t[{j}]" for j in R]
            + [f"s+_o[{j}]" for j in R] + [f"a-_t[{j}]" for j in R] + [f"a-_o[{j}]" for j in R]
        )
        self.w_names = (
            [f"a_n[{j}]" for j in S] + [f"a_n[{j}]" for j in R] + [f"a+_t[{j}]" for j in R]
            + [f"a+_o[{j}]" for j in R] + [f"s-_t[{j}]" for j in R] + [f"s-_o[{j}]" for j in R]
        )

    def _build_generators(self) -> None:
        m = self.model
        k = self.facets
        nc, nS, nR = m.n_c, len(self.S), len(self.R)
        n = nS + (k + 2) * nR
        zR, zb, zl = nS, nS + nR, nS + nR + k * nR
        D = facet_generators(k)
        muR = m.mu[self.R]
        L = np.zeros((3 * nc, n))
        self._sliding_block(L)
        for r, j in enumerate(self.R):
            L[j, zR + r] = 1.0
            cols = zb + r * k + np.arange(k)
            L[nc + j, cols] = D[:, 0]
            L[2 * nc + j, cols] = D[:, 1]
        AL = m.A @ L
        M = np.zeros((n, n))
        q = np.zeros(n)
        M[:nS] = AL[self.S]
        q[:nS] = m.b[self.S]
        M[zR:zb] = AL[self.R]
        q[zR:zb] = m.b[self.R]
        for r, j in enumerate(self.R):
            rows = zb + r * k + np.arange(k)
            M[rows] = np.outer(D[:, 0], AL[nc + j]) + np.outer(D[:, 1], AL[2 * nc + j])
            M[rows, zl + r] += 1.0
            q[rows] = D @ np.array([m.b[nc + j], m.b[2 * nc + j]])
            M[zl + r, zR + r] = muR[r]
            M[zl + r, rows] = -1.0
        self.L, self.M, self.q = L, M, q
        S, R = self.S.tolist(), self.R.tolist()
        self.contact_of = np.array(S + R + [j for j in R for _ in range(k)] + R, dtype=np.int64)
        self.z_names = (
            [f"c_n[{j}]" for j in S] + [f"c_n[{j}]" for j in R]
            + [f"beta{i}[{j}]" for j in R for i in range(k)] + [f"lambda[{j}]" for j in R]
        )
        self.w_names = (
            [f"a_n[{j}]" for j in S] + [f"a_n[{j}]" for j in R]
            + [f"lambda+D{i}.a_T[{j}]" for j in R for i in range(k)] + [f"mu*c_n-sum(beta)[{j}]" for j in R]
        )

    # -----------------------------------------------------------------------------------------
    def island_blocks(self) -> list[np.ndarray]:
        """Positions in ``z`` of each island's variables, islands as in
        :func:`~contactmp.models.islands.contact_islands` (connected components of the body-contact
        graph). ``M`` is block diagonal over them: rows and columns of different islands meet only
        in exact zeros of ``A``."""
        from contactmp.models.islands import contact_islands

        label = np.empty(self.model.n_c, dtype=np.int64)
        islands = contact_islands(self.model)
        for k, contacts in enumerate(islands):
            label[contacts] = k
        owner = label[self.contact_of]
        return [np.flatnonzero(owner == k) for k in range(len(islands))]

    def solve(
        self, solver: str | None = None, *, islands: bool = True, tol: float = 1e-8, **options: object
    ) -> tuple["Result", PyramidSolution | None]:
        """Solve LCP(q, M) and map the answer back to physics.

        With ``islands=True`` each independent sub-problem (:meth:`island_blocks`) is its own LCP
        ``(M[I, I], q[I])``, solved by :func:`~contactmp.solvers.islands.solve_lcp_islands` with
        ``solver`` (``None``: the default order; equal-size islands as one Lemke batch) and
        ``options``; the pieces are assembled into one ``z``. Either way the
        returned :class:`~contactmp.result.Result` judges the whole ``z`` by the whole LCP's residual
        ``||min(z, M z + q)||_inf <= tol``, so ``solved`` means the whole problem is solved;
        ``extras["islands"]`` lists each island's size, status, solver and iterations (one entry when
        ``islands=False``). The :class:`PyramidSolution` is ``None`` when ``z`` is not finite.
        """
        from contactmp.solvers.islands import solve_lcp_islands

        blocks = self.island_blocks() if islands else [np.arange(self.size)]
        result = solve_lcp_islands(self.M, self.q, blocks, solver, tol=tol, **options)
        if not islands:
            result = result.replace(message="solved whole")
        sol = self.solution(result.x, tol=tol) if np.isfinite(result.x).all() else None
        return result, sol

    def to_program(self, name: str = "pyramid_lcp") -> "Program":
        """This LCP declared as a :class:`~contactmp.program.Program` block ``name``.

        One Variables handle per group of ``z`` (``c_n``, ``s+_t``, ``s+_o``, ``a-_t``, ``a-_o`` for
        the paper's form; ``c_n``, ``beta``, ``lambda`` for the generator form), stacked in the order
        of ``z``, all ``>= 0``, and the pairs ``0 <= z _|_ M z + q >= 0``. Solve it with IPOPT
        (:func:`contactmp.solvers.nlp.solve.solve_program`), reduce it back with ``to_lcp()``, or take it
        to Pyomo with ``to_pyomo()``; :meth:`z_from_program` reads ``z`` off any of those answers.
        """
        import casadi as ca

        from contactmp.program import Program

        prog = Program(name)
        groups: list[tuple[str, int]] = []
        for zname in self.z_names:
            prefix = zname.split("[", 1)[0]
            if groups and groups[-1][0] == prefix:
                groups[-1] = (prefix, groups[-1][1] + 1)
            else:
                groups.append((prefix, 1))
        handles = [
            prog.add_variables(f"{name}/{prefix}#{k}", count, lb=0.0, block=name)
            for k, (prefix, count) in enumerate(groups)
        ]
        z = ca.vertcat(*[h.sym for h in handles])
        prog.add_complementarity(z, ca.mtimes(ca.DM(self.M), z) + ca.DM(self.q), name=f"{name}/z_perp_w", block=name)
        return prog

    @staticmethod
    def z_from_program(prog: "Program", x: ArrayLike, name: str = "pyramid_lcp") -> np.ndarray:
        """``z`` from a solution ``x`` of the Program made by :meth:`to_program` (block ``name``)."""
        return np.concatenate([prog.value(h, x) for h in prog.blocks[name].variables])

    def solution(self, z: ArrayLike, tol: float = 1e-8) -> PyramidSolution:
        """Map an LCP vector ``z`` to forces (``c = L z``; sliding friction by (12)), accelerations
        ``qddot`` (22), ``lddot`` (23), ``a`` (6) and contact modes; ``tol`` (times
        ``max(1, ||b||_inf)``) decides ``a_n > 0`` (breaking) and ``a_T = 0`` (rolling)."""
        z = float_vector(z, self.size, "z")
        return PyramidSolution(z=z, w=self.M @ z + self.q, facets=self.facets,
                               **self.model.solution_fields(self.L @ z, self.R, tol))

    def check(self, sol: PyramidSolution) -> dict[str, float]:
        """Residuals of the model's conditions computed from the physical quantities of ``sol``.

        (4)-(6) are identities for the output of :meth:`solution`; the other keys test the answer.

        Keys (all 0 at an exact solution): ``"(4)"``, ``"(5)"`` Newton-Euler of objects and
        manipulator (inf-norm); ``"(6)"`` ``a = W^T qddot - J lddot + bias``; ``"(9)"`` ``max(0, -a_n)``;
        ``"(11)"`` ``max(0, -c_n)``; ``"(12)"`` sliding friction ``|mu c_n v_T + c_T |v_T|| / |v_T|``;
        ``"(16)"`` ``max_j min(|c_jn|, |a_jn|)``; ``"(17)"`` pyramid violation at rolling contacts
        (``max(|c_t|, |c_o|) - mu c_n``; for ``k != 4`` facets the polygon's ``e_i . c_T - mu c_n``);
        ``"(18)"`` ``|mu c_n a_t + c_t |a_t|| / max(1, |a_t|)`` and the same for ``o`` (for ``k != 4``:
        maximal dissipation ``|c_T . a_T - mu c_n min_i D_i . a_T| / max(1, |a_T|)``).
        """
        m = self.model
        out = m.common_residuals(sol.c, sol.a, sol.qddot, sol.lddot, self.S)
        c_n, c_t, c_o = sol.c_n, sol.c_t, sol.c_o
        a_t, a_o = sol.a_t, sol.a_o
        R, mu = self.R, m.mu

        def inf(x: np.ndarray) -> float:
            return float(np.abs(x).max(initial=0.0))

        if R.size:
            cT = np.column_stack([c_t[R], c_o[R]])
            aT = np.column_stack([a_t[R], a_o[R]])
            mcn = mu[R] * c_n[R]
            if self.facets == 4:
                out["(17)"] = max(0.0, float((np.abs(cT) - mcn[:, None]).max()))
                r18 = np.abs(mcn[:, None] * aT + cT * np.abs(aT)) / np.maximum(1.0, np.abs(aT))
                out["(18)"] = inf(r18)
            else:
                E = facet_normals(self.facets)
                out["(17)"] = max(0.0, float((cT @ E.T - mcn[:, None]).max()))
                D = facet_generators(self.facets)
                diss = np.einsum("ij,ij->i", cT, aT) - mcn * (aT @ D.T).min(axis=1)
                out["(18)"] = inf(diss / np.maximum(1.0, np.linalg.norm(aT, axis=1)))
        else:
            out["(17)"] = 0.0
            out["(18)"] = 0.0
        return out


def random_pyramid_lcp(size: int, seed: int, mu: float = 0.5, *,
                       style: str | SceneStyle = "classic") -> tuple[np.ndarray, np.ndarray]:
    """``(M, q)`` of the pyramid LCP (37) of a random problem whose LCP has exactly ``size`` rows.

    ``n_R`` is drawn in ``[ceil(0.6 size / 5), floor(size / 5)]``, ``n_S = size - 5 n_R``, and the
    number of boxes between 1 and ``1 + n_c / 6``; the scene is furnished in ``style``.
    """
    if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 1:
        raise InputError("size", f"must be an int >= 1, got {size!r}")
    rng = np.random.default_rng([int(seed), int(size)])
    hi = size // 5
    lo = min(hi, int(np.ceil(0.6 * size / 5)))
    n_R = int(rng.integers(lo, hi + 1))
    n_S = size - 5 * n_R
    n_c = n_S + n_R
    nb = int(rng.integers(1, max(1, min(n_c, 1 + n_c // 6)) + 1))
    model = random_problem(int(rng.integers(2**31)), nb, n_S, n_R, mu=mu, style=style)
    form = PyramidLCP(model)
    assert form.size == size
    return form.M, form.q


# ----------------------------------------------------------------------------------------------
# Proposition 3: the friction bound
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FrictionBound:
    """Proposition 3 of Trinkle et al. (1995) and its extension to uniqueness, for one contact model.

    Notation (Appendix A.3): ``~B`` (44) is the principal submatrix of ``A`` on the rows/columns
    ``(Sn, Rn, Rt, Ro)``; ``C_t = [(Ant)SS; (Ant)RS; (Att)RS; (Aot)RS]`` and ``C_o`` (the same with
    ``o``) are the ``A`` columns of the sliding tangential forces on those rows, so that (45)-(46)
    ``~A = ~B - E_t - E_o`` with ``E_t = [C_t V_St, 0, 0, 0]``, ``E_o = [C_o V_So, 0, 0, 0]``,
    ``V_St = diag(mu_j v_jt / |v_jT|)``, ``V_So = diag(mu_j v_jo / |v_jT|)``, ``j in S``.

    Attributes
    ----------
    sigma_min : float
        Smallest eigenvalue of the symmetric ``~B``.
    delta_t, delta_o : float
        ``||C_t||_2``, ``||C_o||_2``.
    mu_bar : float
        Proposition 3: ``sigma_min / (delta_t + delta_o)``; ``mu_j < mu_bar`` for all ``j in S``
        makes ``~A`` positive definite (``x^T ~A x >= (sigma_min - mu_S (delta_t + delta_o)) |x|^2``
        since ``||V_St||, ||V_So|| <= mu_S``). ``inf`` without sliding contacts, 0 if
        ``sigma_min <= 0``.
    gamma_t, gamma_o : float
        ``||~B[:, Rt]||_2``, ``||~B[:, Ro]||_2`` (the columns of ``~B`` of the rolling tangential forces).
    rho_t, rho_o : float
        Bounds on ``|c_jt| / (mu_j c_jn)``, ``|c_jo| / (mu_j c_jn)`` at a rolling contact: 1 for the cone
        and the square pyramid; ``max_i |D_i,t|``, ``max_i |D_i,o|`` for the ``k``-facet generators.
    mu_bar_unique : float
        ``sigma_min / (delta_t + delta_o + rho_t gamma_t + rho_o gamma_o)``: with ``mu_j`` below it at
        every contact, the matrix (50) ``~A [I 0 0 0; 0 I 0 0; 0 D_t I 0; 0 D_o 0 I]`` is positive
        definite for every diagonal ``|D_t| <= rho_t mu_R``, ``|D_o| <= rho_o mu_R`` (it equals
        ``~B - E_t - E_o + ~B N`` with ``~B N = [0, ~B_Rt D_t + ~B_Ro D_o, 0, 0]``, because ``E N = 0``),
        and the argument of Appendix A.5 then shows that the contact forces ``c`` (hence ``a`` and the
        accelerations) are unique.
    mu_pd_exact : float
        The largest uniform sliding ``mu`` for which the symmetric part of ``~A`` stays positive
        definite (``1 / lambda_max(sym(E_t + E_o)|_{mu=1}, ~B)``): what Proposition 3 estimates.
    full_rank : bool
        Theorem 1's hypothesis: the system Jacobian ``[W; J^T]`` has full column rank.
    mu_S, mu_R : float
        The model's largest sliding and rolling friction coefficients.
    A_tilde_min_eig : float
        ``lambda_min(sym(~A))`` at the model's own ``mu``.
    verdict : Verdict
        For the model's own ``mu``: ``EXISTENCE_AND_UNIQUENESS`` (full rank, ``mu_S < mu_bar`` and
        the uniqueness margin ``sigma_min - mu_S (delta_t + delta_o) - mu_R (rho_t gamma_t + rho_o
        gamma_o) > 0``), ``UNIQUENESS`` (margin > 0 but ``J_sys`` rank deficient: at most one
        solution), ``EXISTENCE`` (Theorem 1(a) only) or ``NOT_GUARANTEED``.
    margin : float
        The uniqueness margin above.
    extras : dict
        ``"B_tilde"`` (44), ``"A_tilde"`` (46) at the model's ``mu``, ``"rows"`` (their indices into
        the ``3 n_c`` ordering of ``A``).
    """

    sigma_min: float
    delta_t: float
    delta_o: float
    mu_bar: float
    gamma_t: float
    gamma_o: float
    rho_t: float
    rho_o: float
    mu_bar_unique: float
    mu_pd_exact: float
    full_rank: bool
    mu_S: float
    mu_R: float
    A_tilde_min_eig: float
    margin: float
    verdict: Verdict
    message: str = ""
    extras: dict[str, Any] = field(default_factory=dict)


def proposition3_mu_bound(model: ContactModel | PyramidLCP, *, pd_rtol: float = 1e-10) -> FrictionBound:
    """Proposition 3's friction bound (and its uniqueness extension) for a ContactModel or PyramidLCP.

    Reconstructed from the paper (the printed equations are garbled):
    ``~B`` = (44) = ``A`` on ``(Sn, Rn, Rt, Ro)``; ``E_t``, ``E_o`` = (45) (first block column
    ``C_t V_St``, ``C_o V_So``; the rest zero); ``~A = ~B - E_t - E_o`` (46), which matches (27)-(28)
    and the sliding-friction substitution ``c_St = -V_St c_Sn`` of :class:`PyramidLCP`.
    Proposition 3: if ``~B`` is positive definite with smallest eigenvalue ``sigma_min > 0`` and
    ``delta_t``, ``delta_o`` are the spectral norms of ``C_t``, ``C_o``, then
    ``mu_bar = sigma_min / (delta_t + delta_o)`` and ``mu_j in [0, mu_bar)`` for ``j in S`` makes
    ``~A`` positive definite (hence P; with Theorem 1's full-rank hypothesis a solution exists).

    The paper states Proposition 3 for the sliding friction only; Theorem 1(b) (uniqueness)
    needs all friction coefficients small. Following the proof in Appendix A.5 (matrix (50)), the
    same Cauchy-Schwarz estimate gives ``mu_bar_unique`` (see :class:`FrictionBound`).

    A :class:`PyramidLCP` contributes its facet count (``rho``);
    a ContactModel is taken with the cone / square pyramid (``rho = 1``). ``~B`` counts as positive
    definite only if ``sigma_min > pd_rtol * lambda_max(~B)``; otherwise ``sigma_min`` is reported as
    ``<= 0`` and both bounds are 0 (nothing is guaranteed).
    """
    from scipy.linalg import eigh

    from contactmp.solvers.lcp import Verdict  # scipy.optimize: imported when needed

    pd_rtol = check_number("pd_rtol", pd_rtol, positive=True)
    facets = None
    if isinstance(model, ContactModel):
        m = model
    elif isinstance(model, PyramidLCP):
        m, facets = model.model, int(model.facets)
    else:
        raise InputError("model", f"must be a ContactModel or a PyramidLCP, got {type(model).__name__}")
    nc = m.n_c
    if nc == 0:
        raise InputError("model", "has no contacts")
    S = np.asarray(m.sliding, dtype=np.int64)
    R = np.asarray(m.rolling, dtype=np.int64)
    A = m.A
    rows = np.concatenate([S, R, nc + R, 2 * nc + R])
    Bt = A[np.ix_(rows, rows)]
    eig_B = np.linalg.eigvalsh(Bt)
    sigma_min = float(eig_B.min())
    if sigma_min <= pd_rtol * max(float(np.abs(eig_B).max()), 1e-300):
        sigma_min = min(sigma_min, 0.0)  # singular to working precision: not positive definite
    Ct = A[np.ix_(rows, nc + S)]
    Co = A[np.ix_(rows, 2 * nc + S)]
    delta_t = float(np.linalg.norm(Ct, 2)) if S.size else 0.0
    delta_o = float(np.linalg.norm(Co, 2)) if S.size else 0.0
    nS, nR = S.size, R.size
    Gt = Bt[:, nS + nR: nS + 2 * nR]
    Go = Bt[:, nS + 2 * nR:]
    gamma_t = float(np.linalg.norm(Gt, 2)) if nR else 0.0
    gamma_o = float(np.linalg.norm(Go, 2)) if nR else 0.0
    if facets is None or facets == 4:
        rho_t = rho_o = 1.0
    else:
        D = facet_generators(facets)
        rho_t, rho_o = float(np.abs(D[:, 0]).max()), float(np.abs(D[:, 1]).max())

    def ratio(den: float) -> float:
        if sigma_min <= 0:
            return 0.0
        return math.inf if den == 0 else sigma_min / den

    mu_bar = ratio(delta_t + delta_o)
    mu_bar_unique = ratio(delta_t + delta_o + rho_t * gamma_t + rho_o * gamma_o)
    # exact: sym(~A(mu)) = ~B - mu sym(E1), E1 = E_t + E_o at mu = 1
    vT = np.hypot(m.v_t[S], m.v_o[S])
    E1 = np.zeros_like(Bt)
    if nS:
        E1[:, :nS] = Ct * (m.v_t[S] / vT)[None, :] + Co * (m.v_o[S] / vT)[None, :]
    G = 0.5 * (E1 + E1.T)
    if sigma_min > 0 and nS:
        try:
            lam = float(eigh(G, Bt, eigvals_only=True).max())
            mu_pd_exact = 1.0 / lam if lam > 0 else math.inf
        except np.linalg.LinAlgError:
            mu_pd_exact = math.nan
    else:
        mu_pd_exact = math.inf if (sigma_min > 0) else 0.0
    mu = np.asarray(m.mu, dtype=float)
    mu_S = float(mu[S].max()) if nS else 0.0
    mu_R = float(mu[R].max()) if nR else 0.0
    E = np.zeros_like(Bt)
    if nS:
        E[:, :nS] = E1[:, :nS] * mu[S][None, :]
    At = Bt - E
    A_min = float(np.linalg.eigvalsh(0.5 * (At + At.T)).min())
    Js = m.J_sys
    full_rank = bool(np.linalg.matrix_rank(Js) == Js.shape[1])
    margin = sigma_min - mu_S * (delta_t + delta_o) - mu_R * (rho_t * gamma_t + rho_o * gamma_o)
    exists = full_rank and sigma_min > 0 and mu_S < mu_bar
    unique = sigma_min > 0 and margin > 0
    verdict = (Verdict.EXISTENCE_AND_UNIQUENESS if exists and unique else Verdict.UNIQUENESS if unique
               else Verdict.EXISTENCE if exists else Verdict.NOT_GUARANTEED)
    msg = (f"sigma_min(~B) = {sigma_min:.3e}, delta_t = {delta_t:.3e}, delta_o = {delta_o:.3e}: "
           f"Prop. 3 mu_bar = {mu_bar:.3e}; uniqueness bound {mu_bar_unique:.3e}; "
           f"exact PD limit of sym(~A) {mu_pd_exact:.3e}; J_sys {'full' if full_rank else 'deficient'} rank")
    extras = {"B_tilde": Bt, "A_tilde": At, "rows": rows}
    return FrictionBound(sigma_min, delta_t, delta_o, mu_bar, gamma_t, gamma_o, rho_t, rho_o, mu_bar_unique,
                         mu_pd_exact, full_rank, mu_S, mu_R, A_min, margin, verdict, msg, extras)
