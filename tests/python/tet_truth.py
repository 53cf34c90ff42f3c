"""An independent `.tet` decoder for the tests, written from tet.md §1 with numpy and zstandard only.

It shares no code with tessera: datasets are assembled tile by tile from the chunk index, so a
test comparing it with `tessera.tet` checks the library's reader, slicing and writer against the
specification, not against itself.
"""
import json
import struct

import numpy as np
import zstandard

TAGS = {1: "<f4", 2: "<f8", 3: "<i4", 4: "<i8", 5: "|u1", 6: "<u2", 7: "<i2", 8: "<u4", 9: "<f2", 10: "<u8"}


def read_tet(path):
    """{name: (array, {"chunks": tuple, "codecs": set})} and the footer JSON (or None)."""
    data = open(path, "rb").read()
    assert data[:4] == b"TETR"
    count, flags = struct.unpack_from("<II", data, 8)
    index_offset, _ = struct.unpack_from("<QQ", data, 16)
    records, pos = [], 40
    for _ in range(count):
        name_len, tag, ndim, _ = struct.unpack_from("<IIII", data, pos)
        name = data[pos + 16:pos + 16 + name_len].decode()
        body = pos + ((16 + name_len + 7) // 8) * 8
        shape = struct.unpack_from(f"<{ndim}Q", data, body)
        chunks = struct.unpack_from(f"<{ndim}Q", data, body + 8 * ndim)
        records.append((name, np.dtype(TAGS[tag]), shape, chunks))
        pos = body + 16 * ndim
    out = {name: (np.zeros(shape, dtype), {"chunks": chunks, "codecs": set()}) for name, dtype, shape, chunks in records}
    if count:
        assert data[index_offset:index_offset + 4] == b"TIDX"
        (entries,) = struct.unpack_from("<Q", data, index_offset + 8)
        for e in range(entries):
            at = index_offset + 32 + 104 * e
            ds_id = struct.unpack_from("<Q", data, at)[0]
            coords = struct.unpack_from("<8Q", data, at + 8)
            offset, raw_len, stored_len, codec = struct.unpack_from("<QQQI", data, at + 72)
            name, dtype, shape, chunks = records[ds_id]
            payload = data[offset:offset + stored_len]
            if codec == 1:
                payload = zstandard.ZstdDecompressor().decompressobj().decompress(payload)
            assert len(payload) == raw_len
            lo = [c * cs for c, cs in zip(coords, chunks)]
            hi = [min(l + cs, n) for l, cs, n in zip(lo, chunks, shape)]
            tile = np.frombuffer(payload, dtype).reshape([h - l for l, h in zip(lo, hi)])
            array, info = out[name]
            array[tuple(slice(l, h) for l, h in zip(lo, hi))] = tile
            info["codecs"].add(codec)
    footer = None
    if flags & 1:
        json_len, version = struct.unpack_from("<QI", data, len(data) - 16)
        assert data[-4:] == b"THST" and version == 1
        try:
            footer = json.loads(data[len(data) - 16 - json_len:len(data) - 16])
        except ValueError:
            footer = None  # a file whose footer bytes are not JSON (plan.tet carries filler)
    return out, footer


def random_key(rng, shape, *, integer_arrays=False):
    """A random indexing key, one entry per axis of `shape`: an integer (negative ones too), a
    slice with bounds anywhere in -n-2..n+2 and a step of 1..3, everything reversed (step -1 or
    -2), or everything. With `integer_arrays` a sorted unique integer array replaces the reversal
    (the outer indexing xarray's `isel` does)."""
    key = []
    for n in shape:
        kind = rng.integers(4)
        if kind == 0:
            key.append(int(rng.integers(-n, n)))
        elif kind == 1:
            a, b = sorted(rng.integers(-n - 2, n + 2, size=2))
            key.append(slice(int(a), int(b), int(rng.integers(1, 4))))
        elif kind == 2 and integer_arrays:
            key.append(np.unique(rng.integers(0, n, size=3)))
        elif kind == 2:
            key.append(slice(None, None, -int(rng.integers(1, 3))))
        else:
            key.append(slice(None))
    return tuple(key)
