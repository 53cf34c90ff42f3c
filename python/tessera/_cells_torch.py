"""`tessera.cells.TorchDataset`: deltacells epochs as a PyTorch IterableDataset.

Imported on first use of `tessera.cells.TorchDataset`, so `import tessera` never imports torch.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Iterator, Optional, Tuple

import numpy as np
import torch
import torch.utils.data

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
                 open_options: Optional[dict] = None):
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
        # Validated and measured now, then closed: forked workers must not inherit fetch threads.
        with _cells.open(self.path, **self.open_options) as ds:
            self.n_cells, self.n_genes = ds.shape
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

    def _epoch_iterator(self) -> _cells.Epoch:
        rank, world, worker, num_workers = self.partition()
        return self._open().epoch(self.batch_size, seed=self.seed, epoch=self._epoch, shuffle=self.shuffle,
                                  rank=rank, world_size=world, worker=worker, num_workers=num_workers,
                                  drop_last=self.drop_last, values=self.values, even_batches=self.even_batches,
                                  format="raw")

    def batch_count(self) -> int:
        """Batches the calling (rank, worker) yields in the current epoch."""
        return self._epoch_iterator().batch_count()

    def __iter__(self) -> Iterator[Any]:
        for cells, (indptr, indices, values) in self._epoch_iterator():
            x = self._tensor(indptr, indices, values)
            yield (torch.from_numpy(cells), x) if self.return_cells else x

    def _tensor(self, indptr: np.ndarray, indices: np.ndarray, values: np.ndarray) -> torch.Tensor:
        n = len(indptr) - 1
        if self.dense:
            out = np.zeros((n, self.n_genes), dtype=values.dtype)
            rows = np.repeat(np.arange(n), np.diff(indptr))
            out[rows, indices] = values
            return torch.from_numpy(out)
        # torch wants crow and col indices of one dtype; the values stay zero-copy.
        if indptr[-1] < 2**31:
            crow, col = torch.from_numpy(indptr.astype(np.int32)), torch.from_numpy(indices)
        else:
            crow, col = torch.from_numpy(indptr), torch.from_numpy(indices.astype(np.int64))
        return _csr_tensor(crow, col, torch.from_numpy(values), (n, self.n_genes))

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
