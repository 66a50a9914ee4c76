"""The import graph of contactmp's layers, from the source's AST, and what breaks the one-way rule.

    python tools/import_graph.py [ROOT] [--markdown]

Layers (a file's layer is its folder; ``contactmp/cli.py`` and ``contactmp/__init__.py`` are the
``cli`` layer, every other ``contactmp/*.py`` the ``core``)::

    core            imports core
    solvers         imports core, solvers
    models          imports core, models
    formulations    imports core, models, solvers, formulations
    transcriptions  imports core, models, solvers, formulations, transcriptions
    case_studies    imports anything
    cli             imports anything

Every ``import`` / ``from ... import`` statement counts, wherever it is (inside a function, under
``if TYPE_CHECKING``); relative imports are resolved; only imports of ``contactmp`` modules count.
A second check lists comparisons (``==``, ``!=``, ``in``, ...) against a formulation's name
(:data:`FORMULATION_NAMES`) in the core, solvers and transcriptions: code below the formulations
that branches on which formulation it got (case studies may).

Without ``--markdown`` it prints the violations and the comparisons, one a line; with it, the
graph as a markdown table (rows: importing layer, columns: imported layer, cells: number of import
statements) followed by the same lists. A third check lists imports that reach past a solver
subpackage's face (:func:`face_violations`), a fourth imports of another module's underscore names
(:func:`private_imports`). The exit code is 0 when the lists are empty, else 1.
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

#: the folders of the installed package: folder -> its module prefix
FOLDERS: dict[str, str] = {
    "contactmp": "contactmp",
    "solvers": "contactmp.solvers",
    "models": "contactmp.models",
    "formulations": "contactmp.formulations",
    "transcriptions": "contactmp.transcriptions",
    "case_studies": "contactmp.case_studies",
}
#: layers, bottom to top (the table's order)
LAYERS: tuple[str, ...] = ("core", "solvers", "models", "formulations", "transcriptions", "case_studies", "cli")
#: what each layer may import
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset({"core"}),
    "solvers": frozenset({"core", "solvers"}),
    "models": frozenset({"core", "models"}),
    "formulations": frozenset({"core", "models", "solvers", "formulations"}),
    "transcriptions": frozenset({"core", "models", "solvers", "formulations", "transcriptions"}),
    "case_studies": frozenset(LAYERS),
    "cli": frozenset(LAYERS),
}
#: the formulation names that code below the formulations must not compare against
FORMULATION_NAMES: frozenset[str] = frozenset({"pyramid", "cone", "compliant", "nmdp", "mdp"})
#: the layers checked for such comparisons
NAME_CHECKED_LAYERS: tuple[str, ...] = ("core", "solvers", "transcriptions")
_TOP_FILES = frozenset({"cli.py", "__init__.py"})


@dataclass(frozen=True)
class Import:
    """One import statement of a contactmp module: where it is and which layers it joins."""

    file: str  #: path relative to the root, e.g. ``"contactmp/io.py"``
    line: int
    module: str  #: the imported module, resolved, e.g. ``"contactmp.solvers.lcp.problem"``
    source: str  #: the importing file's layer
    target: str  #: the imported module's layer

    @property
    def allowed(self) -> bool:
        """True when the one-way rule allows ``source`` to import ``target``."""
        return self.target in ALLOWED[self.source]

    def __str__(self) -> str:
        return f"{self.file}:{self.line} {self.source} -> {self.target} ({self.module})"


@dataclass(frozen=True)
class NameComparison:
    """A comparison (one ``ast.Compare``) against formulation names (string constants of
    :data:`FORMULATION_NAMES`, alone or in a tuple, list or set)."""

    file: str
    line: int
    layer: str
    names: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.file}:{self.line} {self.layer} compares against {', '.join(map(repr, self.names))}"


def package_files(root: Path) -> list[Path]:
    """Every ``.py`` file of the package folders under ``root`` (sorted, caches skipped)."""
    out: list[Path] = []
    for folder in FOLDERS:
        base = root / folder
        if base.is_dir():
            out.extend(p for p in base.rglob("*.py") if "__pycache__" not in p.parts)
    return sorted(out)


def parsed_files(root: Path, layers: tuple[str, ...] | None = None) -> Iterator[tuple[Path, ast.Module]]:
    """``(path, syntax tree)`` of every package file under ``root`` (of ``layers`` only, when given)."""
    for path in package_files(root):
        if layers is None or file_layer(root, path) in layers:
            yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def file_layer(root: Path, path: Path) -> str:
    """The layer of the package file ``path`` (see the module docstring)."""
    rel = path.relative_to(root)
    folder = rel.parts[0]
    if folder == "contactmp":
        return "cli" if len(rel.parts) == 2 and rel.name in _TOP_FILES else "core"
    if folder not in FOLDERS:
        raise ValueError(f"{rel} is not in a package folder ({', '.join(FOLDERS)})")
    return folder


def file_module(root: Path, path: Path) -> str:
    """The dotted module name of the package file ``path`` (a package's ``__init__`` is the package)."""
    rel = path.relative_to(root).with_suffix("")
    parts = [FOLDERS[rel.parts[0]], *rel.parts[1:]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_layer(module: str) -> str | None:
    """The layer of the dotted ``module`` (``None`` when it is not a contactmp module)."""
    parts = module.split(".")
    if parts[0] != "contactmp":
        return None
    if len(parts) == 1 or parts[1] == "cli":
        return "cli"
    for folder, prefix in FOLDERS.items():
        if folder != "contactmp" and parts[1] == prefix.split(".")[1]:
            return folder
    return "core"


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module of ``from <node.module> import ...`` written in ``module``."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def file_imports(root: Path, path: Path) -> list[Import]:
    """The contactmp imports of one package file, one per imported module of each statement.

    ``from contactmp import solvers`` (or ``from . import x``) counts as importing
    ``contactmp.solvers`` (``x``) when that is a package folder or module of its own."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    source = file_layer(root, path)
    module = file_module(root, path)
    rel = str(path.relative_to(root))
    out: list[Import] = []
    values = {id(v) for d in ast.walk(tree) if isinstance(d, ast.Dict) for v in d.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, module, path.name == "__init__.py")
            targets = sorted({_submodule(root, base, a.name) for a in node.names})
        elif id(node) in values and isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and _is_module_path(root, node.value):
            targets = [node.value]  # a module named by a table's string (a registry's lazy entry): an edge too
        else:
            continue
        for target in targets:
            layer = module_layer(target)
            if layer is not None:
                out.append(Import(rel, node.lineno, target, source, layer))
    return out


def _is_module_path(root: Path, text: str) -> bool:
    """``text`` is the dotted name of a contactmp module of the checkout under ``root``."""
    parts = text.split(".")
    if len(parts) < 2 or parts[0] != "contactmp" or not all(p.isidentifier() for p in parts):
        return False
    return _submodule(root, ".".join(parts[:-1]), parts[-1]) == text


def dynamic_imports(root: Path) -> list[NameComparison]:
    """Calls of ``importlib.import_module`` / ``__import__`` in the package whose argument is not a
    string literal: an edge the graph cannot see unless the module names are the values of a table
    (a dict) in the same file (a registry), which :func:`file_imports` counts. Listed with the
    file's tabled module paths in ``names`` (empty: nothing makes the edge visible)."""
    out: list[NameComparison] = []
    for path, tree in parsed_files(root):
        literals = tuple(sorted({v.value for d in ast.walk(tree) if isinstance(d, ast.Dict) for v in d.values
                                 if isinstance(v, ast.Constant) and isinstance(v.value, str)
                                 and _is_module_path(root, v.value)}))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.args and not isinstance(node.args[0], ast.Constant) and (
                    (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                    or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__"))):
                out.append(NameComparison(str(path.relative_to(root)), node.lineno, file_layer(root, path), literals))
    return out


def _submodule(root: Path, base: str, name: str) -> str:
    """``base.name`` when it is a module or package of the checkout under ``root``, else ``base``."""
    full = f"{base}.{name}"
    parts = full.split(".")
    if parts[0] != "contactmp" or len(parts) < 2:
        return base
    folder = next((f for f, p in FOLDERS.items() if f != "contactmp" and p == ".".join(parts[:2])), None)
    rest = parts[2:] if folder else parts[1:]
    where = root / (folder or "contactmp")
    target = where.joinpath(*rest) if rest else where
    if (target.with_suffix(".py").is_file() if rest else False) or (target / "__init__.py").is_file():
        return full
    return base


def all_imports(root: Path) -> list[Import]:
    """The contactmp imports of every package file under ``root``."""
    return [imp for path in package_files(root) for imp in file_imports(root, path)]


def violations(imports: list[Import]) -> list[Import]:
    """The imports the one-way rule forbids (an upward import or a sideways one, e.g. models -> solvers)."""
    return [imp for imp in imports if not imp.allowed]


def solver_subpackages(root: Path) -> frozenset[str]:
    """The subpackages of ``solvers/`` (folders with an ``__init__.py``): one per problem class."""
    base = root / "solvers"
    return frozenset(p.parent.name for p in base.glob("*/__init__.py")) if base.is_dir() else frozenset()


def face_violations(root: Path, imports: list[Import]) -> list[Import]:
    """Imports that reach past a solver subpackage's face: a module ``contactmp.solvers.<sub>.<mod>``
    imported from outside ``solvers/`` or from another subpackage of ``solvers/`` (the modules at the
    top of ``solvers/``, the registries and the front door, may reach the solvers' modules)."""
    subs = solver_subpackages(root)
    out = []
    for imp in imports:
        parts = imp.module.split(".")
        if len(parts) < 4 or parts[:2] != ["contactmp", "solvers"] or parts[2] not in subs:
            continue
        where = Path(imp.file).parts
        inside = where[0] == "solvers" and len(where) > 2
        if imp.source == "solvers" and (not inside or where[1] == parts[2]):
            continue  # the top of solvers/, or a sibling of the same subpackage
        out.append(imp)
    return out


@dataclass(frozen=True)
class PrivateImport:
    """``from contactmp.x import _y`` in a package file, ``_y`` a name of module ``x`` (not a
    module of a package: a package's private modules are its own business)."""

    file: str
    line: int
    module: str
    name: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} imports {self.name} from {self.module}"


def private_imports(root: Path) -> list[PrivateImport]:
    """Every import of an underscore name (not a dunder) of another contactmp module."""
    out: list[PrivateImport] = []
    for path, tree in parsed_files(root):
        module = file_module(root, path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _resolve(node, module, path.name == "__init__.py")
            if module_layer(base) is None:
                continue
            for a in node.names:
                private = a.name.startswith("_") and not a.name.startswith("__")
                if private and _submodule(root, base, a.name) == base:  # a name, not a module
                    out.append(PrivateImport(str(path.relative_to(root)), node.lineno, base, a.name))
    return out


def class_name_tests(root: Path) -> list[NameComparison]:
    """Comparisons of a ``__name__`` with a string constant in the package (``type(x).__name__ ==
    "ContactImplicitTO"``): a dependency the import graph cannot see; test a protocol instead."""
    out: list[NameComparison] = []
    for path, tree in parsed_files(root):
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            sides = (node.left, *node.comparators)
            named = any(isinstance(e, ast.Attribute) and e.attr == "__name__" for e in sides)
            strings = tuple(e.value for e in sides if isinstance(e, ast.Constant) and isinstance(e.value, str))
            if named and strings and "__main__" not in strings:
                out.append(NameComparison(str(path.relative_to(root)), node.lineno, file_layer(root, path), strings))
    return out


def _names_in(node: ast.expr) -> list[str]:
    """The formulation names among the string constants of ``node`` (or of its tuple/list/set)."""
    elts = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [e.value for e in elts if isinstance(e, ast.Constant) and e.value in FORMULATION_NAMES]


def name_comparisons(root: Path, layers: tuple[str, ...] = NAME_CHECKED_LAYERS) -> list[NameComparison]:
    """Every ``ast.Compare`` against a formulation name in the files of ``layers``."""
    out: list[NameComparison] = []
    for path, tree in parsed_files(root, layers):
        layer = file_layer(root, path)
        rel = str(path.relative_to(root))
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                names = tuple(sorted({n for side in (node.left, *node.comparators) for n in _names_in(side)}))
                if names:
                    out.append(NameComparison(rel, node.lineno, layer, names))
    return sorted(out, key=lambda c: (c.file, c.line, c.names))


def graph_counts(imports: list[Import]) -> dict[tuple[str, str], int]:
    """Number of import statements per ``(importing layer, imported layer)``."""
    counts: dict[tuple[str, str], int] = {}
    seen: set[tuple[str, int, str]] = set()
    for imp in imports:
        key = (imp.file, imp.line, imp.target)  # one statement importing two modules of a layer: once
        if key not in seen:
            seen.add(key)
            counts[imp.source, imp.target] = counts.get((imp.source, imp.target), 0) + 1
    return counts


def markdown(imports: list[Import], comparisons: list[NameComparison], root: Path | None = None) -> str:
    """The import graph as a markdown table, then the violations and the name comparisons."""
    counts = graph_counts(imports)
    lines = ["| imports -> | " + " | ".join(LAYERS) + " |", "|---|" + "---:|" * len(LAYERS)]
    for src in LAYERS:
        cells = []
        for dst in LAYERS:
            n = counts.get((src, dst), 0)
            cells.append("" if n == 0 else f"**{n}** (not allowed)" if dst not in ALLOWED[src] else str(n))
        lines.append(f"| {src} | " + " | ".join(cells) + " |")
    bad = violations(imports)
    lines += ["", f"Layer violations: {len(bad)}", *(f"- `{v}`" for v in bad)]
    if root is not None:
        past = face_violations(root, imports)
        lines += ["", f"Imports past a solver subpackage's face: {len(past)}", *(f"- `{v}`" for v in past)]
        private = private_imports(root)
        lines += ["", f"Underscore names imported from another module: {len(private)}",
                  *(f"- `{v}`" for v in private)]
    lines += ["", f"Comparisons against a formulation name in {', '.join(NAME_CHECKED_LAYERS)}: {len(comparisons)}",
              *(f"- `{c}`" for c in comparisons)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the report for the checkout given in ``argv`` (default: this file's repository)."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_md = "--markdown" in args
    rest = [a for a in args if a != "--markdown"]
    root = Path(rest[0]).resolve() if rest else Path(__file__).resolve().parents[1]
    imports = all_imports(root)
    comparisons = name_comparisons(root)
    bad = violations(imports)
    past = face_violations(root, imports)
    private = private_imports(root) + class_name_tests(root)
    if as_md:
        print(markdown(imports, comparisons, root))
    else:
        print(f"layer violations {len(bad)}; formulation-name comparisons {len(comparisons)}; "
              f"imports past a solver face {len(past)}; private names imported or class names tested {len(private)}")
        for item in [*bad, *comparisons, *past, *private]:
            print(f"  {item}")
    return 0 if not bad and not comparisons and not past and not private else 1


if __name__ == "__main__":
    sys.exit(main())
