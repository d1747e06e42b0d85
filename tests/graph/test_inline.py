"""Composites expanded inline (graph/inline.py): the expanded graph's edges are the data
flow of a real run.  Every edge from an operator's output to another operator's input must
carry the very array the first wrote and the second read, whichever subgraph each lives
in, so the interpreter, run with hooks that record every op's input and output values,
is the independent check of the wiring across a decomposition's boundary."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tests.interpreter.kv_decoder_models import kv_decoder_model
from tflite_viewer.graph.arrays import OP, graph_arrays
from tflite_viewer.graph.inline import expanded_arrays
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.inputs import seeded_inputs
from tflite_viewer.model import load_model

LLM = MODELS_DIR / "llm"


def _recorded(model, signature):
    """(subgraph, op) -> (input arrays, output arrays) of one run, by position."""
    interp = Interpreter(model)
    seen: dict = {}

    def before(it, ev):
        seen[(ev.subgraph, ev.op)] = [[None if t < 0 else it.tensor(ev.subgraph, t)
                                       for t in ev.node.inputs], None]

    def after(it, ev):
        seen[(ev.subgraph, ev.op)][1] = [it.tensor(ev.subgraph, t) for t in ev.node.outputs]
    interp.add_hook("before", before)
    interp.add_hook("after", after)
    interp.invoke(seeded_inputs(model, 0, signature), signature=signature)
    return seen


@pytest.mark.parametrize("source", ["tiny_llama_f32", "written"])
def test_every_inlined_edge_carries_the_array_a_run_passes_along_it(source):
    model = load_model(kv_decoder_model(0) if source == "written"
                       else LLM / f"{source}.tflite")
    for sig in model.signature_defs:
        s = sig.subgraph_index
        exp = expanded_arrays(model, s)
        assert exp.inlined
        ga = exp.arrays
        seen = _recorded(model, sig.key)
        n_ops = exp.n_ops

        def origin(node):
            ref = int(ga.ref[node])
            return (s, ref) if ref < n_ops else exp.slots[ref - n_ops]
        checked = 0
        for u, v, key in zip(ga.src.tolist(), ga.dst.tolist(), ga.tensor.tolist()):
            if ga.kind[u] != OP or ga.kind[v] != OP:
                continue
            (su, ou), (sv, ov) = origin(u), origin(v)
            tu, tv = model.subgraphs[su].operators[ou], model.subgraphs[sv].operators[ov]
            written = seen[(su, ou)][1]
            read = seen[(sv, ov)][0]
            # the edge's tensor: one of u's outputs and one of v's inputs, the same array
            ks, kt = exp.origin_of_tensor(key)
            outs = [i for i, t in enumerate(tu.outputs) if (su, t) == (ks, kt)] if su == ks \
                else list(range(len(tu.outputs)))
            pairs = [(a, b) for a in outs for b in range(len(tv.inputs))
                     if written[a] is not None and read[b] is not None
                     and written[a].shape == read[b].shape
                     and np.array_equal(written[a], read[b], equal_nan=True)]
            assert pairs, (sig.key, (su, ou, tu.name), (sv, ov, tv.name), key)
            checked += 1
        assert checked > 50
        # every operator run is drawn once: the shown subgraph's own but its composites,
        # and each decomposition's operators
        ops = Counter(origin(n) for n in np.flatnonzero(ga.kind == OP).tolist())
        composites = {(s, op.index) for op in model.subgraphs[s].operators
                      if op.name == "STABLEHLO_COMPOSITE"}
        assert set(ops) == set(seen) - composites and max(ops.values()) == 1


def test_a_subgraph_without_composites_is_drawn_as_always():
    """Without a composite the expanded arrays are the plain ones, node for node (the
    builder here and graph.arrays follow one convention)."""
    for name in ("mobilenet_v2_float", "control_flow", "face_detection_short_range"):
        model = load_model(MODELS_DIR / f"{name}.tflite")
        for s in range(len(model.subgraphs)):
            a, e = graph_arrays(model, s), expanded_arrays(model, s)
            assert not e.inlined
            for f in ("kind", "ref", "src", "dst", "tensor"):
                assert np.array_equal(getattr(a, f), getattr(e.arrays, f)), (name, s, f)
