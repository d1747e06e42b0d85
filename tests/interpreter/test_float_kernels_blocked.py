"""Float kernels made for speed (issue 40) compute what the plain formulas do.

CONV_2D's blocked im2col (`float_conv.ConvPlan`) against a float64 convolution written
out loop by loop, and with reference sums its blocks against one block of the whole image
bit for bit (each output's sum involves its own patch only); TRANSPOSE_CONV's blocked scatter against a
float64 scatter; the bit-mask select of PRELU / LEAKY_RELU against np.where; the float
RESIZE_BILINEAR against the reference template's formula evaluated term by term.
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter.float32 import ordered_matmul
from tflite_viewer.interpreter.kernels import float_conv
from tflite_viewer.interpreter.kernels.activations import where_nonnegative
from tflite_viewer.interpreter.kernels.common import window_geometry
from tflite_viewer.interpreter.kernels.conv import conv2d, filter_matrix, transpose_conv2d
from tflite_viewer.interpreter.padding import transpose_conv_padding

F32 = np.float32


def _direct_conv(x, w, b, strides, dilations, padding):
    """float64 NHWC convolution, one output position at a time from its window."""
    n, h, wd, c = x.shape
    o, kh, kw, ci = w.shape
    groups = c // ci
    oh, ow, pt, pl = window_geometry((h, wd), (kh, kw), strides, dilations, padding)
    out = np.zeros((n, oh, ow, o))
    og = o // groups
    for y in range(oh):
        for xx in range(ow):
            for i in range(kh):
                for j in range(kw):
                    iy, ix = y * strides[0] - pt + i * dilations[0], \
                        xx * strides[1] - pl + j * dilations[1]
                    if 0 <= iy < h and 0 <= ix < wd:
                        for g in range(groups):
                            pix = x[:, iy, ix, g * ci:(g + 1) * ci].astype(np.float64)
                            out[:, y, xx, g * og:(g + 1) * og] += \
                                pix @ w[g * og:(g + 1) * og, i, j, :].astype(np.float64).T
    return out + b


#: (input, filter, strides, dilations, padding): a 3x3 of many channels, a wide kernel of
#: few channels (nmp's), a 1x1 of stride 1 (rows multiplied in place) and of stride 2,
#: dilated across (patches of C-long runs), grouped, a window covering the whole input
CASES = [((1, 9, 10, 12), (5, 3, 3, 12), (1, 1), (1, 1), "SAME"),
         ((2, 4, 30, 2), (3, 3, 9, 2), (1, 1), (1, 1), "SAME"),
         ((1, 6, 7, 8), (4, 1, 1, 8), (1, 1), (1, 1), "VALID"),
         ((1, 7, 7, 8), (4, 1, 1, 8), (2, 2), (1, 1), "SAME"),
         ((1, 11, 12, 3), (6, 3, 3, 3), (2, 1), (2, 3), "SAME"),
         ((1, 8, 8, 6), (4, 3, 3, 3), (1, 2), (1, 1), "VALID"),
         ((2, 3, 4, 5), (7, 3, 4, 5), (1, 1), (1, 1), "VALID")]


@pytest.mark.parametrize("x_shape, w_shape, strides, dilations, padding", CASES)
@pytest.mark.parametrize("block_bytes", [16, 512, 1 << 20])
def test_blocked_im2col_is_the_convolution(monkeypatch, x_shape, w_shape, strides, dilations,
                                           padding, block_bytes):
    """Blocks of pieces of a row (16 bytes), of a few rows (512) and of the whole image:
    within float32 rounding of the float64 convolution, bias and RELU6 applied; with
    reference sums each output is `ordered_matmul` of its patch, whatever the blocks."""
    rng = np.random.default_rng(sum(x_shape) + block_bytes)
    x = rng.standard_normal(x_shape).astype(F32)
    w = rng.standard_normal(w_shape).astype(F32)
    b = rng.standard_normal(w_shape[0]).astype(F32)
    want = np.clip(_direct_conv(x, w, b, strides, dilations, padding), 0, 6)
    whole = {True: conv2d(x, w, b, strides, dilations, padding, "RELU6")}
    monkeypatch.setattr(float_conv, "BLOCK_BYTES", block_bytes)
    for reference in (False, True):
        got = conv2d(x, w, b, strides, dilations, padding, "RELU6", reference_sums=reference)
        assert got.shape == want.shape and got.dtype == F32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        if reference:  # blocks change no value (BLAS's own rounding follows its shapes)
            assert np.array_equal(got.view(np.uint32), whole[True].view(np.uint32))


def test_reference_blocks_are_the_ordered_sums_of_the_patches(monkeypatch):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 5, 6, 4)).astype(F32)
    w = rng.standard_normal((3, 3, 3, 4)).astype(F32)
    monkeypatch.setattr(float_conv, "BLOCK_BYTES", 100)
    got = conv2d(x, w, None, (1, 1), (1, 1), "VALID", None, reference_sums=True)
    patches = np.stack([x[0, y:y + 3, xx:xx + 3, :].reshape(-1)
                        for y in range(3) for xx in range(4)])
    want = ordered_matmul(patches, filter_matrix(w)).reshape(1, 3, 4, 3)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_blocks_cover_the_output_once_within_the_budget():
    for (n, oh, ow, per) in [(2, 5, 7, 100), (1, 3, 40000, 4), (1, 1, 1, 1 << 22)]:
        blocks = float_conv._blocks(n, oh, ow, per)
        rows = [r for r0, r1, *_ in blocks for r in range(r0, r1)]
        assert rows == list(range(n * oh * ow))
        for r0, r1, b, y0, y1, x0, x1 in blocks:
            assert r1 - r0 == (y1 - y0) * (x1 - x0)
            assert (r1 - r0) * per <= float_conv.BLOCK_BYTES or r1 - r0 == 1 or y1 - y0 == 1


def _scatter64(x, w, strides, padding, out_hw):
    """float64 TRANSPOSE_CONV: every input pixel times every tap, added at stride."""
    n, h, wd, _ = x.shape
    o, kh, kw, _ = w.shape
    pt, pl = transpose_conv_padding(padding, out_hw, (kh, kw), strides)
    full = np.zeros((n, (h - 1) * strides[0] + kh + out_hw[0], (wd - 1) * strides[1] + kw
                     + out_hw[1], o))
    for y in range(h):
        for xx in range(wd):
            contrib = np.einsum("ni,okli->nklo", x[:, y, xx].astype(np.float64),
                                w.astype(np.float64))
            full[:, y * strides[0]:y * strides[0] + kh, xx * strides[1]:xx * strides[1] + kw] \
                += contrib
    return full[:, pt:pt + out_hw[0], pl:pl + out_hw[1]]


@pytest.mark.parametrize("x_shape, w_shape, strides, padding, out_hw", [
    ((1, 4, 5, 6), (3, 4, 4, 6), (2, 2), "SAME", (8, 10)),
    ((2, 3, 3, 2), (5, 3, 3, 2), (1, 2), "VALID", (5, 7)),
    ((1, 6, 2, 3), (2, 2, 5, 3), (3, 1), "SAME", (18, 2))])
@pytest.mark.parametrize("block_bytes", [64, 1 << 20])
def test_blocked_transpose_conv_is_the_scatter(monkeypatch, x_shape, w_shape, strides, padding,
                                               out_hw, block_bytes):
    rng = np.random.default_rng(len(x_shape) + block_bytes)
    x = rng.standard_normal(x_shape).astype(F32)
    w = rng.standard_normal(w_shape).astype(F32)
    b = rng.standard_normal(w_shape[0]).astype(F32)
    monkeypatch.setattr(float_conv, "BLOCK_BYTES", block_bytes)
    out_shape = (x_shape[0], *out_hw, w_shape[0])
    got = transpose_conv2d(x, w, out_shape, b, strides, padding, "RELU")
    want = np.maximum(_scatter64(x, w, strides, padding, out_hw) + b, 0)
    assert got.shape == out_shape and got.dtype == F32 and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_the_bit_select_is_np_where(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 7, 5)).astype(dtype)
    x.reshape(-1)[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, -np.nan]
    alpha = rng.standard_normal(5).astype(dtype)
    want = np.where(x >= 0, x, x * alpha)
    got = where_nonnegative(x, x * alpha)
    ints = np.dtype(f"u{np.dtype(dtype).itemsize}")
    assert got.dtype == dtype and np.array_equal(got.view(ints), want.view(ints))
    wide = np.ones((2, 3, 7, 5), dtype)  # a broadcast result: np.where's own path
    assert np.array_equal(where_nonnegative(x, wide), np.where(x >= 0, x, wide))


@pytest.mark.parametrize("align_corners, half_pixel", [(True, False), (False, True),
                                                       (False, False)])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_float_resize_bilinear_is_the_template_term_by_term(align_corners, half_pixel, dtype):
    """Each output: in(y0,x0)*(1-dy)*(1-dx) + in(y1,x0)*dy*(1-dx) + in(y0,x1)*(1-dy)*dx +
    in(y1,x1)*dy*dx in float32, left to right (resize_bilinear.h's float template), the
    interpolation points as computed by the kernel; uint8 rounded half up."""
    from tflite_viewer.interpreter.integer import resize
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((2, 5, 6, 3)) * 50 + 100).clip(0, 255).astype(dtype)
    oh, ow = 11, 9
    got = resize.resize_bilinear(x, (oh, ow), align_corners, half_pixel)
    ys, y0, y1 = resize._interpolation_values_float(oh, 5, align_corners, half_pixel)
    xs, x0, x1 = resize._interpolation_values_float(ow, 6, align_corners, half_pixel)
    one, v = F32(1), x.astype(F32)
    want = np.empty((2, oh, ow, 3), F32)
    for i in range(oh):
        dy = F32(ys[i] - F32(y0[i]))
        for j in range(ow):
            dx = F32(xs[j] - F32(x0[j]))
            t = v[:, y0[i], x0[j]] * (one - dy) * (one - dx)
            t = t + v[:, y1[i], x0[j]] * dy * (one - dx)
            t = t + v[:, y0[i], x1[j]] * (one - dy) * dx
            want[:, i, j] = t + v[:, y1[i], x1[j]] * dy * dx
    if dtype == np.uint8:
        want = np.trunc(want + F32(0.5)).astype(np.int64).astype(dtype)
    assert got.dtype == dtype and np.array_equal(got, want)


def test_the_clamp_is_c_s_min_of_max():
    """std::min(std::max(x, low), high) as LiteRT's ActivationFunctionWithMinMax: -0 kept
    (std::max returns its first argument unless it is below), NaN kept, bias first."""
    x = np.array([-0.0, 0.0, -1.0, 7.0, np.nan, -np.inf, np.inf, 3.5], F32)
    for low, high in ((0.0, 6.0), (0.0, None), (-1.0, 1.0)):
        out = x.copy()
        float_conv.clamp(out, None, (F32(low), None if high is None else F32(high)))
        want = [v if np.isnan(v) else min(max(v, low), np.inf if high is None else high)
                for v in x.tolist()]
        want = np.array([w if not (w == 0 and v == 0) else v for w, v in zip(want, x.tolist())],
                        F32)
        assert np.array_equal(out.view(np.uint32), want.view(np.uint32)), (low, high)
    out = np.zeros((2, 3), F32)
    float_conv.clamp(out, np.array([1, -2, 8], F32), (F32(0), F32(6)))
    assert out.tolist() == [[1, 0, 6], [1, 0, 6]]


@pytest.mark.parametrize("x_shape, alpha_shape", [
    ((1, 12, 10, 16), (1, 1, 16)), ((2, 4, 6), (6,)), ((1, 5, 7, 3), (1, 7, 3)),
    ((1, 5, 7, 3), (1, 1, 1)), ((4, 3), (3,)), ((7,), (7,))])
def test_prelu_is_np_where_for_every_alpha_shape(x_shape, alpha_shape):
    """Per channel (the row-tiled path), per pixel, one alpha, 1-D: np.where's bits."""
    from tflite_viewer.interpreter.kernels.activations import prelu
    rng = np.random.default_rng(len(x_shape) + len(alpha_shape))
    x = rng.standard_normal(x_shape).astype(F32)
    x.reshape(-1)[:3] = [np.nan, -0.0, -np.inf]
    alpha = rng.standard_normal(alpha_shape).astype(F32)
    want = np.where(x >= 0, x, x * alpha)
    got = prelu(x, alpha)
    assert got.shape == want.shape and np.array_equal(got.view(np.uint32), want.view(np.uint32))
