"""Gene selection by name, obs filters and AnnData export for `tessera.cells`.

Imported on first use (by `Dataset.gene_index`, `Dataset.get_batch(genes=...)`, `Obs.filter`,
`Dataset.to_anndata` and `tessera.cells.write_h5ad`), so `import tessera` imports neither pandas
nor anndata.
"""
from __future__ import annotations

import json
import os
from typing import Any, Optional, Sequence

import numpy as np

from . import _tessera
from ._tessera import UsageError

# ---- genes -----------------------------------------------------------------------------------


def gene_index(ds, names: Any) -> np.ndarray:
    """Stored column of each gene name (first occurrence when a name repeats); KeyError naming
    every name the dataset does not have."""
    names = [names] if isinstance(names, str) else list(names)
    lookup = ds._gene_lookup()
    missing = [n for n in names if n not in lookup]
    if missing:
        shown = missing[:10] + (["..."] if len(missing) > 10 else [])
        where = "its var_names" if lookup else "no var_names (converted with no_var)"
        raise KeyError(f"{len(missing)} gene(s) not in the dataset, which has {where}: {shown}")
    return np.array([lookup[n] for n in names], dtype=np.int64)


def gene_positions(ds, genes: Any) -> np.ndarray:
    """Stored columns for `genes`: gene names, or integer stored columns in [0, n_genes)."""
    if isinstance(genes, (str, int, np.integer)):
        genes = [genes]
    if isinstance(genes, (list, tuple)) and genes and all(isinstance(g, str) for g in genes):
        return gene_index(ds, genes)  # names: no detour through a numpy string array
    arr = np.asarray(genes if isinstance(genes, np.ndarray) else list(genes))
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if arr.dtype.kind in "US" or arr.dtype == object:
        if not all(isinstance(g, str) for g in arr.tolist()):
            raise UsageError("genes must be all names (str) or all integer columns, not a mix")
        return gene_index(ds, arr.tolist())
    if arr.dtype.kind not in "iu":
        raise UsageError(f"genes must be names or integer columns, got an array of {arr.dtype}")
    arr = arr.astype(np.int64).ravel()
    bad = arr[(arr < 0) | (arr >= ds.n_genes)]
    if bad.size:
        raise UsageError(f"gene columns must be in [0, {ds.n_genes}), got {bad[:10].tolist()}")
    return arr


def select_raw(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, n_genes: int,
               positions: Optional[np.ndarray]):
    """`x[:, positions]` with sorted indices on a raw batch (indptr int64, indices int32, values),
    done by the library (cells/batch_columns); the batch itself when positions is None."""
    if positions is None:
        return indptr, indices, values
    return _tessera.cells_select_columns(indptr, indices, values, n_genes, positions)


def source_positions(ds) -> Optional[np.ndarray]:
    """The stored column of each source column (None when stored order is the source order)."""
    order = ds.gene_order
    if order.size == 0 or np.array_equal(order, np.arange(order.size)):
        return None
    return np.argsort(order).astype(np.int64)


# ---- obs filters -----------------------------------------------------------------------------

_MEMBERSHIP = (list, set, frozenset, np.ndarray)


def obs_filter(obs, where: dict) -> np.ndarray:
    """Sorted int64 cells matching every condition of `where` (see `Obs.filter`): the Python
    conditions become the library's JSON where document, which the library evaluates (the same
    code as `tessera cells get --where`)."""
    if not isinstance(where, dict):
        raise UsageError(f"where must be a dict {{column: condition}}, got {type(where).__name__}")
    document = {str(name): _where_condition(name, cond) for name, cond in where.items()}
    try:
        text = json.dumps(document, allow_nan=False)
    except ValueError:
        raise UsageError(f"where: NaN is no value a filter can compare with ({where!r})") from None
    return obs._native.filter(text)


def _where_value(value):
    return value.item() if isinstance(value, np.generic) else value


def _where_condition(name, cond):
    """One Python condition as a where-document condition: a (lo, hi) tuple becomes
    {"ge": lo, "lt": hi}, sets and arrays become lists, numpy scalars Python numbers."""
    if isinstance(cond, tuple):
        if len(cond) != 2:
            raise UsageError(f"range for obs column {name!r} must be (lo, hi), got {cond!r}")
        return {"ge": _where_value(cond[0]), "lt": _where_value(cond[1])}
    if isinstance(cond, _MEMBERSHIP):
        wanted = [_where_value(w) for w in cond]
        if any(w is None or isinstance(w, (dict, tuple, list)) for w in wanted):
            raise UsageError(f"obs column {name!r}: a list of values may hold only values, got {cond!r}")
        return wanted
    return _where_value(cond)


# ---- AnnData ---------------------------------------------------------------------------------


def obs_frame(ds, cells: np.ndarray, columns: Optional[Sequence[str]]):
    """The obs of `cells` as AnnData holds it: `obs_names` as the index, missing values of integer
    and bool columns as pandas' nullable types."""
    import pandas as pd

    if not ds.has_obs:
        if columns:
            raise UsageError(f"the dataset has no obs table, so obs columns {list(columns)} do not exist")
        return pd.DataFrame(index=pd.Index(cells.astype(str), dtype=object))
    obs = ds.obs
    names = [c for c in obs.columns if c != "obs_names"] if columns is None else list(columns)
    has_names = "obs_names" in obs.columns
    fetch = list(dict.fromkeys(names + (["obs_names"] if has_names else [])))
    obs.localize(fetch)
    frame = obs._frame(cells, fetch, nullable=True)
    index = frame["obs_names"].to_numpy() if has_names else cells.astype(str)
    frame.index = pd.Index(np.asarray(index, dtype=object), dtype=object)
    return frame[names]


def to_anndata(ds, cells: Any = None, genes: Any = None, obs: Optional[Sequence[str]] = None, *,
               values: str = "float32", order: str = "source"):
    """See `Dataset.to_anndata`."""
    import anndata
    import pandas as pd

    from .cells import _cells_array

    if order not in ("source", "stored"):
        raise UsageError(f'order must be "source" or "stored", got {order!r}')
    rows = np.arange(ds.n_cells, dtype=np.int64) if cells is None else _cells_array(cells, ds.n_cells).astype(np.int64)
    if genes is not None:
        positions = gene_positions(ds, genes)
    else:
        positions = source_positions(ds) if order == "source" else None
    x = ds.get_batch(rows, values=values, genes=positions)  # columns chosen and reordered by the library
    var = var_frame(ds)
    if positions is not None:
        var = var.iloc[positions]
    frame = obs_frame(ds, rows, None if obs is None else ([obs] if isinstance(obs, str) else list(obs)))
    return anndata.AnnData(X=x, obs=frame, var=var, dtype=x.dtype)


def _var_column(pd, values, validity):
    """One var.parquet column as pandas holds it: missing numbers as NaN (floats) or pandas'
    nullable integer / boolean types, strings as objects with None."""
    if isinstance(values, list):
        return np.asarray(values, dtype=object)
    if validity is None or validity.all():
        return values
    if values.dtype.kind == "f":
        out = values.astype(values.dtype, copy=True)
        out[~validity] = np.nan
        return out
    if values.dtype.kind == "b":
        return pd.arrays.BooleanArray(values.astype(bool), ~validity)
    return pd.arrays.IntegerArray(values, ~validity)


def var_frame(ds):
    """See `Dataset.var`."""
    import pandas as pd

    table = ds._native.var_table()
    names = ds.var_names or [str(j) for j in _stored_to_source(ds)]
    if table is None:
        return pd.DataFrame(index=pd.Index(np.asarray(names, dtype=object), dtype=object))
    index_name, index_values, columns = table
    index = pd.Index(np.asarray(index_values if index_values is not None else names, dtype=object), dtype=object,
                     name=index_name or None)
    data = {name: _var_column(pd, values, validity) for name, values, validity in columns}
    return pd.DataFrame(data, index=index)


def _stored_to_source(ds) -> np.ndarray:
    order = ds.gene_order
    return order if order.size else np.arange(ds.n_genes)


def write_h5ad(dataset: Any, out: Any, **options: Any) -> None:
    """See `tessera.cells.write_h5ad`."""
    from . import cells as _cells

    if isinstance(dataset, _cells.Dataset):
        dataset.to_anndata(**options).write_h5ad(os.fspath(out))
        return
    with _cells.open(dataset) as ds:
        ds.to_anndata(**options).write_h5ad(os.fspath(out))
