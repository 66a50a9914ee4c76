"""contactmp.transcriptions: formulation blocks composed over many time steps.

* :class:`TimeStepping` -- simulation, one contact problem per step solved in sequence;
* :class:`ContactImplicitTO` -- contact-implicit trajectory optimization (Posa-style direct
  transcription, all steps in one Program with complementarity pairs);
* :class:`RecedingHorizon` -- receding-horizon (MPC-style) re-solves of a ContactImplicitTO, warm-started
  from the previous plan shifted by one knot.

TimeStepping and ContactImplicitTO take any formulation of the registry
(:mod:`contactmp.formulations.base`) by name or as a configured object, and never branch on which
one it is.
"""
from contactmp.transcriptions.contact_implicit import ContactImplicitTO, TOResult
from contactmp.transcriptions.receding_horizon import RecedingHorizon
from contactmp.transcriptions.time_stepping import TimeStepping, Trajectory

__all__ = ["ContactImplicitTO", "RecedingHorizon", "TOResult", "TimeStepping", "Trajectory"]
