"""tessera.cells against the usual ways of reading an h5ad, side by side on the same data.

    scripts/bench.sh cells-peers [--repeat R] [--cells N] [--genes G] [--batches B] [--smoke] [--only ...]

The input is a random sparse AnnData of N cells x G genes (default 100,000 x 2,000; about 5 %
nonzero, integer counts stored as float32, CSR X, six obs columns, var names), written once as
input.h5ad and converted once with `tessera cells convert --tile-size 5000` (bench_common.py's
`cells_dataset`); both are kept in --data-dir and reused.

1. batches: B random batches of 5,000 cells a round (fixed seed, the same batches every round)
   read four ways, in cells/s:
   - tessera: `ds.get_batch(cells)` with the cells in their random order (get_batch accepts any
     order) on a Dataset opened once with the default options (its adaptive decoded cache keeps
     tiles read a second time, so from the untimed first pass on batches gather from memory);
   - tessera with two tiles: the same on a Dataset opened with `decoded_cache_bytes=0`, which
     keeps only the two most recent decoded tiles, so every batch decodes most tiles: what the
     adaptive cache buys;
   - anndata backed: `anndata.read_h5ad(h5ad, backed="r")` opened once, then
     `adata.X[np.sort(cells)]`;
   - h5py: the file opened once; per batch `X/indptr` is read whole, then for the sorted cells
     (adjacent cells merged into one run) the `X/indices` and `X/data` slices are read and
     assembled into a `scipy.sparse.csr_matrix`.
2. subset: `ds.get_batch(cells, genes=names)` of 50 gene names (fixed seed; one list for every
   batch, as a model's gene panel) against the full rows `ds.get_batch(cells)`, the same batches,
   in cells/s; beside them, batches that each ask for another of three 50-gene lists in turn.
3. to_anndata: `tessera.cells.open(ds).to_anndata()` of every cell (open included; obs
   localized into a cache under --data-dir by the untimed first run) against
   `anndata.read_h5ad(h5ad)`, in seconds; `to_anndata(order="stored")` (genes left in the
   dataset's stored order, no column permutation) runs beside them as a reference.

Before timing, one batch (and one whole AnnData) from each side is checked to hold the same
values, so the sides are known to do the same work. Each figure then runs every side once
untimed, then --repeat rounds alternating the order of the sides (bench_common.alternate);
every round prints each side's value and the ratios, and the summary table gives the medians
of the rounds with the targets. After the batch rounds one more tessera batch reports, from
`ds.stats()`, how many tiles it decoded and for how long. --smoke runs every figure once on tiny inputs in a temporary
directory (seconds) to prove the benchmark runs; its numbers mean nothing.
"""
import argparse
import os
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

from bench_common import Summary, alternate, cells_dataset

REPO = pathlib.Path(__file__).resolve().parents[1]
FIGURES = ("batches", "subset", "to_anndata")


def random_batches(n_cells, batch_size, count, seed):
    """`count` batches of `batch_size` distinct random cells each, in random order."""
    rng = np.random.default_rng(seed)
    return [rng.choice(n_cells, size=min(batch_size, n_cells), replace=False).astype(np.int64)
            for _ in range(count)]


def cells_per_second(read, batches):
    """A side that reads every batch with `read` and returns cells/s."""
    def run():
        n = 0
        t0 = time.perf_counter()
        for cells in batches:
            n += read(cells).shape[0]
        return n / (time.perf_counter() - t0)
    return run


def h5py_rows(x_group, rows):
    """CSR rows `rows` (sorted, distinct) of an h5ad's X group, gathered with h5py slices."""
    import scipy.sparse as sp

    indptr = x_group["indptr"][:]
    starts, stops = indptr[rows], indptr[rows + 1]
    # Adjacent rows are one contiguous slice: one read per run of them.
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    run_first, run_last = np.r_[0, breaks], np.r_[breaks, len(rows)] - 1
    indices, data = x_group["indices"], x_group["data"]
    idx_parts, val_parts = [], []
    for lo, hi in zip(starts[run_first], stops[run_last]):
        idx_parts.append(indices[lo:hi])
        val_parts.append(data[lo:hi])
    out_indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(stops - starts, out=out_indptr[1:])
    shape = (len(rows), int(x_group.attrs["shape"][1]))
    return sp.csr_matrix((np.concatenate(val_parts), np.concatenate(idx_parts), out_indptr), shape=shape)


def same(a, b):
    return a.shape == b.shape and (a != b).nnz == 0


def median(values):
    return statistics.median(values)


# ---- 1. random batches: tessera, anndata backed, h5py -------------------------------------------

def bench_batches(ds_path, h5ad, batches, rounds, summary):
    import anndata
    import h5py

    import tessera.cells

    ds = tessera.cells.open(ds_path)
    # The same dataset keeping two decoded tiles only: every batch decodes most of its tiles.
    two_tiles = tessera.cells.open(ds_path, decoded_cache_bytes=0)
    backed = anndata.read_h5ad(h5ad, backed="r")
    h5 = h5py.File(h5ad, "r")
    x_group = h5["X"]

    def tessera_read(cells):
        return ds.get_batch(cells)

    def two_tiles_read(cells):
        return two_tiles.get_batch(cells)

    def anndata_read(cells):
        return backed.X[np.sort(cells)]

    def h5py_read(cells):
        return h5py_rows(x_group, np.sort(cells))

    cells = batches[0]
    t = tessera_read(cells)[np.argsort(cells)]
    a, h = anndata_read(cells), h5py_read(cells)
    if not (same(a[:, ds.gene_order], t) and same(a, h)):
        raise RuntimeError("tessera, anndata backed and h5py disagree on the first batch")
    n = sum(len(c) for c in batches)
    print(f"batches  {len(batches)} random batch(es) of {len(cells):,} cells a round ({n:,} cells); tessera's cells "
          f"unsorted, anndata's and h5py's sorted; the three agree on the first batch")
    if not same(two_tiles_read(cells), tessera_read(cells)):
        raise RuntimeError("the dataset keeping two tiles disagrees with the default one")
    rows = []
    sides = (cells_per_second(tessera_read, batches), cells_per_second(anndata_read, batches),
             cells_per_second(h5py_read, batches), cells_per_second(two_tiles_read, batches))
    for r, tv, av, hv, cv in alternate(rounds, *sides):
        rows.append((tv, av, hv, cv))
        print(f"batches  round {r + 1}: tessera {tv:,.0f} cells/s, anndata backed {av:,.0f} cells/s, h5py {hv:,.0f} "
              f"cells/s, tessera with two tiles {cv:,.0f} cells/s; tessera/anndata {tv / av:.2f}, "
              f"tessera/h5py {tv / hv:.2f}, two tiles/anndata {cv / av:.2f}, two tiles/h5py {cv / hv:.2f}")
    before = ds.stats()
    t0 = time.perf_counter()
    tessera_read(cells)
    took = time.perf_counter() - t0
    after = ds.stats()
    spent = {k: after[k] - before[k] for k in ("tiles_decoded", "decode_seconds", "tiles_fetched", "fetch_seconds")}
    print(f"batches  one tessera batch: {took * 1e3:.1f} ms, {spent['tiles_decoded']} of {ds.n_tiles} tiles decoded "
          f"({spent['decode_seconds'] * 1e3:.1f} ms decoding), {spent['tiles_fetched']} fetched "
          f"({spent['fetch_seconds'] * 1e3:.1f} ms)")
    h5.close()
    backed.file.close()
    ds.close()
    two_tiles.close()
    tv, av, hv, cv = (median(col) for col in zip(*rows))
    ra, rh = median(t / a for t, a, _, _ in rows), median(t / h for t, _, h, _ in rows)
    ca, ch = median(c / a for _, a, _, c in rows), median(c / h for _, _, h, c in rows)
    print(f"batches  median: tessera {tv:,.0f}, anndata backed {av:,.0f}, h5py {hv:,.0f} cells/s; "
          f"tessera/anndata {ra:.2f}, tessera/h5py {rh:.2f} (targets >= 10)")
    summary.add("random batches, tessera get_batch (cells/s)", f"{tv:,.0f}")
    summary.add("random batches, anndata backed (cells/s)", f"{av:,.0f}")
    summary.add("random batches, h5py CSR rows (cells/s)", f"{hv:,.0f}")
    summary.add("random batches, tessera / anndata backed", f"{ra:.2f}", ">= 10", ra >= 10)
    summary.add("random batches, tessera / h5py", f"{rh:.2f}", ">= 10", rh >= 10)
    summary.add("random batches, two decoded tiles (cells/s)", f"{cv:,.0f}")
    summary.add("random batches, two decoded tiles / anndata backed", f"{ca:.2f}")
    summary.add("random batches, two decoded tiles / h5py", f"{ch:.2f}")


# ---- 2. a 50-gene subset against whole rows -----------------------------------------------------

def bench_subset(ds_path, batches, n_subset, seed, rounds, summary):
    import tessera.cells

    ds = tessera.cells.open(ds_path)
    rng = np.random.default_rng(seed)
    # A model's gene panel: one list for every batch. Beside it, a new list every batch (three
    # lists in turn), which no batch can reuse the work of the one before for.
    lists = [[ds.var_names[j] for j in rng.choice(ds.n_genes, size=min(n_subset, ds.n_genes), replace=False)]
             for _ in range(3)]
    names = lists[0]
    turn = iter(range(1 << 62))

    def subset_read(cells):
        return ds.get_batch(cells, genes=names)

    def new_list_read(cells):
        return ds.get_batch(cells, genes=lists[next(turn) % len(lists)])

    def full_read(cells):
        return ds.get_batch(cells)

    for genes in lists:
        if not same(ds.get_batch(batches[0], genes=genes), full_read(batches[0])[:, ds.gene_index(genes)]):
            raise RuntimeError("get_batch(genes=...) differs from the columns of the full rows")
    print(f"subset   {len(names)} random genes by name, the same batches as above")
    rows = []
    for r, sv, fv, nv in alternate(rounds, cells_per_second(subset_read, batches), cells_per_second(full_read, batches),
                                   cells_per_second(new_list_read, batches)):
        rows.append((sv, fv, nv))
        print(f"subset   round {r + 1}: {len(names)} genes {sv:,.0f} cells/s, full rows {fv:,.0f} cells/s, a new "
              f"list every batch {nv:,.0f} cells/s; subset/full {sv / fv:.2f}, new list/full {nv / fv:.2f}")
    ds.close()
    sv, fv, nv = (median(col) for col in zip(*rows))
    ratio = median(s / f for s, f, _ in rows)
    new_ratio = median(n / f for _, f, n in rows)
    print(f"subset   median: {len(names)} genes {sv:,.0f} cells/s, full rows {fv:,.0f} cells/s, subset/full "
          f"{ratio:.2f} (target >= 3); a new list every batch {nv:,.0f} cells/s, {new_ratio:.2f} of full rows")
    summary.add(f"{len(names)}-gene subset batches (cells/s)", f"{sv:,.0f}")
    summary.add("full-row batches (cells/s)", f"{fv:,.0f}")
    summary.add(f"{len(names)}-gene subset / full rows", f"{ratio:.2f}", ">= 3", ratio >= 3)
    summary.add(f"a new {len(names)}-gene list every batch / full rows", f"{new_ratio:.2f}")


# ---- 3. to_anndata against read_h5ad ------------------------------------------------------------

def bench_to_anndata(ds_path, h5ad, cache_dir, rounds, summary):
    import anndata

    import tessera.cells

    def convert(order="source"):
        with tessera.cells.open(ds_path, cache_dir=cache_dir) as ds:
            return ds.to_anndata(order=order)

    def convert_stored():
        return convert("stored")

    def read():
        return anndata.read_h5ad(h5ad)

    def seconds(load):
        def run():
            t0 = time.perf_counter()
            load()
            return time.perf_counter() - t0
        return run

    mine, theirs = convert(), read()  # also localizes the obs columns into cache_dir
    if not (same(mine.X, theirs.X) and list(mine.obs_names) == list(theirs.obs_names)
            and list(mine.var_names) == list(theirs.var_names)):
        raise RuntimeError("to_anndata() and read_h5ad() differ")
    print(f"anndata  {mine.n_obs:,} cells x {mine.n_vars:,} genes, {mine.X.nnz:,} nonzeros; to_anndata() "
          f"and read_h5ad() agree on X, obs_names and var_names")
    del mine, theirs
    rows = []
    for r, tv, av, sv in alternate(rounds, seconds(convert), seconds(read), seconds(convert_stored)):
        rows.append((tv, av, sv))
        print(f"anndata  round {r + 1}: to_anndata {tv:.3f} s, read_h5ad {av:.3f} s, ratio {tv / av:.2f}; "
              f"to_anndata(order=\"stored\") {sv:.3f} s, ratio {sv / av:.2f}")
    tv, av, sv = (median(col) for col in zip(*rows))
    ratio, stored_ratio = median(t / a for t, a, _ in rows), median(s / a for _, a, s in rows)
    print(f"anndata  median: to_anndata {tv:.3f} s, read_h5ad {av:.3f} s, to_anndata/read_h5ad {ratio:.2f} "
          f"(target <= 1.5); without the permutation into the source's gene order {sv:.3f} s, ratio {stored_ratio:.2f}")
    summary.add("to_anndata, all cells (s)", f"{tv:.3f}")
    summary.add("anndata.read_h5ad of the source (s)", f"{av:.3f}")
    summary.add("to_anndata / read_h5ad", f"{ratio:.2f}", "<= 1.5", ratio <= 1.5)
    summary.add('to_anndata(order="stored") / read_h5ad', f"{stored_ratio:.2f}")


# ---- main ---------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=pathlib.Path, default=REPO / "build" / "bench-data" / "cells-peers")
    parser.add_argument("--cli", type=pathlib.Path, help="the tessera CLI converting the input (default: the package's)")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds per figure (default 5)")
    parser.add_argument("--cells", type=int, default=100_000, help="cells of the generated data (default 100,000)")
    parser.add_argument("--genes", type=int, default=2_000, help="genes of the generated data (default 2,000)")
    parser.add_argument("--tile-size", type=int, default=5_000)
    parser.add_argument("--batch-size", type=int, default=5_000)
    parser.add_argument("--batches", type=int, default=3, help="random batches read per round (default 3)")
    parser.add_argument("--subset-genes", type=int, default=50, help="genes of the subset figure (default 50)")
    parser.add_argument("--seed", type=int, default=11, help="seed of the batches and the gene subset")
    parser.add_argument("--smoke", action="store_true", help="every figure once on tiny inputs (seconds)")
    parser.add_argument("--only", nargs="+", choices=FIGURES, help="run only these figures")
    args = parser.parse_args()

    import anndata
    import h5py

    import tessera

    cli = args.cli or tessera.cli_path()
    smoke_dir = None
    if args.smoke:
        smoke_dir = tempfile.TemporaryDirectory(prefix="tessera-bench-cells-peers-smoke-")
        args.data_dir = pathlib.Path(smoke_dir.name)
        args.repeat, args.batches = 1, 1
        args.cells, args.genes, args.tile_size, args.batch_size = 2_000, 200, 500, 300
    figures = set(args.only or FIGURES)
    print(f"tessera {tessera.__version__}, anndata {anndata.__version__}, h5py {h5py.__version__}, "
          f"{os.cpu_count()} CPUs; {args.cells:,} cells x {args.genes:,} genes, tiles of {args.tile_size:,}"
          + (" (smoke)" if args.smoke else ""))
    summary = Summary()
    t_start = time.perf_counter()
    try:
        args.data_dir.mkdir(parents=True, exist_ok=True)
        data_dir = args.data_dir.resolve()
        ds = cells_dataset(cli, data_dir, args.cells, args.genes, args.tile_size, keep_h5ad=True)
        h5ad = ds.parent / "input.h5ad"
        batches = random_batches(args.cells, args.batch_size, args.batches, args.seed)
        if "batches" in figures:
            bench_batches(ds, h5ad, batches, args.repeat, summary)
        if "subset" in figures:
            bench_subset(ds, batches, args.subset_genes, args.seed, args.repeat, summary)
        if "to_anndata" in figures:
            bench_to_anndata(ds, h5ad, data_dir / "obs-cache", args.repeat, summary)
    finally:
        if smoke_dir is not None:
            smoke_dir.cleanup()
    summary.print()
    print(f"\n{time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
