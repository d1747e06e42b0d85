"""Image folders as analysis samples: JPEG (and anything Pillow decodes) and .npy, fitted
to the input's size and channels, normalized as the debugger's image source does.

The truth is a hand computation on the pixels Pillow decodes from the written file (JPEG
is lossy: the file's pixels, not the array written, are what the model must see)."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tflite_viewer.interpreter.inputs import InputError
from tflite_viewer.model import load_model
from tflite_viewer.quant.samples import image_samples, load_image

from .helpers import SMALL_FLOAT, SMALL_INT8, MODELS


def _jpeg(path, pixels, mode=None):
    Image.fromarray(pixels, mode).save(path, quality=90)
    with Image.open(path) as im:
        return np.asarray(im)  # the decoded pixels


def test_jpeg_at_the_input_size_float_input(tmp_path):
    """A 32x32 RGB JPEG for a float [1,32,32,3] input: (pixel - 127.5) / 127.5 (no
    metadata: the guess maps 0..255 onto [-1, 1])."""
    rng = np.random.default_rng(0)
    decoded = _jpeg(tmp_path / "a.jpg", rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))
    assert decoded.shape == (32, 32, 3)
    np.testing.assert_array_equal(load_image(tmp_path / "a.jpg"), decoded)
    [sample] = image_samples(load_model(SMALL_FLOAT), tmp_path)
    assert len(sample) == 1 and sample[0].shape == (1, 32, 32, 3)
    expect = (decoded.astype(np.float64) - 127.5) / 127.5
    np.testing.assert_allclose(sample[0][0], expect, rtol=0, atol=1e-6)


def test_jpeg_quantized_input(tmp_path):
    """An int8 input (scale s, zero point z, no metadata): the guess maps 0..255 onto the
    representable range [(-128 - z) s, (127 - z) s]; the sample is the real value the
    quantized input then holds: (clip(round((p - mean) / std / s) + z) - z) * s."""
    rng = np.random.default_rng(1)
    decoded = _jpeg(tmp_path / "a.jpg", rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))
    m = load_model(SMALL_INT8)
    t = m.subgraphs[0].tensors[m.subgraphs[0].inputs[0]]
    s, z = float(t.quantization.scale[0]), int(t.quantization.zero_point[0])
    lo, hi = (-128 - z) * s, (127 - z) * s
    std = 255.0 / (hi - lo)
    mean = -lo * std
    q = np.clip(np.round((decoded.astype(np.float64) - mean) / std / s) + z, -128, 127)
    [sample] = image_samples(m, tmp_path)
    np.testing.assert_allclose(sample[0][0], (q - z) * s, rtol=0, atol=1e-9)


def test_gray_jpeg_resized_and_repeated(tmp_path):
    """A 48x64 gray JPEG of one value for an RGB 32x32 input: bilinear resizing of a flat
    image keeps its value, and the gray channel is repeated."""
    decoded = _jpeg(tmp_path / "g.jpeg", np.full((48, 64), 200, np.uint8), "L")
    assert decoded.shape == (48, 64) and (decoded == decoded[0, 0]).all()
    [sample] = image_samples(load_model(SMALL_FLOAT), tmp_path)
    assert sample[0].shape == (1, 32, 32, 3)
    np.testing.assert_allclose(sample[0], (int(decoded[0, 0]) - 127.5) / 127.5, atol=1e-6)


def test_rgb_to_gray_input_and_metadata_normalization(tmp_path):
    """mobilenet_v1_0.25_224_quant: uint8 [1,224,224,3] with metadata mean 127.5, std
    127.5; a 224x224 PNG (lossless) gives exactly the uint8 pixels' quantized values."""
    rng = np.random.default_rng(2)
    px = rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)
    Image.fromarray(px).save(tmp_path / "p.png")
    m = load_model(MODELS / "mobilenet_v1_0.25_224_quant.tflite")
    t = m.subgraphs[0].tensors[m.subgraphs[0].inputs[0]]
    s, z = float(t.quantization.scale[0]), int(t.quantization.zero_point[0])
    [sample] = image_samples(m, tmp_path)
    q = np.clip(np.round((px - 127.5) / 127.5 / s) + z, 0, 255)
    np.testing.assert_allclose(sample[0][0], (q - z) * s, atol=1e-9)


def test_npy_kept_and_sorted_by_name(tmp_path):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
    np.save(tmp_path / "b.npy", a)
    np.save(tmp_path / "a.npy", a[..., 0])  # H x W: one gray channel, repeated
    s = image_samples(load_model(SMALL_FLOAT), tmp_path)
    np.testing.assert_allclose(s[1][0][0], (a - 127.5) / 127.5, atol=1e-6)
    np.testing.assert_allclose(s[0][0][0], np.repeat((a[..., :1] - 127.5) / 127.5, 3, axis=2),
                               atol=1e-6)


def test_unreadable_image_and_empty_folder(tmp_path):
    (tmp_path / "bad.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(InputError, match="bad.jpg: cannot read the image"):
        image_samples(load_model(SMALL_FLOAT), tmp_path)
    (tmp_path / "bad.jpg").unlink()
    with pytest.raises(InputError, match="no images"):
        image_samples(load_model(SMALL_FLOAT), tmp_path)
