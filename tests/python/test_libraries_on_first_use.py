"""libhdf5, libnetcdf and libcurl (with the forty libraries they bring) are loaded when a process
first needs them, not at its start (docs/design.md, "Libraries loaded on first use"). The dynamic
loader's own record (LD_DEBUG=files) shows which libraries a `tessera` process loaded and how; the
converted values are checked against h5py and netCDF4."""
import os
import re
import subprocess

import h5py
import netCDF4
import numpy as np
import pytest

import tessera
from tessera import tet

ON_FIRST_USE = ("libhdf5", "libnetcdf", "libcurl")


def loaded_libraries(*args, cwd=None):
    """Runs the CLI; returns {library file name: how it came in} from the loader's record."""
    env = dict(os.environ, LD_DEBUG="files")
    proc = subprocess.run([str(tessera.cli_path()), *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=300, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-4000:]
    libraries = {}
    for m in re.finditer(r"file=(\S+) \[\d+\];\s+(needed by|dynamically loaded by)", proc.stderr):
        libraries.setdefault(os.path.basename(m.group(1)), m.group(2))
    assert libraries, "the loader recorded nothing: LD_DEBUG is not honoured here"
    return libraries


def named(libraries, prefix):
    return {name: how for name, how in libraries.items() if name.startswith(prefix)}


def test_reading_a_local_tet_file_loads_none_of_them(conformance):
    libraries = loaded_libraries("tet", "info", conformance / "tetration" / "sample.tet")
    for prefix in ON_FIRST_USE:
        assert named(libraries, prefix) == {}, f"{prefix} was loaded by a process that never used it"
    # The record does list the libraries the CLI links (so an empty result above means something).
    assert named(libraries, "libzstd")


def test_an_hdf5_input_loads_libhdf5_when_it_is_opened(tmp_path):
    values = np.arange(24, dtype=np.float32).reshape(4, 6) * 0.5
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f.create_dataset("v", data=values, chunks=(2, 3))
    libraries = loaded_libraries("tet", "convert", tmp_path / "in.h5", tmp_path / "out.tet")
    hdf5 = named(libraries, "libhdf5")
    assert hdf5 and all(how == "dynamically loaded by" for how in hdf5.values()), hdf5
    assert named(libraries, "libnetcdf") == {}
    with tet.open(tmp_path / "out.tet") as t:
        np.testing.assert_array_equal(t["v"][...], values)


def test_a_netcdf_input_loads_libnetcdf_when_it_is_opened(tmp_path):
    values = np.linspace(-3, 3, 35, dtype=np.float64).reshape(5, 7)
    with netCDF4.Dataset(tmp_path / "in.nc", "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("y", 5)
        nc.createDimension("x", 7)
        nc.createVariable("t", "f8", ("y", "x"))[:] = values
    libraries = loaded_libraries("tet", "convert", tmp_path / "in.nc", tmp_path / "out.tet")
    netcdf = named(libraries, "libnetcdf")
    assert netcdf and all(how == "dynamically loaded by" for how in netcdf.values()), netcdf
    with tet.open(tmp_path / "out.tet") as t:
        np.testing.assert_array_equal(t["t"][...], values)


def test_importing_the_python_module_and_reading_loads_none_of_them(conformance):
    code = ("import sys, tessera\nfrom tessera import tet\n"
            f"t = tet.open({str(conformance / 'tetration' / 'sample.tet')!r})\n"
            "[t[name][...] for name in t.keys()]\n"
            "print(open('/proc/self/maps').read())\n")
    maps = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True, check=True,
                          timeout=300, env=dict(os.environ)).stdout
    for prefix in ON_FIRST_USE:
        assert f"/{prefix}" not in maps, f"{prefix} is mapped in a process that never used it"
    assert "_tessera" in maps
