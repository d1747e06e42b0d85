"""The model-wide figures the Model panel shows, computed in the worker (no Qt).

`Model.op_histogram()` builds an Operator view per operator, which takes about a second
on a 20,000-op model; the histogram here comes from the operator columns in milliseconds.
Computing the weights and parameter totals here also warms the model's caches, so the
GUI thread never walks every tensor.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...model import Model


@dataclass(frozen=True)
class ModelSummary:
    op_histogram: dict[str, int]  # "CONV_2D/v1" -> count, in first-seen order
    n_ops: int
    weights_nbytes: int
    parameter_count: int


def op_histogram(model: Model) -> dict[str, int]:
    """The same figures as `Model.op_histogram()`, from the operator columns."""
    codes = model.operator_codes
    hist: dict[str, int] = {}
    for sg in model.subgraphs:
        idx = sg.columns.opcode_index
        if not idx.size:
            continue
        values, first = np.unique(idx, return_index=True)
        counts = np.bincount(idx, minlength=int(values.max()) + 1)
        for code in values[np.argsort(first)].tolist():
            oc = codes[code] if 0 <= code < len(codes) else None
            key = f"{oc.name}/v{oc.version}" if oc is not None else f"opcode {code}"
            hist[key] = hist.get(key, 0) + int(counts[code])
    return hist


def weights_and_parameters(model: Model) -> tuple[int, int]:
    """`Model.weights_nbytes` and `Model.parameter_count` from the tensor columns (each
    buffer counted once)."""
    index = model.index
    tensors = index.table("tflite.Tensor")
    n = len(tensors)
    buf = index.scalar(tensors, "buffer").astype(np.int64)
    variable = index.scalar(tensors, "is_variable").astype(bool)
    sizes = model.buffer_sizes
    valid = (buf > 0) & (buf < sizes.size)
    weights = int(sizes[np.unique(buf[valid])].sum())
    has_data = np.zeros(n, dtype=bool)
    has_data[valid] = sizes[buf[valid]] > 0
    values, _owner, lengths = index.vector(tensors, "shape")
    elements = np.ones(n, dtype=np.int64)
    nonempty = lengths > 0
    if nonempty.any():
        starts = np.cumsum(lengths) - lengths
        dims = np.maximum(values.astype(np.int64), 0)
        elements[nonempty] = np.multiply.reduceat(dims, starts[nonempty])
    # each buffer once (signatures share weights), as the first tensor reading it counts
    counted = np.flatnonzero(has_data & ~variable)
    _, first = np.unique(buf[counted], return_index=True)
    params = int(elements[counted[first]].sum())
    ext = index.scalar(tensors, "external_buffer").astype(np.int64)
    external = np.flatnonzero((ext != 0) & ~variable)  # side files: each id once
    if external.size:
        _, first = np.unique(ext[external], return_index=True)
        params += int(elements[external[first]].sum())
    return weights, params


def summarize(model: Model) -> ModelSummary:
    hist = op_histogram(model)
    try:
        weights, params = weights_and_parameters(model)
    except (KeyError, ValueError, IndexError):  # an index without those columns: the slow way
        weights, params = model.weights_nbytes, model.parameter_count
    return ModelSummary(hist, sum(hist.values()), weights, params)
