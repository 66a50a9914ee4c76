"""Tables on a terminal fit its width; in logs they keep one line per row; table.md is unchanged
(issue 36, item 8).

:func:`contactmp.progress.print_table` fits a table to a terminal (``Console(width=80)`` or
``200`` here, as ``COLUMNS=80`` / ``COLUMNS=200`` would give), splitting a wide table into groups
of columns that repeat the first; :func:`contactmp.case_studies._study.print_markdown` prints a
study's ``table.md`` that way on a terminal and verbatim elsewhere; :func:`markdown_table`, which
writes the files, is pinned byte for byte.
"""
from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

import contactmp.case_studies as case_studies
from contactmp.case_studies._study import markdown_blocks, markdown_table, print_markdown
from contactmp.cli import app
from contactmp.progress import LOG_MIN_WIDTH, print_table

#: the columns of the trinkle-table1 study (17, about 200 cells wide at their natural width)
HEADERS = ["size", "# data sets", "paper #", "Lemke frac", "paper", "ave # starts", "paper", "ave # iter",
           "paper", "FIP frac", "paper", "FIP ave # iter", "paper", "Newton frac", "Newton ave # iter",
           "Lemke no cap frac", "ave # iter"]
ROWS = [[2, 3, 20, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 0.0, 0.5, None, 8.4, 1.0, 1.0, 1.0, 1.0],
        [50, 3, 20, 1.0, 0.35, 1.0, 2.0, 35.333, 107.4, 1.0, 0.3, 15.333, 61.1, 1.0, 9.0, 1.0, 35.333],
        [90, 3, 23, 1.0, 0.0, 1.0, None, 54.0, None, 1.0, 0.35, 17.333, 30.4, 1.0, 8.333, 1.0, 54.0]]

#: ``markdown_table(HEADERS[:4] + ["max|phi| [m]", "big"], ...)`` as the studies have always written it
GOLDEN = (
    "| size | # data sets | paper # | Lemke frac | max|phi| [m] | big |\n"
    "|---|---|---|---|---|---|\n"
    "| 2 | 3 | 20 | 1.00 | 0.00 | 1.23e+05 |\n"
    "| 50 | - | x y | 0.35 |  | 1e+04 |\n"
)

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _terminal(width: int) -> tuple[Console, io.StringIO]:
    """A console that is a terminal of ``width`` columns, without colours (text only)."""
    buf = io.StringIO()
    return Console(file=buf, width=width, force_terminal=True, color_system=None), buf


def _cells_of(text: str) -> list[str]:
    """The words inside the boxes of a rendered table."""
    return [w for line in text.splitlines() for w in re.split(r"[\s│┃]+", line) if w]


def _formatted(rows: list[list[Any]]) -> list[list[str]]:
    """The rows as markdown_table formats them (the same text, on a terminal or in the file)."""
    return [markdown_table(["c"] * len(r), [r]).splitlines()[2][2:-2].split(" | ") for r in rows]


# ------------------------------------------------------------------------------------------------
# table.md: byte for byte as before
# ------------------------------------------------------------------------------------------------
def test_markdown_table_is_byte_identical() -> None:
    md = markdown_table(HEADERS[:4] + ["max|phi| [m]", "big"],
                        [[2, 3, 20, 1.0, 0.0, 123456.0], [50, None, "x y", 0.35, "", 1e4]])
    assert md == GOLDEN


def test_markdown_blocks_read_back_what_markdown_table_wrote() -> None:
    t1 = markdown_table(HEADERS[:4] + ["max|phi| [m]", "big"],
                        [[2, 3, 20, 1.0, 0.0, 123456.0], [50, None, "x y", 0.35, "", 1e4]])
    t2 = markdown_table(["", "ours", "paper"], [["data sets", 54, 328]])
    odd = "| a | b |\n|---|---|\n| one | two | three |\n"  # a row with a cell too many: stays text
    text = "# title\n\nsome text\n\n" + t1 + "\n## Overall\n\n" + t2 + "\n" + odd + "\nend\n"
    blocks = markdown_blocks(text)
    assert blocks == [
        ["# title", "", "some text", ""],
        (HEADERS[:4] + ["max|phi| [m]", "big"], [["2", "3", "20", "1.00", "0.00", "1.23e+05"],
                                                 ["50", "-", "x y", "0.35", "", "1e+04"]]),
        ["", "## Overall", ""],
        (["", "ours", "paper"], [["data sets", "54", "328"]]),
        ["", "| a | b |", "|---|---|", "| one | two | three |", "", "end"],
    ]


# ------------------------------------------------------------------------------------------------
# print_table: 80 and 200 columns, and logs
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("width", [80, 200])
def test_a_table_fits_the_terminal_and_loses_no_cell(width: int) -> None:
    console, buf = _terminal(width)
    rows = _formatted(ROWS)
    print_table("Trinkle Table 1 [quick]", HEADERS, rows, console=console)
    text = buf.getvalue()
    assert ANSI.search(text) is None
    lines = text.splitlines()
    assert max(cell_len(line) for line in lines) <= width
    assert "…" not in text  # nothing cut with an ellipsis
    words = _cells_of(text)
    for row in rows:  # every value printed whole (numbers are never wrapped)
        for cell in row:
            assert cell in words, cell
    for header in HEADERS:  # header words all there (headers may wrap at spaces)
        for word in header.split():
            assert word in words, word
    assert "Trinkle Table 1 [quick]" in text  # the title, not read as markup
    tables = sum(1 for line in lines if line.startswith("┏"))
    if width == 200:
        assert tables == 1  # fits whole: one table, one line per row
        assert sum(1 for line in lines if line.startswith("│")) == len(rows)
    else:
        assert tables >= 2  # split into groups of columns, each repeating the first (the key)
        heads = [lines[k + 1:] for k, line in enumerate(lines) if line.startswith("┏")]
        assert all(any(re.match(r"┃ size ", h) for h in head[:5]) for head in heads)
        assert text.count("(continued)") == tables - 1


def test_a_narrow_table_is_not_stretched() -> None:
    console, buf = _terminal(200)
    print_table("t", ["a", "b"], [["1", "2"]], console=console)
    assert max(cell_len(line) for line in buf.getvalue().splitlines()) < 20


def test_without_a_terminal_a_table_keeps_its_natural_width() -> None:
    """A pipe or a log (a console that is not a terminal, whatever its width): one table, one line
    per row, nothing wrapped, at least LOG_MIN_WIDTH wide."""
    buf = io.StringIO()
    rows = _formatted(ROWS)
    print_table("Trinkle", HEADERS, rows, console=Console(file=buf, width=80))
    lines = buf.getvalue().splitlines()
    body = [line for line in lines if line.startswith("│")]
    assert len(body) == len(rows) and sum(1 for line in lines if line.startswith("┏")) == 1
    assert max(cell_len(line) for line in lines) > 80  # wider than the console: not wrapped
    head = next(line for line in lines if line.startswith("┃"))
    assert all(h in head for h in HEADERS)  # every header on one line
    small = io.StringIO()  # a small table is not stretched to LOG_MIN_WIDTH
    print_table("t", ["a"], [["1"]], console=Console(file=small, width=40))
    assert max(cell_len(line) for line in small.getvalue().splitlines()) < LOG_MIN_WIDTH


def test_print_table_options() -> None:
    console, buf = _terminal(80)
    print_table(None, ["name", "value"], [["x", None], ["[bold]y[/bold]", 2.5]], justify=["left", "right"],
                caption="a caption", console=console)
    text = buf.getvalue()
    assert "[bold]y[/bold]" in text and "-" in _cells_of(text) and "a caption" in text
    with pytest.raises(ValueError, match="justify"):
        print_table(None, ["a", "b"], [], justify=["left"], console=console)


def test_print_table_defaults_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    print_table("t", ["a", "b"], [[1, 2]])
    out = capsys.readouterr().out  # captured: not a terminal, natural width
    assert "│ 1 │ 2 │" in out


# ------------------------------------------------------------------------------------------------
# a study's table.md
# ------------------------------------------------------------------------------------------------
STUDY_MD = ("# Trinkle et al. (1995) Table 1, redone (quick)\n\n"
            "Solved = verified residual ||min(z, Mz+q)||_inf <= 1e-08 and physics check <= 1e-06, a sentence "
            "longer than eighty columns.\n\n" + markdown_table(HEADERS, ROWS) + "\n## Overall\n\n"
            + markdown_table(["", "ours", "paper"], [["data sets", 54, 328]]))


@pytest.mark.parametrize("width", [80, 200])
def test_a_study_table_on_a_terminal_fits_it(width: int) -> None:
    console, buf = _terminal(width)
    print_markdown(STUDY_MD, console=console)
    text = buf.getvalue()
    assert max(cell_len(line) for line in text.splitlines()) <= width
    assert "# Trinkle et al. (1995) Table 1, redone (quick)" in text and "## Overall" in text
    assert "| size |" not in text and "|---|" not in text  # the tables are drawn, not markdown
    words = _cells_of(text)
    for row in _formatted(ROWS):
        assert all(cell in words for cell in row)
    assert "data sets" in text and "328" in words


def test_a_study_table_in_a_log_is_the_markdown_verbatim() -> None:
    buf = io.StringIO()
    print_markdown(STUDY_MD, console=Console(file=buf, width=80))
    assert buf.getvalue() == STUDY_MD  # byte for byte: no wrapping at 80 columns


class _FakeStudy:
    """A study whose ``run`` writes the table.md above."""

    @staticmethod
    def run(out: Path, quick: bool, seed: int) -> dict[str, Any]:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "table.md").write_text(STUDY_MD)
        return {"headline": "done"}


@pytest.fixture
def fake_study(monkeypatch: pytest.MonkeyPatch) -> None:
    real = case_studies.study_module
    monkeypatch.setattr(case_studies, "study_module", lambda name: _FakeStudy if name == "fake" else real(name))


@pytest.mark.usefixtures("fake_study")
def test_contactmp_study_prints_markdown_when_piped_and_tables_on_a_terminal(tmp_path: Path) -> None:
    runner = CliRunner()
    piped = runner.invoke(app, ["study", "fake", "--out", str(tmp_path / "a")], env={"COLUMNS": "80"})
    assert piped.exit_code == 0, piped.output
    assert piped.stdout.startswith(STUDY_MD)  # the file as it is, not wrapped at 80
    assert (tmp_path / "a" / "table.md").read_text() == STUDY_MD
    for width in (80, 200):
        term = runner.invoke(app, ["study", "fake", "--out", str(tmp_path / "b")],
                             env={"COLUMNS": str(width), "TTY_COMPATIBLE": "1", "NO_COLOR": "1"})
        assert term.exit_code == 0, term.output
        text = ANSI.sub("", term.stdout)
        assert max(cell_len(line) for line in text.splitlines()) <= width
        assert "┏" in text and "|---|" not in text
        assert (tmp_path / "b" / "table.md").read_text() == STUDY_MD
