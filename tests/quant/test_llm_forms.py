"""Every form litert_quantizer and the TFLite converter write, analysed by `quant`: per
tensor, the metrics equal litert_quantizer's own validator (``compare_model``) on the same
inputs.

The pairs: tiny_llama_f32 quantized in the session with every recipe (`llm_pairs.RECIPES`:
per channel and blockwise at 32, 64 and 128, int2/int4/int8, Hadamard-rotated, weight
only, static a8w8 and a16w8), the converter's forms committed beside it, and the classic
converter pairs (dynamic range, full integer, float16).  For each signature both analyses
run on the same seeded inputs (moved onto a quantized input's grid, so that both feed the
same integers: see `llm_pairs.on_grid`), and every tensor the validator compares that
has one name in each model is compared:

* with ``backend="litert"`` (LiteRT's builtin kernels, the validator's without XNNPACK):
  every validator metric (`explorer.validator_row`) and ours (mean_squared_error, cosine,
  median_diff_ratio) equal the validator's to float32 rounding (relative 1e-5);
* with this interpreter: within what kernels computing otherwise move (`INTERPRETER_RTOL`,
  measured over the sweep): LiteRT's optimized float kernels add in another order (about
  1e-7 of a value, which a quantized op downstream may round to the next step), and its
  optimized integer kernels round some values to the neighbouring step where this
  interpreter follows the reference kernels; the KL divergence of raw activations, a sum
  of terms that cancel to near 0, is compared on LiteRT's tensors only;

every tensor the validator reports with an error is in our report, and ours are all in
its.  A CI sample runs unmarked; the whole sweep is ``slow``.
"""
from __future__ import annotations

import collections
import math

import numpy as np
import pytest

from tflite_viewer.interpreter import UnsupportedOpError
from tflite_viewer.model import load_model
from tflite_viewer.quant import analyze

from . import llm_pairs as lp

#: relative tolerance of the interpreter's metrics against the validator's on LiteRT: for
#: float activations (largest measured: 3.0e-3, a median_diff_ratio of residual_mlp_fp16),
#: for integer activations (largest measured: 3.1e-2, an SNR of static_wi8_ai8)
INTERPRETER_RTOL = {"float": 1e-2, "integer": 6e-2}
LITERT_RTOL = 1e-5
#: our own metrics are compared where the validator's float32 sums cannot overflow: an
#: attention mask holds -inf or -3.4e38, which it reads as -1e9 or squares to inf (ours,
#: in float64 on the values themselves, differ there by design; its own metrics, in the
#: validator's row, still equal)
OVERFLOW = 1e30
#: forms this interpreter refuses (LiteRT computes them "wrong": tools/sweep_quant_forms.py)
REFUSED = {"dynamic_wi2b32_afp32", "dynamic_wi2b64_afp32", "dynamic_wi2b128_afp32"}
#: forms whose validator values are not the ones this interpreter computes, and why: the
#: validator runs LiteRT's builtin kernels without a delegate, whose 4-bit FULLY_CONNECTED
#: computes INT4 weights of -8 without meaning; ours (kernels=auto) takes the reference
#: kernel there, which LiteRT's reference kernels and its XNNPACK path agree with
#: (tests/interpreter/test_quantizer_recipes.py)
VALIDATOR_DEPARTS = {"dynamic_wi4c_hr_afp32"}
#: what CI runs (the LiteRT backend reads each run's tensors in a child process: 10 s a case)
SAMPLE = {("tiny_llama_q4_block32", "litert"), ("weight_only_wi8_afp32", "interpreter"),
          ("static_wi8_ai16", "interpreter"), ("dynamic_wi4c_hr_afp32", "interpreter"),
          ("dynamic_wi2b64_afp32", "interpreter"), ("residual_mlp_fp16", "interpreter")}
CASES = (*lp.CONVERTER_LLM, *lp.RECIPES, *(q.stem for q, _ in lp.CLASSIC))


def _params():
    out = []
    for case in CASES:
        for backend in ("litert", "interpreter"):
            marks = [] if (case, backend) in SAMPLE else [pytest.mark.slow]
            out.append(pytest.param(case, backend, marks=marks, id=f"{case}-{backend}"))
    return out


@pytest.fixture(scope="session")
def llm_pair():
    """(quantized bytes, float path) of a case, each quantized once per session."""
    cache: dict[str, tuple[bytes, object]] = {}

    def get(case: str):
        if case not in cache:
            if case in lp.RECIPES:
                cache[case] = (lp.quantize(case), lp.TINY_FLOAT)
            elif case in lp.CONVERTER_LLM:
                cache[case] = ((lp.LLM / f"{case}.tflite").read_bytes(), lp.TINY_FLOAT)
            else:
                q, f = next(p for p in lp.CLASSIC if p[0].stem == case)
                cache[case] = (q.read_bytes(), f)
        return cache[case]
    return get


def _close(ours: float | None, theirs: float, rtol: float) -> bool:
    if ours is None:
        return False
    if math.isnan(theirs) or math.isnan(ours):
        return math.isnan(theirs) and math.isnan(ours)
    return math.isclose(ours, theirs, rel_tol=rtol, abs_tol=1e-12)


def _ours(report, qm, k: int, skip: set[str]) -> dict[str, tuple[dict, dict]]:
    """name -> (validator row, our own metrics) of the weights and activations of
    subgraph ``k`` whose name is unique there (and not in ``skip``)."""
    names = collections.Counter(t.name for t in qm.subgraphs[k].tensors)
    out = {}
    for item in [*report.weights, *report.tensors]:
        if item.subgraph == k and item.validator is not None and names[item.name] == 1 \
                and item.name not in skip:
            out[item.name] = (item.validator, item.metrics)
    return out


def _without_error(theirs: dict) -> bool:
    """What the validator says of a tensor both models hold alike."""
    return theirs["mse"] == 0 and theirs["median_diff_ratio"] == 0


def _theirs(case: str, fpath, qbytes: bytes, data: dict, reports: dict, qm, fm) -> dict:
    """The validator's rows of each signature: compare_model's on the decoders; on the
    converter's classic pairs (whose names compare_model cannot pair) its own pieces on
    the tensors our pairing names (`llm_pairs.validator_by_pairs`)."""
    if case not in {q.stem for q, _ in lp.CLASSIC}:
        return lp.validator(fpath, qbytes, data)[0]
    out = {}
    for sig, report in reports.items():
        k = qm.signature(sig).subgraph_index
        fk = fm.signature(sig).subgraph_index
        pairs = {item.name: (item.tensor, item.float_tensor)
                 for item in [*report.weights, *report.tensors]
                 if item.subgraph == k and item.float_subgraph == fk
                 and item.validator is not None}
        out[sig] = lp.validator_by_pairs(fpath, qbytes, sig, data[sig], pairs)
    return out


@pytest.mark.parametrize("case,backend", _params())
def test_every_tensor_equals_the_validator(case, backend, llm_pair):
    qbytes, fpath = llm_pair(case)
    qm, fm = load_model(qbytes), load_model(fpath)
    data = {sig: [lp.on_grid(qm, sig, x) for x in xs]
            for sig, xs in lp.signature_inputs(fm, 2).items()}
    if backend == "interpreter" and case in REFUSED:
        with pytest.raises(UnsupportedOpError, match="INT2 with blockwise"):
            analyze(qm, fm, given=data[fm.signature_defs[0].key], samples=1, workers=1)
        return
    reports = {sig: analyze(qm, fm, given=inputs, signature=sig, all_entries=False,
                            backend=backend, validator_metrics=True, workers=1)
               for sig, inputs in data.items()}
    theirs = _theirs(case, fpath, qbytes, data, reports, qm, fm)
    activations = "integer" if case.startswith("static") or case.endswith("int8") else "float"
    rtol = LITERT_RTOL if backend == "litert" else INTERPRETER_RTOL[activations]
    skip = set() if backend == "litert" else {"kl_divergence"}
    compared = 0
    for sig, report in reports.items():
        k = qm.signature(sig).subgraph_index
        # a rotated weight is compared in its stored basis, the lookup rows a rotation
        # turns back in the float one (test_rotated_*); the validator compares names
        rotated = {w.name for w in report.weights if w.rotation} | {
            qm.subgraphs[k].tensors[t].name for r in report.rotations
            if r["subgraph"] == k for t in r["tensors"]}
        ours = _ours(report, qm, k, rotated)
        f_names = collections.Counter(t.name for t in fm.subgraphs[fm.signature(
            sig).subgraph_index].tensors)
        bad = []
        for name, row in theirs[sig].items():
            if f_names[name] != 1 or name in rotated:
                continue
            if name not in ours:  # a tensor no quantization changed, or not real-valued
                if not _without_error(row):
                    bad.append((name, "missing", row))
                continue
            compared += 1
            bad += _differences(name, row, *ours[name], rtol, skip)
        extra = [n for n in ours if f_names[n] == 1 and n not in theirs[sig]]
        if backend == "interpreter" and case in VALIDATOR_DEPARTS:
            assert bad and not extra, (sig, "the validator's builtin 4-bit values agree")
        else:
            assert not bad and not extra, (sig, bad[:6], extra[:6])
    assert compared >= 5


def _differences(name: str, row: dict, mine: dict, metrics: dict | None, rtol: float,
                 skip: set[str]) -> list[tuple]:
    """Where our validator row (but the metrics in ``skip``), and our own metrics, differ
    from the validator's row."""
    bad = [(name, m, mine[m], v) for m, v in row.items()
           if m not in skip and not _close(mine[m], v, rtol)]
    if metrics is None or not metrics["mean_squared_error"] < OVERFLOW:
        return bad
    for own, theirs_m in (("mean_squared_error", "mse"), ("cosine", "cosine_similarity"),
                          ("median_diff_ratio", "median_diff_ratio")):
        if math.isfinite(row[theirs_m]) and not _close(metrics[own], row[theirs_m], rtol):
            bad.append((name, own, metrics[own], row[theirs_m]))
    return bad


def test_rotated_weights_compare_in_the_stored_basis(llm_pair):
    """A Hadamard-rotated weight (dynamic_wi4c_hr_afp32) is compared with the float weight
    rotated by SciPy's Hadamard matrix (scipy.linalg.hadamard / √n, the rotation
    litert_quantizer documents), its dequantized values LiteRT's: SQNR and cosine equal
    numpy's on those arrays, and the rotation is found for every weight of the recipe."""
    from scipy.linalg import hadamard

    from tests.litert_oracle import litert

    from .helpers import litert_dequantize, numpy_metrics
    qbytes, fpath = llm_pair("dynamic_wi4c_hr_afp32")
    qm, fm = load_model(qbytes), load_model(fpath)
    report = analyze(qm, fm, run_models=False)
    assert report.rotations and not report.added_ops
    li = litert(qbytes)
    details = {d["index"]: d for d in li.get_tensor_details()}
    rotated = [w for w in report.weights if w.subgraph == 0]
    assert rotated and all(w.rotation for w in rotated)
    for w in rotated:
        n = w.rotation
        f = fm.subgraphs[w.float_subgraph].tensors[w.float_tensor].values().astype(np.float64)
        ref = (f.reshape(-1, n) @ (hadamard(n) / np.sqrt(n))).reshape(f.shape)
        deq = litert_dequantize(details[w.tensor], li.get_tensor(w.tensor))
        want = numpy_metrics(ref, deq, None)
        assert w.metrics["sqnr_db"] == pytest.approx(want["sqnr_db"], rel=1e-6)
        assert w.metrics["cosine"] == pytest.approx(want["cosine"], rel=1e-9)
        assert 10 < w.metrics["sqnr_db"] < 40  # int4: the rotation is undone, not compared
