"""What the tensor inspector shows of a blockwise-quantized tensor, without Qt.

The schema's BlockwiseQuantization (LLM exports: INT4 weights of FULLY_CONNECTED and
EMBEDDING_LOOKUP) keeps one scale, and optionally one zero point, per block of
``block_size`` values along the last axis, in other tensors of the subgraph (FLOAT16
scales of shape ``shape[:-1] + (shape[-1] // block_size,)``).  The inspector shows the
block size, the scale tensor (a link), the scales as a grid (rows x blocks) with their
histogram, and one block's stored integers beside their dequantized values,
``(q - zero_point) * scale``, computed in float32 from the widened FLOAT16 scale as
LiteRT's kernels do.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import Tensor


@dataclass(frozen=True)
class BlockView:
    """A blockwise tensor laid out as rows x blocks (leading dimensions flattened)."""

    tensor: int
    shape: tuple[int, ...]
    block_size: int
    scales_tensor: int
    zero_points_tensor: int | None
    scales: np.ndarray              # float32 [rows, blocks]
    zero_points: np.ndarray | None  # int64 [rows, blocks]
    values: np.ndarray              # the stored integers, [rows, blocks, block_size]

    @property
    def rows(self) -> int:
        return int(self.scales.shape[0])

    @property
    def blocks(self) -> int:
        return int(self.scales.shape[1])

    def columns(self, block: int) -> range:
        """The indices along the last axis that block ``block`` covers."""
        return range(block * self.block_size, (block + 1) * self.block_size)

    def row_index(self, row: int) -> tuple[int, ...]:
        """The leading indices of flattened row ``row`` (``(r,)`` for a matrix)."""
        lead = self.shape[:-1]
        return tuple(int(i) for i in np.unravel_index(row, lead)) if lead else ()

    def block_values(self, row: int, block: int) -> np.ndarray:
        return self.values[row, block]

    def dequantized(self, row: int, block: int) -> np.ndarray:
        """``(q - zero_point) * scale`` of one block, float32."""
        q = self.values[row, block].astype(np.float32)
        if self.zero_points is not None:
            q = q - np.float32(self.zero_points[row, block])
        with np.errstate(all="ignore"):
            return q * np.float32(self.scales[row, block])


def block_view(t: Tensor) -> BlockView | str | None:
    """The `BlockView` of a blockwise-quantized constant; None for any other tensor; a
    sentence saying why when its parameters cannot be laid out (the Problems panel's spec
    checks say more)."""
    q = t.quantization
    details = q.details if q is not None else None
    if not details or details.get("type") != "BlockwiseQuantization":
        return None
    size = int(details.get("block_size") or 0)
    scales_i = int(details.get("scales") if details.get("scales") is not None else -1)
    zp = details.get("zero_points")
    zp_i = None if zp is None or int(zp) < 0 else int(zp)
    shape = tuple(int(d) for d in t.shape)
    tensors = t.subgraph.tensors
    if size <= 0 or not shape or shape[-1] % size:
        return f"block size {size} does not divide the last dimension of {list(shape)}"
    if not 0 <= scales_i < len(tensors) or (zp_i is not None and zp_i >= len(tensors)):
        return f"the scale or zero-point tensor index is out of range ({scales_i}, {zp_i})"
    values = t.values() if t.is_constant else None
    if values is None:
        return "the tensor holds no stored values"
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    blocks = shape[-1] // size
    scales = tensors[scales_i].values()
    if scales is None or scales.size != rows * blocks:
        return (f"tensor {scales_i} holds {0 if scales is None else scales.size} block "
                f"scales; {rows * blocks} are needed ({rows} rows x {blocks} blocks)")
    zps = None
    if zp_i is not None:
        z = tensors[zp_i].values()
        if z is None or z.size != rows * blocks:
            return f"tensor {zp_i} does not hold {rows * blocks} block zero points"
        zps = z.astype(np.int64).reshape(rows, blocks)
    return BlockView(t.index, shape, size, scales_i, zp_i,
                     scales.astype(np.float32).reshape(rows, blocks), zps,
                     np.asarray(values).reshape(rows, blocks, size))
