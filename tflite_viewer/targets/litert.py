"""LiteRT's CPU runtime: does its op resolver have a kernel for each operator and version?

Two questions, two sources:

* the installed runtime (ai-edge-litert 2.3.0): its builtin op resolver's version range per
  op (`interpreter.litert_builtins`, generated from ``tflite/core/kernels/register.cc`` and
  confirmed on the wheel) and the custom ops it registers by name;
* an older runtime, given as a TensorFlow Lite runtime version (``2.14.0``, as the
  converter's ``min_runtime_version`` counts them): the version each (op, version) pair
  first appeared in, LiteRT's ``runtime_version.cc`` (`edit.runtime_version`).

An operator the resolver lacks is *refused*: LiteRT's InterpreterBuilder stops at the
first one ("Didn't find op for builtin opcode ..."), and nothing takes over.
"""
from __future__ import annotations

from functools import lru_cache

from ..edit.runtime_version import runtime_for_op, runtime_less, version_key
from ..interpreter.litert_builtins import LITERT_BUILTINS
from ..delegation.facts import ModelFacts
from .verdict import REFUSED, RUNS, OpVerdict, TargetResult

TITLE = "LiteRT CPU (builtin kernels)"
SOURCE = ("tflite/core/kernels/register.cc (versions confirmed on the ai-edge-litert 2.3.0 "
          "wheel) and tflite/converter/tools/versioning/runtime_version.cc")
CUSTOM_KERNELS = frozenset({"NumericVerify", "Mfcc", "AudioSpectrogram",
                            "TFLite_Detection_PostProcess", "aeq.hadamard_rotation"})


def check_runtime(version: str) -> str:
    """A runtime version as the table spells it (``2.14`` -> ``2.14.0``); ValueError when
    it is not one."""
    parts = version.strip().split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"runtime version {version!r} is not like 2.14.0")
    return ".".join(parts + ["0"] * (3 - len(parts)))


@lru_cache(maxsize=4096)
def op_verdict(name: str, builtin: str, version: int, runtime: str | None) -> tuple[str, str]:
    """(verdict, reason) for one operator."""
    if builtin == "CUSTOM":
        if name.startswith("Flex"):
            return REFUSED, ("a TensorFlow op (Flex): it needs the Flex delegate "
                             "(tensorflow-lite-select-tf-ops), which ai-edge-litert lacks")
        if name in CUSTOM_KERNELS:
            return RUNS, "custom op the builtin resolver registers"
        return REFUSED, (f"unresolved custom op {name!r}: register a kernel for it "
                         "(OpResolver.AddCustom)")
    entry = LITERT_BUILTINS.get(builtin)
    if entry is None:
        return REFUSED, f"LiteRT 2.3.0's builtin resolver has no {builtin}"
    lo, hi = entry[0], entry[1]
    if not lo <= version <= hi:
        return REFUSED, (f"version {version}: LiteRT 2.3.0's resolver has {builtin} "
                         f"v{lo}" + (f"-v{hi}" if hi != lo else ""))
    need = runtime_for_op(builtin, version)
    if runtime is not None:
        if need is None:
            return RUNS, f"v{version} (no runtime_version.cc entry: assumed present)"
        if runtime_less(runtime, need):
            return REFUSED, f"v{version} needs runtime {need} or later (target {runtime})"
    return RUNS, f"v{version}" + (f", since runtime {need}" if need else "")


def required_runtime(facts: ModelFacts) -> str | None:
    """The largest runtime version over every operator (the converter's rule)."""
    best: str | None = None
    pairs = {pair for f in (facts[s] for s in range(len(facts)))
             for pair in zip(f.builtin, f.version)}
    for builtin, version in pairs:
        need = runtime_for_op(builtin, version)
        if need is not None and (best is None or runtime_less(best, need)):
            best = need
    return best


def analyze(facts: ModelFacts, runtime: str | None = None) -> TargetResult:
    title = TITLE + (f" at runtime {runtime}" if runtime else ", ai-edge-litert 2.3.0")
    ops = []
    for s in range(len(facts)):
        f = facts[s]
        for k, (name, builtin, version) in enumerate(zip(f.op_names, f.builtin, f.version)):
            verdict, reason = op_verdict(name, builtin, version, runtime)
            ops.append(OpVerdict(s, k, name, verdict, reason))
    notes = []
    need = required_runtime(facts)
    if need:
        notes.append(f"the operators need runtime {need} or later")
    stamped = _stamped_runtime(facts)
    if stamped and need and version_key(stamped) != version_key(need):
        notes.append(f"the file's min_runtime_version says {stamped}")
    return TargetResult("litert", title, ops, source=SOURCE, notes=notes)


def _stamped_runtime(facts: ModelFacts) -> str | None:
    for m in facts.model.metadata:
        if m.name == "min_runtime_version":
            try:
                value = m.decoded()
            except Exception:  # a malformed buffer: nothing to compare
                return None
            return value if isinstance(value, str) and value else None
    return None


def known_runtimes() -> list[str]:
    """Every runtime version the version table names, newest first (the window's choices)."""
    from ..edit.runtime_version import RUNTIME_VERSIONS
    return sorted(set(RUNTIME_VERSIONS.values()), key=version_key, reverse=True)
