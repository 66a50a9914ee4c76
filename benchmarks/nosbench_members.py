"""The library's MPCC strategies with per-member options on the NOSBENCH problems, one member alone per
record, to choose the members, options and order of the ``"portfolio"`` strategy by measurement.

    python benchmarks/nosbench_members.py --members "SPEC;SPEC;..." [--only SUBSTR,...] [--time-limit S]
                                          [--out FILE] [--fresh] [--data DEST]

The problems: NOSBENCH's ``nosbench`` and ``nosbench-more`` subsets, from ``--data DEST`` or
``$CONTACTMP_NOSBENCH=DEST`` (the folder that contains them; not in the repository: write it with
``python tools/fetch_nosbench.py DEST``).

A member SPEC is ``strategy[,key=value,...]``: ``key`` an :class:`~contactmp.solvers.nlp.solve.NLPOptions`
field (``homotopy_tol=1e-8``, ``polish=False``, ``infeasible_stop=0``, ``sigma0=0.1``...) or else an
IPOPT option (``mu_strategy=monotone``, ``mu_oracle=loqo``), for example
``scholtes_linf,mu_strategy=monotone,homotopy_tol=1e-8``. Each record is one call of
``contactmp.solvers.nlp.nosbench.solve_nosbench`` (the NOSBENCH protocol, certificate included) with
the member's strategy and options, uncapped up to ``--time-limit``, judged again by the paper's
criterion, with its wall and CPU time from the file. The variant ``plain`` is the plain Scholtes loop
of ``benchmarks/mpcc_vs_nosnoc.py`` (the reference). The records (``problem``, ``variant``,
``solved``, ``time_s``, ``cpu_s``) are what ``benchmarks/nosbench_portfolio.py --cpu RECORDS``
simulates portfolios from (a member that does not solve within its cap costs the cap).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

from contactmp.records import RecordStore  # noqa: E402


def _value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_member(spec: str) -> tuple[str, dict[str, Any]]:
    """``strategy,key=value,...`` -> (strategy, NLPOptions overrides with an ``ipopt`` dict)."""
    from contactmp.solvers.nlp import NLPOptions

    strategy, *items = [x.strip() for x in spec.split(",") if x.strip()]
    known = {f.name for f in fields(NLPOptions)}
    opts: dict[str, Any] = {}
    ipopt: dict[str, Any] = {}
    for item in items:
        key, _, val = item.partition("=")
        (opts if key in known else ipopt)[key] = _value(val)
    if ipopt:
        opts["ipopt"] = ipopt
    return strategy, opts


def run_member(path: Path, spec: str, time_limit: float) -> dict[str, Any]:
    """One problem, one member (or ``plain``), judged by the paper's criterion."""
    from mpcc_vs_nosnoc import reference_scholtes

    from contactmp.nosbench import load_nosbench
    from contactmp.solvers.nlp import solve_nosbench

    if spec == "plain":
        rec = reference_scholtes(path, time_limit)
        return {"problem": path.stem, "variant": spec, **{k: v for k, v in rec.items() if k != "homotopy"}}
    strategy, opts = parse_member(spec)
    t0, c0 = time.perf_counter(), time.process_time()
    pb = load_nosbench(path)
    out = solve_nosbench(pb, strategy=strategy, time_limit=time_limit, **opts)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    judged = common.paper_judge(pb, np.asarray(out["w"], dtype=float))
    b = out.get("b_stationarity") or {}
    return {"problem": path.stem, "variant": spec, **judged, "status": out["status"], "time_s": wall,
            "cpu_s": cpu, "nlps": out["nlps"], "iterations": out["iterations"],
            "b_stationary": b.get("b_stationary"), "lpec_s": b.get("time_s"),
            "certify_time_s": out.get("certify_time_s"), "found_by": out.get("found_by"),
            "member": out.get("member"), "portfolio": out.get("portfolio"), "message": out["message"][:300]}


def main(argv: list[str] | None = None) -> int:
    from mpcc_vs_nosnoc import nosbench_files, warm_up_b

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--members", required=True, help="semicolon-separated member specs (and/or plain)")
    ap.add_argument("--only", default=None, help="problems whose name contains one of these substrings")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=common.REPO / "benchmarks" / "out" / "nosbench_members.jsonl")
    ap.add_argument("--fresh", action="store_true")
    common.add_nosbench_argument(ap)
    args = ap.parse_args(argv)
    common.use_nosbench_argument(args)
    store = RecordStore(args.out, fresh=args.fresh)
    specs = [s.strip() for s in args.members.split(";") if s.strip()]
    for s in specs:
        if s != "plain":
            parse_member(s)
    files = nosbench_files(False, args.only)
    warm_up_b(files[0], ["scholtes"])
    totals = {s: [0, 0.0] for s in specs}
    for f in files:
        for s in specs:
            key = f"{f.stem}/{s}"
            if key not in store:
                store.append({"key": key, **run_member(f, s, args.time_limit)})
            r = store[key]
            totals[s][0] += bool(r.get("solved"))
            totals[s][1] += float(r.get("cpu_s") or 0.0)
            print(f"{f.stem[:46]:46s} {s[:60]:60s} {'Y' if r.get('solved') else 'n'} cpu {r.get('cpu_s', 0):7.3f}",
                  flush=True)
    for s, (n, t) in totals.items():
        print(f"TOTAL {s}: {n}/{len(files)} solved, {t:.2f} s CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
