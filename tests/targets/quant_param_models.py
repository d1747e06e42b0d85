"""FULLY_CONNECTED models whose weights or activations have quantization parameters XNNPACK
claims and then cannot define (a scale of 0 in one block or channel, a zero point it does
not take, block scales that do not match the block size), next to ones it defines, for the
checks of `targets.xnnpack_define` against LiteRT's default delegate.

Written by the project's writer (tests/interpreter/llm_models.py).  Each model's input is
float32 or int8 [2, K]; ``INPUT_SHAPES`` gives it.
"""
from __future__ import annotations

import numpy as np

from tests.interpreter.llm_models import A, Blockwise, OpSpec, PerChannel, PerTensor, W, write_model

FC = "FullyConnectedOptions"
N, K = 8, 16


def _rng() -> np.random.Generator:
    return np.random.default_rng(3)


def _fc(x: str, w: np.ndarray, wq, wtype: str | None = None, xq=None, outq=None) -> bytes:
    n, k = w.shape
    tensors = [A((2, k), x, xq), W(w, wtype, wq), A((2, n), x, outq)]
    return write_model(tensors, [OpSpec("FULLY_CONNECTED", [0, 1, -1], [2], FC, {})], [0], [2])


def _scales(n: int, zero_at: int | None = None) -> list[float]:
    s = list(_rng().random(n) * 0.01 + 1e-3)
    if zero_at is not None:
        s[zero_at] = 0.0
    return s


def _int8(n: int = N, k: int = K, zero_row: int | None = None) -> np.ndarray:
    w = _rng().integers(-100, 100, (n, k)).astype(np.int8)
    if zero_row is not None:
        w[zero_row] = 0
    return w


def _int4(n: int = N, k: int = K, zero_row: int | None = None) -> np.ndarray:
    w = _rng().integers(-8, 8, (n, k)).astype(np.int8)
    if zero_row is not None:
        w[zero_row] = 0
    return w


def blockwise(scales: np.ndarray, block: int = 32, n: int = N, k: int = 64,
              zero_blocks: np.ndarray | None = None) -> bytes:
    """INT4 weights [n, k] in blocks of ``block`` with these FLOAT16 ``scales``; the blocks
    ``zero_blocks`` marks hold zeros."""
    q = _int4(n, k)
    if zero_blocks is not None:
        q[np.repeat(zero_blocks, block, axis=1)] = 0
    t = [A((2, k)), W(q, "INT4", Blockwise(2, block)), W(np.asarray(scales, np.float16)),
         A((2, n))]
    return write_model(t, [OpSpec("FULLY_CONNECTED", [0, 1, -1], [3], FC, {})], [0], [3])


def _block_scales(zero: int | None = None, value: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    s = _rng().random((N, 2)) * 0.05 + 0.01
    marked = np.zeros((N, 2), bool)
    if zero is not None:
        marked.flat[zero] = True
        s.flat[zero] = value
    return s, marked


def cases() -> dict[str, bytes]:
    """name -> model: XNNPACK defines the ``*-ok`` ones, and fails on the others."""
    pt8 = (PerTensor(0.1, 0), PerTensor(0.5, 0))
    zero, marked = _block_scales(3)
    return {
        "hybrid-int8-per-channel-ok": _fc("FLOAT32", _int8(), PerChannel(_scales(N))),
        "hybrid-int8-per-channel-zero-scale": _fc("FLOAT32", _int8(zero_row=1),
                                                  PerChannel(_scales(N, 1))),
        "hybrid-int4-per-channel-zero-scale": _fc("FLOAT32", _int4(zero_row=1),
                                                  PerChannel(_scales(N, 1)), "INT4"),
        "hybrid-int8-per-tensor-zero-scale": _fc("FLOAT32", _int8(), PerTensor(0.0)),
        "hybrid-int8-per-channel-zero-point": _fc("FLOAT32", _int8(),
                                                  PerChannel(_scales(N), [0, 3] + [0] * 6)),
        "hybrid-int4-per-channel-zero-point-8-ok": _fc("FLOAT32", _int4(),
                                                       PerChannel(_scales(N), 8), "INT4"),
        "int8-per-channel-zero-scale": _fc("INT8", _int8(zero_row=1), PerChannel(_scales(N, 1)),
                                           xq=pt8[0], outq=pt8[1]),
        "int8-input-zero-scale": _fc("INT8", _int8(), PerChannel(_scales(N)),
                                     xq=PerTensor(0.0, 0), outq=pt8[1]),
        "blockwise-ok": blockwise(_block_scales()[0]),
        "blockwise-zero-scale": blockwise(zero, zero_blocks=marked),
        "blockwise-negative-scale": blockwise(_block_scales(3, -0.01)[0]),
        "blockwise-float16-subnormal-ok": blockwise(_block_scales(3, 1e-7)[0]),
        "blockwise-scales-miscounted": blockwise(_rng().random((N, 1)) * 0.05 + 0.01),
    }


def input_shape(name: str) -> tuple[int, int]:
    return (2, 64) if name.startswith("blockwise") else (2, K)
