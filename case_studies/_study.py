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
from typing import Any, Iterable, Iterator


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


def merge_counts(records: Iterable[dict[str, Any]], field: str = "solver_counts") -> dict[str, int]:
    """Sum the per-record ``{name: count}`` dictionaries stored under ``field`` (for example how many
    steps each QP solver solved), so a summary says which solvers actually produced the results."""
    out: dict[str, int] = {}
    for r in records:
        for name, c in r.get(field, {}).items():
            out[name] = out.get(name, 0) + int(c)
    return out
