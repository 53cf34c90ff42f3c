"""What the distributed writers (`client=`) decide about their Dask tasks (docs/distributed.md)."""
from __future__ import annotations


def worker_threads() -> int:
    """The threads of the Dask worker running the calling task: the CPU a task's CLI may use.
    A CLI left to its default would take every core of the machine, and the workers of one
    machine would then run each other's CLIs off their cores."""
    from distributed import get_worker

    worker = get_worker()
    state = getattr(worker, "state", None)  # distributed >= 2022.08 keeps it in the worker's state
    return max(1, int(getattr(state, "nthreads", None) or getattr(worker, "nthreads", 1)))


def default_partitions(units: int, threads: int, units_per_task: int) -> int:
    """How many tasks share `units` of work (rows, tiles) on a cluster of `threads` worker
    threads: one per thread for every `units_per_task` units it would get, between one and four
    per thread. A task's CLI has a fixed cost (its start, reading its inputs' headers: 0.1 to
    0.3 s), so tasks are not made smaller than `units_per_task` where the input allows; several
    per thread let a fast worker take over a slow one's share."""
    threads = max(1, threads)
    return threads * max(1, min(4, units // (threads * units_per_task)))
