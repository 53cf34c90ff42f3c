#!/usr/bin/env bash
# Installs every Debian package tessera needs to build, test, benchmark and fuzz.
# Idempotent: packages already present are not touched, and apt is only called when
# something is missing. Runs as root (or through sudo when available) on Debian 12.
set -euo pipefail

packages=(
  # toolchain and build
  build-essential cmake ninja-build pkg-config ccache clang libclang-rt-14-dev lld clang-format clang-tidy
  # codecs, checksums, hashing
  libzstd-dev zstd zlib1g-dev libisal-dev libssl-dev
  # HTTP(S) and bucket reads (libcurl; expat for S3 listings), the loopback web server the remote-read
  # tests serve the conformance data from, and boto3, the independent S3 client (and SigV4 checker)
  # of the bucket tests
  libcurl4-openssl-dev libexpat1-dev nginx-light python3-boto3
  # images (ragged heatmaps) and HDF5 (h5ad / 10x input)
  libpng-dev libhdf5-dev libnetcdf-dev
  # Parquet footers (Thrift compact protocol), Arrow IPC metadata (flatbuffers), Parquet SNAPPY pages
  libthrift-dev thrift-compiler libflatbuffers-dev flatbuffers-compiler libsnappy-dev
  # JSON, TOML, YAML (zagg's pipeline configs; python3-yaml reads them independently in tests),
  # CLI, formatting, threads
  nlohmann-json3-dev libtomlplusplus-dev libyaml-dev python3-yaml libcli11-dev libfmt-dev libtbb-dev
  # tests and benchmarks; the chaos campaign measures peak RSS with GNU time and hashes with perl
  googletest libgtest-dev libbenchmark-dev hyperfine time perl
  # independent readers used by the tests
  python3 python3-numpy python3-h5py python3-anndata python3-scipy python3-zstandard python3-numcodecs python3-netcdf4
  python3-healpy
  # the pictures tessera draws are read back with Pillow and checked against matplotlib's colour maps
  python3-pil python3-matplotlib
  # the Python package: build (pybind11, setuptools, pip), its dependencies and integrations
  # (pandas, Dask + distributed, PyTorch, xarray) and its test runner
  pybind11-dev python3-pybind11 python3-dev python3-pip python3-setuptools python3-wheel python3-pytest
  python3-pandas python3-dask python3-distributed python3-torch python3-xarray
  # mypy's stubtest: tests/python/test_stubs.py checks the package's .pyi stubs against the runtime
  python3-mypy
)
# Node.js and npm run the npm-packaged independent readers (zarrita); a machine that already has
# them (e.g. a newer Node.js from elsewhere) keeps its own.
if ! command -v npm >/dev/null 2>&1; then packages+=(nodejs npm); fi

missing=()
for pkg in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" != *"install ok installed"* ]]; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#packages[@]} Debian packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "bootstrap: need root to install: ${missing[*]}" >&2; exit 1
  fi
fi
echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
