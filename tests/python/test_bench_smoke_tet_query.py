"""The tet-query benchmark (scripts/bench_tet_query.sh) runs end to end with --smoke: every case
once on 128 MiB files, both scan limits, both zstd limits, each read path forced, minor faults and
the cold-cache runs against dd; it prints every ratio. No timing is asserted (docs/performance.md
records measured runs)."""
import os
import pathlib
import subprocess

import pytest

import tessera

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_tet_query_benchmark_runs(tmp_path):
    build = pathlib.Path(tessera.__file__).resolve().parents[2]
    for binary in (build / "tessera", build / "bench" / "bench_tet_query"):
        if not binary.exists():
            pytest.skip(f"{binary} is not built (an installed package, or a build without benchmarks)")
    env = dict(os.environ, BUILD_DIR=str(build), TMPDIR=str(tmp_path))
    out = subprocess.run(["bash", REPO / "scripts" / "bench_tet_query.sh", "--smoke"], capture_output=True,
                         text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    for figure in ("mmap sum / pread sum", "mean / faster scan limit", "zstd mean / faster zstd-only decompress",
                   "mean, forced pread / faster scan limit", "cold mean / cold dd O_DIRECT", "mean_pread",
                   "zstd_mean_pread", "minor page faults per GiB"):
        assert figure in out.stdout, f"{figure!r} missing:\n{out.stdout}"
    # The three read paths agree on the mean they print.
    results = {line.split()[0]: line for line in out.stdout.splitlines()[::-1] if "op=mean mean=" in line}
    means = {name: line.split("mean=")[1].split()[0] for name, line in results.items()}
    assert means["mean"] == means["mean_mmap"] == means["mean_pread"], means
    assert not list(tmp_path.glob("tet-query-bench.*"))  # the work directory, data included, was removed
