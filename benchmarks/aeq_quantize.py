"""Quantize a float model with ai-edge-quantizer (static int8 weights and activations,
float inputs and outputs): the quantized half of bench_quant.py's pair, as people make it.

    VENV/bin/python benchmarks/aeq_quantize.py FLOAT OUT SAMPLES.npz

SAMPLES.npz as for aeq_validate.py (the calibration set).  Benchmark-only.
"""
import sys

import numpy as np
from ai_edge_quantizer import quantizer, recipe


def main() -> None:
    fpath, out, npz = sys.argv[1], sys.argv[2], sys.argv[3]
    key = sys.argv[4] if len(sys.argv) > 4 else "serving_default"
    data = np.load(npz)
    samples: dict[int, dict[str, np.ndarray]] = {}
    for name in data.files:
        k, _, inp = name[1:].partition("_")
        samples.setdefault(int(k), {})[inp] = data[name]
    q = quantizer.Quantizer(fpath, recipe.static_wi8_ai8())
    calibration = q.calibrate({key: [samples[k] for k in sorted(samples)]})
    result = q.quantize(calibration)
    with open(out, "wb") as f:
        f.write(result.quantized_model)


if __name__ == "__main__":
    main()
