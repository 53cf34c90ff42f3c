"""The typed stubs (python/tessera/*.pyi) agree with the runtime package.

mypy's stubtest imports the package beside its stubs and compares every public name: names in a
stub but not at runtime and the reverse, `__all__`, the kind of each object (function, class,
property, constant), parameter names, kinds and defaults, and base classes. The public modules are
pure Python (the extension `_tessera` is private and has no stub), so stubtest sees real
signatures. It cannot see attributes an object sets on itself in `__init__`; the last tests check
those on real instances.
"""
import ast
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tessera
import tessera.cells
import tessera.ragged
import tessera.tet

PACKAGE = pathlib.Path(tessera.__file__).absolute().parent  # not resolved: the .py files may be links
STUBS = {"tessera": "__init__.pyi", "tessera.tet": "tet.pyi", "tessera.cells": "cells.pyi",
         "tessera.ragged": "ragged.pyi"}

MYPY_CONFIG = """\
[mypy]
# The private pure-Python modules (_cells_torch.py, ...) have no stubs, so mypy would type-check
# their sources as the stubs of those modules; stubtest skips private modules anyway.
exclude = tessera/_[a-z_]+\\.py$

# cells.pyi names pandas.DataFrame and scipy.sparse.csr_matrix; Debian's pandas and scipy ship no
# type information, so those types are Any to mypy (stubtest still compares the names using them).
[mypy-pandas,pandas.*,scipy,scipy.*]
ignore_missing_imports = True
"""

# Differences stubtest reports that are not errors in the stubs, as regular expressions over the
# reported name, each with a comment saying why. Keep it short: a wrong stub is fixed, not listed.
ALLOWLIST: list[str] = []


def stubtest(root: pathlib.Path, work: pathlib.Path) -> subprocess.CompletedProcess:
    """Runs stubtest on the `tessera` package found in `root` (one error per line)."""
    pytest.importorskip("mypy.stubtest", reason="needs mypy's stubtest (Debian python3-mypy, scripts/bootstrap.sh)")
    config = work / "mypy.ini"
    config.write_text(MYPY_CONFIG)
    args = [sys.executable, "-m", "mypy.stubtest", "--concise", "--mypy-config-file", str(config)]
    if ALLOWLIST:
        allowlist = work / "allowlist.txt"
        allowlist.write_text("".join(entry + "\n" for entry in ALLOWLIST))
        args += ["--allowlist", str(allowlist)]
    # cwd: mypy finds nothing of the checkout there, and anything it writes goes to the temp dir.
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([*args, "tessera"], cwd=work, env=env, capture_output=True, text=True, timeout=600)


def test_stubtest_finds_no_difference(tmp_path):
    proc = stubtest(PACKAGE.parent, tmp_path)
    assert proc.returncode == 0, f"stubtest: stubs disagree with the runtime:\n{proc.stdout}{proc.stderr}"


def test_stubtest_reports_a_stub_that_disagrees(tmp_path):
    # A copy of the package whose stubs carry three mistakes: a renamed parameter, a function the
    # runtime lacks and a missing method.
    package = tmp_path / "root" / "tessera"
    package.mkdir(parents=True)
    for f in PACKAGE.iterdir():
        if f.suffix in (".py", ".pyi") or f.name == "py.typed":
            shutil.copy(f, package / f.name)
    extension = pathlib.Path(tessera._tessera.__file__)
    (package / extension.name).symlink_to(extension)

    def edit(name, old, new):
        text = (package / name).read_text()
        assert old in text, (name, old)
        (package / name).write_text(text.replace(old, new, 1))

    edit("tet.pyi", "def open(path: PathLike, *", "def open(filename: PathLike, *")
    edit("ragged.pyi", "def parse_word(", "def not_at_runtime() -> None: ...\ndef parse_word(")
    edit("cells.pyi", "    def batch_nnz(self, cells: _Cells) -> int: ...\n", "")

    proc = stubtest(tmp_path / "root", tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = sorted(line for line in proc.stdout.splitlines() if line.startswith("tessera."))
    assert errors == [
        "tessera.cells.Dataset.batch_nnz is not present in stub",
        "tessera.ragged.not_at_runtime is not present at runtime",
        'tessera.tet.open is inconsistent, stub argument "filename" differs from runtime argument "path"',
    ], proc.stdout + proc.stderr


# Attributes declared in a stub class body (`name: type`) that an instance sets on itself.


def declared_attributes() -> dict[str, set[str]]:
    """{"module.Class": annotated names} of every stub class that declares attributes."""
    found = {}
    for module, stub in STUBS.items():
        for node in ast.parse((PACKAGE / stub).read_text()).body:
            if isinstance(node, ast.ClassDef):
                names = {a.target.id for a in node.body if isinstance(a, ast.AnnAssign)}
                if names:
                    found[f"{module}.{node.name}"] = names
    return found


def stub_members(qualname: str) -> set[str]:
    """Every name a stub class defines: attributes, methods and properties."""
    module, cls = qualname.rsplit(".", 1)
    for node in ast.parse((PACKAGE / STUBS[module]).read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return {a.target.id for a in node.body if isinstance(a, ast.AnnAssign)} | {
                f.name for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    raise AssertionError(f"{qualname} not in its stub")


def an_error(tmp_path, conformance):
    with pytest.raises(tessera.Error) as err:
        tessera.tet.open(tmp_path / "missing.tet")
    return err.value


def a_tet_dataset(tmp_path, conformance):
    file = tessera.tet.open(conformance / "tetration" / "sample.tet")
    return file[file.keys()[0]]


def a_torch_dataset(tmp_path, conformance):
    pytest.importorskip("torch")
    return tessera.cells.TorchDataset(conformance / "deltacells" / "dataset_small", 4)


INSTANCES = {
    "tessera.Error": an_error,
    "tessera.tet.Dataset": a_tet_dataset,
    "tessera.ragged.TensorBlock": lambda *_: tessera.ragged.TensorBlock(
        np.zeros((1, 1, 1)), np.zeros((1, 1), np.uint8), 0.0, 1.0, 5, start=3, order=2, side=1, n_bins=1),
    "tessera.ragged.CellRecord": lambda *_: tessera.ragged.CellRecord(5, 0, 0, 7, np.zeros(1)),
    "tessera.cells.TorchDataset": a_torch_dataset,
}
# Classes with declared attributes that no instance here shows, and why.
NOT_INSTANTIATED = {
    # `code` is set on the instances a reader emits through warnings.warn, not by the class.
    "tessera.ragged.RaggedWarning",
}


def test_every_class_with_declared_attributes_has_an_instance_here():
    assert set(declared_attributes()) == set(INSTANCES) | NOT_INSTANTIATED


@pytest.mark.parametrize("qualname", sorted(INSTANCES))
def test_instance_attributes_match_the_stub(qualname, tmp_path, conformance):
    instance = INSTANCES[qualname](tmp_path, conformance)
    missing = sorted(name for name in declared_attributes()[qualname] if not hasattr(instance, name))
    assert not missing, f"{qualname}: declared in the stub, absent on an instance: {missing}"
    members = stub_members(qualname)
    undeclared = sorted(name for name in vars(instance) if not name.startswith("_") and name not in members)
    assert not undeclared, f"{qualname}: set on instances, not in the stub: {undeclared}"
