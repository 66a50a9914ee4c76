"""Small hand-built contact scenes with closed-form answers (for tests, examples and studies)."""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from contactmp.models.contact_model import Contact, ContactModel
from contactmp.models.rigid_bodies import GRAVITY, GROUND, RigidBody, obj, rotation_about


def box_on_plane(half_extents: ArrayLike = (0.5, 0.5, 0.1), mass: float = 1.0, slope: float = 0.0,
                 speed: float = 0.0, mu: float = 0.5, gravity: float = GRAVITY) -> ContactModel:
    """A box on a fixed plane inclined by ``slope`` (radians, about the world y axis), touching it at
    its 4 bottom corners, under gravity ``-gravity e_z``.

    Every contact frame has ``n`` = the plane normal ``(sin slope, 0, cos slope)`` and ``t`` = the
    downhill direction ``(cos slope, 0, -sin slope)`` (the 4-facet pyramid is aligned with the
    slope). The box moves with velocity ``speed * t`` (``speed = 0``: at rest, all contacts rolling;
    otherwise all sliding). Body 0 is the box, ``body_k`` the ground.
    """
    h = np.asarray(half_extents, dtype=float)
    R = rotation_about([0.0, 1.0, 0.0], slope)
    n, t = R[:, 2].copy(), R[:, 0].copy()
    box = RigidBody.box(h, mass, position=R @ np.array([0.0, 0.0, h[2]]), rotation=R,
                        velocity=speed * t, gravity=gravity, name="box")
    contacts = [
        Contact(obj(0), GROUND, point=R @ np.array([sx * h[0], sy * h[1], 0.0]), normal=n, tangent=t, mu=mu)
        for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))
    ]
    return ContactModel(objects=[box], contacts=contacts, name=f"box_on_plane(slope={slope}, speed={speed})")


def two_stacks(mu: float = 0.5, gravity: float = GRAVITY) -> ContactModel:
    """Two stacks of two boxes each, at rest on the ground 2 m apart (16 rolling contacts).

    Objects 0, 1 form the first stack (1 on 0), objects 2, 3 the second. The ground couples nothing,
    so the problem splits into two islands.
    """
    objects, contacts = [], []
    for s, x0 in enumerate((0.0, 2.0)):
        lower, upper = 2 * s, 2 * s + 1
        hl, hu = np.array([0.4, 0.3, 0.2]), np.array([0.2, 0.2, 0.15])
        objects.append(RigidBody.box(hl, 2.0, position=[x0, 0.0, hl[2]], gravity=gravity))
        objects.append(RigidBody.box(hu, 1.0, position=[x0, 0.0, 2 * hl[2] + hu[2]], gravity=gravity))
        for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
            contacts.append(Contact(obj(lower), GROUND, point=[x0 + sx * hl[0], sy * hl[1], 0.0],
                                    normal=[0, 0, 1], tangent=[1, 0, 0], mu=mu))
        for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
            contacts.append(Contact(obj(upper), obj(lower), point=[x0 + sx * hu[0], sy * hu[1], 2 * hl[2]],
                                    normal=[0, 0, 1], tangent=[1, 0, 0], mu=mu))
    return ContactModel(objects=objects, contacts=contacts, name="two_stacks")


def block_between_jaws(half_extents: ArrayLike = (0.2, 0.15, 0.1), mass: float = 1.0, speed: float = 0.5,
                       mu: float = 0.5, height: float = 0.5, gravity: float = GRAVITY) -> ContactModel:
    """A box held between the tips of two fixed pins on the vertical line through its center (a
    block in a slot, or clamped between two grounded jaws), sliding along ``t = e_x`` with velocity
    ``speed`` (``speed = 0``: at rest, both contacts rolling), center at ``height``.

    Contact 0 is the pin under the bottom face (``n = e_z``), contact 1 the pin on the top face
    (``n = -e_z``); both frames have ``t = e_x`` and turn with the box (``face = "i"``). With the pins
    on one line through the center, ``a_n0 = (c_n0 - c_n1) / m - gravity = -a_n1`` for any forces:
    ``a_n0 + a_n1 = 0`` identically, so the LCP has no strictly feasible point, and its solutions
    are exactly ``c_n0 - c_n1 = m gravity`` (the clamping force ``c_n1 >= 0`` is not determined).
    """
    h = np.asarray(half_extents, dtype=float)
    box = RigidBody.box(h, mass, position=[0.0, 0.0, height], velocity=[speed, 0.0, 0.0],
                        gravity=gravity, name="block")
    contacts = [
        Contact(obj(0), GROUND, point=[0.0, 0.0, height - h[2]], normal=[0, 0, 1], tangent=[1, 0, 0],
                mu=mu, face="i"),
        Contact(obj(0), GROUND, point=[0.0, 0.0, height + h[2]], normal=[0, 0, -1], tangent=[1, 0, 0],
                mu=mu, face="i"),
    ]
    return ContactModel(objects=[box], contacts=contacts, name=f"block_between_jaws(speed={speed})")
