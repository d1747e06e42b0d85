"""EMBEDDING_LOOKUP in every type LiteRT's kernel takes (tflite/kernels/embedding_lookup.cc).

Rows of a table [R, C, ...] picked by an INT32 vector of ids, in one of three ways, as
LiteRT's ``Eval`` chooses:

* **copy** (table and output of one type): the rows' bytes as they are, quantized or not
  (INT4/INT2 tables too, when a row is a whole number of bytes).
* **hybrid** (an UINT8, INT8, INT4 or INT2 table, FLOAT32 or FLOAT16 output): each value
  times the table's scale, one per tensor or one per row (per-channel on axis 0), in
  float32, then rounded to the output type.  LiteRT's ``EvalHybrid`` reads the table
  through an ``int8_t`` pointer whatever its type: an UINT8 value above 127 comes out
  negative (v - 256), and so it does here.  Sub-byte rows are unpacked from the byte holding
  their first value (``offset >> 1`` for INT4, ``>> 2`` for INT2), low bits first: when a
  row does not start on a byte (an odd row length of INT4) LiteRT reads it shifted by one
  value, and so does this kernel.  4-bit values are scaled as ``(v << 4) * (scale / 16)``
  and 2-bit ones as ``(v << 6) * (scale / 64)``, as LiteRT computes them (the same as
  ``v * scale`` except for subnormal scales).
* **blockwise** (INT4 or INT2 table [R, C] with `BlockwiseQuantization`, FLOAT32 or
  FLOAT16 output): one FLOAT16 scale per block of ``block_size`` values of a row, widened
  to float32 (``EvalBlockwise``).

What LiteRT refuses or computes without meaning is refused at load: a non-zero zero point
(LiteRT's kernel never subtracts one), a quantized table without a scale (LiteRT
multiplies by 0), a float or INT16/INT32 table with a different output type (LiteRT reads
its bytes as int8), per-row scales that are not one per row, blockwise scales that are
not FLOAT16 or not one per block.
"""
from __future__ import annotations

import numpy as np

from ...model import dtypes
from ..weights import PackedConstant
from .common import BuiltinOperator as Op, Kernel, declare, register

_HYBRID_TABLES = ("UINT8", "INT8", "INT4", "INT2")
_FLOAT_OUT = ("FLOAT32", "FLOAT16")
#: values per byte of the sub-byte types, and the shift that puts a value's bits at the
#: top of an int8 (LiteRT's Unpack4Bit / Unpack2Bit)
_PER_BYTE = {"INT4": 2, "INT2": 4}
_SHIFT = {"INT4": 4, "INT2": 6}


def _zero_points_nonzero(q) -> bool:
    return bool(q is not None and q.zero_point.size and np.any(q.zero_point != 0))


def _plan(ctx, node) -> tuple[str, str | None]:
    """(path, why not) of a node: "copy", "hybrid" or "blockwise", and the reason LiteRT's
    kernel would not compute it meaningfully (None when it does)."""
    ids, table, out = ctx.input(node, 0), ctx.input(node, 1), ctx.output(node, 0)
    head = f"EMBEDDING_LOOKUP v{node.version}"
    if ids.type_name != "INT32" or ids.shape is None or len(ids.shape) != 1:
        return "", f"{head}: the ids must be a 1-D INT32 tensor (LiteRT's Prepare refuses {ids.type_name}{list(ids.shape or ())})"
    if table.shape is None or len(table.shape) < 2:
        return "", f"{head}: the table must have at least 2 dimensions (LiteRT's Prepare refuses it)"
    t, o = table.type_name, out.type_name
    q = table.quantization
    tname = f"table (tensor {table.index} {table.name!r})"
    if q is not None and q.blockwise is not None:
        return "blockwise", _blockwise_problem(ctx, head, tname, table, out)
    if t == o or o not in _FLOAT_OUT:
        if t != o:
            return "", (f"{head}: {t} {tname} looked up into a {o} output; LiteRT copies "
                        "the rows' bytes unconverted")
        if q is not None and q.is_per_channel:
            return "", (f"{head}: per-row scales on a {t} {tname} copied into a {o} "
                        "output (LiteRT's Prepare wants a float output then)")
        per = _PER_BYTE.get(t)
        if per and int(np.prod(table.shape[1:], dtype=np.int64)) % per:
            return "", (f"{head}: {t} rows of {int(np.prod(table.shape[1:]))} values are not "
                        "whole bytes; LiteRT copies bytes/rows bytes per row")
        return "copy", None
    if t not in _HYBRID_TABLES:
        return "", (f"{head}: {t} {tname} with a {o} output; LiteRT reads the table's "
                    "bytes as int8 values times a scale it does not have")
    if q is None or not q.has_scale:
        return "", (f"{head}: {t} {tname} without a scale; LiteRT multiplies its values "
                    "by 0")
    if _zero_points_nonzero(q):
        return "", (f"{head}: {tname} has a non-zero zero point; LiteRT's kernel never "
                    "subtracts it (its Prepare refuses it for a FLOAT32 output)")
    if q.is_per_channel:
        rows = int(table.shape[0])
        if q.quantized_dimension != 0 or q.scale.size != rows:
            return "", (f"{head}: {q.scale.size} scales on dimension "
                        f"{q.quantized_dimension} of {tname} {list(table.shape)}; LiteRT "
                        "takes one scale per row (dimension 0)")
    return "hybrid", None


def _blockwise_problem(ctx, head, tname, table, out) -> str | None:
    b = table.quantization.blockwise
    t = table.type_name
    if t not in _PER_BYTE:
        return f"{head}: {t} blockwise {tname}; LiteRT's kernel takes INT4 and INT2 only"
    if out.type_name not in _FLOAT_OUT:
        return f"{head}: blockwise {tname} into a {out.type_name} output (FLOAT32 or FLOAT16 only)"
    if len(table.shape) != 2:
        return f"{head}: blockwise {tname} of rank {len(table.shape)}; LiteRT takes 2-D tables"
    rows, cols = (int(d) for d in table.shape)
    if b.block_size <= 0 or cols % b.block_size:
        return f"{head}: block size {b.block_size} does not divide the row length {cols}"
    if not 0 <= b.scales < len(ctx.tensors):
        return f"{head}: scale tensor index {b.scales} out of range"
    s = ctx.tensors[b.scales]
    need = rows * (cols // b.block_size)
    got = int(np.prod(s.shape, dtype=np.int64)) if s.shape is not None else -1
    if s.type_name != "FLOAT16" or not s.is_constant or got != need:
        return (f"{head}: scale tensor {s.index} of {tname} is {s.type_name}"
                f"{list(s.shape or ())}; LiteRT reads {need} constant FLOAT16 scales")
    if b.zero_points >= 0:
        zp = ctx.tensors[b.zero_points] if b.zero_points < len(ctx.tensors) else None
        if zp is None or not zp.is_constant or zp.data is None or np.any(zp.data != 0):
            return (f"{head}: non-zero block zero points of {tname}; LiteRT's kernel never "
                    "reads them")
    return None


def _check_ids(ids: np.ndarray, rows: int) -> None:
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= rows):
        bad = int(ids[(ids < 0) | (ids >= rows)][0])
        raise IndexError(f"EMBEDDING_LOOKUP id {bad} out of range [0, {rows})")


def _scaled(values: np.ndarray, scale: np.ndarray, type_name: str) -> np.ndarray:
    """float32 ``values * scale`` as LiteRT's unpackers compute it (see the module
    docstring); ``scale`` broadcasts against ``values``."""
    shift = _SHIFT.get(type_name)
    if shift is None:
        return values.astype(np.float32) * scale
    top = (values.astype(np.int32) << shift).astype(np.float32)  # the value's bits on top
    return top * (scale / np.float32(1 << shift))


def _rows(flat: np.ndarray, starts: np.ndarray, count: int, per: int) -> np.ndarray:
    """``count`` values from each element offset of ``starts``, read as LiteRT does from
    the byte holding the offset (`per` values per byte; 1: no rounding)."""
    first = starts - starts % per if per > 1 else starts
    return flat[first[:, None] + np.arange(count)]


def _packed_rows(packed: PackedConstant, starts: np.ndarray, count: int) -> np.ndarray:
    """`_rows` read from the packed bytes of a sub-byte table: only the bytes of the rows
    looked up are unpacked."""
    per = 8 // packed.bits
    raw = packed.raw
    nbytes = -(-count // per)
    first_byte = starts // per  # the byte holding each start (`_rows` reads from there)
    index = np.minimum(first_byte[:, None] + np.arange(nbytes), raw.size - 1)
    values = dtypes.unpack_subbyte(raw[index].reshape(-1), packed.bits, index.size * per,
                            packed.signed)
    return values.reshape(len(starts), nbytes * per)[:, :count]


def lookup(ids: np.ndarray, table: np.ndarray | PackedConstant, type_name: str, path: str,
           scales: np.ndarray | None, block_size: int, out_dtype) -> np.ndarray:
    """The looked-up rows (see the module docstring); ``scales`` are the per-tensor (1),
    per-row (R) or blockwise (R * blocks) scales as float32.  ``table`` is the values, or
    a sub-byte table left packed (`weights.PackedConstant`), whose looked-up rows alone
    are unpacked."""
    rows = table.shape[0]
    ids = np.asarray(ids).reshape(-1)
    _check_ids(ids, rows)
    packed = table if isinstance(table, PackedConstant) else None
    if packed is not None and path == "copy":
        table = packed.data
    if path == "copy":
        return table[ids]
    cols = int(np.prod(table.shape[1:], dtype=np.int64))
    per = _PER_BYTE.get(type_name, 1)
    if packed is not None:
        def read(starts, count):
            return _packed_rows(packed, starts, count)
    else:
        flat = table.reshape(-1)
        if type_name == "UINT8":
            flat = flat.view(np.int8)  # LiteRT's int8_t pointer on the table

        def read(starts, count):
            return _rows(flat, starts, count, per)
    starts = ids.astype(np.int64) * cols
    if path == "blockwise":
        blocks = cols // block_size
        bstarts = (starts[:, None] + np.arange(blocks) * block_size).reshape(-1)
        values = read(bstarts, block_size)
        sc = scales.reshape(rows, blocks)[ids].reshape(-1, 1)
        out = _scaled(values, sc, type_name).reshape(len(ids), cols)
    else:
        values = read(starts, cols)
        sc = scales[ids].reshape(-1, 1) if scales.size > 1 else scales.reshape(1, 1)
        out = _scaled(values, sc, type_name)
    return out.astype(out_dtype).reshape((len(ids),) + tuple(table.shape[1:]))


@register(Op.EMBEDDING_LOOKUP, versions=(1, 5))
class EmbeddingLookup(Kernel):
    """EMBEDDING_LOOKUP: row copies of any type; UINT8/INT8/INT4/INT2 tables with a scale
    per tensor or per row, and INT4/INT2 blockwise tables, into FLOAT32 or FLOAT16 rows
    (see the module docstring), bit-exact with LiteRT's builtin kernel."""

    types = "any"
    reads_scales = True
    accepts = declare({0: "INT32: none per-tensor",
                       1: "* INT4 INT2: none per-tensor | UINT8 INT8 INT4 INT2: per-channel:0 "
                          "| INT4 INT2: blockwise | FLOAT32: custom"},
                      outputs="* INT4 INT2: none per-tensor", multiplied=(1,))

    def check(self, ctx, node):
        return _plan(ctx, node)[1]

    def init(self, ctx, node):
        return {}

    def prepare(self, ctx, node):
        ids, table, out = ctx.input(node, 0), ctx.input(node, 1), ctx.output(node, 0)
        if ids.shape is None or len(ids.shape) != 1:
            raise ValueError(f"EMBEDDING_LOOKUP ids of shape {list(ids.shape or ())}: LiteRT "
                             "takes a 1-D INT32 tensor")
        ctx.resize(out, (ids.shape[0],) + tuple(table.shape[1:]))
        path, why = _plan(ctx, node)  # (again: a resized input may change the answer)
        if why is not None:
            raise ValueError(why)
        cache = node.user_data
        cache["path"] = path
        q = table.quantization
        if path == "blockwise":
            b = q.blockwise
            cache["scales"] = np.asarray(ctx.tensors[b.scales].data).astype(np.float32)
            cache["block"] = b.block_size
        elif path == "hybrid":
            cache["scales"] = np.asarray(q.scale, np.float32).reshape(-1)
            cache["block"] = 0

    def invoke(self, ctx, node):
        cache = node.user_data
        table = ctx.input(node, 1)
        out = ctx.output(node, 0)
        values = table if isinstance(table, PackedConstant) else ctx.value(node, 1)
        ctx.set_output(out, lookup(ctx.value(node, 0), values, table.type_name,
                                   cache["path"], cache.get("scales"), cache.get("block", 0),
                                   out.dtype))
