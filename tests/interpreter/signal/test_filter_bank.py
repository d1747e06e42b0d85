"""SignalFilterBank, SignalFilterBankSquareRoot, SignalFilterBankSpectralSubtraction,
SignalFilterBankLog and SignalPCAN against TFLite Micro, bit for bit."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tflite_viewer.interpreter.kernels.signal import filter_bank as fb

from .conftest import full_range
from .models import assert_same_stream, one_op

I16, I32, U32, U64 = np.int16, np.int32, np.uint32, np.uint64


def random_bank(rng, channels: int, bins: int):
    """Channel tables over ``bins`` bins: sorted starts, random widths, int16 weights of
    either sign (TFLM sign-extends them into its uint64 sums)."""
    widths = rng.integers(0, 12, channels + 1).astype(I16)
    starts = np.minimum(np.sort(rng.integers(0, bins, channels + 1)), bins - widths).astype(I16)
    weight_starts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(I16)
    n = int(widths.sum())
    return (full_range(rng, I16, n), full_range(rng, I16, n), starts, weight_starts, widths)


@pytest.mark.parametrize("seed", range(4))
def test_filter_bank_matches_tflm(seed):
    rng = np.random.default_rng(20 + seed)
    channels, bins = int(rng.integers(1, 24)), 65
    tables = random_bank(rng, channels, bins)
    model = one_op("SignalFilterBank", [((bins,), U32)] + [(t,) for t in tables],
                   [((channels,), U64)], {"num_channels": channels})
    assert_same_stream(model, [[full_range(rng, U32, bins)] for _ in range(3)])


def test_square_root_matches_tflm_and_rounds_to_nearest():
    rng = np.random.default_rng(21)
    edges = [0, 1, 2, 3, 4, 5, 6, 99, 100, 101, 65535**2 + 65535, 65535**2 + 65536,
             2**32 - 1, 2**32, 2**32 + 1, (2**32 - 1)**2 + 2**32 - 2, (2**32 - 1)**2 + 2**32 - 1,
             2**62, 2**63, 2**64 - 1]
    x = np.concatenate([np.array(edges, U64), rng.integers(0, 2**64 - 1, 20, U64, endpoint=True),
                        rng.integers(0, 2**32, 20, U64)])
    model = one_op("SignalFilterBankSquareRoot", [((x.size,), U64), ((), I32)],
                   [((x.size,), U32)], None)
    assert_same_stream(model, [[x, np.array(s, I32)] for s in (0, 1, 7, 15)])
    # by hand: nearest, but 2**32 - 1 cannot round up past 0xFFFF in the 32-bit path
    assert fb.rounded_sqrt(np.array([8, 12, 2**32 - 1, 2**64 - 1], U64)).tolist() == \
        [3, 3, 65535, 2**32 - 1]


@pytest.mark.parametrize("clamping", [False, True])
def test_spectral_subtraction_stream_matches_tflm(clamping):
    """Eight frames through one interpreter: the noise estimate carried between them."""
    rng = np.random.default_rng(22 + clamping)
    q = lambda: int(rng.integers(0, 1 << 14))  # noqa: E731
    opts = dict(num_channels=12, smoothing=q(), one_minus_smoothing=q(), alternate_smoothing=q(),
                alternate_one_minus_smoothing=q(), smoothing_bits=10, min_signal_remaining=q(),
                clamping=clamping, spectral_subtraction_bits=14)
    model = one_op("SignalFilterBankSpectralSubtraction", [((12,), U32)],
                   [((12,), U32), ((12,), U32)], opts)
    frames = [[rng.integers(0, 2**22 if k % 3 else 2**32 - 1, 12, U32, endpoint=True)]
              for k in range(8)]
    assert assert_same_stream(model, frames) == 8 * 24


@pytest.mark.parametrize("bits,scale", [(0, 1), (3, 64), (0, 1 << 20), (31, 1), (5, 1 << 16)])
def test_log_matches_tflm(bits, scale):
    rng = np.random.default_rng(23)
    x = np.concatenate([full_range(rng, U32, 30),
                        np.array([0, 1, 2, 3, 4, 2**31, 2**32 - 1, 65535, 65536, 65537], U32)])
    model = one_op("SignalFilterBankLog", [((40,), U32)], [((40,), I16)],
                   {"input_correction_bits": bits, "output_scale": scale})
    assert_same_stream(model, [[x], [rng.integers(0, 1000, 40, U32)]])


def test_log_by_hand():
    """ln(x) * output_scale: powers of two are exact in the piecewise log2."""
    for x in (2, 4, 1024, 2**20):
        expect = round(math.log(x) * 64)
        assert abs(int(fb.filter_bank_log(np.array([x], U32), 64, 0)[0]) - expect) <= 1
    assert fb.LOG_LUT[:4].tolist() == [0, 224, 442, 654] and fb.LOG_LUT[128] == 0


@pytest.mark.parametrize("shift", [0, 6, 12, 40])
def test_pcan_matches_tflm(shift):
    rng = np.random.default_rng(24 + shift)
    lut = full_range(rng, I16, 125)
    noise = np.concatenate([full_range(rng, U32, 30),
                            np.array([0, 1, 2, 3, 4, 2**31, 2**32 - 1, 1024, 2047, 2048], U32)])
    model = one_op("SignalPCAN", [((40,), U32), ((40,), U32), (lut,)], [((40,), U32)],
                   {"snr_shift": shift})
    assert_same_stream(model, [[full_range(rng, U32, 40), noise],
                               [rng.integers(0, 100000, 40, U32), rng.integers(0, 5000, 40, U32)]])
