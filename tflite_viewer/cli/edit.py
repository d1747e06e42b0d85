"""`tflite-viewer edit MODEL -o OUT.tflite [edits ...]`: change a model from the command line.

Edits are applied in the order given, each through `ModelDocument` exactly as the window
applies them (op versions raised, min_runtime_version updated, the result re-read and
checked).  The output is written only when every edit succeeded; an invalid edit exits 2
with one line on stderr and leaves no file.  Stored shapes an edit made stale are a
warning on stderr (``--update-shapes`` writes the computed ones, as the window's Update
Stored Shapes does).

Addresses: ``S:N`` is operator (or tensor) N of subgraph S; ``S:`` may be omitted for
subgraph 0.  Values are typed by the schema: ``--set 0:3.padding=VALID``,
``--set 3.stride_w=2``, ``--set 5.fused_activation_function=RELU6``.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..model.errors import EditError
from .common import CommandError, add_model_argument, load_model_arg, subcommand_parser
from .output import Output, add_json_option, add_output_option

EXIT_OK = 0
DESCRIPTION = ("Change a model and write the result: builtin and custom options, tensor "
               "names, shapes and quantization, op versions, signature names, description and "
               "metadata; expose a tensor as an output or remove a pass-through operator. "
               "Edits apply in the order given, each checked as the window checks it (op "
               "versions raised, min_runtime_version updated); nothing is written unless "
               "all succeed.\n\n"
               "Addresses: S:N is operator (or tensor) N of subgraph S, and S: may be left out "
               "for subgraph 0. Values are typed by the schema, enums by name: "
               "--set 0:3.padding=VALID, --set 5.fused_activation_function=RELU6.")
# shown in docs/cli.md, and run by tests/test_docs.py in a folder holding the corpus models
EXAMPLES = [
    "tflite-viewer edit small_cnn_dilated_float.tflite -o edited.tflite --set 2.dilation_w_factor=2 --rename-tensor 0:0=pixels",
]


class _Ordered(argparse.Action):
    """Collect every edit flag into one list, in command-line order."""

    def __call__(self, parser, namespace, values, _option_string=None):
        edits = getattr(namespace, "edits", None) or []
        edits.append((self.dest, values))
        namespace.edits = edits


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subcommand_parser(subparsers, "edit", DESCRIPTION)
    add_model_argument(p, "the .tflite file to edit")
    add_output_option(p, metavar="OUT.tflite", required=True, what="the edited model")
    e = p.add_argument_group("edits (applied in the order given)")
    flag = dict(action=_Ordered, default=None)
    e.add_argument("--set", dest="set", metavar="S:N.FIELD=VALUE", **flag,
                   help="set a builtin option of operator N (enums by name)")
    e.add_argument("--rename-tensor", dest="rename_tensor", metavar="S:T=NAME", **flag,
                   help="rename tensor T")
    e.add_argument("--set-version", dest="set_version", metavar="S:N=V", **flag,
                   help="set an operator's version (its operator code's)")
    e.add_argument("--description", dest="description", metavar="TEXT", **flag,
                   help="set the model's description")
    e.add_argument("--rename-signature", dest="rename_signature", metavar="OLD=NEW", **flag,
                   help="rename a signature key")
    e.add_argument("--rename-signature-input", dest="rename_signature_input",
                   metavar="KEY:OLD=NEW", **flag, help="rename an input of signature KEY")
    e.add_argument("--rename-signature-output", dest="rename_signature_output",
                   metavar="KEY:OLD=NEW", **flag, help="rename an output of signature KEY")
    e.add_argument("--expose", dest="expose", metavar="S:T", **flag,
                   help="make a tensor a subgraph (and signature) output")
    e.add_argument("--remove-op", dest="remove_op", metavar="S:N", **flag,
                   help="remove an operator whose input and output match, rewiring consumers")
    e.add_argument("--set-shape", dest="set_shape", metavar="S:T=D0,D1,...", **flag,
                   help="set a tensor's stored shape")
    e.add_argument("--set-quant", dest="set_quant", metavar="S:T=SCALES/ZEROPOINTS[@DIM]", **flag,
                   help="set a tensor's quantization, e.g. 0:7=0.02/-3 or 0:7=0.1,0.2,0.3/0,0,0@3")
    e.add_argument("--set-custom", dest="set_custom", metavar="S:N.KEY=VALUE", **flag,
                   help="set a key of a custom op's FlexBuffer options")
    e.add_argument("--remove-custom", dest="remove_custom", metavar="S:N.KEY", **flag,
                   help="remove a key of a custom op's FlexBuffer options")
    e.add_argument("--metadata", dest="metadata", metavar="NAME=TEXT|NAME=@FILE", **flag,
                   help="set a metadata entry to TEXT or to the bytes of FILE")
    e.add_argument("--remove-metadata", dest="remove_metadata", metavar="NAME", **flag,
                   help="remove a metadata entry")
    e.add_argument("--reorder", dest="reorder", metavar="S:memory|S:N0,N1,...", **flag,
                   help="run subgraph S's operators in another order: the one memory "
                        "--what-if finds for the smallest TFLite Micro arena, or the listed one")
    e.add_argument("--offline-plan", dest="offline_plan", nargs="?", const="tflm",
                   choices=("tflm", "best"), action=_Ordered, default=None,
                   help="store TFLite Micro's arena plan (tflm, the default) or the smallest "
                        "one memory --what-if finds (best) as OfflineMemoryAllocation metadata")
    e.add_argument("--update-shapes", dest="update_shapes", action="store_true",
                   help="after the edits, write the shapes the operators compute into every "
                        "stored shape they made stale")
    p.add_argument("--layout", choices=("auto", "inline", "offset"), default="auto",
                   help="buffer layout of the output: offset puts buffers after the flatbuffer "
                        "(default auto: offset past 2 GB or when the input used it)")
    p.add_argument("--overwrite", action="store_true",
                   help="allow OUT.tflite to be the input file itself")
    add_json_option(p, "what changed")
    return p


def _address(text: str, what: str) -> tuple[int, int]:
    """``"S:N"`` or ``"N"`` -> (S, N)."""
    s, _, n = text.rpartition(":")
    try:
        return (int(s) if s else 0), int(n)
    except ValueError:
        raise EditError(f"bad {what} address {text!r} (expected S:N or N)") from None


def _split(text: str, sep: str, what: str) -> tuple[str, str]:
    left, found, right = text.partition(sep)
    if not found:
        raise EditError(f"bad {what} {text!r} (expected ...{sep}...)")
    return left, right


def _numbers(text: str) -> list[str]:
    return [p for p in (q.strip() for q in text.split(",")) if p]


def build_command(kind: str, value: str):
    """The EditCommand of one command-line flag."""
    from .. import edit as E
    if kind == "set":
        target, val = _split(value, "=", "--set")
        addr, field = _split(target, ".", "--set target")
        s, n = _address(addr, "operator")
        return E.SetOption(s, n, field, val)
    if kind == "rename_tensor":
        addr, name = _split(value, "=", "--rename-tensor")
        return E.RenameTensor(*_address(addr, "tensor"), name)
    if kind == "set_version":
        addr, v = _split(value, "=", "--set-version")
        return E.SetOpVersion(*_address(addr, "operator"), v)
    if kind == "description":
        return E.SetDescription(value)
    if kind == "rename_signature":
        old, new = _split(value, "=", "--rename-signature")
        return E.RenameSignature(old, new)
    if kind in ("rename_signature_input", "rename_signature_output"):
        key, rest = _split(value, ":", f"--{kind.replace('_', '-')}")
        old, new = _split(rest, "=", f"--{kind.replace('_', '-')}")
        return E.RenameSignatureTensor(key, "inputs" if kind.endswith("input") else "outputs",
                                       old, new)
    if kind == "expose":
        return E.ExposeTensor(*_address(value, "tensor"))
    if kind == "remove_op":
        return E.RemoveOperator(*_address(value, "operator"))
    if kind == "set_shape":
        addr, dims = _split(value, "=", "--set-shape")
        return E.SetTensorShape(*_address(addr, "tensor"), _numbers(dims))
    if kind == "set_quant":
        addr, spec = _split(value, "=", "--set-quant")
        dim = "0"
        if "@" in spec:
            spec, dim = spec.rsplit("@", 1)
        scales, _, zps = spec.partition("/")
        try:
            scale = [float(x) for x in _numbers(scales)]
            zp = [int(x) for x in _numbers(zps)] if zps else None
            qd = int(dim)
        except ValueError:
            raise EditError(f"bad --set-quant {value!r} (expected SCALES/ZEROPOINTS[@DIM])") from None
        return E.SetQuantization(*_address(addr, "tensor"), scale, zp, qd)
    if kind == "set_custom":
        target, val = _split(value, "=", "--set-custom")
        addr, key = _split(target, ".", "--set-custom target")
        return E.SetCustomOption(*_address(addr, "operator"), key, val)
    if kind == "remove_custom":
        addr, key = _split(value, ".", "--remove-custom")
        return E.RemoveCustomOption(*_address(addr, "operator"), key)
    if kind == "metadata":
        name, val = _split(value, "=", "--metadata")
        if val.startswith("@"):
            return E.SetMetadata(name, Path(val[1:]).read_bytes())
        return E.SetMetadata(name, val)
    if kind == "remove_metadata":
        return E.RemoveMetadata(value)
    if kind == "reorder":
        s, _, order = value.rpartition(":")
        try:
            sub = int(s) if s else 0
            ops: list[int] | str = order if order == "memory" else [int(k) for k in _numbers(order)]
        except ValueError:
            raise EditError(f"bad --reorder {value!r} (expected S:memory or S:N0,N1,...)") from None
        return E.ReorderOperators(sub, ops)
    if kind == "offline_plan":
        return E.SetOfflineMemoryPlan("best" if value == "best" else None)
    raise EditError(f"unknown edit {kind}")  # pragma: no cover


def _same_file(a: Path, b) -> bool:
    try:
        return a.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _stale_shapes(model):
    """The stored shapes the operators no longer compute (the window's Problems rows)."""
    from ..interpreter.shape_inference import infer_shapes
    try:
        return infer_shapes(model)
    except Exception:  # noqa: BLE001 - no warning is better than a failed edit
        return None


def main(args: argparse.Namespace) -> int:
    from ..edit import ModelDocument, UpdateStoredShapes
    out = Output(args, product_is_json=False)
    edits = getattr(args, "edits", None) or []
    doc = ModelDocument(load_model_arg(args.model), layout=args.layout)
    commands = [build_command(kind, value) for kind, value in edits]
    results = [doc.apply(cmd) for cmd in commands]
    check = _stale_shapes(doc.model) if commands else None
    if check is not None and check.mismatches and args.update_shapes:
        results.append(doc.apply(UpdateStoredShapes(
            {(m.subgraph, m.tensor): m.inferred for m in check.mismatches})))
        check = _stale_shapes(doc.model)
    target = Path(args.output)
    if args.output == "-":
        out.product(doc.to_bytes())
    else:
        if not args.overwrite and _same_file(target, args.model):
            # the library's refusal names its keyword argument; say the CLI flag here
            raise CommandError(f"{target} is the opened model; write to another file with -o, "
                               "or pass --overwrite to replace it")
        doc.save(target, overwrite_original=args.overwrite)
    stale = [] if check is None else check.mismatches
    if stale:  # the ones the edits made stale (a file may come with some: not our news)
        before = _stale_shapes(doc.original)
        known = set() if before is None else {
            (m.subgraph, m.tensor, m.stored, m.inferred) for m in before.mismatches}
        stale = [m for m in stale if (m.subgraph, m.tensor, m.stored, m.inferred) not in known]
    if stale:
        model = doc.model
        first = stale[0]
        shown = first.message(model.subgraphs[first.subgraph].tensors[first.tensor].name,
                              model.subgraphs[first.subgraph].operators[first.operator].name)
        more = f" (and {len(stale) - 1} more)" if len(stale) > 1 else ""
        sys.stderr.write(f"warning: the edits made {len(stale)} stored "
                         f"shape{'s' if len(stale) != 1 else ''} stale: {shown}{more}; "
                         "--update-shapes writes the computed shapes\n")
    size = doc.nbytes
    out.json({
        "output": str(target) if args.output != "-" else "-", "bytes": size,
        "edits": [{"description": r.description, "warnings": r.warnings,
                   "raised_versions": [vars(v) for v in r.raised_versions],
                   "min_runtime_version": r.min_runtime_version} for r in results],
        "changes": doc.changes(),
        "stale_shapes": [{"subgraph": m.subgraph, "tensor": m.tensor, "operator": m.operator,
                          "stored": list(m.stored), "computed": list(m.inferred)} for m in stale],
        "findings": []})  # non-finite numbers: null plus a finding
    lines = [line for r in results for line in r.lines()]
    if not results:
        lines.append("no edits: the model is written unchanged")
    lines.append(f"wrote {target} ({size:,} bytes)")
    out.text("\n".join(lines))
    return EXIT_OK
