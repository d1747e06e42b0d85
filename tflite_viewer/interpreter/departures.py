"""Where a run departs from LiteRT's, told two ways (`find_departures`).

A cross-check row says how far one op output is from LiteRT's.  Two questions matter
when a run is not LiteRT's, and their answers are often different ops:

* **whose own computation departs**: the first op (in execution order, the ops of a
  composite's decomposition before the composite) whose op-isolated value -- our kernel
  run on LiteRT's own inputs -- leaves the tolerance.  That is the kernel to fix.  An op
  with no isolated value (a composite, control flow) is never named here; its
  decomposition's ops are.
* **where the end-to-end value first leaves the tolerance**: the first op whose output,
  in our whole run, is outside it.  When that op's own computation is within tolerance
  (isolated), the difference came in through an input: the report names the input that is
  furthest from LiteRT's (in float32 units in the last place for a float input) and the op
  that wrote it.  An op that quantizes its float input on the fly (a hybrid or blockwise
  FULLY_CONNECTED, any op with float activations and quantized weights) is where one ulp
  upstream becomes a different int8 value, and the report says so.

The report's `CrossCheckReport.departures` holds the two (`Departures`); the CLI prints
`Departures.lines` under its table and `Departures.to_dict` in its JSON.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .registration import node_kind

if TYPE_CHECKING:
    from .crosscheck_report import CrossCheckReport, LiteRTRun, TensorRow


def float_ulps(ours: np.ndarray, ref: np.ndarray) -> int | None:
    """The largest distance in float32 units in the last place between two float32 arrays
    of one shape (None for other types or shapes; NaN against non-NaN counts as huge)."""
    if ours is None or ref is None or ours.dtype != np.float32 or ref.dtype != np.float32 \
            or ours.shape != ref.shape:
        return None
    if not ours.size:
        return 0

    def ordered(a: np.ndarray) -> np.ndarray:
        bits = np.ascontiguousarray(a).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)

    return int(np.max(np.abs(ordered(ours) - ordered(ref))))


@dataclass
class Departure:
    """One answer: the row, and the sentence that says it."""

    row: "TensorRow"
    text: str
    #: for an end-to-end departure whose op is within tolerance on LiteRT's inputs: the
    #: input furthest from LiteRT's, its ulps, the op that wrote it (None: a subgraph input)
    input_tensor: int | None = None
    input_ulps: int | None = None
    from_op: int | None = None
    quantizes_input: bool = False

    def to_dict(self) -> dict[str, Any]:
        r = self.row
        return {"subgraph": r.subgraph, "op": r.op, "opcode": r.opcode, "output": r.output,
                "tensor": r.tensor, "name": r.name, "text": self.text,
                "input_tensor": self.input_tensor, "input_ulps": self.input_ulps,
                "from_op": self.from_op, "quantizes_input": self.quantizes_input}


@dataclass
class Departures:
    """The first op whose own computation departs (``isolated``) and the first whose
    end-to-end value leaves the tolerance (``end_to_end``); None where there is none."""

    isolated: Departure | None
    end_to_end: Departure | None
    #: whether any row had an isolated value to judge
    isolated_compared: bool = True

    def lines(self) -> list[str]:
        if self.isolated is not None:
            own = self.isolated.text
        elif self.isolated_compared:
            own = "none: every op with an isolated value computes LiteRT's on its inputs"
        else:
            own = "not known: no op could be run on LiteRT's inputs"
        e2e = self.end_to_end.text if self.end_to_end is not None else \
            "none: every op output is within tolerance"
        return [f"First op whose own computation departs (isolated, on LiteRT's inputs): {own}",
                f"First op whose end-to-end value leaves the tolerance: {e2e}"]

    def to_dict(self) -> dict[str, Any]:
        return {"isolated": None if self.isolated is None else self.isolated.to_dict(),
                "end_to_end": None if self.end_to_end is None else self.end_to_end.to_dict()}


def _where(report: "CrossCheckReport", row: "TensorRow", interpreter) -> str:
    """``subgraph 1 op 99 FULLY_CONNECTED, tensor 148 'name'`` (and, inside a composite's
    decomposition, which composite)."""
    head = f"subgraph {row.subgraph} op {row.op} {row.opcode}"
    if row.subgraph != report.subgraph:
        for op, rows in report.inner_rows.items():
            if any(r is row for r in rows):
                name = interpreter.subgraphs[row.subgraph].model_subgraph.name
                head += f" (in {name!r}, the decomposition of op {op} STABLEHLO_COMPOSITE)"
                break
    return f"{head}, tensor {row.tensor} {row.name!r}"


def _error(row: "TensorRow", err, report: "CrossCheckReport") -> str:
    if row.kind == "float" and err.relative is not None:
        return f"relative error {err.relative:.3g} > {report.tolerance:g}"
    return f"{err.units} units > {report.units}"


def _producer(sg, tensor: int) -> int | None:
    for node in sg.nodes:
        if tensor in node.outputs:
            return node.index
    return None


def _input_cause(interpreter, row: "TensorRow", refs: dict[int, np.ndarray]
                 ) -> tuple[int, int, float, int | None] | None:
    """(input tensor, its largest distance from LiteRT's in ulps and in value, the op that
    wrote it) of the row's op input furthest from LiteRT's (float32 inputs only), or None
    when every input is LiteRT's."""
    sg = interpreter.subgraphs[row.subgraph]
    node = sg.nodes[row.op]
    worst = None
    for i in node.inputs:
        if i < 0 or sg.tensors[i].is_constant:
            continue
        ours, ref = sg.tensors[i].data, refs.get(i)
        ulps = float_ulps(ours, ref)
        if ulps and (worst is None or ulps > worst[1]):
            diff = float(np.max(np.abs(ours.astype(np.float64) - ref.astype(np.float64))))
            worst = (i, ulps, diff, _producer(sg, i))
    return worst


def _end_to_end(report: "CrossCheckReport", row: "TensorRow", interpreter,
                litert: "LiteRTRun") -> Departure:
    err = _error(row, row, report)
    text = f"{_where(report, row, interpreter)}: {err}"
    dep = Departure(row, text)
    iso = row.isolated
    if iso is None or not iso.compared or not iso.ok:
        if iso is not None and iso.compared:
            text += "; its own computation departs too (isolated)"
        dep.text = text
        return dep
    own = "bit-exact" if not iso.max_abs and not iso.units else "within tolerance"
    text += f"; on LiteRT's inputs it is {own}"
    refs = litert.tensors if row.subgraph == report.subgraph else \
        litert.inner.get(row.subgraph, {})
    cause = _input_cause(interpreter, row, refs)
    sg = interpreter.subgraphs[row.subgraph]
    dep.quantizes_input = node_kind(sg, sg.nodes[row.op]) == "hybrid"
    if cause is not None:
        tensor, ulps, diff, producer = cause
        dep.input_tensor, dep.input_ulps, dep.from_op = tensor, ulps, producer
        source = "a subgraph input" if producer is None else \
            f"op {producer} {sg.nodes[producer].name}"
        off = f"{ulps} ulp{'s' if ulps != 1 else ''} off (max |diff| {diff:.3g})"
        if dep.quantizes_input:
            text += (f"; it quantizes its input on the fly, and its input is {off}, "
                     f"from {source}")
        else:
            text += f"; its input T#{tensor} is {off}, from {source}"
    dep.text = text
    return dep


def find_departures(report: "CrossCheckReport", interpreter, litert: "LiteRTRun") -> Departures:
    """The two departures of a compared run (see the module docstring)."""
    rows = report.ordered_rows()
    isolated = next((r for r in rows if r.isolated is not None and r.isolated.compared
                     and not r.isolated.ok), None)
    e2e = next((r for r in rows if r.compared and not r.e2e_ok), None)
    own = None
    if isolated is not None:
        own = Departure(isolated, f"{_where(report, isolated, interpreter)}: "
                        f"{_error(isolated, isolated.isolated, report)}")
    return Departures(own, None if e2e is None else _end_to_end(report, e2e, interpreter,
                                                                   litert),
                      any(r.isolated is not None and r.isolated.compared for r in rows))


__all__ = ["Departure", "Departures", "find_departures", "float_ulps"]
