"""The graph builder and the layout on every subgraph of every corpus model."""
from __future__ import annotations

import json

import pytest

from tests.cli_runner import run_cli
from tests.conftest import CORPUS
from tflite_viewer.graph.build import build_graph, subgraph_references
from tflite_viewer.graph.layout import layout, naive_layout
from tflite_viewer.graph.metrics import check_layout
from tflite_viewer.model import load_model

SUBGRAPHS = [(path, s) for path in CORPUS for s in range(len(load_model(path).subgraphs))]


@pytest.mark.parametrize("path,s", SUBGRAPHS, ids=[f"{p.stem}/{s}" for p, s in SUBGRAPHS])
def test_graph_and_layout_invariants(path, s):
    model = load_model(path)
    sg = model.subgraphs[s]
    graph = build_graph(model, s)
    ops = [n for n, a in graph.nodes(data=True) if a["kind"] == "op"]
    assert len(ops) == len(sg.operators)
    for op in sg.operators:
        attrs = graph.nodes[f"op:{op.index}"]
        assert (attrs["name"], attrs["version"], attrs["category"]) == (op.name, op.version, op.category)
        assert attrs["fused_activation"] == op.fused_activation
        consts = {t for t in op.inputs if t >= 0 and sg.tensors[t].is_constant}
        assert set(attrs["constants"]) == consts
        # Every non-constant, non-omitted input is an incoming edge keyed by its tensor.
        wanted = sorted(t for t in op.inputs if t >= 0 and t not in consts)
        got = sorted(k for _, _, k in graph.in_edges(f"op:{op.index}", keys=True))
        assert got == wanted
    for t in sg.outputs:
        assert graph.in_degree(f"out:{t}") == (0 if sg.tensors[t].is_constant else 1)
    first = layout(graph)
    assert check_layout(first, graph) == []
    assert first.to_json() == layout(graph).to_json()  # deterministic
    assert first.crossings <= naive_layout(graph).crossings


def test_crossings_below_naive_on_the_corpus():
    ours = naive = 0
    for path, s in SUBGRAPHS:
        model = load_model(path)
        graph = build_graph(model, s)
        ours += layout(graph).crossings
        naive += naive_layout(graph).crossings
    assert ours < naive / 10, (ours, naive)


def test_subgraph_references_control_flow_and_lstm(models_dir):
    cf = subgraph_references(load_model(models_dir / "control_flow.tflite"))
    assert cf == {0: [(0, "cond", 3), (0, "body", 4), (3, "then", 2), (3, "else", 1)],
                  1: [], 2: [], 3: [], 4: []}
    lstm = subgraph_references(load_model(models_dir / "lstm_float.tflite"))
    assert lstm[0] == [(1, "cond", 1), (1, "body", 2), (2, "cond", 3), (2, "body", 4)]
    graph = build_graph(load_model(models_dir / "control_flow.tflite"), 0)
    assert graph.nodes["op:0"]["calls"] == {"cond": 3, "body": 4}
    assert graph.nodes["op:3"]["calls"] == {"then": 2, "else": 1}


def test_malformed_graphs_are_drawn_with_their_defects(models_dir):
    """Two producers of one tensor: still a graph and a layout, the defect listed."""
    from tflite_viewer.edit.tree import unpack
    from tflite_viewer.edit.writer import serialize

    tree = unpack(load_model(models_dir / "mobilenet_v2_float.tflite"))
    ops = tree.model.subgraphs[0].operators
    ops[5].outputs = list(ops[4].outputs)  # both now produce one tensor
    model = load_model(serialize(tree))
    assert any("produced by several operators" in f.message for f in model.findings)
    graph = build_graph(model, 0)
    assert any("produced by operators 4 and 5" in d for d in graph.graph["defects"])
    assert check_layout(layout(graph), graph) == []
    # A cycle: the first operator now reads what a later one produces.
    tree = unpack(load_model(models_dir / "mobilenet_v2_float.tflite"))
    ops = tree.model.subgraphs[0].operators
    ops[0].inputs = [int(ops[3].outputs[0])] + list(ops[0].inputs[1:])
    graph = build_graph(load_model(serialize(tree)), 0)
    assert any(d.startswith("cycle through") for d in graph.graph["defects"])
    drawn = layout(graph)
    assert check_layout(drawn, graph) == [] and drawn.reversed_edges


def test_layout_cli_json(models_dir, tmp_path):
    out = tmp_path / "layout.json"
    result = run_cli("layout", models_dir / "control_flow.tflite", "--subgraph", "4", "-o", out)
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    assert doc["subgraph"] == 4 and isinstance(doc["crossings"], int)
    for node in doc["nodes"]:
        assert {"id", "kind", "x", "y", "width", "height"} <= node.keys()
    boxes = {n["id"]: n for n in doc["nodes"]}
    for edge in doc["edges"]:
        assert {"source", "target", "tensor", "points"} <= edge.keys()
        src, dst = boxes[edge["source"]], boxes[edge["target"]]
        assert src["y"] + src["height"] <= dst["y"]  # y grows downward
    bad = run_cli("layout", models_dir / "control_flow.tflite", "--subgraph", "9")
    assert bad.returncode == 2 and "out of range" in bad.stderr
