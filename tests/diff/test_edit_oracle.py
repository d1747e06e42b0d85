"""Edit-derived pairs: a model and the same model after N random edit commands applied with
the project's editor.  The command log (and the document's own log of the versions and
min_runtime_version it raised) is the oracle: the diff must report exactly those edits, no
more and no fewer, and the match must pair every tensor with itself and every op with its
own (the editor keeps tensor indices, and op indices but for the removed ops).

The unmarked sample runs one seed of 7 edits on every corpus model; the slow tier runs 30
seeds of up to 12 edits each on every corpus model (840 cases)."""
from __future__ import annotations

import pytest

from tests.conftest import MODELS_DIR
from tests.diff.edit_oracle import KINDS, EditGenerator, reported
from tflite_viewer.diff import diff_models

MODELS = sorted(p.stem for p in MODELS_DIR.glob("*.tflite"))


def check_case(name: str, seed: int, n: int, kinds=KINDS) -> None:
    case = EditGenerator(MODELS_DIR / f"{name}.tflite", seed).run(n, kinds)
    d = diff_models(case.original, case.edited)
    got = reported(d)
    log = "\n  ".join(case.log)
    assert got == case.expected, (
        f"{name} seed {seed}, edits:\n  {log}\nmissing: {case.expected - got}\n"
        f"extra: {got - case.expected}")
    m = d.match
    for s, part in m.parts.items():
        assert m.subgraphs[s] == s
        wrong = [t for t in range(part.a.n_tensors) if part.t_ab.get(t) != t]
        assert not wrong, f"{name} seed {seed}: tensors {wrong[:5]} of subgraph {s} mismatched"
        truth = case.op_map[s]
        wrong_ops = [(b, a) for b, a in truth.items() if part.o_ba.get(b) != a]
        assert not wrong_ops, f"{name} seed {seed}: ops (B, A) {wrong_ops[:5]} mismatched"
        removed = {a for (ss, a) in case.removed if ss == s}
        assert set(part.removed) == removed
    assert d.same == (not case.expected)


@pytest.mark.parametrize("name", MODELS)
def test_edits_are_reported_exactly_sample(name):
    check_case(name, 1, 7)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("seed", range(2, 32))
def test_edits_are_reported_exactly(name, seed):
    check_case(name, seed, 1 + seed % 12)


@pytest.mark.parametrize("name", ["mobilenet_v2_float", "small_cnn_dilated_int8",
                                  "control_flow", "person_detect"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_op_the_editor_removed_is_added_seen_the_other_way(name, seed):
    """diff(edited, original): the removed op is an op added in B, and nothing else
    changes but what the document raised (versions, min_runtime_version)."""
    case = EditGenerator(MODELS_DIR / f"{name}.tflite", seed).run(2, kinds=("remove",))
    d = diff_models(case.edited, case.original)
    added = {(s, a) for s, a in case.removed}
    got = reported(d)
    assert {("operator", "added", "", ("B", k)) for k in added} <= got
    others = {g for g in got if g[1] != "added"}
    assert all(g[2] in ("version", "min_runtime_version") for g in others), others
    for k in added:
        why = d.match.parts[k[0]].inserted[k[1]]
        assert why  # classified (inserted QUANTIZE/DEQUANTIZE, split activation or "added")


def test_self_diff_is_empty_for_every_corpus_model():
    for name in MODELS:
        d = diff_models(MODELS_DIR / f"{name}.tflite", MODELS_DIR / f"{name}.tflite")
        assert d.same and not d.differences, (name, [x.line() for x in d.differences[:3]])
        m = d.match
        for s, part in m.parts.items():
            assert all(part.t_ab.get(t) == t for t in range(part.a.n_tensors)), name
            assert all(part.o_ab.get(k) == k for k in range(part.a.n_ops)), name
