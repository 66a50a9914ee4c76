"""Our Lemke and Newton LCP solvers against Siconos' LEMKE, in one run on the same machine.

    python benchmarks/lcp_vs_siconos.py [--out DIR] [--quick] [--repeats N] [--seed S] [--mu MU]

Problems: every ``.npz`` in ``tests/data/lcp`` (the Siconos test LCPs, n = 2..60) and Trinkle
pyramid LCPs of sizes 10, 50, 100 and 170 from
``contactmp.formulations.pyramid_lcp.random_pyramid_lcp(size, seed, mu)`` (10 seeds per size, 3 with
``--quick``; seeds ``S, S+1, ...``).

Every answer, Siconos' too, is judged by our own residual ``||min(z, M z + q)||_inf <= 1e-8``;
Siconos' ``info`` is recorded but not trusted.

Timing. Ours: median over ``--repeats`` calls of the whole
``contactmp.solvers.solve_lcp(M, q, solver=NAME)`` (validation and residual check included), after
a warm-up so that numba is compiled. Both sides time single calls, back to back on one problem, and
take the median of the same number of them (15 by default): the first call on a problem runs with
cold caches on either side (ours right after the Siconos subprocess has run), and a median over
more calls than a handful keeps that from deciding a ratio of microsecond solves. Siconos: the
``time_s`` of the Siconos tool named by ``$CONTACTMP_SICONOS_TOOL``
(see ``benchmarks/_common.py``; median of the same number of repeats; only the driver call is timed; it runs under
``/usr/bin/python3`` in a subprocess). Ratios ours/Siconos are per problem, from this run only.

Output (``--out``, default ``benchmarks/out/lcp_vs_siconos/``): ``results.json`` (machine,
versions, seeds, per-problem and per-class summaries) and ``records.jsonl`` (one line per solve,
keyed ``PROBLEM/SOLVER``, written as it finishes; every run starts the file over).
"""
from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

from contactmp.records import RecordStore  # noqa: E402
from contactmp.solvers import solve_lcp  # noqa: E402
from contactmp.solvers.lcp import lcp_residual  # noqa: E402
from contactmp.solvers.registry import LCP_SOLVERS  # noqa: E402

TOL = 1e-8
OUR_SOLVERS = ("lemke", "newton")
SICONOS_SOLVER = "LEMKE"
SICONOS_NAME = f"siconos-{SICONOS_SOLVER}"
#: short column labels of the tables
LABEL = {"lemke": "lemke", "newton": "newton", SICONOS_NAME: "Siconos"}
SIZES = (10, 50, 100, 170)
CLASSES = ("shared",) + tuple(str(s) for s in SIZES)


@dataclass
class Problem:
    """One LCP(q, M) of the benchmark, with the ``.npz`` file that Siconos reads."""

    name: str
    klass: str  # "shared" or the generated size
    M: np.ndarray
    q: np.ndarray
    path: Path
    seed: int | None = None

    @property
    def n(self) -> int:
        """The size n of LCP(q, M)."""
        return int(self.q.shape[0])


def shared_problems() -> list[Problem]:
    """Every LCP of ``tests/data/lcp`` (read with our own reader, which refuses pickles)."""
    from contactmp.io import load_lcp

    out = []
    for f in common.data_files("lcp", "*.npz", "LCP"):
        M, q = load_lcp(f)
        out.append(Problem(name=f.stem, klass="shared", M=M, q=q, path=f))
    return sorted(out, key=lambda p: (p.n, p.name))


def _as_lcp(obj: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(M, q)`` from what the generator returns: a pair or an object with ``M`` and ``q``."""
    if isinstance(obj, tuple):
        return np.asarray(obj[0], dtype=float), np.asarray(obj[1], dtype=float)
    return np.asarray(obj.M, dtype=float), np.asarray(obj.q, dtype=float)


def generated_problems(sizes: tuple[int, ...], seeds: list[int], mu: float, folder: Path) -> list[Problem]:
    """Trinkle pyramid LCPs of the given sizes and seeds, also saved as ``.npz`` for Siconos."""
    from contactmp.formulations.pyramid_lcp import random_pyramid_lcp

    out = []
    for size in sizes:
        for seed in seeds:
            M, q = _as_lcp(random_pyramid_lcp(size, seed, mu))
            name = f"pyramid_n{size}_s{seed}"
            path = folder / f"{name}.npz"
            np.savez(path, M=M, q=q)
            out.append(Problem(name=name, klass=str(size), M=M, q=q, path=path, seed=seed))
    return out


# --------------------------------------------------------------------------------------------
# solving


def warm_up(problems: list[Problem]) -> None:
    """Compile numba kernels before any timing: each solver's ``warmup()`` if it has one, then one
    untimed solve of a small problem with each solver."""
    small = min(problems, key=lambda p: p.n)
    for name in OUR_SOLVERS:
        try:
            module = importlib.import_module(LCP_SOLVERS[name])
        except ImportError:
            continue  # reported per problem by run_ours
        if hasattr(module, "warmup"):
            module.warmup()
        solve_lcp(small.M, small.q, solver=name)


def run_ours(problem: Problem, solver: str, repeats: int) -> dict[str, Any]:
    """Time ``solve_lcp(M, q, solver=solver)`` (median of ``repeats``) and judge its answer."""
    try:
        t_med, times, res = common.median_time(
            lambda: solve_lcp(problem.M, problem.q, solver=solver), repeats
        )
    except Exception as exc:  # a benchmark records a crashing solver and goes on
        return {"solver": solver, "solved": False, "status": "error", "residual": None,
                "time_s": None, "times_s": [], "iterations": None,
                "message": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=3)}
    residual = lcp_residual(problem.M, problem.q, res.x)
    return {
        "solver": solver, "solved": bool(residual <= TOL), "status": res.status.value,
        "residual": residual, "time_s": t_med, "times_s": times, "iterations": res.iterations,
        "message": res.message, "z": res.x,
    }


def run_siconos(problem: Problem, repeats: int, timeout_s: float) -> dict[str, Any]:
    """Solve with Siconos' LEMKE in a subprocess and judge its answer with our residual."""
    rec = common.siconos_solve(
        problem.path, kind="lcp", solver=SICONOS_SOLVER, tol=TOL, repeats=repeats, timeout_s=timeout_s
    )
    if "error" in rec:
        return {"solver": SICONOS_NAME, "solved": False, "status": "error", "residual": None,
                "time_s": None, "iterations": None, "message": rec["error"], "wall_s": rec.get("wall_s")}
    z = np.asarray(rec["x"], dtype=float)
    residual = lcp_residual(problem.M, problem.q, z) if z.shape == problem.q.shape else float("inf")
    return {
        "solver": SICONOS_NAME, "solved": bool(residual <= TOL),
        "status": "info=0" if rec["info"] == 0 else f"info={rec['info']}",
        "residual": residual, "time_s": rec["time_s"], "iterations": rec["iterations"],
        "siconos_info": rec["info"], "siconos_error": rec["siconos_error"], "wall_s": rec["wall_s"],
        "message": "", "z": z,
    }


# --------------------------------------------------------------------------------------------
# reporting


def _mark(rec: dict[str, Any] | None) -> str:
    if rec is None:
        return "-"
    if rec["status"] == "error":
        return "error"
    return "yes" if rec["solved"] else "no"


def _ratio(ours: dict[str, Any], ref: dict[str, Any] | None) -> float | None:
    """Time ratio ours / Siconos on a problem both solved (else ``None``)."""
    if ref is None or not (ours["solved"] and ref["solved"]):
        return None
    if not ref["time_s"] or ours["time_s"] is None:
        return None
    return ours["time_s"] / ref["time_s"]


def problem_rows(results: list[dict[str, Any]], klass: str, with_siconos: bool) -> list[list[Any]]:
    """Rows of the per-problem table of one size class."""
    rows = []
    for r in results:
        if r["class"] != klass:
            continue
        row: list[Any] = [r["problem"], r["n"]]
        solvers = list(OUR_SOLVERS) + ([SICONOS_NAME] if with_siconos else [])
        for s in solvers:
            rec = r["solves"].get(s)
            row += [_mark(rec), common.fmt_residual(rec and rec["residual"]),
                    common.fmt_time(rec and rec["time_s"])]
        if with_siconos:
            for s in OUR_SOLVERS:
                ratio = r["ratio_vs_siconos"].get(s)
                row.append("-" if ratio is None else f"{ratio:.2f}")
        rows.append(row)
    return rows


def summarize(results: list[dict[str, Any]], with_siconos: bool) -> list[dict[str, Any]]:
    """Per size class: problems, solved counts per solver, median times, median ratios ours/Siconos."""
    solvers = list(OUR_SOLVERS) + ([SICONOS_NAME] if with_siconos else [])
    out = []
    for klass in CLASSES:
        group = [r for r in results if r["class"] == klass]
        if not group:
            continue
        row: dict[str, Any] = {"class": klass, "problems": len(group),
                               "n_range": [min(r["n"] for r in group), max(r["n"] for r in group)]}
        for s in solvers:
            recs = [r["solves"][s] for r in group if s in r["solves"]]
            row[f"solved_{s}"] = sum(1 for rec in recs if rec["solved"])
            t = [rec["time_s"] for rec in recs if rec["solved"] and rec["time_s"] is not None]
            row[f"median_time_s_{s}"] = statistics.median(t) if t else None
        if with_siconos:
            for s in OUR_SOLVERS:
                ratios = [r["ratio_vs_siconos"][s] for r in group if r["ratio_vs_siconos"].get(s) is not None]
                row[f"median_ratio_{s}"] = statistics.median(ratios) if ratios else None
                row[f"ratio_count_{s}"] = len(ratios)
        out.append(row)
    return out


def print_summary(summary: list[dict[str, Any]], with_siconos: bool) -> None:
    """The summary table: one row per size class."""
    solvers = list(OUR_SOLVERS) + ([SICONOS_NAME] if with_siconos else [])
    cols = ["class", "n", "problems"] + [f"solved {LABEL[s]}" for s in solvers]
    cols += [f"median t {LABEL[s]}" for s in solvers]
    if with_siconos:
        cols += [f"{LABEL[s]}/Siconos (n)" for s in OUR_SOLVERS]
    rows = []
    for row in summary:
        lo, hi = row["n_range"]
        line: list[Any] = [row["class"], f"{lo}" if lo == hi else f"{lo}-{hi}", row["problems"]]
        line += [f"{row[f'solved_{s}']}/{row['problems']}" for s in solvers]
        line += [common.fmt_time(row[f"median_time_s_{s}"]) for s in solvers]
        if with_siconos:
            for s in OUR_SOLVERS:
                m = row[f"median_ratio_{s}"]
                line.append("-" if m is None else f"{m:.2f} ({row[f'ratio_count_{s}']})")
        rows.append(line)
    common.print_table(
        f"Summary: solved at ||min(z, Mz+q)||_inf <= {TOL:g}; median times over solved problems",
        cols, rows,
        caption=f"Siconos = Siconos' {SICONOS_SOLVER}; ratio = median over the (n) problems both "
        "solved of t_ours / t_Siconos, same run" if with_siconos else None,
    )


# --------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line; ``--quick`` sets 3 seeds and 5 repeats unless they are given."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=common.REPO / "benchmarks" / "out" / "lcp_vs_siconos",
                    help="output folder (default benchmarks/out/lcp_vs_siconos)")
    ap.add_argument("--quick", action="store_true", help="3 seeds per size instead of 10, 5 repeats")
    ap.add_argument("--repeats", type=int, default=None,
                    help="timed repeats per solve, ours and Siconos' (default 15; 5 with --quick)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per generated size (default 10; 3 with --quick)")
    ap.add_argument("--seed", type=int, default=0, help="first seed of the generated problems")
    ap.add_argument("--mu", type=float, default=0.5, help="friction coefficient of the generated problems")
    ap.add_argument("--siconos-timeout", type=float, default=300.0, help="seconds per Siconos subprocess")
    args = ap.parse_args(argv)
    if args.repeats is None:
        args.repeats = 5 if args.quick else 15
    if args.seeds is None:
        args.seeds = 3 if args.quick else 10
    if args.repeats < 1 or args.seeds < 0:
        ap.error("--repeats must be >= 1 and --seeds >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the tables; write ``results.json`` and ``records.jsonl``."""
    args = parse_args(argv)
    t_start = time.perf_counter()
    with_siconos, why = common.siconos_available()
    if not with_siconos:
        print(f"Siconos is not available ({why}).\n"
              "Running our solvers alone; the Siconos columns and the ratios are skipped. "
              "Install it with: apt-get install -y python3-siconos python3-h5py python3-scipy")
    seeds = list(range(args.seed, args.seed + args.seeds))
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    header = common.run_header("lcp_vs_siconos", [sys.executable] + sys.argv, args.seed)

    with tempfile.TemporaryDirectory(prefix="lcp_vs_siconos_") as tmp:
        problems = shared_problems() + generated_problems(SIZES, seeds, args.mu, Path(tmp))
        warm_up(problems)
        results: list[dict[str, Any]] = []
        records = RecordStore(out / "records.jsonl", fresh=True)
        for k, p in enumerate(problems):
            print(f"[{k + 1}/{len(problems)}] {p.name} (n = {p.n})", file=sys.stderr, flush=True)
            solves = {s: run_ours(p, s, args.repeats) for s in OUR_SOLVERS}
            if with_siconos:
                solves[SICONOS_NAME] = run_siconos(p, args.repeats, args.siconos_timeout)
            records.append_many({"key": f"{p.name}/{s}", "problem": p.name, "class": p.klass, "n": p.n,
                                 "seed": p.seed, "mu": None if p.seed is None else args.mu, "tol": TOL, **rec}
                                for s, rec in solves.items())
            ref = solves.get(SICONOS_NAME)
            results.append({
                "problem": p.name, "class": p.klass, "n": p.n, "seed": p.seed,
                "solves": {s: {key: v for key, v in rec.items()
                               if key not in ("z", "times_s", "traceback")}
                           for s, rec in solves.items()},
                "ratio_vs_siconos": {s: _ratio(solves[s], ref) for s in OUR_SOLVERS},
            })

    solver_cols = list(OUR_SOLVERS) + ([SICONOS_NAME] if with_siconos else [])
    cols = ["problem", "n"]
    for s in solver_cols:
        cols += [LABEL[s], "residual", "time"]
    if with_siconos:
        cols += [f"{s}/Sic" for s in OUR_SOLVERS]
    for klass in CLASSES:
        rows = problem_rows(results, klass, with_siconos)
        if rows:
            title = "Shared Siconos test LCPs" if klass == "shared" else f"Trinkle pyramid LCPs, n = {klass}"
            common.print_table(title, cols, rows)
    summary = summarize(results, with_siconos)
    print_summary(summary, with_siconos)

    return common.finish(out / "results.json", {
        **header,
        "tol": TOL,
        "quick": args.quick,
        "repeats": args.repeats,
        "generated": {"generator": "contactmp.formulations.pyramid_lcp.random_pyramid_lcp",
                      "sizes": list(SIZES), "seeds": seeds, "mu": args.mu},
        "solvers": {"ours": list(OUR_SOLVERS),
                    "reference": SICONOS_NAME if with_siconos else None,
                    "siconos_skipped_because": None if with_siconos else why},
        "timing": {"ours": "median over repeats of the whole solve_lcp call, after warm-up",
                   "siconos": "siconos_solve.py time_s: median over repeats of the driver call only"},
        "summary": summary,
        "problems": results,
    }, t_start, records.path)


if __name__ == "__main__":
    raise SystemExit(main())
