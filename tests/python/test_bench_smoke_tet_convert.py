"""The tet-convert benchmark (bench/bench_tet_convert.cpp) runs end to end on a tiny HDF5 input,
raw and with `--zstd 3` (whose baseline reads and compresses), and prints every row and ratio of
its summary; no timing is asserted (docs/performance.md records measured runs)."""
import pathlib
import subprocess

import h5py
import numpy as np
import pytest

import tessera


@pytest.fixture(scope="module")
def bench_binary():
    """The benchmark of the build tree whose package is under test (BUILD/python/tessera)."""
    binary = pathlib.Path(tessera.__file__).resolve().parents[2] / "bench" / "bench_tet_convert"
    if not binary.exists():
        pytest.skip(f"{binary} is not built (an installed package, or a build without benchmarks)")
    return binary


@pytest.mark.parametrize("codec", [[], ["--zstd", "3"]], ids=["raw", "zstd3"])
def test_tet_convert_benchmark_runs(bench_binary, tmp_path, codec):
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f.create_dataset("v", data=np.random.default_rng(0).random((32, 64, 64), dtype="f4"), chunks=(16, 32, 32))
    out = subprocess.run([bench_binary, "--out-dir", tmp_path / "out", "--repeat", "2", *codec,
                          f"small={tmp_path / 'in.h5'}"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    baseline = "(a) libhdf5 read + zstd compress" if codec else "(a) libhdf5 read (H5Dread/chunk)"
    for figure in (baseline, "(b) convert_to_tet", "(c) write only", "small      b/a median", "b/min(a,c) median"):
        assert figure in out.stdout, f"{figure!r} missing:\n{out.stdout}"
    assert not list((tmp_path / "out").iterdir())  # every pass's output was removed
