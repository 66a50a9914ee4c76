"""Start-up cost: what ``import contactmp`` and ``contactmp solve`` load, and the Pyomo plugin hook.

Each check runs in a fresh interpreter (a subprocess), since this test process has long imported
everything.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: modules a solve of an LCP or fc3d file never needs (each costs 0.1-1.5 s to import)
HEAVY = ("casadi", "pyomo", "dask", "distributed", "matplotlib", "h5py", "networkx", "adam")


def _run(code: str) -> dict:
    """Run ``code`` in a new interpreter; it prints one JSON object as its last line."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


_LOADED = "sorted({m.split('.')[0] for m in sys.modules} & set(%r))" % (HEAVY,)


def test_import_contactmp_loads_no_heavy_module():
    loaded = _run(f"import sys, json, contactmp\nprint(json.dumps({_LOADED}))")
    assert loaded == []


@pytest.mark.parametrize("order", ["contactmp first", "pyomo first"])
def test_plugin_registered_once_pyomo_environ_is_imported(order):
    imports = ("import contactmp; import pyomo.environ as pyo" if order == "contactmp first"
               else "import pyomo.environ as pyo; import contactmp")
    got = _run(f"import sys, json\n{imports}\n"
               "print(json.dumps([pyo.SolverFactory('contactmp_ipopt').available(exception_flag=False),"
               " 'contactmp.solvers.nlp.pyomo_ipopt' in sys.modules]))")
    assert got == [True, True]


@pytest.mark.parametrize("problem", ["lcp/lcp_CPS_1.npz", "fc3d/FC3D_Example1.npz"])
def test_cli_solve_of_a_small_problem_loads_no_heavy_module(repo_data, problem):
    path = repo_data / problem
    code = (
        "import sys, json, io, contextlib\n"
        "from contactmp.cli import app\n"
        f"sys.argv = ['contactmp', 'solve', {str(path)!r}, '--json']\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    try:\n"
        "        app()\n"
        "    except SystemExit as exc:\n"
        "        code = exc.code\n"
        f"print(json.dumps({{'code': code, 'status': json.loads(buf.getvalue())['status'], 'heavy': {_LOADED}}}))"
    )
    got = _run(code)
    assert got == {"code": 0, "status": "solved", "heavy": []}
