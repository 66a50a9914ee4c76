"""Pyomo at scale: time and IPOPT iterations against N, against the CasADi path and a plain Scholtes loop.

    python benchmarks/pyomo_scale.py [--sizes 50 100 200 400] [--systems point_mass_2d hopper_2d]
                                     [--strategy scholtes] [--tol 1e-8] [--time-limit 120]
                                     [--option KEY=VALUE ...] [--quick] [--fresh] [--out FILE]
                                     [--simple-nonlinear]

Tasks (fixed horizon T, ``h = T / N``, pyramid friction with 4 facets, start 0 of
:meth:`ContactImplicitTO.initial_guess`, no noise):

* ``point_mass_2d`` (the default): push the unit point mass 0.5 m along the ground (mu = 0.5) in
  T = 1 s, at rest at both ends, horizontal force only, cost ``h sum_k (|u_k|^2 + (x_k - 0.5)^2)``
  (effort alone has a family of equal-cost optima: the sliding phase can be shifted in time; the
  position term picks one, up to near-equal local optima that differ in the step where sliding
  starts or stops: objectives within ~0.1% of each other are such neighbours);
* ``hopper_2d``: the hopper crouches 0.1 m (body and leg) in T = 0.5 s, at rest at both ends, on
  its foot, with the quadratic cost ``sum_k (theta_k^2 + alpha_k^2 + 1e-3 f_leg^2 + 1e-2 tau^2)``.

Per (system, N), one record, each part timed once, in this order:

* ``casadi_build``: ``ContactImplicitTO(...)`` plus boundary conditions, bounds and cost;
* ``pyomo_build``: its Pyomo twin, ``to.to_pyomo()``, started at the same initial guess;
* ``casadi``: ``to.solve(backend="casadi", strategy=..., tol=..., time_limit=...)``;
* ``pyomo``: ``SolverFactory("contactmp_ipopt").solve(twin, options={"strategy": ..., "tol": ...},
  timelimit=...)``, which reads the model into a Program (``read_s``: the part of the solve
  outside :func:`~contactmp.solvers.nlp.solve.solve_program` and its certificate) and runs the homotopy;
  ``program_s`` is ``solve_program``'s own time (certificate excluded, ``certify_s``);
* ``plain``: a plain Scholtes loop written here with ``casadi.nlpsol`` on the program read from the
  same twin (:func:`~contactmp.solvers.nlp.pyomo_ipopt.pyomo_to_program`, timed apart as ``read_s``):
  the NLP ``min f s.t. bounds, lbg <= g <= ubg, a >= 0, b >= 0, a_i b_i <= sigma`` (a side that is
  a variable with lower bound >= 0 gets no sign row, as in solve_program), built once, solved for
  ``sigma = 1, 0.1, ..., 1e-12``, each NLP started at the previous answer (primal only), IPOPT with
  solve_program's defaults (``bound_relax_factor = 0``, ``mu_strategy = adaptive``, the same
  ``tol``, ``max_iter = 3000``); it stops at the first NLP that IPOPT solves with an answer that
  passes the independent checks below;
* with ``--simple-nonlinear`` also the old route: ``mpec.simple_nonlinear`` + the plugin's plain
  NLP path (the direct MPCC form, through an .nl file).

Every solve has the wall-clock limit ``--time-limit`` (seconds; solve_program's ``time_limit``,
the plugin's ``timelimit``, and for the plain loop an IPOPT iteration callback that stops it at
the deadline); a solve that reaches it is marked ``time_limit`` and its time is a lower bound.
Every answer is judged by the original program's :meth:`Program.residuals` (``solved``: scaled
bound and row violations <= 1e-6, ``max_i |min(a_i, b_i)| <= 1e-8``, solve_program's defaults).

``--option KEY=VALUE`` (repeatable) passes a solve_program option (``sigma0``, ``sigma_factor``,
``max_iter``, ...) or an IPOPT option (any other key; ``ipopt.KEY`` forces IPOPT) to both our
paths, the CasADi one and the plugin (not to the plain loop); values are read as JSON when they
parse (numbers), else as strings. It is part of the records' configuration.

Reported: a table per (system, N) -- times, IPOPT iterations, statuses, objectives, the ratios
Pyomo/CasADi and Pyomo/plain loop (time and iterations) --, then the scaling table: per system and
method the time and iterations at each N and the least-squares slope of ``log(time)`` (and of
``log(iterations)``) against ``log(N)`` over the sizes run. The target of issue 14 is the
Pyomo path: at most 15 s at N = 400 and a time slope of at most 1.5 from N = 50 to 400.

Output: ``benchmarks/out/pyomo_scale.jsonl`` (one record per (system, N), written as it is done
through :class:`contactmp.records.RecordStore`: an interrupted run started again with the same
settings skips the records already there; ``--fresh`` starts over), ``pyomo_scale.json`` (machine,
versions, load average, settings, every record, the slopes) and ``pyomo_scale.png`` (log-log plots
of time and iterations against N, with the N^1 and N^1.5 guides) beside it. Progress on stderr (a
rich progress bar on a terminal, one line per stage otherwise). ``OPENBLAS_NUM_THREADS`` and
``OMP_NUM_THREADS`` default to 1 (recorded in the JSON).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

# one thread for BLAS and OpenMP (MUMPS) unless the caller says otherwise: reproducible IPOPT
# iteration counts and timings that do not depend on the machine's core count
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
# time this checkout, not an installed copy of contactmp
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import _common as common  # noqa: E402

import casadi as ca  # noqa: E402
import pyomo.environ as pyo  # noqa: E402

import contactmp.solvers.nlp.pyomo_ipopt  # noqa: E402,F401  (registers SolverFactory("contactmp_ipopt"))
from contactmp.models.systems import hopper_2d, point_mass_2d  # noqa: E402
from contactmp.program import Program  # noqa: E402
from contactmp.pyomo_bridge import program_x, set_program_x  # noqa: E402
from contactmp.records import RecordStore  # noqa: E402
from contactmp.result import Status  # noqa: E402
from contactmp.solvers.ipopt import DeadlineCallback  # noqa: E402
from contactmp.solvers.nlp import pyomo_to_program  # noqa: E402
from contactmp.transcriptions.contact_implicit import ContactImplicitTO  # noqa: E402

SIZES = (50, 100, 200, 400)
SYSTEMS = ("point_mass_2d",)
#: the independent checks (solve_program's defaults feas_tol and comp_tol)
FEAS_TOL, COMP_TOL = 1e-6, 1e-8
#: the plain loop's homotopy: sigma = 1, 0.1, ..., 1e-12
PLAIN_SIGMAS = tuple(10.0 ** -k for k in range(13))
#: IPOPT's texts of a solved NLP
IPOPT_SOLVED = ("Solve_Succeeded", "Solved_To_Acceptable_Level")
#: the issue's targets for the Pyomo path
TARGET_N, TARGET_TIME_S, TARGET_SLOPE = 400, 15.0, 1.5
METHODS = ("pyomo", "casadi", "plain")


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


def _traj(to: ContactImplicitTO, x: np.ndarray) -> np.ndarray:
    prog = to.program
    return np.concatenate([np.ravel([prog.value(h, x) for h in hs]) for hs in (to.q, to.v, to.u)])


def _judge(prog: Program, x: np.ndarray) -> dict[str, Any]:
    r = prog.residuals(x)
    out = {k: float(r[k]) for k in ("objective", "constraint", "bound", "comp_min")}
    out["solved"] = bool(r["bound"] <= FEAS_TOL and r["constraint"] <= FEAS_TOL and r["comp_min"] <= COMP_TOL)
    return out


def _homotopy(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-NLP summary kept in the records: parameter, IPOPT status, iterations, comp_min."""
    param = next((k for k in ("sigma", "rho", "eps") if history and k in history[0]), "sigma")
    return [{param: h.get(param), "status": h.get("status"), "iterations": h.get("iterations"),
             "comp_min": h.get("comp_min"), **({"time_s": h["time_s"]} if "time_s" in h else {})}
            for h in history]


# ------------------------------------------------------------------------------------------------
# the plain Scholtes loop (written out here: casadi.nlpsol + IPOPT, nothing of solve_program)


def plain_scholtes(prog: Program, tol: float, time_limit: float) -> dict[str, Any]:
    """The plain Scholtes loop on ``prog`` (see the module docstring); its record."""
    t0 = time.perf_counter()
    x, p = prog.x, prog.p
    sigma = ca.SX.sym("sigma")
    a, b = prog.comp_a, prog.comp_b
    rows, lbg, ubg = [prog.g], [prog.lbg], [prog.ubg]
    for side in (a, b):
        keep = []
        for i in range(side.shape[0]):
            j = prog.variable_index(side[i])
            if j is None or prog.lbx[j] < 0.0:
                keep.append(i)
        if keep:
            rows.append(side[keep, 0])
            lbg.append(np.zeros(len(keep)))
            ubg.append(np.full(len(keep), np.inf))
    if prog.n_comp:
        rows.append(a * b - sigma)
        lbg.append(np.full(prog.n_comp, -np.inf))
        ubg.append(np.zeros(prog.n_comp))
    g = ca.vertcat(*rows)
    lbg_v, ubg_v = np.concatenate(lbg), np.concatenate(ubg)
    deadline = t0 + time_limit
    stop = DeadlineCallback(prog.n_x, g.shape[0])  # (contactmp's: a plain CasADi iteration callback)
    stop.deadline = deadline
    ipopt = {"print_level": 0, "sb": "yes", "tol": float(tol), "max_iter": 3000, "bound_relax_factor": 0.0,
             "mu_strategy": "adaptive"}
    solver = ca.nlpsol("plain_scholtes", "ipopt", {"x": x, "p": ca.vertcat(p, sigma), "f": prog.f, "g": g},
                       {"ipopt": ipopt, "print_time": False, "error_on_fail": False, "iteration_callback": stop})
    build_s = time.perf_counter() - t0
    xk = np.clip(prog.x0, prog.lbx, prog.ubx)
    history: list[dict[str, Any]] = []
    status, verdict = "not started", None
    for s in PLAIN_SIGMAS if prog.n_comp else (0.0,):
        if time.perf_counter() >= deadline:
            status = "time_limit"
            break
        t = time.perf_counter()
        sol = solver(x0=xk, p=np.concatenate([prog.p0, [s]]), lbx=prog.lbx, ubx=prog.ubx, lbg=lbg_v, ubg=ubg_v)
        st = solver.stats()
        status = str(st.get("return_status", "unknown"))
        if stop.stopped and status == "User_Requested_Stop":
            status = "time_limit"
        xn = np.asarray(sol["x"], dtype=float).ravel()
        if np.isfinite(xn).all():
            xk = xn
        verdict = _judge(prog, xk)
        history.append({"sigma": s, "status": status, "iterations": int(st.get("iter_count", 0)),
                        "comp_min": verdict["comp_min"], "time_s": time.perf_counter() - t})
        if status in IPOPT_SOLVED and verdict["solved"]:
            break
        if status == "time_limit":
            break
    verdict = verdict or _judge(prog, xk)
    solved = bool(verdict["solved"] and history and history[-1]["status"] in IPOPT_SOLVED)
    return {"time_s": time.perf_counter() - t0, "build_s": build_s,
            "status": "solved" if solved else ("time_limit" if status == "time_limit" else "not_solved"),
            "ipopt_status": status, "objective": verdict["objective"], "check": verdict,
            "iterations": sum(h["iterations"] for h in history), "nlps": len(history),
            "homotopy": history, "ipopt_options": ipopt, "x": xk}


# ------------------------------------------------------------------------------------------------
# one (system, N)


def run_one(system: str, n: int, strategy: str, tol: float, time_limit: float, options: dict[str, Any],
            simple_nonlinear: bool, stage: Callable[[str], None]) -> dict[str, Any]:
    """Time one (system, N): CasADi build, Pyomo twin build, the three solves; compare the answers."""
    rec: dict[str, Any] = {"system": system, "N": n}
    stage("build")
    t, to = _timed(lambda: TASKS[system](n))
    prog = to.program
    rec.update(casadi_build_s=t, n_x=prog.n_x, n_g=prog.n_g, n_comp=prog.n_comp)
    x0 = to.initial_guess()

    def twin() -> Any:
        m = to.to_pyomo()
        set_program_x(m, prog, x0)
        return m

    t, model = _timed(twin)
    rec["pyomo_build_s"] = t
    # the plain loop's program, read from the twin before the plugin loads its answer into it
    read_s, pp = _timed(lambda: pyomo_to_program(model))

    stage("CasADi solve")
    t, ref = _timed(lambda: to.solve(backend="casadi", strategy=strategy, tol=tol, time_limit=time_limit,
                                     pyramid_start=False,  # the twin solves the program alone
                                     **_solve_program_options(options)))
    x_c = ref.result.x
    rec["casadi"] = {"solve_s": t, "status": ref.status.value, "objective": ref.objective,
                     "iterations": ref.result.iterations, "nlps": len(ref.result.extras["homotopy"]),
                     "homotopy": _homotopy(ref.result.extras["homotopy"]), "check": _judge(prog, x_c)}

    stage("Pyomo solve")
    solver = pyo.SolverFactory("contactmp_ipopt")
    t, out = _timed(lambda: solver.solve(model, options={"strategy": strategy, "tol": tol, **options},
                                         timelimit=time_limit))
    res = solver.last_result
    x_p = program_x(model, prog)
    cert = res.extras.get("b_stationarity") or {}
    certify_s = float(cert.get("time_s", 0.0) or 0.0)
    rec["pyomo"] = {"solve_s": t, "program_s": res.time_s, "certify_s": certify_s,
                    "read_s": t - res.time_s - certify_s, "status": res.status.value,
                    "termination": str(out.solver.termination_condition),
                    "objective": float(pyo.value(model.objective)), "iterations": res.iterations,
                    "nlps": len(res.extras["homotopy"]), "homotopy": _homotopy(res.extras["homotopy"]),
                    "b_stationary": cert.get("verdict"), "check": _judge(prog, x_p)}

    stage("plain Scholtes loop")
    plain = plain_scholtes(pp.program, tol, time_limit)
    x_pl = plain.pop("x")
    rec["plain"] = {**plain, "solve_s": plain["time_s"], "read_s": read_s,
                    "check_original": _judge(prog, _to_program_order(model, pp, prog, x_pl))}

    c, p, pl = rec["casadi"], rec["pyomo"], rec["plain"]
    rec["objective_rel_diff"] = abs(p["objective"] - c["objective"]) / max(abs(c["objective"]), 1e-300)
    rec["trajectory_max_diff"] = float(np.max(np.abs(_traj(to, x_p) - _traj(to, x_c))))
    rec["ratio_build"] = rec["pyomo_build_s"] / rec["casadi_build_s"]
    rec["ratio_solve"] = p["solve_s"] / c["solve_s"]
    # the homotopies take different IPOPT iteration counts (rounding-level differences between
    # the two expression graphs, amplified by the degenerate MPCC), so also per iteration
    rec["ratio_solve_per_iteration"] = rec["ratio_solve"] * (max(c["iterations"], 1) / max(p["iterations"], 1))
    rec["ratio_plain_time"] = p["solve_s"] / pl["solve_s"]
    rec["ratio_plain_iterations"] = max(p["iterations"], 1) / max(pl["iterations"], 1)

    if simple_nonlinear:
        stage("old route (mpec.simple_nonlinear)")
        plain_model = twin()

        def old_route() -> Any:
            pyo.TransformationFactory("mpec.simple_nonlinear").apply_to(plain_model)
            return pyo.SolverFactory("contactmp_ipopt").solve(plain_model, options={"tol": tol},
                                                              timelimit=time_limit)

        t, out = _timed(old_route)
        x_s = program_x(plain_model, prog)
        rec["simple_nonlinear"] = {"solve_s": t, "termination": str(out.solver.termination_condition),
                                   "message": out.solver.message,
                                   "objective": float(pyo.value(plain_model.objective)),
                                   "check": _judge(prog, x_s)}
    return rec


def _to_program_order(model: Any, pp: Any, prog: Program, x_read: np.ndarray) -> np.ndarray:
    """The read program's vector ``x_read`` in ``prog``'s order (through the Pyomo variables)."""
    saved = pp.values()
    pp.load(x_read)
    x = program_x(model, prog)
    pp.load(np.where(np.isfinite(saved), saved, 0.0))
    return x


def _solve_program_options(options: dict[str, Any]) -> dict[str, Any]:
    """``--option`` pairs as keyword options of solve_program (IPOPT keys go in ``ipopt``)."""
    import dataclasses

    from contactmp.solvers.nlp import NLPOptions

    fields = {f.name for f in dataclasses.fields(NLPOptions)} - {"ipopt"}
    kw: dict[str, Any] = {}
    ipopt: dict[str, Any] = {}
    for key, val in options.items():
        if key in fields:
            kw[key] = val
        else:
            ipopt[key[len("ipopt."):] if key.startswith("ipopt.") else key] = val
    if ipopt:
        kw["ipopt"] = ipopt
    return kw


# ------------------------------------------------------------------------------------------------
# scaling: slopes, tables, plot


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def loglog_slope(ns: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ``log(y)`` against ``log(N)`` (None with fewer than two usable points)."""
    pts = [(n, y) for n, y in zip(ns, ys) if n > 0 and math.isfinite(y) and y > 0]
    if len({n for n, _ in pts}) < 2:
        return None
    lx, ly = np.log([n for n, _ in pts]), np.log([y for _, y in pts])
    return float(np.polyfit(lx, ly, 1)[0])


def scaling(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per system and method: N, time, iterations, status at each N and the log-log slopes."""
    out: dict[str, Any] = {}
    for system in dict.fromkeys(r["system"] for r in records):
        rs = sorted((r for r in records if r["system"] == system and "error" not in r), key=lambda r: r["N"])
        per: dict[str, Any] = {}
        for m in METHODS:
            ns = [r["N"] for r in rs]
            ts = [_num(r[m]["solve_s"]) for r in rs]
            its = [_num(r[m]["iterations"]) for r in rs]
            per[m] = {"N": ns, "time_s": ts, "iterations": its, "status": [r[m]["status"] for r in rs],
                      "objective": [_num(r[m]["objective"]) for r in rs],
                      "slope_time": loglog_slope(ns, ts), "slope_iterations": loglog_slope(ns, its)}
        p = per["pyomo"]
        at = dict(zip(p["N"], p["time_s"]))
        per["target"] = {"N": TARGET_N, "time_s": TARGET_TIME_S, "slope": TARGET_SLOPE,
                         "time_met": (at[TARGET_N] <= TARGET_TIME_S) if TARGET_N in at else None,
                         "slope_met": (p["slope_time"] <= TARGET_SLOPE) if p["slope_time"] is not None else None,
                         "all_solved": all(s == Status.SOLVED.value for s in p["status"])}
        out[system] = per
    return out


def plot(scale: dict[str, Any], path: Path) -> Path | None:
    """Log-log time and iterations against N, one row per system, into a PNG."""
    if not scale:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    styles = {"pyomo": ("C0", "o", "Pyomo plugin (contactmp_ipopt)"), "casadi": ("C1", "s", "CasADi path (to.solve)"),
              "plain": ("C2", "^", "plain Scholtes loop (nlpsol)")}
    fig, axes = plt.subplots(len(scale), 2, figsize=(11, 4.4 * len(scale)), dpi=120, squeeze=False)
    for row, (system, per) in enumerate(scale.items()):
        for col, (field, label) in enumerate((("time_s", "wall time (s)"), ("iterations", "IPOPT iterations"))):
            ax = axes[row][col]
            for m in METHODS:
                color, marker, name = styles[m]
                d = per[m]
                ns, ys = np.asarray(d["N"], float), np.asarray(d[field], float)
                ok = np.asarray([s == Status.SOLVED.value for s in d["status"]])
                slope = d["slope_time" if field == "time_s" else "slope_iterations"]
                ax.plot(ns, ys, "-", color=color, label=f"{name}: slope {slope:.2f}" if slope is not None else name)
                ax.plot(ns[ok], ys[ok], marker, color=color)
                ax.plot(ns[~ok], ys[~ok], marker, color=color, markerfacecolor="white")
            ns = np.asarray(per["pyomo"]["N"], float)
            y0 = np.asarray(per["pyomo"][field], float)
            if ns.size and np.isfinite(y0[0]) and y0[0] > 0:
                for k, ls in ((1.0, ":"), (1.5, "--")):
                    ax.plot(ns, y0[0] * (ns / ns[0]) ** k, ls, color="gray", linewidth=1, label=f"N^{k:g} from the first Pyomo point")
            if field == "time_s" and system in scale and per["target"]["N"] in list(per["pyomo"]["N"]):
                ax.axhline(TARGET_TIME_S, color="red", linewidth=0.8, alpha=0.6, label=f"target {TARGET_TIME_S:g} s at N = {TARGET_N}")
            ax.set_xscale("log")
            ax.set_yscale("log")
            if ns.size:
                ax.set_xticks(ns, [f"{int(v)}" for v in ns])
                ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_xlabel("N (time steps)")
            ax.set_ylabel(label)
            ax.set_title(f"{system}: {label} (hollow: not solved)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7, loc="upper left")
    return common.save_figure(fig, path)


def _fmt_obj(v: Any) -> str:
    v = _num(v)
    return "-" if not math.isfinite(v) else f"{v:.7g}"


def _ok(side: dict[str, Any]) -> str:
    return "yes" if side["status"] == Status.SOLVED.value else str(side["status"])


def table(records: list[dict[str, Any]], scale: dict[str, Any]) -> None:
    """Print the per-record table and the scaling table."""
    cols = ["system", "N", "n_x", "build C/P", "solve CasADi", "solve Pyomo", "(read)", "plain loop",
            "Pyomo/CasADi", "Pyomo/plain", "iter C/P/plain", "NLPs C/P/plain", "solved C/P/plain",
            "objective CasADi", "objective Pyomo", "objective plain", "traj diff"]
    rows = []
    for r in records:
        if "error" in r:
            rows.append([r["system"], r["N"], "-", "error: " + r["error"]] + ["-"] * (len(cols) - 4))
            continue
        c, p, pl = r["casadi"], r["pyomo"], r["plain"]
        rows.append([
            r["system"], r["N"], r["n_x"],
            f"{common.fmt_time(r['casadi_build_s'])} / {common.fmt_time(r['pyomo_build_s'])}",
            common.fmt_time(c["solve_s"]), common.fmt_time(p["solve_s"]), common.fmt_time(p["read_s"]),
            common.fmt_time(pl["solve_s"]), f"{r['ratio_solve']:.2f}", f"{r['ratio_plain_time']:.2f}",
            f"{c['iterations']}/{p['iterations']}/{pl['iterations']}", f"{c['nlps']}/{p['nlps']}/{pl['nlps']}",
            f"{_ok(c)}/{_ok(p)}/{_ok(pl)}", _fmt_obj(c["objective"]), _fmt_obj(p["objective"]),
            _fmt_obj(pl["objective"]), common.fmt_residual(r["trajectory_max_diff"]),
        ])
    common.print_table("Pyomo twin vs CasADi vs a plain Scholtes loop: contact-implicit transcriptions", cols, rows,
                       caption="(read) = Pyomo model -> Program inside the Pyomo solve; plain loop = casadi.nlpsol, "
                               "sigma = 1, 0.1, ..., primal warm start, on the same program; Pyomo/plain = time ratio; "
                               "traj diff = max |q, v, u| difference Pyomo - CasADi")
    srows = []
    for system, per in scale.items():
        for m in METHODS:
            d = per[m]
            cells = [f"{common.fmt_time(t)} ({int(i) if math.isfinite(i) else '-'} it)"
                     + ("" if s == Status.SOLVED.value else f" {s}")
                     for t, i, s in zip(d["time_s"], d["iterations"], d["status"])]
            srows.append([system, m, *(f"N={n}: {c}" for n, c in zip(d["N"], cells)),
                          "-" if d["slope_time"] is None else f"{d['slope_time']:.2f}",
                          "-" if d["slope_iterations"] is None else f"{d['slope_iterations']:.2f}"])
    width = max((len(r) for r in srows), default=4)
    srows = [r[:-2] + ["-"] * (width - len(r)) + r[-2:] for r in srows]
    common.print_table("time and IPOPT iterations against N (log-log slopes)",
                       ["system", "method", *[f"size {k + 1}" for k in range(width - 4)], "slope time",
                        "slope iterations"], srows,
                       caption=f"target (issue 14), Pyomo path: <= {TARGET_TIME_S:g} s at N = {TARGET_N}, "
                               f"time slope <= {TARGET_SLOPE:g} over N = 50..400")
    for system, per in scale.items():
        t = per["target"]
        print(f"{system}: Pyomo at N = {TARGET_N} within {TARGET_TIME_S:g} s: {t['time_met']}; "
              f"slope <= {TARGET_SLOPE:g}: {t['slope_met']}; every size solved: {t['all_solved']}")
    extra = [r for r in records if "simple_nonlinear" in r]
    if extra:
        common.print_table(
            "the old route: mpec.simple_nonlinear + plugin (direct MPCC form, via .nl)",
            ["system", "N", "time", "termination", "objective", "comp_min", "objective (strategy)"],
            [[r["system"], r["N"], common.fmt_time(r["simple_nonlinear"]["solve_s"]),
              r["simple_nonlinear"]["termination"], _fmt_obj(r["simple_nonlinear"]["objective"]),
              common.fmt_residual(r["simple_nonlinear"]["check"]["comp_min"]),
              _fmt_obj(r["pyomo"]["objective"])] for r in extra])


# ------------------------------------------------------------------------------------------------
# running


def _parse_options(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise SystemExit(f"--option takes KEY=VALUE, got {pair!r}")
        key, val = pair.split("=", 1)
        try:
            out[key] = json.loads(val)
        except json.JSONDecodeError:
            out[key] = val
    return out


def _warm_up(strategy: str, tol: float) -> None:
    """One untimed small solve of every path (imports, IPOPT's option table, plugin loading)."""
    to = push_point_mass(10)
    m = to.to_pyomo()
    set_program_x(m, to.program, to.initial_guess())
    pp = pyomo_to_program(m)
    to.solve(backend="casadi", strategy=strategy, tol=tol, time_limit=30.0, pyramid_start=False)
    pyo.SolverFactory("contactmp_ipopt").solve(m, options={"strategy": strategy, "tol": tol}, timelimit=30.0)
    plain_scholtes(pp.program, tol, 30.0)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(TASKS))
    ap.add_argument("--strategy", default="scholtes")
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--time-limit", type=float, default=120.0, help="wall-clock seconds per solve (default 120)")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="a solve_program or IPOPT option for our two paths (repeatable)")
    ap.add_argument("--quick", action="store_true", help="sizes 50 and 100 only")
    ap.add_argument("--fresh", action="store_true", help="start over (empty the JSONL records)")
    ap.add_argument("--simple-nonlinear", action="store_true",
                    help="also time mpec.simple_nonlinear + the plugin's NLP path")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "pyomo_scale.json")
    args = ap.parse_args(argv)
    if not args.time_limit > 0:
        raise SystemExit("--time-limit must be > 0")
    options = _parse_options(args.option)
    sizes = [s for s in args.sizes if s <= 100] if args.quick else args.sizes
    settings = {"strategy": args.strategy, "tol": args.tol, "time_limit_s": args.time_limit, "options": options,
                "simple_nonlinear": args.simple_nonlinear}
    config = hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
    jsonl = args.out.with_suffix(".jsonl")
    png = args.out.with_suffix(".png")
    store = RecordStore(jsonl, fresh=args.fresh, accept=lambda rec: rec.get("config") == config)
    header = common.run_header("pyomo_scale", sys.argv if argv is None else ["pyomo_scale.py", *argv], 0)
    header["versions"].update(common.versions(("pyomo", "casadi")))
    header["load_average_start"] = os.getloadavg()
    header["settings"] = settings
    header["environment"] = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    jobs = [(system, n) for system in args.systems for n in sizes]
    keys = {job: f"{job[0]}/N={job[1]}" for job in jobs}
    todo = [job for job in jobs if keys[job] not in store]
    if len(todo) < len(jobs):
        print(f"resuming: {len(jobs) - len(todo)} of {len(jobs)} records already in {jsonl}", file=sys.stderr)
    if todo:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        console = Console(stderr=True)
        with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console, disable=not console.is_terminal) as bar:
            task = bar.add_task("warm-up", total=len(todo))
            _warm_up(args.strategy, args.tol)
            for system, n in todo:
                def stage(what: str, system: str = system, n: int = n) -> None:
                    text = f"{system} N={n}: {what}"
                    bar.update(task, description=text)
                    if not console.is_terminal:
                        print(text, file=sys.stderr, flush=True)

                try:
                    rec = run_one(system, n, args.strategy, args.tol, args.time_limit, options,
                                  args.simple_nonlinear, stage)
                except Exception as exc:  # a benchmark records a crash and goes on
                    rec = {"system": system, "N": n, "error": f"{type(exc).__name__}: {exc}",
                           "traceback": traceback.format_exc(limit=4)}
                store.append({"key": keys[(system, n)], "config": config, **rec})
                bar.advance(task)
    records = [store[keys[job]] for job in jobs if keys[job] in store]
    scale = scaling(records)
    plot(scale, png)
    common.write_json(args.out, {**header, "load_average_end": os.getloadavg(), "records": records,
                                 "scaling": scale})
    table(records, scale)
    print(f"wrote {args.out}, {jsonl} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
