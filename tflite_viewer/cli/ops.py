"""`tflite-viewer ops [--forms] [--json | --markdown] [-o OUT.json]`: op coverage, every
builtin code with its versions and types here and what LiteRT's builtin op resolver accepts;
with ``--forms``, the weights of the weighted ops in every type and quantization form, here
and in LiteRT's builtin kernels (the generated sweep, interpreter/litert_forms.py)."""
from __future__ import annotations

import argparse

from ..interpreter.coverage import (REFUSAL_GAPS, RUNS_WHERE_LITERT_IS_WRONG, FormCoverage,
                                    OpCoverage, coverage, forms_coverage, forms_summary,
                                    summary)
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
    p.add_argument("--forms", action="store_true",
                   help="weights by op x activations x type x quantization form, here and "
                        "in LiteRT's builtin kernels")
    add_output_option(p, what="the coverage as JSON")


def _versions(ranges) -> str:
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges) or "-"


def headline(figures: dict) -> str:
    return (f"{figures['covered']} of LiteRT's {figures['litert_builtins']} builtin ops run "
            f"here ({figures['all_versions']} in every version LiteRT resolves); "
            f"{figures['here_only']} more that LiteRT's builtin resolver lacks; "
            f"{figures['builtin_codes']} builtin codes in the schema")


def forms_headline(figures: dict) -> str:
    return (f"Weights in every type and quantization form ({figures['combinations']} "
            f"combinations of {figures['ops']} weighted ops x activations x weight type x "
            f"none/per-tensor/per-channel/blockwise/custom): LiteRT's builtin kernels compute "
            f"{figures['litert_runs']} with meaning, {figures['litert_runs_here_runs']} of "
            f"them run here; of the {figures['litert_wrong']} LiteRT runs without meaning "
            f"(scales ignored, zeros), {figures['litert_wrong_here_refused']} are refused here "
            f"and {figures['litert_wrong_here_runs']} run (as its reference kernel or as it "
            f"reads them: `ops --forms`); the {figures['litert_refuses']} it refuses are "
            f"refused here ({figures['litert_refuses_here_refused']})")


def _forms_table(rows: list[FormCoverage]) -> list[tuple[str, str, str, str, str, str]]:
    """Per (op, activations, weight type): the forms run here, the forms LiteRT runs with
    meaning, the forms it runs without meaning, and the notes of the ones run here there."""
    groups: dict[tuple[str, str, str], list[FormCoverage]] = {}
    for r in rows:
        groups.setdefault((r.op, r.activations, r.weight_type), []).append(r)
    out = []
    for (op, act, wtype), rs in groups.items():
        here = [r.form for r in rs if r.here == "runs"]
        lit = [r.form for r in rs if r.litert == "runs"]
        wrong = [r.form + _what_litert_computes(r) for r in rs if r.litert == "wrong"]
        note = RUNS_WHERE_LITERT_IS_WRONG.get((op, wtype), "") if any(
            r.litert == "wrong" and r.here == "runs" for r in rs) else ""
        out.append((op, act, wtype, ", ".join(here) or "-", ", ".join(lit) or "-",
                    (", ".join(wrong) or "-") + (f" ({note})" if note else "")))
    return out


def _what_litert_computes(r: FormCoverage) -> str:
    """`` (zeros)`` or `` (the bias alone)`` when the sweep found LiteRT's meaningless
    result to be that simple (as for INT2 blockwise FULLY_CONNECTED weights)."""
    note = r.litert_note
    return " (zeros)" if note.startswith("its output is all zeros") else \
        " (the bias alone)" if note.startswith("its output is the bias alone") else ""


def forms_markdown(rows: list[FormCoverage]) -> str:
    lines = [f"**{forms_headline(forms_summary(rows))}** (`tflite-viewer ops --forms`).", "",
             "| op | activations | weight type | runs here | LiteRT runs | LiteRT runs "
             "without meaning |", "|---|---|---|---|---|---|"]
    for row in _forms_table(rows):
        if row[3] == row[4] == "-" and row[5] == "-":
            continue
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def _forms_main(args: argparse.Namespace) -> int:
    out = Output(args)
    rows = forms_coverage()
    figures = forms_summary(rows)
    out.json({"summary": figures, "combinations": [r.as_dict() for r in rows]})
    if args.markdown:
        out.text(forms_markdown(rows))
        return 0
    lines = [f"{'op':<18} {'act':<6} {'weight':<8} runs here / LiteRT runs / LiteRT runs "
             "without meaning"]
    for op, act, wtype, here, lit, wrong in _forms_table(rows):
        lines.append(f"{op:<18} {act:<6} {wtype:<8} {here} / {lit} / {wrong}")
    out.text("\n".join(lines + [forms_headline(figures)]))
    return 0


def refusals_markdown() -> str:
    """The refusal audit's rule and the refusals it found false that are still made."""
    lines = ["Every (op, tensor type, quantization form) the interpreter refuses is checked "
             "against LiteRT 2.3.0's builtin kernels on a one-op model built for the purpose "
             "(`tests/interpreter/test_refusal_audit.py`: the simple ops' tensors in every "
             "type and form, the weighted ops' weights, the conv and pool configurations, "
             "DENSIFY, zero scales). A refusal is false when LiteRT runs the model with "
             "meaning: finite outputs that agree with the op computed in float on the real "
             "values. Each one is a failing test, unless it is listed here with why it is "
             "still refused:", ""]
    lines += [f"- `{pattern}`: {why}" for pattern, why in REFUSAL_GAPS.items()]
    return "\n".join(lines) + "\n"


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
    if getattr(args, "forms", False):
        return _forms_main(args)
    out = Output(args)
    rows = coverage()
    figures = summary(rows)
    if out.wants_json:
        forms = forms_coverage()
        out.json({"summary": figures, "ops": [r.as_dict() for r in rows],
                  "weight_forms": {"summary": forms_summary(forms),
                                   "combinations": [r.as_dict() for r in forms]},
                  "refusal_gaps": [{"cases": k, "reason": v} for k, v in REFUSAL_GAPS.items()]})
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
    lines.append(forms_headline(forms_summary(forms_coverage())))
    out.text("\n".join(lines))
    return 0
