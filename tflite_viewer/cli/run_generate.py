"""`tflite-viewer run MODEL --generate K [--prompt IDS] [--loop FIELD=VALUE ...]`: prefill,
then K decode steps with the KV cache carried by name, and the K generated ids
(`tflite_viewer.interpreter.generation` defines the loop).

The text report names the loop's pieces, each call (what it was fed, the argmax it gave,
its time) and ends with the ids; ``--json`` gives ``{"tokens": [...], "prompt", "plan",
"calls", ...}``.  ``--compare-litert`` runs the same loop with LiteRT's builtin kernels in
a child process and compares the ids: exit 1 when they differ.
"""
from __future__ import annotations

import argparse
import sys
import time

from .common import EXIT_CHECK_FAILED, CommandError, load_model_arg
from .output import Output

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
    p.add_argument("--loop", metavar="FIELD=VALUE", action="append", default=None,
                   help="with --generate: set a piece of the loop by hand when the model "
                        "names it otherwise than litert-torch: prefill=KEY, decode=KEY, "
                        "tokens=NAME, position=NAME, logits=NAME, kv=NAME,... (globs "
                        "allowed), context=N (default: found from the names)")


def check_usage(args: argparse.Namespace) -> None:
    """Options that go with --generate only, or never with it."""
    if args.generate is None:
        for option in ("prompt", "loop"):
            if getattr(args, option) is not None:
                raise CommandError(f"--{option} goes with --generate K")
        return
    if args.generate < 1:
        raise CommandError(f"--generate {args.generate}: generate at least one token")
    for attr, option in _NOT_WITH.items():
        if getattr(args, attr, None) is not None:
            raise CommandError(f"{option} does not go with --generate (the loop makes every "
                               "input itself)")


def main(args: argparse.Namespace) -> int:
    from ..interpreter.budget import (DEFAULT_MAX_ALLOCATION_BYTES, DEFAULT_MAX_ITERATIONS,
                                      DEFAULT_TIMEOUT)
    from .run import new_interpreter  # (run imports this module)
    from ..interpreter.generation import (find_plan, generate, interpreter_runner,
                                          parse_prompt, parse_settings)

    out = Output(args)
    prompt = parse_prompt(args.prompt if args.prompt is not None else DEFAULT_PROMPT)
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
    ops = 0

    def run(signature, inputs):
        nonlocal ops
        outputs = interpreter_runner(interp)(signature, inputs)
        ops += sum(interp.op_calls.values())
        return outputs

    t0 = time.perf_counter()
    result = generate(model, run, prompt, args.generate, plan)
    seconds = time.perf_counter() - t0
    doc = {"model": str(args.model), "rounding": interp.rounding, **result.to_dict(),
           "ops": ops, "milliseconds": seconds * 1000}
    lines = [f"Model {args.model}: {args.generate} token{'s' if args.generate != 1 else ''} "
             f"generated, rounding {interp.rounding}",
             f"Loop: {plan.describe()}",
             f"Prompt: {' '.join(map(str, prompt))}"]
    width = max(len(c.label) for c in result.calls)
    for c in result.calls:
        if c.output is None:
            fed = f"{len(prompt)} prompt ids + {plan.prefill_length - len(prompt)} padding " \
                  f"at positions 0..{plan.prefill_length - 1}"
        else:
            fed = f"token {c.token} at position {c.position} -> {c.output}"
        lines.append(f"  {c.label:<{width}}  {c.signature}: {fed}  ({c.seconds * 1000:.1f} ms)")
    lines.append(f"Tokens: {' '.join(map(str, result.tokens))}")
    lines.append(f"Ran {len(result.calls)} calls ({ops:,} ops) in {seconds * 1000:.1f} ms")
    failed = None
    if args.compare_litert:
        from ..interpreter.generation_litert import litert_generate
        ref = litert_generate(model, plan, prompt, args.generate,
                              timeout=args.timeout or DEFAULT_TIMEOUT)
        same = ref.tokens == result.tokens
        first = next((i for i, (a, b) in enumerate(zip(result.tokens, ref.tokens)) if a != b),
                     None)
        doc["litert"] = {"resolver": ref.resolver, "tokens": ref.tokens, "same": same,
                         "first_difference": None if first is None else first + 1}
        lines.append(f"LiteRT ({ref.resolver}): {' '.join(map(str, ref.tokens))} - "
                     + ("the same ids" if same else f"differs from decode #{first + 1}"))
        if not same:
            failed = (f"the ids differ from LiteRT's from decode #{first + 1}: ours "
                      f"{result.tokens[first]}, LiteRT's {ref.tokens[first]}")
    out.text("\n".join(lines))
    out.json(doc)
    if failed:
        sys.stdout.flush()
        sys.stderr.write(f"tflite-viewer run: {failed}\n")
        return EXIT_CHECK_FAILED
    return 0
