"""Does the Pyomo twin of the contact-implicit transcription hold at robot size (Solo12)?

    python benchmarks/pyomo_solo12.py [--sizes 10 20 40] [--models sagittal 3d] [--formulation cone]
                                      [--solve-n 30] [--strategy elastic_l1] [--tol 1e-8]
                                      [--time-limit 900] [--casadi-derivatives auto full] [--repeats 3]
                                      [--no-solve] [--no-build] [--no-nl] [--quick] [--out FILE]
    python benchmarks/pyomo_solo12.py --table benchmarks/out/pyomo_solo12.json   (reprint a run's tables)

Task: :func:`contactmp.case_studies._quadruped.solo_task` (``lift_sides=True``), the ``walk`` task
(standing to standing, the base 0.3 m forward in 1 s) with its N overridden: the kind ``walkN`` is
added to ``TASK_SHAPES`` in this process only, ``(N, 1 / N, (0.3, 0.0))``. ``sagittal`` is the
planar 11-DoF model, ``3d`` the floating-base one (n_q = 19). Formulation ``--formulation`` (the
case study's ``cone`` by default).

Part 1, per (model, N), in a fresh subprocess (its peak memory is its own; imports done and
untimed before the first stage; wall time ``time.perf_counter`` and CPU time
``time.process_time`` of every stage):

* ``casadi_build``: ``solo_task(...)`` (the robot model, the transcription, its bounds and cost);
* ``twin_build``: ``to.to_pyomo()``, then the start ``to.initial_guess()`` loaded into it
  (:func:`contactmp.pyomo_bridge.set_program_x`);
* ``read``: :func:`contactmp.solvers.nlp.pyomo_ipopt.pyomo_to_program` on the twin -- what the plugin
  ``contactmp_ipopt`` does first with ``strategy=...`` (Pyomo -> CasADi SX Program; its SX
  instruction count is compared with the original program's);
* sizes: Pyomo variables, active constraints, complementarity conditions (data objects), and the
  expression nodes of the objective, the constraint bodies and the complementarity sides counted
  two ways: ``dag_nodes`` (distinct node objects: what the twin holds in memory, shared
  subexpressions once) and ``tree_nodes`` (``pyomo.core.expr.visitor.sizeof_expression`` summed
  over the bodies, computed exactly by a memoized count: the nodes a Pyomo tree walker visits --
  ``value()``, the NL writer, ``polynomial_degree`` -- where every use of a shared subexpression
  is walked again);
* ``nl_write`` (unless ``--no-nl``): the old route's file, ``mpec.simple_nonlinear`` then
  ``model.write(*.nl)`` (the plugin's NLP path and any AMPL solver), only when ``tree_nodes`` <=
  :data:`NL_TREE_LIMIT` (the writer walks trees: its time and file size grow with the tree nodes,
  about 2-3.5 us and 3.8 bytes per node on the sagittal twins), else recorded as skipped; the table
  then extrapolates the time and size from the largest file written in the same run;
* memory: ``VmRSS`` / ``VmHWM`` (peak) of the subprocess after each stage (``/proc/self/status``);
  ``twin_rss_mb`` = RSS after the twin build minus RSS after the CasADi build.

Part 2 (unless ``--no-solve``): the sagittal CALIPSO-like task (``calipso``: N = ``--solve-n`` = 30
steps of 1/30 s, 0.3 m forward) solved from the same start (start 0, ``to.initial_guess()``) by:

* ``casadi``: ``to.solve(strategy=..., tol=..., time_limit=..., derivatives=...)`` (the CasADi path;
  ``derivatives="auto"`` = ``"stages"``: this program has stage groups);
* ``pyomo``: ``SolverFactory("contactmp_ipopt").solve(twin, options={"strategy", "tol"},
  timelimit=...)`` on the twin started at the same point (the read program has no stage groups: its
  IPOPT derivatives are CasADi's ``"full"`` ones).

each in its own fresh subprocess (a hard subprocess timeout of ``time_limit + 600`` s on top of the
solver's own wall-clock limit), with status, objective, IPOPT iterations and NLPs, wall and CPU
time of the whole call, peak RSS, and the program's independent check
(:meth:`Program.residuals` of the *original* CasADi program at the answer: scaled bound and row
violations <= 1e-6 and ``max |min(a_i, b_i)|`` <= 1e-8, as in ``benchmarks/pyomo_scale.py``).
The CasADi path runs once per ``--casadi-derivatives`` mode (default ``auto`` -- its default, here
``stages`` -- and ``full``, the twin's like-for-like); ratios are against the first, and the
trajectory difference is also given against ``casadi (full)``.

Part 1 runs ``--repeats`` (3) fresh subprocesses per (model, N), the NL probe in the first only,
and reports the median of every stage time and memory figure (each run's own in ``repeats``).

Output: tables on stdout (ratios against the reference measured in the same run: twin build /
CasADi build, growth from the smallest N and log-log slopes against N; Pyomo / CasADi for the
solve), JSON in ``benchmarks/out/pyomo_solo12.json`` (``--out``; written again after every record,
so an interrupted run keeps what it measured). ``--quick``: N in (10, 20), the solve at N = 10
(``h = 0.1``: the same 1 s and 0.3 m) with a 300 s limit.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import _common as common  # noqa: E402

SIZES = (10, 20, 40)
QUICK_SIZES = (10, 20)
MODELS = {"sagittal": True, "3d": False}
#: the nl_write probe runs only below this many tree nodes (about 3.4 us each: ~70 s)
NL_TREE_LIMIT = 20_000_000
#: the walk's base displacement and duration
WALK_DX, WALK_T = 0.3, 1.0
CHILD_TAG = "@@pyomo_solo12@@ "


# ------------------------------------------------------------------------------------------------
# helpers of the subprocesses


def _proc_status() -> dict[str, float]:
    """VmRSS and VmHWM (peak) of this process in MB."""
    out: dict[str, float] = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1]) / 1024.0
    except OSError:
        pass
    if "VmHWM" not in out:
        import resource
        out["VmHWM"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {"rss_mb": out.get("VmRSS", math.nan), "peak_rss_mb": out["VmHWM"]}


class _Clock:
    """Wall and CPU time of one stage, and the memory after it."""

    def __init__(self) -> None:
        self.w, self.c = time.perf_counter(), time.process_time()

    def done(self) -> dict[str, float]:
        return {"wall_s": time.perf_counter() - self.w, "cpu_s": time.process_time() - self.c, **_proc_status()}


def _add_kind(kind: str, n: int, h: float, dx: float = WALK_DX) -> str:
    from contactmp.case_studies import _quadruped

    _quadruped.TASK_SHAPES[kind] = (int(n), float(h), (float(dx), 0.0))
    return kind


def expression_counts(model: Any) -> dict[str, int]:
    """``dag_nodes`` (distinct expression node objects, leaves included) and ``tree_nodes`` (the sum
    of ``sizeof_expression`` over the bodies: every node counted once per path to it) over the
    active objective, the active constraint bodies and every complementarity side of ``model``."""
    import pyomo.environ as pyo
    from pyomo.mpec import Complementarity

    roots: list[Any] = [o.expr for o in model.component_data_objects(pyo.Objective, active=True)]
    roots += [c.body for c in model.component_data_objects(pyo.Constraint, active=True)]
    for cdata in model.component_data_objects(Complementarity, active=True):
        roots += list(cdata._args)
    tree: dict[int, int] = {}
    keep: list[Any] = []  # keeps the nodes alive while their ids are keys

    def is_node(e: Any) -> bool:
        return hasattr(e, "is_expression_type") and e.is_expression_type()

    total = 0
    for root in roots:
        if id(root) not in tree:
            stack: list[tuple[Any, bool]] = [(root, False)]
            while stack:
                e, expanded = stack.pop()
                k = id(e)
                if k in tree:
                    continue
                if not is_node(e):
                    tree[k] = 1
                    keep.append(e)
                elif expanded:
                    tree[k] = 1 + sum(tree[id(a)] for a in e.args)
                    keep.append(e)
                else:
                    stack.append((e, True))
                    stack.extend((a, False) for a in e.args if id(a) not in tree)
        total += tree[id(root)]
    return {"dag_nodes": len(tree), "tree_nodes": total, "roots": len(roots)}


def child_build(cfg: dict[str, Any]) -> dict[str, Any]:
    """Part 1 for one (model, N) (in a fresh interpreter)."""
    import casadi as ca
    import pyomo.environ as pyo
    from pyomo.mpec import Complementarity

    import contactmp.models.urdf  # noqa: F401  (imports are not part of the build)
    import contactmp.solvers.nlp.pyomo_ipopt  # noqa: F401
    import contactmp.transcriptions.contact_implicit  # noqa: F401
    from contactmp.case_studies._quadruped import solo_task
    from contactmp.pyomo_bridge import set_program_x
    from contactmp.solvers.nlp import pyomo_to_program

    n = int(cfg["N"])
    kind = _add_kind("walkN", n, WALK_T / n)
    rec: dict[str, Any] = {"after_imports": _proc_status()}
    clk = _Clock()
    to = solo_task(kind, bool(cfg["planar"]), cfg["formulation"], lift_sides=True)
    rec["casadi_build"] = clk.done()
    prog = to.program
    rec.update(n_x=prog.n_x, n_g=prog.n_g, n_comp=prog.n_comp,
               sx_instructions=ca.Function("g", [prog.x, prog.p], [ca.vertcat(prog.f, prog.g, prog.comp_a,
                                                                              prog.comp_b)]).n_instructions())
    x0 = to.initial_guess()

    clk = _Clock()
    model = to.to_pyomo()
    set_program_x(model, prog, x0)
    rec["twin_build"] = clk.done()
    rec["twin_rss_mb"] = rec["twin_build"]["rss_mb"] - rec["casadi_build"]["rss_mb"]

    clk = _Clock()
    rec["pyomo_vars"] = sum(1 for _ in model.component_data_objects(pyo.Var))
    rec["pyomo_constraints"] = sum(1 for _ in model.component_data_objects(pyo.Constraint, active=True))
    rec["pyomo_complementarities"] = sum(1 for _ in model.component_data_objects(Complementarity, active=True))
    rec["pyomo_components"] = sum(1 for _ in model.component_objects())
    rec.update(expression_counts(model))
    rec["count"] = clk.done()

    clk = _Clock()
    pp = pyomo_to_program(model)
    rec["read"] = clk.done()
    p2 = pp.program
    rec["read_sizes"] = {"n_x": p2.n_x, "n_g": p2.n_g, "n_comp": p2.n_comp, "sx_instructions": ca.Function(
        "g", [p2.x, p2.p], [ca.vertcat(p2.f, p2.g, p2.comp_a, p2.comp_b)]).n_instructions()}
    del pp, p2

    if cfg.get("nl", True):
        if rec["tree_nodes"] > NL_TREE_LIMIT:
            rec["nl_write"] = {"skipped": f"{rec['tree_nodes']:.3g} tree nodes > {NL_TREE_LIMIT:.0e}"}
        else:
            import tempfile
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "twin.nl")
                clk = _Clock()
                pyo.TransformationFactory("mpec.simple_nonlinear").apply_to(model)
                model.write(path, format="nl")
                rec["nl_write"] = {**clk.done(), "bytes": os.path.getsize(path)}
    rec["peak_rss_mb"] = _proc_status()["peak_rss_mb"]
    return rec


def child_solve(cfg: dict[str, Any]) -> dict[str, Any]:
    """Part 2, one path (``cfg["path"]``: ``casadi`` or ``pyomo``) in a fresh interpreter."""
    import numpy as np
    import pyomo.environ as pyo

    import contactmp.models.urdf  # noqa: F401
    import contactmp.solvers.nlp.pyomo_ipopt  # noqa: F401  (registers SolverFactory("contactmp_ipopt"))
    from contactmp.case_studies._quadruped import TASK_SHAPES, solo_task
    from contactmp.pyomo_bridge import program_x, set_program_x
    from pyomo_scale import _homotopy, _judge, _traj

    n = int(cfg["N"])
    kind = "calipso"
    if n != TASK_SHAPES["calipso"][0]:  # the same duration (1 s) and displacement in n steps
        n0, h0, (dx, _) = TASK_SHAPES["calipso"]
        kind = _add_kind("calipsoN", n, n0 * h0 / n, dx)
    clk = _Clock()
    to = solo_task(kind, True, cfg["formulation"], lift_sides=True)
    rec: dict[str, Any] = {"casadi_build": clk.done()}
    prog = to.program
    x0 = to.initial_guess()
    rec.update(n_x=prog.n_x, n_g=prog.n_g, n_comp=prog.n_comp, task=kind, h=to.h)
    strategy, tol, limit = cfg["strategy"], float(cfg["tol"]), float(cfg["time_limit"])
    if cfg["path"] == "casadi":
        clk = _Clock()
        out = to.solve(backend="casadi", strategy=strategy, tol=tol, time_limit=limit,
                       derivatives=cfg["derivatives"], pyramid_start=False)  # the twin solves the program alone
        rec["solve"] = clk.done()
        res = out.result
        x = np.asarray(res.x, dtype=float)
        rec["start_max_diff"] = 0.0  # start 0 of to.solve is to.initial_guess() = x0
        rec.update(status=out.status.value, objective=float(out.objective), iterations=int(res.iterations),
                   backend_status=res.backend_status, result_time_s=res.time_s, derivatives=cfg["derivatives"])
    else:
        clk = _Clock()
        model = to.to_pyomo()
        set_program_x(model, prog, x0)
        rec["twin_build"] = clk.done()
        rec["start_max_diff"] = float(np.max(np.abs(program_x(model, prog) - x0)))  # the twin starts at x0
        solver = pyo.SolverFactory("contactmp_ipopt")
        clk = _Clock()
        out = solver.solve(model, options={"strategy": strategy, "tol": tol}, timelimit=limit)
        rec["solve"] = clk.done()
        res = solver.last_result
        x = program_x(model, prog)
        rec.update(status=res.status.value, objective=float(pyo.value(model.objective)),
                   iterations=int(res.iterations), backend_status=res.backend_status, result_time_s=res.time_s,
                   termination=str(out.solver.termination_condition), derivatives="full (read program)")
    cert = res.extras.get("b_stationarity") or {}
    rec.update(nlps=len(res.extras.get("homotopy", [])), homotopy=_homotopy(res.extras.get("homotopy", [])),
               b_stationary=cert.get("verdict"), certify_s=res.extras.get("certify_time_s"),
               check=_judge(prog, x),
               traj=_traj(to, x).tolist(), peak_rss_mb=_proc_status()["peak_rss_mb"])
    return rec


def child_main(mode: str, cfg_json: str) -> int:
    cfg = json.loads(cfg_json)
    try:
        rec = child_build(cfg) if mode == "build" else child_solve(cfg)
    except Exception as exc:  # reported to the parent as the record's error
        rec = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=6)}
    print(CHILD_TAG + json.dumps(rec, default=float), flush=True)
    return 0


# ------------------------------------------------------------------------------------------------
# the parent


def run_child(mode: str, cfg: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One measurement in a fresh interpreter; its record (``error`` on a crash or timeout)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mode, json.dumps(cfg)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"subprocess timeout after {timeout_s:.0f} s", "subprocess_wall_s": time.perf_counter() - t0}
    lines = [ln[len(CHILD_TAG):] for ln in proc.stdout.splitlines() if ln.startswith(CHILD_TAG)]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}, no output"])[-1]
        return {"error": f"subprocess failed (exit code {proc.returncode}): {tail}",
                "subprocess_wall_s": time.perf_counter() - t0}
    rec = json.loads(lines[-1])
    rec["subprocess_wall_s"] = time.perf_counter() - t0
    return rec


def median_of_repeats(rec: dict[str, Any], more: list[dict[str, Any]]) -> dict[str, Any]:
    """``rec`` (the first subprocess, with the NL probe) with the median over it and ``more`` of
    every stage's wall and CPU time, of the RSS figures and of ``twin_rss_mb``; every subprocess's
    own values in ``repeats``."""
    import statistics

    runs = [rec, *more]
    keep = ("casadi_build", "twin_build", "count", "read")
    out = {**rec, "repeats": [{k: r[k] for k in (*keep, "twin_rss_mb", "peak_rss_mb")} for r in runs]}
    for k in keep:
        out[k] = {f: statistics.median(r[k][f] for r in runs) for f in rec[k]}
    for k in ("twin_rss_mb", "peak_rss_mb"):
        out[k] = statistics.median(r[k] for r in runs)
    return out


def _f(v: Any, fmt: str = ".3g") -> str:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return "-"
    return format(v, fmt) if math.isfinite(v) else "-"


def _t(stage: dict[str, Any] | None) -> str:
    """``wall / CPU`` of a stage."""
    if not stage:
        return "-"
    return f"{common.fmt_time(stage['wall_s'])} / {common.fmt_time(stage['cpu_s'])}"


def growth(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per model: values against N and their log-log slopes (1 = linear)."""
    from pyomo_scale import loglog_slope

    keys = {"casadi_build_cpu_s": lambda r: r["casadi_build"]["cpu_s"],
            "twin_build_cpu_s": lambda r: r["twin_build"]["cpu_s"],
            "twin_build_wall_s": lambda r: r["twin_build"]["wall_s"],
            "read_cpu_s": lambda r: r["read"]["cpu_s"],
            "twin_rss_mb": lambda r: r["twin_rss_mb"],
            "peak_rss_mb": lambda r: r["peak_rss_mb"],
            "dag_nodes": lambda r: r["dag_nodes"],
            "tree_nodes": lambda r: r["tree_nodes"],
            "n_x": lambda r: r["n_x"]}
    out: dict[str, Any] = {}
    for model in dict.fromkeys(r["model"] for r in records):
        rs = sorted((r for r in records if r["model"] == model and "error" not in r), key=lambda r: r["N"])
        ns = [r["N"] for r in rs]
        per: dict[str, Any] = {"N": ns}
        for k, fn in keys.items():
            ys = [float(fn(r)) for r in rs]
            per[k] = {"values": ys, "slope": loglog_slope(ns, ys),
                      "per_N": [y / n for y, n in zip(ys, ns)]}
        out[model] = per
    return out


def build_table(records: list[dict[str, Any]], scale: dict[str, Any]) -> None:
    cols = ["model", "N", "n_x / n_g / n_comp", "Pyomo vars / cons / compl", "DAG nodes", "tree nodes",
            "CasADi build (wall / CPU)", "twin build (wall / CPU)", "twin / CasADi (CPU)", "read (wall / CPU)",
            "twin RSS (MB)", "peak RSS (MB)", "twin CPU / N=first", "twin RSS / N=first", "NL write"]
    rows = []
    first: dict[str, dict[str, Any]] = {}
    # the NL writer's CPU time and file bytes per tree node, from the largest file written in this run
    written = [r for r in records if "error" not in r and "bytes" in (r.get("nl_write") or {})]
    big = max(written, key=lambda r: r["tree_nodes"], default=None)
    rate = big["nl_write"]["cpu_s"] / big["tree_nodes"] if big else None
    size = big["nl_write"]["bytes"] / big["tree_nodes"] if big else None
    for r in records:
        if "error" in r:
            rows.append([r["model"], r["N"], "error: " + r["error"][:80]] + [None] * (len(cols) - 3))
            continue
        f0 = first.setdefault(r["model"], r)
        nl = r.get("nl_write")
        if nl is None:
            nl_cell = "-"
        elif "skipped" in nl:
            nl_cell = "skipped" + (f" (~{r['tree_nodes'] * rate:.3g} s, ~{r['tree_nodes'] * size / 2**30:.3g} GB "
                                   "at the measured rate)" if rate else "")
        else:
            nl_cell = f"{_t(nl)}, {nl['bytes'] / 2**20:.1f} MB"
        rows.append([
            r["model"], r["N"], f"{r['n_x']} / {r['n_g']} / {r['n_comp']}",
            f"{r['pyomo_vars']} / {r['pyomo_constraints']} / {r['pyomo_complementarities']}",
            f"{r['dag_nodes']:,}", f"{r['tree_nodes']:.3g}", _t(r["casadi_build"]), _t(r["twin_build"]),
            _f(r["twin_build"]["cpu_s"] / r["casadi_build"]["cpu_s"], ".2f"), _t(r["read"]),
            _f(r["twin_rss_mb"], ".0f"), _f(r["peak_rss_mb"], ".0f"),
            _f(r["twin_build"]["cpu_s"] / f0["twin_build"]["cpu_s"], ".2f"),
            _f(r["twin_rss_mb"] / f0["twin_rss_mb"], ".2f") if f0["twin_rss_mb"] > 0 else "-", nl_cell])
    common.print_table("Solo12 walk (1 s, 0.3 m): CasADi transcription vs its Pyomo twin, one fresh process each",
                       cols, rows,
                       caption="twin build = to.to_pyomo() + start; read = pyomo_to_program (the plugin's first "
                               "step); twin RSS = RSS after the twin - RSS after the CasADi build; tree nodes = "
                               "sum of sizeof_expression (what Pyomo tree walkers visit)")
    srows = []
    for model, per in scale.items():
        for k in ("casadi_build_cpu_s", "twin_build_cpu_s", "read_cpu_s", "twin_rss_mb", "dag_nodes", "tree_nodes",
                  "n_x"):
            d = per[k]
            srows.append([model, k, ", ".join(f"N={n}: {v:.4g}" for n, v in zip(per["N"], d["values"])),
                          ", ".join(f"{v:.3g}" for v in d["per_N"]),
                          "-" if d["slope"] is None else f"{d['slope']:.2f}"])
    common.print_table("growth with N (log-log slope: 1 = linear)", ["model", "quantity", "values", "per N",
                                                                    "slope"], srows)


def solve_table(solves: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Print the solve comparison; return the ratios and answer differences."""
    import numpy as np

    names = list(solves)
    ref_name = next((n for n in names if n.startswith("casadi") and "error" not in solves[n]), None)
    ref = solves.get(ref_name) if ref_name else None
    cols = ["path", "derivatives", "status", "independent check", "objective", "IPOPT iter", "NLPs",
            "solve wall", "solve CPU", "peak RSS (MB)", "wall / ref", "CPU / ref", "iter / ref",
            "comp_min", "constraint", "traj diff vs ref", "traj diff vs full"]
    rows = []
    cmp: dict[str, Any] = {"reference": ref_name}
    for name in names:
        s = solves[name]
        if "error" in s:
            rows.append([name, "-", "error: " + s["error"][:80]] + [None] * (len(cols) - 3))
            continue
        ratio = lambda a, b: None if ref is None or not b else a / b  # noqa: E731
        diff = diff_full = None
        if ref is not None:
            diff = float(np.max(np.abs(np.asarray(s["traj"]) - np.asarray(ref["traj"]))))
        full = solves.get("casadi (full)")
        if full is not None and "error" not in full:
            diff_full = float(np.max(np.abs(np.asarray(s["traj"]) - np.asarray(full["traj"]))))
        c = {"wall": ratio(s["solve"]["wall_s"], ref["solve"]["wall_s"]) if ref else None,
             "cpu": ratio(s["solve"]["cpu_s"], ref["solve"]["cpu_s"]) if ref else None,
             "iterations": ratio(max(s["iterations"], 1), max(ref["iterations"], 1)) if ref else None,
             "trajectory_max_diff": diff, "trajectory_max_diff_vs_full": diff_full,
             "objective_rel_diff": (abs(s["objective"] - ref["objective"]) / max(abs(ref["objective"]), 1e-300))
             if ref else None}
        cmp[name] = c
        rows.append([name, s.get("derivatives"), s["status"], "pass" if s["check"]["solved"] else "FAIL",
                     f"{s['objective']:.7g}", s["iterations"], s["nlps"], common.fmt_time(s["solve"]["wall_s"]),
                     common.fmt_time(s["solve"]["cpu_s"]), _f(s["peak_rss_mb"], ".0f"), _f(c["wall"], ".2f"),
                     _f(c["cpu"], ".2f"), _f(c["iterations"], ".2f"), common.fmt_residual(s["check"]["comp_min"]),
                     common.fmt_residual(s["check"]["constraint"]), common.fmt_residual(diff),
                     common.fmt_residual(diff_full)])
    some = next((s for s in solves.values() if "error" not in s), None)
    title = "sagittal CALIPSO-like task: one start, CasADi path vs Pyomo plugin"
    if some is not None:
        title = (f"sagittal CALIPSO-like task ({some['task']}, h = {some['h']:.4g}, n_x = {some['n_x']}, "
                 f"n_comp = {some['n_comp']}): one start, CasADi path vs Pyomo plugin")
    common.print_table(title, cols, rows,
                       caption="solve = the whole call (the plugin's includes Pyomo -> Program); independent "
                               "check = Program.residuals of the original program (1e-6 rows/bounds, 1e-8 "
                               "complementarity); traj diff = max |q, v, u| difference")
    return cmp


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return child_main(argv[1], argv[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=None)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--formulation", default="cone")
    ap.add_argument("--solve-n", type=int, default=None, help="N of the CALIPSO-like solve (default 30)")
    ap.add_argument("--strategy", default="elastic_l1")
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--time-limit", type=float, default=None, help="wall seconds per solve (default 900)")
    ap.add_argument("--casadi-derivatives", nargs="+", default=["auto", "full"],
                    choices=["auto", "full", "stages", "stages_jit"])
    ap.add_argument("--repeats", type=int, default=3,
                    help="fresh subprocesses per (model, N) in part 1; medians reported (default 3)")
    ap.add_argument("--build-timeout", type=float, default=1800.0, help="hard limit per build subprocess (s)")
    ap.add_argument("--no-solve", action="store_true")
    ap.add_argument("--no-build", action="store_true", help="skip part 1 (the solve comparison only)")
    ap.add_argument("--no-nl", action="store_true", help="skip the NL-writer probe")
    ap.add_argument("--quick", action="store_true", help="N in (10, 20); solve at N = 10 (h = 0.1) within 300 s")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "pyomo_solo12.json")
    ap.add_argument("--table", type=Path, metavar="JSON", help="print the tables of a finished run's JSON; no runs")
    args = ap.parse_args(argv)
    if args.table:
        old = json.loads(args.table.read_text())
        if old.get("builds"):
            build_table(old["builds"], growth(old["builds"]))
        if old.get("solves"):
            solve_table(old["solves"])
        return 0
    sizes = args.sizes or list(QUICK_SIZES if args.quick else SIZES)
    solve_n = args.solve_n or (10 if args.quick else 30)
    limit = args.time_limit or (300.0 if args.quick else 900.0)
    t_start = time.perf_counter()
    settings = {"sizes": sizes, "models": args.models, "formulation": args.formulation, "solve_n": solve_n,
                "strategy": args.strategy, "tol": args.tol, "time_limit_s": limit,
                "casadi_derivatives": args.casadi_derivatives, "solve": not args.no_solve, "nl": not args.no_nl,
                "repeats": args.repeats,
                "build": not args.no_build,
                "walk": {"h": f"{WALK_T:g} / N", "dx": WALK_DX}}
    results: dict[str, Any] = {**common.run_header("pyomo_solo12", ["benchmarks/pyomo_solo12.py", *argv], 0),
                               "settings": settings, "load_average_start": os.getloadavg(),
                               "environment": {k: os.environ.get(k)
                                               for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")},
                               "builds": [], "solves": {}}
    results["versions"].update(common.versions(("pyomo", "casadi")))

    def save() -> None:
        common.write_json(args.out, {**results, "load_average_now": os.getloadavg(),
                                     "wall_time_s": time.perf_counter() - t_start})

    for model in ([] if args.no_build else args.models):
        for n in sizes:
            print(f"[{time.perf_counter() - t_start:7.1f} s] build {model} N={n}", file=sys.stderr, flush=True)
            cfg = {"planar": MODELS[model], "N": n, "formulation": args.formulation, "nl": not args.no_nl}
            rec = {"model": model, "N": n, **run_child("build", cfg, args.build_timeout)}
            if "error" not in rec and args.repeats > 1:
                more = [run_child("build", {**cfg, "nl": False}, args.build_timeout) for _ in range(args.repeats - 1)]
                rec = median_of_repeats(rec, [m for m in more if "error" not in m])
            results["builds"].append(rec)
            print(json.dumps({k: v for k, v in rec.items() if k not in ("traceback",)}, default=str)[:600],
                  file=sys.stderr, flush=True)
            save()
    scale = growth(results["builds"])
    results["growth"] = scale
    save()

    if not args.no_solve:
        paths = [(f"casadi ({d})", {"path": "casadi", "derivatives": d}) for d in args.casadi_derivatives]
        paths.append(("pyomo", {"path": "pyomo"}))
        for name, extra in paths:
            print(f"[{time.perf_counter() - t_start:7.1f} s] solve {name}", file=sys.stderr, flush=True)
            cfg = {"N": solve_n, "formulation": args.formulation, "strategy": args.strategy, "tol": args.tol,
                   "time_limit": limit, **extra}
            rec = run_child("solve", cfg, limit + 600.0)
            results["solves"][name] = rec
            print(json.dumps({k: v for k, v in rec.items() if k not in ("traj", "homotopy", "traceback")},
                             default=str)[:800], file=sys.stderr, flush=True)
            save()

    if results["builds"]:
        build_table(results["builds"], scale)
    if results["solves"]:
        results["solve_comparison"] = solve_table(results["solves"])
    results["load_average_end"] = os.getloadavg()
    return common.finish(args.out, results, t_start)


if __name__ == "__main__":
    sys.exit(main())
