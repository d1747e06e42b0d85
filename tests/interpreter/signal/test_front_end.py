"""An audio front end built from the signal library, as micro_speech's: framer -> window ->
FFT auto scale -> rfft -> energy -> mel filter bank -> square root -> spectral subtraction
-> PCAN -> log -> stacker, run on a stream of audio blocks through TFLite Micro and the
interpreter, every tensor of every invocation compared bit for bit."""
from __future__ import annotations

import math

import numpy as np

from tflite_viewer.interpreter import Interpreter

from tests.micro_oracle import tflm, tflm_tensor

from .models import CustomOp, custom_model

I16, I32, U32, U64, B = np.int16, np.int32, np.uint32, np.uint64, np.bool_
RATE, BLOCK, FRAME, FFT, CHANNELS = 16000, 160, 400, 512, 40


def mel_bank(low=125.0, high=7500.0):
    """TFLM's filter-bank tables for CHANNELS triangular mel bands over the FFT bins:
    band c covers the bins between mel points c and c+1; its rising weights (Q12) go to
    channel c, the falling unweights to channel c+1."""
    mel = lambda f: 1127.0 * math.log1p(f / 700.0)  # noqa: E731
    inv = lambda m: 700.0 * math.expm1(m / 1127.0)  # noqa: E731
    points = [inv(mel(low) + k * (mel(high) - mel(low)) / (CHANNELS + 1))
              for k in range(CHANNELS + 2)]
    edges = [int(math.ceil(f * FFT / RATE)) for f in points]
    starts, widths, weights = [], [], []
    for c in range(CHANNELS + 1):
        lo, hi = edges[c], max(edges[c + 1], edges[c] + 1)
        starts.append(lo)
        widths.append(hi - lo)
        weights += [int(4096 * (b - lo + 1) / (hi - lo + 1)) for b in range(lo, hi)]
    weights = np.array(weights, I16)
    weight_starts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(I16)
    return (weights, (4096 - weights).astype(I16), np.array(starts, I16), weight_starts,
            np.array(widths, I16), starts[0], starts[-1] + widths[-1])


def front_end_model() -> tuple[bytes, int, int]:
    weights, unweights, starts, wstarts, widths, first_bin, end_bin = mel_bank()
    hann = np.round(16384 * 0.5 * (1 - np.cos(2 * np.pi * np.arange(FRAME) / FRAME))).astype(I16)
    gain_lut = np.round(8000 * np.exp(-np.arange(125) / 40.0)).astype(I16)
    tensors = [((BLOCK,), I16), ((1, FRAME), I16), ((), B), (np.array([FRAME], I32),),
               ((FRAME,), I16), (hann,), ((FRAME,), I16), ((FRAME,), I16), ((), I32),
               ((FFT + 2,), I16), ((FFT // 2 + 1,), U32), (weights,), (unweights,), (starts,),
               (wstarts,), (widths,), ((CHANNELS,), U64), ((CHANNELS,), U32),
               ((CHANNELS,), U32), ((CHANNELS,), U32), (gain_lut,), ((CHANNELS,), U32),
               ((CHANNELS,), I16), ((2 * CHANNELS,), I16), ((), B)]
    ops = [
        CustomOp("SignalFramer", [0], [1, 2], {"frame_size": FRAME, "frame_step": BLOCK,
                                               "prefill": True}),
        CustomOp("RESHAPE", [1, 3], [4], builtin=True),
        CustomOp("SignalWindow", [4, 5], [6], {"shift": 14}),
        CustomOp("SignalFftAutoScale", [6], [7, 8]),
        CustomOp("SignalRfft", [7], [9], {"T": 7, "fft_length": FFT}),
        CustomOp("SignalEnergy", [9], [10], {"start_index": first_bin, "end_index": end_bin}),
        CustomOp("SignalFilterBank", [10, 11, 12, 13, 14, 15], [16], {"num_channels": CHANNELS}),
        CustomOp("SignalFilterBankSquareRoot", [16, 8], [17]),
        CustomOp("SignalFilterBankSpectralSubtraction", [17], [18, 19], {
            "num_channels": CHANNELS, "smoothing": 655, "one_minus_smoothing": 16384 - 655,
            "alternate_smoothing": 655, "alternate_one_minus_smoothing": 16384 - 655,
            "smoothing_bits": 10, "min_signal_remaining": 819, "clamping": False,
            "spectral_subtraction_bits": 14}),
        CustomOp("SignalPCAN", [18, 19, 20], [21], {"snr_shift": 6}),
        CustomOp("SignalFilterBankLog", [21], [22], {"input_correction_bits": 3,
                                                     "output_scale": 64}),
        CustomOp("SignalStacker", [22], [23, 24], {"num_channels": CHANNELS,
                                                   "stacker_left_context": 1,
                                                   "stacker_right_context": 0,
                                                   "stacker_step": 1}),
    ]
    return custom_model(tensors, ops, [0], [23, 24, 22]), first_bin, end_bin


def audio_blocks(count: int) -> list[np.ndarray]:
    """A chirp with noise and a loud burst (saturating the window) in int16 blocks."""
    rng = np.random.default_rng(40)
    t = np.arange(count * BLOCK) / RATE
    x = 6000 * np.sin(2 * np.pi * (200 + 1500 * t) * t) + rng.normal(0, 300, t.size)
    x[5 * BLOCK:6 * BLOCK] *= 8
    return list(np.clip(x, -32768, 32767).astype(I16).reshape(count, BLOCK))


def test_front_end_matches_tflm_tensor_for_tensor():
    model, first_bin, end_bin = front_end_model()
    ours, theirs = Interpreter(model), tflm(model)
    n_tensors = len(ours.entry.tensors)
    compared = 0
    for k, block in enumerate(audio_blocks(12)):
        ours.invoke([block])
        theirs.set_input(block, 0)
        theirs.invoke()
        for i in range(n_tensors):
            a, b = ours.tensor(0, i), tflm_tensor(theirs, i)
            if i == 10:  # energy: TFLM writes only bins [start_index, end_index)
                a, b = a[first_bin:end_bin], b[first_bin:end_bin]
            assert a.dtype == b.dtype and a.shape == b.shape, (k, i)
            np.testing.assert_array_equal(a, b, err_msg=f"block {k} tensor {i}")
            compared += a.size
    assert compared > 12 * 2500
    features = ours.tensor(0, 22)
    assert features.max() > 0 and len(np.unique(features)) > 10  # not a trivial stream


def test_front_end_reset_starts_the_stream_over():
    model, _, _ = front_end_model()
    interp = Interpreter(model)
    blocks = audio_blocks(4)
    first = [interp.invoke([b])["t23"].copy() for b in blocks]
    interp.reset_variables()
    again = [interp.invoke([b])["t23"].copy() for b in blocks]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    # without the reset, the stream goes on: the state (framer backlog, noise estimate)
    # makes the same block give other features
    assert not np.array_equal(interp.invoke([blocks[0]])["t23"], first[0])


def test_stepping_the_front_end_gives_what_invoke_gives():
    """The debugger's stepped runs carry the streaming state exactly as invoke does."""
    model, _, _ = front_end_model()
    stepped, invoked = Interpreter(model), Interpreter(model)
    for block in audio_blocks(3):
        expect = invoked.invoke([block])
        stop = stepped.start([block])
        steps = 0
        while not stop.finished:
            stop = stepped.step()
            steps += 1
        assert steps == 12
        for name, value in expect.items():
            np.testing.assert_array_equal(stop.outputs[name], value)
