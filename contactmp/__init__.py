"""contactmp: rigid-body contact as mathematical programs."""
from contactmp.errors import ContactMPError, InputError, OptionError
from contactmp.result import Result, Status

__version__ = "0.1.0"
__all__ = ["ContactMPError", "InputError", "OptionError", "Result", "Status", "__version__"]
