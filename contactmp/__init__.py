"""contactmp: rigid-body contact as mathematical programs."""
from pathlib import Path as _Path

# In a source checkout the subpackages live in top-level folders (models/, solvers/, ...) that
# pyproject.toml's package-dir maps into contactmp when installed. When this file is imported from
# the checkout itself (``python -m pytest`` puts the checkout first on sys.path), give the package
# the checkout as a second search path so that contactmp.models -> models/ resolves the same way.
_CHECKOUT = _Path(__file__).resolve().parent.parent
if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "solvers" / "__init__.py").is_file():
    __path__.append(str(_CHECKOUT))  # type: ignore[name-defined]

from contactmp.errors import ContactMPError, InputError, OptionError
from contactmp.result import BatchResult, Result, Status

from contactmp._pyomo_hook import register_pyomo_plugin_on_import as _register

# SolverFactory("contactmp_ipopt") is registered with Pyomo as soon as ``pyomo.environ`` is imported
# (at once if it already is): ``import contactmp`` itself imports neither Pyomo nor CasADi.
_register()

__version__ = "0.1.0"
__all__ = [
    "ContactMPError", "InputError", "OptionError", "Result", "BatchResult", "Status", "__version__",
    "Program", "solve_lcp", "solve_fc3d", "solve_lcp_batch", "solve_fc3d_batch", "solve_program", "PyramidLCP", "ConeNCP", "multistart",
    "TimeStepping",
]

_LAZY = {  # heavier entry points, imported on first use (CasADi, numba)
    "Program": "contactmp.program",
    "solve_lcp": "contactmp.solvers.registry",
    "solve_fc3d": "contactmp.solvers.registry",
    "solve_lcp_batch": "contactmp.solvers.registry",
    "solve_fc3d_batch": "contactmp.solvers.registry",
    "ConeNCP": "contactmp.formulations.cone_ncp",
    "solve_program": "contactmp.solvers.nlp.solve",
    "PyramidLCP": "contactmp.formulations.pyramid_lcp",
    "multistart": "contactmp.solvers.multistart",
    # simulation, and one step's Program from a state: TimeStepping(system, h).step_program(q, v, u)
    "TimeStepping": "contactmp.transcriptions.time_stepping",
}


def __getattr__(name: str):
    """Lazy access to the heavier entry points listed in ``_LAZY``."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'contactmp' has no attribute {name!r}")
