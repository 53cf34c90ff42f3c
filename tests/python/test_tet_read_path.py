"""Streaming scans through pread copies (io/read_path.hpp): the page faults of a scan do not grow
with the file, every read path gives numpy's values, and a bad TESSERA_READ_PATH is refused by
name. The bit-for-bit agreement of the paths over many geometries is tests/tet_query/read_path_test.cpp."""
import os
import resource
import subprocess

import numpy as np
import pytest

import tessera
from tessera import tet
from conftest import run_cli

MEAN = '{"dataset":"a","mean":[]}'


def _faults(path, read_path):
    """Minor page faults of one whole `tet query` mean process on `path`, and its output."""
    env = dict(os.environ, TESSERA_READ_PATH=read_path)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    proc = subprocess.run([str(tessera.cli_path()), "tet", "query", MEAN, "-t", str(path), "-x", "-q"],
                          capture_output=True, text=True, env=env, check=True)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before, proc.stdout


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    """Raw and zstd files of 128 and 512 MiB (f32 [N, 1024, 1024]); the values follow the index."""
    d = tmp_path_factory.mktemp("scans")
    files = {}
    for codec, chunks in (("raw", "16x1024x1024"), ("zstd", "16x256x256")):
        for rows in (32, 128):
            path = d / f"{codec}{rows}.tet"
            spec = f"a:f32:{rows}x1024x1024:{chunks}:{codec}" + (":1" if codec == "zstd" else "")
            run_cli("tet", "synth", path, "--dataset", spec, "--seed", "3")
            files[codec, rows] = path
    return files


@pytest.mark.parametrize("codec", ["raw", "zstd"])
def test_pread_scans_fault_a_fixed_number_of_pages_whatever_the_file_size(scans, codec):
    small, small_out = _faults(scans[codec, 32], "pread")
    large, large_out = _faults(scans[codec, 128], "pread")
    # 384 MiB more data: mapped 4 KiB pages would add 98,304 faults and even large folios add
    # about 190 (raw) and 650 (zstd) on the test machine; the copies land in the same reused
    # buffers, so only bookkeeping for the 4x chunks may differ (0 raw, 40-100 zstd measured).
    assert large - small < (64 if codec == "raw" else 256), (small, large)
    # The same scan through the map gives the same answer.
    assert _faults(scans[codec, 128], "mmap")[1] == large_out
    assert small_out != large_out


@pytest.mark.parametrize("read_path", ["mmap", "pread", "auto"])
@pytest.mark.parametrize("codec", ["raw", "zstd"])
def test_whole_array_reads_and_folds_equal_numpy_on_every_path(tmp_path, monkeypatch, read_path, codec):
    a = np.random.default_rng(4).standard_normal((12, 300, 700)).astype(np.float32)
    path = tmp_path / "a.tet"
    tet.write(path, {"a": a}, chunks=(5, 300, 700), codec=codec)
    monkeypatch.setenv("TESSERA_READ_PATH", read_path)
    f = tet.open(path)
    np.testing.assert_array_equal(f["a"][...], a)
    np.testing.assert_array_equal(f["a"][3:11:2, 7:290, ::3], a[3:11:2, 7:290, ::3])
    ex = f.query({"dataset": "a", "mean": [0]})["execution"]
    np.testing.assert_allclose(ex["operation_reduced_mean"], a.astype(np.float64).mean(axis=0), rtol=1e-12)
    assert f.query({"dataset": "a", "sum": []})["execution"]["operation_sum"] == pytest.approx(
        a.astype(np.float64).sum(), rel=1e-12)


def test_an_unknown_read_path_is_refused_by_name(scans):
    proc = subprocess.run([str(tessera.cli_path()), "tet", "query", MEAN, "-t", str(scans["raw", 32]), "-x", "-q"],
                          capture_output=True, text=True, env=dict(os.environ, TESSERA_READ_PATH="fastest"))
    assert proc.returncode == 1, proc.stderr  # tet query's exit code for a refused query
    assert "TESSERA_READ_PATH is 'fastest'; use auto, mmap or pread" in proc.stderr
