"""Defective models made with the project's editor, and an independent numpy computation
of the analysis metrics on LiteRT's tensors."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tflite_viewer.edit import ModelDocument, serialize
from tflite_viewer.model import load_model

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
SMALL_INT8 = MODELS / "small_cnn_dilated_int8.tflite"
SMALL_FLOAT = MODELS / "small_cnn_dilated_float.tflite"
MNV2_FLOAT = MODELS / "mobilenet_v2_float.tflite"
MNV2_INT8 = MODELS / "mobilenet_v2_int8.tflite"
MNV2_DYNAMIC = MODELS / "mobilenet_v2_dynamic.tflite"


def edited(path: Path, *commands):
    doc = ModelDocument(path)
    for c in commands:
        doc.apply(c)
    return load_model(doc.to_bytes())


def tree_edited(path: Path, change) -> bytes:
    """Bytes of a model changed directly on its object tree (for defects the editor's
    commands refuse to make, such as a negative scale); ``change(model_t)``."""
    doc = ModelDocument(path)
    tree = doc.tree
    change(tree.model)
    return serialize(tree)


def litert_dequantize(detail: dict, values: np.ndarray) -> np.ndarray:
    """Dequantize with LiteRT's own view of the parameters (get_tensor_details)."""
    qp = detail["quantization_parameters"]
    scales, zps = qp["scales"].astype(np.float64), qp["zero_points"].astype(np.float64)
    if scales.size == 0:
        return values.astype(np.float64)
    if scales.size == 1:
        return (values.astype(np.float64) - zps[0]) * scales[0]
    shape = [1] * values.ndim
    shape[qp["quantized_dimension"]] = scales.size
    return (values.astype(np.float64) - zps.reshape(shape)) * scales.reshape(shape)


def numpy_metrics(f: np.ndarray, q: np.ndarray, scale: float | None) -> dict[str, float]:
    """The metrics written out again, directly from their definitions."""
    f = f.astype(np.float64).ravel()
    q = q.astype(np.float64).ravel()
    d = q - f
    mse = float((d ** 2).mean())
    nf, nd = np.sqrt((f ** 2).sum()), np.sqrt((d ** 2).sum())
    nq = np.sqrt((q ** 2).sum())
    f32, q32 = f.astype(np.float32), q.astype(np.float32)
    return {
        "num_elements": float(d.size), "stddev": float(d.std()), "mean_error": float(d.mean()),
        "max_abs_error": float(np.abs(d).max()), "mean_squared_error": mse,
        "rmse_scale": None if scale is None else float(np.sqrt(mse) / scale),
        "cosine": 1.0 if nf == 0 and nq == 0 else float(f @ q / (nf * nq)) if nf and nq else 0.0,
        "sqnr_db": float("inf") if nd == 0 else float(20 * np.log10(nf / nd)),
        "median_diff_ratio": float(np.median(np.abs(q32 - f32) / (np.abs(f32) + np.float32(1e-6)))),
    }
