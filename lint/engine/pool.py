"""A job over many items in worker processes for big batches; a dying worker is
isolated by bisection."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from typing import TypeVar

from ddplint import cancellation
from ddplint.interrupt import native_work_ends_on_signals, quiet_worker, stop_pool

#: Below this many files to parse, a process pool costs more than it saves.
POOL_THRESHOLD = 24


J = TypeVar("J")


R = TypeVar("R")


def run_jobs(
    job: Callable[[J], R],
    work: list[J],
    jobs: int,
    crashed: Callable[[J], R] | None = None,
    done: Callable[[int], None] | None = None,
) -> list[R]:
    """``job`` over each item of ``work``, results in order; worker processes for big
    batches (``job`` must then be a picklable module-level function).

    A worker that dies (a native crash, the out-of-memory killer) breaks its pool and
    every item the pool had not finished. Those are retried in halves, each in a fresh
    pool, until the item that kills a worker is alone: it gets ``crashed(item)`` (or the
    error is raised when there is no ``crashed``), every other item its real result.
    ``done(n)`` is told as items finish.
    """
    if jobs <= 1 or len(work) < POOL_THRESHOLD:
        return _run_in_process(job, work, done)
    from concurrent.futures.process import BrokenProcessPool  # multiprocessing: pools only

    finished: dict[int, R] = {}
    batches = [list(range(len(work)))]
    while batches:
        batch = batches.pop()
        failed = _run_batch(job, work, batch, jobs, finished, done)
        if not failed:
            continue
        if len(batch) == 1:
            if crashed is None:
                raise BrokenProcessPool("a worker process died")
            finished[batch[0]] = crashed(work[batch[0]])
        elif len(failed) == 1:
            batches.append(failed)
        else:
            middle = len(failed) // 2
            batches += [failed[middle:], failed[:middle]]
    return [finished[position] for position in range(len(work))]


def _run_in_process(
    job: Callable[[J], R], work: list[J], done: Callable[[int], None] | None
) -> list[R]:
    """``job`` over ``work`` here; a signal ends the process even inside a native parse."""
    results = []
    with native_work_ends_on_signals():
        for item in work:
            cancellation.check()
            results.append(job(item))
            if done is not None:
                done(1)
    return results


def _apply(job: Callable[[J], R], items: list[J]) -> list[R]:
    return [job(item) for item in items]


def _run_batch(
    job: Callable[[J], R],
    work: list[J],
    batch: list[int],
    jobs: int,
    finished: dict[int, R],
    done: Callable[[int], None] | None,
) -> list[int]:
    """Run ``batch`` (positions in ``work``) in one pool; the positions left unfinished."""
    from concurrent.futures.process import BrokenProcessPool, ProcessPoolExecutor

    size = max(1, len(batch) // (jobs * 8))
    chunks = [batch[start : start + size] for start in range(0, len(batch), size)]
    failed: list[int] = []
    pool = ProcessPoolExecutor(
        max_workers=min(jobs, len(batch)), initializer=quiet_worker, initargs=(os.getpid(),)
    )
    try:
        # The workers fork in the first submit. Frozen, the parent's objects are left out
        # of the workers' collections, whose scans would otherwise write to (and so copy)
        # every page of the parent's heap they inherit.
        gc.freeze()
        try:
            futures = [pool.submit(_apply, job, [work[i] for i in chunk]) for chunk in chunks]
        finally:
            gc.unfreeze()
        for chunk, future in zip(chunks, futures, strict=True):
            try:
                finished.update(zip(chunk, future.result(), strict=True))
            except BrokenProcessPool:
                failed.extend(chunk)
            else:
                if done is not None:
                    done(len(chunk))
    except BaseException:  # an interrupt (or a bug): no worker may outlive the run
        stop_pool(pool)
        raise
    pool.shutdown()
    return failed


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)
