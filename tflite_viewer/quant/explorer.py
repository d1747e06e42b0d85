"""The analysis as Model Explorer node data, with the metrics of litert_quantizer's
validator, so that a team that reads its models in Model Explorer sees it there.

litert_quantizer (ai-edge-quantizer's successor) validates a quantized model with
``model_validator.compare_model``: both models run each signature on the same inputs and
every tensor of the signature's subgraph that has one name in both is compared, the
quantized (target) values against the float (reference) ones, per input, then averaged
over inputs (arithmetic mean).  Its metrics, named as it names them
(`VALIDATOR_METRICS`), each on the values flattened to float32 with NaN read as 1e-9 and
infinities as ±1e9:

* ``mse``: the mean of (target - reference)²;
* ``median_diff_ratio``: the median of |target - reference| / (|reference| + 1e-6);
* ``cosine_similarity``: the cosine of the two vectors (1 when both are zero, 0 when one
  is);
* ``kl_divergence``: Σ p log((p + 1e-9) / (q + 1e-9)) with p = max(reference, 0) and
  q = max(target, 0);
* ``snr``: mean(reference²) / (mse + 1e-9), a power ratio (not dB).

An empty tensor scores 0 on each.  Its ``save`` writes, per metric, Model Explorer's
node data: ``{"results": {tensor name: {"value": v}}, "thresholds": [{"value": t,
"bgColor": "rgb(200, g, 0)"}, ...]}``, the tensors of every signature in one mapping (a
later signature's tensor replaces an earlier one of the same name), the thresholds
`THRESHOLDS` coloured from green to red.  `node_data` writes the same from a `QuantReport`
analysed with ``validator_metrics=True``.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

#: the validator's metric names, in its enumeration's order
VALIDATOR_METRICS = ("mse", "median_diff_ratio", "cosine_similarity", "kl_divergence", "snr")
#: the colour thresholds the validator's node data carries
THRESHOLDS = (0.05, 0.1, 0.2, 0.4, 1, 10, 100)
_EPSILON = 1e-9
_MDR_TOLERANCE = 1e-6


def _prepared(values: Any) -> np.ndarray:
    a = np.asarray(values, dtype=np.float32).reshape(-1)
    return np.nan_to_num(a, nan=1e-9, neginf=-1e9, posinf=1e9)


def validator_row(reference: Any, target: Any) -> dict[str, float]:
    """The `VALIDATOR_METRICS` of ``target`` (the quantized model's real values) against
    ``reference`` (the float model's) on one input (module docstring)."""
    r, t = _prepared(reference), _prepared(target)
    if r.shape != t.shape:
        raise ValueError(f"{t.size} values against {r.size}")
    if not r.size:
        return dict.fromkeys(VALIDATOR_METRICS, 0.0)
    with np.errstate(all="ignore"):
        diff = t - r
        mse = float(np.mean(np.square(diff)))
        ratio = np.abs(diff) / (np.abs(r) + np.float32(_MDR_TOLERANCE))
        nr, nt = float(np.linalg.norm(r)), float(np.linalg.norm(t))
        if nr == 0 and nt == 0:
            cosine = 1.0
        elif nr == 0 or nt == 0:
            cosine = 0.0
        else:
            cosine = float(np.dot(t, r) / (np.float32(nt) * np.float32(nr)))
        p, q = np.maximum(r, 0), np.maximum(t, 0)
        kl = float(np.sum(p * np.log((p + np.float32(_EPSILON)) / (q + np.float32(_EPSILON)))))
        power = float(np.mean(np.square(r)))
    return {"mse": mse, "median_diff_ratio": float(np.median(ratio)),
            "cosine_similarity": cosine, "kl_divergence": kl,
            "snr": power / (mse + _EPSILON)}


def mean_rows(rows: list[dict[str, float]]) -> dict[str, float]:
    """The validator's aggregate: each metric's arithmetic mean over inputs."""
    return {k: float(np.mean([r[k] for r in rows])) for k in VALIDATOR_METRICS}


def thresholds(values: Iterable[float] = THRESHOLDS) -> list[dict[str, Any]]:
    """The node data's colour scale: green (rgb(200, 255, 0)) for the first threshold,
    each next one an equal step redder."""
    values = list(values)
    if not values:
        return []
    step = math.floor(255 / len(values))
    out, green = [], 255
    for v in values:
        out.append({"value": v, "bgColor": f"rgb(200, {green}, 0)"})
        green = max(0, green - step)
    return out


def node_data(report, metric: str = "mse") -> dict[str, Any]:
    """Model Explorer node data of ``metric`` (one of `VALIDATOR_METRICS`) from a report
    analysed with validator metrics: for every signature run, the compared tensors of its
    subgraph (inputs, outputs, intermediates) and its weights, by tensor name."""
    if metric not in VALIDATOR_METRICS:
        raise ValueError(f"metric must be one of {', '.join(VALIDATOR_METRICS)}, "
                         f"not {metric!r}")
    results: dict[str, dict[str, float]] = {}
    for name, row in report.validator_results():
        v = row.get(metric)
        if v is not None and math.isfinite(v):  # (strict JSON: an overflow is left out)
            results[name] = {"value": float(v)}
    return {"results": results, "thresholds": thresholds()}
