"""Quantization parameters of a tensor and dequantization as LiteRT does it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ModelFormatError


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
    def has_scale(self) -> bool:
        return self.scale.size > 0

    def problems(self, shape: tuple[int, ...]) -> list[str]:
        """Why a runtime would refuse these parameters for a tensor of ``shape``."""
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
        if self.scale.size:
            finite = np.isfinite(self.scale)
            if not finite.all():
                out.append(f"non-finite scale {_first(self.scale[~finite])}")
            elif (self.scale <= 0).any():
                out.append(f"scale {_first(self.scale[self.scale <= 0])} is not positive")
        return out

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


def _first(values: np.ndarray) -> str:
    """The first of some bad values, as text (``nan``, ``-inf``, ``0``)."""
    return f"{float(values.reshape(-1)[0]):g}"
