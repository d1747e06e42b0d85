"""Quantized data-movement ops (reshapes, gathers, slices, pads, splits, ...) through our
`Interpreter` against LiteRT, on uint8, int8 and int16 tensors.

These ops have no integer arithmetic: the quantized integers must come out exactly as
LiteRT moves them, with the output's quantization taken from the model.  Three questions:

* Equal input and output quantization (what the converter writes): hundreds of random
  shapes and parameters per op, every output bit-exact and of the same dtype.  Padding
  ops fill with the output zero point, which random zero points exercise.
* Different input and output quantization: LiteRT's kernels for most of these ops copy
  the raw integers anyway (no requantization, no check), and so must we; the kernels whose
  Prepare compares the parameters (`MUST_MATCH`) refuse the model in LiteRT, and we refuse
  it at load with an `UnsupportedOpError` naming the op and the mismatch.
* The op versions come from the project's own version rules (`edit.op_version`), so every
  model is one the converter could have written.

LiteRT 2.3.0's BUILTIN_REF resolver lacks two registrations that its default kernels have
(DEPTH_TO_SPACE v2 and TILE v3, the int8 versions): those two are compared against
BUILTIN_WITHOUT_DEFAULT_DELEGATES.  The models declare the output shapes our interpreter
computes (LiteRT checks the declared rank for SLICE, and keeps a declared one-element
shape for SELECT); LiteRT computes its own in Prepare, and the comparison includes them.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pytest

from tflite_viewer.edit.op_version import op_required_version
from tflite_viewer.schema import schema_generated as S


from .gen import rand_data, rand_q
from tests.interpreter.singleop import (Op, T, batch_model, random_strided_slice,
                                        run_batch_litert, run_batch_ours)


I32 = np.int32
DTYPES = (np.uint8, np.int8, np.int16)
CASES_PER_OP = 40  # per dtype

#: (op, dtype) pairs LiteRT 2.3.0 does not run at all (its Prepare rejects the type).
LITERT_UNSUPPORTED = {("SPACE_TO_DEPTH", np.int16), ("DEPTH_TO_SPACE", np.int16),
                      ("SCATTER_ND", np.int16)}
#: (op, dtype) pairs only LiteRT's default resolver registers (see the module docstring).
DEFAULT_RESOLVER_ONLY = {("DEPTH_TO_SPACE", np.int8), ("TILE", np.int8)}
#: Ops whose LiteRT Prepare requires input and output quantization to be equal.
MUST_MATCH = {"SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND", "PACK", "UNPACK", "MIRROR_PAD",
              "EXPAND_DIMS"}

Gen = Callable[[np.random.Generator, type, tuple, tuple], tuple[Op, list[np.ndarray]]]


# ------------------------------------------------------------------------------------------
# random cases, one generator per op: (rng, dtype, input quantization, output quantization)
# ------------------------------------------------------------------------------------------
def _shape(rng: np.random.Generator, rank: int | None = None, hi: int = 5) -> tuple[int, ...]:
    rank = int(rng.integers(1, 5)) if rank is None else rank
    return tuple(int(d) for d in rng.integers(1, hi + 1, rank))


def _out(dtype, oq, count: int = 1) -> list[T]:
    return [T((1,), dtype, *oq) for _ in range(count)]


def _reshape(rng, dtype, q, oq):
    shape = _shape(rng)
    new = list(rng.permutation(shape))
    if rng.random() < 0.5:
        new[int(rng.integers(len(new)))] = -1
    return (Op("RESHAPE", [T(shape, dtype, *q), T.const(np.array(new, I32))], _out(dtype, oq)),
            [rand_data(rng, shape, dtype)])


def _squeeze(rng, dtype, q, oq):
    shape = list(_shape(rng, hi=3))
    for _ in range(int(rng.integers(1, 3))):
        shape.insert(int(rng.integers(len(shape) + 1)), 1)
    ones = [i for i, d in enumerate(shape) if d == 1]
    dims = [int(d) for d in rng.choice(ones, int(rng.integers(0, len(ones) + 1)), replace=False)]
    return (Op("SQUEEZE", [T(shape, dtype, *q)], _out(dtype, oq), "SqueezeOptions",
               {"squeeze_dims": dims}), [rand_data(rng, shape, dtype)])


def _expand_dims(rng, dtype, q, oq):
    shape = _shape(rng, int(rng.integers(1, 4)))
    axis = int(rng.integers(-len(shape) - 1, len(shape) + 1))
    return (Op("EXPAND_DIMS", [T(shape, dtype, *q), T.const(np.array(axis, I32))],
               _out(dtype, oq)), [rand_data(rng, shape, dtype)])


def _transpose(rng, dtype, q, oq):
    shape = _shape(rng)
    perm = rng.permutation(len(shape)).astype(I32)
    return (Op("TRANSPOSE", [T(shape, dtype, *q), T.const(perm)], _out(dtype, oq)),
            [rand_data(rng, shape, dtype)])


def _gather(rng, dtype, q, oq):
    shape = _shape(rng)
    axis = int(rng.integers(-len(shape), len(shape)))
    idx_shape = _shape(rng, int(rng.integers(0, 3)), hi=4)
    idx = rng.integers(0, shape[axis], idx_shape).astype(I32)
    return (Op("GATHER", [T(shape, dtype, *q), T.const(idx)], _out(dtype, oq), "GatherOptions",
               {"axis": axis}), [rand_data(rng, shape, dtype)])


def _gather_nd(rng, dtype, q, oq):
    shape = _shape(rng)
    depth = int(rng.integers(1, len(shape) + 1))
    n = int(rng.integers(1, 5))
    idx = np.stack([rng.integers(0, shape[d], n) for d in range(depth)], axis=1).astype(I32)
    return (Op("GATHER_ND", [T(shape, dtype, *q), T.const(idx)], _out(dtype, oq)),
            [rand_data(rng, shape, dtype)])


def _strided_slice(rng, dtype, q, oq):
    shape = _shape(rng, 3, hi=6)
    begin, end, strides, opts = random_strided_slice(rng, shape)
    return (Op("STRIDED_SLICE", [T(shape, dtype, *q), T.const(np.array(begin, I32)),
                                 T.const(np.array(end, I32)), T.const(np.array(strides, I32))],
               _out(dtype, oq), "StridedSliceOptions", opts), [rand_data(rng, shape, dtype)])


def _slice(rng, dtype, q, oq):
    shape = _shape(rng)
    begin = [int(rng.integers(0, d)) for d in shape]
    size = [int(rng.integers(1, d - b + 1)) if rng.random() < 0.7 else -1
            for d, b in zip(shape, begin)]
    return (Op("SLICE", [T(shape, dtype, *q), T.const(np.array(begin, I32)),
                         T.const(np.array(size, I32))], _out(dtype, oq)),
            [rand_data(rng, shape, dtype)])


def _space_to_batch(rng, dtype, q, oq):
    block = rng.integers(1, 4, 2)
    pads = rng.integers(0, 3, (2, 2))
    hw = [int(block[i] * rng.integers(1, 4) - pads[i].sum()) for i in range(2)]
    for i in range(2):
        while hw[i] < 1:
            pads[i, 1] -= 1 if pads[i, 1] else 0
            hw[i] = int(block[i] * rng.integers(1, 4) - pads[i].sum())
    shape = (int(rng.integers(1, 3)), hw[0], hw[1], int(rng.integers(1, 4)))
    return (Op("SPACE_TO_BATCH_ND", [T(shape, dtype, *q), T.const(block.astype(I32)),
                                     T.const(pads.astype(I32))], _out(dtype, oq)),
            [rand_data(rng, shape, dtype)])


def _batch_to_space(rng, dtype, q, oq):
    block = rng.integers(1, 4, 2)
    h, w = (int(v) for v in rng.integers(1, 4, 2))
    crops = np.array([[rng.integers(0, block[0] * h) // 2, 0],
                      [0, rng.integers(0, block[1] * w) // 2]], I32)
    shape = (int(block.prod() * rng.integers(1, 3)), h, w, int(rng.integers(1, 4)))
    return (Op("BATCH_TO_SPACE_ND", [T(shape, dtype, *q), T.const(block.astype(I32)),
                                     T.const(crops)], _out(dtype, oq)),
            [rand_data(rng, shape, dtype)])


def _space_to_depth(rng, dtype, q, oq):
    b = int(rng.integers(1, 4))
    shape = (1, b * int(rng.integers(1, 4)), b * int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    return (Op("SPACE_TO_DEPTH", [T(shape, dtype, *q)], _out(dtype, oq), "SpaceToDepthOptions",
               {"block_size": b}), [rand_data(rng, shape, dtype)])


def _depth_to_space(rng, dtype, q, oq):
    b = int(rng.integers(1, 4))
    shape = (1, int(rng.integers(1, 4)), int(rng.integers(1, 4)), b * b * int(rng.integers(1, 3)))
    return (Op("DEPTH_TO_SPACE", [T(shape, dtype, *q)], _out(dtype, oq), "DepthToSpaceOptions",
               {"block_size": b}), [rand_data(rng, shape, dtype)])


def _pack(rng, dtype, q, oq):
    shape, n = _shape(rng, int(rng.integers(1, 4))), int(rng.integers(1, 4))
    axis = int(rng.integers(-len(shape) - 1, len(shape) + 1))
    return (Op("PACK", [T(shape, dtype, *q) for _ in range(n)], _out(dtype, oq), "PackOptions",
               {"axis": axis, "values_count": n}), [rand_data(rng, shape, dtype) for _ in range(n)])


def _unpack(rng, dtype, q, oq):
    shape = _shape(rng, int(rng.integers(1, 4)))
    axis = int(rng.integers(-len(shape), len(shape)))
    n = shape[axis]
    return (Op("UNPACK", [T(shape, dtype, *q)], _out(dtype, oq, n), "UnpackOptions",
               {"axis": axis, "num": n}), [rand_data(rng, shape, dtype)])


def _split(rng, dtype, q, oq):
    shape = list(_shape(rng, hi=3))
    axis = int(rng.integers(-len(shape), len(shape)))
    n = int(rng.integers(1, 4))
    shape[axis] *= n
    return (Op("SPLIT", [T.const(np.array(axis, I32)), T(shape, dtype, *q)], _out(dtype, oq, n),
               "SplitOptions", {"num_splits": n}), [rand_data(rng, shape, dtype)])


def _split_v(rng, dtype, q, oq):
    shape = _shape(rng, hi=6)
    axis = int(rng.integers(0, len(shape)))
    cuts = np.sort(rng.integers(0, shape[axis] + 1, int(rng.integers(0, 3))))
    sizes = np.diff(np.concatenate([[0], cuts, [shape[axis]]])).astype(I32)
    if rng.random() < 0.5:
        sizes[int(rng.integers(len(sizes)))] = -1
    return (Op("SPLIT_V", [T(shape, dtype, *q), T.const(sizes), T.const(np.array(axis, I32))],
               _out(dtype, oq, len(sizes)), "SplitVOptions", {"num_splits": len(sizes)}),
            [rand_data(rng, shape, dtype)])


def _tile(rng, dtype, q, oq):
    shape = _shape(rng, hi=3)
    mult = rng.integers(1, 4, len(shape)).astype(I32)
    return (Op("TILE", [T(shape, dtype, *q), T.const(mult)], _out(dtype, oq)),
            [rand_data(rng, shape, dtype)])


def _reverse(rng, dtype, q, oq):
    shape = _shape(rng)
    axis = np.array([int(rng.integers(0, len(shape)))], I32)
    return (Op("REVERSE_V2", [T(shape, dtype, *q), T.const(axis)], _out(dtype, oq)),
            [rand_data(rng, shape, dtype)])


def _mirror_pad(rng, dtype, q, oq):
    shape = _shape(rng, hi=4)
    mode = str(rng.choice(["REFLECT", "SYMMETRIC"]))
    most = [d - 1 if mode == "REFLECT" else d for d in shape]
    pads = np.array([[rng.integers(0, m + 1), rng.integers(0, m + 1)] for m in most], I32)
    return (Op("MIRROR_PAD", [T(shape, dtype, *q), T.const(pads)], _out(dtype, oq),
               "MirrorPadOptions", {"mode": mode}), [rand_data(rng, shape, dtype)])


def _pad(rng, dtype, q, oq):
    shape = _shape(rng)
    pads = rng.integers(0, 3, (len(shape), 2)).astype(I32)
    return (Op("PAD", [T(shape, dtype, *q), T.const(pads)], _out(dtype, oq)),
            [rand_data(rng, shape, dtype)])


def _padv2(rng, dtype, q, oq):
    op, x = _pad(rng, dtype, q, oq)
    value = T.const(rand_data(rng, (1,), dtype), *oq)  # LiteRT: the output's parameters
    return Op("PADV2", [op.inputs[0], op.inputs[1], value], op.outputs), x


def _broadcast_to(rng, dtype, q, oq):
    target = _shape(rng)
    k = int(rng.integers(1, len(target) + 1))
    shape = tuple(d if rng.random() < 0.5 else 1 for d in target[-k:])
    return (Op("BROADCAST_TO", [T(shape, dtype, *q), T.const(np.array(target, I32))],
               _out(dtype, oq)), [rand_data(rng, shape, dtype)])


def _select(rng, dtype, q, oq):
    shape = _shape(rng)
    cond = rng.random(shape) < 0.5
    return (Op("SELECT", [T(shape, np.bool_), T(shape, dtype, *q), T(shape, dtype, *q)],
               _out(dtype, oq)), [cond, rand_data(rng, shape, dtype), rand_data(rng, shape, dtype)])


def _select_v2(rng, dtype, q, oq):
    shape = _shape(rng)
    cshape = tuple(d if rng.random() < 0.5 else 1 for d in shape)
    yshape = shape[int(rng.integers(0, len(shape))):]
    return (Op("SELECT_V2", [T(cshape, np.bool_), T(shape, dtype, *q), T(yshape, dtype, *q)],
               _out(dtype, oq)),
            [rng.random(cshape) < 0.5, rand_data(rng, shape, dtype), rand_data(rng, yshape, dtype)])


def _topk(rng, dtype, q, oq):
    shape = _shape(rng, int(rng.integers(1, 3)), hi=8)
    k = int(rng.integers(1, shape[-1] + 1))
    # small value ranges make ties, where the order of equal values is the question
    x = rng.integers(-3, 4, shape).astype(dtype) if rng.random() < 0.5 else rand_data(rng, shape, dtype)
    return (Op("TOPK_V2", [T(shape, dtype, *q), T.const(np.array(k, I32))],
               [T((1,), dtype, *oq), T((1,), I32)]), [x])


def _scatter_nd(rng, dtype, q, oq):
    shape = _shape(rng, int(rng.integers(1, 4)))
    n = int(rng.integers(1, shape[0] + 1))
    rows = rng.choice(shape[0], n, replace=False).reshape(n, 1).astype(I32)
    upd = (n,) + shape[1:]
    return (Op("SCATTER_ND", [T.const(rows), T(upd, dtype, *q), T.const(np.array(shape, I32))],
               _out(dtype, oq)), [rand_data(rng, upd, dtype)])


def _dynamic_update_slice(rng, dtype, q, oq):
    shape = _shape(rng)
    upd = tuple(int(rng.integers(1, d + 1)) for d in shape)
    start = np.array([rng.integers(-1, d + 2) for d in shape], I32)  # clamped by both
    return (Op("DYNAMIC_UPDATE_SLICE", [T(shape, dtype, *q), T(upd, dtype, *q), T.const(start)],
               _out(dtype, oq)), [rand_data(rng, shape, dtype), rand_data(rng, upd, dtype)])


GENERATORS: dict[str, Gen] = {
    "RESHAPE": _reshape, "SQUEEZE": _squeeze, "EXPAND_DIMS": _expand_dims,
    "TRANSPOSE": _transpose, "GATHER": _gather, "GATHER_ND": _gather_nd,
    "STRIDED_SLICE": _strided_slice, "SLICE": _slice, "SPACE_TO_BATCH_ND": _space_to_batch,
    "BATCH_TO_SPACE_ND": _batch_to_space, "SPACE_TO_DEPTH": _space_to_depth,
    "DEPTH_TO_SPACE": _depth_to_space, "PACK": _pack, "UNPACK": _unpack, "SPLIT": _split,
    "SPLIT_V": _split_v, "TILE": _tile, "REVERSE_V2": _reverse, "MIRROR_PAD": _mirror_pad,
    "PAD": _pad, "PADV2": _padv2, "BROADCAST_TO": _broadcast_to, "SELECT": _select,
    "SELECT_V2": _select_v2, "TOPK_V2": _topk, "SCATTER_ND": _scatter_nd,
    "DYNAMIC_UPDATE_SLICE": _dynamic_update_slice,
}


def _versioned(op: Op) -> Op:
    """``op`` at the version the converter would give it (the project's version rules)."""
    model = S.ModelT.InitFromPackedBuf(batch_model([op]).model, 0)
    op.version = op_required_version(model, model.subgraphs[0], model.subgraphs[0].operators[0])
    return op


def _quant(rng, dtype) -> tuple[float, int]:
    return rand_q(rng, dtype)  # int16: zero point 0, as the int16x8 spec asks


def _resolver(name: str, dtype) -> str:
    return ("BUILTIN_WITHOUT_DEFAULT_DELEGATES" if (name, dtype) in DEFAULT_RESOLVER_ONLY
            else "BUILTIN_REF")


def _declare_output_shapes(ops: list[Op], inputs: list[list[np.ndarray]]) -> None:
    """Give every op's outputs the shapes our interpreter computes for them."""
    for op, outs in zip(ops, run_batch_ours(batch_model(ops), inputs)):
        for t, a in zip(op.outputs, outs):
            t.shape = a.shape


def _assert_same(name: str, ops: list[Op], inputs: list[list[np.ndarray]], resolver: str) -> int:
    _declare_output_shapes(ops, inputs)
    built = batch_model(ops)
    theirs, ours = run_batch_litert(built, inputs, resolver), run_batch_ours(built, inputs)
    for k, (op, t, o) in enumerate(zip(ops, theirs, ours)):
        assert len(o) == len(t)
        for j, (a, r) in enumerate(zip(o, t)):
            label = f"{name} case {k} output {j} ({op.options}, inputs {[x.shape for x in inputs[k]]})"
            assert a.dtype == r.dtype, f"{label}: dtype {a.dtype} != LiteRT {r.dtype}"
            assert a.shape == r.shape, f"{label}: shape {a.shape} != LiteRT {r.shape}"
            assert np.array_equal(a, r), f"{label}: {int((a != r).sum())}/{a.size} differ"
    return len(ops)


PAIRS = [(name, dt) for name in GENERATORS for dt in DTYPES if (name, dt) not in LITERT_UNSUPPORTED]


@pytest.mark.parametrize("name,dtype", PAIRS, ids=[f"{n}-{np.dtype(d).name}" for n, d in PAIRS])
def test_same_quantization_bit_exact(name, dtype):
    """Random cases with the converter's equal input/output quantization."""
    rng = np.random.default_rng([DTYPES.index(dtype), *name.encode()])
    ops, inputs = [], []
    for _ in range(CASES_PER_OP):
        q = _quant(rng, dtype)
        op, x = GENERATORS[name](rng, dtype, q, q)
        ops.append(_versioned(op))
        inputs.append(x)
    assert _assert_same(name, ops, inputs, _resolver(name, dtype)) == CASES_PER_OP


def _mismatched(rng, dtype) -> tuple[tuple[float, int], tuple[float, int]]:
    q = _quant(rng, dtype)
    scale, zp = _quant(rng, dtype)
    if dtype != np.int16:
        zp = (q[1] + 1 + int(rng.integers(0, 100))) % 256 + np.iinfo(dtype).min
    return q, (scale * 1.5 if scale == q[0] else scale, zp)


COPY_PAIRS = [(n, d) for n, d in PAIRS if n not in MUST_MATCH and n != "PADV2"]


@pytest.mark.parametrize("name,dtype", COPY_PAIRS,
                         ids=[f"{n}-{np.dtype(d).name}" for n, d in COPY_PAIRS])
def test_different_quantization_copies_integers_like_litert(name, dtype):
    """LiteRT moves the raw integers when the output's parameters differ (the values'
    meaning changes; that is the model's doing): so do we, and PAD fills with the output's
    zero point."""
    rng = np.random.default_rng([7, DTYPES.index(dtype), *name.encode()])
    ops, inputs = [], []
    for _ in range(8):
        q, oq = _mismatched(rng, dtype)
        op, x = GENERATORS[name](rng, dtype, q, oq)
        ops.append(_versioned(op))
        inputs.append(x)
    _assert_same(name, ops, inputs, _resolver(name, dtype))


MATCH_PAIRS = [(n, d) for n, d in PAIRS if n in MUST_MATCH or n == "PADV2"]


@pytest.mark.parametrize("name,dtype", MATCH_PAIRS,
                         ids=[f"{n}-{np.dtype(d).name}" for n, d in MATCH_PAIRS])
def test_different_quantization_refused_where_litert_refuses(name, dtype):
    """Where LiteRT's Prepare demands equal parameters (PADV2: the constant's and the
    output's: here the constant keeps the input's and only the output's change), LiteRT
    refuses the model and we refuse it at load, naming op and reason."""
    from tflite_viewer.interpreter import Interpreter, UnsupportedOpError

    rng = np.random.default_rng([11, DTYPES.index(dtype), *name.encode()])
    q, oq = _mismatched(rng, dtype)
    op, x = GENERATORS[name](rng, dtype, q, q)
    _declare_output_shapes([op], [x])  # a valid model but for the parameters
    for t in op.outputs:
        t.scale, t.zero_point = oq
    built = batch_model([_versioned(op)])
    with pytest.raises(RuntimeError, match=r"params\.(scale|zero_point)"):
        run_batch_litert(built, [x], _resolver(name, dtype))
    with pytest.raises(UnsupportedOpError) as err:
        Interpreter(built.model)
    msg = str(err.value)
    assert name in msg and "quantization" in msg and "op 0" in msg, msg


def test_int8_concatenation_needs_equal_parameters_int16_copies():
    """CONCATENATION: int8 inputs must share the output's parameters (LiteRT's Prepare);
    int16 ones (zero point 0) are copied whatever their scales; uint8 rescales (tested
    with the integer kernels)."""
    from tflite_viewer.interpreter import Interpreter, UnsupportedOpError

    rng = np.random.default_rng(5)
    a, b = rand_data(rng, (2, 3), np.int16), rand_data(rng, (4, 3), np.int16)
    op = Op("CONCATENATION", [T((2, 3), np.int16, 0.01, 0), T((4, 3), np.int16, 0.03, 0)],
            [T((6, 3), np.int16, 0.02, 0)], "ConcatenationOptions", {"axis": 0})
    _assert_same("CONCATENATION", [_versioned(op)], [[a, b]], "BUILTIN_REF")
    op = Op("CONCATENATION", [T((2, 3), np.int8, 0.01, 1), T((4, 3), np.int8, 0.03, 1)],
            [T((6, 3), np.int8, 0.02, 1)], "ConcatenationOptions", {"axis": 0})
    built = batch_model([_versioned(op)])
    with pytest.raises(RuntimeError):
        run_batch_litert(built, [[a.astype(np.int8), b.astype(np.int8)]])
    with pytest.raises(UnsupportedOpError, match="CONCATENATION.*quantization"):
        Interpreter(built.model)


@pytest.mark.parametrize("name", ["SELECT", "SELECT_V2"])
@pytest.mark.parametrize("declared", [(), (1,), (1, 1, 1)])
def test_select_keeps_a_declared_one_element_shape(name, declared):
    """LiteRT's select Prepare keeps the model's output shape when condition, operands and
    output each hold one element, whatever the broadcast shape would be."""
    rng = np.random.default_rng(len(declared))
    x, y = rand_data(rng, (1, 1), np.int8), rand_data(rng, (1, 1), np.int8)
    cond = np.array([[True]])
    op = Op(name, [T((1, 1), np.bool_), T((1, 1), np.int8, 0.1, 2), T((1, 1), np.int8, 0.1, 2)],
            [T(declared, np.int8, 0.1, 2)])
    built = batch_model([op])
    theirs, ours = run_batch_litert(built, [[cond, x, y]])[0][0], run_batch_ours(built, [[cond, x, y]])[0][0]
    assert theirs.shape == declared
    assert ours.shape == theirs.shape and np.array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_zeros_like_refuses_quantized_tensors_as_litert(dtype):
    """Raw integer zeros are not real zeros in a quantized tensor; LiteRT's ZEROS_LIKE
    refuses these types, and so do we, at load."""
    from tflite_viewer.interpreter import Interpreter, UnsupportedOpError

    x = rand_data(np.random.default_rng(3), (2, 3), dtype)
    built = batch_model([Op("ZEROS_LIKE", [T((2, 3), dtype, *_quant(np.random.default_rng(4), dtype))],
                            [T((2, 3), dtype, 0.1, 0)])])
    with pytest.raises(RuntimeError, match="ZerosLike"):
        run_batch_litert(built, [[x]])
    with pytest.raises(UnsupportedOpError, match="ZEROS_LIKE.*quantized"):
        Interpreter(built.model)
