"""MkDocs hook and griffe extension of the contactmp docs (``mkdocs.yml``: ``hooks``, and the
python handler's ``extensions``).

* ``on_config``: the API reference is read from the source by griffe, statically. In the checkout the
  subpackages live in top-level folders (``models/``, ``solvers/``, ...) that ``pyproject.toml``'s
  ``[tool.setuptools.package-dir]`` maps into ``contactmp``; griffe follows neither that mapping
  nor an editable install's finder. The hook lays out the installed package's tree in a temporary
  folder (copies of ``contactmp/*.py``, ``models/*.py`` as ``contactmp/models/*.py``, ...) and points
  the python handler's ``paths`` at it, so ``::: contactmp.models.symbolic`` resolves the same way
  whether contactmp is installed editable, installed normally, or not at all.
* :class:`SphinxRoles`: the docstrings use Sphinx roles (``:class:`~contactmp.x.Y```). Markdown
  would print them verbatim; the extension rewrites each into an optional cross-reference (a link
  when the target is on the API pages, plain code otherwise; ``~`` keeps the last name only, as in
  Sphinx; a name without a dot is looked up in the docstring's own module). In a numpydoc
  ``Parameters`` (or ``Attributes``) section, an item written ``name : description`` gets its
  description on a line of its own (else griffe shows it, unrendered, as the type), and a free
  paragraph after the section (numpydoc has no such thing: the parser would drop its lines with a
  warning) gets a ``Notes`` heading. RST's ``text::`` before an indented literal block loses one
  colon (the indented block is a code block in Markdown as well), and a line that continues an
  inline literal but starts like a Markdown list item (``+ Jo^T ...``) is joined to the one before.
"""
from __future__ import annotations

import atexit
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

REPO = Path(__file__).resolve().parents[1]


def _package_dirs() -> dict[str, str]:
    """``{import name: folder}`` from pyproject.toml's ``[tool.setuptools.package-dir]``."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[tool.setuptools.package-dir]", 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^"([\w.]+)"\s*=\s*"([\w./]+)"', section, flags=re.M))


@event_priority(100)  # before mkdocstrings' on_config, which creates the python handler
def on_config(config: Any) -> Any:
    tree = Path(tempfile.mkdtemp(prefix="contactmp-api-"))
    atexit.register(shutil.rmtree, tree, True)
    for name, folder in sorted(_package_dirs().items()):  # contactmp before its subpackages
        target = tree.joinpath(*name.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for f in (REPO / folder).rglob("*.py"):  # copies: griffe resolves links to the real folder
            (target / f.relative_to(REPO / folder)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, target / f.relative_to(REPO / folder))
    handlers = config.plugins["mkdocstrings"].config.handlers
    handlers.setdefault("python", {})["paths"] = [str(tree)]
    return config


_ITEM_SECTIONS = ("Parameters", "Other Parameters", "Attributes")
_ITEM = re.compile(r"^\*{0,2}[A-Za-z_][\w, *]*\s+:(\s|$)")  # a numpydoc item: ``name : description``


_PLAIN_TYPE = re.compile(r"[\w.\[\]|]+(?: or [\w.\[\]|]+)*")  # ``float``, ``ContactSystem``, ``Verdict or None``
_ITEM_PARTS = re.compile(r"^(\*{0,2}[A-Za-z_][\w, *]*?)\s+:\s+(.+)$")


def _numpydoc_fixes(text: str) -> str:
    """``text`` with two numpydoc habits of this codebase made explicit: an item written
    ``name : description`` (not a plain type) gets its description on the next line (griffe would
    show the whole line, unrendered, as the item's type), and a free paragraph after an item
    section gets a ``Notes`` heading."""
    lines = text.split("\n")
    out: list[str] = []
    in_items = False
    for i, line in enumerate(lines):
        header = i + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[i + 1].strip() or "x") is not None
        if header:
            in_items = line.strip() in _ITEM_SECTIONS
        elif in_items and line and not line[0].isspace() and not re.fullmatch(r"-{3,}", line.strip()):
            if i > 0 and not lines[i - 1].strip() and not _ITEM.match(line):
                out += ["Notes", "-----"]
                in_items = False
            elif (m := _ITEM_PARTS.match(line)) and not _PLAIN_TYPE.fullmatch(m.group(2).strip()):
                out += [m.group(1), "    " + m.group(2)]
                continue
        out.append(line)
    return "\n".join(out)


def _join_open_literals(text: str) -> str:
    """``text`` with a line joined to the previous one when an RST inline literal (double
    backquotes) is open across the break and the line starts like a Markdown list item (``+ x``)."""
    out: list[str] = []
    for line in text.split("\n"):
        if out and out[-1].count("``") % 2 == 1 and re.match(r"\s*[-+*] ", line):
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return "\n".join(out)


_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):`(~?)([\w.]+)(?:\(\))?`")

try:  # the griffe extension; griffe is there whenever mkdocstrings[python] is
    from griffe import Extension
except ImportError:  # pragma: no cover - the hook alone (never the case in a docs build)
    Extension = object  # type: ignore[assignment,misc]


class SphinxRoles(Extension):  # type: ignore[misc,valid-type]
    """Rewrite Sphinx roles in every docstring into optional mkdocs-autorefs cross-references."""

    def _rewrite(self, obj: Any) -> None:
        doc = getattr(obj, "docstring", None)
        if doc is None:
            return
        module = obj.module.path if hasattr(obj, "module") else obj.path

        def link(m: re.Match[str]) -> str:
            short, name = m.group(1), m.group(2)
            ident = name if name.startswith("contactmp") else f"{module}.{name}"
            title = name.rsplit(".", 1)[-1] if short else name
            return f'<autoref identifier="{ident}" optional><code>{title}</code></autoref>'

        text = re.sub(r"(?<=\S)::\n([ \t]*\n)", r":\n\1", _ROLE.sub(link, doc.value))  # RST's "text::" + block
        doc.value = _numpydoc_fixes(_join_open_literals(text))

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:  # griffe's event
        self._rewrite(obj)
