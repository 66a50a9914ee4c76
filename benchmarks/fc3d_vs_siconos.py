"""Our fc3d (Coulomb-cone) solvers against Siconos' NSGS, NSN_AC, NSN_FB, PROX and ADMM, in one run.

    python benchmarks/fc3d_vs_siconos.py [--out DIR] [--quick] [--pyramid] [--ipopt]
        [--time-cap S] [--repeats N] [--siconos-max-iter N] [--only NAME,...]

Problems: every ``.npz`` of ``tests/data/fc3d`` (19 problems from the Siconos test suite, 1 to 296
contacts), read with :func:`contactmp.io.load_fc3d`. ``--quick`` keeps those with at most
``QUICK_MAX_NC`` contacts (it drops the two Capsules problems).

Solvers. Ours, through ``contactmp.solvers.registry.solve_fc3d(W, q, mu, solver=NAME, tol=1e-8,
time_limit=CAP)``: ``auto`` (the default: newton, then nsgs, qvi, ipopt until one verifies, one
time budget), ``newton``, ``nsgs`` and ``qvi``; ``pyramid`` and ``ipopt``
only with ``--pyramid`` / ``--ipopt`` (they are slow). Siconos' through
``/usr/bin/python3 $CONTACTMP_SICONOS_TOOL PROBLEM.npz --kind fc3d --solver NAME --tol 1e-8
--max-iter N`` in a subprocess (killed after the time cap plus start-up time; the tool is not part
of this repository, see ``benchmarks/_common.py``); when Siconos or the tool is not there the
script says so and runs ours alone.

Judging. Every answer, Siconos' too, is judged by OUR residual ``fc3d_residual`` (the normalized
natural map of Siconos 4.4) at 1e-8; Siconos' ``info`` is recorded, not trusted. A solve counts as
solved when that residual is <= 1e-8 and its time is within the cap.

Timing. Ours: median over ``--repeats`` calls of the whole ``solve_fc3d`` call (validation and
residual check included), after a warm-up that compiles numba kernels; a solve that takes more than
one second is not repeated. Siconos: the tool's ``time_s`` (median of the same number of repeats of
the driver call alone, also not repeated past one second). Ratios are per problem, this run only.

Output (``--out``, default ``benchmarks/out/fc3d_vs_siconos/``): ``results.json`` (machine, versions,
options, per-problem records, summary, the profile's data), ``records.jsonl`` (one line per solve,
with r, keyed ``PROBLEM/SOLVER``, written as it finishes; every run starts the file over) and ``performance_profile.png`` (Dolan-More: for each solver, the fraction of problems it
solves within a factor tau of the fastest solver on that problem).
"""
from __future__ import annotations

import argparse
import importlib
import math
import statistics
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

from contactmp.io import load_fc3d  # noqa: E402
from contactmp.records import RecordStore  # noqa: E402
from contactmp.solvers.fc3d import fc3d_residual  # noqa: E402
from contactmp.solvers.registry import FC3D_SOLVERS, solve_fc3d  # noqa: E402

TOL = 1e-8
#: our default solver: the one whose time is compared with Siconos' best
DEFAULT_SOLVER = "auto"  # what `contactmp solve FILE` runs: quick nsgs (nc <= 64), newton, nsgs, qvi, ipopt
OUR_SOLVERS = ("auto", "newton", "nsgs", "qvi")
OUR_SLOW_SOLVERS = ("pyramid", "ipopt")
SICONOS_SOLVERS = ("NSGS", "NSN_AC", "NSN_FB", "PROX", "ADMM")
#: --quick keeps the problems with at most this many contacts
QUICK_MAX_NC = 60
#: seconds allowed for the Siconos subprocess to start (import numpy, siconos) on top of the cap
SICONOS_STARTUP_S = 60.0
#: a solve that took longer than this is not repeated
REPEAT_BELOW_S = 1.0


def siconos_key(name: str) -> str:
    """The record key of Siconos solver ``name`` (for example ``siconos-NSN_AC``)."""
    return f"siconos-{name}"


def label(key: str) -> str:
    """Short column label: ours by name, Siconos' as ``S:NAME``."""
    return f"S:{key[len('siconos-'):]}" if key.startswith("siconos-") else key


@dataclass
class Problem:
    """One fc3d(W, q, mu) of the benchmark, with the ``.npz`` file Siconos reads."""

    name: str
    W: np.ndarray
    q: np.ndarray
    mu: np.ndarray
    path: Path

    @property
    def nc(self) -> int:
        """The number of contacts."""
        return int(self.mu.shape[0])


def load_problems(quick: bool, only: list[str] | None) -> list[Problem]:
    """The shared fc3d problems (read with our reader), smallest first; ``quick`` keeps the small ones."""
    out = []
    for f in common.data_files("fc3d", "*.npz", "fc3d"):
        if only and f.stem not in only:
            continue
        W, q, mu = load_fc3d(f)
        out.append(Problem(f.stem, W, q, mu, f))
    if only:
        missing = sorted(set(only) - {p.name for p in out})
        if missing:
            raise SystemExit(f"--only names unknown problems: {', '.join(missing)}")
    if quick:
        out = [p for p in out if p.nc <= QUICK_MAX_NC]
    return sorted(out, key=lambda p: (p.nc, p.name))


# --------------------------------------------------------------------------------------------
# solving


def warm_up(problems: list[Problem], solvers: list[str], cap: float) -> dict[str, str]:
    """Compile numba kernels before timing: each solver's ``warmup()`` if it has one, then untimed
    solves of the smallest problem and of the smallest one with more than 60 rows (sparse paths).

    Returns the solvers that could not be loaded, with the reason (they are reported per problem).
    """
    broken: dict[str, str] = {}
    picks = [problems[0]]
    bigger = [p for p in problems if 3 * p.nc > 60]
    if bigger and bigger[0] is not problems[0]:
        picks.append(bigger[0])
    for name in solvers:
        try:
            if name in FC3D_SOLVERS:  # "auto" is the chain of registered solvers
                module = importlib.import_module(FC3D_SOLVERS[name])
                if hasattr(module, "warmup"):
                    module.warmup()
            for p in picks:
                solve_fc3d(p.W, p.q, p.mu, solver=name, tol=TOL, time_limit=cap)
        except Exception as exc:  # recorded for every problem by run_ours
            broken[name] = f"{type(exc).__name__}: {exc}"
    return broken


def run_ours(p: Problem, solver: str, repeats: int, cap: float) -> dict[str, Any]:
    """Time ``solve_fc3d(W, q, mu, solver=solver, tol=1e-8, time_limit=cap)`` and judge it with our residual."""
    base = {"solver": solver, "family": "ours"}
    try:
        t_med, times, res = common.median_time(
            lambda: solve_fc3d(p.W, p.q, p.mu, solver=solver, tol=TOL, time_limit=cap), repeats, REPEAT_BELOW_S
        )
    except Exception as exc:  # a benchmark records a crashing solver and goes on
        return {**base, "solved": False, "status": "error", "residual": None, "time_s": None,
                "times_s": [], "iterations": None, "message": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=3)}
    residual = fc3d_residual(p.W, p.q, p.mu, res.x)
    within = t_med <= cap
    return {
        **base, "solved": bool(residual <= TOL and within), "status": res.status.value,
        "residual": residual, "time_s": t_med, "times_s": times, "iterations": res.iterations,
        "over_cap": not within, "message": res.message, "r": np.asarray(res.x, dtype=float),
    }


def run_siconos(p: Problem, name: str, repeats: int, cap: float, max_iter: int) -> dict[str, Any]:
    """Solve with Siconos' ``name`` in a subprocess (killed after the cap) and judge it with our residual."""
    base = {"solver": siconos_key(name), "family": "siconos"}
    timeout = SICONOS_STARTUP_S + cap + (max(1, repeats) - 1) * REPEAT_BELOW_S
    rec = common.siconos_solve(p.path, kind="fc3d", solver=name, tol=TOL, max_iter=max_iter,
                               repeats=repeats, timeout_s=timeout)
    if "error" in rec:
        status = "time_limit" if rec["error"].startswith("timeout") else "error"
        return {**base, "solved": False, "status": status, "residual": None, "time_s": None,
                "iterations": None, "message": rec["error"], "wall_s": rec.get("wall_s")}
    r = np.asarray(rec["x"], dtype=float)
    residual = fc3d_residual(p.W, p.q, p.mu, r) if r.shape == p.q.shape else math.inf
    within = rec["time_s"] <= cap
    return {
        **base, "solved": bool(residual <= TOL and within),
        "status": "info=0" if rec["info"] == 0 else f"info={rec['info']}",
        "residual": residual, "time_s": rec["time_s"], "iterations": rec["iterations"],
        "over_cap": not within, "siconos_info": rec["info"], "siconos_error": rec["siconos_error"],
        "wall_s": rec["wall_s"], "message": "", "r": r,
    }


# --------------------------------------------------------------------------------------------
# reporting


def best_siconos(solves: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The fastest Siconos solve that solved the problem, else ``None``."""
    done = [r for r in solves.values() if r["family"] == "siconos" and r["solved"]]
    return min(done, key=lambda r: r["time_s"]) if done else None


def lowest_residual(solves: dict[str, dict[str, Any]], family: str) -> dict[str, Any] | None:
    """The solve of ``family`` with the lowest finite residual, else ``None``."""
    recs = [r for r in solves.values() if r["family"] == family
            and r["residual"] is not None and math.isfinite(r["residual"])]
    return min(recs, key=lambda r: r["residual"]) if recs else None


def cell(rec: dict[str, Any] | None) -> str:
    """A table cell: the time when solved, else why not (residual reached, error, time cap)."""
    if rec is None:
        return "-"
    if rec["solved"]:
        return common.fmt_time(rec["time_s"])
    if rec["status"] == "error":
        return "error"
    if rec["status"] == "time_limit" and rec["residual"] is None:
        return "cap"
    if rec.get("over_cap"):
        return f"cap {common.fmt_residual(rec['residual'])}"
    return f"x {common.fmt_residual(rec['residual'])}"


def summarize(results: list[dict[str, Any]], keys: list[str]) -> dict[str, Any]:
    """Solved counts and median times per solver, and the median of our default's time ratios."""
    per_solver = {}
    for k in keys:
        recs = [r["solves"][k] for r in results if k in r["solves"]]
        t = [rec["time_s"] for rec in recs if rec["solved"]]
        fastest = sum(
            1 for r in results
            if r["solves"].get(k, {}).get("solved")
            and r["solves"][k]["time_s"] == min(x["time_s"] for x in r["solves"].values() if x["solved"])
        )
        per_solver[k] = {"solved": sum(1 for rec in recs if rec["solved"]), "problems": len(recs),
                         "median_time_s": statistics.median(t) if t else None, "fastest_on": fastest}
    ratios = [r["ratio_default_vs_best_siconos"] for r in results
              if r["ratio_default_vs_best_siconos"] is not None]
    return {
        "problems": len(results),
        "solvers": per_solver,
        "default_solver": DEFAULT_SOLVER,
        "median_ratio_default_vs_best_siconos": statistics.median(ratios) if ratios else None,
        "ratio_count": len(ratios),
        "ratio_range": [min(ratios), max(ratios)] if ratios else None,
        "unsolved_by_all": [r["problem"] for r in results if not any(s["solved"] for s in r["solves"].values())],
        "unsolved_by_default": [r["problem"] for r in results
                                if not (r["solves"].get(DEFAULT_SOLVER) or {}).get("solved", False)],
    }


def print_tables(results: list[dict[str, Any]], summary: dict[str, Any], keys: list[str],
                 ours: list[str], with_siconos: bool, cap: float) -> None:
    """Per-problem table, summary table, and the residuals (ours beside Siconos' best) wherever
    our default did not reach the tolerance."""
    cols = ["problem", "nc"] + [label(k) for k in keys]
    if with_siconos:
        cols += ["best Siconos", f"{DEFAULT_SOLVER}/best"]
    rows = []
    for r in results:
        row: list[Any] = [r["problem"], r["nc"]] + [cell(r["solves"].get(k)) for k in keys]
        if with_siconos:
            best = r["best_siconos"]
            ratio = r["ratio_default_vs_best_siconos"]
            row += [label(best) if best else "-", "-" if ratio is None else f"{ratio:.2f}"]
        rows.append(row)
    common.print_table(
        f"fc3d: time when solved (our residual <= {TOL:g}, within {cap:g} s); "
        "'x RES' = stopped at residual RES, 'cap' = time cap",
        cols, rows, caption="S:NAME = Siconos' NAME; ours: median of the whole solve_fc3d call",
    )
    srows = []
    for k in keys:
        s = summary["solvers"][k]
        srows.append([label(k), f"{s['solved']}/{s['problems']}", common.fmt_time(s["median_time_s"]),
                      s["fastest_on"]])
    common.print_table(f"Summary over {summary['problems']} problems", ["solver", "solved",
                       "median time (solved)", "fastest on"], srows)
    if with_siconos:
        m = summary["median_ratio_default_vs_best_siconos"]
        if m is None:
            print(f"No problem was solved both by {DEFAULT_SOLVER} and by a Siconos solver.")
        else:
            lo, hi = summary["ratio_range"]
            print(f"{DEFAULT_SOLVER} time / best Siconos time on the same problem: median {m:.2f} "
                  f"(range {lo:.2g} to {hi:.2g}) over the {summary['ratio_count']} problems both solved.")
    unsolved = [r for r in results if r["problem"] in summary["unsolved_by_default"]]
    if unsolved:
        ucols = ["problem", "nc"] + [f"{label(s)} residual" for s in ours]
        if with_siconos:
            ucols += ["best Siconos residual", "by"]
        urows = []
        for r in unsolved:
            row = [r["problem"], r["nc"]] + [common.fmt_residual(r["solves"][s]["residual"]) for s in ours]
            if with_siconos:
                low = lowest_residual(r["solves"], "siconos")
                row += [common.fmt_residual(low and low["residual"]), label(low["solver"]) if low else "-"]
            urows.append(row)
        common.print_table(f"Our default ({DEFAULT_SOLVER}) did not reach {TOL:g} within {cap:g} s: "
                           "the residuals reached, ours and Siconos' best, side by side", ucols, urows)
    else:
        print(f"Our default ({DEFAULT_SOLVER}) reached {TOL:g} on every problem.")


# --------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=common.REPO / "benchmarks" / "out" / "fc3d_vs_siconos",
                    help="output folder (default benchmarks/out/fc3d_vs_siconos)")
    ap.add_argument("--quick", action="store_true",
                    help=f"only the problems with <= {QUICK_MAX_NC} contacts")
    ap.add_argument("--pyramid", action="store_true", help="also run our pyramid solver (slow)")
    ap.add_argument("--ipopt", action="store_true", help="also run our IPOPT solver (slow)")
    ap.add_argument("--time-cap", type=float, default=60.0,
                    help="seconds per solve, ours (time_limit) and Siconos' (default 60)")
    ap.add_argument("--repeats", type=int, default=7,
                    help="timed repeats per solve, ours and Siconos' (default 7; the median is kept)")
    ap.add_argument("--siconos-max-iter", type=int, default=10000,
                    help="Siconos' iteration limit (its --max-iter; default 10000)")
    ap.add_argument("--only", default=None, help="comma-separated problem names (file stems) to run")
    ap.add_argument("--no-siconos", action="store_true", help="run our solvers alone")
    args = ap.parse_args(argv)
    if args.repeats < 1 or not args.time_cap > 0 or args.siconos_max_iter < 1:
        ap.error("--repeats and --siconos-max-iter must be >= 1, --time-cap > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the tables; write results.json, records.jsonl, performance_profile.png."""
    args = parse_args(argv)
    t_start = time.perf_counter()
    if args.no_siconos:
        with_siconos, why = False, "--no-siconos"
    else:
        with_siconos, why = common.siconos_available()
    if not with_siconos:
        print(f"Siconos is not available ({why}).\n"
              "Running our solvers alone; the Siconos columns, ratios and Siconos curves are skipped. "
              "Install it with: apt-get install -y python3-siconos python3-h5py python3-scipy")
    ours = list(OUR_SOLVERS) + [s for s in OUR_SLOW_SOLVERS if getattr(args, s)]
    keys = ours + ([siconos_key(s) for s in SICONOS_SOLVERS] if with_siconos else [])
    only = [s.strip() for s in args.only.split(",")] if args.only else None
    problems = load_problems(args.quick, only)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    header = common.run_header("fc3d_vs_siconos", [sys.executable] + sys.argv, seed=0)

    broken = warm_up(problems, ours, args.time_cap)
    for name, why_broken in broken.items():
        print(f"warning: our solver '{name}' failed in the warm-up ({why_broken}); "
              "it is recorded as an error where it fails", file=sys.stderr)
    results: list[dict[str, Any]] = []
    records = RecordStore(out / "records.jsonl", fresh=True)
    for k, p in enumerate(problems):
        print(f"[{k + 1}/{len(problems)}] {p.name} (nc = {p.nc})", file=sys.stderr, flush=True)
        solves: dict[str, dict[str, Any]] = {}
        for s in ours:
            solves[s] = run_ours(p, s, args.repeats, args.time_cap)
        if with_siconos:
            for s in SICONOS_SOLVERS:
                solves[siconos_key(s)] = run_siconos(p, s, args.repeats, args.time_cap, args.siconos_max_iter)
        records.append_many({"key": f"{p.name}/{s}", "problem": p.name, "nc": p.nc, "n": 3 * p.nc, "tol": TOL,
                             "time_cap_s": args.time_cap, **rec} for s, rec in solves.items())
        best = best_siconos(solves)
        default = solves.get(DEFAULT_SOLVER)
        ratio = (default["time_s"] / best["time_s"]
                 if best and default and default["solved"] and best["time_s"] > 0 else None)
        results.append({
            "problem": p.name, "nc": p.nc, "n": 3 * p.nc,
            "solves": {s: {key: v for key, v in rec.items() if key not in ("r", "times_s", "traceback")}
                       for s, rec in solves.items()},
            "best_siconos": best["solver"] if best else None,
            "ratio_default_vs_best_siconos": ratio,
        })

    summary = summarize(results, keys)
    print_tables(results, summary, keys, ours, with_siconos, args.time_cap)
    profile = common.performance_profile(
        {label(k): [r["solves"][k]["time_s"] if r["solves"][k]["solved"] else None for r in results]
         for k in keys}
    )
    styles = {label(k): {"linestyle": "-" if k in ours else "--"} for k in keys}
    png = common.plot_performance_profile(
        profile, out / "performance_profile.png",
        f"fc3d, {len(results)} Siconos test problems: solved at residual <= {TOL:g} within "
        f"{args.time_cap:g} s\n(solid: ours; dashed: Siconos)", styles=styles,
    )
    return common.finish(out / "results.json", {
        **header,
        "tol": TOL,
        "residual": "contactmp.solvers.fc3d.problem.fc3d_residual (normalized natural map, Siconos 4.4)",
        "quick": args.quick,
        "repeats": args.repeats,
        "time_cap_s": args.time_cap,
        "siconos_max_iter": args.siconos_max_iter,
        "solvers": {"ours": ours, "default": DEFAULT_SOLVER,
                    "siconos": list(SICONOS_SOLVERS) if with_siconos else [],
                    "siconos_skipped_because": None if with_siconos else why,
                    "failed_warm_up": broken},
        "timing": {"ours": "median over repeats of the whole solve_fc3d call after warm-up; "
                           f"not repeated past {REPEAT_BELOW_S:g} s",
                   "siconos": "siconos_solve.py time_s: median over repeats of the driver call only; "
                              f"not repeated past {REPEAT_BELOW_S:g} s"},
        "summary": summary,
        "performance_profile": profile,
        "problems": results,
    }, t_start, records.path, png)


if __name__ == "__main__":
    raise SystemExit(main())
