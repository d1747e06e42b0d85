"""STABLEHLO_GATHER and STABLEHLO_SCATTER against LiteRT: tf.gather-like, gather_nd-like,
windowed and transposed dimension numbers, clamped or skipped out-of-range indices."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter.kernels.stablehlo_gather import stablehlo_gather

from .singleop import Input, Op, assert_matches_litert, graph_model, single_op_model

GATHERS = [  # operand shape, indices shape, options
    ((5, 3), (4,), dict(offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0],
                        index_vector_dim=1, slice_sizes=[1, 3])),
    ((4, 5, 6), (2, 3, 2), dict(offset_dims=[2], collapsed_slice_dims=[0, 1],
                                start_index_map=[0, 1], index_vector_dim=2,
                                slice_sizes=[1, 1, 6])),
    ((6, 7), (3, 2), dict(offset_dims=[1, 2], collapsed_slice_dims=[], start_index_map=[0, 1],
                          index_vector_dim=1, slice_sizes=[2, 3])),
    ((5, 4), (3,), dict(offset_dims=[0], collapsed_slice_dims=[1], start_index_map=[1],
                        index_vector_dim=1, slice_sizes=[5, 1])),
    ((3, 4, 5), (2, 2), dict(offset_dims=[0, 2], collapsed_slice_dims=[1],
                             start_index_map=[2, 1], index_vector_dim=0,
                             slice_sizes=[3, 1, 2])),
]
TYPES = [np.float32, np.int8, np.int32, np.int64, np.float16, np.uint8]


@pytest.mark.parametrize("case", range(len(GATHERS)))
@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_stablehlo_gather(case, dtype, index_type):
    shape, ishape, opts = GATHERS[case]
    rng = np.random.default_rng(case)
    operand = (rng.standard_normal(shape) * 10).astype(dtype)
    idx = rng.integers(-2, max(shape) + 2, ishape).astype(index_type)
    out_shape = stablehlo_gather(operand, idx, **{k: v for k, v in opts.items()}).shape
    # LiteRT's Prepare checks the model's declared output shape instead of computing it
    model = single_op_model("STABLEHLO_GATHER", [Input(shape, dtype), Input(ishape, index_type)],
                            [dtype], "StablehloGatherOptions", opts, output_shapes=[out_shape])
    assert_matches_litert(model, [operand, idx], reference=False)


SCATTERS = [  # operand shape, indices, updates shape, options
    ((5, 3), np.array([[1], [3], [1], [7]]), (4, 3),
     dict(update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0],
          index_vector_dim=1)),
    ((4, 5, 6), np.array([[[0, 1], [3, 4], [0, 1]], [[2, 2], [-1, 0], [3, 0]]]), (2, 3, 6),
     dict(update_window_dims=[2], inserted_window_dims=[0, 1],
          scatter_dims_to_operand_dims=[0, 1], index_vector_dim=2)),
    ((6, 7), np.array([[0, 0], [4, 5], [2, 3]]), (3, 2, 3),
     dict(update_window_dims=[1, 2], inserted_window_dims=[],
          scatter_dims_to_operand_dims=[0, 1], index_vector_dim=1)),
]
BODIES = [None, "STABLEHLO_ADD", "STABLEHLO_MULTIPLY", "STABLEHLO_MAXIMUM", "STABLEHLO_MINIMUM"]


@pytest.mark.parametrize("case", range(len(SCATTERS)))
@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8])
def test_stablehlo_scatter(case, body, dtype):
    shape, idx, ushape, opts = SCATTERS[case]
    rng = np.random.default_rng(10 + case)
    operand = (rng.standard_normal(shape) * 5).astype(dtype)
    updates = (rng.standard_normal(ushape) * 5).astype(dtype)
    scalar = [((), dtype), ((), dtype), ((), dtype)]
    sub = (scalar, [Op(body, [0, 1], [2])], [0, 1], [2]) if body else \
        (scalar[:2], [], [0, 1], [1])
    model = graph_model([(shape, dtype), (idx.astype(np.int32),), (ushape, dtype), (shape, dtype)],
                        [Op("STABLEHLO_SCATTER", [0, 1, 2], [3], "StablehloScatterOptions",
                            dict(opts, update_computation_subgraph_index=1))],
                        [0, 2], [3], subgraphs=[sub])
    assert_matches_litert(model, [operand, updates], reference=False)
