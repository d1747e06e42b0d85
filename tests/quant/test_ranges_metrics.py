"""The one table of integer ranges, and the metrics against hand computations."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from tflite_viewer.model import load_model
from tflite_viewer.quant import metrics as M
from tflite_viewer.quant.metrics import METRICS, average, mean
from tflite_viewer.quant.ranges import INTEGER_RANGES, dequantize, integer_range, quantize

from .helpers import MNV2_INT8


@pytest.mark.parametrize("name", ["INT8", "UINT8", "INT16", "UINT16", "INT32", "INT64", "UINT32"])
def test_ranges_are_numpy_iinfo(name):
    info = np.iinfo(np.dtype(name.lower()))
    assert integer_range(name) == (int(info.min), int(info.max))
    assert integer_range(np.dtype(name.lower())) == (int(info.min), int(info.max))


@pytest.mark.parametrize("name,bits,signed", [("INT4", 4, True), ("UINT4", 4, False),
                                               ("INT2", 2, True)])
def test_sub_byte_ranges(name, bits, signed):
    expect = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    assert integer_range(name) == expect


def test_narrow_range_and_type_codes():
    assert integer_range("INT8", narrow=True) == (-127, 127)
    assert integer_range("UINT8", narrow=True) == (0, 255)
    assert integer_range(9) == (-128, 127)  # TensorType INT8
    assert integer_range("FLOAT32") is None


def test_the_three_old_tables_now_read_this_one():
    from tflite_viewer.edit.commands import tensors
    assert tensors.INTEGER_RANGES is INTEGER_RANGES and not hasattr(tensors, "_QRANGE")
    from tflite_viewer.ui.state import tensor_stats
    for name, rng in INTEGER_RANGES.items():
        assert tensor_stats.quantized_range(name) == rng
    from tflite_viewer.ui.panels import tensor_panel
    assert tensor_panel.ZERO_POINT_RANGES["UINT16"] == (0, 65535)
    assert all(tensor_panel.ZERO_POINT_RANGES[k] == INTEGER_RANGES[k]
               for k in tensor_panel.ZERO_POINT_RANGES)


def test_per_channel_dequantize_matches_the_reader():
    m = load_model(MNV2_INT8)
    checked = 0
    for t in m.subgraphs[0].tensors:
        q = t.quantization
        if t.is_constant and q is not None and q.is_per_channel and t.type_name == "INT8":
            np.testing.assert_allclose(dequantize(t.data(), q), q.dequantize(t.data()), rtol=1e-6)
            back = quantize(dequantize(t.data(), q), q, "INT8")
            np.testing.assert_array_equal(back, t.data())
            checked += 1
    assert checked > 30


def test_quantize_rounds_half_away_and_clamps():
    from tflite_viewer.model.quantization import Quantization
    z = np.zeros(0)
    q = Quantization(np.array([0.5], np.float32), np.array([1]), z, z, 0)
    got = quantize(np.array([0.25, -0.25, 0.75, 1000.0, -1000.0]), q, "INT8")
    assert got.tolist() == [2, 0, 3, 127, -128]  # 0.5->1(+1), -0.5->-1(+1), 1.5->2(+1)


def test_median_diff_ratio_documented_example():
    # litert_quantizer's validation_utils_test: median_diff_ratio([[1, 2], [4, 5]],
    # [[1, 3], [2, 2]]) divides by |[[1, 3], [2, 2]]|, which compare_model passes as the
    # float model's values (the reference)
    assert M.median_diff_ratio([[1, 3], [2, 2]], [[1, 2], [4, 5]]) == pytest.approx(0.6666664)
    assert M.median_diff_ratio([1, 2, 3], [1, 2, 3]) == 0


def test_metrics_by_hand():
    f = np.array([3.0, 4.0])
    q = np.array([3.0, 4.5])     # error (0, 0.5): |f| = 5, |e| = 0.5 -> 20 dB
    m = M.tensor_metrics(f, q, scale=0.5)
    assert m["sqnr_db"] == pytest.approx(20.0)
    assert m["mean_error"] == pytest.approx(0.25)
    assert m["max_abs_error"] == pytest.approx(0.5)
    assert m["mean_squared_error"] == pytest.approx(0.125)
    assert m["stddev"] == pytest.approx(0.25)
    assert m["rmse_scale"] == pytest.approx(math.sqrt(0.125) / 0.5)
    assert m["cosine"] == pytest.approx((9 + 18) / (5 * math.sqrt(9 + 20.25)))
    assert M.tensor_metrics(f, f)["sqnr_db"] == math.inf


def test_uniform_rounding_error_gives_rmse_scale_near_one_over_sqrt12():
    rng = np.random.default_rng(0)
    x = rng.uniform(-10, 10, 200_000)
    scale = 0.05
    q = np.round(x / scale) * scale
    assert M.tensor_metrics(x, q, scale)["rmse_scale"] == pytest.approx(1 / math.sqrt(12), rel=0.01)


def test_average_and_mean_are_np_mean_per_metric():
    """`average` sums every metric at once; each must be np.mean of that metric's values,
    bit for bit (inf, -inf and NaN included), and None where any input lacks it."""
    rng = np.random.default_rng(3)
    for _ in range(1500):
        n = int(rng.integers(0, 40))
        rows = []
        for _ in range(n):
            m = {k: float(rng.standard_normal() * 10.0 ** int(rng.integers(-8, 8)))
                 for k in METRICS}
            if rng.random() < 0.05:
                m["sqnr_db"] = math.inf if rng.random() < 0.7 else -math.inf
            if rng.random() < 0.03:
                m["cosine"] = math.nan
            if rng.random() < 0.05:
                m["rmse_scale"] = None
            rows.append(m)
        got = average(rows)
        for key in METRICS:
            values = [m[key] for m in rows]
            if not values or any(v is None for v in values):
                assert got[key] is None, key
                continue
            with np.errstate(invalid="ignore"):  # inf + -inf, as np.mean adds them
                want = float(np.mean(np.asarray(values, dtype=np.float64)))
                plain = mean(values)
            assert np.array_equal(got[key], want, equal_nan=True), (n, key, got[key], want)
            assert np.array_equal(plain, want, equal_nan=True), (n, key)


def test_the_same_infinity_in_both_is_agreement_not_nan():
    """An attention mask's -inf in both tensors: those positions are left out (inf - inf
    would make every metric NaN), the rest measured as without them, with no warning."""
    f = np.array([-np.inf, 3.0, 4.0, np.inf])
    q = np.array([-np.inf, 3.0, 4.5, np.inf])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = M.tensor_metrics(f, q, scale=0.5)
        same = M.tensor_metrics(f, f.copy())
    expected = M.tensor_metrics(f[1:3], q[1:3], scale=0.5)  # test_metrics_by_hand's pair
    assert m == dict(expected, num_elements=4.0)
    assert m["sqnr_db"] == pytest.approx(20.0) and m["max_abs_error"] == 0.5
    assert same["max_abs_error"] == 0.0 and same["sqnr_db"] == math.inf
    assert same["median_diff_ratio"] == 0.0 and same["mean_error"] == 0.0


@pytest.mark.parametrize("f, q, expected", [
    # an infinity against a finite value: an infinite error, the undefined metrics NaN
    ([np.inf, 1.0], [5.0, 1.0], {"max_abs_error": math.inf, "mean_error": -math.inf,
                                 "mean_squared_error": math.inf, "stddev": math.nan,
                                 "sqnr_db": math.nan, "cosine": math.nan}),
    ([1.0, 2.0], [np.inf, 1.0], {"max_abs_error": math.inf, "mean_error": math.inf,
                                 "sqnr_db": -math.inf}),  # a finite signal, infinite noise
    ([np.inf, 2.0], [-np.inf, 1.0], {"max_abs_error": math.inf, "mean_error": -math.inf}),
    ([np.nan, 2.0], [np.nan, 1.0], {k: math.nan for k in (
        "max_abs_error", "mean_error", "stddev", "sqnr_db", "median_diff_ratio")}),
])
def test_non_finite_disagreements_follow_ieee_without_warnings(f, q, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = M.tensor_metrics(np.array(f), np.array(q))
    for key, value in expected.items():
        assert m[key] == value or (math.isnan(value) and math.isnan(m[key])), key
