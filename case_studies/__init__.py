"""Case studies: each runs the chain on named systems and writes summary.json, records.jsonl,
table.md and PNG figures into its output folder (``contactmp study NAME --out DIR``).
"""
from __future__ import annotations

import importlib
from typing import Any

#: study name -> module with ``DESCRIPTION`` and ``run(out, quick, seed) -> dict``
STUDIES: dict[str, str] = {
    "trinkle-table1": "contactmp.case_studies.trinkle_table1",
    "cone-vs-pyramid": "contactmp.case_studies.cone_vs_pyramid",
    "cito-box": "contactmp.case_studies.cito_box",
    "cito-hopper": "contactmp.case_studies.cito_hopper",
    "cito-compare": "contactmp.case_studies.cito_compare",
    "cito-push": "contactmp.case_studies.cito_push",
    "cito-quadruped": "contactmp.case_studies.cito_quadruped",
    "painleve-rod": "contactmp.case_studies.painleve_rod",
    "uniqueness-random": "contactmp.case_studies.uniqueness_random",
    "drumwright-pendulum": "contactmp.case_studies.drumwright_pendulum",
    "compliant-friction": "contactmp.case_studies.compliant_friction",
    "drumwright-stiff": "contactmp.case_studies.drumwright_stiff",
    "nmdp-timestep": "contactmp.case_studies.nmdp_timestep",
    "formulation-compare": "contactmp.case_studies.formulation_compare",
}


def study_module(name: str) -> Any:
    """The module implementing study ``name`` (raises OptionError with a hint when unknown)."""
    from contactmp.errors import OptionError, did_you_mean

    if name not in STUDIES:
        hint = did_you_mean(name, STUDIES)
        raise OptionError(f"unknown study '{name}' (known: {', '.join(STUDIES)}){hint}")
    return importlib.import_module(STUDIES[name])
