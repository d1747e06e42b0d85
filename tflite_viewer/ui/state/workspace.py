"""One open model and everything the window shows about it: the workspace (no Qt).

Everything that belongs to an open model lives in one `Workspace`: the model and its edit
document, the debug session's state (inputs, last stop, snapshots, outputs, profile), the
breakpoints and the watch list, the navigation (subgraph shown, trail, laid-out scenes)
and the selection, and the parts of each feature (`Workspace.part`): the quantization
analysis (`quant`), the cross-check with LiteRT (`crosscheck`), the comparison with another
model (`diff`), the memory plans (`memory`) and the target reports (`targets`).  Opening a file
makes a new one and the `Hub` replaces the old one whole; nothing of the old model can
survive in a dock, because no dock keeps any: docks and canvas overlays are views that
subscribe to the hub and render from the workspace they are handed.

    hub.subscribe(self.render, DEBUG, WATCHES)   # a view, once, for the window's life
    def render(self, ws): ...                    # called on REPLACED, and on those topics

`REPLACED` (another workspace) reaches every subscriber; `MODEL` (the workspace's model
replaced by an edit, undo or redo) and the other topics reach those that ask for them.
Whoever changes a part of the workspace tells the hub (``hub.changed(TOPIC, ws)``); a
change announced for a workspace that is no longer the open one (a worker's late result)
is dropped.  A feature keeps its per-model state in `Workspace.part` and names its own
topic ("feature/what").  napari's ViewerModel and glue's hub have this shape: models without
Qt, views that subscribe, one place that owns the lifecycle.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar

from ...interpreter.session import BreakpointInfo, breakpoint_kind, describe_breakpoint
from ...model import Model
from .identity import BreakpointList, WatchList

log = logging.getLogger(__name__)
T = TypeVar("T")

# topics a view can subscribe to
REPLACED = "replaced"        # another workspace: a model was opened or reloaded (always sent)
MODEL = "model"              # this workspace's model was replaced by an edit, undo or redo
NAVIGATION = "navigation"    # another subgraph is shown on the canvas
SELECTION = "selection"
DEBUG = "debug"              # the session started, stopped, moved or ended
SNAPSHOTS = "snapshots"      # tensor values of the paused run arrived
BREAKPOINTS = "breakpoints"
WATCHES = "watches"
PROBLEMS = "problems"        # what Problems lists changed (shape check, spec findings)
#: the notice tag of "the debug session ended": the next session takes that notice away
SESSION_NOTICE = "session"
SESSION_ENDED = ("The debug session ended: the model changed. Start it again (F5 / F10) to "
                 "run the new model.")
TOPICS = (REPLACED, MODEL, NAVIGATION, SELECTION, DEBUG, SNAPSHOTS, BREAKPOINTS, WATCHES,
          PROBLEMS)


@dataclass
class DebugState:
    """The window's side of a debug session (the session itself runs on the debugger's
    worker thread and hands back only immutable stops and snapshots)."""

    serial: int = 0             # the session generation the worker knows it by (0: none)
    active: bool = False
    busy: bool = False          # a command is running on the worker
    last_stop: Any = None       # interpreter.session.DebugStop
    snapshots: dict = field(default_factory=dict)   # (subgraph, tensor) -> TensorSnapshot
    pending: set = field(default_factory=set)       # snapshots asked for, not yet back
    inputs: dict = field(default_factory=dict)      # chosen inputs by name (the rest seeded)
    signature: str | None = None                    # the signature run (None: subgraph 0)
    #: a generation loop to run instead (`GenerationSetup`: prefill, then decode steps)
    generation: Any = None
    specs: tuple = ()                               # the session's InputSpecs
    outputs: Any = None         # RunOutputs of the last finished run
    profile: dict = field(default_factory=dict)     # (subgraph, op) -> seconds, last stop
    #: called once when the session ends or the workspace goes (closes the worker's session)
    release: Callable[[], None] | None = None

    def end(self) -> None:
        """Forget the session (its run is abandoned); the inputs stay chosen."""
        release, self.release = self.release, None
        self.serial, self.active, self.busy = 0, False, False
        self.last_stop = None
        self.snapshots, self.pending = {}, set()
        if release is not None:
            release()


@dataclass(frozen=True)
class GenerationSetup:
    """A generation run as the Inputs dialog sets it up: the loop's pieces
    (`interpreter.generation.GenerationPlan`), the prompt's ids, how many tokens."""

    plan: Any
    prompt: tuple[int, ...]
    steps: int


@dataclass(frozen=True)
class RunOutputs:
    """The outputs of a finished run: the entry subgraph and (name, tensor, values) rows;
    a generation run's last call's, with the prompt and every generated id."""

    subgraph: int
    rows: tuple
    tokens: tuple = ()
    prompt: tuple = ()


class Workspace:
    """Everything the window shows about one open model (see the module docstring)."""

    def __init__(self, model: Model | None = None, path: Path | None = None,
                 summary: Any = None) -> None:
        self.model = model
        self.path = path
        self.summary = summary           # ui.state.summary.ModelSummary of the opened file
        self.save_target = path          # where Save writes (the opened file until Save As)
        if model is not None and model.origin is not None:
            self.save_target = None      # a container's model: Save asks for a .tflite
        self.document = None             # edit.ModelDocument, made on the first edit
        self.edit_session = None         # the window's undo-stack mirror of the document
        self.debug = DebugState()
        self.breakpoints = BreakpointList()
        self.watches = WatchList()
        # navigation and selection
        self.subgraph = 0
        self.trail: list = []            # navigation.Crumb, outermost first
        self.scenes: dict = {}           # subgraph -> SceneData laid out for this model
        self.references: dict | None = None  # subgraph -> calls it makes (on demand)
        self.selection = None            # selection.Selection | None
        self.find_matches: list = []
        self.find_current = None
        self.shape_check = None          # interpreter ShapeInference: computed vs stored
        self.notes: list[str] = []       # what the last change did to pins, for the user
        self.version = 0                 # bumped each time the model is replaced
        self._parts: dict[str, Any] = {}
        self._closers: list[Callable[[], None]] = []
        self.closed = False

    def __repr__(self) -> str:
        name = self.path.name if self.path else ("model" if self.model else "empty")
        return f"<Workspace {name} v{self.version}>"

    # -- extension point ------------------------------------------------------------------
    def part(self, key: str, factory: Callable[[], T]) -> T:
        """Per-model state of a feature (``key``), made by ``factory`` on first use and
        dropped with the workspace: the quantization analysis, a memory plan, a target
        report ...  After an edit a part is made again (the model changed), unless it says
        what follows it: a part with ``after_edit()`` is replaced by what that returns (the
        float model to compare with stays chosen, the other model of a comparison stays
        open); a reload keeps what ``after_reload()`` returns."""
        if key not in self._parts:
            self._parts[key] = factory()
        return self._parts[key]

    def set_part(self, key: str, value: T) -> T:
        """Replace the part ``key`` (a comparison started afresh, one stopped)."""
        self._parts[key] = value
        return value

    def on_close(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` when this workspace is replaced (a worker to cancel, a stack to drop)."""
        self._closers.append(fn)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.debug.end()
        closers, self._closers = self._closers, []
        for fn in closers:
            try:
                fn()
            except Exception:  # noqa: BLE001 - closing one part must not keep the rest open
                log.exception("closing %r", self)

    def breakpoint_infos(self) -> tuple[BreakpointInfo, ...]:
        """The breakpoints as a list shows them: description (with the op's name in this
        model), enabled, hits in the current session."""
        out = []
        for e in self.breakpoints:
            bp = e.make()
            out.append(BreakpointInfo(e.id, describe_breakpoint(bp, self.model), e.enabled,
                                      e.hits, bp.subgraph, bp.op, breakpoint_kind(bp)))
        return tuple(out)

    # -- the model changes under it -------------------------------------------------------
    def replace_model(self, model: Model, scope: Any = None) -> list[str]:
        """The edit document has a new model (apply, undo or redo; ``scope`` the edit's
        `Scope`): results computed on the old one go (the run, its outputs and profile,
        the cross-check, the comparison, feature parts), watches and breakpoints follow
        their tensors and operators or are dropped, each with a note (returned, and kept
        in ``notes``)."""
        was_running = self.debug.active
        self.model = model
        self.version += 1
        self.debug.end()
        self.debug.inputs, self.debug.signature, self.debug.specs = {}, None, ()
        self.debug.generation = None
        self.debug.outputs, self.debug.profile = None, {}
        self.references = None
        self.scenes = {}
        self._parts = _successors(self._parts, "after_edit")
        notes = []
        if was_running:
            notes.append(SESSION_ENDED)
        notes += self.watches.resolve(model, scope)
        notes += self.breakpoints.resolve(model, scope)
        self.notes = notes
        return notes

    def carry_over(self, old: Workspace) -> list[str]:
        """A reload of ``old``'s file: keep its watches and breakpoints where the reloaded
        model still has their tensors and operators (by name), and its run inputs; notes
        for the user about what moved or went."""
        self.watches = WatchList(list(old.watches.pins))
        self._parts.update(_successors(old._parts, "after_reload"))
        self.breakpoints = old.breakpoints
        old.breakpoints = BreakpointList()
        for e in self.breakpoints:
            e.hits = 0
        notes = []
        if self.model is not None:
            notes += self.watches.resolve(self.model)
            notes += self.breakpoints.resolve(self.model)
        self.notes = notes
        return notes


def _successors(parts: dict[str, Any], how: str) -> dict[str, Any]:
    """The parts that say what follows them (``how``: "after_edit" or "after_reload"),
    replaced by that; the others are dropped."""
    out = {}
    for key, part in parts.items():
        follow = getattr(part, how, None)
        nxt = follow() if follow is not None else None
        if nxt is not None:
            out[key] = nxt
    return out


class Hub:
    """Owns the open `Workspace` and tells the views about it (see the module docstring)."""

    def __init__(self, workspace: Workspace | None = None) -> None:
        self.workspace = workspace or Workspace()
        self._subscribers: list[tuple[Callable[[Workspace], Any], frozenset[str]]] = []

    def subscribe(self, callback: Callable[[Workspace], Any], *topics: str) -> Callable[[], None]:
        """Call ``callback(workspace)`` when the workspace is replaced and on ``topics``;
        returns the function that unsubscribes."""
        unknown = set(topics) - set(TOPICS)
        if unknown and not all(isinstance(t, str) and "/" in t for t in unknown):
            # features name their own topics "feature/what"; a typo of a known one fails
            raise ValueError(f"unknown topics {sorted(unknown)} (known: {', '.join(TOPICS)}; "
                             "a feature's own topic is written 'feature/what')")
        entry = (callback, frozenset(topics) | {REPLACED})
        self._subscribers.append(entry)

        def unsubscribe() -> None:
            if entry in self._subscribers:
                self._subscribers.remove(entry)
        return unsubscribe

    def replace(self, workspace: Workspace) -> Workspace:
        """Make ``workspace`` the open one: the old one is closed (its session, tasks and
        undo stack go with it) and every view renders the new one.  Returns the old."""
        old, self.workspace = self.workspace, workspace
        if old is not workspace:
            old.close()
        self._notify(REPLACED)
        return old

    def changed(self, topic: str, workspace: Workspace | None = None) -> bool:
        """Tell the views of ``topic`` that the open workspace changed; a change of
        ``workspace`` when it is no longer the open one is dropped (False)."""
        if workspace is not None and workspace is not self.workspace:
            return False
        self._notify(topic)
        return True

    def _notify(self, topic: str) -> None:
        ws = self.workspace
        first: BaseException | None = None
        for callback, topics in list(self._subscribers):
            if topic not in topics:
                continue
            try:
                callback(ws)
            except Exception as exc:  # noqa: BLE001 - every view renders; the first error is raised
                log.exception("a view of %r failed on %r", ws, topic)
                first = first or exc
        if first is not None:
            raise first
