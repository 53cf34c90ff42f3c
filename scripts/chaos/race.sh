# Categories 2 and 5 (sourced by scripts/chaos.sh): reads racing a writer that keeps replacing
# what they read, and two or more writers of one output at once.
# shellcheck shell=bash

# Clean errors a reader may give when the dataset is replaced under it (docs/reliability.md,
# "Readers under concurrent replacement").
REPLACED_TEXT='replaced while it was being read|changed while|was replaced'

# race_format FORMAT READS: the writer functions race_write_a / race_write_b (set per format)
# alternate in a loop while two reader loops run the commands in READERS (one command line per
# element, the target path as @T@) READS times in all. Each read must print what it prints for
# A or for B, or fail cleanly with REPLACED_TEXT.
READERS=()
race_format() {
  local fmt=$1 reads=$2 cat="race: reads" dir="$WORK/race/$1" i r
  mkdir -p "$dir"
  declare -gA RACE_A=() RACE_B=()
  # The two answers of every reader.
  race_write_a >/dev/null 2>&1 || { finding "$cat" "$fmt" failures "writer A failed before the race"; return; }
  for i in "${!READERS[@]}"; do race_read "$i" "$dir/ref.out" "$dir/ref.err"; RACE_A[$i]="$(rsum "$dir/ref.out")"; done
  race_write_b >/dev/null 2>&1 || { finding "$cat" "$fmt" failures "writer B failed before the race"; return; }
  for i in "${!READERS[@]}"; do race_read "$i" "$dir/ref.out" "$dir/ref.err"; RACE_B[$i]="$(rsum "$dir/ref.out")"; done
  for i in "${!READERS[@]}"; do
    if [ "${RACE_A[$i]}" = "${RACE_B[$i]}" ]; then
      echo "  note: reader $i gives the same output for A and B: ${READERS[$i]}"
    fi
  done
  rm -f "$dir/stop"
  ( # the writer loop
    local n=0
    while [ ! -f "$dir/stop" ]; do
      n=$((n + 1))
      if [ $((n % 2)) -eq 1 ]; then race_write_a >"$dir/w.out" 2>"$dir/w.err"; else race_write_b >"$dir/w.out" 2>"$dir/w.err"; fi
      RC=$? HUNG=0 CMD_TEXT="race writer ($fmt) pass $n"
      note "race: writer" "$fmt" runs
      if classify "race: writer" "$fmt" "$RC" "$dir/w.err" && [ "$RC" -ne 0 ]; then
        finding "race: writer" "$fmt" failures "$CMD_TEXT: exit $RC" "$dir/w.err"
      fi
    done
  ) &
  local writer=$!
  local per=$(((reads + 1) / 2)) readers=()
  for r in 1 2; do
    (
      local k idx s
      for ((k = 0; k < per; k++)); do
        idx=$(((k + r) % ${#READERS[@]}))
        race_read "$idx" "$dir/r$r.out" "$dir/r$r.err"
        note "$cat" "$fmt" runs
        classify "$cat" "$fmt" "$RC" "$RUN_ERR" || continue
        if [ "$RC" -eq 0 ]; then
          s="$(rsum "$dir/r$r.out")"
          if [ "$s" != "${RACE_A[$idx]}" ] && [ "$s" != "${RACE_B[$idx]}" ]; then
            finding "$cat" "$fmt" torn "$CMD_TEXT: output is neither A's nor B's"
            cp "$dir/r$r.out" "$WORK/evidence-torn-$fmt-$r-$k.out"
          fi
        elif [ "$RC" -eq 1 ] && grep -qiE "$REPLACED_TEXT" "$RUN_ERR"; then
          note "$cat" "$fmt" replaced
        else
          finding "$cat" "$fmt" failures "$CMD_TEXT: exit $RC while the target was being replaced" "$RUN_ERR"
        fi
      done
    ) &
    readers+=($!)
  done
  wait "${readers[@]}"
  touch "$dir/stop"
  wait "$writer"
  echo "  race ($fmt): $(grep -c "^race: reads	$fmt	runs" "$EVENTS") reads," \
    "$(grep -c "^race: writer	$fmt	runs" "$EVENTS") replacements," \
    "$(grep -c "^race: reads	$fmt	replaced" "$EVENTS") clean 'replaced' errors"
}

# race_read I OUT ERR: runs reader I against the race target.
race_read() {
  local -a cmd
  read -r -a cmd <<<"${READERS[$1]//@T@/$RACE_T}"
  RUN_ENV=(TET_NO_QUERY_HISTORY=1)
  run_cmd 60 "$2" "$3" "$TESSERA" "${cmd[@]}"
  RUN_ENV=()
}

category_race() {
  section "racing reads"
  local reads=$RACE_READS d="$WORK/race"
  mkdir -p "$d"
  # .tet: rewritten whole by tet synth (a new file renamed over the old one).
  RACE_T="$d/r.tet"
  race_write_a() { "$TESSERA" tet synth "$RACE_T" "${SYNTH_SPEC[@]}" --seed 1; }
  race_write_b() { "$TESSERA" tet synth "$RACE_T" "${SYNTH_SPEC[@]}" --seed 2; }
  READERS=(
    'tet cat @T@ t --out /dev/stdout --selection [{"start":0,"stop":4},{},{}]'
    'tet query {"dataset":"ids","sum":[]} -t @T@ -x -q'
    'tet info @T@'
    'tet verify @T@ -q'
  )
  race_format tet "$reads"
  # deltacells: cells convert --overwrite exchanges the finished dataset with the old one.
  if [ -d "$FX/dsA" ]; then
    RACE_T="$d/ds"
    race_write_a() { "$TESSERA" cells convert --10x-h5 "$FX/tenxA/part_*.h5" --output "$RACE_T" "${CELLS_ARGS[@]}" --overwrite; }
    race_write_b() { "$TESSERA" cells convert --10x-h5 "$FX/tenxB/part_*.h5" --output "$RACE_T" "${CELLS_ARGS[@]}" --overwrite; }
    READERS=('cells get @T@ 0:3000' 'cells verify @T@' 'cells info @T@' 'cells get @T@ 2999,17,1500')
    race_format cells "$reads"
  else
    skip "race: reads" cells "$PY_NOTE"
  fi
  # Zarr / ragged: ragged build --overwrite exchanges each leaf.
  RACE_T="$d/store/$FX_LEAF"
  race_write_a() { "$TESSERA" ragged build --input "$FX/a.csv" --out "$d/store" "${BUILD_ARGS[@]}" --overwrite; }
  race_write_b() { "$TESSERA" ragged build --input "$FX/b.csv" --out "$d/store" "${BUILD_ARGS[@]}" --overwrite; }
  READERS=("ragged hashes @T@" "ragged cell @T@ 14/h_tdigest $FX_CELL" "ragged verify @T@ --text"
    "ragged info @T@ --deep")
  race_format zarr "$reads"
}

# ---- concurrent writers ---------------------------------------------------------------------

# concurrent CATEGORY FORMAT CMD_A -- CMD_B: starts both at once, waits, classifies both;
# the caller judges the result.
concurrent_pair() {
  local cat=$1 fmt=$2 dir=$3 a=() b=() pa pb rc
  shift 3
  while [ "$1" != "--" ]; do a+=("$1"); shift; done
  shift
  b=("$@")
  timeout -k 5 300 "${a[@]}" >"$dir/a.out" 2>"$dir/a.err" &
  pa=$!
  timeout -k 5 300 "${b[@]}" >"$dir/b.out" 2>"$dir/b.err" &
  pb=$!
  PAIR_RC=()
  for p in "$pa:a" "$pb:b"; do
    rc=0
    wait "${p%%:*}" || rc=$?
    PAIR_RC+=("$rc")
    RC=$rc HUNG=0 CMD_TEXT="$(printf '%q ' "${a[@]}") & $(printf '%q ' "${b[@]}") (writer ${p##*:})"
    [ "$rc" -eq 124 ] && HUNG=1
    note "$cat" "$fmt" runs
    classify "$cat" "$fmt" "$rc" "$dir/${p##*:}.err" || continue
    if [ "$rc" -ne 0 ] && ! grep -qiE "${PAIR_OK_ERROR:-^$}" "$dir/${p##*:}.err"; then
      finding "$cat" "$fmt" failures "$CMD_TEXT: exit $rc" "$dir/${p##*:}.err"
    fi
  done
}

category_concurrent() {
  section "concurrent writers"
  local d="$WORK/conc" i s rounds=$CONC_ROUNDS cat
  mkdir -p "$d"
  local sum_a sum_b
  # (synth records the output's file name: the references are written under the same name)
  "$TESSERA" tet synth "$d/c.tet" "${SYNTH_SPEC[@]}" --seed 1 >/dev/null && sum_a="$(nsum "$d/c.tet")"
  "$TESSERA" tet synth "$d/c.tet" "${SYNTH_SPEC[@]}" --seed 2 >/dev/null && sum_b="$(nsum "$d/c.tet")"
  cat="concurrent: tet synth ×2"
  for ((i = 0; i < rounds; i++)); do
    cp "$FX/A.tet" "$d/c.tet"
    PAIR_OK_ERROR=""
    concurrent_pair "$cat" tet "$d" "$TESSERA" tet synth "$d/c.tet" "${SYNTH_SPEC[@]}" --seed 2 -- \
      "$TESSERA" tet synth "$d/c.tet" "${SYNTH_SPEC[@]}" --seed 1
    s="$(nsum "$d/c.tet")"
    if [ "$s" != "$sum_a" ] && [ "$s" != "$sum_b" ]; then finding "$cat" tet torn "two synths left neither file"
    elif ! verify_tet "$d/c.tet"; then finding "$cat" tet failures "two synths left a file that does not verify"; fi
    if [ "$(temps_in "$d")" -gt 0 ]; then note "$cat" tet leftovers; remove_temps "$d"; fi
  done
  if [ -d "$FX/dsA" ]; then
    cat="concurrent: cells convert ×2"
    sum_a="$(nsum "$FX/dsA")" sum_b="$(nsum "$FX/dsB")"
    for ((i = 0; i < rounds; i++)); do
      rm -rf "$d/ds" && cp -a "$FX/dsA" "$d/ds"
      PAIR_OK_ERROR='in use|already|exists|replaced|busy'
      concurrent_pair "$cat" cells "$d" "$TESSERA" cells convert --10x-h5 "$FX/tenxB/part_*.h5" --output "$d/ds" \
        "${CELLS_ARGS[@]}" --overwrite -- "$TESSERA" cells convert --10x-h5 "$FX/tenxA/part_*.h5" --output "$d/ds" \
        "${CELLS_ARGS[@]}" --overwrite
      s="$(nsum "$d/ds")"
      if [ "$s" = "-" ]; then finding "$cat" cells lost "two converters left no dataset"
      elif [ "$s" != "$sum_a" ] && [ "$s" != "$sum_b" ]; then finding "$cat" cells torn "two converters left neither dataset"
      elif ! verify_cells "$d/ds"; then finding "$cat" cells failures "two converters left a dataset that does not verify"; fi
      if [ "$(temps_in "$d")" -gt 0 ]; then note "$cat" cells leftovers; remove_temps "$d"; fi
    done
  else
    skip "concurrent: cells convert ×2" cells "$PY_NOTE"
  fi
  cat="concurrent: ragged build ×2"
  for ((i = 0; i < rounds; i++)); do
    rm -rf "$d/store" && cp -a "$FX/storeA" "$d/store"
    PAIR_OK_ERROR='in use by pid'
    concurrent_pair "$cat" zarr "$d" "$TESSERA" ragged build --input "$FX/b.csv" --out "$d/store" "${BUILD_ARGS[@]}" --overwrite -- \
      "$TESSERA" ragged build --input "$FX/a.csv" --out "$d/store" "${BUILD_ARGS[@]}" --overwrite
    K_OUT="$d/store" CMD_TEXT="two ragged builds --overwrite" KILL_HOW="round $i"
    check_committed_leaves "$cat" zarr
    if [ "$(temps_in "$d/store")" -gt 0 ]; then note "$cat" zarr leftovers; remove_temps "$d/store"; fi
  done
  # Twelve queries at once, each appending its row to one history file.
  cat="concurrent: tet query ×12 history"
  local pids=() old_n n j
  for ((i = 0; i < rounds; i++)); do
    cp "$FX/history.jsonl" "$d/history.jsonl"
    old_n=$(wc -l <"$d/history.jsonl")
    pids=()
    for ((j = 0; j < 12; j++)); do
      TET_QUERY_HISTORY_FILE="$d/history.jsonl" TET_QUERY_HISTORY_MAX=10000 timeout -k 5 120 \
        "$TESSERA" tet query "{\"dataset\":\"ids\",\"sum\":[],\"selection\":[{\"start\":$j}]}" -t "$FX/A.tet" -x -q \
        >"$d/q$j.out" 2>"$d/q$j.err" &
      pids+=($!)
    done
    for ((j = 0; j < 12; j++)); do
      RC=0
      wait "${pids[j]}" || RC=$?
      HUNG=0 CMD_TEXT="tet query #$j of 12 sharing one history file"
      [ "$RC" -eq 124 ] && HUNG=1
      note "$cat" tet runs
      if classify "$cat" tet "$RC" "$d/q$j.err"; then
        if [ "$RC" -ne 0 ] || grep -q 'history not saved' "$d/q$j.err"; then
          finding "$cat" tet failures "$CMD_TEXT: exit $RC" "$d/q$j.err"
        fi
      fi
    done
    n=$(grep -c '^{.*}$' "$d/history.jsonl")
    if [ "$n" -ne $((old_n + 12)) ]; then
      finding "$cat" tet lost "12 concurrent queries: the history holds $n rows, expected $old_n + 12"
    fi
  done
}
