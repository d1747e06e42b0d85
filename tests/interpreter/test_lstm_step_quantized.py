"""The one-step LSTM op with integer (8x8_16) and hybrid (int8 weights) cells: random
LSTMs of the sequence-op tests turned into LSTM ops of one time step, run over three
invocations against LiteRT's reference kernels."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter

from .integer import test_hybrid_lstm as th
from .integer import test_lstm_integer as ti
from .singleop import Op, batch_model


def _one_step(op: Op, x_dtype, hybrid: bool) -> tuple[Op, tuple[int, int]]:
    """``op`` (UNIDIRECTIONAL_SEQUENCE_LSTM) as an LSTM op over [batch, input]."""
    batch, n_in = op.inputs[18].shape[0], op.inputs[0].shape[-1]
    n_out = op.inputs[18].shape[1]
    x = dataclasses.replace(op.inputs[0], shape=(batch, n_in))
    out = dataclasses.replace(op.outputs[0], shape=(batch, n_out))
    opts = {k: op.options[k] for k in ("fused_activation_function", "cell_clip", "proj_clip")}
    if hybrid:
        opts["asymmetric_quantize_inputs"] = op.options.get("asymmetric_quantize_inputs", False)
    return Op("LSTM", [x] + list(op.inputs[1:]), [out], "LSTMOptions", opts,
              3 if hybrid else 4, intermediates=op.intermediates), (batch, n_in)


@pytest.mark.parametrize("seed", range(4))
def test_integer_lstm_step_matches_litert(seed):
    rng = np.random.default_rng(900 + seed)
    cases = [_one_step(ti._case(rng, **ti._variant(rng))[0], np.int8, False)
             for _ in range(6)]
    assert ti._run_against_litert(cases, invokes=3, seed=seed) == 6 * 3 * 3


@pytest.mark.parametrize("seed", range(2))
def test_hybrid_lstm_step_matches_litert(seed):
    rng = np.random.default_rng(950 + seed)
    ops, xs = [], []
    for _ in range(20):
        cfg = th._config(rng)
        op, shape = _one_step(th._lstm_op(rng, cfg), np.float32, True)
        ops.append(op)
        xs.append(rng.normal(0, 1, shape).astype(np.float32))
    built = batch_model(ops)
    ref = th._LiteRT(built.model, "BUILTIN_REF")
    ours = Interpreter(built.model)
    for run in range(3):
        theirs = ref.run(xs)
        mine = list(ours.invoke(xs).values())
        for k, (a, r) in enumerate(zip(mine, theirs)):
            assert th._close(a, r), f"op {k} invoke {run}: {np.abs(a - r).max()}"
        xs = [x * 0.5 for x in xs]
