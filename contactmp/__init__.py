"""contactmp: rigid-body contact as mathematical programs."""
from contactmp.errors import ContactMPError, InputError, OptionError
from contactmp.result import Result, Status

# Registers SolverFactory("contactmp_ipopt") with Pyomo (cheap: pyomo.environ is not loaded here).
from contactmp import pyomo_ipopt as _pyomo_ipopt  # noqa: F401

__version__ = "0.1.0"
__all__ = ["ContactMPError", "InputError", "OptionError", "Result", "Status", "__version__"]
