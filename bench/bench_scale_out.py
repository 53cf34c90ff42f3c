"""Distributed writers on a Dask LocalCluster: two workers against one, side by side.

    scripts/bench.sh scale-out [--repeat R] [--rows N] [--smoke]

`tessera.ragged.build(..., client=)` of N random points in a 45° × 90° box (default 3,000,000;
cell order 10, shard order 3: about 70 leaves; the default t-digest delta, the dense statistics) on a LocalCluster of one worker process
and on one of two, each worker with one thread and each task's CLI with `threads=1`, so both runs
get the same CPU per worker: the figure is the ratio of the two wall times (the target, 1.7, is
what two workers on a 2-core machine must reach). Beside it, for reference, the single build
without a client on one thread and on all cores (the peer a user with one machine has). Both
clusters are started before the first round; the sides alternate which runs first (bench_common).
Every output is checked byte for byte against the single build's once. --smoke runs every figure
once on a tiny input to prove the benchmark runs.
"""
import argparse
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

from bench_common import Summary, alternate

TARGET = 1.7


def points(n, seed=3):
    rng = np.random.default_rng(seed)
    return dict(lat=rng.uniform(0, 45, n), lon=rng.uniform(-45, 45, n), value=rng.normal(100, 15, n))


def tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    if args.smoke:
        args.repeat, args.rows = 1, 20_000
    import distributed
    from tessera import ragged

    # Fixed timestamps (inherited by the workers): the outputs are compared byte for byte.
    os.environ["SOURCE_DATE_EPOCH"] = "1700000000"
    data = points(args.rows)
    options = dict(cell_order=10, shard_order=3, stats=True, threads=1)
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tessera-bench-scale-"))
    clusters = []
    try:
        clients = {}
        for workers in (1, 2):
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                               dashboard_address=None, host="127.0.0.1")
            clusters.append(cluster)
            clients[workers] = distributed.Client(cluster, set_as_default=False)
        counter = iter(range(1 << 30))

        def timed(**how):
            out = scratch / f"out{next(counter)}"
            t0 = time.perf_counter()
            ragged.build(out, **data, **{**options, **how})
            seconds = time.perf_counter() - t0
            shutil.rmtree(out)
            return seconds

        reference = scratch / "reference"
        ragged.build(reference, **data, **options)
        for workers, client in clients.items():
            out = scratch / f"check{workers}"
            ragged.build(out, **data, **options, client=client)
            if tree(out) != tree(reference):
                sys.exit(f"the {workers}-worker build differs from the single build")
            shutil.rmtree(out)

        sides = [lambda: timed(client=clients[1]), lambda: timed(client=clients[2]),
                 lambda: timed(), lambda: timed(threads=0)]
        rows = []
        print(f"ragged build of {args.rows:,} points (cell order 10, shard order 3, stats), wall seconds")
        print("round  1 worker  2 workers  ratio  single 1 thread  single all cores")
        for r, one, two, single, single_all in alternate(args.repeat, *sides):
            rows.append((one, two, single, single_all))
            print(f"{r:5d}  {one:8.2f}  {two:9.2f}  {one / two:5.2f}  {single:15.2f}  {single_all:16.2f}")
        med = [statistics.median(col) for col in zip(*rows)]
        ratio = statistics.median(one / two for one, two, _s, _a in rows)
        summary = Summary()
        summary.add("ragged build, 2 workers / 1 worker (speed-up)", f"{ratio:.2f}", f">= {TARGET}",
                    None if args.smoke else ratio >= TARGET)
        summary.add("ragged build, 2 workers, seconds", f"{med[1]:.2f}")
        summary.add("ragged build, single 1 thread / 2 workers", f"{med[2] / med[1]:.2f}")
        summary.add("ragged build, single all cores / 2 workers", f"{med[3] / med[1]:.2f}")
        summary.print()
    finally:
        for cluster in clusters:
            cluster.close()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
