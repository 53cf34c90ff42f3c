"""The scale-out benchmark (distributed ragged build and cells convert, two Dask workers against
one, and the machine's limit for the same split) runs end to end on tiny inputs, checking its
outputs against the single writers; no timing is asserted (bench_smoke.py)."""
import pytest

from bench_smoke import run_smoke

pytest.importorskip("distributed")
pytest.importorskip("anndata")


def test_scale_out_benchmark_runs():
    run_smoke("bench_scale_out.py", figures=[
        f"{what}, {figure}" for what in ("ragged build", "cells convert")
        for figure in ("2 workers / 1 worker (speed-up)", "machine limit: two CLIs side by side / one after the other",
                       "speed-up / machine limit", "single all cores / 2 workers")])
