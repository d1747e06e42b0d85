"""A run's outputs in words: one line of statistics and first values per tensor, and the
top-k of a classifier's output with the labels the model's metadata names.  Qt-free: the
`run` command prints these and the window's Outputs dock shows them."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..model import Model

TOP_K = 5
FIRST_VALUES = 8


def _fmt(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (complex, np.complexfloating)):
        return f"{complex(v):.4g}"
    return f"{float(v):.6g}"


def value_summary(arr: np.ndarray | None) -> str:
    """min/max/mean and the first values of an array, on one line."""
    if arr is None:
        return "not computed"
    if arr.dtype == object or arr.dtype.kind in "SU":
        flat = arr.reshape(-1)[:FIRST_VALUES]
        return "first " + repr([v for v in flat.tolist()])
    if arr.size == 0:
        return "empty"
    flat = arr.reshape(-1)
    first = ", ".join(_fmt(v) for v in flat[:FIRST_VALUES])
    more = ", ..." if flat.size > FIRST_VALUES else ""
    if arr.dtype.kind == "c":
        return f"first [{first}{more}]"
    vals = flat.astype(np.float64)
    with np.errstate(all="ignore"):
        stats = (f"min {_fmt(np.nanmin(vals) if not np.isnan(vals).all() else np.nan)} "
                 f"max {_fmt(np.nanmax(vals) if not np.isnan(vals).all() else np.nan)} "
                 f"mean {_fmt(np.mean(vals))}")
    nonfinite = int(np.count_nonzero(~np.isfinite(vals)))
    if nonfinite:
        stats += f" ({nonfinite} non-finite)"
    return f"{stats}  first [{first}{more}]"


def _labels_for(model: Model, subgraph: int, tensor: int) -> list[str] | None:
    """The TENSOR_AXIS_LABELS file TFLITE_METADATA names for an output, as lines."""
    try:
        md = model.tflite_metadata
        if not isinstance(md, dict):
            return None
        sgs = md.get("subgraph_metadata") or []
        outputs = list(model.subgraphs[subgraph].outputs)
        if subgraph >= len(sgs) or tensor not in outputs:
            return None
        metas = (sgs[subgraph] or {}).get("output_tensor_metadata") or []
        pos = outputs.index(tensor)
        if pos >= len(metas) or not isinstance(metas[pos], dict):
            return None
        files = metas[pos].get("associated_files") or []
        names = [f.get("name") for f in files if isinstance(f, dict)
                 and f.get("type") in ("TENSOR_AXIS_LABELS", None) and f.get("name")]
        for name in names:
            if name in model.associated_files():
                text = model.read_associated_file(name).decode("utf-8", "replace")
                return [ln.strip() for ln in text.splitlines()]
    except Exception:  # noqa: BLE001 - labels are a nicety, never a failure
        return None
    return None


def _scores(model_tensor, arr: np.ndarray) -> np.ndarray | None:
    if arr.dtype.kind == "f":
        return arr.astype(np.float64)
    if arr.dtype.kind in "iu":
        q = model_tensor.quantization
        if q is not None and q.has_scale and q.scale.size == 1:
            zp = int(q.zero_point[0]) if q.zero_point.size else 0
            return (arr.astype(np.float64) - zp) * float(q.scale[0])
    return None


def top_k(model: Model, subgraph: int, tensor: int, arr: np.ndarray | None,
          producer: str | None, k: int = TOP_K) -> list[tuple[int, str, float]]:
    """The top-k (index, label, score) of a classification-like output, labels from the
    model's TENSOR_AXIS_LABELS file ("" without one); [] when the output is not one."""
    if arr is None or arr.size < 2:
        return []
    squeezed = arr.reshape([d for d in arr.shape if d != 1] or [1])
    if squeezed.ndim != 1:
        return []
    mt = model.subgraphs[subgraph].tensors[tensor]
    scores = _scores(mt, squeezed)
    if scores is None:
        return []
    labels = _labels_for(model, subgraph, tensor)
    if not (labels or producer in ("SOFTMAX", "LOGISTIC", "LOG_SOFTMAX") or scores.size >= 10):
        return []
    k = min(k, scores.size)
    order = np.argsort(-np.nan_to_num(scores, nan=-np.inf), kind="stable")[:k]
    return [(int(i), labels[i] if labels and i < len(labels) else "", float(scores[i]))
            for i in order]


def top_k_lines(model: Model, subgraph: int, tensor: int, arr: np.ndarray | None,
                producer: str | None) -> list[str]:
    """The top-5 of a classification-like output (with labels when the model names any)."""
    best = top_k(model, subgraph, tensor, arr, producer)
    if not best:
        return []
    parts = [f"#{i}{f' {label!r}' if label else ''} {_fmt(score)}" for i, label, score in best]
    return [f"    top-{len(best)}: " + ", ".join(parts)]
