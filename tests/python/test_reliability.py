"""Hostile documents end in a tessera.Error, never a crash or a UnicodeDecodeError
(docs/reliability.md): JSON nested past the limit, and invalid UTF-8 inside a file's JSON."""
import os
import shutil
import struct
import subprocess
import sys

import pytest

import tessera

DEPTH = 100000  # deep enough to overflow the stack of any recursive walk


def tet_with_footer(conformance, tmp_path, footer_json: bytes):
    """sample.tet with flag bit 0 set and `footer_json` appended as its history footer."""
    data = bytearray((conformance / "tetration" / "sample.tet").read_bytes())
    struct.pack_into("<I", data, 12, 1)
    data += footer_json + struct.pack("<QI", len(footer_json), 1) + b"THST"
    path = tmp_path / "case.tet"
    path.write_bytes(bytes(data))
    return path


def test_deep_cells_manifest_raises_limit_error(conformance, tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(conformance / "deltacells" / "dataset_small", root)
    manifest = (root / "manifest.json").read_text()
    deep = "[" * DEPTH + "]" * DEPTH
    (root / "manifest.json").write_text(manifest.replace('"hand-made fixture"', deep))
    with pytest.raises(tessera.LimitError) as info:
        tessera.cells.open(root)
    assert "manifest.json" in str(info.value)
    assert "limit 512" in str(info.value)


def test_deep_tet_footer_raises_format_error(conformance, tmp_path):
    path = tet_with_footer(conformance, tmp_path, b'{"history":' + b"[" * DEPTH + b"]" * DEPTH + b"}")
    with pytest.raises(tessera.FormatError, match="history footer JSON is invalid"):
        tessera.tet.open(path)


def test_invalid_utf8_in_json_raises_format_error(conformance, tmp_path):
    path = tet_with_footer(conformance, tmp_path, b'{"history":[],"x":"\xff"}')
    with pytest.raises(tessera.FormatError) as info:
        tessera.tet.open(path)
    message = str(info.value)
    assert "history footer JSON is invalid" in message
    assert "\\xff" in message  # the byte is shown escaped, never raw
    assert message.isprintable()
    assert info.value.message.isprintable()


def test_interpreter_survives_deep_documents(conformance, tmp_path):
    """The same failures in a child interpreter: it exits normally, not by a signal."""
    root = tmp_path / "ds"
    shutil.copytree(conformance / "deltacells" / "dataset_small", root)
    manifest = (root / "manifest.json").read_text()
    (root / "manifest.json").write_text(manifest.replace('"hand-made fixture"', '{"a":' * DEPTH + "1" + "}" * DEPTH))
    code = (
        "import sys, tessera\n"
        "try:\n"
        "    tessera.cells.open(sys.argv[1])\n"
        "except tessera.Error as e:\n"
        "    print(type(e).__name__)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "LimitError"
