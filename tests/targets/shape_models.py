"""Models whose shapes are computed at run time, as converters write them, for the checks
of TFLite Micro's "computes into the stored shape" verdicts.

* `flatten`: Keras's Flatten with a dynamic batch, ``RESHAPE(x, PACK(STRIDED_SLICE(
  SHAPE(x), 0, 1), -1))`` (float32, and int16 activations as the cnn16x8 hold-out model);
* `transpose_conv`: Keras's Conv2DTranspose with a dynamic batch, its output shape
  ``PACK(STRIDED_SLICE(SHAPE(x), 0, 1), 8, 8, 4)`` (float32 and int8, as resnetish);
* `reshape_from_input`: the new shape is a model input (it truly depends on run-time data);
* `reshape_stored_wrong`: the values give [1, 48] but the file stores [2, 24].

The batch is -1 in each input's ``shape_signature`` and stored as 1, as the TensorFlow
converter stores it.  Built with the test model builder (tests/interpreter/singleop.py).
"""
from __future__ import annotations

import flatbuffers
import numpy as np

from tests.interpreter.singleop import Op, graph_model
from tflite_viewer.schema import schema_generated as S

F32, I8, I16, I32 = np.float32, np.int8, np.int16, np.int32


def with_signatures(model: bytes, signatures: dict[int, tuple[int, ...]]) -> bytes:
    """``model`` with these tensors of subgraph 0 given a shape_signature."""
    m = S.ModelT.InitFromPackedBuf(model, 0)
    for t, sig in signatures.items():
        m.subgraphs[0].tensors[t].shapeSignature = list(sig)
    builder = flatbuffers.Builder(0)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _batch_of(x: int) -> tuple[list, list[Op]]:
    """Tensors x+1.. and the ops computing x's batch as a scalar (tensor x + 5)."""
    t = [((4,), I32), (np.array([0], I32),), (np.array([1], I32),), (np.array([1], I32),),
         ((), I32)]
    ops = [Op("SHAPE", [x], [x + 1], "ShapeOptions", {"out_type": "INT32"}),
           Op("STRIDED_SLICE", [x + 1, x + 2, x + 3, x + 4], [x + 5], "StridedSliceOptions",
              {"shrink_axis_mask": 1})]
    return t, ops


def flatten(dtype=F32) -> bytes:
    """x [1, 4, 4, 3] (batch -1) -> RESHAPE to [batch, -1] = [1, 48]."""
    q = ((0.001, 0),) if dtype == I16 else ()
    t = [((1, 4, 4, 3), dtype, *q)]
    extra, ops = _batch_of(0)
    t += extra + [(np.array(-1, I32),), ((2,), I32), ((1, 48), dtype, *q)]
    ops += [Op("PACK", [5, 6], [7], "PackOptions", {"values_count": 2, "axis": 0}),
            Op("RESHAPE", [0, 7], [8])]
    return with_signatures(graph_model(t, ops, [0], [8]), {0: (-1, 4, 4, 3), 8: (-1, 48)})


def transpose_conv(dtype=F32) -> bytes:
    """x [1, 4, 4, 2] (batch -1) -> TRANSPOSE_CONV (stride 2, SAME) to [batch, 8, 8, 4]."""
    rng = np.random.default_rng(7)
    if dtype == F32:
        w = (rng.standard_normal((4, 3, 3, 2)) * 0.5).astype(F32)
        tw, tx, tb = (w,), ((1, 4, 4, 2), F32), (rng.standard_normal(4).astype(F32),)
        ty = ((1, 8, 8, 4), F32)
    else:
        scales = np.array([0.02, 0.03, 0.01, 0.04], F32)
        w = rng.integers(-100, 100, (4, 3, 3, 2)).astype(I8)
        tw = (w, (scales, np.zeros(4, np.int64), 0))
        tx = ((1, 4, 4, 2), I8, (0.05, 0))
        tb = (rng.integers(-500, 500, 4).astype(I32),
              (scales * 0.05, np.zeros(4, np.int64), 0))
        ty = ((1, 8, 8, 4), I8, (0.1, 3))
    t = [tx]
    extra, ops = _batch_of(0)
    t += extra + [(np.array(8, I32),), (np.array(4, I32),), ((4,), I32), tw, tb, ty]
    ops += [Op("PACK", [5, 6, 6, 7], [8], "PackOptions", {"values_count": 4, "axis": 0}),
            Op("TRANSPOSE_CONV", [8, 9, 0, 10], [11], "TransposeConvOptions",
               {"padding": "SAME", "stride_w": 2, "stride_h": 2}, version=3)]
    return with_signatures(graph_model(t, ops, [0], [11]),
                           {0: (-1, 4, 4, 2), 11: (-1, 8, 8, 4)})


def reshape_from_input() -> bytes:
    """RESHAPE(x [1, 4, 4, 3], shape) with ``shape`` an INT32 [2] model input: the output
    stored as [1, 48]."""
    t = [((1, 4, 4, 3), F32), ((2,), I32), ((1, 48), F32)]
    return graph_model(t, [Op("RESHAPE", [0, 1], [2])], [0, 1], [2])


def reshape_stored_wrong() -> bytes:
    """`flatten`, its output stored as [2, 24] where the values give [1, 48]."""
    m = S.ModelT.InitFromPackedBuf(flatten(), 0)
    out = m.subgraphs[0].tensors[m.subgraphs[0].outputs[0]]
    out.shape, out.shapeSignature = [2, 24], None
    builder = flatbuffers.Builder(0)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


#: the models TFLM runs as LiteRT does, although their shapes are computed at run time
RUN_RIGHT = {"flatten_float": lambda: flatten(F32), "flatten_int16": lambda: flatten(I16),
             "transpose_conv_float": lambda: transpose_conv(F32),
             "transpose_conv_int8": lambda: transpose_conv(I8)}
