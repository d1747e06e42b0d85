"""The window's layout: the default one that gives the graph the room, the one the user made
(remembered in QSettings with `QMainWindow.saveState`), View > Reset Layout, and Help >
Keyboard Shortcuts (listed from the actions themselves, so it cannot go stale).

A mixin of `MainWindow`.  The default layout: Model on the left and Properties over Tensor
on the right, each at most a fifth and a third of the window's width and never narrower
than its columns need; the bottom area (Problems, the debugger's docks, Quantization) is
folded away while Problems has nothing to list and nothing else was asked for.  Tabs of
docks sharing a place keep their full titles (scroll arrows instead of "Probl\u2026").
"""
from __future__ import annotations

from PySide6.QtCore import QByteArray, QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QMenu, QTabBar, QTreeWidget,
                               QTreeWidgetItem, QVBoxLayout)

#: the smallest widths at which the side docks still show their two columns
MODEL_MIN_WIDTH = 250
SIDE_MIN_WIDTH = 280
#: settings keys of the remembered layout (bump LAYOUT_VERSION when docks change names)
LAYOUT_VERSION = 1
STATE_KEY, GEOMETRY_KEY = "window/state", "window/geometry"


class _TabBars(QObject):
    """Keeps the tab bars of tabified docks showing whole titles: Qt makes them lazily, as
    children of the window (at ChildAdded a new one is not a QTabBar yet: the check waits
    for the event loop)."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.pending = False

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.ChildAdded and not self.pending:
            self.pending = True
            QTimer.singleShot(0, self._fix)
        return False

    def _fix(self) -> None:
        self.pending = False
        self.window.fix_tab_bars()


class LayoutFlow:
    """The layout of `MainWindow` (see the module docstring)."""

    def _init_layout(self) -> None:
        """After every dock exists: minimum widths, tab bars, the default layout kept for
        Reset Layout, then the user's remembered one (if ``remember_layout``)."""
        self.model_panel.setMinimumWidth(MODEL_MIN_WIDTH)
        for panel in (self.properties_panel, self.tensor_panel):
            panel.setMinimumWidth(SIDE_MIN_WIDTH)
        self._tab_watcher = _TabBars(self)
        self.installEventFilter(self._tab_watcher)
        self.fold_problems(True)  # nothing opened: nothing to list
        self._default_state = self.saveState(LAYOUT_VERSION)
        self._layout_restored = False
        if self.remember_layout:
            geometry = self.settings.value(GEOMETRY_KEY)
            state = self.settings.value(STATE_KEY)
            if isinstance(geometry, QByteArray) and not geometry.isEmpty():
                self.restoreGeometry(geometry)
            if isinstance(state, QByteArray) and not state.isEmpty():
                self._layout_restored = self.restoreState(state, LAYOUT_VERSION)
        self.fix_tab_bars()

    def save_layout(self) -> None:
        """Remember the docks and the window's geometry (on close)."""
        if self.remember_layout:
            self.settings.setValue(STATE_KEY, self.saveState(LAYOUT_VERSION))
            self.settings.setValue(GEOMETRY_KEY, self.saveGeometry())

    def reset_layout(self) -> None:
        """View > Reset Layout: the docks where they start, sized for the window."""
        self.restoreState(self._default_state, LAYOUT_VERSION)
        self._size_docks()
        self.fix_tab_bars()
        self.fold_problems(self.problems_panel.count() == 0)
        if self.remember_layout:
            self.settings.remove(STATE_KEY)
        self.statusBar().showMessage("The default layout is back", 5000)

    def _size_docks(self) -> None:
        """Side docks a share of the window's width (the canvas keeps the most), never
        below the widths their columns need; Properties over Tensor a third / two thirds."""
        w, h = self.width(), self.height()
        left = max(MODEL_MIN_WIDTH, min(300, int(w * 0.2)))
        right = max(SIDE_MIN_WIDTH, min(440, int(w * 0.3)))
        self.resizeDocks([self.model_dock, self.properties_dock], [left, right],
                         Qt.Orientation.Horizontal)
        self.resizeDocks([self.problems_dock], [max(160, h // 4)], Qt.Orientation.Vertical)
        self.resizeDocks([self.properties_dock, self.tensor_dock],
                         [int(h * 0.36), int(h * 0.64)], Qt.Orientation.Vertical)

    def keep_canvas_room(self) -> None:
        """After the window shrank: side docks wider than their share give the canvas its
        room back when it has less than two fifths of the width (Qt takes a shrink out of
        the centre alone: at 1024 px the canvas was left 290 px)."""
        w = self.width()
        centre = self.centralWidget().width()
        if centre >= 0.4 * w:
            return
        docks, sizes = [], []
        for dock, share, least in ((self.model_dock, 0.2, MODEL_MIN_WIDTH),
                                   (self.properties_dock, 0.3, SIDE_MIN_WIDTH)):
            cap = max(least, int(w * share))
            if dock.isVisible() and not dock.isFloating() and dock.width() > cap:
                docks.append(dock)
                sizes.append(cap)
        if docks:
            self.resizeDocks(docks, sizes, Qt.Orientation.Horizontal)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        if not getattr(self, "_docks_sized", False):
            self._docks_sized = True
            if not self._layout_restored:
                self._size_docks()

    def fold_problems(self, empty: bool) -> None:
        """Problems is shown while it lists something and folded away while it is empty;
        the bottom area goes with it unless another of its docks is in use."""
        dock = self.problems_dock
        if empty and not dock.isHidden():
            dock.hide()
        elif not empty and dock.isHidden():
            dock.show()
            others = [d for d in self.tabifiedDockWidgets(dock) if not d.isHidden()]
            if not others:
                dock.raise_()

    def fix_tab_bars(self) -> None:
        """Whole titles on the tabs of docks sharing a place, with scroll arrows when they
        do not fit (instead of "Probl\u2026", "Call \u2026", "W\u2026")."""
        for bar in self.findChildren(QTabBar):
            if bar.parent() is self:
                bar.setElideMode(Qt.TextElideMode.ElideNone)
                bar.setUsesScrollButtons(True)

    # -- Help > Keyboard Shortcuts -----------------------------------------------------------
    def shortcut_rows(self) -> list[tuple[str, str, str]]:
        """(menu, action, keys) of every action with a shortcut, from the menus (in their
        order) and then the window's other actions."""
        rows: list[tuple[str, str, str]] = []
        seen: set[int] = set()

        def walk(menu: QMenu, path: str) -> None:
            for action in menu.actions():
                if action.menu() is not None:
                    walk(action.menu(), f"{path} \u203a {_plain(action.text())}")
                    continue
                keys = _keys(action)
                if keys and id(action) not in seen:
                    seen.add(id(action))
                    rows.append((path, _plain(action.text()), keys))

        for top in self.menuBar().actions():
            if top.menu() is not None:
                walk(top.menu(), _plain(top.text()))
        for action in self.findChildren(QAction):
            keys = _keys(action)
            if keys and id(action) not in seen and action.text():
                seen.add(id(action))
                rows.append(("Window", _plain(action.text()), keys))
        return rows

    def show_shortcuts(self) -> QDialog:
        """Help > Keyboard Shortcuts: every shortcut, grouped by menu."""
        dialog = QDialog(self)
        dialog.setWindowTitle("Keyboard Shortcuts")
        tree = QTreeWidget()
        tree.setHeaderLabels(["Action", "Keys"])
        tree.setRootIsDecorated(True)
        groups: dict[str, QTreeWidgetItem] = {}
        for menu, text, keys in self.shortcut_rows():
            parent = groups.get(menu)
            if parent is None:
                parent = groups[menu] = QTreeWidgetItem(tree, [menu, ""])
                parent.setFirstColumnSpanned(True)
                parent.setExpanded(True)
            QTreeWidgetItem(parent, [text, keys])
        tree.resizeColumnToContents(0)
        tree.setColumnWidth(0, max(tree.columnWidth(0), 260))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(dialog.reject)
        layout = QVBoxLayout(dialog)
        layout.addWidget(tree)
        layout.addWidget(buttons)
        dialog.resize(520, 600)
        dialog.tree = tree
        dialog.show()
        return dialog


def _plain(text: str) -> str:
    """A menu text without its mnemonic ampersand and ellipsis."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("\u2026").strip()


def _keys(action: QAction) -> str:
    return ", ".join(s.toString(QKeySequence.SequenceFormat.NativeText)
                     for s in action.shortcuts() if not s.isEmpty())
