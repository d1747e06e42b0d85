"""First start on Linux (issue 16 item 6): missing xcb libraries are named, with the apt
command, before any QApplication exists; `tflite-viewer --check` reports what is there."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tflite_viewer.ui import platform_check as pc

ROOT = Path(__file__).resolve().parents[2]
FAKE = {"libtflite-viewer-absent.so.7": "libtflite-viewer-absent7"}


def _run(code: str, **env_changes) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env.update(env_changes)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_library_status_finds_present_and_missing_libraries():
    status = pc.library_status({"libc.so.6": "libc6", **FAKE})
    assert status == [("libc.so.6", "libc6", True),
                      ("libtflite-viewer-absent.so.7", "libtflite-viewer-absent7", False)]
    line = pc.missing_message([s for s in status if not s[2]])
    assert "\n" not in line and "libtflite-viewer-absent.so.7" in line
    assert line.endswith("sudo apt install libtflite-viewer-absent7")


def test_which_platform_uses_xcb():
    assert pc.uses_xcb({"DISPLAY": ":0"}, "linux")
    assert not pc.uses_xcb({"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}, "linux")
    assert pc.uses_xcb({"QT_QPA_PLATFORM": "xcb"}, "linux")
    assert not pc.uses_xcb({"WAYLAND_DISPLAY": "wayland-0"}, "linux")
    assert not pc.uses_xcb({}, "linux")  # no display at all: Qt says so itself
    assert not pc.uses_xcb({"DISPLAY": ":0"}, "darwin")


def test_the_window_names_missing_libraries_instead_of_qt_aborting():
    code = ("import sys; import tflite_viewer.ui.platform_check as pc; "
            f"pc.XCB_LIBRARIES.update({FAKE!r}); "
            "from tflite_viewer.cli import main; rc = main([]); "
            "print('rc', rc, 'qt-loaded', 'PySide6.QtWidgets' in sys.modules)")
    out = _run(code, DISPLAY=":99")
    assert out.stdout.strip() == "rc 2 qt-loaded False", out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tflite-viewer: error: ")
    assert "libtflite-viewer-absent.so.7" in lines[0] and "sudo apt install libtflite-viewer-absent7" in lines[0]


def test_check_starts_the_platform_plugin_and_reports_every_library():
    """--check really starts Qt's plugin (in a child process): offscreen starts anywhere,
    the default plugin without a display does not, and both say so."""
    out = _run("from tflite_viewer.cli import main; raise SystemExit(main(['--check']))",
               QT_QPA_PLATFORM="offscreen")
    assert out.returncode == (0 if all(ok for *_, ok in pc.library_status()) else 1), out.stdout
    assert "Qt's platform plugin starts here: offscreen" in out.stdout
    for soname in pc.XCB_LIBRARIES:
        assert soname in out.stdout
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    out = subprocess.run([sys.executable, "-c", "from tflite_viewer.cli import main; "
                          "raise SystemExit(main(['--check']))"], capture_output=True,
                         text=True, timeout=120,
                         env={**{k: v for k, v in env.items()
                                 if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")},
                              "PYTHONPATH": str(ROOT)})
    assert out.returncode == 1 and out.stderr == "", out.stdout + out.stderr
    assert pc.NO_DISPLAY in out.stdout
    assert "Qt's platform plugin does not start here: " in out.stdout


def test_check_fails_when_a_library_is_missing():
    code = ("import tflite_viewer.ui.platform_check as pc; "
            f"pc.XCB_LIBRARIES.update({FAKE!r}); "
            "from tflite_viewer.cli import main; raise SystemExit(main(['--check']))")
    out = _run(code, QT_QPA_PLATFORM="offscreen")
    assert out.returncode == 1
    assert "MISSING libtflite-viewer-absent.so.7" in out.stdout
    assert "sudo apt install libtflite-viewer-absent7" in out.stdout


def test_display_problem_names_each_case():
    assert pc.display_problem({}, "linux") == pc.NO_DISPLAY
    assert pc.display_problem({"QT_QPA_PLATFORM": "xcb"}, "linux") == pc.NO_DISPLAY
    assert pc.display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    assert pc.display_problem({"WAYLAND_DISPLAY": "wayland-0"}, "linux") is None
    assert pc.display_problem({}, "darwin") is None
    # an X display nobody serves: the connection is refused, said on one line
    line = pc.display_problem({"DISPLAY": ":97"}, "linux")
    libraries_there = all(ok for *_, ok in pc.library_status())
    assert line.startswith("cannot connect to the X display ':97'" if libraries_there
                           else "Qt's X11 (xcb) platform plugin needs") and "\n" not in line
