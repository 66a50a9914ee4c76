"""Case study ``painleve-rod``: Painleve's sliding rod and Lotstedt's resting rod on a table --
how many solutions the instantaneous rigid-contact problem has over the friction coefficient ``mu``
and the rod angle ``theta``, found by multistart and proven by enumeration (cross-checked by MILP),
against the closed forms and the Proposition 3 bound.

Scenes (:mod:`contactmp.models.painleve`; uniform rod, ``m = 1 kg``, ``l = 1 m``, leaning toward
``+x``), one map per state (:data:`STATES`):

* ``sliding``: Painleve's problem, the lower end sliding toward ``-x`` (``v_t < 0``; the direction
  with the paradox), gravity only (``b_n = -g``): one solution below Painleve's
  ``mu_P(theta) = (1 + 3 cos^2) / (3 sin cos)``, none above (inconsistency).
* ``sliding-spin``: the same, spinning at ``omega = 6 rad/s``: ``b_n = omega^2 (l/2) sin - g`` is
  positive above 33 deg, where ``mu > mu_P`` gives two solutions (indeterminacy: lift-off or
  sliding on), and negative below (none).
* ``rolling``: Lotstedt's rod with its end at rest (the contact in ``R``), gravity only: always one
  solution (sticking above ``mu_stick = 3 sin cos / (1 + 3 sin^2)``, slipping toward ``-x`` below).
* ``rolling-pulled``: the resting rod pulled up and back, ``pull = (-1, 1.1) m g`` on its centre
  (``b_n = 0.1 g``, ``b_t = -g``): three solutions -- separation, sticking, slipping toward ``-x``
  (Lotstedt's case) -- above ``mu_3(theta)`` (inside Painleve's region, ``mu_3 > mu_P``), one below.

Per grid point (one record each, through :func:`contactmp.parallel.run_tasks`; resumable, Dask):

* **proven count**: complete enumeration of the pyramid LCP's complementary bases
  (:func:`~contactmp.solvers.lcp.certificates.enumerate_lcp_solutions`), solutions mapped to physical
  forces ``c = L z`` and deduplicated (:func:`~contactmp.case_studies.uniqueness_random.physical_solutions`:
  distinct ``z`` that are the same forces count once); region ``none`` / ``one`` / ``several``;
* **MILP cross-check**: the existence MILP must agree with the enumeration on solvability, and the
  second-solution MILP (from the MILP's own solution, ``delta`` apart) with whether the LCP has more
  than one ``z``; a second solution with other forces certifies several physical solutions; the
  second-solution MILP separated by motion (``motion=``, accelerations ``delta`` apart) with whether
  there is more than one motion;
* **motions**: the same solutions counted by the motion they produce, the accelerations
  ``G L z + g0`` (:func:`~contactmp.case_studies.uniqueness_random.lcp_motion_map`): proven by the
  enumeration (``motion_count``) and found by the multistart (its ``n_distinct_motions``, absolute
  tolerance ``tol_motion`` of :class:`~contactmp.reductions.MotionMap`). For the rod, one contact
  whose force determines the motion, the two counts agree; a statically indeterminate contact set
  would show more force solutions than motions;
* **multistart** (:func:`~contactmp.solvers.multistart.multistart`, seeded, mode-guessing and random
  Newton starts) clustered by LCP vector (impulse sets), by physical forces and by motion; it must
  never exceed the proven counts and every force it finds must be a proven one (asserted);
* **closed form** (:func:`~contactmp.models.painleve.closed_form_solutions`): count and forces;
* **Proposition 3** (:func:`~contactmp.formulations.pyramid_lcp.proposition3_mu_bound`): ``mu_bar``
  (sliding contacts; for the sliding rod it equals ``mu_P`` exactly) and ``mu_bar_unique``.

Outputs: ``records.jsonl``, ``solution_counts.png`` (maps with the closed-form boundaries and the
bound), ``table.md``, ``summary.json``.
"""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from contactmp.case_studies._figures import pyplot, save
from contactmp.case_studies._study import StudyRun, markdown_table
from contactmp.case_studies.uniqueness_random import (
    PHYS_RTOL, lcp_motion_map, multistart_forces, physical_solutions, second_motion_milp, unmatched,
)
from contactmp.case_studies.uniqueness_random import record_number as _num

DESCRIPTION = "Painleve/Lotstedt rod: solution counts over (theta, mu) by multistart, enumeration and MILP, vs Prop. 3"

#: the rod states of the maps: v_t [m/s], omega [rad/s], pull [m g] and a title
STATES: dict[str, dict[str, Any]] = {
    "sliding": {"v_t": -1.0, "omega": 0.0, "pull": (0.0, 0.0),
                "title": "Painleve: end sliding (v_t < 0), gravity"},
    "sliding-spin": {"v_t": -1.0, "omega": 6.0, "pull": (0.0, 0.0),
                     "title": "Painleve: end sliding, spin 6 rad/s"},
    "rolling": {"v_t": 0.0, "omega": 0.0, "pull": (0.0, 0.0),
                "title": "Lotstedt: end at rest, gravity"},
    "rolling-pulled": {"v_t": 0.0, "omega": 0.0, "pull": (-1.0, 1.1),
                       "title": "Lotstedt: end at rest, pulled (-1, 1.1) m g"},
}
#: grids: friction 0..3, angle 5..85 deg
MUS = tuple(round(0.1 * k, 10) for k in range(31))
THETAS_DEG = tuple(float(5 * k) for k in range(1, 18))
QUICK_MUS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
QUICK_THETAS_DEG = (5.0, 25.0, 45.0, 65.0, 85.0)
#: multistart per grid point: starts, structured (random mode guesses), Newton iterations per start
STARTS, STRUCTURED, MS_MAX_ITER = 32, 8, 100
MILP_DELTA = 1e-4
MILP_TIME_LIMIT = 20.0


def _state(name: str, theta_deg: float, mu: float) -> Any:
    from contactmp.models.painleve import RodState

    s = STATES[name]
    return RodState(math.radians(theta_deg), mu, v_t=s["v_t"], omega=s["omega"], pull=tuple(s["pull"]))


def _key(name: str, theta_deg: float, mu: float, seed: int) -> str:
    """The record key: the grid point and every setting its record depends on."""
    return f"s{seed}/{name}/theta{theta_deg:.3f}/mu{mu:.4f}/ms{STARTS}-{STRUCTURED}-{MS_MAX_ITER}-motion"


def _other_forces(form: Any, z1: np.ndarray, z2: np.ndarray) -> bool:
    """Do ``z1`` and ``z2`` give different contact forces ``L z``?"""
    c1, c2 = form.L @ z1, form.L @ z2
    return bool(np.abs(c2 - c1).max() > PHYS_RTOL * max(1.0, float(np.abs(c1).max())))


def grid_point(item: tuple[str, float, float, int]) -> dict[str, Any]:
    """The record of one grid point ``(state, theta_deg, mu, seed)`` (module-level: Dask ships it)."""
    import time

    from contactmp.formulations.pyramid_lcp import PyramidLCP, proposition3_mu_bound
    from contactmp.models.painleve import closed_form_solutions, painleve_mu, rod
    from contactmp.solvers.lcp import Verdict, enumerate_lcp_solutions, lcp_existence_milp, lcp_second_solution_milp
    from contactmp.solvers.multistart import multistart

    name, theta_deg, mu, seed = item
    st = _state(name, theta_deg, mu)
    form = PyramidLCP(rod(st))
    b_n, b_t = st.bias
    rec: dict[str, Any] = {"state": name, "theta_deg": theta_deg, "mu": mu, "size": form.size,
                           "b_n": b_n, "b_t": b_t, "mu_P": float(painleve_mu(st.theta))}
    # proven: complete enumeration, physical forces
    t0 = time.perf_counter()
    enum = enumerate_lcp_solutions(form.M, form.q)
    phys = physical_solutions(form, enum)
    n_proven = phys.n_forces
    rec["enumeration"] = {
        "z_verdict": enum.verdict, "n_z": "inf" if math.isinf(phys.n_z) else int(phys.n_z),
        "n_forces": "inf" if math.isinf(n_proven) else int(n_proven), "forces": phys.forces,
        "n_motions": "inf" if math.isinf(phys.n_motions) else int(phys.n_motions),
        "modes": [m[0] for m in phys.modes], "time_s": time.perf_counter() - t0, "flags": enum.flags,
    }
    rec["count"] = "inf" if math.isinf(n_proven) else int(n_proven)
    rec["motion_count"] = rec["enumeration"]["n_motions"]
    rec["region"] = "none" if n_proven == 0 else "one" if n_proven == 1 else "several"
    # closed form
    cf = closed_form_solutions(st)
    cf_forces = np.array([[s.c_n, s.c_t, 0.0] for s in cf]).reshape(len(cf), 3)
    rec["closed_form"] = {"count": len(cf), "modes": [s.mode for s in cf], "forces": cf_forces}
    rec["closed_form_agrees"] = bool(
        not phys.force_continuum and len(cf) == len(phys.forces)
        and unmatched(cf_forces, phys.forces) == 0 and unmatched(phys.forces, cf_forces) == 0)
    # MILP cross-check
    t0 = time.perf_counter()
    ex = lcp_existence_milp(form.M, form.q, time_limit=MILP_TIME_LIMIT)
    milp: dict[str, Any] = {"existence": ex.verdict, "second": None, "second_other_forces": None}
    z_solvable = len(enum.solutions) + len(enum.continua) > 0
    milp["existence_agrees"] = (None if ex.verdict is Verdict.UNDECIDED
                                else (ex.verdict is Verdict.SOLUTION) == z_solvable)
    milp["second_agrees"] = None
    if ex.verdict is Verdict.SOLUTION:
        z1 = ex.z
        sec = lcp_second_solution_milp(form.M, form.q, z1, MILP_DELTA * max(1.0, float(np.abs(z1).max())),
                                       time_limit=MILP_TIME_LIMIT)
        milp["second"] = sec.verdict
        if sec.verdict is not Verdict.UNDECIDED:
            milp["second_agrees"] = ((sec.verdict is Verdict.SECOND_SOLUTION)
                                     == (enum.verdict in (Verdict.FINITE, Verdict.CONTINUUM)))
        if sec.verdict is Verdict.SECOND_SOLUTION:
            milp["second_other_forces"] = _other_forces(form, z1, sec.z)
    if n_proven >= 2 and not milp["second_other_forces"]:
        # the MILP's second z had the same forces (a separating contact's free slacks): ask again
        # from each proven solution; a verified z2 with other forces certifies several solutions
        for z in phys.z_points:
            sec = lcp_second_solution_milp(form.M, form.q, z, MILP_DELTA * max(1.0, float(np.abs(z).max())),
                                           time_limit=MILP_TIME_LIMIT)
            if sec.verdict is Verdict.SECOND_SOLUTION and _other_forces(form, z, sec.z):
                milp["second_other_forces"] = True
                break
    # the same question by motion: a second solution whose accelerations differ (MilpCertificate.certifies)
    milp["second_motion"] = milp["second_motion_agrees"] = None
    if ex.verdict is Verdict.SOLUTION:
        secm = second_motion_milp(form, ex.z, MILP_DELTA, MILP_TIME_LIMIT)
        milp["second_motion"] = secm.verdict
        if secm.verdict is not Verdict.UNDECIDED:
            milp["second_motion_agrees"] = (secm.verdict is Verdict.SECOND_SOLUTION) == (phys.n_motions >= 2)
    milp["time_s"] = time.perf_counter() - t0
    rec["milp"] = milp
    # multistart
    ms = multistart((form.M, form.q), starts=STARTS, seed=seed, structured=STRUCTURED, batch_size=STARTS,
                    solver_options={"max_iter": MS_MAX_ITER}, motion=lcp_motion_map(form))
    found = multistart_forces(form, ms)
    rec["multistart"] = {
        "n_forces": int(len(found)), "n_z": int(ms.n_distinct), "n_solved": int(ms.n_solved),
        "n_motions": int(ms.n_distinct_motions or 0), "tol_motion": ms.tol_motion,
        "forces": found, "unmatched": unmatched(found, phys.forces, phys.force_pieces),
        "time_per_start_s": ms.time_per_start_s,
        "solver_time_per_start_s": ms.extras["solver_time_s"] / max(1, ms.n_run),
    }
    rec["multistart_le_proven"] = bool(len(found) <= n_proven and ms.n_distinct_motions <= phys.n_motions
                                       and (phys.force_continuum or rec["multistart"]["unmatched"] == 0))
    # Proposition 3
    fb = proposition3_mu_bound(form)
    rec["prop3"] = {"mu_bar": fb.mu_bar, "mu_bar_unique": fb.mu_bar_unique, "mu_pd_exact": fb.mu_pd_exact,
                    "verdict": fb.verdict, "margin": fb.margin}
    rec["guaranteed_unique"] = bool(fb.sigma_min > 0 and fb.margin > 0)
    return rec


# ================================================================================================
# Summary
# ================================================================================================
def three_solution_region(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the grid has 3 solutions: angles, smallest mu (and at which angle), per-angle minima."""
    pts = [r for r in records if r["count"] == 3]
    if not pts:
        return {"points": 0}
    by_theta: dict[float, float] = {}
    for r in pts:
        by_theta[r["theta_deg"]] = min(by_theta.get(r["theta_deg"], math.inf), r["mu"])
    best = min(pts, key=lambda r: (r["mu"], r["theta_deg"]))
    return {"points": len(pts), "theta_min_deg": min(by_theta), "theta_max_deg": max(by_theta),
            "mu_min": best["mu"], "mu_min_theta_deg": best["theta_deg"],
            "min_mu_by_theta": {f"{t:g}": m for t, m in sorted(by_theta.items())}}


def _state_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for name in STATES:
        rs = [r for r in records if r["state"] == name]
        if not rs:
            continue
        counts = Counter(str(r["count"]) for r in rs)
        motion_counts = Counter(str(r["motion_count"]) for r in rs)
        guaranteed = [r for r in rs if r["guaranteed_unique"]]
        rows.append({
            "state": name, "points": len(rs),
            "counts": dict(sorted(counts.items())),
            "motion_counts": dict(sorted(motion_counts.items())),
            "multistart_motions_equal": sum(r["multistart"]["n_motions"] == _num(r["motion_count"]) for r in rs),
            "multistart_impulse_sets": float(np.mean([r["multistart"]["n_z"] for r in rs])),
            "multistart_forces": float(np.mean([r["multistart"]["n_forces"] for r in rs])),
            "multistart_motions": float(np.mean([r["multistart"]["n_motions"] for r in rs])),
            "regions": dict(Counter(r["region"] for r in rs)),
            "multistart_equal": sum(r["multistart"]["n_forces"] == _num(r["count"]) for r in rs),
            "multistart_le_proven": sum(r["multistart_le_proven"] for r in rs),
            "closed_form_agrees": sum(r["closed_form_agrees"] for r in rs),
            "milp_existence_agrees": sum(bool(r["milp"]["existence_agrees"]) for r in rs),
            "milp_second_agrees": sum(bool(r["milp"]["second_agrees"]) for r in rs),
            "milp_second_decided": sum(r["milp"]["second_agrees"] is not None for r in rs),
            "milp_certifies_several": sum(bool(r["milp"]["second_other_forces"]) for r in rs),
            "milp_motion_agrees": sum(bool(r["milp"]["second_motion_agrees"]) for r in rs),
            "milp_motion_decided": sum(r["milp"]["second_motion_agrees"] is not None for r in rs),
            "several": sum(_num(r["count"]) >= 2 for r in rs),
            "guaranteed_unique": len(guaranteed),
            "guaranteed_and_unique": sum(r["count"] == 1 for r in guaranteed),
            "time_per_start_ms": 1e3 * float(np.mean([r["multistart"]["time_per_start_s"] for r in rs])),
            "solver_time_per_start_ms": 1e3 * float(np.mean([r["multistart"]["solver_time_per_start_s"] for r in rs])),
        })
    return rows


def _figure(records: list[dict[str, Any]], mus: tuple[float, ...], thetas: tuple[float, ...], path: Path) -> None:
    plt = pyplot()
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Patch

    from contactmp.models.painleve import painleve_min_mu, painleve_mu, spin_angle, stick_mu, three_solution_mu

    colors = ["#d62728", "#e8f1fa", "#ff9f40", "#7b3fb5", "#222222"]  # 0, 1, 2, 3, inf
    cmap = ListedColormap(colors)
    norm = BoundaryNorm([-0.5, 0.5, 1.5, 2.5, 3.5, 4.5], cmap.N)
    fig, axes = plt.subplots(2, 2, figsize=(12, 9.5), sharex=True, sharey=True)
    th_fine = np.linspace(1.0, 89.0, 400)
    thr = np.radians(th_fine)
    mu_top = max(mus) if mus else 3.0
    dth = (thetas[1] - thetas[0]) if len(thetas) > 1 else 10.0
    dmu = (mus[1] - mus[0]) if len(mus) > 1 else 0.5
    for ax, name in zip(axes.ravel(), STATES):
        rs = {(r["theta_deg"], r["mu"]): r for r in records if r["state"] == name}
        grid = np.full((len(mus), len(thetas)), np.nan)
        for i, mu in enumerate(mus):
            for j, th in enumerate(thetas):
                r = rs.get((th, mu))
                if r is not None:
                    c = _num(r["count"])
                    grid[i, j] = 4 if math.isinf(c) else min(c, 3)
        ax.pcolormesh(np.array(thetas), np.array(mus), grid, cmap=cmap, norm=norm, shading="nearest")
        # multistart below the proven count
        miss = [(th, mu) for (th, mu), r in rs.items() if r["multistart"]["n_forces"] < _num(r["count"])]
        if miss:
            ax.plot(*zip(*miss), "kx", ms=5, label="multistart found fewer")
        ax.plot(th_fine, painleve_mu(thr), "k-", lw=1.8, label="closed form: Painleve mu_P")
        st = STATES[name]
        if name == "sliding-spin":
            ax.axvline(math.degrees(spin_angle(st["omega"])), color="k", ls=":", lw=1.5,
                       label="closed form: b_n = 0")
        if name == "rolling":
            ax.plot(th_fine, stick_mu(thr), color="tab:blue", ls=":", lw=1.5,
                    label="closed form: stick/slip (mode change)")
        if name == "rolling-pulled":
            b_n = 9.81 * (st["pull"][1] - 1.0)
            rho = -9.81 * st["pull"][0] / b_n
            ax.plot(th_fine, three_solution_mu(thr, rho), color="tab:purple", ls="--", lw=2,
                    label=f"closed form: mu_3 (rho = {rho:g})")
        # Proposition 3: mu_bar for the sliding contact, mu_bar_unique for the resting one
        key = "mu_bar" if st["v_t"] != 0 else "mu_bar_unique"
        per_theta = sorted({(th, _num(r["prop3"][key])) for (th, _), r in rs.items()})
        if per_theta:
            ax.plot([p[0] for p in per_theta], [min(p[1], 1e3) for p in per_theta], "o--", color="tab:green",
                    ms=3, lw=1.2, label=f"Prop. 3 {key}")
        mmin, tmin = painleve_min_mu()
        ax.plot([math.degrees(tmin)], [mmin], "k*", ms=10)
        ax.set_xlim(min(thetas) - dth / 2, max(thetas) + dth / 2)
        ax.set_ylim(min(mus) - dmu / 2, mu_top + dmu / 2)
        ax.set_title(st["title"], fontsize=10)
        ax.legend(fontsize=7, loc="upper left")
    for ax in axes[-1]:
        ax.set_xlabel("rod angle theta [deg]")
    for ax in axes[:, 0]:
        ax.set_ylabel("friction coefficient mu")
    handles = [Patch(color=c, label=l) for c, l in zip(colors, ["0 (inconsistent)", "1", "2", "3", "continuum"])]
    fig.legend(handles=handles, loc="lower center", ncol=5, title="proven number of solutions (physical forces)")
    save(fig, path, rect=(0, 0.06, 1, 1))


def run(out: Path, quick: bool = False, seed: int = 0, workers: int | None = None,
        scheduler: str | None = None, mus: tuple[float, ...] | None = None,
        thetas_deg: tuple[float, ...] | None = None) -> dict[str, Any]:
    """Run the study into ``out`` (resumes from ``out/records.jsonl``); ``workers``/``scheduler`` as
    in :func:`contactmp.parallel.run_tasks` (default: a local Dask cluster of 2 workers). ``mus`` and
    ``thetas_deg`` override the grid (for tests)."""
    from contactmp import parallel
    from contactmp.models.painleve import painleve_min_mu, painleve_mu, three_solution_mu

    study = StudyRun("painleve-rod", Path(out), quick, seed)
    mus = tuple(mus) if mus is not None else (QUICK_MUS if quick else MUS)
    thetas = tuple(thetas_deg) if thetas_deg is not None else (QUICK_THETAS_DEG if quick else THETAS_DEG)
    items = [(name, th, mu, seed) for name in STATES for th in thetas for mu in mus]
    keys = [_key(*it) for it in items]
    n_w = 0 if (workers == 0 and scheduler is None) else (workers or parallel.DEFAULT_WORKERS)
    report = parallel.run_tasks(
        grid_point, items, keys=keys, store_path=study.store, workers=workers, scheduler=scheduler,
        batch_size=parallel.default_batch_size(len(items), max(1, n_w), 0.15), description="painleve-rod",
    )
    records = [study.store[k] for k in keys]
    rows = _state_rows(records)
    three = three_solution_region([r for r in records if r["state"] == "rolling-pulled"])
    violations = [r["key"] for r in records if not r["multistart_le_proven"]]
    bound_violations = [r["key"] for r in records if r["guaranteed_unique"] and r["count"] != 1]
    _figure(records, mus, thetas, study.out / "solution_counts.png")
    mu_min, th_min = painleve_min_mu()
    headers = ["state", "points", "proven counts (forces)", "proven counts (motions)", "multistart = proven",
               "multistart motions = proven", "multistart mean: impulse sets / forces / motions",
               "multistart <= proven",
               "closed form agrees", "MILP existence agrees", "MILP 2nd agrees", "MILP certifies several",
               "MILP 2nd motion agrees",
               "Prop. 3 guaranteed (unique)", "ms/start"]
    table_rows = [[r["state"], r["points"], ", ".join(f"{k}: {v}" for k, v in r["counts"].items()),
                   ", ".join(f"{k}: {v}" for k, v in r["motion_counts"].items()),
                   r["multistart_equal"], r["multistart_motions_equal"],
                   f"{r['multistart_impulse_sets']:.2f} / {r['multistart_forces']:.2f} / {r['multistart_motions']:.2f}",
                   r["multistart_le_proven"], r["closed_form_agrees"],
                   r["milp_existence_agrees"], f"{r['milp_second_agrees']}/{r['milp_second_decided']}",
                   f"{r['milp_certifies_several']}/{r['several']}",
                   f"{r['milp_motion_agrees']}/{r['milp_motion_decided']}",
                   f"{r['guaranteed_unique']} ({r['guaranteed_and_unique']})",
                   round(r["time_per_start_ms"], 3)] for r in rows]
    pull = STATES["rolling-pulled"]["pull"]
    rho = -pull[0] / (pull[1] - 1.0)
    region_rows = []
    for th in thetas:
        grid_min = three.get("min_mu_by_theta", {}).get(f"{th:g}")
        mu3 = float(three_solution_mu(math.radians(th), rho))
        region_rows.append([th, grid_min, mu3 if math.isfinite(mu3) else None, float(painleve_mu(math.radians(th)))])
    lines = [
        "# Painleve's and Lotstedt's rod: number of solutions over (theta, mu)" + (" (quick)" if quick else ""),
        "",
        f"Grid: {len(thetas)} angles x {len(mus)} friction values per state; proven counts from complete "
        "enumeration of the pyramid LCP, counted as distinct physical contact forces and as distinct "
        "motions (accelerations G L z + g0). Multistart: "
        f"{STARTS} starts ({STRUCTURED} mode guesses), seed {seed}; it counts distinct LCP vectors z "
        "(impulse sets, relative tolerance 1e-6), their distinct forces and their distinct motions "
        "(absolute tolerance 10 ||G L||_inf tol + 64 eps V, tol = 1e-8; contactmp.reductions.MotionMap).",
        "",
        markdown_table(headers, table_rows),
        "## Three-solution region (rolling-pulled): smallest grid mu with 3 solutions per angle",
        "",
        markdown_table(["theta [deg]", "grid: min mu with 3", "closed form mu_3", "Painleve mu_P"], region_rows),
        f"Literature: Painleve's paradox needs mu > mu_P(theta) >= {mu_min:.4f} (at theta = "
        f"{math.degrees(th_min):.2f} deg); Lotstedt's three solutions (lift-off, stick, slip) of the resting "
        "rod lie inside that region (mu_3 > mu_P, mu_3 -> mu_P as the pull turns horizontal).",
    ]
    study.write_table("\n".join(lines))
    t_start = float(np.mean([r["multistart"]["time_per_start_s"] for r in records]))
    t_solver = float(np.mean([r["multistart"]["solver_time_per_start_s"] for r in records]))
    count_summary = {r["state"]: r["counts"] for r in rows}
    motion_summary = {r["state"]: r["motion_counts"] for r in rows}
    headline = (
        f"proven counts {count_summary}; proven motion counts {motion_summary}; "
        "three-solution region (rolling-pulled): "
        + (f"theta {three['theta_min_deg']:g}-{three['theta_max_deg']:g} deg, mu >= {three['mu_min']:g} "
           f"(at {three['mu_min_theta_deg']:g} deg)" if three.get("points") else "none on this grid")
        + f"; multistart never exceeds proven: {not violations}; time per start {1e3 * t_start:.2f} ms"
    )
    summary = {
        "headline": headline, "mus": list(mus), "thetas_deg": list(thetas), "states": STATES,
        "by_state": rows, "three_solution_region": three,
        "literature": {"painleve_min_mu": mu_min, "painleve_argmin_theta_deg": math.degrees(th_min),
                       "three_solution_region_inside_painleve": all(
                           r["mu"] > r["mu_P"] for r in records if r["count"] == 3)},
        "multistart_never_exceeds_proven": not violations, "violations": violations,
        "prop3_uniqueness_violations": bound_violations,
        "time_per_start_s": t_start, "solver_time_per_start_s": t_solver,
        "dask": {"workers": report.workers, "computed": report.done, "resumed": report.skipped,
                 "time_s": report.time_s},
        "figures": ["solution_counts.png"],
    }
    study.write_summary(summary)
    if violations or bound_violations:
        raise AssertionError(f"painleve-rod: multistart exceeded the proven count at {violations[:5]} or the "
                             f"Prop. 3 uniqueness bound failed at {bound_violations[:5]} (see summary.json)")
    return summary
