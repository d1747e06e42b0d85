"""Long-mode structural fuzzing: mutated corpus models through every layer, for N minutes.

The test suite runs a fixed set of cases (tests/fuzz/test_fuzz.py); this script keeps
going with fresh random cases and prints what a campaign needs to report:

* cases run, and outcomes by error type (the first documented error of a case, or "ok");
* crashes (undocumented exceptions, and memory past a step's bound), hangs (the watchdog
  fired), with their reproducers;
* peak memory: the process's peak resident size (resource.getrusage) and, with
  ``--tracemalloc``, the largest Python/numpy allocation peak of one case;
* the slowest case.

    python benchmarks/fuzz.py --minutes 10 [--seed 1] [--cases N] [--tracemalloc]

A case is (corpus model, 1-3 mutations with seeds, optional byte damage); the mutations
are `tests.fuzz.mutations`, the steps `tests.fuzz.harness.run_case`.  Every failing case
is printed as a line that `--replay` runs again.
"""
from __future__ import annotations

import argparse
import collections
import json
import random
import resource
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz.corpus import FUZZ_MODELS, model_bytes  # noqa: E402
from tests.fuzz.harness import run_case  # noqa: E402
from tests.fuzz.mutations import MUTATIONS, damage_bytes, mutate  # noqa: E402


def make_case(rng: random.Random) -> dict:
    steps = [(rng.choice(sorted(MUTATIONS)), rng.randrange(2**32))
             for _ in range(rng.choice((1, 1, 2, 3)))]
    damage = rng.randrange(2**32) if rng.random() < 0.1 else None
    return {"model": rng.choice(FUZZ_MODELS), "steps": steps, "damage": damage}


def case_bytes(case: dict) -> tuple[bytes, list[str]]:
    data, done = mutate(model_bytes(case["model"]), [tuple(s) for s in case["steps"]])
    if case.get("damage") is not None:
        data, what = damage_bytes(data, case["damage"])
        done.append(f"damage: {what}")
    return data, done


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--cases", type=int, default=None, help="stop after this many cases")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tracemalloc", action="store_true",
                    help="measure each case's allocation peak (slower)")
    ap.add_argument("--replay", metavar="JSON", help="run one case printed by a failure")
    args = ap.parse_args(argv)

    if args.replay:
        case = json.loads(args.replay)
        data, done = case_bytes(case)
        out = run_case(data)
        print(done, out.steps, out.undocumented or "", "HANG" if out.hang else "",
              out.memory or "")
        return 0

    rng = random.Random(args.seed)
    deadline = time.monotonic() + args.minutes * 60
    outcomes: collections.Counter = collections.Counter()
    steps: collections.Counter = collections.Counter()
    crashes, hangs = [], []
    slowest = (0.0, None)
    peak_case = (0, None)
    cases = 0
    if args.tracemalloc:
        tracemalloc.start()
    start = time.monotonic()
    try:
        while time.monotonic() < deadline and (args.cases is None or cases < args.cases):
            cases, slowest, peak_case = _one(rng, args, outcomes, steps, crashes, hangs,
                                             cases, slowest, peak_case)
    except KeyboardInterrupt:  # Ctrl-C: stop and report what ran
        print("interrupted", file=sys.stderr)
    elapsed = time.monotonic() - start
    _report(args, cases, elapsed, outcomes, steps, crashes, hangs, slowest, peak_case)
    return 1 if crashes or hangs else 0


def _one(rng, args, outcomes, steps, crashes, hangs, cases, slowest, peak_case):
    """Make and run one case, recording what happened."""
    case = make_case(rng)
    try:
        data, done = case_bytes(case)
    except Exception as exc:  # noqa: BLE001 - the writer refused the mutation
        outcomes[f"unwritable ({type(exc).__name__})"] += 1
        return cases + 1, slowest, peak_case
    if args.tracemalloc:
        tracemalloc.reset_peak()
    out = run_case(data)
    cases += 1
    if args.tracemalloc:
        peak = tracemalloc.get_traced_memory()[1]
        if peak > peak_case[0]:
            peak_case = (peak, case)
    if out.seconds > slowest[0]:
        slowest = (out.seconds, (case, done))
    for step, result in out.steps.items():
        steps[f"{step}: {result}"] += 1
    if out.undocumented:
        crashes.append((case, done, out.undocumented))
        outcomes["UNDOCUMENTED"] += 1
    elif out.hang:
        hangs.append((case, done))
        outcomes["HANG"] += 1
    elif out.memory:
        crashes.append((case, done, f"MEMORY: {out.memory}"))
        outcomes["MEMORY"] += 1
    else:
        outcomes[out.summary] += 1
    for step, warning in out.warnings:
        steps[f"warning in {step}: {warning[:60]}"] += 1
    return cases, slowest, peak_case


def _report(args, cases, elapsed, outcomes, steps, crashes, hangs, slowest, peak_case):
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    print(f"cases: {cases} in {elapsed:.0f} s ({cases / max(elapsed, 1e-9):.1f}/s), seed {args.seed}")
    print(f"crashes (undocumented exceptions, memory past a bound): {len(crashes)}")
    print(f"hangs: {len(hangs)}")
    print("outcomes (first documented error of a case):")
    for name, n in outcomes.most_common():
        print(f"  {name:40s} {n:7d}")
    print("by step:")
    for name, n in sorted(steps.items()):
        print(f"  {name:40s} {n:7d}")
    print(f"peak resident memory of the process: {rss / 2**20:.0f} MiB")
    if args.tracemalloc:
        print(f"largest allocation peak of one case (tracemalloc): {peak_case[0] / 2**20:.1f} MiB"
              f" {json.dumps(peak_case[1])}")
    if slowest[1] is not None:
        print(f"slowest case: {slowest[0]:.2f} s {json.dumps(slowest[1][0])} {slowest[1][1]}")
    for case, done, tb in crashes[:20]:
        print(f"\nCRASH --replay '{json.dumps(case)}'\n  {done}\n{tb}")
    for case, done in hangs[:20]:
        print(f"\nHANG --replay '{json.dumps(case)}'\n  {done}")


if __name__ == "__main__":
    raise SystemExit(main())
