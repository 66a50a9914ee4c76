"""Sensitivities of LCP and fc3d solutions: accuracy against finite differences, and cost against the
forward solve (issue 16).

    python benchmarks/sensitivity.py [--count 200] [--repeats 15] [--seed 0] [--out DIR] [--quick]

**Accuracy.** ``--count`` random problems of each kind whose solution is non-degenerate (a drawn
problem whose solution is flagged degenerate is counted and replaced):

* LCPs with a P-matrix ``M = A A^T / n + 0.3 I + S`` (``S`` skew-symmetric, so ``M`` is positive
  definite but not symmetric), ``n`` log-uniform in 2..170, ``q ~ N(0, I)``;
* fc3d problems with ``W = A A^T / m + 0.3 I`` (``m = 3 nc``), ``nc`` in 1..12, ``mu`` in [0.1, 1],
  ``q ~ N(0, I)``; and the shared Siconos problems whose ``W`` is positive definite (unique solution)
  and whose solution is non-degenerate;
* compliant (Drumwright) steps of a box on the ground (:func:`random_compliant_step`): the step
  Jacobian ``d(q, v)+ / d(q, v, u)`` of :func:`~contactmp.formulations.step_sensitivity.step_jacobian`;
* NMDP and linearized-MDP steps of the hopper standing under stable PD (:func:`random_polytope_step`):
  ``d(q, v)+ / d(q, v, u)`` and ``d(q, v)+ / dmu``, the references' substeps polished by Newton's
  method on their KKT pieces (:func:`polished_next_state`).

The reference Jacobian is the central finite difference of re-solved problems, step ``h = 1e-6``
(times ``max(1, |q|_inf)``), the solves polished to 1e-12 (LCP: Lemke, exact pivots; fc3d: Newton
at 1e-13; compliant: its QP at 1e-13; polytope steps: Newton on the KKT pieces to 1e-9 in force
units, about 1e-14 relative). Reported: the distribution of ``max|J - J_fd| / max(1, max|J_fd|)`` for ``dz/dq``
(``dr/dq`` and ``dr/dmu``), the share within 1e-5, and the VJP error ``|J^T v - vjp(v)|_inf``
relative to ``|J^T v|_inf``.

**Cost.** On the problems of ``benchmarks/lcp_vs_siconos.py`` (the shared LCPs and Trinkle's
pyramid LCPs of sizes 50, 100, 170) and of ``benchmarks/fc3d_vs_siconos.py`` (the shared fc3d
problems): the median time of the forward solve (the default ``solve_lcp`` / ``solve_fc3d`` call)
and of one sensitivity, ``lcp_sensitivity(...)`` (or ``fc3d_sensitivity``) followed by one JVP
along ``q``, and by one VJP (fc3d: its ``q`` block, as the JVP is along ``q``; the dense ``W_bar =
q_bar r^T`` costs one more outer product); the factorization is part of the sensitivity's time;
ratio sensitivity / forward (the issue's target: <= 2 for n >= 50). The three are timed interleaved, in batches of about 2 ms
(median over ``--repeats`` rounds). Output: ``DIR/sensitivity.json`` (default
``benchmarks/out``).
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

from contactmp.io import load_fc3d, load_lcp  # noqa: E402
from contactmp.result import Status  # noqa: E402
from contactmp.solvers.fc3d import fc3d_sensitivity  # noqa: E402
from contactmp.solvers.registry import solve_fc3d, solve_lcp  # noqa: E402
from contactmp.solvers.sensitivity import lcp_sensitivity  # noqa: E402

H = 1e-6
TARGET = 1e-5


def _lcp(M: np.ndarray, q: np.ndarray) -> np.ndarray | None:
    r = solve_lcp(M, q, "lemke", tol=1e-12)
    return r.x if r.status is Status.SOLVED else None


def _fc3d(W: np.ndarray, q: np.ndarray, mu: np.ndarray) -> np.ndarray | None:
    r = solve_fc3d(W, q, mu, "newton", tol=1e-13)
    return r.x if r.status is Status.SOLVED else None


def _rel(J: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(J - ref), initial=0.0) / max(1.0, float(np.max(np.abs(ref), initial=0.0))))


def _fd(solve: Callable[[np.ndarray], np.ndarray | None], x: np.ndarray, h: float) -> np.ndarray | None:
    """Central differences of ``solve`` at ``x``, column by column (None if a solve fails)."""
    cols = []
    for e in np.eye(x.size):
        a, b = solve(x + h * e), solve(x - h * e)
        if a is None or b is None:
            return None
        cols.append((a - b) / (2 * h))
    return np.column_stack(cols)


def _vjp_error(J: np.ndarray, vjp: np.ndarray, v: np.ndarray) -> float:
    ref = J.T @ v
    return float(np.max(np.abs(ref - vjp), initial=0.0) / max(1e-300, float(np.max(np.abs(ref), initial=0.0))))


def random_lcp(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A P-matrix LCP of the module docstring."""
    n = int(round(math.exp(rng.uniform(math.log(2), math.log(170)))))
    A, S = rng.normal(size=(n, n)), rng.normal(size=(n, n))
    return A @ A.T / n + 0.3 * np.eye(n) + (S - S.T) / (2 * math.sqrt(n)), rng.normal(size=n)


def random_fc3d(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An fc3d problem of the module docstring."""
    nc = int(rng.integers(1, 13))
    m = 3 * nc
    A = rng.normal(size=(m, m))
    return A @ A.T / m + 0.3 * np.eye(m), rng.normal(size=m), rng.uniform(0.1, 1.0, nc)


def lcp_accuracy(M: np.ndarray, q: np.ndarray, rng: np.random.Generator) -> dict[str, Any] | None:
    """The record of one LCP (None when its solution is degenerate or a solve fails)."""
    z = _lcp(M, q)
    if z is None:
        return None
    S = lcp_sensitivity(M, q, z)
    if S.flagged:
        return {"degenerate": True}
    h = H * max(1.0, float(np.abs(q).max()))
    fd = _fd(lambda x: _lcp(M, x), q, h)
    if fd is None:
        return None
    J, v = S.dz_dq(), rng.normal(size=q.size)
    return {"degenerate": False, "n": q.size, "active": int(S.active.size), "err_dq": _rel(J, fd),
            "err_vjp": _vjp_error(J, S.vjp(v)[0], v)}


def fc3d_accuracy(W: np.ndarray, q: np.ndarray, mu: np.ndarray, rng: np.random.Generator) -> dict[str, Any] | None:
    """The record of one fc3d problem (None when a solve fails)."""
    r = _fc3d(W, q, mu)
    if r is None:
        return None
    S = fc3d_sensitivity(W, q, mu, r)
    if S.flagged:
        return {"degenerate": True}
    h = H * max(1.0, float(np.abs(q).max()))
    fd_q = _fd(lambda x: _fc3d(W, x, mu), q, h)
    fd_mu = _fd(lambda x: _fc3d(W, q, x), mu, H)
    if fd_q is None or fd_mu is None:
        return None
    Jq, Jmu, v = S.dr_dq(), S.dr_dmu(), rng.normal(size=q.size)
    g = S.vjp(v)
    return {"degenerate": False, "n": q.size, "modes": np.bincount(S.modes, minlength=5).tolist(),
            "err_dq": _rel(Jq, fd_q), "err_dmu": _rel(Jmu, fd_mu),
            "err_vjp": max(_vjp_error(Jq, g["q"], v), _vjp_error(Jmu, g["mu"], v))}


def random_compliant_step(rng: np.random.Generator) -> tuple[Any, ...]:
    """A compliant (Drumwright, cone) step of a 0.4 x 0.2 m box_2d near the ground: gains
    ``K`` in [1e3, 1e5] N/m, ``B`` in [5, 100] N s/m, ``Bt`` in [10, 1000] N s/m, ``mu`` in
    [0.2, 1]; the box's center 0-2 mm below its resting height, tilted up to 0.05 rad, moving
    with ``v ~ N(0, 0.5)``, pushed by ``u ~ N(0, 5)`` N (horizontal, vertical, torque / 10)."""
    from contactmp.models.systems import box_2d
    from contactmp.transcriptions.time_stepping import TimeStepping

    gains = {"stiffness": 10 ** rng.uniform(3, 5), "damping": rng.uniform(5, 100),
             "tangential_damping": 10 ** rng.uniform(1, 3)}
    s = box_2d(width=0.4, height=0.2, mu=rng.uniform(0.2, 1.0))
    ts = TimeStepping(s, 0.01, "compliant", tol=1e-13, **gains)
    q = np.array([0.0, 0.1 - rng.uniform(0, 2e-3), rng.uniform(-0.05, 0.05)])
    return ts, q, rng.normal(0, 0.5, 3), rng.normal(0, 5, 3) * np.array([1, 1, 0.1])


def step_accuracy(ts: Any, q: np.ndarray, v: np.ndarray, u: np.ndarray, rng: np.random.Generator) -> dict[str, Any] | None:
    """The record of one time step: its Jacobian d(q, v)+/d(q, v, u) against central differences."""
    from contactmp.formulations.step_sensitivity import step_jacobian

    out = ts.step(q, v, u)
    if out.result.status is not Status.SOLVED:
        return None
    J = step_jacobian(ts.formulation, ts.system, ts.h, q, v, u, out)
    if J.flagged:
        return {"degenerate": True}
    nq, nv = q.size, v.size

    def nxt(x: np.ndarray) -> np.ndarray | None:
        o = ts.step(x[:nq], x[nq:nq + nv], x[nq + nv:])
        return np.concatenate([o.q, o.v]) if o.result.status is Status.SOLVED else None

    fd = _fd(nxt, np.concatenate([q, v, u]), H)
    if fd is None:
        return None
    full = np.hstack([J.state(), J.input()])
    return {"degenerate": False, "n": full.shape[1], "modes": out.result.extras.get("modes"), "err_step": _rel(full, fd)}


def random_polytope_step(rng: np.random.Generator, name: str) -> tuple[Any, ...]:
    """A step of the planar hopper on the ground with the wrench-polytope formulation ``name``
    (``"nmdp"``: projected gradient method, one substep; ``"mdp"``: the linearized QP): polytope
    stiffness ``k`` in [1e5, 1e7] N/m^2, stable PD gains ``Kp`` in [100, 2000], ``Kd`` in [1, 20]
    holding the pose, ``mu`` in [0.3, 1]; the foot 0-3 mm deep, the leg tilted up to 0.1 rad,
    ``v ~ N(0, s)`` with ``s`` one of 0.01, 0.1, 0.3 (sticking, sliding and lifting feet), ``u ~ N(0, (20 N, 2 N m))``. Returns ``(ts, q, v, u, build)`` with
    ``build(mu)`` the same time stepper for another friction coefficient."""
    from contactmp.models.systems import hopper_2d
    from contactmp.transcriptions.time_stepping import TimeStepping

    opts = {"stiffness": 10 ** rng.uniform(5, 7), "kp": rng.uniform(100, 2000, 2), "kd": rng.uniform(1, 20, 2)}
    if name == "nmdp":
        opts.update(method="pgm", adaptive=False)
    mu = rng.uniform(0.3, 1.0)

    def build(mu_: float) -> Any:
        return TimeStepping(hopper_2d(mu=mu_), 0.01, name, **opts)

    ts = build(mu)
    alpha = rng.uniform(-0.1, 0.1)
    q = ts.system.q_nominal + np.array([0.0, -rng.uniform(0, 3e-3), 0.0, alpha, 0.0])
    v = rng.normal(0, rng.choice([0.01, 0.1, 0.3]), 5)
    return ts, q, v, rng.normal(0, 1, 2) * np.array([20.0, 2.0]), build


def polished_next_state(ts: Any, q: np.ndarray, v: np.ndarray, u: np.ndarray) -> np.ndarray | None:
    """``(q, v)_{k+1}`` of a polytope step, each substep's answer polished by Newton's method on its
    KKT pieces (:func:`~contactmp.formulations.polytope_sensitivity.polish_substep`) to rounding;
    None when the step is not solved or the polish fails."""
    from contactmp.formulations.polytope_sensitivity import polish_substep

    out = ts.step(q, v, u)
    if out.result.status is not Status.SOLVED:
        return None
    for det in out.result.extras["substep_details"]:
        got = polish_substep(ts.formulation, ts.system, np.asarray(det["p"], dtype=float), det["q"], det["qd"], det["w"])
        if got is None:
            return None
        state = np.concatenate(got[:2])
    return state


def polytope_step_accuracy(ts: Any, q: np.ndarray, v: np.ndarray, u: np.ndarray, build: Callable[[float], Any],
                           rng: np.random.Generator) -> dict[str, Any] | None:
    """The record of one polytope step: ``d(q, v)+ / d(q, v, u)`` and ``d(q, v)+ / dmu`` against
    central differences of polished steps (:func:`polished_next_state`)."""
    from contactmp.formulations.step_sensitivity import step_jacobian

    out = ts.step(q, v, u)
    if out.result.status is not Status.SOLVED:
        return None
    J = step_jacobian(ts.formulation, ts.system, ts.h, q, v, u, out, wrt=("mu",))
    if J.flagged:
        return {"degenerate": True}
    nq, nv = q.size, v.size

    def nxt(x: np.ndarray) -> np.ndarray | None:
        return polished_next_state(ts, x[:nq], x[nq:nq + nv], x[nq + nv:])

    fd = _fd(nxt, np.concatenate([q, v, u]), H)
    mu = float(ts.system.mu[0])
    fd_mu = _fd(lambda m: polished_next_state(build(float(m[0])), q, v, u), np.array([mu]), H)
    if fd is None or fd_mu is None:
        return None
    w = out.result.extras["w"]
    # planar polytope (two vertices n +- mu t): both weights positive -> the force is inside the cone
    mode = "separated" if not np.any(w > 1e-12) else ("sticking" if np.sum(w > 1e-12) > 1 else "sliding")
    return {"degenerate": False, "n": nq + nv + u.size, "mode": mode,
            "err_step": _rel(np.hstack([J.state(), J.input()]), fd), "err_mu": _rel(J.param("mu"), fd_mu)}


def spread(xs: list[float]) -> dict[str, Any]:
    """Median, 90th percentile, max and the count within TARGET."""
    a = np.asarray(xs, dtype=float)
    if a.size == 0:
        return {"count": 0}
    return {"count": int(a.size), "median": float(np.median(a)), "p90": float(np.quantile(a, 0.9)),
            "max": float(a.max()), "within_target": int((a <= TARGET).sum())}


def accuracy(count: int, seed: int) -> dict[str, Any]:
    """The accuracy part of the module docstring."""
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for kind, draw, check in (("lcp", random_lcp, lcp_accuracy), ("fc3d", random_fc3d, fc3d_accuracy),
                              ("compliant step", random_compliant_step, step_accuracy),
                              ("nmdp step", lambda r: random_polytope_step(r, "nmdp"), polytope_step_accuracy),
                              ("mdp step", lambda r: random_polytope_step(r, "mdp"), polytope_step_accuracy)):
        recs, degenerate, failed, t0 = [], 0, 0, time.perf_counter()
        while len(recs) < count:
            rec = check(*draw(rng), rng)
            if rec is None:
                failed += 1
            elif rec["degenerate"]:
                degenerate += 1
            else:
                recs.append(rec)
        out[kind] = {"records": recs, "degenerate_drawn": degenerate, "failed": failed,
                     "seconds": time.perf_counter() - t0,
                     **{k: spread([r[k] for r in recs]) for k in recs[0] if k.startswith("err_")}}
        print(f"{kind}: {count} non-degenerate problems ({degenerate} degenerate and {failed} failed draws "
              f"replaced) in {out[kind]['seconds']:.1f} s", file=sys.stderr, flush=True)
    shared = []
    for f in common.data_files("fc3d", "*.npz", "fc3d"):
        W, q, mu = load_fc3d(f)
        if q.size > 60 or np.linalg.eigvalsh((W + W.T) / 2).min() <= 1e-10:
            continue  # a singular W: reactions not unique
        rec = fc3d_accuracy(W, q, mu, rng)
        shared.append({"problem": f.stem, **(rec or {"failed": True})})
    out["fc3d_shared"] = shared
    return out


def _times(fns: list[Callable[[], Any]], repeats: int) -> list[float]:
    """Median time per call of each of ``fns``, measured interleaved (round after round, each
    function once per round, so a change of the machine's load touches all alike) in batches of
    calls lasting about 2 ms (tiny calls: one sample is the mean over the batch)."""
    batch = []
    for fn in fns:
        t0 = time.perf_counter()
        fn()
        batch.append(max(1, min(1000, int(2e-3 / max(time.perf_counter() - t0, 1e-7)))))
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(max(1, repeats)):
        for fn, k, out in zip(fns, batch, samples):
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            out.append((time.perf_counter() - t0) / k)
        if max(x[-1] for x in samples) > 1.0:
            break
    return [statistics.median(x) for x in samples]


def cost(repeats: int, seed: int, quick: bool) -> list[dict[str, Any]]:
    """The cost part of the module docstring."""
    from contactmp.formulations.pyramid_lcp import random_pyramid_lcp

    rows: list[dict[str, Any]] = []
    lcps = [(f.stem, *load_lcp(f)) for f in common.data_files("lcp", "*.npz", "LCP")]
    for size in (50, 100, 170):
        for s in range(seed, seed + (1 if quick else 3)):
            M, q = random_pyramid_lcp(size, s, 0.5)
            lcps.append((f"pyramid_n{size}_s{s}", np.asarray(M, float), np.asarray(q, float)))
    rng = np.random.default_rng(seed)
    for name, M, q in lcps:
        res = solve_lcp(M, q)
        if res.status is not Status.SOLVED:
            continue
        v = rng.normal(size=q.size)
        t_fwd, t_jvp, t_vjp = _times([lambda: solve_lcp(M, q), lambda: lcp_sensitivity(M, q, res).jvp(dq=v),
                                      lambda: lcp_sensitivity(M, q, res).vjp(v)], repeats)
        S = lcp_sensitivity(M, q, res)
        rows.append({"kind": "lcp", "problem": name, "n": q.size, "forward_s": t_fwd, "jvp_s": t_jvp,
                     "vjp_s": t_vjp, "flagged": S.flagged, "singular": S.core.singular})
    for f in common.data_files("fc3d", "*.npz", "fc3d"):
        if quick and f.stem.startswith("Capsules"):
            continue
        W, q, mu = load_fc3d(f)
        res = solve_fc3d(W, q, mu)
        if res.status is not Status.SOLVED:
            continue
        v = rng.normal(size=q.size)
        t_fwd, t_jvp, t_vjp = _times([lambda: solve_fc3d(W, q, mu), lambda: fc3d_sensitivity(W, q, mu, res).jvp(dq=v),
                                      lambda: fc3d_sensitivity(W, q, mu, res).vjp(v, wrt=("q",))], repeats)
        S = fc3d_sensitivity(W, q, mu, res)
        rows.append({"kind": "fc3d", "problem": f.stem, "n": q.size, "forward_s": t_fwd, "jvp_s": t_jvp,
                     "vjp_s": t_vjp, "flagged": S.flagged, "singular": S.core.singular})
    for r in rows:
        r["ratio_jvp"] = r["jvp_s"] / r["forward_s"]
        r["ratio_vjp"] = r["vjp_s"] / r["forward_s"]
        print(f"{r['kind']} {r['problem']} n={r['n']}: forward {common.fmt_time(r['forward_s'])}, "
              f"jvp x{r['ratio_jvp']:.2f}, vjp x{r['ratio_vjp']:.2f}", file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run both parts, print the tables, write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=200, help="random non-degenerate problems of each kind")
    ap.add_argument("--repeats", type=int, default=15, help="timed repeats of each call (median)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="20 problems of each kind, 5 repeats, no Capsules")
    ap.add_argument("--out", type=Path, default=common.REPO / "benchmarks" / "out")
    args = ap.parse_args(argv)
    if args.quick:
        args.count, args.repeats = min(args.count, 20), min(args.repeats, 5)
    t_start = time.perf_counter()
    header = common.run_header("sensitivity", [sys.executable] + sys.argv, args.seed)
    acc = accuracy(args.count, args.seed)
    rows = []
    for kind in ("lcp", "fc3d", "compliant step", "nmdp step", "mdp step"):
        a = acc[kind]
        for key in [k for k in a if k.startswith("err_")]:
            d = a[key]
            rows.append([kind, key[4:], d["count"], f"{d['median']:.1e}", f"{d['p90']:.1e}", f"{d['max']:.1e}",
                         f"{d['within_target']}/{d['count']}"])
    for rec in acc["fc3d_shared"]:
        if "err_dq" in rec:
            rows.append([f"fc3d {rec['problem']}", "dq / dmu", 1, f"{rec['err_dq']:.1e}", "-", f"{rec['err_dmu']:.1e}",
                         f"{int(max(rec['err_dq'], rec['err_dmu']) <= TARGET)}/1"])
        else:
            rows.append([f"fc3d {rec['problem']}", "degenerate" if rec.get("degenerate") else "failed", 1, "-", "-", "-", "-"])
    common.print_table("Sensitivity accuracy: max|J - J_fd| / max(1, max|J_fd|) (vjp: relative to |J^T v|)",
                       ["problems", "derivative", "count", "median", "p90", "max", f"<= {TARGET:g}"], rows)
    cost_rows = cost(args.repeats, args.seed, args.quick)
    common.print_table("Sensitivity cost: one sensitivity (factorization + one product) / the forward solve",
                       ["problem", "n", "forward", "build + JVP", "build + VJP", "JVP/forward", "VJP/forward", "flagged"],
                       [[f"{r['kind']} {r['problem']}", r["n"], common.fmt_time(r["forward_s"]), common.fmt_time(r["jvp_s"]),
                         common.fmt_time(r["vjp_s"]), f"{r['ratio_jvp']:.2f}", f"{r['ratio_vjp']:.2f}",
                         "singular" if r["singular"] else ("degenerate" if r["flagged"] else "")] for r in cost_rows],
                       caption="target: ratio <= 2 for n >= 50")
    big = [r for r in cost_rows if r["n"] >= 50]
    summary = {"n_ge_50": len(big), "within_2x": sum(max(r["ratio_jvp"], r["ratio_vjp"]) <= 2 for r in big),
               "median_ratio_jvp": statistics.median([r["ratio_jvp"] for r in big]) if big else None,
               "max_ratio": max((max(r["ratio_jvp"], r["ratio_vjp"]) for r in big), default=None)}
    print(f"n >= 50: {summary['within_2x']}/{summary['n_ge_50']} within 2x the forward solve; "
          f"largest ratio {summary['max_ratio']}", file=sys.stderr)
    path = args.out / "sensitivity.json"
    return common.finish(path, {**header, "count": args.count, "h": H, "target": TARGET, "accuracy": acc,
                                "cost": cost_rows, "cost_summary": summary}, t_start)


if __name__ == "__main__":
    sys.exit(main())
