#!/usr/bin/env python3
"""Runs the code blocks of markdown pages as a reader would (tests/docs/docblocks.py has the rules).

    python3 tests/docs/run_doc.py PAGE.md [PAGE.md ...] [--keep]

Each page runs in its own fresh temporary folder against the `tessera` package on PYTHONPATH (or
installed) and its bundled CLI. Prints every block it runs; on the first failing block prints
`FILE:LINE: ...` and exits 1. `--keep` leaves the folders behind for a look.
"""
import os
import pathlib
import shutil
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import docblocks  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> int:
    keep = "--keep" in argv
    pages = [a for a in argv if a != "--keep"]
    if not pages:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    import tessera
    cli = tessera.cli_path()
    package_dir = pathlib.Path(tessera.__file__).absolute().parent.parent
    conformance = pathlib.Path(os.environ.get("TESSERA_CONFORMANCE_DIR") or REPO / "tests" / "data" / "conformance")
    for page in pages:
        path = pathlib.Path(page).resolve()
        shown = os.path.relpath(path, REPO) if path.is_relative_to(REPO) else str(path)
        root = pathlib.Path(tempfile.mkdtemp(prefix="tessera-doc-"))
        try:
            blocks = docblocks.parse(path.read_text(encoding="utf-8"), shown)
            sandbox = docblocks.Sandbox(root, cli, package_dir, conformance.resolve(), path.parent)
            docblocks.run_blocks(blocks, sandbox, log=lambda s: print(s, flush=True))
        except docblocks.DocError as exc:
            print(f"\nFAILED {exc}", file=sys.stderr, flush=True)
            if keep:
                print(f"(folder kept: {root})", file=sys.stderr)
            return 1
        finally:
            if not keep:
                shutil.rmtree(root, ignore_errors=True)
        ran = sum(1 for b in blocks if b.runs)
        print(f"{shown}: {ran} block(s) ran, {sum(1 for b in blocks if b.skip_reason)} skipped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
