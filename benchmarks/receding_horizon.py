"""Receding-horizon re-solves of contact-implicit trajectory optimization: a warm-started re-solve
against a cold solve of the same shifted problem (issue 15, part 4).

    python benchmarks/receding_horizon.py [--tasks box,hopper] [--shifts 4] [--warm default]
                                          [--no-cold-warm-options] [--out DIR]
    python benchmarks/receding_horizon.py --system solo12-planar|solo12 [--shifts 1] [--time-limit 600]

Per task (the cito studies' quick tasks, pyramid, Scholtes, each task's own NLPOptions; or, with
``--system``, the cito-quadruped study's Solo12 walk: 0.3 m forward in 1 s, N = 40, h = 0.025,
standing to standing, minimum effort, ``--formulation`` cone by default, Scholtes):

1. the first plan: a cold solve from ``ContactImplicitTO.initial_guess`` (it also builds the IPOPT
   objects of the cold options; timed apart as "first solve");
2. a warm-up: the first plan solved again warm from itself (builds the IPOPT objects of the warm
   options once, as an MPC loop would before it starts; not in the table);
3. ``--shifts`` times: :meth:`RecedingHorizon.advance` (the initial state moved to the plan's
   ``(q_1, v_1)``, the guess the plan shifted by one knot, the warm options), then, on the same
   shifted problem, the **reference**: a cold solve from ``initial_guess`` with the task's options,
   and (unless ``--no-cold-warm-options``) a cold solve with the warm options too, which tells the
   warm start's share from the options' share.

The program is built once: every solve, warm or cold, uses the same program and cached IPOPT
objects, so the times are solve times (``Result.time_s``: the B-stationarity certificate excluded,
as in the other benchmarks; the wall time with it is in the JSON). The table gives per shift the
status, objective, IPOPT iterations and time of each solve, and the ratio cold time / warm time
(the issue's target: >= 5); the last row per task holds the medians over the shifts.
"solved" is the library's verified status; ``ok`` also asks max |min(a_i, b_i)| <= 1e-6 and that the
re-solved trajectory starts at the shifted state to ``START_TOL``. Output: ``DIR/receding_horizon.json``
(``DIR/receding_horizon_<system>.json`` with ``--system``; ``DIR`` defaults to ``benchmarks/out``).
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

from contactmp.transcriptions.receding_horizon import WARM_START  # noqa: E402

#: named warm-start option sets (``--warm``): "default" is the library's choice for the strategy
#: (``receding_horizon.warm_changes``: WARM_START, or rho0 = rho_max for elastic l1); "primal only"
#: keeps the cold options (the shifted guess is the only change)
WARM_CONFIGS: dict[str, dict[str, Any] | None] = {
    "default": None,
    "primal only": {},
    "keep bound push": {"sigma0": 1e-6, "homotopy_tol": 1e-3, "ipopt": {"mu_strategy": "monotone", "mu_init": 1e-6}},
    "keep homotopy_tol": {"sigma0": 1e-6, "ipopt": WARM_START["ipopt"]},
}
#: the studies' convergence rule (case_studies/_cito.py COMP_TOL)
COMP_TOL = 1e-6
#: how closely a re-solved trajectory must start at the imposed state (rows met to IPOPT's tolerance)
START_TOL = 1e-8
def _cito_task(name: str) -> tuple[Any, dict[str, Any]]:
    from contactmp.case_studies._cito import TASKS

    return TASKS[name].build("pyramid", True), dict(TASKS[name].options)


def _solo12_walk(planar: bool, formulation: str) -> tuple[Any, dict[str, Any]]:
    """The cito-quadruped study's walk (:func:`contactmp.case_studies._quadruped.solo_task`): Solo12
    (``planar``: the sagittal model) standing still, then standing still 0.3 m further on after
    N h = 40 x 0.025 s, |u| <= 2.7 N m, minimum effort, lifted pair sides, position gap, the support
    guess; the study's strategy (elastic l1) and NLPOptions (its time limits left to ``--time-limit``),
    with every solve, warm and cold, verified at the issue's complementarity tolerance
    (``comp_tol = COMP_TOL = 1e-6`` instead of the library's 1e-8): at 1e-8 the third warm re-solve
    of the walk ended at rho_max with max |min(a, b)| = 1.3e-8 (an elastic-l1 product ``a b`` of
    about 1e-16) and was not solved, where an MPC needs its plan to 1e-6."""
    from contactmp.case_studies._quadruped import solo_task
    from contactmp.case_studies.cito_quadruped import OPTIONS, STRATEGY

    # (without the study's refinement: an MPC's plan is needed to comp_tol, not replayed to rounding)
    options = {k: v for k, v in OPTIONS if k not in ("time_limit", "cpu_time_limit", "refine")}
    return solo_task("walk", planar, formulation), {"strategy": STRATEGY, **options, "comp_tol": COMP_TOL}


def _record(rh: Any, traj: Any, label: str) -> dict[str, Any]:
    rec = rh.records[-1].as_dict()
    q0, v0 = rh.initial_state
    start_error = float(max(np.abs(traj.q[0] - q0).max(), np.abs(traj.v[0] - v0).max()))
    ok = bool(rec["status"] == "solved" and rec["comp_violation"] <= COMP_TOL and start_error <= START_TOL)
    res = traj.result
    # where the iterations went: per NLP of the homotopy (sigma or rho, IPOPT status, iterations) and its polish
    nlps = [[h.get("sigma", h.get("rho")), h["status"], h["iterations"], h.get("polish", {}).get("status"),
             h.get("polish", {}).get("iterations")] for h in res.extras.get("homotopy", [])]
    return {"solve": label, **rec, "start_error": start_error, "ok": ok, "found_by": res.extras.get("found_by"),
            "certify_s": float(res.extras.get("certify_time_s", 0.0)), "nlps": nlps}


def run_task(name: str, to: Any, options: dict[str, Any], warm: dict[str, Any], shifts: int,
             cold_warm_options: bool, time_limit: float) -> dict[str, Any]:
    """The protocol of the module docstring on one built task."""
    from contactmp.transcriptions.receding_horizon import RecedingHorizon

    options = dict(options)
    strategy = options.pop("strategy", "scholtes")
    rh = RecedingHorizon(to, strategy=strategy, warm=warm, **{**options, "time_limit": time_limit})
    out: dict[str, Any] = {"task": name, "n_x": to.program.n_x, "n_comp": to.program.n_comp, "N": to.N, "h": to.h,
                           "strategy": strategy, "warm_options": {k: v for k, v in vars(rh.warm_options).items()
                                                                  if v != getattr(rh.options, k)}}
    first = rh.solve()
    out["first"] = _record(rh, first, "first (cold, builds)")
    print(f"{name}: first plan {first.status.value}, cost {first.objective:.4g}, "
          f"{out['first']['iterations']} its, {out['first']['wall_s']:.2f} s", file=sys.stderr, flush=True)
    if first.status.value != "solved":
        out["stopped"] = "the first plan is not solved"
        return out
    wu = rh.solve(first.result.x, warm=True, keep=False)
    out["warm_up"] = _record(rh, wu, "warm-up")
    print(f"{name}: warm-up (warm from the plan itself) {wu.status.value}, cost {wu.objective:.4g}, "
          f"{out['warm_up']['iterations']} its, {out['warm_up']['time_s']:.2f} s", file=sys.stderr, flush=True)
    rows = []
    for _ in range(shifts):
        w = rh.advance()
        row = {"shift": rh.shift, "warm": _record(rh, w, "warm")}
        c = rh.solve(keep=False)
        row["cold"] = _record(rh, c, "cold")
        if cold_warm_options:
            c2 = rh.solve(None, warm=True, keep=False)  # from initial_guess, with the warm options
            row["cold_warm_options"] = _record(rh, c2, "cold, warm options")
        row["ratio"] = row["cold"]["time_s"] / max(row["warm"]["time_s"], 1e-12)
        rows.append(row)
        print(f"{name} shift {rh.shift}: warm {row['warm']['status']} {row['warm']['iterations']} its "
              f"{row['warm']['time_s']:.3f} s; cold {row['cold']['status']} {row['cold']['iterations']} its "
              f"{row['cold']['time_s']:.3f} s; ratio {row['ratio']:.2f}", file=sys.stderr, flush=True)
        if w.status.value != "solved":
            out["stopped"] = f"the warm re-solve at shift {rh.shift} is not solved"
            break
    out["shifts"] = rows
    if rows:
        med = {k: float(np.median([r[k] for r in rows])) for k in ("ratio",)}
        for kind in ("warm", "cold", "cold_warm_options"):
            if kind in rows[0]:
                med[f"{kind}_time_s"] = float(np.median([r[kind]["time_s"] for r in rows]))
                med[f"{kind}_iterations"] = float(np.median([r[kind]["iterations"] for r in rows]))
                med[f"{kind}_ok"] = sum(r[kind]["ok"] for r in rows)
        med["ratio_of_medians"] = med["cold_time_s"] / max(med["warm_time_s"], 1e-12)
        out["median"] = med
    return out


def table(results: list[dict[str, Any]], cold_warm_options: bool) -> None:
    """Print one row per shift and a median row per task."""
    def cell(r: dict[str, Any]) -> list[str]:
        return [("ok" if r["ok"] else r["status"]), f"{r['objective']:.4g}", str(r["iterations"]),
                common.fmt_time(r["time_s"])]

    cols = ["task", "shift", "cold (reference)", "cost", "its", "time", "warm", "cost", "its", "time",
            "ratio cold/warm"]
    if cold_warm_options:
        cols += ["cold, warm opts", "its", "time", "ratio cold/this"]
    rows = []
    for res in results:
        for r in res.get("shifts", []):
            row = [res["task"], r["shift"], *cell(r["cold"]), *cell(r["warm"]), f"{r['ratio']:.2f}"]
            if cold_warm_options:
                c = r["cold_warm_options"]
                row += [("ok" if c["ok"] else c["status"]), str(c["iterations"]), common.fmt_time(c["time_s"]),
                        f"{r['cold']['time_s'] / max(c['time_s'], 1e-12):.2f}"]
            rows.append(row)
        m = res.get("median")
        if m:
            row = [res["task"], "median", f"{m['cold_ok']}/{len(res['shifts'])} ok", "", f"{m['cold_iterations']:.0f}",
                   common.fmt_time(m["cold_time_s"]), f"{m['warm_ok']}/{len(res['shifts'])} ok", "",
                   f"{m['warm_iterations']:.0f}", common.fmt_time(m["warm_time_s"]), f"{m['ratio']:.2f}"]
            if cold_warm_options:
                row += [f"{m['cold_warm_options_ok']}/{len(res['shifts'])} ok", f"{m['cold_warm_options_iterations']:.0f}",
                        common.fmt_time(m["cold_warm_options_time_s"]),
                        f"{m['cold_time_s'] / max(m['cold_warm_options_time_s'], 1e-12):.2f}"]
            rows.append(row)
    common.print_table(
        "Receding-horizon re-solve: warm start from the shifted plan against a cold solve (reference)", cols, rows,
        caption="ok: verified solved, max|min(a, b)| <= 1e-6, starts at the shifted state to 1e-8; times: "
                "Result.time_s (certificate apart); ratio: cold time / warm time of the same shifted problem "
                "(median row: median of the per-shift ratios); target >= 5")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="box,hopper", help="comma-separated cito tasks (box, hopper)")
    ap.add_argument("--system", choices=["solo12-planar", "solo12"], default=None,
                    help="run the Solo12 walk instead of the cito tasks")
    ap.add_argument("--formulation", default="cone", help="the Solo12 walk's formulation (the study's: cone)")
    ap.add_argument("--shifts", type=int, default=None, help="re-solves per task (default 4; 1 with --system)")
    ap.add_argument("--warm", default="default", choices=list(WARM_CONFIGS))
    ap.add_argument("--no-cold-warm-options", action="store_true",
                    help="skip the cold solve with the warm options")
    ap.add_argument("--time-limit", type=float, default=600.0, help="wall seconds per solve")
    ap.add_argument("--out", type=Path, default=common.REPO / "benchmarks" / "out")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    shifts = args.shifts if args.shifts is not None else (1 if args.system else 4)
    cwo = not args.no_cold_warm_options
    results = []
    if args.system:
        b0 = time.perf_counter()
        to, options = _solo12_walk(args.system == "solo12-planar", args.formulation)
        build_s = time.perf_counter() - b0
        names = [(f"{args.system} walk", to, options, build_s)]
    else:
        names = []
        for name in [t for t in args.tasks.split(",") if t]:
            b0 = time.perf_counter()
            to, options = _cito_task(name)
            names.append((name, to, options, time.perf_counter() - b0))
    for name, to, options, build_s in names:
        res = run_task(name, to, options, WARM_CONFIGS[args.warm], shifts, cwo, args.time_limit)
        res["build_s"] = build_s
        res["options"] = options
        results.append(res)
    table(results, cwo)
    stem = "receding_horizon" + (f"_{args.system}" if args.system else "")
    return common.finish(args.out / f"{stem}.json",
                         {**common.run_header("receding_horizon", sys.argv, 0), "warm": args.warm,
                          "warm_config": WARM_CONFIGS[args.warm], "results": results}, t_start)


if __name__ == "__main__":
    raise SystemExit(main())
