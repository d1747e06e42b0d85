"""The window on the files LLMs come in: a model with side files (the inspector says where
each weight lives, a missing side file is reported, not fatal), and a .litertlm container
(the section picker lists every section and opens the chosen TFLite model)."""
from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from tests.model.test_external_buffers import write_with_side_file
from tflite_viewer.ui.section_picker import SectionPicker

from .conftest import model_path

CONTAINER = model_path("llm") / "tiny_llama.litertlm"


def _text(tree) -> str:
    return "\n".join(f"{r.key}\t{r.value}" for r in tree.rows())


def test_inspector_names_the_side_file_of_an_external_weight(window, tmp_path):
    path = write_with_side_file("sine_float", tmp_path)
    assert window.open_path(path, wait=True)
    assert window.reported == []
    model = window.model
    t = next(t for t in model.subgraphs[0].tensors if t.external_buffer)
    window.select_spec(f"tensor:{t.index}")
    QApplication.processEvents()
    text = _text(window.tensor_panel.info)
    entry = model.external_buffers_by_id[t.external_buffer]
    assert "data in\tweights.bin" in text
    assert f"bytes\t{entry.offset:,}..{entry.offset + entry.length:,} ({entry.length:,} bytes" in text
    panel = _text(window.model_panel)
    assert "side file 0\tweights.bin (" in panel


def test_missing_side_file_opens_the_graph_and_lists_the_problem(window, tmp_path):
    path = write_with_side_file("sine_float", tmp_path)
    (tmp_path / "weights.bin").unlink()
    assert window.open_path(path, wait=True)
    assert window.reported == []  # the graph opens; the Problems dock says what is wrong
    assert any("weights.bin is missing" in f.message for f in window.problems_panel.findings)
    panel = _text(window.model_panel)
    assert "weights.bin (MISSING)" in panel


def test_container_opens_the_picked_section_and_reloads_it(window, qtbot):
    assert window.open_path(CONTAINER, wait=True, section=4)
    assert window.model.origin.section == 4
    assert window.model.subgraphs[0].operators[0].name == "FULLY_CONNECTED"
    assert "[section 4]" in window.windowTitle()
    assert window.actions.open_section.isEnabled()
    assert window.save_target is None  # Save never writes a .tflite over the container
    assert window.reload(wait=True)
    assert window.model.origin.section == 4
    assert window.open_path(CONTAINER, wait=True)  # no section: the first TFLite model
    assert window.model.origin.section == 2
    assert [s.key for s in window.model.signature_defs] == ["prefill_8", "decode"]


def test_section_picker_lists_every_section_and_enables_only_models(window, qtbot):
    from tflite_viewer.model.litertlm import load_container
    picker = SectionPicker(load_container(CONTAINER), current=4)
    qtbot.addWidget(picker)
    items = [picker.list.item(i) for i in range(picker.list.count())]
    assert [i.text().split(" (")[0] for i in items] == [
        "0: LlmMetadataProto", "1: HF_Tokenizer_Zlib", "2: TFLiteModel prefill_decode",
        "3: TFLiteWeights prefill_decode", "4: TFLiteModel embedder"]
    assert [bool(i.flags() & i.flags().ItemIsEnabled) for i in items] == [
        False, False, True, False, True]
    assert picker.chosen() == 4


def test_file_open_of_a_container_asks_which_model(window, qtbot, monkeypatch):
    """The picker shows, the user picks the embedder with the keyboard and Open."""
    def answer():
        picker = next(w for w in QApplication.topLevelWidgets()
                      if isinstance(w, SectionPicker) and w.isVisible())
        picker.list.setCurrentRow(4)
        picker.buttons.button(QDialogButtonBox.StandardButton.Open).click()
    QTimer.singleShot(200, answer)
    with qtbot.waitSignal(window.modelOpened, timeout=60_000):
        assert window.files._open_asking_section(CONTAINER)
    assert window.model.origin.section == 4
