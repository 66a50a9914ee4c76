"""Sensitivities of complementarity solutions by implicit differentiation on their active set.

A solution ``x`` of a complementarity problem with data ``theta`` satisfies, on its identified
active set, a square system of equations ``F(x; theta) = 0`` (one equation per unknown: the
complementarity pairs decided which side is zero). Where the active set is strict (no pair with
both sides zero) and ``A = dF/dx`` is nonsingular, the implicit function theorem gives

    dx = -A^{-1} (dF/dtheta) dtheta                   (forward, JVP)
    theta_bar = -(dF/dtheta)^T A^{-T} x_bar           (reverse, VJP)

with one LU factorization of ``A`` serving every product. This module holds that shared algebra
(:class:`ImplicitSensitivity`); :func:`lcp_sensitivity` and
:func:`~contactmp.solvers.fc3d.sensitivity.fc3d_sensitivity` build ``F`` for the LCP and the
fc3d problem.

**Degenerate points** (a pair with both sides zero: an LCP index with ``z_i = w_i = 0``, a contact
at the grazing or at the stick/slip boundary) have no derivative: the solution map is piecewise
smooth there and each piece has its own. Such a point is never differentiated by accident: each
builder names the piece it differentiates (``side``), lists the degenerate indices in
``degenerate`` and sets ``flagged``; the products are finite (never NaN) and equal the derivative
of the chosen piece, which is the one-sided derivative in every direction that keeps the solution
on that piece.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numba
import numpy as np
from scipy.linalg.lapack import dgelsy, dgelsy_lwork, dgetrf, dgetrs
from numpy.typing import ArrayLike

from contactmp.errors import InputError
from contactmp.result import Result
from contactmp.validate import validate_lcp

__all__ = ["ImplicitSensitivity", "LCPSensitivity", "lcp_sensitivity", "lcp_pieces", "DEGENERATE_TOL"]

#: a pair counts as degenerate when both of its sides are at most this, relative to
#: ``max(||z||_inf, ||w||_inf)`` (about 1e4 times the residual of a solution solved to 1e-12,
#: far below any side that is meant to be positive in a well-scaled problem)
DEGENERATE_TOL = 1e-8


def min_norm_solve(A: np.ndarray, b: np.ndarray, rcond: float = 1e-12) -> np.ndarray:
    """The minimum-norm least-squares solution of ``A x = b`` (``A`` square, ``b`` a vector or a
    matrix of right-hand sides) by LAPACK's complete orthogonal factorization ``dgelsy``, called
    directly (scipy.linalg.lstsq's wrapper adds ~20 us a call); columns whose pivot falls below
    ``rcond`` times the largest are treated as dependent."""
    n = A.shape[1]
    B = b.reshape(b.shape[0], -1)
    lwork = int(dgelsy_lwork(A.shape[0], n, B.shape[1], rcond)[0])
    x, info = dgelsy(A, B, np.zeros(n, dtype=np.int32), rcond, lwork)[1::3]  # jpvt is in/out: fresh zeros
    if info != 0:
        raise InputError("A", f"LAPACK dgelsy failed (info = {info})")
    return x[:n].reshape((n,) + b.shape[1:])


@dataclass
class ImplicitSensitivity:
    """The linearization ``A dx = -B dtheta`` of a solution's active-set equations.

    ``A`` is factorized once (LU with partial pivoting; a singular ``A`` -- a solution that is
    not locally unique -- is factorized with a least-squares fallback and ``singular`` set).
    ``apply_B(dtheta)`` and ``apply_BT(lam)`` give ``B dtheta`` and ``B^T lam`` for the data blocks
    of the problem (dicts of named arrays).
    """

    A: np.ndarray
    apply_B: Callable[[dict[str, np.ndarray]], np.ndarray]
    apply_BT: Callable[[np.ndarray], dict[str, np.ndarray]]
    degenerate: np.ndarray
    side: str
    singular: bool = False
    _lu: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        n = self.A.shape[0]
        if n == 0:
            return
        if not np.isfinite(self.A).all():
            raise InputError("A", "the linearization is not finite")
        lu, piv, info = dgetrf(self.A)  # LAPACK directly: scipy.linalg's wrappers cost ~60 us a call
        d = np.abs(lu.diagonal())
        if info == 0 and d.min() > 1e-13 * max(1.0, float(d.max())):
            self._lu = (lu, piv)
        else:  # a solution that is not locally unique: the minimum-norm derivative (each solve
            self.singular = True  # by a complete orthogonal factorization, LAPACK gelsy: ~2 LUs)

    @property
    def flagged(self) -> bool:
        """True at a degenerate point (the products are the chosen piece's) or a singular ``A``."""
        return bool(self.degenerate.size) or self.singular

    def _solve(self, rhs: np.ndarray, trans: int = 0) -> np.ndarray:
        if rhs.shape[0] == 0:
            return rhs.copy()
        if self._lu is not None:
            return dgetrs(self._lu[0], self._lu[1], rhs, trans=trans)[0]
        return min_norm_solve(self.A.T if trans else self.A, rhs)

    def jvp(self, **dtheta: ArrayLike) -> np.ndarray:
        """``dx = -A^{-1} B dtheta`` for the data directions given by name (every block of the
        problem, zeros where it does not change: the wrappers' ``jvp`` fill them in)."""
        return -self._solve(self.apply_B({k: np.asarray(v, dtype=float) for k, v in dtheta.items()}))

    def jacobian(self, B: np.ndarray) -> np.ndarray:
        """``-A^{-1} B`` for a matrix ``B`` of ``dF/dtheta`` (one solve with all its columns)."""
        return -self._solve(np.asarray(B, dtype=float))

    def vjp(self, x_bar: ArrayLike) -> dict[str, np.ndarray]:
        """``theta_bar = -B^T A^{-T} x_bar`` for every data block, by name."""
        lam = -self._solve(np.asarray(x_bar, dtype=float), trans=1)
        return self.apply_BT(lam)


@dataclass
class LCPSensitivity:
    """Derivatives of the solution ``z`` of LCP(q, M) (``z >= 0``, ``w = M z + q >= 0``,
    ``z^T w = 0``) with respect to ``q`` and ``M`` (see :func:`lcp_sensitivity`)."""

    z: np.ndarray
    w: np.ndarray
    active: np.ndarray      #: the indices held at ``w_i = 0`` (``alpha``, and ``beta`` on the active side)
    inactive: np.ndarray    #: the indices held at ``z_i = 0``
    degenerate: np.ndarray  #: indices with ``z_i = w_i = 0`` (``beta``), placed by ``side``
    side: str
    core: ImplicitSensitivity = field(repr=False)

    @property
    def flagged(self) -> bool:
        """True when the point is degenerate (``degenerate`` non-empty) or ``M_aa`` is singular."""
        return self.core.flagged

    def jvp(self, dq: ArrayLike | None = None, dM: ArrayLike | None = None) -> np.ndarray:
        """``dz`` for the data change ``(dq, dM)`` (either may be None)."""
        n, e = self.z.size, self.active
        rhs = np.zeros(e.size)
        if dq is not None:
            rhs += as_vector("dq", dq, n)[e]
        if dM is not None:
            rhs += as_matrix("dM", dM, n)[e] @ self.z
        dz = np.zeros(n)
        dz[e] = -self.core._solve(rhs)
        return dz

    def vjp(self, z_bar: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(q_bar, M_bar) = (dz/dq^T z_bar, dz/dM^T z_bar)``; ``M_bar`` is the rank-one
        ``q_bar z^T`` (``q_bar`` is zero outside the active set)."""
        out = self.core.vjp(as_vector("z_bar", z_bar, self.z.size)[self.active])
        return out["q"], out["M"]

    def dz_dq(self) -> np.ndarray:
        """The Jacobian ``dz/dq`` (n x n): ``-M_aa^{-1}`` on the active rows and columns, 0 elsewhere."""
        n = self.z.size
        J = np.zeros((n, n))
        e = self.active
        J[np.ix_(e, e)] = self.core.jacobian(np.eye(e.size))
        return J

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready summary: ``dz_dq`` and the flags."""
        return {"dz_dq": self.dz_dq().tolist(), "degenerate": bool(self.flagged),
                "degenerate_pairs": self.degenerate.tolist(), "side": self.side, "singular": self.core.singular}


@numba.njit(cache=True)
def _piece_codes(z: np.ndarray, w: np.ndarray, tol: float) -> np.ndarray:  # pragma: no cover - compiled
    """Per index 0 (``w_i`` is the zero side), 1 (``z_i`` is) or 2 (both are at most the scale)."""
    big = 1e-300
    for i in range(z.shape[0]):
        big = max(big, abs(z[i]), abs(w[i]))
    scale = tol * big
    out = np.empty(z.shape[0], dtype=np.int64)
    for i in range(z.shape[0]):
        if z[i] <= scale and w[i] <= scale:
            out[i] = 2
        elif z[i] > w[i]:
            out[i] = 0
        else:
            out[i] = 1
    return out


def lcp_pieces(z: np.ndarray, w: np.ndarray, tol: float = DEGENERATE_TOL) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(alpha, gamma, beta)``: the indices with ``w_i`` zero and ``z_i`` positive, with ``z_i``
    zero and ``w_i`` positive, and with both zero (at most ``tol * max(||z||_inf, ||w||_inf)``: the
    rule does not depend on the data's units)."""
    code = _piece_codes(z, w, float(tol))
    return np.flatnonzero(code == 0), np.flatnonzero(code == 1), np.flatnonzero(code == 2)


def lcp_sensitivity(M: ArrayLike, q: ArrayLike, z: ArrayLike | Result, *, side: str = "inactive",
                    tol: float = DEGENERATE_TOL) -> LCPSensitivity:
    """The sensitivity of the LCP solution ``z`` (an array or a solved :class:`Result`) to ``(q, M)``.

    On the active set ``alpha = {z_i > 0 = w_i}`` the solution satisfies ``(M z + q)_alpha = 0``
    and ``z_gamma = 0``, so ``dz_alpha = -M_aa^{-1} (dq_alpha + dM_{alpha,:} z)``, ``dz_gamma = 0``
    (Cottle, Pang and Stone, section 7.3: for a P-matrix this is the derivative wherever the
    solution is non-degenerate). A degenerate index (``z_i = w_i = 0``, see :func:`lcp_pieces`)
    is placed on ``side``: ``"inactive"`` (``z_i`` stays 0: the derivative for every direction
    with ``dw_i >= 0``) or ``"active"`` (``w_i`` stays 0: for every direction with ``dz_i >= 0``).
    """
    if side not in ("inactive", "active"):
        raise InputError("side", f"must be 'inactive' or 'active', got {side!r}")
    Mv, qv = validate_lcp(M, q)
    if isinstance(z, Result) and not z.success:
        raise InputError("z", f"the result is {z.status.value}, not a verified solution (pass z itself to "
                         "differentiate at an unverified point)")
    zv = z.x if isinstance(z, Result) else z
    n = qv.size
    zv = as_vector("z", zv, n)
    w = Mv @ zv + qv
    alpha, gamma, beta = lcp_pieces(zv, w, tol)
    eq_w = np.sort(np.concatenate([alpha, beta])) if side == "active" and beta.size else alpha
    free = np.ones(n, dtype=bool)
    free[eq_w] = False
    # only z_eq moves (z_i = 0 elsewhere): the system is M_ee dz_e = -(dq + dM z)_e
    def apply_B(d: dict[str, np.ndarray]) -> np.ndarray:
        return d["q"][eq_w] + d["M"][eq_w] @ zv

    def apply_BT(lam: np.ndarray) -> dict[str, np.ndarray]:
        lq = np.zeros(n)
        lq[eq_w] = lam
        return {"q": lq, "M": np.outer(lq, zv)}

    core = ImplicitSensitivity(Mv[eq_w][:, eq_w], apply_B, apply_BT, beta, side)
    return LCPSensitivity(zv, w, eq_w, np.flatnonzero(free), beta, side, core)


def as_vector(name: str, v: Any, n: int) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    if a.shape != (n,) or not np.isfinite(a).all():
        raise InputError(name, f"must be {n} finite numbers, got shape {a.shape}")
    return a


def as_matrix(name: str, v: Any, n: int) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    if a.shape != (n, n) or not np.isfinite(a).all():
        raise InputError(name, f"must be a finite {n} x {n} matrix, got shape {a.shape}")
    return a
