"""`tflite-viewer ops [--json | --markdown] [-o OUT.json]`: op coverage, every builtin
code with its versions and types here and what LiteRT's builtin op resolver accepts."""
from __future__ import annotations

import argparse

from ..interpreter.coverage import OpCoverage, coverage, summary
from .common import subcommand_parser
from .output import Output, add_json_option, add_output_option

_STATUS = {"both": "yes", "versions": "partly", "litert only": "no", "here only": "here only",
           "neither": "-"}
DESCRIPTION = ("List every builtin op code with the versions and tensor types the interpreter "
               "runs, against what LiteRT's builtin op resolver registers, and the reason for "
               "every gap. LiteRT's side is generated from its sources and checked on the "
               "installed ai-edge-litert wheel.")
# shown in docs/cli.md, and run by tests/test_docs.py in a folder holding the corpus models
EXAMPLES = [
    "tflite-viewer ops --json -o ops.json",
]


def add_parser(subparsers) -> None:
    p = subcommand_parser(subparsers, "ops", DESCRIPTION)
    fmt = p.add_mutually_exclusive_group()
    add_json_option(fmt, "the coverage")
    fmt.add_argument("--markdown", action="store_true",
                     help="print the coverage as a Markdown table (docs/ops.md)")
    add_output_option(p, what="the coverage as JSON")


def _versions(ranges) -> str:
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges) or "-"


def headline(figures: dict) -> str:
    return (f"{figures['covered']} of LiteRT's {figures['litert_builtins']} builtin ops run "
            f"here ({figures['all_versions']} in every version LiteRT resolves); "
            f"{figures['here_only']} more that LiteRT's builtin resolver lacks; "
            f"{figures['builtin_codes']} builtin codes in the schema")


def markdown(rows: list[OpCoverage]) -> str:
    lines = [f"**{headline(summary(rows))}** (`tflite-viewer ops`).", "",
             "| code | op | here | versions here | LiteRT versions | LiteRT types | note |",
             "|---:|---|---|---|---|---|---|"]
    for r in rows:
        if r.status == "neither":
            continue
        lt = ", ".join(r.litert_types) or "-"
        if r.litert_types and r.litert_types_how != "checks":
            lt += f" ({r.litert_types_how})"
        lv = "-" if r.litert_versions is None else _versions([r.litert_versions])
        lines.append(f"| {r.code} | {r.name} | {_STATUS[r.status]} | "
                     f"{_versions(r.here_versions)} | {lv} | {lt} | {r.note} |")
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:
    out = Output(args)
    rows = coverage()
    figures = summary(rows)
    out.json({"summary": figures, "ops": [r.as_dict() for r in rows]})
    if args.markdown:
        out.text(markdown(rows))
        return 0
    width = max(len(r.name) for r in rows)
    lines = [f"{'op':<{width}}  {'here':<10} {'versions':<9} {'LiteRT':<7} types here / note"]
    for r in rows:
        if r.status == "neither":
            continue
        lv = "-" if r.litert_versions is None else _versions([r.litert_versions])
        lines.append(f"{r.name:<{width}}  {_STATUS[r.status]:<10} {_versions(r.here_versions):<9} "
                     f"{lv:<7} {r.here_types or r.note}" + (f" ({r.note})" if r.note and
                                                            r.here_types else ""))
    lines.append(headline(figures))
    out.text("\n".join(lines))
    return 0
