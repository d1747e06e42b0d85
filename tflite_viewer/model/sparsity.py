"""Sparse tensors: the schema's SparsityParameters and densification.

The walk follows TFLite's FormatConverter (sparsity format converter): levels in traversal
order, DENSE levels enumerate ``dense_size`` children, SPARSE_CSR levels take the children
``array_segments[p]..array_segments[p+1]`` with coordinates from ``array_indices``.  It is
done level by level with numpy (every path at once) rather than by recursion per element.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ModelFormatError

#: the largest dense array a sparse constant may expand to (its shape is untrusted: a
#: 20 KB file can claim [2147483647, 32])
MAX_DENSE_BYTES = 256 << 20

DENSE, SPARSE_CSR = 0, 1


@dataclass(frozen=True)
class DimensionMetadata:
    format: int  # DENSE or SPARSE_CSR
    dense_size: int
    array_segments: np.ndarray | None
    array_indices: np.ndarray | None

    @property
    def format_name(self) -> str:
        return {DENSE: "DENSE", SPARSE_CSR: "SPARSE_CSR"}.get(self.format, str(self.format))


@dataclass(frozen=True)
class Sparsity:
    traversal_order: tuple[int, ...]
    block_map: tuple[int, ...]
    dim_metadata: tuple[DimensionMetadata, ...]

    def block_sizes(self, rank: int) -> list[int]:
        return [self.dim_metadata[rank + j].dense_size for j in range(len(self.block_map))]

    def densify(self, values: np.ndarray, shape: tuple[int, ...], where: str = "") -> np.ndarray:
        """The dense tensor of ``shape`` that these compressed ``values`` describe."""
        rank = len(shape)
        nblocks = len(self.block_map)
        levels = len(self.traversal_order)
        if levels != rank + nblocks or len(self.dim_metadata) != levels:
            raise ModelFormatError(where, f"sparsity has {levels} traversal levels and "
                                   f"{len(self.dim_metadata)} dim_metadata for rank {rank} "
                                   f"with {nblocks} block dimensions")
        if sorted(self.traversal_order) != list(range(levels)):
            raise ModelFormatError(where, f"traversal_order {self.traversal_order} is not a "
                                   f"permutation of 0..{levels - 1}")
        block = self.block_sizes(rank)
        for j, dim in enumerate(self.block_map):
            if not 0 <= dim < rank or block[j] <= 0 or shape[dim] % block[j]:
                raise ModelFormatError(where, f"block_map[{j}] = {dim} with block size "
                                       f"{block[j]} does not divide shape {shape}")
        # checked before the traversal allocates anything: the shape is untrusted, and the
        # index arrays of DENSE levels grow with the dense size
        nbytes = float(np.prod(shape, dtype=np.float64)) * values.dtype.itemsize
        if nbytes > MAX_DENSE_BYTES:
            raise ModelFormatError(where, f"shape {list(shape)} would densify to "
                                   f"{nbytes:,.0f} bytes, more than the {MAX_DENSE_BYTES:,} "
                                   "bytes a sparse constant may expand to here")
        dense_count = int(np.prod(shape, dtype=np.int64))
        prev = np.zeros(1, dtype=np.int64)
        coords = np.zeros((levels, 1), dtype=np.int64)
        for level in range(levels):
            dim = self.traversal_order[level]
            meta = self.dim_metadata[level]
            if meta.format == DENSE:
                size = meta.dense_size
                if size < 0 or prev.size * max(size, 1) > max(dense_count, 1):
                    raise ModelFormatError(where, f"dim_metadata[{level}] dense_size {size} "
                                           "does not fit the tensor")
                child = np.tile(np.arange(size, dtype=np.int64), prev.size)
                prev = np.repeat(prev, size) * size + child
                coords = np.repeat(coords, size, axis=1)
                coords[dim] = child
            else:
                seg = meta.array_segments
                idx = meta.array_indices
                if seg is None or idx is None or seg.size < int(prev.max(initial=0)) + 2:
                    raise ModelFormatError(where, f"dim_metadata[{level}] SPARSE_CSR segments "
                                           "are missing or too short")
                seg = seg.astype(np.int64)
                start, stop = seg[prev], seg[prev + 1]
                counts = stop - start
                if (counts < 0).any() or stop.max(initial=0) > idx.size:
                    raise ModelFormatError(where, f"dim_metadata[{level}] segments are not "
                                           "increasing or point past the indices")
                total = int(counts.sum())
                offset = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts,
                                                                      counts)
                pos = np.repeat(start, counts) + offset
                coords = np.repeat(coords, counts, axis=1)
                coords[dim] = idx.astype(np.int64)[pos]
                prev = pos
        orig = coords[:rank].copy()
        for j, dim in enumerate(self.block_map):
            orig[dim] = orig[dim] * block[j] + coords[rank + j]
        for d in range(rank):
            if orig.shape[1] and (orig[d].min() < 0 or orig[d].max() >= shape[d]):
                raise ModelFormatError(where, f"sparse index out of range in dimension {d}")
        if orig.shape[1] != values.size:
            raise ModelFormatError(where, f"sparsity describes {orig.shape[1]} stored values "
                                   f"but the buffer holds {values.size}")
        dense = np.zeros(shape, dtype=values.dtype)
        if rank:
            flat = np.ravel_multi_index(tuple(orig), shape) if values.size else np.zeros(0, int)
            dense.reshape(-1)[flat] = values.reshape(-1)
        elif values.size:
            dense[()] = values.reshape(-1)[0]
        return dense
