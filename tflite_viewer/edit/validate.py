"""Checks that make an edit invalid, before and after the model is written.

Two layers:

* `check_tree` — invariants the writer relies on and the reader cannot see from the file
  alone (buffer 0 is the empty sentinel).
* `new_errors` — the edited model is re-read by the same verifier and checker as any file
  (`load_model`): index errors raise `ModelFormatError`; a runtime-fatal problem (constant
  bytes that do not match the shape, quantization that does not fit the tensor) becomes an
  error `Finding`.  An edit may not *introduce* such an error; errors the original model
  already had (person_detect's quantized_dimension) stay, so the user can fix them.
"""
from __future__ import annotations

from ..model.errors import EditError, Finding
from ..model.model import Model
from .tree import ModelTree


def check_tree(tree: ModelTree) -> None:
    bufs = tree.model.buffers or []
    if bufs and bufs[0].data is not None and len(bufs[0].data):
        raise EditError("buffers[0] must stay the empty sentinel buffer")
    limit = max(len(bufs), 1)
    for sg_index, sg in enumerate(tree.model.subgraphs or []):
        tensors = sg.tensors or []
        used = [t.buffer for t in tensors]
        if used and (min(used) < 0 or max(used) >= limit):  # one pass; name the first
            t_index = next(k for k, b in enumerate(used) if not 0 <= b < limit)
            raise EditError(f"subgraphs[{sg_index}].tensors[{t_index}].buffer: buffer "
                            f"{used[t_index]} out of range (0..{len(bufs) - 1})")


def _key(f: Finding) -> tuple[str, str]:
    return (f.where, f.message)


def new_errors(before: Model, after: Model) -> list[Finding]:
    """Error findings of ``after`` that ``before`` did not have."""
    old = {_key(f) for f in before.findings if f.severity == "error"}
    return [f for f in after.findings if f.severity == "error" and _key(f) not in old]
