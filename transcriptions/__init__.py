"""contactmp.transcriptions: formulation blocks composed over many time steps.

* :class:`TimeStepping` -- simulation, one contact problem per step solved in sequence;
* :class:`ContactImplicitTO` -- contact-implicit trajectory optimization (Posa-style direct
  transcription, all steps in one Program with complementarity pairs).

Both take any formulation of the registry (:mod:`contactmp.formulations.base`) by name or as a
configured object, and never branch on which one it is.
"""
from contactmp.transcriptions.contact_implicit import ContactImplicitTO, TOResult
from contactmp.transcriptions.time_stepping import TimeStepping, Trajectory

__all__ = ["ContactImplicitTO", "TOResult", "TimeStepping", "Trajectory"]
