"""The window's view of a target's answer, without a window."""
from __future__ import annotations

from pathlib import Path

from tflite_viewer.model import load_model
from tflite_viewer.targets import analyze
from tflite_viewer.targets.overlay import GROUP_COLOURS, VERDICT_COLOURS, findings, legend, marks

CNN = Path(__file__).resolve().parents[1] / "data" / "models" / "small_cnn_dilated_int8.tflite"


def test_marks_follow_the_verdicts_and_partitions():
    result = analyze(load_model(CNN), ["xnnpack"]).results["xnnpack"]
    m = marks(result, 0)
    assert len(m) == 13
    for i, p in enumerate(result.partitions):
        for k in p.ops:
            assert m[k].partition == i and m[k].verdict == "runs"
            assert m[k].group_colour == GROUP_COLOURS[i % len(GROUP_COLOURS)]
    assert m[1].verdict == "falls back" and m[1].partition is None and m[1].group_colour is None
    assert m[1].colour == VERDICT_COLOURS["falls back"]
    assert len({m[k].group_colour for p in result.partitions for k in p.ops}) == len(
        result.partitions)  # each partition its own colour
    assert marks(result, 3) == {}


def test_problems_entries_link_to_the_operators():
    report = analyze(load_model(CNN), ["xnnpack", "tflm"])
    xnn = findings(report.results["xnnpack"])
    assert {f.operator for f in xnn} == {o.index for o in report.results["xnnpack"].ops
                                        if o.verdict != "runs"}
    assert all(f.subgraph == 0 and f.verdict == "falls back" for f in xnn)
    tflm = findings(report.results["tflm"])
    # the model-wide failure first, then each operator TFLM computes wrong
    assert [(f.where, f.operator) for f in tflm] == [("model", None),
                                                     ("subgraphs[0].operators[1]", 1),
                                                     ("subgraphs[0].operators[2]", 2)]
    assert tflm[0].message.startswith("tflm: TFLM runs this model but computes wrong values")
    assert "change:" in tflm[1].message
    assert legend(report.results["xnnpack"]).endswith("4 partition(s)")


def test_target_verdicts_are_information_tagged_with_their_target():
    """Problems rows from a target are not errors in the model: ``info``, with the target."""
    report = analyze(load_model(CNN))
    for name, result in report.results.items():
        rows = findings(result)
        assert all(f.severity == "info" and f.target == name for f in rows)
        assert all(f.message.startswith(f"{name}: ") for f in rows)


def test_warnings_are_rows_too():
    from tests.targets.shape_models import reshape_from_input

    (row,) = findings(analyze(load_model(reshape_from_input()), ["tflm"]).results["tflm"])
    assert row.verdict == "runs" and "runs, but depends on the input's values" in row.message
