"""Large fc3d problems with a singular Delassus matrix: ours against Siconos' PROX, NSN_AC, ADMM, NSGS.

    python benchmarks/fc3d_large.py [--out DIR] [--time-cap S] [--siconos-cap S] [--repeats N]
        [--only NAME,...] [--siconos NAME,...] [--stress] [--no-siconos]

Problems (issue 18, item 2):

* the two largest Siconos test problems (``tests/data/fc3d``), ``Capsules-i101-404`` (225
  contacts) and ``Capsules-i125-1213`` (286), read with :func:`contactmp.io.load_fc3d`;
* generated scenes of 400+ contacts from our own models (:mod:`contactmp.models.piles`): a cubic
  pile of spheres in a box, brick walls and stacked columns of boxes, with high friction
  (``mu = 0.8 .. 1.0``) and seeded random twists. Their W is singular (``3 nc`` rows, rank at most
  ``6 n_bodies``); the table gives ``3 nc - rank W`` (numerical rank of the dense W, SVD).
* ``--stress`` adds a square pyramid of spheres (637 contacts, mu 0.9), which neither our solvers
  nor Siconos' solve (reported, not hidden).

Ours: ``prox-newton`` (:mod:`contactmp.solvers.fc3d.prox`, W passed as a scipy.sparse matrix for
the generated scenes) and ``auto`` (the default chain, dense W), both through
``solve_fc3d(..., tol=1e-8, time_limit=CAP)``. Siconos: the tool named by
``$CONTACTMP_SICONOS_TOOL`` (see ``benchmarks/_common.py``) in a subprocess on an ``.npz`` of the
problem (written to the output folder for the generated scenes), its time the median of its
repeats of the driver call alone; skipped with a message when Siconos or the tool is not there (``--siconos`` picks a subset of its solvers, e.g. ``PROX,NSGS`` for a shorter
run). Every answer, Siconos' too, is judged by OUR residual ``fc3d_residual`` at 1e-8. The last two
columns are the time ratios to PROX of ``prox-newton`` and of ``auto`` (issue 18 asks for
``auto / PROX <= 1`` on the Capsules), within the same run.

Output (``--out``, default ``benchmarks/out/fc3d_large/``): ``results.json`` (machine, versions,
options, per-problem records, the table).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

from contactmp.io import load_fc3d  # noqa: E402
from contactmp.models.piles import box_wall, sphere_pile  # noqa: E402
from contactmp.solvers.fc3d import fc3d_residual  # noqa: E402
from contactmp.solvers.registry import solve_fc3d  # noqa: E402

TOL = 1e-8
OURS = ("prox-newton", "auto")
SICONOS = ("PROX", "NSN_AC", "ADMM", "NSGS")
SHARED = ("Capsules-i101-404", "Capsules-i125-1213")
#: generated scenes: name -> builder (seeded; see contactmp.models.piles)
GENERATED: dict[str, Callable[[], Any]] = {
    "spheres-cubic-5": lambda: sphere_pile(5, 0.9, seed=0),
    "spheres-cubic-6": lambda: sphere_pile(6, 1.0, seed=0),
    "boxes-brick-8x8": lambda: box_wall(8, 8, 0.8, seed=0),
    "boxes-brick-12x10": lambda: box_wall(12, 10, 1.0, seed=0),
    "boxes-stack-10x10": lambda: box_wall(10, 10, 1.0, bond="stack", seed=0),
}
STRESS: dict[str, Callable[[], Any]] = {
    "spheres-pyramid-7": lambda: sphere_pile(7, 0.9, packing="pyramid", seed=0),
}
SICONOS_STARTUP_S = 30.0
REPEAT_BELOW_S = 1.0


@dataclass
class Problem:
    """One fc3d problem: dense W for the residual and Siconos, sparse W for prox-newton."""

    name: str
    W: np.ndarray
    Ws: sp.csr_matrix
    q: np.ndarray
    mu: np.ndarray
    path: Path
    generated: bool

    @property
    def nc(self) -> int:
        return int(self.mu.shape[0])


def load(names: list[str] | None, stress: bool, out: Path) -> list[Problem]:
    """The shared Capsules problems and the generated scenes (written as ``.npz`` for Siconos)."""
    probs = []
    folder = common.DATA / "fc3d"
    for name in SHARED:
        if names and name not in names:
            continue
        W, q, mu = load_fc3d(folder / f"{name}.npz")
        probs.append(Problem(name, W, sp.csr_matrix(W), q, mu, folder / f"{name}.npz", False))
    scenes = {**GENERATED, **(STRESS if stress else {})}
    for name, build in scenes.items():
        if names and name not in names:
            continue
        s = build()
        W = s.W.toarray()
        path = out / f"{name}.npz"
        np.savez(path, W=W, q=s.q, mu=s.mu, nc=s.nc)
        probs.append(Problem(name, W, s.W, s.q, s.mu, path, True))
    return probs


def run_ours(p: Problem, solver: str, repeats: int, cap: float) -> dict[str, Any]:
    """Time our ``solver`` (median of repeats below one second) and judge it with our residual."""
    W = p.Ws if solver == "prox-newton" else p.W
    t, times, res = common.median_time(lambda: solve_fc3d(W, p.q, p.mu, solver=solver, tol=TOL, time_limit=cap),
                                       repeats, REPEAT_BELOW_S)
    residual = fc3d_residual(p.W, p.q, p.mu, res.x)
    return {"solver": solver, "status": res.status.value, "residual": residual, "time_s": t, "times_s": times,
            "solved": bool(residual <= TOL and t <= cap), "iterations": res.iterations,
            "phases": res.extras.get("phases"), "by": res.solver, "message": res.message}


def run_siconos(p: Problem, name: str, repeats: int, cap: float) -> dict[str, Any]:
    """Siconos' ``name`` in a subprocess (killed after the cap), judged by our residual."""
    rec = common.siconos_solve(p.path, kind="fc3d", solver=name, tol=TOL, max_iter=100000, repeats=repeats,
                               timeout_s=SICONOS_STARTUP_S + cap)
    if "error" in rec:
        return {"solver": f"S:{name}", "status": "timeout" if rec["error"].startswith("timeout") else "error",
                "residual": None, "time_s": None, "solved": False, "message": rec["error"]}
    x = np.asarray(rec["x"], dtype=float)
    residual = fc3d_residual(p.W, p.q, p.mu, x) if x.shape == p.q.shape else math.inf
    return {"solver": f"S:{name}", "status": f"info={rec['info']}", "residual": residual, "time_s": rec["time_s"],
            "solved": bool(residual <= TOL and rec["time_s"] <= cap), "iterations": rec["iterations"],
            "message": ""}


def cell(rec: dict[str, Any] | None) -> str:
    """Time when solved, else the residual reached (or timeout/error)."""
    if rec is None:
        return "-"
    if rec["residual"] is None:
        return rec["status"]
    t = common.fmt_time(rec["time_s"])
    return t if rec["solved"] else f"x {common.fmt_residual(rec['residual'])} ({t})"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table, write results.json."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=common.REPO / "benchmarks" / "out" / "fc3d_large")
    ap.add_argument("--time-cap", type=float, default=60.0, help="seconds per solve of ours (default 60)")
    ap.add_argument("--siconos-cap", type=float, default=60.0, help="seconds per Siconos solve (default 60)")
    ap.add_argument("--repeats", type=int, default=5, help="timed repeats below one second (default 5)")
    ap.add_argument("--only", default=None, help="comma-separated problem names")
    ap.add_argument("--siconos", default=",".join(SICONOS),
                    help=f"comma-separated Siconos solvers (default {','.join(SICONOS)})")
    ap.add_argument("--stress", action="store_true", help="add the sphere pyramid (unsolved by all)")
    ap.add_argument("--no-siconos", action="store_true")
    args = ap.parse_args(argv)
    siconos = tuple(s.strip() for s in args.siconos.split(",") if s.strip())
    unknown = sorted(set(siconos) - set(SICONOS))
    if unknown:
        ap.error(f"unknown Siconos solver(s) {unknown}; known: {', '.join(SICONOS)}")
    t_start = time.perf_counter()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    with_siconos, why = (False, "--no-siconos") if args.no_siconos else common.siconos_available()
    if not with_siconos:
        print(f"Siconos is not available ({why}); running our solvers alone (no PROX ratios).")
    names = [s.strip() for s in args.only.split(",")] if args.only else None
    problems = load(names, args.stress, out)
    header = common.run_header("fc3d_large", [sys.executable] + sys.argv, seed=0)
    # warm-up: compile the kernels on a small problem
    small = load_fc3d(common.DATA / "fc3d" / "NESpheres_30_1.npz")
    for s in OURS:
        solve_fc3d(*small, solver=s, tol=TOL)
    records = []
    for k, p in enumerate(problems):
        print(f"[{k + 1}/{len(problems)}] {p.name} (nc = {p.nc})", file=sys.stderr, flush=True)
        rank = int(np.linalg.matrix_rank(p.W))
        solves = {s: run_ours(p, s, args.repeats, args.time_cap) for s in OURS}
        if with_siconos:
            for s in siconos:
                solves[f"S:{s}"] = run_siconos(p, s, args.repeats, args.siconos_cap)
        prox = solves.get("S:PROX")
        ratios = {k: (solves[k]["time_s"] / prox["time_s"] if prox and prox["solved"] and solves[k]["solved"] else None)
                  for k in OURS}
        records.append({"problem": p.name, "generated": p.generated, "nc": p.nc, "rows": 3 * p.nc,
                        "rank_W": rank, "rank_deficiency": 3 * p.nc - rank, "mu": float(np.max(p.mu)),
                        "nnz_W": int(p.Ws.nnz), "solves": solves, "ratio_prox_newton_vs_PROX": ratios["prox-newton"],
                        "ratio_auto_vs_PROX": ratios["auto"]})
    keys = list(OURS) + ([f"S:{s}" for s in siconos] if with_siconos else [])
    rows = []
    for r in records:
        rows.append([r["problem"], r["nc"], r["rank_deficiency"], f"{r['mu']:g}"]
                    + [cell(r["solves"][k]) for k in keys]
                    + [common.fmt_residual(r["solves"]["prox-newton"]["residual"])]
                    + ["-" if x is None else f"{x:.2f}"
                       for x in (r["ratio_prox_newton_vs_PROX"], r["ratio_auto_vs_PROX"])])
    common.print_table(f"Large fc3d: time when solved (our residual <= {TOL:g}); 'x RES (t)' = stopped at RES",
                       ["problem", "nc", "3nc-rank W", "mu"] + keys
                       + ["prox-newton residual", "prox-newton/PROX", "auto/PROX"],
                       rows, caption="ours: median of the whole solve_fc3d call; S:NAME = Siconos' NAME (driver only)")
    return common.finish(out / "results.json", {
        **header, "tol": TOL, "time_cap_s": args.time_cap, "siconos_cap_s": args.siconos_cap,
        "repeats": args.repeats, "siconos": list(siconos) if with_siconos else [],
        "siconos_skipped_because": None if with_siconos else why,
        "residual": "contactmp.solvers.fc3d.problem.fc3d_residual (normalized natural map, Siconos 4.4)",
        "problems": records,
    }, t_start)


if __name__ == "__main__":
    raise SystemExit(main())
