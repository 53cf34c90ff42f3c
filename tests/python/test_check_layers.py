"""scripts/check_layers.py: the layer rule (an include may only name the module itself or one it
depends on in CMakeLists.txt) and the layer table of docs/design.md (one row per module, every
file named, nothing stale). Each rule is broken once in a small tree of its own, and the real
tree must pass."""
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check_layers.py"

CMAKE = """tessera_module(core DEPS TBB::tbb)
tessera_module(io DEPS tessera_core PRIVATE_DEPS CURL::libcurl)
tessera_module(codec DEPS tessera_io)
tessera_module(tet DEPS tessera_codec)
"""
DESIGN = """# notes

## Layers

| layer | rooms | notes |
|---|---|---|
| core | `error` | |
| io | `store`, `uri` | |
| codec | `json` | |
| tet | `reader` | |

## Decisions
"""


def make_tree(root: pathlib.Path, design: str = DESIGN) -> pathlib.Path:
    files = {
        "CMakeLists.txt": CMAKE,
        "docs/design.md": design,
        "include/tessera/core/error.hpp": "#pragma once\n",
        "src/core/error.cpp": '#include "tessera/core/error.hpp"\n',
        "include/tessera/io/store.hpp": '#include "tessera/core/error.hpp"\n',
        "src/io/uri.cpp": '#include "tessera/io/store.hpp"\n',
        "include/tessera/codec/json.hpp": '#include "tessera/io/store.hpp"\n',
        "src/tet/reader.cpp": '#include "tessera/codec/json.hpp"\n#include "tessera/core/error.hpp"\n',
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def check(root):
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, timeout=60)


def test_a_tree_that_keeps_the_rules_passes(tmp_path):
    result = check(make_tree(tmp_path))
    assert (result.returncode, result.stdout) == (0, "")


def test_an_upward_include_is_named_with_file_and_line(tmp_path):
    root = make_tree(tmp_path)
    (root / "src/io/uri.cpp").write_text('#include "tessera/io/store.hpp"\n#include "tessera/tet/reader.hpp"\n')
    result = check(root)
    assert result.returncode == 1
    assert result.stdout.startswith("src/io/uri.cpp:2: includes tessera/tet/reader.hpp, but module 'io' does not "
                                    "depend on 'tet' (it may use: core, io)")


def test_a_dependency_reached_through_another_module_is_allowed(tmp_path):
    root = make_tree(tmp_path)
    (root / "src/tet/reader.cpp").write_text('#include "tessera/io/store.hpp"\n')  # tet → codec → io
    assert check(root).returncode == 0


def test_the_table_must_name_every_module_and_file_and_nothing_else(tmp_path):
    design = DESIGN.replace("| tet | `reader` | |\n", "").replace("`store`, `uri`", "`store`, `http`")
    root = make_tree(tmp_path, design)
    (root / "src/codec").mkdir()
    (root / "src/codec/yaml.cpp").write_text("")
    lines = check(root).stdout.splitlines()
    assert "docs/design.md: the layer table has no row for module 'tet'" in lines
    assert "docs/design.md:8: row 'io' does not list `uri`" in lines
    assert "docs/design.md:8: row 'io' lists `http`, which has no file" in lines
    assert "docs/design.md:9: row 'codec' does not list `yaml`" in lines
    assert len(lines) == 4, lines


def test_the_repository_keeps_the_rules():
    result = check(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
