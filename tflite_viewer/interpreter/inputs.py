"""Inputs for a run: what a model takes, seeded inputs that are valid for it, and checking
the arrays a user supplies.

>>> from tflite_viewer.interpreter.inputs import seeded_inputs, complete_inputs
>>> seeded_inputs(model, seed=0)                       # {"input": array(...), ...}
>>> arrays, generated = complete_inputs(model, {"s0_t0": x}, seed=0)

Seeded inputs are chosen to be *valid* for the model, not merely of the right type:

* floats: uniform over the range TFLITE_METADATA gives for the input (its ``stats``
  min/max, else the range a ``NormalizationOptions`` maps image bytes 0..255 to), else
  uniform in [-1, 1];
* integers that (possibly through reshapes, casts, slices or control flow) index a
  GATHER / GATHER_ND / EMBEDDING_LOOKUP table or feed ONE_HOT: ids in [0, vocab);
* quantized 8- and 16-bit integers: uniform over their whole type range;
* other integers (int32/int64 even when quantized): small non-negative values in [0, 8),
  so that loop bounds, sizes and indices drawn from them stay small;
* bools: random; strings: empty strings.

An input is named by its signature input name (with a signature), else by its tensor name,
else (empty or duplicate tensor names) by ``s{subgraph}_t{tensor}``; supplied arrays may use
any of these names (`InputSpec.aliases`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..model import Model
from ..model.errors import TFLiteViewerError
from .budget import DEFAULT_MAX_ALLOCATION_BYTES, check_bytes

#: integers that are neither ids nor quantized values get values in [0, SMALL_INT_BOUND)
SMALL_INT_BOUND = 8

# Ops whose output carries (some of) the values of the given inputs unchanged: ids that go
# through them are still ids.  None: every input.
_PASS_THROUGH: dict[str, tuple[int, ...] | None] = {
    "RESHAPE": (0,), "CAST": (0,), "SQUEEZE": (0,), "EXPAND_DIMS": (0,), "TRANSPOSE": (0,),
    "SLICE": (0,), "STRIDED_SLICE": (0,), "CONCATENATION": None, "PACK": None,
    "UNPACK": (0,), "SPLIT": (1,), "SPLIT_V": (0,), "TILE": (0,), "BROADCAST_TO": (0,),
    "REVERSE_V2": (0,), "GATHER": (0,), "IDENTITY": (0,), "PAD": (0,), "PADV2": (0,),
}


class InputError(TFLiteViewerError, ValueError):
    """A supplied input that the model cannot take (unknown name, wrong shape or type)."""


@dataclass(frozen=True)
class InputSpec:
    """One input of the entry subgraph of a run (subgraph 0 or a signature's)."""

    name: str                      # the key seeded_inputs / complete_inputs use
    subgraph: int
    tensor: int                    # tensor index in `subgraph`
    position: int                  # index in the subgraph's inputs list
    type_name: str
    dtype: np.dtype | None
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...] | None
    aliases: tuple[str, ...]       # every accepted name: signature, tensor, s{sg}_t{i}

    @property
    def key(self) -> str:
        return f"s{self.subgraph}_t{self.tensor}"

    def describe(self) -> str:
        shape = list(self.shape_signature) if self.shape_signature is not None else list(self.shape)
        return f"{self.type_name}{shape}"


# ------------------------------------------------------------------------------------------
# what the model takes
# ------------------------------------------------------------------------------------------
def input_specs(model: Model, signature: str | None = None) -> list[InputSpec]:
    """The inputs of subgraph 0 (or of a signature's subgraph, in the signature's order)."""
    if signature is not None:
        sig = model.signature(signature)  # KeyError naming the signature keys
        sgi = sig.subgraph_index
        pairs = [(m.name, m.tensor_index) for m in sig.inputs]
    else:
        sgi = 0
        sg0 = model.subgraphs[0]
        pairs = [(sg0.tensors[i].name, i) for i in sg0.inputs]
    sg = model.subgraphs[sgi]
    sig_names: dict[int, list[str]] = {}
    for s in model.signature_defs:
        if s.subgraph_index == sgi:
            for m in s.inputs:
                sig_names.setdefault(m.tensor_index, []).append(m.name)
    counts: dict[str, int] = {}
    for name, _ in pairs:
        counts[name] = counts.get(name, 0) + 1
    specs = []
    for name, ti in pairs:
        t = sg.tensors[ti]
        key = f"s{sgi}_t{ti}"
        if not name or counts[name] > 1:
            name = key
        aliases = [name]
        for extra in [t.name, *sig_names.get(ti, []), key]:
            if extra and extra not in aliases:
                aliases.append(extra)
        position = list(sg.inputs).index(ti) if ti in sg.inputs else -1
        specs.append(InputSpec(name, sgi, ti, position, t.type_name, t.dtype, tuple(t.shape),
                               None if t.shape_signature is None else tuple(t.shape_signature),
                               tuple(aliases)))
    return specs


# ------------------------------------------------------------------------------------------
# seeded inputs
# ------------------------------------------------------------------------------------------
def _lookup_bound(model: Model, subgraph: int, tensor: int) -> int | None:
    """The size of the smallest table the integer tensor indexes (following its values
    through pass-through ops and into called subgraphs), or None when it indexes none."""
    bounds: list[int] = []
    seen: set[tuple[int, int]] = set()
    work = [(subgraph, tensor)]
    consumers: dict[int, dict[int, list]] = {}
    while work:
        sgi, ti = work.pop()
        if ti < 0 or (sgi, ti) in seen or not 0 <= sgi < len(model.subgraphs):
            continue
        seen.add((sgi, ti))
        sg = model.subgraphs[sgi]
        if sgi not in consumers:
            table: dict[int, list] = {}
            for op in sg.operators:
                for k, i in enumerate(op.inputs):
                    if i >= 0:
                        table.setdefault(i, []).append((op, k))
            consumers[sgi] = table
        for op, k in consumers[sgi].get(ti, []):
            name = op.name
            ins = op.inputs
            try:
                if name == "GATHER" and k == 1:
                    params = sg.tensors[ins[0]].shape
                    axis = int((op.options or {}).get("axis", 0))
                    axis += len(params) if axis < 0 else 0
                    if 0 <= axis < len(params) and params[axis] > 0:
                        bounds.append(int(params[axis]))
                    continue
                if name == "EMBEDDING_LOOKUP" and k == 0:
                    values = sg.tensors[ins[1]].shape
                    if values and values[0] > 0:
                        bounds.append(int(values[0]))
                    continue
                if name == "GATHER_ND" and k == 1:
                    params = sg.tensors[ins[0]].shape
                    depth = sg.tensors[ins[1]].shape[-1] if sg.tensors[ins[1]].shape else 1
                    dims = [int(d) for d in params[:depth] if d > 0]
                    if dims:
                        bounds.append(min(dims))
                    continue
                if name == "ONE_HOT" and k == 0:
                    depth = sg.tensors[ins[1]].data()
                    if depth is not None and depth.size == 1 and int(depth.reshape(-1)[0]) > 0:
                        bounds.append(int(depth.reshape(-1)[0]))
                    continue
            except (IndexError, ValueError, TypeError):
                continue
            calls = op.called_subgraphs
            if name == "WHILE":
                for role in ("cond", "body"):
                    if role in calls:
                        work.append((calls[role], model.subgraphs[calls[role]].inputs[k]
                                     if k < len(model.subgraphs[calls[role]].inputs) else -1))
                if k < len(op.outputs):
                    work.append((sgi, op.outputs[k]))
            elif name == "IF" and k >= 1:
                for role in ("then", "else"):
                    if role in calls:
                        sub_inputs = model.subgraphs[calls[role]].inputs
                        if k - 1 < len(sub_inputs):
                            work.append((calls[role], sub_inputs[k - 1]))
            elif name in _PASS_THROUGH:
                allowed = _PASS_THROUGH[name]
                if allowed is None or k in allowed:
                    work.extend((sgi, o) for o in op.outputs if o >= 0)
    return min(bounds) if bounds else None


def _metadata_range(model: Model, spec: InputSpec) -> tuple[np.ndarray, np.ndarray] | None:
    """(low, high) for a float input from TFLITE_METADATA: its stats, else the range that
    its NormalizationOptions maps image bytes 0..255 to."""
    try:
        md = model.tflite_metadata
    except Exception:  # noqa: BLE001 - unreadable metadata is no reason to fail a run
        return None
    if not isinstance(md, dict):
        return None
    sgs = md.get("subgraph_metadata") or []
    if not 0 <= spec.subgraph < len(sgs) or spec.position < 0:
        return None
    tmeta = (sgs[spec.subgraph] or {}).get("input_tensor_metadata") or []
    if spec.position >= len(tmeta) or not isinstance(tmeta[spec.position], dict):
        return None
    entry = tmeta[spec.position]
    stats = entry.get("stats") or {}
    lo, hi = stats.get("min"), stats.get("max")
    if lo and hi and len(lo) == len(hi):
        lo_a, hi_a = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
        if np.all(np.isfinite(lo_a)) and np.all(np.isfinite(hi_a)) and np.all(hi_a >= lo_a):
            return lo_a, hi_a
    for unit in entry.get("process_units") or []:
        opts = (unit or {}).get("options") or {}
        if opts.get("type") == "NormalizationOptions" and opts.get("mean") and opts.get("std"):
            mean = np.asarray(opts["mean"], np.float64)
            std = np.asarray(opts["std"], np.float64)
            if mean.shape != std.shape or np.any(std == 0):
                continue
            a, b = (0.0 - mean) / std, (255.0 - mean) / std
            return np.minimum(a, b), np.maximum(a, b)
    return None


def _broadcast_range(lo: np.ndarray, hi: np.ndarray, shape: tuple[int, ...]):
    """Per-channel ranges along the last axis when their count matches it, else the widest."""
    if lo.size > 1 and shape and shape[-1] == lo.size:
        return lo, hi
    return np.float64(lo.min()), np.float64(hi.max())


#: the integer types whose quantized inputs span their whole range (small enough that no
#: loop bound or size drawn from them runs away)
_WHOLE_RANGE_TYPES = frozenset({"INT8", "UINT8", "INT16", "INT4"})


#: elements drawn per step: whatever an input's size, making it costs its own bytes plus
#: temporaries of at most a few times this many doubles (the random draws, the scaling)
_CHUNK = 1 << 20


def input_nbytes(spec: InputSpec) -> int:
    """Bytes the value of ``spec`` takes (object arrays: one pointer per element), from
    its declared shape; negative dimensions count as 0."""
    count = int(np.prod([max(int(d), 0) for d in spec.shape], dtype=np.float64))
    return count * (spec.dtype.itemsize if spec.dtype is not None else 0)


def fill(out: np.ndarray, draw, row: int = 1) -> np.ndarray:
    """``out`` filled by ``draw(rows, row)`` in pieces of about `_CHUNK` elements (whole
    rows of ``row`` elements).  A generator's stream does not depend on how its draws are
    split, so the values equal one draw of the whole array."""
    flat = out.reshape(-1, row) if row > 1 else out.reshape(-1, 1)
    step = max(1, _CHUNK // max(row, 1))
    for start in range(0, flat.shape[0], step):
        rows = flat[start:start + step]
        rows[...] = draw(rows.shape[0], rows.shape[1]).reshape(rows.shape)
    return out


def _seeded_value(model: Model, spec: InputSpec, rng: np.random.Generator) -> np.ndarray:
    """One seeded input, its memory checked by the caller (`seeded_inputs`)."""
    shape = tuple(max(int(d), 0) for d in spec.shape)
    dtype = spec.dtype
    tensor = model.subgraphs[spec.subgraph].tensors[spec.tensor]
    if dtype == object:  # strings
        out = np.empty(shape, dtype=object)
        out.fill(b"")
        return out
    out = np.empty(shape, dtype=dtype)
    if dtype.kind == "b":
        return fill(out, lambda n, r: rng.integers(0, 2, (n, r)).astype(bool))
    if dtype.kind == "c":  # every real part, then every imaginary part (as one draw each)
        fill(out.real, lambda n, r: rng.uniform(-1, 1, (n, r)))
        return fill(out.imag, lambda n, r: rng.uniform(-1, 1, (n, r)))
    if dtype.kind == "f":
        rng_range = _metadata_range(model, spec)
        if rng_range is None:
            lo, hi = np.float64(-1.0), np.float64(1.0)
        else:
            lo, hi = _broadcast_range(*rng_range, shape)
        row = int(np.size(lo)) if np.ndim(lo) else 1
        return fill(out, lambda n, r: lo + (hi - lo) * rng.random((n, r)), row)
    # integers
    bound = _lookup_bound(model, spec.subgraph, spec.tensor)
    info = np.iinfo(dtype)
    if bound is not None:
        top = min(bound, int(info.max) + 1)
        return fill(out, lambda n, r: rng.integers(0, top, (n, r)))
    q = tensor.quantization
    if q is not None and q.has_scale and spec.type_name in _WHOLE_RANGE_TYPES:
        return fill(out, lambda n, r: rng.integers(int(info.min), int(info.max) + 1, (n, r),
                                                    dtype=np.int64))
    top = min(SMALL_INT_BOUND, int(info.max) + 1)
    return fill(out, lambda n, r: rng.integers(0, top, (n, r)))


def check_input_bytes(specs, max_bytes: int, given: Mapping[str, np.ndarray] | None = None,
                      what: str = "seeded inputs", reserved: int = 0) -> None:
    """Raise `AllocationError` before anything is made when the inputs to make (``specs``)
    together with the arrays already ``given`` and the ``reserved`` bytes the run holds
    besides (its interpreter's tensors and scratch: the budget bounds the run in the
    process, `budget`) would pass ``max_bytes``; a type no value can be made of is an
    `InputError`.  The message names the largest input."""
    sizes: list[tuple[int, str]] = []
    for spec in specs:
        if spec.dtype is None:
            raise InputError(f"input {spec.name!r} is {spec.type_name}: cannot make a value "
                             "of that type")
        sizes.append((input_nbytes(spec), f"{spec.name!r} ({spec.type_name}"
                                          f"{[max(int(d), 0) for d in spec.shape]})"))
    for name, arr in (given or {}).items():
        sizes.append((int(np.asarray(arr).nbytes), f"{name!r} (given, {np.asarray(arr).dtype}"
                                                   f"{list(np.shape(arr))})"))
    total = sum(n for n, _ in sizes)
    if total + reserved > max_bytes and sizes:
        biggest = max(sizes, key=lambda size: size[0])  # the first of the largest
        label = (f"{what} {biggest[1]}" if len(sizes) == 1 else
                 f"the run's inputs ({len(sizes)}, the largest {biggest[1]} of "
                 f"{biggest[0]:,} bytes)")
        if reserved:
            label += (f" with the {reserved:,} bytes of the run's tensors and scratch "
                      "(the interpreter's copies of the inputs included)")
        check_bytes(total + reserved, max_bytes, label)


def seeded_inputs(model: Model, seed: int = 0, signature: str | None = None, *,
                  max_bytes: int = DEFAULT_MAX_ALLOCATION_BYTES,
                  names: "set[str] | None" = None,
                  given: Mapping[str, np.ndarray] | None = None,
                  reserved: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs valid for the model (see the module docstring), by input name
    (only those in ``names`` when given).

    Each input has its own generator, seeded by ``(seed, subgraph, tensor)``: an input's
    values do not depend on the other inputs, nor on whether it is named by signature.
    Inputs that together (with the arrays ``given`` alongside them) would need more than
    ``max_bytes`` (the interpreter's allocation limit) less the ``reserved`` bytes the
    run holds besides (`check_input_bytes`) raise `AllocationError` before anything is
    allocated; making an input costs its own bytes and a bounded scratch."""
    specs = [s for s in input_specs(model, signature) if names is None or s.name in names]
    check_input_bytes(specs, max_bytes, given, reserved=reserved)
    return {spec.name: _seeded_value(model, spec, np.random.default_rng(
                [int(seed) % (1 << 63), spec.subgraph, spec.tensor]))
            for spec in specs}


# ------------------------------------------------------------------------------------------
# supplied inputs
# ------------------------------------------------------------------------------------------
def _shape_ok(spec: InputSpec, shape: tuple[int, ...]) -> bool:
    if shape == spec.shape:
        return True
    sig = spec.shape_signature
    return sig is not None and len(sig) == len(shape) and all(
        s == -1 or s == d for s, d in zip(sig, shape))


def check_input(spec: InputSpec, value: Any, given_as: str | None = None) -> np.ndarray:
    """The value converted to the input's type, or an `InputError` naming the input and
    what it expects (shape, type)."""
    label = f"input {spec.name!r}" + (f" (given as {given_as!r})" if given_as and
                                      given_as != spec.name else "")
    expect = f"expected {spec.describe()}"
    try:
        arr = np.asarray(value)
    except Exception as exc:  # noqa: BLE001
        raise InputError(f"{label}: not an array ({exc}); {expect}") from exc
    target = spec.dtype
    if target is not None and arr.dtype != target:
        if target == object or arr.dtype == object:
            if not (target == object and arr.dtype.kind in "SUO"):
                raise InputError(f"{label}: got {arr.dtype} values; {expect}")
            arr = arr.astype(object)
        elif arr.dtype.kind in "fc" and target.kind in "biu":
            raise InputError(f"{label}: got {arr.dtype} values; {expect} "
                             "(integer values)")
        elif arr.dtype.kind == "c" and target.kind == "f":
            raise InputError(f"{label}: got {arr.dtype} values; {expect}")
        elif arr.dtype.kind in "SUV":
            raise InputError(f"{label}: got {arr.dtype} values; {expect}")
        else:
            if target.kind in "iu" and arr.dtype.kind in "biu" and arr.size:
                info = np.iinfo(target)
                lo, hi = int(arr.min()), int(arr.max())
                if lo < info.min or hi > info.max:
                    raise InputError(f"{label}: values {lo}..{hi} do not fit {spec.type_name} "
                                     f"({info.min}..{info.max})")
            if target.kind == "b" and arr.dtype.kind in "iu" and arr.size and not np.isin(
                    arr, (0, 1)).all():
                raise InputError(f"{label}: got {arr.dtype} values other than 0/1; {expect}")
            arr = arr.astype(target)
    if not _shape_ok(spec, tuple(arr.shape)):
        raise InputError(f"{label}: got shape {list(arr.shape)}; expected shape "
                         f"{list(spec.shape)}" + (
                             f" (shape signature {list(spec.shape_signature)})"
                             if spec.shape_signature is not None
                             and tuple(spec.shape_signature) != spec.shape else "")
                         + f" of {spec.type_name}")
    return arr


def match_inputs(model: Model, given: Mapping[str, Any], signature: str | None = None
                 ) -> dict[str, np.ndarray]:
    """Supplied arrays (keyed by any of an input's aliases) checked and keyed by input name;
    an `InputError` for unknown names, duplicates, wrong shapes or types."""
    specs = input_specs(model, signature)
    by_alias: dict[str, InputSpec] = {}
    for spec in specs:  # signature / first names win over later aliases
        by_alias.setdefault(spec.name, spec)
    for spec in specs:
        for a in spec.aliases:
            by_alias.setdefault(a, spec)
    out: dict[str, np.ndarray] = {}
    given_as: dict[str, str] = {}
    where = f"signature {signature!r}" if signature is not None else "subgraph 0"
    for key, value in given.items():
        spec = by_alias.get(str(key))
        if spec is None:
            names = ", ".join(f"{s.name!r} {s.describe()}" for s in specs) or "none"
            raise InputError(f"unknown input {str(key)!r}: the inputs of {where} are {names} "
                             f"(also accepted: tensor names and s{{subgraph}}_t{{tensor}} keys)")
        if spec.name in out:
            raise InputError(f"input {spec.name!r} given twice (as {given_as[spec.name]!r} "
                             f"and {str(key)!r})")
        out[spec.name] = check_input(spec, value, str(key))
        given_as[spec.name] = str(key)
    return out


def complete_inputs(model: Model, given: Mapping[str, Any] | None = None, seed: int = 0,
                    signature: str | None = None, *,
                    max_bytes: int = DEFAULT_MAX_ALLOCATION_BYTES, reserved: int = 0
                    ) -> tuple[dict[str, np.ndarray], list[str]]:
    """Every input of the run, by input name, in the model's order: the supplied ones
    (checked by `match_inputs`) and seeded values for the rest.  Returns the arrays and the
    names of the inputs that were generated.  The given and the seeded arrays with the
    ``reserved`` bytes (`budget.run_reserve` of the run's interpreter) must fit
    ``max_bytes``."""
    specs = input_specs(model, signature)
    supplied = match_inputs(model, given or {}, signature)
    missing = {spec.name for spec in specs if spec.name not in supplied}
    # the given and the seeded together count against the limit, checked before any is made
    seeded = seeded_inputs(model, seed, signature, max_bytes=max_bytes, names=missing,
                           given=supplied, reserved=reserved)
    out: dict[str, np.ndarray] = {}
    generated = []
    for spec in specs:
        if spec.name in supplied:
            out[spec.name] = supplied[spec.name]
        else:
            out[spec.name] = seeded[spec.name]
            generated.append(spec.name)
    return out, generated


def positional(model: Model, inputs: Mapping[str, np.ndarray], signature: str | None = None
               ) -> list[np.ndarray]:
    """Arrays keyed by input name, in the order of subgraph 0's inputs list (what
    `Interpreter.set_inputs` takes as a sequence).  A signature's inputs have no position
    the interpreter accepts: pass them by name (an `InputError` here says so)."""
    if signature is not None:
        raise InputError(f"signature {signature!r} takes its inputs by name: pass the dict "
                         "itself, not positional(...)")
    specs = sorted(input_specs(model, signature), key=lambda s: s.position)
    return [inputs[s.name] for s in specs]
