"""An inserted operator spliced, not re-serialized: `SplitFusedActivation` grows the
subgraph's ``tensors`` and ``operators`` vectors (and the model's ``operator_codes`` when
the activation's code is new) in a block written at the front of the file (`edit.front`).

The proofs: the spliced model reads back field for field like a full serialize of the
same tree, LiteRT computes the same outputs before and after the split (it keeps the
computation) and on the spliced bytes as on a fresh serialize, every weight keeps its
bytes, the file grows by about four bytes per entry of the grown vectors (not a rewrite),
and undo/redo give every state back byte for byte; in the inline layout and in the > 2 GB
layout (buffers stored after the flatbuffer, whose offsets move by the inserted block).
"""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks.synthetic_models import residual_model
from tests.conftest import MODELS_DIR
from tests.edit.helpers import assert_same_fields, seeded_inputs
from tests.edit.test_splice import _check_state, _kind, _spliced
from tests.litert_oracle import litert
from tflite_viewer.edit import SplitFusedActivation, serialize, unpack
from tflite_viewer.edit.commands.activation import INTERNAL_ACTIVATION
from tflite_viewer.model.errors import EditError
from tflite_viewer.edit.pieces import INSERT_GRANULE
from tflite_viewer.model import load_model

ACTIVATIONS = ("RELU", "RELU6", "RELU_N1_TO_1", "TANH")


def _source(tmp_path, name: str, layout: str):
    """The model file in the asked layout (``offset``: buffers after the flatbuffer)."""
    data = residual_model(int(name.split(":")[1])) if name.startswith("residual:") else \
        (MODELS_DIR / name).read_bytes()
    if layout == "offset":
        data = serialize(unpack(load_model(data)), layout="offset")
    path = tmp_path / "model.tflite"
    path.write_bytes(data)
    return path


def _fused(model, most: int) -> list[tuple[int, int]]:
    """(subgraph, operator) of float operators with a fused activation: the first, the
    last and some between, last first (a split moves the operators after it)."""
    found = [(sg.index, op.index) for sg in model.subgraphs for op in sg.operators
             if isinstance(op.builtin_options, dict) and op.name not in INTERNAL_ACTIVATION
             and op.builtin_options.get("fused_activation_function") in ACTIVATIONS
             and len(op.outputs) == 1
             and sg.tensors[op.outputs[0]].type_name in ("FLOAT32", "FLOAT16")]
    if len(found) > most:
        found = [found[int(k)] for k in np.unique(np.linspace(0, len(found) - 1, most)
                                                  .round().astype(int))]
    return sorted(found, reverse=True)


def _outputs(model_bytes: bytes) -> list[np.ndarray]:
    """LiteRT's outputs of every signature (or of the primary subgraph) on seeded inputs."""
    interp = litert(model_bytes)
    keys = list(interp.get_signature_list())
    if not keys:
        interp.allocate_tensors()
        for index, value in seeded_inputs(interp).items():
            interp.set_tensor(index, value)
        interp.invoke()
        return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]
    out = []
    for key in keys:
        runner = interp.get_signature_runner(key)
        rng = np.random.default_rng(0)
        feeds = {name: rng.standard_normal(d["shape"]).astype(d["dtype"])
                 for name, d in sorted(runner.get_input_details().items())}
        result = runner(**feeds)
        out += [np.array(result[name]) for name in sorted(result)]
    return out


def _check_split(doc, s: int, k: int, before) -> None:
    """Operator k writes a new tensor with no activation; operator k + 1 is the
    activation reading it and writing k's old output."""
    old = before.subgraphs[s].operators[k]
    act = old.builtin_options["fused_activation_function"]
    sg = doc.model.subgraphs[s]
    op, new = sg.operators[k], sg.operators[k + 1]
    assert op.builtin_options["fused_activation_function"] == "NONE"
    assert new.name == act
    assert list(new.inputs) == list(op.outputs) == [len(sg.tensors) - 1]
    assert list(new.outputs) == list(old.outputs)
    assert sg.tensors[-1].name == before.subgraphs[s].tensors[old.outputs[0]].name + \
        "/pre_activation"


@pytest.mark.parametrize("layout", ["inline", "offset"])
@pytest.mark.parametrize("name", ["small_cnn_dilated_float.tflite", "mobilenet_v2_float.tflite",
                                  "movie_review.tflite", "multi_signature.tflite",
                                  "residual:90"])
def test_split_activation_is_spliced_and_computes_the_same(tmp_path, name, layout):
    src = _source(tmp_path, name, layout)
    before = load_model(src)
    doc = _spliced(src)
    states = [doc.to_bytes()]
    expected = _outputs(states[0])
    grew_codes = False
    for s, k in _fused(before, 4):
        model = doc.model
        entries = len(model.operator_codes) + sum(
            len(sg.tensors) + len(sg.operators) + 1 for sg in model.subgraphs)
        doc.apply(SplitFusedActivation(s, k))
        assert _kind(doc) == "splice"
        _check_state(doc)
        _check_split(doc, s, k, model)
        grew_codes |= len(doc.model.operator_codes) > len(model.operator_codes)
        states.append(doc.to_bytes())
        grown = len(states[-1]) - len(states[-2])
        bound = 4 * entries + 2048
        if layout == "offset":
            bound = -(-bound // INSERT_GRANULE) * INSERT_GRANULE
        assert 0 < grown <= bound  # the new vectors and tables, not a rewrite
    assert len(states) > 1
    if name in ("small_cnn_dilated_float.tflite", "residual:90"):
        assert grew_codes  # RELU/RELU6 had no operator code: operator_codes grew too
    meta = {e.buffer for e in before.metadata}  # min_runtime_version may follow the codes
    for a, b in zip(before.buffers, doc.model.buffers):  # every weight as it was
        assert a.index in meta or a.data.tobytes() == b.data.tobytes()
        if layout == "offset" and a.is_external_layout:
            assert (b.offset - a.offset) % INSERT_GRANULE == 0 and b.offset > a.offset
    for a, b in zip(expected, _outputs(states[-1])):  # the split keeps the computation
        np.testing.assert_array_equal(a, b)
    for a, b in zip(_outputs(serialize(doc.tree)), _outputs(states[-1])):
        np.testing.assert_array_equal(a, b)
    for k in range(len(states) - 1, 0, -1):
        doc.undo()
        assert doc.to_bytes() == states[k - 1]
    for k in range(1, len(states)):
        doc.redo()
        assert doc.to_bytes() == states[k]


def _sampled_rows(count: int) -> list[int]:
    """The rows a 20,000-operator model's comparison reads in the fast tier: every 97th,
    those around the two splits (operators 10,000 and 15,000 and the tensors they add) and
    the last ten, where the grown vectors end."""
    near = {i for k in (10_000, 15_000) for i in range(k - 3, k + 5)}
    return sorted(i for i in {*range(0, count, 97), *near, *range(count - 10, count)}
                  if 0 <= i < count)


@pytest.mark.parametrize("layout, rows", [
    ("inline", _sampled_rows),
    pytest.param("inline", None, marks=pytest.mark.slow),
    pytest.param("offset", None, marks=pytest.mark.slow)], ids=["inline-sampled", "inline",
                                                               "offset"])
def test_split_on_the_20000_operator_model_is_spliced(tmp_path, layout, rows):
    """The benchmark's model, spliced by default (no forcing): two splits, the first adds
    RELU's operator code, the second reuses it.  The spliced model reads back field for
    field like a full serialize: every row in the slow tier, a sample of rows (and every
    model-level field) in CI's."""
    from tflite_viewer.edit import ModelDocument
    src = _source(tmp_path, "residual:20000", layout)
    before = load_model(src)
    doc = ModelDocument(src)
    states = [doc.to_bytes()]
    for k in (15_000, 10_000):  # CONV_2D with a fused RELU (k % 3 != 2)
        model = doc.model
        doc.apply(SplitFusedActivation(0, k))
        assert _kind(doc) == "splice"
        _check_split(doc, 0, k, model)
        states.append(doc.to_bytes())
        assert len(states[-1]) - len(states[-2]) < 4 * 40_010 + INSERT_GRANULE + 2048
    assert len(doc.model.operator_codes) == len(before.operator_codes) + 1
    assert_same_fields(doc.model, load_model(serialize(doc.tree)), rows)
    assert doc.model.data.tobytes() == states[-1]
    for a, b in zip(before.buffers, doc.model.buffers):
        assert a.data.tobytes() == b.data.tobytes()
    doc.undo()
    doc.undo()
    assert doc.to_bytes() == states[0]
    doc.redo()
    doc.redo()
    assert doc.to_bytes() == states[2]


def test_a_recurrent_cell_activation_is_refused():
    """UNIDIRECTIONAL_SEQUENCE_LSTM's TANH acts on its gates and state: split out, LiteRT
    computes other outputs (checked when this refusal was added), so it is refused."""
    from tflite_viewer.edit import ModelDocument
    doc = ModelDocument(MODELS_DIR / "trained_lstm.tflite")
    sg = doc.model.subgraphs[0]
    lstm = next(op for op in sg.operators if op.name == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    assert lstm.builtin_options["fused_activation_function"] == "TANH"
    before = doc.to_bytes()
    with pytest.raises(EditError, match="recurrent cell"):
        doc.apply(SplitFusedActivation(0, lstm.index))
    assert doc.to_bytes() == before and not doc.can_undo


def test_split_on_a_model_over_2_gb_moves_the_buffers_by_whole_granules(tmp_path):
    """A real > 2 GB file (a sparse 2.2 GB buffer after the weights): the front block
    raises every absolute offset past 2**31 by whole `INSERT_GRANULE`s, and the buffers
    read the same bytes (the whole file is neither joined nor re-serialized here)."""
    import struct

    from tflite_viewer.edit.patch import Locator
    from tflite_viewer.schema import schema_generated as S
    tree = unpack(load_model(residual_model(60)))
    big = S.BufferT()
    big.data = np.arange(64, dtype=np.uint8)
    tree.model.buffers.append(big)
    data = bytearray(serialize(tree, layout="offset"))
    m = load_model(bytes(data))
    k = len(m.buffers) - 1
    start = m.buffers[k].offset
    batch, row = Locator(m).table((("buffers", k),))
    size_at = int(batch.pos[row]) + int(batch.fo["size"][row])
    huge = (2 << 30) + (64 << 20)
    data[size_at:size_at + 8] = struct.pack("<Q", huge)  # the buffer runs on, sparse
    src = tmp_path / "big.tflite"
    with open(src, "wb") as f:
        f.write(data[:start + 64])
        f.truncate(start + huge)
    before = load_model(src)
    assert before.file_size > 2**31
    doc = _spliced(src)
    conv = next(op.index for op in before.subgraphs[0].operators if op.name == "CONV_2D")
    doc.apply(SplitFusedActivation(0, conv))
    assert _kind(doc) == "splice"
    _check_split(doc, 0, conv, before)
    after = doc.model
    shifts = {b.offset - a.offset for a, b in zip(before.buffers, after.buffers)
              if a.is_external_layout}
    assert len(shifts) == 1 and shifts.pop() % INSERT_GRANULE == 0
    assert after.buffers[k].data[:64].tobytes() == bytes(range(64))
    for a, b in zip(before.buffers[:k], after.buffers):
        assert a.data.tobytes() == b.data.tobytes()
    doc.undo()
    assert doc.model is doc.original  # state 0: the opened file itself
