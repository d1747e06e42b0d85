"""Type paths of registered ops found by sweeping op x type against LiteRT
(tools/sweep_op_types.py): quantized DIV (uint8, int8, int16), EXP (int8, int16 tables),
NEG (int8, int16 stored integers), RELU / RELU6 (int16), FLOOR_DIV / FLOOR_MOD (int8, int16
stored integers); bit-exact against LiteRT's reference kernels."""
from __future__ import annotations

import numpy as np
import pytest

from .singleop import Input, assert_matches_litert, single_op_model

ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (1, 3, 1)), ((5,), ()),
          ((0, 3), (3,))]


def _q(rng, dtype):
    if dtype == np.int16:
        return (float(rng.uniform(2e-4, 2e-3)), 0)
    info = np.iinfo(dtype)
    return (float(rng.uniform(0.01, 0.2)), int(rng.integers(info.min + 20, info.max - 20)))


def _ints(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max), shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16])
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("seed", range(8))
def test_quantized_div_bit_exact(dtype, shapes, seed):
    rng = np.random.default_rng(seed)
    q1, q2, qo = _q(rng, dtype), _q(rng, dtype), _q(rng, dtype)
    a, b = _ints(rng, dtype, shapes[0]), _ints(rng, dtype, shapes[1])
    b = np.where(b.astype(np.int64) == q2[1], b.astype(np.int64) + 1, b).astype(dtype)
    act = ACTS[seed % 4]
    model = single_op_model("DIV", [Input(a.shape, dtype, q1), Input(b.shape, dtype, q2)],
                            [(dtype, qo)], "DivOptions", {"fused_activation_function": act},
                            version=2)
    assert_matches_litert(model, [a, b])


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("seed", range(8))
def test_quantized_exp_bit_exact(dtype, seed):
    rng = np.random.default_rng(100 + seed)
    qi, qo = _q(rng, dtype), _q(rng, dtype)
    if dtype == np.int16:
        qi, qo = (float(rng.uniform(5e-5, 1e-4)), 0), (float(rng.uniform(5e-4, 1e-3)), 0)
    x = _ints(rng, dtype, (4, 40))
    model = single_op_model("EXP", [Input(x.shape, dtype, qi)], [(dtype, qo)], version=2)
    assert_matches_litert(model, [x])


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_neg_negates_stored_integers(dtype):
    rng = np.random.default_rng(3)
    x = _ints(rng, dtype, (3, 9))
    x.flat[0] = np.iinfo(dtype).min  # wraps, as the C++ cast does
    q = _q(rng, dtype)
    model = single_op_model("NEG", [Input(x.shape, dtype, q)], [(dtype, q)])
    assert_matches_litert(model, [x])


@pytest.mark.parametrize("op", ["RELU", "RELU6"])
@pytest.mark.parametrize("seed", range(6))
def test_relu_int16_bit_exact(op, seed):
    rng = np.random.default_rng(200 + seed)
    qi, qo = (float(rng.uniform(1e-4, 5e-4)), 0), (float(rng.uniform(1e-4, 5e-4)), 0)
    x = _ints(rng, np.int16, (3, 50))
    model = single_op_model(op, [Input(x.shape, np.int16, qi)], [(np.int16, qo)], version=3)
    assert_matches_litert(model, [x])


@pytest.mark.parametrize("op", ["FLOOR_DIV", "FLOOR_MOD"])
@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("shapes", SHAPES[:4])
def test_floor_div_mod_small_integers(op, dtype, shapes):
    rng = np.random.default_rng(7)
    a = _ints(rng, dtype, shapes[0])
    b = _ints(rng, dtype, shapes[1])
    b = np.where(b == 0, 3, b).astype(dtype)
    version = 2 if op == "FLOOR_DIV" else 2
    model = single_op_model(op, [Input(a.shape, dtype), Input(b.shape, dtype)], [dtype],
                            version=version)
    assert_matches_litert(model, [a, b])


@pytest.mark.parametrize("alpha_shape", [(3, 8), (8,), (1, 1)])
@pytest.mark.parametrize("seed", range(4))
def test_prelu_int16_with_int8_alpha(alpha_shape, seed):
    rng = np.random.default_rng(300 + seed)
    x = _ints(rng, np.int16, (3, 8))
    alpha = rng.integers(-128, 128, alpha_shape).astype(np.int8)
    qi, qo = (float(rng.uniform(1e-4, 5e-4)), 0), (float(rng.uniform(1e-4, 5e-4)), 0)
    qa = (float(rng.uniform(0.002, 0.01)), int(rng.integers(-10, 10)))
    model = single_op_model("PRELU", [Input(x.shape, np.int16, qi), alpha],
                            [(np.int16, qo)])
    from tflite_viewer.schema import schema_generated as S
    import flatbuffers
    m = S.ModelT.InitFromPackedBuf(model, 0)
    q = S.QuantizationParametersT()
    q.scale, q.zeroPoint = [qa[0]], [qa[1]]
    m.subgraphs[0].tensors[1].quantization = q
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    assert_matches_litert(bytes(b.Output()), [x])


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("axes,keep", [([1], False), ([0, 2], True), ([-1], False), ([0, 1, 2], False)])
@pytest.mark.parametrize("seed", range(3))
def test_quantized_reduce_prod_bit_exact(dtype, axes, keep, seed):
    rng = np.random.default_rng(400 + seed)
    x = rng.integers(-6, 7, (2, 3, 4)).astype(dtype)
    qi = (float(rng.uniform(0.1, 0.5)), 0 if dtype == np.int16 else int(rng.integers(-3, 3)))
    qo = (float(rng.uniform(0.5, 4.0)), 0 if dtype == np.int16 else int(rng.integers(-3, 3)))
    model = single_op_model("REDUCE_PROD", [Input(x.shape, dtype, qi), np.array(axes, np.int32)],
                            [(dtype, qo)], "ReducerOptions", {"keep_dims": keep}, version=2)
    assert_matches_litert(model, [x])


def _retype(model: bytes, tensor: int, type_code: int) -> bytes:
    import flatbuffers
    from tflite_viewer.schema import schema_generated as S
    m = S.ModelT.InitFromPackedBuf(model, 0)
    m.subgraphs[0].tensors[tensor].type = type_code
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@pytest.mark.parametrize("type_code,zp_range", [(17, (-8, 7)), (20, (0, 15))])
@pytest.mark.parametrize("seed", range(4))
def test_quantize_to_4_bits_and_back(type_code, zp_range, seed):
    """QUANTIZE v4 (INT4) / v5 (UINT4) then DEQUANTIZE: values clamped to the nibble range."""
    from .singleop import Op, graph_model
    rng = np.random.default_rng(500 + seed)
    x = (rng.standard_normal(37) * 2).astype(np.float32)
    q = (float(rng.uniform(0.05, 0.5)), int(rng.integers(*zp_range)))
    model = graph_model([((37,), np.float32), ((37,), np.int8, q), ((37,), np.float32)],
                        [Op("QUANTIZE", [0], [1], version=4 if type_code == 17 else 5),
                         Op("DEQUANTIZE", [1], [2], version=6 if type_code == 17 else 8)],
                        [0], [2])
    assert_matches_litert(_retype(model, 1, type_code), [x], tol=0.0)


@pytest.mark.parametrize("float8", [21, 22])
def test_float8_broadcast_to_and_fill_move_raw_bytes(float8):
    """BROADCAST_TO v4 and FILL v5 (FLOAT8), the two whose LiteRT kernels take FLOAT8: the
    bytes are broadcast / repeated unchanged (LiteRT's Python API cannot read FLOAT8
    tensors back, so the bytes are checked against numpy, and LiteRT is checked to run)."""
    import flatbuffers
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from tflite_viewer.interpreter import Interpreter
    from tflite_viewer.schema import schema_generated as S
    from .singleop import Op, graph_model
    raw = np.arange(0, 24 * 9, 9).astype(np.uint8).reshape(2, 3, 4)
    tensors = [(raw,), (np.array([2, 2, 3, 4], np.int32),), ((2, 2, 3, 4), np.uint8),
               (np.array([2, 3], np.int32),), (np.array(0x3C, np.uint8),), ((2, 3), np.uint8)]
    ops = [Op("BROADCAST_TO", [0, 1], [2], version=4), Op("FILL", [3, 4], [5], version=5)]
    m = S.ModelT.InitFromPackedBuf(graph_model(tensors, ops, [], [2, 5]), 0)
    for k in (0, 2, 4, 5):
        m.subgraphs[0].tensors[k].type = float8
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    model = bytes(b.Output())
    li = LiteRT(model_content=model)
    li.allocate_tensors()
    li.invoke()
    interp = Interpreter(model)
    interp.invoke([])
    sg = interp.subgraphs[0]
    np.testing.assert_array_equal(sg.tensors[2].data.view(np.uint8),
                                  np.broadcast_to(raw, (2, 2, 3, 4)))
    np.testing.assert_array_equal(sg.tensors[5].data.view(np.uint8), np.full((2, 3), 0x3C))


def test_bfloat16_dynamic_update_slice_moves_raw_bits():
    """DYNAMIC_UPDATE_SLICE v6 (BFLOAT16): LiteRT runs it; the raw 16-bit values are
    updated as numpy does (LiteRT's Python API cannot read BFLOAT16 back)."""
    import flatbuffers
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from tflite_viewer.interpreter import Interpreter
    from tflite_viewer.schema import schema_generated as S
    from .singleop import Op, graph_model
    base = np.arange(20, dtype=np.uint16).reshape(4, 5) * 257
    update = np.full((2, 2), 0x3F80, np.uint16)  # bfloat16 1.0
    tensors = [(base,), (update,), (np.array([1, 3], np.int32),), ((4, 5), np.uint16)]
    m = S.ModelT.InitFromPackedBuf(graph_model(
        tensors, [Op("DYNAMIC_UPDATE_SLICE", [0, 1, 2], [3], version=6)], [], [3]), 0)
    for k in (0, 1, 3):
        m.subgraphs[0].tensors[k].type = S.TensorType.BFLOAT16
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    model = bytes(b.Output())
    li = LiteRT(model_content=model)
    li.allocate_tensors()
    li.invoke()
    interp = Interpreter(model)
    interp.invoke([])
    expected = base.copy()
    expected[1:3, 3:5] = update
    np.testing.assert_array_equal(interp.subgraphs[0].tensors[3].data.view(np.uint16), expected)
