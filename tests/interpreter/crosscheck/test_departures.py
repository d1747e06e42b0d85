"""The cross-check names where a run departs from LiteRT's, two ways (issue 38 item 5):
the first op whose own computation departs (isolated, on LiteRT's inputs) and the first op
whose end-to-end value leaves the tolerance, saying for an op that quantizes its input on
the fly how far its input is and from which op; a composite (no isolated value) is never
reported as "isolated", and its decomposition's ops are compared one by one.

The departures are made real: our interpreter follows LiteRT's reference kernels
(``kernels="reference"``) while LiteRT runs its builtin ones, whose LOGISTIC rounds
differently (Eigen's polynomial against ``1 / (1 + expf(-x))``).
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.cli_runner import run_cli
from tests.conftest import MODELS_DIR
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.crosscheck_report import CrossCheckReport, Error, TensorRow
from tflite_viewer.interpreter.crosscheck import compare_with_litert
from tflite_viewer.interpreter.departures import float_ulps

from ..llm_models import A, OpSpec, PerChannel, W, write_model

BUILTIN = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"


def logistic_then_hybrid(seed: int) -> tuple[bytes, np.ndarray]:
    """x [8, 2048] -> LOGISTIC -> FULLY_CONNECTED with INT8 per-channel weights, whose
    float input is quantized on the fly (asymmetrically, per row)."""
    rng = np.random.default_rng(seed)
    k, n = 2048, 16
    w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    tensors = [A((8, k)), A((8, k)), W(w, "INT8", PerChannel((rng.random(n) * 0.01 + 1e-3)
                                                              .tolist())), A((8, n))]
    model = write_model(tensors, [OpSpec("LOGISTIC", [0], [1]),
                                  OpSpec("FULLY_CONNECTED", [1, 2, -1], [3],
                                         "FullyConnectedOptions",
                                         {"asymmetric_quantize_inputs": True})], [0], [3])
    return model, (rng.standard_normal((8, k)) * 4).astype(np.float32)


def check(model: bytes, x: np.ndarray, tolerance: float = 1e-5) -> CrossCheckReport:
    interp = Interpreter(model, kernels="reference")
    interp.invoke([x])
    return compare_with_litert(model, {"t0": x}, resolver=BUILTIN, interpreter=interp,
                               tolerance=tolerance)


def test_a_flipped_quantized_input_is_traced_to_the_op_upstream():
    """Seed 2: one LOGISTIC output an ulp or so off LiteRT's moves the FULLY_CONNECTED's
    on-the-fly quantized input by a step: the FULLY_CONNECTED is bit-exact on LiteRT's
    inputs, 6e-5 off end to end; the LOGISTIC (1.2e-7) stays within the tolerance."""
    model, x = logistic_then_hybrid(2)
    report = check(model, x)
    dep = report.departures
    assert dep.isolated is None  # no op's own computation leaves 1e-5
    e2e = dep.end_to_end
    assert e2e is not None and (e2e.row.op, e2e.row.opcode) == (1, "FULLY_CONNECTED")
    assert e2e.quantizes_input and e2e.from_op == 0 and e2e.input_tensor == 1
    ours = report.rows[0]  # LOGISTIC's output: what the FULLY_CONNECTED read
    assert e2e.input_ulps == float_ulps(_our_logistic(model, x), report.litert_tensors[1]) > 0
    assert "on LiteRT's inputs it is bit-exact" in e2e.text
    assert f"its input is {e2e.input_ulps} ulps" in e2e.text and "from op 0 LOGISTIC" in e2e.text
    assert ours.opcode == "LOGISTIC" and ours.e2e_ok
    lines = "\n".join(dep.lines())
    assert "own computation departs (isolated, on LiteRT's inputs): none" in lines
    assert "end-to-end value leaves the tolerance: subgraph 0 op 1 FULLY_CONNECTED" in lines
    # at zero tolerance the LOGISTIC's own computation is the first departure
    strict = check(model, x, tolerance=0.0).departures
    assert (strict.isolated.row.op, strict.isolated.row.opcode) == (0, "LOGISTIC")
    assert strict.end_to_end.row.op == 0


def _our_logistic(model: bytes, x: np.ndarray) -> np.ndarray:
    """Our LOGISTIC output (tensor 1) under the reference kernels."""
    interp = Interpreter(model, kernels="reference")
    interp.invoke([x])
    return interp.tensor(0, 1)


def test_a_composite_is_never_said_isolated():
    """A composite failing end to end in isolated mode: the text says which error decided
    and why there is no isolated one."""
    row = TensorRow(1, 51, "STABLEHLO_COMPOSITE", 0, 100, "attention", "FLOAT32", (1, 4),
                    "float", max_abs=1e-3, relative=4.4e-4, ok=False, e2e_ok=False,
                    isolated=Error(note="a composite: no isolated value (its "
                                        "decomposition's ops are compared)"))
    report = CrossCheckReport("m", 1, "decode", BUILTIN, [row], 1e-5, 1, mode="isolated")
    text = report.divergence_text()
    assert "(isolated)" not in text
    assert text.endswith("relative error 0.00044 > 1e-05 (end-to-end; a composite: no "
                         "isolated value (its decomposition's ops are compared))")


@pytest.mark.parametrize("form,first", [("q4_block32", "SOFTMAX"), ("f32", "FULLY_CONNECTED")])
def test_composite_decompositions_are_compared_op_by_op(form, first):
    """A decode step of the litert-torch decoder: every composite's decomposition (RMS
    norms, attention) has rows of its own, all LiteRT's bits under the builtin kernels.
    Under the reference kernels the first op to depart is, with int4 weights, the
    attention's SOFTMAX inside its decomposition, and with float weights the first
    FULLY_CONNECTED (op 20: one product after another against Eigen's 4 lanes); the
    composites' own rows have no isolated value."""
    path = MODELS_DIR / "llm" / f"tiny_llama_{form}.tflite"
    signature, inputs = decode_inputs(path)
    exact = compare_with_litert(path, inputs, signature=signature, tolerance=0.0)
    assert exact.resolver == BUILTIN and exact.ok, exact.divergence_text()
    assert len(exact.inner_rows) == 7 and all(exact.inner_rows.values())
    assert all(r.exact for rows in exact.inner_rows.values() for r in rows)
    strict = compare_with_litert(path, inputs, signature=signature, tolerance=0.0,
                                 resolver=BUILTIN, interpreter=_ran(path, inputs, signature))
    own = strict.departures.isolated
    assert own is not None and own.row.opcode == first
    if first == "SOFTMAX":
        assert own.row.subgraph != strict.subgraph and "the decomposition of op" in own.text
    else:
        assert (own.row.subgraph, own.row.op) == (strict.subgraph, 20)
    composites = [r for r in strict.rows if r.opcode == "STABLEHLO_COMPOSITE"]
    assert composites and all(r.isolated is not None and not r.isolated.compared
                              for r in composites)


def _ran(path, inputs, signature) -> Interpreter:
    interp = Interpreter(path, kernels="reference")
    interp.invoke(inputs, signature=signature)
    return interp


def decode_inputs(path) -> tuple[str, dict[str, np.ndarray]]:
    """(decode signature, inputs of one decode step: a random KV cache, token 3 at 3)."""
    from tflite_viewer.interpreter.generation import find_plan

    model = Interpreter(path).model
    dec = model.signature(find_plan(model, 3).decode)
    inputs = {}
    for spec in dec.inputs:
        t = model.subgraphs[dec.subgraph_index].tensors[spec.tensor_index]
        inputs[spec.name] = (np.random.default_rng(1).standard_normal(t.shape) * 0.5
                             ).astype(np.float32) if t.type_name == "FLOAT32" else \
            np.full(t.shape, 3, t.dtype)
    return dec.key, inputs


def test_run_prints_both_departures_and_gives_them_in_json(tmp_path):
    """``run --compare-litert`` on a decode step of the int4 decoder, computed as LiteRT's
    reference kernels do and checked against its builtin ones (the reference kernels lack
    blockwise weights): the two departure lines under the table, the same in ``--json``
    (strict JSON), exit 1 with one line on stderr."""
    import json

    path = MODELS_DIR / "llm" / "tiny_llama_q4_block32.tflite"
    signature, inputs = decode_inputs(path)
    np.savez(tmp_path / "in.npz", **inputs)
    base = ["run", path, "--signature", signature, "--inputs", tmp_path / "in.npz",
            "--compare-litert", "--kernels", "reference", "--tolerance", "0"]
    text = run_cli(*base)
    assert text.returncode == 1, text.stdout + text.stderr
    assert len(text.stderr.strip().splitlines()) == 1
    own = [ln for ln in text.stdout.splitlines() if ln.startswith("First op whose own")]
    e2e = [ln for ln in text.stdout.splitlines() if ln.startswith("First op whose end-to-end")]
    assert len(own) == len(e2e) == 1
    assert "SOFTMAX (in 'odml.scaled_dot_product_attention" in own[0], own[0]
    assert "(isolated)" not in [ln for ln in text.stdout.splitlines()
                                if "STABLEHLO_COMPOSITE" in ln and "DIVERGES" in ln][0]
    as_json = run_cli(*base, "--json")
    doc = json.loads(as_json.stdout)
    deps = doc["crosscheck"]["departures"]
    assert deps["isolated"]["opcode"] == "SOFTMAX" and deps["end_to_end"] is not None
    assert doc["kernels"] == "reference" and doc["crosscheck"]["inner_rows"]
