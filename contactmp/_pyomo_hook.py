"""Register the Pyomo plugin ``SolverFactory("contactmp_ipopt")`` when Pyomo is imported, not before.

The plugin (:mod:`contactmp.solvers.nlp.pyomo_ipopt`) imports Pyomo and CasADi, about 1.5 s together, and
Pyomo's import hooks then pull in ``scipy.stats`` whenever SciPy loads. A command that solves an
LCP needs none of that. So ``import contactmp`` only watches for ``pyomo.environ``: a finder on
``sys.meta_path`` lets the normal machinery import it and, right after the module has executed,
imports the plugin (which registers itself) and removes itself from ``sys.meta_path``. If
``pyomo.environ`` is already imported, the plugin is imported at once.
"""
from __future__ import annotations

import importlib
import importlib.abc
import sys
from types import ModuleType
from typing import Any, Sequence

#: the module whose import makes the plugin available (every Pyomo script imports it)
WATCHED = "pyomo.environ"
PLUGIN = "contactmp.solvers.nlp.pyomo_ipopt"


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the loader of :data:`WATCHED` to import :data:`PLUGIN` after it."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        """For :data:`WATCHED`, the spec the other finders give, with a loader that registers the plugin."""
        if fullname != WATCHED:
            return None
        sys.meta_path.remove(self)  # once only, and never for the plugin's own imports
        spec = next((s for s in (f.find_spec(fullname, path, target) for f in sys.meta_path
                                 if hasattr(f, "find_spec")) if s is not None), None)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_register(module: ModuleType) -> None:
            exec_module(module)
            importlib.import_module(PLUGIN)

        spec.loader.exec_module = exec_then_register  # type: ignore[method-assign]
        return spec


def register_pyomo_plugin_on_import() -> None:
    """Import :data:`PLUGIN` now if :data:`WATCHED` is loaded, else as soon as it is imported."""
    if WATCHED in sys.modules:
        importlib.import_module(PLUGIN)
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())
