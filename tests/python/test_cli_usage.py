"""A mistyped command is named, with the commands that exist there (taken from --help)."""
import pytest

from conftest import run_cli
from test_cli_docs import help_text, section


@pytest.mark.parametrize("path", [(), ("tet",), ("cells", "obs"), ("tet", "qhist")])
def test_an_unknown_command_is_named_with_the_alternatives(path):
    proc = run_cli(*path, "frobnicate", "x", check=False)
    commands = [line.split()[0].rstrip(",") for line in section(help_text(path), "Subcommands:")]
    where = " ".join(("tessera",) + path)
    assert proc.returncode == 2
    assert proc.stderr == (f"{where}: unknown command 'frobnicate' (commands: {', '.join(commands)})\n"
                           "Run with --help for more information.\n")
    assert proc.stdout == ""


def test_known_commands_and_their_positionals_still_parse():
    assert run_cli("tet", "q", "--help").returncode == 0          # an alias
    assert run_cli("tet", "qhist", "list", "--help").returncode == 0
    proc = run_cli("info", "no-such-file.tet", check=False)       # a leaf's positional is not a command
    assert proc.returncode == 1 and "unknown command" not in proc.stderr
