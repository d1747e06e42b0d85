"""`tflite-viewer info MODEL [--json] [-o OUT.json]`: a readable summary, in the spirit of
LiteRT's analyzer, or the same as a JSON document (docs/ARCHITECTURE.md's contract).

The JSON is strict (`jsonout`): a non-finite number (a NaN scale) is written as ``null``
and listed in ``findings`` with where it was."""
from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from ..graph.labels import composite_summary
from ..model import Model, ModelFormatError
from .common import CommandError, add_model_argument, load_model_arg, subcommand_parser
from .output import Output, add_json_option, add_output_option

DESCRIPTION = ("Summarize a model: every subgraph's operators (op, version, inputs, outputs, "
               "called subgraphs) and tensors (type, shape, quantization, buffer), the "
               "signatures, the metadata, associated files and what the reader found wrong "
               "with the model (errors: what LiteRT would refuse it for; warnings: what it "
               "loads but that is suspicious, such as a zero or NaN quantization scale).")
# shown in docs/cli.md, and run by tests/test_docs.py in a folder holding the corpus models
EXAMPLES = [
    "tflite-viewer info mobilenet_v2_float.tflite",
    "tflite-viewer info control_flow.tflite --json",
]


def add_parser(subparsers) -> None:
    p = subcommand_parser(subparsers, "info", DESCRIPTION)
    add_model_argument(p, help="the .tflite file, or a .litertlm container")
    p.add_argument("--section", type=int, metavar="N", default=None,
                   help="the TFLite section of a .litertlm container to describe (default: "
                        "its first TFLiteModel section)")
    add_json_option(p, "the summary")
    add_output_option(p, what="the summary as JSON")


def _jsonable(value: Any) -> Any:
    """Options and metadata as JSON: bytes as hex, numpy values as Python values."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return {"bytes_hex": bytes(value).hex()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value  # non-finite floats: null plus a finding, by jsonout.dumps


def _quantization(t) -> dict | None:
    q = t.quantization
    if q is None:
        return None
    return {"scale": q.scale.tolist(), "zero_point": q.zero_point.tolist(),
            "min": q.min.tolist(), "max": q.max.tolist(),
            "quantized_dimension": q.quantized_dimension, "details": _jsonable(q.details)}


def _sparsity(t) -> dict | None:
    s = t.sparsity
    if s is None:
        return None
    return {"traversal_order": list(s.traversal_order), "block_map": list(s.block_map),
            "dim_metadata": [{"format": d.format_name, "dense_size": d.dense_size,
                              "array_segments": None if d.array_segments is None
                              else d.array_segments.tolist(),
                              "array_indices": None if d.array_indices is None
                              else d.array_indices.tolist()} for d in s.dim_metadata]}


def _metadata(model: Model) -> list[dict]:
    out = []
    for m in model.metadata:
        entry: dict[str, Any] = {"name": m.name, "buffer": m.buffer, "size": int(m.data.size)}
        try:
            entry["value"] = _jsonable(m.decoded())
        except ModelFormatError as exc:
            entry["error"] = str(exc)
        out.append(entry)
    return out


def summarize(model: Model) -> dict:
    """The `info --json` document (docs/ARCHITECTURE.md's contract, plus sizes and findings)."""
    subgraphs = []
    for sg in model.subgraphs:
        tensors = [{"index": t.index, "name": t.name, "dtype": t.type_name,
                    "shape": list(t.shape),
                    "shape_signature": None if t.shape_signature is None else list(t.shape_signature),
                    "buffer": t.buffer, "buffer_bytes": t.buffer_nbytes, "kind": t.kind,
                    "is_variable": t.is_variable, "quantization": _quantization(t),
                    "sparsity": _sparsity(t),
                    **({"external_buffer": t.external_buffer,
                        "data_location": t.data_location} if t.external_buffer else {})}
                   for t in sg.tensors]
        operators = [{"index": op.index, "opcode": op.name, "builtin_code": op.builtin_code,
                      "version": op.version, "inputs": list(op.inputs),
                      "outputs": list(op.outputs), "intermediates": list(op.intermediates),
                      "options_type": _jsonable(op.builtin_options_type
                                                or op.builtin_options_2_type),
                      "options": _jsonable(op.options),
                      "custom_options": _jsonable(op.custom_options),
                      "calls": op.called_subgraphs,
                      **({"composite": {"name": op.composite_name,
                                        "attributes": _jsonable(op.composite_attributes)}}
                         if op.composite_name is not None else {})} for op in sg.operators]
        subgraphs.append({"index": sg.index, "name": sg.name, "inputs": list(sg.inputs),
                          "outputs": list(sg.outputs), "tensors": tensors,
                          "operators": operators})
    return {
        "file": str(model.path) if model.path else (str(model.origin) if model.origin else None),
        "file_size": model.file_size, "schema_version": model.version,
        "description": model.description,
        "weights_bytes": model.weights_nbytes,
        "graph_bytes": model.file_size - model.weights_nbytes,
        "parameter_count": model.parameter_count,
        "op_histogram": model.op_histogram(),
        "subgraphs": subgraphs,
        "signatures": [{"key": s.key, "subgraph_index": s.subgraph_index,
                        "inputs": {m.name: m.tensor_index for m in s.inputs},
                        "outputs": {m.name: m.tensor_index for m in s.outputs}}
                       for s in model.signature_defs],
        "metadata": _metadata(model),
        **_external(model),
        "associated_files": model.associated_files(),
        "findings": [{"severity": f.severity, "where": f.where, "message": f.message}
                     for f in model.findings],
    }


def _external(model: Model) -> dict:
    """The side files (external buffer groups) and their entries, when the model has any."""
    if not model.external_buffer_groups and not model.external_buffers:
        return {}
    groups = []
    for g in model.external_buffer_groups:
        size = model.weights.size(g.name) if g.name else None
        groups.append({"index": g.index, "name": g.name,
                       "location": model.weights.describe(g.name), "exists": size is not None,
                       "bytes": size})
    return {"external_buffer_groups": groups,
            "external_buffers": [{"id": e.id, "group": e.group, "offset": e.offset,
                                  "length": e.length, "packing": e.packing}
                                 for e in model.external_buffers]}


def _tensor_line(t) -> str:
    q = t.quantization
    quant = ""
    if q is not None and q.scale.size:
        if q.is_per_channel:
            quant = f" quant(per-channel dim {q.quantized_dimension}, {q.scale.size} scales)"
        else:
            zp = int(q.zero_point[0]) if q.zero_point.size else 0
            quant = f" quant(scale {float(q.scale[0]):.6g}, zp {zp})"
    sig = ""
    if t.shape_signature is not None and tuple(t.shape_signature) != t.shape:
        sig = f" sig{list(t.shape_signature)}"
    extra = " variable" if t.is_variable else ""
    extra += " sparse" if t.sparsity is not None else ""
    buf = f" B#{t.buffer} ({t.buffer_nbytes} bytes)" if t.buffer_nbytes or t.is_constant else ""
    if t.external_buffer:
        buf = f" in {t.data_location}"
    return f"  T#{t.index} {t.name} {t.type_name}{list(t.shape)}{sig}{quant}{buf}{extra}"


def _tree_lines(value: Any, indent: str) -> list[str]:
    """Nested metadata as an indented outline, leaving out empty fields."""
    out: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if item in (None, [], {}):
                continue
            if isinstance(item, (dict, list)):
                out.append(f"{indent}{key}:")
                out.extend(_tree_lines(item, indent + "  "))
            else:
                text = str(item)
                out.append(f"{indent}{key}: {text if len(text) <= 120 else text[:117] + '...'}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, (dict, list)):
                out.append(f"{indent}[{i}]")
                out.extend(_tree_lines(item, indent + "  "))
            else:
                out.append(f"{indent}- {item}")
    return out


def render_text(model: Model) -> str:
    lines = [f"Model {model.path or model.origin or '<bytes>'}: schema version {model.version}, "
             f"{model.file_size} bytes ({model.weights_nbytes} weights, "
             f"{model.file_size - model.weights_nbytes} graph), "
             f"{model.parameter_count} parameters"]
    if model.description:
        lines.append(f"Description: {model.description}")
    for sg in model.subgraphs:
        lines.append("")
        lines.append(f"Subgraph#{sg.index} {sg.display_name}({', '.join(f'T#{i}' for i in sg.inputs)})"
                     f" -> [{', '.join(f'T#{i}' for i in sg.outputs)}]")
        for op in sg.operators:
            ins = ", ".join("-" if i < 0 else f"T#{i}" for i in op.inputs)
            outs = ", ".join(f"T#{i}" for i in op.outputs)
            calls = "".join(f" {role}=Subgraph#{s}" for role, s in op.called_subgraphs.items())
            if op.composite_name is not None:  # what the composite computes
                calls = f" {op.composite_name}({composite_summary(op)})" + calls
            lines.append(f"  Op#{op.index} {op.name}(v{op.version})({ins}) -> [{outs}]{calls}")
        lines.append("  Tensors:")
        lines.extend(_tensor_line(t) for t in sg.tensors)
    lines.append("")
    lines.append("Operators: " + ", ".join(f"{k}: {v}" for k, v in model.op_histogram().items()))
    for s in model.signature_defs:
        lines.append(f"Signature {s.key!r} -> Subgraph#{s.subgraph_index}: inputs "
                     f"{ {m.name: m.tensor_index for m in s.inputs} } outputs "
                     f"{ {m.name: m.tensor_index for m in s.outputs} }")
    for entry in _metadata(model):
        head = f"Metadata {entry['name']!r} (buffer {entry['buffer']}, {entry['size']} bytes)"
        value = entry.get("value", entry.get("error"))
        if isinstance(value, dict):
            lines.append(head + ":")
            lines.extend(_tree_lines(value, "    "))
        else:
            text = value if isinstance(value, str) else json.dumps(value)[:200]
            lines.append(f"{head}: {text}")
    for g in _external(model).get("external_buffer_groups", []):
        state = f"{g['bytes']:,} bytes" if g["exists"] else "MISSING"
        lines.append(f"External buffer group {g['index']} {g['name']!r}: {g['location']} "
                     f"({state})")
    for name in model.associated_files():
        lines.append(f"Associated file: {name}")
    for f in model.findings:
        lines.append(f"Problem: {f}")
    return "\n".join(lines)


def _container(model: Model) -> dict | None:
    """The container a model was opened from: its version, metadata and sections."""
    origin = model.origin
    if origin is None:
        return None
    c = origin.container
    return {"file": str(c.path) if c.path else None, "version": ".".join(map(str, c.version)),
            "system_metadata": _jsonable(c.system_metadata), "section": origin.section,
            "sections": [{"index": s.index, "type": s.type_name, "begin": s.begin,
                          "end": s.end, "items": _jsonable(s.items)} for s in c.sections]}


def _container_lines(doc: dict, model: Model) -> list[str]:
    c = model.origin.container
    lines = [f"Container {c.name}: LiteRT-LM {doc['version']}, {len(c.sections)} sections"]
    for key, value in c.system_metadata.items():
        lines.append(f"  {key}: {value}")
    for s in c.sections:
        mark = "  <- described below" if s.index == doc["section"] else ""
        lines.append(f"  {s.label}, bytes {s.begin:,}..{s.end:,}{mark}")
    s = c.sections[doc["section"]]
    kind = f" {s.model_type.removeprefix('tf_lite_')}" if s.model_type else ""
    return lines + ["", f"Section {s.index} ({s.type_name}{kind}):"]


def main(args: argparse.Namespace) -> int:
    out = Output(args)
    if args.section is not None and args.section < 0:
        raise CommandError(f"--section {args.section}: a section number is 0 or more")
    model = load_model_arg(args.model, section=args.section)
    container = _container(model)
    if args.section is not None and container is None:
        raise CommandError(f"{args.model}: --section is for .litertlm containers; this is a "
                           ".tflite model")
    if not out.stdout_taken:
        head = _container_lines(container, model) if container else []
        out.text("\n".join(head + [render_text(model)]))
    if out.wants_json:
        doc = summarize(model)
        if container:
            doc["container"] = container
        out.json(doc)
    return 0
