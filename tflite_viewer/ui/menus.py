"""The window's menus and their actions (File, Edit, View, Go, Help).

Built once for a `MainWindow`; every action calls one of the window's public methods (or
a widget's), and the actions the rest of the code refers to are kept on the window under
their old names (``window.undo_action``, ``window.save_action`` ...).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMenu, QWidget

from .focus import UndoKeys

if TYPE_CHECKING:
    from .main_window import MainWindow


def add_action(owner: QWidget, menu: QMenu, text: str, slot: Callable, shortcut=None,
               tip: str = "") -> QAction:
    """An action of window ``owner`` in ``menu``, calling ``slot``."""
    action = QAction(text, owner)
    if shortcut is not None:
        if isinstance(shortcut, (list, tuple)):
            action.setShortcuts([QKeySequence(s) for s in shortcut])
        else:
            action.setShortcut(QKeySequence(shortcut))
    if tip:
        action.setStatusTip(tip)
    action.triggered.connect(slot)
    menu.addAction(action)
    return action


def build_menus(w: MainWindow) -> None:
    bar = w.menuBar()
    _file_menu(w, bar.addMenu("&File"))
    _edit_menu(w, bar.addMenu("&Edit"))
    _view_menu(w, bar.addMenu("&View"))
    m = bar.addMenu("&Go")
    add_action(w, m, "&Back", w.go_back, "Alt+Left", "Back to the calling subgraph")
    m = bar.addMenu("&Help")
    w.shortcuts_action = add_action(w, m, "&Keyboard Shortcuts", w.show_shortcuts, "Ctrl+/",
                                    "Every shortcut of the window, by menu")
    add_action(w, m, "&About", w.about)


def _file_menu(w: MainWindow, m: QMenu) -> None:
    add_action(w, m, "&Open\u2026", w.open_dialog, QKeySequence.StandardKey.Open)
    w.open_section_action = add_action(w, m, "Open Container &Section\u2026",
                                       w.open_section_dialog)
    w.open_section_action.setEnabled(False)
    w.recent_menu = m.addMenu("Open &Recent")
    w.recent_menu.aboutToShow.connect(w._fill_recent)
    w.reload_action = add_action(w, m, "&Reload", w.reload, "Ctrl+R")
    m.addSeparator()
    w.save_action = add_action(w, m, "&Save", w.save, QKeySequence.StandardKey.Save,
                               "Save the edited model (asks before replacing the opened file)")
    w.save_as_action = add_action(w, m, "Save &As / Export\u2026", w.save_as, "Ctrl+Shift+S",
                                  "Write the edited model to a new file")
    m.addSeparator()
    add_action(w, m, "&Export Image\u2026", w.export_dialog, "Ctrl+E", "Save the shown subgraph as SVG or PNG")
    m.addSeparator()
    add_action(w, m, "&Quit", w.close, QKeySequence.StandardKey.Quit)


def _edit_menu(w: MainWindow, m: QMenu) -> None:
    w.edit_menu = m
    w.undo_action = w.undo_group.createUndoAction(w, "&Undo")
    w.undo_action.setShortcut(QKeySequence.StandardKey.Undo)
    w.redo_action = w.undo_group.createRedoAction(w, "&Redo")
    w.redo_action.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
    # from anywhere: a floating dock too, and a text field with nothing of its own to undo
    w.undo_action.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
    w.redo_action.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
    w.undo_keys = UndoKeys(w.undo_action, w.redo_action, w)
    QApplication.instance().installEventFilter(w.undo_keys)
    m.addAction(w.undo_action)
    m.addAction(w.redo_action)
    history = w.history_dock.toggleViewAction()
    history.setText("&History")
    changes = w.changes_dock.toggleViewAction()
    changes.setText("&Changes")
    m.addAction(history)
    m.addAction(changes)
    m.addSeparator()
    w.expose_action = add_action(w, m, "E&xpose Tensor as Subgraph Output", w._expose_selected,
                                 tip="Make the selected tensor an output of its subgraph")
    w.remove_op_action = add_action(w, m, "Remove &Operator", w._remove_selected,
                                    tip="Remove the selected operator (input and output must match)")
    w.update_shapes_action = add_action(w, m, "&Update Stored Shapes", w.update_stored_shapes,
                                        tip="Write the shapes the operators compute into the model")
    w.update_shapes_action.setEnabled(False)
    m.aboutToShow.connect(w._update_edit_actions)
    m.addSeparator()
    add_action(w, m, "&Find\u2026", w.find_bar.open_bar, QKeySequence.StandardKey.Find)
    add_action(w, m, "Find &Next", w.find_bar.next, "F3")
    add_action(w, m, "Find &Previous", w.find_bar.previous, "Shift+F3")


def _view_menu(w: MainWindow, m: QMenu) -> None:
    add_action(w, m, "Zoom &In", w.view.zoom_in, ["Ctrl+=", "Ctrl++"])
    add_action(w, m, "Zoom &Out", w.view.zoom_out, "Ctrl+-")
    add_action(w, m, "&Fit Graph", w.fit_graph, "Ctrl+0", "Fit the graph, keeping its labels readable")
    add_action(w, m, "Fit &Width", w.view.fit_width, "Ctrl+9")
    w.minimap_action = add_action(w, m, "&Overview Map", w.minimap.set_enabled_by_user)
    w.minimap_action.setCheckable(True)
    w.minimap_action.setChecked(True)
    w.fold_action = add_action(w, m, "Fold &Composites", w.set_fold_composites,
                               tip="Draw each STABLEHLO_COMPOSITE as one box (its name and "
                                   "attributes); off: every composite expanded inline")
    w.fold_action.setCheckable(True)
    w.fold_action.setChecked(w.fold_composites)
    m.addSeparator()
    w.reset_layout_action = add_action(w, m, "&Reset Layout", w.reset_layout,
                                       tip="Put every dock back where it starts")
    m.addSeparator()
    for dock in (w.model_dock, w.properties_dock, w.tensor_dock, w.problems_dock,
                 w.history_dock, w.changes_dock):
        m.addAction(dock.toggleViewAction())
