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


def run_child_interpreter(code: str, *args):
    """Runs `code` in a new interpreter that imports this tessera; it must exit normally (no
    signal, no uncaught exception)."""
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, proc.stderr
    return proc


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
    proc = run_child_interpreter(code, root)
    assert proc.stdout.strip() == "LimitError"


def zeros_tet(tmp_path, size: int):
    """A .tet with one u8 dataset of `size` zero bytes (a multiple of 128 KiB) in one zstd tile,
    written as a frame of RLE blocks: genuine data, 4 bytes per 128 KiB on disk."""
    frame = bytearray(struct.pack("<IBBQ", 0xFD2FB528, 0xC0, 0x50, size))
    block = 128 * 1024
    for done in range(0, size, block):
        last = 1 if done + block >= size else 0
        frame += (last | (1 << 1) | (block << 3)).to_bytes(3, "little") + b"\0"
    name = b"x"
    record = struct.pack("<IIII", len(name), 5, 1, 0) + name + b"\0" * 7 + struct.pack("<QQ", size, size)
    index_offset = 40 + len(record)  # 8-aligned: the record is 40 bytes
    entry = struct.pack("<Q", 0) + b"\0" * 64 + struct.pack("<QQQII", index_offset + 32 + 104, size, len(frame), 1, 0)
    header = b"TETR" + struct.pack("<IIIQQ", 1, 1, 0, index_offset, 32 + 104) + struct.pack("<Q", len(record))
    index = b"TIDX" + struct.pack("<IQHHIQ", 1, 1, 0, 0, 0, 0)
    path = tmp_path / "zeros.tet"
    path.write_bytes(header + record + index + entry + bytes(frame))
    return path


def test_out_of_memory_raises_limit_error_not_memory_error(tmp_path):
    """A genuine 512 MiB tile read under an address-space limit 192 MiB above the interpreter's
    own: the failed allocation reaches Python as tessera.LimitError, and the interpreter lives."""
    path = zeros_tet(tmp_path, 512 << 20)
    code = (
        "import resource, sys, tessera\n"
        "f = tessera.tet.open(sys.argv[1])\n"
        "vm = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmSize:')) * 1024\n"
        "resource.setrlimit(resource.RLIMIT_AS, (vm + (192 << 20), resource.RLIM_INFINITY))\n"
        "try:\n"
        "    f.query({'dataset': 'x', 'sum': []})\n"
        "    print('no error')\n"
        "except tessera.LimitError as e:\n"
        "    print('LimitError', e.message)\n"
    )
    proc = run_child_interpreter(code, path)
    assert proc.stdout.startswith("LimitError out of memory: an allocation failed"), proc.stdout + proc.stderr
