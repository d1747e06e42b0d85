"""What a dock declares to the window that hosts it (no Qt).

A panel hands the window a `DockSpec` with its widget (`MainWindow.add_dock`, as napari's
viewer takes ``add_dock_widget``): its id (the key the window and the saved layout know it
by), its title, the area it starts in, the workspace part it renders, the canvas overlay it
owns (whose legend the canvas shows, and which goes off when the dock is closed), the
shortcut of its View menu entry, and whether the default layout shows it.  The window
makes the QDockWidget, tabs it with the docks of its area, puts its toggle in the menu and
connects the signals every dock may have (`DOCK_SIGNALS`); the panel never touches the
window.

    DOCK = DockSpec("memory", "Memory", BOTTOM, part="memory", overlay="memory",
                    shortcut="Ctrl+Shift+M")
    window.add_dock(DOCK, MemoryDock(settings, hub))
"""
from __future__ import annotations

from dataclasses import dataclass

LEFT, RIGHT, BOTTOM = "left", "right", "bottom"

#: signals a dock widget may have (Qt's signature), and what the window does with them
DOCK_SIGNALS = {
    "opActivated(int,int)": "(subgraph, op): show that subgraph and select the operator",
    "tensorActivated(int,int)": "(subgraph, tensor): show that subgraph and select the tensor",
    "editRequested(PyObject)": "(EditCommand): apply it as one undoable edit",
    "failed(QString)": "(message): report it in a dialog titled with the dock's title",
    "valuesCompared(int,int,PyObject,PyObject,PyObject,QString)":
        "(subgraph, tensor, a, b, labels, caption): the Tensor panel's Compare tab shows "
        "the two arrays and their difference",
}


@dataclass(frozen=True)
class DockSpec:
    """See the module docstring."""

    id: str
    title: str
    area: str = BOTTOM
    part: str | None = None        # the workspace part it renders (`Workspace.part` key)
    overlay: str | None = None     # the overlay it owns (`overlays.OverlayChoice` kind)
    shortcut: str | None = None
    shown: bool = False            # in the default layout (else hidden until asked for)
    menu_text: str | None = None   # the menu entry's text, when not the title

    def __post_init__(self) -> None:
        if self.area not in (LEFT, RIGHT, BOTTOM):
            raise ValueError(f"dock {self.id!r}: area {self.area!r} is not one of "
                             f"{LEFT}, {RIGHT}, {BOTTOM}")
