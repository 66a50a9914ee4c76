"""The command line: solve --json on the shared LCPs, bad input, study output and resume."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from contactmp.cli import app
from contactmp.solvers import lcp_residual

runner = CliRunner()
NO_SOLUTION = {"lcp_Pang_isolated_sol_perturbed"}


def _solve_json(*args: str) -> dict:
    out = runner.invoke(app, ["solve", *args, "--json"])
    d = json.loads(out.stdout.strip().splitlines()[-1])
    assert out.exit_code == (0 if d["status"] == "solved" else 1), out.output  # the CLI's exit-code convention
    return d


def test_lemke_on_cps1_prints_a_verified_solution(repo_data: Path) -> None:
    d = _solve_json(str(repo_data / "lcp" / "lcp_CPS_1.npz"), "--solver", "lemke")
    assert d["status"] == "solved" and d["solver"] == "lemke"
    assert d["residual"] < 1e-10
    for key in ("iterations", "time_s", "z"):
        assert key in d
    npz = np.load(repo_data / "lcp" / "lcp_CPS_1.npz", allow_pickle=False)
    assert lcp_residual(npz["M"], npz["q"], np.array(d["z"])) < 1e-10


def test_every_shared_lcp_with_a_solution_is_solved(repo_data: Path) -> None:
    for path in sorted((repo_data / "lcp").glob("*.npz")):
        d = _solve_json(str(path))
        if path.stem in NO_SOLUTION:
            # Lemke's secondary ray is reported as such, not as an error
            assert d["status"] == "ray_termination", d
            assert any(a["solver"] == "lemke" and a["status"] == "ray_termination" for a in d["attempts"])
        else:
            assert d["status"] == "solved", (path.stem, d["message"])
            assert d["residual"] <= 1e-8


def test_siconos_dat_reads_like_the_npz(repo_data: Path) -> None:
    a = _solve_json(str(repo_data / "raw" / "lcp_CPS_1.dat"), "--solver", "lemke")
    b = _solve_json(str(repo_data / "lcp" / "lcp_CPS_1.npz"), "--solver", "lemke")
    assert a["z"] == b["z"]


def test_bad_input_exits_2_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.npz"
    np.savez(bad, M=np.array([[1.0, np.nan], [0.0, 1.0]]), q=np.array([1.0, -1.0]))
    out = runner.invoke(app, ["solve", str(bad), "--json"])
    assert out.exit_code == 2
    assert "M" in out.output and "NaN" in out.output
    good = tmp_path / "good.npz"
    np.savez(good, M=np.eye(2), q=np.array([1.0, -1.0]))
    out = runner.invoke(app, ["solve", str(good), "--solver", "lemk"])
    assert out.exit_code == 2 and "did you mean 'lemke'" in out.output


def test_help_lists_commands_and_list_lists_solvers() -> None:
    out = runner.invoke(app, ["--help"])
    assert out.exit_code == 0
    for cmd in ("solve", "study", "list"):
        assert cmd in out.output
    out = runner.invoke(app, ["list"])
    for name in ("lemke", "fip", "newton", "pgs", "ipopt", "cyipopt", "trinkle-table1"):
        assert name in out.output


def test_quick_study_writes_its_files_and_resumes(tmp_path: Path) -> None:
    out_dir = tmp_path / "t1"
    res = runner.invoke(app, ["study", "trinkle-table1", "--quick", "--out", str(out_dir)])
    assert res.exit_code == 0, res.output
    for f in ("summary.json", "records.jsonl", "table.md", "fraction_solved.png"):
        assert (out_dir / f).is_file(), f
    summary = json.loads((out_dir / "summary.json").read_text())
    lines = (out_dir / "records.jsonl").read_text().splitlines()
    assert summary["records"] == len(lines) > 0
    # every record's 'solved' claims are backed by residuals and by the paper's conditions
    recs = [json.loads(line) for line in lines]
    for rec in recs:
        assert rec["size"] == rec["n_S"] + 5 * rec["n_R"] and sum(rec["island_sizes"]) == rec["size"]
        for solver in ("lemke", "fip", "newton", "lemke_uncapped", "lemke_islands"):
            if rec[solver]["solved"]:
                assert rec[solver]["residual"] <= 1e-8 and rec[solver]["physics_residual"] <= 1e-6
    # the summary's counts are the records' counts; the quick selection is all solved
    overall = summary["overall"]
    for solver, key in (("lemke", "lemke_with_restarts"), ("fip", "fip"), ("newton", "newton"),
                        ("lemke_islands", "lemke_islands")):
        assert overall[key] == sum(r[solver]["solved"] for r in recs), key
    assert overall["lemke_first_start"] == sum(r["lemke"]["first_start_solved"] for r in recs)
    assert overall["split_into_islands"] == sum(len(r["island_sizes"]) > 1 for r in recs) > 0
    assert overall["any"] == overall["data_sets"] == len(recs) == 54
    assert summary["beats_paper_best"] == (overall["any"] > 228)
    sizes = {row["size"] for row in summary["by_size"]}
    assert sizes == {r["size"] for r in recs} and min(sizes) == 2
    # interrupted run: drop the last two records and a half-written line, run again
    (out_dir / "records.jsonl").write_text("\n".join(lines[:-2]) + "\n" + lines[-1][:20])
    res = runner.invoke(app, ["study", "trinkle-table1", "--quick", "--out", str(out_dir)])
    assert res.exit_code == 0, res.output
    again = [json.loads(x) for x in (out_dir / "records.jsonl").read_text().splitlines() if x.endswith("}")]
    assert sorted(r["key"] for r in again) == sorted(json.loads(x)["key"] for x in lines)


def test_cli_multistart_counts_three_solutions(tmp_path) -> None:
    """M = [[1, 2], [2, 1]], q = (-1, -1) has exactly three solutions: (1, 0), (0, 1), (1/3, 1/3)."""
    import json as _json

    import numpy as _np
    from typer.testing import CliRunner as _Runner

    from contactmp.cli import app as _app

    f = tmp_path / "three.npz"
    _np.savez(f, M=_np.array([[1.0, 2.0], [2.0, 1.0]]), q=_np.array([-1.0, -1.0]))
    out = tmp_path / "ms"
    res = _Runner().invoke(_app, ["multistart", str(f), "--starts", "40", "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    summary = _json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["n_distinct"] == 3
    sols = sorted(tuple(round(v, 9) for v in c["x"]) for c in summary["clusters"])
    assert sols == [(0.0, 1.0), (round(1 / 3, 9), round(1 / 3, 9)), (1.0, 0.0)]
    assert sum(c["count"] for c in summary["clusters"]) == 40
    assert len((out / "starts.jsonl").read_text().splitlines()) == 40


# ------------------------------------------------------------------------------------------------
# --time-limit and the progress line (issue 12, part 4)
# ------------------------------------------------------------------------------------------------
def _laplacian_file(tmp_path: Path, n: int = 1000) -> tuple[Path, np.ndarray, np.ndarray]:
    """An SPD LCP on which projected Gauss-Seidel needs hours at tol 1e-14 (order n^2 sweeps of
    n^2 flops) and Lemke about n pivots of n^2 flops (seconds)."""
    M = 2.0 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    q = -np.ones(n) / n**2
    path = tmp_path / "laplacian.npz"
    np.savez(path, M=M, q=q)
    return path, M, q


def _timed_invoke(*args: str) -> tuple[object, float]:
    import time

    t = time.perf_counter()
    out = runner.invoke(app, list(args))
    return out, time.perf_counter() - t


@pytest.mark.parametrize("solver", [["--solver", "pgs", "--tol", "1e-14"], []], ids=["pgs", "default"])
def test_time_limit_returns_the_best_iterate_in_time(tmp_path: Path, solver: list[str]) -> None:
    path, M, q = _laplacian_file(tmp_path)
    out, elapsed = _timed_invoke("solve", str(path), *solver, "--time-limit", "0.05", "--json")
    assert out.exit_code == 1, out.output  # not solved: exit 1
    d = json.loads(out.stdout)
    assert d["status"] == "time_limit", d["message"]
    assert elapsed <= 5.0  # a limit of 0.05 s on a solve that needs seconds to hours
    assert d["residual"] == lcp_residual(M, q, np.array(d["z"]))
    assert d["attempts"] is None or d["attempts"][0]["status"] == "time_limit"


def test_progress_line_on_stderr_json_alone_on_stdout(tmp_path: Path) -> None:
    path, M, q = _laplacian_file(tmp_path)
    out = runner.invoke(app, ["solve", str(path), "--solver", "pgs", "--tol", "1e-14", "--time-limit", "2.5",
                              "--progress-delay", "0", "--json"])
    assert out.exit_code == 1, out.output  # time_limit: exit 1
    assert len(out.stdout.strip().splitlines()) == 1
    d = json.loads(out.stdout)  # stdout holds the JSON object and nothing else
    assert d["status"] == "time_limit"
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("pgs: iteration ")]
    assert len(lines) >= 2 and all("residual" in ln for ln in lines)
    # without --progress-delay the line waits 2 s: a short solve prints nothing on stderr
    quick = runner.invoke(app, ["solve", str(path), "--solver", "pgs", "--time-limit", "0.3", "--json"])
    assert quick.exit_code == 1 and quick.stderr == ""


@pytest.mark.parametrize("value", ["0", "-1", "nan", "-inf"])
def test_bad_time_limit_exits_2_naming_it(tmp_path: Path, value: str) -> None:
    good = tmp_path / "good.npz"
    np.savez(good, M=np.eye(2), q=np.array([1.0, -1.0]))
    for cmd in (["solve", str(good)], ["multistart", str(good), "--out", str(tmp_path / "ms")]):
        out = runner.invoke(app, [*cmd, f"--time-limit={value}"])
        assert out.exit_code == 2, out.output
        assert "--time-limit" in out.output and "Traceback" not in out.output
    ok = runner.invoke(app, ["solve", str(good), "--time-limit", "inf", "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["status"] == "solved"


def test_multistart_time_limit_cuts_the_run_short_and_resumes(tmp_path: Path) -> None:
    f = tmp_path / "three.npz"
    np.savez(f, M=np.array([[1.0, 2.0], [2.0, 1.0]]), q=np.array([-1.0, -1.0]))
    out_dir = tmp_path / "ms"
    args = ["multistart", str(f), "--starts", "200000", "--out", str(out_dir), "--time-limit", "8", "--workers", "0",
            "--json"]  # the limit counts the command's imports too: 3.4 s of 8 on a loaded 2-core machine
    res, elapsed = _timed_invoke(*args)
    summary = json.loads(res.stdout)
    assert res.exit_code == (0 if summary["n_distinct"] >= 1 else 1), res.output  # 0: a verified solution found
    assert elapsed <= 20.0  # 200000 starts take about 5 min (1.6 ms each)
    assert summary["complete"] is False and summary["extras"]["cut_short"] is True
    assert 0 < summary["n_run"] < 200000 and summary["extras"]["starts_not_run"] == 200000 - summary["n_run"]
    assert len((out_dir / "starts.jsonl").read_text().splitlines()) == summary["n_run"]
    again = json.loads(runner.invoke(app, args).stdout)
    assert again["extras"]["resumed"] == summary["n_run"] < again["n_run"]
    table = runner.invoke(app, args[:-1])
    assert table.exit_code == 0 and "time limit 8 s reached" in table.stdout


def test_study_only_chooses_tasks_and_names_a_bad_one(tmp_path: Path) -> None:
    """``--only`` runs chosen tasks of a study that has tasks; a study without tasks, or a task name
    the study does not have, exits 2 with a message naming the option (nothing is run)."""
    res = runner.invoke(app, ["study", "trinkle-table1", "--quick", "--only", "a", "--out", str(tmp_path / "t")])
    assert res.exit_code == 2 and "--only" in res.output
    res = runner.invoke(app, ["study", "cito-quadruped", "--quick", "--only", "walk-3d-con", "--workers", "0",
                              "--out", str(tmp_path / "q")])
    text = " ".join(res.output.split())  # rich folds long lines
    assert res.exit_code == 2 and "only: no task 'walk-3d-con'" in text and "did you mean 'walk-3d-cone'" in text
    assert not (tmp_path / "q" / "records.jsonl").exists() or (tmp_path / "q" / "records.jsonl").read_text() == ""


def test_solve_json_sensitivities(tmp_path: Path, repo_data: Path) -> None:
    """``--sensitivities`` adds dz_dq for an LCP (M = [[2, 1], [1, 2]], q = (-1, 1): z = (1/2, 0),
    dz/dq = [[-1/2, 0], [0, 0]], not degenerate) and dr_dq (3nc x 3nc), dr_dmu (3nc x nc) with the
    contact modes for fc3d; an unsolved answer gets a reason instead."""
    f = tmp_path / "two.npz"
    np.savez(f, M=np.array([[2.0, 1.0], [1.0, 2.0]]), q=np.array([-1.0, 1.0]))
    out = runner.invoke(app, ["solve", str(f), "--json", "--sensitivities"])
    assert out.exit_code == 0
    sens = json.loads(out.stdout)["sensitivities"]
    assert sens["dz_dq"] == [[-0.5, 0.0], [0.0, 0.0]] and sens["degenerate"] is False and sens["degenerate_pairs"] == []
    out = runner.invoke(app, ["solve", str(repo_data / "fc3d" / "FC3D_Example1.npz"), "--json", "--sensitivities"])
    sens = json.loads(out.stdout)["sensitivities"]
    assert np.shape(sens["dr_dq"]) == (9, 9) and np.shape(sens["dr_dmu"]) == (9, 3) and len(sens["modes"]) == 3
    bad = tmp_path / "none.npz"
    np.savez(bad, M=np.array([[0.0, 1.0], [-1.0, 0.0]]), q=np.array([-1.0, -1.0]))  # w_2 = -z_1 - 1: no solution
    out = runner.invoke(app, ["solve", str(bad), "--json", "--sensitivities"])
    d = json.loads(out.stdout)
    assert d["status"] != "solved" and "not computed" in d["sensitivities"]["reason"]
