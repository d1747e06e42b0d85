"""The matcher on pairs built by hand: a fused activation split out into its own op (and
fused back in), an op inserted between two others, renamed tensors, a model with no
names; each match's evidence."""
from __future__ import annotations

import flatbuffers
import numpy as np
import pytest

from tflite_viewer.diff import diff_models
from tflite_viewer.match import match_models
from tflite_viewer.model import load_model
from tflite_viewer.schema import schema_generated as S

Op = S.BuiltinOperator


def _tensor(name, shape, buffer=0):
    t = S.TensorT()
    t.name, t.shape, t.buffer, t.type = name, list(shape), buffer, S.TensorType.FLOAT32
    return t


def _code(op):
    c = S.OperatorCodeT()
    c.builtinCode, c.deprecatedBuiltinCode, c.version = op, min(op, 127), 1
    return c


def _model(chain, names=True) -> bytes:
    """x -> FULLY_CONNECTED(w{k}) [fused act] -> ... with ``chain`` a list of
    ("fc", activation) or ("relu",) / ("tanh",) steps; written with the flatc object API."""
    rng = np.random.default_rng(0)
    m = S.ModelT()
    m.version = 3
    codes = {Op.FULLY_CONNECTED: 0, Op.RELU: 1, Op.TANH: 2, Op.LOGISTIC: 3}
    m.operatorCodes = [_code(op) for op in codes]
    m.buffers = [S.BufferT()]
    tensors = [_tensor("x" if names else "", [1, 4])]
    ops = []
    prev = 0
    for k, step in enumerate(chain):
        op = S.OperatorT()
        if step[0] == "fc":
            buf = S.BufferT()
            buf.data = rng.standard_normal(16).astype(np.float32).view(np.uint8)
            m.buffers.append(buf)
            tensors.append(_tensor(f"w{k}" if names else "", [4, 4], len(m.buffers) - 1))
            op.opcodeIndex, op.inputs = codes[Op.FULLY_CONNECTED], [prev, len(tensors) - 1, -1]
            op.builtinOptionsType = S.BuiltinOptions.FullyConnectedOptions
            opts = S.FullyConnectedOptionsT()
            opts.fusedActivationFunction = step[1]
            op.builtinOptions = opts
        else:
            op.opcodeIndex, op.inputs = {"relu": codes[Op.RELU], "tanh": codes[Op.TANH],
                                         "logistic": codes[Op.LOGISTIC]}[step[0]], [prev]
        tensors.append(_tensor(step[-1] if names and isinstance(step[-1], str) and
                               step[0] != "fc" else (f"t{k}" if names else ""), [1, 4]))
        op.outputs = [len(tensors) - 1]
        prev = len(tensors) - 1
        ops.append(op)
    sg = S.SubGraphT()
    sg.tensors, sg.operators, sg.inputs, sg.outputs = tensors, ops, [0], [prev]
    m.subgraphs = [sg]
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


RELU = S.ActivationFunctionType.RELU
NONE = S.ActivationFunctionType.NONE


def test_a_fused_activation_split_out_is_an_added_relu_and_a_changed_option():
    a = load_model(_model([("fc", NONE), ("fc", RELU), ("fc", NONE)]))
    # B: the second FC without its activation, a RELU op after it; B's tensors are named by
    # their step, so after the split no name but x and the weights agrees with A's
    b = load_model(_model([("fc", NONE), ("fc", NONE), ("relu", "t1"), ("fc", NONE)]))
    m = match_models(a, b)
    ops = {x[1]: y[1] for x, y, _ in m.op_pairs()}
    assert ops == {0: 0, 1: 1, 2: 3}
    (key, why), = m.inserted_ops()
    assert key == (0, 2) and why.startswith("RELU split out of the fused activation of op 1")
    assert m.removed_ops() == []
    d = diff_models(a, b, match=m)
    lines = {(x.category, x.change, x.field, (x.a or x.b).index) for x in d.differences}
    assert ("operator", "changed", "fused_activation", 1) in lines
    assert ("operator", "added", "", 2) in lines
    # the next FC reads the RELU's output: explained by the added op, no connection change
    assert not [x for x in d.differences if x.field.startswith("inputs")]


def test_the_other_way_the_relu_is_fused_in():
    a = load_model(_model([("fc", NONE), ("fc", NONE), ("relu", "t1"), ("fc", NONE)]))
    b = load_model(_model([("fc", NONE), ("fc", RELU), ("fc", NONE)]))
    m = match_models(a, b)
    (key, why), = m.removed_ops()
    assert key == (0, 2) and why.startswith("RELU fused into the fused activation of op 1")


def test_an_op_inserted_between_two_ops_is_looked_through():
    a = load_model(_model([("fc", NONE), ("fc", NONE)]))
    b = load_model(_model([("fc", NONE), ("tanh", "t_extra"), ("fc", NONE)]))
    m = match_models(a, b)
    assert {x[1]: y[1] for x, y, _ in m.op_pairs()} == {0: 0, 1: 2}
    assert [(k, why) for k, why in m.inserted_ops()] == [((0, 1), "added")]


def test_without_names_weights_are_matched_by_their_bytes_and_ops_by_structure():
    a = load_model(_model([("fc", NONE), ("fc", NONE), ("fc", NONE)], names=False))
    b = load_model(_model([("fc", NONE), ("fc", NONE), ("fc", NONE)], names=False))
    m = match_models(a, b)
    assert {x[1]: y[1] for x, y, _ in m.op_pairs()} == {0: 0, 1: 1, 2: 2}
    kinds = {ev.kind for _, _, ev in m.tensor_pairs()}
    assert "name" not in kinds and "content" in kinds
    assert diff_models(a, b, match=m).same


@pytest.mark.parametrize("evidence", ["name", "signature", "structure"])
def test_each_match_carries_its_evidence(evidence):
    from tests.conftest import MODELS_DIR
    from tflite_viewer.edit import ModelDocument, RenameTensor
    path = MODELS_DIR / "small_cnn_dilated_float.tflite"
    a = load_model(path)
    doc = ModelDocument(a)
    for t in a.subgraphs[0].tensors:  # every name changed: only structure and signatures
        doc.apply(RenameTensor(0, t.index, f"n{t.index}"))
    b = a if evidence == "name" else doc.model
    m = match_models(a, b)
    kinds = {ev.kind for _, _, ev in m.tensor_pairs()}
    assert evidence in kinds
    if evidence != "name":
        assert "name" not in kinds
        assert all(x == y for x, y, _ in m.tensor_pairs())
    for x, y, ev in m.op_pairs():
        assert ev.kind == "structure" and ev.detail
