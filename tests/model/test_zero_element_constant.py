"""A constant with no element (an INT32 shape-[0] tensor, the shape of a reshape to a
scalar) has a rightly empty buffer: it is a constant, not an activation, in the reader, the
interpreter, the graph and the CLI (the panels: tests/ui/test_panels.py)."""
from __future__ import annotations

import json

import flatbuffers
import numpy as np

from tflite_viewer.model import load_model
from tflite_viewer.schema import schema_generated as S
from tests.cli_runner import run_cli
from tests.interpreter.singleop import Input, single_op_model

SHAPE_TENSOR = 1  # RESHAPE's second input


def reshape_to_scalar() -> bytes:
    """RESHAPE of a [1] input to a scalar by a constant INT32 shape of shape [0]."""
    return single_op_model("RESHAPE", [Input((1,)), np.zeros((0,), np.int32)], [np.float32])


def with_own_empty_buffers(model: bytes, tensors: list[int], shape=None) -> bytes:
    """Give ``tensors`` an empty buffer of their own (as old converters do for every
    activation), optionally a new static shape."""
    m = S.ModelT.InitFromPackedBuf(model, 0)
    for t in tensors:
        m.buffers.append(S.BufferT())
        m.subgraphs[0].tensors[t].buffer = len(m.buffers) - 1
        if shape is not None:
            m.subgraphs[0].tensors[t].shape = list(shape)
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def test_the_reader_calls_it_a_constant():
    model = load_model(reshape_to_scalar())
    sg = model.subgraphs[0]
    t = sg.tensors[SHAPE_TENSOR]
    assert t.buffer > 0 and t.buffer_nbytes == 0 and t.num_elements == 0
    assert t.is_constant and t.kind == "constant"
    assert sg.constant_mask.tolist() == [False, True, False]
    assert [sg.tensors[k].kind for k in (0, 2)] == ["activation", "activation"]


def test_written_zero_element_tensors_with_own_empty_buffers_stay_activations():
    """The input and the output (written by the subgraph's caller and by the RESHAPE)
    get buffers of their own and a zero-element shape: still activations."""
    model = load_model(with_own_empty_buffers(reshape_to_scalar(), [0, 2], shape=(0,)))
    sg = model.subgraphs[0]
    assert [sg.tensors[k].kind for k in range(3)] == ["activation", "constant", "activation"]
    assert sg.constant_mask.tolist() == [False, True, False]


def test_the_interpreter_holds_it_read_only():
    from tflite_viewer.interpreter import Interpreter
    interp = Interpreter(reshape_to_scalar())
    t = interp.runtime_tensor(0, SHAPE_TENSOR)
    assert t.is_constant and t.allocation_type.name == "MMAP_RO"
    assert t.data is not None and t.data.shape == (0,) and t.data.dtype == np.int32
    out = list(interp.invoke([np.array([2.5], np.float32)]).values())[0]
    assert out.shape == () and float(out) == 2.5


def test_the_graph_lists_it_on_its_operator_and_draws_no_node_for_it():
    from tflite_viewer.graph.build import build_graph
    g = build_graph(load_model(reshape_to_scalar()))
    ops = [n for n, d in g.nodes(data=True) if d["kind"] == "op"]
    assert len(ops) == 1 and g.nodes[ops[0]]["constants"] == (SHAPE_TENSOR,)
    assert not any(d.get("tensor") == SHAPE_TENSOR for _, d in g.nodes(data=True))
    assert not any(t == SHAPE_TENSOR for _, _, t in g.edges(keys=True))
    assert sorted(n for n in g.nodes if n != ops[0]) == ["in:0", "out:2"]


def test_cli_info_reports_it_as_a_constant(tmp_path):
    path = tmp_path / "reshape_to_scalar.tflite"
    path.write_bytes(reshape_to_scalar())
    result = run_cli("info", path, "--json")
    assert result.returncode == 0, result.stderr
    tensors = json.loads(result.stdout)["subgraphs"][0]["tensors"]
    assert [t["kind"] for t in tensors] == ["activation", "constant", "activation"]
    text = run_cli("info", path)
    assert text.returncode == 0, text.stderr
    lines = {line.split()[0]: line for line in text.stdout.splitlines() if "T#" in line
             and line.split()[0].startswith("T#")}
    assert lines["T#1"].endswith("INT32[0] B#1 (0 bytes)")  # a constant's buffer is named
    assert "B#" not in lines["T#0"] and "B#" not in lines["T#2"]
