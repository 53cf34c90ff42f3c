"""The remote-read benchmark (bench/bench_remote.py) runs end to end on tiny inputs.

Only that it runs and prints its summary is checked: its figures depend on the machine and the
load on it, so no timing is asserted here (docs/performance.md records measured runs).
"""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import tessera

pytest.importorskip("anndata")

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("curl") is None, reason="the benchmark compares against curl")
def test_bench_remote_smoke(conformance):
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env["PYTHONPATH"] = os.pathsep.join([str(pathlib.Path(tessera.__file__).parent.parent),
                                         *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "bench_remote.py"), "--smoke",
                           "--cli", str(tessera.cli_path()), "--conformance", str(conformance)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "Summary" in out
    for figure in ("proxy ceiling", "ragged read_cell, fresh handle", "ragged read_cell, warm handle",
                   "tet query remote / curl", "cells epoch remote (cells/s)", "cells epoch remote / local",
                   "obs open + localize 3 columns remote (s)"):
        assert figure in out, f"{figure!r} missing from the summary:\n{out}"
