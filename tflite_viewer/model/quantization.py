"""Quantization parameters of a tensor, their form, and dequantization as LiteRT does it.

A tensor's quantization has one *form* (`Quantization.form`): ``none`` (no scale: a float,
or an integer that is just an integer), ``per-tensor`` (one scale and zero point),
``per-channel`` (a scale per index of ``quantized_dimension``), ``blockwise`` (the
schema's `BlockwiseQuantization` details: the scales live in another tensor of the
subgraph, FLOAT16, one per block of ``block_size`` values along the last dimension),
``custom`` (`CustomQuantization` bytes, meaningful only to the runtime that wrote them) or
``multi-axis`` (`MultiAxisQuantization`).  The interpreter's kernels declare which forms
they implement (interpreter/accepts.py); the reader dequantizes all but custom.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .errors import ModelFormatError


#: `Quantization.form` values, in the order reports list them
FORMS = ("none", "per-tensor", "per-channel", "blockwise", "custom", "multi-axis")
_DETAIL_FORMS = {"BlockwiseQuantization": "blockwise", "CustomQuantization": "custom",
                 "MultiAxisQuantization": "multi-axis"}


class Blockwise(NamedTuple):
    """BlockwiseQuantization details: tensor indices of the scales and zero points (-1:
    none) in the same subgraph, and the number of values per block."""

    scales: int
    zero_points: int
    block_size: int


@dataclass(frozen=True)
class Quantization:
    """A tensor's QuantizationParameters.

    ``scale`` and ``zero_point`` are zero-copy views on the file.  ``details`` holds the
    QuantizationDetails union as a dict (``{"type": "BlockwiseQuantization", ...}``; custom
    quantization keeps its bytes under ``"custom"``).
    """

    scale: np.ndarray
    zero_point: np.ndarray
    min: np.ndarray
    max: np.ndarray
    quantized_dimension: int
    details: dict[str, Any] | None = None

    @property
    def is_empty(self) -> bool:
        """True when the table is present but carries no parameters (common for floats)."""
        return (self.scale.size == 0 and self.zero_point.size == 0 and self.min.size == 0
                and self.max.size == 0 and self.details is None)

    @property
    def is_per_channel(self) -> bool:
        return self.scale.size > 1

    @property
    def form(self) -> str:
        """One of `FORMS`: what kind of parameters these are (details win over scales)."""
        if self.details is not None:
            return _DETAIL_FORMS.get(str(self.details.get("type")), "custom")
        if self.scale.size > 1:
            return "per-channel"
        return "per-tensor" if self.scale.size == 1 else "none"

    @property
    def blockwise(self) -> Blockwise | None:
        """The BlockwiseQuantization details, or None for any other form."""
        d = self.details
        if d is None or d.get("type") != "BlockwiseQuantization":
            return None
        zp = d.get("zero_points")
        return Blockwise(int(d.get("scales") or 0), -1 if zp is None else int(zp),
                         int(d.get("block_size") or 0))

    def describe(self, shape: tuple[int, ...] | None = None) -> str:
        """The form in words, for messages: ``per-channel on axis 0 (16 scales)``,
        ``blockwise (block 32, scales in tensor 7)``."""
        form = self.form
        if form == "per-channel":
            axis = self.effective_dimension(tuple(shape)) if shape is not None else None
            axis = self.quantized_dimension if axis is None else axis
            return f"per-channel on axis {axis} ({self.scale.size} scales)"
        if form == "blockwise":
            b = self.blockwise
            zp = "" if b.zero_points < 0 else f", zero points in tensor {b.zero_points}"
            return f"blockwise (block {b.block_size}, scales in tensor {b.scales}{zp})"
        if form == "per-tensor":
            return "per-tensor"
        if form == "none":
            return "no quantization parameters"
        return f"{form} quantization ({self.details.get('type')})"

    @property
    def has_scale(self) -> bool:
        return self.scale.size > 0

    def problems(self, shape: tuple[int, ...]) -> list[str]:
        """What is wrong with these parameters for a tensor of ``shape``: what LiteRT
        refuses at load (`load_problems`), then the scales it loads but that have no
        ordinary meaning (`scale_flaws`)."""
        return self.load_problems(shape) + [str(f) for f in self.scale_flaws()]

    def load_problems(self, shape: tuple[int, ...]) -> list[str]:
        """Why LiteRT 2.3.0 refuses these parameters for a tensor of ``shape`` when it loads
        the model (InterpreterBuilder::ParseQuantization, measured on the wheel): zero
        points that are not one per scale, a quantized_dimension outside the shape, a
        scale count that is neither 1 nor the size of that dimension."""
        out = []
        if self.zero_point.size and self.zero_point.size != self.scale.size:
            out.append(f"{self.scale.size} scales but {self.zero_point.size} zero points")
        if self.is_per_channel:
            qd = self.quantized_dimension
            if not 0 <= qd < len(shape):
                out.append(f"quantized_dimension must be in range [0, {len(shape)}). Was {qd}.")
            elif shape[qd] != self.scale.size:
                out.append(f"{self.scale.size} scales for dimension {qd} of size {shape[qd]}")
        elif self.quantized_dimension != 0 and not 0 <= self.quantized_dimension < max(len(shape), 1):
            out.append(f"quantized_dimension must be in range [0, {max(len(shape), 1)}). "
                       f"Was {self.quantized_dimension}.")
        return out

    def scale_flaws(self) -> list["ScaleFlaw"]:
        """The scales that are not finite and positive, by kind (non-finite, negative,
        zero; worst first).  LiteRT loads them: a kernel that multiplies stored values by
        the scale (a weight, a table, DEQUANTIZE) computes zeros from a zero scale, and
        the interpreter refuses them only at the kernels that would use them otherwise
        (interpreter/accepts.py, `check_scales`)."""
        scale = np.asarray(self.scale, dtype=np.float64).reshape(-1)
        if not scale.size:
            return []
        with np.errstate(invalid="ignore"):
            finite = np.isfinite(scale)
            masks = (("non-finite", ~finite), ("negative", finite & (scale < 0)),
                     ("zero", scale == 0))
        flaws = []
        for kind, mask in masks:
            hits = np.flatnonzero(mask)
            if hits.size:
                flaws.append(ScaleFlaw(kind, int(hits[0]), float(scale[hits[0]]),
                                       int(hits.size), int(scale.size)))
        return flaws

    def effective_dimension(self, shape: tuple[int, ...]) -> int | None:
        """The axis the per-channel scales apply to.

        An out-of-range quantized_dimension (person_detect.tflite's rank-1 biases say 3) is
        read as the only axis whose size equals the number of scales, which is what TFLite
        Micro, the runtime such models were made for, effectively does.
        """
        n = self.scale.size
        qd = self.quantized_dimension
        if 0 <= qd < len(shape):
            return qd if shape[qd] == n else None
        matches = [d for d, size in enumerate(shape) if size == n]
        return matches[0] if len(matches) == 1 else None

    def dequantize(self, values: np.ndarray, where: str = "quantization") -> np.ndarray:
        """(q - zero_point) * scale in double, as float32; per-channel along quantized_dimension.

        A single scale applies to the whole tensor whatever quantized_dimension says (that is
        how LiteRT's kernels treat it), so person_detect's out-of-range dimension is harmless.
        Parameters that do not fit the tensor (the reader lists them as findings at load)
        raise ModelFormatError naming ``where``; non-finite scales give non-finite values,
        silently (IEEE arithmetic, no RuntimeWarning).
        """
        if not self.has_scale:
            raise ModelFormatError(where, "tensor has no quantization scale")
        q = np.asarray(values).astype(np.float64)
        scale = self.scale.astype(np.float64)
        zp = (self.zero_point.astype(np.float64) if self.zero_point.size
              else np.zeros_like(scale))
        if zp.size != scale.size:
            raise ModelFormatError(where, f"{scale.size} scales but {zp.size} zero points")
        with np.errstate(all="ignore"):
            if self.scale.size == 1:
                return ((q - zp[0]) * scale[0]).astype(np.float32)
            qd = self.effective_dimension(q.shape)
            if qd is None:
                raise ModelFormatError(where, f"per-channel parameters ({scale.size} scales, "
                                       f"dimension {self.quantized_dimension}) do not fit a "
                                       f"tensor of shape {list(q.shape)}")
            bshape = [1] * q.ndim
            bshape[qd] = scale.size
            return ((q - zp.reshape(bshape)) * scale.reshape(bshape)).astype(np.float32)


class ScaleFlaw(NamedTuple):
    """Scales of one kind that are not finite and positive: ``kind`` ("non-finite",
    "negative" or "zero"), the first such scale (its ``index`` and ``value``), how many
    (``count``) of the ``total`` scales."""

    kind: str
    index: int
    value: float
    count: int
    total: int

    def __str__(self) -> str:
        what = {"non-finite": "a non-finite scale", "negative": "a negative scale",
                "zero": "a zero scale"}[self.kind]
        value = "" if self.kind == "zero" else f"{self.value:g}"
        if self.total == 1:
            return f"{what} ({value})" if value else what
        first = "channel" if self.count == 1 else "first: channel"
        return (f"{what} on {self.count} of {self.total} channels ({first} {self.index}"
                f"{', ' + value if value else ''})")


def dequantize_blockwise(values: np.ndarray, scales: np.ndarray,
                         zero_points: np.ndarray | None, block_size: int,
                         where: str = "quantization") -> np.ndarray:
    """(q - zero_point) * scale per block of ``block_size`` values along the last axis,
    computed in float32 from the (FLOAT16) scales widened exactly, as LiteRT's kernels
    (fully_connected.cc, embedding_lookup.cc) use them: ``scales`` has ``values``' shape
    with the last dimension divided by the block size.  Parameters that do not fit raise
    ModelFormatError naming ``where``."""
    q = np.asarray(values)
    if block_size <= 0 or q.ndim == 0 or q.shape[-1] % block_size:
        raise ModelFormatError(where, f"block size {block_size} does not divide the last "
                               f"dimension of shape {list(q.shape)}")
    blocks = q.shape[-1] // block_size
    want = q.shape[:-1] + (blocks,)
    s = np.asarray(scales)
    if s.size != int(np.prod(want, dtype=np.int64)):
        raise ModelFormatError(where, f"{s.size} block scales for a tensor of shape "
                               f"{list(q.shape)} in blocks of {block_size} "
                               f"({list(want)} needed)")
    s = s.astype(np.float32).reshape(want)[..., None]
    grouped = q.reshape(q.shape[:-1] + (blocks, block_size)).astype(np.float32)
    if zero_points is not None:
        zp = np.asarray(zero_points)
        if zp.size != s.size:
            raise ModelFormatError(where, f"{zp.size} block zero points for {s.size} scales")
        grouped = grouped - zp.astype(np.float32).reshape(want)[..., None]
    with np.errstate(all="ignore"):
        return (grouped * s).reshape(q.shape).astype(np.float32)
