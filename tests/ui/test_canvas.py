"""The canvas: clicking, find, subgraph navigation, zoom, large graphs, export."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage, QPainter

from benchmarks.synthetic_graphs import residual_dag
from tflite_viewer.ui import style
from tflite_viewer.ui.graph_scene import GraphScene
from tflite_viewer.ui.graph_view import GraphView
from tflite_viewer.ui.state.scene_data import build_scene_data

from .conftest import model_path


def _view_point(window, x: float, y: float) -> QPoint:
    return window.view.mapFromScene(QPointF(x, y))


def _center_of(window, row: int) -> QPoint:
    x, y, w, h = window.graph_scene.data.rects[row].tolist()
    window.view.centerOn(x + w / 2, y + h / 2)
    return _view_point(window, x + w / 2, y + h / 2)


def test_clicking_a_box_selects_its_operator(window, qtbot):
    window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    data = window.graph_scene.data
    row = data.op_node[5]
    qtbot.mouseClick(window.view.viewport(), Qt.MouseButton.LeftButton, pos=_center_of(window, row))
    assert window.selection == ("op", 5)
    assert window.properties_panel.operator.index == 5
    nodes, _, related = window.selected_rows()
    assert nodes == [row] and related


def test_clicking_an_edge_selects_its_tensor(window, qtbot):
    window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    data = window.graph_scene.data
    e = next(i for i, pts in enumerate(data.edge_points) if len(pts) >= 2 and data.edge_tensor[i] >= 0)
    (x0, y0), (x1, y1) = data.edge_points[e][0], data.edge_points[e][1]
    mx, my = (x0 + x1) / 2, (y0 + y1) / 2
    window.view.set_zoom(1.0)
    window.view.centerOn(mx, my)
    qtbot.mouseClick(window.view.viewport(), Qt.MouseButton.LeftButton, pos=_view_point(window, mx, my))
    t = int(data.edge_tensor[e])
    assert window.selection == ("tensor", t)
    assert window.tensor_panel.tensor.index == t
    _, edges, _ = window.selected_rows()
    assert e in edges


def test_clicking_the_background_clears_the_selection(window, qtbot):
    window.open_path(model_path("sine_float.tflite"), wait=True)
    window.select_op(0)
    rect = window.graph_scene.sceneRect()
    qtbot.mouseClick(window.view.viewport(), Qt.MouseButton.LeftButton,
                     pos=_view_point(window, rect.left() + 2, rect.top() + 2))
    assert window.selection is None
    # the panels no longer describe the operator that was selected
    assert window.properties_panel.operator is None
    assert window.properties_panel.title.text() == "No operator selected"
    assert window.tensor_panel.tensor is None


def test_escape_on_the_canvas_clears_the_selection(window, qtbot):
    window.open_path(model_path("sine_float.tflite"), wait=True)
    window.select_tensor(window.model.subgraphs[0].operators[1].outputs[0])
    assert window.tensor_panel.tensor is not None
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_Escape)
    assert window.selection is None and window.tensor_panel.tensor is None
    assert window.properties_panel.operator is None


def test_find_by_type_index_and_name_with_next_previous(window, qtbot):
    window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    sg = window.model.subgraphs[0]
    window.find_bar.open_bar()
    qtbot.keyClicks(window.find_bar.edit, "depthwise_conv_2d")
    matches = window.find_bar.matches
    expected = [op.index for op in sg.operators if op.name == "DEPTHWISE_CONV_2D"]
    assert [m.index for m in matches if m.kind == "op"] == expected
    found_nodes, _ = window.finder.rows(matches)
    assert set(found_nodes) >= {window.graph_scene.data.op_node[k] for k in expected}
    window.find_bar.next()
    assert window.selection == ("op", expected[0])
    window.find_bar.next()
    assert window.selection == ("op", expected[1])
    window.find_bar.previous()
    assert window.selection == ("op", expected[0])
    window.find_bar.previous()
    assert window.selection == (matches[-1].kind, matches[-1].index), "previous wraps around"
    assert window.finder.find("#7")[0].index == 7
    window.find_bar.next()
    assert window.selection == ("op", 7)
    assert [(m.kind, m.index) for m in window.finder.find("t:3")] == [("tensor", 3)]
    both = window.finder.find("12")
    assert {(m.kind, m.index) for m in both} == {("op", 12), ("tensor", 12)}
    name = sg.tensors[40].name
    assert ("tensor", 40) in {(m.kind, m.index) for m in window.finder.find(name)}
    assert window.finder.find("no_such_thing_anywhere") == []
    assert window.find_bar.status.text() == "no matches"


def test_find_shortcuts(window, qtbot):
    window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    window.activateWindow()
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert window.find_bar.isVisible()
    qtbot.keyClicks(window.find_bar.edit, "ADD")
    qtbot.keyClick(window.find_bar.edit, Qt.Key.Key_F3)
    first = window.selection
    assert first is not None and first[0] == "op"
    qtbot.keyClick(window.find_bar.edit, Qt.Key.Key_F3)
    assert window.selection != first
    qtbot.keyClick(window.find_bar.edit, Qt.Key.Key_F3, Qt.KeyboardModifier.ShiftModifier)
    assert window.selection == first
    qtbot.keyClick(window.find_bar.edit, Qt.Key.Key_Escape)
    assert not window.find_bar.isVisible()


def test_double_click_on_while_opens_its_body_and_breadcrumbs_go_back(window, qtbot):
    window.open_path(model_path("control_flow.tflite"), wait=True)
    model = window.model
    while_op = next(op for op in model.subgraphs[0].operators if op.name == "WHILE")
    row = window.graph_scene.data.op_node[while_op.index]
    with qtbot.waitSignal(window.subgraphShown, timeout=10_000) as blocker:
        qtbot.mouseDClick(window.view.viewport(), Qt.MouseButton.LeftButton, pos=_center_of(window, row))
    body = while_op.called_subgraphs["body"]
    assert blocker.args == [body]
    assert window.subgraph == body
    assert [c.subgraph for c in window.trail] == [0, body]
    assert len(window.nav.trail) == 2
    # The other called subgraph is a link in Properties.
    links = {r.link for r in window.properties_panel.rows() if r.section == "Calls"}
    assert f"subgraph:{while_op.called_subgraphs['cond']}" in links
    window.go_back()
    assert window.subgraph == 0 and len(window.trail) == 1


def test_if_links_and_subgraph_selector(window):
    window.open_path(model_path("control_flow.tflite"), wait=True)
    if_op = next(op for op in window.model.subgraphs[0].operators if op.name == "IF")
    window.open_called(if_op.index, "else", wait=True)
    assert window.subgraph == if_op.called_subgraphs["else"]
    window.show_subgraph(3, wait=True)
    assert window.subgraph == 3
    assert [c.subgraph for c in window.trail] == [0, 3], "the trail shows who calls it"
    assert "WHILE #0 cond" in window.trail[-1].label
    assert window.nav.combo.currentIndex() == 3
    window.go_back()
    assert window.subgraph == 0
    window.show_subgraph("serving_default", wait=True)  # a signature key
    assert window.subgraph == 0


def test_zoom_and_fit(window, qtbot):
    window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    view = window.view
    view.set_zoom(1.0)
    view.zoom_in()
    assert view.zoom() == pytest.approx(1.2)
    view.zoom_out()
    view.zoom_out()
    assert view.zoom() == pytest.approx(1 / 1.2)
    view.fit_all()
    visible = view.mapToScene(view.viewport().rect()).boundingRect()
    assert visible.contains(window.graph_scene.sceneRect().adjusted(1, 1, -1, -1))
    z = view.zoom()
    qtbot.keyClick(view, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert view.zoom() > z


def test_twenty_thousand_op_graph_is_a_few_hundred_items_and_paints_at_any_zoom(qtbot):
    data = build_scene_data(None, graph=residual_dag(20_000), measure=style.text_measure())
    scene = GraphScene()
    scene.set_data(data)
    assert len(data.labels) == 20_002
    assert len(scene.items()) < 400, "boxes are batched, not one item each"
    view = GraphView(scene)
    qtbot.addWidget(view)
    view.resize(800, 600)
    image = QImage(800, 600, QImage.Format.Format_ARGB32_Premultiplied)
    for zoom in (None, 0.1, 0.5, 1.0):
        if zoom is None:
            view.fit_all()
        else:
            view.set_zoom(zoom)
        painter = QPainter(image)
        view.render(painter)
        painter.end()
    # hit testing works on the arrays
    x, y, w, h = data.rects[12345].tolist()
    assert scene.node_at(QPointF(x + w / 2, y + h / 2)) == 12345


def test_export_svg_and_png(window, tmp_path):
    window.open_path(model_path("small_cnn_dilated_int8.tflite"), wait=True)
    svg = window.export_image(tmp_path / "g.svg")
    text = svg.read_text()
    assert text.startswith("<?xml") and "<svg" in text and "CONV_2D" in text
    png = window.export_image(tmp_path / "g.png")
    image = QImage(str(png))
    assert not image.isNull() and image.width() > 100
    with pytest.raises(ValueError):
        window.export_image(tmp_path / "g.bmp")


def test_minimap_appears_for_large_graphs(window):
    window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    window.view.set_zoom(1.0)
    assert window.minimap.isVisible()
    centre_before = window.view.mapToScene(window.view.viewport().rect().center())
    window.minimap._view.centerOn(window.minimap._to_scene(QPointF(window.minimap.width() / 2,
                                                                   window.minimap.height() - 2)))
    centre_after = window.view.mapToScene(window.view.viewport().rect().center())
    assert centre_after.y() > centre_before.y()
    window.view.fit_all()
    window.minimap._follow()
    assert not window.minimap.isVisible()
    assert np.isfinite(window.view.zoom())
