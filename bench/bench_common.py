"""Pieces shared by the Python benchmarks (bench_remote.py, bench_cells_peers.py).

- `alternate`: the side-by-side rounds every ratio is measured with.
- `Summary`: the table of medians, targets and pass/FAIL printed at the end of a run.
- `cells_dataset`: a random sparse AnnData of the size asked for, converted to a deltacells
  dataset once and reused.
"""
import pathlib
import shutil
import subprocess


def alternate(rounds, *sides):
    """Runs every side once untimed (page cache, mappings, imports), then `rounds` rounds; even
    rounds run the sides in the given order, odd rounds in reverse, so no side always inherits
    another's warm state. Yields `(round, value of each side...)` per round."""
    for side in sides:
        side()
    for r in range(rounds):
        values = [None] * len(sides)
        for i in (range(len(sides)) if r % 2 == 0 else reversed(range(len(sides)))):
            values[i] = sides[i]()
        yield (r, *values)


class Summary:
    """Rows of (figure, value, target, result); `print` lays them out as a table under `title`."""

    def __init__(self, title="Summary (medians over rounds)"):
        self.title = title
        self.rows = []

    def add(self, figure, value, target="—", ok=None):
        self.rows.append((figure, value, target, "—" if ok is None else ("pass" if ok else "FAIL")))

    def print(self):
        header = ("figure", "value", "target", "result")
        widths = [max(len(r[i]) for r in self.rows + [header]) for i in range(4)]
        print()
        print(self.title)
        line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
        print(line)
        print("-" * len(line))
        for row in self.rows:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)))


def random_anndata(n_cells, n_genes, seed=7):
    """A random sparse AnnData of n_cells x n_genes: CSR float32 X, about 5 % nonzero, integer
    counts 1..30; categorical (cell_type, batch, donor) and numeric (n_counts, n_genes,
    percent_mito) obs columns; var names gene_0, gene_1, ..."""
    import anndata
    import numpy as np
    import pandas as pd
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    blocks = []
    for lo in range(0, n_cells, 10_000):
        rows = min(10_000, n_cells - lo)
        mask = rng.random((rows, n_genes), dtype=np.float32) < 0.05
        block = sp.csr_matrix(mask, dtype=np.float32)
        block.data = rng.integers(1, 31, block.nnz).astype(np.float32)
        blocks.append(block)
    x = sp.vstack(blocks, format="csr")
    counts = np.asarray(x.sum(axis=1)).ravel().astype(np.float32)
    obs = pd.DataFrame({
        "cell_type": pd.Categorical(rng.choice([f"type_{i}" for i in range(24)], n_cells)),
        "batch": pd.Categorical(rng.choice([f"batch_{i}" for i in range(8)], n_cells)),
        "donor": pd.Categorical(rng.choice([f"donor_{i}" for i in range(60)], n_cells)),
        "n_counts": counts,
        "n_genes": np.diff(x.indptr).astype(np.int32),
        "percent_mito": rng.random(n_cells).astype(np.float32) * 20,
    }, index=[f"cell_{i}" for i in range(n_cells)])
    var = pd.DataFrame(index=[f"gene_{i}" for i in range(n_genes)])
    return anndata.AnnData(X=x, obs=obs, var=var)


def cells_dataset(cli, data_dir, n_cells, n_genes, tile, keep_h5ad=False):
    """The dataset `tessera cells convert --tile-size tile` makes of `random_anndata(n_cells,
    n_genes)`, in data_dir/cells-NxG-tT/ds; generated once. The source is written to input.h5ad
    beside it and kept when `keep_h5ad` (the benchmarks reading it need it), else deleted."""
    out = pathlib.Path(data_dir) / f"cells-{n_cells}x{n_genes}-t{tile}"
    ds, h5ad = out / "ds", out / "input.h5ad"
    if (ds / "manifest.json").exists() and (h5ad.exists() or not keep_h5ad):
        return ds
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(ds, ignore_errors=True)
    random_anndata(n_cells, n_genes).write_h5ad(h5ad)
    subprocess.run([str(cli), "cells", "convert", "--h5ad-glob", str(h5ad), "--output", str(ds), "--tile-size",
                    str(tile), "--quiet"], check=True, capture_output=True)
    if not keep_h5ad:
        h5ad.unlink()
    return ds
