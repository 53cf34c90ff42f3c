#!/usr/bin/env bash
# `scripts/bench.sh tet-query`: whole-process timings of `tessera tet query … -x -q` against the
# bare operations it is built from and against numpy, plus the peak anonymous memory of a
# temp-spilled median (docs/performance.md, "tet query").
#
#   scripts/bench_tet_query.sh [--size-gib N] [--median-gib M] [--repeat R] [--threads T]
#                              [--cold-rounds C] [--smoke]
#
# Inputs, synthesized once by `tessera tet synth` (seed 1) into build/bench-data/tet-query/:
#   raw    temp: f32 [T, 1024, 1024] (N GiB, default 4), raw chunks 16 x 1024 x 1024, so the
#          payload is the array in logical order and numpy maps it with np.memmap at its offset;
#   zstd   the same values in zstd level-3 chunks of 16 x 256 x 256;
#   median temp: f32 [M·256, 1024, 1024] (M GiB, default 1), raw chunks 16 x 256 x 256.
# Every case is one process, run `--repeat` rounds (default 5) round-robin from the page cache,
# each round in a rotated order; ratios are taken inside each round and their median reported.
# The scan limit of a round is the faster of two bare sums on the same threads, over an mmap of
# the file (`sum`) and through pread into reused 1 MiB buffers (`psum`): which one wins depends on
# the machine. `mean` takes the read path tessera chooses; `mean_mmap` and `mean_pread` force each
# (TESSERA_READ_PATH). The zstd limit is likewise the faster of decompressing frames from a map
# (`unzstd`) and from pread copies (`punzstd`). Minor page faults per GiB scanned are measured in
# one extra run of each side. Cold scans (C rounds, default 2, 0 skips them) drop the raw file from
# the page cache before each run and compare with `dd iflag=direct` of the same file.
# --smoke runs every case once on 128 MiB files in a temporary directory, without the median
# (a test checks that the benchmark still runs; its figures mean nothing at that size).
# BUILD_DIR (default build/release) must hold `tessera` and `bench/bench_tet_query` (bench.sh
# builds both); PYTHON (default /usr/bin/python3) needs numpy and zstandard.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

build_dir="${BUILD_DIR:-$ROOT/build/release}"
python="${PYTHON:-/usr/bin/python3}"
tessera="$build_dir/tessera"
bench="$build_dir/bench/bench_tet_query"
data_dir="$ROOT/build/bench-data/tet-query"
size_gib=4 median_gib=1 repeat=5 threads=2 cold_rounds=2 smoke=0

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --size-gib) size_gib="$2"; shift 2 ;;
    --median-gib) median_gib="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --cold-rounds) cold_rounds="$2"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    -h | --help) usage ;;
    *) echo "bench_tet_query.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
for bin in "$tessera" "$bench"; do
  [ -x "$bin" ] || { echo "bench_tet_query.sh: $bin is missing (run scripts/bench.sh tet-query)" >&2; exit 1; }
done

export TET_NO_QUERY_HISTORY=1 SOURCE_DATE_EPOCH=1700000000
# The query engine uses every core; tbb is capped for a --threads below the machine's count.
if [ "$threads" -lt "$(nproc)" ]; then
  echo "bench_tet_query.sh: --threads $threads < $(nproc) cores: run under 'taskset' to cap the query" >&2
fi
rows=$((size_gib * 256))
median_rows=$((median_gib * 256))
work="$(mktemp -d "${TMPDIR:-/tmp}/tet-query-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
if [ "$smoke" = 1 ]; then
  rows=32 median_rows=16 repeat=1 cold_rounds=1 data_dir="$work/data"
fi
mkdir -p "$data_dir"
raw="$data_dir/f32-${rows}x1024x1024-c16x1024x1024-raw.tet"
zst="$data_dir/f32-${rows}x1024x1024-c16x256x256-zstd3.tet"
med="$data_dir/f32-${median_rows}x1024x1024-c16x256x256-raw.tet"

synth() {  # synth OUT SPEC
  if [ ! -f "$1" ]; then
    echo "synthesizing $1 ..."
    "$tessera" tet synth "$1" --dataset "$2" --seed 1
  fi
}
synth "$raw" "temp:f32:${rows}x1024x1024:16x1024x1024:raw"
synth "$zst" "temp:f32:${rows}x1024x1024:16x256x256:zstd:3"
synth "$med" "temp:f32:${median_rows}x1024x1024:16x256x256:raw"

"$bench" layout "$raw" temp >"$work/raw.layout"
"$bench" layout "$zst" temp >"$work/zst.layout"
field() { awk -v k="$2" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "$1"; }
[ "$(field "$work/raw.layout" logical_order)" = 1 ] || { echo "raw payload is not in logical order" >&2; exit 1; }
raw_offset="$(field "$work/raw.layout" payload_offset)"
logical_bytes="$(field "$work/raw.layout" payload_bytes)"
shape="$(field "$work/raw.layout" shape)"

# numpy over the raw payload (np.memmap at its offset) and python-zstandard + numpy over the frames.
numpy_mean='
import sys, numpy as np
path, offset, axis = sys.argv[1], int(sys.argv[2]), sys.argv[3]
shape = tuple(int(s) for s in sys.argv[4:])
a = np.memmap(path, dtype="<f4", mode="r", offset=offset, shape=shape)
r = np.mean(a, dtype=np.float64) if axis == "all" else np.mean(a, axis=int(axis), dtype=np.float64)
print("mean", repr(float(r)) if np.ndim(r) == 0 else "shape %s first %r" % (r.shape, float(r.flat[0])))
'
zstd_mean='
import mmap, sys, numpy as np, zstandard
path, layout = sys.argv[1], sys.argv[2]
frames = [tuple(int(x) for x in l.split()[1:]) for l in open(layout) if l.startswith("frame ")]
out = np.empty(sum(f[2] for f in frames) // 4, dtype="<f4")
d = zstandard.ZstdDecompressor()
with open(path, "rb") as f:
    data = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    at = 0
    for off, stored, rawlen in frames:
        out[at:at + rawlen // 4] = np.frombuffer(d.decompress(data[off:off + stored]), dtype="<f4")
        at += rawlen // 4
print("mean", repr(float(np.mean(out, dtype=np.float64))))
'
# Peak RssAnon of a command: `python3 -c "$rss_peak" MODE CMD…` polls /proc/PID/status every
# 1 ms and reports the peak (KiB), the largest gap between two samples and the wall time. The
# poller runs on CPU 0 at SCHED_FIFO when allowed (root); it sleeps almost all the time. Even so,
# on this kind of VM a poller sharing a CPU with the command misses its wake-ups by up to ~50 ms,
# so MODE `pinned` also keeps the command off CPU 0 (one CPU fewer for it), MODE `shared` lets it
# use every CPU. The command itself always runs at normal priority.
rss_peak='
import os, subprocess, sys, time
mode, cmd = sys.argv[1], sys.argv[2:]
cpus = os.sched_getaffinity(0)
def child():
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    if mode == "pinned" and len(cpus) > 1:
        os.sched_setaffinity(0, cpus - {min(cpus)})
    else:
        os.sched_setaffinity(0, cpus)
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    policy = "SCHED_FIFO"
except OSError:
    policy = "SCHED_OTHER"
os.sched_setaffinity(0, {min(cpus)})
t0 = last = time.perf_counter()
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, preexec_fn=child)
peak = samples = 0
gap = 0.0
while p.poll() is None:
    try:
        with open("/proc/%d/status" % p.pid) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    peak = max(peak, int(line.split()[1]))
                    samples += 1
                    now = time.perf_counter()
                    gap, last = max(gap, now - last), now
    except (FileNotFoundError, ProcessLookupError):
        pass
    time.sleep(0.001)
out = p.stdout.read()
print(out.strip())
print("rss_anon_peak_kib %d samples %d max_gap_ms %.1f seconds %.3f poller %s mode %s"
      % (peak, samples, gap * 1e3, time.perf_counter() - t0, policy, mode))
sys.exit(p.returncode)
'

# User + system CPU seconds of every child this shell has waited for, from a saved `times`
# report (taken in this shell: a subshell would count only its own children).
children_cpu() {
  awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%.3f", t }' "$1"
}

# median of a times file's second column
median_of() { awk '{ print $2 }' "$1" | sort -g | awk '{ v[NR] = $1 } END { print v[int(NR / 2) + 1] }'; }

# Cases: name -> command. Every one prints its result, kept from the last round.
q() { "$tessera" tet query "$1" -t "$2" -x -q; }
run_case() {
  case "$1" in
    sum) "$bench" sum "$raw" temp --threads "$threads" ;;
    psum) "$bench" psum "$raw" temp --threads "$threads" ;;
    mean) q '{"dataset":"temp","mean":[]}' "$raw" ;;
    mean_mmap) TESSERA_READ_PATH=mmap q '{"dataset":"temp","mean":[]}' "$raw" ;;
    mean_pread) TESSERA_READ_PATH=pread q '{"dataset":"temp","mean":[]}' "$raw" ;;
    mean_axis0) q '{"dataset":"temp","mean":0}' "$raw" ;;
    numpy_mean) "$python" -c "$numpy_mean" "$raw" "$raw_offset" all $shape ;;
    numpy_mean_axis0) "$python" -c "$numpy_mean" "$raw" "$raw_offset" 0 $shape ;;
    unzstd) "$bench" unzstd "$zst" temp --threads "$threads" ;;
    punzstd) "$bench" punzstd "$zst" temp --threads "$threads" ;;
    zstd_mean) q '{"dataset":"temp","mean":[]}' "$zst" ;;
    python_zstd_mean) "$python" -c "$zstd_mean" "$zst" "$work/zst.layout" ;;
  esac
}
cases=(sum psum mean mean_mmap mean_pread mean_axis0 numpy_mean numpy_mean_axis0 unzstd punzstd zstd_mean
  python_zstd_mean)

section "tet-query: page cache warm-up"
cat "$raw" "$zst" "$med" >/dev/null
for c in "${cases[@]}"; do run_case "$c" >"$work/$c.out"; done  # one untimed round

section "tet-query: $repeat rounds of ${#cases[@]} processes, threads $threads, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < repeat; r++)); do
  for ((k = 0; k < ${#cases[@]}; k++)); do
    c="${cases[$(((k + r) % ${#cases[@]}))]}"
    times >"$work/cpu0"
    t0="$(date +%s.%N)"
    run_case "$c" >"$work/$c.out"
    t1="$(date +%s.%N)"
    times >"$work/cpu1"
    c0="$(children_cpu "$work/cpu0")" c1="$(children_cpu "$work/cpu1")"
    awk -v a="$t0" -v b="$t1" -v r="$r" 'BEGIN { printf "%d %.4f\n", r, b - a }' >>"$work/$c.times"
    awk -v a="$c0" -v b="$c1" -v r="$r" 'BEGIN { printf "%d %.3f\n", r, b - a }' >>"$work/$c.cpu"
  done
  printf '  round %d done (load %s)\n' "$((r + 1))" "$(cut -d' ' -f1 /proc/loadavg)"
done

# The faster scan limit of each round.
paste "$work/sum.times" "$work/psum.times" | awk '{ print $1, ($2 < $4 ? $2 : $4) }' >"$work/limit.times"
paste "$work/unzstd.times" "$work/punzstd.times" | awk '{ print $1, ($2 < $4 ? $2 : $4) }' >"$work/zlimit.times"

section "tet-query: minor page faults per GiB of payload (one more run of each)"
# faults NAME CMD...: the minor faults of one run of CMD, per GiB of payload.
faults() {
  local name="$1"
  shift
  /usr/bin/time -f "%R" -o "$work/$name.faults" "$@" >/dev/null
  printf '  %-18s %12.0f\n' "$name" "$(awk -v b="$logical_bytes" '{ f = $1 } END { print f / (b / 2^30) }' "$work/$name.faults")"
}
faults sum "$bench" sum "$raw" temp --threads "$threads"
faults psum "$bench" psum "$raw" temp --threads "$threads"
faults mean "$tessera" tet query '{"dataset":"temp","mean":[]}' -t "$raw" -x -q
faults mean_mmap env TESSERA_READ_PATH=mmap "$tessera" tet query '{"dataset":"temp","mean":[]}' -t "$raw" -x -q
faults mean_pread env TESSERA_READ_PATH=pread "$tessera" tet query '{"dataset":"temp","mean":[]}' -t "$raw" -x -q
faults zstd_mean_pread env TESSERA_READ_PATH=pread "$tessera" tet query '{"dataset":"temp","mean":[]}' -t "$zst" -x -q
faults numpy_mean "$python" -c "$numpy_mean" "$raw" "$raw_offset" all $shape

if [ "$cold_rounds" -gt 0 ]; then
  section "tet-query: cold page cache, $cold_rounds rounds (the file dropped from the cache before each run)"
  # The disk's sequential rate is dd with O_DIRECT (no page cache at all) over the same file.
  cold_cases=(dd mean mean_pread mean_mmap)
  for ((r = 0; r < cold_rounds; r++)); do
    for ((k = 0; k < ${#cold_cases[@]}; k++)); do
      c="${cold_cases[$(((k + r) % ${#cold_cases[@]}))]}"
      "$bench" evict "$raw"
      t0="$(date +%s.%N)"
      if [ "$c" = dd ]; then dd if="$raw" of=/dev/null bs=16M iflag=direct status=none; else run_case "$c" >/dev/null; fi
      t1="$(date +%s.%N)"
      awk -v a="$t0" -v b="$t1" -v r="$r" 'BEGIN { printf "%d %.4f\n", r, b - a }' >>"$work/cold_$c.times"
    done
  done
  file_bytes="$(stat -c %s "$raw")"
  for c in "${cold_cases[@]}"; do
    printf '  %-18s %s s, %s GB/s (rounds: %s)\n' "$c" "$(median_of "$work/cold_$c.times")" \
      "$(awk -v b="$file_bytes" -v t="$(median_of "$work/cold_$c.times")" 'BEGIN { printf "%.2f", b / t / 1e9 }')" \
      "$(awk '{ printf "%s ", $2 }' "$work/cold_$c.times")"
  done
fi

section "tet-query: median over ${median_gib} GiB with memory_budget_bytes 268435456 (RssAnon polled every 1 ms)"
median_query='{"dataset":"temp","median":[],"execution":{"memory_budget_bytes":268435456}}'
median_modes=(pinned shared)
[ "$smoke" = 1 ] && median_modes=() && echo "  (skipped by --smoke)"
# The pinned run is repeated (at most 3 times) until no two samples are more than 10 ms apart.
for mode in "${median_modes[@]}"; do
  for attempt in 1 2 3; do
    "$python" -c "$rss_peak" "$mode" "$tessera" tet query "$median_query" -t "$med" -x -q | tee "$work/median.$mode"
    grep -q 'memory_strategy=temp_spill_materialize' "$work/median.$mode" || { echo "median did not spill" >&2; exit 1; }
    [ "$mode" = pinned ] || break
    awk '$1 == "rss_anon_peak_kib" { exit !($6 <= 10) }' "$work/median.$mode" && break
  done
done

section "tet-query: results (last round)"
for c in "${cases[@]}"; do printf '  %-18s %s\n' "$c" "$(cut -c1-150 "$work/$c.out")"; done

section "tet-query: whole-process times, $(awk -v b="$logical_bytes" 'BEGIN { printf "%.2f", b / 2^30 }') GiB f32 (shape $shape)"
printf '  %-18s %9s %8s %9s   %s\n' case "median s" "GB/s" "CPU s" "all rounds (s)"
for c in "${cases[@]}"; do
  m="$(median_of "$work/$c.times")"
  printf '  %-18s %9.3f %8.2f %9.2f   %s\n' "$c" "$m" "$(awk -v b="$logical_bytes" -v t="$m" 'BEGIN { print b / t / 1e9 }')" \
    "$(median_of "$work/$c.cpu")" "$(awk '{ printf "%s ", $2 }' "$work/$c.times")"
done

# ratio NAME BASE QUERY OP TARGET: median over rounds of time(BASE) / time(QUERY) (the query's
# speed relative to BASE), checked as `median OP TARGET` (OP is >= or >).
ratio() {
  local file="$work/ratio.${2}.${3}" m
  paste "$work/$2.times" "$work/$3.times" | awk '{ print $1, $2 / $4 }' >"$file"
  m="$(median_of "$file")"
  printf '  %-44s %6.3f   target %-2s %-5s %-6s (rounds: %s)\n' "$1" "$m" "$4" "$5" \
    "$(awk -v m="$m" -v t="$5" -v op="$4" 'BEGIN { print ((op == ">" ? m > t : m >= t) ? "ok" : "MISSED") }')" \
    "$(awk '{ printf "%.2f ", $2 }' "$file")"
}
section "tet-query: ratios (per round, median)"
ratio "mmap sum / pread sum (which limit is faster)" psum sum ">" 0
ratio "mean / faster scan limit" limit mean ">=" 0.85
ratio "mean axis 0 / faster scan limit" limit mean_axis0 ">=" 0.60
ratio "pread-input unzstd / mapped-input unzstd" unzstd punzstd ">" 0
ratio "zstd mean / faster zstd-only decompress" zlimit zstd_mean ">=" 0.85
ratio "mean, forced mmap / faster scan limit" limit mean_mmap ">" 0
ratio "mean, forced pread / faster scan limit" limit mean_pread ">" 0
ratio "mean / numpy mean" numpy_mean mean ">=" 2
ratio "mean axis 0 / numpy mean axis 0" numpy_mean_axis0 mean_axis0 ">" 1
ratio "zstd mean / python-zstandard + numpy" python_zstd_mean zstd_mean ">" 1
if [ "$cold_rounds" -gt 0 ]; then
  ratio "cold mean / cold dd O_DIRECT" cold_dd cold_mean ">=" 0.80
  ratio "cold mean, forced pread / cold dd" cold_dd cold_mean_pread ">" 0
  ratio "cold mean, forced mmap / cold dd" cold_dd cold_mean_mmap ">" 0
fi
budget_kib=$(((268435456 + 134217728) / 1024))
for mode in "${median_modes[@]}"; do
  read -r peak_kib gap_ms <<<"$(awk '$1 == "rss_anon_peak_kib" { print $2, $6 }' "$work/median.$mode")"
  printf '  %-44s %6.1f MiB   target < %d MiB %-6s (largest sampling gap %s ms)\n' "median RssAnon peak ($mode)" \
    "$(awk -v k="$peak_kib" 'BEGIN { print k / 1024 }')" $((budget_kib / 1024)) \
    "$([ "$peak_kib" -lt "$budget_kib" ] && echo ok || echo MISSED)" "$gap_ms"
done
