"""Every solve has a wall-clock bound: ``time_limit`` for every LCP and fc3d solver, the default
chains and multistart, and ``progress`` reporters called at the checkpoints.

When the limit is hit the answer is the iterate with the smallest independently recomputed
residual seen at the checkpoints, with status ``time_limit`` (``solved`` only if it passes the
check). The problems below need far more than their limit (seconds to hours); the limits are
0.05-0.3 s and the asserts on elapsed time are generous (5 s), so loaded machines pass too. "Seen"
is what the ``progress`` reporter was told: each call carries the checked residual of that
checkpoint's iterate.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from contactmp.errors import OptionError
from contactmp.progress import ProgressLine, Watch, check_time_limit
from contactmp.result import Status
from contactmp.solvers.fc3d import ipopt as fc3d_ipopt
from contactmp.solvers.fc3d import newton as fc3d_newton
from contactmp.solvers.fc3d import nsgs as fc3d_nsgs
from contactmp.solvers.fc3d import pyramid as fc3d_pyramid
from contactmp.solvers.fc3d import qvi as fc3d_qvi
from contactmp.solvers.lcp import fip
from contactmp.solvers.lcp import lemke
from contactmp.solvers.lcp import newton
from contactmp.solvers.lcp import pgs
from contactmp.solvers.fc3d.problem import fc3d_residual
from contactmp.solvers.lcp.problem import lcp_residual
from contactmp.solvers.registry import FC3D_SOLVERS, LCP_SOLVERS, fc3d_solver, lcp_solver, solve_fc3d, solve_lcp

MARGIN = 5.0  # seconds: a solve with a limit of at most 0.3 s must be back well within this
BAD_LIMITS = [0, 0.0, -1.0, float("nan"), -float("inf"), True, "5", [1.0]]


class Recorder:
    """A ``progress`` reporter that keeps every report (and optionally sleeps at each one, which
    makes a solve slow in a deterministic way: each checkpoint costs at least ``sleep``)."""

    def __init__(self, sleep: float = 0.0) -> None:
        self.sleep = sleep
        self.calls: list[tuple[str, int, float]] = []

    def __call__(self, solver: str, iteration: int, residual: float) -> None:
        self.calls.append((solver, int(iteration), float(residual)))
        if self.sleep:
            time.sleep(self.sleep)

    def best(self, solver: str | None = None) -> float:
        vals = [r for s, _, r in self.calls if solver is None or s == solver]
        assert vals, f"no checkpoint reported (solver {solver})"
        return min(vals)


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _check_lcp(M: np.ndarray, q: np.ndarray, res: Any, rec: Recorder | None, elapsed: float,
               exact: bool = True) -> None:
    assert res.status is Status.TIME_LIMIT, (res.status, res.message)
    assert elapsed <= MARGIN, elapsed
    assert res.residual == lcp_residual(M, q, res.x)  # the independent check, recomputed
    assert res.residual > res.tol  # (time_limit only when the check fails)
    if rec is not None:  # the best iterate seen (a chain: no worse than it)
        assert res.residual == rec.best() if exact else res.residual <= rec.best()


def _check_fc3d(W: np.ndarray, q: np.ndarray, mu: np.ndarray, res: Any, rec: Recorder | None, elapsed: float,
                solver: str | None = None) -> None:
    assert res.status is Status.TIME_LIMIT, (res.status, res.message)
    assert elapsed <= MARGIN, elapsed
    assert res.residual == fc3d_residual(W, q, mu, res.x)
    if rec is not None:
        assert res.residual <= rec.best(solver)


# ------------------------------------------------------------------------------------------------
# problems that take far longer than their limit
# ------------------------------------------------------------------------------------------------
def murty(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Murty's LCP on which Lemke's method (covering vector of ones) pivots ``2^n - 1`` times:
    ``M`` lower triangular, 1 on the diagonal, 2 below; ``q = -1``."""
    return np.eye(n) + 2.0 * np.tril(np.ones((n, n)), -1), -np.ones(n)


def laplacian(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The 1-D Laplacian LCP (SPD, condition number ~ 4 n^2 / pi^2): Gauss-Seidel needs of the
    order of ``n^2`` sweeps of ``n^2`` flops each (hours for n = 1000 at tol 1e-14)."""
    M = 2.0 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    return M, -np.ones(n) / n**2


def shared(repo_data: Path, stem: str, kind: str = "fc3d") -> dict[str, np.ndarray]:
    return dict(np.load(repo_data / kind / f"{stem}.npz", allow_pickle=False))


# ------------------------------------------------------------------------------------------------
# option checks: every solver, both chains, multistart
# ------------------------------------------------------------------------------------------------
def test_check_time_limit() -> None:
    assert check_time_limit(None) == math.inf and check_time_limit(math.inf) == math.inf
    assert check_time_limit(2) == 2.0 and check_time_limit(np.float64(0.5)) == 0.5
    assert check_time_limit(np.int64(3)) == 3.0
    for bad in BAD_LIMITS + [np.bool_(True)]:
        with pytest.raises(OptionError, match="time_limit"):
            check_time_limit(bad)


@pytest.mark.parametrize("name", list(LCP_SOLVERS))
def test_lcp_solvers_name_a_bad_time_limit(name: str) -> None:
    M, q = np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-5.0, -6.0])
    fn = lcp_solver(name)
    for bad in BAD_LIMITS:
        with pytest.raises(OptionError, match="time_limit"):
            fn(M, q, time_limit=bad)
    for ok in (None, math.inf, 30.0):  # no limit, or one the tiny solve cannot reach
        assert fn(M, q, time_limit=ok).success


@pytest.mark.parametrize("name", list(FC3D_SOLVERS))
def test_fc3d_solvers_name_a_bad_time_limit(name: str) -> None:
    W, q, mu = np.diag([2.0, 1.0, 1.0]), np.array([-1.0, 0.01, 0.01]), np.array([0.3])  # sticking
    fn = fc3d_solver(name)
    for bad in BAD_LIMITS:
        with pytest.raises(OptionError, match="time_limit"):
            fn(W, q, mu, time_limit=bad)
    for ok in (None, math.inf, 30.0):
        assert fn(W, q, mu, time_limit=ok).success


def test_chains_and_multistart_name_a_bad_time_limit() -> None:
    from contactmp.solvers.multistart import multistart

    M, q = np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-5.0, -6.0])
    W, qf, mu = np.diag([2.0, 1.0, 1.0]), np.array([-1.0, 0.5, 0.2]), np.array([0.3])
    for bad in BAD_LIMITS:
        with pytest.raises(OptionError, match="time_limit"):
            solve_lcp(M, q, time_limit=bad)
        with pytest.raises(OptionError, match="time_limit"):
            solve_fc3d(W, qf, mu, time_limit=bad)
        with pytest.raises(OptionError, match="time_limit"):
            multistart((M, q), starts=2, time_limit=bad)
    with pytest.raises(OptionError, match="progress"):
        solve_lcp(M, q, solver="lemke", progress="yes")
    assert solve_lcp(M, q, time_limit=None).success and solve_fc3d(W, qf, mu, time_limit=math.inf).success


# ------------------------------------------------------------------------------------------------
# the chunked runs take the same steps as the one-call runs
# ------------------------------------------------------------------------------------------------
def _lcps(repo_data: Path) -> list[tuple[str, np.ndarray, np.ndarray]]:
    from contactmp.formulations.pyramid_lcp import random_pyramid_lcp

    out = [(p.stem, *(np.load(p, allow_pickle=False)[k] for k in ("M", "q")))
           for p in sorted((repo_data / "lcp").glob("*.npz"))]
    for size, seed in ((30, 0), (90, 1), (170, 2)):
        out.append((f"pyramid{size}", *random_pyramid_lcp(size, seed)))
    return out


@pytest.mark.parametrize("module", [lemke, newton, fip, pgs], ids=lambda m: m.NAME)
def test_watched_runs_give_the_same_answers(repo_data: Path, module: Any) -> None:
    """A reporter (or a limit the solve does not reach) makes the compiled solvers run in chunks,
    checking after each: the answers, statuses and iteration counts are those of one call."""
    extra = {"max_iter": 3000} if module is pgs else {}
    for stem, M, q in _lcps(repo_data):
        a = module.solve(M, q, **extra)
        rec = Recorder()
        b = module.solve(M, q, progress=rec, **extra)
        c = module.solve(M, q, time_limit=1e3, **extra)
        for other in (b, c):
            assert other.status is a.status and other.iterations == a.iterations, stem
            np.testing.assert_array_equal(other.x, a.x, err_msg=stem)
            assert other.residual == a.residual


def test_watched_nsgs_gives_the_same_answers(repo_data: Path) -> None:
    for stem in ("NESpheres_30_1", "Confeti-ex03-Fc3D-SBM", "OneObject-i100000-316_hdf5"):
        d = shared(repo_data, stem)
        a = fc3d_nsgs.solve(d["W"], d["q"], d["mu"], max_iter=300)
        b = fc3d_nsgs.solve(d["W"], d["q"], d["mu"], max_iter=300, progress=Recorder())
        assert a.status is b.status and a.iterations == b.iterations
        np.testing.assert_array_equal(a.x, b.x)


# ------------------------------------------------------------------------------------------------
# LCP solvers at their limit
# ------------------------------------------------------------------------------------------------
def test_lemke_murty_stops_at_the_limit() -> None:
    M, q = murty(32)  # 2^32 pivots
    rec = Recorder()
    res, el = _timed(lambda: lemke.solve(M, q, max_iter=10**12, restarts=0, time_limit=0.1, progress=rec))
    _check_lcp(M, q, res, rec, el)
    assert res.extras["start_statuses"] == ["time_limit"] and len(rec.calls) >= 2
    assert res.iterations > 1000 and res.extras["best_iteration"] <= res.iterations


def test_lemke_time_limit_between_restarts(repo_data: Path) -> None:
    """The limit is also checked between starts; the best of all starts' iterates is returned."""
    d = shared(repo_data, "lcp_Pang_isolated_sol_perturbed", "lcp")  # every start ends on a ray
    rec = Recorder(sleep=0.05)  # (at least one report per start)
    res, el = _timed(lambda: lemke.solve(d["M"], d["q"], restarts=1000, time_limit=0.3, progress=rec))
    _check_lcp(d["M"], d["q"], res, rec, el)
    assert 1 < res.extras["starts"] < 1001 and "ray_termination" in res.extras["start_statuses"]


def test_newton_stops_at_the_limit(repo_data: Path) -> None:
    d = shared(repo_data, "lcp_Pang_isolated_sol_perturbed", "lcp")  # no solution
    rec = Recorder()
    res, el = _timed(lambda: newton.solve(d["M"], d["q"], max_iter=10**8, time_limit=0.1, progress=rec))
    _check_lcp(d["M"], d["q"], res, rec, el)
    assert res.iterations > 2


def test_newton_mcp_stops_at_the_limit(repo_data: Path) -> None:
    d = shared(repo_data, "lcp_Pang_isolated_sol_perturbed", "lcp")
    M, q = d["M"], d["q"]
    rec = Recorder()
    res, el = _timed(lambda: newton.solve_mcp(lambda z: M @ z + q, lambda z: M, 0.0, np.inf, z0=np.zeros(q.size),
                                              max_iter=10**8, time_limit=0.1, progress=rec))
    assert res.status is Status.TIME_LIMIT and el <= MARGIN
    assert res.residual == newton.natural_residual(res.x, M @ res.x + q, np.zeros(q.size), np.full(q.size, np.inf))
    assert res.residual <= rec.best() and len(rec.calls) > 2


def test_pgs_stops_at_the_limit() -> None:
    M, q = laplacian(1000)
    rec = Recorder()
    res, el = _timed(lambda: pgs.solve(M, q, tol=1e-14, max_iter=10**9, time_limit=0.1, progress=rec))
    _check_lcp(M, q, res, rec, el)


def test_fip_stops_in_phase_two(repo_data: Path) -> None:
    d = shared(repo_data, "lcp_CPS_4bis", "lcp")  # 17 iterations; each checkpoint sleeps 0.03 s
    rec = Recorder(sleep=0.03)
    res, el = _timed(lambda: fip.solve(d["M"], d["q"], time_limit=0.15, progress=rec))
    _check_lcp(d["M"], d["q"], res, rec, el)
    assert 0 < res.iterations < 17


def test_fip_stops_in_phase_one() -> None:
    rng = np.random.default_rng(0)
    M, q = rng.standard_normal((400, 400)), rng.standard_normal(400)  # Phase I alone takes seconds
    res, el = _timed(lambda: fip.solve(M, q, time_limit=0.01))
    _check_lcp(M, q, res, None, el)
    assert "Phase I" in res.message and not res.x.any()


@pytest.mark.parametrize("name", ["ipopt", "cyipopt"])
def test_ipopt_stops_at_the_limit(repo_data: Path, name: str) -> None:
    d = shared(repo_data, "lcp_Pang_isolated_sol_perturbed", "lcp")
    res, el = _timed(lambda: lcp_solver(name)(d["M"], d["q"], time_limit=1e-3))
    _check_lcp(d["M"], d["q"], res, None, el)


def test_lcp_chain_shares_one_budget() -> None:
    M, q = laplacian(1000)  # Lemke needs about n pivots of n^2 each: seconds
    rec = Recorder()
    res, el = _timed(lambda: solve_lcp(M, q, time_limit=0.05, progress=rec))
    _check_lcp(M, q, res, rec, el, exact=False)
    assert [a["status"] for a in res.extras["attempts"]][0] == "time_limit"


# ------------------------------------------------------------------------------------------------
# fc3d solvers at their limit
# ------------------------------------------------------------------------------------------------
def test_nsgs_stops_at_the_limit(repo_data: Path) -> None:
    d = shared(repo_data, "OneObject-i100000-316_hdf5")  # NSGS stagnates here
    rec = Recorder()
    res, el = _timed(lambda: fc3d_nsgs.solve(d["W"], d["q"], d["mu"], max_iter=10**9, time_limit=0.1,
                                            progress=rec))
    _check_fc3d(d["W"], d["q"], d["mu"], res, rec, el)
    assert len(rec.calls) >= 2


def test_qvi_stops_at_the_limit(repo_data: Path) -> None:
    d = shared(repo_data, "BoxesStack1-i100000-32_hdf5")  # about 20 s
    rec = Recorder()
    res, el = _timed(lambda: fc3d_qvi.solve(d["W"], d["q"], d["mu"], time_limit=0.1, progress=rec))
    _check_fc3d(d["W"], d["q"], d["mu"], res, rec, el)


def test_fc3d_newton_stops_at_the_limit(repo_data: Path) -> None:
    d = shared(repo_data, "BoxesStack1-i100000-32_hdf5")
    rec = Recorder(sleep=0.02)  # every residual check costs 20 ms: 5 checks fit in the limit
    res, el = _timed(lambda: fc3d_newton.solve(d["W"], d["q"], d["mu"], time_limit=0.1, progress=rec))
    _check_fc3d(d["W"], d["q"], d["mu"], res, rec, el)


def test_pyramid_stops_at_the_limit(repo_data: Path) -> None:
    d = shared(repo_data, "Capsules-i101-404")  # LCPs of 1350 rows and more
    rec = Recorder()
    res, el = _timed(lambda: fc3d_pyramid.solve(d["W"], d["q"], d["mu"], time_limit=0.05, progress=rec))
    _check_fc3d(d["W"], d["q"], d["mu"], res, None, el)


def test_fc3d_ipopt_stops_at_the_limit(repo_data: Path) -> None:
    d = shared(repo_data, "BoxesStack1-i100000-32_hdf5")
    rec = Recorder()
    res, el = _timed(lambda: fc3d_ipopt.solve(d["W"], d["q"], d["mu"], time_limit=0.2, progress=rec))
    _check_fc3d(d["W"], d["q"], d["mu"], res, rec if rec.calls else None, el)


def test_fc3d_chain_shares_one_budget(repo_data: Path) -> None:
    d = shared(repo_data, "BoxesStack1-i100000-32_hdf5")  # the quick pass fails, Newton takes ~2 s
    rec = Recorder(sleep=0.02)
    res, el = _timed(lambda: solve_fc3d(d["W"], d["q"], d["mu"], time_limit=0.2, progress=rec))
    _check_fc3d(d["W"], d["q"], d["mu"], res, rec, el)
    assert res.extras["attempts"] and el <= MARGIN


# ------------------------------------------------------------------------------------------------
# multistart: a limit for the whole run
# ------------------------------------------------------------------------------------------------
def test_multistart_is_cut_short_and_resumes(tmp_path: Path) -> None:
    from contactmp.formulations.pyramid_lcp import random_pyramid_lcp
    from contactmp.solvers.multistart import multistart

    M, q = random_pyramid_lcp(90, 1)
    multistart((M, q), starts=3)  # compiled kernels loaded: the first start of the timed run is quick
    store = tmp_path / "starts.jsonl"
    res, el = _timed(lambda: multistart((M, q), starts=100000, time_limit=1.0, store_path=store))
    assert el <= 1.0 + MARGIN  # (100000 starts take minutes)
    assert not res.complete and res.extras["cut_short"] and res.extras["time_limit"] == 1.0
    assert 0 < res.n_run < res.n_starts and res.extras["starts_not_run"] == res.n_starts - res.n_run
    assert all(r["status"] != "time_limit" for r in res.starts)  # cut starts leave no record
    again, el = _timed(lambda: multistart((M, q), starts=100000, time_limit=1.0, store_path=store))
    assert el <= 1.0 + MARGIN and again.extras["resumed"] == res.n_run and again.n_run > res.n_run


# ------------------------------------------------------------------------------------------------
# the reporter
# ------------------------------------------------------------------------------------------------
class _Stream:
    def __init__(self, tty: bool) -> None:
        self.tty, self.text = tty, ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, s: str) -> None:
        self.text += s

    def flush(self) -> None:
        pass


def test_progress_line_waits_then_writes() -> None:
    quiet = _Stream(False)
    line = ProgressLine(stream=quiet, delay=60.0)
    line("lemke", 10, 1e-3)
    assert quiet.text == ""  # short solves stay silent
    plain = _Stream(False)
    line = ProgressLine(stream=plain, delay=0.0)
    line("pgs", 7, 2.5e-4)
    line("pgs", 8, 2.0e-4)  # within the interval: not written
    assert plain.text.count("\n") == 1 and "pgs: iteration 7, residual 2.500e-04" in plain.text
    tty = _Stream(True)
    line = ProgressLine(stream=tty, delay=0.0)
    line("nsgs", 3, 0.5)
    line.close()
    assert tty.text.startswith("\r") and "nsgs: iteration 3" in tty.text and tty.text.endswith("\r\x1b[2K")


def test_watch_keeps_the_best_copy() -> None:
    w = Watch("x", 10.0)
    z = np.array([1.0, 2.0])
    w.offer(z, 3.0, 1)
    z[:] = 5.0  # the solver's array changes in place: the watch kept a copy
    w.offer(z, 4.0, 2)
    assert w.residual == 3.0 and w.iteration == 1 and w.x.tolist() == [1.0, 2.0]
    assert w.limited and not w.expired() and Watch("x").left() == math.inf
