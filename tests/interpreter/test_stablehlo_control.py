"""STABLEHLO_COMPOSITE and STABLEHLO_CASE: results against LiteRT, and the debugger steps
into the subgraphs they call."""
from __future__ import annotations

import numpy as np
from flatbuffers import flexbuffers
import pytest

from tflite_viewer.interpreter import Interpreter

from .singleop import Op, assert_matches_litert, graph_model

F32, I32 = np.float32, np.int32


def _composite_model() -> bytes:
    """out = composite "my.gelu_like"(x, y) decomposed as tanh(x * y) + x (subgraph 1)."""
    main = [((2, 3), F32), ((2, 3), F32), ((2, 3), F32)]
    ops = [Op("STABLEHLO_COMPOSITE", [0, 1], [2], "StableHLOCompositeOptions",
              {"name": "my.gelu_like", "decomposition_subgraph_index": 1, "version": 1,
               "composite_attributes": list(flexbuffers.Dumps({"alpha": 0.5})),
               "composite_attributes_format": 0})]
    decomposition = ([((2, 3), F32), ((2, 3), F32), ((2, 3), F32), ((2, 3), F32),
                      ((2, 3), F32)],
                     [Op("MUL", [0, 1], [2], "MulOptions", {}), Op("TANH", [2], [3]),
                      Op("ADD", [3, 0], [4], "AddOptions", {})], [0, 1], [4])
    return graph_model(main, ops, [0, 1], [2], subgraphs=[decomposition])


def test_composite_runs_its_decomposition():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 2, 3)).astype(F32)
    out = list(Interpreter(_composite_model()).invoke([x, y]).values())[0]
    np.testing.assert_allclose(out, np.tanh(x * y) + x, rtol=1e-6)
    assert_matches_litert(_composite_model(), [x, y], reference=False)


def test_composite_can_be_stepped_into():
    interp = Interpreter(_composite_model())
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 2, 3)).astype(F32)
    interp.set_inputs([x, y])
    stop = interp.step_into()
    assert stop.position == ((0, 0), (1, 0))  # paused before the decomposition's MUL
    assert interp.current_node().name == "MUL"
    stop = interp.step()
    assert interp.current_node().name == "TANH"
    stop = interp.step_out()
    assert stop.finished
    np.testing.assert_allclose(list(stop.outputs.values())[0], np.tanh(x * y) + x, rtol=1e-6)


def _case_model(branches: int) -> bytes:
    main = [((), I32), ((4,), F32), ((4,), F32)]
    ops = [Op("STABLEHLO_CASE", [0, 1], [2], "StablehloCaseOptions",
              {"branch_subgraph_indices": list(range(1, branches + 1))})]
    subs = []
    for k in range(branches):  # branch k: x * (k + 2)
        subs.append(([((4,), F32), (np.full(4, k + 2, F32),), ((4,), F32)],
                     [Op("MUL", [0, 1], [2], "MulOptions", {})], [0], [2]))
    return graph_model(main, ops, [0, 1], [2], subgraphs=subs)


@pytest.mark.parametrize("index", [0, 1, 2, -1, 3, 99])
def test_case_picks_a_branch_and_the_last_when_out_of_range(index):
    x = np.arange(4, dtype=F32)
    model = _case_model(3)
    out = list(Interpreter(model).invoke([np.array(index, I32), x]).values())[0]
    chosen = index if 0 <= index < 3 else 2
    np.testing.assert_array_equal(out, x * (chosen + 2))
    assert_matches_litert(model, [np.array(index, I32), x], reference=False)


def test_case_can_be_stepped_into():
    interp = Interpreter(_case_model(2))
    interp.set_inputs([np.array(1, I32), np.ones(4, F32)])
    stop = interp.step_into()
    assert stop.position == ((0, 0), (2, 0))
