"""The TFLite 8-bit quantization spec, checked from the file alone (nothing is run).

Rules (each `SpecFinding` names its rule, the op or tensor, and the values):

* ``scale-positive``: every scale finite and > 0.
* ``zero-point-range``: every zero point inside its tensor type's integer range.
* ``weight-zero-point``: int8 weights (the filter of CONV_2D, DEPTHWISE_CONV_2D,
  TRANSPOSE_CONV, FULLY_CONNECTED, ...) are symmetric, zero point 0.
* ``weight-narrow-range`` (warning): int8 weights stay in [-127, 127].
* ``per-channel-dimension``: per-channel parameters only where the spec allows them, on
  the dimension it names (filters of CONV_2D / TRANSPOSE_CONV / FULLY_CONNECTED on 0,
  of DEPTHWISE_CONV_2D on 3; biases on 0; an EMBEDDING_LOOKUP table per row, on 0, which
  LiteRT's hybrid lookup reads; a constant DEQUANTIZE reads, on any dimension, as
  weight-only exports write them); never on activations.
* ``blockwise``: a `BlockwiseQuantization` tensor's block size divides its last dimension,
  its scale tensor exists, is a FLOAT16 constant shaped like the tensor with the last
  dimension divided by the block size, with finite scales >= 0; a zero-point tensor (if
  any) is an integer constant of the same shape.  Warnings: a type LiteRT computes no
  blockwise kernel for (INT4 and INT2 only), and scales of 0 (an all-zero block, as
  ai-edge-quantizer writes it: LiteRT's builtin kernels compute it, XNNPACK refuses it).
* ``bias``: a bias of a quantized op is int32 (int64 with int16 activations) with zero
  point 0 and scale = input scale x weight scale (per channel), within `BIAS_RTOL`.
* ``int16-zero-point``: int16 activations have zero point 0.
* ``same-params``: ops whose LiteRT kernel requires equal input and output parameters
  (the interpreter's load-time check of its data-movement kernels says which).

Severity ``error`` is a violation (LiteRT's kernels compute wrong values or refuse the
model); ``warning`` is a departure the kernels tolerate.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..model import Model
from .ranges import integer_range

#: relative tolerance of bias scale = input scale x weight scale (converters store float32
#: products; 1e-4 leaves room for float32 rounding of both factors)
BIAS_RTOL = 1e-4

#: op -> (weight input position, per-channel dimension of the weights, bias input position)
WEIGHTED_OPS: dict[str, tuple[int, int, int | None]] = {
    "CONV_2D": (1, 0, 2), "CONV_3D": (1, 4, 2), "DEPTHWISE_CONV_2D": (1, 3, 2),
    "FULLY_CONNECTED": (1, 0, 2), "TRANSPOSE_CONV": (1, 0, 3),
}
#: ops whose constant second input is a weight matrix (per-tensor only)
MATRIX_OPS = {"BATCH_MATMUL": 1, "EMBEDDING_LOOKUP": 1}
#: matrix ops whose weight may be per-channel, and on which dimension
MATRIX_PER_CHANNEL = {"EMBEDDING_LOOKUP": 0}
#: types LiteRT has blockwise kernels for (FULLY_CONNECTED INT4, EMBEDDING_LOOKUP INT4/INT2)
BLOCKWISE_TYPES = ("INT4", "INT2")


@dataclass
class SpecFinding:
    """One departure from the spec."""

    rule: str
    severity: str            # "error" | "warning"
    message: str
    subgraph: int
    op: int | None = None
    tensor: int | None = None
    values: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"subgraph {self.subgraph}" + (f" op {self.op}" if self.op is not None else "") + (
            f" tensor {self.tensor}" if self.tensor is not None else "")
        return f"{self.severity}: [{self.rule}] {where}: {self.message}"


def _floats(a) -> list[float]:
    return [float(v) for v in np.asarray(a).reshape(-1)]


def _short(values: list, n: int = 4) -> str:
    text = ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in values[:n])
    return f"[{text}{', ...' if len(values) > n else ''}]"


class _Checker:
    def __init__(self, model: Model) -> None:
        self.model = model
        self.findings: list[SpecFinding] = []
        self._seen: set[tuple[str, int, int]] = set()

    def add(self, rule: str, severity: str, message: str, sg: int, op: int | None = None,
            tensor: int | None = None, **values: Any) -> None:
        key = (rule, sg, tensor if tensor is not None else -1 - (op or 0))
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(SpecFinding(rule, severity, message, sg, op, tensor, values))

    # -- per tensor ----------------------------------------------------------------------
    def tensor_rules(self, sg, t) -> None:
        q = t.quantization
        if q is not None and q.blockwise is not None:
            self.blockwise_rules(sg, t, q.blockwise)
            return
        if q is None or not q.has_scale:
            return
        scale = q.scale.astype(np.float64)
        bad = ~np.isfinite(scale) | (scale <= 0)
        if bad.any():
            vals = _floats(scale[bad])
            self.add("scale-positive", "error",
                     f"tensor {t.index} ({t.name}): scale {_short(vals)} is not finite and "
                     "positive", sg.index, tensor=t.index, scales=vals)
        rng = integer_range(t.type_name)
        zp = q.zero_point.astype(np.int64)
        if rng is not None and zp.size and ((zp < rng[0]) | (zp > rng[1])).any():
            out = [int(v) for v in zp[(zp < rng[0]) | (zp > rng[1])]]
            self.add("zero-point-range", "error",
                     f"tensor {t.index} ({t.name}): zero point {_short(out)} outside "
                     f"{t.type_name} range {rng[0]}..{rng[1]}", sg.index, tensor=t.index,
                     zero_points=out, range=list(rng))
        if t.type_name == "INT16" and not t.is_constant and zp.size and (zp != 0).any():
            self.add("int16-zero-point", "error",
                     f"int16 activation {t.index} ({t.name}) has zero point {int(zp[zp != 0][0])}"
                     " (the spec asks 0)", sg.index, tensor=t.index,
                     zero_point=int(zp[zp != 0][0]))
        if q.is_per_channel and not t.is_constant:
            self.add("per-channel-dimension", "error",
                     f"activation {t.index} ({t.name}) has {q.scale.size} per-channel scales "
                     "(the spec quantizes activations per tensor)", sg.index, tensor=t.index,
                     scales=int(q.scale.size))

    def blockwise_rules(self, sg, t, b) -> None:
        """The ``blockwise`` rule (module docstring): the details against the tensor."""
        def bad(message: str, severity: str = "error", **values: Any) -> None:
            self.add("blockwise", severity, f"tensor {t.index} ({t.name}): {message}",
                     sg.index, tensor=t.index, **values)

        shape = t.shape
        if b.block_size <= 0 or not shape or shape[-1] % b.block_size:
            bad(f"block size {b.block_size} does not divide the last dimension of "
                f"{list(shape)}", block_size=b.block_size, shape=list(shape))
            return
        want = list(shape[:-1]) + [shape[-1] // b.block_size]
        if not 0 <= b.scales < len(sg.tensors):
            bad(f"scale tensor index {b.scales} is not a tensor of the subgraph",
                scales=b.scales)
            return
        s = sg.tensors[b.scales]
        if s.type_name != "FLOAT16" or not s.is_constant or list(s.shape) != want:
            bad(f"scale tensor {s.index} is {s.type_name}{list(s.shape)}"
                f"{'' if s.is_constant else ' (not a constant)'}; blocks of {b.block_size} "
                f"need FLOAT16{want}", scales=s.index, scale_type=s.type_name,
                scale_shape=list(s.shape), expected_shape=want)
            return
        values = s.values()
        if values is not None:
            v = values.astype(np.float32)
            if not (np.isfinite(v) & (v >= 0)).all():
                first = float(v[~(np.isfinite(v) & (v >= 0))][0])
                bad(f"scale {first:g} in tensor {s.index} is not finite and >= 0",
                    scale=first)
            elif (v == 0).any():
                bad(f"{int(np.count_nonzero(v == 0))} block scale(s) of 0 in tensor {s.index} "
                    "(all-zero blocks: LiteRT's builtin kernels compute them, XNNPACK "
                    "refuses the tensor)", "warning", zero_scales=int(np.count_nonzero(v == 0)))
        if b.zero_points >= 0:
            z = sg.tensors[b.zero_points] if b.zero_points < len(sg.tensors) else None
            if z is None or not z.is_constant or list(z.shape) != want or \
                    z.type_name not in ("INT8", "INT16", "INT32", "INT64", "INT4", "UINT8"):
                bad(f"zero-point tensor {b.zero_points} "
                    + ("is not a tensor of the subgraph" if z is None else
                       f"is {z.type_name}{list(z.shape)}; an integer constant {want} expected"),
                    zero_points=b.zero_points)
        if t.type_name not in BLOCKWISE_TYPES:
            bad(f"{t.type_name} blockwise values: LiteRT's kernels compute blockwise "
                "quantization for INT4 (FULLY_CONNECTED, EMBEDDING_LOOKUP) and INT2 "
                "(EMBEDDING_LOOKUP) only", "warning", type=t.type_name)

    # -- per op --------------------------------------------------------------------------
    def op_rules(self, sg, op) -> None:
        name = op.opcode.name
        tensors = sg.tensors
        ins = op.inputs
        weighted = WEIGHTED_OPS.get(name)
        weight_pos = weighted[0] if weighted else MATRIX_OPS.get(name)
        for pos, i in enumerate(ins):
            if i < 0:
                continue
            t = tensors[i]
            q = t.quantization
            if q is None or not q.has_scale or not t.is_constant:
                continue
            is_weight = pos == weight_pos
            is_bias = weighted is not None and pos == weighted[2]
            if q.is_per_channel and name == "DEQUANTIZE":
                pass  # dequantize.cc reads the scales along quantized_dimension, any one
            elif q.is_per_channel:
                allowed = (weighted[1] if is_weight else 0 if is_bias else None) \
                    if weighted else MATRIX_PER_CHANNEL.get(name) if is_weight else None
                dim = q.quantized_dimension
                if allowed is None or dim != allowed:
                    want = ("no per-channel dimension" if allowed is None
                            else f"dimension {allowed}")
                    self.add("per-channel-dimension", "error",
                             f"{name} op {op.index} input {pos}, tensor {i} ({t.name}): "
                             f"per-channel on dimension {dim}; the spec names {want}",
                             sg.index, op.index, i, dimension=int(dim), allowed=allowed)
            if is_weight and t.type_name == "INT8":
                zp = q.zero_point
                if zp.size and (zp != 0).any():
                    self.add("weight-zero-point", "error",
                             f"{name} op {op.index} weights, tensor {i} ({t.name}): zero "
                             f"point {_short([int(v) for v in zp])} (int8 weights are "
                             "symmetric, zero point 0)", sg.index, op.index, i,
                             zero_points=[int(v) for v in zp.reshape(-1)[:16]])
                count = _count_value(self.model, t.data(), -128)
                if count:
                    self.add("weight-narrow-range", "warning",
                             f"{name} op {op.index} weights, tensor {i} ({t.name}): {count} "
                             "value(s) at -128 (the spec's int8 weight range is -127..127)",
                             sg.index, op.index, i, count=count)
        if weighted is not None:
            self.bias_rule(sg, op, name, weighted)

    def bias_rule(self, sg, op, name: str, weighted) -> None:
        wpos, _, bpos = weighted
        ins = op.inputs
        if bpos is None or len(ins) <= bpos or ins[bpos] < 0 or ins[0] < 0 \
                or len(ins) <= wpos or ins[wpos] < 0:
            return
        x, w, b = (sg.tensors[ins[k]] for k in (0, wpos, bpos))
        qx, qw, qb = x.quantization, w.quantization, b.quantization
        if not all(q is not None and q.has_scale for q in (qx, qw)) or \
                x.type_name not in ("INT8", "UINT8", "INT16"):
            return  # float or hybrid op: its bias is float
        where = f"{name} op {op.index} bias, tensor {b.index} ({b.name})"
        want_type = ("INT32", "INT64") if x.type_name == "INT16" else ("INT32",)
        if b.type_name not in want_type:
            self.add("bias", "error", f"{where}: type {b.type_name}, the spec asks "
                     f"{' or '.join(want_type)}", sg.index, op.index, b.index,
                     type=b.type_name)
            return
        if qb is None or not qb.has_scale:
            self.add("bias", "error", f"{where}: no quantization parameters", sg.index,
                     op.index, b.index)
            return
        if qb.zero_point.size and (qb.zero_point != 0).any():
            self.add("bias", "error", f"{where}: zero point "
                     f"{_short([int(v) for v in qb.zero_point])} (the spec asks 0)",
                     sg.index, op.index, b.index, zero_points=[int(v) for v in qb.zero_point[:16]])
        expect = float(qx.scale[0]) * qw.scale.astype(np.float64)
        got = qb.scale.astype(np.float64)
        if got.size not in (1, expect.size) and expect.size != 1:
            self.add("bias", "error", f"{where}: {got.size} scales for {expect.size} weight "
                     "channels", sg.index, op.index, b.index)
            return
        expect_b, got_b = np.broadcast_arrays(expect, got)
        rel = np.abs(got_b - expect_b) / np.maximum(np.abs(expect_b), 1e-300)
        if (rel > BIAS_RTOL).any():
            k = int(np.argmax(rel))
            self.add("bias", "error",
                     f"{where}: scale {got_b[k]:.6g} but input scale x weight scale = "
                     f"{expect_b[k]:.6g} (channel {k}, relative error {rel[k]:.2g})",
                     sg.index, op.index, b.index, channel=k, scale=float(got_b[k]),
                     expected=float(expect_b[k]), relative_error=float(rel[k]))

    def same_params_rule(self) -> None:
        """Ask the interpreter's kernels: their load-time check names the data-movement ops
        whose LiteRT kernel refuses unequal input and output parameters."""
        from ..interpreter import Interpreter
        from ..interpreter.node import Node
        try:
            interp = Interpreter(self.model, allocate=False)
        except Exception:  # noqa: BLE001 - a model the runtime cannot hold: other rules apply
            return
        resolver = interp.op_resolver
        for rsg in interp.subgraphs:
            for op in rsg.model_subgraph.operators:
                code = op.opcode
                if code.is_custom:
                    continue
                reg = resolver.find_builtin(code.builtin_code, code.version)
                if reg is None:
                    continue
                node = Node(op.index, rsg.index, code.builtin_name, code.version, op.inputs,
                            op.outputs, op.intermediates, op.options, None, reg, op)
                try:
                    why = reg.kernel.check(rsg, node)
                except Exception:  # noqa: BLE001
                    continue
                if why and "LiteRT's kernel requires" in why:
                    self.add("same-params", "error", why, rsg.index, op.index,
                             kernel_message=why)


def _count_value(model: Model, data: np.ndarray | None, value: int) -> int:
    """How many of a weight's values equal ``value``, read a chunk at a time and released
    after (a decoder's weights are most of its file: a check must not keep them
    resident)."""
    if data is None or not data.size:
        return 0
    return sum(int(np.count_nonzero(part == value)) for part in model.scanned(data))


def check_spec(model: Model) -> list[SpecFinding]:
    """Every departure of ``model`` from the TFLite quantization spec (see the module
    docstring), errors and warnings, in subgraph and op order."""
    c = _Checker(model)
    for sg in model.subgraphs:
        for t in sg.tensors:
            c.tensor_rules(sg, t)
        for op in sg.operators:
            c.op_rules(sg, op)
    c.same_params_rule()
    c.findings.sort(key=lambda f: (f.subgraph, f.op if f.op is not None else -1,
                                   f.tensor if f.tensor is not None else -1))
    return c.findings
