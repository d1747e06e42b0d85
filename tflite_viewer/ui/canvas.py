"""The window's centre: the graph canvas with what belongs to it.

Top to bottom: the navigation bar (subgraph selector and trail), the canvases side by
side (A's, and B's while a comparison is open: `add_pane`), each with its legend strip
under it (`overlays.LegendStrip`: legends never cover a node), and the Find bar.  Over
the canvas only the notice bar (what an edit did) and, before a model is open, the
placeholder; the overview map keeps a margin of the canvas's own (`minimap.Minimap`).
"""
from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QSplitter, QVBoxLayout, QWidget

from .breadcrumbs import NavigationBar
from .find_bar import FindBar
from .graph_scene import GraphScene
from .graph_view import GraphView
from .minimap import Minimap
from .notice import NoticeBar
from .overlays import LegendStrip

PLACEHOLDER = "Open a model: File \u203a Open (Ctrl+O), or drop a .tflite file here"


def canvas_column(view: GraphView, strip: LegendStrip, header: QWidget | None = None) -> QWidget:
    """A canvas with its legend strip under it (and a header over it)."""
    column = QWidget()
    layout = QVBoxLayout(column)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(0)
    if header is not None:
        layout.addWidget(header)
    layout.addWidget(view, 1)
    layout.addWidget(strip)
    return column


class Canvas(QWidget):
    """See the module docstring; ``scene``, ``view``, ``minimap``, ``nav``, ``find_bar``,
    ``notice``, ``strip`` and ``placeholder`` are its parts."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.scene = GraphScene(self)
        self.view = GraphView(self.scene)
        self.minimap = Minimap(self.view)
        self.nav = NavigationBar()
        self.find_bar = FindBar()
        self.find_bar.hide()
        self.find_bar.return_focus = self.view
        self.strip = LegendStrip()
        self.placeholder = QLabel(PLACEHOLDER, self.view)
        self.placeholder.setStyleSheet("color: #6e7781; font-size: 15px;")
        self.placeholder.adjustSize()
        self.notice = NoticeBar()
        self.notice.attach(self.view)  # over the canvas: showing it never moves the graph
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.setChildrenCollapsible(False)
        self.split.addWidget(canvas_column(self.view, self.strip))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.nav)
        layout.addWidget(self.split, 1)
        layout.addWidget(self.find_bar)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def add_pane(self, pane: QWidget) -> None:
        """A canvas beside A's (B's in a comparison), hidden until shown."""
        self.split.addWidget(pane)
        pane.hide()

    def show_pane(self, pane: QWidget, shown: bool) -> None:
        """Show or hide a pane beside A's; shown, the two share the width."""
        if shown and pane.isHidden():
            pane.show()
            half = max(self.split.width() // 2, 1)
            self.split.setSizes([half, self.split.width() - half])
        elif not shown:
            pane.hide()

    def centre_placeholder(self) -> None:
        self.placeholder.move(max((self.view.width() - self.placeholder.width()) // 2, 0),
                              max((self.view.height() - self.placeholder.height()) // 2, 0))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        """Small: the docks and the window's size decide the canvas's, never its parts'
        widest line."""
        return QSize(320, 240)
