"""`contactmp solve` on fc3d files: content-based reading, the registry call, --json keys, errors.

The plumbing is tested with stand-in registry entries (a projected fixed-point iteration written
here), so these tests do not depend on the cone solvers; one test runs the real default solver
when ``solvers/fc3d/newton.py`` exists.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from contactmp.cli import app
from contactmp.io import load_fc3d
from contactmp.result import Result, Status
from contactmp.solvers import registry
from contactmp.solvers.fc3d.problem import fc3d_residual, project_cone, validate_fc3d, verified_fc3d_result

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]


def _fixed_point(W: Any, q: Any, mu: Any, tol: float = 1e-8, max_iter: int = 20000,
                 time_limit: float | None = None, progress: Any = None) -> Result:
    """Stand-in cone solver: r <- P_K(r - rho (W r + q + mu ||u_T|| e_n)), rho = 1 / ||W||_2.
    Like every registered solver it takes ``time_limit`` and ``progress`` (the command line passes
    both)."""
    t0 = time.perf_counter()
    W, q, mu = validate_fc3d(W, q, mu)
    rho = 1.0 / np.linalg.norm(W, 2)
    r = np.zeros_like(q)
    deadline = t0 + (np.inf if time_limit is None else time_limit)
    for k in range(1, max_iter + 1):
        u = W @ r + q
        u_hat = u.copy()
        u_hat[0::3] += mu * np.hypot(u[1::3], u[2::3])
        r = project_cone(r - rho * u_hat, mu)
        if k % 10 == 0:
            res = fc3d_residual(W, q, mu, r)
            if progress is not None:
                progress("standin", k, res)
            if res <= tol or time.perf_counter() > deadline:
                break
    return verified_fc3d_result(W, q, mu, r, solver="standin", claimed=Status.NOT_SOLVED, tol=tol,
                                iterations=k, t_start=t0)


def _never(W: Any, q: Any, mu: Any, tol: float = 1e-8, time_limit: float | None = None,
           progress: Any = None) -> Result:
    """Stand-in that gives up at once (r = 0, not solved unless q is already admissible)."""
    t0 = time.perf_counter()
    W, q, mu = validate_fc3d(W, q, mu)
    return verified_fc3d_result(W, q, mu, np.zeros_like(q), solver="never", claimed=Status.MAX_ITER,
                                tol=tol, iterations=1, t_start=t0, message="gave up")


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, fn in (("standin", _fixed_point), ("never", _never)):
        monkeypatch.setitem(registry.FC3D_SOLVERS, name, f"tests.stand_in.{name}")
        monkeypatch.setitem(registry._LOADED_FC3D, name, fn)


def _solve_json(*args: str) -> dict:
    out = runner.invoke(app, ["solve", *args, "--json"])
    d = json.loads(out.stdout.strip().splitlines()[-1])
    assert out.exit_code == (0 if d["status"] == "solved" else 1), out.output  # the CLI's exit-code convention
    return d


def _check_answer(d: dict, W: np.ndarray, q: np.ndarray, mu: np.ndarray, tol: float = 1e-8) -> np.ndarray:
    """The printed r solves the problem by our own residual, and the printed u is W r + q."""
    r, u = np.array(d["r"]), np.array(d["u"])
    assert d["kind"] == "fc3d" and d["n"] == q.size and d["nc"] == mu.size
    np.testing.assert_allclose(u, W @ r + q, rtol=0, atol=1e-12)
    assert fc3d_residual(W, q, mu, r) <= tol
    assert d["residual"] == pytest.approx(fc3d_residual(W, q, mu, r), abs=1e-15)
    for key in ("status", "solver", "iterations", "time_s"):
        assert key in d
    return r


@pytest.mark.usefixtures("standin")
def test_named_solver_on_siconos_dat(repo_data: Path) -> None:
    path = repo_data / "raw" / "FC3D_Example1.dat"
    d = _solve_json(str(path), "--solver", "standin")
    assert d["status"] == "solved" and d["solver"] == "standin"
    r = _check_answer(d, *load_fc3d(path))
    # closed form (W = I, q = (-1, 1, 3), mu = 0.1 per contact): sliding with r_n = 1
    rt = -0.1 * np.array([1.0, 3.0]) / np.sqrt(10.0)
    np.testing.assert_allclose(r, np.tile(np.concatenate([[1.0], rt]), 3), atol=1e-7)


@pytest.mark.usefixtures("standin")
def test_hdf5_and_npz_give_the_same_answer(repo_data: Path, tmp_path: Path) -> None:
    # a small FCLIB file written from a shared problem: the reader's W equals the npz's, so the
    # deterministic stand-in prints the same r for both
    import h5py

    W, q, mu = load_fc3d(repo_data / "fc3d" / "Rover4396.npz")
    h5 = tmp_path / "rover.h5"
    with h5py.File(h5, "w") as f:
        g = f.create_group("fclib_local")
        g["spacedim"] = np.array([3], np.int32)
        r_idx, c_idx = np.nonzero(W)
        w = g.create_group("W")
        for key, val in (("m", W.shape[0]), ("n", W.shape[1]), ("nz", r_idx.size)):
            w[key] = np.array([val], np.int32)
        w["p"], w["i"], w["x"] = r_idx.astype(np.int32), c_idx.astype(np.int32), W[r_idx, c_idx]
        g["vectors/q"], g["vectors/mu"] = q, mu
    a = _solve_json(str(h5), "--solver", "standin")
    b = _solve_json(str(repo_data / "fc3d" / "Rover4396.npz"), "--solver", "standin")
    assert a["r"] == b["r"] and a["status"] == b["status"]
    if a["status"] == "solved":
        _check_answer(a, W, q, mu)


def test_default_tries_the_registry_order(repo_data: Path, monkeypatch: pytest.MonkeyPatch,
                                          standin: None) -> None:
    monkeypatch.setattr(registry, "DEFAULT_FC3D_ORDER", ("never", "standin"))
    path = repo_data / "raw" / "FC3D_Example1.dat"
    d = _solve_json(str(path))
    assert d["solver"] == "standin" and d["status"] == "solved"
    assert [a["solver"] for a in d["attempts"]] == ["never", "standin"]
    assert d["attempts"][0]["status"] == "max_iter" and d["attempts"][0]["residual"] > 1e-8
    _check_answer(d, *load_fc3d(path))


@pytest.mark.usefixtures("standin")
def test_unsolved_status_is_reported_with_exit_1(repo_data: Path) -> None:
    d = _solve_json(str(repo_data / "raw" / "Rover1039.dat"), "--solver", "never")
    assert d["status"] == "max_iter" and d["residual"] > 1e-8 and d["message"] == "gave up"
    # r = 0, so u = q
    assert d["r"] == [0.0] * 12
    np.testing.assert_array_equal(d["u"], load_fc3d(repo_data / "raw" / "Rover1039.dat")[1])


@pytest.mark.usefixtures("standin")
def test_table_output_names_the_class(repo_data: Path) -> None:
    out = runner.invoke(app, ["solve", str(repo_data / "raw" / "FC3D_Example1.dat"), "--solver", "standin"])
    assert out.exit_code == 0, out.output
    assert "fc3d" in out.output and "nc = 3" in out.output and "solved" in out.output


def test_bad_fc3d_input_exits_2_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.npz"
    np.savez(bad, W=np.eye(3), q=np.array([-1.0, 0.0, 0.0]), mu=np.array([-0.5]))
    out = runner.invoke(app, ["solve", str(bad), "--json"])
    assert out.exit_code == 2 and "mu" in out.output
    dat = tmp_path / "bad.dat"
    dat.write_text("3\n1\n0\n3\n3\n3\t3\n1 0 0\n0 1 0\n0 0 1\n-1 0\n")
    out = runner.invoke(app, ["solve", str(dat)])
    assert out.exit_code == 2 and "q" in out.output


def test_unknown_fc3d_solver_exits_2_with_a_hint(repo_data: Path) -> None:
    out = runner.invoke(app, ["solve", str(repo_data / "fc3d" / "FC3D_Example1.npz"), "--solver", "newtn"])
    assert out.exit_code == 2 and "did you mean 'newton'" in out.output
    # an LCP solver name is not an fc3d solver
    out = runner.invoke(app, ["solve", str(repo_data / "fc3d" / "FC3D_Example1.npz"), "--solver", "lemke"])
    assert out.exit_code == 2 and "fc3d" in out.output


def test_lcp_output_keeps_z_and_w(repo_data: Path) -> None:
    d = _solve_json(str(repo_data / "raw" / "lcp_CPS_1.dat"), "--solver", "lemke")
    assert d["kind"] == "lcp" and "z" in d and "w" in d and "r" not in d


def test_list_shows_the_fc3d_solvers() -> None:
    out = runner.invoke(app, ["list"])
    assert out.exit_code == 0
    assert "fc3d" in out.output
    for name in registry.FC3D_SOLVERS:
        assert name in out.output
    assert ", ".join(registry.DEFAULT_FC3D_ORDER) in out.output


@pytest.mark.parametrize("name", ["FC3D_Example1.dat", "Rover1039.dat"])
def test_real_default_solver_on_raw_files(repo_data: Path, name: str) -> None:
    path = repo_data / "raw" / name
    d = _solve_json(str(path), "--solver", "newton")
    assert d["status"] == "solved", d["message"]
    _check_answer(d, *load_fc3d(path))


def test_a_registered_solver_whose_module_is_missing_exits_1(repo_data: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.FC3D_SOLVERS, "ghost", "contactmp.solvers.no_such_module")
    out = runner.invoke(app, ["solve", str(repo_data / "fc3d" / "FC3D_Example1.npz"), "--solver", "ghost"])
    assert out.exit_code == 1 and "no_such_module" in out.output and "fc3d" in out.output


def test_time_limit_on_a_shared_fc3d_problem(repo_data: Path) -> None:
    """--time-limit 0.001 on a 286-contact problem (Newton needs about 0.2 s): the answer is the
    best iterate checked in time (here r = 0 at the latest), status time_limit, printed as usual."""
    path = repo_data / "fc3d" / "Capsules-i125-1213.npz"
    t = time.perf_counter()
    d = _solve_json(str(path), "--time-limit", "0.001")
    assert time.perf_counter() - t <= 5.0
    assert d["status"] == "time_limit", d["message"]
    W, q, mu = load_fc3d(path)
    assert d["residual"] == fc3d_residual(W, q, mu, np.array(d["r"]))
    assert d["attempts"][-1]["status"] == "time_limit"


@pytest.mark.usefixtures("standin")
def test_progress_reports_of_a_named_solver_go_to_stderr(repo_data: Path) -> None:
    out = runner.invoke(app, ["solve", str(repo_data / "fc3d" / "Capsules-i125-1213.npz"), "--solver", "standin",
                              "--time-limit", "0.5", "--progress-delay", "0", "--json"])
    d = json.loads(out.stdout)
    assert out.exit_code == (0 if d["status"] == "solved" else 1), out.output
    assert d["solver"] == "standin" and d["kind"] == "fc3d"
    assert "standin: iteration 10, residual" in out.stderr
