"""Case study ``nmdp-timestep`` (issue 7, item 4): legged gaits at large time steps, NMDP against the
linearized MDP (Pan and Hauser, arXiv 2010.14691).

The spider of the paper (:func:`contactmp.models.legged.spider`, 100 kg, ``mu = 1.5``) tracks the
``walk`` and ``jump`` gaits (:func:`contactmp.models.gaits.gait`) with the stable PD controller for
``T = 10 s`` at frame steps ``dt = 5, 10, 20, 30, 40, 50 ms``, simulated by
:class:`~contactmp.transcriptions.time_stepping.TimeStepping` with

* ``ipopt``: the NMDP solved by IPOPT (CasADi), ``pgm``: by the projected gradient method,
  ``zopgm``: by its zeroth-order variant (all three through the adaptive step, ``h_min = 1e-5 s``);
* ``mdp``: the linearized MDP QP (everything frozen at ``q_n``; stable PD, implicit in ``qd+``; no
  adaptivity), and ``mdp-explicit``: the same QP with the notes' explicit PD torque
  ``tau(q_n, qd_n)`` (the baseline as the notes write it);
* ``mdp-kinetic`` (every dt) and ``pgm-kinetic`` (dt = 5, 50 ms), walk only: the same steps
  minimizing the plain kinetic energy ``1/2 qd+^T M qd+`` instead of the stable-PD effective metric
  ``1/2 qd+^T (M + h B diag(h Kp + Kd) B^T) qd+`` that every other method uses (see
  :class:`~contactmp.formulations.nmdp.NMDP`): with the plain metric the stance feet slip and the
  walking distance shrinks with dt, for NMDP and MDP alike;

plus, as an extra, the sagittal Solo12 (:func:`contactmp.models.urdf.solo12`, 2.5 kg) walking at
``dt = 10, 50 ms`` with ``pgm`` and ``mdp`` for ``T_SOLO12 = 3 s``. Every run starts standing at rest (``q_nominal``, feet on
the ground) and stops early when it explodes (:func:`case_studies._gait_metrics.exploded`: a
non-finite state, tilt > 80 deg, or the torso 0.5 m below / 2 m above its start).

Physical parameters (the contact polytope ``s_i = k min(phi_i - r, 0)^2 + relax``, ``r = 0``: the
spider's ``phi`` already subtracts the foot radius, Solo12's feet are points):

* spider: ``k = 2.5e7 N/m^2`` so that a quarter of the weight, ``m g / 4 = 245 N``, needs a
  penetration ``sqrt(245 / 2.5e7) = 3.1 mm`` (the polytope's height reaches the load a foot carries
  at a few mm); ``relax = 1 N`` (0.1 % of the weight: the force a foot may get at zero or positive
  gap, which keeps the polytope non-degenerate for PGM's implicit-function gradient; in the air it
  acts as a negligible damper); stable PD ``Kp = 2000 N m/rad``, ``Kd = 20 N m s/rad`` (the gait
  author's range Kp 1000-3000, Kd 10-30 for the 100 kg spider; the notes' Kp = 10, Kd = 0.1 cannot
  hold a 100 kg body up: a 10 N m/rad joint sags by radians under the ~100 N m knee load).
* Solo12: ``k = 1.5e6 N/m^2`` (``m g / 4 = 6.1 N`` at 2.0 mm), ``relax = 0.01 N``,
  ``Kp = 15``, ``Kd = 0.3`` (the recommended 10-20 and 0.1-0.5).

The static depths 3.1 and 2.0 mm are declared as the option ``design_depth``: the penetration the
physics verdict of every frame holds the run to follows from it
(:func:`~contactmp.formulations.nmdp.polytope_tolerances`).

Metrics per run (:func:`case_studies._gait_metrics.gait_metrics` on the torso ``x, z, pitch`` at the
frames): stable/exploded (+ reason and time), tilt max / RMS [deg], height periodicity, walking
distance, speed and linearity (R^2 of ``x(t)``), frames per second (frames / summed frame wall time),
mean outer iterations per frame (PGM accepted steps, IPOPT iterations, qpOASES iterations), the
smallest adaptive substep, failed frames (status not ``solved``), and the mean total normal force.
A run is also stopped after ``WALL_BUDGET_S`` (``METHOD_BUDGET_S`` for ZOPGM) of wall time (``budget_stopped``: ZOPGM on the spider
fails nearly every loaded frame down to ``h_min``: ~0.05 frames/s before its loop was compiled
(issue 18), a few frames/s since; why it fails is measured in ``benchmarks/nmdp_frame.py``).

Checks (``summary.json["checks"]``), per gait:

* *drift*: a run drifts when ``|d - d_ref| > 0.25 |d_ref| + 0.05 m`` (``d`` the walking distance,
  ``d_ref`` the same method's run at the smallest dt; the 5 cm floor keeps the jump's near-zero
  distances from counting) or its tilt exceeds 20 deg; ``mdp_fails_at_dt`` is the smallest dt at
  which MDP explodes or drifts (None: never in the sweep), ``mdp_explicit_fails_at_dt`` the same for
  the explicit-PD MDP;
* ``nmdp_stable_to_max_dt``: every NMDP run (per method) neither exploded nor drifted, with tilt max
  <= 10 deg ("small tilt") at every dt;
* ``nmdp_distance_ratio``: walking distance at the largest dt / at the smallest dt per NMDP method
  (the issue asks for it to be within 10 % of 1; None when the smallest-dt run moved less than
  5 cm, e.g. the jump, or only one dt ran).
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from contactmp.case_studies._study import StudyRun, markdown_table

DESCRIPTION = "NMDP vs linearized MDP: spider walk/jump at dt 5-50 ms (tilt, height, distance, fps)"

#: physical parameters per robot (module docstring)
PARAMS: dict[str, dict[str, float]] = {
    "spider": {"stiffness": 2.5e7, "relax": 1.0, "radius": 0.0, "kp": 2000.0, "kd": 20.0, "design_depth": 3.1e-3},
    "solo12": {"stiffness": 1.5e6, "relax": 0.01, "radius": 0.0, "kp": 15.0, "kd": 0.3, "design_depth": 2.0e-3},
}
METHODS = ("ipopt", "pgm", "zopgm", "mdp", "mdp-explicit")
NMDP_METHODS = ("ipopt", "pgm", "zopgm", "pgm-kinetic")
DTS_MS = (5, 10, 20, 30, 40, 50)
T_FULL, T_QUICK = 10.0, 2.0
#: Solo12's horizon in the full study: its PGM frames need 160-480 proximal steps (a 2.5 kg robot on
#: a stiff polytope is poorly conditioned), so 3 s (6 walking periods) keeps each run under ~15 min
T_SOLO12 = 3.0
DRIFT_REL, DRIFT_ABS, DRIFT_TILT_DEG, SMALL_TILT_DEG = 0.25, 0.05, 20.0, 10.0
#: a run stops (``budget_stopped``, metrics over the frames done) after this much wall time [s]
WALL_BUDGET_S = 1800.0
#: a tighter budget per method: ZOPGM on the stiff spider fails nearly every loaded frame down to
#: h_min (its projection diverges: benchmarks/nmdp_frame.py), so its runs are cut early and reported as
#: incomplete
METHOD_BUDGET_S: dict[str, float] = {"zopgm": 150.0}
#: per-method solver options: ZOPGM's derivative-free Jacobian misses ``2 k min(phi, 0) Jn`` of the
#: stiff polytope, its proximal search then fails; ``beta_max = 1e4`` makes it fail (and halve) fast
SOLVER_OPTIONS: dict[str, dict[str, Any]] = {"zopgm": {"beta_max": 1e4}}
#: method -> (registered formulation, its options): the NMDP by one of its solvers, or the MDP QP
FORMULATION_OF: dict[str, tuple[str, dict[str, Any]]] = {
    **{m: ("nmdp", {"method": m}) for m in ("ipopt", "pgm", "zopgm")},
    "mdp": ("mdp", {"pd": "stable"}), "mdp-explicit": ("mdp", {"pd": "explicit"}),
}


def grid(quick: bool) -> list[tuple[str, str, str, int, float]]:
    """Runs ``(robot, gait, method, dt_ms, T)`` of the full or the quick study."""
    if quick:
        items = [("spider", g, m, dt, T_QUICK) for g in ("walk", "jump") for dt in (10, 50)
                 for m in ("pgm", "mdp", "mdp-explicit")]
        items += [("spider", g, "ipopt", 50, T_QUICK) for g in ("walk", "jump")]
        return items
    items = [("spider", g, m, dt, T_FULL) for g in ("walk", "jump") for m in METHODS for dt in DTS_MS]
    items += [("spider", "walk", "mdp-kinetic", dt, T_FULL) for dt in DTS_MS]
    items += [("spider", "walk", "pgm-kinetic", dt, T_FULL) for dt in (5, 50)]
    items += [("solo12", "walk", m, dt, T_SOLO12) for m in ("pgm", "mdp") for dt in (10, 50)]
    return items


def record_key(item: tuple[str, str, str, int, float]) -> str:
    """The resume identity of one run."""
    robot, g, m, dt, T = item
    return f"{robot}/{g}/{m}/dt{dt}ms/T{T:g}"


def _system(robot: str) -> Any:
    if robot == "spider":
        from contactmp.models.legged import spider

        return spider()
    if robot == "solo12":
        from contactmp.models.urdf import solo12

        return solo12(planar=True)
    raise ValueError(f"unknown robot {robot!r}")


def _targets(robot: str, gait_name: str, system: Any) -> tuple[Any, float]:
    """``(targets(t) -> (q_d, qd_d), period)``; ``"stand"`` holds the standing joints."""
    if gait_name == "stand":
        import casadi as ca

        S = np.array(ca.evalf(system.B), dtype=float).T
        hold = (S @ system.q_nominal, np.zeros(S.shape[0]))
        return (lambda t: hold), 1.0
    from contactmp.models.gaits import gait

    g = gait(robot, gait_name)
    return g.targets, g.period


def run_item(item: tuple[str, str, str, int, float]) -> dict[str, Any]:
    """Simulate one run ``(robot, gait, method, dt_ms, T)`` and return its record: the metrics
    (module docstring) and the frame series ``t, x, z, pitch, fn_sum`` (total normal force [N])."""
    import casadi as ca

    from contactmp.case_studies._gait_metrics import EXPLODE_DROP, EXPLODE_RISE, EXPLODE_TILT, gait_metrics
    from contactmp.transcriptions.time_stepping import TimeStepping

    robot, gait_name, method, dt_ms, T = item
    system = _system(robot)
    targets, period = _targets(robot, gait_name, system)
    dt = dt_ms / 1000.0
    t0 = time.perf_counter()
    base, objective = (method[:-len("-kinetic")], "kinetic") if method.endswith("-kinetic") else (method, "effective")
    name, opts = FORMULATION_OF[base]
    if base in SOLVER_OPTIONS:
        opts = {**opts, "solver_options": SOLVER_OPTIONS[base]}
    sim = TimeStepping(system, dt, name, objective=objective, **opts, **PARAMS[robot])
    build_s = time.perf_counter() - t0
    q0 = np.array(system.q_nominal, dtype=float)
    z0 = q0[1]
    over = {"budget": False}
    budget = METHOD_BUDGET_S.get(method, WALL_BUDGET_S)

    def boom(t: float, q: np.ndarray, qd: np.ndarray) -> bool:
        if time.perf_counter() - t0 > budget:
            over["budget"] = True
            return True
        return bool(abs(q[2]) > EXPLODE_TILT or q[1] < z0 - EXPLODE_DROP or q[1] > z0 + EXPLODE_RISE)

    tr = sim.simulate(q0, np.zeros(system.n_v), n_steps=max(1, int(round(T / dt))), targets=targets, stop=boom)
    if over["budget"]:
        tr.stopped = f"wall-time budget {budget:g} s reached at t = {tr.t[-1]:.4g} s"
    x, z, pitch = tr.q[:, 0], tr.q[:, 1], tr.q[:, 2]
    met = gait_metrics(tr.t, x, z, pitch, period)
    fn = tr.forces[:, :, 0].sum(axis=1)
    solved = [s == "solved" for s in tr.status]
    mass = float(np.asarray(ca.evalf(ca.substitute(system.M, system.q, ca.DM(q0))))[0, 0])  # M_xx

    def r5(a: np.ndarray) -> list[float]:
        return [float(v) if math.isfinite(v) else None for v in np.round(np.asarray(a, dtype=float), 6)]

    return {
        "robot": robot, "gait": gait_name, "method": method, "dt_ms": dt_ms, "T": T,
        **met,
        "explode_time_s": float(tr.t[-1]) if (met["exploded"] or (tr.stopped and not over["budget"]))
        else None, "budget_stopped": over["budget"],
        "stopped": tr.stopped, "frames": len(tr.status), "failed_frames": tr.n_failed,
        "solved_fraction": float(np.mean(solved)) if solved else math.nan,
        "fps": tr.frames_per_second, "sim_time_s": float(np.sum(tr.time_s)), "build_s": build_s,
        "outer_mean": float(np.mean(tr.iterations)) if len(tr.status) else math.nan,
        "projections_mean": float(np.mean(tr.extra("projections"))) if len(tr.status) else math.nan,
        "h_smallest": float(np.min(tr.extra("h_smallest"))) if len(tr.status) else math.nan,
        "adaptive_frames": sum(len(r.extras["substeps"]) > 1 for r in tr.results),
        "fn_mean": float(np.nanmean(fn)) if fn.size else math.nan, "weight": mass * 9.81,
        "series": {"t": r5(tr.t), "x": r5(x), "z": r5(z), "pitch": r5(pitch), "fn_sum": r5(fn)},
    }


# ------------------------------------------------------------------------------------- checks
def _drifted(rec: dict[str, Any], ref: dict[str, Any] | None) -> bool:
    if rec["exploded"] or rec["stopped"]:
        return True
    if not (rec["tilt_max_deg"] <= DRIFT_TILT_DEG):
        return True
    if ref is None or ref is rec:
        return False
    return abs(rec["distance"] - ref["distance"]) > DRIFT_REL * abs(ref["distance"]) + DRIFT_ABS


def checks(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's checks (module docstring) per robot/gait, computed from the run records."""
    out: dict[str, Any] = {}
    for robot, g in sorted({(r["robot"], r["gait"]) for r in records}):
        rs = [r for r in records if (r["robot"], r["gait"]) == (robot, g)]
        res: dict[str, Any] = {}
        for m in sorted({r["method"] for r in rs}):
            mr = sorted((r for r in rs if r["method"] == m), key=lambda r: r["dt_ms"])
            ref = mr[0]
            status = {r["dt_ms"]: ("incomplete" if r.get("budget_stopped") else
                                   "exploded" if r["exploded"] or r["stopped"] else
                                   "drift" if _drifted(r, ref) else "ok") for r in mr}
            bad = [dt for dt, s in status.items() if s != "ok"]
            entry = {"status_by_dt": status, "fails_at_dt": min(bad) if bad else None,
                     "ref_dt_ms": ref["dt_ms"]}
            if m in NMDP_METHODS:
                entry["stable_small_tilt"] = not bad and all(r["tilt_max_deg"] <= SMALL_TILT_DEG for r in mr)
                big = mr[-1]
                entry["distance_ratio"] = (big["distance"] / ref["distance"]  # None: no walk to compare
                                           if len(mr) > 1 and abs(ref["distance"]) >= DRIFT_ABS else None)
                entry["distance_within_10pct"] = (None if entry["distance_ratio"] is None
                                                  else abs(entry["distance_ratio"] - 1.0) <= 0.10)
                amp_ref, amp_big = ref.get("height_amplitude"), big.get("height_amplitude")
                entry["height_amplitude_ratio"] = (amp_big / amp_ref if len(mr) > 1 and amp_ref and amp_big is not None
                                                   and abs(amp_ref) >= 0.01 else None)
            res[m] = entry
        out[f"{robot}/{g}"] = {
            "methods": res,
            "mdp_fails_at_dt": res.get("mdp", {}).get("fails_at_dt"),
            "mdp_explicit_fails_at_dt": res.get("mdp-explicit", {}).get("fails_at_dt"),
            "mdp_kinetic_fails_at_dt": res.get("mdp-kinetic", {}).get("fails_at_dt"),
            "nmdp_stable_to_max_dt": {m: e["stable_small_tilt"] for m, e in res.items() if m in NMDP_METHODS},
            "nmdp_distance_ratio": {m: e["distance_ratio"] for m, e in res.items() if m in NMDP_METHODS},
            "nmdp_height_amplitude_ratio": {m: e["height_amplitude_ratio"] for m, e in res.items()
                                            if m in NMDP_METHODS},
        }
    return out


# ------------------------------------------------------------------------------------- figures
def _figures(records: list[dict[str, Any]], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    for robot, g, m in sorted({(r["robot"], r["gait"], r["method"]) for r in records}):
        rs = sorted((r for r in records if (r["robot"], r["gait"], r["method"]) == (robot, g, m)),
                    key=lambda r: r["dt_ms"])
        fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
        for k, r in enumerate(rs):
            s = r["series"]
            t = np.array(s["t"], dtype=float)
            lab = f"dt {r['dt_ms']} ms" + (" (stopped)" if r["exploded"] or r["stopped"] else "")
            col = plt.cm.viridis(k / max(1, len(rs) - 1))
            axes[0].plot(t, np.degrees(np.array(s["pitch"], dtype=float)), color=col, lw=1, label=lab)
            axes[1].plot(t, np.array(s["z"], dtype=float), color=col, lw=1)
            axes[2].plot(t, np.array(s["x"], dtype=float) - float(s["x"][0]), color=col, lw=1)
        axes[0].set_ylabel("torso tilt (deg)")
        axes[1].set_ylabel("torso height z (m)")
        axes[2].set_ylabel("walking distance (m)")
        axes[2].set_xlabel("t (s)")
        axes[0].legend(fontsize=7, ncol=3)
        axes[0].set_title(f"{robot} {g}: {m}")
        for ax in axes:
            ax.grid(alpha=0.3)
        fig.tight_layout()
        name = f"{robot}_{g}_{m}.png"
        fig.savefig(out / name, dpi=100)
        plt.close(fig)
        names.append(name)
    return names


# ------------------------------------------------------------------------------------- the study
ROW_FIELDS = ("robot", "gait", "method", "dt_ms", "exploded", "reason", "explode_time_s", "tilt_max_deg",
              "tilt_rms_deg", "height_periodicity", "height_amplitude", "distance", "speed", "linearity", "fps",
              "outer_mean", "h_smallest", "failed_frames", "frames", "fn_mean", "weight")


def run(out: Path, quick: bool = False, seed: int = 0, workers: int | None = None,
        scheduler: str | None = None, items: list[tuple[str, str, str, int, float]] | None = None
        ) -> dict[str, Any]:
    """Run the study into ``out`` (resumes from ``out/records.jsonl``; runs through
    :func:`contactmp.parallel.run_tasks`: ``workers=0`` in this process, None a local Dask cluster,
    ``scheduler`` an existing one). ``items`` overrides the grid (tests)."""
    from contactmp.parallel import run_tasks

    study = StudyRun("nmdp-timestep", Path(out), quick, seed)
    items = grid(quick) if items is None else list(items)
    report = run_tasks(run_item, items, keys=[record_key(it) for it in items], store_path=study.store,
                       workers=workers, scheduler=scheduler, description=study.name)
    records = report.records()
    rows = [{k: r.get(k) for k in ROW_FIELDS} for r in records]
    chk = checks(records)
    figures = _figures(records, study.out)
    headers = ["robot", "gait", "method", "dt ms", "exploded", "tilt max", "tilt rms", "z period.",
               "z swing", "distance", "linearity", "fps", "outer/frame", "h smallest", "failed"]
    table = markdown_table(headers, [[r["robot"], r["gait"], r["method"], r["dt_ms"],
                                      (f"yes @ {r['explode_time_s']:.2f} s" if r["exploded"] else "no"),
                                      r["tilt_max_deg"], r["tilt_rms_deg"], r["height_periodicity"],
                                      r["height_amplitude"], r["distance"], r["linearity"], r["fps"], r["outer_mean"],
                                      f"{r['h_smallest']:.3g}", r["failed_frames"]] for r in rows])
    lines = ["# nmdp-timestep" + (" (quick)" if quick else ""), "",
             "Spider (100 kg) walk/jump by stable PD; NMDP (ipopt, pgm, zopgm) vs linearized MDP (mdp).",
             f"Parameters: {PARAMS}.", "",
             f"Drift: |d - d_ref| > {DRIFT_REL:g} |d_ref| + {DRIFT_ABS:g} m (d_ref: same method at the "
             f"smallest dt) or tilt > {DRIFT_TILT_DEG:g} deg; small tilt: <= {SMALL_TILT_DEG:g} deg.", "",
             table, "", "## checks", ""]
    for k, v in chk.items():
        lines.append(f"- {k}: MDP fails (explodes or drifts) first at dt = {v['mdp_fails_at_dt']} ms "
                     f"(explicit-PD MDP: {v['mdp_explicit_fails_at_dt']} ms; plain-kinetic MDP: "
                     f"{v['mdp_kinetic_fails_at_dt']} ms); "
                     f"NMDP stable with small tilt at every dt: {v['nmdp_stable_to_max_dt']}; "
                     f"distance(max dt) / distance(min dt): {v['nmdp_distance_ratio']}; "
                     f"height swing (max dt) / (min dt): {v['nmdp_height_amplitude_ratio']}")
    study.write_table("\n".join(lines))
    headline = "; ".join(f"{k}: MDP fails at {v['mdp_fails_at_dt']} ms, NMDP stable "
                         f"{v['nmdp_stable_to_max_dt']}" for k, v in chk.items())
    summary = {"headline": headline, "rows": rows, "checks": chk, "figures": figures,
               "params": PARAMS, "drift_definition": {"rel": DRIFT_REL, "abs_m": DRIFT_ABS,
                                                      "tilt_deg": DRIFT_TILT_DEG},
               "small_tilt_deg": SMALL_TILT_DEG, "failed": dict(report.failed)}
    study.write_summary(summary)
    return summary
