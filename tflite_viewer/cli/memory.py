"""`tflite-viewer memory MODEL [--target tflm|litert] [--json] [-o OUT.json]`: will it fit?

The arena a runtime plans for the model: its size, the step where it peaks and the tensors
live there (largest first), a text timeline like TFLite Micro's ``PrintMemoryPlan``, the
model's own offline plan (OfflineMemoryAllocation) and whether it is valid, and with
``--what-if`` an operator order and a placement that need less (``tflite-viewer edit
--reorder S:memory`` and ``--offline-plan best`` apply them).  docs/memory.md says how
each figure is computed and checked.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .common import add_model_argument, load_model_arg, subcommand_parser
from .output import Output, add_json_option, add_output_option

DESCRIPTION = ("The tensor arena a runtime plans for the model, computed as it computes it: "
               "TFLite Micro's GreedyMemoryPlanner (the head TFLM's RecordingMicroAllocator "
               "prints, and a lower bound of its tail) or LiteRT's ArenaPlanner; the step "
               "where it peaks and the tensors live there, largest first; a timeline of the "
               "arena; the model's own offline plan (OfflineMemoryAllocation) and whether it "
               "is valid.\n\n"
               "--what-if looks for an operator order and a tensor placement that need a "
               "smaller TFLite Micro arena; edit --reorder S:memory and edit --offline-plan "
               "best apply them.")
# shown in docs/cli.md, and run by tests/test_docs.py in a folder holding the corpus models
EXAMPLES = [
    "tflite-viewer memory person_detect.tflite",
    "tflite-viewer memory mobilenet_v1_0.25_224_1_default_1.tflite --what-if --no-timeline",
    "tflite-viewer memory mobilenet_v2_float.tflite --target litert --json",
]


def add_parser(subparsers) -> None:
    p = subcommand_parser(subparsers, "memory", DESCRIPTION)
    add_model_argument(p)
    p.add_argument("--target", choices=("tflm", "litert"), default=None, metavar="NAME",
                   help="tflm (TFLite Micro's GreedyMemoryPlanner) or litert (LiteRT's "
                        "ArenaPlanner); default tflm, or litert for an LLM decoder (signatures "
                        "carrying a KV cache), which is not a TFLite Micro model")
    add_json_option(p, "the plan")
    add_output_option(p, what="the plan as JSON")
    p.add_argument("--pointer-size", choices=("4", "8"), default="4",
                   help="tflm: bytes per pointer on the target: 4 for a 32-bit "
                        "microcontroller, 8 for a 64-bit host such as the tflite-micro "
                        "Python package (default 4)")
    p.add_argument("--what-if", action="store_true",
                   help="tflm: look for an operator order and a tensor placement that need "
                        "a smaller arena")
    p.add_argument("--no-timeline", action="store_true",
                   help="leave the timeline out of the text report")


def _where(model, step_op: tuple[int, int] | None) -> str:
    if step_op is None:
        return "nowhere"
    s, k = step_op
    if k < 0:
        return f"subgraphs[{s}] entry (its inputs)"
    return f"subgraphs[{s}].operators[{k}] {model.subgraphs[s].operators[k].name}"


def _buffer_doc(b) -> dict[str, Any]:
    if b.tensor >= 0:
        return {"subgraph": b.subgraph, "index": b.tensor, "name": b.name, "offset": b.offset,
                "size": b.size, "bytes": b.bytes, "first": b.first, "last": b.last,
                "offline": b.offline, **({"shares": b.shares} if b.shares >= 0 else {})}
    return {"subgraph": b.subgraph, "op": b.op, "what": b.name.removeprefix("scratch: "),
            "offset": b.offset, "size": b.size, "bytes": b.bytes, "first": b.first,
            "last": b.last}


def document(model, plan, reorder=None, settings: dict | None = None,
             offline_plan=None, why_target: str | None = None) -> dict[str, Any]:
    """The `memory --json` document (docs/memory.md describes every key)."""
    arena = plan.arena
    peak = plan.peak_op
    live = arena.live_at(arena.peak_step) if arena.peak_step is not None else []
    codes = [c.name for c in model.operator_codes]
    opcode = [[codes[c] if 0 <= c < len(codes) else None
               for c in sg.columns.opcode_index.tolist()] for sg in model.subgraphs]
    live_bytes, tops = arena.live_bytes.tolist(), arena.top.tolist()
    steps = []
    for i, (s, k) in enumerate(arena.steps):
        j = i - arena.step_base
        steps.append({"step": i, "subgraph": s, "op": k,
                      "opcode": opcode[s][k] if k >= 0 else None,
                      "live_bytes": live_bytes[j] if 0 <= j < len(live_bytes) else 0,
                      "top": tops[j] if 0 <= j < len(tops) else 0})
    doc: dict[str, Any] = {
        "model": str(model.path) if model.path else None,
        "target": plan.target,
        "why_target": why_target,
        "settings": dict(settings or {}, alignment=plan.alignment),
        "arena": {"head_bytes": plan.head_bytes, "tail_bytes": plan.tail_bytes,
                  "tail_is_lower_bound": True, "tail_parts": plan.tail_parts,
                  "peak_op": list(peak) if peak is not None else None,
                  "peak_step": arena.peak_step,
                  "peak_live_bytes": sum(b.size for b in live)},
        "tensors": [_buffer_doc(b) for b in plan.buffers if b.tensor >= 0],
        "scratch": [_buffer_doc(b) for b in plan.buffers if b.tensor < 0],
        "live_at_peak": [_buffer_doc(b) for b in live],
        "steps": steps,
        "offline": None if plan.offline is None else {
            "version": plan.offline.version, "subgraphs": plan.offline.subgraphs,
            "valid": plan.offline.valid, "errors": plan.offline.errors,
            "warnings": plan.offline.warnings},
        "what_if": None,
        "problems": plan.problems, "notes": plan.notes, "findings": [],
    }
    if plan.target == "litert":
        doc["arenas"] = [{"subgraph": a.subgraph, "size": a.size,
                          "peak_op": list(a.step_op(a.peak_step) or []) or None}
                         for a in plan.arenas]
    if reorder is not None:
        doc["what_if"] = {"subgraph": reorder.subgraph, "order": reorder.order,
                          "head_bytes": reorder.head_after, "saved_bytes": reorder.saved,
                          "operators_moved": reorder.moved, "strategy": reorder.strategy,
                          "apply": f"tflite-viewer edit MODEL -o OUT.tflite --reorder "
                                   f"{reorder.subgraph}:memory"}
    if offline_plan is not None:
        doc["what_if_offline_plan"] = {
            "head_bytes": offline_plan.head_after, "saved_bytes": offline_plan.saved,
            "strategy": offline_plan.strategy,
            "apply": "tflite-viewer edit MODEL -o OUT.tflite --offline-plan best"}
    return doc


def render_text(model, plan, reorder=None, timeline: bool = True,
                settings: dict | None = None, offline_plan=None,
                why_target: str | None = None) -> str:
    from ..memory import timeline as draw
    arena = plan.arena
    name = Path(model.path).name if model.path else "model"
    lines = _heading(name, plan, settings)
    if why_target:
        lines.insert(1, f"  {why_target}")
    live = arena.live_at(arena.peak_step) if arena.peak_step is not None else []
    lines.append(f"  peak: {_peak_where(model, plan)}; "
                 f"{sum(b.size for b in live):,} bytes live there:")
    for b in live[:20]:
        what = (f"tensor {b.tensor} {b.name!r}" if b.tensor >= 0
                else f"scratch of op {b.op} ({b.name.removeprefix('scratch: ')})")
        lines.append(f"    {b.size:>12,}  {what}  [{b.offset:,}, {b.end:,})  "
                     f"steps {b.first}..{b.last}")
    if len(live) > 20:
        lines.append(f"    ... {len(live) - 20} more")
    if plan.offline is None:
        lines.append("  offline plan: none")
    else:
        state = "valid" if plan.offline.valid else "NOT valid"
        lines.append(f"  offline plan (OfflineMemoryAllocation v{plan.offline.version}): {state}")
        lines += [f"    error: {e}" for e in plan.offline.errors]
        lines += [f"    warning: {w}" for w in plan.offline.warnings]
    lines += [f"  problem: {p}" for p in plan.problems]
    lines += [f"  note: {n}" for n in plan.notes]
    if reorder is not None:
        lines.append(f"  what if: running subgraph {reorder.subgraph}'s operators in another "
                     f"order ({reorder.moved} moved, {reorder.strategy}) needs "
                     f"{reorder.head_after:,} bytes, {reorder.saved:,} less; apply it with")
        lines.append(f"    tflite-viewer edit {name} -o OUT.tflite --reorder "
                     f"{reorder.subgraph}:memory")
    elif settings and settings.get("what_if"):
        lines.append("  what if: no operator order found needs less than the file's")
    if offline_plan is not None:
        lines.append(f"  what if: an offline plan placing tensors {offline_plan.strategy} "
                     f"needs {offline_plan.head_after:,} bytes, {offline_plan.saved:,} less, "
                     "with the graph unchanged; store it with")
        lines.append(f"    tflite-viewer edit {name} -o OUT.tflite --offline-plan best")
    elif settings and settings.get("what_if"):
        lines.append("  what if: no offline plan found beats TFLM's own placement")
    if timeline:
        rows = draw(arena)
        if rows:
            lines.append("timeline (a row per step, 80 columns across the arena; '*' live one "
                         "step, '!' overlap):")
            lines += rows
    return "\n".join(lines)


def _heading(name: str, plan, settings: dict | None) -> list[str]:
    if plan.target == "tflm":
        head = (f"{name}: TFLite Micro arena (reference kernels, "
                f"{(settings or {}).get('pointer_bytes', 4) * 8}-bit pointers, "
                f"{plan.alignment}-byte alignment)")
        return [head,
                f"  head (planned tensors and scratch): {plan.head_bytes:>12,} bytes",
                f"  tail (persistent, at least):        {plan.tail_bytes:>12,} bytes  ("
                + ", ".join(f"{k} {v:,}" for k, v in plan.tail_parts.items()) + ")"]
    return [f"{name}: LiteRT arenas (builtin kernels without delegates, "
            f"{plan.alignment}-byte tensor alignment)",
            f"  non-persistent arenas:  {plan.head_bytes:>12,} bytes"
            + "".join(f"\n    subgraph {a.subgraph}: {a.size:,}" for a in plan.arenas
                      if len(plan.arenas) > 1),
            f"  persistent arena:       {plan.tail_bytes:>12,} bytes"]


def _peak_where(model, plan) -> str:
    """Where the arena peaks, in words.  TFLM gives the tensors of subgraphs it never
    reaches from subgraph 0 no lifetime (step -1), and plans them as all live at once."""
    from ..memory.tflm import unreached_subgraphs

    step = plan.arena.peak_step
    if step is not None and step < 0:
        ids = unreached_subgraphs(plan)
        return (f"in subgraphs {', '.join(map(str, ids[:8]))}{' ...' if len(ids) > 8 else ''}, "
                "which no control flow reaches from subgraph 0: TFLM never runs them, gives "
                "their tensors no lifetime and plans them all as live at once")
    return f"step {step}, {_where(model, plan.peak_op)}"


def main(args: argparse.Namespace) -> int:
    from ..memory import plan_litert, plan_tflm
    from ..memory.reorder import best_order
    from ..memory.decoder import llm_decoder
    out = Output(args)
    model = load_model_arg(args.model)
    settings: dict[str, Any] = {}
    reorder = offline_plan = None
    target, why_target = args.target, None
    decoder = llm_decoder(model)
    if decoder is not None:
        why_target = (f"This is {decoder}, not a TFLite Micro model: "
                      + ("TFLM's plan follows, as asked" if target == "tflm" else
                         "LiteRT's arenas follow (--target tflm plans it for TFLM anyway)"))
    target = target or ("litert" if decoder is not None else "tflm")
    if target == "tflm":
        pointer = int(args.pointer_size)
        settings = {"pointer_bytes": pointer, "kernels": "reference"}
        plan = plan_tflm(model, pointer_bytes=pointer)
        if args.what_if:
            from ..memory.offline_search import best_offline_plan
            reorder = best_order(model, pointer_bytes=pointer)
            offline_plan = best_offline_plan(model, pointer_bytes=pointer)
    else:
        if args.what_if:
            raise ValueError("--what-if searches TFLite Micro's plan; use it with --target tflm")
        settings = {"kernels": "builtin, no delegates"}
        plan = plan_litert(model)
    if out.wants_json:
        out.json(document(model, plan, reorder, settings, offline_plan, why_target), indent=False)
    if not out.stdout_taken:
        out.text(render_text(model, plan, reorder, not args.no_timeline,
                             dict(settings, what_if=args.what_if), offline_plan, why_target))
    return 0
