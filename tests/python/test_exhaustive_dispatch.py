"""Exhaustive dispatch over tessera's closed sets (docs/design.md, "Decisions").

A `switch` over one of the project's own enums (tet chunk codecs, dtypes, column types, HDF5
element and node kinds, query operations) has no `default`: a member added to the enum that some
switch does not handle is then a -Wswitch warning, which -Werror turns into a failed build,
instead of silently taking another member's path. A variant of Zarr codecs is dispatched with
std::visit and one lambda per alternative, so an added alternative does not compile at all.

Proven by doing it: each enum gets an extra member in a copy of `include/`, and every source that
switches over it is compiled against the copy (-fsyntax-only, with the Release build's own
command line from compile_commands.json, plus -Wswitch-enum). GCC tags a switch that misses the
member as [-Wswitch] when it has no default (a build failure) and as [-Wswitch-enum] when a
default would hide the member; there must be none of the second kind, and the dispatch sites
named below must be among the first.
"""
import concurrent.futures
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess

import pytest

import tessera

REPO = pathlib.Path(__file__).resolve().parents[2]
# The Release tree the package was assembled in (PYTHONPATH=<build>/python).
BUILD = pathlib.Path(os.environ.get("TESSERA_BUILD_DIR") or pathlib.Path(tessera.__file__).resolve().parents[2])

# (header, enum, files whose switches over it must fail on a new member).
ENUMS = [
    ("tet/format.hpp", "Codec", ["src/tet/chunk_codec.cpp", "src/tet/reader.cpp", "src/tet/writer.cpp", "src/interop/tet_export.cpp"]),
    ("core/dtype.hpp", "DType", ["src/zarr/data_type.cpp", "src/tet/synth.cpp", "src/tet_query/query_internal.hpp"]),
    ("columnar/column.hpp", "ColumnType", ["src/columnar/parquet_writer.cpp", "src/columnar/arrow_ipc_writer.cpp", "src/cells/var_table.cpp"]),
    ("interop/hdf5_file.hpp", "Hdf5Element", ["src/interop/h5ad_tables.cpp"]),
    ("interop/hdf5_file.hpp", "Hdf5Kind", ["src/interop/h5ad_tables.cpp"]),
    ("tet_query/query_document.hpp", "QueryOp", ["src/tet_query/query_document.cpp", "src/tet_query/query_toml.cpp", "src/tet_query/query_materialize.cpp"]),
]
# Translation units that only instantiate the fold kernels for more element types (minutes each):
# a header's switches are compiled through a lighter source that includes it.
SKIPPED = {"src/tet_query/query_fold_float.cpp", "src/tet_query/query_fold_int.cpp", "src/tet_query/query_fold_uint.cpp"}
WARNING = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):\d+: warning: enumeration value '(?P<member>\w+)' "
                     r"not handled in switch \[-W(?P<flag>switch|switch-enum)\]")


def compile_commands():
    path = BUILD / "compile_commands.json"
    if not path.is_file():
        pytest.fail(f"{path} is missing: the Release build exports it (CMAKE_EXPORT_COMPILE_COMMANDS)")
    commands = {}
    for entry in json.loads(path.read_text()):
        rel = os.path.relpath(entry["file"], REPO)
        if rel.startswith(("src/", "apps/", "python/src/")):
            commands[rel] = entry
    return commands


def syntax_check(entry, include_dir, extra=()):
    """Runs the compile command of one source with -fsyntax-only against `include_dir`."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "-o":
            skip = True
            continue
        if a in ("-c", "-Werror") or a.startswith("-Werror="):
            continue
        out.append(f"-I{include_dir}" if a == f"-I{REPO / 'include'}" else a)
    out += ["-fsyntax-only", "-Wswitch-enum", *extra]
    env = dict(os.environ, LC_ALL="C")  # plain quotes in diagnostics
    return subprocess.run(out, cwd=entry["directory"], capture_output=True, text=True, env=env, timeout=900)


def sources_switching_over(enum, commands):
    """{file with a `case …enum::` label: the translation units that compile its switches} — a
    source itself, a header every source that includes it directly (a switch in a template is
    only checked where the template is instantiated)."""
    case = re.compile(r"case\s+(\w+::)*" + enum + r"::\w+")
    files = [p for root in ("src", "apps", "python/src", "include") for p in sorted((REPO / root).rglob("*.[ch]pp"))
             if case.search(p.read_text(errors="replace"))]
    sources = {}
    for path in files:
        rel = os.path.relpath(path, REPO)
        if path.suffix == ".cpp":
            sources[rel] = [rel]
            continue
        includers = [c for c in commands if c not in SKIPPED and re.search(
            r'#include "(tessera/\w+/)?' + re.escape(path.name) + '"', (REPO / c).read_text(errors="replace"))]
        assert includers, f"no source includes {rel}"
        sources[rel] = includers
    return sources


def with_member(tmp_path, header, enum, member):
    """A copy of include/ whose `enum` gets `member` as its last enumerator."""
    copy = tmp_path / "include"
    shutil.copytree(REPO / "include", copy)
    path = copy / "tessera" / header
    text = path.read_text()
    m = re.search(r"enum class " + enum + r"\b[^{]*\{(?P<body>[^}]*)\}", text)
    assert m, f"enum {enum} not found in {header}"
    body = m.group("body").rstrip()
    text = text[:m.start("body")] + body.rstrip(",") + f", {member}\n" + text[m.end("body"):]
    path.write_text(text)
    return copy


def switch_sites(stderr, member):
    found = {"switch": set(), "switch-enum": set()}
    for line in stderr.splitlines():
        m = WARNING.match(line)
        if m and m.group("member") == member:
            found[m.group("flag")].add(f"{os.path.relpath(m.group('file'), REPO)}:{m.group('line')}")
    return found


@pytest.mark.parametrize("header,enum,required", ENUMS, ids=[e[1] for e in ENUMS])
def test_an_added_enum_member_fails_every_switch_over_it(tmp_path, header, enum, required):
    commands = compile_commands()
    sources = sources_switching_over(enum, commands)
    for site in required:
        assert site in sources, f"{site} no longer switches over {enum}: update this test"
    include = with_member(tmp_path, header, enum, "ProbeMember")
    units = sorted({unit for group in sources.values() for unit in group})
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda rel: (rel, syntax_check(commands[rel], include)), units))
    fails, hidden = set(), set()
    for rel, result in results:
        sites = switch_sites(result.stderr, "ProbeMember")
        fails |= sites["switch"]
        hidden |= sites["switch-enum"]
    assert not hidden, f"switches over {enum} with a default that hides a new member: {sorted(hidden)}"
    failing_files = {site.rsplit(":", 1)[0] for site in fails}
    for site in required:
        assert site in failing_files, f"{site}: no switch over {enum} fails on a new member ({sorted(fails)})"


def test_a_zarr_codec_variant_alternative_without_a_lambda_does_not_compile(tmp_path):
    commands = compile_commands()
    copy = tmp_path / "include"
    shutil.copytree(REPO / "include", copy)
    spec = copy / "tessera" / "zarr" / "codec_spec.hpp"
    text = spec.read_text()
    old = "using BytesToBytesCodec = std::variant<ZstdCodec, Crc32cCodec>;"
    assert old in text
    spec.write_text(text.replace(old, "struct ProbeCodec {};\nusing BytesToBytesCodec = std::variant<ZstdCodec, Crc32cCodec, ProbeCodec>;"))
    for rel in ("src/zarr/codec.cpp", "src/zarr/codec_spec.cpp"):
        assert syntax_check(commands[rel], REPO / "include").returncode == 0, rel
        broken = syntax_check(commands[rel], copy)
        assert broken.returncode != 0 and "ProbeCodec" in broken.stderr, f"{rel} compiled with an unhandled codec"
