"""Multistart: distinct solutions found, clustered, verified and counted; on Dask too."""
from __future__ import annotations

import itertools
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.linalg

from contactmp.errors import InputError, OptionError
from contactmp.program import Program
from contactmp.solvers.lcp.problem import lcp_residual
from contactmp.result import Result, Status
from contactmp.solvers.multistart import (Cluster, MultistartResult, best_start, cluster_points, multistart,
                                          solve_from_guesses)

# M = [[1, 2], [2, 1]], q = (-1, -1): w = M z + q. The complementary solutions, basis by basis:
# {} -> z = 0, w = (-1, -1) < 0: no;  {1} -> z_1 = 1, w_2 = 2 - 1 = 1 >= 0: z = (1, 0);
# {2} -> z = (0, 1) likewise;  {1, 2} -> M z = 1 gives z = (1/3, 1/3) >= 0. Exactly three.
M3 = np.array([[1.0, 2.0], [2.0, 1.0]])
Q3 = np.array([-1.0, -1.0])
SOL3 = [np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([1.0, 1.0]) / 3.0]


def _match(clusters: list[Cluster], expected: list[np.ndarray], atol: float = 1e-9) -> None:
    """The clusters' representatives are exactly ``expected`` (in some order)."""
    assert len(clusters) == len(expected)
    left = [np.asarray(e) for e in expected]
    for c in clusters:
        hit = [k for k, e in enumerate(left) if np.max(np.abs(c.x - e)) <= atol]
        assert len(hit) == 1, f"cluster {c.x} matches {len(hit)} expected solutions"
        left.pop(hit[0])


def test_three_solution_lcp_gives_exactly_three_verified_clusters() -> None:
    for z in SOL3:  # the hand-computed solutions are solutions
        assert lcp_residual(M3, Q3, z) <= 1e-15
    r = multistart((M3, Q3), starts=200, seed=1)
    assert isinstance(r, MultistartResult) and r.kind == "lcp" and r.n_run == 200
    assert r.n_structured == 4  # all 2^2 index sets, then 196 random starts
    _match(r.clusters, SOL3)
    assert r.n_distinct == 3 and all(c.verified and c.residual <= 1e-12 for c in r.clusters)
    assert r.n_solved == 200 and sum(c.count for c in r.clusters) == 200
    assert sum(c.share for c in r.clusters) == pytest.approx(1.0)
    assert all(c.share > 0.05 for c in r.clusters)  # each basin is reached by random starts
    for c in r.clusters:  # every member of a cluster is within the stated tolerance of it
        for s in c.starts:
            x = np.asarray(r.starts[s]["x"])
            assert np.max(np.abs(x - c.x)) <= r.tol_cluster * max(1.0, np.max(np.abs(c.x)))
            assert r.starts[s]["cluster"] == c.index
    modes = sorted(c.mode for c in r.clusters)
    assert modes == ["01", "10", "11"]  # z_i > w_i on the basis of each solution
    json.dumps(r.to_dict(with_starts=True))  # JSON-able


def test_p_matrix_lcp_has_one_cluster() -> None:
    rng = np.random.default_rng(5)
    A = rng.standard_normal((6, 6))
    M = A @ A.T + 0.5 * np.eye(6) + 0.3 * (A - A.T)  # positive definite (not symmetric): a P-matrix
    q = rng.standard_normal(6)
    assert np.linalg.eigvalsh(0.5 * (M + M.T)).min() > 0
    r = multistart((M, q), starts=80, seed=0)
    assert len(r.clusters) == 1 and r.n_distinct == 1
    c = r.clusters[0]
    assert c.count == 80 and c.share == 1.0 and c.verified
    assert lcp_residual(M, q, c.x) <= 1e-10


def _all_complementary_solutions(M: np.ndarray, q: np.ndarray) -> list[np.ndarray]:
    """Brute force over the 2^n bases (nonsingular M_aa; for the test's block matrices)."""
    n = q.shape[0]
    sols = []
    for bits in itertools.product([False, True], repeat=n):
        a = np.array(bits)
        z = np.zeros(n)
        if a.any():
            z[a] = np.linalg.solve(M[np.ix_(a, a)], -q[a])
        if lcp_residual(M, q, z) <= 1e-12:
            sols.append(z)
    return sols


def test_structured_starts_alone_find_every_solution() -> None:
    # two uncoupled copies of the three-solution LCP: 3 x 3 = 9 solutions, all products of SOL3
    M = scipy.linalg.block_diag(M3, M3)
    q = np.concatenate([Q3, Q3])
    expected = [np.concatenate([a, b]) for a in SOL3 for b in SOL3]
    brute = _all_complementary_solutions(M, q)
    assert len(brute) == 9
    r = multistart((M, q), starts=16, seed=0, structured=True)
    assert r.n_structured == 16 and all(s["structured"] for s in r.starts)
    assert sorted(s["pattern"] for s in r.starts) == sorted("".join(p) for p in itertools.product("01", repeat=4))
    _match(r.clusters, expected)
    assert all(c.verified for c in r.clusters)
    # the guessed basis is the solution's own basis wherever that basis is feasible
    by_pattern = {s["pattern"]: s for s in r.starts}
    for z in expected:
        pat = "".join("1" if v > 0 else "0" for v in z)
        assert by_pattern[pat]["method"] == "basis"
        np.testing.assert_allclose(by_pattern[pat]["x"], z, atol=1e-14)
    # random starts only: the same nine, though not from every start
    rr = multistart((M, q), starts=300, seed=2, structured=False)
    assert rr.n_structured == 0
    _match(rr.clusters, expected)


def test_lcp_without_solution_gives_no_cluster() -> None:
    # w = -z - 1 < 0 for every z >= 0
    r = multistart((np.array([[-1.0]]), np.array([-1.0])), starts=10, seed=0)
    assert r.clusters == [] and r.n_solved == 0 and r.n_run == 10
    assert all(s["cluster"] == -1 for s in r.starts)


def test_fc3d_single_sticking_contact_is_unique() -> None:
    # W = I, q = (-1, 0.1, 0), mu = 0.3: r = (1, -0.1, 0) gives u = W r + q = 0 and lies inside
    # the cone (0.1 <= 0.3 * 1): sticking contact; for W = I the solution is unique.
    W, q, mu = np.eye(3), np.array([-1.0, 0.1, 0.0]), 0.3
    r = multistart((W, q, mu), starts=30, seed=0)
    assert r.kind == "fc3d" and r.n_structured == 3  # separated, sticking, sliding guesses
    assert len(r.clusters) == 1 and r.clusters[0].verified and r.clusters[0].mode == "1"
    np.testing.assert_allclose(r.clusters[0].x, [1.0, -0.1, 0.0], atol=1e-7)


def _tiny_mpcc(b: float = 1.0) -> Program:
    """min (x-1)^2 + (y-b)^2  s.t.  0 <= x _|_ y >= 0: local minimizers (1, 0), f = b^2, and (0, b), f = 1."""
    p = Program("tiny_mpcc")
    x = p.add_variables("x", 1)
    y = p.add_variables("y", 1)
    p.add_complementarity(x.sym, y.sym)
    p.add_cost((x.sym - 1) ** 2 + (y.sym - b) ** 2)
    return p


@pytest.mark.parametrize("strategy", ["direct", "scholtes"])
def test_program_multistart_finds_both_local_minimizers(strategy: str) -> None:
    prog = _tiny_mpcc()
    x0 = prog.x0.copy()
    r = multistart(prog, starts=12, seed=0, strategy=strategy)
    assert r.kind == "program" and r.n_structured == 2
    minimizers = [c for c in r.clusters if c.verified and abs(c.objective - 1.0) <= 1e-6]
    _match(minimizers, [np.array([1.0, 0.0]), np.array([0.0, 1.0])], atol=1e-6)
    assert sum(c.count for c in minimizers) == r.n_solved == 12
    np.testing.assert_array_equal(prog.x0, x0)  # the caller's initial guess is left as it was
    if strategy == "direct":
        # the structured guesses decide: pattern 0 sets a = x to 0 -> (0, 1); pattern 1 sets b = y to 0
        s0, s1 = r.starts[0], r.starts[1]
        assert (s0["pattern"], s1["pattern"]) == ("0", "1")
        np.testing.assert_allclose(s0["x"], [0.0, 1.0], atol=1e-6)
        np.testing.assert_allclose(s1["x"], [1.0, 0.0], atol=1e-6)


def _point_mass_to() -> Any:
    """A point mass pushed 0.3 m in 6 steps of 0.05 s, from rest to rest, least effort."""
    from contactmp.models.systems import point_mass_2d
    from contactmp.transcriptions.contact_implicit import ContactImplicitTO

    to = ContactImplicitTO(point_mass_2d(), 6, 0.05, formulation="pyramid", facets=4)
    to.set_initial_state([0.0, 0.0], [0.0, 0.0])
    to.set_final_state([0.3, 0.0], [0.0, 0.0])
    to.bound_inputs([-20.0, 0.0], [20.0, 0.0])
    to.minimize_effort(1.0)
    return to


def test_trajectory_multistart_clusters_the_transcription_optima() -> None:
    to = _point_mass_to()
    r = multistart(to, starts=3, seed=3, structured=1)
    assert r.kind == "trajectory" and r.n_run == 3 and r.n_solved >= 2
    assert all(c.verified for c in r.clusters)
    best = min(r.clusters, key=lambda c: c.objective)
    # the clustered optimum is a trajectory of the transcription: boundary states hold
    q0 = to.program.value(to.q[0], best.x)
    qN = to.program.value(to.q[-1], best.x)
    np.testing.assert_allclose(q0, [0.0, 0.0], atol=1e-8)
    np.testing.assert_allclose(qN, [0.3, 0.0], atol=1e-6)
    res = to.program.residuals(best.x)
    assert res["comp_min"] <= 1e-8 and res["constraint"] <= 1e-6
    assert best.objective == pytest.approx(res["objective"], rel=1e-12)


def test_solve_from_guesses_records_every_start_and_keeps_the_best(tmp_path: Path) -> None:
    prog = _tiny_mpcc(2.0)
    x0 = prog.x0.copy()
    guesses = [[1.0, 0.0], [0.0, 2.0], [0.9, 0.0]]
    r = solve_from_guesses(prog, guesses, indices=[7, 3, 5], strategy="direct", store_path=tmp_path / "s.jsonl")
    assert isinstance(r, MultistartResult) and r.kind == "program" and r.n_structured == 0 and r.complete
    assert [s["start"] for s in r.starts] == [7, 3, 5]  # the caller's order
    for s in r.starts:
        assert {"status", "objective", "comp_violation", "constraint_violation", "iterations", "time_s",
                "backend_status"} <= set(s)
        assert s["status"] == Status.SOLVED and s["comp_violation"] <= 1e-8
    assert [round(s["objective"], 6) for s in r.starts] == [4.0, 1.0, 4.0]
    assert r.best == 3 == best_start(r.starts) and r.best_result is r.results[3]
    np.testing.assert_allclose(r.best_result.x, [0.0, 2.0], atol=1e-6)
    assert sorted(c.count for c in r.clusters) == [1, 2] and r.n_distinct == 2
    np.testing.assert_array_equal(prog.x0, x0)  # the variables' own initial values are put back
    # the same run again resumes from the store: nothing is solved, the results are rebuilt from the records
    again = solve_from_guesses(prog, lambda i: guesses[[7, 3, 5].index(i)], indices=[7, 3, 5], strategy="direct",
                               store_path=tmp_path / "s.jsonl")
    assert again.n_computed == 0 and again.extras["resumed"] == 3 and again.best == 3
    assert isinstance(again.best_result, Result) and again.best_result.status is Status.SOLVED
    np.testing.assert_array_equal(again.best_result.x, r.best_result.x)
    assert again.best_result.residuals["comp_min"] == r.best_result.residuals["comp_min"]
    # other guesses are another run
    other = solve_from_guesses(prog, [[1.0, 0.0]], strategy="direct", store_path=tmp_path / "s.jsonl")
    assert other.n_computed == 1 and other.best == 0


def test_best_start_is_the_rule_of_the_transcription() -> None:
    rec = lambda i, st, f, c, g: {"start": i, "status": st, "objective": f, "comp_violation": c,  # noqa: E731
                                  "constraint_violation": g}
    solved, failed = Status.SOLVED.value, Status.MAX_ITER.value
    assert best_start([rec(0, failed, 0.0, 0, 0), rec(1, solved, 3.0, 0, 0), rec(2, solved, 2.0, 0, 0)]) == 2
    assert best_start([rec(4, solved, 2.0, 0, 0), rec(1, solved, 2.0, 0, 0)]) == 4  # ties: the first
    assert best_start([rec(0, failed, 0.0, 1e-3, 1e-5), rec(1, failed, 9.0, 1e-4, 1e-4)]) == 1
    assert best_start([rec(0, failed, "nan", "inf", 0.1), rec(1, failed, 1.0, 0.5, 0.2)]) == 1
    assert best_start([]) is None


def test_solve_from_guesses_matches_the_transcription_solve() -> None:
    to = _point_mass_to()
    # start i on its own (the transcription's guess i is drawn from the variables' own initial values)
    ref = [to.solve(start_indices=[i], seed=2) for i in range(3)]
    r = solve_from_guesses(to.program, lambda i: to.initial_guess(None if i == 0 else np.random.default_rng([2, i]), 0.1),
                           indices=3)
    for a, b in zip(r.starts, ref):
        (b,) = b.starts
        assert a["start"] == b["start"] and a["status"] == b["status"] and a["iterations"] == b["iterations"]
        assert a["objective"] == pytest.approx(b["objective"], rel=1e-12)
        assert a["comp_violation"] == pytest.approx(b["comp_violation"], rel=1e-9, abs=1e-15)
    best = ref[r.best]
    assert r.best == best_start([t.starts[0] for t in ref]) and r.best_result.status is best.status
    assert r.best_result.objective == pytest.approx(best.objective, rel=1e-12)
    np.testing.assert_array_equal(r.best_result.x, best.result.x)


def test_solve_from_guesses_input_validation() -> None:
    prog = _tiny_mpcc(2.0)
    with pytest.raises(InputError, match="program"):
        solve_from_guesses("not a program", [[0.0, 0.0]])
    with pytest.raises(InputError, match="indices"):
        solve_from_guesses(prog, lambda i: [0.0, 0.0])
    with pytest.raises(InputError, match="indices"):
        solve_from_guesses(prog, [[0.0, 0.0], [1.0, 0.0]], indices=[1, 1])
    with pytest.raises(InputError, match="guesses"):
        solve_from_guesses(prog, [[0.0, 0.0]], indices=[0, 1])
    with pytest.raises(InputError, match="guesses"):
        solve_from_guesses(prog, [[0.0, np.nan]])
    with pytest.raises(InputError, match="guesses"):
        solve_from_guesses(prog, [[0.0]])
    with pytest.raises(OptionError, match="did you mean"):
        solve_from_guesses(prog, [[0.0, 0.0]], max_iters=3)
    with pytest.raises(InputError, match="Dask"):
        solve_from_guesses(prog, [[0.0, 0.0]], workers=2)


def test_cluster_points_uses_the_stated_tolerance() -> None:
    pts = [np.array([1.0, 0.0]), np.array([1.0 + 5e-7, 0.0]), np.array([1.0 + 2e-6, 0.0]), np.array([0.0, 0.0])]
    assert cluster_points(pts, 1e-6) == [0, 0, 1, 2]
    # with objectives: same point, different objective -> different clusters
    assert cluster_points(pts[:2], 1e-6, objectives=[1.0, 2.0]) == [0, 1]


def test_input_validation() -> None:
    with pytest.raises(InputError, match="problem"):
        multistart("not a problem", starts=3)
    with pytest.raises(InputError, match="starts"):
        multistart((M3, Q3), starts=0)
    with pytest.raises(InputError, match="q"):
        multistart((M3, np.ones(3)), starts=3)
    with pytest.raises(InputError, match="problem"):
        multistart((M3, Q3), kind="fc3d")
    with pytest.raises(OptionError, match="did you mean"):
        multistart((M3, Q3), solver_options={"max_iters": 3})
    with pytest.raises(OptionError, match="z0"):
        multistart((M3, Q3), solver_options={"z0": [0, 0]})
    with pytest.raises(InputError, match="Dask"):  # a Program must be built in the workers
        multistart(_tiny_mpcc(), starts=2, workers=2)


# ------------------------------------------------------------------------------------------------
# Streaming, resume and Dask
# ------------------------------------------------------------------------------------------------
def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_interrupted_multistart_resumes_without_repeats(tmp_path: Path) -> None:
    path = tmp_path / "starts.jsonl"
    part = multistart((M3, Q3), starts=60, seed=4, store_path=path, max_results=25)
    assert not part.complete and part.n_run == 25 and len(_lines(path)) == 25
    full = multistart((M3, Q3), starts=60, seed=4, store_path=path)
    assert full.complete and full.n_run == 60 and full.extras["resumed"] == 25 and full.n_computed == 35
    keys = [r["key"] for r in _lines(path)]
    assert len(keys) == 60 == len(set(keys))
    ref = multistart((M3, Q3), starts=60, seed=4)
    assert [c.starts for c in full.clusters] == [c.starts for c in ref.clusters]
    # another seed is another run: nothing is reused from the store
    other = multistart((M3, Q3), starts=10, seed=5, store_path=path)
    assert other.n_computed == 10 and len(_lines(path)) == 70


def _six_by_six() -> tuple[np.ndarray, np.ndarray]:
    """Three uncoupled copies of the three-solution LCP: 27 solutions."""
    return scipy.linalg.block_diag(M3, M3, M3), np.tile(Q3, 3)


def test_2000_starts_on_2_dask_workers_survive_a_killed_worker(tmp_path: Path) -> None:
    """A 2000-start multistart of one problem runs on a local Dask cluster of 2 workers, and
    killing one worker mid-run loses no starts."""
    from contactmp.parallel import dask_client

    M, q = _six_by_six()
    t0 = time.perf_counter()
    serial = multistart((M, q), starts=2000, seed=11, store_path=tmp_path / "serial.jsonl")
    t_serial = time.perf_counter() - t0
    assert serial.n_distinct == 27 and serial.n_solved == 2000

    path = tmp_path / "dask.jsonl"
    killed: list[int] = []
    written: list[str] = []
    with dask_client(workers=2) as client:
        pids = list(client.run(os.getpid).values())
        assert len(pids) == 2

        def kill_one_worker(key: str, rec: dict) -> None:
            written.append(key)
            if not killed and len(written) >= 150:  # mid-run: both workers hold queued batches
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

        t0 = time.perf_counter()
        par = multistart((M, q), starts=2000, seed=11, store_path=path, client=client,
                         batch_size=25, callback=kill_one_worker)
        t_dask = time.perf_counter() - t0
        assert killed and pids[0] not in client.run(os.getpid).values()
    lines = _lines(path)
    assert len(lines) == 2000  # every start written exactly once
    assert sorted(r["start"] for r in lines) == list(range(2000))
    assert par.complete and par.workers == 2 and par.n_run == 2000
    # the same clusters, counts and members as the run in this process
    assert [(c.count, c.starts) for c in par.clusters] == [(c.count, c.starts) for c in serial.clusters]
    for a, b in zip(par.clusters, serial.clusters):
        np.testing.assert_array_equal(a.x, b.x)
        assert a.verified
    print(f"\n2000 starts: serial {1e3 * t_serial / 2000:.2f} ms/start, "
          f"Dask (2 workers, one killed) {1e3 * t_dask / 2000:.2f} ms/start")
