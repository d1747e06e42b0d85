"""Element-wise kernels on outputs above `chunks.LARGE` elements run a piece at a time
(`interpreter/kernels/chunks.py`): their values are LiteRT's reference kernels', to the
bit, with broadcasting inputs cut along the same pieces, and their scratch stays bounded
(an int32 QUANTIZE of 64 MB peaks at its input and output plus a few MB, where the whole
tensor's int64 temporaries took ten times its size)."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.kernels import chunks

from .singleop import Input, run_litert, run_ours, single_op_model

N = chunks.LARGE + 12_345  # past the threshold, not a multiple of a piece


def _same_as_litert(model: bytes, inputs: list[np.ndarray]) -> None:
    ours, ref = run_ours(model, inputs), run_litert(model, inputs)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)


def test_pieces_cover_every_element_once():
    for shape in [(N,), (3, N // 3), (2, 5, 300_000), (1, 1, N), (9, 1, 200_001), (0, N), ()]:
        hits = np.zeros(shape, np.int64)
        for index in chunks.pieces(shape):
            hits[index] += 1
            assert hits[index].size <= max(chunks.CHUNK, 1)
        assert (hits == 1).all(), shape


def test_requantize_int32_to_int8_and_float_to_int8_as_litert():
    rng = np.random.default_rng(0)
    model = single_op_model("QUANTIZE", [Input((N,), np.int32, (0.5, 3))],
                            [(np.int8, (0.25, -2))], output_shapes=[(N,)])
    _same_as_litert(model, [rng.integers(-300, 300, N, dtype=np.int32)])
    model = single_op_model("QUANTIZE", [Input((2, N // 2), np.float32)],
                            [(np.int8, (0.01, 5))], output_shapes=[(2, N // 2)])
    _same_as_litert(model, [rng.uniform(-1.5, 1.5, (2, N // 2)).astype(np.float32)])


def test_dequantize_as_litert():
    model = single_op_model("DEQUANTIZE", [Input((N,), np.int8, (0.037, -7))], [np.float32],
                            output_shapes=[(N,)])
    _same_as_litert(model, [np.random.default_rng(1).integers(-128, 128, N, dtype=np.int8)])


@pytest.mark.parametrize("op, options", [("ADD", "AddOptions"), ("MUL", "MulOptions"),
                                         ("SUB", "SubOptions")])
def test_quantized_binary_ops_with_broadcasting_as_litert(op, options):
    rng = np.random.default_rng(2)
    shape_a, shape_b = (3, 1, N // 6), (1, 2, N // 6)
    model = single_op_model(op, [Input(shape_a, np.int8, (0.05, 1)), Input(shape_b, np.int8,
                                                                            (0.07, -3))],
                            [(np.int8, (0.1, 2))], options, {}, output_shapes=[(3, 2, N // 6)])
    _same_as_litert(model, [rng.integers(-128, 128, shape_a, dtype=np.int8),
                            rng.integers(-128, 128, shape_b, dtype=np.int8)])


def test_quantized_comparison_as_litert():
    rng = np.random.default_rng(3)
    model = single_op_model("LESS", [Input((N,), np.int8, (0.05, 1)),
                                     Input((1,), np.int8, (0.05, 1))], [np.bool_],
                            output_shapes=[(N,)])
    _same_as_litert(model, [rng.integers(-128, 128, N, dtype=np.int8),
                            np.array([3], np.int8)])


def test_a_large_requantize_keeps_its_scratch_bounded():
    n = 16 << 20  # 64 MB of int32 in, 16 MB of int8 out
    model = single_op_model("QUANTIZE", [Input((n,), np.int32, (0.5, 0))],
                            [(np.int8, (0.25, 0))], output_shapes=[(n,)])
    interp = Interpreter(model)
    x = np.arange(n, dtype=np.int32) % 101 - 50
    interp.set_inputs([x])
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = list(interp.invoke().values())[0]
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert np.array_equal(out, np.clip(x * 2, -128, 127).astype(np.int8))
    # the output, plus a piece's temporaries (a few int64 vectors of CHUNK elements);
    # the whole tensor's would be several times 128 MB
    assert peak < n + 24 * chunks.CHUNK * 8, peak
