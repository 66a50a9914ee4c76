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

from contactmp._pyomo_hook import after_import as _after_import


def _register_pyomo_plugin() -> None:
    """Import the Pyomo plugin, which registers ``SolverFactory("contactmp_ipopt")``."""
    from contactmp.solvers.nlp import CasadiIpopt  # noqa: F401 (the face loads the plugin module)


# SolverFactory("contactmp_ipopt") is registered with Pyomo as soon as ``pyomo.environ`` is imported
# (at once if it already is): ``import contactmp`` itself imports neither Pyomo nor CasADi.
_after_import("pyomo.environ", _register_pyomo_plugin)

__version__ = "0.1.0"
__all__ = [
    "ContactMPError", "InputError", "OptionError", "Result", "BatchResult", "Status", "__version__",
    "Program", "solve_lcp", "solve_fc3d", "solve_lcp_batch", "solve_fc3d_batch", "solve_program", "PyramidLCP", "ConeNCP", "multistart",
    "TimeStepping",
]

def __getattr__(name: str):
    """Lazy access to the heavier entry points (CasADi, numba), imported on first use."""
    if name == "Program":
        from contactmp.program import Program

        return Program
    if name in ("solve_lcp", "solve_fc3d", "solve_lcp_batch", "solve_fc3d_batch"):
        from contactmp.solvers import registry

        return getattr(registry, name)
    if name == "solve_program":
        from contactmp.solvers.nlp import solve_program

        return solve_program
    if name == "multistart":
        from contactmp.solvers.multistart import multistart

        return multistart
    if name in ("ConeNCP", "PyramidLCP"):
        from contactmp.formulations import ConeNCP, PyramidLCP

        return {"ConeNCP": ConeNCP, "PyramidLCP": PyramidLCP}[name]
    if name == "TimeStepping":  # simulation, and one step's Program: TimeStepping(system, h).step_program(q, v, u)
        from contactmp.transcriptions.time_stepping import TimeStepping

        return TimeStepping
    raise AttributeError(f"module 'contactmp' has no attribute {name!r}")
