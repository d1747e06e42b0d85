"""Issue 26, part 4: degenerate shapes get messages written for a person, not numpy's.

Every case of `degenerate_cases.cases()` (window ops with inputs smaller than their
window, zero and one dimensions, element-wise ops that do not broadcast, reductions over
empty axes, shape ops with axes out of range or sizes that do not divide) runs through the
interpreter: it either computes, or fails with a documented error whose message names what
is wrong in the model's terms.  Where LiteRT computes a degenerate case (an empty output,
a reduction over an empty axis), ours computes the same.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from tflite_viewer.interpreter import ExecutionError, Interpreter
from tflite_viewer.interpreter.errors import BudgetError
from tflite_viewer.interpreter.inputs import InputError
from tflite_viewer.model import ModelFormatError
from tflite_viewer.model.errors import UnsupportedOpError

from .degenerate_cases import cases
from .singleop import Input, run_litert, single_op_model

DOCUMENTED = (ExecutionError, UnsupportedOpError, ModelFormatError, InputError, BudgetError)
#: what numpy and Python say when a kernel did not check its inputs first
NUMPY_SPEAK = re.compile(
    r"newaxis|cannot reshape array|could not be broadcast|zero-size array|empty sequence|"
    r"is out of bounds for axis|tuple index out of range|list index out of range|"
    r"not subscriptable|has no attribute|unsupported operand|return arrays must be|"
    r"too many values to unpack|not enough values to unpack|division by zero|NoneType|"
    r"Unable to allocate|setting an array element|must be real number|"
    r"(IndexError|TypeError|AttributeError|KeyError|ZeroDivisionError|UnboundLocalError): ")
CASES = list(cases())


_OUTCOMES: dict[str, Exception | list[np.ndarray]] = {}


def _run(model: bytes, inputs) -> list[np.ndarray]:
    interp = Interpreter(model)
    interp.set_inputs(inputs)
    return list(interp.invoke().values())


def _outcome(case) -> Exception | list[np.ndarray]:
    """A case's outputs or its documented error, run once for both tests below (an
    undocumented exception is not kept: it fails whichever test meets it)."""
    cid, model, inputs = case
    if cid not in _OUTCOMES:
        try:
            _OUTCOMES[cid] = _run(model, inputs)
        except DOCUMENTED as exc:
            _OUTCOMES[cid] = exc
    return _OUTCOMES[cid]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_degenerate_shape_computes_or_fails_with_a_message_for_a_person(case):
    outcome = _outcome(case)
    if isinstance(outcome, DOCUMENTED):
        message = str(outcome)
        assert not NUMPY_SPEAK.search(message), message
        return
    assert all(isinstance(o, np.ndarray) for o in outcome)


def test_the_sweep_reaches_every_kind_of_failure():
    """The cases are degenerate enough: a good share is refused, and the window ops'
    refusals are among them (so the test above checks real messages)."""
    assert len({c[0] for c in CASES}) == len(CASES)  # (`_outcome` keeps them by name)
    refused = sum(isinstance(_outcome(case), DOCUMENTED) for case in CASES)
    assert refused >= 80 and len(CASES) >= 280


def _conv(x_shape, w_shape, padding="VALID", stride=1, dilation=1):
    w = np.ones(w_shape, np.float32)
    return single_op_model("CONV_2D", [Input(x_shape), w, np.zeros(w_shape[0], np.float32)],
                           [np.float32], "Conv2DOptions",
                           {"padding": padding, "stride_w": stride, "stride_h": stride,
                            "dilation_w_factor": dilation, "dilation_h_factor": dilation})


@pytest.mark.parametrize("x_shape, w_shape, dilation, message", [
    # the melspectrogram's case: a [1, 1, W, 1] frame narrower than a 512-wide filter
    ((1, 1, 400, 1), (257, 1, 512, 1), 1,
     "CONV_2D: the input's width 400 is smaller than the filter's width 512 with VALID "
     "padding and stride 1: no window fits, and LiteRT's Prepare refuses it"),
    ((1, 4, 9, 2), (3, 3, 3, 2), 3,
     "CONV_2D: the input's height 4 is smaller than the filter's height 7 (3 taps at "
     "dilation 3) with VALID padding and stride 1: no window fits, and LiteRT's Prepare "
     "refuses it"),
    ((1, 0, 5, 1), (2, 1, 1, 1), 1,
     "CONV_2D: the input of shape [1, 0, 5, 1] has a height of 0; LiteRT's Prepare needs "
     "at least one"),
])
def test_a_conv_input_smaller_than_its_filter_says_what_litert_prepare_says(
        x_shape, w_shape, dilation, message):
    model = _conv(x_shape, w_shape, dilation=dilation)
    x = np.ones(x_shape, np.float32)
    with pytest.raises(RuntimeError, match="CONV_2D"):  # LiteRT refuses it at prepare
        run_litert(model, [x])
    with pytest.raises(ExecutionError) as info:
        _run(model, [x])
    assert str(info.value) == f"subgraph 0 (main), op 0 (CONV_2D): prepare failed: {message}"


@pytest.mark.parametrize("x_shape, w_shape, stride", [
    ((1, 2, 2, 3), (4, 3, 3, 3), 1),   # one stride short of the window: an empty output
    ((1, 1, 1, 3), (4, 3, 3, 3), 2),   # (1 + 2 - 3) / 2 truncates to 0 in C
    ((0, 5, 5, 3), (4, 3, 3, 3), 1),   # a batch of none
])
def test_empty_conv_outputs_match_litert(x_shape, w_shape, stride):
    model = _conv(x_shape, w_shape, stride=stride)
    x = np.ones(x_shape, np.float32)
    ours, = _run(model, [x])
    ref, = run_litert(model, [x])
    assert ours.shape == ref.shape and ours.size == 0


@pytest.mark.parametrize("op, x_shape, axis", [
    ("REDUCE_MAX", (3, 0), 1), ("REDUCE_MIN", (3, 0), 1), ("REDUCE_MAX", (0, 4), 0),
    ("REDUCE_PROD", (3, 0), 1), ("SUM", (3, 0), 1),
])
def test_a_reduction_over_an_empty_axis_gives_litert_values(op, x_shape, axis):
    model = single_op_model(op, [Input(x_shape), np.array([axis], np.int32)], [np.float32],
                            "ReducerOptions", {"keep_dims": False})
    x = np.ones(x_shape, np.float32)
    ours, = _run(model, [x])
    ref, = run_litert(model, [x])
    np.testing.assert_array_equal(ours, ref)  # the type's lowest/highest value, 1, 0


@pytest.mark.parametrize("x_shape", [(1, 0, 5, 3), (1, 5, 0, 3), (1, 1, 1, 3)])
def test_pool_output_shapes_follow_litert_when_the_window_does_not_fit(x_shape):
    """pooling.cc takes ComputePaddingHeightWidth unchecked: the width is computed first,
    and a failed check leaves the sizes not computed at 0."""
    model = single_op_model("MAX_POOL_2D", [Input(x_shape)], [np.float32], "Pool2DOptions",
                            {"padding": "VALID", "stride_w": 1, "stride_h": 1,
                             "filter_width": 3, "filter_height": 3})
    x = np.ones(x_shape, np.float32)
    ours, = _run(model, [x])
    ref, = run_litert(model, [x])
    assert ours.shape == ref.shape
