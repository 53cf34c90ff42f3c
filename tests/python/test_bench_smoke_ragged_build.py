"""The ragged-build benchmark (bench/bench_ragged_build.cpp: `tessera ragged build` on 1 and 2
threads) runs end to end on 20,000 points and prints every figure. No timing is asserted
(docs/performance.md records measured runs)."""
import pathlib
import subprocess

import pytest

import tessera


def test_ragged_build_benchmark_runs(tmp_path):
    build = pathlib.Path(tessera.__file__).resolve().parents[2]
    bench, cli = build / "bench" / "bench_ragged_build", build / "tessera"
    for binary in (bench, cli):
        if not binary.exists():
            pytest.skip(f"{binary} is not built (an installed package, or a build without benchmarks)")
    out = subprocess.run([bench, "--data-dir", tmp_path, "--cli", cli, "--points", "20000", "--repeat", "1"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    for figure in ("ragged build: 20000 points", "1 thread :", "2 threads:", "speed-up", "peak RSS", "largest shard"):
        assert figure in out.stdout, f"{figure!r} missing:\n{out.stdout}"
