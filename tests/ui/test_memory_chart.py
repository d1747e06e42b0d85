"""The Memory dock's Qt-free chart: boxes where the plan put the buffers, hit testing, the
per-operator heat of the overlay."""
from __future__ import annotations

from tests.conftest import MODELS_DIR
from tflite_viewer.memory import plan_litert, plan_tflm
from tflite_viewer.model import load_model
from tflite_viewer.ui.state.memory import build_chart


def test_boxes_are_the_planned_buffers_and_a_click_finds_them():
    model = load_model(MODELS_DIR / "person_detect.tflite")
    plan = plan_tflm(model)
    chart = build_chart(plan)
    assert len(chart) == len(plan.buffers) and chart.height == plan.head_bytes == 55_296
    # the peak (step 3) holds tensor 54 at [0, 36864) and tensor 51 above it
    assert chart.peak_step == 3
    i = chart.hit(3.5, 100)
    assert (chart.subgraph[i], chart.tensor[i]) == (0, 54)
    j = chart.hit(3.5, 40_000)
    assert chart.tensor[j] == 51 and "51" in chart.label(j) and "18,432 bytes" in chart.label(j)
    assert chart.hit(30.5, 50_000) is None  # nothing that high at the end
    assert chart.boxes_of_tensor(0, 54) == [i]


def test_heat_is_live_memory_over_the_arena_and_peaks_at_the_peak_op():
    model = load_model(MODELS_DIR / "person_detect.tflite")
    chart = build_chart(plan_tflm(model))
    heat = chart.op_heat(0, len(model.subgraphs[0].operators))
    assert heat.max() == 1.0 and int(heat.argmax()) == 2  # operator 2 holds the peak
    assert (heat >= 0).all() and heat[-1] < 0.1


def test_litert_chart_leaves_in_place_tensors_to_their_input():
    plan = plan_litert(load_model(MODELS_DIR / "sine_float.tflite"))
    chart = build_chart(plan)
    assert len(chart) == sum(1 for b in plan.arenas[0].buffers if b.shares < 0 and b.size)
    assert chart.target == "litert"
