"""The nosnoc half of ``benchmarks/mpcc_vs_nosnoc.py``: runs inside nosnoc 0.2.0's own virtual
environment (``benchmarks/setup_nosnoc.sh``), never imports contactmp.

    ~/.cache/contactmp/nosnoc/bin/python benchmarks/nosnoc_side.py SPEC.json

``nosnoc_side.py --probe-mpcc`` prints (one JSON line) whether this nosnoc has an entry point for
a generic MPCC (part B of the benchmark needs one for the NOSBENCH problems; 0.2.0 has none).

``SPEC.json`` (written by the benchmark) names a task and its data; the script builds the task as
a nosnoc OCP (FESD, Stewart's reformulation, Scholtes homotopy, IPOPT), solves it, and prints one
JSON line on stdout: status, times, nosnoc's own objective, the task's cost recomputed from the
controls, the control sequence, the state on the control grid and nosnoc's complementarity
residual. On any error it prints ``{"error": ...}`` and exits 0 (the benchmark records it).

Tasks
-----
``block``: a block of mass ``m`` on the ground, 1-D state ``(p, v)``, Coulomb friction ``mu m g``
as a Filippov system with switching function ``c = v``:
``m vdot in u - mu m g sign(v)`` (Stewart form: two modes, ``S = [[1], [-1]]``; sticking is the
sliding mode on ``v = 0``). Piecewise-constant force ``|u| <= u_max``, cost ``int_0^T u^2 dt``,
``(p, v)(T) = (d, 0)``.

``hopper``: the planar hopper of contactmp (its ``M(q)``, ``B u - h(q, v)``, ``phi(q)``, ``Jn(q)``,
``Jt(q)`` arrive as one serialized CasADi Function, so the rigid-body model is the same) in
nosnoc's time-freezing form (Nurkanovic, Sperl, Albrecht, Diehl, 2021): state ``(q, v, t)``,
regions from the signs of ``c = (phi, Jn v, Jt v)``; outside ``{phi < 0, Jn v < 0}`` the ODE
``(qdot, vdot, tdot) = s (v, M^-1 (B u - h), 1)`` runs (``s`` the speed of time, a control);
inside it the auxiliary dynamics ``(0, M^-1 (Jn^T -+ mu Jt^T) a_n, 0)`` (the sign opposing
``Jt v``) reverse the normal velocity while the clock stands still. Inelastic impacts and Coulomb
friction are the Filippov sliding modes of this system; the foot may penetrate the ground slightly
(the auxiliary dynamics act inside the ground). Physical time is pinned to ``k T / N`` at every
control-interval end (nosnoc's ``time_freezing`` constraint).
"""
from __future__ import annotations

import json
import math
import sys
import time
import traceback
from typing import Any

import casadi as ca
import numpy as np


def _opts(spec: dict[str, Any]) -> Any:
    """nosnoc options shared by both tasks (from the spec, with nosnoc 0.2.0's defaults otherwise)."""
    import nosnoc

    o = nosnoc.NosnocOpts()
    o.terminal_time = float(spec["T"])
    o.N_stages = int(spec["N"])
    o.N_finite_elements = int(spec["n_fe"])
    o.n_s = int(spec["n_s"])
    o.irk_scheme = nosnoc.IrkSchemes.RADAU_IIA
    o.pss_mode = nosnoc.PssMode.STEWART
    o.use_fesd = True
    o.mpcc_mode = nosnoc.MpccMode.SCHOLTES_INEQ
    o.comp_tol = float(spec["comp_tol"])
    o.sigma_0 = float(spec["sigma_0"])
    o.homotopy_update_slope = float(spec["homotopy_update_slope"])
    o.homotopy_update_rule = nosnoc.HomotopyUpdateRule.LINEAR
    o.step_equilibration = getattr(nosnoc.StepEquilibrationMode, spec["step_equilibration"])
    o.print_level = 0
    o.opts_casadi_nlp["ipopt"]["max_iter"] = int(spec["ipopt_max_iter"])
    o.opts_casadi_nlp["ipopt"]["max_wall_time"] = float(spec["time_limit"])
    if "acceptable_tol" in spec:
        o.opts_casadi_nlp["ipopt"]["acceptable_tol"] = float(spec["acceptable_tol"])
    if "max_iter_homotopy" in spec:
        o.max_iter_homotopy = int(spec["max_iter_homotopy"])
    if spec.get("initialization") == "external":
        o.initialization_strategy = nosnoc.InitializationStrategy.EXTERNAL
    return o


def build_block(spec: dict[str, Any]) -> tuple[Any, Any, Any, dict[str, Any]]:
    """The friction block as a nosnoc model and OCP (see the module docstring)."""
    import nosnoc

    m, mu, g = float(spec["m"]), float(spec["mu"]), float(spec["g"])
    d, umax = float(spec["d"]), float(spec["u_max"])
    p, v, u = ca.SX.sym("p"), ca.SX.sym("v"), ca.SX.sym("u")
    x = ca.vertcat(p, v)
    f_pos = ca.vertcat(v, (u - mu * m * g) / m)  # v > 0: friction -mu m g
    f_neg = ca.vertcat(v, (u + mu * m * g) / m)  # v < 0: friction +mu m g
    model = nosnoc.NosnocModel(x=x, F=[ca.horzcat(f_pos, f_neg)], S=[np.array([[1], [-1]])],
                               c=[v], x0=np.array([0.0, 0.0]), u=u, name="friction_block")
    ocp = nosnoc.NosnocOcp(lbu=np.array([-umax]), ubu=np.array([umax]), f_q=u**2,
                           g_terminal=x - ca.DM([d, 0.0]))
    opts = _opts(spec)
    return model, ocp, opts, {"n_q": 1, "goal": [d, 0.0]}


def build_hopper(spec: dict[str, Any]) -> tuple[Any, Any, Any, dict[str, Any]]:
    """The hopper in time-freezing form (see the module docstring)."""
    import nosnoc

    fun = ca.Function.deserialize(spec["dynamics"])  # (q, v, u) -> (M, B u - h, phi, Jn, Jt)
    nq, nu = fun.numel_in(0), fun.numel_in(2)
    q, v, u = ca.SX.sym("q", nq), ca.SX.sym("v", nq), ca.SX.sym("u", nu)
    t, sot = ca.SX.sym("t"), ca.SX.sym("sot")
    M, f, phi, Jn, Jt = fun(q, v, u)
    mu, a_n = float(spec["mu"]), float(spec["a_n"])
    vdot = ca.solve(M, f)
    f_ode = sot * ca.vertcat(v, vdot, 1)
    zeros = ca.SX.zeros(nq, 1)
    f_aux_pos = ca.vertcat(zeros, ca.solve(M, (Jn - mu * Jt).T) * a_n, 0)  # Jt v > 0
    f_aux_neg = ca.vertcat(zeros, ca.solve(M, (Jn + mu * Jt).T) * a_n, 0)  # Jt v < 0
    # rows: signs of (phi, Jn v, Jt v); the auxiliary dynamics act where phi < 0 and Jn v < 0
    S = np.array([[1, 1, 1], [1, 1, -1], [1, -1, 1], [1, -1, -1],
                  [-1, 1, 1], [-1, 1, -1], [-1, -1, 1], [-1, -1, -1]])
    F = ca.horzcat(*([f_ode] * 6), f_aux_pos, f_aux_neg)
    c = ca.vertcat(phi, Jn @ v, Jt @ v)
    q0, qf = np.asarray(spec["q0"], float), np.asarray(spec["qf"], float)
    x0 = np.concatenate([q0, np.zeros(nq), [0.0]])
    theta = ca.SX.sym("theta", S.shape[0])
    model = nosnoc.NosnocModel(x=ca.vertcat(q, v, t), F=[F], S=[S], c=[c], x0=x0,
                               u=ca.vertcat(u, sot), t_var=t, theta=[theta], name="hopper")
    if spec.get("no_slip"):
        # nosnoc's own hopper example: |Jt v| (theta_aux+ + theta_aux-) = 0, i.e. no slipping
        # while the auxiliary (contact) dynamics act
        aux = theta[-1] + theta[-2]
        comp = ca.horzcat(ca.vertcat(Jt @ v, -(Jt @ v)), ca.vertcat(aux, aux))
    else:
        comp = ca.SX.zeros(0, 2)
    R = np.diag(np.asarray(spec["R"], float))
    lbu = np.concatenate([np.asarray(spec["u_lb"], float), [float(spec["sot_min"])]])
    ubu = np.concatenate([np.asarray(spec["u_ub"], float), [float(spec["sot_max"])]])
    lbx = np.concatenate([np.asarray(spec["q_lb"], float), np.full(nq, -np.inf), [-np.inf]])
    ubx = np.concatenate([np.asarray(spec["q_ub"], float), np.full(nq, np.inf), [np.inf]])
    ocp = nosnoc.NosnocOcp(lbu=lbu, ubu=ubu, u_guess=np.concatenate([np.zeros(nu), [1.0]]),
                           lbx=lbx, ubx=ubx, f_q=sot * ca.bilin(ca.DM(R), u, u),
                           g_terminal=ca.vertcat(q - qf, v), g_path_comp=comp)
    opts = _opts(spec)
    opts.time_freezing = True
    opts.time_freezing_tolerance = float(spec["time_freezing_tolerance"])
    return model, ocp, opts, {"n_q": nq, "goal": list(qf) + [0.0] * nq, "nu": nu}


def _initial_x(spec: dict[str, Any], n_q: int, N: int, T: float) -> np.ndarray:
    """The linear-interpolation guess on the control grid (rows k = 1..N), like contactmp's."""
    q0, qf = np.asarray(spec["q0"], float), np.asarray(spec["qf"], float)
    vel = (qf - q0) / T
    rows = []
    for k in range(1, N + 1):
        rows.append(np.concatenate([q0 + (qf - q0) * k / N, vel, [k * T / N]]))
    return np.array(rows)


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Build and solve the task; return the JSON-ready record."""
    import importlib.metadata as md

    import nosnoc

    t0 = time.perf_counter()
    task = spec["task"]
    if task == "block":
        model, ocp, opts, info = build_block(spec)
    elif task == "hopper":
        model, ocp, opts, info = build_hopper(spec)
    else:
        raise ValueError(f"unknown task {task!r}")
    solver = nosnoc.NosnocSolver(opts, model, ocp)
    if task == "hopper" and spec.get("initialization") == "external":
        solver.set("x", _initial_x(spec, info["n_q"], opts.N_stages, opts.terminal_time))
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    res = solver.solve()
    solve_s = time.perf_counter() - t1

    prob = solver.problem
    w = np.asarray(res["w_sol"], dtype=float)
    comp = float(prob.comp_res(w, solver.p_val).full()[0][0])
    g = prob.g_fun(w, solver.p_val).full().ravel()
    g_viol = float(np.max(np.maximum(prob.lbg - g, 0.0) + np.maximum(g - prob.ubg, 0.0), initial=0.0))
    nlp_obj = float(prob.cost_fun(w, solver.p_val).full()[0][0])
    u = np.array([np.atleast_1d(ui) for ui in res["u_traj"]], dtype=float)
    h = opts.terminal_time / opts.N_stages
    if task == "block":
        cost = float(h * np.sum(u[:, 0] ** 2))
    else:
        R = np.asarray(spec["R"], float)
        nu = info["nu"]
        cost = float(h * np.sum((u[:, :nu] ** 2) @ R))
    # the state at the end of every control interval
    x_fe = np.array(res["x_list"], dtype=float)
    x_ctrl = np.vstack([model.x0, x_fe[opts.N_finite_elements - 1::opts.N_finite_elements]])
    n_x = len(info["goal"])
    term = float(np.max(np.abs(x_ctrl[-1, :n_x] - np.asarray(info["goal"]))))
    ok_status = res["status"] == nosnoc.Status.SUCCESS
    homotopy = [{"cpu_s": c, "iterations": it} for c, it in zip(res["cpu_time_nlp"], res["nlp_iter"])
                if c is not None]
    out: dict[str, Any] = {
        "task": task,
        "ipopt_success": bool(ok_status),
        "solved": bool(ok_status and comp <= float(spec["accept_comp"]) and g_viol <= 1e-6),
        "build_s": build_s,
        "solve_s": solve_s,
        "cpu_nlp_s": float(sum(hh["cpu_s"] for hh in homotopy)),
        "nlp_iterations": int(sum(hh["iterations"] for hh in homotopy)),
        "nlps": len(homotopy),
        "nlp_objective": nlp_obj,
        "cost": cost,
        "comp_residual": comp,
        "constraint_violation": g_viol,
        "terminal_error": term,
        "u": u.tolist(),
        "x_ctrl": x_ctrl.tolist(),
        "time_steps": np.asarray(res["time_steps"], dtype=float).tolist(),
        "n_w": int(prob.w.shape[0]),
        "n_g": int(prob.g.shape[0]),
        "versions": {"nosnoc": md.version("nosnoc"), "casadi": ca.__version__, "numpy": np.__version__},
    }
    if task == "hopper":
        out["physical_time_end"] = float(x_ctrl[-1, -1])
        out["min_gap"] = None  # filled by the caller from q (it has phi)
    return out


#: names a generic MPCC solver (min f s.t. bounds, g, 0 <= G _|_ H >= 0, from CasADi expressions)
#: goes by in nosnoc releases: MATLAB nosnoc's ``mpccsol`` and its Python counterparts
GENERIC_MPCC_NAMES = ("mpccsol", "MpccSolver", "NosnocMpccSolver", "mpcc_solver", "MPCCSolver",
                      "NosnocMpcc", "Mpcc")


def probe_generic_mpcc() -> dict[str, Any]:
    """Does this nosnoc have an entry point for a generic MPCC (such as a NOSBENCH problem)?

    nosnoc 0.2.0's only solver is ``NosnocSolver(opts, model, ocp)``, which builds its NLP from a
    ``NosnocModel`` (a piecewise smooth system) and a ``NosnocOcp``: the MPCC is made by its FESD
    discretization, never taken as given. A generic MPCC is solved by MATLAB nosnoc's ``mpccsol``
    (the solver NOSBENCH was written for), which the Python package does not have."""
    import importlib.metadata as md

    import nosnoc

    found = sorted({name for name in GENERIC_MPCC_NAMES if hasattr(nosnoc, name)})
    solver_args = []
    try:
        import inspect

        solver_args = list(inspect.signature(nosnoc.NosnocSolver.__init__).parameters)[1:]
    except (AttributeError, TypeError, ValueError):
        pass
    return {"version": md.version("nosnoc"), "generic_mpcc_entry_points": found,
            "NosnocSolver_arguments": solver_args, "public_names": sorted(n for n in dir(nosnoc) if not n.startswith("_"))}


def main(argv: list[str]) -> int:
    """Read the spec, run, print one JSON line (``--probe-mpcc``: what :func:`probe_generic_mpcc` says)."""
    if argv == ["--probe-mpcc"]:
        try:
            out = probe_generic_mpcc()
        except Exception as exc:  # reported, not raised
            out = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(out))
        return 0
    if len(argv) != 1:
        print(json.dumps({"error": "usage: nosnoc_side.py SPEC.json"}))
        return 0
    try:
        with open(argv[0], encoding="utf-8") as fh:
            spec = json.load(fh)
        out = run(spec)
    except Exception as exc:  # the benchmark records the failure and goes on
        out = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=5)}
    print(json.dumps(out, default=lambda o: None if isinstance(o, float) and not math.isfinite(o) else str(o)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
