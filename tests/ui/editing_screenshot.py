"""The README's editing screenshot: the window driven through a few edits, History and
Changes docks open, and one more edit being typed.

    python -m tests.ui.editing_screenshot docs/screenshots/editing.png

(`--screenshot` only opens and selects; editing needs the window driven like this.)  The
test suite calls `take` with a temporary file to keep the script working.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

MODEL = Path(__file__).resolve().parents[1] / "data" / "models" / "small_cnn_dilated_float.tflite"


def take(out: Path, size: tuple[int, int] = (1600, 1000)) -> Path:
    if not os.environ.get("DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QSettings, Qt
    from PySide6.QtWidgets import QApplication

    from tflite_viewer.ui.app import make_app
    from tflite_viewer.ui.errors import ErrorReporter
    from tflite_viewer.ui.main_window import MainWindow
    from tflite_viewer.ui.render import save_png

    make_app()
    settings = QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "tflite-viewer", "screenshot")
    window = MainWindow(settings=settings, errors=ErrorReporter(interactive=False),
                        remember_layout=False)
    window.ask_before_discarding = False  # the edits are never saved
    window.show()
    window.resize(*size)
    QApplication.processEvents()
    if not window.open_path(MODEL, wait=True):
        raise SystemExit(f"cannot open {MODEL}")
    # History and Changes one above the other at the left (by default they are tabs at the
    # right), Properties over Tensor at the right: the docks moved as a user moves them
    for dock in (window.history_dock, window.changes_dock):
        window.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
        dock.show()
    window.splitDockWidget(window.history_dock, window.changes_dock, Qt.Orientation.Vertical)
    window.removeDockWidget(window.tensor_dock)  # out of the tabs: under Properties (splitting
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, window.tensor_dock)  # a tab
    window.tensor_dock.show()  # group with it would tab it again)
    window.resizeDocks([window.history_dock, window.properties_dock], [360, 440],
                       Qt.Orientation.Horizontal)
    window.resizeDocks([window.history_dock, window.changes_dock], [380, 560],
                       Qt.Orientation.Vertical)
    window.resizeDocks([window.properties_dock, window.tensor_dock], [470, 500], Qt.Orientation.Vertical)

    # two edits made through the panels' editors ...
    window.select_tensor(0)
    name = window.tensor_panel.editor("name")
    name.setText("camera_image")
    name.editingFinished.emit()
    window.select_op(2)  # DEPTHWISE_CONV_2D
    window.properties_panel.editor("option:dilation_w_factor").setValue(2)
    window.properties_panel.editor("option:dilation_h_factor").setValue(2)
    tree = window.properties_panel.tree
    tree.scrollToItem(tree.findItems("dilation_h_factor", Qt.MatchFlag.MatchRecursive)[0])
    # ... and a third being typed: the shape editor of the weights, not committed yet
    shape = window.tensor_panel.editor("shape")
    shape.setFocus()
    shape.setText("1, 3, 3, 8x")
    shape.textEdited.emit(shape.text())
    for _ in range(3):
        QApplication.processEvents()
    image = window.grab()
    window.close()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    return save_png(image, out)


if __name__ == "__main__":
    print(take(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots/editing.png")))
