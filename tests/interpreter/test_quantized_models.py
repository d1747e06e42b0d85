"""Every quantized model of the corpus that LiteRT can run, tensor by tensor against LiteRT.

Our interpreter (default rounding: "double", what the ai-edge-litert 2.3.0 wheel does) and
LiteRT (BUILTIN_REF, every intermediate preserved) run the model on the same seeded inputs;
then every tensor of subgraph 0 that LiteRT holds is compared: integer tensors bit for bit,
float tensors (dequantized outputs, hybrid models, yamnet's spectrogram) within 1e-5 of the
tensor's range.

Special cases (see the integer-cores author's findings in tests/interpreter/integer):
* mobilenet_v2_int8 aborts LiteRT under BUILTIN_REF: it is compared with LiteRT's builtin
  optimized kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES, so that the intermediate tensors
  exist) run in a subprocess, op by op (each op fed LiteRT's own inputs), within one unit.
* person_detect is refused by LiteRT (rank-1 bias tensors with quantized_dimension 3):
  LiteRT runs the file with that field patched to 0; we run both files.
* keyword_scrambled_8bit crashes LiteRT in every resolver: never run there (TFLite Micro is
  its oracle: tests/interpreter/integer/test_svdf_micro.py).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.model import load_model

from .conftest import model_path
from .singleop import Input, rel_error, single_op_model

TOL = 1e-5

BIT_EXACT_MODELS = [
    "mobilenet_v1_0.25_224_quant", "ssd_mobilenet_v1", "micro_speech_quantized",
    "small_cnn_dilated_int8", "trained_lstm_int8", "yamnet_audio_classifier_with_metadata",
    "mobilenet_v2_dynamic",
]


def make_inputs(model, seed: int) -> list[np.ndarray]:
    """Seeded inputs valid for the model: the full range of integer inputs (images, audio
    features), standard normal floats."""
    rng = np.random.default_rng(seed)
    sg = model.subgraphs[0]
    out = []
    for i in sg.inputs:
        t = sg.tensors[i]
        if np.issubdtype(t.dtype, np.integer):
            info = np.iinfo(t.dtype)
            out.append(rng.integers(int(info.min), int(info.max) + 1, t.shape).astype(t.dtype))
        else:
            out.append(rng.standard_normal(t.shape).astype(t.dtype))
    return out


def litert(model: bytes | str, resolver: str = "BUILTIN_REF"):
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType
    kind = getattr(OpResolverType, resolver)
    if isinstance(model, (bytes, bytearray)):
        li = LiteRT(model_content=bytes(model), experimental_op_resolver_type=kind,
                    experimental_preserve_all_tensors=True)
    else:
        li = LiteRT(model_path=str(model), experimental_op_resolver_type=kind,
                    experimental_preserve_all_tensors=True)
    li.allocate_tensors()
    return li


def _ref_tensors(li, count: int) -> dict[int, np.ndarray]:
    out = {}
    for i in range(count):
        try:
            v = li.get_tensor(i)
        except ValueError:  # no data (e.g. the LSTM's empty intermediates)
            continue
        if v.size:
            out[i] = v
    return out


def compare_tensors(model, ours: Interpreter, ref: dict[int, np.ndarray]) -> tuple[int, list[str]]:
    """(tensors compared, mismatches) over every tensor LiteRT holds a value for."""
    sg = model.subgraphs[0]
    bad, n = [], 0
    for i, r in ref.items():
        mine = ours.tensor(0, i)
        name = f"tensor {i} ({sg.tensors[i].name})"
        if mine is None:
            bad.append(f"{name}: not computed")
            continue
        if mine.shape != r.shape or mine.dtype != r.dtype:
            bad.append(f"{name}: {mine.dtype}{list(mine.shape)} != LiteRT {r.dtype}{list(r.shape)}")
            continue
        n += 1
        if r.dtype.kind == "c":
            scale = max(1.0, float(np.abs(r).max()))
            err = float(np.abs(mine.astype(np.complex128) - r).max()) / scale
            if err > TOL:
                bad.append(f"{name}: complex error {err:g}")
        elif r.dtype.kind == "f":
            err = rel_error(mine, r)
            if err > TOL:
                bad.append(f"{name}: error {err:g}")
        elif not np.array_equal(mine, r):
            d = np.abs(mine.astype(np.int64) - r.astype(np.int64))
            bad.append(f"{name}: {int((d > 0).sum())}/{d.size} values differ (max {d.max()})")
    return n, bad


def run_both(model, li, ours: Interpreter, inputs) -> tuple[int, list[str]]:
    for d, x in zip(li.get_input_details(), inputs):
        li.set_tensor(d["index"], x)
    li.invoke()
    ours.set_inputs(inputs)
    ours.invoke()
    return compare_tensors(model, ours, _ref_tensors(li, len(model.subgraphs[0].tensors)))


@pytest.mark.parametrize("name", BIT_EXACT_MODELS)
def test_every_tensor_matches_litert_reference(name):
    path = model_path(name)
    model = load_model(path)
    ours = Interpreter(model)
    li = litert(path)
    # recurrent state (trained_lstm_int8) carries over: a second run checks it
    runs = 2 if name == "trained_lstm_int8" else 1
    for seed in range(runs):
        n, bad = run_both(model, li, ours, make_inputs(model, seed))
        assert not bad, f"{name} run {seed}:\n" + "\n".join(bad[:20])
        integer = sum(1 for i in range(len(model.subgraphs[0].tensors))
                      if ours.tensor(0, i) is not None and ours.tensor(0, i).dtype.kind in "iu")
        print(f"{name} run {seed}: {n} tensors equal ({integer} integer)")
        assert n >= 10


def _patched_person_detect() -> bytes:
    from tests.model.test_reader_litert import _patched_person_detect as patch
    return patch(model_path("person_detect"))


def test_person_detect_bit_exact_and_unpatched_file_runs():
    data = _patched_person_detect()
    model = load_model(data)
    ours = Interpreter(model)
    inputs = make_inputs(model, 0)
    n, bad = run_both(model, litert(data), ours, inputs)
    assert not bad, "\n".join(bad[:20])
    assert n > 80
    # LiteRT refuses the original file; we run it, with the same results
    original = Interpreter(model_path("person_detect"))
    original.invoke(inputs)
    for i in range(len(model.subgraphs[0].tensors)):
        a, b = ours.tensor(0, i), original.tensor(0, i)
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b, err_msg=f"tensor {i}")


_SUBPROCESS = textwrap.dedent("""
    import sys, numpy as np
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    path, inp, out = sys.argv[1:4]
    li = Interpreter(model_path=path, experimental_op_resolver_type=
                     OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
                     experimental_preserve_all_tensors=True)
    li.allocate_tensors()
    x = np.load(inp)
    for k, d in enumerate(li.get_input_details()):
        li.set_tensor(d["index"], x[f"in{k}"])
    li.invoke()
    tensors = {}
    for d in li.get_tensor_details():
        try:
            v = li.get_tensor(d["index"])
        except ValueError:
            continue
        tensors[f"t{d['index']}"] = v
    np.savez(out, **tensors)
""")


def test_mobilenet_v2_int8_within_one_unit_of_litert_builtin(tmp_path):
    """LiteRT's reference kernels abort on this model; its optimized kernels (in a
    subprocess, in case they abort too) round differently in places, so each op, fed
    LiteRT's own inputs, must be within one unit of LiteRT's output."""
    path = model_path("mobilenet_v2_int8")
    model = load_model(path)
    sg = model.subgraphs[0]
    inputs = make_inputs(model, 0)
    np.savez(tmp_path / "in.npz", **{f"in{k}": x for k, x in enumerate(inputs)})
    proc = subprocess.run([sys.executable, "-c", _SUBPROCESS, str(path), str(tmp_path / "in.npz"),
                           str(tmp_path / "out.npz")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ref = dict(np.load(tmp_path / "out.npz"))
    ref = {int(k[1:]): v for k, v in ref.items() if int(k[1:]) < len(sg.tensors) and v.size}

    ours = Interpreter(model)
    # op by op: before each op, give its (non-constant) inputs LiteRT's values
    def feed(interp, ev):
        for i in interp.subgraphs[0].nodes[ev.op].inputs:
            t = interp.runtime_tensor(0, i) if i >= 0 else None
            if t is not None and not t.is_constant and i in ref:
                interp.set_tensor(0, i, ref[i])
    produced: dict[int, np.ndarray] = {}

    def keep(interp, ev):  # the op's own output, before the next op's feed replaces it
        o = interp.subgraphs[0].nodes[ev.op].outputs[0]
        produced[o] = interp.tensor(0, o)
    ours.add_hook("before", feed)
    ours.add_hook("after", keep)
    ours.invoke(inputs)
    ours.remove_hook(feed)
    ours.remove_hook(keep)
    report = {"ops": 0, "outputs_differing": 0, "values_differing": 0, "values": 0, "max": 0}
    for node in ours.subgraphs[0].nodes:
        o = node.outputs[0]
        mine, r = produced[o], ref[o]
        assert mine.shape == r.shape and mine.dtype == r.dtype
        d = np.abs(mine.astype(np.int64) - r.astype(np.int64))
        report["ops"] += 1
        report["values"] += d.size
        report["values_differing"] += int((d > 0).sum())
        report["outputs_differing"] += int(d.max() > 0)
        if d.max() > 0:
            report.setdefault("differing_ops", []).append(
                f"{node.index} {node.name}: {int((d > 0).sum())}/{d.size}")
        report["max"] = max(report["max"], int(d.max()))
        assert d.max() <= 1, f"op {node.index} {node.name}: differs by {d.max()} units"
    # and the whole chain, ours alone (differences propagate and grow)
    ours.invoke(inputs)
    chain = [int(np.abs(ours.tensor(0, i).astype(np.int64) - r.astype(np.int64)).max())
             for i, r in ref.items() if r.dtype.kind in "iu" and ours.tensor(0, i) is not None]
    report["end_to_end_tensors_differing"] = sum(1 for c in chain if c)
    report["end_to_end_max"] = max(chain)
    print("mobilenet_v2_int8 vs LiteRT BUILTIN (op by op):", json.dumps(report))


def test_keyword_scrambled_runs_here_but_never_in_litert():
    """LiteRT crashes on this model (its SVDF time weights and state are int8, which
    LiteRT's integer SVDF reads as int16 past the end of the buffers); never run it
    there.  Ours runs it as TFLite Micro does (int8-state SVDF: every tensor is compared
    with the tflite-micro wheel in tests/interpreter/integer/test_svdf_micro.py)."""
    interp = Interpreter(model_path("keyword_scrambled_8bit"))
    t = interp.entry.tensors[interp.entry.inputs[0]]
    out = list(interp.invoke([np.zeros(t.shape, t.dtype)]).values())[0]
    assert out.dtype == np.int32 and out.shape == (1, 2)


# -- rounding ------------------------------------------------------------------------------
def _mul_ties_model() -> bytes:
    """MUL by 1 with output scale 4 = 4 * input scale: x / 4 on exact halves."""
    return single_op_model("MUL", [Input((6,), np.int8, (1.0, 0)), Input((1,), np.int8, (1.0, 0))],
                           [(np.int8, (4.0, 0))], "MulOptions", {}, version=2,
                           output_shapes=[(6,)])


def test_rounding_modes_differ_on_ties_and_double_is_litert():
    x, one = np.array([-10, -6, -2, 2, 6, 10], np.int8), np.ones(1, np.int8)
    model = _mul_ties_model()
    double = Interpreter(model, rounding="double")
    single = Interpreter(model, rounding="single")
    assert Interpreter(model).rounding == "double"
    out_d = list(double.invoke([x, one]).values())[0]
    out_s = list(single.invoke([x, one]).values())[0]
    np.testing.assert_array_equal(out_d, [-3, -2, -1, 1, 2, 3])  # ties away from zero
    np.testing.assert_array_equal(out_s, [-2, -1, 0, 1, 2, 3])   # ties toward +infinity
    li = litert(model)
    li.set_tensor(li.get_input_details()[0]["index"], x)
    li.set_tensor(li.get_input_details()[1]["index"], one)
    li.invoke()
    np.testing.assert_array_equal(out_d, li.get_tensor(li.get_output_details()[0]["index"]))


def test_single_rounding_is_selectable_end_to_end_on_a_real_model():
    """rounding="single" reaches every kernel: on mobilenet_v1_0.25_224_quant some tensors
    then differ from LiteRT (which rounds double), while "double" matches all of them."""
    path = model_path("mobilenet_v1_0.25_224_quant")
    model = load_model(path)
    inputs = make_inputs(model, 0)
    li = litert(path)
    single = Interpreter(model, rounding="single")
    assert single.rounding == "single"
    n, bad = run_both(model, li, single, inputs)
    assert n > 50 and bad, "single rounding should differ from LiteRT somewhere"
    print(f"rounding='single': {len(bad)} of {n} tensors differ from LiteRT")
    n, bad = run_both(model, li, Interpreter(model, rounding="double"), inputs)
    assert not bad


def test_rounding_value_is_validated():
    with pytest.raises(ValueError, match="single.*double"):
        Interpreter(_mul_ties_model(), rounding="nearest")
