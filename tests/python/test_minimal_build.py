"""A minimal build (docs/install.md, "Minimal builds"): every TESSERA_WITH_* option off, no Python
module, benchmarks or fuzz targets. It must configure without HDF5, NetCDF, Thrift, Snappy and
libpng, link none of them, read .tet files and deltacells matrices as the full build does, and
refuse what needs a missing feature with an error naming the CMake option.

The tree is configured by scripts/common.sh's configure_minimal beside the release tree
(`<build>/../minimal`): the same compiler, flags and ccache launcher, at the same depth below the
repository, so ccache serves every object the two trees share and only the stand-ins
(`*_unavailable.cpp`), the feature switch (core/feature.cpp) and the objects that name the tree
(the test helper holding the CLI's path) are compiled. Only the CLI, libtessera.so (for the
install) and the tet and cells test suites are built; the tree is kept, so a second run only
checks that it is up to date.
"""
import os
import pathlib
import re
import subprocess

import pytest

import tessera

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("TESSERA_BUILD_DIR") or pathlib.Path(tessera.__file__).resolve().parents[2])
FEATURES = {"HDF5": "hdf5", "NETCDF": "netcdf", "THRIFT": "thrift", "PNG": "png", "Snappy": "snappy"}
# The reader suites of test_tet and test_cells: opening, reading and describing files, the cells
# CLI (info, get, verify) and an MTX conversion (a dataset written without obs or var table).
# The h5ad suites are included for their skips (they need HDF5).
READER_SUITES = ["TetFileOpen", "TetFileRead", "TouchedChunks", "InfoText", "InfoJson", "InfoFilter",
                 "DatasetSmall", "Manifest", "GeneFiles", "TileConformance", "TileV2", "TileDecode",
                 "CellsCli", "MtxConvert", "H5adConvert"]


def searched_for(cache):
    """The entries find_package, pkg_check_modules and find_program left in a CMake cache for
    any optional library (none should be there when its feature is off)."""
    pattern = re.compile("|".join(FEATURES) + "|TESSERA_THRIFT")
    return [line for line in cache.read_text().splitlines()
            if not line.startswith(("//", "TESSERA_WITH_")) and pattern.search(line.split("=")[0])]


def run(args, timeout=600, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kwargs)


@pytest.fixture(scope="module")
def minimal():
    if not (BUILD / "CMakeCache.txt").is_file():
        pytest.fail(f"{BUILD} is not a configured build tree")
    tree = BUILD.parent / "minimal"
    # A cold cache compiles the library once more (minutes); a warm one only the stand-ins.
    script = 'source scripts/common.sh && configure_minimal "$1" >/dev/null && ninja -C "$1" -j"$JOBS" tessera tessera_shared test_tet test_cells'
    result = run(["bash", "-c", script, "configure_minimal", tree], timeout=3600, cwd=REPO)
    assert result.returncode == 0, f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return tree


def test_no_optional_library_is_searched_for_or_linked(minimal):
    assert not searched_for(minimal / "CMakeCache.txt")
    features = (minimal / "generated" / "tessera" / "features.hpp").read_text()
    for option in ("TESSERA_WITH_HDF5", "TESSERA_WITH_NETCDF", "TESSERA_WITH_PARQUET", "TESSERA_WITH_PNG"):
        assert f"#define {option} 0" in features
    needed = run(["readelf", "-d", minimal / "tessera"]).stdout
    libraries = [line.split("[")[1].rstrip("]") for line in needed.splitlines() if "(NEEDED)" in line]
    assert libraries and not [lib for lib in libraries if any(f"lib{name}" in lib for name in FEATURES.values())], libraries


def test_the_tet_and_cells_reader_suites_pass(minimal):
    result = run(["ctest", "--test-dir", minimal, "-L", "^(tet|cells)$", "-R", f"^({'|'.join(READER_SUITES)})\\.",
                  "-j2", "--output-on-failure"], timeout=900)
    assert result.returncode == 0, result.stdout[-6000:]
    assert "tests passed" in result.stdout and " 0 tests failed" in result.stdout, result.stdout[-2000:]


def test_a_case_needing_a_missing_feature_skips_naming_the_option(minimal):
    result = run([minimal / "tests" / "test_cells", "--gtest_filter=H5adConvert.LayersAndRaw"])
    assert result.returncode == 0, result.stdout
    assert "[  SKIPPED ]" in result.stdout and "-DTESSERA_WITH_HDF5=OFF" in result.stdout, result.stdout


def test_tet_info_prints_what_the_full_build_prints(minimal, conformance):
    sample = conformance / "tetration" / "sample.tet"
    mine, full = run([minimal / "tessera", "tet", "info", sample]), run([BUILD / "tessera", "tet", "info", sample])
    assert mine.returncode == 0, mine.stderr
    assert mine.stdout == full.stdout


@pytest.mark.parametrize("option, args", [
    ("HDF5", ["tet", "convert", "{conformance}/tetration/sources/h5/tensor_3d.h5", "{tmp}/out.tet"]),
    ("NETCDF", ["tet", "convert", "{conformance}/tetration/sources/netcdf/tensor_3d.nc", "{tmp}/out.tet"]),
    ("PNG", ["cells", "info", "{conformance}/deltacells/dataset_small", "--png", "{tmp}/tiles.png"]),
    ("PARQUET", ["ragged", "build", "--input", "{tmp}/points.parquet", "--out", "{tmp}/store", "--value-col", "v"]),
])
def test_a_command_needing_a_missing_feature_names_the_option(minimal, conformance, tmp_path, option, args):
    (tmp_path / "points.parquet").write_bytes(b"PAR1" + bytes(8) + b"PAR1")
    args = [a.format(conformance=conformance, tmp=tmp_path) for a in args]
    result = run([minimal / "tessera", *args])
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"this build was configured with -DTESSERA_WITH_{option}=OFF" in result.stderr, result.stderr


def configure_consumer(prefix, tmp_path, components):
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(p LANGUAGES CXX)\n"
        f"find_package(tessera REQUIRED COMPONENTS {components})\n"
        'message(STATUS "tessera features: [${tessera_FEATURES}] parquet: ${tessera_WITH_PARQUET}")\n')
    return run(["cmake", "-S", project, "-B", tmp_path / f"build-{components.replace(' ', '-')}",
                f"-DCMAKE_PREFIX_PATH={prefix}"], timeout=300)


def test_the_installed_package_needs_no_missing_library_and_names_missing_components(minimal, tmp_path):
    prefix = tmp_path / "prefix"
    result = run(["cmake", "--install", minimal, "--prefix", prefix])
    assert result.returncode == 0, result.stdout + result.stderr
    found = configure_consumer(prefix, tmp_path, "tet cells")
    assert found.returncode == 0, found.stdout + found.stderr
    assert not searched_for(tmp_path / "build-tet-cells" / "CMakeCache.txt")
    assert "tessera features: [] parquet: OFF" in found.stdout, found.stdout
    refused = configure_consumer(prefix, tmp_path, "cells parquet")
    assert refused.returncode != 0
    assert "-DTESSERA_WITH_PARQUET=OFF" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    pc = next(prefix.glob("lib*/**/pkgconfig/tessera.pc")).read_text()
    assert "\nfeatures=\n" in pc, pc
