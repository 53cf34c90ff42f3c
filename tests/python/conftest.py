"""Shared fixtures of the Python test suite.

The suite runs against the package assembled in a CMake build tree (``<build>/python`` on
``PYTHONPATH``, see scripts/test.sh) or against an installed package. Conformance files come from
``$TESSERA_CONFORMANCE_DIR`` when set, else the copy vendored in ``tests/data/conformance``.
"""
import os
import pathlib
import subprocess

import pytest

import tessera

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def conformance() -> pathlib.Path:
    """The conformance directory (tetration/, deltacells/, zagg/)."""
    root = pathlib.Path(os.environ.get("TESSERA_CONFORMANCE_DIR") or REPO / "tests" / "data" / "conformance")
    if not root.is_dir():
        pytest.fail(f"conformance data not found at {root} (set TESSERA_CONFORMANCE_DIR)")
    return root


@pytest.fixture(scope="session")
def cli() -> pathlib.Path:
    """The `tessera` CLI shipped inside the package."""
    path = tessera.cli_path()
    assert path.is_file(), path
    return path


def run_cli(*args, check=True, **kwargs) -> subprocess.CompletedProcess:
    """Runs the packaged CLI; returns the completed process (stdout/stderr as text)."""
    proc = subprocess.run([str(tessera.cli_path()), *map(str, args)], capture_output=True, text=True, **kwargs)
    if check and proc.returncode != 0:
        raise AssertionError(f"tessera {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr}")
    return proc
