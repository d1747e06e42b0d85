"""What the window shows, as text, for the workspace tests: every string a user could read
anywhere in the window (labels, buttons, line edits, tree and table cells of any model,
tab titles, dock titles, tooltips, the status bar, hidden docks included), and the steps
that put state into every dock and overlay of a model."""
from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import (QAbstractButton, QAbstractItemView, QApplication, QComboBox,
                               QDockWidget, QLabel, QLineEdit, QPlainTextEdit, QTabBar,
                               QTextEdit, QWidget)

TIMEOUT = 20_000
ROLES = (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole)


def _model_texts(model, parent: QModelIndex = QModelIndex(), limit: int = 20_000) -> list[str]:
    out: list[str] = []
    if model is None:
        return out
    try:
        cols = model.columnCount(parent)
        tree = True
    except TypeError:  # a list model (the undo view's): one column, no children
        cols, tree = 1, False
    rows = model.rowCount(parent)
    for r in range(min(rows, limit)):
        for c in range(cols):
            index = model.index(r, c, parent)
            for role in ROLES:
                value = model.data(index, role)
                if isinstance(value, str) and value:
                    out.append(value)
        first = model.index(r, 0, parent)
        try:
            children = tree and model.hasChildren(first)
        except TypeError:  # a table model: flat
            tree = children = False
        if children:
            out += _model_texts(model, first, limit)
    for c in range(cols):
        value = model.headerData(c, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole)
        if isinstance(value, str):
            out.append(value)
    return out


def window_texts(window, exclude=()) -> list[str]:
    """Every text of the window and its children (see the module docstring), but those of
    the widgets ``exclude`` and their children."""
    texts = [window.windowTitle()]
    if window.statusBar() not in exclude:
        texts.append(window.statusBar().currentMessage())
    widgets = [window] + window.findChildren(QWidget)
    for w in widgets:
        if any(w is x or x.isAncestorOf(w) for x in exclude):
            continue
        if w.toolTip():
            texts.append(w.toolTip())
        if isinstance(w, QLabel):
            texts.append(w.text())
        elif isinstance(w, QAbstractButton):
            texts.append(w.text())
        elif isinstance(w, QLineEdit):
            texts.append(w.text())
        elif isinstance(w, (QPlainTextEdit, QTextEdit)):
            texts.append(w.toPlainText())
        elif isinstance(w, QComboBox):
            texts += [w.itemText(i) for i in range(w.count())]
        elif isinstance(w, QTabBar):
            texts += [w.tabText(i) for i in range(w.count())]
        elif isinstance(w, QDockWidget):
            texts.append(w.windowTitle())
        if isinstance(w, QAbstractItemView):
            texts += _model_texts(w.model())
    # what the canvas draws: the boxes' and edges' texts of the scene shown
    data = window.graph_scene.data
    if data is not None:
        for lab in data.labels:
            texts += [str(x) for x in vars(lab).values() if isinstance(x, str)]
        texts += [text for _x, _y, text, _t in data.edge_labels]
    return [t for t in texts if t]


def naming(texts: list[str], names: set[str]) -> list[tuple[str, str]]:
    """(name, text) for every text that contains one of ``names``."""
    return [(n, t) for t in texts for n in names if n in t]


def tensor_names(model) -> set[str]:
    return {t.name for sg in model.subgraphs for t in sg.tensors if t.name}


@pytest.fixture
def failing_excepthook(monkeypatch):
    """Any exception that reaches ``sys.excepthook`` (a Qt slot, a view of the hub) fails
    the test at its end, with the exceptions listed."""
    caught: list[BaseException] = []
    previous = sys.excepthook

    def hook(kind, exc, tb):
        caught.append(exc)
        previous(kind, exc, tb)
    monkeypatch.setattr(sys, "excepthook", hook)
    yield caught
    QApplication.processEvents()
    assert not caught, f"exceptions reached the excepthook: {caught!r}"


def wait_stop(qtbot, dbg, before: int):
    qtbot.waitUntil(lambda: dbg.last_stop is not None and dbg.last_stop.serial > before
                    and not dbg.busy, timeout=TIMEOUT)
    return dbg.last_stop


def key(qtbot, window, k, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    window.activateWindow()
    window.view.setFocus()
    qtbot.keyClick(window.view, k, modifier)
