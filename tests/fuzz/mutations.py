"""Structural mutations of real models, made through the project's own object tree and writer.

Each mutation takes the editable tree of a corpus model (`tflite_viewer.edit.unpack`) and
a `random.Random`, changes one thing a hostile or broken file could hold, and returns a
description (None when the model has nothing it applies to).  `mutate` applies a list of
them and serializes with `tflite_viewer.edit.writer.serialize`, so the bytes are a
structurally sound flatbuffer whose *content* is wrong: the reader's verifier passes it on
and every later layer has to cope.

The kinds follow issue 18's campaign (indices out of range, empty operator input/output
lists, mismatched per-channel scale and zero-point counts, NaN/zero/negative scales, huge
and negative dimensions, zero subgraphs, WHILE conditions that are always true, broken
sparsity, strings and metadata) and add more: wrong types, option values, op codes and
versions, subgraph calls and signatures, buffer sizes, byte-level damage.
"""
from __future__ import annotations

import pickle
import random
from collections.abc import Callable
from typing import Any

import numpy as np

from tflite_viewer.edit.tree import ModelTree, unpack
from tflite_viewer.edit.writer import serialize
from tflite_viewer.model import load_model
from tflite_viewer.schema import schema_generated as S

INT32_MAX = 2**31 - 1
#: dimensions and indices a hostile file would use
WILD_INTS = (-2**31, -7, -2, -1, 0, 1, 2, 3, 255, 65536, 2**20 + 1, 2**30, INT32_MAX)
WILD_FLOATS = (float("nan"), float("inf"), -float("inf"), 0.0, -0.0, -1.0, -1e-30, 1e-45,
               1e38, 3.4e38)

Mutation = Callable[[ModelTree, random.Random], "str | None"]
MUTATIONS: dict[str, Mutation] = {}


def mutation(fn: Mutation) -> Mutation:
    MUTATIONS[fn.__name__] = fn
    return fn


# -- picking things ------------------------------------------------------------------------
def _subgraphs(tree: ModelTree) -> list:
    return list(tree.model.subgraphs or [])


def _pick_op(tree: ModelTree, rng: random.Random, where: Callable[[Any], bool] = lambda op: True):
    ops = [(s, k, op) for s, sg in enumerate(_subgraphs(tree))
           for k, op in enumerate(sg.operators or []) if where(op)]
    return rng.choice(ops) if ops else None


def _pick_tensor(tree: ModelTree, rng: random.Random, where: Callable[[Any], bool] = lambda t: True):
    ts = [(s, k, t) for s, sg in enumerate(_subgraphs(tree))
          for k, t in enumerate(sg.tensors or []) if where(t)]
    return rng.choice(ts) if ts else None


def _ints(values) -> list[int]:
    return [] if values is None else [int(v) for v in values]


def _opname(tree: ModelTree, op) -> str:
    codes = tree.model.operatorCodes or []
    if not 0 <= op.opcodeIndex < len(codes):
        return "?"
    code = codes[op.opcodeIndex]
    number = max(code.builtinCode, code.deprecatedBuiltinCode)
    from tflite_viewer.model.opcodes import builtin_name
    return builtin_name(number) if number != 32 else (code.customCode or b"CUSTOM").decode(
        "utf-8", "replace")


def _add_buffer(tree: ModelTree, data: bytes) -> int:
    buf = S.BufferT()
    buf.data = np.frombuffer(bytes(data), dtype=np.uint8)
    tree.model.buffers = list(tree.model.buffers or []) + [buf]
    return len(tree.model.buffers) - 1


def _add_tensor(sg, type_: int, shape: list[int], buffer: int, name: str) -> int:
    t = S.TensorT()
    t.type, t.shape, t.buffer, t.name = type_, np.array(shape, np.int32), buffer, name.encode()
    sg.tensors = list(sg.tensors or []) + [t]
    return len(sg.tensors) - 1


# -- indices and lists ---------------------------------------------------------------------
@mutation
def tensor_index_out_of_range(tree, rng):
    picked = _pick_op(tree, rng, lambda op: len(_ints(op.inputs)) + len(_ints(op.outputs)) > 0)
    if picked is None:
        return None
    s, k, op = picked
    field = rng.choice([f for f in ("inputs", "outputs") if _ints(getattr(op, f))])
    values = _ints(getattr(op, field))
    i = rng.randrange(len(values))
    values[i] = rng.choice([len(tree.model.subgraphs[s].tensors or []), 900, INT32_MAX, -2, -2**31])
    setattr(op, field, np.array(values, np.int32))
    return f"subgraph {s} op {k} {field}[{i}] = {values[i]}"


@mutation
def empty_operator_inputs(tree, rng):
    picked = _pick_op(tree, rng, lambda op: len(_ints(op.inputs)) > 0)
    if picked is None:
        return None
    s, k, op = picked
    op.inputs = np.zeros(0, np.int32)
    return f"subgraph {s} op {k} ({_opname(tree, op)}) inputs = []"


@mutation
def empty_operator_outputs(tree, rng):
    picked = _pick_op(tree, rng, lambda op: len(_ints(op.outputs)) > 0)
    if picked is None:
        return None
    s, k, op = picked
    op.outputs = np.zeros(0, np.int32)
    return f"subgraph {s} op {k} ({_opname(tree, op)}) outputs = []"


@mutation
def operator_arity(tree, rng):
    """Drop, omit (-1), duplicate or append an input or output."""
    picked = _pick_op(tree, rng)
    if picked is None:
        return None
    s, k, op = picked
    field = rng.choice(("inputs", "outputs"))
    values = _ints(getattr(op, field))
    n_t = len(tree.model.subgraphs[s].tensors or [])
    how = rng.choice(("drop", "omit", "duplicate", "append"))
    if how in ("drop", "omit", "duplicate") and not values:
        how = "append"
    i = rng.randrange(len(values)) if values else 0
    if how == "drop":
        del values[i]
    elif how == "omit":
        values[i] = -1
    elif how == "duplicate":
        values.insert(i, values[i])
    else:
        values.append(rng.randrange(n_t) if n_t else -1)
    setattr(op, field, np.array(values, np.int32))
    return f"subgraph {s} op {k} ({_opname(tree, op)}) {field} {how} -> {values}"


@mutation
def subgraph_io(tree, rng):
    sgs = _subgraphs(tree)
    if not sgs:
        return None
    s = rng.randrange(len(sgs))
    sg = sgs[s]
    field = rng.choice(("inputs", "outputs"))
    n_t = len(sg.tensors or [])
    how = rng.choice(("empty", "index", "constant", "swap"))
    if how == "empty":
        setattr(sg, field, np.zeros(0, np.int32))
    elif how == "index":
        values = _ints(getattr(sg, field)) or [0]
        values[rng.randrange(len(values))] = rng.choice([n_t, -1, INT32_MAX])
        setattr(sg, field, np.array(values, np.int32))
    elif how == "constant":
        consts = [i for i, t in enumerate(sg.tensors or []) if t.buffer > 0]
        if not consts:
            return None
        values = _ints(getattr(sg, field)) + [rng.choice(consts)]
        setattr(sg, field, np.array(values, np.int32))
    else:
        other = "outputs" if field == "inputs" else "inputs"
        a, b = getattr(sg, field), getattr(sg, other)
        setattr(sg, field, b)
        setattr(sg, other, a)
    return f"subgraph {s} {field}: {how}"


@mutation
def zero_subgraphs(tree, rng):
    tree.model.subgraphs = []
    tree.model.signatureDefs = []
    return "no subgraphs"


@mutation
def duplicate_operator(tree, rng):
    """Two producers of one tensor, or an op running before its input exists."""
    picked = _pick_op(tree, rng)
    if picked is None:
        return None
    s, k, op = picked
    ops = list(tree.model.subgraphs[s].operators)
    import copy
    at = rng.randrange(len(ops) + 1)
    ops.insert(at, copy.copy(op))
    if rng.random() < 0.5:
        ops.reverse()
    tree.model.subgraphs[s].operators = ops
    return f"subgraph {s} op {k} copied to {at}"


# -- quantization --------------------------------------------------------------------------
def _quantized(t) -> bool:
    q = t.quantization
    return q is not None and q.scale is not None and len(q.scale) > 0


@mutation
def scale_zero_point_mismatch(tree, rng):
    picked = _pick_tensor(tree, rng, _quantized)
    if picked is None:
        return None
    s, k, t = picked
    q = t.quantization
    n = len(q.scale)
    m = rng.choice([x for x in (0 if n > 1 else 2, n + 1, max(n - 1, 2), 3) if x != n])
    if rng.random() < 0.5:
        q.zeroPoint = np.array([rng.choice((0, -128, 5))] * m, np.int64)
    else:
        q.scale = np.array([0.5] * max(m, 1), np.float32)
    return f"subgraph {s} tensor {k}: {len(q.scale)} scales, {len(q.zeroPoint)} zero points"


@mutation
def bad_scale(tree, rng):
    picked = _pick_tensor(tree, rng, _quantized)
    if picked is None:
        return None
    s, k, t = picked
    scale = np.array(t.quantization.scale, np.float32, copy=True)
    value = rng.choice((float("nan"), 0.0, -0.5, float("inf"), -float("inf"), 1e-45))
    scale[rng.randrange(scale.size)] = value
    t.quantization.scale = scale
    return f"subgraph {s} tensor {k}: scale {value}"


@mutation
def quantized_dimension(tree, rng):
    picked = _pick_tensor(tree, rng, _quantized)
    if picked is None:
        return None
    s, k, t = picked
    t.quantization.quantizedDimension = rng.choice((-1, 1, 3, 7, INT32_MAX))
    if rng.random() < 0.5:
        t.quantization.scale = np.array([0.1] * rng.choice((2, 3, 17)), np.float32)
        t.quantization.zeroPoint = np.zeros(len(t.quantization.scale), np.int64)
    return f"subgraph {s} tensor {k}: quantized_dimension {t.quantization.quantizedDimension}"


@mutation
def add_quantization(tree, rng):
    """Quantization parameters on a float tensor, or on an integer one that had none."""
    picked = _pick_tensor(tree, rng, lambda t: not _quantized(t))
    if picked is None:
        return None
    s, k, t = picked
    q = S.QuantizationParametersT()
    q.scale = np.array([rng.choice(WILD_FLOATS + (0.1,))], np.float32)
    q.zeroPoint = np.array([rng.choice((0, -128, 127, 2**40))], np.int64)
    q.min, q.max = np.array([rng.choice(WILD_FLOATS)], np.float32), np.array([1.0], np.float32)
    t.quantization = q
    return f"subgraph {s} tensor {k}: scale {q.scale[0]} zero point {q.zeroPoint[0]}"


# -- shapes and types ----------------------------------------------------------------------
@mutation
def huge_dimension(tree, rng):
    picked = _pick_tensor(tree, rng, lambda t: t.shape is not None and len(t.shape) > 0)
    if picked is None:
        return None
    s, k, t = picked
    shape = _ints(t.shape)
    shape[rng.randrange(len(shape))] = rng.choice((2**16, 2**20, 2**30, INT32_MAX))
    t.shape = np.array(shape, np.int32)
    return f"subgraph {s} tensor {k}: shape {shape}"


@mutation
def negative_dimension(tree, rng):
    picked = _pick_tensor(tree, rng)
    if picked is None:
        return None
    s, k, t = picked
    shape = _ints(t.shape) or [1]
    shape[rng.randrange(len(shape))] = rng.choice((-1, -3, -2**31))
    t.shape = np.array(shape, np.int32)
    if rng.random() < 0.5:
        t.isVariable = True  # issue 18: a variable tensor with a negative dimension
    return f"subgraph {s} tensor {k}: shape {shape} variable={t.isVariable}"


@mutation
def reshape_tensor(tree, rng):
    """Another rank or size: a constant that no longer matches its bytes, a kernel's input
    of the wrong rank."""
    picked = _pick_tensor(tree, rng)
    if picked is None:
        return None
    s, k, t = picked
    shape = [rng.choice((0, 1, 2, 3, 5, 8)) for _ in range(rng.choice((0, 1, 2, 3, 4, 5, 7)))]
    t.shape = np.array(shape, np.int32)
    if rng.random() < 0.3:
        t.shapeSignature = np.array([rng.choice((-1, 1, 2)) for _ in shape], np.int32)
    return f"subgraph {s} tensor {k}: shape {shape}"


@mutation
def tensor_type(tree, rng):
    picked = _pick_tensor(tree, rng)
    if picked is None:
        return None
    s, k, t = picked
    t.type = rng.choice(list(range(0, 20)) + [21, 99, 127])
    return f"subgraph {s} tensor {k}: type {t.type}"


@mutation
def variable_flag(tree, rng):
    picked = _pick_tensor(tree, rng)
    if picked is None:
        return None
    s, k, t = picked
    t.isVariable = not t.isVariable
    return f"subgraph {s} tensor {k}: is_variable {t.isVariable}"


# -- buffers, strings, sparsity, metadata ---------------------------------------------------
@mutation
def buffer_size(tree, rng):
    bufs = [i for i, b in enumerate(tree.model.buffers or []) if b.data is not None and len(b.data)]
    if not bufs:
        return None
    i = rng.choice(bufs)
    data = np.asarray(tree.model.buffers[i].data)
    n = rng.choice((0, 1, 3, data.size // 2, data.size - 1, data.size + 1, data.size * 2 + 5))
    tree.model.buffers[i].data = np.resize(data, n).astype(np.uint8)
    return f"buffer {i}: {data.size} -> {n} bytes"


@mutation
def buffer_reference(tree, rng):
    picked = _pick_tensor(tree, rng)
    if picked is None:
        return None
    s, k, t = picked
    n = len(tree.model.buffers or [])
    t.buffer = rng.choice((0, n, n + 5, INT32_MAX, rng.randrange(max(n, 1))))
    return f"subgraph {s} tensor {k}: buffer {t.buffer}"


def _string_buffer(rng: random.Random) -> bytes:
    """A string tensor's bytes (count, offsets, text) with one thing wrong."""
    count = rng.choice((0, 1, 2, 3, 1000, INT32_MAX))
    texts = [b"ab", b"cde", b"\xff\xfe"][:max(0, min(count, 3))]
    offsets = []
    pos = 4 * (len(texts) + 2)
    for tx in texts:
        offsets.append(pos)
        pos += len(tx)
    offsets.append(pos)
    how = rng.choice(("count", "decreasing", "past_end", "short", "fine"))
    if how == "decreasing" and len(offsets) > 1:
        offsets[0], offsets[-1] = offsets[-1], offsets[0]
    elif how == "past_end":
        offsets[-1] = pos + 4096
    head = np.array([count] + offsets, np.int64).astype(np.uint32).tobytes()
    data = head + b"".join(texts)
    return data[:rng.randrange(len(data) + 1)] if how == "short" else data


@mutation
def broken_strings(tree, rng):
    picked = _pick_tensor(tree, rng)
    if picked is None:
        return None
    s, k, t = picked
    t.type = 5  # STRING
    t.buffer = _add_buffer(tree, _string_buffer(rng))
    t.shape = np.array(rng.choice(([], [1], [2], [3], [7])), np.int32)
    return f"subgraph {s} tensor {k}: STRING constant {list(t.shape)}"


def _int32_vector(values) -> Any:
    v = S.Int32VectorT()
    v.values = np.array(values, np.int32)
    return v


@mutation
def broken_sparsity(tree, rng):
    sparse = _pick_tensor(tree, rng, lambda t: t.sparsity is not None)
    if sparse is None:  # make one: a constant that claims to be sparse
        sparse = _pick_tensor(tree, rng, lambda t: t.buffer > 0 and t.shape is not None
                              and len(t.shape) > 0)
        if sparse is None:
            return None
        s, k, t = sparse
        sp = S.SparsityParametersT()
        rank = len(t.shape)
        sp.traversalOrder = np.arange(rank, dtype=np.int32)
        dims = []
        for d in range(rank):
            dm = S.DimensionMetadataT()
            dm.format = d % 2
            dm.denseSize = int(t.shape[d])
            if dm.format == 1:
                dm.arraySegmentsType, dm.arraySegments = 1, _int32_vector([0, 1])
                dm.arrayIndicesType, dm.arrayIndices = 1, _int32_vector([0])
            dims.append(dm)
        sp.dimMetadata = dims
        t.sparsity = sp
        return f"subgraph {s} tensor {k}: made sparse"
    s, k, t = sparse
    sp = t.sparsity
    how = rng.choice(("order", "block", "segments", "indices", "dense", "dims"))
    if how == "order":
        sp.traversalOrder = np.array([rng.choice(WILD_INTS) for _ in _ints(sp.traversalOrder)] or [5],
                                     np.int32)
    elif how == "block":
        sp.blockMap = np.array([rng.choice((0, 1, 9, -1))], np.int32)
    elif how == "dims":
        sp.dimMetadata = (sp.dimMetadata or [])[:rng.randrange(len(sp.dimMetadata or []) + 1)]
    else:
        dms = sp.dimMetadata or []
        if not dms:
            return None
        dm = rng.choice(dms)
        if how == "dense":
            dm.denseSize = rng.choice(WILD_INTS)
        elif how == "segments":
            dm.arraySegmentsType = 1
            dm.arraySegments = _int32_vector([rng.choice(WILD_INTS) for _ in range(3)])
        else:
            dm.arrayIndicesType = 1
            dm.arrayIndices = _int32_vector([rng.choice(WILD_INTS) for _ in range(4)])
            dm.format = 1
    return f"subgraph {s} tensor {k}: sparsity {how}"


@mutation
def broken_metadata(tree, rng):
    entries = list(tree.model.metadata or [])
    how = rng.choice(("bytes", "truncate", "reference", "add"))
    if how == "add" or not entries:
        m = S.MetadataT()
        m.name = rng.choice((b"min_runtime_version", b"TFLITE_METADATA", b"CONVERSION_METADATA",
                             b"reduced_precision_support"))
        m.buffer = _add_buffer(tree, bytes(rng.randrange(256) for _ in range(rng.choice((0, 3, 8, 64)))))
        tree.model.metadata = entries + [m]
        return f"metadata {m.name!r}: random bytes"
    m = rng.choice(entries)
    if how == "reference":
        m.buffer = rng.choice((len(tree.model.buffers or []), INT32_MAX, 0))
        return f"metadata {m.name!r}: buffer {m.buffer}"
    buf = tree.model.buffers[m.buffer] if 0 <= m.buffer < len(tree.model.buffers or []) else None
    if buf is None or buf.data is None or not len(buf.data):
        return None
    data = np.array(buf.data, np.uint8, copy=True)
    if how == "truncate":
        data = data[:rng.randrange(data.size)]
    else:
        for _ in range(rng.choice((1, 4, 16))):
            data[rng.randrange(data.size)] = rng.randrange(256)
    buf.data = data
    return f"metadata {m.name!r}: {how}"


def _zip_bytes(rng: random.Random) -> bytes:
    """An associated-files archive as the TFLite metadata writer appends it: a label file,
    stored or deflated, and sometimes a second one."""
    import io
    import zipfile
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        how = rng.choice((zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED))
        zf.writestr("labels.txt", "\n".join(f"class_{i}" for i in range(rng.choice((3, 40)))),
                    compress_type=how)
        if rng.random() < 0.5:
            zf.writestr("vocab.txt", b"a b c\n" * 20, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _damage_zip(blob: bytearray, rng: random.Random) -> str:
    """One thing wrong with an archive's first member (or none): the signature, its data
    (a bad CRC or a broken deflate stream), its compression method, the encryption flag,
    its declared sizes, or the archive cut short."""
    how = rng.choice(("magic", "data", "method", "encrypted", "size", "truncate", "none"))
    if how == "magic":
        blob[0] ^= 0xFF
    elif how == "data":  # past the 30-byte local header and the name
        name_len = int.from_bytes(blob[26:28], "little")
        start = 30 + name_len
        for _ in range(rng.choice((1, 4))):
            blob[start + rng.randrange(8)] ^= 1 << rng.randrange(8)
    elif how in ("method", "encrypted", "size"):
        cd = blob.rfind(b"PK\x01\x02")
        targets = [(8, 10), (cd + 10, cd + 12)] if how == "method" else \
            [(6, 8), (cd + 8, cd + 10)] if how == "encrypted" else [(22, 26), (cd + 24, cd + 28)]
        value = {"method": rng.choice((1, 12, 14, 99)), "encrypted": 1,
                 "size": rng.choice((0, 1, 2**31, 2**32 - 1))}[how]
        for a, b in targets:
            blob[a:b] = int(value).to_bytes(b - a, "little")
    elif how == "truncate":
        cut = rng.randrange(1, len(blob))
        del blob[cut:]
    return how


@mutation
def associated_files(tree, rng):
    """An associated-files zip after the model (labels, vocabularies), often damaged: the
    reader lists and reads it, the writer moves it when the flatbuffer changes size."""
    from tflite_viewer.edit.tree import Appendix
    blob = bytearray(_zip_bytes(rng))
    how = _damage_zip(blob, rng)
    tree.appendix = Appendix(np.frombuffer(bytes(blob), np.uint8), 0)
    if rng.random() < 0.5:  # listed by a TFLITE_METADATA entry (bytes of no consequence)
        m = S.MetadataT()
        m.name = b"TFLITE_METADATA"
        m.buffer = _add_buffer(tree, bytes(rng.randrange(256) for _ in range(16)))
        tree.model.metadata = list(tree.model.metadata or []) + [m]
    return f"associated files zip: {how}"


def _make_csr(tree, rng):
    """A float32 constant of at most 4096 elements stored as valid sparsity metadata:
    DENSE levels over all but its last dimension, a SPARSE_CSR level storing every entry of
    the last (segments 0, n, 2n, ..., indices 0..n-1 per row); its buffer is unchanged."""
    def fits(t):
        shape = _ints(t.shape)
        return (t.buffer > 0 and t.type == 0 and shape and all(d > 0 for d in shape)
                and int(np.prod(shape)) <= 4096 and t.sparsity is None)
    picked = _pick_tensor(tree, rng, fits)
    if picked is None:
        return None
    s, k, t = picked
    shape = _ints(t.shape)
    rows, n = int(np.prod(shape[:-1])) if len(shape) > 1 else 1, shape[-1]
    sp = S.SparsityParametersT()
    sp.traversalOrder = np.arange(len(shape), dtype=np.int32)
    dims = []
    for d in shape[:-1]:
        dm = S.DimensionMetadataT()
        dm.format, dm.denseSize = 0, d
        dims.append(dm)
    dm = S.DimensionMetadataT()
    dm.format = 1
    dm.arraySegmentsType, dm.arraySegments = 1, _int32_vector(np.arange(rows + 1) * n)
    dm.arrayIndicesType, dm.arrayIndices = 1, _int32_vector(np.tile(np.arange(n), rows))
    sp.dimMetadata = dims + [dm]
    t.sparsity = sp
    return s, k, t


@mutation
def sparsity_shape(tree, rng):
    """Sparsity metadata that disagrees with the tensor's shape: a DENSE level of another
    size, CSR indices past the dimension, segments of the wrong count, a block that does
    not divide its dimension, a traversal order that mixes block and tensor dimensions."""
    picked = _pick_tensor(tree, rng, lambda t: t.sparsity is not None)
    if picked is None:  # store a constant as valid CSR first, then break it
        picked = _make_csr(tree, rng)
        if picked is None:
            return None
    s, k, t = picked
    sp = t.sparsity
    dms = list(sp.dimMetadata or [])
    rank = len(_ints(t.shape))
    # (segments below zero most often: they sent the old traversal to an IndexError or to a
    # 2**31-element index array)
    how = rng.choice(("dense_size", "index", "segments", "segments", "segments", "block",
                      "order", "shape"))
    if how == "dense_size" and dms:
        dm = rng.choice(dms)
        # wrapped to int32 as the file stores it (applied twice, -2**31 twice would not fit)
        size = int(dm.denseSize) + rng.choice((-1, 1, 7, -2**31))
        dm.format, dm.denseSize = 0, (size + 2**31) % 2**32 - 2**31
    elif how == "index":
        csr = [dm for dm in dms if dm.format == 1 and dm.arrayIndices is not None]
        if not csr:
            return None
        dm = rng.choice(csr)
        values = np.array(dm.arrayIndices.values, np.int64, copy=True)
        if values.size:
            values[rng.randrange(values.size)] = rng.choice((-1, 10**6, 2**31 - 1))
        dm.arrayIndicesType, dm.arrayIndices = 1, _int32_vector(values.astype(np.int32))
    elif how == "segments":
        csr = [dm for dm in dms if dm.format == 1 and dm.arraySegments is not None]
        if not csr:
            return None
        dm = rng.choice(csr)
        values = list(_ints(dm.arraySegments.values))
        change = rng.choice(("drop", "add", "negative", "negative", "swap", "shift", "shift"))
        if change == "shift":  # all below zero, still increasing: positions before index 0
            n_idx = len(_ints(dm.arrayIndices.values)) if dm.arrayIndices is not None else 0
            values = [v - n_idx - rng.choice((3, 1000)) for v in values]
        elif change == "drop" and values:
            values.pop()
        elif change == "add":
            values.append(values[-1] if values else 0)
        elif change == "negative" and values:
            values[0] = -2**31
        elif len(values) > 1:
            values[0], values[-1] = values[-1], values[0]
        dm.arraySegmentsType, dm.arraySegments = 1, _int32_vector(values)  # Int32Vector
        how = f"segments ({change})"
    elif how == "block":
        sp.blockMap = np.array([rng.randrange(max(rank, 1))], np.int32)
        sp.traversalOrder = np.arange(rank + 1, dtype=np.int32)
        dm = S.DimensionMetadataT()
        dm.format, dm.denseSize = 0, rng.choice((3, 5, 7, 0))
        sp.dimMetadata = dms[:rank] + [dm]
    elif how == "order" and rank:
        order = list(range(rank + len(_ints(sp.blockMap))))
        rng.shuffle(order)
        sp.traversalOrder = np.array(order, np.int32)
    else:
        shape = _ints(t.shape) or [1]
        shape[rng.randrange(len(shape))] += rng.choice((-1, 1, 3))
        t.shape = np.array(shape, np.int32)
    return f"subgraph {s} tensor {k}: sparsity vs shape: {how}"


#: the optional vectors of each table a hostile file may leave out (flatbuffers: absent,
#: not empty), reached through the object tree
_ABSENT = {"model": ("operatorCodes", "subgraphs", "buffers", "metadata", "signatureDefs",
                     "metadataBuffer"),
           "subgraph": ("operators", "inputs", "outputs", "tensors"),
           "operator": ("inputs", "outputs", "intermediates", "mutatingVariableInputs",
                        "customOptions"),
           "tensor": ("shape", "shapeSignature", "name")}


@mutation
def absent_vector(tree, rng):
    """An optional vector left out (absent, not empty): the reader's column readers and
    every view must treat it as empty or refuse it with a located error."""
    where = rng.choice(sorted(_ABSENT))
    field = rng.choice(_ABSENT[where])
    if where == "model":
        setattr(tree.model, field, None)
        return f"model.{field} absent"
    if where == "subgraph":
        sgs = _subgraphs(tree)
        if not sgs:
            return None
        for s in (range(len(sgs)) if rng.random() < 0.3 else [rng.randrange(len(sgs))]):
            setattr(sgs[s], field, None)
        return f"subgraph(s) {field} absent"
    if where == "operator":
        every = rng.random() < 0.3
        picked = _pick_op(tree, rng)
        if picked is None:
            return None
        ops = [op for sg in _subgraphs(tree) for op in sg.operators or []] if every else [picked[2]]
        for op in ops:
            setattr(op, field, None)
        return f"{'every operator' if every else f'operator {picked[:2]}'} {field} absent"
    picked = _pick_tensor(tree, rng)
    if picked is None:
        return None
    setattr(picked[2], field, None)
    return f"tensor {picked[:2]} {field} absent"


@mutation
def huge_input(tree, rng):
    """An entry input declared large: within the fuzzer's 64 MiB allocation limit (made,
    at the cost of its own bytes) or past it (refused before anything is allocated)."""
    sgs = _subgraphs(tree)
    if not sgs or not len(_ints(sgs[0].inputs)):
        return None
    inputs = _ints(sgs[0].inputs)
    t_index = rng.choice(inputs)
    if not 0 <= t_index < len(sgs[0].tensors or []):
        return None
    t = sgs[0].tensors[t_index]
    elements = rng.choice((2**21, 2**22 + 3, 2**23, 2**24 - 1, 2**25, 2**31 - 1))
    shape = rng.choice(([1, elements], [elements], [1, 2, elements // 2], [elements, 1]))
    t.shape = np.array(shape, np.int32)
    if rng.random() < 0.3:
        t.shapeSignature = np.array([-1] + shape[1:], np.int32)
    return f"subgraph 0 input tensor {t_index}: shape {shape}"


# -- operators: codes, versions, options, calls ---------------------------------------------
@mutation
def opcode(tree, rng):
    codes = tree.model.operatorCodes or []
    if not codes:
        return None
    how = rng.choice(("version", "builtin", "custom", "index"))
    if how == "index":
        picked = _pick_op(tree, rng)
        if picked is None:
            return None
        s, k, op = picked
        op.opcodeIndex = rng.choice((len(codes), len(codes) + 7, INT32_MAX))
        return f"subgraph {s} op {k}: opcode_index {op.opcodeIndex}"
    c = rng.choice(codes)
    if how == "version":
        c.version = rng.choice((0, -1, 99, INT32_MAX))
    elif how == "builtin":
        c.builtinCode = rng.choice((0, 2, 9, 127, 210, 1000, INT32_MAX))
        c.deprecatedBuiltinCode = min(c.builtinCode, 127)
    else:
        c.builtinCode, c.deprecatedBuiltinCode = 32, 32
        c.customCode = rng.choice((b"NoSuchOp", b"TFLite_Detection_PostProcess", b"", b"\xff"))
    return f"operator code: {how}"


def _option_fields(options) -> list[str]:
    return [k for k, v in vars(options).items()
            if isinstance(v, (int, float, bool, np.integer, np.floating)) and not k.endswith("Type")]


_INT_RANGES = {"Bool": (0, 1), "Byte": (-128, 127), "UByte": (0, 255), "Short": (-2**15, 2**15 - 1),
               "UShort": (0, 2**16 - 1), "Int": (-2**31, INT32_MAX), "UInt": (0, 2**32 - 1),
               "Long": (-2**63, 2**63 - 1), "ULong": (0, 2**64 - 1)}


def _int_range(table: str, attr: str) -> tuple[int, int]:
    """The values the schema's type for an options field can hold (enums are bytes)."""
    from tflite_viewer.edit.tree import attr_map, schema_fields
    by_attr = {a: f for f, a in attr_map(table).items()}
    field = schema_fields(table).get(by_attr.get(attr, ""))
    base = field["type"]["base"] if field else "Byte"
    return _INT_RANGES.get(base, (-128, 127))


@mutation
def option_value(tree, rng):
    picked = _pick_op(tree, rng, lambda op: op.builtinOptions is not None
                      and _option_fields(op.builtinOptions))
    if picked is None:
        return None
    s, k, op = picked
    field = rng.choice(_option_fields(op.builtinOptions))
    old = getattr(op.builtinOptions, field)
    if isinstance(old, bool):
        new: Any = not old
    elif isinstance(old, (float, np.floating)):
        new = rng.choice(WILD_FLOATS)
    else:
        lo, hi = _int_range(type(op.builtinOptions).__name__[:-1], field)
        new = rng.choice([v for v in (-1, 0, 2, 3, 5, 100, 127, 2**20, INT32_MAX) if lo <= v <= hi])
    setattr(op.builtinOptions, field, new)
    return f"subgraph {s} op {k} ({_opname(tree, op)}): {field} {old} -> {new}"


@mutation
def options_type(tree, rng):
    """Options of another op's type, or none where some are needed."""
    picked = _pick_op(tree, rng)
    if picked is None:
        return None
    s, k, op = picked
    if op.builtinOptions is not None and rng.random() < 0.5:
        op.builtinOptions, op.builtinOptionsType = None, 0
        return f"subgraph {s} op {k}: options removed"
    choice = rng.choice([("Conv2DOptions", 1), ("ReshapeOptions", 17), ("WhileOptions", 94),
                         ("SplitOptions", 35), ("ConcatenationOptions", 10)])
    cls = getattr(S, choice[0] + "T")
    opts = cls()
    for f in _option_fields(opts):
        setattr(opts, f, rng.choice((0, 1, 2, 5, 99)))
    op.builtinOptions, op.builtinOptionsType = opts, choice[1]
    return f"subgraph {s} op {k}: options {choice[0]}"


@mutation
def custom_options(tree, rng):
    picked = _pick_op(tree, rng)
    if picked is None:
        return None
    s, k, op = picked
    op.customOptions = np.frombuffer(bytes(rng.randrange(256) for _ in range(rng.choice((1, 5, 40)))),
                                     np.uint8)
    op.customOptionsFormat = 0
    return f"subgraph {s} op {k}: custom options garbage"


def _control_flow_ops(tree):
    return [(s, k, op) for s, sg in enumerate(_subgraphs(tree)) for k, op in
            enumerate(sg.operators or []) if isinstance(op.builtinOptions, (
                S.WhileOptionsT, S.IfOptionsT, S.CallOnceOptionsT))]


@mutation
def subgraph_call(tree, rng):
    """A WHILE/IF/CALL_ONCE calling a missing subgraph, its own, or a wrong-arity one."""
    ops = _control_flow_ops(tree)
    if not ops:
        return None
    s, k, op = rng.choice(ops)
    fields = [f for f in vars(op.builtinOptions) if f.endswith("SubgraphIndex")]
    field = rng.choice(fields)
    value = rng.choice((s, 0, len(tree.model.subgraphs), -1, INT32_MAX,
                        rng.randrange(len(tree.model.subgraphs))))
    setattr(op.builtinOptions, field, value)
    return f"subgraph {s} op {k}: {field} = {value}"


@mutation
def while_always_true(tree, rng):
    """Issue 18: a WHILE whose condition subgraph returns a constant true."""
    ops = [(s, k, op) for s, k, op in _control_flow_ops(tree)
           if isinstance(op.builtinOptions, S.WhileOptionsT)]
    if not ops:
        return None
    s, k, op = rng.choice(ops)
    cond = op.builtinOptions.condSubgraphIndex
    if not 0 <= cond < len(tree.model.subgraphs):
        return None
    sg = tree.model.subgraphs[cond]
    t = _add_tensor(sg, 6, [], _add_buffer(tree, b"\x01"), "always_true")  # BOOL
    sg.outputs = np.array([t], np.int32)
    return f"subgraph {s} op {k}: WHILE condition (subgraph {cond}) always true"


@mutation
def signature(tree, rng):
    sigs = tree.model.signatureDefs or []
    if not sigs:
        return None
    sig = rng.choice(sigs)
    how = rng.choice(("subgraph", "tensor", "empty", "duplicate"))
    if how == "subgraph":
        sig.subgraphIndex = rng.choice((len(tree.model.subgraphs or []), 2**32 - 1, 1, 0))
    elif how == "tensor" and sig.inputs:
        rng.choice(sig.inputs).tensorIndex = rng.choice((2**32 - 1, 10**6, 0))
    elif how == "duplicate" and sig.inputs:
        sig.inputs = list(sig.inputs) + [sig.inputs[0]]
    else:
        sig.inputs, sig.outputs = [], []
    return f"signature {sig.signatureKey!r}: {how}"


# -- applying them -------------------------------------------------------------------------
_TREES: dict[bytes, bytes] = {}


def _fresh_tree(data: bytes) -> ModelTree:
    """A private copy of ``data``'s object tree.  Unpacking is the slowest part of a case,
    so each model is unpacked once and copied by a pickle round trip of that in-memory
    tree (four times faster than unpacking again; nothing read from a file is unpickled)."""
    frozen = _TREES.get(data)
    if frozen is None:
        frozen = _TREES[data] = pickle.dumps(unpack(load_model(data)), pickle.HIGHEST_PROTOCOL)
    return pickle.loads(frozen)


def mutate(data: bytes, steps: list[tuple[str, int]]) -> tuple[bytes, list[str]]:
    """The model ``data`` with each (mutation name, seed) applied in turn, re-serialized by
    the project's writer; the descriptions of the ones that applied."""
    tree = _fresh_tree(data)
    done = []
    for name, seed in steps:
        what = MUTATIONS[name](tree, random.Random(seed))
        if what is not None:
            done.append(f"{name}: {what}")
    return serialize(tree), done


def damage_bytes(data: bytes, seed: int) -> tuple[bytes, str]:
    """Byte-level damage of serialized bytes: a truncation, bit flips or a wild int32."""
    rng = random.Random(seed)
    buf = bytearray(data)
    how = rng.choice(("truncate", "flip", "int32"))
    if how == "truncate":
        n = rng.randrange(len(buf))
        return bytes(buf[:n]), f"truncated to {n} bytes"
    if how == "flip":
        for _ in range(rng.choice((1, 2, 8))):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        return bytes(buf), "bit flips"
    pos = rng.randrange(max(len(buf) - 4, 1)) & ~3
    buf[pos:pos + 4] = int(rng.choice(WILD_INTS)).to_bytes(4, "little", signed=True)
    return bytes(buf), f"int32 at {pos}"
