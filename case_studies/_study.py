"""What every case study shares: an output folder, append-only JSONL records that make a run
resumable, a progress bar, and the headline files (``summary.json``, ``table.md``, PNG figures).
"""
from __future__ import annotations

import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Union

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console


from contactmp.records import RecordStore
from contactmp.result import jsonable


def environment() -> dict[str, Any]:
    """Versions and machine, recorded with every study and benchmark."""
    import importlib.metadata as md

    versions = {}
    for pkg in ("contactmp", "numpy", "scipy", "numba", "casadi", "pyomo"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "versions": versions,
    }


@dataclass
class StudyRun:
    """The output folder of one study run and its standard files."""

    name: str
    out: Path
    quick: bool
    seed: int
    started: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.store = RecordStore(self.out / "records.jsonl")

    def progress(self, items: Iterable[Any], total: int, description: str) -> Iterator[Any]:
        """Iterate with a rich progress bar on stderr (silent when stderr is not a terminal)."""
        from contactmp.parallel import progress_bar

        with progress_bar(True, description, total) as advance:
            for item in items:
                yield item
                advance(1)

    def write_summary(self, summary: dict[str, Any]) -> Path:
        """Write ``summary.json`` (headline figures plus seed, mode and environment)."""
        full = {
            "study": self.name,
            "quick": self.quick,
            "seed": self.seed,
            "records": len(self.store),
            "wall_time_s": time.time() - self.started,
            "environment": environment(),
            **summary,
        }
        path = self.out / "summary.json"
        path.write_text(json.dumps(jsonable(full), indent=2) + "\n")
        return path

    def write_table(self, markdown: str) -> Path:
        """Write ``table.md``."""
        path = self.out / "table.md"
        path.write_text(markdown if markdown.endswith("\n") else markdown + "\n")
        return path


def markdown_table(headers: list[str], rows: list[list[Any]]) -> str:
    """A GitHub-flavoured markdown table."""

    def fmt(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.2f}" if abs(v) < 1e4 else f"{v:.3g}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


#: a block of a study's ``table.md``: its text lines, or the ``(headers, rows)`` of a table
MarkdownBlock = Union[list[str], tuple[list[str], list[list[str]]]]


def _split_row(line: str) -> list[str] | None:
    """The cells of a row written by :func:`markdown_table` (``| a | b |``), ``None`` if it is not one.
    Cells are split at ``" | "``, so a ``|`` inside a cell (``max|phi|``) stays in its cell."""
    if len(line) < 4 or not (line.startswith("| ") and line.endswith(" |")):
        return None
    return line[2:-2].split(" | ")


def markdown_blocks(text: str) -> list[MarkdownBlock]:
    """A study's ``table.md`` as blocks, in order: the text between the tables (a list of lines)
    and each table written by :func:`markdown_table` as ``(headers, rows)`` of strings.

    A table is a run of lines starting with ``|``: header, ``|---|...|`` rule, rows. A run that does
    not parse back to rows of exactly as many cells as the rule has columns (a cell containing
    ``" | "``, a hand-written table) stays text, so nothing is ever lost or changed in printing.
    """
    lines = text.splitlines()
    blocks: list[MarkdownBlock] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("|"):
            prose.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j].startswith("|"):
            j += 1
        run = lines[i:j]
        rule = run[1].strip("|").split("|") if len(run) >= 2 else []
        header = _split_row(run[0])
        body = [_split_row(line) for line in run[2:]]
        ok = (header is not None and rule and all(set(r.strip()) <= set("-:") and "-" in r for r in rule)
              and len(header) == len(rule) and all(b is not None and len(b) == len(rule) for b in body))
        if ok:
            if prose:
                blocks.append(prose)
                prose = []
            blocks.append((header, body))  # type: ignore[arg-type]
        else:
            prose.extend(run)
        i = j
    if prose:
        blocks.append(prose)
    return blocks


def print_markdown(text: str, console: "Console | None" = None, fit: bool | None = None) -> None:
    """Print a study's ``table.md`` on ``console`` (default: stdout).

    ``fit`` (default: whether the console is a terminal): each table is a rich table fitted to the
    console's width (:func:`contactmp.progress.print_table`: cells wrapped, wide tables split into
    groups of columns) and the text between them is printed as text. Without ``fit`` (a pipe, a
    log) the markdown is written exactly as it is in the file: one line per row, never wrapped,
    and it can be pasted as markdown.
    """
    from rich.console import Console

    from contactmp.progress import print_table

    console = Console() if console is None else console
    if not (console.is_terminal if fit is None else fit):
        console.file.write(text if text.endswith("\n") or not text else text + "\n")
        console.file.flush()
        return
    for block in markdown_blocks(text):
        if isinstance(block, tuple):
            print_table(None, block[0], block[1], console=console, fit=True)
        else:
            console.print("\n".join(block), markup=False)


def merge_counts(records: Iterable[dict[str, Any]], field: str = "solver_counts") -> dict[str, int]:
    """Sum the per-record ``{name: count}`` dictionaries stored under ``field`` (for example how many
    steps each QP solver solved), so a summary says which solvers actually produced the results."""
    out: dict[str, int] = {}
    for r in records:
        for name, c in r.get(field, {}).items():
            out[name] = out.get(name, 0) + int(c)
    return out
