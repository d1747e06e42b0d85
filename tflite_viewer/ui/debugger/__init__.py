"""The window's step debugger: the controller (menu, toolbar, shortcuts, status), the worker
thread that owns the `DebugSession`, and one module per dock or dialog."""
from .controller import DebuggerController

__all__ = ["DebuggerController"]
