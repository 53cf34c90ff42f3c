#!/usr/bin/env bash
# The `tet-convert` benchmark, run by `scripts/bench.sh tet-convert` after it has built
# bench_tet_convert (docs/performance.md). Writes the inputs once with h5py (/usr/bin/python3)
# into build/bench-data/ and reuses them afterwards (delete them to regenerate):
#
#   tet-convert-f32-<R>x1024x1024-raw.h5     dataset `v`, f32, chunks 16 x 128 x 128 (1 MiB), no filter
#   tet-convert-f32-<R>x1024x1024-gzip1.h5   the same values, gzip level 1
#
# Values: a random walk along the last axis (seeded), so gzip finds the redundancy of real
# smooth fields rather than noise. R = size in GiB x 256 (512 for the default 2 GiB).
#
# Options: --size-gib N (default 2), --repeat R (5), --jobs J (2), --read-threads T (1),
#          --zstd LEVEL (zstd output; the baseline reads and compresses on the same threads),
#          --out-dir DIR (build/bench-data/tet-convert-out; a tmpfs such as /dev/shm leaves the
#          device's writeback out of the convert pass).
# Environment: BUILD_DIR (default build/release).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$root/build/release}"
data_dir="$root/build/bench-data"
size_gib=2
bench_args=()
out_dir="$data_dir/tet-convert-out"

while [ $# -gt 0 ]; do
  case "$1" in
    --size-gib) size_gib="$2"; shift 2 ;;
    --repeat | --jobs | --read-threads | --zstd) bench_args+=("$1" "$2"); shift 2 ;;
    --out-dir) out_dir="$2"; shift 2 ;;
    *) echo "bench_tet_convert.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

# Rows of 1024 x 1024 f32 (4 MiB each), a whole number of 16-row chunk layers.
rows=$(awk -v g="$size_gib" 'BEGIN { r = int(g * 256 / 16 + 0.5) * 16; if (r < 16) r = 16; print r }')
mkdir -p "$data_dir" "$out_dir"

# make_input PATH none|gzip1: writes PATH with h5py unless it is already there.
make_input() {
  local path="$1" filter="$2"
  if [ -f "$path" ]; then return; fi
  echo "writing $path with h5py ..." >&2
  /usr/bin/python3 - "$path" "$filter" "$rows" <<'EOF'
import os, sys
import numpy as np, h5py
path, filter_name, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
options = {'compression': 'gzip', 'compression_opts': 1} if filter_name == 'gzip1' else {}
rng = np.random.default_rng(1)
with h5py.File(path + '.part', 'w') as f:
    v = f.create_dataset('v', shape=(rows, 1024, 1024), dtype='f4', chunks=(16, 128, 128), **options)
    for r in range(0, rows, 16):
        v[r:r + 16] = np.cumsum(rng.standard_normal((16, 1024, 1024), dtype=np.float32), axis=2)
os.rename(path + '.part', path)
EOF
}

raw="$data_dir/tet-convert-f32-${rows}x1024x1024-raw.h5"
gzip1="$data_dir/tet-convert-f32-${rows}x1024x1024-gzip1.h5"
make_input "$raw" none
make_input "$gzip1" gzip1
ls -l "$raw" "$gzip1" | awk '{ printf "%s  %.2f GB\n", $NF, $5 / 1e9 }'

exec "$build_dir/bench/bench_tet_convert" --out-dir "$out_dir" ${bench_args[@]+"${bench_args[@]}"} \
  "raw=$raw" "gzip1=$gzip1"
