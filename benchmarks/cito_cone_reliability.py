"""Cone plans against pyramid plans on the contact-implicit tasks: converged share, time per start and
the largest gap at which a plan's force acts (issue 35, items 5 and 6).

    python benchmarks/cito_cone_reliability.py [--tasks box,push,hopper,arm-push,rotate] [--starts 20] [--first 0]
                                               [--configs pyramid,cone,cone-cold,cone-cold-box1,cone-cold-unbounded]
                                               [--gap linear|position] [--time-limit 60] [--out DIR]

Every configuration solves the same seeded starts of each task of ``contactmp.case_studies._cito.TASKS``
(start 0: the task's guess; start i: the guess plus 0.1 N(0, 1) noise from
``numpy.random.default_rng([0, i])``, as the studies do) with the library's default strategy
(Scholtes) and the task's options, one start at a time in this process; the Solo12 tasks
(``solo-walk-3d``, ``solo-jump-3d``, ``solo-walk-sagittal``, ``solo-jump-sagittal``,
``solo-calipso-sagittal``: the cito-quadruped study's) with that study's strategy and options:

* ``pyramid``: the velocity pyramid;
* ``cone``: the Coulomb cone (disk form) with the default options: each start solves the pyramid
  from start i, then the cone from that plan (``ContactImplicitTO.solve``'s default
  ``pyramid_start``); its time and iterations are both phases' sums, each phase has the CPU cap
  (so a start may take twice the cap), and the record keeps the pyramid phase's status and
  objective (``seed_status``, ``seed_objective``); its NLPs bound the directions ``|w_i| <= 1.5``
  (:attr:`~contactmp.solvers.nlp.solve.NLPOptions.cone_bounds` and ``cone_bound``);
* ``cone-cold``: the cone from its own guess of start i (``pyramid_start=False``; the default
  before issue 35's last step);
* ``cone-cold-box1``: that with ``cone_bound=1`` (the box the disk side implies; the default from
  issue 35 until the 3D Solo12 tasks showed its degenerate points);
* ``cone-cold-unbounded``: that with ``cone_bounds=False`` (the NLPs before issue 35).

``--gap`` builds every task with the formulations' ``gap`` option: ``position`` (the tasks' own,
``_cito.GAP``: the normal side is the gap at the step's end ``phi(q_{k+1}) / h``) or ``linear``
(``phi(q_k) / h + Jn(q_k) v_{k+1}``), to measure what the position gap costs.

Per task and configuration: converged starts (verified solved, ``max |min(a, b)| <= 1e-6``), median
cost of the converged starts, median IPOPT iterations and wall time per start, the ratio of the
median time to ``pyramid``'s, and the largest gap
``phi(q_{k+1})`` at which a converged plan's normal impulse acts
(:meth:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO.force_gap`). Output:
``DIR/cito_cone_reliability.json`` and ``DIR/cito_cone_reliability.jsonl`` (one record per start,
resumable: a rerun skips the starts already recorded).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

from contactmp.records import RecordStore  # noqa: E402

CONFIGS = {"pyramid": ("pyramid", {}), "cone": ("cone", {}), "cone-cold": ("cone", {"pyramid_start": False}),
           "cone-cold-box1": ("cone", {"pyramid_start": False, "cone_bound": 1.0}),
           "cone-cold-unbounded": ("cone", {"pyramid_start": False, "cone_bounds": False})}
TASKS = ("box", "push", "hopper", "arm-push", "rotate")
#: the Solo12 tasks of the cito-quadruped study (``--tasks solo-walk-sagittal,...``): (kind, planar),
#: solved with that study's strategy and options (elastic l1, 300 CPU s per start, derivatives from
#: one knot), not the planar tasks' Scholtes
SOLO_TASKS = {"solo-walk-3d": ("walk", False), "solo-jump-3d": ("jump", False),
              "solo-walk-sagittal": ("walk", True), "solo-jump-sagittal": ("jump", True),
              "solo-calipso-sagittal": ("calipso", True)}


def _build(task: str, formulation: str, gap: str) -> Any:
    """The task's transcription with the formulations' ``gap`` option ``gap`` (the tasks' own is
    ``_cito.GAP``)."""
    from contactmp.case_studies import _cito

    if task in SOLO_TASKS:
        from contactmp.case_studies._quadruped import solo_task

        return solo_task(*SOLO_TASKS[task], formulation, gap=gap)

    saved = _cito.GAP
    _cito.GAP = gap
    try:
        return _cito.TASKS[task].build(formulation, True)
    finally:
        _cito.GAP = saved


def _strategy_and_options(task: str, time_limit: float) -> tuple[str, dict[str, Any]]:
    """The MPCC strategy and NLPOptions of one start of ``task``: the Solo12 tasks take the
    cito-quadruped study's (its CPU limit per start, not ``time_limit``), the others Scholtes with
    their task's options and ``time_limit`` CPU seconds per start (wall: ten times that), so that
    the counts do not depend on the machine's load."""
    from contactmp.case_studies import _cito

    if task in SOLO_TASKS:
        from contactmp.case_studies import cito_quadruped

        return cito_quadruped.STRATEGY, dict(cito_quadruped.OPTIONS)
    return "scholtes", {**dict(_cito.TASKS[task].options), "cpu_time_limit": time_limit,
                        "time_limit": 10.0 * time_limit}


def main(argv: list[str] | None = None) -> int:
    """Run the grid (resumable), print the table, write the JSON."""
    from contactmp.case_studies import _cito

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--starts", type=int, default=20)
    ap.add_argument("--first", type=int, default=0,
                    help="first start index this process solves (split one grid over processes with their own --out, "
                         "then rerun on the merged JSONL for the table)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--gap", default="position", choices=("linear", "position"))
    ap.add_argument("--time-limit", type=float, default=_cito.TIME_LIMIT,
                    help="CPU seconds per start of the planar tasks (wall: 10x); the Solo12 tasks take their study's")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    tasks, configs = args.tasks.split(","), args.configs.split(",")
    for name in configs:
        if name not in CONFIGS:
            raise SystemExit(f"unknown configuration {name!r} (known: {', '.join(CONFIGS)})")
    for task in tasks:
        if task not in _cito.TASKS and task not in SOLO_TASKS:
            raise SystemExit(f"unknown task {task!r} (known: {', '.join([*_cito.TASKS, *SOLO_TASKS])})")
    store = RecordStore(args.out / "cito_cone_reliability.jsonl")
    done = {r["key"]: r for r in store.records()}
    records = []
    for task in tasks:
        for name in configs:
            form, extra = CONFIGS[name]
            to = None
            policy = "" if extra.get("pyramid_start") is False else _cito.start_policy(form)
            for i in range(args.first, args.starts):
                key = f"{args.gap}/{task}/{name}{policy}/start{i:02d}"
                if key not in done:
                    to = to if to is not None else _build(task, form, args.gap)
                    strategy, opts = _strategy_and_options(task, args.time_limit)
                    rec, _ = _cito.run_start(to, strategy, 0, i, options=tuple({**opts, **extra}.items()))
                    extra_fields = {k: rec[k] for k in ("pyramid_start", "seed_status", "seed_objective", "seed_time_s",
                                                          "seed_iterations") if k in rec}
                    done[key] = {"key": key, "task": task, "config": name, "gap": args.gap, "start": i,
                                 "strategy": strategy,
                                 **{k: rec[k] for k in ("status", "converged", "objective", "comp_violation",
                                                        "iterations", "time_s", "force_gap")}, **extra_fields}
                    store.append(done[key])
                    print(f"{key}: {rec['status']} converged={rec['converged']} {rec['time_s']:.1f} s "
                          f"gap={rec['force_gap']}", flush=True)
                records.append(done[key])
    rows, body = [], []
    for task in tasks:
        medians = {}
        for name in configs:
            rs = [r for r in records if r["task"] == task and r["config"] == name]
            conv = [r for r in rs if r["converged"]]
            medians[name] = float(np.median([r["time_s"] for r in rs]))
            rows.append({"task": task, "config": name, "starts": len(rs), "converged": len(conv),
                         "cost_median": float(np.median([r["objective"] for r in conv])) if conv else None,
                         "iterations_median": float(np.median([r["iterations"] for r in rs])),
                         "time_median_s": medians[name], "force_gap_max": _cito.largest_force_gap(conv)})
        for row in rows[-len(configs):]:
            ref = "pyramid"
            row["reference"] = ref if ref in medians else None
            row["time_ratio"] = row["time_median_s"] / medians[ref] if ref in medians else None
            body.append([task, row["config"], f"{row['converged']}/{row['starts']}",
                         "-" if row["cost_median"] is None else f"{row['cost_median']:.4g}",
                         f"{row['iterations_median']:.0f}", f"{row['time_median_s']:.2f}",
                         "-" if row["time_ratio"] is None else f"{row['time_ratio']:.2f} x {ref}",
                         "-" if row["force_gap_max"] is None else f"{row['force_gap_max']:.2g}"])
    common.print_table(f"contact-implicit tasks (Scholtes; Solo12: elastic l1), gap={args.gap}",
                       ["task", "config", "converged", "cost median", "IPOPT it. median", "time/start median (s)",
                        "time ratio", "largest gap with force (m)"], body)
    results = {**common.run_header("cito_cone_reliability", sys.argv, 0), "gap": args.gap, "rows": rows}
    return common.finish(args.out / f"cito_cone_reliability_{args.gap}.json", results, t_start, store.path)


if __name__ == "__main__":
    raise SystemExit(main())
