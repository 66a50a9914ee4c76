"""Embarrassingly parallel runs (multistart, study sweeps, benchmark grids) through Dask, streamed to
an append-only, resumable JSONL file.

:func:`run_tasks` computes ``fn(item)`` for every item whose key is not yet in the JSONL store
(:class:`contactmp.records.RecordStore`: one JSON object per line, keyed by ``record["key"]``) and
appends each result as soon as it is back, so

* an interrupted run (Ctrl-C, a crash, ``max_results``, ``deadline``) loses at most the results in flight, and
  running it again computes only the missing keys (resume, no repeats);
* a lost worker loses no results: what is written stays written, and the tasks that were running
  or queued on the dead worker are rescheduled by Dask onto the remaining (or restarted) workers
  (``distributed.scheduler.allowed-failures`` times, default 3, before a task counts as failed).

Where it runs (the rest of the code does not know):

* ``workers=0``: in this process, one item after another (no Dask; the same records);
* ``workers=N`` (default :data:`DEFAULT_WORKERS` = 2): a new ``LocalCluster`` of ``N`` worker
  processes with one thread each, BLAS limited to one thread (:data:`WORKER_ENV`), no dashboard;
* ``scheduler="tcp://HOST:PORT"``: an existing Dask cluster (``workers`` is then ignored);
* ``client=``: a :class:`distributed.Client` the caller already holds (see :func:`dask_client`),
  which lets several runs share one cluster and pay its start-up (about 2-4 s) once.

Items are sent in batches (``batch_size``): one Dask task computes a batch and returns its
records, which are written with one ``fsync``. Cheap items (an LCP start takes about 1 ms, a
scheduler round trip about as long, an fsync about 5 ms here) need batches; expensive ones
(an IPOPT solve) do not. An exception raised by ``fn`` for one item is caught in the worker
and reported for that key (nothing is written for it, so a rerun tries it again); the rest of
its batch is kept.
"""
from __future__ import annotations

import contextlib
import math
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from contactmp.records import RecordStore
from contactmp.errors import InputError, OptionError
from contactmp.result import jsonable

if TYPE_CHECKING:  # pragma: no cover
    from distributed import Client

__all__ = ["run_tasks", "dask_client", "progress_bar", "RunReport", "TaskError", "DEFAULT_WORKERS", "WORKER_ENV"]

#: worker processes of the default local cluster
DEFAULT_WORKERS = 2

#: environment of the local cluster's worker processes: one BLAS thread each (the problems are
#: small and dense; the parallelism is across items)
WORKER_ENV: dict[str, str] = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

#: Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536 (its ``pre-spawn-environ``), which
#: makes glibc give memory back after nearly every free: a cito-box start (IPOPT, 220 iterations)
#: took 0.63 s with it against 0.52 s without, in or out of a worker. Our local workers keep glibc's
#: default.
_NANNY_ENV_DROPPED = ("MALLOC_TRIM_THRESHOLD_",)


class TaskError(RuntimeError):
    """Some items raised (after every other item was computed and written); ``failed`` maps each
    such key to the error text with its traceback. Rerunning computes only these keys."""

    def __init__(self, failed: dict[str, str]):
        self.failed = dict(failed)
        first = next(iter(self.failed.items()))
        super().__init__(f"{len(self.failed)} task(s) failed; first {first[0]!r}:\n{first[1]}")


@dataclass
class RunReport:
    """What :func:`run_tasks` did.

    ``keys`` are all the run's keys in item order; ``skipped`` of them were already in the store
    (resume); ``done`` were computed and written by this run; ``failed`` maps keys whose ``fn``
    raised to the error text; ``interrupted`` is True when ``max_results`` or ``deadline``
    stopped the run early.
    ``workers`` is 0 for an in-process run, else the number of Dask workers at the start.
    """

    store: RecordStore
    keys: list[str]
    skipped: int
    done: int
    failed: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False
    time_s: float = 0.0
    workers: int = 0

    @property
    def complete(self) -> bool:
        """True when every key of the run has a record in the store."""
        return all(k in self.store for k in self.keys)

    def records(self) -> list[dict[str, Any]]:
        """The records of this run's keys (those present), in item order."""
        return [self.store[k] for k in self.keys if k in self.store]


# -- Running one batch (in a worker or in this process) ------------------------------------------
def _run_batch(fn: Callable[[Any], Any], batch: list[tuple[str, Any]]) -> list[tuple[str, bool, Any]]:
    """``[(key, True, record) | (key, False, error text)]`` for each ``(key, item)`` of ``batch``.

    ``record`` is ``fn(item)`` (a dict; anything else is stored as ``{"value": ...}``) made
    JSON-ready, with ``"key"`` set to ``key``.
    """
    out: list[tuple[str, bool, Any]] = []
    for key, item in batch:
        try:
            value = fn(item)
        except Exception as exc:  # reported per key; the rest of the batch goes on
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            out.append((key, False, text))
            continue
        rec = dict(value) if isinstance(value, dict) else {"value": value}
        rec["key"] = key
        out.append((key, True, jsonable(rec)))
    return out


# -- Clusters ------------------------------------------------------------------------------------
def _check_workers(workers: Any) -> int:
    if workers is None:
        return DEFAULT_WORKERS
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise OptionError(f"workers must be an integer >= 0 (0: run in this process), got {workers!r}")
    return workers


def _check_scheduler(scheduler: Any) -> str:
    if not isinstance(scheduler, str) or "://" not in scheduler and ":" not in scheduler:
        raise OptionError(f"scheduler must be an address such as 'tcp://HOST:PORT', got {scheduler!r}")
    return scheduler


@contextlib.contextmanager
def dask_client(workers: int | None = None, scheduler: str | None = None) -> Iterator["Client"]:
    """A :class:`distributed.Client` for the duration of the ``with`` block.

    With ``scheduler`` ("tcp://HOST:PORT") it connects to that cluster (and leaves it running);
    otherwise it starts a ``LocalCluster`` of ``workers`` processes (default
    :data:`DEFAULT_WORKERS`), one thread each, environment :data:`WORKER_ENV` (and glibc's own
    malloc trimming, not Dask's), no dashboard, and shuts it down at the end.
    """
    from distributed import Client, LocalCluster

    if scheduler is not None:
        client = Client(_check_scheduler(scheduler))
        try:
            yield client
        finally:
            client.close()
        return
    n = _check_workers(workers)
    if n == 0:
        raise OptionError("a Dask cluster needs workers >= 1 (workers=0 runs in this process)")
    import dask

    environ = {k: v for k, v in (dask.config.get("distributed.nanny.pre-spawn-environ", None) or {}).items()
               if k not in _NANNY_ENV_DROPPED}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                               env=dict(WORKER_ENV))
    try:
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


# -- The front door ------------------------------------------------------------------------------
def run_tasks(
    fn: Callable[[Any], dict[str, Any]],
    items: Sequence[Any],
    *,
    keys: Sequence[str] | Callable[[Any], str],
    store_path: str | Path | RecordStore,
    workers: int | None = None,
    scheduler: str | None = None,
    client: "Client | None" = None,
    batch_size: int = 1,
    retries: int = 2,
    progress: bool = True,
    description: str = "tasks",
    max_results: int | None = None,
    callback: Callable[[str, dict[str, Any]], None] | None = None,
    raise_on_error: bool = True,
    deadline: float | None = None,
) -> RunReport:
    """Compute ``fn(item)`` for every item whose key is not yet in the JSONL store at ``store_path``,
    streaming each record to it as soon as it is back; return a :class:`RunReport`.

    Parameters
    ----------
    fn : function of one item returning a JSON-able dict (numpy values are converted); with Dask
        it must be picklable by cloudpickle (a module-level function or a ``functools.partial``
        of one; closures over CasADi objects are not). The record written is ``fn(item)`` with
        ``"key"`` added.
    items : the work, in order.
    keys : one unique string per item (or a function ``item -> key``); the resume identity, so
        it must name the item and everything its result depends on.
    store_path : the JSONL file (created with its folder) or an open :class:`RecordStore` (for
        example ``StudyRun.store``), which then sees the new records too.
    workers, scheduler, client : where to run (see the module docstring); ``workers=0`` runs in
        this process.
    batch_size : items per Dask task (and per write + fsync).
    retries : Dask retries of a task whose batch machinery itself raised (an item's own exception
        is caught and reported, not retried; a killed worker is handled by the scheduler).
    progress : a rich progress bar on stderr (shown only when stderr is a terminal).
    max_results : stop (cancelling the rest) once this many new records are written; the report
        then has ``interrupted=True`` and a later call resumes.
    callback : ``callback(key, record)`` after each record is written; an exception it raises
        stops the run (records written so far stay) and propagates.
    raise_on_error : raise :class:`TaskError` at the end when some items raised; otherwise
        they are only listed in ``RunReport.failed``.
    deadline : a :func:`time.perf_counter` time (absolute, in this process) after which no new
        batch is started: batches already running finish and are written, the rest are not sent
        (on Dask only about two batches per worker are in flight at a time, so that little is
        queued when it passes). The report then has ``interrupted=True`` and ``complete=False``;
        a later call resumes. ``fn`` itself is not stopped: to bound each item too, give it the
        time left (as :func:`contactmp.solvers.multistart.multistart` does).
    """
    t0 = time.perf_counter()
    items = list(items)
    key_list = [keys(it) for it in items] if callable(keys) else list(keys)
    if len(key_list) != len(items):
        raise InputError("keys", f"has {len(key_list)} entries for {len(items)} items")
    if not all(isinstance(k, str) for k in key_list):
        raise InputError("keys", "must be strings")
    if len(set(key_list)) != len(key_list):
        dup = next(k for i, k in enumerate(key_list) if k in key_list[:i])
        raise InputError("keys", f"must be unique; {dup!r} repeats")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise OptionError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise OptionError(f"retries must be an integer >= 0, got {retries!r}")
    if max_results is not None and (isinstance(max_results, bool) or not isinstance(max_results, int)
                                    or max_results < 0):
        raise OptionError(f"max_results must be None or an integer >= 0, got {max_results!r}")
    if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, (int, float))
                                 or math.isnan(deadline)):
        raise OptionError(f"deadline must be None or a time.perf_counter() time, got {deadline!r}")
    n_workers = 0 if client is None and scheduler is None and _check_workers(workers) == 0 else -1

    store = store_path if isinstance(store_path, RecordStore) else RecordStore(Path(store_path))
    pending = [(k, it) for k, it in zip(key_list, items) if k not in store]
    report = RunReport(store=store, keys=key_list, skipped=len(items) - len(pending), done=0)
    batches = [pending[i:i + batch_size] for i in range(0, len(pending), batch_size)]

    with progress_bar(progress, description, len(items), report.skipped) as advance:
        def write(results: list[tuple[str, bool, Any]]) -> bool:
            """Write one batch's records; True when max_results is reached."""
            ok = [rec for _, good, rec in results if good]
            if max_results is not None:
                ok = ok[:max(0, max_results - report.done)]
            store.append_many(ok)
            for key, good, payload in results:
                if not good:
                    report.failed[key] = payload
            report.done += len(ok)
            advance(len(ok))
            if callback is not None:
                for rec in ok:
                    callback(rec["key"], rec)
            return max_results is not None and report.done >= max_results

        if not batches or (max_results is not None and max_results == 0):
            report.interrupted = bool(batches)
        elif n_workers == 0:
            for batch in batches:
                if _passed(deadline) or write(_run_batch(fn, batch)):
                    report.interrupted = True
                    break
        elif client is not None:
            report.workers = len(client.nthreads())
            report.interrupted = _run_dask(client, fn, batches, retries, write, deadline)
        else:
            with dask_client(workers, scheduler) as own:
                report.workers = len(own.nthreads())
                report.interrupted = _run_dask(own, fn, batches, retries, write, deadline)
    report.time_s = time.perf_counter() - t0
    if report.failed and raise_on_error:
        raise TaskError(report.failed)
    return report


def _passed(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() >= deadline


def _run_dask(client: "Client", fn: Callable[[Any], Any], batches: list[list[tuple[str, Any]]],
              retries: int, write: Callable[[list[tuple[str, bool, Any]]], bool], deadline: float | None) -> bool:
    """Submit the batches, write results as they complete (``as_completed``); True if stopped
    early by ``write`` or by ``deadline``. Without a deadline every batch is submitted at once;
    with one, about two per worker thread are in flight and no new one is submitted once it has
    passed (those in flight are still written). Futures still pending on exit (early stop,
    interrupt, error) are cancelled."""
    from distributed import as_completed

    run = uuid.uuid4().hex[:12]
    futures: dict[Any, int] = {}

    def submit(j: int) -> Any:
        fut = client.submit(_run_batch, fn, batches[j], key=f"contactmp-batch-{run}-{j}", pure=False, retries=retries)
        futures[fut] = j
        return fut

    window = len(batches) if deadline is None else max(2, 2 * sum(client.nthreads().values()))
    queued = iter(range(len(batches)))
    running = as_completed([submit(j) for _, j in zip(range(window), queued)])
    stopped = False
    try:
        for fut in running:
            j = futures.pop(fut)
            if fut.status == "error":
                err = fut.exception()
                text = f"{type(err).__name__}: {err}"
                results = [(k, False, text) for k, _ in batches[j]]
            else:
                results = fut.result()
            fut.release()
            if write(results):
                stopped = True
                break
            nxt = next(queued, None) if not _passed(deadline) else None
            if nxt is not None:
                running.add(submit(nxt))
        stopped = stopped or next(queued, None) is not None
    finally:
        if futures:
            client.cancel(list(futures))
    return stopped


@contextlib.contextmanager
def progress_bar(show: bool, description: str, total: int, completed: int = 0) -> Iterator[Callable[[int], None]]:
    """``advance(n)`` of a rich progress bar on stderr, shown only when ``show`` and stderr is a
    terminal (else a no-op)."""
    if not show:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

    console = Console(stderr=True)
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console,
                  disable=not console.is_terminal) as bar:
        task = bar.add_task(description, total=total, completed=completed)
        yield lambda n: bar.advance(task, n)


def default_batch_size(n_items: int, workers: int, per_item_s: float) -> int:
    """Items per batch: at most ``n_items / (20 workers)`` (about 20 tasks per worker, so the load
    balances and a lost worker loses little), and no more than ~0.1 s of work per batch
    (``per_item_s`` is the expected cost of one item; an fsync costs 5-10 ms); 1 for expensive
    items."""
    if n_items <= 0:
        return 1
    by_count = max(1, n_items // (20 * max(1, workers)))
    by_time = max(1, math.ceil(0.1 / max(per_item_s, 1e-9)))
    return int(max(1, min(by_count, by_time, 1000)))
