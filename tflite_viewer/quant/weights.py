"""Weight analysis: how each quantized constant uses its integer range, per channel.

Per tensor and per channel: the fraction of the integer range the values span, how many
values sit at the range's limits, the spread of scales across channels (max / median), the
channels whose dequantized range is tiny or zero; with a float model, the error of each
weight against its float original (the metrics of `tflite_viewer.quant.metrics`).
Every subgraph's constants are analysed (a loop body's weights too); a report names its
subgraph, and its float partner's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model import Model
from .metrics import tensor_metrics
from .pairing import Pairing
from .ranges import QUANTIZABLE_TYPES, channel_axis, channel_values, dequantize, integer_range

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
    scale_outlier_ratio: float | None   # max scale / median scale (per-channel only)
    tiny_channels: list[int]            # dequantized range tiny or zero
    float_tensor: int | None = None
    subgraph: int = 0
    float_subgraph: int | None = None
    metrics: dict[str, Any] | None = None
    values: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in (
            "subgraph", "tensor", "name", "type_name", "ops", "channels", "axis", "at_min", "at_max",
            "scale_outlier_ratio", "tiny_channels", "float_subgraph", "float_tensor",
            "metrics")}
        d["shape"] = list(self.shape)
        d["used_fraction_min"] = min(self.used_fraction) if self.used_fraction else None
        d["used_fraction_mean"] = (float(np.mean(self.used_fraction))
                                   if self.used_fraction else None)
        d["used_fraction"] = self.used_fraction
        return d


def analyze_weights(model: Model, float_model: Model | None = None,
                    pairing: Pairing | None = None) -> list[WeightReport]:
    """A report per quantized constant of every subgraph, in subgraph and tensor order."""
    out = []
    for sg in model.subgraphs:
        out += _subgraph_weights(model, sg, float_model, pairing)
    return out


def _subgraph_weights(model: Model, sg, float_model: Model | None,
                      pairing: Pairing | None) -> list[WeightReport]:
    users: dict[int, list[int]] = {}
    for op in sg.operators:
        for i in op.inputs:
            if i >= 0:
                users.setdefault(i, []).append(op.index)
    out = []
    for t in sg.tensors:
        q = t.quantization
        if not t.is_constant or q is None or not q.has_scale or t.type_name not in QUANTIZABLE_TYPES:
            continue
        data = t.values()
        if data is None:
            continue
        qmin, qmax = integer_range(t.type_name)
        axis = channel_axis(q, tuple(data.shape))
        rows = channel_values(data.astype(np.int64), axis)
        used = ((rows.max(axis=1) - rows.min(axis=1)) / float(qmax - qmin)).tolist() \
            if rows.size else []
        real = dequantize(data, q)
        real_rows = channel_values(real, axis)
        spans = real_rows.max(axis=1) - real_rows.min(axis=1) if real_rows.size else np.zeros(0)
        med = float(np.median(spans)) if spans.size else 0.0
        tiny = [int(c) for c in np.nonzero((spans == 0) | (spans < TINY_RANGE_FRACTION * med))[0]]
        scales = q.scale.astype(np.float64)
        ratio = float(scales.max() / np.median(scales)) if scales.size > 1 and np.median(
            scales) > 0 else None
        rep = WeightReport(t.index, t.name, t.type_name, tuple(data.shape), users.get(t.index, []),
                           rows.shape[0], axis, [float(u) for u in used],
                           int(np.count_nonzero(data == qmin)), int(np.count_nonzero(data == qmax)),
                           ratio, tiny, subgraph=sg.index)
        if float_model is not None and pairing is not None:
            hit = pairing.partner((sg.index, t.index))
            if hit is not None:
                fdata = float_model.subgraphs[hit[0]].tensors[hit[1]].values()
                if fdata is not None and fdata.shape == real.shape:
                    rep.float_subgraph, rep.float_tensor = hit
                    rep.metrics = tensor_metrics(fdata, real, float(scales[0])
                                                 if scales.size == 1 else None)
        out.append(rep)
    return out
