"""The structural fuzzer in CI: every mutation kind, 40 derandomized cases each (1,280),
and issue 26's four signatures on the models their kinds target (82 cases).

Each case mutates a corpus model through the project's object tree and writer
(`tests.fuzz.mutations`), sometimes damages the bytes too, and runs it through load, every
accessor, info (strict JSON), layout, the interpreter under budgets and re-serialization
(`tests.fuzz.harness.run_case`).  A case passes when every step succeeded or raised a
documented error, nothing hung, and memory stayed bounded.  Hypothesis is derandomized, so
CI runs the same cases every time; `benchmarks/fuzz.py --minutes N` keeps going with fresh
ones.
"""
from __future__ import annotations

import resource
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.corpus import FUZZ_MODELS, model_bytes
from tests.fuzz.harness import run_case
from tests.fuzz.mutations import MUTATIONS, damage_bytes, mutate

CASES_PER_KIND = 40
#: cases per mutation kind in CI's sample (the slow tier runs `CASES_PER_KIND`)
SAMPLE_CASES_PER_KIND = 12
#: how far the process's peak resident memory may rise over what it was when the fuzz
#: tests began (the interpreter runs with a 64 MiB allocation limit per tensor)
RSS_RISE_BOUND = 768 << 20
_RSS_START: list[int] = []


def _rss_peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _check(model: str, steps: list[tuple[str, int]], damage: int | None) -> None:
    data, done = mutate(model_bytes(model), steps)
    if damage is not None:
        data, what = damage_bytes(data, damage)
        done.append(f"damage: {what}")
    out = run_case(data)
    case = f"{model} {steps} damage={damage}: {done}"
    assert out.undocumented is None, f"undocumented exception for {case}\n{out.undocumented}"
    assert not out.hang, f"hang for {case}"
    assert out.memory is None, f"memory past its bound for {case}: {out.memory}"
    stray = [w for w in out.warnings if w[0] != "interpreter"]
    assert not stray, f"warnings for {case}: {stray}"
    if not _RSS_START:
        _RSS_START.append(_rss_peak())
    assert _rss_peak() <= _RSS_START[0] + RSS_RISE_BOUND, f"memory ran away for {case}"


steps_of = st.lists(st.tuples(st.sampled_from(sorted(MUTATIONS)), st.integers(0, 2**32 - 1)),
                    max_size=2)


def _campaign(cases: int):
    """The fuzz campaign of ``cases`` Hypothesis examples per mutation kind."""
    return given(model=st.sampled_from(FUZZ_MODELS), seed=st.integers(0, 2**32 - 1),
                 more=steps_of,
                 damage=st.none() | st.none() | st.none() | st.integers(0, 2**32 - 1)), \
        settings(max_examples=cases, derandomize=True, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow,
                                        HealthCheck.function_scoped_fixture])


_given_sample, _settings_sample = _campaign(SAMPLE_CASES_PER_KIND)
_given_whole, _settings_whole = _campaign(CASES_PER_KIND)


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
@_settings_sample
@_given_sample
def test_mutated_models_succeed_or_raise_documented_errors(kind, model, seed, more, damage):
    _check(model, [(kind, seed), *more], damage)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(MUTATIONS))
@_settings_whole
@_given_whole
def test_mutated_models_whole_campaign(kind, model, seed, more, damage):
    _check(model, [(kind, seed), *more], damage)


#: issue 26's signatures, each on the models its kind targets (Hypothesis spreads a kind's
#: cases over every fuzzed model; these make sure each reaches its own): a damaged
#: associated-files zip, sparsity that disagrees with its tensor's shape, absent vectors,
#: inputs declared large
TARGETED = [("associated_files", "sine_float.tflite", 12),
            ("sparsity_shape", "sparse_conv_float.tflite", 30),
            ("sparsity_shape", "sine_float.tflite", 12),
            ("absent_vector", "control_flow.tflite", 16),
            ("huge_input", "sine_float.tflite", 12)]


@pytest.mark.parametrize("kind, model, count", TARGETED, ids=[f"{k}-{m.split('.')[0]}"
                                                             for k, m, _ in TARGETED])
def test_each_issue_26_signature_on_the_models_it_targets(kind, model, count):
    for seed in range(count):
        _check(model, [(kind, seed)], None)


def test_every_mutation_kind_applies_to_some_corpus_model():
    """No kind is dead code: each changes at least one of the fuzzed models."""
    for kind in MUTATIONS:
        assert any(mutate(model_bytes(m), [(kind, seed)])[1]
                   for m in ("control_flow.tflite", "sparse_conv_float.tflite",
                             "small_cnn_dilated_int8.tflite")  # the last for quantization kinds
                   for seed in range(3)), kind


def test_memory_of_a_case_is_bounded_under_tracemalloc():
    """A sample of hostile cases (huge dimensions, huge inputs) measured allocation by
    allocation: no case's peak passes 256 MiB (the interpreter's limit here is 64 MiB)."""
    cases = [("sine_float.tflite", [("huge_dimension", s)]) for s in range(4)] + \
            [("sparse_conv_float.tflite", [("huge_dimension", s)]) for s in range(4)] + \
            [("control_flow.tflite", [("while_always_true", s)]) for s in range(2)]
    tracemalloc.start()
    try:
        for model, steps in cases:
            data, done = mutate(model_bytes(model), steps)
            tracemalloc.reset_peak()
            out = run_case(data)
            peak = tracemalloc.get_traced_memory()[1]
            assert out.undocumented is None and not out.hang, (done, out.undocumented)
            assert peak < 256 << 20, (done, peak)
    finally:
        tracemalloc.stop()
