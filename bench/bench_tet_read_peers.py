"""Whole-array reads from Python against the peers a user would pick instead (docs/performance.md).

    scripts/bench.sh tet-read [--size-gib N] [--repeat R] [--threads T]

runs bench/bench_tet_read.cpp (the reader against memcpy, pread and bare libzstd) and then this
script on the same two files it synthesized (dataset `v`, f32 [rows, 1024, 1024], chunks of
16 x 256 x 256, raw and zstd level 3). Each pass reads the whole array from the page cache into
a new numpy array, as a user's script does:

  tessera raw   tessera.tet.open(raw file)["v"].read(copy=True) (`--threads` decode threads)
  tessera rows  the same from a twin in raw chunks of whole rows (16 x 1024 x 1024), which are
                read straight into place in the new array
  tessera zstd  the same from the zstd file
  numpy         np.load of a .npy file holding the same values (numpy reads with one thread)
  h5py          f["v"][...] of an HDF5 file with the same chunks, uncompressed (libhdf5)
  pread         os.preadv of the .npy payload into one reused, pre-faulted buffer, one thread:
                the bare copy out of the page cache that any of them pays, without a new array

The row-chunked, .npy and .h5 twins are written once beside the .tet files (from tessera's own read, so the
values are the same) and reused. Every round runs every pass, in an order rotated by one each
round, after one untimed round; the medians and each round's ratio (median over rounds) are
printed. h5py is skipped where it is not installed.
"""
import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np

import tessera

CHUNK_ROWS = 16
ROW_BYTES = 1024 * 1024 * 4  # one [1024, 1024] f32 slice


def rows_for(size_gib: float) -> int:
    """The row count bench_tet_read.cpp synthesizes for --size-gib (a whole number of chunk rows)."""
    chunk_rows = round(size_gib * (1 << 30) / (CHUNK_ROWS * ROW_BYTES))
    return max(1, chunk_rows) * CHUNK_ROWS


def write_twins(raw: pathlib.Path, rows_tet: pathlib.Path, npy: pathlib.Path, h5: pathlib.Path, h5py) -> None:
    if not rows_tet.exists():
        print(f"writing {rows_tet} ...", flush=True)
        shape = tessera.tet.open(raw)["v"].shape
        tmp = rows_tet.with_suffix(".tmp.tet")
        # The same generator and seed as bench_tet_read.cpp: the same values in other chunks.
        tessera.tet.synth(tmp, [f"v:f32:{shape[0]}x1024x1024:{CHUNK_ROWS}x1024x1024:raw"], seed=1, at="0")
        os.replace(tmp, rows_tet)
    if npy.exists() and (h5py is None or h5.exists()):
        return
    values = tessera.tet.open(raw)["v"][...]
    if not npy.exists():
        print(f"writing {npy} ...", flush=True)
        np.save(str(npy) + ".tmp.npy", values)
        os.replace(str(npy) + ".tmp.npy", npy)
    if h5py is not None and not h5.exists():
        print(f"writing {h5} ...", flush=True)
        tmp = h5.with_suffix(".tmp.h5")
        with h5py.File(tmp, "w") as f:
            f.create_dataset("v", data=values, chunks=(CHUNK_ROWS, 256, 256))
        os.replace(tmp, h5)


def pread_into(path: pathlib.Path, buffer: np.ndarray) -> None:
    """Copies the .npy payload (the last buffer.nbytes bytes) into `buffer` with preadv."""
    size = path.stat().st_size
    view = memoryview(buffer).cast("B")
    fd = os.open(path, os.O_RDONLY)
    try:
        at, done = size - buffer.nbytes, 0
        while done < buffer.nbytes:
            n = os.preadv(fd, [view[done:]], at + done)
            if n <= 0:
                raise OSError(f"{path}: short read at {at + done}")
            done += n
    finally:
        os.close(fd)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", required=True, type=pathlib.Path)
    parser.add_argument("--size-gib", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    try:
        import h5py
    except ImportError:
        h5py = None

    rows = rows_for(args.size_gib)
    stem = args.data_dir / f"tet-read-f32-{rows}x1024x1024"
    raw, zst = pathlib.Path(f"{stem}-raw.tet"), pathlib.Path(f"{stem}-zstd3.tet")
    npy, h5 = pathlib.Path(f"{stem}.npy"), pathlib.Path(f"{stem}.h5")
    rows_tet = pathlib.Path(f"{stem}-rows.tet")
    for path in (raw, zst):
        if not path.exists():
            sys.exit(f"{path} is missing: bench_tet_read --data-dir {args.data_dir} synthesizes it")
    write_twins(raw, rows_tet, npy, h5, h5py)
    nbytes = rows * ROW_BYTES
    reused = np.empty(rows * 1024 * 1024, dtype=np.float32)
    reused.fill(0)  # pre-faulted: the pread pass measures the copy alone

    def tessera_read(path):
        with tessera.tet.open(path) as f:
            return f["v"].read(threads=args.threads, copy=True)  # never a view of the map

    def h5py_read():
        with h5py.File(h5, "r") as f:
            return f["v"][...]

    passes = {
        "tessera raw": lambda: tessera_read(raw),
        "tessera rows": lambda: tessera_read(rows_tet),
        "tessera zstd": lambda: tessera_read(zst),
        "numpy": lambda: np.load(npy),
        "pread": lambda: pread_into(npy, reused),
    }
    if h5py is not None:
        passes["h5py"] = h5py_read
    # The untimed round: every side reads the same values (their sums agree).
    sums = {}
    for name, read in passes.items():
        out = read()
        sums[name] = float(np.sum(reused if out is None else out, dtype=np.float64))
        del out
    if len(set(sums.values())) != 1:
        sys.exit(f"the sides read different values: {sums}")

    def primed(read):
        """Runs `read` right after touching and freeing an array of its size. On a VM whose host
        takes back the memory a guest frees, the first touch of fresh memory can cost ten times
        more than the read itself, and which side met such memory would otherwise depend on the
        side before it; primed, every side's new array lands in memory just touched."""
        primer = np.ones(rows * 1024 * 1024, dtype=np.float32)
        del primer
        t0 = time.perf_counter()
        out = read()
        elapsed = time.perf_counter() - t0
        del out
        return elapsed

    times = {name: [] for name in passes}
    names = list(passes)
    for r in range(args.repeat):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            times[name].append(primed(passes[name]))

    print(f"\ntet-read peers: f32 [{rows}, 1024, 1024] = {nbytes / (1 << 30):.2f} GiB from the page cache, "
          f"{args.repeat} rounds, medians; tessera with {args.threads} threads")
    for name in names:
        t = statistics.median(times[name])
        print(f"  {name:<14} {t:8.3f} s  {nbytes / t / 1e9:7.2f} GB/s")

    def speed_ratio(a, b):  # how many times faster a is than b, per round
        return statistics.median(tb / ta for ta, tb in zip(times[a], times[b]))

    print("Summary (per-round ratios, medians)")
    print(f"  tessera raw / numpy np.load           {speed_ratio('tessera raw', 'numpy'):.2f}x")
    print(f"  tessera rows / numpy np.load          {speed_ratio('tessera rows', 'numpy'):.2f}x")
    print(f"  tessera zstd / numpy np.load          {speed_ratio('tessera zstd', 'numpy'):.2f}x")
    print(f"  tessera raw / one-thread pread copy   {speed_ratio('tessera raw', 'pread'):.2f}x")
    if h5py is not None:
        print(f"  tessera raw / h5py                    {speed_ratio('tessera raw', 'h5py'):.2f}x")
    else:
        print("  tessera raw / h5py                    (h5py not installed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
