"""Models with side files: writing constants out to one, and keeping them on save.

`externalize` moves constant tensors' bytes out of an edit tree into a side file, as
LiteRT's converter (``tfl.external_const``) and its ``externalize_tflite_flatbuffer``
tool write them: one ``ExternalBufferGroup`` named after the file, one ``ExternalBuffer``
per moved buffer (id with the top bit set, offset, length, packing ``"unpacked"``), each
slice aligned to 64 bytes in the file, the tensor's ``buffer`` set to 0 and the inline
bytes dropped.  The result is serialized by the ordinary writer; the side file's bytes
are returned for the caller to write next to the model.

`copy_side_files` keeps a model's side files when it is saved to another folder: every
group the model reads is copied there byte for byte (from the side file, or from the
section of a .litertlm container it was opened from).  A file of the same name already
there with other bytes is not overwritten: the save is refused with an EditError.
"""
from __future__ import annotations

import filecmp
import os
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from ..model.errors import EditError, ModelFormatError
from ..model.external import SideFiles
from ..model.model import Model
from ..schema import schema_generated as S
from .tree import ModelTree

SIDE_FILE_ALIGN = 64  # LiteRT's host-memory buffer alignment, as its externalizer pads
ID_BIT = 1 << 31  # external buffer ids never look like buffer indices

Select = Callable[[int, int, object], bool]  # (subgraph, tensor index, TensorT) -> move?


def externalize(tree: ModelTree, group: str = "weights.bin", *, min_bytes: int = 1,
                select: Select | None = None) -> bytes:
    """Move constant tensors' data into one side file named ``group``; return its bytes.

    Moved: non-variable tensors with inline data of at least ``min_bytes`` that
    ``select(subgraph, tensor_index, tensor)`` accepts; by default the ones LiteRT's
    externalizer moves (`litert_weights`: the weights operand of FULLY_CONNECTED,
    CONV_2D, DEPTHWISE_CONV_2D and EMBEDDING_LOOKUP), since LiteRT reads other external
    constants (a shape operand) only after its kernels were prepared.  `every_constant`
    moves them all.  Tensors that share a buffer share one external buffer.  Metadata
    buffers are never moved.
    """
    m = tree.model
    if select is None:
        select = litert_weights(tree)
    buffers = m.buffers or []
    meta = {int(e.buffer) for e in m.metadata or []} | {int(b) for b in (m.metadataBuffer
                                                                         if m.metadataBuffer is not None else [])}
    groups = list(m.externalBufferGroups or [])
    names = [g.name.decode() if isinstance(g.name, bytes) else g.name for g in groups]
    if group in names:
        gindex = names.index(group)
    else:
        g = S.ExternalBufferGroupT()
        g.name = group
        groups.append(g)
        gindex = len(groups) - 1
    entries = list(m.externalBuffers or [])
    parts: list[bytes] = []
    pos = 0
    by_buffer: dict[int, int] = {}  # buffer index -> external id
    moved: set[int] = set()
    for s, sg in enumerate(m.subgraphs or []):
        for t_index, t in enumerate(sg.tensors or []):
            b = int(t.buffer)
            if t.isVariable or int(t.externalBuffer) or not 0 < b < len(buffers) or b in meta:
                continue
            data = buffers[b].data
            if data is None or len(data) < max(min_bytes, 1):
                continue
            if select is not None and not select(s, t_index, t):
                continue
            if b not in by_buffer:
                raw = np.ascontiguousarray(np.asarray(data)).view(np.uint8).reshape(-1)
                pad = (-pos) % SIDE_FILE_ALIGN
                parts.append(bytes(pad))
                pos += pad
                e = S.ExternalBufferT()
                e.id, e.group, e.offset, e.length = ID_BIT | len(entries), gindex, pos, raw.size
                e.packing = "unpacked"
                entries.append(e)
                parts.append(raw.tobytes())
                pos += raw.size
                by_buffer[b] = e.id
            t.externalBuffer = by_buffer[b]
            t.buffer = 0
            moved.add(b)
    still = {int(t.buffer) for sg in m.subgraphs or [] for t in sg.tensors or []} | meta
    for b in moved - still:
        buffers[b].data = None
    m.externalBufferGroups, m.externalBuffers = groups, entries
    return b"".join(parts)


_WEIGHT_OPS = ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D", "EMBEDDING_LOOKUP")
_BIAS_OPS = ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D")


def litert_weights(tree: ModelTree) -> Select:
    """LiteRT's externalizer's choice: input 1 of the weight ops, never a bias (input 2 of
    FC/conv) nor a subgraph input."""
    codes = [max(int(c.builtinCode), int(c.deprecatedBuiltinCode))
             for c in tree.model.operatorCodes or []]
    weight = {getattr(S.BuiltinOperator, n) for n in _WEIGHT_OPS}
    bias = {getattr(S.BuiltinOperator, n) for n in _BIAS_OPS}
    chosen: set[tuple[int, int]] = set()
    refused: set[tuple[int, int]] = set()
    for s, sg in enumerate(tree.model.subgraphs or []):
        refused.update((s, int(i)) for i in (sg.inputs if sg.inputs is not None else []))
        for op in sg.operators or []:
            ins = [int(i) for i in (op.inputs if op.inputs is not None else [])]
            code = codes[int(op.opcodeIndex)] if 0 <= int(op.opcodeIndex) < len(codes) else -1
            if code in weight and len(ins) > 1 and ins[1] >= 0:
                chosen.add((s, ins[1]))
            if code in bias and len(ins) > 2 and ins[2] >= 0:
                refused.add((s, ins[2]))
    keep = chosen - refused
    return lambda s, t, _tensor: (s, t) in keep


def every_constant(_s: int, _t: int, _tensor: object) -> bool:
    """Move every constant (our reader takes any; LiteRT only weights: `litert_weights`)."""
    return True


def used_groups(model: Model) -> list[str]:
    """Names of the groups the model's tensors read (each once, in first-use order)."""
    out: list[str] = []
    for sg in model.subgraphs:
        for ext_id in sg.external_buffer_ids[sg.external_buffer_ids != 0].tolist():
            entry = model.external_buffers_by_id.get(int(ext_id))
            if entry is not None and 0 <= entry.group < len(model.external_buffer_groups):
                name = model.external_buffer_groups[entry.group].name
                if name not in out:
                    out.append(name)
    return out


def copy_side_files(model: Model, target: Path) -> list[Path]:
    """Make every side file the model reads exist next to ``target`` with its bytes;
    return the files written.  Absolute group names are left where they are."""
    written: list[Path] = []
    directory = target.parent if str(target.parent) else Path(".")
    here = SideFiles(directory)
    for name in used_groups(model):
        if not name or Path(name).is_absolute():
            continue
        dest = here.path(name)
        source = model.weights
        if isinstance(source, SideFiles):
            src = source.path(name)
            if dest.exists() and src.exists() and os.path.samefile(src, dest):
                continue
            if dest.exists() and src.exists() and filecmp.cmp(src, dest, shallow=False):
                continue
        try:
            data = source.group(name).data
        except ModelFormatError as exc:
            raise EditError(f"cannot save {target.name}: its external buffers read "
                            f"{exc.reason}") from None
        if dest.exists():
            if dest.stat().st_size == data.size and _same_bytes(dest, data):
                continue
            raise EditError(f"cannot save {target.name}: {dest} already exists with other "
                            "bytes than the model's side file; save to another folder")
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(memoryview(data))
            os.replace(tmp, dest)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        written.append(dest)
    return written


def _same_bytes(path: Path, data: np.ndarray, chunk: int = 1 << 24) -> bool:
    with open(path, "rb") as f:
        for start in range(0, data.size, chunk):
            if f.read(chunk) != data[start:start + chunk].tobytes():
                return False
    return True
