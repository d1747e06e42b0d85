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
    assert all(f.severity == "warning" and f.subgraph == 0 for f in xnn)
    tflm = findings(report.results["tflm"])
    assert tflm and all(f.severity == "error" for f in tflm)
    assert "change:" in tflm[0].message
    assert legend(report.results["xnnpack"]).endswith("4 partition(s)")
