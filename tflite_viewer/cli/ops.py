"""`tflite-viewer ops [--json | --markdown]`: op coverage, every builtin code with its
versions and types here and what LiteRT's builtin op resolver accepts."""
from __future__ import annotations

import argparse
import json
import sys

from ..interpreter.coverage import OpCoverage, coverage, summary

_STATUS = {"both": "yes", "versions": "partly", "litert only": "no", "here only": "here only",
           "neither": "-"}


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("ops", help="op coverage: versions and types here vs LiteRT")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON document on stdout")
    fmt.add_argument("--markdown", action="store_true",
                     help="the README's coverage table (Markdown)")


def _versions(ranges) -> str:
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges) or "-"


def headline(figures: dict) -> str:
    return (f"{figures['covered']} of LiteRT's {figures['litert_builtins']} builtin ops run "
            f"here ({figures['all_versions']} in every version LiteRT resolves); "
            f"{figures['here_only']} more that LiteRT's builtin resolver lacks; "
            f"{figures['builtin_codes']} builtin codes in the schema")


def markdown(rows: list[OpCoverage]) -> str:
    lines = [f"**{headline(summary(rows))}** (`tflite-viewer ops`).", "",
             "<details><summary>The table (<code>tflite-viewer ops --markdown</code>)</summary>",
             "",
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
    return "\n".join(lines + ["", "</details>"]) + "\n"


def main(args: argparse.Namespace) -> int:
    rows = coverage()
    figures = summary(rows)
    if args.json:
        json.dump({"summary": figures, "ops": [r.as_dict() for r in rows]}, sys.stdout,
                  indent=1, allow_nan=False)
        sys.stdout.write("\n")
        return 0
    if args.markdown:
        sys.stdout.write(markdown(rows))
        return 0
    width = max(len(r.name) for r in rows)
    out = [f"{'op':<{width}}  {'here':<10} {'versions':<9} {'LiteRT':<7} types here / note"]
    for r in rows:
        if r.status == "neither":
            continue
        lv = "-" if r.litert_versions is None else _versions([r.litert_versions])
        out.append(f"{r.name:<{width}}  {_STATUS[r.status]:<10} {_versions(r.here_versions):<9} "
                   f"{lv:<7} {r.here_types or r.note}" + (f" ({r.note})" if r.note and
                                                          r.here_types else ""))
    out.append(headline(figures))
    sys.stdout.write("\n".join(out) + "\n")
    return 0
