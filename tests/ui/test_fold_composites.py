"""View > Fold Composites: each STABLEHLO_COMPOSITE one box, or every one expanded inline;
remembered in QSettings; a double-click opens a decomposition (from the folded box, and
from an inlined operator, selected there); folded, Step Over runs a composite whole and
Step Into enters it; expanded, a click selects an inlined operator as its own subgraph's,
F9 breaks on it, the run pauses there without leaving the shown subgraph, the current-op
mark is on its box, and Step Over walks the inlined operators one by one."""
from __future__ import annotations

from PySide6.QtCore import Qt

from tests.interpreter.kv_decoder_models import kv_decoder_model
from tflite_viewer.interpreter.session import PAUSED

from .test_canvas import _center_of

TIMEOUT = 30000


def _key(qtbot, window, key, modifier=Qt.KeyboardModifier.NoModifier):
    dbg = window.debugger
    before = dbg.last_stop.serial if dbg.last_stop is not None else 0
    window.activateWindow()
    window.view.setFocus()
    qtbot.keyClick(window.view, key, modifier)
    qtbot.waitUntil(lambda: dbg.last_stop is not None and dbg.last_stop.serial > before
                    and not dbg.busy, timeout=TIMEOUT)
    return dbg.last_stop


def _open(window, tmp_path):
    path = tmp_path / "decoder.tflite"
    path.write_bytes(kv_decoder_model(0))
    assert window.open_path(path, wait=True)
    return window.model


def _composites(model, s):
    return [op for op in model.subgraphs[s].operators if op.name == "STABLEHLO_COMPOSITE"]


def test_fold_composites_is_a_remembered_view_option(qtbot, window, settings, tmp_path):
    from tflite_viewer.ui.errors import ErrorReporter
    from tflite_viewer.ui.main_window import MainWindow
    model = _open(window, tmp_path)
    assert window.actions.fold.isChecked() and window.composites.folded
    folded = window.graph_scene.data
    norms = [lab for lab in folded.labels if lab.title == "odml.rms_norm"]
    assert len(norms) == len(_composites(model, 0)) == 2
    assert norms[0].options == "epsilon=1e-06" and not any(lab.origin for lab in folded.labels)
    window.actions.fold.trigger()  # View > Fold Composites off
    assert not window.actions.fold.isChecked() and settings.value("view/fold_composites") in (
        False, "false")
    data = window.graph_scene.data
    assert data.expanded and data.inline is not None
    assert not any(lab.title == "odml.rms_norm" for lab in data.labels)
    inlined = [lab for lab in data.labels if lab.origin is not None]
    bodies = {op.builtin_options_2["decomposition_subgraph_index"] for op in _composites(model, 0)}
    assert len(inlined) == sum(len(model.subgraphs[b].operators) for b in bodies)
    assert all(lab.constants.startswith("in rms_norm") for lab in inlined)
    ops = sum(lab.kind == "op" for lab in data.labels)
    assert ops == len(model.subgraphs[0].operators) - 2 + len(inlined)
    # a new window with the same settings starts expanded
    other = MainWindow(settings=settings, errors=ErrorReporter(interactive=False))
    qtbot.addWidget(other)
    assert not other.actions.fold.isChecked() and other.composites.expand
    other.close()
    window.actions.fold.trigger()  # and back: one box per composite again
    assert window.composites.folded and not window.graph_scene.data.expanded


def test_double_clicks_open_the_decomposition(qtbot, window, tmp_path):
    model = _open(window, tmp_path)
    norm = _composites(model, 0)[0]
    body = norm.builtin_options_2["decomposition_subgraph_index"]
    row = window.graph_scene.data.op_node[norm.index]
    with qtbot.waitSignal(window.subgraphShown, timeout=10_000):
        qtbot.mouseDClick(window.view.viewport(), Qt.MouseButton.LeftButton,
                          pos=_center_of(window, row))
    assert window.subgraph == body
    window.show_subgraph(0, wait=True)
    window.composites.set_folded(False)
    data = window.graph_scene.data
    row = next(r for r, lab in enumerate(data.labels) if lab.origin == (body, 2))
    qtbot.mouseClick(window.view.viewport(), Qt.MouseButton.LeftButton,
                     pos=_center_of(window, row))
    assert window.selected_op() == (body, 2) and window.subgraph == 0
    assert window.properties_panel.operator.index == 2
    assert window.properties_panel.operator.subgraph.index == body
    with qtbot.waitSignal(window.subgraphShown, timeout=10_000):
        qtbot.mouseDClick(window.view.viewport(), Qt.MouseButton.LeftButton,
                          pos=_center_of(window, row))
    assert window.subgraph == body and window.selection == ("op", 2)


def test_folded_step_over_runs_a_composite_whole_and_step_into_enters_it(qtbot, window,
                                                                          tmp_path):
    model = _open(window, tmp_path)
    norm = _composites(model, 0)[0]
    body = norm.builtin_options_2["decomposition_subgraph_index"]
    dbg = window.debugger
    dbg.run_to(0, norm.index)
    qtbot.waitUntil(lambda: dbg.last_stop is not None and not dbg.busy, timeout=TIMEOUT)
    assert dbg.last_stop.position == ((0, norm.index),)
    over = _key(qtbot, window, Qt.Key.Key_F10)
    assert over.position == ((0, norm.index + 1),) and window.subgraph == 0
    dbg.restart()
    qtbot.waitUntil(lambda: not dbg.busy, timeout=TIMEOUT)
    dbg.run_to(0, norm.index)
    qtbot.waitUntil(lambda: dbg.last_stop.position == ((0, norm.index),) and not dbg.busy,
                    timeout=TIMEOUT)
    into = _key(qtbot, window, Qt.Key.Key_F11)
    assert into.position == ((0, norm.index), (body, 0))
    assert window.subgraph == body  # folded: the decomposition is shown to step through


def test_expanded_breakpoint_on_an_inlined_op_and_step_over_walks_them(qtbot, window,
                                                                       tmp_path):
    model = _open(window, tmp_path)
    window.composites.set_folded(False)
    norm = _composites(model, 0)[0]
    body = norm.builtin_options_2["decomposition_subgraph_index"]
    data = window.graph_scene.data
    row = data.inline.node_of[(body, 1)]
    qtbot.mouseClick(window.view.viewport(), Qt.MouseButton.LeftButton,
                     pos=_center_of(window, row))
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_F9)
    assert [(e.op.subgraph, e.op.index) for e in window.workspace.breakpoints] == [(body, 1)]
    stop = _key(qtbot, window, Qt.Key.Key_F5)
    assert stop.state == PAUSED and stop.position == ((0, norm.index), (body, 1))
    assert window.subgraph == 0  # the composite is drawn here: no jump to its subgraph
    overlay = window.graph_scene._debug_overlay
    slot = data.inline.slots().index((body, 1))
    n_ops = len(model.subgraphs[0].operators)
    assert overlay.current == n_ops + slot and overlay.op_rect(overlay.current) is not None
    assert overlay._breakpoints.get(n_ops + slot) is True  # the dot on the inlined box
    n = len(model.subgraphs[body].operators)
    for k in range(2, n):
        assert _key(qtbot, window, Qt.Key.Key_F10).position == ((0, norm.index), (body, k))
    last = _key(qtbot, window, Qt.Key.Key_F10)  # past the decomposition's end, no pause
    assert last.position == ((0, norm.index + 1),)
    assert window.subgraph == 0
