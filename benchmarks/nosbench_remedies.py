"""Failure analysis of NOSBENCH solves: a plain Scholtes + IPOPT homotopy with knobs, to measure which
remedy makes which problem pass the paper's criterion (bounds and g feasible to 1e-6, signed
``max_i G_i H_i <= 1e-7``), and at what time.

    python benchmarks/nosbench_remedies.py [--only SUBSTR,...] [--variants NAME,...] [--time-limit S]
                                           [--out FILE] [--fresh] [--list] [--data DEST]

The problems: NOSBENCH's ``nosbench`` and ``nosbench-more`` subsets, from ``--data DEST`` or
``$CONTACTMP_NOSBENCH=DEST`` (the folder that contains them; not in the repository: write it with
``python tools/fetch_nosbench.py DEST``).

Every variant is the plain loop of ``benchmarks/mpcc_vs_nosnoc.py`` (``G_i H_i <= sigma``, no
``G, H >= 0``: their signs come from the bounds; primal warm start; IPOPT with
``bound_relax_factor = 0``, ``mu_strategy = adaptive``; stop at the first NLP that IPOPT solves with
``max_i G_i H_i <= 1e-7``) changed in one respect (see :data:`VARIANTS`):

* sigma schedule: ``sigma0`` in {1, 0.1, 0.01}, factor 0.1 or 0.01, ``sigma_min``;
* ``linf``: the l-infinity mode of Scholtes' relaxation (nosnoc's ``ell_inf`` elasticity): one
  slack ``s in [0, s_max]`` (``s_max = 10``), rows ``G_i H_i <= s``, objective ``f + s / sigma``,
  ``sigma -> 0``; the answer is judged on ``w`` alone;
* ``polish``: after each NLP (whose answer has ``max_i |min(|G_i|, |H_i|)|`` below ``polish_from``)
  fix the smaller side (in absolute value) of each pair to 0, both sides when both are below
  ``biactive_tol``, drop the product rows, solve that ordinary NLP warm-started, and accept its
  answer when it meets the paper's criterion (else go on with the homotopy);
* IPOPT options: ``mu_strategy``, ``mu_oracle``, ``bound_push``, ``nlp_scaling_method``, ``max_iter``;
* ``lift``: G and H as new variables ``a = G(w)``, ``b = H(w)`` (equality rows), rows ``a_i b_i <= sigma``;
* ``aug``: the file's ``augmented_objective_fun`` (f plus nosnoc's step-length regularization);
* ``perturb``: a seeded relative perturbation of the file's initial guess;
* ``pf:V1>V2>...@CAP``: a portfolio of variants, run for real (the file loaded once, each attempt
  but the last limited to CAP seconds, stop at the first answer that meets the criterion), or
  ``pf:V1@C1>V2@C2>V3`` with a cap per attempt;
  ``pfc:`` the same with CPU-time limits (IPOPT's ``max_cpu_time``), which other load on the
  machine does not shorten.

Accepting an answer always goes through the independent check (the file's own Functions), never
IPOPT's word. Records go to a JSONL (``contactmp.records.RecordStore``, resumable, keyed by
problem and variant); the summary prints per variant the solved count and total time, and per
problem which variants solve it.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

from contactmp.records import RecordStore  # noqa: E402

SUCCESS = ("Solve_Succeeded", "Solved_To_Acceptable_Level")

#: variant name -> settings (changes from BASE)
BASE: dict[str, Any] = {"mode": "scholtes", "sigma0": 1.0, "factor": 0.1, "sigma_min": 1e-9, "ipopt": {},
                        "polish": False, "polish_from": 1e-3, "biactive_tol": 1e-8, "lift": False,
                        "s_max": 10.0, "stop_on_fail": False, "perturb": 0.0, "seed": 0, "aug": False}
VARIANTS: dict[str, dict[str, Any]] = {
    "plain": {},
    "s0=0.1": {"sigma0": 0.1},
    "s0=0.01": {"sigma0": 0.01},
    "f=0.01": {"factor": 0.01},
    "s0=0.1,f=0.01": {"sigma0": 0.1, "factor": 0.01},
    "s0=0.01,f=0.01": {"sigma0": 0.01, "factor": 0.01},
    "smin=1e-12": {"sigma_min": 1e-12},
    "linf": {"mode": "linf"},
    "linf,f=0.01": {"mode": "linf", "factor": 0.01},
    "polish": {"polish": True},
    "polish-all": {"polish": True, "polish_from": math.inf},
    "polish,f=0.01": {"polish": True, "factor": 0.01},
    "linf+polish": {"mode": "linf", "polish": True},
    "monotone": {"ipopt": {"mu_strategy": "monotone"}},
    "oracle=probing": {"ipopt": {"mu_oracle": "probing"}},
    "oracle=loqo": {"ipopt": {"mu_oracle": "loqo"}},
    "bound_push=1e-8": {"ipopt": {"bound_push": 1e-8, "bound_frac": 1e-8}},
    "scaling=none": {"ipopt": {"nlp_scaling_method": "none"}},
    "max_iter=500": {"ipopt": {"max_iter": 500}},
    "lift": {"lift": True},
    "lift+polish": {"lift": True, "polish": True},
    "stopfail": {"stop_on_fail": True},
    "monotone,stopfail": {"ipopt": {"mu_strategy": "monotone"}, "stop_on_fail": True},
    "probing,stopfail": {"ipopt": {"mu_oracle": "probing"}, "stop_on_fail": True},
    "loqo,stopfail": {"ipopt": {"mu_oracle": "loqo"}, "stop_on_fail": True},
    "monotone,f=0.01": {"ipopt": {"mu_strategy": "monotone"}, "factor": 0.01},
    "probing,f=0.01": {"ipopt": {"mu_oracle": "probing"}, "factor": 0.01},
    "linf,monotone": {"mode": "linf", "ipopt": {"mu_strategy": "monotone"}},
    "linf,probing": {"mode": "linf", "ipopt": {"mu_oracle": "probing"}},
    "linf,loqo": {"mode": "linf", "ipopt": {"mu_oracle": "loqo"}},
    "linf,s0=0.1": {"mode": "linf", "sigma0": 0.1},
    "linf,stopfail": {"mode": "linf", "stop_on_fail": True},
    "monotone+polish": {"ipopt": {"mu_strategy": "monotone"}, "polish": True},
    "linf,monotone+polish": {"mode": "linf", "ipopt": {"mu_strategy": "monotone"}, "polish": True},
    "perturb": {"perturb": 0.1},
    "perturb,seed=1": {"perturb": 0.1, "seed": 1},
    "perturb,seed=2": {"perturb": 0.3, "seed": 2},
    "l1": {"mode": "l1", "sigma_min": 1e-8},
    "l1,monotone": {"mode": "l1", "sigma_min": 1e-8, "ipopt": {"mu_strategy": "monotone"}},
    "aug": {"aug": True},
    "aug,linf": {"aug": True, "mode": "linf"},
    "aug,monotone": {"aug": True, "ipopt": {"mu_strategy": "monotone"}},
    "aug,linf,monotone": {"aug": True, "mode": "linf", "ipopt": {"mu_strategy": "monotone"}},
    "aug,polish": {"aug": True, "polish": True},
    "s0=10": {"sigma0": 10.0},
    "s0=100": {"sigma0": 100.0},
    "linf,smax=1": {"mode": "linf", "s_max": 1.0},
    "linf,smax=100": {"mode": "linf", "s_max": 100.0},
    "polish,tol=1e-4": {"polish": True, "biactive_tol": 1e-4},
    "monotone,polish-all": {"ipopt": {"mu_strategy": "monotone"}, "polish": True, "polish_from": math.inf},
    "monotone,perturb": {"ipopt": {"mu_strategy": "monotone"}, "perturb": 0.1},
}


def settings(variant: str) -> dict[str, Any]:
    """BASE with the variant's changes (IPOPT options merged)."""
    ch = VARIANTS[variant]
    out = {**BASE, **ch}
    out["ipopt"] = {**BASE["ipopt"], **ch.get("ipopt", {})}
    return out


def augmented_objective(pb: Any) -> Any:
    """The file's ``augmented_objective_fun`` (f plus nosnoc's regularization of the finite-element
    lengths toward uniform, ``p_1 sum (h_i - T/N)^2``, and of the speed of time), checked like the
    other Functions by :mod:`contactmp.nosbench` (read again from the file)."""
    from contactmp.nosbench import _load_function

    path = next(f for d in ("nosbench", "nosbench-more")
                for f in common.nosbench_files(d) if f.stem == pb.name)
    return _load_function(json.loads(path.read_text()), "augmented_objective_fun", pb.n_w, pb.n_p, 1)


class Homotopy:
    """The NLPs of one problem for one variant (built once, solved along the homotopy)."""

    def __init__(self, pb: Any, st: dict[str, Any], time_limit: float):
        import casadi as ca

        self.pb, self.st, self.ca = pb, st, ca
        w, p, sigma, ev = common.nosbench_symbols(pb)
        G, H = ev(pb.G_fun), ev(pb.H_fun)
        f, g = ev(augmented_objective(pb) if st["aug"] else pb.objective_fun), ev(pb.g_fun)
        self.n_w, self.n_c = pb.n_w, pb.n_comp
        x, lbx, ubx = [w], [pb.lbw], [pb.ubw]
        rows, lbg, ubg = [g], [pb.lbg], [pb.ubg]
        a, b = G, H
        if st["lift"]:
            a, b = ca.SX.sym("a", self.n_c), ca.SX.sym("b", self.n_c)
            x += [a, b]
            lbx += [np.full(self.n_c, -np.inf)] * 2
            ubx += [np.full(self.n_c, np.inf)] * 2
            rows += [a - G, b - H]
            lbg += [np.zeros(self.n_c)] * 2
            ubg += [np.zeros(self.n_c)] * 2
        self.n_lift = 2 * self.n_c if st["lift"] else 0
        obj = f
        if st["mode"] == "l1":
            # the l1 penalty (ours: elastic_l1): f + sum_i G_i H_i / sigma, no product rows; a
            # sign-indefinite pair (Lambda, L), (Lambda, -L) cancels in the sum, so it is not penalized
            obj = f + ca.sum1(a * b) / sigma
        elif st["mode"] == "linf":
            s = ca.SX.sym("s")
            x.append(s)
            lbx.append([0.0])
            ubx.append([st["s_max"]])
            rows.append(a * b - s)
            obj = f + s / sigma
        if st["mode"] == "scholtes":
            rows.append(a * b - sigma)
        if st["mode"] != "l1":
            lbg.append(np.full(self.n_c, -np.inf))
            ubg.append(np.zeros(self.n_c))
        self.x = ca.vertcat(*x)
        self.lbx = np.concatenate([np.asarray(v, float) for v in lbx])
        self.ubx = np.concatenate([np.asarray(v, float) for v in ubx])
        self.lbg = np.concatenate([np.asarray(v, float) for v in lbg])
        self.ubg = np.concatenate([np.asarray(v, float) for v in ubg])
        self.n_g = pb.n_g
        clock = {"max_cpu_time": float(time_limit)} if st.get("cpu_clock") else {"max_wall_time": float(time_limit)}
        ipopt = {"print_level": 0, "sb": "yes", "bound_relax_factor": 0.0, "mu_strategy": "adaptive",
                 **clock, **st["ipopt"]}
        self.ipopt = ipopt
        self.solver = ca.nlpsol("h", "ipopt", {"x": self.x, "p": ca.vertcat(p, sigma), "f": obj,
                                               "g": ca.vertcat(*rows)},
                                {"ipopt": ipopt, "print_time": False, "error_on_fail": False})
        self.w_sym, self.p_sym, self.G, self.H, self.f, self.g = w, p, G, H, f, g
        self.a, self.b = a, b
        self._polish_solver = None
        self._GH = ca.Function("GH", [w, p], [G, H])

    def start(self) -> np.ndarray:
        """The initial guess: w0, lifted G(w0), H(w0), s = s_max."""
        w0 = np.asarray(self.pb.w0, float)
        if self.st["perturb"]:
            # a relative perturbation (seeded) of the file's guess, clipped to the bounds
            rng = np.random.default_rng(self.st["seed"])
            w0 = np.clip(w0 + self.st["perturb"] * (np.abs(w0) + 1e-2) * rng.standard_normal(w0.shape),
                         self.pb.lbw, self.pb.ubw)
        x = [w0]
        if self.st["lift"]:
            Gv, Hv = (np.asarray(v, float).ravel() for v in self._GH(w0, self.pb.p0))
            x += [Gv, Hv]
        if self.st["mode"] == "linf":
            x.append([self.st["s_max"]])
        return np.concatenate([np.asarray(v, float) for v in x])

    def solve(self, x0: np.ndarray, sigma: float, lam_x: Any = None, lam_g: Any = None) -> tuple[np.ndarray, dict[str, Any]]:
        sol = self.solver(x0=x0, p=np.concatenate([self.pb.p0, [sigma]]), lbx=self.lbx, ubx=self.ubx,
                          lbg=self.lbg, ubg=self.ubg)
        stt = self.solver.stats()
        return np.asarray(sol["x"], float).ravel(), {"status": str(stt.get("return_status")),
                                                    "iterations": int(stt.get("iter_count", 0))}

    def polish(self, w: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        """Fix the smaller side of each pair (both below biactive_tol) to 0; solve without product rows."""
        ca = self.ca
        Gv, Hv = (np.asarray(v, float).ravel() for v in self._GH(w, self.pb.p0))
        aG, aH = np.abs(Gv), np.abs(Hv)
        tol = self.st["biactive_tol"]
        fixG = (aG <= aH) | ((aG <= tol) & (aH <= tol))
        fixH = (aH < aG) | ((aG <= tol) & (aH <= tol))
        if self._polish_solver is None:
            mG, mH = ca.SX.sym("mG", self.n_c), ca.SX.sym("mH", self.n_c)
            # rows mG_i * G_i = 0 and mH_i * H_i = 0 (mask 0/1 as parameters: one solver for every active set)
            rows = ca.vertcat(self.g, mG * self.G, mH * self.H)
            self._polish_solver = ca.nlpsol(
                "polish", "ipopt", {"x": self.w_sym, "p": ca.vertcat(self.p_sym, mG, mH), "f": self.f, "g": rows},
                {"ipopt": {**self.ipopt}, "print_time": False, "error_on_fail": False})
        z = np.zeros(self.n_c)
        sol = self._polish_solver(x0=w, p=np.concatenate([self.pb.p0, fixG.astype(float), fixH.astype(float)]),
                                  lbx=self.pb.lbw, ubx=self.pb.ubw, lbg=np.concatenate([self.pb.lbg, z, z]),
                                  ubg=np.concatenate([self.pb.ubg, z, z]))
        stt = self._polish_solver.stats()
        return np.asarray(sol["x"], float).ravel(), {
            "status": str(stt.get("return_status")), "iterations": int(stt.get("iter_count", 0)),
            "fixed_G": int(fixG.sum()), "fixed_H": int(fixH.sum()), "both": int((fixG & fixH).sum())}


def parse_portfolio(spec: str) -> tuple[list[str], list[float]]:
    """``pf:V1>V2>V3@CAP`` (one cap for every attempt but the last) or ``pf:V1@C1>V2@C2>V3`` (a cap
    per attempt): the variants and their caps (inf: none)."""
    members = spec.split(":", 1)[1].split(">")
    names = [m.partition("@")[0] for m in members]
    caps = [float(m.partition("@")[2]) if m.partition("@")[2] else math.inf for m in members]
    if all(math.isinf(c) for c in caps[:-1]) and not math.isinf(caps[-1]):
        caps = [caps[-1]] * len(caps)  # the old form: one cap for all
    return names, caps


def run_portfolio(path: Path, spec: str, time_limit: float) -> dict[str, Any]:
    """A portfolio ``pf:V1>V2>...[@CAP]``: load once, run the variants in order, each with the time
    ``CAP`` (the last with what is left of ``time_limit``), stop at the first answer that meets the
    paper's criterion."""
    from contactmp.nosbench import load_nosbench

    t0, c0 = time.perf_counter(), time.process_time()
    cpu = spec.startswith("pfc:")
    order, caps = parse_portfolio(spec)
    pb = load_nosbench(path)
    attempts = []
    rec: dict[str, Any] = {}
    for k, v in enumerate(order):
        left = time_limit - ((time.process_time() - c0) if cpu else (time.perf_counter() - t0))
        if left <= 0:
            break
        limit = left if k == len(order) - 1 else min(caps[k], left)
        rec = run(path, v, limit, pb=pb, cpu_clock=cpu)
        attempts.append({"variant": v, "solved": rec["solved"], "time_s": rec["time_s"], "nlps": rec["nlps"],
                         "iterations": rec["iterations"]})
        if rec["solved"]:
            break
    wall = time.perf_counter() - t0
    return {"problem": path.stem, "variant": spec, "solved": bool(rec.get("solved")),
            "status": "solved" if rec.get("solved") else ("time_limit" if wall > time_limit else "not_solved"),
            "solved_by": attempts[-1]["variant"] if rec.get("solved") else None, "time_s": wall,
            "cpu_s": time.process_time() - c0, "iterations": sum(a["iterations"] for a in attempts),
            "clock": "cpu" if cpu else "wall",
            "nlps": sum(a["nlps"] for a in attempts), "attempts": attempts,
            "objective": rec.get("objective"), "comp_residual": rec.get("comp_residual"),
            "feasibility": rec.get("feasibility"), "n_w": pb.n_w, "n_g": pb.n_g, "n_comp": pb.n_comp,
            "w": rec.get("w")}


def run(path: Path, variant: str, time_limit: float, pb: Any = None, cpu_clock: bool = False) -> dict[str, Any]:
    """One problem, one variant: the homotopy (and polish steps), judged by the paper's criterion."""
    from contactmp.nosbench import load_nosbench

    if variant.startswith(("pf:", "pfc:")):
        return run_portfolio(path, variant, time_limit)
    t0, c0 = time.perf_counter(), time.process_time()
    st = {**settings(variant), "cpu_clock": cpu_clock}
    pb = load_nosbench(path) if pb is None else pb

    def elapsed() -> float:
        return time.process_time() - c0 if cpu_clock else time.perf_counter() - t0

    hom = Homotopy(pb, st, time_limit)
    build_s = time.perf_counter() - t0
    x = hom.start()
    hist: list[dict[str, Any]] = []
    sigma = st["sigma0"]
    solved_by = None
    w_best = x[:pb.n_w]
    iters = 0
    while sigma >= st["sigma_min"] * (1 - 1e-12):
        if elapsed() > time_limit:
            break
        xn, info = hom.solve(x, sigma)
        iters += info["iterations"]
        if np.isfinite(xn).all():
            x = xn
        w = x[:pb.n_w]
        j = common.paper_judge(pb, w)
        Gv, Hv = (np.asarray(v, float).ravel() for v in hom._GH(w, pb.p0))
        mn = float(np.max(np.minimum(np.abs(Gv), np.abs(Hv)), initial=0.0))
        rec = {"sigma": sigma, **info, "comp": j["comp_residual"], "feas": j["feasibility"], "min_abs": mn,
               "f": j["objective"], "t": time.perf_counter() - t0}
        if st["mode"] == "linf":
            rec["s"] = float(x[-1])
        hist.append(rec)
        if info["status"] in SUCCESS and j["solved"]:
            solved_by, w_best = "homotopy", w
            break
        if j["solved"] and solved_by is None:
            # the criterion holds though IPOPT did not say success: keep the point, go on like the paper
            w_best = w
        if st["polish"] and mn <= st["polish_from"] and elapsed() < time_limit:
            wp, pinfo = hom.polish(w)
            iters += pinfo["iterations"]
            jp = common.paper_judge(pb, wp)
            rec["polish"] = {**pinfo, "comp": jp["comp_residual"], "feas": jp["feasibility"], "f": jp["objective"],
                             "solved": jp["solved"]}
            if jp["solved"]:
                solved_by, w_best = "polish", wp
                break
        if st["stop_on_fail"] and info["status"] not in SUCCESS:
            break
        sigma *= st["factor"]
    if solved_by is None:
        w_best = x[:pb.n_w]
    j = common.paper_judge(pb, w_best)
    wall = time.perf_counter() - t0
    status = "solved" if j["solved"] else ("time_limit" if wall > time_limit else "not_solved")
    return {"problem": path.stem, "variant": variant, "solved": j["solved"], "status": status,
            "solved_by": solved_by, "time_s": wall, "cpu_s": time.process_time() - c0, "build_s": build_s, "iterations": iters,
            "nlps": len(hist) + sum(1 for h in hist if "polish" in h), "objective": j["objective"],
            "comp_residual": j["comp_residual"], "feasibility": j["feasibility"], "history": hist,
            "n_w": pb.n_w, "n_g": pb.n_g, "n_comp": pb.n_comp, "w": [float(v) for v in w_best]}


def files(only: str | None) -> list[Path]:
    fs = [f for d in ("nosbench", "nosbench-more") for f in common.nosbench_files(d)]
    if only:
        subs = [s for s in only.split(",") if s]
        fs = [f for f in fs if any(s in f.stem for s in subs)]
    return sorted(fs, key=lambda p: (p.stat().st_size, p.name))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=None)
    ap.add_argument("--variants", default="plain", help="semicolon-separated variant names, or all")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=common.REPO / "benchmarks" / "out" / "nosbench_remedies.jsonl")
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--list", action="store_true", help="list the variants and exit")
    common.add_nosbench_argument(ap)
    args = ap.parse_args(argv)
    common.use_nosbench_argument(args)
    if args.list:
        for k in VARIANTS:
            print(k, json.dumps(settings(k)))
        return 0
    variants = list(VARIANTS) if args.variants == "all" else args.variants.split(";")
    bad = [v for v in variants if v not in VARIANTS and not (
        v.startswith(("pf:", "pfc:")) and all(x in VARIANTS for x in parse_portfolio(v)[0]))]
    if bad:
        raise SystemExit(f"unknown variants {bad}; known: {list(VARIANTS)}")
    store = RecordStore(args.out, fresh=args.fresh)
    fs = files(args.only)
    for f in fs:
        for v in variants:
            key = f"{f.stem}/{v}/{args.time_limit:g}"
            if key in store:
                continue
            try:
                rec = run(f, v, args.time_limit)
            except Exception as exc:  # recorded, the run goes on
                rec = {"problem": f.stem, "variant": v, "solved": False, "status": "error", "message": repr(exc)}
            rec.pop("w", None)
            store.append({"key": key, **rec})
            print(f"{f.stem:48s} {v:18s} {'yes' if rec.get('solved') else rec.get('status'):>10s} "
                  f"{rec.get('time_s', 0):7.2f} s  by {rec.get('solved_by')}  nlps {rec.get('nlps')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
