"""URDF robots as :class:`~contactmp.models.symbolic.ContactSystem` s, through adam-robotics.

The dynamics come from adam's CasADi ``KinDynComputations`` (composite-rigid-body algorithm for
``M``, recursive Newton-Euler for ``h``, forward kinematics and center of mass), called on CasADi
SX symbols so that every field of the ContactSystem is a plain SX expression of ``q``, ``v``, ``u``
(adam's methods return SX for SX arguments; no MX is involved).
URDFs are read from a path, from an XML string, or by robot name from the files that the
``example-robot-data`` package ships (:func:`example_robot_urdf`).

Coordinates (``n_j`` = number of modelled joints, in the order of ``joints``):

* **fixed base** (``floating_base=False``): ``q = s`` (joint positions), ``v = sdot``; the root link
  sits at the constant pose ``base_pose`` (4x4 homogeneous transform, default the identity).
* **floating base**: ``q = (p, quat, s)`` with the root link's origin ``p`` in the world and its
  orientation as a quaternion ``(w, x, y, z)`` (root -> world), ``n_q = 7 + n_j``;
  ``v = (pdot, omega, sdot)`` in adam's *mixed* representation: ``pdot`` is the world velocity of
  the root origin and ``omega`` the root's angular velocity in *world* coordinates, ``n_v = 6 + n_j``.
  Hence ``qdot(q, v) = (pdot, 1/2 (0, omega) (x) quat, sdot)`` (quaternion product with the world
  angular velocity on the left), which keeps ``|quat|`` constant; the rotation matrix is
  :func:`~contactmp.models.systems.quaternion_to_rotation`, a rotation for any nonzero quaternion.
* **planar floating base** (``floating_base=True, planar=True``): the root is restricted to the
  world x-z plane, ``q = (x, z, pitch, s)``, ``v = qdot = (xdot, zdot, pitchdot, sdot)``, with
  ``pitch`` a rotation about the world ``+y`` axis (right-hand rule: positive pitch turns ``+x``
  toward ``-z``; in the (x, z) picture this is clockwise, the opposite sense of the planar angle of
  :mod:`contactmp.models.systems`). It is the 3D model under the embedding
  ``q_3d = embed(q) = (x, 0, z, cos(pitch/2), 0, sin(pitch/2), 0, s)`` whose velocity map is the
  constant selection ``v_3d = E v``, ``E = [e_x, e_z, e_wy, e_s]`` (mixed representation: the world
  angular velocity of a pure pitch motion is ``pitchdot e_y``). The planar model is the constrained
  Lagrangian (d'Alembert projection onto the admissible velocities, exact because the constraint
  ``y = roll = yaw = 0`` is holonomic with ``dE/dt = 0``):
  ``M_p = E^T M(q_3d) E``, ``h_p = E^T h(q_3d, E v)``, ``B_p = E^T B``, ``J_p = J(q_3d) E``,
  ``V_p(q) = V(q_3d)``. It also requires every contact to move in the x-z plane (the modelled joints
  must have axes along ``y``, others are locked at 0 by leaving them out of ``joints``): the
  out-of-plane rows ``J_o E`` are checked to vanish numerically at several configurations and are
  then set to the exact zero matrix (``planar=True`` of ContactSystem).

adam receives the URDF through :func:`adam_urdf_text`: the specification's defaults written out
(an omitted ``<origin>`` is the identity, an omitted ``<axis>`` is ``1 0 0``; adam-robotics 0.5.0
fails on Go1, A1, HyQ, ... whose ``<inertial>`` elements omit ``<origin>``), prismatic joints that
are not modelled handed over as fixed, and elements without a default (``<mass>``, ``<inertia>``)
refused by name. :mod:`contactmp.models.example_robots` builds every robot of example-robot-data on
top of this module.

Joints of the URDF that are not listed in ``joints`` are locked at position 0 (adam's convention);
by default ``joints`` leaves out ``<mimic>`` joints (adam ignores ``<mimic>``) and prismatic joints;
``joints=[]`` gives the robot as one rigid body (adam itself needs one joint, which is then locked
here by substituting 0 for its position and velocity).
``B`` selects the ``actuated`` joints: input ``u_i`` is the torque (force for a prismatic joint) of
joint ``actuated[i]``. ``h`` is adam's bias force with gravity ``-g e_z``: ``h(q, v) = C(q, v) v
+ G(q)``, so the equations of motion are ``M vdot = B u - h + Jn^T lambda_n + Jt^T lambda_t +
Jo^T lambda_o`` as in the rest of contactmp. ``V(q) = m_total g z_com(q)``.

Contacts: point ``j`` is a link name plus an offset ``r_j`` in that link's frame, touching the flat
ground ``z = ground_height`` with normal ``n = e_z`` and tangents ``t = e_x``, ``o = e_y``:
``phi_j = e_z . p_j(q) - ground_height`` with ``p_j = p_L + R_L r_j`` from adam's forward
kinematics, and the rows of ``(Jn, Jt, Jo)`` are the rows ``z, x, y`` of the point's world velocity
Jacobian ``J_p = (d p_j / d q) (d qdot / d v)`` (CasADi's exact derivative). adam's own frame
Jacobian is not used: in adam-robotics 0.5.0 it returns a wrong shape for a model with exactly two
joints (its CasADi ``concatenate`` joins two 6x1 columns into a 12x1 vector). The tests check
``J_p`` against adam's mixed frame Jacobians of the Solo12 feet, which also confirms that ``qdot``
matches adam's mixed velocity representation.
"""
from __future__ import annotations

import contextlib
import io
import os
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, Union

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from contactmp.errors import InputError, check_number
from contactmp.models.rigid_bodies import GRAVITY
from contactmp.models.symbolic import ContactSystem
from contactmp.models.systems import quaternion_to_rotation

if TYPE_CHECKING:  # adam is imported when a model is built (its import takes about a second)
    from adam.casadi import KinDynComputations

__all__ = ["URDFInfo", "ContactSpec", "example_robot_data_dir", "example_robot_names",
           "example_robot_urdf", "read_urdf", "adam_urdf_text", "PAD_JOINT", "urdf_system", "solo12", "solo12_standing",
           "static_torques", "SOLO12_FEET", "SOLO12_SAGITTAL_JOINTS", "SOLO12_TORQUE_LIMIT", "Terrain", "step_terrain", "joint_limits"]

#: joint types adam models as one degree of freedom
_MOVABLE = ("revolute", "continuous", "prismatic")
#: relative tolerance of the numerical in-plane check of a planar model
_PLANAR_TOL = 1e-9

Terrain = Callable[[Any, Any], Any]
"""A terrain height function ``H(x, y)`` (SX in, SX out; see :func:`step_terrain`)."""

ContactSpec = Union[str, tuple[str, ArrayLike]]
"""A contact point: a link name (offset 0) or ``(link, offset)`` with ``offset`` in the link frame."""


# ------------------------------------------------------------------------ locating URDF files
def example_robot_data_dir() -> Path:
    """The ``robots`` folder of the installed example-robot-data package.

    The package has no Python module: its wheel (a cmeel wheel) installs the robot descriptions under
    ``<site-packages>/cmeel.prefix/share/example-robot-data/robots``, located here through the
    distribution's metadata. Raises InputError (field ``urdf``) when the package is absent."""
    try:
        dist = metadata.distribution("example-robot-data")
    except metadata.PackageNotFoundError:
        raise InputError("urdf", "example-robot-data is not installed (pip install "
                                 "example-robot-data); pass a path to a URDF file instead") from None
    root = Path(str(dist.locate_file("cmeel.prefix/share/example-robot-data/robots")))
    if not root.is_dir():
        raise InputError("urdf", f"example-robot-data is installed but {root} does not exist")
    return root


def example_robot_names() -> list[str]:
    """Names accepted by :func:`example_robot_urdf`: ``"<description>/<stem>"`` for every URDF file
    of example-robot-data (the stem alone also works when it is unique)."""
    root = example_robot_data_dir()
    return sorted(f"{p.relative_to(root).parts[0]}/{p.stem}" for p in root.glob("**/*.urdf"))


def example_robot_urdf(name: str) -> Path:
    """Path of the example-robot-data URDF called ``name``: a file stem such as ``"solo12"`` or
    ``"double_pendulum_simple"``, or ``"<description folder>/<stem>"`` (e.g.
    ``"anymal_b_simple_description/anymal"``) when the stem alone is ambiguous."""
    root = example_robot_data_dir()
    folder, _, stem = name.rpartition("/")
    stem = stem.removesuffix(".urdf")
    hits = sorted(p for p in root.glob(f"**/{stem}.urdf")
                  if not folder or p.relative_to(root).parts[0] == folder)
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise InputError("urdf", f"no URDF named {name!r} in example-robot-data; known names: "
                                 f"{', '.join(example_robot_names())}")
    raise InputError("urdf", f"{name!r} is ambiguous in example-robot-data: "
                             f"{', '.join(f'{p.relative_to(root).parts[0]}/{stem}' for p in hits)}")


# ----------------------------------------------------------------------------- URDF reading
@dataclass(frozen=True)
class URDFInfo:
    """What :func:`read_urdf` extracts: the XML text, the robot name, the link names, the joints
    as ``name -> (type, parent link, child link)`` in document order, the source label, and the
    joints that carry a ``<mimic>`` element."""

    text: str
    robot: str
    links: tuple[str, ...]
    joints: dict[str, tuple[str, str, str]]
    source: str
    mimic: tuple[str, ...] = ()

    @property
    def movable_joints(self) -> tuple[str, ...]:
        """Revolute, continuous and prismatic joints, in document order."""
        return tuple(n for n, (t, _, _) in self.joints.items() if t in _MOVABLE)

    @property
    def independent_joints(self) -> tuple[str, ...]:
        """The movable joints without a ``<mimic>`` element: the default modelled joints of
        :func:`urdf_system` (adam-robotics ignores ``<mimic>``, so a mimic joint modelled by it would
        move on its own instead of following its leader; by default it is locked at 0 instead)."""
        return tuple(n for n in self.movable_joints if n not in self.mimic)

    @property
    def default_joints(self) -> tuple[str, ...]:
        """The joints :func:`urdf_system` models by default: the independent joints that are not
        prismatic (see :func:`adam_urdf_text` for why prismatic joints are locked at 0)."""
        return tuple(n for n in self.independent_joints if self.joints[n][0] != "prismatic")

    @property
    def locked_joints(self) -> tuple[str, ...]:
        """The movable joints locked at 0 by default (mimic and prismatic joints)."""
        return tuple(n for n in self.movable_joints if n not in self.default_joints)

    @property
    def root_link(self) -> str:
        """The link that is no joint's child (the first such link if there are several)."""
        children = {c for _, _, c in self.joints.values()}
        return next((ln for ln in self.links if ln not in children), self.links[0])

    @property
    def leaf_links(self) -> tuple[str, ...]:
        """The links that are no joint's parent, in document order."""
        parents = {p for _, p, _ in self.joints.values()}
        return tuple(ln for ln in self.links if ln not in parents)


def read_urdf(urdf: str | os.PathLike) -> URDFInfo:
    """Read a URDF given as a path, an XML string (starting with ``<``), or an example-robot-data
    name (:func:`example_robot_urdf`). Raises InputError (field ``urdf``) if it cannot be read or is
    not a ``<robot>`` document."""
    if isinstance(urdf, os.PathLike):
        path: Path | None = Path(urdf)
    elif isinstance(urdf, str):
        if urdf.lstrip().startswith("<"):
            path = None
        elif Path(urdf).is_file() or urdf.endswith(".urdf"):
            path = Path(urdf)
        else:
            path = example_robot_urdf(urdf)
    else:
        raise InputError("urdf", f"expected a path, a URDF string or a robot name, "
                                 f"got {type(urdf).__name__}")
    if path is None:
        text, source = str(urdf), "<string>"
    else:
        try:
            text, source = path.read_text(), str(path)
        except OSError as exc:
            raise InputError("urdf", f"cannot read {path}: {exc}") from None
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise InputError("urdf", f"{source} is not valid XML: {exc}") from None
    if root.tag != "robot":
        raise InputError("urdf", f"{source}: the root element is <{root.tag}>, not <robot>")
    links = tuple(el.get("name", "") for el in root.findall("link"))
    joints: dict[str, tuple[str, str, str]] = {}
    for el in root.findall("joint"):
        parent, child = el.find("parent"), el.find("child")
        joints[el.get("name", "")] = (el.get("type", ""),
                                      "" if parent is None else parent.get("link", ""),
                                      "" if child is None else child.get("link", ""))
    if not links:
        raise InputError("urdf", f"{source}: the <robot> has no <link> element (an unexpanded xacro "
                                 "macro file?)")
    bad = {n: t for n, (t, _, _) in joints.items() if t not in _MOVABLE + ("fixed",)}
    if bad:
        raise InputError("urdf", f"{source}: <joint type=...> other than revolute, continuous, "
                                 f"prismatic and fixed is not supported: {bad}")
    mimic = tuple(el.get("name", "") for el in root.findall("joint") if el.find("mimic") is not None)
    return URDFInfo(text=text, robot=root.get("name", "robot"), links=links, joints=joints,
                    source=source, mimic=mimic)


#: name of the revolute joint (and its massless child link) added to a URDF without a revolute or
#: continuous joint before it goes to adam-robotics (which needs one joint); it is always locked at 0
PAD_JOINT = "__contactmp_pad_joint"


def adam_urdf_text(info: URDFInfo, joints: Sequence[str] | None = None) -> tuple[str, tuple[str, ...]]:
    """The URDF text handed to adam-robotics for the modelled ``joints`` (default
    :attr:`URDFInfo.default_joints`), with the URDF specification's defaults written out, and the
    list of what was changed (``"<link X>/<inertial>/<origin>"``, ...).

    adam-robotics 0.5.0 reads ``origin.xyz`` of every ``<inertial>`` and ``<joint>`` and the
    ``<axis>`` of every movable joint without checking that urdf_parser_py found them, and fails with
    ``AttributeError: 'NoneType' object has no attribute 'xyz'`` when the file omits one (Go1, A1,
    HyQ, ... of example-robot-data have ``<inertial>`` elements without ``<origin>``). The
    specification (wiki.ros.org/urdf/XML) gives the defaults: an omitted ``<origin>`` is the
    identity (``xyz="0 0 0" rpy="0 0 0"``), an omitted ``<axis>`` is ``xyz="1 0 0"``; an omitted
    ``xyz`` or ``rpy`` attribute is zero. Those are written out here. Two elements adam never reads
    are removed when urdf_parser_py would refuse them as malformed, each listed in the notes: a
    ``<texture>`` without its required ``filename`` (iCub, Romeo small) and a ``<transmission>``
    without a ``<type>`` element (PR2's old form); nothing else is removed.
    ``<mass>`` and ``<inertia>`` have no default: an ``<inertial>`` without them raises InputError
    (field ``urdf``) naming the link and the element.

    adam-robotics 0.5.0 cannot take a ``prismatic`` joint in CasADi (its motion subspace is built
    as a 12x1 vector, and its transform ignores the ``<origin rpy>``): a prismatic joint that is
    not modelled (locked at 0, where it is exactly a fixed joint at its ``<origin>``) is handed to
    adam as ``type="fixed"``; a modelled one raises InputError (field ``joints``) naming it.
    When ``joints`` holds :data:`PAD_JOINT` (as :func:`urdf_system` passes for a model with no
    joint of a URDF with no revolute or continuous joint), that revolute joint is added from the
    root link to a massless leaf link (:func:`urdf_system` locks it at 0)."""
    modelled = set(info.default_joints if joints is None else joints)
    root = ET.fromstring(info.text)
    notes: list[str] = []

    def origin(parent: ET.Element, where: str) -> None:
        el = parent.find("origin")
        if el is None:
            ET.SubElement(parent, "origin", {"xyz": "0 0 0", "rpy": "0 0 0"})
            notes.append(f"{where}/<origin>")
            return
        for attr in ("xyz", "rpy"):
            if el.get(attr) is None:
                el.set(attr, "0 0 0")
                notes.append(f"{where}/<origin {attr}>")

    for link in root.findall("link"):
        for inertial in link.findall("inertial"):
            where = f"<link {link.get('name')}>/<inertial>"
            for req in ("mass", "inertia"):
                if inertial.find(req) is None:
                    raise InputError("urdf", f"{info.source}: {where} has no <{req}> element (the URDF "
                                             "specification gives it no default)")
            origin(inertial, where)
    for joint in root.findall("joint"):
        name = joint.get("name")
        where = f"<joint {name}>"
        origin(joint, where)
        if joint.get("type") == "prismatic":
            if name in modelled:
                raise InputError("joints", f"{info.source}: <joint {name} type=\"prismatic\"> cannot be "
                                           "modelled (adam-robotics 0.5.0 builds a prismatic joint's "
                                           "motion subspace as 12x1 in CasADi); leave it out of joints "
                                           "to lock it at 0")
            joint.set("type", "fixed")
            notes.append(f"{where} prismatic -> fixed (locked at 0)")
        if joint.get("type") in _MOVABLE:
            axis = joint.find("axis")
            if axis is None:
                ET.SubElement(joint, "axis", {"xyz": "1 0 0"})
                notes.append(f"{where}/<axis>")
            elif axis.get("xyz") is None:
                axis.set("xyz", "1 0 0")
                notes.append(f"{where}/<axis xyz>")
    # elements adam-robotics never reads but urdf_parser_py refuses when malformed are removed from
    # the copy, each noted: a <texture> without its required filename (how a visual looks) and a
    # <transmission> without a <type> element (actuator plumbing); the dynamics do not depend on either
    for material in [m for m in root.iter("material") if m.find("texture") is not None]:
        for texture in material.findall("texture"):
            if texture.get("filename") is None:
                material.remove(texture)
                notes.append(f"<material {material.get('name')}>/<texture> without filename removed")
    for transmission in root.findall("transmission"):
        if transmission.find("type") is None:  # PR2's old form: a type attribute and its own children
            root.remove(transmission)
            notes.append(f"<transmission {transmission.get('name')}> without a <type> element removed")
    if PAD_JOINT in modelled:
        ET.SubElement(root, "link", {"name": PAD_JOINT + "_link"})
        pad = ET.SubElement(root, "joint", {"name": PAD_JOINT, "type": "revolute"})
        ET.SubElement(pad, "parent", {"link": info.root_link})
        ET.SubElement(pad, "child", {"link": PAD_JOINT + "_link"})
        ET.SubElement(pad, "origin", {"xyz": "0 0 0", "rpy": "0 0 0"})
        ET.SubElement(pad, "axis", {"xyz": "1 0 0"})
        ET.SubElement(pad, "limit", {"lower": "-1", "upper": "1", "effort": "0", "velocity": "0"})
        notes.append(f"<joint {PAD_JOINT}> (locked at 0: no revolute or continuous joint is modelled)")
    return ET.tostring(root, encoding="unicode"), tuple(notes)


def _kin_dyn(info: URDFInfo, joints: Sequence[str], g: float) -> KinDynComputations:
    """adam's CasADi KinDynComputations in the mixed representation, built from
    :func:`adam_urdf_text` (the specification's defaults written out); urdf_parser_py's complaints
    about tags it does not know (``<contact>``, ``<material>`` in collisions) are dropped, any
    other message becomes a warning, and an exception of adam's becomes InputError (``urdf``)."""
    from adam.casadi import KinDynComputations
    from adam.core.constants import Representations

    text, _ = adam_urdf_text(info, joints)
    buf = io.StringIO()
    try:
        with contextlib.redirect_stderr(buf):
            kd = KinDynComputations(text, list(joints),
                                    gravity=np.array([0.0, 0.0, -g, 0.0, 0.0, 0.0]))
    except Exception as exc:  # adam or urdf_parser_py on a URDF element they cannot take
        raise InputError("urdf", f"{info.source}: adam-robotics cannot build the model "
                                 f"({type(exc).__name__}: {exc})") from None
    for line in buf.getvalue().splitlines():
        if line.strip() and not line.startswith(("Unknown tag", "Unknown attribute")):
            warnings.warn(f"{info.source}: {line}", stacklevel=3)
    kd.set_frame_velocity_representation(Representations.MIXED_REPRESENTATION)
    return kd


@contextlib.contextmanager
def adam_errors(info: URDFInfo) -> Any:
    """An exception of adam-robotics inside the block becomes InputError (field ``urdf``)."""
    try:
        yield
    except InputError:
        raise
    except Exception as exc:  # adam on a model it cannot take
        raise InputError("urdf", f"{info.source}: adam-robotics cannot build the model "
                                 f"({type(exc).__name__}: {exc})") from None


# ----------------------------------------------------------------------------- validation
def _names_subset(field_name: str, given: Sequence[str] | None, allowed: Sequence[str],
                  default: Sequence[str]) -> tuple[str, ...]:
    if given is None:
        return tuple(default)
    if isinstance(given, str):
        raise InputError(field_name, "expected a sequence of joint names, got a single string")
    names = tuple(str(n) for n in given)
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise InputError(field_name, f"unknown or immovable joints {unknown}; allowed: {list(allowed)}")
    if len(set(names)) != len(names):
        raise InputError(field_name, f"repeated joint names in {list(names)}")
    return names


def _contacts(contact_points: Mapping[str, ContactSpec] | Sequence[ContactSpec],
              links: Sequence[str]) -> list[tuple[str, str, np.ndarray]]:
    """``[(contact name, link, offset)]`` from a mapping name -> spec or a sequence of specs."""
    if isinstance(contact_points, Mapping):
        items = [(str(k), s) for k, s in contact_points.items()]
    elif isinstance(contact_points, (str, bytes)) or not isinstance(contact_points, Sequence):
        raise InputError("contact_points", "expected a mapping name -> link or (link, offset), "
                                           "or a sequence of links or (link, offset) pairs")
    else:
        items = [(None, s) for s in contact_points]
    out: list[tuple[str, str, np.ndarray]] = []
    for nm, spec in items:
        if isinstance(spec, str):
            link, off = spec, np.zeros(3)
        elif isinstance(spec, Sequence) and len(spec) == 2 and isinstance(spec[0], str):
            link, off = spec[0], np.asarray(spec[1], dtype=float)
        else:
            raise InputError("contact_points", f"expected a link name or (link, offset), got {spec!r}")
        if link not in links:
            raise InputError("contact_points", f"unknown link {link!r}; links: {list(links)}")
        if off.shape != (3,) or not np.all(np.isfinite(off)):
            raise InputError("contact_points", f"offset of {link!r} must be 3 finite numbers, "
                                               f"got {spec[1]!r}")
        out.append((nm or link, link, off))
    names = [c[0] for c in out]
    for i, (nm, link, off) in enumerate(out):  # make repeated default names unique
        if names.count(nm) > 1:
            out[i] = (f"{nm}_{names[:i].count(nm)}", link, off)
    return out


def _number(field_name: str, value: float) -> float:
    return check_number(field_name, value)


def _base_pose(base_pose: ArrayLike | None) -> np.ndarray:
    if base_pose is None:
        return np.eye(4)
    H = np.asarray(base_pose, dtype=float)
    if H.shape != (4, 4) or not np.all(np.isfinite(H)):
        raise InputError("base_pose", f"expected a finite 4x4 homogeneous transform, got {H.shape}")
    R = H[:3, :3]
    if (np.max(np.abs(R.T @ R - np.eye(3))) > 1e-9 or np.linalg.det(R) <= 0
            or np.max(np.abs(H[3] - [0, 0, 0, 1])) > 0):
        raise InputError("base_pose", "the top-left 3x3 block must be a rotation and the last row "
                                      "(0, 0, 0, 1)")
    return H


# --------------------------------------------------------------------------------- the model
def urdf_system(urdf: str | os.PathLike, contact_points: Mapping[str, ContactSpec] | Sequence[ContactSpec], *,
                floating_base: bool = True, planar: bool = False, mu: float | ArrayLike = 0.5,
                joints: Sequence[str] | None = None, actuated: Sequence[str] | None = None,
                ground_height: float = 0.0, base_pose: ArrayLike | None = None, q_nominal: ArrayLike | None = None,
                g: float = GRAVITY, name: str | None = None, terrain: Terrain | None = None) -> ContactSystem:
    """A URDF robot with point contacts against the ground, as a ContactSystem (module docstring).

    Parameters
    ----------
    urdf : path, URDF XML string, or example-robot-data name (``"solo12"``).
    contact_points : ``{name: link or (link, offset)}`` or a sequence of ``link`` / ``(link,
        offset)`` (then named after the link); ``offset`` is in the link frame (default 0).
    floating_base : the root link is free (quaternion base) or fixed at ``base_pose``.
    planar : restrict to the x-z plane (floating base: ``(x, z, pitch)``); the contacts must move in
        that plane (checked), and ``Jo`` is then the zero matrix.
    mu : friction coefficient(s), one or one per contact.
    joints : modelled joints in the order of ``s`` (default: every revolute and continuous joint
        of the URDF without a ``<mimic>`` element, in document order,
        :attr:`URDFInfo.default_joints`); the other joints are locked at 0 (a prismatic joint cannot
        be modelled, :func:`adam_urdf_text`).
    actuated : joints driven by ``u`` (default: all of ``joints``); ``B`` selects them.
    ground_height : the ground is ``z = ground_height``.
    terrain : instead of a flat ground, a height function ``H(x, y)`` (written with operations that
        accept CasADi SX, e.g. :func:`step_terrain`): ``phi_j = z_j - H(x_j, y_j)``, the vertical
        gap, and ``Jn = d phi / dq (d qdot / d v)`` its rate, while the friction directions stay
        ``e_x``, ``e_y`` (exact where the terrain is flat; on a slope the gap is vertical rather
        than the distance and friction acts in the horizontal plane).
    base_pose : fixed base only: the root link's pose, a 4x4 homogeneous transform (default I).
    q_nominal : a valid configuration (default: base at the origin, identity orientation, joints 0).
    g : gravity magnitude along ``-z``.
    name : the system's name (default: the URDF's robot name).
    """
    info = read_urdf(urdf)
    movable = info.movable_joints
    joints_ = _names_subset("joints", joints, movable, info.default_joints)
    act = _names_subset("actuated", actuated, joints_, joints_)
    contacts = _contacts(contact_points, info.links)
    ground = _number("ground_height", ground_height)
    if terrain is not None and not callable(terrain):
        raise InputError("terrain", f"must be a function H(x, y) -> height, got {type(terrain).__name__}")
    g = _number("g", g)
    if g < 0:
        raise InputError("g", f"must be >= 0, got {g!r}")
    floating_base, planar = bool(floating_base), bool(planar)
    if floating_base and base_pose is not None:
        raise InputError("base_pose", "only for a fixed base (floating_base=False)")
    n_j = len(joints_)
    if not floating_base and n_j == 0:
        raise InputError("joints", "a fixed-base model needs at least one joint")
    # adam-robotics 0.5.0 fails on a model with no joint: then one joint is modelled by adam and
    # locked at 0 here (its position and velocity are the constant 0); a URDF without a movable
    # joint gets PAD_JOINT (adam_urdf_text)
    rotary = [j for j in movable if info.joints[j][0] != "prismatic"]
    pad = () if n_j else ((rotary or [PAD_JOINT])[0],)
    kd = _kin_dyn(info, joints_ + pad, g)

    # configuration q, velocity v, and the root pose H(q), root velocity and E with v_3d = E v
    if floating_base and planar:
        n_b, base_q = 3, ("x", "z", "pitch")
        base_v = ("xdot", "zdot", "pitchdot")
    elif floating_base:
        n_b, base_q = 6, ("x", "y", "z", "qw", "qx", "qy", "qz")
        base_v = ("vx", "vy", "vz", "wx", "wy", "wz")
    else:
        n_b, base_q, base_v = 0, (), ()
    n_q, n_v = len(base_q) + n_j, n_b + n_j
    q, v, u = ca.SX.sym("q", n_q), ca.SX.sym("v", n_v), ca.SX.sym("u", len(act))
    s = ca.vertcat(q[len(base_q):], ca.SX.zeros(len(pad)))  # adam's joint positions
    n_a = n_j + len(pad)
    E = np.zeros((6 + n_a, n_v))  # v_3d = E v, v_3d = (pdot, omega, sdot) of adam's floating base
    E[6:6 + n_j, n_b:] = np.eye(n_j)
    if floating_base and planar:
        x, z, pitch = q[0], q[1], q[2]
        c, sn = ca.cos(pitch), ca.sin(pitch)
        R = ca.vertcat(ca.horzcat(c, 0, sn), ca.horzcat(0, 1, 0), ca.horzcat(-sn, 0, c))
        H = ca.vertcat(ca.horzcat(R, ca.vertcat(x, 0, z)), ca.DM([[0, 0, 0, 1]]))
        E[0, 0] = E[2, 1] = E[4, 2] = 1.0
        qdot = v
    elif floating_base:
        quat, omega = q[3:7], v[3:6]
        H = ca.vertcat(ca.horzcat(quaternion_to_rotation(quat), q[:3]), ca.DM([[0, 0, 0, 1]]))
        E[:6, :6] = np.eye(6)
        quat_dot = 0.5 * ca.vertcat(-ca.dot(omega, quat[1:]),
                                    quat[0] * omega + ca.cross(omega, quat[1:]))
        qdot = ca.vertcat(v[:3], quat_dot, v[6:])
    else:
        H = ca.SX(ca.DM(_base_pose(base_pose)))
        qdot = v
    Ed = ca.DM(E)
    v3 = Ed @ v

    # dynamics, projected onto the modelled velocities
    with adam_errors(info):
        M = Ed.T @ kd.mass_matrix(H, s) @ Ed
        h = Ed.T @ kd.bias_force(H, s, v3[:6], v3[6:])
    B3 = np.zeros((6 + n_a, len(act)))
    for i, jn in enumerate(act):
        B3[6 + joints_.index(jn), i] = 1.0
    B = ca.SX(ca.DM(E.T @ B3))
    with adam_errors(info):
        mass = float(kd.get_total_mass())
    if not mass > 0:
        raise InputError("urdf", f"{info.source}: no <link> has an <inertial> with a positive <mass>")
    with adam_errors(info):
        V = mass * g * kd.CoM_position(H, s)[2]

    # contacts
    phi, Jn, Jt, Jo = [], [], [], []
    G = ca.jacobian(qdot, v)  # d qdot / d v
    if terrain is not None:  # height H(x, y) and slope (H_x, H_y) of the terrain, built once
        xs, ys = ca.SX.sym("x"), ca.SX.sym("y")
        height = _terrain_height(terrain, xs, ys) + ground
        terrain_fn = ca.Function("terrain", [xs, ys], [height, *ca.vertsplit(ca.gradient(height, ca.vertcat(xs, ys)))])
    for _, link, off in contacts:
        with adam_errors(info):
            HL = kd.forward_kinematics(link, H, s)
        p = HL[:3, 3] + HL[:3, :3] @ ca.DM(off)
        Jp = ca.jacobian(p, q) @ G  # the point's world velocity is Jp v
        if terrain is None:
            phi.append(p[2] - ground)
            Jn.append(Jp[2, :])
        else:  # the vertical gap z - H(x, y): its rate is (e_z - H_x e_x - H_y e_y) . (point velocity)
            Hp, Hx, Hy = terrain_fn(p[0], p[1])
            phi.append(p[2] - Hp)
            Jn.append(Jp[2, :] - Hx * Jp[0, :] - Hy * Jp[1, :])
        Jt.append(Jp[0, :])
        Jo.append(Jp[1, :])
    n_c = len(contacts)
    phi_, Jn_, Jt_ = (ca.vertcat(*a) if n_c else ca.SX(0, k) for a, k in
                      ((phi, 1), (Jn, n_v), (Jt, n_v)))
    Jo_ = ca.vertcat(*Jo) if n_c else ca.SX(0, n_v)

    if q_nominal is None:
        qn = np.zeros(n_q)
        if floating_base and not planar:
            qn[3] = 1.0
    else:
        qn = ContactSystem._vec("q_nominal", q_nominal, n_q)
    _check_joints_carry_mass(info, q, M, qn, base_v + joints_)
    if planar and n_c:
        _check_in_plane(q, Jn_, Jt_, Jo_, qn, floating_base)
        Jo_ = ca.SX.zeros(n_c, n_v)
    return ContactSystem(
        q=q, v=v, u=u, M=M, h=h, B=B, phi=phi_, Jn=Jn_, Jt=Jt_, Jo=Jo_, mu=mu, qdot=qdot, V=V,
        planar=planar, q_nominal=qn, name=name or info.robot,
        q_names=base_q + joints_, v_names=base_v + tuple(f"{j}_dot" for j in joints_),
        u_names=act, contact_names=tuple(c[0] for c in contacts))


def _check_joints_carry_mass(info: URDFInfo, q: ca.SX, M: ca.SX, qn: np.ndarray,
                             v_names: Sequence[str]) -> None:
    """InputError (field ``joints``) naming the modelled joints whose motion moves no mass at
    ``qn`` (a zero diagonal entry of ``M``: no link they carry has an ``<inertial>`` with mass, as
    in Romeo's hands), which would make ``M`` singular."""
    diag = np.array(ca.Function("M_diag", [q], [ca.diag(M)])(qn)).ravel()
    scale = max(1.0, float(np.max(np.abs(diag)))) if diag.size else 1.0
    bad = [n for n, d in zip(v_names, diag) if d <= 1e-12 * scale]
    if bad:
        raise InputError("joints", f"{info.source}: modelled joints move no mass (no <inertial> "
                                   f"<mass> on the links they carry): {bad}; leave them out of "
                                   "joints to lock them at 0")


def _terrain_height(terrain: Terrain, x: ca.SX, y: ca.SX) -> ca.SX:
    """``terrain(x, y)`` as a scalar SX; InputError (field ``terrain``) if it is not one."""
    try:
        out = terrain(x, y)
    except Exception as exc:  # a user function: whatever it raises on SX input
        raise InputError("terrain", f"could not be evaluated on CasADi symbols: {exc}") from None
    if isinstance(out, (int, float, np.floating)):
        out = ca.SX(float(out))
    if not isinstance(out, ca.SX) or out.shape != (1, 1):
        raise InputError("terrain", f"must return a scalar (CasADi SX for symbolic x, y), got {out!r:.80}")
    return out


def step_terrain(height: float, edge: float, width: float = 0.01) -> Terrain:
    """A step of ``height`` (m) whose edge is the line ``x = edge``, smoothed over ``width``:
    ``H(x, y) = height (1 + tanh((x - edge) / width)) / 2`` (within 1e-6 of flat beyond about
    7.3 ``width`` from the edge)."""
    for name, val in (("height", height), ("edge", edge), ("width", width)):
        check_number(name, val)
    if width <= 0:
        raise InputError("width", f"must be > 0, got {width!r}")
    h, e, w = float(height), float(edge), float(width)

    def H(x: Any, y: Any) -> Any:
        return h * 0.5 * (1.0 + ca.tanh((x - e) / w))
    return H


def joint_limits(urdf: str | os.PathLike) -> dict[str, tuple[float, float, float, float]]:
    """``name -> (lower, upper, effort, velocity)`` of every movable joint's ``<limit>`` in the URDF
    (inf where an attribute or the element is missing; a continuous joint has no position limits).
    Note that some URDFs carry placeholders (Solo12's: +-10 rad, 1000 N m)."""
    info = read_urdf(urdf)
    root = ET.fromstring(info.text)
    out: dict[str, tuple[float, float, float, float]] = {}
    for el in root.findall("joint"):
        if el.get("type") not in _MOVABLE:
            continue
        lim = el.find("limit")
        vals = []
        for attr, default in (("lower", -np.inf), ("upper", np.inf), ("effort", np.inf), ("velocity", np.inf)):
            raw = None if lim is None or el.get("type") == "continuous" and attr in ("lower", "upper") else lim.get(attr)
            try:
                vals.append(default if raw is None else float(raw))
            except ValueError:
                raise InputError("urdf", f"{info.source}: joint {el.get('name')!r} has a non-numeric "
                                         f"limit {attr}={raw!r}") from None
        out[el.get("name", "")] = (vals[0], vals[1], vals[2], vals[3])
    return out


def _check_in_plane(q: ca.SX, Jn: ca.SX, Jt: ca.SX, Jo: ca.SX, qn: np.ndarray,
                    floating_base: bool) -> None:
    """InputError unless the out-of-plane rows ``Jo`` vanish at ``qn`` and at three seeded random
    configurations (joints and pitch in [-1, 1] rad around ``qn``)."""
    f = ca.Function("in_plane", [q], [Jn, Jt, Jo])
    rng = np.random.default_rng(0)
    fixed = 2 if floating_base else 0  # x, z are not perturbed (the check is translation-free)
    samples = [qn] + [qn + np.concatenate([np.zeros(fixed), rng.uniform(-1, 1, qn.size - fixed)])
                      for _ in range(3)]
    for qq in samples:
        jn, jt, jo = (np.array(a) for a in f(qq))
        scale = max(1.0, np.max(np.abs(jn)), np.max(np.abs(jt)))
        if np.max(np.abs(jo)) > _PLANAR_TOL * scale:
            raise InputError("joints", "planar=True needs every contact to move in the x-z plane, "
                                       f"but a contact has out-of-plane velocity at q = {qq} "
                                       f"(max |Jo| = {np.max(np.abs(jo)):.3g}); model only joints "
                                       "whose axes are along y")


# ------------------------------------------------------------------------------------ Solo12
#: the four feet of Solo12 (front/hind, left/right)
SOLO12_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
#: the hip and knee flexion joints, whose axes are along y: the joints of the sagittal model
SOLO12_SAGITTAL_JOINTS = tuple(f"{leg}_{j}" for leg in ("FL", "FR", "HL", "HR")
                               for j in ("HFE", "KFE"))
#: "straight_standing" of example-robot-data's solo.srdf: hip and knee angles per leg
_SOLO12_HFE_KFE = {"FL": (0.8, -1.6), "FR": (0.8, -1.6), "HL": (-0.8, 1.6), "HR": (-0.8, 1.6)}
_SOLO12_THIGH = _SOLO12_SHIN = 0.16  # hip -> knee and knee -> foot lengths in solo12.urdf [m]


def solo12_standing(planar: bool = False, ground_height: float = 0.0) -> np.ndarray:
    """Solo12 standing with its four feet exactly on the ground: the "straight_standing" joint
    angles of example-robot-data's SRDF (abduction 0, hip +-0.8, knee -+1.6 rad), base level at
    ``x = y = 0`` and height ``ground_height + 0.16 (cos 0.8 + cos 0.8)`` (the foot frame origins
    are the contact points). ``q`` of :func:`solo12` with the same ``planar``."""
    hfe, kfe = _SOLO12_HFE_KFE["FL"]  # thigh at angle hfe, shin at hfe + kfe = -hfe from vertical
    z = ground_height + _SOLO12_THIGH * np.cos(hfe) + _SOLO12_SHIN * np.cos(hfe + kfe)
    if planar:
        s = [a for leg in ("FL", "FR", "HL", "HR") for a in _SOLO12_HFE_KFE[leg]]
        return np.array([0.0, z, 0.0, *s])
    s = [a for leg in ("FL", "FR", "HL", "HR") for a in (0.0, *_SOLO12_HFE_KFE[leg])]
    return np.array([0.0, 0.0, z, 1.0, 0.0, 0.0, 0.0, *s])


#: a contact is touching at ``q`` for :func:`static_torques` when ``|phi| <=`` this (m)
TOUCHING_GAP = 1e-9


def static_torques(system: ContactSystem, q: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The static inputs that hold ``system`` at rest at ``q``: the least-squares solution ``(u,
    lambda)`` of ``B u + Jn^T lambda_n + Jt^T lambda_t + Jo^T lambda_o = h(q, 0)`` (the equation of
    motion with ``v = vdot = 0``), the forces ``lambda`` on the contacts touching at ``q``
    (``|phi| <=`` :data:`TOUCHING_GAP`). Returns ``u`` (``n_u``) and ``lambda`` as ``(n_c, 3)`` rows
    ``(n, t, o)``, zero on the other contacts; ``B u + J^T lambda - h(q, 0)`` is the caller's to check
    (nonzero when no inputs and forces hold the pose: a robot whose feet cannot carry it)."""
    q = np.asarray(q, dtype=float)
    h0 = system.eval_h(q, np.zeros(system.n_v))
    B = system.eval_B(q)
    lam = np.zeros((system.n_c, 3))
    if not system.n_c:
        return np.linalg.lstsq(B, h0, rcond=None)[0], lam
    Jn, Jt, Jo = system.eval_J(q)
    touch = np.flatnonzero(np.abs(system.eval_phi(q)) <= TOUCHING_GAP)
    x = np.linalg.lstsq(np.hstack([B, Jn[touch].T, Jt[touch].T, Jo[touch].T]), h0, rcond=None)[0]
    lam[touch] = x[system.n_u:].reshape(3, touch.size).T
    return x[:system.n_u], lam


#: Solo12's joint torque limit (N m): its actuators' peak torque at the joint (the URDF's
#: effort="1000" is a placeholder)
SOLO12_TORQUE_LIMIT = 2.7


def solo12(planar: bool = False, mu: float = 0.8, ground_height: float = 0.0,
           terrain: Terrain | None = None) -> ContactSystem:
    """Solo12 (example-robot-data ``"solo12"``) with point contacts at the origins of the four foot
    frames (:data:`SOLO12_FEET`; contacts named ``FL, FR, HL, HR``), all modelled joints actuated. 3D: floating base, 12 joints, ``n_q = 19``,
    ``n_v = 18``. ``planar=True``: the sagittal model with base ``(x, z, pitch)`` and the 8 joints
    :data:`SOLO12_SAGITTAL_JOINTS` (the abduction joints HAA, whose axes are along x, are locked at
    0), ``n_q = n_v = 11``; left and right feet then move in the same plane.
    ``q_nominal`` is :func:`solo12_standing`."""
    return urdf_system(
        "solo12", {f[:2]: f for f in SOLO12_FEET}, floating_base=True, planar=planar, mu=mu,
        joints=SOLO12_SAGITTAL_JOINTS if planar else None, ground_height=ground_height, terrain=terrain,
        q_nominal=solo12_standing(planar, ground_height), name="solo12_planar" if planar else "solo12")
