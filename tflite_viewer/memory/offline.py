"""TFLite Micro's ``OfflineMemoryAllocation`` metadata: read it, check it, write one.

The metadata's buffer is little-endian int32: a format version, the number of
subgraphs, the number of offsets ``n``, then ``n`` arena offsets, one per tensor of every
subgraph concatenated (subgraph 0's tensors first), -1 where TFLM should plan the tensor
itself (micro/docs/memory_management.md; micro_allocation_info.cc reads it and ignores
the version and subgraph count).  TFLM refuses the model when ``n`` differs from the
number of tensors; it trusts everything else, so this module says what it would trust
that it should not: live tensors that overlap, offsets that break the arena's alignment.
"""
from __future__ import annotations

import numpy as np

from ..model import Model
from .plan import OfflineCheck

METADATA_NAME = "OfflineMemoryAllocation"
FORMAT_VERSION = 1
ONLINE = -1


def read_offline(model: Model) -> tuple[list[int] | None, list[str]]:
    """(offsets, errors) of the model's offline plan; (None, []) when it has none.

    Like TFLM, a later entry of the same name wins.
    """
    entry = None
    for m in model.metadata:
        if m.name == METADATA_NAME:
            entry = m
    if entry is None:
        return None, []
    raw = np.asarray(entry.data, dtype=np.uint8)
    where = f"metadata[{entry.index}] ({METADATA_NAME})"
    if raw.size < 12:
        return None, [f"{where}: {raw.size} bytes, fewer than the 12-byte header; "
                      "TFLM would read past the buffer"]
    words = raw[: raw.size // 4 * 4].view("<i4")
    n = int(words[2])
    if n < 0 or 3 + n > words.size:
        return None, [f"{where}: says {n} offsets but holds {words.size - 3}; "
                      "TFLM would read past the buffer"]
    return [int(v) for v in words[3:3 + n]], []


def header(model: Model) -> tuple[int, int]:
    """(version, subgraph count) as written in the metadata (TFLM ignores both)."""
    for m in reversed(model.metadata):
        if m.name == METADATA_NAME and m.data.size >= 8:
            words = np.asarray(m.data[:8], dtype=np.uint8).view("<i4")
            return int(words[0]), int(words[1])
    return 0, 0


def encode_offline(offsets: list[int], subgraphs: int) -> bytes:
    """The metadata buffer for ``offsets`` (one per tensor of every subgraph, -1 = online)."""
    words = np.asarray([FORMAT_VERSION, subgraphs, len(offsets), *offsets], dtype="<i4")
    return words.tobytes()


def check_offline(offsets: list[int], total_tensors: int, alignment: int) -> OfflineCheck:
    """The parts of the check that need no plan: count, negative and misaligned offsets.

    Overlaps need lifetimes; `tflm.plan_tflm` adds them.
    """
    errors: list[str] = []
    warnings: list[str] = []
    if len(offsets) != total_tensors:
        errors.append(f"{len(offsets)} offsets for {total_tensors} tensors; TFLM refuses the "
                      "model (\"Nbr of offline buffer offsets ... not equal nbr tensors\")")
    bad = [i for i, o in enumerate(offsets) if o < ONLINE]
    if bad:
        errors.append(f"negative offsets other than -1 at tensors {bad[:10]}")
    odd = [i for i, o in enumerate(offsets) if o >= 0 and o % alignment]
    if odd:
        warnings.append(f"{len(odd)} offsets are not multiples of {alignment} (tensors "
                        f"{odd[:10]}); kernels may read them misaligned")
    return OfflineCheck(FORMAT_VERSION, 0, list(offsets), errors, warnings)
