"""Comparing a run of this interpreter with LiteRT's, operator output by operator output.

`compare_runs` takes an interpreter after a run and a `LiteRTRun` (every tensor LiteRT kept
of the same subgraph, on the same inputs; `crosscheck.run_litert` makes one in a child
process) and gives a `CrossCheckReport`.  Each op output gets:

* an **end-to-end** error: our whole run against LiteRT's, so differences that compound
  along the graph show up where they grow;
* an **op-isolated** error: our kernel run once more on LiteRT's *own* input tensors for
  that op (`isolated_run`), so a kernel difference is not confused with an accumulated one
  (a per-op check like Polygraphy's);
* cosine similarity, SQNR in dB and bit-exactness (end to end, on real values).

A composite's decomposition, which LiteRT keeps the tensors of when the composite is its
only caller (`composite_bodies`), gets rows of its own (`CrossCheckReport.inner_rows`,
listed before the composite's row by `CrossCheckReport.ordered_rows`); the composite itself
has no isolated value.  `departures.find_departures` names the first op whose own
computation departs and the first whose end-to-end value leaves the tolerance.

Floats are within tolerance when ``max|ours - LiteRT| / range(LiteRT)`` is at most
``tolerance``; integers (quantized or not) when the largest difference in integer steps is
at most ``units``.  ``mode`` says which error decides: by default (``"auto"``) end to end
against LiteRT's reference kernels, op-isolated against its optimized kernels, which round
some requantizations differently (and get a default of `OPTIMIZED_UNITS` unit).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

DEFAULT_TOLERANCE = 1e-5
DEFAULT_UNITS = 0
TINY = 1e-30
_CONTROL_FLOW = {"WHILE", "IF", "CALL_ONCE", "CALL"}
#: how a report names the kernels LiteRT ran
KERNELS = {"BUILTIN_REF": "reference kernels (BUILTIN_REF)",
           "BUILTIN": "optimized kernels with the default delegate (BUILTIN)",
           "BUILTIN_WITHOUT_DEFAULT_DELEGATES": "optimized kernels "
                                                "(BUILTIN_WITHOUT_DEFAULT_DELEGATES)"}
MODES = ("auto", "end-to-end", "isolated")
#: integer tolerance when comparing with LiteRT's optimized kernels, which round some
#: requantizations differently from the reference kernels this interpreter follows
OPTIMIZED_UNITS = 1



@dataclass
class LiteRTRun:
    """What a LiteRT run gave: every readable tensor of the subgraph it ran, its outputs."""

    resolver: str
    subgraph: int
    tensors: dict[int, np.ndarray]
    outputs: dict[str, np.ndarray]
    seconds: float
    fallback_reason: str | None = None  # why the requested resolver was not used
    #: how LiteRT kept the tensors: "preserve" (experimental_preserve_all_tensors) or
    #: "exposed" (a copy of the model with every op output a model output)
    mode: str = "preserve"
    #: the tensors of the composites' decompositions the run called once each
    #: (`composite_bodies`), by subgraph then tensor index
    inner: dict[int, dict[int, np.ndarray]] = field(default_factory=dict, repr=False)


@dataclass
class Error:
    """How far one of our tensors is from LiteRT's."""

    max_abs: float | None = None    # real units (dequantized for quantized tensors)
    relative: float | None = None   # floats: max|a-b| / range of LiteRT's tensor
    units: int | None = None        # integers: largest difference in integer steps
    ok: bool = True
    note: str = ""                  # why it was not compared, or what went wrong

    @property
    def compared(self) -> bool:
        return self.max_abs is not None or self.units is not None

    def text(self, kind: str) -> str:
        if kind == "float" and self.relative is not None:
            return f"rel {self.relative:.3g}"
        if self.units is not None:
            return f"{self.units} unit{'s' if self.units != 1 else ''}"
        return "-"


@dataclass
class TensorRow:
    """One operator output compared with LiteRT: end to end (our whole run against
    LiteRT's) and op-isolated (our kernel fed LiteRT's own input tensors)."""

    subgraph: int
    op: int
    opcode: str
    output: int               # which output of the op
    tensor: int
    name: str
    type_name: str
    shape: tuple[int, ...] | None
    kind: str                 # "float", "quantized", "integer", "bool"
    max_abs: float | None = None    # end to end, real units (dequantized when quantized)
    relative: float | None = None   # end to end, floats: max|a-b| / range of LiteRT's
    units: int | None = None        # end to end, integers: largest difference in steps
    ok: bool = True                 # within tolerance in the report's mode
    note: str = ""            # why it was not compared, or what went wrong
    e2e_ok: bool = True
    isolated: Error | None = None   # None: not computed (control flow, no LiteRT inputs)
    cosine: float | None = None     # end to end, on real values
    sqnr_db: float | None = None    # end to end: 10 log10(sum ref^2 / sum (ours - ref)^2)
    exact: bool | None = None       # end to end: the same bits

    @property
    def compared(self) -> bool:
        return self.max_abs is not None or self.units is not None

    def error_text(self) -> str:
        return Error(self.max_abs, self.relative, self.units).text(self.kind)

    def isolated_text(self) -> str:
        if self.isolated is None:
            return "-"
        return self.isolated.text(self.kind) if self.isolated.compared else "-"


@dataclass
class CrossCheckReport:
    """Every operator output of the run's entry subgraph, ours against LiteRT's."""

    model: str
    subgraph: int
    signature: str | None
    resolver: str
    rows: list[TensorRow]
    tolerance: float
    units: int
    fallback_reason: str | None = None
    rounding: str = ""
    our_outputs: dict[str, np.ndarray | None] = field(default_factory=dict)
    litert_outputs: dict[str, np.ndarray] = field(default_factory=dict)
    mode: str = "end-to-end"  # which error decides `ok`: "end-to-end" or "isolated"
    litert_tensors: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    #: how LiteRT kept the tensors compared (`LiteRTRun.mode`)
    litert_mode: str = "preserve"
    #: invocations compared (a stateful model's state carries between them), and the one
    #: this report's rows come from (the first that diverges, else the last)
    invocations: int = 1
    invocation: int = 1
    #: the rows of the composites' decompositions, by the composite's op index (the
    #: window's table shows `rows`, which are all of the run's subgraph)
    inner_rows: dict[int, list[TensorRow]] = field(default_factory=dict, repr=False)
    #: where the run departs from LiteRT (`departures.find_departures`)
    departures: Any = None

    @property
    def litert_mode_text(self) -> str:
        """How LiteRT kept the tensors compared, in words."""
        return {"preserve": "every tensor kept (experimental_preserve_all_tensors)",
                "exposed": "an exposed copy of the model (every op output made a model "
                           "output, in memory)"}.get(self.litert_mode, self.litert_mode)

    @property
    def invocation_text(self) -> str:
        if self.invocations <= 1:
            return ""
        if self.ok:
            return f"all {self.invocations} invocations compared (state carried between them)"
        return (f"invocation {self.invocation} of {self.invocations} diverges (state carried "
                "between them)")

    @property
    def kernels(self) -> str:
        """Which LiteRT kernels the comparison ran against, in words."""
        return "LiteRT's " + KERNELS.get(self.resolver, self.resolver)

    def ordered_rows(self) -> list[TensorRow]:
        """Every compared row in execution order: a composite's decomposition's rows (which
        run inside it) just before the composite's own."""
        out: list[TensorRow] = []
        for r in self.rows:
            if r.output == 0 and r.op in self.inner_rows:
                out.extend(self.inner_rows[r.op])
            out.append(r)
        return out

    @property
    def failures(self) -> list[TensorRow]:
        return [r for r in self.ordered_rows() if not r.ok]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def first_divergence(self) -> TensorRow | None:
        """The first op output (in execution order) outside the tolerance."""
        bad = self.failures
        return bad[0] if bad else None

    def divergence_text(self) -> str:
        """The first op output outside the tolerance, with the error that decided it: the
        op-isolated one in isolated mode where the op has one, else the end-to-end one
        (said so, with why there is no isolated value)."""
        row = self.first_divergence
        if row is None:
            return "no divergence"
        isolated = self.mode == "isolated" and row.isolated is not None \
            and row.isolated.compared
        err = row.isolated if isolated else Error(row.max_abs, row.relative, row.units,
                                                  row.ok, row.note)
        what = err.note or (f"relative error {err.relative:.3g} > {self.tolerance:g}"
                            if row.kind == "float" and err.relative is not None
                            else f"{err.units} units > {self.units}")
        how = "isolated" if isolated else "end-to-end"
        if not isolated and self.mode == "isolated" and row.isolated is not None \
                and row.isolated.note:
            how += f"; {row.isolated.note}"
        return (f"first divergence: subgraph {row.subgraph} op {row.op} ({row.opcode}) output "
                f"{row.output}, tensor {row.tensor} {row.name!r}: {what} ({how})")

    def _count(self, isolated: bool) -> tuple[int, int, str]:
        """(compared, within tolerance, largest error) of one kind of comparison."""
        compared = ok = 0
        worst_units, worst_rel = 0, 0.0
        for r in self.ordered_rows():
            e = r.isolated if isolated else Error(r.max_abs, r.relative, r.units, r.e2e_ok)
            if e is None or not e.compared:
                continue
            compared += 1
            ok += bool(e.ok)
            if e.units is not None and r.kind != "float":
                worst_units = max(worst_units, e.units)
            elif e.relative is not None:
                worst_rel = max(worst_rel, e.relative)
        worst = []
        if worst_units:
            worst.append(f"{worst_units} unit{'s' if worst_units != 1 else ''}")
        if worst_rel:
            worst.append(f"rel {worst_rel:.3g}")
        return compared, ok, ", ".join(worst) or "0"

    def summary(self) -> str:
        parts = []
        for label, iso in (("op-isolated", True), ("end-to-end", False)):
            compared, ok, worst = self._count(iso)
            if compared:
                parts.append(f"{label}: {ok} of {compared} op outputs within tolerance "
                             f"(largest error {worst})")
        head = f"against {self.kernels}, deciding on the {self.mode} error: " + "; ".join(parts)
        if self.litert_mode != "preserve":
            head += f"; LiteRT's tensors from {self.litert_mode_text}"
        if self.invocations > 1:
            head += f"; {self.invocation_text}"
        not_compared = sum(1 for r in self.rows if not r.compared and r.ok)
        if not_compared:
            head += f" ({not_compared} not compared)"
        return head + ("" if self.ok else "; " + self.divergence_text())

    def format_table(self, max_name: int = 40) -> str:
        lines = [f"LiteRT cross-check against {self.kernels}, subgraph {self.subgraph}"
                 + (f" (signature {self.signature!r})" if self.signature else "")
                 + f", {self.mode} comparison, tolerance rel {self.tolerance:g} / "
                   f"{self.units} unit{'s' if self.units != 1 else ''}"]
        if self.fallback_reason:
            what = ("the reference kernels were not used" if self.resolver != "BUILTIN_REF"
                    else "LiteRT could not keep every tensor")
            lines.append(f"  ({what}: {self.fallback_reason})")
        lines.append(f"  LiteRT's tensors: {self.litert_mode_text}")
        if self.invocations > 1:
            lines.append(f"  {self.invocation_text}")
        if self.mode == "isolated":
            lines.append("  op-isolated: each op is fed LiteRT's own input tensors, so a "
                         "kernel difference is not confused with an accumulated one")
        header = (f"  {'op':>4}  {'opcode':<24} {'tensor':<{max_name + 6}} {'dtype':<8} "
                  f"{'shape':<18} {'max|diff|':>10} {'end-to-end':>12} {'isolated':>12}  status")
        lines.append(header)
        for r in self.ordered_rows():
            name = r.name if len(r.name) <= max_name else "..." + r.name[-(max_name - 3):]
            shape = "?" if r.shape is None else str(list(r.shape)).replace(" ", "")
            diff = "-" if r.max_abs is None else f"{r.max_abs:.3g}"
            status = "ok" if r.ok else "DIVERGES"
            if r.note:
                status += f" ({r.note})"
            tensor = f"T#{r.tensor} {name}"
            op = f"{r.op}" if r.subgraph == self.subgraph else f"{r.subgraph}:{r.op}"
            lines.append(f"  {op:>4}  {r.opcode:<24} {tensor:<{max_name + 6}} "
                         f"{r.type_name:<8} {shape:<18} {diff:>10} {r.error_text():>12} "
                         f"{r.isolated_text():>12}  {status}")
        if self.departures is not None:
            lines.extend(self.departures.lines())
        lines.append(self.summary())
        return "\n".join(lines)


def _kind(t) -> str:
    dt = t.dtype
    if dt is None:
        return "other"
    if dt.kind in "fc":
        return "float"
    if dt.kind == "b":
        return "bool"
    q = t.quantization
    if q is not None and q.has_scale:
        return "quantized"
    return "integer"


def _float_error(ours: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """(max|a - b|, that relative to the range of b); equal NaNs and equal infinities
    count as equal, any other NaN or infinity as an infinite error."""
    complex_ = ours.dtype.kind == "c" or ref.dtype.kind == "c"
    a = ours.astype(np.complex128 if complex_ else np.float64)
    b = ref.astype(a.dtype)
    with np.errstate(all="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        diff = np.where(same, 0.0, np.abs(a - b))
        diff = np.where(np.isnan(diff), np.inf, diff)
        max_abs = float(diff.max()) if diff.size else 0.0
        fb = b[np.isfinite(b)]
        if fb.size == 0:
            scale = 0.0
        elif complex_:
            scale = float(np.abs(fb).max())
        else:
            scale = float(fb.max() - fb.min()) or float(np.abs(fb).max())
    return max_abs, max_abs / max(scale, TINY)


def real_values(t, a: np.ndarray) -> np.ndarray:
    """Dequantized values of an integer tensor with per-tensor or per-channel parameters
    (float64), or the values as float64."""
    q = t.quantization
    if q is not None and q.has_scale and a.dtype.kind in "iu":
        scale = np.asarray(q.scale, np.float64).ravel()
        zp = np.asarray(q.zero_point, np.float64).ravel()
        if zp.size == 0:
            zp = np.zeros_like(scale)
        if scale.size > 1 and a.ndim:
            shape = [1] * a.ndim
            shape[int(q.quantized_dimension)] = scale.size
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        return (a.astype(np.float64) - zp) * scale
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def similarity(ours: np.ndarray, ref: np.ndarray) -> tuple[float | None, float | None]:
    """(cosine similarity, SQNR in dB) of two real-valued arrays; SQNR is +inf when they
    are equal, cosine None when either is all zeros, both None with non-finite values."""
    a = np.abs(ours) if ours.dtype.kind == "c" else ours
    b = np.abs(ref) if ref.dtype.kind == "c" else ref
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    if not (np.isfinite(a).all() and np.isfinite(b).all()) or a.size == 0:
        return None, None
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    cosine = float(np.dot(a, b) / (na * nb)) if na > 0 and nb > 0 else None
    noise = float(np.sum((a - b) ** 2))
    signal = float(np.sum(b ** 2))
    if noise == 0:
        sqnr = float("inf")
    elif signal == 0:
        sqnr = float("-inf")
    else:
        sqnr = 10.0 * float(np.log10(signal / noise))
    return cosine, sqnr


def compare_tensor(t, kind: str, ours: np.ndarray | None, ref: np.ndarray | None,
                   tolerance: float, units: int) -> Error:
    """Our value of tensor ``t`` against LiteRT's (see the module docstring's metric)."""
    if ref is None:
        return Error(note="LiteRT gave no value")
    if ours is None:
        return Error(ok=False, note="not computed by the interpreter")
    if ours.dtype == object:
        return Error(note="strings: not compared")
    if tuple(ours.shape) != tuple(ref.shape):
        return Error(ok=False, note=f"shape {list(ours.shape)} vs LiteRT {list(ref.shape)}")
    if kind == "float" or ref.dtype.kind in "fc":
        max_abs, rel = _float_error(ours, ref)
        return Error(max_abs, rel, None, rel <= tolerance)
    u = int(np.abs(ours.astype(np.int64) - ref.astype(np.int64)).max()) if ours.size else 0
    max_abs = float(u)
    q = t.quantization
    if kind == "quantized" and q is not None and q.scale.size == 1:
        max_abs = float(u * float(q.scale[0]))
    return Error(max_abs, None, u, u <= units)


def isolated_run(interpreter, litert: LiteRTRun, node, subgraph: int | None = None,
                 tensors: dict[int, np.ndarray] | None = None) -> dict[int, np.ndarray] | str:
    """Our kernel of ``node`` run on LiteRT's own input tensors: its outputs by tensor
    index, or why it cannot be run that way.  Our tensors are restored afterwards.
    ``subgraph`` and ``tensors`` name another subgraph than the run's and LiteRT's values
    of it (a composite's decomposition)."""
    sg = interpreter.subgraphs[litert.subgraph if subgraph is None else subgraph]
    refs = litert.tensors if tensors is None else tensors
    if node.name == "STABLEHLO_COMPOSITE":
        return "a composite: no isolated value (its decomposition's ops are compared)"
    if node.registration.kernel.calls_subgraphs:
        return "control flow: no isolated value"
    feed = {}
    for i in node.inputs:
        if i < 0:
            continue
        t = sg.tensors[i]
        if t.is_constant:
            continue
        if t.is_variable:
            return "variable input: not isolated"
        ref = refs.get(i)
        if ref is None:
            return "LiteRT gave no input value"
        if t.dtype is not None and ref.dtype != t.dtype:
            return f"LiteRT's input t{i} is {ref.dtype}"
        feed[i] = ref
    touched = set(feed) | {o for o in node.outputs if o >= 0}
    saved = {i: (sg.tensors[i].data, sg.tensors[i].shape) for i in touched}
    try:
        for i, ref in feed.items():
            t = sg.tensors[i]
            if t.shape != ref.shape:
                t.shape = ref.shape
            t.data = np.array(ref, copy=True)
        try:
            with np.errstate(all="ignore"):
                sg.prepare_node(node)
                node.kernel.invoke(sg, node)
        except Exception as exc:  # noqa: BLE001 - reported in the row
            return f"our kernel failed on LiteRT's inputs: {exc}"
        return {o: np.array(sg.tensors[o].data, copy=True) for o in node.outputs
                if o >= 0 and sg.tensors[o].data is not None}
    finally:
        for i, (data, shape) in saved.items():
            t = sg.tensors[i]
            if t.shape != shape and shape is not None:
                t.shape = shape
            t.data = data
        try:
            sg.prepare_node(node)
        except Exception:  # noqa: BLE001 - the next run re-prepares anyway
            pass


def resolve_mode(mode: str, litert: LiteRTRun) -> str:
    """"auto": end to end against the reference kernels, op-isolated otherwise."""
    if mode not in MODES:
        raise ValueError(f"comparison mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "auto":
        return "end-to-end" if litert.resolver == "BUILTIN_REF" else "isolated"
    return mode


def composite_bodies(model_subgraph, model) -> dict[int, int]:
    """Op index -> decomposition subgraph of the STABLEHLO_COMPOSITE ops of a subgraph whose
    decomposition no other op of it calls: LiteRT keeps that subgraph's tensors of its one
    call, so its ops can be compared too."""
    calls: dict[int, list[int]] = {}
    for op in model_subgraph.operators:
        if op.opcode.name == "STABLEHLO_COMPOSITE":
            body = int((op.options or {}).get("decomposition_subgraph_index", -1))
            if 0 <= body < len(model.subgraphs) and body != model_subgraph.index:
                calls.setdefault(body, []).append(op.index)
    return {ops[0]: body for body, ops in calls.items() if len(ops) == 1}


def _rows(interpreter, sgi: int, nodes, refs: dict[int, np.ndarray], litert: LiteRTRun,
          tolerance: float, units: int, mode: str, read: set[int]) -> list[TensorRow]:
    """The compared rows of ``nodes`` of our subgraph ``sgi`` against LiteRT's ``refs``."""
    sg = interpreter.subgraphs[sgi]
    rows: list[TensorRow] = []
    for node in nodes:
        isolated = None
        for k, ti in enumerate(node.outputs):
            if ti < 0:
                continue
            if node.name in _CONTROL_FLOW and ti not in read:
                continue  # LiteRT leaves unread pass-through outputs of a WHILE unwritten
            t = sg.tensors[ti]
            kind = _kind(t)
            row = TensorRow(sgi, node.index, node.name, k, ti, t.name, t.type_name,
                            None if t.data is None else tuple(t.data.shape), kind)
            rows.append(row)
            ours, ref = t.data, refs.get(ti)
            e2e = compare_tensor(t, kind, ours, ref, tolerance, units)
            row.max_abs, row.relative, row.units = e2e.max_abs, e2e.relative, e2e.units
            row.e2e_ok, row.note = e2e.ok, e2e.note
            if e2e.compared:
                row.exact = bool(np.array_equal(ours, ref, equal_nan=ours.dtype.kind in "fc"))
                row.cosine, row.sqnr_db = similarity(real_values(t, ours), real_values(t, ref))
            if ref is not None:
                if isolated is None:
                    isolated = isolated_run(interpreter, litert, node, sgi, refs)
                if isinstance(isolated, str):
                    row.isolated = Error(note=isolated)
                else:
                    row.isolated = compare_tensor(t, kind, isolated.get(ti), ref, tolerance,
                                                  units)
            iso = row.isolated
            row.ok = iso.ok if mode == "isolated" and iso is not None and iso.compared \
                else row.e2e_ok
    return rows


def compare_runs(interpreter, litert: LiteRTRun, *, tolerance: float = DEFAULT_TOLERANCE,
                 units: int | None = None, model_name: str = "",
                 mode: str = "auto") -> CrossCheckReport:
    """Compare every op output of the interpreter's entry subgraph (after a run) with a
    LiteRT run of the same subgraph on the same inputs, end to end and op-isolated; and,
    where LiteRT kept them (`LiteRTRun.inner`), the ops of the composites' decompositions
    (`CrossCheckReport.inner_rows`).

    ``mode`` says which error decides pass or fail (`resolve_mode`).  ``units`` defaults to
    0 against the reference kernels and to `OPTIMIZED_UNITS` against optimized ones."""
    mode = resolve_mode(mode, litert)
    if units is None:
        units = DEFAULT_UNITS if litert.resolver == "BUILTIN_REF" else OPTIMIZED_UNITS
    sgi = litert.subgraph
    sg = interpreter.subgraphs[sgi]
    msg = sg.model_subgraph
    read = set(sg.outputs)
    for op in msg.operators:
        read.update(i for i in op.inputs if i >= 0)
    nodes = [sg.nodes[ni] for ni in sg.execution_plan]
    rows = _rows(interpreter, sgi, nodes, litert.tensors, litert, tolerance, units, mode, read)
    inner: dict[int, list[TensorRow]] = {}
    for op_index, body in composite_bodies(msg, interpreter.model).items():
        if body in litert.inner:
            bsg = interpreter.subgraphs[body]
            inner[op_index] = _rows(interpreter, body, [bsg.nodes[n] for n in bsg.execution_plan],
                                    litert.inner[body], litert, tolerance, units, mode, set())
    report = CrossCheckReport(model_name, sgi, interpreter.signature, litert.resolver, rows,
                              float(tolerance), int(units), litert.fallback_reason,
                              interpreter.rounding, interpreter.outputs(),
                              litert.outputs, mode, litert.tensors)
    report.inner_rows = inner
    from .departures import find_departures  # (it reads this module's rows)
    report.departures = find_departures(report, interpreter, litert)
    return report
