# Category 1, kill loops (sourced by scripts/chaos.sh): every writer of the CLI runs over its
# committed old output and is killed part-way; afterwards the output name must hold the whole
# old content or the whole new content (checksum equal to a complete run) and pass `verify`.
# shellcheck shell=bash

# A writer is described by these variables, set before kill_loop:
#   K_OUT      the output name
#   K_RESTORE  function that puts the old state back at K_OUT (old may be "absent")
#   K_CHECK    function judging the state after a run (default check_old_new)
#   K_VERIFY   function PATH that verifies a complete output (0 = passes)
#   K_TEMPS    directory scanned for writers' temporaries (default: K_OUT's directory)
#   K_ENV      extra environment of the writer
#   K_OLD_BAD  1 when the old content is not supposed to verify (a file repair fixes)
K_OUT="" K_RESTORE="" K_CHECK="" K_VERIFY="" K_TEMPS="" K_OLD_BAD=0
K_ENV=()

verify_tet() { "$TESSERA" tet verify "$1" -q >/dev/null 2>&1; }
verify_cells() { "$TESSERA" cells verify "$1" >/dev/null 2>&1; }
verify_zarr() { "$TESSERA" ragged verify "$1" >/dev/null 2>&1; }
verify_none() { return 0; }

# check_old_new CATEGORY FORMAT: the output is the old content or the new one, and verifies.
check_old_new() {
  local cat=$1 fmt=$2 s
  s="$(nsum "$K_OUT")"
  if [ "$s" = "-" ]; then
    if [ "$OLD_SUM" != "-" ]; then finding "$cat" "$fmt" lost "$CMD_TEXT: $K_OUT is gone ($KILL_HOW)"; fi
    return
  fi
  if [ "$s" != "$OLD_SUM" ] && [ "$s" != "$NEW_SUM" ]; then
    finding "$cat" "$fmt" torn "$CMD_TEXT: $K_OUT holds neither the old nor the new content ($KILL_HOW)"
    cp -a "$K_OUT" "$WORK/evidence-$(date +%s%N)" 2>/dev/null || true
    return
  fi
  if [ "$s" = "$OLD_SUM" ] && [ "$K_OLD_BAD" -eq 1 ]; then return; fi
  if ! "$K_VERIFY" "$K_OUT"; then
    finding "$cat" "$fmt" failures "$CMD_TEXT: $K_OUT matches a complete output but does not verify ($KILL_HOW)"
  fi
}

# check_committed_leaves CATEGORY FORMAT: ragged stores commit leaf by leaf; every committed
# leaf must be whole (the old or the new leaf of its shard) and verify, and no leaf that
# existed before may be missing. LEAVES_OLD / LEAVES_NEW map a leaf's path to its checksum.
declare -A LEAVES_OLD=() LEAVES_NEW=()
check_committed_leaves() {
  local cat=$1 fmt=$2 leaf rel s
  for rel in "${!LEAVES_OLD[@]}"; do
    if [ ! -d "$K_OUT/$rel" ]; then finding "$cat" "$fmt" lost "$CMD_TEXT: committed leaf $rel is gone ($KILL_HOW)"; fi
  done
  while IFS= read -r -d '' leaf; do
    rel="${leaf#"$K_OUT"/}"
    if is_temp_name "${leaf##*/}"; then continue; fi
    s="$(nsum "$leaf")"
    if [ "$s" != "${LEAVES_OLD[$rel]:-x}" ] && [ "$s" != "${LEAVES_NEW[$rel]:-x}" ]; then
      finding "$cat" "$fmt" torn "$CMD_TEXT: leaf $rel is neither the old nor the new leaf ($KILL_HOW)"
    elif ! verify_zarr "$leaf"; then
      finding "$cat" "$fmt" failures "$CMD_TEXT: leaf $rel does not verify ($KILL_HOW): $("$TESSERA" ragged verify "$leaf" --text 2>&1 | grep FAIL | head -n 2)"
    fi
  done < <(find "$K_OUT" -name '*.zarr' -type d -prune -print0 2>/dev/null)
}

check_committed_leaves_ref() { leaves_of "$K_OUT" LEAVES_NEW; }

# leaves_of STORE ARRAY: fills the associative array with STORE's committed leaves.
leaves_of() {
  local -n into=$2
  local leaf
  into=()
  while IFS= read -r -d '' leaf; do
    is_temp_name "${leaf##*/}" || into["${leaf#"$1"/}"]="$(nsum "$leaf")"
  done < <(find "$1" -name '*.zarr' -type d -prune -print0 2>/dev/null)
}

# after_run CATEGORY FORMAT SIGNAL: judges one interrupted run: how it ended, what it left.
after_run() {
  local cat=$1 fmt=$2 sig=$3 n
  note "$cat" "$fmt" runs
  if classify "$cat" "$fmt" "$RC" "$RUN_ERR" KILL "$sig"; then
    case "$RC" in
      0|137) ;;
      1|130|143) if [ "$sig" = KILL ]; then finding "$cat" "$fmt" failures "$CMD_TEXT: exit $RC ($KILL_HOW)" "$RUN_ERR"; fi ;;
      *) finding "$cat" "$fmt" failures "$CMD_TEXT: exit $RC ($KILL_HOW)" "$RUN_ERR" ;;
    esac
  fi
  "$K_CHECK" "$cat" "$fmt"
  n="$(temps_in "${K_TEMPS:-$(dirname "$K_OUT")}")"
  if [ "$n" -gt 0 ]; then note "$cat" "$fmt" leftovers; fi
  remove_temps "${K_TEMPS:-$(dirname "$K_OUT")}"
}

# kill_plan TRACE: "point:n" lines — every pass of a point passed up to 12 times, else the
# first, second, last and second-to-last passes and passes spread between (smoke: first, last).
kill_plan() {
  sort "$1" | uniq -c | while read -r count point; do
    local ns=() n
    if [ "$SMOKE" -eq 1 ]; then ns=(1 "$count")
    elif [ "$count" -le 12 ]; then mapfile -t ns < <(seq 1 "$count")
    else ns=(1 2 $((count - 1)) "$count"); for n in 1 2 3 4 5 6 7 8; do ns+=($((count * n / 9))); done
    fi
    printf '%s\n' "${ns[@]}" | sort -nu | while read -r n; do
      if [ "$n" -ge 1 ] && [ "$n" -le "$count" ]; then echo "$point:$n"; fi
    done
  done
}

# pick_smoke: the whole plan, or in a smoke run one of its lines chosen at random.
pick_smoke() {
  local lines=()
  mapfile -t lines
  if [ "$SMOKE" -eq 1 ] && [ ${#lines[@]} -gt 1 ]; then
    printf '%s\n' "${lines[RANDOM % ${#lines[@]}]}"
  else
    printf '%s\n' "${lines[@]}"
  fi
}

# timed_kill SIGNAL DELAY CMD...: starts CMD, sends SIGNAL after DELAY seconds, waits for it
# (a process still alive 30 s after an INT or TERM is a hang and gets SIGKILL). Sets RC, HUNG.
timed_kill() {
  local sig=$1 delay=$2 pid i
  shift 2
  CMD_TEXT="$(printf '%q ' "${K_ENV[@]}" "$@")"
  RUN_OUT="$KDIR/out" RUN_ERR="$KDIR/err"
  env --default-signal=INT,TERM "${K_ENV[@]}" "$@" >"$RUN_OUT" 2>"$RUN_ERR" &
  pid=$!
  sleep "$delay"
  kill -s "$sig" "$pid" 2>/dev/null || true
  HUNG=0
  for ((i = 0; i < 600; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$pid" 2>/dev/null; then HUNG=1; kill -KILL "$pid" 2>/dev/null || true; fi
  RC=0
  { wait "$pid"; } 2>/dev/null || RC=$?
}

# kill_loop FORMAT NAME CMD...: the reference run (traced), then one run killed at each planned
# test point, then timed kills (SIGKILL, every fifth SIGINT and every fifth SIGTERM) after
# random delays up to 1.2 times the reference run's duration.
kill_loop() {
  local fmt=$1 name=$2 cat="kill: $2" t0 dur point i sig delay
  shift 2
  KDIR="$WORK/kill/$(tr -c 'a-zA-Z0-9\n' _ <<<"$fmt-$name")"
  mkdir -p "$KDIR"
  K_CHECK=${K_CHECK:-check_old_new}
  "$K_RESTORE"
  OLD_SUM="$(nsum "$K_OUT")"
  RUN_ENV=("TESSERA_TEST_TRACE=$KDIR/trace" "${K_ENV[@]}")
  rm -f "$KDIR/trace"
  t0="$(now)"
  run_cmd 300 "$KDIR/out" "$KDIR/err" "$@"
  dur="$(seconds_since "$t0")"
  RUN_ENV=()
  if [ "$RC" -ne 0 ]; then
    note "$cat" "$fmt" runs
    classify "$cat" "$fmt" "$RC" "$RUN_ERR" && finding "$cat" "$fmt" failures "$CMD_TEXT: reference run failed (exit $RC)" "$RUN_ERR"
    K_CHECK="" K_OLD_BAD=0 K_TEMPS="" K_ENV=()
    return
  fi
  NEW_SUM="$(nsum "$K_OUT")"
  if declare -F "${K_CHECK}_ref" >/dev/null; then "${K_CHECK}_ref"; fi
  echo "  $cat ($fmt): reference run ${dur} s, traced points: $(sort "$KDIR/trace" 2>/dev/null | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
  while IFS= read -r point; do
    "$K_RESTORE"
    KILL_HOW="TESSERA_TEST_KILL_AT=$point"
    RUN_ENV=("TESSERA_TEST_KILL_AT=$point" "${K_ENV[@]}")
    run_cmd 300 "$KDIR/out" "$KDIR/err" "$@"
    RUN_ENV=()
    after_run "$cat" "$fmt" KILL
  done < <(if [ -f "$KDIR/trace" ]; then kill_plan "$KDIR/trace" | pick_smoke; fi)
  for ((i = 1; i <= TIMED_KILLS; i++)); do
    "$K_RESTORE"
    case $((i % 5)) in 3) sig=INT ;; 4) sig=TERM ;; *) sig=KILL ;; esac
    delay="$(rand_delay "$(awk -v d="$dur" 'BEGIN { print d * 1.2 + 0.002 }')")"
    KILL_HOW="SIG$sig after ${delay} s"
    timed_kill "$sig" "$delay" "$@" 2>/dev/null  # (bash reports the killed job on stderr)
    after_run "$cat" "$fmt" "$sig"
  done
  K_CHECK="" K_OLD_BAD=0 K_TEMPS="" K_ENV=()
}

# ---- the writers ----------------------------------------------------------------------------

restore_file() { rm -rf "$K_OUT"; cp "$K_OLD" "$K_OUT"; }
restore_absent() { rm -rf "$K_OUT"; }
restore_dir() { rm -rf "$K_OUT"; cp -a "$K_OLD" "$K_OUT"; }

category_kill() {
  section "kill loops"
  local d="$WORK/kill/out"
  mkdir -p "$d"
  # tet synth over a committed file.
  K_OUT="$d/synth.tet" K_OLD="$FX/A.tet" K_RESTORE=restore_file K_VERIFY=verify_tet
  kill_loop tet "tet synth" "$TESSERA" tet synth "$K_OUT" "${SYNTH_SPEC[@]}" --seed 2
  # tet convert from HDF5, NetCDF and Zarr sources over a committed file.
  if [ -f "$FX/src2.h5" ]; then
    K_OUT="$d/conv_h5.tet" K_OLD="$FX/A.tet" K_RESTORE=restore_file K_VERIFY=verify_tet
    kill_loop tet "tet convert .h5" "$TESSERA" tet convert "$FX/src2.h5" "$K_OUT" --jobs 2
  else skip "kill: tet convert .h5" tet "$PY_NOTE"; fi
  if [ -f "$FX/src2.nc" ]; then
    K_OUT="$d/conv_nc.tet" K_OLD="$FX/A.tet" K_RESTORE=restore_file K_VERIFY=verify_tet
    kill_loop tet "tet convert .nc" "$TESSERA" tet convert "$FX/src2.nc" "$K_OUT"
  else skip "kill: tet convert .nc" tet "needs /usr/bin/python3 with netCDF4"; fi
  K_OUT="$d/conv_zarr.tet" K_OLD="$FX/A.tet" K_RESTORE=restore_file K_VERIFY=verify_tet
  kill_loop tet "tet convert zarr" "$TESSERA" tet convert "$FX/B.zarr" "$K_OUT"
  # tet export into a new directory (the root zarr.json, written last, commits it).
  K_OUT="$d/export.zarr" K_RESTORE=restore_absent K_CHECK=check_export K_VERIFY=verify_zarr K_TEMPS="$d"
  kill_loop zarr "tet export" "$TESSERA" tet export "$FX/A.tet" "$K_OUT"
  # tet repair --apply rewrites a file whose footer is damaged.
  K_OUT="$d/repair.tet" K_OLD="$FX/bad_footer.tet" K_RESTORE=restore_file K_VERIFY=verify_tet K_OLD_BAD=1
  kill_loop tet "tet repair --apply" "$TESSERA" tet repair "$K_OUT" --apply footer_invalid
  # tet cat --out over an existing .npy.
  K_OUT="$d/cat.npy" K_OLD="$FX/ids.npy" K_RESTORE=restore_file K_VERIFY=verify_none
  kill_loop tet "tet cat --out" "$TESSERA" tet cat "$FX/A.tet" t --out "$K_OUT"
  # tet query: a spill output over an existing one, and the history file it appends to.
  cp "$FX/A.tet" "$d/q.tet"
  K_OUT="$d/spill.bin" K_OLD="$FX/ids_spill.bin" K_RESTORE=restore_file K_VERIFY=verify_none
  K_ENV=(TET_NO_QUERY_HISTORY=1)
  kill_loop tet "tet query spill" "$TESSERA" tet query '{"dataset":"t","spill":"spill.bin"}' -t "$d/q.tet" -x -q
  K_OUT="$d/history.jsonl" K_OLD="$FX/history.jsonl" K_RESTORE=restore_file K_CHECK=check_history K_VERIFY=verify_none
  K_ENV=("TET_QUERY_HISTORY_FILE=$K_OUT" TET_QUERY_HISTORY_MAX=10000)
  kill_loop tet "tet query history" "$TESSERA" tet query '{"dataset":"ids","sum":[]}' -t "$d/q.tet" -x -q
  # cells convert: into a new directory, and --overwrite over a committed dataset.
  if [ -d "$FX/dsA" ]; then
    K_OUT="$d/ds_new" K_RESTORE=restore_absent K_CHECK=check_fresh_cells K_VERIFY=verify_cells
    kill_loop cells "cells convert" "$TESSERA" cells convert --10x-h5 "$FX/tenxB/part_*.h5" --output "$K_OUT" "${CELLS_ARGS[@]}"
    K_OUT="$d/ds" K_OLD="$FX/dsA" K_RESTORE=restore_dir K_VERIFY=verify_cells
    kill_loop cells "cells convert --overwrite" "$TESSERA" cells convert --10x-h5 "$FX/tenxB/part_*.h5" --output "$K_OUT" \
      "${CELLS_ARGS[@]}" --overwrite
    # The obs cache writer: localize into an empty cache.
    K_OUT="$d/obs_cache" K_RESTORE=restore_absent K_CHECK=check_fresh_cache K_VERIFY=verify_none
    kill_loop cells "cells obs localize" "$TESSERA" cells obs localize "$FX/dsA" --all --cache-dir "$K_OUT"
  else
    skip "kill: cells convert" cells "$PY_NOTE"
  fi
  # ragged build: a first build, and --overwrite over a committed store.
  K_OUT="$d/store_new" K_RESTORE=restore_absent K_CHECK=check_committed_leaves K_VERIFY=verify_zarr K_TEMPS="$d/store_new"
  LEAVES_OLD=()
  kill_loop zarr "ragged build" "$TESSERA" ragged build --input "$FX/a.csv" --out "$K_OUT" "${BUILD_ARGS[@]}"
  K_OUT="$d/store" K_OLD="$FX/storeA" K_RESTORE=restore_dir K_CHECK=check_committed_leaves K_VERIFY=verify_zarr K_TEMPS="$d/store"
  leaves_of "$FX/storeA" LEAVES_OLD
  kill_loop zarr "ragged build --overwrite" "$TESSERA" ragged build --input "$FX/b.csv" --out "$K_OUT" "${BUILD_ARGS[@]}" --overwrite
}

# check_committed_by MARKER: a killed first write of a directory output leaves no MARKER (the
# object written last: a store's root zarr.json, a dataset's manifest.json), its partial directory
# counted as a leftover, or the complete output.
check_committed_by() {
  local marker=$1 cat=$2 fmt=$3
  if [ ! -f "$K_OUT/$marker" ]; then
    if [ -e "$K_OUT" ]; then note "$cat" "$fmt" leftovers; rm -rf "$K_OUT"; fi
    return
  fi
  check_old_new "$cat" "$fmt"
}
check_export() { check_committed_by zarr.json "$@"; }
check_fresh_cells() { check_committed_by manifest.json "$@"; }

# check_fresh_cache: every cache file present is complete (the reference run's bytes).
check_fresh_cache() {
  local cat=$1 fmt=$2 f rel
  while IFS= read -r -d '' f; do
    rel="${f#"$K_OUT"/}"
    if is_temp_name "${f##*/}" || [ "${f##*.}" = lock ]; then continue; fi
    if [ "$(nsum "$f")" != "${CACHE_NEW[$rel]:-x}" ]; then
      finding "$cat" "$fmt" torn "$CMD_TEXT: cache file $rel is not the complete file ($KILL_HOW)"
    fi
  done < <(find "$K_OUT" -type f -print0 2>/dev/null)
}
declare -A CACHE_NEW=()
check_fresh_cache_ref() {
  local f
  CACHE_NEW=()
  while IFS= read -r -d '' f; do CACHE_NEW["${f#"$K_OUT"/}"]="$(nsum "$f")"; done < <(find "$K_OUT" -type f -print0)
}

# check_history: the history keeps every old row, unchanged, and at most one new row.
check_history() {
  local cat=$1 fmt=$2 old_n n
  if [ ! -f "$K_OUT" ]; then finding "$cat" "$fmt" lost "$CMD_TEXT: the history file is gone ($KILL_HOW)"; return; fi
  old_n=$(wc -l <"$K_OLD") n=$(wc -l <"$K_OUT")
  if [ "$n" -lt "$old_n" ] || [ "$n" -gt $((old_n + 1)) ] || ! cmp -s -n "$(stat -c %s "$K_OLD")" "$K_OLD" "$K_OUT" ||
    grep -qv '^{.*}$' "$K_OUT"; then
    finding "$cat" "$fmt" torn "$CMD_TEXT: history has $n rows for $old_n old ones, or an old row changed ($KILL_HOW)"
  fi
}
