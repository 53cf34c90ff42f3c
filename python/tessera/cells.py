"""deltacells single-cell datasets from Python: CSR batches, epochs, obs, conversion, PyTorch, Dask.

    ds = tessera.cells.open("data/pbmc")          # reads and validates manifest.json only
    x = ds.get_batch([9, 0, 4, 4, 3])             # scipy.sparse.csr_matrix, shape (5, n_genes)
    for cells, x in ds.epoch(256, seed=0):        # shuffled tiles, cells shuffled within tiles
        ...
    ds.obs.take([9, 0], ["cell_type"])            # pandas.DataFrame

Columns are in the dataset's stored gene order (`ds.var_names`; `ds.gene_order[j]` is the source
column of stored column j). Fetching and decoding run in C++ with the GIL released; the arrays of
a batch own the library's buffers (nothing is copied). PyTorch (`TorchDataset`) and Dask
(`to_dask`) are imported only when used.
"""
from __future__ import annotations

import os
from typing import Any, Iterable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _cli, _tessera
from ._tessera import UsageError

PathLike = Union[str, "os.PathLike[str]"]

# TorchDataset (module attribute, imported on first use) is left out so that `import *` does not import torch.
__all__ = ["open", "Dataset", "Epoch", "Obs", "convert", "to_dask", "write_h5ad"]

_VALUES = {"float32": np.float32, "int32": np.int32}


def open(path: PathLike, *, max_cached_tiles: int = 0, decoded_cache_bytes: int = 1 << 30,  # noqa: A001
         max_prefetch_tiles: int = 0, io_threads: int = 0, decode_threads: int = 1, verify_crc: bool = True,
         cache_dir: Optional[PathLike] = None) -> "Dataset":
    """Opens the deltacells dataset at `path` (a directory or `file://` URI).

    Only `manifest.json` is read and validated (tessera.FormatError if it is malformed). Options:
    `max_cached_tiles` decoded tiles kept: 0 (default) keeps the two most recent tiles plus tiles
    read again (random batches, later epochs) up to `decoded_cache_bytes` of decoded nonzeros; N
    keeps the N most recently used. `max_prefetch_tiles` compressed tiles kept or in
    flight, `io_threads` background fetches (0, the default for both: chosen for the store, deeper
    on a remote one; `Dataset.fetch_depth` tells the values), `decode_threads` chunks of one tile decoded in
    parallel, `verify_crc` check every tile's CRC-32, `cache_dir` root of the local obs cache
    (default `$DELTACELLS_CACHE`, `$XDG_CACHE_HOME/deltacells` or `~/.cache/deltacells`).
    """
    return Dataset(path, max_cached_tiles=max_cached_tiles, decoded_cache_bytes=decoded_cache_bytes,
                   max_prefetch_tiles=max_prefetch_tiles,
                   io_threads=io_threads, decode_threads=decode_threads, verify_crc=verify_crc, cache_dir=cache_dir)


def _cells_array(cells: Any, n_cells: int) -> np.ndarray:
    """Cell indices as a 1-d integer array: an int, a slice, a range, a sequence or an array."""
    if isinstance(cells, slice):
        return np.arange(*cells.indices(n_cells), dtype=np.int64)
    if isinstance(cells, (int, np.integer)):
        return np.array([cells], dtype=np.int64)
    arr = np.asarray(cells)
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise UsageError(f"cell indices must be integers, got an array of {arr.dtype}")
    return arr


def _csr(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, n_genes: int):
    import scipy.sparse

    return scipy.sparse.csr_matrix((values, indices, indptr), shape=(len(indptr) - 1, n_genes), copy=False)


class Dataset:
    """An open deltacells dataset. Use as a context manager or call `close()` to stop its fetch
    threads and drop its caches. Batch calls from several threads are serialized; for parallel
    consumers open one Dataset each. Pickling reopens by path (e.g. in DataLoader workers)."""

    def __init__(self, path: PathLike, *, cache_dir: Optional[PathLike] = None, **options: Any):
        self._path = os.fspath(path)
        self._options = dict(options)
        self._cache_dir = None if cache_dir is None else os.fspath(cache_dir)
        self._native = _tessera.CellsDataset(self._path, **options)
        self._obs: Optional[Obs] = None
        self._var_names: Optional[list] = None
        self._gene_lookup_cache: Optional[dict] = None

    def __reduce__(self):
        return (_reopen, (self._path, self._cache_dir, tuple(sorted(self._options.items()))))

    # ---- metadata --------------------------------------------------------------------------
    @property
    def path(self) -> str:
        """The path the dataset was opened with."""
        return self._path

    @property
    def n_cells(self) -> int:
        """Number of cells (rows)."""
        return self._native.n_cells

    @property
    def n_genes(self) -> int:
        """Number of genes (columns)."""
        return self._native.n_genes

    @property
    def shape(self) -> Tuple[int, int]:
        """(n_cells, n_genes)."""
        return (self._native.n_cells, self._native.n_genes)

    @property
    def n_tiles(self) -> int:
        """Number of tiles."""
        return self._native.n_tiles

    @property
    def tile_size(self) -> int:
        """Cells per tile (the last tile may hold fewer)."""
        return self._native.tile_size

    @property
    def fetch_depth(self) -> Tuple[int, int]:
        """(io_threads, max_prefetch_tiles) as chosen when the dataset was opened."""
        return tuple(self._native.fetch_depth)

    @property
    def version(self) -> int:
        """Format version of the tiles (1 or 2)."""
        return self._native.version

    @property
    def limits(self) -> np.ndarray:
        """Cumulative cells per tile as uint64: `limits[t]` is one past the last cell of tile t."""
        return self._native.limits

    @property
    def tile_cells(self) -> np.ndarray:
        """Cells of each tile (uint64)."""
        return self._native.tile_cells

    @property
    def tile_nnz(self) -> np.ndarray:
        """Stored nonzeros of each tile (uint64), from the manifest."""
        return self._native.tile_nnz

    @property
    def var_names(self) -> list:
        """Gene names in stored column order (empty when the dataset has no var_names.txt)."""
        if self._var_names is None:
            self._var_names = self._native.var_names()
        return list(self._var_names)

    def _gene_lookup(self) -> dict:
        if self._gene_lookup_cache is None:
            names = self.var_names
            self._gene_lookup_cache = {n: j for j, n in reversed(list(enumerate(names)))}
        return self._gene_lookup_cache

    def gene_index(self, names: Union[str, Sequence[str]]) -> np.ndarray:
        """int64 stored column of each gene name (`var_names` positions; the first when a name
        repeats). KeyError naming the genes the dataset does not have."""
        from . import _cells_anndata

        return _cells_anndata.gene_index(self, names)

    @property
    def var(self):
        """The gene table as a `pandas.DataFrame`, one row per stored column (the order of
        `get_batch`'s columns), indexed by gene name: every column of the source's var table
        (var.parquet; numbers, bools and strings, with pandas' nullable types where values are
        missing), or no columns when the dataset has none."""
        from . import _cells_anndata

        return _cells_anndata.var_frame(self)

    @property
    def gene_order(self) -> np.ndarray:
        """int32 source column of each stored column (empty without gene_order.npy)."""
        return self._native.gene_order()

    @property
    def has_obs(self) -> bool:
        """Whether the dataset has an obs sidecar."""
        return self._native.has_obs

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._native.closed

    def tile_bounds(self, tile: int) -> Tuple[int, int]:
        """The cells `[start, stop)` of `tile` (tessera.UsageError outside the tiles)."""
        return self._native.tile_bounds(tile)

    def tile_of(self, cells: Union[int, Sequence[int], np.ndarray]) -> Union[int, np.ndarray]:
        """The tile of one cell (an int), or of each cell of a sequence (an int64 array)."""
        if isinstance(cells, (int, np.integer)):
            return self._native.tile_of(int(cells))
        return self._native.tile_of(_cells_array(cells, self.n_cells))

    # ---- reading ---------------------------------------------------------------------------
    def get_batch(self, cells: Any, *, genes: Any = None, values: str = "float32", format: str = "csr"):  # noqa: A002
        """The requested cells in order (repeats allowed) as a `scipy.sparse.csr_matrix` of shape
        `(len(cells), n_genes)` with `values` "float32" or "int32".

        `genes` (names, or stored columns as integers) keeps those columns in that order: the
        shape is then `(len(cells), len(genes))` (KeyError for unknown names).

        `format="raw"` returns `(indptr int64, indices int32, values)` numpy arrays that own the
        library's buffers (no copy). tessera.UsageError (a ValueError) for a cell outside
        `[0, n_cells)`, raised before anything is fetched; tessera.FormatError for a damaged tile.
        """
        if format not in ("csr", "raw"):
            raise UsageError(f'format must be "csr" or "raw", got {format!r}')
        positions = None
        if genes is not None:
            from . import _cells_anndata

            positions = _cells_anndata.gene_positions(self, genes)
        indptr, indices, data = self._native.get_batch(_cells_array(cells, self.n_cells), values, positions)
        if format == "raw":
            return indptr, indices, data
        return _csr(indptr, indices, data, self.n_genes if positions is None else len(positions))

    def batch_nnz(self, cells: Any) -> int:
        """Nonzeros `get_batch(cells)` would return (tiles are fetched and parsed, not decoded)."""
        return self._native.batch_nnz(_cells_array(cells, self.n_cells))

    def prefetch(self, tiles: Iterable[int]) -> int:
        """Starts background fetches of `tiles`; returns how many were started. Never blocks."""
        tiles = [tiles] if isinstance(tiles, (int, np.integer)) else list(tiles)
        return self._native.prefetch(np.asarray(tiles, dtype=np.int64))

    def prefetch_cells(self, cells: Any) -> int:
        """Starts background fetches of the tiles holding `cells`; returns how many were started."""
        return self._native.prefetch_cells(_cells_array(cells, self.n_cells))

    def stats(self) -> dict:
        """Fetch and decode statistics (tiles_fetched, fetch_seconds, stall_seconds, tiles_decoded,
        decode_seconds, tile_cache_hits, decoded_cache_hits, gene_indexes_built,
        gene_projections_built)."""
        return self._native.stats()

    def epoch(self, batch_size: int, *, seed: int = 0, epoch: int = 0, shuffle: bool = True, rank: int = 0,
              world_size: int = 1, worker: int = 0, num_workers: int = 1, drop_last: bool = False,
              values: str = "float32", even_batches: bool = False, prefetch_tiles: int = 2,
              format: str = "csr") -> "Epoch":  # noqa: A002
        """An iterator over one epoch's batches for the pair (rank, worker): `(cells, x)` with
        `cells` the int64 global cell indices and `x` their csr_matrix (format="raw": the
        `(indptr, indices, values)` tuple).

        Tiles are visited in an order shuffled from `(seed, epoch)` and split into contiguous runs
        by rank, then by worker; cells are shuffled within each tile; batches may span two tiles;
        the last partial batch is kept unless `drop_last`. `even_batches` stops every pair after
        the smallest batch count of all pairs. Orders are identical on every platform.
        """
        return Epoch(self, batch_size, seed=seed, epoch=epoch, shuffle=shuffle, rank=rank, world_size=world_size,
                     worker=worker, num_workers=num_workers, drop_last=drop_last, values=values,
                     even_batches=even_batches, prefetch_tiles=prefetch_tiles, format=format)

    @property
    def obs(self) -> "Obs":
        """The obs table (tessera.UsageError if the dataset has none)."""
        if self._obs is None:
            self._obs = Obs(self, _tessera.CellsObs(self._native, self._cache_dir or "", 8))
        return self._obs

    def to_anndata(self, cells: Any = None, genes: Any = None, obs: Optional[Sequence[str]] = None, *,
                   values: str = "float32", order: str = "source"):
        """The cells (all when None) as an `anndata.AnnData`: X a csr_matrix of `values`, obs
        with `obs_names` as its index (the columns `obs`, all when None), var indexed by gene name.

        Genes are the requested `genes` in that order, else all genes in the source's order
        (`order="stored"`: the dataset's stored order, no column permutation). Integer and bool
        obs columns with missing values become pandas' nullable types.
        """
        from . import _cells_anndata

        return _cells_anndata.to_anndata(self, cells, genes, obs, values=values, order=order)

    # ---- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        """Stops the fetch threads and drops the caches and memory maps (also those of obs).
        Metadata stays readable; reading raises tessera.UsageError. Closing twice is harmless."""
        if self._obs is not None:
            self._obs._native.close()
        self._native.close()

    def __enter__(self) -> "Dataset":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __len__(self) -> int:
        return self.n_cells

    def __repr__(self) -> str:
        state = "closed " if self.closed else ""
        return f"<{state}tessera.cells.Dataset {self._path!r}: {self.n_cells} cells x {self.n_genes} genes, " \
               f"{self.n_tiles} tiles, version {self.version}>"


def _reopen(path: str, cache_dir: Optional[str], options: tuple) -> Dataset:
    return Dataset(path, cache_dir=cache_dir, **dict(options))


def _seed64(seed: int) -> int:
    """A seed in [-2**63, 2**64) as the signed 64-bit integer with the same bits."""
    seed = int(seed)
    if not -2**63 <= seed < 2**64:
        raise UsageError(f"seed {seed} does not fit in 64 bits")
    return seed - 2**64 if seed >= 2**63 else seed


class Epoch:
    """One (rank, worker) pair's batches for an epoch (see `Dataset.epoch`). Iterating yields
    `(cells, x)`; after the end, `set_epoch(e)` starts another epoch."""

    def __init__(self, dataset: Dataset, batch_size: int, *, seed: int, epoch: int, format: str,  # noqa: A002
                 values: str, **options: Any):
        if format not in ("csr", "raw"):
            raise UsageError(f'format must be "csr" or "raw", got {format!r}')
        if batch_size < 1:
            raise UsageError(f"batch_size must be at least 1, got {batch_size}")
        self._dataset = dataset
        self._format = format
        self._native = _tessera.CellsEpochIterator(dataset._native, batch_size, seed=_seed64(seed),
                                                   values=values, **options)
        self._native.set_epoch(epoch)

    @property
    def epoch(self) -> int:
        """The current epoch."""
        return self._native.epoch

    def set_epoch(self, epoch: int) -> None:
        """Restarts iteration at the beginning of `epoch` (its own tile and cell order)."""
        self._native.set_epoch(epoch)

    @property
    def tiles(self) -> np.ndarray:
        """This pair's tiles in visiting order (uint64)."""
        return self._native.tiles()

    def batch_count(self) -> int:
        """Batches this pair yields in the current epoch."""
        return self._native.batch_count()

    __len__ = batch_count

    def __iter__(self) -> "Epoch":
        return self

    def __next__(self):
        item = self._native.next()
        if item is None:
            raise StopIteration
        cells, indptr, indices, values = item
        if self._format == "raw":
            return cells, (indptr, indices, values)
        return cells, _csr(indptr, indices, values, self._dataset.n_genes)


class Obs:
    """The per-cell table of a dataset, read through the node-local obs cache (shared with the
    Python reference: columns localized by either are used by both)."""

    def __init__(self, dataset: Dataset, native: Any):
        self._dataset = dataset
        self._native = native

    @property
    def columns(self) -> list:
        """Column names in schema order."""
        return self._native.columns()

    @property
    def schema(self) -> dict:
        """`{name: {"kind": category|numeric|bool|string, "type": stored type, "categories": [...]}}`."""
        return {c["name"]: {k: c[k] for k in ("kind", "type", "categories")} for c in self._native.schema()}

    @property
    def cache_dir(self) -> str:
        """`<cache root>/<fingerprint>/obs`, where the localized columns live."""
        return self._native.cache_dir()

    def localize(self, columns: Optional[Sequence[str]] = None, *, threads: int = 8) -> list:
        """Copies `columns` (all if None) into the local cache; returns the columns fetched
        (empty when all were local already). tessera.UsageError for unknown columns."""
        cols = None if columns is None else ([columns] if isinstance(columns, str) else list(columns))
        return self._native.localize(cols, threads)

    def localized_columns(self) -> list:
        """Columns whose cache file exists."""
        return self._native.localized_columns()

    def column_nbytes(self) -> dict:
        """Compressed bytes a localization of each column fetches."""
        return dict(zip(self.columns, self._native.column_nbytes()))

    def filter(self, where: dict) -> np.ndarray:
        """Sorted int64 cells whose values meet every condition of `where` (`{column: condition}`,
        combined with AND). A condition is a value (equality), a list/set/array of values
        (membership), a `(lo, hi)` tuple or `{"ge": lo, "lt": hi}` dict (numeric columns:
        `lo <= v < hi`, either bound None for open) or None (the value is missing). Missing values
        match only None. The library evaluates it, as `tessera cells get --where` does. The columns
        are localized first. tessera.UsageError for unknown columns or a condition the column's
        kind does not support."""
        from . import _cells_anndata

        return _cells_anndata.obs_filter(self, where)

    def take(self, cells: Any, columns: Optional[Sequence[str]] = None):
        """Rows of `cells` (in order, repeats allowed) as a `pandas.DataFrame` with a RangeIndex.

        Columns not yet local are localized first (with a UserWarning: list them in `localize`
        up front). category → `pandas.Categorical` (missing = NaN); numeric → numpy in the stored
        type, or float64 with NaN when a touched tile has a missing value; bool → numpy bool, or
        pandas "boolean" with missing values; string → object array with None for missing.
        """
        if columns is None:
            cols = self.columns
        else:
            cols = list(dict.fromkeys([columns] if isinstance(columns, str) else columns))
        return self._frame(_cells_array(cells, self._dataset.n_cells), cols, nullable=False)

    def _frame(self, cells: np.ndarray, cols: list, *, nullable: bool):
        import pandas as pd

        taken = self._native.take(cells, cols)
        types = {c["name"]: c["type"] for c in self._native.schema()} if nullable else {}
        data = {name: _obs_values(pd, kind, values, validity, categories, types.get(name))
                for name, kind, values, validity, categories in taken}
        return pd.DataFrame(data, index=pd.RangeIndex(len(cells)), columns=cols)

    def __repr__(self) -> str:
        return f"<tessera.cells.Obs of {self._dataset.path!r}: {self.columns}>"


# Stored (Arrow) numeric types as numpy types, for restoring a column's type around missing values.
_ARROW_NUMPY = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8,
                "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64, "float": np.float32,
                "double": np.float64, "halffloat": np.float16}


def _obs_values(pd, kind: str, values, validity, categories, stored_type: Optional[str] = None):
    """One taken column as pandas holds it. With `stored_type` (AnnData's way), a numeric column
    that came back as float64 with NaN for missing values gets its stored type back: integers as
    pandas' nullable integers, floats with NaN."""
    if kind == "category":
        return pd.Categorical.from_codes(values, categories=pd.Index(categories, dtype=object))
    if kind == "string":
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    if validity is not None:
        if kind == "bool":
            return pd.arrays.BooleanArray(values, ~validity)
        values = values.astype(np.float64)
        values[~validity] = np.nan
    target = _ARROW_NUMPY.get(stored_type) if kind == "numeric" else None
    if target is None or values.dtype == target:
        return values
    if np.dtype(target).kind in "iu":
        missing = np.isnan(values)
        return pd.arrays.IntegerArray(np.where(missing, 0, values).astype(target), missing)
    return values.astype(target)


# ---- conversion ------------------------------------------------------------------------------

_CONVERT_KINDS = {"h5ad": "--h5ad-glob", "10x-h5": "--10x-h5", "10x-mtx": "--10x-mtx"}


def convert(inputs: Union[PathLike, Sequence[PathLike]], output: PathLike, *, kind: str = "h5ad",
            open_dataset: bool = True, quiet: Optional[bool] = None, var_names: Optional[str] = None,
            genome: Optional[str] = None, client: Any = None, partitions: Optional[int] = None,
            tiles_dir: Optional[PathLike] = None, **options: Any):
    """Converts h5ad / Cell Ranger inputs into a deltacells dataset with `tessera cells convert`.

    `inputs` are glob patterns (natural-sorted, like Python's `glob(recursive=True)`); `kind` is
    "h5ad", "10x-h5" or "10x-mtx". Keyword options become the CLI's flags (docs/cli/cells.md):
    `format_version`, `tile_size`, `chunks`, `level`, `no_sort_genes`, `sort_genes_max_files`,
    `no_sort_files`, `workers`, `threads`, `no_obs`, `no_obs_names`, `no_var`, `obs_exclude`
    (a list), `max_categories`, `obs_tiles_per_file`, `obs_level`, `overwrite`, `layer`,
    `use_raw`; `var_names` ("gene_ids"/"gene_symbols") and `genome` for 10x inputs.

    With `client` (a `dask.distributed.Client`) the tiles are encoded by Dask tasks (at most
    `partitions` of them) into `tiles_dir` (a directory every worker can write; default: beside a
    local output, in the staging directory for a bucket) and the dataset is committed once: the
    same bytes as without a client (docs/distributed.md).

    Returns the opened Dataset, or with `open_dataset=False` the CLI's progress text. Errors
    are raised as the CLI's tessera.Error subclass (the output is then removed).
    """
    if kind not in _CONVERT_KINDS:
        raise UsageError(f"kind must be one of {list(_CONVERT_KINDS)}, got {kind!r}")
    patterns = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    if not patterns:
        raise UsageError("convert needs at least one input pattern")
    for key in ("gene_order_out", "gene_order_from", "tiles", "tiles_from"):
        if key in options:
            raise UsageError(f"convert() sets {key!r} itself (client= runs the distributed steps)")
    inputs_args = [_CONVERT_KINDS[kind], *map(os.fspath, patterns)]
    flags: list[str] = []
    exclude = options.pop("obs_exclude", None)
    if exclude:
        flags += ["--obs-exclude", exclude if isinstance(exclude, str) else ",".join(exclude)]
    if var_names is not None:
        flags += ["--10x-var-names", var_names]
    if genome is not None:
        flags += ["--10x-genome", genome]
    flags += _cli.option_args(options)
    quiet_flag = ["--quiet"] if (quiet if quiet is not None else open_dataset) else []
    if client is not None:
        from . import _cells_distributed

        text = _cells_distributed.convert(client, inputs_args, os.fspath(output), flags, quiet_flag, partitions,
                                          tiles_dir)
    else:
        text = _cli.run(["cells", "convert", *inputs_args, "--output", os.fspath(output), *flags,
                         *quiet_flag]).stdout
    return open(output) if open_dataset else text


def write_h5ad(dataset: Union["Dataset", PathLike], out: PathLike, *, cells: Any = None, genes: Any = None,
               obs: Optional[Sequence[str]] = None, values: str = "float32", order: str = "source") -> None:
    """Writes `Dataset.to_anndata(cells, genes, obs, values=, order=)` of `dataset` (an open
    Dataset or a path, opened and closed here) to the h5ad file `out`."""
    from . import _cells_anndata

    _cells_anndata.write_h5ad(dataset, out, cells=cells, genes=genes, obs=obs, values=values, order=order)


def __getattr__(name: str):
    # TorchDataset lives in _cells_torch so that `import tessera` does not import torch.
    if name == "TorchDataset":
        from ._cells_torch import TorchDataset

        return TorchDataset
    raise AttributeError(f"module 'tessera.cells' has no attribute {name!r}")


# The Dask array lives in _cells_dask, which imports dask only when an array is made.
from ._cells_dask import to_dask  # noqa: E402
