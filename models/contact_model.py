"""Contacts and the assembled instantaneous contact model (Trinkle, Pang, Sudarsky, Lo 1995, sec. 2-3).

Conventions (the paper's, made precise):

* Contact ``j`` touches bodies ``i`` and ``k``. Its frame ``C_j = [n t o]`` (world columns,
  ``n x t = o``) has the normal ``n`` pointing *into body i*; ``c_j = (c_n, c_t, c_o)`` is the force
  on body ``i`` in ``C_j`` (the force on ``k`` is ``-c_j``), so ``c_n >= 0`` is compressive.
* The relative velocity is that of ``i`` with respect to ``k`` at the contact point, in ``C_j``:
  ``v_j = C_j^T (v_i(p) - v_k(p))``, hence ``v = W^T qdot - J ldot`` (6), with ``W`` the wrench
  matrix of the objects (block ``W_ij = [C; r_i x C]`` for ``i``, ``-[C; r_k x C]`` for ``k``) and
  ``J`` the manipulator Jacobian rows (``C^T (J_v,k(p) - J_v,i(p))``). By virtual power the
  contact's generalized forces are ``W c`` on the objects and ``-J^T c`` on the joints, which are
  the signs of (4) and (5).
* Rows and columns are grouped as in the paper: ``c = (c_n, c_t, c_o)``, each of length ``n_c``,
  ``W = [W_n W_t W_o]`` (``6 n_obj x 3 n_c``), ``J = [J_n; J_t; J_o]`` (``3 n_c x n_l``).
* The relative acceleration ``a_j`` is the derivative of ``v_j`` along the motion, where the
  contact point follows the material point of the *point body* and the frame ``C_j`` turns with the
  *face body* (``Contact.face``: the body whose face carries the contact, e.g. the ground under a
  box corner, or the box face under a fingertip). Rigid-body kinematics then gives
  ``a_j = C^T (acc_i(p) - acc_k(p) - 2 omega_f x (v_i(p) - v_k(p)))`` where ``acc_b(p)`` is the
  acceleration of the material point of ``b`` at ``p`` and ``omega_f`` the face body's angular
  velocity. Its normal component is the second derivative of the gap of a vertex on a face, so
  (9) ``a_n >= 0`` is the right non-penetration condition. Writing ``acc_b(p)`` as the
  ``qddot``/``lddot`` part plus a velocity-product part gives (6):
  ``a = W^T qddot - J lddot + (Wdot^T qdot - Jdot ldot)``, the last term :attr:`ContactModel.bias`
  (``omega x (omega x r)`` for objects, ``Jdot_v ldot`` for links, and the Coriolis term
  ``-2 C^T (omega_f x v_rel)``).
* (24)-(26): ``a = A c + b``, ``A = J_sys^T Minv J_sys`` with ``J_sys = [W; J^T]`` and
  ``Minv = diag(M_obj^{-1}, M_man^{-1})``, and
  ``b = bias + J_sys^T Minv [g_obj + h_obj; g_man + h_man - tau]``.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Literal, Sequence

import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError
from contactmp.models.rigid_bodies import BodyRef, Manipulator, RigidBody, as_array, as_body_ref, cross

_FRAME_TOL = 1e-9


@dataclass(eq=False)
class Contact:
    """Contact ``j`` between bodies ``i`` and ``k`` (see the module docstring for the conventions).

    Attributes
    ----------
    body_i, body_k : BodyRef | int | "ground"
        The two bodies (an int is an object index). The normal points into ``body_i``.
    point : (3,) array
        Contact point (world).
    normal, tangent : (3,) arrays
        ``n`` and ``t`` (world, orthonormal). ``o = n x t``.
    mu : float
        Friction coefficient ``mu_j >= 0``.
    face : "i" or "k"
        Which body's face carries the contact (the frame turns with it; the other body's material
        point is the contact point). Default ``"k"`` (e.g. a corner of ``i`` on a face of ``k``).
    other : (3,) array or None
        ``o``; when given it must equal ``n x t``.
    """

    body_i: BodyRef | int | str
    body_k: BodyRef | int | str
    point: ArrayLike
    normal: ArrayLike
    tangent: ArrayLike
    mu: float = 0.5
    face: Literal["i", "k"] = "k"
    other: ArrayLike | None = None

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "") -> None:
        """Convert and check the fields; errors name ``prefix + field``."""
        self.body_i = as_body_ref(self.body_i, prefix + "body_i")
        self.body_k = as_body_ref(self.body_k, prefix + "body_k")
        if self.body_i == self.body_k:
            raise InputError(prefix + "body_k", "a contact needs two different bodies")
        self.point = as_array(self.point, (3,), prefix + "point")
        self.normal = as_array(self.normal, (3,), prefix + "normal")
        self.tangent = as_array(self.tangent, (3,), prefix + "tangent")
        n, t = self.normal, self.tangent
        if abs(np.linalg.norm(n) - 1.0) > _FRAME_TOL:
            raise InputError(prefix + "normal", "must be a unit vector")
        if abs(np.linalg.norm(t) - 1.0) > _FRAME_TOL:
            raise InputError(prefix + "tangent", "must be a unit vector")
        if abs(float(n @ t)) > _FRAME_TOL:
            raise InputError(prefix + "tangent", "must be orthogonal to the normal")
        o = cross(n, t)
        if self.other is not None:
            given = as_array(self.other, (3,), prefix + "other")
            if np.abs(given - o).max() > _FRAME_TOL:
                raise InputError(prefix + "other", "must equal normal x tangent (n x t = o)")
        self.other = o
        try:
            mu = float(self.mu)
        except (TypeError, ValueError):
            raise InputError(prefix + "mu", f"must be a number, got {self.mu!r}") from None
        if not np.isfinite(mu) or mu < 0.0:
            raise InputError(prefix + "mu", f"must be finite and >= 0, got {self.mu!r}")
        self.mu = mu
        if self.face not in ("i", "k"):
            raise InputError(prefix + "face", f"must be 'i' or 'k', got {self.face!r}")

    @property
    def frame(self) -> np.ndarray:
        """``C_j = [n t o]`` (3 x 3, world columns)."""
        return np.column_stack([self.normal, self.tangent, self.other])


@dataclass
class StackedSolution:
    """What every formulation's solution holds: the forces ``c_n, c_t, c_o`` and contact accelerations
    ``a_n, a_t, a_o`` (one entry per contact, model order), the body and joint accelerations
    ``qddot`` (``6 n_obj``) and ``lddot`` (``n_l``), and ``modes[j]``: ``"breaking"`` (``a_jn > tol``),
    ``"rolling"`` (a rolling contact with ``a_jT = 0``) or ``"sliding"`` (see
    :meth:`ContactModel.solution_fields`)."""

    c_n: np.ndarray
    c_t: np.ndarray
    c_o: np.ndarray
    a_n: np.ndarray
    a_t: np.ndarray
    a_o: np.ndarray
    qddot: np.ndarray
    lddot: np.ndarray
    modes: list[str]

    @property
    def c(self) -> np.ndarray:
        """``(c_n, c_t, c_o)`` stacked (the model's ``3 n_c`` ordering)."""
        return np.concatenate([self.c_n, self.c_t, self.c_o])

    @property
    def a(self) -> np.ndarray:
        """``(a_n, a_t, a_o)`` stacked."""
        return np.concatenate([self.a_n, self.a_t, self.a_o])


@dataclass(eq=False)
class ContactModel:
    """The instantaneous multi-rigid-body contact problem: data of (4)-(9) and (24)-(26).

    Build it from objects, contacts and an optional manipulator; the assembled arrays are computed
    once (see the module docstring for conventions). ``vel_tol`` is the tolerance (relative to
    ``max(1, max |v|)``) for (7) ``v_n = 0`` and for classifying a contact as rolling (8).

    Attributes (computed)
    ---------------------
    n_obj, n_l, n_c : int
    W : (6 n_obj, 3 n_c)            ``[W_n W_t W_o]``
    J : (3 n_c, n_l)                ``[J_n; J_t; J_o]`` (``JT`` is its transpose)
    M_obj, M_man : mass matrices; ``Minv_obj``, ``Minv_man`` their inverses
    g_obj, h_obj : (6 n_obj,)       ``g_man``, ``h_man``, ``tau`` : (n_l,)
    qdot : (6 n_obj,)               ``ldot`` : (n_l,)
    v : (3 n_c,)                    ``(v_n, v_t, v_o)`` by (6)
    bias : (3 n_c,)                 ``Wdot^T qdot - Jdot ldot``
    A : (3 n_c, 3 n_c)              (25), symmetric positive semidefinite
    b : (3 n_c,)                    (26)
    mu : (n_c,)
    rolling, sliding : index arrays ``R`` and ``S``
    """

    objects: Sequence[RigidBody]
    contacts: Sequence[Contact]
    manipulator: Manipulator | None = None
    vel_tol: float = 1e-9
    name: str = ""

    # computed
    W: np.ndarray = field(init=False, repr=False)
    J: np.ndarray = field(init=False, repr=False)
    A: np.ndarray = field(init=False, repr=False)
    b: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.objects = list(self.objects)
        self.contacts = list(self.contacts)
        for i, body in enumerate(self.objects):
            if not isinstance(body, RigidBody):
                raise InputError(f"objects[{i}]", "must be a RigidBody")
            body.validate(prefix=f"objects[{i}].")
        if self.manipulator is not None:
            if not isinstance(self.manipulator, Manipulator):
                raise InputError("manipulator", "must be a Manipulator or None")
            self.manipulator.validate()
        try:
            tol = float(self.vel_tol)
        except (TypeError, ValueError):
            raise InputError("vel_tol", f"must be a number, got {self.vel_tol!r}") from None
        if not np.isfinite(tol) or tol <= 0:
            raise InputError("vel_tol", "must be finite and > 0")
        self.vel_tol = tol
        for j, c in enumerate(self.contacts):
            if not isinstance(c, Contact):
                raise InputError(f"contacts[{j}]", "must be a Contact")
            c.validate(prefix=f"contacts[{j}].")
            for side in ("i", "k"):
                self._check_ref(getattr(c, "body_" + side), f"contacts[{j}].body_{side}")
            if c.body_i.kind == "ground" and c.body_k.kind == "ground":
                raise InputError(f"contacts[{j}]", "touches the ground twice")
        self._assemble()
        self._classify()

    # -----------------------------------------------------------------------------------------
    @property
    def n_obj(self) -> int:
        """Number of passive objects (6 velocity coordinates each)."""
        return len(self.objects)

    @property
    def n_l(self) -> int:
        """Number of manipulator joints (0 without a manipulator)."""
        return 0 if self.manipulator is None else self.manipulator.n_joints

    @property
    def n_c(self) -> int:
        """Number of contacts."""
        return len(self.contacts)

    @property
    def JT(self) -> np.ndarray:
        """``J^T`` (n_l x 3 n_c) of (5)."""
        return self.J.T

    def _check_ref(self, ref: BodyRef, name: str) -> None:
        if ref.kind == "object" and ref.index >= self.n_obj:
            raise InputError(name, f"object {ref.index} does not exist (n_obj = {self.n_obj})")
        if ref.kind == "link" and ref.index >= self.n_l:
            raise InputError(name, f"link {ref.index} does not exist (n_l = {self.n_l})")

    # kinematics of one body at a point ---------------------------------------------------------
    def _kinematics(self, ref: BodyRef, what: str, *p: np.ndarray) -> np.ndarray:
        """``what`` of body ``ref``: ``"point_velocity"`` or ``"point_bias"`` at the point ``p``, or
        ``"angular_velocity"`` (zero for the ground)."""
        if ref.kind == "object":
            value = getattr(self.objects[ref.index], what)
            return value(*p) if p else np.asarray(value)
        if ref.kind == "link":
            assert self.manipulator is not None
            return getattr(self.manipulator, what)(ref.index, *p)
        return np.zeros(3)

    # assembly -------------------------------------------------------------------------------
    def _assemble(self) -> None:
        n_obj, n_l, n_c = self.n_obj, self.n_l, self.n_c
        self.M_obj = np.zeros((6 * n_obj, 6 * n_obj))
        self.Minv_obj = np.zeros((6 * n_obj, 6 * n_obj))
        self.g_obj = np.zeros(6 * n_obj)
        self.h_obj = np.zeros(6 * n_obj)
        self.qdot = np.zeros(6 * n_obj)
        for i, body in enumerate(self.objects):
            s = slice(6 * i, 6 * i + 6)
            Mi = body.mass_matrix
            self.M_obj[s, s] = Mi
            self.Minv_obj[s, s] = np.linalg.inv(Mi)
            self.g_obj[s] = body.wrench
            self.h_obj[s] = body.velocity_product
            self.qdot[s] = body.twist
        man = self.manipulator
        if man is None:
            self.M_man = np.zeros((0, 0))
            self.Minv_man = np.zeros((0, 0))
            self.g_man = self.h_man = self.tau = self.ldot = np.zeros(0)
        else:
            self.M_man = np.asarray(man.mass_matrix)
            self.Minv_man = np.linalg.inv(self.M_man)
            self.Minv_man = 0.5 * (self.Minv_man + self.Minv_man.T)
            self.g_man = np.asarray(man.g_man)
            self.h_man = np.asarray(man.h_man)
            self.tau = np.asarray(man.efforts)
            self.ldot = np.asarray(man.joint_velocities)

        W = np.zeros((6 * n_obj, 3 * n_c))
        J = np.zeros((3 * n_c, n_l))
        bias = np.zeros(3 * n_c)
        v = np.zeros(3 * n_c)
        rows = np.arange(3)
        for j, c in enumerate(self.contacts):
            C = c.frame
            p = np.asarray(c.point)
            cols = j + n_c * rows  # the n, t, o columns of contact j
            for ref, sign in ((c.body_i, 1.0), (c.body_k, -1.0)):
                if ref.kind == "object":
                    body = self.objects[ref.index]
                    r = p - np.asarray(body.position)
                    W[6 * ref.index: 6 * ref.index + 3, cols] += sign * C
                    W[6 * ref.index + 3: 6 * ref.index + 6, cols] += sign * cross(r, C.T).T
                elif ref.kind == "link":
                    assert man is not None
                    J[cols, :] -= sign * (C.T @ man.point_jacobian(ref.index, p))
            v_rel = self._kinematics(c.body_i, "point_velocity", p) - self._kinematics(c.body_k, "point_velocity", p)
            w_f = self._kinematics(c.body_i if c.face == "i" else c.body_k, "angular_velocity")
            acc_bias = self._kinematics(c.body_i, "point_bias", p) - self._kinematics(c.body_k, "point_bias", p)
            bias[cols] = C.T @ (acc_bias - 2.0 * cross(w_f, v_rel))
            v[cols] = C.T @ v_rel
        self.W = W
        self.J = J
        self.bias = bias
        self.mu = np.array([c.mu for c in self.contacts], dtype=float)
        # (6): v = W^T qdot - J ldot (kept from the assembled matrices; equals C^T v_rel above)
        self.v = W.T @ self.qdot - J @ self.ldot
        if n_c and np.abs(self.v - v).max() > 1e-9 * max(1.0, float(np.abs(v).max())):
            raise AssertionError("internal: W^T qdot - J ldot disagrees with the point velocities")
        # (25)
        WM = self.Minv_obj @ W
        JM = self.Minv_man @ J.T if n_l else np.zeros((0, 3 * n_c))
        A = W.T @ WM + (J @ JM if n_l else 0.0)
        self.A = 0.5 * (A + A.T)
        # (26)
        b = bias + WM.T @ (self.g_obj + self.h_obj)
        if n_l:
            b = b + JM.T @ (self.g_man + self.h_man - self.tau)
        self.b = b

    def _classify(self) -> None:
        n_c = self.n_c
        scale = max(1.0, float(np.abs(self.v).max(initial=0.0)))
        tol = self.vel_tol * scale
        vn = self.v[:n_c]
        bad = np.flatnonzero(np.abs(vn) > tol)
        if bad.size:
            j = int(bad[0])
            raise InputError(
                f"contacts[{j}]",
                f"relative normal velocity v_n = {vn[j]:.3e} is not zero (7): the initial velocities "
                "must keep every contact closed",
            )
        vT = np.hypot(self.v[n_c: 2 * n_c], self.v[2 * n_c:])
        self.rolling = np.flatnonzero(vT <= tol)
        self.sliding = np.flatnonzero(vT > tol)

    # views ----------------------------------------------------------------------------------
    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(x_n, x_t, x_o)`` of a ``3 n_c`` vector in the paper's grouping."""
        n = self.n_c
        return x[:n], x[n: 2 * n], x[2 * n:]

    @property
    def v_n(self) -> np.ndarray:
        """Normal relative velocities ``v_jn`` of the contacts (the ``n`` rows of ``v``)."""
        return self.split(self.v)[0]

    @property
    def v_t(self) -> np.ndarray:
        """Tangential relative velocities ``v_jt`` along each contact's ``t`` axis."""
        return self.split(self.v)[1]

    @property
    def v_o(self) -> np.ndarray:
        """Tangential relative velocities ``v_jo`` along each contact's ``o`` axis."""
        return self.split(self.v)[2]

    @property
    def J_sys(self) -> np.ndarray:
        """The system Jacobian ``[W; J^T]`` of (25) (``6 n_obj + n_l`` x ``3 n_c``)."""
        return np.vstack([self.W, self.J.T])

    # dynamics -------------------------------------------------------------------------------
    def accelerations(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(qddot, lddot)`` from (22)-(23) for the force vector ``c = (c_n, c_t, c_o)``."""
        c = np.asarray(c, dtype=float)
        qdd = self.Minv_obj @ (self.W @ c + self.g_obj + self.h_obj)
        ldd = self.Minv_man @ (self.tau - self.J.T @ c - self.g_man - self.h_man) if self.n_l else np.zeros(0)
        return qdd, ldd

    def contact_accelerations(self, qddot: np.ndarray, lddot: np.ndarray) -> np.ndarray:
        """``a = W^T qddot - J lddot + bias`` (6)."""
        a = self.W.T @ np.asarray(qddot, dtype=float) + self.bias
        if self.n_l:
            a = a - self.J @ np.asarray(lddot, dtype=float)
        return a

    def solution_fields(self, c: np.ndarray, rolling: np.ndarray, tol: float) -> dict[str, object]:
        """The :class:`StackedSolution` fields of the forces ``c``: accelerations by (22), (23) and (6),
        and the modes, with ``a_n > 0`` and ``a_T = 0`` (at the ``rolling`` contacts) judged
        against ``tol * max(1, ||b||_inf)``."""
        qdd, ldd = self.accelerations(c)
        c_n, c_t, c_o = (x.copy() for x in self.split(np.asarray(c, dtype=float)))
        a_n, a_t, a_o = (x.copy() for x in self.split(self.contact_accelerations(qdd, ldd)))
        atol = tol * max(1.0, float(np.abs(self.b).max(initial=0.0)))
        is_rolling = np.zeros(self.n_c, dtype=bool)
        is_rolling[rolling] = True
        modes = ["breaking" if a_n[j] > atol else "rolling" if is_rolling[j] and np.hypot(a_t[j], a_o[j]) <= atol
                 else "sliding" for j in range(self.n_c)]
        return dict(c_n=c_n, c_t=c_t, c_o=c_o, a_n=a_n, a_t=a_t, a_o=a_o, qddot=qdd, lddot=ldd, modes=modes)

    def common_residuals(
        self, c: np.ndarray, a: np.ndarray, qddot: np.ndarray, lddot: np.ndarray, sliding: np.ndarray
    ) -> dict[str, float]:
        """Residuals of the conditions every friction law shares, from physical quantities.

        ``c`` and ``a`` are stacked ``(n, t, o)`` blocks (``c_n`` = ``c[:n_c]``, ...), ``sliding``
        the indices of the sliding contacts. Keys (inf-norms, 0 at a solution): ``"(4)"``, ``"(5)"``
        Newton-Euler of objects and manipulator; ``"(6)"`` ``a = W^T qddot - J lddot + bias``;
        ``"(9)"`` ``max(0, -a_n)``; ``"(11)"`` ``max(0, -c_n)``; ``"(12)"`` sliding friction
        ``|mu c_n v_T + c_T |v_T|| / |v_T|``; ``"(16)"`` ``max_j min(|c_jn|, |a_jn|)``.
        """
        nc = self.n_c
        c_n, c_t, c_o = c[:nc], c[nc:2 * nc], c[2 * nc:]
        a_n = a[:nc]
        qdd, ldd = np.asarray(qddot, dtype=float), np.asarray(lddot, dtype=float)

        def inf(v: np.ndarray) -> float:
            return float(np.abs(v).max(initial=0.0))

        out: dict[str, float] = {}
        out["(4)"] = inf(self.W @ c + self.g_obj + self.h_obj - self.M_obj @ qdd)
        out["(5)"] = inf(self.tau - self.J.T @ c - self.g_man - self.h_man - self.M_man @ ldd) if self.n_l else 0.0
        out["(6)"] = inf(a - (self.W.T @ qdd + self.bias - (self.J @ ldd if self.n_l else 0.0)))
        out["(9)"] = max(0.0, -float(a_n.min(initial=0.0)))
        out["(11)"] = max(0.0, -float(c_n.min(initial=0.0)))
        S = np.asarray(sliding, dtype=np.int64)
        if S.size:
            vt, vo = self.v_t[S], self.v_o[S]
            vT = np.hypot(vt, vo)
            mc = self.mu[S] * c_n[S]
            out["(12)"] = inf(np.maximum(np.abs(mc * vt + c_t[S] * vT), np.abs(mc * vo + c_o[S] * vT)) / vT)
        else:
            out["(12)"] = 0.0
        out["(16)"] = inf(np.minimum(np.abs(c_n), np.abs(a_n)))
        return out

    def with_mu(self, mu: float | ArrayLike) -> "ContactModel":
        """A copy with friction coefficients ``mu`` (scalar or per contact); ``A``, ``b`` are reused."""
        try:
            mus = np.broadcast_to(np.asarray(mu, dtype=float), (self.n_c,)).copy()
        except (TypeError, ValueError):
            raise InputError("mu", f"must be a number or one per contact ({self.n_c}), got {mu!r}") from None
        if not np.isfinite(mus).all() or (mus < 0).any():
            raise InputError("mu", "must be finite and >= 0")
        new = copy.copy(self)
        new.contacts = [copy.copy(c) for c in self.contacts]
        for c, m in zip(new.contacts, mus):
            c.mu = float(m)
        new.mu = mus
        return new
