"""Run a callback right after a module is imported, not before: how ``import contactmp`` registers
the Pyomo plugin ``SolverFactory("contactmp_ipopt")`` only once Pyomo is imported.

The plugin (:mod:`contactmp.solvers.nlp.pyomo_ipopt`) imports Pyomo and CasADi, about 1.5 s together, and
Pyomo's import hooks then pull in ``scipy.stats`` whenever SciPy loads. A command that solves an
LCP needs none of that. So ``contactmp/__init__.py`` calls :func:`after_import` with
``"pyomo.environ"`` and a function that imports the plugin (a static import the architecture check
sees; this core module names no solver): a finder on ``sys.meta_path`` lets the normal machinery
import the watched module and, right after it has executed, calls the function and removes itself
from ``sys.meta_path``. If the watched module is imported already, the function runs at once.
"""
from __future__ import annotations

import importlib.abc
import sys
from types import ModuleType
from typing import Any, Callable, Sequence


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the loader of ``watched`` to call ``callback`` after it."""

    def __init__(self, watched: str, callback: Callable[[], Any]) -> None:
        self.watched, self.callback = watched, callback

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        """For the watched module, the spec the other finders give, with a loader that then calls back."""
        if fullname != self.watched:
            return None
        sys.meta_path.remove(self)  # once only, and never for the callback's own imports
        spec = next((s for s in (f.find_spec(fullname, path, target) for f in sys.meta_path
                                 if hasattr(f, "find_spec")) if s is not None), None)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module, callback = spec.loader.exec_module, self.callback

        def exec_then_call(module: ModuleType) -> None:
            exec_module(module)
            callback()

        spec.loader.exec_module = exec_then_call  # type: ignore[method-assign]
        return spec


def after_import(watched: str, callback: Callable[[], Any]) -> None:
    """Call ``callback()`` now if the module ``watched`` is loaded, else right after it is imported
    (once; a second call for a module already watched adds nothing)."""
    if watched in sys.modules:
        callback()
    elif not any(isinstance(f, _AfterImport) and f.watched == watched for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(watched, callback))
