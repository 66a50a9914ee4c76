"""NMDP at QP speed (issue 18, item 3): time per frame of the spider walk, NMDP by the projected
gradient method against the linearized MDP QP measured in the same run.

    python benchmarks/nmdp_frame.py [--T 1.0] [--dts 10,50] [--zopgm-frames 10] [--out DIR]
                                    [--compare OLD/results.json]

Per frame step ``dt`` (default 10 and 50 ms) the spider (:func:`contactmp.models.legged.spider`, the
``nmdp-timestep`` study's parameters ``PARAMS["spider"]``) tracks the ``walk`` gait from standing
for ``T`` seconds with :class:`~contactmp.transcriptions.time_stepping.TimeStepping`:

* ``mdp``: the linearized MDP QP (stable PD, the study's settings) -- the **reference**;
* ``pgm``: the NMDP by the projected gradient method (adaptive step, the study's settings);
* ``zopgm``: its zeroth-order variant with the study's ``beta_max = 1e4``, for only
  ``--zopgm-frames`` frames and at most ``--zopgm-budget`` seconds (it halves down to ``h_min`` on
  loaded frames), with its status counts.

Before the timed runs each method simulates one frame, untimed, so that loading its compiled
kernels (about 0.25 s for PGM's tapes and loop) is not counted in a frame. The time of a frame is its ``Result.time_s`` (the formulation's ``advance``: the QP's data and
solve, or PGM with its projections and adaptive substeps); the table gives the median and mean per
frame, the ratio ``pgm / mdp`` of the medians and of the means, the torso's walking distance
``x(T) - x(0)`` and its largest tilt ``max |pitch|`` [deg], the frames' statuses, and the summed
proximal steps and Newton projections. ``results.json`` also holds each run's final state ``q(T)``
(full precision), and ``--compare`` prints its largest relative difference from an earlier run's
(the "same answer" check of a speed change).

``--zopgm-analysis`` runs only :func:`zopgm_analysis` (why ZOPGM fails; ``zopgm_analysis.json``).

Findings (issue 18, item 3; 2 cores shared with another benchmark, so single timings vary 2x)
--------
*What dominated.* A loaded 50 ms frame (t = 0.3 s) took 1.10 s: 0.90 s in 905 calls of CasADi
Functions from Python, above all ``G_theta`` (449 k SX instructions, 1.9 ms a call; ``G`` 56 k,
0.35 ms; ``K_hess`` 116 k, 0.57 ms), built by differentiating the spider's expanded Lagrangian
``M(q) a + h(q, v)`` (``M`` 6 k, ``h`` 52 k instructions); the rest was PGM's Python loop (448
numpy solves, 74 proximal QPs). Changes: the spider's recursive Newton-Euler inverse dynamics and
link-velocity kinetic energy (``models/legged.py``; the NMDP uses them when a system has them:
``G_theta`` 20 k, ``G`` 3.5 k, ``K_hess`` 16 k instructions), the Functions replayed as
level-scheduled instruction tapes inside numba (``solvers/pgm/sx_tape.py``: CasADi's values to the bit,
``G_theta`` in ~40 us), and PGM's loop compiled on them (``solvers/pgm/_kernels.py``; the Python
loop stays the reference and the independent check stays in Python). After: 73 % of a 50 ms run in
the compiled loop, 17 % in PGM's validation and check, 10 % in the formulation's adaptive step.

*Before / after* (T = 1 s, medians per frame; ratios to the MDP QP of the same run;
``results_before.json`` is the code before the change, ``results.json`` after; the machine's load
differed, hence the QP's own times):

====== ======================= ========================== ============================
dt     MDP QP before / after   PGM before / after         PGM / MDP before / after
====== ======================= ========================== ============================
10 ms  3.61 ms / 1.41 ms       142 ms / 3.88 ms           39.5 / 2.7 (mean 48.7 / 4.7)
50 ms  1.74 ms / 1.14 ms       998 ms / 23.2 ms           572 / 20.3 (mean 1153 / 18.6)
====== ======================= ========================== ============================

(an earlier after-run under heavier load: 3.4 / 5.7 at 10 ms, 15.1 / 15.8 at 50 ms.) ZOPGM per
frame: 17.5 s -> 174 ms at 10 ms (medians; 3 of 9 / 10 frames solved), 165 s (one frame, failed)
-> 106 ms at 50 ms (median of 10 frames, 5 failed).

Until the steps below ``tol_d`` (issue 18, this benchmark's second change) the target (at most 5x the
QP) was met at 10 ms and missed at 50 ms (12.1x median): there a frame was on average 5.7 PGM runs
of the adaptive step (114 runs for 20 frames). Of the runs that failed, nearly all stopped on
``||d||_inf < tol_d`` with ``beta`` at 0.01 - 0.2 at a point whose stationarity (1e-6 - 7e-5)
failed the check, and the step was halved. Captured failing runs: ``K`` 16 - 86 J, the reduced
Gauss-Newton ``H`` up to 4.8e5 (three eigenvalues ~0: the indeterminate friction weights), the
projected gradient held by weights of 2e-6 - 1e-5 whose gradient is positive; the next step's
predicted decrease 1e-14 - 1e-17 against ``eps |K|`` ~ 1e-14: the decrease test cannot see it and
rejects it at every ``beta`` (``tol_d = 0`` drives every run to ``beta > beta_max``). Taken anyway,
each such Newton step divides the projected gradient by 10 - 25 (1.1e-5 -> 1.2e-6 -> 4.8e-8 ...),
so PGM now takes them (at most ``max_polish = 5`` a run, while the projected gradient falls; see
``nmdp_pgm.pgm``) and the same check passes. Two of the three runs still failing then ended in
"proximal QP did not converge": after a full unblocked step the active-set QP (cond(P) ~ 5.6e6)
computed a next step of 1.8e-12 (rounding; 0 in exact arithmetic) and took it again and again up
to its iteration limit; such a step is now taken as 0 (``nmdp_pgm.prox_qp``). After both (T = 1 s,
each method warmed up by one untimed frame; two runs): a 50 ms frame 6.14 / 5.18 ms against the
QP's 2.10 / 1.27 ms (2.93x / 4.08x median, 3.84x / 5.32x mean: a few frames take 12 - 19 ms), every
frame one PGM run solved at 50 ms (20 runs; 114 before), 231 proximal steps (713 before); 10 ms
unchanged bit for bit (2.95x / 1.95x median, 2.91x / 1.98x mean). The second run's QP builds a new
qpOASES Function per frame (``solvers.qp.solve_qp``: a cached one hot-started from the previous
frame's QP, which made answers depend on history); measured side by side in one process that costs
nothing visible (1.48 against 1.61 ms a 10 ms frame, 2.03 against 1.81 ms at 50 ms; PGM / QP 3.0 -
3.4 against either). The walk at
50 ms changes, because the frames that were halved (67 substeps in 20 frames) are now solved at
50 ms: distance 0.2646 -> 0.2476 m, tilt 2.11 -> 2.52 deg (the 10 ms run: 0.2619 m, 3.41 deg). Before the steps
below ``tol_d``, the trade-off of a looser stationarity test was measured (T = 1 s, MDP ~1.5 ms a
frame): ``tol_stationarity`` 1e-6 (the default) 20.6 ms a 50 ms frame (67 adaptive substeps in 20
frames), distance 0.2646 m, tilt 2.11 deg; 1e-5: 7.5 ms (35 substeps), 0.2619 m, 2.15 deg; 1e-4:
4.7 ms (28), 0.2579 m, 2.10 deg; not adopted (it changes what counts as solved).

*Same answers.* PGM at 10 ms: ``q(T)`` after 100 frames equal to 2.9e-10 (relative), distance to
7e-11 m. At 50 ms the walk is chaotic in the last bits: the OLD code started at ``x0 + 1e-12`` or
``x0 - 1e-12`` walks 0.2646 m / 0.2580 m (tilt 2.11 / 2.48 deg) against 0.2551 m (2.46 deg) at
``x0``; frame 1's 50 ms PGM run fails ("proximal QP did not converge": the active-set method at
its iteration limit) or
succeeds depending on 1e-11 differences in ``(q, v, w0)``, with the old code as with the new one.
The new code (whose frame 0 differs from the old one's by 4.6e-12 m, the rounding of the new
dynamics graph) follows the old code's ``x0 + 1e-12`` trajectory: distance equal to 5e-11 m.
The ``nmdp-timestep --quick`` study (``study_quick_{before,after}_summary.json``): distances, tilts
and height swings unchanged (MDP runs bitwise; ipopt to 2e-15; walk pgm 10 ms: distance 4e-10,
tilt 9e-10, height swing 5e-8 relative; jump pgm: height swing 3e-9, its distance and tilt are 0
to 1e-14 m / deg by symmetry) except the walk's pgm at 50 ms (distance 0.5440 -> 0.5555 m,
+2.1 %; tilt 2.46 -> 2.14 deg), the branch above: the old code's own spread at ``x0 +- 1e-12``
is 3.7 % in distance and 17 % in tilt (T = 1 s).

*ZOPGM cannot work on the spider's stiff polytope* (``zopgm_analysis.json``; 8 frames of the
10 ms and 50 ms walks, substeps h = 50 ... 1.56 ms, at PGM's answer of each). (1) Its projection
is Newton's method with ``G_theta_zo``, which lacks the vertex derivative
``-sum_i W_i w_i (2 k min(phi_i, 0)) Jn_i`` (k = 2.5e7 N/m^2: about 1.5e5 N/m per loaded foot,
against the inertia term ``M / h^2`` = 4e4 N/m for 100 kg at 50 ms); the iteration converges
locally iff ``rho = max |eig(I - G_theta_zo^-1 G_theta)|`` < 1, and rho is 27 - 49 at 50 ms,
7 - 13 at 25 ms, 1.9 - 4 at 12.5 ms, 1.2 - 2.7 at 10 ms, 0.5 - 1.1 at 6.25 ms, 0.1 - 0.3 at
3.1 ms, 0.03 - 0.07 at 1.6 ms (``rho ~ k h^2 / m``: a factor 4 per halving; the missing term is
91 - 94 % of ``||G_theta||`` at 50 ms). (2) Where it converges, the reduced gradient with
``G_theta_zo`` is wrong on frames with a sliding foot (t = 0.4, 0.8 s): relative error 0.13 - 0.16
(5.5 deg) even at 1.6 ms, 0.5 (17 deg) at 3.1 ms, 1.1 - 1.7 (37 deg) at 6.25 ms, so proximal steps
are rejected until ``beta > beta_max`` or the run stops unverified. ZOPGM's own runs: solved at
some h <= 12.5 ms on the frames whose feet stick, never on the frames with a sliding foot, never
at 25 or 50 ms. Per frame (table above, compiled): 174 ms at 10 ms with 7 of 10 frames
numerical_error, and at 50 ms the unverified frames blow the walk up (tilt 283 deg after 10 frames). The paper's
ZOPGM ("about 10x slower, sometimes down to 25 ms") needs ``rho < 1`` at its steps: at 50 ms a
polytope about 40x softer (``k <~ 6e5 N/m^2``, 2 cm of penetration for a quarter of the weight).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

NAME = "nmdp_frame"


def run_one(method: str, dt_ms: int, T: float, max_frames: int | None = None,
            budget_s: float = math.inf) -> dict[str, Any]:
    """Simulate the spider walk with ``method`` (``mdp``, ``pgm``, ``zopgm``) at ``dt_ms`` for ``T``
    seconds (at most ``max_frames`` frames, stopping after a frame that ends past ``budget_s`` of
    wall time) and return the per-frame times and the gait numbers."""
    from contactmp.case_studies.nmdp_timestep import FORMULATION_OF, PARAMS, SOLVER_OPTIONS, _system, _targets
    from contactmp.transcriptions.time_stepping import TimeStepping

    system = _system("spider")
    targets, _period = _targets("spider", "walk", system)
    dt = dt_ms / 1000.0
    name, opts = FORMULATION_OF[method]
    if method in SOLVER_OPTIONS:
        opts = {**opts, "solver_options": SOLVER_OPTIONS[method]}
    t0 = time.perf_counter()
    sim = TimeStepping(system, dt, name, **opts, **PARAMS["spider"])
    sim.formulation.problem(system)  # build the problem object outside the timed frames
    build_s = time.perf_counter() - t0
    n = max(1, int(round(T / dt)))
    if max_frames is not None:
        n = min(n, max_frames)
    q0 = np.array(system.q_nominal, dtype=float)
    t1 = time.perf_counter()
    tr = sim.simulate(q0, np.zeros(system.n_v), n_steps=n, targets=targets,
                      stop=lambda *_: time.perf_counter() - t1 > budget_s)
    wall = time.perf_counter() - t1
    times = tr.time_s
    x, pitch = tr.q[:, 0], tr.q[:, 2]
    return {
        "method": method, "dt_ms": dt_ms, "frames": len(tr.results), "sim_T_s": len(tr.results) * dt,
        "build_s": build_s, "wall_s": wall,
        "frame_median_s": float(np.median(times)), "frame_mean_s": float(np.mean(times)),
        "frame_max_s": float(np.max(times)), "frame_times_s": times.tolist(),
        "distance_m": float(x[-1] - x[0]), "tilt_max_deg": float(np.degrees(np.max(np.abs(pitch)))),
        "statuses": dict(Counter(s.value for s in tr.status)),
        "outer_total": int(np.sum(tr.iterations)),
        "projections_total": int(np.sum(tr.extra("projections"))) if method != "mdp" else 0,
        "adaptive_frames": sum(len(r.extras.get("substeps", [1])) > 1 for r in tr.results),
        "h_smallest": float(np.min(tr.extra("h_smallest"))) if method != "mdp" else dt,
        "stopped": tr.stopped, "q_final": tr.q[-1].tolist(),
    }


def zopgm_analysis(dt_ms: int, T: float, every: int, hs_ms: tuple[float, ...]) -> list[dict[str, Any]]:
    """Why ZOPGM fails on the spider, measured at the frames of a PGM walk (every ``every``-th
    frame of ``T`` seconds at ``dt_ms``): for each substep length ``h`` in ``hs_ms``, at PGM's answer
    ``(theta*, w*)`` of that substep, the contraction factor of the zeroth-order projection
    ``rho = max |eig(I - G_theta_zo^-1 G_theta)|`` (its Newton iteration converges locally iff
    ``rho < 1``, linearly with rate ``rho``), the relative size of the missing vertex derivative
    ``||G_theta - G_theta_zo||_2 / ||G_theta||_2``, the relative error and the angle of the
    zeroth-order reduced gradient ``g_zo = -(G_w^T G_theta_zo^-T) grad K`` against the true one,
    and ZOPGM's own outcome on the substep (status, accepted steps, projections, message)."""
    from contactmp.case_studies.nmdp_timestep import FORMULATION_OF, PARAMS, _system, _targets
    from contactmp.solvers.pgm import pgm
    from contactmp.transcriptions.time_stepping import TimeStepping

    system = _system("spider")
    targets, _ = _targets("spider", "walk", system)
    dt = dt_ms / 1000.0
    name, opts = FORMULATION_OF["pgm"]
    sim = TimeStepping(system, dt, name, **opts, **PARAMS["spider"])
    prob = sim.formulation.problem(system)
    tr = sim.simulate(np.array(system.q_nominal, dtype=float), np.zeros(system.n_v),
                      n_steps=max(1, int(round(T / dt))), targets=targets)
    rows = []
    for k in range(every, len(tr.results), every):
        q, v, t = tr.q[k], tr.v[k], k * dt
        w0 = np.asarray(tr.results[k - 1].extras["w"], dtype=float)
        for h_ms in hs_ms:
            h = h_ms / 1000.0
            q_d, qd_d = targets(t + h)
            fns = prob.functions(q, v, h, q_d, qd_d)
            fo = pgm(fns, q + h * v, w0)
            zo = pgm(fns, q + h * v, w0, zeroth_order=True, beta_max=1e4)
            th, w = fo.x, fo.extras["w"]
            J, Jz = fns.G_theta(th, w), fns.G_theta_zo(th, w)
            rho = float(np.max(np.abs(np.linalg.eigvals(np.eye(fns.n) - np.linalg.solve(Jz, J)))))
            Gw, Kg = fns.G_w(th), fns.K_grad(th)
            g = -(np.linalg.solve(J, Gw)).T @ Kg
            gz = -(np.linalg.solve(Jz, Gw)).T @ Kg
            cos = float(g @ gz / (np.linalg.norm(g) * np.linalg.norm(gz)))
            rows.append({"t": t, "h_ms": h_ms, "rho": rho,
                         "missing_rel": float(np.linalg.norm(J - Jz, 2) / np.linalg.norm(J, 2)),
                         "grad_rel_err": float(np.linalg.norm(gz - g) / np.linalg.norm(g)),
                         "grad_angle_deg": math.degrees(math.acos(max(-1.0, min(1.0, cos)))),
                         "normal_force_N": float(np.sum(fns.forces(th, w)[:, 0])),
                         "pgm_status": fo.status.value, "zopgm_status": zo.status.value,
                         "zopgm_outer": zo.iterations, "zopgm_projections": zo.extras["projections"],
                         "pgm_projections": fo.extras["projections"], "zopgm_message": zo.message})
    return rows


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[list[Any]]:
    """Rows ``(method, dt, max |q_new - q_old| / max(1, |q_old|), distance change, tilt change)`` of
    the runs both results hold."""
    rows = []
    index = {(r["method"], r["dt_ms"]): r for r in old["runs"]}
    for r in new["runs"]:
        o = index.get((r["method"], r["dt_ms"]))
        if o is None or o["frames"] != r["frames"]:
            continue
        qo, qn = np.array(o["q_final"]), np.array(r["q_final"])
        rel = float(np.max(np.abs(qn - qo) / np.maximum(1.0, np.abs(qo))))
        rows.append([r["method"], r["dt_ms"], f"{rel:.2e}", f"{r['distance_m'] - o['distance_m']:+.2e}",
                     f"{r['tilt_max_deg'] - o['tilt_max_deg']:+.2e}",
                     f"{o['frame_median_s'] / r['frame_median_s']:.1f}x"])
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--T", type=float, default=1.0, help="simulated seconds per run (default 1)")
    ap.add_argument("--dts", default="10,50", help="frame steps in ms (default 10,50)")
    ap.add_argument("--methods", default="mdp,pgm,zopgm")
    ap.add_argument("--zopgm-frames", type=int, default=10, help="frames of the zopgm runs (default 10; 0 leaves zopgm out)")
    ap.add_argument("--zopgm-budget", type=float, default=120.0,
                    help="wall seconds after which a zopgm run stops (after its current frame; default 120)")
    ap.add_argument("--out", type=Path, default=common.REPO / "benchmarks" / "out" / NAME)
    ap.add_argument("--compare", type=Path, default=None, help="an earlier results.json to compare q(T) with")
    ap.add_argument("--zopgm-analysis", action="store_true",
                    help="only the measurement of why ZOPGM fails (zopgm_analysis; writes zopgm_analysis.json)")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    if args.zopgm_analysis:
        rows = []
        for dt in (10, 50):
            rows += [{"dt_ms": dt, **r} for r in zopgm_analysis(dt, 1.0, 20 if dt == 10 else 4,
                                                               (50.0, 25.0, 12.5, 10.0, 6.25, 3.125, 1.5625))]
        common.print_table("ZOPGM on the spider walk: zeroth-order projection and gradient at PGM's answers",
                           ["dt ms", "t s", "h ms", "sum f_n N", "rho", "missing", "grad err", "angle deg",
                            "pgm", "zopgm", "zo steps", "zo proj", "pgm proj"],
                           [[r["dt_ms"], f"{r['t']:.2f}", r["h_ms"], f"{r['normal_force_N']:.0f}", f"{r['rho']:.3g}",
                             f"{r['missing_rel']:.3g}", f"{r['grad_rel_err']:.3g}", f"{r['grad_angle_deg']:.1f}",
                             r["pgm_status"], r["zopgm_status"], r["zopgm_outer"], r["zopgm_projections"],
                             r["pgm_projections"]] for r in rows])
        return common.finish(args.out / "zopgm_analysis.json",
                             {**common.run_header(NAME, sys.argv if argv is None else [NAME, *argv], 0),
                              "rows": rows}, t_start)
    dts = [int(x) for x in args.dts.split(",") if x]
    methods = [m for m in args.methods.split(",") if m and not (m == "zopgm" and args.zopgm_frames <= 0)]
    for m in methods:  # load each method's compiled kernels once, untimed (else frame 0 of its first run pays it)
        run_one(m, dts[0], args.T, max_frames=1)
    runs = []
    for dt in dts:
        for m in methods:
            r = (run_one(m, dt, args.T, args.zopgm_frames, args.zopgm_budget) if m == "zopgm"
                 else run_one(m, dt, args.T))
            runs.append(r)
            print(f"{m} dt={dt} ms: {r['frames']} frames, median {common.fmt_time(r['frame_median_s'])}, "
                  f"statuses {r['statuses']}", file=sys.stderr, flush=True)
    rows, ratios = [], {}
    for dt in dts:
        ref = next((r for r in runs if r["dt_ms"] == dt and r["method"] == "mdp"), None)
        for r in (r for r in runs if r["dt_ms"] == dt):
            rm = r["frame_median_s"] / ref["frame_median_s"] if ref else math.nan
            ra = r["frame_mean_s"] / ref["frame_mean_s"] if ref else math.nan
            ratios[f"{r['method']}/dt{dt}ms"] = {"median": rm, "mean": ra}
            rows.append([r["method"], dt, r["frames"], common.fmt_time(r["frame_median_s"]),
                         common.fmt_time(r["frame_mean_s"]), f"{rm:.2f}", f"{ra:.2f}", f"{r['distance_m']:.4f}",
                         f"{r['tilt_max_deg']:.3f}", r["outer_total"], r["projections_total"], r["adaptive_frames"],
                         " ".join(f"{k}:{v}" for k, v in sorted(r["statuses"].items()))])
    common.print_table(f"Spider walk, time per frame (T = {args.T:g} s; reference: mdp of the same dt)",
                       ["method", "dt ms", "frames", "median", "mean", "/mdp med", "/mdp mean", "distance m",
                        "tilt max deg", "prox steps", "projections", "adaptive", "statuses"], rows)
    results = {**common.run_header(NAME, sys.argv if argv is None else [NAME, *argv], 0),
               "T": args.T, "dts_ms": dts, "runs": runs, "ratios": ratios}
    if args.compare is not None:
        old = json.loads(Path(args.compare).read_text())
        crow = compare(old, results)
        common.print_table(f"Against {args.compare}", ["method", "dt ms", "max rel |dq(T)|", "d distance m",
                                                       "d tilt deg", "speed-up (median)"], crow)
        results["compare"] = {"against": str(args.compare), "rows": crow}
    return common.finish(args.out / "results.json", results, t_start)


if __name__ == "__main__":
    raise SystemExit(main())
