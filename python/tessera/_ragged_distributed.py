"""`tessera.ragged.build(..., client=)`: a morton-hive build on a Dask cluster (docs/distributed.md).

The driver geocodes every row to its shard and cuts the occupied shards into contiguous runs of
about equal rows (`_tessera.ragged_partition_rows`, one pass in C++): each run's rows are copied
out in their input order (a cell's rows keep their order, which the t-digests depend on) and
scattered to a worker. Each partition is one task, run on a worker as
`tessera ragged build --leaves-only`: it commits the leaves of its shards, and only those, into the
output (a directory every worker can reach, or a bucket). When every task is done the driver runs
`tessera ragged build --commit-leaves` once: the hive manifest and the root coverage MOC, exactly
as a single build writes them after its last leaf. Because a leaf depends only on its own rows in
their input order, the store is byte for byte the one `build()` without a client writes.

A task that runs again (its worker was killed; the driver sends its rows again when they died
with the worker) rewrites its leaves whole: the CLI it started died with the worker, and what it
left (a staging leaf, or in a bucket an unfinished leaf and its lock) is removed by the retry
before it writes.
"""
from __future__ import annotations

import json as _json
import os as _os
import tempfile as _tempfile
import time as _time
from typing import Any, Optional

from . import _cli, _ragged_hive, _tasks, _tessera
from ._tessera import UsageError

# `tessera ragged build`'s default shard order (its --help says so; a test checks the two agree).
# The rows are partitioned at the build's shard order, so a shard is never split between tasks.
DEFAULT_SHARD_ORDER = 9
_MAX_PARTITIONS = 1 << 15  # ragged::kMaxPartitions


# Rows per task the default partitioning aims at: about 0.7 s of work on one core.
_ROWS_PER_TASK = 1_000_000


def _build_task(output: str, columns: dict, flags: list[str]) -> dict:
    """One task: the leaves of the shards in `columns` (runs on a worker, with its threads unless
    the caller set `threads`)."""
    flags = _cli.with_default(flags, "--threads", _tasks.worker_threads())
    return _ragged_hive.run_build(output, columns, flags)


# How often a partition is sent again after the worker holding its rows died.
_RESENDS = 3


def _run_tasks(client: Any, output: str, parts: list[dict], flags: list[str]) -> tuple[list[dict], int]:
    """Runs one task per partition; returns their reports in partition order and how many times
    a partition was sent again.

    The rows are scattered to the workers rather than embedded in the tasks: a task's rows then
    go straight to one worker (a 36 MB partition in about 0.03 s, against a second through the
    scheduler). Scattered rows die with their worker, and Dask cancels a task whose input is
    lost instead of running it again, so the driver, which still holds every partition, sends
    the rows again and resubmits (at most `_RESENDS` times per partition). A task's own error
    (a tessera.Error from its CLI) is raised as it is, once every other task has ended: no CLI
    is left writing when the build returns."""
    import distributed

    def submit(i: int):
        [rows] = client.scatter([parts[i]], hash=False)
        return client.submit(_build_task, output, rows, flags, pure=False)

    index = {submit(i): i for i in range(len(parts))}
    reports: list[Optional[dict]] = [None] * len(parts)
    resent = [0] * len(parts)
    queue = distributed.as_completed(list(index), loop=client.loop)  # not default_client(): it may be none
    error: Optional[Exception] = None
    for future in queue:
        i = index.pop(future)
        if future.status == "cancelled" and resent[i] < _RESENDS and error is None:  # its rows died with a worker
            resent[i] += 1
            retry = submit(i)
            index[retry] = i
            queue.add(retry)
            continue
        try:
            reports[i] = future.result()
        except Exception as e:  # noqa: BLE001 - the first task error is raised once all have ended
            error = error or e
    if error is not None:
        raise error
    return reports, sum(resent)  # type: ignore[return-value]


def _check_targets(output: str, shard_words: list[str], overwrite: bool) -> None:
    """Refuses, before any task runs, a build onto committed leaves without `overwrite` (the
    single build's check): the tasks themselves replace their leaves, so that a retried task
    finds its earlier attempt's leaf replaceable."""
    if overwrite or _ragged_hive.manifest(output) is None:
        return
    committed = {shard for _path, shard, done in _tessera.ragged_walk_leaves(output) if done}
    for word in shard_words:
        if word in committed:
            raise UsageError(f"{output}/{_ragged_hive.leaf_path(output, word)}: a committed leaf already exists "
                             "(use --overwrite to replace it)")


def _merge_reports(output: str, reports: list[dict], started: float) -> dict:
    """One report in the single build's shape from the tasks' reports (in shard order)."""
    rejected: dict[str, int] = {}
    for r in reports:
        for reason, n in r["rows"]["rejected_by_reason"].items():
            rejected[reason] = rejected.get(reason, 0) + n
    # time_join is for the commit step only: the single build's report has none.
    leaves = [{k: v for k, v in leaf.items() if k != "time_join"} for r in reports for leaf in r["leaves"]]
    merged = {
        "store": output,
        "layout": "hive",
        "semantic_hash": reports[0]["semantic_hash"],
        "shards_written": len(leaves),
        "cells_with_data": sum(r["cells_with_data"] for r in reports),
        "rows": {
            "read": sum(r["rows"]["read"] for r in reports),
            "accepted": sum(r["rows"]["accepted"] for r in reports),
            "rejected": sum(rejected.values()),
            "rejected_by_reason": dict(sorted(rejected.items())),
        },
        "leaves": leaves,
        "warnings": [w for r in reports for w in r["warnings"]],
        "elapsed_seconds": _time.monotonic() - started,
        "tasks": len(reports),
    }
    uploads = [r["upload"] for r in reports if "upload" in r]
    if uploads:
        merged["upload"] = {key: sum(u[key] for u in uploads) for key in ("objects", "bytes", "removed", "seconds")}
    return merged


def build(client: Any, output: str, columns: dict, flags: list[str], options: dict,
          partitions: Optional[int]) -> dict:
    started = _time.monotonic()
    if options.get("strict"):
        raise UsageError("strict=True stops at the first bad row of one input, which a distributed build does not "
                         "have: build without client=, or drop strict")
    if options.get("layout", "hive") != "hive":
        raise UsageError("a distributed build writes a hive (a flat store is one set of arrays): drop layout= or "
                         "build without client=")
    n_rows = len(columns["lat"])
    if n_rows == 0:
        return _ragged_hive.run_build(output, columns, flags)
    shard_order = int(options.get("shard_order", DEFAULT_SHARD_ORDER))
    if partitions is None:
        partitions = _tasks.default_partitions(n_rows, sum(client.nthreads().values()), _ROWS_PER_TASK)
    parts, occupied, _refused = _tessera.ragged_partition_rows(
        columns["lat"], columns["lon"], shard_order, str(options.get("latitude", "authalic")),
        max(1, min(int(partitions), _MAX_PARTITIONS)), columns)
    _check_targets(output, _tessera.ragged_nested_to_decimal(occupied, shard_order), bool(options.get("overwrite")))
    task_flags = [f for f in flags if f != "--overwrite"] + ["--leaves-only", "--overwrite"]
    reports, resent = _run_tasks(client, output, parts, task_flags)

    leaves = [leaf for r in reports for leaf in r["leaves"]]
    if leaves:
        with _tempfile.TemporaryDirectory(prefix="tessera-commit-") as tmp:
            report_file = _os.path.join(tmp, "reports.json")
            with open(report_file, "w") as f:
                _json.dump(reports, f)
            commit_flags = [f for f in flags if f != "--overwrite"]
            _cli.run(["ragged", "build", "--out", output, "--commit-leaves", report_file, *commit_flags])
    merged = _merge_reports(output, reports, started)
    merged["tasks_resent"] = resent
    return merged
