"""Every quantized operator of real models, fed with LiteRT's own intermediate tensors.

LiteRT (BUILTIN_REF, all tensors preserved) runs the model on a random input; then each
operator this package covers is recomputed from the operator's LiteRT inputs and compared
bit for bit with its LiteRT output.  The op -> function table here is the test's; the
interpreter's kernel registrations wire the same functions.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tflite_viewer.interpreter.integer import (concat_pad, conv, elementwise, fully_connected,
                                               lut, pooling, quantize, reduce, softmax)
from tflite_viewer.model import load_model

from tests.conftest import MODELS_DIR

from .gen import LITERT_ROUNDING as R

MODELS = MODELS_DIR


def _q(t):
    return t.quantization


def _run_op(name: str, op, tensors, get) -> np.ndarray | None:
    ins = [None if i < 0 else tensors[i] for i in op.inputs]
    out = tensors[op.outputs[0]]
    x = [None if t is None else get(t.index) for t in ins]
    o = op.options or {}
    if name == "CONV_2D":
        return conv.conv_2d(x[0], x[1], x[2], _q(ins[0]), _q(ins[1]), _q(out), o, R)
    if name == "DEPTHWISE_CONV_2D":
        return conv.depthwise_conv_2d(x[0], x[1], x[2], _q(ins[0]), _q(ins[1]), _q(out), o, R)
    if name == "FULLY_CONNECTED":
        bias = x[2] if len(x) > 2 else None
        return fully_connected.fully_connected(x[0], x[1], bias, _q(ins[0]), _q(ins[1]), _q(out),
                                               o, R)
    if name == "ADD":
        return elementwise.add(x[0], x[1], _q(ins[0]), _q(ins[1]), _q(out), o, R)
    if name == "SUB":
        return elementwise.sub(x[0], x[1], _q(ins[0]), _q(ins[1]), _q(out), o, R)
    if name == "MUL":
        return elementwise.mul(x[0], x[1], _q(ins[0]), _q(ins[1]), _q(out), o, R)
    if name == "AVERAGE_POOL_2D":
        return pooling.average_pool_2d(x[0], _q(out), o)
    if name == "MAX_POOL_2D":
        return pooling.max_pool_2d(x[0], _q(out), o)
    if name == "MEAN":
        return reduce.mean(x[0], x[1], _q(ins[0]), _q(out), o.get("keep_dims", False), R)
    if name == "SOFTMAX":
        return softmax.softmax(x[0], _q(ins[0]), o.get("beta", 1.0), out.dtype, R)
    if name == "LOGISTIC":
        return lut.logistic(x[0], _q(ins[0]), _q(out))
    if name == "TANH":
        return lut.tanh(x[0], _q(ins[0]), _q(out))
    if name == "CONCATENATION":
        return concat_pad.concatenation(x, o["axis"], [_q(t) for t in ins], _q(out))
    if name == "PAD":
        return concat_pad.pad(x[0], x[1], _q(out))
    if name == "QUANTIZE":
        if ins[0].dtype == np.float32:
            return quantize.quantize(x[0], _q(out), out.dtype)
        return quantize.requantize(x[0], _q(ins[0]), _q(out), out.dtype, R)
    if name == "DEQUANTIZE":
        return quantize.dequantize(x[0], _q(ins[0]))
    return None


def _check_model(path: Path, resolver: str = "BUILTIN_REF", seed: int = 0) -> dict[str, int]:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType


    model = load_model(path)
    sg = model.subgraphs[0]
    interp = Interpreter(model_path=str(path),
                         experimental_op_resolver_type=getattr(OpResolverType, resolver),
                         experimental_preserve_all_tensors=True)
    interp.allocate_tensors()
    rng = np.random.default_rng(seed)
    for d in interp.get_input_details():
        dtype = d["dtype"]
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            v = rng.integers(int(info.min), int(info.max) + 1, size=d["shape"]).astype(dtype)
        else:
            v = rng.normal(size=d["shape"]).astype(dtype)
        interp.set_tensor(d["index"], v)
    interp.invoke()
    get = interp.get_tensor
    checked: dict[str, int] = {}
    for op in sg.operators:
        name = op.name
        if op.outputs[0] < 0:
            continue
        out_t = sg.tensors[op.outputs[0]]
        if name == "QUANTIZE" or name == "DEQUANTIZE" or out_t.dtype in (np.int8, np.uint8, np.int16):
            ours = _run_op(name, op, sg.tensors, get)
        else:
            ours = None
        if ours is None:
            continue
        ref = get(op.outputs[0])
        assert ours.dtype == ref.dtype, (op.index, name)
        np.testing.assert_array_equal(ours.reshape(ref.shape), ref,
                                      err_msg=f"{path.name} op {op.index} {name}")
        checked[name] = checked.get(name, 0) + 1
    return checked


@pytest.mark.parametrize("name,expect", [
    ("micro_speech_quantized.tflite", {"DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "SOFTMAX"}),
    ("mobilenet_v1_0.25_224_quant.tflite", {"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D",
                                             "SOFTMAX"}),
    ("small_cnn_dilated_int8.tflite", {"CONV_2D", "DEPTHWISE_CONV_2D", "MAX_POOL_2D",
                                       "AVERAGE_POOL_2D", "FULLY_CONNECTED", "SOFTMAX"}),
    ("ssd_mobilenet_v1.tflite", {"CONV_2D", "DEPTHWISE_CONV_2D", "LOGISTIC", "CONCATENATION"}),
    ("yamnet_audio_classifier_with_metadata.tflite", {"QUANTIZE", "CONV_2D", "DEPTHWISE_CONV_2D",
                                                      "MEAN", "FULLY_CONNECTED", "LOGISTIC",
                                                      "DEQUANTIZE"}),
])
def test_model_ops_match_litert(name, expect):
    checked = _check_model(MODELS / name)
    assert expect <= set(checked), checked
