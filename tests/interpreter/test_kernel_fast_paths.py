"""Fast forms of float kernels (issue 40, item 2) compute the plain formulas' bits.

PRELU and LEAKY_RELU as kappa * max(kappa * x, kappa * alpha * x) (`ScaledSelect`)
against np.where(x >= 0, x, x * alpha), bit for bit, over alphas below, at and above 1, of
either sign, and inputs with every special value; a bias tiled over the rows of an output
block (`float_conv.TiledBias`) against the per-channel broadcast; the bound SOFTMAX against
`softmax` and the sums of a bound MEAN (`ordered_sum_plan`) against the sequential loop;
the bound products of float CONV_2D and DEPTHWISE_CONV_2D plans against the plans' own
call; a depthwise convolution by planes of its columns (`float_depthwise.WidthTaps`) against
float64 taps.
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter.kernels import float_conv, float_depthwise
from tflite_viewer.interpreter.kernels.activations import ScaledSelect, leaky_relu, prelu

F32 = np.float32
SPECIAL = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 1e-38,
                    -1e-38, 3e38, -3e38, 1.0, -1.0], F32)


def _inputs(rng, shape) -> np.ndarray:
    """Normal values over many magnitudes, a tenth of them special (zeros of both signs,
    infinities, NaN, subnormals, values whose product overflows)."""
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-40, 39, shape)
    x = x.astype(F32)
    flat = x.reshape(-1)
    at = rng.choice(flat.size, flat.size // 10, replace=False)
    flat[at] = rng.choice(SPECIAL, at.size)
    return x


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32)


#: alpha kinds: all in (0, 1] (a max), all at or above 1 (a min), mixed signs (max with
#: the zero inputs copied), mixed sides of 1 (kappa), a zero (the bit-mask select)
ALPHAS = {
    "below_one": lambda rng, c: rng.uniform(0.01, 1.0, c),
    "above_one": lambda rng, c: rng.uniform(1.0, 9.0, c),
    "signed": lambda rng, c: rng.uniform(-2.0, 0.9, c),
    "mixed": lambda rng, c: np.concatenate([[1.0, -0.5, 3.0], rng.uniform(-3, 3, c - 3)]),
    "zero": lambda rng, c: np.concatenate([[0.0, -0.0], rng.uniform(-3, 3, c - 2)]),
}


@pytest.mark.parametrize("kind", sorted(ALPHAS))
@pytest.mark.parametrize("x_shape, alpha_shape", [((2, 7, 5, 16), (1, 1, 16)),
                                                  ((3, 11), (11,)), ((1, 4, 6, 3), (1, 6, 3))])
def test_prelu_is_np_where_for_every_kind_of_alpha(kind, x_shape, alpha_shape):
    rng = np.random.default_rng(sum(x_shape) + len(kind))
    with np.errstate(all="ignore"):
        for _ in range(5):
            x = _inputs(rng, x_shape)
            alpha = ALPHAS[kind](rng, int(np.prod(alpha_shape))).astype(F32)
            alpha = alpha.reshape(alpha_shape)
            want = np.where(x >= 0, x, x * alpha)
            got = prelu(x, alpha)
            assert got.shape == want.shape and np.array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("alpha", [0.2, 1.0, 1.5, -0.3, 0.0, -0.0, np.inf, np.nan])
def test_leaky_relu_is_np_where(alpha):
    rng = np.random.default_rng(7)
    with np.errstate(all="ignore"):
        x = _inputs(rng, (4, 9, 13))
        a = F32(alpha)
        want = np.where(x >= 0, x, x * a)
        assert np.array_equal(_bits(leaky_relu(x, alpha)), _bits(want))


def test_the_select_takes_max_min_or_both_and_refuses_zero_alphas():
    shape = (1, 2, 2, 3)
    assert ScaledSelect(np.array([0.2, 1.0, -4.0], F32), shape, F32).mode == "max"
    assert ScaledSelect(np.array([1.0, 2.0, 7.0], F32), shape, F32).mode == "min"
    assert ScaledSelect(np.array([0.5, 2.0, 1.0], F32), shape, F32).mode == "mixed"
    for bad in ([0.5, 0.0, 1.0], [0.5, np.inf, 1.0], [np.nan, 1, 1]):
        assert not ScaledSelect(np.array(bad, F32), shape, F32).usable
    # a zero input in a channel of negative alpha is its own result, whichever sign
    x = np.array([[0.0, -0.0, 0.0], [-0.0, 0.0, -0.0]], F32)
    got = ScaledSelect(np.array([-1.0, -2.0, -3.0], F32), x.shape, F32)(x)
    assert np.array_equal(_bits(got), _bits(x))


@pytest.mark.parametrize("rows, channels, reps", [(5, 16, 5), (1, 3, 1), (4096, 300, 8),
                                                  (2304, 16, 256), (2304, 48, 72),
                                                  (7, 1024, 1)])
def test_a_tiled_bias_adds_what_the_broadcast_adds(rows, channels, reps):
    """A bias is tiled over the most rows that divide the output's rows and fit in
    `BIAS_KEEP_BYTES` (one row when even one does not fit); added to the output seen as
    rows of the tile's length it gives the broadcast's values, bit for bit."""
    rng = np.random.default_rng(rows)
    bias = rng.standard_normal(channels).astype(F32)
    tiled = float_conv.TiledBias(rows)(bias)
    assert tiled.shape == (reps * channels,)
    assert reps == 1 or tiled.nbytes <= float_conv.BIAS_KEEP_BYTES
    out = rng.standard_normal((rows, channels)).astype(F32)
    want = out + bias
    float_conv.clamp(out, tiled, None)
    assert np.array_equal(_bits(out), _bits(want))


def _depthwise64(x, w, strides, dilations, padding):
    """float64 depthwise convolution, one tap at a time over the zero-padded input."""
    from tflite_viewer.interpreter.kernels.common import window_geometry
    n, h, wd, c = x.shape
    _, kh, kw, _ = w.shape
    oh, ow, pt, pl = window_geometry((h, wd), (kh, kw), strides, dilations, padding)
    xp = np.zeros((n, h + kh * dilations[0] + oh * strides[0],
                   wd + kw * dilations[1] + ow * strides[1], c))
    xp[:, pt:pt + h, pl:pl + wd] = x
    out = np.zeros((n, oh, ow, c))
    for i in range(kh):
        for j in range(kw):
            y0, x0 = i * dilations[0], j * dilations[1]
            out += xp[:, y0:y0 + oh * strides[0]:strides[0],
                      x0:x0 + ow * strides[1]:strides[1]] * w[0, i, j]
    return out


@pytest.mark.parametrize("x_shape, kernel, strides, dilation_h, padding", [
    ((1, 48, 48, 16), (3, 3), (2, 2), 1, "SAME"), ((2, 9, 12, 5), (3, 3), (2, 2), 1, "VALID"),
    ((1, 10, 11, 7), (5, 5), (1, 2), 2, "SAME"), ((1, 6, 7, 3), (2, 4), (3, 2), 1, "SAME"),
    ((1, 5, 8, 4), (3, 1), (1, 2), 1, "VALID"), ((1, 1, 1, 64), (3, 3), (2, 2), 1, "SAME"),
    ((1, 12, 12, 96), (3, 3), (2, 2), 1, "SAME"), ((1, 7, 9, 4), (3, 3), (2, 3), 1, "SAME"),
    ((1, 8, 10, 6), (2, 5), (1, 4), 1, "VALID")])
def test_width_taps_are_the_depthwise_convolution(x_shape, kernel, strides, dilation_h,
                                                   padding):
    """A depthwise convolution of width stride over 1 read by planes of its columns
    (`WidthTaps`) against float64 taps over the zero-padded input, twice (the kept
    buffer's border stays zero)."""
    from tflite_viewer.interpreter.kernels.common import window_geometry
    rng = np.random.default_rng(sum(x_shape))
    x = rng.standard_normal(x_shape).astype(F32)
    w = rng.standard_normal((1, *kernel, x_shape[3])).astype(F32)
    b = rng.standard_normal(x_shape[3]).astype(F32)
    dilations = (dilation_h, 1)
    geometry = window_geometry(x_shape[1:3], kernel, strides, dilations, padding)
    plan = float_depthwise.DepthwisePlan(x_shape, w.shape, strides, dilations, geometry)
    assert plan.width_taps is not None
    want = _depthwise64(x, w, strides, dilations, padding) + b
    for _ in range(2):
        got = plan(x, w, b, None, reference=False)
        assert got.shape == want.shape and got.dtype == F32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        x = rng.standard_normal(x_shape).astype(F32)
        want = _depthwise64(x, w, strides, dilations, padding) + b


@pytest.mark.parametrize("x_shape, kernel, stride_h, padding, dtype", [
    ((1, 24, 24, 16), (3, 3), 2, "SAME", np.int8), ((2, 9, 11, 5), (5, 5), 1, "VALID", np.uint8),
    ((1, 7, 10, 64), (3, 2), 2, "SAME", np.int8), ((1, 6, 9, 3), (1, 3), 1, "SAME", np.uint8)])
def test_quantized_depthwise_by_phases_is_the_tap_sum(x_shape, kernel, stride_h, padding,
                                                       dtype):
    """An 8-bit depthwise convolution of width stride 2 read by phases gives the integers
    the strided taps give (its sums are exact: any order is the same)."""
    from tflite_viewer.interpreter.integer import conv as int_conv
    rng = np.random.default_rng(sum(x_shape))
    info = np.iinfo(dtype)
    c = x_shape[3]
    x = rng.integers(info.min, info.max + 1, x_shape).astype(dtype)
    w = rng.integers(info.min, info.max + 1, (1, *kernel, c)).astype(dtype)
    b = rng.integers(-5000, 5000, c).astype(np.int32)
    per_channel = dtype == np.int8
    zp = 0 if per_channel else 7
    wq = (rng.uniform(0.002, 0.02, c if per_channel else 1).astype(F32),
          np.full(c if per_channel else 1, 0 if per_channel else 120), 3)
    opts = {"stride_h": stride_h, "stride_w": 2, "padding": padding,
            "fused_activation_function": "RELU6", "depth_multiplier": 1}
    iq, oq = (0.05, zp), (0.08, zp - 3)
    p = int_conv.prepare_conv(iq, wq, oq, opts, dtype, c)
    phased = int_conv.plan_conv(x.shape, dtype, w.shape, dtype, opts, p, depthwise=True)
    strided = int_conv.plan_conv(x.shape, dtype, w.shape, dtype, opts, p, depthwise=True)
    assert phased.phases is not None
    strided.phases = None
    for _ in range(2):  # (the kept phase buffer's border stays the pad value)
        got = int_conv.depthwise_conv_2d(x, w, b, params=p, plan=phased)
        want = int_conv.depthwise_conv_2d(x, w, b, params=p, plan=strided)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        x = rng.integers(info.min, info.max + 1, x_shape).astype(dtype)


@pytest.mark.parametrize("shape, padding", [((1, 96, 96, 16), "VALID"), ((2, 7, 9, 5), "VALID"),
                                            ((1, 64, 64, 28), "SAME"), ((1, 5, 6, 3), "SAME")])
def test_a_2x2_max_pool_by_rows_then_columns_is_the_tap_maximum(shape, padding):
    """MAX_POOL_2D of 2x2 windows at stride 2 (rows compared whole, then columns) against
    the maximum of the four taps of the padded input; odd sizes under SAME take the
    general path."""
    from tflite_viewer.interpreter.kernels.common import window_geometry
    from tflite_viewer.interpreter.kernels.pooling import max_pool2d
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(F32)
    oh, ow, pt, pl = window_geometry(shape[1:3], (2, 2), (2, 2), (1, 1), padding)
    xp = np.full((shape[0], 2 * oh + pt + 1, 2 * ow + pl + 1, shape[3]), -np.inf, F32)
    xp[:, pt:pt + shape[1], pl:pl + shape[2]] = x
    want = np.max([xp[:, i:i + 2 * oh:2, j:j + 2 * ow:2] for i in (0, 1) for j in (0, 1)],
                  axis=0)
    assert np.array_equal(max_pool2d(x, 2, 2, 2, 2, padding), want)


@pytest.mark.parametrize("shape", [(1, 10), (1, 1001), (3, 7), (2, 3, 5), (4, 1)])
@pytest.mark.parametrize("beta", [1.0, 0.5, 2.5, -1.0])
def test_a_bound_softmax_is_the_reference_softmax(shape, beta):
    """The bound float32 SOFTMAX (`_softmax_plan`: layout and beta read once, beta 1
    multiplying nothing) gives `softmax`'s bits, special values included."""
    from tflite_viewer.interpreter.kernels.activations import _softmax_plan, softmax

    x = _inputs(np.random.default_rng(len(shape) * 7 + int(beta * 4)), shape)
    with np.errstate(all="ignore"):  # (the executor's, around every bound call)
        np.testing.assert_array_equal(_bits(_softmax_plan(shape, beta)(x)),
                                      _bits(softmax(x, beta)))


@pytest.mark.parametrize("shape,axes,keep", [((1, 3, 3, 1280), (1, 2), False),
                                             ((2, 5, 4, 3), (1, 2), True),
                                             ((2, 5, 4, 3), (0, 3), False),
                                             ((4, 6), (-1,), False), ((5,), (0,), True)])
def test_an_ordered_sum_plan_is_the_ordered_sum(shape, axes, keep):
    """`ordered_sum_plan` (what a bound MEAN runs) adds as `ordered_sum` always did: each
    output's elements one by one in memory order from +0 (checked against that loop)."""
    from tflite_viewer.interpreter.float32 import ordered_sum_plan

    x = np.random.default_rng(11).standard_normal(shape).astype(F32) * F32(1e3)
    got = ordered_sum_plan(shape, axes, keep)(x)
    axes = tuple(sorted(a % x.ndim for a in axes))
    kept = [a for a in range(x.ndim) if a not in axes]
    rows = np.transpose(x, kept + list(axes)).reshape(-1, int(np.prod([shape[a] for a in axes])))
    want = np.zeros(rows.shape[0], F32)
    for j in range(rows.shape[1]):
        want = (want + rows[:, j]).astype(F32)
    np.testing.assert_array_equal(_bits(got.reshape(-1)), _bits(want))
    assert got.shape == np.sum(x, axis=axes, keepdims=keep).shape


@pytest.mark.parametrize("act", [None, "RELU", "RELU6"])
@pytest.mark.parametrize("x_shape, w_shape, strides, bias", [
    ((1, 12, 12, 16), (96, 1, 1, 16), (1, 1), True),      # 1x1: the product alone
    ((1, 5, 7, 24), (8, 1, 1, 24), (1, 1), False),
    ((1, 3, 3, 112), (1280, 1, 1, 112), (1, 1), True),
    ((1, 48, 48, 16), (1, 3, 3, 16), (1, 1), True),       # depthwise, stride 1
    ((1, 48, 48, 48), (1, 3, 3, 48), (2, 2), True),       # by width planes
    ((1, 12, 12, 96), (1, 3, 3, 96), (2, 2), False),      # by width planes too
    ((1, 6, 6, 192), (1, 3, 3, 192), (2, 2), True),       # strided view
    ((2, 6, 6, 144), (1, 3, 3, 144), (1, 1), True)])
def test_a_plans_product_is_its_call(act, x_shape, w_shape, strides, bias):
    """`ConvPlan.product` and `DepthwisePlan.product` (a bound node's whole computation
    as a function of its input) give the plan's own call with BLAS sums, bit for bit."""
    from tflite_viewer.interpreter.kernels.common import _float_bounds, window_geometry
    from tflite_viewer.interpreter.kernels.conv import filter_matrix
    rng = np.random.default_rng(sum(x_shape) + sum(w_shape))
    x = rng.standard_normal(x_shape).astype(F32)
    w = rng.standard_normal(w_shape).astype(F32)
    depthwise = w_shape[0] == 1 and w_shape[3] == x_shape[3] and w_shape[1] > 1
    b = rng.standard_normal(w_shape[3 if depthwise else 0]).astype(F32) if bias else None
    bounds = None if act is None else _float_bounds(act, np.dtype(F32))
    geometry = window_geometry(x_shape[1:3], w_shape[1:3], strides, (1, 1), "SAME")
    if depthwise:
        plan = float_depthwise.DepthwisePlan(x_shape, w_shape, strides, (1, 1), geometry)
        want = plan(x, w, b, bounds, reference=False)
        run = plan.product(w, b, bounds, np.dtype(F32))
    else:
        plan = float_conv.ConvPlan(x_shape, w_shape, strides, (1, 1), geometry)
        want = plan(x, filter_matrix(w), b, bounds)
        run = plan.product(filter_matrix(w), b, bounds, np.dtype(F32))
    for _ in range(2):  # the views and buffers kept by the first call serve the second
        got = run(x)
        assert got.shape == want.shape and np.array_equal(_bits(got), _bits(want))
