"""Independent sub-problems ("islands") of a contact model.

Two contacts interact only through a body that can move: a passive object, or manipulator joints
(coupled to each other by the joint-space inertia ``M_man``). The fixed ground couples nothing.
The graph has the objects and the joints as nodes; each contact is recorded on edges joining the
moving bodies it touches (an object on the ground gives a self-loop on the object; a manipulator
link stands for the joints of its chain, which the contact joins); nonzero off-diagonal entries of
``M_man`` add ``"inertia"`` edges. Connected components are the islands: the matrices ``A`` and ``b``
of (24)-(26) are block diagonal over them, so each is a problem on its own.
"""
from __future__ import annotations

import networkx as nx
import numpy as np

from contactmp.models.contact_model import Contact, ContactModel
from contactmp.models.rigid_bodies import BodyRef, obj, link


def _nodes_of(model: ContactModel, ref: BodyRef) -> list[tuple[str, int]]:
    if ref.kind == "object":
        return [("object", ref.index)]
    if ref.kind == "link":
        assert model.manipulator is not None
        return [("joint", j) for j in model.manipulator.chain(ref.index)]
    return []


def contact_graph(model: ContactModel) -> nx.MultiGraph:
    """The coupling graph of ``model``: nodes ``("object", i)`` and ``("joint", m)``; edges carry
    ``kind="contact", contact=j`` or ``kind="inertia"``."""
    G = nx.MultiGraph()
    G.add_nodes_from(("object", i) for i in range(model.n_obj))
    G.add_nodes_from(("joint", m) for m in range(model.n_l))
    for j, c in enumerate(model.contacts):
        nodes = _nodes_of(model, c.body_i) + _nodes_of(model, c.body_k)
        if len(nodes) == 1:
            G.add_edge(nodes[0], nodes[0], kind="contact", contact=j)
        for u, w in zip(nodes[:-1], nodes[1:]):
            G.add_edge(u, w, kind="contact", contact=j)
    if model.n_l:
        Mm = model.M_man
        scale = max(1.0, float(np.abs(Mm).max()))
        rows, cols = np.nonzero(np.abs(np.triu(Mm, 1)) > 1e-14 * scale)
        for r, s in zip(rows, cols):
            G.add_edge(("joint", int(r)), ("joint", int(s)), kind="inertia")
    return G


def _components(model: ContactModel) -> list[tuple[list[int], set]]:
    """(sorted contact indices, node set) of each component of :func:`contact_graph` that holds a
    contact, ordered by smallest contact index."""
    G = contact_graph(model)
    islands = []
    for comp in nx.connected_components(G):
        contacts = sorted({d["contact"] for _, _, d in G.subgraph(comp).edges(data=True) if d["kind"] == "contact"})
        if contacts:
            islands.append((contacts, comp))
    islands.sort(key=lambda item: item[0][0])
    return islands


def contact_islands(model: ContactModel) -> list[list[int]]:
    """The contacts of each island of ``model`` (indices in ``model.contacts``, sorted; islands
    ordered by their smallest contact index). The rows and columns of ``A`` in (24) that belong to
    different islands couple through exact zeros, so any formulation built on ``A, b`` splits the
    same way."""
    return [contacts for contacts, _ in _components(model)]


def split_islands(model: ContactModel) -> list[ContactModel]:
    """The independent sub-problems of ``model``, one :class:`ContactModel` per connected component
    of :func:`contact_graph` that holds at least one contact (ordered by their smallest contact
    index). Objects and joints are renumbered in increasing order; contacts keep their order.
    Bodies without contacts (free flight) are left out.
    """
    islands = _components(model)
    out = []
    for contacts, comp in islands:
        objs = sorted(i for kind, i in comp if kind == "object")
        joints = sorted(m for kind, m in comp if kind == "joint")
        omap = {i: k for k, i in enumerate(objs)}
        jmap = {m: k for k, m in enumerate(joints)}

        def remap(ref: BodyRef) -> BodyRef:
            if ref.kind == "object":
                return obj(omap[ref.index])
            if ref.kind == "link":
                return link(jmap[ref.index])
            return ref

        new_contacts = [
            Contact(
                body_i=remap(c.body_i), body_k=remap(c.body_k), point=c.point, normal=c.normal,
                tangent=c.tangent, mu=c.mu, face=c.face,
            )
            for c in (model.contacts[j] for j in contacts)
        ]
        man = model.manipulator.subset(joints) if (joints and model.manipulator is not None) else None
        out.append(
            ContactModel(
                objects=[model.objects[i] for i in objs], contacts=new_contacts, manipulator=man,
                vel_tol=model.vel_tol, name=f"{model.name}#island{len(out)}",
            )
        )
    return out
