"""tessera: read, write, verify and query `.tet` arrays, deltacells datasets and zagg-ragged stores.

Submodules:
    tessera.tet     chunked N-d arrays (`.tet`): numpy slicing, queries, writing, Dask, xarray
    tessera.cells   single-cell count matrices (deltacells): CSR batches, obs, PyTorch, Dask
    tessera.ragged  per-cell t-digests in zagg-ragged/1 stores: cells, tensors, builds, Dask

Every error the library raises is a `tessera.Error`; its subclasses also derive from the builtin
a caller would catch (FormatError and UsageError from ValueError, IoError from OSError, ...).
"""
import pathlib as _pathlib

from ._tessera import (  # noqa: F401  (re-exported)
    Error,
    FormatError,
    IoError,
    LimitError,
    UnsupportedError,
    UsageError,
    __version__,
)


def cli_path() -> _pathlib.Path:
    """Path of the `tessera` command-line tool shipped with this package."""
    return _pathlib.Path(__file__).resolve().parent / "_bin" / "tessera"


from . import cells, ragged, tet  # noqa: E402,F401  (after the exceptions they use)

__all__ = [
    "Error", "FormatError", "IoError", "LimitError", "UnsupportedError", "UsageError",
    "cli_path", "tet", "cells", "ragged", "__version__",
]
