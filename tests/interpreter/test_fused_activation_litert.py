"""Fused activations as LiteRT's kernels take them.

ADD, SUB, MUL and DIV compute their activation bounds with CalculateActivationRange, which
clamps for RELU, RELU6 and RELU_N1_TO_1 and leaves TANH and SIGN_BIT unapplied.
FULLY_CONNECTED accepts TANH and SIGN_BIT only on its hybrid path, and CONCATENATION
accepts no activation at all (both refuse the model in Prepare).  Each case is checked
against LiteRT's reference kernels on a one-op model.
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import ExecutionError, Interpreter

from .singleop import Input, assert_matches_litert, run_litert, single_op_model

_OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions"}


@pytest.mark.parametrize("op", sorted(_OPTIONS))
@pytest.mark.parametrize("act", ["TANH", "SIGN_BIT", "RELU_N1_TO_1", "RELU6"])
def test_binary_float_ops_apply_only_clamping_activations(op, act):
    rng = np.random.default_rng(len(op) * 7 + len(act))
    a = rng.uniform(-4, 4, (2, 3, 5)).astype(np.float32)
    b = rng.uniform(0.5, 3, (1, 3, 5)).astype(np.float32)  # broadcast; no zero divisor
    model = single_op_model(op, [Input(a.shape), Input(b.shape)], [np.float32],
                            _OPTIONS[op], {"fused_activation_function": act},
                            version=1, output_shapes=[a.shape])
    assert_matches_litert(model, [a, b])


@pytest.mark.parametrize("act", ["TANH", "SIGN_BIT"])
def test_int32_add_leaves_tanh_and_sign_bit_unapplied(act):
    rng = np.random.default_rng(3)
    a = rng.integers(-50, 50, (4, 6), dtype=np.int32)
    b = rng.integers(-50, 50, (4, 6), dtype=np.int32)
    model = single_op_model("ADD", [Input(a.shape, np.int32), Input(b.shape, np.int32)],
                            [np.int32], "AddOptions", {"fused_activation_function": act})
    ours = Interpreter(model)
    ours.set_inputs([a, b])
    np.testing.assert_array_equal(list(ours.invoke().values())[0], a + b)
    assert_matches_litert(model, [a, b])


def _refused_by_litert(model: bytes, inputs) -> bool:
    try:
        run_litert(model, inputs)
    except (RuntimeError, ValueError):
        return True
    return False


def _refused_by_us(model: bytes, inputs) -> str:
    with pytest.raises(ExecutionError) as err:
        interp = Interpreter(model)
        interp.set_inputs(inputs)
        interp.invoke()
    return str(err.value)


@pytest.mark.parametrize("act", ["TANH", "SIGN_BIT"])
def test_float_fully_connected_with_tanh_is_refused_as_litert_refuses_it(act):
    x = np.ones((2, 4), np.float32)
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    model = single_op_model("FULLY_CONNECTED", [Input(x.shape), w, None], [np.float32],
                            "FullyConnectedOptions", {"fused_activation_function": act},
                            output_shapes=[(2, 3)])
    assert _refused_by_litert(model, [x])
    assert f"fused activation {act}" in _refused_by_us(model, [x])


def test_fully_connected_with_relu_still_runs():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 4)).astype(np.float32)
    w = rng.normal(size=(3, 4)).astype(np.float32)
    model = single_op_model("FULLY_CONNECTED", [Input(x.shape), w, None], [np.float32],
                            "FullyConnectedOptions", {"fused_activation_function": "RELU"},
                            output_shapes=[(2, 3)])
    assert_matches_litert(model, [x])


def test_concatenation_with_a_fused_activation_is_refused_as_litert_refuses_it():
    a = np.ones((1, 2), np.float32)
    model = single_op_model("CONCATENATION", [Input(a.shape), Input(a.shape)], [np.float32],
                            "ConcatenationOptions",
                            {"axis": 1, "fused_activation_function": "RELU"},
                            output_shapes=[(1, 4)])
    assert _refused_by_litert(model, [a, a])
    assert "CONCATENATION" in _refused_by_us(model, [a, a])
