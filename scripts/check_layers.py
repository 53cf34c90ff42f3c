#!/usr/bin/env python3
"""Holds the layer rule and the layer table (docs/design.md, "Layers").

    scripts/check_layers.py [REPO]

1. Every `#include "tessera/<module>/…"` in `src/<m>/` and `include/tessera/<m>/` names <m> itself
   or a module <m> depends on, directly or through others, as the `tessera_module(<m> DEPS …)`
   lines of CMakeLists.txt declare. All modules share one include directory, so the compiler
   cannot hold this rule; this script does.
2. The layer table of docs/design.md has one row per module, and its rooms column names every
   file of `src/<m>/` and `include/tessera/<m>/` (by stem: `tile` stands for tile.hpp and
   tile.cpp) and nothing that does not exist.

Prints one line per violation, naming the file and line, and exits 1 if there is any; exits 0
silently otherwise. Standard library only, so it runs before anything is built.
"""
import pathlib
import re
import sys

MODULE_LINE = re.compile(r"^tessera_module\((\w+)(.*)\)\s*$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"tessera/(\w+)/([^"]+)"')
TABLE_ROW = re.compile(r"^\|\s*(\w+)\s*\|(.*?)\|")
ROOM = re.compile(r"`([\w.]+)`")
SOURCE_SUFFIXES = {".hpp", ".cpp", ".h", ".inc"}


def module_graph(cmake_text):
    """{module: set of modules it depends on directly}, from the tessera_module(...) lines."""
    graph = {}
    for line in cmake_text.splitlines():
        m = MODULE_LINE.match(line.strip())
        if not m:
            continue
        words = m.group(2).split()
        deps, section = set(), None
        for w in words:
            if w in ("DEPS", "PRIVATE_DEPS"):
                section = w
            elif section and w.startswith("tessera_"):
                deps.add(w[len("tessera_"):])
        graph[m.group(1)] = deps
    return graph


def closure(graph, module):
    seen, todo = set(), [module]
    while todo:
        for d in graph.get(todo.pop(), ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def module_files(repo, module):
    """The source and header files of one module, in a stable order."""
    roots = [repo / "src" / module, repo / "include" / "tessera" / module]
    return sorted(p for r in roots if r.is_dir() for p in r.rglob("*") if p.suffix in SOURCE_SUFFIXES)


def check_includes(repo, graph):
    problems = []
    for module in sorted(graph):
        allowed = closure(graph, module) | {module}
        for path in module_files(repo, module):
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if m and m.group(1) not in allowed:
                    problems.append(f"{path.relative_to(repo)}:{number}: includes tessera/{m.group(1)}/{m.group(2)}, "
                                    f"but module '{module}' does not depend on '{m.group(1)}' "
                                    f"(it may use: {', '.join(sorted(allowed))})")
    return problems


def layer_table(design_text):
    """{module: (line number, set of rooms)} from the table under '## Layers'."""
    rows, in_section = {}, False
    for number, line in enumerate(design_text.splitlines(), 1):
        if line.startswith("## "):
            in_section = line.strip() == "## Layers"
            continue
        m = TABLE_ROW.match(line) if in_section else None
        if m and m.group(1) not in ("layer",):
            rows[m.group(1)] = (number, set(ROOM.findall(m.group(2))))
    return rows


def check_table(repo, graph):
    design = repo / "docs" / "design.md"
    rows = layer_table(design.read_text())
    problems = []
    for module in sorted(set(graph) - set(rows)):
        problems.append(f"docs/design.md: the layer table has no row for module '{module}'")
    for module, (number, rooms) in sorted(rows.items()):
        if module not in graph:
            problems.append(f"docs/design.md:{number}: row '{module}' is not a module in CMakeLists.txt")
            continue
        stems = {p.relative_to(base).with_suffix("").as_posix()
                 for base in (repo / "src" / module, repo / "include" / "tessera" / module)
                 for p in module_files(repo, module) if p.is_relative_to(base)}
        for stem in sorted(stems - rooms):
            problems.append(f"docs/design.md:{number}: row '{module}' does not list `{stem}`")
        for room in sorted(rooms - stems):
            problems.append(f"docs/design.md:{number}: row '{module}' lists `{room}`, which has no file")
    return problems


def main(argv):
    repo = pathlib.Path(argv[1] if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[1])
    graph = module_graph((repo / "CMakeLists.txt").read_text())
    if not graph:
        print(f"{repo / 'CMakeLists.txt'}: no tessera_module(...) lines found", file=sys.stderr)
        return 1
    problems = check_includes(repo, graph) + check_table(repo, graph)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
