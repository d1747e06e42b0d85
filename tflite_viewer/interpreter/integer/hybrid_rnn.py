"""Hybrid RNN cells (float input and state, int8 weights), as LiteRT's RnnBatchStep:
the bias, plus the input and the hidden state each quantized per batch (symmetric, or
asymmetric with ``asymmetric_quantize_inputs``), multiplied by the int8 weights and scaled
back by (batch scale * weight scale); an all-zero input or state adds nothing."""
from __future__ import annotations

import numpy as np

from .common import int_matmul
from .hybrid import asymmetric_quantize, symmetric_quantize


def _accumulate(out: np.ndarray, x: np.ndarray, w: np.ndarray, w_scale: float,
                asymmetric: bool) -> np.ndarray:
    """MatrixBatchVectorMultiplyAccumulate of BatchQuantizeFloats(x) by int8 ``w``."""
    if not np.any(x):
        return out
    if asymmetric:
        q, sf, zp = asymmetric_quantize(x)
    else:
        q, sf = symmetric_quantize(x)
        zp = np.zeros(x.shape[0], np.int32)
    sf = (sf * np.float32(w_scale)).astype(np.float32)
    wi = w.astype(np.int32)
    dot = int_matmul(q.astype(np.int32), wi.T)
    dot = dot - wi.sum(axis=1, dtype=np.int64)[None, :] * zp.astype(np.int64)[:, None]
    return (out + dot.astype(np.float32) * sf[:, None]).astype(np.float32)


def rnn_step(x: np.ndarray, h: np.ndarray, w: np.ndarray, w_scale: float, r: np.ndarray,
             r_scale: float, bias: np.ndarray, act, asymmetric: bool) -> np.ndarray:
    """One hybrid step: act(bias + x W^T + h R^T) for x [batch, input], h [batch, units]."""
    out = np.broadcast_to(bias.astype(np.float32), (x.shape[0], w.shape[0])).astype(np.float32)
    out = _accumulate(out, np.asarray(x, np.float32), w, w_scale, asymmetric)
    out = _accumulate(out, np.asarray(h, np.float32), r, r_scale, asymmetric)
    return act(out)


def rnn_sequence(x: np.ndarray, h: np.ndarray, w, w_scale, r, r_scale, bias, act,
                 asymmetric: bool) -> tuple[np.ndarray, np.ndarray]:
    """A time-major sequence [T, batch, input] through `rnn_step`: (outputs, last state)."""
    outs = np.empty((x.shape[0], x.shape[1], w.shape[0]), np.float32)
    for t in range(x.shape[0]):
        h = rnn_step(x[t], h, w, w_scale, r, r_scale, bias, act, asymmetric)
        outs[t] = h
    return outs, h
