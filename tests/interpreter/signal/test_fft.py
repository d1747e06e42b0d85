"""SignalRfft, SignalIrfft, SignalFftAutoScale, SignalWindow and SignalEnergy against
TFLite Micro, bit for bit, on random inputs."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter.kernels.signal import fft, kissfft
from tflite_viewer.interpreter.kernels.signal.spectrum import energy

from .conftest import full_range
from .models import TYPE_CODE, assert_same_stream, one_op, run_tflm, run_viewer

I16, I32, U32, F32 = np.int16, np.int32, np.uint32, np.float32
TYPES = [I16, I32, F32]
#: lengths whose halves factor as 4s, 2, 3 and 5 (every KissFFT butterfly TFLM builds)
LENGTHS = [4, 6, 8, 10, 16, 20, 24, 30, 40, 64, 96, 100, 256, 512]


@pytest.mark.parametrize("dtype", TYPES, ids=lambda t: np.dtype(t).name)
def test_rfft_matches_tflm(dtype):
    rng = np.random.default_rng(11)
    compared = 0
    for n in LENGTHS:
        for frame in (n, max(1, n - 3)):  # full frames, and zero padding to fft_length
            shape = (2, 3, frame)
            model = one_op("SignalRfft", [(shape, dtype)], [((2, 3, n + 2), dtype)],
                           {"T": TYPE_CODE[np.dtype(dtype)], "fft_length": n})
            compared += assert_same_stream(model, [[full_range(rng, dtype, shape)]])
    assert compared == sum(2 * 3 * (n + 2) * 2 for n in LENGTHS)


@pytest.mark.parametrize("dtype", TYPES, ids=lambda t: np.dtype(t).name)
def test_irfft_matches_tflm(dtype):
    rng = np.random.default_rng(12)
    for n in LENGTHS:
        bins = n + 2
        model = one_op("SignalIrfft", [((4, bins), dtype)], [((4, n), dtype)],
                       {"T": TYPE_CODE[np.dtype(dtype)], "fft_length": n})
        assert_same_stream(model, [[full_range(rng, dtype, (4, bins))]])


def test_float_rfft_is_a_dft_and_irfft_inverts_it():
    """Independent of TFLM: the float build is an FFT (numpy's, to float32 accuracy) and
    the inverse (scaled by 1/n as TFLM's wrapper does) gives the frame back."""
    rng = np.random.default_rng(13)
    for n in (12, 40, 64):
        x = rng.standard_normal((3, n)).astype(F32)
        spec = fft.rfft(x, n)
        ref = np.fft.rfft(x.astype(np.float64))
        np.testing.assert_allclose(spec[..., 0::2], ref.real, atol=2e-4 * n)
        np.testing.assert_allclose(spec[..., 1::2], ref.imag, atol=2e-4 * n)
        np.testing.assert_allclose(fft.irfft(spec, n), x, atol=1e-4)


def test_kissfft_factorization_and_refused_lengths():
    assert kissfft.factorize(256) == [(4, 64), (4, 16), (4, 4), (4, 1)]
    assert kissfft.factorize(30) == [(2, 15), (3, 5), (5, 1)]
    assert kissfft.check_fft_length(28) is not None  # 14 = 2 * 7: the generic radix
    assert kissfft.check_fft_length(2) is not None and kissfft.check_fft_length(10) is None


def test_fft_auto_scale_matches_tflm():
    rng = np.random.default_rng(14)
    model = one_op("SignalFftAutoScale", [((64,), I16)], [((64,), I16), ((), I32)], None)
    frames = [[full_range(rng, I16, 64) >> k] for k in range(16)]
    # all zeros; -32768 alone and followed by other values (TFLM's int16 max wraps)
    frames += [[np.zeros(64, I16)], [np.full(64, -32768, I16)],
               [np.array([3, -32768, -5, 7] * 16, I16)], [np.full(64, -16384, I16)],
               [np.array([1] + [0] * 63, I16)]]
    assert assert_same_stream(model, frames) == len(frames) * 65
    out, scale = fft.fft_auto_scale(np.array([1, -2, 100], I16))
    assert scale == 8 and out.tolist() == [256, -512, 25600]  # 100 < 2**7: 8 free bits


@pytest.mark.parametrize("shift", [0, 7, 12, 15, 31])
def test_window_matches_tflm(shift):
    rng = np.random.default_rng(15 + shift)
    weights = full_range(rng, I16, 48)
    model = one_op("SignalWindow", [((3, 48), I16), (weights,)], [((3, 48), I16)],
                   {"shift": shift})
    assert_same_stream(model, [[full_range(rng, I16, (3, 48))] for _ in range(4)])


def test_energy_matches_tflm_in_its_bins():
    """TFLM writes only bins [start_index, end_index); the rest of its output is whatever
    the arena held, so only the written bins are compared (here they are zero, as
    TensorFlow's kernel defines them)."""
    rng = np.random.default_rng(16)
    for start, end in ((0, 33), (4, 30), (10, 10)):
        model = one_op("SignalEnergy", [((66,), I16)], [((33,), U32)],
                       {"start_index": start, "end_index": end})
        for x in (full_range(rng, I16, 66), np.full(66, -32768, I16)):
            ours, = run_viewer(model, [[x]])[0]
            theirs, = run_tflm(model, [[x]])[0]
            np.testing.assert_array_equal(ours[start:end], theirs[start:end])
            assert not ours[:start].any() and not ours[end:].any()
    pairs = np.array([-32768, -32768, 3, -4], I16)  # 2 * 2**30 overflows TFLM's int32
    assert energy(pairs, 0, 2).tolist() == [2**31, 25]
    assert energy(pairs, 1, 2).tolist() == [0, 25]


def test_most_significant_bit_is_the_bit_length():
    values = [0, 1, 2, 3, 4, 255, 256, 2**31 - 1, 2**31, 2**32 - 1]
    got = fft.most_significant_bit(np.array(values, np.uint64)).tolist()
    assert got == [v.bit_length() if v else 32 for v in values]  # gcc's build: 32 for 0
