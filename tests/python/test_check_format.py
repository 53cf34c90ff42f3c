"""scripts/check_format.py: a C++ file laid out otherwise than .clang-format says fails the check,
naming the file and the command that fixes it; a formatted tree passes."""
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check_format.py"

pytestmark = pytest.mark.skipif(shutil.which("clang-format") is None, reason="clang-format is not installed")


def tree(tmp_path, source):
    shutil.copy(REPO / ".clang-format", tmp_path / ".clang-format")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.cpp").write_text(source)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(tmp_path)], capture_output=True, text=True)


def test_a_formatted_file_passes(tmp_path):
    result = tree(tmp_path, "int add(int a, int b) { return a + b; }\n")
    assert result.returncode == 0, result.stderr
    assert "1 C++ files follow .clang-format" in result.stdout


def test_a_misformatted_file_fails_naming_it(tmp_path):
    result = tree(tmp_path, "int add(int a,int b){return a+b;}\n")
    assert result.returncode == 1
    assert "src/a.cpp: not formatted as .clang-format says (fix: clang-format -i src/a.cpp)" in result.stderr


def test_the_repository_follows_its_format():
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
