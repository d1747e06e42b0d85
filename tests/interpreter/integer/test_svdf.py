"""Integer SVDF (int8 in/out, int16 time weights and state) over several steps, against
LiteRT, through our interpreter (the state is a variable tensor carried across invokes)."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.integer import svdf as isvdf

from .gen import LITERT_ROUNDING, rand_data
from tests.interpreter.singleop import Op, T, batch_model


def _case(rng):
    batch, n_input = int(rng.integers(1, 3)), int(rng.integers(1, 20))
    rank = int(rng.integers(1, 3))
    units = int(rng.integers(1, 6))
    n_filter, memory = units * rank, int(rng.integers(1, 6))
    iq = (float(np.float32(rng.uniform(0.01, 0.1))), int(rng.integers(-128, 128)))
    fs = float(np.float32(rng.uniform(0.002, 0.02)))
    ts = float(np.float32(rng.uniform(1e-4, 1e-3)))
    ss = float(np.float32(rng.uniform(1e-3, 1e-2)))
    os_ = float(np.float32(rng.uniform(0.01, 0.2)))
    wf = rng.integers(-127, 128, size=(n_filter, n_input)).astype(np.int8)
    wt = rng.integers(-32767, 32768, size=(n_filter, memory)).astype(np.int16)
    bias = rng.integers(-(1 << 12), 1 << 12, size=units).astype(np.int32)
    op = Op("SVDF", [T((batch, n_input), np.int8, *iq), T.const(wf, fs, 0), T.const(wt, ts, 0),
                     T.const(bias, ss * ts, 0),
                     T((batch, n_filter * memory), np.int16, ss, 0, variable=True)],
            [T((batch, units), np.int8, os_, int(rng.integers(-128, 128)))], "SVDFOptions",
            {"rank": rank, "fused_activation_function": "RELU"}, 3)
    return op, (batch, n_input)


@pytest.mark.parametrize("seed", range(6))
def test_integer_svdf_steps_match_litert(seed):
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

    rng = np.random.default_rng(900 + seed)
    op, in_shape = _case(rng)
    built = batch_model([op])
    li = LiteRT(model_content=built.model,
                experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    li.allocate_tensors()
    ours = Interpreter(built.model, rounding=LITERT_ROUNDING)
    state_index = 4
    for step in range(4):
        x = rand_data(rng, in_shape, np.int8)
        li.set_tensor(li.get_input_details()[0]["index"], x)
        li.invoke()
        ref = li.get_tensor(li.get_output_details()[0]["index"])
        out = list(ours.invoke([x]).values())[0]
        np.testing.assert_array_equal(out, ref, err_msg=f"step {step}")
        np.testing.assert_array_equal(ours.tensor(0, state_index), li.get_tensor(state_index),
                                      err_msg=f"state after step {step}")


def test_svdf_core_shifts_state():
    p = isvdf.SvdfParams(1 << 30, 1, 1 << 30, 1, 0, 0, "double")  # both scales 1.0
    wf = np.array([[1], [2]], np.int8)
    wt = np.array([[1, 10], [100, 1000]], np.int16)
    state = np.array([[0, 3, 0, 4]], np.int16)
    out, new = isvdf.svdf(np.array([[5]], np.int8), wf, wt, None, state, 1, p)
    np.testing.assert_array_equal(new, [[3, 5, 4, 10]])
    np.testing.assert_array_equal(out, [[1 * 3 + 10 * 5, 127]])  # 100*4 + 1000*10 saturates
