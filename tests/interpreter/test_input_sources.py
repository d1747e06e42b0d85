"""Inputs of a debug run: images (layout, normalization, quantization by hand), WAV, files,
constants; every refusal names the input."""
from __future__ import annotations

import wave

import numpy as np
import pytest

from tflite_viewer.interpreter.input_sources import (constant_input, image_to_input,
                                                     load_array, normalization,
                                                     random_input, wav_to_input)
from tflite_viewer.interpreter.inputs import InputError, input_specs
from tflite_viewer.model import load_model

from .conftest import model_path


def _pixels(h, w, c, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, c)).astype(np.uint8)


def test_uint8_image_uses_metadata_mean_std_and_the_tensors_quantization():
    model = load_model(model_path("mobilenet_v1_0.25_224_quant"))
    spec = input_specs(model)[0]
    px = _pixels(224, 224, 3)
    mean, std, where = normalization(model, spec)
    assert (mean, std, where) == ([127.5], [127.5], "model metadata")
    arr = image_to_input(model, spec, px)
    q = model.subgraphs[0].tensors[spec.tensor].quantization
    scale, zp = float(q.scale[0]), int(q.zero_point[0])
    # by hand for one pixel: real = (p - 127.5) / 127.5, q = round(real / scale) + zp
    p = int(px[10, 20, 1])
    expect = min(255, max(0, int(np.round((p - 127.5) / 127.5 / scale)) + zp))
    assert arr.shape == (1, 224, 224, 3) and arr.dtype == np.uint8
    assert arr[0, 10, 20, 1] == expect


def test_float_image_per_channel_metadata():
    model = load_model(model_path("hand_landmark_lite"))
    spec = input_specs(model)[0]
    px = _pixels(224, 224, 3, 1)
    arr = image_to_input(model, spec, px)
    assert arr.dtype == np.float32 and arr.shape == (1, 224, 224, 3)
    np.testing.assert_allclose(arr[0], px / 255.0, rtol=1e-6)


def test_int8_grayscale_guess_covers_the_quantized_range():
    model = load_model(model_path("person_detect"))
    spec = input_specs(model)[0]
    mean, std, where = normalization(model, spec)
    assert where.startswith("guess")
    px = np.zeros((96, 96, 1), np.uint8)
    px[0, 0, 0], px[0, 1, 0] = 0, 255
    arr = image_to_input(model, spec, px, mean, std)
    assert arr.dtype == np.int8 and arr.shape == (1, 96, 96, 1)
    assert (arr[0, 0, 0, 0], arr[0, 0, 1, 0]) == (-128, 127)


def test_image_of_the_wrong_size_is_refused_naming_the_input():
    model = load_model(model_path("mobilenet_v2_float"))
    spec = input_specs(model)[0]
    with pytest.raises(InputError, match=spec.name):
        image_to_input(model, spec, _pixels(10, 10, 3))
    sine = load_model(model_path("sine_float"))
    with pytest.raises(InputError, match="not an image input"):
        image_to_input(sine, input_specs(sine)[0], _pixels(10, 10, 3))


def _wav(path, samples, rate=16000):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.asarray(samples, "<i2").tobytes())


def test_wav_scaled_to_unit_range_padded_and_rate_reported(tmp_path):
    model = load_model(model_path("yamnet_audio_classifier_with_metadata"))
    spec = input_specs(model)[0]
    _wav(tmp_path / "a.wav", [0, 16384, -32768, 32767], rate=8000)
    arr, notes = wav_to_input(tmp_path / "a.wav", spec, 16000)
    assert arr.shape == (15600,) and arr.dtype == np.float32
    np.testing.assert_array_equal(arr[:4], np.array([0, 0.5, -1, 32767 / 32768], np.float32))
    assert not arr[4:].any()
    assert any("8000 Hz" in n and "16000" in n for n in notes)
    assert any("zero-padded" in n for n in notes)
    (tmp_path / "bad.wav").write_bytes(b"not a wav")
    with pytest.raises(InputError, match="not a readable WAV"):
        wav_to_input(tmp_path / "bad.wav", spec)


def test_files_constants_and_random(tmp_path):
    model = load_model(model_path("mobilenet_v2_int8"))
    spec = input_specs(model)[0]
    x = np.full(spec.shape, 3, np.int8)
    np.save(tmp_path / "x.npy", x)
    np.testing.assert_array_equal(load_array(tmp_path / "x.npy", spec), x)
    np.savez(tmp_path / "x.npz", **{spec.name: x})
    np.testing.assert_array_equal(load_array(tmp_path / "x.npz", spec), x)
    np.save(tmp_path / "wrong.npy", np.zeros((2, 2), np.int8))
    with pytest.raises(InputError, match="shape"):
        load_array(tmp_path / "wrong.npy", spec)
    np.save(tmp_path / "obj.npy", np.array([object()], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="cannot read"):
        load_array(tmp_path / "obj.npy", spec)
    assert (constant_input(spec, 5) == 5).all()
    with pytest.raises(InputError, match="not an integer"):
        constant_input(spec, 0.5)
    r = random_input(model, spec, "normal")
    assert r.dtype == np.int8 and r.shape == spec.shape
    f = load_model(model_path("mobilenet_v2_float"))
    n = random_input(f, input_specs(f)[0], "normal", seed=3)
    assert abs(float(n.mean())) < 0.05 and 0.95 < float(n.std()) < 1.05
