"""Composite ops read right (their name and decoded attributes on the canvas box, in
`info` and in Properties' source), and the parameter count counts each buffer once.

The models are written by the project's writer: the two-signature model of
tests/signature_model.py (two subgraphs whose FULLY_CONNECTED ops share one weight and
one bias buffer: 16 + 4 = 20 parameters by hand), and a STABLEHLO_COMPOSITE whose
``composite_attributes`` are encoded here with the flatbuffers package's own
flexbuffers encoder.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from flatbuffers import flexbuffers

from tests.cli_runner import run_cli
from tests.litert_oracle import litert
from tests.signature_model import UNIQUE_PARAMETERS, two_signature_model
from tflite_viewer.edit.tree import ModelTree
from tflite_viewer.edit.writer import serialize
from tflite_viewer.graph.labels import composite_summary, options_summary
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.model import load_model
from tflite_viewer.schema import schema_generated as S

ATTRIBUTES = {"epsilon": 1e-6, "axis": -1, "causal": True, "mode": "fast", "dims": [2, 3]}


def _info_json(path) -> dict:
    result = run_cli("info", path, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def composite_model(attributes: bytes | None, name: str = "odml.my_scale") -> bytes:
    """x -> STABLEHLO_COMPOSITE(name, attributes) whose decomposition multiplies by 3."""
    m = S.ModelT()
    m.version = 3
    codes = []
    for op in ("STABLEHLO_COMPOSITE", "MUL"):
        oc = S.OperatorCodeT()
        oc.builtinCode = getattr(S.BuiltinOperator, op)
        oc.deprecatedBuiltinCode = min(oc.builtinCode, 127)
        oc.version = 1
        codes.append(oc)
    m.operatorCodes = codes
    three = S.BufferT()
    three.data = np.frombuffer(np.array([3.0], np.float32).tobytes(), np.uint8)
    m.buffers = [S.BufferT(), three]

    def tensor(name, shape, buffer=0):
        t = S.TensorT()
        t.name, t.shape, t.type, t.buffer = name, list(shape), S.TensorType.FLOAT32, buffer
        return t

    main = S.SubGraphT()
    main.name = "main"
    main.tensors = [tensor("x", (4,)), tensor("y", (4,))]
    main.inputs, main.outputs = [0], [1]
    op = S.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = 0, [0], [1]
    opts = S.StableHLOCompositeOptionsT()
    opts.name, opts.decompositionSubgraphIndex, opts.version = name, 1, 0
    if attributes is not None:
        opts.compositeAttributes = list(attributes)
        opts.compositeAttributesFormat = S.CustomOptionsFormat.FLEXBUFFERS
    op.builtinOptions2Type = S.BuiltinOptions2.StableHLOCompositeOptions
    op.builtinOptions2 = opts
    main.operators = [op]
    body = S.SubGraphT()
    body.name = "decomposition"
    body.tensors = [tensor("bx", (4,)), tensor("three", (1,), 1), tensor("by", (4,))]
    body.inputs, body.outputs = [0], [2]
    mul = S.OperatorT()
    mul.opcodeIndex, mul.inputs, mul.outputs = 1, [0, 1], [2]
    mul.builtinOptionsType, mul.builtinOptions = S.BuiltinOptions.MulOptions, S.MulOptionsT()
    body.operators = [mul]
    m.subgraphs = [main, body]
    return serialize(ModelTree(m))


@pytest.fixture(scope="module")
def composite_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("composite") / "composite.tflite"
    path.write_bytes(composite_model(bytes(flexbuffers.Dumps(ATTRIBUTES))))
    return path


def test_composite_name_and_attributes_decode_to_what_was_encoded(composite_file):
    op = load_model(composite_file).subgraphs[0].operators[0]
    assert op.name == "STABLEHLO_COMPOSITE"
    assert op.composite_name == "odml.my_scale"
    assert op.composite_attributes == ATTRIBUTES
    # the box's line: every attribute, by key, in the spec's spelling of the values
    assert options_summary(op) == composite_summary(op) == \
        "axis=-1, causal=true, dims=[2, 3], epsilon=1e-06, mode=fast"
    doc = _info_json(composite_file)
    assert doc["subgraphs"][0]["operators"][0]["composite"] == {
        "name": "odml.my_scale", "attributes": ATTRIBUTES}
    # LiteRT runs the same op (through its decomposition), and so do we
    x = np.array([1, -2, 0.5, 4], np.float32)
    li = litert(composite_file)
    li.allocate_tensors()
    li.set_tensor(li.get_input_details()[0]["index"], x)
    li.invoke()
    ref = li.get_tensor(li.get_output_details()[0]["index"])
    np.testing.assert_array_equal(Interpreter(composite_file).invoke([x])["y"], ref)
    np.testing.assert_array_equal(ref, 3 * x)


def test_composite_box_title_and_options_on_the_canvas(composite_file):
    from tflite_viewer.ui.state.scene_data import build_scene_data
    data = build_scene_data(load_model(composite_file), 0)
    row = next(r for r, lab in enumerate(data.labels) if lab.kind == "op")
    lab = data.labels[row]
    assert lab.title == "odml.my_scale" and lab.version == "composite v1"
    assert data.options_text(row) == "axis=-1, causal=true, dims=[2, 3], epsilon=1e-06, mode=fast"
    assert lab.calls == {"decomposition": 1}


def test_composite_without_attributes_or_with_undecodable_ones():
    plain = load_model(composite_model(None)).subgraphs[0].operators[0]
    assert plain.composite_name == "odml.my_scale" and plain.composite_attributes is None
    assert options_summary(plain) == ""
    junk = load_model(composite_model(b"\x07\xff")).subgraphs[0].operators[0]
    assert junk.composite_attributes == b"\x07\xff"
    assert options_summary(junk) == "attributes <2 bytes>"


def test_parameters_count_each_shared_buffer_once(tmp_path):
    """Two subgraphs whose FULLY_CONNECTED ops share the weight and bias buffers: 20
    parameters (4x4 + 4) by hand, not 40; 80 bytes of weights."""
    from tflite_viewer.ui.state.summary import summarize
    path = tmp_path / "two.tflite"
    path.write_bytes(two_signature_model())
    m = load_model(path)
    shared = {t.buffer for sg in m.subgraphs for t in sg.tensors if t.buffer_nbytes}
    assert len(shared) == 2  # both subgraphs read buffers 1 and 2
    assert sum(1 for sg in m.subgraphs for t in sg.tensors if t.buffer_nbytes) == 4
    assert UNIQUE_PARAMETERS == 16 + 4
    assert m.parameter_count == 20
    assert summarize(m).parameter_count == 20  # the Model panel's figure
    assert m.weights_nbytes == 80
    doc = _info_json(path)
    assert doc["parameter_count"] == 20 and doc["weights_bytes"] == 80
