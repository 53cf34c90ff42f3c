"""The C++ examples of docs/ name what the library really declares.

The `cpp` blocks are fragments (they use the reader's own variables), so they are not compiled;
instead every header a block includes must exist, every name it qualifies with a tessera
namespace (`cells::Tile::parse`, `ragged::RaggedField`) must be declared in the library's headers,
and every designated initializer (`{.threads = 4}`) must name a member some header declares. A
renamed type, function, header or option then fails here, naming the page and line.
"""
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
INCLUDE = REPO / "include"
NAMESPACES = {"io", "cells", "ragged", "zarr", "tet", "codec", "interop", "columnar", "image", "query", "hive",
              "morton", "geo", "zagg", "json", "csv", "yaml", "build"}


def cpp_blocks():
    for page in sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")]):
        lines = page.read_text(encoding="utf-8").splitlines()
        start = None
        for i, line in enumerate(lines):
            if start is None and line.strip() == "```cpp":
                start = i
            elif start is not None and line.strip().startswith("```"):
                yield page.relative_to(REPO), start + 1, "\n".join(lines[start + 1:i])
                start = None


def declared_words():
    """Identifiers of the headers' code: comments and string literals left out (a word in a
    comment declares nothing)."""
    words = set()
    for header in INCLUDE.rglob("*.hpp"):
        text = header.read_text(encoding="utf-8")
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        text = re.sub(r'"(?:\\.|[^"\\])*"', " ", text)
        words.update(re.findall(r"[A-Za-z_]\w*", text))
    return words


# Member functions of the standard library the examples call on their own containers.
STD_METHODS = {"size", "data", "begin", "end", "push_back", "emplace_back", "empty", "get", "value", "reset", "resize",
               "clear", "at", "front", "back", "count", "find", "insert", "reserve", "string", "c_str", "has_value",
               "substr", "append", "release", "wait", "join"}
BLOCKS = list(cpp_blocks())
WORDS = declared_words()


def test_there_are_cpp_examples_to_check():
    assert len(BLOCKS) >= 20


@pytest.mark.parametrize("page,line,code", BLOCKS, ids=[f"{p}:{n}" for p, n, _ in BLOCKS])
def test_cpp_example_names_what_the_library_declares(page, line, code):
    code = re.sub(r"//.*", "", code)  # comments may mention anything
    missing = []
    for header in re.findall(r'#include\s+"(tessera/[^"]+)"', code):
        if not (INCLUDE / header).is_file():
            missing.append(f"header {header}")
    for chain in re.findall(r"\b((?:[A-Za-z_]\w*::)+[A-Za-z_]\w*)", code):
        parts = chain.split("::")
        if parts[0] == "std" or not (parts[0] in NAMESPACES or parts[0] == "tessera"):
            continue
        missing += [f"{chain} ({name})" for name in parts[1:] if name not in WORDS]
    for member in re.findall(r"[{,(]\s*\.([A-Za-z_]\w*)\s*=", code):
        if member not in WORDS:
            missing.append(f"designated initializer .{member}")
    for method in re.findall(r"(?:\.|->)\s*([A-Za-z_]\w*)\s*[(<]", code):
        if method not in WORDS and method not in STD_METHODS:
            missing.append(f"member function {method}")
    assert not missing, f"{page}:{line}: the C++ example names what no header declares: {', '.join(missing)}"
