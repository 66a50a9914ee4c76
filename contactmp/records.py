"""One append-only JSONL record store, used by the studies, multistart and the benchmarks.

A record is a JSON object with a unique ``"key"``; it is written and flushed (``fsync``) the moment
it exists, so an interrupted run loses at most the record in flight, and a run started again with
the same file skips every key already there (resume). Records are data: JSON only.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable

from contactmp.result import jsonable

__all__ = ["RecordStore"]


class RecordStore:
    """Append-only JSONL records keyed by ``record["key"]`` (see the module docstring)."""

    def __init__(self, path: Path, *, fresh: bool = False,
                 accept: Callable[[dict[str, Any]], bool] | None = None) -> None:
        """Open (creating its folder) the store at ``path``.

        ``fresh=True`` empties the file first: a run that starts over (a timing benchmark). ``accept``
        chooses which of the file's records this store sees (default: all); the others stay in the
        file but count as absent, so that, for example, records of another configuration are
        computed again. A line cut by an interruption, or one that is not a keyed record, is skipped.
        """
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._records: dict[str, dict[str, Any]] = {}
        if fresh:
            self.path.write_bytes(b"")
        elif self.path.exists():
            with self.path.open("rb+") as fh:  # a line cut by an interruption: end it, skip it below
                fh.seek(0, os.SEEK_END)
                if fh.tell() > 0:
                    fh.seek(-1, os.SEEK_END)
                    if fh.read(1) != b"\n":
                        fh.write(b"\n")
            with self.path.open() as fh:
                for line in fh:
                    try:
                        rec = json.loads(line) if line.strip() else None
                    except json.JSONDecodeError:
                        continue  # a line cut by an interruption: redo that record
                    if isinstance(rec, dict) and "key" in rec and (accept is None or accept(rec)):
                        self._records[rec["key"]] = rec

    def __contains__(self, key: str) -> bool:
        return key in self._records

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, key: str) -> dict[str, Any]:
        return self._records[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The record ``key``, or ``default`` when the store has none."""
        return self._records.get(key, default)

    def append(self, record: dict[str, Any]) -> None:
        """Write one record (must carry a unique ``key``) and flush it to disk."""
        self.append_many([record])

    def append_many(self, records: Iterable[dict[str, Any]]) -> None:
        """Write several records (each with a unique ``key``) with one write and one fsync."""
        recs = [jsonable(r) for r in records]
        if not recs:
            return
        with self.path.open("a") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in recs))
            fh.flush()
            os.fsync(fh.fileno())
        for r in recs:
            self._records[r["key"]] = r

    def records(self) -> list[dict[str, Any]]:
        """All records, in first-written order."""
        return list(self._records.values())
