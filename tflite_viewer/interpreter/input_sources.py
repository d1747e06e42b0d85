"""Where a debug run's inputs come from: random, constant, array files, images, audio.

The window's Inputs dialog offers these per input; everything but decoding an image file
(which the window does with QImage and hands over as an H x W x C uint8 array) is here,
Qt-free, so it is tested on its own.  Every refusal is an `InputError` that names the
input and says why (wrong shape, wrong type, unreadable file).

Images are normalized the way the model's TFLITE_METADATA says (``NormalizationOptions``:
``real = (pixel - mean) / std``), else with a guess: for a quantized input, the mean and
std that map pixels 0..255 onto the real range its quantization can represent; for a
float input, [-1, 1] (mean 127.5, std 127.5).  A quantized input is then quantized with
the tensor's own scale and zero point (round half to even, clamped to the type's range).
"""
from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..model import Model
from .budget import DEFAULT_MAX_ALLOCATION_BYTES
from .inputs import InputError, InputSpec, check_input, check_input_bytes, fill, seeded_inputs


@dataclass(frozen=True)
class ImageLayout:
    """Where height, width and channels are in an image input."""

    height: int
    width: int
    channels: int
    channels_first: bool
    batch: bool


def image_layout(spec: InputSpec) -> ImageLayout | None:
    """NHWC / HWC (or NCHW when the last axis cannot be channels); None if not an image."""
    shape = tuple(int(d) for d in spec.shape)
    batch = len(shape) == 4
    dims = shape[1:] if batch else shape
    if len(dims) != 3 or (batch and shape[0] != 1):
        return None
    h, w, c = dims
    if c in (1, 2, 3, 4) and h > 4 and w > 4:
        return ImageLayout(h, w, c, False, batch)
    c, h, w = dims
    if c in (1, 3, 4) and h > 4 and w > 4:
        return ImageLayout(h, w, c, True, batch)
    return None


def _input_metadata(model: Model, spec: InputSpec) -> dict:
    try:
        md = model.tflite_metadata
    except Exception:  # noqa: BLE001 - unreadable metadata means none
        return {}
    if not isinstance(md, dict):
        return {}
    sgs = md.get("subgraph_metadata") or []
    if not 0 <= spec.subgraph < len(sgs):
        return {}
    metas = (sgs[spec.subgraph] or {}).get("input_tensor_metadata") or []
    if not 0 <= spec.position < len(metas) or not isinstance(metas[spec.position], dict):
        return {}
    return metas[spec.position]


def metadata_normalization(model: Model, spec: InputSpec) -> tuple[list[float], list[float]] | None:
    """(mean, std) from the input's NormalizationOptions, or None."""
    for unit in _input_metadata(model, spec).get("process_units") or []:
        opts = (unit or {}).get("options") or {}
        if opts.get("type") == "NormalizationOptions" and opts.get("mean") and opts.get("std"):
            return [float(v) for v in opts["mean"]], [float(v) for v in opts["std"]]
    return None


def metadata_sample_rate(model: Model, spec: InputSpec) -> int | None:
    """The sample rate TFLITE_METADATA gives an audio input, or None."""
    props = _input_metadata(model, spec).get("content", {}) or {}
    props = props.get("content_properties") or {}
    rate = props.get("sample_rate") if isinstance(props, dict) else None
    return int(rate) if isinstance(rate, (int, float)) and rate > 0 else None


def _quantization(model: Model, spec: InputSpec) -> tuple[float, int] | None:
    q = model.subgraphs[spec.subgraph].tensors[spec.tensor].quantization
    if q is None or not q.has_scale or spec.dtype is None or spec.dtype.kind not in "iu":
        return None
    zp = int(q.zero_point[0]) if q.zero_point.size else 0
    return float(q.scale[0]), zp


def normalization(model: Model, spec: InputSpec) -> tuple[list[float], list[float], str]:
    """(mean, std, where they come from) for an image input: the metadata's, else a guess
    (see the module docstring)."""
    found = metadata_normalization(model, spec)
    if found is not None:
        return found[0], found[1], "model metadata"
    q = _quantization(model, spec)
    if q is not None:
        scale, zp = q
        info = np.iinfo(spec.dtype)
        lo, hi = (info.min - zp) * scale, (info.max - zp) * scale
        std = 255.0 / (hi - lo)
        return [-lo * std], [std], (f"guess: pixels 0..255 onto the quantized range "
                                    f"[{lo:.4g}, {hi:.4g}]")
    return [127.5], [127.5], "guess: pixels onto [-1, 1]"


def quantize(real: np.ndarray, scale: float, zero_point: int, dtype: np.dtype) -> np.ndarray:
    """Real values to a quantized integer type (round half to even, clamped)."""
    info = np.iinfo(dtype)
    q = np.round(real / scale) + zero_point
    return np.clip(q, info.min, info.max).astype(dtype)


def image_to_input(model: Model, spec: InputSpec, pixels: np.ndarray,
                   mean: list[float] | None = None, std: list[float] | None = None
                   ) -> np.ndarray:
    """An H x W x C uint8 image (already at the input's size and channel count) as the
    input's array: layout, normalization, type and quantization."""
    layout = image_layout(spec)
    if layout is None:
        raise InputError(f"input {spec.name!r} is {spec.describe()}: not an image input "
                         "(expected [1,] H x W x 1..4 or 1..4 x H x W)")
    px = np.asarray(pixels)
    if px.ndim == 2:
        px = px[..., None]
    want = (layout.height, layout.width, layout.channels)
    if px.shape != want:
        raise InputError(f"input {spec.name!r}: the image is {list(px.shape)} (H, W, C), "
                         f"the input needs {list(want)}")
    if mean is None or std is None:
        mean, std, _ = normalization(model, spec)
    m = np.asarray(mean, np.float64).ravel()
    s = np.asarray(std, np.float64).ravel()
    if np.any(s == 0):
        raise InputError(f"input {spec.name!r}: a normalization std of 0")
    if m.size not in (1, layout.channels) or s.size not in (1, layout.channels):
        raise InputError(f"input {spec.name!r}: {m.size} means and {s.size} stds for "
                         f"{layout.channels} channels")
    real = (px.astype(np.float64) - m) / s
    if layout.channels_first:
        real = np.moveaxis(real, -1, 0)
    if layout.batch:
        real = real[None]
    dtype = spec.dtype
    q = _quantization(model, spec)
    if q is not None:
        return quantize(real, q[0], q[1], dtype)
    if dtype is None or dtype.kind not in "fiu":
        raise InputError(f"input {spec.name!r} is {spec.type_name}: cannot hold an image")
    if dtype.kind in "iu":  # an unquantized integer image input takes the pixels as they are
        raw = np.moveaxis(px, -1, 0) if layout.channels_first else px
        info = np.iinfo(dtype)
        raw = np.clip(raw.astype(np.int64), info.min, info.max).astype(dtype)
        return raw[None] if layout.batch else raw
    return real.astype(dtype)


def random_input(model: Model, spec: InputSpec, kind: str = "uniform", seed: int = 0,
                 signature: str | None = None) -> np.ndarray:
    """Seeded random values valid for the input: "uniform" is what ``run`` generates
    (`seeded_inputs`); "normal" draws floats from N(0, 1) and keeps integers as uniform."""
    if kind == "uniform" or spec.dtype is None or spec.dtype.kind != "f":
        return seeded_inputs(model, seed, signature, names={spec.name})[spec.name]
    check_input_bytes([spec], DEFAULT_MAX_ALLOCATION_BYTES)
    rng = np.random.default_rng([int(seed) % (1 << 63), spec.subgraph, spec.tensor, 1])
    out = np.empty(tuple(max(int(d), 0) for d in spec.shape), spec.dtype)
    return fill(out, lambda n, r: rng.standard_normal((n, r)))  # (no float64 copy of it)


def constant_input(spec: InputSpec, value: Any = 0) -> np.ndarray:
    """The input filled with one value (stored units for integer inputs)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"input {spec.name!r}: {value!r} is not a number") from None
    if spec.dtype is None or spec.dtype == object:
        raise InputError(f"input {spec.name!r} is {spec.type_name}: no constant fill")
    shape = tuple(max(int(d), 0) for d in spec.shape)
    check_input_bytes([spec], DEFAULT_MAX_ALLOCATION_BYTES)
    if spec.dtype.kind in "iu":
        if v != int(v):
            raise InputError(f"input {spec.name!r} is {spec.type_name}: {value!r} is not an "
                             "integer")
        # checked and cast from a broadcast view: no int64 array of the input's size
        return check_input(spec, np.broadcast_to(np.array(int(v), np.int64), shape))
    return np.full(shape, v, spec.dtype)


def load_array(path: str | Path, spec: InputSpec) -> np.ndarray:
    """An input from a .npy file, or from an .npz archive (the array named like the input,
    or its only array); never unpickles."""
    path = Path(path)
    try:
        data = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"input {spec.name!r}: {path} does not exist") from None
    except Exception as exc:  # noqa: BLE001 - any unreadable file is one message
        raise InputError(f"input {spec.name!r}: cannot read {path.name}: {exc}") from None
    if isinstance(data, np.ndarray):
        return check_input(spec, data, path.name)
    with data:
        names = list(data.files)
        key = next((a for a in (spec.name, *spec.aliases) if a in names), None)
        if key is None and len(names) == 1:
            key = names[0]
        if key is None:
            raise InputError(f"input {spec.name!r}: {path.name} has arrays {names}, none named "
                             f"{spec.name!r} (or {', '.join(spec.aliases)})")
        try:
            arr = np.array(data[key])
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"input {spec.name!r}: cannot read {key!r} from {path.name}: "
                             f"{exc}") from None
    return check_input(spec, arr, f"{path.name}:{key}")


def wav_to_input(path: str | Path, spec: InputSpec, expected_rate: int | None = None
                 ) -> tuple[np.ndarray, list[str]]:
    """A PCM16 WAV file (first channel) as a 1-D or 2-D audio input: scaled to [-1, 1)
    for float inputs, kept as int16 for int16 inputs; cut or zero-padded to the input's
    length.  Returns the array and notes (a sample rate that differs from the metadata's
    is reported, never resampled)."""
    path = Path(path)
    try:
        with wave.open(str(path), "rb") as w:
            width, channels, rate = w.getsampwidth(), w.getnchannels(), w.getframerate()
            frames = w.readframes(w.getnframes())
    except FileNotFoundError:
        raise InputError(f"input {spec.name!r}: {path} does not exist") from None
    except (wave.Error, EOFError, OSError) as exc:
        raise InputError(f"input {spec.name!r}: {path.name} is not a readable WAV file "
                         f"({exc})") from None
    if width != 2:
        raise InputError(f"input {spec.name!r}: {path.name} has {8 * width}-bit samples; "
                         "only 16-bit PCM is read")
    samples = np.frombuffer(frames, "<i2").reshape(-1, channels)[:, 0]
    shape = tuple(int(d) for d in spec.shape)
    if len(shape) not in (1, 2) or (len(shape) == 2 and 1 not in shape):
        raise InputError(f"input {spec.name!r} is {spec.describe()}: not a 1-D or [1, N] / "
                         "[N, 1] audio input")
    n = int(np.prod(shape))
    notes = []
    if expected_rate is not None and rate != expected_rate:
        notes.append(f"{path.name} is sampled at {rate} Hz; the model expects {expected_rate} "
                     "Hz (not resampled)")
    if samples.size != n:
        notes.append(f"{path.name} has {samples.size} samples; the input takes {n} "
                     f"({'cut' if samples.size > n else 'zero-padded'})")
    buf = np.zeros(n, np.int16)
    buf[:min(n, samples.size)] = samples[:n]
    dtype = spec.dtype
    if dtype == np.int16:
        return buf.reshape(shape), notes
    if dtype is None or dtype.kind != "f":
        raise InputError(f"input {spec.name!r} is {spec.type_name}: audio goes into float or "
                         "int16 inputs")
    return (buf.astype(np.float64) / 32768.0).astype(dtype).reshape(shape), notes
