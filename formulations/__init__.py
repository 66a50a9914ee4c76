"""contactmp.formulations."""
