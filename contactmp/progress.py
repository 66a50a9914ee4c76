"""Wall-clock budgets and progress reports, shared by every solver.

Every solver takes the option ``time_limit`` (seconds; ``None`` or ``inf``: no limit), checked by
:func:`check_time_limit`, and the keyword argument ``progress``: a reporter called as
``progress(solver, iteration, residual)`` at the solver's checkpoints (between chunks of compiled
iterations, or once per iteration of a Python loop), never from inside a compiled kernel. The
``residual`` reported is the solver's independent check (``||min(z, M z + q)||_inf`` for an LCP, the
natural-map residual for fc3d) of the iterate at that checkpoint.

A solver keeps one :class:`Watch` per solve: its deadline, the iterate with the smallest residual
seen at the checkpoints (returned when the time runs out, with status ``time_limit``) and the
reporter. :func:`next_chunk` sizes the chunks of compiled work so that the clock is read a few
times per second and the checkpoints cost little. :class:`ProgressLine` is the reporter of the
command line: silent for the first ``delay`` seconds, then one line on stderr, rewritten in place
on a terminal (one line per ``interval`` otherwise). :func:`print_table` prints the reports' tables
(the command line's, the case studies', the benchmarks'): fitted to a terminal's width, at their
natural width in logs and files.

This module imports nothing beyond the standard library at import time (the command line stays
quick to start); :func:`print_table` imports rich when called.
"""
from __future__ import annotations

import contextlib
import math
import numbers
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional, Sequence, TextIO

from contactmp.errors import OptionError

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console
    from rich.table import Table

__all__ = ["Reporter", "check_time_limit", "check_progress", "Watch", "watch_for", "next_chunk", "ProgressLine",
           "CHUNK_SECONDS", "quiet_stdout", "print_table"]

#: ``progress(solver, iteration, residual)``
Reporter = Callable[[str, int, float], Any]

#: target wall time of one chunk of compiled iterations between two looks at the clock
CHUNK_SECONDS = 0.05


def check_time_limit(value: Any) -> float:
    """``time_limit`` as seconds: ``None`` and ``inf`` mean no limit (``inf`` is returned); any other
    value must be a positive number, else :class:`OptionError` naming ``time_limit``."""
    if value is None:
        return math.inf
    # a bool is an int, so it is refused by name; NumPy's bool_ is no numbers.Real; NaN fails "> 0"
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise OptionError(f"time_limit must be None or a positive number of seconds (inf: no limit), "
                          f"got {value!r}")
    return float(value)


def check_progress(progress: Any) -> Optional[Reporter]:
    """``progress`` when it is ``None`` or callable, else :class:`OptionError` naming it."""
    if progress is not None and not callable(progress):
        raise OptionError(f"progress must be None or a function progress(solver, iteration, residual), "
                          f"got {progress!r}")
    return progress


def watch_for(solver: str, time_limit: float | None, progress: Any, t0: float) -> "Watch | None":
    """A :class:`Watch` for a solve with a time limit or a reporter, ``None`` for one with neither
    (the solve then runs without checkpoints). ``progress`` is checked by :func:`check_progress`."""
    progress = check_progress(progress)
    if progress is None and (time_limit is None or time_limit == math.inf):
        return None
    return Watch(solver, time_limit, progress, t0)


class Watch:
    """One solve's deadline, its best iterate so far and its progress reports.

    ``Watch(solver, time_limit, progress, t0)``: ``time_limit`` as checked by
    :func:`check_time_limit` (``inf``: none), counted from ``t0`` (``time.perf_counter()``, default
    now). :meth:`offer` is called at every checkpoint with the current iterate and its independent
    residual: the iterate is copied when its residual is the smallest so far (``x``, ``residual``,
    ``iteration`` hold the best) and the reporter, if any, is called.
    """

    __slots__ = ("solver", "limit", "t0", "deadline", "progress", "x", "residual", "iteration")

    def __init__(self, solver: str, time_limit: float = math.inf, progress: Optional[Reporter] = None,
                 t0: Optional[float] = None) -> None:
        self.solver = solver
        self.limit = math.inf if time_limit is None else float(time_limit)
        self.t0 = time.perf_counter() if t0 is None else t0
        self.deadline = self.t0 + self.limit
        self.progress = progress
        self.x: Any = None
        self.residual = math.inf
        self.iteration = 0

    @property
    def limited(self) -> bool:
        """Whether there is a time limit."""
        return self.limit < math.inf

    def expired(self) -> bool:
        """Whether the deadline has passed."""
        return time.perf_counter() >= self.deadline

    def left(self) -> float:
        """Seconds left before the deadline (``inf`` without a limit; negative once passed)."""
        return self.deadline - time.perf_counter()

    def offer(self, x: Any, residual: float, iteration: int) -> None:
        """A checkpoint: keep a copy of ``x`` if ``residual`` is the smallest so far; report it."""
        residual = float(residual)
        if self.x is None or residual < self.residual:
            self.x = x.copy()
            self.residual = residual if residual == residual else math.inf
            self.iteration = int(iteration)
        if self.progress is not None:
            self.progress(self.solver, int(iteration), residual)

    def report(self, iteration: int, residual: float) -> None:
        """Call the reporter (if any) without offering an iterate."""
        if self.progress is not None:
            self.progress(self.solver, int(iteration), float(residual))


def next_chunk(size: int, done: int, seconds: float, watch: Watch, low: int = 1, high: int = 1 << 30) -> int:
    """The size of the next chunk of compiled work after one of ``done`` units took ``seconds``:
    about :data:`CHUNK_SECONDS` of work, at most a quarter of the time left, at most four times the
    last size (so a first guess that is too small grows quickly), within ``[low, high]``."""
    per = max(seconds, 1e-7) / max(done, 1)
    target = CHUNK_SECONDS
    left = watch.left()
    if left < math.inf:
        target = min(target, max(0.25 * left, 1e-4))
    n = int(target / per)
    return max(low, min(high, n, 4 * max(size, 1)))


class ProgressLine:
    """The command line's reporter: ``solver: iteration k, residual r (t s)`` on ``stream`` (stderr).

    Nothing is written during the first ``delay`` seconds after construction (short solves stay
    silent); after that at most one update per ``interval`` seconds: on a terminal the line is
    rewritten in place (and cleared by :meth:`close`), elsewhere one line per update (at most one
    per ``max(interval, 1 s)``). It never writes to stdout.
    """

    def __init__(self, stream: Optional[TextIO] = None, delay: float = 2.0, interval: float = 0.2) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.delay = float(delay)
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty()) if callable(isatty) else False
        self.interval = float(interval) if self.tty else max(float(interval), 1.0)
        self.t0 = time.perf_counter()
        self.last = -math.inf
        self.shown = 0

    def __call__(self, solver: str, iteration: int, residual: float) -> None:
        now = time.perf_counter()
        if now - self.t0 < self.delay or now - self.last < self.interval:
            return
        self.last = now
        text = f"{solver}: iteration {iteration}, residual {residual:.3e} ({now - self.t0:.1f} s)"
        if self.tty:
            self.stream.write("\r\x1b[2K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self.shown += 1

    def close(self) -> None:
        """Clear the line on a terminal (nothing to do elsewhere)."""
        if self.tty and self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """Silence C-level stdout (file descriptor 1) inside the block: libraries that print from C++
    (qpOASES' license banner when a solver is created, HiGHS' MIP debug lines) would otherwise
    mix text into a command's report (``contactmp solve --json`` prints exactly one JSON object)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # captured stdout without a descriptor
        yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


#: the narrowest a table is printed when it is not fitted to a terminal (as rich's default console)
LOG_MIN_WIDTH = 80


def print_table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]], *,
                caption: str | None = None, justify: str | Sequence[str] = "left",
                console: "Console | None" = None, fit: bool | None = None) -> None:
    """Print a table of ``rows`` under ``columns`` with rich, fitted to a terminal's width.

    Cells are shown as text (``None`` as ``-``, anything else as ``str(v)``), never read as rich
    markup (a header such as ``time [s]`` stays as written). ``justify`` is one of ``left``,
    ``center``, ``right`` for every column, or one per column. ``console`` defaults to a new
    ``rich.console.Console()`` on stdout.

    ``fit`` (default: whether ``console`` is a terminal) fits the table to ``console.width``: cells
    are wrapped at spaces (headers first), never cut with an ellipsis. When even the narrowest
    layout (every header wrapped at its spaces, every word of a cell on one line) is wider than the
    console, the columns are printed in groups that fit, one table after the other, each repeating
    the first column (the rows' key) as pandas does; only a single column wider than the console
    is folded. Without ``fit`` (a pipe, a log, a file) the table is printed once at its natural
    width (at least :data:`LOG_MIN_WIDTH`): nothing wrapped, one line per row, whatever the width
    of the terminal it may be read on.
    """
    from rich.console import Console
    from rich.measure import Measurement

    columns = [str(c) for c in columns]
    rows = [["-" if v is None else str(v) for v in row] for row in rows]
    how = [justify] * len(columns) if isinstance(justify, str) else list(justify)
    if len(how) != len(columns):
        raise ValueError(f"justify has {len(how)} entries for {len(columns)} columns")
    console = Console() if console is None else console
    if fit is None:
        fit = console.is_terminal
    every = list(range(len(columns)))
    if not fit:
        table = _rich_table(title, caption, columns, rows, how, every)
        wide = Console(width=1 << 16)
        needed = Measurement.get(wide, wide.options, table).maximum
        out = Console(file=console.file, width=max(LOG_MIN_WIDTH, needed), color_system=console.color_system,
                      force_terminal=console.is_terminal, no_color=console.no_color)
        out.print(table)
        return
    width = console.width
    lo, hi = _content_widths(console, columns, rows)
    frame = _frame_width(console, 1)
    per_column = _frame_width(console, 2) - frame  # padding and one rule per column

    def narrowest(group: list[int]) -> int:
        return frame + per_column * (len(group) - 1) + sum(lo[k] for k in group)

    groups: list[list[int]] = []
    if not columns or narrowest(every) <= width:
        groups = [every]
    else:
        current = [0]
        for k in every[1:]:
            if len(current) > 1 and narrowest(current + [k]) > width:
                groups.append(current)
                current = [0, k]
            else:
                current.append(k)
        groups.append(current)
    for g, group in enumerate(groups):
        name = title if g == 0 else f"{title} (continued)" if title else "(continued)"
        widths = _share_width(width - frame - per_column * (len(group) - 1), [lo[k] for k in group],
                              [hi[k] for k in group])
        table = _rich_table(name, caption if g == len(groups) - 1 else None, columns, rows, how, group, widths)
        console.print(table)


def _rich_table(title: str | None, caption: str | None, columns: Sequence[str], rows: Sequence[Sequence[str]],
                justify: Sequence[str], keep: Sequence[int], widths: Sequence[int] | None = None) -> "Table":
    """A rich Table of the columns ``keep`` (with content widths ``widths``, default: rich's own);
    every text is a ``Text`` (no markup), cells wrap at spaces and fold a word only if they must."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=None if title is None else Text(title), caption=None if caption is None else Text(caption))
    for i, k in enumerate(keep):
        table.add_column(Text(columns[k]), justify=justify[k], overflow="fold",  # type: ignore[arg-type]
                         width=None if widths is None else widths[i])
    for row in rows:
        table.add_row(*(Text(row[k]) if k < len(row) else Text("") for k in keep))
    return table


def _content_widths(console: "Console", columns: Sequence[str], rows: Sequence[Sequence[str]]
                    ) -> tuple[list[int], list[int]]:
    """Per column, the narrowest content width that breaks no word (the longest word of a header
    or cell) and the natural one (the longest header or cell on one line), in terminal cells."""
    from rich.measure import Measurement
    from rich.text import Text

    lo, hi = [], []
    for k, header in enumerate(columns):
        texts = [header] + [row[k] for row in rows if k < len(row)]
        sizes = [Measurement.get(console, console.options.update_width(1 << 16), Text(t)) for t in texts]
        lo.append(max(1, max(m.minimum for m in sizes)))
        hi.append(max(1, max(m.maximum for m in sizes)))
    return lo, hi


def _frame_width(console: "Console", n: int) -> int:
    """The cells a rich Table of ``n`` columns spends on its borders and padding."""
    from rich.measure import Measurement
    from rich.table import Table

    table = Table(*(["x"] * n))
    return Measurement.get(console, console.options.update_width(1 << 16), table).maximum - n


def _share_width(room: int, lo: Sequence[int], hi: Sequence[int]) -> list[int]:
    """Content widths of columns sharing ``room`` cells: the natural widths ``hi`` when they fit;
    else each column its narrowest ``lo``, then the rest of the room to the columns that lack the
    least of their natural width, one after the other (so that as few columns as possible wrap);
    when even ``lo`` does not fit, ``lo`` scaled down (at least 1 cell each)."""
    if sum(hi) <= room:
        return list(hi)
    if sum(lo) > room:
        scale = max(room, len(lo)) / sum(lo)
        return [max(1, int(w * scale)) for w in lo]
    widths, spare = list(lo), room - sum(lo)
    for k in sorted(range(len(lo)), key=lambda k: hi[k] - lo[k]):
        give = min(spare, hi[k] - lo[k])
        widths[k] += give
        spare -= give
    return widths
