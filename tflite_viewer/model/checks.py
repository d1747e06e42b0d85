"""Semantic checks of a structurally sound model: indices, sizes, and suspicious content.

Index errors are fatal (`ModelFormatError`): every later consumer (graph, interpreter)
would index out of range.  Things a runtime would refuse but that can still be shown —
person_detect.tflite's `quantized_dimension` outside its tensor's rank, a constant whose
bytes do not match its shape, a tensor with two producers — become `Finding`s the UI lists.

The checks run on the verifier's columns (every operator's inputs in one array), so a
20,000-operator model is checked with a few dozen numpy operations; views are built only
for the few objects that turn out to need a message.
"""
from __future__ import annotations

import numpy as np

from . import dtypes
from .errors import Finding, ModelFormatError
from .model import Model
from .opcodes import BUILTIN_NAMES
from .verify import FileIndex

T = "tflite."
_CONTROL_FLOW_TAGS = None  # BuiltinOptions union tags of options that name subgraphs
_BITS = np.zeros(256, dtype=np.int64)
for _code, _info in dtypes.TYPES.items():
    _BITS[_code] = _info.bits if _info.storage is not None else 0


def _control_flow_tags() -> set[int]:
    from ..schema.schema_layout import LAYOUT
    names = {"WhileOptions", "IfOptions", "CallOnceOptions", "CallOptions"}
    values = LAYOUT["enums"]["tflite.BuiltinOptions"]["values"]
    return {v for v, n in values.items() if n in names}


def check_model(model: Model, index: FileIndex) -> list[Finding]:
    """Raise ModelFormatError for broken references; return the findings."""
    findings: list[Finding] = []
    subgraphs = index.table(T + "SubGraph")
    tensors = index.table(T + "Tensor")
    ops = index.table(T + "Operator")
    n_sub = len(model.subgraphs)
    n_codes = len(model.operator_codes)
    n_buffers = len(model.buffers)
    if n_sub == 0:
        # LiteRT refuses such a file ("No subgraph in the model"); every consumer needs one.
        raise ModelFormatError("subgraphs", "the model has no subgraphs (nothing to show or run)")
    n_tensors = np.bincount(tensors.parent, minlength=n_sub) if len(tensors) else np.zeros(n_sub, np.int64)
    buffer_nbytes = _check_buffers(model, index)
    _check_subgraph_io(index, subgraphs, n_tensors)
    _check_operators(model, index, ops, n_codes, n_tensors, findings)
    _check_tensors(model, index, tensors, n_buffers, buffer_nbytes, findings)
    _check_codes(model, findings)
    _check_signatures_and_metadata(model, n_sub, n_buffers)
    return findings


def out_of_range(n: int) -> str:
    """How an index message ends: the valid range, or that there is nothing to index."""
    return f"out of range (0..{n - 1})" if n > 0 else "out of range (there are none)"


def _fail_at(values: np.ndarray, bad: np.ndarray, owner: np.ndarray, owner_batch, lengths,
             field: str, what: str, limit: np.ndarray) -> None:
    """Raise for the first bad value of a concatenated vector field, naming its element."""
    i = int(np.flatnonzero(bad)[0])
    row = int(owner[i])
    start = int(np.flatnonzero(owner == row)[0])
    sub = int(owner_batch.parent[row]) if owner_batch.parent is not None else 0
    obj = int(owner_batch.index[row]) if owner_batch.index is not None else row
    kind = owner_batch.label
    raise ModelFormatError(f"subgraphs[{sub}].{kind}[{obj}].{field}[{i - start}]",
                           f"{what} {int(values[i])} {out_of_range(int(limit[i]))}")


def _check_buffers(model: Model, index: FileIndex) -> np.ndarray:
    """Bytes of every buffer; buffers stored after the flatbuffer must lie in the file."""
    buffers = index.table(T + "Buffer")
    offset = index.scalar(buffers, "offset").astype(np.int64)
    size = index.scalar(buffers, "size").astype(np.int64)
    bad = (offset > 1) & (offset + size > model.file_size)
    if bad.any():
        b = int(np.flatnonzero(bad)[0])
        raise ModelFormatError(f"buffers[{int(buffers.index[b])}]",
                               f"data at offset {int(offset[b])} with size {int(size[b])} lies "
                               f"past the end of the file ({model.file_size} bytes): the file looks "
                               "truncated")
    return model.buffer_sizes


def _check_subgraph_io(index: FileIndex, subgraphs, n_tensors: np.ndarray) -> None:
    for field in ("inputs", "outputs"):
        values, owner, _ = index.vector(subgraphs, field)
        limit = n_tensors[owner]
        bad = (values < 0) | (values >= limit)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            s = int(owner[i])
            k = i - int(np.flatnonzero(owner == s)[0])
            raise ModelFormatError(f"subgraphs[{s}].{field}[{k}]", f"tensor index "
                                   f"{int(values[i])} {out_of_range(int(limit[i]))}")


def _checked_index(index: FileIndex, rows, table: str, field: str, limit: int,
                   what: str) -> np.ndarray:
    """The unsigned index ``field`` of every row of ``table`` (operators' opcode_index,
    tensors' buffer), raising ModelFormatError at the first one that is ``limit`` or more."""
    values = index.scalar(rows, field).astype(np.int64)
    bad = values >= limit
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise ModelFormatError(f"subgraphs[{int(rows.parent[r])}].{table}[{int(rows.index[r])}]"
                               f".{field}", f"{what} {int(values[r])} {out_of_range(limit)}")
    return values


def _check_operators(model: Model, index: FileIndex, ops, n_codes: int, n_tensors: np.ndarray,
                     findings: list[Finding]) -> None:
    if not len(ops):
        return
    _checked_index(index, ops, "operators", "opcode_index", n_codes, "operator code")
    for field in ("inputs", "outputs", "intermediates"):
        values, owner, lengths = index.vector(ops, field)
        limit = n_tensors[ops.parent[owner]]
        bad = (values < -1) | (values >= limit)
        if bad.any():
            _fail_at(values, bad, owner, ops, lengths, field, "tensor index", limit)
        if field == "outputs":
            _report_double_producers(values, owner, ops, findings)
    off = index.scalar(ops, "large_custom_options_offset").astype(np.int64)
    size = index.scalar(ops, "large_custom_options_size").astype(np.int64)
    bad = (off > 1) & (off + size > model.file_size)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise ModelFormatError(f"subgraphs[{int(ops.parent[r])}].operators[{int(ops.index[r])}]"
                               ".large_custom_options_offset", f"custom options at {int(off[r])} "
                               f"with size {int(size[r])} lie past the end of the file "
                               f"({model.file_size} bytes): the file looks truncated")
    tag = index.scalar(ops, "builtin_options_type")
    tag2 = index.scalar(ops, "builtin_options_2_type")
    calls = np.isin(tag, list(_control_flow_tags())) | (tag2 != 0)
    n_sub = len(model.subgraphs)
    for r in np.flatnonzero(calls):
        op = model.subgraphs[int(ops.parent[r])].operators[int(ops.index[r])]
        for role, sub in op.called_subgraphs.items():
            if not 0 <= sub < n_sub:
                raise ModelFormatError(f"{op.where}.builtin_options.{role}",
                                       f"subgraph {sub} {out_of_range(n_sub)}")


def _report_double_producers(values, owner, ops, findings: list[Finding]) -> None:
    keep = values >= 0
    sub = ops.parent[owner[keep]].astype(np.int64)
    key = sub * (1 << 32) + values[keep].astype(np.int64)
    uniq, counts = np.unique(key, return_counts=True)
    for k in uniq[counts > 1]:
        s, t = int(k >> 32), int(k & 0xFFFFFFFF)
        producers = [int(ops.index[owner[keep][j]]) for j in np.flatnonzero(key == k)]
        findings.append(Finding("error", f"subgraphs[{s}].tensors[{t}]",
                                f"produced by several operators: {producers}", s, t,
                                producers[-1]))


def _check_tensors(model: Model, index: FileIndex, tensors, n_buffers: int,
                   buffer_nbytes: np.ndarray, findings: list[Finding]) -> None:
    if not len(tensors):
        return
    buf = _checked_index(index, tensors, "tensors", "buffer", n_buffers, "buffer index")
    shape, owner, rank = index.vector(tensors, "shape")
    for r in np.unique(owner[shape < 0]):
        t = model.subgraphs[int(tensors.parent[r])].tensors[int(tensors.index[r])]
        findings.append(Finding("error", f"{t.where}.shape", f"negative dimension in "
                                f"{list(t.shape)}", t.subgraph.index, t.index))
    # Constant data must match the shape (LiteRT refuses the model otherwise).
    elements = np.ones(len(tensors), dtype=np.float64)
    np.multiply.at(elements, owner, np.maximum(shape, 0).astype(np.float64))
    ttype = index.scalar(tensors, "type").astype(np.int64) & 0xFF
    bits = _BITS[ttype]
    nbytes = buffer_nbytes[buf]
    sparse = tensors.fo.get("sparsity", np.zeros(len(tensors), np.int64)) != 0
    need = np.ceil(elements * bits / 8)
    suspect = (nbytes > 0) & (bits > 0) & ~sparse & (need != nbytes)
    for r in np.flatnonzero(suspect):
        t = model.subgraphs[int(tensors.parent[r])].tensors[int(tensors.index[r])]
        info = dtypes.type_info(t.type)
        exact = (t.num_elements * info.bits + 7) // 8
        if exact != t.buffer_nbytes:
            findings.append(Finding("error", f"{t.where}.buffer", f"buffer {t.buffer} holds "
                                    f"{t.buffer_nbytes} bytes but shape {list(t.shape)} of "
                                    f"{info.name} needs {exact}", t.subgraph.index, t.index))
    _check_quantization(model, index, tensors, shape, rank, findings)


def _check_quantization(model: Model, index: FileIndex, tensors, shape, rank,
                        findings: list[Finding]) -> None:
    qp = index.table(T + "QuantizationParameters")
    if not len(qp):
        return
    _, _, n_scale = index.vector(qp, "scale")
    _, _, n_zp = index.vector(qp, "zero_point")
    qd = index.scalar(qp, "quantized_dimension").astype(np.int64)
    trow = qp.parent
    r = rank[trow]
    start = np.cumsum(rank) - rank
    in_rank = (qd >= 0) & (qd < r)
    dim = np.zeros(len(qp), dtype=np.int64)
    dim[in_rank] = shape[(start[trow] + qd)[in_rank]]
    ok_channel = (n_scale <= 1) | (in_rank & (dim == n_scale))
    ok_zp = (n_zp == 0) | (n_zp == n_scale)
    ok_qd = (n_scale > 1) | (qd == 0) | ((qd >= 0) & (qd < np.maximum(r, 1)))
    scale, owner, _ = index.vector(qp, "scale")
    finite = np.ones(len(qp), dtype=bool)
    with np.errstate(invalid="ignore"):
        finite[owner[~(np.isfinite(scale) & (scale > 0))]] = False  # NaN, inf, 0, negative
    for q in np.flatnonzero(~(ok_channel & ok_zp & ok_qd & finite)):
        row = int(trow[q])
        t = model.subgraphs[int(tensors.parent[row])].tensors[int(tensors.index[row])]
        if t.quantization is None:
            continue
        for problem in t.quantization.load_problems(t.shape):
            findings.append(Finding("error", f"{t.where}.quantization", problem,
                                    t.subgraph.index, t.index))
        for flaw in t.quantization.scale_flaws():
            findings.append(_scale_finding(t, flaw))


def _scale_finding(t, flaw) -> Finding:
    """A warning for scales LiteRT loads but that are not finite and positive, naming the
    operators that read the tensor: the interpreter refuses them only at a kernel that
    would use them for more than a product (interpreter/accepts.py, `check_scales`)."""
    readers = [op for op in t.subgraph.operators if t.index in op.inputs]
    named = ", ".join(f"{op.name} op {op.index}" for op in readers[:3])
    if len(readers) > 3:
        named += f" and {len(readers) - 3} more"
    meaning = {"zero": "0", "non-finite": "NaN or infinity",
               "negative": "values of the opposite sign"}[flaw.kind]
    read = f"read by {named}" if readers else "read by no operator"
    return Finding("warning", f"{t.where}.quantization",
                   f"{flaw}: LiteRT loads it, its values dequantize to {meaning}; {read}. "
                   "The interpreter takes it where a kernel only multiplies by the scale and "
                   "refuses it where one divides or requantizes by it",
                   t.subgraph.index, t.index, readers[0].index if readers else None)


def _check_codes(model: Model, findings: list[Finding]) -> None:
    for oc in model.operator_codes:
        if oc.builtin_code not in BUILTIN_NAMES:
            findings.append(Finding("warning", f"operator_codes[{oc.index}]",
                                    f"builtin code {oc.builtin_code} is newer than this "
                                    "schema; shown as its number"))


def _check_signatures_and_metadata(model: Model, n_sub: int, n_buffers: int) -> None:
    for sig in model.signature_defs:
        where = f"signature_defs[{sig.index}]"
        if not 0 <= sig.subgraph_index < n_sub:
            raise ModelFormatError(f"{where}.subgraph_index", f"subgraph {sig.subgraph_index} "
                                   f"{out_of_range(n_sub)}")
        n_t = len(model.subgraphs[sig.subgraph_index].tensors)
        for kind, maps in (("inputs", sig.inputs), ("outputs", sig.outputs)):
            for k, m in enumerate(maps):
                if not 0 <= m.tensor_index < n_t:
                    raise ModelFormatError(f"{where}.{kind}[{k}].tensor_index", f"tensor index "
                                           f"{m.tensor_index} {out_of_range(n_t)}")
    for m in model.metadata:
        if not 0 <= m.buffer < n_buffers:
            raise ModelFormatError(f"metadata[{m.index}].buffer", f"buffer index {m.buffer} "
                                   f"{out_of_range(n_buffers)}")
    for k, b in enumerate(model.metadata_buffer):
        if not 0 <= b < n_buffers:
            raise ModelFormatError(f"metadata_buffer[{k}]", f"buffer index {b} "
                                   f"{out_of_range(n_buffers)}")
