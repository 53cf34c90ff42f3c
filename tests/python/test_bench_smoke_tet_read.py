"""The tet-read benchmark runs end to end on a 64 MiB file: bench_tet_read (the reader against
memcpy, pread and bare libzstd) and bench/bench_tet_read_peers.py (whole-array reads from Python
against numpy, h5py and a bare pread copy, on the same files and their twins). Only that every
figure is printed is checked, and that the peers read the same values (the script exits non-zero
otherwise); no timing is asserted (docs/performance.md records measured runs)."""
import os
import pathlib
import subprocess
import sys

import pytest

import tessera

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_tet_read_benchmark_and_its_peers_run(tmp_path):
    build = pathlib.Path(tessera.__file__).resolve().parents[2]
    bench = build / "bench" / "bench_tet_read"
    if not bench.exists():
        pytest.skip(f"{bench} is not built (an installed package, or a build without benchmarks)")
    out = subprocess.run([bench, "--data-dir", tmp_path, "--size-gib", "0.0625", "--repeat", "1", "--no-cli"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    for figure in ("(a'') pread per chunk", "(b) TetFile::decode_chunk, raw chunks", "b/max(a',a'')",
                   "d/max(c,c'')"):
        assert figure in out.stdout, f"{figure!r} missing:\n{out.stdout}"

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(pathlib.Path(tessera.__file__).parent.parent),
                                                       os.environ.get("PYTHONPATH", "")]))
    peers = subprocess.run([sys.executable, REPO / "bench" / "bench_tet_read_peers.py", "--data-dir", tmp_path,
                            "--size-gib", "0.0625", "--repeat", "1"], capture_output=True, text=True, env=env,
                           timeout=600)
    assert peers.returncode == 0, peers.stdout + peers.stderr
    summary = peers.stdout[peers.stdout.index("Summary"):]
    for figure in ("tessera raw / numpy np.load", "tessera rows / numpy np.load", "tessera zstd / numpy np.load",
                   "tessera raw / one-thread pread copy", "tessera raw / h5py"):
        assert figure in summary, f"{figure!r} missing:\n{peers.stdout}"
    assert "(h5py not installed)" not in summary  # the README's install step brings h5py
