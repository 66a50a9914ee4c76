"""The one-way import graph (tools/import_graph.py): no layer imports above itself or sideways, and
nothing below the formulations branches on a formulation's name."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_tool():
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools" / "import_graph.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


ig = _load_tool()
IMPORTS = ig.all_imports(ROOT)


def test_the_tool_sees_the_whole_package():
    layers = {ig.file_layer(ROOT, p) for p in ig.package_files(ROOT)}
    assert layers == set(ig.LAYERS)
    assert {(i.source, i.target) for i in IMPORTS} >= {("formulations", "solvers"), ("solvers", "core")}


def test_the_tool_resolves_relative_and_function_level_imports(tmp_path):
    (tmp_path / "contactmp").mkdir()
    (tmp_path / "solvers").mkdir()
    (tmp_path / "contactmp" / "io.py").write_text("def f():\n    from .solvers import lcp\n")
    (tmp_path / "solvers" / "__init__.py").write_text("")
    (tmp_path / "solvers" / "lcp.py").write_text("from . import registry\nif x == 'pyramid':\n    pass\n")
    (tmp_path / "solvers" / "registry.py").write_text("")
    bad = ig.violations(ig.all_imports(tmp_path))
    assert [(v.file, v.line, v.module) for v in bad] == [("contactmp/io.py", 2, "contactmp.solvers.lcp")]
    assert [(c.file, c.names) for c in ig.name_comparisons(tmp_path)] == [("solvers/lcp.py", ("pyramid",))]
    assert "| core |" in ig.markdown(ig.all_imports(tmp_path), [])


def test_the_face_rule_catches_an_import_past_a_face(tmp_path):
    """Above solvers/, and from one solver subpackage into another, a subpackage is reached through
    its face (its ``__init__``); its siblings and the modules at the top of solvers/ may go deeper."""
    for folder in ("solvers/lcp", "solvers/fc3d", "formulations"):
        (tmp_path / folder).mkdir(parents=True)
    for f in ("solvers/__init__.py", "solvers/lcp/__init__.py", "solvers/fc3d/__init__.py", "solvers/lcp/lemke.py"):
        (tmp_path / f).write_text("")
    deep = "from contactmp.solvers.lcp.lemke import solve\n"
    (tmp_path / "solvers" / "registry.py").write_text(deep)  # the top of solvers/: allowed
    (tmp_path / "solvers" / "lcp" / "newton.py").write_text(deep)  # a sibling: allowed
    (tmp_path / "solvers" / "fc3d" / "newton.py").write_text(deep)  # another subpackage: past the face
    (tmp_path / "formulations" / "x.py").write_text("def f():\n    " + deep)  # above solvers/: past the face
    (tmp_path / "formulations" / "y.py").write_text("from contactmp.solvers.lcp import lemke_face_name\n")
    past = ig.face_violations(tmp_path, ig.all_imports(tmp_path))
    assert sorted((v.file, v.line) for v in past) == [("formulations/x.py", 2), ("solvers/fc3d/newton.py", 1)]


def test_the_private_import_rule_catches_a_probe(tmp_path):
    """Another module's underscore name is refused; a package's private module is not."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "_helpers.py").write_text("def _x():\n    pass\n")
    (tmp_path / "models" / "a.py").write_text("from contactmp.models._helpers import _x\n"
                                              "from contactmp.models import _helpers\nfrom . import _helpers as h\n")
    found = ig.private_imports(tmp_path)
    assert [(p.file, p.line, p.name) for p in found] == [("models/a.py", 1, "_x")]


def test_no_module_imports_another_modules_private_names():
    assert [str(p) for p in ig.private_imports(ROOT)] == []


def test_no_module_tests_a_class_by_its_name(tmp_path):
    (tmp_path / "solvers").mkdir()
    (tmp_path / "solvers" / "a.py").write_text("if type(p).__name__ == 'ContactImplicitTO':\n    pass\n"
                                               "if __name__ == '__main__':\n    pass\n")
    assert [(c.file, c.line) for c in ig.class_name_tests(tmp_path)] == [("solvers/a.py", 1)]
    assert [str(c) for c in ig.class_name_tests(ROOT)] == []


def test_module_paths_in_strings_are_edges_and_dynamic_imports_have_them(tmp_path):
    """A registry's lazy entries (dotted module names in strings) count as imports, so the layer and
    face rules see them; an ``import_module`` call on a computed name is refused unless its file
    names its modules in such strings."""
    for folder in ("solvers", "models"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "formulations").mkdir()
    (tmp_path / "formulations" / "__init__.py").write_text("")
    (tmp_path / "formulations" / "x.py").write_text("")
    (tmp_path / "solvers" / "registry.py").write_text(
        "import importlib\nTABLE = {'x': 'contactmp.formulations.x'}\n"
        "def load(n):\n    return importlib.import_module(TABLE[n])\n")
    (tmp_path / "models" / "hidden.py").write_text("import importlib\ndef f(n):\n    return importlib.import_module(n)\n")
    imports = ig.all_imports(tmp_path)
    assert [(v.file, v.module) for v in ig.violations(imports)] == [("solvers/registry.py", "contactmp.formulations.x")]
    found = {c.file: c.names for c in ig.dynamic_imports(tmp_path)}
    assert found == {"solvers/registry.py": ("contactmp.formulations.x",), "models/hidden.py": ()}


def test_every_dynamic_import_names_its_modules_in_strings():
    """The registries (solver modules by name) and the studies' table: their dynamic imports read
    tables of dotted names, which the graph counts; no other dynamic import of contactmp."""
    found = {c.file: c.names for c in ig.dynamic_imports(ROOT)}
    assert set(found) <= {"solvers/registry.py", "case_studies/__init__.py", "models/example_robots.py"}
    # example_robots imports a third-party robot loader by name (no contactmp module)
    assert all(names for f, names in found.items() if f != "models/example_robots.py")


def test_solver_subpackages_are_reached_through_their_faces():
    assert ig.solver_subpackages(ROOT) == {"lcp", "fc3d", "cone_qp", "nlp", "pgm"}
    assert [str(v) for v in ig.face_violations(ROOT, IMPORTS)] == []


@pytest.mark.parametrize("layer", ig.LAYERS)
def test_no_layer_imports_above_itself(layer):
    bad = [str(v) for v in ig.violations(IMPORTS) if v.source == layer]
    assert bad == []


@pytest.mark.parametrize("layer", ig.NAME_CHECKED_LAYERS)
def test_no_formulation_name_comparisons_below_the_formulations(layer):
    found = [str(c) for c in ig.name_comparisons(ROOT, (layer,))]
    assert found == []


#: solver backends: only solvers/ may call them (formulations build problems and call solvers/)
BACKEND_ATTRIBUTES = frozenset({"conic", "qpsol", "nlpsol", "rootfinder", "cho_factor", "cho_solve", "lu_factor"})
BACKEND_MODULES = ("cyipopt", "scipy.optimize", "pyomo.opt")


def _backend_uses(path: Path, root: Path = ROOT) -> list[str]:
    import ast

    where = path.relative_to(root)
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in BACKEND_ATTRIBUTES:
            out.append(f"{where}:{node.lineno} .{node.attr}")
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                 if isinstance(node, ast.ImportFrom) else [])
        out += [f"{where}:{node.lineno} import {n}" for n in names
                if n.startswith(BACKEND_MODULES) or n.rsplit(".", 1)[-1] in BACKEND_ATTRIBUTES]
    return out


@pytest.mark.parametrize("layer", ["models", "formulations", "transcriptions"])
def test_solver_backends_are_called_only_in_solvers(layer):
    files = [p for p in ig.package_files(ROOT) if ig.file_layer(ROOT, p) == layer]
    assert files
    assert [u for p in files for u in _backend_uses(p)] == []


def test_the_backend_check_sees_a_backend(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text("import casadi as ca\nfrom scipy.linalg import cho_factor\nS = ca.nlpsol('s', 'ipopt', {})\n")
    assert [u.split(" ", 1)[1] for u in _backend_uses(bad, tmp_path)] == ["import scipy.linalg.cho_factor", ".nlpsol"]
