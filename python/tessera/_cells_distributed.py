"""`tessera.cells.convert(..., client=)`: a deltacells conversion on a Dask cluster (docs/distributed.md).

Three steps of `tessera cells convert`, each given the same inputs and flags:

1. plan (driver): `--gene-order-out FILE` scans the inputs, sums the gene totals as a single
   convert does and writes the gene order, then prints the dataset's size; it also refuses an
   occupied output before any task runs;
2. tiles (tasks): `--tiles FIRST:LAST --gene-order-from FILE` encodes a run of tiles into the
   shared tiles directory — a tile depends only on its cells, the gene order and the encoding
   options, so a task's tiles are the single convert's;
3. commit (driver): `--tiles-from DIR` writes the dataset around those tiles (each parsed and
   checked first): obs, var, the gene files and the manifest last, locally or into a bucket, with
   the single convert's output policy and commit protocol.

A task run again after its worker died rewrites its tiles (each tile is written atomically, and
the CLI died with the worker). The tiles directory is removed when the conversion ends.
"""
from __future__ import annotations

import json as _json
import os as _os
import shutil as _shutil
import tempfile as _tempfile
from typing import Any, Optional

from . import _cli, _tasks, _uri


# Tiles per task the default partitioning aims at: a task's fixed cost (about 0.3 s) is then
# under a tenth of its work with tiles of 10,000 cells.
_TILES_PER_TASK = 8


def _task(args: list[str]) -> str:
    """One task: a run of tiles (runs on a worker: as many tiles at once as it has threads, one
    compression thread each, unless the caller set `workers` or `threads`)."""
    args = _cli.with_default(args, "--workers", _tasks.worker_threads())
    return _cli.run(_cli.with_default(args, "--threads", 1)).stdout


def _tile_runs(n_tiles: int, partitions: int) -> list[tuple[int, int]]:
    """[first, last) runs of about equal tiles, at most `partitions` of them."""
    parts = max(1, min(partitions, n_tiles))
    bounds = [n_tiles * i // parts for i in range(parts + 1)]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if a < b]


def convert(client: Any, inputs_args: list[str], output: str, flags: list[str], quiet_flag: list[str],
            partitions: Optional[int], tiles_dir: Optional[Any]) -> str:
    # A fresh directory the workers write and the driver reads: in `tiles_dir`, else beside a
    # local output (the same file system: the commit links the tiles instead of copying them),
    # else in the staging directory of bucket outputs.
    if tiles_dir is not None:
        parent = _os.fspath(tiles_dir)
    elif _uri.is_remote(output):
        parent = _os.environ.get("TESSERA_STAGING_DIR") or _tempfile.gettempdir()
    else:
        parent = _os.path.dirname(_os.path.abspath(output))
    _os.makedirs(parent, exist_ok=True)
    tiles = _tempfile.mkdtemp(prefix=".tessera-tiles-", dir=parent)
    try:
        order_file = _os.path.join(tiles, "gene_order.npy")
        plan = _json.loads(_cli.run(["cells", "convert", *inputs_args, "--output", output, "--gene-order-out",
                                     order_file, *flags, "--quiet"]).stdout.strip().splitlines()[-1])
        order_flags = ["--gene-order-from", order_file] if plan["gene_order"] else []
        if partitions is None:
            partitions = _tasks.default_partitions(int(plan["n_tiles"]), sum(client.nthreads().values()),
                                                   _TILES_PER_TASK)
        futures = [client.submit(_task, ["cells", "convert", *inputs_args, "--output", tiles, "--tiles", f"{a}:{b}",
                                         *order_flags, *flags, "--quiet"], pure=False)
                   for a, b in _tile_runs(int(plan["n_tiles"]), int(partitions))]
        client.gather(futures)
        return _cli.run(["cells", "convert", *inputs_args, "--output", output, "--tiles-from", tiles, *order_flags,
                         *flags, *quiet_flag]).stdout
    finally:
        _shutil.rmtree(tiles, ignore_errors=True)
