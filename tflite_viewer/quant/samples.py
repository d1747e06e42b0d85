"""The inputs an analysis runs on: seeded, a .npz, a folder of images, or given arrays.

A sample is one list of real-valued arrays, one per input of subgraph 0 (or of a
signature) in its order: the signature's own order, which need not be its subgraph's.
The runner hands them to the interpreter by name (`runner.ModelRunner`), and an analysis
of two models picks each model's inputs from the sample by name (`analysis.input_order`).
Each model gets them in its own input types: a float input takes the values as they are,
a quantized integer input takes them quantized with its own scale and zero point (what a
deployment's preprocessing does).  Samples supplied as integers of a quantized input's own
type are taken as already quantized and dequantized for the float model.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..interpreter.inputs import InputError, input_specs, seeded_inputs
from ..model import Model
from .ranges import dequantize, integer_range, quantize

Sample = list  # list[np.ndarray], one real-valued array per input of subgraph 0
#: the image files a folder source reads (what Pillow decodes, and pixel arrays)
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".ppm", ".pgm", ".pnm", ".bmp", ".gif", ".tif",
                  ".tiff", ".webp", ".npy")


def _real_inputs(model: Model, arrays: Sequence[np.ndarray], signature: str | None = None
                 ) -> Sample:
    """Integer arrays for quantized inputs dequantized; everything else as float64/own."""
    out = []
    for spec, arr in zip(input_specs(model, signature), arrays):
        t = model.subgraphs[spec.subgraph].tensors[spec.tensor]
        q = t.quantization
        a = np.asarray(arr)
        if q is not None and q.has_scale and a.dtype.kind in "iu" and integer_range(
                t.type_name) is not None:
            out.append(dequantize(a, q))
        else:
            out.append(a)
    return out


def seeded_samples(model: Model, count: int, seed: int = 0, signature: str | None = None
                   ) -> list[Sample]:
    """``count`` seeded samples valid for ``model`` (see interpreter.inputs), for the
    inputs of subgraph 0 or of ``signature``."""
    specs = input_specs(model, signature)
    samples = []
    held = 0  # the samples made so far count against the memory budget with the next one
    for s in range(count):
        arrays = seeded_inputs(model, seed + s, signature, reserved=held)
        samples.append(_real_inputs(model, [arrays[spec.name] for spec in specs], signature))
        held += sum(np.asarray(a).nbytes for a in samples[-1])
    return samples


def npz_samples(model: Model, path: str | os.PathLike, limit: int | None = None,
                signature: str | None = None) -> list[Sample]:
    """Samples from a .npz keyed by input name (any alias, as `run --inputs` takes), for
    the inputs of subgraph 0 or of ``signature``.  An array with one more leading axis
    than the input holds one sample per row."""
    specs = input_specs(model, signature)
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
    return [_real_inputs(model, [a[k] if b else a for a, b in zip(chosen, batched)], signature)
            for k in range(n)]


# -- images --------------------------------------------------------------------------------
def load_image(path: str | os.PathLike) -> np.ndarray:
    """An image file as H x W x C uint8: anything Pillow decodes (JPEG, PNG, PPM/PGM, BMP,
    ...), or an H x W [x C] .npy of pixel values 0..255."""
    p = Path(path)
    if p.suffix.lower() == ".npy":
        a = np.load(p, allow_pickle=False)
        if a.ndim not in (2, 3):
            raise ValueError(f"a .npy image is H x W or H x W x C, not {list(a.shape)}")
        a = np.clip(np.rint(a.astype(np.float64)), 0, 255).astype(np.uint8) \
            if a.dtype != np.uint8 else a
        return a[..., None] if a.ndim == 2 else a
    from PIL import Image
    with Image.open(p) as im:
        im.load()
        if im.mode not in ("L", "LA", "RGB", "RGBA"):
            im = im.convert("RGBA" if "A" in im.getbands() else "RGB")
        a = np.asarray(im)
    return a[..., None] if a.ndim == 2 else a


def fit_image(pixels: np.ndarray, height: int, width: int, channels: int) -> np.ndarray:
    """H x W x C uint8 pixels resized (bilinear) to ``height`` x ``width`` with
    ``channels`` channels: gray repeated for colour inputs, colour to luminance for gray
    ones (ITU-R 601-2, Pillow's "L"), alpha added opaque or dropped."""
    from PIL import Image
    px = np.asarray(pixels, np.uint8)
    mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[px.shape[2]]
    im = Image.fromarray(px[..., 0] if px.shape[2] == 1 else px, mode)
    want = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}.get(channels)
    if want is None:
        raise InputError(f"an image input with {channels} channels")
    if im.mode != want:
        im = im.convert(want)
    if im.size != (width, height):
        im = im.resize((width, height), Image.Resampling.BILINEAR)
    a = np.asarray(im)
    return a[..., None] if a.ndim == 2 else a


def image_samples(model: Model, folder: str | os.PathLike, limit: int | None = None,
                  signature: str | None = None) -> list[Sample]:
    """One sample per image file of ``folder`` (sorted by name) for a model with one image
    input (NHWC or NCHW): decoded (`load_image`), fitted to the input's size and channels
    (`fit_image`), then normalized, laid out and typed as the debugger's image source does
    (`interpreter.input_sources.image_to_input`: the metadata's mean and std, else its
    guess), and taken back to real values."""
    from ..interpreter.input_sources import image_layout, image_to_input
    specs = input_specs(model, signature)
    layout = image_layout(specs[0]) if len(specs) == 1 else None
    if layout is None:
        raise InputError("--images needs a model with one image input ([1,] H x W x C or "
                         "C x H x W); this one takes "
                         + ", ".join(f"{s.name!r} {s.describe()}" for s in specs))
    files = sorted(p for p in Path(folder).iterdir()
                   if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise InputError(f"{folder}: no images ({', '.join(IMAGE_SUFFIXES)})")
    if limit is not None:
        files = files[:limit]
    samples = []
    for f in files:
        try:
            img = load_image(f)
        except (ValueError, OSError) as exc:  # PIL.UnidentifiedImageError is an OSError
            raise InputError(f"{f.name}: cannot read the image ({exc})") from exc
        px = fit_image(img, layout.height, layout.width, layout.channels)
        samples.append(_real_inputs(model, [image_to_input(model, specs[0], px)], signature))
    return samples


def given_samples(model: Model, samples: Sequence[Mapping[str, Any] | Sequence[Any]],
                  signature: str | None = None) -> list[Sample]:
    """Samples given as dicts keyed by input name (a debugger session's Inputs) or lists,
    for the inputs of subgraph 0 or of ``signature``."""
    specs = input_specs(model, signature)
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
        out.append(_real_inputs(model, arrays, signature))
    return out


def model_inputs(model: Model, sample: Sample, signature: str | None = None
                 ) -> list[np.ndarray]:
    """A sample in ``model``'s own input types (quantized inputs quantized)."""
    out = []
    for spec, real in zip(input_specs(model, signature), sample):
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
