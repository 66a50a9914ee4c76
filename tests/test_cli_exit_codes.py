"""Exit codes of the command line (issue 36, item 6): 0 success, 1 ran without success, 2 bad input.

``solve``: 0 when the status is solved, 1 for any other status (the report is printed all the
same), 2 for a missing or malformed file and for bad options or values. ``multistart``: 0 when at
least one verified solution was found, 1 when none was, 2 for bad input (nothing written).
``study``: 0 when it ran, 2 for bad input. ``list``: 0. Every command's ``--help`` says so.

The problems are written here (tmp_path), so these tests depend on no shared data.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import contactmp.case_studies as case_studies
from contactmp.cli import EXIT_BAD_INPUT, EXIT_NOT_SOLVED, EXIT_OK, app
from contactmp.errors import InputError

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]


def _npz(path: Path, **arrays: Any) -> Path:
    np.savez(path, **{k: np.asarray(v, dtype=float) for k, v in arrays.items()})
    return path


@pytest.fixture
def files(tmp_path: Path) -> SimpleNamespace:
    """A solvable LCP, an LCP without solution, an LCP with three solutions, a solvable fc3d
    problem, an fc3d problem without solution and a malformed file."""
    return SimpleNamespace(
        good=_npz(tmp_path / "good.npz", M=np.eye(2), q=[1.0, -1.0]),  # z = (0, 1)
        # w = -z - 1 < 0 for every z >= 0: no solution (Lemke ends on a secondary ray)
        none=_npz(tmp_path / "none.npz", M=[[-1.0]], q=[-1.0]),
        three=_npz(tmp_path / "three.npz", M=[[1.0, 2.0], [2.0, 1.0]], q=[-1.0, -1.0]),
        fc3d=_npz(tmp_path / "fc3d.npz", W=np.eye(3), q=[-1.0, 0.0, 0.0], mu=[0.5]),  # r = (1, 0, 0)
        # u = -r + q: u_n = -r_n - 1 < 0 whatever r in the cone: no solution
        fc3d_none=_npz(tmp_path / "fc3d_none.npz", W=-np.eye(3), q=[-1.0, 0.0, 0.0], mu=[0.5]),
        malformed=_write(tmp_path / "malformed.npz", "not a problem file\n"),
        dir=tmp_path,
    )


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _json(out: Any) -> dict[str, Any]:
    return json.loads(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------------
# solve
# ------------------------------------------------------------------------------------------------
def test_the_codes_are_the_convention() -> None:
    assert (EXIT_OK, EXIT_NOT_SOLVED, EXIT_BAD_INPUT) == (0, 1, 2)


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["table", "json"])
def test_solve_exits_0_when_solved(files: SimpleNamespace, json_flag: list[str]) -> None:
    out = runner.invoke(app, ["solve", str(files.good), *json_flag])
    assert out.exit_code == 0, out.output
    assert "solved" in out.stdout


def test_solve_of_an_lcp_without_solution_exits_1_and_still_reports(files: SimpleNamespace) -> None:
    """The README's case: M = [-1], q = [-1] has no solution; the default solvers end with
    ray_termination, which is reported (table or JSON) and exits 1."""
    out = runner.invoke(app, ["solve", str(files.none), "--json"])
    assert out.exit_code == 1, out.output
    d = _json(out)
    assert d["status"] == "ray_termination" and d["z"] is not None
    table = runner.invoke(app, ["solve", str(files.none), "--solver", "lemke"])
    assert table.exit_code == 1 and "ray_termination" in table.stdout


def test_solve_cut_short_by_the_time_limit_exits_1(tmp_path: Path) -> None:
    """status time_limit is not solved: exit 1, with the best iterate reported."""
    n = 400
    path = _npz(tmp_path / "laplacian.npz", M=2.0 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1),
                q=-np.ones(n) / n**2)
    out = runner.invoke(app, ["solve", str(path), "--solver", "pgs", "--tol", "1e-14", "--time-limit", "0.05",
                              "--json"])
    assert out.exit_code == 1, out.output
    assert _json(out)["status"] == "time_limit"


def test_solve_fc3d_exits_0_when_solved_and_1_when_not(files: SimpleNamespace) -> None:
    out = runner.invoke(app, ["solve", str(files.fc3d), "--json"])
    assert out.exit_code == 0, out.output
    assert _json(out)["status"] == "solved" and _json(out)["kind"] == "fc3d"
    out = runner.invoke(app, ["solve", str(files.fc3d_none), "--solver", "newton", "--json"])
    assert out.exit_code == 1, out.output
    assert _json(out)["status"] != "solved"


@pytest.mark.parametrize("case", ["malformed", "missing", "directory", "unknown option", "bad float",
                                  "unknown solver", "bad time limit", "lcp solver on fc3d"])
def test_solve_bad_input_exits_2(files: SimpleNamespace, case: str) -> None:
    args = {
        "malformed": [str(files.malformed)],
        "missing": [str(files.dir / "no_such_file.npz")],
        "directory": [str(files.dir)],
        "unknown option": [str(files.good), "--bogus"],
        "bad float": [str(files.good), "--tol", "abc"],
        "unknown solver": [str(files.good), "--solver", "lemk"],
        "bad time limit": [str(files.good), "--time-limit", "-1"],
        "lcp solver on fc3d": [str(files.fc3d), "--solver", "lemke"],
    }[case]
    out = runner.invoke(app, ["solve", *args])
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output


def test_the_contactmp_process_exits_with_the_code(files: SimpleNamespace) -> None:
    """Through ``main`` (the installed command ends the process with ``os._exit``), not only ``app``."""
    codes = {}
    for name in ("good", "none", "malformed"):
        proc = subprocess.run([sys.executable, "-m", "contactmp.cli", "solve", str(getattr(files, name)), "--json",
                               "--solver", "lemke"], capture_output=True, text=True, cwd=REPO, timeout=300)
        codes[name] = proc.returncode
    assert codes == {"good": 0, "none": 1, "malformed": 2}


# ------------------------------------------------------------------------------------------------
# multistart
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["table", "json"])
def test_multistart_exits_0_with_a_verified_solution(files: SimpleNamespace, tmp_path: Path,
                                                     json_flag: list[str]) -> None:
    out = runner.invoke(app, ["multistart", str(files.three), "--starts", "10", "--out", str(tmp_path / "ms"),
                              *json_flag])
    assert out.exit_code == 0, out.output
    summary = json.loads((tmp_path / "ms" / "summary.json").read_text())
    assert summary["n_distinct"] >= 1


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["table", "json"])
def test_multistart_exits_1_without_a_verified_solution(files: SimpleNamespace, tmp_path: Path,
                                                        json_flag: list[str]) -> None:
    out = runner.invoke(app, ["multistart", str(files.none), "--starts", "3", "--out", str(tmp_path / "ms"),
                              *json_flag])
    assert out.exit_code == 1, out.output
    summary = json.loads((tmp_path / "ms" / "summary.json").read_text())  # the summary is written all the same
    assert summary["n_distinct"] == 0 and summary["n_run"] == 3


def test_multistart_fc3d_exits_0(files: SimpleNamespace, tmp_path: Path) -> None:
    out = runner.invoke(app, ["multistart", str(files.fc3d), "--starts", "3", "--out", str(tmp_path / "ms"),
                              "--json"])
    assert out.exit_code == 0, out.output
    assert _json(out)["n_distinct"] == 1


@pytest.mark.parametrize("case", ["malformed", "missing", "zero starts", "unknown option", "bad time limit"])
def test_multistart_bad_input_exits_2_and_writes_nothing(files: SimpleNamespace, tmp_path: Path, case: str) -> None:
    out_dir = tmp_path / "ms"
    args = {
        "malformed": [str(files.malformed)],
        "missing": [str(files.dir / "no_such_file.npz")],
        "zero starts": [str(files.good), "--starts", "0"],
        "unknown option": [str(files.good), "--bogus"],
        "bad time limit": [str(files.good), "--time-limit", "0"],
    }[case]
    out = runner.invoke(app, ["multistart", *args, "--out", str(out_dir)])
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output
    assert not out_dir.exists()


# ------------------------------------------------------------------------------------------------
# study and list
# ------------------------------------------------------------------------------------------------
class _FakeStudy:
    """A study module in miniature: ``run`` writes table.md (or refuses its input)."""

    DESCRIPTION = "a stand-in study"

    @staticmethod
    def run(out: Path, quick: bool, seed: int) -> dict[str, Any]:
        if seed == 7:
            raise InputError("seed", "7 is refused by this stand-in")
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "table.md").write_text("# fake\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
        return {"headline": "fake headline"}


@pytest.fixture
def fake_study(monkeypatch: pytest.MonkeyPatch) -> None:
    real = case_studies.study_module
    monkeypatch.setattr(case_studies, "study_module", lambda name: _FakeStudy if name == "fake" else real(name))


@pytest.mark.usefixtures("fake_study")
def test_study_exits_0_when_it_ran_and_2_on_bad_input(tmp_path: Path) -> None:
    out = runner.invoke(app, ["study", "fake", "--out", str(tmp_path / "f")])
    assert out.exit_code == 0, out.output
    assert "fake headline" in out.stdout
    for args in (["fake", "--seed", "7"],  # the study's own input check (InputError)
                 ["no-such-study"],  # unknown study
                 ["fake", "--only", "x"],  # an option the study does not have
                 ["fake", "--time-limit", "5"],
                 ["fake", "--seed", "-1"],  # a bad value
                 ["fake", "--bogus"]):  # an unknown option
        out = runner.invoke(app, ["study", *args, "--out", str(tmp_path / "g")])
        assert out.exit_code == 2, (args, out.output)
        assert "Traceback" not in out.output


def test_list_exits_0() -> None:
    out = runner.invoke(app, ["list"])
    assert out.exit_code == 0, out.output


@pytest.mark.parametrize("command, says", [
    ("solve", "1 for any other status"),
    ("multistart", "0 when at least one verified solution was found"),
    ("study", "0 when the study ran"),
    ("list", "Exit code: 0."),
    (None, "Exit codes: 0 success"),
])
def test_help_documents_the_exit_codes(command: str | None, says: str) -> None:
    out = runner.invoke(app, [command, "--help"] if command else ["--help"])
    assert out.exit_code == 0
    text = " ".join(out.output.replace("│", " ").split())  # rich wraps and boxes the help
    assert says in text, text
    if command in ("solve", "multistart", "study"):
        assert "2 for bad input" in text
