"""Signatures take their inputs by name, everywhere: the Python API, `run`, the debug
session, the cross-check and `quant`.

The model (tests/signature_model.py, written by the project's writer) has two signatures
whose inputs are listed in another order than their subgraphs' ``inputs``, all float32
[1, 4]: feeding them by position gives wrong numbers with no error, so each path is
checked against LiteRT's SignatureRunner (and a float64 hand computation) on the same
named inputs.  A positional list for a signature is refused with `InputError`.
"""
from __future__ import annotations


import numpy as np
import pytest

from tests.cli_runner import run_cli
from tests.litert_oracle import litert
from tests.signature_model import (SIGNATURE_INPUTS, by_hand, signature_inputs,
                                   two_signature_model)
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.inputs import InputError, positional
from tflite_viewer.model import load_model

OUT = {"first": ("out", 0, 5), "second": ("result", 1, 7)}  # name, subgraph, tensor


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    return two_signature_model()


@pytest.fixture(scope="module")
def model_file(tmp_path_factory, model_bytes):
    path = tmp_path_factory.mktemp("sig") / "two_signatures.tflite"
    path.write_bytes(model_bytes)
    return path


def litert_output(model_bytes: bytes, key: str, inputs: dict) -> np.ndarray:
    return litert(model_bytes).get_signature_runner(key)(**inputs)[OUT[key][0]]


def close(ours, ref) -> None:
    """Equal up to float32 summation order (LiteRT's optimized FULLY_CONNECTED sums in
    another order: 1 ulp); a mix-up of inputs is off by more than 0.1."""
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6)


def test_the_model_is_a_real_trap(model_bytes):
    """The premise: signature order differs from subgraph order, and the position-wise
    mix-up computes other numbers (not an error) in LiteRT itself."""
    m = load_model(model_bytes)
    for key, names in SIGNATURE_INPUTS.items():
        sig = m.signature(key)
        assert [x.name for x in sig.inputs] == names
        sub_inputs = list(m.subgraphs[sig.subgraph_index].inputs)
        assert [x.tensor_index for x in sig.inputs] != sub_inputs
        ins = signature_inputs(key)
        ref = litert_output(model_bytes, key, ins)
        np.testing.assert_allclose(ref, by_hand(key, ins), rtol=1e-5, atol=1e-5)
        # the same arrays given to the subgraph's positions instead: other numbers
        by_tensor = dict(zip(sub_inputs, ins.values()))
        renamed = {x.name: by_tensor[x.tensor_index] for x in sig.inputs}
        assert np.abs(litert_output(model_bytes, key, renamed) - ref).max() > 0.1


@pytest.mark.parametrize("key", ["first", "second"])
def test_python_api_by_name_matches_litert_and_refuses_positions(model_bytes, key):
    ins = signature_inputs(key)
    ref = litert_output(model_bytes, key, ins)
    interp = Interpreter(model_bytes)
    close(interp.invoke(ins, signature=key)[OUT[key][0]], ref)
    close(interp.signature_runner(key)(**ins)[OUT[key][0]], ref)
    # input_details lists the signature's order, with the right tensor for each name
    sig = interp.model.signature(key)
    assert [(d["name"], d["index"]) for d in interp.input_details()] == \
        [(x.name, x.tensor_index) for x in sig.inputs]
    with pytest.raises(InputError, match=f"signature '{key}' takes its inputs by name"):
        interp.invoke(list(ins.values()), signature=key)
    with pytest.raises(InputError, match="by name"):
        interp.set_input(0, ins[SIGNATURE_INPUTS[key][0]])
    with pytest.raises(InputError, match="by name"):
        positional(interp.model, ins, key)
    # a stepped run takes the same names
    stop = interp.run(ins, signature=key)
    close(stop.outputs[OUT[key][0]], ref)


def test_without_a_signature_positions_are_the_subgraphs(model_bytes):
    """Subgraph 0 run as a subgraph (no signature): a list in its ``inputs`` order."""
    ins = signature_inputs("first")
    interp = Interpreter(model_bytes)
    out = interp.invoke([ins["x_in"], ins["y_in"]])  # subgraph 0's inputs are (x, y)
    close(out["first/out"], litert_output(model_bytes, "first", ins))


@pytest.mark.parametrize("key", ["first", "second"])
def test_run_cli_feeds_signature_inputs_by_name(model_file, model_bytes, tmp_path, key):
    ins = signature_inputs(key, seed=3)
    np.savez(tmp_path / "in.npz", **ins)
    dump = tmp_path / "all.npz"
    result = run_cli("run", model_file, "--signature", key, "--inputs", tmp_path / "in.npz",
                     "--dump-all", dump, "--compare-litert")
    assert result.returncode == 0, result.stderr
    _, sg, t = OUT[key]
    with np.load(dump) as d:
        close(d[f"s{sg}_t{t}"], litert_output(model_bytes, key, ins))


@pytest.mark.parametrize("key", ["first", "second"])
def test_cross_check_runs_both_sides_by_name(model_bytes, key):
    from tflite_viewer.interpreter.crosscheck import compare_with_litert
    ins = signature_inputs(key, seed=5)
    interp = Interpreter(model_bytes)
    report = compare_with_litert(model_bytes, ins, signature=key, interpreter=None)
    assert report.ok and report.first_divergence is None
    # every op output of the signature's own subgraph was compared (LiteRT's tensors are
    # read from that subgraph, not from subgraph 0, which has fewer)
    m = load_model(model_bytes)
    sub = m.subgraphs[m.signature(key).subgraph_index]
    assert {r.tensor for r in report.rows} == {o for op in sub.operators for o in op.outputs}
    # and our side of it is what LiteRT's signature runner computes
    interp.invoke(ins, signature=key)
    _, sg, t = OUT[key]
    close(interp.tensor(sg, t), litert_output(model_bytes, key, ins))


@pytest.mark.parametrize("key", ["first", "second"])
def test_debug_session_runs_a_signature_by_name(model_bytes, key):
    from tflite_viewer.interpreter.session import FINISHED, DebugSession
    ins = signature_inputs(key, seed=7)
    session = DebugSession(load_model(model_bytes), inputs=ins, signature=key)
    stop = session.continue_()
    assert stop.state == FINISHED, stop.message
    close(stop.outputs[OUT[key][0]], litert_output(model_bytes, key, ins))


def test_quant_runner_feeds_each_signature_by_name(model_bytes):
    """quant's runner (both backends) on signature 'second': the sample goes to the
    named inputs, so our recorded tensors equal LiteRT's and the hand computation."""
    from tflite_viewer.quant.runner import ModelRunner, entries
    from tflite_viewer.quant.samples import given_samples
    m = load_model(model_bytes)
    entry = next(e for e in entries(m) if e.signature == "second")
    ins = signature_inputs("second", seed=11)
    sample = given_samples(m, [ins], "second")[0]
    ours = ModelRunner(m, entry=entry).run(sample)
    theirs = ModelRunner(m, "litert", entry=entry).run(sample)
    close(ours[(1, 7)], litert_output(model_bytes, "second", ins))
    close(ours[(1, 7)], theirs[(1, 7)])
    np.testing.assert_allclose(ours[(1, 7)], by_hand("second", ins), rtol=1e-5, atol=1e-5)


def test_quant_analysis_pairs_models_whose_subgraph_orders_differ(model_bytes):
    """`quant` with a float model that differs only in the order of its subgraphs'
    ``inputs`` vectors (signatures, names and tensors unchanged): both models compute the
    same function of the named inputs, so every output must match exactly.  Fed by
    position, the two models would get different tensors and a finite SQNR."""
    from tflite_viewer.edit.tree import unpack
    from tflite_viewer.edit.writer import serialize
    from tflite_viewer.quant.analysis import analyze
    tree = unpack(load_model(model_bytes))
    for sg in tree.model.subgraphs:
        sg.inputs = list(reversed(list(sg.inputs)))
    reordered = serialize(tree)
    report = analyze(model_bytes, reordered, samples=3, seed=1)
    compared = {rep.key: rep.metrics["sqnr_db"] for rep in report.compared()}
    assert {(1, 5), (1, 6), (1, 7), (0, 4), (0, 5)} <= set(compared)
    assert all(v == float("inf") for v in compared.values()), compared
    entries = {e["entry"] if "entry" in e else str(e): e for e in report.entry_outputs}
    assert len(report.entry_outputs) == 2, entries
