"""The xarray backend for `.tet` files: `xr.open_dataset("model.tet", engine="tessera")`.

Opening reads the catalog and the footer metadata only. Every dataset becomes a lazy variable
whose reads go through `tessera.tet.Dataset` slicing, so a selection decodes only the chunks it
touches; `chunks={}` gives one Dask chunk per `.tet` chunk (`encoding["preferred_chunks"]`).

Dimensions are the footer's `dim_names` (datasets without them get `phony_dim_N` names, one per
distinct length and position, as HDF5 readers do). A 1-D dataset named like its dimension is that
dimension's coordinate (the CF rule, applied by xarray when the Dataset is built); a dimension
with no such dataset takes the footer's coordinate labels as a text index when every dataset
using it agrees on them. CF decoding is xarray's own (`decode_cf_variables` through
`StoreBackendEntrypoint`), so `decode_times`, `use_cftime`, `decode_coords`, `decode_timedelta`
and `mask_and_scale` mean what they mean for NetCDF.

Attributes come typed from the footer's tessera extension (docs/tet-footer-extension.md), with
the file's global attributes. It also records which CF encoding attributes (`_FillValue`,
`missing_value`, `scale_factor`, `add_offset`) `tessera tet convert` already applied to the stored
values: with `mask_and_scale=True` those go to the variable's `encoding` (with the source dtype), as
xarray's decoder would have put them, and the others (an integer `_FillValue`, a float fill kept by
`--keep-fill`) are left in `attrs` for that decoder to apply; with `mask_and_scale=False` the
stored values are given back in the source's encoding (packed integers, fill values), with every
attribute. A file without the extension (written by the reference) has text attributes only: the
CF encoding ones are then held out of `attrs` and the decoder, and listed, as stored, in each
variable's `encoding["tet_source_attrs"]`.

No lock: a `.tet` reader is immutable and safe to share between threads (docs/tet-reader.md).
"""
from __future__ import annotations

import os
from typing import Any, Iterable, Optional

import numpy as np
from xarray import Variable
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.backends.common import AbstractDataStore
from xarray.backends.store import StoreBackendEntrypoint
from xarray.core import indexing

from . import _tet_extension, _uri, tet
from ._tessera import UnsupportedError, UsageError

__all__ = ["TesseraBackendEntrypoint", "TetBackendArray", "TetDataStore"]

MAGIC = b"TETR"  # superblock magic, tet.md §1.2
# Attributes that tell a reader how to turn stored values into data; see the module docstring.
SOURCE_ENCODING_ATTRS = ("_FillValue", "missing_value", "scale_factor", "add_offset")


class RegionArray(BackendArray):
    """A lazy backend array whose `_read(key)` reads one region given by integers and slices."""

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        # BASIC: the reader takes integers and slices of any step; xarray applies array indexers
        # to the (smallest) block that holds them.
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.BASIC, self._read)

    def _read(self, key: tuple) -> np.ndarray:
        raise NotImplementedError


class TetBackendArray(RegionArray):
    """One `.tet` dataset as xarray's lazy backend array: each access reads only its region."""

    def __init__(self, dataset: tet.Dataset):
        self.dataset = dataset
        self.shape = dataset.shape
        self.dtype = dataset.dtype

    def _read(self, key: tuple) -> np.ndarray:
        out = self.dataset[key]
        # A selection inside one raw chunk is a read-only view of the mapped file; xarray's data
        # is writable (as from every other backend), so such a view is copied.
        return out if out.flags.writeable else out.copy()

    def __reduce__(self):
        # Dask's distributed workers get the path and the name, and map the file themselves.
        file = self.dataset.file
        return _reopened_array, (absolute(file.path), self.dataset.name, file.verify_checksums)


class SourceEncodedArray(RegionArray):
    """A dataset's values in the source's encoding (`mask_and_scale=False`): the applied packing
    undone (rounded to the source's integers) and NaN turned back into the fill value."""

    def __init__(self, array: TetBackendArray, encoding: _tet_extension.DatasetEncoding):
        self.array = array
        self.shape = array.shape
        applied = encoding.applied_attrs()
        self.scale = applied.get("scale_factor")
        self.offset = applied.get("add_offset")
        fill = applied.get("_FillValue", applied.get("missing_value"))
        self.fill = None if fill is None else np.ravel(fill)[0]
        packed = self.scale is not None or self.offset is not None
        self.dtype = encoding.source_dtype if packed and encoding.source_dtype is not None else array.dtype

    def _read(self, key: tuple) -> np.ndarray:
        values = np.array(self.array._read(key), dtype=np.float64)
        missing = np.isnan(values)
        if self.offset is not None:
            values -= np.float64(self.offset)
        if self.scale is not None:
            values /= np.float64(self.scale)
        if self.dtype.kind in "iub":
            values = np.round(values)
        if self.fill is not None:
            values[missing] = self.fill
        return values.astype(self.dtype)


def _reopened_array(path: str, name: str, verify_checksums: bool = False) -> TetBackendArray:
    return TetBackendArray(tet._cached_file(path, verify_checksums)[name])


def absolute(path: str) -> str:
    """A local path made absolute (what xarray's backends report as `source`); URIs as given."""
    return path if _uri.is_remote(path) else os.path.abspath(_uri.local_path(path))


def dimension_names(file: tet.File) -> dict:
    """Dimension names per dataset: the footer's `dim_names`, else `phony_dim_N`, where N numbers
    the distinct (length, repetition of that length within the dataset) pairs in catalog order,
    so datasets without names share a dimension exactly when their lengths agree."""
    phony: dict = {}
    dims = {}
    for ds in file.datasets.values():
        if ds.dim_names and len(ds.dim_names) == ds.ndim:
            dims[ds.name] = tuple(ds.dim_names)
            continue
        names, seen = [], {}
        for n in ds.shape:
            key = (n, seen.get(n, 0))
            seen[n] = key[1] + 1
            names.append(phony.setdefault(key, f"phony_dim_{len(phony)}"))
        dims[ds.name] = tuple(names)
    return dims


class TetDataStore(AbstractDataStore):
    """The datasets of an open `.tet` file as xarray's raw (not yet CF-decoded) variables."""

    def __init__(self, file: tet.File, *, close_file: bool, drop_variables=None, mask_and_scale: bool = True):
        self.file = file
        self.mask_and_scale = mask_and_scale
        self.source = absolute(file.path)
        self._close_file = close_file
        drop = {drop_variables} if isinstance(drop_variables, str) else set(drop_variables or ())
        # Names of phony dimensions come from the whole file, so dropping a dataset renames nothing.
        self.dims = {name: dims for name, dims in dimension_names(file).items() if name not in drop}

    def get_dimensions(self) -> dict:
        sizes: dict = {}
        for name, dims in self.dims.items():
            for dim, n in zip(dims, self.file[name].shape):
                if sizes.setdefault(dim, (n, name))[0] != n:
                    raise UnsupportedError(
                        f"{self.file.path}: dimension {dim!r} has length {sizes[dim][0]} in dataset "
                        f"{sizes[dim][1]!r} but {n} in dataset {name!r}; "
                        "drop one (drop_variables) or use tessera.tet.open")
        return {dim: n for dim, (n, _) in sizes.items()}

    def get_attrs(self) -> dict:
        return self.file.attrs  # the source's, from the footer extension (file metadata describes the writer)

    def get_variables(self) -> dict:
        sizes = self.get_dimensions()
        variables = {name: self._variable(self.file[name], dims) for name, dims in self.dims.items()}
        for dim, labels in self._label_coordinates(sizes).items():
            if dim not in variables:
                variables[dim] = Variable((dim,), np.asarray(labels))
        return variables

    def _variable(self, ds: tet.Dataset, dims: tuple) -> Variable:
        encoding = {
            "dtype": ds.dtype,
            "original_shape": ds.shape,
            "chunksizes": ds.chunks,
            "preferred_chunks": dict(zip(dims, ds.chunks)),
            "source": self.source,
        }
        data = TetBackendArray(ds)
        source = ds.encoding
        if source is None:  # text attributes only: see the module docstring
            attrs = {k: v for k, v in ds.attrs.items() if k not in SOURCE_ENCODING_ATTRS}
            held_back = {k: v for k, v in ds.attrs.items() if k in SOURCE_ENCODING_ATTRS}
            if held_back:
                encoding["tet_source_attrs"] = held_back
            return Variable(dims, indexing.LazilyIndexedArray(data), attrs, encoding)
        attrs = dict(source.attrs)
        applied = source.applied_attrs()
        if applied and not self.mask_and_scale:
            data = SourceEncodedArray(data, source)
            encoding["dtype"] = data.dtype
        elif applied:
            for name in applied:
                attrs.pop(name)
            encoding.update(applied)
            if source.source_dtype is not None:
                encoding["dtype"] = source.source_dtype
        return Variable(dims, indexing.LazilyIndexedArray(data), attrs, encoding)

    def _label_coordinates(self, sizes: dict) -> dict:
        """Footer labels for dimensions that have no dataset of their own: those whose every
        dataset gives the same labels, one per index."""
        found: dict = {}
        conflicting = set()
        for name, dims in self.dims.items():
            ds = self.file[name]
            for axis, dim in enumerate(dims):
                labels = ds.labels.get(ds.axis_key(axis))
                if labels is None or len(labels) != sizes[dim]:
                    continue
                if found.setdefault(dim, labels) != labels:
                    conflicting.add(dim)
        return {dim: labels for dim, labels in found.items() if dim not in conflicting}

    def get_encoding(self) -> dict:
        return {"source": self.source}

    def close(self) -> None:
        if self._close_file:
            self.file.close()


def _path_of(filename_or_obj) -> Optional[str]:
    if isinstance(filename_or_obj, (str, os.PathLike)):
        path = os.fspath(filename_or_obj)
        return path if isinstance(path, str) else None
    return None


class TesseraBackendEntrypoint(BackendEntrypoint):
    """`xr.open_dataset(path, engine="tessera")`: lazy variables over a `.tet` file (local or remote)."""

    description = "Open tessera .tet files (local paths, file://, http(s)://, s3://, gs://) in xarray"
    url = "docs/xarray.md"  # in the tessera source tree; the project has no public site
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "mask_and_scale", "decode_times",
                               "concat_characters", "decode_coords", "use_cftime", "decode_timedelta",
                               "verify_checksums")

    def open_dataset(self, filename_or_obj, *, drop_variables: Optional[Iterable[str]] = None,
                     mask_and_scale: bool = True, decode_times: bool = True, concat_characters: bool = True,
                     decode_coords: Any = True, use_cftime: Optional[bool] = None,
                     decode_timedelta: Optional[bool] = None, verify_checksums: bool = False):
        """Opens a `.tet` path or URI (or an open `tessera.tet.File`); reads metadata only.
        `verify_checksums=True` makes every read compare its chunks with their recorded CRC-32C
        (`tessera.tet.open`'s option; an open File keeps its own)."""
        if isinstance(filename_or_obj, tet.File):
            file, close_file = filename_or_obj, False
        else:
            path = _path_of(filename_or_obj)
            if path is None:
                raise UsageError(f"the tessera engine opens paths and URIs, not {type(filename_or_obj).__name__} "
                                 "objects")
            file, close_file = tet.open(path, verify_checksums=verify_checksums), True
        store = TetDataStore(file, close_file=close_file, drop_variables=drop_variables,
                             mask_and_scale=mask_and_scale)
        # xarray's own path for a data store: CF decoding, coordinates, close.
        return StoreBackendEntrypoint().open_dataset(
            store, mask_and_scale=mask_and_scale, decode_times=decode_times, concat_characters=concat_characters,
            decode_coords=decode_coords, drop_variables=drop_variables, use_cftime=use_cftime,
            decode_timedelta=decode_timedelta)

    def guess_can_open(self, filename_or_obj) -> bool:
        """A `.tet` name (paths and URIs), or a local file that starts with the `TETR` magic."""
        if isinstance(filename_or_obj, tet.File):
            return True
        path = _path_of(filename_or_obj)
        if path is None:
            return False
        if path.lower().endswith(".tet"):
            return True
        if _uri.is_remote(path):
            return False  # no request just to guess
        try:
            with open(_uri.local_path(path), "rb") as f:
                return f.read(len(MAGIC)) == MAGIC
        except OSError:
            return False
