"""Weights as the kernels read them: left in the mapped file, and anything derived from
them (unpacked sub-byte values, converted copies) kept within a memory budget.

A model's constants are numpy views on the mapped file (`model.Tensor.data`): nothing is
read until a kernel computes with them, and then the operating system pages them in and
out as it does for LiteRT.  What a kernel derives from a weight costs memory of its own,
and a decoder's weights are most of its file, so derived copies are bounded:

* **Sub-byte constants** (INT4, INT2, UINT4) stay packed.  `PackedConstant.data` unpacks
  them when a kernel asks and keeps the unpacked array while the interpreter's
  `WeightCache` has room; past it every read unpacks again (and the array is freed after
  use).  Kernels that can read the packed bytes do so a block of rows at a time
  (`PackedConstant.rows`): blockwise FULLY_CONNECTED unpacks the rows it is multiplying,
  EMBEDDING_LOOKUP the rows it looks up.
* **Converted copies** kernels keep between invokes (the hybrid FULLY_CONNECTED's float
  copies of its int8 weights, which make a recurrent loop fast) are kept only when
  `WeightCache.reserve` grants their size; otherwise the kernel computes from the mapped
  weights a block of rows at a time, with the same arithmetic and the same result.
* Float weights are never copied: a transposed product reads them in place.

The budget is `DEFAULT_WEIGHT_CACHE_BYTES` (64 MiB) per interpreter, first come first
served, nothing evicted; ``Interpreter(model, weight_cache_bytes=N)`` sets another (0:
keep nothing).  A model whose derived weights fit (every model of the test corpus) runs as
fast as with unbounded caches; a multi-gigabyte decoder stays near the size of its file
(docs/MEMORY.md gives the figures).
"""
from __future__ import annotations

from typing import Any, Callable, Hashable

import numpy as np

from ..model import dtypes
from .tensor import Tensor

#: bytes of derived weights an interpreter keeps between invokes (see the module docstring)
DEFAULT_WEIGHT_CACHE_BYTES = 64 << 20


class WeightCache:
    """Derived weights kept within ``budget`` bytes, first come first served."""

    def __init__(self, budget: int = DEFAULT_WEIGHT_CACHE_BYTES) -> None:
        self.budget = max(0, int(budget))
        self.used = 0
        self._kept: dict[Hashable, Any] = {}
        self._reserved: dict[Hashable, int] = {}

    def get(self, key: Hashable, nbytes: int, build: Callable[[], Any]) -> Any:
        """The value kept under ``key``, else ``build()`` (kept when ``nbytes`` fit)."""
        hit = self._kept.get(key)
        if hit is not None:
            return hit
        value = build()
        if self.used + nbytes <= self.budget:
            self._kept[key] = value
            self.used += nbytes
        return value

    def reserve(self, key: Hashable, nbytes: int) -> bool:
        """Room for ``nbytes`` a kernel keeps itself under ``key`` (True again for a key
        already granted; False when they do not fit: the kernel then keeps nothing)."""
        if key in self._reserved:
            return True
        if self.used + nbytes > self.budget:
            return False
        self._reserved[key] = nbytes
        self.used += nbytes
        return True

    def release(self, key: Hashable) -> None:
        self.used -= self._reserved.pop(key, 0)


_DATA = Tensor.data  # the slot: PackedConstant keeps an explicitly set value there


class PackedConstant(Tensor):
    """A constant of a sub-byte type, left packed in the file (see the module docstring)."""

    __slots__ = ("cache", "bits", "signed", "_raw")

    def __init__(self, index: int, model_tensor, cache: WeightCache) -> None:
        self.cache = cache
        super().__init__(index, model_tensor)
        info = dtypes.type_info(self.type)
        self.bits, self.signed = info.bits, info.values.kind == "i"
        self._raw = model_tensor.packed_values()  # checks the stored size, reads nothing

    def _decodes_lazily(self) -> bool:
        return True

    @property
    def data(self) -> np.ndarray | None:  # type: ignore[override]
        value = _DATA.__get__(self, Tensor)
        if value is not None:
            return value
        return self.cache.get(self, self.unpacked_nbytes, self._unpack)

    @data.setter
    def data(self, value) -> None:
        _DATA.__set__(self, value)

    @property
    def has_data(self) -> bool:
        return True

    @property
    def unpacked_nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape is not None else 0

    def _unpack(self) -> np.ndarray:
        count = self.unpacked_nbytes
        values = dtypes.unpack_subbyte(self._raw, self.bits, count, self.signed)
        values = values.reshape(self.model_tensor.shape)
        values.flags.writeable = False
        return values

    @property
    def raw(self) -> np.ndarray:
        """The packed bytes: a read-only view on the mapped file."""
        return self._raw

    def row_aligned(self) -> bool:
        """Whether every row of this 2-D (or higher) constant starts on a byte."""
        shape = self.model_tensor.shape
        return len(shape) >= 2 and (int(np.prod(shape[1:])) * self.bits) % 8 == 0

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` (along the first dimension) unpacked (`row_aligned` only)."""
        shape = self.model_tensor.shape
        per_row = int(np.prod(shape[1:], dtype=np.int64))
        row_bytes = per_row * self.bits // 8
        packed = self._raw[start * row_bytes:stop * row_bytes]
        values = dtypes.unpack_subbyte(packed, self.bits, (stop - start) * per_row,
                                       self.signed)
        return values.reshape((stop - start,) + tuple(shape[1:]))


def make_tensor(index: int, model_tensor, cache: WeightCache) -> Tensor:
    """The runtime tensor of a model tensor: a `PackedConstant` for a dense sub-byte
    constant, else a plain `Tensor`."""
    info = dtypes.type_info(model_tensor.type)
    if 0 < info.bits < 8 and not model_tensor.is_variable and model_tensor.sparsity is None \
            and model_tensor.raw_bytes() is not None:
        return PackedConstant(index, model_tensor, cache)
    return Tensor(index, model_tensor)


def packed_rows(tensor: Tensor) -> bool:
    """Whether a kernel can read ``tensor``'s rows from its packed bytes (`rows`)."""
    return isinstance(tensor, PackedConstant) and tensor.row_aligned()


def rows_reader(tensor: Tensor, values: np.ndarray | None = None
                ) -> Callable[[int, int], np.ndarray]:
    """A function giving rows ``start:stop`` of a constant's values: unpacked from the
    packed bytes for a row-aligned `PackedConstant`, else slices of ``values`` (or of its
    data)."""
    if values is None and packed_rows(tensor):
        return tensor.rows
    data = tensor.data if values is None else values
    return lambda start, stop: data[start:stop]
