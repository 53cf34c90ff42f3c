"""The granule build benchmark (bench/bench_ragged_granules.py: ATL06 granules against the same
points as .npy columns) runs end to end on tiny inputs; no timing is asserted (bench_smoke.py)."""
import pytest

import tessera
from bench_smoke import run_smoke

pytest.importorskip("h5py")


def test_bench_ragged_granules_smoke():
    out = run_smoke("bench_ragged_granules.py", "--cli", tessera.cli_path(),
                    figures=("granules (points/s)", ".npy columns (points/s)", "granules / .npy",
                             "peak RSS, 2 granules (MiB)", "peak RSS, 8 granules (MiB)",
                             "peak RSS growth with 4x the granules"))
    assert "round 1: granules" in out, out
