"""scripts/check_tidy.py: a finding of a .clang-tidy check in tessera's code fails the gate, named
once with its file, line and check; clean code passes; a unit clang cannot parse fails too. (The
repository itself is checked by scripts/test.sh, which runs the gate over the build tree.)"""
import json
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check_tidy.py"

pytestmark = pytest.mark.skipif(shutil.which("clang-tidy") is None, reason="clang-tidy is not installed")

USE_AFTER_MOVE = """#include <string>
#include <utility>
std::string keep(std::string s);
std::size_t twice(std::string s) {
  std::string kept = keep(std::move(s));
  return kept.size() + s.size();
}
"""


def run_gate(tmp_path, sources: dict):
    shutil.copy(REPO / ".clang-tidy", tmp_path / ".clang-tidy")
    (tmp_path / "src").mkdir()
    (tmp_path / "build").mkdir()
    entries = []
    for name, text in sources.items():
        (tmp_path / "src" / name).write_text(text)
        entries.append({"directory": str(tmp_path / "build"), "file": str(tmp_path / "src" / name),
                        "command": f"c++ -std=c++20 -c {tmp_path / 'src' / name}"})
    (tmp_path / "build" / "compile_commands.json").write_text(json.dumps(entries))
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(tmp_path), "--build", str(tmp_path / "build")],
                          capture_output=True, text=True)


def test_clean_code_passes(tmp_path):
    result = run_gate(tmp_path, {"ok.cpp": "int add(int a, int b) { return a + b; }\n"})
    assert result.returncode == 0, result.stderr
    assert "tidy check: 1 translation units, no findings" in result.stdout


def test_a_use_after_move_fails_naming_file_line_and_check(tmp_path):
    result = run_gate(tmp_path, {"moved.cpp": USE_AFTER_MOVE, "ok.cpp": "int one() { return 1; }\n"})
    assert result.returncode == 1
    assert f"{tmp_path}/src/moved.cpp:6:24: error: 's' used after it was moved" in result.stderr
    assert "[bugprone-use-after-move,-warnings-as-errors]" in result.stderr
    assert "tidy check: 1 findings, 0 failed units in 2 translation units" in result.stderr


def test_a_unit_that_does_not_parse_fails(tmp_path):
    result = run_gate(tmp_path, {"broken.cpp": "int f() { return undeclared; }\n"})
    assert result.returncode == 1
    assert "use of undeclared identifier 'undeclared'" in result.stderr
