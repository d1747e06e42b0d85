"""The window's docks: how a panel is hosted (`DockHost.add`, from its `state.docks.DockSpec`),
the default layout that gives the canvas the room, the layout the user made (remembered
with `QMainWindow.saveState`) and View > Reset Layout.

The default layout: the side docks (Model, Properties, Tensor, then History and Changes
when asked for) share one place at the right as tabs, a fifth of the window's width and
never narrower than their columns need; the bottom area, under the canvas, stays folded
away until a dock there is used (Problems while it lists something, a dock shown from its
menu entry, the debugger's docks while a session runs); a bottom dock brought forward gets
two fifths of a tall window's height and its least height in a short one.  By default the
canvas has at least three fifths of the window.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from PySide6.QtCore import QByteArray, QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMenu, QTabBar, QWidget

from .state.docks import BOTTOM, DOCK_SIGNALS, LEFT, RIGHT, DockSpec


AREAS = {LEFT: Qt.DockWidgetArea.LeftDockWidgetArea, RIGHT: Qt.DockWidgetArea.RightDockWidgetArea,
         BOTTOM: Qt.DockWidgetArea.BottomDockWidgetArea}
#: the side docks' width: a share of the window's, never below what their columns need
SIDE_SHARE, SIDE_MIN_WIDTH, SIDE_MAX_WIDTH = 0.22, 280, 460
#: a bottom dock brought forward takes this share of a tall window's height (at 1440x900
#: its tables show eight rows and more); in a shorter one its least height (the canvas
#: keeps the rest)
BOTTOM_SHARE, TALL = 0.4, 860
#: settings keys of the remembered layout (bump LAYOUT_VERSION when docks change place)
LAYOUT_VERSION = 2
STATE_KEY, GEOMETRY_KEY = "window/state", "window/geometry"


@dataclass
class Hosted:
    """A dock the window hosts: what it declared, its QDockWidget and its widget."""

    spec: DockSpec
    dock: QDockWidget
    widget: QWidget


class DockHost(QObject):
    """The docks of a `MainWindow` (see the module docstring)."""

    def __init__(self, window: QMainWindow, view_menu: QMenu) -> None:
        super().__init__(window)
        self.window, self.view_menu = window, view_menu
        self.hosted: dict[str, Hosted] = {}
        self.restored = False
        # the side docks run the window's height, the bottom area sits under the canvas:
        # the window's least height is then the larger of the two, not their sum
        window.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        window.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self._tab_bars = _TabBars(self)
        window.installEventFilter(self._tab_bars)

    # -- hosting ---------------------------------------------------------------------------
    def add(self, spec: DockSpec, widget: QWidget, menu: QMenu | None = None) -> QDockWidget:
        """Host ``widget`` as ``spec`` says: a dock tabbed with the others of its area,
        hidden unless the default layout shows it, its toggle in ``menu`` (View by
        default), and its `DOCK_SIGNALS` connected to the window."""
        if spec.id in self.hosted:
            raise ValueError(f"a dock {spec.id!r} is hosted already")
        w = self.window
        dock = QDockWidget(spec.title, w)
        dock.setObjectName(spec.id)
        dock.setWidget(widget)
        area = AREAS[spec.area]
        first = next((h.dock for h in self.hosted.values() if h.spec.area == spec.area), None)
        w.addDockWidget(area, dock)
        if first is not None:
            w.tabifyDockWidget(first, dock)
        if not spec.shown:
            dock.hide()
        toggle = dock.toggleViewAction()
        toggle.setText(spec.menu_text or f"&{spec.title}")
        if spec.shortcut:
            toggle.setShortcut(QKeySequence(spec.shortcut))
        toggle.triggered.connect(lambda on: on and dock.raise_())  # in front of its tabs
        (menu or self.view_menu).addAction(toggle)
        if spec.area == BOTTOM:
            dock.visibilityChanged.connect(lambda shown: shown and self._give_room(dock))
        self._connect(spec, widget)
        self.hosted[spec.id] = Hosted(spec, dock, widget)
        return dock

    def _connect(self, spec: DockSpec, widget: QWidget) -> None:
        """The signals of `DOCK_SIGNALS` the widget has (by name and arguments), to the
        window."""
        w = self.window
        slots: dict[str, Callable] = {
            "opActivated(int,int)": w.show_op, "tensorActivated(int,int)": w.show_tensor,
            "editRequested(PyObject)": w.apply_edit,
            "failed(QString)": lambda message: w.errors.report(spec.title, message, parent=w),
            "valuesCompared(int,int,PyObject,PyObject,PyObject,QString)": w.compare_values}
        assert set(slots) == set(DOCK_SIGNALS)
        meta = widget.metaObject()
        for signature, slot in slots.items():
            if meta.indexOfSignal(signature) >= 0:
                getattr(widget, signature.split("(")[0]).connect(slot)

    def dock(self, dock_id: str) -> QDockWidget:
        return self.hosted[dock_id].dock

    def widget(self, dock_id: str) -> QWidget:
        return self.hosted[dock_id].widget

    def bring_forward(self, dock_id: str) -> None:
        dock = self.dock(dock_id)
        dock.show()
        dock.raise_()

    def overlay_docks(self) -> list[Hosted]:
        """The docks that own an overlay."""
        return [h for h in self.hosted.values() if h.spec.overlay]

    def _give_room(self, dock: QDockWidget) -> None:
        w = self.window
        if dock.isFloating():
            return
        room = int(w.height() * BOTTOM_SHARE) if w.height() >= TALL else \
            dock.minimumSizeHint().height()
        w.resizeDocks([dock], [max(dock.height(), room)], Qt.Orientation.Vertical)

    # -- the layout ------------------------------------------------------------------------
    def finish(self, remember: bool) -> None:
        """After every dock is hosted: the side docks' least width, then the user's
        remembered layout (if ``remember``)."""
        for h in self.hosted.values():
            if h.spec.area in (LEFT, RIGHT):
                h.widget.setMinimumWidth(SIDE_MIN_WIDTH)
        if remember:
            settings = self.window.settings
            geometry, state = settings.value(GEOMETRY_KEY), settings.value(STATE_KEY)
            if isinstance(geometry, QByteArray) and not geometry.isEmpty():
                self.window.restoreGeometry(geometry)
            if isinstance(state, QByteArray) and not state.isEmpty():
                self.restored = self.window.restoreState(state, LAYOUT_VERSION)
        self.fix_tab_bars()

    def save(self) -> None:
        settings = self.window.settings
        settings.setValue(STATE_KEY, self.window.saveState(LAYOUT_VERSION))
        settings.setValue(GEOMETRY_KEY, self.window.saveGeometry())

    def reset(self, remember: bool) -> None:
        """View > Reset Layout: every dock where its spec says it starts, tabbed with its
        area, shown only if the default layout shows it (the docks that own overlays are
        closed, and their overlays go off), sized for the window.  Made from the specs, not
        from a saved state: restoring one left the old tab bar of the side docks drawn
        beside the new one."""
        w = self.window
        size = w.size()
        for area in (RIGHT, BOTTOM, LEFT):
            first = None
            for h in (h for h in self.hosted.values() if h.spec.area == area):
                h.dock.setVisible(h.spec.shown)  # first: every dock shown at once would
                h.dock.setFloating(False)        # grow the window to hold them
                w.addDockWidget(AREAS[area], h.dock)  # moved back to its area
                if first is not None:
                    w.tabifyDockWidget(first, h.dock)
                first = first or h.dock
        w.resize(size)
        shown = [h.dock for h in self.hosted.values() if h.spec.shown]
        if shown:
            shown[0].raise_()
        self.size_docks()
        self.fix_tab_bars()
        if remember:
            w.settings.remove(STATE_KEY)

    def side_docks(self) -> list[QDockWidget]:
        return [h.dock for h in self.hosted.values() if h.spec.area in (LEFT, RIGHT)]

    def size_docks(self) -> None:
        """The side docks a share of the window's width (the canvas keeps the most)."""
        w = self.window
        width = max(SIDE_MIN_WIDTH, min(SIDE_MAX_WIDTH, int(w.width() * SIDE_SHARE)))
        shown = [d for d in self.side_docks() if not d.isHidden() and not d.isFloating()]
        if shown:
            w.resizeDocks(shown[:1], [width], Qt.Orientation.Horizontal)

    def keep_canvas_room(self) -> None:
        """After the window shrank: side docks wider than their share give the canvas its
        room back (Qt takes a shrink out of the centre alone)."""
        w = self.window
        cap = max(SIDE_MIN_WIDTH, min(SIDE_MAX_WIDTH, int(w.width() * SIDE_SHARE)))
        wide = [d for d in self.side_docks()
                if d.isVisible() and not d.isFloating() and d.width() > cap]
        if wide:
            w.resizeDocks(wide[:1], [cap], Qt.Orientation.Horizontal)

    def fold(self, dock_id: str, empty: bool) -> None:
        """A dock shown while it lists something and folded away while it is empty (the
        bottom area goes with it unless another of its docks is in use)."""
        dock = self.dock(dock_id)
        if empty and not dock.isHidden():
            dock.hide()
        elif not empty and dock.isHidden():
            dock.show()
            if not any(not d.isHidden() for d in self.window.tabifiedDockWidgets(dock)):
                dock.raise_()

    def fix_tab_bars(self) -> None:
        """Tabs of docks sharing a place: whole titles while they fit, cut in the middle
        when they do not (never scroll arrows hiding tabs)."""
        for bar in self.window.findChildren(QTabBar):
            if bar.parent() is self.window:
                bar.setElideMode(Qt.TextElideMode.ElideMiddle)
                bar.setUsesScrollButtons(False)
                bar.setExpanding(False)


class _TabBars(QObject):
    """Keeps the tab bars of tabified docks as `DockHost.fix_tab_bars` sets them: Qt
    makes them lazily, as children of the window (at ChildAdded a new one is not a QTabBar
    yet: the check waits for the event loop)."""

    def __init__(self, host: DockHost) -> None:
        super().__init__(host)
        self.host = host
        self.pending = False

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.ChildAdded and not self.pending:
            self.pending = True
            QTimer.singleShot(0, self, self._fix)
        return False

    def _fix(self) -> None:
        self.pending = False
        self.host.fix_tab_bars()
