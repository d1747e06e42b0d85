"""Shapes as the interpreter computes them, compared with the shapes stored in the file.

An edit that changes what an operator computes (a stride, the padding, a filter's shape,
a reshape target, an input's shape) leaves the stored shapes of the tensors after it
stale: LiteRT recomputes them when it allocates, so the file still runs, but a view that
shows the stored shapes lies.  `infer_shapes` runs the interpreter's own shape propagation,
the kernels' ``prepare`` in execution order (TFLite's AllocateTensors), on the entry
subgraphs (0 and every signature's; control-flow kernels prepare the subgraphs they call),
and reports each operator output whose computed shape differs from the stored one.

Only shapes are computed: ``prepare`` records dims and never creates the tensors' data, so
a model of any size costs the time of its prepare functions, not its activations' memory
(the allocation limit is lifted here for the same reason).  A node whose prepare fails is
reported and its outputs are treated as unknown, so one bad edit does not hide the rest.

A shape computed empty from placeholders is not reported: in a model with dynamic inputs
(openWakeWord's melspectrogram: signature [-1, -1], stored [1, 1]) the stored shapes are
placeholders, and what prepare computes from them (a 0-frame spectrogram) is what no run
computes; a stored shape that differs from it only in dimensions the signature leaves open
(-1), where the computed one has 0, is neither reported nor offered for writing (writing it
would store 0-length dimensions).  Other differences in open dimensions stay reported:
small_cnn_dilated stores batch 1 where SPACE_TO_BATCH_ND computes 4, as LiteRT does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..model import Model
from .errors import AllocationError, ExecutionError, UnsupportedOpError
from .interpreter import Interpreter
from .subgraph import Subgraph

_NO_LIMIT = 1 << 62  # prepare allocates nothing: the byte limit guards invoke, not this


@dataclass(frozen=True)
class ShapeMismatch:
    """Tensor ``tensor`` of ``subgraph`` is stored as ``stored`` but its producer
    (operator ``operator``) computes ``inferred``."""

    subgraph: int
    tensor: int
    operator: int
    stored: tuple[int, ...]
    inferred: tuple[int, ...]

    def message(self, tensor_name: str = "", op_name: str = "") -> str:
        who = f"tensor {self.tensor}" + (f" {tensor_name!r}" if tensor_name else "")
        by = f"op {self.operator}" + (f" ({op_name})" if op_name else "")
        return (f"{who}: stored shape {list(self.stored)} but {by} computes "
                f"{list(self.inferred)}")


@dataclass
class ShapeInference:
    """What `infer_shapes` found: computed shapes, mismatches, prepare failures."""

    #: (subgraph, tensor) -> shape the producer's prepare computed (operator outputs only)
    shapes: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)
    mismatches: list[ShapeMismatch] = field(default_factory=list)
    #: (subgraph, operator, message) of nodes whose prepare failed
    failures: list[tuple[int, int, str]] = field(default_factory=list)
    #: why nothing could be inferred (an operator the interpreter cannot resolve), or None
    unavailable: str | None = None

    def inferred(self, subgraph: int, tensor: int) -> tuple[int, ...] | None:
        return self.shapes.get((subgraph, tensor))


def infer_shapes(model: Model) -> ShapeInference:
    """Propagate shapes through ``model`` with the kernels' prepare (see the module doc)."""
    out = ShapeInference()
    interp = Interpreter(model, allocate=False, max_allocation_bytes=_NO_LIMIT)
    try:
        interp._build_nodes()  # resolve every operator (the first half of allocate_tensors)
    except UnsupportedOpError as exc:
        out.unavailable = str(exc).splitlines()[0]
        return out
    entries = sorted({0} | {s.subgraph_index for s in model.signature_defs})
    for i in entries:
        if 0 <= i < len(interp.subgraphs):
            _prepare_tolerantly(interp.subgraphs[i], out)
    for sg in interp.subgraphs:
        _collect(sg, model, out)
    return out


def _prepare_tolerantly(sg: Subgraph, out: ShapeInference) -> None:
    """Prepare every node in execution order; a failing node is recorded and its outputs
    become unknown (dynamic), so the nodes after it are prepared as far as they can be."""
    for node in sg.plan_nodes:
        try:
            sg.prepare_node(node)
        except (ExecutionError, AllocationError) as exc:
            out.failures.append((sg.index, node.index, str(exc)))
            for o in node.outputs:
                if o >= 0:
                    sg.set_dynamic(sg.tensors[o])
            node.prepared_shapes = sg.input_shapes(node)


def _collect(sg: Subgraph, model: Model, out: ShapeInference) -> None:
    stored_tensors = model.subgraphs[sg.index].tensors
    for node in sg.plan_nodes:
        if node.prepared_shapes is None:  # never prepared (a subgraph nobody calls)
            continue
        for o in node.outputs:
            if o < 0:
                continue
            shape = sg.tensors[o].shape
            if shape is None:  # dynamic: known only when the producer runs
                continue
            out.shapes[(sg.index, o)] = shape
            stored = tuple(int(d) for d in stored_tensors[o].shape)
            # an empty stored shape on a tensor computed with dims is "not stored" (the
            # converter leaves custom ops' outputs so), not a disagreement
            if stored != shape and (stored or not shape) and \
                    not _empty_placeholder(stored, shape, stored_tensors[o].shape_signature):
                out.mismatches.append(ShapeMismatch(sg.index, o, node.index, stored, shape))


def _empty_placeholder(stored: tuple[int, ...], computed: tuple[int, ...], signature) -> bool:
    """Whether ``computed`` is an empty shape from placeholder inputs: it differs from
    ``stored`` only in dimensions ``signature`` leaves open (-1), and is 0 in one of them
    (see the module docstring)."""
    if signature is None or len(signature) != len(stored) or len(stored) != len(computed):
        return False
    differing = [(c, int(g)) for s, c, g in zip(stored, computed, signature) if s != c]
    return all(g < 0 for _c, g in differing) and any(c == 0 for c, _g in differing)
