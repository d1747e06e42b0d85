"""LOG_SOFTMAX and L2_NORMALIZATION (uint8, int8), RESIZE_BILINEAR and
RESIZE_NEAREST_NEIGHBOR (uint8, int8, int16; align_corners, half_pixel_centers), bit-exact
against LiteRT's reference kernels."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter.integer import l2norm, resize, softmax

from .gen import LITERT_ROUNDING, rand_data, rand_q
from .harness import Case, check_cases
from tests.interpreter.singleop import Op, T

IDS = lambda d: np.dtype(d).name  # noqa: E731
MAX = {np.uint8: 255, np.int8: 127}


def _row_shape(rng):
    return tuple(int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 3)))) + (
        int(rng.integers(1, 40)),)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=IDS)
def test_log_softmax(dtype):
    rng = np.random.default_rng(500 + (dtype == np.int8))
    cases = []
    for i in range(150):
        shape = _row_shape(rng)
        iq = rand_q(rng, dtype, 0.005, 1.0)
        x = rand_data(rng, shape, dtype)
        if i % 4 == 0:  # narrow rows: many values near the maximum
            x = np.clip(x, None, np.iinfo(dtype).min + int(rng.integers(1, 20))).astype(dtype)
        op = Op("LOG_SOFTMAX", [T(shape, dtype, *iq)], [T(shape, dtype, 16 / 256, MAX[dtype])],
                "LogSoftmaxOptions", {}, 2)
        cases.append(Case(op, [x], lambda x=x, iq=iq: softmax.log_softmax(x, iq, LITERT_ROUNDING),
                          f"LOG_SOFTMAX {IDS(dtype)} {shape} {iq}"))
    assert check_cases(cases, compare_builtin=True) == len(cases)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=IDS)
def test_l2_normalization(dtype):
    rng = np.random.default_rng(510 + (dtype == np.int8))
    cases = []
    for i in range(150):
        shape = _row_shape(rng)
        iq = rand_q(rng, dtype, 0.005, 0.5)
        x = rand_data(rng, shape, dtype)
        if i % 5 == 0:  # rows at (or next to) the zero point
            x = np.clip(x.astype(np.int64), iq[1] - 1, iq[1] + 1).astype(dtype)
        oq = (1 / 128, 128 if dtype == np.uint8 else 0)
        op = Op("L2_NORMALIZATION", [T(shape, dtype, *iq)], [T(shape, dtype, *oq)],
                "L2NormOptions", {}, 2)
        cases.append(Case(op, [x], lambda x=x, iq=iq: l2norm.l2_normalization(
            x, iq, LITERT_ROUNDING), f"L2_NORMALIZATION {IDS(dtype)} {shape} {iq}"))
    assert check_cases(cases, compare_builtin=True) == len(cases)


def _resize_case(rng, op_name, dtype) -> Case:
    b, c = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    oh, ow = int(rng.integers(1, 17)), int(rng.integers(1, 17))
    mode = int(rng.integers(0, 3))
    opts = {"align_corners": mode == 1, "half_pixel_centers": mode == 2}
    iq = rand_q(rng, dtype)
    oq = iq if op_name == "RESIZE_BILINEAR" or rng.random() < 0.5 else rand_q(rng, dtype)
    x = rand_data(rng, (b, h, w, c), dtype)
    size = np.array([oh, ow], np.int32)
    version = 4 if dtype == np.int16 else 3
    options_type = ("ResizeBilinearOptions" if op_name == "RESIZE_BILINEAR"
                    else "ResizeNearestNeighborOptions")
    op = Op(op_name, [T((b, h, w, c), dtype, *iq), T.const(size)],
            [T((b, oh, ow, c), dtype, *oq)], options_type, opts, version)
    fn = resize.resize_bilinear if op_name == "RESIZE_BILINEAR" else resize.resize_nearest_neighbor
    return Case(op, [x], lambda: fn(x, (oh, ow), **opts),
                f"{op_name} {IDS(dtype)} {opts} {x.shape} -> {(oh, ow)}")


@pytest.mark.parametrize("op_name", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16], ids=IDS)
def test_resize(op_name, dtype):
    rng = np.random.default_rng(520 + [np.uint8, np.int8, np.int16].index(dtype)
                                + 10 * (op_name == "RESIZE_BILINEAR"))
    cases = [_resize_case(rng, op_name, dtype) for _ in range(150)]
    assert check_cases(cases, compare_builtin=True) == len(cases)


@pytest.mark.parametrize("op_name", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
def test_resize_float(op_name):
    rng = np.random.default_rng(540 + (op_name == "RESIZE_BILINEAR"))
    cases = []
    for _ in range(100):
        case = _resize_case(rng, op_name, np.int8)
        x = rng.normal(0, 3, size=case.inputs[0].shape).astype(np.float32)
        case.op.inputs[0].dtype, case.op.inputs[0].scale = np.float32, None
        case.op.outputs[0].dtype, case.op.outputs[0].scale = np.float32, None
        case.op.version = 3
        fn, (oh, ow) = case.ours, case.op.outputs[0].shape[1:3]
        opts = case.op.options
        f = resize.resize_bilinear if op_name == "RESIZE_BILINEAR" else resize.resize_nearest_neighbor
        cases.append(Case(case.op, [x], lambda x=x, oh=oh, ow=ow, opts=opts, f=f: f(
            x, (oh, ow), **opts), case.label.replace("int8", "float32")))
    assert check_cases(cases) == len(cases)
