"""Before the window starts on Linux: are the system libraries Qt's xcb plugin needs there?

``pip install`` brings PySide6 with Qt, but Qt's X11 platform plugin (xcb) links against
X and xcb libraries a minimal desktop may lack.  Without them Qt prints its generic "could
not load the Qt platform plugin xcb" and aborts.  This module looks for each library the
plugin links against (the list is what ``ldd libqxcb.so`` shows for PySide6 6.x) by loading
it, and names the Debian/Ubuntu packages that provide the missing ones.  It imports no Qt.
"""
from __future__ import annotations

import ctypes
import os
import sys

# soname -> Debian/Ubuntu package (one apt command installs them all)
XCB_LIBRARIES: dict[str, str] = {
    "libxcb.so.1": "libxcb1",
    "libX11.so.6": "libx11-6",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libGL.so.1": "libgl1",
    "libEGL.so.1": "libegl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
}
# not a GUI platform, or a platform that needs none of the above
_NOT_XCB = ("offscreen", "minimal", "wayland", "eglfs", "linuxfb", "vnc", "vkkhrdisplay")


def uses_xcb(environ=os.environ, platform: str = sys.platform) -> bool:
    """Whether Qt will start its xcb (X11) platform plugin here."""
    if not platform.startswith("linux"):
        return False
    chosen = environ.get("QT_QPA_PLATFORM", "").split(":")[0].strip().lower()
    if chosen:
        return chosen == "xcb" or not chosen.startswith(_NOT_XCB)
    if environ.get("WAYLAND_DISPLAY") and not environ.get("DISPLAY"):
        return False
    return bool(environ.get("DISPLAY"))


def library_status(libraries: dict[str, str] | None = None) -> list[tuple[str, str, bool]]:
    """(soname, package, present) for each library, present when the dynamic loader finds it."""
    out = []
    for soname, package in (XCB_LIBRARIES if libraries is None else libraries).items():
        try:
            ctypes.CDLL(soname)
            present = True
        except OSError:
            present = False
        out.append((soname, package, present))
    return out


def apt_command(packages: list[str]) -> str:
    return "sudo apt install " + " ".join(packages)


def missing_message(missing: list[tuple[str, str, bool]]) -> str:
    """One line naming what is missing and the command that installs it."""
    names = ", ".join(soname for soname, _, _ in missing)
    return (f"Qt's X11 (xcb) platform plugin needs system libraries that are missing: {names}; "
            f"install them with: {apt_command([p for _, p, _ in missing])}")


def check_report() -> tuple[str, int]:
    """What `tflite-viewer --check` prints, and its exit code (1 when something is missing)."""
    lines = []
    try:
        import PySide6
        lines.append(f"PySide6 {PySide6.__version__}: {os.path.dirname(PySide6.__file__)}")
    except ImportError as exc:
        return f"PySide6 missing: {exc} (pip install PySide6)", 1
    if not sys.platform.startswith("linux"):
        lines.append(f"platform {sys.platform}: Qt brings what its window needs")
        return "\n".join(lines), 0
    display = os.environ.get("DISPLAY") or "(none)"
    lines.append(f"display: DISPLAY={display}, WAYLAND_DISPLAY={os.environ.get('WAYLAND_DISPLAY') or '(none)'}, "
                 f"QT_QPA_PLATFORM={os.environ.get('QT_QPA_PLATFORM') or '(default)'}; "
                 f"xcb plugin {'used' if uses_xcb() else 'not used'}")
    status = library_status()
    for soname, package, present in status:
        lines.append(f"  {'ok     ' if present else 'MISSING'} {soname:26s} ({package})")
    missing = [s for s in status if not s[2]]
    if missing:
        lines.append(missing_message(missing))
        return "\n".join(lines), 1
    lines.append(f"all {len(status)} libraries the xcb plugin needs are present")
    return "\n".join(lines), 0
