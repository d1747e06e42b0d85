"""Weight analysis: how each weight uses its integer range, and its error per channel or
block against its float original.

Every weight `forms` finds (integer per tensor, per channel or blockwise; float16 and
bfloat16 widened by DEQUANTIZE) in every subgraph gets a report: its form and how the
model uses it; for integer forms the fraction of the integer range each channel (row,
for blockwise) spans, how many values sit at the range's limits, the spread of scales
(max / median, across channels or blocks); the channels whose dequantized range is tiny
or zero; and with a float model, the dequantized weight's error against its float
original (the metrics of `tflite_viewer.quant.metrics`) and its SQNR per *unit*: per
channel along the quantized dimension, per block of a blockwise weight (rows x blocks,
leading dimensions flattened), with the worst unit named.

A weight a Hadamard rotation serves (`rotations`) is stored rotated: it is compared with
the float weight rotated by the same matrix, the basis it was quantized in (SQNR, cosine
and squared errors are the same in either basis: the rotation is orthonormal).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model import Model
from .explorer import validator_row
from .forms import WeightForm, readers_of, weight_form
from .metrics import tensor_metrics
from .pairing import Pairing
from .ranges import channel_axis, channel_values, dequantize, integer_range
from .rotations import rotate

#: a channel whose dequantized range is below this fraction of the median channel's
TINY_RANGE_FRACTION = 1e-3


@dataclass
class WeightReport:
    tensor: int
    name: str
    type_name: str
    shape: tuple[int, ...]
    ops: list[int]
    channels: int
    axis: int | None
    used_fraction: list[float]          # per channel: (max q - min q) / (qmax - qmin)
    at_min: int                         # values at qmin, all channels
    at_max: int
    scale_outlier_ratio: float | None   # max scale / median scale (channels or blocks)
    tiny_channels: list[int]            # dequantized range tiny or zero
    float_tensor: int | None = None
    subgraph: int = 0
    float_subgraph: int | None = None
    metrics: dict[str, Any] | None = None
    form: WeightForm | None = None
    rotation: int | None = None         # the Hadamard size it is stored rotated by
    #: the worst channel or block: {"unit", "index", "elements", "sqnr_db"}
    worst: dict[str, Any] | None = None
    #: SQNR in dB per channel, or per block as [rows, blocks] (not in the JSON: a
    #: decoder's blocks number in the millions); None without a float partner
    unit_sqnr: np.ndarray | None = field(default=None, repr=False)
    signature: str | None = None        # the signature whose subgraph holds it
    #: litert_quantizer's validator metrics of the weight (`explorer.validator_row`)
    validator: dict[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in (
            "subgraph", "signature", "tensor", "name", "type_name", "ops", "channels", "axis",
            "at_min", "at_max", "scale_outlier_ratio", "tiny_channels", "float_subgraph",
            "float_tensor", "metrics", "rotation", "worst", "validator")}
        d["shape"] = list(self.shape)
        d["form"] = self.form.to_dict() if self.form is not None else None
        d["used_fraction_min"] = min(self.used_fraction) if self.used_fraction else None
        d["used_fraction_mean"] = (float(np.mean(self.used_fraction))
                                   if self.used_fraction else None)
        d["used_fraction"] = self.used_fraction
        u = self.unit_sqnr
        d["unit_sqnr_db_median"] = float(np.median(u)) if u is not None and u.size else None
        return d


def analyze_weights(model: Model, float_model: Model | None = None,
                    pairing: Pairing | None = None,
                    rotated: dict[tuple[int, int], np.ndarray] | None = None,
                    validator: bool = False) -> list[WeightReport]:
    """A report per weight of every subgraph, in subgraph and tensor order; ``rotated``
    maps (subgraph, tensor) to the Hadamard matrix a weight is stored rotated by;
    ``validator`` adds litert_quantizer's validator metrics of each compared weight."""
    out = []
    for sg in model.subgraphs:
        readers = readers_of(sg)
        for t in sg.tensors:
            form = weight_form(t, readers.get(t.index, [])) if t.is_constant else None
            if form is None:
                continue
            rep = _report(t, form, [op.index for op in readers[t.index]])
            if rep is None:
                continue
            matrix = (rotated or {}).get((sg.index, t.index))
            if float_model is not None and pairing is not None:
                _compare(rep, t, float_model, pairing, matrix, validator)
            out.append(rep)
    return out


def _report(t, form: WeightForm, ops: list[int]) -> WeightReport | None:
    """The file-level report of weight ``t`` (no float comparison yet)."""
    data = t.values()
    if data is None:
        return None
    q = t.quantization
    shape = tuple(data.shape)
    if form.form == "blockwise":
        axis, scales = (0 if data.ndim else None), t.block_tensors()[0].values()
    elif form.form in ("per-tensor", "per-channel"):
        axis, scales = channel_axis(q, shape), q.scale
    else:
        axis, scales = None, None
    used, at_min, at_max = [], 0, 0
    rng = integer_range(t.type_name)
    if rng is not None:
        rows = channel_values(data.astype(np.int64), axis)
        used = ((rows.max(axis=1) - rows.min(axis=1)) / float(rng[1] - rng[0])).tolist() \
            if rows.size else []
        at_min, at_max = int(np.count_nonzero(data == rng[0])), \
            int(np.count_nonzero(data == rng[1]))
    real_rows = channel_values(_real(t, data, form), axis)
    spans = real_rows.max(axis=1) - real_rows.min(axis=1) if real_rows.size else np.zeros(0)
    med = float(np.median(spans)) if spans.size else 0.0
    tiny = [int(c) for c in np.nonzero((spans == 0) | (spans < TINY_RANGE_FRACTION * med))[0]]
    ratio = None
    if scales is not None and scales.size > 1:
        s = np.asarray(scales, np.float64).reshape(-1)
        ratio = float(s.max() / np.median(s)) if np.median(s) > 0 else None
    return WeightReport(t.index, t.name, t.type_name, shape, ops,
                        real_rows.shape[0], axis, [float(u) for u in used], at_min, at_max,
                        ratio, tiny, subgraph=t.subgraph.index, form=form)


def _real(t, data: np.ndarray, form: WeightForm) -> np.ndarray:
    """The weight's real values: float64 for scale forms (`ranges.dequantize`), LiteRT's
    float32 for blockwise weights, the exact widening of float16/bfloat16 values."""
    if form.form in ("per-tensor", "per-channel"):
        return dequantize(data, t.quantization)
    return t.dequantized()


def _compare(rep: WeightReport, t, float_model: Model, pairing: Pairing,
             matrix: np.ndarray | None, validator: bool) -> None:
    """Fill ``rep``'s metrics, unit SQNRs and worst unit against its float partner."""
    hit = pairing.partner((rep.subgraph, t.index))
    if hit is None:
        return
    fdata = float_model.subgraphs[hit[0]].tensors[hit[1]].values()
    real = _real(t, t.values(), rep.form)
    if fdata is None or fdata.shape != real.shape or fdata.dtype.kind != "f":
        return
    if matrix is not None:
        if real.shape[-1] % matrix.shape[0]:
            return
        fdata = rotate(fdata, matrix)
        rep.rotation = int(matrix.shape[0])
    rep.float_subgraph, rep.float_tensor = hit
    q = t.quantization
    single = q is not None and q.scale.size == 1 and rep.form.form == "per-tensor"
    rep.metrics = tensor_metrics(fdata, real, float(q.scale[0]) if single else None)
    rep.unit_sqnr, rep.worst = unit_sqnr(fdata, real, rep.form, rep.axis)
    if validator:
        rep.validator = validator_row(fdata, real)


#: elements of a weight whose float64 errors are computed at once (a decoder's embedding
#: holds 150 million: its units are summed a slice of rows at a time)
CHUNK = 1 << 22


def _unit_sums(ref: np.ndarray, approx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of the (units, elements) matrices: Σ ref² and Σ (ref - approx)², in
    float64, a slice of rows at a time."""
    units, n = ref.shape
    sig, noise = np.empty(units), np.empty(units)
    step = max(1, CHUNK // max(n, 1))
    for s in range(0, units, step):
        r = ref[s:s + step].astype(np.float64)
        e = r - approx[s:s + step]
        sig[s:s + step] = np.einsum("ij,ij->i", r, r)
        noise[s:s + step] = np.einsum("ij,ij->i", e, e)
    return sig, noise


def unit_sqnr(reference: np.ndarray, approx: np.ndarray, form: WeightForm,
              axis: int | None) -> tuple[np.ndarray | None, dict[str, Any] | None]:
    """SQNR in dB of each channel (along ``axis``) or block of ``approx`` against
    ``reference``, and the worst of them named; (None, None) for a weight with one
    scale (its SQNR is the tensor's)."""
    ref, approx = np.asarray(reference), np.asarray(approx)
    if form.form == "blockwise" and form.block_size and ref.ndim:
        lead, b = ref.shape[:-1], form.block_size
        blocks = ref.shape[-1] // b
        rows = int(np.prod(lead, dtype=np.int64))
        sig, noise = _unit_sums(ref.reshape(rows * blocks, b), approx.reshape(rows * blocks, b))
        sig, noise = sig.reshape(rows, blocks), noise.reshape(rows, blocks)
        unit = "block"
    elif axis is not None:
        sig, noise = _unit_sums(channel_values(ref, axis), channel_values(approx, axis))
        unit = "channel"
    else:
        return None, None
    with np.errstate(divide="ignore", invalid="ignore"):
        db = 10.0 * np.log10(sig / noise)
    db[noise == 0] = math.inf
    db[(sig == 0) & (noise > 0)] = -math.inf
    if not db.size:
        return db, None
    flat = int(np.argmin(db))
    if unit == "block":
        row, block = divmod(flat, db.shape[1])
        at = [int(i) for i in np.unravel_index(row, lead)] if lead else []
        elements = "[" + ", ".join([*map(str, at), f"{block * b}:{(block + 1) * b}"]) + "]"
        index = [row, block]
    else:
        index = [flat]
        elements = "[" + ", ".join(str(flat) if d == axis else ":"
                                   for d in range(ref.ndim)) + "]"
    return db, {"unit": unit, "index": index, "elements": elements,
                "sqnr_db": float(db.reshape(-1)[flat])}
