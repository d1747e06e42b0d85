"""A two-column key/value tree whose values can be links ("tensor:12", "op:3", "subgraph:2").

The panels describe objects as rows; keeping the rows as data (`rows()`) as well as items
lets tests check exactly what a user sees against the reader without scraping widgets.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QPainter, QPalette
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QLabel, QSizePolicy, QSplitter,
                               QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

LINK_ROLE = Qt.ItemDataRole.UserRole + 1
LINK_COLOR = QColor("#0969da")
ROW_HEIGHT = 24  # every row (uniform heights keep big trees fast) has room for an editor


def split_panes(orientation: Qt.Orientation, *panes: tuple[QWidget, int]) -> QSplitter:
    """A splitter of ``(widget, stretch)`` panes, as the panels and docks lay them out."""
    split = QSplitter(orientation)
    for k, (widget, stretch) in enumerate(panes):
        split.addWidget(widget)
        split.setStretchFactor(k, stretch)
    return split


def panel_layout(owner: QWidget) -> QVBoxLayout:
    """The vertical layout of a panel or dock body, with the panels' small margins."""
    layout = QVBoxLayout(owner)
    layout.setContentsMargins(2, 2, 2, 2)
    return layout


class ElidedLabel(QLabel):
    """One line of text, cut in the middle when it does not fit (its tooltip has all of
    it): a long tensor name beside buttons, word-wrapped in a squeezed dock, lost its first
    and last lines instead."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt API
        super().setText(text)
        self.setToolTip(text)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(40, super().minimumSizeHint().height())

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt API
        painter = QPainter(self)
        # the whole label first: a longer text before (a tensor's name) left the marks of
        # its underscores under a shorter one ("No tensor selected" after another model)
        painter.fillRect(self.rect(), self.palette().color(QPalette.ColorRole.Window))
        rect = self.contentsRect().adjusted(self.margin(), 0, -self.margin(), 0)
        text = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideMiddle, rect.width())
        painter.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        painter.setFont(self.font())
        painter.drawText(rect, int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft), text)


def min_rows(view: QAbstractItemView, rows: int = 5) -> None:
    """Keep room for ``rows`` rows and the header in a table or tree: a dock sharing its
    area can shrink it no further (a table showing one row at a time is no table; at
    1440x900 a bottom dock brought forward shows eight or more, and at 1024x700 five leave
    the canvas its room).  A table's rows are made compact (the font's height and a
    little), as a tree's are."""
    row = max(view.fontMetrics().height() + 6, 18)
    vertical = getattr(view, "verticalHeader", None)
    if vertical is not None:  # a table: its rows are as high as its vertical header says
        vertical().setDefaultSectionSize(row + 2)
        vertical().setMinimumSectionSize(row)
        row += 2
    header = getattr(view, "header", None) or getattr(view, "horizontalHeader")
    head = header().sizeHint().height() if header is not None else 0
    view.setMinimumHeight(head + rows * row + 2 * view.frameWidth() + 4)


def exec_menu(menu, pos) -> None:
    """Run a context menu (one place, so tests can replace the modal loop)."""
    menu.exec(pos)


@dataclass(frozen=True)
class Row:
    section: str
    key: str
    value: str
    link: str | None = None


def format_value(value: Any, limit: int = 200) -> str:
    """Options and metadata values as a person reads them."""
    if isinstance(value, float):
        return f"{value:.7g}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        text = " ".join(f"{b:02x}" for b in raw[:64])
        return text + (f" \u2026 ({len(raw)} bytes)" if len(raw) > 64 else "")
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        text = "[" + ", ".join(format_value(v, 40) for v in value[:32]) + (
            f", \u2026 {len(value)} items]" if len(value) > 32 else "]")
        return text if len(text) <= limit else text[:limit - 1] + "\u2026"
    if value is None:
        return "\u2014"
    text = str(value)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


#: pixels a level of a `LinkTree` is indented by (Qt's default is 20)
KEY_INDENT = 12


class LinkTree(QTreeWidget):
    """Key/value rows grouped in sections; clicking a link row emits ``linkActivated``."""

    linkActivated = Signal(str)

    def __init__(self, parent: QWidget | None = None, headers: tuple[str, str] = ("Property", "Value")) -> None:
        super().__init__(parent)
        self.setColumnCount(2)
        self.setHeaderLabels(list(headers))
        self.setAlternatingRowColors(True)
        self.setUniformRowHeights(True)
        # a key sits two levels in (section, row): Qt's 20 px a level takes 40 px of a
        # dock that is under 300 px wide on a 1024-pixel screen
        self.setIndentation(KEY_INDENT)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.header().setStretchLastSection(True)
        self.setColumnWidth(0, 150)
        self.itemClicked.connect(self._clicked)
        self.itemActivated.connect(self._clicked)
        self._rows: list[Row] = []
        self._editors: list[QWidget] = []
        self._fit: tuple[int, int | None, float] | None = None  # the last fit_key_column

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        if self._fit is not None and event.size().width() != event.oldSize().width():
            self.fit_key_column(*self._fit)  # a narrower dock: the values keep their share

    def updateGeometries(self) -> None:  # noqa: N802 - Qt API
        super().updateGeometries()
        self._fit_value_column()

    def _fit_value_column(self) -> None:
        """The value column ends at the viewport's edge.  Qt's stretched last section
        never shrinks below the header's default section size (100 px), so a key column
        sized to its names in a dock under 300 px pushed the values behind a horizontal
        scroll bar; the values column is cut to what is left instead (each value's
        tooltip holds it whole)."""
        header = self.header()
        room = self.viewport().width() - self.columnWidth(0)
        if header.length() > self.viewport().width() and room >= header.minimumSectionSize():
            header.resizeSection(1, room)

    def clear_rows(self) -> None:
        # Editors are deleted later by Qt; silence them now so a focused one losing its focus
        # on the way out cannot commit a value to a model that has moved on.
        for w in self._editors:
            w.blockSignals(True)
            for child in w.findChildren(QWidget):
                child.blockSignals(True)
        self._editors = []
        self.clear()
        self._rows = []

    def mark(self) -> tuple[int, int]:
        """Where the rows end now: `truncate` to it drops everything added after."""
        return self.topLevelItemCount(), len(self._rows)

    def truncate(self, mark: tuple[int, int]) -> None:
        """Drop the top-level sections (and their rows) added after ``mark`` (plain rows
        only: sections with editors are never added after a mark)."""
        top, rows = mark
        while self.topLevelItemCount() > top:
            self.takeTopLevelItem(top)
        del self._rows[rows:]

    def set_editor(self, item: QTreeWidgetItem, editor: QWidget) -> QWidget:
        """Put a value editor in the value column of ``item`` (the row keeps its text in
        `rows()`; the cell shows the editor)."""
        item.setText(1, "")
        self.setItemWidget(item, 1, editor)
        self._editors.append(editor)
        return editor

    def scroll_position(self) -> int:
        return self.verticalScrollBar().value()

    def restore_scroll(self, value: int) -> None:
        self.verticalScrollBar().setValue(value)

    def section(self, title: str, expanded: bool = True) -> QTreeWidgetItem:
        item = QTreeWidgetItem(self, [title, ""])
        font = QFont(item.font(0))
        font.setBold(True)
        item.setFont(0, font)
        item.setFirstColumnSpanned(True)
        item.setExpanded(expanded)
        if self.topLevelItemCount() == 1:  # uniform row heights: the first row sets them all
            item.setSizeHint(0, QSize(0, ROW_HEIGHT))
        return item

    def add(self, parent: QTreeWidgetItem, key: str, value: Any, link: str | None = None,
            tooltip: str | None = None) -> QTreeWidgetItem:
        text = value if isinstance(value, str) else format_value(value)
        item = QTreeWidgetItem(parent, [key, text])
        item.setToolTip(0, key)
        item.setToolTip(1, tooltip or text)
        if link:
            item.setData(1, LINK_ROLE, link)
            item.setForeground(1, LINK_COLOR)
            font = QFont(item.font(1))
            font.setUnderline(True)
            item.setFont(1, font)
        section = parent.text(0)
        top = parent
        while top.parent() is not None:
            top = top.parent()
            section = f"{top.text(0)}/{section}"
        self._rows.append(Row(section, key, text, link))
        return item

    def fit_key_column(self, lo: int = 110, hi: int | None = 190, share: float = 0.55) -> None:
        """Size the key column to its contents, within reason (``hi`` None: at most
        ``share`` of the tree's width, so "fused_activation_function" is not cut while the
        value keeps its room); kept when the tree is resized."""
        self._fit = (lo, hi, share)
        if hi is None:
            hi = max(lo, int(self.viewport().width() * share))
        self.resizeColumnToContents(0)
        self.setColumnWidth(0, min(max(self.columnWidth(0), lo), hi))
        self._fit_value_column()

    def rows(self) -> list[Row]:
        return list(self._rows)

    def _clicked(self, item: QTreeWidgetItem, column: int = 1) -> None:
        link = item.data(1, LINK_ROLE)
        if link:
            self.linkActivated.emit(str(link))
