"""The generation loop's plan, read from a decoder's signatures: which signature prefills and
which decodes, which input takes what, and where the KV cache keeps its positions.

litert-torch exports an LLM as ``prefill_N`` signatures (one per prefill length) and a
``decode`` signature over one set of weights.  Each takes ``tokens`` and ``input_pos``, the
KV cache (``kv_cache_k_i``, ``kv_cache_v_i`` per layer, given back under the same names)
and, when exported with ``mask_as_input``, an additive causal ``mask``.  The names are
where the search starts; the roles are read from the tensors:

* **KV cache**: the inputs of decode that are also its outputs.  Which axis of each one
  holds positions is read from the op that writes the new entries into it (a
  DYNAMIC_UPDATE_SLICE of the cache input, directly or inside a composite): the axis
  where the slice written is 1 long in decode and N long in a prefill of N tokens.  So
  the default layout (``[1, positions, heads, head_dim]`` for k and v) and litert-torch's
  ``KV_LAYOUT_TRANSPOSED`` (k ``[1, heads, positions, head_dim]``, v ``[1, heads,
  head_dim, positions]``) are both read right, whatever the sizes.  The cache's length on
  that axis is the context: how many positions the loop may write.
* **mask**: a float input of decode shaped ``[1, ..., 1, context]`` whose prefill
  counterpart is ``[1, ..., N, context]``; the loop feeds litert-torch's causal mask, 0
  where the key's position is at or before the query's and -inf after it.
* **prefills**: every other signature that takes the same token, position, KV (and
  mask) inputs with more than one token; a prompt goes through the smallest that holds
  it, or in chunks as LiteRT-LM does: the longest prefill while the rest fills it, then
  the smallest that holds what remains.  A prefill needs no ``logits`` output.

Any input none of these covers is refused (`GenerationError`), naming the input and its
shape; any piece can be set by hand when a model names it otherwise (`parse_settings`).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from ..model import Model
from .inputs import InputError

#: the pieces of a plan that can be set by hand (``FIELD=VALUE``), in the order shown
FIELDS = ("prefill", "decode", "tokens", "position", "logits", "kv", "mask", "context")
#: litert-torch's names, where the search starts
PREFILL_PREFIX, DECODE_KEY = "prefill", "decode"
TOKENS, POSITION, LOGITS = "tokens", "input_pos", "logits"
#: ops that write a slice into a tensor: (operand, update) input positions
_CACHE_WRITERS = {"DYNAMIC_UPDATE_SLICE": (0, 1), "STABLEHLO_DYNAMIC_UPDATE_SLICE": (0, 1)}


class GenerationError(InputError):
    """The generation loop cannot run on this model as set up (the message says why)."""


@dataclass(frozen=True)
class Feed:
    """One input of one signature and what the loop puts in it."""

    signature: str
    input: str
    shape: tuple[int, ...]
    dtype: str
    role: str  # tokens, position, mask, kv
    fed: str

    def to_dict(self) -> dict[str, Any]:
        return {"signature": self.signature, "input": self.input, "shape": list(self.shape),
                "dtype": self.dtype, "role": self.role, "fed": self.fed}


@dataclass(frozen=True)
class GenerationPlan:
    """Which signatures prefill and which decodes, the names the loop feeds and reads, and
    how the KV cache is laid out.

    ``prefill`` is the prefill a prompt of the length asked for starts with (the smallest
    that holds it, else the longest); ``prefills`` every prefill the loop may use, as
    (signature, tokens) from the shortest.  ``kv`` are the KV-cache names and
    ``kv_axes`` the axis of each that holds positions (None: not found); ``context`` is
    how many positions the cache holds (None: not checked).  ``feeds`` says what each
    input of each signature gets."""

    prefill: str
    decode: str
    tokens: str = TOKENS
    position: str = POSITION
    logits: str = LOGITS
    kv: tuple[str, ...] = ()
    prefill_length: int = 0
    context: int | None = None
    prefills: tuple[tuple[str, int], ...] = ()
    mask: str | None = None
    kv_axes: tuple[int | None, ...] = ()
    feeds: tuple[Feed, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"prefill": self.prefill, "decode": self.decode, "tokens": self.tokens,
                "position": self.position, "logits": self.logits, "kv": list(self.kv),
                "prefill_length": self.prefill_length, "context": self.context,
                "prefills": [{"signature": k, "tokens": n} for k, n in self.prefills],
                "mask": self.mask,
                "kv_positions_axis": dict(zip(self.kv, self.kv_axes)),
                "feeds": [f.to_dict() for f in self.feeds]}

    def describe(self) -> str:
        """One line: ``prefill_8 (8 tokens) then decode; ... KV cache: 4 tensors ...``."""
        more = [f"{k} ({n})" for k, n in self.prefills if k != self.prefill]
        also = f" (or in chunks with {', '.join(more)})" if more else ""
        ctx = f", {self.context} positions" if self.context else ""
        axes = sorted({a for a in self.kv_axes if a is not None})
        on = f" on axis {'/'.join(map(str, axes))}" if axes else ""
        mask = f", causal mask {self.mask!r}" if self.mask else ""
        return (f"{self.prefill} ({self.prefill_length} tokens){also} then {self.decode}; "
                f"tokens {self.tokens!r}, position {self.position!r}{mask}, logits "
                f"{self.logits!r}; KV cache: {len(self.kv)} tensors carried by name{ctx}{on}")

    @property
    def calls(self) -> tuple[tuple[str, int], ...]:
        """Every signature the loop may call, as (key, tokens it takes): prefills, decode."""
        return (*(self.prefills or ((self.prefill, self.prefill_length),)), (self.decode, 1))

    def chunks(self, prompt_length: int) -> list[tuple[str, int, int, int]]:
        """The prefill calls of a prompt: (signature, tokens it takes, first position, ids
        it feeds), as LiteRT-LM splits a prompt (`prefill_chunks`)."""
        return prefill_chunks(self.calls[:-1], prompt_length)


def prefill_chunks(prefills: Sequence[tuple[str, int]], prompt_length: int
                   ) -> list[tuple[str, int, int, int]]:
    """LiteRT-LM's split of a prompt over prefill signatures (``prefills`` from the
    shortest): the longest while what remains fills it, then the shortest that holds
    the rest.  Gives (signature, tokens it takes, first position, ids it feeds)."""
    key, n = prefills[-1]
    out, start = [], 0
    while prompt_length - start >= n:
        out.append((key, n, start, n))
        start += n
    rest = prompt_length - start
    if rest > 0:
        key, n = next((k, m) for k, m in prefills if m >= rest)
        out.append((key, n, start, rest))
    return out


def causal_mask(shape: Sequence[int], dtype: np.dtype, start: int) -> np.ndarray:
    """litert-torch's additive causal mask for queries at positions start, start+1, ...
    (the rows of the second-to-last axis) over the cache (the last axis): 0 where the
    key's position is at or before the query's, -inf after it."""
    rows, cols = int(shape[-2]), int(shape[-1])
    query = start + np.arange(rows)[:, None]
    mask = np.where(np.arange(cols)[None, :] <= query, 0.0, -np.inf)
    return np.broadcast_to(mask, tuple(shape)).astype(dtype)


# ------------------------------------------------------------------------------------------
# reading the signatures
# ------------------------------------------------------------------------------------------
def signature_io(model: Model, key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A signature's inputs and outputs, name -> model Tensor."""
    sig = model.signature(key)
    sg = model.subgraphs[sig.subgraph_index]
    return ({m.name: sg.tensors[m.tensor_index] for m in sig.inputs},
            {m.name: sg.tensors[m.tensor_index] for m in sig.outputs})


def _size(tensor) -> int:
    return int(np.prod(tensor.shape, dtype=np.int64)) if tensor.shape is not None else 0


def _keys(model: Model) -> list[str]:
    return [s.key for s in model.signature_defs]


def _shape(tensor) -> str:
    return f"[{', '.join(map(str, tensor.shape))}] {tensor.type_name}"


def _no(what: str, model: Model, how: str) -> GenerationError:
    keys = ", ".join(_keys(model)) or "none"
    return GenerationError(f"no {what} (signatures: {keys}); {how}")


def _find_decode(model: Model) -> str:
    keys = _keys(model)
    if DECODE_KEY in keys:
        return DECODE_KEY
    named = [k for k in keys if k.startswith(DECODE_KEY)]
    if len(named) == 1:
        return named[0]
    raise _no(f"signature named {DECODE_KEY!r}", model, "name the decode signature "
              "(decode=KEY)")


def _kv_names(given: str | Iterable[str] | None, decode_in: Mapping, decode_out: Mapping,
              skip: set[str]) -> tuple[str, ...]:
    """The KV names: given (names or glob patterns, comma-separated or a list), else every
    name that is both an input and an output of decode (in decode's input order)."""
    if given is None:
        return tuple(n for n in decode_in if n in decode_out and n not in skip)
    patterns = [p.strip() for p in (given.split(",") if isinstance(given, str) else given)]
    names: list[str] = []
    for p in filter(None, patterns):
        hits = [n for n in decode_in if fnmatch.fnmatchcase(n, p)]
        if not hits:
            raise GenerationError(f"kv {p!r} names no input of the decode signature "
                                  f"(inputs: {', '.join(decode_in)})")
        names += [n for n in hits if n not in names]
    return tuple(names)


def _readers(model: Model, subgraph: int, tensor: int) -> Iterator[tuple[int, str, int]]:
    """(op index, op name, input slot) of every op of ``subgraph`` that reads ``tensor``."""
    cols = model.subgraphs[subgraph].columns
    for pos in np.flatnonzero(cols.inputs == tensor):
        k = int(np.searchsorted(cols.input_offsets, pos, side="right") - 1)
        yield k, model.operator_codes[int(cols.opcode_index[k])].name, \
            int(pos - cols.input_offsets[k])


def _cache_writes(model: Model, subgraph: int, tensor: int, depth: int = 0
                  ) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(cache shape, slice shape) of every op of ``subgraph`` that writes a slice into
    tensor ``tensor`` (following it into a composite's decomposition)."""
    sg = model.subgraphs[subgraph]
    found = []
    for k, name, slot in _readers(model, subgraph, tensor):
        if name in _CACHE_WRITERS and slot == _CACHE_WRITERS[name][0]:
            update = int(sg.columns.op_inputs(k)[_CACHE_WRITERS[name][1]])
            found.append((tuple(sg.tensors[tensor].shape), tuple(sg.tensors[update].shape)))
        elif name == "STABLEHLO_COMPOSITE" and depth < 3:
            inner = sg.operators[k].called_subgraphs.get("decomposition")
            if inner is not None and slot < len(model.subgraphs[inner].inputs):
                found += _cache_writes(model, inner, model.subgraphs[inner].inputs[slot],
                                       depth + 1)
    return found


def _positions_axis(model: Model, name: str, calls: Sequence[tuple[str, int]]) -> int | None:
    """The axis of KV tensor ``name`` that holds positions: where the slice written into it
    is as long as the call's tokens (1 in decode, N in a prefill) and the cache longer,
    in every call given as (signature, tokens); None when no write shows it."""
    axes: set[int] | None = None
    for key, n in calls:
        sig = model.signature(key)
        index = next((m.tensor_index for m in sig.inputs if m.name == name), None)
        if index is None:  # not an input of this signature: check_plan says so
            continue
        for cache, piece in _cache_writes(model, sig.subgraph_index, index):
            if len(cache) != len(piece):
                continue
            here = {a for a, (c, p) in enumerate(zip(cache, piece)) if p == n and c > n}
            axes = here if axes is None else axes & here
    return axes.pop() if axes is not None and len(axes) == 1 else None


def _layout(model: Model, decode: str, prefills: Sequence[tuple[str, int]],
            kv: Sequence[str]) -> tuple[tuple[int | None, ...], int | None]:
    """Each KV tensor's positions axis, and the positions all of them hold (the least)."""
    dec_in, _ = signature_io(model, decode)
    calls = [(decode, 1), *prefills]
    axes = tuple(_positions_axis(model, name, calls) for name in kv)
    lengths = [dec_in[name].shape[a] for name, a in zip(kv, axes) if a is not None]
    return axes, (min(lengths) if lengths and None not in axes else None)


def _find_mask(model: Model, decode: str, prefills: Sequence[tuple[str, int]],
               covered: set[str], context: int | None) -> str | None:
    """The decode input shaped as a causal mask over the cache (see the module
    docstring), whose prefill counterparts have N rows."""
    dec_in, _ = signature_io(model, decode)
    found = []
    for name, t in dec_in.items():
        shape = tuple(t.shape)
        if name in covered or t.dtype is None or t.dtype.kind != "f" or len(shape) < 2:
            continue
        if shape[-2] != 1 or any(d != 1 for d in shape[:-2]) or shape[-1] < 2:
            continue
        if context is not None and shape[-1] != context:
            continue
        rows = []
        for key, n in prefills:
            ins, _ = signature_io(model, key)
            p = ins.get(name)
            rows.append(p is not None and tuple(p.shape) == shape[:-2] + (n, shape[-1]))
        if all(rows):
            found.append(name)
    return found[0] if len(found) == 1 else None


#: ops that look token ids up in a table: (op name, the ids' input slot)
_LOOKUPS = {("GATHER", 1), ("EMBEDDING_LOOKUP", 0)}
#: ops that pass values on unchanged (only their shape): followed from an input to a lookup
_RESHAPES = {"RESHAPE", "SQUEEZE", "EXPAND_DIMS"}


def _looked_up(model: Model, subgraph: int, tensor: int, depth: int = 0) -> bool:
    """Whether ``tensor`` (or it reshaped) is the ids an embedding lookup reads."""
    cols = model.subgraphs[subgraph].columns
    for k, name, slot in _readers(model, subgraph, tensor):
        if (name, slot) in _LOOKUPS:
            return True
        if name in _RESHAPES and slot == 0 and depth < 4 and \
                _looked_up(model, subgraph, int(cols.op_outputs(k)[0]), depth + 1):
            return True
    return False


def _find_ids(model: Model, decode: str, tokens: str | None, position: str | None
              ) -> tuple[str, str]:
    """The token and position inputs: litert-torch's names, else by role among decode's
    two one-element integer inputs (the tokens are looked up in an embedding table)."""
    dec_in, _ = signature_io(model, decode)
    if (tokens or TOKENS) in dec_in and (position or POSITION) in dec_in:
        return tokens or TOKENS, position or POSITION
    ints = [n for n, t in dec_in.items() if t.dtype is not None and t.dtype.kind in "iu"
            and _size(t) == 1 and n not in (tokens, position)]
    sig = model.signature(decode)
    index = {m.name: m.tensor_index for m in sig.inputs}
    looked_up = [n for n in ints if _looked_up(model, sig.subgraph_index, index[n])]
    if tokens is None and len(looked_up) == 1:
        tokens = looked_up[0]
    rest = [n for n in ints if n != tokens]
    if position is None and tokens is not None and len(rest) == 1:
        position = rest[0]
    if tokens is None or position is None:
        raise GenerationError(
            f"decode signature {decode!r} has no inputs named {TOKENS!r} and "
            f"{POSITION!r}, and its one-element integer inputs ({', '.join(ints) or 'none'}) "
            "do not show which is which; name them (tokens=NAME, position=NAME)")
    return tokens, position


def _find_prefills(model: Model, decode: str, tokens: str) -> list[tuple[str, int]]:
    """Every signature but decode that takes more than one token and no input decode does
    not take (as (key, tokens) from the shortest); when none does, those named prefill*
    with a token input, for `check_plan` to say what else they take."""
    dec_in, _ = signature_io(model, decode)
    found, named = [], []
    for key in (k for k in _keys(model) if k != decode):
        ins, _ = signature_io(model, key)
        if tokens in ins and _size(ins[tokens]) > 1:
            (found if set(ins) <= set(dec_in) else named).append((_size(ins[tokens]), key))
    named = [(n, k) for n, k in named if k.startswith(PREFILL_PREFIX)]
    if not found and not named:
        raise _no(f"prefill signature taking several {tokens!r}", model,
                  "name the prefill signature (prefill=KEY)")
    return [(k, n) for n, k in sorted(found or named)]


def _find_logits(decode: str, dec_in: Mapping, dec_out: Mapping) -> str:
    if LOGITS in dec_out:
        return LOGITS
    others = [n for n in dec_out if n not in dec_in]
    if len(others) != 1:
        raise GenerationError(f"decode signature {decode!r} has no {LOGITS!r} output; name "
                              f"it (logits=NAME, outputs: {', '.join(dec_out)})")
    return others[0]


def find_plan(model: Model, prompt_length: int | None = None, *, prefill: str | None = None,
              decode: str | None = None, tokens: str | None = None,
              position: str | None = None, logits: str | None = None,
              kv: str | Iterable[str] | None = None, mask: str | None = None,
              context: int | None = None) -> GenerationPlan:
    """The loop's pieces (see the module docstring), each found unless given, checked
    (`check_plan`).  ``prefill`` given: that signature alone (in chunks when the prompt
    is longer).  ``prompt_length`` picks the prefill the prompt starts with."""
    decode = decode or _find_decode(model)
    for key in (prefill, decode):
        if key is not None and key not in _keys(model):
            raise _no(f"signature {key!r}", model, "name one the model has")
    tokens, position = _find_ids(model, decode, tokens, position)
    dec_in, dec_out = signature_io(model, decode)
    logits = logits or _find_logits(decode, dec_in, dec_out)
    names = _kv_names(kv, dec_in, dec_out, {tokens, position})
    if prefill is not None:
        ins, _ = signature_io(model, prefill)
        prefills = [(prefill, _size(ins[tokens]) if tokens in ins else 0)]
    else:
        prefills = _find_prefills(model, decode, tokens)
    axes, found = _layout(model, decode, prefills, names)
    if mask is None:
        mask = _find_mask(model, decode, prefills, {tokens, position, *names}, found)
    if context is None:
        context = found
        if context is None and mask is not None:
            context = int(dec_in[mask].shape[-1])
    first = prefills[-1]
    if prompt_length is not None:
        first = next((p for p in prefills if p[1] >= prompt_length), prefills[-1])
    elif prefill is None:
        first = prefills[0]
    plan = GenerationPlan(first[0], decode, tokens, position, logits, names, first[1],
                          context, tuple(prefills), mask, axes)
    check_plan(model, plan)
    return GenerationPlan(**{**plan.__dict__, "feeds": _feeds(model, plan)})


def _check_ids(key: str, ins: Mapping, plan: GenerationPlan, n: int) -> None:
    """The token and position inputs of signature ``key``: integers, ``n`` of each."""
    for name in (plan.tokens, plan.position):
        if name not in ins:
            raise GenerationError(f"signature {key!r} has no input {name!r} (inputs: "
                                  f"{', '.join(ins)})")
        t = ins[name]
        if t.dtype is None or t.dtype.kind not in "iu":
            raise GenerationError(f"input {name!r} of {key!r} is {t.type_name}, not "
                                  "integer ids or positions")
    got = _size(ins[plan.tokens])
    if key == plan.decode and (got != 1 or _size(ins[plan.position]) != 1):
        raise GenerationError(f"decode {key!r} takes {_shape(ins[plan.tokens])} tokens and "
                              f"{_shape(ins[plan.position])} positions: the loop decodes "
                              "one token per step")
    if got != n or _size(ins[plan.position]) != n or n < 1:
        raise GenerationError(f"prefill {key!r} takes {_shape(ins[plan.tokens])} tokens and "
                              f"{_shape(ins[plan.position])} positions")


def _check_mask(key: str, ins: Mapping, plan: GenerationPlan, n: int) -> None:
    t = ins.get(plan.mask)
    if t is None:
        raise GenerationError(f"signature {key!r} has no mask input {plan.mask!r}")
    shape = tuple(t.shape)
    if (t.dtype is None or t.dtype.kind != "f" or len(shape) < 2 or shape[-2] != n
            or any(d != 1 for d in shape[:-2])
            or (plan.context is not None and shape[-1] != plan.context)):
        cols = plan.context if plan.context is not None else "positions"
        raise GenerationError(f"mask {plan.mask!r} of {key!r} is {_shape(t)}: the loop feeds "
                              f"a float causal mask [1, 1, {n}, {cols}]")


def check_plan(model: Model, plan: GenerationPlan) -> None:
    """Refuse a plan the loop cannot run right: a name a signature lacks, an input no
    piece covers (named with its shape), token, position or mask inputs of the wrong size
    or type, a KV tensor whose shape differs between the calls."""
    if not plan.kv:
        raise GenerationError(f"decode signature {plan.decode!r} has no input that is also "
                              "an output (the KV cache); name them (kv=NAME,...)")
    dec_in, dec_out = signature_io(model, plan.decode)
    covered = {plan.tokens, plan.position, *plan.kv} | ({plan.mask} if plan.mask else set())
    for key, n in plan.calls:
        ins, outs = signature_io(model, key)
        _check_ids(key, ins, plan, n)
        extra = [e for e in ins if e not in covered]
        if extra:
            raise GenerationError(
                f"signature {key!r} also takes "
                f"{', '.join(f'{e!r} {_shape(ins[e])}' for e in extra)}, which is none of "
                "tokens, position or KV cache, nor a causal mask: the loop cannot feed it")
        if plan.mask:
            _check_mask(key, ins, plan, n)
        for name in plan.kv:
            if name not in ins or name not in outs:
                raise GenerationError(f"KV tensor {name!r} is not both an input and an "
                                      f"output of signature {key!r}")
            shapes = {tuple(t.shape) for t in (ins[name], outs[name], dec_in[name])}
            if len(shapes) != 1:
                raise GenerationError(f"KV tensor {name!r} has shapes "
                                      f"{sorted(list(s) for s in shapes)} in signatures "
                                      f"{key!r} and {plan.decode!r}")
    if plan.logits not in dec_out or plan.logits in plan.kv:
        raise GenerationError(f"decode signature {plan.decode!r} has no output "
                              f"{plan.logits!r} other than the KV cache (outputs: "
                              f"{', '.join(dec_out)})")


def _feeds(model: Model, plan: GenerationPlan) -> tuple[Feed, ...]:
    """What the loop puts in every input of every signature it calls."""
    out = []
    for key, n in plan.calls:
        ins, _ = signature_io(model, key)
        prefill = key != plan.decode
        what = {plan.tokens: ("tokens", f"the prompt's ids from the call's first position, "
                              f"padded with 0 to {n}" if prefill else
                              "the last prompt id, then each step's argmax"),
                plan.position: ("position", f"positions P..P+{n - 1} (P: the call's first "
                                f"position)" if prefill else "the position of that id")}
        if plan.mask:
            what[plan.mask] = ("mask", "causal mask: 0 where the key's position is at or "
                               "before the query's, -inf after it")
        for name, axis in zip(plan.kv, plan.kv_axes):
            where = f"positions on axis {axis}" if axis is not None else "positions axis " \
                "not found"
            what[name] = ("kv", f"zeros in the first call, then the last call's output "
                                f"{name!r} ({where})")
        out += [Feed(key, name, tuple(int(d) for d in ins[name].shape), ins[name].type_name,
                     *what[name]) for name in ins]
    return tuple(out)


def parse_settings(items: Iterable[str]) -> dict[str, Any]:
    """``["prefill=prefill_64", "kv=cache_*"]`` as `find_plan` keywords (a GenerationError
    for an unknown field or a missing ``=``)."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in FIELDS or not value.strip():
            raise GenerationError(f"{item!r}: write FIELD=VALUE with FIELD one of "
                                  f"{', '.join(FIELDS)}")
        if name == "context":
            try:
                out[name] = int(value)
            except ValueError:
                raise GenerationError(f"context={value}: a number of positions") from None
        else:
            out[name] = value.strip()
    return out
