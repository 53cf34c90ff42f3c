"""The installed library (docs/install.md): `cmake --install` of the Release tree into a scratch
prefix, then a program outside the tree (tests/install/consumer) built against it twice, with
find_package(tessera COMPONENTS tet tet_query cells) and with pkg-config, reads a .tet dataset,
queries its maximum and reads a deltacells dataset. What it prints is compared with the independent
numpy decoder of tet.md (tet_truth.py) and with the dataset's source matrix in the conformance
data."""
import json
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import tessera
from tet_truth import read_tet

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("TESSERA_BUILD_DIR") or pathlib.Path(tessera.__file__).resolve().parents[2])
CONSUMER = REPO / "tests" / "install" / "consumer"


def run(args, **kwargs):
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=900, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, args))}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    if not (BUILD / "cmake_install.cmake").is_file():
        pytest.fail(f"{BUILD} is not a configured build tree")
    out = tmp_path_factory.mktemp("prefix")
    run(["cmake", "--install", BUILD, "--prefix", out])
    return out


@pytest.fixture(scope="module")
def expected(conformance):
    values, _ = read_tet(conformance / "tetration" / "sample.tet")
    temperature = values["temperature"][0]
    matrix = np.array(json.loads((conformance / "deltacells" / "expected_dataset_small.json").read_text())
                      ["source_matrix_dense_source_gene_order"], dtype=np.int64)
    return [f"tet {temperature.size} {float(temperature.astype(np.float64).sum()):.17g}",
            f"query {float(temperature.max()):.17g}",
            f"cells {matrix.shape[0]} {matrix.shape[1]} {np.count_nonzero(matrix)} {matrix.sum()}"]


def consumer_output(binary, conformance):
    result = run([binary, conformance / "tetration" / "sample.tet", "temperature", conformance / "deltacells" / "dataset_small"])
    return result.stdout.splitlines()


def test_the_install_holds_headers_libraries_and_both_package_files(prefix):
    libdirs = [p for p in prefix.glob("lib*/**/cmake/tessera") if p.is_dir()]
    assert len(libdirs) == 1, sorted(prefix.rglob("*"))
    for name in ("tesseraConfig.cmake", "tesseraConfigVersion.cmake", "tesseraTargets.cmake"):
        assert (libdirs[0] / name).is_file(), name
    assert (prefix / "include" / "tessera" / "version.hpp").is_file()
    assert (prefix / "include" / "tessera" / "tet" / "reader.hpp").is_file()
    assert (prefix / "include" / "tessera" / "tet_query" / "query_engine.hpp").is_file()
    assert list(prefix.glob("lib*/**/libtessera_tet.a")) and list(prefix.glob("lib*/**/libtessera.so"))
    assert list(prefix.glob("lib*/**/libtessera_tet_query.a"))
    assert list(prefix.glob("lib*/**/pkgconfig/tessera.pc"))


def test_a_cmake_project_finds_the_package_and_reads_both_formats(prefix, expected, conformance, tmp_path):
    build = tmp_path / "build"
    run(["cmake", "-S", CONSUMER, "-B", build, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", build])
    assert consumer_output(build / "consumer", conformance) == expected


def test_a_component_that_does_not_exist_is_refused(prefix, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(p LANGUAGES CXX)\nfind_package(tessera REQUIRED COMPONENTS tet nosuch)\n")
    result = subprocess.run(["cmake", "-S", project, "-B", tmp_path / "build", f"-DCMAKE_PREFIX_PATH={prefix}"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "nosuch" in result.stdout + result.stderr


def test_a_pkg_config_build_links_the_shared_library(prefix, expected, conformance, tmp_path):
    pkgconfig = next(prefix.glob("lib*/**/pkgconfig"))
    env = dict(os.environ, PKG_CONFIG_PATH=str(pkgconfig))
    flags = run(["pkg-config", "--cflags", "--libs", "tessera"], env=env).stdout.split()
    libdir = next(f[2:] for f in flags if f.startswith("-L"))
    binary = tmp_path / "consumer"
    run([shutil.which("g++") or "g++", "-std=c++20", "-O1", CONSUMER / "consumer.cpp", *flags, f"-Wl,-rpath,{libdir}", "-o", binary])
    assert consumer_output(binary, conformance) == expected


def test_the_optional_features_are_components(prefix, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(p LANGUAGES CXX)\n"
        "find_package(tessera REQUIRED COMPONENTS tet hdf5 netcdf parquet png)\n"
        'message(STATUS "tessera features: [${tessera_FEATURES}] parquet: ${tessera_WITH_PARQUET}")\n')
    result = run(["cmake", "-S", project, "-B", tmp_path / "build", f"-DCMAKE_PREFIX_PATH={prefix}"])
    assert "tessera features: [hdf5;netcdf;parquet;png] parquet: ON" in result.stdout, result.stdout
    pc = next(prefix.glob("lib*/**/pkgconfig/tessera.pc")).read_text()
    assert "\nfeatures=hdf5 netcdf parquet png\n" in pc, pc
