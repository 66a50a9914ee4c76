"""Certificates for LCP(q, M): existence, uniqueness up to ``delta``, complete enumeration, and the
matrix classes and friction bound of Trinkle, Pang, Sudarsky and Lo (1995), Theorems 1-4 and
Proposition 3.

LCP(q, M) (the paper's LCP(r, M) with r = q): find ``z >= 0`` with ``w = M z + q >= 0`` and
``z^T w = 0``. Every answer here is a frozen certificate (a proof object, not a solve's
:class:`~contactmp.result.Result`) with a :class:`Verdict`; nothing raises on "cannot decide"
(the verdict is then ``Verdict.UNDECIDED``), and malformed input raises
:class:`~contactmp.errors.InputError` naming the field. A solution is only reported after the
independent check ``||min(z, M z + q)||_inf <= tol`` (:func:`~contactmp.solvers.lcp.problem.lcp_residual`).

Contents
--------
* :func:`lcp_existence_milp` -- the scaled mixed-integer program of Pardalos and Rosen (no a-priori
  bound on ``z``): a verified solution, or a proof that none exists (up to HiGHS's tolerances and
  the norm bound stated in the certificate).
* :func:`lcp_second_solution_milp` -- the same program plus a disjunction: a verified second solution
  ``z2`` with ``||z2 - z1||_inf >= delta``, or a proof that there is none (uniqueness up to delta).
* :func:`enumerate_lcp_solutions` -- all ``2^n`` complementary bases for small ``n`` (batched LU,
  SVD where singular), singular bases analysed (empty / one point / a continuum of solutions).

Impulses and motion. The verdicts above judge the LCP's unknowns ``z`` (the impulses). Given a
motion map ``v = A z + b`` (:class:`~contactmp.reductions.MotionMap`, e.g. a time step's
``v_{k+1}`` from :meth:`LCPReduction.motion_map <contactmp.reductions.LCPReduction.motion_map>`),
:func:`enumerate_lcp_solutions` also judges the motion (``motion_verdict``) and
:func:`lcp_second_solution_milp` separates by motion instead of by ``z``; each answer's
``certifies`` says which of the two it proves.
* :func:`is_p_matrix`, :func:`is_copositive`, :func:`is_strictly_copositive` -- the matrix classes
  of Appendix A (all principal minors > 0; ``x^T M x >= 0`` (``> 0``) on the nonnegative orthant).

Proposition 3's friction bound takes a contact model, so it is a formulation:
:func:`contactmp.formulations.pyramid_lcp.proposition3_mu_bound`. Its verdict is a
:class:`Verdict` too.

The scaled MILP (derivation)
----------------------------
Variables ``y in R^n``, ``alpha in R``, ``b in {0, 1}^n``::

    max alpha  s.t.  0 <= M y + alpha q <= 1 - b,   0 <= y <= b,   0 <= alpha <= 1.      (P)

* (P) is feasible (``y = 0, alpha = 0``) and bounded, so it has an optimum ``alpha*``.
* If ``(y, alpha, b)`` is feasible with ``alpha > 0``, then ``z = y / alpha`` solves the LCP:
  ``z >= 0``; ``w = M z + q = (M y + alpha q) / alpha >= 0``; for each ``i`` either ``b_i = 1`` and
  then ``alpha w_i <= 1 - b_i = 0``, so ``w_i = 0``, or ``b_i = 0`` and then ``y_i <= 0``, so ``z_i = 0``.
* Conversely, if ``z`` solves the LCP, ``alpha(z) = min(1, 1 / max(||z||_inf, ||w||_inf))``,
  ``y = alpha(z) z`` and ``b_i = [z_i > 0]`` are feasible (where ``z_i > 0``, ``w_i = 0``).
  Hence ``alpha* >= alpha(z) > 0``: the LCP is solvable iff ``alpha* > 0``.
* Quantitatively: a dual bound ``alpha_ub >= alpha*`` from branch and bound proves that every
  solution has ``max(||z||_inf, ||w||_inf) >= 1 / alpha_ub`` (no solution at all if ``alpha_ub = 0``).

Before solving, the rows and columns are equilibrated, ``M' = D M E``, ``q' = D q`` (``D``, ``E``
positive diagonal): ``z`` solves LCP(q, M) iff ``E^{-1} z`` solves LCP(q', M'), with
``w' = D w``. The norm bound is stated back in the original units (``z_bound``, ``w_bound``).

HiGHS solves (P) in floating point. Its feasibility tolerances are tightened to ``feas_tol``
(default 1e-9; scipy's ``milp`` forwards these HiGHS options unchecked, with a warning silenced
here). Even so a positive ``alpha`` may be an artefact of the tolerances, so ``y / alpha`` is never
trusted: the support pattern ``b`` goes to a check instead, the LP ``{z_B >= 0 : M_BB z_B = -q_B,
M_NB z_B + q_N >= 0}`` (``B = {i : b_i = 1}``, ``z_N = 0``), which contains exactly the solutions
the pattern allows. A point of it is polished on its support by a linear solve and verified with
the residual. If the LP is infeasible, the pattern is cut off by a no-good cut and (P) is solved
again; after ``spurious_before_floor`` such patterns, ``alpha >= 2 alpha_spurious`` is imposed (a
"floor"), since below that level the tolerances admit points that are no solutions. A "no"
verdict then covers the norm bound ``1 / floor`` only, and says so (``z_bound``, ``w_bound``).
"""
from __future__ import annotations

import enum
import itertools
import math
import time
import warnings
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from contactmp.errors import InputError, check_number
from contactmp.progress import quiet_stdout
from contactmp.solvers.lcp.problem import lcp_residual, polish_lcp, validate_lcp
from contactmp.validate import validate_start

__all__ = [
    "Verdict", "MilpCertificate", "lcp_existence_milp", "lcp_second_solution_milp",
    "Continuum", "Enumeration", "enumerate_lcp_solutions",
    "MatrixCertificate", "is_p_matrix", "is_copositive", "is_strictly_copositive",
]


class Verdict(str, enum.Enum):
    """What a certificate proved; ``str()`` (and JSON) give the value, e.g. ``"unique"``."""

    SOLUTION = "solution"  #: existence: a verified solution
    NO_SOLUTION = "no_solution"  #: existence (MILP) or enumeration: proven none
    SECOND_SOLUTION = "second_solution"  #: a verified second solution at distance >= delta
    UNIQUE_UP_TO_DELTA = "unique_up_to_delta"  #: proven: no second solution at distance >= delta
    UNIQUE = "unique"  #: enumeration: exactly one solution
    FINITE = "finite"  #: enumeration: two or more isolated solutions
    CONTINUUM = "continuum"  #: enumeration: infinitely many solutions
    P = "P"
    NOT_P = "not_P"
    COPOSITIVE = "copositive"
    NOT_COPOSITIVE = "not_copositive"
    STRICTLY_COPOSITIVE = "strictly_copositive"
    NOT_STRICTLY_COPOSITIVE = "not_strictly_copositive"
    EXISTENCE_AND_UNIQUENESS = "existence_and_uniqueness"  #: friction bound: Theorem 1 (a) and (b)
    UNIQUENESS = "uniqueness"  #: friction bound: at most one solution
    EXISTENCE = "existence"  #: friction bound: Theorem 1(a) only
    NOT_GUARANTEED = "not_guaranteed"  #: friction bound: nothing guaranteed
    UNDECIDED = "undecided"  #: could not decide (time, size or a numerical edge)

    def __str__(self) -> str:
        return self.value

#: combinations per batch in the principal-submatrix loops (bounds memory: batch * k^2 floats)
_BATCH = 16384


# =================================================================================================
# argument checks
# =================================================================================================
def _count(name: str, value: Any, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InputError(name, f"must be an int >= {minimum}, got {value!r}")
    return int(value)


def _matrix_test_args(M: Any, max_n: Any, tol: Any) -> tuple[np.ndarray, int, float]:
    """The checked ``(M, max_n, tol)`` of a matrix-class test: ``M`` a finite nonempty square matrix."""
    try:
        A = np.ascontiguousarray(M, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError("M", f"cannot be read as a float matrix ({exc})") from None
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise InputError("M", f"must be a nonempty square 2-D matrix, got shape {A.shape}")
    if not np.isfinite(A).all():
        raise InputError("M", "contains NaN or inf")
    return A, _count("max_n", max_n, 1), check_number("tol", tol, positive=True)


def _combinations(n: int, k: int) -> Iterator[np.ndarray]:
    """All ``k``-subsets of ``range(n)`` in lexicographic order, as int arrays of at most
    :data:`_BATCH` rows."""
    it = itertools.combinations(range(n), k)
    while True:
        chunk = list(itertools.islice(it, _BATCH))
        if not chunk:
            return
        yield np.array(chunk, dtype=np.int64).reshape(len(chunk), k)


def _principal(M: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The stack of principal submatrices ``M[J, J]`` for the rows ``J`` of ``idx``."""
    return M[idx[:, :, None], idx[:, None, :]]


# =================================================================================================
# 1-2. MILP certificates
# =================================================================================================
@dataclass(frozen=True)
class MilpCertificate:
    """The answer of :func:`lcp_existence_milp` or :func:`lcp_second_solution_milp`.

    Attributes
    ----------
    verdict : Verdict
        Existence: ``SOLUTION`` (``z`` verified), ``NO_SOLUTION`` (proof, see ``z_bound``) or
        ``UNDECIDED``. Second solution: ``SECOND_SOLUTION`` (``z`` is a verified ``z2`` with
        ``||z2 - z1||_inf >= delta``), ``UNIQUE_UP_TO_DELTA`` (proof) or ``UNDECIDED``.
    z : ndarray or None
        The verified solution (``None`` unless one was found).
    residual : float
        ``||min(z, M z + q)||_inf`` of ``z`` (``inf`` if none).
    tol : float
        The residual tolerance ``z`` was verified against.
    alpha : float
        Best ``alpha`` of the last MILP solve (scaled formulation (P)).
    alpha_upper : float
        HiGHS's dual bound on ``alpha*`` in the last solve (``>= alpha*``).
    z_bound, w_bound : float
        For the "no" verdicts: no solution (second solution) ``z`` has both ``||z||_inf < z_bound``
        and ``||M z + q||_inf < w_bound`` (``inf``: none at all), up to HiGHS's tolerances
        (``nan`` for the other verdicts).
    distance : float
        ``||z - z1||_inf`` for a second solution (``nan`` otherwise).
    delta : float
        The separation asked for (``nan`` for existence).
    rounds : int
        MILP solves (1 + number of no-good cuts that followed a spurious pattern).
    cuts : int
        Support patterns proven empty by the pattern LP and cut off.
    nodes : int
        Branch-and-bound nodes, summed over rounds.
    alpha_floor : float
        The lower bound imposed on ``alpha`` after ``spurious_before_floor`` spurious patterns
        (0 if none): a "no" verdict then covers the norm bound ``1 / alpha_floor`` only.
    time_s : float
    message : str
        What was proven and how.
    separation : str
        What the second-solution search separates: ``"impulses"`` (``||z2 - z1||_inf >= delta``),
        ``"motion (NAME)"`` (``||A (z2 - z1)||_inf >= delta`` for a motion map ``v = A z + b``, e.g.
        a time step's ``v_{k+1}``), or ``"existence"`` for the existence MILP.
    """

    verdict: Verdict
    z: np.ndarray | None
    residual: float
    tol: float
    alpha: float
    alpha_upper: float
    z_bound: float
    w_bound: float
    distance: float
    delta: float
    rounds: int
    cuts: int
    nodes: int
    alpha_floor: float
    time_s: float
    message: str
    separation: str = "impulses"

    @property
    def decided(self) -> bool:
        """True unless the verdict is ``UNDECIDED``."""
        return self.verdict is not Verdict.UNDECIDED

    @property
    def certifies(self) -> str:
        """What a decided second-solution verdict is about: ``UNIQUE_UP_TO_DELTA`` certifies unique
        impulses (``"impulses"``: then every affine motion ``A z + b`` is unique to
        ``||A||_inf delta`` too) or unique motion (``"motion"``: the impulses may still be many);
        ``SECOND_SOLUTION`` certifies a second impulse set (whose motion may be the same) or a
        second motion. ``"existence"`` for the existence MILP, ``"nothing"`` when undecided."""
        if self.verdict is Verdict.UNDECIDED:
            return "nothing"
        return "motion" if self.separation.startswith("motion") else self.separation


@dataclass
class _Scaled:
    """``M' = D M E``, ``q' = D q`` (row then column equilibration; ``D = E = I`` without scaling)."""

    M: np.ndarray
    q: np.ndarray
    Ms: np.ndarray
    qs: np.ndarray
    D: np.ndarray
    E: np.ndarray

    @classmethod
    def build(cls, M: np.ndarray, q: np.ndarray, scale: bool) -> "_Scaled":
        n = q.shape[0]
        D = np.ones(n)
        E = np.ones(n)
        if scale:
            r = np.maximum(np.abs(M).max(axis=1), np.abs(q))
            D = np.where(r > 0, 1.0 / np.where(r > 0, r, 1.0), 1.0)
            c = np.abs(D[:, None] * M).max(axis=0)
            E = np.where(c > 0, 1.0 / np.where(c > 0, c, 1.0), 1.0)
        return cls(M, q, D[:, None] * M * E[None, :], D * q, D, E)

    def bounds(self, alpha_ub: float) -> tuple[float, float]:
        """``(z_bound, w_bound)`` implied by ``alpha* <= alpha_ub`` (see the module docstring)."""
        if alpha_ub <= 0:
            return math.inf, math.inf
        if alpha_ub >= 1:
            return 0.0, 0.0
        return float(self.E.min() / alpha_ub), float(1.0 / (self.D.max() * alpha_ub))


def _milp_base(s: _Scaled, extra_bin: int) -> tuple[np.ndarray, list[LinearConstraint], np.ndarray, Bounds]:
    """Objective, constraints, integrality and bounds of (P) over ``x = (y, alpha, b, extra)``."""
    n = s.q.shape[0]
    nv = 2 * n + 1 + extra_bin
    c = np.zeros(nv)
    c[n] = -1.0  # maximize alpha
    I = np.eye(n)
    pad = np.zeros((n, extra_bin))
    Mq = np.hstack([s.Ms, s.qs[:, None]])
    cons = [
        LinearConstraint(np.hstack([Mq, I, pad]), -np.inf, 1.0),  # M y + alpha q + b <= 1
        LinearConstraint(np.hstack([Mq, np.zeros((n, n)), pad]), 0.0, np.inf),  # M y + alpha q >= 0
        LinearConstraint(np.hstack([I, np.zeros((n, 1)), -I, pad]), -np.inf, 0.0),  # y <= b
    ]
    integrality = np.concatenate([np.zeros(n + 1), np.ones(n + extra_bin)])
    bounds = Bounds(np.zeros(nv), np.ones(nv))
    return c, cons, integrality, bounds


def _pattern_lp(s: _Scaled, basis: np.ndarray,
                side: tuple[np.ndarray, float] | None) -> tuple[str, np.ndarray | None]:
    """The solutions with support pattern ``basis`` (``w_B = 0``, ``z_N = 0``), in scaled units.

    ``side = (a, lo)`` adds the row ``a^T z' >= lo`` (``a = +-e_i`` for a component of ``z``, ``+-E A_i``
    for one of the motion ``A z + b``). Returns ``("feasible", z')``, ``("infeasible", None)`` or
    ``("unknown", None)``.
    """
    n = s.q.shape[0]
    B = np.flatnonzero(basis)
    N = np.flatnonzero(~basis)
    k = B.size
    if k == 0:
        ok = bool((s.qs >= -1e-12).all())
        if side is not None:
            ok = ok and (0.0 - side[1] >= -1e-12)
        return ("feasible", np.zeros(n)) if ok else ("infeasible", None)
    A_ub = [-s.Ms[np.ix_(N, B)]]
    b_ub = [s.qs[N]]
    if side is not None:
        a, lo = side
        if not np.any(a[B]):  # the row sees only z_N = 0
            if 0.0 - lo < -1e-12:
                return "infeasible", None
        else:
            A_ub.append(-a[B][None, :])
            b_ub.append(np.array([-lo]))
    res = linprog(
        np.zeros(k), A_ub=np.vstack(A_ub), b_ub=np.concatenate(b_ub),
        A_eq=s.Ms[np.ix_(B, B)], b_eq=-s.qs[B], bounds=(0, None), method="highs",
    )
    if res.status == 2:
        return "infeasible", None
    if res.status != 0 or res.x is None:
        return "unknown", None
    z = np.zeros(n)
    z[B] = np.maximum(res.x, 0.0)
    return "feasible", z


def _check_pattern(M: np.ndarray, q: np.ndarray, s: _Scaled, basis: np.ndarray,
                   sides: list[tuple[np.ndarray, float] | None], z_raw: np.ndarray, tol: float, z1: np.ndarray | None,
                   delta: float, A: np.ndarray | None = None) -> tuple[np.ndarray | None, float, str]:
    """Look for a verified solution with support pattern ``basis`` (on one of ``sides``).

    Tries ``z_raw = E y / alpha`` (and its support polish), then the pattern LP for each side in
    turn; with ``z1``, a point counts only at distance ``||z - z1||_inf >= delta`` (``||A (z - z1)||_inf``
    with a motion map ``A``). Returns ``(z, residual, "found")``, or ``(None, best residual, status)`` with status
    ``"infeasible"`` when every LP proved its side empty (the pattern may be cut off).
    """
    best = math.inf

    def accept(z: np.ndarray) -> np.ndarray | None:
        nonlocal best
        for cand in (z, polish_lcp(M, q, z)):
            if cand is None or not np.isfinite(cand).all():
                continue
            cand = np.maximum(cand, 0.0)
            r = lcp_residual(M, q, cand)
            best = min(best, r)
            if r <= tol and (z1 is None or _separation(cand, z1, A) >= delta * (1 - 1e-9)):
                return cand
        return None

    if np.isfinite(z_raw).all():
        z = accept(z_raw)
        if z is not None:
            return z, best, "found"
    if z1 is not None:  # is the pattern empty altogether? (one LP instead of 2n)
        status, _ = _pattern_lp(s, basis, None)
        if status == "infeasible":
            return None, best, "infeasible"
    overall = "infeasible"
    for side in sides:
        status, zlp = _pattern_lp(s, basis, side)
        if status == "feasible":
            z = accept(s.E * zlp)
            if z is not None:
                return z, best, "found"
        if status != "infeasible":
            overall = "unverified"
    return None, best, overall


def _separation(z: np.ndarray, z1: np.ndarray, A: np.ndarray | None) -> float:
    """``||z - z1||_inf`` (impulses), or ``||A (z - z1)||_inf`` (motion) with a motion map ``A``."""
    d = z - z1
    return float(np.abs(d if A is None else A @ d).max(initial=0.0))


def _no_good(x_bin: np.ndarray, nv: int, offset: int) -> LinearConstraint:
    """``sum_{x_j = 1} (1 - x_j) + sum_{x_j = 0} x_j >= 1`` over the binaries starting at ``offset``."""
    row = np.zeros(nv)
    ones = x_bin > 0.5
    row[offset: offset + x_bin.size] = np.where(ones, -1.0, 1.0)
    return LinearConstraint(row[None, :], 1.0 - ones.sum(), np.inf)


def _milp_certificate(M: Any, q: Any, z1: Any | None, delta: float | None, *, time_limit: float, tol: float,
                      alpha_tol: float, scale: bool, max_rounds: int, mip_rel_gap: float,
                      spurious_before_floor: int, feas_tol: float, motion: Any = None) -> MilpCertificate:
    t0 = time.perf_counter()
    M, q = validate_lcp(M, q)
    time_limit = check_number("time_limit", time_limit, positive=True, allow_inf=True)
    tol = check_number("tol", tol, positive=True)
    alpha_tol = check_number("alpha_tol", alpha_tol, positive=True)
    max_rounds = _count("max_rounds", max_rounds, 1)
    spurious_before_floor = _count("spurious_before_floor", spurious_before_floor, 1)
    feas_tol = check_number("feas_tol", feas_tol, positive=True)
    if isinstance(mip_rel_gap, bool) or not isinstance(mip_rel_gap, (int, float)) or not 0 <= mip_rel_gap < 1:
        raise InputError("mip_rel_gap", f"must be a number in [0, 1), got {mip_rel_gap!r}")
    n = q.shape[0]
    s = _Scaled.build(M, q, bool(scale))
    second = z1 is not None
    mm = None
    if motion is not None:
        from contactmp.reductions import MotionMap

        mm = MotionMap.of(motion, n)
    m = n if mm is None else mm.n_v  # components of the separation (z, or the motion A z + b)
    extra = 2 * m if second else 0
    c, cons, integrality, bounds = _milp_base(s, extra)
    nv = c.size
    side_rows: list[tuple[np.ndarray, float]] = []  # the 2 m sides a^T z' >= lo, scaled units
    if second and mm is None:
        z1s = z1 / s.E  # scaled units
        d = float(delta) / s.E
        kp = z1s + d  # big-M of the "+" branch: y_i - alpha (z1_i + d_i) >= -kp_i (1 - sp_i)
        km = 1.0 + np.maximum(0.0, d - z1s)  # of the "-" branch: alpha (z1_i - d_i) - y_i >= -km_i (1 - sm_i)
        I = np.eye(n)
        A_plus = np.hstack([I, -(z1s + d)[:, None], np.zeros((n, n)), -np.diag(kp), np.zeros((n, n))])
        A_minus = np.hstack([-I, (z1s - d)[:, None], np.zeros((n, n)), np.zeros((n, n)), -np.diag(km)])
        pick = np.concatenate([np.zeros(2 * n + 1), np.ones(2 * n)])
        cons += [
            LinearConstraint(A_plus, -kp, np.inf),
            LinearConstraint(A_minus, -km, np.inf),
            LinearConstraint(pick[None, :], 1.0, 1.0),  # exactly one component and sign
        ]
        ub = bounds.ub.copy()
        ub[2 * n + 1 + n:][z1s < d] = 0.0  # the "-" branch needs z1_i >= delta
        bounds = Bounds(bounds.lb, ub)
        side_rows = [(sg * np.eye(n)[i], sg * (z1s[i] + sg * d[i])) for sg in (1.0, -1.0) for i in range(n)]
    elif second:
        # motion v = A z + b = (A E y + alpha b) / alpha: v_i >= v1_i + delta reads
        # (A E)_i y + alpha (b_i - v1_i - delta) >= 0, and v_i <= v1_i - delta the same with signs
        # flipped; big-M = minus the least value of the left side over 0 <= y, alpha <= 1
        AE = mm.A * s.E[None, :]
        v1 = mm(z1)
        dl = float(delta)
        cp = mm.b - v1 - dl  # alpha coefficient, "+" branch
        cm = v1 - dl - mm.b  # alpha coefficient, "-" branch
        kp = -(np.minimum(AE, 0.0).sum(axis=1) + np.minimum(cp, 0.0))
        km = -(np.minimum(-AE, 0.0).sum(axis=1) + np.minimum(cm, 0.0))
        Z = np.zeros((m, n))
        Zm = np.zeros((m, m))
        A_plus = np.hstack([AE, cp[:, None], Z, -np.diag(kp), Zm])
        A_minus = np.hstack([-AE, cm[:, None], Z, Zm, -np.diag(km)])
        pick = np.concatenate([np.zeros(2 * n + 1), np.ones(2 * m)])
        cons += [
            LinearConstraint(A_plus, -kp, np.inf),
            LinearConstraint(A_minus, -km, np.inf),
            LinearConstraint(pick[None, :], 1.0, 1.0),  # exactly one motion component and sign
        ]
        side_rows = [(sg * AE[i], sg * (v1[i] + sg * dl - mm.b[i])) for sg in (1.0, -1.0) for i in range(m)]
    cuts: list[LinearConstraint] = []
    rounds = nodes = 0
    suspect = False
    alpha = alpha_ub = math.nan
    floor = 0.0  # lower bound imposed on alpha after spurious patterns (see below)
    spurious_alpha = 0.0
    last_res = math.inf
    yes, no = ((Verdict.SECOND_SOLUTION, Verdict.UNIQUE_UP_TO_DELTA) if second
               else (Verdict.SOLUTION, Verdict.NO_SOLUTION))
    dlt = float(delta) if second else math.nan
    A_sep = None if mm is None else mm.A
    separation = "existence" if not second else ("impulses" if mm is None else f"motion ({mm.name})")
    what = ("solution" if not second else "second solution at distance >= delta" if mm is None
            else f"second solution whose motion {mm.name} differs by >= delta")

    def done(verdict: Verdict, z: np.ndarray | None, res: float, msg: str,
             alpha_bound: float | None = None) -> MilpCertificate:
        dist = _separation(z, z1, A_sep) if (second and z is not None) else math.nan
        zb, wb = s.bounds(alpha_bound) if alpha_bound is not None else (math.nan, math.nan)
        return MilpCertificate(verdict, z, res, tol, alpha, alpha_ub, zb, wb, dist, dlt, rounds,
                               len(cuts), nodes, floor, time.perf_counter() - t0, msg, separation)

    def proof(alpha_bound: float, how: str) -> MilpCertificate:
        if suspect:
            return done(Verdict.UNDECIDED, None, last_res, f"{how}, but a cut-off pattern had an LP point that "
                        "failed the residual check", alpha_bound)
        zb, wb = s.bounds(alpha_bound)
        bound = "at all" if math.isinf(zb) else f"with ||z||_inf < {zb:.3e} and ||Mz+q||_inf < {wb:.3e}"
        cut_msg = f"; {len(cuts)} spurious support patterns proven empty by LP and cut off" if cuts else ""
        return done(no, None, last_res, f"{how}: no {what} {bound}{cut_msg}", alpha_bound)

    while rounds < max_rounds:
        remaining = time_limit - (time.perf_counter() - t0)
        if remaining <= 0:
            return done(Verdict.UNDECIDED, None, last_res, "time limit reached before (P) was settled")
        opts: dict[str, Any] = {"presolve": True, "mip_rel_gap": float(mip_rel_gap),
                                "primal_feasibility_tolerance": feas_tol,
                                "mip_feasibility_tolerance": feas_tol}
        if math.isfinite(remaining):
            opts["time_limit"] = float(remaining)
        lb = bounds.lb.copy()
        lb[n] = floor
        with warnings.catch_warnings():  # milp warns that it forwards the two tolerances unchecked
            warnings.filterwarnings("ignore", message="Unrecognized options", category=RuntimeWarning)
            with quiet_stdout():  # HiGHS prints MIP debug lines to fd 1 on some problems
                res = milp(c, integrality=integrality, bounds=Bounds(lb, bounds.ub), constraints=cons + cuts,
                           options=opts)
        rounds += 1
        nodes += int(getattr(res, "mip_node_count", 0) or 0)
        dual = getattr(res, "mip_dual_bound", None)
        alpha_ub = -float(dual) + 0.0 if dual is not None and np.isfinite(dual) else math.inf
        alpha = -float(res.fun) + 0.0 if res.x is not None else 0.0
        if res.status == 2:  # infeasible: the floor, or every pattern cut off
            alpha_ub = floor
            how = (f"(P) with alpha >= {floor:.2e} is infeasible" if floor > 0
                   else f"all {len(cuts)} support patterns were proven empty by their pattern LPs")
            return proof(floor, how)
        if res.x is not None and alpha > 0.0:
            x = res.x
            y, b = x[:n], x[n + 1: 2 * n + 1] > 0.5
            sides: list[tuple[np.ndarray, float] | None] = [None]
            if second:
                # the component and sign (P) chose first, then every other one: the pattern b is
                # cut off only when no side of it holds a solution at distance >= delta
                j0 = int(np.argmax(x[2 * n + 1:]))
                sides = [side_rows[j] for j in [j0] + [j for j in range(2 * m) if j != j0]]
            z, r, status = _check_pattern(M, q, s, b, sides, s.E * (y / alpha), tol,
                                          z1 if second else None, dlt, A_sep)
            last_res = min(last_res, r)
            if z is not None:
                return done(yes, z, r, f"(P) gave alpha = {alpha:.3e}; the solution from its support "
                            f"pattern (pattern LP, polished) has residual {r:.2e} <= tol {tol:.1e}")
            if status != "infeasible":
                suspect = True  # a pattern with (numerically) a solution we could not verify
            if res.status == 0 and floor == 0.0 and alpha_ub <= alpha_tol:
                # a point at the noise level of the tolerances; the dual bound already decides
                return proof(max(alpha_ub, 0.0), f"(P) optimal with dual bound alpha* <= {max(alpha_ub, 0.0):.2e}")
            cuts.append(_no_good(x[n + 1: 2 * n + 1], nv, n + 1))
            spurious_alpha = max(spurious_alpha, alpha)
            if len(cuts) >= spurious_before_floor:
                # HiGHS's tolerances admit points with alpha up to about this level that are no
                # solutions; only alpha above it is informative. Raising the floor trades the
                # proof "no solution at all" for "no solution within the norm bound 1 / floor".
                floor = 2.0 * spurious_alpha
                if floor >= 1.0:
                    return done(Verdict.UNDECIDED, None, last_res, f"spurious MILP points up to alpha = "
                                f"{spurious_alpha:.2e}: the tolerances leave nothing to prove")
            continue
        if res.status == 0 and floor == 0.0 and alpha_ub <= alpha_tol:
            return proof(max(alpha_ub, 0.0), f"(P) optimal with dual bound alpha* <= {max(alpha_ub, 0.0):.2e}")
        why = {0: f"(P) optimal but alpha_upper {alpha_ub:.2e} > alpha_tol {alpha_tol:.1e}",
               1: "time or node limit before (P) was settled"}.get(res.status, f"HiGHS: {res.message}")
        return done(Verdict.UNDECIDED, None, last_res, why)
    return done(Verdict.UNDECIDED, None, last_res, f"{max_rounds} rounds of no-good cuts did not settle (P)")


def lcp_existence_milp(M: Any, q: Any, *, time_limit: float = 60.0, tol: float = 1e-8, alpha_tol: float = 1e-6,
                       scale: bool = True, max_rounds: int = 50, mip_rel_gap: float = 0.5,
                       spurious_before_floor: int = 2, feas_tol: float = 1e-9) -> MilpCertificate:
    """Decide whether LCP(q, M) has a solution with the scaled MILP (P) of Pardalos and Rosen.

    ``max alpha s.t. 0 <= M y + alpha q <= 1 - b, 0 <= y <= b, b in {0,1}^n, 0 <= alpha <= 1``
    (after equilibration ``D M E``, ``D q``; see the module docstring for the derivation). No bound
    on ``z`` is assumed: ``alpha* > 0`` iff a solution exists, and then ``z = E y / alpha``.

    Verdicts: ``"solution"`` -- ``z`` from the support pattern of an optimal ``b`` (pattern LP,
    then a linear solve on its support) verified with ``||min(z, Mz+q)||_inf <= tol``;
    ``"no_solution"`` -- HiGHS proved ``alpha* <= alpha_upper <= alpha_tol`` (or, with a floor,
    that (P) with ``alpha >= alpha_floor`` is infeasible), hence no solution with
    ``||z||_inf < z_bound`` and ``||Mz+q||_inf < w_bound`` (both ``inf`` when ``alpha_upper = 0``:
    no solution at all). This is a floating-point proof, valid up to HiGHS's tolerances
    (``feas_tol`` for primal and integer feasibility, its default absolute gap 1e-6, which is why
    ``alpha_tol`` should not go below 1e-6); ``"undecided"`` -- time limit, a dual bound above
    ``alpha_tol``, or a pattern whose LP point failed verification.

    ``mip_rel_gap`` < 1 lets HiGHS stop at the first good ``alpha > 0`` (a proof of existence needs
    no optimality) while a zero optimum is still proven to absolute gap. ``max_rounds`` bounds the
    re-solves after spurious patterns are cut off.
    """
    return _milp_certificate(M, q, None, None, time_limit=time_limit, tol=tol, alpha_tol=alpha_tol,
                             scale=scale, max_rounds=max_rounds, mip_rel_gap=mip_rel_gap,
                             spurious_before_floor=spurious_before_floor, feas_tol=feas_tol)


def lcp_second_solution_milp(M: Any, q: Any, z1: Any, delta: float, *, time_limit: float = 60.0, tol: float = 1e-8,
                             alpha_tol: float = 1e-6, scale: bool = True, max_rounds: int = 50,
                             mip_rel_gap: float = 0.5, spurious_before_floor: int = 2,
                             feas_tol: float = 1e-9, motion: Any = None) -> MilpCertificate:
    """Search a solution ``z2`` of LCP(q, M) with ``||z2 - z1||_inf >= delta`` (uniqueness up to delta),
    or, with ``motion`` (a :class:`~contactmp.reductions.MotionMap` or a pair ``(A, b)``: the motion
    ``v = A z + b``, e.g. a time step's ``v_{k+1}``), one whose motion differs,
    ``||A (z2 - z1)||_inf >= delta`` (``delta`` then in the units of ``v``): uniqueness of the motion
    up to delta, which a statically indeterminate contact set (many ``z``, one ``v``) has while its
    impulses are not unique. ``certifies`` on the answer says which.

    With a motion map the disjunction runs over the ``n_v`` rows of ``A`` instead of the ``n``
    components of ``z``: ``v_i >= v1_i + delta`` is ``(A E)_i y + alpha (b_i - v1_i - delta) >= 0`` in
    the scaled variables (``z = E y / alpha``), with the big-M constant minus the least value of the
    left side over ``0 <= y, alpha <= 1``; likewise ``v_i <= v1_i - delta``.

    (P) plus, per component ``i``, binaries ``s+_i``, ``s-_i`` with ``sum(s+) + sum(s-) = 1``::

        y_i - alpha (z1_i + delta) >= -(z1_i + delta) (1 - s+_i)              (z2_i >= z1_i + delta)
        alpha (z1_i - delta) - y_i >= -(1 + max(0, delta - z1_i)) (1 - s-_i)  (z2_i <= z1_i - delta)

    (in scaled units ``z1 / E``, ``delta / E``). The big-M constants are the exact minima of the
    left sides over ``0 <= y, alpha <= 1``, so an inactive row never cuts. With ``alpha > 0``, the
    active row is ``|y_i - alpha z1_i| >= alpha delta``, i.e. ``|z2_i - z1_i| >= delta`` for
    ``z2 = y / alpha``; and any such solution ``z2`` is feasible with ``alpha(z2) > 0`` as in (P).

    Verdicts: ``"second_solution"`` (``z2`` verified: residual ``<= tol`` and distance
    ``>= delta (1 - 1e-9)``), ``"unique_up_to_delta"`` (``alpha* <= alpha_upper <= alpha_tol``, or
    infeasible above the floor: every solution lies within ``delta`` of ``z1`` in the inf-norm,
    unless its ``||z||_inf >= z_bound`` or ``||Mz+q||_inf >= w_bound``), ``"undecided"``. ``z1``
    need not be a solution itself. A spurious pattern is cut off only after the pattern LP with
    each of the ``2n`` sides ``z_i >= z1_i + delta``, ``z_i <= z1_i - delta`` proved empty.
    """
    M, q = validate_lcp(M, q)
    if z1 is None:
        raise InputError("z1", "is required (the first solution)")
    z1a = validate_start(z1, q.shape[0], "z1")
    if (z1a < 0).any():
        raise InputError("z1", "must be nonnegative (an LCP point)")
    delta = check_number("delta", delta, positive=True)
    return _milp_certificate(M, q, z1a, delta, time_limit=time_limit, tol=tol, alpha_tol=alpha_tol,
                             scale=scale, max_rounds=max_rounds, mip_rel_gap=mip_rel_gap,
                             spurious_before_floor=spurious_before_floor, feas_tol=feas_tol, motion=motion)


# =================================================================================================
# 3. complete enumeration of complementary bases
# =================================================================================================
@dataclass(frozen=True)
class Continuum:
    """A piece of the solution set with positive dimension, found on a singular basis.

    The piece is ``{point + directions @ t} ∩ {z >= 0, M z + q >= 0}`` with ``w_B = 0`` and
    ``z_N = 0`` (``B = basis``): every point of it is a solution. ``directions`` (``n x r``)
    spans the null space of ``M_BB`` (embedded in ``R^n``). For ``r = 1``, ``t_range`` is the
    interval of ``t`` (``t = 0`` at ``point``; a ray is oriented so that ``t_range[1] = inf``); for
    ``r >= 2`` it is ``None``.
    """

    basis: tuple[int, ...]
    point: np.ndarray
    directions: np.ndarray
    t_range: tuple[float, float] | None
    bounded: bool


@dataclass(frozen=True)
class Enumeration:
    """The certificate of :func:`enumerate_lcp_solutions`: the whole solution set.

    Attributes
    ----------
    verdict : Verdict
        ``NO_SOLUTION``, ``UNIQUE``, ``FINITE`` (two or more isolated solutions), ``CONTINUUM``
        (some singular basis carries a segment, ray or polytope of solutions) or ``UNDECIDED``
        (``n > max_n``: nothing enumerated).
    solutions : ndarray (k, n)
        Distinct verified solutions: every nonsingular basis's solution and every one-point piece of
        a singular basis (with a continuum these are only representatives of the infinite set).
    bases : list of tuple
        For each solution, the first basis ``B`` (``w_B = 0``, ``z_N = 0``) that produced it.
    residuals : ndarray (k,)
        ``||min(z, M z + q)||_inf`` of each solution.
    continua : list of Continuum
    n, n_bases, n_singular, n_singular_consistent, n_lp : int
        Problem size, bases examined (``2^n``), singular ``M_BB``, singular ones with
        ``-q_B`` in the range of ``M_BB``, LPs solved for null spaces of dimension >= 2.
    n_rejected : int
        Bases whose point passed the feasibility screen but failed the residual check (a warning
        that the verdict sits on a numerical edge; ``flags`` says so).
    flags : list of str
    tol, dedup_tol, time_s : float
    message : str
    motion_verdict : Verdict or None
        The same solution set judged by its motion ``v = A z + b`` (with a motion map; None
        without): ``NO_SOLUTION``, ``UNIQUE`` (every solution, continua included, has one motion),
        ``FINITE``, ``CONTINUUM`` (some continuum piece moves ``v`` by more than ``tol_motion``) or
        ``UNDECIDED``. ``verdict`` judges the impulses ``z``.
    motions : ndarray (k_v, n_v) or None
        The distinct motions of ``solutions`` and of one point of each continuum piece
        (leader clustering, absolute ``tol_motion``).
    tol_motion : float or None
        The motions' tolerance (units of ``v``; default
        :meth:`MotionMap.tolerance <contactmp.reductions.MotionMap.tolerance>` ``(tol, V)``, ``tol``
        being the absolute residual tolerance of every solution).
    motion_name : str or None
        What the motion is (the map's name).
    """

    verdict: Verdict
    solutions: np.ndarray
    bases: list[tuple[int, ...]]
    residuals: np.ndarray
    continua: list[Continuum]
    n: int
    n_bases: int
    n_singular: int
    n_singular_consistent: int
    n_lp: int
    n_rejected: int
    flags: list[str]
    tol: float
    dedup_tol: float
    time_s: float
    message: str
    motion_verdict: Verdict | None = None
    motions: np.ndarray | None = None
    tol_motion: float | None = None
    motion_name: str | None = None

    @property
    def certifies(self) -> str:
        """``"impulses"`` (``verdict`` only) or ``"impulses and motion"`` (``motion_verdict`` too)."""
        return "impulses" if self.motion_verdict is None else "impulses and motion"

    @property
    def motion_count(self) -> float | None:
        """Number of distinct motions (``inf`` when a continuum moves them, ``nan`` if undecided,
        None without a motion map)."""
        if self.motion_verdict is None:
            return None
        if self.motion_verdict is Verdict.UNDECIDED:
            return math.nan
        return math.inf if self.motion_verdict is Verdict.CONTINUUM else float(len(self.motions))

    @property
    def count(self) -> float:
        """Number of distinct solutions (``inf`` with a continuum, ``nan`` if undecided)."""
        if self.verdict is Verdict.UNDECIDED:
            return math.nan
        return math.inf if self.continua else float(len(self.solutions))


class _Collector:
    """Verified solutions with deduplication (``||z - s||_inf <= dedup_tol (1 + max(|z|, |s|))``)."""

    def __init__(self, M: np.ndarray, q: np.ndarray, tol: float, dedup_tol: float):
        self.M, self.q, self.tol, self.dedup_tol = M, q, tol, dedup_tol
        self.sols: list[np.ndarray] = []
        self.bases: list[tuple[int, ...]] = []
        self.res: list[float] = []
        self.rejected = 0

    def verify(self, z: np.ndarray) -> tuple[np.ndarray, float] | None:
        """``(max(z, 0), residual)`` if the residual is ``<= tol``; else count a rejection."""
        z = np.maximum(z, 0.0)
        r = lcp_residual(self.M, self.q, z)
        if not r <= self.tol:
            self.rejected += 1
            return None
        return z, r

    def add(self, z: np.ndarray, basis: tuple[int, ...]) -> np.ndarray | None:
        """Verify ``z`` and keep it unless a kept solution is within the dedup tolerance."""
        ok = self.verify(z)
        if ok is None:
            return None
        z, r = ok
        if self.sols:
            S = np.asarray(self.sols)
            scale = 1.0 + np.maximum(np.abs(S).max(axis=1), np.abs(z).max())
            if (np.abs(S - z).max(axis=1) <= self.dedup_tol * scale).any():
                return z
        self.sols.append(z)
        self.bases.append(basis)
        self.res.append(r)
        return z


def _solve_singular(
    M: np.ndarray, q: np.ndarray, B: np.ndarray, zB: np.ndarray, null: np.ndarray, ftol: float,
    ttol: float,
) -> tuple[str, np.ndarray | None, int]:
    """The polyhedron ``{t : zB + null t >= 0, M_NB (zB + null t) + q_N >= 0}`` of a singular basis
    with a null space of dimension ``r >= 2``, by LPs: one for feasibility, then the minimum and
    maximum of each ``t_j`` (a range above ``ttol``, or an unbounded LP, means a continuum).

    Returns ``(kind, t0, lps)``: ``kind`` in ``"empty"``, ``"point"``, ``"continuum"``, ``t0`` a
    feasible point, ``lps`` the number of LPs solved.
    """
    n = q.shape[0]
    N = np.setdiff1d(np.arange(n), B)
    MNB = M[np.ix_(N, B)]
    G = np.vstack([null, MNB @ null])  # G t + h >= 0
    h = np.concatenate([zB, MNB @ zB + q[N]])
    r = null.shape[1]
    lps = 1
    res = linprog(np.zeros(r), A_ub=-G, b_ub=h + ftol, bounds=(None, None), method="highs")
    if res.status != 0 or res.x is None:
        return "empty", None, lps
    t0 = res.x
    for j in range(r):
        span = []
        for sgn in (1.0, -1.0):
            cj = np.zeros(r)
            cj[j] = sgn
            rj = linprog(cj, A_ub=-G, b_ub=h + ftol, bounds=(None, None), method="highs")
            lps += 1
            if rj.status == 3:
                return "continuum", t0, lps
            span.append(rj.x[j] if rj.x is not None else t0[j])
        if span[1] - span[0] > ttol:
            return "continuum", t0, lps
    return "point", t0, lps


def _enumerate_batch(
    M: np.ndarray, q: np.ndarray, idx: np.ndarray, rank_tol: float, tol: float, dedup_tol: float,
    col: _Collector, continua: list[Continuum], stats: dict[str, int],
) -> None:
    """One batch of bases ``idx`` (``C x k``) of :func:`enumerate_lcp_solutions`.

    Fast path: LU (``slogdet``, ``inv``, one refinement step) for the bases with
    ``1 / (sqrt(k) ||M_BB^{-1}||_1) > rank_tol`` (a lower bound on the smallest singular value);
    the others get an SVD, which decides regular / singular and gives the null space.
    """
    C, k = idx.shape
    n = q.shape[0]
    Mb = _principal(M, idx)
    qb = q[idx]
    zB = np.zeros((C, k))
    done = np.zeros(C, dtype=bool)
    sign, _ = np.linalg.slogdet(Mb)
    lu = np.flatnonzero(sign != 0)
    if lu.size:
        try:
            inv = np.linalg.inv(Mb[lu])
        except np.linalg.LinAlgError:  # an exactly singular pivot slogdet did not flag
            inv = None
        if inv is not None:
            smin_lb = 1.0 / (math.sqrt(k) * np.abs(inv).sum(axis=1).max(axis=1))
            good = smin_lb > rank_tol
            lu, inv = lu[good], inv[good]
            z = -np.einsum("cij,cj->ci", inv, qb[lu])
            r = np.einsum("cij,cj->ci", Mb[lu], z) + qb[lu]
            zB[lu] = z - np.einsum("cij,cj->ci", inv, r)
            done[lu] = True
    rest = np.flatnonzero(~done)
    singular = np.zeros(C, dtype=bool)
    nullity = np.zeros(C, dtype=np.int64)
    Vt_rest = sv_rest = None
    if rest.size:
        U, sv_rest, Vt_rest = np.linalg.svd(Mb[rest])
        inv_s = np.where(sv_rest > rank_tol, 1.0 / np.where(sv_rest > rank_tol, sv_rest, 1.0), 0.0)
        # least-squares (pseudo-inverse) solution of M_BB z_B = -q_B
        zB[rest] = -np.einsum("cji,cj->ci", Vt_rest, inv_s * np.einsum("cji,cj->ci", U, qb[rest]))
        nullity[rest] = (sv_rest <= rank_tol).sum(axis=1)
        singular[rest] = nullity[rest] > 0
    rows = np.arange(C)[:, None]
    Z = np.zeros((C, n))
    Z[rows, idx] = zB
    W = Z @ M.T + q
    inB = np.zeros((C, n), dtype=bool)
    inB[rows, idx] = True
    ok = (zB >= -tol).all(axis=1) & ((W >= -tol) | inB).all(axis=1)
    for c in np.flatnonzero(~singular & ok):
        col.add(Z[c], tuple(idx[c].tolist()))
    sing = np.flatnonzero(singular)
    stats["singular"] += sing.size
    if sing.size == 0:
        return
    # consistency of M_BB z_B = -q_B: w_B of the least-squares point must vanish
    wB = np.take_along_axis(W[sing], idx[sing], axis=1)
    cons = sing[np.abs(wB).max(axis=1) <= tol]
    stats["consistent"] += cons.size
    if cons.size == 0:
        return
    pos = {int(c): i for i, c in enumerate(rest)}  # row of a basis in the SVD arrays
    gtol = 1e-11 * max(1.0, float(np.abs(M).max()))  # a direction entry below this counts as flat
    one = cons[nullity[cons] == 1]
    if one.size:  # nullity 1: the feasible t form an interval, for all bases at once
        r_one = np.array([pos[int(c)] for c in one])
        D = np.zeros((one.size, n))
        D[np.arange(one.size)[:, None], idx[one]] = Vt_rest[r_one, -1, :]
        g = np.where(inB[one], D, D @ M.T)  # d z_B / dt on B, d w_N / dt on N
        h = np.where(inB[one], Z[one], W[one])
        flat = np.abs(g) <= gtol
        bad = (flat & (h < -tol)).any(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = -h / np.where(flat, 1.0, g)
        lo = np.where(g > gtol, ratio, -np.inf).max(axis=1)
        hi = np.where(g < -gtol, ratio, np.inf).min(axis=1)
        ttol = dedup_tol * (1.0 + np.abs(Z[one]).max(axis=1))
        feasible = ~bad & (lo <= hi + ttol)
        wide = feasible & (hi - lo > ttol)
        for j in np.flatnonzero(feasible):
            B = tuple(idx[one[j]].tolist())
            if wide[j]:
                t0 = min(max(0.0, lo[j]), hi[j])
                ok1 = col.verify(Z[one[j]] + t0 * D[j])
                if ok1 is not None:
                    rng = (float(lo[j] - t0), float(hi[j] - t0))
                    d = D[j].copy()
                    if math.isinf(rng[0]) and math.isfinite(rng[1]):  # a ray points along +t
                        d, rng = -d, (-rng[1], -rng[0])
                    continua.append(Continuum(B, ok1[0], d[:, None], rng, bool(np.isfinite(rng).all())))
            else:
                col.add(Z[one[j]] + 0.5 * (lo[j] + hi[j]) * D[j], B)
    many = cons[nullity[cons] >= 2]
    if many.size:  # screen: a constraint row flat in t (all r directions) must already hold
        keep = np.ones(many.size, dtype=bool)
        for r in np.unique(nullity[many]):
            grp = np.flatnonzero(nullity[many] == r)
            rr = np.array([pos[int(c)] for c in many[grp]])
            D = np.zeros((grp.size, r, n))
            D[np.arange(grp.size)[:, None, None], np.arange(r)[None, :, None], idx[many[grp]][:, None, :]] = \
                Vt_rest[rr, k - r:, :]
            g = np.where(inB[many[grp]][:, None, :], D, D @ M.T)
            h = np.where(inB[many[grp]], Z[many[grp]], W[many[grp]])
            flat = np.abs(g).max(axis=1) <= gtol
            keep[grp] = ~(flat & (h < -tol)).any(axis=1)
        many = many[keep]
    for c in many:  # larger null spaces: LPs, one basis at a time
        i = pos[int(c)]
        B = idx[c]
        nul = Vt_rest[i][sv_rest[i] <= rank_tol].T  # k x r, orthonormal columns
        zscale = 1.0 + float(np.abs(zB[c]).max())
        kind, tpt, lps = _solve_singular(M, q, B, zB[c], nul, tol, dedup_tol * zscale)
        stats["lp"] += lps
        if kind == "empty":
            continue
        z = Z[c].copy()
        z[B] = zB[c] + nul @ tpt
        if kind == "point":
            col.add(z, tuple(B.tolist()))
            continue
        ok2 = col.verify(z)
        if ok2 is not None:
            dirs = np.zeros((n, nul.shape[1]))
            dirs[B] = nul
            continua.append(Continuum(tuple(B.tolist()), ok2[0], dirs, None, False))


def _piece_motion_spread(M: np.ndarray, q: np.ndarray, piece: Continuum, A: np.ndarray) -> float:
    """The largest range ``max - min`` of a motion entry ``(A z)_i`` over the continuum ``piece``
    (``inf`` when unbounded): closed form on an interval (one direction), else two LPs per entry
    over ``{t : z_B >= 0, w_N >= 0}`` with ``z = point + D t``. An entry of ``A D`` (``D`` has
    orthonormal columns) below the rounding of the product, ``64 n eps max|A|``, counts as 0: the
    piece's solutions then share that motion entry (a statically indeterminate contact set)."""
    D = piece.directions
    AD = A @ D
    AD[np.abs(AD) <= 64.0 * A.shape[1] * np.finfo(float).eps * float(np.abs(A).max(initial=0.0))] = 0.0
    if not np.any(AD):
        return 0.0
    if piece.t_range is not None:
        lo, hi = piece.t_range
        return float(np.abs(AD[:, 0]).max() * (hi - lo)) if math.isfinite(hi - lo) else math.inf
    n = q.shape[0]
    B = np.asarray(piece.basis, dtype=int)
    N = np.setdiff1d(np.arange(n), B)
    G = np.vstack([D[B], (M @ D)[N]])  # G t + h >= 0
    h = np.concatenate([piece.point[B], (M @ piece.point + q)[N]])
    spread = 0.0
    for row in AD:
        if not np.any(row):
            continue
        ends = []
        for sgn in (1.0, -1.0):
            res = linprog(sgn * row, A_ub=-G, b_ub=h, bounds=(None, None), method="highs")
            if res.status == 3:
                return math.inf
            ends.append(float(row @ res.x) if res.x is not None else 0.0)
        spread = max(spread, ends[1] - ends[0])
    return spread


def _judge_motion(M: np.ndarray, q: np.ndarray, sols: np.ndarray, continua: list[Continuum], motion: Any,
                  tol: float, tol_motion: float | None,
                  undecided: bool) -> tuple[Verdict, np.ndarray, float, str]:
    """``(motion_verdict, distinct motions, tol_motion, name)`` of an enumerated solution set."""
    from contactmp.reductions import MotionMap

    mm = MotionMap.of(motion, q.shape[0])
    if undecided:
        return Verdict.UNDECIDED, np.zeros((0, mm.n_v)), math.nan if tol_motion is None else tol_motion, mm.name
    pts = [np.asarray(z, dtype=float) for z in sols] + [np.asarray(p.point, dtype=float) for p in continua]
    vs = [mm(z) for z in pts]
    if tol_motion is None:
        scale = max([float(np.abs(v).max(initial=0.0)) for v in vs] + [float(np.abs(mm.b).max(initial=0.0))])
        tol_motion = mm.tolerance(tol, scale)
    leaders: list[np.ndarray] = []
    for v in vs:
        if not any(np.abs(v - u).max(initial=0.0) <= tol_motion for u in leaders):
            leaders.append(v)
    distinct = np.array(leaders).reshape(len(leaders), mm.n_v)
    if any(_piece_motion_spread(M, q, p, mm.A) > tol_motion for p in continua):
        verdict = Verdict.CONTINUUM
    else:
        verdict = {0: Verdict.NO_SOLUTION, 1: Verdict.UNIQUE}.get(len(leaders), Verdict.FINITE)
    return verdict, distinct, float(tol_motion), mm.name


def enumerate_lcp_solutions(
    M: Any, q: Any, *, max_n: int = 16, tol: float = 1e-8, dedup_tol: float = 1e-7,
    rank_rtol: float = 1e-10, motion: Any = None, tol_motion: float | None = None,
) -> Enumeration:
    """All solutions of LCP(q, M) by complete enumeration of the ``2^n`` complementary bases.

    A basis ``B`` fixes ``z_N = 0`` and ``w_B = 0``; its solutions are
    ``P_B = {z_B >= 0 : M_BB z_B = -q_B, M_NB z_B + q_N >= 0}``, and the solution set is the union
    of the ``P_B``. Bases are processed by size in batches: one SVD of every ``M_BB``.

    * ``M_BB`` nonsingular (smallest singular value ``> rank_rtol * k * max|M|``): ``P_B`` is the one
      point ``-M_BB^{-1} q_B`` if it passes the screen ``z_B >= -tol``, ``w_N >= -tol``.
    * ``M_BB`` singular: if ``-q_B`` is (to ``tol``) in its range, ``z_B = z_ls + N t`` with ``N``
      the null space; the ``t`` satisfying the inequalities form an interval (computed directly
      for nullity 1) or a polyhedron (LPs: feasibility, then min/max of each ``t_j``). A polyhedron
      of positive size (or unbounded) is reported as a :class:`Continuum` -- the solution set is
      then infinite, whatever else is found; a single point joins the solutions.

    Every point is clipped to ``z >= 0`` and verified (residual ``<= tol``); distinct solutions are
    kept when ``||z - s||_inf > dedup_tol (1 + max(||z||_inf, ||s||_inf))``. For ``n > max_n``
    nothing is enumerated and the verdict is ``UNDECIDED``.

    With ``motion`` (a :class:`~contactmp.reductions.MotionMap` or ``(A, b)``: ``v = A z + b``, e.g. a
    time step's ``v_{k+1}``) the same set is also judged by its motion (``motion_verdict``,
    ``motions``, ``tol_motion``): distinct motions of the solutions (absolute ``tol_motion``,
    default ``MotionMap.tolerance(tol, V)``), and a continuum piece counts as a continuum of motions
    only when it moves ``v`` by more than ``tol_motion`` (closed form on an interval, LPs on larger
    pieces). The impulse ``verdict`` is unchanged: a box resting on four corners is ``CONTINUUM`` by
    its impulses and ``UNIQUE`` by its motion.

    Measured (2 cores, best of 3): ``n = 10``: 3 ms (dense Gaussian ``M``) to 20 ms (a pyramid LCP,
    700 singular bases); ``n = 14``: 0.24-0.47 s; ``n = 16``: 1.1 s (dense) to 2.6 s (pyramid LCP:
    46096 singular bases, 22104 consistent, 144 LPs). Each further ``n`` roughly doubles the time.
    """
    t0 = time.perf_counter()
    M, q = validate_lcp(M, q)
    max_n = _count("max_n", max_n, 1)
    tol = check_number("tol", tol, positive=True)
    dedup_tol = check_number("dedup_tol", dedup_tol, positive=True)
    rank_rtol = check_number("rank_rtol", rank_rtol, positive=True)
    n = q.shape[0]
    if tol_motion is not None:
        tol_motion = check_number("tol_motion", tol_motion, positive=True)
    if n > max_n:
        mv = (None, None, None, None) if motion is None else \
            _judge_motion(M, q, np.zeros((0, n)), [], motion, tol, tol_motion, undecided=True)
        return Enumeration(Verdict.UNDECIDED, np.zeros((0, n)), [], np.zeros(0), [], n, 0, 0, 0, 0, 0,
                                 [f"n = {n} > max_n = {max_n}"], tol, dedup_tol,
                                 time.perf_counter() - t0, f"not enumerated: n = {n} > max_n = {max_n}", *mv)
    col = _Collector(M, q, tol, dedup_tol)
    continua: list[Continuum] = []
    mscale = max(float(np.abs(M).max()), 1e-300)
    stats = {"singular": 0, "consistent": 0, "lp": 0}
    if (q >= -tol).all():  # B = {}: z = 0 is a solution iff q >= 0
        col.add(np.zeros(n), ())
    for k in range(1, n + 1):
        rank_tol = rank_rtol * k * mscale
        for idx in _combinations(n, k):
            _enumerate_batch(M, q, idx, rank_tol, tol, dedup_tol, col, continua, stats)
    n_sing, n_cons, n_lp = stats["singular"], stats["consistent"], stats["lp"]
    sols = np.asarray(col.sols).reshape(len(col.sols), n)
    flags = []
    if col.rejected:
        flags.append(f"{col.rejected} basis points passed the screen (tol {tol:.1e}) but failed the "
                     "residual check: the answer sits on a numerical edge")
    if continua:
        verdict = Verdict.CONTINUUM
    elif len(sols) == 0:
        verdict = Verdict.NO_SOLUTION
    elif len(sols) == 1:
        verdict = Verdict.UNIQUE
    else:
        verdict = Verdict.FINITE
    msg = (f"{2 ** n} bases ({n_sing} singular, {n_cons} of them consistent): {len(sols)} distinct "
           f"basic solutions, {len(continua)} continuum pieces")
    mv: tuple[Any, ...] = (None, None, None, None)
    if motion is not None:
        mv = _judge_motion(M, q, sols, continua, motion, tol, tol_motion, undecided=False)
        msg += f"; motion {mv[3]}: {mv[0].value} ({len(mv[1])} distinct, tol {mv[2]:.1e})"
    return Enumeration(verdict, sols, col.bases, np.asarray(col.res), continua, n, 2 ** n, n_sing,
                             n_cons, n_lp, col.rejected, flags, tol, dedup_tol, time.perf_counter() - t0, msg, *mv)


# =================================================================================================
# 4. matrix classes: P, copositive, strictly copositive
# =================================================================================================
@dataclass(frozen=True)
class MatrixCertificate:
    """The answer of :func:`is_p_matrix`, :func:`is_copositive` or :func:`is_strictly_copositive`.

    Attributes
    ----------
    verdict : Verdict
        ``P`` / ``NOT_P``, ``COPOSITIVE`` / ``NOT_COPOSITIVE``, ``STRICTLY_COPOSITIVE`` /
        ``NOT_STRICTLY_COPOSITIVE``, or ``UNDECIDED``.
    holds : bool or None
        ``True``/``False`` as the verdict says, ``None`` when undecided.
    method : str
        Which test decided (a sufficient test, a witness, or complete enumeration).
    witness_subset : tuple of int or None
        The principal submatrix ``J`` that fails (P: a minor ``det M_JJ <= 0``; copositivity: the
        support of ``x``).
    witness : ndarray or None
        For copositivity: ``x >= 0`` with ``x^T M x < 0`` (``<= 0`` for strict), checked.
    value : float
        P: the smallest normalized principal minor ``det M_JJ / prod_i ||M_J,i||`` seen (in
        ``[-1, 1]``); copositivity: ``x^T M x / ||x||^2`` of the witness (``nan`` without one).
    n_checked : int
        Principal submatrices examined.
    time_s : float
    message : str
    """

    verdict: Verdict
    holds: bool | None
    method: str
    witness_subset: tuple[int, ...] | None
    witness: np.ndarray | None
    value: float
    n_checked: int
    time_s: float
    message: str


def is_p_matrix(M: Any, *, max_n: int = 20, tol: float = 1e-10) -> MatrixCertificate:
    """Is ``M`` a P-matrix (every principal minor ``det M_JJ > 0``; Appendix A, Theorem 4)?

    Order of tests:

    1. a diagonal entry ``M_ii <= 0`` is a failing 1x1 minor (``not_P``);
    2. sufficient: the symmetric part ``(M + M^T)/2`` is positive definite
       (``lambda_min > tol max|M|``; then ``x^T M x > 0`` for all ``x != 0``, so ``M`` is P);
    3. sufficient: ``M`` is an H-matrix with positive diagonal (spectral radius of
       ``|diag(M)|^{-1} |offdiag(M)|`` below ``1 - tol``; every principal submatrix then has a
       positive determinant);
    4. exact enumeration for ``n <= max_n``: every principal minor, by size, in batches
       (``slogdet``), normalized by the Hadamard bound ``prod_i ||row_i(M_JJ)||`` so that it lies in
       ``[-1, 1]``. The smallest one decides: ``> tol`` all: ``"P"``; some ``<= -tol``: ``"not_P"``
       with that ``J`` as witness; otherwise ``"undecided"`` (a minor is zero to working precision).
       The cost is ``sum_k C(n, k) k^3``: measured 0.23 s at ``n = 16``, 4.7 s at ``n = 20``.
    5. ``n > max_n``: only the minors of order <= 2 are searched for a witness; else ``"undecided"``.
    """
    t0 = time.perf_counter()
    M, max_n, tol = _matrix_test_args(M, max_n, tol)
    n = M.shape[0]
    scale = float(np.abs(M).max()) or 1.0

    def out(verdict: Verdict, method: str, J: tuple[int, ...] | None, value: float, checked: int,
            msg: str) -> MatrixCertificate:
        holds = {Verdict.P: True, Verdict.NOT_P: False}.get(verdict)
        return MatrixCertificate(verdict, holds, method, J, None, value, checked, time.perf_counter() - t0, msg)

    d = np.diag(M)
    if (d <= 0).any():
        i = int(np.argmin(d))
        return out(Verdict.NOT_P, "diagonal", (i,), float(np.sign(d[i])), n, f"M[{i},{i}] = {d[i]:.3e} <= 0")
    lam = float(np.linalg.eigvalsh(0.5 * (M + M.T)).min())
    if lam > tol * scale:
        return out(Verdict.P, "symmetric part positive definite", None, math.nan, 0,
                   f"lambda_min((M + M^T)/2) = {lam:.3e} > 0")
    if n > 1:
        J = np.abs(M) / d[:, None]
        np.fill_diagonal(J, 0.0)
        rho = float(np.abs(np.linalg.eigvals(J)).max())
        if rho < 1.0 - tol:
            return out(Verdict.P, "H-matrix with positive diagonal", None, math.nan, 0,
                       f"spectral radius of the Jacobi matrix of |M| is {rho:.3e} < 1")
    kmax = n if n <= max_n else min(2, n)
    worst, worst_J, checked = math.inf, None, 0
    borderline: tuple[int, ...] | None = None
    for k in range(1, kmax + 1):
        for idx in _combinations(n, k):
            Mb = _principal(M, idx)
            sign, logdet = np.linalg.slogdet(Mb)
            lognorm = np.log(np.linalg.norm(Mb, axis=2)).sum(axis=1)
            val = sign * np.exp(np.minimum(logdet - lognorm, 0.0))
            checked += idx.shape[0]
            j = int(np.argmin(val))
            if val[j] < worst:
                worst, worst_J = float(val[j]), tuple(idx[j].tolist())
            if worst <= -tol:
                return out(Verdict.NOT_P, "principal minor", worst_J, worst, checked,
                           f"det M_JJ < 0 for J = {worst_J} (normalized {worst:.3e})")
            if borderline is None and val[j] <= tol:
                borderline = tuple(idx[j].tolist())
    if n > max_n:
        return out(Verdict.UNDECIDED, "minors of order <= 2", None, worst, checked,
                   f"n = {n} > max_n = {max_n}: no failing minor of order <= 2, no sufficient test passed")
    if borderline is not None:
        return out(Verdict.UNDECIDED, "principal minors", borderline, worst, checked,
                   f"a principal minor is zero to working precision (normalized {worst:.3e}, J = {borderline})")
    return out(Verdict.P, "all principal minors", None, worst, checked,
               f"all {checked} principal minors positive (smallest normalized {worst:.3e})")


def _copositivity(M: Any, strict: bool, max_n: int, tol: float) -> MatrixCertificate:
    """Shared test: see :func:`is_copositive`."""
    t0 = time.perf_counter()
    M, max_n, tol = _matrix_test_args(M, max_n, tol)
    n = M.shape[0]
    S = 0.5 * (M + M.T)
    scale = float(np.abs(S).max())
    yes, no = ((Verdict.STRICTLY_COPOSITIVE, Verdict.NOT_STRICTLY_COPOSITIVE) if strict
               else (Verdict.COPOSITIVE, Verdict.NOT_COPOSITIVE))

    def out(verdict: Verdict, method: str, J: tuple[int, ...] | None, x: np.ndarray | None, checked: int,
            msg: str) -> MatrixCertificate:
        holds = {yes: True, no: False}.get(verdict)
        val = float(x @ S @ x / (x @ x)) if x is not None else math.nan
        return MatrixCertificate(verdict, holds, method, J, x, val, checked, time.perf_counter() - t0, msg)

    if scale == 0.0:
        if strict:
            x = np.zeros(n)
            x[0] = 1.0
            return out(no, "zero matrix", (0,), x, 1, "M = 0: x^T M x = 0 for x = e_0")
        return out(yes, "zero matrix", None, None, 0, "M = 0")
    Sn = S / scale
    d = np.diag(Sn)
    bad = np.flatnonzero(d <= tol) if strict else np.flatnonzero(d < -tol)
    if bad.size:
        i = int(bad[np.argmin(d[bad])])
        x = np.zeros(n)
        x[i] = 1.0
        return out(no, "diagonal", (i,), x, n, f"S[{i},{i}] = {S[i, i]:.3e} {'<=' if strict else '<'} 0")
    if (Sn >= -tol).all() and (not strict or (d > tol).all()):
        return out(yes, "nonnegative entries", None, None, 0,
                   "S >= 0 entrywise" + (" with a positive diagonal" if strict else ""))
    lam = float(np.linalg.eigvalsh(Sn).min())
    if lam > tol or (not strict and lam >= -tol * 1e-2):
        return out(yes, "positive (semi)definite", None, None, 0,
                   f"lambda_min((M + M^T)/2) = {lam * scale:.3e}")
    kmax = n if n <= max_n else min(3, n)
    checked = 0
    for k in range(2, kmax + 1):
        for idx in _combinations(n, k):
            Sb = _principal(Sn, idx)
            lam_b, V = np.linalg.eigh(Sb)
            checked += idx.shape[0]
            small = np.abs(lam_b) <= tol * k
            regular = ~small.any(axis=1)
            # nonsingular S_JJ with S_JJ^{-1} e < 0 (strictly): v = -S_JJ^{-1} e > 0, v^T S v = -e^T v < 0
            inv_l = np.where(small, 0.0, 1.0 / np.where(small, 1.0, lam_b))
            u = np.einsum("cij,cj->ci", V, inv_l * V.sum(axis=1))  # S_JJ^{-1} e
            umax = np.abs(u).max(axis=1)
            neg = regular & (u < -tol * umax[:, None]).all(axis=1)
            cand = [(c, -u[c]) for c in np.flatnonzero(neg)]
            if strict:
                # nullity 1 with a positive null vector: v^T S v = 0
                one = small.sum(axis=1) == 1
                for c in np.flatnonzero(one):
                    v = V[c][:, int(np.argmax(small[c]))]
                    v = v if v.sum() > 0 else -v
                    if (v > tol * np.abs(v).max()).all():
                        cand.append((c, v))
            for c, v in cand:
                x = np.zeros(n)
                x[idx[c]] = v / np.abs(v).max()
                val = float(x @ S @ x)
                limit = tol * scale * float(x @ x)
                if (val <= limit) if strict else (val < -limit):
                    return out(no, "principal submatrix (KKT point on the simplex)", tuple(idx[c].tolist()),
                               x, checked, f"x >= 0 supported on J = {tuple(idx[c].tolist())} has "
                               f"x^T M x = {val:.3e}")
    if n > max_n:
        return out(Verdict.UNDECIDED, "submatrices of order <= 3", None, None, checked,
                   f"n = {n} > max_n = {max_n}: no witness of order <= 3, no sufficient test passed")
    return out(yes, "all principal submatrices", None, None, checked,
               f"no principal submatrix of the {checked} has a {'nonpositive' if strict else 'negative'} "
               "KKT value on the simplex")


def is_copositive(M: Any, *, max_n: int = 18, tol: float = 1e-10) -> MatrixCertificate:
    """Is ``M`` copositive (``x^T M x >= 0`` for all ``x >= 0``; Appendix A)? Only ``S = (M + M^T)/2``
    matters.

    Method (exact in exact arithmetic): the minimum of ``x^T S x`` on the simplex is attained at a
    point ``x`` whose support ``J`` can be taken minimal; the KKT conditions there give
    ``S_JJ x_J = m e`` with ``x_J > 0`` and ``m`` the minimum. Minimality of ``J`` rules out a null
    vector ``d`` of ``S_JJ`` (moving along ``d`` keeps the value when ``e^T d = 0``, and
    ``x^T S d = m e^T d`` forces ``m = 0`` otherwise), so: ``S`` is **not** copositive iff some
    principal submatrix ``S_JJ`` is nonsingular with ``S_JJ^{-1} e < 0`` entrywise (then
    ``x_J = -S_JJ^{-1} e`` is the witness, ``x^T S x = -e^T x_J < 0``). This is the criterion of
    Cottle, Habetler and Lemke (1970, Thm. 3.1: ``det < 0`` and ``adj >= 0`` for a matrix
    copositive of order ``n - 1``) and of Kaplan (2000: no principal submatrix has a positive
    eigenvector with a negative eigenvalue), in a form that needs no eigenvalue multiplicities.

    Quick tests first: a negative diagonal entry (witness ``e_i``), ``S >= 0`` entrywise, or ``S``
    positive semidefinite decide at once. Otherwise all ``2^n`` principal submatrices are examined
    for ``n <= max_n`` (batched ``eigh``; measured 0.9 s at ``n = 16``, 5.3 s at ``n = 18``); for
    larger ``n`` only orders
    ``<= 3`` are searched for a witness and the verdict is otherwise ``"undecided"``.
    Numerically, ``S`` is scaled to ``max|S| = 1``; ``S_JJ`` counts as singular when an eigenvalue
    is within ``tol * |J|``, and a witness is reported only after ``x^T S x < 0`` is checked; a
    ``"copositive"`` verdict therefore means "copositive up to perturbations of relative size
    about ``tol``".
    """
    return _copositivity(M, False, max_n, tol)


def is_strictly_copositive(M: Any, *, max_n: int = 18, tol: float = 1e-10) -> MatrixCertificate:
    """Is ``M`` strictly copositive (``x^T M x > 0`` for all ``x >= 0``, ``x != 0``)?

    Same method as :func:`is_copositive`, with the minimum ``m <= 0``: ``S`` is **not** strictly
    copositive iff some principal submatrix ``S_JJ`` is nonsingular with ``S_JJ^{-1} e < 0``, or
    has a one-dimensional null space spanned by a vector ``v > 0`` (then ``v^T S v = 0``). Quick
    tests: a diagonal entry ``<= 0`` (witness ``e_i``); ``S >= 0`` with a positive diagonal, or ``S``
    positive definite (``lambda_min > tol``), decide at once.
    """
    return _copositivity(M, True, max_n, tol)
