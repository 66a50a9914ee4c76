"""The settings of the MPCC homotopy, chosen by measurement: IPOPT's linear solver, barrier strategy,
Hessian and scaling, the homotopy's start, its inner tolerance, the active-set polish and dual warm
starts, on the trajectory-optimization tasks of the cito studies (box and hopper, pyramid, quick).

    python benchmarks/mpcc_settings.py [--starts-box 20] [--starts-hopper 10] [--configs a,b,...]
                                       [--time-limit 60] [--fresh] [--out DIR]

Every configuration solves the same seeded starts (start 0: the task's guess; start i: the guess plus
0.1 N(0, 1) noise from numpy.random.default_rng([0, i]), as the studies do) with
``solve_program(strategy="scholtes")`` and the configuration's options, one start at a time in this
process (one worker). The reference ``plain loop`` is a plain Scholtes loop on the same program
(``plain_scholtes`` of ``benchmarks/pyomo_scale.py``: casadi.nlpsol built once, sigma = 1, 0.1, ...,
1e-12, primal warm start, IPOPT at ``tol = 1e-8`` with ``bound_relax_factor = 0`` and the adaptive
barrier, stop at the first NLP that IPOPT solves with an answer that passes the checks); ``before``
is our homotopy as it was before issue 14: every NLP at IPOPT's ``tol``, no polish, no
certificate, the same stop (``polish=False, homotopy_tol=1e-8, certify=False``, with the task's
sigma0 = 1 of the time). The table gives per task and configuration:
converged starts (verified solved and max |min(a, b)| <= 1e-6, the studies' rule), best and median
cost of the converged starts, share certified B-stationary, median IPOPT iterations and wall time per
start (the certificate timed apart), and the ratio of the median time to ``before``'s in the same
run. Output: ``DIR/mpcc_settings.json``, ``DIR/mpcc_settings.jsonl`` (one record per start, resumable:
a rerun with the same settings skips the starts already recorded) and ``DIR/mpcc_settings.png``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

from contactmp.records import RecordStore  # noqa: E402

#: name -> solve_program options (the default configuration is NLPOptions' defaults); "plain loop"
#: is not solve_program: it is the plain Scholtes loop of benchmarks/pyomo_scale.py (casadi.nlpsol,
#: sigma = 1, 0.1, ..., 1e-12, primal warm start, stop at the first NLP that IPOPT solves and
#: whose answer passes the checks)
CONFIGS: dict[str, dict[str, Any]] = {
    "plain loop": {},
    "before": {"polish": False, "homotopy_tol": 1e-8, "certify": False, "sigma0": 1.0, "infeasible_stop": 1},
    "default": {},
    "no polish": {"polish": False},
    "homotopy_tol 1e-8": {"homotopy_tol": 1e-8},
    "homotopy_tol 1e-4": {"homotopy_tol": 1e-4},
    "homotopy_tol 1e-3": {"homotopy_tol": 1e-3},  # the library's default (the hopper task sets 1e-8)
    "sigma0 1": {"sigma0": 1.0},
    "sigma0 0.1": {"sigma0": 0.1},
    "sigma0 0.001, factor 0.01": {"sigma0": 1e-3, "sigma_factor": 0.01},
    "sigma_factor 0.01": {"sigma_factor": 0.01},
    "polish_max_iter 50": {"polish_max_iter": 50},
    "polish_max_iter 1000": {"polish_max_iter": 1000},
    "dual warm start": {"warm_start_duals": True},
    "spral": {"ipopt": {"linear_solver": "spral"}},
    "mu monotone": {"ipopt": {"mu_strategy": "monotone"}},
    "mu oracle probing": {"ipopt": {"mu_oracle": "probing"}},
    "limited-memory Hessian": {"ipopt": {"hessian_approximation": "limited-memory"}},
    "no MUMPS scaling": {"ipopt": {"mumps_permuting_scaling": 0, "mumps_scaling": 0}},
    "MUMPS pivtol 1e-4": {"ipopt": {"mumps_pivtol": 1e-4}},
}
#: a start converged when verified solved and max |min(a_i, b_i)| <= COMP_TOL (the studies' rule)
COMP_TOL = 1e-6


def _task(name: str) -> Any:
    from contactmp.case_studies import _cito

    return _cito.TASKS[name].build("pyramid", True)


#: each task's variables' own initial values, as built (initial_guess starts from them)
_BUILT_X0: dict[int, np.ndarray] = {}


def _set_start(to: Any, start: int) -> None:
    """Put start ``start``'s guess into the variables' initial values, computed from the values the
    task was built with (not from the previous start's guess, which initial_guess would read)."""
    base = _BUILT_X0.setdefault(id(to), to.program.x0.copy())
    for h in to.program.variables:
        h.init = base[h.index].copy()
    x0 = to.initial_guess(None if start == 0 else np.random.default_rng([0, start]), 0.1)
    for h in to.program.variables:
        h.init = np.asarray(x0[h.index], dtype=float).copy()


def run_start(to: Any, config: str, start: int, time_limit: float,
              to_options: tuple[tuple[str, Any], ...] = ()) -> dict[str, Any]:
    """Solve start ``start`` of ``to`` with configuration ``config``; the record of the start."""
    from contactmp.result import Status
    from contactmp.solvers.nlp import solve_program

    _set_start(to, start)
    if config == "plain loop":
        from pyomo_scale import plain_scholtes

        out = plain_scholtes(to.program, 1e-8, time_limit)
        return {"status": out["status"], "objective": float(out["objective"]), "false_claim": False,
                "converged": bool(out["status"] == "solved" and out["check"]["comp_min"] <= COMP_TOL),
                "comp_min": float(out["check"]["comp_min"]), "iterations": int(out["iterations"]),
                "time_s": float(out["time_s"]), "wall_s": float(out["time_s"]), "certify_s": 0.0,
                "b_stationary": None, "found_by": "", "nlps": int(out["nlps"])}
    t0 = time.perf_counter()
    # the task's own options (the hopper: sigma0 = 1, homotopy_tol = 1e-8), then the configuration's
    options = {**dict(to_options), **CONFIGS[config]}
    res = solve_program(to.program, strategy="scholtes", time_limit=time_limit, **options)
    wall = time.perf_counter() - t0
    cert = res.extras.get("b_stationarity") or {}
    # the claim re-checked here, from the returned x alone (bounds, rows, complementarity to the
    # solver's tolerances): a "solved" that fails this counts as a false claim
    r = to.program.residuals(res.x)
    checks_pass = r["bound"] <= 1e-6 and r["constraint"] <= 1e-6 and r["comp_min"] <= 1e-8
    return {"status": res.status.value, "objective": float(res.objective),
            "false_claim": bool(res.status is Status.SOLVED and not checks_pass),
            "converged": bool(res.status is Status.SOLVED and res.residuals["comp_min"] <= COMP_TOL),
            "comp_min": float(res.residuals["comp_min"]), "iterations": int(res.iterations),
            "time_s": float(res.time_s), "wall_s": wall, "certify_s": float(res.extras.get("certify_time_s", 0.0)),
            "b_stationary": cert.get("b_stationary"), "found_by": res.extras.get("found_by", ""),
            "nlps": len(res.extras.get("homotopy", []))}


def summarize(records: list[dict[str, Any]], tasks: list[str], configs: list[str]) -> list[dict[str, Any]]:
    """One row per (task, configuration)."""
    rows = []
    for task in tasks:
        ref = [r["time_s"] for r in records if r["task"] == task and r["config"] == "plain loop"]
        ref_median = float(np.median(ref)) if ref else None
        for cfg in configs:
            rs = [r for r in records if r["task"] == task and r["config"] == cfg]
            if not rs:
                continue
            conv = [r for r in rs if r["converged"]]
            med = float(np.median([r["time_s"] for r in rs]))
            rows.append({
                "task": task, "config": cfg, "starts": len(rs), "converged": len(conv),
                "best_cost": min((r["objective"] for r in conv), default=None),
                "median_cost": float(np.median([r["objective"] for r in conv])) if conv else None,
                "b_stationary": sum(r["b_stationary"] is True for r in rs),
                "false_claims": sum(r["false_claim"] for r in rs),
                "median_iterations": float(np.median([r["iterations"] for r in rs])),
                "median_time_s": med, "max_time_s": max(r["time_s"] for r in rs),
                "median_certify_s": float(np.median([r["certify_s"] for r in rs])),
                "ratio_to_plain": med / ref_median if ref_median else None,
            })
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Median time per start of each configuration, one panel per task (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted({r["task"] for r in rows})
    fig, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 5.5), dpi=110, squeeze=False)
    for ax, task in zip(axes[0], tasks):
        rs = [r for r in rows if r["task"] == task]
        y = np.arange(len(rs))
        ax.barh(y, [r["median_time_s"] for r in rs],
                color=["C3" if r["config"] in ("before", "plain loop") else "C0" for r in rs])
        ax.set_yticks(y, [f"{r['config']} ({r['converged']}/{r['starts']})" for r in rs], fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("median time per start (s), certificate apart")
        ax.set_title(f"{task} (quick, pyramid, scholtes): converged starts in brackets", fontsize=9)
        ax.invert_yaxis()
        ax.grid(alpha=0.3, axis="x")
    common.save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    from rich.progress import Progress

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts-box", type=int, default=20)
    ap.add_argument("--starts-hopper", type=int, default=10)
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated names of CONFIGS")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per start")
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--out", type=Path, default=common.REPO / "benchmarks" / "out")
    args = ap.parse_args(argv)
    configs = [c for c in args.configs.split(",") if c]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown configuration(s) {unknown}; known: {list(CONFIGS)}")
    for ref in ("before", "plain loop"):
        if ref not in configs:
            configs.insert(0, ref)
    t_start = time.perf_counter()
    starts = {"box": args.starts_box, "hopper": args.starts_hopper}
    tasks = [t for t in starts if starts[t] > 0]
    harness = "starts from the built x0"  # (records of the harness that chained guesses do not count)
    fingerprint = hashlib.sha256(json.dumps([CONFIGS, args.time_limit, harness], sort_keys=True, default=str)
                                 .encode()).hexdigest()[:12]
    store = RecordStore(args.out / "mpcc_settings.jsonl", fresh=args.fresh,
                        accept=lambda r: r.get("fingerprint") == fingerprint)
    items = [(t, c, s) for t in tasks for s in range(starts[t]) for c in configs]
    with Progress() as progress:
        bar = progress.add_task("mpcc settings", total=len(items))
        built: dict[str, Any] = {}
        for task, cfg, s in items:
            key = f"{task}/{cfg}/start{s:02d}"
            if key not in store:
                if task not in built:
                    built[task] = _task(task)
                from contactmp.case_studies._cito import TASKS

                rec = run_start(built[task], cfg, s, args.time_limit, TASKS[task].options)
                store.append({"key": key, "fingerprint": fingerprint, "task": task, "config": cfg, "start": s, **rec})
            progress.advance(bar)
    records = [r for r in store.records() if r["task"] in tasks and r["config"] in configs]
    rows = summarize(records, tasks, configs)

    def g(v: Any, f: str = "{:.4g}") -> str:
        return "-" if v is None else f.format(v)

    common.print_table(
        "MPCC homotopy settings (scholtes, pyramid, quick tasks; one worker)",
        ["task", "configuration", "converged", "best cost", "median cost", "B-stationary", "false claims",
         "median its", "median time", "max time", "certificate", "ratio to plain loop"],
        [[r["task"], r["config"], f"{r['converged']}/{r['starts']}", g(r["best_cost"], "{:.3f}"),
          g(r["median_cost"], "{:.3f}"), f"{r['b_stationary']}/{r['starts']}", r["false_claims"],
          g(r["median_iterations"], "{:.0f}"),
          common.fmt_time(r["median_time_s"]), common.fmt_time(r["max_time_s"]),
          common.fmt_time(r["median_certify_s"]), g(r["ratio_to_plain"], "{:.3f}")] for r in rows],
        caption="converged: verified solved and max|min(a, b)| <= 1e-6; false claims: solved but the returned x "
                "fails bounds/rows <= 1e-6 or max|min(a, b)| <= 1e-8 rechecked here; times exclude the B-stationarity "
                "certificate (its median is the 'certificate' column); ratio: median time / the plain loop's median")
    png = args.out / "mpcc_settings.png"
    plot(rows, png)
    return common.finish(args.out / "mpcc_settings.json",
                         {**common.run_header("mpcc_settings", sys.argv, 0), "configs": CONFIGS, "rows": rows},
                         t_start, args.out / "mpcc_settings.jsonl", png)


if __name__ == "__main__":
    raise SystemExit(main())
