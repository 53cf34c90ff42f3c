"""Benchmarks of the `tessera` Python package against the C++ CLI, measured side by side.

    scripts/bench.sh python [--repeat R] [--batches B] [--tet-gib G]

1. cells: `tessera.cells.TorchDataset` batches of 5,000 cells as `torch.sparse_csr_tensor`,
   against `tessera cells epoch` (the same epoch iterator in C++) on the same 100-tile dataset
   (the one `scripts/bench.sh cells` generates), B batches each, alternating R times.
2. tet: `ds[...]` of a whole multi-chunk raw `.tet` dataset (about G GiB) into numpy, against
   `tessera tet cat` of the same dataset to a .npy file in /dev/shm.
3. GIL: two Python threads each decoding different whole tiles (`get_batch` of a tile's cells,
   one Dataset per thread, one decode thread each) against one thread doing the same tiles.

Each side runs once untimed first (page cache, mappings, imports), then the sides alternate
which goes first. Each line reports both rates and their ratio from the same run; the median over repeats is
what docs/performance.md quotes.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import tessera


def median_ratio(pairs):
    return statistics.median(a / b for a, b in pairs)


def side_by_side(label: str, python_rate, cli_rate, repeat: int, show, target: float) -> None:
    """Runs each side once untimed (page cache, mappings, imports, pools), then `repeat` rounds
    alternating which side goes first, so neither always inherits the other's warm state."""
    python_rate(), cli_rate()
    pairs = []
    for r in range(repeat):
        if r % 2:
            cli, py = cli_rate(), python_rate()
        else:
            py, cli = python_rate(), cli_rate()
        pairs.append((py, cli))
        print(f"{label:6} round {r + 1}: {show(py, cli)}, ratio {py / cli:.3f}")
    print(f"{label:6} median python/CLI: {median_ratio(pairs):.3f}  (target >= {target:.2f})")


def bench_cells(dataset: pathlib.Path, batches: int, repeat: int) -> None:
    import torch  # noqa: F401  (imported here so the timing excludes it)
    from tessera.cells import TorchDataset

    def python_rate():
        ds = TorchDataset(dataset, 5000, seed=1)
        ds.set_epoch(0)
        n = 0
        t0 = time.perf_counter()
        for i, x in enumerate(ds):
            n += x.shape[0]
            if i + 1 == batches:
                break
        return n / (time.perf_counter() - t0)

    def cli_rate():
        out = subprocess.run([str(tessera.cli_path()), "cells", "epoch", str(dataset), "--batch-size", "5000",
                              "--batches", str(batches), "--seed", "1", "--json"], check=True, capture_output=True,
                             text=True).stdout
        return json.loads(out)["cells_per_second"]

    side_by_side("cells", python_rate, cli_rate, repeat,
                 lambda py, cli: f"python {py:,.0f} cells/s, CLI {cli:,.0f} cells/s", 0.90)


def bench_tet(data_dir: pathlib.Path, gib: float, repeat: int) -> None:
    side = int((gib * 2**30 / 4) ** 0.5) // 1024 * 1024
    path = data_dir / f"raw_{side}.tet"
    if not path.exists():
        tessera.tet.synth(path, [f"v:f32:{side}x{side}:1024x1024"], seed=3)
    ds = tessera.tet.open(path)["v"]
    shm = pathlib.Path("/dev/shm") if pathlib.Path("/dev/shm").is_dir() else pathlib.Path(tempfile.gettempdir())
    out = shm / "tessera-bench-cat.npy"

    def python_rate():
        t0 = time.perf_counter()
        a = ds[...]
        return a.nbytes / (time.perf_counter() - t0)

    def cli_rate():
        t0 = time.perf_counter()
        subprocess.run([str(tessera.cli_path()), "tet", "cat", str(path), "v", "--out", str(out)], check=True)
        rate = ds.nbytes / (time.perf_counter() - t0)
        out.unlink()
        return rate

    side_by_side("tet", python_rate, cli_rate, repeat,
                 lambda py, cli: f"ds[...] {py / 1e9:.2f} GB/s, CLI cat {cli / 1e9:.2f} GB/s", 0.80)


def bench_gil(dataset: pathlib.Path, tiles_per_thread: int, repeat: int) -> None:
    probe = tessera.cells.open(dataset)
    bounds = [probe.tile_bounds(t) for t in range(min(probe.n_tiles, 4 * tiles_per_thread))]
    probe.close()

    def decode(tiles):
        ds = tessera.cells.open(dataset, decode_threads=1, max_cached_tiles=1)
        for lo, hi in tiles:
            ds.get_batch(np.arange(lo, hi), format="raw")
        ds.close()

    a, b = bounds[:tiles_per_thread], bounds[tiles_per_thread:2 * tiles_per_thread]
    decode(a[:1])  # warm the page cache for the tile objects
    pairs = []
    for r in range(repeat):
        t0 = time.perf_counter()
        decode(a + b)
        one = time.perf_counter() - t0
        threads = [threading.Thread(target=decode, args=(part,)) for part in (a, b)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        two = time.perf_counter() - t0
        pairs.append((one, two))
        print(f"gil    round {r + 1}: 1 thread {one:.2f} s, 2 threads {two:.2f} s, speed-up {one / two:.2f}x")
    print(f"gil    median 2-thread speed-up: {median_ratio(pairs):.2f}x  (target >= 1.6)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=pathlib.Path, required=True)
    parser.add_argument("--cells-dataset", type=pathlib.Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--tet-gib", type=float, default=1.0)
    parser.add_argument("--gil-tiles", type=int, default=4)
    args = parser.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    print(f"tessera {tessera.__version__} from {pathlib.Path(tessera.__file__).parent}, {os.cpu_count()} CPUs")
    bench_cells(args.cells_dataset, args.batches, args.repeat)
    bench_tet(args.data_dir, args.tet_gib, args.repeat)
    bench_gil(args.cells_dataset, args.gil_tiles, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
