"""Strict JSON for every document (`tflite_viewer.cli.jsonout`): orjson encodes it, and the
document read back is the one the stdlib writes after the strict conversion, value for
value: numpy values at their exact (double) value, bytes as hex, complex as pairs, keys
as strings, non-finite numbers as null, named in the findings where the document has them.
"""
from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tflite_viewer.cli import jsonout


def _strict(data: bytes | str):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(data, parse_constant=refuse)


def test_numpy_values_keep_their_exact_value():
    third = np.float32(1) / np.float32(3)
    doc = {"a": np.array([0.1, third], np.float32), "s": third, "i": np.int64(-7),
           "u": np.uint64(2**64 - 1), "h": np.float16(0.1), "b": np.bool_(True)}
    back = _strict(jsonout.encode(doc))
    # a float32 is written as the double it equals (orjson's own float32 form would be
    # the shortest float32 text, 0.33333334, a different double)
    assert back["a"] == [float(np.float32(0.1)), 0.3333333432674408]
    assert back["s"] == 0.3333333432674408
    assert back["i"] == -7 and back["u"] == 18446744073709551615
    assert back["h"] == 0.0999755859375 and back["b"] is True


def test_the_other_conversions_and_the_fallbacks():
    doc = {"bytes": b"\x00\xff", "view": memoryview(b"ab"), "c": complex(1.5, -2),
           "t": (1, (2, 3)), 4: "int key", "big": 2**70}
    back = _strict(jsonout.encode(doc))
    assert back == {"bytes": {"bytes_hex": "00ff"}, "view": {"bytes_hex": "6162"},
                    "c": [1.5, -2.0], "t": [1, [2, 3]], "4": "int key",
                    "big": 1180591620717411303424}


def test_non_finite_numbers_are_null_and_named_in_the_findings():
    doc = {"none": None, "a": [1.0, float("inf")],
           "q": {"scale": np.array([0.5, np.nan], np.float32)},
           "findings": [{"severity": "error", "where": "x", "message": "m"}]}
    back = _strict(jsonout.encode(doc))
    assert back["none"] is None and back["a"] == [1.0, None]
    assert back["q"]["scale"] == [0.5, None]
    assert back["findings"][0]["where"] == "x"
    assert [(f["where"], f["message"]) for f in back["findings"][1:]] == [
        ("a[1]", "non-finite number inf written as null"),
        ("q.scale[1]", "non-finite number nan written as null")]


def test_nulls_without_non_finite_numbers_add_no_finding():
    back = _strict(jsonout.encode({"x": None, "y": [0.5, None], "findings": []}))
    assert back == {"x": None, "y": [0.5, None], "findings": []}


def test_a_document_without_findings_still_gets_null():
    text = jsonout.dumps([float("-inf"), {"k": np.float64("nan")}], indent=False)
    assert text == "[null,{\"k\":null}]"


_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**64 - 1),
                  st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                  st.floats(width=32).map(np.float32), st.integers(-128, 127).map(np.int8),
                  st.binary(max_size=4))
_docs = st.recursive(_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=5), inner, max_size=5),
    st.lists(st.floats(width=32), max_size=6).map(lambda v: np.array(v, np.float32))),
    max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(_docs, st.booleans())
def test_the_same_document_as_the_stdlib_after_the_strict_walk(doc, with_findings):
    """The reference: the walk over every value, then ``json.dumps(allow_nan=False)``,
    which is what the command line wrote before orjson."""
    if with_findings:
        doc = {"doc": doc, "findings": []}
    replaced: list[tuple[str, str]] = []
    clean = jsonout.strict(doc, "", replaced)
    if with_findings:
        clean["findings"] += [{"severity": "warning", "where": w,
                               "message": f"non-finite number {t} written as null"}
                              for w, t in replaced]
    expected = json.loads(json.dumps(clean, allow_nan=False))
    for indent in (True, False):
        assert _same(_strict(jsonout.encode(doc, indent=indent)), expected)


def _same(a, b) -> bool:
    """Equal, with -0.0 and 0.0 told apart (a sign the text must keep)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b
