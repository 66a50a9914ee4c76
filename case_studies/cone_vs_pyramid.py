"""Case study ``cone-vs-pyramid``: Coulomb's quadratic cone against the ``k``-facet friction pyramid.

Trinkle, Pang, Sudarsky and Lo (1995), section 2.4 and Figure 3: at a rolling contact that starts to
slide, the pyramid law (18) (for ``k`` facets: maximal dissipation over the friction polygon) puts
the friction force into a corner of the polygon, so it does not oppose the relative tangential
acceleration; Coulomb's cone law (13) makes it exactly opposite. Proposition 1: a pyramid solution
whose rolling forces lie in the quadratic cones (10) is a cone solution. Three parts:

1. *Push* (Figure 3). A box at rest on the ground (4 corner contacts, frames ``n = e_z``,
   ``t = e_x``) pushed through its center of mass by a horizontal force of ``ratio * mu m g`` at the
   angle ``theta`` from the pyramid's ``t`` axis. For ``ratio > 1 / cos(pi / k)`` it starts to slide
   under either law. We measure the angle between the resultant friction force ``sum_j c_jT`` and
   ``-a_T`` (the common tangential acceleration of the contacts; the box does not yaw). Per-contact
   angles are not determined: the 4 normal forces of a box on 4 corners are statically
   indeterminate, and when ``a_T`` is normal to a polygon edge each contact's friction may lie
   anywhere on that edge; the resultant is determined. *Closed form*: with
   ``Q = mu m g P_k`` (``P_k`` the unit-inradius polygon of :func:`facet_generators`), the resultant
   is ``f = Proj_Q(-F)`` (``-(F + f) in N_Q(f)`` is exactly maximal dissipation with
   ``m a_T = F + f``), and ``a_T = (F + f) / m``; the angle between ``f`` and ``-a_T`` is at most
   ``pi / k`` (an edge normal and a vertex are ``pi / k`` apart), attained when ``-F`` lies on the
   boundary of a vertex's normal cone: for ``k = 4`` and ``ratio = 2`` at ``theta = 30`` and 60
   degrees (``F sin theta = mu m g``). The cone: ``f = -mu m g F / |F|``, angle 0.
2. *Incline*. The same box at rest on a plane of slope ``alpha`` whose downhill direction makes the
   angle ``psi`` with the pyramid's ``t`` axis (drawn as a horizontal plane with gravity tilted by
   ``alpha``: the same mechanics). The box sticks iff the friction set contains the uphill force
   ``m g sin(alpha)``: for the cone ``tan(alpha*) = mu``; for the pyramid
   ``tan(alpha*) = mu / cos(delta)``, ``delta`` the angle between the uphill direction and the
   nearest edge normal (``0 <= delta <= pi / k``), so up to ``mu / cos(pi / k)``. Each model's
   threshold is located by bisection on its own answers (sliding iff ``|a_T| > 0``).
3. *Random problems* (:func:`~contactmp.models.random_problems.trinkle_dataset`): the pyramid LCP
   with ``k = 4, 8, 16, 32`` (Lemke) and the cone (fc3d solvers when every contact rolls, else the
   cone Program with IPOPT's elastic-l1 MPCC strategy), each judged by its own model's conditions.
   A pyramid answer *is a cone solution* when :meth:`ConeNCP.check` passes on its forces and
   accelerations; Proposition 1 predicts that this happens whenever its forces are in the cones
   (10). A contact that starts to slide under the pyramid has its friction at a polygon vertex
   (generically), ``|c_T| = mu c_n / cos(pi / k) > mu c_n``, so such an answer is never a cone
   solution for any finite ``k``; ``|c_T| / (mu c_n) - 1 <= 1 / cos(pi / k) - 1`` always. Forces are
   compared where both answers are *isolated* (:func:`isolated`: no other solution with the same
   contact modes; this excludes statically indeterminate forces and undetermined accelerations).
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike

from contactmp.case_studies._figures import pyplot, save
from contactmp.case_studies._study import StudyRun, markdown_table
from contactmp.models.contact_model import Contact, ContactModel
from contactmp.models.rigid_bodies import GRAVITY, GROUND, RigidBody, box_inertia, obj

DESCRIPTION = "Coulomb cone vs k-facet friction pyramid: friction direction, stick-slip threshold, Proposition 1"

#: the pyramids compared with the cone
FACETS: tuple[int, ...] = (4, 8, 16, 32)
#: friction coefficient of the push and incline scenes
MU_SCENE = 0.5
#: a solution counts when its model's conditions hold to PHYSICS_TOL * max(1, |b|, |c|) (inf-norms)
PHYSICS_TOL = 1e-6
#: LCP / fc3d residual tolerance
RESIDUAL_TOL = 1e-8
#: fc3d residual tolerance in the push and incline scenes: the incline's bisection tells sticking
#: (a_T = 0) from sliding by |a_T| > SLIDE_TOL, so the answers must be far more accurate than that
SCENE_FC3D_TOL = 1e-12
#: a contact slides when |a_T| > SLIDE_TOL * max(1, |b|_inf)
SLIDE_TOL = 1e-9
#: bisection on the slope stops below this width [rad]
THRESHOLD_XTOL = 1e-11
#: push magnitudes (in units of mu m g); 2 hits the 4-facet maximum pi/4 at theta = 30 deg exactly
PUSH_RATIOS_QUICK: tuple[float, ...] = (2.0,)
PUSH_RATIOS_FULL: tuple[float, ...] = (1.5, 2.0, 3.0)


# ---------------------------------------------------------------------------------------------
# scenes
# ---------------------------------------------------------------------------------------------
def box_under_force(force: ArrayLike, mu: float = MU_SCENE, half_extents: ArrayLike = (0.5, 0.5, 0.1),
                    mass: float = 1.0) -> ContactModel:
    """A box at rest on the ground ``z = 0`` touching it at its 4 bottom corners (all contacts
    rolling, frames ``n = e_z``, ``t = e_x``), under the external force ``force`` (world, through
    the center of mass, no moment): ``g_obj = (force, 0)`` in (4)."""
    h = np.asarray(half_extents, dtype=float)
    f = np.asarray(force, dtype=float).reshape(3)
    box = RigidBody(mass=mass, inertia=box_inertia(mass, h), position=[0.0, 0.0, h[2]],
                    wrench=np.concatenate([f, np.zeros(3)]), name="box")
    contacts = [
        Contact(obj(0), GROUND, point=[sx * h[0], sy * h[1], 0.0], normal=[0, 0, 1], tangent=[1, 0, 0], mu=mu)
        for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))
    ]
    return ContactModel(objects=[box], contacts=contacts, name="box_under_force")


def pushed_box(theta: float, ratio: float, mu: float = MU_SCENE, mass: float = 1.0,
               gravity: float = GRAVITY) -> ContactModel:
    """Figure 3's scene: the box of :func:`box_under_force` under gravity and a horizontal push of
    ``ratio * mu m g`` at the angle ``theta`` (radians) from the contact frames' ``t`` axis."""
    F = ratio * mu * mass * gravity
    return box_under_force([F * math.cos(theta), F * math.sin(theta), -mass * gravity], mu=mu, mass=mass)


def incline_box(slope: float, psi: float, mu: float = MU_SCENE, mass: float = 1.0,
                gravity: float = GRAVITY) -> ContactModel:
    """The box at rest on a plane of slope ``slope`` whose downhill direction is at the angle ``psi``
    from the contact frames' ``t`` axis (radians), drawn in the plane's frame: gravity has the
    tangential part ``m g sin(slope)`` along ``psi`` and the normal part ``-m g cos(slope)``."""
    g_t, g_n = mass * gravity * math.sin(slope), mass * gravity * math.cos(slope)
    return box_under_force([g_t * math.cos(psi), g_t * math.sin(psi), -g_n], mu=mu, mass=mass)


# ---------------------------------------------------------------------------------------------
# closed forms
# ---------------------------------------------------------------------------------------------
def polygon_projection(y: ArrayLike, inradius: float, k: int) -> np.ndarray:
    """Euclidean projection of the 2-vector ``y`` onto the friction polygon
    ``{x : e_i . x <= inradius}`` of :func:`facet_normals` ``(k)`` (vertices ``inradius * D_i``)."""
    from contactmp.friction_polygon import facet_generators, facet_normals

    y = np.asarray(y, dtype=float)
    if (facet_normals(k) @ y <= inradius).all():
        return y.copy()
    V = inradius * facet_generators(k)
    best, dist = y, np.inf
    for i in range(k):  # edge between vertices i-1 and i
        p0, p1 = V[i - 1], V[i]
        d = p1 - p0
        s = min(1.0, max(0.0, float((y - p0) @ d / (d @ d))))
        p = p0 + s * d
        if np.linalg.norm(y - p) < dist:
            best, dist = p, float(np.linalg.norm(y - p))
    return best


def friction_angle_deg(f: ArrayLike, a: ArrayLike, tol: float = 1e-12) -> float:
    """The angle (deg) between the friction force ``f`` and ``-a`` (``a`` the tangential
    acceleration); NaN when either is (numerically) zero."""
    f, a = np.asarray(f, dtype=float), np.asarray(a, dtype=float)
    if np.linalg.norm(f) <= tol or np.linalg.norm(a) <= tol:
        return float("nan")
    return float(np.degrees(np.arctan2(abs(f[0] * a[1] - f[1] * a[0]), -float(f @ a))))


def predicted_push_angle(theta: float, ratio: float, k: int | None) -> float:
    """Closed-form angle (deg) between the resultant friction and ``-a_T`` for the push scene:
    ``f = Proj_Q(-F)``, ``a ~ F + f`` (units ``mu m g = 1``; ``k = None``: the cone, 0)."""
    F = ratio * np.array([math.cos(theta), math.sin(theta)])
    if k is None:
        f = -F / max(1.0, float(np.linalg.norm(F)))
    else:
        f = polygon_projection(-F, 1.0, k)
    return friction_angle_deg(f, F + f)


def edge_offset(direction: float, k: int | None) -> float:
    """The angle ``delta`` [rad] between ``direction`` and the nearest edge normal of the
    ``k``-facet polygon (normals at ``2 i pi / k``); 0 for the cone (``k = None``)."""
    if k is None:
        return 0.0
    step = 2 * math.pi / k
    r = direction % step
    return min(r, step - r)


def threshold_closed_form(mu: float, psi: float, k: int | None) -> float:
    """The stick-slip slope ``alpha*`` [rad] of the incline scene: ``tan(alpha*) = mu / cos(delta)``
    with ``delta`` the offset of the uphill direction ``psi + pi`` from the nearest edge normal
    (the polygon's radius in that direction); ``atan(mu)`` for the cone."""
    return math.atan(mu / math.cos(edge_offset(psi + math.pi, k)))


# ---------------------------------------------------------------------------------------------
# solving one instantaneous problem with either law
# ---------------------------------------------------------------------------------------------
def _scale(model: ContactModel, c: np.ndarray) -> float:
    return max(1.0, float(np.abs(model.b).max(initial=0.0)), float(np.abs(c).max(initial=0.0)))


def solve_pyramid(model: ContactModel, k: int, seed: int = 0) -> dict[str, Any]:
    """The ``k``-facet pyramid LCP of ``model`` by Lemke (up to 3 random restarts): a dict with the
    :class:`PyramidLCP` ``form``, ``result``, ``solution`` (None if not finite), ``physics`` (max of
    :meth:`PyramidLCP.check`), ``solved`` (verified residual and physics within tolerance)."""
    from contactmp.formulations.pyramid_lcp import PyramidLCP
    from contactmp.solvers import solve_lcp

    form = PyramidLCP(model, facets=k)
    res = solve_lcp(form.M, form.q, solver="lemke", restarts=3, seed=seed, tol=RESIDUAL_TOL)
    sol, physics = None, float("inf")
    if np.isfinite(res.x).all():
        sol = form.solution(res.x)
        checks = form.check(sol)
        physics = float(max(checks.values())) if checks else 0.0
    solved = bool(res.success and sol is not None and physics <= PHYSICS_TOL * _scale(model, sol.c))
    return {"form": form, "result": res, "solution": sol, "physics": physics, "solved": solved,
            "time_s": float(res.time_s)}


def solve_cone(model: ContactModel, fc3d_tol: float = RESIDUAL_TOL, warm: Any = None) -> dict[str, Any]:
    """The cone problem of ``model``: fc3d (auto solver order, natural-map residual ``fc3d_tol``)
    when no contact slides, else (or if
    fc3d fails) the :class:`ConeNCP` Program with IPOPT (elastic-l1). A dict with ``form``,
    ``route``, ``status``, ``solution``, ``physics`` (max of :meth:`ConeNCP.check`), ``solved``
    (physics within tolerance, and the solver's own verified status), ``time_s`` (all attempts).
    ``warm``: a solution with forces and accelerations (e.g. a pyramid answer) to restart IPOPT
    from, with its friction scaled into the cones, when the cold start fails."""
    from contactmp.formulations.cone_ncp import ConeNCP
    from contactmp.solvers.nlp import solve_program
    from contactmp.solvers.registry import solve_fc3d

    form = ConeNCP(model)
    out: dict[str, Any] = {"form": form, "solution": None, "physics": float("inf"), "solved": False,
                           "time_s": 0.0, "route": None, "status": "not_solved"}

    def judge(sol: Any, success: bool) -> None:
        checks = form.check(sol)
        physics = float(max(checks.values())) if checks else 0.0
        ok = bool(success and physics <= PHYSICS_TOL * _scale(model, sol.c))
        if out["solution"] is None or ok or physics < out["physics"]:
            out.update(solution=sol, physics=physics, solved=ok)

    if form.S.size == 0:
        W, q, mu = form.to_fc3d()
        res = solve_fc3d(W, q, mu, tol=fc3d_tol)
        out["time_s"] += float(res.time_s)
        out.update(route=f"fc3d/{res.solver}", status=res.status.value)
        if np.isfinite(res.x).all():
            judge(form.solution(r=res.x), res.success)
    for start in [None] + ([warm] if warm is not None else []):  # cold, then (if that fails) warm
        if out["solved"]:
            break
        prog = form.to_program()
        if start is None:
            route = ("fc3d->" if out["route"] else "") + "program/elastic_l1"
        else:
            _warm_start(prog, form, start)
            route = out["route"] + "->warm"
        pres = solve_program(prog, strategy="elastic_l1")
        out["time_s"] += float(pres.time_s)
        out.update(route=route, status=pres.status.value)
        if np.isfinite(pres.x).all():
            judge(form.solution(pres.x, program=prog), pres.success)
    return out


def _warm_start(prog: Any, form: Any, sol: Any, name: str = "cone_ncp") -> None:
    """Set the initial point of ``form.to_program()`` from the forces and accelerations of ``sol``
    (rolling friction scaled into the cones; ``w = c_T / (mu c_n)``, ``gamma = |a_T|``)."""
    m, R = form.model, form.R
    cT = np.column_stack([sol.c_t[R], sol.c_o[R]])
    rad = m.mu[R] * np.maximum(sol.c_n[R], 0.0)
    norm = np.hypot(cT[:, 0], cT[:, 1])
    cT = cT * np.minimum(1.0, rad / np.maximum(norm, 1e-300))[:, None]
    w = cT / np.maximum(rad, 1e-12)[:, None]
    values = {"c_n": np.maximum(sol.c_n, 0.0), "c_t": cT[:, 0], "c_o": cT[:, 1],
              "w": np.concatenate([w[:, 0], w[:, 1]]), "gamma": np.hypot(sol.a_t[R], sol.a_o[R]),
              "a_n": sol.a_n, "a_t": sol.a_t[R], "a_o": sol.a_o[R]}
    for h in prog.blocks[name].variables:
        key = h.name.rsplit("/", 1)[-1]
        if key in values:
            h.init[:] = values[key]


def _tangential(sol: Any) -> tuple[np.ndarray, np.ndarray]:
    """(friction, tangential acceleration) per contact, shape (n_c, 2) each."""
    return np.column_stack([sol.c_t, sol.c_o]), np.column_stack([sol.a_t, sol.a_o])


def _slides(model: ContactModel, sol: Any) -> bool:
    _, aT = _tangential(sol)
    return bool(np.hypot(aT[:, 0], aT[:, 1]).max() > SLIDE_TOL * max(1.0, float(np.abs(model.b).max())))


# ---------------------------------------------------------------------------------------------
# part 1: the push
# ---------------------------------------------------------------------------------------------
def push_entry(model: ContactModel, sol: Any, physics: float, solved: bool, time_s: float) -> dict[str, Any]:
    """Angles of one push answer: the resultant friction vs ``-a_T`` (``angle_deg``), the largest
    per-contact angle over contacts carrying load (not determined: see the module docstring), the
    sliding direction [deg from t] and the spread of ``a_T`` over the contacts (0: no yaw)."""
    fT, aT = _tangential(sol)
    a_mean = aT.mean(axis=0)
    loaded = sol.c_n > 1e-9 * max(1.0, float(sol.c_n.max()))
    per_contact = [friction_angle_deg(fT[j], aT[j]) for j in range(len(fT)) if loaded[j]]
    per_contact = [v for v in per_contact if np.isfinite(v)]
    return {
        "solved": solved,
        "physics": physics,
        "time_s": time_s,
        "angle_deg": friction_angle_deg(fT.sum(axis=0), a_mean),
        "contact_angle_max_deg": max(per_contact) if per_contact else None,
        "slide_dir_deg": float(np.degrees(np.arctan2(a_mean[1], a_mean[0]))),
        "a_T": float(np.linalg.norm(a_mean)),
        "yaw_spread": float(np.abs(aT - a_mean).max()),
        "sliding": _slides(model, sol),
    }


def _push_record(theta_deg: float, ratio: float, seed: int) -> dict[str, Any]:
    theta = math.radians(theta_deg)
    model = pushed_box(theta, ratio)
    rec: dict[str, Any] = {"key": _push_key(seed, ratio, theta_deg), "part": "push", "seed": seed,
                           "ratio": ratio, "theta_deg": theta_deg, "models": {}}
    for k in FACETS:
        r = solve_pyramid(model, k, seed)
        e = push_entry(model, r["solution"], r["physics"], r["solved"], r["time_s"])
        e["predicted_deg"] = predicted_push_angle(theta, ratio, k)
        rec["models"][f"k{k}"] = e
    r = solve_cone(model, fc3d_tol=SCENE_FC3D_TOL)
    e = push_entry(model, r["solution"], r["physics"], r["solved"], r["time_s"])
    e.update(predicted_deg=0.0, route=r["route"])
    rec["models"]["cone"] = e
    return rec


def _push_key(seed: int, ratio: float, theta_deg: float) -> str:
    return f"s{seed}-push-r{ratio:g}-th{theta_deg:g}"


# ---------------------------------------------------------------------------------------------
# part 2: the incline
# ---------------------------------------------------------------------------------------------
def _incline_slides(k: int | None, slope: float, psi: float, seed: int) -> bool | None:
    """Does the box on the incline slide under the ``k``-facet pyramid (``None``: the cone)?
    ``None`` when the model's answer could not be verified."""
    model = incline_box(slope, psi)
    r = solve_pyramid(model, k, seed) if k is not None else solve_cone(model, fc3d_tol=SCENE_FC3D_TOL)
    if not r["solved"]:
        return None
    return _slides(model, r["solution"])


def find_threshold(k: int | None, psi: float, mu: float = MU_SCENE, seed: int = 0,
                   xtol: float = THRESHOLD_XTOL) -> dict[str, Any]:
    """The slope [rad] where the model (``k`` facets, ``None``: cone) switches from sticking to
    sliding, by bisection on its own answers between ``atan(mu) - 3 deg`` and
    ``atan(mu / cos(pi / k)) + 3 deg``; ``threshold`` is None when a bracket end is wrong or an
    answer could not be verified."""
    assert mu == MU_SCENE, "the incline scenes use MU_SCENE"
    lo = math.atan(mu) - math.radians(3.0)
    hi = math.atan(mu / (math.cos(math.pi / k) if k else 1.0)) + math.radians(3.0)
    n_solves, note = 0, ""
    s_lo, s_hi = _incline_slides(k, lo, psi, seed), _incline_slides(k, hi, psi, seed)
    n_solves += 2
    if s_lo is not False or s_hi is not True:
        return {"threshold": None, "solves": n_solves, "note": f"bad bracket: slides(lo)={s_lo}, slides(hi)={s_hi}"}
    while hi - lo > xtol:
        mid = 0.5 * (lo + hi)
        s = _incline_slides(k, mid, psi, seed)
        n_solves += 1
        if s is None:
            note = f"unverified answer at slope {mid!r}"
            return {"threshold": None, "solves": n_solves, "note": note}
        lo, hi = (lo, mid) if s else (mid, hi)
    return {"threshold": 0.5 * (lo + hi), "solves": n_solves, "note": note}


def _incline_key(seed: int, psi_deg: float) -> str:
    return f"s{seed}-incline-psi{psi_deg:g}"


def _incline_record(psi_deg: float, grid_deg: list[float], seed: int) -> dict[str, Any]:
    psi = math.radians(psi_deg)
    rec: dict[str, Any] = {"key": _incline_key(seed, psi_deg), "part": "incline", "seed": seed,
                           "psi_deg": psi_deg, "mu": MU_SCENE, "grid_deg": grid_deg, "models": {}}
    for name, k in [(f"k{k}", k) for k in FACETS] + [("cone", None)]:
        t0 = time.perf_counter()
        th = find_threshold(k, psi, seed=seed)
        exact = threshold_closed_form(MU_SCENE, psi, k)
        modes = "".join({True: "L", False: "S", None: "?"}[_incline_slides(k, math.radians(a), psi, seed)]
                        for a in grid_deg)
        rec["models"][name] = {
            "threshold_deg": math.degrees(th["threshold"]) if th["threshold"] is not None else None,
            "closed_form_deg": math.degrees(exact),
            "error_deg": (abs(math.degrees(th["threshold"] - exact)) if th["threshold"] is not None else None),
            "solves": th["solves"],
            "note": th["note"],
            "grid_modes": modes,
            "time_s": time.perf_counter() - t0,
        }
    return rec


# ---------------------------------------------------------------------------------------------
# part 3: random problems
# ---------------------------------------------------------------------------------------------
def _active_set_matrix(model: ContactModel, sol: Any, law: str, k: int = 4) -> np.ndarray:
    """The linearization ``K x = 0`` of the conditions that keep every contact in its mode, in the
    force changes ``delta c = G x`` those modes allow (``delta a = A G x``); see :func:`isolated`."""
    from contactmp.friction_polygon import facet_generators

    nc = model.n_c
    tol = 1e-7 * max(1.0, float(np.abs(model.b).max()))
    sliding = set(np.asarray(model.sliding).tolist())
    D = facet_generators(k) if law == "pyramid" else None
    cols: list[np.ndarray] = []          # force directions (3 n_c)
    rows_a: list[np.ndarray] = []        # functionals of delta a (3 n_c)
    rows_x: list[tuple[int, int, float]] = []  # (row, column, coefficient) on x

    def vec(j: int, n: float, t: float, o: float) -> np.ndarray:
        v = np.zeros(3 * nc)
        v[j], v[nc + j], v[2 * nc + j] = n, t, o
        return v

    for j in range(nc):
        mu = float(model.mu[j])
        if sol.a_n[j] > tol:  # breaking: c_j = 0 stays, a_jn > 0 is free
            continue
        rows_a.append(vec(j, 1, 0, 0))  # a_jn = 0 stays
        if j in sliding:  # (12): c_jT = -mu c_jn v_T / |v_T|
            vt, vo = model.v_t[j], model.v_o[j]
            vT = math.hypot(vt, vo)
            cols.append(vec(j, 1.0, -mu * vt / vT, -mu * vo / vT))
            continue
        aT = np.array([sol.a_t[j], sol.a_o[j]])
        naT = float(np.linalg.norm(aT))
        if naT <= tol:  # sticking: any force change, a_jT = 0 stays
            cols += [vec(j, 1, 0, 0), vec(j, 0, 1, 0), vec(j, 0, 0, 1)]
            rows_a += [vec(j, 0, 1, 0), vec(j, 0, 0, 1)]
            continue
        u = aT / naT
        perp = np.array([-u[1], u[0]])
        if law == "cone":  # c_T = -mu c_n a_T/|a_T|: c_n changes, and c_T turns with a_T
            cols.append(vec(j, 1.0, -mu * u[0], -mu * u[1]))
            cols.append(vec(j, 0.0, perp[0], perp[1]))
            # delta(c_T . perp) = -mu c_n (perp . delta a_T) / |a_T|
            rows_a.append(vec(j, 0.0, perp[0], perp[1]) * (mu * float(sol.c_n[j]) / naT))
            rows_x.append((len(rows_a) - 1, len(cols) - 1, 1.0))
        else:  # the active polygon vertices (1: a vertex, 2: an edge, a_T stays along its normal)
            d = D @ aT
            active = np.flatnonzero(d <= d.min() + 1e-9 * naT * float(np.abs(D).max()))
            for i in active:
                cols.append(vec(j, 1.0, mu * D[i, 0], mu * D[i, 1]))
            if active.size > 1:
                rows_a.append(vec(j, 0.0, perp[0], perp[1]))
    if not cols:
        return np.zeros((len(rows_a), 0))
    G = np.column_stack(cols)
    K = (np.vstack(rows_a) @ (model.A @ G)) if rows_a else np.zeros((0, G.shape[1]))
    for r, c, v in rows_x:
        K[r, c] += v
    return K


def isolated(model: ContactModel, sol: Any, law: str, k: int = 4) -> bool:
    """True when ``sol`` is the only solution of its model with its contact modes nearby: the
    linearized mode conditions ``K x = 0`` (:func:`_active_set_matrix`; breaking contacts free,
    ``a_n = 0`` kept elsewhere, ``a_T = 0`` kept at sticking contacts, the sliding direction kept
    where the friction depends on it) admit only ``x = 0``. This excludes statically indeterminate
    forces (a box on 4 corners) and undetermined accelerations (a box clamped between two jaws);
    for the pyramid (linear within a mode) it also excludes other solutions with the same modes
    anywhere. Solutions with other modes are not excluded."""
    K = _active_set_matrix(model, sol, law, k)
    if K.shape[1] == 0:
        return True
    if K.shape[0] < K.shape[1]:
        return False
    sv = np.linalg.svd(K, compute_uv=False)
    return bool(sv.min() > 1e-9 * max(1.0, float(sv.max())))


def in_cones(model: ContactModel, sol: Any) -> float:
    """``max_j (|c_jT| - mu_j c_jn)`` over all contacts: <= 0 when (10) holds."""
    return float((np.hypot(sol.c_t, sol.c_o) - model.mu * sol.c_n).max(initial=-np.inf))


def relative_cone_violation(model: ContactModel, sol: Any) -> float:
    """``max_j (|c_jT| / (mu_j c_jn) - 1)`` over the rolling contacts with ``mu_j c_jn > 0`` (0 when
    none): how far the friction sticks out of the quadratic cone, relative to its radius. For a
    ``k``-facet pyramid answer it is at most ``1 / cos(pi / k) - 1``."""
    R = np.asarray(model.rolling, dtype=np.int64)
    rad = model.mu[R] * sol.c_n[R]
    keep = rad > 1e-12 * max(1.0, float(np.abs(sol.c_n).max(initial=0.0)))
    if not keep.any():
        return 0.0
    return float(max(0.0, (np.hypot(sol.c_t[R], sol.c_o[R])[keep] / rad[keep] - 1.0).max()))


def _random_key(ds: Any, seed: int) -> str:
    return f"s{seed}-random-p{ds.problem_id:02d}-mu{ds.mu:.1f}"


def _random_record(ds: Any, seed: int) -> dict[str, Any]:
    from contactmp.formulations.cone_ncp import ConeNCP

    model = ds.model
    rec: dict[str, Any] = {"key": _random_key(ds, seed), "part": "random", "seed": seed,
                           "problem_id": ds.problem_id, "mu": ds.mu, "n_S": ds.n_S, "n_R": ds.n_R,
                           "n_c": model.n_c, "size": ds.size, "pyramid": {}}
    pyramids = {k: solve_pyramid(model, k, seed) for k in FACETS}
    warm = next((pyramids[k]["solution"] for k in sorted(FACETS, reverse=True) if pyramids[k]["solved"]), None)
    cone = solve_cone(model, warm=warm)
    csol = cone["solution"]
    rolling = set(np.asarray(model.rolling).tolist())
    rec["cone"] = {
        "route": cone["route"], "status": cone["status"], "solved": cone["solved"],
        "physics": cone["physics"], "time_s": cone["time_s"],
        "isolated": bool(cone["solved"] and isolated(model, csol, "cone")),
        "starts_to_slide": (int(sum(m == "sliding" for j, m in enumerate(csol.modes) if j in rolling))
                            if cone["solved"] else None),
    }
    cone_form = ConeNCP(model)
    for k in FACETS:
        r = pyramids[k]
        sol = r["solution"]
        e: dict[str, Any] = {"size": int(r["form"].size), "status": r["result"].status.value,
                             "solved": r["solved"], "physics": r["physics"], "time_s": r["time_s"],
                             "iterations": int(r["result"].iterations)}
        if r["solved"]:
            scale = _scale(model, sol.c)
            checks = cone_form.check(cone_form.solution(c=sol.c))
            e["cone_residual"] = float(max(checks.values()))
            e["cone_worst"] = max(checks, key=checks.get)
            e["cone_violation"] = in_cones(model, sol)
            e["cone_violation_rel"] = relative_cone_violation(model, sol)
            e["in_cones"] = bool(e["cone_violation"] <= PHYSICS_TOL * scale)
            e["is_cone_solution"] = bool(e["cone_residual"] <= PHYSICS_TOL * scale)
            e["starts_to_slide"] = int(sum(m == "sliding" for j, m in enumerate(sol.modes) if j in rolling))
            e["isolated"] = isolated(model, sol, "pyramid", k)
            if cone["solved"]:
                cscale = max(1.0, float(np.abs(csol.c).max()))
                e["force_diff_rel"] = float(np.abs(sol.c - csol.c).max() / cscale)
                e["qddot_diff_rel"] = float(np.abs(sol.qddot - csol.qddot).max()
                                            / max(1.0, float(np.abs(csol.qddot).max())))
        rec["pyramid"][f"k{k}"] = e
    return rec


# ---------------------------------------------------------------------------------------------
# tables, figures, summary
# ---------------------------------------------------------------------------------------------
def _names() -> list[str]:
    return [f"k{k}" for k in FACETS] + ["cone"]


def _label(name: str) -> str:
    return "cone" if name == "cone" else f"pyramid k = {name[1:]}"


def _finite(f: Callable[[list[float]], Any], v: list[float | None]) -> float | None:
    """``f`` of the finite entries of ``v`` (None when there are none)."""
    w = [x for x in v if x is not None and np.isfinite(x)]
    return float(f(w)) if w else None


def _push_summary(records: list[dict[str, Any]], ratios: tuple[float, ...]) -> tuple[str, list[dict[str, Any]]]:
    rows, data = [], []
    for ratio in ratios:
        rs = [r for r in records if r["ratio"] == ratio]
        for name in _names():
            es = [r["models"][name] for r in rs]
            k = None if name == "cone" else int(name[1:])
            dev = [abs((e["slide_dir_deg"] - r["theta_deg"] + 180) % 360 - 180) for r, e in zip(rs, es)]
            d = {
                "model": name, "ratio": ratio, "n": len(es), "solved": sum(e["solved"] for e in es),
                "max_angle_deg": _finite(max, [e["angle_deg"] for e in es]),
                "mean_angle_deg": _finite(np.mean, [e["angle_deg"] for e in es]),
                "max_predicted_deg": _finite(max, [e["predicted_deg"] for e in es]),
                "bound_deg": 180.0 / k if k else 0.0,
                "max_err_vs_closed_form_deg": _finite(max, [abs(e["angle_deg"] - e["predicted_deg"]) for e in es]),
                "max_contact_angle_deg": _finite(max, [e["contact_angle_max_deg"] for e in es]),
                "max_slide_dir_dev_deg": _finite(max, dev),
                "max_yaw_spread": _finite(max, [e["yaw_spread"] for e in es]),
                "mean_time_ms": 1e3 * float(np.mean([e["time_s"] for e in es])),
            }
            data.append(d)
            rows.append([_label(name), f"{ratio:g}", f"{d['solved']}/{d['n']}", d["max_angle_deg"],
                         d["bound_deg"], d["mean_angle_deg"], _fmt_e(d["max_err_vs_closed_form_deg"]),
                         d["max_slide_dir_dev_deg"], d["max_contact_angle_deg"], _fmt_e(d["max_yaw_spread"]),
                         d["mean_time_ms"]])
    headers = ["model", "push / (mu m g)", "solved", "max angle (deg)", "pi/k (deg)", "mean angle (deg)",
               "max abs(angle - closed form) (deg)", "max slide dir - push dir (deg)",
               "max per-contact angle (deg) (not determined)", "max yaw spread of a_T", "mean solve (ms)"]
    return markdown_table(headers, rows), data


def _push_by_theta(records: list[dict[str, Any]], ratio: float) -> str:
    rs = sorted([r for r in records if r["ratio"] == ratio], key=lambda r: r["theta_deg"])
    headers = ["theta (deg)"] + [_label(n) for n in _names()]
    rows = [[f"{r['theta_deg']:g}"] + [r["models"][n]["angle_deg"] for n in _names()] for r in rs]
    return markdown_table(headers, rows)


def _fmt_e(v: float | None) -> str | None:
    return None if v is None else f"{v:.1e}"


def _incline_summary(records: list[dict[str, Any]]) -> tuple[str, str, list[dict[str, Any]]]:
    rs = sorted(records, key=lambda r: r["psi_deg"])
    headers = ["psi (deg)"] + [f"{_label(n)}: found / closed form (deg)" for n in _names()]
    rows = []
    for r in rs:
        row = [f"{r['psi_deg']:g}"]
        for n in _names():
            e = r["models"][n]
            row.append("-" if e["threshold_deg"] is None else f"{e['threshold_deg']:.6f} / {e['closed_form_deg']:.6f}")
        rows.append(row)
    per_psi = markdown_table(headers, rows)
    data, rows2 = [], []
    for n in _names():
        es = [r["models"][n] for r in rs]
        k = None if n == "cone" else int(n[1:])
        d = {
            "model": n, "n": len(es), "found": sum(e["threshold_deg"] is not None for e in es),
            "min_threshold_deg": _finite(min, [e["threshold_deg"] for e in es]),
            "max_threshold_deg": _finite(max, [e["threshold_deg"] for e in es]),
            "max_possible_deg": math.degrees(math.atan(MU_SCENE / (math.cos(math.pi / k) if k else 1.0))),
            "max_error_deg": _finite(max, [e["error_deg"] for e in es]),
            "solves": int(sum(e["solves"] for e in es)),
        }
        data.append(d)
        rows2.append([_label(n), f"{d['found']}/{d['n']}", f"{d['min_threshold_deg']:.6f}",
                      f"{d['max_threshold_deg']:.6f}", f"{d['max_possible_deg']:.6f}", _fmt_e(d["max_error_deg"])])
    overall = markdown_table(
        ["model", "thresholds found", "min over psi (deg)", "max over psi (deg)",
         "atan(mu / cos(pi/k)) (deg)", "max abs(found - closed form) (deg)"], rows2)
    return overall, per_psi, data


def _incline_grid(records: list[dict[str, Any]], psi_deg: float) -> str:
    r = next((r for r in records if r["psi_deg"] == psi_deg), None)
    if r is None:
        return ""
    headers = ["slope (deg)"] + [_label(n) for n in _names()]
    rows = [[f"{a:g}"] + [{"S": "stick", "L": "slide", "?": "?"}[r["models"][n]["grid_modes"][i]] for n in _names()]
            for i, a in enumerate(r["grid_deg"])]
    return markdown_table(headers, rows)


def _share(es: list[dict[str, Any]], key: str = "is_cone_solution") -> float | None:
    return (sum(bool(e[key]) for e in es) / len(es)) if es else None


def _random_summary(records: list[dict[str, Any]]) -> tuple[str, str, list[dict[str, Any]], dict[str, Any]]:
    rows1, rows2, data = [], [], []
    for k in FACETS:
        name = f"k{k}"
        es = [r["pyramid"][name] for r in records]
        ok = [e for e in es if e["solved"]]
        okR = [r["pyramid"][name] for r in records if r["n_R"] > 0 and r["pyramid"][name]["solved"]]
        slide = [e for e in okR if e["starts_to_slide"] > 0]
        still = [e for e in okR if e["starts_to_slide"] == 0]
        both = [r for r in records if r["pyramid"][name]["solved"] and r["cone"]["solved"]]
        iso_r = [r for r in both if r["pyramid"][name]["isolated"] and r["cone"]["isolated"]]
        iso = [r["pyramid"][name] for r in iso_r]
        isoR = [r["pyramid"][name] for r in iso_r if r["n_R"] > 0]
        viol = [e["cone_violation_rel"] for e in okR]
        d = {
            "k": k, "n": len(es), "solved": len(ok),
            "is_cone_solution": sum(e["is_cone_solution"] for e in ok),
            "share_cone": _share(ok),
            "solved_with_rolling": len(okR),
            "share_cone_with_rolling": _share(okR),
            "no_slide_start": len(still),
            "share_cone_no_slide_start": _share(still),
            "slide_start": len(slide),
            "share_cone_slide_start": _share(slide),
            "in_cones": sum(e["in_cones"] for e in ok),
            "prop1_violations": sum(e["in_cones"] and not e["is_cone_solution"] for e in ok),
            "median_rel_violation": float(np.median(viol)) if viol else None,
            "max_rel_violation": float(np.max(viol)) if viol else None,
            "violation_bound": 1.0 / math.cos(math.pi / k) - 1.0,
            "isolated_pairs": len(iso),
            "isolated_pairs_with_rolling": len(isoR),
            "median_force_diff_rel": float(np.median([p["force_diff_rel"] for p in iso])) if iso else None,
            "max_force_diff_rel": float(np.max([p["force_diff_rel"] for p in iso])) if iso else None,
            "median_force_diff_rel_with_rolling": float(np.median([p["force_diff_rel"] for p in isoR])) if isoR else None,
            "max_force_diff_rel_with_rolling": float(np.max([p["force_diff_rel"] for p in isoR])) if isoR else None,
            "median_qddot_diff_rel": (float(np.median([r["pyramid"][name]["qddot_diff_rel"] for r in both]))
                                      if both else None),
            "median_time_ms": 1e3 * float(np.median([e["time_s"] for e in es])),
            "mean_time_ms": 1e3 * float(np.mean([e["time_s"] for e in es])),
            "max_time_ms": 1e3 * float(np.max([e["time_s"] for e in es])),
            "mean_size": float(np.mean([e["size"] for e in es])),
        }
        data.append(d)
        rows1.append([
            k, f"{d['solved']}/{d['n']}", d["share_cone"], d["share_cone_with_rolling"],
            f"{_f2(d['share_cone_no_slide_start'])} ({d['no_slide_start']})",
            f"{_f2(d['share_cone_slide_start'])} ({d['slide_start']})",
            d["in_cones"], d["prop1_violations"], _fmt_e(d["median_rel_violation"]), _fmt_e(d["max_rel_violation"]),
            _fmt_e(d["violation_bound"]),
        ])
        rows2.append([
            f"pyramid k = {k}", f"{d['isolated_pairs']} ({d['isolated_pairs_with_rolling']})",
            _fmt_e(d["median_force_diff_rel"]), _fmt_e(d["max_force_diff_rel"]),
            _fmt_e(d["median_force_diff_rel_with_rolling"]), _fmt_e(d["max_force_diff_rel_with_rolling"]),
            _fmt_e(d["median_qddot_diff_rel"]), d["mean_size"], d["median_time_ms"], d["mean_time_ms"], d["max_time_ms"],
        ])
    cs = [r["cone"] for r in records]
    routes: dict[str, int] = {}
    for c in cs:
        routes[c["route"]] = routes.get(c["route"], 0) + 1
    cone = {
        "n": len(cs), "solved": sum(c["solved"] for c in cs), "isolated": sum(c["isolated"] for c in cs),
        "routes": routes,
        "median_time_ms": 1e3 * float(np.median([c["time_s"] for c in cs])),
        "mean_time_ms": 1e3 * float(np.mean([c["time_s"] for c in cs])),
        "max_time_ms": 1e3 * float(np.max([c["time_s"] for c in cs])),
        "median_time_fc3d_ms": _median_ms([c["time_s"] for c in cs if str(c["route"]).startswith("fc3d/")]),
        "median_time_program_ms": _median_ms([c["time_s"] for c in cs if "program" in str(c["route"])]),
    }
    rows2.append([
        f"cone (solved {cone['solved']}/{cone['n']}; " + ", ".join(f"{k}: {v}" for k, v in sorted(routes.items())) + ")",
        cone["isolated"], None, None, None, None, None, None, cone["median_time_ms"], cone["mean_time_ms"],
        cone["max_time_ms"],
    ])
    t1 = markdown_table(
        ["k", "pyramid solved", "share cone solutions", "same, n_R > 0",
         "same, no rolling contact starts to slide (#)", "same, a rolling contact starts to slide (#)",
         "forces in cones (10)", "in cones, not cone sol. (Prop. 1)", "median of max_j norm(c_jT)/(mu c_jn) - 1, n_R > 0",
         "max", "bound 1/cos(pi/k) - 1"], rows1)
    t2 = markdown_table(
        ["model", "isolated pairs (n_R > 0)", "median force diff", "max force diff", "median, n_R > 0",
         "max, n_R > 0", "median qddot diff", "mean LCP size", "median time (ms)", "mean time (ms)",
         "max time (ms)"], rows2)
    return t1, t2, data, cone


def _f2(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _median_ms(v: list[float]) -> float | None:
    return 1e3 * float(np.median(v)) if v else None


def _finish(ax: Any, xlabel: str, ylabel: str, title: str, ks: list[int] | None = None, which: str = "major") -> None:
    """Labels, title, grid and legend of one axes (``ks``: a log2 axis of facet counts)."""
    if ks is not None:
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3, which=which)
    ax.legend(fontsize=8)


def _figures(push: list[dict[str, Any]], ratio: float, incline: list[dict[str, Any]],
             random_data: list[dict[str, Any]], out: Path) -> list[str]:
    plt = pyplot()
    written = []
    rs = sorted([r for r in push if r["ratio"] == ratio], key=lambda r: r["theta_deg"])
    fig, ax = plt.subplots(figsize=(8, 4.2))
    th = [r["theta_deg"] for r in rs]
    fine = np.linspace(0.0, 90.0, 721)
    for i, name in enumerate(_names()):
        color = f"C{i}"
        ax.plot(th, [r["models"][name]["angle_deg"] for r in rs], "o", ms=4, color=color, label=_label(name))
        k = None if name == "cone" else int(name[1:])
        ax.plot(fine, [predicted_push_angle(math.radians(t), ratio, k) for t in fine], "-", lw=0.8, color=color, alpha=0.6)
        if k:
            ax.axhline(180.0 / k, ls=":", lw=0.8, color=color)
    _finish(ax, "pushing direction theta from the pyramid's t axis (deg)", "angle(friction, -a_T) (deg)",
            f"Box at rest pushed with {ratio:g} mu m g: friction vs sliding direction\n"
            "(markers: LCP / fc3d answers; lines: closed form; dotted: pi/k)")
    written.append(save(fig, out / "friction_angle_vs_direction.png"))

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ks = [d["k"] for d in random_data]

    def nan(v: float | None) -> float:
        return float("nan") if v is None else v

    ax.plot(ks, [nan(d["share_cone"]) for d in random_data], "o-", label="all solved data sets")
    ax.plot(ks, [nan(d["share_cone_with_rolling"]) for d in random_data], "s-", label="with rolling contacts")
    ax.plot(ks, [nan(d["share_cone_no_slide_start"]) for d in random_data], "v-",
            label="no rolling contact starts to slide")
    ax.plot(ks, [nan(d["share_cone_slide_start"]) for d in random_data], "^-", label="a rolling contact starts to slide")
    ax.set_ylim(-0.05, 1.05)
    _finish(ax, "facets k of the friction pyramid", "share of pyramid solutions that solve the cone model",
            "Proposition 1 on the random problems", ks)
    ax2.plot(ks, [nan(d["median_rel_violation"]) for d in random_data], "o-", label="median over data sets")
    ax2.plot(ks, [nan(d["max_rel_violation"]) for d in random_data], "s-", label="max over data sets")
    ax2.plot(ks, [d["violation_bound"] for d in random_data], "k--", label="1/cos(pi/k) - 1")
    ax2.set_yscale("log")
    _finish(ax2, "facets k of the friction pyramid", "max over rolling contacts of |c_T| / (mu c_n) - 1",
            "How far pyramid friction sticks out of the cone (data sets with n_R > 0)", ks, which="both")
    written.append(save(fig, out / "cone_share_vs_k.png"))

    rs = sorted(incline, key=lambda r: r["psi_deg"])
    fig, ax = plt.subplots(figsize=(7, 4))
    psi = [r["psi_deg"] for r in rs]
    for i, name in enumerate(_names()):
        k = None if name == "cone" else int(name[1:])
        ax.plot(psi, [r["models"][name]["threshold_deg"] for r in rs], "o", ms=4, color=f"C{i}", label=_label(name))
        fine = np.linspace(min(psi), max(psi), 400)
        ax.plot(fine, [math.degrees(threshold_closed_form(MU_SCENE, math.radians(t), k)) for t in fine], "-",
                lw=0.8, color=f"C{i}", alpha=0.6)
    _finish(ax, "downhill direction psi from the pyramid's t axis (deg)", "stick-slip slope (deg)",
            f"Stick-slip threshold on an incline, mu = {MU_SCENE:g} (lines: closed form)")
    written.append(save(fig, out / "threshold_vs_direction.png"))
    return written


# ---------------------------------------------------------------------------------------------
# the study
# ---------------------------------------------------------------------------------------------
def _warm_up() -> None:
    """Solve one push scene with every model once, so that the first recorded times do not include
    just-in-time compilation and imports."""
    model = pushed_box(0.3, 2.0)
    for k in FACETS:
        solve_pyramid(model, k)
    solve_cone(model, fc3d_tol=SCENE_FC3D_TOL)


def _plan(quick: bool) -> dict[str, Any]:
    if quick:
        plan = {"ratios": PUSH_RATIOS_QUICK, "thetas": [5.0 * i for i in range(19)],
                "psis": [0.0, 11.25, 22.5, 30.0, 45.0]}
    else:
        plan = {"ratios": PUSH_RATIOS_FULL, "thetas": [2.5 * i for i in range(37)], "psis": [2.5 * i for i in range(19)]}
    return {**plan, "grid": [float(a) for a in range(24, 38)]}


def _random_selection(datasets: list[Any], quick: bool) -> list[Any]:
    if not quick:
        return datasets
    # one friction value per problem (mu = 0.5, the scenes' value) for problems of size <= 60,
    # plus mu = 0.2 and 0.9 for every fifth problem
    return [ds for ds in datasets if ds.size <= 60 and (ds.mu == 0.5 or (ds.problem_id % 5 == 0 and ds.mu in (0.2, 0.9)))]


def run(out: Path, quick: bool = False, seed: int = 0) -> dict[str, Any]:
    """Run the study into ``out``; resumes from ``out/records.jsonl`` when it exists."""
    from contactmp.models.random_problems import trinkle_dataset

    study = StudyRun("cone-vs-pyramid", Path(out), quick, seed)
    plan = _plan(quick)
    _warm_up()

    todo: list[Callable[[], dict[str, Any]]] = []

    def keys(jobs: list[tuple[str, Callable[[], dict[str, Any]]]]) -> list[str]:
        """The record keys of ``(key, job)`` pairs; the jobs whose record is not stored yet go to ``todo``."""
        todo.extend(job for key, job in jobs if key not in study.store)
        return [key for key, _ in jobs]

    push_keys = keys([(_push_key(seed, ratio, th), lambda th=th, ratio=ratio: _push_record(th, ratio, seed))
                      for ratio in plan["ratios"] for th in plan["thetas"]])
    incline_keys = keys([(_incline_key(seed, psi), lambda psi=psi: _incline_record(psi, plan["grid"], seed))
                         for psi in plan["psis"]])
    random_keys = keys([(_random_key(ds, seed), lambda ds=ds: _random_record(ds, seed))
                        for ds in _random_selection(trinkle_dataset(seed=seed), quick)])
    for job in study.progress(todo, len(todo), "cone-vs-pyramid"):
        study.store.append(job())

    push = [study.store[k] for k in push_keys]
    incline = [study.store[k] for k in incline_keys]
    rand = [study.store[k] for k in random_keys]
    push_table, push_data = _push_summary(push, plan["ratios"])
    incline_overall, incline_per_psi, incline_data = _incline_summary(incline)
    random_table, random_table2, random_data, cone_data = _random_summary(rand)
    figures = _figures(push, 2.0, incline, random_data, study.out)

    lines = [
        "# Coulomb cone vs k-facet friction pyramid" + (" (quick)" if quick else ""),
        "",
        f"mu = {MU_SCENE:g} in the push and incline scenes (a 1 kg box, 1 x 1 x 0.2 m, on its 4 bottom corners). "
        "Pyramid: PyramidLCP(model, facets=k) + Lemke; cone: ConeNCP -> fc3d (every contact rolls) or its Program "
        f"(IPOPT, elastic-l1). An answer counts when its model's conditions hold to {PHYSICS_TOL:g} x max(1, |b|, |c|).",
        "",
        "## 1. Friction direction when a box at rest starts to slide (Figure 3)",
        "",
        "Angle between the resultant friction force and -a_T (a_T is the same at the 4 contacts: no yaw). "
        "Closed form: resultant = Proj_Q(-F), Q = mu m g x the k-gon, so the angle is at most pi/k; "
        "for k = 4 and a push of 2 mu m g it is exactly 45 deg at theta = 30 and 60 deg.",
        "",
        push_table,
        f"Angle (deg) per pushing direction (push = 2 mu m g):",
        "",
        _push_by_theta(push, 2.0),
        "## 2. Stick-slip threshold on an incline",
        "",
        "Bisection on each model's own answers (slides iff |a_T| > 0) to "
        f"{THRESHOLD_XTOL:g} rad; closed form tan(alpha*) = mu / cos(delta), delta = angle from the uphill "
        "direction to the nearest edge normal of the k-gon (cone: tan(alpha*) = mu, "
        f"alpha* = {math.degrees(math.atan(MU_SCENE)):.6f} deg).",
        "",
        incline_overall,
        "Per downhill direction psi (from the pyramid's t axis):",
        "",
        incline_per_psi,
        "Sticking or sliding on a grid of slopes, downhill at psi = 45 deg (between the 4-facet pyramid's axes):",
        "",
        _incline_grid(incline, 45.0),
        "## 3. Random problems (Trinkle et al. section 6)" + (" -- quick subset" if quick else ""),
        "",
        f"{len(rand)} data sets. Pyramid: Lemke (up to 3 restarts); cone: fc3d (auto order) when every contact "
        "rolls, else the ConeNCP Program with IPOPT (elastic-l1). 'Cone solution': ConeNCP.check passes on the "
        "pyramid answer's forces and accelerations. Proposition 1: forces in the cones => cone solution (the "
        "column 'in cones, not cone sol.' must be 0). A rolling contact that starts to slide under the pyramid "
        "has its friction at a polygon vertex, |c_T| = mu c_n / cos(pi/k), outside the cone for every k.",
        "",
        random_table,
        "Pyramid vs cone answers: force and body-acceleration differences (inf-norm, relative to the cone's, "
        "max(1, .)); forces only where both answers are isolated (no other solution with the same contact "
        "modes: not statically indeterminate, accelerations determined). Solve times per data set "
        "(pyramid: Lemke on the LCP; cone: all attempts).",
        "",
        random_table2,
    ]
    study.write_table("\n".join(lines))

    r2 = {d["model"]: d for d in push_data if d["ratio"] == 2.0}
    inc = {d["model"]: d for d in incline_data}
    rd = {d["k"]: d for d in random_data}
    headline = (
        "max friction-angle error (push 2 mu m g): "
        + ", ".join(f"k={k}: {r2[f'k{k}']['max_angle_deg']:.3f}" for k in FACETS)
        + f", cone: {r2['cone']['max_angle_deg']:.1e} deg; stick-slip slope max over psi: "
        + ", ".join(f"k={k}: {inc[f'k{k}']['max_threshold_deg']:.3f}" for k in FACETS)
        + f", cone: {inc['cone']['max_threshold_deg']:.6f} deg (atan mu = {math.degrees(math.atan(MU_SCENE)):.6f}); "
        + "share of pyramid solutions that solve the cone model: "
        + ", ".join(f"k={k}: {rd[k]['share_cone']:.2f}" for k in FACETS if rd[k]["share_cone"] is not None)
    )
    summary = {
        "headline": headline,
        "push": push_data,
        "incline": incline_data,
        "random": random_data,
        "cone_random": cone_data,
        "plan": plan,
        "figures": figures,
        "max_angle_deg": {d["model"]: d["max_angle_deg"] for d in push_data if d["ratio"] == 2.0},
        "threshold_max_deg": {d["model"]: d["max_threshold_deg"] for d in incline_data},
        "share_cone_solutions": {f"k{d['k']}": d["share_cone"] for d in random_data},
        "prop1_violations": {f"k{d['k']}": d["prop1_violations"] for d in random_data},
    }
    study.write_summary(summary)
    return summary
