"""Case study ``compliant-friction``: a body on a plane pushed horizontally below and above the
friction limit, simulated with Drumwright's compliant cone QP
(``TimeStepping(formulation="compliant")``, :class:`~contactmp.formulations.compliant_friction.
CompliantFriction`) over a grid of steps ``h`` and stiffnesses ``K``.

System: ``models.systems.point_mass_2d`` (m = 1 kg, mu = 0.5, g = 9.81), one contact, force
``u = (F, 0)`` at the body. The point mass is chosen over ``box_2d`` because every quantity of
interest then has a closed form: one contact carries the whole weight (no load sharing between
two corners, no tipping moment from a push above the contact plane), so the study measures the
contact law and nothing else. Gains: ``B = 2 sqrt(K m)`` (critical normal damping),
``Bt = 1e4 N s/m``, the *associated* normal law (``associated=True``, the convex cone QP, whose
lift this study measures; the formulation's default is the non-associated law, which keeps a
sliding body at the spring's depth). Start: at the spring's equilibrium depth ``z_eq = -m g / K``,
at rest.
``active_gap = inf``: the contact stays in every step's problem, so what is measured is the model,
not the time stepper's cut-off (with the default 0.1 m the lifted slider below would leave the
problem and fly).

Closed forms (per step, exact for the discrete scheme):

* **below the limit** (``F = 0.5 mu m g``), stiction mode: ``lambda_T = -Bt u_T`` and
  ``v_{k+1} = (v_k + h F / m) / (1 + h Bt / m)``, so ``v_k = (F/Bt)(1 - r^k)``,
  ``r = 1 / (1 + h Bt / m)``, and ``x_N = (F/Bt) (T - (m/Bt)(1 - r^N))``: the creep speed is
  ``F / Bt`` for every ``h`` and ``K``; the normal state stays at ``z_eq`` exactly.
* **above the limit** (``F = 1.5 mu m g``), sliding mode: ``|lambda_T| = mu lambda_n`` on the cone
  boundary and, once the normal transient has died out, ``lambda_n = m g``; friction / (mu m g) = 1
  and ``a = (F - mu m g)/m``.
* **the convex cone's lift**: while sliding ``w_n = mu s`` with ``s = |u_T| - |lambda_T|/Bt``, so
  the normal force is the spring's plus ``(h K + B) mu s``; with ``s`` growing at ``a`` per second
  the steady discrete solution rises at ``zdot = (h + B/K) mu a`` and stands
  ``(h + B/K) mu s - B zdot / K`` above ``z_eq`` (the O(h) boundary layer of the associated law).

Outputs: ``records.jsonl`` (one record per (push, h, K); resumable), ``table.md``,
``summary.json``, ``compliant_friction.png`` (creep and friction ratio against ``h`` per ``K``).
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from contactmp.case_studies._study import StudyRun, markdown_table, merge_counts

DESCRIPTION = "compliant cone QP: point mass pushed below/above mu m g over h x K; creep, friction, lift"

MASS, MU, GRAVITY = 1.0, 0.5, 9.81
#: tangential damping Bt [N s/m] (creep speed F / Bt below the limit)
BT = 1e4
#: push / (mu m g) below and above the friction limit
PUSHES: dict[str, float] = {"stick": 0.5, "slide": 1.5}
HS_FULL = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
KS_FULL = (1e4, 1e6, 1e8, 1e10, 1e12)
HS_QUICK = (1e-2, 1e-1)
KS_QUICK = (1e4, 1e12)
#: simulated time [s] (full, quick)
T_FULL, T_QUICK = 1.0, 0.5
#: at least this many steps per run: the normal transient of the sliding case decays by a fixed
#: factor per step (about 1e-7 after 10 steps of 0.1 s, 1e-15 after 30), so large h runs longer than T
MIN_STEPS = 30
#: the step's contact-solver tolerance
TOL = 1e-10


def creep_closed_form(F: float, h: float, n: int, m: float = MASS, Bt: float = BT) -> tuple[float, float]:
    """Stiction under a constant push ``F`` from rest: ``(v_n, x_n)`` after ``n`` steps of ``h``,
    ``v_k = (F/Bt)(1 - r^k)``, ``r = 1/(1 + h Bt/m)``, ``x_n = (F/Bt)(n h - (m/Bt)(1 - r^n))``."""
    r = 1.0 / (1.0 + h * Bt / m)
    rn = r ** n
    return F / Bt * (1.0 - rn), F / Bt * (n * h - m / Bt * (1.0 - rn))


def simulate_case(push: str, h: float, K: float, T: float) -> dict[str, Any]:
    """One run: the point mass pushed with ``PUSHES[push] mu m g`` for ``max(T, MIN_STEPS h)`` seconds
    with step ``h`` and normal stiffness ``K``; the measured creep / friction / lift against the closed forms."""
    from contactmp.models.systems import point_mass_2d
    from contactmp.result import Status
    from contactmp.transcriptions.time_stepping import TimeStepping

    m, mu, g = MASS, MU, GRAVITY
    B = 2.0 * math.sqrt(K * m)
    F = PUSHES[push] * mu * m * g
    n = max(int(round(T / h)), MIN_STEPS)
    ts = TimeStepping(point_mass_2d(m=m, mu=mu, g=g), h, formulation="compliant", stiffness=K, damping=B,
                      tangential_damping=BT, associated=True, active_gap=math.inf, tol=TOL)
    z_eq = -m * g / K
    t0 = time.perf_counter()
    tr = ts.simulate([0.0, z_eq], [0.0, 0.0], u=[F, 0.0], n_steps=n)
    wall = time.perf_counter() - t0
    lam_n, lam_t = tr.p_n[:, 0] / h, tr.p_t[:, 0] / h
    finite = bool(np.isfinite(tr.q).all() and np.isfinite(tr.v).all())
    # steps whose program was solved but whose physics verdict failed: the associated law's lift
    # (force at a gap) while sliding; counted apart from steps the solver did not solve
    unphysical = [r for r in tr.results if r.status.value == "unphysical"]
    failed = sum(r.status is not Status.SOLVED for r in tr.results) - len(unphysical)
    rec: dict[str, Any] = {
        "push": push, "push_ratio": PUSHES[push], "h": h, "K": K, "B": B, "Bt": BT, "T": n * h, "steps": n,
        "F": F, "wall_s": wall, "failed_steps": failed, "unphysical_steps": len(unphysical),
        "violations": sorted({k for r in unphysical for k in r.extras.get("physics", {}).get("violations", {})}),
        "max_residual": float(np.max(tr.residual)),
        "finite": finite, "solvers": sorted(set(tr.solver)), "solver_counts": tr.solver_counts,
        "x_T": float(tr.q[-1, 0]), "vx_T": float(tr.v[-1, 0]), "z_T": float(tr.q[-1, 1]), "vz_T": float(tr.v[-1, 1]),
        "max_abs_z_minus_eq": float(np.max(np.abs(tr.q[:, 1] - z_eq))), "max_abs_vz": float(np.max(np.abs(tr.v[:, 1]))),
    }
    ok_steps = finite and failed == 0
    if push == "stick":
        v_cf, x_cf = creep_closed_form(F, h, n)
        rec.update({
            "creep_per_s": float(tr.q[-1, 0]) / (n * h),
            "creep_closed_form": F / BT,
            "creep_speed_rel_err": abs(float(tr.v[-1, 0]) - v_cf) / v_cf,
            "creep_x_rel_err": abs(float(tr.q[-1, 0]) - x_cf) / x_cf,
            "friction_ratio": float(np.max(np.abs(lam_t))) / (mu * m * g),
        })
        # bounded: the normal state never leaves the spring's equilibrium, the creep never exceeds F/Bt
        rec["stable"] = bool(ok_steps and rec["max_abs_z_minus_eq"] <= 1e-9
                             and float(np.max(np.abs(tr.v[:, 0]))) <= F / BT * (1 + 1e-9))
    else:
        a = (F - mu * m * g) / m
        rate = (h + B / K) * mu * a
        s_T = abs(float(tr.v[-1, 0])) - abs(float(lam_t[-1])) / BT
        lift = float(tr.q[-1, 1]) - z_eq
        lift_pred = (h + B / K) * mu * s_T - B * float(tr.v[-1, 1]) / K
        half = n // 2
        rec.update({
            "friction_ratio": abs(float(lam_t[-1])) / (mu * m * g),
            "friction_rel_err": abs(abs(float(lam_t[-1])) / (mu * m * g) - 1.0),
            "normal_rel_err": abs(float(lam_n[-1]) / (m * g) - 1.0),
            "cone_boundary_dev": float(np.max(np.abs(np.abs(lam_t[half:]) - mu * lam_n[half:]))) / (mu * m * g),
            "accel_closed_form": a,
            "vx_rel_err": abs(float(tr.v[-1, 0]) - a * n * h) / (a * n * h),
            "lift_rate": float(tr.v[-1, 1]), "lift_rate_pred": rate,
            "lift_rate_rel_err": abs(float(tr.v[-1, 1]) - rate) / rate,
            "lift": lift, "lift_pred": lift_pred, "lift_rel_err": abs(lift - lift_pred) / abs(lift_pred),
            "slip_slack_s": s_T,
        })
        # bounded: no normal oscillation growing past the steady lift rate, normal force near m g
        rec["stable"] = bool(ok_steps and rec["max_abs_vz"] <= 1.5 * rate + 1e-12
                             and float(np.max(lam_n)) <= 10 * m * g)
    return rec


def _figure(records: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    Ks = sorted({r["K"] for r in records})
    for K in Ks:
        st = sorted((r for r in records if r["K"] == K and r["push"] == "stick"), key=lambda r: r["h"])
        sl = sorted((r for r in records if r["K"] == K and r["push"] == "slide"), key=lambda r: r["h"])
        lab = f"K = {K:.0e} N/m"
        if st:
            axes[0].plot([r["h"] for r in st], [r["creep_per_s"] for r in st], "o-", label=lab)
        if sl:
            axes[1].plot([r["h"] for r in sl], [max(r["friction_rel_err"], 1e-17) for r in sl], "o-", label=lab)
            axes[2].plot([r["h"] for r in sl], [r["lift_rate"] for r in sl], "o-", label=lab + " (measured)")
            axes[2].plot([r["h"] for r in sl], [r["lift_rate_pred"] for r in sl], "k:", lw=0.8)
    if any(r["push"] == "stick" for r in records):
        F = PUSHES["stick"] * MU * MASS * GRAVITY
        axes[0].axhline(F / BT, color="k", ls=":", label="F / Bt")
    axes[0].set(xscale="log", yscale="log", xlabel="h [s]", ylabel="creep per second [m/s]",
                title=f"below the limit: F = {PUSHES['stick']} mu m g")
    axes[1].set(xscale="log", yscale="log", xlabel="h [s]", ylabel="|friction / (mu m g) - 1|",
                title=f"above the limit: F = {PUSHES['slide']} mu m g")
    axes[2].set(xscale="log", yscale="log", xlabel="h [s]", ylabel="lift rate zdot [m/s]",
                title="convex-cone lift (dotted: (h + B/K) mu a)")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(out: Path, quick: bool = False, seed: int = 0, hs: tuple[float, ...] | None = None,
        Ks: tuple[float, ...] | None = None, T: float | None = None) -> dict[str, Any]:
    """Run the study into ``out`` (resumes from ``out/records.jsonl``). ``seed`` is recorded only
    (the study is deterministic). ``hs``, ``Ks``, ``T`` override the grid and the duration."""
    study = StudyRun("compliant-friction", Path(out), quick, seed)
    hs = tuple(hs or (HS_QUICK if quick else HS_FULL))
    Ks = tuple(Ks or (KS_QUICK if quick else KS_FULL))
    T = float(T or (T_QUICK if quick else T_FULL))
    cases = [(p, h, K) for p in PUSHES for h in hs for K in Ks]
    for p, h, K in study.progress(cases, len(cases), "compliant-friction"):
        key = f"{p}|h={h:g}|K={K:g}|T={T:g}"
        if key in study.store:
            continue
        study.store.append({"key": key, **simulate_case(p, h, K, T)})
    keys = {f"{p}|h={h:g}|K={K:g}|T={T:g}" for p, h, K in cases}
    recs = [r for r in study.store.records() if r["key"] in keys]
    stick = [r for r in recs if r["push"] == "stick"]
    slide = [r for r in recs if r["push"] == "slide"]
    _figure(recs, study.out / "compliant_friction.png")

    rows = []
    for r in sorted(recs, key=lambda r: (r["push"], r["h"], r["K"])):
        if r["push"] == "stick":
            rows.append([r["push"], f"{r['h']:g}", f"{r['K']:.0e}", f"{r['creep_per_s']:.4e}",
                         f"{r['creep_x_rel_err']:.1e}", "-", "-", "-", r["stable"], r["failed_steps"],
                         r.get("unphysical_steps", 0)])
        else:
            rows.append([r["push"], f"{r['h']:g}", f"{r['K']:.0e}", "-", "-", f"{r['friction_rel_err']:.1e}",
                         f"{r['lift_rate']:.4e}", f"{r['lift_rate_rel_err']:.1e}", r["stable"], r["failed_steps"],
                         r.get("unphysical_steps", 0)])
    F_st = PUSHES["stick"] * MU * MASS * GRAVITY
    stiff = [r for r in recs if r["h"] == max(hs) and r["K"] == max(Ks)]
    summary_numbers = {
        "creep_closed_form": F_st / BT,
        "creep_per_s_range": [min(r["creep_per_s"] for r in stick), max(r["creep_per_s"] for r in stick)] if stick else None,
        "max_creep_x_rel_err": max((r["creep_x_rel_err"] for r in stick), default=None),
        "max_friction_rel_err": max((r["friction_rel_err"] for r in slide), default=None),
        "max_normal_rel_err": max((r["normal_rel_err"] for r in slide), default=None),
        "max_lift_rate_rel_err": max((r["lift_rate_rel_err"] for r in slide), default=None),
        "max_lift_rel_err": max((r["lift_rel_err"] for r in slide), default=None),
        "lift_range_m": [min(r["lift"] for r in slide), max(r["lift"] for r in slide)] if slide else None,
        "all_stable": all(r["stable"] for r in recs),
        "failed_steps": sum(r["failed_steps"] for r in recs),
        "unphysical_steps": sum(r.get("unphysical_steps", 0) for r in recs),
        "stable_at_largest_h_K": all(r["stable"] for r in stiff) and bool(stiff),
        "largest_h": max(hs), "largest_K": max(Ks),
    }
    lines = [
        "# compliant-friction" + (" (quick)" if quick else ""),
        "",
        f"- point_mass_2d, m = {MASS} kg, mu = {MU}, g = {GRAVITY}; B = 2 sqrt(K m), Bt = {BT:g} N s/m; "
        f"T = max({T:g} s, {MIN_STEPS} h) from rest at z_eq = -m g / K; active_gap = inf; contact-solver tol {TOL:g}.",
        f"- stick: F = {PUSHES['stick']} mu m g; creep per second = x(T)/T (closed form F/Bt = {F_st / BT:.6e} m/s); "
        "x err = |x(T) - x_cf(T)| / x_cf(T) against the exact discrete closed form.",
        f"- slide: F = {PUSHES['slide']} mu m g; fric err = | |lambda_T| / (mu m g) - 1 | at the last step; "
        "lift rate zdot at the last step against (h + B/K) mu a (the convex cone's boundary layer).",
        "- unphysical steps: solved steps the physics verdict flags (sliding on the associated law: force at "
        "a gap above the compliant tolerance, the lift this study measures); not counted as failed.",
        "- stable: finite, every step solved, normal state bounded (stick: |z - z_eq| <= 1e-9 m; "
        "slide: |zdot| <= 1.5 (h + B/K) mu a, lambda_n <= 10 m g).",
        "",
        markdown_table(["push", "h [s]", "K [N/m]", "creep [m/s]", "x err", "fric err", "lift rate [m/s]",
                        "lift-rate err", "stable", "failed steps", "unphysical steps"], rows),
    ]
    study.write_table("\n".join(lines))
    headline = (f"creep {summary_numbers['creep_per_s_range'][1]:.4e} m/s (F/Bt = {F_st / BT:.4e}) below the limit; "
                f"friction/(mu m g) - 1 <= {summary_numbers['max_friction_rel_err']:.1e} above it; "
                f"{'stable' if summary_numbers['all_stable'] else 'NOT stable'} on all {len(recs)} runs "
                f"(h <= {max(hs):g}, K <= {max(Ks):.0e}); lift rate (h + B/K) mu a matched to "
                f"{summary_numbers['max_lift_rate_rel_err']:.1e}") if stick and slide else "incomplete grid"
    summary = {"headline": headline, **summary_numbers, "grid": {"h": list(hs), "K": list(Ks), "T": T},
               "records_in_grid": len(recs), "figures": ["compliant_friction.png"],
               "solver_counts": merge_counts(recs)}
    study.write_summary(summary)
    return summary
