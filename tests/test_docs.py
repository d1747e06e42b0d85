"""The user guide cannot rot: every example in README.md and docs/*.md runs here.

* ```python blocks run in order, one namespace per page, in a folder holding the corpus
  models (tests/data/models) and ``custom_twice.tflite`` (a one-op model with a custom op,
  for the custom-kernel example);
* ```sh blocks: a ``tflite-viewer`` line runs through the command line's ``main`` in that
  folder and must exit 0 (a line that would open the window has its arguments and model
  checked instead); ``python benchmarks/...`` and ``python tools/...`` lines name a script
  that exists and options its ``--help`` lists; ``python -m pytest PATH`` names paths that
  exist; installing lines (pip, apt) are not run;
* the same for the commands of a table's "reproduce with" column (the README's figures);
* ```text blocks are output and diagrams, not run; a block without a language is refused;
* relative links point at files (and headings) that exist;
* docs/cli.md and docs/ops.md are what tools/update_docs.py generates now.
"""
from __future__ import annotations

import re
import shlex
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tests.script_help import script_help

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^( *)```([\w-]*)[ \t]*\n(.*?)^\1```[ \t]*$", re.M | re.S)
LANGUAGES = {"python", "sh", "text"}
NOT_RUN = ("python -m pip install ", "sudo apt install ", "pip install ")


def _rel(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def blocks(page: Path) -> list[tuple[str, str, int]]:
    """(language, code, line number) of every fenced block of ``page``."""
    text = page.read_text()
    return [(m.group(2), textwrap.dedent(m.group(3)), text.count("\n", 0, m.start()) + 1)
            for m in FENCE.finditer(text)]


def inline_commands(page: Path) -> list[tuple[str, int]]:
    """Commands quoted as inline code in the last column of a table whose header names it
    "reproduce with" (the README's figures)."""
    out, in_table = [], False
    for n, line in enumerate(page.read_text().splitlines(), 1):
        if not line.startswith("|"):
            in_table = False
        elif line.rstrip(" |").endswith("reproduce with"):
            in_table = True
        elif in_table:
            out += [(code, n) for code in re.findall(r"`([^`]+)`", line.rsplit("|", 2)[-2])]
    return out


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A folder with the corpus models, where the examples run."""
    from tests.interpreter.singleop import Input, single_op_model
    d = tmp_path_factory.mktemp("docs")
    for model in [*MODELS_DIR.glob("*.tflite"), *(MODELS_DIR / "llm").glob("*.tflite")]:
        (d / model.name).symlink_to(model)
    (d / "llm").symlink_to(MODELS_DIR / "llm")  # the LLM exports and the .litertlm
    (d / "custom_twice.tflite").write_bytes(
        single_op_model("CUSTOM", [Input((3,))], [np.float32], custom_code="Twice"))
    return d


def test_every_block_says_its_language():
    for page in PAGES:
        for lang, _code, line in blocks(page):
            assert lang in LANGUAGES, f"{_rel(page)}:{line}: ```{lang or ''} (use one of {LANGUAGES})"


@pytest.mark.parametrize("page", [p for p in PAGES if any(b[0] == "python" for b in blocks(p))],
                         ids=_rel)
def test_python_examples_run(page, workspace, monkeypatch, capsys):
    monkeypatch.chdir(workspace)
    namespace: dict = {"__name__": "__docs__"}
    for lang, code, line in blocks(page):
        if lang == "python":
            exec(compile(code, f"{_rel(page)}:{line}", "exec"), namespace)  # noqa: S102
    capsys.readouterr()


# ------------------------------------------------------------------------------------------
# shell lines
# ------------------------------------------------------------------------------------------
def _script_help(script: str) -> str:
    script_help(*_named_scripts())  # the first call starts every page's scripts side by side
    (r,) = script_help(script)
    assert r.returncode == 0, (script, r.stderr)
    return r.stdout


def _run_tflite_viewer(args: list[str], where: str) -> None:
    from tflite_viewer.cli import SUBCOMMANDS, main, window
    if (args and args[0] in SUBCOMMANDS) or {"--screenshot", "--check", "--version", "-h",
                                             "--help"} & set(args):
        # diff, like diff(1), exits 1 when the models differ: that is its result, not a failure
        ok = (0, 1) if args and args[0] == "diff" else (0,)
        assert main(args) in ok, f"{where}: tflite-viewer {shlex.join(args)} did not exit 0"
        return
    parsed = window.parse(args)  # the window itself: its arguments and model are checked
    window._check_usage(parsed)
    window._check_model(parsed)


def check_command(command: str, where: str) -> None:
    for part in (p.strip() for p in command.split("&&")):
        words = shlex.split(part)
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
            words = words[1:]  # PYTHONPATH=. and the like
        text = " ".join(words)
        if text.startswith(NOT_RUN):
            continue
        if words[0] == "tflite-viewer":
            _run_tflite_viewer(words[1:], where)
        elif words[:3] == ["python", "-m", "pytest"]:
            for arg in words[3:]:
                if not arg.startswith("-"):
                    assert (ROOT / arg.split("::")[0]).exists(), f"{where}: no {arg}"
        elif words[0] == "python" and words[1].startswith(("benchmarks/", "tools/")):
            assert (ROOT / words[1]).is_file(), f"{where}: no {words[1]}"
            usage = _script_help(words[1])
            for option in (w.split("=")[0] for w in words[2:] if w.startswith("--")):
                assert re.search(rf"(^|[\s\[]){re.escape(option)}\b", usage), \
                    f"{where}: {words[1]} has no {option}"
        else:
            raise AssertionError(f"{where}: a command the docs test does not know: {part}")


def _named_scripts() -> list[str]:
    """Every benchmark and tool script a page's command line names."""
    words = [shlex.split(part.strip()) for page in PAGES for command, _ in _shell_lines(page)
             for part in command.split("&&")]
    return [w[1] for w in words
            if len(w) > 1 and w[0] == "python" and w[1].startswith(("benchmarks/", "tools/"))
            and (ROOT / w[1]).is_file()]


def _shell_lines(page: Path) -> list[tuple[str, str]]:
    out = [(c, f"{_rel(page)}:{n}") for c, n in inline_commands(page)]
    for lang, code, line in blocks(page):
        if lang == "sh":
            out += [(cmd.strip(), f"{_rel(page)}:{line + k + 1}")
                    for k, cmd in enumerate(code.splitlines())
                    if cmd.strip() and not cmd.strip().startswith("#")]
    return out


@pytest.mark.parametrize("page", [p for p in PAGES if _shell_lines(p)], ids=_rel)
def test_shell_examples_run(page, workspace, monkeypatch, capsys):
    monkeypatch.chdir(workspace)
    for command, where in _shell_lines(page):
        check_command(command, where)
        capsys.readouterr()


def test_the_checker_refuses_what_it_does_not_know_and_what_fails(workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    with pytest.raises(AssertionError, match="does not know"):
        check_command("rm -rf build", "here")
    with pytest.raises(AssertionError, match="did not exit 0"):
        check_command("tflite-viewer info missing.tflite", "here")
    with pytest.raises(AssertionError, match="has no --frobnicate"):
        check_command("python benchmarks/bench_edit.py --frobnicate", "here")
    with pytest.raises(Exception):
        check_command("tflite-viewer missing.tflite", "here")  # the window: model checked


# ------------------------------------------------------------------------------------------
# links and generated pages
# ------------------------------------------------------------------------------------------
def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def test_relative_links_and_anchors_exist():
    for page in PAGES:
        text = FENCE.sub("", page.read_text())
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # an external address
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            assert dest.exists(), f"{_rel(page)}: broken link {target}"
            if anchor:
                assert anchor in _anchors(dest), f"{_rel(page)}: no heading for {target}"


def test_generated_pages_are_current():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import update_docs
    finally:
        sys.path.remove(str(ROOT / "tools"))
    for path, make in update_docs.PAGES.items():
        assert path.read_text() == make(), \
            f"{path.relative_to(ROOT)} is stale: run python tools/update_docs.py"


def test_every_subcommand_is_in_the_cli_page():
    from tflite_viewer.cli import SUBCOMMANDS, subcommand_parsers
    page = (ROOT / "docs" / "cli.md").read_text()
    for name, parser in subcommand_parsers().items():
        assert f"## {name}\n" in page
        for action in parser._actions:
            for option in set(action.option_strings) - {"-h", "--help"}:
                assert f"`{option}" in page, (name, option)
    assert set(SUBCOMMANDS) == set(subcommand_parsers())
