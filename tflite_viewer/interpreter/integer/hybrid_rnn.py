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
             r_scale: float, bias: np.ndarray, act, asymmetric: bool,
             aux: tuple[np.ndarray, np.ndarray, float] | None = None) -> np.ndarray:
    """One hybrid step: act(bias + x W^T [+ aux A^T] + h R^T) for x [batch, input], h
    [batch, units]; ``aux`` = (aux input [batch, aux size], A, A's scale), quantized on
    its own, as RnnBatchStep adds it between the input and the recurrent terms."""
    out = np.broadcast_to(bias.astype(np.float32), (x.shape[0], w.shape[0])).astype(np.float32)
    out = _accumulate(out, np.asarray(x, np.float32), w, w_scale, asymmetric)
    if aux is not None:
        out = _accumulate(out, np.asarray(aux[0], np.float32), aux[1], aux[2], asymmetric)
    out = _accumulate(out, np.asarray(h, np.float32), r, r_scale, asymmetric)
    return act(out)


def rnn_sequence(x: np.ndarray, h: np.ndarray, w, w_scale, r, r_scale, bias, act,
                 asymmetric: bool, aux: tuple[np.ndarray, np.ndarray, float] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """A time-major sequence [T, batch, input] through `rnn_step`: (outputs, last state);
    ``aux`` = (aux sequence [T, batch, aux size], its weights, their scale)."""
    outs = np.empty((x.shape[0], x.shape[1], w.shape[0]), np.float32)
    for t in range(x.shape[0]):
        step_aux = None if aux is None else (aux[0][t], aux[1], aux[2])
        h = rnn_step(x[t], h, w, w_scale, r, r_scale, bias, act, asymmetric, step_aux)
        outs[t] = h
    return outs, h
