"""Each weight form's report against numpy written out here: blockwise INT8/INT4/INT2 with
zero points, per channel, float16 and bfloat16 behind a DEQUANTIZE; the SQNR per block or
channel, the worst one named; how the model uses each weight."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.interpreter.llm_models import (A, Blockwise, OpSpec, PerChannel, PerTensor, W,
                                          write_model)
from tflite_viewer.model import load_model
from tflite_viewer.quant import analyze
from tflite_viewer.quant.forms import is_quantized

from .helpers import tree_edited

ROWS, COLS = 16, 128
FC = ("FullyConnectedOptions", {})


def _float_weight(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 0.05, (ROWS, COLS)).astype(np.float32)
    w[5, 64:96] *= 40.0  # one block of outliers (row 5, block 2 of 32): the worst
    return w


def _fc(weight: W, extra: list | None = None, dequantize: bool = False) -> bytes:
    """x [2, COLS] -> FULLY_CONNECTED(x, weight) -> [2, ROWS]; ``extra`` tensors follow
    (a blockwise weight's scales and zero points); with ``dequantize`` the weight goes
    through a DEQUANTIZE first (weight-only, float16)."""
    tensors = [A((2, COLS), name="x"), weight, *(extra or [])]
    ops = []
    w = 1
    if dequantize:
        tensors.append(A((ROWS, COLS), name="w_dequant"))
        w = len(tensors) - 1
        ops.append(OpSpec("DEQUANTIZE", [1], [w]))
    tensors.append(A((2, ROWS), name="y"))
    ops.append(OpSpec("FULLY_CONNECTED", [0, w, -1], [len(tensors) - 1], *FC))
    return write_model(tensors, ops, inputs=[0], outputs=[len(tensors) - 1])


def _float_model() -> bytes:
    return _fc(W(_float_weight(), name="w"))


def _blockwise(bits: int, block: int) -> tuple[bytes, np.ndarray]:
    """The float weight quantized asymmetrically per block of ``block`` (FLOAT16 scales,
    INT8 zero points): the model and the real values of its weight, written out here."""
    w = _float_weight().reshape(ROWS, COLS // block, block).astype(np.float64)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    wmin, wmax = w.min(axis=2), w.max(axis=2)
    scale = ((wmax - wmin) / (hi - lo)).astype(np.float16)
    zp = np.clip(np.round(lo - wmin / scale.astype(np.float64)), lo, hi).astype(np.int8)
    q = np.clip(np.round(w / scale[..., None].astype(np.float64)) + zp[..., None], lo, hi)
    q = q.astype(np.int8).reshape(ROWS, COLS)
    real = ((q.reshape(ROWS, -1, block).astype(np.float32) - zp[..., None].astype(np.float32))
            * scale[..., None].astype(np.float32)).reshape(ROWS, COLS)
    kind = {8: "INT8", 4: "INT4", 2: "INT2"}[bits]
    model = _fc(W(q, kind, Blockwise(2, block, 3), name="w"),
                [W(scale, name="w_scales"), W(zp, name="w_zero_points")])
    return model, real


def _sqnr(ref: np.ndarray, approx: np.ndarray) -> float:
    ref, err = ref.astype(np.float64), ref.astype(np.float64) - approx.astype(np.float64)
    return 10 * math.log10(float((ref ** 2).sum()) / float((err ** 2).sum()))


@pytest.mark.parametrize("bits,block", [(8, 32), (4, 32), (4, 64), (2, 64), (4, 128)])
def test_blockwise_with_zero_points_per_block(bits, block):
    model, real = _blockwise(bits, block)
    report = analyze(model, _float_model(), run_models=False)
    [w] = report.weights
    assert (w.form.form, w.form.type_name, w.form.block_size, w.form.zero_points,
            w.form.usage) == ("blockwise", {8: "INT8", 4: "INT4", 2: "INT2"}[bits], block,
                              True, "dynamic")
    f = _float_weight()
    assert w.metrics["sqnr_db"] == pytest.approx(_sqnr(f, real), rel=1e-9)
    blocks = COLS // block
    want = np.array([[_sqnr(f[r, b * block:(b + 1) * block], real[r, b * block:(b + 1) * block])
                      for b in range(blocks)] for r in range(ROWS)])
    np.testing.assert_allclose(w.unit_sqnr, want, rtol=1e-9)
    r, b = np.unravel_index(np.argmin(want), want.shape)
    assert w.worst == {"unit": "block", "index": [int(r), int(b)],
                       "elements": f"[{r}, {b * block}:{(b + 1) * block}]",
                       "sqnr_db": pytest.approx(want.min(), rel=1e-9)}
    scales = load_model(model).subgraphs[0].tensors[2].values().astype(np.float64)
    assert w.scale_outlier_ratio == pytest.approx(scales.max() / np.median(scales))


def test_the_outlier_block_spreads_the_block_scales():
    """The block of outliers (40 times the others' values) has a scale about 40 times the
    median block's: the scale spread says so."""
    model, _ = _blockwise(4, 32)
    [w] = analyze(model, _float_model(), run_models=False).weights
    assert w.scale_outlier_ratio > 20


def test_per_channel_names_the_worst_channel():
    f = _float_weight()
    scales = np.abs(f).max(axis=1) / 127
    scales[3] *= 30  # channel 3 keeps a coarse grid: the worst
    q = np.clip(np.round(f / scales[:, None]), -127, 127).astype(np.int8)
    model = _fc(W(q, "INT8", PerChannel(scales.astype(np.float32)), name="w"))
    [w] = analyze(model, _float_model(), run_models=False).weights
    real = q.astype(np.float64) * scales.astype(np.float32)[:, None].astype(np.float64)
    want = [_sqnr(f[c], real[c]) for c in range(ROWS)]
    np.testing.assert_allclose(w.unit_sqnr, want, rtol=1e-9)
    assert w.worst == {"unit": "channel", "index": [3], "elements": "[3, :]",
                       "sqnr_db": pytest.approx(min(want), rel=1e-9)}
    assert w.form.form == "per-channel" and w.form.usage == "dynamic"


def test_weight_only_int8_has_its_sqnr():
    """The weight of a weight-only model (INT8 -> DEQUANTIZE -> FULLY_CONNECTED): its SQNR
    against the float weight the float op reads (the issue: it showed "-"), and the
    DEQUANTIZE's output is not an activation of its own."""
    f = _float_weight()
    scale = float(np.abs(f).max() / 127)
    q = np.clip(np.round(f / scale), -127, 127).astype(np.int8)
    model = _fc(W(q, "INT8", PerTensor(scale), name="w"), dequantize=True)
    report = analyze(model, _float_model(), samples=2)
    [w] = report.weights
    assert w.form.usage == "weight-only" and w.form.form == "per-tensor"
    assert w.metrics["sqnr_db"] == pytest.approx(
        _sqnr(f, q.astype(np.float64) * np.float64(np.float32(scale))), rel=1e-9)
    assert w.unit_sqnr is None and w.worst is None  # one scale: the tensor is the unit
    assert {t.name for t in report.tensors} == {"x", "y"}
    assert not report.unpaired_quantized


@pytest.mark.parametrize("kind", ["FLOAT16", "BFLOAT16"])
def test_reduced_precision_weights_behind_dequantize(kind):
    """Weights stored in FLOAT16 (the converter's float16 models) or BFLOAT16 and widened
    by a DEQUANTIZE: quantized for `quant` (not "nothing in it is quantized"), compared
    with the float weights after the exact widening.  (A BFLOAT16 DEQUANTIZE is not a
    kernel of LiteRT 2.3 nor of this interpreter: that model's file alone is analysed.)"""
    f = _float_weight()
    model = _fc(W(f.astype(np.float16), name="w"), dequantize=True)
    if kind == "BFLOAT16":
        bits = (f.view(np.uint32) + 0x7FFF + ((f.view(np.uint32) >> 16) & 1)) >> 16
        widened = (bits.astype(np.uint32) << 16).view(np.float32)

        def to_bf16(m):
            t = m.subgraphs[0].tensors[1]
            from tflite_viewer.schema import schema_generated as S
            t.type = S.TensorType.BFLOAT16
            m.buffers[t.buffer].data = bits.astype(np.uint16).view(np.uint8).reshape(-1)
        import tempfile
        from pathlib import Path
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "fp16.tflite"
            p.write_bytes(model)
            model = tree_edited(p, to_bf16)
    else:
        widened = f.astype(np.float16).astype(np.float32)
    qm = load_model(model)
    assert is_quantized(qm)
    runs = kind == "FLOAT16"
    report = analyze(qm, _float_model(), samples=1, run_models=runs)
    [w] = report.weights
    assert (w.form.form, w.form.usage) == ({"FLOAT16": "float16", "BFLOAT16": "bfloat16"}[
        kind], "float")
    assert w.metrics["sqnr_db"] == pytest.approx(_sqnr(f, widened), rel=1e-9)
    assert report.forms == [{"form": w.form.form, "type_name": kind, "usage": "float",
                             "block_size": None, "zero_points": False, "count": 1}]
    assert bool(report.compared()) == runs  # the activations compared too


def test_a_float_model_is_not_quantized():
    assert not is_quantized(load_model(_float_model()))
