"""`tflite-viewer run`: outputs, --inputs naming, --dump-all, --compare-litert, exit codes.

The command line runs in this process (`tests.cli_runner`: its exit code, stdout and stderr
with the warnings Python would print); `test_rounding_passes_through` runs the program
itself, ``python -m tflite_viewer``, in a subprocess.  The LiteRT oracle runs in-process on
the same inputs (float models only: those never crash LiteRT)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.cli_runner import run_cli
from tests.conftest import MODELS_DIR
from tests.litert_oracle import litert
from tflite_viewer.model import load_model
from tflite_viewer.model.dtypes import numpy_dtype

TOL = 1e-5


def _run(*args: str) -> subprocess.CompletedProcess:
    return run_cli("run", *args)


def _run_program(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tflite_viewer", "run", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def _model(name: str) -> Path:
    return MODELS_DIR / f"{name}.tflite"


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b))))) if b.size else 0.0


def _one_error_line(result: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tflite-viewer")
    return lines[0]


def _entry(model, signature):
    """(subgraph index, [(input name, tensor)], [(output name, tensor)]) of a run."""
    if signature is None:
        sg = model.subgraphs[0]
        return 0, [(sg.tensors[i].name, i) for i in sg.inputs], \
            [(sg.tensors[i].name, i) for i in sg.outputs]
    sig = model.signature(signature)
    return sig.subgraph_index, [(m.name, m.tensor_index) for m in sig.inputs], \
        [(m.name, m.tensor_index) for m in sig.outputs]


def _litert_run(path: Path, model, signature, inputs: dict[int, np.ndarray]):
    """LiteRT's reference kernels on inputs keyed by tensor index; the interpreter (whose
    entry-subgraph tensors are all readable) and the subgraph it ran."""
    li = litert(path, resolver="BUILTIN_REF")
    sgi, ins, _ = _entry(model, signature)
    if signature is None:
        li.allocate_tensors()
        for i, x in inputs.items():
            li.set_tensor(i, x)
        li.invoke()
    else:
        li.get_signature_runner(signature)(**{n: inputs[i] for n, i in ins})
    return li, sgi


def _read_tensors(msg) -> set[int]:
    used = set(msg.outputs)
    for op in msg.operators:
        used.update(i for i in op.inputs if i >= 0)
    return used


# ------------------------------------------------------------------------------------------
# float corpus models: outputs printed, --dump-all complete and equal to LiteRT
# ------------------------------------------------------------------------------------------
CASES = [("mobilenet_v2_float", None), ("control_flow", None),
         ("control_flow", "serving_default"), ("movie_review", None),
         ("multi_signature", "encode"), ("multi_signature", "decode"), ("sine_float", None)]


@pytest.mark.parametrize("name,signature", CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_run_dump_all_matches_model_and_litert(name, signature, tmp_path):
    path = _model(name)
    dump = tmp_path / "all.npz"
    args = [path, "--dump-all", dump] + (["--signature", signature] if signature else [])
    result = _run(*args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    model = load_model(path)
    sgi, ins, outs = _entry(model, signature)
    out = result.stdout
    assert "Outputs:" in out and "Ran " in out and " ms" in out
    for oname, _ in outs:
        assert f"  {oname} (T#" in out
        assert "min " in out and "max " in out and "mean " in out and "first [" in out

    with np.load(dump, allow_pickle=False) as data:
        dumped = {k: data[k] for k in data.files}
    # every constant of every subgraph, in its own dtype and shape
    for sg in model.subgraphs:
        for t in sg.tensors:
            if t.is_constant and not t.is_variable:
                key = f"s{sg.index}_t{t.index}"
                assert key in dumped, key
                assert dumped[key].dtype == numpy_dtype(t.type), key
                assert dumped[key].shape == tuple(t.shape), key
    # every tensor the entry subgraph computed: its inputs and every op output
    msg = model.subgraphs[sgi]
    computed = set(msg.inputs) | {o for op in msg.operators for o in op.outputs if o >= 0}
    for i in computed:
        key = f"s{sgi}_t{i}"
        assert key in dumped, key
        assert dumped[key].dtype == numpy_dtype(msg.tensors[i].type), key
    # no keys of other forms, no tensors of subgraphs that were never entered
    assert all(k.startswith("s") and "_t" in k for k in dumped)

    # LiteRT on the very inputs that were used: same outputs, same intermediate values
    inputs = {i: dumped[f"s{sgi}_t{i}"] for _, i in ins}
    li, sgi2 = _litert_run(path, model, signature, inputs)
    assert sgi2 == sgi
    for _, i in outs:
        assert _rel(dumped[f"s{sgi}_t{i}"], li.get_tensor(i, sgi)) <= TOL
    for i in _read_tensors(msg) & computed:
        ref = li.get_tensor(i, sgi)
        mine = dumped[f"s{sgi}_t{i}"]
        assert mine.shape == ref.shape, i
        if ref.dtype.kind == "f":
            assert _rel(mine, ref) <= TOL, i
        else:
            assert np.array_equal(mine, ref), i


def test_dump_all_includes_loop_body_and_taken_branch(tmp_path):
    """control_flow: the WHILE body's tensors (last iteration) and the IF branch that ran."""
    dump = tmp_path / "cf.npz"
    np.savez(tmp_path / "in.npz", x=np.linspace(-1, 1, 4).astype(np.float32), n=np.int32(3))
    result = _run(_model("control_flow"), "--signature", "serving_default",
                  "--inputs", tmp_path / "in.npz", "--dump-all", dump)
    assert result.returncode == 0, result.stderr
    with np.load(dump) as data:
        keys = set(data.files)
        counter = data["s4_t6"]  # the body's counter output: 3 after 3 iterations
        body_in = data["s4_t0"]
    assert int(counter) == 3 and int(body_in) == 2
    model = load_model(_model("control_flow"))
    for sgi in (3, 4):  # cond and body ran: all their op outputs are there
        for op in model.subgraphs[sgi].operators:
            assert all(f"s{sgi}_t{o}" in keys for o in op.outputs)
    taken = [s for s in (1, 2) if f"s{s}_t{model.subgraphs[s].outputs[0]}" in keys]
    assert len(taken) == 1


# ------------------------------------------------------------------------------------------
# --inputs by tensor name, signature name, s{sg}_t{i}
# ------------------------------------------------------------------------------------------
def _inputs_case(kind: str):
    rng = np.random.default_rng(7)
    if kind == "tensor-name":
        x = rng.uniform(-1, 1, (1, 96, 96, 3)).astype(np.float32)
        return "mobilenet_v2_float", None, {"serving_default_keras_tensor:0": x}, {0: x}
    if kind == "signature-name":
        x = rng.uniform(-1, 1, 4).astype(np.float32)
        return "control_flow", "serving_default", {"x": x, "n": np.int32(5)}, \
            {0: x, 1: np.int32(5)}
    if kind == "s0_tN":
        ids = rng.integers(0, 10003, (1, 256)).astype(np.int32)
        return "movie_review", None, {"s0_t0": ids}, {0: ids}
    if kind == "signature-s1_tN":
        x = rng.uniform(-1, 1, (1, 4)).astype(np.float32)
        return "multi_signature", "encode", {"s1_t0": x}, {0: x}
    if kind == "mixed-int64":  # a tensor name and a signature name; int64 cast to int32
        x = rng.uniform(-1, 1, 4).astype(np.float32)
        return "control_flow", "serving_default", \
            {"serving_default_x:0": x, "n": np.int64(2)}, {0: x, 1: np.int32(2)}
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["tensor-name", "signature-name", "s0_tN", "signature-s1_tN",
                                  "mixed-int64"])
def test_inputs_file_naming(kind, tmp_path):
    name, signature, given, by_tensor = _inputs_case(kind)
    np.savez(tmp_path / "in.npz", **given)
    dump = tmp_path / "out.npz"
    result = _run(_model(name), "--inputs", tmp_path / "in.npz", "--dump-all", dump,
                  *(["--signature", signature] if signature else []))
    assert result.returncode == 0, result.stderr
    assert f"from {tmp_path / 'in.npz'}" in result.stdout
    assert "seeded" not in result.stdout
    model = load_model(_model(name))
    sgi, _, outs = _entry(model, signature)
    with np.load(dump) as data:
        for i, x in by_tensor.items():
            np.testing.assert_array_equal(data[f"s{sgi}_t{i}"], x)
        li, _ = _litert_run(_model(name), model, signature,
                            {i: np.asarray(x) for i, x in by_tensor.items()})
        for _, i in outs:
            assert _rel(data[f"s{sgi}_t{i}"], li.get_tensor(i, sgi)) <= TOL


def test_missing_inputs_are_seeded_and_reproducible(tmp_path):
    x = np.full(4, 0.5, np.float32)
    np.savez(tmp_path / "in.npz", **{"s0_t0": x})
    dumps = []
    for seed in ("3", "3", "4"):
        dump = tmp_path / f"d{len(dumps)}.npz"
        result = _run(_model("control_flow"), "--inputs", tmp_path / "in.npz",
                      "--seed", seed, "--dump-all", dump)
        assert result.returncode == 0, result.stderr
        assert f"seeded (seed {seed})" in result.stdout
        with np.load(dump) as data:
            np.testing.assert_array_equal(data["s0_t0"], x)
            dumps.append(int(data["s0_t1"]))
    assert dumps[0] == dumps[1]
    assert all(0 <= n < 8 for n in dumps)


def test_seeded_ids_are_valid_for_movie_review(tmp_path):
    dump = tmp_path / "d.npz"
    result = _run(_model("movie_review"), "--seed", "11", "--dump-all", dump)
    assert result.returncode == 0, result.stderr
    with np.load(dump) as data:
        ids = data["s0_t0"]
    assert ids.dtype == np.int32 and ids.min() >= 0 and ids.max() < 10003
    assert "top-2 (2 classes, a SOFTMAX output):" in result.stdout  # a softmax over 2 classes


def test_rounding_passes_through():
    """The program itself, in a subprocess: exit 0 with the report, exit 2 with one line."""
    result = _run_program(_model("sine_float"), "--rounding", "double")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "rounding double" in result.stdout
    bad = _run_program(_model("sine_float"), "--rounding", "triple")
    assert bad.returncode == 2
    _one_error_line(bad)


def test_float_sums_reference_is_litert_s_reference_and_blas_is_close(tmp_path):
    """``--float-sums``: ``reference`` adds every float32 product in LiteRT's reference order
    (each convolution's output equal to BUILTIN_REF's to the bit); ``blas`` takes numpy's
    product: not those bits, within the float tolerance of them."""
    path = _model("small_cnn_dilated_float")
    model = load_model(path)
    sg = model.subgraphs[0]
    dumps = {}
    for sums in ("reference", "blas"):
        r = _run(path, "--float-sums", sums, "--seed", "3", "--dump-all",
                 tmp_path / f"{sums}.npz", "--json")
        assert r.returncode == 0, r.stderr
        assert f'"float_sums": "{sums}"' in r.stdout
        with np.load(tmp_path / f"{sums}.npz") as data:
            dumps[sums] = {k: data[k] for k in data.files}
    inputs = {i: dumps["reference"][f"s0_t{i}"] for i in sg.inputs}
    li, _ = _litert_run(path, model, None, inputs)
    convs = [op.outputs[0] for op in sg.operators if op.name == "CONV_2D"]
    assert convs
    differ = 0
    for t in convs:
        ref = li.get_tensor(t)
        assert np.array_equal(dumps["reference"][f"s0_t{t}"], ref), t
        assert _rel(dumps["blas"][f"s0_t{t}"], ref) <= TOL, t
        differ += int(np.sum(dumps["blas"][f"s0_t{t}"] != ref))
    assert differ  # the BLAS sums are another order: some output's last bits differ
    bad = _run(path, "--float-sums", "fast")
    assert bad.returncode == 2
    _one_error_line(bad)


# ------------------------------------------------------------------------------------------
# --compare-litert
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,signature", [("mobilenet_v2_float", None),
                                            ("control_flow", None),
                                            ("multi_signature", "encode"),
                                            ("sparse_conv_fp16", None)])
def test_compare_litert_passes_on_float_models(name, signature):
    result = _run(_model(name), "--compare-litert",
                  *(["--signature", signature] if signature else []))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    out = result.stdout
    assert "LiteRT cross-check against LiteRT's reference kernels (BUILTIN_REF)" in out
    assert "end-to-end comparison" in out
    assert "DIVERGES" not in out
    model = load_model(_model(name))
    sgi, _, _ = _entry(model, signature)
    n_ops = len(model.subgraphs[sgi].operators)
    rows = [ln for ln in out.splitlines() if ln.rstrip().endswith(" ok")]
    assert len(rows) >= n_ops
    assert "end-to-end: " in out and "op outputs within tolerance" in out


def test_compare_litert_zero_tolerance_fails_and_names_first_op():
    """Float rounding differs from LiteRT in the last bits (lstm_float's TANH, numpy's where
    the reference kernels call C's tanhf, inside its WHILE loop; small_cnn_dilated_float is
    now the reference's bits throughout): a zero tolerance must fail (exit 1), name the
    first diverging op, say its error is the end-to-end one, and still print the whole
    table."""
    result = _run(_model("lstm_float"), "--compare-litert", "--tolerance", "0")
    assert result.returncode == 1, result.stdout + result.stderr
    line = _one_error_line(result)
    assert "cross-check failed: first divergence: subgraph 0 op " in line
    assert line.endswith("(end-to-end)"), line
    assert "DIVERGES" in result.stdout
    model = load_model(_model("lstm_float"))
    op = int(line.split(" op ")[1].split()[0])
    assert f"({model.subgraphs[0].operators[op].name})" in line


def test_compare_litert_tolerance_units_flag():
    result = _run(_model("control_flow"), "--compare-litert", "--tolerance", "1e-3",
                  "--tolerance-units", "1")
    assert result.returncode == 0, result.stderr
    assert "tolerance rel 0.001 / 1 unit" in result.stdout
    bad = _run(_model("control_flow"), "--compare-litert", "--tolerance", "-1")
    assert bad.returncode == 2
    _one_error_line(bad)


def test_quantized_model_compare_and_rounding_pass_through(tmp_path):
    model = _model("small_cnn_dilated_int8")
    result = _run(model, "--compare-litert")
    assert result.returncode == 0, result.stdout + result.stderr
    assert " units  ok" in result.stdout or " unit  ok" in result.stdout
    dumps = {}
    for rounding in ("single", "double"):
        r = _run(model, "--rounding", rounding, "--dump-all", tmp_path / f"{rounding}.npz")
        assert r.returncode == 0, r.stderr
        assert f"rounding {rounding}" in r.stdout
        with np.load(tmp_path / f"{rounding}.npz") as data:
            dumps[rounding] = {k: data[k] for k in data.files}
    assert dumps["single"].keys() == dumps["double"].keys()
    assert any(not np.array_equal(dumps["single"][k], dumps["double"][k])
               for k in dumps["single"])  # ties round differently somewhere


def _table_rows(out: str) -> list[list[str]]:
    return [ln.split() for ln in out.splitlines()
            if ln.strip().split(" ")[0].isdigit() and ("T#" in ln)]


def test_compare_litert_falls_back_to_an_op_isolated_comparison():
    """Issue 16 item 5: mobilenet_v2_int8 aborts LiteRT's BUILTIN_REF in allocate_tensors.
    The comparison goes on with the optimized kernels, says so, and by default decides op
    by op (each op fed LiteRT's own inputs), where every op is within one unit; the
    end-to-end error, where rounding differences compound, is printed too and fails when
    asked to decide."""
    result = _run(_model("mobilenet_v2_int8"), "--compare-litert")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "against LiteRT's optimized kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES)" in out
    assert "LiteRT BUILTIN_REF crashed (SIGABRT)" in out
    assert "isolated comparison, tolerance rel 1e-05 / 1 unit" in out
    assert len(_table_rows(out)) == 65
    e2e_units, iso_units = [], []
    for line in out.splitlines():
        if "T#" in line and line.strip().split(" ")[0].isdigit():
            tail = line.rsplit("  ", 1)[0].split()
            iso_units.append(int(tail[-2]))
            e2e_units.append(int(tail[-4]))
    assert max(iso_units) == 1 and max(e2e_units) > 1  # the README's claim: one unit op by op
    assert "op-isolated: 65 of 65 op outputs within tolerance (largest error 1 unit)" in out
    assert f"end-to-end: {sum(u <= 1 for u in e2e_units)} of 65" in out
    strict = _run(_model("mobilenet_v2_int8"), "--compare-litert", "--compare-mode",
                  "end-to-end")
    assert strict.returncode == 1
    assert "(end-to-end)" in _one_error_line(strict)


def test_litert_messages_are_separated_and_folded():
    """Issue 16 item 7: LiteRT runs its messages for person_detect together ("Was 3.Tensor
    33") and repeats them per tensor; the one line says each once, whole."""
    result = _run(_model("person_detect"), "--compare-litert")
    assert result.returncode == 2
    line = _one_error_line(result)
    assert "3.Tensor" not in line and not line.rstrip().endswith("...")
    assert "Was 3. " in line and "Tensor 33 has invalid quantization parameters" in line
    assert "14 in all" in line


def test_compare_litert_crash_is_contained():
    """keyword_scrambled_8bit crashes LiteRT in every resolver (our interpreter runs it):
    exit 2, one readable line naming LiteRT's crash, and this process lives on."""
    result = _run(_model("keyword_scrambled_8bit"), "--compare-litert")
    assert result.returncode == 2, result.stdout + result.stderr
    line = _one_error_line(result)
    assert "LiteRT crashed on this model (signal" in line, line


def test_compare_litert_without_litert_installed(tmp_path):
    code = ("import sys; sys.modules['ai_edge_litert'] = None\n"
            "from tflite_viewer.cli import main\n"
            f"raise SystemExit(main(['run', {str(_model('sine_float'))!r}, '--compare-litert']))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2
    line = _one_error_line(result)
    assert "ai-edge-litert" in line


# ------------------------------------------------------------------------------------------
# bad input: exit 2, one line naming the problem
# ------------------------------------------------------------------------------------------
def _bad_inputs(kind: str, tmp: Path) -> tuple[list[str], str]:
    m = str(_model("control_flow"))
    f = tmp / "in.npz"
    if kind == "unknown-name":
        np.savez(f, nope=np.zeros(4, np.float32))
        return [m, "--inputs", str(f)], "unknown input 'nope'"
    if kind == "wrong-shape":
        np.savez(f, **{"serving_default_x:0": np.zeros((2, 3), np.float32)})
        return [m, "--inputs", str(f)], "expected shape [4]"
    if kind == "wrong-dtype":
        np.savez(f, n=np.float32(2.5))
        return [m, "--inputs", str(f), "--signature", "serving_default"], "input 'n'"
    if kind == "int-overflow":
        np.savez(f, n=np.int64(1 << 40))
        return [m, "--inputs", str(f), "--signature", "serving_default"], "do not fit INT32"
    if kind == "signature-name-without-signature-of-other-subgraph":
        np.savez(f, x=np.zeros((1, 4), np.float32))  # encode's input; decode is subgraph 0
        return [str(_model("multi_signature")), "--inputs", str(f)], "unknown input 'x'"
    if kind == "twice":
        np.savez(f, **{"s0_t0": np.zeros(4, np.float32),
                       "serving_default_x:0": np.zeros(4, np.float32)})
        return [m, "--inputs", str(f)], "given twice"
    if kind == "not-npz":
        f.write_bytes(b"definitely not numpy")
        return [m, "--inputs", str(f)], "not an .npz archive"
    if kind == "truncated-npz":
        np.savez(f, x=np.zeros(1000, np.float32))
        f.write_bytes(f.read_bytes()[:200])
        return [m, "--inputs", str(f)], "cannot read inputs file"
    if kind == "npy":
        np.save(tmp / "a.npy", np.zeros(4, np.float32))
        return [m, "--inputs", str(tmp / "a.npy")], ".npy"
    if kind == "missing-file":
        return [m, "--inputs", str(tmp / "nothing.npz")], "nothing.npz: no such file"
    if kind == "bad-signature":
        return [m, "--signature", "nope"], "no signature 'nope'"
    if kind == "bad-model":
        (tmp / "bad.tflite").write_bytes(b"not a model at all, just text")
        return [str(tmp / "bad.tflite")], "file identifier"
    if kind == "unsupported-ops":
        from tests.interpreter.singleop import Input, single_op_model
        (tmp / "custom.tflite").write_bytes(single_op_model(
            "CUSTOM", [Input((2,))], [np.float32], custom_code="NoSuchOp"))
        return [str(tmp / "custom.tflite")], "cannot run this model"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", [
    "unknown-name", "wrong-shape", "wrong-dtype", "int-overflow",
    "signature-name-without-signature-of-other-subgraph", "twice", "not-npz",
    "truncated-npz", "npy", "missing-file", "bad-signature", "bad-model", "unsupported-ops"])
def test_bad_input_exits_2_with_one_line(kind, tmp_path):
    args, expected = _bad_inputs(kind, tmp_path)
    result = _run(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    line = _one_error_line(result)
    assert expected in line, line


def test_kernel_failure_exits_2_naming_the_op(tmp_path):
    np.savez(tmp_path / "ids.npz", input_3=np.full((1, 256), 20000, np.int32))
    result = _run(_model("movie_review"), "--inputs", tmp_path / "ids.npz")
    assert result.returncode == 2
    line = _one_error_line(result)
    assert "op 0 (GATHER)" in line


# ------------------------------------------------------------------------------------------
# output summaries (library functions of the command)
# ------------------------------------------------------------------------------------------
def test_top5_uses_the_labels_file_named_by_metadata():
    from tflite_viewer.interpreter.outputs import top_k_lines
    model = load_model(_model("mobilenet_v1_0.25_224_quant"))
    out = model.subgraphs[0].outputs[0]
    scores = np.zeros((1, 1001), np.uint8)
    scores[0, [3, 285, 7]] = [200, 255, 100]
    (line,) = top_k_lines(model, 0, out, scores, "SOFTMAX")
    labels = model.read_associated_file("labels.txt").decode().splitlines()
    assert line.strip().startswith(  # dequantized, and saying why it is a classifier
        f"top-5 (1001 classes, labels from the model's metadata): #285 {labels[285]!r} 0.996")
    assert f"#3 {labels[3]!r}" in line and f"#7 {labels[7]!r}" in line
    # not classification-like: a single value, or a 2-D map
    assert top_k_lines(model, 0, out, np.zeros((1, 1), np.float32), None) == []
    assert top_k_lines(model, 0, out, np.zeros((1, 4, 4), np.float32), "SOFTMAX") == []


def test_value_summary_handles_non_finite_and_empty():
    from tflite_viewer.interpreter.outputs import value_summary
    text = value_summary(np.array([np.nan, 1, np.inf], np.float32))
    assert "2 non-finite" in text and "first [nan, 1, inf]" in text
    assert value_summary(np.zeros((0, 3), np.float32)) == "empty"
    assert value_summary(None) == "not computed"
    assert "first [True, False]" in value_summary(np.array([True, False]))


def test_summaries_read_in_place_say_what_float64_copies_say():
    """`finite_stats` reads arrays as they are (no float64 copy of a KV cache): the same
    min, max and mean (to float rounding) and non-finite count as a float64 copy gives."""
    from tflite_viewer.interpreter.outputs import finite_stats
    rng = np.random.default_rng(4)
    floats = rng.standard_normal(100_001).astype(np.float32)
    cases = [floats, rng.integers(-128, 128, 5000).astype(np.int8),
             np.array([True, False, True]), np.where(floats > 2.5, np.inf, floats)]
    for a in cases:
        v = a.astype(np.float64)
        finite = v[np.isfinite(v)]
        low, high, mean, nonfinite = finite_stats(a)
        assert (low, high, nonfinite) == (finite.min(), finite.max(), v.size - finite.size)
        assert mean == pytest.approx(finite.mean(), rel=1e-12)
    assert finite_stats(np.array([np.nan], np.float32)) == (None, None, None, 1)
