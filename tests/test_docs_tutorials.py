"""The user guide's tutorials run: every ```python block of each page under ``docs/guide/`` (and of
``docs/index.md``), in order, in one fresh namespace per page, from a temporary working folder.

A failure names the page and the block (1-based, counting only the page's python blocks) and shows
the block's traceback. A block fenced as ```python is code the reader runs; output and shell commands
use other info strings (```text, ```bash), which are not run. Each page is timed: the guide must
stay a few seconds per page, so a page that takes longer than :data:`PAGE_BUDGET_S` fails.
"""
from __future__ import annotations

import re
import time
import traceback
import warnings
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
#: the pages whose python blocks are run
PAGES = sorted([DOCS / "index.md", *(DOCS / "guide").glob("*.md")])
#: wall-time budget of one page [s] (each runs in a few seconds on one core; the budget leaves room
#: for a loaded CI machine)
PAGE_BUDGET_S = 45.0

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)[ \t]*(?P<info>[^\n`]*)$")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(line number, source)`` of every fenced block whose info string is ``python`` (also
    ``py``), in order; an indented fence (in a list or an admonition) is dedented by its indent."""
    blocks: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m.group("indent"), m.group("fence")
        info = m.group("info").strip().split()
        lang = info[0].lstrip("{.").rstrip("}") if info else ""
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        i += 1  # the closing fence
        if lang in ("python", "py"):
            blocks.append((start + 1, "\n".join(body) + "\n"))
    return blocks


def test_pages_exist() -> None:
    names = {p.name for p in PAGES}
    assert "index.md" in names and len(PAGES) >= 8, f"guide pages found: {sorted(names)}"
    for page in PAGES:
        assert python_blocks(page.read_text(encoding="utf-8")), f"{page.name} has no python block"


def test_block_extraction() -> None:
    text = "a\n```python\nx = 1\n```\n```text\nnot run\n```\n- item\n\n    ```python\n    y = x\n    ```\n"
    assert python_blocks(text) == [(3, "x = 1\n"), (11, "y = x\n")]


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
def test_tutorial_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    name = page.relative_to(DOCS).as_posix()
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    t0 = time.perf_counter()
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    for k, (line, source) in enumerate(blocks, start=1):
        code = compile(source, f"docs/{name} (python block {k}, line {line})", "exec")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("default")
                exec(code, namespace)  # noqa: S102 - the guide's own code
        except Exception:
            pytest.fail(f"docs/{name}: python block {k} of {len(blocks)} (line {line}) failed:\n"
                        f"{traceback.format_exc()}", pytrace=False)
    elapsed = time.perf_counter() - t0
    print(f"docs/{name}: {len(blocks)} blocks in {elapsed:.1f} s")
    assert elapsed < PAGE_BUDGET_S, f"docs/{name} took {elapsed:.1f} s (budget {PAGE_BUDGET_S} s)"
