"""Every code block of README.md and docs/**/*.md runs as a reader would run it.

One test per page, so a broken example fails a test named after its page; the page runs in a
child process (tests/docs/run_doc.py) in a fresh folder, and the failure names file and line.
The harness's own rules are tested in test_docblocks.py.
"""
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_page_runs(page: pathlib.Path):
    proc = subprocess.run([sys.executable, str(REPO / "tests" / "docs" / "run_doc.py"), str(page)],
                          capture_output=True, text=True, env=dict(os.environ), cwd=REPO)
    assert proc.returncode == 0, f"{proc.stderr.strip()}\n--- what ran before:\n{proc.stdout[-4000:]}"
