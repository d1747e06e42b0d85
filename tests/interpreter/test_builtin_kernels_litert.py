"""The float ops of an LLM's decoder path as LiteRT 2.3.0 computes them, to the bit, in
both of its kernel sets (`tflite_viewer.interpreter.kernel_sets`): the reference kernels
(BUILTIN_REF) and the builtin ones (BUILTIN_WITHOUT_DEFAULT_DELEGATES: its optimized
kernels without the XNNPACK delegate).

Each op runs alone, on inputs that reach the places where an approximation differs from
another (tails of fewer than 4 elements, rows whose start is not 16-byte aligned, values
past the functions' clamps, -inf in a softmax row), and every output must have LiteRT's
bits.  Where the two kernel sets differ, the test also shows that they do (so it could not
pass with one kernel standing in for both).
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.kernel_sets import RESOLVERS
from tflite_viewer.model import load_model

from .llm_models import litert_run
from .singleop import Input, single_op_model

F32 = np.float32
SETS = ("reference", "builtin")


def litert_out(model: bytes, inputs, kernels: str) -> np.ndarray:
    """LiteRT's output with the resolver of a kernel set (no delegate)."""
    out = load_model(model).subgraphs[0].outputs[0]
    return litert_run(model, [np.asarray(x) for x in inputs], RESOLVERS[kernels])[out]


def ours_out(model: bytes, inputs, kernels: str) -> np.ndarray:
    """Our output under ``kernels`` with float sums in that set's order (the default, BLAS,
    is a rounding off on products)."""
    interp = Interpreter(model, kernels=kernels, float_sums="reference")
    return list(interp.invoke(list(inputs)).values())[0]


def differing(a: np.ndarray, b: np.ndarray) -> int:
    """Elements whose bits differ (NaN matching NaN)."""
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    bits = a.dtype.itemsize * 8
    ia, ib = a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}")
    assert bits in (16, 32)
    return int(np.count_nonzero((ia != ib) & ~(np.isnan(a) & np.isnan(b))))


def assert_both_sets(model: bytes, inputs, what: str) -> dict[str, np.ndarray]:
    """Ours equals LiteRT bit for bit under each kernel set; LiteRT's outputs by set."""
    refs = {}
    for kernels in SETS:
        ref = litert_out(model, inputs, kernels)
        ours = ours_out(model, inputs, kernels)
        assert differing(ours, ref) == 0, \
            f"{what} ({kernels}): {differing(ours, ref)} of {ref.size} elements differ"
        refs[kernels] = ref
    return refs


def _mixed(rng, n: int, scale: float) -> np.ndarray:
    """Normal values, a few beyond the approximations' clamps and the specials."""
    x = (rng.standard_normal(n) * scale).astype(F32)
    if n >= 16:
        x[::7] *= F32(20)
        x[3] = F32(-200.0)
        x[5] = F32(120.0)
    return x


# -- SIN and COS: C's sinf and cosf in both sets -------------------------------------------
@pytest.mark.parametrize("op", ["SIN", "COS"])
def test_sin_cos_are_glibc_sinf_cosf(op):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-10, 10, 40000), rng.uniform(-1e5, 1e5, 40000),
                        rng.standard_normal(2000) * 1e-20,
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38]]).astype(F32)
    model = single_op_model(op, [Input(x.shape)], [F32], output_shapes=[x.shape])
    refs = assert_both_sets(model, [x], op)
    # numpy's float32 sin/cos (the SIMD approximation the kernels used before) is not it
    with np.errstate(invalid="ignore"):
        numpy_values = getattr(np, op.lower())(x)
    assert differing(numpy_values, refs["builtin"]) > 100


@pytest.mark.parametrize("op", ["SIN", "COS"])
def test_sin_cos_of_half_values_go_through_float(op):
    x = np.random.default_rng(2).uniform(-20, 20, 5000).astype(np.float16)
    model = single_op_model(op, [Input(x.shape, np.float16)], [np.float16],
                            output_shapes=[x.shape])
    assert_both_sets(model, [x], op)


# -- LOGISTIC, TANH, GELU ------------------------------------------------------------------
#: lengths with every tail (size % 4) and one long buffer
LENGTHS = [1, 2, 3, 4, 5, 7, 64, 127, 4099]


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
def test_logistic_and_tanh_in_each_set(op):
    rng = np.random.default_rng(3)
    apart = 0
    for n in LENGTHS:
        for scale in (1.0, 8.0, 40.0):
            x = _mixed(rng, n, scale)
            model = single_op_model(op, [Input(x.shape)], [F32], output_shapes=[x.shape])
            if op == "TANH":  # the reference set's std::tanh (glibc's tanhf) is not matched
                ref = litert_out(model, [x], "builtin")
                assert differing(ours_out(model, [x], "builtin"), ref) == 0, (op, n, scale)
                apart += differing(litert_out(model, [x], "reference"), ref)
                continue
            refs = assert_both_sets(model, [x], f"{op} n={n} scale={scale}")
            apart += differing(refs["reference"], refs["builtin"])
    assert apart > 0  # the two sets compute these differently (Eigen's polynomials)


def test_gelu_tanh_form_is_the_eigen_expression_in_both_sets():
    rng = np.random.default_rng(4)
    for n in LENGTHS:
        for scale in (0.1, 1.0, 6.0, 30.0):
            x = _mixed(rng, n, scale)
            model = single_op_model("GELU", [Input(x.shape)], [F32], "GeluOptions",
                                    {"approximate": True}, output_shapes=[x.shape])
            assert_both_sets(model, [x], f"GELU n={n} scale={scale}")


# -- SOFTMAX ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1, 5), (1, 32), (4, 8, 33), (3, 13), (1, 1000), (2, 1, 7)])
def test_softmax_in_each_set(shape):
    rng = np.random.default_rng(5)
    apart = 0
    for scale, beta in ((1.0, 1.0), (12.0, 1.0), (3.0, 0.7)):
        x = (rng.standard_normal(shape) * scale).astype(F32)
        x.reshape(-1)[1::5] = -np.inf  # a masked attention row's entries
        x.reshape(-1)[2::9] = F32(-1e30)
        model = single_op_model("SOFTMAX", [Input(shape)], [F32], "SoftmaxOptions",
                                {"beta": beta}, output_shapes=[shape])
        refs = assert_both_sets(model, [x], f"SOFTMAX {shape} beta={beta}")
        apart += differing(refs["reference"], refs["builtin"])
    if shape[-1] >= 8:
        assert apart > 0


# -- MEAN and SUM ----------------------------------------------------------------------------
REDUCTIONS = [((3, 7), [-1]), ((1, 1000), [-1]), ((2, 3, 64), [-1]), ((1, 1, 64), [2]),
              ((2, 5, 6), [1]), ((2, 5, 6), [0, 2]), ((4, 6), [0, 1]), ((3, 1, 9), [-1]),
              ((5, 17), [-1]), ((2, 2, 2, 50), [1, 2])]


@pytest.mark.parametrize("op", ["MEAN", "SUM"])
@pytest.mark.parametrize("shape,axes", REDUCTIONS)
def test_mean_and_sum_order_in_each_set(op, shape, axes):
    rng = np.random.default_rng(6)
    axes_n = [a % len(shape) for a in axes]
    for keep in (True, False):
        out = tuple(1 if i in axes_n else d for i, d in enumerate(shape)) if keep else \
            tuple(d for i, d in enumerate(shape) if i not in axes_n)
        x = (rng.standard_normal(shape) * 3).astype(F32)
        model = single_op_model(op, [Input(shape), np.array(axes, np.int32)], [F32],
                                "ReducerOptions", {"keep_dims": keep}, output_shapes=[out])
        assert_both_sets(model, [x], f"{op} {shape} over {axes} keep_dims={keep}")


def test_mean_over_the_last_axis_is_eigens_row_sum_in_the_builtin_set():
    """[8, 64] rows (an RMS norm over 8 positions): the builtin set's sums are not one
    after another, so the two sets differ on some rows, and ours follows each."""
    rng = np.random.default_rng(7)
    apart = 0
    for _ in range(5):
        x = (rng.standard_normal((8, 61)) * 10).astype(F32)
        model = single_op_model("MEAN", [Input(x.shape), np.array([-1], np.int32)], [F32],
                                "ReducerOptions", {"keep_dims": True}, output_shapes=[(8, 1)])
        refs = assert_both_sets(model, [x], "MEAN [8, 61]")
        apart += differing(refs["reference"], refs["builtin"])
    assert apart > 0


# -- BATCH_MATMUL ----------------------------------------------------------------------------
@pytest.mark.parametrize("lhs,rhs,adj_x,adj_y", [
    ((4, 8, 16), (4, 16, 32), False, False),      # attention scores, one head per batch
    ((1, 4, 1, 16), (1, 4, 16, 40), False, False),  # a decode step
    ((2, 3, 5, 33), (2, 1, 33, 7), False, False),   # broadcast batch, depth with a tail
    ((3, 16, 5), (3, 16, 9), True, False),
    ((3, 5, 16), (3, 9, 16), False, True),
])
def test_float_batch_matmul_is_the_reference_dot_in_both_sets(lhs, rhs, adj_x, adj_y):
    rng = np.random.default_rng(8)
    a = rng.standard_normal(lhs).astype(F32)
    b = rng.standard_normal(rhs).astype(F32)
    l2 = lhs[-1] if adj_x else lhs[-2]
    r2 = rhs[-2] if adj_y else rhs[-1]
    batch = np.broadcast_shapes(lhs[:-2], rhs[:-2])
    model = single_op_model("BATCH_MATMUL", [Input(lhs), Input(rhs)], [F32],
                            "BatchMatMulOptions", {"adj_x": adj_x, "adj_y": adj_y},
                            output_shapes=[batch + (l2, r2)])
    refs = assert_both_sets(model, [a, b], f"BATCH_MATMUL {lhs} x {rhs}")
    assert differing(refs["reference"], refs["builtin"]) == 0  # one kernel in both sets


def test_exp_is_c_expf_in_both_sets():
    x = np.concatenate([np.random.default_rng(9).uniform(-90, 90, 30000),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 88.8, -104.0]]).astype(F32)
    model = single_op_model("EXP", [Input(x.shape)], [F32], output_shapes=[x.shape])
    refs = assert_both_sets(model, [x], "EXP")
    with np.errstate(over="ignore"):
        assert differing(np.exp(x), refs["builtin"]) > 1000  # numpy's float32 exp is not it


@pytest.mark.parametrize("op", ["ADD", "MUL", "SUB"])
def test_broadcast_arithmetic_in_both_sets(op):
    """An RMS norm's and RoPE's broadcasts ([1, 8, 64] by [64], by [1, 8, 1], [4, 1, 16]
    by [1, 8, 1]): one rounding per element whatever the kernel's loop order."""
    rng = np.random.default_rng(10)
    for a_shape, b_shape in (((1, 8, 64), (64,)), ((1, 8, 64), (1, 8, 1)),
                             ((4, 1, 16), (1, 8, 1)), ((3, 5), ())):
        a = rng.standard_normal(a_shape).astype(F32)
        b = rng.standard_normal(b_shape).astype(F32)
        out = np.broadcast_shapes(a_shape, b_shape)
        model = single_op_model(op, [Input(a_shape), Input(b_shape)], [F32],
                                f"{op.capitalize()}Options", {}, output_shapes=[out])
        assert_both_sets(model, [a, b], f"{op} {a_shape} {b_shape}")


def test_rsqrt_in_both_sets():
    x = np.random.default_rng(11).uniform(1e-6, 100, 5000).astype(F32)
    model = single_op_model("RSQRT", [Input(x.shape)], [F32], output_shapes=[x.shape])
    assert_both_sets(model, [x], "RSQRT")
