"""The package as a whole: exception types, stubs and docstrings, the bundled CLI."""
import inspect
import pathlib
import subprocess

import pytest

import tessera
from tessera import _cli


def test_exceptions_derive_from_the_builtins_callers_catch():
    assert issubclass(tessera.FormatError, tessera.Error) and issubclass(tessera.FormatError, ValueError)
    assert issubclass(tessera.UsageError, ValueError)
    assert issubclass(tessera.LimitError, ValueError)
    assert issubclass(tessera.IoError, OSError)
    assert issubclass(tessera.UnsupportedError, NotImplementedError)
    assert issubclass(tessera.Error, Exception)


def test_library_errors_carry_message_path_and_structure(tmp_path):
    bad = tmp_path / "x.tet"
    bad.write_bytes(b"TETR" + b"\0" * 10)
    with pytest.raises(tessera.FormatError) as err:
        tessera.tet.open(bad)
    e = err.value
    assert e.path == str(bad) and e.message and str(e).startswith(str(bad))


def test_cli_errors_map_to_the_same_types(tmp_path):
    with pytest.raises(tessera.UsageError):
        _cli.run(["tet", "info", "--no-such-flag"])
    with pytest.raises(tessera.IoError) as err:
        _cli.run(["tet", "info", str(tmp_path / "missing.tet")])
    assert "missing.tet" in str(err.value)
    (tmp_path / "bad.tet").write_bytes(b"TETR" + b"\0" * 10)
    with pytest.raises(tessera.FormatError):
        _cli.run(["tet", "info", str(tmp_path / "bad.tet")])


def test_option_args_spell_cli_flags():
    assert _cli.option_args({"tile_size": 5, "no_obs_names": True, "skip": False, "input": ["a", "b"],
                             "none": None}) == ["--tile-size", "5", "--no-obs-names", "--input", "a",
                                                "--input", "b"]


@pytest.mark.parametrize("module", [tessera, tessera.tet, tessera.cells, tessera.ragged])
def test_every_public_function_and_method_has_a_docstring(module):
    missing = []
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    for name in names:
        obj = getattr(module, name)
        if inspect.ismodule(obj) or not callable(obj) or getattr(obj, "__module__", "").split(".")[0] != "tessera":
            continue
        if not inspect.getdoc(obj):
            missing.append(name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for attr, member in vars(obj).items():
                if attr.startswith("_") or not (callable(member) or isinstance(member, property)):
                    continue
                if not inspect.getdoc(member):
                    missing.append(f"{name}.{attr}")
    assert not missing, f"{module.__name__}: no docstring on {missing}"


def test_type_stubs_ship_beside_every_module():
    package = pathlib.Path(tessera.__file__).parent
    for name in ["__init__", "tet", "cells", "ragged"]:
        assert (package / f"{name}.pyi").is_file(), name
    assert (package / "py.typed").is_file()


def test_the_bundled_cli_is_this_version():
    out = subprocess.run([str(tessera.cli_path()), "--version"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"tessera {tessera.__version__}"
