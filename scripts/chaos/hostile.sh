# Category 6 (sourced by scripts/chaos.sh): hostile documents — nesting far beyond any limit,
# declared sizes far beyond the data, zstd frames that expand to gigabytes. Every reader must
# exit 1 with a clean error, never by a signal, with a peak resident set under 256 MiB.
# shellcheck shell=bash

RSS_LIMIT_KB=$((256 * 1024))

# hostile CATEGORY FORMAT CMD...: runs a reader on a hostile input under /usr/bin/time; it
# must fail cleanly. hostile_any: it may also succeed (the input stays within what the format
# allows), but must not crash, hang or grow past the memory bound.
hostile_any() { HOSTILE_ANY=1 hostile "$@"; }
hostile() {
  local cat=$1 fmt=$2 rss
  shift 2
  if [ -x /usr/bin/time ]; then
    run_cmd "$HOSTILE_TIMEOUT" "$WORK/h.out" "$WORK/h.err" /usr/bin/time -o "$WORK/h.rss" -f %M "$TESSERA" "$@"
  else
    run_cmd "$HOSTILE_TIMEOUT" "$WORK/h.out" "$WORK/h.err" "$TESSERA" "$@"
  fi
  # /usr/bin/time reports a signalled child as "Command terminated by signal N" and exits 128+N.
  if grep -q 'Command terminated by signal' "$WORK/h.rss" 2>/dev/null; then
    RC=$((128 + $(grep -o 'signal [0-9]*' "$WORK/h.rss" | grep -o '[0-9]*$')))
  fi
  if [ "${HOSTILE_ANY:-0}" -eq 1 ] && [ "$RC" -eq 0 ]; then
    note "$cat" "$fmt" runs
    classify "$cat" "$fmt" "$RC" "$RUN_ERR" || return
  else
    expect_clean_error "$cat" "$fmt" '^error: |verification failed|^FAIL |failed: |"ok": false' || return
  fi
  rss="$(tail -n 1 "$WORK/h.rss" 2>/dev/null)"
  if [[ "$rss" =~ ^[0-9]+$ ]] && [ "$rss" -ge "$RSS_LIMIT_KB" ]; then
    finding "$cat" "$fmt" failures "$CMD_TEXT: peak RSS $((rss / 1024)) MiB (limit 256)" "$RUN_ERR"
  fi
}

# nested N OPEN CLOSE: N opening brackets then N closing ones.
nested() { printf "%${1}s" '' | tr ' ' "$2"; printf "%${1}s" '' | tr ' ' "$3"; }

# tet_with_footer SRC OUT JSON_FILE: SRC with its footer replaced by JSON_FILE's text.
tet_with_footer() {
  local size len end
  size=$(stat -c %s "$1")
  len=$(tail -c 16 "$1" | head -c 8 | od -An -tu8 | tr -d ' ')
  end=$((size - 16 - len))
  head -c "$end" "$1" >"$2"
  cat "$3" >>"$2"
  /usr/bin/python3 -c 'import struct,sys; sys.stdout.buffer.write(struct.pack("<QI", int(sys.argv[1]), 1) + b"THST")' \
    "$(stat -c %s "$3")" >>"$2"
}

# zstd_bomb GIB WITH_SIZE: a zstd frame of RLE blocks that decodes to GIB GiB of zeros (4 bytes
# per 128 KiB block), declaring its content size in the header or not.
zstd_bomb() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import struct, sys
gib, with_size = int(sys.argv[1]), sys.argv[2] == "1"
blocks = gib * 8192
out = bytearray(struct.pack("<I", 0xFD2FB528))
if with_size:
    out += bytes([0xC0, 0x38]) + struct.pack("<Q", blocks * 131072)
else:
    out += bytes([0x00, 0x38])
rle = 131072 << 3 | 1 << 1
for i in range(blocks):
    out += struct.pack("<I", rle | (1 if i == blocks - 1 else 0))[:3] + b"\0"
sys.stdout.buffer.write(out)
PY
}

# tet_chunk_bomb SRC OUT: SRC (a .tet whose first chunk is zstd) with that chunk's payload
# replaced by a 1 GiB bomb, padded to the payload's length with a skippable frame.
tet_chunk_bomb() {
  /usr/bin/python3 - "$1" "$2" "$3" <<'PY'
import struct, sys
src, out, bomb = sys.argv[1], sys.argv[2], open(sys.argv[3], "rb").read()
b = bytearray(open(src, "rb").read())
index = struct.unpack_from("<Q", b, 16)[0]
entry = index + 32
off, raw, stored = struct.unpack_from("<QQQ", b, entry + 72)
pad = stored - len(bomb) - 8
assert pad >= 0, (stored, len(bomb))
b[off:off + stored] = bomb + struct.pack("<II", 0x184D2A50, pad) + bytes(pad)
open(out, "wb").write(b)
PY
}

category_hostile() {
  section "hostile documents"
  local d="$WORK/hostile" deep=100000 cat
  mkdir -p "$d"
  if [ ! -x /usr/bin/python3 ]; then skip "hostile" all "needs /usr/bin/python3 to craft the inputs"; return; fi
  nested $deep '[' ']' >"$d/deep.json"
  # deltacells manifest.json
  cat="hostile: deep JSON"
  if [ -d "$FX/dsA" ]; then
    rm -rf "$d/ds" && cp -a "$FX/dsA" "$d/ds" && cp "$d/deep.json" "$d/ds/manifest.json"
    hostile "$cat" cells cells info "$d/ds"
    hostile "$cat" cells cells verify "$d/ds"
    hostile "$cat" cells cells get "$d/ds" 0
    hostile "$cat" cells info "$d/ds"
    rm -rf "$d/ds2" && cp -a "$FX/dsA" "$d/ds2" && cp "$d/deep.json" "$d/ds2/obs/schema.json"
    hostile "$cat" cells cells obs info "$d/ds2" --cache-dir "$d/cache"
  fi
  # zarr.json of a leaf, of an array, morton_hive.json of the hive
  rm -rf "$d/store" && cp -a "$FX/storeA" "$d/store"
  local leaf="$d/store/$FX_LEAF"
  cp "$d/deep.json" "$leaf/14/count/zarr.json"
  hostile "$cat" zarr ragged verify "$leaf"
  hostile "$cat" zarr ragged cell "$leaf" 14/count "$FX_CELL"
  hostile "$cat" zarr ragged info "$leaf"
  cp "$d/deep.json" "$leaf/zarr.json"
  hostile "$cat" zarr ragged info "$leaf"
  hostile "$cat" zarr verify "$leaf"
  cp "$d/deep.json" "$d/store/morton_hive.json"
  hostile "$cat" zarr ragged info "$d/store" --list-leaves
  rm -rf "$d/exp" && cp -a "$FX/B.zarr" "$d/exp" && cp "$d/deep.json" "$d/exp/zarr.json"
  hostile "$cat" zarr tet convert "$d/exp" "$d/never.tet"
  # .tet history footer
  { printf '{"history":'; cat "$d/deep.json"; printf '}'; } >"$d/deep_footer.json"
  tet_with_footer "$FX/small.tet" "$d/deep.tet" "$d/deep_footer.json"
  hostile "$cat" tet tet info "$d/deep.tet"
  hostile "$cat" tet tet verify "$d/deep.tet"
  hostile "$cat" tet tet cat "$d/deep.tet" t --out "$d/never.npy"
  hostile "$cat" tet tet query '{"dataset":"t","sum":[]}' -t "$d/deep.tet" -x -q
  hostile "$cat" tet tet export "$d/deep.tet" "$d/never.zarr"
  # query documents (JSON and TOML) and --selection
  { printf '{"dataset":"t","selection":'; cat "$d/deep.json"; printf '}'; } >"$d/deep_query.json"
  hostile "$cat" tet tet query "$d/deep_query.json" -t "$FX/small.tet" -x -q
  { printf 'dataset = "t"\n'; printf 'a%.0s.' $(seq 1 20000); printf 'a = 1\n'; } >"$d/deep_dotted.toml"
  hostile "$cat" tet tet query "$d/deep_dotted.toml" -t "$FX/small.tet" -x -q
  { printf 'dataset = "t"\nx = '; nested $deep '[' ']'; printf '\n'; } >"$d/deep_array.toml"
  hostile "$cat" tet tet query "$d/deep_array.toml" -t "$FX/small.tet" -x -q
  # (one argument may hold at most 128 KiB)
  hostile "$cat" tet tet cat "$FX/small.tet" t --out "$d/never.npy" --selection "$(nested 60000 '[' ']')"

  # Declared sizes far beyond the data.
  cat="hostile: oversized counts"
  local sample="$CONFORMANCE_DIR/tetration/sample.tet"
  /usr/bin/python3 - "$sample" "$d" <<'PY'
import struct, sys
src, d = sys.argv[1], sys.argv[2]
b = open(src, "rb").read()
def patch(name, offset, fmt, value):
    c = bytearray(b); struct.pack_into(fmt, c, offset, value); open(f"{d}/{name}.tet", "wb").write(c)
patch("raw_len", 136 + 80, "<Q", 1 << 62)        # chunk 0 raw_byte_len
patch("stored_len", 136 + 88, "<Q", 1 << 40)     # chunk 0 stored_byte_len
patch("shape", 72, "<Q", 1 << 60)                # dataset 0 extent of axis 0
patch("count", 24, "<Q", 1 << 50)                # chunk index length
PY
  local f
  for f in raw_len stored_len shape count; do
    hostile "$cat" tet tet cat "$d/$f.tet" temperature --out "$d/never.npy"
    hostile "$cat" tet tet verify "$d/$f.tet" --deep
    hostile "$cat" tet tet query '{"dataset":"temperature","sum":[]}' -t "$d/$f.tet" -x -q
  done
  if [ -d "$FX/dsA" ]; then
    rm -rf "$d/ds" && cp -a "$FX/dsA" "$d/ds"
    sed -i -E '0,/"n_cells": [0-9]+/s//"n_cells": 4000000000000000000/' "$d/ds/manifest.json"
    hostile "$cat" cells cells get "$d/ds" 3999999999999999999
    hostile "$cat" cells cells verify "$d/ds"
    rm -rf "$d/ds" && cp -a "$FX/dsA" "$d/ds"
    /usr/bin/python3 - "$d/ds/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["tile_cells"][0] = 2**62; m["tile_nnz"][0] = 2**62; m["n_cells"] += 2**62 - m["tile_size"]
json.dump(m, open(sys.argv[1], "w"))
PY
    hostile "$cat" cells cells get "$d/ds" 0
    hostile "$cat" cells cells verify "$d/ds"
    hostile "$cat" cells cells epoch "$d/ds" --batches 2
  fi
  rm -rf "$d/store" && cp -a "$FX/storeA" "$d/store"
  /usr/bin/python3 -c 'import json, sys
m = json.load(open(sys.argv[1])); m["shape"] = [2**62]; json.dump(m, open(sys.argv[1], "w"))' "$leaf/14/h_tdigest/zarr.json"
  hostile_any "$cat" zarr ragged cell "$leaf" 14/h_tdigest 4611686018427387903
  hostile_any "$cat" zarr ragged verify "$leaf"

  # Compression bombs: zstd frames of 4 GiB of zeros where a chunk of 1 MiB is declared.
  cat="hostile: zstd bomb"
  zstd_bomb 4 0 >"$d/bomb.zst"
  zstd_bomb 4 1 >"$d/bomb_sized.zst"
  local z
  for z in bomb bomb_sized; do
    if [ "$SMOKE" -eq 1 ] && [ "$z" = bomb_sized ]; then continue; fi
    mkdir -p "$d/$z.zarr/a/c"
    printf '{"zarr_format":3,"node_type":"group","attributes":{}}' >"$d/$z.zarr/zarr.json"
    printf '%s' '{"zarr_format":3,"node_type":"array","shape":[1048576],"data_type":"uint8",
      "chunk_grid":{"name":"regular","configuration":{"chunk_shape":[1048576]}},
      "chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":0,
      "codecs":[{"name":"bytes"},{"name":"zstd","configuration":{"level":1,"checksum":false}}]}' >"$d/$z.zarr/a/zarr.json"
    cp "$d/$z.zst" "$d/$z.zarr/a/c/0"
    hostile "$cat" zarr ragged verify "$d/$z.zarr"
    hostile_any "$cat" zarr ragged info "$d/$z.zarr" --deep
    hostile "$cat" zarr tet convert "$d/$z.zarr" "$d/never.tet"
  done
  # The same bomb (1 GiB) as the first tile of a .tet file.
  zstd_bomb 1 0 >"$d/bomb1.zst"
  if tet_chunk_bomb "$FX/A.tet" "$d/bomb.tet" "$d/bomb1.zst" 2>"$d/bomb.err"; then
    hostile "$cat" tet tet cat "$d/bomb.tet" t --out "$d/never.npy"
    hostile "$cat" tet tet verify "$d/bomb.tet" --deep
    hostile "$cat" tet tet query '{"dataset":"t","sum":[]}' -t "$d/bomb.tet" -x -q
    hostile "$cat" zarr tet export "$d/bomb.tet" "$d/never2.zarr"
  else
    finding "$cat" tet failures "could not place a bomb in a tile of A.tet" "$d/bomb.err"
  fi
  if [ -d "$FX/dsA" ]; then
    # A deltacells tile whose first chunk is the bomb, with --no-verify so the CRC is not checked.
    rm -rf "$d/ds" && cp -a "$FX/dsA" "$d/ds"
    local tile
    tile="$(find "$d/ds/tiles" -type f | sort | head -n 1)"
    /usr/bin/python3 - "$tile" "$d/bomb1.zst" <<'PY'
import sys
tile, bomb = sys.argv[1], open(sys.argv[2], "rb").read()
b = bytearray(open(tile, "rb").read())
i = b.find(b"\x28\xb5\x2f\xfd")          # the first zstd frame of the tile
assert i >= 0
b[i:] = bomb
open(tile, "wb").write(b)
PY
    hostile "$cat" cells cells get "$d/ds" 0 --no-verify
    hostile "$cat" cells cells verify "$d/ds"
  fi
}
