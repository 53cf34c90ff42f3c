#!/usr/bin/env bash
# Runs tessera's benchmarks from a Release build (docs/performance.md).
#
#   scripts/bench.sh tet-read [--size-gib N] [--repeat R] [--threads T] [--no-cli]
#       Whole-file read throughput of the .tet reader (bench/bench_tet_read.cpp) against memcpy,
#       pread and bare libzstd, then whole-array reads from Python against numpy's np.load, h5py
#       and a bare pread copy on the same data (bench/bench_tet_read_peers.py). The input files
#       (about N GiB each, default 2) and their .npy/.h5 twins are written once into
#       build/bench-data/ and reused; delete them to regenerate.
#
#   scripts/bench.sh ragged [--repeat R] [--threads T] [--cells N]
#       read_tensors sweep and read_cell on a production-geometry zagg-ragged leaf
#       (bench/bench_ragged.cpp) against bare zstd decompression of the same inner chunks.
#       The leaf (order 19, 256 inner chunks of 4096 cells, ~20 % populated) is generated
#       once into build/bench-data/ragged-hive/.
#
#   scripts/bench.sh ragged-build [--points N] [--repeat R]
#       `tessera ragged build` of N (default 10^7) random points in a 1° x 1° box at 70° S,
#       orders 19/13/9, delta 8192, on 1 and 2 threads (bench/bench_ragged_build.cpp): points/s,
#       speed-up and each run's peak RSS. The .npy input is generated once into build/bench-data/.
#
#   scripts/bench.sh ragged-granules [--points N] [--granules G] [--repeat R] [--threads T] [--smoke]
#       `ragged build --config atl06.yaml` from N points (default 4,000,000) written as G ATL06
#       granules (default 8) against the same points as .npy columns, rounds alternating
#       (bench/bench_ragged_granules.py): points/s of each and their ratio, and the peak RSS of
#       builds of G and 4·G granules. Data in build/bench-data/ragged-granules/; needs h5py.
#
#   scripts/bench.sh cells-obs [--repeat R]
#       The obs sidecar of a generated 1,000,000-cell dataset with 50 obs columns
#       (bench/bench_cells_obs.cpp): bytes read to localize 3 columns against the shard bytes,
#       and `take` of 5,000 random cells from the local cache. Data in build/bench-data/.
#
#   scripts/bench.sh cells [--repeat R] [--batches B]
#       Full-tile decode (int32 and narrow uint16) of a synthetic deltacells tile (10,000 cells x
#       38,000 genes, ~5,000 nonzeros per cell, level 19; bench/bench_cells.cpp) against bare zstd
#       decompression of the same frames, 2 decode threads against 1, and epoch batches of 5,000
#       cells over a 100-tile dataset; ratios are taken within each round. The tile and dataset
#       are generated once into build/bench-data/cells-bench/.
#
#   scripts/bench.sh tet-convert [--size-gib N] [--repeat R] [--jobs J] [--read-threads T] [--zstd LEVEL] [--out-dir DIR]
#       `tet convert` of a chunked f32 HDF5 file (about N GiB, default 2; uncompressed and gzip-1,
#       written once by h5py into build/bench-data/) against reading the same chunks with libhdf5
#       alone (bench/bench_tet_convert.cpp, driven by scripts/bench_tet_convert.sh).
#
#   scripts/bench.sh tet-xarray [--gib G] [--repeat R] [--codec raw|zstd]
#       The mean of a whole G GiB f32 `.tet` dataset (default 2) through the xarray backend with
#       Dask (`chunks={}`) against the query engine's `mean` and numpy on `.values`
#       (bench/bench_tet_xarray.py; input written once by `tessera tet synth` into build/bench-data/).
#
#   scripts/bench.sh tet-query [--size-gib N] [--median-gib M] [--repeat R] [--threads T] [--cold-rounds C]
#       Whole-process `tessera tet query … -x -q` (scalar and axis-0 mean over an N GiB f32 file,
#       default 4, raw and zstd; the scalar mean also with each read path forced) against the
#       faster of an mmap and a pread sum and of zstd-only decompression from a map and from pread
#       copies of the same payload (bench/bench_tet_query.cpp), numpy and python-zstandard, minor
#       faults per GiB, cold-cache scans against `dd iflag=direct`, plus the peak RssAnon of a
#       temp-spilled median over M GiB (default 1) with a 256 MiB budget. Driven by
#       scripts/bench_tet_query.sh; files are synthesized once into build/bench-data/tet-query/.
#
#   scripts/bench.sh python [--repeat R] [--batches B] [--tet-gib G] [--gil-tiles N]
#       The Python package against the C++ CLI, side by side (bench/bench_python.py):
#       TorchDataset batches of 5,000 cells as torch CSR against `tessera cells epoch` on the
#       `cells` benchmark's dataset; `ds[...]` of a whole raw .tet dataset (G GiB, default 1)
#       against `tessera tet cat`; two Python threads decoding tiles against one (GIL release).
#       Needs the Python build (-DTESSERA_PYTHON=ON, Debian's python3 with torch).
#
#   scripts/bench.sh remote [--repeat R] [--tet-mib M] [--epoch-cells N] [--obs-cells N] [--smoke]
#       Remote reads through an emulated network (bench/bench_remote.py): tests/python/fault_proxy.py's
#       proxy on 127.0.0.1 adding 50 ms per request and pacing 150 MB/s per connection. Plain curl
#       through it (the emulation's ceiling); ragged read_cell on fresh and warm handles in round
#       trips; `tet query` mean over an M MiB raw .tet (default 256) against curl fetching the same
#       chunk ranges in parallel; `cells epoch` over HTTP against the local directory; obs localize
#       of 3 columns of an N-cell dataset. Inputs are generated once into build/bench-data/remote/;
#       --smoke runs every figure once on tiny inputs. Needs the Python build, anndata and curl.
#
#   scripts/bench.sh remote-write [--repeat R] [--tet-mib M] [--cells N] [--parallel P] [--smoke]
#       Remote writes through an emulated network (bench/bench_remote_write.py): the S3 emulator of
#       the tests with 50 ms per request and 150 MB/s per connection for request bodies. The upload
#       of `tet synth s3://…` (an M MiB raw .tet, default 256) against boto3's upload_file of the
#       same file with the same part size and P parts in flight (default 8); the upload of `cells
#       convert --output s3://…` (N cells, default 100,000) against boto3 put_object of the same
#       files on P threads; boto3 without emulation as the emulator's ceiling. Inputs are kept in
#       build/bench-data/remote-write/. Needs anndata and boto3.
#
#   scripts/bench.sh scale-out [--repeat R] [--rows N] [--cells C] [--only ragged cells] [--smoke]
#       Distributed writers on a Dask LocalCluster (bench/bench_scale_out.py): ragged.build(...,
#       client=) of N random points (default 3,000,000) and cells.convert(..., client=) of a random
#       h5ad of C cells (default 200,000) with two worker processes against one (one thread each),
#       the speed-up against the target 1.7; beside them the machine's limit (the same split run
#       by two CLIs one after the other and side by side) and the single writer on one thread and
#       on all cores. Needs python3-distributed and anndata.
#
#   scripts/bench.sh cells-peers [--repeat R] [--cells N] [--genes G] [--batches B] [--smoke] [--only ...]
#       tessera.cells against anndata and h5py on the same data, side by side (bench/bench_cells_peers.py):
#       random 5,000-cell batches from `get_batch` against `read_h5ad(..., backed="r")` with sorted
#       fancy indexing and against h5py CSR row gathering; a 50-gene subset batch against full rows;
#       `to_anndata` of every cell against `anndata.read_h5ad` of the source. A random sparse AnnData
#       of N cells x G genes (default 100,000 x 2,000) is written and converted once into
#       build/bench-data/cells-peers/; --smoke runs every figure once on tiny inputs. Needs the Python
#       build, anndata and h5py.
#
# Environment: BUILD_DIR (default build/release), JOBS (parallel compile jobs, default 2).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$root/build/release}"
data_dir="$root/build/bench-data"
jobs="${JOBS:-2}"

usage() {
  sed -n '2,/^# Environment/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# Configures a Release tree when none exists, then (re)builds just the benchmark target.
build() {
  local target="$1"
  if [ ! -f "$build_dir/build.ninja" ] && [ ! -f "$build_dir/Makefile" ]; then
    local generator=()
    if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
    cmake -S "$root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_FUZZ=OFF -DTESSERA_BUILD_BENCH=ON \
      -DTESSERA_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3
  fi
  cmake --build "$build_dir" --target "$target" -j "$jobs"
}

[ $# -ge 1 ] || usage
command="$1"
shift
case "$command" in
  tet-read)
    build bench_tet_read
    build _tessera
    mkdir -p "$data_dir"
    "$build_dir/bench/bench_tet_read" --data-dir "$data_dir" "$@"
    # Then the peers on the same files: numpy, h5py and tessera's own Python reads.
    peer_args=()
    for arg in "$@"; do [ "$arg" = --no-cli ] || peer_args+=("$arg"); done
    PYTHONPATH="$build_dir/python${PYTHONPATH:+:$PYTHONPATH}" exec /usr/bin/python3 \
      "$root/bench/bench_tet_read_peers.py" --data-dir "$data_dir" "${peer_args[@]}"
    ;;
  ragged)
    build bench_ragged
    mkdir -p "$data_dir"
    exec "$build_dir/bench/bench_ragged" --data-dir "$data_dir" "$@"
    ;;
  ragged-build)
    build bench_ragged_build
    build tessera
    mkdir -p "$data_dir"
    exec "$build_dir/bench/bench_ragged_build" --data-dir "$data_dir" --cli "$build_dir/tessera" "$@"
    ;;
  cells)
    build bench_cells
    mkdir -p "$data_dir"
    exec "$build_dir/bench/bench_cells" --data-dir "$data_dir" "$@"
    ;;
  cells-obs)
    build bench_cells_obs
    mkdir -p "$data_dir"
    exec "$build_dir/bench/bench_cells_obs" --data-dir "$data_dir" "$@"
    ;;
  tet-convert)
    build bench_tet_convert
    BUILD_DIR="$build_dir" exec "$root/scripts/bench_tet_convert.sh" "$@"
    ;;
  tet-query)
    build bench_tet_query
    build tessera
    BUILD_DIR="$build_dir" exec "$root/scripts/bench_tet_query.sh" "$@"
    ;;
  python)
    build bench_cells
    build _tessera
    mkdir -p "$data_dir"
    if [ ! -f "$data_dir/cells-bench/dataset/manifest.json" ]; then
      # Generates the tile and the 100-tile dataset (one quick round).
      "$build_dir/bench/bench_cells" --data-dir "$data_dir" --repeat 1 --batches 1 >/dev/null
    fi
    PYTHONPATH="$build_dir/python${PYTHONPATH:+:$PYTHONPATH}" exec /usr/bin/python3 "$root/bench/bench_python.py" \
      --data-dir "$data_dir/python" --cells-dataset "$data_dir/cells-bench/dataset" "$@"
    ;;
  remote)
    build tessera
    build _tessera
    mkdir -p "$data_dir"
    PYTHONPATH="$build_dir/python${PYTHONPATH:+:$PYTHONPATH}" exec /usr/bin/python3 "$root/bench/bench_remote.py" \
      --data-dir "$data_dir/remote" --cli "$build_dir/tessera" "$@"
    ;;
  remote-write)
    build tessera
    mkdir -p "$data_dir"
    exec /usr/bin/python3 "$root/bench/bench_remote_write.py" --data-dir "$data_dir/remote-write" \
      --cli "$build_dir/tessera" "$@"
    ;;
  ragged-granules)
    build tessera
    mkdir -p "$data_dir"
    exec /usr/bin/python3 "$root/bench/bench_ragged_granules.py" --data-dir "$data_dir/ragged-granules" \
      --cli "$build_dir/tessera" "$@"
    ;;
  tet-xarray)
    build tessera
    build _tessera
    PATH="$build_dir:$PATH" PYTHONPATH="$build_dir/python${PYTHONPATH:+:$PYTHONPATH}" \
      exec /usr/bin/python3 "$root/bench/bench_tet_xarray.py" "$@"
    ;;
  scale-out)
    build tessera
    build _tessera
    PYTHONPATH="$build_dir/python${PYTHONPATH:+:$PYTHONPATH}" exec /usr/bin/python3 "$root/bench/bench_scale_out.py" "$@"
    ;;
  cells-peers)
    build tessera
    build _tessera
    mkdir -p "$data_dir"
    PYTHONPATH="$build_dir/python${PYTHONPATH:+:$PYTHONPATH}" exec /usr/bin/python3 "$root/bench/bench_cells_peers.py" \
      --data-dir "$data_dir/cells-peers" --cli "$build_dir/tessera" "$@"
    ;;
  -h | --help) usage ;;
  *)
    echo "bench.sh: unknown benchmark '$command'" >&2
    usage
    ;;
esac
