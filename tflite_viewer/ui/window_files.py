"""The window's file flows: open (with its worker and stale-result guard), reload, save,
save as, the unsaved-changes prompt, image export, recent files and drag and drop.

Composed into `MainWindow` (``window.files``): it reads and sets the open `Workspace`
(``model``, ``path``, ``save_target``, the edit session) and calls the window's display
methods; what it keeps is which open is the newest.  Opening runs in a worker task; a
result is applied only if it answers the newest request, so a slow open can never
overwrite a later one, and a failure leaves the open model untouched.  Until the new model
is shown, everything on screen (the title, the canvas, the panels) stays the old one's,
and then all of it changes at once.  An opened model gets a new workspace, which replaces
the old one whole (`workspace.Hub.replace`); a Reload carries the watches and breakpoints
over to the reloaded file's tensors and operators, by name.  Nothing is written to the
opened file unless the user confirms it.
"""
from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QDialog, QFileDialog, QMainWindow, QMessageBox

from ..model import EditError, ModelFormatError
from .editing import human_size
from .recent import add_recent, clear_recent, recent_files
from ..model.litertlm import path_is_container
from .render import render_scene
from .section_picker import SectionPicker, container_sections
from .workers import Opened, Task, open_model
from .state.workspace import Workspace


APP_NAME = "tflite-viewer"


class FileFlows(QObject):
    """Open / save / export / recent files of `MainWindow` (see the module docstring)."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.w = window
        self._open_serial = 0
        self._open_requests: dict[int, tuple] = {}  # running opens: (path, selection, carry)
        self.pending_select: str | None = None

    # opening
    def open_dialog(self) -> None:
        """File > Open: the unsaved-changes question first (once), then the file."""
        if not self.maybe_save():
            return
        start = str(self.w.path.parent) if self.w.path else ""
        path, _ = QFileDialog.getOpenFileName(
            self.w, "Open model", start, "TFLite models and LiteRT-LM containers "
            "(*.tflite *.lite *.tfl *.litertlm);;All files (*)")
        if path:
            self._open_asking_section(path)

    def _open_asking_section(self, path: str | Path, current: int | None = None) -> bool:
        """Open ``path``; a .litertlm container with several TFLite models first asks which
        one (the section picker), one with a single model opens it."""
        section = None
        if path_is_container(path):
            try:
                container = container_sections(path)
            except (ModelFormatError, OSError) as exc:
                self._open_failed(Path(path), exc)
                return False
            if len(container.model_sections) > 1:
                picker = SectionPicker(container, current, parent=self.w)
                if picker.exec() != QDialog.DialogCode.Accepted or picker.chosen() is None:
                    return False
                section = picker.chosen()
        return self.open_path(path, ask=False, section=section)

    def open_section_dialog(self) -> None:
        """File > Open Container Section: another model of the open container."""
        origin = self.w.model.origin if self.w.model is not None else None
        if origin is None or origin.path is None or not self.maybe_save():
            return
        self._open_asking_section(origin.path, current=origin.section)

    def reload(self, *, wait: bool = False) -> bool:
        """Open the model's file again (it may have changed on disk): the subgraph and the
        selection stay, and the watches and breakpoints follow their tensors by name."""
        if self.w.path is None:
            return False
        origin = self.w.model.origin if self.w.model is not None else None
        return self.open_path(self.w.path, subgraph=self.w.subgraph, keep_selection=True,
                              carry=True, wait=wait,
                              section=origin.section if origin is not None else None)

    def open_path(self, path: str | Path, *, subgraph: int | str | None = None, wait: bool = False,
                  keep_selection: bool = False, ask: bool = True, carry: bool = False,
                  section: int | None = None) -> bool:
        """Open ``path``; in a worker unless ``wait``.  Returns False when a synchronous open
        failed or the user kept unsaved edits (the open model, if any, stays).  ``ask``
        False: the caller already asked about unsaved edits; ``carry``: a reload (the
        watches and breakpoints carry over); ``section``: the TFLite section of a
        .litertlm container (its first one by default)."""
        if ask and not self.maybe_save():
            return False
        path = Path(path)
        selection = self.w.selection if keep_selection else None
        self.w.busy(f"Opening {path.name}\u2026")
        if wait:
            try:
                opened = open_model(path, subgraph, self.w.measure, section,
                                    self.w.composites.expand)
            except BaseException as exc:  # noqa: BLE001 - reported, never raised to Qt
                self._open_failed(path, exc)
                return False
            self._opened(opened, selection, wait=True, carry=carry)
            return True
        task = Task(open_model, path, subgraph, self.w.measure, section, self.w.composites.expand)
        self._open_serial = task.serial
        # bound methods of this child of the window, not lambdas holding it: an open that
        # ends after the window is gone is disconnected by Qt instead of reaching it
        task.signals.finished.connect(self._task_done)
        task.signals.failed.connect(self._task_failed)
        self.w.tasks[task.serial] = task
        self._open_requests[task.serial] = (path, selection, carry)
        task.start()
        return True

    def _task_done(self, serial: int, result: Opened) -> None:
        self.w.tasks.pop(serial, None)
        _path, selection, carry = self._open_requests.pop(serial, (None, None, False))
        if serial == self._open_serial:
            self._opened(result, selection, carry=carry)

    def _task_failed(self, serial: int, exc: BaseException) -> None:
        self.w.tasks.pop(serial, None)
        path, _selection, _carry = self._open_requests.pop(serial, (None, None, False))
        if serial == self._open_serial:
            self._open_failed(path, exc)

    def _open_failed(self, path: Path, exc: BaseException) -> None:
        self.w.idle()
        if isinstance(exc, ModelFormatError):
            what = "LiteRT-LM container" if path_is_container(path) else "TFLite model"
            # the file as a whole ("<file>"): its reason says what it is not; else where
            why = exc.reason if exc.where == "<file>" else str(exc)
            title, message = "Cannot open model", f"{path.name} is not a valid {what}:\n\n{why}"
        elif isinstance(exc, OSError):
            title, message = "Cannot open model", f"{path.name} cannot be read:\n\n{exc.strerror or exc}"
        elif isinstance(exc, KeyError):
            title, message = "Cannot open model", f"{path.name}: {exc.args[0] if exc.args else exc}"
        else:
            self.w.errors.unexpected(exc)
            self.w.openFailed.emit(str(exc))
            return
        if self.w.model is not None:
            message += f"\n\n{self.w.path.name if self.w.path else 'The open model'} stays open."
        self.w.errors.report(title, message, parent=self.w)
        self.w.openFailed.emit(message)

    def _opened(self, opened: Opened, selection=None, wait: bool = False, carry: bool = False) -> None:
        """Show an opened model: a new workspace replaces the old one whole (its debug
        session, tasks and undo history end with it) and every view renders the new one."""
        self.w.idle()
        ws = Workspace(opened.model, opened.path, opened.summary)
        ws.scenes = {opened.scene.subgraph: opened.scene}
        if carry and self.w.model is not None:
            ws.carry_over(self.w.workspace)  # a reload: watches and breakpoints follow by name
        self.w.notice.dismiss()
        self.w.hub.replace(ws)
        title = opened.path.name if opened.path else "model"
        if opened.model.origin is not None:
            title = str(opened.model.origin)
        if opened.path is not None:
            add_recent(self.w.settings, opened.path)
        self.w.actions.open_section.setEnabled(opened.model.origin is not None)
        self.w.nav.set_model(self.w.model)
        self.w.shapes.set_check(None)
        self.w.workspace.trail = self.w.navigator.trail_to(opened.scene.subgraph)
        self.w.navigator.display(opened.scene)
        n_ops = opened.summary.n_ops
        self.w.statusBar().showMessage(f"Opened {title}: {n_ops:,} operators in {opened.seconds:.2f} s", 8000)
        if ws.notes:
            self.w.notice.show_notice("\n".join(ws.notes), "warning")
        self.w.modelOpened.emit(self.w.model)
        self.w.shapes.check_opened(self.w.model, wait)
        self.w.model_replaced.emit(self.w.model)
        if selection is not None:
            self.w.restore_selection(selection)
        if self.pending_select:
            spec, self.pending_select = self.pending_select, None
            self.w.select_spec(spec)
        if not wait and self.w.isVisible():
            self.w.repaint()  # the canvas and the panels on screen first ...
        self.update_title()  # ... then the title: they change together

    # -- saving --------------------------------------------------------------------------------
    def clean_changed(self, _clean: bool) -> None:
        self.update_title()

    def update_title(self) -> None:
        target = self.w.save_target or self.w.path
        name = target.name if target is not None else ("model" if self.w.model is not None else "")
        origin = self.w.model.origin if self.w.model is not None else None
        if self.w.save_target is None and origin is not None:
            name = f"{name} [section {origin.section}]"
        self.w.setWindowTitle(f"{name}[*] \u2014 {APP_NAME}" if name else APP_NAME)
        self.w.setWindowModified(self.w.is_modified)

    def _is_original(self, target: Path) -> bool:
        """Whether ``target`` is the file the model was opened from."""
        original = self.w.workspace.edit_session.document.path if self.w.workspace.edit_session is not None else self.w.path
        if original is None or not target.exists():
            return False
        try:
            return os.path.samefile(target, original)
        except OSError:
            return False

    def save(self) -> bool:
        """Save the edits where the model came from (or was last saved as).  Replacing the
        opened file needs the user's confirmation; without it nothing is written."""
        if self.w.model is None:
            return False
        if not self.w.is_modified:
            self.w.statusBar().showMessage("No changes to save", 5000)
            return True
        if self.w.save_target is None:
            return self.save_as()
        return self.save_to(self.w.save_target)

    def save_as(self) -> bool:
        """Write the edited model to a file the user picks (Save As / Export)."""
        if self.w.model is None:
            return False
        base = self.w.save_target or self.w.path
        suggestion = str(base.with_name(f"{base.stem}_edited{base.suffix or '.tflite'}")) if base else "model.tflite"
        if self.w.save_target is None and self.w.model.origin is not None and base is not None:
            # a model of a container is saved as a .tflite of its own (with its side files)
            suggestion = str(base.with_name(f"{base.stem}_section{self.w.model.origin.section}.tflite"))
        path, _ = QFileDialog.getSaveFileName(self.w, "Save model as", suggestion,
                                              "TFLite models (*.tflite);;All files (*)")
        if not path:
            return False
        target = Path(path)
        if not target.suffix:
            target = target.with_suffix(".tflite")
        return self.save_to(target)

    def save_to(self, target: str | Path) -> bool:
        target = Path(target)
        session = self.w.editing.session
        if session is None:
            return False
        overwrite = self._is_original(target)
        if overwrite:
            answer = QMessageBox.question(
                self.w, "Replace the opened model?",
                f"Save the changes into {target.name}, replacing the model you opened?\n\n{target}"
                "\n\nChoose No and use Save As to keep the original.",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
            if answer != QMessageBox.StandardButton.Yes:
                self.w.statusBar().showMessage(f"Not saved: {target.name} was left unchanged", 10000)
                return False
        try:
            out = session.document.save(target, overwrite_original=overwrite)
        except (EditError, OSError) as exc:
            self.w.errors.report("Cannot save model", f"{target}: {getattr(exc, 'strerror', None) or exc}",
                               parent=self.w)
            return False
        session.mark_saved()
        self.w.workspace.save_target = self.w.workspace.path = out
        add_recent(self.w.settings, out)
        self.update_title()
        self.w.statusBar().showMessage(f"Saved {out.name} ({human_size(out.stat().st_size)})", 10000)
        return True

    def maybe_save(self) -> bool:
        """Before discarding unsaved edits (close, open another file): Save / Discard / Cancel.
        True when it is fine to go on."""
        if not self.w.is_modified or not self.w.ask_before_discarding:
            return True
        target = self.w.save_target or self.w.path
        name = target.name if target is not None else "The model"
        answer = QMessageBox.question(
            self.w, "Unsaved changes", f"{name} has unsaved changes.\n\nSave them before going on?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Save)
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        return answer == QMessageBox.StandardButton.Discard

    # export, recent, drag and drop
    def export_dialog(self) -> None:
        if self.w.graph_scene.data is None:
            return
        stem = self.w.path.stem if self.w.path else "graph"
        path, _ = QFileDialog.getSaveFileName(self.w, "Export image", f"{stem}_{self.w.subgraph}.svg",
                                              "SVG image (*.svg);;PNG image (*.png)")
        if path:
            self.export_image(path)

    def export_image(self, path: str | Path) -> Path:
        out = render_scene(self.w.graph_scene, path)
        self.w.statusBar().showMessage(f"Saved {out}", 5000)
        return out

    def fill_recent(self) -> None:
        self.w.actions.recent_menu.clear()
        files = recent_files(self.w.settings)
        for f in files:
            action = self.w.actions.recent_menu.addAction(f)
            action.triggered.connect(lambda _=False, p=f: self.open_path(p))
        if not files:
            self.w.actions.recent_menu.addAction("(none)").setEnabled(False)
        else:
            self.w.actions.recent_menu.addSeparator()
            self.w.actions.recent_menu.addAction("Clear", lambda: clear_recent(self.w.settings))

    def open_dropped(self, files: list[str]) -> None:
        """Files dropped on the window: the first is opened (after the unsaved-changes
        question)."""
        if files and self.maybe_save():
            self._open_asking_section(files[0])
