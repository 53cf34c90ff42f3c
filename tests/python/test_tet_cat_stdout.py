"""`tessera tet cat FILE DATASET -o -` streams the .npy to standard output: through a pipe it
loads (numpy) to the same array as the file output, and with `--png` the picture's line goes to
stderr so the stream stays a valid .npy."""
import io
import subprocess

import numpy as np

import tessera


def test_npy_on_stdout_equals_the_file_output(conformance, tmp_path):
    tet_file = conformance / "tetration" / "large.tet"
    name = tessera.tet.open(tet_file).keys()[0]
    cli = str(tessera.cli_path())
    subprocess.run([cli, "tet", "cat", tet_file, name, "-o", tmp_path / "x.npy"], check=True, capture_output=True)
    piped = subprocess.run([cli, "tet", "cat", tet_file, name, "-o", "-"], check=True, capture_output=True)
    np.testing.assert_array_equal(np.load(io.BytesIO(piped.stdout)), np.load(tmp_path / "x.npy"))
    assert piped.stdout == (tmp_path / "x.npy").read_bytes()


def test_picture_line_goes_to_stderr_when_the_array_is_on_stdout(conformance, tmp_path):
    tet_file = conformance / "tetration" / "sample.tet"
    f = tessera.tet.open(tet_file)
    name = next(k for k in f.keys() if f[k].ndim == 2)
    r = subprocess.run([str(tessera.cli_path()), "tet", "cat", tet_file, name, "-o", "-", "--png", tmp_path / "p.png"],
                       check=True, capture_output=True, cwd=tmp_path)
    np.testing.assert_array_equal(np.load(io.BytesIO(r.stdout)), f[name][...])
    assert b"pixels, colour bar" in r.stderr
