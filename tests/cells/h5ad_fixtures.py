"""Inputs and independent checks for the h5ad / 10x HDF5 converter tests (tests/cells/*).

Run with /usr/bin/python3 (numpy, scipy, h5py, anndata from Debian). Subcommands:

  write ROOT --cells N --genes G [--splits K] [--layouts csr,csc,dense] [--dtype float32]
        [--seed S] [--big] [--where X|layer|raw]
      A seeded cells x genes count matrix (a few tied gene totals; with --big, counts above
      65,535 and nonzeros spread over more than 65,536 genes) saved as ROOT/expected.npz and
      split into K AnnData files ROOT/part_<k>.h5ad written by anndata, file k in layout
      layouts[k % len(layouts)]. --where layer stores the matrix in layers/counts (X holds other
      values); --where raw stores it in raw/X with every gene in raw/var while X keeps only some.
  tenx ROOT --cells N --genes G [--splits K] [--seed S] [--v2-genomes A,B]
      The same kind of matrix as Cell Ranger HDF5 files ROOT/part_<k>.h5 written with h5py
      (v3 layout: matrix/{data,indices,indptr,shape,barcodes,features/...}; with --v2-genomes,
      one v2 group per genome, the matrix in the first, a different one in the others).
  check ROOT DATASET GOT_JSON CELLS [--no-sort] [--symbols]
      GOT_JSON is `tessera cells get DATASET CELLS --json`; every requested row must equal the
      source row with its columns permuted by gene_order.npy (absent with --no-sort), the order
      must be the stable sort by decreasing total, and var_names.txt the names in stored order.
"""
import argparse
import json
import os
import sys
import warnings

import numpy as np
import scipy.sparse as sp

warnings.simplefilter("ignore")


def make_matrix(n_cells, n_genes, seed, big):
    rng = np.random.default_rng(seed)
    if big:
        # ~200 nonzeros per cell spread over every gene; a few counts above 65,535.
        rows, cols = [], []
        for c in range(n_cells):
            genes = rng.choice(n_genes, size=200, replace=False)
            if c == 1:
                genes = np.array([n_genes - 1])  # a first gap above 65,535 (without sorting)
            elif c == 2:
                genes = np.array([0, n_genes - 1])  # a gap above 65,535 inside a cell
            rows.append(np.full(genes.size, c))
            cols.append(genes)
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        vals = rng.integers(1, 9, rows.size)
        vals[rng.random(rows.size) < 0.004] = 70000 + rng.integers(0, 1000)
        m = sp.csr_matrix((vals, (rows, cols)), shape=(n_cells, n_genes), dtype=np.int64)
        m.sort_indices()
        return m
    pop = 1.0 / np.arange(1, n_genes + 1) ** 0.8
    dense = (rng.random((n_cells, n_genes)) < 0.3 * pop[rng.permutation(n_genes)]) * rng.integers(1, 9, (n_cells, n_genes))
    dense[:, n_genes - 1] = 0
    dense[:, n_genes - 2] = 0
    dense[0, n_genes - 2] = dense[1, n_genes - 1] = 1  # a tie: two genes with total 1
    return sp.csr_matrix(dense.astype(np.int64))


def cuts_of(n_cells, splits):
    return np.linspace(0, n_cells, splits + 1).round().astype(int)


def save_expected(root, m, names):
    np.savez(os.path.join(root, "expected.npz"), data=m.data, indices=m.indices, indptr=m.indptr, shape=m.shape)
    with open(os.path.join(root, "names.json"), "w") as f:
        json.dump(names, f)


def as_layout(x, layout, dtype):
    if layout == "csr":
        return sp.csr_matrix(x, dtype=dtype)
    if layout == "csc":
        return sp.csc_matrix(x, dtype=dtype)
    return x.toarray().astype(dtype)


def cmd_write(a):
    import anndata
    import pandas as pd

    m = make_matrix(a.cells, a.genes, a.seed, a.big)
    genes = ["G%05d" % g for g in range(a.genes)]
    save_expected(a.root, m, {"ids": genes, "symbols": genes})
    layouts = a.layouts.split(",")
    cuts = cuts_of(a.cells, a.splits)
    for k in range(a.splits):
        part = m[cuts[k]:cuts[k + 1]]
        x = as_layout(part, layouts[k % len(layouts)], a.dtype)
        obs = pd.DataFrame(index=["C%06d" % c for c in range(cuts[k], cuts[k + 1])])
        var = pd.DataFrame(index=genes)
        if a.where == "X":
            ad = anndata.AnnData(X=x, obs=obs, var=var, dtype=x.dtype)  # (anndata 0.8 casts X to float32 by default)
        elif a.where == "layer":
            ad = anndata.AnnData(X=sp.csr_matrix(part.shape, dtype=np.float32), obs=obs, var=var)
            ad.layers["other"] = sp.csr_matrix(part.shape, dtype=np.float32)
            ad.layers["counts"] = x
        else:  # raw: raw/X holds every gene, X only the first half with other values
            full = anndata.AnnData(X=x, obs=obs, var=var, dtype=x.dtype)
            ad = full[:, : max(1, a.genes // 2)].copy()
            ad.X = sp.csr_matrix(ad.shape, dtype=np.float32)
            ad.raw = full
        ad.write_h5ad(os.path.join(a.root, "part_%d.h5ad" % k))


def cmd_tenx(a):
    import h5py

    m = make_matrix(a.cells, a.genes, a.seed, False)
    ids = ["ENSG%05d" % g for g in range(a.genes)]
    symbols = ["SYM%d" % (g % max(1, a.genes - 3)) for g in range(a.genes)]
    save_expected(a.root, m, {"ids": ids, "symbols": symbols})
    cuts = cuts_of(a.cells, a.splits)
    genomes = a.v2_genomes.split(",") if a.v2_genomes else []
    for k in range(a.splits):
        part = sp.csc_matrix(m[cuts[k]:cuts[k + 1]].T.astype(np.int32))  # features x barcodes, CSC
        barcodes = np.array([b"CELL%06d-1" % c for c in range(cuts[k], cuts[k + 1])])
        with h5py.File(os.path.join(a.root, "part_%d.h5" % k), "w") as f:
            def fill(g, x):
                g.create_dataset("data", data=x.data, compression="gzip")
                g.create_dataset("indices", data=x.indices.astype(np.int64), compression="gzip")
                g.create_dataset("indptr", data=x.indptr.astype(np.int64))
                g.create_dataset("shape", data=np.array(x.shape, dtype=np.int32))
                g.create_dataset("barcodes", data=barcodes)
            if not genomes:
                g = f.create_group("matrix")
                fill(g, part)
                feats = g.create_group("features")
                feats.create_dataset("id", data=np.array([s.encode() for s in ids]))
                feats.create_dataset("name", data=np.array([s.encode() for s in symbols]))
                feats.create_dataset("feature_type", data=np.array([b"Gene Expression"] * a.genes))
                feats.create_dataset("genome", data=np.array([b"GRCh38"] * a.genes))
                f.attrs["library_ids"] = np.array([b"lib"])
            for i, genome in enumerate(genomes):
                g = f.create_group(genome)
                fill(g, part if i == 0 else sp.csc_matrix(part.shape, dtype=np.int32))
                g.create_dataset("genes", data=np.array([s.encode() for s in ids]))
                g.create_dataset("gene_names", data=np.array([s.encode() for s in symbols]))


def expand_cells(text):
    out = []
    for piece in text.split(","):
        if ":" in piece:
            lo, hi = piece.split(":")
            out.extend(range(int(lo), int(hi)))
        else:
            out.append(int(piece))
    return out


def cmd_check(a):
    z = np.load(os.path.join(a.root, "expected.npz"))
    m = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
    names = json.load(open(os.path.join(a.root, "names.json")))["symbols" if a.symbols else "ids"]
    got = json.load(open(a.got))
    order_file = os.path.join(a.dataset, "gene_order.npy")
    if a.no_sort:
        assert not os.path.exists(order_file), "gene_order.npy written without sorting"
        order = np.arange(m.shape[1])
    else:
        order = np.load(order_file)
        totals = np.asarray(m.sum(axis=0)).ravel()
        assert (order == np.argsort(-totals, kind="stable")).all(), "gene order"
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    cells = expand_cells(a.cells)
    ip, ix, vals = np.array(got["indptr"]), np.array(got["indices"]), np.array(got["values"])
    assert len(ip) == len(cells) + 1, "rows"
    for i, c in enumerate(cells):
        row = m.getrow(c)
        want = sorted(zip(inverse[row.indices].tolist(), row.data.tolist()))
        have = list(zip(ix[ip[i]:ip[i + 1]].tolist(), vals[ip[i]:ip[i + 1]].tolist()))
        assert have == want, "cell %d: %r != %r" % (c, have[:5], want[:5])
    if a.symbols:
        seen, unique = set(names), []
        counts, firsts = {}, set()
        for n in names:  # AnnData's var_names_make_unique
            if n not in firsts:
                firsts.add(n)
                unique.append(n)
                continue
            while True:
                counts[n] = counts.get(n, 0) + 1
                cand = "%s-%d" % (n, counts[n])
                if cand not in seen:
                    seen.add(cand)
                    unique.append(cand)
                    break
        names = unique
    stored = open(os.path.join(a.dataset, "var_names.txt")).read().split("\n")[:-1]
    assert stored == [names[g] for g in order], "var names"
    print("ok")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("root")
    w.add_argument("--cells", type=int, required=True)
    w.add_argument("--genes", type=int, required=True)
    w.add_argument("--splits", type=int, default=1)
    w.add_argument("--layouts", default="csr")
    w.add_argument("--dtype", default="float32")
    w.add_argument("--seed", type=int, default=1)
    w.add_argument("--big", action="store_true")
    w.add_argument("--where", default="X", choices=["X", "layer", "raw"])
    t = sub.add_parser("tenx")
    t.add_argument("root")
    t.add_argument("--cells", type=int, required=True)
    t.add_argument("--genes", type=int, required=True)
    t.add_argument("--splits", type=int, default=1)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--v2-genomes", default="")
    c = sub.add_parser("check")
    c.add_argument("root")
    c.add_argument("dataset")
    c.add_argument("got")
    c.add_argument("cells")
    c.add_argument("--no-sort", action="store_true")
    c.add_argument("--symbols", action="store_true")
    a = p.parse_args()
    {"write": cmd_write, "tenx": cmd_tenx, "check": cmd_check}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
