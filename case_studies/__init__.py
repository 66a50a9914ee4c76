"""contactmp.case_studies."""
