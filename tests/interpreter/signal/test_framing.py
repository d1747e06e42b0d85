"""SignalFramer, SignalStacker, SignalDelay and SignalOverlapAdd against TFLite Micro: the
same stream of invocations through both, outputs compared bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from .conftest import full_range
from .models import TYPE_CODE, assert_same_stream, one_op, run_tflm, run_viewer

I16, F32, B = np.int16, np.float32, np.bool_


def _compare_valid(model, frames) -> int:
    """Frame by frame: the same output_valid, and where valid the same output (TFLM leaves
    the output untouched otherwise: arena contents at first).  Returns the valid count."""
    valid = 0
    for f, (ours, theirs) in enumerate(zip(run_viewer(model, frames), run_tflm(model, frames))):
        assert bool(ours[1]) == bool(theirs[1]), f"frame {f}"
        if theirs[1]:
            np.testing.assert_array_equal(ours[0], theirs[0], err_msg=f"frame {f}")
            valid += 1
    return valid


@pytest.mark.parametrize("size,step,prefill", [(8, 4, False), (8, 4, True), (10, 4, False),
                                               (10, 4, True), (3, 5, False), (5, 5, True)])
def test_framer_stream_matches_tflm(size, step, prefill):
    rng = np.random.default_rng(30 + size + step)
    model = one_op("SignalFramer", [((2, 20), I16)], [((2, 20 // step, size), I16), ((), B)],
                   {"frame_size": size, "frame_step": step, "prefill": prefill})
    assert _compare_valid(model, [[full_range(rng, I16, (2, 20))] for _ in range(4)]) >= 3


def test_framer_by_hand():
    """Frames of 4 every 2 samples, prefilled with 2 zeros."""
    model = one_op("SignalFramer", [((4,), I16)], [((2, 4), I16), ((), B)],
                   {"frame_size": 4, "frame_step": 2, "prefill": True})
    (frames, valid), = run_viewer(model, [[np.array([1, 2, 3, 4], I16)]])
    assert valid and frames.tolist() == [[0, 0, 1, 2], [1, 2, 3, 4]]


@pytest.mark.parametrize("left,right,step", [(0, 0, 1), (2, 1, 1), (3, 0, 2), (1, 2, 4)])
def test_stacker_stream_matches_tflm(left, right, step):
    rng = np.random.default_rng(31 + left + right + step)
    c = 5
    model = one_op("SignalStacker", [((c,), I16)], [((c * (left + right + 1),), I16), ((), B)],
                   {"num_channels": c, "stacker_left_context": left,
                    "stacker_right_context": right, "stacker_step": step})
    assert _compare_valid(model, [[full_range(rng, I16, c)] for _ in range(9)]) >= 2


def test_stacker_keeps_its_output_while_not_valid():
    model = one_op("SignalStacker", [((2,), I16)], [((4,), I16), ((), B)],
                   {"num_channels": 2, "stacker_left_context": 0, "stacker_right_context": 1,
                    "stacker_step": 2})
    a, b, c = (np.array(v, I16) for v in ([1, 2], [3, 4], [5, 6]))
    outs = run_viewer(model, [[a], [b], [c]])
    assert [bool(o[1]) for o in outs] == [False, True, False]
    assert outs[1][0].tolist() == [1, 2, 3, 4] and outs[2][0].tolist() == [1, 2, 3, 4]
    assert _compare_valid(model, [[a], [b], [c]]) == 1


@pytest.mark.parametrize("delay", [0, 3, 16, 40])
def test_delay_stream_matches_tflm(delay):
    rng = np.random.default_rng(32 + delay)
    model = one_op("SignalDelay", [((3, 16), I16)], [((3, 16), I16)], {"delay_length": delay})
    frames = [[full_range(rng, I16, (3, 16))] for _ in range(5)]
    assert_same_stream(model, frames)
    stream = np.concatenate([np.zeros((3, delay), I16)] + [f[0] for f in frames], axis=1)
    ours = np.concatenate([o[0] for o in run_viewer(model, frames)], axis=1)
    np.testing.assert_array_equal(ours, stream[:, :80])  # by hand: the stream, later


@pytest.mark.parametrize("dtype", [I16, F32], ids=["int16", "float32"])
@pytest.mark.parametrize("size,step", [(8, 4), (8, 8), (10, 3)])
def test_overlap_add_stream_matches_tflm(dtype, size, step):
    rng = np.random.default_rng(33 + size + step)
    model = one_op("SignalOverlapAdd", [((2, 3, size), dtype)], [((2, 3 * step), dtype)],
                   {"T": TYPE_CODE[np.dtype(dtype)], "frame_step": step})
    assert_same_stream(model, [[full_range(rng, dtype, (2, 3, size))] for _ in range(4)])
