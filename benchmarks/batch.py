"""Batched solves (issue 18, item 1): tiny LCP and fc3d problems solved as one compiled call per
batch, against the same problem solved alone and against Siconos per call; and time stepping of
independent contact islands (an ensemble of bodies on one floor), islands batched against the
whole problem.

    python benchmarks/batch.py [--out DIR] [--batch B] [--repeats N] [--only lcp,fc3d,islands]
        [--parallel auto|on|off]

``lcp``: every ``.npz`` of ``tests/data/lcp`` up to n = 40. ``alone`` -- median over ``5 x
--repeats`` calls of ``solve_lcp(M, q, "lemke")``; ``batched`` -- ``solve_lcp_batch`` on ``B``
copies (default 10,000), median over ``--repeats`` batch calls, divided by ``B`` (every problem
still validated, solved and checked; the answers read through the returned BatchResult's arrays
``x``, ``residual``, ``success``); ``+ Results`` -- the same call followed by building every
problem's Result (``list(batch)``); ``Siconos`` -- ``LEMKE`` through
the Siconos tool named by ``$CONTACTMP_SICONOS_TOOL`` (see ``benchmarks/_common.py``; median per
call of ``--repeats``). ``fc3d``: every problem of ``tests/data/fc3d`` with 1-5 contacts;
``solve_fc3d(W, q, mu)`` (the default solver) alone,
``solve_fc3d_batch`` on ``B`` copies, Siconos' ``NSGS``. Every batched answer is compared with the
one solved alone (max ``|dx|``) and checked by our own residual. The summary gives the ratio of the
medians over problems, batched / Siconos (the issue asks for at most 1.0).

``islands``: ``models.systems.ensemble`` of ``K`` cubes (``cube_3d``, 4 contacts each on the
floor, sliding at different speeds) stepped by ``TimeStepping`` for 20 steps of 10 ms with the
pyramid (LCP) formulation; per step, the time of the LCP solve (``Result.time_s``) with the
islands batched (the front door's default) and with ``islands=False`` (Lemke on the whole
problem), and the largest difference between the two trajectories.

Siconos is skipped with a message when it is absent. Output: a table per kind, ``results.json``
in ``--out`` (default ``benchmarks/out/batch/``).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

from contactmp.io import load_fc3d, load_lcp  # noqa: E402
from contactmp.solvers.fc3d import fc3d_residual  # noqa: E402
from contactmp.solvers.lcp import lcp_residual  # noqa: E402
from contactmp.solvers.registry import solve_fc3d, solve_fc3d_batch, solve_lcp, solve_lcp_batch  # noqa: E402

TOL = 1e-8
LCP_MAX_N = 40
FC3D_MAX_NC = 5


def _batched_time(solve_batch: Callable[[], Any], batch: int, repeats: int) -> tuple[float, float, Any]:
    """Median over ``repeats`` calls of ``solve_batch()`` per problem, after one warm-up call: the
    call alone (its answer read through the BatchResult's arrays) and the call followed by building
    every problem's Result (``list(batch)``)."""
    res = solve_batch()
    arrays, results = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = solve_batch()
        arrays.append((time.perf_counter() - t0) / batch)
        t0 = time.perf_counter()
        list(solve_batch())
        results.append((time.perf_counter() - t0) / batch)
    return statistics.median(arrays), statistics.median(results), res


def _kind(kind: str, args: argparse.Namespace, with_siconos: bool) -> dict[str, Any]:
    """One kind (``lcp`` or ``fc3d``): the table, and its records and summary."""
    rows, recs = [], []
    parallel = {"auto": None, "on": True, "off": False}[args.parallel]
    files = common.data_files(kind, "*.npz", kind.upper())
    for f in files:
        if kind == "lcp":
            M, q = load_lcp(f)
            if q.shape[0] > LCP_MAX_N:
                continue
            size = q.shape[0]
            alone_fn = lambda: solve_lcp(M, q, "lemke")  # noqa: E731
            stacked = (np.repeat(M[None], args.batch, 0), np.repeat(q[None], args.batch, 0))
            batch_fn = lambda: solve_lcp_batch(*stacked, parallel=parallel)  # noqa: E731
            residual = lambda x: lcp_residual(M, q, x)  # noqa: E731
            siconos_solver = "LEMKE"
        else:
            W, q, mu = load_fc3d(f)
            if mu.shape[0] > FC3D_MAX_NC:
                continue
            size = mu.shape[0]
            alone_fn = lambda: solve_fc3d(W, q, mu)  # noqa: E731
            stacked3 = (np.repeat(W[None], args.batch, 0), np.repeat(q[None], args.batch, 0),
                        np.repeat(mu[None], args.batch, 0))
            batch_fn = lambda: solve_fc3d_batch(*stacked3, parallel=parallel)  # noqa: E731
            residual = lambda x: fc3d_residual(W, q, mu, x)  # noqa: E731
            siconos_solver = "NSGS"
        alone = alone_fn()  # warm-up and the reference answer
        t_alone, _, _ = common.median_time(alone_fn, args.repeats * 5)
        t_batch, t_results, res = _batched_time(batch_fn, args.batch, args.repeats)
        dx = float(np.max(np.abs(res.x - alone.x[None])))
        solved = sum(r.success and residual(r.x) <= TOL for r in res[:100])
        t_sic = None
        if with_siconos:
            rec = common.siconos_solve(f, kind=kind, solver=siconos_solver, tol=TOL, repeats=args.repeats,
                                       timeout_s=60)
            t_sic = rec.get("time_s") if "error" not in rec else None
        recs.append({"problem": f.stem, "size": int(size), "alone_s": t_alone, "batched_s": t_batch,
                     "batched_with_results_s": t_results, "siconos_s": t_sic, "max_dx": dx, "solved_first_100": solved, "status": alone.status.value})
        rows.append([f.stem, size, common.fmt_time(t_alone), common.fmt_time(t_batch), common.fmt_time(t_results),
                     common.fmt_time(t_sic),
                     f"{t_batch / t_alone:.3f}", "-" if t_sic is None else f"{t_batch / t_sic:.2f}", f"{dx:.0e}",
                     f"{solved}/100"])
    rows.sort(key=lambda r: (r[1], r[0]))
    what = f"n <= {LCP_MAX_N}" if kind == "lcp" else f"1-{FC3D_MAX_NC} contacts"
    ours = "Lemke" if kind == "lcp" else "the default solver"
    common.print_table(f"{kind}: {ours} on the shared problems ({what}), batches of {args.batch}",
                       ["problem", "n" if kind == "lcp" else "nc", "alone",
                        "batched / problem", "+ Results", f"Siconos {'LEMKE' if kind == 'lcp' else 'NSGS'}", "batched / alone",
                        "batched / Siconos", "max |dx|", "verified"], rows)
    med = {k: statistics.median([r[k] for r in recs]) for k in ("alone_s", "batched_s", "batched_with_results_s")}
    sic = [r["siconos_s"] for r in recs if r["siconos_s"] is not None]
    summary: dict[str, Any] = {"problems": len(recs), "median_alone_s": med["alone_s"],
                               "median_batched_s": med["batched_s"],
                               "median_batched_with_results_s": med["batched_with_results_s"],
                               "median_siconos_s": statistics.median(sic) if sic else None,
                               "max_dx": max(r["max_dx"] for r in recs)}
    if sic:
        summary["ratio_of_medians_batched_over_siconos"] = med["batched_s"] / summary["median_siconos_s"]
        summary["ratio_of_medians_with_results_over_siconos"] = (med["batched_with_results_s"]
                                                                 / summary["median_siconos_s"])
    print(kind, summary)
    return {"summary": summary, "problems": recs}


def _islands(args: argparse.Namespace) -> dict[str, Any]:
    """Time stepping of ensembles of K cubes: islands batched against Lemke on the whole step."""
    import contactmp.solvers.front as front
    from contactmp.models.systems import cube_3d, ensemble
    from contactmp.transcriptions.time_stepping import TimeStepping

    rows, recs = [], []
    for K in (4, 16, 64):
        S = ensemble([cube_3d(mu=0.3 + 0.4 * k / K) for k in range(K)], name=f"cubes{K}")
        v0 = np.zeros(S.n_v)
        v0[0::6] = np.linspace(0.5, 2.0, K)
        runs = {}
        for islands in (True, False):
            front.solve.__kwdefaults__["islands"] = islands  # the front door's default, for this run only
            try:
                ts = TimeStepping(S, 0.01, "pyramid")
                tr = ts.simulate(S.q_nominal, v0, n_steps=20)
            finally:
                front.solve.__kwdefaults__["islands"] = True
            runs[islands] = tr
        per = {k: float(np.median(tr.time_s)) for k, tr in runs.items()}
        dq = float(np.max(np.abs(runs[True].q - runs[False].q)))
        recs.append({"cubes": K, "contacts": int(S.n_c), "step_solve_islands_s": per[True],
                     "step_solve_whole_s": per[False], "max_dq": dq,
                     "failed": [runs[True].n_failed, runs[False].n_failed]})
        rows.append([K, S.n_c, common.fmt_time(per[True]), common.fmt_time(per[False]),
                     f"{per[True] / per[False]:.3f}", f"{dq:.0e}", f"{runs[True].n_failed}/{runs[False].n_failed}"])
    common.print_table("islands: ensembles of cubes on a floor, pyramid time stepping (20 steps of 10 ms), "
                       "median LCP solve per step",
                       ["cubes", "contacts", "islands (batched)", "whole", "islands / whole", "max |dq|",
                        "failed steps"], rows)
    return {"ensembles": recs}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the tables; write ``results.json``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out" / "batch")
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--only", default="lcp,fc3d,islands")
    ap.add_argument("--parallel", choices=("auto", "on", "off"), default="auto")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    with_siconos, why = common.siconos_available()
    if not with_siconos:
        print(f"Siconos is not available ({why}); its columns and ratios are skipped.")
    out: dict[str, Any] = {**common.run_header("batch", [sys.executable] + sys.argv, 0), "batch": args.batch,
                           "repeats": args.repeats, "parallel": args.parallel}
    kinds = args.only.split(",")
    for kind in ("lcp", "fc3d"):
        if kind in kinds:
            out[kind] = _kind(kind, args, with_siconos)
    if "islands" in kinds:
        out["islands"] = _islands(args)
    return common.finish(args.out / "results.json", out, t_start)


if __name__ == "__main__":
    raise SystemExit(main())
