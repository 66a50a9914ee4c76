"""Case study ``cito-box``: contact-implicit trajectory optimization pushes a planar box 1 m along
a friction surface, rest to rest, without being told when the box sticks or slides.

Task (``_cito.TASKS["box"]``): 1 kg box, 0.4 m x 0.2 m, mu = 0.5, horizontal force at its center
``|f_x| <= 10 N``, minimize ``h sum f_x^2``; N = 20 steps of 0.05 s (``--quick``) or 40 of 0.025 s.
Each step is the velocity-level pyramid block (k = 4) of TimeStepping. 20 seeded starts per MPCC
strategy (Scholtes' homotopy; the full run adds the l1 elastic penalty, which is 10-20x faster
per start here but ends 3 of 20 quick starts at a penalty minimum with complementarity violation ~1). Friction work makes the optimum
push above ``mu m g`` to start sliding and let friction stop the box: the optimizer has to find
the sliding phase and the sticking start and end by itself; the table counts the contact-steps in
each mode of the best trajectory.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from contactmp.case_studies import _cito
from contactmp.case_studies._study import StudyRun

DESCRIPTION = "contact-implicit TO: push a planar box 1 m (sticking and sliding discovered), 20 starts"
STARTS = 20


def run(out: Path, quick: bool = False, seed: int = 0, workers: int | None = None,
        scheduler: str | None = None) -> dict[str, Any]:
    """Run the study into ``out`` (starts on a local Dask cluster of ``workers`` processes, default
    2; 0 runs them in this process; or on the cluster at ``scheduler``); resumes from
    ``out/records.jsonl`` when it exists."""
    return run_task_study("cito-box", ["box"], out, quick, seed, workers, scheduler, quick_strategy="scholtes")


def run_task_study(name: str, tasks: list[str], out: Path, quick: bool, seed: int, workers: int | None = None,
                   scheduler: str | None = None, quick_strategy: str = "scholtes") -> dict[str, Any]:
    """The single-task studies (cito-box, cito-hopper): pyramid formulation, :data:`STARTS` starts
    with ``quick_strategy`` (``--quick``) or with both Scholtes and l1 elastic; table, trajectory
    PNGs, summary."""
    study = StudyRun(name, Path(out), quick, seed)
    strategies = [quick_strategy] if quick else ["scholtes", "elastic_l1"]
    records = _cito.run_grid(study, tasks, ["pyramid"], strategies, STARTS, workers=workers, scheduler=scheduler)
    rows = _cito.summarize(records)
    figures = _cito.plot_best_trajectories(study, records, rows)
    lines = [
        f"# {name}" + (" (quick)" if quick else ""),
        "",
        *(f"- {t}: {_cito.TASKS[t].description}" for t in tasks),
        f"- converged = verified solved and complementarity violation max|min(a, b)| <= {_cito.COMP_TOL:g}; "
        "cost spread over the converged starts; start 0 is the deterministic guess, starts 1.. add "
        f"{_cito.NOISE_SCALE} N(0, 1) noise (numpy seed [seed, start]).",
        "",
        _cito.summary_table(rows),
    ]
    study.write_table("\n".join(lines))
    conv = sum(r["converged"] for r in rows)
    total = sum(r["starts"] for r in rows)
    headline = f"{conv}/{total} starts converged ({100 * conv / total:.0f}%) with complementarity violation <= {_cito.COMP_TOL:g}"
    summary = {"headline": headline, "converged": conv, "starts": total, "success_rate": conv / total,
               "rows": rows, "figures": figures}
    study.write_summary(summary)
    return summary
