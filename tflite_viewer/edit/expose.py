"""An exposed copy of a model: every operator output of a subgraph made a model output.

LiteRT keeps a model's outputs readable after an invoke, while other tensors may share
memory with later ones unless it runs with ``experimental_preserve_all_tensors`` -- which
crashes on some models.  A copy whose every operator output is an output gives LiteRT's
value of every intermediate tensor without that option: the cross-check
(`tflite_viewer.interpreter.crosscheck`) falls back to it, given this function by its
caller (the interpreter does not import the editor).  The copy is made in memory with the
editor's own `ExposeTensor` command on one object tree, serialized once; tensor indices do
not change, so LiteRT's tensors are compared with ours index for index.
"""
from __future__ import annotations

from ..model import Model, load_model
from .commands import ExposeTensor
from .tree import unpack
from .writer import serialize

#: tensor types that are handles, not values: never exposed (LiteRT hands them out as
#: Python objects, and reading a resource variable's handle crashes it)
_HANDLES = {"RESOURCE", "VARIANT"}


def expose_op_outputs(model: Model | bytes, subgraph: int = 0) -> bytes:
    """The bytes of ``model`` with every operator output of ``subgraph`` that is not yet a
    subgraph output (and holds a value: not a RESOURCE or VARIANT handle) appended to its
    outputs, in execution order; signatures of that subgraph are left as they are."""
    m = model if isinstance(model, Model) else load_model(model)
    sg = m.subgraphs[subgraph]
    tree = unpack(m)
    already = set(sg.outputs)
    for op in sg.operators:
        for t in op.outputs:
            if t < 0 or t in already or sg.tensors[t].type_name in _HANDLES:
                continue
            already.add(t)
            ExposeTensor(subgraph, t, signatures=False).apply(tree)
    return serialize(tree)
