"""Before the window starts on Linux: is there a display, and can Qt's plugin use it?

``pip install`` brings PySide6 with Qt, but Qt's X11 platform plugin (xcb) links against
X and xcb libraries a minimal desktop may lack, and needs an X server to talk to.  Without
them Qt prints its generic "could not load the Qt platform plugin xcb" and aborts the
process.  `display_problem` finds these cases first (no DISPLAY; each library the plugin
links against, the list ``ldd libqxcb.so`` shows for PySide6 6.x, with the Debian/Ubuntu
packages that provide the missing ones; an X server that refuses the connection) and says
so on one line.  It imports no Qt; `probe_platform` (for ``--check``) starts Qt's plugin in
a child process, where an abort harms nothing.
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


NO_DISPLAY = ("no display to show the window on (DISPLAY is not set): start it in a desktop "
              "session or over ssh -X, or draw it headless with --screenshot OUT.png; every "
              "subcommand works without a display")


def can_connect_x(display: str) -> bool:
    """Whether an X server accepts a connection at ``display`` (what Qt's xcb plugin does
    first), through libxcb, which prints nothing when it fails."""
    try:
        xcb = ctypes.CDLL("libxcb.so.1")
    except OSError:
        return False
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    conn = xcb.xcb_connect(display.encode(), None)
    if not conn:
        return False
    try:
        return xcb.xcb_connection_has_error(conn) == 0
    finally:
        xcb.xcb_disconnect(conn)


def display_problem(environ=os.environ, platform: str = sys.platform) -> str | None:
    """Why the window cannot start here, on one line, or None when it can as far as can
    be told without Qt: no display, the xcb plugin's missing libraries, an X server that
    refuses the connection.  (Qt itself aborts the process in each of these cases.)"""
    if not platform.startswith("linux"):
        return None
    chosen = environ.get("QT_QPA_PLATFORM", "").split(":")[0].strip().lower()
    if chosen and chosen != "xcb":
        return None  # the user chose a platform; Qt reports its own problems
    display = environ.get("DISPLAY", "")
    if not chosen and not display:
        return None if environ.get("WAYLAND_DISPLAY") else NO_DISPLAY
    if not display:
        return NO_DISPLAY
    missing = [s for s in library_status() if not s[2]]
    if missing:
        return missing_message(missing)
    if not can_connect_x(display):
        return (f"cannot connect to the X display {display!r} (is its X server running, and "
                "may this user connect to it?); --screenshot OUT.png works without a display")
    return None


_PROBE = ("import sys\n"
          "from PySide6.QtGui import QGuiApplication\n"
          "app = QGuiApplication(sys.argv[:1])\n"
          "print(app.platformName())\n")


def probe_platform(timeout: float = 60.0) -> tuple[bool, str]:
    """Start Qt's platform plugin in a child process (where an abort harms nothing):
    (True, plugin name) when it starts, else (False, Qt's reason on one line)."""
    import subprocess
    try:
        r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"Qt did not start within {timeout:g} s"
    if r.returncode == 0 and r.stdout.strip():
        return True, r.stdout.strip().splitlines()[-1]
    lines = [ln.strip() for ln in r.stderr.splitlines() if ln.strip()]
    reasons = [ln for ln in lines if "could not" in ln.lower() or "cannot" in ln.lower()]
    reason = "; ".join(reasons[:2]) or (lines[-1] if lines else f"exit code {r.returncode}")
    return False, reason


def check_report() -> tuple[str, int]:
    """What `tflite-viewer --check` prints, and its exit code: 0 when Qt's platform plugin
    starts here, 1 when it does not (or a library it needs is missing)."""
    lines = []
    try:
        import PySide6
        lines.append(f"PySide6 {PySide6.__version__}: {os.path.dirname(PySide6.__file__)}")
    except ImportError as exc:
        return f"PySide6 missing: {exc} (pip install PySide6-Essentials)", 1
    ok = True
    if sys.platform.startswith("linux"):
        display = os.environ.get("DISPLAY") or "(none)"
        lines.append(f"display: DISPLAY={display}, WAYLAND_DISPLAY="
                     f"{os.environ.get('WAYLAND_DISPLAY') or '(none)'}, QT_QPA_PLATFORM="
                     f"{os.environ.get('QT_QPA_PLATFORM') or '(default)'}; "
                     f"xcb plugin {'used' if uses_xcb() else 'not used'}")
        status = library_status()
        for soname, package, present in status:
            lines.append(f"  {'ok     ' if present else 'MISSING'} {soname:26s} ({package})")
        missing = [s for s in status if not s[2]]
        if missing:
            lines.append(missing_message(missing))
            ok = False
        else:
            lines.append(f"all {len(status)} libraries the xcb plugin needs are present")
        problem = display_problem()
        if problem and not missing:
            lines.append(problem)
            ok = False
    started, what = probe_platform()
    if started:
        lines.append(f"Qt's platform plugin starts here: {what}"
                     + (" (offscreen: nothing is shown)" if what == "offscreen" else ""))
    else:
        lines.append(f"Qt's platform plugin does not start here: {what}")
        ok = False
    lines.append("the window can start" if ok else "the window cannot start here; "
                 "--screenshot OUT.png and every subcommand work without a display")
    return "\n".join(lines), 0 if ok else 1
