"""`tflite-viewer run MODEL --generate K [--prompt IDS] [--bos ID] [--logits OUT.npy]
[--loop FIELD=VALUE ...]`: prefill (in chunks when the prompt is longer than any prefill
signature), then K decode steps with the KV cache carried by name, and the K generated ids
(`tflite_viewer.interpreter.generation` defines the loop, `generation_plan` reads its
pieces from the signatures).

The text report names the loop's pieces, each call (what it was fed, the argmax it gave,
its time) and ends with the ids; ``--json`` gives ``{"tokens": [...], "prompt", "plan",
"calls", ...}``, the plan with ``feeds``: what the loop put in every input of every
signature.  ``--logits OUT.npy`` writes the decode steps' logits, float32 [K, vocab].
``--compare-litert`` runs the same loop with LiteRT's builtin kernels in a child process
(with ``--kernels xnnpack``, LiteRT's default interpreter: its XNNPACK delegate applied)
and compares the ids (exit 1 when they differ) and the logits (reported); our float sums
are then added in the kernel set's order unless ``--float-sums blas`` was asked.
"""
from __future__ import annotations

import argparse
import io
import sys
import time

import numpy as np

from .common import EXIT_CHECK_FAILED, CommandError, load_model_arg
from .output import Output, write_file
from .run_interpreter import kernels_said, new_interpreter

#: the prompt when none is given: one id, 1 (the beginning-of-sequence id of Llama's
#: tokenizer and of many others)
DEFAULT_PROMPT = "1"
#: run options that make no sense with --generate (it makes every input itself)
_NOT_WITH = {"inputs": "--inputs", "signature": "--signature", "dump_all": "--dump-all"}


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--generate", type=int, default=None, metavar="K",
                   help="generate K tokens: run the prefill signature on the prompt, then "
                        "the decode signature K times, the KV cache carried by name and "
                        "each step fed the argmax of the last; prints the K ids")
    p.add_argument("--prompt", metavar="IDS", default=None,
                   help=f"with --generate: the prompt's token ids, e.g. 1,2,3 (default "
                        f"{DEFAULT_PROMPT})")
    p.add_argument("--bos", type=int, default=None, metavar="ID",
                   help="with --generate: put this id (the tokenizer's beginning of "
                        "sequence) before the prompt, as LiteRT-LM does with its start "
                        "token")
    p.add_argument("--logits", metavar="OUT.npy", default=None,
                   help="with --generate: write the decode steps' logits, a float32 array "
                        "of shape [K, vocab] ('-' for stdout)")
    p.add_argument("--loop", metavar="FIELD=VALUE", action="append", default=None,
                   help="with --generate: set a piece of the loop by hand when the model "
                        "names it otherwise than litert-torch: prefill=KEY (that signature "
                        "alone), decode=KEY, tokens=NAME, position=NAME, logits=NAME, "
                        "kv=NAME,... (globs allowed), mask=NAME, context=N (default: read "
                        "from the signatures)")


def check_usage(args: argparse.Namespace) -> None:
    """Options that go with --generate only, or never with it."""
    if args.generate is None:
        for option in ("prompt", "bos", "logits", "loop"):
            if getattr(args, option) is not None:
                raise CommandError(f"--{option} goes with --generate K")
        return
    if args.generate < 1:
        raise CommandError(f"--generate {args.generate}: generate at least one token")
    for attr, option in _NOT_WITH.items():
        if getattr(args, attr, None) is not None:
            raise CommandError(f"{option} does not go with --generate (the loop makes every "
                               "input itself)")


def _prompt(args: argparse.Namespace) -> list[int]:
    """The prompt's ids, the BOS first when --bos gives one."""
    from ..interpreter.generation import parse_prompt
    prompt = parse_prompt(args.prompt if args.prompt is not None else DEFAULT_PROMPT)
    if args.bos is not None:
        if not 0 <= args.bos <= np.iinfo(np.int32).max:
            raise CommandError(f"--bos {args.bos}: a token id, a non-negative int32")
        prompt = [args.bos, *prompt]
    return prompt


def _lines(args, plan, prompt, result, rounding: str, ops: int, seconds: float,
           kernels: str) -> list[str]:
    """The text report: the loop, each call, the ids."""
    steps = args.generate
    bos = f" (BOS {args.bos} first)" if args.bos is not None else ""
    lines = [f"Model {args.model}: {steps} token{'s' if steps != 1 else ''} generated, "
             f"rounding {rounding}, {kernels}",
             f"Loop: {plan.describe()}",
             f"Prompt: {' '.join(map(str, prompt))}{bos}"]
    width = max(len(c.label) for c in result.calls)
    for c in result.calls:
        got = f" -> {c.output}" if c.output is not None else ""
        lines.append(f"  {c.label:<{width}}  {c.signature}: {c.fed}{got}  "
                     f"({c.seconds * 1000:.1f} ms)")
    lines.append(f"Tokens: {' '.join(map(str, result.tokens))}")
    lines.append(f"Ran {len(result.calls)} calls ({ops:,} ops) in {seconds * 1000:.1f} ms")
    return lines


def _compare(args, model, plan, prompt, result, logits, doc, lines,
             kernels: str) -> str | None:
    """--compare-litert: LiteRT's ids and logits beside ours (LiteRT with its default
    delegate when ``kernels`` is the interpreter's xnnpack set); the failure, if any."""
    from ..interpreter.budget import DEFAULT_TIMEOUT
    from ..interpreter.generation_litert import RESOLVER, litert_generate
    from ..interpreter.kernel_sets import RESOLVERS, XNNPACK
    resolver = RESOLVERS[XNNPACK] if kernels == XNNPACK else RESOLVER
    ref = litert_generate(model, plan, prompt, args.generate,
                          timeout=args.timeout or DEFAULT_TIMEOUT, resolver=resolver)
    same = ref.tokens == result.tokens
    first = next((i for i, (a, b) in enumerate(zip(result.tokens, ref.tokens)) if a != b),
                 None)
    theirs = np.asarray(ref.logits, np.float32)
    exact = bool(np.array_equal(logits, theirs))
    diff = float(np.max(np.abs(logits.astype(np.float64) - theirs))) if theirs.size else 0.0
    doc["litert"] = {"resolver": ref.resolver, "tokens": ref.tokens, "same": same,
                     "first_difference": None if first is None else first + 1,
                     "logits_bit_exact": exact, "logits_max_difference": diff}
    lines.append(f"LiteRT ({ref.resolver}): {' '.join(map(str, ref.tokens))} - "
                 + ("the same ids" if same else f"differs from decode #{first + 1}"))
    lines.append("Logits: " + ("bit-exact with LiteRT's" if exact else
                               f"up to {diff:.3g} from LiteRT's"))
    if same:
        return None
    return (f"the ids differ from LiteRT's from decode #{first + 1}: ours "
            f"{result.tokens[first]}, LiteRT's {ref.tokens[first]}")


def _exact_sums_for_comparison(interp) -> None:
    """Compared with LiteRT's builtin kernels, an interpreter whose float sums are BLAS's
    because ``auto`` was asked adds them in the kernel set's order instead, as the op-by-op
    cross-check does (`crosscheck.EXACT_ORDER_RESOLVERS`): the logits are then compared bit
    for bit, not within a BLAS rounding."""
    from ..interpreter.float_sums import reference_for_ref_check
    if reference_for_ref_check(interp.float_sums_asked):
        interp.reference_float_sums = True


def main(args: argparse.Namespace) -> int:
    from ..interpreter.budget import (DEFAULT_MAX_ALLOCATION_BYTES, DEFAULT_MAX_ITERATIONS,
                                      DEFAULT_TIMEOUT)
    from ..interpreter.generation import (find_plan, generate, interpreter_runner, last_row,
                                          parse_settings)

    out = Output(args, files={"--logits": args.logits})
    prompt = _prompt(args)
    settings = parse_settings(args.loop or ())
    model = load_model_arg(args.model)
    plan = find_plan(model, len(prompt), **settings)
    if args.compare_litert:
        from ..interpreter.crosscheck import require_litert
        require_litert()
    budgets = {"max_allocation_bytes": args.max_memory or DEFAULT_MAX_ALLOCATION_BYTES,
               "max_iterations": args.max_iterations or DEFAULT_MAX_ITERATIONS,
               "timeout": args.timeout or DEFAULT_TIMEOUT}
    interp = new_interpreter(model, args, budgets)
    if args.compare_litert:
        _exact_sums_for_comparison(interp)
    ops, rows = 0, []

    def run(signature, inputs):
        nonlocal ops
        outputs = interpreter_runner(interp)(signature, inputs)
        ops += sum(interp.op_calls.values())
        if signature == plan.decode:
            rows.append(np.array(last_row(outputs[plan.logits]), np.float32))
        return outputs

    t0 = time.perf_counter()
    result = generate(model, run, prompt, args.generate, plan)
    seconds = time.perf_counter() - t0
    logits = np.stack(rows)
    doc = {"model": str(args.model), "rounding": interp.rounding, "kernels": interp.kernels,
           "bos": args.bos, **result.to_dict(), "ops": ops, "milliseconds": seconds * 1000}
    lines = _lines(args, plan, prompt, result, interp.rounding, ops, seconds,
                   kernels_said(model, interp.kernels, getattr(args, "kernels", "auto")))
    if args.logits:
        buffer = io.BytesIO()
        np.save(buffer, logits)
        write_file(args.logits, buffer.getvalue())
        lines.append(f"Wrote the logits, float32 {list(logits.shape)}, to {args.logits}")
        doc["logits"] = {"file": args.logits, "shape": list(logits.shape)}
    failed = None
    if args.compare_litert:
        failed = _compare(args, model, plan, prompt, result, logits, doc, lines,
                          interp.kernels)
    out.text("\n".join(lines))
    out.json(doc)
    if failed:
        sys.stdout.flush()
        sys.stderr.write(f"tflite-viewer run: {failed}\n")
        return EXIT_CHECK_FAILED
    return 0
