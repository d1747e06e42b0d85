"""The editor and blockwise quantization (BlockwiseQuantization: INT4 weights, one FLOAT16
scale per block of 32 values along the last axis, in another tensor), on the
litert-torch decoder in tests/data/models/llm.

* Round trip: re-serializing keeps every field, the details included, and an unrelated
  edit leaves every blockwise tensor, and what LiteRT computes, unchanged.
* Values: integers replace a blockwise tensor's values as they are (the description says
  the block scales are kept); ``requantize=True`` re-quantizes each block with its own
  scale (the description says so); a float array without it, and a per-tensor scale on
  a blockwise tensor, are refused with `EditError`.

LiteRT reads the edited files back (its get_tensor unpacks INT4 to int8 and gives the
FLOAT16 scales): the independent view of what was written.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tests.edit.helpers import model_fields
from tests.litert_oracle import litert
from tflite_viewer.edit import (ModelDocument, RenameTensor, ReplaceTensorData,
                                SetQuantization, serialize, unpack)
from tflite_viewer.model import EditError, load_model

Q4 = MODELS_DIR / "llm" / "tiny_llama_q4_block32.tflite"
BLOCK = 32


def _lm_head(model):
    """(subgraph, tensor) of decode's LM head weight: INT4 [256, 64], blockwise."""
    sg = model.subgraphs[model.signature("decode").subgraph_index]
    t = next(t for t in sg.tensors if t.name.endswith("Linear_lm_head;") and
             t.quantization is not None and t.quantization.details)
    assert t.type_name == "INT4" and t.shape == (256, 64)
    return sg.index, t


def _litert_tensor(data: bytes, subgraph: int, index: int) -> np.ndarray:
    li = litert(data)
    li.allocate_tensors()
    return li.get_tensor(index, subgraph)


def _decode_logits(data: bytes) -> np.ndarray:
    kv = {f"kv_cache_{a}_{k}": np.zeros((1, 32, 2, 16), np.float32) for a in "kv" for k in (0, 1)}
    return litert(data).get_signature_runner("decode")(
        tokens=np.array([[9]], np.int32), input_pos=np.array([0], np.int32), **kv)["logits"]


def test_round_trip_keeps_blockwise_quantization_unchanged():
    m = load_model(Q4)
    again = load_model(serialize(unpack(m)))
    assert model_fields(again) == model_fields(m)
    sg, t = _lm_head(m)
    assert again.subgraphs[sg].tensors[t.index].quantization.details == {
        "type": "BlockwiseQuantization", "scales": t.quantization.details["scales"],
        "zero_points": -1, "block_size": BLOCK}
    # an unrelated edit: the blockwise tensors and what LiteRT computes do not change
    doc = ModelDocument(Q4)
    doc.apply(RenameTensor(sg, t.quantization.details["scales"], "lm_head_scales"))
    edited = doc.model
    for k, sub in enumerate(m.subgraphs):
        for a in sub.tensors:
            if a.quantization is not None and a.quantization.details:
                b = edited.subgraphs[k].tensors[a.index]
                assert b.quantization.details == a.quantization.details
                assert b.data().tobytes() == a.data().tobytes()
    np.testing.assert_array_equal(_decode_logits(doc.to_bytes()), _decode_logits(Q4.read_bytes()))


def test_integer_values_replace_a_blockwise_tensor_as_they_are():
    doc = ModelDocument(Q4)
    sg, t = _lm_head(doc.model)
    scales_index = t.quantization.details["scales"]
    new = np.random.default_rng(4).integers(-8, 8, t.shape).astype(np.int8)
    result = doc.apply(ReplaceTensorData(sg, t.index, new))
    assert "raw INT4 values" in result.description and \
        f"block scales in tensor {scales_index} are kept" in result.description
    data = doc.to_bytes()
    np.testing.assert_array_equal(_litert_tensor(data, sg, t.index), new)
    np.testing.assert_array_equal(_litert_tensor(data, sg, scales_index),
                                  _litert_tensor(Q4.read_bytes(), sg, scales_index))
    assert load_model(data).subgraphs[sg].tensors[t.index].quantization.details == \
        t.quantization.details


def test_requantize_quantizes_each_block_with_its_own_scale():
    doc = ModelDocument(Q4)
    sg, t = _lm_head(doc.model)
    scales_index = t.quantization.details["scales"]
    original = _litert_tensor(Q4.read_bytes(), sg, t.index).astype(np.int64)
    scales = _litert_tensor(Q4.read_bytes(), sg, scales_index).astype(np.float64)  # [256, 2]
    per_value = np.repeat(scales, BLOCK, axis=1)                                   # [256, 64]
    # the dequantized values themselves re-quantize to the very same integers
    same = (original * per_value).astype(np.float32)
    result = doc.apply(ReplaceTensorData(sg, t.index, same, requantize=True))
    assert f"requantized per block of {BLOCK}" in result.description
    assert f"block scales of tensor {scales_index}" in result.description
    np.testing.assert_array_equal(_litert_tensor(doc.to_bytes(), sg, t.index), original)
    # other values: round half away from zero of x / (its block's scale), clamped to INT4
    rng = np.random.default_rng(7)
    x = (rng.uniform(-9, 9, t.shape) * per_value).astype(np.float32)
    x[0, :BLOCK] = 20 * per_value[0, :BLOCK]  # far outside the first block's range
    result = doc.apply(ReplaceTensorData(sg, t.index, x, requantize=True))
    v = x.astype(np.float64) / per_value
    rounded = np.sign(v) * np.floor(np.abs(v) + 0.5)
    want = np.clip(rounded, -8, 7).astype(np.int8)
    np.testing.assert_array_equal(_litert_tensor(doc.to_bytes(), sg, t.index), want)
    clipped = int(np.count_nonzero((rounded < -8) | (rounded > 7)))
    assert clipped > BLOCK  # the first block, and the draws past +-8.5
    assert any(f"{clipped} value(s) outside their block's range were clipped" in w
               for w in result.warnings), result.warnings
    # the scales stayed what they were
    np.testing.assert_array_equal(_litert_tensor(doc.to_bytes(), sg, scales_index),
                                  scales.astype(np.float16))


def test_float_values_without_requantize_and_a_per_tensor_scale_are_refused():
    doc = ModelDocument(Q4)
    sg, t = _lm_head(doc.model)
    before = doc.to_bytes()
    with pytest.raises(EditError, match="requantize=True"):
        doc.apply(ReplaceTensorData(sg, t.index, np.zeros(t.shape, np.float32)))
    with pytest.raises(EditError, match="quantized blockwise"):
        doc.apply(SetQuantization(sg, t.index, 0.05, 0))
    assert doc.to_bytes() == before
