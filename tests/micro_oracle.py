"""TensorFlow Lite Micro's Python interpreter as the source of truth where LiteRT cannot run
a model (keyword_scrambled_8bit's int8-state SVDF crashes LiteRT 2.3.0)."""
from __future__ import annotations

import numpy as np


def tflm(model: bytes):
    """A TFLM interpreter that keeps every tensor (``GetTensor``) after invoke."""
    from tflite_micro.python.tflite_micro import runtime

    return runtime.Interpreter.from_bytes(
        model, arena_size=max(1 << 20, 20 * len(model)),
        intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)


def tflm_tensor(interp, index: int) -> np.ndarray:
    """Tensor ``index`` of subgraph 0 as last computed."""
    entry = interp.GetTensor(index, 0)
    return np.asarray(entry["tensor_data"]).reshape(tuple(entry["shape"]))
