"""Case study ``cito-push``: contact-implicit trajectory optimization of a manipulation task. A point
finger, starting 0.2 m away from a box, must push the box 0.4 m along the ground to a goal and leave
it at rest; the optimizer is told neither when the finger touches the box nor when the box sticks or
slides.

System (:func:`contactmp.models.manipulation.planar_pusher`): a 1 kg box, 0.2 m x 0.2 m, on the
ground with its two bottom corners (``mu = 0.3``), and a gravity-compensated 0.1 kg point finger
driven by a force ``u = (f_x, f_z)``, touching the box's left face (``mu = 0.5``). All three
contacts are complementarity pairs of the formulation: the velocity pyramid (``"pyramid"``, k = 4,
in the plane the exact segment ``|p_t| <= mu p_n``) and Coulomb's cone in disk form (``"cone"``).

Task (:func:`build_task`; ``q = (x, z, theta, x_f, z_f)``): from rest at ``q_0 = (0, 0.1, 0, -0.3,
0.1)`` to ``x_N = 0.4`` at rest (``v_N = 0``; the box's height and tilt at the end follow from its
contacts), N = 20 steps of 0.1 s (``--quick``) or 40 of 0.05 s; minimize the effort
``h sum_k |u_k|^2``, subject to ``|f_x|, |f_z| <= 10 N``, finger speeds ``|xdot_f|, |zdot_f| <=
0.5 m/s`` (a robot's speed limit; without it the optimum winds the finger up and hits the box in one
step), a level box ``|theta_k| <= 0.2 rad`` (the box must not tip over; with the tilt free 4 of 20
Scholtes starts failed, locally infeasible, the box tumbling) and the finger at the face's heights,
``0.02 <= z_f <= 0.18`` m. The finger contact is the face's *plane*, so the model holds while the
finger touches within the face, ``|r_z| <= 0.1`` m in the box's frame
(:func:`~contactmp.models.manipulation.finger_in_box_frame`); the tests check that of the solutions
(imposing ``|r_z| <= 0.08`` as constraint rows at every step instead of the height bounds cost 1.5x
the IPOPT iterations, 6 of 6 starts converged either way).

20 seeded starts per formulation and MPCC strategy (Scholtes with ``--quick``; Scholtes and the l1
elastic penalty in the full run) through :func:`contactmp.case_studies._cito.run_grid` (Dask,
resumable JSONL records). The outputs: the success table, the trajectory figure of
:func:`~contactmp.case_studies._cito.plot_best_trajectories` (configuration, forces, modes), and per
formulation ``push_<formulation>_<strategy>.png``: snapshots of the box and the finger path in the
x-z plane above the contact-mode timeline of the best start; ``summary.json`` and the table give
that timeline as one string per contact (``.`` separated, ``s`` sticking, ``>`` sliding).

Measured (``--quick``, seed 0, 2 Dask workers on a shared 2-core machine, 2026-12-02): 20/20
starts converged with either formulation, best cost 9.671 (pyramid) and 9.670 (cone), 19 of 20
pyramid starts within 0.1 % of it. Again on 2026-12-07 with the position gap and the cone started
from the pyramid's plan of each start (in one process, other jobs running): 20/20 and 20/20, best
9.6707 / 9.6700, median 9.6717 / 9.6708, median 3.1 / 4.1 s per start (the cone's covers both
solves). In the best solutions the finger approaches for 0.7-0.8 s,
then sticks to the face near its top while both corners slide, and lets go once the box sticks at
the goal; its friction on the face lifts the box, carrying up to 2 N of its weight, which lowers the
ground friction the push has to overcome.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from contactmp.case_studies import _cito
from contactmp.case_studies._study import StudyRun

DESCRIPTION = "contact-implicit TO: a point finger pushes a box 0.4 m to a goal (contact discovered), 20 starts"
STARTS = 20
#: the formulations of the study (all contacts, finger-box and box-ground, are their pairs)
FORMULATIONS = ("pyramid", "cone")
#: the system: planar_pusher's arguments
SYSTEM = {"m_box": 1.0, "width": 0.2, "height": 0.2, "mu_ground": 0.3, "m_finger": 0.1, "mu_finger": 0.5}
#: box displacement to the goal (m); the finger starts GAP (m) left of the box's left face
GOAL_X, GAP = 0.4, 0.2
#: finger force bound (N) per component and finger speed bound (m/s) per component
F_MAX, V_MAX = 10.0, 0.5
#: the box's tilt bound (rad): it must not tip over
THETA_MAX = 0.2
#: the finger's height z_f stays in [FACE_MARGIN, height - FACE_MARGIN] (m)
FACE_MARGIN = 0.02
#: (N, h) of the quick and the full task
STEPS = {True: (20, 0.1), False: (40, 0.05)}
#: mode letters of the timeline strings, in the order of _cito.MODES (separated, sticking, sliding)
MODE_LETTERS = ".s>"


def build_task(formulation: str, quick: bool) -> Any:
    """The push task's :class:`~contactmp.transcriptions.contact_implicit.ContactImplicitTO` for
    ``formulation`` (see the module docstring); ``_cito.TASKS["push"]`` builds it."""
    from contactmp.models.manipulation import planar_pusher
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    system = planar_pusher(**SYSTEM)
    w, hh = SYSTEM["width"], SYSTEM["height"]
    N, h = STEPS[bool(quick)]
    to = ContactImplicitTO(system, N, h, formulation=formulation, gap=_cito.GAP)
    q0 = np.array([0.0, hh / 2, 0.0, -w / 2 - GAP, hh / 2])
    qf = np.array([GOAL_X, hh / 2, 0.0, GOAL_X - w / 2, hh / 2])  # the finger entries only shape the guess
    to.set_initial_state(q0, np.zeros(system.n_v))
    to.set_final_state(qf, q_indices=[0])
    inf = np.inf
    _cito.rest_at_the_end(to, np.array([inf, inf, inf, V_MAX, V_MAX]))
    for qk in to.q:
        qk.lb = np.array([-inf, -inf, -THETA_MAX, -inf, FACE_MARGIN])
        qk.ub = np.array([inf, inf, THETA_MAX, inf, hh - FACE_MARGIN])
        qk.init = np.clip(qk.init, qk.lb, qk.ub)
    to.bound_inputs(-F_MAX, F_MAX)
    to.minimize_effort(1.0)
    return to


def mode_strings(modes: Any, names: Any) -> dict[str, str]:
    """``{contact name: timeline}`` of an ``(N, n_c)`` array of :data:`_cito.MODES` codes, one letter
    of :data:`MODE_LETTERS` per step."""
    m = np.asarray(modes, dtype=int)
    return {str(n): "".join(MODE_LETTERS[c] for c in m[:, j]) for j, n in enumerate(names)}


def plot_push(path: Path, system: Any, traj: dict[str, Any], title: str) -> str:
    """The best start in the x-z plane (box outlines at eight instants, light to dark; the finger's
    path; the goal pose dashed) above its contact-mode timeline (one row per contact)."""
    from matplotlib.patches import Polygon

    from contactmp.case_studies._figures import plot_mode_chart, pyplot, save

    plt = pyplot()
    t, q, modes = np.asarray(traj["t"]), np.asarray(traj["q"]), np.asarray(traj["modes"])
    w, hh = SYSTEM["width"], SYSTEM["height"]
    corners = np.array([[-w / 2, -hh / 2], [w / 2, -hh / 2], [w / 2, hh / 2], [-w / 2, hh / 2]])
    fig, (ax, axm) = plt.subplots(2, 1, figsize=(8, 6.2), gridspec_kw={"height_ratios": [3, 1.1]})
    cmap = plt.get_cmap("viridis")
    shown = np.unique(np.linspace(0, len(t) - 1, 8).round().astype(int))
    for k in shown:
        c, s = np.cos(q[k, 2]), np.sin(q[k, 2])
        pts = q[k, :2] + corners @ np.array([[c, s], [-s, c]])
        color = cmap(k / (len(t) - 1))
        ax.add_patch(Polygon(pts, closed=True, fill=False, ec=color, lw=1.4))
        ax.plot(q[k, 3], q[k, 4], "o", color=color, ms=6)
    goal = np.array([GOAL_X, hh / 2]) + corners
    ax.add_patch(Polygon(goal, closed=True, fill=False, ec="k", ls="--", lw=1.0, label="goal"))
    ax.plot(q[:, 3], q[:, 4], "-", color="C3", lw=1.0, label="finger path")
    ax.plot(q[:, 0], q[:, 1], ".", color="0.4", ms=3, label="box center")
    ax.axhline(0.0, color="k", lw=1.5)
    ax.set_xlim(min(q[:, 3].min(), 0.0) - 0.15, GOAL_X + w / 2 + 0.1)
    ax.set_ylim(-0.05, hh + 0.15)
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("z (m)")
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title("box outlines and finger (dots) at " + ", ".join(f"{t[k]:.2g}" for k in shown) + " s",
                 fontsize=8)
    plot_mode_chart(axm, t, modes, system.contact_names)
    fig.suptitle(title, fontsize=10)
    return save(fig, path, dpi=110)


def run(out: Path, quick: bool = False, seed: int = 0, workers: int | None = None,
        scheduler: str | None = None) -> dict[str, Any]:
    """Run the study into ``out`` (starts on a local Dask cluster of ``workers`` processes, default
    2; 0 runs them in this process; or on the cluster at ``scheduler``); resumes from
    ``out/records.jsonl`` when it exists."""
    study = StudyRun("cito-push", Path(out), quick, seed)
    strategies = ["scholtes"] if quick else ["scholtes", "elastic_l1"]
    records = _cito.run_grid(study, ["push"], list(FORMULATIONS), strategies, STARTS, workers=workers,
                             scheduler=scheduler)
    rows = _cito.summarize(records)
    figures = _cito.plot_best_trajectories(study, records, rows)
    system = build_task("pyramid", quick).system
    timelines = {}
    for row in rows:
        if row["best_start"] is None:
            continue
        rec = next(r for r in records if (r["formulation"], r["strategy"], r["start"])
                   == (row["formulation"], row["strategy"], row["best_start"]))
        label = f"{row['formulation']}/{row['strategy']}"
        timelines[label] = mode_strings(rec["trajectory"]["modes"], system.contact_names)
        figures.append(plot_push(study.out / f"push_{row['formulation']}_{row['strategy']}.png", system,
                                 rec["trajectory"], f"cito-push, {label}: best of {row['starts']} starts "
                                 f"(start {row['best_start']}, cost {rec['objective']:.4g})"))
    N, h = STEPS[bool(quick)]
    lines = [
        "# cito-push" + (" (quick)" if quick else ""),
        "",
        f"- {_cito.TASKS['push'].description}; N = {N} steps of {h:g} s",
        f"- converged = verified solved and complementarity violation max|min(a, b)| <= {_cito.COMP_TOL:g}; "
        "cost spread over the converged starts; start 0 is the deterministic guess, starts 1.. add "
        f"{_cito.NOISE_SCALE} N(0, 1) noise (numpy seed [seed, start]).",
        "",
        _cito.summary_table(rows),
        "",
        "Contact modes of each best start, one letter per step (`.` separated, `s` sticking, `>` sliding):",
        "",
    ]
    for label, tl in timelines.items():
        lines += [f"- {label}:"] + [f"  - `{name:>12}` `{s}`" for name, s in tl.items()]
    study.write_table("\n".join(lines))
    conv = sum(r["converged"] for r in rows)
    total = sum(r["starts"] for r in rows)
    per = ", ".join(f"{r['formulation']}/{r['strategy']} {r['converged']}/{r['starts']}" for r in rows)
    headline = (f"{conv}/{total} starts converged ({per}) with complementarity violation <= "
                f"{_cito.COMP_TOL:g}")
    summary = {"headline": headline, "converged": conv, "starts": total, "success_rate": conv / total,
               "rows": rows, "figures": figures, "mode_timelines": timelines}
    study.write_summary(summary)
    return summary
