"""`tessera ragged build --config` from ICESat-2 ATL06 granules against the same points as .npy
columns, side by side (docs/performance.md).

    scripts/bench.sh ragged-granules [--points N] [--granules G] [--repeat R] [--threads T] [--smoke]

N points (default 4,000,000) are written once into DATA_DIR as G granules (default 8) in the
ATL06 layout (six beams of `land_ice_segments`, gzip-chunked like the product, every row passing
the quality filter and no fill values, so both inputs carry exactly the same points) and as one
directory of .npy columns (`lat`, `lon`, `h_li`, `s_li`). Both are built with zagg's `atl06.yaml`
(orders 12/6, the dense statistics with inverse-variance weights), rounds alternating, and the
figures are points/s of each and their ratio (target: granules ≥ 80 % of .npy).

Memory: each granule covers its own patch of ice, so the largest shard (which bounds the build's
memory) is the same whatever the number of granules; the peak RSS of a build of G granules is
compared with one of 4·G granules of the same size (target: within 25 %).
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_common import Summary, alternate  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
CONFIG = REPO / "tests" / "data" / "conformance" / "zagg" / "configs" / "atl06.yaml"
BEAMS = ["gt1l", "gt1r", "gt2l", "gt2r", "gt3l", "gt3r"]


def granule_points(index, n, seed):
    """The points of granule `index`: a patch of its own (0.4° of latitude, 1° of longitude)."""
    rng = np.random.default_rng(seed + index)
    lat = rng.uniform(-75.0, -74.6, n)
    lon = rng.uniform(0.0, 1.0, n) + 1.5 * index
    h = rng.normal(2500.0, 30.0, n).astype(np.float32)
    s = rng.uniform(0.05, 0.5, n).astype(np.float32)
    return lat, lon, h, s


def write_granules(directory, count, points_each, seed=2026):
    import h5py

    directory.mkdir(parents=True, exist_ok=True)
    paths, columns = [], []
    for g in range(count):
        path = directory / f"ATL06_{g:04d}.h5"
        lat, lon, h, s = granule_points(g, points_each, seed)
        columns.append((lat, lon, h, s))
        if not path.exists():
            with h5py.File(path.with_suffix(".tmp"), "w") as f:
                f["ancillary_data/atlas_sdp_gps_epoch"] = np.array([1198800018.0])
                for b, rows in enumerate(np.array_split(np.arange(points_each), len(BEAMS))):
                    seg = f.create_group(f"{BEAMS[b]}/land_ice_segments")
                    for name, data in (("latitude", lat[rows]), ("longitude", lon[rows]), ("h_li", h[rows]),
                                       ("h_li_sigma", s[rows]), ("atl06_quality_summary", np.zeros(rows.size, np.int8))):
                        seg.create_dataset(name, data=data, chunks=(min(10000, rows.size),), compression="gzip",
                                           compression_opts=6)
                    seg["h_li"].attrs["_FillValue"] = np.float32(np.finfo(np.float32).max)
            path.with_suffix(".tmp").rename(path)
        paths.append(path)
    return paths, columns


def write_npy(directory, columns):
    if (directory / "s_li.npy").exists():
        return
    directory.mkdir(parents=True, exist_ok=True)
    # The builds read beams in order within a granule, granules in order: the same row order here.
    for name, i in (("lat", 0), ("lon", 1), ("h_li", 2), ("s_li", 3)):
        np.save(directory / f"{name}.npy", np.concatenate([c[i] for c in columns]))


def command(cli, inputs, out, threads):
    args = [str(cli), "ragged", "build", "--config", str(CONFIG), "--out", str(out), "--threads", str(threads)]
    for p in inputs:
        args += ["--input", str(p)]
    return args


def build(cli, inputs, out, threads):
    """Seconds and the report of one build into a fresh `out`."""
    shutil.rmtree(out, ignore_errors=True)
    args = command(cli, inputs, out, threads)
    start = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"build failed: {' '.join(args)}\n{proc.stderr}")
    return seconds, json.loads(proc.stdout)


def peak_rss(cli, inputs, out, threads):
    """Peak RSS (MiB) of a build, from wait4 on its own child."""
    shutil.rmtree(out, ignore_errors=True)
    args = command(cli, inputs, out, threads)
    pid = os.posix_spawn(args[0], args, dict(os.environ),
                         file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"build failed: {' '.join(args)}")
    return usage.ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--data-dir", type=pathlib.Path)
    parser.add_argument("--points", type=int, default=4_000_000)
    parser.add_argument("--granules", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="every figure once on tiny inputs")
    a = parser.parse_args()
    if a.smoke:
        a.points, a.granules, a.repeat = 60_000, 2, 1
    with tempfile.TemporaryDirectory(prefix="tessera-bench-") as tmp:
        data = a.data_dir if a.data_dir and not a.smoke else pathlib.Path(tmp)
        each = a.points // a.granules
        data = data / f"{a.granules}x{each}"
        granules, columns = write_granules(data / "granules", a.granules, each)
        write_npy(data / "npy", columns)
        more, _ = write_granules(data / "granules", 4 * a.granules, each)  # the first G are reused
        out = pathlib.Path(tmp) / "out"
        n = each * a.granules

        def from_granules():
            seconds, report = build(a.cli, granules, out, a.threads)
            assert report["rows"]["accepted"] == n, report["rows"]
            return n / seconds

        def from_npy():
            seconds, report = build(a.cli, [data / "npy"], out, a.threads)
            assert report["rows"]["accepted"] == n, report["rows"]
            return n / seconds

        rates, ratios = {"granules": [], "npy": []}, []
        for r, g, npy in alternate(a.repeat, from_granules, from_npy):
            rates["granules"].append(g)
            rates["npy"].append(npy)
            ratios.append(g / npy)
            print(f"round {r + 1}: granules {g:,.0f} points/s, .npy {npy:,.0f} points/s, ratio {g / npy:.3f}", flush=True)
        rss_g = peak_rss(a.cli, granules, out, a.threads)
        rss_4g = peak_rss(a.cli, more, out, a.threads)
        print(f"peak RSS: {a.granules} granules {rss_g:.0f} MiB, {4 * a.granules} granules {rss_4g:.0f} MiB")

        summary = Summary()
        ratio = statistics.median(ratios)
        summary.add("granules (points/s)", f"{statistics.median(rates['granules']):,.0f}")
        summary.add(".npy columns (points/s)", f"{statistics.median(rates['npy']):,.0f}")
        summary.add("granules / .npy", f"{ratio:.3f}", "≥ 0.80", ratio >= 0.8)
        summary.add(f"peak RSS, {a.granules} granules (MiB)", f"{rss_g:.0f}")
        summary.add(f"peak RSS, {4 * a.granules} granules (MiB)", f"{rss_4g:.0f}")
        summary.add("peak RSS growth with 4x the granules", f"{rss_4g / rss_g:.2f}", "≤ 1.25", rss_4g / rss_g <= 1.25)
        summary.print()


if __name__ == "__main__":
    main()
