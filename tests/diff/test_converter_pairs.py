"""Converter pairs: two small Keras models converted by TensorFlow's TFLite converter as
float, dynamic-range, full-integer and float16 (tests/data/converter, made by
tools/make_converter_pairs.py).  Every float op must be matched with its counterpart in
each twin; the expected pairs are listed by hand from the converter's op lists (in the
comments), not taken from the matcher."""
from __future__ import annotations

from pathlib import Path

import pytest

from tflite_viewer.diff import diff_models
from tflite_viewer.match import match_models
from tflite_viewer.model import load_model

DATA = Path(__file__).resolve().parents[1] / "data" / "converter"

# conv_net float: 0 CONV_2D/RELU, 1 DEPTHWISE_CONV_2D/RELU6, 2 MAX_POOL_2D, 3 CONV_2D,
#                 4 RESHAPE, 5 FULLY_CONNECTED, 6 SOFTMAX
# int8: 0 QUANTIZE, then the seven ops at 1..7, 8 DEQUANTIZE
# fp16: 0..5 DEQUANTIZE (one per float16 weight), then the seven ops at 6..12
# dynamic: the same seven ops, int8 weights
# residual_mlp float: 0 FULLY_CONNECTED/RELU, 1 RESHAPE, 2 ADD, 3 FULLY_CONNECTED, 4 TANH,
#                     5 CONCATENATION, 6 FULLY_CONNECTED
# int8: 0 QUANTIZE, 1 FC, 2 RESHAPE, 3 ADD, 4 FC, 5 TANH, 6 QUANTIZE (rescales the input
#       for the concatenation), 7 CONCATENATION, 8 FC, 9 DEQUANTIZE
# fp16: 0..2 DEQUANTIZE, then the seven ops at 3..9
EXPECTED = {
    ("conv_net", "dynamic"): {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6},
    ("conv_net", "int8"): {0: 1, 1: 2, 2: 3, 3: 4, 4: 5, 5: 6, 6: 7},
    ("conv_net", "fp16"): {0: 6, 1: 7, 2: 8, 3: 9, 4: 10, 5: 11, 6: 12},
    ("residual_mlp", "dynamic"): {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6},
    ("residual_mlp", "int8"): {0: 1, 1: 2, 2: 3, 3: 4, 4: 5, 5: 7, 6: 8},
    ("residual_mlp", "fp16"): {0: 3, 1: 4, 2: 5, 3: 6, 4: 7, 5: 8, 6: 9},
}
INSERTED = {
    ("conv_net", "int8"): {0: "QUANTIZE", 8: "DEQUANTIZE"},
    ("conv_net", "fp16"): {k: "DEQUANTIZE" for k in range(6)},
    ("residual_mlp", "int8"): {0: "QUANTIZE", 6: "QUANTIZE", 9: "DEQUANTIZE"},
    ("residual_mlp", "fp16"): {k: "DEQUANTIZE" for k in range(3)},
}


def _load(name: str, kind: str):
    return load_model(DATA / f"{name}_{kind}.tflite")


@pytest.mark.parametrize("name,kind", sorted(EXPECTED))
def test_every_float_op_is_paired_with_its_counterpart(name, kind):
    a, b = _load(name, "float"), _load(name, kind)
    m = match_models(a, b)
    got = {oa: ob for (_, oa), (_, ob), _ in m.op_pairs()}
    assert got == EXPECTED[(name, kind)]
    inserted = {k: why for (_, k), why in m.inserted_ops()}
    want = INSERTED.get((name, kind), {})
    assert set(inserted) == set(want)
    for k, op in want.items():
        assert inserted[k].startswith(op), inserted[k]
    assert m.removed_ops() == []
    # every matched op pair reads and writes corresponding tensors, but where the float
    # model shares one constant among ops (a zero bias) and the twin gives each its own
    d = diff_models(a, b, match=m)
    wired = [x for x in d.differences if x.category == "operator" and
             x.field.startswith(("inputs", "outputs"))]
    ga = m.parts[0].a
    for x in wired:
        k = x.a.index
        t = ga.inputs[k][int(x.field[len("inputs["):-1])]
        assert x.field.startswith("inputs") and ga.constant[t] and \
            len(ga.consumers[t]) > 1, x.line()
        assert "shares this constant" in x.detail


@pytest.mark.parametrize("name", ["conv_net", "residual_mlp"])
def test_int8_twin_tensors_of_inserted_ops_carry_their_float_partners(name):
    """The QUANTIZE at the input and the DEQUANTIZE at the output carry the values of the
    float model's input and output: they are aliases of them, not added tensors."""
    a, b = _load(name, "float"), _load(name, "int8")
    m = match_models(a, b)
    ga, gb = m.parts[0].a, m.parts[0].b
    q_out = gb.outputs[0][0]              # QUANTIZE's output (int8 input of the network)
    assert m.tensor_in_a((0, q_out), aliases=True) == (0, ga.graph_inputs[0])
    deq = gb.producer[gb.graph_outputs[0]]
    assert gb.opcode[deq] == "DEQUANTIZE"
    int8_out = gb.inputs[deq][0]          # the int8 output before the DEQUANTIZE
    assert m.tensor_in_a((0, int8_out), aliases=True) == (0, ga.graph_outputs[0])


@pytest.mark.parametrize("name", ["conv_net", "residual_mlp"])
def test_weights_pair_with_their_quantized_and_float16_versions(name):
    """Every float weight is matched with the constant its op's counterpart reads at the
    same input (the float16 one through its DEQUANTIZE)."""
    a = _load(name, "float")
    for kind in ("dynamic", "int8", "fp16"):
        b = _load(name, kind)
        m = match_models(a, b)
        ga, gb = m.parts[0].a, m.parts[0].b
        for oa, ob in EXPECTED[(name, kind)].items():
            for pos, x in enumerate(ga.inputs[oa]):
                if x < 0 or ga.kind(x) != "constant":
                    continue
                hit = m.tensor((0, x))
                assert hit is not None and gb.kind(hit[1]) == "constant", (kind, oa, pos)
                # what the counterparts of the ops reading x read at that input
                read = set()
                for k, p in ga.consumers[x]:
                    y = gb.inputs[EXPECTED[(name, kind)][k]][p]
                    if gb.kind(y) == "widened":   # fp16: read through a DEQUANTIZE
                        y = gb.inputs[gb.producer[y]][0]
                    read.add(y)
                # a constant the float model shares among ops (a zero bias) pairs with
                # one of the twin's own copies; any other with the one it reads
                assert hit[1] in read, (kind, oa, pos, ga.names[x])
