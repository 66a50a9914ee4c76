"""Case study ``cito-compare``: the cito-box and cito-hopper tasks with every contact formulation
ContactImplicitTO offers and every MPCC strategy of ``solve_program``, 20 seeded starts each
(3 with ``--quick``): success rate (verified, complementarity violation <= 1e-6), the spread of the
final cost over the converged starts (distinct local optima show up here), complementarity violation
and time per start. Formulations are compared on their own terms: each start is checked against its
own formulation's complementarity conditions (and its own constraint rows: the table reports both
violations). Each formulation starts as ``ContactImplicitTO.solve`` starts it by default: the cone
from the pyramid's plan of the same start (its time per start covers both solves; records of the cone
from its own guess, made before that default, have keys without ``/from-pyramid`` and are not
resumed), every other formulation from its own guess.

The formulations are ContactImplicitTO's: the rigid velocity pyramid and cone, and Drumwright's
compliant cone QP (through its KKT conditions) with the tasks' physical gains
(``_cito.BOX_GAINS``, ``_cito.HOPPER_GAINS``: ~1 mm static penetration, critical damping, stiction creep
below ~1 mm/s). The compliant tasks start at rest on their springs, so their boundary heights are the
springs' equilibrium, not the rigid tasks' contact heights; costs are comparable, not identical.
The compliant step is the *associated* (convex-QP) law: a sliding contact rides ``(h + B/K) mu gamma``
above the spring's depth, which at h = 0.05 s lifts the sliding box by ~5 cm (TimeStepping with the
same gains shows it); the compliant box task did not converge in the quick run (IPOPT stops at a
point of local infeasibility, constraint violation 2.3e-5, or at the time limit), while the compliant
hopper converged with every strategy. Contact modes use the slip ``|u_T| > 1e-4`` m/s, so the
compliant formulation's stiction creep (< 1 mm/s) counts as sliding.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from contactmp.case_studies import _cito
from contactmp.case_studies._study import StudyRun

DESCRIPTION = "contact-implicit TO: box and hopper x formulations x MPCC strategies, 20 starts each"
STARTS, QUICK_STARTS = 20, 3


#: the built-in formulations the study compares, in its table's order (each must be registered)
COMPARED = ("pyramid", "cone", "compliant", "nmdp", "mdp")


def formulations() -> list[str]:
    """The formulations the study compares (:data:`COMPARED`, checked against the registry)."""
    from contactmp.formulations.base import registered

    missing = set(COMPARED) - set(registered())
    if missing:  # pragma: no cover - the built-ins register themselves
        raise RuntimeError(f"formulations {sorted(missing)} are not registered")
    return list(COMPARED)


def strategies() -> list[str]:
    """The MPCC strategies of solve_program."""
    from contactmp.solvers.nlp import STRATEGIES

    return list(STRATEGIES)


def _figure(rows: list[dict[str, Any]], records: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted({r["task"] for r in rows})
    fig, axes = plt.subplots(2, len(tasks), figsize=(6 * len(tasks), 7), squeeze=False)
    for c, task in enumerate(tasks):
        rs = [r for r in rows if r["task"] == task]
        labels = [f"{r['formulation']}\n{r['strategy']}" for r in rs]
        x = np.arange(len(rs))
        axes[0, c].bar(x, [100 * r["success_rate"] for r in rs], color="C0")
        axes[0, c].set_xticks(x, labels, fontsize=7, rotation=45, ha="right")
        axes[0, c].set_ylabel("converged starts (%)")
        axes[0, c].set_ylim(0, 105)
        axes[0, c].set_title(f"{task}: success rate")
        costs = [[q["objective"] for q in records if q["task"] == task and q["converged"]
                  and (q["formulation"], q["strategy"]) == (r["formulation"], r["strategy"])] for r in rs]
        for i, cs in enumerate(costs):
            if cs:
                axes[1, c].plot(np.full(len(cs), i) + np.linspace(-0.15, 0.15, len(cs)), cs, "o", ms=4, alpha=0.7)
        axes[1, c].set_xticks(x, labels, fontsize=7, rotation=45, ha="right")
        axes[1, c].set_ylabel("final cost of converged starts")
        axes[1, c].set_title(f"{task}: cost spread")
        for ax in axes[:, c]:
            ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(out: Path, quick: bool = False, seed: int = 0, workers: int | None = None,
        scheduler: str | None = None) -> dict[str, Any]:
    """Run the study into ``out`` (Dask: see ``cito_box.run``); resumes from ``out/records.jsonl``."""
    study = StudyRun("cito-compare", Path(out), quick, seed)
    forms, strats = formulations(), strategies()
    starts = QUICK_STARTS if quick else STARTS
    records = _cito.run_grid(study, ["box", "hopper"], forms, strats, starts, workers=workers, scheduler=scheduler)
    rows = _cito.summarize(records)
    figures = _cito.plot_best_trajectories(study, records, rows)
    _figure(rows, records, study.out / "compare.png")
    figures.append("compare.png")
    lines = [
        "# cito-compare" + (" (quick)" if quick else ""),
        "",
        *(f"- {t.name}: {t.description}" for t in _cito.TASKS.values()),
        f"- formulations: {', '.join(forms)}; MPCC strategies: {', '.join(strats)}; {starts} starts each "
        "(start 0 deterministic, the others seeded noise); IPOPT through CasADi.",
        f"- converged = verified solved and max|min(a, b)| <= {_cito.COMP_TOL:g} for the formulation's own "
        "pairs (each formulation is checked against its own conditions; the compliant one against the KKT "
        "conditions of its cone QP); cost spread over the converged starts.",
        "",
        _cito.summary_table(rows),
    ]
    study.write_table("\n".join(lines))
    best = {f"{r['task']}/{r['formulation']}/{r['strategy']}": r["success_rate"] for r in rows}
    headline = "success rates: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in best.items())
    summary = {"headline": headline, "rows": rows, "figures": figures, "formulations": forms,
               "strategies": strats, "starts": starts}
    study.write_summary(summary)
    return summary
