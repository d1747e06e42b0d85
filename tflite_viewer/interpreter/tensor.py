"""Runtime tensors, shaped like TFLite's TfLiteTensor.

A runtime tensor has a type, a shape (dims), quantization, and an allocation type that says
where its data lives:

* ``MMAP_RO``: a constant; ``data`` is a read-only numpy view on the model file (from
  `tflite_viewer.model.Tensor.data()`), never copied; a sub-byte constant stays packed and
  is unpacked when read (`weights.PackedConstant`).
* ``ARENA_RW``: an activation whose shape is known after prepare; written by its producer.
* ``DYNAMIC``: an activation whose shape depends on values and is set when its producer
  runs (TFLite's kTfLiteDynamic).
* ``PERSISTENT``: a variable tensor (``is_variable``: e.g. LSTM state) that keeps its value
  across invocations until `Interpreter.reset_variables()`.

Kernels never write into an input array: they build new arrays and hand them to
`Subgraph.set_output`, so a snapshot or a read-only constant can never be clobbered.
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING

import numpy as np

from ..model import dtypes
from ..model.errors import ModelFormatError

if TYPE_CHECKING:
    from ..model import Quantization, Sparsity
    from ..model import Tensor as ModelTensor

# TensorType codes the kernels dispatch on.
FLOAT32, FLOAT16, INT32, UINT8, INT64, STRING, BOOL, INT16, COMPLEX64, INT8, FLOAT64 = (
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
COMPLEX128, UINT64, RESOURCE, VARIANT, UINT32, UINT16, INT4 = 11, 12, 13, 14, 15, 16, 17
INT2 = 19
QUANTIZED_INT_TYPES = frozenset({UINT8, INT8, INT16, INT4, INT2})


class AllocationType(enum.Enum):
    MMAP_RO = "kTfLiteMmapRo"
    ARENA_RW = "kTfLiteArenaRw"
    DYNAMIC = "kTfLiteDynamic"
    PERSISTENT = "kTfLiteArenaRwPersistent"


class Tensor:
    """One tensor of a runtime subgraph (see the module docstring for allocation types)."""

    __slots__ = ("index", "name", "type", "dtype", "_shape", "shape_signature", "quantization",
                 "sparsity", "allocation_type", "data", "is_variable", "model_tensor",
                 "_initial", "consumers")

    def __init__(self, index: int, model_tensor: ModelTensor) -> None:
        self.index = index
        self.model_tensor = model_tensor
        self.name: str = model_tensor.name
        self.type: int = model_tensor.type
        self.dtype: np.dtype | None = dtypes.numpy_dtype(self.type)
        if self.type == RESOURCE:
            self.dtype = np.dtype(np.int32)  # a resource handle is an id, as in TFLite
        self._shape: tuple[int, ...] | None = tuple(model_tensor.shape)
        if any(d < 0 for d in self._shape):  # before data() or a kernel sees the shape
            raise ModelFormatError(f"{model_tensor.where}.shape", f"negative dimension in "
                                   f"{list(self._shape)} (tensor {model_tensor.name!r})")
        self.shape_signature = model_tensor.shape_signature
        self.quantization: Quantization | None = model_tensor.quantization
        self.sparsity: Sparsity | None = model_tensor.sparsity
        self.is_variable: bool = model_tensor.is_variable
        self.data: np.ndarray | None = None
        self._initial: np.ndarray | None = None
        #: the nodes that read this tensor: a shape change marks them ``shapes_dirty``
        #: (the executor re-checks their prepare then, and only then)
        self.consumers: list = []
        constant = model_tensor.raw_bytes()
        if constant is None and model_tensor.empty_buffer_constant():
            constant = model_tensor.data()  # no stored byte (all blocks zero, no element)
        if constant is not None and not self.is_variable:
            self.allocation_type = AllocationType.MMAP_RO
            if not self._decodes_lazily():
                self.data = model_tensor.data()
        elif self.is_variable:
            self.allocation_type = AllocationType.PERSISTENT
            self._initial = model_tensor.data() if constant is not None else None
        else:
            self.allocation_type = AllocationType.ARENA_RW

    @property
    def has_data(self) -> bool:
        """Whether the tensor holds a value (a packed constant's is not decoded to say so)."""
        return self.data is not None

    def _decodes_lazily(self) -> bool:
        """Whether the constant's values are decoded when first read rather than here
        (`weights.PackedConstant`: sub-byte constants stay packed)."""
        return False

    def __repr__(self) -> str:
        tname = dtypes.type_name(self.type)
        shape = "?" if self.shape is None else list(self.shape)
        return f"<runtime Tensor {self.index} {self.name!r} {tname}{shape} {self.allocation_type.name}>"

    @property
    def shape(self) -> tuple[int, ...] | None:
        """The dims (None while unknown: a dynamic tensor before its producer ran)."""
        return self._shape

    @shape.setter
    def shape(self, value) -> None:
        old = self._shape
        self._shape = value
        if value is None or old is None or tuple(value) != old:
            for node in self.consumers:
                node.shapes_dirty = True

    # -- description -----------------------------------------------------------------------
    @property
    def type_name(self) -> str:
        return dtypes.type_name(self.type)

    @property
    def is_constant(self) -> bool:
        return self.allocation_type is AllocationType.MMAP_RO

    @property
    def is_dynamic(self) -> bool:
        return self.allocation_type is AllocationType.DYNAMIC

    @property
    def is_quantized_int(self) -> bool:
        """An integer tensor that holds quantized values (what float kernels cannot take)."""
        return self.type in QUANTIZED_INT_TYPES

    @property
    def nbytes(self) -> int:
        """Bytes the prepared shape needs (0 while the shape is unknown)."""
        if self.shape is None or self.dtype is None:
            return 0
        n = 1
        for d in self.shape:
            n *= max(int(d), 0)
        return n * self.dtype.itemsize

    # -- state -----------------------------------------------------------------------------
    def reset_variable(self) -> None:
        """Give a variable tensor its initial value (the stored one, else zeros/zero point)."""
        if not self.is_variable or self.shape is None or self.dtype is None:
            return
        if self._initial is not None:
            initial = np.array(self._initial, dtype=self.dtype)
            needed = int(np.prod(self.shape, dtype=np.int64))
            if initial.size != needed:
                raise ModelFormatError(f"tensors[{self.index}]",
                                       f"variable tensor {self.name!r}: its stored initial value "
                                       f"has {initial.size} elements, its shape "
                                       f"{list(self.shape)} needs {needed}")
            self.data = initial.reshape(self.shape)
            return
        zp = 0
        q = self.quantization
        if q is not None and q.zero_point.size:
            zp = int(q.zero_point[0])
        if self.dtype.kind in "iu" and not np.iinfo(self.dtype).min <= zp <= np.iinfo(self.dtype).max:
            raise ModelFormatError(f"tensors[{self.index}]",
                                   f"variable tensor {self.name!r}: zero point {zp} is outside "
                                   f"the range of its type {self.type_name}")
        self.data = np.full(self.shape, zp, dtype=self.dtype)

    def snapshot(self) -> np.ndarray | None:
        """A copy of the current value (None when not computed in this run)."""
        return None if self.data is None else np.array(self.data, copy=True)
