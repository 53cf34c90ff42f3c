"""Tetration `.tet` files from Python: numpy slicing, labelled selection, queries, writing, Dask, xarray.

    f = tessera.tet.open("sample.tet")
    t = f["temperature"]                  # a Dataset: name, dtype, shape, chunks, attrs, dim_names, labels, coords
    block = t[0:2, ::2]                   # numpy; a view of the mapped file when one raw chunk holds it
    rows = t.sel(time=slice("2024-01-02", "2024-01-04"))
    f.query({"dataset": "temperature", "mean": ["time"]})["operation_reduced_mean"]

Reads decode chunks in parallel in C++ with the GIL released. Arrays that are views of the file are
read-only (the file is mapped read-only); `.copy()` gives a writable array.
"""
from __future__ import annotations

import json
import os
import time
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from . import _tessera, _tet_coords, _tet_extension, _uri
from ._tessera import UsageError

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["open", "File", "Dataset", "query", "synth", "write", "Writer", "to_dask"]


def open(path: PathLike, *, verify_checksums: bool = False) -> "File":  # noqa: A001  (mirrors h5py.File)
    """Opens and fully validates a `.tet` file (memory-mapped). Raises tessera.FormatError on a bad file.

    With `verify_checksums=True` every read compares the chunks it touches with the CRC-32C the
    footer records (tessera.FormatError `chunk {i}: stored bytes do not match their CRC-32C ...`);
    a file without recorded checksums reads as without the option.
    """
    return File(path, verify_checksums=verify_checksums)


class File:
    """An open `.tet` file. Immutable and safe to share between threads; `f[name]` gives a Dataset."""

    def __init__(self, path: PathLike, *, verify_checksums: bool = False):
        self._path = os.fspath(path)
        self._verify_checksums = bool(verify_checksums)
        self._file = _tessera.TetFile(self._path, self._verify_checksums)
        self._extension = _tet_extension.decode(self._file.extension_json())
        self._datasets = {info["name"]: Dataset(self, info) for info in self._file.datasets()}

    @property
    def path(self) -> str:
        """The path the file was opened with."""
        return self._path

    @property
    def size(self) -> int:
        """File length in bytes."""
        return self._file.size

    @property
    def datasets(self) -> dict:
        """Datasets by name, in catalog order."""
        return dict(self._datasets)

    def keys(self) -> list:
        """Dataset names in catalog order."""
        return list(self._datasets)

    def __getitem__(self, name: str) -> "Dataset":
        try:
            return self._datasets[name]
        except KeyError:
            raise KeyError(f"no dataset {name!r} in {self._path}; datasets: {list(self._datasets)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._datasets

    def __iter__(self):
        return iter(self._datasets)

    def __len__(self) -> int:
        return len(self._datasets)

    @property
    def history(self) -> list:
        """History footer rows: dicts with op, source, at, parents, params."""
        return self._file.history()

    @property
    def attrs(self) -> dict:
        """The source's global attributes with their types (from the footer's tessera extension;
        empty for a file without one)."""
        return dict(self._extension.attrs) if self._extension else {}

    @property
    def verify_checksums(self) -> bool:
        """Whether reads compare chunks with their recorded CRC-32C (`open(..., verify_checksums=True)`)."""
        return self._verify_checksums

    @property
    def chunk_checksums(self) -> Optional[tuple]:
        """CRC-32C of each chunk's stored bytes in chunk index order, or None when not recorded."""
        return self._extension.chunk_crc32c or None if self._extension else None

    @property
    def file_metadata(self) -> dict:
        """The footer's `file` metadata (tool, library_version, created_at), possibly empty."""
        return self._file.file_metadata()

    def query(self, document: Union[Mapping[str, Any], str], *, execute: bool = True, preview: int = 64,
              threads: int = 0, device: Optional[str] = None) -> dict:
        """Runs a query document (dict or JSON/TOML text) against this file; see `tessera.tet.query`."""
        return query(self._path, document, execute=execute, preview=preview, threads=threads, device=device)

    def to_xarray(self, **options):
        """All datasets as a lazy `xarray.Dataset`: `xr.open_dataset(path, engine="tessera", **options)`
        on this open file (docs/xarray.md). Nothing is read until values are used; `options` are
        open_dataset's (`chunks`, `decode_times`, `use_cftime`, `drop_variables`, ...). Needs xarray."""
        xr = _import_xarray()
        from ._xarray_backend import TesseraBackendEntrypoint
        return xr.open_dataset(self, engine=TesseraBackendEntrypoint, **options)

    def __dask_tokenize__(self):
        return ("tessera.tet.File", self._path, _version(self._path), self._verify_checksums)

    def close(self) -> None:
        """Drops this object's handle; the mapping stays alive while arrays viewing it exist."""
        self._datasets = {}

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<tessera.tet.File {self._path!r} datasets={list(self._datasets)}>"


class Dataset:
    """One dataset of a `.tet` file. Index it like a numpy array; `sel` selects by coordinate labels."""

    def __init__(self, file: File, info: dict):
        self._file = file
        self.name: str = info["name"]
        self.dtype: np.dtype = np.dtype(info["dtype"])
        self.shape: tuple = tuple(int(n) for n in info["shape"])
        self.chunks: tuple = tuple(int(n) for n in info["chunks"])
        self.codec: str = info["codec"]
        self.attrs: dict = dict(info["attrs"])
        self.dim_names: Optional[list] = info["dim_names"]
        # Footer labels are keyed by dimension name when dim_names exists, else by axis number.
        self.labels: dict = {k: list(v) for k, v in info["coords"].items()}
        self._coords: Optional[_tet_coords.Coordinates] = None

    @property
    def coords(self) -> "_tet_coords.Coordinates":
        """Coordinate name → numpy values, read on first use: each dimension's 1-D dataset of the
        same name (any length), else the footer's labels for that axis; and the datasets the CF
        `coordinates` attribute names (docs/python.md)."""
        if self._coords is None:
            self._coords = _tet_coords.Coordinates(self)
        return self._coords

    @property
    def typed_attrs(self) -> dict:
        """Every attribute of the source with its type (numbers as numpy scalars or arrays), from
        the footer's tessera extension; `attrs` (the footer's text) when the file has none."""
        encoding = self.encoding
        return dict(encoding.attrs) if encoding else dict(self.attrs)

    @property
    def encoding(self) -> Optional["_tet_extension.DatasetEncoding"]:
        """The source element type and the CF attributes convert already applied to the stored
        values, or None when the footer records none (docs/tet-footer-extension.md)."""
        ext = self._file._extension
        return ext.datasets.get(self.name) if ext else None

    @property
    def ndim(self) -> int:
        """Number of axes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.uint64))

    @property
    def nbytes(self) -> int:
        """Logical size in bytes (elements × item size), whatever the codec."""
        return self.size * self.dtype.itemsize

    @property
    def file(self) -> File:
        """The File this dataset belongs to."""
        return self._file

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key) -> np.ndarray:
        ranges, post = _index_to_ranges(key, self.shape)
        if any(stop <= start for start, stop, _ in ranges):  # an empty selection reads nothing
            out = np.empty([max(0, len(range(*r))) for r in ranges], dtype=self.dtype)
        else:
            out = self._file._file.read(self.name, ranges)
        return out[post] if post is not None else out

    def read(self, ranges: Optional[Sequence[tuple]] = None, *, threads: int = 0, copy: bool = False) -> np.ndarray:
        """Reads (start, stop, step) per axis (default: everything). `copy=True` never returns a view."""
        if ranges is None:
            ranges = [(0, n, 1) for n in self.shape]
        return self._file._file.read(self.name, [tuple(int(v) for v in r) for r in ranges], threads, not copy)

    def is_view(self, key=Ellipsis) -> bool:
        """Whether `self[key]` is a zero-copy view of the mapped file (one raw chunk holds the selection)."""
        ranges, _ = _index_to_ranges(key, self.shape)
        return self._file._file.is_view(self.name, ranges)

    def __array__(self, dtype=None):
        data = self[...]
        return data if dtype is None else data.astype(dtype)

    def axis_key(self, axis: int) -> str:
        """The labels and coords key of `axis`: its dimension name when the footer has dim_names, else its number."""
        return self.dim_names[axis] if self.dim_names else str(axis)

    def _axis_of(self, dim: Union[str, int]) -> int:
        if isinstance(dim, int):
            return dim
        if self.dim_names and dim in self.dim_names:
            return self.dim_names.index(dim)
        if dim.isdigit() and int(dim) < self.ndim:
            return int(dim)
        raise UsageError(f"dataset {self.name!r} has no dimension {dim!r}; dimensions: {self.dim_names or list(range(self.ndim))}")

    def _label_text_for(self, dim):
        """How a label given for `dim` is written as text: numbers as the footer writes them (the
        shortest positional digits, in the coordinate dataset's float width: -29.0 → "-29"),
        anything else with str()."""
        coordinate = self._file._datasets.get(dim)
        width = coordinate.dtype if coordinate is not None and coordinate.dtype.kind == "f" else np.dtype("f8")

        def text(value) -> str:
            if isinstance(value, (bool, np.bool_, str)) or not isinstance(value, (int, float, np.number)):
                return str(value)
            if isinstance(value, (int, np.integer)):
                return str(int(value))
            return np.format_float_positional(width.type(value), trim="-")
        return text

    def sel(self, **selection) -> np.ndarray:
        """Selects by coordinate labels, with the query engine's rules (tet.md §3.3).

        `dim=slice(a, b)` keeps labels from `a` up to but not including `b` (either may be None);
        `dim=label` keeps one index and drops the axis. Axes not named are taken whole. Label
        lookup errors are tessera.UsageError with the engine's text.
        """
        entries: list = [{} for _ in range(self.ndim)]
        drop = []
        for dim, want in selection.items():
            axis = self._axis_of(dim)
            text = self._label_text_for(dim)
            if isinstance(want, slice):
                if want.step not in (None, 1):
                    entries[axis]["step"] = int(want.step)
                if want.start is not None:
                    entries[axis]["start_label"] = text(want.start)
                if want.stop is not None:
                    entries[axis]["stop_label"] = text(want.stop)
            else:
                entries[axis]["start_label"] = text(want)
                drop.append(axis)
        ranges = self._file._file.resolve(self.name, json.dumps(entries))
        if drop:  # a single label: exactly that index
            ranges = [(r[0], r[0] + 1, 1) if axis in drop else r for axis, r in enumerate(ranges)]
        out = self._file._file.read(self.name, ranges)
        return out.reshape([n for axis, n in enumerate(out.shape) if axis not in drop]) if drop else out

    def to_xarray(self, **options):
        """The dataset as a lazy `xarray.DataArray`: its variable in `File.to_xarray(**options)`, with
        the coordinates its dimensions and CF `coordinates` attribute name (docs/xarray.md). Needs xarray."""
        wanted = {self.name, *(self.dim_names or ()), *self.attrs.get("coordinates", "").split()}
        unused = [name for name in self._file.keys() if name not in wanted]
        return self._file.to_xarray(drop_variables=unused, **options)[self.name]

    def query(self, operation: Optional[Mapping[str, Any]] = None, **kwargs) -> dict:
        """Runs a query on this dataset: `ds.query({"mean": ["time"]})` (see `tessera.tet.query`)."""
        document = {"dataset": self.name, **(operation or {})}
        return self._file.query(document, **kwargs)

    def __repr__(self) -> str:
        return (f"<tessera.tet.Dataset {self.name!r} {self.dtype} shape={self.shape} chunks={self.chunks} "
                f"codec={self.codec}>")


def _index_to_ranges(key, shape):
    """numpy basic indexing → (start, stop, step) per axis plus a post-selection for what the reader
    cannot express (dropped axes of integer indices, negative steps)."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is None for k in key) or any(isinstance(k, (list, np.ndarray)) for k in key):
        raise UsageError("only basic indexing (integers, slices, ...) is supported; read and index the array for more")
    n_ellipsis = sum(1 for k in key if k is Ellipsis)
    if n_ellipsis > 1:
        raise UsageError("an index can only have a single ellipsis ('...')")
    if n_ellipsis:
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - len(key) + 1) + key[i + 1:]
    if len(key) > len(shape):
        raise IndexError(f"too many indices: dataset has {len(shape)} dimensions, {len(key)} were indexed")
    key = key + (slice(None),) * (len(shape) - len(key))
    ranges, post, needs_post = [], [], False
    for axis, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step > 0:
                count = len(range(start, stop, step))
                ranges.append((start, start + max(count - 1, 0) * step + 1 if count else start, step))
                post.append(slice(None))
            else:  # read ascending, then reverse
                idx = range(start, stop, step)
                if len(idx):
                    ranges.append((idx[-1], idx[0] + 1, -step))
                else:
                    ranges.append((0, 0, 1))
                post.append(slice(None, None, -1))
                needs_post = True
        else:
            try:
                i = int(np.asarray(k).item()) if not isinstance(k, int) else k
            except (TypeError, ValueError):
                raise UsageError(f"index {k!r} on axis {axis} is not an integer or slice") from None
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
            ranges.append((i, i + 1, 1))
            post.append(0)
            needs_post = True
    return ranges, (tuple(post) if needs_post else None)


_ARRAY_PREVIEW_DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
                         "u16": np.uint16, "i16": np.int16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16}


def _arrays_in_response(response: dict, arrays: Optional[Mapping[str, np.ndarray]] = None) -> dict:
    """Turns the partial results of a response's `execution` block into numpy arrays.

    `arrays` holds the ones the extension already made (numeric lists, taken out of the response
    before it became text, and NaN or infinite scalars, which JSON can only write as null); they
    go back in at their keys, then get the same shapes."""
    execution = response.get("execution")
    if not isinstance(execution, dict):
        return response
    for key, array in (arrays or {}).items():
        execution[key] = array
    for tag, dtype in _ARRAY_PREVIEW_DTYPES.items():
        key = f"{tag}_preview"
        if key in execution:
            values = execution[key]
            if not isinstance(values, np.ndarray):
                values = [np.nan if v is None else v for v in values]
            # f16 previews are binary16 bit patterns (tet.md §5.2), not numbers.
            execution[key] = (np.asarray(values, dtype=np.uint16).view(np.float16) if tag == "f16"
                              else np.asarray(values, dtype=dtype))
    shape = execution.get("operation_reduced_shape")
    for key, value in list(execution.items()):
        if not isinstance(value, (list, np.ndarray)) or key in ("operation_reduced_shape",
                                                                "transform_div_by_zero_indices"):
            continue
        if key.endswith("_preview"):
            continue
        array = value if isinstance(value, np.ndarray) else np.asarray([np.nan if v is None else v for v in value])
        cells = int(np.prod(shape)) if shape else 0
        if key.startswith("operation_reduced_") and cells and array.size and array.size % cells == 0:
            # One value per kept position, or (histogram counts) `bins` values per position.
            array = array.reshape(list(shape) + ([] if array.size == cells else [-1]))
        elif key in ("operation_covariance", "operation_correlation"):
            order = execution.get(f"{key}_order")
            if order:
                array = array.reshape(order, order)
        execution[key] = array
    return response


def query(path: Optional[PathLike], document: Union[Mapping[str, Any], str], *, execute: bool = True,
          preview: int = 64, threads: int = 0, device: Optional[str] = None) -> dict:
    """Runs a query document (tet.md §3: a dict, or JSON text) and returns the §5.2 response as a dict.

    With `path` None the document is only validated. Previews and reduced results (`f32_preview`,
    `operation_reduced_mean`, `operation_covariance`, ...) are numpy arrays; reduced results are
    shaped by `operation_reduced_shape` (histogram counts get a trailing bins axis). Scalars stay Python numbers. Errors: tessera.UsageError
    (`validation: ...`) for the document, tessera.FormatError / IoError for the file.
    """
    text = document if isinstance(document, str) else json.dumps(document)
    if isinstance(document, str) and not text.lstrip().startswith("{"):
        raise UsageError("query text must be JSON (pass a dict, or use `tessera tet query` for TOML)")
    raw, arrays = _tessera.tet_query(text, None if path is None else os.fspath(path),
                                     bool(execute and path is not None), int(preview), int(threads), device)
    return _arrays_in_response(json.loads(raw), arrays)


def synth(path: PathLike, datasets: Iterable[str], *, seed: int = 0, threads: int = 0, source: str = "",
          at: str = "") -> dict:
    """Writes a seeded synthetic file (tet.md §6.9), e.g. `synth("x.tet", ["t:f32:512x512:64x64:zstd:3"])`.

    Files are written a chunk row at a time, so they may be larger than RAM. Returns a summary
    dict (datasets, chunks, bytes).
    """
    return _tessera.tet_synth(os.fspath(path), list(datasets), int(seed), int(threads), source, at)


class Writer:
    """Streams a new `.tet` file: declare datasets, give their data, commit.

        with tessera.tet.Writer("out.tet") as w:
            i = w.add_dataset("t", np.float32, (1000, 1000), (100, 1000), codec="zstd")
            for row in range(w.chunk_rows(i)):
                w.write_chunk_row(i, row, block)   # rows of axis 0, chunk row by chunk row
    Nothing appears at `path` until commit (temp file + rename); leaving the `with` block on an
    exception aborts and leaves any existing file untouched.
    """

    def __init__(self, path: PathLike, *, memory_budget_percent_bps: int = 0, memory_budget_bytes: int = 0,
                 threads: int = 0, metadata: Optional[Mapping[str, Any]] = None,
                 history: Optional[Iterable[Mapping[str, Any]]] = None):
        self._w = _tessera.TetWriter(os.fspath(path), int(memory_budget_percent_bps), int(memory_budget_bytes),
                                     int(threads))
        self._specs: dict = {}
        if metadata:
            self.set_metadata(metadata)
        for row in history or ():
            self.add_history(**row)

    def add_dataset(self, name: str, dtype, shape: Sequence[int], chunks: Sequence[int], *, codec: str = "raw",
                    level: int = 3) -> int:
        """Declares a dataset (before any data); returns its id."""
        dt = np.dtype(dtype)
        i = self._w.add_dataset(name, dt, [int(n) for n in shape], [int(n) for n in chunks], codec, int(level))
        self._specs[i] = (dt, tuple(int(n) for n in shape), tuple(int(n) for n in chunks))
        return i

    def _checked(self, i: int, data, shape: tuple) -> np.ndarray:
        dt = self._specs[i][0]
        array = np.ascontiguousarray(data, dtype=dt.newbyteorder("<") if dt.itemsize > 1 else dt)
        if array.shape != shape:
            raise UsageError(f"dataset {i}: expected data of shape {shape}, got {array.shape}")
        return array

    def write_dataset(self, i: int, data) -> None:
        """The whole array of dataset `i` (converted to its dtype, C order)."""
        self._w.write_dataset(i, self._checked(i, data, self._specs[i][1]))

    def chunk_rows(self, i: int) -> int:
        """Number of chunk rows (chunks along axis 0) of dataset `i`."""
        return self._w.chunk_rows(i)

    def write_chunk_row(self, i: int, row: int, data) -> None:
        """Chunk row `row` of dataset `i`: axis-0 rows [row·c0, min((row+1)·c0, n0)) by the full other axes."""
        _, shape, chunks = self._specs[i]
        rows = min(chunks[0], shape[0] - row * chunks[0])
        self._w.write_chunk_row(i, int(row), self._checked(i, data, (rows,) + shape[1:]))

    def set_metadata(self, metadata: Mapping[str, Any]) -> None:
        """Footer metadata: {"file": {...}, "datasets": {name: {"attrs", "dim_names", "coords"}}} (tet.md §1.8).

        coords may be given as {axis: [labels]} or {axis: {"labels": [...]}}.
        """
        md = json.loads(json.dumps(metadata))
        for entry in md.get("datasets", {}).values():
            for axis, labels in list(entry.get("coords", {}).items()):
                if isinstance(labels, list):
                    entry["coords"][axis] = {"labels": [str(v) for v in labels]}
            if "attrs" in entry:
                entry["attrs"] = {str(k): str(v) for k, v in entry["attrs"].items()}
        self._w.set_metadata(json.dumps(md))

    def add_history(self, op: str, source: str, at: Optional[str] = None, parents: Sequence[str] = (),
                    params: Optional[Mapping[str, str]] = None) -> None:
        """Appends a history footer row (`at`: Unix seconds as text, default now)."""
        at = str(int(time.time())) if at is None else str(at)
        self._w.add_history(op, source, at, list(parents), {str(k): str(v) for k, v in (params or {}).items()})

    def commit(self) -> int:
        """Writes the footer and index and renames the file into place (an `s3://` or `gs://` path:
        uploads it, docs/remote.md); returns its size."""
        return self._w.commit()

    def abort(self) -> None:
        """Discards everything written; the destination is untouched."""
        self._w.abort()

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def write(path: PathLike, arrays: Mapping[str, Any], *, chunks: Union[None, Sequence[int], Mapping[str, Sequence[int]]] = None,
          codec: str = "raw", level: int = 3, metadata: Optional[Mapping[str, Any]] = None,
          history: Optional[Iterable[Mapping[str, Any]]] = None, threads: int = 0) -> int:
    """Writes numpy arrays (name → array) to a new `.tet` file atomically; returns the file size.

    `chunks` is one chunk shape for all arrays, a dict per name, or None (whole-array chunks
    capped at 1 MiB per chunk along axis 0). A `write` history row is added unless `history` is given.
    """
    arrays = {name: np.asarray(a) for name, a in arrays.items()}
    if history is None:
        history = [{"op": "write", "source": os.path.basename(os.fspath(path)), "at": str(int(time.time()))}]
    w = Writer(path, threads=threads, metadata=metadata, history=history)
    try:
        ids = []
        for name, a in arrays.items():
            if isinstance(chunks, Mapping):
                c = chunks[name]
            elif chunks is not None:
                c = chunks
            else:
                row_bytes = max(1, a.nbytes // max(1, a.shape[0]))
                c = (max(1, min(a.shape[0], (1 << 20) // row_bytes)),) + a.shape[1:]
            ids.append(w.add_dataset(name, a.dtype, a.shape, c, codec=codec, level=level))
        for i, a in zip(ids, arrays.values()):
            w.write_dataset(i, a)
    except BaseException:
        w.abort()
        raise
    return w.commit()


# ---- Dask ----------------------------------------------------------------------------------

_OPEN_FILES: dict = {}


def _version(path: str):
    """What identifies the version of `path` for caches: a local file's mtime and size; None for a
    remote object, whose open File pins its ETag (a replaced object is then an IoError)."""
    if _uri.is_remote(path):
        return None
    stat = os.stat(_uri.local_path(path))
    return (stat.st_mtime_ns, stat.st_size)


def _cached_file(path: str, verify_checksums: bool = False) -> File:
    """One open File per path (and local version) and process: Dask tasks reopen by path and share
    the mapping, or, for a remote object, the one pinned source."""
    key = (path, _version(path), verify_checksums)
    f = _OPEN_FILES.get(key)
    if f is None:
        f = _OPEN_FILES[key] = File(path, verify_checksums=verify_checksums)
    return f


def _read_block(path: str, name: str, ranges: list, verify_checksums: bool = False) -> np.ndarray:
    return _cached_file(path, verify_checksums)._file.read(name, ranges, 1, False)


def to_dask(path: PathLike, dataset: str, *, chunks: Optional[Sequence[int]] = None,
            verify_checksums: bool = False):
    """The dataset as a `dask.array.Array` with one task per chunk (or per block of `chunks`).

    Tasks carry only the path, the dataset name and the box, so they pickle to any worker; each
    worker process opens (maps) the file once. Values are read with one decode thread per task:
    Dask's workers provide the parallelism. `verify_checksums` is `open`'s.
    """
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph
    from dask.base import tokenize

    path = os.fspath(path)
    ds = File(path, verify_checksums=verify_checksums)[dataset]
    block = tuple(chunks) if chunks is not None else ds.chunks
    if len(block) != ds.ndim:
        raise UsageError(f"chunks has {len(block)} axes, dataset {dataset!r} has {ds.ndim}")
    axis_chunks = tuple(tuple(min(b, n - s) for s in range(0, n, b)) for b, n in zip(block, ds.shape))
    name = "tet-" + tokenize(path, _version(path), dataset, block, verify_checksums)
    graph = {}
    for index in np.ndindex(*[len(c) for c in axis_chunks]):
        ranges = [(i * b, min((i + 1) * b, n), 1) for i, b, n in zip(index, block, ds.shape)]
        graph[(name,) + index] = (_read_block, path, dataset, ranges, bool(verify_checksums))
    hlg = HighLevelGraph.from_collections(name, graph, dependencies=())
    return da.Array(hlg, name, axis_chunks, dtype=ds.dtype)


def _import_xarray():
    try:
        import xarray
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("to_xarray needs xarray (Debian: python3-xarray)") from e
    return xarray
