"""Remedies for the Scholtes homotopy on the Pyomo point mass, measured on the NLP itself (issue 14).

    python benchmarks/pyomo_scale_remedies.py [--sizes 50 100 200 400] [--configs NAME ...]
                                              [--time-limit 120] [--fresh] [--out FILE]

The program is the one the Pyomo plugin solves: the point-mass task of ``pyomo_scale.py``
(``push_point_mass(N)``), its Pyomo twin read back by
:func:`~contactmp.solvers.nlp.pyomo_ipopt.pyomo_to_program`. The Scholtes NLP is written here, as in
``pyomo_scale.plain_scholtes`` (rows ``a >= 0``, ``b >= 0`` for the sides that are not variables
with a nonnegative lower bound, ``a_i b_i <= sigma``), and solved with ``casadi.nlpsol`` along a
homotopy whose knobs are the configuration (:data:`CONFIGS`):

* ``schedule``: ``sigma0``, ``factor`` (down to ``1e-12``), each NLP started at the previous answer;
* ``first`` / ``later``: IPOPT options of the first (cold) NLP and of every warm-started one (two
  solver objects, built once: CasADi fixes IPOPT's options when the solver is built);
* ``polish``: after an NLP that IPOPT solves (with ``sigma <= polish_below``), the tightened NLP:
  per pair the smaller side fixed to 0 (a variable by ``lb = ub = 0``, an expression by its sign
  row's bounds ``[0, 0]``), both sides when both are below ``sqrt(sigma)``, the product rows'
  upper bounds ``+inf``; solved by the ``later`` solver object (or one capped at ``polish_cap``
  IPOPT iterations) from the NLP's answer; accepted when IPOPT solves it and the answer passes the
  independent checks. ``dedup``: a sign row identical to one already fixed (the same affine
  function of ``x`` up to rounding: the planar pyramid's 4 facets give each tangential direction
  twice) stays an
  inequality instead of a second, identical equality row (which makes the tightened NLP's
  Jacobian rank-deficient and MUMPS slow);
* the homotopy stops at the first NLP or polish whose answer IPOPT solved and that passes the
  checks (scaled bound and row violations <= 1e-6, ``max_i |min(a_i, b_i)| <= 1e-8``).

Timed: the homotopy (solver objects built before, ``build_s``). Output: a table per N and the
log-log slopes of time and iterations over the sizes, ``benchmarks/out/pyomo_scale_remedies.jsonl``
(resumable :class:`contactmp.records.RecordStore`, one record per (config, N), with every NLP and
polish) and ``.json``.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import _common as common  # noqa: E402

import casadi as ca  # noqa: E402

from contactmp.program import Program  # noqa: E402
from contactmp.pyomo_bridge import set_program_x  # noqa: E402
from contactmp.records import RecordStore  # noqa: E402
from contactmp.solvers.nlp import pyomo_to_program  # noqa: E402
from pyomo_scale import FEAS_TOL, COMP_TOL, IPOPT_SOLVED, _StopAt, loglog_slope, push_point_mass  # noqa: E402

BASE = {"print_level": 0, "sb": "yes", "tol": 1e-8, "max_iter": 3000, "bound_relax_factor": 0.0,
        "mu_strategy": "adaptive"}
MONO = {"mu_strategy": "monotone", "mu_init": 1e-4}
REC = dict(sigma0=1e-3, factor=0.01, later=MONO, polish=True, polish_below=1e-5, polish_cap=50, dedup=True)
#: name -> settings (see the module docstring); "recommended" is the one of the report
CONFIGS: dict[str, dict[str, Any]] = {
    "plain": dict(sigma0=1.0, factor=0.1),
    "schedule": dict(sigma0=1e-3, factor=0.01),
    "schedule+polish": dict(sigma0=1e-3, factor=0.01, polish=True),
    "recommended": REC,
    "recommended-monotone": {**REC, "later": {}},
    "recommended-dedup": {**REC, "dedup": False},
    "recommended-gate": {**REC, "polish_below": 1.0},
    "recommended-cap": {**REC, "polish_cap": None},
    "recommended@1,0.1": {**REC, "sigma0": 1.0, "factor": 0.1},
    "recommended@1e-2,0.01": {**REC, "sigma0": 1e-2},
}


class ScholtesNLP:
    """The Scholtes NLP of ``prog`` with the maps the polish needs."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.sigma = ca.SX.sym("sigma")
        a, b = prog.comp_a, prog.comp_b
        rows: list[Any] = []
        self.side: list[list[tuple[str, int]]] = [[], []]   # per side, per pair: ("x", j) or ("g", row)
        self.key: list[list[Any]] = [[], []]                # per side, per pair: the affine identity
        ng = prog.n_g
        for k, side in enumerate((a, b)):
            keys = _affine_keys(prog, side)
            for i in range(prog.n_comp):
                j = prog.variable_index(side[i])
                if j is not None and prog.lbx[j] >= 0.0:
                    self.side[k].append(("x", j))
                else:
                    self.side[k].append(("g", ng + len(rows)))
                    rows.append(side[i])
                self.key[k].append(keys[i])
        self.prod = np.arange(ng + len(rows), ng + len(rows) + prog.n_comp)
        self.g = ca.vertcat(prog.g, *rows, a * b - self.sigma)
        self.lbx, self.ubx = prog.lbx.copy(), prog.ubx.copy()
        self.lbg = np.concatenate([prog.lbg, np.zeros(len(rows)), np.full(prog.n_comp, -np.inf)])
        self.ubg = np.concatenate([prog.ubg, np.full(len(rows), np.inf), np.zeros(prog.n_comp)])
        self.ab = ca.Function("ab", [prog.x, prog.p], [a, b])

    def solver(self, opts: dict[str, Any], deadline: float, name: str) -> Any:
        stop = _StopAt(self.prog.n_x, self.g.shape[0], deadline)
        s = ca.nlpsol(name, "ipopt", {"x": self.prog.x, "p": ca.vertcat(self.prog.p, self.sigma),
                                      "f": self.prog.f, "g": self.g},
                      {"ipopt": {**BASE, **opts}, "print_time": False, "error_on_fail": False,
                       "iteration_callback": stop})
        s._stop = stop  # keep the callback alive
        return s

    def polish_bounds(self, x: np.ndarray, sigma: float, dedup: bool) -> tuple[Any, ...]:
        av, bv = (np.asarray(v, dtype=float).ravel() for v in self.ab(x, self.prog.p0))
        lbx, ubx, lbg, ubg = self.lbx.copy(), self.ubx.copy(), self.lbg.copy(), self.ubg.copy()
        thr = math.sqrt(sigma)
        fixed: set[Any] = set()
        biactive = 0
        for i in range(self.prog.n_comp):
            both = av[i] < thr and bv[i] < thr
            biactive += both
            for k in ((0, 1) if both else ((0,) if av[i] <= bv[i] else (1,))):
                kind, j = self.side[k][i]
                if kind == "x":
                    lbx[j] = ubx[j] = 0.0
                    continue
                if dedup:
                    if self.key[k][i] in fixed:
                        continue
                    fixed.add(self.key[k][i])
                lbg[j] = ubg[j] = 0.0
        ubg[self.prod] = np.inf
        return lbx, ubx, lbg, ubg, biactive


def _affine_keys(prog: Program, side: Any) -> list[Any]:
    """Per row of ``side``: a hashable identity, equal for rows that are the same affine function up to
    rounding (coefficients to 12 significant digits: the facet directions ``cos``/``sin`` of the planar
    pyramid give ``1`` as ``0.9999999999999997`` in one row and ``1.0`` in its twin)."""
    n = side.shape[0]
    if n == 0:
        return []
    affine = ~np.asarray(ca.which_depends(side, prog.x, 2, True), dtype=bool).reshape(n)
    c_dm, j_dm = ca.Function("lin", [prog.x, prog.p], [side, ca.jacobian(side, prog.x)])(np.zeros(prog.n_x), prog.p0)
    c = np.asarray(c_dm, dtype=float).ravel()
    rows, cols = (np.asarray(v, dtype=int) for v in j_dm.sparsity().get_triplet())
    vals = np.asarray(j_dm.nonzeros(), dtype=float)
    per: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for r, cc, v in zip(rows, cols, vals):
        if v != 0.0:
            per[r].append((int(cc), float(f"{v:.12g}")))
    return [("affine", float(f"{c[i]:.12g}"), tuple(sorted(per[i]))) if affine[i] else ("expr", str(side[i]))
            for i in range(n)]


def run(n: int, cfg: dict[str, Any], time_limit: float) -> dict[str, Any]:
    """One homotopy of the configuration ``cfg`` on the point mass with ``n`` steps; its record."""
    to = push_point_mass(n)
    m = to.to_pyomo()
    set_program_x(m, to.program, to.initial_guess())
    prog = pyomo_to_program(m).program
    t0 = time.perf_counter()
    nlp = ScholtesNLP(prog)
    deadline = t0 + time_limit + 60.0  # the build is not charged to the limit below
    first = nlp.solver(cfg.get("first", {}), deadline, "first")
    later = nlp.solver(cfg["later"], deadline, "later") if cfg.get("later") else first
    cap = cfg.get("polish_cap")
    polisher = (nlp.solver({**cfg.get("later", {}), "max_iter": int(cap)}, deadline, "polish")
                if cfg.get("polish") and cap else later)
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    for s in (first, later, polisher):
        s._stop.deadline = t1 + time_limit
    sigmas = [cfg["sigma0"]]
    while sigmas[-1] > 1e-12 * (1 + 1e-9):
        sigmas.append(max(sigmas[-1] * cfg["factor"], 1e-12))
    x = np.clip(prog.x0, nlp.lbx, nlp.ubx)
    history: list[dict[str, Any]] = []
    found, via = None, None

    def checked(xv: np.ndarray) -> dict[str, Any]:
        r = prog.residuals(xv)
        return {"objective": float(r["objective"]), "comp_min": float(r["comp_min"]),
                "ok": bool(r["bound"] <= FEAS_TOL and r["constraint"] <= FEAS_TOL and r["comp_min"] <= COMP_TOL)}

    for k, sigma in enumerate(sigmas):
        if time.perf_counter() >= t1 + time_limit:
            break
        solver = first if k == 0 else later
        p = np.concatenate([prog.p0, [sigma]])
        t = time.perf_counter()
        sol = solver(x0=x, p=p, lbx=nlp.lbx, ubx=nlp.ubx, lbg=nlp.lbg, ubg=nlp.ubg)
        st = solver.stats()
        xn = np.asarray(sol["x"], dtype=float).ravel()
        if np.isfinite(xn).all():
            x = xn
        c = checked(x)
        h = {"sigma": sigma, "status": st["return_status"], "iterations": int(st["iter_count"]),
             "time_s": time.perf_counter() - t, "comp_min": c["comp_min"], "objective": c["objective"]}
        history.append(h)
        if st["return_status"] in IPOPT_SOLVED and c["ok"]:
            found, via = x, "nlp"
            break
        if cfg.get("polish") and st["return_status"] in IPOPT_SOLVED and sigma <= cfg.get("polish_below", 1.0) * (1 + 1e-9):
            lbx, ubx, lbg, ubg, biactive = nlp.polish_bounds(x, sigma, bool(cfg.get("dedup")))
            t = time.perf_counter()
            ps = polisher(x0=np.clip(x, lbx, ubx), p=p, lbx=lbx, ubx=ubx, lbg=lbg, ubg=ubg)
            pst = polisher.stats()
            px = np.asarray(ps["x"], dtype=float).ravel()
            pc = checked(px) if np.isfinite(px).all() else {"objective": math.nan, "comp_min": math.inf, "ok": False}
            h["polish"] = {"status": pst["return_status"], "iterations": int(pst["iter_count"]),
                           "time_s": time.perf_counter() - t, "biactive": biactive,
                           "comp_min": pc["comp_min"], "objective": pc["objective"]}
            if pst["return_status"] in IPOPT_SOLVED and pc["ok"]:
                found, via = px, "polish"
                break
    time_s = time.perf_counter() - t1
    final = checked(found if found is not None else x)
    iterations = sum(h["iterations"] + h.get("polish", {}).get("iterations", 0) for h in history)
    return {"N": n, "n_x": prog.n_x, "build_s": build_s, "time_s": time_s, "iterations": iterations,
            "nlps": len(history), "status": "solved" if found is not None else (
                "time_limit" if time_s >= time_limit else "not_solved"),
            "via": via, "objective": final["objective"], "comp_min": final["comp_min"], "homotopy": history}


def main(argv: list[str] | None = None) -> int:
    """Run the configurations (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200, 400])
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per homotopy")
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "pyomo_scale_remedies.json")
    args = ap.parse_args(argv)
    jsonl = args.out.with_suffix(".jsonl")
    store = RecordStore(jsonl, fresh=args.fresh,
                        accept=lambda r: r.get("settings") == CONFIGS.get(r.get("config")) and
                        r.get("time_limit_s") == args.time_limit)
    for name in args.configs:
        for n in args.sizes:
            key = f"{name}/N={n}"
            if key in store:
                continue
            print(f"{name} N={n} ...", file=sys.stderr, flush=True)
            rec = run(n, CONFIGS[name], args.time_limit)
            store.append({"key": key, "config": name, "settings": CONFIGS[name], "time_limit_s": args.time_limit,
                          **rec})
    rows, summary = [], {}
    for name in args.configs:
        recs = [store[f"{name}/N={n}"] for n in args.sizes if f"{name}/N={n}" in store]
        ns = [r["N"] for r in recs]
        st = loglog_slope(ns, [float(r["time_s"]) for r in recs])
        si = loglog_slope(ns, [float(r["iterations"]) for r in recs])
        summary[name] = {"slope_time": st, "slope_iterations": si, "records": [r["key"] for r in recs]}
        for r in recs:
            rows.append([name, r["N"], common.fmt_time(r["time_s"]), r["iterations"], r["nlps"],
                         f"{r['status']}" + (f" ({r['via']})" if r.get("via") else ""),
                         f"{float(r['objective']):.7g}", common.fmt_residual(r["comp_min"]),
                         "-" if st is None else f"{st:.2f}", "-" if si is None else f"{si:.2f}"])
    common.print_table("Scholtes homotopy remedies on the Pyomo point mass (the NLP solved directly)",
                       ["config", "N", "time", "iterations", "NLPs", "status", "objective", "comp_min",
                        "slope time", "slope iter"], rows,
                       caption="time = the homotopy, solver objects built before; slopes: log-log over the sizes")
    common.write_json(args.out, {**common.run_header("pyomo_scale_remedies", sys.argv if argv is None else
                                                     ["pyomo_scale_remedies.py", *argv], 0),
                                 "configs": {k: CONFIGS[k] for k in args.configs}, "summary": summary,
                                 "records": [store[k] for k in (f"{c}/N={n}" for c in args.configs for n in args.sizes)
                                             if k in store]})
    print(f"wrote {args.out} and {jsonl}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
