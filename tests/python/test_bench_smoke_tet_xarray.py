"""The xarray-backend benchmark (mean through xarray + Dask against the query engine and numpy)
runs end to end on a 64 MiB input and checks that the three means agree; no timing is asserted
(bench_smoke.py)."""
import pytest

from bench_smoke import run_smoke

pytest.importorskip("dask")


def test_tet_xarray_benchmark_runs(tmp_path):
    run_smoke("bench_tet_xarray.py", "--data-dir", tmp_path,
              figures=["query engine mean", "xarray + Dask mean", "query engine nan_mean", "xarray + Dask mean, skipna",
                       "numpy mean of .values", "xarray / engine (b/a)", "skipna xarray / engine (b'/a')"])
