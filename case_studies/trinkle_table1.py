"""Case study ``trinkle-table1``: Table 1 of Trinkle, Pang, Sudarsky and Lo (1995), redone.

328 data sets built as section 6 describes (35 random multi-body problems, one friction
coefficient for all contacts swept over 0.1 ... 1.0) are cast as the pyramid LCP (37)-(39) and
solved by Lemke's method (covering vector of ones, then up to three restarts with random covering
vectors, 100 pivots per start as in the paper), by the feasible interior-point method of Appendix B
(300 iterations, complementarity gap 1e-6, then a verified purification), and by our semismooth
Newton method. A data set counts as solved by a solver only when ``||min(z, Mz+q)||_inf <= 1e-8``
AND the physical conditions (4)-(6), (9), (12), (16)-(18) checked on the mapped-back forces and
accelerations hold. The table puts the paper's numbers beside ours.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from contactmp.case_studies._figures import pyplot, save
from contactmp.case_studies._study import StudyRun, markdown_table

DESCRIPTION = "Trinkle et al. 1995 Table 1: Lemke, FIP and Newton on 328 random pyramid LCPs"

#: The paper's Table 1: size -> (# data sets, Lemke frac, Lemke ave # starts, Lemke ave # iter,
#: FIP frac, FIP ave # iter). None where the paper prints "-" ; ">100"/">300" kept as strings.
PAPER_TABLE1: dict[int, tuple[Any, ...]] = {
    2: (20, 1.00, 1.0, 2.0, 0.50, 8.4),
    10: (60, 0.92, 1.3, 8.9, 0.35, 10.4),
    16: (10, 1.00, 1.4, 20.0, 1.00, 17.2),
    30: (26, 0.62, 1.7, 44.1, 0.42, 19.6),
    50: (20, 0.35, 2.0, 107.4, 0.30, 61.1),
    90: (23, 0.00, None, None, 0.35, 30.4),
    120: (10, 0.10, 1.0, ">100", 0.70, ">300"),
    150: (6, 0.00, None, None, 0.50, 46.3),
    170: (10, 0.00, None, None, 0.00, None),
}
#: The paper's overall counts (section 6).
PAPER_OVERALL = {"data_sets": 328, "fip": 195, "lemke_first_start": 136, "either": 228}

#: The paper's limits and tolerances. Lemke's iteration count (and its cap) is taken as in the usual
#: MATLAB lemke.m the authors used: the pivot that brings the artificial z0 into the basis comes
#: before the counted loop, so each start counts (our pivots - 1). FIP's count is the iteration at
#: which the paper's criterion w^T z <= 1e-6 first held (our purification may take a few more).
LEMKE_MAX_PIVOTS = 100
LEMKE_RESTARTS = 3
FIP_MAX_ITER = 300
FIP_GAP_TOL = 1e-6
RESIDUAL_TOL = 1e-8
PHYSICS_TOL = 1e-6


def _key(ds: Any, seed: int) -> str:
    """The record key of a data set: the seed, the problem and its friction coefficient."""
    return f"s{seed}-p{ds.problem_id:02d}-mu{ds.mu:.1f}"


def _solve_one(ds: Any, seed: int) -> dict[str, Any]:
    """Solve one data set with the three solvers; return its JSON record."""
    from contactmp.formulations.pyramid_lcp import PyramidLCP
    from contactmp.solvers import solve_lcp

    form = PyramidLCP(ds.model)
    M, q = form.M, form.q
    rec: dict[str, Any] = {"key": _key(ds, seed), "seed": seed, "problem_id": ds.problem_id, "mu": ds.mu,
                           "size": int(form.size), "n_bodies": ds.n_bodies, "n_S": ds.n_S, "n_R": ds.n_R}
    runs = {
        "lemke": dict(max_iter=LEMKE_MAX_PIVOTS + 1, restarts=LEMKE_RESTARTS, seed=seed, tol=RESIDUAL_TOL),
        "fip": dict(max_iter=FIP_MAX_ITER, gap_tol=FIP_GAP_TOL, tol=RESIDUAL_TOL),
        "newton": dict(tol=RESIDUAL_TOL),
        # beyond the paper: the same Lemke without the 100-pivot cap (its default cap, max(1000, 50 n))
        "lemke_uncapped": dict(restarts=LEMKE_RESTARTS, seed=seed, tol=RESIDUAL_TOL),
    }
    def entry_of(res: Any, physics: float) -> dict[str, Any]:
        solved = bool(res.success and physics <= PHYSICS_TOL * max(1.0, float(np.abs(q).max())))
        return {"status": res.status.value, "solved": solved, "residual": res.residual,
                "physics_residual": physics, "iterations": res.iterations, "time_s": res.time_s}

    for name, opts in runs.items():
        res = solve_lcp(M, q, solver=name.removesuffix("_uncapped"), **opts)
        physics = float("inf")
        if np.isfinite(res.x).all():
            checks = form.check(form.solution(res.x))
            physics = float(max(checks.values())) if checks else 0.0
        entry = entry_of(res, physics)
        solved = entry["solved"]
        if name.startswith("lemke"):
            statuses = res.extras.get("start_statuses", [])
            entry["starts"] = int(res.extras.get("starts", 1))
            entry["first_start_solved"] = bool(solved and statuses[:1] == ["solved"])
            entry["paper_iterations"] = int(res.iterations) - entry["starts"]  # z0's entry not counted
        if name == "fip":
            entry["nfp"] = bool(res.extras.get("nfp", False))
            entry["paper_criterion_met"] = bool(res.extras.get("paper_criterion_met", False))
            k_paper = res.extras.get("k_paper")
            entry["paper_iterations"] = int(k_paper) if k_paper is not None else None
        rec[name] = entry
    # beyond the paper: the body-contact graph splits a scene into islands (independent LCPs);
    # Lemke with the paper's limits on each island, judged on the whole LCP and its physics
    res, sol = form.solve("lemke", islands=True, **runs["lemke"])
    physics = float(max(form.check(sol).values())) if sol is not None else float("inf")
    rec["island_sizes"] = [p["size"] for p in res.extras["islands"]]
    rec["lemke_islands"] = entry_of(res, physics)
    return rec


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _table(records: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    by_size: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_size[r["size"]].append(r)
    headers = [
        "size", "# data sets", "paper #",
        "Lemke frac", "paper", "ave # starts", "paper", "ave # iter", "paper",
        "FIP frac", "paper", "FIP ave # iter", "paper",
        "Newton frac", "Newton ave # iter", "Lemke no cap frac", "ave # iter",
    ]
    rows, data = [], []
    for size in sorted(by_size):
        rs = by_size[size]
        lem = [r for r in rs if r["lemke"]["solved"]]
        fip = [r for r in rs if r["fip"]["solved"]]
        nwt = [r for r in rs if r["newton"]["solved"]]
        unc = [r for r in rs if r["lemke_uncapped"]["solved"]]
        p = PAPER_TABLE1.get(size, (None,) * 6)
        row = {
            "size": size,
            "n": len(rs),
            "lemke_frac": len(lem) / len(rs),
            "lemke_starts": _mean([r["lemke"]["starts"] for r in lem]),
            "lemke_iter": _mean([r["lemke"]["paper_iterations"] for r in lem]),
            "fip_frac": len(fip) / len(rs),
            "fip_iter": _mean([r["fip"]["paper_iterations"] for r in fip if r["fip"]["paper_iterations"] is not None]),
            "newton_frac": len(nwt) / len(rs),
            "newton_iter": _mean([r["newton"]["iterations"] for r in nwt]),
            "lemke_uncapped_frac": len(unc) / len(rs),
            "lemke_uncapped_iter": _mean([r["lemke_uncapped"]["paper_iterations"] for r in unc]),
        }
        data.append(row)
        rows.append([
            size, len(rs), p[0],
            row["lemke_frac"], p[1], row["lemke_starts"], p[2], row["lemke_iter"], p[3],
            row["fip_frac"], p[4], row["fip_iter"], p[5],
            row["newton_frac"], row["newton_iter"], row["lemke_uncapped_frac"], row["lemke_uncapped_iter"],
        ])
    return markdown_table(headers, rows), data


def _overall(records: list[dict[str, Any]]) -> dict[str, int]:
    n = len(records)
    lem = sum(r["lemke"]["solved"] for r in records)
    lem1 = sum(r["lemke"]["first_start_solved"] for r in records)
    fip = sum(r["fip"]["solved"] for r in records)
    fip_paper = sum(r["fip"]["paper_criterion_met"] for r in records)
    nwt = sum(r["newton"]["solved"] for r in records)
    unc = sum(r["lemke_uncapped"]["solved"] for r in records)
    lf = sum(r["lemke"]["solved"] or r["fip"]["solved"] for r in records)
    anyone = sum(any(r[k]["solved"] for k in ("lemke", "fip", "newton", "lemke_uncapped")) for r in records)
    nfp = sum(r["fip"]["nfp"] for r in records)
    split = [r for r in records if len(r.get("island_sizes", [])) > 1]
    return {
        "split_into_islands": len(split),
        "lemke_islands": sum(r.get("lemke_islands", {}).get("solved", False) for r in records),
        "lemke_islands_on_split": sum(r["lemke_islands"]["solved"] for r in split),
        "lemke_whole_on_split": sum(r["lemke"]["solved"] for r in split),
        "data_sets": n, "lemke_first_start": lem1, "lemke_with_restarts": lem, "fip": fip,
        "fip_gap_1e-6_reached": fip_paper, "fip_nfp": nfp, "newton": nwt, "lemke_uncapped": unc,
        "lemke_or_fip": lf,
        "any": anyone,
    }


def _figure(data: list[dict[str, Any]], path: Path) -> None:
    plt = pyplot()
    sizes = [d["size"] for d in data]
    fig, ax = plt.subplots(figsize=(9.5, 4))
    ax.plot(sizes, [d["lemke_frac"] for d in data], "o-", label="Lemke (ours, <= 4 starts)")
    ax.plot(sizes, [d["fip_frac"] for d in data], "s-", label="FIP (ours)")
    ax.plot(sizes, [d["newton_frac"] for d in data], "^-", label="semismooth Newton (ours)")
    ax.plot(sizes, [d["lemke_uncapped_frac"] for d in data], "d:", label="Lemke, no pivot cap (ours)")
    ps = sorted(PAPER_TABLE1)
    ax.plot(ps, [PAPER_TABLE1[s][1] for s in ps], "o--", color="C0", alpha=0.5, mfc="none", label="Lemke (paper)")
    ax.plot(ps, [PAPER_TABLE1[s][4] for s in ps], "s--", color="C1", alpha=0.5, mfc="none", label="FIP (paper)")
    ax.set_xlabel("LCP size")
    ax.set_ylabel("fraction of data sets solved")
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title("Pyramid LCPs of random multi-rigid-body problems (Trinkle et al. Table 1)")
    save(fig, path)


def run(out: Path, quick: bool = False, seed: int = 0, workers: int | None = None,
        scheduler: str | None = None) -> dict[str, Any]:
    """Run the study into ``out``; resumes from ``out/records.jsonl`` when it exists.

    The data sets take milliseconds each, so they run in this process unless ``workers`` (a local
    Dask cluster) or ``scheduler`` (an existing one) is given."""
    import functools

    from contactmp.parallel import run_tasks

    from contactmp.models.random_problems import trinkle_dataset

    study = StudyRun("trinkle-table1", Path(out), quick, seed)
    datasets = trinkle_dataset(seed=seed)
    if quick:
        # one problem of each size class of the paper (all its mu values would be 10 per size):
        # the first three mu values of one problem per distinct size, capped at size 90.
        chosen, seen = [], defaultdict(int)
        for ds in datasets:
            if ds.size <= 90 and seen[ds.size] < 3:
                seen[ds.size] += 1
                chosen.append(ds)
        datasets = chosen
    keys = [_key(ds, seed) for ds in datasets]
    run_tasks(functools.partial(_solve_one, seed=seed), datasets, keys=keys, store_path=study.store,
              workers=workers or 0, scheduler=scheduler, description="trinkle-table1")
    # only this run's selection (a folder may also hold another seed's or mode's records)
    records = [study.store[key] for key in keys]
    table, data = _table(records)
    overall = _overall(records)
    paper_best = max(PAPER_OVERALL["fip"], PAPER_OVERALL["either"])
    lines = [
        "# Trinkle et al. (1995) Table 1, redone" + (" (quick)" if quick else ""),
        "",
        f"Solved = verified residual ||min(z, Mz+q)||_inf <= {RESIDUAL_TOL:g} and physics check <= {PHYSICS_TOL:g}.",
        f"Limits as in the paper: Lemke {LEMKE_MAX_PIVOTS} pivots per start, up to {LEMKE_RESTARTS} restarts; "
        f"FIP {FIP_MAX_ITER} iterations, gap {FIP_GAP_TOL:g}.",
        "Iterations: Lemke counts the pivots after z0 enters, summed over all starts of a solved data set "
        "(the paper's footnote 4); FIP counts iterations until w^T z <= 1e-6 (the paper's criterion).",
        "",
        table,
        "## Overall",
        "",
        markdown_table(
            ["", "ours", "paper"],
            [
                ["data sets", overall["data_sets"], PAPER_OVERALL["data_sets"]],
                ["Lemke, first start", overall["lemke_first_start"], PAPER_OVERALL["lemke_first_start"]],
                ["Lemke, with restarts", overall["lemke_with_restarts"], "~ FIP + 10%"],
                ["FIP", overall["fip"], PAPER_OVERALL["fip"]],
                ["FIP gap <= 1e-6 (paper's criterion)", overall["fip_gap_1e-6_reached"], PAPER_OVERALL["fip"]],
                ["FIP: no strictly feasible point (NFP)", overall["fip_nfp"], None],
                ["Newton", overall["newton"], None],
                ["Lemke without the 100-pivot cap", overall["lemke_uncapped"], None],
                ["Lemke or FIP", overall["lemke_or_fip"], PAPER_OVERALL["either"]],
                ["any of ours", overall["any"], PAPER_OVERALL["either"]],
            ],
        ),
        "",
        "## Islands (beyond the paper)",
        "",
        f"{overall['split_into_islands']} of {overall['data_sets']} data sets split into independent islands "
        "(connected components of the body-contact graph, through networkx). Lemke with the paper's limits "
        f"on each island solves {overall['lemke_islands']} data sets in all ({overall['lemke_islands_on_split']} "
        f"of the split ones, against {overall['lemke_whole_on_split']} when they are solved whole); every "
        "island answer is judged on the whole LCP and its physics.",
    ]
    study.write_table("\n".join(lines))
    _figure(data, study.out / "fraction_solved.png")
    headline = (
        f"solved {overall['any']}/{overall['data_sets']} data sets (paper: {PAPER_OVERALL['either']}/328 by either); "
        f"Lemke {overall['lemke_with_restarts']} (first start {overall['lemke_first_start']}), "
        f"FIP {overall['fip']}, Newton {overall['newton']}, Lemke without pivot cap {overall['lemke_uncapped']}"
    )
    summary = {"headline": headline, "records": len(records), "overall": overall, "paper_overall": PAPER_OVERALL,
               "by_size": data, "beats_paper_best": overall["any"] > paper_best}
    study.write_summary(summary)
    return summary
