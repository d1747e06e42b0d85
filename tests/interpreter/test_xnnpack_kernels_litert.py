"""The ``xnnpack`` kernel set, op by op, against LiteRT 2.3.0's default interpreter (its
XNNPACK delegate applied, OpResolverType.BUILTIN) on this machine's x86-64 CPU with
AVX-512 and AVX512-VNNI.

Each op runs alone in a model XNNPACK takes whole (asserted: LiteRT lists a DELEGATE node),
on inputs that reach the approximations' edges (clamps, subnormals, infinities, tails of
fewer than 16 lanes, rows of every length to 1,000), and every output must have LiteRT's
bits.  Each family also shows that the builtin set computes some of them otherwise, so no
test could pass with one kernel standing in for the other.  A sample runs in CI; the long
sweeps (every length, many shapes) are in the slow tier.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.litert_oracle import litert
from tflite_viewer.interpreter import Interpreter, UnsupportedOpError

from .llm_models import A, Blockwise, OpSpec, PerChannel, PerTensor, W, write_model
from .singleop import Input, Op, graph_model, single_op_model

F32 = np.float32


def litert_default(model: bytes, inputs) -> np.ndarray:
    """LiteRT's output with its default delegate; the op must be XNNPACK's."""
    li = litert(model, "BUILTIN", preserve=False)
    for d, x in zip(li.get_input_details(), inputs):
        if tuple(d["shape"]) != np.shape(x):
            li.resize_tensor_input(d["index"], np.shape(x))
    li.allocate_tensors()
    assert "DELEGATE" in [op["op_name"] for op in li._get_ops_details()]
    for d, x in zip(li.get_input_details(), inputs):
        li.set_tensor(d["index"], np.asarray(x, d["dtype"]))
    li.invoke()
    return li.get_tensor(li.get_output_details()[0]["index"])


def ours(model: bytes, inputs, kernels: str = "xnnpack") -> np.ndarray:
    interp = Interpreter(model, kernels=kernels, float_sums="reference")
    return list(interp.invoke(list(inputs)).values())[0]


def bits_apart(a: np.ndarray, b: np.ndarray) -> int:
    assert a.shape == b.shape and a.dtype == b.dtype == F32, (a.shape, b.shape, a.dtype)
    return int(np.count_nonzero((a.view(np.uint32) != b.view(np.uint32))
                                & ~(np.isnan(a) & np.isnan(b))))


def check(model: bytes, inputs, what: str) -> int:
    """Ours equals LiteRT's default path bit for bit; how many values the builtin set
    gives otherwise (0 where the builtin set refuses the model: its blockwise kernel
    needs 4 output channels, XNNPACK does not)."""
    ref = litert_default(model, inputs)
    assert bits_apart(ours(model, inputs), ref) == 0, what
    try:
        return bits_apart(ours(model, inputs, "builtin"), ref)
    except UnsupportedOpError:
        return 0


def _values(rng, n: int) -> np.ndarray:
    """Normal values at several scales, past the approximations' clamps, and the edges."""
    x = np.concatenate([rng.standard_normal(n) * 3, rng.uniform(-12, 12, n),
                        rng.standard_normal(n) * 1e-3,
                        [0.0, -0.0, 1e-40, -1e-40, 5.2, -5.2, 7.99, -8.0, 88.0, -88.0,
                         100.0, -100.0, 1e6, -1e6, np.inf, -np.inf]])
    return x.astype(F32)


# -- elementwise: SIN, COS, GELU (both forms), TANH, LOGISTIC, RSQRT ------------------------
UNARY = [("SIN", None, {}), ("COS", None, {}), ("TANH", None, {}), ("LOGISTIC", None, {}),
         ("GELU", "GeluOptions", {"approximate": True}),
         ("GELU", "GeluOptions", {"approximate": False})]


@pytest.mark.parametrize("op,options_type,options", UNARY,
                         ids=["SIN", "COS", "TANH", "LOGISTIC", "GELU-tanh", "GELU-erf"])
def test_unary_ops_have_xnnpacks_bits(op, options_type, options):
    x = _values(np.random.default_rng(1), 20000)
    model = single_op_model(op, [Input(x.shape)], [F32], options_type, options,
                            output_shapes=[x.shape])
    with np.errstate(all="ignore"):
        assert check(model, [x], op) > 100


def test_rsqrt_has_xnnpacks_bits_over_every_binade():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.uniform(0, 4, 50000), 10.0 ** rng.uniform(-37, 38, 50000),
                        [0.25, 0.5, 1, 2, 4, 1e-38, 1e38, 3e38, 1e-40, 0.0, np.inf]]).astype(F32)
    model = single_op_model("RSQRT", [Input(x.shape)], [F32], output_shapes=[x.shape])
    with np.errstate(all="ignore"):
        assert check(model, [x], "RSQRT") > 1000


@pytest.mark.slow
def test_rsqrt_every_float_of_one_to_four():
    """All 2**24 float32 values of [1, 4), where VRSQRT14PS's 64 segments lie: XNNPACK's
    Newton step on the estimate gives LiteRT's bits on every one."""
    x = np.arange(0x3F800000, 0x40800000, dtype=np.uint32).view(F32)
    model = single_op_model("RSQRT", [Input(x.shape)], [F32], output_shapes=[x.shape])
    ref = litert_default(model, [x])
    for start in range(0, x.size, 1 << 21):
        part = x[start:start + (1 << 21)]
        m = single_op_model("RSQRT", [Input(part.shape)], [F32], output_shapes=[part.shape])
        assert bits_apart(ours(m, [part]), ref[start:start + (1 << 21)]) == 0, start


# -- SOFTMAX and MEAN / SUM: lane sums ---------------------------------------------------
LENGTHS = [1, 3, 15, 16, 17, 31, 33, 63, 64, 65, 100, 129]
LONG = [200, 257, 511, 1000]


def _rows(rng, n: int, rows: int = 5) -> np.ndarray:
    x = (rng.standard_normal((rows, n)) * rng.uniform(0.1, 30)).astype(F32)
    if n > 4:
        x[0, 3] = -np.inf  # a masked position
        x[1, : n // 2] -= F32(86.5)  # exponentials near the denormal cut-off
    return x


@pytest.mark.parametrize("n", LENGTHS + [pytest.param(n, marks=pytest.mark.slow) for n in LONG])
def test_softmax_rows(n):
    x = _rows(np.random.default_rng(n), n)
    model = single_op_model("SOFTMAX", [Input(x.shape)], [F32], "SoftmaxOptions",
                            {"beta": 1.0}, output_shapes=[x.shape])
    with np.errstate(all="ignore"):
        check(model, [x], f"SOFTMAX n={n}")


def _mean_model(shape, axes, square: bool, op: str = "MEAN") -> bytes:
    out = tuple(1 if i in axes else d for i, d in enumerate(shape))
    ax = np.array(axes, np.int32)
    if not square:
        return graph_model([(shape, F32), (ax,), (out, F32)],
                           [Op(op, [0, 1], [2], "ReducerOptions", {"keep_dims": True})], [0], [2])
    return graph_model([(shape, F32), (ax,), (shape, F32), (out, F32)],
                       [Op("MUL", [0, 0], [2], "MulOptions", {}),
                        Op(op, [2, 1], [3], "ReducerOptions", {"keep_dims": True})], [0], [3])


@pytest.mark.parametrize("square", [False, True], ids=["mean", "mean-of-squares"])
def test_mean_over_the_last_axis(square):
    """MEAN (of MUL(x, x), which XNNPACK rewrites into one FMA sum of squares) over rows of
    every length; the builtin set sums otherwise."""
    rng = np.random.default_rng(3)
    apart = 0
    for n in LENGTHS + LONG:
        x = (rng.standard_normal((1, 3, n)) * rng.uniform(0.1, 30)).astype(F32)
        apart += check(_mean_model(x.shape, [2], square), [x], f"n={n} square={square}")
    assert apart > 0


def test_sum_and_mean_over_merged_trailing_axes():
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((2, 1, 6, 40)) * 5).astype(F32)
    check(_mean_model(x.shape, [2, 3], False, "SUM"), [x], "SUM over axes 2, 3")
    check(_mean_model(x.shape, [1, 2, 3], True), [x], "MEAN of squares over 1..3")


# -- FULLY_CONNECTED and BATCH_MATMUL -------------------------------------------------------
def _fc(m, k, n, weights, bias, act="NONE") -> bytes:
    tensors = [A((m, k), "FLOAT32"), weights] + ([W(bias)] if bias is not None else []) \
        + [A((m, n), "FLOAT32")]
    out = len(tensors) - 1
    ins = [0, 1, 2 if bias is not None else -1]
    return write_model(tensors, [OpSpec("FULLY_CONNECTED", ins, [out], "FullyConnectedOptions",
                                        {"fused_activation_function": act})],
                       inputs=[0], outputs=[out])


def _fc_cases(rng, count: int):
    for trial in range(count):
        m, k, n = int(rng.integers(1, 9)), 4 * int(rng.integers(1, 75)), int(rng.integers(1, 150))
        bias = rng.standard_normal(n).astype(F32) if trial % 2 else None
        act = ("NONE", "RELU")[trial % 3 == 0]
        x = (rng.standard_normal((m, k)) * rng.uniform(0.1, 10)).astype(F32)
        yield trial, m, k, n, bias, act, x


@pytest.mark.parametrize("form", ["float32", "int8 per-channel", "int8 per-tensor",
                                  "int4 per-channel", "int2 per-channel"])
def test_fully_connected(form, request):
    rng = np.random.default_rng(5)
    count = 40 if request.config.getoption("--run-slow") else 8
    apart = 0
    for trial, m, k, n, bias, act, x in _fc_cases(rng, count):
        if form == "float32":
            w = W(rng.standard_normal((n, k)).astype(F32))
        else:
            bits = form.split()[0].upper()
            lim = {"INT8": 127, "INT4": 7, "INT2": 1}[bits]
            q = rng.integers(-lim - (bits == "INT2"), lim + 1, (n, k)).astype(np.int8)
            scales = rng.uniform(0.001, 0.05, n).astype(F32)
            quant = PerTensor(float(scales[0])) if "tensor" in form else PerChannel(scales)
            w = W(q, bits, quant)
        apart += check(_fc(m, k, n, w, bias, act), [x], f"{form} trial {trial}")
    if form == "float32":
        assert apart > 0  # the builtin set's Eigen product sums otherwise


@pytest.mark.parametrize("block", [32, 64, 128])
def test_fully_connected_int4_blockwise(block):
    """float16 block scales rounded to bfloat16, a per-column term of group sums, one FMA
    per block, the unsigned (qdu8) zero point: LiteRT's bits; the builtin kernels (exact
    float16 scales) are far from them."""
    rng = np.random.default_rng(block)
    apart = 0
    for trial in range(6):
        m, n, blocks = int(rng.integers(1, 6)), int(rng.integers(1, 70)), int(rng.integers(1, 4))
        k = block * blocks
        q = rng.integers(-8, 8, (n, k)).astype(np.int8)
        scales = rng.uniform(0.002, 0.05, (n, blocks)).astype(np.float16)
        bias = rng.standard_normal(n).astype(F32) if trial % 2 else None
        x = (rng.standard_normal((m, k)) * rng.uniform(0.1, 5)).astype(F32)
        tensors = [A((m, k), "FLOAT32"), W(q, "INT4", Blockwise(2, block)), W(scales)] \
            + ([W(bias)] if bias is not None else []) + [A((m, n), "FLOAT32")]
        out = len(tensors) - 1
        model = write_model(tensors, [OpSpec("FULLY_CONNECTED",
                                             [0, 1, 3 if bias is not None else -1], [out],
                                             "FullyConnectedOptions", {})],
                            inputs=[0], outputs=[out])
        apart += check(model, [x], f"block {block} trial {trial}")
    assert apart > 0


@pytest.mark.parametrize("a_shape,b_shape,adj_x,adj_y", [
    ((1, 2, 16, 16), (1, 2, 16, 32), False, False), ((2, 8, 64), (2, 64, 5), False, False),
    ((1, 4, 1, 16), (1, 4, 32, 16), False, True), ((3, 7, 9), (3, 7, 9), True, False),
    ((4, 1, 300), (1, 300, 40), False, False)])
def test_batch_matmul(a_shape, b_shape, adj_x, adj_y):
    """One FMA per depth step from +0 (the builtin kernel rounds each product apart)."""
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal(a_shape).astype(F32), rng.standard_normal(b_shape).astype(F32)
    shape = np.matmul(np.swapaxes(a, -1, -2) if adj_x else a,
                      np.swapaxes(b, -1, -2) if adj_y else b).shape
    model = single_op_model("BATCH_MATMUL", [Input(a_shape), Input(b_shape)], [F32],
                            "BatchMatMulOptions", {"adj_x": adj_x, "adj_y": adj_y},
                            output_shapes=[shape])
    assert check(model, [a, b], "BATCH_MATMUL") > 0


def test_an_op_xnnpack_leaves_to_litert_keeps_the_builtin_kernel():
    """A float FULLY_CONNECTED whose weights are a runtime input is not the delegate's
    (its weights must be static): it runs LiteRT's builtin kernel, as it does here."""
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((3, 40)).astype(F32), rng.standard_normal((20, 40)).astype(F32)
    model = single_op_model("FULLY_CONNECTED", [Input(x.shape), Input(w.shape)], [F32],
                            "FullyConnectedOptions", {}, output_shapes=[(3, 20)])
    li = litert(model, "BUILTIN", preserve=False)
    li.allocate_tensors()
    assert "DELEGATE" not in [op["op_name"] for op in li._get_ops_details()]
    li.set_tensor(li.get_input_details()[0]["index"], x)
    li.set_tensor(li.get_input_details()[1]["index"], w)
    li.invoke()
    ref = li.get_tensor(li.get_output_details()[0]["index"])
    interp = Interpreter(model, kernels="xnnpack", float_sums="reference")
    assert interp.xnnpack.partition(0, 0) is None
    assert bits_apart(list(interp.invoke([x, w]).values())[0], ref) == 0


def test_a_reduction_xnnpack_runs_another_way_is_named_not_passed_off():
    """A MEAN over a middle axis is XNNPACK's (its discontiguous rdsum kernel), which this
    set does not reproduce: it runs the builtin kernel and `unreproduced` names it."""
    from tflite_viewer.interpreter.xnnpack_kernels import unreproduced
    model = _mean_model((2, 3, 4), [1], False)
    interp = Interpreter(model, kernels="xnnpack")
    assert interp.xnnpack.partition(0, 0) is not None
    assert unreproduced(interp) == [(0, 0, "MEAN")]
    assert unreproduced(Interpreter(_mean_model((2, 3, 4), [2], False), kernels="xnnpack")) == []
