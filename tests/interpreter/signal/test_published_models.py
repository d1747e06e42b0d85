"""TFLite Micro's own micro_speech audio preprocessors (tests/data/signal, converted by
TensorFlow from the signal library's ops and builtin ops): a stream of audio blocks
through TFLite Micro and the interpreter, every tensor of every invocation compared."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter

from tests.micro_oracle import tflm, tflm_tensor

MODELS = Path(__file__).resolve().parents[2] / "data" / "signal"


def _audio(blocks: int, size: int) -> np.ndarray:
    """Speech-band tones gliding upward, noise, and a clipped burst, as int16 blocks."""
    rng = np.random.default_rng(60)
    t = np.arange(blocks * size) / 16000
    x = 5000 * np.sin(2 * np.pi * (300 + 2000 * t) * t) + 2000 * np.sin(2 * np.pi * 1200 * t)
    x += rng.normal(0, 400, t.size)
    x[3 * size:4 * size] *= 12
    return np.clip(x, -32768, 32767).astype(np.int16).reshape(blocks, size)


def _energy_bins(interp: Interpreter) -> dict[int, slice]:
    """SignalEnergy's output and its CASTs -> the bins TFLM writes (the others hold its
    arena's contents, whatever they were)."""
    sg = interp.entry
    bins: dict[int, slice] = {}
    for node in sg.nodes:
        if node.name == "SignalEnergy":
            opts = node.custom_data
            bins[node.outputs[0]] = slice(opts["start_index"], opts["end_index"])
        elif node.name == "CAST" and node.inputs[0] in bins:
            bins[node.outputs[0]] = bins[node.inputs[0]]
    return bins


@pytest.mark.parametrize("name", ["audio_preprocessor_float", "audio_preprocessor_int8"])
def test_micro_speech_preprocessor_matches_tflm(name):
    model = (MODELS / f"{name}.tflite").read_bytes()
    ours, theirs = Interpreter(model), tflm(model)
    shape = ours.entry.tensors[ours.entry.inputs[0]].shape
    partial = _energy_bins(ours)
    assert len(partial) == 2  # the energy and its cast to int32
    compared = 0
    for k, block in enumerate(_audio(12, int(np.prod(shape)))):
        x = block.reshape(shape)
        ours.invoke([x])
        theirs.set_input(x, 0)
        theirs.invoke()
        for i, tensor in enumerate(ours.entry.tensors):
            a, b = ours.tensor(0, i), tflm_tensor(theirs, i)
            if i in partial:
                a, b = a[partial[i]], b[partial[i]]
            assert a.dtype == b.dtype and a.shape == b.shape, (k, i, tensor.name)
            np.testing.assert_array_equal(a, b, err_msg=f"block {k} tensor {i} {tensor.name}")
            compared += a.size
    features = list(ours.outputs().values())[0]
    assert np.unique(features).size > 10  # the stream gives non-trivial features
    assert compared > 12 * 3000
