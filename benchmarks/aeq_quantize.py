"""Quantize a float model with ai-edge-quantizer (static int8 weights and activations,
float inputs and outputs): the quantized half of bench_quant.py's pair, as people make it.

    VENV/bin/python benchmarks/aeq_quantize.py FLOAT OUT SAMPLES.npz

SAMPLES.npz as for aeq_validate.py (the calibration set).  Benchmark-only.
"""
import argparse

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("float_model")
    p.add_argument("out")
    p.add_argument("samples", help="SAMPLES.npz (the calibration set)")
    p.add_argument("key", nargs="?", default="serving_default", help="the signature key")
    args = p.parse_args()
    from ai_edge_quantizer import quantizer, recipe  # only in the benchmark's venv
    fpath, out, npz, key = args.float_model, args.out, args.samples, args.key
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
