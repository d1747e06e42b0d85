"""The generation loop (prefill, then decode steps with the KV cache carried) against LiteRT
running the same loop, in one run on this machine.

For each committed litert-torch export (tests/data/models/llm) and, with ``--model``, any
other: the median time of the whole loop (``interpreter.generation.generate`` on our
interpreter), of LiteRT's builtin kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES, signature
runners) and of its default kernels (XNNPACK) running the same loop, and the ratios;
and the time our loop adds around the invokes themselves (the loop's own bookkeeping:
inputs, argmax, the KV cache handed on).  The runs alternate, and each figure is the
lowest of ``--rounds`` medians of ``--runs`` loops.

    python benchmarks/bench_generate.py [--steps K] [--runs N] [--rounds R] [--model PATH ...]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tflite_viewer.interpreter import Interpreter  # noqa: E402
from tflite_viewer.interpreter.generation import find_plan, generate  # noqa: E402
from tflite_viewer.model import load_model  # noqa: E402

LLM = ROOT / "tests" / "data" / "models" / "llm"
PROMPT = [5, 17, 42]


def _litert(path: Path, resolver: str):
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType
    li = LiteRT(model_path=str(path), experimental_op_resolver_type=getattr(OpResolverType,
                                                                             resolver))
    runners: dict = {}
    return lambda sig, inputs: runners.setdefault(sig, li.get_signature_runner(sig))(**inputs)


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench(path: Path, steps: int, runs: int, rounds: int) -> dict[str, float]:
    model = load_model(path)
    plan = find_plan(model, len(PROMPT))
    interp = Interpreter(model)
    invoke_seconds = [0.0]

    def ours(sig, inputs):
        t0 = time.perf_counter()
        out = interp.invoke(dict(inputs), signature=sig)
        invoke_seconds[0] += time.perf_counter() - t0
        return out
    runtimes = {"ours": ours, "builtin": _litert(path, "BUILTIN_WITHOUT_DEFAULT_DELEGATES"),
                "xnnpack": _litert(path, "BUILTIN")}
    tokens = {name: generate(model, run, PROMPT, steps, plan).tokens
              for name, run in runtimes.items()}  # a first loop each: warm, and checked
    best = {name: float("inf") for name in runtimes}
    loop_cost = float("inf")
    for _ in range(rounds):
        times = {name: [] for name in runtimes}
        spent = []
        for _ in range(runs):
            for name, run in runtimes.items():
                invoke_seconds[0] = 0.0
                seconds = _timed(lambda: generate(model, run, PROMPT, steps, plan))
                times[name].append(seconds)
                if name == "ours":
                    spent.append(seconds - invoke_seconds[0])
        for name in runtimes:
            best[name] = min(best[name], statistics.median(times[name]))
        loop_cost = min(loop_cost, statistics.median(spent))
    return {**best, "loop": loop_cost, "same": tokens["ours"] == tokens["builtin"],
            "same_xnnpack": tokens["ours"] == tokens["xnnpack"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8, help="decode steps (default 8)")
    parser.add_argument("--runs", type=int, default=5, help="loops per median (default 5)")
    parser.add_argument("--rounds", type=int, default=3, help="medians taken (default 3)")
    parser.add_argument("--model", action="append", default=None,
                        help="a model with prefill and decode signatures (default: the "
                             "committed tiny_llama exports)")
    args = parser.parse_args(argv)
    paths = [Path(p) for p in args.model] if args.model else sorted(LLM.glob("*.tflite"))
    print(f"prefill + {args.steps} decode steps, prompt {PROMPT}; ms per loop (lowest of "
          f"{args.rounds} medians of {args.runs})")
    print(f"{'model':<28}{'ours':>9}{'builtin':>9}{'xnnpack':>9}{'/builtin':>10}"
          f"{'/xnnpack':>10}{'loop ms':>9}  same ids (builtin, xnnpack)")
    for path in paths:
        r = bench(path, args.steps, args.runs, args.rounds)
        print(f"{path.stem:<28}{r['ours'] * 1e3:>9.1f}{r['builtin'] * 1e3:>9.1f}"
              f"{r['xnnpack'] * 1e3:>9.1f}{r['ours'] / r['builtin']:>10.2f}"
              f"{r['ours'] / r['xnnpack']:>10.2f}{r['loop'] * 1e3:>9.2f}  "
              f"{r['same']}, {r['same_xnnpack']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
