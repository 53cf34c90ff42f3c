import os
from typing import Any, Callable, Iterator, Literal, Optional, Sequence, Tuple, Union, overload

import numpy as np
import pandas
import scipy.sparse

PathLike = Union[str, os.PathLike[str]]
_Cells = Union[int, slice, range, Sequence[int], np.ndarray]
_Genes = Union[str, int, Sequence[str], Sequence[int], np.ndarray]
_Where = dict[str, Any]
_ValuesName = Literal["float32", "int32"]
_RawBatch = Tuple[np.ndarray, np.ndarray, np.ndarray]

__all__ = ["open", "Dataset", "Epoch", "Obs", "convert", "to_dask", "write_h5ad"]

def open(
    path: PathLike,
    *,
    max_cached_tiles: int = ...,
    decoded_cache_bytes: int = ...,
    max_prefetch_tiles: int = ...,
    io_threads: int = ...,
    decode_threads: int = ...,
    verify_crc: bool = ...,
    cache_dir: Optional[PathLike] = ...,
) -> Dataset: ...

class Dataset:
    def __init__(self, path: PathLike, *, cache_dir: Optional[PathLike] = ..., **options: Any) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def n_cells(self) -> int: ...
    @property
    def n_genes(self) -> int: ...
    @property
    def shape(self) -> Tuple[int, int]: ...
    @property
    def n_tiles(self) -> int: ...
    @property
    def tile_size(self) -> int: ...
    @property
    def fetch_depth(self) -> Tuple[int, int]: ...
    @property
    def version(self) -> int: ...
    @property
    def limits(self) -> np.ndarray: ...
    @property
    def tile_cells(self) -> np.ndarray: ...
    @property
    def tile_nnz(self) -> np.ndarray: ...
    @property
    def var_names(self) -> list[str]: ...
    @property
    def var(self) -> Any: ...
    @property
    def gene_order(self) -> np.ndarray: ...
    def gene_index(self, names: Union[str, Sequence[str]]) -> np.ndarray: ...
    @property
    def has_obs(self) -> bool: ...
    @property
    def closed(self) -> bool: ...
    def tile_bounds(self, tile: int) -> Tuple[int, int]: ...
    @overload
    def tile_of(self, cells: int) -> int: ...
    @overload
    def tile_of(self, cells: Union[Sequence[int], np.ndarray]) -> np.ndarray: ...
    @overload
    def get_batch(
        self, cells: _Cells, *, genes: Optional[_Genes] = ..., values: _ValuesName = ..., format: Literal["csr"] = ...
    ) -> scipy.sparse.csr_matrix: ...
    @overload
    def get_batch(
        self, cells: _Cells, *, genes: Optional[_Genes] = ..., values: _ValuesName = ..., format: Literal["raw"]
    ) -> _RawBatch: ...
    def batch_nnz(self, cells: _Cells) -> int: ...
    def prefetch(self, tiles: Union[int, Sequence[int], np.ndarray]) -> int: ...
    def prefetch_cells(self, cells: _Cells) -> int: ...
    def stats(self) -> dict[str, Union[int, float]]: ...
    def epoch(
        self,
        batch_size: int,
        *,
        seed: int = ...,
        epoch: int = ...,
        shuffle: bool = ...,
        rank: int = ...,
        world_size: int = ...,
        worker: int = ...,
        num_workers: int = ...,
        drop_last: bool = ...,
        values: _ValuesName = ...,
        even_batches: bool = ...,
        prefetch_tiles: int = ...,
        format: Literal["csr", "raw"] = ...,
    ) -> Epoch: ...
    @property
    def obs(self) -> Obs: ...
    def to_anndata(
        self,
        cells: Optional[_Cells] = ...,
        genes: Optional[_Genes] = ...,
        obs: Union[None, str, Sequence[str]] = ...,
        *,
        values: _ValuesName = ...,
        order: Literal["source", "stored"] = ...,
    ) -> Any: ...
    def close(self) -> None: ...
    def __enter__(self) -> Dataset: ...
    def __exit__(self, *exc: Any) -> None: ...
    def __len__(self) -> int: ...

class Epoch:
    def __init__(
        self,
        dataset: Dataset,
        batch_size: int,
        *,
        seed: int,
        epoch: int,
        format: Literal["csr", "raw"],
        values: _ValuesName,
        **options: Any,
    ) -> None: ...
    @property
    def epoch(self) -> int: ...
    def set_epoch(self, epoch: int) -> None: ...
    @property
    def tiles(self) -> np.ndarray: ...
    def batch_count(self) -> int: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Tuple[np.ndarray, Any]]: ...
    def __next__(self) -> Tuple[np.ndarray, Any]: ...

class Obs:
    def __init__(self, dataset: Dataset, native: Any) -> None: ...
    @property
    def columns(self) -> list[str]: ...
    @property
    def schema(self) -> dict[str, dict[str, Any]]: ...
    @property
    def cache_dir(self) -> str: ...
    def localize(self, columns: Union[None, str, Sequence[str]] = ..., *, threads: int = ...) -> list[str]: ...
    def localized_columns(self) -> list[str]: ...
    def column_nbytes(self) -> dict[str, int]: ...
    def filter(self, where: _Where) -> np.ndarray: ...
    def take(self, cells: _Cells, columns: Union[None, str, Sequence[str]] = ...) -> pandas.DataFrame: ...

def convert(
    inputs: Union[PathLike, Sequence[PathLike]],
    output: PathLike,
    *,
    kind: Literal["h5ad", "10x-h5", "10x-mtx"] = ...,
    open_dataset: bool = ...,
    quiet: Optional[bool] = ...,
    var_names: Optional[Literal["gene_ids", "gene_symbols"]] = ...,
    genome: Optional[str] = ...,
    client: Any = ...,
    partitions: Optional[int] = ...,
    tiles_dir: Optional[PathLike] = ...,
    **options: Any,
) -> Any: ...

def write_h5ad(
    dataset: Union[Dataset, PathLike],
    out: PathLike,
    *,
    cells: Optional[_Cells] = ...,
    genes: Optional[_Genes] = ...,
    obs: Union[None, str, Sequence[str]] = ...,
    values: _ValuesName = ...,
    order: Literal["source", "stored"] = ...,
) -> None: ...

def to_dask(path: PathLike, *, values: _ValuesName = ..., **options: Any) -> Any: ...

class TorchDataset:
    path: str
    batch_size: int
    seed: int
    shuffle: bool
    drop_last: bool
    dense: bool
    values: _ValuesName
    rank: Optional[int]
    world_size: Optional[int]
    return_cells: bool
    even_batches: bool
    open_options: dict[str, Any]
    n_cells: int
    n_genes: int
    cells: Optional[np.ndarray]
    obs_columns: Optional[list[str]]
    transform: Optional[Callable[[Any], Any]]
    def __init__(
        self,
        path: PathLike,
        batch_size: int,
        *,
        seed: int = ...,
        shuffle: bool = ...,
        drop_last: bool = ...,
        dense: bool = ...,
        values: _ValuesName = ...,
        rank: Optional[int] = ...,
        world_size: Optional[int] = ...,
        return_cells: bool = ...,
        even_batches: bool = ...,
        open_options: Optional[dict[str, Any]] = ...,
        cells: Optional[_Cells] = ...,
        where: Optional[_Where] = ...,
        obs_columns: Union[None, str, Sequence[str]] = ...,
        genes: Optional[_Genes] = ...,
        transform: Optional[Callable[[Any], Any]] = ...,
    ) -> None: ...
    @property
    def epoch(self) -> int: ...
    def set_epoch(self, epoch: int) -> None: ...
    def partition(self) -> Tuple[int, int, int, int]: ...
    def batch_count(self) -> int: ...
    def close(self) -> None: ...
    def __iter__(self) -> Iterator[Any]: ...
