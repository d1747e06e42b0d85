"""The command line's help: what a newcomer reads first, consistent everywhere.

* ``--version`` prints the package's version (pyproject's);
* the top-level usage lists the subcommands, the help each with its summary;
* every subcommand has a plain-text description (no Markdown) and each of its options a
  help text; an option several subcommands take has one metavar; an option with a default
  says it;
* every benchmark script answers ``--help`` with its usage, without running.
"""
from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

import pytest

import tflite_viewer
from tests.script_help import script_help
from tflite_viewer.cli import SUBCOMMANDS, main, subcommand_parsers
from tflite_viewer.cli.window import build_parser as window_parser

ROOT = Path(__file__).resolve().parents[1]
MARKDOWN = re.compile(r"`|\*\*|\[[^\]]+\]\(")


def _options(parser: argparse.ArgumentParser):
    return [a for a in parser._actions
            if a.option_strings and not isinstance(a, (argparse._HelpAction,
                                                       argparse._VersionAction))]


def test_version(capsys):
    assert main(["--version"]) == 0
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out == f"tflite-viewer {version}\n"
    assert tflite_viewer.__version__ == version


def test_top_level_help_lists_every_subcommand(capsys):
    assert main(["-h"]) == 0
    text = capsys.readouterr().out
    usage = text[:text.index("\n\n")]
    assert "{" + ",".join(SUBCOMMANDS) + "}" in usage
    for name, summary in SUBCOMMANDS.items():
        assert re.search(rf"^  {name}\s+{re.escape(summary)}$", text, re.MULTILINE), name


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_each_subcommand_has_a_plain_description_and_help(name, capsys):
    parser = subcommand_parsers()[name]
    assert parser.description and len(parser.description) > 60
    assert not MARKDOWN.search(parser.description), parser.description
    for action in _options(parser) + [a for a in parser._actions if not a.option_strings]:
        assert action.help, (name, action.dest)
        assert not MARKDOWN.search(action.help), (name, action.help)
    assert main([name, "-h"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: tflite-viewer {name} ")


def test_the_window_options_are_plain_too():
    parser = window_parser()
    assert not MARKDOWN.search(parser.description)
    for action in _options(parser):
        assert action.help and not MARKDOWN.search(action.help), action.dest


def test_one_metavar_per_option_everywhere():
    seen: dict[str, set] = {}
    parsers = {**subcommand_parsers(), "window": window_parser()}
    for parser in parsers.values():
        for action in _options(parser):
            if action.metavar is not None or action.nargs != 0:
                seen.setdefault(action.option_strings[-1], set()).add(action.metavar)
    # -o names what it writes (OUT.json, OUT.tflite, OUT.svg|OUT.png): that one differs
    shared = {opt: m for opt, m in seen.items() if len(m) > 1 and opt != "--output"}
    assert not shared, f"options with different metavars: {shared}"
    assert seen["--subgraph"] == {"S"} and seen["--seed"] == {"N"} and seen["--inputs"] == {"IN.npz"}


def test_every_default_is_stated():
    parsers = {**subcommand_parsers(), "window": window_parser()}
    for name, parser in parsers.items():
        for action in _options(parser):
            if action.default in (None, False, argparse.SUPPRESS) or action.nargs == 0:
                continue
            assert "default" in action.help, (name, action.option_strings, action.default)
            shown = f"{action.default:,}" if isinstance(action.default, int) else str(action.default)
            assert shown.rstrip("0").rstrip(".") in action.help or \
                str(action.default) in action.help, (name, action.option_strings, action.help)


BENCHMARKS = sorted(p for p in (ROOT / "benchmarks").glob("*.py")
                    if p.name not in ("__init__.py", "blas_threads.py", "child_process.py",
                                      "synthetic_graphs.py", "synthetic_models.py"))


def test_every_benchmark_answers_help_without_running():
    scripts = [p.relative_to(ROOT).as_posix() for p in BENCHMARKS]
    assert len(scripts) >= 10
    for name, answer in zip(scripts, script_help(*scripts)):
        out, err = answer.stdout, answer.stderr
        assert answer.returncode == 0, (name, err)
        assert out.startswith("usage: "), (name, out[:200])
        # the usage and its options only: no measurement line was printed
        assert err == "" and not re.search(r"\d+\.\d+ ?(ms|s)\b", out.split("options:")[0]), name
