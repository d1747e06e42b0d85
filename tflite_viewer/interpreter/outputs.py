"""A run's outputs in words: one line of statistics and first values per tensor, and the
top-k of a classifier's output with the labels the model's metadata names.  Qt-free: the
`run` command prints these and the window's Outputs dock shows them."""
from __future__ import annotations

from dataclasses import dataclass
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


def finite_stats(flat: np.ndarray) -> tuple[float | None, float | None, float | None, int]:
    """min, max and mean (None when there is none) of the finite values of a 1-D real
    array, and how many are not finite, read in place (no float64 copy of the array)."""
    if flat.dtype.kind == "f":
        finite = np.isfinite(flat)
        nonfinite = int(flat.size - np.count_nonzero(finite))
        if nonfinite:
            flat = flat[finite]
    else:
        nonfinite = 0
    if not flat.size:
        return None, None, None, nonfinite
    return (float(flat.min()), float(flat.max()), float(flat.mean(dtype=np.float64)),
            nonfinite)


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
    low, high, mean, nonfinite = finite_stats(flat)
    if not nonfinite:  # (the common case: no float64 copy of a big KV cache)
        return f"min {_fmt(low)} max {_fmt(high)} mean {_fmt(mean)}  first [{first}{more}]"
    vals = flat.astype(np.float64)
    with np.errstate(all="ignore"):
        stats = (f"min {_fmt(np.nanmin(vals) if not np.isnan(vals).all() else np.nan)} "
                 f"max {_fmt(np.nanmax(vals) if not np.isnan(vals).all() else np.nan)} "
                 f"mean {_fmt(np.mean(vals))}")
    nonfinite = int(np.count_nonzero(~np.isfinite(vals)))
    if nonfinite:
        stats += f" ({nonfinite} non-finite)"
    return f"{stats}  first [{first}{more}]"


def output_labels(model: Model, subgraph: int, tensor: int) -> list[str] | None:
    """The labels TFLITE_METADATA names for an output (its TENSOR_AXIS_LABELS file), or None."""
    return _labels_for(model, subgraph, tensor)


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


def _scorable(model_tensor, arr: np.ndarray) -> bool:
    """Whether `_scores` gives ``arr``'s scores (floats, or per-tensor quantized integers),
    told without converting it (an output of a billion elements is no classifier's)."""
    q = model_tensor.quantization
    return arr.dtype.kind == "f" or (arr.dtype.kind in "iu" and q is not None
                                     and q.has_scale and q.scale.size == 1)


def _scores(model_tensor, arr: np.ndarray) -> np.ndarray | None:
    if not _scorable(model_tensor, arr):
        return None
    if arr.dtype.kind == "f":
        return arr.astype(np.float64)
    q = model_tensor.quantization
    zp = int(q.zero_point[0]) if q.zero_point.size else 0
    return (arr.astype(np.float64) - zp) * float(q.scale[0])


CLASSIFIER_OPS = ("SOFTMAX", "LOG_SOFTMAX")


def classifier_reason(model: Model, subgraph: int, tensor: int, arr: np.ndarray | None,
                      producer: str | None, name: str | None = None) -> str | None:
    """Why this output reads as a classifier's scores (and gets a top-k), or None.

    Only a vector (batch dimensions of 1 aside) of numbers, or dequantizable integers, can
    be; it is one when the model's metadata gives labels for it (about as many as it has
    entries), when a SOFTMAX or LOG_SOFTMAX computed it, or when its name says logits.  A
    detection model's class ids or a detector's per-anchor scores are none of these."""
    if arr is None or arr.size < 2:
        return None
    squeezed = arr.reshape([d for d in arr.shape if d != 1] or [1])
    if squeezed.ndim != 1:
        return None
    if not _scorable(model.subgraphs[subgraph].tensors[tensor], squeezed):
        return None
    n = squeezed.size
    labels = _labels_for(model, subgraph, tensor)
    if labels and abs(len(labels) - n) <= 1:
        return f"{n} classes, labels from the model's metadata"
    if producer in CLASSIFIER_OPS:
        return f"{n} classes, a {producer} output"
    names = [x for x in (name, model.subgraphs[subgraph].tensors[tensor].name) if x]
    if any("logit" in x.lower() for x in names):
        return f"{n} classes, named logits"
    return None


def top_k(model: Model, subgraph: int, tensor: int, arr: np.ndarray | None,
          producer: str | None, k: int = TOP_K, name: str | None = None
          ) -> list[tuple[int, str, float]]:
    """The top-k (index, label, score) of a classifier's output (see `classifier_reason`),
    labels from the model's TENSOR_AXIS_LABELS file ("" without one); [] when the output
    is not a classifier's."""
    if classifier_reason(model, subgraph, tensor, arr, producer, name) is None:
        return []
    squeezed = arr.reshape(-1)
    scores = _scores(model.subgraphs[subgraph].tensors[tensor], squeezed)
    labels = _labels_for(model, subgraph, tensor)
    k = min(k, scores.size)
    order = np.argsort(-np.nan_to_num(scores, nan=-np.inf), kind="stable")[:k]
    return [(int(i), labels[i] if labels and i < len(labels) else "", float(scores[i]))
            for i in order]


def top_k_lines(model: Model, subgraph: int, tensor: int, arr: np.ndarray | None,
                producer: str | None, name: str | None = None) -> list[str]:
    """The top-5 of a classifier's output (with labels when the model names any), and why
    the output was taken for a classifier's."""
    reason = classifier_reason(model, subgraph, tensor, arr, producer, name)
    best = top_k(model, subgraph, tensor, arr, producer, name=name) if reason else []
    if not best:
        return []
    parts = [f"#{i}{f' {label!r}' if label else ''} {_fmt(score)}" for i, label, score in best]
    return [f"    top-{len(best)} ({reason}): " + ", ".join(parts)]


# -- segmentation maps --------------------------------------------------------------------------

def label_colours(n: int) -> np.ndarray:
    """``n`` distinct RGB colours for class indices, class 0 black (the background of the
    PASCAL VOC convention segmentation models follow): the bits of the class index are
    spread over the high bits of red, green and blue in turn."""
    out = np.zeros((max(n, 1), 3), np.uint8)
    for i in range(n):
        c, rgb = i, [0, 0, 0]
        for bit in range(7, -1, -1):
            for ch in range(3):
                rgb[ch] |= ((c >> ch) & 1) << bit
            c >>= 3
        out[i] = rgb
    return out


@dataclass(frozen=True)
class Segmentation:
    """An output read as per-pixel class scores: the argmax class of every pixel and the
    classes present, largest share first, as (class, label, fraction of the pixels)."""

    classes: np.ndarray  # H x W class indices
    present: tuple[tuple[int, str, float], ...]
    n_classes: int


def segmentation(model: Model | None, subgraph: int, tensor: int,
                 arr: np.ndarray | None) -> Segmentation | None:
    """``arr`` as a segmentation map when it is one: [1,] H x W x C scores with more than 4
    classes C and H, W of at least 4 pixels (deeplabv3's float32[1, 257, 257, 21]); None
    otherwise.  Labels come from the model's TENSOR_AXIS_LABELS file ("" without one)."""
    if arr is None:
        return None
    a = np.asarray(arr)
    while a.ndim > 3 and a.shape[0] == 1:
        a = a[0]
    if a.ndim != 3 or a.shape[0] < 4 or a.shape[1] < 4 or a.shape[2] <= 4 \
            or a.dtype.kind not in "biuf":
        return None
    scores = a.astype(np.float64) if a.dtype.kind == "f" else a
    if scores.dtype.kind == "f":
        scores = np.nan_to_num(scores, nan=-np.inf)
    classes = np.argmax(scores, axis=2)
    counts = np.bincount(classes.reshape(-1), minlength=a.shape[2])
    labels = (output_labels(model, subgraph, tensor) if model is not None else None) or []
    present = sorted(((int(c), labels[c] if c < len(labels) else "", float(n) / classes.size)
                      for c, n in enumerate(counts) if n), key=lambda r: (-r[2], r[0]))
    return Segmentation(classes, tuple(present), int(a.shape[2]))
