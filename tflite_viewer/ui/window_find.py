"""Find (Ctrl+F, F3 / Shift+F3): the matches of the Find bar's query in the subgraph shown,
highlighted on the canvas, and stepping from one to the next selects it.

Composed into `MainWindow` (``window.finder``): `state.search.find` decides what matches,
the workspace keeps the matches and the one stepped to, the window highlights them with
the selection (`MainWindow.refresh_highlight`).
"""
from __future__ import annotations

from PySide6.QtWidgets import QMainWindow


from .state.search import Match, find


#: matches highlighted at most (a pattern matching every tensor of a 20,000-op model)
MAX_HIGHLIGHTED = 5000


class FindFlow:
    """See the module docstring."""

    def __init__(self, window: QMainWindow) -> None:
        self.w = window
        bar = window.find_bar
        bar.queryChanged.connect(self.find)
        bar.currentChanged.connect(self.go_to)
        bar.closed.connect(self.clear)
        bar.set_mode(str(window.settings.value("find/mode", "word")))
        bar.modeChanged.connect(self._mode_changed)

    def find(self, query: str) -> list[Match]:
        """Highlight every match of ``query`` in the shown subgraph (in the bar's mode)."""
        w = self.w
        ws = w.workspace
        if w.model is None:
            return []
        bar = w.find_bar
        try:
            ws.find_matches = find(w.model, w.subgraph, query, mode=bar.mode)
        except ValueError as exc:  # a regex that does not compile
            ws.find_matches = []
            bar.set_problem("bad pattern")
            bar.status.setToolTip(str(exc))
        else:
            bar.set_matches(ws.find_matches)
        ws.find_current = None
        w.refresh_highlight(False)
        return ws.find_matches

    def find_again(self) -> None:
        """The query of an open bar, in the subgraph now shown."""
        bar = self.w.find_bar
        if bar.isVisible() and bar.edit.text():
            self.find(bar.edit.text())

    def _mode_changed(self, mode: str) -> None:
        self.w.settings.setValue("find/mode", mode)
        self.find_again()

    def rows(self, matches: list[Match] | None = None) -> tuple[list[int], list[int]]:
        """(boxes, edges) on the canvas of ``matches`` (default: the current ones)."""
        sd = self.w.graph_scene.data
        if sd is None:
            return [], []
        nodes: list[int] = []
        edges: list[int] = []
        if matches is None:
            matches = self.w.workspace.find_matches
        for m in matches[:MAX_HIGHLIGHTED]:
            if m.kind == "op":
                if m.index in sd.op_node:
                    nodes.append(sd.op_node[m.index])
            else:
                nodes.extend(sd.tensor_nodes.get(m.index, []))
                edges.extend(sd.tensor_edges.get(m.index, []))
        return list(dict.fromkeys(nodes)), list(dict.fromkeys(edges))

    def go_to(self, match: Match) -> None:
        self.w.workspace.find_current = match
        if match.kind == "op":
            self.w.select_op(match.index)
        else:
            self.w.select_tensor(match.index)

    def clear(self) -> None:
        ws = self.w.workspace
        ws.find_matches, ws.find_current = [], None
        self.w.refresh_highlight(False)
