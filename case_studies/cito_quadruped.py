"""Case study ``cito-quadruped``: contact-implicit trajectory optimization of Solo12 (3D and
sagittal), from standing to standing, its gait discovered by the optimizer.

Tasks (:mod:`contactmp.case_studies._quadruped`): ``walk`` (0.3 m in 1 s, N = 40), ``jump`` (onto a
10 cm step in 0.8 s, N = 40), ``calipso`` (the sagittal model set up like CALIPSO's planar
quadruped: 4 feet, 31 knots, cone friction). Seeded starts run through Dask (``--workers``), every
start is one JSONL record (the study resumes where it stopped), each solved with the MPCC strategy
:data:`STRATEGY` under a CPU-time limit. A cone task's start solves the pyramid's program of the
same task first, then the cone from that plan
(:meth:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO.solve`'s default
``pyramid_start``): the record's ``time_s`` and ``iterations`` cover both phases, each with the CPU
limit, and ``seed_status``, ``seed_objective`` are the pyramid's; its key ends in
``/from-pyramid`` (records of the cone from its own guess are not resumed).

A start *converged* when the solve is verified ``solved`` (bounds, rows and complementarity
independently checked), its complementarity violation ``max |min(a_i, b_i)|`` is at most 1e-6 and
no foot penetrates the ground by more than 1e-6 m at any knot (:data:`PENETRATION_TOL`). For every
solved start the record also holds the *replay* through
:class:`~contactmp.transcriptions.time_stepping.TimeStepping` with the same formulation
(:meth:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO.replay`): the residual of each
time-stepping step's own program at the trajectory's values (is every step a simulator step?),
the difference from the step the simulator's solver takes from the same state, the steps
where the two differ although both solve the step (non-unique steps), and the difference when
the simulator's solver of such a step starts at the trajectory's step values (seeded: the step's
solution nearest them); and the gait: the sequence of the sets of feet on the ground (:func:`gait`).
Every solved start is refined on its active pieces before it is certified and replayed
(:attr:`~contactmp.solvers.nlp.solve.NLPOptions.refine`, in :data:`OPTIONS`), and the record keeps the
whole solution ``x``. A record replayed by an earlier revision of the replay
(:data:`REPLAY_REVISION`) is replayed again from its ``x`` by the next run into the same folder,
without solving it again: the new replay goes to ``replays.jsonl`` (one record per start and
revision, resumable) and the report uses the newest one.

``--quick``: 4 starts of each quick task; the full run: 20 starts of every task.
"""
from __future__ import annotations

import functools
import math
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from contactmp.case_studies import _cito
from contactmp.case_studies._quadruped import TASK_SHAPES, solo_task
from contactmp.case_studies._study import StudyRun, markdown_table
from contactmp.errors import InputError, did_you_mean
from contactmp.program import largest_residual
from contactmp.result import Result, Status
from contactmp.solvers.nlp import b_stationarity
from contactmp.solvers.structured import jit_available

DESCRIPTION = "contact-implicit TO of Solo12 (3D and sagittal): walk, jump onto a step, CALIPSO's planar gait"

#: (task name, task kind, planar, formulation) of the full run; the quick run takes QUICK_TASKS
#: (in the order they run: the issue's targets first, so a full run stopped early has them)
TASKS: tuple[tuple[str, str, bool, str], ...] = (
    ("walk-3d-cone", "walk", False, "cone"),
    ("jump-3d-cone", "jump", False, "cone"),
    ("calipso-sagittal-cone", "calipso", True, "cone"),
    ("walk-3d-pyramid", "walk", False, "pyramid"),
    ("walk-sagittal-cone", "walk", True, "cone"),
    ("jump-sagittal-cone", "jump", True, "cone"),
)
QUICK_TASKS = ("walk-3d-cone", "jump-3d-cone", "calipso-sagittal-cone")
STARTS, QUICK_STARTS = 20, 4
#: the MPCC strategy of every start (solvers/nlp/mpcc.py)
STRATEGY = "elastic_l1"
#: CPU seconds of one start (NLPOptions.cpu_time_limit; the solve then reports time_limit); the
#: wall-clock limit is 10x that, only a backstop (on a loaded machine a start's wall time is
#: several times its CPU time: a quick-run start stopped at a 900 s wall limit after 254 CPU s)
CPU_LIMIT = 300.0
#: a converged trajectory has no foot deeper than this below the terrain at any knot (m)
PENETRATION_TOL = 1e-6
#: NLPOptions of every start: IPOPT's derivatives from one knot (solvers/structured.py), compiled
#: when a C compiler is there (Solo12 3D, N = 40: 115 -> 69 ms CPU per IPOPT iteration, after a
#: compile of about 50 s per worker and task, kept for the worker's later starts)
#: ``polish=False``, ``certify=False``: the first verified point of the elastic-l1 homotopy ends
#: the start. With both on (the library's defaults) a 3D walk start spent most of its IPOPT
#: iterations in polish NLPs that stopped at their 200-iteration cap (9 of 9 on start 1: 1,800 of
#: 3,349 iterations, 202 CPU s) and, after each verified point certified not B-stationary, in a
#: re-solve at ``tol``, the certificate's MILP (5-15 s) and branch NLPs (200 iterations each, most
#: failing); without them the same start took 744 iterations and 60 CPU s. The certificate of the
#: returned point is still computed, timed apart (:func:`solve_item`). ``resolve_at_last``: the
#: first verified answer of an inner NLP is solved at ``tol`` with ``rho = rho_max`` rather than at
#: its own ``rho``, where IPOPT took hundreds to thousands of iterations (start 3: 2,454 iterations
#: and 152 CPU s in all -> 275 and 23 s).
#: ``refine``: the verified point is refined by Newton's method on its active pieces
#: (solvers/nlp/refine.py): IPOPT's answer satisfies the rows to about 1e-8 and up to ``feas_tol``
#: (walk start 6: 9.5e-7), which ill-conditioned steps turn into replay errors above 1e-6 (4.1e-6
#: there); refined, 3.8e-15 in 3 Newton steps (2.8 s), replay 6.9e-12, objective changed by 6.7e-8.
OPTIONS: tuple[tuple[str, Any], ...] = (("derivatives", "stages_jit" if jit_available() else "stages"),
                                        ("cpu_time_limit", CPU_LIMIT), ("time_limit", 10.0 * CPU_LIMIT),
                                        ("polish", False), ("certify", False), ("resolve_at_last", True),
                                        ("refine", True))
FEET = ("FL", "FR", "HL", "HR")
#: a converged start *replays* when every step the simulator takes from the trajectory's state is the
#: trajectory's next state to this (max |(q, v)_{k+1} - step|): from the simulator's default start,
#: or seeded, from the trajectory's own step values (ContactImplicitTO.replay)
REPLAY_TOL = 1e-6
#: the revision of the replay that a record holds (``replay_revision``, absent: 1): 2 refines each
#: step on its pieces with an inequality row or bound fixed only once violated (a sagittal walk's
#: step 30 missed the plan by 2.1e-4 under revision 1); :func:`run` replays a converged record of
#: an earlier revision again from its stored ``x``
REPLAY_REVISION = 2
#: seconds of the B-stationarity certificate's MILP per solved start
CERTIFY_TIME_LIMIT = 30.0


@functools.lru_cache(maxsize=8)
def _transcription(name: str) -> Any:
    """The task's transcription, built once per process (a Dask worker reuses it for its starts)."""
    _, kind, planar, form = next(t for t in TASKS if t[0] == name)
    return solo_task(kind, planar, form)


def gait(modes: np.ndarray) -> dict[str, Any]:
    """The gait of a mode chart (N x 4, codes of :data:`~contactmp.case_studies._cito.MODES`, feet in
    the order FL, FR, HL, HR): ``phases``, the sequence of the sets of feet on the ground (runs of
    equal sets merged, e.g. ``["FL FR HL HR", "FR HL", ...]``), ``lifts`` (how many times each foot
    leaves the ground), and ``label``: ``"no lift-off"`` when no foot leaves the ground, else
    ``"pronk"`` (all four lift together), ``"bound"`` (front and hind pairs move together),
    ``"trot"`` (diagonal pairs), ``"pace"`` (lateral pairs), ``"walk"`` (at most one foot off the
    ground at a time), otherwise ``"irregular"``."""
    on = np.asarray(modes) > 0
    sets = [" ".join(f for f, c in zip(FEET, row) if c) or "flight" for row in on]
    phases = [s for i, s in enumerate(sets) if i == 0 or s != sets[i - 1]]
    lifts = {f: int(np.sum(on[:-1, j] & ~on[1:, j])) for j, f in enumerate(FEET)}
    if not any(lifts.values()):
        label = "no lift-off"
    else:
        def together(a: str, b: str) -> bool:
            i, j = FEET.index(a), FEET.index(b)
            return bool(np.array_equal(on[:, i], on[:, j]))
        if all(together("FL", f) for f in FEET):
            label = "pronk"
        elif together("FL", "FR") and together("HL", "HR"):
            label = "bound"
        elif together("FL", "HR") and together("FR", "HL"):
            label = "trot"
        elif together("FL", "HL") and together("FR", "HR"):
            label = "pace"
        elif (on.sum(axis=1) >= 3).all():
            label = "walk"
        else:
            label = "irregular"
    return {"phases": phases, "lifts": lifts, "label": label}


def _formulation(task: str) -> str:
    """The formulation of the study's task ``task`` (a name of :data:`TASKS`; ``""`` for another name)."""
    return next((form for name, _, _, form in TASKS if name == task), "")


def record_key(task: str, seed: int, start: int, quick: bool) -> str:
    """The JSONL key of one start."""
    return f"{'quick' if quick else 'full'}/{task}/{STRATEGY}/s{seed}/start{start:02d}{_cito.start_policy(_formulation(task))}"


def solve_item(item: tuple[str, int, int, bool]) -> dict[str, Any]:
    """The record of one start ``(task, seed, start, quick)`` (module level, for Dask)."""
    task, seed, start, quick = item
    to = _transcription(task)
    t0 = time.process_time()
    rec, traj = _cito.run_start(to, STRATEGY, seed, start, options=OPTIONS)
    solve_cpu = time.process_time() - t0  # this process's CPU time of the solve (a C compile is a child's)
    if traj.status is Status.SOLVED:  # the certificate of the returned point (timed apart, not in time_s)
        rec["b_stationarity"] = b_stationarity(to.program, traj.result.x, time_limit=CERTIFY_TIME_LIMIT).summary()
    phi = np.array([to.system.eval_phi(q) for q in traj.q])
    penetration = float(max(0.0, -phi.min()))
    replay = to.replay(traj) if traj.status is Status.SOLVED else None
    rec["converged"] = bool(rec["converged"] and penetration <= PENETRATION_TOL)
    rec["trajectory"]["phi"] = phi
    return {"key": record_key(task, seed, start, quick), "task": task, "formulation": to.formulation.name,
            "strategy": STRATEGY, "seed": seed, "start": start, **rec, "solve_cpu_s": solve_cpu, "cpu_s": time.process_time() - t0,
            "penetration": penetration, "replay": replay, "replay_revision": REPLAY_REVISION,
            "gait": gait(rec["trajectory"]["modes"]),
            "x": None if traj.result is None else traj.result.x}  # the whole solution: a replay can be redone from the record


def replay_key(key: str) -> str:
    """The ``replays.jsonl`` key of the replay of record ``key`` at :data:`REPLAY_REVISION`."""
    return f"replay{REPLAY_REVISION}/{key}"


def replay_item(item: tuple[str, str, list[float]]) -> dict[str, Any]:
    """The replay (:meth:`ContactImplicitTO.replay`) of the stored solution ``x`` of one record
    ``(task, record key, x)``, not solved again (module level, for Dask)."""
    task, key, x = item
    to = _transcription(task)
    xv = np.asarray(x, dtype=float)
    r = to.program.residuals(xv)
    traj = to.trajectory(Result(Status.SOLVED, xv, "record", largest_residual(r),
                                _cito.COMP_TOL, residuals=dict(r), objective=float(r["objective"])))
    t0 = time.process_time()
    replay = to.replay(traj)
    return {"record": key, "replay_revision": REPLAY_REVISION, "replay": replay, "cpu_s": time.process_time() - t0}


def replay_again(study: StudyRun, keys: Sequence[str], tasks: Sequence[str], workers: int | None,
                 scheduler: str | None) -> list[dict[str, Any]]:
    """The records ``keys`` of ``study``, each converged one of ``tasks`` replayed at
    :data:`REPLAY_REVISION`: a record of an earlier revision is replayed again from its ``x``
    (:func:`replay_item`, into ``replays.jsonl``, resumable) and returned with that replay."""
    from contactmp.parallel import run_tasks
    from contactmp.records import RecordStore

    records = [study.store[k] for k in keys if k in study.store]
    stale = [r for r in records if r["converged"] and r["task"] in tasks and r.get("replay_revision", 1) < REPLAY_REVISION]
    missing = [r["key"] for r in stale if r.get("x") is None]
    if missing:
        raise InputError("records", f"{len(missing)} converged records of an earlier replay revision keep no "
                         f"solution x to replay again (first: {missing[0]}); solve them again in a new folder")
    store = RecordStore(study.out / "replays.jsonl")
    run_tasks(replay_item, [(r["task"], r["key"], r["x"]) for r in stale], keys=[replay_key(r["key"]) for r in stale],
              store_path=store, workers=workers, scheduler=scheduler, description=f"{study.name} replays")
    newer = {r["key"]: store[replay_key(r["key"])] for r in stale if replay_key(r["key"]) in store}
    return [r if r["key"] not in newer else {**r, "replay": newer[r["key"]]["replay"], "replay_revision": REPLAY_REVISION}
            for r in records]


def summarize(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per task: converged / starts, cost and time spread, penetration and replay error,
    and the gait of the best converged start."""
    rows = []
    for name in dict.fromkeys(r["task"] for r in records):
        rs = [r for r in records if r["task"] == name]
        conv = [r for r in rs if r["converged"]]
        best = min(conv, key=lambda r: r["objective"]) if conv else None
        verified = [r for r in rs if r["status"] == Status.SOLVED.value and r["comp_violation"] <= _cito.COMP_TOL]
        rows.append({
            "task": name, "starts": len(rs), "verified": len(verified), "converged": len(conv),
            "success_rate": len(conv) / len(rs),
            "cost": _cito.spread([r["objective"] for r in conv]),
            "time_s": _cito.spread([r["time_s"] for r in rs]),
            "solve_cpu_s": _cito.spread([r["solve_cpu_s"] for r in rs if "solve_cpu_s" in r]),
            "iterations": _cito.spread([r["iterations"] for r in rs]),
            "penetration_max": max(r["penetration"] for r in rs),
            "force_gap_max": _cito.largest_force_gap(conv),
            "step_residual_max": max((r["replay"]["step_residual"] for r in conv), default=None),
            "replay_error": _cito.spread([r["replay"]["replay_error"] for r in conv]),
            "nonunique_starts": sum(bool(r["replay"]["nonunique_steps"]) for r in conv),
            "replayed": sum(float(r["replay"]["replay_error"]) <= REPLAY_TOL for r in conv),  # JSON keeps inf as "inf"
            "replayed_seeded": sum(float(r["replay"].get("seeded_replay_error", math.inf)) <= REPLAY_TOL for r in conv),
            "replay_revisions": {str(v): sum(r.get("replay_revision", 1) == v for r in conv)
                                 for v in sorted({r.get("replay_revision", 1) for r in conv})},
            "statuses": {s: sum(r["status"] == s for r in rs) for s in sorted({r["status"] for r in rs})},
            "best_start": None if best is None else best["start"],
            "best_gait": None if best is None else best["gait"],
            "gaits": {g: sum(r["gait"]["label"] == g for r in conv) for g in sorted({r["gait"]["label"] for r in conv})},
        })
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The markdown table of :func:`summarize`'s rows."""
    def g(x: Any) -> str:
        return "-" if x is None else f"{x:.3g}"

    body = [[r["task"], r["starts"], r["verified"], r["converged"], f"{100 * r['success_rate']:.0f}%", g(r["cost"]["min"]),
             g(r["cost"]["median"]), g(r["solve_cpu_s"]["median"]), g(r["solve_cpu_s"]["max"]),
             g(r["time_s"]["median"]), g(r["iterations"]["median"]),
             g(r["penetration_max"]), g(r.get("force_gap_max")), g(r["step_residual_max"]), g(r["replay_error"]["max"]), r["nonunique_starts"],
             f"{r['replayed']} / {r['replayed_seeded']}",
             ", ".join(f"{k} {v}" for k, v in r["statuses"].items()),
             ", ".join(f"{k} {v}" for k, v in r["gaits"].items()) or "-"] for r in rows]
    return markdown_table(["task", "starts", "verified", "converged", "success", "cost min", "cost median",
                           "solve CPU/start median (s)", "solve CPU/start max (s)",
                           "wall/start median (s)", "IPOPT iterations median",
                           "max penetration (m)", "largest gap with force (m)", "max step residual", "max replay error",
                           "starts with non-unique steps", f"replayed to {REPLAY_TOL:g}: default / seeded",
                           "statuses", "gaits (converged)"], body)


def plot_quadruped(path: Path, to: Any, rec: dict[str, Any], title: str) -> None:
    """Four panels over time: the base (x, z and pitch or quaternion y), the foot heights above the
    terrain, the normal contact forces ``p_n / h`` per foot, and the mode chart per foot (grey
    separated, blue sticking, red sliding)."""
    from contactmp.case_studies._figures import plot_mode_chart, pyplot, save

    plt = pyplot()
    tr = rec["trajectory"]
    t, q, pn = np.asarray(tr["t"]), np.asarray(tr["q"]), np.asarray(tr["p_n"])
    phi, modes = np.asarray(tr["phi"]), np.asarray(tr["modes"])
    planar = to.system.planar
    fig, axes = plt.subplots(4, 1, figsize=(8, 9), sharex=True, gridspec_kw={"height_ratios": [3, 3, 3, 1.6]})
    axes[0].plot(t, q[:, 0], label="base x (m)")
    axes[0].plot(t, q[:, 1 if planar else 2], label="base z (m)")
    axes[0].plot(t, q[:, 2] if planar else 2 * q[:, 5], label="pitch (rad)" if planar else "2 quat_y (~pitch, rad)")
    axes[0].legend(fontsize=8)
    for j, f in enumerate(FEET):
        axes[1].plot(t, phi[:, j], label=f)
        axes[2].step(t[:-1], pn[:, j] / to.h, where="post", label=f)
    axes[1].set_ylabel("foot height phi (m)")
    axes[2].set_ylabel("normal force p_n / h (N)")
    axes[1].legend(fontsize=8, ncol=4)
    axes[2].legend(fontsize=8, ncol=4)
    plot_mode_chart(axes[3], t, modes, FEET)
    for ax in axes[:3]:
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    save(fig, path, dpi=110)


def run(out: Path, quick: bool = False, seed: int = 0, workers: int | None = None,
        scheduler: str | None = None, only: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the study into ``out`` (starts on a local Dask cluster of ``workers`` processes, default
    2; 0 runs them in this process; or on the cluster at ``scheduler``); resumes from
    ``out/records.jsonl``. ``only``: run just these tasks (names of :data:`TASKS`); the report still
    covers every record in ``out``."""
    from contactmp.parallel import run_tasks

    study = StudyRun("cito-quadruped", Path(out), quick, seed)
    names = [t[0] for t in TASKS if not quick or t[0] in QUICK_TASKS]
    if only is not None:
        for name in only:
            if name not in names:
                raise InputError("only", f"no task {name!r} in the {'quick' if quick else 'full'} run"
                                 f"{did_you_mean(name, names)}; tasks: {', '.join(names)}")
    starts = QUICK_STARTS if quick else STARTS
    every = [record_key(name, seed, i, quick) for name in names for i in range(starts)]
    items = [(name, seed, i, quick) for name in names if only is None or name in only for i in range(starts)]
    run_tasks(solve_item, items, keys=[record_key(*it) for it in items], store_path=study.store,
              workers=workers, scheduler=scheduler, description=study.name)
    chosen = names if only is None else list(only)
    return write_report(study, replay_again(study, every, chosen, workers, scheduler), starts)


def write_report(study: StudyRun, records: list[dict[str, Any]], starts: int) -> dict[str, Any]:
    """Write the table, summary and figures of ``records`` (the run's, or those of a run stopped
    before its end: a full run spans sessions) into the study's folder; return the summary."""
    quick = study.quick
    rows = summarize(records)
    figures = []
    for row in rows:
        if row["best_start"] is None:
            continue
        rec = next(r for r in records if r["task"] == row["task"] and r["start"] == row["best_start"])
        name = f"trajectory_{row['task']}.png"
        plot_quadruped(study.out / name, _transcription(row["task"]), rec,
                       f"{row['task']}: best of {row['starts']} starts (start {row['best_start']}, cost "
                       f"{rec['objective']:.4g}, gait {rec['gait']['label']})")
        figures.append(name)
    shapes = {k: {"N": n, "h": h, "dx": d[0], "dz": d[1]} for k, (n, h, d) in TASK_SHAPES.items()}
    lines = [
        "# cito-quadruped" + (" (quick)" if quick else ""),
        "",
        f"Solo12 from standing to standing, strategy {STRATEGY}, {starts} seeded starts per task (the table counts the starts run so far), at most "
        f"{CPU_LIMIT:g} CPU s per solve (a cone start solves the pyramid first, then the cone from its plan: "
        "at most twice that). Verified = solved (independent checks) with complementarity violation <= "
        f"{_cito.COMP_TOL:g}; converged = verified and no foot deeper than {PENETRATION_TOL:g} m at any knot. Step residual: the largest residual of a TimeStepping step's "
        "program at the trajectory's values (same formulation); replay error: max |(q, v)_(k+1) - "
        "TimeStepping.step(q_k, v_k, u_k)| with the simulator's own solver; a non-unique step is one where the "
        "two differ by more than 1e-6 while the step residual is at most 1e-6 (both solve the step); replayed: "
        "converged starts whose every step the simulator reproduces to the replay tolerance, from its default "
        "start / seeded at the trajectory's step values (the simulator, warm-started by the plan, returns the "
        "step's solution nearest it: a non-unique step then returns the trajectory's solution, an isolated one "
        "its only one). Every solved plan is first refined by Newton's method on its active pieces "
        "(NLPOptions.refine; its time is in the solve's). Solve CPU: "
        "the worker's CPU seconds of the solve (one core; a worker's first start also compiles the knot's "
        "derivatives with gcc, in a child process, not counted); wall: the solve's wall-clock seconds.",
        "",
        table(rows),
        "",
        f"Replays of revision {REPLAY_REVISION} (REPLAY_REVISION): "
        + ", ".join(f"{r['task']} {r['replay_revisions'].get(str(REPLAY_REVISION), 0)} of {r['converged']}" for r in rows)
        + " converged starts (a record replayed by an earlier revision is replayed again from its stored x, "
        "into replays.jsonl, without solving it again).",
        "",
        "Gait of the best converged start per task (sets of feet on the ground, runs merged):",
        "",
        *(f"- {r['task']}: {r['best_gait']['label']}: {' -> '.join(r['best_gait']['phases'])}"
          for r in rows if r["best_gait"] is not None),
    ]
    study.write_table("\n".join(lines))
    conv, total = sum(r["converged"] for r in rows), sum(r["starts"] for r in rows)
    summary = {"headline": f"{conv}/{total} starts converged", "converged": conv, "starts": total,
               "rows": rows, "figures": figures, "tasks": shapes, "strategy": STRATEGY}
    study.write_summary(summary)
    return summary
