"""Executable documentation: the code blocks of README.md and docs/**/*.md, parsed and run.

A markdown file is run as a reader would follow it: its blocks in order, in one fresh temporary
folder, sharing that folder (and, for Python blocks, one namespace). The rules a page follows are in
docs/testing.md ("Documentation that runs"); in short:

* every fenced block names its language. ``bash``/``sh`` blocks run as scripts (``set -euo
  pipefail``); ``python`` blocks run in the page's namespace; ``console`` blocks hold ``$ command``
  lines, each followed by the output it prints, which is compared (``...`` on its own line matches
  any number of lines, ``…`` inside a line any text, ``[exit N]`` as the last output line is the
  expected exit status). ``text``, ``json``, ``cpp`` and the other languages are not run.
* ``<!-- doc: skip: REASON -->`` just above a block keeps it from running (e.g. it needs a real
  bucket); ``<!-- doc: output not compared: REASON -->`` runs a console block without comparing.
* ``<!-- doc-setup`` … ``-->`` wraps fenced blocks that run but are not shown (hidden setup).

Blocks run with ``tessera`` and ``python3`` (the Python the package was built for) first on
``PATH``, ``$TESSERA_CONFORMANCE_DIR`` pointing at the conformance data, ``HOME`` inside the
temporary folder (so caches and histories start empty), ``$DOC_DIR`` naming the page's own
folder (so a hidden block can check that a picture the page shows is the one the program draws)
and ``build/release/tessera`` and ``build/release/python`` present, as in a built clone.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import pathlib
import re
import subprocess
import sys

RUN_LANGUAGES = {"bash", "sh", "console", "python"}
# Languages that are shown, never run. Anything else is an error, so a typo in a tag ("pyhton")
# cannot quietly turn an example into prose.
SHOWN_LANGUAGES = {"text", "json", "cpp", "c", "yaml", "toml", "cmake", "diff", "markdown", "csv", "ini"}

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*doc:\s*(?P<body>.*?)\s*-->\s*$")
SETUP_OPEN = re.compile(r"^\s*<!--\s*doc-setup\s*$")
SETUP_CLOSE = re.compile(r"^\s*-->\s*$")
BLOCK_TIMEOUT_S = 600


class DocError(Exception):
    """A page breaks a rule of the harness, or one of its blocks fails; names file and line."""


@dataclasses.dataclass
class Block:
    path: str          # as shown in messages (relative to the repository when possible)
    line: int          # 1-based line of the opening fence
    language: str
    code: str
    hidden: bool = False     # inside <!-- doc-setup ... -->
    skip_reason: str | None = None
    compare_output: bool = True

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.language in RUN_LANGUAGES and self.skip_reason is None


def parse(text: str, path: str) -> list[Block]:
    """All fenced blocks of a markdown page, with their markers; raises DocError on a broken rule."""
    lines = text.split("\n")
    blocks: list[Block] = []
    in_setup = False
    pending: str | None = None        # the marker just above the next fence
    pending_line = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if SETUP_OPEN.match(line):
            if in_setup:
                raise DocError(f"{path}:{i + 1}: doc-setup inside doc-setup")
            in_setup = True
            i += 1
            continue
        if in_setup and SETUP_CLOSE.match(line):
            in_setup = False
            i += 1
            continue
        marker = MARKER.match(line)
        if marker:
            pending, pending_line = marker.group("body"), i + 1
            i += 1
            continue
        fence = FENCE.match(line)
        if not fence:
            if line.strip() and pending is not None:
                raise DocError(f"{path}:{pending_line}: a doc marker must stand just above a fenced block")
            i += 1
            continue
        start = i
        indent, ticks, language = len(fence.group("indent")), fence.group("fence"), fence.group("info").lower()
        body: list[str] = []
        i += 1
        while i < len(lines) and not re.match(rf"^\s*{re.escape(ticks[0])}{{{len(ticks)},}}\s*$", lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i].lstrip())
            i += 1
        if i == len(lines):
            raise DocError(f"{path}:{start + 1}: code block never closed")
        i += 1
        if not language:
            raise DocError(f"{path}:{start + 1}: code block without a language; tag it "
                           f"(one of {', '.join(sorted(RUN_LANGUAGES | SHOWN_LANGUAGES))})")
        if language not in RUN_LANGUAGES | SHOWN_LANGUAGES:
            raise DocError(f"{path}:{start + 1}: unknown code block language '{language}'")
        block = Block(path, start + 1, language, "\n".join(body) + "\n", hidden=in_setup)
        if pending is not None:
            apply_marker(block, pending, pending_line)
            pending = None
        if in_setup and not block.runs:
            raise DocError(f"{block.where}: a doc-setup block must be one that runs (bash, sh, python)")
        blocks.append(block)
    if in_setup:
        raise DocError(f"{path}: doc-setup never closed with -->")
    if pending is not None:
        raise DocError(f"{path}:{pending_line}: a doc marker must stand just above a fenced block")
    return blocks


def apply_marker(block: Block, body: str, marker_line: int) -> None:
    kind, _, reason = body.partition(":")
    kind, reason = kind.strip(), reason.strip()
    if kind not in ("skip", "output not compared"):
        raise DocError(f"{block.path}:{marker_line}: unknown doc marker '{body}' "
                       "(use 'skip: REASON' or 'output not compared: REASON')")
    if not reason:
        raise DocError(f"{block.path}:{marker_line}: doc marker '{kind}' needs a reason after ':'")
    if block.language not in RUN_LANGUAGES:
        raise DocError(f"{block.path}:{marker_line}: doc marker on a '{block.language}' block, which never runs")
    if kind == "skip":
        block.skip_reason = reason
    elif block.language != "console":
        raise DocError(f"{block.path}:{marker_line}: only console blocks show output to compare")
    else:
        block.compare_output = False


@dataclasses.dataclass
class ConsoleCommand:
    line: int            # 1-based line in the page
    command: str
    expected: list[str]
    exit_status: int = 0


def console_commands(block: Block) -> list[ConsoleCommand]:
    """The `$ command` lines of a console block with the output shown under each."""
    commands: list[ConsoleCommand] = []
    lines = block.code.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise DocError(f"{block.path}:{block.line + 1 + i}: console block output before any '$ ' command")
        start = i
        command = lines[i][2:]
        while command.endswith("\\") and i + 1 < len(lines):   # a command continued over lines
            i += 1
            command = command + "\n" + lines[i]
        i += 1
        expected: list[str] = []
        while i < len(lines) and not lines[i].startswith("$ "):
            expected.append(lines[i])
            i += 1
        status = 0
        if expected and re.fullmatch(r"\[exit \d+\]", expected[-1].strip()):
            status = int(expected.pop().strip()[6:-1])
        commands.append(ConsoleCommand(block.line + 1 + start, command, expected, status))
    return commands


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """Line-wise match: '...' alone on a line spans any number of lines, '…' inside a line any text."""
    expected = trim(expected)
    actual = trim(actual)

    def line_ok(pattern: str, text: str) -> bool:
        if "…" not in pattern:
            return pattern == text
        parts = [re.escape(p) for p in pattern.split("…")]
        return re.fullmatch(".*".join(parts), text) is not None

    # Memoized walk over (pattern index, line index): small pages, so recursion depth is fine.
    memo: dict[tuple[int, int], bool] = {}

    def walk(p: int, a: int) -> bool:
        if (p, a) in memo:
            return memo[(p, a)]
        if p == len(expected):
            result = a == len(actual)
        elif expected[p].strip() == "...":
            result = any(walk(p + 1, k) for k in range(a, len(actual) + 1))
        else:
            result = a < len(actual) and line_ok(expected[p], actual[a]) and walk(p + 1, a + 1)
        memo[(p, a)] = result
        return result

    return walk(0, 0)


def trim(lines: list[str]) -> list[str]:
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


@dataclasses.dataclass
class Sandbox:
    """The fresh folder a page runs in, and the environment its blocks see."""
    root: pathlib.Path
    cli: pathlib.Path
    package_dir: pathlib.Path
    conformance: pathlib.Path
    page_dir: pathlib.Path | None = None   # $DOC_DIR: the page's folder, for the images it shows

    def __post_init__(self) -> None:
        self.work = self.root / "work"
        self.home = self.root / "home"
        self.bin = self.root / "bin"
        for d in (self.work, self.home, self.bin):
            d.mkdir(parents=True, exist_ok=True)
        (self.bin / "tessera").symlink_to(self.cli)
        (self.bin / "python3").symlink_to(sys.executable)
        release = self.work / "build" / "release"
        release.mkdir(parents=True)
        (release / "tessera").symlink_to(self.cli)
        (release / "python").symlink_to(self.package_dir)
        self.env = dict(os.environ)
        self.env.update({
            "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(self.home),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "TESSERA_CONFORMANCE_DIR": str(self.conformance),
            "PYTHONPATH": os.pathsep.join(p for p in [str(self.package_dir), os.environ.get("PYTHONPATH", "")] if p),
            "PYTHONDONTWRITEBYTECODE": "1",
            "MPLBACKEND": "Agg",
        })
        if self.page_dir is not None:
            self.env["DOC_DIR"] = str(self.page_dir)


def run_blocks(blocks: list[Block], sandbox: Sandbox, log=print) -> None:
    """Runs the blocks in order; raises DocError naming the first block that fails."""
    namespace: dict = {"__name__": "__doc__"}
    for block in blocks:
        if block.language not in RUN_LANGUAGES:
            continue
        if block.skip_reason is not None:
            log(f"{block.where}: skipped ({block.skip_reason})")
            continue
        log(f"{block.where}: {block.language}{' (hidden setup)' if block.hidden else ''}")
        if block.language in ("bash", "sh"):
            run_script(block, sandbox, log)
        elif block.language == "console":
            run_console(block, sandbox, log)
        else:
            run_python(block, sandbox, namespace, log)


def shell(command: str, sandbox: Sandbox, where: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=sandbox.work, env=sandbox.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=BLOCK_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise DocError(f"{where}: did not finish within {BLOCK_TIMEOUT_S} s") from None


def run_script(block: Block, sandbox: Sandbox, log) -> None:
    proc = shell("set -eu\n" + block.code, sandbox, block.where)
    if proc.stdout:
        log(proc.stdout.rstrip("\n"))
    if proc.returncode != 0:
        raise DocError(f"{block.where}: {block.language} block failed with exit status {proc.returncode}:\n"
                       f"{tail(proc.stdout)}")


def run_console(block: Block, sandbox: Sandbox, log) -> None:
    for cmd in console_commands(block):
        where = f"{block.path}:{cmd.line}"
        proc = shell(cmd.command, sandbox, where)
        log(f"$ {cmd.command}\n{proc.stdout.rstrip()}")
        if proc.returncode != cmd.exit_status:
            raise DocError(f"{where}: `{first_line(cmd.command)}` exited {proc.returncode}, the page expects "
                           f"{cmd.exit_status}{' (add [exit N] under its output)' if cmd.exit_status == 0 else ''}:\n"
                           f"{tail(proc.stdout)}")
        if block.compare_output and not output_matches(cmd.expected, proc.stdout.split("\n")):
            raise DocError(f"{where}: `{first_line(cmd.command)}` printed other output than the page shows\n"
                           f"--- the page\n" + "\n".join(trim(cmd.expected)) +
                           "\n--- the program\n" + "\n".join(trim(proc.stdout.split("\n"))))


def run_python(block: Block, sandbox: Sandbox, namespace: dict, log) -> None:
    previous_cwd = os.getcwd()
    previous_env = dict(os.environ)
    os.chdir(sandbox.work)
    os.environ.clear()
    os.environ.update(sandbox.env)
    out = io.StringIO()
    try:
        # Line numbers in a traceback point into the page: the code starts one line below the fence.
        code = compile("\n" * block.line + block.code, block.path, "exec")
        with contextlib.redirect_stdout(out):
            exec(code, namespace)   # noqa: S102 - running the page's own example is the point
    except BaseException as exc:  # noqa: BLE001 - any failure of the example is the page's failure
        import traceback
        # Drop this function's own frame: the trace starts in the page.
        trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next)[-8:])
        raise DocError(f"{block.where}: python block failed:\n{out.getvalue()}{trace}") from None
    finally:
        os.chdir(previous_cwd)
        os.environ.clear()
        os.environ.update(previous_env)
    if out.getvalue():
        log(out.getvalue().rstrip("\n"))


def first_line(command: str) -> str:
    return command.split("\n", 1)[0]


def tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.rstrip("\n").split("\n")[-lines:])
