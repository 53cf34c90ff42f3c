#!/usr/bin/env bash
# A short tour of tessera: builds the CLI (Release, build/release), then in a fresh temporary
# folder synthesizes a four-dataset .tet file, prints its description, verifies it in depth,
# exports a strided selection of one dataset to .npy and reads that back with numpy.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"

"$ROOT/scripts/bootstrap.sh"
section "build tessera (Release)"
configure_release >/dev/null
cmake --build build/release -j"$JOBS" --target tessera
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
  echo "$line"
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

section "done"
echo "files are in $demo_dir"
