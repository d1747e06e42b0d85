"""Generating tokens with an on-device LLM: prefill, then decode with the KV cache carried.

A model exported by litert-torch has a ``prefill_N`` signature and a ``decode`` signature
over one set of weights; both take ``tokens``, ``input_pos`` and the KV cache
(``kv_cache_k_0``, ``kv_cache_v_0``, ... one pair per layer) and give the cache back under
the same names; decode also gives ``logits``.  Generating is a chain of signature calls,
defined here so that any runtime can reproduce it step for step:

* **prefill** gets the prompt's k ids padded with 0 to its length N, positions 0..N-1 and
  a KV cache of zeros;
* **decode step 1** gets the last prompt id at position k-1;
* **decode step i > 1** gets the previous step's argmax at position k-2+i;
* each call's KV-cache outputs become the next call's KV-cache inputs, matched by name;
* each decode step's token is the argmax of its logits (the first index on a tie).

`GenerationPlan` names the pieces (which signature prefills, which decodes, the token and
position inputs, the logits output, the KV names); `find_plan` finds them from the names
litert-torch uses, and any of them can be given by hand when a model names them otherwise.
`Generation` is the loop's state, one `Call` at a time, so a debugger can pause inside any
call (`interpreter.session.DebugSession` drives it); `generate` runs it to the end on any
``run(signature, inputs) -> outputs`` function::

    plan = find_plan(model, prompt_length=3)
    result = generate(model, interpreter_runner(Interpreter(model)), [1, 2, 3], 8, plan)
    result.tokens          # the 8 generated ids

Anything the loop cannot do right is a `GenerationError` (an `InputError`) naming what:
a signature or input it cannot find, an input none of the pieces covers, a prompt longer
than the prefill, a position past the KV cache.
"""
from __future__ import annotations

import fnmatch
import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..model import Model
from .inputs import InputError

#: the pieces of a plan, in the order they are shown and set (``FIELD=VALUE``)
FIELDS = ("prefill", "decode", "tokens", "position", "logits", "kv", "context")
#: litert-torch's names
PREFILL_PREFIX, DECODE_KEY = "prefill", "decode"
TOKENS, POSITION, LOGITS = "tokens", "input_pos", "logits"


class GenerationError(InputError):
    """The generation loop cannot run on this model as set up (the message says why)."""


@dataclass(frozen=True)
class GenerationPlan:
    """Which signature prefills and which decodes, and the names the loop feeds and reads.

    ``kv`` are the names that are both inputs and outputs of the two signatures (the KV
    cache); ``context`` is how many positions the cache holds when known (None: not
    checked)."""

    prefill: str
    decode: str
    tokens: str = TOKENS
    position: str = POSITION
    logits: str = LOGITS
    kv: tuple[str, ...] = ()
    prefill_length: int = 0
    context: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"prefill": self.prefill, "decode": self.decode, "tokens": self.tokens,
                "position": self.position, "logits": self.logits, "kv": list(self.kv),
                "prefill_length": self.prefill_length, "context": self.context}

    def describe(self) -> str:
        """One line: ``prefill_8 (8 tokens) then decode; KV cache: 4 tensors by name``."""
        ctx = f", {self.context} positions" if self.context else ""
        return (f"{self.prefill} ({self.prefill_length} tokens) then {self.decode}; "
                f"tokens {self.tokens!r}, position {self.position!r}, logits "
                f"{self.logits!r}; KV cache: {len(self.kv)} tensors carried by name{ctx}")


# ------------------------------------------------------------------------------------------
# finding the pieces
# ------------------------------------------------------------------------------------------
def _io(model: Model, key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A signature's inputs and outputs, name -> model Tensor."""
    sig = model.signature(key)
    sg = model.subgraphs[sig.subgraph_index]
    return ({m.name: sg.tensors[m.tensor_index] for m in sig.inputs},
            {m.name: sg.tensors[m.tensor_index] for m in sig.outputs})


def _size(tensor) -> int:
    return int(np.prod(tensor.shape, dtype=np.int64)) if tensor.shape is not None else 0


def _keys(model: Model) -> list[str]:
    return [s.key for s in model.signature_defs]


def _no(what: str, model: Model, how: str) -> GenerationError:
    keys = ", ".join(_keys(model)) or "none"
    return GenerationError(f"no {what} (signatures: {keys}); {how}")


def _find_prefill(model: Model, prompt_length: int | None, tokens: str) -> str:
    candidates = []
    for key in _keys(model):
        if key.startswith(PREFILL_PREFIX):
            ins, _ = _io(model, key)
            if tokens in ins:
                candidates.append((_size(ins[tokens]), key))
    if not candidates:
        raise _no(f"signature named {PREFILL_PREFIX}* with a {tokens!r} input", model,
                  "name the prefill signature (prefill=KEY)")
    candidates.sort()
    if prompt_length is None:
        return candidates[0][1]
    for n, key in candidates:  # the shortest prefill the prompt fits in, as LiteRT-LM picks
        if n >= prompt_length:
            return key
    longest = ", ".join(f"{k}: {n}" for n, k in candidates)
    raise GenerationError(f"the prompt has {prompt_length} ids, more than any prefill "
                          f"signature takes ({longest})")


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


def find_plan(model: Model, prompt_length: int | None = None, *, prefill: str | None = None,
              decode: str | None = None, tokens: str | None = None,
              position: str | None = None, logits: str | None = None,
              kv: str | Iterable[str] | None = None, context: int | None = None
              ) -> GenerationPlan:
    """The loop's pieces, from litert-torch's names where not given (see the module
    docstring); checked (`check_plan`).  With several ``prefill_N`` signatures the
    shortest one ``prompt_length`` ids fit in is taken."""
    tokens = tokens or TOKENS
    position = position or POSITION
    if prefill is None:
        prefill = _find_prefill(model, prompt_length, tokens)
    if decode is None:
        decode = _find_decode(model)
    for key in (prefill, decode):
        if key not in _keys(model):
            raise _no(f"signature {key!r}", model, "name one the model has")
    dec_in, dec_out = _io(model, decode)
    if logits is None:
        logits = LOGITS if LOGITS in dec_out else None
        if logits is None:
            others = [n for n in dec_out if n not in dec_in]
            if len(others) != 1:
                raise GenerationError(f"decode signature {decode!r} has no {LOGITS!r} "
                                      f"output; name it (logits=NAME, outputs: "
                                      f"{', '.join(dec_out)})")
            logits = others[0]
    names = _kv_names(kv, dec_in, dec_out, {tokens, position})
    pre_in, _ = _io(model, prefill)
    n = _size(pre_in[tokens]) if tokens in pre_in else 0
    if context is None:
        context = _context(dec_in, names)
    plan = GenerationPlan(prefill, decode, tokens, position, logits, names, n, context)
    check_plan(model, plan)
    return plan


def _context(inputs: Mapping, kv: Sequence[str]) -> int | None:
    """Positions the cache holds, when every KV tensor has litert-torch's default layout
    (batch, positions, heads, head size: rank 4, dimension 1 the same for all)."""
    dims = {tuple(inputs[n].shape)[1] for n in kv if n in inputs and len(inputs[n].shape) == 4}
    if kv and len(dims) == 1 and all(len(inputs[n].shape) == 4 for n in kv):
        return int(dims.pop())
    return None


def check_plan(model: Model, plan: GenerationPlan) -> None:
    """Refuse a plan the loop cannot run right: a name a signature lacks, an input no
    piece covers, token or position inputs of the wrong size or type, a KV tensor whose
    shape differs between the calls."""
    pre_in, pre_out = _io(model, plan.prefill)
    dec_in, dec_out = _io(model, plan.decode)
    if not plan.kv:
        raise GenerationError(f"decode signature {plan.decode!r} has no input that is also "
                              "an output (the KV cache); name them (kv=NAME,...)")
    for key, ins in ((plan.prefill, pre_in), (plan.decode, dec_in)):
        for name in (plan.tokens, plan.position):
            if name not in ins:
                raise GenerationError(f"signature {key!r} has no input {name!r} (inputs: "
                                      f"{', '.join(ins)})")
            t = ins[name]
            if t.dtype is None or t.dtype.kind not in "iu":
                raise GenerationError(f"input {name!r} of {key!r} is {t.type_name}, not "
                                      "integer ids or positions")
        covered = {plan.tokens, plan.position, *plan.kv}
        extra = [n for n in ins if n not in covered]
        if extra:
            raise GenerationError(
                f"signature {key!r} also takes {', '.join(repr(n) for n in extra)}, which "
                "is none of tokens, position or KV cache: the loop cannot feed it")
    for name in plan.kv:
        for key, ins, outs in ((plan.prefill, pre_in, pre_out), (plan.decode, dec_in, dec_out)):
            if name not in ins or name not in outs:
                raise GenerationError(f"KV tensor {name!r} is not both an input and an "
                                      f"output of signature {key!r}")
        shapes = {tuple(t.shape) for t in (pre_in[name], pre_out[name], dec_in[name],
                                           dec_out[name])}
        if len(shapes) != 1:
            raise GenerationError(f"KV tensor {name!r} has shapes "
                                  f"{sorted(list(s) for s in shapes)} in the two signatures")
    if plan.logits not in dec_out:
        raise GenerationError(f"decode signature {plan.decode!r} has no output "
                              f"{plan.logits!r} (outputs: {', '.join(dec_out)})")
    n = _size(pre_in[plan.tokens])
    if _size(pre_in[plan.position]) != n or n < 1:
        raise GenerationError(f"prefill {plan.prefill!r} takes {n} tokens and "
                              f"{_size(pre_in[plan.position])} positions")
    if _size(dec_in[plan.tokens]) != 1 or _size(dec_in[plan.position]) != 1:
        raise GenerationError(f"decode {plan.decode!r} takes {_size(dec_in[plan.tokens])} "
                              "tokens at a time: the loop decodes one token per step")


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


def parse_prompt(text: str | Sequence[int]) -> list[int]:
    """``"1,2,3"`` (or spaces) as token ids; a GenerationError for anything else."""
    if not isinstance(text, str):
        ids = [int(v) for v in text]
    else:
        parts = text.replace(",", " ").split()
        try:
            ids = [int(p) for p in parts]
        except ValueError:
            raise GenerationError(f"prompt {text!r}: token ids separated by commas, "
                                  "e.g. 1,2,3") from None
    if not ids:
        raise GenerationError("the prompt needs at least one token id")
    bad = [i for i in ids if not 0 <= i <= np.iinfo(np.int32).max]
    if bad:
        raise GenerationError(f"prompt token id {bad[0]} is not a non-negative int32")
    return ids


# ------------------------------------------------------------------------------------------
# the loop
# ------------------------------------------------------------------------------------------
def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class Call:
    """One signature call of the loop: 0 is the prefill, i > 0 decode step i.  ``inputs``
    are every input by name, read-only; ``token`` and ``position`` what a decode step is
    fed (the prefill: the prompt's last id and its position)."""

    index: int
    signature: str
    inputs: Mapping[str, np.ndarray]
    token: int
    position: int
    total: int  # calls in the whole loop (1 + decode steps)

    @property
    def label(self) -> str:
        """``prefill`` or ``decode #3``: how the call stack and the CLI name it."""
        return "prefill" if self.index == 0 else f"decode #{self.index}"

    def describe(self) -> str:
        if self.index == 0:
            return f"prefill: signature {self.signature!r}, call 1 of {self.total}"
        return (f"{self.label}: signature {self.signature!r}, token {self.token} at "
                f"position {self.position}, call {self.index + 1} of {self.total}")


@dataclass(frozen=True)
class CallRecord:
    """What one finished call was fed and gave (for reports)."""

    label: str
    signature: str
    token: int
    position: int
    output: int | None  # the argmax of a decode step
    seconds: float = 0.0


class Generation:
    """The loop's state (see the module docstring): `next_call` gives the next call with its
    inputs, `record` takes its outputs.  ``tokens`` are the ids generated so far."""

    def __init__(self, model: Model, plan: GenerationPlan, prompt: Sequence[int] | str,
                 steps: int) -> None:
        self.model = model
        self.plan = plan
        self.prompt = parse_prompt(prompt)
        self.steps = int(steps)
        if self.steps < 1:
            raise GenerationError(f"generate at least one token (got {steps})")
        k, n = len(self.prompt), plan.prefill_length
        if k > n:
            raise GenerationError(f"the prompt has {k} ids; signature {plan.prefill!r} "
                                  f"takes at most {n}")
        last = k - 2 + self.steps
        if plan.context is not None and max(last, n - 1) >= plan.context:
            raise GenerationError(
                f"{self.steps} decode steps after {k} prompt ids reach position {last}: the "
                f"KV cache holds {plan.context} positions (0..{plan.context - 1})")
        self._pre_in, _ = _io(model, plan.prefill)
        self._dec_in, _ = _io(model, plan.decode)
        self.tokens: list[int] = []
        self.records: list[CallRecord] = []
        self._kv: dict[str, np.ndarray] = {}
        self._next = 0
        self.current: Call | None = None

    @property
    def total(self) -> int:
        return self.steps + 1

    @property
    def done(self) -> bool:
        return self._next > self.steps and self.current is None

    def _array(self, tensor, values) -> np.ndarray:
        return _frozen(np.asarray(values).astype(tensor.dtype).reshape(tensor.shape))

    def next_call(self) -> Call | None:
        """The next call with its inputs (None when the loop is done); it becomes
        ``current`` until `record` takes its outputs."""
        if self.current is not None:
            raise RuntimeError(f"{self.current.label} has not been recorded")
        i = self._next
        if i > self.steps:
            return None
        plan, k = self.plan, len(self.prompt)
        if i == 0:
            ins = self._pre_in
            n = plan.prefill_length
            ids = np.zeros(n, np.int64)
            ids[:k] = self.prompt
            inputs = {plan.tokens: self._array(ins[plan.tokens], ids),
                      plan.position: self._array(ins[plan.position], np.arange(n)),
                      **{name: self._array(ins[name], np.zeros(ins[name].shape))
                         for name in plan.kv}}
            call = Call(0, plan.prefill, MappingProxyType(inputs), self.prompt[-1], 0,
                        self.total)
        else:
            ins = self._dec_in
            token = self.prompt[-1] if i == 1 else self.tokens[-1]
            pos = k - 1 if i == 1 else k - 2 + i
            inputs = {plan.tokens: self._array(ins[plan.tokens], [token]),
                      plan.position: self._array(ins[plan.position], [pos]),
                      **{name: self._kv[name] for name in plan.kv}}
            call = Call(i, plan.decode, MappingProxyType(inputs), token, pos, self.total)
        self.current = call
        return call

    def record(self, outputs: Mapping[str, Any], seconds: float = 0.0) -> int | None:
        """Take the current call's outputs (by name): its KV cache for the next call and,
        for a decode step, the argmax of its logits, which is returned."""
        call = self.current
        if call is None:
            raise RuntimeError("no call to record")
        missing = [n for n in self.plan.kv if outputs.get(n) is None]
        if missing:
            raise GenerationError(f"{call.label} gave no {', '.join(missing)}")
        self._kv = {n: _frozen(outputs[n]) for n in self.plan.kv}
        token = None
        if call.index > 0:
            logits = outputs.get(self.plan.logits)
            if logits is None or np.size(logits) == 0:
                raise GenerationError(f"{call.label} gave no {self.plan.logits!r}")
            logits = np.asarray(logits)
            token = int(np.argmax(logits.reshape(-1, logits.shape[-1])[-1]))
            self.tokens.append(token)
        self.records.append(CallRecord(call.label, call.signature, call.token, call.position,
                                       token, seconds))
        self.current = None
        self._next += 1
        return token


@dataclass
class GenerationResult:
    """What `generate` made: the ids, and every call it ran."""

    plan: GenerationPlan
    prompt: list[int]
    tokens: list[int]
    calls: list[CallRecord] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": list(self.tokens), "prompt": list(self.prompt),
                "plan": self.plan.to_dict(),
                "calls": [{"call": c.label, "signature": c.signature, "token": c.token,
                           "position": c.position, "argmax": c.output,
                           "milliseconds": c.seconds * 1000} for c in self.calls]}


Runner = Callable[[str, Mapping[str, np.ndarray]], Mapping[str, Any]]


def generate(model: Model, run: Runner, prompt: Sequence[int] | str, steps: int,
             plan: GenerationPlan | None = None) -> GenerationResult:
    """Run the whole loop on ``run(signature, inputs) -> outputs`` (any runtime)."""
    prompt = parse_prompt(prompt)
    plan = plan or find_plan(model, len(prompt))
    gen = Generation(model, plan, prompt, steps)
    while (call := gen.next_call()) is not None:
        t0 = time.perf_counter()
        outputs = run(call.signature, call.inputs)
        gen.record(outputs, time.perf_counter() - t0)
    return GenerationResult(plan, gen.prompt, list(gen.tokens), list(gen.records))


def interpreter_runner(interpreter) -> Runner:
    """``run`` for `generate` on our `Interpreter` (signatures by input name)."""
    return lambda signature, inputs: interpreter.invoke(dict(inputs), signature=signature)

