"""Case study ``uniqueness-random``: how often is the solution of a random contact problem unique as
the friction coefficient grows, and how much of that does Proposition 3 guarantee?

Problems: the random multi-rigid-body problems of section 6 of Trinkle, Pang, Sudarsky and Lo
(1995) (:func:`contactmp.models.random_problems.random_problem`): the problems of their Table 1 set
(:data:`~contactmp.models.random_problems.TRINKLE_PROBLEMS`, built with the dataset seeds of
:func:`~contactmp.models.random_problems.trinkle_dataset`) whose pyramid LCP (37) has at most
:data:`ENUM_MAX_N` rows, plus further random problems drawn in the same styles with small LCPs;
in the full run also the Table 1 problems of sizes 21 to 30, decided by MILP.
Each problem is swept over one friction coefficient for all contacts, ``mu`` in :data:`MUS`.

Per (problem, mu):

* **Complete enumeration** (:func:`~contactmp.solvers.lcp.certificates.enumerate_lcp_solutions`) of the
  pyramid LCP, every solution mapped to the physical contact forces ``c = L z`` and to the body and
  joint accelerations (22)-(23) (:func:`physical_solutions`). Distinct LCP vectors ``z`` can be the
  same forces (the slack variables of a separating rolling contact are free), and distinct forces
  the same motion (redundant contacts, e.g. the four corners of a box flat on the ground, are
  statically indeterminate). Each is classified ``none`` / ``unique`` / ``several`` (finitely many)
  / ``continuum``.
* **MILP** (LCPs larger than :data:`ENUM_MAX_N`): the Pardalos-Rosen existence MILP and the
  second-solution MILP at ``delta`` from the first solution: ``none``, ``unique`` (unique up to
  ``delta``), ``two_or_more`` (a second solution with different forces; finitely many or a
  continuum is not decided) or ``undecided`` (the second ``z`` has the same forces, or HiGHS could
  not decide). The motion's class: unique with the impulses, else from the second-solution MILP
  separated by motion (``motion=``: accelerations ``delta`` apart), ``unique`` or ``two_or_more``.
* **Multistart** (:func:`~contactmp.solvers.multistart.multistart`, seeded, with the motion map
  :func:`lcp_motion_map`): the number of distinct physical forces it finds, which can never exceed
  the proven count, and the number of distinct motions (accelerations, the multistart's own
  ``tol_motion``), which can never exceed the proven number of motions.
* **Proposition 3** (:func:`~contactmp.formulations.pyramid_lcp.proposition3_mu_bound`): ``mu_bar``
  (``~A`` positive definite; with a full-rank system Jacobian a solution exists, Theorem 1(a)) and
  ``mu_bar_unique`` (the extension to every contact from the proof of Theorem 1(b): unique forces).
  Both depend on the problem only, not on ``mu``. Checked: ``mu < mu_bar_unique`` never comes with
  two force solutions, and ``mu < mu_bar`` with full rank never with none.

Outputs: ``records.jsonl`` (one record per (problem, mu), through
:func:`contactmp.parallel.run_tasks`, resumable, Dask), ``table.md``, ``uniqueness.png`` (fractions
against ``mu`` with the fraction guaranteed by the bound, and the distribution of the bounds),
``summary.json``.
"""
from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from contactmp.case_studies._figures import pyplot, save
from contactmp.case_studies._study import StudyRun, markdown_table

DESCRIPTION = "Uniqueness of random Trinkle problems against mu: enumeration/MILP vs the Proposition 3 bound"

#: friction coefficients of the sweep (full run; the quick run takes QUICK_MUS)
MUS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0)
QUICK_MUS: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0)
#: largest LCP enumerated (2^n complementary bases; n = 16 takes about 2 s)
ENUM_MAX_N = 16
#: the quick run enumerates only up to this size
QUICK_MAX_N = 12
#: extra random problems (full, quick), LCP size at most EXTRA_MAX_N
N_EXTRA, N_EXTRA_QUICK, EXTRA_MAX_N = 48, 4, 12
#: Table 1 problems decided by MILP in the full run: sizes up to this
MILP_MAX_N = 30
#: multistart per (problem, mu): starts, structured (mode-guessing) starts
STARTS, STRUCTURED = 16, 4
#: iterations of each multistart Newton run (a local method: a start that has not converged by then
#: is counted as unsolved)
MS_MAX_ITER = 50
#: relative tolerance for "the same forces / accelerations"
PHYS_RTOL = 1e-6
#: second-solution MILP separation, relative to max(1, ||z1||_inf)
MILP_DELTA = 1e-4
MILP_TIME_LIMIT = 30.0
STYLE_CYCLE = ("classic", "heavy", "workcell")


# ================================================================================================
# Physical solutions of a pyramid LCP (shared with the painleve-rod study)
# ================================================================================================
@dataclass
class PhysicalSolutions:
    """The solution set of a pyramid LCP seen through physics.

    ``forces`` (k x 3 n_c) are the distinct contact forces ``c = L z`` of the enumerated points
    (the isolated solutions and one point of every continuum piece), ``modes`` their contact modes;
    ``motions`` (m x (6 n_obj + n_l)) the distinct accelerations ``(qddot, lddot)``.
    ``force_continuum`` / ``motion_continuum``: some continuum piece of the LCP moves the forces /
    the accelerations (then the physical solution set is infinite). ``n_z`` counts the LCP points
    (``inf`` with an LCP continuum). ``force_pieces`` holds ``(L point, L directions)`` of each
    continuum piece that moves the forces (the forces of the piece lie in that affine set).
    """

    forces: np.ndarray
    modes: list[list[str]]
    motions: np.ndarray
    force_continuum: bool
    motion_continuum: bool
    n_z: float
    z_points: list[np.ndarray] = field(default_factory=list)
    force_pieces: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)

    @property
    def n_forces(self) -> float:
        """Number of distinct force solutions (``inf`` for a continuum)."""
        return math.inf if self.force_continuum else float(len(self.forces))

    @property
    def n_motions(self) -> float:
        """Number of distinct motions (``inf`` for a continuum)."""
        return math.inf if self.motion_continuum else float(len(self.motions))


def motion_map(form: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(G, g0)`` with ``(qddot, lddot) = G c + g0`` for the model of ``form`` ((22)-(23))."""
    m = form.model
    parts = [m.Minv_obj @ m.W]
    offs = [m.Minv_obj @ (m.g_obj + m.h_obj)]
    if m.n_l:
        parts.append(-m.Minv_man @ m.J.T)
        offs.append(m.Minv_man @ (m.tau - m.g_man - m.h_man))
    return np.vstack(parts), np.concatenate(offs)


def lcp_motion_map(form: Any) -> Any:
    """The motion of the pyramid LCP ``form`` as a :class:`~contactmp.reductions.MotionMap`: the
    accelerations ``(qddot, lddot) = G L z + g0`` ((22)-(23), :func:`motion_map`) of its ``z``."""
    from contactmp.reductions import MotionMap

    G, g0 = motion_map(form)
    return MotionMap(G @ form.L, g0, "accelerations (qddot, lddot)")


def _distinct(points: list[np.ndarray], rtol: float) -> list[int]:
    """Indices of the leaders of a leader clustering (``||x - y||_inf <= rtol max(1, ||y||_inf)``,
    :func:`~contactmp.solvers.multistart.cluster_points`)."""
    from contactmp.solvers.multistart import cluster_points

    labels = cluster_points(points, rtol)
    return [labels.index(k) for k in range(max(labels, default=-1) + 1)]


def physical_solutions(form: Any, enum: Any, rtol: float = PHYS_RTOL) -> PhysicalSolutions:
    """Distinct physical solutions (forces, motions) of the pyramid LCP ``form`` from its complete
    enumeration ``enum`` (:func:`~contactmp.solvers.lcp.certificates.enumerate_lcp_solutions`).

    Every LCP solution lies on a complementary basis: an isolated point or a continuum piece
    ``point + span(directions)`` (intersected with the feasible set, of positive size). A piece
    whose directions have ``L d = 0`` is one force; otherwise the forces form a continuum. The same
    test with ``G L d`` (``G`` of :func:`motion_map`) decides whether the motion moves.
    """
    from contactmp.solvers.lcp import Verdict

    if enum.verdict is Verdict.UNDECIDED:
        from contactmp.errors import InputError

        raise InputError("enum", f"was not enumerated ({enum.message})")
    L = form.L
    G, g0 = motion_map(form)
    z_pts = [np.asarray(z, dtype=float) for z in enum.solutions] + [np.asarray(p.point, dtype=float)
                                                                   for p in enum.continua]
    force_cont = motion_cont = False
    pieces: list[tuple[np.ndarray, np.ndarray]] = []
    l_scale = max(1.0, float(np.abs(L).max(initial=0.0)))
    g_scale = l_scale * max(1.0, float(np.abs(G).max(initial=0.0)))
    for piece in enum.continua:
        D = np.asarray(piece.directions, dtype=float)
        d_scale = max(1.0, float(np.abs(D).max(initial=0.0)))
        LD = L @ D
        if np.abs(LD).max(initial=0.0) > rtol * l_scale * d_scale:
            force_cont = True
            pieces.append((L @ np.asarray(piece.point, dtype=float), LD))
            if np.abs(G @ LD).max(initial=0.0) > rtol * g_scale * d_scale:
                motion_cont = True
    forces = [L @ z for z in z_pts]
    keep = _distinct(forces, rtol)
    f_arr = np.array([forces[i] for i in keep]).reshape(len(keep), L.shape[0])
    modes = [form.solution(z_pts[i]).modes for i in keep]
    motions = [G @ f + g0 for f in f_arr]
    keep_m = _distinct(motions, rtol)
    m_arr = np.array([motions[i] for i in keep_m]).reshape(len(keep_m), G.shape[0])
    n_z = math.inf if enum.continua else float(len(enum.solutions))
    return PhysicalSolutions(f_arr, modes, m_arr, force_cont, motion_cont, n_z, [z_pts[i] for i in keep], pieces)


def classify(n: float) -> str:
    """``"none"``, ``"unique"``, ``"several"`` (finite >= 2) or ``"continuum"`` for a count."""
    if math.isinf(n):
        return "continuum"
    return {0: "none", 1: "unique"}.get(int(n), "several")


def second_motion_milp(form: Any, z: np.ndarray, delta: float, time_limit: float) -> Any:
    """The second-solution MILP of the pyramid LCP ``form`` separated by motion
    (:func:`~contactmp.solvers.lcp.certificates.lcp_second_solution_milp` with ``motion=``
    :func:`lcp_motion_map`): a solution whose accelerations differ from those of ``z`` by at least
    ``delta max(1, ||a(z)||_inf)``, or a proof that none does."""
    from contactmp.solvers.lcp import lcp_second_solution_milp

    mm = lcp_motion_map(form)
    return lcp_second_solution_milp(form.M, form.q, z, delta * max(1.0, float(np.abs(mm(z)).max())),
                                    time_limit=time_limit, motion=mm)


def multistart_forces(form: Any, ms: Any, rtol: float = PHYS_RTOL) -> np.ndarray:
    """The distinct contact forces ``L z`` of the verified clusters of a multistart result."""
    forces = [form.L @ np.asarray(c.x, dtype=float) for c in ms.clusters if c.verified]
    keep = _distinct(forces, rtol)
    return np.array([forces[i] for i in keep]).reshape(len(keep), form.L.shape[0])


def unmatched(found: np.ndarray, proven: np.ndarray,
              pieces: list[tuple[np.ndarray, np.ndarray]] | None = None, rtol: float = PHYS_RTOL) -> int:
    """How many rows ``f`` of ``found`` are neither within ``10 rtol max(1, |f|)`` (inf-norm) of a row
    of ``proven`` nor on the affine hull ``{c0 + C t}`` of one of the continuum ``pieces``."""
    bad = 0
    for f in found:
        tol = 10 * rtol * max(1.0, float(np.abs(f).max()))
        if any(np.abs(f - p).max() <= tol for p in proven):
            continue
        on_piece = False
        for c0, C in pieces or []:
            t = np.linalg.lstsq(C, f - c0, rcond=None)[0]
            if np.abs(c0 + C @ t - f).max() <= tol:
                on_piece = True
                break
        bad += not on_piece
    return bad


# ================================================================================================
# The problems
# ================================================================================================
@dataclass(frozen=True)
class ProblemSpec:
    """A random problem: ``random_problem(seed, n_bodies, n_S, n_R, style=style)``; ``size`` is
    ``n_S + 5 n_R``; ``method`` is ``"enumeration"`` or ``"milp"``."""

    label: str
    seed: int
    n_bodies: int
    n_S: int
    n_R: int
    style: str
    method: str = "enumeration"

    @property
    def size(self) -> int:
        return self.n_S + 5 * self.n_R


def problem_specs(seed: int, quick: bool) -> list[ProblemSpec]:
    """The problems of the study (see the module docstring)."""
    from contactmp.models.random_problems import TRINKLE_PROBLEMS, problem_seed

    max_n = QUICK_MAX_N if quick else ENUM_MAX_N
    out = []
    for pid, (nb, ns, nr, _, style) in enumerate(TRINKLE_PROBLEMS):
        size = ns + 5 * nr
        if size <= max_n or (not quick and size <= MILP_MAX_N):
            out.append(ProblemSpec(f"trinkle-{pid:02d}", problem_seed(seed, pid), nb, ns, nr, style,
                                   "enumeration" if size <= max_n else "milp"))
    rng = np.random.default_rng([int(seed), 5])
    for k in range(N_EXTRA_QUICK if quick else N_EXTRA):
        nb = int(rng.integers(1, 3))
        n_R = int(rng.integers(0, 3))
        lo = max(0, nb - n_R, 1 - n_R)
        n_S = int(rng.integers(lo, EXTRA_MAX_N - 5 * n_R + 1))
        out.append(ProblemSpec(f"extra-{k:02d}", int(rng.integers(2 ** 31)), nb, n_S, n_R,
                               STYLE_CYCLE[k % len(STYLE_CYCLE)]))
    return out


@functools.lru_cache(maxsize=8)
def _base_model(spec: ProblemSpec) -> Any:
    from contactmp.models.random_problems import random_problem

    return random_problem(spec.seed, spec.n_bodies, spec.n_S, spec.n_R, mu=0.5, style=spec.style)


def _key(spec: ProblemSpec, mu: float, seed: int) -> str:
    """The record key: the problem, mu and every setting the record depends on."""
    return (f"s{seed}/{spec.label}/seed{spec.seed}/{spec.n_bodies}-{spec.n_S}-{spec.n_R}-{spec.style}/"
            f"{spec.method}/mu{mu:.4f}/ms{STARTS}-{STRUCTURED}-{MS_MAX_ITER}-motion")


def _count_json(n: float) -> Any:
    return "inf" if math.isinf(n) else int(n)


def solve_point(item: tuple[ProblemSpec, float, int]) -> dict[str, Any]:
    """The record of one (problem, mu) (module-level: runs on Dask workers)."""
    import time

    from contactmp.formulations.pyramid_lcp import PyramidLCP, proposition3_mu_bound
    from contactmp.solvers.lcp import Verdict, enumerate_lcp_solutions, lcp_existence_milp, lcp_second_solution_milp
    from contactmp.solvers.multistart import multistart

    spec, mu, seed = item
    model = _base_model(spec).with_mu(mu)
    form = PyramidLCP(model)
    fb = proposition3_mu_bound(form)
    rec: dict[str, Any] = {
        "problem": spec.label, "problem_seed": spec.seed, "n_bodies": spec.n_bodies, "n_S": spec.n_S,
        "n_R": spec.n_R, "style": spec.style, "size": form.size, "mu": mu, "method": spec.method,
        "prop3": {"mu_bar": fb.mu_bar, "mu_bar_unique": fb.mu_bar_unique, "mu_pd_exact": fb.mu_pd_exact,
                  "sigma_min": fb.sigma_min, "full_rank": fb.full_rank, "verdict": fb.verdict,
                  "margin": fb.margin},
    }
    rec["guaranteed_unique"] = bool(fb.sigma_min > 0 and fb.margin > 0)
    rec["guaranteed_exists"] = bool(fb.full_rank and fb.sigma_min > 0 and mu < fb.mu_bar)
    t0 = time.perf_counter()
    proven = np.zeros((0, 3 * model.n_c))
    pieces: list[tuple[np.ndarray, np.ndarray]] = []
    if spec.method == "enumeration":
        enum = enumerate_lcp_solutions(form.M, form.q, max_n=ENUM_MAX_N)
        phys = physical_solutions(form, enum)
        proven, pieces = phys.forces, phys.force_pieces
        rec.update(
            z_verdict=enum.verdict, n_z=_count_json(phys.n_z), n_forces=_count_json(phys.n_forces),
            n_motions=_count_json(phys.n_motions), forces_class=classify(phys.n_forces),
            motion_class=classify(phys.n_motions), modes=phys.modes, flags=enum.flags,
            n_rejected=enum.n_rejected,
        )
    else:
        ex = lcp_existence_milp(form.M, form.q, time_limit=MILP_TIME_LIMIT)
        rec["milp_existence"] = ex.verdict
        cls = {Verdict.NO_SOLUTION: "none", Verdict.UNDECIDED: "undecided"}.get(ex.verdict)
        mcls = cls
        if ex.verdict is Verdict.SOLUTION:
            z1 = ex.z
            delta = MILP_DELTA * max(1.0, float(np.abs(z1).max()))
            sec = lcp_second_solution_milp(form.M, form.q, z1, delta, time_limit=MILP_TIME_LIMIT)
            rec["milp_second"] = sec.verdict
            proven = (form.L @ z1)[None, :]
            if sec.verdict is Verdict.UNIQUE_UP_TO_DELTA:
                cls = mcls = "unique"
            elif sec.verdict is Verdict.SECOND_SOLUTION:
                c1, c2 = form.L @ z1, form.L @ sec.z
                same_c = np.abs(c2 - c1).max() <= PHYS_RTOL * max(1.0, float(np.abs(c1).max()))
                cls = "undecided" if same_c else "two_or_more"
                if not same_c:
                    proven = np.vstack([proven, c2[None, :]])
                # the motion asked directly: a second solution whose accelerations differ, or a proof
                # that none does (the impulses are then not unique but the motion is)
                secm = second_motion_milp(form, z1, MILP_DELTA, MILP_TIME_LIMIT)
                rec["milp_second_motion"] = secm.verdict
                mcls = {Verdict.UNIQUE_UP_TO_DELTA: "unique", Verdict.SECOND_SOLUTION: "two_or_more"}.get(
                    secm.verdict, "undecided")
            else:
                cls = mcls = "undecided"
        rec.update(z_verdict=None, n_forces=None, n_motions=None, forces_class=cls, motion_class=mcls)
    rec["certificate_time_s"] = time.perf_counter() - t0
    ms = multistart((form.M, form.q), starts=STARTS, seed=seed, structured=STRUCTURED, batch_size=STARTS,
                    solver_options={"max_iter": MS_MAX_ITER}, motion=lcp_motion_map(form))
    found = multistart_forces(form, ms)
    rec["multistart"] = {
        "n_forces": int(len(found)), "n_z": int(ms.n_distinct), "n_solved": int(ms.n_solved),
        "n_motions": int(ms.n_distinct_motions or 0), "tol_motion": ms.tol_motion,
        "unmatched": unmatched(found, proven, pieces) if spec.method == "enumeration" else None,
        "time_per_start_s": ms.time_per_start_s,
        "solver_time_per_start_s": ms.extras["solver_time_s"] / max(1, ms.n_run),
    }
    return rec


# ================================================================================================
# Summary, table, figure
# ================================================================================================
#: classes of a (problem, mu): enumeration gives unique / several (finitely many >= 2) / continuum /
#: none; the MILP gives unique / two_or_more / none / undecided
CLASSES = ("unique", "several", "continuum", "two_or_more", "none", "undecided")


def _fractions(records: list[dict[str, Any]], mus: tuple[float, ...]) -> list[dict[str, Any]]:
    rows = []
    for mu in mus:
        rs = [r for r in records if abs(r["mu"] - mu) < 1e-12]
        n = len(rs)
        if not n:
            continue
        fc = Counter(r["forces_class"] for r in rs)
        mc = Counter(r["motion_class"] for r in rs)
        row = {"mu": mu, "n": n}
        for c in CLASSES:
            row[f"forces_{c}"] = fc.get(c, 0) / n
            row[f"motion_{c}"] = mc.get(c, 0) / n
        row["ms_impulse_sets"] = float(np.mean([r["multistart"]["n_z"] for r in rs]))
        row["ms_forces"] = float(np.mean([r["multistart"]["n_forces"] for r in rs]))
        row["ms_motions"] = float(np.mean([r["multistart"].get("n_motions", 0) for r in rs]))
        row["below_mu_bar_unique"] = sum(r["guaranteed_unique"] for r in rs) / n
        row["below_mu_bar_full_rank"] = sum(r["guaranteed_exists"] for r in rs) / n
        rows.append(row)
    return rows


def _checks(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Theorem checks and multistart agreement."""
    enum = [r for r in records if r["method"] == "enumeration"]
    uniq_viol = [r["key"] for r in records
                 if r["guaranteed_unique"] and r["forces_class"] in ("several", "continuum", "two_or_more")]
    exist_viol = [r["key"] for r in records if r["guaranteed_exists"] and r["forces_class"] == "none"]
    ms_exceeds = [r["key"] for r in enum if r["multistart"]["n_forces"] > record_number(r["n_forces"])]
    ms_exceeds += [r["key"] for r in records if r["method"] == "milp"
                   and r["multistart"]["n_forces"] > {"none": 0, "unique": 1}.get(r["forces_class"], math.inf)]
    # a multistart point off the enumerated set: a failure where that set is finite; on a continuum
    # the enumeration lists one point per piece and may skip pieces on a numerical edge (its flags)
    ms_unmatched = [r["key"] for r in enum if r["multistart"]["unmatched"] and r["n_forces"] != "inf"]
    ms_unmatched_cont = [r["key"] for r in enum if r["multistart"]["unmatched"] and r["n_forces"] == "inf"]
    ms_motion_exceeds = [r["key"] for r in enum if r["multistart"]["n_motions"] > record_number(r["n_motions"])]
    finite = [r for r in enum if r["n_forces"] != "inf"]
    ms_equal = sum(r["multistart"]["n_forces"] == r["n_forces"] for r in finite)
    finite_m = [r for r in enum if r["n_motions"] != "inf"]
    ms_equal_m = sum(r["multistart"]["n_motions"] == r["n_motions"] for r in finite_m)
    return {
        "bound_uniqueness_violations": uniq_viol,
        "bound_existence_violations": exist_viol,
        "multistart_exceeds_proven": ms_exceeds,
        "multistart_unmatched": ms_unmatched,
        "multistart_unmatched_on_continuum": ms_unmatched_cont,
        "enumeration_numerical_edge": [r["key"] for r in enum if r.get("n_rejected")],
        "multistart_equal_proven": ms_equal,
        "multistart_compared": len(finite),
        "multistart_motions_exceed_proven": ms_motion_exceeds,
        "multistart_equal_proven_motions": ms_equal_m,
        "multistart_compared_motions": len(finite_m),
        "multistart_never_exceeds_proven": not ms_exceeds and not ms_unmatched and not ms_motion_exceeds,
    }


def _figure(rows: list[dict[str, Any]], bounds: list[tuple[float, float, bool]], path: Path) -> None:
    plt = pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.6))
    mus = [r["mu"] for r in rows]
    styles = {"unique": ("tab:green", "o"), "several": ("tab:orange", "s"), "continuum": ("tab:purple", "D"),
              "two_or_more": ("tab:brown", "^"), "none": ("tab:red", "v"), "undecided": ("tab:gray", "x")}
    for c, (col, mk) in styles.items():
        ys = [r[f"forces_{c}"] for r in rows]
        if any(ys):
            ax.plot(mus, ys, color=col, marker=mk, label=f"forces: {c}")
        ym = [r[f"motion_{c}"] for r in rows]
        if c in ("unique", "continuum") and any(ym):
            ax.plot(mus, ym, color=col, marker=mk, ls=":", mfc="none", label=f"accelerations: {c}")
    ax.plot(mus, [r["below_mu_bar_unique"] for r in rows], color="k", lw=2, ls="--",
            label="mu < mu_bar_unique (Prop. 3 ext.: unique)")
    ax.plot(mus, [r["below_mu_bar_full_rank"] for r in rows], color="k", lw=1, ls="-.",
            label="mu < mu_bar, full rank (Thm 1a: exists)")
    ax.set_xlabel("friction coefficient mu")
    ax.set_ylabel("fraction of problems")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"{rows[0]['n'] if rows else 0} random problems per mu")
    ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    vals = np.array([b[1] for b in bounds], dtype=float)
    n = len(vals)
    x_lo, x_hi = 1e-4, 10.0

    def survival(v: np.ndarray, color: str, label: str) -> None:
        """The fraction of all ``n`` problems whose bound exceeds mu (a step function)."""
        p = np.sort(v[v > 0])
        inside = p[p < x_hi]
        ys = np.concatenate([[p.size / n], (p.size - np.arange(1, inside.size + 1)) / n])
        xs = np.concatenate([[x_lo], np.maximum(inside, x_lo)])
        xs, ys = np.append(xs, x_hi), np.append(ys, ys[-1])
        bx.step(xs, ys, where="post", color=color, label=label)

    survival(vals, "k", "fraction with mu_bar_unique > mu")
    survival(np.array([b[0] if b[2] else 0.0 for b in bounds], dtype=float), "tab:blue",
             "fraction with mu_bar > mu and full rank")
    bx.set_xscale("log")
    bx.set_xlim(x_lo, x_hi)
    bx.set_ylim(-0.02, 1.02)
    bx.set_xlabel("mu")
    bx.set_ylabel("fraction of problems")
    bx.set_title(f"Proposition 3 bounds: {int((vals <= 0).sum())} of {n} problems have bound 0 (~B singular)")
    bx.legend(fontsize=8)
    bx.grid(alpha=0.3, which="both")
    save(fig, path)


def run(out: Path, quick: bool = False, seed: int = 0, workers: int | None = None,
        scheduler: str | None = None) -> dict[str, Any]:
    """Run the study into ``out`` (resumes from ``out/records.jsonl``); ``workers``/``scheduler`` as
    in :func:`contactmp.parallel.run_tasks` (default: a local Dask cluster of 2 workers)."""
    from contactmp import parallel

    study = StudyRun("uniqueness-random", Path(out), quick, seed)
    specs = problem_specs(seed, quick)
    mus = QUICK_MUS if quick else MUS
    items = [(spec, mu, seed) for spec in specs for mu in mus]
    keys = [_key(spec, mu, seed) for spec, mu, _ in items]
    n_w = 0 if (workers == 0 and scheduler is None) else (workers or parallel.DEFAULT_WORKERS)
    report = parallel.run_tasks(
        solve_point, items, keys=keys, store_path=study.store, workers=workers, scheduler=scheduler,
        batch_size=parallel.default_batch_size(len(items), max(1, n_w), 0.1), description="uniqueness-random",
    )
    records = [study.store[k] for k in keys]
    rows = _fractions(records, mus)
    checks = _checks(records)
    per_problem: dict[str, dict[str, Any]] = {}
    for r in records:
        per_problem.setdefault(r["problem"], r)
    bounds = [(record_number(r["prop3"]["mu_bar"]), record_number(r["prop3"]["mu_bar_unique"]), bool(r["prop3"]["full_rank"]))
              for r in per_problem.values()]
    ub = np.array([b[1] for b in bounds])
    _figure(rows, bounds, study.out / "uniqueness.png")
    t_start = [r["multistart"]["time_per_start_s"] for r in records]
    t_solver = [r["multistart"]["solver_time_per_start_s"] for r in records]
    sizes = Counter(r["size"] for r in per_problem.values())
    methods = Counter(r["method"] for r in per_problem.values())
    headers = ["mu", "problems", "forces: unique", "several", "continuum", "2+ (MILP)", "none", "undecided",
               "motion: unique", "several", "continuum", "2+ (MILP)", "undecided",
               "multistart mean: impulse sets", "forces", "motions",
               "mu < mu_bar_unique", "mu < mu_bar & full rank"]
    table_rows = [[r["mu"], r["n"], r["forces_unique"], r["forces_several"], r["forces_continuum"],
                   r["forces_two_or_more"], r["forces_none"], r["forces_undecided"],
                   r["motion_unique"], r["motion_several"], r["motion_continuum"], r["motion_two_or_more"],
                   r["motion_undecided"], r["ms_impulse_sets"], r["ms_forces"], r["ms_motions"],
                   r["below_mu_bar_unique"], r["below_mu_bar_full_rank"]] for r in rows]
    lines = [
        "# Uniqueness of random contact problems against mu" + (" (quick)" if quick else ""),
        "",
        f"{len(per_problem)} problems ({dict(methods)}; LCP sizes {dict(sorted(sizes.items()))}), "
        f"{len(mus)} friction values; fractions of problems. Forces: distinct contact forces c = L z "
        "(several = finitely many >= 2, continuum = infinitely many, 2+ = the MILP found a second one); "
        "motion: distinct accelerations (qddot, lddot) = G L z + g0 of the same solutions (none: as for "
        "the forces). Multistart means per problem: distinct LCP vectors z (impulse sets, relative "
        "tolerance 1e-6), distinct forces L z and distinct motions (absolute tolerance tol_motion = "
        "10 ||G L||_inf tol + 64 eps V, tol = 1e-8 the Newton residual; contactmp.reductions.MotionMap).",
        "",
        markdown_table(headers, table_rows),
        "## Checks",
        "",
        markdown_table(["check", "value"], [
            ["mu < mu_bar_unique but two or more force solutions", len(checks["bound_uniqueness_violations"])],
            ["mu < mu_bar with full rank but no solution", len(checks["bound_existence_violations"])],
            ["multistart found more forces than proven", len(checks["multistart_exceeds_proven"])],
            ["multistart forces not among the proven ones (finite sets)", len(checks["multistart_unmatched"])],
            ["multistart forces off the enumerated pieces (continua; not a failure)",
             len(checks["multistart_unmatched_on_continuum"])],
            ["enumerations flagged on a numerical edge (a basis point failed its residual check)",
             len(checks["enumeration_numerical_edge"])],
            ["multistart found all proven forces (finite cases)",
             f"{checks['multistart_equal_proven']}/{checks['multistart_compared']}"],
            ["multistart found more motions than proven", len(checks["multistart_motions_exceed_proven"])],
            ["multistart found all proven motions (finite cases)",
             f"{checks['multistart_equal_proven_motions']}/{checks['multistart_compared_motions']}"],
            ["problems with mu_bar_unique = 0", int((ub <= 0).sum())],
            ["median mu_bar_unique of the others", float(np.median(ub[ub > 0])) if (ub > 0).any() else None],
            ["multistart time per start [ms]", 1e3 * float(np.mean(t_start))],
            ["multistart solver time per start [ms]", 1e3 * float(np.mean(t_solver))],
        ]),
    ]
    study.write_table("\n".join(lines))
    lo, hi = rows[0], rows[-1]
    headline = (
        f"{len(per_problem)} problems: unique forces {lo['forces_unique']:.0%} at mu={lo['mu']:g} -> "
        f"{hi['forces_unique']:.0%} at mu={hi['mu']:g}, unique motion {lo['motion_unique']:.0%} -> "
        f"{hi['motion_unique']:.0%}, several/continuum {_multi(lo):.0%} -> {_multi(hi):.0%}, "
        f"no solution {lo['forces_none']:.0%} -> {hi['forces_none']:.0%}; Prop. 3 guarantees uniqueness for {lo['below_mu_bar_unique']:.0%} -> "
        f"{hi['below_mu_bar_unique']:.0%}; {int((ub <= 0).sum())}/{len(ub)} problems have bound 0; "
        f"multistart never exceeds the proven count: {checks['multistart_never_exceeds_proven']}"
    )
    summary = {
        "headline": headline, "mus": list(mus), "problems": len(per_problem), "records_run": len(records),
        "by_mu": rows, "checks": checks, "sizes": dict(sizes), "methods": dict(methods),
        "bounds": {"mu_bar_unique": [b[1] for b in bounds], "mu_bar": [b[0] for b in bounds],
                   "full_rank": [b[2] for b in bounds], "zero": int((ub <= 0).sum())},
        "time_per_start_s": float(np.mean(t_start)), "solver_time_per_start_s": float(np.mean(t_solver)),
        "dask": {"workers": report.workers, "computed": report.done, "resumed": report.skipped,
                 "time_s": report.time_s},
        "figures": ["uniqueness.png"],
    }
    study.write_summary(summary)
    if checks["bound_uniqueness_violations"] or checks["bound_existence_violations"] \
            or not checks["multistart_never_exceeds_proven"]:
        raise AssertionError(f"uniqueness-random: a check failed (see {study.out / 'summary.json'}): "
                             f"{ {k: v for k, v in checks.items() if isinstance(v, list) and v} }")
    return summary


def _multi(row: dict[str, Any]) -> float:
    """Fraction of problems with two or more force solutions (several, continuum or MILP 2+)."""
    return row["forces_several"] + row["forces_continuum"] + row["forces_two_or_more"]


def record_number(v: Any) -> float:
    """A number read back from a JSONL record (``"inf"`` was written for an unbounded one)."""
    return math.inf if v == "inf" else float(v)
