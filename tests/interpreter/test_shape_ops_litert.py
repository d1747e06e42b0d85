"""Shape/layout/image single-op models against LiteRT."""
from __future__ import annotations

import numpy as np
import pytest

from .singleop import Input, assert_matches_litert, random_strided_slice, single_op_model

F32, I32 = np.float32, np.int32


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


def test_reshape_squeeze_expand_transpose():
    x = _x(2, 3, 4)
    assert_matches_litert(single_op_model("RESHAPE", [Input(x.shape), np.array([4, -1], I32)], [F32]), [x])
    y = _x(1, 3, 1, 4)
    assert_matches_litert(single_op_model("SQUEEZE", [Input(y.shape)], [F32], "SqueezeOptions",
                                          {"squeeze_dims": [2]}), [y])
    assert_matches_litert(single_op_model("SQUEEZE", [Input(y.shape)], [F32], "SqueezeOptions", {}), [y])
    assert_matches_litert(single_op_model("EXPAND_DIMS", [Input(x.shape), np.array(-1, I32)], [F32]), [x])
    assert_matches_litert(single_op_model("TRANSPOSE", [Input(x.shape), np.array([2, 0, 1], I32)], [F32]), [x])


@pytest.mark.parametrize("shape, perm", [
    ((1, 256, 16, 128), [0, 2, 3, 1]),   # a KV cache for K^T: slabs of the 8 KB-strided axis
    ((1, 256, 16, 128), [0, 2, 1, 3]),   # its heads first: the inner axis kept
    ((70, 1100), [1, 0]),                # a plain matrix, rows 4.4 KB apart, 70 = 8k + 6
    ((33, 9, 130), [2, 0, 1]),           # small strides: numpy's own copy
])
def test_transpose_of_far_apart_axes_matches_litert(shape, perm):
    x = _x(*shape, seed=3)
    assert_matches_litert(single_op_model("TRANSPOSE", [Input(x.shape), np.array(perm, I32)],
                                          [F32]), [x])


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.float32, np.float64])
def test_transpose_slabs_equal_numpy_s_transpose(dtype):
    """`kernels.transpose` copies slabs of the output's last axis when that axis is far
    apart in the input: every permutation of shapes on both sides of the threshold."""
    import itertools

    from tflite_viewer.interpreter.kernels.transpose import transpose
    rng = np.random.default_rng(4)
    slabs = 0
    for shape in ((20, 3, 2000), (2, 150, 7, 33), (513, 260), (41, 5000)):
        x = (rng.standard_normal(shape) * 100).astype(dtype)
        for perm in itertools.permutations(range(len(shape))):
            got = transpose(x, list(perm))
            assert got.flags.c_contiguous and np.array_equal(got, np.transpose(x, perm))
            slabs += perm[-1] != x.ndim - 1 and x.strides[perm[-1]] >= 4096
    assert slabs >= 3  # the slab path was taken


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_pack_unpack(axis):
    a, b = _x(2, 3, 4), _x(2, 3, 4, seed=1)
    assert_matches_litert(single_op_model("CONCATENATION", [Input(a.shape), Input(b.shape)], [F32],
                                          "ConcatenationOptions", {"axis": axis}), [a, b])
    assert_matches_litert(single_op_model("PACK", [Input(a.shape), Input(b.shape)], [F32], "PackOptions",
                                          {"axis": axis, "values_count": 2}), [a, b])
    n = a.shape[axis]
    assert_matches_litert(single_op_model("UNPACK", [Input(a.shape)], [F32] * n, "UnpackOptions",
                                          {"axis": axis, "num": n}), [a])


def test_split_and_split_v():
    x = _x(4, 6)
    assert_matches_litert(single_op_model("SPLIT", [np.array(1, I32), Input(x.shape)], [F32] * 3,
                                          "SplitOptions", {"num_splits": 3}), [x])
    assert_matches_litert(single_op_model("SPLIT_V", [Input(x.shape), np.array([1, -1, 2], I32),
                                                      np.array(1, I32)], [F32] * 3,
                                          "SplitVOptions", {"num_splits": 3}), [x])


@pytest.mark.parametrize("seed", range(20))
def test_strided_slice_random(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(1, 7, 3))
    x = _x(*shape, seed=seed)
    begin, end, strides, opts = random_strided_slice(rng, shape)
    model = single_op_model("STRIDED_SLICE", [Input(shape), np.array(begin, I32), np.array(end, I32),
                                              np.array(strides, I32)], [F32], "StridedSliceOptions", opts)
    assert_matches_litert(model, [x])


def test_slice_gather_gather_nd_scatter_nd():
    x = _x(4, 5, 3)
    assert_matches_litert(single_op_model("SLICE", [Input(x.shape), np.array([1, 0, 1], I32),
                                                    np.array([2, -1, 2], I32)], [F32]), [x])
    idx = np.array([[3, 0], [1, 1]], I32)
    for axis in (0, 1, -1):
        ind = idx if axis != -1 else np.array([2, 0, 1], I32)
        assert_matches_litert(single_op_model("GATHER", [Input(x.shape), ind], [F32], "GatherOptions",
                                              {"axis": axis}), [x])
    nd = np.array([[0, 1], [3, 4]], I32)
    assert_matches_litert(single_op_model("GATHER_ND", [Input(x.shape), nd], [F32]), [x])
    upd = _x(2, 3)
    assert_matches_litert(single_op_model("SCATTER_ND", [nd, Input(upd.shape), np.array([4, 5, 3], I32)],
                                          [F32]), [upd])


def test_pads():
    x = _x(1, 4, 5, 2)
    p = np.array([[0, 0], [1, 2], [2, 1], [0, 0]], I32)
    assert_matches_litert(single_op_model("PAD", [Input(x.shape), p], [F32]), [x])
    assert_matches_litert(single_op_model("PADV2", [Input(x.shape), p, np.array([1.5], F32)], [F32]), [x])
    for mode in ("REFLECT", "SYMMETRIC"):
        assert_matches_litert(single_op_model("MIRROR_PAD", [Input(x.shape), p], [F32], "MirrorPadOptions",
                                              {"mode": mode}), [x])


def test_tile_broadcast_fill_zeros_shape_rank_range():
    x = _x(2, 3)
    assert_matches_litert(single_op_model("TILE", [Input(x.shape), np.array([2, 3], I32)], [F32]), [x])
    assert_matches_litert(single_op_model("BROADCAST_TO", [Input((3,)), np.array([2, 4, 3], I32)], [F32],
                                          version=2), [x[0]])
    assert_matches_litert(single_op_model("FILL", [np.array([2, 3], I32), Input((), F32)], [F32]),
                          [np.array(2.5, F32)])
    assert_matches_litert(single_op_model("ZEROS_LIKE", [Input(x.shape)], [F32]), [x])
    assert_matches_litert(single_op_model("SHAPE", [Input(x.shape)], [I32], "ShapeOptions",
                                          {"out_type": "INT32"}), [x])
    assert_matches_litert(single_op_model("RANK", [Input(x.shape)], [I32]), [x])
    assert_matches_litert(single_op_model("RANGE", [Input((), I32), Input((), I32), Input((), I32)], [I32]),
                          [np.array(2, I32), np.array(17, I32), np.array(3, I32)])
    assert_matches_litert(single_op_model("RANGE", [Input((), F32), Input((), F32), Input((), F32)], [F32]),
                          [np.array(1, F32), np.array(-2, F32), np.array(-0.5, F32)])


def test_cast_select_where_reverse():
    x = _x(3, 4) * 3
    assert_matches_litert(single_op_model("CAST", [Input(x.shape)], [I32]), [x])
    cond = x > 0
    y = _x(3, 4, seed=2)
    assert_matches_litert(single_op_model("SELECT", [Input(x.shape, np.bool_), Input(x.shape), Input(x.shape)],
                                          [F32]), [cond, x, y])
    assert_matches_litert(single_op_model("SELECT_V2", [Input((3, 1), np.bool_), Input(x.shape), Input((4,))],
                                          [F32]), [cond[:, :1], x, y[0]])
    assert_matches_litert(single_op_model("WHERE", [Input(x.shape, np.bool_)], [np.int64]), [cond])
    assert_matches_litert(single_op_model("REVERSE_V2", [Input(x.shape), np.array([1], I32)], [F32]), [x])
    a, b = x > 0, y > 0
    for op in ("LOGICAL_AND", "LOGICAL_OR"):
        assert_matches_litert(single_op_model(op, [Input(a.shape, np.bool_), Input(b.shape, np.bool_)],
                                              [np.bool_]), [a, b])
    assert_matches_litert(single_op_model("LOGICAL_NOT", [Input(a.shape, np.bool_)], [np.bool_]), [a])


def test_space_batch_depth():
    x = _x(2, 4, 6, 3)
    assert_matches_litert(single_op_model("SPACE_TO_BATCH_ND", [Input(x.shape), np.array([2, 3], I32),
                                                                np.array([[1, 1], [0, 3]], I32)], [F32]), [x])
    y = _x(12, 2, 3, 2)
    assert_matches_litert(single_op_model("BATCH_TO_SPACE_ND", [Input(y.shape), np.array([2, 3], I32),
                                                                np.array([[1, 0], [2, 1]], I32)], [F32]), [y])
    assert_matches_litert(single_op_model("SPACE_TO_DEPTH", [Input(x.shape)], [F32], "SpaceToDepthOptions",
                                          {"block_size": 2}), [x[:, :, :4]])
    z = _x(1, 2, 3, 8)
    assert_matches_litert(single_op_model("DEPTH_TO_SPACE", [Input(z.shape)], [F32], "DepthToSpaceOptions",
                                          {"block_size": 2}), [z])


@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("size", [(7, 5), (3, 2), (8, 12)])
def test_resize(op, align, half, size):
    x = _x(1, 4, 6, 2)
    opts = "ResizeBilinearOptions" if op == "RESIZE_BILINEAR" else "ResizeNearestNeighborOptions"
    model = single_op_model(op, [Input(x.shape), np.array(size, I32)], [F32], opts,
                            {"align_corners": align, "half_pixel_centers": half}, version=3)
    assert_matches_litert(model, [x])


def test_embedding_lookup_dynamic_update_slice():
    table = _x(10, 4)
    assert_matches_litert(single_op_model("EMBEDDING_LOOKUP", [Input((3,), I32), table], [F32]),
                          [np.array([3, 0, 9], I32)])
    x, upd = _x(4, 5), _x(2, 3, seed=3)
    assert_matches_litert(single_op_model("DYNAMIC_UPDATE_SLICE", [Input(x.shape), Input(upd.shape),
                                                                   np.array([3, -1], I32)], [F32]), [x, upd])
