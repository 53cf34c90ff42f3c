"""Distributed writers on a Dask LocalCluster: two workers against one, side by side, and the
machine's own limit for the same split.

    scripts/bench.sh scale-out [--repeat R] [--rows N] [--cells C] [--only ragged cells] [--smoke]

Each worker has one thread, and each task's CLI runs on its worker's threads (the default of a
distributed build), so both clusters get the same CPU per worker: the figure is the ratio of the
two wall times. The target, 1.7, is what two workers on a 2-core machine must reach.

- ragged: `tessera.ragged.build(..., client=)` of N random points in a 45° × 90° box (default
  3,000,000; cell order 10, shard order 3: about 80 leaves; the default t-digest delta, the
  dense statistics). Beside it the single build without a client on one thread and on all cores
  (the peer a user with one machine has).
- cells: `tessera.cells.convert(..., client=)` of a random h5ad of C cells × 2,000 genes (default
  200,000; about 5 % nonzero), beside the single convert on one core and on all cores.

**The machine's limit.** Two workers on one machine are two processes on its two cores, which
share its caches, memory and file system. The same split run by the CLI without Dask — the rows
(or tiles) cut in two halves as the distributed writer cuts them, built one after the other and
then side by side, each on one thread — gives the speed-up this machine allows for that work;
the summary sets the Dask figure against it.

Both clusters are started before the first round; the sides alternate which runs first
(bench_common). Every distributed output is checked byte for byte against the single writer's
once. --smoke runs every figure once on tiny inputs to prove the benchmark runs.
"""
import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from bench_common import Summary, alternate, random_anndata

TARGET = 1.7


def points(n, seed=3):
    rng = np.random.default_rng(seed)
    return dict(lat=rng.uniform(0, 45, n), lon=rng.uniform(-45, 45, n), value=rng.normal(100, 15, n))


def tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)}


def seconds(run):
    t0 = time.perf_counter()
    run()
    return time.perf_counter() - t0


def cli_env():
    """The environment the package gives its CLI (tessera._cli drops what a LocalCluster put in
    this process's environment for its workers: a malloc trim threshold)."""
    return {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}


def one_after_the_other(commands):
    for command in commands:
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=cli_env())


def side_by_side(commands):
    """Runs every command at once (one thread each waits for its process)."""
    failures = []

    def run(command):
        if subprocess.run(command, stdout=subprocess.DEVNULL, env=cli_env()).returncode != 0:
            failures.append(command)

    threads = [threading.Thread(target=run, args=(c,)) for c in commands]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        sys.exit(f"failed: {failures[0]}")


class Outputs:
    """Fresh output paths in `scratch`. They are kept until the writer's rounds end: on ext4,
    files created within about half a minute of deleting thousands of others cost several times
    the system time (the allocator steps over recently freed inodes), which a build into a new
    directory does not pay and which would land on whichever side ran after a deletion."""

    def __init__(self, scratch):
        scratch.mkdir()
        self.scratch, self.counter = scratch, iter(range(1 << 30))

    def __call__(self, what):
        return self.scratch / f"{what}{next(self.counter)}"

    def remove(self):
        shutil.rmtree(self.scratch)


def report(summary, what, rows, ceiling_rows, smoke):
    """Summary lines of one writer: rows are (1 worker, 2 workers, single 1 thread, single all)."""
    med = [statistics.median(col) for col in zip(*rows)]
    ratio = statistics.median(one / two for one, two, _s, _a in rows)
    limit = statistics.median(seq / par for seq, par in ceiling_rows)
    summary.add(f"{what}, 2 workers / 1 worker (speed-up)", f"{ratio:.2f}", f">= {TARGET}",
                None if smoke else ratio >= TARGET)
    summary.add(f"{what}, machine limit: two CLIs side by side / one after the other", f"{limit:.2f}")
    summary.add(f"{what}, speed-up / machine limit", f"{ratio / limit:.2f}")
    summary.add(f"{what}, 2 workers, seconds", f"{med[1]:.2f}")
    summary.add(f"{what}, single 1 thread / 2 workers", f"{med[2] / med[1]:.2f}")
    summary.add(f"{what}, single all cores / 2 workers", f"{med[3] / med[1]:.2f}")


def run_rounds(args, summary, what, title, out, writer, single_one_thread, halves_by_cli):
    """The six sides of one writer, alternating (bench_common): `writer(**how)` into a fresh
    output with one worker, two, one thread and the default; the CLI halves one after the
    other and side by side. Prints the rounds and adds the writer's summary lines."""
    def timed(**how):
        target = out("out")
        return seconds(lambda: writer(target, **how))

    sides = [lambda: timed(client=args.clients[1]), lambda: timed(client=args.clients[2]),
             lambda: timed(**single_one_thread), lambda: timed(),
             lambda: seconds(lambda: halves_by_cli(one_after_the_other)),
             lambda: seconds(lambda: halves_by_cli(side_by_side))]
    rows, ceiling = [], []
    for _r, one, two, single, single_all, seq, par in alternate(args.repeat, *sides):
        rows.append((one, two, single, single_all))
        ceiling.append((seq, par))
    out.remove()
    print_rounds(title, rows, ceiling)
    report(summary, what, rows, ceiling, args.smoke)


def print_rounds(title, rows, ceiling_rows):
    print(title)
    print("round  1 worker  2 workers  ratio  single 1 thread  single all cores  limit: serial  side by side  ratio")
    for r, ((one, two, single, single_all), (seq, par)) in enumerate(zip(rows, ceiling_rows)):
        print(f"{r:5d}  {one:8.2f}  {two:9.2f}  {one / two:5.2f}  {single:15.2f}  {single_all:16.2f}  "
              f"{seq:13.2f}  {par:12.2f}  {seq / par:5.2f}")


def bench_ragged(args, scratch, summary):
    from tessera import _tessera, cli_path, ragged

    data = points(args.rows)
    options = dict(cell_order=10, shard_order=3, stats=True)
    out = Outputs(scratch / "ragged")

    reference = out("reference")
    ragged.build(reference, **data, **options, threads=1)
    for workers, client in args.clients.items():
        check = out(f"check{workers}-")
        ragged.build(check, **data, **options, client=client)
        if tree(check) != tree(reference):
            sys.exit(f"the {workers}-worker ragged build differs from the single build")

    # The limit: the rows cut in two by shard as the distributed build cuts them, one CLI per half.
    halves, _occupied, _refused = _tessera.ragged_partition_rows(data["lat"], data["lon"], 3, "authalic", 2, data)
    inputs = []
    for i, half in enumerate(halves):
        inputs.append(scratch / f"half{i}")
        inputs[-1].mkdir()
        for name, column in half.items():
            np.save(inputs[-1] / f"{name}.npy", column)
    flags = ["--value-col", "value", "--lat-col", "lat", "--lon-col", "lon", "--cell-order", "10", "--shard-order",
             "3", "--stats", "--threads", "1", "--leaves-only"]

    def halves_by_cli(run):
        target = out("limit")
        run([[str(cli_path()), "ragged", "build", "--input", str(i), "--out", str(target), *flags] for i in inputs])

    run_rounds(args, summary, "ragged build",
               f"ragged build of {args.rows:,} points (cell order 10, shard order 3, stats), wall seconds", out,
               lambda target, **how: ragged.build(target, **data, **options, **how), dict(threads=1), halves_by_cli)


def bench_cells(args, scratch, summary):
    from tessera import cells, cli_path

    h5ad = scratch / "input.h5ad"
    random_anndata(args.cells, 2000).write_h5ad(h5ad)
    out = Outputs(scratch / "cells")
    tile = max(100, args.cells // 20)  # 20 tiles
    options = dict(tile_size=tile, quiet=True, open_dataset=False)

    reference = out("reference")
    cells.convert(h5ad, reference, **options, workers=1, threads=1)
    for workers, client in args.clients.items():
        check = out(f"check{workers}-")
        cells.convert(h5ad, check, **options, client=client)
        if tree(check) != tree(reference):
            sys.exit(f"the {workers}-worker cells convert differs from the single convert")

    # The limit: the tiles cut in two halves, one CLI per half on one core, with the gene order
    # of the distributed convert's plan step.
    cli = str(cli_path())
    order = scratch / "gene_order.npy"
    subprocess.run([cli, "cells", "convert", "--h5ad-glob", str(h5ad), "--output", str(out("plan")), "--gene-order-out",
                    str(order), "--tile-size", str(tile), "--quiet"], check=True, stdout=subprocess.DEVNULL, env=cli_env())
    n_tiles = -(-args.cells // tile)
    runs = [(0, n_tiles // 2), (n_tiles // 2, n_tiles)]

    def halves_by_cli(run):
        target = out("limit")
        target.mkdir()
        run([[cli, "cells", "convert", "--h5ad-glob", str(h5ad), "--output", str(target), "--tiles", f"{a}:{b}",
              "--gene-order-from", str(order), "--tile-size", str(tile), "--workers", "1", "--threads", "1", "--quiet"]
             for a, b in runs])

    run_rounds(args, summary, "cells convert",
               f"cells convert of {args.cells:,} cells x 2,000 genes ({n_tiles} tiles), wall seconds", out,
               lambda target, **how: cells.convert(h5ad, target, **options, **how), dict(workers=1, threads=1),
               halves_by_cli)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--cells", type=int, default=200_000)
    ap.add_argument("--only", nargs="+", choices=["ragged", "cells"], default=["ragged", "cells"])
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    if args.smoke:
        args.repeat, args.rows, args.cells = 1, 20_000, 2_000
    import distributed

    # Fixed timestamps (inherited by the workers): the outputs are compared byte for byte.
    os.environ["SOURCE_DATE_EPOCH"] = "1700000000"
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tessera-bench-scale-"))
    clusters = []
    try:
        clients = {}
        for workers in (1, 2):
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                               dashboard_address=None, host="127.0.0.1")
            clusters.append(cluster)
            clients[workers] = distributed.Client(cluster, set_as_default=False)
        args.clients = clients
        summary = Summary()
        if "ragged" in args.only:
            bench_ragged(args, scratch, summary)
        if "cells" in args.only:
            bench_cells(args, scratch, summary)
        summary.print()
    finally:
        for cluster in clusters:
            cluster.close()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
