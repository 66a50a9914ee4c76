"""contactmp.transcriptions: formulation blocks composed over many time steps.

* :class:`TimeStepping` -- simulation, one contact problem per step solved in sequence;
* :class:`ContactImplicitTO` -- contact-implicit trajectory optimization (Posa-style direct
  transcription, all steps in one Program with complementarity pairs).
"""
from contactmp.transcriptions.contact_implicit import ContactImplicitTO, TOResult
from contactmp.transcriptions.time_stepping import TimeStepping

__all__ = ["ContactImplicitTO", "TOResult", "TimeStepping"]
