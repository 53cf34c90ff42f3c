#!/usr/bin/env python3
"""Fails when a C++ file of the repository is not laid out as .clang-format says.

Checks every tracked (and new, not ignored) .cpp/.hpp/.h file under the given root with
`clang-format --dry-run --Werror`, in parallel batches, and prints each file that differs with
the command that fixes it. Usage: check_format.py [--root DIR] [--clang-format BIN]
"""
import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SUFFIXES = (".cpp", ".hpp", ".h", ".cc")


def cxx_files(root: Path) -> list[str]:
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        check=True, capture_output=True).stdout.decode().split("\0")
    return sorted(f for f in listed if f.endswith(SUFFIXES) and (root / f).is_file())


def misformatted(root: Path, binary: str, batch: list[str]) -> list[str]:
    result = subprocess.run([binary, "--dry-run", "--Werror", "--style=file", *batch],
                            cwd=root, capture_output=True, text=True)
    if result.returncode == 0:
        return []
    # clang-format names each file in its "code should be clang-formatted" diagnostics.
    bad = {f for f in batch if f"{f}:" in result.stderr}
    if not bad:  # an error that is not a formatting difference (bad .clang-format, unreadable file)
        raise SystemExit(f"check_format: {binary} failed: {result.stderr.strip()}")
    return sorted(bad)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--clang-format", default="clang-format")
    args = parser.parse_args()
    root = args.root.resolve()
    if not (root / ".clang-format").is_file():
        print(f"check_format: {root}/.clang-format is missing", file=sys.stderr)
        return 1
    files = cxx_files(root)
    batches = [files[i:i + 40] for i in range(0, len(files), 40)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        bad = [f for found in pool.map(lambda b: misformatted(root, args.clang_format, b), batches) for f in found]
    if bad:
        for f in bad:
            print(f"{f}: not formatted as .clang-format says (fix: clang-format -i {f})", file=sys.stderr)
        return 1
    print(f"format check: {len(files)} C++ files follow .clang-format")
    return 0


if __name__ == "__main__":
    sys.exit(main())
