"""Issue 18, class by class: each defect the fuzzing campaign found gets its documented error.

The models are corpus models changed through the fuzzer's mutation functions
(`tests.fuzz.mutations`) or the same object tree, aimed at one object so that the
expected message can be asserted exactly.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
import tracemalloc

import numpy as np
import pytest

from tests.cli_runner import run_cli
from tests.conftest import MODELS_DIR
from tests.fuzz.mutations import MUTATIONS
from tflite_viewer.edit.tree import unpack
from tflite_viewer.edit.writer import serialize
from tflite_viewer.interpreter import (AllocationError, Interpreter, IterationBudgetError,
                                       ModelFormatError, RunCancelled, TimeBudgetError)
from tflite_viewer.interpreter.inputs import seeded_inputs
from tflite_viewer.interpreter.registration import Kernel
from tflite_viewer.model import load_model
from tflite_viewer.schema import schema_generated as S


def edited(name: str, change) -> bytes:
    """The corpus model ``name`` with ``change(tree)`` applied, written by the writer."""
    tree = unpack(load_model(MODELS_DIR / name))
    change(tree)
    return serialize(tree)


def cli(*args) -> subprocess.CompletedProcess:
    """The command line in this process (`tests.cli_runner`)."""
    return run_cli(*args)


def program(*args) -> subprocess.CompletedProcess:
    """The program itself, ``python -m tflite_viewer``, in a process of its own: for a
    model that loops, where a budget that failed to stop it must not hang the suite."""
    return subprocess.run([sys.executable, "-m", "tflite_viewer", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The CLI's contract for bad input: exit 2, exactly one line on stderr, no traceback."""
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def write(tmp_path, data: bytes, name: str = "bad.tflite"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


# -- 1. undocumented exceptions --------------------------------------------------------------
def _per_channel_mismatch(tree):
    for t in tree.model.subgraphs[0].tensors:
        q = t.quantization
        if q is not None and q.scale is not None and len(q.scale) > 1:
            q.zeroPoint = np.zeros(len(q.scale) - 1, np.int64)
            return
    raise AssertionError("no per-channel tensor")


def test_scale_zero_point_count_mismatch_is_a_load_finding_and_a_model_format_error():
    model = load_model(edited("small_cnn_dilated_int8.tflite", _per_channel_mismatch))
    findings = [f for f in model.findings if "zero points" in f.message]
    assert len(findings) == 1
    where = findings[0].where
    t = model.subgraphs[0].tensors[findings[0].tensor]
    with pytest.raises(ModelFormatError) as info:
        t.dequantized()
    assert str(info.value).startswith(where) and "zero points" in str(info.value)
    with pytest.raises(ModelFormatError, match=r"tensors\[\d+\]\.quantization: \d+ scales but"):
        Interpreter(model)


def test_zero_subgraphs_is_refused_at_load_and_by_every_command(tmp_path):
    data = edited("sine_float.tflite", lambda tree: MUTATIONS["zero_subgraphs"](tree, None))
    with pytest.raises(ModelFormatError, match="^subgraphs: the model has no subgraphs"):
        load_model(data)
    path = write(tmp_path, data)
    for args in (("info", path, "--json"), ("layout", path, "--json"), ("run", path)):
        assert "no subgraphs" in one_error_line(cli(*args))


def _clear(field: str, op: int = 0):
    def change(tree):
        setattr(tree.model.subgraphs[0].operators[op], field, np.zeros(0, np.int32))
    return change


def test_empty_operator_inputs_are_refused_before_any_kernel(tmp_path):
    data = edited("small_cnn_dilated_int8.tflite", _clear("inputs"))
    with pytest.raises(ModelFormatError) as info:
        Interpreter(load_model(data))
    assert str(info.value) == ("subgraphs[0].operators[0].inputs: CONV_2D takes 2 to 3 inputs, "
                               "the operator has 0")
    line = one_error_line(cli("run", write(tmp_path, data)))
    assert "operators[0].inputs: CONV_2D takes 2 to 3 inputs" in line


def test_empty_operator_outputs_are_refused_before_any_kernel():
    data = edited("sine_float.tflite", _clear("outputs", 1))
    with pytest.raises(ModelFormatError, match=r"^subgraphs\[0\]\.operators\[1\]\.outputs: "
                                               "FULLY_CONNECTED has 1 to 2 outputs, the "
                                               "operator lists 0$"):
        Interpreter(load_model(data))


def test_negative_dimension_of_a_variable_tensor_is_a_model_format_error():
    def change(tree):
        t = tree.model.subgraphs[0].tensors[7]
        t.shape, t.isVariable = np.array([1, -3], np.int32), True
    model = load_model(edited("sine_float.tflite", change))
    assert any("negative dimension" in f.message for f in model.findings)
    with pytest.raises(ModelFormatError, match=r"^subgraphs\[0\]\.tensors\[7\]\.shape: "
                                               r"negative dimension in \[1, -3\]"):
        Interpreter(model)


def test_the_arity_check_runs_before_the_kernel_sees_the_node():
    """A custom kernel declaring two inputs is never called for a node with one."""
    calls = []

    class Spy(Kernel):
        types = "any"
        arity = (2, 2, 1, 1)

        def check(self, ctx, node):
            calls.append("check")

        def init(self, ctx, node):
            calls.append("init")

        def prepare(self, ctx, node):
            calls.append("prepare")

        def invoke(self, ctx, node):
            calls.append("invoke")

    def change(tree):
        code = S.OperatorCodeT()
        code.builtinCode, code.deprecatedBuiltinCode, code.customCode = 32, 32, b"Spy"
        code.version = 1
        tree.model.operatorCodes = list(tree.model.operatorCodes) + [code]
        tree.model.subgraphs[0].operators[2].opcodeIndex = len(tree.model.operatorCodes) - 1
        tree.model.subgraphs[0].operators[2].inputs = np.array([8], np.int32)
        tree.model.subgraphs[0].operators[2].builtinOptions = None
        tree.model.subgraphs[0].operators[2].builtinOptionsType = 0
    interp = Interpreter(load_model(edited("sine_float.tflite", change)), allocate=False)
    interp.op_resolver.add_custom("Spy", Spy())
    with pytest.raises(ModelFormatError, match=r"operators\[2\]\.inputs: Spy takes 2 inputs, "
                                               "the operator has 1"):
        interp.allocate_tensors()
    assert calls == []


def test_required_input_omitted_and_constant_output_are_refused():
    def omit(tree):
        tree.model.subgraphs[0].operators[0].inputs = np.array([0, -1, 3], np.int32)
    with pytest.raises(ModelFormatError, match=r"operators\[0\]\.inputs\[1\]: input 1 of "
                                               "FULLY_CONNECTED is required but omitted"):
        Interpreter(load_model(edited("sine_float.tflite", omit)))

    def write_constant(tree):
        tree.model.subgraphs[0].operators[0].outputs = np.array([4], np.int32)
    with pytest.raises(ModelFormatError, match=r"operators\[0\]\.outputs\[0\]: tensor 4 .* is "
                                               "a constant"):
        Interpreter(load_model(edited("sine_float.tflite", write_constant)))


def test_a_tensor_read_before_it_is_written_is_refused():
    def reverse(tree):
        tree.model.subgraphs[0].operators = tree.model.subgraphs[0].operators[::-1]
    with pytest.raises(ModelFormatError, match=r"operators\[0\]\.inputs\[0\]: FULLY_CONNECTED "
                                               "reads tensor 8 .* before anything gives it a "
                                               "value"):
        Interpreter(load_model(edited("sine_float.tflite", reverse)))


def test_a_callee_of_the_wrong_arity_is_refused():
    def drop(tree):
        tree.model.subgraphs[3].inputs = np.array([0, 1], np.int32)  # WHILE cond takes 3
    with pytest.raises(ModelFormatError, match=r"operators\[0\]\.builtin_options\.cond: WHILE "
                                               "passes 3 inputs and expects 1 outputs; its cond "
                                               "subgraph 3 takes 2"):
        Interpreter(load_model(edited("control_flow.tflite", drop)))


# -- 2. hangs --------------------------------------------------------------------------------
def always_true() -> bytes:
    return edited("control_flow.tflite",
                  lambda tree: MUTATIONS["while_always_true"](tree, random.Random(0)))


def test_an_always_true_while_hits_the_iteration_budget_naming_the_op_and_count():
    interp = Interpreter(load_model(always_true()), max_iterations=50)
    with pytest.raises(IterationBudgetError) as info:
        interp.invoke(seeded_inputs(interp.model))
    assert str(info.value).startswith("subgraph 0 op 0 (WHILE): still looping after 50 "
                                      "iterations")
    assert "--max-iterations" in str(info.value)
    # a stepped run too, and the interpreter stays usable
    with pytest.raises(IterationBudgetError):
        interp.run(seeded_inputs(interp.model))
    assert interp.state == "ready"


def test_the_time_budget_names_the_while_and_its_iteration():
    interp = Interpreter(load_model(always_true()), max_iterations=None, timeout=0.2)
    start = time.perf_counter()
    with pytest.raises(TimeBudgetError, match=r"^subgraph 0 op 0 \(WHILE, iteration [\d,]+\)"
                                              r".*time budget of 0\.2 s .*--timeout"):
        interp.invoke(seeded_inputs(interp.model))
    assert time.perf_counter() - start < 30  # not a timed test: only "it ended"


def test_request_stop_interrupts_invoke_and_pauses_a_stepped_run():
    interp = Interpreter(load_model(always_true()), max_iterations=None, timeout=None)
    inputs = seeded_inputs(interp.model)
    timer = threading.Timer(0.2, interp.request_stop)
    timer.start()
    with pytest.raises(RunCancelled, match=r"^subgraph 0 op 0 \(WHILE, iteration [\d,]+\).*"
                                           "stopped"):
        interp.invoke(inputs)
    timer = threading.Timer(0.2, interp.request_stop)
    timer.start()
    stop = interp.run(inputs)
    assert stop.reason == "interrupted" and interp.state == "paused"
    assert len(stop.position) > 1  # inside the loop's subgraphs
    assert interp.step().reason == "step"  # and it can go on


def test_run_max_iterations_and_timeout_flags(tmp_path):
    path = write(tmp_path, always_true())
    line = one_error_line(program("run", path, "--max-iterations", "30"))
    assert "(WHILE): still looping after 30 iterations" in line
    line = one_error_line(program("run", path, "--max-iterations", "100000000", "--timeout",
                                  "0.5"))
    assert "time budget of 0.5 s" in line


def test_seeded_integers_feeding_loop_bounds_stay_small():
    """control_flow's loop bound n is an int32 input; quantization parameters on it (the
    campaign's case) no longer make it span the whole int32 range."""
    def quantize_n(tree):
        q = S.QuantizationParametersT()
        q.scale, q.zeroPoint = np.array([0.5], np.float32), np.array([0], np.int64)
        tree.model.subgraphs[0].tensors[1].quantization = q
    model = load_model(edited("control_flow.tflite", quantize_n))
    for seed in range(20):
        n = seeded_inputs(model, seed)["serving_default_n:0"]
        assert 0 <= int(n) < 8


# -- 3. memory -------------------------------------------------------------------------------
def huge_input() -> bytes:
    def change(tree):
        t = tree.model.subgraphs[0].tensors[0]
        t.shape = np.array([1, 2**31 - 1], np.int32)
        t.shapeSignature = np.array([-1, 2**31 - 1], np.int32)  # a consistent signature
    return edited("sine_float.tflite", change)


def test_a_huge_declared_input_is_refused_before_allocating(tmp_path):
    model = load_model(huge_input())
    tracemalloc.start()
    try:
        with pytest.raises(AllocationError) as info:
            seeded_inputs(model, max_bytes=1 << 30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20
    assert "would need 8,589,934,588 bytes" in str(info.value)  # (2**31 - 1) float32
    assert "allocation limit of 1,073,741,824 bytes" in str(info.value)
    assert "max_allocation_bytes" in str(info.value) and "--max-memory" in str(info.value)
    line = one_error_line(cli("run", write(tmp_path, huge_input()), "--max-memory", "1G"))
    assert "allocation limit of 1,073,741,824 bytes" in line and "--max-memory" in line


def test_resizing_setting_and_loading_inputs_count_against_the_limit(tmp_path):
    interp = Interpreter(MODELS_DIR / "sine_float.tflite", max_allocation_bytes=1 << 20)
    with pytest.raises(AllocationError, match="allocation limit of 1,048,576 bytes"):
        interp.resize_input(0, [1 << 20, 1])
    with pytest.raises(AllocationError, match="allocation limit"):
        interp.set_input(0, np.zeros((1, 1 << 19), np.float64))  # 4 MB once cast
    npz = tmp_path / "in.npz"
    np.savez(npz, **{"serving_default_dense_input:0": np.zeros((1, 1 << 18), np.float32)})
    line = one_error_line(cli("run", MODELS_DIR / "sine_float.tflite", "--inputs", npz,
                              "--max-memory", "512K"))
    assert "array 'serving_default_dense_input:0'" in line and "allocation limit" in line


def test_default_allocation_limit_is_a_fraction_of_physical_memory():
    from tflite_viewer.interpreter import budget
    phys = budget.physical_memory()
    assert budget.DEFAULT_MAX_ALLOCATION_BYTES <= 4 << 30
    if phys:
        assert budget.DEFAULT_MAX_ALLOCATION_BYTES == min(phys // 4, 4 << 30)


# -- 4. strict JSON, 5. no stray warnings -----------------------------------------------------
def nan_scale() -> bytes:
    def change(tree):
        for t in tree.model.subgraphs[0].tensors:
            if t.quantization is not None and t.quantization.scale is not None \
                    and len(t.quantization.scale):
                t.quantization.scale = np.array([np.nan] + [0.0] * (len(t.quantization.scale) - 1),
                                                np.float32)
                return
    return edited("small_cnn_dilated_int8.tflite", change)


def _strict(text: str):
    def refuse(name):
        raise AssertionError(f"non-standard JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def test_info_and_layout_json_are_strict(tmp_path):
    path = write(tmp_path, nan_scale())
    info = cli("info", path, "--json")
    assert info.returncode == 0 and info.stderr == ""
    doc = _strict(info.stdout)
    tensor = next(t for t in doc["subgraphs"][0]["tensors"]
                  if t["quantization"] and t["quantization"]["scale"]
                  and t["quantization"]["scale"][0] is None)
    where = f"subgraphs[0].tensors[{tensor['index']}].quantization"
    assert {"severity": "warning", "where": where + ".scale[0]",
            "message": "non-finite number nan written as null"} in doc["findings"]
    assert any(f["where"] == where and "a non-finite scale (nan)" in f["message"]
               for f in doc["findings"])
    layout = cli("layout", path, "--json")
    assert layout.returncode == 0
    _strict(layout.stdout)


def test_edit_json_is_strict(tmp_path):
    out = tmp_path / "out.tflite"
    result = cli("edit", write(tmp_path, nan_scale()), "-o", out, "--json",
                 "--set", "0:0.stride_w=1")
    assert result.returncode == 0, result.stderr
    _strict(result.stdout)


def test_jsonout_encodes_non_finite_numbers_as_null_with_findings():
    from tflite_viewer.cli import jsonout
    doc = _strict(jsonout.dumps({"a": [1.0, float("inf")], "b": np.float32("nan"),
                                 "findings": []}))
    assert doc["a"] == [1.0, None] and doc["b"] is None
    assert [f["where"] for f in doc["findings"]] == ["a[1]", "b"]


def test_bad_scales_are_findings_and_run_prints_one_line_without_warnings(tmp_path):
    model = load_model(nan_scale())
    assert any(m.startswith("a non-finite scale (nan)") for m in
               (f.message for f in model.findings))
    result = cli("run", write(tmp_path, nan_scale()))
    line = one_error_line(result)  # exactly one line: no RuntimeWarning before it
    assert "INT8 with a non-finite scale (nan) is refused" in line


# -- 6. the documented input keys ---------------------------------------------------------------
def test_unnamed_inputs_are_accepted_by_their_s_t_keys():
    def unname(tree):
        tree.model.subgraphs[0].tensors[0].name = b""
        tree.model.signatureDefs = []
    interp = Interpreter(load_model(edited("sine_float.tflite", unname)))
    inputs = seeded_inputs(interp.model)
    assert list(inputs) == ["s0_t0"]
    out = interp.invoke(inputs)
    ref = Interpreter(MODELS_DIR / "sine_float.tflite").invoke([inputs["s0_t0"]])
    np.testing.assert_array_equal(list(out.values())[0], list(ref.values())[0])
    interp.set_input("s0_t0", inputs["s0_t0"])
    interp.resize_input("s0_t0", [2, 1])
    assert interp.input_details()[0]["shape"] == (2, 1)


# -- issue 16 item 7: two messages ----------------------------------------------------------------
def test_bad_identifier_is_shown_as_text_or_hex_and_truncation_is_named():
    data = (MODELS_DIR / "sine_float.tflite").read_bytes()
    with pytest.raises(ModelFormatError, match=r'^<file>: file identifier is "o th", expected '
                                               r'"TFL3": not a TFLite model$'):
        load_model(data[:4] + b"o th" + data[8:])
    with pytest.raises(ModelFormatError, match=r"file identifier is 0x00 0xff 0x01 0x78,"):
        load_model(data[:4] + b"\x00\xff\x01x" + data[8:])
    with pytest.raises(ModelFormatError, match=r"but the file has only 1,000 bytes: the file "
                                               "looks truncated$"):
        load_model(data[:1000])


# -- found by the long mode (benchmarks/fuzz.py, seeds 18-20, 21,000 cases) -----------------
LONG_MODE_FINDINGS = [
    # an input whose shape_signature does not fit its shape: a bare ValueError from resize
    ({"model": "sine_float.tflite", "steps": [["reshape_tensor", 3610923215],
                                             ["subgraph_io", 1686428069],
                                             ["signature", 1314948358]]}, "ModelFormatError"),
    # a dilation of 2**20: the conv kernel padded its input by the window (6.7 GB, 136 s)
    ({"model": "sparse_conv_float.tflite", "steps": [["option_value", 2077347212],
                                                    ["add_quantization", 796652178],
                                                    ["add_quantization", 2669549738]]},
     "AllocationError"),
    # a pooling filter of 2**20
    ({"model": "small_cnn_dilated_int8.tflite", "steps": [["option_value", 4063104082]]},
     "AllocationError"),
    # a sparse weight claiming [32, 3, 65536, 32]: 805 MB densified, then a slow conv
    ({"model": "sparse_conv_float.tflite", "steps": [["huge_dimension", 16304365],
                                                    ["options_type", 782818957]]},
     "AllocationError"),
    # a sparse weight claiming [2**31 - 1, 16]: the densify traversal built a 16 GiB index
    # before its size check (16.5 GB peak, 68 s, in the reader's accessors)
    ({"model": "sine_float.tflite", "steps": [["scale_zero_point_mismatch", 2207003248],
                                             ["huge_dimension", 1405063542],
                                             ["broken_sparsity", 3709383081]]},
     "AllocationError"),
]


@pytest.mark.parametrize("case,error", LONG_MODE_FINDINGS)
def test_long_mode_findings_get_documented_errors_quickly(case, error):
    from tests.fuzz.corpus import model_bytes
    from tests.fuzz.harness import run_case
    from tests.fuzz.mutations import mutate
    data, done = mutate(model_bytes(case["model"]), [tuple(s) for s in case["steps"]])
    tracemalloc.start()
    try:
        out = run_case(data, watchdog=60)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.undocumented is None and not out.hang, (done, out.undocumented)
    assert out.steps["interpreter"] == error, (done, out.steps)
    assert peak < 300 << 20, (done, peak)  # the 256 MiB densify bound, never gigabytes


# found by the long mode after the zero-element-constant change: a value of a damaged shape
# (negative dimensions, rank over numpy's 64) reached numpy's reshape as a bare ValueError
SHAPE_OF_VALUE_CASES = [
    {"model": "lstm_dynamic.tflite", "steps": [["buffer_size", 3255457421]],
     "damage": 2642806607},
    {"model": "control_flow.tflite", "steps": [["reshape_tensor", 4176264413],
                                               ["scale_zero_point_mismatch", 4186755256],
                                               ["buffer_size", 170763923]], "damage": 4136403490},
    {"model": "lstm_dynamic.tflite", "steps": [["subgraph_call", 249742951]],
     "damage": 1385208027},
]


@pytest.mark.parametrize("case", SHAPE_OF_VALUE_CASES)
def test_values_of_impossible_shapes_are_model_format_errors(case):
    from tests.fuzz.corpus import model_bytes
    from tests.fuzz.harness import run_case
    from tests.fuzz.mutations import damage_bytes, mutate
    data, done = mutate(model_bytes(case["model"]), [tuple(s) for s in case["steps"]])
    data, _ = damage_bytes(data, case["damage"])
    out = run_case(data, watchdog=60)
    assert out.undocumented is None and not out.hang, (done, out.undocumented)
