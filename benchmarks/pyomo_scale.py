"""Pyomo at scale: the Pyomo twin of whole contact-implicit transcriptions against the CasADi path.

    python benchmarks/pyomo_scale.py [--sizes 50 100 200 400] [--systems point_mass_2d hopper_2d]
                                     [--strategy scholtes] [--tol 1e-8] [--quick] [--out FILE]
                                     [--simple-nonlinear]

Tasks (fixed horizon T, ``h = T / N``, pyramid friction with 4 facets, start 0 of
:meth:`ContactImplicitTO.initial_guess`, no noise):

* ``point_mass_2d``: push the unit point mass 0.5 m along the ground (mu = 0.5) in T = 1 s, at rest
  at both ends, horizontal force only, cost ``h sum_k (|u_k|^2 + (x_k - 0.5)^2)`` (effort alone
  has a family of equal-cost optima: the sliding phase can be shifted in time; the position term
  picks one);
* ``hopper_2d``: the hopper crouches 0.1 m (body and leg) in T = 0.5 s, at rest at both ends, on
  its foot, with the quadratic cost ``sum_k (theta_k^2 + alpha_k^2 + 1e-3 f_leg^2 + 1e-2 tau^2)``.

Per (system, N), each timed once, in this order:

* ``casadi_build``: ``ContactImplicitTO(...)`` plus boundary conditions, bounds and cost;
* ``pyomo_build``: its Pyomo twin, ``to.to_pyomo()`` (``to.program.to_pyomo()`` before that
  method exists), started at the same initial guess;
* ``casadi_solve``: ``to.solve(backend="casadi", strategy=..., tol=...)``;
* ``pyomo_solve``: ``SolverFactory("contactmp_ipopt").solve(twin, options={"strategy": ...,
  "tol": ...})``, which reads the model back into a Program (``pyomo_read``: the part of the
  solve outside :func:`~contactmp.solvers.nlp.solve_program`) and runs the same homotopy;
* with ``--simple-nonlinear`` also the old route: ``mpec.simple_nonlinear`` + the plugin's plain
  NLP path (the direct MPCC form, through an .nl file; IPOPT stopped after 300 s).

Reported: objectives and their relative difference, the largest difference of the trajectories
``q, v, u`` (the Pyomo answer read back in the program's order), both statuses, IPOPT
iterations, and the ratios Pyomo/CasADi. Every answer is judged by the original program's
:meth:`Program.residuals`. ``tol`` is IPOPT's, per NLP (default 1e-8, solve_program's): at 1e-8
IPOPT stops the last relaxed NLPs on its scaled error (multipliers ~1/sigma), so the inputs of
either path are only good to ~1e-3 and the trajectories may differ that much with equal
objectives; ``--tol 1e-10`` brings them within ~1e-7 of the exact minimizer, at about three times
the iterations.

Output: a rich table and ``benchmarks/out/pyomo_scale.json`` (machine, versions, load average,
every record).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
# time this checkout, not an installed copy of contactmp
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import _common as common  # noqa: E402

import pyomo.environ as pyo  # noqa: E402

import contactmp.solvers.pyomo_ipopt  # noqa: E402,F401  (registers SolverFactory("contactmp_ipopt"))
from contactmp.models.systems import hopper_2d, point_mass_2d  # noqa: E402
from contactmp.pyomo_bridge import program_x, set_program_x  # noqa: E402
from contactmp.result import Status  # noqa: E402
from contactmp.transcriptions.contact_implicit import ContactImplicitTO  # noqa: E402

SIZES = (50, 100, 200, 400)
SYSTEMS = ("point_mass_2d", "hopper_2d")
#: IPOPT wall-time limit (s) of the direct form on the old route (it can wander for long)
OLD_ROUTE_TIME_LIMIT = 300.0


def push_point_mass(n: int) -> ContactImplicitTO:
    """Push a unit point mass 0.5 m in 1 s (at rest at both ends): effort plus distance to go."""
    h = 1.0 / n
    to = ContactImplicitTO(point_mass_2d(m=1.0, mu=0.5, g=9.81), n, h, facets=4)
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.5, 0.0], [0.0, 0.0])
    to.bound_inputs([-20.0, 0.0], [20.0, 0.0])
    to.minimize_effort(1.0)
    to.add_quadratic_cost(Q=[h, 0.0], q_ref=[0.5, 0.0])
    return to


def crouch_hopper(n: int) -> ContactImplicitTO:
    """The hopper lowers body and leg by 0.1 m in 0.5 s (at rest at both ends), quadratic cost."""
    hp = hopper_2d()
    to = ContactImplicitTO(hp, n, 0.5 / n, facets=4)
    q0 = np.asarray(hp.q_nominal, dtype=float)
    to.set_initial_state(q0, np.zeros(5))
    to.set_final_state(q0 + np.array([0.0, -0.1, 0.0, 0.0, -0.1]), np.zeros(5))
    to.bound_inputs([-300.0, -50.0], [300.0, 50.0])
    to.add_quadratic_cost(Q=[0.0, 0.0, 1.0, 1.0, 0.0], R=[1e-3, 1e-2], q_ref=q0)
    return to


TASKS: dict[str, Callable[[int], ContactImplicitTO]] = {
    "point_mass_2d": push_point_mass,
    "hopper_2d": crouch_hopper,
}


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _twin(to: ContactImplicitTO) -> Any:
    return to.to_pyomo() if hasattr(to, "to_pyomo") else to.program.to_pyomo()


def _traj(to: ContactImplicitTO, x: np.ndarray) -> np.ndarray:
    prog = to.program
    return np.concatenate([np.ravel([prog.value(h, x) for h in hs]) for hs in (to.q, to.v, to.u)])


def _judge(to: ContactImplicitTO, x: np.ndarray) -> dict[str, float]:
    r = to.program.residuals(x)
    return {k: float(r[k]) for k in ("objective", "constraint", "bound", "comp_min")}


def run_one(system: str, n: int, strategy: str, tol: float, simple_nonlinear: bool) -> dict[str, Any]:
    """Time one (system, N): CasADi build, Pyomo twin build, both solves; compare the answers."""
    rec: dict[str, Any] = {"system": system, "N": n, "strategy": strategy, "tol": tol}
    t, to = _timed(lambda: TASKS[system](n))
    rec.update(casadi_build_s=t, n_x=to.program.n_x, n_g=to.program.n_g, n_comp=to.program.n_comp)
    x0 = to.initial_guess()

    def twin() -> Any:
        m = _twin(to)
        set_program_x(m, to.program, x0)
        return m

    t, model = _timed(twin)
    rec["pyomo_build_s"] = t

    t, ref = _timed(lambda: to.solve(backend="casadi", strategy=strategy, tol=tol))
    x_c = ref.result.x
    rec["casadi"] = {"solve_s": t, "status": ref.status.value, "objective": ref.objective,
                     "iterations": ref.result.iterations, "nlps": len(ref.result.extras["homotopy"]),
                     "check": _judge(to, x_c)}

    solver = pyo.SolverFactory("contactmp_ipopt")
    t, out = _timed(lambda: solver.solve(model, options={"strategy": strategy, "tol": tol}))
    res = solver.last_result
    x_p = program_x(model, to.program)
    rec["pyomo"] = {"solve_s": t, "read_s": t - res.time_s, "status": res.status.value,
                    "termination": str(out.solver.termination_condition),
                    "objective": float(pyo.value(model.objective)), "iterations": res.iterations,
                    "nlps": len(res.extras["homotopy"]), "check": _judge(to, x_p)}
    oc, op = rec["casadi"]["objective"], rec["pyomo"]["objective"]
    rec["objective_rel_diff"] = abs(op - oc) / max(abs(oc), 1e-300)
    rec["trajectory_max_diff"] = float(np.max(np.abs(_traj(to, x_p) - _traj(to, x_c))))
    rec["ratio_build"] = rec["pyomo_build_s"] / rec["casadi_build_s"]
    rec["ratio_solve"] = rec["pyomo"]["solve_s"] / rec["casadi"]["solve_s"]
    # the homotopies take different IPOPT iteration counts (rounding-level differences between
    # the two expression graphs, amplified by the degenerate MPCC), so also per iteration
    rec["ratio_solve_per_iteration"] = rec["ratio_solve"] * (
        max(rec["casadi"]["iterations"], 1) / max(rec["pyomo"]["iterations"], 1))

    if simple_nonlinear:
        plain = twin()

        def old_route() -> Any:
            pyo.TransformationFactory("mpec.simple_nonlinear").apply_to(plain)
            return pyo.SolverFactory("contactmp_ipopt").solve(plain, options={"tol": tol},
                                                              timelimit=OLD_ROUTE_TIME_LIMIT)

        t, out = _timed(old_route)
        x_s = program_x(plain, to.program)
        rec["simple_nonlinear"] = {"solve_s": t, "termination": str(out.solver.termination_condition),
                                   "message": out.solver.message,
                                   "objective": float(pyo.value(plain.objective)),
                                   "check": _judge(to, x_s)}
    return rec


def _fmt_obj(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.7g}"


def _ok(side: dict[str, Any]) -> str:
    return "yes" if side["status"] == Status.SOLVED.value else side["status"]


def table(records: list[dict[str, Any]]) -> None:
    """Print the comparison table."""
    cols = ["system", "N", "n_x", "build CasADi", "build Pyomo", "ratio", "solve CasADi",
            "solve Pyomo", "(read)", "ratio", "iter C/P", "ratio/iter", "solved C/P", "objective CasADi",
            "objective Pyomo", "rel diff", "traj diff"]
    rows = []
    for r in records:
        if "error" in r:
            rows.append([r["system"], r["N"], "-", "error: " + r["error"]] + ["-"] * (len(cols) - 4))
            continue
        c, p = r["casadi"], r["pyomo"]
        rows.append([
            r["system"], r["N"], r["n_x"], common.fmt_time(r["casadi_build_s"]),
            common.fmt_time(r["pyomo_build_s"]), f"{r['ratio_build']:.2f}",
            common.fmt_time(c["solve_s"]), common.fmt_time(p["solve_s"]),
            common.fmt_time(p["read_s"]), f"{r['ratio_solve']:.2f}",
            f"{c['iterations']}/{p['iterations']}", f"{r['ratio_solve_per_iteration']:.2f}",
            f"{_ok(c)}/{_ok(p)}",
            _fmt_obj(c["objective"]), _fmt_obj(p["objective"]),
            common.fmt_residual(r["objective_rel_diff"]), common.fmt_residual(r["trajectory_max_diff"]),
        ])
    common.print_table("Pyomo twin vs CasADi: contact-implicit transcriptions", cols, rows,
                       caption="ratio = Pyomo / CasADi; (read) = Pyomo model -> Program inside the "
                               "Pyomo solve; ratio/iter = solve ratio per IPOPT iteration; "
                               "traj diff = max |q, v, u| difference")
    extra = [r for r in records if "simple_nonlinear" in r]
    if extra:
        common.print_table(
            "the old route: mpec.simple_nonlinear + plugin (direct MPCC form, via .nl)",
            ["system", "N", "time", "termination", "objective", "comp_min", "objective (strategy)"],
            [[r["system"], r["N"], common.fmt_time(r["simple_nonlinear"]["solve_s"]),
              r["simple_nonlinear"]["termination"], _fmt_obj(r["simple_nonlinear"]["objective"]),
              common.fmt_residual(r["simple_nonlinear"]["check"]["comp_min"]),
              _fmt_obj(r["pyomo"]["objective"])] for r in extra])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(TASKS))
    ap.add_argument("--strategy", default="scholtes")
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--quick", action="store_true", help="sizes 50 and 100 only")
    ap.add_argument("--simple-nonlinear", action="store_true",
                    help="also time mpec.simple_nonlinear + the plugin's NLP path")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "pyomo_scale.json")
    args = ap.parse_args(argv)
    sizes = [s for s in args.sizes if s <= 100] if args.quick else args.sizes
    header = common.run_header("pyomo_scale", sys.argv if argv is None else ["pyomo_scale.py", *argv], 0)
    header["versions"].update(common.versions(("pyomo", "casadi")))
    header["load_average_start"] = os.getloadavg()
    records: list[dict[str, Any]] = []
    for system in args.systems:
        for n in sizes:
            print(f"{system} N={n} ...", flush=True)
            try:
                rec = run_one(system, n, args.strategy, args.tol, args.simple_nonlinear)
            except Exception as exc:  # a benchmark records a crash and goes on
                rec = {"system": system, "N": n, "error": f"{type(exc).__name__}: {exc}",
                       "traceback": traceback.format_exc(limit=4)}
            records.append(rec)
            common.write_json(args.out, {**header, "load_average_end": os.getloadavg(),
                                         "records": records})
    table(records)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
