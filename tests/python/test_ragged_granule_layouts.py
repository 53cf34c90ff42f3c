"""Granule columns are read the same whatever their HDF5 storage: contiguous (read by libhdf5),
or chunked with gzip and shuffle, which tessera decodes itself, chunk by chunk, for speed. The
same rows stored every way build byte-identical hives (leaf content hashes). Also: chunks that
were never written read as the dataset's fill value, a 2-D filter column is read chunked, and a
damaged chunk is an error naming the granule and the dataset."""
import json
import pathlib
import shutil

import numpy as np
import pytest

from conftest import run_cli

h5py = pytest.importorskip("h5py")

CONFIGS = pathlib.Path(__file__).resolve().parents[1] / "data" / "conformance" / "zagg" / "configs"
FILL = np.finfo(np.float32).max
ROWS = 300_000  # more than one block of rows (262,144), so blocks meet chunks mid-chunk

# Storage of every column: h5py create_dataset keywords.
LAYOUTS = {
    "contiguous": {},
    "gzip": {"chunks": (1000,), "compression": "gzip"},
    "gzip-shuffle-odd-chunks": {"chunks": (7777,), "compression": "gzip", "shuffle": True},
    "chunked-plain": {"chunks": (4096,)},
}


def atl06_columns(seed=3):
    rng = np.random.default_rng(seed)
    lat = np.linspace(-75.0, -74.0, ROWS) + rng.normal(0, 0.001, ROWS)
    lon = 100.0 + rng.uniform(0.0, 1.0, ROWS)
    h = rng.normal(2500.0, 30.0, ROWS).astype(np.float32)
    s = rng.uniform(0.05, 0.5, ROWS).astype(np.float32)
    h[rng.uniform(size=ROWS) < 0.02] = FILL
    return {
        "latitude": lat,
        "longitude": lon,
        "h_li": h,
        "h_li_sigma": s,
        "atl06_quality_summary": (rng.uniform(size=ROWS) < 0.1).astype(np.int8),
        "delta_time": np.sort(rng.uniform(1e8, 1e8 + 600, ROWS)),
    }


def write_atl06(path, columns, layout):
    with h5py.File(path, "w") as f:
        f["ancillary_data/atlas_sdp_gps_epoch"] = np.array([1198800018.0])
        g = f.create_group("gt1l/land_ice_segments")
        for name, data in columns.items():
            g.create_dataset(name, data=data, **layout)
            if name in ("h_li", "h_li_sigma"):
                g[name].attrs["_FillValue"] = np.float32(FILL)


def build(granule, out, config="atl06.yaml", *flags):
    result = run_cli("ragged", "build", "--config", CONFIGS / config, "--input", granule, "--out", out,
                     "--threads", "2", *flags)
    report = json.loads(result.stdout)
    return report["rows"], [leaf["combined_hash"] for leaf in report["leaves"]]


def test_every_storage_of_the_same_rows_builds_the_same_hive(tmp_path):
    columns = atl06_columns()
    built = {}
    for name, layout in LAYOUTS.items():
        write_atl06(tmp_path / f"{name}.h5", columns, layout)
        built[name] = build(tmp_path / f"{name}.h5", tmp_path / f"{name}-hive")
    rows, hashes = built["contiguous"]
    assert rows["read"] == ROWS and rows["accepted"] > 0.8 * ROWS and len(hashes) > 1
    for name, got in built.items():
        assert got == built["contiguous"], name


def test_chunks_never_written_read_as_the_fill_value(tmp_path):
    """h_li written for its first third only: the other chunks are not allocated in the file, so
    they hold the dataset's fill value, which is also its _FillValue, and every such row is
    dropped as a fill."""
    columns = atl06_columns(seed=5)
    written = ROWS // 3
    path = tmp_path / "sparse.h5"
    with h5py.File(path, "w") as f:
        f["ancillary_data/atlas_sdp_gps_epoch"] = np.array([1198800018.0])
        g = f.create_group("gt1l/land_ice_segments")
        for name, data in columns.items():
            if name == "h_li":
                d = g.create_dataset(name, shape=(ROWS,), dtype=np.float32, chunks=(1000,), compression="gzip",
                                     fillvalue=FILL)
                d[:written] = data[:written]
            else:
                g.create_dataset(name, data=data, chunks=(1000,), compression="gzip")
            if name in ("h_li", "h_li_sigma"):
                g[name].attrs["_FillValue"] = np.float32(FILL)
        assert g["h_li"].id.get_num_chunks() == written // 1000
    rows, _ = build(path, tmp_path / "hive")
    flagged = columns["atl06_quality_summary"] != 0
    h = columns["h_li"].copy()
    h[written:] = FILL
    filled = ~flagged & (h == FILL)
    assert rows["rejected_by_reason"] == {"fill_value": int(filled.sum()), "quality_filter": int(flagged.sum())}
    assert rows["accepted"] == int((~flagged & ~filled).sum())


def test_a_chunked_two_dimensional_filter_column_reads_as_stored_contiguously(tmp_path):
    """zagg's ATL03 granule, its datasets rewritten chunked with gzip and shuffle (signal_conf_ph is
    [photons, 5], filtered on column 0) and rewritten contiguous: the same hive either way."""
    source = CONFIGS.parent / "tests" / "data" / "index" / "atl03_mini.h5"
    flags = ["--cell-order", "8", "--shard-order", "4", "--chunk-order", "6", "--delta", "12"]

    def rewrite(path, chunked):
        with h5py.File(source, "r") as src, h5py.File(path, "w") as dst:
            def copy(name, obj):
                if isinstance(obj, h5py.Dataset):
                    data = obj[()]
                    options = {}
                    if chunked and data.ndim >= 1 and data.shape[0] > 1:
                        options = {"chunks": (min(97, data.shape[0]),) + data.shape[1:], "compression": "gzip",
                                   "shuffle": True}
                    dst.create_dataset(name, data=data, **options)
                    for key, value in obj.attrs.items():
                        dst[name].attrs[key] = value
            src.visititems(copy)

    rewrite(tmp_path / "chunked.h5", True)
    rewrite(tmp_path / "contiguous.h5", False)
    with h5py.File(tmp_path / "chunked.h5", "r") as f:
        assert f["gt1l/heights/signal_conf_ph"].chunks == (97, 5)
    chunked = build(tmp_path / "chunked.h5", tmp_path / "chunked-hive", "atl03_tdigest_healpix_hive.yaml", *flags)
    contiguous = build(tmp_path / "contiguous.h5", tmp_path / "contiguous-hive", "atl03_tdigest_healpix_hive.yaml",
                       *flags)
    assert chunked == contiguous and chunked[0]["rejected_by_reason"]["filtered"] > 0


def test_a_damaged_chunk_names_the_granule_and_the_dataset(tmp_path):
    columns = atl06_columns(seed=7)
    path = tmp_path / "damaged.h5"
    write_atl06(path, columns, LAYOUTS["gzip"])
    with h5py.File(path, "r") as f:
        info = f["gt1l/land_ice_segments/h_li"].id.get_chunk_info(150)
    with open(path, "r+b") as f:  # overwrite the middle of one chunk's deflate stream
        f.seek(info.byte_offset + info.size // 2)
        f.write(bytes(64))
    result = run_cli("ragged", "build", "--config", CONFIGS / "atl06.yaml", "--input", path, "--out",
                     tmp_path / "hive", check=False)
    assert result.returncode != 0
    assert "damaged.h5" in result.stderr and "h_li" in result.stderr, result.stderr
    assert not (tmp_path / "hive" / "morton_hive.json").exists()
    shutil.rmtree(tmp_path / "hive", ignore_errors=True)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_granule_reader_killed_by_a_signal_is_one_error_naming_the_granule(tmp_path, cli, threads):
    """Granules are read in reader processes, because libhdf5 trusts what a file says and can
    crash or loop on a damaged one. Here a reader dies of SIGSEGV while it reads a granule (sent
    from outside, as a crash inside libhdf5 would raise it): the build ends with exit 1 and one
    error line naming that granule, and leaves no manifest behind."""
    import os
    import signal
    import subprocess
    import time

    granules = tmp_path / "granules"
    granules.mkdir()
    write_atl06(granules / "ATL06_000.h5", atl06_columns(seed=5), LAYOUTS["gzip"])
    for i in range(1, 40):  # many granules: the build forks a reader for each, so one is caught
        shutil.copyfile(granules / "ATL06_000.h5", granules / f"ATL06_{i:03d}.h5")
    proc = subprocess.Popen([str(cli), "ragged", "build", "--config", str(CONFIGS / "atl06.yaml"), "--input",
                             str(granules / "ATL06_*.h5"), "--out", str(tmp_path / "hive"), "--threads", str(threads)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    def reading_a_granule(pid):
        try:
            return any(os.readlink(fd).endswith(".h5") for fd in pathlib.Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            return False

    # The reader processes are forked before the build starts; one is killed while it has a
    # granule open (an idle reader that dies is just replaced).
    victim, deadline = None, time.monotonic() + 60
    while victim is None and proc.poll() is None and time.monotonic() < deadline:
        children = []
        for task in pathlib.Path(f"/proc/{proc.pid}/task").glob("*"):
            try:
                children += (task / "children").read_text().split()
            except OSError:
                pass
        busy = [int(c) for c in children if reading_a_granule(c)]
        if busy:
            victim = busy[0]
            os.kill(victim, signal.SIGSEGV)
        else:
            time.sleep(0.0005)
    _, err = proc.communicate(timeout=120)
    assert victim is not None, "the build ended before a granule reader could be caught"
    assert proc.returncode == 1, err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "libhdf5 crashed (Segmentation fault) reading the granule; the file is damaged" in err, err
    assert "/ATL06_0" in err, err
    assert not (tmp_path / "hive" / "morton_hive.json").exists()


def test_granules_read_by_parallel_readers_build_the_hive_one_reader_builds(tmp_path):
    """With two threads, two reader processes read granules ahead of the build, which still
    takes their rows in input order: the leaves equal those of a one-reader build."""
    for i in range(6):
        write_atl06(tmp_path / f"ATL06_{i}.h5", atl06_columns(seed=20 + i), LAYOUTS["gzip-shuffle-odd-chunks"])
    reports = {}
    for threads in (1, 2):
        reports[threads] = json.loads(run_cli("ragged", "build", "--config", CONFIGS / "atl06.yaml", "--input",
                                              tmp_path / "ATL06_*.h5", "--out", tmp_path / f"hive{threads}",
                                              "--threads", threads).stdout)
    assert reports[1]["rows"] == reports[2]["rows"] and reports[1]["rows"]["accepted"] > 0
    assert [(l["leaf"], l["combined_hash"]) for l in reports[1]["leaves"]] == \
           [(l["leaf"], l["combined_hash"]) for l in reports[2]["leaves"]]


def test_reader_processes_end_with_a_killed_build(tmp_path, cli):
    """A build killed with SIGKILL leaves no reader process behind, not even one that never looks
    at its channel again (stopped here, as one looping inside libhdf5 would be): the readers die
    with the build."""
    import os
    import signal
    import subprocess
    import time

    for i in range(30):
        write_atl06(tmp_path / f"ATL06_{i:02d}.h5", atl06_columns(seed=40 + i), LAYOUTS["gzip"])
    proc = subprocess.Popen([str(cli), "ragged", "build", "--config", str(CONFIGS / "atl06.yaml"), "--input",
                             str(tmp_path / "ATL06_*.h5"), "--out", str(tmp_path / "hive"), "--threads", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    def reading_a_granule(pid):
        try:
            return any(os.readlink(fd).endswith(".h5") for fd in pathlib.Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            return False

    # Both readers at work on a granule (so past their setup).
    readers, deadline = [], time.monotonic() + 60
    while len(readers) < 2 and proc.poll() is None and time.monotonic() < deadline:
        readers = []
        for task in pathlib.Path(f"/proc/{proc.pid}/task").glob("*"):
            try:
                readers += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
        readers = [pid for pid in readers if reading_a_granule(pid)]
    assert len(readers) == 2, "the build ended before both readers were seen at work"
    # Stopped, the readers stand for ones looping inside libhdf5: they would not notice the
    # build's end on their channel.
    for pid in readers:
        os.kill(pid, signal.SIGSTOP)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)

    def gone(pid):
        try:
            state = pathlib.Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            return True
        return state == "Z"  # dead, waiting to be reaped by init

    deadline = time.monotonic() + 10
    while not all(gone(pid) for pid in readers) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert all(gone(pid) for pid in readers), readers
