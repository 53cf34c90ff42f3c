"""docs/cli/ and the CLI's own --help agree, command by command and flag by flag.

Every command's --help ends with `Documentation: docs/cli/<page>`. That page must exist, show the
command (`tessera <command path>`) and every long option --help lists; and every `--option` a
page mentions must belong to one of the commands whose help points at it, so a renamed or removed
flag cannot live on in the docs.
"""
import re
import subprocess

import pytest
import tessera

from conftest import REPO

DOCS_CLI = REPO / "docs" / "cli"
LONG_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*(?![\w-])")
# Options every command has from the CLI library itself.
BUILT_IN = {"--help", "--version"}


def help_text(path: tuple[str, ...]) -> str:
    proc = subprocess.run([str(tessera.cli_path()), *path, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0, f"tessera {' '.join(path)} --help exited {proc.returncode}: {proc.stderr}"
    return proc.stdout


def section(text: str, title: str) -> list[str]:
    """The entry lines of one section of CLI11's help (`Options:`, `Subcommands:`)."""
    lines, inside = [], False
    for line in text.split("\n"):
        if line.rstrip() == title:
            inside = True
        elif inside and line.startswith("  "):
            lines.append(line)
        elif inside and line.strip():
            break
    return lines


def commands() -> dict[tuple[str, ...], dict]:
    """Every command below `tessera` (and tessera itself): its options and its docs page."""
    found: dict[tuple[str, ...], dict] = {}

    def walk(path: tuple[str, ...]) -> None:
        text = help_text(path)
        footer = re.search(r"^Documentation: docs/cli/(\S+\.md)$", text, re.M)
        # The option names are the first column: up to the two spaces before the description.
        names = " ".join(re.split(r"\s{2,}", line.strip())[0] for line in section(text, "Options:"))
        # "query, q": a command and its aliases; the walk follows the name.
        subs = [line.split()[0].rstrip(",") for line in section(text, "Subcommands:")]
        found[path] = {"page": footer.group(1) if footer else None,
                       "options": set(LONG_OPTION.findall(names)) - BUILT_IN, "leaf": not subs}
        for sub in subs:
            walk(path + (sub,))

    walk(())
    return found


COMMANDS = commands()


def ids(path: tuple[str, ...]) -> str:
    return " ".join(("tessera",) + path)


@pytest.mark.parametrize("path", list(COMMANDS), ids=[ids(p) for p in COMMANDS])
def test_help_links_a_page_that_documents_the_command_and_its_options(path):
    command = COMMANDS[path]
    assert command["page"], f"`{ids(path)} --help` names no docs/cli page"
    page = DOCS_CLI / command["page"]
    assert page.is_file(), f"`{ids(path)} --help` names {page.relative_to(REPO)}, which does not exist"
    text = page.read_text(encoding="utf-8")
    if path:
        assert ids(path) in text, f"{page.relative_to(REPO)} never shows `{ids(path)}`"
    on_page = set(LONG_OPTION.findall(text))
    missing = sorted(command["options"] - on_page)
    assert not missing, f"{page.relative_to(REPO)} does not document {', '.join(missing)} of `{ids(path)}`"


@pytest.mark.parametrize("page", sorted(DOCS_CLI.glob("*.md")), ids=lambda p: p.name)
def test_every_option_a_page_mentions_exists(page):
    known = set().union(*(c["options"] for c in COMMANDS.values() if c["page"] == page.name)) | BUILT_IN
    mentioned = set(LONG_OPTION.findall(page.read_text(encoding="utf-8")))
    unknown = sorted(mentioned - known)
    assert not unknown, (f"docs/cli/{page.name} mentions {', '.join(unknown)}, which no command "
                         f"documented there has (--help of each command names its page)")


def test_every_page_of_docs_cli_documents_some_command():
    linked = {c["page"] for c in COMMANDS.values()}
    orphans = sorted(p.name for p in DOCS_CLI.glob("*.md") if p.name not in linked)
    assert not orphans, f"no command's --help points at docs/cli/{', '.join(orphans)}"
