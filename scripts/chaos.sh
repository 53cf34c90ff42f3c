#!/usr/bin/env bash
# The reliability campaign (docs/reliability.md, "The chaos campaign"): every writer and reader
# of the `tessera` CLI under hostile conditions — killed part-way, read while replaced, out of
# disk space, refused by a read-only directory, racing another writer, fed hostile documents.
#
#   scripts/chaos.sh [--smoke] [--tessera PATH] [--work DIR] [--seed N] [--only CATEGORIES]
#       --smoke        a short pass over every category (under a minute on 2 cores; run by
#                      scripts/test.sh stage 1); without it the full campaign (minutes): at
#                      least 1,000 kills over the writers, 1,000 racing reads per format
#       --tessera PATH the CLI to exercise (default build/release/tessera)
#       --work DIR     scratch directory, kept afterwards (default: a temporary directory,
#                      removed at the end)
#       --seed N       seeds the random kill delays and choices (default 1); timing still varies
#       --only LIST    comma-separated categories to run: kill,race,disk,readonly,concurrent,hostile
#
# Prints a Markdown table, one row per category, writer and format, counting runs, crashes
# (an exit by a signal the campaign did not send, or sanitizer/abort text on stderr), hangs
# (a run that outlives its timeout), torn outputs or reads (neither the old nor the new
# content), lost files (a committed output gone), leftovers (writers' temporaries left beside
# the output; reported, not failed) and failures (any other unexpected outcome). The details
# of the first findings follow the table. Exit status: 0 when nothing but leftovers was found,
# 1 otherwise, 2 for a usage error.
set -uo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
CHAOS_DIR="$ROOT/scripts/chaos"
# shellcheck source=scripts/chaos/lib.sh
source "$CHAOS_DIR/lib.sh"
# shellcheck source=scripts/chaos/kill.sh
source "$CHAOS_DIR/kill.sh"
# shellcheck source=scripts/chaos/race.sh
source "$CHAOS_DIR/race.sh"
# shellcheck source=scripts/chaos/mounts.sh
source "$CHAOS_DIR/mounts.sh"
# shellcheck source=scripts/chaos/hostile.sh
source "$CHAOS_DIR/hostile.sh"

usage() {
  sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

SMOKE=0
TESSERA="$ROOT/build/release/tessera"
WORK=""
SEED=1
ONLY="kill,race,disk,readonly,concurrent,hostile"
INTERNAL_MOUNTS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) SMOKE=1; shift ;;
    --tessera) [ $# -ge 2 ] || usage; TESSERA=$2; shift 2 ;;
    --work) [ $# -ge 2 ] || usage; WORK=$2; shift 2 ;;
    --seed) [ $# -ge 2 ] || usage; SEED=$2; shift 2 ;;
    --only) [ $# -ge 2 ] || usage; ONLY=$2; shift 2 ;;
    --internal-mounts) INTERNAL_MOUNTS=1; shift ;;  # the re-run inside a mount namespace
    -h|--help) usage ;;
    *) echo "chaos.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ "$SEED" =~ ^[0-9]+$ ]] || { echo "chaos.sh: --seed '$SEED' is not a non-negative number" >&2; exit 2; }
for c in ${ONLY//,/ }; do
  case "$c" in kill|race|disk|readonly|concurrent|hostile) ;; *) echo "chaos.sh: unknown category '$c'" >&2; usage ;; esac
done
if [ ! -x "$TESSERA" ]; then
  echo "chaos.sh: $TESSERA is not an executable (build it, or pass --tessera PATH)" >&2
  exit 2
fi
TESSERA="$(cd "$(dirname "$TESSERA")" && pwd -P)/$(basename "$TESSERA")"
wants() { [[ ",$ONLY," == *",$1,"* ]]; }

# The sizes of each category.
if [ "$SMOKE" -eq 1 ]; then
  TIMED_KILLS=1 RACE_READS=20 CONC_ROUNDS=1 FULL_FREE=(16384) HOSTILE_TIMEOUT=10 CSV_ROWS=50000
  SYNTH_SPEC=(--dataset t:f32:16x256x256:8x128x128:zstd:1 --dataset ids:u32:100000:20000)
else
  TIMED_KILLS=75 RACE_READS=1000 CONC_ROUNDS=10 FULL_FREE=(0 4096 65536 1048576) HOSTILE_TIMEOUT=60 CSV_ROWS=150000
  SYNTH_SPEC=(--dataset t:f32:32x256x256:8x128x128:zstd:1 --dataset ids:u32:200000:20000)
fi
RANDOM=$SEED
export SOURCE_DATE_EPOCH=1700000000
CELLS_ARGS=(--tile-size 150 --chunks 2 --workers 2 --threads 1 --quiet)
BUILD_ARGS=(--value-col value --cell-order 14 --shard-order 8 --chunk-order 11 --stats --delta 64 --threads 2)

# ---- the mount categories, inside `unshare -m` ---------------------------------------------
if [ "$INTERNAL_MOUNTS" -eq 1 ]; then
  # shellcheck source=/dev/null
  source "$WORK/fixtures.env"
  if wants disk; then category_full_disk; fi
  if wants readonly; then category_read_only; fi
  exit 0
fi

KEEP_WORK=1
if [ -z "$WORK" ]; then WORK="$(mktemp -d "${TMPDIR:-/tmp}/tessera-chaos.XXXXXX")"; KEEP_WORK=0; fi
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd -P)"
EVENTS="$WORK/events.tsv" FINDINGS="$WORK/findings.md" NOTES="$WORK/notes.md"
: >"$EVENTS"; : >"$FINDINGS"; : >"$NOTES"
cleanup() {
  local pid
  for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
  if [ "$KEEP_WORK" -eq 0 ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- fixtures -------------------------------------------------------------------------------
FX="$WORK/fx"
PY_NOTE="needs /usr/bin/python3 with numpy, scipy and h5py"
make_fixtures() {
  section "fixtures"
  local t0 ok=1
  t0="$(now)"
  mkdir -p "$FX"
  fx() { "$@" >/dev/null 2>"$FX/fixture.err" || { echo "chaos.sh: fixture failed: $*" >&2; cat "$FX/fixture.err" >&2; ok=0; }; }
  fx "$TESSERA" tet synth "$FX/A.tet" "${SYNTH_SPEC[@]}" --seed 1
  fx "$TESSERA" tet synth "$FX/B.tet" "${SYNTH_SPEC[@]}" --seed 2
  fx "$TESSERA" tet synth "$FX/small.tet" --dataset t:f32:4x64x64:2x64x64 --seed 3
  fx "$TESSERA" tet synth "$FX/medium.tet" --dataset t:f32:16x128x128:8x64x64:zstd:1 --seed 4
  fx "$TESSERA" tet cat "$FX/small.tet" t --out "$FX/small.npy"
  fx "$TESSERA" tet cat "$FX/A.tet" ids --out "$FX/ids.npy"
  TET_NO_QUERY_HISTORY=1 fx "$TESSERA" tet query '{"dataset":"ids","spill":"ids_spill.bin"}' -t "$FX/A.tet" -x -q
  local i
  for i in 1 2 3 4 5; do
    TET_QUERY_HISTORY_FILE="$FX/history.jsonl" TET_QUERY_HISTORY_MAX=10000 \
      fx "$TESSERA" tet query "{\"dataset\":\"ids\",\"max\":[],\"selection\":[{\"start\":$i}]}" -t "$FX/A.tet" -x -q
  done
  fx "$TESSERA" tet export "$FX/B.tet" "$FX/B.zarr"
  # A history footer whose JSON no longer parses: `tet repair --apply footer_invalid` fixes it.
  local f size len
  for f in A medium; do
    size=$(stat -c %s "$FX/$f.tet")
    len=$(tail -c 16 "$FX/$f.tet" | head -c 8 | od -An -tu8 | tr -d ' ')
    cp "$FX/$f.tet" "$FX/bad_footer_$f.tet"
    printf 'X' | dd of="$FX/bad_footer_$f.tet" bs=1 seek=$((size - 16 - len)) conv=notrunc status=none
  done
  mv "$FX/bad_footer_A.tet" "$FX/bad_footer.tet"
  mv "$FX/bad_footer_medium.tet" "$FX/bad_footer_small.tet"
  # Point observations: the same positions in a.csv and b.csv (so the same leaves), other values.
  for i in 1 2; do
    awk -v s="$i" -v n="$CSV_ROWS" 'BEGIN { srand(7); print "lat,lon,value"
      for (k = 0; k < n; k++) printf "%.9f,%.9f,%.6f\n", -70.3 + 0.6 * rand(), 9.7 + 0.6 * rand(), (k * 0.6180339887 * s * 100) % 100 }' \
      >"$FX/$( [ "$i" -eq 1 ] && echo a || echo b).csv"
  done
  "$TESSERA" ragged build --input "$FX/a.csv" --out "$FX/storeA" "${BUILD_ARGS[@]}" >"$FX/storeA.json" 2>"$FX/fixture.err" || ok=0
  fx "$TESSERA" ragged build --input "$FX/b.csv" --out "$FX/storeB" "${BUILD_ARGS[@]}"
  # The leaf with the most cells, and one of its populated cells.
  FX_LEAF="$(awk '/"leaf":/ { gsub(/[",]/, "", $2); leaf = $2 } /"cells_with_data":/ && leaf != "" {
      gsub(/,/, "", $2); if ($2 + 0 > best) { best = $2 + 0; pick = leaf } leaf = "" } END { print pick }' "$FX/storeA.json")"
  FX_CELL=0
  for i in $(seq 0 97 4095); do
    # Captured, not piped into `grep -q`: under pipefail an early grep exit fails the pipeline.
    cell_json="$("$TESSERA" ragged cell "$FX/storeA/$FX_LEAF" 14/h_tdigest "$i" 2>/dev/null || true)"
    if [[ "$cell_json" == *'"morton": "'* ]]; then FX_CELL=$i; break; fi
  done
  if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null; then
    /usr/bin/python3 - "$FX" <<'PY' || ok=0
import sys, h5py, numpy as np
for s in (1, 2):
    r = np.random.default_rng(s)
    with h5py.File(f"{sys.argv[1]}/src{s}.h5", "w") as f:
        f.create_dataset("grp/f32", data=r.standard_normal((64, 128, 128)).astype("f4"), chunks=(8, 64, 64))
        f.create_dataset("i32", data=r.integers(0, 1000, (200000,)).astype("i4"), chunks=(20000,))
PY
    if /usr/bin/python3 -c 'import netCDF4' 2>/dev/null; then
      /usr/bin/python3 - "$FX" <<'PY' || ok=0
import sys, netCDF4, numpy as np
r = np.random.default_rng(2)
with netCDF4.Dataset(f"{sys.argv[1]}/src2.nc", "w") as f:
    f.createDimension("time", 64); f.createDimension("y", 128); f.createDimension("x", 128)
    v = f.createVariable("temp", "f4", ("time", "y", "x"), chunksizes=(8, 64, 64))
    v[:] = r.standard_normal((64, 128, 128)).astype("f4")
PY
    fi
    if /usr/bin/python3 -c 'import scipy' 2>/dev/null; then
      mkdir -p "$FX/tenxA" "$FX/tenxB"
      fx /usr/bin/python3 "$ROOT/tests/cells/h5ad_fixtures.py" tenx "$FX/tenxA" --cells 3000 --genes 300 --splits 3 --seed 5
      fx /usr/bin/python3 "$ROOT/tests/cells/h5ad_fixtures.py" tenx "$FX/tenxB" --cells 3000 --genes 300 --splits 3 --seed 6
      fx "$TESSERA" cells convert --10x-h5 "$FX/tenxA/part_*.h5" --output "$FX/dsA" "${CELLS_ARGS[@]}"
      fx "$TESSERA" cells convert --10x-h5 "$FX/tenxB/part_*.h5" --output "$FX/dsB" "${CELLS_ARGS[@]}"
    fi
  fi
  declare -p FX FX_LEAF FX_CELL PY_NOTE EVENTS FINDINGS NOTES >"$WORK/fixtures.env"
  echo "fixtures in $(seconds_since "$t0") s (leaf $FX_LEAF, cell $FX_CELL)"
  [ "$ok" -eq 1 ]
}

# ---- the mount categories -------------------------------------------------------------------
category_mounts() {
  wants disk || wants readonly || return 0
  local args=(--internal-mounts --tessera "$TESSERA" --work "$WORK" --seed "$SEED" --only "$ONLY")
  if [ "$SMOKE" -eq 1 ]; then args+=(--smoke); fi
  if [ "$(id -u)" -eq 0 ] && unshare -m --propagation private true 2>/dev/null; then
    unshare -m --propagation private bash "${BASH_SOURCE[0]}" "${args[@]}"
  else
    if wants disk; then skip "full disk" all "needs root and unshare -m to mount a small tmpfs"; fi
    if wants readonly; then
      if [ "$(id -u)" -ne 0 ]; then category_read_only
      else skip "read-only" all "root bypasses permissions and unshare -m is not available"; fi
    fi
  fi
}

# ---- the campaign ---------------------------------------------------------------------------
T0="$(now)"
echo "chaos: $([ "$SMOKE" -eq 1 ] && echo smoke || echo full) campaign, seed $SEED, $TESSERA, work $WORK"
if ! make_fixtures; then echo "chaos.sh: the fixtures could not be made" >&2; exit 1; fi
# timed NAME FUNCTION: runs a category and prints its wall time.
timed() {
  local t
  t="$(now)"
  "$2"
  echo "  ($1: $(seconds_since "$t") s)"
}
if wants kill; then timed "kill loops" category_kill; fi
if wants race; then timed "racing reads" category_race; fi
timed "full disk and read-only" category_mounts
if wants concurrent; then timed "concurrent writers" category_concurrent; fi
if wants hostile; then timed "hostile documents" category_hostile; fi

section "chaos campaign: $([ "$SMOKE" -eq 1 ] && echo smoke || echo full), seed $SEED, $(seconds_since "$T0") s"
rc=0
print_table || rc=1
echo "kills: $(awk -F'\t' '$1 ~ /^kill: / && $3 == "runs"' "$EVENTS" | wc -l)," \
  "racing reads: $(awk -F'\t' '$1 == "race: reads" && $3 == "runs" { n[$2]++ } END { for (f in n) printf "%s %d ", f, n[f] }' "$EVENTS")"
if [ -s "$NOTES" ]; then echo; cat "$NOTES"; fi
if [ -s "$FINDINGS" ]; then
  echo
  echo "first findings$([ "$KEEP_WORK" -eq 1 ] && echo " (all of them in $FINDINGS)"):"
  awk '/^### / { n++ } n <= 8' "$FINDINGS"
fi
if [ "$rc" -ne 0 ]; then echo "chaos: FAILED"; else echo "chaos: OK"; fi
exit "$rc"
