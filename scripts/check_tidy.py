#!/usr/bin/env python3
"""Fails when clang-tidy, with the checks of .clang-tidy, finds anything in tessera's own code.

Runs clang-tidy over every translation unit of src/, apps/ and python/ listed in a build tree's
compile_commands.json (the library, the CLI and the bindings; the project's headers are checked
through them), in parallel, and prints each finding once even when a header reaches it through many
translation units. A translation unit clang cannot parse is a finding too.
Usage: check_tidy.py [--build DIR] [--jobs N] [--clang-tidy BIN] [--root DIR] [FILE_OR_DIR ...]
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CHECKED_DIRS = ("src", "apps", "python")
# clang-tidy's diagnostic line: "<file>:<line>:<col>: <severity>: <message> [<check>[,-warnings-as-errors]]".
DIAGNOSTIC = re.compile(r"^(?P<where>[^\s:][^:]*:\d+:\d+): (?P<severity>warning|error): (?P<message>.*?)"
                        r"(?: \[(?P<check>[\w.-]+)(?:,-warnings-as-errors)?\])?$")


def translation_units(root: Path, build: Path, only: list[Path]) -> list[Path]:
    database = build / "compile_commands.json"
    if not database.is_file():
        raise SystemExit(f"check_tidy: {database} is missing (configure the build tree first)")
    units = set()
    for entry in json.loads(database.read_text()):
        path = (Path(entry["directory"]) / entry["file"]).resolve()
        try:
            relative = path.relative_to(root)
        except ValueError:
            continue  # generated sources outside the tree
        if relative.parts[0] in CHECKED_DIRS and path.suffix == ".cpp":
            units.add(path)
    if only:
        units = {u for u in units if any(u == o or o in u.parents for o in only)}
    return sorted(units)


def without_gcc_pch(build: Path, scratch: Path) -> Path:
    """A copy of the build's compile database for clang without GCC's precompiled headers
    (`-include X/cmake_pch.hxx` beside `cmake_pch.hxx.gch`): clang cannot read the .gch, and
    including the header as text would make every unit of a target parse and match all of
    CLI11, fmt and nlohmann/json whether it uses them or not (about a tenth of the gate's time).
    Without it each unit is checked as written, so a unit that leans on the precompiled header
    for an include it lacks fails to parse: a real defect. Returns the directory of the copy."""
    entries = json.loads((build / "compile_commands.json").read_text())
    for entry in entries:
        args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
        kept: list[str] = []
        i = 0
        while i < len(args):
            if args[i] == "-include" and i + 1 < len(args) and Path(args[i + 1] + ".gch").exists():
                i += 2
                continue
            kept.append(args[i])
            i += 1
        entry.pop("command", None)
        entry["arguments"] = kept
    (scratch / "compile_commands.json").write_text(json.dumps(entries))
    return scratch


def tidy(binary: str, build: Path, unit: Path) -> tuple[Path, list[list[str]], str]:
    """Runs clang-tidy on one unit: its findings (each the diagnostic line and the lines that show
    the code) and, when clang-tidy failed without any finding, its error output."""
    # The compile database may come from GCC: its warning flags clang does not know are not findings.
    result = subprocess.run([binary, "-p", str(build), "--quiet", "--extra-arg=-Wno-unknown-warning-option", str(unit)],
                            capture_output=True, text=True)
    findings: list[list[str]] = []
    for line in result.stdout.splitlines():
        match = DIAGNOSTIC.match(line)
        if match and (match["severity"] == "error" or match["check"]):
            findings.append([line])
        elif findings and not match:
            findings[-1].append(line)
    failure = "" if result.returncode == 0 or findings else (result.stderr.strip() or f"exit {result.returncode}")
    return unit, findings, failure


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--build", type=Path, default=None, help="build tree with compile_commands.json")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--clang-tidy", default="clang-tidy")
    parser.add_argument("paths", nargs="*", type=Path, help="check only these files or directories")
    args = parser.parse_args()
    root = args.root.resolve()
    build = (args.build or root / "build" / "release").resolve()
    if not (root / ".clang-tidy").is_file():
        print(f"check_tidy: {root}/.clang-tidy is missing", file=sys.stderr)
        return 1
    units = translation_units(root, build, [p.resolve() for p in args.paths])
    if not units:
        print("check_tidy: no translation unit to check", file=sys.stderr)
        return 1
    started = time.monotonic()
    seen: set[str] = set()
    findings: list[list[str]] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="tessera-tidy.") as scratch, \
            ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        database = without_gcc_pch(build, Path(scratch))
        for unit, found, failure in pool.map(lambda u: tidy(args.clang_tidy, database, u), units):
            for finding in found:
                if finding[0] not in seen:  # a header's finding is reported by every unit including it
                    seen.add(finding[0])
                    findings.append(finding)
            if failure:
                failures.append(f"{unit.relative_to(root)}: clang-tidy failed: {failure}")
    elapsed = time.monotonic() - started
    for finding in findings:
        print("\n".join(finding), file=sys.stderr)
    for failure in failures:
        print(failure, file=sys.stderr)
    if findings or failures:
        print(f"tidy check: {len(findings)} findings, {len(failures)} failed units in {len(units)} translation units "
              f"({elapsed:.0f} s); the checks are listed in .clang-tidy", file=sys.stderr)
        return 1
    print(f"tidy check: {len(units)} translation units, no findings ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
