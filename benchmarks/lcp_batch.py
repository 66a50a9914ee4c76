"""Batched Lemke (issue 18, item 1): the shared Siconos test LCPs, each repeated to a batch, solved
by one compiled call per batch, against the same problem solved alone and Siconos' LEMKE per call.

    python benchmarks/lcp_batch.py [--out DIR] [--batch B] [--repeats N]

Per problem (every ``.npz`` of ``shared/data/lcp`` up to n = 40): ``alone`` -- median over
``--repeats`` calls of ``solve_lcp(M, q, "lemke")``; ``batched`` -- ``solve_lcp_batch`` on ``B``
copies (default 10,000), median over ``--repeats`` batch calls, divided by ``B`` (every problem
still validated, checked and returned as its own Result); ``siconos`` -- ``shared/tools/siconos_solve.py``
per call (median of ``--repeats``; skipped with a message when Siconos is absent). Ratios are
batched / siconos and batched / alone from this run. Every batched answer is compared with the
one solved alone (max |dz|). Output: a table, ``results.json`` in ``--out`` (default
``benchmarks/out/lcp_batch/``).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

from contactmp.io import load_lcp  # noqa: E402
from contactmp.solvers.lcp import lcp_residual  # noqa: E402
from contactmp.solvers.registry import solve_lcp, solve_lcp_batch  # noqa: E402

TOL = 1e-8
MAX_N = 40


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table; write ``results.json``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out" / "lcp_batch")
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    with_siconos, why = common.siconos_available()
    if not with_siconos:
        print(f"Siconos is not available ({why}); its column and ratio are skipped.")
    header = common.run_header("lcp_batch", [sys.executable] + sys.argv, 0)
    rows, recs = [], []
    for f in common.shared_files("lcp", "*.npz", "LCP"):
        M, q = load_lcp(f)
        if q.shape[0] > MAX_N:
            continue
        alone = solve_lcp(M, q, "lemke")  # warm-up and the reference answer
        t_alone, _, _ = common.median_time(lambda: solve_lcp(M, q, "lemke"), args.repeats * 5)
        Ms, qs = np.repeat(M[None], args.batch, axis=0), np.repeat(q[None], args.batch, axis=0)
        res = solve_lcp_batch(Ms, qs)  # warm-up (compiles once per process)
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            res = solve_lcp_batch(Ms, qs)
            times.append((time.perf_counter() - t0) / args.batch)
        t_batch = statistics.median(times)
        dz = max(float(np.max(np.abs(r.x - alone.x))) for r in res)
        solved = sum(lcp_residual(M, q, r.x) <= TOL for r in res[:100])
        t_sic = None
        if with_siconos:
            rec = common.siconos_solve(f, kind="lcp", solver="LEMKE", tol=TOL, repeats=args.repeats, timeout_s=60)
            t_sic = rec.get("time_s") if "error" not in rec else None
        recs.append({"problem": f.stem, "n": int(q.shape[0]), "alone_s": t_alone, "batched_s": t_batch,
                     "siconos_s": t_sic, "max_dz": dz, "solved_first_100": solved, "status": alone.status.value})
        rows.append([f.stem, q.shape[0], common.fmt_time(t_alone), common.fmt_time(t_batch), common.fmt_time(t_sic),
                     f"{t_batch / t_alone:.3f}", "-" if t_sic is None else f"{t_batch / t_sic:.2f}", f"{dz:.0e}"])
    rows.sort(key=lambda r: (r[1], r[0]))
    common.print_table(f"Lemke on the shared LCPs (n <= {MAX_N}), batches of {args.batch}",
                       ["problem", "n", "alone", "batched / problem", "Siconos", "batched / alone",
                        "batched / Siconos", "max |dz|"], rows)
    med = {k: statistics.median([r[k] for r in recs]) for k in ("alone_s", "batched_s")}
    sic = [r["siconos_s"] for r in recs if r["siconos_s"] is not None]
    summary: dict[str, Any] = {"problems": len(recs), "median_alone_s": med["alone_s"], "median_batched_s": med["batched_s"],
                               "median_siconos_s": statistics.median(sic) if sic else None}
    if sic:
        summary["ratio_of_medians_batched_over_siconos"] = med["batched_s"] / summary["median_siconos_s"]
    print(summary)
    return common.finish(args.out / "results.json", {**header, "batch": args.batch, "repeats": args.repeats,
                                                     "summary": summary, "problems": recs}, t_start)


if __name__ == "__main__":
    raise SystemExit(main())
