#!/usr/bin/env bash
# Runs the tests while busy processes saturate every core, to show that no test depends on an
# idle machine (docs/testing.md, "Under load").
#
#   scripts/under_load.sh [--nice N] [--stressors K] [--repeat R]
#       Starts K busy loops (default: one per online CPU) at niceness N (default 0: they compete
#       with the tests as equals; 19 makes them yield), then runs scripts/test.sh R times
#       (default 1).
#
#   scripts/under_load.sh [--nice N] [--stressors K] [--repeat R] --ctest-only BUILD_DIR [CTEST ARGS...]
#       The same load, but each run is `ctest --test-dir BUILD_DIR --output-on-failure CTEST ARGS`
#       on an existing build (e.g. `--ctest-only build/release -R 'ConvertKill|ObsConcurrency'`).
#
# The busy loops are stopped when the script exits, however it exits. Each run prints its counts;
# the last line sums them: "R runs (P passed, F failed); N tests passed, M failed". The exit status
# is 0 only when every run passed.
set -uo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

nice_level=0
stressors="$(nproc 2>/dev/null || echo 2)"
repeat=1
ctest_dir=""
ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --nice) [ $# -ge 2 ] || usage; nice_level=$2; shift 2 ;;
    --stressors) [ $# -ge 2 ] || usage; stressors=$2; shift 2 ;;
    --repeat) [ $# -ge 2 ] || usage; repeat=$2; shift 2 ;;
    --ctest-only) [ $# -ge 2 ] || usage; ctest_dir=$2; shift 2; ctest_args=("$@"); break ;;
    -h|--help) usage ;;
    *) echo "under_load.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
for n in "$nice_level" "$stressors" "$repeat"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "under_load.sh: '$n' is not a non-negative number" >&2; exit 2; }
done
if [ -n "$ctest_dir" ] && [ ! -f "$ctest_dir/CTestTestfile.cmake" ]; then
  echo "under_load.sh: $ctest_dir is not a configured build directory" >&2
  exit 2
fi

stressor_pids=()
stop_stressors() {
  local pid
  for pid in "${stressor_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${stressor_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  stressor_pids=()
}
trap stop_stressors EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for ((i = 0; i < stressors; i++)); do
  nice -n "$nice_level" yes >/dev/null &
  stressor_pids+=("$!")
done
echo "under_load: $stressors busy loops at nice $nice_level (pids ${stressor_pids[*]})"

runs_passed=0 runs_failed=0 tests_passed=0 tests_failed=0
log="$(mktemp)"
trap 'stop_stressors; rm -f "$log"' EXIT
for ((run = 1; run <= repeat; run++)); do
  section "run $run of $repeat under load"
  t0="$(now)"
  rc=0
  if [ -n "$ctest_dir" ]; then
    ctest --test-dir "$ctest_dir" --output-on-failure "${ctest_args[@]}" 2>&1 | tee "$log" || rc=$?
    # ctest ends with e.g. "98% tests passed, 1 test failed out of 57".
    line="$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)"
    failed="$(sed -nE 's/.* ([0-9]+) tests? failed out of.*/\1/p' <<<"$line")"
    total="$(sed -nE 's/.* failed out of ([0-9]+).*/\1/p' <<<"$line")"
    passed=$(( ${total:-0} - ${failed:-0} ))
  else
    bash "$ROOT/scripts/test.sh" 2>&1 | tee "$log" || rc=$?
    line="$(tail -n 1 "$log")"
    passed="$(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed(, [0-9]+ skipped)?$/\1/p' <<<"$line")"
    failed="$(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed(, [0-9]+ skipped)?$/\2/p' <<<"$line")"
  fi
  passed=${passed:-0} failed=${failed:-0}
  if [ -z "$line" ]; then failed=$((failed + 1)); fi  # no summary: the run itself broke
  if [ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]; then runs_passed=$((runs_passed + 1)); else runs_failed=$((runs_failed + 1)); fi
  tests_passed=$((tests_passed + passed))
  tests_failed=$((tests_failed + failed))
  echo "under_load: run $run: $passed tests passed, $failed failed, exit $rc, $(seconds_since "$t0") s"
done
echo "$repeat runs ($runs_passed passed, $runs_failed failed); $tests_passed tests passed, $tests_failed failed"
[ "$runs_failed" -eq 0 ]
