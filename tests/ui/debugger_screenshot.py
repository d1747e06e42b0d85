"""The README's cross-check screenshot: mobilenet_v2_int8 (LiteRT's reference kernels abort
on it, so its optimized kernels are compared op by op), the table raised, coloured by error.

    python -m tests.ui.debugger_screenshot docs/screenshots/debugger_crosscheck.png

(`--screenshot --run-to N` shows a paused run; the cross-check needs the window driven.)
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

MODEL = Path(__file__).resolve().parents[1] / "data" / "models" / "mobilenet_v2_int8.tflite"


def take(out: Path, size: tuple[int, int] = (1600, 1000)) -> Path:
    if not os.environ.get("DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop, QSettings, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    from tflite_viewer.ui.app import make_app
    from tflite_viewer.ui.errors import ErrorReporter
    from tflite_viewer.ui.main_window import MainWindow
    from tflite_viewer.ui.render import save_png

    make_app()
    settings = QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "tflite-viewer",
                         "screenshot")
    window = MainWindow(settings=settings, errors=ErrorReporter(interactive=False),
                        remember_layout=False)
    window.show()
    window.resize(*size)
    QApplication.processEvents()
    if not window.open_path(MODEL, wait=True):
        raise SystemExit(f"cannot open {MODEL}")
    dbg = window.debugger
    loop = QEventLoop()
    dbg.crossCheckDone.connect(lambda _c: loop.quit())
    QTimer.singleShot(300_000, loop.quit)
    dbg.crosscheck_action.trigger()
    loop.exec()
    if dbg.last_cross_check is None:
        raise SystemExit("the cross-check did not finish")
    dock = dbg.crosscheck_dock
    window.problems_dock.hide()
    window.removeDockWidget(dock)
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    dock.show()
    window.resizeDocks([dock], [430], Qt.Orientation.Vertical)
    panel = dbg.crosscheck_panel
    panel.colour.setChecked(True)
    worst = max(range(len(dbg.last_cross_check.report.rows)),
                key=lambda k: dbg.last_cross_check.report.rows[k].max_abs or 0)
    panel.table.selectRow(worst)
    for _ in range(5):
        QApplication.processEvents()
    image = window.grab()
    dbg.shutdown()
    window.close()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    return save_png(image, out)


if __name__ == "__main__":
    print(take(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots/debugger_crosscheck.png")))
