"""The window's edit flow: the edit session, applying EditCommands, undo and redo, and
showing the re-read model in place after each of them.

Composed into `MainWindow` (``window.editing``; docs/ARCHITECTURE.md, "Three data flows":
Edit): panels and context menus emit EditCommands; the window applies them through its
`EditSession` (a `ModelDocument` made on the first edit, plus the QUndoStack mirroring its
history).  After every apply/undo/redo the
document's freshly serialized and re-read model replaces ``self.model``: the shown
subgraph's scene is rebuilt (keeping the layout when the graph's structure did not change),
the panels show the same objects again, the selection (a `Selection`, which finds its
operator again by the tensors it produces), the view and the keyboard focus stay, and
the open workspace's `Workspace.replace_model` drops what was computed on the old model
(the debug run, its outputs and profile, the cross-check, the comparison) and moves the
watches and breakpoints to their tensors and operators in the new one (or drops them, with
a notice), and the hub tells the views (topic ``MODEL``); ``model_replaced`` is still
emitted for whoever listens to Qt signals.
"""
from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QPoint
from PySide6.QtWidgets import QMainWindow, QMenu

from ..edit import EditResult, ExposeTensor, ModelDocument, RemoveOperator
from ..model import Model
from .editing import EditSession, change_notes, human_size
from .focus import remember_focus, restore_focus
from .panels import common as panel_common
from .state.selection import find_op
from .workers import lay_out
from .state.workspace import MODEL, SESSION_ENDED, SESSION_NOTICE


log = logging.getLogger(__name__)


class EditFlow(QObject):
    """Editing of `MainWindow` (see the module docstring)."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.w = window
        self.last_message = ""   # the last edit's (or refusal's) status line
        self._docks_shown = False  # History and Changes open at the first edit, once
        self._changes_stale = False

    # -- editing
    @property
    def session(self) -> EditSession | None:
        """The edit session of the open model, made on first use (opening stays fast)."""
        ws = self.w.workspace
        if ws.edit_session is None and ws.model is not None:
            session = EditSession(ModelDocument(ws.model), self)
            session.changed.connect(self._document_changed)
            session.failed.connect(self.edit_failed)
            session.stack.cleanChanged.connect(self.w.files.clean_changed)  # a method: Qt disconnects it
            self.w.undo_group.addStack(session.stack)
            self.w.undo_group.setActiveStack(session.stack)
            ws.edit_session, ws.document = session, session.document
            ws.on_close(lambda: self._close_session(session))  # another model opened
        return ws.edit_session

    @property
    def document(self) -> ModelDocument | None:
        session = self.session
        return session.document if session is not None else None

    @property
    def undo_stack(self):
        session = self.session
        return session.stack if session is not None else None

    @property
    def is_modified(self) -> bool:
        return self.w.workspace.edit_session is not None and self.w.workspace.edit_session.is_modified

    def _close_session(self, session: EditSession) -> None:
        """The workspace of ``session`` is closed: its undo history goes with it."""
        self.w.undo_group.removeStack(session.stack)
        session.close()
        session.deleteLater()
        self.w.setWindowModified(False)

    def apply_edit(self, command) -> EditResult | None:
        """Apply one EditCommand as one undoable step.  A refused edit shows its message,
        puts the editors back and changes nothing; returns None then."""
        if self.w.model is None:
            return None
        try:
            session = self.session
        except Exception as exc:  # noqa: BLE001 - a model the edit layer cannot unpack
            log.exception("making the edit document")
            self.edit_failed(f"this model cannot be edited: {exc}")
            return None
        return session.apply(command)

    def remove_operator(self, k: int) -> EditResult | None:
        return self.apply_edit(RemoveOperator(self.w.subgraph, k))

    def expose_tensor(self, t: int) -> EditResult | None:
        return self.apply_edit(ExposeTensor(self.w.subgraph, t))

    def undo(self) -> None:
        if self.w.undo_group.canUndo():
            self.w.undo_group.undo()

    def redo(self) -> None:
        if self.w.undo_group.canRedo():
            self.w.undo_group.redo()

    def _editing_panels(self) -> tuple:
        return (self.w.properties_panel, self.w.tensor_panel, self.w.model_panel)

    def edit_failed(self, message: str) -> None:
        focus = remember_focus(self._editing_panels())
        self.last_message = f"Edit refused: {message}"
        self.w.statusBar().showMessage(self.last_message, 20000)
        self.w.notice.show_notice(f"Not changed: {message}", "error")
        self.refresh_panels()  # the editors show the model's values again
        restore_focus(focus)
        self.w.editFailed.emit(message)

    def _document_changed(self, model: Model, result: EditResult, seconds: float) -> None:
        """The document has a new model (apply, undo or redo): show it in place."""
        old = self.w.model
        focus = remember_focus(self._editing_panels())
        keys = self._panel_keys()
        selection = self.w.selection
        ws = self.w.workspace
        ws.replace_model(model, result.scope)  # runs, results and pins follow (ws.notes)
        self.w.tensor_panel.forget_values()
        if not 0 <= self.w.subgraph < len(model.subgraphs):
            ws.subgraph = 0
        current = self.w.graph_scene.data
        reuse = None
        if current is not None and current.subgraph == self.w.subgraph and not result.scope.structural:
            reuse = current.layout
        background = self.w.shapes.check_edited(model)  # at once for small models
        sd = lay_out(model, self.w.subgraph, self.w.measure, reuse, self.w.shapes.computed_shapes(self.w.subgraph),
                     self.w.composites.expand)
        self.w.workspace.scenes = {self.w.subgraph: sd}  # the other subgraphs are laid out again when shown
        self.w.nav.set_model(model)
        self.w.navigator.redisplay(sd)
        ws.selection = selection.resolve(model.subgraphs[self.w.subgraph]) \
            if selection is not None and selection.subgraph is None else None
        self.refresh_panels(keys)
        self.w.refresh_highlight(False)
        self.w.model_panel.show_model(model, keep_scroll=True, path=self.w.path)
        self._changes_stale = True
        self.refresh_changes()
        self.w.files.update_title()
        self._report_change(old, model, result, seconds)
        self._show_edit_docks_once()
        restore_focus(focus)
        if background:
            self.w.shapes.check_in_background(model)
        self.w.hub.changed(MODEL, ws)
        self.w.model_replaced.emit(model)
        self.w.selectionChanged.emit(self.w.selection)
        self.w.edited.emit(result)

    def _report_change(self, old: Model | None, model: Model, result: EditResult, seconds: float) -> None:
        size = self.w.workspace.edit_session.document.nbytes if self.w.workspace.edit_session else model.file_size
        message = (f"{result.description} \u2014 {human_size(size)}, "
                   f"re-serialized in {seconds * 1000:.0f} ms")
        notes = change_notes(old, model)
        lines = []
        if notes:
            message += f"; {notes.text()}"
            lines.append(notes.text())
        for w in result.warnings:
            lines.append(f"Warning: {w}")
        lines += self.w.workspace.notes  # the debug run ended; watches, breakpoints moved
        if result.warnings:
            message += f"; warning: {result.warnings[0]}" + (
                f" (+{len(result.warnings) - 1} more)" if len(result.warnings) > 1 else "")
        self.last_message = message
        self.w.statusBar().showMessage(message, 20000)
        if lines:
            notes = self.w.workspace.notes
            dropped = any("dropped" in line for line in notes)
            # about the run this edit ended: the next session takes it away
            self.w.notice.show_notice("\n".join(lines),
                                    "warning" if result.warnings or dropped else "info",
                                    tag=SESSION_NOTICE if SESSION_ENDED in notes else None)
        elif self.w.notice.isVisible() and self.w.notice.level == "error":
            self.w.notice.dismiss()

    def refresh_changes(self) -> None:
        if self._changes_stale and self.w.changes_dock.isVisible():
            self._changes_stale = False
            self.w.changes_panel.show_changes(self.w.workspace.edit_session.document if self.w.workspace.edit_session else None)

    def _show_edit_docks_once(self) -> None:
        """The first edit in a window opens History and Changes (once: closed, they stay so)."""
        if self._docks_shown:
            return
        self._docks_shown = True
        if self.w.history_dock.isHidden() and self.w.changes_dock.isHidden():
            self.w.history_dock.show()
            self.w.changes_dock.show()
            self.w.changes_dock.raise_()

    def _panel_keys(self) -> tuple:
        op = self.w.properties_panel.operator
        t = self.w.tensor_panel.tensor
        return ((op.subgraph.index, op.index, tuple(op.outputs)) if op is not None else None,
                (t.subgraph.index, t.index) if t is not None else None)

    def refresh_panels(self, keys: tuple | None = None) -> None:
        """Show the objects the panels showed again, from the current model."""
        if self.w.model is None:
            return
        op_key, t_key = keys if keys is not None else self._panel_keys()
        subs = self.w.model.subgraphs
        if op_key is not None:
            s, n, outs = op_key
            k = find_op(subs[s], n, outs) if s < len(subs) else None
            self.w.properties_panel.show_operator(subs[s].operators[k] if k is not None else None,
                                                self.w.properties_panel.context, keep_scroll=True)
        if t_key is not None:
            s, t = t_key
            tensor = subs[s].tensors[t] if s < len(subs) and t < len(subs[s].tensors) else None
            self.w.tensor_panel.show_tensor(tensor, keep_view=True)

    def canvas_menu(self, kind: str, index: int, pos: QPoint) -> None:
        sd = self.w.graph_scene.data
        if sd is None or self.w.model is None:
            return
        menu = QMenu(self.w)
        origin = sd.labels[index].origin if kind == "node" else None
        if kind == "edge" and getattr(sd, "inline", None) is not None:
            origin = sd.inline.edge_origin.get(index)
        if origin is not None:  # a box or edge inlined from a composite's decomposition
            if kind == "node" and sd.labels[index].kind == "op":
                self.w.composites.select_inlined(*origin, center=False)
            elif kind == "edge":
                self.w.composites.select_inlined_tensor(*origin, center=False)
            else:
                return
            name = self.w.model.subgraphs[origin[0]].display_name
            menu.addAction(f"Open the decomposition ({name}) to edit it",
                           lambda: self.w.show_subgraph(origin[0]))
            self.w.debugger.add_menu_actions(menu)
            panel_common.exec_menu(menu, pos)
            return
        if kind == "node" and sd.labels[index].kind == "op":
            k = int(sd.labels[index].op_index)
            self.w.select_op(k, center=False)
            menu.addAction(f"Remove operator #{k} {sd.labels[index].title}", lambda: self.remove_operator(k))
        else:
            t = sd.labels[index].tensor if kind == "node" else int(sd.edge_tensor[index])
            if t is None or t < 0:
                return
            self.w.select_tensor(int(t), center=False)
            action = menu.addAction("Expose as subgraph output", lambda: self.expose_tensor(int(t)))
            action.setEnabled(int(t) not in self.w.model.subgraphs[self.w.subgraph].outputs)
            if self.w.model.subgraphs[self.w.subgraph].tensors[int(t)].is_constant:
                menu.addAction("Replace data from .npy\u2026", self.w.tensor_panel.replace_dialog)
        self.w.debugger.add_menu_actions(menu)  # breakpoint / run to here / watch
        panel_common.exec_menu(menu, pos)

    def _own_selection(self):
        """The selection when it is the shown subgraph's own (an inlined operator or tensor
        is edited in its decomposition, not here)."""
        sel = self.w.selection
        return sel if sel is not None and sel.subgraph is None else None

    def update_actions(self) -> None:
        sel = self._own_selection()
        self.w.actions.expose.setEnabled(sel is not None and sel.is_tensor and sel.index not in
                                      self.w.model.subgraphs[self.w.subgraph].outputs)
        self.w.actions.remove_op.setEnabled(sel is not None and sel.is_op)

    def expose_selected(self) -> None:
        sel = self._own_selection()
        if sel is not None and sel.is_tensor:
            self.expose_tensor(sel.index)

    def remove_selected(self) -> None:
        sel = self._own_selection()
        if sel is not None and sel.is_op:
            self.remove_operator(sel.index)
