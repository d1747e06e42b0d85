"""The generation analysis (`quant --generate`) of a 0.66 B-parameter decoder pair against
LiteRT running both models' greedy loops, in one run on this machine.

The pair is export_bench_decoder.py's (a Qwen3-shaped model of 0.66 B parameters with
random weights, float32 and litert-torch's ``dynamic_int4_block32``), read from its cache
folder (``/tmp/tflite_viewer_big/qwen3_0.66b``, or ``TFLITE_VIEWER_BENCH_CACHE``; make it
first with ``/work/venvs/llm/bin/python benchmarks/export_bench_decoder.py``), or
``--quantized Q --float F``.

* anchor: LiteRT's builtin kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES, the kernels the
  analysis's loop follows; its XNNPACK delegate refuses the int4 blockwise weights of
  this LiteRT, 2.3) open both models and run each one's greedy loop (prefill, then ``--steps`` decode steps, the KV
  cache carried by name) on the same prompt;
* ours: `quant.generation.analyze_generation` on the two files: both models' loops in this
  project's interpreter, every paired tensor of every call measured, each step's logits
  SQNR, KL and ops worst first.

Untimed first runs of each warm the page cache and check that each model's tokens are
LiteRT's; then the two alternate, and each figure is the lowest of ``--rounds`` runs
(the machine may be shared).  ``--profile`` then runs the analysis once under cProfile
and prints where its time goes.

    python benchmarks/bench_quant_generate.py [--steps K] [--rounds R] [--profile]
        [--float-sums auto|reference|blas] [--quantized Q --float F]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.export_bench_decoder import path_of  # noqa: E402
from tflite_viewer.interpreter.generation import find_plan, generate  # noqa: E402
from tflite_viewer.interpreter.heap import keep_freed_memory  # noqa: E402
from tflite_viewer.model import load_model  # noqa: E402
from tflite_viewer.quant.generation import (GENERATION_FLOAT_SUMS,  # noqa: E402
                                           analyze_generation)

PROMPT = [5, 17, 42, 7, 99, 3, 64, 11]  # 8 ids (one prefill call), in any vocabulary here


def litert_loops(paths: list[Path], resolver: str, steps: int) -> list[list[int]]:
    """Each model's greedy tokens, LiteRT opening the model and running the loop."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    out = []
    for path in paths:
        li = Interpreter(model_path=str(path),
                         experimental_op_resolver_type=getattr(OpResolverType, resolver))
        runners: dict = {}

        def run(sig, inputs, li=li, runners=runners):
            if sig not in runners:
                runners[sig] = li.get_signature_runner(sig)
            return runners[sig](**inputs)
        model = load_model(path)
        out.append(generate(model, run, PROMPT, steps, find_plan(model, len(PROMPT))).tokens)
        del li, runners
    return out


def ours(q: Path, f: Path, steps: int, float_sums: str = GENERATION_FLOAT_SUMS):
    return analyze_generation(q, f, PROMPT, steps, timeout=None, float_sums=float_sums)


def _timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8, help="decode steps (default 8)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--float-sums", choices=("auto", "reference", "blas"),
                        default=GENERATION_FLOAT_SUMS,
                        help=f"the analysis's float sums (default {GENERATION_FLOAT_SUMS}: "
                             "the quantized model's in the exact order, the float model's "
                             "BLAS)")
    parser.add_argument("--profile", action="store_true",
                        help="then profile one analysis (cProfile, top 30 by own time)")
    parser.add_argument("--quantized", type=Path, default=path_of("q4_block32"),
                        help="the quantized decoder (default: export_bench_decoder.py's)")
    parser.add_argument("--float", dest="float_model", type=Path, default=path_of("f32"),
                        help="its float original (default: export_bench_decoder.py's)")
    args = parser.parse_args(argv)
    for p in (args.quantized, args.float_model):
        if not p.is_file():
            parser.error(f"no {p}: export the pair first (benchmarks/export_bench_decoder.py)")
    keep_freed_memory()  # as the quant command does
    paths = [args.quantized, args.float_model]
    resolver = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"
    print(f"{args.quantized.name} against {args.float_model.name}: prompt of "
          f"{len(PROMPT)} ids, {args.steps} steps, float sums {args.float_sums}")
    ga = ours(args.quantized, args.float_model, args.steps, args.float_sums)  # warm, checked
    q_tokens, f_tokens = litert_loops(paths, resolver, args.steps)
    for what, theirs, mine in (("quantized", q_tokens, ga.quantized_tokens),
                               ("float", f_tokens, ga.float_tokens)):
        step = next((i for i, (a, b) in enumerate(zip(theirs, mine)) if a != b), None)
        print(f"LiteRT {resolver}, {what} model: " + (
            "the same tokens as ours" if step is None else
            f"tokens {theirs}, ours part from them at step {step} (see docs/quantization.md)"))
    print(f"tokens: float {ga.float_tokens}, quantized {ga.quantized_tokens}, first "
          f"divergence {ga.first_divergence}; {len(ga.ops)} ops measured per step")
    best = {"ours": float("inf"), resolver: float("inf")}
    for r in range(args.rounds):
        line = []
        for name in best:
            seconds, _ = _timed(lambda: ours(args.quantized, args.float_model, args.steps,
                                             args.float_sums)
                                if name == "ours" else
                                litert_loops(paths, name, args.steps))
            best[name] = min(best[name], seconds)
            line.append(f"{name} {seconds:.2f} s")
        print(f"round {r + 1}: " + ", ".join(line))
    anchor = best[resolver]
    print(f"best of {args.rounds}: ours {best['ours']:.2f} s, LiteRT builtin {anchor:.2f} s: "
          f"{best['ours'] / anchor:.2f}x (goal at most 3x)")
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(ours, args.quantized, args.float_model, args.steps, args.float_sums)
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
