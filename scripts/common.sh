# Shared by test.sh, fuzz.sh and demo.sh (sourced, not run): the repository root, the two
# build configurations, wall-clock timing and fuzz-corpus seeding, so each is written once.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
JOBS=2
# The conformance data vendored in the repository (tests/data/PROVENANCE.md), unless the
# environment points elsewhere; tests, fuzz seeds, benchmarks and the demo all read it from here.
CONFORMANCE_DIR="${TESSERA_CONFORMANCE_DIR:-$ROOT/tests/data/conformance}"

# Ninja, plus ccache as compiler launcher when it is installed.
common_cmake_args=(-G Ninja)
if command -v ccache >/dev/null 2>&1; then
  common_cmake_args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Without these, ccache declines to cache translation units that use a precompiled header.
  export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
  # Paths on the command line made relative to the build directory: two trees at the same depth
  # (build/release and build/minimal) then share every object whose flags they share.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
fi

# Release with gcc, warnings as errors, benchmarks on so they keep compiling, and the Python
# package (build/release/python) for Debian's Python, which the Python tests import. The fuzz entry
# points are not built here: the sanitizer build links them all as libFuzzer targets (and several
# corruption tests compile their sources with gcc). Every TESSERA_BUILD_* and TESSERA_WITH_* option
# is spelled out because the cache may come from another script's narrower configure.
release_cmake_args=(-DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DCMAKE_BUILD_TYPE=Release -DTESSERA_WERROR=ON)
configure_release() {
  cmake -S "$ROOT" -B "$ROOT/build/release" "${common_cmake_args[@]}" "${release_cmake_args[@]}" \
    -DTESSERA_BUILD_TESTS=ON -DTESSERA_BUILD_FUZZ=OFF -DTESSERA_BUILD_BENCH=ON \
    -DTESSERA_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3 \
    -DTESSERA_WITH_HDF5=ON -DTESSERA_WITH_NETCDF=ON -DTESSERA_WITH_PARQUET=ON -DTESSERA_WITH_PNG=ON
}

# configure_minimal DIR: the minimal build of docs/install.md (every TESSERA_WITH_* off, no Python,
# benchmarks or fuzz targets) in DIR, which tests/python/test_minimal_build.py puts beside the
# release tree. Same compiler, flags and launcher as configure_release, and position-independent
# code as the Python module makes it there (TESSERA_SHARED_LIBRARY), so that the objects the two
# trees share come from the compiler cache.
configure_minimal() {
  cmake -S "$ROOT" -B "$1" "${common_cmake_args[@]}" "${release_cmake_args[@]}" \
    -DTESSERA_BUILD_TESTS=ON -DTESSERA_BUILD_FUZZ=OFF -DTESSERA_BUILD_BENCH=OFF \
    -DTESSERA_PYTHON=OFF -DTESSERA_SHARED_LIBRARY=ON \
    -DTESSERA_WITH_HDF5=OFF -DTESSERA_WITH_NETCDF=OFF -DTESSERA_WITH_PARQUET=OFF -DTESSERA_WITH_PNG=OFF
}

# clang with address+undefined sanitizers and libFuzzer targets; -O1 keeps stacks readable, and
# line tables alone are enough for symbolized reports at a fraction of full debug info's build time.
configure_asan() {
  cmake -S "$ROOT" -B "$ROOT/build/asan" "${common_cmake_args[@]}" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" -DTESSERA_SANITIZE=ON \
    -DTESSERA_BUILD_TESTS=ON -DTESSERA_BUILD_FUZZ=ON -DTESSERA_BUILD_BENCH=OFF
}

now() { date +%s.%N; }
# seconds_since START: wall time since a `now` reading, one decimal.
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

section() { printf '\n==== %s ====\n' "$*"; }

# fuzz_targets: every libFuzzer binary of the asan build, one path per line.
fuzz_targets() {
  local bin
  for bin in "$ROOT"/build/asan/fuzz/fuzz_*; do
    if [ -f "$bin" ] && [ -x "$bin" ]; then printf '%s\n' "$bin"; fi
  done
}

# seed_corpus TARGET DIR: copies fuzz/corpus/TARGET/ and every path listed in fuzz/TARGET.seeds
# into DIR (flat, numbered so equal basenames cannot collide). A seeds line is a file or a
# folder, relative to the repository root or to the conformance data; blank lines and lines
# starting with '#' are skipped. A listed path that exists in neither place is an error, so a
# stale seeds file is noticed. Prints the number of seeds copied.
seed_corpus() {
  local target=$1 dir=$2 n=0 line path file
  local sources=()
  if [ -d "$ROOT/fuzz/corpus/$target" ]; then sources+=("$ROOT/fuzz/corpus/$target"); fi
  if [ -f "$ROOT/fuzz/$target.seeds" ]; then
    while IFS= read -r line || [ -n "$line" ]; do
      line="${line#"${line%%[![:space:]]*}"}"
      line="${line%"${line##*[![:space:]]}"}"
      if [ -z "$line" ] || [ "${line:0:1}" = "#" ]; then continue; fi
      if [ -e "$ROOT/$line" ]; then path="$ROOT/$line"
      elif [ -e "$CONFORMANCE_DIR/$line" ]; then path="$CONFORMANCE_DIR/$line"
      else
        echo "seed_corpus: $target.seeds lists '$line', found neither in $ROOT nor in $CONFORMANCE_DIR" >&2
        return 1
      fi
      sources+=("$path")
    done <"$ROOT/fuzz/$target.seeds"
  fi
  if [ ${#sources[@]} -gt 0 ]; then
    while IFS= read -r -d '' file; do
      n=$((n + 1))
      cp -- "$file" "$dir/seed-$(printf '%05d' "$n")-$(basename "$file")"
    done < <(find "${sources[@]}" -type f -print0)
  fi
  echo "$n"
}

# fault_in_libhdf5 LOG: true when the first failure libFuzzer or a sanitizer reported in LOG
# stopped inside libhdf5 rather than in tessera code: its first stack frame outside the
# sanitizer/libFuzzer runtime (its interceptors of memcpy & co. included), the allocator and libc lies in libhdf5 (for a leak: libhdf5
# allocated the memory and lost it). libhdf5 1.10 loops, reads out of bounds or clears
# gigabytes on some damaged global and local heaps (docs/compat.md D16); the CLI isolates those reads in a
# child process, the in-process h5ad fuzz target cannot, so such findings are triaged as known.
fault_in_libhdf5() {
  awk '
    /ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer)/ { in_report = 1; next }
    in_report && /^[[:space:]]*#[0-9]+ / {
      if ($0 ~ /__sanitizer|__asan|__ubsan|__interceptor_|fuzzer::|libclang_rt|crtstuff|libc\.so|libpthread|libgcc_s/) next
      # libc routines symbolized from its own sources (a memset the allocator runs for libhdf5).
      if ($0 ~ / in __(mem|str)[a-z0-9_]* .*sysdeps\//) next
      # The allocator interceptors on top of a leak report (the allocation was made below them).
      if ($0 ~ / in (malloc|calloc|realloc|strdup|operator new|operator new\[\])[ (]/) next
      found = ($0 ~ /libhdf5/) ? 1 : 0
      exit
    }
    END { exit !found }
  ' "$1"
}
