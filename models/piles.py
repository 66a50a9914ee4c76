"""Generated piles of spheres and walls of boxes: large fc3d problems with a singular Delassus matrix.

Each scene is built from our own model classes (:class:`~contactmp.models.rigid_bodies.RigidBody`
for the bodies, :class:`~contactmp.models.contact_model.Contact` for the contact frames, with the
conventions of :mod:`contactmp.models.contact_model`: the normal ``n`` points into ``body_i``, the
force ``c_j`` acts on ``body_i``, ``-c_j`` on ``body_k``) and reduced to one time step's local
problem fc3d(W, q, mu) (Siconos' FrictionContact3D, contact order normal, t1, t2):

    v+ = v + M^{-1} (h f + G r),      u = G^T v+ = W r + q,
    W = G^T M^{-1} G,                  q = G^T (v + h M^{-1} f),

``G`` (``6 n_bodies x 3 nc``, column block ``j = [C_j; (p_j - x_i) x C_j]`` for body ``i`` and its
negative for body ``k``; the ground has no columns), ``M`` the bodies' mass matrices, ``f`` their
wrenches (gravity), ``v`` their twists and ``h`` the step; ``r`` is the contact impulse. ``G``,
``M^{-1}`` and ``W`` are scipy.sparse matrices: ``W_jk`` is non-zero only when contacts ``j`` and
``k`` share a body. Since ``rank W <= 6 n_bodies`` while W has ``3 nc`` rows, W is singular whenever
``nc > 2 n_bodies`` (every sphere of a lattice touches up to 12 others, a box in a brick wall rests
on two boxes through 8 corner contacts); ``q`` lies in the range of ``G^T``, so a solution exists.

The scenes (lattices touch exactly, so every listed contact is closed):

* :func:`sphere_pile`: spheres on a simple cubic lattice in a box (floor and four walls), or a
  square pyramid of spheres (``packing="pyramid"``: each sphere rests in the pocket of four
  below). Masses vary by a seeded ``+-20 %``; twists are seeded random (``speed``).
* :func:`box_wall`: a wall of boxes on the floor, stacked in columns (``bond="stack"``) or in a
  running bond (``bond="brick"``: each box rests on two below), 4 corner contacts per touching pair.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from contactmp.errors import InputError
from contactmp.models.contact_model import Contact
from contactmp.models.rigid_bodies import GRAVITY, GROUND, RigidBody, box_inertia, cross

__all__ = ["Fc3dScene", "fc3d_from_contacts", "sphere_pile", "box_wall"]


@dataclass
class Fc3dScene:
    """One time step's fc3d(W, q, mu) of a scene, with the model it came from.

    Attributes
    ----------
    name : a label (kind and size).
    W : (3 nc, 3 nc) scipy.sparse CSR Delassus matrix ``G^T M^{-1} G``.
    q : (3 nc,) free velocity ``G^T (v + h M^{-1} f)``.
    mu : (nc,) friction coefficients.
    G : (6 n_bodies, 3 nc) CSR matrix of the contact wrenches.
    bodies, contacts : the model (RigidBody and Contact objects).
    h : time step.
    """

    name: str
    W: sp.csr_matrix
    q: np.ndarray
    mu: np.ndarray
    G: sp.csr_matrix
    bodies: list[RigidBody] = field(repr=False)
    contacts: list[Contact] = field(repr=False)
    h: float = 0.01

    @property
    def nc(self) -> int:
        """The number of contacts."""
        return int(self.mu.shape[0])

    @property
    def n_bodies(self) -> int:
        """The number of bodies (6 velocity coordinates each)."""
        return len(self.bodies)

    def velocity(self, r: np.ndarray) -> np.ndarray:
        """The bodies' twists after the step, ``v+ = v + M^{-1} (h f + G r)``."""
        v = np.concatenate([b.twist for b in self.bodies])
        f = np.concatenate([b.wrench for b in self.bodies])
        return v + _inverse_mass(self.bodies) @ (self.h * f + self.G @ np.asarray(r, dtype=float))


def _inverse_mass(bodies: Sequence[RigidBody]) -> sp.csr_matrix:
    """Block diagonal ``M^{-1}`` (6 x 6 per body)."""
    return sp.block_diag([np.linalg.inv(b.mass_matrix) for b in bodies], format="csr")


def fc3d_from_contacts(bodies: Sequence[RigidBody], contacts: Sequence[Contact], h: float = 0.01,
                       name: str = "scene") -> Fc3dScene:
    """The local problem fc3d(W, q, mu) of one time step ``h`` of ``bodies`` with ``contacts``
    (object indices refer to ``bodies``; ``"ground"`` is fixed), ``W`` sparse (see the module
    docstring). Raises :class:`InputError` naming the field for a bad step or body index."""
    h = float(h)
    if not np.isfinite(h) or h <= 0.0:
        raise InputError("h", f"must be finite and > 0, got {h!r}")
    nb, nc = len(bodies), len(contacts)
    if nc == 0:
        raise InputError("contacts", "the scene has no contact")
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    for j, c in enumerate(contacts):
        C = c.frame
        p = np.asarray(c.point)
        for ref, sign, side in ((c.body_i, 1.0, "body_i"), (c.body_k, -1.0, "body_k")):
            if ref.kind == "ground":
                continue
            if ref.kind != "object" or ref.index >= nb:
                raise InputError(f"contacts[{j}].{side}", f"must be the ground or an object index < {nb}")
            b = bodies[ref.index]
            block = sign * np.vstack([C, cross(p - np.asarray(b.position), C.T).T])  # 6 x 3
            rr, cc = np.meshgrid(6 * ref.index + np.arange(6), 3 * j + np.arange(3), indexing="ij")
            rows.append(rr.ravel())
            cols.append(cc.ravel())
            vals.append(block.ravel())
    G = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(6 * nb, 3 * nc))
    Minv = _inverse_mass(bodies)
    W = (G.T @ Minv @ G).tocsr()
    W = (0.5 * (W + W.T)).tocsr()
    W.sort_indices()
    v = np.concatenate([b.twist for b in bodies])
    f = np.concatenate([b.wrench for b in bodies])
    q = G.T @ (v + h * (Minv @ f))
    mu = np.array([c.mu for c in contacts], dtype=float)
    return Fc3dScene(name, W, np.ascontiguousarray(q), mu, G, list(bodies), list(contacts), h)


def _tangent(n: np.ndarray) -> np.ndarray:
    """A unit vector orthogonal to ``n`` (deterministic)."""
    a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t = a - (a @ n) * n
    return t / np.linalg.norm(t)


def _count(value: Any, name: str, low: int = 1) -> int:
    """``value`` as an int ``>= low`` or :class:`InputError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise InputError(name, f"must be an int >= {low}, got {value!r}")
    return int(value)


def _positive(value: Any, name: str, allow_zero: bool = False) -> float:
    """``value`` as a finite float ``> 0`` (``>= 0`` with ``allow_zero``) or :class:`InputError`."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(name, f"must be a number, got {value!r}") from None
    if not np.isfinite(v) or v < 0.0 or (v == 0.0 and not allow_zero):
        raise InputError(name, f"must be finite and {'>=' if allow_zero else '>'} 0, got {value!r}")
    return v


def sphere_pile(n: int = 5, mu: float = 0.9, *, packing: str = "cubic", radius: float = 0.05,
                mass: float = 0.5, speed: float = 0.05, h: float = 0.01, seed: int = 0,
                gravity: float = GRAVITY) -> Fc3dScene:
    """A pile of spheres as fc3d(W, q, mu) (one time step ``h``).

    ``packing="cubic"``: ``n x n x n`` spheres of radius ``radius`` on a simple cubic lattice
    inside a box that fits them exactly: contacts between lattice neighbours (3 per sphere inside),
    with the floor and with the four walls (``3 n^2 (n - 1) + 5 n^2`` contacts, ``n^3`` bodies:
    ``n = 5`` gives 425 contacts, 125 bodies). ``packing="pyramid"``: a square pyramid with layers
    of ``n^2, (n-1)^2, ..., 1`` spheres, each resting on four below and touching its in-layer
    neighbours, the bottom layer on the floor (``n = 6``: 91 spheres, 396 contacts; ``n = 7``: 140,
    637). Masses ``mass (1 +- 0.2)``, twists uniform in ``+-speed`` (m/s; rad/s scaled by
    ``1/radius``), both from ``seed``; gravity ``-gravity e_z``; friction ``mu`` everywhere."""
    n = _count(n, "n", 1 if packing == "cubic" else 2)
    mu = _positive(mu, "mu", allow_zero=True)
    R = _positive(radius, "radius")
    mass = _positive(mass, "mass")
    speed = _positive(speed, "speed", allow_zero=True)
    if packing not in ("cubic", "pyramid"):
        raise InputError("packing", f"must be 'cubic' or 'pyramid', got {packing!r}")
    rng = np.random.default_rng(seed)
    centres: list[np.ndarray] = []
    index: dict[tuple[int, int, int], int] = {}
    if packing == "cubic":
        for k in range(n):
            for j in range(n):
                for i in range(n):
                    index[(i, j, k)] = len(centres)
                    centres.append(np.array([R + 2 * R * i, R + 2 * R * j, R + 2 * R * k]))
    else:
        dz = np.sqrt(2.0) * R
        for k in range(n):
            for j in range(n - k):
                for i in range(n - k):
                    index[(i, j, k)] = len(centres)
                    centres.append(np.array([R + 2 * R * i + R * k, R + 2 * R * j + R * k, R + dz * k]))
    bodies = []
    for b, x in enumerate(centres):
        m = mass * rng.uniform(0.8, 1.2)
        bodies.append(RigidBody(
            mass=m, inertia=0.4 * m * R * R * np.eye(3), position=x,
            velocity=rng.uniform(-speed, speed, 3), angular_velocity=rng.uniform(-speed, speed, 3) / R,
            wrench=np.array([0.0, 0.0, -m * gravity, 0.0, 0.0, 0.0]), name=f"sphere{b}"))
    contacts: list[Contact] = []

    def touch(a: int, b: int) -> None:
        """Contact between spheres ``a`` (body_i) and ``b`` (body_k), at the point between them."""
        xa = centres[a]
        nrm = xa - centres[b]
        nrm = nrm / np.linalg.norm(nrm)  # into body a (body_i)
        contacts.append(Contact(a, b, xa - R * nrm, nrm, _tangent(nrm), mu=mu))

    def plane(a: int, nrm: np.ndarray) -> None:
        """Contact of sphere ``a`` with a fixed plane whose normal ``nrm`` points into the sphere."""
        contacts.append(Contact(a, GROUND, centres[a] - R * nrm, nrm, _tangent(nrm), mu=mu))

    ez = np.array([0.0, 0.0, 1.0])
    if packing == "cubic":
        for (i, j, k), a in index.items():
            for di, dj, dk in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
                b = index.get((i + di, j + dj, k + dk))
                if b is not None:
                    touch(b, a)  # the upper / farther sphere is body_i
            if k == 0:
                plane(a, ez)
            for coord, lo_n in ((i, np.array([1.0, 0.0, 0.0])), (j, np.array([0.0, 1.0, 0.0]))):
                if coord == 0:
                    plane(a, lo_n)
                if coord == n - 1:
                    plane(a, -lo_n)
    else:
        for (i, j, k), a in index.items():
            for di, dj in ((1, 0), (0, 1)):
                b = index.get((i + di, j + dj, k))
                if b is not None:
                    touch(b, a)
            if k == 0:
                plane(a, ez)
            else:
                for di in (0, 1):
                    for dj in (0, 1):
                        touch(a, index[(i + di, j + dj, k - 1)])
    return fc3d_from_contacts(bodies, contacts, h, name=f"spheres-{packing}-{n}")


def box_wall(columns: int = 8, layers: int = 8, mu: float = 0.8, *, bond: str = "brick",
             half_extents: Sequence[float] = (0.1, 0.05, 0.05), mass: float = 1.0, speed: float = 0.05,
             h: float = 0.01, seed: int = 0, gravity: float = GRAVITY) -> Fc3dScene:
    """A wall of boxes as fc3d(W, q, mu) (one time step ``h``).

    ``layers`` courses of boxes (half extents ``(a, b, c)``, long side along x) on the floor.
    ``bond="stack"``: ``columns`` boxes per course, in columns (each box on the one below).
    ``bond="brick"``: running bond, courses of ``columns`` and ``columns - 1`` boxes alternately,
    shifted by ``a``, so that a box rests on two below. Neighbours in a course do not touch (a
    small gap); every touching pair has 4 contacts, at the corners of the overlap rectangle
    (``columns = layers = 8``, brick: 60 boxes, 424 contacts). Masses ``mass (1 +- 0.2)``, twists
    uniform in ``+-speed`` from ``seed``; gravity ``-gravity e_z``; friction ``mu`` everywhere."""
    columns = _count(columns, "columns", 1 if bond == "stack" else 2)
    layers = _count(layers, "layers")
    mu = _positive(mu, "mu", allow_zero=True)
    mass = _positive(mass, "mass")
    speed = _positive(speed, "speed", allow_zero=True)
    if bond not in ("stack", "brick"):
        raise InputError("bond", f"must be 'stack' or 'brick', got {bond!r}")
    try:
        half = np.asarray(half_extents, dtype=float).reshape(3)
    except (TypeError, ValueError):
        raise InputError("half_extents", f"must be 3 positive numbers, got {half_extents!r}") from None
    if not (np.isfinite(half).all() and (half > 0).all()):
        raise InputError("half_extents", f"must be 3 positive numbers, got {half_extents!r}")
    a, b, c = half
    gap = 0.02 * a
    rng = np.random.default_rng(seed)
    bodies: list[RigidBody] = []
    course: list[list[int]] = []
    for k in range(layers):
        shifted = bond == "brick" and k % 2 == 1
        count = columns - 1 if shifted else columns
        row = []
        for i in range(count):
            x = (a + gap / 2) * (2 * i + 1) + (a + gap / 2 if shifted else 0.0)
            m = mass * rng.uniform(0.8, 1.2)
            body = RigidBody.box(half, m, position=(x, b, c + 2 * c * k), velocity=rng.uniform(-speed, speed, 3),
                                 angular_velocity=rng.uniform(-speed, speed, 3) / a, gravity=gravity,
                                 name=f"box{len(bodies)}")
            row.append(len(bodies))
            bodies.append(body)
        course.append(row)
    ez, ex = np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])
    contacts: list[Contact] = []
    for k, row in enumerate(course):
        for up in row:
            xu = np.asarray(bodies[up].position)
            z = xu[2] - c
            if k == 0:
                below = [(GROUND, xu[0] - a, xu[0] + a)]
            else:
                below = []
                for lo in course[k - 1]:
                    xl = np.asarray(bodies[lo].position)
                    x0, x1 = max(xu[0] - a, xl[0] - a), min(xu[0] + a, xl[0] + a)
                    if x1 - x0 > 1e-12:
                        below.append((lo, x0, x1))
            for other, x0, x1 in below:
                for px in (x0, x1):
                    for py in (0.0, 2 * b):
                        contacts.append(Contact(up, other, (px, py, z), ez, ex, mu=mu))
    return fc3d_from_contacts(bodies, contacts, h, name=f"boxes-{bond}-{columns}x{layers}")
