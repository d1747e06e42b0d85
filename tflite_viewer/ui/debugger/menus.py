"""The debugger's menu, toolbar and docks, built once for a `DebuggerController`.

Construction only: what the actions and docks do when used lives in the controller
(`controller.py`, the session and what comes back from it).  The docks are hosted by the
window from the `DockSpec` each module declares (`MainWindow.add_dock`), their toggles in
the Debug menu.  The functions take the controller and set its attributes
(``step_over_action``, ``watch_dock`` ...), the names tests use.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QMenu, QToolBar

from ...interpreter import float_sums
from ...interpreter.session import PAUSED
from . import (breakpoints_dock, callstack_dock, crosscheck_dock, outputs_dock, profile_dock,
               watch_dock)
from .breakpoints_dock import BreakpointsDock
from .callstack_dock import CallStackDock
from .crosscheck_dock import CrossCheckDock
from .outputs_dock import OutputsDock
from .profile_dock import ProfileDock
from .watch_dock import WatchDock

#: (attribute, text, the toolbar's shorter text, shortcut, tip): the toolbar shares its row
#: with the canvas's at 1024 px
ACTIONS = (
    ("continue_action", "Start / &Continue", "Continue", "F5", "Run until a breakpoint or the end"),
    ("step_over_action", "Step &Over", "Over", "F10",
     "Run one operator (a WHILE/IF/CALL_ONCE runs whole)"),
    ("step_into_action", "Step &Into", "Into", "F11", "Run one operator, entering called subgraphs"),
    ("step_out_action", "Step O&ut", "Out", "Shift+F11", "Run until the current subgraph returns"),
    ("run_to_action", "&Run to Selected Operator", "Run To", "Ctrl+F10",
     "Run until the selected operator"),
    ("toggle_action", "Toggle &Breakpoint", "Breakpoint", "F9", "Break before the selected operator"),
    ("stop_action", "&Stop", "Stop", "Shift+F5", "Stop the run (between two operators)"),
    ("restart_action", "R&estart", "Restart", "Ctrl+Shift+F5",
     "Start the run again from the first operator"),
)


#: Debug > Float Sums: the setting's values (`interpreter.float_sums`) and their names
FLOAT_SUMS = dict(zip(float_sums.MODES, ("Auto", "Reference Order", "BLAS")))
FLOAT_SUMS_SETTING = "debug/float_sums"
_FLOAT_SUMS_TIPS = {
    "auto": "LiteRT's reference order, or BLAS on a model with "
            f"{float_sums.BLAS_FROM_BYTES >> 20} MiB or more of float32 filters (an LLM)",
    "reference": "Add every float32 product in LiteRT's reference kernels' order: their "
                 "results to the bit",
    "blas": "numpy's BLAS products: faster, a rounding or so from the reference per output"}


def build_docks(ctl) -> None:
    """Call Stack, Breakpoints, Watch, Outputs, Profile and Cross-check, hosted by the
    window in the bottom area (tabbed, hidden until a session starts or the cross-check
    runs), their toggles in the Debug menu; each is a view of the open workspace (it
    subscribes to ``ctl.hub``)."""
    hub, w = ctl.hub, ctl.window
    ctl.callstack_panel = CallStackDock(hub)
    ctl.breakpoints_panel = BreakpointsDock(hub)
    ctl.watch_panel = WatchDock(hub)
    ctl.outputs_panel = OutputsDock(hub)
    ctl.profile_panel = ProfileDock(hub)
    ctl.crosscheck_panel = CrossCheckDock(hub)
    ctl.menu.addSeparator()
    add = lambda spec, panel: w.add_dock(spec, panel, ctl.menu)  # noqa: E731
    ctl.callstack_dock = add(callstack_dock.DOCK, ctl.callstack_panel)
    ctl.breakpoints_dock = add(breakpoints_dock.DOCK, ctl.breakpoints_panel)
    ctl.watch_dock = add(watch_dock.DOCK, ctl.watch_panel)
    ctl.outputs_dock = add(outputs_dock.DOCK, ctl.outputs_panel)
    ctl.profile_dock = add(profile_dock.DOCK, ctl.profile_panel)
    ctl.crosscheck_dock = add(crosscheck_dock.DOCK, ctl.crosscheck_panel)
    ctl.docks = (ctl.callstack_dock, ctl.breakpoints_dock, ctl.watch_dock,
                 ctl.outputs_dock, ctl.profile_dock)
    ctl.breakpoints_panel.enableRequested.connect(ctl.enable_breakpoint)
    ctl.breakpoints_panel.removeRequested.connect(ctl.remove_breakpoint)
    ctl.breakpoints_panel.addRequested.connect(ctl.condition_dialog)
    ctl.breakpoints_panel.activated.connect(w.show_op)
    ctl.callstack_panel.frameActivated.connect(w.show_op)
    ctl.watch_panel.tensorActivated.connect(w.show_tensor)
    ctl.watch_panel.unpinRequested.connect(ctl.unwatch)
    ctl.profile_dock.visibilityChanged.connect(ctl.profile_panel.dock_shown)


def build_actions(ctl) -> None:
    """The Debug menu (before Help) and toolbar, with the IDE shortcuts of `ACTIONS`."""
    w = ctl.window
    menu = QMenu("&Debug", w)
    w.menuBar().insertMenu(w.actions.help.menuAction(), menu)
    ctl.menu = menu
    ctl.toolbar = QToolBar("Debug", w)
    ctl.toolbar.setObjectName("debug-toolbar")
    w.addToolBar(Qt.ToolBarArea.TopToolBarArea, ctl.toolbar)
    slots = {"continue_action": ctl.continue_, "step_over_action": ctl.step_over,
             "step_into_action": ctl.step_into, "step_out_action": ctl.step_out,
             "run_to_action": ctl.run_to_selected, "toggle_action": ctl.toggle_breakpoint,
             "stop_action": ctl.stop, "restart_action": ctl.restart}
    for attr, text, short, shortcut, tip in ACTIONS:
        action = QAction(text, w)
        action.setIconText(short)
        action.setShortcut(QKeySequence(shortcut))
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.setStatusTip(tip)
        action.setToolTip(f"{tip} ({shortcut})")
        action.triggered.connect(slots[attr])
        menu.addAction(action)
        ctl.toolbar.addAction(action)
        setattr(ctl, attr, action)
        if attr in ("step_out_action", "toggle_action"):
            menu.addSeparator()
    menu.addSeparator()
    ctl.inputs_action = QAction("&Inputs\u2026", w)
    ctl.inputs_action.setStatusTip("Choose the inputs of the run")
    ctl.inputs_action.triggered.connect(ctl.inputs_dialog)
    menu.addAction(ctl.inputs_action)
    ctl.toolbar.addAction(ctl.inputs_action)
    ctl.condition_action = QAction("&Conditional Breakpoint\u2026", w)
    ctl.condition_action.triggered.connect(ctl.condition_dialog)
    menu.addAction(ctl.condition_action)
    ctl.watch_action = QAction("&Watch Selected Tensor", w)
    ctl.watch_action.triggered.connect(ctl.watch_selected)
    menu.addAction(ctl.watch_action)
    ctl.set_tensor_action = QAction("Set Tensor &Values\u2026", w)
    ctl.set_tensor_action.setStatusTip("While paused: load a .npy or fill with a constant")
    ctl.set_tensor_action.triggered.connect(ctl.set_tensor_dialog)
    menu.addAction(ctl.set_tensor_action)
    build_float_sums(ctl, menu)
    ctl.crosscheck_action = QAction("Cross-check with &LiteRT", w)
    ctl.crosscheck_action.setStatusTip("Run LiteRT on the same inputs and compare every op")
    ctl.crosscheck_action.triggered.connect(ctl.cross_check)
    menu.addAction(ctl.crosscheck_action)


def build_float_sums(ctl, menu: QMenu) -> None:
    """Debug > Float Sums: Auto, Reference Order or BLAS, one checked (the remembered
    setting); ``ctl.float_sums_actions`` by value."""
    sub = menu.addMenu("&Float Sums")
    group = QActionGroup(sub)
    group.setExclusive(True)
    ctl.float_sums_actions = {}
    for mode, text in FLOAT_SUMS.items():
        action = QAction(text, ctl.window, checkable=True)
        action.setStatusTip(_FLOAT_SUMS_TIPS[mode])
        action.triggered.connect(lambda _on, m=mode: ctl.set_float_sums(m))
        group.addAction(action)
        sub.addAction(action)
        ctl.float_sums_actions[mode] = action
    check_float_sums(ctl, ctl.float_sums())


def check_float_sums(ctl, mode: str) -> None:
    """Check ``mode``'s action in Debug > Float Sums."""
    action = ctl.float_sums_actions.get(mode)
    if action is not None:
        action.setChecked(True)


def add_menu_actions(ctl, menu: QMenu) -> None:
    """The canvas's context menu, for the selection it was opened on: breakpoint and
    run-to for an operator, Watch for a tensor."""
    sel = ctl.window.selection
    if sel is None:
        return
    menu.addSeparator()
    if sel[0] == "op":
        menu.addAction(ctl.toggle_action)
        menu.addAction(ctl.run_to_action)
    else:
        menu.addAction(ctl.watch_action)


def update_actions(ctl) -> None:
    """Enable what makes sense for the model and the session's state."""
    d = ctl.hub.workspace.debug
    has_model = ctl.hub.workspace.model is not None
    for action in (ctl.continue_action, ctl.step_over_action, ctl.step_into_action,
                   ctl.restart_action, ctl.inputs_action, ctl.condition_action,
                   ctl.toggle_action, ctl.run_to_action, ctl.watch_action, ctl.crosscheck_action):
        action.setEnabled(has_model)
    paused = d.active and d.last_stop is not None and d.last_stop.state == PAUSED
    ctl.step_out_action.setEnabled(has_model)
    ctl.stop_action.setEnabled(d.active)
    ctl.set_tensor_action.setEnabled(paused)
