"""LiteRT running one signature of a model on an .npz of inputs, as a whole process: the
anchor `tflite-viewer run MODEL --signature KEY --inputs IN.npz` is measured against
(wall time and peak memory of the process, bench_interpreter.py ``--big``).

    python benchmarks/litert_run.py MODEL --signature KEY --inputs IN.npz
                                    [--resolver BUILTIN_WITHOUT_DEFAULT_DELEGATES]

LiteRT's builtin kernels without the default (XNNPACK) delegate: the kernels this
interpreter's blockwise and hybrid FULLY_CONNECTED follow; XNNPACK would compute with its
own arithmetic (and repack the weights).  Prints each output's shape and first values.
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--signature", required=True)
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--resolver", default="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    args = ap.parse_args(argv)
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        li = Interpreter(model_path=args.model,
                         experimental_op_resolver_type=getattr(OpResolverType, args.resolver))
    runner = li.get_signature_runner(args.signature)
    data = np.load(args.inputs)
    outputs = runner(**{k: data[k] for k in data.files})
    for name in sorted(outputs):
        v = outputs[name]
        print(f"{name} {list(v.shape)} {v.reshape(-1)[:3].tolist()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
