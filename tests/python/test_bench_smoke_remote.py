"""The remote-read benchmark (bench/bench_remote.py) runs end to end on tiny inputs; no timing
is asserted (bench_smoke.py)."""
import shutil

import pytest

import tessera
from bench_smoke import run_smoke

pytest.importorskip("anndata")


@pytest.mark.skipif(shutil.which("curl") is None, reason="the benchmark compares against curl")
def test_bench_remote_smoke(conformance):
    run_smoke("bench_remote.py", "--cli", tessera.cli_path(), "--conformance", conformance,
              figures=("proxy ceiling", "ragged read_cell, fresh handle", "ragged read_cell, warm handle",
                       "tet query remote / curl", "cells epoch remote (cells/s)", "cells epoch remote / local",
                       "obs open + localize 3 columns remote (s)"))
