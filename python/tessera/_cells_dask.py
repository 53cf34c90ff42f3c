"""`tessera.cells.to_dask`: a deltacells dataset as a Dask array of sparse tiles.

dask and scipy are imported when an array is made, so `import tessera` imports neither.
"""
from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from . import _uri
from . import cells as _cells
from ._tessera import UsageError

@functools.lru_cache(maxsize=16)
def _cached_dataset(path: str, stamp: int, options: tuple) -> "_cells.Dataset":
    """One open Dataset per (path, manifest mtime, options) and process (tasks reopen by path)."""
    return _cells.Dataset(path, **dict(options))


_NO_KEEPDIMS = object()


def _csr_block_class():
    """`_CSRBlock`, a csr_matrix whose `sum` also takes numpy's `keepdims` and tuple axes, which
    dask's sum and mean reductions pass to every block (scipy's `sum` takes neither). Defined and
    registered with dask's concatenation on first use, so that importing the module imports
    neither scipy nor dask."""
    global _csr_block
    if _csr_block is not None:
        return _csr_block
    import scipy.sparse
    from dask.array.dispatch import concatenate_lookup

    class CSRBlock(scipy.sparse.csr_matrix):
        """A tile of `to_dask`: a csr_matrix whose `sum(axis, dtype, keepdims=...)` follows numpy
        (an ndarray, axes as an int or a tuple) when `keepdims` is given, scipy otherwise."""

        def sum(self, axis=None, dtype=None, out=None, keepdims=_NO_KEEPDIMS):
            if keepdims is _NO_KEEPDIMS:
                return super().sum(axis=axis, dtype=dtype, out=out)
            if isinstance(axis, tuple):
                axes = {a % 2 for a in axis}
                axis = axes.pop() if len(axes) == 1 else None
            total = np.asarray(super().sum(axis=axis, dtype=dtype))
            if axis is None:
                return total.reshape((1, 1) if keepdims else ())
            return total if keepdims else total.ravel()

    CSRBlock.__module__, CSRBlock.__qualname__ = __name__, "_CSRBlock"

    @concatenate_lookup.register(CSRBlock)
    def _concatenate(arrays, axis=0):
        stack = scipy.sparse.vstack if axis == 0 else scipy.sparse.hstack
        return CSRBlock(stack(arrays, format="csr"))

    _csr_block = CSRBlock
    return CSRBlock


_csr_block = None  # the class, once defined; `tessera._cells_dask._CSRBlock` (for pickle) defines it


def _load_tile(path: str, stamp: int, options: tuple, tile: int, values: str):
    ds = _cached_dataset(path, stamp, options)
    start, stop = ds.tile_bounds(tile)
    return _csr_block_class()(ds.get_batch(np.arange(start, stop, dtype=np.int64), values=values))


def to_dask(path: "_cells.PathLike", *, values: str = "float32", **options: Any):
    """The dataset as a `dask.array.Array` of shape (n_cells, n_genes), one block per tile, each
    block a `scipy.sparse.csr_matrix` (the array's meta) whose `sum` also takes numpy's
    `keepdims`, so that `x.sum(axis)` and `x.mean(axis)` work.

    Tasks carry only the path, the tile and the options (those of `open`, e.g. `decode_threads`),
    so they pickle to any worker; each process keeps its open datasets (an LRU of 16).
    """
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    if values not in _cells._VALUES:
        raise UsageError(f'values must be "float32" or "int32", got {values!r}')
    path = os.fspath(path)
    opts = tuple(sorted(options.items()))
    with _cells.Dataset(path, **options) as ds:
        tile_cells = tuple(int(c) for c in ds.tile_cells)
        n_genes = ds.n_genes
    # A local dataset's version is its manifest's mtime; a remote one's manifest was read at open.
    local = None if _uri.is_remote(path) else _uri.local_path(path)
    stamp = os.stat(os.path.join(local, "manifest.json")).st_mtime_ns if local and os.path.isdir(local) else 0
    name = "tessera-cells-" + tokenize(path, stamp, opts, values)
    graph = {(name, t, 0): (_load_tile, path, stamp, opts, t, values) for t in range(len(tile_cells))}
    hlg = HighLevelGraph.from_collections(name, graph, dependencies=())
    meta = _csr_block_class()((0, 0), dtype=_cells._VALUES[values])
    return da.Array(hlg, name, (tile_cells, (n_genes,)), meta=meta)


def __getattr__(name: str):
    # Unpickling a block looks the class up here, in processes that have not made one yet.
    if name == "_CSRBlock":
        return _csr_block_class()
    raise AttributeError(f"module 'tessera._cells_dask' has no attribute {name!r}")
