"""Batches of tiny problems: the compiled kernel of the next chunk runs in a worker thread while the
main thread builds the Results of the previous one.

On problems of a few unknowns a compiled solve takes a fraction of a microsecond and turning its
answer into a :class:`~contactmp.result.Result` (a Python object, its dicts, two array views) takes
about as long; done one after the other the two add up. The kernels release the GIL (numba
``nogil=True``), so with two cores the chunk ``k + 1`` is solved while chunk ``k`` is packed, and a
batch costs about the larger of the two instead of their sum.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

#: problems per chunk: large enough that a thread hand-off (~20 us) is negligible, small enough
#: that the first chunk (not overlapped) is a small part of a batch of thousands
CHUNK = 1024


def pipelined(count: int, solve: Callable[[int, int], None], build: Callable[[int, int], list[Any]],
              overlap: bool = True, chunk: int = CHUNK) -> list[Any]:
    """``solve(lo, hi)`` then ``build(lo, hi)`` on the chunks ``[lo, hi)`` of ``range(count)``, the
    results of ``build`` concatenated in order. With ``overlap`` (and at least two chunks)
    ``solve`` of the next chunk runs in a worker thread while ``build`` runs on the previous one;
    ``solve`` must release the GIL for that to pay. An exception of either is raised here."""
    if not overlap or count <= chunk:
        solve(0, count)
        return build(0, count)
    out: list[Any] = []
    with ThreadPoolExecutor(max_workers=1) as worker:
        pending = worker.submit(solve, 0, chunk)
        for lo in range(0, count, chunk):
            hi = min(lo + chunk, count)
            pending.result()
            if hi < count:
                pending = worker.submit(solve, hi, min(hi + chunk, count))
            out.extend(build(lo, hi))
    return out
