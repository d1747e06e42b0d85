"""SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND move whole pixels through a cached gather index
(kernels/image.py `_gather_pixels`); these check it against the direct rearrangements."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tflite_viewer.interpreter.kernels.image import (_gather_pixels, batch_to_space_nd,
                                                     space_to_batch_nd)

DTYPES = [np.int8, np.uint8, np.int16, np.float32, np.float16, np.int64, np.bool_]


def _random_case(rng):
    m = int(rng.integers(1, 3))
    block = [int(rng.integers(1, 4)) for _ in range(m)]
    rest = tuple(int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 3))))
    pads = np.array([[int(rng.integers(0, 3)), 0] for _ in range(m)], np.int32)
    spatial = []
    for i in range(m):
        size = int(rng.integers(1, 7))
        pads[i, 1] = (-(size + pads[i, 0])) % block[i] + block[i] * int(rng.integers(0, 2))
        spatial.append(size)
    dtype = DTYPES[int(rng.integers(0, len(DTYPES)))]
    shape = (int(rng.integers(1, 3)),) + tuple(spatial) + rest
    x = (rng.integers(-100, 100, shape) if dtype != np.bool_ else
         rng.integers(0, 2, shape)).astype(dtype)
    return x, block, pads


@pytest.mark.parametrize("seed", range(3))
def test_gathered_pixels_match_the_rearrangements(seed):
    rng = np.random.default_rng(seed)
    node = SimpleNamespace(user_data=None)  # the cache the kernels keep on their node
    for _ in range(150):
        x, block, pads = _random_case(rng)
        m = len(block)
        fill = 1 if x.dtype == np.bool_ else int(rng.integers(-5, 5)) % 2 ** 7
        if rng.random() < 0.3:
            x = x[..., ::-1] if x.ndim > 1 + m else x  # a non-contiguous view
        key = (np.array(block), pads)
        want = space_to_batch_nd(x, block, pads, fill)
        got = _gather_pixels(node, x, 1 + m,
                             lambda numbers, n: space_to_batch_nd(numbers, block, pads, n),
                             fill, key)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        crops = np.array([[int(rng.integers(0, 2)), int(rng.integers(0, 2))] for _ in block])
        crops = np.minimum(crops, (np.array(want.shape[1:1 + m]) * block - 1)[:, None] // 2)
        back = batch_to_space_nd(want, block, crops)
        got = _gather_pixels(node, want, 1 + m,
                             lambda numbers, n: batch_to_space_nd(numbers, block, crops), 0,
                             (np.array(block), crops))
        assert got.dtype == back.dtype and got.shape == back.shape
        np.testing.assert_array_equal(got, back)


def test_computed_paddings_keep_their_gather():
    """dilated_conv computes SPACE_TO_BATCH_ND's paddings and BATCH_TO_SPACE_ND's crops
    (new arrays every run): the nodes key their gather on the values, so it is built once
    and reused; the results stay the direct rearrangements'."""
    from tflite_viewer.interpreter import Interpreter

    from .conftest import model_path

    interp = Interpreter(model_path("dilated_conv"))
    sg = interp.subgraphs[0]
    nodes = [n for n in sg.nodes if n.name in ("SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND")]
    assert len(nodes) == 2
    rng = np.random.default_rng(5)
    x = rng.standard_normal(sg.tensors[sg.inputs[0]].shape).astype(np.float32)
    interp.invoke([x])
    built = [n.user_data["pixels"][1] for n in nodes]
    for _ in range(2):
        interp.invoke([x])
        assert all(a is b for a, b in zip((n.user_data["pixels"][1] for n in nodes), built))
    s2b, b2s = nodes
    block, pads = (sg.tensors[i].data for i in s2b.inputs[1:3])
    want = space_to_batch_nd(sg.tensors[s2b.inputs[0]].data, block.tolist(), pads)
    np.testing.assert_array_equal(sg.tensors[s2b.outputs[0]].data, want)
    block, crops = (sg.tensors[i].data for i in b2s.inputs[1:3])
    want = batch_to_space_nd(sg.tensors[b2s.inputs[0]].data, block.tolist(), crops)
    np.testing.assert_array_equal(sg.tensors[b2s.outputs[0]].data, want)
