#!/usr/bin/env bash
# A short tour of tessera: builds the CLI and the Python package (Release, build/release), then
# in a fresh temporary folder
#   - synthesizes a four-dataset .tet file, prints its description, verifies it in depth,
#     exports a strided selection of one dataset to .npy and reads that back with numpy, and
#     queries it (a partial mean, a median that spills under a small memory budget);
#   - converts an HDF5 file written with h5py to .tet and exports that to a Zarr v3 store;
#   - converts a generated AnnData file with obs to a deltacells dataset, localizes obs columns
#     and fetches a batch of cells filtered by them;
#   - synthesizes a morton-hive store with one zagg-ragged leaf of t-digests, describes and
#     verifies it, decodes one cell, casts the digests to tensors (.npy, read back with numpy)
#     and draws a heatmap PNG, and prints the content hashes;
#   - builds a hive from 20,000 generated point observations (`ragged build`: t-digests with
#     location and time companions, dense statistics) and reads it back (verify, a cell, hashes);
#   - reads the same .tet file, cells dataset and leaf from Python (`import tessera`).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"

"$ROOT/scripts/bootstrap.sh"
section "build tessera and its Python package (Release)"
configure_release >/dev/null
cmake --build build/release -j"$JOBS" --target tessera _tessera
tessera_bin="$ROOT/build/release/tessera"

demo_dir="$(mktemp -d "${TMPDIR:-/tmp}/tessera-demo.XXXXXX")"
echo "demo folder: $demo_dir"
cd "$demo_dir"

# tessera ARGS...: echoes the command line as it could be typed (shell-special arguments
# single-quoted), then runs the built binary.
tessera() {
  local arg line="\$ tessera"
  for arg in "$@"; do
    if [[ "$arg" =~ ^[A-Za-z0-9_./:=,+-]+$ ]]; then line+=" $arg"; else line+=" '$arg'"; fi
  done
  echo "$line" >&2  # to stderr: a command whose output is redirected to a file still shows
  "$tessera_bin" "$@"
}

section "synthesize demo.tet"
tessera tet synth demo.tet \
  --dataset temperature:f32:64x180x360:8x90x90:zstd:3 \
  --dataset pressure:f64:64x180x360:16x45x120 \
  --dataset mask:u8:180x360:90x90 \
  --dataset counts:u32:1000:256:zstd \
  --seed 42
ls -l demo.tet

section "describe it"
tessera tet info demo.tet --all -n 8

section "verify every chunk"
tessera tet verify --deep demo.tet

section "export temperature[0:2, ::30, ::60] to .npy"
tessera tet cat demo.tet temperature --out temperature.npy \
  --selection '[{"start":0,"stop":2},{"step":30},{"step":60}]'

section "read it back with numpy"
/usr/bin/python3 -c '
import numpy as np
a = np.load("temperature.npy")
print("shape:", a.shape, "dtype:", a.dtype)
print("first values:", a.ravel()[:8])
'

section "query: mean over time, and a median under a 16 MiB memory budget (spills to a temp file)"
export TET_QUERY_HISTORY_FILE="$demo_dir/query-history.jsonl"
tessera tet query '{"dataset":"temperature","mean":0}' -t demo.tet -x -q
tessera tet query '{"dataset":"pressure","median":[],"execution":{"memory_budget_bytes":16777216}}' -t demo.tet -x -q
tessera tet qhist list

section "convert an HDF5 file (written here with h5py) to .tet, then export it to Zarr v3"
/usr/bin/python3 -c '
import h5py, numpy as np
t = np.arange(24 * 90 * 180, dtype=np.float32).reshape(24, 90, 180) % 37 - 5
with h5py.File("climate.h5", "w") as f:
    d = f.create_dataset("surface/temperature", data=t, chunks=(6, 45, 90))
    d.attrs["units"] = "degC"
    f.create_dataset("surface/mask", data=(t > 20).astype(np.uint8), chunks=(12, 90, 90))
'
tessera tet convert climate.h5 climate.tet
tessera tet info climate.tet --metadata
tessera tet export climate.tet climate.zarr
# Outputs are saved before being shortened: `tessera … | head` under pipefail fails the demo
# whenever head exits before tessera has written everything (SIGPIPE).
tessera info climate.zarr > climate_zarr_info.txt
head -n 12 climate_zarr_info.txt
echo "  …"

section "deltacells: convert a generated AnnData file with obs, describe, verify, fetch a filtered batch"
/usr/bin/python3 -c '
import anndata, numpy as np, pandas as pd, scipy.sparse
rng = np.random.default_rng(1)
genes, cells = 2000, 3000
x = scipy.sparse.random(cells, genes, density=0.05, random_state=1, format="csr")
x.data = (rng.negative_binomial(2, 0.3, x.nnz) + 1).astype(np.float32)
obs = pd.DataFrame({
    "cell_type": pd.Categorical(rng.choice(["T cell", "B cell", "NK cell", "Müller glia"], cells)),
    "donor": pd.Categorical(rng.choice(["donor-1", "donor-2", "donor-3"], cells)),
    "n_counts": np.asarray(x.sum(axis=1)).ravel().astype(np.int64),
    "is_doublet": rng.random(cells) < 0.05,
}, index=[f"CELL{i:05d}-1" for i in range(cells)])
var = pd.DataFrame({"gene_symbol": [f"GENE{i}" for i in range(genes)]}, index=[f"ENSG{i:06d}" for i in range(genes)])
anndata.AnnData(X=x, obs=obs, var=var).write_h5ad("pbmc.h5ad")
'
tessera cells convert --h5ad-glob pbmc.h5ad --output cells_ds --tile-size 1000 --obs-tiles-per-file 2
tessera cells info cells_ds --cache-dir obs_cache
tessera verify cells_ds
tessera cells obs info cells_ds --cache-dir obs_cache
tessera cells obs localize cells_ds --columns cell_type,donor,n_counts --cache-dir obs_cache
# (awk reads to the end: a reader that stops early would break the pipe under pipefail)
echo "# the first three T cells of donor-2 among cells 0..2999 (obs from the local Arrow cache):"
tessera cells get cells_ds 0:3000 --obs cell_type,donor,n_counts --cache-dir obs_cache |
  awk -F'\t' '$3 == "cell_type=T cell" && $4 == "donor=donor-2" && n++ < 3' | cut -c1-120

section "synthesize a morton-hive store: t-digests per HEALPix cell (order 15, 4096 cells)"
tessera ragged synth hive --cell-order 15 --shard-order 9 --chunk-order 12 --populated 0.3 \
  --max-centroids 60 --seed 7
leaf="hive/4/3/3/1/4/2/1/3/2/1/4331421321.zarr"

section "describe the hive and its leaf"
tessera ragged info hive --list-leaves > hive.json
sed -n '/"leaves"/,$p' hive.json
tessera info "$leaf" > leaf_info.txt
head -n 30 leaf_info.txt
echo "  …"

section "verify the leaf: every node, chunk, gate and morton word"
tessera verify "$leaf" --text

section "decode one populated cell (2 ranged reads: shard index, then one inner chunk)"
for index in $(seq 1000 37 4095); do
  # Captured first: piping into `grep -q` can kill the writer with SIGPIPE, which pipefail reports.
  cell_json="$("$tessera_bin" ragged cell "$leaf" 15/h_tdigest "$index")"
  if [[ "$cell_json" != *'"rows": []'* ]]; then break; fi
done
tessera ragged cell "$leaf" 15/h_tdigest "$index" > cell.json
head -n 14 cell.json; echo "    …"; tail -n 3 cell.json

section "cast the digests to 64×64×128 tensors (one block = the whole leaf) and read them with numpy"
tessera ragged tensors "$leaf" 15/h_tdigest --block-order 9 --npy tensors --npy-single \
  --png heatmaps --png-cell-px 8 > tensors.json
sed -n '/"blocks"/,$p' tensors.json
/usr/bin/python3 -c '
import numpy as np
t, m = np.load("tensors/tensors.npy"), np.load("tensors/masks.npy")
off, gain = np.load("tensors/windows.npy")
print("tensor", t.shape, t.dtype, "| populated cells:", int((m == 2).sum()), "| bins cover", off, "to", off + gain * t.shape[-1])
print("total weight in the window:", int(t.sum()))
'
ls -l heatmaps

section "content hashes of the leaf"
tessera ragged hashes "$leaf"

section "build a hive from point observations: 20,000 points → t-digests per order-14 cell"
/usr/bin/python3 -c '
import numpy as np
rng = np.random.default_rng(5)
n = 20000
lat = -70.2 + 0.4 * rng.random(n)
lon = 10.0 + 0.5 * rng.random(n)
h = 100 + 10 * np.sin(lat * 30) + rng.normal(0, 1, n)
t = 1557800158250000000 + rng.integers(0, 10**12, n)
with open("points.csv", "w") as f:
    f.write("lat,lon,h,t\n")
    for row in zip(lat, lon, h, t):
        f.write("%.9f,%.9f,%.4f,%d\n" % row)
'
head -n 3 points.csv
tessera ragged build --input points.csv --out built --value-col h --time-col t --time-format unix-ns \
  --located --stats --cell-order 14 --shard-order 8 --delta 64 > build.json
grep -v '"combined_hash"' build.json > build_summary.json || true
head -n 20 build_summary.json; echo "  …"
built_leaf="built/$(/usr/bin/python3 -c 'import json; print(json.load(open("build.json"))["leaves"][0]["leaf"])')"

section "read the built leaf back: verify it, decode a cell with its companions, check its hashes"
tessera verify "$built_leaf" --text | tail -n 3
for index in $(seq 0 7 4095); do
  cell_json="$("$tessera_bin" ragged cell "$built_leaf" 14/h_tdigest "$index")"
  if [[ "$cell_json" != *'"rows": []'* ]]; then break; fi
done
tessera ragged cell "$built_leaf" 14/h_tdigest "$index" --companions > cell_companions.json
head -n 12 cell_companions.json; echo "    …"
tessera ragged hashes "$built_leaf" --verify

section "the same data from Python: tessera.tet, tessera.cells, tessera.ragged"
# The package assembled in the build tree; `pip install ./python` installs the same (docs/python.md).
PYTHONPATH="$ROOT/build/release/python" /usr/bin/python3 - "$leaf" <<'PY'
import sys
import numpy as np
import tessera

f = tessera.tet.open("demo.tet")
t = f["temperature"]
print(">>> f = tessera.tet.open('demo.tet'); t = f['temperature']")
print(t)
print(">>> t[0, ::60, ::120]                      # numpy; only the touched chunks are decoded")
print(t[0, ::60, ::120].round(3))
mask = f["mask"]
print(">>> f['mask'].is_view((slice(0, 90), slice(0, 90)))   # one raw chunk: a view of the mapped file")
print(mask.is_view((slice(0, 90), slice(0, 90))))
r = f.query({"dataset": "temperature", "mean": [1, 2]})
print(">>> f.query({'dataset': 'temperature', 'mean': [1, 2]})['execution']['operation_reduced_mean'][:4]")
print(r["execution"]["operation_reduced_mean"][:4])

ds = tessera.cells.open("cells_ds", cache_dir="obs_cache")
print(">>> ds = tessera.cells.open('cells_ds'); x = ds.get_batch([5, 17, 17, 2999])")
x = ds.get_batch([5, 17, 17, 2999])
print(repr(x))
print(">>> ds.obs.take([5, 17, 2999], ['cell_type', 'donor', 'n_counts'])")
print(ds.obs.take([5, 17, 2999], ["cell_type", "donor", "n_counts"]))
ds.close()

leaf = tessera.ragged.open(sys.argv[1])
print(">>> leaf = tessera.ragged.open(LEAF)")
cells = [c for c in range(0, 4096, 7) if len(leaf.read_cell("15/h_tdigest", c))]
print(f">>> leaf.read_cell('15/h_tdigest', {cells[0]})[:3]      # (mean, weight) centroids")
print(leaf.read_cell("15/h_tdigest", cells[0])[:3])
tensor, mask, (offset, gain), morton = next(iter(leaf.read_tensors("15/h_tdigest", n_bins=64)))
print(">>> tensor, mask, (offset, gain), morton = next(leaf.read_tensors('15/h_tdigest', n_bins=64))")
print("tensor", tensor.shape, tensor.dtype, "| populated cells:", int((mask == 2).sum()),
      f"| bins from {offset:.3f} by {gain:.4f} | block {tessera.ragged.to_decimal(morton)}")
PY

section "done"
echo "files are in $demo_dir"
