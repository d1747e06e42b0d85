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

from ...model import ModelFormatError, Tensor
from ...model.quantization import dequantize_blockwise


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
        """``(q - zero_point) * scale`` of one block, float32, by the reader's
        `dequantize_blockwise` (the whole tensor at once would be 4 bytes per weight)."""
        zp = None if self.zero_points is None else self.zero_points[row, block:block + 1]
        return dequantize_blockwise(self.values[row, block], self.scales[row, block:block + 1],
                                    zp, self.block_size)


def block_view(t: Tensor) -> BlockView | str | None:
    """The `BlockView` of a blockwise-quantized constant; None for any other tensor; a
    sentence saying why when its parameters cannot be laid out (the Problems panel's spec
    checks say more)."""
    q = t.quantization
    b = q.blockwise if q is not None else None
    if b is None:
        return None
    shape = tuple(int(d) for d in t.shape)
    size = b.block_size
    if size <= 0 or not shape or shape[-1] % size:
        return f"block size {size} does not divide the last dimension of {list(shape)}"
    try:
        scale_t, zp_t = t.block_tensors()
    except ModelFormatError as exc:
        return str(exc)
    values = t.values() if t.is_constant else None
    if values is None:
        return "the tensor holds no stored values"
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    blocks = shape[-1] // size
    scales = scale_t.values()
    if scales is None or scales.size != rows * blocks:
        return (f"tensor {scale_t.index} holds {0 if scales is None else scales.size} block "
                f"scales; {rows * blocks} are needed ({rows} rows x {blocks} blocks)")
    zps = None
    if zp_t is not None:
        z = zp_t.values()
        if z is None or z.size != rows * blocks:
            return f"tensor {zp_t.index} does not hold {rows * blocks} block zero points"
        zps = z.astype(np.int64).reshape(rows, blocks)
    return BlockView(t.index, shape, size, scale_t.index,
                     None if zp_t is None else zp_t.index,
                     scales.astype(np.float32).reshape(rows, blocks), zps,
                     np.asarray(values).reshape(rows, blocks, size))
