"""The scale-out benchmark (distributed ragged build, two Dask workers against one) runs end to end
on a tiny input, checking its outputs against the single build; no timing is asserted
(bench_smoke.py)."""
import pytest

from bench_smoke import run_smoke

pytest.importorskip("distributed")


def test_scale_out_benchmark_runs():
    run_smoke("bench_scale_out.py", figures=["ragged build, 2 workers / 1 worker (speed-up)",
                                             "ragged build, single all cores / 2 workers"])
