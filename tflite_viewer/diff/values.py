"""Comparing what two tensors store: quantization parameters, sparsity, constant values."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..model import Tensor


def _arr(a: np.ndarray | None) -> list:
    return [] if a is None else np.asarray(a).tolist()


def quantization_fields(t: Tensor, other_index=None) -> dict[str, Any]:
    """A tensor's quantization as plain values (form, scale, zero_point, axis, min, max,
    details); ``other_index`` maps tensor indices in blockwise details (the scale and
    zero-point tensors) to the other side's, so matched ones compare equal."""
    q = t.quantization
    if q is None:
        return {"form": "none"}
    details = dict(q.details) if q.details else None
    if details and q.blockwise is not None and other_index is not None:
        for key in ("scales", "zero_points"):
            if details.get(key) is not None:
                details[key] = other_index(int(details[key]))
    return {"form": q.form, "scale": _arr(q.scale), "zero_point": _arr(q.zero_point),
            "quantized_dimension": q.quantized_dimension, "min": _arr(q.min),
            "max": _arr(q.max), "details": details}


def _same(x: Any, y: Any) -> bool:
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    if isinstance(x, float) and isinstance(y, float):
        return x == y or (x != x and y != y)
    return x == y


def quantization_change(ta: Tensor, tb: Tensor, map_a_to_b) -> tuple[dict, dict, list[str]] | None:
    """(A's fields, B's fields, names of the fields that differ), or None when equal."""
    fa = quantization_fields(ta, map_a_to_b)
    fb = quantization_fields(tb)
    changed = [k for k in sorted(set(fa) | set(fb)) if not _same(fa.get(k), fb.get(k))]
    if not changed:
        return None
    if "none" in (fa["form"], fb["form"]):
        changed = ["form"]  # added or removed as a whole
    return fa, fb, changed


def summary(fields: dict[str, Any]) -> str:
    """``per-tensor scale 0.0235 zero point -128`` and the like."""
    form = fields["form"]
    if form == "none":
        return "none"
    scale, zp = fields.get("scale") or [], fields.get("zero_point") or []
    if form == "per-tensor":
        return f"per-tensor scale {scale[0]:.6g} zero point {zp[0] if zp else 0}"
    if form == "per-channel":
        return (f"per-channel ({len(scale)} scales along dimension "
                f"{fields['quantized_dimension']}, {min(scale):.3g}..{max(scale):.3g})")
    if form == "blockwise":
        d = fields.get("details") or {}
        return f"blockwise (block size {d.get('block_size')})"
    return form


def sparsity_fields(t: Tensor) -> Any:
    s = t.sparsity
    if s is None:
        return None
    return {"traversal_order": list(s.traversal_order), "block_map": list(s.block_map),
            "dim_metadata": [[d.format, d.dense_size, _arr(d.array_segments),
                              _arr(d.array_indices)] for d in s.dim_metadata]}


def same_bytes(ta: Tensor, tb: Tensor) -> bool:
    """Whether the two tensors store the same bytes (both none counts as the same)."""
    ra, rb = ta.raw_bytes(), tb.raw_bytes()
    if ra is None or rb is None:
        return ra is None and rb is None
    return ra.size == rb.size and np.array_equal(ra, rb)


def value_statistics(ta: Tensor, tb: Tensor) -> dict[str, Any]:
    """How the values of two constants differ, after dequantization: max abs difference,
    that relative to A's largest magnitude, and how many elements differ."""
    try:
        va, vb = ta.dequantized(), tb.dequantized()
    except (ValueError, TypeError) as exc:  # a damaged or exotic constant: bytes only
        return {"comparable": False, "reason": str(exc).splitlines()[0]}
    if va is None or vb is None:
        return {"comparable": False, "reason": "values are not numbers (strings or custom "
                                               "quantization): the stored bytes differ"}
    if va.shape != vb.shape:
        return {"comparable": False, "reason": f"shapes differ ({list(va.shape)} vs "
                                               f"{list(vb.shape)}): not compared elementwise"}
    a = np.asarray(va, dtype=np.float64).reshape(-1)
    b = np.asarray(vb, dtype=np.float64).reshape(-1)
    both_nan = np.isnan(a) & np.isnan(b)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
    diff[both_nan] = 0.0
    differ = int(np.count_nonzero((diff != 0) | (np.isnan(diff) & ~both_nan)))
    finite = diff[np.isfinite(diff)]
    max_abs = float(finite.max()) if finite.size else 0.0
    scale = float(np.nanmax(np.abs(a))) if a.size and not np.all(np.isnan(a)) else 0.0
    return {"comparable": True, "elements": int(a.size), "differing": differ,
            "share_differing": differ / a.size if a.size else 0.0,
            "max_abs_diff": max_abs,
            "relative_diff": max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else None)}


def describe_statistics(stats: dict[str, Any]) -> str:
    if not stats.get("comparable"):
        return stats.get("reason", "the stored bytes differ")
    if stats["differing"] == 0:
        return "the stored bytes differ, the dequantized values are equal"
    rel = stats["relative_diff"]
    rel_text = f", relative {rel:.3g}" if rel is not None else ""
    return (f"max abs difference {stats['max_abs_diff']:.6g}{rel_text}; "
            f"{stats['differing']} of {stats['elements']} elements "
            f"({100 * stats['share_differing']:.3g}%) differ")
