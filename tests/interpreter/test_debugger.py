"""The debugging API: stepping (over, into, out), breakpoints by op and type, conditional
breakpoints, run_to, snapshots, set_tensor mid-run, hooks, timing, reset."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import (ConditionBreakpoint, Interpreter, NonFiniteBreakpoint,
                                       OpBreakpoint, RangeBreakpoint, SaturationBreakpoint)

from .conftest import model_path
from .singleop import Input, Op, graph_model, single_op_model

F32 = np.float32


@pytest.fixture
def mobilenet():
    interp = Interpreter(model_path("mobilenet_v2_float"))
    interp.set_input(0, np.random.default_rng(0).standard_normal((1, 96, 96, 3)).astype(F32))
    return interp


@pytest.fixture
def control_flow():
    interp = Interpreter(model_path("control_flow"))
    interp.set_input("x", np.linspace(-1, 1, 4).astype(F32))
    interp.set_input("n", np.int32(2))
    return interp


def test_step_runs_one_op_and_matches_run(mobilenet):
    reference = mobilenet.invoke()
    n = len(mobilenet.entry.nodes)
    mobilenet.reset()
    positions = []
    stop = mobilenet.step()
    while not stop.finished:
        positions.append(stop.position)
        stop = mobilenet.step()
    assert positions == [((0, k),) for k in range(1, n)]
    for k in reference:
        np.testing.assert_array_equal(stop.outputs[k], reference[k])


def test_values_appear_only_once_computed(mobilenet):
    mobilenet.reset()
    first = mobilenet.entry.nodes[0]
    assert mobilenet.tensor(0, first.outputs[0]) is None
    mobilenet.step()
    assert mobilenet.tensor(0, first.outputs[0]).shape == mobilenet.runtime_tensor(0, first.outputs[0]).shape


def test_snapshot_is_a_copy(mobilenet):
    mobilenet.invoke()
    out = mobilenet.entry.outputs[0]
    snap = mobilenet.tensor(0, out)
    snap[...] = 0
    assert mobilenet.tensor(0, out).any()


def test_breakpoint_by_index_and_by_type(mobilenet):
    bp = mobilenet.add_breakpoint(OpBreakpoint(5))
    stop = mobilenet.run()
    assert stop.reason == "breakpoint" and stop.breakpoint is bp and stop.position == ((0, 5),)
    mobilenet.remove_breakpoint(bp)
    mobilenet.add_breakpoint("SOFTMAX")
    stop = mobilenet.run()
    assert stop.reason == "breakpoint" and mobilenet.current_node().name == "SOFTMAX"
    assert mobilenet.run().finished
    # a finished run starts anew and stops at the same breakpoint again
    assert mobilenet.run().reason == "breakpoint"


def test_run_to(mobilenet):
    stop = mobilenet.run_to(10)
    assert stop.reason == "run_to" and stop.position == ((0, 10),)
    assert mobilenet.tensor(0, mobilenet.entry.nodes[9].outputs[0]) is not None
    assert mobilenet.tensor(0, mobilenet.entry.nodes[10].outputs[0]) is None
    stop = mobilenet.run_to("MEAN")
    assert mobilenet.current_node().name == "MEAN"


def test_set_tensor_mid_run_is_seen_by_later_ops(mobilenet):
    reference = list(mobilenet.invoke().values())[0]
    mobilenet.run_to(64)  # the SOFTMAX
    logits = mobilenet.current_node().inputs[0]
    fake = np.zeros(mobilenet.runtime_tensor(0, logits).shape, F32)
    fake[0, 7] = 50.0
    mobilenet.set_tensor(0, logits, fake)
    out = list(mobilenet.run().outputs.values())[0]
    assert out[0, 7] > 0.99 and not np.allclose(out, reference)
    with pytest.raises(ValueError, match="read-only"):
        mobilenet.set_tensor(0, mobilenet.entry.nodes[0].inputs[1], np.zeros((32, 3, 3, 3)))


def test_nan_breakpoint_after_injected_nan(mobilenet):
    mobilenet.add_breakpoint(NonFiniteBreakpoint())
    mobilenet.run_to(3)
    x = mobilenet.tensor(0, mobilenet.current_node().inputs[0])
    x[0, 0, 0, 0] = np.nan
    mobilenet.set_tensor(0, mobilenet.current_node().inputs[0], x)
    stop = mobilenet.run()
    assert stop.reason == "breakpoint" and stop.op == (0, 3) and "NaN" in stop.message
    assert stop.position == ((0, 4),)  # paused after the op that produced the NaN


def test_range_breakpoint(mobilenet):
    ranges = {}
    mobilenet.add_hook("after", lambda interp, ev: ev.name == "ADD" and ranges.__setitem__(
        ev.op, float(np.abs(interp.tensor(0, ev.node.outputs[0])).max())))
    mobilenet.invoke()
    limit = float(np.median(list(ranges.values())))
    first = min(op for op, r in ranges.items() if r > limit)
    mobilenet.add_breakpoint(RangeBreakpoint(low=-limit, high=limit, op_type="ADD"))
    stop = mobilenet.run()
    assert stop.reason == "breakpoint" and stop.op == (0, first)
    assert "outside" in stop.message


def test_saturation_breakpoint_on_a_custom_int8_kernel():
    def saturate(ctx, node):
        x = ctx.value(node, 0)
        ctx.set_output(ctx.output(node, 0), np.clip(np.round(x * 100), -128, 127).astype(np.int8))

    model = single_op_model("CUSTOM", [Input((8,))], [(np.int8, (0.01, 0))],
                            custom_code="Quantizer")
    interp = Interpreter(model, allocate=False)
    interp.op_resolver.add_custom("Quantizer", saturate)
    interp.allocate_tensors()
    bp = interp.add_breakpoint(SaturationBreakpoint())
    x = np.linspace(-0.5, 0.5, 8).astype(F32)
    assert interp.run([x]).finished  # nothing saturates
    stop = interp.run([x * 10])
    assert stop.reason == "breakpoint" and stop.breakpoint is bp and "limits" in stop.message


def test_condition_breakpoint(mobilenet):
    seen = []
    bp = ConditionBreakpoint(predicate=lambda interp, ctx, node: seen.append(node.index) or
                             node.index == 7)
    mobilenet.add_breakpoint(bp)
    stop = mobilenet.run()
    assert stop.op == (0, 7) and seen == list(range(8))


def test_step_into_step_out_and_call_stack(control_flow):
    stop = control_flow.step_into()  # a fresh run: entering the WHILE at op 0
    assert stop.position == ((0, 0), (3, 0))  # inside while_cond
    assert control_flow.current_op == (3, 0)
    stop = control_flow.step()  # LESS, then the cond subgraph is about to return
    assert stop.position == ((0, 0), (3, 1))
    stop = control_flow.step()  # the body is called next
    assert stop.position == ((0, 0), (4, 0))
    stop = control_flow.step_out()  # finish the WHILE altogether
    assert stop.position == ((0, 1),)
    stop = control_flow.step()  # SUM
    stop = control_flow.step()  # GREATER
    assert control_flow.current_node().name == "IF"
    stop = control_flow.step()  # IF runs whole when stepped over
    assert stop.finished


def test_breakpoint_inside_a_loop_body_hits_every_iteration(control_flow):
    control_flow.add_breakpoint(OpBreakpoint(3, subgraph=4))  # the body's TANH
    hits = 0
    stop = control_flow.run()
    while stop.reason == "breakpoint":
        hits += 1
        stop = control_flow.run()
    assert hits == 2 and stop.finished


def test_stepping_matches_invoke_in_control_flow(control_flow):
    ref = control_flow.invoke()
    stop = control_flow.step_into()
    count = 1
    while not stop.finished:
        stop = control_flow.step_into()
        count += 1
    assert count > 10
    for k in ref:
        np.testing.assert_array_equal(stop.outputs[k], ref[k])


def test_hooks_and_op_times(mobilenet):
    events = []
    mobilenet.add_hook("before", lambda interp, ev: events.append(("before", ev.op)))
    mobilenet.add_hook("after", lambda interp, ev: events.append(("after", ev.op, ev.seconds)))
    mobilenet.invoke()
    n = len(mobilenet.entry.nodes)
    assert [e[1] for e in events if e[0] == "before"] == list(range(n))
    assert all(e[2] >= 0 for e in events if e[0] == "after")
    assert set(mobilenet.op_times) == {(0, k) for k in range(n)}
    assert sum(mobilenet.op_times.values()) > 0


def test_reset_goes_back_to_the_start(mobilenet):
    mobilenet.run_to(20)
    mobilenet.reset()
    assert mobilenet.state == "ready"
    stop = mobilenet.step()
    assert stop.position == ((0, 1),)


def test_execution_error_leaves_position_at_the_failing_op():
    interp = Interpreter(model_path("movie_review"))
    interp.set_input(0, np.full((1, 256), 10 ** 6, np.int32))
    from tflite_viewer.interpreter import ExecutionError
    with pytest.raises(ExecutionError):
        interp.run()
    assert interp.position == ((0, 0),)
    assert interp.state == "ready"


def test_variables_persist_across_runs_and_reset():
    """VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE: an accumulator, initialised by a
    CALL_ONCE subgraph, that adds each run's input (checked against LiteRT)."""
    tensors = [((2,), F32), ((), np.int32, "resource"), ((2,), F32), ((2,), F32)]
    ops = [Op("CALL_ONCE", [], [], "CallOnceOptions", {"init_subgraph_index": 1}),
           Op("VAR_HANDLE", [], [1], "VarHandleOptions", {"shared_name": "acc"}),
           Op("READ_VARIABLE", [1], [2]),
           Op("ADD", [2, 0], [3], "AddOptions", {}),
           Op("ASSIGN_VARIABLE", [1, 3], [])]
    init = ([((), np.int32, "resource"), (np.zeros(2, F32),)],
            [Op("VAR_HANDLE", [], [0], "VarHandleOptions", {"shared_name": "acc"}),
             Op("ASSIGN_VARIABLE", [0, 1], [])], [], [])
    model = graph_model(tensors, ops, [0], [3], subgraphs=[init])
    interp = Interpreter(model)
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    li = LiteRT(model_content=model)
    li.allocate_tensors()
    for step in range(3):
        x = np.array([1.0, 2.0], F32) * (step + 1)
        out = list(interp.invoke([x]).values())[0]
        li.set_tensor(li.get_input_details()[0]["index"], x)
        li.invoke()
        np.testing.assert_allclose(out, li.get_tensor(li.get_output_details()[0]["index"]))
    np.testing.assert_allclose(out, [6.0, 12.0])
    interp.reset_variables()
    out = list(interp.invoke([np.array([1.0, 1.0], F32)]).values())[0]
    np.testing.assert_allclose(out, [1.0, 1.0])


def test_stepping_overhead_is_small(mobilenet):
    """Stepping costs little over run(): the debugger must stay interactive."""
    import time
    mobilenet.invoke()
    t = time.perf_counter()
    mobilenet.invoke()
    whole = time.perf_counter() - t
    mobilenet.reset()
    t = time.perf_counter()
    stop = mobilenet.step()
    while not stop.finished:
        stop = mobilenet.step()
    stepped = time.perf_counter() - t
    per_op = (stepped - whole) / len(mobilenet.entry.nodes)
    assert per_op < 1e-3
