"""Scales that are zero, negative or not finite (issue 38 item 2): LiteRT 2.3.0 loads them,
so here they are findings of the reader, and the interpreter refuses them only at a kernel
that would use them beyond a product (`accepts.check_scales`).

* Where a kernel only multiplies stored values by the scale (the weights and biases of
  FULLY_CONNECTED and the convolutions, an EMBEDDING_LOOKUP table, DEQUANTIZE's input), a
  zero scale is an all-zero channel and a negative one flips its sign: computed here
  bit for bit as LiteRT's builtin kernels do (DEQUANTIZE as its reference kernel: the
  builtin one writes +0.0 where (q - zp) * 0 is -0.0).
* A kernel that moves stored values (RESHAPE) never reads them: it runs whatever they are.
* Elsewhere the node is refused at load, naming the op, the tensor and the reason: a zero
  output scale (LiteRT's int8 FULLY_CONNECTED then writes values that all mean 0), a NaN
  weight scale (LiteRT computes NaN).
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter, UnsupportedOpError
from tflite_viewer.model import load_model

from .litert_meaning import judge, run_forked
from .llm_models import A, OpSpec, PerChannel, PerTensor, W, ours_run, write_model

NAN = float("nan")


def _same(model: bytes, inputs, resolver: str = "BUILTIN_WITHOUT_DEFAULT_DELEGATES") -> None:
    ours = ours_run(model, inputs)
    theirs = run_forked(model, inputs, resolver)
    for o, value in ours.items():
        assert value.dtype == theirs[o].dtype
        np.testing.assert_array_equal(value.view(np.uint8), theirs[o].view(np.uint8))


def _fc(rng, w_quant, kind: str, out_scale: float = 0.1, bias_scales=None):
    """A FULLY_CONNECTED [2, 16] x [4, 16]: float input (hybrid) or int8."""
    w = rng.integers(-127, 128, (4, 16)).astype(np.int8)
    if kind == "hybrid":
        x = rng.standard_normal((2, 16)).astype(np.float32)
        model = write_model([A((2, 16)), W(w, "INT8", w_quant), A((2, 4))],
                            [OpSpec("FULLY_CONNECTED", [0, 1, -1], [2],
                                    "FullyConnectedOptions", {}, version=9)], [0], [2])
        return model, [x]
    x = rng.integers(-128, 128, (2, 16)).astype(np.int8)
    bias = rng.integers(-300, 300, 4).astype(np.int32)
    model = write_model([A((2, 16), "INT8", PerTensor(0.05, 3)), W(w, "INT8", w_quant),
                         W(bias, "INT32", PerChannel(bias_scales, 0, 0)),
                         A((2, 4), "INT8", PerTensor(out_scale, -2))],
                        [OpSpec("FULLY_CONNECTED", [0, 1, 2], [3], "FullyConnectedOptions",
                                {}, version=5)], [0], [3])
    return model, [x]


@pytest.mark.parametrize("scales", [[0.0, 0.02, 0.03, 0.01], [-0.02, 0.01, 0.01, 0.01]])
@pytest.mark.parametrize("seed", range(2))
def test_hybrid_fully_connected_weight_scales_multiply(scales, seed):
    rng = np.random.default_rng(seed)
    _same(*_fc(rng, PerChannel(scales, 0, 0), "hybrid"))
    _same(*_fc(rng, PerTensor(0.0), "hybrid"))


@pytest.mark.parametrize("seed", range(2))
def test_int8_fully_connected_zero_channel_with_its_zero_bias_scale(seed):
    scales = [0.0, 0.02, 0.03, 0.01]
    model, x = _fc(np.random.default_rng(seed), PerChannel(scales, 0, 0), "int8",
                   bias_scales=[0.05 * s for s in scales])
    _same(model, x)


def test_conv_2d_int8_zero_filter_channel():
    rng = np.random.default_rng(5)
    w = rng.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8)
    scales = [0.02, 0.0, 0.01]
    bias = rng.integers(-300, 300, 3).astype(np.int32)
    model = write_model([A((1, 5, 5, 2), "INT8", PerTensor(0.05, 1)),
                         W(w, "INT8", PerChannel(scales, 0, 0)),
                         W(bias, "INT32", PerChannel([0.05 * s for s in scales], 0, 0)),
                         A((1, 3, 3, 3), "INT8", PerTensor(0.1, 0))],
                        [OpSpec("CONV_2D", [0, 1, 2], [3], "Conv2DOptions",
                                {"padding": "VALID", "stride_w": 1, "stride_h": 1},
                                version=3)], [0], [3])
    _same(model, [rng.integers(-128, 128, (1, 5, 5, 2)).astype(np.int8)])


def test_embedding_table_row_with_a_zero_scale():
    rng = np.random.default_rng(2)
    table = rng.integers(-8, 8, (6, 16)).astype(np.int8)
    table[0] = 0
    scales = [0.0] + (rng.random(5) * 0.1 + 0.01).tolist()
    model = write_model([A((4,), "INT32"), W(table, "INT4", PerChannel(scales, 0, 0)),
                         A((4, 16))], [OpSpec("EMBEDDING_LOOKUP", [0, 1], [2])], [0], [2])
    _same(model, [np.array([0, 3, 0, 5], np.int32)])


def test_dequantize_zero_and_negative_scales_as_litert_reference():
    x = np.random.default_rng(3).integers(-128, 128, (40, 25)).astype(np.int8)
    for quant in (PerTensor(0.0, 1), PerTensor(-0.05, 2),
                  PerChannel([0.0] * 20 + [0.03] * 20, 0, 0)):
        model = write_model([A(x.shape, "INT8", quant), A(x.shape)],
                            [OpSpec("DEQUANTIZE", [0], [1], version=2)], [0], [1])
        _same(model, [x], "BUILTIN_REF")


def test_a_kernel_that_moves_values_takes_any_scale():
    x = np.arange(-16, 16, dtype=np.int8).reshape(2, 16)
    for scale in (0.0, NAN):
        model = write_model([A((2, 16), "INT8", PerTensor(scale, 1)),
                             W(np.array([16, 2], np.int32)),
                             A((16, 2), "INT8", PerTensor(scale, 1))],
                            [OpSpec("RESHAPE", [0, 1], [2])], [0], [2])
        _same(model, [x])


def test_a_zero_output_scale_is_refused_where_litert_computes_no_meaning():
    scales = [0.02, 0.02, 0.03, 0.01]
    model, x = _fc(np.random.default_rng(0), PerChannel(scales, 0, 0), "int8",
                   out_scale=0.0, bias_scales=[0.05 * s for s in scales])
    with pytest.raises(UnsupportedOpError, match=r"FULLY_CONNECTED v5 output 0 \(tensor 3 "
                       r"'t3'\): INT8 with a zero scale is not implemented here"):
        Interpreter(model)
    assert judge(model, x).status == "wrong"


def test_a_nan_weight_scale_is_refused_where_litert_computes_nan():
    model, x = _fc(np.random.default_rng(0), PerChannel([NAN, 0.01, 0.01, 0.01], 0, 0),
                   "hybrid")
    with pytest.raises(UnsupportedOpError, match=r"input 1 \(tensor 1 't1'\): INT8 with a "
                       r"non-finite scale on 1 of 4 channels \(channel 0, nan\) is refused"):
        Interpreter(model)
    assert np.isnan(run_forked(model, x)[2][:, 0]).all()
    finding = [f for f in load_model(model).findings if f.tensor == 1]
    assert finding and finding[0].severity == "warning"
