"""contactmp.transcriptions: formulation blocks composed over many time steps (time-stepping simulation)."""
