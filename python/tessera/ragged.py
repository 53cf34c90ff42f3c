"""Per-cell t-digests and other ragged payloads in `zagg-ragged/1` stores (morton-hive leaves).

The readers mirror zagg's (`zagg.readers.tdigest_tensor`) and are store-scoped: they take one
leaf (or a flat store, or a leaf column) and a field path such as ``"6/h_tdigest"``; finding the
leaves of a morton-hive store is `leaves(root)`'s job.

    >>> leaf = tessera.ragged.open("store/1/1/2/1/3/11213.zarr")
    >>> leaf.read_cell("6/h_tdigest", 0)            # (rows, 2) float32: (mean, weight) rows
    >>> for tensor, mask, (offset, gain), morton in leaf.read_tensors("6/h_tdigest"):
    ...     ...                                      # (side, side, n_bins), (side, side) uint8
    >>> for morton, (row, col), values in leaf.read_raw_values("6/h_tdigest"):
    ...     cell = leaf.cell_index("6/h_tdigest", morton, row, col)
    ...     assert (leaf.read_cell("6/h_tdigest", cell)[:, 0] == values).all()

zagg-style free functions (`read_cell(store, field, cell)`, `read_tensors(store, field, ...)`,
...) are provided too. Builds from numpy columns (`build`) run the packaged `tessera ragged build`
CLI; `leaves_to_dask` spreads a per-leaf function over a Dask bag.

Every read releases the GIL. Errors are `tessera.Error` subclasses carrying the library's message;
an out-of-range `read_cell` index raises `CellIndexError` (both `tessera.UsageError` and
`IndexError`). Reader warnings are `RaggedWarning`s with a `code` attribute.
"""
from __future__ import annotations

import operator as _operator
import os as _os
from typing import Any, Iterator, Optional, Union

import numpy as np

from . import _tessera
from . import _uri
from ._tessera import RaggedWarning, UsageError

__all__ = [
    "open", "Leaf", "Field", "TensorBlock", "CellRecord", "CellIndexError", "RaggedWarning",
    "read_cell", "read_tensors", "read_raw_values", "read_locations", "read_times", "cell_index",
    "hashes", "has_exact_occupancy", "commit_stamp", "manifest", "root_coverage", "leaf_path",
    "leaves", "summarize", "leaves_to_dask", "build", "verify", "to_decimal", "parse_word",
    "cell_of", "cell_centres",
]

PathLike = Union[str, "_os.PathLike[str]"]
Word = Union[int, str, np.integer]

_INT64_MAX = (1 << 63) - 1


class CellIndexError(UsageError, IndexError):
    """A `read_cell` index outside ``[0, size)`` (negative indices never wrap).

    Both a `tessera.UsageError` and an `IndexError`, which is what zagg's reader raises.
    """


RaggedWarning.__module__ = __name__


def cell_of(lat: Any, lon: Any, order: int, *, latitude: str = "authalic") -> np.ndarray:
    """HEALPix NESTED ids (``uint64``, the shape of ``lat``) at ``order`` of geodetic points in
    degrees, exactly as `ragged build` places them (spec §6.4).

    ``latitude="authalic"`` (the build's default) first maps the geodetic latitude to the WGS84
    authalic latitude, so the ids match ``healpy.ang2pix(2**order, lon, authalic_lat, nest=True,
    lonlat=True)``, not ``ang2pix`` of the geodetic latitude; ``"geodetic-spherical"`` uses the
    latitude as it is (and matches healpy on the raw latitude). A non-finite point or a latitude
    outside ±90 raises `tessera.UsageError`."""
    lat = np.asarray(lat, dtype=np.float64)
    lon = np.asarray(lon, dtype=np.float64)
    if lat.shape != lon.shape:
        raise UsageError(f"lat and lon differ in shape: {lat.shape} and {lon.shape}")
    return _tessera.ragged_cell_of(lat, lon, int(order), latitude)


def cell_centres(cells: Any, order: int, *, latitude: str = "authalic") -> tuple[np.ndarray, np.ndarray]:
    """The geodetic ``(lat, lon)`` degrees (longitude in [0, 360)) of the centres of NESTED cells
    at ``order``: healpy's ``pix2ang(..., nest=True, lonlat=True)``, with the latitude mapped back
    from authalic to geodetic under ``latitude="authalic"``, so ``cell_of(*cell_centres(c, k), k)``
    is ``c``. An id outside ``12·4**order`` raises `tessera.UsageError`."""
    cells = np.asarray(cells)
    if cells.dtype.kind not in "iu" or (cells.dtype.kind == "i" and cells.size and cells.min() < 0):
        raise UsageError(f"cells must be non-negative integers, got {cells.dtype}")
    return _tessera.ragged_cell_centres(cells.astype(np.uint64), int(order), latitude)


def to_decimal(word: Word) -> str:
    """The decimal id of a packed morton word (``1233986297899515910`` → ``"1121311"``)."""
    return _tessera.ragged_to_decimal(int(word))


def parse_word(word: Word) -> int:
    """A packed morton word from a word (int) or a decimal id / ``0x``-hex / ``word:`` string."""
    if isinstance(word, str):
        return _tessera.ragged_parse_word(word)
    return _operator.index(word)


def _subtree(subtree: Optional[Word]) -> Optional[int]:
    return None if subtree is None else parse_word(subtree)


class TensorBlock(tuple):
    """One block of `read_tensors`: unpacks as ``(tensor, mask, (offset, gain), morton)``.

    Attributes: ``tensor`` (side, side, n_bins) of the tensor dtype; ``mask`` (side, side) uint8
    (0 unobserved / no digest, 1 observed empty, 2 data); ``offset``, ``gain`` (bin i covers
    ``[offset + i*gain, offset + (i+1)*gain)``); ``morton`` (the block's ancestor word, int);
    ``start`` (first cell index); ``order``; ``side``; ``n_bins`` (bins used); ``populated``
    (cells with mask 2); ``observed_empty`` (cells with mask 1); ``weight_in_window`` (Σ of the
    bin counts before the cast).
    """

    def __new__(cls, tensor, mask, offset, gain, morton, start=0, order=0, side=0, n_bins=0, populated=0,
                observed_empty=0, weight_in_window=0.0):
        self = super().__new__(cls, (tensor, mask, (float(offset), float(gain)), int(morton)))
        self.start = int(start)
        self.order = int(order)
        self.side = int(side)
        self.n_bins = int(n_bins)
        self.populated = int(populated)
        self.observed_empty = int(observed_empty)
        self.weight_in_window = float(weight_in_window)
        return self

    tensor = property(lambda self: self[0], doc="(side, side, n_bins) tensor")
    mask = property(lambda self: self[1], doc="(side, side) uint8 mask")
    offset = property(lambda self: self[2][0], doc="z_lo: the lower edge of bin 0")
    gain = property(lambda self: self[2][1], doc="the bin width")
    morton = property(lambda self: self[3], doc="the block's ancestor word")

    def __reduce__(self):
        return (TensorBlock, (self[0], self[1], self[2][0], self[2][1], self[3], self.start, self.order, self.side,
                              self.n_bins, self.populated, self.observed_empty, self.weight_in_window))

    def __repr__(self):
        return (f"TensorBlock(morton={self.morton}, start={self.start}, order={self.order}, side={self.side}, "
                f"n_bins={self.n_bins}, offset={self.offset}, gain={self.gain}, populated={self.populated})")


class CellRecord(tuple):
    """One populated cell of a per-cell sweep: unpacks as ``(morton, (row, col), values)``.

    ``morton`` is the cell's read-chunk id (int), ``(row, col)`` its chunk-local position
    (row = y, col = x), ``values`` a numpy array (float64 means, or uint64 words). ``index`` is
    the cell's global cells-axis index: the key `read_cell` takes (= `cell_index(morton, row, col)`).
    """

    def __new__(cls, morton, row, col, index, values):
        self = super().__new__(cls, (int(morton), (int(row), int(col)), values))
        self.index = int(index)
        return self

    morton = property(lambda self: self[0], doc="the read-chunk id")
    chunk_id = morton
    row = property(lambda self: self[1][0], doc="chunk-local row (y)")
    col = property(lambda self: self[1][1], doc="chunk-local column (x)")
    values = property(lambda self: self[2], doc="means (float64) or words (uint64)")

    def __reduce__(self):
        return (CellRecord, (self[0], self[1][0], self[1][1], self.index, self[2]))

    def __repr__(self):
        return f"CellRecord(morton={self[0]}, row={self[1][0]}, col={self[1][1]}, index={self.index}, n={len(self[2])})"


def _as_path(path: PathLike) -> str:
    return _os.fspath(path)


def _is_url(path: str) -> bool:
    """An ``http(s)://`` prefix or an ``s3://`` / ``gs://`` bucket prefix (read with ranged GETs)."""
    return _uri.is_remote(path)


def _is_leaf_dir(path: str) -> bool:
    return _is_url(path) or _os.path.isdir(path)


class Field:
    """One ragged field (a `zagg-ragged/1` payload array with its bound siblings) of one leaf.

    Made by `Leaf.field(name)` or `open(leaf, field)`. Metadata is read once, at open.
    """

    def __init__(self, leaf: PathLike, field: str):
        self._leaf = _as_path(leaf)
        if not _is_leaf_dir(self._leaf):
            raise _tessera.IoError(f"{self._leaf}: not a directory")
        self._f = _tessera.RaggedField(self._leaf, field)

    def __repr__(self):
        return f"tessera.ragged.Field({self._leaf!r}, {self.path!r})"

    def __reduce__(self):
        return (Field, (self._leaf, self.path))

    # ---- description ----
    @property
    def leaf(self) -> str:
        """The leaf (store) directory."""
        return self._leaf

    @property
    def path(self) -> str:
        """The array path inside the leaf (``"6/h_tdigest"``)."""
        return self._f.path

    @property
    def group(self) -> str:
        """The group holding the field (``"6"``)."""
        return self._f.group

    @property
    def size(self) -> int:
        """Length of the cells axis (valid `read_cell` indices are ``0 .. size-1``)."""
        return self._f.size

    @property
    def chunk_cells(self) -> int:
        """Cells per inner (read) chunk."""
        return self._f.chunk_cells

    @property
    def sharded(self) -> bool:
        """Whether the array is stored as sharding_indexed objects (else one object per chunk)."""
        return self._f.sharded

    @property
    def element(self) -> dict:
        """The element declaration: ``dtype`` (numpy), ``dtype_name``, ``inner_shape``, ``row_bytes``,
        ``is_tdigest``, ``is_words``."""
        return self._f.element()

    @property
    def dtype(self) -> np.dtype:
        """numpy dtype of the payload rows."""
        return self._f.element()["dtype"]

    @property
    def weights(self) -> str:
        """``"counts"`` or ``"flux"``."""
        return self._f.weights

    @property
    def gain(self) -> Optional[dict]:
        """The ``gain`` object of a flux field, else None."""
        return self._f.gain

    @property
    def locations(self) -> Optional[str]:
        """Array path of the bound ``_locations`` sibling, or None."""
        return self._f.locations

    @property
    def times(self) -> Optional[str]:
        """Array path of the bound ``_times`` sibling, or None."""
        return self._f.times

    @property
    def declarations(self) -> dict:
        """``{"located": {...}, "temporal": {...}}`` declarations carried by this array (empty dicts when absent)."""
        return {"located": self._f.located, "temporal": self._f.temporal}

    @property
    def has_morton(self) -> bool:
        """Whether ``{group}/morton`` exists (the sweeps and `cell_index` need it)."""
        return self._f.has_morton

    def axis(self) -> dict:
        """The cells axis as the ``morton`` coordinate describes it: ``length``, ``chunk_cells``,
        ``cell_order``, ``chunk_order``, ``flat``, ``root`` (word), ``root_decimal``, ``depth``,
        ``root_start`` (NESTED id of the first cell: index = nested id − root_start)."""
        return self._f.axis()

    # ---- readers ----
    def read_cell(self, index: int) -> np.ndarray:
        """One cell as a ``(rows, *inner_shape)`` array of the element dtype (zero-copy).

        ``index`` is a global cells-axis index; an empty or absent cell gives ``(0, *inner_shape)``.
        Out of range (negative included: no wrap) → `CellIndexError`. 2 ranged GETs on a sharded leaf.
        """
        index = _operator.index(index)
        size = self._f.size
        if not -(_INT64_MAX + 1) <= index <= _INT64_MAX:
            raise CellIndexError(f"{self.path}: cell index {index} out of range: valid indices are 0..{size - 1}")
        try:
            return self._f.read_cell(index)
        except UsageError as e:
            if 0 <= index < size:
                raise
            raise _cell_index_error(e) from None

    def cells(self) -> Iterator[tuple[int, np.ndarray]]:
        """Every populated cell, ascending: ``(index, rows)``. Each stored object is read once."""
        return iter(self._f.read_populated())

    def summary(self) -> dict:
        """``populated_cells``, ``rows`` and (t-digests) ``weight_sum`` (Σ over cells of numpy's sum of
        the weights) of the whole field, as `tessera ragged info --deep` reports."""
        return self._f.summary()

    def read_tensors(self, n_bins: int = 128, resolution: float = 0.5, bottom: float = 0.05, top: float = 0.95,
                     fit: str = "raise", dtype: str = "uint32", block_order: Optional[int] = None,
                     subtree: Optional[Word] = None, max_block_bytes: int = 2 << 30,
                     threads: int = 0) -> Iterator[TensorBlock]:
        """Per-block histograms of the digests (spec §5.3), blocks in ascending cells-axis order.

        Yields `TensorBlock`s, which unpack as ``(tensor, mask, (offset, gain), morton)`` exactly like
        zagg's reader. ``fit``: ``raise`` | ``degrade_resolution`` | ``collapse_bins``; ``dtype``:
        ``uint16`` | ``uint32`` | ``float32`` | ``auto`` (float32 for flux fields, else uint32);
        ``block_order``: assemble read chunks into coarser blocks; ``subtree``: a word or decimal id.
        A subtree disjoint from the axis yields nothing and warns (`RaggedWarning`,
        ``subtree_disjoint``).

        The reader runs on a background thread without the GIL and hands blocks over through a
        small queue, so memory stays bounded by a few blocks. The first block is read before this
        returns (bad options and a window that does not fit raise here); closing the iterator
        early (``break``, garbage collection) stops the reader.
        """
        if dtype == "auto":
            dtype = "float32" if self.weights == "flux" else "uint32"
        stream = self._f.tensor_stream(int(n_bins), float(resolution), float(bottom), float(top), fit, dtype,
                                       None if block_order is None else int(block_order), _subtree(subtree),
                                       int(max_block_bytes), int(threads))
        try:
            first = stream.next()
        except BaseException:
            stream.close()
            raise
        return _blocks(stream, first)

    def read_raw_values(self, subtree: Optional[Word] = None, threads: int = 0) -> Iterator[CellRecord]:
        """Single-observation values per populated cell: `CellRecord`s ``(morton, (row, col), values)``
        with float64 ``values``. Refused (`tessera.UsageError`) for merged centroids and flux fields."""
        return (CellRecord(*c) for c in self._f.read_raw_values(_subtree(subtree), int(threads)))

    def read_locations(self, subtree: Optional[Word] = None, threads: int = 0) -> Iterator[CellRecord]:
        """Location words (uint64) per populated cell of the bound ``ragged.locations`` sibling."""
        return (CellRecord(*c) for c in self._f.read_locations(_subtree(subtree), int(threads)))

    def read_times(self, subtree: Optional[Word] = None, threads: int = 0) -> Iterator[CellRecord]:
        """toc time words (uint64) per populated cell of the bound ``times`` sibling."""
        return (CellRecord(*c) for c in self._f.read_times(_subtree(subtree), int(threads)))

    def cell_index(self, morton: Word, row: int, col: int) -> int:
        """Global cells-axis index of chunk-local ``(row, col)`` of read chunk ``morton`` (spec §5.5)."""
        return self._f.cell_index(parse_word(morton), _operator.index(row), _operator.index(col))


def _blocks(stream, first) -> Iterator[TensorBlock]:
    try:
        block = first
        while block is not None:
            yield TensorBlock(*block)
            block = stream.next()
    finally:
        stream.close()


def _cell_index_error(e: BaseException) -> CellIndexError:
    out = CellIndexError(*e.args)
    for attr in ("message", "path", "structure"):
        if hasattr(e, attr):
            setattr(out, attr, getattr(e, attr))
    return out


class Leaf:
    """One leaf of a morton-hive store (or a flat store, or a leaf column): a local directory, an
    ``http(s)://`` prefix or an ``s3://`` / ``gs://`` bucket prefix. Over plain HTTP nothing can be
    listed, so `fields()` and bare field names raise `tessera.UnsupportedError` there.

    ``field`` arguments are array paths (``"6/h_tdigest"``) or bare names (``"h_tdigest"``, when
    exactly one numeric group of the leaf holds that array).
    """

    def __init__(self, path: PathLike):
        self._path = _as_path(path)
        if not _is_leaf_dir(self._path):
            raise _tessera.IoError(f"{self._path}: not a directory")
        self._fields: dict[str, Field] = {}

    def __repr__(self):
        return f"tessera.ragged.Leaf({self._path!r})"

    def __reduce__(self):
        return (Leaf, (self._path,))

    def __fspath__(self):
        return self._path

    @property
    def path(self) -> str:
        """The leaf directory."""
        return self._path

    @property
    def shard(self) -> Optional[str]:
        """The shard decimal id the leaf's basename names (``"11213"``), or None."""
        word = _tessera.ragged_shard_of_basename(_os.path.basename(_os.path.normpath(self._path)))
        return None if word is None else _tessera.ragged_to_decimal(word)

    def resolve(self, field: str) -> str:
        """The array path of ``field`` (a bare name is looked up in the numeric groups)."""
        if "/" in field:
            return field
        return _tessera.ragged_resolve_field(self._path, field)

    def read_array(self, name: str) -> np.ndarray:
        """A dense array of the leaf, whole, as numpy: ``count``, the `build --stats` arrays
        (``h_mean``, ``h_min``, … fill NaN), per-cell times, ``morton``. ``name`` is an array path
        (``"12/h_mean"``) or a bare name resolved like a field. One element per cell of the leaf
        (index ``i`` is cell ``axis()["root_start"] + i`` at the cell order). A ragged field
        (variable-length cells) raises `tessera.UsageError`: read those with `read_cell`."""
        path = name if "/" in name else _tessera.ragged_resolve_field(self._path, name)
        return _tessera.ragged_read_array(self._path, path)

    def field(self, name: str) -> Field:
        """The `Field` ``name`` (opened once and cached)."""
        path = self.resolve(name)
        f = self._fields.get(path)
        if f is None:
            f = self._fields[path] = Field(self._path, path)
        return f

    def fields(self) -> list[str]:
        """Array paths of the ragged payload fields of the leaf (companion siblings excluded)."""
        return _tessera.ragged_payload_fields(self._path)

    def stamp(self) -> Optional[dict]:
        """The commit stamp (``morton_hive_commit``) as a dict, or None when the leaf has none."""
        return _tessera.ragged_commit_stamp(self._path)

    @property
    def committed(self) -> bool:
        """Whether the leaf carries a stamp with ``complete: true``."""
        s = self.stamp()
        return bool(s and s["complete"])

    def has_exact_occupancy(self) -> bool:
        """Whether mask state 1 (observed, no digest) can occur in this leaf's tensors (spec §5.7)."""
        return _tessera.ragged_has_exact_occupancy(self._path)

    def hashes(self) -> dict:
        """Spec §7 content hashes: ``{"arrays": {path: sha256 hex}, "combined": hex}``."""
        return _tessera.ragged_hashes(self._path)

    # ---- zagg-shaped readers taking the field first ----
    def read_cell(self, field: str, index: int) -> np.ndarray:
        """`Field.read_cell` of ``field``."""
        return self.field(field).read_cell(index)

    def read_tensors(self, field: str, **params: Any) -> Iterator[TensorBlock]:
        """`Field.read_tensors` of ``field``: yields ``(tensor, mask, (offset, gain), morton)`` blocks."""
        return self.field(field).read_tensors(**params)

    def read_raw_values(self, field: str, **params: Any) -> Iterator[CellRecord]:
        """`Field.read_raw_values` of ``field``: yields ``(morton, (row, col), values)``."""
        return self.field(field).read_raw_values(**params)

    def read_locations(self, field: str, **params: Any) -> Iterator[CellRecord]:
        """`Field.read_locations` of ``field``: yields ``(morton, (row, col), words)``."""
        return self.field(field).read_locations(**params)

    def read_times(self, field: str, **params: Any) -> Iterator[CellRecord]:
        """`Field.read_times` of ``field``: yields ``(morton, (row, col), words)``."""
        return self.field(field).read_times(**params)

    def cell_index(self, field: str, morton: Word, row: int, col: int) -> int:
        """`Field.cell_index` of ``field``."""
        return self.field(field).cell_index(morton, row, col)

    def cells(self, field: str) -> Iterator[tuple[int, np.ndarray]]:
        """`Field.cells` of ``field``: every populated ``(index, rows)``."""
        return self.field(field).cells()


def open(leaf: PathLike, field: Optional[str] = None, *, shard: Optional[Word] = None):  # noqa: A001
    """Opens a leaf: ``open(leaf)`` → `Leaf`; ``open(leaf, field)`` → that leaf's `Field`.

    ``leaf`` is a leaf directory (``store/1/1/2/1/3/11213.zarr``), a flat store or a leaf column; or
    a hive root together with ``shard=`` (decimal id or word), the leaf path then coming from the
    manifest's ``path_grouping``.
    """
    path = _as_path(leaf)
    if shard is not None:
        path = (path.rstrip("/") + "/" + leaf_path(path, shard)) if _is_url(path) else _os.path.join(path, leaf_path(path, shard))
    lf = Leaf(path)
    return lf if field is None else lf.field(field)


def _leaf_of(store: Union[PathLike, Leaf]) -> Leaf:
    return store if isinstance(store, Leaf) else Leaf(store)


# ---- zagg's free-function readers ----
def read_cell(store: Union[PathLike, Leaf], field: str, cell: int) -> np.ndarray:
    """zagg's ``read_cell(store, field, cell)``: one cell as ``(rows, *inner_shape)``."""
    return _leaf_of(store).read_cell(field, cell)


def read_tensors(store: Union[PathLike, Leaf], field: str, **params: Any) -> Iterator[TensorBlock]:
    """zagg's ``read_tensors(store, field, ...)``: ``(tensor, mask, (offset, gain), morton)`` per block."""
    return _leaf_of(store).read_tensors(field, **params)


def read_raw_values(store: Union[PathLike, Leaf], field: str, **params: Any) -> Iterator[CellRecord]:
    """zagg's ``read_raw_values(store, field, subtree=None)``: ``(morton, (row, col), values)``."""
    return _leaf_of(store).read_raw_values(field, **params)


def read_locations(store: Union[PathLike, Leaf], field: str, **params: Any) -> Iterator[CellRecord]:
    """zagg's ``read_locations(store, field, subtree=None)``: ``(morton, (row, col), words)``."""
    return _leaf_of(store).read_locations(field, **params)


def read_times(store: Union[PathLike, Leaf], field: str, **params: Any) -> Iterator[CellRecord]:
    """``read_times(store, field, subtree=None)`` (tessera addition): ``(morton, (row, col), words)``."""
    return _leaf_of(store).read_times(field, **params)


def cell_index(store: Union[PathLike, Leaf], field: str, morton: Word, row: int, col: int) -> int:
    """zagg's ``cell_index(store, field, morton, row, col)``: the global index `read_cell` takes."""
    return _leaf_of(store).cell_index(field, morton, row, col)


# Stores, hives, Dask and builds live in _ragged_hive.py (kept apart for size); they are part of
# this module's API.
from ._ragged_hive import (  # noqa: E402  (needs the readers above)
    build,
    commit_stamp,
    has_exact_occupancy,
    hashes,
    leaf_path,
    leaves,
    leaves_to_dask,
    manifest,
    root_coverage,
    summarize,
    verify,
)
