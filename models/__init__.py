"""contactmp.models."""
