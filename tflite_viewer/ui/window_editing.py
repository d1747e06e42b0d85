"""The window's edit flow: the edit session, applying EditCommands, undo and redo, and
showing the re-read model in place after each of them.

A mixin of `MainWindow` (docs/ARCHITECTURE.md, "Three data flows": Edit): panels and
context menus emit EditCommands; the window applies them through its `EditSession` (a `ModelDocument` made on
the first edit, plus the QUndoStack mirroring its history).  After every apply/undo/redo the
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

from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QMenu

from ..edit import EditResult, ExposeTensor, ModelDocument, RemoveOperator
from ..model import Model
from .editing import EditSession, change_notes, human_size
from .focus import remember_focus, restore_focus
from .panels import common as panel_common
from .state.scene_data import SceneData
from .state.selection import find_op
from .workers import lay_out
from .state.workspace import MODEL, SESSION_ENDED, SESSION_NOTICE

log = logging.getLogger(__name__)



class EditFlow:
    """Editing of `MainWindow` (see the module docstring)."""


    # editing
    @property
    def session(self) -> EditSession | None:
        """The edit session of the open model, made on first use (opening stays fast)."""
        ws = self.workspace
        if ws.edit_session is None and ws.model is not None:
            session = EditSession(ModelDocument(ws.model), self)
            session.changed.connect(self._document_changed)
            session.failed.connect(self._edit_failed)
            session.stack.cleanChanged.connect(self._clean_changed)  # a method: Qt disconnects it
            self.undo_group.addStack(session.stack)
            self.undo_group.setActiveStack(session.stack)
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
        return self._session is not None and self._session.is_modified

    def _close_session(self, session: EditSession) -> None:
        """The workspace of ``session`` is closed: its undo history goes with it."""
        self.undo_group.removeStack(session.stack)
        session.close()
        session.deleteLater()
        self.setWindowModified(False)

    def apply_edit(self, command) -> EditResult | None:
        """Apply one EditCommand as one undoable step.  A refused edit shows its message,
        puts the editors back and changes nothing; returns None then."""
        if self.model is None:
            return None
        try:
            session = self.session
        except Exception as exc:  # noqa: BLE001 - a model the edit layer cannot unpack
            log.exception("making the edit document")
            self._edit_failed(f"this model cannot be edited: {exc}")
            return None
        return session.apply(command)

    def remove_operator(self, k: int) -> EditResult | None:
        return self.apply_edit(RemoveOperator(self.subgraph, k))

    def expose_tensor(self, t: int) -> EditResult | None:
        return self.apply_edit(ExposeTensor(self.subgraph, t))

    def undo(self) -> None:
        if self.undo_group.canUndo():
            self.undo_group.undo()

    def redo(self) -> None:
        if self.undo_group.canRedo():
            self.undo_group.redo()

    def _editing_panels(self) -> tuple:
        return (self.properties_panel, self.tensor_panel, self.model_panel)

    def _edit_failed(self, message: str) -> None:
        focus = remember_focus(self._editing_panels())
        self.last_edit_message = f"Edit refused: {message}"
        self.statusBar().showMessage(self.last_edit_message, 20000)
        self.notice.show_notice(f"Not changed: {message}", "error")
        self._refresh_panels()  # the editors show the model's values again
        restore_focus(focus)
        self.editFailed.emit(message)

    def _document_changed(self, model: Model, result: EditResult, seconds: float) -> None:
        """The document has a new model (apply, undo or redo): show it in place."""
        old = self.model
        focus = remember_focus(self._editing_panels())
        keys = self._panel_keys()
        selection = self.selection
        ws = self.workspace
        ws.replace_model(model, result.scope)  # runs, results and pins follow (ws.notes)
        self.tensor_panel.forget_values()
        if not 0 <= self.subgraph < len(model.subgraphs):
            self.subgraph = 0
        current = self.graph_scene.data
        reuse = None
        if current is not None and current.subgraph == self.subgraph and not result.scope.structural:
            reuse = current.layout
        background = self._check_edited_shapes(model)  # at once for small models
        sd = lay_out(model, self.subgraph, self.measure, reuse, self.computed_shapes(self.subgraph),
                     self.expand_composites)
        self.scenes = {self.subgraph: sd}  # the other subgraphs are laid out again when shown
        self.nav.set_model(model)
        self._redisplay(sd)
        self.selection = selection.resolve(model.subgraphs[self.subgraph]) \
            if selection is not None and selection.subgraph is None else None
        self._refresh_panels(keys)
        self._refresh_highlight(False)
        self.model_panel.show_model(model, keep_scroll=True, path=self.path)
        self._changes_stale = True
        self._refresh_changes()
        self._update_title()
        self._report_change(old, model, result, seconds)
        self._show_edit_docks_once()
        restore_focus(focus)
        if background:
            self._check_shapes_in_background(model)
        self.hub.changed(MODEL, ws)
        self.model_replaced.emit(model)
        self.selectionChanged.emit(self.selection)
        self.edited.emit(result)

    def _report_change(self, old: Model | None, model: Model, result: EditResult, seconds: float) -> None:
        size = self._session.document.nbytes if self._session else model.file_size
        message = (f"{result.description} \u2014 {human_size(size)}, "
                   f"re-serialized in {seconds * 1000:.0f} ms")
        notes = change_notes(old, model)
        lines = []
        if notes:
            message += f"; {notes.text()}"
            lines.append(notes.text())
        for w in result.warnings:
            lines.append(f"Warning: {w}")
        lines += self.workspace.notes  # the debug run ended; watches, breakpoints moved
        if result.warnings:
            message += f"; warning: {result.warnings[0]}" + (
                f" (+{len(result.warnings) - 1} more)" if len(result.warnings) > 1 else "")
        self.last_edit_message = message
        self.statusBar().showMessage(message, 20000)
        if lines:
            notes = self.workspace.notes
            dropped = any("dropped" in line for line in notes)
            # about the run this edit ended: the next session takes it away
            self.notice.show_notice("\n".join(lines),
                                    "warning" if result.warnings or dropped else "info",
                                    tag=SESSION_NOTICE if SESSION_ENDED in notes else None)
        elif self.notice.isVisible() and self.notice.level == "error":
            self.notice.dismiss()

    def _refresh_changes(self) -> None:
        if self._changes_stale and self.changes_dock.isVisible():
            self._changes_stale = False
            self.changes_panel.show_changes(self._session.document if self._session else None)

    def _show_edit_docks_once(self) -> None:
        """The first edit in a window opens History and Changes (once: closed, they stay so)."""
        if self._edit_docks_shown:
            return
        self._edit_docks_shown = True
        if self.history_dock.isHidden() and self.changes_dock.isHidden():
            self.history_dock.show()
            self.changes_dock.show()
            self.changes_dock.raise_()

    def _redisplay(self, sd: SceneData) -> None:
        """Show a rebuilt scene of the subgraph on screen, keeping zoom and scroll."""
        transform = self.view.transform()
        center = self.view.mapToScene(self.view.viewport().rect().center())
        self.graph_scene.set_data(sd)
        self.view.setTransform(transform)
        self.view.centerOn(center)
        self._show_trail()
        self.minimap.rebuild()
        if self.find_bar.isVisible() and self.find_bar.edit.text():
            self.find(self.find_bar.edit.text())
        self._update_zoom_label()

    def _panel_keys(self) -> tuple:
        op = self.properties_panel.operator
        t = self.tensor_panel.tensor
        return ((op.subgraph.index, op.index, tuple(op.outputs)) if op is not None else None,
                (t.subgraph.index, t.index) if t is not None else None)

    def _refresh_panels(self, keys: tuple | None = None) -> None:
        """Show the objects the panels showed again, from the current model."""
        if self.model is None:
            return
        op_key, t_key = keys if keys is not None else self._panel_keys()
        subs = self.model.subgraphs
        if op_key is not None:
            s, n, outs = op_key
            k = find_op(subs[s], n, outs) if s < len(subs) else None
            self.properties_panel.show_operator(subs[s].operators[k] if k is not None else None,
                                                self.properties_panel.context, keep_scroll=True)
        if t_key is not None:
            s, t = t_key
            tensor = subs[s].tensors[t] if s < len(subs) and t < len(subs[s].tensors) else None
            self.tensor_panel.show_tensor(tensor, keep_view=True)

    def _canvas_menu(self, kind: str, index: int, pos: QPoint) -> None:
        sd = self.graph_scene.data
        if sd is None or self.model is None:
            return
        menu = QMenu(self)
        origin = sd.labels[index].origin if kind == "node" else None
        if kind == "edge" and getattr(sd, "inline", None) is not None:
            origin = sd.inline.edge_origin.get(index)
        if origin is not None:  # a box or edge inlined from a composite's decomposition
            if kind == "node" and sd.labels[index].kind == "op":
                self.select_inlined(*origin, center=False)
            elif kind == "edge":
                self.select_inlined_tensor(*origin, center=False)
            else:
                return
            name = self.model.subgraphs[origin[0]].display_name
            menu.addAction(f"Open the decomposition ({name}) to edit it",
                           lambda: self.show_subgraph(origin[0]))
            self.debugger.add_menu_actions(menu)
            panel_common.exec_menu(menu, pos)
            return
        if kind == "node" and sd.labels[index].kind == "op":
            k = int(sd.labels[index].op_index)
            self.select_op(k, center=False)
            menu.addAction(f"Remove operator #{k} {sd.labels[index].title}", lambda: self.remove_operator(k))
        else:
            t = sd.labels[index].tensor if kind == "node" else int(sd.edge_tensor[index])
            if t is None or t < 0:
                return
            self.select_tensor(int(t), center=False)
            action = menu.addAction("Expose as subgraph output", lambda: self.expose_tensor(int(t)))
            action.setEnabled(int(t) not in self.model.subgraphs[self.subgraph].outputs)
            if self.model.subgraphs[self.subgraph].tensors[int(t)].is_constant:
                menu.addAction("Replace data from .npy\u2026", self.tensor_panel.replace_dialog)
        self.debugger.add_menu_actions(menu)  # breakpoint / run to here / watch
        panel_common.exec_menu(menu, pos)

    def _own_selection(self):
        """The selection when it is the shown subgraph's own (an inlined operator or tensor
        is edited in its decomposition, not here)."""
        sel = self.selection
        return sel if sel is not None and sel.subgraph is None else None

    def _update_edit_actions(self) -> None:
        sel = self._own_selection()
        self.expose_action.setEnabled(sel is not None and sel.is_tensor and sel.index not in
                                      self.model.subgraphs[self.subgraph].outputs)
        self.remove_op_action.setEnabled(sel is not None and sel.is_op)

    def _expose_selected(self) -> None:
        sel = self._own_selection()
        if sel is not None and sel.is_tensor:
            self.expose_tensor(sel.index)

    def _remove_selected(self) -> None:
        sel = self._own_selection()
        if sel is not None and sel.is_op:
            self.remove_operator(sel.index)
