"""The documented errors: unsupported ops (listed up front), op versions beyond a kernel's
range, integer kernels not there yet, kernel failures naming their op, allocation limits."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import (AllocationError, ExecutionError, Interpreter,
                                       UnsupportedOpError)

from .conftest import model_path
from .singleop import Input, Op, graph_model, single_op_model

F32 = np.float32


def test_version_beyond_range_names_op_version_and_range():
    w = np.ones((2, 1, 1, 3), F32)
    model = single_op_model("CONV_2D", [Input((1, 4, 4, 3)), w, None], [F32], "Conv2DOptions",
                            {"padding": "SAME"}, version=9)
    with pytest.raises(UnsupportedOpError) as info:
        Interpreter(model)
    msg = str(info.value)
    assert "CONV_2D" in msg and "version 9" in msg and "1..8" in msg


def test_every_missing_op_is_listed_at_once():
    tensors = [((1, 4), F32), ((1, 4), F32), ((1, 4), F32), ((1, 4), F32)]
    ops = [Op("CUSTOM", [0], [1], custom_code="MyFancyOp"),
           Op("STABLEHLO_WHILE", [1], [2]),
           Op("RELU", [2], [3])]
    with pytest.raises(UnsupportedOpError) as info:
        Interpreter(graph_model(tensors, ops, [0], [3]))
    msg = str(info.value)
    assert "MyFancyOp" in msg and "STABLEHLO_WHILE" in msg and "2 unsupported" in msg
    assert "RELU" not in msg
    assert {p["op"] for p in info.value.problems} == {"MyFancyOp", "STABLEHLO_WHILE"}


@pytest.mark.parametrize("op,dtype,version", [
    ("SIN", np.int8, 1), ("COS", np.int16, 1), ("LOCAL_RESPONSE_NORMALIZATION", np.uint8, 1),
    ("SQUARED_DIFFERENCE", np.int16, 2),
])
def test_quantized_ops_without_integer_kernels_are_refused_not_miscomputed(op, dtype, version):
    q = (0.05, 3 if dtype == np.uint8 else 0)
    inputs = [Input((1, 8), dtype, q)] * (2 if op == "SQUARED_DIFFERENCE" else 1)
    model = single_op_model(op, inputs, [(dtype, q)], version=version,
                            output_shapes=[(1, 8)])
    with pytest.raises(UnsupportedOpError) as info:
        Interpreter(model)
    msg = str(info.value)
    assert f"{op} v{version} with {np.dtype(dtype).name.upper()}" in msg
    assert "integer kernels not implemented yet" in msg


@pytest.mark.parametrize("name", ["mobilenet_v2_int8", "mobilenet_v1_0.25_224_quant",
                                  "mobilenet_v2_dynamic", "micro_speech_quantized"])
def test_quantized_models_now_load(name):
    """These were refused before the integer kernels existed (see test_quantized_models)."""
    Interpreter(model_path(name))


def test_keyword_scrambled_runs_not_a_crash():
    """LiteRT itself crashes on this model; we run it (int8-state SVDF, as TFLite Micro)."""
    interp = Interpreter(model_path("keyword_scrambled_8bit"))
    interp.set_input(0, np.zeros(interp.entry.tensors[interp.entry.inputs[0]].shape, np.int16))
    interp.invoke()


def test_kernel_failure_raises_execution_error_naming_subgraph_and_op():
    interp = Interpreter(model_path("movie_review"))
    ids = np.full((1, 256), 10 ** 6, np.int32)  # far outside the vocabulary
    with pytest.raises(ExecutionError) as info:
        interp.invoke([ids])
    msg = str(info.value)
    assert "subgraph 0" in msg and "op 0" in msg and "GATHER" in msg
    # the interpreter is usable afterwards
    out = interp.invoke([np.ones((1, 256), np.int32)])
    assert np.isfinite(list(out.values())[0]).all()


def test_numpy_errors_inside_custom_kernels_are_wrapped():
    def broken(ctx, node):
        np.zeros(3) @ np.zeros(4)
    model = single_op_model("CUSTOM", [Input((2,))], [F32], custom_code="Broken")
    interp = Interpreter(model, allocate=False)
    interp.op_resolver.add_custom("Broken", broken)
    interp.allocate_tensors()
    with pytest.raises(ExecutionError, match=r"subgraph 0 .*op 0 \(Broken\).*ValueError"):
        interp.invoke([np.zeros(2, F32)])


def test_allocation_limit_refuses_clearly():
    with pytest.raises(AllocationError) as info:
        Interpreter(model_path("mobilenet_v2_float"), max_allocation_bytes=100_000)
    assert "allocation limit" in str(info.value) and "max_allocation_bytes" in str(info.value)
    interp = Interpreter(model_path("mobilenet_v2_float"), max_allocation_bytes=64 << 20)
    with pytest.raises(AllocationError):
        interp.resize_input(0, (100_000, 96, 96, 3))


def test_absurd_dynamic_shape_is_refused_before_allocating():
    model = single_op_model("FILL", [Input((4,), np.int32), np.array(1.0, F32)], [F32])
    interp = Interpreter(model, max_allocation_bytes=1 << 20)
    with pytest.raises(AllocationError):
        interp.invoke([np.array([1 << 15, 1 << 15, 1 << 15, 1 << 15], np.int32)])


def test_resize_input_respects_shape_signature():
    interp = Interpreter(model_path("mobilenet_v2_float"))
    with pytest.raises(ValueError, match="shape signature"):
        interp.resize_input(0, (1, 64, 64, 3))


def test_set_input_rejects_float_into_int():
    interp = Interpreter(model_path("movie_review"))
    with pytest.raises(ValueError):
        interp.set_input(0, np.zeros((1, 256), F32))
