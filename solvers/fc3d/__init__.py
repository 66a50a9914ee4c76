"""Frictional contact with Coulomb cones (fc3d): find ``r`` and ``u = W r + q`` with, per contact,
``K_mu`` (the cone ``||r_T|| <= mu r_N``) and the modified velocity ``u + mu ||u_T|| e_N`` in its dual
cone, complementary to ``r`` (Acary and Brogliato's form).

The face of the fc3d solvers. :mod:`.problem` holds what every fc3d solver shares (the cone's
projection, the natural-map residual, the verified result); the solvers are :mod:`.newton`
(Alart-Curnier Newton), :mod:`.nsgs` (nonsmooth Gauss-Seidel), :mod:`.prox` (the proximal point
method), :mod:`.local` (per-contact solvers), :mod:`.qvi` (the QVI fixed point), :mod:`.pyramid`
(the pyramid LCP approximation) and :mod:`.ipopt` (the cone complementarity as an MPCC), chosen by
name through :func:`contactmp.solvers.solve_fc3d`; :mod:`.sensitivity` differentiates a solution.
The IPOPT block (:func:`add_fc3d_block`, the cone laws) loads CasADi: imported on first use.
"""
from __future__ import annotations

from typing import Any

from contactmp.solvers.fc3d.problem import (
    checked_fc3d_result,
    dual_violation,
    fc3d_residual,
    natural_map_residual,
    project_cone,
    validate_fc3d,
    verified_fc3d_result,
)
from contactmp.solvers.fc3d.sensitivity import MODES, FC3DSensitivity, contact_modes, fc3d_sensitivity

#: names of :mod:`.ipopt` this face gives (it imports CasADi: loaded on first use)
IPOPT_BLOCK = ("FC3DBlock", "FORMS", "add_fc3d_block", "check_form", "cone_law", "fc3d_program")

__all__ = ["checked_fc3d_result", "dual_violation", "fc3d_residual", "natural_map_residual", "project_cone",
           "validate_fc3d", "verified_fc3d_result", "MODES", "FC3DSensitivity", "contact_modes",
           "fc3d_sensitivity", *IPOPT_BLOCK]


def __getattr__(name: str) -> Any:
    """The IPOPT block's names, imported on first use."""
    if name in IPOPT_BLOCK:
        from contactmp.solvers.fc3d import ipopt

        return getattr(ipopt, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
