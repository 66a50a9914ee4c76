"""Case study ``cito-hopper``: contact-implicit trajectory optimization moves the planar one-legged
hopper forward (0.3 m in 1 s with ``--quick``, 0.5 m in 1.5 s) from standing to standing.

Task (``_cito.TASKS["hopper"]``): the hopper of ``models.systems.hopper_2d`` (mu = 0.8), leg force
and hip torque bounded, configuration limits on the leg and angles, cost ``1e-3 h sum |u|^2 +
sum theta_k^2``. The contact sequence is not given: the table reports how many foot steps of the best
trajectory are in flight (separated), sticking and sliding. 20 seeded starts per strategy (l1 elastic with ``--quick``; Scholtes and l1 elastic in the full run).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from contactmp.case_studies.cito_box import run_task_study

DESCRIPTION = "contact-implicit TO: planar hopper moves forward and stands again (flight discovered), 20 starts"


def run(out: Path, quick: bool = False, seed: int = 0, workers: int | None = None,
        scheduler: str | None = None) -> dict[str, Any]:
    """Run the study into ``out`` (Dask: see ``cito_box.run``); resumes from ``out/records.jsonl``."""
    # quick: the l1 elastic penalty (Scholtes' homotopy needs minutes per hopper start)
    return run_task_study("cito-hopper", ["hopper"], out, quick, seed, workers, scheduler,
                          quick_strategy="elastic_l1")
