"""Weights stay in the mapped file (interpreter/weights.py): sub-byte constants are not
unpacked before a kernel computes with them (and a refusal comes before any is), float
FULLY_CONNECTED binds a transposed view of its weights, the hybrid FULLY_CONNECTED without
its kept copies and the blockwise one reading packed rows give the same bits, derived
weights stay within the interpreter's budget; the big-decoder benchmark's three forms run
here as in LiteRT."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.errors import UnsupportedOpError
from tflite_viewer.interpreter.weights import PackedConstant, WeightCache
from tflite_viewer.model import dtypes, load_model

from .llm_models import A, Blockwise, OpSpec, W, decoder_model, pack, write_model

MODELS = __import__("pathlib").Path(__file__).resolve().parents[1] / "data" / "models"


@pytest.fixture
def unpacks(monkeypatch):
    """Every sub-byte unpack: (bits, values) per call."""
    calls = []
    real = dtypes.unpack_subbyte

    def spy(packed, bits, count, signed):
        calls.append((bits, count))
        return real(packed, bits, count, signed)

    monkeypatch.setattr(dtypes, "unpack_subbyte", spy)
    return calls


def _int4_model(rng, ok: bool = True) -> bytes:
    """A blockwise INT4 FULLY_CONNECTED [16, 64]; ``ok`` False gives it non-zero block zero
    points, which LiteRT's kernel never reads (so the interpreter refuses the op)."""
    w = rng.integers(-8, 8, (16, 64)).astype(np.int8)
    scales = (rng.random((16, 2)) * 0.01 + 1e-3).astype(np.float16)
    zp = np.zeros((16, 2), np.int8) if ok else np.ones((16, 2), np.int8)
    tensors = [A((2, 64)), W(w, "INT4", Blockwise(2, 32, zero_points=3)), W(scales), W(zp),
               A((2, 16))]
    return write_model(tensors, [OpSpec("FULLY_CONNECTED", [0, 1, -1], [4],
                                        "FullyConnectedOptions", {})], [0], [4])


def test_unpack_subbyte_is_the_bit_arithmetic():
    every = np.arange(256, dtype=np.uint8)
    for bits, signed in ((4, True), (4, False), (2, True), (2, False)):
        per = 8 // bits
        want = []
        for byte in range(256):
            for k in range(per):  # lowest bits first
                v = (byte >> (k * bits)) & ((1 << bits) - 1)
                want.append(v - (1 << bits) if signed and v >= 1 << (bits - 1) else v)
        got = dtypes.unpack_subbyte(every, bits, 256 * per, signed)
        assert got.dtype == (np.int8 if signed else np.uint8)
        assert got.tolist() == want
        assert dtypes.unpack_subbyte(every[::3], bits, 5, signed).tolist() == \
            [want[3 * per * (j // per) + j % per] for j in range(5)]


def test_subbyte_weights_stay_packed_until_a_kernel_reads_them(unpacks):
    model, ids = decoder_model("int4_blockwise", np.random.default_rng(0))
    interp = Interpreter(model)
    packed = [t for t in interp.subgraphs[0].tensors if isinstance(t, PackedConstant)]
    assert len(packed) == 6 and unpacks == []  # table, q, k, v, o, logits: built, prepared
    interp.set_inputs([ids])
    interp.invoke()
    # the blockwise products and the lookup unpack the rows they read from the packed
    # bytes; no kernel asked for a whole tensor's values (they would be kept: they fit)
    assert unpacks and interp.weight_cache.used == 0
    # each FULLY_CONNECTED's weights twice (the per-row sums, then the product), and of
    # the table only the 8 rows looked up
    fc = sum(t.unpacked_nbytes for t in packed[1:])
    assert packed[0].name == "embed" and sum(n for _, n in unpacks) == 2 * fc + ids.size * 64


def test_a_refusal_comes_before_any_weight_is_decoded(unpacks):
    rng = np.random.default_rng(1)
    Interpreter(_int4_model(rng))  # the accepted form: nothing unpacked either
    assert unpacks == []
    with pytest.raises(UnsupportedOpError, match="zero points"):
        Interpreter(_int4_model(rng, ok=False))
    assert unpacks == []


def test_float_weights_are_bound_as_views_of_the_file():
    model = load_model(MODELS / "mobilenet_v2_float.tflite")
    interp = Interpreter(model)
    x = np.random.default_rng(0).standard_normal((1, 96, 96, 3)).astype(np.float32)
    interp.invoke([x])
    fc = [n for n in interp.subgraphs[0].nodes if n.name == "FULLY_CONNECTED"]
    assert fc
    for node in fc:
        bound = node.user_data["bound"]
        assert bound is not None and np.shares_memory(bound[2], model.data)


@pytest.mark.parametrize("name", ["dynamic_int8", "int4_blockwise"])
def test_without_kept_copies_the_bits_are_the_same(name):
    model, ids = decoder_model(name, np.random.default_rng(4), tokens=5, dim=64)
    outs = {}
    for budget in (0, 1 << 30):
        interp = Interpreter(model, weight_cache_bytes=budget)
        interp.set_inputs([ids])
        interp.invoke()
        outs[budget] = {t.index: t.data for t in interp.subgraphs[0].tensors
                        if t.data is not None and not t.is_constant}
        kept = [n.user_data.get("hybrid") for n in interp.subgraphs[0].nodes
                if n.name == "FULLY_CONNECTED"]
        if name == "dynamic_int8":
            assert all((d.w_t is not None) == (budget > 0) for d in kept)
    assert outs[0].keys() == outs[1 << 30].keys()
    for k, v in outs[0].items():
        assert v.dtype == outs[1 << 30][k].dtype and np.array_equal(v, outs[1 << 30][k]), k


def test_hybrid_corpus_model_without_kept_copies():
    model = load_model(MODELS / "mobilenet_v2_dynamic.tflite")
    x = np.random.default_rng(2).standard_normal((1, 96, 96, 3)).astype(np.float32)
    a = Interpreter(model, weight_cache_bytes=0).invoke([x])
    b = Interpreter(model).invoke([x])
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_weight_cache_keeps_within_its_budget():
    cache = WeightCache(100)
    built = []

    def build(n):
        built.append(n)
        return np.zeros(n, np.uint8)

    a = cache.get("a", 60, lambda: build(60))
    assert cache.get("a", 60, lambda: build(60)) is a  # kept
    b1 = cache.get("b", 60, lambda: build(60))
    b2 = cache.get("b", 60, lambda: build(60))
    assert b1 is not b2 and built == [60, 60, 60]  # past the budget: built every time
    assert cache.reserve("c", 40) and cache.reserve("c", 40) and not cache.reserve("d", 1)
    cache.release("c")
    assert cache.reserve("d", 40) and cache.used == 100


def test_scanning_releases_pages_and_keeps_values(tmp_path):
    path = MODELS / "mobilenet_v2_int8.tflite"
    model = load_model(path)
    t = max((t for t in model.subgraphs[0].tensors if t.is_constant),
            key=lambda t: t.buffer_nbytes)
    values = t.data()
    parts = list(model.scanned(values, chunk_bytes=4096))
    assert np.array_equal(np.concatenate(parts), values.reshape(-1))
    assert np.array_equal(t.data(), values)  # the released pages read back the same


@pytest.mark.parametrize("form", ["float", "int8", "int4"])
def test_big_decoder_forms_run_as_in_litert(tmp_path, form):
    import sys
    sys.path.insert(0, str(MODELS.parents[2]))
    from benchmarks.big_decoder import TINY, write
    from tests.litert_oracle import litert

    path = write(tmp_path / f"tiny_{form}.tflite", replace(TINY, form=form))
    model = load_model(path)
    assert not [f for f in model.findings if f.severity == "error"]
    sig = model.signature("decode")
    sg = model.subgraphs[sig.subgraph_index]
    rng = np.random.default_rng(3)
    inputs = {}
    for i in sig.inputs:
        t = sg.tensors[i.tensor_index]
        if t.type_name == "INT32":
            inputs[i.name] = (np.array([0, 2, 0, 0], np.int32) if i.name == "kv_slice_start"
                              else np.full(t.shape, 7, np.int32))
        else:
            inputs[i.name] = (rng.standard_normal(t.shape) * 0.1).astype(np.float32)
    ours = Interpreter(model).invoke(inputs, signature="decode")
    theirs = litert(path).get_signature_runner("decode")(**inputs)
    assert ours.keys() == theirs.keys()
    for k in ours:
        scale = max(1.0, float(np.abs(theirs[k]).max()))
        assert np.max(np.abs(ours[k] - theirs[k])) / scale < (1e-5 if form == "float" else 2e-2)


def test_a_big_filter_is_copied_at_its_second_call_with_the_same_bits():
    """`HybridDense` reads a big filter's rows as they are at the first call (a model run
    once never pays for the copies) and makes its copies at the second; every call gives
    the bits of a filter copied at once and of one never copied."""
    from tflite_viewer.interpreter.integer.common import QParams
    from tflite_viewer.interpreter.integer.hybrid import HybridDense

    rng = np.random.default_rng(11)
    units, accum = 1100, 1000  # over COPY_LATER_VALUES weights
    assert units * accum >= HybridDense.COPY_LATER_VALUES
    w = rng.integers(-127, 128, (units, accum)).astype(np.int8)
    q = QParams(np.float32([0.01]), np.zeros(1, np.int64), 0)
    opts = {"fused_activation_function": "NONE", "asymmetric_quantize_inputs": True}
    dense = HybridDense(w, None, q, opts)
    never = HybridDense(w, None, q, opts, keep_copies=False)
    xs = [rng.standard_normal((1, accum)).astype(np.float32) for _ in range(3)]
    first = dense(xs[0], (1, units))
    assert dense.w_t is None  # nothing copied by the first call
    calls = [first] + [dense(x, (1, units)) for x in xs[1:]]
    assert dense.w_t is not None  # copied by the second
    for x, got in zip(xs, calls):
        want = never(x, (1, units))
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
