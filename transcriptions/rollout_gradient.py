"""Derivatives of a simulated trajectory with respect to its initial state and its inputs.

:func:`differentiable_rollout` runs :class:`~contactmp.transcriptions.time_stepping.TimeStepping`
from ``(q_0, v_0)`` under the inputs ``u_0 .. u_{N-1}`` and keeps, for every step, its Jacobian
``d(q, v)_{k+1} / d(q_k, v_k, u_k)`` (:func:`~contactmp.formulations.step_sensitivity.step_jacobian`:
implicit differentiation of the step's complementarity conditions on its identified pieces). The
chain rule through the steps gives

* forward products (:meth:`Rollout.jvp`): ``d(q, v)_k`` for a change of ``(q_0, v_0, u)``;
* the adjoint (:meth:`Rollout.vjp`), for a scalar loss ``L(q_0..q_N, v_0..v_N, u)``: with
  ``lambda_N = dL/d(q, v)_N``, ``lambda_k = dL/d(q, v)_k + A_k^T lambda_{k+1}`` and
  ``dL/du_k = (dL/du_k)_direct + B_k^T lambda_{k+1}`` (``A_k``, ``B_k`` the step's state and input
  Jacobians), so the gradient with respect to every input costs one backward sweep.

A step whose pieces are degenerate (a contact exactly at a switch) is differentiated on the
documented piece and listed in :attr:`Rollout.flagged_steps`: the gradient is then one-sided.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError
from contactmp.formulations.step_sensitivity import StepJacobian, step_jacobian
from contactmp.transcriptions.time_stepping import TimeStepping

__all__ = ["Rollout", "differentiable_rollout"]


@dataclass
class Rollout:
    """A simulated trajectory ``q`` (N+1, n_q), ``v`` (N+1, n_v) under ``u`` (N, n_u), with the
    Jacobian of each step (``jacobians``: :class:`StepJacobian`, before TimeStepping's quaternion
    renormalization of a 3D body; the products :meth:`jvp` and :meth:`vjp` include it), the solve status of each step (``statuses``) and the model parameters it is
    differentiated by (``wrt``, each with one value per contact)."""

    q: np.ndarray
    v: np.ndarray
    u: np.ndarray
    jacobians: list[StepJacobian]
    statuses: list[str]
    wrt: tuple[str, ...] = ()
    _A: list[np.ndarray] = field(default_factory=list, repr=False)
    _B: list[np.ndarray] = field(default_factory=list, repr=False)
    _C: list[dict[str, np.ndarray]] = field(default_factory=list, repr=False)

    @property
    def n_steps(self) -> int:
        """Number of steps ``N``."""
        return len(self.jacobians)

    @property
    def flagged_steps(self) -> list[int]:
        """The steps differentiated at a degenerate or singular point (one-sided there)."""
        return [k for k, J in enumerate(self.jacobians) if J.flagged]

    def jvp(self, dq0: ArrayLike | None = None, dv0: ArrayLike | None = None,
            du: ArrayLike | None = None, dparams: dict[str, ArrayLike] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(dq, dv)`` along the whole trajectory ((N+1, n_q), (N+1, n_v)) for the change
        ``(dq0, dv0, du, dparams)`` (None: zero) of the initial state, the inputs and the model
        parameters of ``wrt`` (by name, one value per contact)."""
        nq, nv = self.q.shape[1], self.v.shape[1]
        dx = np.concatenate([np.zeros(nq) if dq0 is None else _arr("dq0", dq0, (nq,)),
                             np.zeros(nv) if dv0 is None else _arr("dv0", dv0, (nv,))])
        dU = np.zeros_like(self.u) if du is None else _arr("du", du, self.u.shape)
        dth = {}
        for name, val in (dparams or {}).items():
            if name not in self.wrt:
                raise InputError("dparams", f"{name!r} is not a parameter of this rollout (wrt = {self.wrt})")
            dth[name] = _arr(f"dparams[{name!r}]", val, (self._C[0][name].shape[1],) if self._C else (0,))
        out = [dx]
        for k in range(self.n_steps):
            dx = self._A[k] @ dx + self._B[k] @ dU[k] + sum((self._C[k][n] @ d for n, d in dth.items()), np.zeros(nq + nv))
            out.append(dx)
        X = np.array(out)
        return X[:, :nq], X[:, nq:]

    def vjp(self, q_bar: ArrayLike | None = None, v_bar: ArrayLike | None = None,
            u_bar: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The gradient ``(dL/dq_0, dL/dv_0, dL/du)`` of a loss whose partial derivatives with
        respect to the trajectory are ``q_bar`` (N+1, n_q), ``v_bar`` (N+1, n_v) and ``u_bar``
        (N, n_u) (None: zero), by the adjoint sweep of the module docstring; the gradient with
        respect to the model parameters of ``wrt`` is :meth:`param_vjp` (the same sweep)."""
        q0, v0, gu, _ = self._adjoint(q_bar, v_bar, u_bar)
        return q0, v0, gu

    def param_vjp(self, q_bar: ArrayLike | None = None, v_bar: ArrayLike | None = None) -> dict[str, np.ndarray]:
        """``dL/dtheta`` by name (one entry per contact) for the model parameters of ``wrt``:
        ``sum_k C_k^T lambda_{k+1}`` with ``C_k`` the step's parameter Jacobian."""
        return self._adjoint(q_bar, v_bar, None)[3]

    def _adjoint(self, q_bar: ArrayLike | None, v_bar: ArrayLike | None, u_bar: ArrayLike | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        nq, nv, N = self.q.shape[1], self.v.shape[1], self.n_steps
        Qb = np.zeros_like(self.q) if q_bar is None else _arr("q_bar", q_bar, self.q.shape)
        Vb = np.zeros_like(self.v) if v_bar is None else _arr("v_bar", v_bar, self.v.shape)
        gu = np.zeros_like(self.u) if u_bar is None else _arr("u_bar", u_bar, self.u.shape).copy()
        lam = np.concatenate([Qb[N], Vb[N]])
        gth = {name: np.zeros(self._C[0][name].shape[1]) for name in self.wrt} if self._C else {}
        for k in range(N - 1, -1, -1):
            gu[k] += self._B[k].T @ lam
            for name in gth:
                gth[name] += self._C[k][name].T @ lam
            lam = self._A[k].T @ lam + np.concatenate([Qb[k], Vb[k]])
        return lam[:nq], lam[nq:], gu, gth


def differentiable_rollout(ts: TimeStepping, q0: ArrayLike, v0: ArrayLike, u: ArrayLike, *,
                           wrt: Sequence[str] = (), side: str = "a", tol: float = 1e-8,
                           smoothing: float = 0.0, relaxed: bool = False) -> Rollout:
    """Simulate ``len(u)`` steps of ``ts`` from ``(q0, v0)`` under the inputs ``u`` (N, n_u) and
    differentiate each step (module docstring), also with respect to the model parameters ``wrt``
    (those the formulation declares, :attr:`~contactmp.formulations.base.Formulation.model_parameters`:
    ``mu``, the compliant gains). ``smoothing = kappa > 0``: every step's derivative is that of its relaxed problem
    (pairs ``a b = kappa``; :func:`~contactmp.formulations.step_sensitivity.program_sensitivity`):
    the trajectory is still the exact simulator's, its gradient that of a smoothed model, which
    sees contacts about to open or close (a gradient for gradient-based control through contact
    switches, as Dojo's). ``relaxed=True`` as well: the trajectory itself is that of the smoothed
    model -- each step's ``(q, v)_{k+1}`` is the relaxed step's solution (every pair ``a b = kappa``,
    found by Newton's method from the exact step's), so the rollout is a smooth function of the
    inputs and the gradient is its exact gradient (the smoothed-dynamics homotopy of Pang et al.
    2023: a shooting method may solve at a sequence of ``kappa`` down to the exact model). A relaxed
    step whose Newton solve does not converge is flagged (:attr:`Rollout.flagged_steps`). A step that is not solved is not hidden: its status is kept in ``statuses`` and its
    Jacobian is that of the returned point (a returned point that is not finite has none: InputError
    naming ``x``)."""
    s = ts.system
    q = s._vec("q0", q0, s.n_q)
    v = s._vec("v0", v0, s.n_v)
    U = np.asarray(u, dtype=float)
    if U.ndim != 2 or U.shape[1] != s.n_u or not np.isfinite(U).all():
        raise InputError("u", f"must be a finite (N, {s.n_u}) array of inputs, got shape {U.shape}")
    qs, vs, jacs, statuses, As, Bs, Cs = [q], [v], [], [], [], [], []
    for k in range(U.shape[0]):
        out = ts.step(q, v, U[k])
        J = step_jacobian(ts.formulation, s, ts.h, q, v, U[k], out, wrt=wrt, side=side, tol=tol, smoothing=smoothing,
                          relaxed=relaxed)
        A, B, C = J.state(), J.input(), {name: J.param(name) for name in wrt}
        v_next = J.v_next if relaxed else out.v
        if relaxed or ts._quat is not None:
            q_raw = q + ts.h * s.eval_qdot(q, v_next)
        if ts._quat is not None:  # TimeStepping renormalizes the quaternion: chain d(x / |x|)
            R = _renormalization(q_raw, ts._quat, s.n_q, s.n_v)
            A, B, C = R @ A, R @ B, {name: R @ c for name, c in C.items()}
        if relaxed:  # the relaxed step's own next state, renormalized as TimeStepping does
            q, v = q_raw, v_next
            ts.renormalize(q)
        else:
            q, v = out.q, out.v
        qs.append(q), vs.append(v), jacs.append(J), statuses.append(out.result.status.value)
        As.append(A), Bs.append(B), Cs.append(C)
    return Rollout(np.array(qs), np.array(vs), U, jacs, statuses, tuple(wrt), As, Bs, Cs)


def _renormalization(q_raw: np.ndarray, quat: slice, nq: int, nv: int) -> np.ndarray:
    """``d(q with q[quat] / |q[quat]|, v) / d(q, v)`` at the unnormalized ``q_raw``."""
    R = np.eye(nq + nv)
    x = q_raw[quat]
    n = float(np.linalg.norm(x))
    if n > 0:
        xh = x / n
        R[quat, quat] = (np.eye(x.size) - np.outer(xh, xh)) / n
    return R


def _arr(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    a = np.asarray(value, dtype=float)
    if a.shape != shape or not np.isfinite(a).all():
        raise InputError(name, f"must be a finite array of shape {shape}, got {a.shape}")
    return a
