"""contactmp.transcriptions."""
