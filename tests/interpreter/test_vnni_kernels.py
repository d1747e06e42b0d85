"""The AVX-512 VNNI byte products (interpreter/compiled_vnni.py) and the 8-bit kernels bound
to one compiled call: ADD/SUB, MEAN/SUM over height and width, FULLY_CONNECTED, and the
CONV_2D shapes the product tiles differently (whole and partial blocks of 16 channels,
rows not a multiple of 4, taps not a multiple of 4).

Truth: the exact integer product (numpy int64) for the products; LiteRT's reference
kernels (BUILTIN_REF) for the kernels, compiled and in numpy alone (`kernel_forms`),
through bound plans and through invoke.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from .conv_pool_models import _activation_quant, _ints, _quantized_model
from .singleop import Input, run_litert
from .test_compiled_kernels import _assert_bits, _conv_model, assert_litert_bits
from tflite_viewer.interpreter import compiled


def _products():
    """compiled_vnni, or a skip that says why this machine cannot run it."""
    from llvmlite import binding
    features = binding.get_host_cpu_features()
    missing = [f for f in ("avx512f", "avx512bw", "avx512vnni") if not features.get(f)]
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(missing)}: the VNNI products cannot run here "
                    "(their callers' numpy forms are tested in every other case)")
    products = compiled.vnni()
    assert products is not None, "the CPU has AVX-512 VNNI: compiled.vnni() must load"
    return products


SHAPES = [(1, 1, 1), (3, 3, 17), (4, 4, 16), (5, 7, 40), (9, 256, 48), (8, 13, 33),
          (37, 27, 16), (2, 1280, 10), (6, 8, 64)]


@pytest.mark.parametrize("signed", [False, True], ids=["uint8", "int8"])
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{k}x{n}" for m, k, n in SHAPES])
def test_the_product_is_the_exact_integer_product(shape, signed):
    products = _products()
    rows, taps, channels = shape
    rng = np.random.default_rng(rows * 1000 + taps * 10 + channels)
    a = _ints(rng, np.int8 if signed else np.uint8, (rows, taps))
    w = _ints(rng, np.int8, (channels, taps))
    got = products.product(a, products.pack_weights(w, signed_input=signed))
    want = a.astype(np.int64) @ w.astype(np.int64).T
    assert got.dtype == np.int32 and got.shape[1] % 16 == 0
    np.testing.assert_array_equal(got[:, :channels], want)
    assert not got[:, channels:].any()  # the padded channels hold zeros


def test_the_extremes_of_both_types():
    products = _products()
    for signed, lo, hi in ((True, -128, 127), (False, 0, 255)):
        dtype = np.int8 if signed else np.uint8
        for value in (lo, hi):
            a = np.full((5, 12), value, dtype)
            w = np.array([[-128] * 12, [127] * 12, [-1, 1] * 6], np.int8)
            got = products.product(a, products.pack_weights(w, signed))[:, :3]
            np.testing.assert_array_equal(got, a.astype(np.int64) @ w.astype(np.int64).T)


def test_sums_wrap_as_c_int32():
    """The start values and the products add in int32 as C's accumulator does: past
    2**31 - 1 they wrap, never saturate."""
    products = _products()
    w = np.full((16, 8), 127, np.int8)
    weights = products.pack_weights(w, signed_input=False)
    start = np.full(16, 2**31 - 1000, np.int32)
    got = products.product(np.full((4, 8), 255, np.uint8), weights._replace(start=start))
    want = (np.int64(2**31 - 1000) + 8 * 255 * 127 + 2**31) % 2**32 - 2**31
    assert (got == want).all() and want < 0


def test_a_named_cpu_turns_vnni_off():
    """numba compiling for a named CPU (NUMBA_CPU_NAME) may lack the instructions: the
    products are not used, and nothing fails."""
    code = ("from tflite_viewer.interpreter import compiled; "
            "print(compiled.loops() is not None, compiled.vnni() is None)")
    env = {**os.environ, "NUMBA_CPU_NAME": "generic"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]


CONV = [  # (name, x shape, filter OHWI, stride, padding, activation)
    ("1x1-three-blocks", (1, 5, 3, 12), (40, 1, 1, 12), 1, "VALID", "NONE"),
    ("1x1-odd-taps", (1, 3, 5, 6), (20, 1, 1, 6), 1, "SAME", "RELU"),
    ("3x3-stride-2-batch", (3, 7, 7, 5), (33, 3, 3, 5), 2, "SAME", "RELU6"),
    ("2x2-one-channel-out", (1, 6, 6, 4), (1, 2, 2, 4), 1, "VALID", "RELU_N1_TO_1"),
]


@pytest.mark.parametrize("case", CONV, ids=[c[0] for c in CONV])
@pytest.mark.parametrize("config", ["INT8_PER_CHANNEL", "INT8", "UINT8", "HYBRID_PER_CHANNEL"])
def test_convolutions_the_product_tiles_differently(case, config, kernel_forms):
    rng = np.random.default_rng(sum(map(ord, case[0] + config)))
    assert_litert_bits(*_conv_model(config, case, rng))


DILATED = [  # (name, x shape, filter OHWI, stride, dilation (h, w), padding)
    ("rows-dilated", (1, 9, 8, 5), (18, 3, 3, 5), 1, (2, 1), "SAME"),
    ("both-dilated", (2, 9, 9, 4), (16, 3, 2, 4), 2, (2, 3), "VALID"),
    ("wide-stride", (1, 10, 11, 3), (8, 2, 5, 3), 3, (1, 1), "SAME"),
]


@pytest.mark.parametrize("case", DILATED, ids=[c[0] for c in DILATED])
@pytest.mark.parametrize("config", ["INT8_PER_CHANNEL", "UINT8"])
def test_dilated_and_strided_convolutions(case, config, kernel_forms):
    """Patches read in place (`compiled_vnni.patch_layout`: a filter row's run of input
    bytes, a dilated run of rows) and, with a width dilation, through copied patches."""
    from .conv_pool_models import _bias, _weights
    name, x_shape, w_shape, stride, (dh, dw), padding = case
    rng = np.random.default_rng(sum(map(ord, name + config)))
    dtype = np.uint8 if config == "UINT8" else np.int8
    q_in, q_out = _activation_quant(rng, dtype), _activation_quant(rng, dtype)
    w, w_q = _weights(rng, config, w_shape, 0)
    b, b_q = _bias(rng, config, w_shape[0], q_in[0], w_q)
    opts = {"padding": padding, "stride_w": stride, "stride_h": stride,
            "dilation_h_factor": dh, "dilation_w_factor": dw,
            "fused_activation_function": "RELU"}
    model = _quantized_model("CONV_2D", [Input(x_shape, dtype, q_in), w, b], dtype, q_out,
                             "Conv2DOptions", opts, 3, {1: w_q, 2: b_q})
    assert_litert_bits(model, _ints(rng, dtype, x_shape))


def _quant(rng, dtype):
    return _activation_quant(rng, dtype)


@pytest.mark.parametrize("shape", [(1, 5, 7, 8), (2, 3, 3, 16), (1, 1, 1, 3)])
@pytest.mark.parametrize("act", ["NONE", "RELU", "RELU6"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("op", ["ADD", "SUB"])
def test_8bit_add_and_sub_are_litert_bits(op, dtype, act, shape, kernel_forms):
    rng = np.random.default_rng(sum(map(ord, f"{op}{act}{shape}{np.dtype(dtype)}")))
    q1, q2, qo = _quant(rng, dtype), _quant(rng, dtype), _quant(rng, dtype)
    model = _quantized_model(op, [Input(shape, dtype, q1), Input(shape, dtype, q2)], dtype,
                             qo, "AddOptions" if op == "ADD" else "SubOptions",
                             {"fused_activation_function": act}, 2 if op == "ADD" else 3, {})
    x1, x2 = _ints(rng, dtype, shape), _ints(rng, dtype, shape)
    want = run_litert(model, [x1, x2])[0]
    for bind in (True, False):
        from tflite_viewer.interpreter import Interpreter
        it = Interpreter(model)
        it.bind_kernels = bind
        for k in range(3):
            _assert_bits(next(iter(it.invoke([x1, x2]).values())), want,
                         f"bound {bind}, invoke {k}")


#: int8 SUM is left out: LiteRT 2.3.0's reference kernel returns one constant for every
#: output there (measured: -1 for any input of scale 0.1 into 0.1 or 0.2, where its
#: uint8 kernel gives the rescaled sums), so it is no truth for it
REDUCTIONS = [("MEAN", np.int8), ("MEAN", np.uint8), ("SUM", np.uint8)]


@pytest.mark.parametrize("axes", [[1, 2], [2, 1], [-3, -2]])
@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("shape", [(1, 3, 3, 32), (2, 7, 5, 24)])
@pytest.mark.parametrize("op,dtype", REDUCTIONS,
                         ids=[f"{op}-{np.dtype(t)}" for op, t in REDUCTIONS])
def test_8bit_mean_and_sum_over_height_and_width_are_litert_bits(op, dtype, shape, keep,
                                                                 axes, kernel_forms):
    rng = np.random.default_rng(sum(map(ord, f"{op}{shape}{keep}{axes}{np.dtype(dtype)}")))
    q_in, q_out = _quant(rng, dtype), _quant(rng, dtype)
    if op == "SUM":  # (a scale that keeps most sums inside the output's range)
        q_out = (q_in[0] * shape[1] * shape[2] / 4, q_out[1])
    model = _quantized_model(op, [Input(shape, dtype, q_in), np.array(axes, np.int32)],
                             dtype, q_out, "ReducerOptions", {"keep_dims": keep},
                             2, {})
    assert_litert_bits(model, _ints(rng, dtype, shape))


@pytest.mark.parametrize("units,accum,batch", [(1, 13, 1), (10, 64, 3), (17, 300, 2),
                                               (40, 1280, 1)])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_int8_fully_connected_is_litert_bits(units, accum, batch, per_channel, kernel_forms):
    rng = np.random.default_rng(units * 7 + accum + batch + per_channel)
    q_in, q_out = _quant(rng, np.int8), _quant(rng, np.int8)
    w = _ints(rng, np.int8, (units, accum), -127, 127)
    w_scale = rng.uniform(0.002, 0.02, units) if per_channel else float(rng.uniform(0.002, 0.02))
    w_q = (w_scale, np.zeros(units, np.int64), 0) if per_channel else (w_scale, 0)
    b_scale = q_in[0] * np.atleast_1d(w_scale)
    b = rng.integers(-3000, 3000, units).astype(np.int32)
    b_q = (b_scale, np.zeros(units, np.int64), 0) if per_channel else (float(b_scale[0]), 0)
    model = _quantized_model("FULLY_CONNECTED", [Input((batch, accum), np.int8, q_in), w, b],
                             np.int8, q_out, "FullyConnectedOptions",
                             {"fused_activation_function": "RELU"}, 5 if per_channel else 4,
                             {1: w_q, 2: b_q})
    assert_litert_bits(model, _ints(rng, np.int8, (batch, accum)))


def test_bound_kernels_take_inputs_not_laid_out_contiguously():
    """The bound kernels call the compiled code's entry points, typed once for contiguous
    arrays (`compiled.entry`): an input that is a strided view (a kept value, a slice)
    must give what its contiguous copy gives."""
    from .test_compiled_kernels import bound_8bit_nodes
    for _, x, run in bound_8bit_nodes(seed=9):
        wide = np.repeat(x, 2, axis=3)[..., ::2]  # x's values, every other byte
        assert not wide.flags.c_contiguous and np.array_equal(wide, x)
        np.testing.assert_array_equal(run(wide), run(np.ascontiguousarray(x)))
