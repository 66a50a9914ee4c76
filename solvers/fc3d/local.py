"""Exact one-contact solvers shared by the cone solvers (NSGS, the QVI fixed point).

Two local problems, each for one contact with a ``3 x 3`` block ``W`` (order normal, t1, t2) and
a vector ``q``, ``u = W r + q``:

* **cone** (fc3d with one contact): ``r in K_mu``, ``u_hat = u + mu ||u_T|| e_n in K_mu^*``,
  ``r . u_hat = 0``. Every solution is one of
    separation ``r = 0`` (a solution iff ``q_n >= 0``),
    sticking ``u = 0``, ``r = -W^{-1} q`` (a solution iff ``r in K_mu``),
    sliding ``u_n = 0``, ``r = r_n (1, -mu cos t, -mu sin t)`` with ``u_T = lam (cos t, sin t)``,
    ``lam > 0``, ``r_n > 0``;
  (``r_n = 0`` forces ``r = 0``; ``u_T = 0`` at a boundary ``r`` is the sticking case).
* **cylinder** (the Tresca problem of the QVI fixed point, friction bound ``s >= 0`` given):
  ``0 <= r_n _|_ u_n >= 0``, ``r_T in D(s) = {||r_T|| <= s}``, ``-u_T in N_D(s)(r_T)``
  (maximal dissipation), i.e. ``r = P_C(r - u)`` with ``C = R_+ x D(s)``. Every solution has
  ``r_n = 0`` or ``u_n = 0``, and ``u_T = 0`` or ``r_T = s (cos t, sin t)`` with
  ``u_T = -lam (cos t, sin t)``, ``lam >= 0``: four cases.

Each boundary case reduces to one equation in the angle ``t``: with ``U(t) = (x0 + x1 cos t + x2 sin
t, y0 + y1 cos t + y2 sin t)`` (the tangential velocity times a positive factor) the direction
condition ``U(t) x (cos t, sin t) = 0`` is a trigonometric polynomial of degree 2,

    h(t) = K0 + A cos t + B sin t + C2 cos 2t + S2 sin 2t,

whose roots are the unit-modulus roots of a quartic in ``z = exp(i t)``. They are found by the
Aberth-Ehrlich iteration (:func:`_poly_roots`, no allocation), polished by Newton's method on ``h`` and every candidate ``r`` is judged by the
local natural-map residual; the one with the smallest residual is returned (in exact arithmetic the
case analysis is exhaustive, so when a local solution exists one candidate has residual 0). A warm
start angle (from the previous ``r``, or without one the direction of the frictionless slip
velocity) is tried first by Newton's method alone, which is what makes a Gauss-Seidel sweep cheap.
"""
from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from contactmp.errors import InputError, check_number

#: a candidate is accepted at once when its local residual is below this times its scale
ACCEPT = 1e-14


# ---------------------------------------------------------------------------------------------
# the angle equation
# ---------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _trig_coefs(x0, x1, x2, y0, y1, y2):  # pragma: no cover - compiled
    """Coefficients ``(K0, A, B, C2, S2)`` of ``h(t) = U1 sin t - U2 cos t`` (see module doc)."""
    return 0.5 * (x2 - y1), -y0, x0, -0.5 * (x2 + y1), 0.5 * (x1 - y2)


@numba.njit(cache=True)
def _h(c, t):  # pragma: no cover - compiled
    """``h(t)`` and ``h'(t)`` from the coefficient tuple ``c``."""
    ct, st = math.cos(t), math.sin(t)
    c2, s2 = ct * ct - st * st, 2.0 * ct * st
    h = c[0] + c[1] * ct + c[2] * st + c[3] * c2 + c[4] * s2
    dh = -c[1] * st + c[2] * ct - 2.0 * c[3] * s2 + 2.0 * c[4] * c2
    return h, dh


@numba.njit(cache=True)
def _newton_angle(c, t0):  # pragma: no cover - compiled
    """Newton's method on ``h`` from ``t0`` (at most 40 steps, each step clipped to 0.5 rad).

    Returns ``(t, |h(t)|)``; the caller judges the resulting candidate by its residual."""
    t = t0
    h, dh = _h(c, t)
    best_t, best_h = t, abs(h)
    for _ in range(40):
        if h == 0.0 or dh == 0.0:
            break
        step = h / dh
        if step > 0.5:
            step = 0.5
        elif step < -0.5:
            step = -0.5
        t -= step
        h, dh = _h(c, t)
        if abs(h) < best_h:
            best_t, best_h = t, abs(h)
        if abs(step) <= 1e-16 * (1.0 + abs(t)):
            break
    return best_t, best_h


@numba.njit(cache=True)
def _all_angles(c: tuple[float, float, float, float, float], out: np.ndarray) -> int:  # pragma: no cover
    """Approximate roots of ``h`` (angles of the roots of ``z^2 h``, a quartic in ``z``).

    Writes up to 4 starting angles into ``out`` and returns their number. When ``h`` is constant
    (degenerate data) returns 0; when it vanishes identically, 8 equally spaced angles are
    returned so that the caller can still test some candidates.
    """
    K0, A, B, C2, S2 = c
    scale = max(abs(K0), abs(A), abs(B), abs(C2), abs(S2))
    if scale == 0.0:
        for i in range(8):
            out[i] = 2.0 * math.pi * i / 8.0
        return 8
    tiny = 1e-14 * scale
    a4 = 0.5 * complex(C2, -S2)
    a3 = 0.5 * complex(A, -B)
    a2 = complex(K0, 0.0)
    a1 = 0.5 * complex(A, B)
    p = np.empty(5, dtype=np.complex128)
    if abs(a4) > tiny:
        p[0], p[1], p[2], p[3], p[4] = a4, a3, a2, a1, np.conj(a4)
        deg = 4
    elif abs(a3) > tiny:
        p[0], p[1], p[2] = a3, a2, a1
        deg = 2
    else:
        return 0
    z = np.empty(4, dtype=np.complex128)
    _poly_roots(p, deg, z)
    n = 0
    for i in range(deg):
        zi = z[i]
        if zi == 0.0 or not np.isfinite(zi.real) or not np.isfinite(zi.imag):
            continue
        out[n] = math.atan2(zi.imag, zi.real)
        n += 1
    return n


@numba.njit(cache=True)
def _poly_roots(p: np.ndarray, deg: int, z: np.ndarray) -> None:  # pragma: no cover - compiled
    """Approximate roots of ``p[0] z^deg + ... + p[deg]`` (``p[0] != 0``) into ``z[:deg]``.

    The Aberth-Ehrlich iteration (simultaneous Newton steps, each deflated by the other roots:
    ``z_i <- z_i - w_i``, ``w_i = (p/p')(z_i) / (1 - (p/p')(z_i) sum_{k != i} 1 / (z_i - z_k))``),
    started on a circle of radius ``|p[deg] / p[0]|^(1/deg)`` (the geometric mean of the roots'
    moduli), at most 100 rounds, stopping when every relative correction is below 1e-15. Cubic
    convergence at simple roots, linear at multiple ones; the callers polish each angle by
    Newton's method on ``h`` and judge candidates by their residual, so a rough root only costs a
    few more Newton steps. Unlike ``np.roots`` (companion matrix + LAPACK, ~7 us) it allocates
    nothing and takes well under a microsecond on a quartic.
    """
    lead = p[0]
    rad = abs(p[deg] / lead) ** (1.0 / deg)
    if not (rad > 0.0 and np.isfinite(rad)):
        rad = 1.0
    for i in range(deg):
        ang = 2.0 * math.pi * i / deg + 0.4
        z[i] = rad * complex(math.cos(ang), math.sin(ang))
    for _ in range(100):
        worst = 0.0
        for i in range(deg):
            zi = z[i]
            f = p[0]
            df = 0.0j
            for k in range(1, deg + 1):
                df = df * zi + f
                f = f * zi + p[k]
            if f == 0.0:
                continue
            s = 0.0j
            for k in range(deg):
                if k != i:
                    d = zi - z[k]
                    if d != 0.0:
                        s += 1.0 / d
            # w = (f / f') / (1 - (f / f') s) = 1 / (f' / f - s); f' = 0 leaves the deflation alone
            den = df / f - s if df != 0.0 else -s
            if den == 0.0:
                continue
            w = 1.0 / den
            z[i] = zi - w
            rel = abs(w) / (1.0 + abs(zi))
            if rel > worst:
                worst = rel
        if not worst > 1e-15:
            break


# ---------------------------------------------------------------------------------------------
# small dense helpers
# ---------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _inv_apply(W, b0, b1, b2):  # pragma: no cover - compiled
    """``W^{-1} b`` by cofactors; ``ok`` is False when ``|det W|`` is negligible."""
    c00 = W[1, 1] * W[2, 2] - W[1, 2] * W[2, 1]
    c01 = W[1, 2] * W[2, 0] - W[1, 0] * W[2, 2]
    c02 = W[1, 0] * W[2, 1] - W[1, 1] * W[2, 0]
    det = W[0, 0] * c00 + W[0, 1] * c01 + W[0, 2] * c02
    n0 = abs(W[0, 0]) + abs(W[0, 1]) + abs(W[0, 2])
    n1 = abs(W[1, 0]) + abs(W[1, 1]) + abs(W[1, 2])
    n2 = abs(W[2, 0]) + abs(W[2, 1]) + abs(W[2, 2])
    if not abs(det) > 1e-13 * n0 * n1 * n2:
        return False, 0.0, 0.0, 0.0
    c10 = W[0, 2] * W[2, 1] - W[0, 1] * W[2, 2]
    c11 = W[0, 0] * W[2, 2] - W[0, 2] * W[2, 0]
    c12 = W[0, 1] * W[2, 0] - W[0, 0] * W[2, 1]
    c20 = W[0, 1] * W[1, 2] - W[0, 2] * W[1, 1]
    c21 = W[0, 2] * W[1, 0] - W[0, 0] * W[1, 2]
    c22 = W[0, 0] * W[1, 1] - W[0, 1] * W[1, 0]
    x0 = (c00 * b0 + c10 * b1 + c20 * b2) / det
    x1 = (c01 * b0 + c11 * b1 + c21 * b2) / det
    x2 = (c02 * b0 + c12 * b1 + c22 * b2) / det
    return True, x0, x1, x2


@numba.njit(cache=True)
def _solve3(W, b0, b1, b2):  # pragma: no cover - compiled
    """``(ok, x) = W^{-1} b`` for a 3x3 ``W`` with one step of iterative refinement."""
    ok, x0, x1, x2 = _inv_apply(W, b0, b1, b2)
    if not ok:
        return False, 0.0, 0.0, 0.0
    e0 = b0 - (W[0, 0] * x0 + W[0, 1] * x1 + W[0, 2] * x2)
    e1 = b1 - (W[1, 0] * x0 + W[1, 1] * x1 + W[1, 2] * x2)
    e2 = b2 - (W[2, 0] * x0 + W[2, 1] * x1 + W[2, 2] * x2)
    ok, d0, d1, d2 = _inv_apply(W, e0, e1, e2)
    return True, x0 + d0, x1 + d1, x2 + d2


@numba.njit(cache=True)
def _norm3(a: float, b: float, c: float) -> float:  # pragma: no cover - compiled
    """The Euclidean norm of ``(a, b, c)``."""
    return math.sqrt(a * a + b * b + c * c)


# ---------------------------------------------------------------------------------------------
# the cone (fc3d) local problem
# ---------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def cone_residual(W: np.ndarray, q: np.ndarray, mu: float, r0: float, r1: float,
                  r2: float) -> tuple[float, float]:  # pragma: no cover - compiled
    """Local natural-map residual ``||r - P_K(r - u_hat)||`` of ``r = (r0, r1, r2)`` for one contact
    (``u = W r + q``, ``u_hat = u + mu ||u_T|| e_n``) and its scale ``max(||q||, ||r||, ||u||)``."""
    u0 = W[0, 0] * r0 + W[0, 1] * r1 + W[0, 2] * r2 + q[0]
    u1 = W[1, 0] * r0 + W[1, 1] * r1 + W[1, 2] * r2 + q[1]
    u2 = W[2, 0] * r0 + W[2, 1] * r1 + W[2, 2] * r2 + q[2]
    ut = math.sqrt(u1 * u1 + u2 * u2)
    n = r0 - (u0 + mu * ut)
    t1 = r1 - u1
    t2 = r2 - u2
    s = math.sqrt(t1 * t1 + t2 * t2)
    if s <= mu * n:
        p0, p1, p2 = n, t1, t2
    elif mu * s <= -n:
        p0 = p1 = p2 = 0.0
    else:
        a = (n + mu * s) / (1.0 + mu * mu)
        p0, p1, p2 = a, mu * a * t1 / s, mu * a * t2 / s
    res = _norm3(r0 - p0, r1 - p1, r2 - p2)
    scale = max(_norm3(q[0], q[1], q[2]), _norm3(r0, r1, r2), _norm3(u0, u1, u2))
    if not np.isfinite(res):
        res = np.inf
    return res, scale


@numba.njit(cache=True)
def _slide_point(W, q, mu, t):  # pragma: no cover - compiled
    """The sliding candidate for angle ``t``: ``r = r_n (1, -mu cos t, -mu sin t)``, ``u_n = 0``."""
    c, s = math.cos(t), math.sin(t)
    den = W[0, 0] - mu * (W[0, 1] * c + W[0, 2] * s)
    if not den > 0.0:
        return np.nan, np.nan, np.nan
    rn = -q[0] / den
    return rn, -mu * rn * c, -mu * rn * s


@numba.njit(cache=True)
def solve_cone_local(W: np.ndarray, q: np.ndarray, mu: float, r_prev: np.ndarray,
                     out: np.ndarray) -> float:  # pragma: no cover - compiled
    """Solve the one-contact fc3d problem (W 3x3, q, mu) exactly; write ``r`` into ``out``.

    ``r_prev`` (3) gives the warm start angle of the sliding case. Returns the local residual
    ``||r - P_K(r - u_hat)||`` of the returned ``r`` (0 up to round-off when solved).
    """
    # separation: r = 0 solves iff q_n >= 0 (residual exactly 0)
    if q[0] >= 0.0:
        out[0] = out[1] = out[2] = 0.0
        return 0.0
    if mu == 0.0:  # K is the normal ray: r_n = -q_n / W_nn, r_T = 0
        if W[0, 0] > 0.0:
            out[0], out[1], out[2] = -q[0] / W[0, 0], 0.0, 0.0
            res, sc = cone_residual(W, q, mu, out[0], 0.0, 0.0)
            return res
    best = np.inf
    # sticking: u = 0
    ok, x0, x1, x2 = _solve3(W, -q[0], -q[1], -q[2])
    if ok:
        res, sc = cone_residual(W, q, mu, x0, x1, x2)
        if res < best:
            best, out[0], out[1], out[2] = res, x0, x1, x2
            if res <= ACCEPT * sc:
                return best
    # sliding: coefficients of U = den * u_T (module doc)
    qn = q[0]
    x0 = -qn * W[1, 0] + q[1] * W[0, 0]
    x1 = mu * (qn * W[1, 1] - q[1] * W[0, 1])
    x2 = mu * (qn * W[1, 2] - q[1] * W[0, 2])
    y0 = -qn * W[2, 0] + q[2] * W[0, 0]
    y1 = mu * (qn * W[2, 1] - q[2] * W[0, 1])
    y2 = mu * (qn * W[2, 2] - q[2] * W[0, 2])
    coefs = _trig_coefs(x0, x1, x2, y0, y1, y2)
    # warm start: the previous friction direction r_T = -mu r_n (cos t, sin t); without one, the
    # direction of the slip velocity u_T = q_T + W_Tn r_n of the frictionless contact r = (r_n, 0, 0),
    # r_n = -q_n / W_nn, which friction opposes (the root that decides most problems: finding every
    # root takes ten times longer)
    pt = math.sqrt(r_prev[1] * r_prev[1] + r_prev[2] * r_prev[2])
    t0 = np.nan
    if pt > 0.0:
        t0 = math.atan2(-r_prev[2], -r_prev[1])
    elif W[0, 0] > 0.0:
        rn = -q[0] / W[0, 0]
        v1, v2 = q[1] + W[1, 0] * rn, q[2] + W[2, 0] * rn
        if v1 != 0.0 or v2 != 0.0:
            t0 = math.atan2(v2, v1)
    if t0 == t0:
        t, _ = _newton_angle(coefs, t0)
        c0, c1, c2 = _slide_point(W, q, mu, t)
        res, sc = cone_residual(W, q, mu, c0, c1, c2)
        if res < best:
            best, out[0], out[1], out[2] = res, c0, c1, c2
            if res <= ACCEPT * sc:
                return best
    # every root of the angle equation
    starts = np.empty(8)
    nroot = _all_angles(coefs, starts)
    for i in range(nroot):
        t, _ = _newton_angle(coefs, starts[i])
        c0, c1, c2 = _slide_point(W, q, mu, t)
        res, sc = cone_residual(W, q, mu, c0, c1, c2)
        if res < best:
            best, out[0], out[1], out[2] = res, c0, c1, c2
    if not best < np.inf:
        # nothing usable (singular W_jj with no sliding root): fall back to separation
        out[0] = out[1] = out[2] = 0.0
        best, sc = cone_residual(W, q, mu, 0.0, 0.0, 0.0)
    return best


# ---------------------------------------------------------------------------------------------
# the cylinder (Tresca) local problem
# ---------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def cylinder_residual(W: np.ndarray, b: np.ndarray, s: float, r0: float, r1: float,
                      r2: float) -> tuple[float, float]:  # pragma: no cover - compiled
    """Local Tresca residual ``||r - P_C(r - u)||`` of ``r = (r0, r1, r2)`` (``u = W r + b``,
    ``C = R_+ x D(s)``, ``D(s)`` the disc of radius ``s``) and its scale ``max(||b||, ||r||, ||u||)``."""
    u0 = W[0, 0] * r0 + W[0, 1] * r1 + W[0, 2] * r2 + b[0]
    u1 = W[1, 0] * r0 + W[1, 1] * r1 + W[1, 2] * r2 + b[1]
    u2 = W[2, 0] * r0 + W[2, 1] * r1 + W[2, 2] * r2 + b[2]
    n = r0 - u0
    p0 = n if n > 0.0 else 0.0
    t1 = r1 - u1
    t2 = r2 - u2
    nt = math.sqrt(t1 * t1 + t2 * t2)
    if nt > s:
        f = s / nt
        t1 *= f
        t2 *= f
    res = _norm3(r0 - p0, r1 - t1, r2 - t2)
    scale = max(_norm3(b[0], b[1], b[2]), _norm3(r0, r1, r2), _norm3(u0, u1, u2))
    if not np.isfinite(res):
        res = np.inf
    return res, scale


@numba.njit(cache=True)
def solve_cylinder_local(W: np.ndarray, b: np.ndarray, s: float, r_prev: np.ndarray,
                         out: np.ndarray) -> float:  # pragma: no cover - compiled
    """Solve the one-contact Tresca problem (W 3x3, b, friction bound s) exactly into ``out``.

    Returns the local residual ``||r - P_C(r - u)||`` of the returned ``r``.
    """
    if not s > 0.0:  # r_T = 0: the scalar LCP of the normal
        rn = -b[0] / W[0, 0] if W[0, 0] > 0.0 else 0.0
        out[0], out[1], out[2] = max(rn, 0.0), 0.0, 0.0
        res, sc = cylinder_residual(W, b, 0.0, out[0], 0.0, 0.0)
        return res
    best = np.inf
    # (a) r_n > 0 free, u = 0
    ok, x0, x1, x2 = _solve3(W, -b[0], -b[1], -b[2])
    if ok:
        res, sc = cylinder_residual(W, b, s, x0, x1, x2)
        if res < best:
            best, out[0], out[1], out[2] = res, x0, x1, x2
            if res <= ACCEPT * sc:
                return best
    # (b) r_n = 0, u_T = 0
    det = W[1, 1] * W[2, 2] - W[1, 2] * W[2, 1]
    if det != 0.0:
        x1 = (-b[1] * W[2, 2] + b[2] * W[1, 2]) / det
        x2 = (-b[2] * W[1, 1] + b[1] * W[2, 1]) / det
        res, sc = cylinder_residual(W, b, s, 0.0, x1, x2)
        if res < best:
            best, out[0], out[1], out[2] = res, 0.0, x1, x2
            if res <= ACCEPT * sc:
                return best
    # (c) u_n = 0 and (d) r_n = 0, with r_T = s (cos t, sin t)
    w00 = W[0, 0]
    if w00 > 0.0:
        rho0 = -b[0] / w00
        rho1 = -s * W[0, 1] / w00
        rho2 = -s * W[0, 2] / w00
    else:
        rho0 = rho1 = rho2 = np.nan
    cc = _trig_coefs(
        b[1] + W[1, 0] * rho0, W[1, 0] * rho1 + s * W[1, 1], W[1, 0] * rho2 + s * W[1, 2],
        b[2] + W[2, 0] * rho0, W[2, 0] * rho1 + s * W[2, 1], W[2, 0] * rho2 + s * W[2, 2],
    )
    cd = _trig_coefs(b[1], s * W[1, 1], s * W[1, 2], b[2], s * W[2, 1], s * W[2, 2])
    # warm start: Newton from the previous angle, in the case the previous r_n points to
    pt = math.sqrt(r_prev[1] * r_prev[1] + r_prev[2] * r_prev[2])
    if pt > 0.0:
        case = 0 if (r_prev[0] > 0.0 and w00 > 0.0) else 1
        t, _ = _newton_angle(cc if case == 0 else cd, math.atan2(r_prev[2], r_prev[1]))
        c, sn = math.cos(t), math.sin(t)
        rn = rho0 + rho1 * c + rho2 * sn if case == 0 else 0.0
        res, sc = cylinder_residual(W, b, s, rn, s * c, s * sn)
        if res < best:
            best, out[0], out[1], out[2] = res, rn, s * c, s * sn
            if res <= ACCEPT * sc:
                return best
    # every root of both angle equations
    starts = np.empty(8)
    for case in range(2):
        if case == 0 and not w00 > 0.0:
            continue
        coefs = cc if case == 0 else cd
        for i in range(_all_angles(coefs, starts)):
            t, _ = _newton_angle(coefs, starts[i])
            c, sn = math.cos(t), math.sin(t)
            rn = rho0 + rho1 * c + rho2 * sn if case == 0 else 0.0
            res, sc = cylinder_residual(W, b, s, rn, s * c, s * sn)
            if res < best:
                best, out[0], out[1], out[2] = res, rn, s * c, s * sn
    if not best < np.inf:
        out[0] = out[1] = out[2] = 0.0
        best, sc = cylinder_residual(W, b, s, 0.0, 0.0, 0.0)
    return best


# ---------------------------------------------------------------------------------------------
# Python entry points (tests, and anyone who needs one contact)
# ---------------------------------------------------------------------------------------------


def _block(W: Any, q: Any, qname: str = "q") -> tuple[np.ndarray, np.ndarray]:
    W = np.ascontiguousarray(W, dtype=np.float64)
    q = np.ascontiguousarray(q, dtype=np.float64).ravel()
    if W.shape != (3, 3) or not np.isfinite(W).all():
        raise InputError("W", f"must be a finite 3 x 3 matrix, got shape {W.shape}")
    if q.shape != (3,) or not np.isfinite(q).all():
        raise InputError(qname, f"must be a finite 3-vector, got shape {q.shape}")
    return W, q


def _one_contact(kernel: Any, W: Any, q: Any, qname: str, bound_name: str, bound: Any,
                 r_prev: Any) -> tuple[np.ndarray, float]:
    """Check the data of one contact, run the compiled local solver ``kernel``; ``(r, residual)``."""
    W, q = _block(W, q, qname)
    bound = check_number(bound_name, bound, nonnegative=True)
    prev = np.zeros(3) if r_prev is None else np.ascontiguousarray(r_prev, dtype=np.float64).ravel()
    if prev.shape != (3,) or not np.isfinite(prev).all():
        raise InputError("r_prev", f"must be a finite 3-vector, got shape {prev.shape}")
    out = np.zeros(3)
    res = kernel(W, q, bound, prev, out)
    return out, float(res)


def one_contact_cone(W: Any, q: Any, mu: float, r_prev: Any = None) -> tuple[np.ndarray, float]:
    """The exact solution ``r`` of fc3d with one contact and its local residual.

    ``r in K_mu``, ``u = W r + q``, ``u + mu ||u_T|| e_n in K_mu^*``, ``r . u_hat = 0``; the residual
    is ``||r - P_K(r - u_hat)||`` (not normalized). ``r_prev`` only seeds the sliding angle.
    """
    return _one_contact(solve_cone_local, W, q, "q", "mu", mu, r_prev)


def one_contact_cylinder(W: Any, b: Any, s: float, r_prev: Any = None) -> tuple[np.ndarray, float]:
    """The exact solution of the one-contact Tresca problem (friction bound ``s``) and its residual
    ``||r - P_C(r - u)||``, ``C = R_+ x D(s)``."""
    return _one_contact(solve_cylinder_local, W, b, "b", "s", s, r_prev)
