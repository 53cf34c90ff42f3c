"""`tessera.cells.TorchDataset`: deltacells epochs as a PyTorch IterableDataset.

Imported on first use of `tessera.cells.TorchDataset`, so `import tessera` never imports torch.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Callable, Iterator, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.utils.data

from . import _cells_anndata
from . import cells as _cells
from ._tessera import UsageError


def _rebuild_sparse_csr(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, size: tuple) -> torch.Tensor:
    return torch.sparse_csr_tensor(crow, col, values, size=size)


def _install_sparse_csr_reduction() -> None:
    """Lets DataLoader workers send sparse CSR tensors to the main process.

    torch 1.x cannot put a sparse CSR tensor on a multiprocessing queue ("Cannot access storage
    of SparseCsrTensorImpl"; the queue's feeder thread drops the item and the DataLoader waits
    forever). Where that is so, the Tensor reduction is wrapped so that a CSR tensor travels as
    its three index/value tensors (in shared memory, like any tensor) and is rebuilt on arrival;
    every other tensor goes through torch's own reduction unchanged.
    """
    import torch.multiprocessing  # noqa: F401  (registers torch's reductions first)
    from multiprocessing.reduction import ForkingPickler

    original = ForkingPickler._extra_reducers.get(torch.Tensor)
    if original is None or getattr(original, "_tessera_csr", False):
        return
    probe = torch.sparse_csr_tensor(torch.tensor([0, 1]), torch.tensor([0]),
                                    torch.ones(1), size=(1, 1))
    try:
        original(probe)
        return  # this torch handles CSR tensors itself
    except Exception:  # noqa: BLE001  (NotImplementedError / RuntimeError depending on the version)
        pass

    def reduce_tensor(tensor: torch.Tensor):
        if tensor.layout == torch.sparse_csr:
            return (_rebuild_sparse_csr, (tensor.crow_indices(), tensor.col_indices(), tensor.values(),
                                          tuple(tensor.shape)))
        return original(tensor)

    reduce_tensor._tessera_csr = True
    ForkingPickler.register(torch.Tensor, reduce_tensor)


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "Sparse CSR tensor support is in beta state"
    _install_sparse_csr_reduction()


def _csr_tensor(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, size: Tuple[int, int]) -> torch.Tensor:
    """A CSR tensor without torch's invariant check: the batch comes from the library, which
    checked every tile's indices against the gene count when decoding it, and torch 1.13's check
    walks every nonzero again (32 ms for a 26-million-nonzero batch, half the loader's time).
    torch >= 2.0 skips the check by default (`check_invariants=False`)."""
    unchecked = getattr(torch, "_sparse_csr_tensor_unsafe", None)
    if unchecked is not None:
        return unchecked(crow, col, values, size=size)
    return torch.sparse_csr_tensor(crow, col, values, size=size)


def _labels(frame) -> dict:
    """Each column of an `Obs.take` frame as a tensor: category codes as int64 (-1 missing),
    numbers in their type, nullable bools as float64 with NaN for missing."""
    out = {}
    for name, col in frame.items():
        if col.dtype == "category":
            arr = col.cat.codes.to_numpy().astype(np.int64)
        elif col.dtype == "boolean":
            arr = col.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            arr = np.array(col.to_numpy())
        out[name] = torch.from_numpy(arr)
    return out


class TorchDataset(torch.utils.data.IterableDataset):
    """Batches of a deltacells dataset for `torch.utils.data.DataLoader(ds, batch_size=None, ...)`.

    Each iteration is one epoch of `tessera.cells.Dataset.epoch`: tiles shuffled from
    `(seed, epoch)` and split into contiguous runs by rank, then by DataLoader worker; cells
    shuffled within tiles; batches of `batch_size` cells. Every cell is yielded exactly once per
    epoch over all ranks and workers, and the order depends only on (seed, epoch, rank,
    world_size, worker, num_workers).

    Items: `x`, a `torch.sparse_csr_tensor` of shape (cells in the batch, n_genes) with int32
    indices (int64 when the batch has 2**31 or more nonzeros), or a dense tensor with
    `dense=True`. With `return_cells=True` items are `(cells, x)`, `cells` an int64 tensor of
    the batch's global cell indices (for obs lookups). Values are float32 or int32 (`values`).
    `genes` (names or stored columns) keeps those columns, in that order; `transform(x)`
    replaces x. With `obs_columns`, items are `(x, labels)` (`(cells, x, labels)` with
    `return_cells`): labels maps each column to a tensor (categories as int64 codes, -1 for
    missing; numbers in their stored type, float64 with NaN when missing; bools as bool).

    `cells` (global indices) or `where` (an `Obs.filter` condition) restricts the epoch to
    those cells: the pair's tiles are the same as without a restriction, each tile's chosen
    cells are shuffled with numpy's PCG64 seeded from (seed, epoch, tile), and batches are cut
    from that stream, so each chosen cell is yielded exactly once per epoch.

    Rank and world size: the explicit `rank`/`world_size` arguments when given, else
    `torch.distributed`'s when it is initialized, else 0 and 1. Workers come from
    `torch.utils.data.get_worker_info()`. Call `set_epoch(e)` before each epoch (as with
    DistributedSampler); with `persistent_workers=True` the workers keep the epoch they started
    with, so use the default non-persistent workers. `open_options` go to `tessera.cells.open`;
    each worker process opens the dataset itself.
    """

    def __init__(self, path: "os.PathLike[str] | str", batch_size: int, *, seed: int = 0, shuffle: bool = True,
                 drop_last: bool = False, dense: bool = False, values: str = "float32", rank: Optional[int] = None,
                 world_size: Optional[int] = None, return_cells: bool = False, even_batches: bool = False,
                 open_options: Optional[dict] = None, cells: Any = None, where: Optional[dict] = None,
                 obs_columns: Optional[Sequence[str]] = None, genes: Any = None,
                 transform: Optional[Callable[[torch.Tensor], Any]] = None):
        super().__init__()
        if values not in _cells._VALUES:
            raise UsageError(f'values must be "float32" or "int32", got {values!r}')
        if (rank is None) != (world_size is None):
            raise UsageError("give both rank and world_size, or neither")
        if batch_size < 1:
            raise UsageError(f"batch_size must be at least 1, got {batch_size}")
        self.path = os.fspath(path)
        self.batch_size = int(batch_size)
        self.seed = _cells._seed64(seed)
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.dense = dense
        self.values = values
        self.rank = rank
        self.world_size = world_size
        self.return_cells = return_cells
        self.even_batches = even_batches
        self.open_options = dict(open_options or {})
        self._epoch = 0
        if cells is not None and where is not None:
            raise UsageError("give cells or where, not both")
        if transform is not None and not callable(transform):
            raise UsageError(f"transform must be callable, got {type(transform).__name__}")
        self.transform = transform
        self.obs_columns = None if obs_columns is None else (
            [obs_columns] if isinstance(obs_columns, str) else list(dict.fromkeys(obs_columns)))
        # Validated and measured now, then closed: forked workers must not inherit fetch threads.
        with _cells.open(self.path, **self.open_options) as ds:
            self.n_cells, self.n_genes = ds.shape
            self._genes = None if genes is None else _cells_anndata.gene_positions(ds, genes)
            self.cells = None
            if where is not None:
                self.cells = ds.obs.filter(where)
            elif cells is not None:
                self.cells = np.unique(_cells._cells_array(cells, self.n_cells).astype(np.int64))
                if self.cells.size and (self.cells[0] < 0 or self.cells[-1] >= self.n_cells):
                    raise UsageError(f"cells must be in [0, {self.n_cells})")
            if self.obs_columns:
                schema = ds.obs.schema
                unknown = [c for c in self.obs_columns if c not in schema]
                strings = [c for c in self.obs_columns if c in schema and schema[c]["kind"] == "string"]
                if unknown:
                    raise UsageError(f"unknown obs columns {unknown}; the obs columns are {list(schema)}")
                if strings:
                    raise UsageError(f"obs columns {strings} hold strings, which make no tensor")
                ds.obs.localize(self.obs_columns)
        self._dataset: Optional[_cells.Dataset] = None
        self._pid: Optional[int] = None

    @property
    def epoch(self) -> int:
        """The epoch the next iteration yields."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Selects the epoch of the next iteration (its own tile and cell order)."""
        self._epoch = int(epoch)

    def partition(self) -> Tuple[int, int, int, int]:
        """(rank, world_size, worker, num_workers) of the calling process."""
        if self.rank is not None:
            rank, world = self.rank, self.world_size
        elif torch.distributed.is_available() and torch.distributed.is_initialized():
            rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
        else:
            rank, world = 0, 1
        info = torch.utils.data.get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        return rank, world, worker, num_workers

    def _open(self) -> _cells.Dataset:
        if self._dataset is None or self._pid != os.getpid():
            self._dataset = _cells.open(self.path, **self.open_options)
            self._pid = os.getpid()
        return self._dataset

    def _epoch_iterator(self, partition: Optional[Tuple[int, int, int, int]] = None) -> _cells.Epoch:
        rank, world, worker, num_workers = partition or self.partition()
        return self._open().epoch(self.batch_size, seed=self.seed, epoch=self._epoch, shuffle=self.shuffle,
                                  rank=rank, world_size=world, worker=worker, num_workers=num_workers,
                                  drop_last=self.drop_last, values=self.values, even_batches=self.even_batches,
                                  format="raw")

    def _chosen_by_tile(self, partition: Tuple[int, int, int, int]) -> list:
        """(tile, chosen cells of the tile) in the pair's tile order, unshuffled."""
        bounds = np.searchsorted(self.cells, np.concatenate([[0], self._open().limits.astype(np.int64)]))
        return [(t, self.cells[bounds[t]:bounds[t + 1]]) for t in self._epoch_iterator(partition).tiles.tolist()]

    def _subset_batch_count(self, partition: Tuple[int, int, int, int]) -> int:
        n = sum(len(c) for _, c in self._chosen_by_tile(partition))
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _all_partitions(self, partition: Tuple[int, int, int, int]) -> list:
        _, world, _, num_workers = partition
        return [(r, world, w, num_workers) for r in range(world) for w in range(num_workers)]

    def batch_count(self) -> int:
        """Batches the calling (rank, worker) yields in the current epoch."""
        if self.cells is None:
            return self._epoch_iterator().batch_count()
        partition = self.partition()
        if self.even_batches:
            return min(self._subset_batch_count(p) for p in self._all_partitions(partition))
        return self._subset_batch_count(partition)

    def _subset_batches(self) -> Iterator[Tuple[np.ndarray, Tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """The chosen cells' batches for the calling pair (see the class docstring)."""
        ds = self._open()
        chosen = [(t, c) for t, c in self._chosen_by_tile(self.partition()) if len(c)]
        limit = self.batch_count()
        stream, done = np.empty(0, dtype=np.int64), 0
        for k, (tile, cells) in enumerate(chosen):
            ds.prefetch([t for t, _ in chosen[k + 1:k + 3]])
            if self.shuffle:
                cells = np.random.Generator(np.random.PCG64([self.seed % 2**64, self._epoch, tile])).permutation(cells)
            stream = np.concatenate([stream, cells])
            while len(stream) >= self.batch_size and done < limit:
                batch, stream = stream[:self.batch_size], stream[self.batch_size:]
                done += 1
                yield batch, ds.get_batch(batch, values=self.values, format="raw")
        if len(stream) and done < limit:
            yield stream, ds.get_batch(stream, values=self.values, format="raw")

    def __iter__(self) -> Iterator[Any]:
        batches = self._epoch_iterator() if self.cells is None else self._subset_batches()
        obs = self._open().obs if self.obs_columns else None
        for cells, (indptr, indices, values) in batches:
            x = self._tensor(*_cells_anndata.select_raw(indptr, indices, values, self.n_genes, self._genes))
            if self.transform is not None:
                x = self.transform(x)
            item = (x,) if obs is None else (x, _labels(obs.take(cells, self.obs_columns)))
            if self.return_cells:
                item = (torch.from_numpy(cells),) + item
            yield item[0] if len(item) == 1 else item

    def _tensor(self, indptr: np.ndarray, indices: np.ndarray, values: np.ndarray) -> torch.Tensor:
        n = len(indptr) - 1
        n_genes = self.n_genes if self._genes is None else len(self._genes)
        if self.dense:
            out = np.zeros((n, n_genes), dtype=values.dtype)
            rows = np.repeat(np.arange(n), np.diff(indptr))
            out[rows, indices] = values
            return torch.from_numpy(out)
        # torch wants crow and col indices of one dtype; the values stay zero-copy.
        if indptr[-1] < 2**31:
            crow, col = torch.from_numpy(indptr.astype(np.int32)), torch.from_numpy(indices)
        else:
            crow, col = torch.from_numpy(indptr), torch.from_numpy(indices.astype(np.int64))
        return _csr_tensor(crow, col, torch.from_numpy(values), (n, n_genes))

    def close(self) -> None:
        """Closes the dataset this process opened for iterating (reopened by the next iteration)."""
        if self._dataset is not None and self._pid == os.getpid():
            self._dataset.close()
        self._dataset = None
        self._pid = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_dataset"] = None
        state["_pid"] = None
        return state

    def __repr__(self) -> str:
        return f"<tessera.cells.TorchDataset {self.path!r}: {self.n_cells} cells x {self.n_genes} genes, " \
               f"batch_size {self.batch_size}, epoch {self._epoch}>"
