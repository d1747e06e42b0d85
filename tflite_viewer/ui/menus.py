"""The window's menus and their actions (File, Edit, View, Go, Help).

Built once for a `MainWindow` (`build_menus`, before its docks: a dock's toggle joins the
View menu when the dock is hosted); every action calls one of the window's methods or
those of the parts it is composed of.  The actions the rest of the code refers to are
kept by name in the `Actions` returned (``window.actions.undo``, ``.save`` ...).
"""
from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QApplication, QMainWindow, QMenu, QWidget

from .focus import UndoKeys



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


class Actions:
    """The window's menus (``file``, ``edit``, ``view``, ``go``, ``help``, ``recent``) and
    the actions the window and tests refer to, by name."""

    file: QMenu
    edit: QMenu
    view: QMenu
    go: QMenu
    help: QMenu
    recent_menu: QMenu
    open_section: QAction
    reload: QAction
    compare: QAction
    stop_compare: QAction
    save: QAction
    save_as: QAction
    undo: QAction
    redo: QAction
    expose: QAction
    remove_op: QAction
    update_shapes: QAction
    minimap: QAction
    fold: QAction
    reset_layout: QAction
    shortcuts: QAction
    undo_keys: UndoKeys


def build_menus(w: QMainWindow) -> Actions:
    a = Actions()
    bar = w.menuBar()
    a.file, a.edit, a.view = bar.addMenu("&File"), bar.addMenu("&Edit"), bar.addMenu("&View")
    a.go, a.help = bar.addMenu("&Go"), bar.addMenu("&Help")
    _file_menu(w, a)
    _edit_menu(w, a)
    _view_menu(w, a)
    add_action(w, a.go, "&Back", w.go_back, "Alt+Left", "Back to the calling subgraph")
    a.shortcuts = add_action(w, a.help, "&Keyboard Shortcuts", w.show_shortcuts, "Ctrl+/",
                             "Every shortcut of the window, by menu")
    add_action(w, a.help, "&About", w.about)
    return a


def _file_menu(w: QMainWindow, a: Actions) -> None:
    m, files = a.file, w.files
    add_action(w, m, "&Open\u2026", files.open_dialog, QKeySequence.StandardKey.Open)
    a.open_section = add_action(w, m, "Open Container &Section\u2026", files.open_section_dialog)
    a.open_section.setEnabled(False)
    a.recent_menu = m.addMenu("Open &Recent")
    a.recent_menu.aboutToShow.connect(files.fill_recent)
    a.reload = add_action(w, m, "&Reload", lambda: files.reload(), "Ctrl+R")
    a.compare = add_action(w, m, "&Compare With\u2026", lambda: w.compare.choose(),
                           "Ctrl+Shift+D", "Compare the open model with another")
    a.stop_compare = add_action(w, m, "Stop Comparing", lambda: w.compare.stop(),
                                tip="Close the comparison")
    a.stop_compare.setEnabled(False)  # until a comparison opens
    m.addSeparator()
    a.save = add_action(w, m, "&Save", files.save, QKeySequence.StandardKey.Save,
                        "Save the edited model (asks before replacing the opened file)")
    a.save_as = add_action(w, m, "Save &As / Export\u2026", files.save_as, "Ctrl+Shift+S",
                           "Write the edited model to a new file")
    m.addSeparator()
    add_action(w, m, "&Export Image\u2026", files.export_dialog, "Ctrl+E",
               "Save the shown subgraph as SVG or PNG")
    m.addSeparator()
    add_action(w, m, "&Quit", w.close, QKeySequence.StandardKey.Quit)


def _edit_menu(w: QMainWindow, a: Actions) -> None:
    m, editing = a.edit, w.editing
    a.undo = w.undo_group.createUndoAction(w, "&Undo")
    a.undo.setShortcut(QKeySequence.StandardKey.Undo)
    a.redo = w.undo_group.createRedoAction(w, "&Redo")
    a.redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
    # from anywhere: a floating dock too, and a text field with nothing of its own to undo
    a.undo.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
    a.redo.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
    a.undo_keys = UndoKeys(a.undo, a.redo, w)
    QApplication.instance().installEventFilter(a.undo_keys)
    m.addAction(a.undo)
    m.addAction(a.redo)
    m.addSeparator()  # History and Changes go here (their docks' toggles)
    a.expose = add_action(w, m, "E&xpose Tensor as Subgraph Output", editing.expose_selected,
                          tip="Make the selected tensor an output of its subgraph")
    a.remove_op = add_action(w, m, "Remove &Operator", editing.remove_selected,
                             tip="Remove the selected operator (input and output must match)")
    a.update_shapes = add_action(w, m, "&Update Stored Shapes", w.shapes.update_stored_shapes,
                                 tip="Write the shapes the operators compute into the model")
    a.update_shapes.setEnabled(False)
    m.aboutToShow.connect(editing.update_actions)
    m.addSeparator()
    add_action(w, m, "&Find\u2026", w.find_bar.open_bar, QKeySequence.StandardKey.Find)
    add_action(w, m, "Find &Next", w.find_bar.next, "F3")
    add_action(w, m, "Find &Previous", w.find_bar.previous, "Shift+F3")


def _view_menu(w: QMainWindow, a: Actions) -> None:
    m = a.view
    add_action(w, m, "Zoom &In", w.view.zoom_in, ["Ctrl+=", "Ctrl++"])
    add_action(w, m, "Zoom &Out", w.view.zoom_out, "Ctrl+-")
    add_action(w, m, "&Fit Graph", w.fit_graph, "Ctrl+0", "Fit the graph, keeping its labels readable")
    add_action(w, m, "Fit &Width", w.view.fit_width, "Ctrl+9")
    a.minimap = add_action(w, m, "&Overview Map", w.minimap.set_enabled_by_user)
    a.minimap.setCheckable(True)
    a.minimap.setChecked(True)
    a.fold = add_action(w, m, "Fold &Composites", w.composites.set_folded,
                        tip="Draw each STABLEHLO_COMPOSITE as one box (its name and "
                            "attributes); off: every composite expanded inline")
    a.fold.setCheckable(True)
    a.fold.setChecked(w.composites.folded)
    m.addSeparator()
    a.reset_layout = add_action(w, m, "&Reset Layout", w.reset_layout,
                                tip="Put every dock back where it starts (and the canvas's "
                                    "colouring off)")
    m.addSeparator()  # every dock's toggle follows (`DockHost.add`)
