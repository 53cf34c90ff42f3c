"""Source AnnData files for the deltacells ecosystem tests (to_anndata, gene selection, obs filters,
TorchDataset restrictions, Dask reductions).

The truth is always what `anndata.read_h5ad` reads back from the file written here, never a value
computed by tessera: a test converts the file with `tessera.cells.convert` and compares.
"""
import numpy as np
import pandas as pd
import scipy.sparse


def write_source(path, *, layout="csr", n_cells=300, n_genes=1200, seed=0):
    """An h5ad with X stored as `layout` ("csr", "csc" or "dense"), integer counts (some empty
    cells and genes), var columns (strings, a categorical, bool, float with NaN, int64, nullable
    Int32) and obs of every kind AnnData 0.8 writes: categoricals (a non-ASCII category,
    missing values, an unused category), floats with NaN, int64/int16/float32, bool, nullable
    Int64/Int32/boolean with missing values, non-ASCII strings."""
    import anndata

    rng = np.random.default_rng(seed)
    x = scipy.sparse.random(n_cells, n_genes, density=0.03, format="csr", random_state=seed,
                            data_rvs=lambda k: rng.integers(1, 500, k)).astype(np.float32).tolil()
    x[7, :] = 0
    x = x.tocsr()
    x.eliminate_zeros()
    obs = pd.DataFrame(index=[f"zelle-{i}-ß" for i in range(n_cells)])
    obs["cell_type"] = pd.Categorical(rng.choice(["T", "B", "NK", None], n_cells),
                                      categories=["T", "B", "NK", "Müller glia"])
    obs["donor"] = pd.Categorical(rng.choice(["d1", "d2", "d3"], n_cells))
    obs["age"] = rng.normal(40, 10, n_cells)
    obs.loc[obs.index[::9], "age"] = np.nan
    obs["n_umi"] = rng.integers(0, 10**6, n_cells).astype(np.int64)
    obs["batch_no"] = rng.integers(0, 5, n_cells).astype(np.int16)
    obs["score"] = rng.random(n_cells).astype(np.float32)
    obs["is_doublet"] = rng.random(n_cells) < 0.3
    obs["flag"] = pd.array(rng.choice([True, False, None], n_cells), dtype="boolean")
    obs["n_genes_nullable"] = pd.array([None if i % 5 == 0 else int(v) for i, v in
                                        enumerate(rng.integers(-9, 2**40, n_cells))], dtype="Int64")
    obs["lane"] = pd.array([None if i % 7 == 0 else i % 4 for i in range(n_cells)], dtype="Int32")
    obs["barcode"] = [f"AC{i:06d}-ü" for i in range(n_cells)]
    var = pd.DataFrame(index=[f"GENE{j}-α" for j in range(n_genes)])
    var["gene_ids"] = [f"ENSG{j:011d}" for j in range(n_genes)]
    var["feature_types"] = pd.Categorical(rng.choice(["Gene Expression", "Antibody Capture"], n_genes))
    var["highly_variable"] = rng.random(n_genes) < 0.1
    var["means"] = rng.gamma(0.5, 1.0, n_genes)
    var.loc[var.index[::11], "means"] = np.nan
    var["n_cells"] = rng.integers(0, n_cells, n_genes).astype(np.int64)
    var["n_cells_nullable"] = pd.array([None if j % 13 == 0 else j for j in range(n_genes)], dtype="Int32")
    stored = {"csr": x, "csc": x.tocsc(), "dense": x.toarray()}[layout]
    anndata.AnnData(X=stored, obs=obs, var=var, dtype=np.float32).write_h5ad(path)


def read_source(path):
    """The source as AnnData reads it, X as a CSR float32 matrix."""
    import anndata

    adata = anndata.read_h5ad(path)
    adata.X = scipy.sparse.csr_matrix(adata.X, dtype=np.float32)
    return adata
