"""ai-edge-quantizer's model validator on a float / quantized pair: the anchor of
bench_quant.py, run in its own interpreter (ai-edge-quantizer is a benchmark-only
dependency, installed in a separate virtual environment).

    VENV/bin/python benchmarks/aeq_validate.py FLOAT QUANT SAMPLES.npz ROUNDS

SAMPLES.npz holds ``s{k}_{name}`` arrays: sample k's input ``name`` (a signature input
name).  Prints one line per round: ``AEQ <seconds> <tensors compared>``, the time of
``model_validator.compare_model`` (all tensors, MSE), from the model bytes already read.
"""
import argparse
import time

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("float_model")
    p.add_argument("quantized_model")
    p.add_argument("samples", help="SAMPLES.npz")
    p.add_argument("rounds", type=int)
    p.add_argument("key", nargs="?", default=None, help="the signature key")
    args = p.parse_args()
    from ai_edge_quantizer import model_validator  # only in the benchmark's venv
    from ai_edge_quantizer.utils import validation_utils
    fpath, qpath, npz, rounds, key = (args.float_model, args.quantized_model, args.samples,
                                      args.rounds, args.key)
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
