"""The compiled kernels (`interpreter.compiled`, numba) and the numpy forms they replace.

Truth: LiteRT's reference kernels on one-op models, bit for bit.  The compiled float
DEPTHWISE_CONV_2D adds its taps in the reference kernel's order whatever sums are asked,
so its outputs are REF's bits under ``auto`` too; the 8-bit DEPTHWISE_CONV_2D and CONV_2D
are exact in both forms.  Each case runs with compiled kernels and with numpy alone
(`kernel_forms`), through the nodes' bound plans and through their kernels' invoke, on
shapes that reach every loop: rows cut at the image's edges, width strides over 1,
dilations, depth multipliers, batches of two, few and many channels.
"""
from __future__ import annotations

import os
import subprocess
import sys

import flatbuffers
import numpy as np
import pytest

from .conv_pool_models import _activation_quant, _bias, _ints, _quantized_model, _weights
from .singleop import Input, run_litert
from tflite_viewer.interpreter import Interpreter, compiled
from tflite_viewer.schema import schema_generated as S

#: (name, x shape, kernel, stride, dilation, padding, depth multiplier, activation)
DEPTHWISE = [
    ("rows", (1, 9, 11, 16), (3, 3), (1, 1), (1, 1), "SAME", 1, "RELU6"),
    ("rows-dilated-valid", (2, 10, 12, 8), (3, 3), (1, 1), (2, 2), "VALID", 1, "NONE"),
    ("rows-wide-kernel", (1, 6, 7, 24), (2, 5), (2, 1), (1, 3), "SAME", 1, "RELU"),
    ("stride-2", (1, 12, 12, 48), (3, 3), (2, 2), (1, 1), "SAME", 1, "RELU6"),
    ("stride-3-multiplier", (2, 9, 10, 3), (3, 3), (3, 3), (1, 1), "SAME", 2, "RELU_N1_TO_1"),
    ("multiplier-rows", (1, 8, 8, 5), (3, 3), (1, 1), (1, 1), "SAME", 3, "NONE"),
    ("one-channel", (1, 7, 7, 1), (3, 3), (1, 2), (1, 1), "VALID", 1, "RELU"),
    ("one-channel-multiplier", (2, 9, 9, 1), (3, 3), (2, 2), (1, 1), "SAME", 8, "RELU6"),
]
CONV = [  # (name, x shape, filter OHWI, stride, padding, activation)
    ("1x1", (1, 12, 12, 8), (24, 1, 1, 8), 1, "SAME", "RELU6"),
    ("3x3-stride-2", (2, 9, 9, 3), (16, 3, 3, 3), 2, "SAME", "NONE"),
    ("3x3-valid", (1, 8, 8, 16), (8, 3, 3, 16), 1, "VALID", "RELU"),
]


def _depthwise_model(config: str, case, rng):
    _, x_shape, (kh, kw), (sh, sw), (dh, dw), padding, mult, act = case
    channels = x_shape[3] * mult
    dtype = {"FLOAT32": np.float32, "HYBRID_PER_CHANNEL": np.float32,
             "UINT8": np.uint8}.get(config, np.int8)
    q_in = None if dtype == np.float32 else _activation_quant(rng, dtype)
    q_out = None if dtype == np.float32 else _activation_quant(rng, dtype)
    w, w_q = _weights(rng, config, (1, kh, kw, channels), 3)
    b, b_q = _bias(rng, config, channels, None if q_in is None else q_in[0], w_q)
    opts = {"padding": padding, "stride_w": sw, "stride_h": sh, "dilation_w_factor": dw,
            "dilation_h_factor": dh, "depth_multiplier": mult, "fused_activation_function": act}
    version = 6 if dh * dw > 1 or config.startswith("HYBRID") else 3
    model = _quantized_model("DEPTHWISE_CONV_2D", [Input(x_shape, dtype, q_in), w, b], dtype,
                             q_out, "DepthwiseConv2DOptions", opts, version, {1: w_q, 2: b_q})
    x = (rng.standard_normal(x_shape) * 2).astype(np.float32) if dtype == np.float32 \
        else _ints(rng, dtype, x_shape)
    return model, x


@pytest.mark.parametrize("case", [DEPTHWISE[0], DEPTHWISE[3], DEPTHWISE[4]],
                         ids=[DEPTHWISE[k][0] for k in (0, 3, 4)])
@pytest.mark.parametrize("config", ["INT8_PER_CHANNEL", "UINT8"])
def test_depthwise_with_a_bias_that_wraps_the_accumulator(case, config, kernel_forms):
    """Channels biased to within a few thousand of int32's ends (efficientnet_lite0 has
    dead channels biased by 2^30): the accumulator plus the bias can wrap C's int32, the
    float formula cannot be exact, and the compiled loop requantizes in integers, the
    wrap-around included (`compiled_loops._store_int`)."""
    rng = np.random.default_rng(sum(map(ord, case[0] + config)))
    model, x = _depthwise_model(config, case, rng)
    m = S.ModelT.InitFromPackedBuf(model, 0)
    buffer = m.buffers[m.subgraphs[0].tensors[m.subgraphs[0].operators[0].inputs[2]].buffer]
    bias = np.frombuffer(bytes(buffer.data), np.int32).copy()
    bias[::3], bias[1::3] = (1 << 31) - 3000, -(1 << 31) + 3000
    buffer.data = np.frombuffer(bias.tobytes(), np.uint8)
    builder = flatbuffers.Builder(0)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    model = bytes(builder.Output())
    want = run_litert(model, [x])[0]
    for bind in (True, False):
        for k, got in enumerate(_ours(model, x, "auto", bind)):
            _assert_bits(got, want, f"bound {bind}, invoke {k}")
    assert len(np.unique(want)) > 2


def _conv_model(config: str, case, rng):
    _, x_shape, w_shape, stride, padding, act = case
    hybrid = config.startswith("HYBRID")
    dtype = np.float32 if hybrid else np.uint8 if config == "UINT8" else np.int8
    q_in = None if hybrid else _activation_quant(rng, dtype)
    q_out = None if hybrid else _activation_quant(rng, dtype)
    w, w_q = _weights(rng, config, w_shape, 0)
    b, b_q = _bias(rng, config, w_shape[0], None if hybrid else q_in[0], w_q)
    opts = {"padding": padding, "stride_w": stride, "stride_h": stride,
            "fused_activation_function": act}
    model = _quantized_model("CONV_2D", [Input(x_shape, dtype, q_in), w, b], dtype, q_out,
                             "Conv2DOptions", opts, 5 if hybrid else 3, {1: w_q, 2: b_q})
    x = (rng.standard_normal(x_shape) * 2).astype(np.float32) if hybrid \
        else _ints(rng, dtype, x_shape)
    return model, x


def _ours(model: bytes, x: np.ndarray, sums: str, bind: bool) -> list[np.ndarray]:
    """Outputs of three invokes (a run with no re-preparation binds the plan: the later
    ones take the bound nodes where ``bind``)."""
    it = Interpreter(model, float_sums=sums)
    it.bind_kernels = bind
    return [next(iter(it.invoke([x]).values())) for _ in range(3)]


def _assert_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, what
    if got.dtype == np.float32:  # the same bits, -0 and NaN's included
        got, want = got.view(np.int32), want.view(np.int32)
    np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("case", DEPTHWISE, ids=[c[0] for c in DEPTHWISE])
@pytest.mark.parametrize("config", ["FLOAT32", "INT8_PER_CHANNEL", "UINT8",
                                    "HYBRID_PER_CHANNEL"])
def test_depthwise_is_litert_reference_bits(case, config, kernel_forms):
    rng = np.random.default_rng(sum(map(ord, case[0] + config)))
    model, x = _depthwise_model(config, case, rng)
    want = run_litert(model, [x])[0]
    # numpy's fast float sums are an einsum (a rounding off REF): bits in reference order
    sums = ["reference"] if config == "FLOAT32" and kernel_forms == "numpy" \
        else ["auto", "reference"]
    for s in sums:
        for bind in (True, False):
            for k, got in enumerate(_ours(model, x, s, bind)):
                _assert_bits(got, want, f"{s} sums, bound {bind}, invoke {k}")


@pytest.mark.parametrize("case", CONV, ids=[c[0] for c in CONV])
@pytest.mark.parametrize("config", ["INT8_PER_CHANNEL", "INT8", "UINT8", "HYBRID",
                                    "HYBRID_PER_CHANNEL"])
def test_8bit_convolution_is_litert_reference_bits(case, config, kernel_forms):
    rng = np.random.default_rng(sum(map(ord, case[0] + config)))
    assert_litert_bits(*_conv_model(config, case, rng))


def assert_litert_bits(model: bytes, x: np.ndarray) -> None:
    """Our outputs of ``model`` on ``x``, bound and invoked, three invokes each, are
    LiteRT's reference kernels' bits."""
    want = run_litert(model, [x])[0]
    for bind in (True, False):
        for k, got in enumerate(_ours(model, x, "auto", bind)):
            _assert_bits(got, want, f"bound {bind}, invoke {k}")


def test_the_compiled_kernels_run_where_numba_is_installed(monkeypatch):
    """numba is a dependency: its loops load, and switching them off (what the
    environment variable does at import) leaves every caller its numpy form."""
    assert compiled.loops() is not None
    monkeypatch.setattr(compiled, "ON", False)
    assert compiled.loops() is None
    assert [compiled.asked_for(v) for v in (None, "", "0", "1", "yes")] == \
        [True, True, True, False, False]


def test_the_environment_variable_turns_them_off_in_a_new_process():
    code = "from tflite_viewer.interpreter import compiled; print(compiled.loops() is None)"
    for value, off in (("1", "True"), ("0", "False")):
        env = {**os.environ, compiled.DISABLE_ENV: value}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()
        assert out == off


def bound_8bit_nodes(seed: int):
    """(rng, input, the bound node's compiled function) of four one-node 8-bit models
    (int8 and uint8 depthwise, 1x1 and 3x3 stride-2 convolutions), each after two invokes
    (the second binds the plan)."""
    for build, case, config in [(_depthwise_model, DEPTHWISE[0], "INT8_PER_CHANNEL"),
                                (_depthwise_model, DEPTHWISE[3], "UINT8"),
                                (_conv_model, CONV[0], "INT8_PER_CHANNEL"),
                                (_conv_model, CONV[1], "INT8")]:
        rng = np.random.default_rng(seed)
        model, x = build(config, case, rng)
        it = Interpreter(model)
        for _ in range(2):
            it.invoke([x])
        (_, fn, _), = it.entry.plan_steps
        yield rng, x, fn.batched[2]


def test_a_batch_stacked_on_the_first_axis_is_computed_as_each_alone():
    """A bound 8-bit node's compiled function takes a batch of inputs stacked on the first
    axis (the quantization analysis's fallback cone, tests/quant/test_fallback_cone.py):
    each output as the input alone gives, and nothing written past the output (the loops
    do not check their indices)."""
    for rng, x, run in bound_8bit_nodes(seed=5):
        xs = [_ints(rng, x.dtype, x.shape) for _ in range(3)]
        stacked = run(np.concatenate(xs))
        alone = [run(v) for v in xs]
        assert stacked.shape[0] == 3 * x.shape[0]
        np.testing.assert_array_equal(stacked, np.concatenate(alone))


def _quantizer_rows() -> list[np.ndarray]:
    """Rows whose scaled values fall on halves in the vector part (the first multiple of 8
    values) and in the rest, rows of every length mod 8, a zero row, a subnormal one."""
    rng = np.random.default_rng(11)
    rows = []
    for n in (1, 7, 8, 13, 64, 1001):
        x = (rng.standard_normal(n) * rng.choice([1e-3, 1.0, 1e3])).astype(np.float32)
        rows.append(x)
        ties = x.copy()
        top = np.float32(np.abs(x).max())
        ties[::2] = top * np.float32(np.arange(ties[::2].size) % 255 - 127) / np.float32(254)
        rows.append(ties)
    # ranges of 255 (scale 1: y is x itself): every value a half, in both parts
    halves = np.arange(13, dtype=np.float32) * np.float32(19) + np.float32(0.5)
    rows.append(np.concatenate([[np.float32(255)], halves]))
    rows.append(np.concatenate([[np.float32(-128), np.float32(127)],
                                np.float32(126) - halves[:7], np.float32(-0.5) - halves[:10]]))
    return rows + [np.zeros(9, np.float32), np.array([0.0, 1e-38, -1e-38], np.float32)]


@pytest.mark.parametrize("k", range(len(_quantizer_rows())))
def test_the_compiled_row_quantizer_equals_numpys(k, monkeypatch):
    """The hybrid kernels' input quantizer (NeonAsymmetricQuantizeFloats) in its compiled
    pass and in numpy's (which the hybrid tests check against LiteRT): the same values,
    NaN where both give NaN (a subnormal row's infinite inverse scale)."""
    from tflite_viewer.interpreter.integer import hybrid
    row = _quantizer_rows()[k][None, :]
    with np.errstate(all="ignore"):
        fast = hybrid.asymmetric_quantize(row, as_float=True)
        monkeypatch.setattr(compiled, "ON", False)
        slow = hybrid.asymmetric_quantize(row, as_float=True)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


def test_warm_loads_every_loop_before_a_fork():
    """`compiled.warm` (called by the analysis before it forks its workers) leaves every
    compiled loop with machine code for the int8, uint8 and float32 forms the kernels
    call, so a forked worker inherits it instead of importing numba and loading it."""
    from numba.core.registry import CPUDispatcher

    from tflite_viewer.interpreter import compiled_loops
    compiled.warm()
    loops = {name: fn for name, fn in vars(compiled_loops).items()
             if isinstance(fn, CPUDispatcher) and not name.startswith("_")}
    assert {"depthwise_f32", "depthwise_rows_f32", "depthwise_int", "depthwise_rows_int",
            "requantize_float", "neon_quantize_row"} <= set(loops)
    for name, fn in loops.items():
        assert fn.signatures, name
    kinds = {str(sig[0].dtype) for sig in compiled_loops.depthwise_int.signatures}
    assert {"int8", "uint8"} <= kinds
