"""The inputs an analysis runs on: seeded, a .npz, a folder of images, or given arrays.

A sample is one list of real-valued arrays, one per input of subgraph 0 in its order.
Each model gets them in its own input types: a float input takes the values as they are,
a quantized integer input takes them quantized with its own scale and zero point (what a
deployment's preprocessing does).  Samples supplied as integers of a quantized input's own
type are taken as already quantized and dequantized for the float model.
"""
from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..interpreter.inputs import InputError, input_specs, seeded_inputs
from ..model import Model
from .ranges import dequantize, integer_range, quantize

Sample = list  # list[np.ndarray], one real-valued array per input of subgraph 0
IMAGE_SUFFIXES = (".png", ".ppm", ".pgm", ".npy")


def _real_inputs(model: Model, arrays: Sequence[np.ndarray]) -> Sample:
    """Integer arrays for quantized inputs dequantized; everything else as float64/own."""
    out = []
    for spec, arr in zip(input_specs(model), arrays):
        t = model.subgraphs[spec.subgraph].tensors[spec.tensor]
        q = t.quantization
        a = np.asarray(arr)
        if q is not None and q.has_scale and a.dtype.kind in "iu" and integer_range(
                t.type_name) is not None:
            out.append(dequantize(a, q))
        else:
            out.append(a)
    return out


def seeded_samples(model: Model, count: int, seed: int = 0) -> list[Sample]:
    """``count`` seeded samples valid for ``model`` (see interpreter.inputs)."""
    specs = input_specs(model)
    samples = []
    for s in range(count):
        arrays = seeded_inputs(model, seed + s)
        samples.append(_real_inputs(model, [arrays[spec.name] for spec in specs]))
    return samples


def npz_samples(model: Model, path: str | os.PathLike, limit: int | None = None
                ) -> list[Sample]:
    """Samples from a .npz keyed by input name (any alias, as `run --inputs` takes).  An
    array with one more leading axis than the input holds one sample per row."""
    specs = input_specs(model)
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: np.asarray(data[k]) for k in data.files}
    chosen: list[np.ndarray] = []
    for spec in specs:
        hit = next((arrays[a] for a in spec.aliases if a in arrays), None)
        if hit is None and len(specs) == 1 and len(arrays) == 1:
            hit = next(iter(arrays.values()))
        if hit is None:
            raise InputError(f"{Path(path).name}: no array for input {spec.name!r} "
                             f"{spec.describe()} (keys: {', '.join(sorted(arrays))})")
        chosen.append(hit)
    counts = set()
    batched = []
    for spec, a in zip(specs, chosen):
        if a.ndim == len(spec.shape) + 1 and tuple(a.shape[1:]) == tuple(spec.shape):
            batched.append(True)
            counts.add(a.shape[0])
        elif tuple(a.shape) == tuple(spec.shape):
            batched.append(False)
        else:
            raise InputError(f"{Path(path).name}: input {spec.name!r} expects "
                             f"{spec.describe()} (or N of them), got shape {list(a.shape)}")
    if len(counts) > 1:
        raise InputError(f"{Path(path).name}: inputs have different sample counts {sorted(counts)}")
    n = counts.pop() if counts else 1
    if limit is not None:
        n = min(n, limit)
    return [_real_inputs(model, [a[k] if b else a for a, b in zip(chosen, batched)])
            for k in range(n)]


# -- images --------------------------------------------------------------------------------
def _png(data: bytes) -> np.ndarray:
    """An 8-bit, non-interlaced PNG (gray, gray+alpha, RGB, RGBA, palette) as HxWxC uint8."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, palette = 8, [], None
    width = height = depth = ctype = interlace = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(ctype)
    if depth != 8 or interlace or channels is None:
        raise ValueError(f"unsupported PNG (bit depth {depth}, colour type {ctype}, "
                         f"interlace {interlace}): use 8-bit non-interlaced PNG, PPM or .npy")
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8)
    stride = width * channels
    rows = raw.reshape(height, stride + 1)
    out = np.zeros((height, stride), np.int32)
    prev = np.zeros(stride, np.int32)
    for y in range(height):
        f, line = rows[y, 0], rows[y, 1:].astype(np.int32)
        if f == 0:
            cur = line
        elif f == 2:
            cur = (line + prev) & 255
        else:
            cur = np.zeros(stride, np.int32)
            for x in range(stride):
                a = cur[x - channels] if x >= channels else 0
                b = prev[x]
                c = prev[x - channels] if x >= channels else 0
                if f == 1:
                    p = a
                elif f == 3:
                    p = (a + b) // 2
                else:
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[x] = (line[x] + p) & 255
        out[y] = cur
        prev = cur
    img = out.astype(np.uint8).reshape(height, width, channels)
    if ctype == 3 and palette is not None:
        img = palette[img[..., 0]]
    return img


def _pnm(data: bytes) -> np.ndarray:
    parts, pos = [], 0
    while len(parts) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos)
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        parts.append(data[pos:end])
        pos = end
    magic, w, h, maxval = parts[0], int(parts[1]), int(parts[2]), int(parts[3])
    if magic not in (b"P5", b"P6") or maxval > 255:
        raise ValueError("unsupported PNM: use binary 8-bit P5/P6")
    c = 3 if magic == b"P6" else 1
    return np.frombuffer(data[pos + 1:pos + 1 + w * h * c], np.uint8).reshape(h, w, c)


def load_image(path: str | os.PathLike) -> np.ndarray:
    """An image file (8-bit PNG, binary PPM/PGM, or an HxW[xC] .npy) as HxWxC."""
    p = Path(path)
    if p.suffix.lower() == ".npy":
        a = np.load(p, allow_pickle=False)
        return a[..., None] if a.ndim == 2 else a
    data = p.read_bytes()
    return _png(data) if p.suffix.lower() == ".png" else _pnm(data)


def _resize_nearest(img: np.ndarray, h: int, w: int) -> np.ndarray:
    ys = (np.arange(h) * img.shape[0] // h).clip(0, img.shape[0] - 1)
    xs = (np.arange(w) * img.shape[1] // w).clip(0, img.shape[1] - 1)
    return img[ys][:, xs]


def image_samples(model: Model, folder: str | os.PathLike, limit: int | None = None,
                  value_range: tuple[float, float] = (-1.0, 1.0)) -> list[Sample]:
    """One sample per image file of ``folder`` (sorted by name) for a model with one NHWC
    input: resized (nearest) to its height and width, channels matched (gray repeated,
    alpha dropped), and 0..255 mapped linearly onto ``value_range``."""
    specs = input_specs(model)
    if len(specs) != 1 or len(specs[0].shape) != 4:
        raise InputError("--images needs a model with one NHWC image input; this one takes "
                         + ", ".join(f"{s.name!r} {s.describe()}" for s in specs))
    _, h, w, c = specs[0].shape
    files = sorted(p for p in Path(folder).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise InputError(f"{folder}: no images ({', '.join(IMAGE_SUFFIXES)})")
    if limit is not None:
        files = files[:limit]
    lo, hi = value_range
    samples = []
    for f in files:
        try:
            img = load_image(f)
        except (ValueError, OSError, zlib.error, struct.error, IndexError) as exc:
            raise InputError(f"{f.name}: cannot read the image ({exc})") from exc
        img = _resize_nearest(img, h, w)
        if img.shape[2] >= 3 and c == 1:
            img = img[..., :3].mean(axis=2, keepdims=True)
        elif img.shape[2] in (1, 2) and c == 3:
            img = np.repeat(img[..., :1], 3, axis=2)
        img = img[..., :c].astype(np.float64)
        samples.append([(lo + img / 255.0 * (hi - lo))[None].astype(np.float32)])
    return samples


def given_samples(model: Model, samples: Sequence[Mapping[str, Any] | Sequence[Any]]
                  ) -> list[Sample]:
    """Samples given as dicts keyed by input name (a debugger session's Inputs) or lists."""
    specs = input_specs(model)
    out = []
    for s in samples:
        if isinstance(s, Mapping):
            arrays = []
            for spec in specs:
                hit = next((s[a] for a in spec.aliases if a in s), None)
                if hit is None:
                    raise InputError(f"sample has no value for input {spec.name!r}")
                arrays.append(hit)
        else:
            arrays = list(s)
        out.append(_real_inputs(model, arrays))
    return out


def model_inputs(model: Model, sample: Sample) -> list[np.ndarray]:
    """A sample in ``model``'s own input types (quantized inputs quantized)."""
    out = []
    for spec, real in zip(input_specs(model), sample):
        t = model.subgraphs[spec.subgraph].tensors[spec.tensor]
        q = t.quantization
        a = np.asarray(real)
        if q is not None and q.has_scale and integer_range(t.type_name) is not None \
                and spec.dtype is not None and spec.dtype.kind in "iu":
            out.append(quantize(a, q, t.type_name).astype(spec.dtype))
        elif spec.dtype is not None:
            out.append(a.astype(spec.dtype))
        else:
            out.append(a)
    return out
