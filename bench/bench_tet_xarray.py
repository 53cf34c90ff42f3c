"""The xarray backend against the query engine, side by side: the mean of a whole `.tet` dataset.

    scripts/bench.sh tet-xarray [--gib G] [--repeat R] [--codec raw|zstd]

Input: `tessera tet synth` writes `v`, f32 (G GiB, default 2) in chunks of 16 × 256 × 256 (4 MiB)
into build/bench-data/ once (reused afterwards). Sides, in one process:

  (a) the query engine: `tessera.tet.open(path).query({"dataset": "v", "mean": []})`, every core;
  (b) xarray: `xr.open_dataset(path, engine="tessera", chunks={})["v"].mean(skipna=False)`, one
      Dask chunk per `.tet` chunk on Dask's threaded scheduler (every core): the same fold as (a);
  (a') the engine's `nan_mean` and (b') xarray's default `mean()` (skipna=True for floats): the
      NaN-skipping folds;
  (c) numpy on the whole array read by the backend (`ds["v"].values.mean(dtype=float64)`), as
      what a user without Dask does.

Each side runs once untimed, then R rounds alternating which side goes first. Reported: GB/s
(10^9 bytes of f32 per second) per side and round, the ratios b/a (target ≥ 0.80) and b'/a' per
round and their medians, and the means (which must agree; xarray accumulates f32 in f32). `--smoke` runs a 64 MiB input once.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np

import tessera

ROOT = pathlib.Path(__file__).resolve().parents[1]


def make_input(path: pathlib.Path, gib: float, codec: str) -> None:
    rows = max(16, int(round(gib * 256 / 16)) * 16)  # rows of 1024 × 1024 f32 (4 MiB each)
    if path.exists():
        return
    spec = f"v:f32:{rows}x1024x1024:16x256x256" + (":zstd:3" if codec == "zstd" else "")
    print(f"writing {path} ({spec}) with tessera tet synth ...", flush=True)
    subprocess.run([str(tessera.cli_path()), "tet", "synth", str(path), "--dataset", spec], check=True,
                   stdout=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--codec", choices=("raw", "zstd"), default="raw")
    parser.add_argument("--data-dir", type=pathlib.Path, default=ROOT / "build" / "bench-data")
    parser.add_argument("--smoke", action="store_true", help="a 64 MiB input, one round")
    args = parser.parse_args()
    if args.smoke:
        args.gib, args.repeat = 1 / 64, 1
    import xarray as xr  # imported before timing
    import dask  # noqa: F401

    args.data_dir.mkdir(parents=True, exist_ok=True)
    path = args.data_dir / f"tet-xarray-{args.gib:g}gib-{args.codec}.tet"
    make_input(path, args.gib, args.codec)
    f = tessera.tet.open(path)
    nbytes = f["v"].nbytes
    means = {}

    def engine():
        means["a"] = f.query({"dataset": "v", "mean": []})["execution"]["operation_mean"]

    def engine_nan():
        means["a'"] = f.query({"dataset": "v", "nan_mean": []})["execution"]["operation_nan_mean"]

    def backend():
        with xr.open_dataset(path, engine="tessera", chunks={}) as ds:
            means["b"] = float(ds["v"].mean(skipna=False).compute())

    def backend_skipna():
        with xr.open_dataset(path, engine="tessera", chunks={}) as ds:
            means["b'"] = float(ds["v"].mean().compute())

    def numpy_whole():
        with xr.open_dataset(path, engine="tessera") as ds:
            means["c"] = float(ds["v"].values.mean(dtype=np.float64))

    sides = {"a": engine, "b": backend, "a'": engine_nan, "b'": backend_skipna, "c": numpy_whole}

    def rate(side):
        t0 = time.perf_counter()
        sides[side]()
        return nbytes / (time.perf_counter() - t0) / 1e9

    for side in sides:
        rate(side)  # untimed: page cache, imports, pools
    rounds = []
    for r in range(args.repeat):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        got = {side: rate(side) for side in order}
        rounds.append(got)
        ratio, ratio_skipna = got["b"] / got["a"], got["b'"] / got["a'"]
        print(f"round {r + 1}: " + ", ".join(f"({k}) {v:.2f} GB/s" for k, v in got.items())
              + f"; b/a {ratio:.3f}, b'/a' {ratio_skipna:.3f}", flush=True)
    spread = max(means.values()) - min(means.values())
    if spread > 1e-5 * max(1.0, abs(means["a"])):
        print(f"means disagree: {means}", file=sys.stderr)
        return 1
    print("\nSummary")
    labels = (("a", "query engine mean"), ("b", "xarray + Dask mean"), ("a'", "query engine nan_mean"),
              ("b'", "xarray + Dask mean, skipna"), ("c", "numpy mean of .values"))
    for side, label in labels:
        print(f"{label:30} median {statistics.median(r[side] for r in rounds):.2f} GB/s")
    for top, bottom, title, target in (("b", "a", "xarray / engine (b/a)", " (target >= 0.80)"),
                                       ("b'", "a'", "skipna xarray / engine (b'/a')", "")):
        ratios = [r[top] / r[bottom] for r in rounds]
        print(f"{title:30} median {statistics.median(ratios):.3f}{target}, rounds: "
              + " ".join(f"{x:.2f}" for x in ratios))
    print(f"{nbytes / 1e9:.2f} GB, {args.codec}, {len(f['v'].chunks)}-d chunks {f['v'].chunks}, "
          f"load average {os.getloadavg()[0]:.2f}; mean {means['a']:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
