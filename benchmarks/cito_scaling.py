"""How the contact-implicit transcription of a robot scales with N: build time, peak memory and CPU
time per IPOPT iteration, for IPOPT's derivatives built three ways.

    python benchmarks/cito_scaling.py [--sizes 10 20 40 80] [--systems solo12 solo12_planar]
                                      [--modes full stages stages_jit] [--iterations 30] [--out FILE]

Task: Solo12 (``solo12``: 3D, 18 DoF; ``solo12_planar``: sagittal, 11 DoF; ``hopper``: the planar
hopper, 5 DoF, for the robot-size axis) with the Coulomb cone, standing to standing 0.3 m forward
in 1 s (``h = 1 / N``), minimum effort, as in :mod:`contactmp.case_studies._quadruped`. Per
(system, N, mode), in a fresh subprocess (so that its peak memory is its own):

* ``transcribe_s``: ``ContactImplicitTO(...)`` with its boundary conditions and cost;
* ``nlp_build_s`` (wall; ``nlp_build_cpu_s`` its CPU time in this process, which leaves out the
  C compiler's own process): Scholtes' relaxation of it (sigma = 1e-2) and the ``casadi.nlpsol``
  IPOPT object with its derivatives: ``full`` (CasADi differentiates the whole SX program; contactmp before
  stage groups), ``stages`` (one knot's derivatives mapped over the knots,
  :mod:`contactmp.solvers.structured`) or ``stages_jit`` (the same, compiled; the compile is part
  of this time);
* ``cpu_ms_per_iteration``: CPU time of ``--iterations`` IPOPT iterations from the task's initial
  guess divided by the iterations (``time.process_time``: CPU of this process, what other load on
  the machine changes least);
* ``peak_rss_mb``: the subprocess's peak resident memory.

The table gives each mode's ratios against ``full`` at the same (system, N), measured in the same
run, and the growth from the smallest N (linear growth doubles with N). JSON next to the script's
output (``--out``, default ``benchmarks/out/cito_scaling.json``).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, finish, print_table, run_header  # noqa: E402

CHILD = r"""
import json, resource, sys, time
import casadi as ca
import numpy as np
system_name, N, mode, iterations = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
t0 = time.perf_counter()
from contactmp.solvers.nlp import relaxation
from contactmp.solvers.structured import stage_derivatives
from contactmp.transcriptions.contact_implicit import ContactImplicitTO
if system_name == "hopper":
    from contactmp.models.systems import hopper_2d
    system = hopper_2d()
    q0 = np.array([0.0, 1.0, 0.0, 0.0, 1.0])
else:
    from contactmp.models.urdf import solo12, solo12_standing
    planar = system_name == "solo12_planar"
    system = solo12(planar=planar)
    q0 = solo12_standing(planar)
t_import = time.perf_counter()
to = ContactImplicitTO(system, N, 1.0 / N, formulation="cone", stages=mode != "full")
qf = q0.copy()
qf[0] += 0.3
to.set_initial_state(q0, np.zeros(system.n_v))
to.set_final_state(qf, np.zeros(system.n_v))
to.minimize_effort()
t1, b1 = time.perf_counter(), time.process_time()
P = relaxation(to.program, "scholtes", 1e-2).program
opts = {"ipopt": {"max_iter": iterations, "print_level": 0, "mu_strategy": "adaptive", "bound_relax_factor": 0.0},
        "print_time": False}
if mode != "full":
    opts.update(stage_derivatives(P, jit=mode == "stages_jit").nlpsol_options())
solver = ca.nlpsol("S", "ipopt", {"x": P.x, "p": P.p, "f": P.f, "g": P.g}, opts)
t2, b2 = time.perf_counter(), time.process_time()
x0 = np.concatenate([to.initial_guess(), np.zeros(P.n_x - to.program.n_x)])
c0 = time.process_time()
solver(x0=x0, p=P.p0, lbx=P.lbx, ubx=P.ubx, lbg=P.lbg, ubg=P.ubg)
c1 = time.process_time()
n_iter = int(solver.stats()["iter_count"])
print(json.dumps({"n_x": P.n_x, "n_g": P.n_g, "transcribe_s": t1 - t_import, "nlp_build_s": t2 - t1, "nlp_build_cpu_s": b2 - b1,
                  "iterations": n_iter, "cpu_ms_per_iteration": 1e3 * (c1 - c0) / max(n_iter, 1),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(system: str, N: int, mode: str, iterations: int) -> dict[str, Any]:
    """One (system, N, mode) in a fresh interpreter; its JSON line, or the error it printed."""
    proc = subprocess.run([sys.executable, "-c", CHILD, system, str(N), mode, str(iterations)],
                          capture_output=True, text=True, env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 40, 80])
    ap.add_argument("--systems", nargs="+", default=["solo12", "solo12_planar"],
                    choices=["solo12", "solo12_planar", "hopper"])
    ap.add_argument("--modes", nargs="+", default=["full", "stages", "stages_jit"],
                    choices=["full", "stages", "stages_jit"])
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out" / "cito_scaling.json")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    results: dict[str, Any] = {**run_header("cito_scaling", ["benchmarks/cito_scaling.py", *argv], 0), "records": []}
    for system in args.systems:
        for N in args.sizes:
            for mode in args.modes:
                rec = {"system": system, "N": N, "mode": mode, **measure(system, N, mode, args.iterations)}
                results["records"].append(rec)
                print(json.dumps(rec), file=sys.stderr)
    rows = []
    recs = results["records"]
    for r in recs:
        if "error" in r:
            rows.append([r["system"], r["N"], r["mode"], "error: " + r["error"][:60]] + [None] * 8)
            continue
        ref = next((x for x in recs if (x["system"], x["N"], x["mode"]) == (r["system"], r["N"], "full")
                    and "error" not in x), None)
        first = next((x for x in recs if (x["system"], x["mode"]) == (r["system"], r["mode"]) and "error" not in x), r)

        def ratio(key: str, base: dict[str, Any] | None) -> str | None:
            return None if base is None else f"{r[key] / base[key]:.2f}"
        rows.append([r["system"], r["N"], r["mode"], r["n_x"], f"{r['transcribe_s']:.2f}", f"{r['nlp_build_s']:.2f}",
                     ratio("nlp_build_s", ref), f"{r['peak_rss_mb']:.0f}", ratio("peak_rss_mb", ref),
                     f"{r['cpu_ms_per_iteration']:.1f}", ratio("cpu_ms_per_iteration", ref),
                     f"{r['nlp_build_s'] / first['nlp_build_s']:.2f} / {r['peak_rss_mb'] / first['peak_rss_mb']:.2f}"
                     f" / {r['cpu_ms_per_iteration'] / first['cpu_ms_per_iteration']:.2f}"])
    print_table("Solo12 contact-implicit transcription against N (cone, Scholtes sigma = 1e-2)",
                ["system", "N", "derivatives", "n_x", "transcribe (s)", "NLP build (s)", "build / full",
                 "peak RSS (MB)", "RSS / full", "CPU ms / iteration", "iteration / full",
                 f"build / RSS / iteration vs N = {args.sizes[0]}"], rows)
    return finish(args.out, results, t_start)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
