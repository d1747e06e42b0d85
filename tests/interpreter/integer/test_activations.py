"""SOFTMAX, LOGISTIC, TANH, ELU, HARD_SWISH, RELU/RELU6/RELU_N1_TO_1, LEAKY_RELU, PRELU."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter.integer import lut, softmax

from .gen import LITERT_ROUNDING, rand_data, rand_q
from .harness import Case, check_cases
from tests.interpreter.singleop import Op, T

IDS = lambda d: np.dtype(d).name  # noqa: E731
OUT_ZP = {np.uint8: 0, np.int8: -128, np.int16: 0}


def _all_values(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.arange(int(info.min), int(info.max) + 1).astype(dtype)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16], ids=IDS)
def test_softmax(dtype):
    rng = np.random.default_rng(60)
    cases = []
    for _ in range(80):
        shape = tuple(int(rng.integers(1, 5)) for _ in range(int(rng.integers(1, 4)))) + (
            int(rng.integers(1, 30)),)
        iq = rand_q(rng, dtype, 0.01, 0.5) if dtype != np.int16 else (float(np.float32(
            rng.uniform(1e-4, 1e-2))), 0)
        beta = float(np.float32(rng.choice([1.0, 1.0, 0.5, 2.0, 1.7])))
        oq = (1 / 32768, 0) if dtype == np.int16 else (1 / 256, OUT_ZP[dtype])
        x = rand_data(rng, shape, dtype)
        op = Op("SOFTMAX", [T(shape, dtype, *iq)], [T(shape, dtype, *oq)], "SoftmaxOptions",
                {"beta": beta}, 3 if dtype == np.int16 else 2)
        cases.append(Case(op, [x], lambda x=x, iq=iq, beta=beta: softmax.softmax(
            x, iq, beta, rounding=LITERT_ROUNDING), f"SOFTMAX {IDS(dtype)} {shape} {iq} beta={beta}"))
    assert check_cases(cases, compare_builtin=True) == len(cases)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=IDS)
def test_logistic_tanh_8bit(dtype):
    rng = np.random.default_rng(61)
    cases = []
    x = _all_values(dtype)
    for _ in range(40):
        iq = rand_q(rng, dtype, 0.002, 0.2)
        oq = (1 / 256, OUT_ZP[dtype])
        op = Op("LOGISTIC", [T(x.shape, dtype, *iq)], [T(x.shape, dtype, *oq)], None, {}, 2)
        cases.append(Case(op, [x], lambda iq=iq, oq=oq: lut.logistic(x, iq, oq),
                          f"LOGISTIC {IDS(dtype)} {iq}"))
        tq = (1 / 128, 128 if dtype == np.uint8 else 0)
        op = Op("TANH", [T(x.shape, dtype, *iq)], [T(x.shape, dtype, *tq)], None, {}, 2)
        cases.append(Case(op, [x], lambda iq=iq, tq=tq: lut.tanh(x, iq, tq),
                          f"TANH {IDS(dtype)} {iq}"))
    assert check_cases(cases, compare_builtin=True) == len(cases)


def test_logistic_tanh_int16():
    rng = np.random.default_rng(62)
    x = _all_values(np.int16)
    cases = []
    scales = [2.0 ** -12, 2.0 ** -11, 2.0 ** -13] + [float(np.float32(s)) for s in
                                                     rng.uniform(1e-5, 1e-3, size=12)]
    for s in scales:
        iq, oq = (s, 0), (1 / 32768, 0)
        op = Op("LOGISTIC", [T(x.shape, np.int16, *iq)], [T(x.shape, np.int16, *oq)], None, {}, 3)
        cases.append(Case(op, [x], lambda iq=iq: lut.logistic(x, iq, (1 / 32768, 0)),
                          f"LOGISTIC int16 {s}"))
        op = Op("TANH", [T(x.shape, np.int16, *iq)], [T(x.shape, np.int16, *oq)], None, {}, 3)
        cases.append(Case(op, [x], lambda iq=iq: lut.tanh(x, iq, (1 / 32768, 0)),
                          f"TANH int16 {s}"))
    assert check_cases(cases, compare_builtin=True) == len(cases)


def test_elu_hard_swish_relus():
    rng = np.random.default_rng(63)
    cases = []
    for dtype in (np.uint8, np.int8):
        x = _all_values(dtype)
        for _ in range(20):
            iq = rand_q(rng, dtype, 0.005, 0.1)
            oq = rand_q(rng, dtype, iq[0] / 2, iq[0] * 2)
            op = Op("HARD_SWISH", [T(x.shape, dtype, *iq)], [T(x.shape, dtype, *oq)], None, {}, 1)
            cases.append(Case(op, [x], lambda x=x, iq=iq, oq=oq: lut.hard_swish(
                x, iq, oq, LITERT_ROUNDING), f"HARD_SWISH {IDS(dtype)} {iq} {oq}"))
            for kind in ("RELU", "RELU6", "RELU_N1_TO_1"):
                op = Op(kind, [T(x.shape, dtype, *iq)], [T(x.shape, dtype, *oq)], None, {},
                        1 if kind == "RELU_N1_TO_1" else 2)
                cases.append(Case(op, [x], lambda x=x, iq=iq, oq=oq, kind=kind: lut.relu(
                    x, iq, oq, kind, LITERT_ROUNDING), f"{kind} {IDS(dtype)} {iq} {oq}"))
            alpha = float(np.float32(rng.choice([0.1, 0.2, 0.01, 0.3333, 1.5, -0.5])))
            op = Op("LEAKY_RELU", [T(x.shape, dtype, *iq)], [T(x.shape, dtype, *oq)],
                    "LeakyReluOptions", {"alpha": alpha}, 2)
            cases.append(Case(op, [x], lambda x=x, iq=iq, oq=oq, alpha=alpha: lut.leaky_relu(
                x, iq, oq, alpha, LITERT_ROUNDING), f"LEAKY_RELU {IDS(dtype)} {iq} {oq} {alpha}"))
        # PRELU: alpha per channel, broadcast against (N, H, W, C) inputs
        for _ in range(15):
            shape = (1, int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 5)))
            iq = rand_q(rng, dtype, 0.005, 0.1)
            aq = rand_q(rng, dtype, 0.001, 0.01)
            oq = rand_q(rng, dtype, iq[0] / 2, iq[0] * 2)
            xv = rand_data(rng, shape, dtype)
            alpha = rand_data(rng, (1, 1, shape[-1]) if rng.random() < 0.7 else shape[1:], dtype)
            op = Op("PRELU", [T(shape, dtype, *iq), T.const(alpha, *aq)], [T(shape, dtype, *oq)],
                    None, {}, 1)
            cases.append(Case(op, [xv], lambda xv=xv, alpha=alpha, iq=iq, aq=aq, oq=oq: lut.prelu(
                xv, alpha, iq, aq, oq, LITERT_ROUNDING), f"PRELU {IDS(dtype)} {shape}"))
    assert check_cases(cases, compare_builtin=True) == len(cases)


def test_elu():
    """ELU has no reference registration in LiteRT 2.3.0: checked against BUILTIN."""
    rng = np.random.default_rng(64)
    cases = []
    x = _all_values(np.int8)
    for _ in range(20):
        iq = rand_q(rng, np.int8, 0.005, 0.1)
        oq = rand_q(rng, np.int8, iq[0] / 2, iq[0] * 2)
        op = Op("ELU", [T(x.shape, np.int8, *iq)], [T(x.shape, np.int8, *oq)], None, {}, 1)
        cases.append(Case(op, [x], lambda iq=iq, oq=oq: lut.elu(x, iq, oq), f"ELU {iq} {oq}"))
    assert check_cases(cases, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES") == len(cases)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=IDS)
def test_softmax_row_tables_reused_across_calls(dtype):
    """Few-row inputs go through per-sum tables remembered on the params; reusing one
    params object over many inputs must give what the whole-array path (checked against
    LiteRT above) gives for the same rows."""
    rng = np.random.default_rng(61)
    iq = rand_q(rng, dtype, 0.01, 0.5)
    p = softmax.prepare_softmax(iq, 1.0, dtype, LITERT_ROUNDING)
    fresh = softmax.prepare_softmax(iq, 1.0, dtype, LITERT_ROUNDING)
    for i in range(400):
        # short rows are summed in Python, longer ones in numpy; one row or a few
        x = rand_data(rng, (1 + i % 3, (12, 1, 32, 33, 70)[i % 5]), dtype)
        many = np.repeat(x, 20, axis=0)  # > 16 rows: the whole-array path
        expected = softmax.softmax(many, iq, params=fresh)[::20]
        np.testing.assert_array_equal(softmax.softmax(x, iq, params=p), expected)
    assert len(p.row_tables) > 1
