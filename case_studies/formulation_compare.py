"""Case study ``formulation-compare`` (issue 17): every registered formulation, with every solver
that steps it, on the same scenes, judged by one independent checker -- ContactBench's comparison
(Le Lidec et al., "Contact models in robotics: a comparative analysis", T-RO 2024) for the rigid
pyramid LCP, the Coulomb-cone NCP, Drumwright's compliant cone QP, Pan and Hauser's NMDP and the
linearized MDP, all on models declared once.

Formulations join through the step protocol: the study runs :func:`contactmp.formulations.registered`
(a user's registered formulation too) through :class:`~contactmp.transcriptions.time_stepping.TimeStepping`
and, per formulation, every solver :meth:`~contactmp.formulations.base.Formulation.step_solvers`
lists. The soft models (compliant; NMDP / MDP polytopes) get gains from each scene's load so that
they sink the same design depth (1 mm) at rest (:func:`_compare_scenes.formulation_options`).

Scenes (:mod:`contactmp.case_studies._compare_scenes`; symbolic systems in minimal coordinates and
two floating bases with a quaternion, which every formulation steps: the polytope formulations on
their chart ``q_{k+1} = R(q_k + G(q_k) xi)``, :class:`~contactmp.formulations.nmdp.Chart`):

* ``ball-slide-*``, ``cube-slide-*``: a solid ball (``ball_3d``) and a cube (``cube_3d``, Euler
  angles) sliding at 1 m/s in 8 directions (15 + 45 j deg); closed forms: the ball rolls at 5/7 v0 in
  the start's direction after ``2 v0 / (7 mu g)``, the cube stops after ``v0^2 / (2 mu g)``;
  ``ball-roll``: rolling without slip keeps its speed;
* ``*-incline-below/above``: at rest on a slope of 0.95 / 1.05 times the slip angle (``atan(mu)`` for the
  cube, Coulomb's exact threshold; ``atan(7/2 mu)`` for the ball's contact); ``incline_threshold``
  locates the cone's threshold by bisection (to 1e-9 rad);
* ``push-*`` (one step): cone-vs-pyramid's Figure 3 push at ``2 mu m g``, the friction's bias against
  the slip (``pyramid-k8/16/32`` join here);
* ``stack-3``, ``stack-10``: boxes at rest (redundant contacts, non-unique forces);
* ``painleve-jam`` (``theta = atan 2``, ``mu = 1.5 > 4/3``, the end sliding back: no
  acceleration-level solution) and ``painleve-spin`` (spinning: two);
* ``solo12-stand``, ``solo12-drop`` (sagittal Solo12, stable PD on fixed joint targets, dropped
  10 cm); ``grasp``: a box squeezed between two fingers (``2 mu F = 2 m g``);
* ``box3d-slide-*``, ``box3d-incline-below/above``, ``box3d-rest``: the quaternion box (``box_3d``,
  ``qdot = G(q) v``) as the cube's scenes (its slope is a constant input turning gravity into the
  slope's, :func:`_compare_scenes.box3d_incline_input`), judged by the same closed forms;
* ``solo12-3d-stand``, ``solo12-3d-drop``: the 3D Solo12 (floating base, 12 joints) under the
  same stable PD on its joint angles ``q[7:19]``, judged as the sagittal one (rigid-foot sag 3.94 mm).

Metrics per run: :func:`~contactmp.transcriptions.physics_check.check_trajectory` (penetration,
Signorini, cone, complementarity, MDP gap, energy, gap drift, statuses, time per step) and the scene's
own physics. Sweep: ``h = 1, 5, 10, 20, 50 ms`` on a subset of scenes. Outputs: ``records.jsonl``
(resumable), ``table.md``, ``summary.json``, ``heatmap.png`` (formulations x metrics), trajectory
plots ``paths.png``, ``histories.png`` and ``h_sweep.png`` (log-log).
"""
from __future__ import annotations

import functools
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from contactmp.case_studies import _compare_scenes as cs
from contactmp.case_studies._figures import pyplot, save
from contactmp.case_studies._study import StudyRun, markdown_table

DESCRIPTION = ("every formulation x solver on the same scenes (ball, cube, incline, stacks, Painleve, Solo12, grasp, "
               "quaternion box, 3D Solo12)")

#: the main step [s]
H_MAIN = 0.01
#: the step sizes of the sweep [s] (full, quick: without 1 ms, whose NMDP runs take a minute each)
HS_SWEEP = (0.001, 0.005, 0.01, 0.02, 0.05)
HS_SWEEP_QUICK = (0.005, 0.01, 0.02, 0.05)
#: scenes of the sweep (full, quick)
SWEEP_SCENES = ("cube-slide-15", "ball-slide-15", "cube-incline-above", "stack-3", "painleve-jam", "solo12-drop",
                "grasp")
SWEEP_SCENES_QUICK = ("cube-slide-15", "cube-incline-above", "stack-3", "grasp")
#: the pyramid's facet counts of the push scene
PUSH_FACETS = (4, 8, 16, 32)
#: quick form: two of the eight directions; every solver only on these scenes
QUICK_DIRECTIONS = (15.0, 60.0)
ALL_SOLVER_SCENES_QUICK = ("cube-slide-15", "stack-3")
#: the soft formulations and their design depths [m] in the stiffness sweep (cube at rest)
SOFT = ("compliant", "nmdp", "mdp")
DEPTHS = (3e-4, 1e-3, 3e-3)
#: wall-clock limit of one run [s] (the run stops and says so)
RUN_TIME_LIMIT = 300.0
#: the metrics of the heat map (physics_check's summary keys), in order
HEAT_METRICS = ("penetration", "signorini", "cone", "complementarity", "mdp_gap", "energy_gain", "gap_drift")
#: contact-solver tolerance of every step
TOL = 1e-10
#: a sliding body keeps its direction to this [deg] (Coulomb's cone: to ~1e-9 deg here)
DIRECTION_TOL_DEG = 0.01


# --------------------------------------------------------------------------- configurations
def configurations(family: str = "") -> dict[str, tuple[str, dict[str, Any]]]:
    """Label -> (registered formulation, fixed options): every registered formulation with its
    default options; for the push scene also the pyramid with 8, 16 and 32 facets; for the rest
    scene (the stiffness sweep) the soft formulations at the design depths :data:`DEPTHS`."""
    from contactmp.formulations import registered

    out = {name: (name, {}) for name in registered()}
    if family == "push" and "pyramid" in out:
        out.update({f"pyramid-k{k}": ("pyramid", {"facets": k}) for k in PUSH_FACETS if k != 4})
    if family == "rest":  # the soft models at three design depths (the stiffness sweep)
        out = {f"{name}-d{1e3 * d:g}mm": (name, {"design_depth": d}) for name in SOFT for d in DEPTHS}
    return out


def solvers_of(formulation: str, options: dict[str, Any]) -> dict[str, Any]:
    """The formulation's time-step solvers (:meth:`Formulation.step_solvers`)."""
    from contactmp.formulations.base import formulation as make

    return make(formulation, **{k: v for k, v in options.items() if k == "facets"}).step_solvers()


def default_solver(formulation: str, options: dict[str, Any]) -> str:
    """The label of the formulation's default solver (the first of :func:`solvers_of`)."""
    return next(iter(solvers_of(formulation, options)))


@functools.lru_cache(maxsize=1)
def _default_labels() -> dict[str, str]:
    """Configuration label -> its default solver's label, for every family's configurations (built
    once: each lookup builds a formulation and lists its solvers)."""
    return {c: default_solver(form, fixed) for fam in ("", "push", "rest")
            for c, (form, fixed) in configurations(fam).items()}


def is_default(rec: dict[str, Any]) -> bool:
    """Whether run ``rec`` used its configuration's default solver."""
    return rec["solver"] == _default_labels()[rec["config"]]


# --------------------------------------------------------------------------------- one run
def run_case(item: tuple[str, str, str, float]) -> dict[str, Any]:
    """One run: scene ``item[0]`` with configuration ``item[1]``, solver label ``item[2]`` and step
    ``item[3]``; the independent physics check, the scene's own physics and a compact trace."""
    from contactmp.transcriptions.physics_check import check_trajectory
    from contactmp.transcriptions.time_stepping import TimeStepping

    scene_name, config, solver_label, h = item
    sc = cs.push_scene(float(scene_name.split("-", 1)[1])) if scene_name.startswith("push-") else cs.scene(scene_name)
    form, fixed = configurations(sc.family)[config]
    solver = solvers_of(form, fixed)[solver_label]
    s = sc.build()
    fixed = dict(fixed)
    depth = fixed.pop("design_depth", cs.DESIGN_DEPTH)
    opts = {**cs.formulation_options(form, sc, depth), **fixed}
    n = max(1, int(round(sc.T / h)))
    rec: dict[str, Any] = {"scene": sc.name, "family": sc.family, "config": config, "formulation": form,
                           "solver": solver_label, "h": h, "steps_asked": n, "options": opts, "passive": sc.passive,
                           "design_depth": depth}
    ts = TimeStepping(s, h, form, solver=solver, tol=TOL, pd_gains=sc.pd, **opts)
    t0 = time.perf_counter()
    tr = ts.simulate(np.array(sc.q0), np.array(sc.v0), u=None if sc.u is None else np.array(sc.u), n_steps=n,
                     targets=sc.targets(), stop=lambda t, q, v: time.perf_counter() - t0 > RUN_TIME_LIMIT)
    rec["wall_s"] = time.perf_counter() - t0
    chk = check_trajectory(s, tr)
    rec.update({"steps": tr.n_steps, "stopped": tr.stopped, "status_counts": chk.status_counts,
                "failed_steps": tr.n_failed, "metrics": chk.summary(), "solver_counts": tr.solver_counts})
    rec["physics"] = cs.PHYSICS[sc.physics](sc, tr) if tr.n_steps else {}
    rec["trace"] = _trace(sc, tr)
    return rec


def _trace(sc: cs.Scene, tr: Any, points: int = 120) -> dict[str, list[float]]:
    """A few coordinates over time for the trajectory plots (at most ``points`` samples)."""
    idx = np.unique(np.linspace(0, tr.n_steps, min(points, tr.n_steps + 1)).round().astype(int))
    cols = {"ball": (0, 1), "cube": (0, 1), "stack": (3 * int(sc.info.get("n", 1)) - 2,), "rod": (0, 1),
            "grasp": (1,), "solo12": (1,), "box3d": (0, 1), "solo12_3d": (2,)}[sc.system]
    out = {"t": tr.t[idx].tolist()}
    for c in cols:
        out[f"q{c}"] = tr.q[idx, c].tolist()
    return out


# ---------------------------------------------------------------------------------- the plan
def plan(quick: bool) -> list[tuple[str, str, str, float]]:
    """Every run ``(scene, configuration, solver label, h)`` of the study."""
    items: list[tuple[str, str, str, float]] = []
    for sc in cs.scenes():
        if quick and sc.family.endswith("slide") and sc.info["direction_deg"] not in QUICK_DIRECTIONS:
            continue
        if sc.family == "rest":  # the stiffness sweep: every design depth at every h
            items += [(sc.name, config, _default_labels()[config], h) for config in configurations("rest")
                      for h in (HS_SWEEP_QUICK if quick else HS_SWEEP)]
            continue
        for config, (form, fixed) in configurations(sc.family).items():
            labels = list(solvers_of(form, fixed))
            if quick and sc.name not in ALL_SOLVER_SCENES_QUICK:
                labels = labels[:1]
            items += [(sc.name, config, lab, H_MAIN) for lab in labels]
    thetas = [5.0 * i for i in range(19)] if quick else [2.5 * i for i in range(37)]
    for th in thetas:
        for config in configurations("push"):
            items.append((f"push-{th:g}", config, _default_labels()[config], H_MAIN))
    for name in SWEEP_SCENES_QUICK if quick else SWEEP_SCENES:
        for config in configurations():
            items += [(name, config, _default_labels()[config], h) for h in (HS_SWEEP_QUICK if quick else HS_SWEEP)
                      if h != H_MAIN]
    return items


def key_of(item: tuple[str, str, str, float]) -> str:
    """The resume key of a run."""
    return f"{item[0]}|{item[1]}|{item[2]}|h={item[3]:g}"


# -------------------------------------------------------------------------- incline threshold
def incline_threshold(formulation: str = "cone", mu: float = cs.MU, xtol: float = 1e-9, h: float = H_MAIN,
                      **options: Any) -> float:
    """The slope [rad] above which the cube at rest on the incline slides after one step of
    ``formulation`` (bisection down to ``xtol`` on its own answers). Sliding is judged by the step's
    ``v_x > 1e-12`` m/s: a slope ``d`` rad above the threshold gives ``v_x = h g (sin a - mu cos a)
    ~ h g d / cos(a)``, 1.1e-7 m/s for ``d = 1e-6`` at ``h = 0.01``, while a step solved to 1e-13
    leaves a sticking cube below 1e-13 m/s."""
    from contactmp.models.systems import cube_3d
    from contactmp.transcriptions.time_stepping import TimeStepping

    def slides(slope: float) -> bool:
        s = cube_3d(mu=mu, size=0.2, slope=slope)
        out = TimeStepping(s, h, formulation, tol=1e-13, **options).step(s.q_nominal, np.zeros(6))
        return float(out.v[0]) > 1e-12

    lo, hi = 0.9 * math.atan(mu), 1.1 * math.atan(mu)
    while hi - lo > xtol:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if slides(mid) else (mid, hi)
    return 0.5 * (lo + hi)


# ------------------------------------------------------------------------------------ verdicts
def verdict(rec: dict[str, Any]) -> tuple[bool | None, str]:
    """Whether run ``rec`` gets its scene's physics right, and the number it was judged by."""
    p, fam = rec.get("physics", {}), rec["family"]
    if not p:
        return False, "no step"
    if rec["failed_steps"] or rec["steps"] < rec["steps_asked"]:
        return False, f"{rec['failed_steps']} failed steps, {rec['steps']}/{rec['steps_asked']} taken"
    if fam == "ball-slide":
        ok = p["speed_rel_err"] <= 0.01 and p["direction_err_deg"] <= DIRECTION_TOL_DEG
        return ok, f"speed {p['speed_rel_err']:.1e}, dir {p['direction_err_deg']:.2f} deg"
    if fam in ("cube-slide", "box3d-slide"):
        ok = p["distance_rel_err"] <= 0.01 and p["direction_err_deg"] <= DIRECTION_TOL_DEG
        return ok, f"dist {p['distance_rel_err']:.1e}, dir {p['direction_err_deg']:.2f} deg"
    if fam == "ball-roll":
        return p["speed_rel_err"] <= 1e-3 and p["max_slip"] <= 1e-6, f"slip {p['max_slip']:.1e}"
    if fam == "box3d":  # the quaternion box: judged as the cube's incline and rest
        fam = "incline" if rec["scene"].startswith("box3d-incline") else "rest"
    if fam == "incline":
        if p["sticks_expected"]:
            return p["slip_speed"] <= 1e-6, f"slip {p['slip_speed']:.1e} m/s"
        return p["accel_err_rel"] <= 0.01, f"accel err {p['accel_err_rel']:.1e}"
    if fam == "stack":
        return p["max_horizontal_drift"] <= 1e-6 and p["max_tilt_deg"] <= 1e-3, \
            f"drift {p['max_horizontal_drift']:.1e} m, sink {p['top_sink']:.1e} m"
    if fam == "painleve":
        gain = rec["metrics"]["energy_gain"]
        return gain <= 1e-9, f"p_n(1) {p['first_p_n']:.3f} N s, gain {gain:.1e} J"
    if fam in ("solo12", "solo12-3d"):
        # the joints sag 3.9 mm under the PD gains with rigid feet (pyramid and cone agree to 1e-12;
        # the 3D Solo12 too: 3.938 mm); a soft foot may add two design depths
        ok = bool(p["finite"]) and abs(p["final_height_err"]) <= 3.9e-3 + 2 * cs.DESIGN_DEPTH \
            and p["max_loaded_foot_slip"] <= 1e-3
        return ok, f"sag {p['final_height_err']:.1e} m, foot slip {p['max_loaded_foot_slip']:.1e}"
    if fam == "grasp":
        return p["box_slip"] <= 1e-6, f"slip {p['box_slip']:.1e} m"
    if fam == "push":
        return p["bias_deg"] <= 0.01, f"bias {p['bias_deg']:.2f} deg"
    if fam == "rest":
        ratio = p["final_sink"] / rec["design_depth"]
        return ratio <= 1.5 and p["final_speed"] <= 1e-6, f"sink {ratio:.2f} design depths"
    return None, ""


# --------------------------------------------------------------------------------- reporting
def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if isinstance(v, float):
        return "0" if v == 0 else f"{v:.1e}" if (abs(v) < 1e-2 or abs(v) >= 1e4) else f"{v:.3g}"
    return str(v)


def heat_values(records: list[dict[str, Any]], configs: list[str], reduce: str = "max") -> dict[str, dict[str, float]]:
    """Formulation -> metric -> the largest (``reduce="max"``) or median (``"median"``) over the
    main-step, default-solver runs of every scene of each run's largest value (push scenes excluded:
    one step; ``energy_gain`` over the passive scenes only, the others are driven), plus
    ``failed_share`` (failed steps / steps) and ``ms_per_step`` (median time per step)."""
    agg = {"max": np.max, "median": np.median}[reduce]
    out: dict[str, dict[str, float]] = {}
    for c in configs:
        rs = [r for r in records if r["config"] == c and r["h"] == H_MAIN and r["family"] != "push"
              and is_default(r)]
        if not rs:
            continue
        row = {}
        for m in HEAT_METRICS:
            vals = [r["metrics"].get(m, 0.0) for r in rs if m != "energy_gain" or r["passive"]]
            row[m] = float(agg(vals)) if vals else math.nan
        row["failed_share"] = sum(r["failed_steps"] for r in rs) / max(1, sum(r["steps"] for r in rs))
        row["ms_per_step"] = 1e3 * float(np.median([r["metrics"]["time_per_step_s"] for r in rs]))
        out[c] = row
    return out


def _heatmap(panels: dict[str, dict[str, dict[str, float]]], path: Path) -> None:
    plt = pyplot()

    cols = list(HEAT_METRICS) + ["failed_share", "ms_per_step"]
    fig, axes = plt.subplots(1, len(panels), figsize=(len(panels) * (1.2 * len(cols) + 2), 4.2))
    for ax, (title, values) in zip(np.atleast_1d(axes), panels.items()):
        rows = list(values)
        data = np.array([[values[r][c] for c in cols] for r in rows], dtype=float)
        logd = np.log10(np.maximum(np.abs(data), 1e-16))
        im = ax.imshow(logd, cmap="viridis", aspect="auto", vmin=-16, vmax=1)
        ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right")
        ax.set_yticks(range(len(rows)), rows)
        for i in range(len(rows)):
            for j in range(len(cols)):
                ax.text(j, i, _fmt(float(data[i, j])), ha="center", va="center", fontsize=7,
                        color="w" if logd[i, j] < -6 else "k")
        ax.set_title(f"{title} over the scenes (h = {H_MAIN * 1e3:g} ms, default solvers)")
        fig.colorbar(im, ax=ax, label="log10")
    save(fig, path)


def _paths_figure(records: list[dict[str, Any]], path: Path) -> None:
    plt = pyplot()

    fams = ("ball-slide", "cube-slide")
    configs = sorted({r["config"] for r in records if r["family"] in fams})
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.5))
    for ax, fam in zip(axes, fams):
        for i, c in enumerate(configs):
            rs = [r for r in records if r["family"] == fam and r["config"] == c and r["h"] == H_MAIN
                  and is_default(r)]
            for j, r in enumerate(rs):
                ax.plot(r["trace"]["q0"], r["trace"]["q1"], color=f"C{i}", lw=1, label=c if j == 0 else None)
        for deg in cs.DIRECTIONS_DEG:
            a = math.radians(deg)
            ax.plot([0, 0.25 * math.cos(a)], [0, 0.25 * math.sin(a)], "k:", lw=0.5)
        ax.set(aspect="equal", title=f"{fam}: paths (dotted: start directions)", xlabel="x [m]", ylabel="y [m]")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    save(fig, path)


def _histories_figure(records: list[dict[str, Any]], path: Path) -> None:
    plt = pyplot()

    panels = [("stack-10", "q28", "stack-10: top box height [m]"), ("solo12-drop", "q1", "solo12-drop: torso height [m]"),
              ("grasp", "q1", "grasp: box height [m]"), ("painleve-jam", "q0", "painleve-jam: rod center x [m]")]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4))
    for ax, (name, col, title) in zip(axes, panels):
        for i, r in enumerate(sorted((r for r in records if r["scene"] == name and r["h"] == H_MAIN
                                      and is_default(r)),
                                     key=lambda r: r["config"])):
            if col in r["trace"]:
                ax.plot(r["trace"]["t"], r["trace"][col], color=f"C{i}", label=r["config"])
        ax.set(title=title, xlabel="t [s]")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    save(fig, path)


#: the sweep's measured error per scene (a key of the scene's physics, or of the checker's metrics)
def _ball_distance_err(r: dict[str, Any]) -> float:
    """The sliding ball's distance at the run's end (its trace's last point) against the continuous
    closed form :func:`_compare_scenes.ball_distance`."""
    tr = r["trace"]
    d = math.hypot(tr["q0"][-1] - tr["q0"][0], tr["q1"][-1] - tr["q1"][0])
    return abs(d / cs.ball_distance(tr["t"][-1]) - 1.0)


#: the sweep's measured error per scene: (label, function of a record)
SWEEP_ERROR: dict[str, tuple[str, Any]] = {
    "cube-slide-15": ("distance vs v0^2/(2 mu g)", lambda r: r["physics"]["distance_rel_err_continuous"]),
    "ball-slide-15": ("distance vs closed form", _ball_distance_err),
    "cube-incline-above": ("acceleration error", lambda r: r["physics"]["accel_err_rel"]),
    "stack-3": ("top box sink [m]", lambda r: r["physics"]["top_sink"]),
    "painleve-jam": ("first normal impulse [N s]", lambda r: r["physics"]["first_p_n"]),
    "solo12-drop": ("penetration [m]", lambda r: r["metrics"]["penetration"]),
    "grasp": ("box slip [m]", lambda r: r["physics"]["box_slip"]),
}


def _sweep_value(r: dict[str, Any]) -> float:
    try:
        v = SWEEP_ERROR[r["scene"]][1](r)
    except (KeyError, IndexError):  # a run without a step
        return math.nan
    return float(v) if v is not None else math.nan


def _sweep_figure(records: list[dict[str, Any]], scenes: tuple[str, ...], path: Path) -> None:
    plt = pyplot()

    fig, axes = plt.subplots(1, len(scenes), figsize=(4.3 * len(scenes), 4))
    for ax, name in zip(np.atleast_1d(axes), scenes):
        for i, c in enumerate(configurations()):
            rs = sorted((r for r in records if r["scene"] == name and r["config"] == c
                         and is_default(r)), key=lambda r: r["h"])
            hs = [r["h"] for r in rs]
            ys = [max(_sweep_value(r), 1e-17) if r["steps"] == r["steps_asked"] else math.nan for r in rs]
            ax.loglog(hs, ys, "o-", color=f"C{i}", label=c)
        ax.set(title=f"{name}: {SWEEP_ERROR[name][0]}", xlabel="h [s]")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, path)


def _rest_figure(records: list[dict[str, Any]], path: Path) -> None:
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, name in enumerate(SOFT):
        for j, d in enumerate(DEPTHS):
            rs = sorted((r for r in records if r["family"] == "rest" and r["formulation"] == name
                         and r["design_depth"] == d), key=lambda r: r["h"])
            ax.loglog([r["h"] for r in rs], [r["physics"]["final_sink"] / d if r["physics"] else math.nan for r in rs],
                      marker="o", color=f"C{i}", ls=("-", "--", ":")[j], label=f"{name}, d = {1e3 * d:g} mm")
    ax.set(xlabel="h [s]", ylabel="final sink / design depth", title="cube set on the plane: the soft models' static depth")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    save(fig, path)


def slope(hs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ``log y`` against ``log h`` over the finite positive points (NaN with
    fewer than two)."""
    pts = [(math.log(h), math.log(y)) for h, y in zip(hs, ys) if y is not None and math.isfinite(y) and y > 0]
    if len(pts) < 2:
        return math.nan
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def report(recs: list[dict[str, Any]], quick: bool, planned: int, out: Path) -> tuple[list[str], dict[str, Any]]:
    """The markdown report of the records ``recs`` (heat maps, physics right, solvers, a table per
    scene family, the step-size sweep, the soft models at rest, the push bias) and its headline
    numbers; writes the figures into ``out``."""
    configs = list(configurations("push"))
    heat = heat_values(recs, list(configurations()))
    heat_median = heat_values(recs, list(configurations()), "median")
    if heat:
        _heatmap({"worst": heat, "median": heat_median}, out / "heatmap.png")
    if any(r["family"].endswith("slide") for r in recs):
        _paths_figure(recs, out / "paths.png")
    _histories_figure(recs, out / "histories.png")
    sweep_scenes = tuple(n for n in (SWEEP_SCENES_QUICK if quick else SWEEP_SCENES) if any(r["scene"] == n for r in recs))
    if sweep_scenes:
        _sweep_figure(recs, sweep_scenes, out / "h_sweep.png")

    md = ["# formulation-compare", "",
          f"{len(recs)} of {planned} runs; h = {H_MAIN * 1e3:g} ms unless said; every metric from the trajectory "
          "alone (physics_check); soft models sink 1 mm under each scene's load.", ""]
    for title, values in (("worst", heat), ("median", heat_median)):
        md += [f"## Heat map: {title} over the scenes (default solvers)", "",
               markdown_table(["formulation"] + list(HEAT_METRICS) + ["failed share", "ms/step"],
                              [[c] + [_fmt(v[m]) for m in HEAT_METRICS] + [_fmt(v["failed_share"]), _fmt(v["ms_per_step"])]
                               for c, v in values.items()])]
    per_scene: dict[str, dict[str, Any]] = {}
    scene_md: list[str] = []
    for fam in dict.fromkeys(r["family"] for r in recs if r["family"] not in ("push", "rest")):
        rs = [r for r in recs if r["family"] == fam and r["h"] == H_MAIN]
        rows = []
        for r in sorted(rs, key=lambda r: (r["scene"], configs.index(r["config"]) if r["config"] in configs else 99, r["solver"])):
            ok, why = verdict(r)
            m = r["metrics"]
            rows.append([r["scene"], r["config"], r["solver"], f"{r['steps'] - r['failed_steps']}/{r['steps_asked']}",
                         _fmt(m.get("penetration")), _fmt(m.get("signorini")), _fmt(m.get("cone")),
                         _fmt(m.get("complementarity")), _fmt(m.get("mdp_gap")), _fmt(m.get("energy_gain")),
                         _fmt(1e3 * m["time_per_step_s"]), "yes" if ok else "no", why])
            if is_default(r):
                per_scene.setdefault(fam, {}).setdefault(r["config"], []).append(bool(ok))
        scene_md += [f"## {fam}", "", markdown_table(
            ["scene", "formulation", "solver", "solved steps", "penetration", "Signorini", "cone", "complementarity",
             "MDP gap", "energy gain", "ms/step", "physics right", "by"], rows)]
    plain = list(configurations())
    md += ["## Physics right (runs whose scene physics holds / runs; default solvers, h = 10 ms)", "",
           markdown_table(["family"] + plain, [[fam] + [f"{sum(d[c])}/{len(d[c])}" if c in d else "-" for c in plain]
                                                for fam, d in per_scene.items()])]
    md += ["## Solvers (every run at h = 10 ms)", "", markdown_table(
        ["formulation", "solver", "runs", "solved steps", "median ms/step", "physics right"],
        [[c, lab, len(rs), f"{sum(r['steps'] - r['failed_steps'] for r in rs)}/{sum(r['steps_asked'] for r in rs)}",
          _fmt(1e3 * float(np.median([r["metrics"]["time_per_step_s"] for r in rs]))),
          f"{sum(bool(verdict(r)[0]) for r in rs)}/{len(rs)}"]
         for c in plain for lab in solvers_of(*configurations()[c])
         for rs in [[r for r in recs if r["config"] == c and r["solver"] == lab and r["h"] == H_MAIN
                     and r["family"] != "push"]] if rs])]
    md += scene_md
    sweep_rows, sweep_slopes = [], {}
    hs_run = HS_SWEEP_QUICK if quick else HS_SWEEP
    for name in sweep_scenes:
        for c in configurations():
            rs = sorted((r for r in recs if r["scene"] == name and r["config"] == c
                         and is_default(r)), key=lambda r: r["h"])
            if not rs:
                continue
            by_h = {r["h"]: r for r in rs}
            ys = [_sweep_value(by_h[h]) if h in by_h and by_h[h]["steps"] == by_h[h]["steps_asked"]
                  and not by_h[h]["failed_steps"] else math.nan for h in hs_run]
            sl = slope(list(hs_run), ys)
            sweep_slopes[f"{name}|{c}"] = sl
            sweep_rows.append([name, c] + [_fmt(y) for y in ys] + [_fmt(sl)])
    if sweep_rows:
        md += ["## Step-size sweep (error against h; '-': the run failed a step or stopped)", "",
               markdown_table(["scene", "formulation"] + [f"h = {h * 1e3:g} ms" for h in hs_run] + ["log-log slope"],
                              sweep_rows)]
    rest = [r for r in recs if r["family"] == "rest"]
    rest_rows = {}
    if rest:
        _rest_figure(rest, out / "soft_sink.png")
        for c in configurations("rest"):
            by_h = {r["h"]: r for r in rest if r["config"] == c}
            rest_rows[c] = {f"{h:g}": (by_h[h]["physics"]["final_sink"] / by_h[h]["design_depth"]
                                       if h in by_h and by_h[h]["physics"] else None) for h in hs_run}
        md += ["## Soft models at rest: final sink / design depth (cube set on the plane, 0.3 s)", "",
               markdown_table(["formulation, design depth"] + [f"h = {h * 1e3:g} ms" for h in hs_run],
                              [[c] + [_fmt(v) for v in row.values()] for c, row in rest_rows.items()])]
    push = {c: max((r["physics"].get("bias_deg", 0.0) for r in recs if r["family"] == "push" and r["config"] == c),
                   default=math.nan) for c in configs}
    push30 = {c: next((r["physics"].get("bias_deg") for r in recs if r["scene"] == "push-30" and r["config"] == c), None)
              for c in configs}
    md += ["## Push bias (cone-vs-pyramid's Figure 3 scene, one step, ratio 2: friction against the slip)", "",
           markdown_table(["formulation", "max over the theta grid [deg]", "at theta = 30 deg"],
                          [[c, f"{v:.2f}", _fmt(push30[c])] for c, v in push.items()])]
    return md, {"heat_map": heat, "heat_map_median": heat_median, "physics_right": per_scene,
                "soft_sink_ratio": rest_rows, "push_bias_max_deg": push, "sweep_slopes": sweep_slopes}


# ------------------------------------------------------------------------------------------ run
def run(out: Path, quick: bool = False, seed: int = 0, workers: int | None = None, scheduler: str | None = None,
        time_limit: float | None = None, items: list[tuple[str, str, str, float]] | None = None) -> dict[str, Any]:
    """Run the study into ``out`` (resumes from ``out/records.jsonl``). ``workers``, ``scheduler`` as in
    :func:`contactmp.parallel.run_tasks` (default 2 processes; 0 in this process); ``time_limit``
    [s]: start no new run after it (the rest resumes later); ``items`` overrides the plan (tests).
    ``seed`` is recorded only (the study is deterministic)."""
    from contactmp import parallel

    study = StudyRun("formulation-compare", Path(out), quick, seed)
    items = plan(quick) if items is None else list(items)
    keys = [key_of(it) for it in items]
    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    done = parallel.run_tasks(run_case, items, keys=keys, store_path=study.store, workers=workers,
                              scheduler=scheduler, batch_size=1, description="formulation-compare", deadline=deadline,
                              raise_on_error=False)
    recs = [study.store[k] for k in keys if k in study.store]
    md, numbers = report(recs, quick, len(items), study.out)
    study.write_table("\n".join(md))
    right = {fam: {c: f"{sum(v)}/{len(v)}" for c, v in d.items()} for fam, d in numbers.pop("physics_right").items()}
    summary = {"headline": f"{len(recs)}/{len(items)} runs; physics right per family: {right}",
               "runs": len(recs), "planned": len(items), "complete": done.complete, "failed_runs": done.failed,
               "physics_right": right, **numbers, "figures": [p.name for p in sorted(study.out.glob("*.png"))]}
    study.write_summary(summary)
    return summary
