"""tessera.cells in the AnnData world: to_anndata / write_h5ad, gene selection by name, obs filters,
each against what anndata, scipy and pandas read from the source h5ad (cells_truth.py)."""
import json
import subprocess

import numpy as np
import pandas as pd
import pytest
import scipy.sparse

import tessera
import tessera.cells
from cells_truth import read_source, write_source

anndata = pytest.importorskip("anndata")


@pytest.fixture(scope="module", params=["csr", "csc", "dense"])
def source(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"anndata-{request.param}")
    write_source(root / "a.h5ad", layout=request.param, seed=len(request.param))
    tessera.cells.convert(root / "a.h5ad", root / "ds", tile_size=64, obs_tiles_per_file=2).close()
    return {"path": root / "ds", "adata": read_source(root / "a.h5ad"), "root": root}


@pytest.fixture
def ds(source, tmp_path):
    with tessera.cells.open(source["path"], cache_dir=tmp_path / "cache") as d:
        yield d


def assert_same_anndata(got, want):
    assert isinstance(got.X, scipy.sparse.csr_matrix) and got.X.dtype == np.float32
    assert got.shape == want.shape
    assert (got.X != want.X).nnz == 0
    np.testing.assert_array_equal(got.X.toarray(), want.X.toarray())
    pd.testing.assert_frame_equal(got.obs, want.obs, check_exact=True)
    assert list(got.var_names) == list(want.var_names)
    # (anndata's write_h5ad turns string columns into categoricals, so a written copy is compared
    # with the categoricals of both sides as strings)
    pd.testing.assert_frame_equal(expected_var(got.var), expected_var(want.var), check_exact=True)


def expected_var(var: pd.DataFrame) -> pd.DataFrame:
    """The var frame a deltacells dataset gives back: var.parquet stores a categorical column as its
    strings (spec deltacells.md §6.7), so it comes back as an object column."""
    out = var.copy()
    for name in out.columns:
        if isinstance(out[name].dtype, pd.CategoricalDtype):
            out[name] = out[name].astype(object)
    return out


def test_to_anndata_equals_source(ds, source):
    adata = source["adata"]
    assert ds.gene_order.size and not np.array_equal(ds.gene_order, np.arange(ds.n_genes))  # genes were re-sorted
    assert_same_anndata(ds.to_anndata(), adata)
    # the stored order on request: the source's columns permuted by gene_order
    stored = ds.to_anndata(order="stored", obs=[])
    assert list(stored.var_names) == ds.var_names and stored.obs.shape[1] == 0
    assert (stored.X != adata.X[:, ds.gene_order]).nnz == 0
    assert list(stored.obs_names) == list(adata.obs_names)


def test_var_is_the_source_var_table_in_stored_order(ds, source):
    want = expected_var(source["adata"].var)
    pd.testing.assert_frame_equal(ds.var, want.iloc[ds.gene_order], check_exact=True)
    assert list(ds.var.index) == ds.var_names


def test_to_anndata_subsets_and_write_h5ad(ds, source, tmp_path):
    adata = source["adata"]
    rng = np.random.default_rng(1)
    cells = rng.choice(ds.n_cells, 40, replace=False)
    genes = list(rng.choice(adata.var_names, 25, replace=False))
    got = ds.to_anndata(cells=cells, genes=genes, obs=["donor", "lane", "cell_type"], values="int32")
    want = adata[cells, genes]
    assert got.X.dtype == np.int32
    np.testing.assert_array_equal(got.X.toarray(), want.X.toarray())
    # the dataset's categories are kept (an AnnData view would drop those unused in the subset)
    pd.testing.assert_frame_equal(got.obs, adata.obs.iloc[cells][["donor", "lane", "cell_type"]], check_exact=True)
    assert list(got.var_names) == genes
    # write_h5ad: from a path and from an open dataset, read back by anndata
    tessera.cells.write_h5ad(source["path"], tmp_path / "all.h5ad")
    assert_same_anndata(read_source(tmp_path / "all.h5ad"), adata)
    tessera.cells.write_h5ad(ds, tmp_path / "few.h5ad", cells=cells[:5], obs=["age"])
    back = read_source(tmp_path / "few.h5ad")
    pd.testing.assert_frame_equal(back.obs, adata.obs.iloc[cells[:5]][["age"]])
    with pytest.raises(tessera.UsageError, match="order"):
        ds.to_anndata(order="sorted")
    with pytest.raises(tessera.UsageError, match="unknown obs columns"):
        ds.to_anndata(obs=["nope"])


def test_nullable_columns_without_missing_values_come_back_plain(tmp_path):
    # The obs format records a column's type, not whether pandas held it as nullable: a nullable
    # column with no missing value comes back as the plain numpy type (values equal).
    obs = pd.DataFrame({"i": pd.array([1, 2, 3], dtype="Int32"), "b": pd.array([True, False, True], dtype="boolean")},
                       index=["a", "b", "c"])
    anndata.AnnData(X=scipy.sparse.csr_matrix(np.eye(3, dtype=np.float32)), obs=obs).write_h5ad(tmp_path / "n.h5ad")
    with tessera.cells.convert(tmp_path / "n.h5ad", tmp_path / "ds") as d:
        got = d.to_anndata().obs
    want = read_source(tmp_path / "n.h5ad").obs
    assert got["i"].dtype == np.int32 and got["b"].dtype == np.bool_
    pd.testing.assert_frame_equal(got, want.astype({"i": np.int32, "b": bool}))


@pytest.mark.parametrize("n", [1, 10, 1000, "all"])
def test_get_batch_genes_equals_anndata(ds, source, n):
    adata = source["adata"]
    rng = np.random.default_rng(n if n != "all" else 0)
    genes = list(adata.var_names) if n == "all" else list(rng.choice(adata.var_names, n, replace=False))
    cells = rng.integers(0, ds.n_cells, 50)  # repeats, any order
    want = adata[cells, genes].X.toarray()
    got = ds.get_batch(cells, genes=genes)
    assert got.shape == (50, len(genes)) and got.dtype == np.float32
    np.testing.assert_array_equal(got.toarray(), want)
    positions = ds.gene_index(genes)
    assert positions.dtype == np.int64 and [ds.var_names[p] for p in positions] == genes
    np.testing.assert_array_equal(ds.get_batch(cells, genes=positions, values="int32").toarray(), want)
    indptr, indices, values = ds.get_batch(cells, genes=genes, format="raw")
    np.testing.assert_array_equal(scipy.sparse.csr_matrix((values, indices, indptr), shape=want.shape).toarray(), want)


@pytest.mark.parametrize("values", ["float32", "int32"])
def test_column_selection_equals_scipy_with_repeats_and_sorted_indices(ds, values):
    """The library's column selection (get_batch(genes=...) and the raw-batch path the Torch loader
    takes) against scipy's x[:, positions] + sort_indices: repeated and unordered columns, rows with
    no kept gene, and every row's indices ascending."""
    rng = np.random.default_rng(7)
    cells = rng.integers(0, ds.n_cells, 120)
    full = ds.get_batch(cells, values=values)
    for positions in (rng.permutation(ds.n_genes), rng.integers(0, ds.n_genes, 300), np.array([5, 5, 0, 5]),
                      np.array([], dtype=np.int64)):
        want = full[:, positions]
        want.sort_indices()
        got = ds.get_batch(cells, genes=positions, values=values)
        assert got.has_sorted_indices and got.dtype == full.dtype
        assert all(np.all(np.diff(got.indices[got.indptr[r]:got.indptr[r + 1]]) > 0) for r in range(len(cells)))
        np.testing.assert_array_equal(got.indptr, want.indptr)
        np.testing.assert_array_equal(got.indices, want.indices)
        np.testing.assert_array_equal(got.data, want.data)
        raw = tessera._tessera.cells_select_columns(full.indptr.astype(np.int64), full.indices, full.data,
                                                    ds.n_genes, positions)
        np.testing.assert_array_equal(raw[0], want.indptr)
        np.testing.assert_array_equal(raw[1], want.indices)
        np.testing.assert_array_equal(raw[2], want.data)
    with pytest.raises(tessera.UsageError, match="do not describe one CSR batch"):
        tessera._tessera.cells_select_columns(np.array([0, 5]), full.indices[:2], full.data[:2], ds.n_genes, [0])
    with pytest.raises(tessera.UsageError, match=r"gene column -1 outside \[0, 1200\)"):
        tessera._tessera.cells_select_columns(np.array([0]), full.indices[:0], full.data[:0], ds.n_genes, [-1])


def test_gene_index_errors(ds):
    with pytest.raises(KeyError, match="NOPE1.*NOPE2"):
        ds.gene_index([ds.var_names[0], "NOPE1", "NOPE2"])
    with pytest.raises(KeyError, match="NOPE"):
        ds.get_batch([0], genes=["NOPE"])
    with pytest.raises(tessera.UsageError, match=r"\[0, 1200\)"):
        ds.get_batch([0], genes=[1200])
    with pytest.raises(tessera.UsageError, match="mix"):
        ds.get_batch([0], genes=np.array([ds.var_names[0], 3], dtype=object))
    assert ds.get_batch([0, 1], genes=[]).shape == (2, 0)


def pandas_mask(obs: pd.DataFrame, where: dict) -> np.ndarray:
    """The same conditions written with pandas."""
    mask = np.ones(len(obs), dtype=bool)
    for col, cond in where.items():
        s = obs[col]
        if cond is None:
            m = s.isna()
        elif isinstance(cond, tuple):
            lo, hi = cond
            m = s.notna()
            if lo is not None:
                m &= s >= lo
            if hi is not None:
                m &= s < hi
        elif isinstance(cond, list):
            m = s.isin(cond)
        else:
            m = s == cond
        mask &= np.asarray(m.fillna(False), dtype=bool)
    return np.flatnonzero(mask)


@pytest.mark.parametrize("where", [
    {"cell_type": "NK"},
    {"cell_type": ["T", "Müller glia", "not a category"]},
    {"cell_type": None},
    {"cell_type": ["B", "NK"], "age": (35.0, 45.0)},
    {"age": None},
    {"age": (None, 30)},
    {"n_umi": (250_000, None), "is_doublet": False},
    {"batch_no": [0, 3]},
    {"score": (0.25, 0.5)},
    {"flag": True, "donor": "d2"},
    {"flag": None},
    {"n_genes_nullable": (0, 2**39)},
    {"lane": [1, 2]},
    {"lane": None, "donor": ["d1", "d3"]},
    {"barcode": ["AC000003-ü", "AC000100-ü", "nobody"]},
    {},
])
def test_obs_filter_equals_pandas(ds, source, where):
    got = ds.obs.filter(where)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, pandas_mask(source["adata"].obs, where))


def test_obs_filter_errors(ds):
    with pytest.raises(tessera.UsageError, match=r"unknown obs columns \['nope'\]"):
        ds.obs.filter({"nope": 1})
    with pytest.raises(tessera.UsageError, match="'cell_type' is category: a range needs a numeric column"):
        ds.obs.filter({"cell_type": (1, 2)})
    with pytest.raises(tessera.UsageError, match="'age' has a range bound \"ge\" that is neither a number nor null"):
        ds.obs.filter({"age": ("A", "B")})
    with pytest.raises(tessera.UsageError, match="must be \\(lo, hi\\)"):
        ds.obs.filter({"age": (1, 2, 3)})
    with pytest.raises(tessera.UsageError, match="'age' is numeric: compare it with numbers"):
        ds.obs.filter({"age": "old"})
    with pytest.raises(tessera.UsageError, match="dict"):
        ds.obs.filter([("age", 1)])
    with pytest.raises(tessera.UsageError, match="only values"):
        ds.obs.filter({"donor": ["d1", None]})


def cli_get(source, tmp_path, *args):
    return subprocess.run([str(tessera.cli_path()), "cells", "get", str(source["path"]), *args,
                           "--cache-dir", str(tmp_path / "cli-cache")], capture_output=True, text=True)


@pytest.mark.parametrize("where", [
    {"cell_type": ["T", "Müller glia", "not a category"]},
    {"cell_type": ["B", "NK"], "age": {"ge": 35.0, "lt": 45.0}},
    {"age": None},
    {"n_umi": {"ge": 250_000}, "is_doublet": False},
    {"flag": True, "donor": "d2"},
    {"n_genes_nullable": {"ge": 0, "lt": 2**39}},
    {"lane": None, "donor": ["d1", "d3"]},
])
def test_cli_where_equals_pandas(source, tmp_path, where):
    """`cells get --where` (the library's filter behind the CLI) against pandas on the source's obs,
    with and without a CELLS list; the batch holds exactly the chosen cells' rows."""
    as_tuple = {c: (v.get("ge"), v.get("lt")) if isinstance(v, dict) else v for c, v in where.items()}
    want = pandas_mask(source["adata"].obs, as_tuple)
    result = cli_get(source, tmp_path, "--where", json.dumps(where), "--json")
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    assert got["cells"] == want.tolist()
    x = scipy.sparse.csr_matrix(source["adata"].X)[want]
    x.eliminate_zeros()
    assert got["indptr"] == x.indptr.tolist()
    listed = [7, 3, 200, 3, 0, 150]
    result = cli_get(source, tmp_path, ",".join(map(str, listed)), "--where", json.dumps(where), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["cells"] == [c for c in listed if c in set(want.tolist())]


def test_cli_where_errors(source, tmp_path):
    result = cli_get(source, tmp_path, "--where", '{"nope": 1}')
    assert result.returncode == 1 and "unknown obs columns ['nope'] in where" in result.stderr
    result = cli_get(source, tmp_path, "--where", '{"age": {"ge": 1, "below": 2}}')
    assert result.returncode == 1
    assert """--where: obs column 'age' takes a range as {"ge": lo, "lt": hi}; "below" is not""" in result.stderr
    result = cli_get(source, tmp_path, "--where", '{"age": ')
    assert result.returncode == 1 and "--where: not a JSON where document" in result.stderr
    result = cli_get(source, tmp_path, "5,999999", "--where", '{"age": null}')
    assert result.returncode == 1 and "cell 999999 outside the valid range" in result.stderr
    result = cli_get(source, tmp_path)
    assert result.returncode == 2 and "give CELLS, --where or both" in result.stderr


def test_damaged_where_documents_are_usage_errors(ds):
    """Every truncation and a bit flip at every byte of a where document, a deeply nested one and a
    huge list: each filters or raises a tessera error naming the rule, never anything else."""
    text = json.dumps({"cell_type": ["B", "NK"], "age": {"ge": 35.0, "lt": 45}, "donor": None, "flag": True})
    damaged = [text[:n] for n in range(len(text))]
    damaged += [text[:i] + chr(ord(text[i]) ^ 1) + text[i + 1:] for i in range(len(text))]
    damaged += ['{"age": ' + "[" * 5000 + "]" * 5000 + "}", json.dumps({"batch_no": list(range(200_000))})]
    for doc in damaged:
        try:
            got = ds.obs._native.filter(doc)
        except tessera.Error as e:
            assert str(e), doc
            continue
        assert got.dtype == np.int64 and np.all(np.diff(got) > 0), doc
