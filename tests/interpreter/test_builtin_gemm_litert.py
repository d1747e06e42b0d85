"""The float FULLY_CONNECTED of LiteRT 2.3.0's builtin kernels (Eigen's products: its
matrix times vector, inner product, coefficient-wise and blocked GEMM paths) against the
wheel, bit for bit (`tflite_viewer.interpreter.eigen_gemm`).

The shapes reach every path and register block: one input row (a decode step), one output
row, tiny products (K + O + M < 20), output rows in groups of 8, a group of 4 and a last
one to three, input rows in 4-column panels and one to three left over, depths with every
remainder and deeper than Eigen's depth block (680 on a 32 KiB L1, evened out: 504 for
1000, 520 for 2048).  The reference kernels' sums (one product after another) differ from
these on most shapes, which the sweep also counts, so it could not pass with one order
standing in for the other.
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.eigen_gemm import depth_blocks, l1_data_cache_bytes
from tflite_viewer.interpreter.float32 import ordered_matmul

from .llm_models import A, OpSpec, W, litert_run, write_model

F32 = np.float32


def fc_model(rng, m: int, k: int, o: int, bias: bool) -> tuple[bytes, np.ndarray, np.ndarray]:
    x = rng.standard_normal((m, k)).astype(F32)
    w = (rng.standard_normal((o, k)) * rng.choice([0.05, 1.0])).astype(F32)
    tensors = [A((m, k)), W(w), W(rng.standard_normal(o).astype(F32)) if bias else A((1,)),
               A((m, o))]
    model = write_model(tensors, [OpSpec("FULLY_CONNECTED", [0, 1, 2 if bias else -1], [3],
                                         "FullyConnectedOptions", {})], [0], [3])
    return model, x, w


def ours(model: bytes, x: np.ndarray, kernels: str) -> np.ndarray:
    interp = Interpreter(model, kernels=kernels, float_sums="reference")
    return list(interp.invoke([x]).values())[0]


SHAPES = [(m, k, o) for m in (1, 2, 4, 5, 9) for k in (1, 3, 7, 16, 65, 700, 1000)
          for o in (1, 3, 13, 19, 40)]


@pytest.mark.parametrize("m", [1, 2, 4, 5, 9])
def test_float_fully_connected_is_eigens_product(m):
    rng = np.random.default_rng(m)
    apart = 0
    for (mm, k, o) in SHAPES:
        if mm != m:
            continue
        model, x, w = fc_model(rng, m, k, o, bias=bool(rng.integers(2)))
        ref = litert_run(model, [x])[3]
        got = ours(model, x, "builtin")
        assert got.shape == ref.shape and np.array_equal(got.view(np.int32), ref.view(np.int32)), \
            f"[{m}, {k}] x [{o}, {k}]^T: {int(np.sum(got != ref))} of {ref.size} differ"
        apart += int(np.sum(ordered_matmul(x, np.ascontiguousarray(w.T)) != ref))
    assert apart > 0  # the reference kernels' order is another one


@pytest.mark.parametrize("m,k,o", [(8, 2048, 1500), (37, 700, 1001), (130, 256, 64)])
def test_decoder_sized_products(m, k, o):
    """A prefill's projections: many rows, a deep product (depth-blocked), wide outputs."""
    model, x, _ = fc_model(np.random.default_rng(k), m, k, o, bias=True)
    ref = litert_run(model, [x])[3]
    assert np.array_equal(ours(model, x, "builtin").view(np.int32), ref.view(np.int32))


def test_the_reference_set_keeps_the_reference_order():
    model, x, w = fc_model(np.random.default_rng(3), 6, 300, 20, bias=False)
    ref = litert_run(model, [x], resolver="BUILTIN_REF")[3]
    assert np.array_equal(ours(model, x, "reference"), ref)


def test_the_l1_size_is_read_from_the_machine():
    size = l1_data_cache_bytes()
    assert 16 * 1024 <= size <= 256 * 1024 and size % 1024 == 0


def test_depth_blocks_follow_eigens_heuristic():
    """kc = (L1 - 128) / 48 rounded down to 8, evened out so the last block is large:
    the values the wheel's results showed on this 32 KiB-L1 machine."""
    sizes = {k: depth_blocks(k, 64, 8, l1=32 * 1024)[0][1] for k in (600, 700, 1000, 2048)}
    assert sizes == {600: 600, 700: 352, 1000: 504, 2048: 520}
    # a 48 KiB L1 (recent Intel cores, Zen 5): max kc 1016, evened out to 688 for 2048
    assert depth_blocks(2048, 64, 8, l1=48 * 1024)[0][1] == 688
    assert depth_blocks(40, 10, 2) == [(0, 40)]  # small problems are not blocked


# -- INT4 weights with affine scales: the builtin kernels' own 4-bit path --------------------
def int4_fc(rng, m: int, k: int, n: int, per_channel: bool, bias: bool, act: str = "NONE"):
    from .llm_models import PerChannel, PerTensor

    q = rng.integers(-7, 8, (n, k)).astype(np.int8)
    scales = (rng.random(n) * 0.02 + 1e-3).astype(np.float32)
    quant = PerChannel(scales.tolist()) if per_channel else PerTensor(float(scales[0]))
    tensors = [A((m, k)), W(q, "INT4", quant),
               W(rng.standard_normal(n).astype(F32)) if bias else A((1,)), A((m, n))]
    model = write_model(tensors, [OpSpec("FULLY_CONNECTED", [0, 1, 2 if bias else -1], [3],
                                         "FullyConnectedOptions",
                                         {"fused_activation_function": act})], [0], [3])
    x = (rng.standard_normal((m, k)) * rng.choice([0.01, 1.0, 30.0])).astype(F32)
    if m > 1:
        x[m - 1] = 0.0  # an all-zero row: the quantizer's 127 in place of max |x|
    return model, x


@pytest.mark.parametrize("seed", range(6))
def test_int4_affine_weights_take_the_4bit_path_of_the_builtin_kernels(seed):
    """EvalHybridDense4Bit (K even and >= 32, N >= 4) and, outside it, the hybrid kernel:
    bit for bit under the builtin set; the reference set keeps its hybrid kernel."""
    rng = np.random.default_rng(100 + seed)
    apart = 0
    for case in range(4):  # the first one on the 4-bit path, the others anywhere
        m = int(rng.integers(1, 6))
        k = 64 if case == 0 else int(rng.choice([30, 32, 64, 200]))
        n = 33 if case == 0 else int(rng.choice([3, 4, 7, 33]))
        model, x = int4_fc(rng, m, k, n, per_channel=bool(rng.integers(2)),
                           bias=bool(rng.integers(2)), act=str(rng.choice(["NONE", "RELU"])))
        refs = {}
        for kernels, resolver in (("builtin", "BUILTIN_WITHOUT_DEFAULT_DELEGATES"),
                                  ("reference", "BUILTIN_REF")):
            ref = refs[kernels] = litert_run(model, [x], resolver=resolver)[3]
            got = ours(model, x, kernels)
            assert np.array_equal(got.view(np.int32), ref.view(np.int32)), \
                f"{kernels} [{m}, {k}] x int4 [{n}, {k}]: {int(np.sum(got != ref))} differ"
        apart += int(np.sum(refs["builtin"] != refs["reference"]))
    assert apart > 0  # the 4-bit path quantizes and scales otherwise


def test_int4_weights_of_minus_8_are_refused_on_the_4bit_path():
    """LiteRT's 4-bit path packs w + 7 into an unsigned nibble: a weight of -8 comes out
    wrong (its outputs far from the exact product, where the reference kernels are right),
    so the builtin set refuses it, naming why; the reference set computes it."""
    from tflite_viewer.interpreter import ExecutionError

    from .llm_models import PerChannel

    rng = np.random.default_rng(8)
    q = rng.integers(-7, 8, (8, 64)).astype(np.int8)
    q[:, 5] = -8
    scales = (rng.random(8) * 0.02 + 1e-3).astype(np.float32)
    model = write_model([A((2, 64)), W(q, "INT4", PerChannel(scales.tolist())), A((1,)),
                         A((2, 8))], [OpSpec("FULLY_CONNECTED", [0, 1, -1], [3],
                                             "FullyConnectedOptions", {})], [0], [3])
    x = rng.standard_normal((2, 64)).astype(F32)
    exact = x.astype(np.float64) @ (q.astype(np.float64) * scales[:, None]).T
    builtin_out = litert_run(model, [x])[3]
    reference_out = litert_run(model, [x], resolver="BUILTIN_REF")[3]
    assert np.abs(builtin_out - exact).max() > 0.1 > np.abs(reference_out - exact).max()
    with pytest.raises(ExecutionError, match="INT4 weights holding -8"):
        ours(model, x, "builtin")
    assert np.array_equal(ours(model, x, "reference"), reference_out)
