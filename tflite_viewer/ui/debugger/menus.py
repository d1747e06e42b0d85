"""The debugger's menu, toolbar and docks, built once for a `DebuggerController`.

Construction only: what the actions and docks do when used lives in the controller
(`controller.py`, the session and what comes back from it).  The functions take the
controller and set its attributes (``step_over_action``, ``watch_dock`` ...), the names
tests and the window use.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMenu, QToolBar

from ...interpreter import float_sums
from ...interpreter.session import PAUSED
from .breakpoints_dock import BreakpointsDock
from .callstack_dock import CallStackDock
from .outputs_dock import OutputsDock
from .profile_dock import ProfileDock
from .watch_dock import WatchDock

#: (attribute, text, shortcut, tip)
ACTIONS = (
    ("continue_action", "Start / &Continue", "F5", "Run until a breakpoint or the end"),
    ("step_over_action", "Step &Over", "F10", "Run one operator (a WHILE/IF/CALL_ONCE runs whole)"),
    ("step_into_action", "Step &Into", "F11", "Run one operator, entering called subgraphs"),
    ("step_out_action", "Step O&ut", "Shift+F11", "Run until the current subgraph returns"),
    ("run_to_action", "&Run to Selected Operator", "Ctrl+F10", "Run until the selected operator"),
    ("toggle_action", "Toggle &Breakpoint", "F9", "Break before the selected operator"),
    ("stop_action", "&Stop", "Shift+F5", "Stop the run (between two operators)"),
    ("restart_action", "R&estart", "Ctrl+Shift+F5", "Start the run again from the first operator"),
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


def make_dock(ctl, title: str, widget, name: str) -> QDockWidget:
    """A hidden dock in the bottom area (shown when a session starts)."""
    dock = QDockWidget(title, ctl.window)
    dock.setObjectName(name)
    dock.setWidget(widget)
    ctl.window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    dock.hide()
    return dock


def build_docks(ctl) -> None:
    """Breakpoints, Call Stack, Watch, Outputs and Profile, tabbed with Problems; each is
    a view of the open workspace (it subscribes to ``ctl.hub``)."""
    hub = ctl.hub
    ctl.breakpoints_panel = BreakpointsDock(hub)
    ctl.callstack_panel = CallStackDock(hub)
    ctl.watch_panel = WatchDock(hub)
    ctl.outputs_panel = OutputsDock(hub)
    ctl.profile_panel = ProfileDock(hub)
    ctl.breakpoints_dock = make_dock(ctl, "Breakpoints", ctl.breakpoints_panel, "breakpoints")
    ctl.callstack_dock = make_dock(ctl, "Call Stack", ctl.callstack_panel, "callstack")
    ctl.watch_dock = make_dock(ctl, "Watch", ctl.watch_panel, "watch")
    ctl.outputs_dock = make_dock(ctl, "Outputs", ctl.outputs_panel, "outputs")
    ctl.profile_dock = make_dock(ctl, "Profile", ctl.profile_panel, "profile")
    w = ctl.window
    problems = getattr(w, "problems_dock", None)
    if problems is not None:  # share the bottom area with Problems, as tabs
        w.tabifyDockWidget(problems, ctl.callstack_dock)
    w.tabifyDockWidget(ctl.callstack_dock, ctl.breakpoints_dock)
    w.tabifyDockWidget(ctl.breakpoints_dock, ctl.watch_dock)
    w.tabifyDockWidget(ctl.watch_dock, ctl.outputs_dock)
    w.tabifyDockWidget(ctl.outputs_dock, ctl.profile_dock)
    ctl.docks = (ctl.callstack_dock, ctl.breakpoints_dock, ctl.watch_dock,
                 ctl.outputs_dock, ctl.profile_dock)
    ctl.breakpoints_panel.enableRequested.connect(ctl.enable_breakpoint)
    ctl.breakpoints_panel.removeRequested.connect(ctl.remove_breakpoint)
    ctl.breakpoints_panel.addRequested.connect(ctl.condition_dialog)
    ctl.breakpoints_panel.activated.connect(ctl.show_op)
    ctl.callstack_panel.frameActivated.connect(ctl.show_op)
    ctl.watch_panel.tensorActivated.connect(ctl._show_tensor)
    ctl.watch_panel.unpinRequested.connect(ctl.unwatch)
    ctl.profile_panel.opActivated.connect(ctl.show_op)
    ctl.profile_panel.heatToggled.connect(ctl._set_heat)
    ctl.profile_dock.visibilityChanged.connect(ctl.profile_panel.dock_shown)


def build_actions(ctl) -> None:
    """The Debug menu (before Help) and toolbar, with the IDE shortcuts of `ACTIONS`."""
    w = ctl.window
    bar = w.menuBar()
    menu = QMenu("&Debug", w)
    help_action = next((a for a in bar.actions() if a.text().replace("&", "") == "Help"), None)
    if help_action is not None:
        bar.insertMenu(help_action, menu)
    else:
        bar.addMenu(menu)
    ctl.menu = menu
    ctl.toolbar = QToolBar("Debug", w)
    ctl.toolbar.setObjectName("debug-toolbar")
    w.addToolBar(Qt.ToolBarArea.TopToolBarArea, ctl.toolbar)
    slots = {"continue_action": ctl.continue_, "step_over_action": ctl.step_over,
             "step_into_action": ctl.step_into, "step_out_action": ctl.step_out,
             "run_to_action": ctl.run_to_selected, "toggle_action": ctl.toggle_breakpoint,
             "stop_action": ctl.stop, "restart_action": ctl.restart}
    for attr, text, shortcut, tip in ACTIONS:
        action = QAction(text, w)
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
    menu.addSeparator()
    for dock in ctl.docks:
        toggle = dock.toggleViewAction()
        toggle.triggered.connect(lambda on, d=dock: on and d.raise_())  # in front of its tabs
        menu.addAction(toggle)


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
