"""A wider sweep of the signal-library kernels against TFLite Micro than CI runs: every FFT
length TFLM's KissFFT takes up to 1024 in the three types, and random configurations of
every other op, streams of frames through one interpreter each.

    python -m tests.interpreter.signal.sweep_tflm [--seed N]

Prints the frames compared per op; raises on the first difference.  (About 20 s: too slow
for CI, whose tests in this directory run the same comparisons on fewer cases.)
"""
from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np

from tflite_viewer.interpreter.kernels.signal import kissfft

from .conftest import full_range
from .models import TYPE_CODE, assert_same_stream, one_op, run_tflm, run_viewer
from .test_filter_bank import random_bank

I16, I32, U32, U64, F32, B = np.int16, np.int32, np.uint32, np.uint64, np.float32, np.bool_


def _compare_valid(model, frames) -> None:
    """Same output_valid, and the same output wherever it is valid."""
    for ours, theirs in zip(run_viewer(model, frames), run_tflm(model, frames)):
        assert bool(ours[1]) == bool(theirs[1])
        if theirs[1]:
            np.testing.assert_array_equal(ours[0], theirs[0])


def _bits(rng, top: int) -> int:
    """A random bit width, so values spread over every magnitude."""
    return int(rng.integers(1, top + 1))


def sweep_fft(rng, counts: Counter) -> None:
    lengths = [n for n in range(4, 1025, 2) if kissfft.check_fft_length(n) is None]
    for dtype in (I16, I32, F32):
        name, code = np.dtype(dtype).name, TYPE_CODE[np.dtype(dtype)]
        for n in lengths:
            frame = int(rng.integers(1, n + 1))
            x = full_range(rng, dtype, (3, frame))
            if dtype is not F32 and rng.random() < 0.5:
                x = (x >> int(rng.integers(0, 12))).astype(dtype)  # quieter frames too
            model = one_op("SignalRfft", [((3, frame), dtype)], [((3, n + 2), dtype)],
                           {"T": code, "fft_length": n})
            assert_same_stream(model, [[x]])
            model = one_op("SignalIrfft", [((3, n + 2), dtype)], [((3, n), dtype)],
                           {"T": code, "fft_length": n})
            assert_same_stream(model, [[full_range(rng, dtype, (3, n + 2))]])
            counts[f"rfft {name}"] += 3
            counts[f"irfft {name}"] += 3


def sweep_spectrum(rng, counts: Counter) -> None:
    frames = []
    for _ in range(300):
        x = (full_range(rng, I16, 128) >> int(rng.integers(0, 16))).astype(I16)
        if rng.random() < 0.1:
            x[rng.integers(0, 128)] = -32768
        frames.append([x])
    model = one_op("SignalFftAutoScale", [((128,), I16)], [((128,), I16), ((), I32)], None)
    assert_same_stream(model, frames)
    counts["fft_auto_scale"] += len(frames)
    for _ in range(60):
        n = int(rng.integers(1, 200))
        model = one_op("SignalWindow", [((2, n), I16), (full_range(rng, I16, n),)],
                       [((2, n), I16)], {"shift": int(rng.integers(0, 32))})
        assert_same_stream(model, [[full_range(rng, I16, (2, n))]])
        counts["window"] += 1
    for _ in range(60):
        bins = int(rng.integers(1, 300))
        start = int(rng.integers(0, bins + 1))
        end = int(rng.integers(start, bins + 1))
        model = one_op("SignalEnergy", [((2 * bins,), I16)], [((bins,), U32)],
                       {"start_index": start, "end_index": end})
        x = full_range(rng, I16, 2 * bins)
        ours, theirs = run_viewer(model, [[x]])[0][0], run_tflm(model, [[x]])[0][0]
        np.testing.assert_array_equal(ours[start:end], theirs[start:end])
        counts["energy"] += 1


def sweep_filter_bank(rng, counts: Counter) -> None:
    for _ in range(60):
        channels, bins = int(rng.integers(1, 48)), int(rng.integers(16, 300))
        tables = random_bank(rng, channels, bins)
        model = one_op("SignalFilterBank", [((bins,), U32)] + [(t,) for t in tables],
                       [((channels,), U64)], {"num_channels": channels})
        assert_same_stream(model, [[full_range(rng, U32, bins)] for _ in range(2)])
        counts["filter_bank"] += 2
    x = np.concatenate([rng.integers(0, 2**64 - 1, 3000, U64, endpoint=True),
                        rng.integers(0, 2**32, 3000, U64), rng.integers(0, 2**20, 3000, U64)])
    model = one_op("SignalFilterBankSquareRoot", [((x.size,), U64), ((), I32)],
                   [((x.size,), U32)], None)
    assert_same_stream(model, [[x, np.array(s, I32)] for s in range(0, 16, 3)])
    counts["square_root (9000 values each)"] += 6
    for _ in range(30):
        channels = int(rng.integers(1, 64))
        q = {k: int(rng.integers(0, 1 << 16)) for k in (
            "smoothing", "one_minus_smoothing", "alternate_smoothing",
            "alternate_one_minus_smoothing", "min_signal_remaining")}
        opts = dict(q, num_channels=channels, smoothing_bits=int(rng.integers(0, 20)),
                    spectral_subtraction_bits=int(rng.integers(0, 20)),
                    clamping=bool(rng.random() < 0.5))
        model = one_op("SignalFilterBankSpectralSubtraction", [((channels,), U32)],
                       [((channels,), U32), ((channels,), U32)], opts)
        frames = [[rng.integers(0, 2**_bits(rng, 32) - 1, channels, U32, endpoint=True)]
                  for _ in range(10)]
        assert_same_stream(model, frames)
        counts["spectral_subtraction"] += 10
    for _ in range(40):
        model = one_op("SignalFilterBankLog", [((500,), U32)], [((500,), I16)],
                       {"input_correction_bits": int(rng.integers(0, 32)),
                        "output_scale": int(rng.integers(1, 1 << _bits(rng, 30)))})
        assert_same_stream(model, [[rng.integers(0, 2**_bits(rng, 32) - 1, 500, U32,
                                                 endpoint=True)]])
        counts["log (500 values each)"] += 1
    for _ in range(40):
        model = one_op("SignalPCAN", [((500,), U32), ((500,), U32), (full_range(rng, I16, 125),)],
                       [((500,), U32)], {"snr_shift": int(rng.integers(0, 64))})
        x, noise = (rng.integers(0, 2**_bits(rng, 32) - 1, 500, U32, endpoint=True)
                    for _ in range(2))
        assert_same_stream(model, [[x, noise]])
        counts["pcan (500 values each)"] += 1


def sweep_framing(rng, counts: Counter) -> None:
    for _ in range(40):
        step, size = int(rng.integers(1, 12)), int(rng.integers(1, 30))
        prefill = bool(rng.random() < 0.5) and step <= size
        n, outer = step * int(rng.integers(1, 5)), int(rng.integers(1, 4))
        model = one_op("SignalFramer", [((outer, n), I16)],
                       [((outer, n // step, size), I16), ((), B)],
                       {"frame_size": size, "frame_step": step, "prefill": prefill})
        _compare_valid(model, [[full_range(rng, I16, (outer, n))] for _ in range(6)])
        counts["framer"] += 6
    for _ in range(40):
        c, left, right = (int(rng.integers(lo, hi)) for lo, hi in ((1, 10), (0, 4), (0, 4)))
        step = int(rng.integers(1, left + right + 2))
        model = one_op("SignalStacker", [((c,), I16)],
                       [((c * (left + right + 1),), I16), ((), B)],
                       {"num_channels": c, "stacker_left_context": left,
                        "stacker_right_context": right, "stacker_step": step})
        _compare_valid(model, [[full_range(rng, I16, c)] for _ in range(12)])
        counts["stacker"] += 12
    for _ in range(30):
        shape = (int(rng.integers(1, 4)), int(rng.integers(1, 40)))
        model = one_op("SignalDelay", [(shape, I16)], [(shape, I16)],
                       {"delay_length": int(rng.integers(0, 50))})
        assert_same_stream(model, [[full_range(rng, I16, shape)] for _ in range(6)])
        counts["delay"] += 6
    for dtype in (I16, F32):
        for _ in range(30):
            size = int(rng.integers(1, 30))
            step, n_frames = int(rng.integers(1, size + 1)), int(rng.integers(1, 4))
            model = one_op("SignalOverlapAdd", [((2, n_frames, size), dtype)],
                           [((2, n_frames * step), dtype)],
                           {"T": TYPE_CODE[np.dtype(dtype)], "frame_step": step})
            assert_same_stream(model, [[full_range(rng, dtype, (2, n_frames, size))]
                                       for _ in range(5)])
            counts[f"overlap_add {np.dtype(dtype).name}"] += 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=99)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    counts: Counter = Counter()
    start = time.perf_counter()
    for family in (sweep_fft, sweep_spectrum, sweep_filter_bank, sweep_framing):
        family(rng, counts)
    for op, n in counts.items():
        print(f"{op:32s} {n:5d} frames bit-exact")
    print(f"{sum(counts.values())} frames in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
