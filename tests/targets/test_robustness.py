"""Odd but loadable models: every target gives every operator a verdict, never a traceback."""
from __future__ import annotations

import flatbuffers
import numpy as np
import pytest

from tests.targets import cases
from tflite_viewer.model import ModelFormatError, load_model
from tflite_viewer.schema import schema_generated as S
from tflite_viewer.targets import analyze


def mutate(data: bytes, how: str) -> bytes:
    m = S.ModelT.InitFromPackedBuf(data, 0)
    op = m.subgraphs[0].operators[0]
    ins = list(op.inputs)
    if how == "drop-last-input":
        op.inputs = ins[:-1]
    elif how == "omit-inputs":
        op.inputs = [-1] * len(ins)
    elif how == "no-options":
        op.builtinOptionsType, op.builtinOptions = 0, None
    elif how == "extra-input":
        op.inputs = ins + [ins[0]]
    elif how == "unknown-code":
        m.operatorCodes[0].builtinCode = 9999
        m.operatorCodes[0].deprecatedBuiltinCode = 127
    elif how == "huge-version":
        m.operatorCodes[0].version = 1000
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


HOWS = ["drop-last-input", "omit-inputs", "no-options", "extra-input", "unknown-code",
        "huge-version"]


def _sweep(how: str, every: int) -> int:
    checked = 0
    for name, data in list(cases.all_cases().items())[::every]:
        odd = mutate(data, how)
        try:
            model = load_model(odd)
        except ModelFormatError:
            continue  # the reader refuses it: nothing to analyse
        report = analyze(model)
        for target, result in report.results.items():
            assert len(result.ops) == 1, (name, target)
            v = result.ops[0]
            assert v.verdict in ("runs", "falls back", "refused")
            assert v.verdict == "runs" or v.reason, (name, how, target)
        report.table()
        checked += 1
    return checked


@pytest.mark.parametrize("how", HOWS)
def test_mutated_cases_still_get_verdicts(how):
    """A sample (every fifth case); the whole catalogue runs with --run-slow."""
    assert _sweep(how, 5) > 25


@pytest.mark.slow
@pytest.mark.parametrize("how", HOWS)
def test_every_mutated_case_still_gets_verdicts(how):
    assert _sweep(how, 1) > 150


def test_an_empty_subgraph():
    from tests.interpreter.singleop import graph_model

    data = graph_model([((1, 4), np.float32)], [], [0], [0])
    report = analyze(load_model(data))
    assert all(not r.ops and not r.partitions for r in report.results.values())
    assert "Every operator runs" in report.table()


def _fuzzed_shape_models(seeds: int):
    """The fuzz campaign's mutations (tests/fuzz/mutations.py) of models whose shapes are
    computed at run time and of the quantization-parameter models: whatever a mutation
    leaves that the reader loads."""
    import random

    from tests.fuzz.mutations import MUTATIONS
    from tests.fuzz.mutations import mutate as fuzz
    from tests.targets import quant_param_models, shape_models

    models = {name: make() for name, make in shape_models.RUN_RIGHT.items()}
    models["reshape_from_input"] = shape_models.reshape_from_input()
    models.update(quant_param_models.cases())
    rng = random.Random(0)
    for name, data in models.items():
        for kind in sorted(MUTATIONS):
            for _ in range(seeds):
                try:
                    odd, what = fuzz(data, [(kind, rng.randrange(2**32))])
                    yield f"{name} {what}", load_model(odd)
                except Exception:  # noqa: BLE001 - a mutation that does not apply, or
                    continue       # a file the reader refuses: nothing to analyse


@pytest.mark.parametrize("seeds", [pytest.param(1), pytest.param(3, marks=pytest.mark.slow)])
def test_fuzzed_computed_shapes_and_quantization_still_get_verdicts(seeds):
    """A file the interpreter's own checks refuse (a WHILE body's signature, an operator
    reading a tensor before it is written) still gets a verdict for every operator: the
    stored shapes are then taken as they are (this raised ModelFormatError before)."""
    checked = 0
    for what, model in _fuzzed_shape_models(seeds):
        report = analyze(model)
        for target, result in report.results.items():
            n = sum(len(sg.operators) for sg in model.subgraphs)
            assert len(result.ops) == n, (what, target)
            assert all(o.verdict == "runs" or o.reason for o in result.ops), (what, target)
        report.table()
        report.as_json()
        checked += 1
    assert checked > 200 * seeds
