"""Help > Keyboard Shortcuts: every shortcut of the window, listed from the actions
themselves (so the list cannot go stale), grouped by menu."""
from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QMainWindow, QMenu, QTreeWidget,
                               QTreeWidgetItem, QVBoxLayout)


def shortcut_rows(window: QMainWindow) -> list[tuple[str, str, str]]:
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

    for top in window.menuBar().actions():
        if top.menu() is not None:
            walk(top.menu(), _plain(top.text()))
    for action in window.findChildren(QAction):
        keys = _keys(action)
        if keys and id(action) not in seen and action.text():
            seen.add(id(action))
            rows.append(("Window", _plain(action.text()), keys))
    return rows


class ShortcutsDialog(QDialog):
    """Help > Keyboard Shortcuts: every shortcut of ``window``, grouped by menu."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.setWindowTitle("Keyboard Shortcuts")
        self.tree = tree = QTreeWidget()
        tree.setHeaderLabels(["Action", "Keys"])
        tree.setRootIsDecorated(True)
        groups: dict[str, QTreeWidgetItem] = {}
        for menu, text, keys in shortcut_rows(window):
            parent = groups.get(menu)
            if parent is None:
                parent = groups[menu] = QTreeWidgetItem(tree, [menu, ""])
                parent.setFirstColumnSpanned(True)
                parent.setExpanded(True)
            QTreeWidgetItem(parent, [text, keys])
        tree.resizeColumnToContents(0)
        tree.setColumnWidth(0, max(tree.columnWidth(0), 260))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(tree)
        layout.addWidget(buttons)
        self.resize(520, 600)


def _plain(text: str) -> str:
    """A menu text without its mnemonic ampersand and ellipsis."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("\u2026").strip()


def _keys(action: QAction) -> str:
    return ", ".join(s.toString(QKeySequence.SequenceFormat.NativeText)
                     for s in action.shortcuts() if not s.isEmpty())
