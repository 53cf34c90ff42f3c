"""The single-cell peers benchmark (bench/bench_cells_peers.py: tessera.cells against anndata
and h5py) runs end to end on tiny inputs; no timing is asserted (bench_smoke.py)."""
import pytest

import tessera
from bench_smoke import run_smoke

pytest.importorskip("anndata")
pytest.importorskip("h5py")


def test_bench_cells_peers_smoke():
    out = run_smoke("bench_cells_peers.py", "--cli", tessera.cli_path(),
                    figures=("random batches, tessera get_batch (cells/s)", "random batches, anndata backed (cells/s)",
                             "random batches, h5py CSR rows (cells/s)", "random batches, tessera / anndata backed",
                             "random batches, tessera / h5py", "50-gene subset batches (cells/s)",
                             "full-row batches (cells/s)", "50-gene subset / full rows", "to_anndata, all cells (s)",
                             "anndata.read_h5ad of the source (s)", "to_anndata / read_h5ad"))
    # Every round prints each side's value and the ratio.
    for line in ("batches  round 1:", "subset   round 1:", "anndata  round 1:"):
        assert line in out, out
