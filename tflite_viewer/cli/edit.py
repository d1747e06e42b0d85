"""`tflite-viewer edit MODEL -o OUT.tflite [edits ...]`: change a model from the command line.

Edits are applied in the order given, each through `ModelDocument` exactly as the window
applies them (op versions raised, min_runtime_version updated, the result re-read and
checked).  The output is written only when every edit succeeded; an invalid edit exits 2
with one line on stderr and leaves no file.

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
from . import jsonout

EXIT_OK, EXIT_BAD_INPUT = 0, 2


class _Ordered(argparse.Action):
    """Collect every edit flag into one list, in command-line order."""

    def __call__(self, parser, namespace, values, option_string=None):
        edits = getattr(namespace, "edits", None) or []
        edits.append((self.dest, values))
        namespace.edits = edits


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "edit", help="change options, names, versions, quantization, ... and write a new model",
        description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="the .tflite file to edit")
    p.add_argument("-o", "--output", required=True, metavar="OUT.tflite", help="where to write")
    e = p.add_argument_group("edits (applied in the order given)")
    flag = dict(action=_Ordered, default=None)
    e.add_argument("--set", dest="set", metavar="S:N.FIELD=VALUE", **flag,
                   help="set a builtin option (enums by name)")
    e.add_argument("--rename-tensor", dest="rename_tensor", metavar="S:T=NAME", **flag)
    e.add_argument("--set-version", dest="set_version", metavar="S:N=V", **flag,
                   help="set an operator's version (its operator code's)")
    e.add_argument("--description", dest="description", metavar="TEXT", **flag)
    e.add_argument("--rename-signature", dest="rename_signature", metavar="OLD=NEW", **flag)
    e.add_argument("--rename-signature-input", dest="rename_signature_input",
                   metavar="KEY:OLD=NEW", **flag)
    e.add_argument("--rename-signature-output", dest="rename_signature_output",
                   metavar="KEY:OLD=NEW", **flag)
    e.add_argument("--expose", dest="expose", metavar="S:T", **flag,
                   help="make a tensor a subgraph (and signature) output")
    e.add_argument("--remove-op", dest="remove_op", metavar="S:N", **flag,
                   help="remove an operator whose input and output match, rewiring consumers")
    e.add_argument("--set-shape", dest="set_shape", metavar="S:T=D0,D1,...", **flag)
    e.add_argument("--set-quant", dest="set_quant", metavar="S:T=SCALES/ZEROPOINTS[@DIM]", **flag,
                   help="e.g. 0:7=0.02/-3 or 0:7=0.1,0.2,0.3/0,0,0@3")
    e.add_argument("--set-custom", dest="set_custom", metavar="S:N.KEY=VALUE", **flag,
                   help="set a key of a custom op's FlexBuffer options")
    e.add_argument("--remove-custom", dest="remove_custom", metavar="S:N.KEY", **flag)
    e.add_argument("--metadata", dest="metadata", metavar="NAME=TEXT|NAME=@FILE", **flag)
    e.add_argument("--remove-metadata", dest="remove_metadata", metavar="NAME", **flag)
    e.add_argument("--reorder", dest="reorder", metavar="S:memory|S:N0,N1,...", **flag,
                   help="run subgraph S's operators in another order: the one `memory "
                        "--what-if` finds for the smallest TFLite Micro arena, or the listed one")
    e.add_argument("--offline-plan", dest="offline_plan", nargs="?", const="tflm",
                   choices=("tflm", "best"), action=_Ordered, default=None,
                   help="store TFLite Micro's arena plan (or with 'best' the smallest one "
                        "`memory --what-if` finds) as OfflineMemoryAllocation metadata")
    p.add_argument("--layout", choices=("auto", "inline", "offset"), default="auto",
                   help="buffer layout of the output (auto: offset only past 2 GB or if the "
                        "input used it)")
    p.add_argument("--overwrite", action="store_true",
                   help="allow OUT to be the input file itself")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
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


def main(args: argparse.Namespace) -> int:
    from ..edit import ModelDocument
    edits = getattr(args, "edits", None) or []
    try:
        doc = ModelDocument(args.model, layout=args.layout)
        commands = [build_command(kind, value) for kind, value in edits]
        results = [doc.apply(cmd) for cmd in commands]
        out = Path(args.output)
        if not args.overwrite and _same_file(out, args.model):
            # the library's refusal names its keyword argument; say the CLI flag here
            raise EditError(f"{out} is the opened model; write to another file with -o, or pass "
                            "--overwrite to replace it")
        doc.save(out, overwrite_original=args.overwrite)
    except EditError as exc:
        sys.stderr.write(f"tflite-viewer: error: {exc}\n")
        return EXIT_BAD_INPUT
    if args.json:
        print(jsonout.dumps({
            "output": str(out), "bytes": doc.nbytes,
            "edits": [{"description": r.description, "warnings": r.warnings,
                       "raised_versions": [vars(v) for v in r.raised_versions],
                       "min_runtime_version": r.min_runtime_version} for r in results],
            "changes": doc.changes(),
            "findings": []}, indent=2))  # non-finite numbers: null plus a finding
        return EXIT_OK
    for r in results:
        print("\n".join(r.lines()))
    if not results:
        print("no edits: the model is written unchanged")
    print(f"wrote {out} ({doc.nbytes} bytes)")
    return EXIT_OK
