"""Case study ``drumwright-pendulum``: the planar pendulum in absolute coordinates held by two compliant
bilateral constraints, stepped with :class:`~contactmp.formulations.compliant_qp.CompliantQP`
(Drumwright, arXiv 1905.10828, section 4 / issue 6 item 4).

Model: a uniform rod (``m = 1 kg``, ``L = 1 m``, ``I = m L^2 / 12``) with configuration
``q = (x, y, theta)`` of its centre of mass, gravity ``f = (0, -m g, 0)``, pinned at the origin by

    phi(q) = (x - (L/2) sin theta,  y + (L/2) cos theta) = 0,     G(q) = dphi/dq,

started horizontal at rest (``theta = pi/2``, ``x = L/2``, ``y = 0``) and run for ``T = 1 s``.
Each step is the compliant bilateral step with ``G``, ``phi0`` evaluated at ``q0``, per-row stiffness
``K`` and damping ``B = 0`` (the scheme's own implicitness is the only dissipation):

    v1 = v0 + h M^-1 (f + G^T lambda),  lambda = -K (phi0 + h G v1) - B G v1,   q1 = q0 + h v1.

Measured per ``(K, h)`` (one record each, resumable): the max constraint deviation
``max_k ||phi(q_k)||_inf`` over the run, the compliance deflection ``max_k ||lambda_k||_inf / K``, and the
energy ``E = 1/2 v^T M v + m g y + |lambda|^2 / (2 K)`` over time (the last term is the
springs' ``1/2 K phi1^2`` with the model's ``phi1 = -lambda / K``; the true ``phi(q)`` would add the
``O(h^2)`` curvature error, ``1/2 K (3 g h^2 / 4)^2``, meaningless for stiff ``K``) (its drift ``E(T) - E0`` and ``max |E - E0|``).

Expected: the linearised constraint ``phi0 + h G v1`` is driven to ``lambda / K`` each step, so the
true ``phi(q1)`` differs from it by the curvature term ``(h^2 / 2) v^T phi'' v`` -- ``O(h^2)``, about
``(L/2) omega^2 h^2 / 2`` with ``omega^2 <= 3 g / L`` -- plus the compliance floor ``lambda / K``.
The slope 2 is fitted only where the ``h^2`` term dominates (see :func:`fit_slope`); for soft ``K``
the floor ``~ 2.5 m g / K`` takes over at small ``h`` and the deviation stops falling.
The energy error is bounded and oscillates with the swing (both signs) with amplitude ``O(h)`` --
the order of the symplectic Euler scheme (v first, then q with v1), not exact conservation.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from contactmp.case_studies._figures import pyplot, save
from contactmp.case_studies._study import StudyRun, markdown_table, merge_counts
from contactmp.formulations.compliant_qp import CompliantQP

DESCRIPTION = "compliant bilateral pendulum (Drumwright): constraint deviation O(h^2) over K, energy over time"

MASS, LENGTH, GRAVITY, DAMPING, DURATION = 1.0, 1.0, 9.81, 0.0, 1.0
#: stiffnesses [N/m] and step sizes [s] (all divide DURATION)
FULL_K: tuple[float, ...] = (1e4, 1e8, 1e12)
FULL_H: tuple[float, ...] = (1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1)
QUICK_K: tuple[float, ...] = (1e4, 1e12)
QUICK_H: tuple[float, ...] = (1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1)
#: asymptotic range of the slope fit: h * omega_max <= 0.11 (omega_max = sqrt(3 g / L) = 5.4 rad/s)
#: and the deviation at least FLOOR_RATIO times the compliance deflection max |lambda| / K
ASYMPTOTIC_H_MAX = 0.02
FLOOR_RATIO = 10.0
ENERGY_SAMPLES = 201


def mass_matrix(m: float = MASS, L: float = LENGTH) -> np.ndarray:
    """``M = diag(m, m, m L^2 / 12)`` of the rod in centre-of-mass coordinates."""
    return np.diag([m, m, m * L * L / 12.0])


def pin_phi(q: np.ndarray, L: float = LENGTH) -> np.ndarray:
    """The pin constraint ``phi(q) = (x - (L/2) sin theta, y + (L/2) cos theta)`` [m]."""
    return np.array([q[0] - 0.5 * L * math.sin(q[2]), q[1] + 0.5 * L * math.cos(q[2])])


def pin_jacobian(q: np.ndarray, L: float = LENGTH) -> np.ndarray:
    """``G = dphi/dq = [[1, 0, -(L/2) cos theta], [0, 1, -(L/2) sin theta]]``."""
    return np.array([[1.0, 0.0, -0.5 * L * math.cos(q[2])], [0.0, 1.0, -0.5 * L * math.sin(q[2])]])


def energy(q: np.ndarray, v: np.ndarray, m: float = MASS, L: float = LENGTH, g: float = GRAVITY) -> float:
    """Mechanical energy ``E = 1/2 v^T M v + m g y`` [J] (the springs' ``1/2 K phi^2`` is left out)."""
    return float(0.5 * v @ mass_matrix(m, L) @ v + m * g * q[1])


def simulate(K: float, h: float, T: float = DURATION, B: float = DAMPING, solver: str = "cholesky",
             samples: int = ENERGY_SAMPLES) -> dict[str, Any]:
    """Run the pendulum for ``round(T / h)`` compliant bilateral steps from the horizontal rest state.

    Returns ``max_dev`` (``max_k ||phi(q_k)||_inf``, k >= 1), ``compliance`` (``max_k ||lambda_k||_inf / K``),
    ``max_force``, energy figures for ``E = energy(q, v) + |lambda|^2 / (2 K)`` (``E0``, ``drift = E(T) - E0``, ``max_abs_dE``, ``max_dE`` = largest
    gain), ``failed_steps`` (steps whose CompliantQP status was not solved), ``max_residual`` and
    ``t``/``dE`` subsampled to at most ``samples`` points for plotting.
    """
    M = mass_matrix()
    f = np.array([0.0, -MASS * GRAVITY, 0.0])
    n = int(round(T / h))
    q = np.array([0.5 * LENGTH, 0.0, 0.5 * math.pi])
    v = np.zeros(3)
    E0 = energy(q, v)
    dev = np.empty(n)
    dE = np.empty(n + 1)
    dE[0] = 0.0
    lam_max = 0.0
    failed = 0
    res_max = 0.0
    used: dict[str, int] = {}
    t0 = time.perf_counter()
    for k in range(n):
        step = CompliantQP(M, f, v, pin_jacobian(q), pin_phi(q), K, B, h).solve(solver)
        used[step.solver] = used.get(step.solver, 0) + 1
        failed += not step.success
        res_max = max(res_max, step.residual)
        lam_max = max(lam_max, float(np.max(np.abs(step.x))))
        v = step.extras["v1"]
        q = q + h * v
        dev[k] = float(np.max(np.abs(pin_phi(q))))
        dE[k + 1] = energy(q, v) + 0.5 * float(step.x @ step.x) / K - E0
    idx = np.unique(np.linspace(0, n, min(samples, n + 1)).round().astype(int))
    return {
        "steps": n, "max_dev": float(dev.max()), "final_dev": float(dev[-1]), "compliance": lam_max / K,
        "max_force": lam_max, "E0": E0, "drift": float(dE[-1]), "max_abs_dE": float(np.abs(dE).max()),
        "max_dE": float(dE.max()), "failed_steps": failed, "max_residual": res_max, "solver": solver,
        "solver_counts": used,
        "time_s": time.perf_counter() - t0, "t": (idx * h).tolist(), "dE": dE[idx].tolist(),
    }


def fit_slope(hs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Least-squares slope of ``log y`` against ``log h`` (None with fewer than 2 points)."""
    if len(hs) < 2:
        return None
    return float(np.polyfit(np.log(np.asarray(hs)), np.log(np.asarray(ys)), 1)[0])


def asymptotic(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records in the asymptotic range: ``h <= ASYMPTOTIC_H_MAX`` and ``max_dev >= FLOOR_RATIO *
    compliance`` (the ``h^2`` curvature term dominates the compliance floor)."""
    return [r for r in recs if r["h"] <= ASYMPTOTIC_H_MAX * (1 + 1e-9)
            and r["max_dev"] >= FLOOR_RATIO * r["compliance"]]


def _key(K: float, h: float) -> str:
    return f"K={K:g}/h={h:g}"


def run(out: Path, quick: bool = False, seed: int = 0) -> dict[str, Any]:
    """Run the sweep over ``K`` and ``h`` into ``out`` (resumes from ``out/records.jsonl``); writes
    ``table.md``, ``summary.json``, ``deviation_vs_h.png`` and ``energy_vs_time.png``. Deterministic
    (``seed`` is recorded only)."""
    study = StudyRun("drumwright-pendulum", Path(out), quick, seed)
    Ks, hs = (QUICK_K, QUICK_H) if quick else (FULL_K, FULL_H)
    grid = [(K, h) for K in Ks for h in hs]
    for K, h in study.progress(grid, len(grid), "pendulum (K, h)"):
        key = _key(K, h)
        if key in study.store:
            continue
        study.store.append({"key": key, "K": K, "h": h, "B": DAMPING, **simulate(K, h)})
    records = [study.store[_key(K, h)] for K, h in grid]

    per_k: list[dict[str, Any]] = []
    for K in Ks:
        rs = sorted((r for r in records if r["K"] == K), key=lambda r: r["h"])
        asy = asymptotic(rs)
        small = [r for r in rs if r["h"] <= ASYMPTOTIC_H_MAX * (1 + 1e-9)]
        per_k.append({
            "K": K,
            "slope_all_h": fit_slope([r["h"] for r in rs], [r["max_dev"] for r in rs]),
            "slope_asymptotic": fit_slope([r["h"] for r in asy], [r["max_dev"] for r in asy]),
            "asymptotic_h": [r["h"] for r in asy],
            "compliance_floor": max(r["compliance"] for r in rs),
            "energy_order": fit_slope([r["h"] for r in small], [r["max_abs_dE"] for r in small]),
            "drift_at_h": {f"{r['h']:g}": r["drift"] for r in rs},
            "failed_steps": sum(r["failed_steps"] for r in rs),
        })
    figures = [_plot_deviation(study.out, records, per_k, Ks), _plot_energy(study.out, records, Ks, hs)]

    E0 = records[0]["E0"]
    scale = MASS * GRAVITY * LENGTH / 2
    rows = [[f"{r['K']:g}", f"{r['h']:g}", r["steps"], f"{r['max_dev']:.3e}", f"{r['compliance']:.3e}",
             f"{r['drift']:.3e}", f"{r['max_abs_dE']:.3e}", f"{r['max_dE']:.1e}", r["failed_steps"]]
            for r in records]
    slope_rows = [[f"{p['K']:g}", _fmt(p["slope_asymptotic"]), ", ".join(f"{h:g}" for h in p["asymptotic_h"]) or "-",
                   _fmt(p["slope_all_h"]), f"{p['compliance_floor']:.2e}", _fmt(p["energy_order"])] for p in per_k]
    lines = [
        "# drumwright-pendulum" + (" (quick)" if quick else ""),
        "",
        f"Rod m = {MASS} kg, L = {LENGTH} m pinned at the origin by two compliant bilateral rows "
        f"(B = {DAMPING}), horizontal at rest, T = {DURATION} s, CompliantQP bilateral step (Cholesky). "
        f"E0 = {E0:g} J; energy scale m g L / 2 = {scale:g} J.",
        "",
        "## Fitted slopes of max |phi| against h (log-log)",
        "",
        f"asymptotic: h <= {ASYMPTOTIC_H_MAX:g} and max|phi| >= {FLOOR_RATIO:g} x compliance max|lambda|/K; "
        "energy order: slope of max|E - E0| against h for h <= "
        f"{ASYMPTOTIC_H_MAX:g}.",
        "",
        markdown_table(["K [N/m]", "slope (asymptotic)", "h used", "slope (all h)", "max|lambda|/K [m]",
                        "energy order"], slope_rows),
        "## Every run",
        "",
        markdown_table(["K", "h", "steps", "max|phi| [m]", "max|lambda|/K [m]", "E(T)-E0 [J]",
                        "max|E-E0| [J]", "max gain [J]", "failed"], rows),
    ]
    study.write_table("\n".join(lines))

    fitted = [p for p in per_k if p["slope_asymptotic"] is not None]
    headline = "; ".join(f"K={p['K']:g}: slope {_fmt(p['slope_asymptotic'])}" for p in fitted) or "no asymptotic fit"
    finest = min(hs)
    drift_fine = {f"{K:g}": study.store[_key(K, finest)]["drift"] for K in Ks}
    headline = (f"max|phi| ~ h^p with {headline} (asymptotic range); energy error oscillates with O(h) "
                f"amplitude (bounded, first order), E(T)-E0 at h={finest:g}: " + ", ".join(f"K={k} {d:.2e} J" for k, d in drift_fine.items()))
    summary = {
        "headline": headline, "per_K": per_k, "E0": E0, "energy_scale_J": scale,
        "drift_at_finest_h": drift_fine,
        "failed_steps": sum(r["failed_steps"] for r in records), "figures": figures,
        "solver_counts": merge_counts(records),
    }
    study.write_summary(summary)
    return summary


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _plot_deviation(out: Path, records: list[dict[str, Any]], per_k: list[dict[str, Any]],
                    Ks: Sequence[float]) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 5))
    for K, p in zip(Ks, per_k):
        rs = sorted((r for r in records if r["K"] == K), key=lambda r: r["h"])
        lab = f"K = {K:g}: slope {_fmt(p['slope_asymptotic'])} (asymptotic), {_fmt(p['slope_all_h'])} (all h)"
        line, = ax.loglog([r["h"] for r in rs], [r["max_dev"] for r in rs], "o-", label=lab)
        ax.axhline(p["compliance_floor"], color=line.get_color(), ls=":", lw=1)
    h = np.array(sorted({r["h"] for r in records}))
    ax.loglog(h, 0.75 * GRAVITY * h ** 2, "k--", lw=1, label="(L/2) w_max^2 h^2 / 2 = 3 g h^2 / 4")
    ax.set_xlabel("step h [s]")
    ax.set_ylabel("max |phi| over 1 s [m]")
    ax.set_title("compliant pendulum: constraint deviation (dotted: max|lambda|/K)")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    return save(fig, Path(out) / "deviation_vs_h.png")


def _plot_energy(out: Path, records: list[dict[str, Any]], Ks: Sequence[float], hs: Sequence[float]) -> str:
    plt = pyplot()
    show = sorted(hs)[:: max(1, len(hs) // 4)]
    fig, axes = plt.subplots(1, len(Ks), figsize=(5 * len(Ks), 4), sharey=True, squeeze=False)
    for ax, K in zip(axes[0], Ks):
        for r in records:
            if r["K"] == K and r["h"] in show:
                ax.plot(r["t"], r["dE"], label=f"h = {r['h']:g}")
        ax.set_title(f"K = {K:g} N/m")
        ax.set_xlabel("t [s]")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("E(t) - E0 [J]")
    return save(fig, Path(out) / "energy_vs_time.png")
