"""`tessera cells get --genes`: the nonzeros of named genes, against the source h5ad (anndata)."""
import json

import numpy as np
import pytest

from cells_truth import read_source, write_source
from conftest import run_cli


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("cells-get")
    write_source(root / "a.h5ad", n_cells=200, n_genes=300, seed=9)
    run_cli("cells", "convert", "--h5ad-glob", root / "a.h5ad", "--output", root / "ds", "--tile-size", "64", "--quiet")
    return root, read_source(root / "a.h5ad")


@pytest.mark.parametrize("n_genes", [1, 10, 300])
def test_genes_keeps_exactly_their_nonzeros(converted, n_genes):
    root, adata = converted
    rng = np.random.default_rng(n_genes)
    genes = list(rng.choice(adata.var_names, n_genes, replace=False))
    cells = [3, 150, 7, 7, 64]
    out = run_cli("cells", "get", root / "ds", ",".join(map(str, cells)), "--genes", ",".join(genes), "--names").stdout
    lines = out.splitlines()
    assert len(lines) == len(cells)
    for line, cell in zip(lines, cells):
        fields = line.split("\t")
        got = dict((pair.rsplit(":", 1)[0], int(pair.rsplit(":", 1)[1])) for pair in fields[2].split()) if fields[2] else {}
        row = adata[cell, genes].X.toarray().ravel()
        want = {g: int(v) for g, v in zip(genes, row) if v != 0}
        assert int(fields[0]) == cell and int(fields[1]) == len(want) and got == want
    # the JSON form holds the same entries
    batch = json.loads(run_cli("cells", "get", root / "ds", "3,150", "--genes", ",".join(genes), "--json").stdout)
    assert batch["indptr"][-1] == sum(int(np.count_nonzero(adata[c, genes].X.toarray())) for c in (3, 150))


def test_unknown_genes_are_named(converted):
    root, adata = converted
    proc = run_cli("cells", "get", root / "ds", "0", "--genes", f"{adata.var_names[0]},NOPE1,NOPE2", check=False)
    assert proc.returncode == 1 and "--genes: not in the dataset's var_names: ['NOPE1', 'NOPE2']" in proc.stderr
