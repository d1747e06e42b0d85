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


def _blockwise_model(zero_points: bool) -> tuple[bytes, np.ndarray]:
    """An INT4 [3, 64] constant, blockwise in blocks of 32: FLOAT16 scales [3, 2] and,
    optionally, INT8 zero points [3, 2] (written by the project's writer)."""
    from tflite_viewer.edit.tree import ModelTree
    from tflite_viewer.edit.writer import serialize
    from tflite_viewer.schema import schema_generated as S
    m = S.ModelT()
    m.version = 3
    q = np.arange(-96, 96).reshape(3, 64) % 16 - 8  # every INT4 value
    packed = ((q.reshape(-1, 2)[:, 0] & 15) | ((q.reshape(-1, 2)[:, 1] & 15) << 4))
    arrays = [packed.astype(np.uint8), SCALES.astype(np.float16), ZPS.astype(np.int8)]
    m.buffers = [S.BufferT()]
    for a in arrays:
        b = S.BufferT()
        b.data = np.frombuffer(a.tobytes(), np.uint8)
        m.buffers.append(b)
    sg = S.SubGraphT()
    sg.name = "main"
    sg.tensors = []
    for name, typ, shape, buf in (("w", S.TensorType.INT4, [3, 64], 1),
                                  ("w_scales", S.TensorType.FLOAT16, [3, 2], 2),
                                  ("w_zero_points", S.TensorType.INT8, [3, 2], 3)):
        t = S.TensorT()
        t.name, t.type, t.shape, t.buffer = name, typ, shape, buf
        sg.tensors.append(t)
    bq = S.BlockwiseQuantizationT()
    bq.scales, bq.zeroPoints, bq.blockSize = 1, 2 if zero_points else -1, 32
    qp = S.QuantizationParametersT()
    qp.detailsType, qp.details = S.QuantizationDetails.BlockwiseQuantization, bq
    sg.tensors[0].quantization = qp
    sg.inputs, sg.outputs, sg.operators = [], [], []
    m.subgraphs = [sg]
    m.operatorCodes = []
    return serialize(ModelTree(m)), q


SCALES = np.array([[0.5, 0.25], [2.0, 0.125], [1.5, 0.0625]])
ZPS = np.array([[0, 1], [-2, 3], [4, -4]])


def test_block_view_by_hand_with_and_without_zero_points():
    from tflite_viewer.model import load_model
    from tflite_viewer.ui.state.block_stats import block_view
    for with_zp in (False, True):
        data, q = _blockwise_model(with_zp)
        view = block_view(load_model(data).subgraphs[0].tensors[0])
        assert (view.rows, view.blocks, view.block_size, view.scales_tensor) == (3, 2, 32, 1)
        assert view.zero_points_tensor == (2 if with_zp else None)
        np.testing.assert_array_equal(view.scales, SCALES.astype(np.float32))
        for r in range(3):
            for b in range(2):
                cols = slice(32 * b, 32 * b + 32)
                assert list(view.columns(b)) == list(range(64))[cols]
                np.testing.assert_array_equal(view.block_values(r, b), q[r, cols])
                zp = ZPS[r, b] if with_zp else 0
                np.testing.assert_array_equal(view.dequantized(r, b),
                                              ((q[r, cols] - zp) * SCALES[r, b]).astype(np.float32))
    # parameters that cannot be laid out say why
    from tflite_viewer.model import load_model as lm
    t = lm(_blockwise_model(False)[0]).subgraphs[0].tensors[1]  # the FLOAT16 scales: plain
    assert block_view(t) is None


def test_blocks_tab_shows_the_grid_histogram_and_a_block(window, qtbot):
    opened(window, Q4)
    sg, t = _lm_head(window.model)
    window.show_subgraph(sg.index, wait=True)
    window.select_tensor(t.index)
    panel = window.tensor_panel
    assert panel.tabs.isTabVisible(panel.blocks_tab)
    scales_index = t.quantization.details["scales"]
    rows = {r.key: r for r in panel.rows() if r.section == "Quantization"}
    assert rows["blockwise"].value.startswith("blocks of 32 along the last axis (256 rows x 2")
    assert rows["scale tensor"].link == f"tensor:{scales_index}"
    assert rows["zero-point tensor"].value == "none"
    li = litert(Q4.read_bytes())
    li.allocate_tensors()
    scales = li.get_tensor(scales_index, sg.index)       # FLOAT16 [256, 2]
    ints = li.get_tensor(t.index, sg.index)              # INT4 unpacked to int8 [256, 64]
    pane = panel.blocks_pane
    grid = pane.grid_model
    assert (grid.rowCount(), grid.columnCount()) == (256, 2)
    assert grid.data(grid.index(5, 1)) == f"{float(scales[5, 1]):.4g}"
    assert int(pane.histogram.histogram.counts.sum()) == scales.size
    pane.select_block(5, 1)
    cells = pane.block_model.rows
    assert [c for c, _, _ in cells] == list(range(32, 64))
    assert [s for _, s, _ in cells] == ints[5, 32:64].tolist()
    np.testing.assert_array_equal(np.array([d for _, _, d in cells], np.float32),
                                  ints[5, 32:64].astype(np.float32) * np.float32(scales[5, 1]))
    assert "Row 5, block 1 (columns 32..63)" in pane.block_label.text()
    # every block agrees with the reader's dequantization of the whole tensor
    whole = t.dequantized().reshape(256, 2, 32)
    for r, b in ((0, 0), (5, 1), (255, 1)):
        np.testing.assert_array_equal(pane.view.dequantized(r, b), whole[r, b])
    # the scale tensor is a link: it selects that tensor, which is no blockwise tensor
    pane.scales_link.click()
    assert window.selection == ("tensor", scales_index)
    assert not panel.tabs.isTabVisible(panel.blocks_tab)
