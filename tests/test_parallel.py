"""contactmp.parallel: tasks streamed to a resumable JSONL store, in process and on Dask."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from contactmp.records import RecordStore
from contactmp.errors import InputError, OptionError
from contactmp.parallel import RunReport, TaskError, dask_client, default_batch_size, run_tasks


def _collatz_steps(n: int) -> dict:
    """A deterministic item with a closed-form check: steps of the Collatz map from n to 1."""
    steps, m = 0, n
    while m != 1:
        m = m // 2 if m % 2 == 0 else 3 * m + 1
        steps += 1
    return {"n": n, "steps": steps, "sqrt": math.sqrt(n)}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _keys(items: list[int]) -> list[str]:
    return [f"collatz/{n}" for n in items]


KNOWN_STEPS = {1: 0, 2: 1, 3: 7, 6: 8, 7: 16, 9: 19, 27: 111, 97: 118}


def test_serial_run_writes_one_record_per_item(tmp_path: Path) -> None:
    items = list(range(1, 41))
    rep = run_tasks(_collatz_steps, items, keys=_keys(items), store_path=tmp_path / "r.jsonl",
                    workers=0, progress=True, batch_size=7)  # the bar is hidden off a terminal
    assert isinstance(rep, RunReport) and rep.complete and rep.done == 40 and rep.skipped == 0
    assert rep.workers == 0 and not rep.interrupted and rep.failed == {}
    lines = _lines(tmp_path / "r.jsonl")
    assert [r["key"] for r in lines] == _keys(items)
    for r in lines:
        if r["n"] in KNOWN_STEPS:
            assert r["steps"] == KNOWN_STEPS[r["n"]]
        assert r["sqrt"] == pytest.approx(math.sqrt(r["n"]), rel=1e-15)
    # records() of the report are those of the store, in item order
    assert [r["n"] for r in rep.records()] == items


def test_interrupted_run_resumes_without_repeats(tmp_path: Path) -> None:
    items = list(range(1, 101))
    path = tmp_path / "r.jsonl"
    first = run_tasks(_collatz_steps, items, keys=_keys(items), store_path=path, workers=0,
                      progress=False, batch_size=8, max_results=30)
    assert first.interrupted and first.done == 30 and not first.complete
    assert len(_lines(path)) == 30

    # a callback that raises (e.g. Ctrl-C) stops the second run; what was written stays
    seen: list[str] = []

    def stop_after_ten(key: str, rec: dict) -> None:
        seen.append(key)
        if len(seen) == 10:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_tasks(_collatz_steps, items, keys=_keys(items), store_path=path, workers=0,
                  progress=False, batch_size=5, callback=stop_after_ten)
    assert len(_lines(path)) == 30 + 10
    assert not set(seen) & {r["key"] for r in _lines(path)[:30]}  # nothing recomputed

    last = run_tasks(_collatz_steps, items, keys=_keys(items), store_path=path, workers=0, progress=False)
    assert last.complete and last.skipped == 40 and last.done == 60
    keys = [r["key"] for r in _lines(path)]
    assert len(keys) == 100 and sorted(keys) == sorted(_keys(items))  # every item exactly once
    # a finished run resumes to nothing
    again = run_tasks(_collatz_steps, items, keys=_keys(items), store_path=path, workers=0, progress=False)
    assert again.done == 0 and again.skipped == 100 and len(_lines(path)) == 100


def test_a_line_cut_by_a_crash_is_recomputed(tmp_path: Path) -> None:
    items = [3, 6, 7]
    path = tmp_path / "r.jsonl"
    run_tasks(_collatz_steps, items, keys=_keys(items), store_path=path, workers=0, progress=False)
    text = path.read_text()
    path.write_text(text[: text.rindex("{") + 5])  # the last record half written
    rep = run_tasks(_collatz_steps, items, keys=_keys(items), store_path=path, workers=0, progress=False)
    assert rep.done == 1 and rep.skipped == 2 and rep.complete
    assert rep.store["collatz/7"]["steps"] == 16


def _fragile(n: int) -> dict:
    if n == 5:
        raise ValueError("five is not allowed")
    return {"n": n, "square": n * n}


def test_failing_item_is_reported_and_retried_on_rerun(tmp_path: Path) -> None:
    items = list(range(10))
    path = tmp_path / "r.jsonl"
    with pytest.raises(TaskError) as err:
        run_tasks(_fragile, items, keys=[str(i) for i in items], store_path=path, workers=0,
                  progress=False, batch_size=4)
    assert list(err.value.failed) == ["5"] and "five is not allowed" in err.value.failed["5"]
    assert sorted(r["n"] for r in _lines(path)) == [0, 1, 2, 3, 4, 6, 7, 8, 9]  # rest of its batch kept
    rep = run_tasks(_fragile, items, keys=[str(i) for i in items], store_path=path, workers=0,
                    progress=False, raise_on_error=False)
    assert rep.done == 0 and list(rep.failed) == ["5"] and rep.skipped == 9
    assert all(r["square"] == r["n"] ** 2 for r in _lines(path))


def test_an_open_store_sees_the_new_records(tmp_path: Path) -> None:
    store = RecordStore(tmp_path / "study" / "records.jsonl")
    store.append({"key": "collatz/1", "n": 1, "steps": 0, "sqrt": 1.0})
    rep = run_tasks(_collatz_steps, [1, 27], keys=_keys([1, 27]), store_path=store, workers=0, progress=False)
    assert rep.skipped == 1 and rep.done == 1 and store["collatz/27"]["steps"] == 111 and len(store) == 2


def _slow_square(n: int) -> dict:
    import time

    time.sleep(0.02)
    return {"n": n, "square": n * n}


def test_deadline_stops_starting_batches_and_the_run_resumes(tmp_path: Path) -> None:
    import time

    items = list(range(60))
    path = tmp_path / "r.jsonl"
    rep = run_tasks(_slow_square, items, keys=[str(i) for i in items], store_path=path, workers=0,
                    progress=False, batch_size=3, deadline=time.perf_counter() + 0.25)
    assert rep.interrupted and not rep.complete and 0 < rep.done < 60 and rep.done % 3 == 0  # whole batches
    assert len(_lines(path)) == rep.done
    late = run_tasks(_slow_square, items, keys=[str(i) for i in items], store_path=path, workers=0,
                     progress=False, deadline=time.perf_counter() - 1.0)
    assert late.interrupted and late.done == 0 and late.skipped == rep.done
    rest = run_tasks(_slow_square, items, keys=[str(i) for i in items], store_path=path, workers=0, progress=False)
    assert rest.complete and rest.done == 60 - rep.done
    with pytest.raises(OptionError, match="deadline"):
        run_tasks(_slow_square, items, keys=[str(i) for i in items], store_path=path, workers=0, deadline="soon")


def test_record_store_fresh_and_accept(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    store = RecordStore(path)
    store.append_many([{"key": "a", "config": 1}, {"key": "b", "config": 2}])
    store.append({"key": "a", "config": 2, "v": 3})
    path.write_text(path.read_text() + "[1, 2]\n{\"no key\": 1}\n")  # not records: skipped
    assert RecordStore(path)["a"]["v"] == 3 and len(RecordStore(path)) == 2  # the last record of a key wins
    one = RecordStore(path, accept=lambda r: r["config"] == 1)
    assert "a" in one and "b" not in one and one["a"] == {"key": "a", "config": 1}
    assert RecordStore(path, fresh=True).records() == [] and path.read_text() == ""


def test_input_validation(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with pytest.raises(InputError, match="keys"):
        run_tasks(_collatz_steps, [1, 2], keys=["a", "a"], store_path=path, workers=0)
    with pytest.raises(InputError, match="keys"):
        run_tasks(_collatz_steps, [1, 2], keys=["a"], store_path=path, workers=0)
    with pytest.raises(OptionError, match="workers"):
        run_tasks(_collatz_steps, [1], keys=["a"], store_path=path, workers=-1)
    with pytest.raises(OptionError, match="batch_size"):
        run_tasks(_collatz_steps, [1], keys=["a"], store_path=path, workers=0, batch_size=0)
    with pytest.raises(OptionError, match="scheduler"):
        with dask_client(scheduler="not an address"):
            pass
    assert default_batch_size(2000, 2, 1e-3) == 50 and default_batch_size(10**5, 2, 1e-3) == 100 and default_batch_size(50, 2, 1.0) == 1


@pytest.fixture(scope="module")
def cluster():
    """One local cluster of 2 worker processes for the Dask tests of this module."""
    from distributed import LocalCluster

    from contactmp.parallel import WORKER_ENV

    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                     env=dict(WORKER_ENV))
    yield c
    c.close()


def test_dask_run_by_scheduler_address_resumes_a_serial_run(tmp_path: Path, cluster) -> None:
    items = list(range(1, 301))
    path = tmp_path / "r.jsonl"
    ref = run_tasks(_collatz_steps, items, keys=_keys(items), store_path=tmp_path / "serial.jsonl",
                    workers=0, progress=False)
    run_tasks(_collatz_steps, items, keys=_keys(items), store_path=path, workers=0, progress=False,
              max_results=120)
    rep = run_tasks(_collatz_steps, items, keys=_keys(items), store_path=path,
                    scheduler=cluster.scheduler_address, progress=False, batch_size=10)
    assert rep.workers == 2 and rep.skipped == 120 and rep.done == 180 and rep.complete
    lines = _lines(path)
    assert len(lines) == 300 and len({r["key"] for r in lines}) == 300
    by_key = {r["key"]: r for r in lines}
    assert all(by_key[r["key"]] == r for r in ref.records())  # the same records as in process
    # BLAS is limited to one thread in the workers
    from distributed import Client

    with Client(cluster.scheduler_address) as client:
        env = client.run(lambda: __import__("os").environ.get("OPENBLAS_NUM_THREADS"))
    assert set(env.values()) == {"1"}


def test_dask_deadline_stops_submitting(tmp_path: Path, cluster) -> None:
    import time

    items = list(range(200))
    path = tmp_path / "r.jsonl"
    rep = run_tasks(_slow_square, items, keys=[str(i) for i in items], store_path=path,
                    scheduler=cluster.scheduler_address, progress=False, batch_size=2,
                    deadline=time.perf_counter() + 1.0)
    assert rep.interrupted and not rep.complete and 0 < rep.done < 200 and len(_lines(path)) == rep.done
    rest = run_tasks(_slow_square, items, keys=[str(i) for i in items], store_path=path,
                     scheduler=cluster.scheduler_address, progress=False, batch_size=20)
    assert rest.complete and rest.done == 200 - rep.done
    assert sorted(r["n"] for r in _lines(path)) == items
