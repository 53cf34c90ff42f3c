"""`tessera.ragged.build(..., client=)`: a morton-hive build on a Dask cluster (docs/distributed.md).

The driver geocodes every row to its shard, sorts the rows by shard (stably: a cell's rows keep
their input order, which the t-digests depend on) and cuts the shard list into contiguous
partitions of about equal rows. Each partition is one task, run on a worker as
`tessera ragged build --leaves-only`: it commits the leaves of its shards, and only those, into the
output (a directory every worker can reach, or a bucket). When every task is done the driver runs
`tessera ragged build --commit-leaves` once: the hive manifest and the root coverage MOC, exactly
as a single build writes them after its last leaf. Because a leaf depends only on its own rows in
their input order, the store is byte for byte the one `build()` without a client writes.

A task that runs again (its worker was killed) rewrites its leaves whole: the CLI it started died
with the worker, and what it left (a staging leaf, or in a bucket an unfinished leaf and its lock)
is removed by the retry before it writes.
"""
from __future__ import annotations

import json as _json
import os as _os
import tempfile as _tempfile
import time as _time
import warnings as _warnings
from typing import Any, Optional

import numpy as np

from . import _cli, _ragged_hive, _tessera
from ._tessera import UsageError

# `tessera ragged build`'s default shard order (its --help says so; a test checks the two agree).
# The rows are partitioned at the build's shard order, so a shard is never split between tasks.
DEFAULT_SHARD_ORDER = 9
_REFUSED = np.uint64(np.iinfo(np.uint64).max)  # rows whose coordinates the build refuses


def _partition_bounds(row_starts: np.ndarray, n_rows: int, partitions: int) -> list[int]:
    """Cuts the shard groups (first sorted row of each, ascending) into at most `partitions`
    contiguous runs of about equal rows; returns the first group of each run."""
    n_groups = len(row_starts)
    partitions = max(1, min(partitions, n_groups))
    targets = np.arange(1, partitions) * (n_rows / partitions)
    cuts = np.searchsorted(row_starts, targets, side="left")
    bounds = sorted({0, *(int(c) for c in cuts if 0 < c < n_groups)})
    return bounds


def _build_task(output: str, columns: dict, flags: list[str]) -> dict:
    """One task: the leaves of the shards in `columns` (runs on a worker)."""
    return _ragged_hive.run_build(output, columns, flags)


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
    words = _tessera.ragged_cell_of(columns["lat"], columns["lon"], shard_order,
                                    str(options.get("latitude", "authalic")), refused_as_max=True)
    order = np.argsort(words, kind="stable")
    sorted_words = words[order]
    group_starts = np.flatnonzero(np.r_[True, sorted_words[1:] != sorted_words[:-1]])
    group_words = sorted_words[group_starts]
    valid = group_words != _REFUSED
    _check_targets(output, _tessera.ragged_nested_to_decimal(group_words[valid], shard_order),
                   bool(options.get("overwrite")))

    if partitions is None:
        partitions = 4 * max(1, sum(client.nthreads().values()))
    bounds = _partition_bounds(group_starts, n_rows, int(partitions))
    row_bounds = [int(group_starts[b]) for b in bounds] + [n_rows]
    task_flags = [f for f in flags if f != "--overwrite"] + ["--leaves-only", "--overwrite"]
    futures = []
    with _warnings.catch_warnings():
        # The rows travel inside the task, not as scattered data: the scheduler then still has
        # them when it runs a task again after its worker died (scattered data would die with it).
        _warnings.filterwarnings("ignore", message=".*[Ll]arge object.*")
        for i in range(len(row_bounds) - 1):
            rows = order[row_bounds[i]:row_bounds[i + 1]]
            part = {name: np.ascontiguousarray(column[rows]) for name, column in columns.items()}
            futures.append(client.submit(_build_task, output, part, task_flags, pure=False))
    reports = client.gather(futures)

    leaves = [leaf for r in reports for leaf in r["leaves"]]
    if leaves:
        with _tempfile.TemporaryDirectory(prefix="tessera-commit-") as tmp:
            report_file = _os.path.join(tmp, "reports.json")
            with open(report_file, "w") as f:
                _json.dump(reports, f)
            commit_flags = [f for f in flags if f != "--overwrite"]
            _cli.run(["ragged", "build", "--out", output, "--commit-leaves", report_file, *commit_flags])
    return _merge_reports(output, reports, started)
