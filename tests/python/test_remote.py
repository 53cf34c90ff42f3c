"""The Python module reading over HTTP: nginx on 127.0.0.1 serves the conformance data, and
`tessera.tet.open(url)`, `tessera.cells.open(url)` and `tessera.ragged.open(url, field)` return
what the local opens return. Skips only when nginx is not installed (scripts/bootstrap.sh
installs nginx-light)."""
import json
import os
import shutil
import socket
import subprocess
import time

import numpy as np
import pytest

import tessera
from tessera import ragged, tet

NGINX = next((p for p in (os.environ.get("TESSERA_NGINX"), "/usr/sbin/nginx", shutil.which("nginx")) if p and os.access(p, os.X_OK)), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(conformance, tmp_path_factory):
    """http://127.0.0.1:PORT serving the conformance directory (stopped at the end)."""
    if NGINX is None:
        pytest.skip("nginx is not installed (scripts/bootstrap.sh installs nginx-light)")
    scratch = tmp_path_factory.mktemp("nginx")
    port = _free_port()
    temps = "".join(f"  {k}_temp_path {scratch}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (scratch / "nginx.conf").write_text(
        f"daemon off;\nmaster_process off;\npid {scratch}/nginx.pid;\nerror_log {scratch}/error.log warn;\n"
        f"events {{ worker_connections 64; }}\nhttp {{\n  access_log {scratch}/access.log;\n{temps}"
        f"  server {{ listen 127.0.0.1:{port}; root {conformance.resolve()}; location / {{ }} }}\n}}\n")
    proc = subprocess.Popen([NGINX, "-p", str(scratch), "-c", str(scratch / "nginx.conf"), "-e", str(scratch / "error.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"nginx did not start: {(scratch / 'error.log').read_text(errors='replace')}")
            time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=30)


@pytest.mark.parametrize("name", ["sample.tet", "large.tet", "multichunk_f16.tet", "generated/labeled.tet"])
def test_tet_open_url_reads_like_the_local_file(server, conformance, name):
    local = tet.open(conformance / "tetration" / name)
    remote = tet.open(f"{server}/tetration/{name}")
    assert remote.keys() == local.keys()
    for key in local.keys():
        np.testing.assert_array_equal(remote[key][...], local[key][...])


def test_xarray_opens_a_url_like_the_local_file(server, conformance):
    xr = pytest.importorskip("xarray")
    from tessera._xarray_backend import TesseraBackendEntrypoint

    name = "generated/labeled.tet"
    remote = xr.open_dataset(f"{server}/tetration/{name}", engine=TesseraBackendEntrypoint, chunks={})
    local = xr.open_dataset(conformance / "tetration" / name, engine=TesseraBackendEntrypoint)
    assert remote.encoding["source"] == f"{server}/tetration/{name}"
    xr.testing.assert_identical(remote.compute(), local)


def test_cells_open_url_reads_like_the_local_dataset(server, conformance):
    path = conformance / "deltacells" / "dataset_small"
    with tessera.cells.open(path) as a, tessera.cells.open(f"{server}/deltacells/dataset_small") as b:
        assert (b.n_cells, b.n_genes) == (a.n_cells, a.n_genes)
        rows = list(range(a.n_cells))[::-1]
        np.testing.assert_array_equal(b.get_batch(rows).toarray(), a.get_batch(rows).toarray())


def test_ragged_open_url_reads_cells_like_the_local_leaf(server, conformance):
    rel = "zagg/tests/data/spec/minimal/1/1/2/1/3/11213.zarr"
    a = ragged.open(conformance / rel, "6/h_tdigest")
    b = ragged.open(f"{server}/{rel}", "6/h_tdigest")
    assert b.size == a.size
    for i in range(a.size):
        np.testing.assert_array_equal(b.read_cell(i), a.read_cell(i))
    hive = ragged.open(f"{server}/zagg/tests/data/spec/minimal", "6/h_tdigest", shard="11213")
    np.testing.assert_array_equal(hive.read_cell(1), a.read_cell(1))
    with pytest.raises(tessera.UnsupportedError, match="plain HTTP"):
        ragged.open(f"{server}/{rel}").fields()


def test_missing_url_is_an_io_error(server):
    with pytest.raises(tessera.IoError, match="404"):
        tet.open(f"{server}/tetration/no_such.tet")
    with pytest.raises(tessera.UnsupportedError, match="ftp://"):
        tet.open("ftp://host/x.tet")


def test_a_query_on_a_url_writes_nothing_beside_the_url(server, conformance, tmp_path):
    """A remote `.tet` has no local directory: a fold creates nothing in the working directory, and
    a relative spill lands there, as for a bare file name (the URL's "directory" once became a
    local folder named `http:`)."""
    url = f"{server}/tetration/sample.tet"
    name = tet.open(conformance / "tetration" / "sample.tet").keys()[0]
    cli = [str(tessera.cli_path()), "tet", "query"]
    fold = subprocess.run([*cli, json.dumps({"dataset": name, "mean": []}), "-t", url, "-x", "-q"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert fold.returncode == 0, fold.stderr
    assert list(tmp_path.iterdir()) == []
    spill = subprocess.run([*cli, json.dumps({"dataset": name, "spill": "out.bin"}), "-t", url, "-x", "-q"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert spill.returncode == 0, spill.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]
    values = tet.open(url)[name][...]  # a spill is the selection's raw little-endian elements
    np.testing.assert_array_equal(np.fromfile(tmp_path / "out.bin", dtype=values.dtype.newbyteorder("<")), values.ravel())


def test_the_http_library_is_loaded_on_the_first_request(server, conformance):
    """libcurl is not loaded at a process's start (docs/design.md, "Libraries loaded on first
    use"), but by the first request; the CLI then reads the URL as it reads the file."""
    from test_libraries_on_first_use import loaded_libraries, named

    local = subprocess.run([str(tessera.cli_path()), "tet", "info", conformance / "tetration" / "sample.tet"],
                           capture_output=True, text=True, check=True, timeout=300).stdout
    libraries = loaded_libraries("tet", "info", f"{server}/tetration/sample.tet")
    curl = named(libraries, "libcurl")
    assert curl and all(how == "dynamically loaded by" for how in curl.values()), curl
    remote = subprocess.run([str(tessera.cli_path()), "tet", "info", f"{server}/tetration/sample.tet"],
                            capture_output=True, text=True, check=True, timeout=300).stdout
    assert remote.replace(f"{server}/tetration/sample.tet", "X") == local.replace(
        str(conformance / "tetration" / "sample.tet"), "X")
