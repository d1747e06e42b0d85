"""ai-edge-quantizer's model validator on a float / quantized pair: the anchor of
bench_quant.py, run in its own interpreter (ai-edge-quantizer is a benchmark-only
dependency, installed in a separate virtual environment).

    VENV/bin/python benchmarks/aeq_validate.py FLOAT QUANT SAMPLES.npz ROUNDS

SAMPLES.npz holds ``s{k}_{name}`` arrays: sample k's input ``name`` (a signature input
name).  Prints one line per round: ``AEQ <seconds> <tensors compared>``, the time of
``model_validator.compare_model`` (all tensors, MSE), from the model bytes already read.
"""
import sys
import time

import numpy as np
from ai_edge_quantizer import model_validator
from ai_edge_quantizer.utils import validation_utils


def main() -> None:
    fpath, qpath, npz, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    key = sys.argv[5] if len(sys.argv) > 5 else None
    fb, qb = open(fpath, "rb").read(), open(qpath, "rb").read()
    data = np.load(npz)
    samples: dict[int, dict[str, np.ndarray]] = {}
    for name in data.files:
        k, _, inp = name[1:].partition("_")
        samples.setdefault(int(k), {})[inp] = data[name]
    dataset = [samples[k] for k in sorted(samples)]
    for _ in range(rounds):
        t = time.perf_counter()
        result = model_validator.compare_model(
            fb, qb, {key: dataset}, [validation_utils.ValidationErrorMetric.MSE])
        elapsed = time.perf_counter() - t
        n = len(result.get_all_tensor_results())
        print(f"AEQ {elapsed:.4f} {n}", flush=True)


if __name__ == "__main__":
    main()
