"""Contact systems declared once with CasADi symbols (the ``models/`` layer of docs/ARCHITECTURE.md).

A :class:`ContactSystem` holds the symbols and expressions of a mechanical system with unilateral
frictional contacts; everything numeric is derived from them by compiled ``casadi.Function`` s.

Conventions:

* Equations of motion ``M(q) vdot = B(q) u - h(q, v) + Jn(q)^T lambda_n + Jt(q)^T lambda_t
  + Jo(q)^T lambda_o`` and kinematics ``qdot = qdot(q, v)`` (linear in ``v``; the identity for
  minimal planar coordinates, a quaternion map for :func:`~contactmp.models.systems.box_3d`).
* ``phi(q) >= 0`` is the gap of each contact (``> 0`` separated); ``lambda_n >= 0`` pushes the
  bodies apart. Per contact ``j`` the frame is ``(n, t, o)`` with ``n x t = o`` (the Trinkle et al.
  naming): row ``j`` of ``Jn`` maps ``v`` to the normal relative velocity, which is ``d phi_j / dt``,
  so ``Jn = (d phi / d q) (d qdot / d v)``; rows of ``Jt`` and ``Jo`` map ``v`` to the tangential
  relative velocities along ``t`` and ``o``.
* Planar systems (motion in the x-z plane, ``planar=True``) have one tangent ``t`` per contact; the
  out-of-plane tangent ``o`` is the world y axis, along which nothing can move, so ``Jo`` is the
  zero ``n_c x n_v`` matrix. Formulations should skip the ``o`` direction when ``planar`` is set
  (a friction cone becomes the segment ``|lambda_t| <= mu lambda_n``).
* ``V(q)`` is the potential energy (gravity) when known, so that ``h(q, 0) = (d qdot/d v)^T dV/dq``
  and ``E = 1/2 v^T M v + V`` obeys ``dE/dt = v^T B u`` in free flight.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, check_spd


def _is_symbol_vector(x: object) -> bool:
    return isinstance(x, ca.SX) and x.size2() == 1 and (x.size1() == 0 or x.is_valid_input())


def _as_sx(name: str, expr: object) -> ca.SX:
    if isinstance(expr, ca.SX):
        return expr
    try:
        return ca.SX(np.asarray(expr, dtype=float))
    except (TypeError, ValueError, NotImplementedError) as exc:
        raise InputError(name, f"expected a casadi.SX expression, got {type(expr).__name__}") from exc


def _compile(field_name: str, inputs: list[ca.SX], in_names: list[str], out: ca.SX) -> ca.Function:
    """``casadi.Function`` of ``out``; an InputError naming the field if ``out`` has free symbols."""
    try:
        return ca.Function(f"eval_{field_name}", inputs, [out], in_names, [field_name])
    except RuntimeError as exc:
        msg = str(exc)
        free = msg[msg.find("variables"):].split("\n")[0] if "variables" in msg else msg
        raise InputError(field_name, f"depends on symbols other than {in_names}: {free}") from exc


def _names(field_name: str, names: Sequence[str] | None, n: int, stem: str) -> tuple[str, ...]:
    if names is None:
        return tuple(f"{stem}{i}" for i in range(n))
    names = tuple(str(s) for s in names)
    if len(names) != n:
        raise InputError(field_name, f"expected {n} names, got {len(names)}")
    return names


@dataclass(eq=False)
class ContactSystem:
    """A mechanical system with contacts, written with CasADi SX symbols (see the module docstring).

    Attributes
    ----------
    q, v, u : casadi.SX
        Column vectors of pure symbols: configuration (``n_q``), generalized velocity (``n_v``),
        inputs (``n_u``, may be 0).
    M : SX ``(n_v, n_v)``, function of ``q``: the mass matrix (symmetric positive definite).
    h : SX ``(n_v,)``, function of ``q, v``: Coriolis, centrifugal and gravity terms.
    B : SX ``(n_v, n_u)``, function of ``q``: input map.
    phi : SX ``(n_c,)``, function of ``q``: contact gaps.
    Jn, Jt, Jo : SX ``(n_c, n_v)``, functions of ``q``: normal and tangential Jacobian rows.
    mu : ndarray ``(n_c,)`` of friction coefficients ``>= 0`` (a scalar is broadcast).
    qdot : SX ``(n_q,)``, function of ``q, v``, linear in ``v`` (default: ``v`` when ``n_q == n_v``).
    V : SX scalar function of ``q`` (potential energy) or None.
    planar : bool, True when ``Jo`` is the zero matrix by construction (see module docstring).
    q_nominal : ndarray ``(n_q,)``: a valid configuration; the construction checks M there.
    name, q_names, v_names, u_names, contact_names : labels.
    """

    q: ca.SX
    v: ca.SX
    u: ca.SX
    M: ca.SX
    h: ca.SX
    B: ca.SX
    phi: ca.SX
    Jn: ca.SX
    Jt: ca.SX
    Jo: ca.SX
    mu: ArrayLike
    qdot: ca.SX | None = None
    V: ca.SX | None = None
    planar: bool = False
    q_nominal: ArrayLike | None = None
    name: str = "system"
    q_names: Sequence[str] | None = None
    v_names: Sequence[str] | None = None
    u_names: Sequence[str] | None = None
    contact_names: Sequence[str] | None = None
    functions: dict[str, ca.Function] = field(init=False, repr=False)

    # ----------------------------------------------------------------------------- validation
    def __post_init__(self) -> None:
        for nm in ("q", "v", "u"):
            if not _is_symbol_vector(getattr(self, nm)):
                raise InputError(nm, "must be a column casadi.SX of pure symbols (casadi.SX.sym)")
        n_q, n_v, n_u = self.q.size1(), self.v.size1(), self.u.size1()
        if n_q == 0 or n_v == 0:
            raise InputError("q" if n_q == 0 else "v", "must have at least one entry")
        for nm in ("M", "h", "B", "phi", "Jn", "Jt", "Jo"):
            setattr(self, nm, _as_sx(nm, getattr(self, nm)))
        if self.qdot is None:
            if n_q != n_v:
                raise InputError("qdot", f"required when n_q ({n_q}) != n_v ({n_v})")
            self.qdot = self.v
        self.qdot = _as_sx("qdot", self.qdot)
        n_c = self.phi.numel() if self.phi.size2() == 1 else -1
        if n_c < 0:
            raise InputError("phi", f"must be a column vector, got shape {self.phi.shape}")
        expected = {"M": (n_v, n_v), "h": (n_v, 1), "B": (n_v, n_u), "phi": (n_c, 1),
                    "Jn": (n_c, n_v), "Jt": (n_c, n_v), "Jo": (n_c, n_v), "qdot": (n_q, 1)}
        for nm, shape in expected.items():
            got = getattr(self, nm).shape
            if got != shape:
                raise InputError(nm, f"expected shape {shape}, got {got}")
        if self.V is not None:
            self.V = _as_sx("V", self.V)
            if self.V.shape != (1, 1):
                raise InputError("V", f"must be a scalar, got shape {self.V.shape}")
        if not _is_linear(self.qdot, self.v):
            raise InputError("qdot", "must be linear in v")
        mu = np.asarray(self.mu, dtype=float)
        if mu.ndim == 0:
            mu = np.full(n_c, float(mu))
        if mu.shape != (n_c,):
            raise InputError("mu", f"expected shape ({n_c},) or a scalar, got {mu.shape}")
        if not np.all(np.isfinite(mu)):
            raise InputError("mu", "must be finite")
        if np.any(mu < 0):
            raise InputError("mu", f"friction coefficients must be >= 0, got min {mu.min():g}")
        self.mu = mu
        self.q_names = _names("q_names", self.q_names, n_q, "q")
        self.v_names = _names("v_names", self.v_names, n_v, "v")
        self.u_names = _names("u_names", self.u_names, n_u, "u")
        self.contact_names = _names("contact_names", self.contact_names, n_c, "c")
        self.planar = bool(self.planar)
        if self.planar and not all(self.Jo.nz[i].is_zero() for i in range(self.Jo.nnz())):
            raise InputError("Jo", "must be the zero matrix when planar=True")

        q, v, u = self.q, self.v, self.u
        qn, qvn = ["q"], ["q", "v"]
        G = ca.jacobian(self.qdot, v)  # d qdot / d v  (n_q x n_v)
        f = {
            "M": _compile("M", [q], qn, self.M),
            "h": _compile("h", [q, v], qvn, self.h),
            "B": _compile("B", [q], qn, self.B),
            "phi": _compile("phi", [q], qn, self.phi),
            "Jn": _compile("Jn", [q], qn, self.Jn),
            "Jt": _compile("Jt", [q], qn, self.Jt),
            "Jo": _compile("Jo", [q], qn, self.Jo),
            "qdot": _compile("qdot", [q, v], qvn, self.qdot),
            "Jn_from_phi": _compile("qdot", [q], qn, ca.jacobian(self.phi, q) @ G),
        }
        if self.V is not None:
            f["V"] = _compile("V", [q], qn, self.V)
            E = 0.5 * ca.dot(v, self.M @ v) + self.V
            f["E"] = ca.Function("eval_energy", [q, v], [E], qvn, ["E"])
        lam_n, lam_t, lam_o = (ca.SX.sym(s, n_c) for s in ("lambda_n", "lambda_t", "lambda_o"))
        rhs = self.B @ u - self.h + self.Jn.T @ lam_n + self.Jt.T @ lam_t + self.Jo.T @ lam_o
        f["vdot"] = ca.Function("eval_vdot", [q, v, u, lam_n, lam_t, lam_o],
                                [ca.solve(self.M, rhs)],
                                ["q", "v", "u", "lambda_n", "lambda_t", "lambda_o"], ["vdot"])
        self.functions = f
        if self.q_nominal is None:
            self.q_nominal = np.zeros(n_q)
        self.q_nominal = self._vec("q_nominal", self.q_nominal, n_q)
        self.check_at(self.q_nominal, field_name="q_nominal")

    # ------------------------------------------------------------------------------- sizes
    @property
    def n_q(self) -> int:
        """Number of configuration coordinates."""
        return self.q.size1()

    @property
    def n_v(self) -> int:
        """Number of generalized velocities."""
        return self.v.size1()

    @property
    def n_u(self) -> int:
        """Number of inputs."""
        return self.u.size1()

    @property
    def n_c(self) -> int:
        """Number of contacts."""
        return self.phi.size1()

    # --------------------------------------------------------------------- numeric evaluation
    @staticmethod
    def _vec(field_name: str, x: ArrayLike, n: int) -> np.ndarray:
        a = np.asarray(x, dtype=float)
        if a.shape not in ((n,), (n, 1)):
            raise InputError(field_name, f"expected shape ({n},), got {a.shape}")
        a = a.reshape(n)
        if not np.all(np.isfinite(a)):
            raise InputError(field_name, "must be finite (no NaN or inf)")
        return a

    def _q(self, q: ArrayLike) -> np.ndarray:
        return self._vec("q", q, self.n_q)

    def _v(self, v: ArrayLike) -> np.ndarray:
        return self._vec("v", v, self.n_v)

    def eval_M(self, q: ArrayLike) -> np.ndarray:
        """``M(q)``, shape ``(n_v, n_v)``."""
        return np.array(self.functions["M"](self._q(q)), dtype=float)

    def eval_h(self, q: ArrayLike, v: ArrayLike) -> np.ndarray:
        """``h(q, v)``, shape ``(n_v,)``."""
        return np.array(self.functions["h"](self._q(q), self._v(v)), dtype=float).ravel()

    def eval_B(self, q: ArrayLike) -> np.ndarray:
        """``B(q)``, shape ``(n_v, n_u)``."""
        return np.array(self.functions["B"](self._q(q)), dtype=float).reshape(self.n_v, self.n_u)

    def eval_phi(self, q: ArrayLike) -> np.ndarray:
        """Gaps ``phi(q)``, shape ``(n_c,)``."""
        return np.array(self.functions["phi"](self._q(q)), dtype=float).ravel()

    def eval_J(self, q: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(Jn(q), Jt(q), Jo(q))``, each ``(n_c, n_v)``."""
        qq = self._q(q)
        shape = (self.n_c, self.n_v)
        return tuple(np.array(self.functions[k](qq), dtype=float).reshape(shape)
                     for k in ("Jn", "Jt", "Jo"))  # type: ignore[return-value]

    def eval_qdot(self, q: ArrayLike, v: ArrayLike) -> np.ndarray:
        """``qdot(q, v)``, shape ``(n_q,)``."""
        return np.array(self.functions["qdot"](self._q(q), self._v(v)), dtype=float).ravel()

    def eval_V(self, q: ArrayLike) -> float:
        """Potential energy ``V(q)``; 0 if the system declares none."""
        if "V" not in self.functions:
            return 0.0
        return float(self.functions["V"](self._q(q)))

    def eval_energy(self, q: ArrayLike, v: ArrayLike) -> float:
        """Total energy ``1/2 v^T M(q) v + V(q)``."""
        qq, vv = self._q(q), self._v(v)
        if "E" in self.functions:
            return float(self.functions["E"](qq, vv))
        return 0.5 * float(vv @ self.eval_M(qq) @ vv)

    def eval_vdot(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None,
                  lambda_n: ArrayLike | None = None, lambda_t: ArrayLike | None = None,
                  lambda_o: ArrayLike | None = None) -> np.ndarray:
        """``vdot = M^{-1} (B u - h + Jn^T lambda_n + Jt^T lambda_t + Jo^T lambda_o)``;
        omitted inputs and forces are zero."""
        args = [self._q(q), self._v(v)]
        for nm, x, n in (("u", u, self.n_u), ("lambda_n", lambda_n, self.n_c),
                         ("lambda_t", lambda_t, self.n_c), ("lambda_o", lambda_o, self.n_c)):
            args.append(np.zeros(n) if x is None else self._vec(nm, x, n))
        return np.array(self.functions["vdot"](*args), dtype=float).ravel()

    # ---------------------------------------------------------------------------- checking
    def check_at(self, q: ArrayLike, *, field_name: str = "M") -> None:
        """Check the system at configuration ``q``: ``M(q)`` symmetric positive definite and
        ``Jn(q) = d phi/dq (d qdot/d v)``. Raises InputError naming ``M`` (or ``Jn``) otherwise."""
        qq = self._q(q)
        check_spd(self.eval_M(qq), "M", f"M at {field_name} = {qq}")
        if self.n_c:
            Jn = self.eval_J(qq)[0]
            Jphi = np.array(self.functions["Jn_from_phi"](qq), dtype=float).reshape(Jn.shape)
            if np.max(np.abs(Jn - Jphi)) > 1e-7 * max(1.0, float(np.max(np.abs(Jphi)))):
                raise InputError("Jn", f"differs from d phi/dq (d qdot/d v) at {field_name} = {qq}")


def _is_linear(expr: ca.SX, x: ca.SX) -> bool:
    """True when ``expr = G x`` with ``G`` independent of ``x`` (no part constant in ``x``)."""
    G = ca.jacobian(expr, x)
    if ca.depends_on(G, x):
        return False
    rest = ca.substitute(expr - G @ x, x, ca.DM.zeros(x.shape))
    return all(ca.simplify(rest[i]).is_zero() for i in range(rest.numel()))
