"""Which order of NOSBENCH strategies makes a good portfolio? Measured, not guessed: reads the
records of ``benchmarks/nosbench_remedies.py`` (every variant run alone on every problem) and
simulates a portfolio that tries the variants in order and stops at the first answer that meets the
paper's criterion.

    python benchmarks/nosbench_portfolio.py [RECORDS.jsonl] [--max-len K] [--caps S,...]
                                            [--order V1;V2;...] [--cap S] [--top N] [--out FILE]

Simulation: on each problem the attempts run one after the other; an attempt that solves the
problem within the cap ends the portfolio (its time counts), one that does not costs
``min(time, cap)`` (the last attempt of the order is never capped, up to the run's own time
limit). Attempt times are the variants' own wall times from the file (each attempt loads and builds
its NLP again, so this overstates a portfolio that shares the load). The reference is the ``plain``
variant of the same records (the plain Scholtes loop, same run). Prints the best orders by solved
count then total time, with the ratio of their total time to the plain loop's.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402


def load(path: Path) -> tuple[dict[str, dict[str, dict[str, Any]]], list[str], list[str]]:
    """records[problem][variant] (the last record of each key), problems, variants."""
    recs: dict[str, dict[str, dict[str, Any]]] = {}
    variants: list[str] = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if "variant" not in r or "problem" not in r:
            continue
        recs.setdefault(r["problem"], {})[r["variant"]] = r
        if r["variant"] not in variants:
            variants.append(r["variant"])
    problems = sorted(recs)
    return recs, problems, variants


#: the record's time used by the simulation: "time_s" (wall) or "cpu_s" (this process's CPU time)
TIME_KEY = "time_s"


def _t(r: dict[str, Any]) -> float:
    v = r.get(TIME_KEY)
    return float(r.get("time_s") or 0.0) if v is None else float(v)


def solved_within(r: dict[str, Any], cap: float) -> bool:
    """Whether the record solved its problem within ``cap`` seconds."""
    return bool(r.get("solved")) and _t(r) <= cap


def simulate(order: list[str], recs: dict[str, dict[str, dict[str, Any]]], problems: list[str],
             cap: float = math.inf) -> dict[str, Any]:
    """The portfolio ``order`` with per-attempt ``cap`` on ``problems``: solved count, total time,
    and per problem (solved, time, which variant)."""
    total, solved, per = 0.0, 0, {}
    for p in problems:
        t, by = 0.0, None
        for k, v in enumerate(order):
            r = recs[p].get(v)
            if r is None:
                continue
            c = math.inf if k == len(order) - 1 else cap
            if solved_within(r, c):
                t += _t(r)
                by = v
                break
            t += min(_t(r), c)
        total += t
        solved += by is not None
        per[p] = {"solved": by is not None, "time_s": t, "by": by}
    return {"order": order, "cap": cap, "solved": solved, "total_time_s": total, "per_problem": per}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="?", type=Path,
                    default=common.REPO / "benchmarks" / "out" / "nosbench_remedies.jsonl")
    ap.add_argument("--max-len", type=int, default=3, help="longest order searched (default 3)")
    ap.add_argument("--caps", default="inf,1,3,10", help="per-attempt caps searched, seconds (default inf,1,3,10)")
    ap.add_argument("--order", default=None, help="only simulate this semicolon-separated order")
    ap.add_argument("--cap", type=float, default=math.inf, help="the cap of --order")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--variants", default=None, help="semicolon-separated variants the search may use")
    ap.add_argument("--out", type=Path, default=None, help="write the best orders as JSON")
    ap.add_argument("--cpu", action="store_true", help="use the records' CPU times (cpu_s) instead of wall times")
    args = ap.parse_args(argv)
    global TIME_KEY
    TIME_KEY = "cpu_s" if args.cpu else "time_s"
    recs, problems, variants = load(args.records)
    # only problems every variant of the search has a record of (a run still going leaves gaps)
    pool = variants if args.variants is None else [v for v in args.variants.split(";") if v in variants]
    complete = [p for p in problems if all(v in recs[p] for v in pool)]
    if "plain" not in pool:
        raise SystemExit("the records need the 'plain' variant (the reference)")
    plain = simulate(["plain"], recs, complete)
    print(f"{len(complete)} problems with a record of every variant ({len(problems)} in the file); "
          f"plain loop: {plain['solved']} solved, total {plain['total_time_s']:.1f} s")
    rows = []
    for v in pool:
        s = simulate([v], recs, complete)
        rows.append([v, s["solved"], f"{s['total_time_s']:.2f}", f"{s['total_time_s'] / plain['total_time_s']:.3f}",
                     sum(1 for p in complete if recs[p][v].get("solved") and not recs[p]["plain"].get("solved")),
                     sum(1 for p in complete if not recs[p][v].get("solved") and recs[p]["plain"].get("solved"))])
    common.print_table("each variant alone", ["variant", "solved", "total s", "t/plain", "gains vs plain",
                                              "losses vs plain"], rows)
    if args.order:
        res = simulate(args.order.split(";"), recs, complete, args.cap)
        print(json.dumps({k: v for k, v in res.items() if k != "per_problem"}))
        for p, d in res["per_problem"].items():
            print(f"  {p:48s} {'yes' if d['solved'] else 'no':>4s} {d['time_s']:8.3f} s  {d['by']}")
        return 0
    caps = [float(c) for c in args.caps.split(",")]
    results = []
    for n in range(1, args.max_len + 1):
        for order in itertools.permutations(pool, n):
            for cap in (caps if n > 1 else [math.inf]):
                results.append(simulate(list(order), recs, complete, cap))
    results.sort(key=lambda r: (-r["solved"], r["total_time_s"]))
    rows = [[" > ".join(r["order"]), "-" if math.isinf(r["cap"]) else f"{r['cap']:g}", r["solved"],
             f"{r['total_time_s']:.2f}", f"{r['total_time_s'] / plain['total_time_s']:.3f}"]
            for r in results[:args.top]]
    common.print_table(f"best portfolios (orders up to {args.max_len}, caps {args.caps})",
                       ["order", "cap s", "solved", "total s", "t/plain"], rows)
    if args.out:
        common.write_json(args.out, {"plain": {k: v for k, v in plain.items() if k != "per_problem"},
                                     "problems": complete, "best": results[:args.top]})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
