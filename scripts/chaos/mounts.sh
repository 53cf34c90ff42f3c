# Categories 3 and 4 (sourced by scripts/chaos.sh): every writer into a full disk and into a
# read-only directory. Both need mounts: as root, scripts/chaos.sh runs them again inside a
# private mount namespace (`unshare -m`) with a small tmpfs; without root, the read-only case
# uses a directory of mode 0555 and the full disk is skipped.
# shellcheck shell=bash

# The writers, as cases "NAME|FORMAT|OLD|VERIFY|CMD" with @D@ for the case's directory and
# @O@ for its output name; OLD is a fixture copied to @O@ first, or "-" for a new name.
mount_cases() {
  MCASES=(
    "tet synth|tet|$FX/small.tet|verify_tet|tet synth @O@ ${SYNTH_SPEC[*]} --seed 2"
    "tet convert zarr|tet|$FX/small.tet|verify_tet|tet convert $FX/B.zarr @O@"
    "tet export|zarr|-|verify_zarr|tet export $FX/A.tet @O@"
    "tet repair --apply|tet|$FX/bad_footer_small.tet|verify_tet|tet repair @O@ --apply footer_invalid"
    "tet cat --out|tet|$FX/small.npy|verify_none|tet cat $FX/A.tet t --out @O@"
    "tet query spill|tet|$FX/small.npy|verify_none|tet query {\"dataset\":\"t\",\"spill\":\"@O@\"} -t $FX/A.tet -x -q --spill-allow @D@"
    "tet query history|tet|$FX/history.jsonl|history|tet query {\"dataset\":\"ids\",\"sum\":[]} -t $FX/A.tet -x -q"
    "ragged build|zarr|-|leaves|ragged build --input $FX/b.csv --out @O@ ${BUILD_ARGS[*]}"
    "ragged build --overwrite|zarr|$FX/storeA|leaves|ragged build --input $FX/b.csv --out @O@ ${BUILD_ARGS[*]} --overwrite"
  )
  if [ -f "$FX/src2.h5" ]; then MCASES+=("tet convert .h5|tet|$FX/small.tet|verify_tet|tet convert $FX/src2.h5 @O@"); fi
  if [ -d "$FX/dsA" ]; then
    MCASES+=(
      "cells convert|cells|-|verify_cells|cells convert --10x-h5 $FX/tenxB/part_*.h5 --output @O@ ${CELLS_ARGS[*]}"
      "cells convert --overwrite|cells|$FX/dsA|verify_cells|cells convert --10x-h5 $FX/tenxB/part_*.h5 --output @O@ ${CELLS_ARGS[*]} --overwrite"
      "cells obs localize|cells|-|verify_none|cells obs localize $FX/dsA --all --cache-dir @O@"
    )
  fi
}

# mcase_setup CASE DIR: puts the case's old output in place under DIR.
mcase_setup() {
  local name fmt old verify cmd
  IFS='|' read -r name fmt old verify cmd <<<"$1"
  mkdir -p "$2"
  if [ "$old" != "-" ]; then cp -a "$old" "$2/out"; fi
}

# mcase_run CATEGORY CASE DIR PATTERN: runs the writer; it must succeed with a complete output
# (only when it happened to fit) or fail with exit 1 and an error matching PATTERN, leaving the
# old output as it was. "tet query history" must succeed (a history that cannot be saved is a
# warning) and keep the old rows.
mcase_run() {
  local cat=$1 dir=$3 pattern=$4 name fmt old verify cmd args=() before n
  IFS='|' read -r name fmt old verify cmd <<<"$2"
  cat="$cat: $name"
  cmd="${cmd//@O@/$dir/out}"
  read -r -a args <<<"${cmd//@D@/$dir}"
  before="$(nsum "$dir/out")"
  RUN_ENV=(TET_NO_QUERY_HISTORY=1)
  if [ "$verify" = history ]; then RUN_ENV=("TET_QUERY_HISTORY_FILE=$dir/out" TET_QUERY_HISTORY_MAX=10000); fi
  run_cmd 120 "$WORK/m.out" "$WORK/m.err" "$TESSERA" "${args[@]}"
  RUN_ENV=()
  note "$cat" "$fmt" runs
  if classify "$cat" "$fmt" "$RC" "$RUN_ERR"; then
    if [ "$verify" = history ]; then
      n=$(grep -c '^{.*}$' "$dir/out" 2>/dev/null || echo 0)
      if [ "$RC" -ne 0 ]; then finding "$cat" "$fmt" failures "$CMD_TEXT: exit $RC (a history write failure is a warning)" "$RUN_ERR"
      elif ! cmp -s -n "$(stat -c %s "$old")" "$old" "$dir/out"; then finding "$cat" "$fmt" lost "$CMD_TEXT: old history rows changed or gone" "$RUN_ERR"
      elif [ "$n" -lt "$(wc -l <"$old")" ]; then finding "$cat" "$fmt" lost "$CMD_TEXT: history lost rows" "$RUN_ERR"; fi
    elif [ "$RC" -eq 0 ]; then
      if [ "$verify" = leaves ]; then
        "$TESSERA" ragged info "$dir/out" --list-leaves >/dev/null 2>&1 ||
          finding "$cat" "$fmt" failures "$CMD_TEXT: exit 0 but the store does not open" "$RUN_ERR"
      elif ! "$verify" "$dir/out"; then
        finding "$cat" "$fmt" failures "$CMD_TEXT: exit 0 but the output does not verify" "$RUN_ERR"
      fi
    elif [ "$RC" -ne 1 ] || ! grep -qiE "$pattern" "$RUN_ERR"; then
      finding "$cat" "$fmt" failures "$CMD_TEXT: expected exit 1 with /$pattern/, got exit $RC" "$RUN_ERR"
    elif [ "$old" != "-" ] && [ "$before" != "$(nsum "$dir/out")" ]; then
      if [ -e "$dir/out" ]; then finding "$cat" "$fmt" torn "$CMD_TEXT: the old output changed" "$RUN_ERR"
      else finding "$cat" "$fmt" lost "$CMD_TEXT: the old output is gone" "$RUN_ERR"; fi
    fi
  fi
  if [ "$(temps_in "$dir")" -gt 0 ]; then note "$cat" "$fmt" leftovers; fi
}

# fill_to DIR FREE: fills DIR's filesystem until about FREE bytes are left.
fill_to() {
  local avail
  avail=$(df --output=avail -B1 "$1" | tail -n 1)
  if [ "$avail" -gt "$2" ]; then head -c $((avail - $2)) /dev/zero >"$1/.filler" 2>/dev/null || true; fi
}

category_full_disk() {
  section "full disk"
  local m="$WORK/mnt/full" c free
  mkdir -p "$m"
  mount -t tmpfs -o size=8m chaos-full "$m" || { skip "full disk" all "mount -t tmpfs failed"; return; }
  mount_cases
  for free in "${FULL_FREE[@]}"; do
    for c in "${MCASES[@]}"; do
      rm -rf "${m:?}"/* "$m"/.filler
      mcase_setup "$c" "$m/case"
      fill_to "$m" "$free"
      mcase_run "full disk" "$c" "$m/case" 'No space left|ENOSPC|not enough space|disk full'
    done
  done
  umount "$m"
}

category_read_only() {
  section "read-only targets"
  local m="$WORK/mnt/ro" c i
  mkdir -p "$m"
  if [ "$(id -u)" -eq 0 ]; then
    mount -t tmpfs -o size=64m chaos-ro "$m" || { skip "read-only" all "mount -t tmpfs failed"; return; }
  fi
  mount_cases
  for i in "${!MCASES[@]}"; do mcase_setup "${MCASES[i]}" "$m/$i"; done
  if [ "$(id -u)" -eq 0 ]; then
    mount -o remount,ro "$m" || { skip "read-only" all "remount,ro failed"; umount "$m"; return; }
  else
    find "$m" -type d -exec chmod 0555 {} +
  fi
  for i in "${!MCASES[@]}"; do
    mcase_run "read-only" "${MCASES[i]}" "$m/$i" 'Read-only file system|EROFS|Permission denied|EACCES'
  done
  if [ "$(id -u)" -eq 0 ]; then umount "$m"; else find "$m" -type d -exec chmod 0755 {} +; fi
}
