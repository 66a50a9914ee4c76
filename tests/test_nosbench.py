"""NOSBENCH MPCCs: loading (with the security checks), the Program, the paper's criterion.

The reader, the Program and the solver paths run on a small MPCC that this file writes in NOSBENCH's
CasADi JSON format (:func:`write_generated`), so they are covered on a bare clone. The same
assertions on real NOSBENCH problems run when ``$CONTACTMP_NOSBENCH`` points at the folder holding
``nosbench/`` (``python tools/fetch_nosbench.py DEST``) and skip otherwise: NOSBENCH states no
licence, so it is not in the repository."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

from contactmp.errors import InputError
from contactmp.nosbench import COMP_TOL, FEAS_TOL, load_nosbench, to_program
from contactmp.solvers.nlp.nosbench import solve_nosbench

#: small real NOSBENCH problems (in ``$CONTACTMP_NOSBENCH/nosbench``)
SMALL = ["CLS1D_002_001_002_1_GL_CLS_4_ELC_0", "986OM_001_001_002_2_RIIA_STEP_7_FIL_0",
         "2BCLS_001_001_002_3_GL_CLS_7_ELC_0"]


def write_generated(path: Path) -> Path:
    """Write a small MPCC in NOSBENCH's CasADi JSON format to ``path`` (and return it).

    w = (x1, x2, s), p = (a,) with p0 = [1]: minimize (x1 - a)^2 + (x2 - a)^2 + (s - 1/2)^2 subject to
    0 <= w <= 10, 0 <= x1 + x2 + s <= 5 and 0 <= x1 _|_ x2 >= 0. Its solutions are (1, 0, 1/2) and
    (0, 1, 1/2), f = 1. The fields and their meaning are NOSBENCH's (serialized SX ``w``, ``p``,
    serialized Functions of (w, p), numeric vectors); the functions are plain SX graphs.
    """
    w, p = ca.SX.sym("w", 3), ca.SX.sym("p", 1)
    f = (w[0] - p[0]) ** 2 + (w[1] - p[0]) ** 2 + (w[2] - 0.5) ** 2
    fun = {
        "g_fun": ca.Function("g_fun", [w, p], [w[0] + w[1] + w[2]]),
        "G_fun": ca.Function("G_fun", [w, p], [w[0]]),
        "H_fun": ca.Function("H_fun", [w, p], [w[1]]),
        "objective_fun": ca.Function("objective_fun", [w, p], [f]),
        "augmented_objective_fun": ca.Function("augmented_objective_fun", [w, p], [f]),
    }
    d = {"w": w.serialize(), "p": p.serialize(), **{k: v.serialize() for k, v in fun.items()},
         "w0": [0.5, 0.5, 0.0], "lbw": [0.0, 0.0, 0.0], "ubw": [10.0, 10.0, 10.0], "p0": [1.0],
         "lbg": [0.0], "ubg": [5.0]}
    path.write_text(json.dumps(d))
    return path


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated MPCC's file (:func:`write_generated`)."""
    return write_generated(tmp_path_factory.mktemp("nosbench") / "GENERATED_MPCC.json")


@pytest.fixture(params=["generated", SMALL[0]])
def small(request: pytest.FixtureRequest, generated: Path) -> Path:
    """A small problem file: the generated MPCC, or a real NOSBENCH problem (skips when absent)."""
    if request.param == "generated":
        return generated
    return request.getfixturevalue("nosbench_data") / f"{request.param}.json"


def _raw(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def _paper_check(d: dict, w: np.ndarray) -> tuple[float, float]:
    """Feasibility and max G_i H_i at w, from the file's functions deserialized here directly."""
    p = np.asarray(d["p0"], dtype=float)
    fun = {k: ca.Function.deserialize(d[k]) for k in ("g_fun", "G_fun", "H_fun")}
    g = np.asarray(fun["g_fun"](w, p)).ravel()
    G = np.asarray(fun["G_fun"](w, p)).ravel()
    H = np.asarray(fun["H_fun"](w, p)).ravel()
    lbw, ubw = np.asarray(d["lbw"], float), np.asarray(d["ubw"], float)
    lbg, ubg = np.asarray(d["lbg"], float), np.asarray(d["ubg"], float)
    feas = max(np.max(lbw - w, initial=0), np.max(w - ubw, initial=0),
               np.max(lbg - g, initial=0), np.max(g - ubg, initial=0))
    return float(feas), float(np.max(G * H))


def test_load_and_program_match_the_file(small):
    d = _raw(small)
    prob = load_nosbench(small)
    assert prob.n_w == len(d["w0"]) and prob.n_g == len(d["lbg"])
    prog, h = to_program(prob)
    assert prog.n_x == prob.n_w and prog.n_comp == prob.n_comp and prog.n_g == prob.n_g
    # the Program evaluates to the file's functions at a random point (no sign constraints added)
    rng = np.random.default_rng(0)
    w = rng.normal(size=prob.n_w)
    ev = prog.evaluate(w)
    p = np.asarray(d["p0"], float)
    np.testing.assert_allclose(ev["g"], np.asarray(ca.Function.deserialize(d["g_fun"])(w, p)).ravel(), atol=1e-12)
    np.testing.assert_allclose(ev["a"], np.asarray(ca.Function.deserialize(d["G_fun"])(w, p)).ravel(), atol=1e-12)
    np.testing.assert_allclose(ev["b"], np.asarray(ca.Function.deserialize(d["H_fun"])(w, p)).ravel(), atol=1e-12)
    assert ev["f"] == pytest.approx(float(ca.Function.deserialize(d["objective_fun"])(w, p)))


def test_scholtes_solves_the_generated_mpcc(generated):
    out = solve_nosbench(generated, time_limit=30.0)
    assert out["status"] == "solved", out["message"]
    w = np.asarray(out["w"], dtype=float)
    feas, comp = _paper_check(_raw(generated), w)
    assert feas <= FEAS_TOL and comp <= COMP_TOL
    # one of the two solutions, (1, 0, 1/2) or (0, 1, 1/2)
    assert min(np.abs(w - [1, 0, 0.5]).max(), np.abs(w - [0, 1, 0.5]).max()) <= 1e-4


@pytest.mark.parametrize("name", SMALL)
def test_scholtes_solves_small_problems_by_the_paper_criterion(name, nosbench_data):
    path = nosbench_data / f"{name}.json"
    out = solve_nosbench(path, time_limit=30.0)
    assert out["status"] == "solved", out["message"]
    w = np.asarray(out["w"], dtype=float)
    feas, comp = _paper_check(_raw(path), w)
    assert feas <= FEAS_TOL
    assert comp <= COMP_TOL
    assert out["comp_residual"] == pytest.approx(comp, abs=1e-12)
    json.dumps(out)  # JSON-ready


def _write(tmp_path: Path, d: dict, name: str = "crafted.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(d))
    return p


@pytest.mark.parametrize("field", ["lbg", "G_fun", "w0"])
def test_missing_field_is_named(tmp_path, field, generated):
    d = _raw(generated)
    del d[field]
    with pytest.raises(InputError) as ei:
        load_nosbench(_write(tmp_path, d))
    assert ei.value.field == field


def test_malformed_fields_are_named(tmp_path, generated):
    base = _raw(generated)
    xs = ca.SX.sym("x", 3)
    cases = {
        "g_fun": "not-casadi!",
        "H_fun": ca.Function("h", [xs], [2 * xs]).serialize(),  # one input, not (w, p)
        "lbw": base["lbw"][:-1],
        "p0": [float("nan")] * len(base["p0"]),
    }
    for field, value in cases.items():
        d = dict(base)
        d[field] = value
        with pytest.raises(InputError) as ei:
            load_nosbench(_write(tmp_path, d))
        assert ei.value.field == field
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(InputError) as ei:
        load_nosbench(tmp_path / "bad.json")
    assert ei.value.field == "path"


def test_mx_call_to_a_non_graph_function_is_rejected(tmp_path, generated):
    d = _raw(generated)
    n_w, n_p, n_c = len(d["w0"]), len(d["p0"]), ca.Function.deserialize(d["G_fun"]).numel_out(0)
    interp = ca.interpolant("lut", "linear", [[0.0, 1.0, 2.0]], [0.0, 1.0, 4.0])
    W, P = ca.MX.sym("w", n_w), ca.MX.sym("p", n_p)
    d["G_fun"] = ca.Function("G", [W, P], [ca.repmat(interp(W[0]), n_c, 1)]).serialize()
    with pytest.raises(InputError) as ei:
        load_nosbench(_write(tmp_path, d))
    assert ei.value.field == "G_fun"
    assert "Interpolant" in str(ei.value) or "plain" in str(ei.value)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build an external")
def test_external_function_is_rejected_before_its_library_loads(tmp_path, generated):
    marker = tmp_path / "LOADED"
    src = tmp_path / "ext.c"
    gen = textwrap.dedent("""
        import casadi as ca
        x = ca.SX.sym("x"); ca.Function("sq", [x], [x * x]).generate("gen.c")
    """)
    subprocess.run([sys.executable, "-c", gen], check=True, cwd=tmp_path)
    src.write_text((tmp_path / "gen.c").read_text() + textwrap.dedent(f"""
        #include <stdio.h>
        __attribute__((constructor)) static void mark(void) {{
            FILE* f = fopen("{marker}", "w"); if (f) fclose(f);
        }}
    """))
    so = tmp_path / "libsq.so"
    subprocess.run(["gcc", "-shared", "-fPIC", str(src), "-o", str(so)], check=True)
    # serialize (in another process, which loads the library once) a bare external and an MX
    # graph calling it
    ser = textwrap.dedent(f"""
        import casadi as ca, json
        e = ca.external("sq", "{so}")
        X = ca.MX.sym("x")
        print(json.dumps([e.serialize(), ca.Function("wrap", [X], [e(X) + 1]).serialize()]))
    """)
    bare, wrapped = json.loads(subprocess.run([sys.executable, "-c", ser], check=True,
                                              capture_output=True, text=True).stdout)
    marker.unlink()
    for field, text in (("g_fun", bare), ("objective_fun", wrapped)):
        d = _raw(generated)
        d[field] = text
        with pytest.raises(InputError) as ei:
            load_nosbench(_write(tmp_path, d))
        assert ei.value.field == field
        assert "External" in str(ei.value)
    assert not marker.exists(), "the external library was loaded"


def test_cli_solve_json_prints_the_verified_answer(tmp_path, small):
    from typer.testing import CliRunner

    from contactmp.cli import app

    r = CliRunner().invoke(app, ["solve", str(small), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["kind"] == "mpcc" and out["status"] == "solved"
    feas, comp = _paper_check(_raw(small), np.asarray(out["w"], float))
    assert feas <= FEAS_TOL and comp <= COMP_TOL
    d = _raw(small)
    d["ubg"] = "oops"
    r = CliRunner().invoke(app, ["solve", str(_write(tmp_path, d)), "--json"])
    assert r.exit_code == 2


def test_size_cap_is_checked_before_parsing(tmp_path, monkeypatch, generated):
    from contactmp.io import JSON_EXPANSION

    monkeypatch.delenv("CONTACTMP_MAX_BYTES", raising=False)
    path = generated
    size = path.stat().st_size
    assert load_nosbench(path, max_bytes=size * JSON_EXPANSION).n_w > 0
    with pytest.raises(InputError) as ei:
        load_nosbench(path, max_bytes=size * JSON_EXPANSION - JSON_EXPANSION)
    assert ei.value.field == "path" and "size cap" in str(ei.value) and "before reading" in str(ei.value)
    monkeypatch.setenv("CONTACTMP_MAX_BYTES", str(size))
    with pytest.raises(InputError) as ei:
        load_nosbench(path)
    assert ei.value.field == "path"


def test_json_that_python_cannot_parse_is_named(tmp_path, generated):
    cases = {
        "deep.json": '{"w0": ' + "[" * 100000 + "]" * 100000 + "}",  # RecursionError in json
        "digits.json": '{"w0": [' + "7" * 5000 + "]}",  # beyond Python's int digit limit
        "latin1.json": '{"w0": "\xe9"}',
    }
    for name, text in cases.items():
        p = tmp_path / name
        p.write_bytes(text.encode("latin-1"))
        with pytest.raises(InputError) as ei:
            load_nosbench(p)
        assert ei.value.field == "path", name
    d = _raw(generated)
    d["w0"] = [10**400] + d["w0"][1:]  # an int too large for float64
    with pytest.raises(InputError) as ei:
        load_nosbench(_write(tmp_path, d))
    assert ei.value.field == "w0"


def test_is_nosbench_file_imports_neither_casadi_nor_the_program(generated):
    code = ("import sys, json\nfrom contactmp.nosbench import is_nosbench_file\n"
            f"is_nosbench_file({str(generated)!r})\n"
            "print(json.dumps(sorted(m for m in ('casadi', 'contactmp.program') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
