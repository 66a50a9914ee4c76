"""Our MPCC layer against nosnoc 0.2.0 (trajectory optimization through contact) and against a plain
Scholtes homotopy with IPOPT (the NOSBENCH MPCCs), in one run on the same machine.

    python benchmarks/mpcc_vs_nosnoc.py [--quick] [--fresh] [--part a|b|all] [--time-limit S]
                                        [--task-time-limit S] [--repeats R] [--out FILE]
                                        [--strategies S1,S2,...] [--only SUBSTR,...] [--data DEST]

Part A: two tasks posed both in contactmp (``ContactImplicitTO``: Stewart-Trinkle / Anitescu-Potra
velocity-level time stepping, one pyramid block per step, semi-implicit Euler) and in nosnoc 0.2.0
(FESD: Radau IIA collocation with ``n_s`` stages on ``n_fe`` finite elements per control interval
whose lengths are free, Stewart's reformulation of the Filippov system, Scholtes homotopy), with the
same horizon ``T``, the same ``N`` piecewise-constant control intervals, the same bounds and the
same cost. The discretizations of the dynamics differ (see the table header), so final costs agree
only up to discretization error; the "cost" column is the task's cost recomputed from each
method's control sequence (``sum_k (T/N) u_k^T R u_k``, exact for piecewise-constant controls), not
the solvers' own NLP objective (nosnoc's adds step-equilibration terms).

* block: a block (m = 1 kg, mu = 0.5) on the ground pushed by a horizontal force ``|u| <= 20 N``
  from rest at x = 0 to rest at x = 0.5 m in T = 1 s, N = 20, cost ``int u^2 dt``. contactmp:
  ``point_mass_2d`` and ``box_2d`` (4 corner contacts), each with the pyramid block (exact for
  planar contacts) and, when ``ContactImplicitTO`` offers it, the cone block, and every MPCC
  strategy; nosnoc: the 1-D Filippov model ``m vdot in u - mu m g sign(v)``. The continuous-time
  optimum is known in closed form: move during a time ``tau`` with the cubic position profile and
  stick (u = 0) for the rest, ``J* = m^2 min_{tau <= T} (12 d^2 / tau^3 + (mu g)^2 tau)``.
* hopper: contactmp's ``hopper_2d`` (body 10 kg, leg 1 kg, mu = 0.8) from standing at x = 0 to
  standing at x = 0.5 m, at rest at both ends, in T = 1 s, N = 20, ``|f_leg| <= 400 N``,
  ``|tau_hip| <= 50 N m``, leg length in [0.5, 1.2], cost ``int 0.01 ||u||^2 dt`` (contactmp:
  the pyramid block, every MPCC strategy; initial guess: linear interpolation). nosnoc 0.2.0
  has no rigid-contact (CLS) model, so its hopper is the time-freezing reformulation of the same
  rigid-body model (same ``M, h, B, phi, Jn, Jt``, passed as a serialized CasADi Function):
  impacts are inelastic in both, but nosnoc lets the foot penetrate the ground slightly while the
  auxiliary dynamics act, adds the speed of time as a control, and (as nosnoc's own hopper
  example does) forbids slipping while the contact dynamics act (``|Jt v| theta_aux = 0``), where
  contactmp lets the foot slide under Coulomb friction. nosnoc's settings follow that example
  (sigma_0 = 100, 6 NLPs, 3 finite elements, its default initialization).

nosnoc runs in its own virtual environment (``benchmarks/setup_nosnoc.sh``; the interpreter is
``$CONTACTMP_NOSNOC_PYTHON`` or ``${XDG_CACHE_HOME:-~/.cache}/contactmp/nosnoc/bin/python``) through
``benchmarks/nosnoc_side.py``; without it the nosnoc rows are skipped with a message. Every
trajectory (ours and nosnoc's) is also re-simulated open loop with contactmp's ``TimeStepping`` at
step ``T / (20 N)``: the "re-sim err" column is the distance of that simulation's final state from
the goal (how much the optimized controls really achieve).

Part B: every NOSBENCH problem of the subsets ``nosbench`` (20) and ``nosbench-more`` (46), 66
problems from 23 families (NOSBENCH is not in the repository: ``python tools/fetch_nosbench.py
DEST`` writes them, and ``--data DEST`` or ``$CONTACTMP_NOSBENCH=DEST`` points the benchmark at
DEST, the folder that contains ``nosbench/`` and ``nosbench-more/``), solved by each MPCC strategy of
``contactmp.solvers.nlp.solve.STRATEGIES`` (``--strategies`` picks some; the default is whatever that
registry holds, so new strategies join by themselves) through
``contactmp.solvers.nlp.nosbench.solve_nosbench``, and by a plain Scholtes homotopy written here with
``casadi.nlpsol`` (sigma = 1, 0.1, ..., 1e-9, ``G_i H_i <= sigma``, signs of G and H from the bounds
only, primal warm start, IPOPT with ``bound_relax_factor = 0`` and ``mu_strategy = adaptive``, stop
at the first successful NLP with ``max_i G_i H_i <= 1e-7``). Every answer is judged by the paper's
criterion on the returned point (bounds and g feasible to 1e-6, signed ``max_i G_i H_i <= 1e-7``);
ratios are against the plain loop of the same run. Times are wall times from the file to the judged
answer (load, NLP construction and, for ours, the B-stationarity certificate included), with a time
limit per solve (the plain loop checks it between NLPs, each NLP has it as IPOPT's
``max_wall_time``). The tables give per problem the family, sizes, status, time, IPOPT iterations
and NLP count of every method and the B-stationarity verdict of each of our answers; per family
the solved counts and times; and the totals (solved, total time and its ratio to the plain loop's).
A PNG next to the JSON shows the performance profile and the time per problem. nosnoc 0.2.0 has no
entry point for a generic MPCC (``nosnoc_side.py --probe-mpcc`` checks), so part B has no nosnoc
column and says why. Records of ours are keyed by a hash of the solver sources, so a run after a
code change recomputes them.

Output: ``benchmarks/out/mpcc_vs_nosnoc.json`` and ``benchmarks/out/mpcc_vs_nosnoc.jsonl`` (one
finished record per line, keyed and with its settings' fingerprint ``config``, appended as it
finishes by :class:`contactmp.records.RecordStore`; a new run with the same settings skips the
records already there, so an interrupted run resumes; ``--fresh`` starts over).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

from contactmp.nosbench import COMP_TOL, FEAS_TOL  # noqa: E402
from contactmp.records import RecordStore  # noqa: E402
from contactmp.result import jsonable  # noqa: E402

DEFAULT_NOSNOC_PYTHON = (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                         / "contactmp" / "nosnoc" / "bin" / "python")  # where setup_nosnoc.sh puts it
NOSNOC_VERSION = "0.2.0"
SIDE_SCRIPT = Path(__file__).resolve().parent / "nosnoc_side.py"
#: fine steps per control interval of the open-loop re-simulation
RESIM_SUBSTEPS = 20

BLOCK = {"m": 1.0, "mu": 0.5, "g": 9.81, "d": 0.5, "T": 1.0, "N": 20, "u_max": 20.0}
HOPPER = {"d": 0.5, "T": 1.0, "N": 20, "R": [1e-2, 1e-2], "u_lb": [-400.0, -50.0],
          "u_ub": [400.0, 50.0], "q_lb": [-1.0, 0.3, -math.pi / 4, -math.pi / 2, 0.5],
          "q_ub": [1.5, 2.0, math.pi / 4, math.pi / 2, 1.2]}
#: nosnoc settings per task (FESD with Radau IIA; the hopper's follow nosnoc's own hopper example)
NOSNOC_BLOCK = {"n_fe": 2, "n_s": 2, "comp_tol": 1e-9, "sigma_0": 1.0, "homotopy_update_slope": 0.1,
                "step_equilibration": "HEURISTIC_MEAN", "ipopt_max_iter": 3000}
NOSNOC_HOPPER = {"n_fe": 3, "n_s": 2, "comp_tol": 1e-9, "sigma_0": 100.0,
                 "homotopy_update_slope": 0.1, "step_equilibration": "HEURISTIC_MEAN",
                 "ipopt_max_iter": 4000, "acceptable_tol": 1e-6, "max_iter_homotopy": 6,
                 "sot_min": 0.1, "sot_max": 20.0, "time_freezing_tolerance": 1e-3,
                 "normal_acceleration": 100.0, "no_slip": True, "initialization": "default"}
#: nosnoc's answer counts as solved when IPOPT succeeded and its complementarity residual is below
NOSNOC_ACCEPT_COMP = 1e-6
REF = "reference"


# ============================================================================================
# resumable records (contactmp.records.RecordStore through contactmp.parallel.run_tasks)
# ============================================================================================
def fingerprint(obj: Any) -> str:
    """A short hash of a JSON-ready configuration."""
    return hashlib.sha1(json.dumps(jsonable(obj), sort_keys=True).encode()).hexdigest()[:12]


# ============================================================================================
# nosnoc's interpreter
# ============================================================================================
def nosnoc_python() -> tuple[Path | None, str]:
    """The interpreter of nosnoc's virtual environment and ``""``, or ``None`` and why not."""
    py = Path(os.environ.get("CONTACTMP_NOSNOC_PYTHON", DEFAULT_NOSNOC_PYTHON))
    if not py.exists():
        return None, (f"{py} does not exist (create it with `bash benchmarks/setup_nosnoc.sh`, or set "
                      "CONTACTMP_NOSNOC_PYTHON to an interpreter that has nosnoc 0.2.0)")
    try:
        out = subprocess.run([str(py), "-c", "import importlib.metadata as m, nosnoc; print(m.version('nosnoc'))"],
                             capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{py} cannot import nosnoc: {exc}"
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["(no message)"])[-1]
        return None, f"{py} cannot import nosnoc: {last}"
    version = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "?"
    if version != NOSNOC_VERSION:
        return None, f"{py} has nosnoc {version}, this benchmark is written for {NOSNOC_VERSION}"
    return py, ""


def run_nosnoc(py: Path, spec: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Run ``nosnoc_side.py`` on ``spec`` in nosnoc's interpreter; its JSON record (or an error)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(jsonable(spec), fh)
        path = fh.name
    t0 = time.perf_counter()
    env = {**os.environ, "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
    try:
        out = subprocess.run([str(py), str(SIDE_SCRIPT), path], capture_output=True, text=True,
                             timeout=timeout_s, check=False, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"time limit: no answer after {timeout_s:.0f} s", "time_limit": True,
                "wall_s": time.perf_counter() - t0}
    finally:
        os.unlink(path)
    wall = time.perf_counter() - t0
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        err = (out.stderr.strip().splitlines() or [f"exit code {out.returncode}, no output"])[-1]
        return {"error": f"nosnoc_side.py failed: {err}", "wall_s": wall}
    rec = json.loads(lines[-1])
    rec["wall_s"] = wall
    return rec


# ============================================================================================
# Part A: the two tasks in contactmp
# ============================================================================================
def block_optimum(m: float, mu: float, g: float, d: float, T: float) -> tuple[float, float]:
    """The continuous-time optimum of the block task and its moving time ``tau``.

    While the block slides forward ``u = m (a + mu g)``, so over a moving phase of length ``tau``
    ``int u^2 = m^2 (int a^2 + (mu g)^2 tau)`` (``int a = 0``: at rest at both ends), and the least
    ``int a^2`` that covers ``d`` is ``12 d^2 / tau^3`` (cubic position). Sticking with ``u = 0``
    costs nothing and one moving phase beats several, so
    ``J* = m^2 min_{0 < tau <= T} (12 d^2 / tau^3 + (mu g)^2 tau)``, at
    ``tau = min(T, sqrt(6 d / (mu g)))``.
    """
    tau = min(T, math.sqrt(6.0 * d / (mu * g))) if mu * g > 0 else T
    return m * m * (12.0 * d * d / tau**3 + (mu * g) ** 2 * tau), tau


def block_system(name: str) -> Any:
    """contactmp's system for the block task: ``point_mass_2d`` or ``box_2d`` (1 m x 0.5 m)."""
    from contactmp.models.systems import box_2d, point_mass_2d

    b = BLOCK
    if name == "point_mass_2d":
        return point_mass_2d(m=b["m"], mu=b["mu"], g=b["g"])
    return box_2d(m=b["m"], mu=b["mu"], g=b["g"])


def _rest_to_rest(system: Any, formulation: str, N: int, T: float, d: float) -> tuple[Any, np.ndarray, np.ndarray]:
    """A ContactImplicitTO of N steps over T from rest at q_nominal to rest at q_nominal + d e_x."""
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    to = ContactImplicitTO(system, N, T / N, formulation=formulation)
    q0 = np.array(system.q_nominal, dtype=float)
    qf = q0.copy()
    qf[0] += d
    to.set_initial_state(q0, np.zeros(system.n_v))
    to.set_final_state(qf, np.zeros(system.n_v))
    return to, q0, qf


def build_block_to(system: Any, formulation: str) -> tuple[Any, np.ndarray, np.ndarray]:
    """The block task as a ContactImplicitTO; returns it with the start and goal configurations."""
    b = BLOCK
    to, q0, qf = _rest_to_rest(system, formulation, b["N"], b["T"], b["d"])
    lb, ub = np.zeros(system.n_u), np.zeros(system.n_u)
    lb[0], ub[0] = -b["u_max"], b["u_max"]
    to.bound_inputs(lb, ub)  # horizontal push only
    to.minimize_effort(1.0)  # h sum_k ||u_k||^2 = int u_x^2 dt
    return to, q0, qf


def build_hopper_to(system: Any, formulation: str) -> tuple[Any, np.ndarray, np.ndarray]:
    """The hopper task as a ContactImplicitTO; returns it with the start and goal configurations."""
    hp = HOPPER
    h = hp["T"] / hp["N"]
    to, q0, qf = _rest_to_rest(system, formulation, hp["N"], hp["T"], hp["d"])
    to.bound_inputs(hp["u_lb"], hp["u_ub"])
    lbq, ubq = np.array(hp["q_lb"]), np.array(hp["q_ub"])
    for qk in to.q:
        qk.lb, qk.ub = lbq.copy(), ubq.copy()
        qk.init = np.clip(qk.init, lbq, ubq)
    to.add_quadratic_cost(R=h * np.asarray(hp["R"]))  # h sum_k u_k^T R u_k
    return to, q0, qf


def resimulate(system: Any, u: np.ndarray, q0: np.ndarray, qf: np.ndarray, T: float) -> dict[str, Any]:
    """Open-loop re-simulation of the piecewise-constant controls ``u`` (N x n_u) with
    ``TimeStepping`` (pyramid) at step ``T / (RESIM_SUBSTEPS N)``; the final state's distance from
    the goal ``(qf, 0)`` (max norm) and the deepest penetration."""
    from contactmp.transcriptions.time_stepping import TimeStepping

    N = u.shape[0]
    fine = np.repeat(np.asarray(u, dtype=float), RESIM_SUBSTEPS, axis=0)
    ts = TimeStepping(system, T / (N * RESIM_SUBSTEPS), formulation="pyramid")
    traj = ts.simulate(q0, np.zeros(system.n_v), fine, N * RESIM_SUBSTEPS)
    err = max(float(np.max(np.abs(traj.q[-1] - qf))), float(np.max(np.abs(traj.v[-1]))))
    phi = np.array([system.eval_phi(q) for q in traj.q]) if hasattr(system, "eval_phi") else None
    return {"resim_error": err, "resim_failed_steps": traj.n_failed,
            "resim_min_gap": None if phi is None else float(np.min(phi))}


def formulations_available() -> dict[str, str]:
    """ContactImplicitTO formulations we can run: name -> "" (available) or why not."""
    from contactmp.errors import ContactMPError
    from contactmp.models.systems import point_mass_2d
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    out = {}
    for form in ("pyramid", "cone"):
        try:
            ContactImplicitTO(point_mass_2d(), 2, 0.1, formulation=form)
            out[form] = ""
        except ContactMPError as exc:
            out[form] = str(exc)
    return out


def run_ours_task(task: str, system_name: str, formulation: str, strategy: str, time_limit: float,
                  repeats: int) -> dict[str, Any]:
    """Build and solve one task with contactmp; the median solve time over ``repeats``."""
    from contactmp.models.systems import hopper_2d

    t0 = time.perf_counter()
    system = hopper_2d() if task == "hopper" else block_system(system_name)
    builder = build_hopper_to if task == "hopper" else build_block_to
    to, q0, qf = builder(system, formulation)
    build_s = time.perf_counter() - t0
    t_med, times, r = common.median_time(
        lambda: to.solve(strategy=strategy, time_limit=time_limit, pyramid_start=False), repeats)  # one program, as nosnoc's
    T = HOPPER["T"] if task == "hopper" else BLOCK["T"]
    err = max(float(np.max(np.abs(r.q[-1] - qf))), float(np.max(np.abs(r.v[-1]))))
    rec: dict[str, Any] = {
        "solved": r.status.value == "solved", "status": r.status.value, "build_s": build_s,
        "solve_s": t_med, "times_s": times, "cost": float(r.objective),
        "comp_violation": float(r.comp_violation), "constraint_violation": float(r.constraint_violation),
        "terminal_error": err, "iterations": int(r.result.iterations),
        "nlps": len(r.result.extras.get("homotopy", [])), "message": r.result.message,
        "u": r.u, "q": r.q, "n_x": to.program.n_x,
    }
    rec.update(resimulate(system, r.u, q0, qf, T))
    return rec


def nosnoc_homotopy_length(settings: dict[str, Any]) -> int:
    """How many NLPs nosnoc 0.2.0's homotopy solves at most (its own rule when not given)."""
    if settings.get("max_iter_homotopy"):
        return int(settings["max_iter_homotopy"])
    return int(round(abs(math.log(settings["comp_tol"] / settings["sigma_0"])
                         / math.log(settings["homotopy_update_slope"])))) + 1


def nosnoc_spec(task: str, time_limit: float) -> dict[str, Any]:
    """The spec that ``nosnoc_side.py`` reads for ``task``. nosnoc has no overall time limit, so
    the budget ``time_limit`` of the whole homotopy is split evenly over its NLPs (IPOPT's
    ``max_wall_time``); ours gets the same budget for its whole homotopy."""
    if task == "block":
        b = BLOCK
        per_nlp = time_limit / nosnoc_homotopy_length(NOSNOC_BLOCK)
        return {"task": "block", **NOSNOC_BLOCK, "T": b["T"], "N": b["N"], "m": b["m"], "mu": b["mu"],
                "g": b["g"], "d": b["d"], "u_max": b["u_max"], "time_limit": per_nlp,
                "accept_comp": NOSNOC_ACCEPT_COMP}
    import casadi as ca

    from contactmp.models.systems import hopper_2d

    s, hp = hopper_2d(), HOPPER
    fun = ca.Function("hopper_dynamics", [s.q, s.v, s.u], [s.M, s.B @ s.u - s.h, s.phi, s.Jn, s.Jt])
    q0 = np.array(s.q_nominal, dtype=float)
    qf = q0.copy()
    qf[0] += hp["d"]
    M, _, _, Jn, _ = (np.array(a, dtype=float) for a in fun(q0, np.zeros(s.n_v), np.zeros(s.n_u)))
    # scale the auxiliary dynamics so the foot's normal acceleration is normal_acceleration m/s^2
    w_nn = float((Jn @ np.linalg.solve(M, Jn.T))[0, 0])
    spec = {k: v for k, v in NOSNOC_HOPPER.items() if k != "normal_acceleration"}
    return {"task": "hopper", **spec, "T": hp["T"], "N": hp["N"], "mu": float(np.ravel(s.mu)[0]),
            "a_n": NOSNOC_HOPPER["normal_acceleration"] / w_nn, "dynamics": fun.serialize(),
            "q0": q0.tolist(), "qf": qf.tolist(), "R": hp["R"], "u_lb": hp["u_lb"], "u_ub": hp["u_ub"],
            "q_lb": hp["q_lb"], "q_ub": hp["q_ub"],
            "time_limit": time_limit / nosnoc_homotopy_length(NOSNOC_HOPPER),
            "accept_comp": NOSNOC_ACCEPT_COMP}


def run_nosnoc_task(py: Path, task: str, time_limit: float, repeats: int) -> dict[str, Any]:
    """Solve ``task`` with nosnoc (median over ``repeats`` subprocess runs) and re-simulate it."""
    from contactmp.models.systems import hopper_2d

    spec = nosnoc_spec(task, time_limit)
    runs = []
    for _ in range(max(1, repeats)):
        rec = run_nosnoc(py, spec, timeout_s=time_limit + 180.0)  # + building and checking
        runs.append(rec)
        if "error" in rec:
            break
    rec = dict(runs[-1])
    if "error" in rec:
        return {"solved": False, "status": "time_limit" if rec.get("time_limit") else "error",
                "message": rec["error"], "solve_s": rec.get("wall_s")}
    rec["times_s"] = [r["solve_s"] for r in runs]
    rec["solve_s"] = statistics.median(rec["times_s"])
    u = np.asarray(rec["u"], dtype=float)
    if task == "block":
        system = block_system("point_mass_2d")
        q0 = np.zeros(2)
        qf = np.array([BLOCK["d"], 0.0])
        u_sys = np.column_stack([u[:, 0], np.zeros(len(u))])
        T = BLOCK["T"]
    else:
        system = hopper_2d()
        q0 = np.array(system.q_nominal, dtype=float)
        qf = q0.copy()
        qf[0] += HOPPER["d"]
        u_sys = u[:, :system.n_u]
        T = HOPPER["T"]
        x = np.asarray(rec["x_ctrl"], dtype=float)
        rec["min_gap"] = float(min(system.eval_phi(xk[:system.n_q]).min() for xk in x))
        rec["speed_of_time"] = u[:, -1].tolist()
    rec["status"] = "solved" if rec["solved"] else ("ipopt_success" if rec["ipopt_success"] else "not_solved")
    rec.update(resimulate(system, u_sys, q0, qf, T))
    return rec


# ============================================================================================
# Part B: NOSBENCH
# ============================================================================================
#: the NOSBENCH subsets (folders under --data / $CONTACTMP_NOSBENCH) that part B covers (20 + 46
#: problems from 23 families)
NOSBENCH_FOLDERS = ("nosbench", "nosbench-more")
#: the source files whose contents decide what our solvers do on a NOSBENCH file: a record made
#: with other code is computed again (its ``config`` carries their hash)
CODE_FILES = ("solvers/nlp/solve.py", "solvers/nlp/mpcc.py", "solvers/nlp/nosbench.py", "solvers/nlp/stationarity.py",
              "solvers/ipopt.py", "contactmp/nosbench.py", "contactmp/program.py")


def family(name: str) -> str:
    """The NOSBENCH family of a problem: its name up to the first underscore (``2BCLS``, ``CLS1D``)."""
    return name.split("_", 1)[0]


def nosbench_files(quick: bool, only: str | None = None) -> list[Path]:
    """The NOSBENCH problem files of both folders, smallest first (``--quick``: the 8 smallest;
    ``only``: the names containing one of its comma-separated substrings)."""
    files = [f for d in NOSBENCH_FOLDERS for f in common.nosbench_files(d)]
    if len({f.stem for f in files}) != len(files):
        raise SystemExit("two NOSBENCH folders hold a problem of the same name; the record keys need unique names")
    if only:
        subs = [x.strip() for x in only.split(",") if x.strip()]
        files = [f for f in files if any(x in f.stem for x in subs)]
    files.sort(key=lambda p: (p.stat().st_size, p.name))
    return files[:8] if quick else files


def code_fingerprint() -> str:
    """A hash of :data:`CODE_FILES` as installed (the contactmp package this run imports)."""
    import contactmp
    import contactmp.solvers

    roots = {"contactmp": Path(contactmp.__file__).parent, "solvers": Path(contactmp.solvers.__file__).parent}
    h = hashlib.sha1()
    for rel in CODE_FILES:
        top, name = rel.split("/", 1)
        f = roots[top] / name
        h.update(rel.encode())
        h.update(f.read_bytes() if f.exists() else b"(missing)")
    return h.hexdigest()[:12]


def nosnoc_generic_mpcc(py: Path | None) -> tuple[bool, str]:
    """Whether nosnoc (interpreter ``py``) can solve a generic MPCC read from a NOSBENCH file, and
    the note for the table (``nosnoc_side.py --probe-mpcc`` looks for such an entry point)."""
    if py is None:
        return False, "nosnoc is not installed"
    try:
        out = subprocess.run([str(py), str(SIDE_SCRIPT), "--probe-mpcc"], capture_output=True, text=True,
                             timeout=120, check=False)
        rec = json.loads([ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1])
    except (OSError, subprocess.TimeoutExpired, IndexError, ValueError) as exc:
        return False, f"probing nosnoc failed ({exc})"
    if rec.get("error"):
        return False, f"probing nosnoc failed ({rec['error']})"
    if rec.get("generic_mpcc_entry_points"):
        return False, (f"nosnoc {rec.get('version')} has {rec['generic_mpcc_entry_points']}, which this "
                       "benchmark does not call yet")
    return False, (f"nosnoc {rec.get('version')} has no entry point for a generic MPCC: its only solver, "
                   f"NosnocSolver({', '.join(rec.get('NosnocSolver_arguments', []))}), builds its MPCC from "
                   "a piecewise smooth model and an OCP by FESD; NOSBENCH's problems are solved by MATLAB "
                   "nosnoc's mpccsol, which the Python package lacks. The nosnoc column is skipped")


def reference_scholtes(path: Path, time_limit: float) -> dict[str, Any]:
    """The plain Scholtes homotopy of the NOSBENCH paper with IPOPT, written out here.

    ``min f(w, p0) s.t. lbw <= w <= ubw, lbg <= g <= ubg, G_i(w) H_i(w) <= sigma`` for
    ``sigma = 1, 0.1, ..., 1e-9`` (no ``G, H >= 0``: their signs come from the bounds), each NLP
    started at the previous answer, IPOPT with ``bound_relax_factor = 0`` and ``mu_strategy =
    adaptive`` (other options at IPOPT's defaults); the homotopy stops at the first NLP that IPOPT
    solves with ``max_i G_i H_i <= 1e-7``. The answer is judged by the paper's criterion.
    """
    import casadi as ca

    from contactmp.nosbench import load_nosbench

    t0, c0 = time.perf_counter(), time.process_time()
    pb = load_nosbench(path)
    w, p, sigma, ev = common.nosbench_symbols(pb)
    G, H = ev(pb.G_fun), ev(pb.H_fun)
    g = ca.vertcat(ev(pb.g_fun), G * H - sigma)
    lbg = np.concatenate([pb.lbg, np.full(pb.n_comp, -np.inf)])
    ubg = np.concatenate([pb.ubg, np.zeros(pb.n_comp)])
    ipopt = {"print_level": 0, "sb": "yes", "bound_relax_factor": 0.0, "mu_strategy": "adaptive",
             "max_wall_time": float(time_limit)}
    solver = ca.nlpsol("reference_scholtes", "ipopt",
                       {"x": w, "p": ca.vertcat(p, sigma), "f": ev(pb.objective_fun), "g": g},
                       {"ipopt": ipopt, "print_time": False, "error_on_fail": False})
    x = pb.w0.copy()
    history: list[dict[str, Any]] = []
    status = "not started"
    timed_out = False
    for k in range(10):
        s = 10.0 ** (-k)
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            status, timed_out = "time_limit", True
            break
        sol = solver(x0=x, p=np.concatenate([pb.p0, [s]]), lbx=pb.lbw, ubx=pb.ubw, lbg=lbg, ubg=ubg)
        st = solver.stats()
        status = str(st.get("return_status", "unknown"))
        xn = np.asarray(sol["x"], dtype=float).ravel()
        if np.isfinite(xn).all():
            x = xn
        G_v = np.asarray(pb.G_fun(x, pb.p0), dtype=float).ravel()
        H_v = np.asarray(pb.H_fun(x, pb.p0), dtype=float).ravel()
        comp = float(np.max(G_v * H_v, initial=0.0)) if G_v.size else 0.0
        history.append({"sigma": s, "status": status, "iterations": int(st.get("iter_count", 0)),
                        "comp_residual": comp})
        if status in ("Solve_Succeeded", "Solved_To_Acceptable_Level") and comp <= COMP_TOL:
            break
    judged = common.paper_judge(pb, x)
    wall = time.perf_counter() - t0
    if wall > time_limit and not judged["solved"]:
        timed_out = True
    return {**judged, "status": "solved" if judged["solved"] else ("time_limit" if timed_out else "not_solved"),
            "ipopt_status": status, "time_s": wall, "cpu_s": time.process_time() - c0, "nlps": len(history),
            "iterations": sum(h_["iterations"] for h_ in history), "homotopy": history,
            "n_w": pb.n_w, "n_g": pb.n_g, "n_comp": pb.n_comp}


def ours_nosbench(path: Path, strategy: str, time_limit: float) -> dict[str, Any]:
    """``contactmp.solvers.nlp.nosbench.solve_nosbench`` with ``strategy``, judged again by the paper's criterion."""
    from contactmp.nosbench import load_nosbench
    from contactmp.solvers.nlp import solve_nosbench

    t0, c0 = time.perf_counter(), time.process_time()
    pb = load_nosbench(path)
    out = solve_nosbench(pb, strategy=strategy, time_limit=time_limit)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    judged = common.paper_judge(pb, np.asarray(out["w"], dtype=float))
    return {**judged, "status": out["status"], "time_s": wall, "cpu_s": cpu, "solve_time_s": out.get("solve_time_s"),
            "nlps": out["nlps"], "iterations": out["iterations"], "message": out["message"],
            "paper_criterion": out.get("paper_criterion"), "b_stationarity": out.get("b_stationarity"),
            "n_w": pb.n_w, "n_g": pb.n_g, "n_comp": pb.n_comp}


def remedy_nosbench(path: Path, variant: str, time_limit: float) -> dict[str, Any]:
    """A variant or portfolio of ``benchmarks/nosbench_remedies.py`` (the plain loop with one change, or
    such loops in order), judged again by the paper's criterion here."""
    import nosbench_remedies as rem

    from contactmp.nosbench import load_nosbench

    rec = rem.run(path, variant, time_limit)
    w = rec.pop("w", None)
    out = {k: v for k, v in rec.items() if k not in ("history",)}
    if w is not None:
        out.update(common.paper_judge(load_nosbench(path), np.asarray(w, dtype=float)))
    return out


def warm_up_b(path: Path, strategies: list[str]) -> None:
    """One untimed solve of ``path`` by every method, so that one-time costs (imports, IPOPT's
    option table, CasADi plugin loading) are not charged to the first timed solve."""
    guarded(lambda: reference_scholtes(path, 10.0))
    for s in strategies:
        guarded(lambda s=s: ours_nosbench(path, s, 10.0))


# ============================================================================================
# running with resume and progress
# ============================================================================================
def guarded(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run ``fn``; a crash becomes a record with status ``error``."""
    t0 = time.perf_counter()
    try:
        return fn()
    except Exception as exc:  # a benchmark records a crashing solver and goes on
        return {"solved": False, "status": "error", "message": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=4), "time_s": time.perf_counter() - t0}


Job = tuple[str, str, Callable[[], dict[str, Any]]]


def job_store(path: Path, jobs: list[Job]) -> RecordStore:
    """The JSONL store at ``path`` as seen by ``(key, config, fn)`` jobs: only the records of their
    configurations count (those of other settings stay in the file and are computed again)."""
    configs = {config for _, config, _ in jobs}
    return RecordStore(path, accept=lambda rec: rec.get("config") in configs)


def _run_job(job: Job) -> dict[str, Any]:
    key, config, fn = job
    return {"key": key, "config": config, **guarded(fn)}


def run_jobs(jobs: list[Job], store: RecordStore, workers: int = 0,
             scheduler: str | None = None) -> dict[str, dict[str, Any]]:
    """Run the ``(key, config, fn)`` jobs that have no record in ``store`` (see :func:`job_store`)
    with :func:`contactmp.parallel.run_tasks`; every job's record, by key.

    ``workers = 0`` and no ``scheduler``: one after the other in this process (the default: timings
    are not shared with other jobs). Otherwise the jobs go to a Dask cluster (a local one of
    ``workers`` processes, or the one at ``scheduler``) and each record is written as it comes back
    (a lost worker's jobs are re-run by Dask; an interrupted run resumes from the JSONL)."""
    from contactmp.parallel import run_tasks

    done = sum(1 for key, _, _ in jobs if key in store)
    if done:
        print(f"resuming: {done} of {len(jobs)} records already in {store.path}", file=sys.stderr)
    todo = len(jobs) - done
    count = [0]

    def log_line(key: str, rec: dict[str, Any]) -> None:
        # rich's progress bar shows only on a terminal; a log (nohup) gets one line per record
        count[0] += 1
        if not sys.stderr.isatty():
            verdict = "solved" if rec.get("solved") else rec.get("status", "?")
            print(f"[{count[0]}/{todo}] {key}: {verdict}, {_f(rec.get('time_s', rec.get('solve_s')), '.3g')} s",
                  file=sys.stderr, flush=True)

    report = run_tasks(_run_job, jobs, keys=[key for key, _, _ in jobs], store_path=store, workers=workers,
                       scheduler=scheduler, retries=2, description="mpcc_vs_nosnoc", callback=log_line)
    return {key: store[key] for key in report.keys}


# ============================================================================================
# reporting
# ============================================================================================
def _f(v: Any, fmt: str = ".4g") -> str:
    if v is None:
        return "-"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    return format(x, fmt) if math.isfinite(x) else str(x)


def _ratio(a: Any, b: Any, fmt: str = ".3g") -> str:
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return "-"
    if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return "-"
    return format(a / b, fmt)


def part_a_rows(task: str, recs: dict[str, dict[str, Any]], labels: list[tuple[str, str]],
                nosnoc_key: str | None) -> list[list[Any]]:
    """Rows of the Part A table of one task; ratios against nosnoc's record of the same run."""
    ref = recs.get(nosnoc_key) if nosnoc_key else None
    ref_ok = ref is not None and ref.get("solved")
    rows = []
    for key, label in labels:
        r = recs.get(key)
        if r is None:
            continue
        is_ref = key == nosnoc_key
        rows.append([
            label, r.get("status"), common.fmt_time(r.get("build_s")), common.fmt_time(r.get("solve_s")),
            _f(r.get("cost"), ".5g"),
            "1" if is_ref and ref_ok else (_ratio(r.get("cost"), ref["cost"], ".4f") if ref_ok and r.get("solved") else "-"),
            "1" if is_ref and ref_ok else (_ratio(r.get("solve_s"), ref["solve_s"]) if ref_ok and r.get("solved") else "-"),
            common.fmt_residual(r.get("comp_violation", r.get("comp_residual"))),
            common.fmt_residual(r.get("terminal_error")), common.fmt_residual(r.get("resim_error")),
        ])
    return rows


PART_A_COLUMNS = ["method", "status", "build", "solve", "cost", "cost/nosnoc", "time/nosnoc",
                  "comp. viol.", "terminal err", "re-sim err"]


def summarize_b(problems: list[str], methods: list[str], recs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per method: solved count and fraction, times, and ratios against the reference (the plain
    loop of this run): the ratio of total times over all problems, and the median and geometric
    mean of the per-problem ratios where both solved."""
    out = []
    ref_solved = sum(1 for p in problems if recs.get(f"B/{p}/{REF}", {}).get("solved"))
    ref_total = sum(float(recs[f"B/{p}/{REF}"]["time_s"]) for p in problems
                    if recs.get(f"B/{p}/{REF}", {}).get("time_s") is not None)
    for m in methods:
        rs = [recs.get(f"B/{p}/{m}") for p in problems]
        ok = [r for r in rs if r and r.get("solved")]
        times = [float(r["time_s"]) for r in rs if r and r.get("time_s") is not None]
        ratios = []
        for p in problems:
            r, ref = recs.get(f"B/{p}/{m}"), recs.get(f"B/{p}/{REF}")
            if r and ref and r.get("solved") and ref.get("solved") and ref["time_s"] > 0:
                ratios.append(float(r["time_s"]) / float(ref["time_s"]))
        bs = [((r or {}).get("b_stationarity") or {}).get("b_stationary", "absent") for r in ok]
        n = len(problems)
        out.append({
            "method": m, "problems": n, "records": sum(1 for r in rs if r), "solved": len(ok),
            "fraction": len(ok) / n if n else 0.0,
            "fraction_ratio_vs_reference": (len(ok) / ref_solved) if ref_solved else None,
            "median_time_solved_s": statistics.median([float(r["time_s"]) for r in ok]) if ok else None,
            "total_time_s": sum(times),
            "total_time_ratio_vs_reference": (sum(times) / ref_total) if ref_total > 0 else None,
            "median_time_ratio_vs_reference": statistics.median(ratios) if ratios else None,
            "geomean_time_ratio_vs_reference": math.exp(statistics.fmean(math.log(x) for x in ratios)) if ratios else None,
            "both_solved": len(ratios),
            "iterations": sum(int(r.get("iterations") or 0) for r in rs if r),
            "nlps": sum(int(r.get("nlps") or 0) for r in rs if r),
            "time_limit_hits": sum(1 for r in rs if r and r.get("status") == "time_limit"),
            "errors": sum(1 for r in rs if r and r.get("status") == "error"),
            "b_stationary": {"yes": bs.count(True), "no": bs.count(False), "unknown": bs.count(None),
                             "absent": bs.count("absent")} if m != REF else None,
            "lpec_time_s": sum(float(((r or {}).get("b_stationarity") or {}).get("time_s") or 0.0) for r in rs),
        })
        cpus = [r.get("cpu_s") for r in rs if r]
        ref_cpu = [recs.get(f"B/{p}/{REF}", {}).get("cpu_s") for p in problems]
        have_cpu = all(c is not None for c in cpus) and all(c is not None for c in ref_cpu) and cpus
        out[-1]["total_cpu_s"] = sum(float(c) for c in cpus) if have_cpu else None
        out[-1]["total_cpu_ratio_vs_reference"] = (sum(float(c) for c in cpus) / sum(float(c) for c in ref_cpu)
                                                   if have_cpu and sum(float(c) for c in ref_cpu) > 0 else None)
        out[-1]["total_time_without_lpec_s"] = out[-1]["total_time_s"] - out[-1]["lpec_time_s"]
        out[-1]["total_time_without_lpec_ratio_vs_reference"] = (
            out[-1]["total_time_without_lpec_s"] / ref_total if ref_total > 0 else None)
    return out


def family_summary(problems: list[str], methods: list[str], recs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per family: problems, and per method solved count and total time."""
    fams: dict[str, list[str]] = {}
    for p in problems:
        fams.setdefault(family(p), []).append(p)
    out = []
    for fam, ps in sorted(fams.items()):
        row: dict[str, Any] = {"family": fam, "problems": len(ps), "methods": {}}
        for m in methods:
            rs = [recs.get(f"B/{p}/{m}") or {} for p in ps]
            row["methods"][m] = {"solved": sum(1 for r in rs if r.get("solved")),
                                 "total_time_s": sum(float(r.get("time_s") or 0.0) for r in rs)}
        out.append(row)
    return out


def _label(m: str) -> str:
    """A method's short name in tables and figures (a remedies portfolio spec is long)."""
    if m == REF:
        return "plain"
    return f"plain-loop {m.split(':', 1)[0]}" if m.startswith(("pf:", "pfc:")) else m


def _status_cell(r: dict[str, Any]) -> str:
    """``yes`` (solved by the paper's criterion), ``TL`` (time limit), ``err``, or ``no``."""
    if not r:
        return "-"
    if r.get("solved"):
        return "yes"
    return {"time_limit": "TL", "error": "err"}.get(str(r.get("status")), "no")


def _bstat_cell(r: dict[str, Any]) -> str:
    """B-stationarity verdict of a record: Y, N, ? (unknown) or - (none)."""
    b = (r or {}).get("b_stationarity") or {}
    if not b:
        return "-"
    return {True: "Y", False: "N"}.get(b.get("b_stationary"), "?")


def _short(name: str) -> str:
    """A problem name without its integrator and its trailing model tag (unique in the 66)."""
    parts = name.split("_")
    keep = [x for x in parts if x not in ("GL", "RIIA", "ERK", "FIL", "ELC", "IEC", "HYS", "0")]
    return "_".join(keep)


def plot_part_b(problems: list[str], methods: list[str], recs: dict[str, dict[str, Any]], path: Path,
                time_limit: float) -> Path:
    """Two panels: the performance profile of the methods (Dolan-More, unsolved = failure) and the
    time per problem (solved: filled marker, not solved: open marker), problems smallest first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times = {m: [float(recs[f"B/{p}/{m}"]["time_s"]) if recs.get(f"B/{p}/{m}", {}).get("solved") else None
                 for p in problems] for m in methods}
    prof = common.performance_profile(times)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(15, 5.5), dpi=110, gridspec_kw={"width_ratios": [1, 1.6]})
    markers = "os^vDPX*<>"
    for k, m in enumerate(methods):
        name = "plain loop" if m == REF else _label(m)
        ax1.step(prof["tau"], prof["rho"][m], where="post", linewidth=1.8,
                 label=f"{name} ({sum(1 for t in times[m] if t is not None)}/{len(problems)})")
        xs = np.arange(len(problems))
        ys = [float((recs.get(f"B/{p}/{m}") or {}).get("time_s") or np.nan) for p in problems]
        solved = [bool((recs.get(f"B/{p}/{m}") or {}).get("solved")) for p in problems]
        mk = markers[k % len(markers)]
        line = ax2.plot(xs[solved], np.asarray(ys)[solved], mk, markersize=5, label=name)[0]
        ax2.plot(xs[[not v for v in solved]], np.asarray(ys)[[not v for v in solved]], mk, markersize=7,
                 markerfacecolor="none", color=line.get_color())
    ax1.set_xscale("log", base=2)
    ax1.set_ylim(-0.02, 1.02)
    ax1.set_xlabel("tau: within a factor tau of the fastest method (log2)")
    ax1.set_ylabel(f"fraction of the {len(problems)} problems solved (paper's criterion)")
    ax1.set_title("NOSBENCH performance profile")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(loc="lower right", fontsize=8)
    ax2.set_yscale("log")
    ax2.axhline(time_limit, color="grey", linestyle=":", linewidth=1)
    ax2.set_xticks(np.arange(len(problems)))
    ax2.set_xticklabels([_short(p) for p in problems], rotation=90, fontsize=6)
    ax2.set_ylabel("wall time per problem [s] (open marker: not solved)")
    ax2.set_title("time per problem, smallest file first")
    ax2.grid(True, which="both", axis="y", alpha=0.3)
    ax2.legend(fontsize=8, ncol=2)
    return common.save_figure(fig, path)


def report_b(problems: list[str], folders: dict[str, str], methods: list[str], recs: dict[str, dict[str, Any]],
             time_limit: float, nosnoc_note: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Print the per-problem table, the per-family table and the totals; return (summary, families)."""
    strategies = [m for m in methods if m != REF]
    cols = ["problem", "set", "fam", "n_w", "n_g", "n_comp"]
    for m in methods:
        cols += [_label(m), "t", "it", "nlp"]
    cols += ["B-stat " + "/".join(s[:4] for s in strategies)]
    rows = []
    for p in problems:
        first = next((recs[k] for k in (f"B/{p}/{m}" for m in methods) if k in recs and "n_w" in recs[k]), {})
        row: list[Any] = [p, "dev" if folders[p] == "nosbench" else "more", family(p), first.get("n_w", "-"),
                          first.get("n_g", "-"), first.get("n_comp", "-")]
        for m in methods:
            r = recs.get(f"B/{p}/{m}") or {}
            row += [_status_cell(r), common.fmt_time(r.get("time_s")), r.get("iterations", "-"), r.get("nlps", "-")]
        row.append("/".join(_bstat_cell(recs.get(f"B/{p}/{s}") or {}) for s in strategies))
        rows.append(row)
    common.print_table(
        f"Part B, NOSBENCH ({len(problems)} problems): solved = bounds and g feasible to {FEAS_TOL:g}, signed "
        f"max_i G_i H_i <= {COMP_TOL:g}; time limit {time_limit:g} s per solve", cols, rows,
        caption="plain = the plain Scholtes + IPOPT loop of this script; yes / no / TL (time limit) / err; "
                "t = wall time from the file (load and NLP construction included); it = IPOPT iterations; "
                "nlp = NLPs solved; B-stat = the B-stationarity verdict of each strategy's answer (Y/N/? unknown). "
                f"nosnoc: {nosnoc_note}.")
    fams = family_summary(problems, methods, recs)
    frows = [[f["family"], f["problems"]] + [c for m in methods for c in
             (f["methods"][m]["solved"], common.fmt_time(f["methods"][m]["total_time_s"]))] for f in fams]
    common.print_table("Part B per family: solved and total time",
                       ["family", "n"] + [c for m in methods for c in (_label(m), "t")], frows)
    summary = summarize_b(problems, methods, recs)
    srows = []
    for sm in summary:
        bs = sm["b_stationary"]
        srows.append([
            "plain loop (reference)" if sm["method"] == REF else sm["method"],  # full spec of a remedy
            f"{sm['solved']}/{sm['problems']}", f"{100 * sm['fraction']:.1f}%",
            common.fmt_time(sm["total_time_s"]), _f(sm["total_time_ratio_vs_reference"], ".3g"),
            common.fmt_time(sm["median_time_solved_s"]),
            "-" if sm["median_time_ratio_vs_reference"] is None else
            f"{sm['median_time_ratio_vs_reference']:.3g} ({sm['both_solved']})",
            _f(sm["geomean_time_ratio_vs_reference"], ".3g"), sm["iterations"], sm["nlps"],
            sm["time_limit_hits"], sm["errors"],
            "-" if bs is None else f"{bs['yes']}/{bs['no']}/{bs['unknown']}/{bs['absent']}",
            "-" if bs is None else common.fmt_time(sm["lpec_time_s"]),
            "-" if bs is None else _f(sm["total_time_without_lpec_ratio_vs_reference"], ".3g"),
            common.fmt_time(sm["total_cpu_s"]), _f(sm["total_cpu_ratio_vs_reference"], ".3g"),
        ])
    common.print_table(
        "Part B totals (ratios against the plain Scholtes loop of this run)",
        ["method", "solved", "fraction", "total t", "total t / plain", "median t (solved)",
         "median t/t_plain (n both)", "geomean t/t_plain", "IPOPT it", "NLPs", "TL", "err",
         "B-stat Y/N/?/none (solved)", "LPEC t", "(total t - LPEC t) / plain", "CPU t", "CPU t / plain"], srows,
        caption="The NOSBENCH paper reports 73.8% of its 603 problems solved by Scholtes + IPOPT; these are "
                "the 66 problems of its nosbench and nosbench-more subsets (23 families). Total times "
                "include the failures (up to the time limit each). CPU t = this process's CPU time (less "
                "sensitive than wall time to other load on the machine).")
    return summary, fams


# ============================================================================================
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=common.REPO / "benchmarks" / "out" / "mpcc_vs_nosnoc.json",
                    help="results JSON (the JSONL of records goes next to it, same stem)")
    ap.add_argument("--quick", action="store_true",
                    help="block task only, the 8 smallest NOSBENCH problems, 30 s limits, 1 repeat")
    ap.add_argument("--fresh", action="store_true", help="ignore (delete) the records of earlier runs")
    ap.add_argument("--part", choices=("a", "b", "all"), default="all", help="run part A, B or both")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="seconds per NOSBENCH solve, ours and the reference (default 60; 30 with --quick)")
    ap.add_argument("--task-time-limit", type=float, default=None,
                    help="seconds per part A solve, the whole homotopy, ours and nosnoc's (default 300)")
    ap.add_argument("--repeats", type=int, default=None,
                    help="timed repeats of the block task solves (default 3; 1 with --quick)")
    ap.add_argument("--strategies", default=None,
                    help="comma-separated MPCC strategies (default: every one in STRATEGIES)")
    ap.add_argument("--remedies", default=None,
                    help="part B: extra methods from benchmarks/nosbench_remedies.py, semicolon-separated variant "
                    "names or portfolios (for example 'pfc:linf,monotone@4>oracle=loqo@1>l1', the measured order)")
    ap.add_argument("--only", default=None,
                    help="part B: only the NOSBENCH problems whose name contains one of these comma-separated "
                    "substrings (for example 2BCLS,CLS1D)")
    ap.add_argument("--seed", type=int, default=0, help="recorded only: every start here is deterministic")
    ap.add_argument("--workers", type=int, default=0,
                    help="Dask local-cluster workers (default 0: one job at a time in this process, so that "
                    "timings do not share the cores)")
    ap.add_argument("--scheduler", default=None, help="an existing Dask scheduler, tcp://HOST:PORT")
    common.add_nosbench_argument(ap)
    args = ap.parse_args(argv)
    common.use_nosbench_argument(args)
    if args.time_limit is None:
        args.time_limit = 30.0 if args.quick else 60.0
    if args.task_time_limit is None:
        args.task_time_limit = 30.0 if args.quick else 300.0
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    if args.repeats < 1 or args.time_limit <= 0 or args.task_time_limit <= 0:
        ap.error("--repeats must be >= 1 and the time limits > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the tables, write the JSON and the JSONL."""
    from contactmp.solvers.nlp import STRATEGIES

    args = parse_args(argv)
    t_start = time.perf_counter()
    strategies = list(STRATEGIES) if args.strategies is None else [s.strip() for s in args.strategies.split(",")]
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise SystemExit(f"unknown strategies {unknown}; known: {list(STRATEGIES)}")
    out_json: Path = args.out
    jsonl = out_json.with_suffix(".jsonl")
    if args.fresh:
        RecordStore(jsonl, fresh=True)
    header = common.run_header("mpcc_vs_nosnoc", [sys.executable] + sys.argv, args.seed)
    result: dict[str, Any] = {**header, "quick": args.quick, "strategies": strategies,
                              "tolerances": {"feasibility": FEAS_TOL, "comp_residual": COMP_TOL}}

    # ---------------------------------------------------------------------------- Part A
    if args.part in ("a", "all"):
        py, why = nosnoc_python()
        if py is None:
            print(f"nosnoc is not available ({why}).\nThe nosnoc rows of part A are skipped.", file=sys.stderr)
        forms = formulations_available()
        form_list = [f for f, msg in forms.items() if not msg]
        tasks = ["block"] if args.quick else ["block", "hopper"]
        cfg_a = {"block": BLOCK, "hopper": HOPPER, "nosnoc_block": NOSNOC_BLOCK,
                 "nosnoc_hopper": NOSNOC_HOPPER, "limit": args.task_time_limit,
                 "accept": NOSNOC_ACCEPT_COMP, "resim": RESIM_SUBSTEPS}
        jobs: list[Job] = []
        labels: dict[str, list[tuple[str, str]]] = {}
        nos_keys: dict[str, str | None] = {}
        for task in tasks:
            systems = ["point_mass_2d", "box_2d"] if task == "block" else ["hopper_2d"]
            reps = args.repeats if task == "block" else 1
            cfg = fingerprint({**cfg_a, "repeats": reps})
            labels[task] = []
            # the hopper with the pyramid only (the block task compares the friction laws)
            forms_task = form_list if task == "block" else [f for f in form_list if f == "pyramid"]
            for sysname in systems:
                for form in forms_task:
                    for strat in strategies:
                        key = f"A/{task}/contactmp/{sysname}/{form}/{strat}"
                        labels[task].append((key, f"contactmp {sysname} {form} {strat}"))
                        jobs.append((key, cfg, lambda t=task, s=sysname, f=form, st=strat, r=reps:
                                     run_ours_task(t, s, f, st, args.task_time_limit, r)))
            nos_keys[task] = None
            if py is not None:
                key = f"A/{task}/nosnoc"
                nos_keys[task] = key
                what = "FESD Stewart, Filippov friction" if task == "block" else "FESD Stewart, time-freezing"
                labels[task].append((key, f"nosnoc {NOSNOC_VERSION} ({what})"))
                jobs.append((key, cfg, lambda t=task, r=reps: run_nosnoc_task(py, t, args.task_time_limit, r)))
        recs = run_jobs(jobs, job_store(jsonl, jobs), args.workers, args.scheduler)
        opt, tau = block_optimum(BLOCK["m"], BLOCK["mu"], BLOCK["g"], BLOCK["d"], BLOCK["T"])
        hdr = ("contactmp: Stewart-Trinkle/Anitescu-Potra velocity time stepping, semi-implicit Euler, "
               "one step per control interval (h = T/N); nosnoc: FESD Radau IIA, n_s = 2 stages, "
               "{fe} finite elements of free length per control interval")
        for task in tasks:
            rows = part_a_rows(task, recs, labels[task], nos_keys[task])
            if task == "block":
                rows.insert(0, ["continuous-time optimum (analytic)", "-", "-", "-", f"{opt:.5g}",
                                _ratio(opt, (recs.get(nos_keys["block"] or "") or {}).get("cost"), ".4f"),
                                "-", "-", "-", "-"])
                title = (f"Part A, friction block: x 0 -> {BLOCK['d']} m at rest, T = {BLOCK['T']} s, "
                         f"N = {BLOCK['N']}, |u| <= {BLOCK['u_max']} N, mu = {BLOCK['mu']}, cost int u^2 dt")
                fe = NOSNOC_BLOCK["n_fe"]
            else:
                title = (f"Part A, hopper: x 0 -> {HOPPER['d']} m standing at rest, T = {HOPPER['T']} s, "
                         f"N = {HOPPER['N']}, cost int 0.01 ||u||^2 dt")
                fe = NOSNOC_HOPPER["n_fe"]
            common.print_table(title, PART_A_COLUMNS, rows, caption=hdr.format(fe=fe) +
                               ". Discretizations differ: costs agree up to discretization error. "
                               "Ratios against nosnoc of this run; re-sim err = final-state error of "
                               f"the controls re-simulated at T/({RESIM_SUBSTEPS}N).")
        missing = {f: msg for f, msg in forms.items() if msg}
        if missing:
            for f, msg in missing.items():
                print(f"formulation {f!r} skipped in part A: {msg}", file=sys.stderr)
        result["part_a"] = {
            "nosnoc": {"python": str(py) if py else None, "skipped_because": why or None,
                       "version": NOSNOC_VERSION},
            "formulations": forms, "tasks": {"block": BLOCK, "hopper": HOPPER},
            "nosnoc_settings": {"block": NOSNOC_BLOCK, "hopper": NOSNOC_HOPPER,
                                "accept_comp": NOSNOC_ACCEPT_COMP},
            "block_continuous_optimum": {"cost": opt, "moving_time_s": tau},
            "records": {task: {key: recs[key] for key, _ in labels[task] if key in recs} for task in tasks},
        }

    # ---------------------------------------------------------------------------- Part B
    if args.part in ("b", "all"):
        files = nosbench_files(args.quick, args.only)
        if not files:
            raise SystemExit(f"no NOSBENCH problem matches --only {args.only!r}")
        folders = {f.stem: f.parent.name for f in files}
        remedies = [x for x in (args.remedies or "").split(";") if x]
        methods = [REF] + strategies + remedies
        py, why = nosnoc_python()
        nosnoc_ok, nosnoc_note = nosnoc_generic_mpcc(py) if py is not None else (False, why)
        if not nosnoc_ok:
            print(f"Part B: no nosnoc column. {nosnoc_note}.", file=sys.stderr)
        code = code_fingerprint()
        cfg_b = fingerprint({"time_limit": args.time_limit, "feas": FEAS_TOL, "comp": COMP_TOL, "code": code})
        jobs = []
        for f in files:
            jobs.append((f"B/{f.stem}/{REF}", cfg_b, lambda f=f: reference_scholtes(f, args.time_limit)))
            for s in strategies:
                jobs.append((f"B/{f.stem}/{s}", cfg_b, lambda f=f, s=s: ours_nosbench(f, s, args.time_limit)))
            for v in remedies:
                jobs.append((f"B/{f.stem}/{v}", cfg_b, lambda f=f, v=v: remedy_nosbench(f, v, args.time_limit)))
        store = job_store(jsonl, jobs)
        if any(key not in store for key, _, _ in jobs):
            warm_up_b(files[0], strategies)
        recs = run_jobs(jobs, store, args.workers, args.scheduler)
        problems = [f.stem for f in files]
        summary, fams = report_b(problems, folders, methods, recs, args.time_limit, nosnoc_note)
        png = plot_part_b(problems, methods, recs, out_json.with_name(out_json.stem + "_nosbench.png"),
                          args.time_limit)
        print(f"wrote {png}", file=sys.stderr)
        result["part_b"] = {
            "problems": problems, "folders": folders, "families": sorted({family(p) for p in problems}),
            "methods": methods, "time_limit_s": args.time_limit, "code_fingerprint": code,
            "reference": "plain Scholtes homotopy (casadi.nlpsol + IPOPT), sigma 1 -> 1e-9 by 0.1",
            "nosnoc": {"column": nosnoc_ok, "note": nosnoc_note}, "figure": str(png),
            "summary": summary, "per_family": fams,
            "records": {p: {m: {k: v for k, v in recs.get(f"B/{p}/{m}", {}).items() if k != "homotopy"}
                            for m in methods} for p in problems},
        }

    return common.finish(out_json, result, t_start, jsonl)


if __name__ == "__main__":
    raise SystemExit(main())
