"""REDUCE_WINDOW and STABLEHLO_REDUCE_WINDOW against LiteRT on random models."""
from __future__ import annotations

import numpy as np
import pytest

from .singleop import Input, Op, assert_matches_litert, graph_model, single_op_model

I64 = np.int64
TYPES_FUNCS = [(t, f) for t in (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                                np.uint8)
               for f in ("ADD", "MUL", "MINIMUM", "MAXIMUM")] + \
    [(np.bool_, f) for f in ("ALL", "ANY")]


def _values(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.7
    return rng.integers(-3 if dtype.kind == "i" else 0, 4, shape).astype(dtype)


def _init(dtype, func):
    return np.array({"ADD": 0, "MUL": 1, "MINIMUM": 100, "MAXIMUM": -100, "ALL": True,
                     "ANY": False}[func], dtype if np.dtype(dtype).kind != "u" or func != "MAXIMUM"
                    else np.uint8)


@pytest.mark.parametrize("dtype,func", TYPES_FUNCS)
@pytest.mark.parametrize("seed", range(3))
def test_reduce_window(dtype, func, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(2, 7, 3))
    window = [int(rng.integers(1, min(3, d) + 1)) for d in shape]
    strides = [int(rng.integers(1, 3)) for _ in shape]
    dil = [int(rng.integers(1, 3)) for _ in shape]
    x = _values(rng, dtype, shape)
    init = _init(dtype, func) if not (np.dtype(dtype).kind == "u" and func == "MAXIMUM") \
        else np.array(0, np.uint8)
    model = single_op_model("REDUCE_WINDOW", [Input(shape, dtype), init.astype(dtype),
                                              np.array(window, I64), np.array(strides, I64),
                                              np.array(dil, I64)], [dtype],
                            "ReduceWindowOptions", {"reduce_function": func})
    assert_matches_litert(model, [x], reference=False)


BODY = {"ADD": "STABLEHLO_ADD", "MUL": "MUL", "MINIMUM": "STABLEHLO_MINIMUM",
        "MAXIMUM": "MAXIMUM", "ALL": "LOGICAL_AND", "ANY": "STABLEHLO_OR"}


@pytest.mark.parametrize("dtype,func", [(np.float32, "ADD"), (np.float32, "MAXIMUM"),
                                        (np.int32, "MUL"), (np.int8, "MINIMUM"),
                                        (np.float64, "ADD"), (np.bool_, "ALL")])
@pytest.mark.parametrize("seed", range(5))
def test_stablehlo_reduce_window(dtype, func, seed):
    rng = np.random.default_rng(10 + seed)
    shape = tuple(int(d) for d in rng.integers(2, 6, 2 + seed % 2))
    r = len(shape)
    opts = {"window_dimensions": [int(rng.integers(1, 4)) for _ in range(r)],
            "window_strides": [int(rng.integers(1, 3)) for _ in range(r)],
            "base_dilations": [int(rng.integers(1, 3)) for _ in range(r)],
            "window_dilations": [int(rng.integers(1, 3)) for _ in range(r)],
            "padding": [int(v) for v in rng.integers(-1, 3, 2 * r)], "body_subgraph_index": 1}
    if func == "ALL":
        body = ([((), dtype), ((), dtype), ((), dtype)], [Op("LOGICAL_AND", [0, 1], [2])],
                [0, 1], [2])
    else:
        op = BODY[func]
        opt_type = {"MUL": "MulOptions"}.get(op)
        body = ([((), dtype), ((), dtype), ((), dtype)],
                [Op(op, [0, 1], [2], opt_type, {} if opt_type else None)], [0, 1], [2])
    init = _init(dtype, func).astype(dtype)
    model = graph_model([(shape, dtype), (init,), ((), dtype)],
                        [Op("STABLEHLO_REDUCE_WINDOW", [0, 1], [2],
                            "StablehloReduceWindowOptions", opts)], [0], [2], subgraphs=[body])
    assert_matches_litert(model, [_values(rng, dtype, shape)], reference=False)
