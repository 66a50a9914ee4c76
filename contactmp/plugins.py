"""Plug-ins from installed packages: formulations and solvers listed under contactmp's entry-point
groups (:data:`GROUPS`) in a package's metadata, for example in its ``pyproject.toml``::

    [project.entry-points."contactmp.formulations"]
    my-penalty = "my_package.contact:PenaltyContact"      # a Formulation class, name "my-penalty"

    [project.entry-points."contactmp.lcp_solvers"]
    my-lcp = "my_package.lcp"                               # a module with NAME, Options and solve

    [project.entry-points."contactmp.fc3d_solvers"]
    my-fc3d = "my_package.fc3d"

Each registry loads its group once, on first use, after its built-ins; an entry point whose name is
registered already raises (the registries' ``replace=True`` is for code that means it).
"""
from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

#: entry-point group -> what each entry point names
GROUPS = {
    "contactmp.formulations": "a Formulation class (its ``name`` is the entry point's name)",
    "contactmp.lcp_solvers": "a module with NAME, Options and solve(M, q, options, progress, **overrides)",
    "contactmp.fc3d_solvers": "a module with NAME, Options and solve(W, q, mu, options, progress, **overrides)",
}


#: the groups loaded so far in this process (each registry loads its group once)
LOADED_GROUPS: set[str] = set()


def load_entry_points(group: str) -> list[tuple[str, Any]]:
    """``(name, loaded object)`` of every entry point of ``group`` in the installed distributions,
    sorted by name (so the order does not depend on the file system), the first time ``group`` is
    asked for in this process; ``[]`` after that."""
    if group in LOADED_GROUPS:
        return []
    LOADED_GROUPS.add(group)
    return [(ep.name, ep.load()) for ep in sorted(entry_points(group=group), key=lambda e: e.name)]
