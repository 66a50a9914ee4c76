"""Every robot of example-robot-data as a :class:`~contactmp.models.symbolic.ContactSystem`: the
catalogue, the contact points, the standing (or initial) pose, and a one-call simulation.

Catalogue (:func:`example_robots`): when the package's Python module ``example_robot_data`` can be
imported (it needs pinocchio), its ``ROBOTS`` table gives each robot's URDF and ``free_flyer``
flag. The cmeel wheel installed without pinocchio ships only the data, so otherwise every ``*.urdf``
file under its ``robots`` folder is a robot, named ``"<description folder>/<file stem>"``, and its
base follows :func:`base_rule`: a free-flyer when the URDF has foot links (:func:`foot_links`) or no
movable joint (a single body such as a quadrotor's frame), a fixed base otherwise (arms, hands,
mobile manipulators whose wheels are not modelled, upper bodies).

Contacts (:func:`robot_contact_points`): point contacts against the flat ground ``z = 0``.

* feet: the leaf links (no joint's parent) whose name contains, as a word (split at ``_``, ``/``,
  digits and lower-to-upper case changes), the first of ``sole``, ``foot``/``feet``, ``toe``,
  ``ankle``, ``contact`` that any leaf link contains; one point at the link frame's origin.
  A robot with exactly two feet (a biped) gets four points per foot, at the bottom corners of the
  foot link's ``<collision>`` box if it has one, else at ``(+-0.05, +-0.025, 0)`` m in the foot frame.
* a free-flyer without feet: one point at each leaf link's origin (it is dropped).
* a fixed base: no contact (it moves under gravity, held by the PD).

Joints (:func:`modelled_joints`): every revolute and continuous joint without ``<mimic>`` that
carries mass is modelled and actuated; mimic joints (adam-robotics ignores ``<mimic>``), prismatic
joints (adam-robotics 0.5.0 cannot model them in CasADi, :func:`~contactmp.models.urdf.adam_urdf_text`)
and joints whose subtree has no mass are locked at 0.

Initial pose (:func:`initial_pose`): the joints take the SRDF reference posture (the first group
state among ``standing``, ``half_sitting``, ``straight_standing``, ``arm_up``, ``default``,
``hanging``, ``home``, ``neutral``, then the first group state, of the SRDF files beside the URDF)
where one names them, else 0 clipped into the joint's ``<limit>``; a free-flyer's base is at
``x = y = 0`` with its lowest contact point at ``z = 0`` (standing) or ``drop`` above it, level, or,
for a robot on its feet, turned by the axis-aligned rotation (:data:`UP_CANDIDATES`) that puts its
root highest above its lowest contact when that beats level by more than 1 mm (a model drawn with
y up stands upright).

The one-call simulation of a robot standing or dropped is
:func:`contactmp.transcriptions.robot_zoo.simulate_example_robot` (a model does not import the
time stepping).
"""
from __future__ import annotations

import contextlib
import functools
import io
import importlib
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contactmp.errors import InputError
from contactmp.models.symbolic import ContactSystem
from contactmp.models.urdf import (
    PAD_JOINT, ContactSpec, URDFInfo, adam_urdf_text, example_robot_data_dir, joint_limits, read_urdf, urdf_system,
)

__all__ = ["ExampleRobot", "example_robots", "base_rule", "foot_links", "robot_contact_points",
           "initial_pose", "UP_CANDIDATES", "example_robot", "example_robot_tree", "massless_joints", "modelled_joints", "FOOT_WORDS",
           "REFERENCE_POSTURES"]

#: words marking a foot link, in order of preference (the first that any leaf link has wins)
FOOT_WORDS: tuple[tuple[str, ...], ...] = (("sole",), ("foot", "feet"), ("toe",), ("ankle",), ("contact",))
#: SRDF group states tried in this order for the initial joint positions
REFERENCE_POSTURES = ("standing", "half_sitting", "straight_standing", "arm_up", "default", "hanging",
                      "home", "neutral")
#: half length and half width (m) of a biped foot's contact rectangle without a collision box
BIPED_FOOT_HALF = (0.05, 0.025)


@dataclass(frozen=True)
class ExampleRobot:
    """One robot of example-robot-data: its ``name`` (``"<description>/<stem>"``), ``urdf`` path,
    whether its root is a ``free_flyer``, and where that came from (``base_source``: ``"ROBOTS"``
    for the package's own table, else the rule of :func:`base_rule`)."""

    name: str
    urdf: Path
    free_flyer: bool
    base_source: str

    @property
    def description(self) -> str:
        """The description folder of example-robot-data holding the URDF."""
        return self.name.split("/")[0]


def _words(name: str) -> set[str]:
    """The lowercase words of a link name: split at non-letters and lower-to-upper case changes."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)
    return {w.lower() for w in re.split(r"[^A-Za-z]+", spaced) if w}


def foot_links(info: URDFInfo) -> tuple[str, ...]:
    """The leaf links named as feet (module docstring): the leaves containing the first word of
    :data:`FOOT_WORDS` that any leaf contains; ``()`` when none does."""
    leaves = info.leaf_links
    for words in FOOT_WORDS:
        hits = tuple(ln for ln in leaves if _words(ln) & set(words))
        if hits:
            return hits
    return ()


def base_rule(info: URDFInfo) -> bool:
    """Free-flyer when the package's table is not available: foot links or no movable joint."""
    return bool(foot_links(info)) or not info.movable_joints


def _robots_table() -> list[ExampleRobot] | None:
    """The robots of ``example_robot_data.robots_loader.ROBOTS`` (URDF loaders only), or None when
    that module cannot be imported."""
    try:
        mod = importlib.import_module("example_robot_data.robots_loader")
    except Exception:  # absent, or pinocchio missing: the data-only wheel
        return None
    root = example_robot_data_dir()
    out = []
    for key, cls in getattr(mod, "ROBOTS", {}).items():
        fname = getattr(cls, "urdf_filename", "")
        if not fname:
            continue  # an SDF robot (Cassie): not a URDF
        path = root / cls.path / cls.urdf_subpath / fname
        out.append(ExampleRobot(key, path, bool(cls.free_flyer), "ROBOTS"))
    return out


def example_robots() -> list[ExampleRobot]:
    """Every robot of the installed example-robot-data (module docstring: the package's ``ROBOTS``
    table when importable, else every URDF file with :func:`base_rule`), sorted by name. A URDF
    that cannot be read is still listed (with ``free_flyer=False``): loading it raises the error.
    The list is computed once per robots folder."""
    return list(_catalogue(example_robot_data_dir()))


@functools.lru_cache(maxsize=4)
def _catalogue(root: Path) -> tuple[ExampleRobot, ...]:
    table = _robots_table()
    if table is not None:
        return tuple(sorted(table, key=lambda r: r.name))
    out = []
    for path in sorted(root.glob("**/*.urdf")):
        name = f"{path.relative_to(root).parts[0]}/{path.stem}"
        try:
            ff = base_rule(read_urdf(path))
        except InputError:
            ff = False
        out.append(ExampleRobot(name, path, ff, "rule: feet or no movable joint -> free-flyer"))
    return tuple(sorted(out, key=lambda r: r.name))


def massless_joints(info: URDFInfo) -> tuple[str, ...]:
    """The movable joints whose child subtree has no ``<inertial>`` ``<mass>`` > 0 (they move no
    mass: modelling them would make ``M`` singular; Romeo's ``LHand``, ``RHand``)."""
    root = ET.fromstring(info.text)
    mass = {ln.get("name"): sum(float(m.get("value", "0")) for m in ln.iter("mass"))
            for ln in root.findall("link")}
    kids: dict[str, list[str]] = {}
    for _, parent, child in info.joints.values():
        kids.setdefault(parent, []).append(child)

    def sub(link: str, depth: int = 0) -> float:
        if depth > len(info.links):  # a cycle: not a tree
            raise InputError("urdf", f"{info.source}: the joints do not form a tree (cycle at <link {link}>)")
        return mass.get(link, 0.0) + sum(sub(c, depth + 1) for c in kids.get(link, []))

    return tuple(j for j in info.movable_joints if not sub(info.joints[j][2]) > 0)


def modelled_joints(info: URDFInfo) -> tuple[str, ...]:
    """The joints :func:`example_robot` models: :attr:`URDFInfo.default_joints` (no mimic, no
    prismatic joint) less :func:`massless_joints`; the others are locked at 0."""
    light = set(massless_joints(info))
    return tuple(j for j in info.default_joints if j not in light)


def find_robot(name: str | ExampleRobot) -> ExampleRobot:
    if isinstance(name, ExampleRobot):
        return name
    robots = example_robots()
    hits = ([r for r in robots if r.name == name] or [r for r in robots if r.name.split("/")[-1] == name]
            or [r for r in robots if r.urdf.stem == name])
    if len(hits) != 1:
        what = "ambiguous" if hits else "unknown"
        raise InputError("robot", f"{what} example-robot-data robot {name!r}; robots: "
                                  f"{', '.join(r.name for r in (hits or robots))}")
    return hits[0]


def _collision_box(root: ET.Element, link: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(center, size)`` of the first ``<collision>`` ``<box>`` of ``link`` (rotation ignored)."""
    for el in root.findall("link"):
        if el.get("name") != link:
            continue
        for col in el.findall("collision"):
            box = col.find("geometry/box")
            if box is not None and box.get("size"):
                org = col.find("origin")
                xyz = np.array([float(x) for x in (org.get("xyz", "0 0 0") if org is not None else "0 0 0").split()])
                return xyz, np.array([float(x) for x in box.get("size", "").split()])
    return None


def robot_contact_points(info: URDFInfo, free_flyer: bool) -> dict[str, ContactSpec]:
    """The contact points of the module docstring, ``{name: (link, offset)}``."""
    if not free_flyer:
        return {}
    feet = foot_links(info)
    if len(feet) == 2:
        root = ET.fromstring(info.text)
        out: dict[str, ContactSpec] = {}
        for foot in feet:
            box = _collision_box(root, foot)
            if box is not None:
                c, size = box
                hx, hy, z = size[0] / 2, size[1] / 2, c[2] - size[2] / 2
                cx, cy = c[0], c[1]
            else:
                (hx, hy), z, cx, cy = BIPED_FOOT_HALF, 0.0, 0.0, 0.0
            for tag, (sx, sy) in zip(("fl", "fr", "hl", "hr"), ((1, 1), (1, -1), (-1, 1), (-1, -1))):
                out[f"{foot}_{tag}"] = (foot, (cx + sx * hx, cy + sy * hy, z))
        return out
    links = feet or info.leaf_links
    return {ln: (ln, (0.0, 0.0, 0.0)) for ln in links}


def _srdf_posture(info: URDFInfo, urdf: Path | None) -> dict[str, float]:
    """Joint values of the first reference group state (module docstring) of the SRDFs beside the
    URDF (``<description>/srdf/*.srdf``); ``{}`` when there is none."""
    if urdf is None:
        return {}
    try:
        desc = urdf.parent.parent if urdf.parent.name in ("urdf", "robots") else urdf.parent
        srdfs = sorted(desc.glob("srdf/*.srdf"))
    except OSError:
        return {}
    # prefer the SRDF named after the URDF, then any
    srdfs.sort(key=lambda p: (p.stem != urdf.stem, p.name))
    for path in srdfs:
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError:
            continue
        states = {gs.get("name"): gs for gs in root.findall("group_state")}
        order = [n for n in REFERENCE_POSTURES if n in states] + list(states)
        for name in order:
            vals = {}
            for j in states[name].findall("joint"):
                nm, raw = j.get("name"), j.get("value")
                if nm in info.joints and raw is not None and len(raw.split()) == 1:
                    vals[nm] = float(raw)
            if vals:
                return vals
    return {}


#: the base orientations (quaternions w, x, y, z) tried for a robot standing on its feet: the
#: identity, +-90 deg about x and y, 180 deg about x
UP_CANDIDATES = tuple(np.array(qt) for qt in (
    (1.0, 0.0, 0.0, 0.0), (math.sqrt(0.5), math.sqrt(0.5), 0.0, 0.0), (math.sqrt(0.5), -math.sqrt(0.5), 0.0, 0.0),
    (math.sqrt(0.5), 0.0, math.sqrt(0.5), 0.0), (math.sqrt(0.5), 0.0, -math.sqrt(0.5), 0.0), (0.0, 1.0, 0.0, 0.0)))


def initial_pose(sys_: ContactSystem, info: URDFInfo, free_flyer: bool, urdf: Path | None = None,
                 drop: float = 0.0, upright: bool = False) -> np.ndarray:
    """The initial configuration of the module docstring (free-flyer: lowest contact at ``drop``).
    ``upright``: the base orientation is the one of :data:`UP_CANDIDATES` that puts the root link
    highest above its lowest contact (the identity unless another is higher by more than 1 mm; a
    model drawn with y up, such as example-robot-data's ``human``, is turned upright)."""
    posture = _srdf_posture(info, urdf)
    limits = joint_limits(info.text)
    n_b = 7 if free_flyer else 0
    q = np.zeros(sys_.n_q)
    if free_flyer:
        q[3] = 1.0
    for i, jn in enumerate(sys_.q_names[n_b:]):
        lo, hi, _, _ = limits.get(jn, (-np.inf, np.inf, 0, 0))
        q[n_b + i] = posture.get(jn, float(np.clip(0.0, lo, hi)))
    if free_flyer and sys_.n_c and upright:
        heights = []
        for quat in UP_CANDIDATES:
            q[3:7] = quat
            heights.append(-float(np.min(sys_.eval_phi(q))))
        best = int(np.argmax(heights))
        q[3:7] = UP_CANDIDATES[best if heights[best] > heights[0] + 1e-3 else 0]
    if free_flyer and sys_.n_c:
        q[2] = drop - float(np.min(sys_.eval_phi(q)))
    return q


def example_robot_tree(name: str | ExampleRobot) -> tuple[URDFInfo, Any]:
    """The cheap part of :func:`example_robot`: the URDF read, the specification's defaults written
    out (:func:`~contactmp.models.urdf.adam_urdf_text`), and adam-robotics' kinematic tree
    (``adam.model.Model``, parsed by urdf_parser_py) for :func:`modelled_joints`, without the
    symbolic dynamics. Raises the named InputError that :func:`example_robot` raises at these
    stages (an element adam or urdf_parser_py cannot take)."""
    from adam.casadi.casadi_like import SpatialMath
    from adam.model import Model, build_model_factory

    from contactmp.models.urdf import adam_errors

    robot = find_robot(name)
    info = read_urdf(robot.urdf)
    joints = modelled_joints(info)
    pad = () if joints else (next((j for j in info.movable_joints if info.joints[j][0] != "prismatic"),
                                  PAD_JOINT),)
    text, _ = adam_urdf_text(info, joints + pad)
    with adam_errors(info), contextlib.redirect_stderr(io.StringIO()):
        model = Model.build(factory=build_model_factory(description=text, math=SpatialMath()),
                            joints_name_list=list(joints + pad))
    return info, model


def example_robot(name: str | ExampleRobot, contact_points: dict[str, ContactSpec] | None = None, *,
                  mu: float = 0.8, drop: float = 0.0) -> ContactSystem:
    """The example-robot-data robot ``name`` (``"go1_description/go1"``, or a unique stem such as
    ``"go1"``) as a ContactSystem: free-flyer or fixed base per :func:`example_robots`, the contact
    points of :func:`robot_contact_points` unless given, every independent joint modelled and
    actuated (:func:`modelled_joints`; mimic, prismatic and massless joints are locked at 0), and
    ``q_nominal`` the :func:`initial_pose` (lowest contact ``drop`` above the ground).
    Raises InputError (field ``urdf``) naming the URDF element it cannot take."""
    robot = find_robot(name)
    info = read_urdf(robot.urdf)
    contacts = robot_contact_points(info, robot.free_flyer) if contact_points is None else contact_points
    sys0 = urdf_system(robot.urdf, contacts, floating_base=robot.free_flyer, mu=mu, name=robot.name,
                       joints=modelled_joints(info))
    q0 = initial_pose(sys0, info, robot.free_flyer, robot.urdf, drop,
                      upright=contact_points is None and bool(foot_links(info)))
    sys0.q_nominal = sys0._vec("q_nominal", q0, sys0.n_q)
    sys0.check_at(sys0.q_nominal, field_name="q_nominal")
    return sys0
