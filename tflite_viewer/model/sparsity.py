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
        """The block size of each block dimension: the dense_size of the levels after the
        tensor's own (LiteRT's FormatConverter reads them there); call `validate` first."""
        return [self.dim_metadata[rank + j].dense_size for j in range(len(self.block_map))]

    def validate(self, shape: tuple[int, ...], values: int | None = None,
                 where: str = "") -> None:
        """Raise a `ModelFormatError` located at the offending field unless this metadata
        describes a tensor of ``shape`` (holding ``values`` stored values, when given).

        What LiteRT's verifier checks before it densifies: one level per dimension and per
        block dimension, a traversal order that permutes the tensor's dimensions and then
        the block dimensions, blocks that divide their dimension, DENSE levels as large as
        their dimension, and SPARSE_CSR levels whose segments start at 0, never decrease,
        end at the number of indices and have one more entry than the level above has
        positions, with every index inside its dimension.  Nothing is allocated: the
        traversal (`densify`) only reads what this has checked."""
        rank, nblocks, levels = len(shape), len(self.block_map), len(self.traversal_order)
        if any(d < 0 for d in shape):
            raise ModelFormatError(where, f"a sparse tensor of shape {list(shape)}: "
                                   "dimensions must be non-negative")
        if levels != rank + nblocks:
            raise ModelFormatError(f"{where}.traversal_order", f"{levels} levels for a rank-"
                                   f"{rank} tensor with {nblocks} block dimensions (block_map "
                                   f"{list(self.block_map)}): expected {rank + nblocks}")
        if len(self.dim_metadata) != levels:
            raise ModelFormatError(f"{where}.dim_metadata", f"{len(self.dim_metadata)} "
                                   f"entries for {levels} traversal levels")
        order = list(self.traversal_order)
        if sorted(order[:rank]) != list(range(rank)) or \
                sorted(order[rank:]) != list(range(rank, levels)):
            raise ModelFormatError(f"{where}.traversal_order", f"{order} is not a permutation "
                                   f"of the dimensions 0..{rank - 1} followed by one of the "
                                   f"block dimensions {rank}..{levels - 1}")
        for level, meta in enumerate(self.dim_metadata):
            if meta.format not in (DENSE, SPARSE_CSR):
                raise ModelFormatError(f"{where}.dim_metadata[{level}].format",
                                       f"{meta.format} is neither DENSE (0) nor SPARSE_CSR (1)")
        size = {d: int(n) for d, n in enumerate(shape)}  # each level's dimension size
        if len(set(self.block_map)) != nblocks:
            raise ModelFormatError(f"{where}.block_map", f"{list(self.block_map)} names a "
                                   "dimension twice")
        for j, dim in enumerate(self.block_map):
            block = self.dim_metadata[rank + j].dense_size
            if not 0 <= dim < rank:
                raise ModelFormatError(f"{where}.block_map[{j}]", f"dimension {dim} is "
                                       f"outside the rank-{rank} shape {list(shape)}")
            if self.dim_metadata[rank + j].format != DENSE or block <= 0 or shape[dim] % block:
                raise ModelFormatError(f"{where}.dim_metadata[{rank + j}]", f"block size "
                                       f"{block} of dimension {dim} (block_map[{j}]) must be "
                                       f"a DENSE level dividing its size {shape[dim]}")
            size[dim] = shape[dim] // block
            size[rank + j] = block
        positions = 1  # positions of the level above (the root has one)
        for level, meta in enumerate(self.dim_metadata):
            at = f"{where}.dim_metadata[{level}]"
            extent = size[order[level]]
            if meta.format == DENSE:
                if meta.dense_size != extent:
                    raise ModelFormatError(f"{at}.dense_size", f"{meta.dense_size}, but "
                                           f"dimension {order[level]} of the sparse tensor "
                                           f"has {extent} entries at this level")
                positions *= extent
                continue
            seg, idx = meta.array_segments, meta.array_indices
            if seg is None or idx is None:
                raise ModelFormatError(at, "a SPARSE_CSR level without "
                                       f"{'array_segments' if seg is None else 'array_indices'}")
            if seg.size != positions + 1:
                raise ModelFormatError(f"{at}.array_segments", f"{seg.size} entries; the "
                                       f"level above has {positions} positions, so "
                                       f"{positions + 1} are needed")
            seg = seg.astype(np.int64)
            if seg[0] != 0 or (np.diff(seg) < 0).any() or seg[-1] != idx.size:
                raise ModelFormatError(f"{at}.array_segments", "segments must start at 0, "
                                       f"never decrease and end at the {idx.size} indices "
                                       f"(they run {int(seg[0])}..{int(seg[-1])})")
            if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= extent):
                raise ModelFormatError(f"{at}.array_indices", f"indices "
                                       f"{int(idx.min())}..{int(idx.max())} outside dimension "
                                       f"{order[level]}'s {extent} entries")
            positions = int(idx.size)
        if values is not None and positions != values:
            raise ModelFormatError(where, f"sparsity describes {positions} stored values but "
                                   f"the buffer holds {values}")

    def densify(self, values: np.ndarray, shape: tuple[int, ...], where: str = "") -> np.ndarray:
        """The dense tensor of ``shape`` that these compressed ``values`` describe."""
        rank = len(shape)
        levels = len(self.traversal_order)
        # checked before the traversal allocates anything: the shape is untrusted, and the
        # index arrays of DENSE levels grow with the dense size
        nbytes = float(np.prod(shape, dtype=np.float64)) * values.dtype.itemsize
        if nbytes > MAX_DENSE_BYTES:
            raise ModelFormatError(where, f"shape {list(shape)} would densify to "
                                   f"{nbytes:,.0f} bytes, more than the {MAX_DENSE_BYTES:,} "
                                   "bytes a sparse constant may expand to here")
        self.validate(shape, values.size, where)
        block = self.block_sizes(rank)
        prev = np.zeros(1, dtype=np.int64)  # the positions of the level above
        coords = np.zeros((levels, 1), dtype=np.int64)
        for level in range(levels):
            dim = self.traversal_order[level]
            meta = self.dim_metadata[level]
            if meta.format == DENSE:
                size = meta.dense_size
                child = np.tile(np.arange(size, dtype=np.int64), prev.size)
                prev = np.repeat(prev, size) * size + child
                coords = np.repeat(coords, size, axis=1)
                coords[dim] = child
            else:
                seg = meta.array_segments.astype(np.int64)
                start, stop = seg[prev], seg[prev + 1]
                counts = stop - start
                total = int(counts.sum())
                offset = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts,
                                                                      counts)
                pos = np.repeat(start, counts) + offset
                coords = np.repeat(coords, counts, axis=1)
                coords[dim] = meta.array_indices.astype(np.int64)[pos]
                prev = pos
        orig = coords[:rank].copy()
        for j, dim in enumerate(self.block_map):
            orig[dim] = orig[dim] * block[j] + coords[rank + j]
        dense = np.zeros(shape, dtype=values.dtype)
        if rank:
            flat = np.ravel_multi_index(tuple(orig), shape) if values.size else np.zeros(0, int)
            dense.reshape(-1)[flat] = values.reshape(-1)
        elif values.size:
            dense[()] = values.reshape(-1)[0]
        return dense
