"""The rules of the documentation harness (tests/docs/docblocks.py), on small made-up pages."""
import pathlib
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "docs"))
import docblocks  # noqa: E402
import tessera  # noqa: E402


def run_page(text: str, tmp_path: pathlib.Path, conformance) -> list[str]:
    log: list[str] = []
    blocks = docblocks.parse(text, "page.md")
    sandbox = docblocks.Sandbox(tmp_path / "sandbox", tessera.cli_path(),
                                pathlib.Path(tessera.__file__).absolute().parent.parent, conformance)
    docblocks.run_blocks(blocks, sandbox, log=log.append)
    return log


def test_untagged_and_unknown_blocks_are_refused_with_their_line():
    with pytest.raises(docblocks.DocError, match=r"page.md:3: code block without a language"):
        docblocks.parse("text\n\n```\nls\n```\n", "page.md")
    with pytest.raises(docblocks.DocError, match=r"page.md:1: unknown code block language 'pyhton'"):
        docblocks.parse("```pyhton\nprint(1)\n```\n", "page.md")
    with pytest.raises(docblocks.DocError, match=r"page.md:1: code block never closed"):
        docblocks.parse("```bash\nls\n", "page.md")


def test_markers_need_a_reason_and_a_block_below():
    with pytest.raises(docblocks.DocError, match="needs a reason"):
        docblocks.parse("<!-- doc: skip -->\n```bash\nls\n```\n", "page.md")
    with pytest.raises(docblocks.DocError, match="must stand just above"):
        docblocks.parse("<!-- doc: skip: cloud -->\nprose\n```bash\nls\n```\n", "page.md")
    with pytest.raises(docblocks.DocError, match="only console blocks"):
        docblocks.parse("<!-- doc: output not compared: time -->\n```bash\nls\n```\n", "page.md")
    blocks = docblocks.parse("<!-- doc: skip: needs a real bucket -->\n```bash\nexit 1\n```\n", "page.md")
    assert blocks[0].skip_reason == "needs a real bucket" and not blocks[0].runs


def test_console_output_is_compared_with_wildcards_and_exit_status(tmp_path, conformance):
    page = ("```console\n$ echo one; echo two; echo three\none\n...\nthree\n"
            "$ echo 'file: /tmp/x.tet'\nfile: …x.tet\n"
            "$ echo nope; exit 3\nnope\n[exit 3]\n```\n")
    log = run_page(page, tmp_path, conformance)
    assert any("echo nope" in line for line in log)

    with pytest.raises(docblocks.DocError, match=r"page.md:2: `echo two` printed other output"):
        run_page("```console\n$ echo two\nthree\n```\n", tmp_path / "b", conformance)
    with pytest.raises(docblocks.DocError, match=r"page.md:2: `false` exited 1, the page expects 0"):
        run_page("```console\n$ false\n```\n", tmp_path / "c", conformance)


def test_failing_blocks_name_file_and_line_and_later_blocks_see_earlier_state(tmp_path, conformance):
    page = ("<!-- doc-setup\n```bash\necho 42 > answer.txt\n```\n-->\n\n"
            "```python\nx = int(open('answer.txt').read())\n```\n\n"
            "```python\nassert x == 42\ny = 1 / 0\n```\n")
    with pytest.raises(docblocks.DocError, match=r"(?s)page.md:11: python block failed:.*page.md\", line 13.*ZeroDivisionError"):
        run_page(page, tmp_path, conformance)


def test_blocks_see_the_packaged_cli_and_an_empty_home(tmp_path, conformance):
    log = run_page("```bash\ntessera --version\nls -A \"$HOME\" | wc -l\ntest -d \"$TESSERA_CONFORMANCE_DIR/tetration\"\n```\n",
                   tmp_path, conformance)
    assert log[-1].splitlines()[-1].strip() == "0"
