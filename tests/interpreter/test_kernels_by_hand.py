"""Kernel cores on small inputs whose results are worked out by hand."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.kernels import common, conv, elementwise, pooling, shape_ops
from tflite_viewer.interpreter.integer.common import window
from tflite_viewer.interpreter.kernels.quantize import dequantize
from tflite_viewer.model import Quantization

from .singleop import Input, single_op_model

F32 = np.float32


def test_same_padding_geometry():
    # in 5, filter 3, stride 2: out ceil(5/2) = 3, total pad (3-1)*2+3-5 = 2 -> 1 before
    assert common.window_geometry((5, 5), (3, 3), (2, 2), (1, 1), "SAME") == (3, 3, 1, 1)
    # in 4, filter 3, stride 2: out 2, total pad 1 -> 0 before (the odd pixel goes after)
    assert common.window_geometry((4, 4), (3, 3), (2, 2), (1, 1), "SAME") == (2, 2, 0, 0)
    assert common.compute_out_size("VALID", 7, 3, 2, dilation=2) == 2  # effective filter 5


@pytest.mark.parametrize("stride, dilation, filt", [(0, 1, 3), (-1, 1, 3), (1, 0, 3), (1, 1, 0)])
def test_window_geometry_refuses_what_litert_prepare_refuses(stride, dilation, filt):
    # padding.h's ComputeOutSizeChecked fails on these, so does conv/pool Prepare; the float
    # and the integer kernels share this one implementation
    with pytest.raises(ValueError, match="invalid stride"):
        common.window_geometry((5, 5), (filt, filt), (stride, 1), (dilation, 1), "SAME")
    with pytest.raises(ValueError, match="invalid stride"):
        window({"padding": "VALID", "stride_h": stride, "dilation_h_factor": dilation}, 5, 5,
               filt, 3)


def test_conv2d_by_hand():
    x = np.arange(9, dtype=F32).reshape(1, 3, 3, 1)
    w = np.ones((1, 2, 2, 1), F32)
    out = conv.conv2d(x, w, np.array([1.0], F32), padding="VALID")
    np.testing.assert_array_equal(out[0, :, :, 0], [[0 + 1 + 3 + 4 + 1, 1 + 2 + 4 + 5 + 1],
                                                   [3 + 4 + 6 + 7 + 1, 4 + 5 + 7 + 8 + 1]])
    same = conv.conv2d(x, w, None, padding="SAME", act="RELU6")
    assert same.shape == (1, 3, 3, 1) and same.max() == 6  # bottom/right padding only


def test_depthwise_multiplier_by_hand():
    x = np.array([1, 2], F32).reshape(1, 1, 1, 2)
    w = np.array([10, 20, 30, 40], F32).reshape(1, 1, 1, 4)  # multiplier 2
    out = conv.depthwise_conv2d(x, w)
    np.testing.assert_array_equal(out.reshape(-1), [10, 20, 60, 80])


def test_average_pool_counts_only_valid_cells():
    x = np.ones((1, 2, 2, 1), F32)
    x[0, 0, 0, 0] = 5
    out = pooling.average_pool2d(x, 3, 3, 1, 1, "SAME")
    # every window sees the whole 2x2 image (4 valid cells)
    np.testing.assert_allclose(out.reshape(-1), [2.0] * 4)
    assert pooling.max_pool2d(-x, 2, 2, 1, 1, "SAME").max() == -1  # padding never wins


def _window_mean_from_zero(x: np.ndarray, y0: int, y1: int, x0: int, x1: int) -> np.ndarray:
    """The reference kernel's float average of one window, per channel: ``total = 0.f``,
    then each tap added in memory order, divided by the tap count, in float32."""
    total = np.zeros(x.shape[3], F32)
    for y in range(y0, y1):
        for xx in range(x0, x1):
            total = (total + x[0, y, xx]).astype(F32)
    return (total / F32((y1 - y0) * (x1 - x0))).astype(F32)


@pytest.mark.parametrize("shape", [(1, 7, 7, 9), (1, 3, 5, 2), (1, 1, 1, 3)])
def test_average_pool_sums_from_zero_in_order(shape):
    """A global pool (one window over the image, summed in one ordered reduction) and a
    windowed one add each window's taps one by one from +0: a channel of -0 averages to
    +0, and values of mixed magnitude give the sequential sum's bits."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * rng.choice([1e-4, 1.0, 1e4], shape)).astype(F32)
    x[..., 0] = -0.0
    h, w = shape[1:3]
    whole = pooling.average_pool2d(x, h, w)
    assert whole.shape == (1, 1, 1, shape[3])
    np.testing.assert_array_equal(whole.reshape(-1).view(np.int32),
                                  _window_mean_from_zero(x, 0, h, 0, w).view(np.int32))
    assert np.signbit(whole[..., 0]).sum() == 0
    if h > 1:
        rows = pooling.average_pool2d(x, 2, w, 1, 1, "VALID")
        for y in range(h - 1):
            np.testing.assert_array_equal(rows[0, y, 0].view(np.int32),
                                          _window_mean_from_zero(x, y, y + 2, 0, w).view(np.int32))


def test_floor_mod_and_div_signs():
    a = np.array([7, -7, 7, -7], np.int32)
    b = np.array([3, 3, -3, -3], np.int32)
    np.testing.assert_array_equal(elementwise.floor_mod(a, b), [1, 2, -2, -1])
    np.testing.assert_array_equal(elementwise.floor_div(a, b), [2, -3, -3, 2])
    np.testing.assert_array_equal(elementwise.div(a, b), [2, -2, -2, 2])  # truncation
    np.testing.assert_allclose(elementwise.floor_mod(np.array([-7.5], F32), np.array([2.0], F32)), [0.5])
    for fn in (elementwise.floor_mod, elementwise.floor_div, elementwise.div):
        for zero in (np.array([3, 0, 3, 3], np.int32), np.array(0, np.int32)):
            with pytest.raises(ZeroDivisionError):
                fn(a, zero)


def test_dequantize_per_channel_and_fp16():
    q = Quantization(np.array([0.5, 2.0], F32), np.array([1, -1], np.int64), np.zeros(0, F32),
                     np.zeros(0, F32), 1)
    v = np.array([[3, 3], [1, -1]], np.int8)
    np.testing.assert_array_equal(dequantize(v, q), [[1.0, 8.0], [0.0, 0.0]])
    assert dequantize(np.array([1.5], np.float16)).dtype == np.float32


def test_strided_slice_index_masks():
    x = np.arange(24).reshape(2, 3, 4)
    idx = shape_ops.strided_slice_index(3, [0, 1, 0], [0, 3, 4], [1, 1, 2], begin_mask=0,
                                        end_mask=0, shrink_axis_mask=1)
    np.testing.assert_array_equal(x[idx], [[4, 6], [8, 10]])
    idx = shape_ops.strided_slice_index(3, [0, 0], [0, 0], [1, 1], ellipsis_mask=1,
                                        new_axis_mask=2)
    assert x[idx].shape == (2, 3, 4, 1)


def test_reshape_infers_minus_one():
    assert shape_ops.reshape_target((2, 3, 4), [4, -1]) == (4, 6)
    with pytest.raises(ValueError):
        shape_ops.reshape_target((2, 3, 4), [5, -1])


def test_fp16_weights_through_dequantize_are_computed_once():
    """DEQUANTIZE of a constant hands out the same array each run (consumers cache on it)."""
    w = np.array([[1.0, 2.0]], np.float16)
    model = single_op_model("DEQUANTIZE", [w], [F32], version=3)
    interp = Interpreter(model)
    a = interp.invoke()
    node = interp.entry.nodes[0]
    first = interp.entry.tensors[node.outputs[0]].data
    interp.invoke()
    assert interp.entry.tensors[node.outputs[0]].data is first
    np.testing.assert_array_equal(list(a.values())[0], [[1.0, 2.0]])


def test_rounding_option_is_validated():
    model = single_op_model("RELU", [Input((2,))], [F32])
    assert Interpreter(model, rounding="double").rounding == "double"
    with pytest.raises(ValueError):
        Interpreter(model, rounding="nearest")


def test_python_custom_kernel_class():
    from tflite_viewer.interpreter import Kernel

    class Twice(Kernel):
        def prepare(self, ctx, node):
            ctx.resize(ctx.output(node, 0), ctx.input(node, 0).shape)

        def invoke(self, ctx, node):
            ctx.set_output(ctx.output(node, 0), ctx.value(node, 0) * 2)

    model = single_op_model("CUSTOM", [Input((3,))], [F32], custom_code="Twice")
    interp = Interpreter(model, allocate=False)
    interp.op_resolver.add_custom("Twice", Twice)
    interp.allocate_tensors()
    assert interp.runtime_tensor(0, interp.entry.outputs[0]).shape == (3,)
    out = interp.invoke([np.array([1, 2, 3], F32)])
    np.testing.assert_array_equal(list(out.values())[0], [2, 4, 6])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_activations_keep_the_literal_formulas_bits(dtype):
    """The fused activations (0-d bounds of the input's dtype, the clamp in place) and
    LOGISTIC (one array, in place) give the bits of their literal C formulas, signed zeros, infinities and NaNs included (float32 LOGISTIC: the reference
    kernel's form, C's expf being the double exp rounded to float32 away from rounding
    midpoints, which these 185 values are not near)."""
    from tflite_viewer.interpreter.kernels.activations import logistic

    rng = np.random.default_rng(3)
    x = (rng.standard_normal((5, 37)) * 8).astype(dtype)
    x[0, :6] = [np.inf, -np.inf, np.nan, -0.0, 0.0, 6.0]

    def bits(a):
        return a.view(np.uint8)
    with np.errstate(all="ignore"):
        for act, lo, hi in (("RELU", 0.0, None), ("RELU6", 0.0, 6.0),
                            ("RELU_N1_TO_1", -1.0, 1.0)):
            # C's std::min(std::max(x, lo), hi): std::max(a, b) is (a < b) ? b : a, so a
            # -0 input stays -0 (np.maximum(-0.0, 0.0) gives +0), and NaN stays NaN
            low = np.where(x < dtype(lo), dtype(lo), x)
            want = low if hi is None else np.where(dtype(hi) < low, dtype(hi), low)
            got = common.apply_activation(x.copy(), act)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(bits(got), bits(want))
            ro = x.copy()
            ro.flags.writeable = False
            np.testing.assert_array_equal(bits(common.apply_activation(ro, act)), bits(want))
        if dtype == np.float32:  # reference_ops::Logistic: its cut-offs, C's expf
            x64 = x.astype(np.float64)
            want = np.where(x > np.float32(16.619047164916992188), np.float32(1),
                            np.where(x < -9, np.exp(x64).astype(F32),
                                     F32(1) / (F32(1) + np.exp(-x64).astype(F32))))
        else:
            want = (1 / (1 + np.exp(-x))).astype(x.dtype, copy=False)
        before = x.copy()
        got = logistic(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(bits(got), bits(want))
        np.testing.assert_array_equal(bits(x), bits(before))  # the input is left alone


def test_conv2d_whole_window_is_the_im2col_product():
    """A CONV_2D window that covers the whole undilated input (one output pixel, no
    padding) reads each image as its own patch: the same bits as the im2col product."""
    from tflite_viewer.interpreter.float32 import ordered_matmul
    from tflite_viewer.interpreter.integer.common import Window, im2col

    rng = np.random.default_rng(9)
    for _ in range(40):
        n, h, w, c, o = (int(v) for v in rng.integers(1, 6, 5))
        x = rng.standard_normal((n, h, w, c)).astype(F32)
        f = rng.standard_normal((o, h, w, c)).astype(F32)
        b = rng.standard_normal(o).astype(F32)
        stride = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        for padding in ("VALID", "SAME") if (h, w) == (1, 1) or stride[0] >= h and \
                stride[1] >= w else ("VALID",):
            assert common.window_geometry((h, w), (h, w), stride, (1, 1), padding) == \
                (1, 1, 0, 0)
            cols = im2col(x, Window(1, 1, 0, 0), h, w, *stride, 1, 1)
            want = (ordered_matmul(cols, conv.filter_matrix(f)) + b).reshape(n, 1, 1, o)
            got = conv.conv2d(x, f, b, stride, (1, 1), padding)
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
