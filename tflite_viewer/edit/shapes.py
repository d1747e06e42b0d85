"""Does a tensor's new shape still agree with the operators around it?

A shape edit is legal on its own (LiteRT re-derives most shapes in Prepare), but a shape
that disagrees with what the producer computes or the consumer expects usually means a
model that fails at `allocate_tensors` or gives garbage.  This is a light shape inference
for the common op families — enough to warn, not to refuse: the rules come from the
kernels' Prepare functions (conv/pool output sizes from padding, stride and dilation;
broadcasting; fully-connected's last dimension; reshape's element count).
"""
from __future__ import annotations

import numpy as np

from ..model.op_metadata import op_info
from .op_version import builtin_name
from .tree import text


def _shape(sg, t: int) -> list[int] | None:
    if t < 0 or t >= len(sg.tensors or []):
        return None
    s = sg.tensors[t].shape
    return [int(d) for d in s] if s is not None else []


def _broadcast(a: list[int], b: list[int]) -> list[int] | None:
    out = []
    for x, y in zip(reversed([1] * (len(b) - len(a)) + a), reversed([1] * (len(a) - len(b)) + b)):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y) if 0 not in (x, y) else 0)
    return list(reversed(out))


def _window(size: int, k: int, stride: int, dilation: int, padding: int) -> int:
    eff = (k - 1) * dilation + 1
    if padding == 0:  # SAME
        return (size + stride - 1) // stride
    return (size - eff + stride) // stride


def expected_output(model, sg, op) -> list[int] | None:
    """The first output's shape as the kernel's Prepare would compute it (None: unknown)."""
    name = builtin_name(model, op)
    ins = [int(i) for i in op.inputs] if op.inputs is not None else []
    shapes = [_shape(sg, i) for i in ins]
    o = op.builtinOptions
    if not shapes or shapes[0] is None:
        return None
    x = shapes[0]
    info = op_info(name)
    if info.keeps_shape:
        return list(x)
    if info.broadcasts and len(shapes) >= 2 and shapes[1] is not None:
        return _broadcast(x, shapes[1])
    if name in ("CONV_2D", "DEPTHWISE_CONV_2D") and len(shapes) >= 2 and o is not None:
        f = shapes[1]
        if len(x) != 4 or f is None or len(f) != 4:
            return None
        h = _window(x[1], f[1], o.strideH, o.dilationHFactor, o.padding)
        w = _window(x[2], f[2], o.strideW, o.dilationWFactor, o.padding)
        return [x[0], h, w, f[0] if name == "CONV_2D" else f[3]]
    if name in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D") and o is not None and len(x) == 4:
        h = _window(x[1], o.filterHeight, o.strideH, 1, o.padding)
        w = _window(x[2], o.filterWidth, o.strideW, 1, o.padding)
        return [x[0], h, w, x[3]]
    if name == "FULLY_CONNECTED" and len(shapes) >= 2 and shapes[1] is not None and len(shapes[1]) == 2:
        units, depth = shapes[1]
        n = 1
        for d in x:
            n *= d
        if o is not None and o.keepNumDims:
            return x[:-1] + [units]
        return [n // depth if depth else 0, units]
    return None


def shape_warnings(model, sg, s: int, tensor: int) -> list[str]:
    """Disagreements around one tensor after its shape changed."""
    out = []
    t = sg.tensors[tensor]
    shape = [int(d) for d in t.shape] if t.shape is not None else []
    if t.shapeSignature is not None:
        sig = [int(d) for d in t.shapeSignature]
        if len(sig) != len(shape) or any(a != -1 and a != b for a, b in zip(sig, shape)):
            out.append(f"tensor {text(t.name)!r}: shape_signature {sig} disagrees with shape {shape}")
    ops = sg.operators or []
    for k in operators_touching(ops, tensor):
        op = ops[k]
        ins = [int(i) for i in op.inputs] if op.inputs is not None else []
        outs = [int(i) for i in op.outputs] if op.outputs is not None else []
        name = builtin_name(model, op)
        where = f"subgraphs[{s}].operators[{k}] ({name})"
        if name == "RESHAPE" and ins and outs:
            a, b = _shape(sg, ins[0]), _shape(sg, outs[0])
            if a is not None and b is not None and _count(a) != _count(b):
                out.append(f"{where}: reshapes {_count(a)} elements {a} into {_count(b)} {b}")
            continue
        if not outs:
            continue
        want = expected_output(model, sg, op)
        have = _shape(sg, outs[0])
        if want is not None and have is not None and want != have:
            out.append(f"{where}: output {text(sg.tensors[outs[0]].name)!r} has shape {have} "
                       f"but its inputs give {want}")
        elif want is None and op_info(name).broadcasts:
            out.append(f"{where}: input shapes {[_shape(sg, i) for i in ins]} do not broadcast")
    return out


def operators_touching(ops, tensor: int, fields=("inputs", "outputs")) -> list[int]:
    """Indices of the operators that read (or write) ``tensor``, in order.

    One concatenation of every operator's index vectors instead of a Python membership
    test per operator: a 20,000-operator graph costs milliseconds, not a tenth of a second.
    """
    hits: set[int] = set()
    for field in fields:
        vectors = [getattr(op, field) for op in ops]
        lengths = np.fromiter((0 if v is None else len(v) for v in vectors), np.int64, len(ops))
        present = [v for v in vectors if v is not None and len(v)]
        if not present:
            continue
        flat = np.concatenate(present)
        owner = np.repeat(np.arange(len(ops)), lengths)
        hits.update(owner[flat == tensor].tolist())
    return sorted(hits)


def _count(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
