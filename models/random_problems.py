"""Random multi-rigid-body contact problems in the manner of section 6 of Trinkle, Pang, Sudarsky
and Lo (1995), and the 328 data sets of their Table 1.

A problem with ``n_bodies`` passive boxes, ``n_S`` sliding and ``n_R`` rolling contacts is built as
a physical scene:

* boxes stand on the ground or on top of another box (stacks), each on a whole face (its 4 bottom
  corners are the contacts), on an edge (2 corners; the box is tilted about that edge) or on a
  corner (1 contact); the contact normal is the supporting face's normal, pointing into the upper
  body; gravity acts on every box;
* the remaining contacts are fingertips of a manipulator: each fingertip ends a chain of three
  revolute joints rooted at the ground and touches a random point of a box face (not the bottom
  face, nor a top face carrying another box); the joint torques compensate gravity and the
  velocity products and squeeze the box along the contact normal;
* a random velocity of the boxes and joints is projected onto the set where (7) ``v_n = 0`` holds
  at every contact and (8) ``v_t = v_o = 0`` at the rolling ones; the support contacts of a box
  are all rolling (the box rests on its support), all sliding, or rolling at one corner (a pivot)
  and sliding at the others, so the projected velocity keeps a nonzero tangential velocity at
  every sliding contact (checked, else redrawn).

The pyramid LCP (37) of such a problem has size ``n_S + 5 n_R``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from contactmp.errors import InputError
from contactmp.models.contact_model import Contact, ContactModel
from contactmp.models.rigid_bodies import (
    GRAVITY,
    GROUND,
    Manipulator,
    RigidBody,
    box_inertia,
    cross,
    link,
    obj,
    rotation_about,
)

#: support options of one box: (number of corner contacts, mode, rolling count, sliding count, weight)
_SUPPORTS: tuple[tuple[int, str, int, int, float], ...] = (
    (4, "stick", 4, 0, 3.0),
    (4, "slide", 0, 4, 3.0),
    (4, "pivot", 1, 3, 2.0),
    (2, "stick", 2, 0, 1.0),
    (2, "slide", 0, 2, 1.0),
    (2, "pivot", 1, 1, 1.0),
    (1, "stick", 1, 0, 0.5),
    (1, "slide", 0, 1, 0.5),
)

#: minimum tangential speed [m/s] kept at a sliding contact after the projection
_MIN_SLIDE_SPEED = 1e-2


@dataclass(frozen=True)
class DataSet:
    """One data set of the Table 1 benchmark: a problem and a friction coefficient.

    ``model`` is the :class:`ContactModel` with ``mu`` at every contact; ``size`` is the size of its
    pyramid LCP, ``n_S + 5 n_R``. ``random_problem(seed, n_bodies, n_S, n_R, mu)`` rebuilds it.
    """

    problem_id: int
    seed: int
    mu: float
    n_bodies: int
    n_S: int
    n_R: int
    size: int
    model: ContactModel


@dataclass
class _Box:
    half: np.ndarray
    mass: float
    R: np.ndarray
    x: np.ndarray
    support: str  # "ground" or f"box{index}"
    has_child: bool = False


def _plan_supports(rng: np.random.Generator, n_bodies: int, n_S: int, n_R: int) -> list[tuple[int, str, int, int]]:
    """Choose (corner count, mode, #rolling, #sliding) per box within the budgets ``n_R``, ``n_S``."""
    plan = []
    r_left, s_left = n_R, n_S
    for b in range(n_bodies):
        boxes_after = n_bodies - b - 1
        feasible = [
            opt for opt in _SUPPORTS
            if opt[2] <= r_left and opt[3] <= s_left and (r_left - opt[2]) + (s_left - opt[3]) >= boxes_after
        ]
        w = np.array([opt[4] for opt in feasible])
        opt = feasible[int(rng.choice(len(feasible), p=w / w.sum()))]
        plan.append(opt[:4])
        r_left -= opt[2]
        s_left -= opt[3]
    return plan


def _in_plane_tangent(rng: np.random.Generator, E: np.ndarray) -> np.ndarray:
    phi = rng.uniform(0.0, 2.0 * np.pi)
    return np.cos(phi) * E[:, 0] + np.sin(phi) * E[:, 1]


def _place_box(
    rng: np.random.Generator, half: np.ndarray, face_half: np.ndarray | None, n_touch: int
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Pose (R_loc, x_loc) of a box on the plane z = 0 of a face frame, touching it with ``n_touch``
    bottom corners (4: flat; 2: tilted about a bottom edge; 1: tilted about a corner), and the
    touching corners (face-frame coordinates). ``face_half`` bounds the corners (None: unbounded)."""
    hx, hy, hz = half
    for _ in range(20):
        yaw = rng.uniform(-np.pi, np.pi) if face_half is None else rng.uniform(-0.4, 0.4)
        off = np.zeros(2) if face_half is None else rng.uniform(-0.2, 0.2, 2) * face_half
        R0 = rotation_about([0.0, 0.0, 1.0], yaw)
        c0 = np.array([off[0], off[1], hz])
        signs = [(-1, -1), (1, -1), (1, 1), (-1, 1)]  # counter-clockwise bottom corners
        corners = [c0 + R0 @ np.array([sx * hx, sy * hy, -hz]) for sx, sy in signs]
        if face_half is not None and any(
            abs(p[0]) > 0.95 * face_half[0] or abs(p[1]) > 0.95 * face_half[1] for p in corners
        ):
            continue
        if n_touch == 4:
            return R0, c0, corners
        k = int(rng.integers(4))
        q = corners[k]
        if n_touch == 2:
            q2 = corners[(k + 1) % 4]
            mid = 0.5 * (q + q2)
            d = np.array([c0[0] - mid[0], c0[1] - mid[1], 0.0])
            touch = [q, q2]
            angle = rng.uniform(0.1, 0.35)
        else:
            d = np.array([c0[0] - q[0], c0[1] - q[1], 0.0])
            touch = [q]
            angle = rng.uniform(0.1, 0.3)
        d /= np.linalg.norm(d)
        u = cross(d, [0.0, 0.0, 1.0])  # rotating about u by +angle lifts the side d
        Rt = rotation_about(u, angle)
        return Rt @ R0, q + Rt @ (c0 - q), touch
    # fall back to a centred, unrotated box (always inside a face twice its size)
    return _place_box_centered(half, n_touch, rng)


def _place_box_centered(half: np.ndarray, n_touch: int, rng: np.random.Generator):
    hx, hy, hz = half
    c0 = np.array([0.0, 0.0, hz])
    corners = [c0 + np.array([sx * hx, sy * hy, -hz]) for sx, sy in [(-1, -1), (1, -1), (1, 1), (-1, 1)]]
    if n_touch == 4:
        return np.eye(3), c0, corners
    q = corners[0]
    if n_touch == 2:
        touch, d = [q, corners[1]], np.array([0.0, 1.0, 0.0])
    else:
        touch, d = [q], np.array([hx, hy, 0.0]) / np.hypot(hx, hy)
    Rt = rotation_about(cross(d, [0.0, 0.0, 1.0]), 0.2)
    return Rt, q + Rt @ (c0 - q), touch


def _finger(
    rng: np.random.Generator, p: np.ndarray, out_normal: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A three-joint chain whose tip is at ``p``, reaching in from the side ``out_normal``.

    Returns axes (3,3), origins (3,3), link masses (3,), link centers (3,3), link inertias (3,3,3).
    """
    up = np.array([0.0, 0.0, 1.0])
    for _ in range(50):
        lengths = rng.uniform(0.08, 0.2, 3)
        pts = [p]
        for L in lengths[::-1]:  # from the tip back to the root
            d = out_normal + 0.4 * up + 0.6 * rng.normal(size=3)
            d /= np.linalg.norm(d)
            pts.append(pts[-1] + L * d)
        origins = np.array(pts[1:][::-1])  # o_1 (root) ... o_3
        axes = rng.normal(size=(3, 3))
        axes /= np.linalg.norm(axes, axis=1, keepdims=True)
        Jv = cross(axes, p - origins).T
        s = np.linalg.svd(Jv, compute_uv=False)
        if s[-1] > 0.15 * lengths.min() and s[-1] > 0.01 * s[0]:
            ends = np.vstack([origins[1:], p])
            centers = 0.5 * (origins + ends)
            masses = rng.uniform(0.05, 0.3, 3)
            seg = np.linalg.norm(ends - origins, axis=1)
            inertias = np.array([m * (L * L / 12.0 + 1e-3) * np.eye(3) for m, L in zip(masses, seg)])
            return axes, origins, masses, centers, inertias
    raise RuntimeError("could not build a well-conditioned finger")  # pragma: no cover


def _build_scene(rng: np.random.Generator, n_bodies: int, n_S: int, n_R: int, gravity: float) -> dict[str, Any]:
    """Geometry, contacts and planned modes of one random scene (velocities not yet set)."""
    plan = _plan_supports(rng, n_bodies, n_S, n_R)
    boxes: list[_Box] = []
    contacts: list[dict[str, Any]] = []  # kwargs of Contact, plus "rolling"
    n_ground = 0
    for b, (n_touch, mode, _, _) in enumerate(plan):
        candidates = [p for p, bx in enumerate(boxes) if not bx.has_child]
        parent = int(rng.choice(candidates)) if (candidates and rng.random() < 0.5) else -1
        if parent < 0:
            half = rng.uniform(0.15, 0.4, 3)
            E = np.eye(3)
            oF = np.array([1.6 * n_ground, rng.uniform(-0.2, 0.2), 0.0])
            n_ground += 1
            face_half = None
        else:
            pb = boxes[parent]
            pb.has_child = True
            half = np.concatenate([pb.half[:2] * rng.uniform(0.4, 0.8, 2), rng.uniform(0.1, 0.3, 1)])
            E = pb.R
            oF = pb.x + pb.R @ np.array([0.0, 0.0, pb.half[2]])
            face_half = pb.half[:2]
        R_loc, x_loc, touch = _place_box(rng, half, face_half, n_touch)
        mass = float(rng.uniform(0.5, 3.0))
        box = _Box(half=half, mass=mass, R=E @ R_loc, x=oF + E @ x_loc, support="ground" if parent < 0 else f"box{parent}")
        boxes.append(box)
        if mode == "stick":
            rolling = [True] * n_touch
        elif mode == "slide":
            rolling = [False] * n_touch
        else:
            rolling = [False] * n_touch
            rolling[int(rng.integers(n_touch))] = True
        for corner, roll in zip(touch, rolling):
            contacts.append(dict(
                body_i=obj(b), body_k=GROUND if parent < 0 else obj(parent), point=oF + E @ corner,
                normal=E[:, 2].copy(), tangent=_in_plane_tangent(rng, E), face="k", rolling=roll,
            ))
    r_left = n_R - sum(p[2] for p in plan)
    s_left = n_S - sum(p[3] for p in plan)
    finger_modes = [True] * r_left + [False] * s_left
    rng.shuffle(finger_modes)
    fingers = []
    for f, roll in enumerate(finger_modes):
        b = int(rng.integers(n_bodies))
        bx = boxes[b]
        faces = [(0, 1), (0, -1), (1, 1), (1, -1)] + ([] if bx.has_child else [(2, 1)])
        axis, sgn = faces[int(rng.integers(len(faces)))]
        local = rng.uniform(-0.8, 0.8, 3) * bx.half
        local[axis] = sgn * bx.half[axis]
        p = bx.x + bx.R @ local
        out = sgn * bx.R[:, axis]
        fingers.append(_finger(rng, p, out))
        E = np.column_stack([bx.R[:, (axis + 1) % 3], bx.R[:, (axis + 2) % 3], -out])
        contacts.append(dict(
            body_i=obj(b), body_k=link(3 * f + 2), point=p, normal=-out,
            tangent=_in_plane_tangent(rng, E), face="i", rolling=roll,
        ))
    return {"boxes": boxes, "contacts": contacts, "fingers": fingers, "gravity": gravity}


def _make_model(scene: dict[str, Any], qdot: np.ndarray, ldot: np.ndarray, mu: float,
                squeeze: np.ndarray | None, dynamics: bool = True) -> ContactModel:
    """The scene as a :class:`ContactModel` (``dynamics=False``: kinematics only, unit joint inertia)."""
    g = scene["gravity"]
    objects = []
    for i, bx in enumerate(scene["boxes"]):
        objects.append(RigidBody(
            mass=bx.mass, inertia=box_inertia(bx.mass, bx.half), position=bx.x, rotation=bx.R,
            velocity=qdot[6 * i: 6 * i + 3], angular_velocity=qdot[6 * i + 3: 6 * i + 6],
            wrench=np.array([0.0, 0.0, -bx.mass * g, 0.0, 0.0, 0.0]), name=f"box{i}",
        ))
    contacts = [
        Contact(**{k: v for k, v in c.items() if k != "rolling"}, mu=mu) for c in scene["contacts"]
    ]
    man = None
    fingers = scene["fingers"]
    if fingers:
        nf = len(fingers)
        axes = np.vstack([f[0] for f in fingers])
        origins = np.vstack([f[1] for f in fingers])
        parents = [p for f in range(nf) for p in (-1, 3 * f, 3 * f + 1)]
        if not dynamics:
            z = np.zeros(3 * nf)
            man = Manipulator(axes=axes, origins=origins, parents=parents, joint_velocities=ldot,
                              efforts=z, mass_matrix=np.eye(3 * nf), g_man=z, h_man=z)
            return ContactModel(objects=objects, contacts=contacts, manipulator=man)
        man = Manipulator.from_links(
            axes=axes, origins=origins, parents=parents, joint_velocities=ldot,
            link_masses=np.concatenate([f[2] for f in fingers]),
            link_centers=np.vstack([f[3] for f in fingers]),
            link_inertias=np.concatenate([f[4] for f in fingers]), gravity=g,
        )
        if squeeze is not None:
            tau = np.array(man.efforts, dtype=float)
            for c in contacts:
                if c.body_k.kind == "link":
                    k = c.body_k.index
                    f_push = squeeze[k // 3]
                    tau += f_push * (man.point_jacobian(k, c.point).T @ c.normal)
            man.efforts = tau
    return ContactModel(objects=objects, contacts=contacts, manipulator=man)


def _check_counts(n_bodies: Any, n_sliding: Any, n_rolling: Any) -> tuple[int, int, int]:
    vals = []
    for name, v in (("n_bodies", n_bodies), ("n_sliding", n_sliding), ("n_rolling", n_rolling)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise InputError(name, f"must be a nonnegative int, got {v!r}")
        vals.append(int(v))
    nb, ns, nr = vals
    if nb < 1:
        raise InputError("n_bodies", "must be >= 1")
    if ns + nr < nb:
        raise InputError("n_sliding", f"n_sliding + n_rolling = {ns + nr} must be >= n_bodies = {nb} "
                         "(every box rests on at least one contact)")
    return nb, ns, nr


def random_problem(
    seed: int,
    n_bodies: int,
    n_sliding: int,
    n_rolling: int,
    mu: float = 0.5,
    *,
    gravity: float = GRAVITY,
    max_attempts: int = 50,
) -> ContactModel:
    """A random, physically meaningful contact problem with exactly ``n_S = n_sliding`` sliding and
    ``n_R = n_rolling`` rolling contacts among ``n_bodies`` boxes (see the module docstring).

    (7) holds at every contact and (8) at the rolling ones; each sliding contact has a tangential
    speed of at least 1 cm/s. Same ``seed`` and arguments give identical arrays.
    """
    nb, ns, nr = _check_counts(n_bodies, n_sliding, n_rolling)
    mu = float(mu)
    if not np.isfinite(mu) or mu < 0:
        raise InputError("mu", f"must be finite and >= 0, got {mu!r}")
    rng = np.random.default_rng(seed)
    for _ in range(max_attempts):
        scene = _build_scene(rng, nb, ns, nr, gravity)
        n_l = 3 * len(scene["fingers"])
        geo = _make_model(scene, np.zeros(6 * nb), np.zeros(n_l), mu, None, dynamics=False)
        roll = np.array([c["rolling"] for c in scene["contacts"]], dtype=bool)
        n_c = geo.n_c
        G0 = np.hstack([geo.W.T, -geo.J]) if n_l else geo.W.T
        sel = np.concatenate([np.arange(n_c), n_c + np.flatnonzero(roll), 2 * n_c + np.flatnonzero(roll)])
        G = G0[sel]
        scales = np.concatenate([np.tile([0.3, 0.3, 0.3, 1.0, 1.0, 1.0], nb), np.ones(n_l)])
        for _ in range(10):
            x = rng.normal(size=G0.shape[1]) * scales
            x = x - np.linalg.lstsq(G, G @ x, rcond=None)[0]
            v = G0 @ x
            vT = np.hypot(v[n_c: 2 * n_c], v[2 * n_c:])
            if (~roll).any() and vT[~roll].min() < _MIN_SLIDE_SPEED:
                continue
            squeeze = rng.uniform(0.2, 1.0, len(scene["fingers"])) * gravity
            model = _make_model(scene, x[: 6 * nb], x[6 * nb:], mu, squeeze)
            if set(model.rolling.tolist()) == set(np.flatnonzero(roll).tolist()):
                model.name = f"random_problem(seed={seed}, n_bodies={nb}, n_S={ns}, n_R={nr})"
                return model
    raise RuntimeError(  # pragma: no cover - not reached for the shapes the generator builds
        f"random_problem: no consistent velocity found in {max_attempts} scenes"
    )


# ---------------------------------------------------------------------------------------------
# Table 1 of the paper: 328 data sets from 35 problems
# ---------------------------------------------------------------------------------------------

#: (n_bodies, n_S, n_R, number of friction values) of the 35 problems. The sizes n_S + 5 n_R of
#: Table 1 with its data-set counts (2:20, 10:60, 16:10, 30:26, 50:20, 90:23, 120:10, 150:6,
#: 170:10; 185 data sets from 20 problems) and 15 problems of other sizes (143 data sets), among
#: them the problems of Tables 2-4 (size 26: 4 bodies, n_S = 6, n_R = 4; size 2: 1, 2, 0;
#: size 30: 5, 5, 5; size 55: 1, 5, 10).
TRINKLE_PROBLEMS: tuple[tuple[int, int, int, int], ...] = (
    (1, 2, 0, 10), (2, 2, 0, 10),                                     # size 2
    (1, 5, 0, 10),                                                    # 5
    (1, 2, 1, 10),                                                    # 7
    (1, 5, 1, 10), (1, 0, 2, 10), (2, 5, 1, 10), (1, 10, 0, 10), (2, 0, 2, 10), (2, 10, 0, 10),  # 10
    (1, 2, 2, 10),                                                    # 12
    (1, 6, 2, 10),                                                    # 16
    (2, 6, 3, 10),                                                    # 21
    (4, 6, 4, 10),                                                    # 26 (Table 2)
    (5, 5, 5, 10), (2, 10, 4, 10), (3, 0, 6, 6),                      # 30 (Table 3)
    (3, 5, 6, 10),                                                    # 35
    (2, 10, 6, 10),                                                   # 40
    (3, 10, 7, 10),                                                   # 45
    (2, 10, 8, 10), (3, 0, 10, 10),                                   # 50
    (1, 5, 10, 10),                                                   # 55 (Table 4)
    (3, 15, 9, 10),                                                   # 60
    (4, 10, 12, 10),                                                  # 70
    (4, 15, 13, 10),                                                  # 80
    (4, 20, 14, 10), (5, 10, 16, 10), (6, 0, 18, 3),                  # 90
    (5, 20, 16, 10),                                                  # 100
    (6, 15, 19, 7),                                                   # 110
    (6, 20, 20, 10),                                                  # 120
    (7, 15, 24, 6),                                                   # 135
    (7, 10, 28, 6),                                                   # 150
    (8, 20, 30, 10),                                                  # 170
)

#: the friction coefficients of section 6 (one value for all contacts of a data set)
TRINKLE_MUS: tuple[float, ...] = tuple(round(0.1 * k, 1) for k in range(1, 11))


def problem_seed(seed: int, problem_id: int) -> int:
    """The seed of problem ``problem_id`` of :func:`trinkle_dataset` for the dataset seed ``seed``."""
    return int(np.random.SeedSequence([int(seed), int(problem_id)]).generate_state(1)[0])


def trinkle_dataset(seed: int = 0) -> list[DataSet]:
    """The 328 data sets of section 6: 35 random problems (:data:`TRINKLE_PROBLEMS`), each swept
    over the first ``k`` friction coefficients of ``0.1, 0.2, ..., 1.0`` (``k = 10`` for most).

    LCP sizes ``n_S + 5 n_R`` span 2 to 170 and include the sizes of Table 1 with its counts.
    """
    out = []
    for pid, (nb, ns, nr, n_mu) in enumerate(TRINKLE_PROBLEMS):
        s = problem_seed(seed, pid)
        base = random_problem(s, nb, ns, nr, mu=TRINKLE_MUS[0])
        for mu in TRINKLE_MUS[:n_mu]:
            out.append(DataSet(
                problem_id=pid, seed=s, mu=mu, n_bodies=nb, n_S=ns, n_R=nr, size=ns + 5 * nr,
                model=base.with_mu(mu),
            ))
    return out


def random_pyramid_lcp(size: int, seed: int, mu: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """``(M, q)`` of the pyramid LCP (37) of a random problem whose LCP has exactly ``size`` rows.

    ``n_R`` is drawn in ``[ceil(0.6 size / 5), floor(size / 5)]``, ``n_S = size - 5 n_R``, and the
    number of boxes between 1 and ``1 + n_c / 6``.
    """
    if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 1:
        raise InputError("size", f"must be an int >= 1, got {size!r}")
    from contactmp.formulations.pyramid_lcp import PyramidLCP

    rng = np.random.default_rng([int(seed), int(size)])
    hi = size // 5
    lo = min(hi, int(np.ceil(0.6 * size / 5)))
    n_R = int(rng.integers(lo, hi + 1))
    n_S = size - 5 * n_R
    n_c = n_S + n_R
    nb = int(rng.integers(1, max(1, min(n_c, 1 + n_c // 6)) + 1))
    model = random_problem(int(rng.integers(2**31)), nb, n_S, n_R, mu=mu)
    form = PyramidLCP(model)
    assert form.size == size
    return form.M, form.q


def generation_time(n: int = 20, seed: int = 0) -> float:
    """Mean seconds to build one problem of :data:`TRINKLE_PROBLEMS` (a quick benchmark)."""
    t0 = time.perf_counter()
    for k in range(n):
        nb, ns, nr, _ = TRINKLE_PROBLEMS[k % len(TRINKLE_PROBLEMS)]
        random_problem(problem_seed(seed, k), nb, ns, nr)
    return (time.perf_counter() - t0) / n
