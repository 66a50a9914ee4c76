"""Random multi-rigid-body contact problems in the manner of section 6 of Trinkle, Pang, Sudarsky
and Lo (1995), and the 328 data sets of their Table 1.

A problem with ``n_bodies`` passive boxes, ``n_S`` sliding and ``n_R`` rolling contacts is built as
a physical scene; a :class:`SceneStyle` says how it is furnished.

* Resting boxes (every style): a box stands on the ground or on top of another box (stacks), on a
  whole face (its 4 bottom corners are the contacts), on an edge (2 corners; the box is tilted about
  that edge) or on a corner (1 contact); the contact normal is the supporting face's normal,
  pointing into the upper body. Gravity acts on every box.
* Fixtured boxes (styles ``"workcell"`` and ``"fixtured"``), held by grounded fixtures:

  - ``jaws``: a box of any orientation held between the tips of two fixed pins on opposite faces,
    on one line along the faces' normal (a part clamped between two grounded jaws, or a block
    sliding in a slot between two fixed guides): 2 contacts. Opposing normals on one line make
    ``a_n1 + a_n2`` a function of the body's velocity only (zero here), so the LCP has no
    strictly feasible point, whatever the forces;
  - ``channel``: a box flush on the floor (4 corners) between two guide rods of equal height
    touching its two side faces (2 contacts each): 8 contacts, the same opposing pairs;
  - ``wall``: flush on the floor with one guide rod on one side (6 contacts: more contact
    constraints than the body's 6 degrees of freedom, a rank-deficient system Jacobian);
  - ``corner``: flush on the floor, rods on two adjacent sides (8 contacts, the box at rest);
  - ``drawer``: flush on the floor and turned a little inside a channel, touching its rods with
    two diagonally opposite vertical edges (6 contacts, not on one normal line: strictly feasible).

  Only fixtured boxes that stand on the floor (not the jaws) can carry a stacked box.

* The remaining contacts are fingertips of a manipulator: each fingertip ends a chain of three
  revolute joints rooted at the ground and touches a random point of a free box face (not the
  bottom face, a face carrying another box or a fixture); the joint torques compensate gravity and
  the velocity products and push the fingertip into the box along the contact normal. The style
  sets the link masses and how hard the fingers push (light fingers pushing with 0.2-1 g newtons
  in ``"classic"``; heavier links pushing with 0.5-3 times the touched box's weight otherwise).
* A random velocity of the boxes and joints is projected onto the set where (7) ``v_n = 0`` holds
  at every contact and (8) ``v_t = v_o = 0`` at the rolling ones (and, for a box between jaws, its
  angular velocity is along the jaw line, so the jaws stay on their faces to second order too);
  the support contacts of a box are all rolling (the box rests in its support), all sliding, or,
  for a resting box, rolling at one corner (a pivot) and sliding at the others, so the projected
  velocity keeps a nonzero tangential velocity at every sliding contact (checked, else redrawn).

The pyramid LCP (37) of such a problem has size ``n_S + 5 n_R``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from contactmp.errors import InputError
from contactmp.models.contact_model import Contact, ContactModel
from contactmp.models.rigid_bodies import (
    GRAVITY, GROUND, Manipulator, RigidBody, box_inertia, cross, link, obj, rotation_about,
)


class _Support(NamedTuple):
    """How one box is held: ``kind`` ("rest" or a fixture kind), its number of
    contacts, ``mode`` ("stick", "slide", "pivot"), its rolling and sliding counts and the weight of
    the option in the random plan."""

    kind: str
    n_touch: int
    mode: str
    n_roll: int
    n_slide: int
    weight: float


#: a box resting on the ground or on another box
_REST_SUPPORTS: tuple[_Support, ...] = (
    _Support("rest", 4, "stick", 4, 0, 3.0),
    _Support("rest", 4, "slide", 0, 4, 3.0),
    _Support("rest", 4, "pivot", 1, 3, 2.0),
    _Support("rest", 2, "stick", 2, 0, 1.0),
    _Support("rest", 2, "slide", 0, 2, 1.0),
    _Support("rest", 2, "pivot", 1, 1, 1.0),
    _Support("rest", 1, "stick", 1, 0, 0.5),
    _Support("rest", 1, "slide", 0, 1, 0.5),
)

#: a box held by grounded fixtures (see the module docstring)
_FIXTURE_SUPPORTS: tuple[_Support, ...] = (
    _Support("jaws", 2, "stick", 2, 0, 1.0),
    _Support("jaws", 2, "slide", 0, 2, 1.0),
    _Support("wall", 6, "stick", 6, 0, 1.0),
    _Support("wall", 6, "slide", 0, 6, 1.0),
    _Support("channel", 8, "stick", 8, 0, 1.0),
    _Support("channel", 8, "slide", 0, 8, 1.0),
    _Support("corner", 8, "stick", 8, 0, 1.0),
    _Support("drawer", 6, "stick", 6, 0, 1.0),
    _Support("drawer", 6, "slide", 0, 6, 1.0),
)

#: the faces a fingertip may touch on a box, as (axis, sign) in the box frame (never the bottom)
_SIDE_FACES = ((0, 1), (0, -1), (1, 1), (1, -1))
#: the signs (x, y) of a box's four bottom corners, counter-clockwise
_CORNERS = ((-1, -1), (1, -1), (1, 1), (-1, 1))


@dataclass(frozen=True)
class SceneStyle:
    """How a random scene is furnished.

    ``fixtures`` scales the weights of the fixture supports against the resting ones in the random
    plan (0: never; ``inf``: a fixture for every box that one fits within the contact budget).
    ``link_mass`` is the range [kg] of each finger link's mass. Each fingertip pushes into its box
    along the contact normal with a force drawn from ``push``, in newtons per ``gravity`` (so
    ``push = (0.2, 1)`` is 0.2-1 kgf) or, with ``push_per_weight``, in multiples of the touched box's
    weight. ``fixture_kinds`` restricts the fixtures to those kinds (of "jaws", "wall", "channel",
    "corner", "drawer").
    """

    name: str
    fixtures: float
    link_mass: tuple[float, float]
    push: tuple[float, float]
    push_per_weight: bool
    fixture_kinds: tuple[str, ...] = ("jaws", "wall", "channel", "corner", "drawer")


#: the named styles: ``"classic"`` (resting boxes, light fingers; the default, unchanged arrays),
#: ``"heavy"`` (resting boxes, heavy fingers pushing hard), ``"workcell"`` (resting and fixtured
#: boxes mixed, heavy fingers) and ``"fixtured"`` (every box in a fixture when one fits)
STYLES: dict[str, SceneStyle] = {
    "classic": SceneStyle("classic", 0.0, (0.05, 0.3), (0.2, 1.0), False),
    "heavy": SceneStyle("heavy", 0.0, (0.5, 3.0), (0.5, 3.0), True),
    "workcell": SceneStyle("workcell", 1.0, (0.5, 3.0), (0.5, 3.0), True),
    "fixtured": SceneStyle("fixtured", math.inf, (0.5, 3.0), (0.5, 3.0), True),
}

#: minimum tangential speed [m/s] kept at a sliding contact after the projection
_MIN_SLIDE_SPEED = 1e-2


@dataclass(frozen=True)
class DataSet:
    """One data set of the Table 1 benchmark: a problem and a friction coefficient.

    ``model`` is the :class:`ContactModel` with ``mu`` at every contact; ``size`` is the size of its
    pyramid LCP, ``n_S + 5 n_R``. ``random_problem(seed, n_bodies, n_S, n_R, mu, style=style)``
    rebuilds it.
    """

    problem_id: int
    seed: int
    mu: float
    n_bodies: int
    n_S: int
    n_R: int
    size: int
    model: ContactModel
    style: str = "classic"


@dataclass
class _Box:
    half: np.ndarray
    mass: float
    R: np.ndarray
    x: np.ndarray
    support: str  # "ground", f"box{index}" or the fixture kind
    has_child: bool = False
    can_carry: bool = True  # False: no box may be stacked on it (a box between jaws)
    free_faces: tuple[tuple[int, int], ...] | None = None  # None: the sides, and the top if free

    def finger_faces(self) -> list[tuple[int, int]]:
        """Faces (axis, sign) a fingertip may touch."""
        if self.free_faces is not None:
            return [f for f in self.free_faces if not (f == (2, 1) and self.has_child)]
        return list(_SIDE_FACES) + ([] if self.has_child else [(2, 1)])


def _as_style(style: str | SceneStyle) -> SceneStyle:
    if isinstance(style, SceneStyle):
        unknown = set(style.fixture_kinds) - {opt.kind for opt in _FIXTURE_SUPPORTS}
        if unknown:
            raise InputError("style", f"unknown fixture kinds {sorted(unknown)}")
        lo, hi = style.link_mass
        if not 0 < lo <= hi or not 0 <= style.push[0] <= style.push[1] or not style.fixtures >= 0:
            raise InputError("style", "needs 0 < link_mass[0] <= link_mass[1], 0 <= push[0] <= push[1] "
                             "and fixtures >= 0")
        return style
    if isinstance(style, str) and style in STYLES:
        return STYLES[style]
    raise InputError("style", f"must be a SceneStyle or one of {sorted(STYLES)}, got {style!r}")


def _plan_supports(rng: np.random.Generator, n_bodies: int, n_S: int, n_R: int,
                   style: SceneStyle) -> list[_Support]:
    """Choose the support of each box within the budgets ``n_R``, ``n_S``."""
    fixtures = tuple(opt for opt in _FIXTURE_SUPPORTS if opt.kind in style.fixture_kinds)
    options = _REST_SUPPORTS + (fixtures if style.fixtures > 0 else ())
    plan = []
    r_left, s_left = n_R, n_S
    for b in range(n_bodies):
        boxes_after = n_bodies - b - 1
        feasible = [
            opt for opt in options
            if opt.n_roll <= r_left and opt.n_slide <= s_left
            and (r_left - opt.n_roll) + (s_left - opt.n_slide) >= boxes_after
        ]
        if math.isinf(style.fixtures) and any(opt.kind != "rest" for opt in feasible):
            feasible = [opt for opt in feasible if opt.kind != "rest"]
            w = np.array([opt.weight for opt in feasible])
        else:
            w = np.array([opt.weight * (1.0 if opt.kind == "rest" else style.fixtures) for opt in feasible])
        opt = feasible[int(rng.choice(len(feasible), p=w / w.sum()))]
        plan.append(opt)
        r_left -= opt.n_roll
        s_left -= opt.n_slide
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
        corners = [c0 + R0 @ np.array([sx * hx, sy * hy, -hz]) for sx, sy in _CORNERS]
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
    corners = [c0 + np.array([sx * hx, sy * hy, -hz]) for sx, sy in _CORNERS]
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
    rng: np.random.Generator, p: np.ndarray, out_normal: np.ndarray, link_mass: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A three-joint chain whose tip is at ``p``, reaching in from the side ``out_normal``, with link
    masses drawn from ``link_mass``.

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
            masses = rng.uniform(link_mass[0], link_mass[1], 3)
            seg = np.linalg.norm(ends - origins, axis=1)
            inertias = np.array([m * (L * L / 12.0 + 1e-3) * np.eye(3) for m, L in zip(masses, seg)])
            return axes, origins, masses, centers, inertias
    raise RuntimeError("could not build a well-conditioned finger")  # pragma: no cover


def _contact_kw(b: int, point: np.ndarray, normal: np.ndarray, tangent: np.ndarray, face: str,
                rolling: bool, body_k: Any = GROUND) -> dict[str, Any]:
    return dict(body_i=obj(b), body_k=body_k, point=point, normal=normal, tangent=tangent, face=face,
                rolling=rolling)


def _floor_contacts(rng: np.random.Generator, b: int, x: np.ndarray, R: np.ndarray, half: np.ndarray,
                    roll: bool) -> tuple[list[np.ndarray], list[dict[str, Any]]]:
    """The bottom corners (box frame) of a box flush on the floor and their contacts (normal ``e_z``)."""
    feet = [np.array([sx * half[0], sy * half[1], -half[2]]) for sx, sy in _CORNERS]
    return feet, [_contact_kw(b, x + R @ f, np.array([0.0, 0.0, 1.0]), _in_plane_tangent(rng, np.eye(3)), "k", roll)
                  for f in feet]


def _jaw_box(rng: np.random.Generator, b: int, sup: _Support, half: np.ndarray, mass: float,
             origin: np.ndarray) -> tuple[_Box, list[dict[str, Any]], list[np.ndarray]]:
    """A box of random orientation held clear of the ground between two fixed pin tips touching
    its faces ``-k`` and ``+k`` on one line along the box axis ``k``.

    Returns the box, its two contacts (normal into the box, the box's face carrying the contact)
    and the two velocity constraints ``e . omega = 0`` (``e`` perpendicular to the jaw line) that
    keep the pins on their faces to second order."""
    R = rotation_about(rng.normal(size=3), rng.uniform(0.0, np.pi))
    x = origin + np.array([0.0, 0.0, 0.6 + float(np.linalg.norm(half))])
    k = int(rng.integers(3))
    u = rng.uniform(-0.6, 0.6, 3) * half
    n = R[:, k].copy()
    E = np.column_stack([R[:, (k + 1) % 3], R[:, (k + 2) % 3], n])
    contacts = []
    for sgn in (-1.0, 1.0):  # the pin under face -k pushes along +n, the one on face +k along -n
        local = u.copy()
        local[k] = sgn * half[k]
        contacts.append(_contact_kw(b, x + R @ local, -sgn * n, _in_plane_tangent(rng, E), "i",
                                    sup.mode == "stick"))
    free = tuple((a, s) for a in range(3) if a != k for s in (1, -1))
    box = _Box(half=half, mass=mass, R=R, x=x, support="jaws", can_carry=False, free_faces=free)
    locks = [np.concatenate([np.zeros(3), E[:, i]]) for i in range(2)]
    return box, contacts, locks


#: the sides of a box (axis, sign) touched by guide rods, per fixture kind (the sign of "wall" and
#: the signs of "corner" are drawn)
_RODS = {"channel": ((1, 1), (1, -1)), "wall": ((1, 0),), "corner": ((1, 0), (0, 0))}


def _railed_box(rng: np.random.Generator, b: int, sup: _Support, half: np.ndarray, mass: float,
                origin: np.ndarray) -> tuple[_Box, list[dict[str, Any]]]:
    """A box flush on the floor (4 corner contacts) touched on its sides by horizontal guide rods
    of one height (2 contacts per rod, where the rod meets the face's vertical edges; the normal is
    the face's inward normal). ``channel``: rods on both sides (y faces); ``wall``: one rod;
    ``corner``: rods on one y face and one x face."""
    yaw = rng.uniform(-np.pi, np.pi)
    R = rotation_about([0.0, 0.0, 1.0], yaw)
    x = origin + np.array([0.0, 0.0, half[2]])
    roll = sup.mode == "stick"
    _, contacts = _floor_contacts(rng, b, x, R, half, roll)
    rods = [(a, s if s else (1 if rng.random() < 0.5 else -1)) for a, s in _RODS[sup.kind]]
    height = rng.uniform(0.3, 0.8) * 2.0 * half[2]
    for a, s in rods:
        other = 1 - a
        normal = -s * R[:, a]
        E = np.column_stack([R[:, other], np.array([0.0, 0.0, 1.0]), normal])
        for e in (-1, 1):
            local = np.zeros(3)
            local[a] = s * half[a]
            local[other] = e * half[other]
            local[2] = height - half[2]
            contacts.append(_contact_kw(b, x + R @ local, normal, _in_plane_tangent(rng, E), "i", roll))
    free = tuple(f for f in _SIDE_FACES if f not in rods) + ((2, 1),)
    return _Box(half=half, mass=mass, R=R, x=x, support=sup.kind, free_faces=free), contacts


def _drawer_box(rng: np.random.Generator, b: int, sup: _Support, half: np.ndarray, mass: float,
                origin: np.ndarray) -> tuple[_Box, list[dict[str, Any]]]:
    """A box flush on the floor (4 corner contacts), turned by a small angle inside a channel of
    guide rods (one height) whose width is the box's extent across it, so that two diagonally
    opposite vertical edges touch the rods (a drawer cocked in its slot): 6 contacts, the rod
    contacts not on one normal line. Sliding along the channel, friction at the rods can wedge it."""
    psi = rng.uniform(-np.pi, np.pi)
    Rc = rotation_about([0.0, 0.0, 1.0], psi)  # the channel frame: x along the channel
    theta = rng.uniform(0.05, 0.3) * (1 if rng.random() < 0.5 else -1)
    R = Rc @ rotation_about([0.0, 0.0, 1.0], theta)
    x = origin + np.array([0.0, 0.0, half[2]])
    roll = sup.mode == "stick"
    ez = np.array([0.0, 0.0, 1.0])
    feet, contacts = _floor_contacts(rng, b, x, R, half, roll)
    across = np.array([(Rc.T @ R @ f)[1] for f in feet])  # corner coordinates across the channel
    height = rng.uniform(0.3, 0.8) * 2.0 * half[2]
    for k, sgn in ((int(np.argmin(across)), 1.0), (int(np.argmax(across)), -1.0)):
        local = feet[k].copy()
        local[2] = height - half[2]
        normal = sgn * Rc[:, 1]  # the rod's normal, into the box
        E = np.column_stack([Rc[:, 0], ez, normal])
        contacts.append(_contact_kw(b, x + R @ local, normal, _in_plane_tangent(rng, E), "k", roll))
    return _Box(half=half, mass=mass, R=R, x=x, support="drawer", free_faces=_SIDE_FACES + ((2, 1),)), contacts


def _build_scene(rng: np.random.Generator, n_bodies: int, n_S: int, n_R: int, gravity: float,
                 style: SceneStyle) -> dict[str, Any]:
    """Geometry, contacts and planned modes of one random scene (velocities not yet set)."""
    plan = _plan_supports(rng, n_bodies, n_S, n_R, style)
    boxes: list[_Box] = []
    contacts: list[dict[str, Any]] = []  # kwargs of Contact, plus "rolling"
    locks: list[tuple[int, np.ndarray]] = []  # (box, 6-vector w with w . qdot_box = 0)
    n_ground = 0
    for b, sup in enumerate(plan):
        if sup.kind != "rest":
            half = rng.uniform(0.15, 0.4, 3)
            mass = float(rng.uniform(0.5, 3.0))
            origin = np.array([1.6 * n_ground, rng.uniform(-0.2, 0.2), 0.0])
            n_ground += 1
            if sup.kind == "jaws":
                box, cts, lk = _jaw_box(rng, b, sup, half, mass, origin)
                locks += [(b, w) for w in lk]
            elif sup.kind == "drawer":
                box, cts = _drawer_box(rng, b, sup, half, mass, origin)
            else:
                box, cts = _railed_box(rng, b, sup, half, mass, origin)
            boxes.append(box)
            contacts += cts
            continue
        n_touch, mode = sup.n_touch, sup.mode
        candidates = [p for p, bx in enumerate(boxes) if bx.can_carry and not bx.has_child]
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
        box = _Box(half=half, mass=mass, R=E @ R_loc, x=oF + E @ x_loc,
                   support="ground" if parent < 0 else f"box{parent}")
        boxes.append(box)
        if mode == "stick":
            rolling = [True] * n_touch
        elif mode == "slide":
            rolling = [False] * n_touch
        else:
            rolling = [False] * n_touch
            rolling[int(rng.integers(n_touch))] = True
        for corner, roll in zip(touch, rolling):
            contacts.append(_contact_kw(b, oF + E @ corner, E[:, 2].copy(), _in_plane_tangent(rng, E), "k", roll,
                                        GROUND if parent < 0 else obj(parent)))
    r_left = n_R - sum(p.n_roll for p in plan)
    s_left = n_S - sum(p.n_slide for p in plan)
    finger_modes = [True] * r_left + [False] * s_left
    rng.shuffle(finger_modes)
    fingers, finger_box = [], []
    for f, roll in enumerate(finger_modes):
        b = int(rng.integers(n_bodies))
        bx = boxes[b]
        faces = bx.finger_faces()
        axis, sgn = faces[int(rng.integers(len(faces)))]
        local = rng.uniform(-0.8, 0.8, 3) * bx.half
        local[axis] = sgn * bx.half[axis]
        p = bx.x + bx.R @ local
        out = sgn * bx.R[:, axis]
        fingers.append(_finger(rng, p, out, style.link_mass))
        finger_box.append(b)
        E = np.column_stack([bx.R[:, (axis + 1) % 3], bx.R[:, (axis + 2) % 3], -out])
        contacts.append(_contact_kw(b, p, -out, _in_plane_tangent(rng, E), "i", roll, link(3 * f + 2)))
    return {"boxes": boxes, "contacts": contacts, "fingers": fingers, "finger_box": finger_box,
            "locks": locks, "gravity": gravity}


def _make_model(scene: dict[str, Any], qdot: np.ndarray, ldot: np.ndarray, mu: float,
                squeeze: np.ndarray | None, dynamics: bool = True) -> ContactModel:
    """The scene as a :class:`ContactModel` (``dynamics=False``: kinematics only, unit joint inertia).

    Finger ``f`` pushes on its box with ``squeeze[f]`` along the contact normal (joint torques
    ``J_v^T n squeeze[f]`` on top of gravity and velocity-product compensation)."""
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


def random_problem(seed: int, n_bodies: int, n_sliding: int, n_rolling: int, mu: float = 0.5, *,
                   gravity: float = GRAVITY, max_attempts: int = 50,
                   style: str | SceneStyle = "classic") -> ContactModel:
    """A random, physically meaningful contact problem with exactly ``n_S = n_sliding`` sliding and
    ``n_R = n_rolling`` rolling contacts among ``n_bodies`` boxes, furnished as ``style`` says (a
    name of :data:`STYLES` or a :class:`SceneStyle`; see the module docstring).

    (7) holds at every contact and (8) at the rolling ones; each sliding contact has a tangential
    speed of at least 1 cm/s. Same ``seed`` and arguments give identical arrays.
    """
    st = _as_style(style)
    nb, ns, nr = _check_counts(n_bodies, n_sliding, n_rolling)
    mu = float(mu)
    if not np.isfinite(mu) or mu < 0:
        raise InputError("mu", f"must be finite and >= 0, got {mu!r}")
    rng = np.random.default_rng(seed)
    for _ in range(max_attempts):
        scene = _build_scene(rng, nb, ns, nr, gravity, st)
        n_l = 3 * len(scene["fingers"])
        geo = _make_model(scene, np.zeros(6 * nb), np.zeros(n_l), mu, None, dynamics=False)
        roll = np.array([c["rolling"] for c in scene["contacts"]], dtype=bool)
        n_c = geo.n_c
        G0 = np.hstack([geo.W.T, -geo.J]) if n_l else geo.W.T
        sel = np.concatenate([np.arange(n_c), n_c + np.flatnonzero(roll), 2 * n_c + np.flatnonzero(roll)])
        G = G0[sel]
        if scene["locks"]:
            L = np.zeros((len(scene["locks"]), G0.shape[1]))
            for r, (b, w) in enumerate(scene["locks"]):
                L[r, 6 * b: 6 * b + 6] = w
            G = np.vstack([G, L])
        scales = np.concatenate([np.tile([0.3, 0.3, 0.3, 1.0, 1.0, 1.0], nb), np.ones(n_l)])
        for _ in range(10):
            x = rng.normal(size=G0.shape[1]) * scales
            x = x - np.linalg.lstsq(G, G @ x, rcond=None)[0]
            v = G0 @ x
            vT = np.hypot(v[n_c: 2 * n_c], v[2 * n_c:])
            if (~roll).any() and vT[~roll].min() < _MIN_SLIDE_SPEED:
                continue
            squeeze = rng.uniform(st.push[0], st.push[1], len(scene["fingers"])) * gravity
            if st.push_per_weight:
                squeeze = squeeze * np.array([scene["boxes"][b].mass for b in scene["finger_box"]])
            model = _make_model(scene, x[: 6 * nb], x[6 * nb:], mu, squeeze)
            if set(model.rolling.tolist()) == set(np.flatnonzero(roll).tolist()):
                model.name = f"random_problem(seed={seed}, n_bodies={nb}, n_S={ns}, n_R={nr}" + (
                    ")" if st.name == "classic" else f", style={st.name!r})")
                return model
    raise RuntimeError(  # pragma: no cover - not reached for the shapes the generator builds
        f"random_problem: no consistent velocity found in {max_attempts} scenes"
    )


# ---------------------------------------------------------------------------------------------
# Table 1 of the paper: 328 data sets from 35 problems
# ---------------------------------------------------------------------------------------------

#: (n_bodies, n_S, n_R, number of friction values, style) of the 35 problems. The sizes n_S + 5 n_R
#: of Table 1 with its data-set counts (2:20, 10:60, 16:10, 30:26, 50:20, 90:23, 120:10, 150:6,
#: 170:10; 185 data sets from 20 problems) and 15 problems of other sizes (143 data sets), among
#: them the problems of Tables 2-4 (size 26: 4 bodies, n_S = 6, n_R = 4; size 2: 1, 2, 0;
#: size 30: 5, 5, 5; size 55: 1, 5, 10). The styles (:data:`STYLES`) go round "classic", "heavy",
#: "workcell" by problem number, except problem 0, the size-2 problem of Table 3: a block sliding
#: between two fixed jaws ("fixtured"), whose LCP has no strictly feasible point for any mu.
TRINKLE_PROBLEMS: tuple[tuple[int, int, int, int, str], ...] = (
    (1, 2, 0, 10, "fixtured"), (2, 2, 0, 10, "heavy"),                # size 2
    (1, 5, 0, 10, "workcell"),                                        # 5
    (1, 2, 1, 10, "classic"),                                         # 7
    # 10
    (1, 5, 1, 10, "heavy"),
    (1, 0, 2, 10, "workcell"),
    (2, 5, 1, 10, "classic"),
    (1, 10, 0, 10, "heavy"),
    (2, 0, 2, 10, "workcell"),
    (2, 10, 0, 10, "classic"),
    (1, 2, 2, 10, "heavy"),                                           # 12
    (1, 6, 2, 10, "workcell"),                                        # 16
    (2, 6, 3, 10, "classic"),                                         # 21
    (4, 6, 4, 10, "heavy"),                                           # 26 (Table 2)
    # 30 (Table 3)
    (5, 5, 5, 10, "workcell"),
    (2, 10, 4, 10, "classic"),
    (3, 0, 6, 6, "heavy"),
    (3, 5, 6, 10, "workcell"),                                        # 35
    (2, 10, 6, 10, "classic"),                                        # 40
    (3, 10, 7, 10, "heavy"),                                          # 45
    (2, 10, 8, 10, "workcell"), (3, 0, 10, 10, "classic"),            # 50
    (1, 5, 10, 10, "heavy"),                                          # 55 (Table 4)
    (3, 15, 9, 10, "workcell"),                                       # 60
    (4, 10, 12, 10, "classic"),                                       # 70
    (4, 15, 13, 10, "heavy"),                                         # 80
    # 90
    (4, 20, 14, 10, "workcell"),
    (5, 10, 16, 10, "classic"),
    (6, 0, 18, 3, "heavy"),
    (5, 20, 16, 10, "workcell"),                                      # 100
    (6, 15, 19, 7, "classic"),                                        # 110
    (6, 20, 20, 10, "heavy"),                                         # 120
    (7, 15, 24, 6, "workcell"),                                       # 135
    (7, 10, 28, 6, "classic"),                                        # 150
    (8, 20, 30, 10, "heavy"),                                         # 170
)

#: the friction coefficients of section 6 (one value for all contacts of a data set)
TRINKLE_MUS: tuple[float, ...] = tuple(round(0.1 * k, 1) for k in range(1, 11))


def problem_seed(seed: int, problem_id: int) -> int:
    """The seed of problem ``problem_id`` of :func:`trinkle_dataset` for the dataset seed ``seed``."""
    return int(np.random.SeedSequence([int(seed), int(problem_id)]).generate_state(1)[0])


def trinkle_dataset(seed: int = 0) -> list[DataSet]:
    """The 328 data sets of section 6: 35 random problems (:data:`TRINKLE_PROBLEMS`, each built in
    its style), each swept over the first ``k`` friction coefficients of ``0.1, 0.2, ..., 1.0``
    (``k = 10`` for most).

    LCP sizes ``n_S + 5 n_R`` span 2 to 170 and include the sizes of Table 1 with its counts.
    """
    out = []
    for pid, (nb, ns, nr, n_mu, style) in enumerate(TRINKLE_PROBLEMS):
        s = problem_seed(seed, pid)
        base = random_problem(s, nb, ns, nr, mu=TRINKLE_MUS[0], style=style)
        for mu in TRINKLE_MUS[:n_mu]:
            out.append(DataSet(
                problem_id=pid, seed=s, mu=mu, n_bodies=nb, n_S=ns, n_R=nr, size=ns + 5 * nr,
                model=base.with_mu(mu), style=style,
            ))
    return out
