"""Compliant constraints solved implicitly: Drumwright's first-order scheme (arXiv 1905.10828).

Constraints are virtual spring-dampers, ``lambda = -K phi - B phidot`` (equation (23), the
``M^ Gdot v`` term dropped, see below), with per-row stiffness ``K`` [N/m] and damping ``B``
[N s/m]. One step of length ``h`` (equations (36)-(39), (73)-(77)) is implicit in the constraint
state and semi-explicit in the multibody state::

    v1      = v0 + h M^-1 (f + G^T lambda)            (37)  (then q1 = q0 + h N v1, (36))
    phidot1 = G v1                                     (39) with phidot0 = G v0
    phi1    = phi0 + h phidot1                         (38)
    lambda  = -K phi1 - B phidot1                      bilateral rows
    lambda  = max(0, -K phi1 - B phidot1)              unilateral rows (68)

Eliminating ``v1`` (write ``W = G M^-1 G^T``, ``a = v0 + h M^-1 f``, ``S = h (h K + B)``) gives,
for bilateral rows, the linear system of the paper's (53)-(63)::

    Y lambda = r,    Y = I + diag(S) W,    r = -K phi0 - (h K + B) G a.

``Y`` is not symmetric, but it is always nonsingular: its eigenvalues are those of
``I + S^1/2 W S^1/2`` (similar matrices when ``S > 0``; by Sylvester's determinant identity
``det Y = det(I + S^1/2 W S^1/2) >= 1`` always), so redundant rows of ``G`` (singular ``W``) share the
load with no regularization. On rows with ``h K + B > 0`` we multiply by ``D = (h K + B)^-1``::

    A lambda + c = 0,    A = D + h W  (symmetric positive definite),    c = D K phi0 + G a,

(rows with ``h K + B = 0`` carry no force: ``lambda_i = 0``). Unilateral rows turn the same data
into the symmetric positive-definite LCP

    0 <= lambda  _|_  w = A lambda + c >= 0,

i.e. the strictly convex QP ``min 1/2 lambda^T A lambda + c^T lambda s.t. lambda >= 0`` (mixed
rows: bilateral components free, ``w_i = 0``). Note: the paper's (69)-(76) state the objective as
``1/2 lambda^T lambda`` over the same feasible set; that min-norm point equals the LCP answer for
one constraint (or decoupled ones) but not in general (it can leave ``lambda_i > 0`` with
``w_i > 0``), so we solve the LCP / its QP, which is what ``lambda = max(0, ...)`` means.

Many rows, few velocities (m >> n, e.g. an elastic foundation): ``W = U U^T`` with ``U = G L^-T``
(``M = L L^T``) has rank <= n, so ``A = D + h U U^T`` is diagonal plus low rank. The ``"lowrank"``
solver never forms an m x m matrix: each active-set solve uses the Woodbury identity
``A_SS^-1 = E - E U_S (I/h + U_S^T E U_S)^-1 U_S^T E`` (``E = D_S^-1``; one n x n Cholesky, O(|S| n^2))
and the residual uses the O(m n) product ``A x = D x + h U (U^T x)``; ``solver="auto"`` picks it when
the loaded rows exceed ``LOWRANK_RATIO * n``. (30 x 30 foundation, n = 6: 0.7 ms per step instead
of 55-60 ms with the dense 900 x 900 active-set solve.) This module holds the problem and its check;
the solvers are in :mod:`contactmp.solvers.cone_qp.compliant`.

Not yet here: the ``M^ Gdot v`` term of (23)/(74) (it needs ``M^ = W^-1``, undefined for redundant
rows). ``K, B`` are inputs evaluated at ``q0`` and frozen over the step (configuration-dependent
gains, e.g. Hertz, enter through ``TimeStepping(..., stiffness=callable, damping=callable)``).
Friction (the cone QP) is :mod:`contactmp.formulations.compliant_friction`, the contact models
:mod:`contactmp.models.compliance`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy.linalg import solve_triangular

from contactmp.errors import InputError, check_spd
from contactmp.result import Result
from contactmp.validate import float_vector

__all__ = ["CompliantQP", "compliant_step"]

KINDS = ("bilateral", "unilateral")


# ------------------------------------------------------------------------------------ validation
def _kinds(kind: str | Sequence[str], m: int) -> np.ndarray:
    """Boolean mask, True for unilateral rows."""
    if isinstance(kind, str):
        if kind not in KINDS:
            raise InputError("kind", f"must be one of {KINDS} (or one per row), got {kind!r}")
        return np.full(m, kind == "unilateral")
    ks = list(kind)
    if len(ks) != m or any(k not in KINDS for k in ks):
        raise InputError("kind", f"must be one of {KINDS} or a sequence of {m} of them, got {kind!r}")
    return np.array([k == "unilateral" for k in ks], dtype=bool)


# -------------------------------------------------------------------------------------- problem
@dataclass
class CompliantQP:
    """One step of the compliant-constraint scheme with numeric data evaluated at ``(q0, v0)``.

    ``M`` (n x n SPD), ``f`` (n, all non-constraint forces), ``v0`` (n), ``G`` (m x n, ``dphi/dq N``),
    ``phi0`` (m), ``K``, ``B`` (m, >= 0; scalars broadcast), ``h > 0``, ``kind`` ``"bilateral"``,
    ``"unilateral"`` or one per row. See the module docstring for ``Y``, ``r``, ``A``, ``c``.
    """

    M: Any
    f: Any
    v0: Any
    G: Any
    phi0: Any
    K: Any
    B: Any
    h: float
    kind: str | Sequence[str] = "bilateral"

    def __post_init__(self) -> None:
        try:
            M = np.atleast_2d(np.asarray(self.M, dtype=float))
        except (TypeError, ValueError) as exc:
            raise InputError("M", f"cannot be read as a float matrix ({exc})") from None
        self._Lm = check_spd(M)
        n = M.shape[0]
        try:
            G = np.atleast_2d(np.asarray(self.G, dtype=float))
        except (TypeError, ValueError) as exc:
            raise InputError("G", f"cannot be read as a float matrix ({exc})") from None
        if G.ndim != 2 or G.shape[1] != n or G.shape[0] == 0:
            raise InputError("G", f"must be m x {n} with m >= 1, got shape {G.shape}")
        if not np.isfinite(G).all():
            raise InputError("G", "contains NaN or inf")
        m = G.shape[0]
        if not (isinstance(self.h, (int, float, np.floating)) and np.isfinite(self.h) and self.h > 0):
            raise InputError("h", f"must be a positive finite step, got {self.h!r}")
        self.M, self.G, self.h = M, G, float(self.h)
        self.f, self.v0 = float_vector(self.f, n, "f"), float_vector(self.v0, n, "v0")
        self.phi0 = float_vector(self.phi0, m, "phi0")
        self.K, self.B = float_vector(self.K, m, "K"), float_vector(self.B, m, "B")
        if (self.K < 0).any():
            raise InputError("K", "stiffnesses must be >= 0")
        if (self.B < 0).any():
            raise InputError("B", "damping coefficients must be >= 0")
        self.unilateral = _kinds(self.kind, m)
        # derived data (all at q0, v0). U = G L^-T (M = L L^T) is the m x n factor of W = U U^T; the dense
        # m x m matrices W, A, Y are built only on request (the low-rank path never forms them).
        self.U = solve_triangular(self._Lm, G.T, lower=True).T
        self.a = self.v0 + self.h * self._minv(self.f)  # the unconstrained velocity v0 + h M^-1 f
        self.rate = self.h * self.K + self.B  # h K + B  [N s/m]
        self.loaded = self.rate > 0  # rows that can carry force
        idx = np.flatnonzero(self.loaded)
        self.loaded_rows = idx
        self.D = 1.0 / self.rate[idx]
        self.Ul = self.U[idx]
        self.diagA = self.D + self.h * np.einsum("ij,ij->i", self.Ul, self.Ul)
        self.c = self.D * self.K[idx] * self.phi0[idx] + (G @ self.a)[idx]

    @functools.cached_property
    def W(self) -> np.ndarray:
        """``W = G M^-1 G^T`` (m x m, dense; formed on first use)."""
        W = self.U @ self.U.T
        return 0.5 * (W + W.T)

    @functools.cached_property
    def A(self) -> np.ndarray:
        """``A = D + h W`` on the loaded rows (dense SPD; formed on first use)."""
        return np.diag(self.D) + self.h * self.W[np.ix_(self.loaded_rows, self.loaded_rows)]

    def A_times(self, x: np.ndarray) -> np.ndarray:
        """``A x = D x + h U (U^T x)`` on the loaded rows in O(m n), without forming ``A``."""
        return self.D * x + self.h * (self.Ul @ (self.Ul.T @ x))

    # -- the paper's quantities --------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of generalized velocities."""
        return self.M.shape[0]

    @property
    def m(self) -> int:
        """Number of constraint rows."""
        return self.G.shape[0]

    def _minv(self, x: np.ndarray) -> np.ndarray:
        """``M^-1 x`` through the Cholesky factor."""
        y = solve_triangular(self._Lm, x, lower=True)
        return solve_triangular(self._Lm.T, y, lower=False)

    @property
    def Y(self) -> np.ndarray:
        """``Y = I + h diag(h K + B) G M^-1 G^T`` (nonsingular for all K, B >= 0)."""
        return np.eye(self.m) + self.h * self.rate[:, None] * self.W

    @property
    def rhs(self) -> np.ndarray:
        """``r = -K phi0 - (h K + B) G (v0 + h M^-1 f)``: ``Y lambda = r`` for bilateral rows."""
        return -self.K * self.phi0 - self.rate * (self.G @ self.a)

    def velocity(self, lam: Any) -> np.ndarray:
        """``v1 = v0 + h M^-1 (f + G^T lambda)`` (37)."""
        return self.a + self.h * self._minv(self.G.T @ np.asarray(lam, dtype=float))

    def gap_rate(self, lam: Any) -> np.ndarray:
        """``w = D lambda + D K phi0 + G v1`` on the loaded rows (0 for bilateral rows at a solution;
        units m/s); ``(h K + B) w = Y lambda - r``."""
        lam = np.asarray(lam, dtype=float)
        return self.A_times(lam[self.loaded_rows]) + self.c

    def residual(self, lam: Any) -> tuple[float, dict[str, float]]:
        """The independent check of ``lambda``: ``(relative natural-map residual, details)``.

        With ``w`` of :meth:`gap_rate` and the force-scaled ``s_i = w_i / A_ii`` [N]: the natural map
        is ``|min(lambda_i, s_i)|`` on unilateral rows, ``|s_i|`` on bilateral rows and ``|lambda_i|``
        on unloaded rows; its max is divided by ``max(1, ||lambda||_inf, ||c_i / A_ii||_inf)``.
        """
        lam = np.asarray(lam, dtype=float)
        if lam.shape != (self.m,) or not np.isfinite(lam).all():
            return float("inf"), {"natural_map": float("inf"), "sign": float("inf"), "dynamics": float("inf")}
        d = self.diagA
        s = self.gap_rate(lam) / d
        li = lam[self.loaded_rows]
        uni = self.unilateral[self.loaded_rows]
        nat = np.where(uni, np.abs(np.minimum(li, s)), np.abs(s))
        unloaded = np.abs(lam[~self.loaded])
        r = max(float(np.max(nat, initial=0.0)), float(np.max(unloaded, initial=0.0)))
        scale = max(1.0, float(np.max(np.abs(lam), initial=0.0)), float(np.max(np.abs(self.c / d), initial=0.0)))
        v1 = self.velocity(lam)
        dyn = self.M @ (v1 - self.v0) - self.h * (self.f + self.G.T @ lam)
        fscale = max(1.0, float(np.max(np.abs(self.h * self.f))), float(np.max(np.abs(self.M @ self.v0))))
        details = {
            "natural_map": r,
            "sign": float(np.max(-lam[self.unilateral], initial=0.0)),
            "dynamics": float(np.max(np.abs(dyn))) / fscale,
        }
        return r / scale, details

    def solve(self, solver: str = "auto", **options: Any) -> Result:
        """Compute ``lambda`` (and ``v1``) of this step by
        :func:`~contactmp.solvers.cone_qp.compliant.solve_compliant_lcp` (``solver``: ``"auto"``,
        ``"cholesky"``, ``"lu-Y"``, ``"active-set"``, ``"lowrank"`` or a QP solver; ``options``:
        ``active``, ``tol``, ``polish``, ``max_pivots``); ``SOLVED`` only when :meth:`residual`
        ``<= tol``. Never raises on failure (see ``status``)."""
        from contactmp.solvers.cone_qp import solve_compliant_lcp

        return solve_compliant_lcp(self, solver, **options)


def compliant_step(M: Any, f: Any, v0: Any, G: Any, phi0: Any, K: Any, B: Any, h: float,
                   kind: str | Sequence[str] = "bilateral", solver: str = "auto",
                   **options: Any) -> Result:
    """One compliant step: ``CompliantQP(M, f, v0, G, phi0, K, B, h, kind).solve(solver, **options)``."""
    return CompliantQP(M, f, v0, G, phi0, K, B, h, kind).solve(solver, **options)
