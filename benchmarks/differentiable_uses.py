"""Two uses of rollout gradients (issue 16, part 4): single-shooting trajectory optimization through
the simulator against the contact-implicit solution, and system identification.

    python benchmarks/differentiable_uses.py [--out DIR]

**Shooting** (``transcriptions/rollout_gradient.py``): the cito studies' quick box and hopper
tasks (pyramid; box: push 1 m in 1 s, rest to rest, |f_x| <= 10 N, minimize h sum f_x^2; hopper:
0.3 m in 1 s, standing to standing, minimize 1e-3 h sum |u|^2 + sum theta_k^2) written as
single shooting: the inputs are the only unknowns, the trajectory is ``TimeStepping``'s rollout, the
end conditions enter as a quadratic penalty ``W |c|^2`` with ``W = 1e2, 1e4, 1e6, 1e8`` in turn
(each solved by scipy's L-BFGS-B with the input bounds, warm-started from the previous), the
gradient by one adjoint sweep. Reference: the same task solved as contact-implicit trajectory
optimization (``ContactImplicitTO``, Scholtes, the study's options), measured in the same run.
Starts: box from the linear ramp 9 -> -9 N; hopper from standing still (leg force = weight), from
the contact-implicit solution's inputs, and from those inputs with noise (N(0, 0.5 N) on the leg
force, N(0, 0.05 N m) on the hip torque; 2 seeds), each also with the smoothed rollout gradient
(``smoothing = 1e-2``, Dojo's relaxed derivative); and through the relaxed models
(:func:`relaxed_continuation`: shooting on the rollout of the smoothed model, every contact pair
``a b = kappa``, for ``kappa = 1, 0.3, ..., 1e-6``, then on the exact model) from standing still,
from standing with noise (N(0, 10 N), N(0, 1 N m)) and from the first noisy CITO start; the smoothed-dynamics
homotopy of Pang et al. 2023, "Global planning for contact-rich manipulation via local smoothing of
quasi-dynamic contact models"). The hopper's reference drops the task's
configuration bounds (a simulator has none; with them the optimizer leans on the bounds as free
constraint forces) and the simulator takes every contact in every step, as the transcription does
(:func:`hopper_shooting`).

**Identification**: a 0.4 x 0.2 m box thrown tilted onto the ground (compliant contact, truth
``mu = 0.4``, ``K = 2000`` N/m, ``B = 20`` N s/m, ``Bt = 50`` N s/m, 60 steps of 10 ms), its
configurations observed with Gaussian noise (sigma = 1e-4 m); ``(mu, log K)`` fitted by scipy's
``least_squares`` (trust-region reflective) from ``(0.8, log 500)``, the residual Jacobian by two
forward products of the rollout per iteration.

Output: the tables and ``DIR/differentiable_uses.json`` (default ``benchmarks/out``).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from scipy.optimize import least_squares, minimize

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

from contactmp.case_studies import _cito  # noqa: E402
from contactmp.errors import InputError  # noqa: E402
from contactmp.models.systems import box_2d, hopper_2d  # noqa: E402
from contactmp.transcriptions.rollout_gradient import Rollout, differentiable_rollout  # noqa: E402
from contactmp.transcriptions.time_stepping import TimeStepping  # noqa: E402

PENALTIES = (1e2, 1e4, 1e6, 1e8)
#: the relaxed models of the continuation (``kappa``, in N s x m/s: the hopper's stance impulse per
#: step is ~5 N s), the first solved with the penalties FIRST_PENALTIES, the others with RELAXED_PENALTIES
KAPPAS = (1.0, 0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3, 3e-4, 1e-4, 1e-5, 1e-6)
FIRST_PENALTIES = (1e2, 1e4)
RELAXED_PENALTIES = (1e4, 1e6)
#: the exact model's penalties after the continuation (its end conditions already met to ~1e-2)
FINAL_PENALTIES = (1e6, 1e8, 1e10)


def shooting(ts: TimeStepping, q0: np.ndarray, qf: np.ndarray, N: int, cost: Callable[[Rollout], tuple[float, np.ndarray, np.ndarray]],
             end: Callable[[Rollout], np.ndarray], x0: np.ndarray, bounds: list[tuple[float, float]],
             inputs: Callable[[np.ndarray], np.ndarray], unknowns: Callable[[np.ndarray], np.ndarray], *,
             smoothing: float = 0.0, relaxed: bool = False, penalties: tuple[float, ...] = PENALTIES) -> dict[str, Any]:
    """Penalty-continuation single shooting (module docstring). ``cost(R)`` returns the running cost
    and its partials ``(q_bar, u_bar)`` with respect to the trajectory; ``end(R)`` the end-condition
    residual reported (``q_N - qf`` entries and ``v_N``); the penalty is on ``q_N - qf`` and ``v_N``;
    ``inputs(x)`` the (N, n_u) inputs of the unknowns ``x`` and ``unknowns(g)`` the gradient by ``x``
    of a gradient ``g`` by the inputs; ``smoothing`` the rollout gradient's kappa (0: exact). A
    rollout whose state leaves the finite numbers scores ``1e20`` (the line search backs off)."""
    s = ts.system
    memo: dict[bytes, Rollout | None] = {}

    def roll(x: np.ndarray) -> Rollout | None:
        key = x.tobytes()
        if key not in memo:
            memo.clear()
            try:
                memo[key] = differentiable_rollout(ts, q0, np.zeros(s.n_v), inputs(x), smoothing=smoothing,
                                                     relaxed=relaxed)
            except InputError:  # a non-finite state: the simulation blew up
                memo[key] = None
        return memo[key]

    def violation(x: np.ndarray) -> float:
        R = roll(x)
        return float("inf") if R is None else float(np.abs(end(R)).max())

    def objective(x: np.ndarray, W: float) -> tuple[float, np.ndarray]:
        R = roll(x)
        if R is None:
            return 1e20, np.zeros_like(x)
        J, q_bar, u_bar = cost(R)
        c = np.concatenate([R.q[-1] - qf, R.v[-1]])
        v_bar = np.zeros_like(R.v)
        q_bar = q_bar.copy()
        q_bar[-1] += 2 * W * c[:s.n_q]
        v_bar[-1] += 2 * W * c[s.n_q:]
        g = R.vjp(q_bar, v_bar, u_bar)[2]
        return J + W * float(c @ c), unknowns(g)

    t0, x, iterations, rollouts, stages = time.perf_counter(), x0.copy(), 0, 0, []
    for W in penalties:
        res = minimize(objective, x, args=(W,), jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 1000})
        x, iterations, rollouts = res.x, iterations + int(res.nit), rollouts + int(res.nfev)
        stages.append({"W": W, "message": str(res.message), "iterations": int(res.nit), "violation": violation(x)})
    R = roll(x)
    out = {"violation": violation(x), "iterations": iterations, "rollouts": rollouts,
           "time_s": time.perf_counter() - t0, "stages": stages, "inputs": inputs(x).tolist()}
    if R is None:
        return {**out, "cost": float("inf"), "statuses": ["non-finite"], "flagged_steps": 0}
    return {**out, "cost": float(cost(R)[0]), "statuses": sorted(set(R.statuses)), "flagged_steps": len(R.flagged_steps)}


def relaxed_continuation(ts: TimeStepping, q0: np.ndarray, qf: np.ndarray, N: int, cost: Callable[[Rollout], tuple[float, np.ndarray, np.ndarray]],
                         end: Callable[[Rollout], np.ndarray], x0: np.ndarray, bounds: list[tuple[float, float]],
                         inputs: Callable[[np.ndarray], np.ndarray], unknowns: Callable[[np.ndarray], np.ndarray]
                         ) -> dict[str, Any]:
    """Single shooting on the relaxed models (``differentiable_rollout(..., smoothing=kappa,
    relaxed=True)``: every contact pair ``a b = kappa``, a rollout smooth in the inputs) for
    ``kappa`` in :data:`KAPPAS`, each warm-started from the previous, then on the exact model
    (:data:`FINAL_PENALTIES`): the smoothed-dynamics homotopy of Pang et al. (2023), where a foot
    off the ground still feels the ground and a stuck foot can creep, so the gradient sees the
    contacts a hop needs. Each stage's inputs are also simulated exactly (``exact_violation``)."""
    t0, x, stages, iterations, rollouts = time.perf_counter(), x0.copy(), [], 0, 0
    for i, kappa in enumerate(KAPPAS):
        out = shooting(ts, q0, qf, N, cost, end, x, bounds, inputs, unknowns, smoothing=kappa, relaxed=True,
                       penalties=FIRST_PENALTIES if i == 0 else RELAXED_PENALTIES)
        x = np.asarray(out["inputs"], dtype=float).ravel()
        exact = ts.simulate(q0, np.zeros(ts.system.n_v), inputs(x), n_steps=N)
        exact_violation = float(np.abs(np.concatenate([exact.q[-1] - qf, exact.v[-1]])).max())
        stages.append({"kappa": kappa, "violation": out["violation"], "exact_violation": exact_violation,
                       "cost": out["cost"], "iterations": out["iterations"], "time_s": out["time_s"]})
        iterations, rollouts = iterations + out["iterations"], rollouts + out["rollouts"]
    out = shooting(ts, q0, qf, N, cost, end, x, bounds, inputs, unknowns, penalties=FINAL_PENALTIES)
    stages.append({"kappa": 0.0, "violation": out["violation"], "exact_violation": out["violation"], "cost": out["cost"],
                   "iterations": out["iterations"], "time_s": out["time_s"]})
    return {**out, "iterations": iterations + out["iterations"], "rollouts": rollouts + out["rollouts"],
            "time_s": time.perf_counter() - t0, "continuation": stages}


def cito(task: str, q_bounds: bool = True) -> dict[str, Any]:
    """The contact-implicit reference of a quick cito task (pyramid, Scholtes); ``q_bounds=False``
    drops the hopper task's configuration bounds (HOPPER_Q_LB/UB), which a simulator does not have."""
    t0 = time.perf_counter()
    to = _cito.TASKS[task].build("pyramid", True)
    if not q_bounds:
        for qk in to.q:
            qk.lb, qk.ub = np.full(qk.size, -np.inf), np.full(qk.size, np.inf)
    r = to.solve(strategy="scholtes", **dict(_cito.TASKS[task].options))
    return {"status": r.status.value, "cost": float(r.objective), "comp_violation": float(r.comp_violation),
            "time_s": time.perf_counter() - t0, "iterations": int(r.result.iterations), "u": r.u,
            "q_bounds": q_bounds}


def box_shooting(ref: dict[str, Any]) -> dict[str, Any]:
    """The box push by shooting (horizontal force only)."""
    N, h = 20, 0.05
    ts = TimeStepping(box_2d(m=1.0, width=0.4, height=0.2, mu=0.5), h, "pyramid", tol=1e-12)
    q0, qf = np.array([0.0, 0.1, 0.0]), np.array([1.0, 0.1, 0.0])

    def inputs(x: np.ndarray) -> np.ndarray:
        U = np.zeros((N, 3))
        U[:, 0] = x
        return U

    def cost(R: Rollout) -> tuple[float, np.ndarray, np.ndarray]:
        return h * float(np.sum(R.u ** 2)), np.zeros_like(R.q), 2 * h * R.u

    def end(R: Rollout) -> np.ndarray:  # the box task's rest: x_N = 1, vx_N = 0 (z, theta follow from contact)
        return np.array([R.q[-1, 0] - 1.0, R.v[-1, 0]])

    out = shooting(ts, q0, qf, N, cost, end, np.linspace(9.0, -9.0, N), [(-10.0, 10.0)] * N, inputs,
                   lambda g: g[:, 0].copy())
    return {"task": "box", "start": "ramp 9 -> -9 N", **out, "reference": {k: v for k, v in ref.items() if k != "u"}}


def hopper_shooting(ref: dict[str, Any], start: str, *, smoothing: float = 0.0, noise: float = 0.0,
                    seed: int = 0, relaxed: bool = False) -> dict[str, Any]:
    """The hopper's 0.3 m move by shooting, from standing still (``start="standing"``: the leg force
    holds the weight) or from the reference's inputs, plus Gaussian noise of ``noise`` N on the leg
    force and ``noise / 10`` N m on the hip torque; ``relaxed``: through the relaxed models first (:func:`relaxed_continuation`).
    Every contact is in every step (``active_gap = inf``), as in the
    contact-implicit transcription: with TimeStepping's default 0.1 m, the reference's step 7 --
    whose linearized gap ``phi + h Jn v`` closes while the foot is 0.98 m up, the swinging leg's
    Jacobian being large -- is not the simulator's step, and its inputs replayed end 8 m away."""
    N, h = 20, 0.05
    ts = TimeStepping(hopper_2d(), h, "pyramid", tol=1e-12, active_gap=math.inf)
    q0 = np.array([0.0, 1.0, 0.0, 0.0, 1.0])
    qf = q0.copy()
    qf[0] = 0.3

    def cost(R: Rollout) -> tuple[float, np.ndarray, np.ndarray]:
        q_bar = np.zeros_like(R.q)
        q_bar[:-1, 2] = 2 * R.q[:-1, 2]
        return 1e-3 * h * float(np.sum(R.u ** 2)) + float(np.sum(R.q[:-1, 2] ** 2)), q_bar, 2e-3 * h * R.u

    def end(R: Rollout) -> np.ndarray:
        return np.concatenate([R.q[-1] - qf, R.v[-1]])

    U = np.tile([11 * 9.81, 0.0], (N, 1)) if start == "standing" else np.asarray(ref["u"], dtype=float)
    x0 = (U + np.random.default_rng(seed).normal(size=U.shape) * np.array([noise, noise / 10])).ravel()
    problem = (ts, q0, qf, N, cost, end, x0, [(-300.0, 300.0), (-50.0, 50.0)] * N, lambda x: x.reshape(N, 2),
               lambda g: g.ravel())
    out = relaxed_continuation(*problem) if relaxed else shooting(*problem, smoothing=smoothing)
    label = (start + (f" + N(0, {noise:g} N)" if noise else "") + (f", kappa {smoothing:g}" if smoothing else "")
             + (", relaxed models kappa 1 -> 1e-6" if relaxed else ""))
    return {"task": "hopper", "start": label, "smoothing": smoothing, "noise": noise, **out,
            "reference": {k: v for k, v in ref.items() if k != "u"}}


def identification(seed: int) -> dict[str, Any]:
    """The box identification of the module docstring."""
    truth, gains, N, h, sigma = {"mu": 0.4, "stiffness": 2000.0}, {"damping": 20.0, "tangential_damping": 50.0}, 60, 0.01, 1e-4
    q0, v0, U = np.array([0.0, 0.12, 0.1]), np.array([1.5, -0.5, 0.0]), np.zeros((N, 3))

    def sim(mu: float, stiffness: float) -> TimeStepping:
        return TimeStepping(box_2d(width=0.4, height=0.2, mu=mu), h, "compliant", tol=1e-12, stiffness=stiffness, **gains)

    observed = sim(**truth).simulate(q0, v0, U, n_steps=N).q
    observed = observed + sigma * np.random.default_rng(seed).normal(size=observed.shape)
    memo: dict[str, Rollout] = {}

    def residual(theta: np.ndarray) -> np.ndarray:
        memo["R"] = differentiable_rollout(sim(theta[0], float(np.exp(theta[1]))), q0, v0, U, wrt=("mu", "stiffness"))
        return ((memo["R"].q - observed) / sigma).ravel()

    def jacobian(theta: np.ndarray) -> np.ndarray:
        R, nc = memo["R"], 4
        dq_mu, _ = R.jvp(dparams={"mu": np.ones(nc)})
        dq_K, _ = R.jvp(dparams={"stiffness": np.ones(nc)})
        return np.column_stack([dq_mu.ravel(), dq_K.ravel() * np.exp(theta[1])]) / sigma

    t0 = time.perf_counter()
    res = least_squares(residual, x0=[0.8, np.log(500.0)], jac=jacobian, method="trf",
                        bounds=([0.01, np.log(50.0)], [2.0, np.log(1e5)]))
    return {"truth": truth, "start": {"mu": 0.8, "stiffness": 500.0}, "noise_sigma": sigma, "observations": int(observed.size),
            "mu": float(res.x[0]), "stiffness": float(np.exp(res.x[1])), "cost": float(res.cost),
            "evaluations": int(res.nfev), "jacobians": int(res.njev), "status": int(res.status),
            "message": str(res.message), "time_s": time.perf_counter() - t0}


def main(argv: list[str] | None = None) -> int:
    """Run both uses, print the tables, write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=common.REPO / "benchmarks" / "out")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    header = common.run_header("differentiable_uses", [sys.executable] + sys.argv, args.seed)
    box_ref, hop_bounded, hop_ref = cito("box"), cito("hopper"), cito("hopper", q_bounds=False)
    runs = [box_shooting(box_ref), hopper_shooting(hop_ref, "standing"),
            hopper_shooting(hop_ref, "standing", smoothing=1e-2), hopper_shooting(hop_ref, "standing", relaxed=True),
            hopper_shooting(hop_ref, "standing", noise=10.0, seed=1, relaxed=True),
            hopper_shooting(hop_ref, "CITO inputs"),
            *[hopper_shooting(hop_ref, "CITO inputs", noise=0.5, seed=k) for k in range(2)],
            *[hopper_shooting(hop_ref, "CITO inputs", noise=0.5, seed=k, smoothing=1e-2) for k in range(2)],
            hopper_shooting(hop_ref, "CITO inputs", noise=0.5, seed=0, relaxed=True)]
    common.print_table(
        "Single shooting through the simulator (rollout gradients) against contact-implicit TO (reference)",
        ["task", "start", "shooting cost", "end violation", "L-BFGS-B its", "rollouts", "time", "CITO cost",
         "CITO status", "CITO time", "time ratio"],
        [[r["task"], r["start"], f"{r['cost']:.6g}", f"{r['violation']:.1e}", r["iterations"], r["rollouts"],
          common.fmt_time(r["time_s"]), f"{r['reference']['cost']:.6g}", r["reference"]["status"],
          common.fmt_time(r["reference"]["time_s"]), f"{r['time_s'] / r['reference']['time_s']:.1f}"] for r in runs],
        caption=f"hopper reference: the task without its configuration bounds (the simulator has none); with them "
                f"CITO reaches {hop_bounded['cost']:.6g} ({hop_bounded['status']}, {hop_bounded['time_s']:.1f} s)")
    for r in runs:
        if "continuation" in r:
            common.print_table(f"{r['task']} from {r['start']}: the continuation",
                               ["kappa", "violation (relaxed model)", "violation (exact model)", "cost", "L-BFGS-B its", "time"],
                               [[f"{st['kappa']:g}", f"{st['violation']:.1e}", f"{st['exact_violation']:.1e}",
                                 f"{st['cost']:.6g}", st["iterations"], common.fmt_time(st["time_s"])]
                                for st in r["continuation"]])
    ident = identification(args.seed)
    common.print_table("System identification of the thrown box (compliant contact)",
                       ["parameter", "truth", "start", "recovered", "relative error"],
                       [[k, ident["truth"][k], ident["start"][k], f"{ident[k]:.6g}",
                         f"{abs(ident[k] - ident['truth'][k]) / ident['truth'][k]:.1e}"] for k in ("mu", "stiffness")],
                       caption=f"{ident['evaluations']} evaluations, {ident['jacobians']} Jacobians, "
                               f"{ident['time_s']:.1f} s; cost {ident['cost']:.1f} for {ident['observations']} observations")
    return common.finish(args.out / "differentiable_uses.json",
                         {**header, "shooting": runs, "identification": ident,
                          "references": {"box": {k: v for k, v in box_ref.items() if k != "u"},
                                         "hopper": {k: v for k, v in hop_ref.items() if k != "u"},
                                         "hopper_with_q_bounds": {k: v for k, v in hop_bounded.items() if k != "u"}}},
                         t_start)


if __name__ == "__main__":
    sys.exit(main())
