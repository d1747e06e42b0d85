"""Generating tokens with an on-device LLM: prefill, then decode with the KV cache carried.

A model exported by litert-torch has ``prefill_N`` signatures and a ``decode`` signature
over one set of weights (`generation_plan` reads which input takes what).  Generating is
a chain of signature calls, defined here so that any runtime can reproduce it step for
step; for a prompt of k ids:

* **prefill** runs once per chunk of the prompt (one chunk when a prefill signature holds
  it; else LiteRT-LM's split, `generation_plan.prefill_chunks`).  A chunk of its N-token
  signature starting at position P gets the chunk's ids padded with 0 to N, positions
  P..P+N-1 and, when the model takes one, the causal mask of those positions; the first
  chunk gets a KV cache of zeros;
* **decode step 1** gets the last prompt id at position k-1;
* **decode step i > 1** gets the previous step's argmax at position k-2+i;
* each call's KV-cache outputs become the next call's KV-cache inputs, matched by name;
* each decode step's token is the argmax of its logits (the first index on a tie).

A BOS id, when asked for, is the prompt's first id (as LiteRT-LM prepends its start token).
`Generation` is the loop's state, one `Call` at a time, so a debugger can pause inside any
call (`interpreter.session.DebugSession` drives it); `generate` runs it to the end on any
``run(signature, inputs) -> outputs`` function::

    plan = find_plan(model, prompt_length=3)
    result = generate(model, interpreter_runner(Interpreter(model)), [1, 2, 3], 8, plan)
    result.tokens          # the 8 generated ids

Anything the loop cannot do right is a `GenerationError` (an `InputError`) naming what:
a signature or input it cannot find or feed, a position past the KV cache.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..model import Model
from .generation_plan import (FIELDS, GenerationError, GenerationPlan, causal_mask,
                              check_plan, find_plan, parse_settings, signature_io)

__all__ = ["FIELDS", "Call", "CallRecord", "Generation", "GenerationError",
           "GenerationPlan", "GenerationResult", "check_plan", "find_plan", "generate",
           "interpreter_runner", "parse_prompt", "parse_settings"]


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
    """One signature call of the loop.  ``index`` is 0 for a prefill call and i for decode
    step i; ``number`` counts every call from 0.  ``inputs`` are every input by name,
    read-only.  A decode step is fed ``token`` at ``position``; a prefill call feeds
    ``ids`` prompt ids from ``position`` (its first), padded to ``length``, and is chunk
    ``chunk`` of ``chunks``; its ``token`` is the last of them."""

    index: int
    signature: str
    inputs: Mapping[str, np.ndarray]
    token: int
    position: int
    total: int  # calls in the whole loop (prefill chunks + decode steps)
    number: int = 0
    chunk: int = 0
    chunks: int = 1
    ids: int = 0
    length: int = 0

    @property
    def label(self) -> str:
        """``prefill``, ``prefill 2/3`` or ``decode #3``: how the call stack and the CLI
        name it."""
        if self.index:
            return f"decode #{self.index}"
        return "prefill" if self.chunks == 1 else f"prefill {self.chunk + 1}/{self.chunks}"

    def fed(self) -> str:
        """What the call was fed, in a few words."""
        if self.index:
            return f"token {self.token} at position {self.position}"
        last = self.position + self.length - 1
        return (f"{self.ids} prompt ids + {self.length - self.ids} padding at positions "
                f"{self.position}..{last}")

    def describe(self) -> str:
        return (f"{self.label}: signature {self.signature!r}, {self.fed()}, call "
                f"{self.number + 1} of {self.total}")


@dataclass(frozen=True)
class CallRecord:
    """What one finished call was fed and gave (for reports); ``fed`` is `Call.fed`."""

    label: str
    signature: str
    token: int
    position: int
    output: int | None  # the argmax of a decode step
    seconds: float = 0.0
    fed: str = ""


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
        k = len(self.prompt)
        self.chunks = plan.chunks(k)
        key, n, start, _ = self.chunks[-1]
        last = k - 2 + self.steps
        if plan.context is not None and start + n - 1 >= plan.context:
            raise GenerationError(
                f"the prompt's {k} ids are prefilled by {key!r} at positions {start}.."
                f"{start + n - 1}: the KV cache holds {plan.context} positions "
                f"(0..{plan.context - 1})")
        if plan.context is not None and last >= plan.context:
            raise GenerationError(
                f"{self.steps} decode steps after {k} prompt ids reach position {last}: the "
                f"KV cache holds {plan.context} positions (0..{plan.context - 1})")
        self._inputs = {key: signature_io(model, key)[0] for key, _ in plan.calls}
        self.tokens: list[int] = []
        self.records: list[CallRecord] = []
        self._kv: dict[str, np.ndarray] = {}
        self._next = 0
        self.current: Call | None = None

    @property
    def total(self) -> int:
        return len(self.chunks) + self.steps

    @property
    def done(self) -> bool:
        return self._next >= self.total and self.current is None

    def _array(self, tensor, values) -> np.ndarray:
        return _frozen(np.asarray(values).astype(tensor.dtype).reshape(tensor.shape))

    def _prefill(self, number: int) -> Call:
        plan = self.plan
        key, n, start, count = self.chunks[number]
        ins = self._inputs[key]
        ids = np.zeros(n, np.int64)
        ids[:count] = self.prompt[start:start + count]
        inputs = {plan.tokens: self._array(ins[plan.tokens], ids),
                  plan.position: self._array(ins[plan.position], start + np.arange(n))}
        if plan.mask:
            t = ins[plan.mask]
            inputs[plan.mask] = _frozen(causal_mask(t.shape, t.dtype, start))
        for name in plan.kv:
            inputs[name] = self._kv[name] if number else \
                self._array(ins[name], np.zeros(ins[name].shape))
        return Call(0, key, MappingProxyType(inputs), int(ids[count - 1]), start, self.total,
                    number, number, len(self.chunks), count, n)

    def _decode(self, number: int) -> Call:
        plan, k = self.plan, len(self.prompt)
        i = number - len(self.chunks) + 1
        ins = self._inputs[plan.decode]
        token = self.prompt[-1] if i == 1 else self.tokens[-1]
        pos = k - 2 + i
        inputs = {plan.tokens: self._array(ins[plan.tokens], [token]),
                  plan.position: self._array(ins[plan.position], [pos])}
        if plan.mask:
            t = ins[plan.mask]
            inputs[plan.mask] = _frozen(causal_mask(t.shape, t.dtype, pos))
        inputs.update({name: self._kv[name] for name in plan.kv})
        return Call(i, plan.decode, MappingProxyType(inputs), token, pos, self.total, number)

    def next_call(self) -> Call | None:
        """The next call with its inputs (None when the loop is done); it becomes
        ``current`` until `record` takes its outputs."""
        if self.current is not None:
            raise RuntimeError(f"{self.current.label} has not been recorded")
        n = self._next
        if n >= self.total:
            return None
        self.current = self._prefill(n) if n < len(self.chunks) else self._decode(n)
        return self.current

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
            token = int(np.argmax(last_row(logits)))
            self.tokens.append(token)
        self.records.append(CallRecord(call.label, call.signature, call.token, call.position,
                                       token, seconds, call.fed()))
        self.current = None
        self._next += 1
        return token


def last_row(logits: Any) -> np.ndarray:
    """The logits of a decode step's (last) token: the last row over the last axis."""
    logits = np.asarray(logits)
    return logits.reshape(-1, logits.shape[-1])[-1]


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
                           "position": c.position, "fed": c.fed, "argmax": c.output,
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

