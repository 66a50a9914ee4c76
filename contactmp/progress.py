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
on a terminal (one line per ``interval`` otherwise).

This module imports nothing beyond the standard library (the command line stays quick to start).
"""
from __future__ import annotations

import contextlib
import math
import numbers
import os
import sys
import time
from typing import Any, Callable, Iterator, Optional, TextIO

from contactmp.errors import OptionError

__all__ = ["Reporter", "check_time_limit", "check_progress", "Watch", "watch_for", "next_chunk", "ProgressLine",
           "CHUNK_SECONDS", "quiet_stdout"]

#: ``progress(solver, iteration, residual)``
Reporter = Callable[[str, int, float], Any]

#: target wall time of one chunk of compiled iterations between two looks at the clock
CHUNK_SECONDS = 0.05


def check_time_limit(value: Any) -> float:
    """``time_limit`` as seconds: ``None`` and ``inf`` mean no limit (``inf`` is returned); any other
    value must be a positive number, else :class:`OptionError` naming ``time_limit``."""
    if value is None:
        return math.inf
    if (isinstance(value, bool) or type(value).__name__ == "bool_" or not isinstance(value, numbers.Real)
            or not value > 0):  # (NaN fails "> 0")
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
