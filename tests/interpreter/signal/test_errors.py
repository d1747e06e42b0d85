"""Custom ops resolve by name; what cannot run is refused with the documented errors."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.errors import ExecutionError, UnsupportedOpError

from .models import one_op

I16, I32, F32, U32 = np.int16, np.int32, np.float32, np.uint32


def _refusal(model) -> str:
    with pytest.raises(UnsupportedOpError) as info:
        Interpreter(model)
    return str(info.value)


def test_unknown_custom_op_is_refused_by_name():
    msg = _refusal(one_op("NotARealOp", [((4,), F32)], [((4,), F32)], None))
    assert "custom op 'NotARealOp' (v1): no kernel" in msg and "subgraph 0 op 0" in msg


def test_signal_op_version_above_its_kernel_is_refused():
    msg = _refusal(one_op("SignalWindow", [((8,), I16), (np.ones(8, I16),)], [((8,), I16)],
                          {"shift": 1}, version=2))
    assert "custom op 'SignalWindow' version 2 is not supported (supported versions: 1..1)" in msg


@pytest.mark.parametrize("code,inputs,outputs,options,expect", [
    ("SignalWindow", [((8,), F32), (np.ones(8, I16),)], [((8,), I16)], {"shift": 1},
     "SignalWindow: input 0 is FLOAT32, TFLM's kernel takes INT16"),
    ("SignalWindow", [((8,), I16), (np.ones(8, I16),)], [((8,), I16)], {},
     "SignalWindow: option 'shift' missing"),
    ("SignalWindow", [((8,), I16), (np.ones(8, I16),)], [((8,), I16)], {"shift": 40},
     "option 'shift' = 40, must be in 0..31"),
    ("SignalRfft", [((28,), I16)], [((30,), I16)], {"T": 7, "fft_length": 28},
     "prime factor 7"),
    ("SignalRfft", [((16,), I16)], [((18,), I32)], {"T": 7, "fft_length": 16},
     "output 0 is INT32, TFLM's kernel takes INT16"),
    ("SignalRfft", [((16,), I16)], [((18,), I16)], {"T": 9, "fft_length": 16},
     "option 'T' = 9 is not one of the types"),
    ("SignalEnergy", [((16,), I16)], [((8,), U32)], b"\x01\x02",
     "custom options must be a FlexBuffer map"),
    ("SignalStacker", [((2,), I16)], [((4,), I16), ((), np.bool_)],
     {"num_channels": 2, "stacker_left_context": 0, "stacker_right_context": 1,
      "stacker_step": 3}, "stacker_step 3 exceeds the 2 stacked frames"),
])
def test_what_tflm_would_refuse_is_refused_at_load(code, inputs, outputs, options, expect):
    assert expect in _refusal(one_op(code, inputs, outputs, options))


def test_shape_problems_fail_at_allocation_with_the_op_named():
    model = one_op("SignalEnergy", [((16,), I16)], [((8,), U32)],
                   {"start_index": 2, "end_index": 12})
    with pytest.raises(ExecutionError, match=r"op 0 \(SignalEnergy\): prepare failed.*"
                       r"bins \[2, 12\) are not within the 8 bins"):
        Interpreter(model)


def test_a_user_kernel_registered_by_name_replaces_the_built_in_one():
    model = one_op("SignalDelay", [((4,), I16)], [((4,), I16)], {"delay_length": 2})
    interp = Interpreter(model, allocate=False)
    interp.op_resolver.add_custom("SignalDelay", lambda ctx, node: ctx.set_output(
        ctx.output(node, 0), ctx.value(node, 0)[::-1]))
    interp.allocate_tensors()
    out = interp.invoke([np.array([1, 2, 3, 4], I16)])
    assert list(out.values())[0].tolist() == [4, 3, 2, 1]
    built_in = Interpreter(model).invoke([np.array([1, 2, 3, 4], I16)])
    assert list(built_in.values())[0].tolist() == [0, 0, 1, 2]
