"""The k-gon that replaces Coulomb's disk in the friction pyramids (pure geometry, numpy only).

Used by the pyramid LCP (:mod:`contactmp.formulations.pyramid_lcp`) and the pyramid refinement
for fc3d (:mod:`contactmp.solvers.fc3d.pyramid`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["facet_generators", "facet_normals"]


def facet_generators(k: int) -> np.ndarray:
    """The ``k`` generators ``D_i`` (rows, in the ``(t, o)`` plane) at angles ``(2i+1) pi / k`` with
    length ``1 / cos(pi / k)``; ``mu c_n D_i`` are the vertices of the friction polygon."""
    ang = (2 * np.arange(k) + 1) * np.pi / k
    return np.column_stack([np.cos(ang), np.sin(ang)]) / np.cos(np.pi / k)


def facet_normals(k: int) -> np.ndarray:
    """Unit outward normals (rows) of the ``k`` edges of the friction polygon (angles ``2 i pi / k``);
    ``c_T`` lies in the polygon iff ``e_i . c_T <= mu c_n`` for all ``i``."""
    ang = 2 * np.arange(k) * np.pi / k
    return np.column_stack([np.cos(ang), np.sin(ang)])
