"""A blockwise-quantized tensor in the window (the litert-torch int4 decoder of
tests/data/models/llm): replacing its values from a float .npy asks whether to quantize
block by block, says so, and writes what LiteRT reads back as the per-block rounding."""
from __future__ import annotations

import shutil

import numpy as np
from PySide6.QtWidgets import QFileDialog, QMessageBox

from tests.litert_oracle import litert

from .conftest import MODELS
from .test_editing import answer, opened

Q4 = MODELS / "llm" / "tiny_llama_q4_block32.tflite"


def _lm_head(model):
    sg = model.subgraphs[model.signature("decode").subgraph_index]
    return sg, next(t for t in sg.tensors if t.name.endswith("Linear_lm_head;")
                    and t.quantization is not None and t.quantization.details)


def test_replace_values_of_a_blockwise_tensor_requantizes_per_block(window, tmp_path,
                                                                    monkeypatch):
    path = tmp_path / Q4.name
    shutil.copyfile(Q4, path)
    opened(window, path)
    sg, t = _lm_head(window.model)
    window.show_subgraph(sg.index, wait=True)
    window.select_tensor(t.index)
    scales_index = t.quantization.details["scales"]
    li = litert(Q4.read_bytes())
    li.allocate_tensors()
    scales = np.repeat(li.get_tensor(scales_index, sg.index).astype(np.float64), 32, axis=1)
    x = (np.random.default_rng(2).uniform(-7, 7, t.shape) * scales).astype(np.float32)
    npy = tmp_path / "w.npy"
    np.save(npy, x)
    asked = []
    answer(monkeypatch, QMessageBox.StandardButton.Yes, asked)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(npy), "")))
    window.tensor_panel.replace_dialog()
    assert asked == ["Requantize from float?"]
    assert "requantized per block of 32" in window.statusBar().currentMessage()
    out = litert(window.document.to_bytes())
    out.allocate_tensors()
    v = x.astype(np.float64) / scales
    want = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), -8, 7).astype(np.int8)
    np.testing.assert_array_equal(out.get_tensor(t.index, sg.index), want)
    np.testing.assert_array_equal(out.get_tensor(scales_index, sg.index),
                                  li.get_tensor(scales_index, sg.index))
