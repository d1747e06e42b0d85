"""CONV_2D and DEPTHWISE_CONV_2D, uint8 / int8 per-channel and per-tensor / int16x8."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from tflite_viewer.interpreter.integer import conv

from .gen import ACTIVATIONS, LITERT_ROUNDING, rand_bias, rand_data, rand_filter, rand_q
from .harness import Case, check_cases
from tests.interpreter.singleop import Op, T

DTYPES = [np.uint8, np.int8, np.int16]


def _options(rng, depthwise: bool, mult: int = 1) -> dict:
    opts = {"padding": str(rng.choice(["SAME", "VALID"])),
            "stride_w": int(rng.integers(1, 4)), "stride_h": int(rng.integers(1, 4)),
            "dilation_w_factor": int(rng.choice([1, 1, 2, 3])),
            "dilation_h_factor": int(rng.choice([1, 1, 2])),
            "fused_activation_function": str(rng.choice(ACTIVATIONS))}
    if depthwise:
        opts["depth_multiplier"] = mult
    return opts


def _case(rng, dtype, depthwise: bool, per_channel: bool, grouped: bool = False) -> Case:
    b = int(rng.integers(1, 3))
    h, w = int(rng.integers(3, 10)), int(rng.integers(3, 10))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    cin = int(rng.integers(1, 6))
    if depthwise:
        mult = int(rng.integers(1, 4))
        cout = cin * mult
        fshape = (1, kh, kw, cout)
    else:
        mult = 1
        groups = int(rng.integers(2, 4)) if grouped else 1
        cin_f = cin
        cin = cin_f * groups
        cout = int(rng.integers(1, 5)) * groups
        fshape = (cout, kh, kw, cin_f)
    opts = _options(rng, depthwise, mult)
    if ((kh - 1) * opts["dilation_h_factor"] + 1 > h
            or (kw - 1) * opts["dilation_w_factor"] + 1 > w):
        opts["padding"] = "SAME"
    iq = rand_q(rng, dtype)
    k = kh * kw * (cin if not depthwise else 1)
    if dtype == np.uint8:
        fs, fzp = float(np.float32(rng.uniform(0.002, 0.02))), int(rng.integers(0, 256))
    else:
        nch = cout if per_channel else 1
        fs = np.float32(rng.uniform(0.002, 0.02, size=nch))
        fzp = 0
    typical = iq[0] * float(np.mean(fs)) * 100 * np.sqrt(k)
    oq = rand_q(rng, dtype, typical / 8, typical * 2)
    x = rand_data(rng, (b, h, w, cin), dtype)
    f = rand_filter(rng, fshape, dtype)
    bias = rand_bias(rng, cout, dtype)
    bias_scale = iq[0] * np.asarray(fs, np.float64)
    qdim = 3 if depthwise else 0
    inputs = [T((b, h, w, cin), dtype, *iq),
              T.const(f, fs, fzp, quantized_dimension=qdim),
              T.const(bias, bias_scale, 0, quantized_dimension=0)]
    name = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    if dtype == np.int16:
        version = 5 if depthwise else 4
    else:
        version = 3 if not grouped else 6
    if not depthwise and dtype == np.int16:
        opts["quantized_bias_type"] = "INT64"
    # the output shape is computed by LiteRT at prepare; give a placeholder of rank 4
    out = T((b, 1, 1, cout), dtype, *oq)
    options_type = "DepthwiseConv2DOptions" if depthwise else "Conv2DOptions"
    op = Op(name, inputs, [out], options_type, opts, version)
    fn = conv.depthwise_conv_2d if depthwise else conv.conv_2d
    kernel_opts = {k2: v for k2, v in opts.items() if k2 != "quantized_bias_type"}
    label = f"{name} {np.dtype(dtype).name} per_channel={per_channel} {kernel_opts} x{x.shape} f{f.shape}"
    return Case(op, [x], partial(fn, x, f, bias, iq, (fs, fzp), oq, kernel_opts, LITERT_ROUNDING),
                label)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_conv2d(dtype):
    rng = np.random.default_rng(1 + DTYPES.index(dtype))
    cases = [_case(rng, dtype, False, per_channel=bool(i % 2)) for i in range(300)]
    assert check_cases(cases, compare_builtin=True) == 300


@pytest.mark.parametrize("dtype", [np.int8], ids=lambda d: np.dtype(d).name)
def test_grouped_conv2d(dtype):
    rng = np.random.default_rng(7)
    cases = [_case(rng, dtype, False, per_channel=True, grouped=True) for _ in range(60)]
    assert check_cases(cases) == 60


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_depthwise_conv2d(dtype):
    rng = np.random.default_rng(11 + DTYPES.index(dtype))
    cases = [_case(rng, dtype, True, per_channel=bool(i % 2)) for i in range(300)]
    assert check_cases(cases, compare_builtin=True) == 300


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "depthwise"])
def test_float_tail_matches_integer_path(depthwise, monkeypatch):
    """The 8-bit kernels' float path (raw-input sums, offsets folded into the bias, the
    float64 tail) against their integer path (offset inputs, int32 accumulator, int64
    Requantizer), on random cases of both roundings."""
    from tflite_viewer.interpreter import quant_math as qm
    rng = np.random.default_rng(21 + depthwise)
    calls = [_case(rng, dtype, depthwise, per_channel=bool(i % 2)).ours
             for i in range(150) for dtype in (np.uint8, np.int8)]

    def run(call, rounding):
        return call.func(*call.args[:-1], rounding)
    fast = {r: [run(c, r) for c in calls] for r in ("double", "single")}
    monkeypatch.setattr(qm.FloatRequantizer, "build", classmethod(lambda cls, *a, **k: None))
    for r in ("double", "single"):
        for c, want in zip(calls, fast[r]):
            np.testing.assert_array_equal(run(c, r), want)


@pytest.mark.parametrize("size", [(2, 9, 7, 6), (1, 230, 230, 6)], ids=["kept", "too big"])
def test_a_depthwise_plan_reused_on_new_inputs_computes_each_alone(size, numpy_kernels):
    """A depthwise plan keeps its padded input buffer between calls (up to
    `PAD_KEEP_BYTES`): calls on other inputs through the same plan give what a fresh plan
    gives, and a buffer over the limit is not kept."""
    rng = np.random.default_rng(4)
    b, h, w, c = size
    opts = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "dilation_w_factor": 1,
            "dilation_h_factor": 1, "fused_activation_function": "RELU6",
            "depth_multiplier": 1}
    iq, oq = (0.05, 3), (0.08, -5)
    fq = (np.float32(rng.uniform(0.002, 0.02, size=c)), 0)
    f = rand_filter(rng, (1, 3, 3, c), np.int8)
    bias = rand_bias(rng, c, np.int8)
    xs = [rand_data(rng, size, np.int8) for _ in range(2)]
    p = conv.prepare_conv(iq, fq, oq, opts, np.int8, c, LITERT_ROUNDING)
    plan = conv.plan_conv(size, np.int8, f.shape, np.int8, opts, p, depthwise=True)
    ftaps = conv.depthwise_filter(f, p.filter_offset, plan.ftype)
    shared = [conv.depthwise_conv_2d(x, f, bias, options=opts, params=p, ftaps=ftaps,
                                     plan=plan) for x in xs + xs[:1]]
    fresh = [conv.depthwise_conv_2d(x, f, bias, iq, fq, oq, opts, LITERT_ROUNDING)
             for x in xs]
    np.testing.assert_array_equal(shared[0], fresh[0])
    np.testing.assert_array_equal(shared[1], fresh[1])
    np.testing.assert_array_equal(shared[2], fresh[0])
    assert (plan.padded[1] is None) == (size[1] == 230)
