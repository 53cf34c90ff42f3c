"""Stores, hives, builds and Dask for `tessera.ragged` (re-exported there; see its docstring).

Content hashes, commit stamps, manifests and the root coverage MOC; finding the committed leaves
of a morton-hive store; per-leaf summaries and `leaves_to_dask`; `build` from numpy columns and
`verify`, both through the packaged CLI.
"""
from __future__ import annotations

import json as _json
import os as _os
import pathlib as _pathlib
import subprocess as _subprocess
import tempfile as _tempfile
from typing import Any, Callable, Optional, Union

import numpy as np

from . import _cli, _tessera, _uri
from ._tessera import UsageError
from .ragged import Leaf, PathLike, Word, _as_path, _leaf_of, to_decimal

# ---- stores, hashes, hives ----
def hashes(path: PathLike) -> dict:
    """Spec §7 content hashes of every array below ``path``: ``{"arrays": {...}, "combined": hex}``."""
    return _tessera.ragged_hashes(_as_path(path))


def has_exact_occupancy(path: PathLike) -> bool:
    """Whether the leaf's tensor masks are 3-state (a stamp with a ``full`` or ``bitmap`` envelope)."""
    return _tessera.ragged_has_exact_occupancy(_as_path(path))


def commit_stamp(path: PathLike) -> Optional[dict]:
    """The leaf's commit stamp as a dict (``spec``, ``complete``, ``cells_with_data``, ``coverage``, ...), or None."""
    return _tessera.ragged_commit_stamp(_as_path(path))


def manifest(root: PathLike) -> Optional[dict]:
    """``morton_hive.json`` of a hive root: ``spec``, ``cell_order``, ``shard_order``, ``path_grouping``,
    ``document`` (the whole manifest); None when the directory has none."""
    return _tessera.ragged_manifest(_as_path(root))


def root_coverage(root: PathLike) -> Optional[dict]:
    """The root ``coverage.moc`` of a hive: ``order``, ``shards`` (words, ascending), ``shard_times``, ...;
    None when absent or unusable (readers then walk)."""
    return _tessera.ragged_root_moc(_as_path(root))


def leaf_path(root: PathLike, shard: Word, window: str = "") -> str:
    """The leaf key of ``shard`` below hive ``root`` (``1/1/2/1/3/11213.zarr``), from the manifest's grouping."""
    m = manifest(root)
    grouping = m["path_grouping"] if m else 1
    decimal = shard if isinstance(shard, str) else to_decimal(shard)
    return _tessera.ragged_leaf_path(decimal, grouping, window)


def _join(root: str, rel: str) -> str:
    """`rel` below `root`: '/'-joined for a URL or bucket prefix, os.path-joined for a directory."""
    return root.rstrip("/") + "/" + rel if _uri.is_remote(root) else _os.path.join(root, rel)


def _walk(root: str) -> list[str]:
    """Spec §4.7 step 4, the library's walk (the CLI's `ragged info --list-leaves` uses the same)."""
    return [_join(root, path) for path, _shard, _committed in _tessera.ragged_walk_leaves(root)]


def leaves(root: PathLike, *, method: str = "auto") -> list[str]:
    """Committed leaf directories of a morton-hive store, in ascending shard order.

    ``method``: ``"moc"`` uses the root coverage MOC and the manifest's path grouping (spec §4.7
    steps 1–3); ``"walk"`` walks the digit tree; ``"auto"`` uses the MOC when the store has a
    usable one and a ``morton-hive/1`` manifest, else walks. Leaves without a ``complete: true``
    stamp (debris, builds in progress) are left out either way.
    """
    root_path = _as_path(root)
    if not _uri.is_remote(root_path):
        root_path = str(_pathlib.Path(root_path))  # normalised as before: no trailing '/', no '.'
    m = manifest(root_path)
    if m is None:
        raise UsageError(f"{root_path}: not a morton-hive store (no morton_hive.json)")
    if method not in ("auto", "moc", "walk"):
        raise UsageError(f"method must be 'auto', 'moc' or 'walk', got {method!r}")
    candidates: list[str] = []
    moc = root_coverage(root_path) if method != "walk" else None
    if method == "moc" and moc is None:
        raise UsageError(f"{root_path}: no usable root coverage.moc")
    if moc is not None and (method == "moc" or m["spec"] == "morton-hive/1"):
        for word in moc["shards"]:
            candidates.append(_join(root_path, _tessera.ragged_leaf_path(to_decimal(word), m["path_grouping"], "")))
    else:
        candidates = _walk(root_path)

    def shard_key(p: str):
        name = p.rstrip("/").rsplit("/", 1)[-1]
        word = _tessera.ragged_shard_of_basename(name)
        return (word is None, word or 0, name)

    out = []
    for leaf in sorted(candidates, key=shard_key):
        if not _uri.is_remote(leaf) and not _os.path.isdir(leaf):
            continue
        stamp = _tessera.ragged_commit_stamp(leaf)  # None for a missing leaf (remote: nothing to stat)
        if stamp and stamp["complete"]:
            out.append(leaf)
    return out


def summarize(leaf: Union[PathLike, Leaf], field: Optional[str] = None) -> dict:
    """A per-leaf reduction: ``leaf`` (path), ``shard``, ``field``, ``cells`` (populated cells),
    ``rows`` (centroids), ``weight`` (Σ weights: the observation count of a counts field) and
    ``cells_with_data`` (the stamp's, or None). ``field`` defaults to the leaf's only ragged field."""
    lf = _leaf_of(leaf)
    if field is None:
        names = lf.fields()
        if len(names) != 1:
            raise UsageError(f"{lf.path}: give field= (ragged fields: {names})")
        field = names[0]
    f = lf.field(field)
    s = f.summary()
    stamp = lf.stamp()
    return {
        "leaf": lf.path,
        "shard": lf.shard,
        "field": f.path,
        "cells": s["populated_cells"],
        "rows": s["rows"],
        "weight": s["weight_sum"],
        "cells_with_data": stamp.get("cells_with_data") if stamp else None,
    }


class _LeafTask:
    """The picklable per-leaf task of `leaves_to_dask`: only the path and parameters travel."""

    def __init__(self, func: Optional[Callable], field: Optional[str]):
        self.func = func
        self.field = field

    def __call__(self, path: str):
        leaf = Leaf(path)
        if self.func is None:
            return summarize(leaf, self.field)
        return self.func(leaf) if self.field is None else self.func(leaf.field(self.field))


def leaves_to_dask(root: PathLike, func: Optional[Callable] = None, *, field: Optional[str] = None,
                   npartitions: Optional[int] = None, method: str = "auto"):
    """A `dask.bag.Bag` with one element per committed leaf of hive ``root`` (`leaves` order).

    Each element is ``func(leaf)`` — ``func(Leaf)``, or ``func(Field)`` when ``field`` is given —
    run on a worker; the default is `summarize` (populated cells, rows, Σ weights per leaf). Tasks
    carry only leaf paths and parameters (``func`` must be picklable; Dask uses cloudpickle).
    ``npartitions`` defaults to one partition per leaf.
    """
    import dask.bag as db  # lazily: dask is optional

    paths = leaves(root, method=method)
    n = npartitions or max(1, len(paths))
    return db.from_sequence(paths, npartitions=n).map(_LeafTask(func, field))


# ---- builds and verification (through the CLI) ----
def _column(name: str, values: Any) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1:
        raise UsageError(f"column {name!r} must be one-dimensional, got shape {a.shape}")
    if np.issubdtype(a.dtype, np.datetime64):
        a = a.astype("datetime64[ns]").astype(np.int64)
    if a.dtype.kind not in "iuf":
        raise UsageError(f"column {name!r} must be integer or float, got dtype {a.dtype}")
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return np.ascontiguousarray(a)


def _np_list(values: Any) -> list:
    """None → [], a scalar → [it], anything iterable → its items."""
    if values is None:
        return []
    return list(np.atleast_1d(np.asarray(values, dtype=np.float64)))


def build(output: PathLike, *, lat: Any, lon: Any, value: Any, time: Any = None, weight: Any = None,
          sigma: Any = None, client: Any = None, partitions: Optional[int] = None, **options: Any) -> dict:
    """Builds a morton-hive store (or adds leaves to one) from numpy columns; returns the build report.

    ``lat``/``lon`` in degrees, ``value`` the observed value, one row per observation (1-D, same
    length). Optional ``time`` (integer nanoseconds, or datetime64 → ``unix-ns``; ``time_format``
    defaults to ``"unix-ns"``), ``weight`` (flux weights: needs ``gain_name``, ``gain_version``),
    ``sigma`` (needs ``stats=True``). Other keyword options are `tessera ragged build` flags:
    ``cell_order``, ``shard_order``, ``chunk_order``, ``field``, ``delta``, ``stats``, ``located``,
    ``per_cell_time``, ``latitude``, ``layout``, ``unsharded``, ``overwrite``, ``strict``,
    ``threads``, ... (``cell_order=8`` → ``--cell-order 8``; True adds a bare flag).
    ``drop_value`` (a number or several: fill values) and ``valid_range=(low, high)`` (either may
    be None) drop rows before aggregation; the report counts them under ``fill_value`` and
    ``outside_valid_range``. ``output`` may be a directory, ``s3://`` or ``gs://``.

    The columns are written as ``.npy`` files to a temporary directory and the packaged CLI runs
    the build in a child process. With ``client`` (a ``dask.distributed.Client``) the rows are
    partitioned by shard and the leaves are built by Dask tasks (at most ``partitions`` of them),
    then the hive is committed once: the same bytes as without a client (docs/distributed.md).
    Errors raise the matching `tessera.Error`.
    """
    columns = {"lat": lat, "lon": lon, "value": value, "time": time, "weight": weight, "sigma": sigma}
    columns = {k: _column(k, v) for k, v in columns.items() if v is not None}
    lengths = {k: len(v) for k, v in columns.items()}
    if len(set(lengths.values())) > 1:
        raise UsageError(f"columns differ in length: {lengths}")
    for key in ("input", "out", "lat_col", "lon_col", "value_col", "time_col", "weight_col", "sigma_col",
                "leaves_only", "commit_leaves"):
        if key in options:
            raise UsageError(f"build() sets {key!r} itself; pass the column as an argument")
    if "time" in columns:
        options.setdefault("time_format", "unix-ns")
    flags = _build_flags(columns, options)
    if client is not None:
        from . import _ragged_distributed

        return _ragged_distributed.build(client, _as_path(output), columns, flags, options, partitions)
    return run_build(_as_path(output), columns, flags)


def _build_flags(columns: dict, options: dict) -> list[str]:
    """The `ragged build` flags of `build()`'s columns and options, without --input and --out."""
    options = dict(options)
    # Values may be negative: passed as `--flag=VALUE` so they are never read as flags.
    value_flags = [f"--drop-value={float(v)!r}" for v in _np_list(options.pop("drop_value", None))]
    if options.get("valid_range") is not None:
        low, high = options.pop("valid_range")
        bound = (lambda v: "" if v is None else repr(float(v)))
        value_flags.append(f"--valid-range={bound(low)},{bound(high)}")
    options.pop("valid_range", None)
    args = ["--value-col", "value", "--lat-col", "lat", "--lon-col", "lon"]
    for name in ("time", "weight", "sigma"):
        if name in columns:
            args += [f"--{name}-col", name]
    return args + _cli.option_args(options) + value_flags


def run_build(output: str, columns: dict, flags: list[str]) -> dict:
    """`tessera ragged build` of `columns` (saved as .npy files) into `output`; its JSON report."""
    with _tempfile.TemporaryDirectory(prefix="tessera-build-") as tmp:
        for name, column in columns.items():
            np.save(_os.path.join(tmp, f"{name}.npy"), column)
        proc = _cli.run(["ragged", "build", "--input", tmp, "--out", output, *flags])
    return _json.loads(proc.stdout)


def verify(path: PathLike, *, shard: Optional[Word] = None) -> dict:
    """Runs `tessera ragged verify` on a leaf (or a hive root with ``shard=``); returns its report
    (``path``, ``ok``, ``checked``, ``failures``). On a hive root without ``shard`` every leaf the
    hive walk finds is verified, each on its own (a leaf without a complete commit stamp is a
    failure): ``{"path", "kind": "hive", "ok", "failed", "leaves": [report, ...]}``. A failed
    verification is reported (``ok`` False), not raised; errors that stop the check (a missing
    path, a hive root without leaves) raise the matching `tessera.Error`."""
    from . import cli_path

    path = _as_path(path)
    args = [str(cli_path()), "ragged", "verify", path]
    if shard is not None:
        args += ["--shard", shard if isinstance(shard, str) else to_decimal(shard)]
    proc = _subprocess.run(args, capture_output=True, text=True, env=dict(_os.environ, TESSERA_ERROR_KIND="1"))
    if proc.returncode in (0, 1) and proc.stdout.strip():
        try:
            return _json.loads(proc.stdout)
        except ValueError:
            pass
    _cli.run(args[1:])  # re-run through the error mapping: raises the matching tessera.Error
    raise _tessera.Error(proc.stderr.strip() or f"exit status {proc.returncode}")
