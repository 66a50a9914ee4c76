"""What the velocity-level step blocks share (the pyramid, the cone, the compliant cone, and any
formulation of one's own written the same way): the checked step inputs ``(M, f, v, phi, mu)``,
the dynamics row ``M (v+ - v) - h f - J_n^T p_n - friction = 0``, the non-penetration side (the
``gap`` option: :data:`GAPS`) and a block's friction coefficients as numbers.
"""
from __future__ import annotations

from typing import Any, Callable

import casadi as ca
import numpy as np

from contactmp.errors import InputError, check_spd
from contactmp.formulations.base import Step
from contactmp.program import Constraint, Program


#: the values of the velocity-level formulations' ``gap`` option: the non-penetration side is
#: ``phi(q) / h + Jn(q) v+`` (``"linear"``) or ``phi(q + h qdot(q, v+)) / h`` (``"position"``)
GAPS = ("linear", "position")


def check_gap(gap: Any, gap_stabilization: Any) -> None:
    """InputError unless ``gap`` is one of :data:`GAPS` and ``gap_stabilization`` a bool that is
    True when ``gap == "position"`` (the gap itself has no unstabilized form)."""
    if not isinstance(gap_stabilization, (bool, np.bool_)):
        raise InputError("gap_stabilization", f"must be True or False, got {gap_stabilization!r}")
    if gap not in GAPS:
        raise InputError("gap", f"must be one of {', '.join(map(repr, GAPS))}, got {gap!r}")
    if gap == "position" and not gap_stabilization:
        raise InputError("gap", "'position' writes the gap phi(q+) / h itself; it needs gap_stabilization=True")


def normal_rate(vp: Any, Jn: Any, phi: Any, h: float, gap_stabilization: bool,
                gap_rate: Callable[[Any], Any] | None) -> Any:
    """The non-penetration side of a velocity-level block at ``v+ = vp``: ``gap_rate(vp)`` when
    given, else ``Jn v+ + phi / h`` (``Jn v+`` without ``gap_stabilization``)."""
    if gap_rate is not None:
        return gap_rate(vp)
    return ca.mtimes(Jn, vp) + (phi / h if gap_stabilization else 0)


def normal_side(step: Step, gap: str) -> Callable[[Any], Any] | None:
    """The non-penetration side as a function of ``v+`` for the ``gap`` option (None: the block's
    default, ``phi / h + Jn v+`` at the step's data)."""
    return step.end_gap_rate if gap == "position" else None


def matrix(value: Any, shape: tuple[int, int], field: str) -> Any:
    """``value`` as a matrix of ``shape`` (a CasADi matrix as it is, numbers as a finite float array; a
    vector is read as a column): InputError naming ``field`` for another shape or NaN/inf."""
    if isinstance(value, (ca.SX, ca.MX, ca.DM)):
        if value.shape != shape:
            raise InputError(field, f"must have shape {shape}, got {value.shape}")
        return value
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 1 and shape[1] == 1:
        arr = arr.reshape(-1, 1)
    if arr.shape != shape:
        raise InputError(field, f"must have shape {shape}, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError(field, "contains NaN or inf")
    return arr


def step_inputs(M: Any, f: Any, v: Any, phi: Any, mu: Any, nc: int, nv: int) -> tuple[Any, ...]:
    """``(M, f, v, phi, mu)`` of one velocity-level step, shape-checked (numbers or CasADi); a numeric
    ``M`` must be symmetric positive definite and a numeric ``mu`` nonnegative."""
    M_ = matrix(M, (nv, nv), "M")
    check_spd(M_)
    f_ = matrix(f, (nv, 1), "f")
    v_ = matrix(v, (nv, 1), "v")
    phi_ = matrix(phi, (nc, 1), "phi")
    mu_ = matrix(mu, (nc, 1), "mu")
    if isinstance(mu_, np.ndarray) and (mu_ < 0).any():
        raise InputError("mu", "friction coefficients must be >= 0")
    return M_, f_, v_, phi_, mu_


def dynamics_row(prog: Program, prefix: str, M: Any, f: Any, v: Any, h: float, vp: Any, Jn: Any, p_n: Any,
                 friction: Any) -> Constraint:
    """The dynamics every velocity-level step shares, ``M (v+ - v) - h f - J_n^T p_n - friction = 0``,
    where ``friction`` is the generalized friction impulse of the step's friction law."""
    residual = ca.mtimes(M, vp - v) - h * f - ca.mtimes(Jn.T, p_n) - friction
    return prog.add_constraint(residual, 0.0, 0.0, name=f"{prefix}/dynamics", block=prefix)


def numeric_mu(mu: Any, n: int) -> np.ndarray:
    """``mu`` as ``n`` floats (NaN when it is a symbolic expression)."""
    try:
        return np.asarray(ca.DM(ca.evalf(mu)) if isinstance(mu, (ca.SX, ca.MX)) else mu, dtype=float).reshape(n)
    except RuntimeError:
        return np.full(n, np.nan)
