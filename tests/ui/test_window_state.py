"""The window's Qt-free state (issue 15): selection that survives edits, the navigation
trail, Find matching.  No QApplication here: these modules import no Qt."""
from __future__ import annotations

import subprocess
import sys

from tflite_viewer.edit import ModelDocument, RemoveOperator
from tflite_viewer.model import load_model
from tflite_viewer.model.op_metadata import first_call
from tflite_viewer.ui.state import navigation as nav
from tflite_viewer.ui.state.selection import Selection, parse_spec

from .conftest import model_path

DILATED = "small_cnn_dilated_float.tflite"
SOFTMAX = 12  # the last operator of small_cnn_dilated_float


def test_state_modules_import_without_qt():
    code = ("import sys; import tflite_viewer.ui.state.selection, tflite_viewer.ui.state.navigation, "
            "tflite_viewer.ui.state.search; print(any(m.startswith('PySide6') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_selection_follows_its_operator_through_remove_and_undo():
    doc = ModelDocument(load_model(model_path(DILATED)))
    sg = doc.model.subgraphs[0]
    sel = Selection.op(sg, SOFTMAX)
    assert sel == ("op", SOFTMAX) and tuple(sel) == ("op", SOFTMAX)  # the old pair still works
    assert sel.outputs == tuple(sg.operators[SOFTMAX].outputs)
    doc.apply(RemoveOperator(0, SOFTMAX))
    assert sel.resolve(doc.model.subgraphs[0]) is None  # gone with its operator
    doc.undo()
    assert sel.resolve(doc.model.subgraphs[0]) == ("op", SOFTMAX)
    assert Selection.tensor(3).resolve(doc.model.subgraphs[0]) == ("tensor", 3)


def test_a_stale_operator_index_is_found_again_by_the_tensors_it_produces():
    sg = load_model(model_path(DILATED)).subgraphs[0]
    k = 7
    stale = Selection("op", 5, tuple(sg.operators[k].outputs))  # moved from 5 to 7 (undo put two back)
    assert stale.resolve(sg) == ("op", k)


def test_parse_spec_checks_the_subgraph():
    model = load_model(model_path(DILATED))
    assert parse_spec(model, 0, "op:2") == Selection.op(model.subgraphs[0], 2)
    for bad in ("op:x", "node:1", f"op:{len(model.subgraphs[0].operators)}"):
        try:
            parse_spec(model, 0, bad)
        except ValueError as exc:
            assert "--select" in str(exc)
        else:
            raise AssertionError(bad)


def test_trail_follows_if_branches_without_nesting_them():
    model = load_model(model_path("control_flow.tflite"))
    if_k, if_op = next((k, op) for k, op in enumerate(model.subgraphs[0].operators) if op.name == "IF")
    calls = if_op.called_subgraphs
    root = nav.trail_to(model, 0)
    assert [c.subgraph for c in root] == [0]
    then = nav.enter_call(root, model, nav.Call(0, if_k, first_call(if_op.name, calls)))
    assert then[-1].subgraph == calls["then"] and then[-1].call.role == "then"
    assert nav.sibling_calls(then, model) == [nav.Call(0, if_k, "else")]
    other = nav.enter_call(then, model, nav.sibling_calls(then, model)[0])
    assert [c.subgraph for c in other] == [0, calls["else"]]
    assert other[-1].label.startswith(f"IF #{if_k} else \u2192 ")
    # the trail computed for a subgraph shown from the selector names its caller
    assert [c.subgraph for c in nav.trail_to(model, calls["else"])] == [0, calls["else"]]


def test_find_matches_whole_op_names_by_default_with_contains_and_regex_options():
    from tflite_viewer.ui.state.search import CONTAINS, REGEX, find

    model = load_model(model_path("mobilenet_v2_float.tflite"))
    sg = model.subgraphs[0]
    names = [op.name for op in sg.operators]
    conv = [k for k, n in enumerate(names) if n == "CONV_2D"]
    depthwise = [k for k, n in enumerate(names) if n == "DEPTHWISE_CONV_2D"]
    assert conv and depthwise

    def ops(matches):
        return [m.index for m in matches if m.kind == "op"]

    assert ops(find(model, 0, "CONV_2D")) == conv  # not the DEPTHWISE_CONV_2Ds
    assert ops(find(model, 0, "conv_2d")) == conv  # case-insensitive
    assert ops(find(model, 0, "CONV_2D", mode=CONTAINS)) == sorted(conv + depthwise)
    assert ops(find(model, 0, "^(DEPTHWISE_)?CONV_2D$", mode=REGEX)) == sorted(conv + depthwise)
    try:
        find(model, 0, "CONV_2D(", mode=REGEX)
    except ValueError as exc:
        assert "regular expression" in str(exc)
    else:
        raise AssertionError("a bad regex is a ValueError")
    # tensor names: a whole word of the name by default, any part with CONTAINS
    tensor_names = [t.name for t in sg.tensors]
    word = {m.index for m in find(model, 0, "relu6") if m.kind == "tensor"}
    part = {m.index for m in find(model, 0, "relu", mode=CONTAINS) if m.kind == "tensor"}
    import re
    assert word == {i for i, n in enumerate(tensor_names) if re.search(r"(?<![A-Za-z0-9_])relu6(?![A-Za-z0-9_])", n, re.I)}
    assert part == {i for i, n in enumerate(tensor_names) if "relu" in n.lower()}
