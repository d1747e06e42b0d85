"""The float LSTM's stacked-gate step (kernels/recurrent.py) against its per-gate form.

`lstm_sequence` computes each gate with its own products, as LiteRT's reference kernel
does; `lstm_sequence_stacked` does all four gates in one product and the input products
of all steps before the loop. Same arithmetic, other summation order: equal to float32
rounding. The model-level check against LiteRT is test_models_oracle.py (trained_lstm).
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter.kernels.recurrent import (LstmWeights, _plain, lstm_sequence,
                                                          lstm_sequence_stacked, stack_weights)


def _weights(rng, n_in: int, u: int, bias: bool) -> LstmWeights:
    w = [rng.standard_normal((u, n_in)).astype(np.float32) * 0.4 for _ in range(4)]
    r = [rng.standard_normal((u, u)).astype(np.float32) * 0.4 for _ in range(4)]
    b = [rng.standard_normal(u).astype(np.float32) if bias else None for _ in range(4)]
    return LstmWeights(w[0], w[1], w[2], w[3], r[0], r[1], r[2], r[3],
                       b_i=b[0], b_f=b[1], b_c=b[2], b_o=b[3])


@pytest.mark.parametrize("act,clip,reverse,bias", [
    ("TANH", 0.0, False, True), ("TANH", 0.5, False, False), ("TANH", 0.0, True, True),
    (None, 0.0, False, True), ("RELU", 3.0, False, True), ("RELU6", 0.0, True, False)])
def test_stacked_step_equals_the_per_gate_step(act, clip, reverse, bias):
    rng = np.random.default_rng(7)
    steps, batch, n_in, u = 9, 3, 5, 6
    wts = _weights(rng, n_in, u, bias)
    assert _plain(wts)
    x = rng.standard_normal((steps, batch, n_in)).astype(np.float32)
    h0 = rng.standard_normal((batch, u)).astype(np.float32)
    c0 = rng.standard_normal((batch, u)).astype(np.float32)
    ref = lstm_sequence(x, h0, c0, wts, act, clip, 0.0, reverse)
    got = lstm_sequence_stacked(x, h0, c0, stack_weights(wts), act, clip, reverse)
    for a, b in zip(got, ref):
        assert a.dtype == np.float32 and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_peepholes_projection_and_cifg_are_not_plain():
    rng = np.random.default_rng(1)
    wts = _weights(rng, 4, 3, True)
    for change in ({"p_f": np.ones(3, np.float32)}, {"proj_w": np.ones((3, 3), np.float32)},
                   {"w_i": None, "r_i": None}, {"ln_c": np.ones(3, np.float32)}):
        other = LstmWeights(**{**wts.__dict__, **change})
        assert not _plain(other)
