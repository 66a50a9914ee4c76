"""Case study ``drumwright-stiff``: a rigid box on an elastic foundation (Drumwright, arXiv 1905.10828,
section 5 / issue 6 item 4), stepped with the compliant scheme and with scipy's stiff integrators on the
same penalty model.

Model: a box (mass ``m``, face ``a x a``, height ``c``) whose bottom face rests on a Winkler foundation
(:func:`contactmp.models.compliance.elastic_foundation`, ``n x n`` unilateral springs, modulus ``E``,
viscosity ``eta``, thickness ``t``), no friction, gravity ``g``. State (13): COM position ``p``, unit
quaternion ``Q`` (w, x, y, z), world twist ``(v, omega)``. Spring ``j`` at body point ``s_j = (x_j, y_j,
-c/2)`` has gap ``phi_j = p_z + (R s_j)_z`` and rate ``phidot_j = G_j (v, omega)`` with
``G_j = (0, 0, 1, r_j,y, -r_j,x, 0)``, ``r_j = R s_j``. The penalty ODE::

    lambda_j = max(0, -k_j phi_j - b_j phidot_j),   M (v, omega)' = f + G^T lambda,
    p' = v,   Q' = 1/2 (0, omega) * Q,   f = (0, 0, -m g, -omega x J_w omega),  J_w = R J R^T.

Our scheme (per step ``h``): one unilateral :class:`CompliantQP` step with ``G``, ``phi`` at ``(p0, Q0)``
(``lambda = max(0, -K phi1 - B phidot1)``, implicit in the constraint state), then ``p1 = p0 + h v1``,
``Q1 = normalize(Q0 + h/2 (0, omega1) * Q0)``.

Stiff integrators: ``scipy.integrate.solve_ivp`` Radau and BDF (finite-difference Jacobians, the default)
on the penalty ODE, ``rtol`` as listed, ``atol`` scaled per state. Reference: Radau with ``rtol = 1e-9``
(``atol = rtol * ATOL_SCALE``). Error: max over the ``SAMPLES`` output times of ``|p - p_ref|_inf`` [m]
and of the rotation angle between ``Q`` and ``Q_ref`` [rad] (our scheme: its step values at those times).
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.integrate import solve_ivp

from contactmp.case_studies._figures import pyplot, save
from contactmp.case_studies._study import StudyRun, markdown_table, merge_counts
from contactmp.formulations.compliant_qp import CompliantQP
from contactmp.models.compliance import ElasticFoundation, elastic_foundation

DESCRIPTION = "box on a 30 x 30 elastic foundation: compliant scheme vs scipy Radau/BDF (time and error)"

MASS, FACE, HEIGHT, GRAVITY = 1.0, 0.1, 0.05, 9.81          # kg, m, m, m/s^2
MODULUS, THICKNESS, VISCOSITY = 1e7, 0.01, 300.0           # Pa, m, Pa s: sum k = 1e7 N/m, sum b = 300 N s/m
DURATION = 0.5
SAMPLES = 51
FULL_GRID, QUICK_GRID = 30, 10
FULL_ICS = ("flat-drop", "tilted-drop", "spinning")
QUICK_ICS = ("flat-drop", "tilted-drop")
FULL_H: tuple[float, ...] = (1e-3, 2.5e-4, 5e-5, 1e-5)
QUICK_H: tuple[float, ...] = (1e-3,)
STIFF_RTOL: tuple[float, ...] = (1e-3, 1e-6)
REF_RTOL = 1e-9
#: atol = rtol * ATOL_SCALE per state (m; quaternion; m/s and rad/s); static depth ~ 1e-6 m
ATOL_SCALE = np.array([1e-4] * 3 + [1e-2] * 4 + [1e-2] * 6)


# ------------------------------------------------------------------------------------ kinematics
def quat_to_rot(Q: np.ndarray) -> np.ndarray:
    """Rotation matrix of the unit quaternion ``Q = (w, x, y, z)``."""
    w, x, y, z = Q / np.linalg.norm(Q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def quat_rate(Q: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """``Q' = 1/2 (0, omega) * Q`` for the world-frame angular velocity ``omega``."""
    w, x, y, z = Q
    ox, oy, oz = omega
    return 0.5 * np.array([-ox * x - oy * y - oz * z,
                           ox * w + oy * z - oz * y,
                           oy * w + oz * x - ox * z,
                           oz * w + ox * y - oy * x])


def quat_angle(Q1: np.ndarray, Q2: np.ndarray) -> float:
    """Rotation angle [rad] between two unit quaternions."""
    d = abs(float(np.dot(Q1 / np.linalg.norm(Q1), Q2 / np.linalg.norm(Q2))))
    return 2.0 * math.acos(min(1.0, d))


class Box:
    """The box on its foundation: mass ``m`` [kg], body inertia ``J`` [kg m^2], springs ``found``."""

    def __init__(self, grid: int, m: float = MASS, a: float = FACE, c: float = HEIGHT, E: float = MODULUS,
                 t: float = THICKNESS, eta: float = VISCOSITY, g: float = GRAVITY):
        self.m, self.a, self.c, self.g = m, a, c, g
        self.found: ElasticFoundation = elastic_foundation(a, grid, E, t, eta)
        self.J = (m / 12.0) * np.diag([a * a + c * c, a * a + c * c, 2 * a * a])
        self.s = np.column_stack([self.found.points, np.full(self.found.n, -0.5 * c)])  # body frame

    @property
    def static_depth(self) -> float:
        """Flat rest depth ``W t / (E A)`` [m]."""
        return self.m * self.g / self.found.total_stiffness

    def rows(self, p: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``phi`` (N,) and ``G`` (N x 6) against the COM twist ``(v, omega)`` (world)."""
        r = self.s @ R.T
        G = np.zeros((self.found.n, 6))
        G[:, 2] = 1.0
        G[:, 3] = r[:, 1]
        G[:, 4] = -r[:, 0]
        return p[2] + r[:, 2], G

    def mass_matrix(self, R: np.ndarray) -> np.ndarray:
        """``M = diag(m I, R J R^T)``."""
        M = np.zeros((6, 6))
        M[:3, :3] = self.m * np.eye(3)
        Jw = R @ self.J @ R.T
        M[3:, 3:] = 0.5 * (Jw + Jw.T)
        return M

    def free_force(self, R: np.ndarray, omega: np.ndarray) -> np.ndarray:
        """``f = (0, 0, -m g, -omega x J_w omega)``."""
        Jw = R @ self.J @ R.T
        return np.concatenate([[0.0, 0.0, -self.m * self.g], -np.cross(omega, Jw @ omega)])

    def rhs(self, _t: float, y: np.ndarray) -> np.ndarray:
        """The penalty ODE ``y' = F(y)`` (13 states)."""
        p, Q, tw = y[:3], y[3:7], y[7:]
        R = quat_to_rot(Q)
        phi, G = self.rows(p, R)
        lam = np.maximum(0.0, -self.found.k * phi - self.found.b * (G @ tw))
        acc = np.linalg.solve(self.mass_matrix(R), self.free_force(R, tw[3:]) + G.T @ lam)
        return np.concatenate([tw[:3], quat_rate(Q / np.linalg.norm(Q), tw[3:]), acc])


def initial_state(box: Box, ic: str) -> np.ndarray:
    """The 13-vector of an initial condition: ``flat-drop`` (face 1 mm up, at rest), ``tilted-drop``
    (10 deg about x, lowest edge 1 mm up), ``spinning`` (flat at the static depth, ``omega = (2, 1, 20)``
    rad/s), ``rest`` (flat at the static depth, at rest)."""
    y = np.zeros(13)
    y[3] = 1.0
    half_c = 0.5 * box.c
    if ic == "flat-drop":
        y[2] = half_c + 1e-3
    elif ic == "tilted-drop":
        th = math.radians(10.0)
        y[3:7] = [math.cos(th / 2), math.sin(th / 2), 0.0, 0.0]
        R = quat_to_rot(y[3:7])
        y[2] = 1e-3 - float(np.min((box.s @ R.T)[:, 2]))
    elif ic == "spinning":
        y[2] = half_c - box.static_depth
        y[10:13] = [2.0, 1.0, 20.0]
    elif ic == "rest":
        y[2] = half_c - box.static_depth
    else:
        raise ValueError(f"unknown initial condition {ic!r}")
    return y


# ----------------------------------------------------------------------------------- integrators
def compliant_run(box: Box, y0: np.ndarray, h: float, T: float, t_eval: np.ndarray, solver: str = "auto",
                  warm_start: bool = True) -> dict[str, Any]:
    """Our scheme with step ``h`` for ``round(T / h)`` steps; states at ``t_eval`` (nearest step).

    Each step is ``CompliantQP(...).solve(solver)``, warm-started (``warm_start``) on the previous step's
    active set; ``solvers`` counts the solver names the steps report (e.g. ``{"lowrank": 500}``)."""
    n = int(round(T / h))
    p, Q, tw = y0[:3].copy(), y0[3:7].copy(), y0[7:].copy()
    want = np.clip(np.round(t_eval / h).astype(int), 0, n)
    out = np.empty((len(t_eval), 13))
    failed, res_max, max_active = 0, 0.0, 0
    solvers: dict[str, int] = {}
    prev = None
    t0 = time.perf_counter()
    for k in range(n + 1):
        for i in np.flatnonzero(want == k):
            out[i] = np.concatenate([p, Q, tw])
        if k == n:
            break
        R = quat_to_rot(Q)
        phi, G = box.rows(p, R)
        step = CompliantQP(box.mass_matrix(R), box.free_force(R, tw[3:]), tw, G, phi, box.found.k, box.found.b,
                           h, kind="unilateral").solve(solver, active=prev)
        prev = step.extras["active"] if warm_start and step.success else None
        solvers[step.solver] = solvers.get(step.solver, 0) + 1
        failed += not step.success
        res_max = max(res_max, step.residual)
        max_active = max(max_active, int(step.extras["active"].sum()))
        tw = step.extras["v1"]
        p = p + h * tw[:3]
        Q = Q + h * quat_rate(Q, tw[3:])
        Q = Q / np.linalg.norm(Q)
    return {"time_s": time.perf_counter() - t0, "Y": out, "steps": n, "failed_steps": failed,
            "max_residual": res_max, "max_active": max_active,
            "solvers": solvers}


def ivp_run(box: Box, y0: np.ndarray, method: str, rtol: float, T: float, t_eval: np.ndarray) -> dict[str, Any]:
    """``solve_ivp`` on the penalty ODE with ``rtol`` and ``atol = rtol * ATOL_SCALE``."""
    t0 = time.perf_counter()
    sol = solve_ivp(box.rhs, (0.0, T), y0, method=method, t_eval=t_eval, rtol=rtol, atol=rtol * ATOL_SCALE)
    el = time.perf_counter() - t0
    Y = sol.y.T if sol.success else np.full((len(t_eval), 13), np.nan)
    return {"time_s": el, "Y": Y, "success": bool(sol.success), "nfev": int(sol.nfev), "njev": int(sol.njev),
            "steps": None, "message": sol.message}  # steps unknown with t_eval (see nfev)


def errors(Y: np.ndarray, Yref: np.ndarray) -> dict[str, float]:
    """``pos_err`` = max_t |p - p_ref|_inf [m], ``rot_err`` = max_t angle(Q, Q_ref) [rad]."""
    if not np.isfinite(Y).all():
        return {"pos_err": float("inf"), "rot_err": float("inf")}
    return {"pos_err": float(np.max(np.abs(Y[:, :3] - Yref[:, :3]))),
            "rot_err": float(max(quat_angle(a, b) for a, b in zip(Y[:, 3:7], Yref[:, 3:7])))}


# ------------------------------------------------------------------------------------------ study
def run(out: Path, quick: bool = False, seed: int = 0, *, T: float = DURATION) -> dict[str, Any]:
    """Run every (initial condition, method) into ``out`` (resumes from ``out/records.jsonl``); writes
    ``table.md``, ``summary.json`` and ``time_vs_error.png``. Deterministic (``seed`` recorded only)."""
    study = StudyRun("drumwright-stiff", Path(out), quick, seed)
    grid = QUICK_GRID if quick else FULL_GRID
    ics, hs = (QUICK_ICS, QUICK_H) if quick else (FULL_ICS, FULL_H)
    box = Box(grid)
    t_eval = np.linspace(0.0, T, SAMPLES)
    methods = [("ref", "Radau", REF_RTOL)] + [("ours", "compliant", h) for h in hs] + \
        [("ivp", m, r) for m in ("Radau", "BDF") for r in STIFF_RTOL]
    jobs = [(ic, *mth) for ic in ics for mth in methods]
    for ic, kind, method, par in study.progress(jobs, len(jobs), "stiff (ic, method)"):
        key = _key(ic, method, par, grid, T)
        if key in study.store:
            continue
        y0 = initial_state(box, ic)
        if kind == "ours":
            r = compliant_run(box, y0, par, T, t_eval)
        else:
            r = ivp_run(box, y0, method, par, T, t_eval)
        rec = {"key": key, "ic": ic, "method": method, "param": par, "grid": grid, "T": T, "kind": kind,
               **{k: v for k, v in r.items() if k != "Y"}, "Y": r["Y"].tolist()}
        study.store.append(rec)

    records: list[dict[str, Any]] = []
    for ic in ics:
        ref = study.store[_key(ic, "Radau", REF_RTOL, grid, T)]
        Yref = np.asarray(ref["Y"], dtype=float)
        for kind, method, par in methods[1:]:
            r = dict(study.store[_key(ic, method, par, grid, T)])
            r.update(errors(np.asarray(r.pop("Y"), dtype=float), Yref))
            r["ref_time_s"] = ref["time_s"]
            records.append(r)

    rows = [[r["ic"], r["method"], (f"h={r['param']:g}" if r["kind"] == "ours" else f"rtol={r['param']:g}"),
             f"{r['time_s']:.3f}", f"{r['pos_err']:.2e}", f"{r['rot_err']:.2e}", r["steps"],
             r.get("nfev", "-"), r.get("failed_steps", "-") if r["kind"] == "ours" else r.get("success")]
            for r in records]
    # how far the two tightest stiff runs disagree: below this, an error against the reference means little
    rt_tight = STIFF_RTOL[-1]
    spread = {ic: errors(np.asarray(study.store[_key(ic, "Radau", rt_tight, grid, T)]["Y"], dtype=float),
                         np.asarray(study.store[_key(ic, "BDF", rt_tight, grid, T)]["Y"], dtype=float))
              for ic in ics}
    ref_rows = [[ic, f"{study.store[_key(ic, 'Radau', REF_RTOL, grid, T)]['time_s']:.3f}",
                 study.store[_key(ic, 'Radau', REF_RTOL, grid, T)]["nfev"], f"{spread[ic]['pos_err']:.2e}",
                 f"{spread[ic]['rot_err']:.2e}"] for ic in ics]
    # best / worst case over the initial conditions: the per-IC ratio of the stiff solver's time to ours
    # (each at its loosest setting: our largest h, solve_ivp rtol = STIFF_RTOL[0])
    hmax, rt = max(hs), STIFF_RTOL[0]
    ratios = []
    for ic in ics:
        ours = next(r for r in records if r["ic"] == ic and r["kind"] == "ours" and r["param"] == hmax)
        entry = {"ic": ic, "ours_time_s": ours["time_s"], "ours_pos_err": ours["pos_err"]}
        for m in ("Radau", "BDF"):
            s = next(r for r in records if r["ic"] == ic and r["method"] == m and r["param"] == rt)
            entry[f"{m}_time_s"] = s["time_s"]
            entry[f"{m}_pos_err"] = s["pos_err"]
            entry[f"{m}_over_ours"] = s["time_s"] / ours["time_s"]
        ratios.append(entry)
    best = max(ratios, key=lambda e: min(e["Radau_over_ours"], e["BDF_over_ours"]))
    worst = min(ratios, key=lambda e: min(e["Radau_over_ours"], e["BDF_over_ours"]))
    figures = [_plot(study.out, records, ics)]
    side = side_by_side(records)
    solvers = merge_counts(records, "solvers")

    lines = [
        "# drumwright-stiff" + (" (quick)" if quick else ""),
        "",
        f"Box m = {MASS} kg, face {FACE} x {FACE} m, height {HEIGHT} m on a {grid} x {grid} Winkler grid "
        f"({grid * grid} unilateral springs; E = {MODULUS:g} Pa, t = {THICKNESS} m, eta = {VISCOSITY:g} Pa s: "
        f"sum k = {box.found.total_stiffness:g} N/m, sum b = {box.found.total_damping:g} N s/m, static depth "
        f"{box.static_depth:.3e} m), no friction, T = {T} s. Errors against solve_ivp Radau rtol = {REF_RTOL:g} "
        f"(atol = rtol * ATOL_SCALE: 1e-4 m, 1e-2, 1e-2 m/s or rad/s), max over {SAMPLES} sample times. Wall times on one process "
        "(OPENBLAS threads as set in the environment).",
        "",
        "## Every run",
        "",
        markdown_table(["IC", "method", "setting", "wall [s]", "max |p - p_ref| [m]", "max angle err [rad]",
                        "steps", "nfev", "failed steps / success"], rows),
        f"## Reference runs (Radau rtol {REF_RTOL:g})",
        "",
        f"The last two columns compare Radau and BDF at rtol = {rt_tight:g} with each other: errors below "
        "them are not resolved by this non-smooth (max(0, .)) model's stiff solutions.",
        "",
        markdown_table(["IC", "wall [s]", "nfev", f"max |p_Radau - p_BDF| (rtol {rt_tight:g}) [m]",
                        "max angle Radau vs BDF [rad]"], ref_rows),
        f"## Time and accuracy side by side: best and worst case over the {len(ics)} initial conditions",
        "",
        "Per method and setting, the best (smallest) and worst (largest) wall time and max position error "
        f"over the initial conditions ({', '.join(ics)}), with the IC that attains each.",
        "",
        markdown_table(["method", "setting", "best time [s] (IC)", "worst time [s] (IC)",
                        "best pos err [m] (IC)", "worst pos err [m] (IC)", "worst angle err [rad] (IC)"],
                       [[e["method"], e["setting"], f"{e['time_best']:.3f} ({e['time_best_ic']})",
                         f"{e['time_worst']:.3f} ({e['time_worst_ic']})",
                         f"{e['pos_err_best']:.2e} ({e['pos_err_best_ic']})",
                         f"{e['pos_err_worst']:.2e} ({e['pos_err_worst_ic']})",
                         f"{e['rot_err_worst']:.2e} ({e['rot_err_worst_ic']})"] for e in side]),
        "Our scheme's QP solves (solver: steps): " + ", ".join(f"{k}: {v}" for k, v in sorted(solvers.items())) + ".",
        "",
        f"## Time ratio stiff / ours (ours h = {hmax:g}, solve_ivp rtol = {rt:g})",
        "",
        markdown_table(["IC", "ours [s]", "Radau / ours", "BDF / ours", "ours pos err", "Radau pos err",
                        "BDF pos err"],
                       [[e["ic"], f"{e['ours_time_s']:.3f}", f"{e['Radau_over_ours']:.2f}",
                         f"{e['BDF_over_ours']:.2f}", f"{e['ours_pos_err']:.2e}", f"{e['Radau_pos_err']:.2e}",
                         f"{e['BDF_pos_err']:.2e}"] for e in ratios]),
    ]
    study.write_table("\n".join(lines))
    headline = (f"{grid}x{grid} springs, T={T} s: ours (h={hmax:g}) vs the faster stiff solver (rtol={rt:g}): "
                f"best IC {best['ic']} stiff/ours time {min(best['Radau_over_ours'], best['BDF_over_ours']):.2f}x, "
                f"worst IC {worst['ic']} {min(worst['Radau_over_ours'], worst['BDF_over_ours']):.2f}x; "
                f"our max position error {max(e['ours_pos_err'] for e in ratios):.2e} m vs Radau "
                f"{max(e['Radau_pos_err'] for e in ratios):.2e} m, BDF {max(e['BDF_pos_err'] for e in ratios):.2e} m")
    summary = {
        "headline": headline, "grid": grid, "T": T, "reference": f"solve_ivp Radau rtol={REF_RTOL:g}",
        "side_by_side": side, "solvers": solvers, "stiff_spread": spread,
        "per_ic": ratios, "best_ic": best["ic"], "worst_ic": worst["ic"],
        "runs": [{k: v for k, v in r.items() if k not in ("key",)} for r in records],
        "failed_steps": sum(r.get("failed_steps", 0) for r in records), "figures": figures,
    }
    study.write_summary(summary)
    return summary


def side_by_side(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (method, setting): the best and worst wall time, max position error and angle error over the
    initial conditions, each with the IC attaining it (``records`` carry ``time_s``, ``pos_err``,
    ``rot_err``, ``ic``, ``method``, ``param``, ``kind``)."""
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["method"], r["param"]), []).append(r)
    out = []
    for (method, par), rs in groups.items():
        kind = rs[0]["kind"]
        e: dict[str, Any] = {"method": method, "param": par,
                             "setting": f"h={par:g}" if kind == "ours" else f"rtol={par:g}"}
        for key, col in (("time", "time_s"), ("pos_err", "pos_err"), ("rot_err", "rot_err")):
            lo, hi = min(rs, key=lambda r: r[col]), max(rs, key=lambda r: r[col])
            e.update({f"{key}_best": lo[col], f"{key}_best_ic": lo["ic"], f"{key}_worst": hi[col],
                      f"{key}_worst_ic": hi["ic"]})
        out.append(e)
    return out


def _key(ic: str, method: str, par: float, grid: int, T: float) -> str:
    return f"{ic}/{method}/{par:g}/n={grid}/T={T:g}"


def _plot(out: Path, records: list[dict[str, Any]], ics: tuple[str, ...]) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 5))
    marks = {"compliant": "o", "Radau": "s", "BDF": "^"}
    colors = dict(zip(ics, ["C0", "C1", "C2", "C3"]))
    for r in records:
        err = max(r["pos_err"], 1e-16)
        lab = f"{r['ic']} {r['method']} " + (f"h={r['param']:g}" if r["kind"] == "ours" else f"rtol={r['param']:g}")
        ax.loglog(r["time_s"], err, marks[r["method"]], color=colors[r["ic"]], label=lab)
    ax.set_xlabel("wall time [s]")
    ax.set_ylabel("max |p - p_ref| [m]")
    ax.set_title("box on elastic foundation: compliant scheme vs Radau / BDF")
    ax.legend(fontsize=6)
    ax.grid(True, which="both", alpha=0.3)
    return save(fig, Path(out) / "time_vs_error.png")
