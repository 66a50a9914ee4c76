"""Malformed input never crashes the CLI: every file of the generated corpus
(``tests/malformed_corpus.py``) makes ``contactmp solve`` exit 2 with a message naming the field
and no traceback, refused before anything big is allocated; legal but extreme problems load and
solve with a status.

All cases run in ONE fresh interpreter (a driver that calls the real CLI in-process through
typer's CliRunner, after one warm-up solve of a 2 x 2 LCP), which also records the peak RSS and
the time of each case; a few cases also run as ``python -m contactmp.cli solve FILE`` processes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import malformed_corpus as mc
from contactmp.errors import InputError
from contactmp.io import MAX_BYTES_ENV, MAX_PROBLEM_BYTES, load_problem, max_problem_bytes

REPO = Path(__file__).resolve().parents[1]
CASES = mc.corpus_cases()
#: peak RSS the malformed cases may add to that of a solved 2 x 2 LCP (the issue's bound)
RSS_MARGIN_KB = 50 * 1024
#: the time one refused case may take in the warm driver (the issue's bound for the huge header)
CASE_TIME_S = 1.0

_DRIVER = r"""
import json, resource, sys, time, traceback
from typer.testing import CliRunner
from contactmp.cli import app

runner = CliRunner()


def run(path, env):
    t = time.perf_counter()
    r = runner.invoke(app, ["solve", path], env=env)
    out = {"code": r.exit_code, "output": r.output, "time_s": time.perf_counter() - t}
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        out["output"] += "".join(traceback.format_exception(r.exception))
    out["rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return out


jobs = json.loads(sys.stdin.read())
warmup = run(jobs["warmup"], {})
cases = {name: run(path, env) for name, (path, env) in jobs["cases"].items()}
legal = {name: run(path, {}) for name, path in jobs["legal"].items()}
print(json.dumps({"warmup": warmup, "cases": cases, "legal": legal}))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop(MAX_BYTES_ENV, None)
    return env


def _lcp2(folder: Path) -> Path:
    path = folder / "lcp2x2.npz"
    np.savez(path, M=np.array([[2.0, 1.0], [1.0, 2.0]]), q=np.array([-1.0, -1.0]))
    return path


@pytest.fixture(scope="module")
def corpus() -> Any:
    with tempfile.TemporaryDirectory(prefix="malformed-corpus-") as tmp:
        folder = Path(tmp)
        written = mc.write_corpus(folder)
        legal = mc.write_legal_extremes(folder / "legal")
        yield folder, written, legal


@pytest.fixture(scope="module")
def driven(corpus: Any) -> dict[str, Any]:
    """Every case through the CLI in one fresh interpreter."""
    folder, written, legal = corpus
    jobs = {
        "warmup": str(_lcp2(folder)),
        "cases": {name: (str(path), case.env) for name, (case, path) in written.items()},
        "legal": {name: str(path) for name, path in legal},
    }
    out = subprocess.run([sys.executable, "-c", _DRIVER], input=json.dumps(jobs), capture_output=True, text=True,
                         timeout=600, cwd=REPO, env=_env())
    assert out.returncode == 0, out.stderr[-5000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _assert_refused(result: dict[str, Any], field: str) -> None:
    text = " ".join(result["output"].split())  # rich wraps long lines
    assert "Traceback" not in result["output"], result["output"]
    assert result["code"] == 2, result["output"]
    assert f"error: {field}:" in text, (field, text)


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_malformed_file_exits_2_naming_the_field(driven: dict[str, Any], corpus: Any, name: str) -> None:
    case, _ = corpus[1][name]
    result = driven["cases"][name]
    _assert_refused(result, case.field)
    assert result["time_s"] < CASE_TIME_S, result


def test_corpus_covers_every_kind_of_file() -> None:
    suffixes = {Path(c.filename).suffix for c in CASES}
    assert suffixes == {".npz", ".dat", ".hdf5", ".json"}
    names = {c.name for c in CASES}
    for required in ("empty", "garbage", "pickle_file", "npz_nan_M", "npz_complex_M", "npz_string_q",
                     "npz_object_M", "fc3d_npz_lying_nc", "fc3d_npz_negative_mu", "fc3d_npz_nan_mu",
                     "dat_truncated_q", "dat_huge_header", "fc3d_sbm_sizes_decrease", "npz_huge_header",
                     "npz_directory_lies_size", "h5_no_vectors", "h5_q_wrong_length", "h5_i_out_of_range",
                     "h5_huge_declared_x", "json_oversized"):
        assert required in names, required
    assert len(CASES) >= 100


def test_nothing_big_is_allocated_and_nothing_is_unpickled_or_loaded(driven: dict[str, Any], corpus: Any) -> None:
    folder = corpus[0]
    base = driven["warmup"]["rss_kb"]
    assert driven["warmup"]["code"] == 0, driven["warmup"]["output"]
    peak = max(r["rss_kb"] for r in driven["cases"].values())
    assert peak - base <= RSS_MARGIN_KB, {n: r["rss_kb"] - base for n, r in driven["cases"].items()}
    assert not (folder / mc.UNPICKLED_MARKER).exists()
    assert not (folder / mc.LIBRARY_MARKER).exists()


def test_legal_but_extreme_problems_load_and_report_a_status(driven: dict[str, Any], corpus: Any) -> None:
    for name, path in corpus[2]:
        kind, arrays = load_problem(path)
        assert all(a.dtype == np.float64 for a in arrays), name
        result = driven["legal"][name]
        # exit 0 when solved, 1 for another status (lcp_negative_definite, lcp_subnormal: ray_termination;
        # fc3d_indefinite_W, fc3d_hdf5_indefinite: max_iter); never 2 (the input is legal) nor a traceback
        assert result["code"] in (0, 1) and "Traceback" not in result["output"], (name, result["output"])
        assert "status" in result["output"], (name, result["output"])


def _run_cli(path: Path, out: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    full = _env()
    full.update(env or {})
    with open(out, "wb") as fh:
        return subprocess.Popen([sys.executable, "-m", "contactmp.cli", "solve", str(path)], stdout=fh,
                                stderr=subprocess.STDOUT, cwd=REPO, env=full)


def test_real_cli_processes_refuse_without_a_traceback(corpus: Any, tmp_path: Path) -> None:
    """``python -m contactmp.cli solve FILE`` for a few cases (one process each, run together); the
    200000 x 200000 header peaks at most 50 MB above the solve of a 2 x 2 LCP."""
    written = corpus[1]
    names = ["npz_huge_header", "fc3d_sbm_huge_dims", "h5_huge_declared_x",
             "json_external_g_fun" if "json_external_g_fun" in written else "json_oversized"]
    jobs = {name: (written[name][1], written[name][0].env) for name in names}
    jobs["lcp2x2"] = (_lcp2(tmp_path), {})
    procs = {name: (_run_cli(path, tmp_path / f"{name}.out", env), tmp_path / f"{name}.out")
             for name, (path, env) in jobs.items()}
    rss: dict[str, int] = {}
    for name, (proc, _) in procs.items():
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        rss[name] = usage.ru_maxrss
    for name, (proc, out) in procs.items():
        text = out.read_text()
        if name == "lcp2x2":
            assert proc.returncode == 0, text
            continue
        _assert_refused({"code": proc.returncode, "output": text}, written[name][0].field)
    assert rss["npz_huge_header"] <= rss["lcp2x2"] + RSS_MARGIN_KB, rss


# --------------------------------------------------------------------------------------------
# the size cap: constant, environment variable, keyword


def test_the_cap_is_the_constant_unless_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_BYTES_ENV, raising=False)
    assert max_problem_bytes() == MAX_PROBLEM_BYTES == 4 * 2**30
    monkeypatch.setenv(MAX_BYTES_ENV, "512M")
    assert max_problem_bytes() == 512 * 2**20
    assert max_problem_bytes(1000) == 1000  # the keyword wins
    assert max_problem_bytes("2g") == 2 * 2**30
    for bad, fld in (("lots", MAX_BYTES_ENV), ("-1", MAX_BYTES_ENV), ("0", MAX_BYTES_ENV)):
        monkeypatch.setenv(MAX_BYTES_ENV, bad)
        with pytest.raises(InputError) as exc:
            max_problem_bytes()
        assert exc.value.field == fld
    with pytest.raises(InputError) as exc:
        max_problem_bytes(0)
    assert exc.value.field == "max_bytes"


def test_keyword_and_environment_lower_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_BYTES_ENV, raising=False)
    p = tmp_path / "p.npz"
    np.savez_compressed(p, M=np.eye(100), q=np.ones(100))  # 80 KB as float64, a small file
    assert load_problem(p)[0] == "lcp"
    with pytest.raises(InputError) as exc:
        load_problem(p, max_bytes="64K")
    assert exc.value.field == "M" and "size cap" in str(exc.value) and "refused before allocating" in str(exc.value)
    monkeypatch.setenv(MAX_BYTES_ENV, "64K")
    with pytest.raises(InputError) as exc:
        load_problem(p)
    assert exc.value.field == "M"
    assert load_problem(p, max_bytes=2**20)[0] == "lcp"  # the keyword wins over the variable
